//! The terminal texts of spec §8 and §10.7, as `Display` values that
//! allocate nothing: the loader line, the failure line, and [`Event`]'s
//! `Display`, which picks one of them.

use core::fmt;

use crate::output::{Event, FinalError, UNKNOWN_ERROR};

/// The loader line shown during a backoff:
/// `Retrying (1/3) in 2s… (esc to cancel)`.
///
/// Seconds are `delay_ms / 1000` rounded half up; `…` is U+2026.
///
/// ```
/// use autoretry::LoaderLine;
/// let line = LoaderLine { attempt: 2, max_attempts: 3, delay_ms: 2500 };
/// assert_eq!(line.to_string(), "Retrying (2/3) in 3s\u{2026} (esc to cancel)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct LoaderLine {
    /// The retry's number.
    pub attempt: u32,
    /// `maxAttempts` of the start event.
    pub max_attempts: u32,
    /// `delayMs` of the start event.
    pub delay_ms: u64,
}

impl LoaderLine {
    /// The delay in whole seconds, rounded half up (no overflow at `u64::MAX`).
    ///
    /// ```
    /// use autoretry::LoaderLine;
    /// let secs = |ms| LoaderLine { attempt: 1, max_attempts: 1, delay_ms: ms }.seconds();
    /// assert_eq!((secs(499), secs(500), secs(1499), secs(1500)), (0, 1, 1, 2));
    /// ```
    pub const fn seconds(&self) -> u64 {
        self.delay_ms / 1000 + (self.delay_ms % 1000 >= 500) as u64
    }
}

impl fmt::Display for LoaderLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Retrying ({}/{}) in {}s\u{2026} (esc to cancel)",
            self.attempt,
            self.max_attempts,
            self.seconds()
        )
    }
}

/// The line shown when a chain fails:
/// `Retry failed after 3 attempts: overloaded_error`.
///
/// Always "attempts", as the reference prints it; `Unknown error` when the
/// final error is absent or empty. A fail-fast end (spec §10.7) shows its
/// sentence.
///
/// ```
/// use autoretry::{FailureLine, FinalError};
/// let line = FailureLine { attempt: 1, final_error: None };
/// assert_eq!(line.to_string(), "Retry failed after 1 attempts: Unknown error");
/// let fail_fast = FinalError::WaitTooLong { requested_ms: 11_180_000, max_delay_ms: 300_000, error: "429".into() };
/// let line = FailureLine { attempt: 0, final_error: Some(fail_fast) };
/// assert_eq!(
///     line.to_string(),
///     "Retry failed after 0 attempts: Provider requested 11180000ms wait, \
///      exceeds retry.maxDelayMs (300000ms). Original error: 429",
/// );
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct FailureLine<'a> {
    /// `attempt` of the end event.
    pub attempt: u32,
    /// `finalError` of the end event.
    pub final_error: Option<FinalError<'a>>,
}

impl fmt::Display for FailureLine<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let error = match self.final_error {
            Some(error) if !error.is_empty() => error,
            _ => FinalError::Text(UNKNOWN_ERROR),
        };
        write!(f, "Retry failed after {} attempts: {}", self.attempt, error)
    }
}

impl fmt::Display for Event<'_> {
    /// The terminal text of spec §8: the loader line of a start, the failure
    /// line of a failed end, nothing for a successful end.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Event::Start {
                attempt,
                max_attempts,
                delay_ms,
                ..
            } => fmt::Display::fmt(
                &LoaderLine {
                    attempt,
                    max_attempts,
                    delay_ms,
                },
                f,
            ),
            Event::End {
                success: false,
                attempt,
                final_error,
            } => fmt::Display::fmt(
                &FailureLine {
                    attempt,
                    final_error,
                },
                f,
            ),
            Event::End { success: true, .. } => Ok(()),
        }
    }
}
