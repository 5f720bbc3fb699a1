//! Response headers (spec 13.1): the list a message carries ([`Headers`])
//! and the pure reading of the two fields of 10.2 from it
//! ([`read_headers`], [`HeaderHints`]).
//!
//! The reading is a function of any iterator of name/value pairs (`&str`,
//! bytes, `http::HeaderMap`'s items) and an optional wall clock; it is
//! `no_std`, allocates nothing and never panics.
//!
//! ```
//! use autoretry::{read_headers, HeaderHints};
//!
//! let headers = [("Retry-After", "120"), ("x-should-retry", "true")];
//! assert_eq!(
//!     read_headers(headers, None),
//!     HeaderHints { should_retry: Some(true), retry_after_ms: Some(120_000) },
//! );
//! ```

use core::fmt;
use core::hash::{Hash, Hasher};

use crate::classify::{duration_ms, imf_fixdate_ms, numeral_ms, rfc3339_ms};

/// What [`read_headers`] found: the two message fields of spec 10.2, each
/// `None` when the headers do not give it.
///
/// ```
/// use autoretry::HeaderHints;
/// assert_eq!(HeaderHints::default(), HeaderHints { should_retry: None, retry_after_ms: None });
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct HeaderHints {
    /// `shouldRetry`, from `x-should-retry` (`true` or `false`, in any ASCII
    /// case).
    pub should_retry: Option<bool>,
    /// `retryAfterMs`, from `retry-after-ms`, else `retry-after`, else the
    /// rate-limit buckets.
    pub retry_after_ms: Option<u64>,
}

/// The rate-limit buckets of spec 13.1: reset header, whether its value is
/// an RFC 3339 time (else a duration, 13.4), remaining header.
const BUCKETS: [(&str, bool, &str); 6] = [
    (
        "x-ratelimit-reset-requests",
        false,
        "x-ratelimit-remaining-requests",
    ),
    (
        "x-ratelimit-reset-tokens",
        false,
        "x-ratelimit-remaining-tokens",
    ),
    (
        "anthropic-ratelimit-requests-reset",
        true,
        "anthropic-ratelimit-requests-remaining",
    ),
    (
        "anthropic-ratelimit-tokens-reset",
        true,
        "anthropic-ratelimit-tokens-remaining",
    ),
    (
        "anthropic-ratelimit-input-tokens-reset",
        true,
        "anthropic-ratelimit-input-tokens-remaining",
    ),
    (
        "anthropic-ratelimit-output-tokens-reset",
        true,
        "anthropic-ratelimit-output-tokens-remaining",
    ),
];

/// Reads the response headers as spec 13.1 says: `shouldRetry` from
/// `x-should-retry`, and `retryAfterMs` from the first of `retry-after-ms`
/// (a numeral of ms), `retry-after` (a numeral of seconds, or with
/// `now_ms` an IMF-fixdate) and the rate-limit buckets (OpenAI's
/// `x-ratelimit-reset-*` durations such as `6m0s`; Anthropic's
/// `anthropic-ratelimit-*-reset` RFC 3339 times, with `now_ms`) that yields
/// a value. Of the buckets, the latest reset among the spent ones
/// (remaining `0`) counts, or when none is spent the latest of all.
///
/// Names compare ASCII-case-insensitively; a value is read without its
/// leading and trailing spaces and tabs (a `\r` or `\n` stays, and spoils
/// it); only the first occurrence of each name is read, even when it yields
/// nothing. `now_ms` is the wall clock in Unix ms: without it, dates yield
/// nothing. Arithmetic is exact (numerals are rounded up to a whole ms) and
/// saturates at `u64::MAX`; a date in the past gives 0.
///
/// Names and values are anything that is bytes: `&str`, `String`,
/// `&[u8]`, or the `HeaderName` and `HeaderValue` of the `http` crate (so a
/// `&HeaderMap` of reqwest or hyper goes in as it is).
///
/// ```
/// use autoretry::read_headers;
///
/// let at = |headers: &[(&str, &str)], now| read_headers(headers.iter().copied(), now).retry_after_ms;
/// assert_eq!(at(&[("retry-after-ms", "0.1")], None), Some(1));
/// assert_eq!(at(&[("retry-after", " 1.5\t")], None), Some(1500));
/// // An HTTP date needs the clock.
/// let date = [("retry-after", "Mon, 21 Sep 2026 14:14:00 GMT")];
/// assert_eq!(at(&date, Some(1_790_000_000_000)), Some(40_000));
/// assert_eq!(at(&date, None), None);
/// // The spent bucket's reset, not the later one of the other bucket.
/// let buckets = [
///     ("x-ratelimit-remaining-requests", "0"),
///     ("x-ratelimit-reset-requests", "1s"),
///     ("x-ratelimit-reset-tokens", "6m0s"),
/// ];
/// assert_eq!(at(&buckets, None), Some(1000));
/// // Only the first occurrence of a name is read.
/// let twice = [("x-should-retry", "false"), ("X-Should-Retry", "true")];
/// assert_eq!(read_headers(twice, None).should_retry, Some(false));
/// ```
pub fn read_headers<I, N, V>(headers: I, now_ms: Option<u64>) -> HeaderHints
where
    I: IntoIterator<Item = (N, V)>,
    N: AsRef<[u8]>,
    V: AsRef<[u8]>,
{
    let mut reading = Reading::default();
    for (name, value) in headers {
        reading.pair(name.as_ref(), value.as_ref(), now_ms);
    }
    reading.hints()
}

