//! Classification of provider error texts (spec section 3): retryable,
//! context overflow, usage limit, and the retry hint.
//!
//! Pure functions of the text: no allocation, no panic, linear time, one
//! pass (on std, feature `prefilter` allocates its speed tables once per
//! process, at first use, and the curated set a cache per thread). The patterns of [`patterns`] are compiled ahead
//! of time into small DFAs that read one symbol per character (see
//! `tools/dfa-gen/`), with the matching semantics of spec 3.1: only ASCII
//! letters fold case, `.` is one Unicode scalar value other than `\n`, `\r`, U+2028
//! and U+2029, `\d` is `[0-9]`, `\s` is ASCII white space (and `\b`, in the
//! extended patterns, an ASCII word boundary). The `*_bytes`
//! functions and methods read raw bytes exactly as `String::from_utf8_lossy` would (one
//! U+FFFD per maximal invalid subpart), without allocating.
//!
//! Two pattern sets exist ([`Classifier`]): the classic one of sections
//! 3.2 to 3.5 and, with feature `extended`, the extended one of section
//! 10.5. Each classifies with its methods ([`Classifier::classify`],
//! [`Classifier::matches_retryable`], ...); [`classify`] and
//! [`classify_bytes`] are the classic set's shortcuts. The retry hints
//! ([`retry_hint_ms`], spec 3.5, and [`wait_hint_ms`], spec 10.4) are
//! functions of their own: the machine picks one by `honorHints`, not by
//! the pattern set.
//!
//! ```
//! use autoretry::classify::{classify, Classification};
//!
//! assert_eq!(
//!     classify("usage_limit_reached retry-after-ms=11180000"),
//!     Classification { retryable: true, overflow: false, usage_limit: true, hint_ms: Some(11_180_000) },
//! );
//! ```

// Generated: its byte arrays are laid out by the generator, not by rustfmt.
#[rustfmt::skip]
mod dfa;
mod classic;
#[cfg(feature = "curated")]
mod curated;
#[cfg(all(feature = "curated", feature = "prefilter"))]
mod curated_factors;
mod curated_hint;
#[cfg(all(feature = "curated", feature = "prefilter"))]
mod curated_lazy;
mod date;
mod decimal;
#[cfg(all(feature = "prefilter", feature = "extended"))]
mod dense;
// Read by the header reading (spec 13.1) and the text hints (13.2).
mod duration;
#[cfg(feature = "extended")]
mod extended;
#[cfg(feature = "prefilter")]
mod factors;
#[cfg(feature = "prefilter")]
mod heap;
mod hint;
mod overflow;
pub mod patterns;
#[cfg(feature = "prefilter")]
mod prefilter;
#[cfg(feature = "prefilter")]
mod short;
#[cfg(feature = "prefilter")]
mod skipping;
#[cfg(feature = "prefilter")]
mod step;
mod strategy;
mod symbol;
mod table;
#[cfg(test)]
mod testing;
mod utf8;
mod wait_hint;
#[cfg(feature = "extended")]
mod window;

pub use curated_hint::{curated_hint_ms, curated_hint_ms_bytes};
pub use hint::{retry_hint_ms, retry_hint_ms_bytes};
// The parsers the header reading of spec 13.1 (`crate::headers`) shares.
pub(crate) use date::{imf_fixdate_ms, rfc3339_ms};
pub(crate) use decimal::numeral_ms;
pub(crate) use duration::whole as duration_ms;
pub use wait_hint::{wait_hint_ms, wait_hint_ms_bytes};

use classic::labels;
use dfa::{HINT, OVERFLOW, RETRYABLE, USAGE_LIMIT};
use strategy::{scan_bytes, scan_str};

