//! Hints from the text for the wait (spec 10.4, under `honorHints`).
//!
//! Rules 1, 2, 7 and 8 are the rules of spec 3.5 (`super::hint`); rules 3
//! to 6 are scans at each occurrence of their leading literal, which give
//! exactly the first match a JavaScript regular expression's `exec` finds:
//! after the literal, every quantifier meets a character it cannot take
//! (a digit run ends where no digit or `.` follows, white space where no
//! white space follows), so backtracking into it never leads to another
//! match at the same start, and a failed start moves on to the next
//! occurrence of the literal.
//!
//! Bytes need no decoding: every byte of a non-ASCII character or of an
//! invalid sequence is at least 0x80, which is neither a digit, a letter,
//! white space nor a word character, exactly like the character (or the
//! U+FFFD) it stands for. Every function is linear in the length of the
//! text and never panics.

use super::{decimal, hint};

/// `ms`.
const MS: u64 = 1;
/// `s`, `sec`.
const SECOND: u64 = 1_000;
/// `m`, `min`, `mins`, `minute`, `minutes`.
const MINUTE: u64 = 60_000;
/// `h`, `hr`, `hrs`, `hour`, `hours`.
const HOUR: u64 = 3_600_000;

/// The units of rule 6, in the order the pattern tries them
/// (`ms|sec|s|minutes?|mins?|m|hours?|hrs?|h`, each `x?` greedy).
const UNITS: [(&[u8], u64); 13] = [
    (b"ms", MS),
    (b"sec", SECOND),
    (b"s", SECOND),
    (b"minutes", MINUTE),
    (b"minute", MINUTE),
    (b"mins", MINUTE),
    (b"min", MINUTE),
    (b"m", MINUTE),
    (b"hours", HOUR),
    (b"hour", HOUR),
    (b"hrs", HOUR),
    (b"hr", HOUR),
    (b"h", HOUR),
];

/// Extracts the hint of spec 10.4 from an error text, in milliseconds: the
/// wait a server asks for, honoured under `honorHints`.
///
/// The rules are tried in order, and the first that yields a value wins:
///
/// 1. `retry-after-ms` (rule 1 of [`retry_hint_ms`](super::retry_hint_ms));
/// 2. `retry-after` (rule 2 there: seconds as a double, or a timestamp);
/// 3. `reset after 1h30m10s` (hours and minutes optional);
/// 4. `please retry in 41.8s` (`ms` or `s`);
/// 5. `"retryDelay": "3s"` (`ms` or `s`);
/// 6. `try again in ~5 min` (`ms`, `sec`, `s`, `m`, `min(s)`,
///    `minute(s)`, `h`, `hr(s)`, `hour(s)`, then a word boundary);
/// 7. `x-ratelimit-reset-ms`, 8. `x-ratelimit-reset` (rules 3 and 4 there).
///
/// Names and units match ASCII-case-insensitively. In rules 3 to 6 the
/// number times its unit is computed exactly (no floating point) and
/// rounded up to a whole ms; a number that is not a decimal numeral (digits
/// with at most one `.`) makes its rule yield nothing, and so does 0 (rules
/// 1, 2, 7 and 8 can yield 0). `now_ms` is the host's wall clock in Unix
/// ms, for timestamps and epochs. All arithmetic saturates.
///
/// ```
/// use autoretry::classify::wait_hint_ms;
///
/// assert_eq!(wait_hint_ms("Please retry in 41.820516331s.", None), Some(41_821));
/// assert_eq!(wait_hint_ms("Your quota will reset after 1h30m10s", None), Some(5_410_000));
/// assert_eq!(wait_hint_ms("Try again in ~158 min.", None), Some(9_480_000));
/// assert_eq!(wait_hint_ms("try again in 8.3 min", None), Some(498_000)); // not 498,001
/// assert_eq!(wait_hint_ms(r#""retryDelay": "500ms""#, None), Some(500));
/// // The rules of spec 3.5 come first.
/// assert_eq!(wait_hint_ms("retry-after: 4 please retry in 2s", None), Some(4_000));
/// assert_eq!(wait_hint_ms("try again later", None), None);
/// ```
pub fn wait_hint_ms(text: &str, now_ms: Option<u64>) -> Option<u64> {
    wait_hint_ms_bytes(text.as_bytes(), now_ms)
}

