//! Ahead-of-time DFA generator for `autoretry::classify`.
//!
//! Reads the JavaScript patterns of `src/classify/patterns.rs`, translates
//! them into `regex-automata` syntax with the semantics of section 3.1 of the
//! spec, builds DFAs, turns them into the compact character-level tables of
//! [`table`] and renders the files of `src/classify/dfa/`.
//!
//! The tables are grouped so that no `.*` multiplies the states of another
//! pattern: retryable and usage limit share `labels`; the overflow patterns
//! without `.*` share the `words_*` tables with the *heads* (the part before
//! the first `.*`) of the five that have one; each of those five keeps its
//! *tail* (`.*` and the rest) in a small anchored table that runs only from
//! where its head ended on the current line (see [`split_star`]).
//!
//! The extended classifier (section 10.5) adds the `ext_*` tables: its
//! retryable alternatives, its usage-limit alternatives without a window,
//! the whole-word variants of the window words (see [`window`]), the
//! overflow patterns it adds (a `.*` one alone in its table) and the hint
//! names of 10.4, packed greedily into tables of at most 255 states. Its
//! patterns use `\b`, so these tables report matches one character late
//! ([`Report::Delayed`]), and they are stored compressed ([`Compressed`]).
//! Its overflow test reuses `words_*` and the tails, without the one
//! anchored pattern.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub mod factors;
pub mod lines;
pub mod near;
pub mod table;

use table::{Compressed, Report, Table};

#[path = "../../../src/classify/patterns.rs"]
pub mod patterns;

/// The tables' alphabet, the crate's own definition.
#[path = "../../../src/classify/symbol.rs"]
pub mod symbol;

/// The command that regenerates the files, as written in their header.
pub const REGENERATE: &str = "cargo run --release --manifest-path tools/dfa-gen/Cargo.toml";

/// `.` of section 3.1: one Unicode scalar value other than the JavaScript
/// line terminators.
const DOT: &str = r"[^\n\r\x{2028}\x{2029}]";
/// `\s` of section 3.1: ASCII white space.
const SPACE: &str = r"[\t\n\x0B\x0C\r ]";
/// `\s` inside a class.
const SPACE_IN_CLASS: &str = r"\t\n\x0B\x0C\r ";
/// `\b` of section 10.5: an ASCII word boundary (`[A-Za-z0-9_]` against
/// any other scalar value or an end of the text).
const WORD_BOUNDARY: &str = r"(?-u:\b)";

/// Strips the delimiters of a JavaScript regex literal `/body/i`. Only the
/// `i` flag is accepted: section 3.1 pins down exactly that flag set.
pub fn literal_body(literal: &str) -> Result<&str, String> {
    literal
        .strip_prefix('/')
        .and_then(|rest| rest.strip_suffix("/i"))
        .ok_or_else(|| format!("not a /.../i literal: {literal}"))
}

/// How [`translate`] writes an ASCII letter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Letters {
    /// `[xX]`: the pattern itself folds case (the reference form).
    Both,
    /// `x`: the input is lower-cased before matching (the tables' form).
    Lower,
}

/// Translates a JavaScript pattern (compiled with `i` and without `u`) into
/// `regex-automata` syntax (Unicode mode, no `(?i)`), following section 3.1:
/// ASCII letters become `[xX]` or `x` (see [`Letters`]), `.` becomes `[^\n\r\x{2028}\x{2029}]`, `\d`
/// becomes `[0-9]`, `\s` becomes ASCII white space, `\b` an ASCII word
/// boundary (section 10.5), `^` stays start of text. Constructs whose
/// meaning would differ (back-references, look-around, `\w`, ranges of
/// letters, ...) are refused rather than guessed.
pub fn translate(js: &str, letters: Letters) -> Result<String, String> {
    let letter = |out: &mut String, c: char, in_class: bool| match letters {
        Letters::Lower => out.push(c.to_ascii_lowercase()),
        Letters::Both => {
            if !in_class {
                out.push('[');
            }
            out.push(c.to_ascii_lowercase());
            out.push(c.to_ascii_uppercase());
            if !in_class {
                out.push(']');
            }
        }
    };
    let mut out = String::with_capacity(js.len() * 4);
    let mut chars = js.chars().peekable();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        if in_class {
            match c {
                ']' => {
                    in_class = false;
                    out.push(']');
                }
                '\\' => match chars.next() {
                    Some('d') => out.push_str("0-9"),
                    Some('s') => out.push_str(SPACE_IN_CLASS),
                    Some('n') => out.push_str(r"\n"),
                    Some(e) if e.is_ascii_punctuation() => push_hex(&mut out, e),
                    other => return Err(format!("unsupported escape in class: {other:?}")),
                },
                '-' if !out.ends_with('[') && chars.peek() != Some(&']') => {
                    return Err("ranges in classes are not supported".into());
                }
                c if c.is_ascii_alphabetic() => letter(&mut out, c, true),
                c if c.is_ascii_digit() => out.push(c),
                c if c.is_ascii() => push_hex(&mut out, c),
                c => out.push(c),
            }
            continue;
        }
        match c {
            '\\' => match chars.next() {
                Some('d') => out.push_str("[0-9]"),
                Some('s') => out.push_str(SPACE),
                // Section 10.5: an ASCII word boundary.
                Some('b') => out.push_str(WORD_BOUNDARY),
                Some(e) if e.is_ascii_punctuation() => {
                    out.push('\\');
                    out.push(e);
                }
                other => return Err(format!("unsupported escape: {other:?}")),
            },
            '.' => out.push_str(DOT),
            '[' => {
                in_class = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                if chars.peek() == Some(&']') {
                    return Err("empty class".into());
                }
            }
            '(' => {
                out.push('(');
                if chars.peek() == Some(&'?') {
                    chars.next();
                    if chars.next() != Some(':') {
                        return Err("only (?: groups are supported".into());
                    }
                    out.push_str("?:");
                }
            }
            '^' | '$' | '|' | ')' | '*' | '+' | '?' | '{' | '}' | ',' => out.push(c),
            c if c.is_ascii_alphabetic() => letter(&mut out, c, false),
            c if c.is_ascii_alphanumeric() || c == ' ' || c == '_' || c == '-' => out.push(c),
            c if c.is_ascii() => push_hex(&mut out, c),
            c => out.push(c),
        }
    }
    if in_class {
        return Err("unterminated class".into());
    }
    Ok(out)
}

fn push_hex(out: &mut String, c: char) {
    let _ = write!(out, r"\x{{{:02X}}}", u32::from(c));
}

/// Output bit of the retryable pattern (3.2, or 10.5 in the extended
/// tables).
pub const BIT_RETRYABLE: u8 = 1;
/// Output bit of the usage-limit pattern (3.4, or the alternatives of 10.5
/// without a window).
pub const BIT_USAGE_LIMIT: u8 = 2;
/// Output bit (of `labels`, the extended tables and a curated guard) of
/// the names of the retry hints: every rule needs one of them somewhere in
/// the text.
pub const BIT_HINT: u8 = 8;
/// The names of [`BIT_HINT`] for the hints of 3.5 (the `-ms` names
/// contain them).
pub const HINT_NAMES: &str = "retry-after|x-ratelimit-reset";
/// The names of [`BIT_HINT`] for the hints of 10.4: those of 3.5 and the
/// leading literals of rules 3 to 6.
pub const HINT_NAMES_EXTENDED: &str =
    r#"retry-after|x-ratelimit-reset|reset after |please retry in |"retryDelay":|try again in"#;
