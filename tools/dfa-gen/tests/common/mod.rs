//! Helpers shared by the differential tests: a deterministic generator,
//! the awkward characters and bytes, the corpora, and reference hints
//! computed with the `regex` crate.
#![allow(dead_code)]

use autoretry_gen::{translate, Letters};
use regex::Regex;

/// xorshift64*: deterministic, so a failure reproduces.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    pub fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.below(items.len())]
    }
}

/// Separators: ASCII and Unicode white space, line terminators, letters
/// that fold only under Unicode rules, other scalar values.
pub const SEPARATORS: &[&str] = &[
    " ", " ", " ", "", "", "", "\n", "\r", "\r\n", "\u{2028}", "\u{2029}", "\t", "\u{0B}",
    "\u{0C}", "\u{A0}", "\u{2003}", "\u{2027}", "\u{202A}", "\u{85}", "İ", "ı", "ſ", "\u{212A}",
    "é", "😀", "\u{FFFD}", "—", "٥", ": ", "x", "  ",
];

/// Invalid UTF-8: truncated, overlong, surrogates, stray continuations, and
/// the first bytes of U+2028.
pub const INVALID: &[&[u8]] = &[
    b"\xFF",
    b"\xC0\xAF",
    b"\xE0\x80\xAF",
    b"\xED\xA0\x80",
    b"\xF0\x9F\x98",
    b"\xE2\x80",
    b"\x80\x80",
    b"\xF4\x90\x80\x80",
    b"\xC3",
    b"\xE2",
    b"\xE2\x80\xE2\x80\xA8",
    b"\xBF",
];

/// Changes the case of some ASCII letters (and maps some to look-alikes
/// that must not fold: `k` to the Kelvin sign, `s` to long s, `i` to dotless
/// or dotted capital I).
pub fn mangle(rng: &mut Rng, text: &str) -> String {
    let mode = rng.below(4);
    text.chars()
        .map(|c| match mode {
            0 => c.to_string(),
            1 => c.to_ascii_uppercase().to_string(),
            _ if rng.below(40) == 0 => match c {
                'k' => "\u{212A}".into(),
                's' => "ſ".into(),
                'i' => (if rng.below(2) == 0 { "ı" } else { "İ" }).into(),
                c => c.to_ascii_uppercase().to_string(),
            },
            _ if rng.below(3) == 0 => c.to_ascii_uppercase().to_string(),
            _ => c.to_string(),
        })
        .collect()
}

/// Up to ten fragments, case-mangled, with separators between, sometimes
/// cut anywhere.
pub fn generated(rng: &mut Rng, fragments: &[&str]) -> String {
    let mut text = String::new();
    for _ in 0..1 + rng.below(10) {
        let word = rng.pick(fragments);
        let fragment = mangle(rng, word);
        text.push_str(&fragment);
        text.push_str(rng.pick(SEPARATORS));
    }
    if rng.below(4) == 0 {
        // Cut anywhere (on a character boundary).
        let cuts: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        let at = cuts[rng.below(cuts.len())];
        text = if rng.below(2) == 0 {
            text[at..].into()
        } else {
            text[..at].into()
        };
    }
    text
}

/// The texts of a corpus file of the main crate (`tests/corpus/...`).
pub fn corpus(file: &str) -> Vec<String> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(file);
    std::fs::read_to_string(path)
        .expect(file)
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            // The rows are JSON objects whose first key is "text".
            let start = l.find("\"text\":").expect("a text") + 7;
            let end = l.find(",\"retryable\"").expect("labels after the text");
            decode_json_string(&l[start..end])
        })
        .collect()
}