/// [`wait_hint_ms`] on raw bytes, read as `String::from_utf8_lossy` would
/// read them (without allocating).
///
/// ```
/// use autoretry::classify::wait_hint_ms_bytes;
///
/// assert_eq!(wait_hint_ms_bytes(b"\xFF try again in 2 hours\xFF", None), Some(7_200_000));
/// // An invalid byte is no word character, and no white space either.
/// assert_eq!(wait_hint_ms_bytes(b"try again in\xFF5s", None), None);
/// ```
pub fn wait_hint_ms_bytes(bytes: &[u8], now_ms: Option<u64>) -> Option<u64> {
    hint::rule_retry_after_ms(bytes)
        .or_else(|| hint::rule_retry_after(bytes, now_ms))
        .or_else(|| rule_reset_after(bytes).filter(|&ms| ms != 0))
        .or_else(|| rule_please_retry_in(bytes).filter(|&ms| ms != 0))
        .or_else(|| rule_retry_delay(bytes).filter(|&ms| ms != 0))
        .or_else(|| rule_try_again_in(bytes).filter(|&ms| ms != 0))
        .or_else(|| hint::rule_reset_ms(bytes, now_ms))
        .or_else(|| hint::rule_reset_s(bytes, now_ms))
}

/// Rule 3: `reset after (?:(\d+)h)?(?:(\d+)m)?(\d+(?:\.\d+)?)s`.
pub(super) fn rule_reset_after(text: &[u8]) -> Option<u64> {
    let (hours, minutes, seconds) = first_match(text, b"reset after ", |mut rest| {
        let mut hours: &[u8] = &[];
        let mut minutes: &[u8] = &[];
        // An optional group is taken when its digits and letter are there;
        // skipping it then could not match (its digits would be followed
        // by its letter, which the next part cannot take).
        if let Some((digits, after)) = digits_then(rest, b'h') {
            (hours, rest) = (digits, after);
        }
        if let Some((digits, after)) = digits_then(rest, b'm') {
            (minutes, rest) = (digits, after);
        }
        let (int, after) = split_digits(rest);
        if int.is_empty() {
            return None;
        }
        // `(?:\.\d+)?`: a `.` counts only with a digit after it; and with
        // one, `s` must follow the fraction (without it, the `.` would
        // have to be the `s`).
        let end = match after {
            [b'.', d, ..] if d.is_ascii_digit() => split_digits(after.get(1..)?).1,
            _ => after,
        };
        let seconds = rest.get(..rest.len().saturating_sub(end.len()))?;
        starts_with_ci(end, b"s").then_some((hours, minutes, seconds))
    })?;
    let minutes = decimal::saturating_digits(hours)
        .saturating_mul(60)
        .saturating_add(decimal::saturating_digits(minutes));
    minutes
        .saturating_mul(60)
        .saturating_mul(SECOND)
        .saturating_add(decimal::numeral_ms(seconds, SECOND)?)
        .into()
}

/// Rule 4: `please retry in ([0-9.]+)(ms|s)`.
pub(super) fn rule_please_retry_in(text: &[u8]) -> Option<u64> {
    let (numeral, unit) = first_match(text, b"please retry in ", |rest| {
        let (numeral, after) = split_numeral(rest)?;
        let unit = if starts_with_ci(after, b"ms") {
            MS
        } else if starts_with_ci(after, b"s") {
            SECOND
        } else {
            return None;
        };
        Some((numeral, unit))
    })?;
    decimal::numeral_ms(numeral, unit)
}

