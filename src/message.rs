//! The assistant message the host shows the machine (spec §2), and the
//! message-level tests built on the text classifier (spec §3).

use crate::classify::Classifier;
use crate::headers::Headers;

/// Why the provider stopped generating an assistant message (`stopReason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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
///
/// ```
/// use autoretry::{classify::Classifier, Usage};
/// let u = Usage::new(600, 300).with_cache_write(200);
/// assert_eq!(u.prompt_tokens(), 900); // cacheWrite counts only for the extended classifier
/// assert_eq!(u.prompt_tokens_with(Classifier::Extended), 1100);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Usage {
    /// `usage.input`: prompt tokens not read from the cache.
    pub input: u64,
    /// `usage.cacheRead`: prompt tokens read from the cache.
    pub cache_read: u64,
    /// `usage.cacheWrite`: prompt tokens written to the cache (spec §10.2);
    /// counted only by the usage rule of the extended classifier (§10.5).
    pub cache_write: u64,
}

impl Usage {
    /// `input` and `cacheRead` counts, no `cacheWrite`.
    ///
    /// ```
    /// use autoretry::Usage;
    /// assert_eq!(Usage::new(5, 7), Usage { input: 5, cache_read: 7, cache_write: 0 });
    /// ```
    pub const fn new(input: u64, cache_read: u64) -> Self {
        Usage {
            input,
            cache_read,
            cache_write: 0,
        }
    }

    /// The same counts with `cache_write` set.
    pub const fn with_cache_write(mut self, cache_write: u64) -> Self {
        self.cache_write = cache_write;
        self
    }

    /// The prompt size of the classic usage rule (spec §3.3),
    /// `input + cacheRead`, computed exactly (no overflow).
    ///
    /// ```
    /// use autoretry::Usage;
    /// let u = Usage::new(u64::MAX, 2);
    /// assert_eq!(u.prompt_tokens(), u64::MAX as u128 + 2);
    /// ```
    pub const fn prompt_tokens(self) -> u128 {
        self.input as u128 + self.cache_read as u128
    }

    /// The prompt size that `classifier`'s usage rule counts: that of
    /// [`Usage::prompt_tokens`] for the classic one, plus `cacheWrite` for
    /// the extended one (spec §10.5), computed exactly.
    ///
    /// ```
    /// use autoretry::{classify::Classifier, Usage};
    /// let u = Usage::new(u64::MAX, u64::MAX).with_cache_write(u64::MAX);
    /// assert_eq!(u.prompt_tokens_with(Classifier::Classic), 2 * u64::MAX as u128);
    /// # #[cfg(feature = "extended")]
    /// assert_eq!(u.prompt_tokens_with(Classifier::Extended), 3 * u64::MAX as u128);
    /// ```
    pub const fn prompt_tokens_with(self, classifier: Classifier) -> u128 {
        match classifier {
            Classifier::Classic => self.prompt_tokens(),
            #[cfg(feature = "extended")]
            Classifier::Extended => self.prompt_tokens() + self.cache_write as u128,
            // Spec 13.2: the extended usage rule holds.
            #[cfg(feature = "curated")]
            Classifier::Curated => self.prompt_tokens() + self.cache_write as u128,
        }
    }
}

/// What a failed turn had already streamed before its error (spec §11.2,
/// the message field `partial`).
///
/// ```
/// use autoretry::{AssistantMessage, Partial};
/// let cut = AssistantMessage::error("connection error").with_partial(Partial::Tools);
/// // A tool call may have run: the turn is never replayed.
/// assert!(!cut.is_retryable(0));
/// assert_eq!(Partial::from_wire("text"), Some(Partial::Text));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Partial {
    /// `"none"` (or absent): nothing, or only thinking or white space.
    #[default]
    None,
    /// `"text"`: visible text and nothing else; a retry is a continuation
    /// (no `drop_trailing_error`, and [`Output::ResumeAgent`](crate::Output::ResumeAgent)
    /// at the end of its backoff).
    Text,
    /// `"tools"`: a tool call, an image or a server-side tool block,
    /// executed or not; never retried, whatever `shouldRetry` says.
    Tools,
}

