//! Owned inputs on std: [`MessageBuf`] and [`InputBuf`] hold their texts,
//! so a host can send them across tasks and threads and keep them as long
//! as it likes; each lends itself to the machine as the borrowed
//! [`AssistantMessage`] or [`Input`] (`as_message`, `as_input`), which cost
//! nothing to make. With feature `json`, `MessageBuf::from_json` and
//! `wire::json::InputLine` decode them from the wire's lines.
//!
//! ```
//! use autoretry::{InputBuf, Machine, MessageBuf, Output};
//! // Made from a `String` that is gone by the time the machine sees it.
//! let input = InputBuf::agent_end(MessageBuf::error(format!("{} overloaded", 529)));
//! let mut machine = Machine::default();
//! let out = machine.handle(input.as_input()).unwrap();
//! assert!(matches!(out[2], Output::Sleep { ms: 2000, .. }));
//! ```

use crate::headers::Headers;
use crate::machine::Input;
use crate::message::{AssistantMessage, Partial, StopReason, Usage};
use crate::settings::RetrySettings;
use crate::TimerId;

/// An [`AssistantMessage`] that owns its error text.
///
/// ```
/// use autoretry::{AssistantMessage, MessageBuf, StopReason};
/// let owned = MessageBuf::error("503 Service Unavailable").with_retry_after_ms(1500);
/// assert!(owned.as_message().is_retryable(0));
/// assert_eq!(MessageBuf::from(owned.as_message()), owned);
/// assert_eq!(MessageBuf::new(StopReason::Stop).as_message(), AssistantMessage::new(StopReason::Stop));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageBuf {
    /// `stopReason`.
    pub stop_reason: StopReason,
    /// `errorMessage`, when the message has one.
    pub error_message: Option<String>,
    /// `usage`, when the message has it.
    pub usage: Option<Usage>,
    /// `shouldRetry`: the host's own verdict (spec §10.2).
    pub should_retry: Option<bool>,
    /// `retryAfterMs`: a wait the host read from the response headers.
    pub retry_after_ms: Option<u64>,
    /// `partial` (spec §11.2).
    pub partial: Partial,
    /// `empty` (spec §12.3).
    pub empty: bool,
    /// `headers` (spec §13.1): `(name, value)` pairs in the order received;
    /// empty when absent.
    pub headers: Vec<(String, String)>,
}

impl MessageBuf {
    /// A message with this stop reason and nothing else.
    pub const fn new(stop_reason: StopReason) -> Self {
        MessageBuf {
            stop_reason,
            error_message: None,
            usage: None,
            should_retry: None,
            retry_after_ms: None,
            partial: Partial::None,
            empty: false,
            headers: Vec::new(),
        }
    }

    /// An `error` message with this error text.
    pub fn error(error_message: impl Into<String>) -> Self {
        MessageBuf {
            error_message: Some(error_message.into()),
            ..MessageBuf::new(StopReason::Error)
        }
    }

    /// The same message with `usage` set.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// The same message with the host's verdict `should_retry` set.
    pub fn with_should_retry(mut self, should_retry: bool) -> Self {
        self.should_retry = Some(should_retry);
        self
    }

    /// The same message with the host's `retry_after_ms` set.
    pub fn with_retry_after_ms(mut self, retry_after_ms: u64) -> Self {
        self.retry_after_ms = Some(retry_after_ms);
        self
    }

    /// With `partial` (spec §11.2).
    ///
    /// ```
    /// use autoretry::{MessageBuf, Partial};
    /// assert_eq!(MessageBuf::error("cut off").with_partial(Partial::Text).partial, Partial::Text);
    /// ```
    pub fn with_partial(mut self, partial: Partial) -> Self {
        self.partial = partial;
        self
    }

    /// With the response's `headers` (spec §13.1).
    ///
    /// ```
    /// use autoretry::{HostOptions, InputBuf, Machine, MessageBuf, Output, RetrySettings};
    /// let msg = MessageBuf::error("503 Service Unavailable")
    ///     .with_headers([("retry-after", "10"), ("x-request-id", "abc")]);
    /// let settings = RetrySettings::default().with_honor_hints(true);
    /// let mut machine = Machine::new(settings, HostOptions::default());
    /// let input = InputBuf::agent_end(msg);
    /// let out = machine.handle(input.as_input()).unwrap();
    /// assert!(matches!(out[2], Output::Sleep { ms: 10_000, .. }));
    /// ```
    pub fn with_headers<N: Into<String>, V: Into<String>>(
        mut self,
        headers: impl IntoIterator<Item = (N, V)>,
    ) -> Self {
        self.headers = headers
            .into_iter()
            .map(|(n, v)| (n.into(), v.into()))
            .collect();
        self
    }

