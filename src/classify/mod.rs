//! Classification of provider error texts (spec section 3): retryable,
//! context overflow, usage limit, and the retry hint.
//!
//! Pure functions of the text: no allocation, no panic, linear time. The
//! patterns of [`patterns`] are compiled ahead of time into DFAs (see
//! `tests/gen/`) with the matching semantics of spec 3.1: only ASCII letters
//! fold case, `.` is one Unicode scalar value other than `\n`, `\r`, U+2028
//! and U+2029, `\d` is `[0-9]`, `\s` is ASCII white space. The `*_bytes`
//! functions read raw bytes exactly as `String::from_utf8_lossy` would (one
//! U+FFFD per maximal invalid subpart), without allocating.
//!
//! ```
//! use autoretry::classify::{classify, Classification};
//!
//! assert_eq!(
//!     classify("usage_limit_reached retry-after-ms=11180000"),
//!     Classification { retryable: true, overflow: false, usage_limit: true, hint_ms: Some(11_180_000) },
//! );
//! ```

mod dfa;
mod hint;
pub mod patterns;

pub use hint::{retry_hint_ms, retry_hint_ms_bytes};

use dfa::{Dfa, Table};
use regex_automata::{
    dfa::Automaton,
    util::{lazy::Lazy, primitives::StateID, start},
    Anchored, Input,
};

/// Labels of one error text, as the corpus README defines them.
///
/// ```
/// use autoretry::classify::{classify, Classification};
///
/// let c: Classification = classify("prompt is too long: 208254 tokens > 200000 maximum");
/// assert!(c.overflow && !c.retryable);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Classification {
    /// Spec 3: the text is non-empty, not an overflow, and matches the
    /// retryable pattern (3.2). (The stop reason is the caller's to check.)
    pub retryable: bool,
    /// Spec 3.3: the text matches one of the context-overflow patterns (the
    /// text rules only; the usage rule needs the message).
    pub overflow: bool,
    /// Spec 3.4: the text matches the usage-limit pattern, whatever its
    /// other labels.
    pub usage_limit: bool,
    /// Spec 3.5: the retry hint in ms, extracted without a clock, whatever
    /// the text's class.
    pub hint_ms: Option<u64>,
}

/// Classifies an error text (the `errorMessage` of a message whose stop
/// reason is `error`).
///
/// `retryable` is `!text.is_empty() && !overflow && matches_retryable(text)`;
/// `hint_ms` is [`retry_hint_ms`] with no clock.
///
/// ```
/// use autoretry::classify::classify;
///
/// let c = classify("429 Too Many Requests");
/// assert!(c.retryable && !c.overflow && !c.usage_limit);
/// assert_eq!(c.hint_ms, None);
/// // Overflow is never retryable, even when it mentions a status code.
/// assert!(!classify("400 (no body)").retryable);
/// ```
pub fn classify(text: &str) -> Classification {
    let overflow = matches_overflow(text);
    Classification {
        retryable: !text.is_empty() && !overflow && matches_retryable(text),
        overflow,
        usage_limit: matches_usage_limit(text),
        hint_ms: retry_hint_ms(text, None),
    }
}

/// [`classify`] on raw bytes, read as `String::from_utf8_lossy` would read
/// them, without allocating: one pass drives every DFA.
///
/// ```
/// use autoretry::classify::{classify, classify_bytes};
///
/// // The invalid byte reads as one U+FFFD, which `.` matches.
/// assert!(classify_bytes(b"rate\xFFlimit").retryable);
/// assert_eq!(classify_bytes(b"overloaded"), classify("overloaded"));
/// ```
pub fn classify_bytes(bytes: &[u8]) -> Classification {
    let mut overflow = dfa::OVERFLOW.each_ref().map(Scan::start);
    let mut others = [Scan::start(&dfa::RETRYABLE), Scan::start(&dfa::USAGE_LIMIT)];
    for_each_lossy_byte(bytes, |b| {
        feed_all(&mut overflow, b) | feed_all(&mut others, b)
    });
    let overflow = overflow.into_iter().any(Scan::finish);
    let [retryable, usage_limit] = others.map(Scan::finish);
    Classification {
        retryable: !bytes.is_empty() && !overflow && retryable,
        overflow,
        usage_limit,
        hint_ms: retry_hint_ms_bytes(bytes, None),
    }
}

