//! Exact decimal arithmetic for the retry hints, in integers only.
//!
//! - [`seconds_ms`]: rule 2 of spec 3.5 — a decimal number of seconds read
//!   as an IEEE-754 double (round to nearest, ties to even), multiplied by
//!   1000.0 in double precision, floored and clamped to `0..=u64::MAX`. The
//!   double and the product are computed exactly with a small fixed-size big
//!   integer, so the result is bit for bit what `str::parse::<f64>` and a
//!   float multiplication give, without the float parser's tables.
//! - [`numeral_ms`]: spec 10.4 — a decimal numeral times a unit in ms,
//!   computed exactly and rounded up to a whole ms.
//!
//! Every function is linear in the length of its input, allocation-free and
//! panic-free.

use core::cmp::Ordering;

/// Significant decimal digits kept before the rest is folded into one
/// sticky digit. A double of the range that matters here (below) and the
/// midpoints between two of them have at most 84 significant digits (at
/// most 17 before the point, at most 67 binary, hence 67 decimal, after
/// it); with 100 digits and a sticky digit, the kept number compares with
/// every such midpoint exactly as the whole number does.
const KEPT_DIGITS: usize = 100;

/// The value's decimal exponent `k` (`10^(k-1) <= value < 10^k`) at or
/// below which the result is 0: below 10^-4 seconds, the product stays
/// below 0.1 ms.
const ZERO_AT_OR_BELOW: i64 = -4;
/// ... and at or above which it is `u64::MAX`: from 10^17 seconds the
/// product is at least 10^20 > 2^64 ms.
const MAX_AT_OR_ABOVE: i64 = 18;

/// Limbs of [`Big`]: 20 × 32 = 640 bits. The largest number built has
/// about 405 bits (the kept digits, about 336 bits, or 10^104 times 2^56).
const LIMBS: usize = 20;

/// Rule 2 of spec 3.5 on a whole token: `None` unless it matches
/// `[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?`; otherwise
/// `floor(double(token) × 1000.0)` clamped to `0..=u64::MAX`.
pub(super) fn seconds_ms(token: &[u8]) -> Option<u64> {
    // A whole number of at most 12 digits (the common `retry-after: 120`)
    // is below 10^12: the double is the number itself, and its product by
    // 1000 is below 2^53, exact.
    if !token.is_empty() && token.len() <= 12 && token.iter().all(u8::is_ascii_digit) {
        return Some(token.iter().fold(0, |n, &d| n * 10 + u64::from(d - b'0')) * 1000);
    }
    let n = Scientific::parse(token)?;
    if n.negative {
        // Negative or -0: the floor is below 0 or is -0.
        return Some(0);
    }
    let Some((digits, k)) = n.significant() else {
        return Some(0);
    };
    if k <= ZERO_AT_OR_BELOW {
        return Some(0);
    }
    if k >= MAX_AT_OR_ABOVE {
        return Some(u64::MAX);
    }
    // The kept digits `d` (with a sticky 1 appended when a non-zero digit
    // was dropped) and the exponent of the last one: value ~ d × 10^q.
    let mut d = Big::ZERO;
    let mut len: i64 = 0;
    let mut sticky = false;
    for (i, digit) in digits.enumerate() {
        if i < KEPT_DIGITS {
            d.mul_small(10);
            d.add_small(u32::from(digit));
            len += 1;
        } else if digit != 0 {
            sticky = true;
            break;
        }
    }
    if sticky {
        d.mul_small(10);
        d.add_small(1);
        len += 1;
    }
    // |q| <= 104 here: k is in -3..=17 and len in 1..=101.
    let q = k - len;
    let (mut num, mut den) = (d, Big::ONE);
    for _ in 0..q.max(0) {
        num.mul_small(10);
    }
    for _ in 0..(-q).max(0) {
        den.mul_small(10);
    }
    // Scale by 2^s so that the quotient has 55 or 56 bits: two more than a
    // double's 53, for the rounding bit.
    let s = 55 - (i64::from(num.bit_len()) - i64::from(den.bit_len()));
    if s >= 0 {
        num.shl(u32::try_from(s).ok()?);
    } else {
        den.shl(u32::try_from(-s).ok()?);
    }
    let (quotient, inexact) = num.div_rem_is_nonzero(&den);
    // The double nearest the value: m × 2^e.
    let (m, shift) = round_to_53_bits(quotient, inexact);
    let e = i64::from(shift) - s;
    // The product m × 1000 × 2^e rounded to a double, then floored.
    let (p, shift) = round_to_53_bits(m * 1000, false);
    let e = e + i64::from(shift);
    Some(if e >= 0 {
        // p < 2^53, so from 2^12 on the product is at least 2^64.
        if e >= 12 {
            u64::MAX
        } else {
            p << e
        }
    } else {
        u32::try_from(-e)
            .ok()
            .and_then(|r| p.checked_shr(r))
            .unwrap_or(0)
    })
}

