//! The classifier against the `regex` crate: every pattern of
//! `patterns.rs`, translated to the reference form (`[xX]` letters, explicit
//! `.`/`\d`/`\s` classes, no engine case folding) and compiled by `regex`,
//! must give the same answer as `autoretry::classify` on the corpus and on
//! generated adversarial texts, through both the `&str` and the lossy bytes
//! entry points.

use autoretry::classify::{
    classify, classify_bytes, retry_hint_ms, retry_hint_ms_bytes, Classifier,
};
use autoretry_gen::{literal_body, patterns, translate, Letters};
use regex::Regex;

mod common;
use common::{corpus, generated, Hints, Rng, INVALID};

struct Reference {
    retryable: Regex,
    usage_limit: Regex,
    overflow: Vec<Regex>,
    hints: Hints,
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
            hints: Hints::new(),
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
        assert_eq!(
            Classifier::Classic.matches_retryable(text),
            r,
            "retryable {text:?}"
        );
        assert_eq!(
            Classifier::Classic.matches_overflow(text),
            o,
            "overflow {text:?}"
        );
        assert_eq!(
            Classifier::Classic.matches_usage_limit(text),
            u,
            "usage limit {text:?}"
        );
        let c = classify(text);
        assert_eq!(
            (c.retryable, c.overflow, c.usage_limit),
            (!text.is_empty() && !o && r, o, u),
            "classify {text:?}"
        );
        assert_eq!(c.hint_ms, retry_hint_ms(text, None), "hint {text:?}");
        if let Some(want) = reference.hints.retry_hint(text) {
            assert_eq!(c.hint_ms, want, "hint by the spec's expressions {text:?}");
        }
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
        assert_eq!(
            Classifier::Classic.matches_retryable_bytes(bytes),
            r,
            "retryable {bytes:?}"
        );
        assert_eq!(
            Classifier::Classic.matches_overflow_bytes(bytes),
            o,
            "overflow {bytes:?}"
        );
        assert_eq!(
            Classifier::Classic.matches_usage_limit_bytes(bytes),
            u,
            "usage limit {bytes:?}"
        );
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

#[test]
fn the_corpus_agrees_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let rows = corpus("tests/corpus/errors.jsonl");
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
        let text = generated(&mut rng, FRAGMENTS);
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

/// Filler of long bodies: the benches' proxy error page (no match).
const PAGE: &str = include_str!("../../../benches/data/body.html");

/// Long bodies (the factor search of feature `prefilter` and its 4 KB
/// chunks): generated texts spread over up to ~13 KB of filler, so that
/// matches straddle the chunks' boundaries; texts dense in factors (every
/// chunk crowded); the corpus texts at the end of a long body.
#[test]
fn long_bodies_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    for _ in 0..3_000 {
        let mut text = String::new();
        let len = 128 + rng.below(13_000);
        let filler = rng.below(3);
        while text.len() < len {
            match filler {
                // Sparse: filler between the fragments, sometimes a line.
                0 => {
                    let n = rng.below(2 * PAGE.len());
                    let page = PAGE.repeat(2);
                    let mut cut = n.min(page.len());
                    while !page.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.push_str(&page[..cut]);
                }
                // Dense: fragments next to each other.
                1 => {}
                // Runs of letters, so that chunks end anywhere in them.
                _ => text.push_str(&"x".repeat(rng.below(4_200))),
            }
            text.push_str(&generated(&mut rng, FRAGMENTS));
        }
        counts.check(&reference, &text);
        if rng.below(4) == 0 {
            let mut bytes = text.into_bytes();
            let at = rng.below(bytes.len() + 1);
            let invalid = INVALID[rng.below(INVALID.len())];
            bytes.splice(at..at, invalid.iter().copied());
            counts.check_bytes(&reference, &bytes);
        }
    }
    let body = PAGE.repeat(10);
    for text in &corpus("tests/corpus/errors.jsonl") {
        counts.check(&reference, &format!("{body}{text}"));
        counts.check(&reference, &format!("{text}{body}"));
    }
    let mut dense = String::new();
    while dense.len() < 20_000 {
        dense.push_str("rate limit 429; limit 500, usage 480, limit limit context too long\n");
    }
    counts.check(&reference, &dense);
    println!(
        "long bodies: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}, hint {}",
        counts.texts,
        counts.byte_texts,
        counts.retryable,
        counts.overflow,
        counts.usage_limit,
        counts.hint
    );
    for n in [counts.retryable, counts.overflow, counts.usage_limit] {
        assert!(
            n > counts.texts / 50 && n < counts.texts - counts.texts / 50,
            "{n}"
        );
    }
}

