//! Retry hints (spec section 3.5), parsed by hand on bytes.
//!
//! Invalid UTF-8 needs no decoding here: every byte of an invalid sequence is
//! at least 0x80, so it is a non-ASCII "other" character exactly like the
//! U+FFFD that `String::from_utf8_lossy` would put in its place (it breaks a
//! name, white space and digits, and belongs to a rule 2 token, which then
//! matches neither grammar).
//!
//! Numbers are read in integers only (`super::decimal`), rule 2's double
//! included. Every function is linear in the length of the text and never
//! panics.

use super::date::rfc3339_ms;
use super::decimal;

/// Rule 1: a delay in milliseconds.
const RETRY_AFTER_MS: &[u8] = b"retry-after-ms";
/// Rule 2: seconds (a decimal number) or an RFC 3339 timestamp.
const RETRY_AFTER: &[u8] = b"retry-after";
/// Rule 3: milliseconds, or an epoch in milliseconds above [`MS_CUTOFF`].
const RESET_MS: &[u8] = b"x-ratelimit-reset-ms";
/// Rule 4: seconds, or an epoch in seconds above [`S_CUTOFF`].
const RESET_S: &[u8] = b"x-ratelimit-reset";
/// Rule 3: values up to this are a delay, larger ones an epoch.
const MS_CUTOFF: u64 = 1_000_000_000_000;
/// Rule 4: values up to this are a delay, larger ones an epoch.
const S_CUTOFF: u64 = 1_000_000_000;

/// Extracts the retry hint of spec section 3.5 from an error text, in
/// milliseconds.
///
/// The rules are tried in order (`retry-after-ms`, `retry-after`,
/// `x-ratelimit-reset-ms`, `x-ratelimit-reset`); a rule that finds nothing,
/// or yields nothing, passes on to the next. Each one takes the first place
/// where its whole form matches: its name (ASCII case-insensitively, even
/// inside a longer word), optional ASCII white space, `:` or `=`, optional
/// white space, then a digit (or, for `retry-after`, a token character: not
/// white space, `,` or `;`). `now_ms` is the host's wall clock in Unix
/// milliseconds; without it, timestamps and epochs yield nothing. All
/// arithmetic saturates.
///
/// ```
/// use autoretry::classify::retry_hint_ms;
///
/// assert_eq!(retry_hint_ms("usage_limit_reached retry-after-ms=11180000", None), Some(11_180_000));
/// assert_eq!(retry_hint_ms("Retry-After: 1.5", None), Some(1500));
/// assert_eq!(
///     retry_hint_ms("retry-after: 1970-01-01T00:01:00Z", Some(15_000)),
///     Some(45_000),
/// );
/// assert_eq!(retry_hint_ms("x-ratelimit-reset: 60", None), Some(60_000));
/// // The first place where the whole form matches: a name without digits
/// // after it does not count.
/// assert_eq!(retry_hint_ms("retry-after-ms: soon, retry-after-ms: 5", None), Some(5));
/// assert_eq!(retry_hint_ms("try again later", None), None);
/// ```
pub fn retry_hint_ms(text: &str, now_ms: Option<u64>) -> Option<u64> {
    retry_hint_ms_bytes(text.as_bytes(), now_ms)
}

/// [`retry_hint_ms`] on raw bytes, read as `String::from_utf8_lossy` would
/// read them (without allocating).
///
/// ```
/// use autoretry::classify::retry_hint_ms_bytes;
///
/// assert_eq!(retry_hint_ms_bytes(b"\xFF retry-after: 2", None), Some(2000));
/// // An invalid byte inside the value makes it no number.
/// assert_eq!(retry_hint_ms_bytes(b"retry-after: 2\xFF", None), None);
/// ```
pub fn retry_hint_ms_bytes(bytes: &[u8], now_ms: Option<u64>) -> Option<u64> {
    rule_retry_after_ms(bytes)
        .or_else(|| rule_retry_after(bytes, now_ms))
        .or_else(|| rule_reset_ms(bytes, now_ms))
        .or_else(|| rule_reset_s(bytes, now_ms))
}

/// Rule 1 of spec 3.5.
pub(super) fn rule_retry_after_ms(text: &[u8]) -> Option<u64> {
    value_after(text, RETRY_AFTER_MS, is_digit).map(leading_digits)
}

