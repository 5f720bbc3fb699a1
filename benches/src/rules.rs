//! Your own rules (`autoretry::rules`, the example rule set of
//! `tests/rules/example.json`) against a `regex::RegexSet` of the same
//! patterns with their semantics written out:
//!
//! - `rules_corpus/{impl}`: the verdicts of every corpus text, one pass
//!   over the corpus per iteration (report: per text);
//! - `rules_body/{impl}/{size}`: a body that matches nothing.
//!
//! `{impl}` is `dense` (`Rules::compile`, what a std host gets), `sparse`
//! (the committed blob, what the firmware includes) or `regexset`. Before
//! measuring, the three must give the same verdicts on the corpus, the
//! bodies and the example's own texts.

#[allow(dead_code)]
mod common;

use std::hint::black_box;
use std::time::Duration;

use autoretry::rules::{RuleSet, Rules};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use common::{body, corpus};

/// The example's `never` then `retry` patterns as `regex` patterns with the
/// rules' semantics: ASCII letters as `[xX]`, `.` without line breaks,
/// ASCII `\b` and `\d`, `^` at the text's start.
const REFERENCE: &[&str] = &[
    r"(?-u:\b)[bB][iI][lL][lL][iI][nN][gG](?-u:\b)",
    r"[iI][nN][sS][uU][fF][fF][iI][cC][iI][eE][nN][tT][^\n\r\x{2028}\x{2029}]?[fF][uU][nN][dD][sS]",
    r"\A[tT][oO][oO][lL] [eE][rR][rR][oO][rR]:",
    r"[sS][tT][rR][eE][aA][mM] (?:[sS][tT][aA][lL][lL][eE][dD]|[iI][dD][lL][eE] [tT][iI][mM][eE][oO][uU][tT])",
    r"(?-u:\b)[uU][pP][sS][tT][rR][eE][aA][mM]_[eE][rR][rR][oO][rR](?-u:\b)",
    r"[rR][eE][tT][rR][yY] [yY][oO][uU][rR] [rR][eE][qQ][uU][eE][sS][tT]",
    r"(?-u:\b)[eE]_[gG][aA][tT][eE][wW][aA][yY]_[0-9]{3}(?-u:\b)",
];
const NEVER: usize = 3;

fn set_verdict(set: &regex::RegexSet, text: &str) -> Option<bool> {
    let matches = set.matches(text);
    if matches.iter().any(|i| i < NEVER) {
        Some(false)
    } else if matches.matched_any() {
        Some(true)
    } else {
        None
    }
}

fn aligned(bytes: &[u8]) -> (Vec<u8>, usize) {
    let mut buf = vec![0u8; bytes.len() + 3];
    let offset = (4 - buf.as_ptr() as usize % 4) % 4;
    buf[offset..offset + bytes.len()].copy_from_slice(bytes);
    (buf, offset)
}

fn rules_benches(c: &mut Criterion) {
    let set = RuleSet::from_json(include_str!("../../tests/rules/example.json")).unwrap();
    assert_eq!(set.never.len(), NEVER);
    assert_eq!(set.never.len() + set.retry.len(), REFERENCE.len());
    let dense = Rules::compile(&set).unwrap();
    let blob = include_bytes!("../../tests/rules/example.bin");
    let (buf, at) = aligned(blob);
    let sparse = Rules::from_bytes(&buf[at..at + blob.len()]).unwrap();
    let regexset = regex::RegexSet::new(REFERENCE).unwrap();

    let texts: Vec<String> = corpus().into_iter().map(|e| e.text).collect();
    let bodies = [("2KB", body(2 << 10)), ("64KB", body(64 << 10))];
    let own = [
        "stream stalled",
        "Stream idle timeout",
        "HTTP 502 upstream_error",
        "upstream_errors",
        "please retry your request",
        "E_GATEWAY_504",
        "E_GATEWAY_5040",
        "503 billing: insufficient funds",
        "insufficient_funds",
        "tool error: x",
        "x tool error: x",
        "",
    ];
    for text in texts
        .iter()
        .map(String::as_str)
        .chain(bodies.iter().map(|(_, b)| b.as_str()))
        .chain(own)
    {
        let want = set_verdict(&regexset, text);
        assert_eq!(dense.verdict(text), want, "dense on {text:?}");
        assert_eq!(sparse.verdict(text), want, "sparse on {text:?}");
    }
    for (_, b) in &bodies {
        assert_eq!(dense.verdict(b), None);
    }

    let mut g = c.benchmark_group("rules_corpus");
    g.bench_function("dense", |b| {
        b.iter(|| {
            texts
                .iter()
                .filter_map(|t| dense.verdict(black_box(t)))
                .count()
        })
    });
    g.bench_function("sparse", |b| {
        b.iter(|| {
            texts
                .iter()
                .filter_map(|t| sparse.verdict(black_box(t)))
                .count()
        })
    });
    g.bench_function("regexset", |b| {
        b.iter(|| {
            texts
                .iter()
                .filter_map(|t| set_verdict(&regexset, black_box(t)))
                .count()
        })
    });
    g.finish();

    let mut g = c.benchmark_group("rules_body");
    for (name, text) in &bodies {
        g.throughput(Throughput::Bytes(text.len() as u64));
        g.bench_with_input(BenchmarkId::new("dense", name), text, |b, t| {
            b.iter(|| dense.verdict(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("sparse", name), text, |b, t| {
            b.iter(|| sparse.verdict(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regexset", name), text, |b, t| {
            b.iter(|| set_verdict(&regexset, black_box(t)))
        });
    }
    g.finish();
    println!(
        "rules: {} corpus texts per rules_corpus iteration",
        texts.len()
    );
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_millis(300))
        .nresamples(2000)
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = rules_benches
}
criterion_main!(benches);