/// Decodes one JSON string literal (the corpus only needs the common escapes
/// and `\uXXXX`, with surrogate pairs).
fn decode_json_string(lit: &str) -> String {
    let inner = &lit[1..lit.len() - 1];
    let mut out = String::new();
    let mut chars = inner.chars();
    let mut pending: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next().expect("an escape") {
            'n' => out.push('\n'),
            'r' => out.push('\r'),
            't' => out.push('\t'),
            'b' => out.push('\u{8}'),
            'f' => out.push('\u{C}'),
            'u' => {
                let hex: String = chars.by_ref().take(4).collect();
                let unit = u32::from_str_radix(&hex, 16).expect("hex");
                if (0xD800..0xDC00).contains(&unit) {
                    pending = Some(unit);
                } else if let (Some(hi), true) = (pending.take(), (0xDC00..0xE000).contains(&unit))
                {
                    out.push(
                        char::from_u32(0x10000 + ((hi - 0xD800) << 10) + (unit - 0xDC00)).unwrap(),
                    );
                } else {
                    out.push(char::from_u32(unit).expect("a scalar value"));
                }
            }
            other => out.push(other),
        }
    }
    out
}

/// A JavaScript pattern of the spec in the reference form, compiled by
/// `regex` (leftmost-first, greedy: the match and captures a JavaScript
/// `exec` finds, for these patterns without back-references or
/// look-around).
pub fn re(js: &str) -> Regex {
    Regex::new(&translate(js, Letters::Both).unwrap()).unwrap()
}

/// The retry hints of spec 3.5 and 10.4 without a clock, by the spec's own
/// regular expressions and exact (or, for rule 2, IEEE double) arithmetic.
pub struct Hints {
    retry_after_ms: Regex,
    retry_after: Regex,
    reset_ms: Regex,
    reset_s: Regex,
    reset_after: Regex,
    please_retry_in: Regex,
    retry_delay: Regex,
    try_again_in: Regex,
    number: Regex,
}

/// What a reference rule gives: `None` when the reference cannot tell (a
/// number too long for its arithmetic), else the rule's value.
type Known = Option<Option<u64>>;

