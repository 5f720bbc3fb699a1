//! The curated classifier (spec 13.2) against the `regex` crate: its
//! retryable pattern (10.5's and 13.2's), usage-limit pattern (windows
//! included), never-retried pattern and overflow rules (with `/too many
//! tokens/i` read apart under the throttle pattern), translated to the
//! reference form with `\b` an ASCII word boundary, must give the labels
//! of `Classifier::Curated.classify` and the `matches_*` methods; the
//! hint must be `curated_hint_ms`'s, and a retryable text with a hint of
//! 15 minutes or more a usage limit. On every corpus, on texts around the
//! windows' bounds and the word boundaries, and on generated texts,
//! through the `&str` and the lossy bytes entry points.

use autoretry::classify::{curated_hint_ms, curated_hint_ms_bytes, Classifier};
use autoretry_gen::{literal_body, patterns, TOO_MANY_TOKENS};
use regex::Regex;

mod common;
use common::{corpus, generated, re, Rng, INVALID};

const CURATED: Classifier = Classifier::Curated;

struct Reference {
    retryable: Regex,
    usage_limit: Regex,
    never: Regex,
    throttle: Regex,
    too_many_tokens: Regex,
    overflow: Vec<Regex>,
}

/// Labels by the reference: (retryable pattern or usage limit, and not
/// never-retried; overflow; usage-limit pattern).
type Labels = (bool, bool, bool);

impl Reference {
    fn new() -> Self {
        let overflow: Vec<Regex> = patterns::OVERFLOW
            .iter()
            .filter(|l| **l != TOO_MANY_TOKENS)
            .chain(patterns::OVERFLOW_EXTENDED)
            .chain(patterns::OVERFLOW_CURATED)
            .map(|l| literal_body(l).unwrap())
            .filter(|body| !body.starts_with('^'))
            .map(re)
            .collect();
        assert_eq!(overflow.len(), 30);
        Reference {
            retryable: re(&format!(
                "{}|{}",
                patterns::RETRYABLE_EXTENDED,
                patterns::RETRYABLE_CURATED
            )),
            usage_limit: re(patterns::USAGE_LIMIT_CURATED),
            never: re(patterns::NEVER_CURATED),
            throttle: re(patterns::TOO_MANY_TOKENS_THROTTLE),
            too_many_tokens: re(literal_body(TOO_MANY_TOKENS).unwrap()),
            overflow,
        }
    }

    fn labels(&self, text: &str) -> Labels {
        let usage_limit = self.usage_limit.is_match(text);
        let overflow = self.overflow.iter().any(|r| r.is_match(text))
            || self.too_many_tokens.is_match(text) && !self.throttle.is_match(text);
        (
            (self.retryable.is_match(text) || usage_limit) && !self.never.is_match(text),
            overflow,
            usage_limit,
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
    long_wait: usize,
}

impl Counts {
    fn check(&mut self, reference: &Reference, text: &str) {
        let (r, o, u) = reference.labels(text);
        self.texts += 1;
        self.retryable += usize::from(r);
        self.overflow += usize::from(o);
        self.usage_limit += usize::from(u);
        assert_eq!(CURATED.matches_retryable(text), r, "retryable {text:?}");
        assert_eq!(CURATED.matches_overflow(text), o, "overflow {text:?}");
        assert_eq!(CURATED.matches_usage_limit(text), u, "usage limit {text:?}");
        let c = CURATED.classify(text);
        let hint = curated_hint_ms(text, None);
        let retryable = !text.is_empty() && !o && r;
        let long = retryable && hint.is_some_and(|h| h >= 900_000);
        self.long_wait += usize::from(long && !u);
        assert_eq!(
            (c.retryable, c.overflow, c.usage_limit, c.hint_ms),
            (retryable, o, u || long, hint),
            "classify {text:?}"
        );
        assert_eq!(
            CURATED.classify_bytes(text.as_bytes()),
            c,
            "classify_bytes {text:?}"
        );
    }

    fn check_bytes(&mut self, reference: &Reference, bytes: &[u8]) {
        let lossy = String::from_utf8_lossy(bytes);
        let (r, o, u) = reference.labels(&lossy);
        self.byte_texts += 1;
        let c = CURATED.classify_bytes(bytes);
        let hint = curated_hint_ms_bytes(bytes, None);
        let retryable = !bytes.is_empty() && !o && r;
        assert_eq!(
            (c.retryable, c.overflow, c.usage_limit, c.hint_ms),
            (
                retryable,
                o,
                u || retryable && hint.is_some_and(|h| h >= 900_000),
                hint
            ),
            "classify_bytes {bytes:?}"
        );
        assert_eq!(CURATED.matches_retryable_bytes(bytes), r, "{bytes:?}");
        assert_eq!(CURATED.matches_overflow_bytes(bytes), o, "{bytes:?}");
        assert_eq!(CURATED.matches_usage_limit_bytes(bytes), u, "{bytes:?}");
    }
}

#[test]
fn the_corpora_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rows = corpus("tests/corpus/curated/errors.jsonl");
    assert!(rows.len() >= 1000);
    rows.extend(corpus("tests/corpus/extended/errors.jsonl"));
    rows.extend(corpus("tests/corpus/errors.jsonl"));
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
        "corpora: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}, long wait {}",
        counts.texts,
        counts.byte_texts,
        counts.retryable,
        counts.overflow,
        counts.usage_limit,
        counts.long_wait
    );
    assert!(counts.retryable > 500 && counts.overflow > 50 && counts.usage_limit > 50);
    assert!(counts.long_wait > 0);
}

