//! Your own rules under test (feature `rules-fuzz`): a generator of small
//! rule sets that writes each pattern twice, in the rules' syntax and as a
//! `regex` crate pattern with the same meaning spelled out (`[aA]` for a
//! letter, `[^\n\r\x{2028}\x{2029}]` for `.`, `(?-u:\b)` for `\b`, ...),
//! and the entry points of the two rules fuzz targets, which **panic** when
//! a guarantee is violated:
//!
//! - [`fuzz_rules_match`]: a generated rule set, compiled at run time and
//!   through dense and sparse blobs, gives the verdicts of a `RegexSet` of
//!   the reference patterns on generated texts;
//! - [`fuzz_rules_from_bytes`]: `Rules::from_bytes` on arbitrary bytes, on
//!   damaged valid blobs (checksum repaired, so that regex-automata's own
//!   validation is what stands) and on truncated ones, never panics, and
//!   what it accepts can be searched.
//!
//! The reference is written by this generator, not derived from the
//! library's translation, so the two are independent.
//!
//! ```
//! use autoretry_testkit::rules_fuzz::{fuzz_rules_from_bytes, fuzz_rules_match};
//! fuzz_rules_match(b"\x05\x01\x02rate limited\x00\x07\x11");
//! fuzz_rules_from_bytes(b"\x01\x00\x10\x00\xff");
//! ```

use std::sync::OnceLock;

use autoretry::rules::{DfaKind, Endian, RuleSet, Rules, RulesError, HEADER_LEN};

/// A reader of fuzz bytes: past the end, every byte is 0.
#[derive(Clone, Debug)]
pub struct Bytes<'a> {
    data: &'a [u8],
    at: usize,
}

impl<'a> Bytes<'a> {
    /// A reader over `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Bytes { data, at: 0 }
    }

    /// The next byte (0 past the end).
    pub fn byte(&mut self) -> u8 {
        let b = self.data.get(self.at).copied().unwrap_or(0);
        self.at = self.at.saturating_add(1);
        b
    }

    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            usize::from(self.byte()) % n
        }
    }

    /// What has not been read.
    pub fn rest(&self) -> &'a [u8] {
        self.data.get(self.at..).unwrap_or(&[])
    }
}

/// Characters of the generated patterns and texts: ASCII letters in both
/// cases (with the non-ASCII characters that Unicode folds into them),
/// digits, word and non-word punctuation, white space, the line breaks of
/// `.` and a few non-ASCII letters.
pub const ALPHABET: &[char] = &[
    'a', 'A', 'b', 'k', 'K', 's', 'S', 'x', '0', '7', '_', ' ', '-', '.', '\t', '\n', '\r',
    '\u{2028}', 'é', 'É', 'ſ', '\u{212A}', 'İ', 'ı',
];

/// One generated pattern: in the rules' syntax, and the `regex` crate's
/// pattern with the same meaning.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Pattern {
    /// What the rules file says.
    pub rule: String,
    /// The `regex` crate's pattern with the rules' semantics written out.
    pub reference: String,
}

fn escape(c: char) -> String {
    regex::escape(c.encode_utf8(&mut [0; 4]))
}

/// A literal character: a letter in both cases for the reference.
fn literal(c: char) -> Pattern {
    let reference = if c.is_ascii_alphabetic() {
        format!("[{}{}]", c.to_ascii_lowercase(), c.to_ascii_uppercase())
    } else {
        escape(c)
    };
    Pattern {
        rule: escape(c),
        reference,
    }
}

const DOT: &str = r"[^\n\r\x{2028}\x{2029}]";
const SPACE: &str = r"\t\n\x0B\x0C\r ";
const WORD: &str = "0-9A-Za-z_";