/// Whether the text matches the retryable pattern of spec 3.2 (alone: no
/// overflow or emptiness check).
///
/// ```
/// use autoretry::classify::matches_retryable;
///
/// assert!(matches_retryable("Rate-Limit exceeded"));
/// assert!(matches_retryable("exceeds 5000 tokens")); // bare status codes
/// assert!(!matches_retryable("rate\nlimit"));
/// assert!(!matches_retryable("ſervice unavailable")); // no Unicode folding
/// ```
pub fn matches_retryable(text: &str) -> bool {
    search(&dfa::RETRYABLE, text)
}

/// [`matches_retryable`] on raw bytes, read as `String::from_utf8_lossy`
/// would read them.
///
/// ```
/// use autoretry::classify::matches_retryable_bytes;
///
/// assert!(matches_retryable_bytes(b"\xC3 overloaded"));
/// assert!(!matches_retryable_bytes(b"over\xFFloaded"));
/// ```
pub fn matches_retryable_bytes(bytes: &[u8]) -> bool {
    search_bytes(&dfa::RETRYABLE, bytes)
}

/// Whether the text matches one of the context-overflow text patterns of
/// spec 3.3 (no stop-reason or token-usage check).
///
/// ```
/// use autoretry::classify::matches_overflow;
///
/// assert!(matches_overflow("Your input exceeds the context window of this model."));
/// assert!(matches_overflow("413 status code (no body)"));
/// // That one is anchored at the start of the text.
/// assert!(!matches_overflow("proxy: 413 status code (no body)"));
/// ```
pub fn matches_overflow(text: &str) -> bool {
    dfa::OVERFLOW.iter().any(|table| search(table, text))
}

/// [`matches_overflow`] on raw bytes, read as `String::from_utf8_lossy`
/// would read them.
///
/// ```
/// use autoretry::classify::matches_overflow_bytes;
///
/// assert!(matches_overflow_bytes(b"too many tokens\xFF"));
/// assert!(!matches_overflow_bytes(b"\xFF413 (no body)"));
/// ```
pub fn matches_overflow_bytes(bytes: &[u8]) -> bool {
    let mut scans = dfa::OVERFLOW.each_ref().map(Scan::start);
    for_each_lossy_byte(bytes, |b| feed_all(&mut scans, b));
    scans.into_iter().any(Scan::finish)
}

/// Whether `text` matches one of the **unanchored** context-overflow
/// patterns of section 3.3 (all but the last, `^4(00|13)...`). Unlike
/// [`matches_overflow`], this predicate is monotone in both directions: text
/// added before or after a match never removes it.
///
/// ```
/// use autoretry::classify::{matches_overflow, matches_overflow_unanchored};
/// assert!(matches_overflow("413 (no body)") && !matches_overflow_unanchored("413 (no body)"));
/// assert!(matches_overflow_unanchored("error: too many tokens"));
/// ```
pub fn matches_overflow_unanchored(text: &str) -> bool {
    dfa::OVERFLOW
        .iter()
        .zip(patterns::OVERFLOW)
        .any(|(table, source)| !source.starts_with("/^") && search(table, text))
}

/// Whether the text matches the usage-limit pattern of spec 3.4 (alone).
///
/// ```
/// use autoretry::classify::matches_usage_limit;
///
/// assert!(matches_usage_limit("You've hit your usage limit."));
/// assert!(matches_usage_limit("limit_reached: weekly limit"));
/// assert!(!matches_usage_limit("rate limit"));
/// ```
pub fn matches_usage_limit(text: &str) -> bool {
    search(&dfa::USAGE_LIMIT, text)
}

/// [`matches_usage_limit`] on raw bytes, read as `String::from_utf8_lossy`
/// would read them.
///
/// ```
/// use autoretry::classify::matches_usage_limit_bytes;
///
/// assert!(matches_usage_limit_bytes(b"usage\xE2\x80limit"));
/// assert!(!matches_usage_limit_bytes(b"usage\xE2\x80\xA8limit")); // U+2028
/// ```
pub fn matches_usage_limit_bytes(bytes: &[u8]) -> bool {
    search_bytes(&dfa::USAGE_LIMIT, bytes)
}

/// Whether the DFA matches anywhere in `text`. A DFA that failed to load, or
/// a search error, counts as no match.
fn search(table: &Table, text: &str) -> bool {
    match Lazy::get(table) {
        Ok(dfa) => matches!(
            dfa.try_search_fwd(&Input::new(text).earliest(true)),
            Ok(Some(_))
        ),
        Err(_) => false,
    }
}