/// Rounds `value` (with `sticky`: non-zero bits were dropped below it) to
/// 53 significant bits, ties to even: `(m, shift)` with the rounded value
/// `m × 2^shift` and `m < 2^53`.
fn round_to_53_bits(value: u64, sticky: bool) -> (u64, u32) {
    let bits = u64::BITS - value.leading_zeros();
    let Some(shift) = bits.checked_sub(53).filter(|&s| s > 0) else {
        return (value, 0);
    };
    let mut m = value >> shift;
    let half = 1u64 << (shift - 1);
    let rest = value & ((half << 1) - 1);
    if rest > half || rest == half && (sticky || m & 1 == 1) {
        m += 1;
    }
    if m == 1 << 53 {
        (m >> 1, shift + 1)
    } else {
        (m, shift)
    }
}

/// Spec 10.4: a numeral (ASCII digits with at most one `.` and at least one
/// digit: `5.`, `.5`, `0012`) times `unit` ms, exactly, rounded up to a
/// whole ms, saturating at `u64::MAX`. `None` when it is not a numeral.
pub(crate) fn numeral_ms(numeral: &[u8], unit: u64) -> Option<u64> {
    let (int, frac) = match numeral.iter().position(|&b| b == b'.') {
        Some(dot) => (numeral.get(..dot)?, numeral.get(dot + 1..)?),
        None => (numeral, &[][..]),
    };
    let is_digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    if int.is_empty() && frac.is_empty() || !is_digits(int) || !is_digits(frac) {
        return None;
    }
    Some(
        saturating_digits(int)
            .saturating_mul(unit)
            .saturating_add(fraction_times_ceil(frac, unit)),
    )
}

/// `ceil(0.frac × unit)` for ASCII digits `frac`, exactly: the long
/// multiplication from the last digit up, whose carry out of the first
/// digit is the integer part (below `unit`); any non-zero digit of the
/// product rounds it up.
pub(super) fn fraction_times_ceil(frac: &[u8], unit: u64) -> u64 {
    let mut carry = 0u64;
    let mut inexact = false;
    for &digit in frac.iter().rev() {
        // carry < unit, so this stays below 10 × unit.
        let t = u64::from(digit.wrapping_sub(b'0'))
            .saturating_mul(unit)
            .saturating_add(carry);
        inexact |= t % 10 != 0;
        carry = t / 10;
    }
    carry.saturating_add(u64::from(inexact))
}

/// ASCII digits as a number, saturating at `u64::MAX`.
pub(super) fn saturating_digits(digits: &[u8]) -> u64 {
    digits.iter().fold(0u64, |v, &d| {
        v.saturating_mul(10)
            .saturating_add(u64::from(d.wrapping_sub(b'0')))
    })
}

/// A token of the rule 2 grammar, split into its parts.
struct Scientific<'a> {
    negative: bool,
    int: &'a [u8],
    frac: &'a [u8],
    /// The exponent, clamped to ±10^15 (far beyond any text's digits).
    exp: i64,
}

/// Exponents are clamped to this magnitude: the number of digits of any
/// text is far smaller, so the clamp never changes a result.
const EXP_CLAMP: i64 = 1_000_000_000_000_000;

impl<'a> Scientific<'a> {
    /// `[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?`, whole.
    fn parse(token: &'a [u8]) -> Option<Self> {
        let mut rest = token;
        let mut negative = false;
        if let [sign @ (b'+' | b'-'), tail @ ..] = rest {
            negative = *sign == b'-';
            rest = tail;
        }
        let (int, tail) = split_digits(rest);
        rest = tail;
        let mut frac: &[u8] = &[];
        if let [b'.', tail @ ..] = rest {
            (frac, rest) = split_digits(tail);
        }
        if int.is_empty() && frac.is_empty() {
            return None;
        }
        let mut exp = 0i64;
        if let [b'e' | b'E', tail @ ..] = rest {
            rest = tail;
            let mut exp_negative = false;
            if let [sign @ (b'+' | b'-'), tail @ ..] = rest {
                exp_negative = *sign == b'-';
                rest = tail;
            }
            let (digits, tail) = split_digits(rest);
            if digits.is_empty() {
                return None;
            }
            rest = tail;
            exp = digits.iter().fold(0i64, |v, &d| {
                v.saturating_mul(10)
                    .saturating_add(i64::from(d.wrapping_sub(b'0')))
                    .min(EXP_CLAMP)
            });
            if exp_negative {
                exp = -exp;
            }
        }
        rest.is_empty().then_some(Scientific {
            negative,
            int,
            frac,
            exp,
        })
    }