impl Partial {
    /// Every value, in wire order.
    pub const ALL: [Partial; 3] = [Partial::None, Partial::Text, Partial::Tools];

    /// The wire name: `"none"`, `"text"` or `"tools"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Partial::None => "none",
            Partial::Text => "text",
            Partial::Tools => "tools",
        }
    }

    /// The value of a wire name; `None` for any other string.
    pub fn from_wire(name: &str) -> Option<Partial> {
        Partial::ALL.into_iter().find(|p| p.as_str() == name)
    }
}

/// The last assistant message of a run, as the machine sees it (spec §2,
/// §10.2).
///
/// It borrows the error text, so building one costs nothing and the machine
/// never copies or stores messages. The host's own fields of §10.2
/// (`should_retry`, `retry_after_ms`) are absent unless set; with them
/// absent the message classifies as sections 1–9 say.
///
/// ```
/// use autoretry::{AssistantMessage, StopReason};
/// let msg = AssistantMessage::error("503 Service Unavailable");
/// assert_eq!(msg.stop_reason, StopReason::Error);
/// assert!(msg.is_retryable(0));
/// assert!(!AssistantMessage::new(StopReason::Stop).is_retryable(0));
/// // The host's verdict replaces the pattern test.
/// assert!(!msg.with_should_retry(false).is_retryable(0));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AssistantMessage<'a> {
    /// `stopReason`.
    pub stop_reason: StopReason,
    /// `errorMessage`, when the message has one.
    pub error_message: Option<&'a str>,
    /// `usage`, when the message has it.
    pub usage: Option<Usage>,
    /// `shouldRetry`: the host's own verdict (spec §10.2). When present it
    /// replaces the pattern test (rule 4 of §3); rules 1–3 still hold.
    pub should_retry: Option<bool>,
    /// `retryAfterMs`: a wait the host read from the response headers (spec
    /// §10.2); the hint ahead of any hint in the text.
    pub retry_after_ms: Option<u64>,
    /// `partial` (spec §11.2): what the failed turn had streamed before its
    /// error; [`Partial::None`] when the host does not say.
    pub partial: Partial,
    /// `empty` (spec §12.3): the host's account that the answer holds no
    /// visible text, no tool call and no image (thinking or white space
    /// alone is empty); `false` when the host does not say. Under
    /// `retryEmpty` a `stop` that is empty is a failure to retry. It cannot
    /// go with a [`Partial::Text`] or [`Partial::Tools`]: the machine
    /// refuses such a message ([`Refused::EmptyWithPartial`](crate::Refused::EmptyWithPartial)).
    pub empty: bool,
    /// `headers` (spec §13.1): the provider response's header fields, in
    /// the order received; [`Headers::NONE`] when absent. The machine reads
    /// `should_retry` and `retry_after_ms` from them where the message does
    /// not carry its own ([`AssistantMessage::with_header_hints`]).
    pub headers: Headers<'a>,
}

impl<'a> AssistantMessage<'a> {
    /// A message with this stop reason, no error text, no usage and none of
    /// the host's fields.
    pub const fn new(stop_reason: StopReason) -> Self {
        AssistantMessage {
            stop_reason,
            error_message: None,
            usage: None,
            should_retry: None,
            retry_after_ms: None,
            partial: Partial::None,
            empty: false,
            headers: Headers::NONE,
        }
    }

