//! The classifier against the `regex` crate: every pattern of
//! `patterns.rs`, translated to the reference form (`[xX]` letters, explicit
//! `.`/`\d`/`\s` classes, no engine case folding) and compiled by `regex`,
//! must give the same answer as `autoretry::classify` on the corpus and on
//! generated adversarial texts, through both the `&str` and the lossy bytes
//! entry points.

use autoretry::classify::{
    classify, classify_bytes, matches_overflow, matches_overflow_bytes, matches_retryable,
    matches_retryable_bytes, matches_usage_limit, matches_usage_limit_bytes, retry_hint_ms,
    retry_hint_ms_bytes,
};
use autoretry_gen::{literal_body, patterns, translate, Letters};
use regex::Regex;

struct Reference {
    retryable: Regex,
    usage_limit: Regex,
    overflow: Vec<Regex>,
}

impl Reference {
    fn new() -> Self {
        let re = |js: &str| Regex::new(&translate(js, Letters::Both).unwrap()).unwrap();
        Reference {
            retryable: re(patterns::RETRYABLE),
            usage_limit: re(patterns::USAGE_LIMIT),
            overflow: patterns::OVERFLOW
                .iter()
                .map(|l| re(literal_body(l).unwrap()))
                .collect(),
        }
    }

    /// (retryable pattern, overflow, usage limit).
    fn labels(&self, text: &str) -> (bool, bool, bool) {
        (
            self.retryable.is_match(text),
            self.overflow.iter().any(|r| r.is_match(text)),
            self.usage_limit.is_match(text),
        )
    }
}

#[derive(Default)]
struct Counts {
    texts: usize,
    byte_texts: usize,
    retryable: usize,
    overflow: usize,
    usage_limit: usize,
    hint: usize,
}

impl Counts {
    fn check(&mut self, reference: &Reference, text: &str) {
        let (r, o, u) = reference.labels(text);
        self.texts += 1;
        self.retryable += usize::from(r);
        self.overflow += usize::from(o);
        self.usage_limit += usize::from(u);
        assert_eq!(matches_retryable(text), r, "retryable {text:?}");
        assert_eq!(matches_overflow(text), o, "overflow {text:?}");
        assert_eq!(matches_usage_limit(text), u, "usage limit {text:?}");
        let c = classify(text);
        assert_eq!(
            (c.retryable, c.overflow, c.usage_limit),
            (!text.is_empty() && !o && r, o, u),
            "classify {text:?}"
        );
        assert_eq!(c.hint_ms, retry_hint_ms(text, None), "hint {text:?}");
        self.hint += usize::from(c.hint_ms.is_some());
        assert_eq!(
            classify_bytes(text.as_bytes()),
            c,
            "classify_bytes {text:?}"
        );
    }

    fn check_bytes(&mut self, reference: &Reference, bytes: &[u8]) {
        let lossy = String::from_utf8_lossy(bytes);
        let (r, o, u) = reference.labels(&lossy);
        self.byte_texts += 1;
        assert_eq!(matches_retryable_bytes(bytes), r, "retryable {bytes:?}");
        assert_eq!(matches_overflow_bytes(bytes), o, "overflow {bytes:?}");
        assert_eq!(matches_usage_limit_bytes(bytes), u, "usage limit {bytes:?}");
        let c = classify_bytes(bytes);
        assert_eq!(
            (c.retryable, c.overflow, c.usage_limit),
            (!bytes.is_empty() && !o && r, o, u),
            "classify_bytes {bytes:?}"
        );
        assert_eq!(
            c.hint_ms,
            retry_hint_ms_bytes(bytes, None),
            "hint {bytes:?}"
        );
        assert_eq!(c.hint_ms, retry_hint_ms(&lossy, None), "hint {bytes:?}");
    }
}

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Words and phrases of the patterns, whole and cut, and near misses.
const FRAGMENTS: &[&str] = &[
    "prompt",
    "is",
    "too",
    "long",
    "large",
    "input",
    "for",
    "requested",
    "model",
    "exceeds",
    "exceed",
    "exceeded",
    "the",
    "context",
    "window",
    "token",
    "tokens",
    "count",
    "maximum",
    "prompt length is",
    "reduce the length of the messages",
    "maximum context length is",
    "exceeds the limit of",
    "available",
    "size",
    "overflow",
    "too small",
    "n_ctx",
    "n ctx",
    "greater than",
    "greater",
    "than",
    "length",
    "limit",
    "model token limit",
    "context_length_exceeded",
    "context length exceeded",
    "too many tokens",
    "token limit",
    "request_too_large",
    "request too large",
    "400",
    "413",
    "4",
    "00",
    "13",
    "(no body)",
    "status code",
    "status",
    "(",
    ")",
    "no body",
    "overloaded",
    "rate",
    "usage",
    "_",
    "-",
    "reached",
    "limit_reached",
    "usage_limit_reached",
    "too many requests",
    "429",
    "500",
    "502",
    "503",
    "504",
    "5",
    "0",
    "2",
    "9",
    "service",
    "unavailable",
    "server error",
    "internal error",
    "connection",
    "error",
    "fetch failed",
    "retry delay",
    "input token count",
    "requested token",
    "requested tokens",
    "context window",
    "context size",
    "exceeds the maximum",
    "too long for",
    "12345",
    "retry-after",
    "retry-after-ms",
    "x-ratelimit-reset",
    "x-ratelimit-reset-ms",
    ": 5",
    "=12",
    "retry-",
    "after",
    "-ms",
    ":",
    "1.5",
    "prompt is too long",
    "exceeds the context window",
    "tokens ",
    "s",
    "e",
    "t",
];