/// Rule 5: `"retryDelay":\s*"([0-9.]+)(ms|s)"`.
pub(super) fn rule_retry_delay(text: &[u8]) -> Option<u64> {
    let (numeral, unit) = first_match(text, b"\"retrydelay\":", |rest| {
        let [b'"', rest @ ..] = skip_ws(rest) else {
            return None;
        };
        let (numeral, after) = split_numeral(rest)?;
        let unit = if starts_with_ci(after, b"ms\"") {
            MS
        } else if starts_with_ci(after, b"s\"") {
            SECOND
        } else {
            return None;
        };
        Some((numeral, unit))
    })?;
    decimal::numeral_ms(numeral, unit)
}

/// Rule 6: `try again in\s+~?\s*([0-9.]+)\s*(ms|sec|s|minutes?|mins?|m|hours?|hrs?|h)\b`.
fn rule_try_again_in(text: &[u8]) -> Option<u64> {
    let (numeral, unit) = first_match(text, b"try again in", |rest| {
        let after_ws = skip_ws(rest);
        if after_ws.len() == rest.len() {
            return None;
        }
        let rest = match after_ws {
            [b'~', rest @ ..] => skip_ws(rest),
            _ => after_ws,
        };
        let (numeral, after) = split_numeral(rest)?;
        let after = skip_ws(after);
        // The first unit, in the pattern's order, with a word boundary
        // after it (every unit ends with a word character).
        let (_, unit) = UNITS.iter().find(|(name, _)| {
            starts_with_ci(after, name) && !after.get(name.len()).is_some_and(|&b| is_word(b))
        })?;
        Some((numeral, *unit))
    })?;
    decimal::numeral_ms(numeral, unit)
}

/// The value of `rest` for the first occurrence of `literal` (ASCII
/// case-insensitive, lowercase) at which `rest` accepts the text after it.
pub(super) fn first_match<'t, T>(
    text: &'t [u8],
    literal: &[u8],
    rest: impl Fn(&'t [u8]) -> Option<T>,
) -> Option<T> {
    let first = literal.first()?;
    let mut from = text;
    while let Some(at) = from.iter().position(|b| b.to_ascii_lowercase() == *first) {
        let candidate = from.get(at..)?;
        if starts_with_ci(candidate, literal) {
            if let Some(found) = rest(candidate.get(literal.len()..)?) {
                return Some(found);
            }
        }
        from = candidate.get(1..)?;
    }
    None
}

/// Whether `s` starts with `prefix` (lowercase), ASCII case-insensitively.
pub(super) fn starts_with_ci(s: &[u8], prefix: &[u8]) -> bool {
    s.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// At least one digit followed by `letter` (either case): the digits and
/// what follows the letter.
fn digits_then(s: &[u8], letter: u8) -> Option<(&[u8], &[u8])> {
    let (digits, after) = split_digits(s);
    match after {
        [b, after @ ..] if !digits.is_empty() && b.to_ascii_lowercase() == letter => {
            Some((digits, after))
        }
        _ => None,
    }
}

/// The leading ASCII digits of `s`, and the rest.
pub(super) fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
    s.split_at(n.min(s.len()))
}

/// `[0-9.]+`, maximal: the run and the rest (`None` when empty).
fn split_numeral(s: &[u8]) -> Option<(&[u8], &[u8])> {
    let n = s
        .iter()
        .take_while(|&&b| b.is_ascii_digit() || b == b'.')
        .count();
    (n > 0).then(|| s.split_at(n.min(s.len())))
}