/// Which pattern set classifies texts (spec §10.1 `classifier`, §10.5).
///
/// `Classic` is sections 3.2 to 3.5, the reference's patterns. `Extended`
/// is section 10.5 (word-bounded status codes, more transient errors, more
/// usage-limit and overflow texts) with the wait hints of 10.4; it exists
/// only with feature `extended` (on with `std`), because it adds about
/// 16 KB to a firmware's flash (10 KB of tables). Without the feature
/// there is no way to ask for it, so nothing is ever classified by a set
/// it did not ask for: [`Classifier::from_wire`] knows only `"classic"`
/// then, and a settings decoder built on it refuses `"extended"`.
///
/// ```
/// use autoretry::classify::Classifier;
///
/// assert_eq!(Classifier::default(), Classifier::Classic);
/// assert_eq!(Classifier::from_wire("classic"), Some(Classifier::Classic));
/// assert_eq!(Classifier::Classic.as_str(), "classic");
/// assert_eq!(Classifier::from_wire("Classic"), None);
/// # #[cfg(feature = "extended")]
/// assert_eq!(Classifier::from_wire("extended").map(Classifier::as_str), Some("extended"));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Classifier {
    /// Sections 3.2 to 3.5 (the reference's patterns).
    #[default]
    Classic,
    /// Section 10.5 and the hints of 10.4 (feature `extended`).
    #[cfg(feature = "extended")]
    Extended,
    /// Section 13.2 and its hints (feature `curated`): more transport,
    /// busy and concurrency wordings, plan and daily quotas as usage
    /// limits and per-minute ones as plain retries, a never-retried set.
    #[cfg(feature = "curated")]
    Curated,
}

