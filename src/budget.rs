//! The retry budget shared by sessions (spec §11.4): [`RetryBudget`], in
//! exact thousandths of a token, and the [`BudgetError`] of bad figures.

use core::fmt;

/// A retry budget that one host hands to every machine talking to the same
/// provider (spec §11.4, gRPC's retry throttling).
///
/// Every retry decision charges one token; every run that ends well
/// refills `tokenRatio`; while the tokens are at most `maxTokens / 2`, a
/// retry is throttled (the chain ends at once, nothing waits for tokens).
/// The arithmetic is exact, in thousandths of a token. Hand it to the
/// machine with [`Machine::handle_with_budget`](crate::Machine::handle_with_budget);
/// the plain [`Machine::handle`](crate::Machine::handle) does no accounting.
///
/// One budget can serve any number of machines: in one thread by `&mut`,
/// across tasks behind a mutex held for one `handle_with_budget` call, and
/// across processes in a shared store that applies the same charge and
/// refill atomically (the sidecar's `--budget-store`).
///
/// ```
/// use autoretry::{AssistantMessage, Input, Machine, Output, RetryBudget, StopReason};
///
/// // 4 tokens, a good run refills 0.5 (in thousandths: 500).
/// let mut budget = RetryBudget::new(4, 500).unwrap();
/// let mut a = Machine::default();
/// let mut b = Machine::default();
/// let fail = Input::AgentEnd { message: AssistantMessage::error("529 overloaded_error"), now_ms: None };
///
/// // Each retry decision costs a token: 4 → 3, then 3 → 2.
/// assert!(matches!(a.handle_with_budget(fail, &mut budget).unwrap()[0], Output::Emit(_)));
/// assert_eq!(budget.tokens_milli(), 3000);
/// let out = b.handle_with_budget(fail, &mut budget).unwrap();
/// // At 2 (half of 4) the retry is throttled: the chain ends at once.
/// assert_eq!(out[1..], [Output::Settled, Output::CheckCompaction]);
/// assert_eq!(budget.tokens_milli(), 2000);
///
/// // A run that ends well refills 0.5.
/// let good = Input::AgentEnd { message: AssistantMessage::new(StopReason::Stop), now_ms: None };
/// let _ = b.handle_with_budget(good, &mut budget).unwrap();
/// assert_eq!(budget.to_string(), "2.5");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryBudget {
    /// `maxTokens`, 1 to [`RetryBudget::MAX_TOKENS`].
    max_tokens: u32,
    /// `tokenRatio` in thousandths, 1 to [`RetryBudget::MAX_RATIO_MILLI`].
    ratio_milli: u32,
    /// The tokens in thousandths, 0 to `max_tokens * 1000`.
    tokens_milli: u32,
}

/// Why budget figures were refused (spec §11.4): the field, and what it
/// must be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BudgetError {
    /// The field: `"maxTokens"`, `"tokenRatio"` or `"tokens"`.
    pub field: &'static str,
    /// What the field must be.
    pub expected: &'static str,
}

impl fmt::Display for BudgetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: expected {}", self.field, self.expected)
    }
}

impl core::error::Error for BudgetError {}

const MAX_TOKENS_EXPECTED: &str = "an integer from 1 to 1000";
const RATIO_EXPECTED: &str =
    "a number from 0.001 to 1000 with at most three digits after the point";
const TOKENS_EXPECTED: &str =
    "a number from 0 to maxTokens with at most three digits after the point";

impl RetryBudget {
    /// The largest `maxTokens`.
    pub const MAX_TOKENS: u32 = 1000;
    /// The largest `tokenRatio`, in thousandths (1000 tokens).
    pub const MAX_RATIO_MILLI: u32 = 1_000_000;

    /// A full budget of `max_tokens` (1 to 1000) that refills
    /// `ratio_milli` thousandths of a token per good run (1 to 1,000,000,
    /// that is 0.001 to 1000).
    ///
    /// ```
    /// use autoretry::RetryBudget;
    /// let budget = RetryBudget::new(10, 100).unwrap();
    /// assert_eq!((budget.max_tokens(), budget.tokens_milli()), (10, 10_000));
    /// assert_eq!(RetryBudget::new(0, 100).unwrap_err().to_string(), "maxTokens: expected an integer from 1 to 1000");
    /// assert_eq!(RetryBudget::new(10, 0).unwrap_err().field, "tokenRatio");
    /// ```
    pub const fn new(max_tokens: u32, ratio_milli: u32) -> Result<RetryBudget, BudgetError> {
        if max_tokens == 0 || max_tokens > Self::MAX_TOKENS {
            return Err(BudgetError {
                field: "maxTokens",
                expected: MAX_TOKENS_EXPECTED,
            });
        }
        if ratio_milli == 0 || ratio_milli > Self::MAX_RATIO_MILLI {
            return Err(BudgetError {
                field: "tokenRatio",
                expected: RATIO_EXPECTED,
            });
        }
        Ok(RetryBudget {
            max_tokens,
            ratio_milli,
            tokens_milli: max_tokens * 1000,
        })
    }