/// The names every hint rule of 13.2 reads its text at (10.4's, and
/// those of rules 6a to 6c): a text with none of them has no curated hint.
pub const HINT_NAMES_CURATED: &str = r#"retry-after|x-ratelimit-reset|reset after |please retry in |"retryDelay":|try again in|retry after|try again after|"resets_in_seconds"|usage limit reached\|"#;
/// Output bit of an overflow pattern without `.*` (3.3, and the extended
/// ones of 10.5).
pub const BIT_OVERFLOW: u8 = 4;
/// Output bit (of `words_*`) of the one overflow pattern anchored at the
/// start of the text (3.3), which the extended classifier leaves out.
pub const BIT_OVERFLOW_AT_START: u8 = 1;
/// Output bit of the head of the first `.*` overflow pattern; the next
/// ones follow.
pub const BIT_HEAD: u8 = 8;
/// Output bit (of the extended tables) of the first window word variant;
/// the next ones follow, up to bit 128.
pub const BIT_WINDOW_WORD: u8 = 16;
/// Output bit (of the curated `guard_*` tables) of the never-retried
/// pattern (13.2).
pub const BIT_NEVER: u8 = 16;
/// Output bit (of `guard_*`) of the pattern under which `/too many
/// tokens/i` does not count as an overflow (13.2).
pub const BIT_THROTTLE: u8 = 32;
/// Output bit (of `guard_*`) of `/too many tokens/i` (3.3), which the
/// curated classifier counts only where [`BIT_THROTTLE`] does not match.
pub const BIT_TOO_MANY_TOKENS: u8 = 64;
/// The one overflow pattern of 3.3 that the curated classifier reads
/// apart (see [`BIT_TOO_MANY_TOKENS`]).
pub const TOO_MANY_TOKENS: &str = "/too many tokens/i";

/// One pattern of a table: (JavaScript, translated, output bit).
pub type Part = (String, String, u8);

/// An overflow pattern `head.*rest`, split at its first top-level `.*`.
pub struct Star {
    /// The JavaScript literal.
    pub js: &'static str,
    /// `head`, translated.
    pub head: String,
    /// `.*rest`, translated (searched anchored where the head ended).
    pub tail: String,
}

/// Splits a pattern body at its first `.*`, when that is outside every group
/// and class and the pattern has no top-level alternation (then `head.*rest`
/// matches exactly when `head` matches and `.*rest` matches, anchored, where
/// the earliest `head` of that line ends).
pub fn split_star(body: &str) -> Result<Option<(&str, &str)>, String> {
    let (mut depth, mut in_class, mut escaped) = (0usize, false, false);
    let mut split = None;
    for (i, c) in body.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => return Err(format!("top-level `|` in {body}")),
            '^' if !in_class && i > 0 => return Err(format!("`^` inside {body}")),
            '.' if !in_class && depth == 0 && split.is_none() && body[i..].starts_with(".*") => {
                split = Some(i)
            }
            _ => {}
        }
    }
    Ok(split.map(|i| (&body[..i], &body[i + 2..])))
}

/// The top-level alternatives of a pattern (outside every group and class).
pub fn alternatives(pattern: &str) -> Vec<&str> {
    let (mut depth, mut in_class, mut escaped) = (0usize, false, false);
    let mut parts = Vec::new();
    let mut from = 0;
    for (i, c) in pattern.char_indices() {
        if escaped {
            escaped = false;
            continue;
        }
        match c {
            '\\' => escaped = true,
            '[' => in_class = true,
            ']' => in_class = false,
            '(' if !in_class => depth += 1,
            ')' if !in_class => depth = depth.saturating_sub(1),
            '|' if !in_class && depth == 0 => {
                parts.push(&pattern[from..i]);
                from = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&pattern[from..]);
    parts
}

/// A usage-limit alternative `\bFIRST\b[^\n]{0,GAP}\bSECOND\b` (10.5): two
/// whole words with at most `gap` characters other than `\n` between them.
/// The classifier matches it with a small scanner (`classify/window.rs`)
/// over the word ends that the extended tables report, not with a DFA
/// (which would need a state per distance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// The alternative as written.
    pub js: String,
    /// The first word, as written (without its `\b`s).
    pub first: String,
    /// The second word.
    pub second: String,
    /// The most characters between them.
    pub gap: u8,
}

/// Reads a window alternative; `None` when the alternative has no
/// `[^\n]{0,` (it is then an ordinary pattern), an error when it has one
/// in another form.
pub fn window(alternative: &str) -> Result<Option<Window>, String> {
    const GAP: &str = r"\b[^\n]{0,";
    let Some(at) = alternative.find(GAP) else {
        return Ok(None);
    };
    let bad = || format!(r"not of the form \bWORD\b[^\n]{{0,N}}\bWORD\b: {alternative}");
    let first = alternative[..at].strip_prefix(r"\b").ok_or_else(bad)?;
    let rest = &alternative[at + GAP.len()..];
    let close = rest.find('}').ok_or_else(bad)?;
    let gap: u8 = rest[..close].parse().map_err(|_| bad())?;
    let second = rest[close + 1..]
        .strip_prefix(r"\b")
        .and_then(|w| w.strip_suffix(r"\b"))
        .ok_or_else(bad)?;
    if first == second || first.contains(r"\b") || second.contains(r"\b") {
        return Err(bad());
    }
    Ok(Some(Window {
        js: alternative.to_string(),
        first: first.to_string(),
        second: second.to_string(),
        gap,
    }))
}

/// The fixed-length variants of a window word, with their lengths in
/// characters: the word is literal characters and `.`, each optionally
/// followed by `?`, and groups `(?:literal)?`. (`rate.?limit`: `ratelimit`
/// of 9, `rate.limit` of 10.)
pub fn word_variants(word: &str) -> Result<Vec<(String, u8)>, String> {
    // Atoms: (text, length).
    let mut atoms: Vec<(String, usize, bool)> = Vec::new();
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        let (text, len) = match c {
            '(' => {
                let mut group = String::new();
                if chars.next() != Some('?') || chars.next() != Some(':') {
                    return Err(format!("only (?:...) groups in window words: {word}"));
                }
                loop {
                    match chars.next() {
                        Some(')') => break,
                        Some(c) if c.is_ascii_alphanumeric() || "'_ -".contains(c) => group.push(c),
                        other => return Err(format!("{other:?} in a group of {word}")),
                    }
                }
                let len = group.chars().count();
                (format!("(?:{group})"), len)
            }
            '.' => (".".to_string(), 1),
            c if c.is_ascii_alphanumeric() || "'_ -".contains(c) => (c.to_string(), 1),
            c => return Err(format!("{c:?} in window word {word}")),
        };
        let optional = chars.peek() == Some(&'?');
        if optional {
            chars.next();
        }
        atoms.push((text, len, optional));
    }
    let mut variants = vec![(String::new(), 0usize)];
    for (text, len, optional) in atoms {
        let with: Vec<(String, usize)> = variants
            .iter()
            .map(|(v, n)| (format!("{v}{text}"), n + len))
            .collect();
        if optional {
            variants.extend(with);
        } else {
            variants = with;
        }
    }
    variants.sort_by_key(|(_, n)| *n);
    variants
        .into_iter()
        .map(|(v, n)| Ok((v, u8::try_from(n).map_err(|_| "a long word")?)))
        .collect()
}

/// A window word variant the extended tables report: `\bVARIANT\b` ends
/// where its bit shows (one character late). Two words may share a
/// variant, and then its bit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WindowWord {
    /// The output bit.
    pub bit: u8,
    /// The word it is a variant of, as an index of [`Extended::words`].
    pub word: u8,
    /// Its length in characters.
    pub len: u8,
}

/// The classifier's patterns, translated and grouped.
pub struct Plan {
    /// Retryable (3.2), usage limit (3.4) and the hint names (3.5).
    pub labels: Vec<Part>,
    /// Overflow patterns without `.*`, and the heads of the others.
    pub words: Vec<Part>,
    /// Overflow patterns with `.*`.
    pub stars: Vec<Star>,
    /// The extended classifier (10.5).
    pub extended: Extended,
    /// The curated classifier (13.2).
    pub curated: Curated,
}

