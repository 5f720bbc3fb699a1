//! The paths a text can take through a pattern set's tables, and the one
//! place that picks one.
//!
//! Every path finds exactly the labels of the plain scan; they differ in
//! speed only, each being fastest for some texts (as a regular-expression
//! engine picks a strategy per pattern and per haystack):
//!
//! | path | what | taken by |
//! |---|---|---|
//! | [`Path::Plain`] | the generated tables, one symbol per character (`classic::scan`, `extended::scan`) | every text without feature `prefilter` (firmware); short invalid UTF-8 |
//! | [`Path::Short`] | tables laid out for speed, their states in registers (`short` for the classic set, `dense` for the others) | valid UTF-8 under [`FACTORS_MIN_LEN`] bytes |
//! | [`Path::Skipping`] | the set's scan, skipping the strings of three bytes where no match can start (`skipping`, `prefilter`) | invalid UTF-8 of [`SKIPPING_MIN_LEN`] bytes or more; long texts where the target has no Teddy |
//! | [`Path::Factors`] | a vectorized search for the patterns' required factors, the set's scan only around each hit (`factors`) | valid UTF-8 of [`FACTORS_MIN_LEN`] bytes or more, where the target has Teddy (x86_64, aarch64) |
//!
//! The curated set (`super::curated`) is not a [`Set`]: its 25 tables step
//! as one lazily built automaton (`super::curated_lazy`), over the whole
//! of a short valid text and around the hits of their factors in a long
//! one (`super::curated_factors`), and take the plain scan otherwise.
//!
//! The factor search needs characters (a valid `&str`); a long text where
//! the target has no Teddy takes the skipping scan (the factor search
//! answers `None`), and a text between the two lengths the short tables.
//! In this crate's unit tests a path can be forced ([`forcing`]), and
//! `tests::every_path_gives_the_plain_answer` checks every path against
//! the plain scan, for every pattern set, on the corpora and on generated
//! texts short and long.

#[cfg(feature = "prefilter")]
use super::step::Step;
use super::utf8::{lossy_symbols, symbols};

/// A path a text can take (see the module's table).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Path {
    /// The generated tables, symbol by symbol.
    Plain,
    /// The short texts' tables.
    #[cfg(feature = "prefilter")]
    Short,
    /// The skipping scan.
    #[cfg(feature = "prefilter")]
    Skipping,
    /// The factor search.
    #[cfg(feature = "prefilter")]
    Factors,
}

/// Valid UTF-8 from this many bytes on takes the factor search: below,
/// the search's set-up costs more than the short tables' whole scan.
#[cfg(feature = "prefilter")]
pub(super) const FACTORS_MIN_LEN: usize = 128;

/// Text from this many bytes on that the factor search does not take is
/// scanned skipping: shorter, too little to skip to pay for the skipping's
/// bookkeeping (and for its one-time tables).
#[cfg(feature = "prefilter")]
pub(super) const SKIPPING_MIN_LEN: usize = 256;

/// A pattern set, as the paths see it.
pub(super) trait Set {
    /// The plain scan: the labels among `want` that `symbols` have.
    fn plain(want: u8, symbols: impl Iterator<Item = u8>) -> u8;
    /// The set's scan for the long-text paths.
    #[cfg(feature = "prefilter")]
    type Scan: Step;
    /// The short texts' scan of valid UTF-8.
    #[cfg(feature = "prefilter")]
    fn short(want: u8, text: &str) -> u8;
}

/// The path a text of `len` bytes takes (`utf8`: valid UTF-8).
#[inline(always)]
pub(super) fn choose(len: usize, utf8: bool) -> Path {
    #[cfg(feature = "prefilter")]
    return if utf8 && len >= FACTORS_MIN_LEN {
        Path::Factors
    } else if len >= SKIPPING_MIN_LEN {
        Path::Skipping
    } else if utf8 {
        Path::Short
    } else {
        Path::Plain
    };
    #[cfg(not(feature = "prefilter"))]
    {
        let _ = (len, utf8);
        Path::Plain
    }
}

/// Where the factor search cannot run (no Teddy on the target): the path
/// of a valid text of `len` bytes.
#[cfg(feature = "prefilter")]
#[inline(always)]
fn without_factors(len: usize) -> Path {
    if len >= SKIPPING_MIN_LEN {
        Path::Skipping
    } else {
        Path::Short
    }
}

/// The labels among `want` that `text` has under the set `S`.
// Inlined where speed counts; calls of their own in debug builds, whose
// frames would otherwise hold every path's locals at once (a small host
// thread may classify first: `tests/first_use.rs`).
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn scan_str<S: Set>(want: u8, text: &str) -> u8 {
    run::<S>(want, text.as_bytes(), Some(text))
}

/// [`scan_str`] over the lossy reading of `bytes`.
#[cfg_attr(not(debug_assertions), inline(always))]
pub(super) fn scan_bytes<S: Set>(want: u8, bytes: &[u8]) -> u8 {
    // Valid UTF-8 takes the paths of text (the factor search needs
    // characters, and the short tables read valid UTF-8 only).
    #[cfg(feature = "prefilter")]
    if let Ok(text) = core::str::from_utf8(bytes) {
        return scan_str::<S>(want, text);
    }
    run::<S>(want, bytes, None)
}

