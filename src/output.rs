//! What the machine asks the host to do: [`Output`]s, the [`Event`]s it
//! publishes, and the [`TimerId`] that names a backoff timer.

use core::fmt;

/// The `finalError` of a chain that was cancelled (spec §5.3).
pub const RETRY_CANCELLED: &str = "Retry cancelled";
/// The `finalError` of a chain ended by a message without error text (spec §9).
pub const UNKNOWN_ERROR: &str = "Unknown error";

/// Names one backoff timer. Every [`Output::Sleep`] carries a fresh id; only
/// the pending one continues the agent when it fires (spec §6).
///
/// Ids are generations: they only grow, so a late or duplicate
/// `timer_fired` can never be mistaken for the pending timer.
///
/// ```
/// use autoretry::TimerId;
/// assert_eq!(TimerId(7).get(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimerId(pub u64);

impl TimerId {
    /// The raw id.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for TimerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

/// An event for the RPC stream and the UI (spec §8).
///
/// Texts are borrowed: the error text from the input that caused the event,
/// or a `'static` string ([`RETRY_CANCELLED`], [`UNKNOWN_ERROR`]). Its
/// `Display` is the terminal text of spec §8 (the loader line of a start,
/// the failure line of a failed end).
///
/// ```
/// use autoretry::Event;
/// let start = Event::Start { attempt: 1, max_attempts: 3, delay_ms: 2000, error_message: "overloaded_error" };
/// assert_eq!(start.to_string(), "Retrying (1/3) in 2s\u{2026} (esc to cancel)");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Event<'a> {
    /// `auto_retry_start`: retry number `attempt` will run after `delay_ms`.
    Start {
        /// 1-based number of this retry within the chain.
        attempt: u32,
        /// `maxAttempts`: the `maxRetries` setting when the retry was decided.
        max_attempts: u32,
        /// `delayMs`: the backoff before the retry (0 after a credential switch).
        delay_ms: u64,
        /// `errorMessage`: the error that caused the retry.
        error_message: &'a str,
    },
    /// `auto_retry_end`: the chain is over.
    End {
        /// Whether a retry produced a good answer.
        success: bool,
        /// The number of the last retry started in the chain.
        attempt: u32,
        /// `finalError`: absent on success; otherwise the last error text,
        /// [`RETRY_CANCELLED`] or [`UNKNOWN_ERROR`].
        final_error: Option<&'a str>,
    },
}

impl<'a> Event<'a> {
    /// The wire `type`: `"auto_retry_start"` or `"auto_retry_end"`.
    pub const fn type_name(&self) -> &'static str {
        match self {
            Event::Start { .. } => "auto_retry_start",
            Event::End { .. } => "auto_retry_end",
        }
    }
}

/// One thing the host must do (spec §5, vectors README "Outputs").
///
/// The outputs of one input come back in order in [`Outputs`]; the host
/// carries out every one of them, in order, before it feeds the next input.
///
/// ```
/// use autoretry::{AssistantMessage, Input, Machine, Output};
/// let mut m = Machine::default();
/// let out = m.handle(Input::AgentEnd { message: AssistantMessage::error("overloaded"), now_ms: None }).unwrap();
/// assert!(matches!(out[2], Output::Sleep { ms: 2000, .. }));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Output<'a> {
    /// `emit`: publish the event.
    Emit(Event<'a>),
    /// `drop_trailing_error`: remove the trailing assistant error message from
    /// the agent's runtime context (its persisted history keeps it).
    DropTrailingError,
    /// `sleep`: start a cancellable timer; feed [`crate::Input::TimerFired`]
    /// with this id when it fires.
    Sleep {
        /// How long, in milliseconds.
        ms: u64,
        /// The timer's id.
        timer: TimerId,
    },
    /// `cancel_timer`: cancel the timer; it must not fire any more (if it
    /// still does, the machine ignores it).
    CancelTimer {
        /// The timer's id.
        timer: TimerId,
    },
    /// `continue_agent`: re-run the agent on its context, on the next tick,
    /// without a new user message.
    ContinueAgent,
    /// `mark_usage_limit`: mark the current credential as limited, then answer
    /// with [`crate::Input::UsageLimitMarked`].
    MarkUsageLimit {
        /// `retryAfterMs`: the provider's hint (spec §3.5), if any.
        retry_after_ms: Option<u64>,
    },
    /// `check_compaction`: run the compaction check for the run's message.
    CheckCompaction,
    /// `abort_agent`: abort the active agent stream.
    AbortAgent,
    /// `settled`: the open chain is over; release whoever waits on the prompt.
    Settled,
}

impl Output<'_> {
    /// The wire `type` of the output (`"emit"`, `"sleep"`, ...).
    ///
    /// ```
    /// use autoretry::Output;
    /// assert_eq!(Output::CheckCompaction.type_name(), "check_compaction");
    /// ```
    pub const fn type_name(&self) -> &'static str {
        match self {
            Output::Emit(_) => "emit",
            Output::DropTrailingError => "drop_trailing_error",
            Output::Sleep { .. } => "sleep",
            Output::CancelTimer { .. } => "cancel_timer",
            Output::ContinueAgent => "continue_agent",
            Output::MarkUsageLimit { .. } => "mark_usage_limit",
            Output::CheckCompaction => "check_compaction",
            Output::AbortAgent => "abort_agent",
            Output::Settled => "settled",
        }
    }
}

/// The most outputs one input produces: a global abort during backoff gives
/// `cancel_timer`, `emit`, `settled`, `check_compaction`, `abort_agent`.
pub const MAX_OUTPUTS: usize = 5;

/// The outputs of one input, in order, in a fixed-capacity buffer (no heap).
pub type Outputs<'a> = heapless::Vec<Output<'a>, MAX_OUTPUTS>;
