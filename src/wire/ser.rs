//! `Serialize` for the machine's values, in the key order of spec §7–§8 (the
//! outputs as the conformance vectors write them). No allocation.

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::classify::Classification;
use crate::headers::HeaderHints;
use crate::machine::RetryState;
use crate::output::{ErrorText, Event, FinalError, Output, TimerId};

/// `TimerId` serializes as its raw number.
impl Serialize for TimerId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(self.0)
    }
}

/// `finalError` as a JSON string: a text as it is, the sentences of the
/// fail-fast, throttled and total-wait ends (spec §10.3 step 8, §11.4,
/// §11.6) written piece by piece through `collect_str` (no
/// allocation with serializers that stream it, as serde_json does).
impl Serialize for FinalError<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            FinalError::Text(text) => serializer.serialize_str(text),
            FinalError::Stalled { .. }
            | FinalError::WaitTooLong { .. }
            | FinalError::Throttled { .. }
            | FinalError::TotalWait { .. } => serializer.collect_str(self),
        }
    }
}

/// An error text as a JSON string: a text as it is, the stall sentence
/// (spec §12.2) written through `collect_str`.
impl Serialize for ErrorText<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            ErrorText::Text(text) => serializer.serialize_str(text),
            ErrorText::Stalled { .. } => serializer.collect_str(self),
        }
    }
}

/// Spec §8, keys in this order; `finalError` absent (not `null`) when `None`:
/// `{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"..."}`,
/// `{"type":"auto_retry_end","success":true,"attempt":1}`,
/// `{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"..."}`.
impl Serialize for Event<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            Event::Start {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => {
                let mut s = serializer.serialize_struct("Event", 5)?;
                s.serialize_field("type", self.type_name())?;
                s.serialize_field("attempt", &attempt)?;
                s.serialize_field("maxAttempts", &max_attempts)?;
                s.serialize_field("delayMs", &delay_ms)?;
                s.serialize_field("errorMessage", &error_message)?;
                s.end()
            }
            Event::End {
                success,
                attempt,
                final_error,
            } => {
                let len = if final_error.is_some() { 4 } else { 3 };
                let mut s = serializer.serialize_struct("Event", len)?;
                s.serialize_field("type", self.type_name())?;
                s.serialize_field("success", &success)?;
                s.serialize_field("attempt", &attempt)?;
                match final_error {
                    Some(error) => s.serialize_field("finalError", &error)?,
                    None => s.skip_field("finalError")?,
                }
                s.end()
            }
        }
    }
}

/// As the conformance vectors write outputs: `{"type":"emit","event":{...}}`,
/// `{"type":"sleep","ms":2000,"timer":1}`, `{"type":"watch","ms":300000,"timer":2}`,
/// `{"type":"cancel_timer","timer":1}`,
/// `{"type":"mark_usage_limit","retryAfterMs":null}`,
/// `{"type":"switch_model","reason":"exhausted"}`,
/// `{"type":"continue_agent","resume":true}` (a continuation's, spec §11.2),
/// and `{"type":"<name>"}`
/// for the outputs without fields. Timer ids are written as they are; a host
/// that speaks ordinals (vectors) rewrites them first.
impl Serialize for Output<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let ty = self.type_name();
        match self {
            Output::Emit(event) => {
                let mut s = serializer.serialize_struct("Output", 2)?;
                s.serialize_field("type", ty)?;
                s.serialize_field("event", event)?;
                s.end()
            }
            Output::Sleep { ms, timer } | Output::Watch { ms, timer } => {
                let mut s = serializer.serialize_struct("Output", 3)?;
                s.serialize_field("type", ty)?;
                s.serialize_field("ms", ms)?;
                s.serialize_field("timer", timer)?;
                s.end()
            }
            Output::CancelTimer { timer } => {
                let mut s = serializer.serialize_struct("Output", 2)?;
                s.serialize_field("type", ty)?;
                s.serialize_field("timer", timer)?;
                s.end()
            }
            Output::MarkUsageLimit { retry_after_ms } => {
                let mut s = serializer.serialize_struct("Output", 2)?;
                s.serialize_field("type", ty)?;
                s.serialize_field("retryAfterMs", retry_after_ms)?;
                s.end()
            }
            Output::SwitchModel { reason } => {
                let mut s = serializer.serialize_struct("Output", 2)?;
                s.serialize_field("type", ty)?;
                s.serialize_field("reason", reason.as_str())?;
                s.end()
            }
            Output::ResumeAgent => {
                let mut s = serializer.serialize_struct("Output", 2)?;
                s.serialize_field("type", ty)?;
                s.serialize_field("resume", &true)?;
                s.end()
            }
            Output::DropTrailingError
            | Output::ContinueAgent
            | Output::CheckCompaction
            | Output::AbortAgent
            | Output::Settled => {
                let mut s = serializer.serialize_struct("Output", 1)?;
                s.serialize_field("type", ty)?;
                s.end()
            }
        }
    }
}

