//! Rough timings of the curated classifier (ignored: run in release with
//! `cargo test --release --all-features --test classify -- --ignored
//! curated_rough_timings --nocapture`). The performance report with its
//! goals is `benches/README.md`; these figures only compare one build of
//! the curated scan with another on the same machine.

use std::time::Instant;

use autoretry::classify::Classifier;
use serde_json::Value;

/// `text` repeated to `len` bytes, cut back to a character boundary.
fn repeated(text: &str, len: usize) -> String {
    let mut s = text.repeat(len / text.len() + 1);
    let mut cut = len;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s.truncate(cut);
    s
}

/// The best of `rounds` timings of classifying `text`, in nanoseconds.
fn best(text: &str, rounds: usize) -> u128 {
    (0..rounds)
        .map(|_| {
            let t = Instant::now();
            std::hint::black_box(Classifier::Curated.classify(std::hint::black_box(text)));
            t.elapsed().as_nanos()
        })
        .min()
        .unwrap_or(0)
}

#[test]
#[ignore = "timings, run by hand in release"]
fn curated_rough_timings() {
    // The first use builds the searchers and unpacks the tables.
    let t = Instant::now();
    std::hint::black_box(Classifier::Curated.classify("503 x"));
    println!("   first use: {:>10} ns", t.elapsed().as_nanos());
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let read = |p: &str| std::fs::read_to_string(root.join(p)).expect(p);
    let body = read("benches/data/body.html");
    let bodies = [
        (
            "lorem_1MB",
            repeated(&read("benches/data/lorem.html"), 1 << 20),
        ),
        (
            "dense_1MB",
            repeated(&read("benches/data/dense.log"), 1 << 20),
        ),
        ("limits_1MB", repeated("limit ", 1 << 20)),
        ("body.html", body),
    ];
    for (name, text) in &bodies {
        let rounds = if text.len() > 10_000 { 10 } else { 2_000 };
        let ns = best(text, rounds).max(1);
        println!(
            "{name:>12}: {ns:>10} ns  {:>8.1} MB/s",
            text.len() as f64 * 1e3 / ns as f64
        );
    }
    let corpus = read("tests/corpus/curated/errors.jsonl");
    let texts: Vec<String> = corpus
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let row: Value = serde_json::from_str(l).expect("a JSON row");
            row["text"].as_str().expect("text").to_owned()
        })
        .collect();
    let mut each: Vec<u128> = texts.iter().map(|t| best(t, 50)).collect();
    each.sort_unstable();
    println!(
        "curated corpus ({} texts): median {} ns, p90 {} ns",
        each.len(),
        each[each.len() / 2],
        each[each.len() * 9 / 10]
    );
}