/// A word character of `\b` (spec 10.5): `[A-Za-z0-9_]`.
pub(super) fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// `s` without its leading ASCII white space (spec 3.1's `\s`).
pub(super) fn skip_ws(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .take_while(|&&b| matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' '))
        .count();
    s.get(n..).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::{format, string::String};

    fn hint(text: &str) -> Option<u64> {
        wait_hint_ms(text, None)
    }

    #[test]
    fn the_spec_s_examples() {
        assert_eq!(hint("Please retry in 41.820516331s"), Some(41_821));
        assert_eq!(hint("reset after 1h30m10s"), Some(5_410_000));
        assert_eq!(hint("Try again in ~158 min."), Some(9_480_000));
        assert_eq!(hint("try again in 8.3 min"), Some(498_000));
        assert_eq!(hint("please retry in 0.0001s"), Some(1));
    }

    #[test]
    fn rules_1_and_2_are_those_of_3_5() {
        assert_eq!(hint("retry-after-ms: 0"), Some(0));
        assert_eq!(hint("retry-after-ms: soon, retry-after-ms: 5"), Some(5));
        assert_eq!(hint("Retry-After: 1.005"), Some(1004));
        assert_eq!(hint("retry-after: 0 try again in 5s"), Some(0));
        assert_eq!(
            wait_hint_ms("retry-after: 1970-01-01T00:00:10Z", Some(4_000)),
            Some(6_000)
        );
        // A timestamp without a clock passes on.
        assert_eq!(
            hint("retry-after: 1970-01-01T00:00:10Z, try again in 3s"),
            Some(3_000)
        );
        assert_eq!(hint("retry-after: soon, please retry in 2s"), Some(2_000));
    }

    #[test]
    fn rule_3_reset_after() {
        assert_eq!(hint("reset after 39s"), Some(39_000));
        assert_eq!(hint("reset after 3h6m38s"), Some(11_198_000));
        assert_eq!(hint("reset after 30m10s"), Some(1_810_000));
        assert_eq!(hint("reset after 1h5s"), Some(3_605_000));
        assert_eq!(hint("reset after 2H0M0.5S"), Some(7_200_500));
        assert_eq!(hint("reset after 1.0001s"), Some(1_001));
        assert_eq!(hint("RESET AFTER 7s"), Some(7_000));
        // No seconds, no match; a later occurrence is tried.
        assert_eq!(hint("reset after 1h"), None);
        assert_eq!(hint("reset after 1h30m"), None);
        assert_eq!(hint("reset after 5ms"), None);
        assert_eq!(hint("reset after 1.s"), None);
        assert_eq!(hint("reset after .5s"), None);
        assert_eq!(hint("reset after 1.5.5s"), None);
        assert_eq!(hint("reset after 1h, reset after 2s"), Some(2_000));
        assert_eq!(hint("reset after  2s"), None);
        assert_eq!(hint("reset after\t2s"), None);
        assert_eq!(hint("resetafter 2s"), None);
        assert_eq!(hint("xreset after 2sx"), Some(2_000));
        // 0 passes on (to the next rule, not to a later match).
        assert_eq!(hint("reset after 0s, reset after 5s"), None);
        assert_eq!(
            hint("reset after 0h0m0.000s please retry in 4s"),
            Some(4_000)
        );
        assert_eq!(hint("reset after 0.0001s"), Some(1));
        // Saturating.
        assert_eq!(
            hint("reset after 99999999999999999999h1m1s"),
            Some(u64::MAX)
        );
        assert_eq!(
            hint("reset after 5124095576030h0m0s"),
            Some(18_446_744_073_708_000_000)
        );
        assert_eq!(hint("reset after 5124095576031h0m0s"), Some(u64::MAX));
    }

    #[test]
    fn rule_4_please_retry_in() {
        assert_eq!(hint("Please retry in 5s"), Some(5_000));
        assert_eq!(hint("please retry in 250ms"), Some(250));
        assert_eq!(hint("PLEASE RETRY IN 2.5MS"), Some(3));
        assert_eq!(hint("please retry in 5.s"), Some(5_000));
        assert_eq!(hint("please retry in .5s"), Some(500));
        assert_eq!(hint("please retry in 0012s"), Some(12_000));
        // `ms` before `s`, and no word boundary needed.
        assert_eq!(hint("please retry in 7msec"), Some(7));
        assert_eq!(hint("please retry in 7sx"), Some(7_000));
        // Not a numeral: nothing, and no later match is tried.
        assert_eq!(hint("please retry in 1.2.3s, please retry in 4s"), None);
        assert_eq!(hint("please retry in .s please retry in 4s"), None);
        // No match at the first occurrence: the next one counts.
        assert_eq!(hint("please retry in 5 s, please retry in 6s"), Some(6_000));
        assert_eq!(
            hint("please retry in soon; please retry in 6s"),
            Some(6_000)
        );
        assert_eq!(hint("please retry in  6s"), None);
        // 0 yields nothing.
        assert_eq!(hint("please retry in 0s"), None);
        assert_eq!(hint("please retry in 0.000s"), None);
    }

    #[test]
    fn rule_5_retry_delay() {
        assert_eq!(hint(r#""retryDelay": "3s""#), Some(3_000));
        assert_eq!(hint(r#""retryDelay":"500ms""#), Some(500));
        assert_eq!(hint("\"RETRYDELAY\":\u{b}\t\n \"1.5S\""), Some(1_500));
        assert_eq!(hint(r#""retryDelay": "3s"#), None);
        assert_eq!(hint(r#""retryDelay": 3s"#), None);
        assert_eq!(hint(r#""retryDelay" : "3s""#), None);
        assert_eq!(hint(r#"retryDelay: "3s""#), None);
        assert_eq!(hint(r#""retryDelay": "3m""#), None);
        assert_eq!(
            hint(r#""retryDelay": "3s", "retryDelay": "4s""#),
            Some(3_000)
        );
        assert_eq!(
            hint(r#""retryDelay": "x", "retryDelay": "4s""#),
            Some(4_000)
        );
        assert_eq!(hint(r#""retryDelay": "1..0s", "retryDelay": "4s""#), None);
        assert_eq!(hint(r#""retryDelay": "0s""#), None);
    }

    #[test]
    fn rule_6_try_again_in() {
        assert_eq!(hint("try again in 250ms"), Some(250));
        assert_eq!(hint("Please try again in 2.5s."), Some(2_500));
        assert_eq!(hint("try again in 12 sec"), Some(12_000));
        assert_eq!(hint("try again in 5 min"), Some(300_000));
        assert_eq!(hint("try again in 5 mins"), Some(300_000));
        assert_eq!(hint("try again in 1 minute"), Some(60_000));
        assert_eq!(hint("try again in 90 minutes"), Some(5_400_000));
        assert_eq!(hint("try again in 2 m"), Some(120_000));
        assert_eq!(hint("try again in 2 h"), Some(7_200_000));
        assert_eq!(hint("try again in 2hr"), Some(7_200_000));
        assert_eq!(hint("try again in 2 hrs."), Some(7_200_000));
        assert_eq!(hint("try again in 1 hour"), Some(3_600_000));
        assert_eq!(hint("try again in 3 hours"), Some(10_800_000));
        assert_eq!(hint("TRY AGAIN IN 3 HOURS"), Some(10_800_000));
        assert_eq!(hint("try again in\t~\u{b}3s"), Some(3_000));
        assert_eq!(hint("try again in ~ 3 s"), Some(3_000));
        assert_eq!(hint("try again in 3\n\ns\n"), Some(3_000));
        assert_eq!(hint("try again in 2 s_"), None);
        // The word boundary: `5 mo` matches no unit; the next occurrence
        // counts.
        assert_eq!(hint("try again in 5 mo, try again in 7 sec"), Some(7_000));
        assert_eq!(hint("try again in 5 secs"), None);
        assert_eq!(hint("try again in 5 minx"), None);
        assert_eq!(hint("try again in 5 min5"), None);
        assert_eq!(hint("try again in 5 min—"), Some(300_000));
        assert_eq!(hint("try again in 5 min\u{FFFD}"), Some(300_000));
        // White space is required before the number (or the `~`).
        assert_eq!(hint("try again in5s"), None);
        assert_eq!(hint("try again in~5s"), None);
        assert_eq!(hint("try again in\u{a0}5s"), None);
        assert_eq!(hint("try again in ~~5s"), None);
        assert_eq!(hint("try again in later"), None);
        // Not a numeral, or 0: nothing.
        assert_eq!(hint("try again in 1.2.3 s, try again in 4s"), None);
        assert_eq!(hint("try again in 0 s"), None);
        assert_eq!(hint("try again in 0s, x-ratelimit-reset: 2"), Some(2_000));
    }

    #[test]
    fn rules_in_order() {
        // 3 before 4 before 5 before 6 before 7 and 8, wherever they are.
        let texts = [
            (
                "try again in 6s \"retryDelay\": \"5s\" please retry in 4s reset after 3s",
                3_000,
            ),
            (
                "try again in 6s \"retryDelay\": \"5s\" please retry in 4s",
                4_000,
            ),
            ("try again in 6s \"retryDelay\": \"5s\"", 5_000),
            (
                "x-ratelimit-reset: 8 x-ratelimit-reset-ms: 7 try again in 6s",
                6_000,
            ),
            ("x-ratelimit-reset: 8 x-ratelimit-reset-ms: 7", 7),
            ("x-ratelimit-reset: 8", 8_000),
            ("x-ratelimit-reset: 3 Please retry in 2s", 2_000),
        ];
        for (text, want) in texts {
            assert_eq!(hint(text), Some(want), "{text}");
        }
        // Rules 7 and 8 may give 0, which wins.
        assert_eq!(hint("x-ratelimit-reset-ms: 0"), Some(0));
        assert_eq!(
            wait_hint_ms("x-ratelimit-reset: 1000000005", Some(2_000_000_000_000)),
            Some(0)
        );
        assert_eq!(hint("x-ratelimit-reset: 1000000005"), None);
    }

    #[test]
    fn bytes_read_like_lossy_utf8() {
        let cases: [&[u8]; 8] = [
            b"try again in 5 min\xFF",
            b"try again in 5\xFFmin",
            b"\xF0\x9F\x98 please retry in 2s",
            b"please retry in 2\xC3s",
            b"\"retryDelay\":\xE2\x80 \"3s\"",
            b"reset after 1h\xED\xA0\x802s",
            b"try again in \xE2\x80\xA8 5s",
            b"try again in 5 h\xE2\x80",
        ];
        for bytes in cases {
            let lossy = String::from_utf8_lossy(bytes);
            assert_eq!(
                wait_hint_ms_bytes(bytes, Some(0)),
                wait_hint_ms(&lossy, Some(0)),
                "{bytes:?}"
            );
        }
        assert_eq!(
            wait_hint_ms_bytes(b"try again in 5 min\xFF", None),
            Some(300_000)
        );
    }

    #[test]
    fn long_inputs_are_linear() {
        let mut text = String::new();
        for _ in 0..20_000 {
            text.push_str("try again in 5 mo ");
        }
        for _ in 0..20_000 {
            text.push_str("please retry in ");
        }
        for _ in 0..20_000 {
            text.push_str("reset after 1h");
        }
        text.push_str("try again in 9 s");
        assert_eq!(hint(&text), Some(9_000));
        let spaces = format!("try again in{}5s", " ".repeat(200_000));
        assert_eq!(hint(&spaces), Some(5_000));
        let digits = format!("please retry in {}s", "9".repeat(200_000));
        assert_eq!(hint(&digits), Some(u64::MAX));
        let dots = format!("please retry in {}s", ".".repeat(200_000));
        assert_eq!(hint(&dots), None);
    }
}
