//! Dates in Unix milliseconds, on bytes: RFC 3339 timestamps (spec 3.5,
//! rule 2; the Anthropic rate-limit resets of 13.1) and HTTP's IMF-fixdate
//! (`retry-after`, 13.1).
//!
//! Every field has a fixed number of digits, so the arithmetic is bounded
//! (years 0000 to 9999: about ±3.2e14 ms) and cannot overflow. Allocation-
//! and panic-free.

/// The instant of an HTTP date in the IMF-fixdate form (spec 13.1:
/// `Sun, 06 Nov 1994 08:49:37 GMT`) in Unix ms, or `None` when the token
/// is not one or its fields are not a real date and time. The names are
/// matched exactly, case included; the day name is not checked against the
/// date.
pub(crate) fn imf_fixdate_ms(token: &[u8]) -> Option<i64> {
    const DAYS: [&[u8; 3]; 7] = [b"Mon", b"Tue", b"Wed", b"Thu", b"Fri", b"Sat", b"Sun"];
    const MONTHS: [&[u8; 3]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    let (name, rest) = token.split_at_checked(3)?;
    DAYS.iter().any(|d| d.as_slice() == name).then_some(())?;
    let mut cur = Cursor(rest);
    cur.expect(b',')?;
    cur.expect(b' ')?;
    let day = cur.fixed(2)?;
    cur.expect(b' ')?;
    let (name, rest) = cur.0.split_at_checked(3)?;
    let month = MONTHS.iter().position(|m| m.as_slice() == name)?;
    let month = i64::try_from(month).ok()? + 1;
    cur.0 = rest;
    cur.expect(b' ')?;
    let year = cur.fixed(4)?;
    cur.expect(b' ')?;
    let hour = cur.fixed(2)?;
    cur.expect(b':')?;
    let minute = cur.fixed(2)?;
    cur.expect(b':')?;
    let second = cur.fixed(2)?;
    if cur.0 != b" GMT"
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    Some((days * 86_400 + hour * 3_600 + minute * 60 + second) * 1000)
}

/// The instant of an RFC 3339 timestamp (spec 3.5, rule 2) in Unix ms, or
/// `None` when the token is not one or its fields are not a real date and
/// time.
///
/// Every field has a fixed number of digits, so the arithmetic below is
/// bounded (years 0000 to 9999: about ±3.2e14 ms) and cannot overflow.
pub(crate) fn rfc3339_ms(token: &[u8]) -> Option<i64> {
    let mut cur = Cursor(token);
    let year = cur.fixed(4)?;
    cur.expect(b'-')?;
    let month = cur.fixed(2)?;
    cur.expect(b'-')?;
    let day = cur.fixed(2)?;
    cur.eat_any(b"Tt").then_some(())?;
    let hour = cur.fixed(2)?;
    cur.expect(b':')?;
    let minute = cur.fixed(2)?;
    let (mut second, mut milli) = (0, 0);
    if cur.eat(b':') {
        second = cur.fixed(2)?;
        if cur.eat(b'.') {
            let fraction = cur.digits();
            if fraction.is_empty() {
                return None;
            }
            // Truncated to milliseconds.
            for i in 0..3 {
                milli = milli * 10 + fraction.get(i).map_or(0, |d| i64::from(d - b'0'));
            }
        }
    }
    let offset_minutes = if cur.eat_any(b"Zz") {
        0
    } else {
        let sign = if cur.eat(b'+') {
            1
        } else if cur.eat(b'-') {
            -1
        } else {
            return None;
        };
        let oh = cur.fixed(2)?;
        cur.expect(b':')?;
        let om = cur.fixed(2)?;
        if oh > 23 || om > 59 {
            return None;
        }
        sign * (oh * 60 + om)
    };
    if !cur.0.is_empty()
        || !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let days = days_from_civil(year, month, day);
    let seconds = days * 86_400 + hour * 3_600 + minute * 60 + second - offset_minutes * 60;
    Some(seconds * 1000 + milli)
}

fn is_leap(year: i64) -> bool {
    year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        2 if is_leap(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
/// `days_from_civil`).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (month + 9) % 12; // March = 0
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// A forward-only reader over bytes.
struct Cursor<'a>(&'a [u8]);

impl<'a> Cursor<'a> {
    fn eat(&mut self, byte: u8) -> bool {
        self.eat_any(&[byte])
    }

    fn eat_any(&mut self, set: &[u8]) -> bool {
        match self.0 {
            [first, rest @ ..] if set.contains(first) => {
                self.0 = rest;
                true
            }
            _ => false,
        }
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    /// The longest run of ASCII digits at the cursor (possibly empty).
    fn digits(&mut self) -> &'a [u8] {
        let n = self.0.iter().take_while(|b| b.is_ascii_digit()).count();
        let (run, rest) = self.0.split_at(n);
        self.0 = rest;
        run
    }

    /// Exactly `n` ASCII digits (`n` ≤ 4).
    fn fixed(&mut self, n: usize) -> Option<i64> {
        let run = self.0.get(..n)?;
        if !run.iter().all(u8::is_ascii_digit) {
            return None;
        }
        self.0 = self.0.get(n..)?;
        Some(run.iter().fold(0, |v, &d| v * 10 + i64::from(d - b'0')))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imf_fixdates() {
        let at = |t: &str| imf_fixdate_ms(t.as_bytes());
        assert_eq!(at("Sun, 06 Nov 1994 08:49:37 GMT"), Some(784_111_777_000));
        assert_eq!(at("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        // The day name is not checked against the date.
        assert_eq!(at("Mon, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(at("Tue, 29 Feb 2028 23:59:59 GMT"), Some(1_835_481_599_000));
        assert_eq!(at("Wed, 31 Dec 1969 23:59:59 GMT"), Some(-1_000));
        for bad in [
            "sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 gmt",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun,06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT ",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Sat, 31 Sep 2026 14:14:00 GMT",
            "Sat, 29 Feb 2027 14:14:00 GMT",
            "Sat, 29 Feb 1900 14:14:00 GMT",
            "Sat, 00 Feb 2026 14:14:00 GMT",
            "Sat, 01 Feb 2026 24:00:00 GMT",
            "Sat, 01 Feb 2026 00:60:00 GMT",
            "Sat, 01 Feb 2026 00:00:60 GMT",
            "Sat, 01 Feb 2026 00:00:0x GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT\r",
            "",
            "Sun",
        ] {
            assert_eq!(at(bad), None, "{bad:?}");
        }
    }
}