impl Classifier {
    /// The wire name: `"classic"`, `"extended"` or `"curated"`.
    ///
    /// ```
    /// assert_eq!(autoretry::classify::Classifier::Classic.as_str(), "classic");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            Classifier::Classic => "classic",
            #[cfg(feature = "extended")]
            Classifier::Extended => "extended",
            #[cfg(feature = "curated")]
            Classifier::Curated => "curated",
        }
    }

    /// The classifier of a wire name (exactly `"classic"` or, with feature
    /// `extended`, `"extended"`, with feature `curated`, `"curated"`);
    /// `None` for anything else.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// assert_eq!(Classifier::from_wire("classic"), Some(Classifier::Classic));
    /// assert_eq!(Classifier::from_wire("modern"), None);
    /// ```
    pub fn from_wire(s: &str) -> Option<Self> {
        match s {
            "classic" => Some(Classifier::Classic),
            #[cfg(feature = "extended")]
            "extended" => Some(Classifier::Extended),
            #[cfg(feature = "curated")]
            "curated" => Some(Classifier::Curated),
            _ => None,
        }
    }

    /// Classifies an error text (the `errorMessage` of a message whose
    /// stop reason is `error`) with this pattern set.
    ///
    /// `Classic`: `retryable` is `!text.is_empty() && !overflow` and the
    /// retryable pattern of 3.2; `hint_ms` is [`retry_hint_ms`] with no
    /// clock. `Extended`: the labels of spec 10.5 (a usage-limit text is
    /// retryable too) and `hint_ms` from [`wait_hint_ms`] (spec 10.4) with
    /// no clock.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// let classic = Classifier::Classic.classify("exceeds 5000 tokens");
    /// assert!(classic.retryable); // `500` as a bare substring
    /// # #[cfg(feature = "extended")] {
    /// let extended = Classifier::Extended.classify("exceeds 5000 tokens");
    /// assert!(!extended.retryable); // `\b500\b` only
    /// let c = Classifier::Extended.classify("Quota exceeded. Please retry in 41.820516331s.");
    /// assert!(c.retryable && c.usage_limit && !c.overflow);
    /// assert_eq!(c.hint_ms, Some(41_821));
    /// assert!(Classifier::Extended.classify("413 Request Entity Too Large").overflow);
    /// # }
    /// ```
    pub fn classify(self, text: &str) -> Classification {
        match self {
            Classifier::Classic => {
                let found = scan_str::<classic::Patterns>(ALL | HINT, text);
                // Every hint rule needs one of the names: without them, no hint.
                let hint_ms = if found & HINT != 0 {
                    retry_hint_ms(text, None)
                } else {
                    None
                };
                labels(found, text.is_empty(), hint_ms)
            }
            #[cfg(feature = "extended")]
            Classifier::Extended => {
                let found = scan_str::<extended::Patterns>(ALL | HINT, text);
                let hint_ms = if found & HINT != 0 {
                    wait_hint_ms(text, None)
                } else {
                    None
                };
                extended::labels(found, text.is_empty(), hint_ms)
            }
            #[cfg(feature = "curated")]
            Classifier::Curated => {
                let found = curated::scan_str(text);
                curated::labels(
                    found,
                    text.is_empty(),
                    curated::hint(found, text.as_bytes()),
                )
            }
        }
    }

    /// [`Classifier::classify`] on raw bytes, read as
    /// `String::from_utf8_lossy` would read them, without allocating: one
    /// pass drives every DFA.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// // The invalid byte reads as one U+FFFD, which `.` matches.
    /// assert!(Classifier::Classic.classify_bytes(b"rate\xFFlimit").retryable);
    /// # #[cfg(feature = "extended")]
    /// assert!(Classifier::Extended.classify_bytes(b"socket hang up\xFF").retryable);
    /// ```
    pub fn classify_bytes(self, bytes: &[u8]) -> Classification {
        match self {
            Classifier::Classic => {
                let found = scan_bytes::<classic::Patterns>(ALL | HINT, bytes);
                // The names are ASCII, which the lossy reading keeps as it is.
                let hint_ms = if found & HINT != 0 {
                    retry_hint_ms_bytes(bytes, None)
                } else {
                    None
                };
                labels(found, bytes.is_empty(), hint_ms)
            }
            #[cfg(feature = "extended")]
            Classifier::Extended => {
                let found = scan_bytes::<extended::Patterns>(ALL | HINT, bytes);
                let hint_ms = if found & HINT != 0 {
                    wait_hint_ms_bytes(bytes, None)
                } else {
                    None
                };
                extended::labels(found, bytes.is_empty(), hint_ms)
            }
            #[cfg(feature = "curated")]
            Classifier::Curated => {
                let found = curated::scan_bytes(bytes);
                curated::labels(found, bytes.is_empty(), curated::hint(found, bytes))
            }
        }
    }

    /// The pattern test of rule 4 of spec section 3, alone (no overflow or
    /// emptiness check): `Classic`, the retryable pattern of 3.2;
    /// `Extended`, the retryable pattern of 10.5 or its usage-limit pattern.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// assert!(Classifier::Classic.matches_retryable("Rate-Limit exceeded"));
    /// assert!(Classifier::Classic.matches_retryable("exceeds 5000 tokens")); // bare status codes
    /// assert!(!Classifier::Classic.matches_retryable("rate\nlimit"));
    /// assert!(!Classifier::Classic.matches_retryable("ſervice unavailable")); // no Unicode folding
    /// # #[cfg(feature = "extended")] {
    /// assert!(Classifier::Extended.matches_retryable("socket hang up"));
    /// assert!(Classifier::Extended.matches_retryable("quota exceeded"));
    /// assert!(!Classifier::Extended.matches_retryable("req_5029"));
    /// # }
    /// ```
    pub fn matches_retryable(self, text: &str) -> bool {
        match self {
            Classifier::Classic => matches_str(RETRYABLE, text),
            #[cfg(feature = "extended")]
            Classifier::Extended => {
                scan_str::<extended::Patterns>(RETRYABLE | USAGE_LIMIT, text) != 0
            }
            #[cfg(feature = "curated")]
            Classifier::Curated => curated::retryable(curated_str(text)),
        }
    }

    /// [`Classifier::matches_retryable`] on raw bytes, read as
    /// `String::from_utf8_lossy` would read them.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// assert!(Classifier::Classic.matches_retryable_bytes(b"\xC3 overloaded"));
    /// assert!(!Classifier::Classic.matches_retryable_bytes(b"over\xFFloaded"));
    /// ```
    pub fn matches_retryable_bytes(self, bytes: &[u8]) -> bool {
        match self {
            Classifier::Classic => matches_bytes(RETRYABLE, bytes),
            #[cfg(feature = "extended")]
            Classifier::Extended => {
                scan_bytes::<extended::Patterns>(RETRYABLE | USAGE_LIMIT, bytes) != 0
            }
            #[cfg(feature = "curated")]
            Classifier::Curated => curated::retryable(curated_bytes(bytes)),
        }
    }

    /// Whether the text matches one of the context-overflow text patterns
    /// (no stop-reason or token-usage check): `Classic`, those of 3.3;
    /// `Extended`, the unanchored ones of 3.3 and those that 10.5 adds.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// assert!(Classifier::Classic.matches_overflow("Your input exceeds the context window of this model."));
    /// assert!(Classifier::Classic.matches_overflow("413 status code (no body)"));
    /// // That one is anchored at the start of the text.
    /// assert!(!Classifier::Classic.matches_overflow("proxy: 413 status code (no body)"));
    /// # #[cfg(feature = "extended")]
    /// assert!(Classifier::Extended.matches_overflow("proxy: 413 status code (no body)"));
    /// ```
    pub fn matches_overflow(self, text: &str) -> bool {
        match self {
            Classifier::Classic => matches_str(OVERFLOW, text),
            #[cfg(feature = "extended")]
            Classifier::Extended => scan_str::<extended::Patterns>(OVERFLOW, text) != 0,
            #[cfg(feature = "curated")]
            Classifier::Curated => curated::overflow(curated_str(text)),
        }
    }

    /// [`Classifier::matches_overflow`] on raw bytes, read as
    /// `String::from_utf8_lossy` would read them.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// assert!(Classifier::Classic.matches_overflow_bytes(b"too many tokens\xFF"));
    /// assert!(!Classifier::Classic.matches_overflow_bytes(b"\xFF413 (no body)"));
    /// ```
    pub fn matches_overflow_bytes(self, bytes: &[u8]) -> bool {
        match self {
            Classifier::Classic => matches_bytes(OVERFLOW, bytes),
            #[cfg(feature = "extended")]
            Classifier::Extended => scan_bytes::<extended::Patterns>(OVERFLOW, bytes) != 0,
            #[cfg(feature = "curated")]
            Classifier::Curated => curated::overflow(curated_bytes(bytes)),
        }
    }

    /// Whether the text matches the usage-limit pattern of this set (3.4,
    /// or 10.5 for `Extended`), alone.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// assert!(Classifier::Classic.matches_usage_limit("You've hit your usage limit."));
    /// assert!(Classifier::Classic.matches_usage_limit("limit_reached: weekly limit"));
    /// assert!(!Classifier::Classic.matches_usage_limit("rate limit"));
    /// # #[cfg(feature = "extended")] {
    /// let text = "This request would exceed your account's rate limit.";
    /// assert!(Classifier::Extended.matches_usage_limit(text));
    /// assert!(!Classifier::Classic.matches_usage_limit(text));
    /// # }
    /// ```
    pub fn matches_usage_limit(self, text: &str) -> bool {
        match self {
            Classifier::Classic => matches_str(USAGE_LIMIT, text),
            #[cfg(feature = "extended")]
            Classifier::Extended => scan_str::<extended::Patterns>(USAGE_LIMIT, text) != 0,
            #[cfg(feature = "curated")]
            Classifier::Curated => curated_str(text) & USAGE_LIMIT != 0,
        }
    }

    /// [`Classifier::matches_usage_limit`] on raw bytes, read as
    /// `String::from_utf8_lossy` would read them.
    ///
    /// ```
    /// use autoretry::classify::Classifier;
    ///
    /// assert!(Classifier::Classic.matches_usage_limit_bytes(b"usage\xE2\x80limit"));
    /// assert!(!Classifier::Classic.matches_usage_limit_bytes(b"usage\xE2\x80\xA8limit")); // U+2028
    /// ```
    pub fn matches_usage_limit_bytes(self, bytes: &[u8]) -> bool {
        match self {
            Classifier::Classic => matches_bytes(USAGE_LIMIT, bytes),
            #[cfg(feature = "extended")]
            Classifier::Extended => scan_bytes::<extended::Patterns>(USAGE_LIMIT, bytes) != 0,
            #[cfg(feature = "curated")]
            Classifier::Curated => curated_bytes(bytes) & USAGE_LIMIT != 0,
        }
    }
}