    /// The significant digits (from the first non-zero one, as values
    /// 0..=9) and the decimal exponent `k` with `10^(k-1) <= value < 10^k`;
    /// `None` for zero.
    fn significant(&self) -> Option<(impl Iterator<Item = u8> + 'a, i64)> {
        let all = self
            .int
            .iter()
            .chain(self.frac)
            .map(|&d| d.wrapping_sub(b'0'));
        let leading_zeros = all.clone().take_while(|&d| d == 0).count();
        if leading_zeros == self.int.len() + self.frac.len() {
            return None;
        }
        let as_i64 = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        let k = as_i64(self.int.len())
            .saturating_sub(as_i64(leading_zeros))
            .saturating_add(self.exp);
        Some((all.skip(leading_zeros), k))
    }
}

/// The leading ASCII digits of `s`, and the rest.
fn split_digits(s: &[u8]) -> (&[u8], &[u8]) {
    let n = s.iter().take_while(|b| b.is_ascii_digit()).count();
    s.split_at(n.min(s.len()))
}

/// An unsigned integer of [`LIMBS`] 32-bit limbs, least significant first.
/// The callers keep every value well below its capacity (see [`LIMBS`]);
/// a carry out of the top limb would be dropped, never a panic.
#[derive(Clone, Copy)]
struct Big([u32; LIMBS]);

impl Big {
    const ZERO: Big = Big([0; LIMBS]);
    const ONE: Big = {
        let mut limbs = [0; LIMBS];
        limbs[0] = 1;
        Big(limbs)
    };

    fn mul_small(&mut self, factor: u32) {
        let mut carry = 0u64;
        for limb in &mut self.0 {
            let t = u64::from(*limb) * u64::from(factor) + carry;
            *limb = t as u32;
            carry = t >> 32;
        }
    }

    fn add_small(&mut self, addend: u32) {
        let mut carry = u64::from(addend);
        for limb in &mut self.0 {
            if carry == 0 {
                break;
            }
            let t = u64::from(*limb) + carry;
            *limb = t as u32;
            carry = t >> 32;
        }
    }

    /// Number of significant bits (0 for zero).
    fn bit_len(&self) -> u32 {
        let mut bits = 0;
        for (i, &limb) in self.0.iter().enumerate() {
            if limb != 0 {
                bits = (i as u32) * 32 + (u32::BITS - limb.leading_zeros());
            }
        }
        bits
    }

    /// Shifts left by `bits`.
    fn shl(&mut self, bits: u32) {
        let limbs = (bits / 32) as usize;
        let bits = bits % 32;
        let old = self.0;
        for (i, limb) in self.0.iter_mut().enumerate() {
            let at = |j: Option<usize>| j.and_then(|j| old.get(j)).map_or(0, |&l| l);
            let lo = at(i.checked_sub(limbs));
            let below = at(i.checked_sub(limbs + 1));
            *limb = if bits == 0 {
                lo
            } else {
                lo << bits | below >> (32 - bits)
            };
        }
    }

    /// Shifts right by one bit.
    fn shr1(&mut self) {
        let mut carry = 0;
        for limb in self.0.iter_mut().rev() {
            let low = *limb & 1;
            *limb = *limb >> 1 | carry << 31;
            carry = low;
        }
    }

    fn compare(&self, other: &Big) -> Ordering {
        self.0.iter().rev().cmp(other.0.iter().rev())
    }

    /// `self -= other`, for `self >= other`.
    fn sub_assign(&mut self, other: &Big) {
        let mut borrow = false;
        for (a, &b) in self.0.iter_mut().zip(&other.0) {
            let (t, b1) = a.overflowing_sub(b);
            let (t, b2) = t.overflowing_sub(u32::from(borrow));
            *a = t;
            borrow = b1 || b2;
        }
    }

    fn is_zero(&self) -> bool {
        self.0.iter().all(|&l| l == 0)
    }

