//! Every row of the labelled corpora (`tests/corpus/errors.jsonl` and
//! `tests/corpus/extended/errors.jsonl`, copies of `shared/corpus/`) through
//! `Classifier::classify` and `Classifier::classify_bytes` of its pattern
//! set (classic or extended): all four labels must agree.

use autoretry::classify::{classify, classify_bytes, retry_hint_ms, Classification, Classifier};
use serde_json::Value;

struct Row {
    line: usize,
    text: String,
    expected: Classification,
}

fn rows() -> Vec<Row> {
    read_rows("tests/corpus/errors.jsonl")
}

fn read_rows(file: &str) -> Vec<Row> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
    let corpus = std::fs::read_to_string(path).expect(file);
    corpus
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(i, line)| {
            let row: Value = serde_json::from_str(line).expect("a JSON row");
            let flag = |key: &str| row[key].as_bool().expect(key);
            Row {
                line: i + 1,
                text: row["text"].as_str().expect("text").to_owned(),
                expected: Classification {
                    retryable: flag("retryable"),
                    overflow: flag("overflow"),
                    usage_limit: flag("usageLimit"),
                    hint_ms: match &row["hintMs"] {
                        Value::Null => None,
                        n => Some(n.as_u64().expect("hintMs")),
                    },
                },
            }
        })
        .collect()
}