/// Labels of one error text, as the corpus README defines them.
///
/// ```
/// use autoretry::classify::{classify, Classification};
///
/// let c: Classification = classify("prompt is too long: 208254 tokens > 200000 maximum");
/// assert!(c.overflow && !c.retryable);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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
/// reason is `error`) with the classic set: [`Classifier::classify`] of
/// [`Classifier::Classic`].
///
/// `retryable` is `!text.is_empty() && !overflow` and the retryable
/// pattern; `hint_ms` is [`retry_hint_ms`] with no clock.
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
    Classifier::Classic.classify(text)
}

/// [`classify`] on raw bytes: [`Classifier::classify_bytes`] of
/// [`Classifier::Classic`].
///
/// ```
/// use autoretry::classify::{classify, classify_bytes};
///
/// // The invalid byte reads as one U+FFFD, which `.` matches.
/// assert!(classify_bytes(b"rate\xFFlimit").retryable);
/// assert_eq!(classify_bytes(b"overloaded"), classify("overloaded"));
/// ```
pub fn classify_bytes(bytes: &[u8]) -> Classification {
    Classifier::Classic.classify_bytes(bytes)
}

/// Spec 13.2: under the curated classifier a retryable message whose hint
/// (its `retryAfterMs`, else the text hint of 13.2) is at least this long,
/// 15 minutes, is a usage limit.
///
/// ```
/// assert_eq!(autoretry::classify::LONG_WAIT_MS, 15 * 60 * 1000);
/// ```
pub const LONG_WAIT_MS: u64 = 900_000;

