//! Rule 2 of spec §3.5 reads the `retry-after` number as the correctly
//! rounded double of the whole token, whatever its length, then multiplies
//! by 1000.0 and floors.

use autoretry::classify::retry_hint_ms;
use proptest::prelude::*;

use crate::common::proptest_cases;

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/classify/hint_numbers.txt";

/// The hint of `retry-after: <token>` (rule 2 alone: no other rule's name
/// is in the text).
fn hint(token: &str) -> Option<u64> {
    retry_hint_ms(&format!("usage_limit_reached retry-after: {token}"), None)
}

/// §3.5 rule 2 from a double: × 1000.0, floor, below 0 is 0, at or above
/// 2^64 is u64::MAX.
fn by_the_spec(seconds: f64) -> u64 {
    let ms = seconds * 1000.0;
    if ms >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else if ms < 0.0 {
        0
    } else {
        ms.floor() as u64
    }
}

#[test]
fn a_mantissa_of_655361_digits_with_a_matching_exponent_is_one_second() {
    let token = format!("1{}e-655360", "0".repeat(655_360));
    assert_eq!(hint(&token), Some(1000));
}

#[test]
fn a_million_leading_zeros_and_a_huge_exponent_are_a_tenth_of_a_second() {
    let token = format!("0.{}1e1000000", "0".repeat(1_000_000));
    assert_eq!(hint(&token), Some(100));
}

#[test]
fn long_tokens_round_once() {
    // 1.005 is 1.00499999999999989... as a double: 1004 ms, however the
    // digits are spelled.
    assert_eq!(hint("1.005"), Some(1004));
    assert_eq!(hint(&format!("1.005{}", "0".repeat(100_000))), Some(1004));
    assert_eq!(hint(&format!("{}1005e-3", "0".repeat(100_000))), Some(1004));
    // 2^53 + 1 is halfway between two doubles: it ties to even, unless a
    // digit far past the 17th breaks the tie.
    assert_eq!(
        hint("9007199254740993"),
        Some(by_the_spec(9007199254740992.0))
    );
    let just_above = format!("9007199254740993.{}1", "0".repeat(50_000));
    assert_eq!(hint(&just_above), Some(by_the_spec(9007199254740994.0)));
    assert_eq!(hint("-0.5"), Some(0));
    assert_eq!(hint(&format!("1{}", "0".repeat(30))), Some(u64::MAX));
}

/// A numeral of the token grammar: sign, digits with an optional point,
/// an optional exponent.
fn numeral() -> impl Strategy<Value = String> {
    (
        prop::sample::select(vec!["", "+", "-"]),
        "[0-9]{0,25}",
        prop::option::of("[0-9]{0,25}"),
        prop::option::of((
            prop::sample::select(vec!["e", "E", "e+", "e-", "E-"]),
            0u32..40,
        )),
    )
        .prop_filter_map("at least one digit", |(sign, int, frac, exp)| {
            let frac_digits = frac.as_deref().map_or(0, str::len);
            if int.is_empty() && frac_digits == 0 {
                return None;
            }
            let mut text = format!("{sign}{int}");
            if let Some(frac) = frac {
                text.push('.');
                text.push_str(&frac);
            }
            if let Some((e, n)) = exp {
                text.push_str(&format!("{e}{n}"));
            }
            Some(text)
        })
}

proptest! {
    #![proptest_config(proptest_cases(5000, REGRESSIONS))]

    /// Against `str::parse::<f64>` (correctly rounded on these short
    /// numerals).
    #[test]
    fn agrees_with_the_standard_parser(token in numeral()) {
        let seconds: f64 = token.parse().expect("the grammar is Rust's too");
        prop_assert_eq!(hint(&token), Some(by_the_spec(seconds)), "{}", token);
    }
}