/// [`search`] over the lossy reading of `bytes`.
fn search_bytes(table: &Table, bytes: &[u8]) -> bool {
    let mut scan = [Scan::start(table)];
    for_each_lossy_byte(bytes, |b| feed_all(&mut scan, b));
    let [scan] = scan;
    scan.finish()
}

/// U+FFFD in UTF-8.
const REPLACEMENT: &[u8] = "\u{FFFD}".as_bytes();

/// Calls `f` with every byte of `String::from_utf8_lossy(bytes)`, in order,
/// until it returns `false`: valid runs as they are, one U+FFFD per maximal
/// invalid subpart.
fn for_each_lossy_byte(bytes: &[u8], mut f: impl FnMut(u8) -> bool) {
    for chunk in bytes.utf8_chunks() {
        let invalid = if chunk.invalid().is_empty() {
            &[][..]
        } else {
            REPLACEMENT
        };
        for &b in chunk.valid().as_bytes().iter().chain(invalid) {
            if !f(b) {
                return;
            }
        }
    }
}

/// Feeds `byte` to every scan; whether any still needs input.
fn feed_all(scans: &mut [Scan<'_>], byte: u8) -> bool {
    scans
        .iter_mut()
        .fold(false, |running, scan| scan.feed(byte) | running)
}

/// One DFA driven by hand over a byte stream (an unanchored search from the
/// start of the text, stopping at the earliest match).
enum Scan<'a> {
    /// Still searching, in this state.
    Running(&'a Dfa, StateID),
    /// Decided: matched or not.
    Done(bool),
}

impl<'a> Scan<'a> {
    fn start(table: &'a Table) -> Self {
        let Ok(dfa) = Lazy::get(table) else {
            return Scan::Done(false);
        };
        match dfa.start_state(&start::Config::new().anchored(Anchored::No)) {
            Ok(sid) => Scan::Running(dfa, sid),
            Err(_) => Scan::Done(false),
        }
    }

    /// Feeds one byte; whether the scan still needs input.
    fn feed(&mut self, byte: u8) -> bool {
        let Scan::Running(dfa, sid) = *self else {
            return false;
        };
        let next = dfa.next_state(sid, byte);
        if dfa.is_special_state(next) {
            if dfa.is_match_state(next) {
                *self = Scan::Done(true);
                return false;
            }
            if dfa.is_dead_state(next) || dfa.is_quit_state(next) {
                *self = Scan::Done(false);
                return false;
            }
        }
        *self = Scan::Running(dfa, next);
        true
    }

    /// Ends the input; whether the DFA matched.
    fn finish(self) -> bool {
        match self {
            Scan::Running(dfa, sid) => dfa.is_match_state(dfa.next_eoi_state(sid)),
            Scan::Done(matched) => matched,
        }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::{string::String, vec::Vec};

    #[test]
    fn every_dfa_loads() {
        assert!(Lazy::get(&dfa::RETRYABLE).is_ok());
        assert!(Lazy::get(&dfa::USAGE_LIMIT).is_ok());
        for (i, table) in dfa::OVERFLOW.iter().enumerate() {
            assert!(Lazy::get(table).is_ok(), "overflow DFA {i}");
        }
        assert_eq!(dfa::OVERFLOW.len(), patterns::OVERFLOW.len());
    }

    #[test]
    fn only_ascii_letters_fold() {
        for text in [
            "İnternal error",
            "ınternal error",
            "overloadſd",
            "ſervice unavailable",
        ] {
            assert!(!matches_retryable(text), "{text}");
        }
        assert!(!matches_retryable("rate lımit"));
        assert!(!matches_retryable("rate \u{212A}imit"));
        assert!(!matches_overflow("too many to\u{212A}ens"));
        assert!(matches_retryable("InTeRnAl ErRoR"));
        assert!(matches_overflow("TOO MANY TOKENS"));
        assert!(matches_usage_limit("USAGE_LIMIT_REACHED"));
    }

    #[test]
    fn dot_is_one_scalar_but_no_line_terminator() {
        for ok in [
            "rate limit",
            "ratelimit",
            "rate—limit",
            "rate😀limit",
            "rate\tlimit",
        ] {
            assert!(matches_retryable(ok), "{ok}");
        }
        for no in [
            "rate\nlimit",
            "rate\rlimit",
            "rate\u{2028}limit",
            "rate\u{2029}limit",
            "rate  limit",
            "rate😀😀limit",
        ] {
            assert!(!matches_retryable(no), "{no:?}");
        }
        assert!(matches_overflow(
            "input token count 1 — 😀 exceeds the maximum"
        ));
        assert!(!matches_overflow(
            "input token count\u{2028}exceeds the maximum"
        ));
        assert!(!matches_overflow(
            "input token count\u{2029}exceeds the maximum"
        ));
    }

    #[test]
    fn digits_and_white_space_are_ascii() {
        assert!(matches_overflow("maximum prompt length is 5"));
        assert!(!matches_overflow("maximum prompt length is ٥"));
        assert!(matches_overflow("400\u{0B}\u{0C}\t\r\n (no body)"));
        assert!(!matches_overflow("400\u{A0}(no body)"));
        assert!(!matches_overflow("400\u{2003}(no body)"));
        assert!(!matches_overflow(" 400 (no body)"));
    }

    #[test]
    fn empty_text() {
        let c = classify("");
        assert_eq!(c, classify_bytes(b""));
        assert!(!c.retryable && !c.overflow && !c.usage_limit && c.hint_ms.is_none());
    }

    /// Tricky invalid sequences: truncated, overlong, surrogates, stray
    /// continuation bytes, bytes that can never appear.
    const INVALID: [&[u8]; 12] = [
        b"\xFF",
        b"\xC0\xAF",
        b"\xE0\x80\xAF",
        b"\xED\xA0\x80",
        b"\xF0\x9F\x98",
        b"\xE2\x80",
        b"\x80\x80",
        b"\xF4\x90\x80\x80",
        b"\xF8\x88\x80\x80\x80",
        b"\xC3",
        b"\xE2\x80\xA8\xE2\x80",
        b"\xF0\x9F\x98\x80\xBF",
    ];

    #[test]
    fn bytes_read_like_from_utf8_lossy() {
        let texts = [
            "rate#limit",
            "usage#limit",
            "connection#error",
            "service#unavailable",
            "input token count#exceeds the maximum",
            "context window#exceeded",
            "#400 (no body)",
            "400#(no body)",
            "4#00 (no body)",
            "prompt is#too long for n_ctx",
            "over#loaded",
            "retry-after: #5",
            "x-ratelimit-reset#: 5",
            "#",
        ];
        for text in texts {
            for invalid in INVALID {
                let mut bytes = Vec::new();
                for (i, part) in text.split('#').enumerate() {
                    if i > 0 {
                        bytes.extend_from_slice(invalid);
                    }
                    bytes.extend_from_slice(part.as_bytes());
                }
                let lossy = String::from_utf8_lossy(&bytes);
                let expected = classify(&lossy);
                assert_eq!(classify_bytes(&bytes), expected, "{bytes:?}");
                assert_eq!(matches_retryable_bytes(&bytes), matches_retryable(&lossy));
                assert_eq!(matches_overflow_bytes(&bytes), matches_overflow(&lossy));
                assert_eq!(
                    matches_usage_limit_bytes(&bytes),
                    matches_usage_limit(&lossy)
                );
                assert_eq!(
                    retry_hint_ms_bytes(&bytes, Some(1)),
                    retry_hint_ms(&lossy, Some(1))
                );
            }
        }
    }

    #[test]
    fn one_replacement_per_invalid_subpart() {
        // Two subparts are two U+FFFD, too many for `.?`; one is one.
        assert!(matches_retryable_bytes(b"rate\xE2\x80limit"));
        assert!(!matches_retryable_bytes(b"rate\xE2\x80\xE2\x80limit"));
        assert!(!matches_retryable_bytes(b"rate\xC0\xAFlimit"));
        assert!(matches_retryable_bytes(b"rate\xF0\x9F\x98limit"));
    }

    #[test]
    fn long_texts_are_fine() {
        let mut text = String::new();
        for _ in 0..10_000 {
            text.push_str("input prompt requested tokens context ");
        }
        assert!(!matches_overflow(&text));
        text.push_str("window exceeded");
        assert!(matches_overflow(&text));
        assert!(matches_overflow_bytes(text.as_bytes()));
    }
}