/// The curated classifier's tables (13.2). Its window alternatives
/// (`FIRST[^\n]{0,N}SECOND`) are read by a window scanner over the word
/// ends that the `cwin_*` tables report, like the extended ones
/// ([`Window`]), since a DFA would need a state per distance.
pub struct Curated {
    /// Retryable (10.5 and 13.2), usage limit, the window words and the
    /// overflow patterns (3.3 unanchored but `/too many tokens/i`, 10.5,
    /// 13.2; a `.*` pattern gets a table of its own).
    pub parts: Vec<Part>,
    /// The never-retried pattern ([`BIT_NEVER`]), the throttle pattern
    /// ([`BIT_THROTTLE`]), `/too many tokens/i` ([`BIT_TOO_MANY_TOKENS`])
    /// and the hint rules' names ([`BIT_HINT`]).
    pub guards: Vec<Part>,
    /// The alternatives written in other scripts than ASCII (Chinese and
    /// Japanese gateway wordings), matched as written: a literal string
    /// and its bit ([`BIT_RETRYABLE`], [`BIT_USAGE_LIMIT`], [`BIT_NEVER`]).
    /// The tables read every non-ASCII character as one symbol, so these
    /// are searched in the text's bytes instead.
    pub literals: Vec<(String, u8)>,
    /// The fixed-length variants of the window words, each a part of a
    /// `cwin_*` table of its own bit.
    pub words: Vec<CuratedWord>,
    /// The window alternatives.
    pub windows: Vec<CuratedWindow>,
}

/// A fixed-length variant of a curated window word.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CuratedWord {
    /// The variant as a pattern (`\bhit your\b`).
    pub js: String,
    /// Its length in characters (without the `\b`s).
    pub len: u8,
    /// The `cwin_*` table that reports it.
    pub table: u8,
    /// Its output bit in that table.
    pub bit: u8,
}

/// A curated window alternative: a variant of `first` ends, then at most
/// `gap` characters other than `\n`, then a variant of `second` starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CuratedWindow {
    /// The alternative as written.
    pub js: String,
    /// The variants of its first word (indexes of [`Curated::words`]).
    pub first: Vec<u8>,
    /// The variants of its second word.
    pub second: Vec<u8>,
    /// The most characters between them.
    pub gap: u8,
    /// The label it gives ([`BIT_USAGE_LIMIT`] or [`BIT_NEVER`]).
    pub label: u8,
}

/// The fixed-length variants of a window word of 13.2, with their lengths
/// in characters: literal characters and `.`, each optionally followed by
/// `?`, and groups `(?:a|b|...)` of literals, optionally followed by `?`.
pub fn curated_variants(word: &str) -> Result<Vec<(String, u8)>, String> {
    // Atoms: their choices, each (text, length).
    let mut atoms: Vec<Vec<(String, usize)>> = Vec::new();
    let mut chars = word.chars().peekable();
    while let Some(c) = chars.next() {
        let mut choices = match c {
            '(' => {
                if chars.next() != Some('?') || chars.next() != Some(':') {
                    return Err(format!("only (?:...) groups in window words: {word}"));
                }
                let mut all = vec![String::new()];
                loop {
                    match chars.next() {
                        Some(')') => break,
                        Some('|') => all.push(String::new()),
                        Some(c) if c.is_ascii_alphanumeric() || "'_ -".contains(c) => {
                            if let Some(last) = all.last_mut() {
                                last.push(c);
                            }
                        }
                        other => return Err(format!("{other:?} in a group of {word}")),
                    }
                }
                all.into_iter()
                    .map(|a| {
                        let n = a.chars().count();
                        (a, n)
                    })
                    .collect::<Vec<_>>()
            }
            '.' => vec![(".".to_string(), 1)],
            c if c.is_ascii_alphanumeric() || "'_ -".contains(c) => vec![(c.to_string(), 1)],
            c => return Err(format!("{c:?} in window word {word}")),
        };
        if chars.peek() == Some(&'?') {
            chars.next();
            choices.push((String::new(), 0));
        }
        atoms.push(choices);
    }
    let mut variants = vec![(String::new(), 0usize)];
    for choices in atoms {
        variants = variants
            .iter()
            .flat_map(|(v, n)| choices.iter().map(move |(t, m)| (format!("{v}{t}"), n + m)))
            .collect();
    }
    variants.sort();
    variants.dedup();
    variants
        .into_iter()
        .map(|(v, n)| Ok((v, u8::try_from(n).map_err(|_| "a long word")?)))
        .collect()
}

/// A side of a window (`\bWORD\b`, or without either `\b`): its
/// variants as patterns, with their lengths.
fn window_side(side: &str) -> Result<Vec<(String, u8)>, String> {
    let (open, rest) = match side.strip_prefix(r"\b") {
        Some(rest) => (r"\b", rest),
        None => ("", side),
    };
    let (word, close) = match rest.strip_suffix(r"\b") {
        Some(word) => (word, r"\b"),
        None => (rest, ""),
    };
    if word.contains('\\') {
        return Err(format!("a window word with an escape: {side}"));
    }
    Ok(curated_variants(word)?
        .into_iter()
        .map(|(v, n)| (format!("{open}{v}{close}"), n))
        .collect())
}

/// The extended classifier's own tables (its overflow test also uses the
/// classic `words` and tails, without their anchored pattern).
pub struct Extended {
    /// Retryable, the usage-limit alternatives without a window, the window
    /// words, the added overflow patterns and the hint names of 10.4.
    pub parts: Vec<Part>,
    /// The window alternatives of the usage-limit pattern.
    pub windows: Vec<Window>,
    /// The distinct words of the windows.
    pub words: Vec<String>,
    /// Their variants, as the tables report them.
    pub variants: Vec<WindowWord>,
}

fn part(js: &str, bit: u8) -> Result<Part, String> {
    Ok((js.to_string(), translate(js, Letters::Lower)?, bit))
}

/// Translates and groups every pattern of `patterns.rs`.
pub fn plan() -> Result<Plan, String> {
    let mut plan = Plan {
        labels: vec![
            part(patterns::RETRYABLE, BIT_RETRYABLE)?,
            part(patterns::USAGE_LIMIT, BIT_USAGE_LIMIT)?,
            part(HINT_NAMES, BIT_HINT)?,
        ],
        words: Vec::new(),
        stars: Vec::new(),
        extended: extended()?,
        curated: curated()?,
    };
    for literal in patterns::OVERFLOW {
        let body = literal_body(literal)?;
        match split_star(body)? {
            None if body.starts_with('^') => {
                plan.words.push((
                    literal.to_string(),
                    translate(body, Letters::Lower)?,
                    BIT_OVERFLOW_AT_START,
                ));
            }
            None => plan.words.push((
                literal.to_string(),
                translate(body, Letters::Lower)?,
                BIT_OVERFLOW,
            )),
            Some((head, rest)) => {
                let bit = u32::try_from(plan.stars.len())
                    .ok()
                    .and_then(|k| BIT_HEAD.checked_shl(k))
                    .filter(|&b| b != 0)
                    .ok_or("too many `.*` patterns for a u8 of heads")?;
                let head = translate(head, Letters::Lower)?;
                plan.words.push((literal.to_string(), head.clone(), bit));
                plan.stars.push(Star {
                    js: literal,
                    head,
                    tail: translate(&format!(".*{rest}"), Letters::Lower)?,
                });
            }
        }
    }
    if plan
        .words
        .iter()
        .filter(|w| w.2 == BIT_OVERFLOW_AT_START)
        .count()
        > 1
    {
        return Err("more than one anchored overflow pattern".into());
    }
    Ok(plan)
}

