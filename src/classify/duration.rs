//! Durations (spec 13.4): `6m0s`, `23h47m36.648s`, `1.5µs`,
//! `5 days 22 hours 11 minutes`, read on bytes.
//!
//! A duration is one or more parts, each a numeral (digits with at most one
//! `.` and at least one digit), optional ASCII white space and a unit: the
//! whole run of letters that follows (ASCII letters, and `µ` as U+00B5 or
//! U+03BC), which must be one of the units of [`unit`]. Between two parts
//! there may be a possibly empty run of ASCII white space, commas and the
//! word `and` (not followed by a letter). The duration is the longest such
//! sequence of parts; its value is the exact sum, rounded up to a whole
//! millisecond, saturating at `u64::MAX`.
//!
//! # Exact arithmetic without allocation
//!
//! A part is `numeral × c × 10^e` ms, with the unit's `c` in
//! {1, 6, 36, 864} and `e` in -6..=5. Each digit of the numeral weighs
//! `c × 10^-k` ms for some `k`: the digits with `k <= 0` make the whole
//! milliseconds, summed saturating. The digits below a millisecond are
//! summed in *levels* of [`LEVEL_DIGITS`] decimal places (level `L` holds
//! `k` in `38(L-1)+1 ..= 38L`), each level's sum an integer in units of
//! `10^-38L` ms. The first level and a flag for anything deeper settle the
//! rounding unless the sum lands within `Σ c` units of a whole millisecond
//! with deeper digits present; only then is the next level read (one more
//! pass over the duration), and so on. Real durations never need a second
//! pass; a crafted one with fractions that cancel over many digits needs
//! one pass per 38 digits of its longest fraction.
//!
//! Every function here is allocation-free and panic-free, and the first
//! pass is linear in the length of the input.

/// Decimal places below a millisecond summed per level: `10^38 < 2^127`,
/// so a level's digits fit a `u128`.
const LEVEL_DIGITS: i64 = 38;
/// One unit of the level above, in units of a level: `10^38`.
const LEVEL: u128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;
/// `10^19`, half of a level's digits, to multiply a level's value by a
/// unit's `c` without overflow.
const HALF_LEVEL: u128 = 10_000_000_000_000_000_000;

/// A unit in milliseconds: `c × 10^e`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Unit {
    c: u64,
    e: i64,
}

/// One part of a duration: a numeral split at its `.`, and its unit.
#[derive(Clone, Copy)]
struct Part<'a> {
    int: &'a [u8],
    frac: &'a [u8],
    unit: Unit,
}

/// The longest duration at the start of `s`: its value in ms (exact sum,
/// rounded up, saturating) and its length in bytes. `None` when no part
/// starts at `s[0]`.
pub(crate) fn prefix(s: &[u8]) -> Option<(u64, usize)> {
    let mut whole = 0u64;
    let mut first = Level::default();
    let len = scan(s, |part| {
        whole = whole.saturating_add(part.whole_ms());
        first.add(part, 1);
    });
    if len == 0 {
        return None;
    }
    let s = s.get(..len)?;
    Some((whole.saturating_add(first.round_up(s)), len))
}

/// `s` as one duration, nothing before or after it: its value in ms
/// (`6m0s` is 360,000; `60`, with no unit, is none).
pub(crate) fn whole(s: &[u8]) -> Option<u64> {
    prefix(s).and_then(|(ms, len)| (len == s.len()).then_some(ms))
}

/// Reads the longest duration at the start of `s`, calling `each` on its
/// parts in order; its length (0 when none starts there).
fn scan<'a>(s: &'a [u8], mut each: impl FnMut(&Part<'a>)) -> usize {
    let mut end = 0;
    let mut rest = s;
    while let Some((part, after)) = part(rest) {
        each(&part);
        end = s.len() - after.len();
        rest = separator(after);
    }
    end
}

