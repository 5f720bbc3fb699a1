//! The classifier's first use on a thread with a small stack.
//!
//! On std the classifier builds its speed tables (feature `prefilter`: the
//! skipping's bit tables and the unpacked extended tables) when a
//! classification first needs them. A host thread with a small stack
//! (an embedded-style runtime's, a WASI thread, an async executor's worker)
//! may be the one that classifies first: building the tables must not need
//! that stack. This file is its own test binary, so its process has built
//! no table before the small thread classifies; it holds a single test so
//! that no other thread of the harness classifies first. (The factor search
//! of `prefilter` is `aho-corasick`'s, which the workspace optimizes in
//! test builds too: unoptimized, its search alone takes more than 17 KB of
//! stack.)

use autoretry::classify::{self, Classification, Classifier};

/// The stack of the thread that classifies first: what a small host thread
/// may have, in a debug build too (where frames are larger).
const STACK: usize = 32 * 1024;

/// `middle` inside text long enough (well over 256 bytes) for the skipping
/// to run before and after it.
fn long(middle: &str) -> String {
    let filler = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ".repeat(8);
    format!("{filler}{middle} {filler}")
}

/// Every entry point that reads the tables, classic, extended and curated, on long
/// texts (the skipping) and short ones (the unpacked extended tables read
/// symbol by symbol), with the labels each must find.
fn every_table_path() {
    use Classifier::{Classic, Extended};
    // Retryable, overflow, usage limit.
    let of = |c: Classification| [c.retryable, c.overflow, c.usage_limit];
    let quiet = long("nothing of note here");
    let cases = [
        // Classic: each label, a tail (`.*`), a hint, nothing, a short text.
        (
            Classic,
            long("503 service unavailable"),
            [true, false, false],
        ),
        (Classic, long("prompt is too long"), [false, true, false]),
        (
            Classic,
            long("input token count 9000 exceeds the maximum"),
            [false, true, false],
        ),
        (
            Classic,
            long("usage limit; retry-after: 5"),
            [true, false, true],
        ),
        (Classic, quiet.clone(), [false, false, false]),
        (Classic, "overloaded".to_owned(), [true, false, false]),
        // Extended: the same, with its own patterns.
        (Extended, long("quota exceeded"), [true, false, true]),
        (Extended, long("payload too large"), [false, true, false]),
        (
            Extended,
            long("requested tokens 9000 exceed the context window"),
            [false, true, false],
        ),
        (
            Extended,
            long("high demand, retry in 5 seconds"),
            [true, false, false],
        ),
        (Extended, quiet, [false, false, false]),
        (Extended, "no capacity".to_owned(), [true, false, false]),
        // Curated: its factor and hint-name searchers are built at first
        // use too.
        (
            Classifier::Curated,
            long("read ECONNRESET"),
            [true, false, false],
        ),
        (
            Classifier::Curated,
            long("daily quota reached; try again in 5h"),
            [true, false, true],
        ),
        (
            Classifier::Curated,
            "Too many tokens, please wait before trying again.".to_owned(),
            [true, false, false],
        ),
    ];
    for (classifier, text, want) in &cases {
        let ([retryable, overflow, usage_limit], bytes) = (*want, text.as_bytes());
        if *classifier == Classic {
            assert_eq!(of(classify::classify(text)), *want, "{text}");
            assert_eq!(of(classify::classify_bytes(bytes)), *want, "{text}");
            assert_eq!(
                Classifier::Classic.matches_retryable(text),
                retryable,
                "{text}"
            );
            assert_eq!(
                Classifier::Classic.matches_retryable_bytes(bytes),
                retryable,
                "{text}"
            );
            assert_eq!(
                Classifier::Classic.matches_overflow(text),
                overflow,
                "{text}"
            );
            assert_eq!(
                Classifier::Classic.matches_overflow_bytes(bytes),
                overflow,
                "{text}"
            );
            assert_eq!(
                Classifier::Classic.matches_usage_limit(text),
                usage_limit,
                "{text}"
            );
            assert_eq!(
                Classifier::Classic.matches_usage_limit_bytes(bytes),
                usage_limit,
                "{text}"
            );
        }
        let c = *classifier;
        assert_eq!(of(c.classify(text)), *want, "{c:?}: {text}");
        assert_eq!(of(c.classify_bytes(bytes)), *want, "{c:?}: {text}");
        let found = [
            c.matches_retryable(text),
            c.matches_overflow(text),
            c.matches_usage_limit(text),
        ];
        assert_eq!(found, *want, "{c:?}, matches_*_with: {text}");
    }
}

#[test]
fn the_first_classification_fits_a_small_stack() {
    // A stack overflow aborts the whole process: this test binary fails.
    std::thread::Builder::new()
        .name("small-stack".into())
        .stack_size(STACK)
        .spawn(every_table_path)
        .expect("a thread")
        .join()
        .expect("the small thread's classifications");
}