    /// The message as the machine reads it, borrowing the text.
    pub fn as_message(&self) -> AssistantMessage<'_> {
        AssistantMessage {
            stop_reason: self.stop_reason,
            error_message: self.error_message.as_deref(),
            usage: self.usage,
            should_retry: self.should_retry,
            retry_after_ms: self.retry_after_ms,
            partial: self.partial,
            empty: self.empty,
            headers: Headers::from_owned(&self.headers),
        }
    }
}

impl From<AssistantMessage<'_>> for MessageBuf {
    /// Copies the text.
    fn from(message: AssistantMessage<'_>) -> Self {
        MessageBuf {
            stop_reason: message.stop_reason,
            error_message: message.error_message.map(String::from),
            usage: message.usage,
            should_retry: message.should_retry,
            retry_after_ms: message.retry_after_ms,
            partial: message.partial,
            empty: message.empty,
            headers: message
                .headers
                .iter()
                .map(|(n, v)| (n.to_owned(), v.to_owned()))
                .collect(),
        }
    }
}

/// An [`Input`] that owns its texts: one variant per input, the same
/// fields, except that an answer to a hand-off ([`InputBuf::UsageLimitMarked`],
/// [`InputBuf::ModelSwitched`]) is the boolean alone.
///
/// The machine checks an answer against the error text of the decision
/// that asked for it (it stores no messages, only a digest). That text is
/// the owned layer's to keep, not the host's: the drivers of
/// [`host`](crate::host) keep the `agent_end` whose decision asked and
/// give its text to the answer, as the sidecar and the JavaScript wrapper
/// do. Fed by hand, [`InputBuf::as_input_answering`] takes the text.
///
/// ```
/// use autoretry::{Input, InputBuf, MessageBuf, StopReason};
/// let input = InputBuf::UsageLimitMarked { switched: true };
/// assert_eq!(input.as_input_answering("usage limit"), Input::UsageLimitMarked { switched: true, error_message: "usage limit" });
/// assert_eq!(InputBuf::from(input.as_input_answering("usage limit")), input);
/// let done = InputBuf::agent_end(MessageBuf::new(StopReason::Stop));
/// assert!(matches!(done.as_input(), Input::AgentEnd { now_ms: None, .. }));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InputBuf {
    /// [`Input::MessageEnd`].
    MessageEnd {
        /// The message.
        message: MessageBuf,
    },
    /// [`Input::AgentEnd`].
    AgentEnd {
        /// The run's last assistant message.
        message: MessageBuf,
        /// The host's wall clock in Unix milliseconds, if it has one.
        now_ms: Option<u64>,
    },
    /// [`Input::TimerFired`].
    TimerFired {
        /// The id the `sleep` carried.
        timer: TimerId,
    },
    /// [`Input::StreamStart`].
    StreamStart {
        /// The host's monotonic clock, in ms.
        now_ms: u64,
    },
    /// [`Input::StreamEvent`].
    StreamEvent {
        /// The host's monotonic clock, in ms.
        now_ms: u64,
    },
    /// [`Input::UsageLimitMarked`], without the decision's text (the
    /// driver keeps it).
    UsageLimitMarked {
        /// Whether the host switched to another credential or model.
        switched: bool,
    },
    /// [`Input::ModelSwitched`], without the decision's text (the driver
    /// keeps it).
    ModelSwitched {
        /// Whether the host switched to another model.
        switched: bool,
    },
    /// [`Input::AbortRetry`].
    AbortRetry,
    /// [`Input::Abort`].
    Abort,
    /// [`Input::SetAutoRetry`].
    SetAutoRetry {
        /// The new value of `retry.enabled`.
        enabled: bool,
    },
    /// [`Input::Settings`].
    Settings(RetrySettings),
}

impl InputBuf {
    /// An `agent_end` of `message`, with no wall clock.
    pub fn agent_end(message: MessageBuf) -> Self {
        InputBuf::AgentEnd {
            message,
            now_ms: None,
        }
    }

