//! Hints from the text under the curated classifier (spec 13.2): the
//! rules of 10.4 (`super::wait_hint`), with rule 6 reading a duration of
//! 13.4 (`super::duration`), and three rules after it: 6a (`retry after`,
//! `try again after`), 6b (`"resets_in_seconds"`) and 6c (`usage limit
//! reached|<epoch>`).
//!
//! Like `super::wait_hint`, every rule reads bytes without decoding (the
//! bytes of a non-ASCII character or of an invalid sequence are neither
//! digits, letters nor white space, exactly like the character or the
//! U+FFFD they stand for), in linear time, without panicking.

use super::wait_hint::{
    first_match, rule_please_retry_in, rule_reset_after, rule_retry_delay, skip_ws, split_digits,
    starts_with_ci,
};
use super::{decimal, duration, hint};

/// Extracts the hint of spec 13.2 from an error text, in milliseconds: the
/// wait the curated classifier reads (under `honorHints`, and for the
/// usage-limit hand-off and the long-wait rule).
///
/// The rules are tried in order, and the first that yields a value wins:
///
/// - rules 1 to 5: `retry-after-ms`, `retry-after`, `reset after
///   1h30m10s`, `please retry in 41.8s`, `"retryDelay": "3s"` (as in
///   [`wait_hint_ms`](super::wait_hint_ms));
/// - rule 6, `try again in ~5 min`: the duration (spec 13.4: `6m0s`,
///   `23h47m36.648s`, `5 days 22 hours`) right after the first
///   `try again in` followed by white space (past a `~` and white space);
/// - rule 6a: the duration right after the first `retry after` or `try
///   again after` followed by white space;
/// - rule 6b, `"resets_in_seconds": 600`: that many seconds;
/// - rule 6c, `usage limit reached|1767225600`: a Unix time in seconds,
///   less `now_ms` (nothing without a clock);
/// - rules 7 and 8: `x-ratelimit-reset-ms`, `x-ratelimit-reset`.
///
/// Rules 3 to 6c never yield 0 (a 0 passes on to the next rule); rules 6
/// and 6a yield nothing, and try no later occurrence, when no duration
/// starts where their words end. All arithmetic saturates.
///
/// ```
/// use autoretry::classify::curated_hint_ms;
///
/// assert_eq!(curated_hint_ms("Please try again in 23h47m36.648s.", None), Some(85_656_648));
/// assert_eq!(curated_hint_ms("Please retry after 7 seconds", None), Some(7_000));
/// assert_eq!(curated_hint_ms(r#"{"resets_in_seconds": 600}"#, None), Some(600_000));
/// assert_eq!(
///     curated_hint_ms("Claude AI usage limit reached|1767225600", Some(1_767_225_000_000)),
///     Some(600_000),
/// );
/// assert_eq!(curated_hint_ms("Claude AI usage limit reached|1767225600", None), None);
/// assert_eq!(curated_hint_ms("try again later", None), None);
/// ```
pub fn curated_hint_ms(text: &str, now_ms: Option<u64>) -> Option<u64> {
    curated_hint_ms_bytes(text.as_bytes(), now_ms)
}

/// [`curated_hint_ms`] on raw bytes, read as `String::from_utf8_lossy`
/// would read them (without allocating).
///
/// ```
/// use autoretry::classify::curated_hint_ms_bytes;
///
/// assert_eq!(curated_hint_ms_bytes(b"\xFF try again in 1.5\xC2\xB5s", None), Some(1));
/// assert_eq!(curated_hint_ms_bytes(b"try again after\xFF5s", None), None);
/// ```
pub fn curated_hint_ms_bytes(bytes: &[u8], now_ms: Option<u64>) -> Option<u64> {
    let nonzero = |v: Option<u64>| v.filter(|&ms| ms != 0);
    hint::rule_retry_after_ms(bytes)
        .or_else(|| hint::rule_retry_after(bytes, now_ms))
        .or_else(|| nonzero(rule_reset_after(bytes)))
        .or_else(|| nonzero(rule_please_retry_in(bytes)))
        .or_else(|| nonzero(rule_retry_delay(bytes)))
        .or_else(|| nonzero(rule_try_again_in(bytes)))
        .or_else(|| nonzero(rule_retry_after_words(bytes)))
        .or_else(|| nonzero(rule_resets_in_seconds(bytes)))
        .or_else(|| nonzero(rule_usage_limit_reached(bytes, now_ms)))
        .or_else(|| hint::rule_reset_ms(bytes, now_ms))
        .or_else(|| hint::rule_reset_s(bytes, now_ms))
}

/// Rule 6: at the first match of `try again in\s+~?\s*` (its longest), the
/// duration that starts there.
fn rule_try_again_in(text: &[u8]) -> Option<u64> {
    let at = first_match(text, b"try again in", |rest| {
        let after_ws = skip_ws(rest);
        if after_ws.len() == rest.len() {
            return None;
        }
        Some(match after_ws {
            [b'~', rest @ ..] => skip_ws(rest),
            _ => after_ws,
        })
    })?;
    duration_at(at)
}