/// Rule 2 of spec 3.5.
pub(super) fn rule_retry_after(text: &[u8], now_ms: Option<u64>) -> Option<u64> {
    let value = value_after(text, RETRY_AFTER, is_token)?;
    let end = value
        .iter()
        .position(|&b| !is_token(b))
        .unwrap_or(value.len());
    let token = value.get(..end)?;
    if let Some(ms) = decimal::seconds_ms(token) {
        return Some(ms);
    }
    let at = rfc3339_ms(token)?;
    let diff = i128::from(at).saturating_sub(i128::from(now_ms?));
    Some(u64::try_from(diff.max(0)).unwrap_or(u64::MAX))
}

/// Rule 3 of spec 3.5.
pub(super) fn rule_reset_ms(text: &[u8], now_ms: Option<u64>) -> Option<u64> {
    let v = leading_digits(value_after(text, RESET_MS, is_digit)?);
    if v <= MS_CUTOFF {
        Some(v)
    } else {
        Some(v.saturating_sub(now_ms?))
    }
}

/// Rule 4 of spec 3.5.
pub(super) fn rule_reset_s(text: &[u8], now_ms: Option<u64>) -> Option<u64> {
    let v = leading_digits(value_after(text, RESET_S, is_digit)?);
    if v <= S_CUTOFF {
        Some(v.saturating_mul(1000))
    } else {
        Some(v.saturating_mul(1000).saturating_sub(now_ms?))
    }
}

fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

/// A character of a rule 2 token: anything but ASCII white space, `,` and
/// `;` (a byte of a non-ASCII character, or of an invalid sequence, is one).
fn is_token(b: u8) -> bool {
    !is_ws(b) && b != b',' && b != b';'
}

/// ASCII white space, as `\s` of spec 3.1.
fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

fn skip_ws(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_ws(b)).count();
    s.get(n..).unwrap_or_default()
}

/// The text after the first `name WS [:=] WS` whose next byte passes
/// `starts` (name ASCII case-insensitive; `name` is lowercase), from that
/// byte on.
///
/// Linear: names start with a letter and contain no white space, so no
/// occurrence of `name` starts inside the white space and separator that
/// follow an earlier one, and each byte is read for at most one
/// occurrence (besides the name comparisons, bounded by the name's length).
pub(super) fn value_after<'t>(
    text: &'t [u8],
    name: &[u8],
    starts: fn(u8) -> bool,
) -> Option<&'t [u8]> {
    let first = name.first()?;
    let mut rest = text;
    while let Some(at) = rest.iter().position(|b| b.to_ascii_lowercase() == *first) {
        rest = rest.get(at..)?;
        if rest.len() < name.len() {
            return None;
        }
        let (candidate, after) = rest.split_at(name.len());
        if candidate.eq_ignore_ascii_case(name) {
            if let [b':' | b'=', value @ ..] = skip_ws(after) {
                let value = skip_ws(value);
                if value.first().is_some_and(|&b| starts(b)) {
                    return Some(value);
                }
            }
        }
        rest = rest.get(1..)?;
    }
    None
}

