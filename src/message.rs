//! The assistant message the host shows the machine (spec §2), and the
//! message-level tests built on the text classifier (spec §3).

use crate::classify;

/// Why the provider stopped generating an assistant message (`stopReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StopReason {
    /// `stop`: the model finished its answer.
    Stop,
    /// `length`: the output token limit was reached.
    Length,
    /// `toolUse`: the model asked for tool calls.
    ToolUse,
    /// `error`: the provider or the network failed; see `errorMessage`.
    Error,
    /// `aborted`: the run was aborted.
    Aborted,
}

impl StopReason {
    /// Every stop reason, in the order the spec lists them.
    pub const ALL: [StopReason; 5] = [
        StopReason::Stop,
        StopReason::Length,
        StopReason::ToolUse,
        StopReason::Error,
        StopReason::Aborted,
    ];

    /// The wire name (`"stop"`, `"length"`, `"toolUse"`, `"error"`, `"aborted"`).
    ///
    /// ```
    /// use autoretry::StopReason;
    /// assert_eq!(StopReason::ToolUse.as_str(), "toolUse");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolUse => "toolUse",
            StopReason::Error => "error",
            StopReason::Aborted => "aborted",
        }
    }

    /// Parses a wire name; `None` for anything else (names are case-sensitive).
    ///
    /// ```
    /// use autoretry::StopReason;
    /// assert_eq!(StopReason::from_wire("error"), Some(StopReason::Error));
    /// assert_eq!(StopReason::from_wire("Error"), None);
    /// ```
    pub fn from_wire(name: &str) -> Option<StopReason> {
        StopReason::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// True for a good answer: anything but `error` and `aborted` (spec §5.2).
    ///
    /// ```
    /// use autoretry::StopReason;
    /// assert!(StopReason::ToolUse.is_success());
    /// assert!(!StopReason::Aborted.is_success());
    /// ```
    pub const fn is_success(self) -> bool {
        !matches!(self, StopReason::Error | StopReason::Aborted)
    }
}

/// Token counts of one assistant message (`usage`); a missing field counts as 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Usage {
    /// `usage.input`: prompt tokens not read from the cache.
    pub input: u64,
    /// `usage.cacheRead`: prompt tokens read from the cache.
    pub cache_read: u64,
}

impl Usage {
    /// The prompt size, `input + cacheRead`, computed exactly (no overflow).
    ///
    /// ```
    /// use autoretry::Usage;
    /// let u = Usage { input: u64::MAX, cache_read: 2 };
    /// assert_eq!(u.prompt_tokens(), u64::MAX as u128 + 2);
    /// ```
    pub const fn prompt_tokens(self) -> u128 {
        self.input as u128 + self.cache_read as u128
    }
}

/// The last assistant message of a run, as the machine sees it (spec §2).
///
/// It borrows the error text, so building one costs nothing and the machine
/// never copies or stores messages.
///
/// ```
/// use autoretry::{AssistantMessage, StopReason};
/// let msg = AssistantMessage::error("503 Service Unavailable");
/// assert_eq!(msg.stop_reason, StopReason::Error);
/// assert!(msg.is_retryable(0));
/// assert!(!AssistantMessage::new(StopReason::Stop).is_retryable(0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct AssistantMessage<'a> {
    /// `stopReason`.
    pub stop_reason: StopReason,
    /// `errorMessage`, when the message has one.
    pub error_message: Option<&'a str>,
    /// `usage`, when the message has it.
    pub usage: Option<Usage>,
}

impl<'a> AssistantMessage<'a> {
    /// A message with this stop reason, no error text and no usage.
    pub const fn new(stop_reason: StopReason) -> Self {
        AssistantMessage {
            stop_reason,
            error_message: None,
            usage: None,
        }
    }

    /// An `error` message with this error text.
    pub const fn error(error_message: &'a str) -> Self {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(error_message),
            usage: None,
        }
    }

    /// The same message with `usage` set.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Usage};
    /// let msg = AssistantMessage::error("overloaded").with_usage(Usage { input: 900, cache_read: 200 });
    /// assert!(msg.is_context_overflow(1000));
    /// ```
    pub const fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// The error text when present and non-empty.
    pub fn error_text(&self) -> Option<&'a str> {
        self.error_message.filter(|t| !t.is_empty())
    }

    /// Context overflow (spec §3.3): an `error` whose text matches an overflow
    /// pattern, or, with a known (non-zero) `context_window`, a prompt of more
    /// tokens than the window, whatever the stop reason.
    ///
    /// ```
    /// use autoretry::AssistantMessage;
    /// assert!(AssistantMessage::error("prompt is too long: 213462 tokens").is_context_overflow(0));
    /// assert!(!AssistantMessage::error("429 status code (no body)").is_context_overflow(0));
    /// ```
    pub fn is_context_overflow(&self, context_window: u64) -> bool {
        if let Some(usage) = self.usage {
            if context_window != 0 && usage.prompt_tokens() > u128::from(context_window) {
                return true;
            }
        }
        self.stop_reason == StopReason::Error
            && self.error_text().is_some_and(classify::matches_overflow)
    }

    /// Retryable (spec §3): an `error` with a non-empty text that is not a
    /// context overflow and matches the retryable pattern (§3.2).
    ///
    /// ```
    /// use autoretry::AssistantMessage;
    /// assert!(AssistantMessage::error("request exceeds 5000 tokens").is_retryable(0));
    /// assert!(!AssistantMessage::error("429 too many tokens in request").is_retryable(0));
    /// ```
    pub fn is_retryable(&self, context_window: u64) -> bool {
        self.stop_reason == StopReason::Error
            && self.error_text().is_some_and(classify::matches_retryable)
            && !self.is_context_overflow(context_window)
    }

    /// Usage limit (spec §3.4): the error text matches the usage-limit pattern.
    /// Only meaningful for a retryable message.
    ///
    /// ```
    /// use autoretry::AssistantMessage;
    /// assert!(AssistantMessage::error("code=usage_limit_reached").is_usage_limit());
    /// ```
    pub fn is_usage_limit(&self) -> bool {
        self.error_text().is_some_and(classify::matches_usage_limit)
    }
}
