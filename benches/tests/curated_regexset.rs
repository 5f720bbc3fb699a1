//! The curated contender is honest: `alt::CuratedSet` (a `RegexSet` of
//! spec 13.2's patterns) gives `Classifier::Curated`'s labels on the
//! curated corpus, the real corpus, the bodies and the edge cases, and
//! ours gives the curated corpus's labels.

#[allow(dead_code)]
#[path = "../src/alt.rs"]
mod alt;
#[allow(dead_code)]
#[path = "../src/common.rs"]
mod common;

use alt::{CuratedSet, CURATED_EDGE_CASES};
use autoretry::classify::Classifier;
use common::{curated_corpus, ours_curated, real_texts, repeated, Labels, DENSE, LIMITS, LOREM};

#[test]
fn ours_gives_the_curated_corpus_labels() {
    let entries = curated_corpus();
    assert!(entries.len() > 1000, "{} texts", entries.len());
    for (i, e) in entries.iter().enumerate() {
        let c = Classifier::Curated.classify(&e.text);
        let got = Labels {
            retryable: c.retryable,
            overflow: c.overflow,
            usage_limit: c.usage_limit,
        };
        assert_eq!(got, e.labels, "curated corpus #{i}: {:?}", e.text);
    }
}

/// Counts the texts where the set and ours differ, printing each.
fn differences<'a>(set: &CuratedSet, texts: impl Iterator<Item = &'a str>) -> (usize, usize) {
    let (mut n, mut bad) = (0, 0);
    for text in texts {
        n += 1;
        let (theirs, ours) = (set.labels(text), ours_curated(text));
        if theirs != ours {
            bad += 1;
            let short = text.chars().take(120).collect::<String>();
            eprintln!("{short:?}: RegexSet {theirs:?}, ours {ours:?}");
        }
    }
    (n, bad)
}

#[test]
fn the_regexset_gives_our_labels_on_the_curated_corpus() {
    let set = CuratedSet::new();
    let entries = curated_corpus();
    let (n, bad) = differences(&set, entries.iter().map(|e| e.text.as_str()));
    assert_eq!((n, bad), (entries.len(), 0));
}

#[test]
fn the_regexset_gives_our_labels_on_the_real_corpus() {
    let set = CuratedSet::new();
    let texts = real_texts();
    assert!(texts.len() > 800, "{} texts", texts.len());
    let (n, bad) = differences(&set, texts.iter().map(String::as_str));
    assert_eq!((n, bad), (texts.len(), 0));
}

#[test]
fn the_regexset_gives_our_labels_on_the_edges_and_bodies() {
    let set = CuratedSet::new();
    let bodies = [
        common::body(64 << 10),
        common::body_match_at_end(64 << 10),
        repeated(LOREM, 64 << 10),
        repeated(DENSE, 64 << 10),
        repeated(LIMITS, 64 << 10),
    ];
    let texts = CURATED_EDGE_CASES
        .iter()
        .copied()
        .chain(bodies.iter().map(String::as_str));
    let (_, bad) = differences(&set, texts);
    assert_eq!(bad, 0);
    // The checks can fail: the set tells the labels apart.
    let l = set.labels("ECONNRESET");
    assert!(l.retryable && !l.overflow && !l.usage_limit);
    let l = set.labels("daily quota reached; insufficient funds");
    assert!(!l.retryable && l.usage_limit);
    assert!(!set.labels("ThrottlingException: too many tokens").overflow);
    assert!(set.labels("too many tokens").overflow);
}
