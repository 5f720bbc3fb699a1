//! Inputs shared by the benches and `js/classify.mjs`: the corpus, the
//! spec's patterns (read from the crate, and handed to the JavaScript side
//! by the `patterns` binary) and the long bodies, built the same way in
//! both.

use autoretry::classify::{patterns, Classifier};
use serde_json::Value;

/// The error-text corpus (spec-labelled), one JSON object a line.
const CORPUS: &str = include_str!("../../tests/corpus/errors.jsonl");

/// The curated corpus (labelled by spec 13.2's rules), same format.
const CURATED_CORPUS: &str = include_str!("../../tests/corpus/curated/errors.jsonl");

/// The real error texts (labelled by a person: `retry`, `usage_limit`,
/// `fatal`); only their texts are used here.
const REAL_CORPUS: &str = include_str!("../../tests/corpus/real/errors.jsonl");

/// A proxy error page that matches no pattern; bodies repeat it.
const PARAGRAPH: &str = include_str!("../data/body.html");

/// Lorem-ipsum HTML that holds none of the patterns' required factors.
pub const LOREM: &str = include_str!("../data/lorem.html");

/// A rate-limit log line full of the patterns' required factors (`limit`,
/// `429`, `500`, `usage`); it matches the retryable pattern only.
pub const DENSE: &str = include_str!("../data/dense.log");

/// A factor and a space, repeated on one line: no label ever found, so the
/// factor stays one to search for (the worst case of the factor search).
pub const LIMITS: &str = "limit ";

/// Appended to a body to put a retryable match at its very end.
pub const TAIL: &str = "\n503 Service Unavailable";

/// The three labels every alternative computes, as `classify` defines them
/// (without the hint, which is no pattern).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Labels {
    pub retryable: bool,
    pub overflow: bool,
    pub usage_limit: bool,
}

/// Ours, through the public API, with `classify`'s logic.
pub fn ours(text: &str) -> Labels {
    let overflow = Classifier::Classic.matches_overflow(text);
    Labels {
        retryable: !text.is_empty() && !overflow && Classifier::Classic.matches_retryable(text),
        overflow,
        usage_limit: Classifier::Classic.matches_usage_limit(text),
    }
}

/// One corpus entry: the text and its labels from the corpus file.
pub struct Entry {
    pub text: String,
    pub labels: Labels,
}

pub fn corpus() -> Vec<Entry> {
    entries(CORPUS)
}

/// The curated corpus (spec 13.2's labels; `usageLimit` there includes a
/// retryable text's long hinted wait).
pub fn curated_corpus() -> Vec<Entry> {
    entries(CURATED_CORPUS)
}

/// The texts of the real corpus.
pub fn real_texts() -> Vec<String> {
    REAL_CORPUS
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a corpus line");
            v["text"].as_str().expect("a text").to_owned()
        })
        .collect()
}

/// The curated labels through the public API: `Classifier::Curated`'s
/// `classify` for retryable and overflow, and its usage-limit pattern
/// alone (13.2's long-wait rule reads the hint, which no pattern set
/// computes).
pub fn ours_curated(text: &str) -> Labels {
    let c = Classifier::Curated.classify(text);
    Labels {
        retryable: c.retryable,
        overflow: c.overflow,
        usage_limit: Classifier::Curated.matches_usage_limit(text),
    }
}

/// Corpus lines (`text`, `retryable`, `overflow`, `usageLimit`).
fn entries(lines: &str) -> Vec<Entry> {
    lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a corpus line");
            let flag = |k: &str| v[k].as_bool().expect("a boolean label");
            Entry {
                text: v["text"].as_str().expect("a text").to_owned(),
                labels: Labels {
                    retryable: flag("retryable"),
                    overflow: flag("overflow"),
                    usage_limit: flag("usageLimit"),
                },
            }
        })
        .collect()
}

/// A `/.../i` literal's pattern.
fn unwrap_literal(literal: &str) -> String {
    literal
        .strip_prefix('/')
        .and_then(|l| l.strip_suffix("/i"))
        .expect("a /.../i literal")
        .to_owned()
}

/// Spec 13.2's patterns in JavaScript syntax (`\b` ASCII), as the crate
/// holds them.
pub struct CuratedPatterns {
    /// 10.5's retryable pattern or 13.2's additions.
    pub retryable: String,
    pub usage_limit: String,
    pub never: String,
    /// Where it matches, `too_many_tokens` does not count.
    pub throttle: String,
    pub too_many_tokens: String,
    /// The other overflow patterns: the unanchored ones of 3.3 but `/too
    /// many tokens/i`, 10.5's and 13.2's.
    pub overflow: Vec<String>,
}

pub fn curated_patterns() -> CuratedPatterns {
    let too_many_tokens = "too many tokens".to_owned();
    let classic = patterns::OVERFLOW
        .iter()
        .map(|l| unwrap_literal(l))
        .filter(|p| !p.starts_with('^') && *p != too_many_tokens);
    let overflow = classic
        .chain(
            patterns::OVERFLOW_EXTENDED
                .iter()
                .map(|l| unwrap_literal(l)),
        )
        .chain(patterns::OVERFLOW_CURATED.iter().map(|l| unwrap_literal(l)))
        .collect();
    CuratedPatterns {
        retryable: format!(
            "{}|{}",
            patterns::RETRYABLE_EXTENDED,
            patterns::RETRYABLE_CURATED
        ),
        usage_limit: patterns::USAGE_LIMIT_CURATED.to_owned(),
        never: patterns::NEVER_CURATED.to_owned(),
        throttle: patterns::TOO_MANY_TOKENS_THROTTLE.to_owned(),
        too_many_tokens,
        overflow,
    }
}

/// The spec's patterns (§3.2, §3.3, §3.4) in JavaScript syntax, as the crate
/// itself holds them in `autoretry::classify::patterns`: (retryable,
/// overflow, usage limit), the overflow literals without their `/.../i`.
pub fn patterns() -> (String, Vec<String>, String) {
    let overflow = patterns::OVERFLOW
        .iter()
        .map(|l| unwrap_literal(l))
        .collect();
    (
        patterns::RETRYABLE.to_owned(),
        overflow,
        patterns::USAGE_LIMIT.to_owned(),
    )
}

/// `PARAGRAPH` repeated to `len` bytes, cut back to a character boundary.
pub fn body(len: usize) -> String {
    repeated(PARAGRAPH, len)
}

/// `text` repeated to `len` bytes, cut back to a character boundary.
pub fn repeated(text: &str, len: usize) -> String {
    let mut s = text.repeat(len / text.len() + 1);
    let mut cut = len;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s
}

/// A body of `len` bytes (or a few less) that ends with [`TAIL`].
pub fn body_match_at_end(len: usize) -> String {
    let mut s = body(len - TAIL.len());
    s.push_str(TAIL);
    s
}
