//! [`Arbitrary`] for the machine's inputs and settings (feature
//! `arbitrary`), for structure-aware fuzzing of a host: a fuzzer's bytes
//! become whole [`Input`]s, [`RetrySettings`] and [`HostOptions`] instead of
//! raw bytes to decode.
//!
//! The impls are biased toward what reaches deep states: half the error
//! texts are ones the classifier retries (or an overflow, a usage limit, a
//! hint), timer ids are mostly the small ones a machine issues first, and
//! delays are mostly small; the rest is unconstrained.
//!
//! ```
//! use arbitrary::{Arbitrary, Unstructured};
//! use autoretry::{HostOptions, Input, Machine, RetrySettings};
//!
//! // A fuzz target's body: any bytes, any inputs; the machine never panics
//! // and a refused input changes nothing.
//! let bytes = [7u8, 1, 250, 3, 0, 9, 42, 42, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9];
//! let mut u = Unstructured::new(&bytes);
//! let mut machine = Machine::new(RetrySettings::arbitrary(&mut u).unwrap(), HostOptions::arbitrary(&mut u).unwrap());
//! while let Ok(input) = Input::arbitrary(&mut u) {
//!     let before = machine.clone();
//!     if machine.handle(input).is_err() {
//!         assert_eq!(machine, before);
//!     }
//!     if u.is_empty() {
//!         break;
//!     }
//! }
//! ```

use ::arbitrary::{Arbitrary, Result, Unstructured};

use crate::classify::Classifier;
use crate::{
    AssistantMessage, HostOptions, Input, JitterPct, Partial, Profile, RetrySettings, StopReason,
    TimerId, Usage,
};

/// Error texts that reach each branch of the policy: retryable ones, with
/// server hints, an overflow, usage limits and texts of spec §10.5.
const TEXTS: &[&str] = &[
    "529 overloaded_error: Overloaded",
    "503 Service Unavailable",
    "429 Too Many Requests",
    "rate limit exceeded, retry-after: 3",
    "Please retry in 41s",
    "fetch failed",
    "socket hang up",
    "stream reset by peer",
    "prompt is too long: 213462 tokens > 200000 maximum",
    "Codex error: The usage limit has been reached (code=usage_limit_reached) retry-after-ms=3600000",
    "You have hit your ChatGPT usage limit. Try again in ~120 min.",
    "usage_limit_reached retry-after-ms=11180000",
    "401 Unauthorized",
    "exceeds 5000 tokens",
    "413 Request Entity Too Large",
    "",
];

/// An error text: one of [`TEXTS`] half of the time, else any string.
fn text<'a>(u: &mut Unstructured<'a>) -> Result<&'a str> {
    if u.arbitrary()? {
        Ok(u.choose(TEXTS)?)
    } else {
        u.arbitrary()
    }
}

/// A delay in milliseconds: mostly small, sometimes any `u64`.
fn millis(u: &mut Unstructured<'_>) -> Result<u64> {
    Ok(match u.int_in_range(0u8..=3)? {
        0 => u.arbitrary()?,
        1 => u.int_in_range(0..=600_000)?,
        _ => u.int_in_range(0..=5_000)?,
    })
}

impl<'a> Arbitrary<'a> for StopReason {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        // Errors most of the time: they are what the policy is about.
        Ok(match u.int_in_range(0u8..=7)? {
            0 => StopReason::Stop,
            1 => StopReason::Length,
            2 => StopReason::ToolUse,
            3 => StopReason::Aborted,
            _ => StopReason::Error,
        })
    }
}

impl<'a> Arbitrary<'a> for Usage {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(Usage::new(u.arbitrary()?, u.arbitrary()?).with_cache_write(u.arbitrary()?))
    }
}