/// What the first occurrence of each name yielded, so far: for each name,
/// the outer `Some` says its first occurrence was seen, the inner value what
/// it yielded. (Not generic, so every caller shares one copy of the rules.)
#[derive(Default)]
struct Reading {
    should_retry: Option<Option<bool>>,
    retry_after_ms: Option<Option<u64>>,
    retry_after: Option<Option<u64>>,
    resets: [Option<Option<u64>>; 6],
    spent: [Option<bool>; 6],
}

impl Reading {
    /// One header field, in order.
    fn pair(&mut self, name: &[u8], value: &[u8], now_ms: Option<u64>) {
        let value = trim(value);
        let is = |wanted: &str| name.eq_ignore_ascii_case(wanted.as_bytes());
        if is("x-should-retry") {
            self.should_retry.get_or_insert_with(|| {
                if value.eq_ignore_ascii_case(b"true") {
                    Some(true)
                } else if value.eq_ignore_ascii_case(b"false") {
                    Some(false)
                } else {
                    None
                }
            });
        } else if is("retry-after-ms") {
            self.retry_after_ms
                .get_or_insert_with(|| numeral_ms(value, 1));
        } else if is("retry-after") {
            self.retry_after.get_or_insert_with(|| {
                numeral_ms(value, 1000).or_else(|| until(imf_fixdate_ms(value)?, now_ms?))
            });
        } else {
            for (i, &(reset, is_time, remaining)) in BUCKETS.iter().enumerate() {
                if is(reset) {
                    if let Some(slot) = self.resets.get_mut(i) {
                        slot.get_or_insert_with(|| {
                            if is_time {
                                until(rfc3339_ms(value)?, now_ms?)
                            } else {
                                duration_ms(value)
                            }
                        });
                    }
                } else if is(remaining) {
                    if let Some(slot) = self.spent.get_mut(i) {
                        slot.get_or_insert(value == b"0");
                    }
                }
            }
        }
    }

    /// The two fields, once every pair was read.
    fn hints(&self) -> HeaderHints {
        let yielded = self
            .resets
            .iter()
            .zip(&self.spent)
            .filter_map(|(reset, spent)| {
                let reset = reset.flatten()?;
                Some((reset, spent.unwrap_or(false)))
            });
        let latest_spent = yielded
            .clone()
            .filter(|&(_, spent)| spent)
            .map(|(reset, _)| reset)
            .max();
        let bucket = latest_spent.or_else(|| yielded.map(|(reset, _)| reset).max());
        HeaderHints {
            should_retry: self.should_retry.flatten(),
            retry_after_ms: self
                .retry_after_ms
                .flatten()
                .or(self.retry_after.flatten())
                .or(bucket),
        }
    }
}

/// The value without its leading and trailing spaces and tabs.
fn trim(mut value: &[u8]) -> &[u8] {
    while let [b' ' | b'\t', rest @ ..] = value {
        value = rest;
    }
    while let [rest @ .., b' ' | b'\t'] = value {
        value = rest;
    }
    value
}