/// Stretches crowded with factors, where the factor search steps whole
/// lines instead of searching (feature `prefilter`): one long line or many
/// short ones of a factor repeated, of lengths around the search's chunk
/// boundaries, with a match after the stretch, inside it (at a random
/// place, on the crowded line or on a line of its own) or nowhere, and
/// sparse text after it.
#[test]
fn crowded_stretches_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let units = [
        "limit ",
        "limit",
        "usage of the quota ",
        "too long ",
        "context 500 ",
        "rate-limit hit\n",
        "limit limit 429\n",
    ];
    let needles = [
        "usage limit reached",
        "503 Service Unavailable",
        "prompt is too long",
        "too long: n_ctx",
        "input token count 12 exceeds the maximum",
        "maximum context length is 128000 tokens",
        "retry-after: 7",
        "x-ratelimit-reset: 3s",
        "limit_reached",
    ];
    // The search's chunk boundaries (256 bytes, then growing to 4 KB).
    let mut ends = Vec::new();
    let mut end = 0;
    while end < 20_000 {
        end += 4096.min(end + 256);
        ends.push(end);
    }
    for _ in 0..3_000 {
        let unit = units[rng.below(units.len())];
        let near = ends[rng.below(ends.len())];
        let len = (near + rng.below(80)).saturating_sub(40);
        let mut text = unit.repeat(len / unit.len() + 1);
        let mut cut = len.min(text.len());
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        let needle = needles[rng.below(needles.len())];
        match rng.below(5) {
            // After the stretch, on its line.
            0 => text.push_str(needle),
            // After the stretch, on a line of its own.
            1 => {
                text.push('\n');
                text.push_str(needle);
            }
            // Inside the stretch, at a random character boundary.
            2 => {
                let mut at = rng.below(text.len() + 1);
                while !text.is_char_boundary(at) {
                    at -= 1;
                }
                let inside = if rng.below(2) == 0 {
                    needle.to_string()
                } else {
                    format!("\n{needle}\n")
                };
                text.insert_str(at, &inside);
            }
            // Sparse text after the stretch, then the match.
            3 => {
                text.push('\n');
                let mut cut = rng.below(PAGE.len() + 1);
                while !PAGE.is_char_boundary(cut) {
                    cut -= 1;
                }
                text.push_str(&PAGE[..cut]);
                text.push_str(needle);
            }
            // No match added.
            _ => {}
        }
        if rng.below(4) == 0 {
            text = text.to_ascii_uppercase();
        }
        counts.check(&reference, &text);
        if rng.below(4) == 0 {
            let mut bytes = text.into_bytes();
            let at = rng.below(bytes.len() + 1);
            let invalid = INVALID[rng.below(INVALID.len())];
            bytes.splice(at..at, invalid.iter().copied());
            counts.check_bytes(&reference, &bytes);
        }
    }
    println!(
        "crowded stretches: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}, hint {}",
        counts.texts,
        counts.byte_texts,
        counts.retryable,
        counts.overflow,
        counts.usage_limit,
        counts.hint
    );
    // Matches and non-matches of every label both occur.
    for n in [counts.retryable, counts.overflow, counts.usage_limit] {
        assert!(n > 0 && n < counts.texts, "{n}");
    }
}