/// The extended classifier's parts (10.5).
fn extended() -> Result<Extended, String> {
    // The retryable pattern is too large for one table of 256 states: each
    // top-level alternative is a part of its own (with the same bit), and
    // the packing spreads them over as few tables as it can.
    let mut ext = Extended {
        parts: alternatives(patterns::RETRYABLE_EXTENDED)
            .into_iter()
            .map(|alternative| part(alternative, BIT_RETRYABLE))
            .collect::<Result<_, _>>()?,
        windows: Vec::new(),
        words: Vec::new(),
        variants: Vec::new(),
    };
    let mut plain = Vec::new();
    for alternative in alternatives(patterns::USAGE_LIMIT_EXTENDED) {
        match window(alternative)? {
            None => plain.push(alternative),
            Some(w) => ext.windows.push(w),
        }
    }
    ext.parts.push(part(&plain.join("|"), BIT_USAGE_LIMIT)?);
    let mut bit = BIT_WINDOW_WORD;
    for w in ext.windows.clone() {
        for word in [&w.first, &w.second] {
            if ext.words.contains(word) {
                continue;
            }
            let index = u8::try_from(ext.words.len()).map_err(|_| "too many words")?;
            ext.words.push(word.clone());
            for (variant, len) in word_variants(word)? {
                // One bit per distinct variant (`account` is a variant of
                // `account(?:'s)?` and of `account`).
                let js = format!(r"\b{variant}\b");
                let variant_bit = match ext.parts.iter().find(|p| p.0 == js) {
                    Some(p) => p.2,
                    None => {
                        if bit == 0 {
                            return Err("too many window word variants for a u8".into());
                        }
                        ext.parts.push(part(&js, bit)?);
                        let b = bit;
                        bit = bit.wrapping_shl(1);
                        b
                    }
                };
                ext.variants.push(WindowWord {
                    bit: variant_bit,
                    word: index,
                    len,
                });
            }
        }
    }
    for literal in patterns::OVERFLOW_EXTENDED {
        let body = literal_body(literal)?;
        if body.starts_with('^') {
            return Err(format!("anchored extended overflow pattern {literal}"));
        }
        ext.parts.push((
            literal.to_string(),
            translate(body, Letters::Lower)?,
            BIT_OVERFLOW,
        ));
    }
    ext.parts.push(part(HINT_NAMES_EXTENDED, BIT_HINT)?);
    Ok(ext)
}

/// Whether an alternative is a literal of non-ASCII characters only
/// (`Ok(true)`), ASCII only (`Ok(false)`), or a mix (an error: neither the
/// tables nor the literal search could read it).
fn non_ascii_literal(alternative: &str) -> Result<bool, String> {
    if alternative.is_ascii() {
        return Ok(false);
    }
    if alternative.chars().all(|c| !c.is_ascii()) {
        return Ok(true);
    }
    Err(format!(
        "an alternative that mixes ASCII and other characters: {alternative}"
    ))
}

/// Adds `alternative` to the windows of `cur` when it is one
/// (`FIRST[^\n]{0,N}SECOND`); whether it is.
fn curated_window(cur: &mut Curated, alternative: &str, label: u8) -> Result<bool, String> {
    const GAP: &str = r"[^\n]{0,";
    let Some(at) = alternative.find(GAP) else {
        return Ok(false);
    };
    let bad = || format!(r"not of the form FIRST[^\n]{{0,N}}SECOND: {alternative}");
    let rest = &alternative[at + GAP.len()..];
    let close = rest.find('}').ok_or_else(bad)?;
    let gap: u8 = rest[..close].parse().map_err(|_| bad())?;
    let mut ids = |side: &str| -> Result<Vec<u8>, String> {
        let mut ids = Vec::new();
        for (js, len) in window_side(side)? {
            let id = match cur.words.iter().position(|w| w.js == js) {
                Some(id) => id,
                None => {
                    let k = cur.words.len();
                    cur.words.push(CuratedWord {
                        js,
                        len,
                        table: u8::try_from(k / 8).map_err(|_| "too many window words")?,
                        bit: 1 << (k % 8),
                    });
                    k
                }
            };
            ids.push(u8::try_from(id).map_err(|_| "too many window words")?);
        }
        Ok(ids)
    };
    let first = ids(&alternative[..at])?;
    let second = ids(&rest[close + 1..])?;
    cur.windows.push(CuratedWindow {
        js: alternative.to_string(),
        first,
        second,
        gap,
        label,
    });
    Ok(true)
}

/// The curated classifier's parts (13.2).
fn curated() -> Result<Curated, String> {
    let ext = extended()?;
    let mut cur = Curated {
        parts: Vec::new(),
        guards: Vec::new(),
        literals: Vec::new(),
        words: Vec::new(),
        windows: Vec::new(),
    };
    let retryable = alternatives(patterns::RETRYABLE_EXTENDED)
        .into_iter()
        .chain(alternatives(patterns::RETRYABLE_CURATED));
    for alternative in retryable {
        if non_ascii_literal(alternative)? {
            cur.literals.push((alternative.to_string(), BIT_RETRYABLE));
        } else {
            cur.parts.push(part(alternative, BIT_RETRYABLE)?);
        }
    }
    let mut plain = Vec::new();
    for alternative in alternatives(patterns::USAGE_LIMIT_CURATED) {
        if non_ascii_literal(alternative)? {
            cur.literals
                .push((alternative.to_string(), BIT_USAGE_LIMIT));
        } else if !curated_window(&mut cur, alternative, BIT_USAGE_LIMIT)? {
            plain.push(alternative);
        }
    }
    if !ext
        .windows
        .iter()
        .all(|w| cur.windows.iter().any(|c| c.js == w.js))
    {
        return Err("the curated usage-limit pattern lacks a window of 10.5".into());
    }
    // Each alternative a part: the packing spreads them over the tables.
    for alternative in plain {
        cur.parts.push(part(alternative, BIT_USAGE_LIMIT)?);
    }
    let overflow = patterns::OVERFLOW
        .iter()
        .filter(|l| **l != TOO_MANY_TOKENS)
        .chain(patterns::OVERFLOW_EXTENDED)
        .chain(patterns::OVERFLOW_CURATED);
    if !patterns::OVERFLOW.contains(&TOO_MANY_TOKENS) {
        return Err(format!("no {TOO_MANY_TOKENS} in the overflow patterns"));
    }
    for literal in overflow {
        let body = literal_body(literal)?;
        if body.starts_with('^') {
            // 10.5: the anchored no-body pattern gives way to the
            // unanchored one.
            continue;
        }
        cur.parts.push((
            literal.to_string(),
            translate(body, Letters::Lower)?,
            BIT_OVERFLOW,
        ));
    }
    let mut never = Vec::new();
    for alternative in alternatives(patterns::NEVER_CURATED) {
        if non_ascii_literal(alternative)? {
            cur.literals.push((alternative.to_string(), BIT_NEVER));
        } else if !curated_window(&mut cur, alternative, BIT_NEVER)? {
            never.push(alternative);
        }
    }
    for alternative in never {
        cur.guards.push(part(alternative, BIT_NEVER)?);
    }
    cur.guards
        .push(part(patterns::TOO_MANY_TOKENS_THROTTLE, BIT_THROTTLE)?);
    cur.guards.push((
        TOO_MANY_TOKENS.to_string(),
        translate(literal_body(TOO_MANY_TOKENS)?, Letters::Lower)?,
        BIT_TOO_MANY_TOKENS,
    ));
    // The hint rules' names: every path reports them as a table's match.
    cur.guards.push(part(HINT_NAMES_CURATED, BIT_HINT)?);
    Ok(cur)
}

/// One generated table.
pub struct Built {
    /// Name of the static (upper case) and file stem (lower case).
    pub name: String,
    /// What it matches, for the doc comment.
    pub parts: Vec<Part>,
    /// Whether it is searched anchored.
    pub anchored: bool,
    /// Whether it is compressed, its matches reported one character late
    /// (the extended and curated classifiers' tables).
    pub extended: bool,
    /// The cargo feature that carries it, if any.
    pub feature: Option<&'static str>,
    /// The table.
    pub table: Table,
    /// Its compressed form, which the extended classifier's tables take.
    pub compressed: Option<Compressed>,
}

impl Built {
    /// Bytes the table takes in flash.
    pub fn size(&self) -> usize {
        match &self.compressed {
            Some(c) => c.size(&self.table),
            None => self.table.size(),
        }
    }

    /// The contents of its `.bin` file: the transitions, or the slots of
    /// the compressed form.
    pub fn bin(&self) -> Vec<u8> {
        match &self.compressed {
            Some(c) => c.slots.concat(),
            None => self.table.trans.clone(),
        }
    }
}