/// A class item: (rule, reference inside the brackets).
fn class_item(b: &mut Bytes<'_>) -> (String, String) {
    match b.below(11) {
        0..=2 => {
            let c = ALPHABET[b.below(ALPHABET.len())];
            let both = if c.is_ascii_alphabetic() {
                format!("{}{}", c.to_ascii_lowercase(), c.to_ascii_uppercase())
            } else {
                escape(c)
            };
            (escape(c), both)
        }
        // Ranges, one that crosses from upper to lower case.
        3 => ("a-c".into(), "a-cA-C".into()),
        4 => ("X-b".into(), "X-bx-zA-B".into()),
        5 => (r"\d".into(), "0-9".into()),
        6 => (r"\s".into(), SPACE.into()),
        7 => (r"\w".into(), WORD.into()),
        8 => ("[:upper:]".into(), "A-Za-z".into()),
        // \p{Lu} has every ASCII upper-case letter, so the lower ones join.
        9 => (r"\p{Lu}".into(), r"\p{Lu}a-z".into()),
        _ => ("é".into(), "é".into()),
    }
}

fn atom(b: &mut Bytes<'_>, depth: u32) -> Pattern {
    let fixed = |rule: &str, reference: &str| Pattern {
        rule: rule.into(),
        reference: reference.into(),
    };
    match b.below(if depth == 0 { 16 } else { 14 }) {
        0..=5 => literal(ALPHABET[b.below(ALPHABET.len())]),
        6 => fixed(".", DOT),
        7 => match b.below(6) {
            0 => fixed(r"\d", "[0-9]"),
            1 => fixed(r"\D", "[^0-9]"),
            2 => fixed(r"\s", &format!("[{SPACE}]")),
            3 => fixed(r"\S", &format!("[^{SPACE}]")),
            4 => fixed(r"\w", &format!("[{WORD}]")),
            _ => fixed(r"\W", &format!("[^{WORD}]")),
        },
        8 => match b.below(5) {
            0 => fixed(r"\b", r"(?-u:\b)"),
            1 => fixed(r"\B", r"(?-u:\B)"),
            2 => fixed(r"\<", r"(?-u:\b{start})"),
            3 => fixed(r"\b{end}", r"(?-u:\b{end})"),
            _ => fixed(r"\b{start-half}", r"(?-u:\b{start-half})"),
        },
        9 => fixed("^", r"\A"),
        10 => fixed("$", r"\z"),
        11..=12 => {
            let negated = b.below(3) == 0;
            let (mut rule, mut reference) = (String::from("["), String::from("["));
            if negated {
                rule.push('^');
                reference.push('^');
            }
            for _ in 0..=b.below(3) {
                let (r, f) = class_item(b);
                rule.push_str(&r);
                reference.push_str(&f);
            }
            rule.push(']');
            reference.push(']');
            Pattern { rule, reference }
        }
        13 => fixed("(?i)", ""),
        _ => {
            let inner = pattern_at(b, depth + 1);
            let capture = b.below(2) == 0;
            Pattern {
                rule: if capture {
                    format!("({})", inner.rule)
                } else {
                    format!("(?:{})", inner.rule)
                },
                reference: format!("(?:{})", inner.reference),
            }
        }
    }
}

/// An atom, maybe repeated.
fn piece(b: &mut Bytes<'_>, depth: u32) -> Pattern {
    let a = atom(b, depth);
    let op = match b.below(12) {
        0 => "?",
        1 => "*",
        2 => "+",
        3 => "{2}",
        4 => "{1,3}",
        5 => "{0,2}",
        _ => return a,
    };
    let lazy = if b.below(4) == 0 { "?" } else { "" };
    // `(?:...)` so that the operator applies to the whole reference.
    Pattern {
        rule: format!("(?:{}){op}{lazy}", a.rule),
        reference: format!("(?:{}){op}{lazy}", a.reference),
    }
}