/// Leading ASCII digits, saturating at `u64::MAX` (0 for none).
fn leading_digits(s: &[u8]) -> u64 {
    let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
    decimal::saturating_digits(s.get(..n).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::{format, string::String};

    fn hint(text: &str) -> Option<u64> {
        retry_hint_ms(text, None)
    }

    #[test]
    fn rule_1_milliseconds() {
        assert_eq!(hint("retry-after-ms=11180000"), Some(11_180_000));
        assert_eq!(hint("RETRY-AFTER-MS :\t 0"), Some(0));
        assert_eq!(hint("x-retry-after-ms: 12abc"), Some(12));
        assert_eq!(
            hint("retry-after-ms: 99999999999999999999999999"),
            Some(u64::MAX)
        );
    }

    #[test]
    fn rule_2_numbers() {
        assert_eq!(hint("retry-after: 120"), Some(120_000));
        assert_eq!(hint("x-retry-after: 5"), Some(5_000));
        assert_eq!(hint("Retry-After=1.005"), Some(1004));
        assert_eq!(hint("retry-after: 5."), Some(5_000));
        assert_eq!(hint("retry-after: .5"), Some(500));
        assert_eq!(hint("retry-after: +2e1,"), Some(20_000));
        assert_eq!(hint("retry-after: 1E-3;"), Some(1));
        assert_eq!(hint("retry-after: -5"), Some(0));
        assert_eq!(hint("retry-after: -0"), Some(0));
        assert_eq!(hint("retry-after: 1e300"), Some(u64::MAX));
        assert_eq!(hint("retry-after: 18446744073709551.616"), Some(u64::MAX));
        assert_eq!(hint("retry-after: 1e99999999999999999999"), Some(u64::MAX));
        for bad in [
            "inf", "NaN", "0x10", "1_000", ".", "+", "e5", "5e", "5e+", "1.2.3", "5s", "Infinity",
        ] {
            let text = format!("retry-after: {bad}");
            assert_eq!(hint(&text), None, "{bad}");
        }
    }

    #[test]
    fn rule_2_timestamps() {
        let now = Some(1_000);
        let at = |t: &str, now| retry_hint_ms(&format!("retry-after: {t}"), now);
        assert_eq!(at("1970-01-01T00:00:01Z", now), Some(0));
        assert_eq!(at("1970-01-01T00:00:02.5Z", now), Some(1_500));
        assert_eq!(at("1970-01-01t00:00:02.123999z", now), Some(1_123));
        assert_eq!(at("1970-01-01T00:01Z", now), Some(59_000));
        assert_eq!(at("1970-01-01T01:00:00+01:00", Some(0)), Some(0));
        assert_eq!(at("1969-12-31T23:00:00-01:00", Some(0)), Some(0));
        assert_eq!(at("1969-12-31T23:59:59Z", Some(0)), Some(0));
        assert_eq!(at("0000-01-01T00:00:00Z", Some(u64::MAX)), Some(0));
        assert_eq!(at("2024-02-29T00:00:00Z", Some(0)), Some(1_709_164_800_000));
        assert_eq!(
            at("9999-12-31T23:59:59.999Z", Some(0)),
            Some(253_402_300_799_999)
        );
        assert_eq!(at("2000-02-29T00:00:00Z", Some(0)), Some(951_782_400_000));
        // Without a clock, a timestamp yields nothing.
        assert_eq!(at("2024-02-29T00:00:00Z", None), None);
        for bad in [
            "2023-02-29T00:00:00Z",
            "1900-02-29T00:00:00Z",
            "2024-04-31T00:00:00Z",
            "2024-13-01T00:00:00Z",
            "2024-00-01T00:00:00Z",
            "2024-01-00T00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:60:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01T00:00:00+24:00",
            "2024-01-01T00:00:00+00:60",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T00:00:00ZZ",
            "24-01-01T00:00:00Z",
            "2024-1-01T00:00:00Z",
            "2024-01-01T00Z",
            "2024-01-01T00:00:00+0000",
        ] {
            assert_eq!(at(bad, Some(0)), None, "{bad}");
        }
    }

    #[test]
    fn rules_3_and_4() {
        assert_eq!(hint("x-ratelimit-reset-ms: 1000000000000"), Some(MS_CUTOFF));
        assert_eq!(hint("x-ratelimit-reset-ms: 1000000000001"), None);
        assert_eq!(
            retry_hint_ms(
                "x-ratelimit-reset-ms: 1000000005000",
                Some(1_000_000_000_000)
            ),
            Some(5_000)
        );
        assert_eq!(
            retry_hint_ms(
                "x-ratelimit-reset-ms: 1000000005000",
                Some(2_000_000_000_000)
            ),
            Some(0)
        );
        assert_eq!(
            hint("x-ratelimit-reset: 1000000000"),
            Some(1_000_000_000_000)
        );
        assert_eq!(hint("x-ratelimit-reset: 1000000001"), None);
        assert_eq!(
            retry_hint_ms("X-RateLimit-Reset: 1000000005", Some(1_000_000_000_000)),
            Some(5_000)
        );
        // Spec 3.5: digits saturate, then each operation saturates in turn.
        assert_eq!(
            retry_hint_ms(
                "x-ratelimit-reset: 1000000000000000000000000000000",
                Some(7)
            ),
            Some(u64::MAX - 7)
        );
        assert_eq!(
            retry_hint_ms(
                "x-ratelimit-reset-ms: 1000000000000000000000000000000",
                Some(7)
            ),
            Some(u64::MAX - 7)
        );
    }

    #[test]
    fn rules_in_order_and_pass_on() {
        // Rule 1 wins over rule 2 wherever they are.
        assert_eq!(hint("retry-after: 1 retry-after-ms: 7"), Some(7));
        // A rule that finds its name but yields nothing passes on.
        assert_eq!(hint("retry-after-ms: soon; retry-after: 2"), Some(2_000));
        assert_eq!(
            hint("retry-after: 2024-01-01T00:00:00Z x-ratelimit-reset: 3"),
            Some(3_000)
        );
        assert_eq!(
            hint("x-ratelimit-reset-ms: 9999999999999 x-ratelimit-reset: 4"),
            Some(4_000)
        );
        // `retry-after-ms` does not count as `retry-after` (no separator
        // follows the shorter name) and vice versa.
        assert_eq!(hint("retry-after-ms"), None);
        assert_eq!(hint("x-ratelimit-reset-ms=x"), None);
    }

    #[test]
    fn first_position_is_where_the_whole_form_matches() {
        // Occurrences without `:`/`=` are skipped.
        assert_eq!(hint("retry-after soon, retry-after: 3"), Some(3_000));
        assert_eq!(hint("retry-after-ms 5 retry-after-ms = 6"), Some(6));
        // Spec 3.5: the value must start with a digit (rules 1, 3, 4) or a
        // token character (rule 2) for the position to count.
        assert_eq!(hint("retry-after-ms: soon, retry-after-ms: 5"), Some(5));
        assert_eq!(hint("retry-after-ms: x retry-after-ms: 6"), Some(6));
        assert_eq!(hint("retry-after-ms:, retry-after-ms=7"), Some(7));
        assert_eq!(
            hint("x-ratelimit-reset-ms: -1 x-ratelimit-reset-ms: 8"),
            Some(8)
        );
        assert_eq!(
            hint("x-ratelimit-reset: ; x-ratelimit-reset: 9"),
            Some(9_000)
        );
        assert_eq!(hint("retry-after: , retry-after: 4"), Some(4_000));
        assert_eq!(hint("retry-after: ;retry-after: 4"), Some(4_000));
        // A token that is there but no number passes on to rule 3; a later
        // `retry-after` is not looked at.
        assert_eq!(hint("retry-after: soon, retry-after: 5"), None);
        assert_eq!(
            hint("retry-after: soon, retry-after: 5 x-ratelimit-reset-ms: 6"),
            Some(6)
        );
        assert_eq!(hint("retry-after: soon retry-after: 3"), None);
        // White space on both sides of the separator, of any ASCII kind,
        // `\v` included, or none.
        assert_eq!(hint("retry-after \u{b}\u{c}\r\n:\t\u{b} 3"), Some(3_000));
        assert_eq!(hint("retry-after-ms\u{b}=\u{b}3"), Some(3));
        assert_eq!(hint("retry-after-ms=3"), Some(3));
        assert_eq!(hint("retry-after\u{a0}: 3"), None);
        assert_eq!(hint("retry-after:\u{a0}3"), None);
        assert_eq!(hint("retry-after-ms:\u{a0}3 retry-after-ms: 4"), Some(4));
        // The name inside a longer word.
        assert_eq!(hint("x-retry-after: 5"), Some(5_000));
        assert_eq!(hint("xretry-after-msx: 5 retry-after-ms: 6"), Some(6));
        // Overlapping candidates.
        assert_eq!(hint("retry-afretry-after: 1"), Some(1_000));
        assert_eq!(hint("rretry-after=1"), Some(1_000));
        // Case and non-ASCII look-alikes.
        assert_eq!(hint("RETRY-AFTER: 1"), Some(1_000));
        assert_eq!(hint("retry-aſter: 1"), None);
        assert_eq!(hint("retry-after: "), None);
        assert_eq!(hint("retry-after:"), None);
        assert_eq!(hint(""), None);
    }

    #[test]
    fn bytes_read_like_lossy_utf8() {
        let cases: [&[u8]; 6] = [
            b"retry-after: 5\xFF",
            b"\xF0\x9F\x98 retry-after: 5",
            b"retry-after:\xC3 5",
            b"retry-\xE2\x80after: 5",
            b"x-ratelimit-reset: \xED\xA0\x80 7",
            b"retry-after-ms: 12\xC0\xAF",
        ];
        for bytes in cases {
            let lossy = String::from_utf8_lossy(bytes);
            assert_eq!(
                retry_hint_ms_bytes(bytes, Some(0)),
                retry_hint_ms(&lossy, Some(0)),
                "{bytes:?}"
            );
        }
    }

    #[test]
    fn long_inputs_are_linear() {
        // Quadratic rescans of white space or names would take minutes here.
        let mut text = String::new();
        for _ in 0..20_000 {
            text.push_str("retry-after ");
        }
        text.push_str("retry-after: 9");
        assert_eq!(hint(&text), Some(9_000));
        let spaces = format!("retry-after{}x", " ".repeat(200_000));
        assert_eq!(hint(&spaces), None);
        let digits = format!("retry-after-ms: {}", "9".repeat(200_000));
        assert_eq!(hint(&digits), Some(u64::MAX));
    }
}