    /// `(self / den, self % den != 0)` for a quotient below 2^64, by
    /// shift and subtract.
    fn div_rem_is_nonzero(mut self, den: &Big) -> (u64, bool) {
        let shift = self.bit_len().saturating_sub(den.bit_len());
        let mut d = *den;
        d.shl(shift);
        let mut quotient = 0u64;
        for _ in 0..=shift {
            quotient <<= 1;
            if self.compare(&d) != Ordering::Less {
                self.sub_assign(&d);
                quotient |= 1;
            }
            d.shr1();
        }
        (quotient, !self.is_zero())
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::{format, string::String, vec::Vec};

    /// The rule as the spec words it, with the float parser.
    fn by_floats(token: &str) -> u64 {
        let seconds: f64 = token.parse().unwrap();
        // `as` saturates: NaN and negatives give 0, 2^64 and above u64::MAX.
        (seconds * 1000.0) as u64
    }

    fn check(token: &str) {
        assert_eq!(
            seconds_ms(token.as_bytes()),
            Some(by_floats(token)),
            "{token}"
        );
    }

    #[test]
    fn whole_numbers_agree_with_the_float_parser() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for len in 1..=14 {
            for _ in 0..2000 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let digits: String = (0..len)
                    .map(|i| char::from(b'0' + ((x >> (i * 4)) % 10) as u8))
                    .collect();
                check(&digits);
            }
            check(&"9".repeat(len));
            check(&"0".repeat(len));
            check(&format!("{}1", "0".repeat(len - 1)));
        }
    }

    #[test]
    fn grammar() {
        for ok in [
            "5", "5.", ".5", "+5", "-5", "5e3", "5E+3", "5e-3", "0.0", "00",
        ] {
            assert!(seconds_ms(ok.as_bytes()).is_some(), "{ok}");
        }
        for bad in [
            "", ".", "+", "-", "e5", "5e", "5e+", "1.2.3", "inf", "NaN", "0x10", "1_000", "5s",
            "--5", "+-5", "5 ", " 5", "5e5e5", ".e1", "5.e", "١",
        ] {
            assert_eq!(seconds_ms(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn agrees_with_the_float_parser_on_chosen_numbers() {
        for token in [
            "0",
            "1",
            "1.005",
            "0.001",
            "0.0009999999999999999",
            "0.00099999999999999999",
            "0.000999999999999999999999",
            "0.0001",
            "0.00009",
            "0.0005",
            "0.00049999999999999",
            "1e-4",
            "9.999e-5",
            "18446744073709551.615",
            "18446744073709551.616",
            "18446744073709551.6159",
            "18446744073709550",
            "18446744073709549.999",
            "18446744073709548",
            "1e16",
            "1.8446744073709552e16",
            "99999999999999999",
            "1e17",
            "9.9999999999999999e16",
            "1e300",
            "1e-300",
            "4.35",
            "0.1",
            "0.7",
            "2.675",
            "1.0000000000000002",
            "9007199254740993",
            "9007199254740992.5",
            "4503599627370495.5",
            "4503599627370496.5",
            "0.3",
            "123456.789e-3",
            "0.000000000000000000000000000000000000000001e39",
            "1e99999999999999999999",
            "1e-99999999999999999999",
            "-0",
            "-1e300",
            "+2e1",
            "1E-3",
            "5.",
            ".5",
            "123456789012345678901234567890e-20",
            "3.0000000000000004",
            "8.3",
            "41.820516331",
            "1.1",
            "0.57",
            "1.15",
            "2.5",
            "1180.000000000000000000001",
        ] {
            check(token);
        }
    }

    #[test]
    fn halfway_cases_round_to_even() {
        // Values halfway between two doubles, and a hair either side, in
        // every binade the rule can reach: (2m + 1) × 2^(e - 1).
        for e in -67i32..=5 {
            for m in [
                (1u64 << 52) + 1,
                (1 << 53) - 1,
                (1 << 52) + 12345,
                6_755_399_441_055_745,
            ] {
                for delta in [-1, 0, 1] {
                    check(&dyadic(2 * m + 1, e - 1, delta));
                }
            }
        }
    }

    #[test]
    fn exact_doubles_and_their_products() {
        // Every double m × 2^e written out exactly reads as itself; the
        // product by 1000 then rounds, ties to even, in one case in 2^10.
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for _ in 0..20_000 {
            let m = (1 << 52) | rng.below(1 << 52);
            let e = rng.below(72) as i32 - 66;
            for delta in [-1, 0, 1] {
                check(&dyadic(m, e, delta));
            }
        }
    }

    /// `n × 2^k` in decimal, exactly; `delta` ±1 moves it by one unit of a
    /// decimal place 40 digits below its last.
    fn dyadic(n: u64, k: i32, delta: i8) -> String {
        let mut digits = std::vec![n as u32, (n >> 32) as u32];
        let mut frac_len = 0;
        if k >= 0 {
            for _ in 0..k {
                mul_vec(&mut digits, 2);
            }
        } else {
            for _ in 0..-k {
                mul_vec(&mut digits, 5);
            }
            frac_len = (-k) as usize;
        }
        if delta != 0 {
            for _ in 0..40 {
                mul_vec(&mut digits, 10);
            }
            frac_len += 40;
            add_vec(&mut digits, delta);
        }
        let s = vec_to_string(&digits);
        let s = format!("{}{s}", "0".repeat((frac_len + 1).saturating_sub(s.len())));
        let (int, frac) = s.split_at(s.len() - frac_len);
        format!("{int}.{frac}")
    }

    fn mul_vec(n: &mut Vec<u32>, f: u32) {
        let mut carry = 0u64;
        for limb in n.iter_mut() {
            let t = u64::from(*limb) * u64::from(f) + carry;
            *limb = t as u32;
            carry = t >> 32;
        }
        if carry != 0 {
            n.push(carry as u32);
        }
    }

    /// Adds ±1 (the number is non-zero).
    fn add_vec(n: &mut [u32], delta: i8) {
        for limb in n.iter_mut() {
            let (t, carry) = if delta > 0 {
                limb.overflowing_add(1)
            } else {
                limb.overflowing_sub(1)
            };
            *limb = t;
            if !carry {
                break;
            }
        }
    }

    fn vec_to_string(n: &[u32]) -> String {
        let mut n: Vec<u32> = n.to_vec();
        let mut out = Vec::new();
        while n.iter().any(|&l| l != 0) {
            let mut rem = 0u64;
            for limb in n.iter_mut().rev() {
                let t = (rem << 32) | u64::from(*limb);
                *limb = (t / 10) as u32;
                rem = t % 10;
            }
            out.push(b'0' + rem as u8);
        }
        if out.is_empty() {
            out.push(b'0');
        }
        out.reverse();
        String::from_utf8(out).unwrap()
    }

    /// xorshift64*: deterministic, so a failure reproduces.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
        fn digits(&mut self, n: u64) -> String {
            (0..n)
                .map(|_| char::from(b'0' + self.below(10) as u8))
                .collect()
        }
    }

    #[test]
    fn agrees_with_the_float_parser_on_random_numerals() {
        let mut rng = Rng(0x2545_F491_4F6C_DD1D);
        for _ in 0..50_000 {
            let sign = ["", "", "+", "-"][rng.below(4) as usize];
            let int_len = [0, 1, 2, 5, 10, 17, 20, 30][rng.below(8) as usize];
            let frac_len = [0, 0, 1, 3, 10, 20, 40, 120][rng.below(8) as usize];
            let mut int = rng.digits(int_len);
            if rng.below(3) == 0 {
                int = format!("{}{int}", "0".repeat(rng.below(5) as usize));
            }
            let frac = rng.digits(frac_len);
            let mut token = format!("{sign}{int}");
            if frac_len > 0 || rng.below(4) == 0 {
                token.push('.');
                token.push_str(&frac);
            }
            if int.is_empty() && frac.is_empty() {
                token.push('0');
            }
            if rng.below(2) == 0 {
                let e = rng.below(60) as i64 - 30;
                token.push_str(&format!("e{e}"));
            }
            check(&token);
        }
    }

    /// Every numeral-looking run of the error corpora and of the fuzz
    /// seeds of the hint target, and each of its suffixes, that the grammar
    /// accepts.
    #[test]
    fn agrees_with_the_float_parser_on_the_corpora_and_fuzz_seeds() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut texts: Vec<Vec<u8>> = Vec::new();
        for file in [
            "tests/corpus/errors.jsonl",
            "tests/corpus/extended/errors.jsonl",
        ] {
            texts.push(std::fs::read(root.join(file)).unwrap());
        }
        let seeds = std::fs::read_dir(root.join("fuzz/corpus/hint")).unwrap();
        for seed in seeds {
            texts.push(std::fs::read(seed.unwrap().path()).unwrap());
        }
        assert!(texts.len() > 10, "the hint seeds are missing");
        let mut checked = 0;
        for text in &texts {
            for run in text.split(|b| !b"+-.0123456789eE".contains(b)) {
                for start in 0..run.len() {
                    let token = &run[start..];
                    if token.len() <= 400 && seconds_ms(token).is_some() {
                        check(core::str::from_utf8(token).unwrap());
                        checked += 1;
                    }
                }
            }
        }
        assert!(checked > 1_000, "{checked}");
    }

    #[test]
    fn long_mantissas_are_exact_and_linear() {
        // 10^655360 × 10^-655360 seconds. (`str::parse::<f64>` says `inf`
        // here: it stops reading an exponent's digits once it reaches
        // 65536, so `e-655360` becomes `e-65536`. With an exponent of five
        // digits it agrees.)
        let token = format!("1{}e-655360", "0".repeat(655_360));
        assert_eq!(seconds_ms(token.as_bytes()), Some(1000));
        let token = format!("1{}e-400000", "0".repeat(400_000));
        assert_eq!(seconds_ms(token.as_bytes()), Some(1000));
        check(&token);
        let token = format!("0.{}1e655360", "0".repeat(655_359));
        assert_eq!(seconds_ms(token.as_bytes()), Some(1000));
        // Just above one ms by a digit far beyond any double's precision.
        let token = format!("0.001{}1", "0".repeat(100_000));
        assert_eq!(seconds_ms(token.as_bytes()), Some(1));
        check(&token);
        let token = format!("0.000{}", "9".repeat(100_000));
        check(&token);
        assert_eq!(seconds_ms(token.as_bytes()), Some(1));
    }

    #[test]
    fn numerals_times_units() {
        let n = |s: &str, unit| numeral_ms(s.as_bytes(), unit);
        assert_eq!(n("41.820516331", 1000), Some(41_821));
        assert_eq!(n("8.3", 60_000), Some(498_000));
        assert_eq!(n("0.0001", 1000), Some(1));
        assert_eq!(n("158", 60_000), Some(9_480_000));
        assert_eq!(n("5.", 1000), Some(5_000));
        assert_eq!(n(".5", 1000), Some(500));
        assert_eq!(n("0012", 1), Some(12));
        assert_eq!(n("0.5", 1), Some(1));
        assert_eq!(n("0", 1000), Some(0));
        assert_eq!(n("0.000", 3_600_000), Some(0));
        assert_eq!(n("1.0000000000000000000000000001", 1), Some(2));
        assert_eq!(n("99999999999999999999", 1), Some(u64::MAX));
        // u64::MAX is 5124095576030.431... hours.
        assert_eq!(
            n("5124095576030", 3_600_000),
            Some(18_446_744_073_708_000_000)
        );
        assert_eq!(
            n("5124095576030.431", 3_600_000),
            Some(18_446_744_073_709_551_600)
        );
        assert_eq!(
            n("5124095576030.4310000042", 3_600_000),
            Some(18_446_744_073_709_551_601)
        );
        assert_eq!(n("5124095576030.432", 3_600_000), Some(u64::MAX));
        assert_eq!(n("5124095576030.4310042", 3_600_000), Some(u64::MAX));
        for bad in ["", ".", "1.2.3", "..5", "1,5", "1e3", "-1", "+1", "١"] {
            assert_eq!(n(bad, 1000), None, "{bad}");
        }
        let long = format!("0.{}1", "0".repeat(100_000));
        assert_eq!(n(&long, 3_600_000), Some(1));
    }

    #[test]
    fn numerals_agree_with_exact_rationals() {
        // ceil(numeral × unit) against u128 arithmetic on short numerals.
        let mut rng = Rng(7);
        for _ in 0..100_000 {
            let (int_len, frac_len) = (rng.below(8), rng.below(12));
            let int = rng.digits(int_len);
            let frac = rng.digits(frac_len);
            if int.is_empty() && frac.is_empty() {
                continue;
            }
            let unit = [1u64, 1000, 60_000, 3_600_000][rng.below(4) as usize];
            let scale = 10u128.pow(frac.len() as u32);
            let parse = |s: &str| {
                if s.is_empty() {
                    0
                } else {
                    s.parse::<u128>().unwrap()
                }
            };
            let value = parse(&int) * scale + parse(&frac);
            let want = (value * u128::from(unit)).div_ceil(scale);
            let text = format!("{int}.{frac}");
            let got = numeral_ms(text.as_bytes(), unit).map(u128::from);
            assert_eq!(got, Some(want), "{text} × {unit}");
            if frac.is_empty() {
                assert_eq!(numeral_ms(int.as_bytes(), unit).map(u128::from), Some(want));
            }
        }
    }
}