/// A part at the start of `s`, and the text after its unit.
fn part(s: &[u8]) -> Option<(Part<'_>, &[u8])> {
    let int_len = s.iter().take_while(|b| b.is_ascii_digit()).count();
    let (int, rest) = s.split_at(int_len);
    let (frac, rest) = match rest {
        [b'.', tail @ ..] => {
            let n = tail.iter().take_while(|b| b.is_ascii_digit()).count();
            tail.split_at(n)
        }
        _ => (&[][..], rest),
    };
    if int.is_empty() && frac.is_empty() {
        return None;
    }
    let rest = skip_ws(rest);
    let letters = letter_run(rest);
    let (name, after) = rest.split_at(letters);
    Some((
        Part {
            int,
            frac,
            unit: unit(name)?,
        },
        after,
    ))
}

/// The units of spec 13.4, by their whole name (ASCII letters compare
/// case-insensitively; `µ` is U+00B5 or U+03BC).
fn unit(name: &[u8]) -> Option<Unit> {
    let micro = |rest: &[u8]| rest.eq_ignore_ascii_case(b"s");
    let (c, e) = match name {
        [0xC2, 0xB5, rest @ ..] | [0xCE, 0xBC, rest @ ..] if micro(rest) => (1, -3),
        _ => {
            let mut lower = [0u8; 12];
            let slot = lower.get_mut(..name.len())?;
            for (l, &b) in slot.iter_mut().zip(name) {
                *l = b.to_ascii_lowercase();
            }
            match &*slot {
                b"ns" => (1, -6),
                b"us" => (1, -3),
                b"ms" | b"millisecond" | b"milliseconds" => (1, 0),
                b"s" | b"sec" | b"secs" | b"second" | b"seconds" => (1, 3),
                b"m" | b"min" | b"mins" | b"minute" | b"minutes" => (6, 4),
                b"h" | b"hr" | b"hrs" | b"hour" | b"hours" => (36, 5),
                b"d" | b"day" | b"days" => (864, 5),
                _ => return None,
            }
        }
    };
    Some(Unit { c, e })
}

/// The length of the run of letters (ASCII letters, `µ` as U+00B5 or
/// U+03BC) at the start of `s`.
fn letter_run(s: &[u8]) -> usize {
    let mut n = 0;
    loop {
        match letter_len(s.get(n..).unwrap_or_default()) {
            0 => return n,
            len => n += len,
        }
    }
}

/// The length of the letter at the start of `s`, 0 when none is.
fn letter_len(s: &[u8]) -> usize {
    match s {
        [b, ..] if b.is_ascii_alphabetic() => 1,
        [0xC2, 0xB5, ..] | [0xCE, 0xBC, ..] => 2,
        _ => 0,
    }
}

/// The text after the run of ASCII white space, commas and `and`s (not
/// followed by a letter) at the start of `s`.
fn separator(mut s: &[u8]) -> &[u8] {
    loop {
        match s {
            [b, rest @ ..] if is_ws(*b) || *b == b',' => s = rest,
            [a, n, d, rest @ ..]
                if [*a, *n, *d].eq_ignore_ascii_case(b"and") && letter_len(rest) == 0 =>
            {
                s = rest
            }
            _ => return s,
        }
    }
}

/// ASCII white space, as `\s` of spec 3.1.
fn is_ws(b: u8) -> bool {
    matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ')
}

fn skip_ws(s: &[u8]) -> &[u8] {
    let n = s.iter().take_while(|&&b| is_ws(b)).count();
    s.get(n..).unwrap_or_default()
}