    /// An `error` message with this error text.
    pub const fn error(error_message: &'a str) -> Self {
        AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(error_message),
            usage: None,
            should_retry: None,
            retry_after_ms: None,
            partial: Partial::None,
            empty: false,
            headers: Headers::NONE,
        }
    }

    /// The same message with `usage` set.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Usage};
    /// let msg = AssistantMessage::error("overloaded").with_usage(Usage::new(900, 200));
    /// assert!(msg.is_context_overflow(1000));
    /// ```
    pub const fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// The same message with the host's verdict `should_retry` set.
    ///
    /// ```
    /// use autoretry::AssistantMessage;
    /// assert!(AssistantMessage::error("upstream hiccup").with_should_retry(true).is_retryable(0));
    /// // An overflow is never retried.
    /// assert!(!AssistantMessage::error("prompt is too long").with_should_retry(true).is_retryable(0));
    /// ```
    pub const fn with_should_retry(mut self, should_retry: bool) -> Self {
        self.should_retry = Some(should_retry);
        self
    }

    /// The same message with the host's `retry_after_ms` set.
    ///
    /// ```
    /// use autoretry::AssistantMessage;
    /// assert_eq!(AssistantMessage::error("429").with_retry_after_ms(1500).retry_after_ms, Some(1500));
    /// ```
    pub const fn with_retry_after_ms(mut self, retry_after_ms: u64) -> Self {
        self.retry_after_ms = Some(retry_after_ms);
        self
    }

    /// With `partial` (spec §11.2).
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Partial};
    /// let msg = AssistantMessage::error("connection error").with_partial(Partial::Text);
    /// assert_eq!(msg.partial, Partial::Text);
    /// ```
    pub const fn with_partial(mut self, partial: Partial) -> Self {
        self.partial = partial;
        self
    }

    /// With `empty` (spec §12.3).
    ///
    /// ```
    /// use autoretry::{AssistantMessage, StopReason};
    /// assert!(AssistantMessage::new(StopReason::Stop).with_empty(true).empty);
    /// ```
    pub const fn with_empty(mut self, empty: bool) -> Self {
        self.empty = empty;
        self
    }

    /// With the response's `headers` (spec §13.1).
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Headers};
    /// let pairs = [("retry-after", "5")];
    /// let msg = AssistantMessage::error("429 Too Many Requests").with_headers(Headers::new(&pairs));
    /// assert_eq!(msg.headers.len(), 1);
    /// ```
    pub const fn with_headers(mut self, headers: Headers<'a>) -> Self {
        self.headers = headers;
        self
    }

    /// The message as the machine decides on it (spec §13.1): its
    /// `should_retry` and `retry_after_ms`, each read from its `headers`
    /// ([`read_headers`](crate::read_headers), with the clock `now_ms`)
    /// where the message does not carry it itself. The machine does this
    /// for every `agent_end`; the tests of this type
    /// ([`is_retryable_with`](Self::is_retryable_with), ...) read the
    /// fields alone.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Headers};
    /// let pairs = [("x-should-retry", "false"), ("retry-after", "30")];
    /// let msg = AssistantMessage::error("503 Service Unavailable").with_headers(Headers::new(&pairs));
    /// let read = msg.with_header_hints(None);
    /// assert_eq!((read.should_retry, read.retry_after_ms), (Some(false), Some(30_000)));
    /// assert!(!read.is_retryable(0));
    /// // The message's own fields come first.
    /// let own = msg.with_retry_after_ms(5).with_header_hints(None);
    /// assert_eq!(own.retry_after_ms, Some(5));
    /// ```
    pub fn with_header_hints(mut self, now_ms: Option<u64>) -> Self {
        if self.headers.is_empty() || self.should_retry.is_some() && self.retry_after_ms.is_some() {
            return self;
        }
        let read = self.headers.read(now_ms);
        self.should_retry = self.should_retry.or(read.should_retry);
        self.retry_after_ms = self.retry_after_ms.or(read.retry_after_ms);
        self
    }

    /// The error text when present and non-empty.
    pub fn error_text(&self) -> Option<&'a str> {
        self.error_message.filter(|t| !t.is_empty())
    }

    /// Context overflow under the classic classifier (spec §3.3): an
    /// `error` whose text matches an overflow pattern, or, with a known
    /// (non-zero) `context_window`, a prompt of more tokens than the
    /// window, whatever the stop reason.
    ///
    /// ```
    /// use autoretry::AssistantMessage;
    /// assert!(AssistantMessage::error("prompt is too long: 213462 tokens").is_context_overflow(0));
    /// assert!(!AssistantMessage::error("429 status code (no body)").is_context_overflow(0));
    /// ```
    pub fn is_context_overflow(&self, context_window: u64) -> bool {
        self.is_context_overflow_with(context_window, Classifier::Classic)
    }

    /// Context overflow under `classifier`: its text rules, and its usage
    /// rule (`input + cacheRead`, plus `cacheWrite` for the extended
    /// classifier, spec §10.5) against a known window.
    ///
    /// ```
    /// use autoretry::{classify::Classifier, AssistantMessage, Usage};
    /// let msg = AssistantMessage::error("overloaded").with_usage(Usage::new(600, 300).with_cache_write(200));
    /// assert!(!msg.is_context_overflow_with(1000, Classifier::Classic));
    /// assert!(msg.is_context_overflow_with(1000, Classifier::Extended));
    /// ```
    pub fn is_context_overflow_with(&self, context_window: u64, classifier: Classifier) -> bool {
        if let Some(usage) = self.usage {
            if context_window != 0
                && usage.prompt_tokens_with(classifier) > u128::from(context_window)
            {
                return true;
            }
        }
        self.stop_reason == StopReason::Error
            && self
                .error_text()
                .is_some_and(|text| classifier.matches_overflow(text))
    }

    /// Retryable under the classic classifier (spec §3): an `error` with a
    /// non-empty text that is not a context overflow and matches the
    /// retryable pattern (§3.2), or, when the host gave its verdict
    /// `should_retry`, as that verdict says (§10.2).
    ///
    /// ```
    /// use autoretry::AssistantMessage;
    /// assert!(AssistantMessage::error("request exceeds 5000 tokens").is_retryable(0));
    /// assert!(!AssistantMessage::error("429 too many tokens in request").is_retryable(0));
    /// ```
    pub fn is_retryable(&self, context_window: u64) -> bool {
        self.is_retryable_with(context_window, Classifier::Classic)
    }

    /// Retryable under `classifier` (spec §3 with §10.2 and §10.5): rules
    /// 1–3 (an `error`, a non-empty text, no overflow under `classifier`),
    /// then the host's `should_retry` when present, else `classifier`'s
    /// retryable pattern. A message whose turn had streamed a tool call
    /// ([`Partial::Tools`], spec §11.2) is never retryable.
    ///
    /// ```
    /// use autoretry::{classify::Classifier, AssistantMessage};
    /// let msg = AssistantMessage::error("503 Service Unavailable");
    /// assert!(msg.is_retryable_with(0, Classifier::Extended));
    /// assert!(!msg.with_should_retry(false).is_retryable_with(0, Classifier::Extended));
    /// // Rule 2 still holds: an empty text is never retried.
    /// assert!(!AssistantMessage::error("").with_should_retry(true).is_retryable_with(0, Classifier::Classic));
    /// ```
    pub fn is_retryable_with(&self, context_window: u64, classifier: Classifier) -> bool {
        let Some(text) = self.error_text() else {
            return false;
        };
        self.stop_reason == StopReason::Error
            && self.partial != Partial::Tools
            && self
                .should_retry
                .unwrap_or_else(|| classifier.matches_retryable(text))
            && !self.is_context_overflow_with(context_window, classifier)
    }

    /// Usage limit under the classic classifier (spec §3.4): the error text
    /// matches the usage-limit pattern. Only meaningful for a retryable
    /// message.
    ///
    /// ```
    /// use autoretry::AssistantMessage;
    /// assert!(AssistantMessage::error("code=usage_limit_reached").is_usage_limit());
    /// ```
    pub fn is_usage_limit(&self) -> bool {
        self.is_usage_limit_with(Classifier::Classic)
    }

    /// Usage limit under `classifier` (spec §3.4, §10.5).
    ///
    /// ```
    /// use autoretry::{classify::Classifier, AssistantMessage};
    /// assert!(AssistantMessage::error("usage limit").is_usage_limit_with(Classifier::Extended));
    /// ```
    pub fn is_usage_limit_with(&self, classifier: Classifier) -> bool {
        self.error_text()
            .is_some_and(|text| classifier.matches_usage_limit(text))
    }
}