    /// The same budget holding `tokens_milli` thousandths of a token (0 to
    /// `maxTokens × 1000`), for a host that starts from a known level.
    ///
    /// ```
    /// use autoretry::RetryBudget;
    /// let budget = RetryBudget::new(4, 500).unwrap().with_tokens_milli(3000).unwrap();
    /// assert_eq!(budget.tokens_milli(), 3000);
    /// assert_eq!(RetryBudget::new(4, 500).unwrap().with_tokens_milli(4001).unwrap_err().field, "tokens");
    /// ```
    pub const fn with_tokens_milli(
        mut self,
        tokens_milli: u32,
    ) -> Result<RetryBudget, BudgetError> {
        if tokens_milli > self.max_tokens * 1000 {
            return Err(BudgetError {
                field: "tokens",
                expected: TOKENS_EXPECTED,
            });
        }
        self.tokens_milli = tokens_milli;
        Ok(self)
    }

    /// Parses the three figures as written on the wire and on command
    /// lines: `max_tokens` an integer, `token_ratio` and `tokens` decimal
    /// numbers (`0.5000` is 0.5, `1e-3` is 0.001; `0.0005` is refused);
    /// `tokens` absent means a full budget.
    ///
    /// ```
    /// use autoretry::RetryBudget;
    /// let budget = RetryBudget::parse("4", "0.5", Some("3")).unwrap();
    /// assert_eq!((budget.ratio_milli(), budget.tokens_milli()), (500, 3000));
    /// assert_eq!(RetryBudget::parse("10", "1e-3", None).unwrap().ratio_milli(), 1);
    /// assert_eq!(RetryBudget::parse("10", "0.0005", None).unwrap_err().field, "tokenRatio");
    /// assert_eq!(RetryBudget::parse("4.5", "1", None).unwrap_err().field, "maxTokens");
    /// ```
    pub fn parse(
        max_tokens: &str,
        token_ratio: &str,
        tokens: Option<&str>,
    ) -> Result<RetryBudget, BudgetError> {
        let max_error = BudgetError {
            field: "maxTokens",
            expected: MAX_TOKENS_EXPECTED,
        };
        let max = match parse_milli(max_tokens) {
            Some(milli) if milli % 1000 == 0 => {
                u32::try_from(milli / 1000).map_err(|_| max_error)?
            }
            _ => return Err(max_error),
        };
        let ratio = parse_milli(token_ratio)
            .and_then(|m| u32::try_from(m).ok())
            .ok_or(BudgetError {
                field: "tokenRatio",
                expected: RATIO_EXPECTED,
            })?;
        let budget = RetryBudget::new(max, ratio)?;
        match tokens {
            None => Ok(budget),
            Some(text) => budget.with_tokens(text),
        }
    }

    /// The same budget holding `tokens`, a decimal number as written (0
    /// to `maxTokens`, at most three digits after the point), read exactly
    /// as [`RetryBudget::parse`] reads it: for a host or a test that reads
    /// a level written by another.
    ///
    /// ```
    /// use autoretry::RetryBudget;
    /// let budget = RetryBudget::new(4, 500).unwrap();
    /// assert_eq!(budget.with_tokens("2.5").unwrap().tokens_milli(), 2500);
    /// assert_eq!(budget.with_tokens("0.0010000000000000001").unwrap_err().field, "tokens");
    /// assert_eq!(budget.with_tokens("4.001").unwrap_err().field, "tokens");
    /// ```
    pub fn with_tokens(self, tokens: &str) -> Result<RetryBudget, BudgetError> {
        let tokens = parse_milli(tokens)
            .and_then(|m| u32::try_from(m).ok())
            .ok_or(BudgetError {
                field: "tokens",
                expected: TOKENS_EXPECTED,
            })?;
        self.with_tokens_milli(tokens)
    }

    /// `maxTokens`.
    pub const fn max_tokens(&self) -> u32 {
        self.max_tokens
    }

    /// `tokenRatio`, in thousandths of a token.
    pub const fn ratio_milli(&self) -> u32 {
        self.ratio_milli
    }

    /// The tokens, in thousandths.
    pub const fn tokens_milli(&self) -> u32 {
        self.tokens_milli
    }

    /// The charge of a retry decision: one token, never below 0.
    ///
    /// ```
    /// use autoretry::RetryBudget;
    /// let mut budget = RetryBudget::new(1, 1).unwrap();
    /// budget.charge();
    /// budget.charge();
    /// assert_eq!(budget.tokens_milli(), 0);
    /// ```
    pub fn charge(&mut self) {
        self.tokens_milli = self.tokens_milli.saturating_sub(1000);
    }