/// Every label a scan can find.
const ALL: u8 = RETRYABLE | USAGE_LIMIT | OVERFLOW;

/// Whether the pattern(s) of `label` match `text`.
fn matches_str(label: u8, text: &str) -> bool {
    scan_str::<classic::Patterns>(label, text) != 0
}

/// [`matches_str`] over the lossy reading of `bytes`.
fn matches_bytes(label: u8, bytes: &[u8]) -> bool {
    scan_bytes::<classic::Patterns>(label, bytes) != 0
}

/// What the curated patterns find in `text`.
#[cfg(feature = "curated")]
fn curated_str(text: &str) -> u8 {
    curated::scan_str(text)
}

/// [`curated_str`] over the lossy reading of `bytes`.
#[cfg(feature = "curated")]
fn curated_bytes(bytes: &[u8]) -> u8 {
    curated::scan_bytes(bytes)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::utf8::{lossy_symbols, symbols};
    use super::*;
    use std::{string::String, vec::Vec};

    fn tables() -> Vec<&'static table::Table> {
        #[allow(unused_mut)]
        let mut all: Vec<&table::Table> = [&dfa::LABELS]
            .into_iter()
            .chain(dfa::WORDS)
            .chain(dfa::TAILS)
            .collect();
        all
    }

    /// The structure of a compressed table: its states, classes, slots,
    /// outputs and ASCII-only folding. Returns the output bits it shows.
    #[cfg(feature = "extended")]
    fn delayed_is_well_formed(d: &table::Delayed, name: &str) -> u8 {
        let states = d.base.len();
        let classes = d.default.len();
        assert!(states > 0 && states < 256, "{name}");
        assert!(usize::from(d.special) <= states, "{name}");
        assert!(d.classes.iter().all(|&c| usize::from(c) < classes));
        assert!(d.default.iter().all(|&s| usize::from(s) < states));
        assert_eq!(d.slots.len() % 2, 0);
        for slot in d.slots.chunks(2) {
            // Free (255), or a state's, to a state.
            assert!(
                slot[0] == 255 || usize::from(slot[0]) < states && usize::from(slot[1]) < states
            );
        }
        for (s, &base) in d.base.iter().enumerate() {
            for class in 0..classes {
                let at = (usize::from(base) + class) * 2;
                if d.slots.get(at) == Some(&(s as u8)) {
                    assert!(d.slots.get(at + 1).is_some());
                }
            }
        }
        assert_eq!(d.out.len(), states - usize::from(d.special), "{name}");
        assert_eq!(d.eoi.len(), d.out.len(), "{name}");
        // The start state is ordinary; every special state reports
        // something at once or at the end of the text (these unanchored
        // tables have no dead state).
        assert!(d.special > 0, "{name}");
        for s in d.special..=u8::try_from(states - 1).unwrap() {
            assert_ne!(d.output(s) | d.eoi(s), 0, "{name} state {s}");
        }
        // ASCII-only folding.
        for upper in b'A'..=b'Z' {
            assert_eq!(
                d.classes[usize::from(upper)],
                d.classes[usize::from(upper.to_ascii_lowercase())]
            );
        }
        d.out.iter().chain(d.eoi).fold(0, |a, &o| a | o)
    }

    #[cfg(feature = "extended")]
    #[test]
    fn extended_tables_are_well_formed() {
        for (i, d) in dfa::EXTENDED.iter().enumerate() {
            let shown = delayed_is_well_formed(d, &std::format!("ext_{i}"));
            // The labels it can give are those its outputs show.
            let labels = (shown & !dfa::WINDOW_WORD_BITS)
                | if shown & dfa::WINDOW_WORD_BITS != 0 {
                    USAGE_LIMIT
                } else {
                    0
                };
            assert_eq!(d.labels, labels, "table {i}");
        }
        for w in &dfa::WINDOW_WORDS {
            assert_eq!(w.bit & dfa::WINDOW_WORD_BITS, w.bit);
        }
    }

    #[cfg(feature = "curated")]
    #[test]
    fn curated_tables_are_well_formed() {
        let families: [(&str, &[&table::Delayed], u8); 3] = [
            ("cur", &dfa::CURATED, RETRYABLE | USAGE_LIMIT | OVERFLOW),
            (
                "guard",
                &dfa::GUARDS,
                dfa::NEVER | dfa::THROTTLE | dfa::TOO_MANY_TOKENS | HINT,
            ),
            ("cwin", &dfa::CURATED_WORD_TABLE, u8::MAX),
        ];
        for (family, tables, bits) in families {
            for (i, d) in tables.iter().enumerate() {
                let shown = delayed_is_well_formed(d, &std::format!("{family}_{i}"));
                assert_eq!(d.labels, shown, "{family}_{i}");
                assert_eq!(shown & !bits, 0, "{family}_{i}");
            }
        }
        // Every label of the curated scan comes from some table (the
        // guards' four bits too).
        let all = |t: &[&table::Delayed]| t.iter().fold(0, |a, d| a | d.labels);
        assert_eq!(all(&dfa::CURATED), RETRYABLE | USAGE_LIMIT | OVERFLOW);
        assert_eq!(
            all(&dfa::GUARDS),
            dfa::NEVER | dfa::THROTTLE | dfa::TOO_MANY_TOKENS | HINT
        );
        // Each window word variant is reported by a table, by its own bit,
        // and each window names variants that exist.
        for (k, &(t, bit, len)) in dfa::CURATED_WORDS.iter().enumerate() {
            let table = dfa::CURATED_WORD_TABLE[usize::from(t)];
            assert_eq!(bit.count_ones(), 1, "word {k}");
            assert_ne!(table.labels & bit, 0, "word {k}");
            assert!(len > 0);
            let twins = dfa::CURATED_WORDS
                .iter()
                .filter(|&&(t2, b2, _)| (t2, b2) == (t, bit))
                .count();
            assert_eq!(twins, 1, "word {k}");
        }
        for (first, second, gap, label) in dfa::CURATED_WINDOWS {
            assert!(!first.is_empty() && !second.is_empty() && gap > 0);
            assert!(label == USAGE_LIMIT || label == dfa::NEVER);
            for &w in first.iter().chain(second) {
                assert!(usize::from(w) < dfa::CURATED_WORDS.len());
            }
        }
        // The literals are the non-ASCII alternatives, each a whole
        // string of other scripts, with the bit of its pattern.
        for (literal, bit) in dfa::CURATED_LITERALS {
            assert!(!literal.is_empty() && literal.chars().all(|c| !c.is_ascii()));
            let pattern = match bit {
                RETRYABLE => patterns::RETRYABLE_CURATED,
                USAGE_LIMIT => patterns::USAGE_LIMIT_CURATED,
                _ => {
                    assert_eq!(bit, dfa::NEVER);
                    patterns::NEVER_CURATED
                }
            };
            assert!(pattern.split('|').any(|a| a == literal), "{literal}");
        }
    }

    #[test]
    fn every_table_is_well_formed() {
        for (i, t) in tables().into_iter().enumerate() {
            let states = t.states;
            assert!(states > 0 && t.trans.len() % states == 0, "table {i}");
            let stride = t.trans.len() / states;
            assert!(
                states <= 256 && usize::from(t.special) <= states,
                "table {i}"
            );
            assert!(
                t.classes.iter().all(|&c| usize::from(c) < stride),
                "table {i}"
            );
            assert!(
                t.trans.iter().all(|&s| usize::from(s) < states),
                "table {i}"
            );
            assert_eq!(t.out.len(), states - usize::from(t.special), "table {i}");
            // The start state is ordinary; every special state but the dead
            // one reports something, and the dead one is absorbing.
            assert!(t.special > 0, "table {i}");
            for s in t.special..=u8::try_from(states - 1).unwrap() {
                if Some(s) == t.dead {
                    assert_eq!(t.output(s), 0);
                    assert!((0..symbol::SYMBOLS as u8).all(|sym| t.next(s, sym) == s));
                } else {
                    assert_ne!(t.output(s), 0, "table {i} state {s}");
                }
            }
            // ASCII-only folding: upper-case letters read as lower case.
            for upper in b'A'..=b'Z' {
                assert_eq!(
                    t.classes[usize::from(upper)],
                    t.classes[usize::from(upper.to_ascii_lowercase())]
                );
            }
        }
        assert_eq!(
            dfa::TAILS_LEN,
            patterns::OVERFLOW
                .iter()
                .filter(|p| p.contains(".*"))
                .count()
        );
    }

    #[test]
    fn symbols_are_one_per_character() {
        for text in [
            "",
            "ascii 529 Overloaded",
            "rate\u{2028}limit\u{2029}x",
            "é😀\u{FFFD}\u{2027}\u{202A}\u{7F}\u{80}",
        ] {
            let by_char: Vec<u8> = text.chars().map(symbol::of_char).collect();
            assert_eq!(symbols(text).collect::<Vec<u8>>(), by_char, "{text:?}");
            assert_eq!(lossy_symbols(text.as_bytes()).collect::<Vec<u8>>(), by_char);
        }
    }

    #[test]
    fn only_ascii_letters_fold() {
        for text in [
            "İnternal error",
            "ınternal error",
            "overloadſd",
            "ſervice unavailable",
        ] {
            assert!(!Classifier::Classic.matches_retryable(text), "{text}");
        }
        assert!(!Classifier::Classic.matches_retryable("rate lımit"));
        assert!(!Classifier::Classic.matches_retryable("rate \u{212A}imit"));
        assert!(!Classifier::Classic.matches_overflow("too many to\u{212A}ens"));
        assert!(Classifier::Classic.matches_retryable("InTeRnAl ErRoR"));
        assert!(Classifier::Classic.matches_overflow("TOO MANY TOKENS"));
        assert!(Classifier::Classic.matches_usage_limit("USAGE_LIMIT_REACHED"));
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
            assert!(Classifier::Classic.matches_retryable(ok), "{ok}");
        }
        for no in [
            "rate\nlimit",
            "rate\rlimit",
            "rate\u{2028}limit",
            "rate\u{2029}limit",
            "rate  limit",
            "rate😀😀limit",
        ] {
            assert!(!Classifier::Classic.matches_retryable(no), "{no:?}");
        }
        assert!(
            Classifier::Classic.matches_overflow("input token count 1 — 😀 exceeds the maximum")
        );
        assert!(
            !Classifier::Classic.matches_overflow("input token count\u{2028}exceeds the maximum")
        );
        assert!(
            !Classifier::Classic.matches_overflow("input token count\u{2029}exceeds the maximum")
        );
    }

    #[test]
    fn digits_and_white_space_are_ascii() {
        assert!(Classifier::Classic.matches_overflow("maximum prompt length is 5"));
        assert!(!Classifier::Classic.matches_overflow("maximum prompt length is ٥"));
        assert!(Classifier::Classic.matches_overflow("400\u{0B}\u{0C}\t\r\n (no body)"));
        assert!(!Classifier::Classic.matches_overflow("400\u{A0}(no body)"));
        assert!(!Classifier::Classic.matches_overflow("400\u{2003}(no body)"));
        assert!(!Classifier::Classic.matches_overflow(" 400 (no body)"));
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
                assert_eq!(
                    Classifier::Classic.matches_retryable_bytes(&bytes),
                    Classifier::Classic.matches_retryable(&lossy)
                );
                assert_eq!(
                    Classifier::Classic.matches_overflow_bytes(&bytes),
                    Classifier::Classic.matches_overflow(&lossy)
                );
                assert_eq!(
                    Classifier::Classic.matches_usage_limit_bytes(&bytes),
                    Classifier::Classic.matches_usage_limit(&lossy)
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
        assert!(Classifier::Classic.matches_retryable_bytes(b"rate\xE2\x80limit"));
        assert!(!Classifier::Classic.matches_retryable_bytes(b"rate\xE2\x80\xE2\x80limit"));
        assert!(!Classifier::Classic.matches_retryable_bytes(b"rate\xC0\xAFlimit"));
        assert!(Classifier::Classic.matches_retryable_bytes(b"rate\xF0\x9F\x98limit"));
    }

    #[test]
    fn long_texts_are_fine() {
        let mut text = String::new();
        for _ in 0..10_000 {
            text.push_str("input prompt requested tokens context ");
        }
        assert!(!Classifier::Classic.matches_overflow(&text));
        text.push_str("window exceeded");
        assert!(Classifier::Classic.matches_overflow(&text));
        assert!(Classifier::Classic.matches_overflow_bytes(text.as_bytes()));
    }
}