/// Rule 6a: at the first match of `(?:retry|try again) after\s+`, the
/// duration that starts there.
fn rule_retry_after_words(text: &[u8]) -> Option<u64> {
    // The leftmost start of either alternative: they begin with different
    // letters, so at most one starts at a position.
    let mut from = text;
    loop {
        let at = from
            .iter()
            .position(|&b| matches!(b.to_ascii_lowercase(), b'r' | b't'))?;
        let candidate = from.get(at..)?;
        for words in [&b"retry after"[..], b"try again after"] {
            if starts_with_ci(candidate, words) {
                let rest = candidate.get(words.len()..)?;
                let after_ws = skip_ws(rest);
                if after_ws.len() != rest.len() {
                    return duration_at(after_ws);
                }
            }
        }
        from = candidate.get(1..)?;
    }
}

/// Rule 6b: the first match of `"resets_in_seconds"\s*:\s*(\d+)`, in
/// seconds.
fn rule_resets_in_seconds(text: &[u8]) -> Option<u64> {
    let digits = first_match(text, b"\"resets_in_seconds\"", |rest| {
        let [b':', rest @ ..] = skip_ws(rest) else {
            return None;
        };
        let (digits, _) = split_digits(skip_ws(rest));
        (!digits.is_empty()).then_some(digits)
    })?;
    Some(decimal::saturating_digits(digits).saturating_mul(1_000))
}

/// Rule 6c: the first match of `usage limit reached\|(\d+)`, a Unix time
/// in seconds: `max(0, v × 1000 − now)` with a clock, else nothing.
fn rule_usage_limit_reached(text: &[u8], now_ms: Option<u64>) -> Option<u64> {
    let digits = first_match(text, b"usage limit reached|", |rest| {
        let (digits, _) = split_digits(rest);
        (!digits.is_empty()).then_some(digits)
    })?;
    let at = decimal::saturating_digits(digits).saturating_mul(1_000);
    Some(at.saturating_sub(now_ms?))
}

/// The duration (spec 13.4) that starts at `s`, in ms.
fn duration_at(s: &[u8]) -> Option<u64> {
    duration::prefix(s).map(|(ms, _)| ms)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;

    fn hint(text: &str) -> Option<u64> {
        curated_hint_ms(text, None)
    }

    #[test]
    fn rule_6_reads_a_duration() {
        assert_eq!(hint("try again in 6m0s"), Some(360_000));
        assert_eq!(hint("Try again in ~ 9m38.016s."), Some(578_016));
        assert_eq!(
            hint("try again in 5 days 22 hours 11 minutes"),
            Some(511_860_000)
        );
        assert_eq!(hint("try again in 17ms"), Some(17));
        // The 10.4 form stays: a numeral and a unit.
        assert_eq!(hint("Try again in ~158 min."), Some(9_480_000));
        // No duration where the words end: nothing, and no later match.
        assert_eq!(hint("try again in a moment, try again in 5s"), None);
        // Without white space after `in`, that occurrence is no match.
        assert_eq!(hint("try again in~5s; try again in 2s"), Some(2_000));
        // 0 passes on to the next rule.
        assert_eq!(hint("try again in 0s, retry after 3s"), Some(3_000));
        // A bare number has no unit.
        assert_eq!(hint("try again in 60"), None);
    }

    #[test]
    fn rule_6a_retry_after_words() {
        assert_eq!(hint("Please retry after 7 seconds"), Some(7_000));
        assert_eq!(hint("try again after 1 seconds"), Some(1_000));
        assert_eq!(hint("TRY AGAIN AFTER\t2h"), Some(7_200_000));
        assert_eq!(hint("retry after5s"), None);
        assert_eq!(hint("retry after soon; retry after 5s"), None);
        assert_eq!(hint("retry after5s; retry after 4s"), Some(4_000));
        // `retry-after` is rule 2's, not this one's.
        assert_eq!(hint("retry-after 5s"), None);
    }

    #[test]
    fn rule_6b_resets_in_seconds() {
        assert_eq!(hint(r#""resets_in_seconds" : 42"#), Some(42_000));
        assert_eq!(
            hint(r#""resets_in_seconds": x, "resets_in_seconds":3"#),
            Some(3_000)
        );
        assert_eq!(hint(r#""resets_in_seconds": 0"#), None);
        assert_eq!(
            hint(r#""resets_in_seconds": 99999999999999999999999"#),
            Some(u64::MAX)
        );
    }

    #[test]
    fn rule_6c_usage_limit_reached() {
        let t = "usage limit reached|1000";
        assert_eq!(curated_hint_ms(t, None), None);
        assert_eq!(curated_hint_ms(t, Some(400_000)), Some(600_000));
        // A time past: 0, which passes on.
        assert_eq!(curated_hint_ms(t, Some(2_000_000)), None);
        assert_eq!(
            curated_hint_ms(
                "usage limit reached|999999999999999999999999999999",
                Some(5)
            ),
            Some(u64::MAX - 5)
        );
        assert_eq!(curated_hint_ms("usage limit reached| 1000", Some(0)), None);
    }

    #[test]
    fn order_of_the_rules() {
        assert_eq!(hint("retry-after-ms: 5 try again in 2s"), Some(5));
        assert_eq!(hint("retry-after: 0 try again in 2s"), Some(0));
        assert_eq!(hint("please retry in 3s; try again in 2s"), Some(3_000));
        assert_eq!(hint("try again in 2s; retry after 3s"), Some(2_000));
        assert_eq!(hint("retry after 3s x-ratelimit-reset: 9"), Some(3_000));
        assert_eq!(hint("x-ratelimit-reset: 9"), Some(9_000));
    }
}