    /// The refill of a run that ended well: `tokenRatio`, never above
    /// `maxTokens`.
    ///
    /// ```
    /// use autoretry::RetryBudget;
    /// let mut budget = RetryBudget::new(2, 1500).unwrap().with_tokens_milli(1000).unwrap();
    /// budget.refill();
    /// assert_eq!(budget.tokens_milli(), 2000);
    /// ```
    pub fn refill(&mut self) {
        let max = self.max_tokens * 1000;
        self.tokens_milli = self.tokens_milli.saturating_add(self.ratio_milli).min(max);
    }

    /// Whether a retry is throttled now: the tokens are at most
    /// `maxTokens / 2`.
    ///
    /// ```
    /// use autoretry::RetryBudget;
    /// let budget = RetryBudget::new(3, 100).unwrap();
    /// assert!(!budget.with_tokens_milli(1501).unwrap().is_throttled());
    /// assert!(budget.with_tokens_milli(1500).unwrap().is_throttled());
    /// ```
    pub const fn is_throttled(&self) -> bool {
        // tokens ≤ maxTokens / 2, in thousandths and without a division.
        2 * self.tokens_milli as u64 <= self.max_tokens as u64 * 1000
    }
}

/// Shows the tokens as a decimal number with at most three digits after the
/// point (`2.5`, `3`, `0.001`), as the vectors write them.
impl fmt::Display for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_milli(f, self.tokens_milli)
    }
}

/// Writes thousandths as a decimal number with no trailing zeros.
pub(crate) fn write_milli(f: &mut impl fmt::Write, milli: u32) -> fmt::Result {
    let (whole, mut frac) = (milli / 1000, milli % 1000);
    write!(f, "{whole}")?;
    if frac == 0 {
        return Ok(());
    }
    let mut digits = 3;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    write!(f, ".{frac:0digits$}")
}

/// A non-negative decimal number (`12`, `0.5000`, `1e-3`, `2.5E1`) in exact
/// thousandths, or `None` when it is negative, malformed, has a nonzero
/// digit past the third after the point, or exceeds `u64` thousandths.
pub(crate) fn parse_milli(text: &str) -> Option<u64> {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => {
            let exp = &text[at + 1..];
            let exp = exp.strip_prefix('+').unwrap_or(exp);
            let (negative, digits) = match exp.strip_prefix('-') {
                Some(digits) => (true, digits),
                None => (false, exp),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            // Anything past a few dozen places is out of range or zero.
            let magnitude: i32 = digits.parse::<u8>().map_or(i32::MAX, i32::from);
            (&text[..at], if negative { -magnitude } else { magnitude })
        }
        None => (text, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int.is_empty() || !int.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if mantissa.contains('.') && (frac.is_empty() || !frac.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    // The digits as one integer scaled by 10^-(frac digits), then by
    // 10^(exponent + 3) into thousandths.
    let scale = exponent.saturating_add(3).saturating_sub(frac.len() as i32);
    let digits = int.bytes().chain(frac.bytes());
    let mut value: u64 = 0;
    let mut dropped_nonzero = false;
    let total = int.len() + frac.len();
    for (index, byte) in digits.enumerate() {
        let digit = u64::from(byte - b'0');
        // With a negative scale, the last `-scale` digits fall past the
        // thousandths: they must be zeros.
        let kept = scale >= 0 || (index as i64) < total as i64 + i64::from(scale);
        if kept {
            value = value.checked_mul(10)?.checked_add(digit)?;
        } else if digit != 0 {
            dropped_nonzero = true;
        }
    }
    if dropped_nonzero {
        return None;
    }
    if scale > 0 {
        for _ in 0..scale {
            value = value.checked_mul(10)?;
            if value == 0 {
                break;
            }
        }
    }
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_in_thousandths() {
        for (text, milli) in [
            ("0", Some(0)),
            ("3", Some(3000)),
            ("0.5", Some(500)),
            ("0.5000", Some(500)),
            ("1e-3", Some(1)),
            ("1E3", Some(1_000_000)),
            ("2.5e+1", Some(25_000)),
            ("0.001", Some(1)),
            ("0.0005", None),
            ("0.0010", Some(1)),
            ("-1", None),
            ("1.", None),
            (".5", None),
            ("", None),
            ("1e", None),
            ("0x1", None),
            ("1e999", None),
            ("0e999", Some(0)),
            ("5e-999", None),
            ("0.000e-5", Some(0)),
            // Digits a binary float would round away are read, not lost.
            ("0.0010000000000000001", None),
            ("1e-400", None),
            ("0e-400", Some(0)),
            ("2.0000000001", None),
            ("1000.000000000000000", Some(1_000_000)),
        ] {
            assert_eq!(parse_milli(text), milli, "{text}");
        }
    }

    #[test]
    fn tokens_written_as_the_vectors_write_them() {
        let mut text = heapless::String::<16>::new();
        for (milli, want) in [
            (0, "0"),
            (2500, "2.5"),
            (5100, "5.1"),
            (1, "0.001"),
            (1020, "1.02"),
        ] {
            text.clear();
            write_milli(&mut text, milli).unwrap();
            assert_eq!(text, want);
        }
    }
}