impl Part<'_> {
    /// The digit of weight `c × 10^-k` ms (0 outside the numeral).
    fn digit(&self, k: i64) -> u8 {
        let p = k.saturating_add(self.unit.e);
        let d = if p >= 1 {
            usize::try_from(p - 1).ok().and_then(|i| self.frac.get(i))
        } else {
            // p = 0 is the last digit of the integer part.
            usize::try_from(p.unsigned_abs())
                .ok()
                .and_then(|back| self.int.len().checked_sub(1 + back))
                .and_then(|i| self.int.get(i))
        };
        d.map_or(0, |d| d.wrapping_sub(b'0'))
    }

    /// The whole milliseconds of the digits with `k <= 0`, times `c`,
    /// saturating.
    fn whole_ms(&self) -> u64 {
        // The digits from the first of the integer part to k = 0, that is
        // position p = e: the integer part without its last -e digits when
        // e < 0, or followed by the first e of the fraction when e > 0.
        let drop = usize::try_from(-self.unit.e).unwrap_or(0);
        let int = self
            .int
            .get(..self.int.len().saturating_sub(drop))
            .unwrap_or_default();
        let frac_digits = (1..=self.unit.e).map(|p| {
            usize::try_from(p - 1)
                .ok()
                .and_then(|i| self.frac.get(i))
                .map_or(0, |d| d.wrapping_sub(b'0'))
        });
        int.iter()
            .map(|d| d.wrapping_sub(b'0'))
            .chain(frac_digits)
            .fold(0u64, |v, d| {
                v.saturating_mul(10).saturating_add(u64::from(d))
            })
            .saturating_mul(self.unit.c)
    }

    /// Level `level`'s digits as an integer in units of `10^-38·level` ms
    /// (before `c`), below `10^38`.
    fn level_value(&self, level: i64) -> u128 {
        let last = level.saturating_mul(LEVEL_DIGITS);
        let first = last.saturating_sub(LEVEL_DIGITS - 1);
        (first..=last).fold(0u128, |v, k| v * 10 + u128::from(self.digit(k)))
    }

    /// Whether a digit with `k > 38·level` is not zero.
    fn deeper(&self, level: i64) -> bool {
        // Position p = k + e > 38·level + e: the fraction from index
        // 38·level + e on, and the integer part's digits with p <= 0 there.
        let from = level
            .saturating_mul(LEVEL_DIGITS)
            .saturating_add(self.unit.e);
        let frac_from = usize::try_from(from).unwrap_or(0);
        let in_frac = self
            .frac
            .get(frac_from..)
            .is_some_and(|f| f.iter().any(|&d| d != b'0'));
        let int_back = usize::try_from(-from).unwrap_or(0);
        let in_int = self
            .int
            .get(self.int.len().saturating_sub(int_back)..)
            .is_some_and(|f| f.iter().any(|&d| d != b'0'));
        in_frac || in_int
    }
}

/// One level's sum over the parts: `carry × 10^38 + rem` units, whether a
/// deeper digit is non-zero, and `Σ c`, the bound of everything deeper
/// (each part's deeper digits are worth less than its `c` units).
#[derive(Default)]
struct Level {
    carry: u128,
    rem: u128,
    deeper: bool,
    bound: u128,
}

impl Level {
    fn add(&mut self, part: &Part<'_>, level: i64) {
        let c = u128::from(part.unit.c);
        let w = part.level_value(level);
        // w × c = hi × 10^19 + lo, with hi and lo below 10^22.
        let (hi, lo) = (w / HALF_LEVEL * c, w % HALF_LEVEL * c);
        self.rem += lo;
        self.normalize();
        self.rem += hi % HALF_LEVEL * HALF_LEVEL;
        self.normalize();
        self.carry = self.carry.saturating_add(hi / HALF_LEVEL);
        self.deeper |= part.deeper(level);
        self.bound = self.bound.saturating_add(c);
    }

    fn normalize(&mut self) {
        self.carry = self.carry.saturating_add(self.rem / LEVEL);
        self.rem %= LEVEL;
    }

    /// Level `level` of the duration `s` (whose parts are all of `s`).
    fn read(s: &[u8], level: i64) -> Level {
        let mut sum = Level::default();
        scan(s, |part| sum.add(part, level));
        sum
    }