    /// The input as the machine reads it, borrowing the texts.
    ///
    /// An answer has no text of its own: here it borrows the empty text,
    /// which the machine refuses unless the decision's error text was
    /// empty too. The drivers give it the text they kept; by hand,
    /// [`InputBuf::as_input_answering`] takes it.
    ///
    /// ```
    /// use autoretry::{Input, InputBuf, MessageBuf};
    /// let failed = InputBuf::agent_end(MessageBuf::error("503"));
    /// assert_eq!(failed.as_input(), Input::agent_end(autoretry::AssistantMessage::error("503")));
    /// assert_eq!(InputBuf::ModelSwitched { switched: true }.as_input(), Input::model_switched(true, ""));
    /// ```
    pub fn as_input(&self) -> Input<'_> {
        self.as_input_answering("")
    }

    /// The input as the machine reads it, an answer to a hand-off
    /// (`usage_limit_marked`, `model_switched`) taking `decision_text`: the
    /// error text of the `agent_end` whose decision asked for it. Every
    /// other input ignores `decision_text`.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, InputBuf, Machine, Output, RetrySettings, HostOptions};
    /// let settings = RetrySettings::DEFAULT.with_max_retries(0).with_model_fallback(true);
    /// let mut machine = Machine::new(settings, HostOptions::DEFAULT);
    /// let failed = AssistantMessage::error("529 overloaded");
    /// let out = machine.handle(Input::agent_end(failed)).unwrap();
    /// assert!(matches!(out[..], [Output::SwitchModel { .. }]));
    /// let answer = InputBuf::ModelSwitched { switched: true };
    /// assert!(machine.handle(answer.as_input_answering("529 overloaded")).is_ok());
    /// assert!(machine.is_retrying());
    /// ```
    pub fn as_input_answering<'a>(&'a self, decision_text: &'a str) -> Input<'a> {
        match self {
            InputBuf::MessageEnd { message } => Input::MessageEnd {
                message: message.as_message(),
            },
            InputBuf::AgentEnd { message, now_ms } => Input::AgentEnd {
                message: message.as_message(),
                now_ms: *now_ms,
            },
            InputBuf::TimerFired { timer } => Input::TimerFired { timer: *timer },
            InputBuf::StreamStart { now_ms } => Input::StreamStart { now_ms: *now_ms },
            InputBuf::StreamEvent { now_ms } => Input::StreamEvent { now_ms: *now_ms },
            InputBuf::UsageLimitMarked { switched } => Input::UsageLimitMarked {
                switched: *switched,
                error_message: decision_text,
            },
            InputBuf::ModelSwitched { switched } => Input::ModelSwitched {
                switched: *switched,
                error_message: decision_text,
            },
            InputBuf::AbortRetry => Input::AbortRetry,
            InputBuf::Abort => Input::Abort,
            InputBuf::SetAutoRetry { enabled } => Input::SetAutoRetry { enabled: *enabled },
            InputBuf::Settings(settings) => Input::Settings(*settings),
        }
    }
}

impl From<Input<'_>> for InputBuf {
    /// Copies the texts; an answer keeps its boolean alone (the decision's
    /// text is the driver's to give).
    fn from(input: Input<'_>) -> Self {
        match input {
            Input::MessageEnd { message } => InputBuf::MessageEnd {
                message: message.into(),
            },
            Input::AgentEnd { message, now_ms } => InputBuf::AgentEnd {
                message: message.into(),
                now_ms,
            },
            Input::TimerFired { timer } => InputBuf::TimerFired { timer },
            Input::StreamStart { now_ms } => InputBuf::StreamStart { now_ms },
            Input::StreamEvent { now_ms } => InputBuf::StreamEvent { now_ms },
            Input::UsageLimitMarked { switched, .. } => InputBuf::UsageLimitMarked { switched },
            Input::ModelSwitched { switched, .. } => InputBuf::ModelSwitched { switched },
            Input::AbortRetry => InputBuf::AbortRetry,
            Input::Abort => InputBuf::Abort,
            Input::SetAutoRetry { enabled } => InputBuf::SetAutoRetry { enabled },
            Input::Settings(settings) => InputBuf::Settings(settings),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_input_round_trips() {
        let message = AssistantMessage::error("429 rate limited")
            .with_usage(Usage::new(5, 7).with_cache_write(2))
            .with_should_retry(true)
            .with_retry_after_ms(1500)
            .with_partial(Partial::Text);
        let inputs = [
            Input::MessageEnd { message },
            Input::AgentEnd {
                message,
                now_ms: Some(1_700_000_000_000),
            },
            Input::AgentEnd {
                message: AssistantMessage::new(StopReason::Aborted),
                now_ms: None,
            },
            Input::TimerFired { timer: TimerId(9) },
            Input::UsageLimitMarked {
                switched: false,
                error_message: "usage limit",
            },
            Input::ModelSwitched {
                switched: true,
                error_message: "overloaded",
            },
            Input::AbortRetry,
            Input::Abort,
            Input::SetAutoRetry { enabled: false },
            Input::Settings(RetrySettings::DEFAULT.with_max_retries(1)),
        ];
        for input in inputs {
            let owned = InputBuf::from(input);
            // Answers take the decision's text from the caller.
            let text = match input {
                Input::UsageLimitMarked { error_message, .. }
                | Input::ModelSwitched { error_message, .. } => error_message,
                _ => "ignored",
            };
            assert_eq!(owned.as_input_answering(text), input);
            assert_eq!(InputBuf::from(owned.as_input_answering(text)), owned);
        }
    }
}
