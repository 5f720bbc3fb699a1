//! The header reading of spec 13.1 (`autoretry::read_headers`): every case
//! of `tests/corpus/headers.jsonl` (a copy of `shared/corpus/`) exactly,
//! and its properties (no panic, the first occurrence, ASCII case).

use autoretry::{read_headers, HeaderHints, Headers};
use proptest::prelude::*;
use serde_json::Value;

use crate::common::proptest_config;

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/classify/headers.txt";

struct Case {
    line: usize,
    headers: Vec<(String, String)>,
    now_ms: Option<u64>,
    expected: HeaderHints,
}

fn cases() -> Vec<Case> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/headers.jsonl");
    let corpus = std::fs::read_to_string(path).expect("tests/corpus/headers.jsonl");
    corpus
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let row: Value = serde_json::from_str(line).expect("a JSON row");
            let pair = |p: &Value| {
                let s = |v: &Value| v.as_str().expect("a string").to_owned();
                (s(&p[0]), s(&p[1]))
            };
            Case {
                line: i + 1,
                headers: row["headers"]
                    .as_array()
                    .expect("headers")
                    .iter()
                    .map(pair)
                    .collect(),
                now_ms: row["nowMs"].as_u64(),
                expected: HeaderHints {
                    should_retry: row["shouldRetry"].as_bool(),
                    retry_after_ms: row["retryAfterMs"].as_u64(),
                },
            }
        })
        .collect()
}

#[test]
fn every_case_of_the_corpus() {
    let cases = cases();
    assert_eq!(cases.len(), 43, "tests/corpus/headers.jsonl has 43 cases");
    for case in &cases {
        let pairs = case.headers.iter().map(|(n, v)| (n.as_str(), v.as_str()));
        assert_eq!(
            read_headers(pairs, case.now_ms),
            case.expected,
            "line {}",
            case.line
        );
        // The same through the message field's owned and borrowed forms, and
        // on bytes.
        assert_eq!(
            Headers::from_owned(&case.headers).read(case.now_ms),
            case.expected
        );
        let borrowed: Vec<(&str, &str)> = case
            .headers
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
            .collect();
        assert_eq!(Headers::new(&borrowed).read(case.now_ms), case.expected);
        let bytes = case
            .headers
            .iter()
            .map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        assert_eq!(read_headers(bytes, case.now_ms), case.expected);
    }
}

const NAMES: [&str; 17] = [
    "x-should-retry",
    "retry-after-ms",
    "retry-after",
    "x-ratelimit-reset-requests",
    "x-ratelimit-remaining-requests",
    "x-ratelimit-reset-tokens",
    "x-ratelimit-remaining-tokens",
    "anthropic-ratelimit-requests-reset",
    "anthropic-ratelimit-requests-remaining",
    "anthropic-ratelimit-tokens-reset",
    "anthropic-ratelimit-tokens-remaining",
    "anthropic-ratelimit-input-tokens-reset",
    "anthropic-ratelimit-input-tokens-remaining",
    "anthropic-ratelimit-output-tokens-reset",
    "anthropic-ratelimit-output-tokens-remaining",
    "content-type",
    "x-request-id",
];

/// Values near the forms the reading knows, and some noise.
fn value() -> impl Strategy<Value = String> {
    prop_oneof![
        "[0-9]{0,25}(\\.[0-9]{0,25})?",
        "[ \t]{0,2}(true|false|TRUE|yes|0|00)[ \t\r\n]{0,2}",
        "([0-9]{1,4}(\\.[0-9]{0,4})?[ ,]{0,2}(and )?(ns|us|µs|ms|s|m|h|d|min|hours|days|sec)){1,4}",
        "(Mon|Tue|Sun|mon), [0-3][0-9] (Jan|Feb|Sep|Dec|sep) (19[0-9][0-9]|2[0-9]{3}|9999) [0-2][0-9]:[0-5][0-9]:[0-6][0-9] (GMT|UTC)",
        "[0-9]{4}-[01][0-9]-[0-3][0-9][Tt][0-2][0-9]:[0-5][0-9](:[0-6][0-9](\\.[0-9]{1,5})?)?(Z|z|[+-][0-2][0-9]:[0-5][0-9])",
        any::<String>(),
    ]
}

/// A list of pairs drawn from the known names (in any ASCII case) and
/// values.
fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    proptest::collection::vec(
        (
            0..NAMES.len(),
            proptest::collection::vec(any::<bool>(), 0..64),
            value(),
        ),
        0..8,
    )
    .prop_map(|pairs| {
        pairs
            .into_iter()
            .map(|(i, flips, value)| (flip_case(NAMES[i], &flips), value))
            .collect()
    })
}

fn flip_case(name: &str, flips: &[bool]) -> String {
    name.chars()
        .zip(flips.iter().chain(std::iter::repeat(&false)))
        .map(|(c, &flip)| if flip { c.to_ascii_uppercase() } else { c })
        .collect()
}

fn read(headers: &[(String, String)], now: Option<u64>) -> HeaderHints {
    Headers::from_owned(headers).read(now)
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    /// Any pairs, any clock: an answer, never a panic.
    #[test]
    fn never_panics(pairs in proptest::collection::vec((any::<String>(), any::<String>()), 0..6), now in any::<Option<u64>>()) {
        let _ = read(&pairs, now);
        let bytes = pairs.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes()));
        let _ = read_headers(bytes, now);
    }

    /// Known names and near values: no panic, and the clock matters only
    /// to dates.
    #[test]
    fn known_names(pairs in headers(), now in any::<Option<u64>>()) {
        let with = read(&pairs, now);
        let without = read(&pairs, None);
        prop_assert_eq!(with.should_retry, without.should_retry);
        if without.retry_after_ms.is_some() && now.is_some() {
            // A clock can add a date that yields, never take a value away.
            prop_assert!(with.retry_after_ms.is_some());
        }
    }

    /// Names compare ASCII-case-insensitively.
    #[test]
    fn ascii_case_changes_nothing(pairs in headers(), flips in proptest::collection::vec(any::<bool>(), 0..64), now in any::<Option<u64>>()) {
        let flipped: Vec<(String, String)> = pairs
            .iter()
            .map(|(n, v)| (flip_case(&n.to_ascii_lowercase(), &flips), v.clone()))
            .collect();
        prop_assert_eq!(read(&pairs, now), read(&flipped, now));
    }

    /// Only the first occurrence of a name is read: repeating any pair
    /// later (in any case) changes nothing.
    #[test]
    fn the_first_occurrence_wins(pairs in headers(), later in headers(), now in any::<Option<u64>>()) {
        let mut repeated = pairs.clone();
        let mut seen = std::collections::HashSet::new();
        for (n, _) in &pairs {
            seen.insert(n.to_ascii_lowercase());
        }
        // Later pairs whose names were already given, with other values.
        for (n, v) in later {
            if seen.contains(&n.to_ascii_lowercase()) {
                repeated.push((n.to_ascii_uppercase(), v));
            }
        }
        for (n, v) in &pairs {
            repeated.push((n.clone(), format!("{v}0")));
        }
        prop_assert_eq!(read(&pairs, now), read(&repeated, now));
    }

    /// Names the reading does not know change nothing, wherever they are.
    #[test]
    fn other_names_change_nothing(pairs in headers(), at in any::<prop::sample::Index>(), value in value(), now in any::<Option<u64>>()) {
        let mut more = pairs.clone();
        more.insert(at.index(pairs.len() + 1), ("x-retry-after".into(), value));
        prop_assert_eq!(read(&pairs, now), read(&more, now));
    }
}