impl<'a> Arbitrary<'a> for AssistantMessage<'a> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(AssistantMessage {
            stop_reason: u.arbitrary()?,
            error_message: if u.ratio(7u8, 8)? {
                Some(text(u)?)
            } else {
                None
            },
            usage: u.arbitrary()?,
            should_retry: u.arbitrary()?,
            retry_after_ms: if u.ratio(1u8, 4)? {
                Some(millis(u)?)
            } else {
                None
            },
            partial: u.arbitrary()?,
            empty: u.ratio(1u8, 4)?,
            headers: crate::Headers::NONE,
        })
    }
}

impl<'a> Arbitrary<'a> for Partial {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(*u.choose(&Partial::ALL)?)
    }
}

impl<'a> Arbitrary<'a> for TimerId {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        // A machine numbers its timers 1, 2, ...
        Ok(TimerId(if u.ratio(7u8, 8)? {
            u.int_in_range(0..=8)?
        } else {
            u.arbitrary()?
        }))
    }
}

impl<'a> Arbitrary<'a> for Profile {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        #[cfg(feature = "extended")]
        if u.arbitrary()? {
            return Ok(Profile::Modern);
        }
        let _ = u;
        Ok(Profile::Classic)
    }
}

impl<'a> Arbitrary<'a> for Classifier {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        #[cfg(feature = "extended")]
        if u.arbitrary()? {
            return Ok(Classifier::Extended);
        }
        let _ = u;
        Ok(Classifier::Classic)
    }
}

impl<'a> Arbitrary<'a> for JitterPct {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(JitterPct::new(u.int_in_range(0..=100)?).unwrap_or(JitterPct::ZERO))
    }
}

impl<'a> Arbitrary<'a> for RetrySettings {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(RetrySettings {
            profile: u.arbitrary()?,
            enabled: u.ratio(7u8, 8)?,
            max_retries: if u.ratio(7u8, 8)? {
                u.int_in_range(0..=12)?
            } else {
                u.arbitrary()?
            },
            base_delay_ms: millis(u)?,
            max_delay_ms: millis(u)?,
            backoff_cap_ms: millis(u)?,
            jitter_pct: u.arbitrary()?,
            honor_hints: u.arbitrary()?,
            classifier: u.arbitrary()?,
            model_fallback: u.arbitrary()?,
            max_usage_wait_ms: if u.ratio(1u8, 2)? { 0 } else { millis(u)? },
            max_total_delay_ms: if u.ratio(1u8, 2)? { 0 } else { millis(u)? },
            first_event_timeout_ms: if u.ratio(1u8, 2)? { 0 } else { millis(u)? },
            idle_timeout_ms: if u.ratio(1u8, 2)? { 0 } else { millis(u)? },
            retry_empty: u.arbitrary()?,
        })
    }
}

impl<'a> Arbitrary<'a> for HostOptions {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        Ok(HostOptions::DEFAULT
            .with_context_window(u.arbitrary()?)
            .with_credential_store(u.arbitrary()?)
            .with_seed(u.arbitrary()?))
    }
}

impl<'a> Arbitrary<'a> for Input<'a> {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        // Weighted toward the agent's runs and the timer.
        Ok(match u.int_in_range(0u8..=16)? {
            0..=4 => Input::AgentEnd {
                message: u.arbitrary()?,
                now_ms: u.arbitrary()?,
            },
            5 | 6 => Input::MessageEnd {
                message: u.arbitrary()?,
            },
            7..=10 => Input::TimerFired {
                timer: u.arbitrary()?,
            },
            11 => Input::UsageLimitMarked {
                switched: u.arbitrary()?,
                error_message: text(u)?,
            },
            12 => Input::ModelSwitched {
                switched: u.arbitrary()?,
                error_message: text(u)?,
            },
            13 if u.arbitrary()? => Input::AbortRetry,
            13 => Input::Abort,
            14 | 15 => Input::SetAutoRetry {
                enabled: u.arbitrary()?,
            },
            // The stream's inputs (spec §12.2), with clocks that jump.
            _ => match u.int_in_range(0u8..=3)? {
                0 => Input::Settings(u.arbitrary()?),
                1 => Input::StreamStart { now_ms: millis(u)? },
                _ => Input::StreamEvent { now_ms: millis(u)? },
            },
        })
    }
}