/// Packs `parts` into as few tables of at most 256 states as a greedy
/// left-to-right split gives.
fn pack_greedy(
    stem: &str,
    parts: &[Part],
    report: Report,
    feature: Option<&'static str>,
) -> Result<Vec<Built>, String> {
    let compile_parts = |group: &[Part]| {
        let regexes: Vec<String> = group.iter().map(|p| p.1.clone()).collect();
        let bits: Vec<u8> = group.iter().map(|p| p.2).collect();
        let table = table::compile(&regexes, &bits, false, report)?;
        if report == Report::Delayed {
            // A compressed table has at most 255 states.
            table.compress()?;
        }
        Ok::<Table, String>(table)
    };
    // A `.*` multiplies the states of whatever shares its table: such a
    // part gets a table of its own.
    let star = |p: &Part| p.1.contains(&format!("{DOT}*"));
    let mut groups: Vec<(usize, usize, Table)> = Vec::new();
    let mut from = 0;
    while from < parts.len() {
        let mut to = from + 1;
        let mut best =
            compile_parts(&parts[from..to]).map_err(|e| format!("{}: {e}", parts[from].0))?;
        while to < parts.len() && !star(&parts[from]) && !star(&parts[to]) {
            match compile_parts(&parts[from..=to]) {
                Ok(t) => {
                    best = t;
                    to += 1;
                }
                Err(e) if e.contains("do not fit") || e.contains("at most 255") => break,
                Err(e) => return Err(e),
            }
        }
        groups.push((from, to, best));
        from = to;
    }
    groups
        .into_iter()
        .enumerate()
        .map(|(i, (from, to, table))| {
            Ok(Built {
                name: format!("{stem}_{i}"),
                parts: parts[from..to].to_vec(),
                anchored: false,
                extended: report == Report::Delayed,
                feature,
                compressed: match report {
                    Report::AtEnd => None,
                    Report::Delayed => Some(table.compress()?),
                },
                table,
            })
        })
        .collect()
}

/// Every table: `labels`, then `words_*`, then `tail_*`, then the extended
/// `ext_*`.
pub fn build_all() -> Result<Vec<Built>, String> {
    let plan = plan()?;
    let regexes: Vec<String> = plan.labels.iter().map(|p| p.1.clone()).collect();
    let bits: Vec<u8> = plan.labels.iter().map(|p| p.2).collect();
    let mut built = vec![Built {
        name: "labels".into(),
        table: table::compile(&regexes, &bits, false, Report::AtEnd)?,
        parts: plan.labels.clone(),
        anchored: false,
        extended: false,
        feature: None,
        compressed: None,
    }];
    built.extend(pack_greedy("words", &plan.words, Report::AtEnd, None)?);
    for (k, star) in plan.stars.iter().enumerate() {
        built.push(Built {
            name: format!("tail_{k}"),
            table: table::compile(std::slice::from_ref(&star.tail), &[1], true, Report::AtEnd)?,
            parts: vec![(star.js.to_string(), star.tail.clone(), 1)],
            anchored: true,
            extended: false,
            feature: None,
            compressed: None,
        });
    }
    built.extend(pack_greedy(
        "ext",
        &plan.extended.parts,
        Report::Delayed,
        Some("extended"),
    )?);
    built.extend(pack_greedy(
        "cur",
        &plan.curated.parts,
        Report::Delayed,
        Some("curated"),
    )?);
    built.extend(pack_greedy(
        "guard",
        &plan.curated.guards,
        Report::Delayed,
        Some("curated"),
    )?);
    // The window words: eight variants a table, one bit each.
    for (k, chunk) in plan.curated.words.chunks(8).enumerate() {
        let parts: Vec<Part> = chunk
            .iter()
            .map(|w| Ok((w.js.clone(), translate(&w.js, Letters::Lower)?, w.bit)))
            .collect::<Result<_, String>>()?;
        let regexes: Vec<String> = parts.iter().map(|p| p.1.clone()).collect();
        let bits: Vec<u8> = parts.iter().map(|p| p.2).collect();
        let table = table::compile(&regexes, &bits, false, Report::Delayed)?;
        built.push(Built {
            name: format!("cwin_{k}"),
            compressed: Some(table.compress()?),
            table,
            parts,
            anchored: false,
            extended: true,
            feature: Some("curated"),
        });
    }
    Ok(built)
}

fn render_bytes(s: &mut String, bytes: &[u8]) {
    for (i, chunk) in bytes.chunks(16).enumerate() {
        let line: Vec<String> = chunk.iter().map(|b| b.to_string()).collect();
        let _ = write!(s, "{}{},", if i == 0 { "" } else { " " }, line.join(", "));
    }
}

/// The `Table { .. }` literal of a table, its fields indented by `indent`.
fn render_table_literal(s: &mut String, b: &Built, indent: &str) {
    let t = &b.table;
    s.push_str("Table {\n");
    let _ = write!(s, "{indent}    classes: &[");
    render_bytes(s, &t.classes);
    s.push_str("],\n");
    let _ = writeln!(s, "{indent}    states: {},", t.states());
    let _ = writeln!(s, "{indent}    special: {},", t.special);
    let _ = writeln!(
        s,
        "{indent}    dead: {},",
        t.dead.map_or("None".to_string(), |d| format!("Some({d})"))
    );
    let _ = writeln!(s, "{indent}    trans: include_bytes!(\"{}.bin\"),", b.name);
    let _ = write!(s, "{indent}    out: &[");
    render_bytes(s, &t.out);
    let _ = write!(s, "],\n{indent}}}");
}

fn render_table(s: &mut String, b: &Built) {
    let t = &b.table;
    let _ = writeln!(
        s,
        "\n/// {} states, {} classes, {} bytes{}:",
        t.states(),
        t.stride,
        b.size(),
        if b.anchored {
            ", searched anchored where the head ended"
        } else if b.extended {
            ", compressed, matches reported one character late"
        } else {
            ""
        }
    );
    for (js, regex, bit) in &b.parts {
        let _ = writeln!(s, "/// - bit {bit}: `{js}` as `{regex}`");
    }
    let name = b.name.to_ascii_uppercase();
    match &b.compressed {
        Some(c) => {
            // The labels the table can give (a window word counts for the
            // usage limit; a guard's bits are its own).
            let guard = b.name.starts_with("guard_") || b.name.starts_with("cwin_");
            let labels = b.parts.iter().fold(0u8, |a, p| {
                a | if p.2 >= BIT_WINDOW_WORD && !guard {
                    BIT_USAGE_LIMIT
                } else {
                    p.2
                }
            });
            let _ = writeln!(
                s,
                "#[cfg(feature = \"{}\")]\npub(super) static {name}: Delayed = Delayed {{",
                b.feature.unwrap_or("extended")
            );
            s.push_str("    classes: &[");
            render_bytes(s, &t.classes);
            s.push_str("],\n    default: &[");
            render_bytes(s, &c.default);
            s.push_str("],\n    base: &[");
            let base: Vec<String> = c.base.iter().map(|b| b.to_string()).collect();
            for (i, chunk) in base.chunks(16).enumerate() {
                let _ = write!(s, "{}{},", if i == 0 { "" } else { " " }, chunk.join(", "));
            }
            s.push_str("],\n");
            let _ = writeln!(s, "    slots: include_bytes!(\"{}.bin\"),", b.name);
            let _ = writeln!(s, "    special: {},", t.special);
            s.push_str("    out: &[");
            render_bytes(s, &t.out);
            s.push_str("],\n    eoi: &[");
            render_bytes(s, &t.eoi);
            let _ = write!(s, "],\n    labels: {labels},\n}};\n");
        }
        None => {
            let _ = write!(s, "pub(super) static {name}: Table = ");
            render_table_literal(s, b, "");
            s.push_str(";\n");
        }
    }
}