#[test]
fn every_row_matches_its_labels() {
    let rows = rows();
    assert!(rows.len() >= 126, "corpus has {} rows", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        let by_text = classify(&row.text);
        let by_bytes = classify_bytes(row.text.as_bytes());
        if by_text != row.expected || by_bytes != row.expected {
            failures.push(format!(
                "line {}: {:?}\n  expected {:?}\n  classify {:?}\n  bytes    {:?}",
                row.line, row.text, row.expected, by_text, by_bytes
            ));
        }
    }
    println!(
        "{} of {} corpus rows pass",
        rows.len() - failures.len(),
        rows.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rows_with_invalid_bytes_read_like_lossy() {
    for row in rows() {
        for invalid in [&b"\xFF"[..], b"\xE2\x80", b"\xF0\x9F\x98", b"\xED\xA0\x80"] {
            let mut bytes = row.text.as_bytes().to_vec();
            bytes.extend_from_slice(invalid);
            bytes.extend_from_slice(row.text.as_bytes());
            let lossy = String::from_utf8_lossy(&bytes);
            assert_eq!(
                classify_bytes(&bytes),
                classify(&lossy),
                "line {}",
                row.line
            );
        }
    }
}

#[test]
fn hints_with_a_clock_equal_hints_without_for_the_corpus() {
    // No corpus hint depends on the clock (none is a timestamp or an epoch).
    for row in rows() {
        assert_eq!(
            retry_hint_ms(&row.text, Some(1_700_000_000_000)),
            row.expected.hint_ms,
            "line {}",
            row.line
        );
    }
}

#[test]
fn the_classic_with_forms_equal_the_classic_functions() {
    for row in rows() {
        let text = &row.text;
        assert_eq!(Classifier::Classic.classify(text), classify(text));
        assert_eq!(
            Classifier::Classic.classify_bytes(text.as_bytes()),
            classify_bytes(text.as_bytes())
        );
    }
}

#[cfg(feature = "extended")]
#[test]
fn every_extended_row_matches_its_labels() {
    let rows = read_rows("tests/corpus/extended/errors.jsonl");
    assert!(rows.len() >= 195, "extended corpus has {} rows", rows.len());
    let mut failures = Vec::new();
    for row in &rows {
        let by_text = Classifier::Extended.classify(&row.text);
        let by_bytes = Classifier::Extended.classify_bytes(row.text.as_bytes());
        if by_text != row.expected || by_bytes != row.expected {
            failures.push(format!(
                "line {}: {:?}\n  expected {:?}\n  classify      {:?}\n  bytes         {:?}",
                row.line, row.text, row.expected, by_text, by_bytes
            ));
        }
        // The single predicates agree with the classification.
        let e = Classifier::Extended;
        assert_eq!(e.matches_overflow(&row.text), row.expected.overflow);
        assert_eq!(e.matches_usage_limit(&row.text), row.expected.usage_limit);
        assert_eq!(
            !row.text.is_empty() && !row.expected.overflow && e.matches_retryable(&row.text),
            row.expected.retryable,
            "line {}",
            row.line
        );
    }
    println!(
        "{} of {} extended corpus rows pass",
        rows.len() - failures.len(),
        rows.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[cfg(feature = "extended")]
#[test]
fn extended_rows_with_invalid_bytes_read_like_lossy() {
    for row in read_rows("tests/corpus/extended/errors.jsonl") {
        for invalid in [&b"\xFF"[..], b"\xE2\x80", b"\xF0\x9F\x98", b"\xED\xA0\x80"] {
            let mut bytes = row.text.as_bytes().to_vec();
            bytes.extend_from_slice(invalid);
            bytes.extend_from_slice(row.text.as_bytes());
            let lossy = String::from_utf8_lossy(&bytes);
            assert_eq!(
                Classifier::Extended.classify_bytes(&bytes),
                Classifier::Extended.classify(&lossy),
                "line {}",
                row.line
            );
        }
    }
}

/// The curated hint rules of spec 13.2 (`curated_hint_ms`, no clock) give
/// every row's `hintMs` of `tests/corpus/curated/errors.jsonl`, by text and
/// by bytes.
#[test]
fn every_curated_row_has_its_hint() {
    use autoretry::classify::{curated_hint_ms, curated_hint_ms_bytes};
    let rows = read_rows("tests/corpus/curated/errors.jsonl");
    assert!(rows.len() >= 1000, "curated corpus has {} rows", rows.len());
    assert!(
        rows.iter().filter(|r| r.expected.hint_ms.is_some()).count() >= 50,
        "too few hints to test"
    );
    let failures: Vec<String> = rows
        .iter()
        .filter_map(|row| {
            let by_text = curated_hint_ms(&row.text, None);
            let by_bytes = curated_hint_ms_bytes(row.text.as_bytes(), None);
            (by_text != row.expected.hint_ms || by_bytes != row.expected.hint_ms).then(|| {
                format!(
                    "line {}: {:?}\n  expected {:?}, text {:?}, bytes {:?}",
                    row.line, row.text, row.expected.hint_ms, by_text, by_bytes
                )
            })
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every row of `tests/corpus/curated/errors.jsonl` through the curated
/// classifier (spec 13.2), by text and by bytes: all four labels agree.
#[cfg(feature = "curated")]
#[test]
fn every_curated_row_matches_its_labels() {
    let rows = read_rows("tests/corpus/curated/errors.jsonl");
    assert!(rows.len() >= 1000, "curated corpus has {} rows", rows.len());
    let c = Classifier::Curated;
    let mut failures = Vec::new();
    for row in &rows {
        let by_text = c.classify(&row.text);
        let by_bytes = c.classify_bytes(row.text.as_bytes());
        if by_text != row.expected || by_bytes != row.expected {
            failures.push(format!(
                "line {}: {:?}\n  expected {:?}\n  classify      {:?}\n  bytes         {:?}",
                row.line, row.text, row.expected, by_text, by_bytes
            ));
        }
        // The single predicates agree with the classification.
        assert_eq!(c.matches_overflow(&row.text), row.expected.overflow);
        assert_eq!(
            !row.text.is_empty() && !row.expected.overflow && c.matches_retryable(&row.text),
            row.expected.retryable,
            "line {}",
            row.line
        );
        // The long wait (13.2) aside, the usage label is the pattern's.
        if !c.matches_usage_limit(&row.text) {
            assert!(
                !row.expected.usage_limit
                    || row.expected.retryable && row.expected.hint_ms.is_some_and(|h| h >= 900_000),
                "line {}",
                row.line
            );
        }
    }
    // Each kind of label is exercised.
    for (what, n) in [
        (
            "retryable",
            rows.iter().filter(|r| r.expected.retryable).count(),
        ),
        (
            "overflow",
            rows.iter().filter(|r| r.expected.overflow).count(),
        ),
        (
            "usage limit",
            rows.iter().filter(|r| r.expected.usage_limit).count(),
        ),
        (
            "fatal",
            rows.iter().filter(|r| !r.expected.retryable).count(),
        ),
    ] {
        assert!(n >= 50, "only {n} {what} rows");
    }
    println!(
        "{} of {} curated corpus rows pass",
        rows.len() - failures.len(),
        rows.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[cfg(feature = "curated")]
#[test]
fn curated_rows_with_invalid_bytes_read_like_lossy() {
    for row in read_rows("tests/corpus/curated/errors.jsonl") {
        for invalid in [&b"\xFF"[..], b"\xE2\x80", b"\xF0\x9F\x98", b"\xED\xA0\x80"] {
            let mut bytes = row.text.as_bytes().to_vec();
            bytes.extend_from_slice(invalid);
            bytes.extend_from_slice(row.text.as_bytes());
            let lossy = String::from_utf8_lossy(&bytes);
            assert_eq!(
                Classifier::Curated.classify_bytes(&bytes),
                Classifier::Curated.classify(&lossy),
                "line {}",
                row.line
            );
        }
    }
}