/// `max(0, at − now)` in ms, saturating.
fn until(at: i64, now: u64) -> Option<u64> {
    let diff = i128::from(at) - i128::from(now);
    Some(u64::try_from(diff.max(0)).unwrap_or(u64::MAX))
}

/// The response headers a message carries (spec 13.1, the message field
/// `headers`): `[name, value]` pairs in the order received, borrowed.
///
/// Empty by default (the field absent). It lends its pairs to
/// [`read_headers`] through [`Headers::iter`]; the machine reads it for
/// every `agent_end` (see [`AssistantMessage::with_header_hints`](crate::AssistantMessage::with_header_hints)).
///
/// ```
/// use autoretry::{Headers, HeaderHints};
///
/// let pairs = [("retry-after", "5")];
/// let headers = Headers::new(&pairs);
/// assert_eq!(headers.len(), 1);
/// assert_eq!(headers.read(None), HeaderHints { should_retry: None, retry_after_ms: Some(5000) });
/// assert!(Headers::NONE.is_empty());
/// ```
#[derive(Clone, Copy)]
pub struct Headers<'a>(Repr<'a>);

#[derive(Clone, Copy)]
enum Repr<'a> {
    Borrowed(&'a [(&'a str, &'a str)]),
    #[cfg(feature = "std")]
    Owned(&'a [OwnedPair]),
}

/// A pair as [`MessageBuf`](crate::MessageBuf) owns it (without std, a type
/// no value is ever made of).
#[cfg(feature = "std")]
type OwnedPair = (std::string::String, std::string::String);
#[cfg(not(feature = "std"))]
type OwnedPair = (&'static str, &'static str);

/// An owned pair, borrowed.
fn as_strs(pair: &OwnedPair) -> (&str, &str) {
    let (name, value) = pair;
    (name, value)
}

impl<'a> Headers<'a> {
    /// No headers: the field absent.
    pub const NONE: Headers<'static> = Headers(Repr::Borrowed(&[]));

    /// Borrows these pairs.
    pub const fn new(pairs: &'a [(&'a str, &'a str)]) -> Self {
        Headers(Repr::Borrowed(pairs))
    }

    /// Borrows owned pairs (what [`MessageBuf`](crate::MessageBuf) holds).
    ///
    /// ```
    /// use autoretry::Headers;
    /// let owned = vec![("retry-after".to_string(), "5".to_string())];
    /// assert_eq!(Headers::from_owned(&owned), Headers::new(&[("retry-after", "5")]));
    /// ```
    #[cfg(feature = "std")]
    pub fn from_owned(pairs: &'a [(std::string::String, std::string::String)]) -> Self {
        Headers(Repr::Owned(pairs))
    }

    /// The pairs, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&'a str, &'a str)> + Clone + 'a {
        let (borrowed, owned) = match self.0 {
            Repr::Borrowed(pairs) => (pairs, None),
            #[cfg(feature = "std")]
            Repr::Owned(pairs) => (&[][..], Some(pairs)),
        };
        let owned: Option<&'a [OwnedPair]> = owned;
        let owned = owned.into_iter().flatten().map(as_strs);
        borrowed.iter().copied().chain(owned)
    }

    /// The number of pairs.
    pub fn len(&self) -> usize {
        match self.0 {
            Repr::Borrowed(pairs) => pairs.len(),
            #[cfg(feature = "std")]
            Repr::Owned(pairs) => pairs.len(),
        }
    }

    /// Whether there are no pairs.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// [`read_headers`] on these pairs.
    pub fn read(&self, now_ms: Option<u64>) -> HeaderHints {
        read_headers(self.iter(), now_ms)
    }
}

impl Default for Headers<'_> {
    fn default() -> Self {
        Headers::NONE
    }
}

impl<'a> From<&'a [(&'a str, &'a str)]> for Headers<'a> {
    fn from(pairs: &'a [(&'a str, &'a str)]) -> Self {
        Headers::new(pairs)
    }
}

impl PartialEq for Headers<'_> {
    /// The same pairs in the same order, however they are held.
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Headers<'_> {}

impl Hash for Headers<'_> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        state.write_usize(self.len());
        for pair in self.iter() {
            pair.hash(state);
        }
    }
}

