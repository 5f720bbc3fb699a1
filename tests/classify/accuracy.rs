//! How each pattern set judges the error texts that agents really showed
//! their users (`tests/corpus/real/errors.jsonl`, a person's label per
//! text): the table of the classifier guide (`docs/guide/classifier.md`),
//! computed here and checked against the guide. A text is judged right,
//! as `tests/corpus/README.md` defines it, when a `retry` text is
//! retryable, a `usage_limit` text is retryable and a usage limit, and a
//! `fatal` text is not retryable.
//!
//! After a change of the patterns, `AUTORETRY_WRITE_TABLES=1 cargo test
//! --all-features --test classify accuracy` writes the new table into the
//! guide.

use autoretry::classify::Classifier;
use serde_json::Value;

/// The line before the table in the guide.
const BEGIN: &str = "<!-- The table below is written by tests/classify/accuracy.rs. -->";
/// The line after it.
const END: &str = "<!-- End of the written table. -->";

/// Right and total, per label (`retry`, `usage_limit`, `fatal`) and per
/// sample (1 to 4).
#[derive(Default)]
struct Tally {
    by_label: [(u32, u32); 3],
    by_sample: [(u32, u32); 4],
}

const LABELS: [&str; 3] = ["retry", "usage_limit", "fatal"];

fn tally(set: Classifier, rows: &[(String, usize, usize)]) -> Tally {
    let mut t = Tally::default();
    for (text, label, sample) in rows {
        let c = set.classify(text);
        let right = match LABELS[*label] {
            "retry" => c.retryable,
            "usage_limit" => c.retryable && c.usage_limit,
            _ => !c.retryable,
        };
        for (r, n) in [&mut t.by_label[*label], &mut t.by_sample[*sample]] {
            *r += u32::from(right);
            *n += 1;
        }
    }
    t
}

fn percent((right, total): (u32, u32)) -> u32 {
    (right * 100 + total / 2) / total.max(1)
}

fn cell(pair: (u32, u32)) -> String {
    format!("{} of {} ({} %)", pair.0, pair.1, percent(pair))
}

fn table() -> String {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus/real/errors.jsonl");
    let corpus = std::fs::read_to_string(path).expect("the real corpus");
    let rows: Vec<(String, usize, usize)> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let row: Value = serde_json::from_str(line).expect("a JSON row");
            let label = row["label"].as_str().expect("label");
            let sample = row["sample"].as_u64().expect("sample");
            (
                row["text"].as_str().expect("text").to_owned(),
                LABELS
                    .iter()
                    .position(|&l| l == label)
                    .expect("a known label"),
                usize::try_from(sample - 1)
                    .ok()
                    .filter(|&s| s < 4)
                    .expect("sample 1 to 4"),
            )
        })
        .collect();
    let mut out = String::new();
    out.push_str("| classifier | `retry` texts retryable | `usage_limit` texts retryable and usage limits | `fatal` texts not retryable | right, samples 1 / 2 / 3 / 4 | right, all |\n");
    out.push_str("|---|---|---|---|---|---|\n");
    for set in [
        Classifier::Classic,
        Classifier::Extended,
        #[cfg(feature = "curated")]
        Classifier::Curated,
    ] {
        let t = tally(set, &rows);
        let all = t
            .by_label
            .iter()
            .fold((0, 0), |(r, n), &(r2, n2)| (r + r2, n + n2));
        let samples: Vec<String> = t
            .by_sample
            .iter()
            .map(|&p| format!("{} %", percent(p)))
            .collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} | {} | {} |\n",
            set.as_str(),
            cell(t.by_label[0]),
            cell(t.by_label[1]),
            cell(t.by_label[2]),
            samples.join(" / "),
            cell(all)
        ));
    }
    out
}

#[test]
fn the_guide_s_accuracy_table_is_the_corpus_s() {
    let guide_path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide/classifier.md");
    let guide = std::fs::read_to_string(&guide_path).expect("the guide");
    let begin = guide
        .find(BEGIN)
        .expect("the table's first marker in the guide")
        + BEGIN.len();
    let end = guide[begin..].find(END).expect("the table's last marker") + begin;
    let table = format!("\n{}", table());
    if std::env::var_os("AUTORETRY_WRITE_TABLES").is_some() {
        let written = format!("{}{table}{}", &guide[..begin], &guide[end..]);
        std::fs::write(&guide_path, written).expect("write the guide");
        return;
    }
    assert_eq!(
        &guide[begin..end],
        table,
        "the guide's table differs from the corpus: run AUTORETRY_WRITE_TABLES=1 cargo test --all-features --test classify accuracy"
    );
}
