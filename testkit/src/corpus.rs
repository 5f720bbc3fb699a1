//! The texts the reference [`model`](crate::model) and the property tests
//! draw from, by one index: the labelled corpus (`tests/corpus/errors.jsonl`,
//! labels computed from the spec, not by the crate) first, then the
//! extended corpus and the hint forms of spec §3.5 and §10.4.

use std::sync::OnceLock;

use serde_json::Value;

/// A corpus text with the labels of `tests/corpus/errors.jsonl` (computed
/// from the spec, not by this crate).
#[derive(Clone, Debug)]
pub struct Labelled {
    /// The error text.
    pub text: String,
    /// Rule 4 of spec §3: the retryable patterns match, and not as an
    /// overflow.
    pub retryable: bool,
    /// The context-overflow patterns of spec §3.3 match.
    pub overflow: bool,
    /// The usage-limit patterns match.
    pub usage_limit: bool,
    /// The hint of spec §3.5 without a clock.
    pub hint_ms: Option<u64>,
}

/// The labelled corpus, in file order: indices `0..corpus().len()` of
/// [`text_of`].
///
/// ```
/// use autoretry_testkit::corpus::{corpus, text_count, text_of};
/// assert!(!corpus().is_empty() && text_count() > corpus().len());
/// assert_eq!(text_of(0), corpus()[0].text);
/// ```
pub fn corpus() -> &'static [Labelled] {
    static CORPUS: OnceLock<Vec<Labelled>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        include_str!("../../tests/corpus/errors.jsonl")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("a corpus line");
                Labelled {
                    text: v["text"].as_str().expect("text").to_owned(),
                    retryable: v["retryable"].as_bool().expect("retryable"),
                    overflow: v["overflow"].as_bool().expect("overflow"),
                    usage_limit: v["usageLimit"].as_bool().expect("usageLimit"),
                    hint_ms: v["hintMs"].as_u64(),
                }
            })
            .collect()
    })
}

/// Error texts with the hint forms of spec 10.4 and 3.5 and the values
/// around the modern ceiling (300,000 ms), for the policy options.
pub const HINT_TEXTS: &[&str] = &[
    "429 Too Many Requests. Please retry in 41.820516331s.",
    "503 Service Unavailable retry-after-ms=11180000",
    "503 Service Unavailable retry-after-ms: 0",
    "rate limit exceeded: reset after 1h30m10s",
    "overloaded, reset after 2s",
    "You have hit your usage limit. Try again in ~158 min.",
    "usage limit reached, try again in 8.3 min",
    "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"retryDelay\": \"38s\"}]}}",
    "usage_limit_reached retry-after-ms=11180000",
    "usage_limit_reached retry-after-ms=120000",
    "overloaded_error retry-after: 2",
    "Rate limit reached. retry-after: 400",
    "You have hit your usage limit. x-ratelimit-reset: 60",
    "usage limit x-ratelimit-reset-ms: 299999",
    "This request would exceed your account's rate limit. Please try again later.",
    "socket hang up",
    "quota exceeded",
    "request exceeds 5000 tokens per minute",
    "413 Request Entity Too Large",
];

/// The texts beyond the labelled corpus: the extended corpus and
/// [`HINT_TEXTS`]. The model classifies them with the crate's classifier.
pub fn extra_texts() -> &'static [String] {
    static EXTRA: OnceLock<Vec<String>> = OnceLock::new();
    EXTRA.get_or_init(|| {
        let mut texts: Vec<String> = include_str!("../../tests/corpus/extended/errors.jsonl")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("an extended corpus line");
                v["text"].as_str().expect("text").to_owned()
            })
            .filter(|t| !corpus().iter().any(|l| &l.text == t))
            .collect();
        texts.extend(HINT_TEXTS.iter().map(|t| (*t).to_owned()));
        texts
    })
}

/// The number of texts a message can carry: the labelled corpus first.
pub fn text_count() -> usize {
    corpus().len() + extra_texts().len()
}

/// Text `i`: of the labelled corpus, or beyond it.
pub fn text_of(i: usize) -> &'static str {
    match corpus().get(i) {
        Some(l) => &l.text,
        None => &extra_texts()[i - corpus().len()],
    }
}