/// Every window alternative of 13.2 at, below and past its bound, across
/// a line break, with near-miss words and with several first words.
#[test]
fn the_windows_hold_exactly_their_bounds() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let pairs: &[(&[&str], &[&str], usize)] = &[
        (
            &["hit your", "hit a", "hit yours", "hit an", "xhit a"],
            &["limit", "limits", "xlimit"],
            20,
        ),
        (
            &["daily", "dailyx", "Daily"],
            &["quota", "limit", "allocation", "quotas"],
            40,
        ),
        (
            &["monthly", "bimonthly"],
            &["quota", "credits", "allowance", "credit"],
            40,
        ),
        (
            &["400", "4000", "x400"],
            &["provider returned error", "provider returned errors"],
            40,
        ),
        (
            &["provider returned error", "provider returned errorx"],
            &["400", "4000", "400x"],
            40,
        ),
        (
            &["account", "account's", "accounts"],
            &["rate limit", "ratelimit", "rate-limits"],
            80,
        ),
        (&["rate limit", "rate.limit"], &["account", "accounts"], 80),
    ];
    let fillers = ["x", " ", "\r", "\u{2028}", "😀", "\u{FFFD}", "é"];
    for &(firsts, seconds, bound) in pairs {
        for first in firsts {
            for second in seconds {
                for filler in fillers {
                    for gap in [0, 1, bound - 1, bound, bound + 1] {
                        for sep in ["", " ", "_"] {
                            let fill = filler.repeat(gap);
                            counts.check(&reference, &format!("{sep}{first}{fill}{second}{sep}"));
                            counts.check(&reference, &format!("{first} {fill}\n{second}"));
                            counts.check(&reference, &format!("{second}{fill}{first}"));
                        }
                    }
                }
                // Several first words: the nearest counts.
                for gap in bound.saturating_sub(5)..=bound + 5 {
                    let text = format!("{first} {first}{}{second}", " ".repeat(gap));
                    counts.check(&reference, &text);
                }
            }
        }
    }
    println!(
        "windows: {} texts, usage limit {}",
        counts.texts, counts.usage_limit
    );
    assert!(counts.usage_limit > 100);
}

/// Words and phrases of the curated patterns, whole and cut, and near
/// misses.
const FRAGMENTS: &[&str] = &[
    "socket connection was closed unexpectedly",
    "peer closed connection",
    "incomplete chunked read",
    "socket closed",
    "sockets closed",
    "ECONNRESET",
    "econnreset_",
    "ETIMEDOUT",
    "EPIPE",
    "und_err_socket",
    "connection reset",
    "connection-reset",
    "connection aborted",
    "context deadline exceeded",
    "stream disconnected before completion",
    "bad gateway",
    "bad_gateway",
    "busy",
    "busybox",
    "no free slots available",
    "no slot available",
    "concurrency limit",
    "too many concurrent",
    "throttlingexception",
    "ThrottlingException",
    "please wait before trying again",
    "try again later",
    "per minute",
    "per day",
    "per-day",
    "per_day",
    "perday",
    "rpm",
    "tpm",
    "rpd",
    "_tpd",
    "tpdx",
    "quota exceeded",
    "resource exhausted",
    "exhausted your capacity",
    "请稍后再试",
    "并发",
    "服务繁忙",
    "使用上限",
    "利用制限",
    "余额不足",
    "请充值",
    "usage limit",
    "limit_reached",
    "hit your",
    "hit a",
    "limit",
    "5-hour limit",
    "weekly limit",
    "session limit",
    "limits will reset",
    "daily",
    "quota",
    "allocation",
    "monthly",
    "credits",
    "allowance",
    "premium requests",
    "no quota",
    "quota reached",
    "free usage",
    "per hour",
    "for the hour",
    "in 1 hour",
    "within the last 24 hours",
    "monthly usage limit has been reached",
    "reached your monthly limit",
    "usage cap",
    "out of free messages",
    "insufficient_quota",
    "insufficient funds",
    "insufficient      funds",
    "credit balance is too low",
    "invalid api key",
    "invalid_api_key",
    "permission denied",
    "access is denied",
    "self-signed certificate",
    "certificate verify failed",
    "llama runner exited",
    "failed to load model",
    "no available channel",
    "400",
    "provider returned error",
    "too many tokens",
    "too many tokens per minute",
    "too many tokens per day",
    "request too large for",
    "exceeds context window",
    "exceed the context limit",
    "out of room in the model's context window",
    "max_tokens must be at least 1, got -",
    "prompt is too long",
    "overloaded",
    "rate limit",
    "account",
    "429",
    "500",
    "try again in ",
    "retry after ",
    "try again after ",
    "\"resets_in_seconds\": ",
    "usage limit reached|",
    "1767225600",
    "16 minutes",
    "4h28m20s",
    "5s",
    "15m",
    "900",
    " ",
    "\n",
    "0123456789012345678901234567890123456789",
];

#[test]
fn generated_texts_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rng = Rng(0x5eed_c0a7_ed00_0013);
    for _ in 0..60_000 {
        let text = generated(&mut rng, FRAGMENTS);
        counts.check(&reference, &text);
        if rng.below(8) == 0 {
            let mut bytes = text.as_bytes().to_vec();
            let at = rng.below(bytes.len() + 1);
            let invalid = INVALID[rng.below(INVALID.len())];
            bytes.splice(at..at, invalid.iter().copied());
            counts.check_bytes(&reference, &bytes);
        }
    }
    println!(
        "generated: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}, long wait {}",
        counts.texts,
        counts.byte_texts,
        counts.retryable,
        counts.overflow,
        counts.usage_limit,
        counts.long_wait
    );
    assert!(counts.retryable > 1000 && counts.overflow > 100 && counts.usage_limit > 1000);
}
