//! Classification, ours against the alternatives, in one run:
//!
//! - `corpus_labels/{impl}/{NNN}`: the three labels (retryable, overflow,
//!   usage limit) of corpus text NNN; `corpus_classify/ours/NNN`: the full
//!   `classify` (labels and hint), `corpus_classify/extended/NNN` the same
//!   text through `Classifier::Extended.classify(..)` (spec 10.5 and
//!   the hints of 10.4); `corpus_retryable/{impl}/{NNN}`: the
//!   retryable pattern alone (where `aho-corasick` can take part).
//! - `body_labels/{impl}/{size}` and `body_retryable/{impl}/{size}`:
//!   throughput on long bodies that match nothing, and on 1 MB that matches
//!   (retryable) only at its end; `lorem_1MB` is lorem-ipsum HTML (no
//!   required factor of the patterns at all), `dense_1MB` rate-limit log
//!   lines full of them (retryable), `limits_1MB` one line of `limit `
//!   (no label).
//! - `curated_corpus/{ours,regexset}/NNNN`: text NNNN of the curated corpus
//!   (`tests/corpus/curated/`) through `Classifier::Curated.classify`
//!   (spec 13.2's labels and hint) and through a `RegexSet` of 13.2's
//!   patterns (the labels); `curated_mixed/{ours,regexset}` the whole
//!   curated corpus, text after text, per iteration;
//!   `curated_body/{ours,regexset}/{size}` the same on the bodies above.
//!
//! Before measuring, every alternative that claims the spec's semantics is
//! checked against ours on the corpus, the bodies and the edge cases
//! (the curated set also by `tests/curated_regexset.rs`, on the real
//! corpus too).

mod alt;
mod common;

use std::hint::black_box;
use std::time::Duration;

use autoretry::classify::{classify, Classifier};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};

use alt::{
    naive_labels, naive_retryable, CuratedSet, Literals, PerRule, Set, CURATED_EDGE_CASES,
    EDGE_CASES,
};
use common::{
    body, body_match_at_end, corpus, curated_corpus, ours, ours_curated, real_texts, repeated,
    Labels, DENSE, LIMITS, LOREM,
};

/// The bodies: name and text.
fn bodies() -> Vec<(&'static str, String)> {
    vec![
        ("2KB", body(2 << 10)),
        ("64KB", body(64 << 10)),
        ("1MB", body(1 << 20)),
        ("1MB_match_at_end", body_match_at_end(1 << 20)),
        ("lorem_1MB", repeated(LOREM, 1 << 20)),
        ("dense_1MB", repeated(DENSE, 1 << 20)),
        ("limits_1MB", repeated(LIMITS, 1 << 20)),
    ]
}

/// Refuses to measure an alternative that computes other labels.
fn check(per_rule: &PerRule, set: &Set, literals: &Literals) {
    let entries = corpus();
    for (i, e) in entries.iter().enumerate() {
        assert_eq!(ours(&e.text), e.labels, "corpus #{i} against its labels");
    }
    let none = Labels {
        retryable: false,
        overflow: false,
        usage_limit: false,
    };
    for (name, text) in bodies() {
        let want = Labels {
            retryable: name.ends_with("match_at_end") || name.starts_with("dense"),
            ..none
        };
        assert_eq!(ours(&text), want, "body {name}");
    }
    let bodies = bodies();
    let texts = entries
        .iter()
        .map(|e| e.text.as_str())
        .chain(EDGE_CASES.iter().copied())
        .chain(bodies.iter().map(|(_, t)| t.as_str()));
    let mut literal_misses = 0;
    for text in texts {
        let want = ours(text);
        let short = text.chars().take(60).collect::<String>();
        assert_eq!(per_rule.labels(text), want, "regex per rule: {short:?}");
        assert_eq!(
            per_rule.retryable(text),
            Classifier::Classic.matches_retryable(text),
            "{short:?}"
        );
        assert_eq!(set.labels(text), want, "RegexSet: {short:?}");
        assert_eq!(naive_labels(text), want, "naive: {short:?}");
        assert_eq!(
            naive_retryable(text),
            Classifier::Classic.matches_retryable(text),
            "{short:?}"
        );
        if literals.retryable(text) != Classifier::Classic.matches_retryable(text) {
            literal_misses += 1;
        }
    }
    let corpus_misses = entries
        .iter()
        .filter(|e| literals.retryable(&e.text) != Classifier::Classic.matches_retryable(&e.text))
        .count();
    eprintln!(
        "aho-corasick literals: differ from the retryable pattern on {corpus_misses} of {} corpus texts, {literal_misses} texts in all (edge cases included)",
        entries.len()
    );
}