/// Renders the generated `mod.rs`.
pub fn render_mod(built: &[Built]) -> Result<String, String> {
    let plan = plan()?;
    let ext = &plan.extended;
    let mut s = String::new();
    s.push_str("// DO NOT EDIT THIS FILE. IT WAS AUTOMATICALLY GENERATED BY:\n//\n");
    let _ = writeln!(s, "//     {REGENERATE}\n//");
    s.push_str("// from src/classify/patterns.rs; `-- --check` verifies it.\n\n");
    s.push_str(
        "//! The classifier's tables, built ahead of time: minimized DFAs that step\n\
         //! on one symbol per character (see `super::symbol`), one byte per\n\
         //! transition. The `.bin` files hold the transitions, column by column\n\
         //! (for the compressed `EXT_*` tables: their slots); being bytes, they\n\
         //! read the same on every endianness. The `EXT_*` tables and the window\n\
         //! words are the extended classifier's (spec 10.5, feature `extended`).\n\n",
    );
    s.push_str("use super::table::Table;\n");
    s.push_str(
        "#[cfg(feature = \"extended\")]\nuse super::table::{Delayed, Window, WindowWord};\n\n",
    );
    let count = |prefix: &str| built.iter().filter(|b| b.name.starts_with(prefix)).count();
    let names = |prefix: &str| {
        built
            .iter()
            .filter(|b| b.name.starts_with(prefix))
            .map(|b| format!("&{}", b.name.to_ascii_uppercase()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        s,
        "/// Number of `words_*` tables.\npub(super) const WORDS_LEN: usize = {};",
        count("words_")
    );
    let _ = writeln!(s, "/// Number of tails (overflow patterns with `.*`).\npub(super) const TAILS_LEN: usize = {};", count("tail_"));
    let _ = writeln!(s, "/// Output bit: the retryable pattern (spec 3.2, or 10.5 in `EXTENDED`) ends\n/// here.\npub(super) const RETRYABLE: u8 = {BIT_RETRYABLE};");
    let _ = writeln!(s, "/// Output bit: the usage-limit pattern (spec 3.4, or the alternatives of 10.5\n/// without a window in `EXTENDED`) ends here.\npub(super) const USAGE_LIMIT: u8 = {BIT_USAGE_LIMIT};");
    let _ = writeln!(s, "/// Output bit of `LABELS`, `EXTENDED` and `GUARDS`: the name of a retry hint\n/// (spec 3.5, or 10.4 in `EXTENDED`, 13.4 in `GUARDS`) ends here.\npub(super) const HINT: u8 = {BIT_HINT};");
    let _ = writeln!(s, "/// Output bit: an overflow pattern (spec 3.3, or one that 10.5 adds in\n/// `EXTENDED`) without `.*` ends here.\npub(super) const OVERFLOW: u8 = {BIT_OVERFLOW};");
    let _ = writeln!(s, "/// Output bit of `WORDS`: the overflow pattern anchored at the start of the\n/// text (spec 3.3) ends here; the extended classifier leaves it out.\npub(super) const OVERFLOW_AT_START: u8 = {BIT_OVERFLOW_AT_START};");
    let _ = writeln!(s, "/// Output bit of `WORDS`: the head of `TAILS[0]` ends here; `TAILS[k]` has\n/// this bit shifted left by `k`.\npub(super) const HEAD: u8 = {BIT_HEAD};");
    let _ = writeln!(
        s,
        "\n/// The tables of the overflow patterns without `.*` and of the heads.\n\
         pub(super) static WORDS: [&Table; WORDS_LEN] = [{}];",
        names("words_")
    );
    let _ = writeln!(
        s,
        "\n/// The tails of the overflow patterns with `.*`, in head-bit order.\n\
         pub(super) static TAILS: [&Table; TAILS_LEN] = [{}];",
        names("tail_")
    );
    let _ = writeln!(
        s,
        "\n/// Number of `ext_*` tables.\n#[cfg(feature = \"extended\")]\npub(super) const EXTENDED_LEN: usize = {};",
        count("ext_")
    );
    let _ = writeln!(
        s,
        "\n/// The extended classifier's tables (spec 10.5); its overflow test also\n\
         /// steps `WORDS` and `TAILS`.\n#[cfg(feature = \"extended\")]\n\
         pub(super) static EXTENDED: [&Delayed; EXTENDED_LEN] = [{}];",
        names("ext_")
    );
    let window_bits = ext.variants.iter().fold(0u8, |a, v| a | v.bit);
    let _ = writeln!(
        s,
        "\n/// Output bits of `EXTENDED` that report a window word.\n#[cfg(feature = \"extended\")]\npub(super) const WINDOW_WORD_BITS: u8 = {window_bits};"
    );
    let _ = writeln!(
        s,
        "\n/// The window words' variants, as `EXTENDED` reports them (the words: {}).\n\
         #[cfg(feature = \"extended\")]\npub(super) static WINDOW_WORDS: [WindowWord; {}] = [",
        ext.words
            .iter()
            .enumerate()
            .map(|(i, w)| format!("{i} `{w}`"))
            .collect::<Vec<_>>()
            .join(", "),
        ext.variants.len()
    );
    for v in &ext.variants {
        let _ = writeln!(
            s,
            "    WindowWord {{ bit: {}, word: {}, len: {} }},",
            v.bit, v.word, v.len
        );
    }
    s.push_str("];\n");
    let _ = writeln!(
        s,
        "\n/// Number of window alternatives.\n#[cfg(feature = \"extended\")]\npub(super) const WINDOWS_LEN: usize = {};",
        ext.windows.len()
    );
    s.push_str(
        "\n/// The window alternatives of the usage-limit pattern (spec 10.5).\n\
         #[cfg(feature = \"extended\")]\npub(super) static WINDOWS: [Window; WINDOWS_LEN] = [\n",
    );
    let index = |w: &str| ext.words.iter().position(|x| x == w).unwrap_or(0);
    for w in &ext.windows {
        let _ = writeln!(s, "    // `{}`", w.js);
        let _ = writeln!(
            s,
            "    Window {{ first: {}, second: {}, gap: {} }},",
            index(&w.first),
            index(&w.second),
            w.gap
        );
    }
    s.push_str("];\n");
    render_curated(&mut s, built, &plan.curated)?;
    render_factors(&mut s)?;
    for b in built {
        render_table(&mut s, b);
    }
    Ok(s)
}

/// The curated classifier's lists: its tables, its guards and its
/// literals (13.2).
fn render_curated(s: &mut String, built: &[Built], cur: &Curated) -> Result<(), String> {
    let count = |prefix: &str| built.iter().filter(|b| b.name.starts_with(prefix)).count();
    let names = |prefix: &str| {
        built
            .iter()
            .filter(|b| b.name.starts_with(prefix))
            .map(|b| format!("&{}", b.name.to_ascii_uppercase()))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let cfg = "#[cfg(feature = \"curated\")]";
    let _ = writeln!(
        s,
        "\n/// Number of `cur_*` tables.\n{cfg}\npub(super) const CURATED_LEN: usize = {};",
        count("cur_")
    );
    let _ = writeln!(
        s,
        "\n/// The curated classifier's tables (spec 13.2): retryable, usage limit\n\
         /// (its windows of 80 characters through the window words of `WINDOWS`),\n\
         /// overflow (but `/too many tokens/i`, a guard).\n{cfg}\n\
         pub(super) static CURATED: [&Delayed; CURATED_LEN] = [{}];",
        names("cur_")
    );
    let _ = writeln!(
        s,
        "\n/// Number of `guard_*` tables.\n{cfg}\npub(super) const GUARDS_LEN: usize = {};",
        count("guard_")
    );
    let _ = writeln!(
        s,
        "\n/// The curated classifier's guards (spec 13.2): the never-retried\n\
         /// pattern (`NEVER`), the throttle pattern (`THROTTLE`), `/too many\n\
         /// tokens/i` (`TOO_MANY_TOKENS`) and the names every hint rule reads\n\
         /// its text at (`HINT`: a text with none has no curated hint).\n{cfg}\n\
         pub(super) static GUARDS: [&Delayed; GUARDS_LEN] = [{}];",
        names("guard_")
    );
    let _ = writeln!(s, "\n/// Output bit of `GUARDS`: the never-retried pattern ends here.\n{cfg}\npub(super) const NEVER: u8 = {BIT_NEVER};");
    let _ = writeln!(s, "\n/// Output bit of `GUARDS`: the throttle pattern ends here.\n{cfg}\npub(super) const THROTTLE: u8 = {BIT_THROTTLE};");
    let _ = writeln!(s, "\n/// Output bit of `GUARDS`: `/too many tokens/i` ends here.\n{cfg}\npub(super) const TOO_MANY_TOKENS: u8 = {BIT_TOO_MANY_TOKENS};");
    let _ = writeln!(
        s,
        "\n/// The curated alternatives in other scripts than ASCII, matched as\n\
         /// written in the text's bytes, with their bit (`RETRYABLE`,\n\
         /// `USAGE_LIMIT`, `NEVER`).\n{cfg}\n\
         pub(super) static CURATED_LITERALS: [(&str, u8); {}] = [",
        cur.literals.len()
    );
    for (literal, bit) in &cur.literals {
        let _ = writeln!(s, "    ({literal:?}, {bit}),");
    }
    s.push_str("];\n");
    let _ = writeln!(
        s,
        "\n/// Number of `cwin_*` tables.\n{cfg}\npub(super) const CURATED_WORD_TABLES: usize = {};",
        count("cwin_")
    );
    let _ = writeln!(
        s,
        "\n/// The tables of the curated window words' variants.\n{cfg}\n\
         pub(super) static CURATED_WORD_TABLE: [&Delayed; CURATED_WORD_TABLES] = [{}];",
        names("cwin_")
    );
    let _ = writeln!(
        s,
        "\n/// The curated window words' variants: (table, bit, length in characters).\n{cfg}\n\
         pub(super) static CURATED_WORDS: [(u8, u8, u8); {}] = [",
        cur.words.len()
    );
    for w in &cur.words {
        let _ = writeln!(s, "    ({}, {}, {}), // `{}`", w.table, w.bit, w.len, w.js);
    }
    s.push_str("];\n");
    let _ = writeln!(
        s,
        "\n/// Number of curated window alternatives.\n{cfg}\npub(super) const CURATED_WINDOWS_LEN: usize = {};",
        cur.windows.len()
    );
    let _ = writeln!(
        s,
        "\n/// The curated window alternatives: the variants of the first word, of the\n\
         /// second, the most characters between them, and the label.\n{cfg}\n\
         pub(super) static CURATED_WINDOWS: [(&[u8], &[u8], u8, u8); CURATED_WINDOWS_LEN] = ["
    );
    for w in &cur.windows {
        let _ = writeln!(s, "    // `{}`", w.js);
        let _ = writeln!(
            s,
            "    (&{:?}, &{:?}, {}, {}),",
            w.first, w.second, w.gap, w.label
        );
    }
    s.push_str("];\n");
    // Per table of `TABLES` (`cur_*`, `guard_*`, `cwin_*`, in that order),
    // its patterns; the window words' tables share the window alternatives.
    let mut tables: Vec<(Vec<String>, u32)> = Vec::new();
    for prefix in ["cur_", "guard_"] {
        for b in built.iter().filter(|b| b.name.starts_with(prefix)) {
            let mut patterns = Vec::new();
            for (js, _, _) in &b.parts {
                let js = if js.starts_with('/') {
                    literal_body(js)?
                } else {
                    js.as_str()
                };
                patterns.push(js.to_string());
            }
            tables.push((patterns, 1u32 << tables.len()));
        }
    }
    let words = count("cwin_");
    let words_mask = ((1u32 << words) - 1) << tables.len();
    if tables.len() + words > 31 {
        return Err("more than 31 curated tables".into());
    }
    tables.push((
        cur.windows.iter().map(|w| w.js.clone()).collect(),
        words_mask,
    ));
    let factors = factors::curated(&tables)?;
    let _ = writeln!(
        s,
        "\n/// A required factor of the curated tables: its text (lower case,\n\
         /// ASCII), how many bytes before it a match may start (`None`: anywhere\n\
         /// earlier on its line), the mask of the tables whose patterns it was\n\
         /// chosen for (bit `k`: table `k` of `CURATED`, then `GUARDS`, then\n\
         /// `CURATED_WORD_TABLE`, counted on; a window alternative's: both window\n\
         /// words' tables), and its needs (as a [`Factor`]'s).\n\
         #[cfg(all(feature = \"curated\", feature = \"prefilter\"))]\n\
         pub(super) type CuratedFactor = (&'static str, Option<u16>, u32, &'static [&'static [Need]]);\n\
         \n\
         /// The required factors of the curated tables, sorted: every match of a\n\
         /// pattern of table `k` contains one whose mask has bit `k`, and none\n\
         /// starts with another.\n\
         #[cfg(all(feature = \"curated\", feature = \"prefilter\"))]\n\
         pub(super) static CURATED_FACTORS: [CuratedFactor; {}] = [",
        factors.len()
    );
    let mut longest = 0;
    for f in &factors {
        longest = longest.max(f.text.len());
        let text = String::from_utf8(f.text.clone()).map_err(|e| e.to_string())?;
        let before = match f.before {
            Some(b) => format!("Some({})", u16::try_from(b).map_err(|e| e.to_string())?),
            None => "None".to_string(),
        };
        // The needs, over the patterns of every table the factor serves.
        let js: Vec<&str> = tables
            .iter()
            .filter(|(_, mask)| mask & f.labels != 0)
            .flat_map(|(patterns, _)| patterns.iter().map(String::as_str))
            .collect();
        let needs = render_needs(&text, near::needs(&js, &f.text)?)?;
        let _ = writeln!(s, "    ({text:?}, {before}, {:#x}, &[{needs}]),", f.labels);
    }
    s.push_str("];\n");
    let _ = writeln!(
        s,
        "\n/// The longest of `CURATED_FACTORS`, in bytes.\n\
         #[cfg(all(feature = \"curated\", feature = \"prefilter\"))]\n\
         pub(super) const CURATED_FACTOR_MAX_LEN: usize = {longest};"
    );
    Ok(())
}

/// The needs of a factor (`text`), as Rust: `&[..], &[..]`.
fn render_needs(text: &str, needs: Vec<Vec<near::Near>>) -> Result<String, String> {
    let mut rendered = Vec::new();
    for need in needs {
        let mut all = Vec::new();
        for n in need {
            let lit = String::from_utf8(n.text).map_err(|e| e.to_string())?;
            let offset =
                |x: isize| i16::try_from(x).map_err(|_| format!("{text}: {lit} {x} bytes off"));
            all.push(format!(
                "({}, {}, {}, {lit:?})",
                offset(n.lo)?,
                offset(n.hi)?,
                n.line
            ));
        }
        rendered.push(format!("&[{}]", all.join(", ")));
    }
    Ok(rendered.join(", "))
}

/// The required factors of the classic patterns ([`factors`]), per set
/// of labels looked for, and those of the extended patterns.
fn render_factors(s: &mut String) -> Result<(), String> {
    s.push_str(
        "\n/// A required factor: its text, how many bytes before it a match may start\n\
         /// (`None`: anywhere earlier on its line), the labels whose patterns it was\n\
         /// chosen for, and its *needs* ([`Need`]): a hit is stepped on only where\n\
         /// one of them holds (none: every hit is).\n\
         #[cfg(feature = \"prefilter\")]\n\
         pub(super) type Factor = (&'static str, Option<u16>, u8, &'static [&'static [Need]]);\n\
         \n\
         /// A literal (lower case) that must start `lo..=hi` bytes from a hit's start,\n\
         /// on the hit's line if `line` (no line feed between them): `(lo, hi, line,\n\
         /// literal)`. A need holds where all of its literals occur.\n\
         #[cfg(feature = \"prefilter\")]\n\
         pub(super) type Need = (i16, i16, bool, &'static str);\n",
    );
    render_factor_table(
        s,
        "FACTORS",
        "/// The required factors of the classic patterns, lower case, per set of labels\n\
         /// looked for (`RETRYABLE | USAGE_LIMIT | OVERFLOW | HINT` bits as the index):\n\
         /// every match of their patterns (spec 3.2 to 3.4, but the anchored overflow\n\
         /// pattern) and every retry hint's name contains one, and none contains another.\n\
         /// With each, how many bytes before it a match may start, or `None`: anywhere\n\
         /// earlier on its line, and the labels whose patterns it was chosen for (a\n\
         /// hit's segment steps their tables only). Last, its *needs* (see\n\
         /// [`Factor`]).\n\
         #[cfg(feature = \"prefilter\")]\n",
        factors::classic,
        factors::classic_patterns,
    )?;
    render_factor_table(
        s,
        "EXT_FACTORS",
        "/// The required factors of the extended patterns (spec 10.5, the unanchored\n\
         /// overflow patterns of 3.3 and the hint names of 10.4), as [`FACTORS`]: every\n\
         /// match contains one, and starts on its line (what follows it may cross lines).\n\
         #[cfg(feature = \"prefilter\")]\n",
        factors::extended,
        factors::extended_patterns,
    )
}

fn render_factor_table(
    s: &mut String,
    name: &str,
    doc: &str,
    of: fn(u8) -> Result<Vec<factors::Factor>, String>,
    patterns: fn(u8) -> Result<factors::Labelled, String>,
) -> Result<(), String> {
    let mut longest = 0;
    let _ = writeln!(s, "\n{doc}pub(super) static {name}: [&[Factor]; 16] = [");
    for want in 0..16u8 {
        let (fs, js) = if want & factors::ALL == want && want != 0 {
            let js: Vec<&str> = patterns(want)?.into_iter().map(|(js, _)| js).collect();
            (of(want)?, js)
        } else {
            (Vec::new(), Vec::new())
        };
        let _ = writeln!(s, "    // {want}\n    &[");
        for f in &fs {
            longest = longest.max(f.text.len());
            let text = String::from_utf8(f.text.clone()).map_err(|e| e.to_string())?;
            let before = match f.before {
                Some(b) => format!(
                    "Some({})",
                    u16::try_from(b).map_err(|_| format!("{text}: {b} bytes before"))?
                ),
                None => "None".to_string(),
            };
            let needs = render_needs(&text, near::needs(&js, &f.text)?)?;
            let _ = writeln!(s, "        ({text:?}, {before}, {}, &[{needs}]),", f.labels);
        }
        s.push_str("    ],\n");
    }
    s.push_str("];\n");
    let max = name.replace("FACTORS", "FACTOR_MAX_LEN");
    let _ = writeln!(
        s,
        "\n/// The longest of `{name}`, in bytes.\n#[cfg(feature = \"prefilter\")]\n\
         pub(super) const {max}: usize = {longest};"
    );
    Ok(())
}

/// Every generated file: (file name, contents).
pub fn files(built: &[Built]) -> Result<Vec<(String, Vec<u8>)>, String> {
    let mut files: Vec<(String, Vec<u8>)> = built
        .iter()
        .map(|b| (format!("{}.bin", b.name), b.bin()))
        .collect();
    files.push(("mod.rs".to_string(), render_mod(built)?.into_bytes()));
    Ok(files)
}

/// `src/classify/dfa/` of the main crate.
pub fn out_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../src/classify/dfa")
}

/// The names of the generated files that differ from (or are missing in)
/// `dir`, and of the files in `dir` that the generator would not write.
pub fn drift(dir: &Path, files: &[(String, Vec<u8>)]) -> Vec<String> {
    let mut stale: Vec<String> = files
        .iter()
        .filter(|(name, bytes)| std::fs::read(dir.join(name)).ok().as_deref() != Some(bytes))
        .map(|(name, _)| name.clone())
        .collect();
    stale.extend(strays(dir, files));
    stale
}

/// Files in `dir` that the generator would not write.
pub fn strays(dir: &Path, files: &[(String, Vec<u8>)]) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut strays: Vec<String> = entries
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|name| !files.iter().any(|(f, _)| f == name))
        .collect();
    strays.sort();
    strays
}