/// Spec §7: `{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}`.
impl Serialize for RetryState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("RetryState", 3)?;
        s.serialize_field("autoRetryEnabled", &self.auto_retry_enabled)?;
        s.serialize_field("isRetrying", &self.is_retrying)?;
        s.serialize_field("retryAttempt", &self.retry_attempt)?;
        s.end()
    }
}

/// The corpus form: `{"retryable":b,"overflow":b,"usageLimit":b,"hintMs":n|null}`.
impl Serialize for Classification {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Classification", 4)?;
        s.serialize_field("retryable", &self.retryable)?;
        s.serialize_field("overflow", &self.overflow)?;
        s.serialize_field("usageLimit", &self.usage_limit)?;
        s.serialize_field("hintMs", &self.hint_ms)?;
        s.end()
    }
}

/// The header reading's answer (spec 13.1, `autoretry headers`):
/// `{"shouldRetry":b|null,"retryAfterMs":n|null}`.
///
/// ```
/// use autoretry::HeaderHints;
/// let read = HeaderHints { should_retry: None, retry_after_ms: Some(1500) };
/// assert_eq!(serde_json::to_string(&read).unwrap(), r#"{"shouldRetry":null,"retryAfterMs":1500}"#);
/// ```
impl Serialize for HeaderHints {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("HeaderHints", 2)?;
        s.serialize_field("shouldRetry", &self.should_retry)?;
        s.serialize_field("retryAfterMs", &self.retry_after_ms)?;
        s.end()
    }
}

#[cfg(all(test, feature = "json"))]
mod tests {
    use crate::{Event, Machine, Output, RetryState, TimerId};

    fn json<T: serde::Serialize>(value: &T) -> String {
        serde_json::to_string(value).unwrap()
    }

    #[test]
    fn events_in_spec_order() {
        let start = Event::Start {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
            error_message: "overloaded_error".into(),
        };
        assert_eq!(
            json(&start),
            r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"overloaded_error"}"#
        );
        let ok = Event::End {
            success: true,
            attempt: 1,
            final_error: None,
        };
        assert_eq!(
            json(&ok),
            r#"{"type":"auto_retry_end","success":true,"attempt":1}"#
        );
        let failed = Event::End {
            success: false,
            attempt: 3,
            final_error: Some("overloaded_error".into()),
        };
        assert_eq!(
            json(&failed),
            r#"{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"overloaded_error"}"#
        );
        let fail_fast = Event::End {
            success: false,
            attempt: 0,
            final_error: Some(crate::FinalError::WaitTooLong {
                requested_ms: 11_180_000,
                max_delay_ms: 300_000,
                error: "429 \"quoted\"\n".into(),
            }),
        };
        assert_eq!(
            json(&fail_fast),
            r#"{"type":"auto_retry_end","success":false,"attempt":0,"finalError":"Provider requested 11180000ms wait, exceeds retry.maxDelayMs (300000ms). Original error: 429 \"quoted\"\n"}"#
        );
        // A Value holds the same string.
        assert_eq!(
            serde_json::to_value(fail_fast).unwrap()["finalError"],
            "Provider requested 11180000ms wait, exceeds retry.maxDelayMs (300000ms). \
             Original error: 429 \"quoted\"\n"
        );
    }

    #[test]
    fn outputs_and_state() {
        let cases: [(Output<'_>, &str); 9] = [
            (
                Output::Emit(Event::End {
                    success: true,
                    attempt: 2,
                    final_error: None,
                }),
                r#"{"type":"emit","event":{"type":"auto_retry_end","success":true,"attempt":2}}"#,
            ),
            (
                Output::Sleep {
                    ms: u64::MAX,
                    timer: TimerId(1),
                },
                r#"{"type":"sleep","ms":18446744073709551615,"timer":1}"#,
            ),
            (
                Output::CancelTimer { timer: TimerId(4) },
                r#"{"type":"cancel_timer","timer":4}"#,
            ),
            (
                Output::MarkUsageLimit {
                    retry_after_ms: None,
                },
                r#"{"type":"mark_usage_limit","retryAfterMs":null}"#,
            ),
            (
                Output::MarkUsageLimit {
                    retry_after_ms: Some(5),
                },
                r#"{"type":"mark_usage_limit","retryAfterMs":5}"#,
            ),
            (
                Output::DropTrailingError,
                r#"{"type":"drop_trailing_error"}"#,
            ),
            (Output::ContinueAgent, r#"{"type":"continue_agent"}"#),
            (Output::CheckCompaction, r#"{"type":"check_compaction"}"#),
            (Output::Settled, r#"{"type":"settled"}"#),
        ];
        for (output, want) in cases {
            assert_eq!(json(&output), want);
        }
        assert_eq!(json(&Output::AbortAgent), r#"{"type":"abort_agent"}"#);
        assert_eq!(
            json(&Machine::default().state()),
            r#"{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}"#
        );
        let state = RetryState {
            auto_retry_enabled: false,
            is_retrying: true,
            retry_attempt: 2,
        };
        assert_eq!(
            json(&state),
            r#"{"autoRetryEnabled":false,"isRetrying":true,"retryAttempt":2}"#
        );
    }
}
