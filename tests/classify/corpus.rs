//! Every row of the labelled corpus (`tests/corpus/errors.jsonl`, a copy of
//! `shared/corpus/`) through `classify` and `classify_bytes`: all four
//! labels must agree.

use autoretry::classify::{classify, classify_bytes, retry_hint_ms, Classification};
use serde_json::Value;

struct Row {
    line: usize,
    text: String,
    expected: Classification,
}

fn rows() -> Vec<Row> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/corpus/errors.jsonl");
    let corpus = std::fs::read_to_string(path).expect("tests/corpus/errors.jsonl");
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