fn pattern_at(b: &mut Bytes<'_>, depth: u32) -> Pattern {
    let mut alternatives = Vec::new();
    for _ in 0..=usize::from(depth < 2 && b.below(4) == 0) {
        let mut rule = String::new();
        let mut reference = String::new();
        for _ in 0..=b.below(3) {
            let p = piece(b, depth);
            rule.push_str(&p.rule);
            reference.push_str(&p.reference);
        }
        alternatives.push(Pattern { rule, reference });
    }
    Pattern {
        rule: alternatives
            .iter()
            .map(|p| p.rule.as_str())
            .collect::<Vec<_>>()
            .join("|"),
        reference: alternatives
            .iter()
            .map(|p| p.reference.as_str())
            .collect::<Vec<_>>()
            .join("|"),
    }
}

/// A generated pattern.
pub fn pattern(b: &mut Bytes<'_>) -> Pattern {
    pattern_at(b, 0)
}

/// A text of up to 15 characters of [`ALPHABET`].
pub fn text(b: &mut Bytes<'_>) -> String {
    (0..b.below(16))
        .map(|_| ALPHABET[b.below(ALPHABET.len())])
        .collect()
}

/// The verdict of the reference: the `regex` crate on the reference
/// patterns.
#[derive(Debug)]
pub struct Reference {
    never: regex::RegexSet,
    retry: regex::RegexSet,
}

impl Reference {
    /// The reference of two lists of generated patterns.
    pub fn new(never: &[Pattern], retry: &[Pattern]) -> Self {
        let set = |list: &[Pattern]| {
            regex::RegexSet::new(list.iter().map(|p| &p.reference))
                .unwrap_or_else(|e| panic!("a reference pattern of {list:?}: {e}"))
        };
        Reference {
            never: set(never),
            retry: set(retry),
        }
    }

    /// `Some(false)` when a `never` pattern matches, else `Some(true)` when
    /// a `retry` pattern does, else `None`.
    pub fn verdict(&self, text: &str) -> Option<bool> {
        if self.never.is_match(text) {
            Some(false)
        } else if self.retry.is_match(text) {
            Some(true)
        } else {
            None
        }
    }
}

/// A copy of `bytes` at a 4-byte aligned address: the buffer and the
/// copy's offset in it.
pub fn aligned(bytes: &[u8]) -> (Vec<u8>, usize) {
    let mut buf = vec![0u8; bytes.len() + 3];
    let offset = (4 - buf.as_ptr() as usize % 4) % 4;
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
    (buf, offset)
}

/// Compiles `never` and `retry` at run time, writes dense and sparse
/// blobs, loads them in place, and checks that each of the three gives the
/// reference's verdict on every text. Returns the verdicts, or `None` when
/// the rules are over the size limit ([`RulesError::TooLarge`], a
/// legitimate answer for some generated sets).
///
/// # Panics
///
/// When a pattern fails to compile for any other reason, or a verdict
/// differs.
pub fn check_against_reference(
    never: &[Pattern],
    retry: &[Pattern],
    texts: &[String],
) -> Option<Vec<Option<bool>>> {
    let set = RuleSet {
        retry: retry.iter().map(|p| p.rule.clone()).collect(),
        never: never.iter().map(|p| p.rule.clone()).collect(),
    };
    let reference = Reference::new(never, retry);
    let compiled = match Rules::compile(&set) {
        Ok(rules) => rules,
        Err(RulesError::TooLarge(_)) => return None,
        Err(e) => panic!("{set:?} does not compile: {e}"),
    };
    let blobs = [DfaKind::Dense, DfaKind::Sparse].map(|kind| {
        let blob = compiled
            .to_bytes(Endian::NATIVE, kind)
            .unwrap_or_else(|e| panic!("{set:?} as a {} blob: {e}", kind.as_str()));
        aligned(&blob)
    });
    let loaded: Vec<Rules<'_>> = blobs
        .iter()
        .map(|(buf, at)| {
            let len = buf.len() - 3;
            Rules::from_bytes(&buf[*at..*at + len])
                .unwrap_or_else(|e| panic!("{set:?}: its blob does not load: {e}"))
        })
        .collect();
    let verdicts = texts
        .iter()
        .map(|text| {
            let expected = reference.verdict(text);
            for (how, rules) in [
                ("run-time", &compiled),
                ("dense blob", &loaded[0]),
                ("sparse blob", &loaded[1]),
            ] {
                assert_eq!(
                    rules.verdict(text),
                    expected,
                    "{how} rules {set:?} on {text:?} (reference: never {:?}, retry {:?})",
                    never.iter().map(|p| &p.reference).collect::<Vec<_>>(),
                    retry.iter().map(|p| &p.reference).collect::<Vec<_>>(),
                );
            }
            expected
        })
        .collect();
    Some(verdicts)
}