impl fmt::Debug for Headers<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Headers<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        defmt::write!(f, "[");
        for (i, (name, value)) in self.iter().enumerate() {
            if i > 0 {
                defmt::write!(f, ", ");
            }
            defmt::write!(f, "({=str}, {=str})", name, value);
        }
        defmt::write!(f, "]");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(headers: &[(&str, &str)], now: Option<u64>) -> HeaderHints {
        read_headers(headers.iter().copied(), now)
    }

    #[test]
    fn values_are_trimmed_of_spaces_and_tabs_only() {
        assert_eq!(
            read(&[("retry-after", " \t7 \t")], None).retry_after_ms,
            Some(7000)
        );
        assert_eq!(read(&[("retry-after", "7\r")], None).retry_after_ms, None);
        assert_eq!(read(&[("retry-after", "\n7")], None).retry_after_ms, None);
        assert_eq!(
            read(&[("x-should-retry", " TRUE ")], None).should_retry,
            Some(true)
        );
        assert_eq!(read(&[(" retry-after", "7")], None).retry_after_ms, None);
    }

    #[test]
    fn the_first_occurrence_only() {
        let h = [
            ("retry-after-ms", "x"),
            ("retry-after-ms", "5"),
            ("retry-after", "1"),
        ];
        assert_eq!(read(&h, None).retry_after_ms, Some(1000));
        let h = [
            ("x-ratelimit-remaining-tokens", "5"),
            ("x-ratelimit-remaining-tokens", "0"),
            ("x-ratelimit-reset-tokens", "1s"),
            ("x-ratelimit-reset-requests", "2s"),
        ];
        assert_eq!(read(&h, None).retry_after_ms, Some(2000));
        let h = [
            ("x-ratelimit-reset-tokens", "junk"),
            ("x-ratelimit-reset-tokens", "9s"),
            ("x-ratelimit-reset-requests", "2s"),
        ];
        assert_eq!(read(&h, None).retry_after_ms, Some(2000));
    }

    #[test]
    fn buckets() {
        let now = Some(1_790_000_000_000);
        // A spent bucket without a reset that yields does not count.
        let h = [
            ("anthropic-ratelimit-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", "2026-09-21T14:14:20Z"),
            ("anthropic-ratelimit-requests-reset", "2026-09-21T15:14:20Z"),
        ];
        assert_eq!(read(&h, None).retry_after_ms, None);
        assert_eq!(read(&h, now).retry_after_ms, Some(60_000));
        let h = [
            ("anthropic-ratelimit-output-tokens-remaining", "0"),
            ("anthropic-ratelimit-tokens-reset", "2026-09-21T14:14:20Z"),
            ("x-ratelimit-reset-tokens", "5s"),
        ];
        assert_eq!(read(&h, now).retry_after_ms, Some(60_000));
        assert_eq!(read(&h, None).retry_after_ms, Some(5_000));
        // Two spent: the later.
        let h = [
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-remaining-tokens", " 0\t"),
            ("x-ratelimit-reset-requests", "3s"),
            ("x-ratelimit-reset-tokens", "2s"),
            ("anthropic-ratelimit-tokens-reset", "2026-09-21T15:14:20Z"),
        ];
        assert_eq!(read(&h, now).retry_after_ms, Some(3_000));
        // An RFC 3339 time is no retry-after, nor a duration a reset time.
        assert_eq!(
            read(&[("retry-after", "2026-09-21T14:14:20Z")], now).retry_after_ms,
            None
        );
        assert_eq!(
            read(&[("anthropic-ratelimit-tokens-reset", "5s")], now).retry_after_ms,
            None
        );
    }

    #[test]
    fn saturates() {
        let h = [("retry-after", "99999999999999999999")];
        assert_eq!(read(&h, None).retry_after_ms, Some(u64::MAX));
        let h = [("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT")];
        assert_eq!(read(&h, Some(u64::MAX)).retry_after_ms, Some(0));
        let h = [("retry-after", "Fri, 31 Dec 9999 23:59:59 GMT")];
        assert_eq!(read(&h, Some(0)).retry_after_ms, Some(253_402_300_799_000));
    }

    #[test]
    fn bytes_and_owned_pairs() {
        let bytes: [(&[u8], &[u8]); 2] = [(b"retry-after", b"\xff"), (b"x-should-retry", b"true")];
        assert_eq!(
            read_headers(bytes, None),
            HeaderHints {
                should_retry: Some(true),
                retry_after_ms: None
            }
        );
    }
}