fn corpus_benches(c: &mut Criterion) {
    let per_rule = PerRule::new();
    let set = Set::new();
    let literals = Literals::new();
    check(&per_rule, &set, &literals);
    let entries = corpus();

    let mut g = c.benchmark_group("corpus_labels");
    for (i, e) in entries.iter().enumerate() {
        let (t, n) = (e.text.as_str(), format!("{i:03}"));
        g.bench_with_input(BenchmarkId::new("ours", &n), t, |b, t| {
            b.iter(|| ours(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regex", &n), t, |b, t| {
            b.iter(|| per_rule.labels(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regexset", &n), t, |b, t| {
            b.iter(|| set.labels(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("naive", &n), t, |b, t| {
            b.iter(|| naive_labels(black_box(t)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("corpus_classify");
    for (i, e) in entries.iter().enumerate() {
        let (t, n) = (e.text.as_str(), format!("{i:03}"));
        g.bench_with_input(BenchmarkId::new("ours", &n), t, |b, t| {
            b.iter(|| classify(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("extended", &n), t, |b, t| {
            b.iter(|| Classifier::Extended.classify(black_box(t)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("corpus_retryable");
    for (i, e) in entries.iter().enumerate() {
        let (t, n) = (e.text.as_str(), format!("{i:03}"));
        g.bench_with_input(BenchmarkId::new("ours", &n), t, |b, t| {
            b.iter(|| Classifier::Classic.matches_retryable(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regex", &n), t, |b, t| {
            b.iter(|| per_rule.retryable(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("aho-corasick", &n), t, |b, t| {
            b.iter(|| literals.retryable(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("naive", &n), t, |b, t| {
            b.iter(|| naive_retryable(black_box(t)))
        });
    }
    g.finish();
}

fn body_benches(c: &mut Criterion) {
    let per_rule = PerRule::new();
    let set = Set::new();
    let literals = Literals::new();
    let bodies = bodies();

    let mut g = c.benchmark_group("body_labels");
    g.measurement_time(Duration::from_millis(400));
    for (name, text) in &bodies {
        let t = text.as_str();
        g.throughput(Throughput::Bytes(t.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", name), t, |b, t| {
            b.iter(|| ours(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("ours_classify", name), t, |b, t| {
            b.iter(|| classify(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("ours_extended", name), t, |b, t| {
            b.iter(|| Classifier::Extended.classify(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regex", name), t, |b, t| {
            b.iter(|| per_rule.labels(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regexset", name), t, |b, t| {
            b.iter(|| set.labels(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("naive", name), t, |b, t| {
            b.iter(|| naive_labels(black_box(t)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("body_retryable");
    g.measurement_time(Duration::from_millis(400));
    for (name, text) in &bodies {
        let t = text.as_str();
        g.throughput(Throughput::Bytes(t.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", name), t, |b, t| {
            b.iter(|| Classifier::Classic.matches_retryable(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regex", name), t, |b, t| {
            b.iter(|| per_rule.retryable(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("aho-corasick", name), t, |b, t| {
            b.iter(|| literals.retryable(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("naive", name), t, |b, t| {
            b.iter(|| naive_retryable(black_box(t)))
        });
    }
    g.finish();
}

/// Refuses to measure a curated `RegexSet` that computes other labels
/// than ours on the curated and real corpora, the bodies and the edge
/// cases (the usage limit by its pattern: 13.2's long-wait rule reads
/// the hint, which no pattern set computes).
fn check_curated(set: &CuratedSet) {
    let entries = curated_corpus();
    let real = real_texts();
    let bodies = bodies();
    let texts = entries
        .iter()
        .map(|e| e.text.as_str())
        .chain(real.iter().map(String::as_str))
        .chain(CURATED_EDGE_CASES.iter().copied())
        .chain(bodies.iter().map(|(_, t)| t.as_str()));
    for text in texts {
        let short = text.chars().take(60).collect::<String>();
        assert_eq!(
            set.labels(text),
            ours_curated(text),
            "curated RegexSet: {short:?}"
        );
    }
}

fn curated_benches(c: &mut Criterion) {
    let set = CuratedSet::new();
    check_curated(&set);
    let entries = curated_corpus();

    // A thousand texts: shorter windows than the defaults, still
    // thousands of calls per sample for these texts of a few hundred bytes.
    let mut g = c.benchmark_group("curated_corpus");
    g.warm_up_time(Duration::from_millis(20))
        .measurement_time(Duration::from_millis(40));
    for (i, e) in entries.iter().enumerate() {
        let (t, n) = (e.text.as_str(), format!("{i:04}"));
        g.bench_with_input(BenchmarkId::new("ours", &n), t, |b, t| {
            b.iter(|| Classifier::Curated.classify(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regexset", &n), t, |b, t| {
            b.iter(|| set.labels(black_box(t)))
        });
    }
    g.finish();

    let mut g = c.benchmark_group("curated_body");
    g.measurement_time(Duration::from_millis(400));
    for (name, text) in &bodies() {
        let t = text.as_str();
        g.throughput(Throughput::Bytes(t.len() as u64));
        g.bench_with_input(BenchmarkId::new("ours", name), t, |b, t| {
            b.iter(|| Classifier::Curated.classify(black_box(t)))
        });
        g.bench_with_input(BenchmarkId::new("regexset", name), t, |b, t| {
            b.iter(|| set.labels(black_box(t)))
        });
    }
    g.finish();

    // The corpus's texts one after the other, as an agent meets them: a
    // lazy automaton's cache (ours, and the RegexSet's) must hold the
    // states of them all, or fill again. Last, and with a RegexSet of its
    // own: the rows above are measured with caches this one has not
    // filled.
    let mixed = CuratedSet::new();
    let mut g = c.benchmark_group("curated_mixed");
    g.sample_size(10)
        .measurement_time(Duration::from_millis(400));
    let texts: Vec<&str> = entries.iter().map(|e| e.text.as_str()).collect();
    g.throughput(Throughput::Elements(texts.len() as u64));
    g.bench_function("ours", |b| {
        b.iter(|| {
            for t in &texts {
                black_box(Classifier::Curated.classify(black_box(t)));
            }
        })
    });
    g.bench_function("regexset", |b| {
        b.iter(|| {
            for t in &texts {
                black_box(mixed.labels(black_box(t)));
            }
        })
    });
    g.finish();
}

/// Modest defaults so that the whole report fits in minutes on two cores;
/// command-line flags (`--measurement-time`, ...) override them (except the
/// bodies' measurement time, set per group).
fn config() -> Criterion {
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(50))
        .measurement_time(Duration::from_millis(100))
        .nresamples(2000)
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = corpus_benches, body_benches, curated_benches
}
criterion_main!(benches);