    /// `ceil` of everything below a millisecond, for the first level `self`
    /// of the duration `s`.
    fn round_up(&self, s: &[u8]) -> u64 {
        let ceil = if self.rem == 0 && !self.deeper {
            self.carry
        } else if self.deeper && exceeds(s, 1, LEVEL - self.rem, self.bound) {
            // rem + deeper > 10^38: one more than the carry and the rem.
            self.carry.saturating_add(2)
        } else {
            self.carry.saturating_add(1)
        };
        u64::try_from(ceil).unwrap_or(u64::MAX)
    }
}

/// Whether the digits below level `level` of `s` (in units of that level)
/// sum to more than `target` (at least 1). Each step reads one level more,
/// and only while the answer is still open.
fn exceeds(s: &[u8], mut level: i64, mut target: u128, bound: u128) -> bool {
    loop {
        // Everything below `level` is worth less than `bound` units.
        if target >= bound {
            return false;
        }
        level = level.saturating_add(1);
        let next = Level::read(s, level);
        // Below `level - 1`, in its units: carry + (rem + deeper) / 10^38,
        // whose fractional share lies in [0, 2).
        if next.carry > target {
            return true;
        }
        if next.carry == target {
            return next.rem != 0 || next.deeper;
        }
        if next.carry.saturating_add(1) < target {
            return false;
        }
        // carry + 1 == target: is rem + deeper > 10^38?
        if !next.deeper {
            return false;
        }
        target = LEVEL - next.rem;
    }
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use std::{format, string::String};

    fn ms(s: &str) -> Option<u64> {
        whole(s.as_bytes())
    }

    #[test]
    fn the_spec_s_examples() {
        assert_eq!(ms("6m0s"), Some(360_000));
        assert_eq!(ms("23h47m36.648s"), Some(85_656_648));
        assert_eq!(ms("9m38.016s"), Some(578_016));
        assert_eq!(ms("17ms"), Some(17));
        assert_eq!(ms("1.5µs"), Some(1));
        assert_eq!(ms("1.5\u{3bc}s"), Some(1));
        assert_eq!(ms("5 days 22 hours 11 minutes"), Some(511_860_000));
        assert_eq!(ms("0s"), Some(0));
    }

    #[test]
    fn every_unit() {
        for (name, value) in [
            ("ns", 1),
            ("us", 1),
            ("µs", 1),
            ("ms", 1),
            ("millisecond", 1),
            ("milliseconds", 1),
            ("s", 1_000),
            ("sec", 1_000),
            ("secs", 1_000),
            ("second", 1_000),
            ("seconds", 1_000),
            ("m", 60_000),
            ("min", 60_000),
            ("mins", 60_000),
            ("minute", 60_000),
            ("minutes", 60_000),
            ("h", 3_600_000),
            ("hr", 3_600_000),
            ("hrs", 3_600_000),
            ("hour", 3_600_000),
            ("hours", 3_600_000),
            ("d", 86_400_000),
            ("day", 86_400_000),
            ("days", 86_400_000),
        ] {
            assert_eq!(ms(&format!("1{name}")), Some(value), "{name}");
            assert_eq!(
                ms(&format!("1 {}", name.to_ascii_uppercase())),
                Some(value),
                "{name}"
            );
        }
        assert_eq!(ms("2000000ns"), Some(2));
        assert_eq!(ms("2000001ns"), Some(3));
        assert_eq!(ms("3000us"), Some(3));
        for bad in [
            "1x", "1sec.", "1mss", "1msec", "1hours2", "1 µ", "1µ", "1mi", "1dayss",
        ] {
            assert_eq!(ms(bad), None, "{bad}");
        }
    }

    #[test]
    fn not_durations() {
        for bad in [
            "", "60", ".", "s", ".s", "1.2.3s", "-1s", "+1s", " 1s", "1s ", "1s,", "1s and",
            "1e3s", "1_000s", "١s", "1s1", "inf s",
        ] {
            assert_eq!(ms(bad), None, "{bad:?}");
        }
        assert_eq!(prefix(b"abc"), None);
        assert_eq!(prefix(b""), None);
    }

    #[test]
    fn numerals() {
        assert_eq!(ms("5.s"), Some(5_000));
        assert_eq!(ms(".5s"), Some(500));
        assert_eq!(ms("0012ms"), Some(12));
        assert_eq!(ms("8.3 min"), Some(498_000));
        assert_eq!(ms("0.0001s"), Some(1));
        assert_eq!(ms("41.820516331s"), Some(41_821));
        assert_eq!(ms("0.000s"), Some(0));
        assert_eq!(ms("0.5ms"), Some(1));
        assert_eq!(ms("0.5 \t\n\x0b\x0c\rms"), Some(1));
    }

    #[test]
    fn separators() {
        assert_eq!(ms("1h 30m"), Some(5_400_000));
        assert_eq!(ms("1h, 30m"), Some(5_400_000));
        assert_eq!(ms("1h and 30m"), Some(5_400_000));
        assert_eq!(ms("1h,and,AND 30m"), Some(5_400_000));
        assert_eq!(ms("1handand30m"), None);
        assert_eq!(ms("1h and30m"), Some(5_400_000));
        assert_eq!(ms("1h andy 30m"), None);
        assert_eq!(ms("1 day, 2 hours and 3 minutes"), Some(93_780_000));
        // The longest sequence: the separator after the last part is not
        // part of it.
        assert_eq!(prefix(b"5 minutes and then"), Some((300_000, 9)));
        assert_eq!(prefix(b"5s, 6x"), Some((5_000, 2)));
        assert_eq!(prefix(b"5s. 6s"), Some((5_000, 2)));
        assert_eq!(prefix(b"2 hours 1.2.3s"), Some((7_200_000, 7)));
        // The whole run of letters is the unit.
        assert_eq!(prefix(b"5sand 6s"), None);
        assert_eq!(prefix(b"5 seconds."), Some((5_000, 9)));
        // A unit of the same part may repeat: the parts are summed.
        assert_eq!(ms("1s1s1s"), Some(3_000));
    }

    #[test]
    fn the_sum_is_rounded_not_the_parts() {
        assert_eq!(ms("0.5ms0.5ms"), Some(1));
        assert_eq!(ms("0.6ms 0.6ms"), Some(2));
        assert_eq!(ms("600us 400us"), Some(1));
        assert_eq!(ms("600us 401us"), Some(2));
        assert_eq!(ms("999999ns 1ns"), Some(1));
        assert_eq!(ms("999999ns 1.5ns"), Some(2));
        assert_eq!(ms("0.5us 0.5us"), Some(1));
        assert_eq!(ms("1.5µs 1.5µs"), Some(1));
        // A third of a minute is 20 s: 0.3333 min is a little less.
        assert_eq!(ms("0.3333m"), Some(19_998));
        assert_eq!(ms("0.00001d"), Some(864));
        assert_eq!(ms("0.000001d"), Some(87));
    }

    #[test]
    fn saturates() {
        assert_eq!(ms("99999999999999999999999ms"), Some(u64::MAX));
        assert_eq!(ms("213503982334d"), Some(18_446_744_073_657_600_000));
        assert_eq!(ms("213503982335d"), Some(u64::MAX));
        assert_eq!(ms("18446744073709551615ms"), Some(u64::MAX));
        assert_eq!(ms("18446744073709551614ms 0.5ms"), Some(u64::MAX));
        assert_eq!(ms("18446744073709551614ms 0.5ms 0.5ms"), Some(u64::MAX));
        assert_eq!(ms("18446744073709551614ms"), Some(u64::MAX - 1));
        let many = "1d".repeat(300_000);
        assert_eq!(ms(&many), Some(25_920_000_000_000));
    }

    #[test]
    fn cancelling_fractions_far_below_a_millisecond() {
        // 0.5 + 10^-60 and 0.5 - 10^-60: exactly 1.
        let up = format!("0.5{}1ms", "0".repeat(58));
        let down = format!("0.4{}ms", "9".repeat(59));
        assert_eq!(ms(&format!("{up} {down}")), Some(1));
        // 0.5 + 2·10^-60 and 0.5 - 10^-60: just above 1.
        let up2 = format!("0.5{}2ms", "0".repeat(58));
        assert_eq!(ms(&format!("{up2} {down}")), Some(2));
        // 0.5 and 0.5 - 10^-200: just below 1.
        let down = format!("0.4{}ms", "9".repeat(199));
        assert_eq!(ms(&format!("0.5ms {down}")), Some(1));
        // 0.5 + 10^-200 and 0.5 - 10^-200: exactly 1.
        let up = format!("0.5{}1ms", "0".repeat(198));
        assert_eq!(ms(&format!("{up} {down}")), Some(1));
        // 0.5 + 10^-200 and 0.5 - 10^-201: just above 1.
        let down = format!("0.4{}ms", "9".repeat(200));
        assert_eq!(ms(&format!("{up} {down}")), Some(2));
        // Across units: 1/3 min in 40 digits plus the rest of a ms.
        let third = format!("0.{}m", "3".repeat(40));
        // 0.333..3 (40 digits) min = 20000 - 2·10^-36 ms.
        assert_eq!(ms(&third), Some(20_000));
        let rest = format!("0.{}2ns", "0".repeat(29));
        assert_eq!(ms(&format!("{third} {rest}")), Some(20_000));
        let more = format!("0.{}3ns", "0".repeat(29));
        assert_eq!(ms(&format!("{third} {more}")), Some(20_001));
    }

    /// Against exact integers: numerals of up to 8 fraction digits, in
    /// units of 10^-14 ms (8 digits below the ns).
    #[test]
    fn agrees_with_exact_integers() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = |n: u64| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        };
        let units: [(&str, u128); 7] = [
            ("ns", 1),
            ("us", 1_000),
            ("ms", 1_000_000),
            ("s", 1_000_000_000),
            ("m", 60_000_000_000),
            ("h", 3_600_000_000_000),
            ("d", 86_400_000_000_000),
        ];
        for _ in 0..20_000 {
            let mut text = String::new();
            let mut total: u128 = 0; // in units of 10^-14 ms
            for i in 0..=next(4) {
                if i > 0 {
                    text.push_str([" ", ", ", " and ", ""][next(4) as usize]);
                }
                let int_len = next(7) as u32;
                let int = next(10u64.pow(int_len));
                let frac_len = next(9) as u32;
                let frac = next(10u64.pow(frac_len));
                let (name, ns) = units[next(7) as usize];
                let mut numeral = format!("{int}");
                if frac_len > 0 {
                    numeral.push_str(&format!(".{frac:0w$}", w = frac_len as usize));
                }
                text.push_str(&format!("{numeral}{name}"));
                let scale = 10u128.pow(8 - frac_len);
                total += (u128::from(int) * 10u128.pow(frac_len) + u128::from(frac)) * scale * ns;
            }
            let want = total.div_ceil(100_000_000_000_000);
            assert_eq!(ms(&text).map(u128::from), Some(want), "{text}");
        }
    }

    #[test]
    fn long_inputs() {
        let long = format!("{}5s", "0".repeat(1_000_000));
        assert_eq!(ms(&long), Some(5_000));
        let long = format!("0.{}1s", "0".repeat(1_000_000));
        assert_eq!(ms(&long), Some(1));
        let many = "1ms and ".repeat(100_000);
        assert_eq!(prefix(many.as_bytes()), Some((100_000, many.len() - 5)));
    }
}