impl Hints {
    pub fn new() -> Self {
        Hints {
            retry_after_ms: re(r"retry-after-ms\s*[:=]\s*(\d+)"),
            retry_after: re(r"retry-after\s*[:=]\s*([^\s,;]+)"),
            reset_ms: re(r"x-ratelimit-reset-ms\s*[:=]\s*(\d+)"),
            reset_s: re(r"x-ratelimit-reset\s*[:=]\s*(\d+)"),
            reset_after: re(r"reset after (?:(\d+)h)?(?:(\d+)m)?(\d+(?:\.\d+)?)s"),
            please_retry_in: re(r"please retry in ([\d.]+)(ms|s)"),
            retry_delay: re(r#""retryDelay":\s*"([\d.]+)(ms|s)""#),
            try_again_in: re(
                r"try again in\s+~?\s*([\d.]+)\s*(ms|sec|s|minutes?|mins?|m|hours?|hrs?|h)\b",
            ),
            number: Regex::new(r"^[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?$").unwrap(),
        }
    }

    /// Spec 3.5 with no clock.
    pub fn retry_hint(&self, text: &str) -> Known {
        first_known([
            self.rule_retry_after_ms(text),
            self.rule_retry_after(text),
            self.rule_reset_ms(text),
            self.rule_reset_s(text),
        ])
    }

    /// Spec 10.4 with no clock.
    pub fn wait_hint(&self, text: &str) -> Known {
        let nonzero = |k: Known| k.map(|v| v.filter(|&ms| ms != 0));
        first_known([
            self.rule_retry_after_ms(text),
            self.rule_retry_after(text),
            nonzero(self.rule_reset_after(text)),
            nonzero(self.numeral_rule(&self.please_retry_in, text)),
            nonzero(self.numeral_rule(&self.retry_delay, text)),
            nonzero(self.numeral_rule(&self.try_again_in, text)),
            self.rule_reset_ms(text),
            self.rule_reset_s(text),
        ])
    }

    fn rule_retry_after_ms(&self, text: &str) -> Known {
        Some(self.retry_after_ms.captures(text).map(|c| digits(&c[1])))
    }

    fn rule_retry_after(&self, text: &str) -> Known {
        let Some(c) = self.retry_after.captures(text) else {
            return Some(None);
        };
        let token = &c[1];
        if !self.number.is_match(token) {
            // A timestamp needs a clock: nothing either way.
            return Some(None);
        }
        // str::parse::<f64> stops reading an exponent at 65536; keep away.
        let exponent = token.find(['e', 'E']).map_or("", |i| &token[i + 1..]);
        if exponent.trim_start_matches(['+', '-']).len() > 4 {
            return None;
        }
        let seconds: f64 = token.parse().unwrap();
        Some(Some((seconds * 1000.0) as u64))
    }

    fn rule_reset_ms(&self, text: &str) -> Known {
        Some(
            self.reset_ms
                .captures(text)
                .and_then(|c| Some(digits(&c[1])).filter(|&v| v <= 1_000_000_000_000)),
        )
    }

    fn rule_reset_s(&self, text: &str) -> Known {
        Some(
            self.reset_s
                .captures(text)
                .and_then(|c| Some(digits(&c[1])).filter(|&v| v <= 1_000_000_000))
                .map(|v| v * 1000),
        )
    }

    fn rule_reset_after(&self, text: &str) -> Known {
        let Some(c) = self.reset_after.captures(text) else {
            return Some(None);
        };
        let int = |i: usize| c.get(i).map_or(0, |m| u128::from(digits(m.as_str())));
        let seconds = exact_ceil(&c[3], 1000)?;
        let total = (int(1) * 60 + int(2)) * 60 * 1000 + seconds;
        Some(Some(u64::try_from(total).unwrap_or(u64::MAX)))
    }

    /// Rules 4 to 6: a numeral and a unit.
    fn numeral_rule(&self, rule: &Regex, text: &str) -> Known {
        let Some(c) = rule.captures(text) else {
            return Some(None);
        };
        let numeral = &c[1];
        let is_numeral =
            numeral.matches('.').count() <= 1 && numeral.contains(|c: char| c.is_ascii_digit());
        if !is_numeral {
            return Some(None);
        }
        let unit = match c[2].to_ascii_lowercase().as_str() {
            "ms" => 1,
            "s" | "sec" => 1000,
            "m" | "min" | "mins" | "minute" | "minutes" => 60_000,
            _ => 3_600_000,
        };
        let value = exact_ceil(numeral, unit)?;
        Some(Some(u64::try_from(value).unwrap_or(u64::MAX)))
    }
}

/// The first rule that yields a value, or `None` when an unknown comes
/// before it.
fn first_known<const N: usize>(rules: [Known; N]) -> Known {
    for rule in rules {
        match rule {
            None => return None,
            Some(Some(v)) => return Some(Some(v)),
            Some(None) => {}
        }
    }
    Some(None)
}

/// Digits, saturating at `u64::MAX`.
fn digits(s: &str) -> u64 {
    s.bytes().fold(0u64, |v, d| {
        v.saturating_mul(10).saturating_add(u64::from(d - b'0'))
    })
}

/// `ceil(numeral × unit)` for a numeral of at most one `.`, in u128, or
/// `None` when it has too many digits for that (the result is capped above
/// `u64::MAX`).
fn exact_ceil(numeral: &str, unit: u128) -> Option<u128> {
    let (int, frac) = numeral.split_once('.').unwrap_or((numeral, ""));
    let int = int.trim_start_matches('0');
    if int.len() > 20 {
        return Some(u128::from(u64::MAX) + 1);
    }
    if frac.len() > 10 {
        return None;
    }
    let parse = |s: &str| {
        if s.is_empty() {
            0
        } else {
            s.parse::<u128>().unwrap()
        }
    };
    let scale = 10u128.pow(frac.len() as u32);
    Some((parse(int) * scale + parse(frac)) * unit).map(|v| v.div_ceil(scale))
}