/// Separators: ASCII and Unicode white space, line terminators, letters
/// that fold only under Unicode rules, other scalar values.
const SEPARATORS: &[&str] = &[
    " ", " ", " ", "", "", "", "\n", "\r", "\r\n", "\u{2028}", "\u{2029}", "\t", "\u{0B}",
    "\u{0C}", "\u{A0}", "\u{2003}", "\u{2027}", "\u{202A}", "\u{85}", "İ", "ı", "ſ", "\u{212A}",
    "é", "😀", "\u{FFFD}", "—", "٥", ": ", "x", "  ",
];

/// Invalid UTF-8: truncated, overlong, surrogates, stray continuations, and
/// the first bytes of U+2028.
const INVALID: &[&[u8]] = &[
    b"\xFF",
    b"\xC0\xAF",
    b"\xE0\x80\xAF",
    b"\xED\xA0\x80",
    b"\xF0\x9F\x98",
    b"\xE2\x80",
    b"\x80\x80",
    b"\xF4\x90\x80\x80",
    b"\xC3",
    b"\xE2",
    b"\xE2\x80\xE2\x80\xA8",
    b"\xBF",
];

/// Changes the case of some ASCII letters (and maps some to look-alikes
/// that must not fold: `k` to the Kelvin sign, `s` to long s, `i` to dotless
/// or dotted capital I).
fn mangle(rng: &mut Rng, text: &str) -> String {
    let mode = rng.below(4);
    text.chars()
        .map(|c| match mode {
            0 => c.to_string(),
            1 => c.to_ascii_uppercase().to_string(),
            _ if rng.below(40) == 0 => match c {
                'k' => "\u{212A}".into(),
                's' => "ſ".into(),
                'i' => (if rng.below(2) == 0 { "ı" } else { "İ" }).into(),
                c => c.to_ascii_uppercase().to_string(),
            },
            _ if rng.below(3) == 0 => c.to_ascii_uppercase().to_string(),
            _ => c.to_string(),
        })
        .collect()
}

fn generated(rng: &mut Rng) -> String {
    let mut text = String::new();
    for _ in 0..1 + rng.below(10) {
        let word = rng.pick(FRAGMENTS);
        let fragment = mangle(rng, word);
        text.push_str(&fragment);
        text.push_str(rng.pick(SEPARATORS));
    }
    if rng.below(4) == 0 {
        // Cut anywhere (on a character boundary).
        let cuts: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        let at = cuts[rng.below(cuts.len())];
        text = if rng.below(2) == 0 {
            text[at..].into()
        } else {
            text[..at].into()
        };
    }
    text
}

fn corpus() -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/corpus/errors.jsonl");
    std::fs::read_to_string(path)
        .expect("tests/corpus/errors.jsonl")
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            // The rows are JSON objects whose first key is "text".
            let start = l.find("\"text\":").expect("a text") + 7;
            let end = l.find(",\"retryable\"").expect("labels after the text");
            decode_json_string(&l[start..end])
        })
        .collect()
}

/// Decodes one JSON string literal (the corpus only needs the common escapes
/// and `\uXXXX`, with surrogate pairs).
fn decode_json_string(lit: &str) -> String {
    let inner = &lit[1..lit.len() - 1];
    let mut out = String::new();
    let mut chars = inner.chars();
    let mut pending: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next().expect("an escape") {
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{C}'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = u32::from_str_radix(&hex, 16).expect("hex");
                if (0xD800..0xDC00).contains(&unit) {
                    pending = Some(unit);
                } else if let (Some(hi), true) = (pending.take(), (0xDC00..0xE000).contains(&unit))
                {
                    out.push(
                        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (unit - 0xDC00)).unwrap(),
                    );
                } else {
                    out.push(char::from_u32(unit).expect("a scalar value"));
                }
            }
            other => out.push(other),
        }
    }
    out
}

#[test]
fn the_corpus_agrees_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let rows = corpus();
    assert!(rows.len() >= 126);
    for text in &rows {
        counts.check(&reference, text);
        for invalid in INVALID {
            let mut bytes = text.as_bytes().to_vec();
            bytes.extend_from_slice(invalid);
            bytes.extend_from_slice(text.as_bytes());
            counts.check_bytes(&reference, &bytes);
        }
    }
    println!(
        "corpus: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}",
        counts.texts, counts.byte_texts, counts.retryable, counts.overflow, counts.usage_limit
    );
    assert!(counts.retryable > 0 && counts.overflow > 0 && counts.usage_limit > 0);
}

#[test]
fn generated_texts_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..200_000 {
        let text = generated(&mut rng);
        counts.check(&reference, &text);
        // The same text with invalid bytes spliced in at a few places.
        let mut bytes = text.into_bytes();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(bytes.len() + 1);
            let invalid = INVALID[rng.below(INVALID.len())];
            bytes.splice(at..at, invalid.iter().copied());
        }
        counts.check_bytes(&reference, &bytes);
    }
    println!(
        "generated: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}, hint {}",
        counts.texts,
        counts.byte_texts,
        counts.retryable,
        counts.overflow,
        counts.usage_limit,
        counts.hint
    );
    // Not vacuous: hints are found, and every label is both found and
    // missed many times.
    assert!(counts.hint > 100, "{}", counts.hint);
    for n in [counts.retryable, counts.overflow, counts.usage_limit] {
        assert!(
            n > counts.texts / 50 && n < counts.texts - counts.texts / 50,
            "{n}"
        );
    }
}