#[cfg(test)]
mod tests {
    use super::*;
    fn is_match(regex: &str, text: &str) -> bool {
        let report = if regex.contains(r"\b") {
            Report::Delayed
        } else {
            Report::AtEnd
        };
        table::compile(&[regex.to_string()], &[1], false, report)
            .unwrap()
            .is_match(text)
    }

    #[test]
    fn translates_letters_dot_and_classes() {
        let both = |js| translate(js, Letters::Both).unwrap();
        assert_eq!(both("ab"), "[aA][bB]");
        assert_eq!(translate("aB", Letters::Lower).unwrap(), "ab");
        assert_eq!(both("a.?b"), r"[aA][^\n\r\x{2028}\x{2029}]?[bB]");
        assert_eq!(both(r"\d+\s*"), r"[0-9]+[\t\n\x0B\x0C\r ]*");
        assert_eq!(both("[_ ]"), r"[\x{5F}\x{20}]");
        assert_eq!(both("[a_]"), r"[aA\x{5F}]");
        assert_eq!(translate("[A_]", Letters::Lower).unwrap(), r"[a\x{5F}]");
        assert_eq!(both(r"^4(00|13)\(x\)"), r"^4(00|13)\([xX]\)");
        assert_eq!(both("429|500"), "429|500");
        assert_eq!(both("x_y-z"), "[xX]_[yY]-[zZ]");
    }

