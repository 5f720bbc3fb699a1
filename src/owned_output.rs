//! Owned outputs on std: [`OutputBuf`] holds its texts, so a host can keep
//! an output past the input it came from (queue it for another task,
//! replace the message it borrowed from while it carries the outputs out).
//!
//! ```
//! use autoretry::{AssistantMessage, Input, Machine, OutputBuf};
//! let mut machine = Machine::default();
//! let mut error = String::from("529 overloaded_error");
//! let outputs: Vec<OutputBuf> = machine
//!     .handle(Input::agent_end(AssistantMessage::error(&error)))
//!     .map(|out| out.iter().map(OutputBuf::from).collect())
//!     .unwrap_or_default();
//! error.clear(); // the outputs no longer borrow it
//! assert_eq!(outputs[0].type_name(), "emit");
//! assert_eq!(outputs[0].to_string(), "Retrying (1/3) in 2s… (esc to cancel)");
//! ```

use core::fmt;

use crate::output::{Event, FallbackReason, Output, TimerId};

/// An [`Event`] that owns its texts: the start's `errorMessage`, and the
/// end's `finalError` as the sentence the wire carries.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EventBuf {
    /// `auto_retry_start`.
    Start {
        /// `attempt`.
        attempt: u32,
        /// `maxAttempts`.
        max_attempts: u32,
        /// `delayMs`.
        delay_ms: u64,
        /// `errorMessage`.
        error_message: String,
    },
    /// `auto_retry_end`.
    End {
        /// `success`.
        success: bool,
        /// `attempt`.
        attempt: u32,
        /// `finalError`, written out (the fail-fast, throttled and
        /// total-wait sentences included).
        final_error: Option<String>,
    },
}

/// An [`Output`] that owns its texts (see the module docs).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum OutputBuf {
    /// [`Output::Emit`].
    Emit(EventBuf),
    /// [`Output::DropTrailingError`].
    DropTrailingError,
    /// [`Output::Sleep`].
    Sleep {
        /// `ms`.
        ms: u64,
        /// `timer`.
        timer: TimerId,
    },
    /// [`Output::Watch`].
    Watch {
        /// `ms`.
        ms: u64,
        /// `timer`.
        timer: TimerId,
    },
    /// [`Output::CancelTimer`].
    CancelTimer {
        /// `timer`.
        timer: TimerId,
    },
    /// [`Output::ContinueAgent`].
    ContinueAgent,
    /// [`Output::ResumeAgent`].
    ResumeAgent,
    /// [`Output::SwitchModel`].
    SwitchModel {
        /// Why the chain would end.
        reason: FallbackReason,
    },
    /// [`Output::MarkUsageLimit`].
    MarkUsageLimit {
        /// `retryAfterMs`.
        retry_after_ms: Option<u64>,
    },
    /// [`Output::CheckCompaction`].
    CheckCompaction,
    /// [`Output::AbortAgent`].
    AbortAgent,
    /// [`Output::Settled`].
    Settled,
}

impl OutputBuf {
    /// The wire `type`, as [`Output::type_name`].
    ///
    /// ```
    /// use autoretry::{Output, OutputBuf};
    /// assert_eq!(OutputBuf::from(&Output::Settled).type_name(), "settled");
    /// ```
    pub fn type_name(&self) -> &'static str {
        match self {
            OutputBuf::Emit(_) => "emit",
            OutputBuf::DropTrailingError => "drop_trailing_error",
            OutputBuf::Sleep { .. } => "sleep",
            OutputBuf::Watch { .. } => "watch",
            OutputBuf::CancelTimer { .. } => "cancel_timer",
            OutputBuf::ContinueAgent | OutputBuf::ResumeAgent => "continue_agent",
            OutputBuf::SwitchModel { .. } => "switch_model",
            OutputBuf::MarkUsageLimit { .. } => "mark_usage_limit",
            OutputBuf::CheckCompaction => "check_compaction",
            OutputBuf::AbortAgent => "abort_agent",
            OutputBuf::Settled => "settled",
        }
    }
}

