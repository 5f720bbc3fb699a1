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

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

pub mod table;

use table::Table;

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
/// becomes `[0-9]`, `\s` becomes ASCII white space, `^` stays start of text.
/// Constructs whose meaning would differ (back-references, look-around,
/// `\w`, `\b`, ranges of letters, ...) are refused rather than guessed.
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

/// Output bit of the retryable pattern (3.2).
pub const BIT_RETRYABLE: u8 = 1;
/// Output bit of the usage-limit pattern (3.4).
pub const BIT_USAGE_LIMIT: u8 = 2;
/// Output bit (of `labels`) of the names of the retry hints (3.5): every
/// rule needs `retry-after` or `x-ratelimit-reset` somewhere in the text.
pub const BIT_HINT: u8 = 8;
/// The names of [`BIT_HINT`] (the `-ms` names contain them).
pub const HINT_NAMES: &str = "retry-after|x-ratelimit-reset";
/// Output bit of an overflow pattern without `.*` (3.3).
pub const BIT_OVERFLOW: u8 = 4;
/// Output bit of the head of the first `.*` overflow pattern; the next
/// ones follow.
pub const BIT_HEAD: u8 = 8;

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

/// The classifier's patterns, translated and grouped.
pub struct Plan {
    /// Retryable (3.2), usage limit (3.4) and the hint names (3.5):
    /// (pattern, translated, bit).
    pub labels: Vec<(&'static str, String, u8)>,
    /// Overflow patterns without `.*`, and the heads of the others:
    /// (JavaScript, translated, bit).
    pub words: Vec<(&'static str, String, u8)>,
    /// Overflow patterns with `.*`.
    pub stars: Vec<Star>,
}

/// Translates and groups every pattern of `patterns.rs`.
pub fn plan() -> Result<Plan, String> {
    let mut plan = Plan {
        labels: vec![
            (
                patterns::RETRYABLE,
                translate(patterns::RETRYABLE, Letters::Lower)?,
                BIT_RETRYABLE,
            ),
            (
                patterns::USAGE_LIMIT,
                translate(patterns::USAGE_LIMIT, Letters::Lower)?,
                BIT_USAGE_LIMIT,
            ),
            (HINT_NAMES, translate(HINT_NAMES, Letters::Lower)?, BIT_HINT),
        ],
        words: Vec::new(),
        stars: Vec::new(),
    };
    for literal in patterns::OVERFLOW {
        let body = literal_body(literal)?;
        match split_star(body)? {
            None => plan
                .words
                .push((literal, translate(body, Letters::Lower)?, BIT_OVERFLOW)),
            Some((head, rest)) => {
                let bit = u32::try_from(plan.stars.len())
                    .ok()
                    .and_then(|k| BIT_HEAD.checked_shl(k))
                    .filter(|&b| b != 0)
                    .ok_or("too many `.*` patterns for a u8 of heads")?;
                let head = translate(head, Letters::Lower)?;
                plan.words.push((literal, head.clone(), bit));
                plan.stars.push(Star {
                    js: literal,
                    head,
                    tail: translate(&format!(".*{rest}"), Letters::Lower)?,
                });
            }
        }
    }
    Ok(plan)
}

/// One generated table.
pub struct Built {
    /// Name of the static (upper case) and file stem (lower case).
    pub name: String,
    /// What it matches, for the doc comment: (JavaScript, translated, bit).
    pub parts: Vec<(&'static str, String, u8)>,
    /// Whether it is searched anchored.
    pub anchored: bool,
    /// The table.
    pub table: Table,
}

/// Packs `parts` into as few tables of at most 256 states as a greedy
/// left-to-right split gives.
fn pack_greedy(stem: &str, parts: &[(&'static str, String, u8)]) -> Result<Vec<Built>, String> {
    let compile_parts = |group: &[(&'static str, String, u8)]| {
        let regexes: Vec<String> = group.iter().map(|p| p.1.clone()).collect();
        let bits: Vec<u8> = group.iter().map(|p| p.2).collect();
        table::compile(&regexes, &bits, false)
    };
    let mut groups: Vec<(usize, usize, Table)> = Vec::new();
    let mut from = 0;
    while from < parts.len() {
        let mut to = from + 1;
        let mut best = compile_parts(&parts[from..to])?;
        while to < parts.len() {
            match compile_parts(&parts[from..=to]) {
                Ok(t) => {
                    best = t;
                    to += 1;
                }
                Err(e) if e.contains("do not fit") => break,
                Err(e) => return Err(e),
            }
        }
        groups.push((from, to, best));
        from = to;
    }
    Ok(groups
        .into_iter()
        .enumerate()
        .map(|(i, (from, to, table))| Built {
            name: format!("{stem}_{i}"),
            parts: parts[from..to].to_vec(),
            anchored: false,
            table,
        })
        .collect())
}

/// Every table: `labels`, then `words_*`, then `tail_*`.
pub fn build_all() -> Result<Vec<Built>, String> {
    let plan = plan()?;
    let regexes: Vec<String> = plan.labels.iter().map(|p| p.1.clone()).collect();
    let bits: Vec<u8> = plan.labels.iter().map(|p| p.2).collect();
    let mut built = vec![Built {
        name: "labels".into(),
        table: table::compile(&regexes, &bits, false)?,
        parts: plan.labels.clone(),
        anchored: false,
    }];
    built.extend(pack_greedy("words", &plan.words)?);
    for (k, star) in plan.stars.iter().enumerate() {
        built.push(Built {
            name: format!("tail_{k}"),
            table: table::compile(std::slice::from_ref(&star.tail), &[1], true)?,
            parts: vec![(star.js, star.tail.clone(), 1)],
            anchored: true,
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

fn render_table(s: &mut String, b: &Built) {
    let t = &b.table;
    let _ = writeln!(
        s,
        "\n/// {} states, {} classes, {} bytes{}:",
        t.states(),
        t.stride,
        t.size(),
        if b.anchored {
            ", searched anchored where the head ended"
        } else {
            ""
        }
    );
    for (js, regex, bit) in &b.parts {
        let _ = writeln!(s, "/// - bit {bit}: `{js}` as `{regex}`");
    }
    let _ = writeln!(
        s,
        "pub(super) static {}: Table = Table {{",
        b.name.to_ascii_uppercase()
    );
    s.push_str("    classes: &[");
    render_bytes(s, &t.classes);
    s.push_str("],\n");
    let _ = writeln!(s, "    states: {},", t.states());
    let _ = writeln!(s, "    special: {},", t.special);
    let _ = writeln!(
        s,
        "    dead: {},",
        t.dead.map_or("None".to_string(), |d| format!("Some({d})"))
    );
    let _ = writeln!(s, "    trans: include_bytes!(\"{}.bin\"),", b.name);
    s.push_str("    out: &[");
    render_bytes(s, &t.out);
    s.push_str("],\n};\n");
}

/// Renders the generated `mod.rs`.
pub fn render_mod(built: &[Built]) -> String {
    let mut s = String::new();
    s.push_str("// DO NOT EDIT THIS FILE. IT WAS AUTOMATICALLY GENERATED BY:\n//\n");
    let _ = writeln!(s, "//     {REGENERATE}\n//");
    s.push_str("// from src/classify/patterns.rs; `-- --check` verifies it.\n\n");
    s.push_str(
        "//! The classifier's tables, built ahead of time: minimized DFAs that step\n\
         //! on one symbol per character (see `super::table`), one byte per\n\
         //! transition. The `.bin` files hold the transitions, column by column;\n\
         //! being bytes, they read the same on every endianness.\n\n",
    );
    s.push_str("use super::table::Table;\n\n");
    let words_len = built
        .iter()
        .filter(|b| b.name.starts_with("words_"))
        .count();
    let tails_len = built.iter().filter(|b| b.name.starts_with("tail_")).count();
    let _ = writeln!(
        s,
        "/// Number of `words_*` tables.\npub(super) const WORDS_LEN: usize = {words_len};"
    );
    let _ = writeln!(s, "/// Number of tails (overflow patterns with `.*`).\npub(super) const TAILS_LEN: usize = {tails_len};");
    let _ = writeln!(s, "/// Output bit: the retryable pattern (spec 3.2) ends here.\npub(super) const RETRYABLE: u8 = {BIT_RETRYABLE};");
    let _ = writeln!(s, "/// Output bit: the usage-limit pattern (spec 3.4) ends here.\npub(super) const USAGE_LIMIT: u8 = {BIT_USAGE_LIMIT};");
    let _ = writeln!(s, "/// Output bit of `LABELS`: a retry-hint name (spec 3.5) ends here.\npub(super) const HINT: u8 = {BIT_HINT};");
    let _ = writeln!(s, "/// Output bit: an overflow pattern (spec 3.3) without `.*` ends here.\npub(super) const OVERFLOW: u8 = {BIT_OVERFLOW};");
    let _ = writeln!(s, "/// Output bit of `WORDS`: the head of `TAILS[0]` ends here; `TAILS[k]` has\n/// this bit shifted left by `k`.\npub(super) const HEAD: u8 = {BIT_HEAD};");
    let words: Vec<&Built> = built
        .iter()
        .filter(|b| b.name.starts_with("words_"))
        .collect();
    let tails: Vec<&Built> = built
        .iter()
        .filter(|b| b.name.starts_with("tail_"))
        .collect();
    let _ = writeln!(
        s,
        "\n/// The tables of the overflow patterns without `.*` and of the heads.\n\
         pub(super) static WORDS: [&Table; WORDS_LEN] = [{}];",
        words
            .iter()
            .map(|b| format!("&{}", b.name.to_ascii_uppercase()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        s,
        "\n/// The tails of the overflow patterns with `.*`, in head-bit order.\n\
         pub(super) static TAILS: [&Table; TAILS_LEN] = [{}];",
        tails
            .iter()
            .map(|b| format!("&{}", b.name.to_ascii_uppercase()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    for b in built {
        render_table(&mut s, b);
    }
    s
}

/// Every generated file: (file name, contents).
pub fn files(built: &[Built]) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = built
        .iter()
        .map(|b| (format!("{}.bin", b.name), b.table.trans.clone()))
        .collect();
    files.push(("mod.rs".to_string(), render_mod(built).into_bytes()));
    files
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
        table::compile(&[regex.to_string()], &[1], false)
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
        for bad in [r"\w", r"\b", r"\1", "(?=a)", "[a-z]", "[", "[]", r"\u0041"] {
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
        let tail = table::compile(std::slice::from_ref(&plan.stars[0].tail), &[1], true).unwrap();
        assert!(tail.is_match(" 1 — 😀 exceeds the maximum"));
        assert!(!tail.is_match(" 1\u{2028}exceeds the maximum"));
    }

    /// Rebuilds every DFA from the pattern source and fails if the committed
    /// files under `src/classify/dfa/` differ.
    #[test]
    fn committed_dfas_do_not_drift() {
        let built = build_all().unwrap();
        let stale = drift(&out_dir(), &files(&built));
        assert!(
            stale.is_empty(),
            "stale generated files {stale:?}: run `{REGENERATE}`"
        );
    }
}