/// Fuzz entry point: a rule set of up to 3 `never` and 3 `retry`
/// generated patterns and up to 8 generated texts (the first byte picks
/// the counts), checked by [`check_against_reference`].
pub fn fuzz_rules_match(data: &[u8]) -> Option<Vec<Option<bool>>> {
    let mut b = Bytes::new(data);
    let counts = b.byte();
    let never: Vec<Pattern> = (0..counts % 4).map(|_| pattern(&mut b)).collect();
    let retry: Vec<Pattern> = (0..(counts / 4) % 4).map(|_| pattern(&mut b)).collect();
    let texts: Vec<String> = (0..1 + b.below(8)).map(|_| text(&mut b)).collect();
    check_against_reference(&never, &retry, &texts)
}

/// The example rules of `tests/rules/example.json`, and their blobs
/// (sparse, as committed in `tests/rules/example.bin`, and dense).
pub fn example_blobs() -> &'static [Vec<u8>; 2] {
    static BLOBS: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    BLOBS.get_or_init(|| blobs_of(EXAMPLE_JSON))
}

/// The sparse and dense blobs of a rules file that compiles, in this
/// machine's byte order.
///
/// ```
/// use autoretry::rules::Rules;
/// let [sparse, dense] = autoretry_testkit::rules_fuzz::blobs_of(r#"{"retry": ["hiccup"]}"#);
/// assert_eq!(Rules::from_bytes(&sparse).unwrap().verdict("a HICCUP"), Some(true));
/// assert!(dense.len() > sparse.len());
/// ```
///
/// # Panics
///
/// When `json` is not a rules file that compiles.
pub fn blobs_of(json: &str) -> [Vec<u8>; 2] {
    let set = RuleSet::from_json(json).expect("a rules file");
    let rules = Rules::compile(&set).expect("rules that compile");
    [DfaKind::Sparse, DfaKind::Dense]
        .map(|kind| rules.to_bytes(Endian::NATIVE, kind).expect("a blob"))
}

/// `tests/rules/example.json`.
pub const EXAMPLE_JSON: &str = include_str!("../../tests/rules/example.json");

/// A small rule set with each construct the example uses (alternation, a
/// counted class, word boundaries, an anchor) and both lists: its blobs are
/// a few KB, so that validating one is cheap.
pub const SMALL_JSON: &str =
    r#"{"retry": ["stream (?:stalled|idle)", "\\bE_\\d{3}\\b"], "never": ["^tool:"]}"#;

/// The blobs of [`SMALL_JSON`] (sparse, dense).
pub fn small_blobs() -> &'static [Vec<u8>; 2] {
    static BLOBS: OnceLock<[Vec<u8>; 2]> = OnceLock::new();
    BLOBS.get_or_init(|| blobs_of(SMALL_JSON))
}

/// The header's checksum (FNV-1a, 32 bit, of the DFA's bytes).
pub fn checksum(dfa: &[u8]) -> u32 {
    dfa.iter().fold(0x811c_9dc5, |hash: u32, &b| {
        (hash ^ u32::from(b)).wrapping_mul(0x0100_0193)
    })
}

/// Texts searched in every blob that loads.
const PROBES: &[&str] = &[
    "",
    "stream stalled",
    "503 billing: insufficient funds",
    "x E_GATEWAY_504 upstream_error é\u{2028}ſ",
    "tool error: retry your request",
];