/// The scan of `bytes` on the path chosen (or forced), `text` being the
/// same bytes where they are valid UTF-8.
#[cfg_attr(not(debug_assertions), inline(always))]
fn run<S: Set>(want: u8, bytes: &[u8], text: Option<&str>) -> u8 {
    let path = forced().unwrap_or_else(|| choose(bytes.len(), text.is_some()));
    match (path, text) {
        #[cfg(feature = "prefilter")]
        (Path::Factors, Some(text)) => match super::factors::scan::<S::Scan>(want, text) {
            Some(found) => found,
            None => on::<S>(without_factors(bytes.len()), want, bytes, Some(text)),
        },
        (path, text) => on::<S>(path, want, bytes, text),
    }
}

/// The scan of `bytes` on `path`, but the factor search.
#[cfg_attr(not(debug_assertions), inline(always))]
fn on<S: Set>(path: Path, want: u8, bytes: &[u8], text: Option<&str>) -> u8 {
    match (path, text) {
        #[cfg(feature = "prefilter")]
        (Path::Skipping, _) => super::skipping::scan(S::Scan::start(want), bytes),
        #[cfg(feature = "prefilter")]
        (Path::Short, Some(text)) => S::short(want, text),
        (_, Some(text)) => S::plain(want, symbols(text)),
        (_, None) => S::plain(want, lossy_symbols(bytes)),
    }
}

#[cfg(test)]
extern crate std;

#[cfg(test)]
std::thread_local! {
    static FORCED: core::cell::Cell<Option<Path>> = const { core::cell::Cell::new(None) };
}

/// The path forced on this thread, if any (tests only).
#[inline(always)]
fn forced() -> Option<Path> {
    #[cfg(test)]
    return FORCED.with(|f| f.get());
    #[cfg(not(test))]
    None
}

/// Runs `f` with every text of this thread on `path` (where it can take
/// it: the factor search and the short tables need valid UTF-8, and the
/// factor search Teddy; elsewhere a text takes the path it would).
#[cfg(test)]
pub(super) fn forcing<R>(path: Path, f: impl FnOnce() -> R) -> R {
    FORCED.with(|p| p.set(Some(path)));
    let r = f();
    FORCED.with(|p| p.set(None));
    r
}

#[cfg(test)]
mod tests {
    use super::super::testing::texts;
    use super::super::Classifier;
    use super::*;
    use std::{string::String, vec::Vec};

    /// Every path.
    const PATHS: &[Path] = &[
        Path::Plain,
        #[cfg(feature = "prefilter")]
        Path::Short,
        #[cfg(feature = "prefilter")]
        Path::Skipping,
        #[cfg(feature = "prefilter")]
        Path::Factors,
    ];

    /// Every pattern set.
    const SETS: &[Classifier] = &[
        Classifier::Classic,
        #[cfg(feature = "extended")]
        Classifier::Extended,
    ];

    /// The corpora's texts, generated short texts, and long ones: the
    /// generated texts put together with filler, body text and lines.
    fn all_texts() -> Vec<Vec<u8>> {
        let mut all: Vec<Vec<u8>> = [
            include_str!("../../tests/corpus/errors.jsonl"),
            include_str!("../../tests/corpus/extended/errors.jsonl"),
        ]
        .iter()
        .flat_map(|c| c.lines())
        .map(|l| l.as_bytes().to_vec())
        .collect();
        let short = texts(1500);
        all.extend(short.iter().cloned());
        let fill = include_str!("../../benches/data/body.html").as_bytes();
        for (k, group) in short.chunks(12).enumerate() {
            let mut t = Vec::new();
            for (j, piece) in group.iter().enumerate() {
                let n = (k * 37 + j * 101) % 700;
                t.extend_from_slice(fill.get(k * 13 % 2000..k * 13 % 2000 + n).unwrap_or(&[]));
                t.extend_from_slice(piece);
                if (k + j) % 3 == 0 {
                    t.push(b'\n');
                }
            }
            all.push(t);
        }
        all
    }

    #[test]
    fn choice_by_length_and_validity() {
        #[cfg(feature = "prefilter")]
        {
            assert_eq!(choose(0, true), Path::Short);
            assert_eq!(choose(FACTORS_MIN_LEN - 1, true), Path::Short);
            assert_eq!(choose(FACTORS_MIN_LEN, true), Path::Factors);
            assert_eq!(choose(SKIPPING_MIN_LEN - 1, false), Path::Plain);
            assert_eq!(choose(SKIPPING_MIN_LEN, false), Path::Skipping);
            assert_eq!(without_factors(FACTORS_MIN_LEN), Path::Short);
            assert_eq!(without_factors(SKIPPING_MIN_LEN), Path::Skipping);
        }
        #[cfg(not(feature = "prefilter"))]
        assert_eq!(choose(1 << 20, true), Path::Plain);
    }

    #[test]
    fn every_path_gives_the_plain_answer() {
        let texts = all_texts();
        for &set in SETS {
            let plain: Vec<_> = forcing(Path::Plain, || {
                texts
                    .iter()
                    .map(|t| {
                        (
                            set.classify_bytes(t),
                            set.matches_retryable_bytes(t),
                            set.matches_overflow_bytes(t),
                            set.matches_usage_limit_bytes(t),
                        )
                    })
                    .collect()
            });
            for &path in PATHS {
                forcing(path, || {
                    for (t, want) in texts.iter().zip(&plain) {
                        let got = (
                            set.classify_bytes(t),
                            set.matches_retryable_bytes(t),
                            set.matches_overflow_bytes(t),
                            set.matches_usage_limit_bytes(t),
                        );
                        assert_eq!(
                            &got,
                            want,
                            "{set:?} on {path:?}: {:?}",
                            String::from_utf8_lossy(t)
                        );
                        if let Ok(s) = core::str::from_utf8(t) {
                            assert_eq!(set.classify(s), want.0, "{set:?} on {path:?}: {s:?}");
                        }
                    }
                });
            }
        }
    }
}