impl From<&Event<'_>> for EventBuf {
    fn from(event: &Event<'_>) -> Self {
        match *event {
            Event::Start {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => EventBuf::Start {
                attempt,
                max_attempts,
                delay_ms,
                error_message: error_message.to_string(),
            },
            Event::End {
                success,
                attempt,
                final_error,
            } => EventBuf::End {
                success,
                attempt,
                final_error: final_error.map(|e| e.to_string()),
            },
        }
    }
}

impl From<&Output<'_>> for OutputBuf {
    fn from(output: &Output<'_>) -> Self {
        match *output {
            Output::Emit(ref event) => OutputBuf::Emit(event.into()),
            Output::DropTrailingError => OutputBuf::DropTrailingError,
            Output::Sleep { ms, timer } => OutputBuf::Sleep { ms, timer },
            Output::Watch { ms, timer } => OutputBuf::Watch { ms, timer },
            Output::CancelTimer { timer } => OutputBuf::CancelTimer { timer },
            Output::ContinueAgent => OutputBuf::ContinueAgent,
            Output::ResumeAgent => OutputBuf::ResumeAgent,
            Output::SwitchModel { reason } => OutputBuf::SwitchModel { reason },
            Output::MarkUsageLimit { retry_after_ms } => {
                OutputBuf::MarkUsageLimit { retry_after_ms }
            }
            Output::CheckCompaction => OutputBuf::CheckCompaction,
            Output::AbortAgent => OutputBuf::AbortAgent,
            Output::Settled => OutputBuf::Settled,
        }
    }
}

impl From<Output<'_>> for OutputBuf {
    fn from(output: Output<'_>) -> Self {
        OutputBuf::from(&output)
    }
}

impl EventBuf {
    /// Borrows the event back (an end's final error as its sentence).
    ///
    /// ```
    /// use autoretry::{Event, EventBuf, FinalError};
    /// let end = Event::End { success: false, attempt: 3, final_error: Some(FinalError::Text("503")) };
    /// assert_eq!(EventBuf::from(&end).as_event(), end);
    /// ```
    pub fn as_event(&self) -> Event<'_> {
        match self {
            EventBuf::Start {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            } => Event::Start {
                attempt: *attempt,
                max_attempts: *max_attempts,
                delay_ms: *delay_ms,
                error_message: crate::ErrorText::Text(error_message),
            },
            EventBuf::End {
                success,
                attempt,
                final_error,
            } => Event::End {
                success: *success,
                attempt: *attempt,
                final_error: final_error.as_deref().map(crate::FinalError::Text),
            },
        }
    }
}

/// The terminal text of an emitted event (as [`Event`]'s, spec §8:
/// nothing for a successful end), nothing for the other outputs.
impl fmt::Display for OutputBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OutputBuf::Emit(event) => fmt::Display::fmt(&event.as_event(), f),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FinalError, MAX_OUTPUTS};

    #[test]
    fn every_output_keeps_its_figures_and_texts() {
        let outputs = [
            Output::Emit(Event::Start {
                attempt: 1,
                max_attempts: 3,
                delay_ms: 2000,
                error_message: "503".into(),
            }),
            Output::Emit(Event::End {
                success: false,
                attempt: 2,
                final_error: Some(FinalError::Throttled {
                    error: "429".into(),
                }),
            }),
            Output::DropTrailingError,
            Output::Sleep {
                ms: 5,
                timer: TimerId(4),
            },
            Output::CancelTimer { timer: TimerId(4) },
            Output::ContinueAgent,
            Output::ResumeAgent,
            Output::SwitchModel {
                reason: FallbackReason::TotalWait,
            },
            Output::MarkUsageLimit {
                retry_after_ms: Some(9),
            },
            Output::CheckCompaction,
            Output::AbortAgent,
            Output::Settled,
        ];
        assert!(MAX_OUTPUTS < outputs.len());
        for output in outputs {
            let owned = OutputBuf::from(&output);
            assert_eq!(owned.type_name(), output.type_name());
            if let (OutputBuf::Emit(event), Output::Emit(original)) = (&owned, output) {
                assert_eq!(event.as_event().to_string(), original.to_string());
            }
        }
    }
}