    #[test]
    fn refuses_what_it_cannot_translate() {
        for bad in [r"\w", r"\B", r"\1", "(?=a)", "[a-z]", "[", "[]", r"\u0041"] {
            assert!(translate(bad, Letters::Lower).is_err(), "{bad}");
        }
        assert!(literal_body("/a/g").is_err());
        assert!(literal_body("a").is_err());
        assert_eq!(literal_body("/a/i").unwrap(), "a");
    }

    #[test]
    fn semantics_of_section_3_1() {
        let re = translate("rate.?limit", Letters::Lower).unwrap();
        assert!(is_match(&re, "RATE LIMIT"));
        assert!(is_match(&re, "rate😀limit"));
        assert!(is_match(&re, "rate—limit"));
        assert!(is_match(&re, "ratelimit"));
        assert!(!is_match(&re, "rate\u{2028}limit"));
        assert!(!is_match(&re, "rate\u{2029}limit"));
        assert!(!is_match(&re, "rate\nlimit"));
        assert!(!is_match(&re, "rate\rlimit"));
        assert!(!is_match(&re, "rate\u{212A}imit"));
        assert!(!is_match(&re, "rate lımit"));
        let re = translate("service", Letters::Lower).unwrap();
        assert!(!is_match(&re, "ſervice"));
        assert!(is_match(&re, "SeRvIcE"));
        let re = translate(r"a\sb\d", Letters::Lower).unwrap();
        assert!(is_match(&re, "a\u{0B}b1"));
        assert!(!is_match(&re, "a\u{A0}b1"));
        assert!(!is_match(&re, "a b١"));
    }

    #[test]
    fn anchored_alternative_stays_anchored() {
        let plan = plan().unwrap();
        let anchored = &plan.words.iter().find(|w| w.0.contains('^')).unwrap().1;
        assert!(is_match(anchored, "400 (no body)"));
        assert!(is_match(anchored, "413\u{0B}status code\u{0C}(no body)"));
        assert!(is_match(anchored, "400 STATUS CODE(NO BODY) trailing"));
        assert!(!is_match(anchored, "x 400 (no body)"));
        assert!(!is_match(anchored, "\n400 (no body)"));
        assert!(!is_match(anchored, "413 \u{A0}(no body)"));
    }

    #[test]
    fn splits_at_the_first_top_level_star() {
        assert_eq!(split_star("a.*b.*c").unwrap(), Some(("a", "b.*c")));
        assert_eq!(split_star("(a|b).*c").unwrap(), Some(("(a|b)", "c")));
        assert_eq!(split_star("ab").unwrap(), None);
        assert_eq!(split_star(r"a\.*b").unwrap(), None);
        assert_eq!(split_star("[.]*b").unwrap(), None);
        assert!(split_star("a|b.*c").is_err());
        assert!(split_star("a.*^b").is_err());
        let plan = plan().unwrap();
        assert_eq!(plan.stars.len(), 5);
        let tail = table::compile(
            std::slice::from_ref(&plan.stars[0].tail),
            &[1],
            true,
            Report::AtEnd,
        )
        .unwrap();
        assert!(tail.is_match(" 1 — 😀 exceeds the maximum"));
        assert!(!tail.is_match(" 1\u{2028}exceeds the maximum"));
    }

    /// Rebuilds every DFA from the pattern source and fails if the committed
    /// files under `src/classify/dfa/` differ.
    #[test]
    fn committed_dfas_do_not_drift() {
        let built = build_all().unwrap();
        let stale = drift(&out_dir(), &files(&built).unwrap());
        assert!(
            stale.is_empty(),
            "stale generated files {stale:?}: run `{REGENERATE}`"
        );
    }
}