/// Loads `blob` in place (at a 4-byte aligned address, or one past it when
/// `offset_by_one`); when it loads, searches the probe texts and `text`
/// (the fuzzer's bytes, so that coverage steers the search through the
/// DFA's states). Returns whether it loaded.
fn load_and_search(blob: &[u8], offset_by_one: bool, text: &[u8]) -> Result<(), RulesError> {
    let mut padded = Vec::with_capacity(blob.len() + 1);
    if offset_by_one {
        padded.push(0);
    }
    padded.extend_from_slice(blob);
    let (buf, at) = aligned(&padded);
    let start = at + usize::from(offset_by_one);
    let rules = Rules::from_bytes(&buf[start..at + padded.len()])?;
    for text in PROBES {
        let _ = rules.verdict(text);
    }
    let _ = rules.verdict(&String::from_utf8_lossy(text));
    assert_eq!(rules.never_len() + rules.retry_len(), {
        let n = u16::from_le_bytes([blob[12], blob[13]]);
        let r = u16::from_le_bytes([blob[14], blob[15]]);
        usize::from(n) + usize::from(r)
    });
    Ok(())
}

/// Fuzz entry point for `Rules::from_bytes`. The first byte modulo 5
/// picks:
///
/// - 0: the rest as a blob, as it is;
/// - 1 and 2: a sparse or dense blob with bytes of the DFA replaced (pairs
///   of offset and value from the rest) and the checksum repaired, so that
///   regex-automata's validation decides;
/// - 3: a blob (sparse or dense) truncated, which must be refused;
/// - 4: a valid dense blob one byte off its alignment, which must be
///   refused as misaligned, and a sparse one, which must load.
///
/// The blobs of modes 1 to 4 are those of [`SMALL_JSON`], or of the example
/// rules when the first byte divided by 5 is a multiple of 8: validating
/// the example's blobs (23 and 82 KB) costs several times more, and the
/// validation's code is the same for both. A blob that loads is searched
/// with the probe texts and the fuzzer's bytes.
///
/// # Panics
///
/// When `from_bytes` panics, accepts a truncated blob, or a blob it
/// accepted panics when searched.
pub fn fuzz_rules_from_bytes(data: &[u8]) {
    let mut b = Bytes::new(data);
    let first = b.byte();
    let [sparse, dense] = if (first / 5) % 8 == 0 {
        example_blobs()
    } else {
        small_blobs()
    };
    match first % 5 {
        0 => {
            let _ = load_and_search(b.rest(), false, data);
        }
        mode @ (1 | 2) => {
            let mut blob = if mode == 1 {
                sparse.clone()
            } else {
                dense.clone()
            };
            let dfa_len = blob.len() - HEADER_LEN;
            for pair in b.rest().chunks(3) {
                let [hi, lo, value] = [
                    pair[0],
                    *pair.get(1).unwrap_or(&0),
                    *pair.get(2).unwrap_or(&0),
                ];
                let at = HEADER_LEN + usize::from(u16::from_be_bytes([hi, lo])) % dfa_len;
                blob[at] = value;
            }
            let sum = checksum(&blob[HEADER_LEN..]);
            blob[20..24].copy_from_slice(&sum.to_le_bytes());
            let _ = load_and_search(&blob, false, data);
        }
        3 => {
            let blob = if b.byte() % 2 == 0 { sparse } else { dense };
            let keep = usize::from(u16::from_le_bytes([b.byte(), b.byte()])) % blob.len();
            match load_and_search(&blob[..keep], false, data) {
                Err(RulesError::Truncated { .. } | RulesError::Foreign) => {}
                other => panic!("a blob truncated to {keep} bytes: {other:?}"),
            }
        }
        _ => {
            match load_and_search(dense, true, data) {
                Err(RulesError::Misaligned) => {}
                other => panic!("a dense blob off its alignment: {other:?}"),
            }
            load_and_search(sparse, true, data).expect("a sparse blob loads at any address");
        }
    }
}
