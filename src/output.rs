//! What the machine asks the host to do: [`Output`]s, the [`Event`]s it
//! publishes, and the [`TimerId`] that names a backoff timer.

use core::fmt;

/// The `finalError` of a chain that was cancelled (spec §5.3).
pub const RETRY_CANCELLED: &str = "Retry cancelled";
/// The `finalError` of a chain ended by a message without error text (spec §9).
pub const UNKNOWN_ERROR: &str = "Unknown error";
/// The error text of an empty answer under `retryEmpty` (spec §12.3).
pub const EMPTY_RESPONSE: &str = "Empty response from the model";

/// The error text of a retry decision: the message's own text, which the
/// machine borrows, or the stall sentence of spec §12.2 rule 4,
/// `Stream stalled: no event for <s>ms`, carried as its number so that
/// nothing is allocated. `Display` (and `Serialize`, feature `serde`)
/// write the text.
///
/// ```
/// use autoretry::ErrorText;
/// let stalled = ErrorText::Stalled { silence_ms: 300_000 };
/// assert_eq!(stalled.to_string(), "Stream stalled: no event for 300000ms");
/// assert_eq!(stalled, "Stream stalled: no event for 300000ms");
/// assert_eq!(stalled.len(), 37);
/// assert_eq!(ErrorText::Text("503"), "503");
/// assert_eq!(ErrorText::from("503").as_str(), Some("503"));
/// // Debug shows the written text as a string's Debug does.
/// assert_eq!(format!("{stalled:?}"), format!("{:?}", stalled.to_string()));
/// assert_eq!(format!("{:?}", ErrorText::Text("503")), "\"503\"");
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ErrorText<'a> {
    /// The text as it is.
    Text(&'a str),
    /// `Stream stalled: no event for <silence_ms>ms`: the stream of the
    /// run stalled after a silence of `silence_ms` (spec §12.2).
    Stalled {
        /// The silence that declared the stall, in ms.
        silence_ms: u64,
    },
}

impl<'a> ErrorText<'a> {
    /// The longest text a [`ErrorText::Stalled`] writes, in bytes (a
    /// silence of `u64::MAX`).
    pub const STALLED_MAX_LEN: usize = STALLED_PREFIX.len() + 20 + 2;

    /// The borrowed text; `None` for a text the machine writes.
    pub const fn as_str(&self) -> Option<&'a str> {
        match *self {
            ErrorText::Text(text) => Some(text),
            ErrorText::Stalled { .. } => None,
        }
    }

    /// The length of the written text, in bytes.
    pub fn len(&self) -> usize {
        match *self {
            ErrorText::Text(text) => text.len(),
            ErrorText::Stalled { silence_ms } => STALLED_PREFIX.len() + decimal_len(silence_ms) + 2,
        }
    }

    /// Whether the written text is empty (only a [`ErrorText::Text`] can be).
    pub const fn is_empty(&self) -> bool {
        matches!(self, ErrorText::Text(text) if text.is_empty())
    }

    /// Writes the text into `buf` and returns it, without allocating; the
    /// stall sentence needs at most [`ErrorText::STALLED_MAX_LEN`] bytes.
    /// `None` when `buf` is too small.
    ///
    /// ```
    /// use autoretry::ErrorText;
    /// let mut buf = [0; ErrorText::STALLED_MAX_LEN];
    /// let text = ErrorText::Stalled { silence_ms: u64::MAX }.write_into(&mut buf);
    /// assert_eq!(text, Some("Stream stalled: no event for 18446744073709551615ms"));
    /// assert_eq!(ErrorText::Stalled { silence_ms: 1 }.write_into(&mut [0; 8]), None);
    /// ```
    pub fn write_into<'b>(&self, buf: &'b mut [u8]) -> Option<&'b str> {
        let mut len: usize = 0;
        let filled = self.write_pieces(&mut |piece| {
            let Some(end) = len.checked_add(piece.len()) else {
                return false;
            };
            let Some(slot) = buf.get_mut(len..end) else {
                return false;
            };
            slot.copy_from_slice(piece.as_bytes());
            len = end;
            true
        });
        if !filled {
            return None;
        }
        // Whole `str` pieces were copied, so the bytes are UTF-8.
        core::str::from_utf8(buf.get(..len)?).ok()
    }

    /// Hands the written text to `put` piece by piece, without `core::fmt`
    /// (so a module that writes texts links no formatting machinery);
    /// `false` as soon as `put` returns `false`.
    fn write_pieces(&self, put: &mut dyn FnMut(&str) -> bool) -> bool {
        match *self {
            ErrorText::Text(text) => put(text),
            ErrorText::Stalled { silence_ms } => {
                put(STALLED_PREFIX) && put_decimal(put, silence_ms) && put("ms")
            }
        }
    }
}

/// The start of the stall sentence (spec §12.2 rule 4).
const STALLED_PREFIX: &str = "Stream stalled: no event for ";

/// How many decimal digits `n` has.
const fn decimal_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 10 {
        n /= 10;
        len += 1;
    }
    len
}

/// Hands `n` in decimal to `put`, without `core::fmt`.
fn put_decimal(put: &mut dyn FnMut(&str) -> bool, mut n: u64) -> bool {
    // u64::MAX has 20 digits.
    let mut digits = [b'0'; 20];
    let mut start = digits.len();
    loop {
        start -= 1;
        if let Some(digit) = digits.get_mut(start) {
            // `n % 10` is below 10, so the cast keeps it.
            *digit = b'0' + (n % 10) as u8;
        }
        n /= 10;
        if n == 0 || start == 0 {
            break;
        }
    }
    // ASCII digits are UTF-8.
    put(core::str::from_utf8(digits.get(start..).unwrap_or_default()).unwrap_or_default())
}

/// `Display` through a written text's pieces.
fn display_pieces(
    f: &mut fmt::Formatter<'_>,
    write_pieces: impl FnOnce(&mut dyn FnMut(&str) -> bool) -> bool,
) -> fmt::Result {
    if write_pieces(&mut |piece| f.write_str(piece).is_ok()) {
        Ok(())
    } else {
        Err(fmt::Error)
    }
}

/// Whether the written pieces are exactly `other`, without allocating.
fn pieces_eq(write_pieces: impl FnOnce(&mut dyn FnMut(&str) -> bool) -> bool, other: &str) -> bool {
    let mut rest = other;
    write_pieces(&mut |piece| match rest.strip_prefix(piece) {
        Some(after) => {
            rest = after;
            true
        }
        None => false,
    }) && rest.is_empty()
}

impl<'a> From<&'a str> for ErrorText<'a> {
    /// [`ErrorText::Text`].
    fn from(text: &'a str) -> Self {
        ErrorText::Text(text)
    }
}

impl fmt::Display for ErrorText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        display_pieces(f, |put| self.write_pieces(put))
    }
}

/// The written text as a string's `Debug` shows it, so a logged event
/// reads the same whoever wrote its text.
impl fmt::Debug for ErrorText<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ErrorText::Text(text) => fmt::Debug::fmt(text, f),
            // The sentence holds nothing that `Debug` escapes.
            ErrorText::Stalled { .. } => {
                display_pieces(f, |put| put("\"") && self.write_pieces(put) && put("\""))
            }
        }
    }
}

/// Compares the written text, without allocating.
impl PartialEq<str> for ErrorText<'_> {
    fn eq(&self, other: &str) -> bool {
        pieces_eq(|put| self.write_pieces(put), other)
    }
}

/// Compares the written text, without allocating.
impl PartialEq<&str> for ErrorText<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// Names one timer: a backoff ([`Output::Sleep`]) or a stall watch
/// ([`Output::Watch`]). Every one carries a fresh id; only
/// the pending one acts when it fires (spec §6, §12.2).
///
/// Ids are generations: they only grow, so a late or duplicate
/// `timer_fired` can never be mistaken for the pending timer.
///
/// ```
/// use autoretry::TimerId;
/// assert_eq!(TimerId(7).get(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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

/// The `finalError` of a failed `auto_retry_end` (spec §5, §9, §10.3).
///
/// A text the machine borrows (the message's error text,
/// [`RETRY_CANCELLED`], [`UNKNOWN_ERROR`], [`EMPTY_RESPONSE`]), the stall
/// sentence of spec §12.2, or the sentences of spec §10.3 step 8, §11.4
/// and §11.6, carried as their parts so that nothing is allocated;
/// `Display` (and `Serialize`, feature `serde`) write the sentence:
///
/// ```
/// use autoretry::FinalError;
/// let fail_fast = FinalError::WaitTooLong { requested_ms: 7_200_000, max_delay_ms: 300_000, error: "limit".into() };
/// assert_eq!(
///     fail_fast.to_string(),
///     "Provider requested 7200000ms wait, exceeds retry.maxDelayMs (300000ms). Original error: limit",
/// );
/// assert_eq!(FinalError::Text("overloaded"), "overloaded");
/// assert_eq!(FinalError::Stalled { silence_ms: 500 }, "Stream stalled: no event for 500ms");
/// assert_eq!(fail_fast, "Provider requested 7200000ms wait, exceeds retry.maxDelayMs (300000ms). Original error: limit");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FinalError<'a> {
    /// The text as it is.
    Text(&'a str),
    /// `Stream stalled: no event for <silence_ms>ms` (spec §12.2): a
    /// chain ended by a stall that was not retried.
    Stalled {
        /// The silence that declared the stall, in ms.
        silence_ms: u64,
    },
    /// The fail-fast end (spec §10.3 step 8): the provider asked for a
    /// wait longer than `retry.maxDelayMs`.
    WaitTooLong {
        /// The wait the chain would have needed, in ms.
        requested_ms: u64,
        /// The ceiling in force, `retry.maxDelayMs`.
        max_delay_ms: u64,
        /// The error text of the message.
        error: ErrorText<'a>,
    },
    /// The throttled end (spec §11.4): the shared retry budget was at most
    /// half full.
    Throttled {
        /// The error text of the message.
        error: ErrorText<'a>,
    },
    /// The total-wait end (spec §11.6): the chain's waits would have added
    /// up past `retry.maxTotalDelayMs`.
    TotalWait {
        /// What the chain's waits would have totalled, in ms.
        total_ms: u64,
        /// The limit in force, `retry.maxTotalDelayMs`.
        max_total_delay_ms: u64,
        /// The error text of the message.
        error: ErrorText<'a>,
    },
}

impl<'a> FinalError<'a> {
    /// The error text of the message (or the fixed text) that ended the
    /// chain: the text itself, or the original error of a fail-fast end.
    ///
    /// ```
    /// use autoretry::FinalError;
    /// let e = FinalError::WaitTooLong { requested_ms: 2, max_delay_ms: 1, error: "429".into() };
    /// assert_eq!(e.original(), "429");
    /// ```
    pub const fn original(&self) -> ErrorText<'a> {
        match *self {
            FinalError::Text(text) => ErrorText::Text(text),
            FinalError::Stalled { silence_ms } => ErrorText::Stalled { silence_ms },
            FinalError::WaitTooLong { error, .. }
            | FinalError::Throttled { error }
            | FinalError::TotalWait { error, .. } => error,
        }
    }

    /// The plain end of a chain with the error text `text` (no sentence
    /// around it).
    ///
    /// ```
    /// use autoretry::{ErrorText, FinalError};
    /// assert_eq!(FinalError::of(ErrorText::Stalled { silence_ms: 9 }), FinalError::Stalled { silence_ms: 9 });
    /// assert_eq!(FinalError::of("503".into()), FinalError::Text("503"));
    /// ```
    pub const fn of(text: ErrorText<'a>) -> Self {
        match text {
            ErrorText::Text(text) => FinalError::Text(text),
            ErrorText::Stalled { silence_ms } => FinalError::Stalled { silence_ms },
        }
    }

    /// Whether the written text is empty (only a [`FinalError::Text`] can be).
    ///
    /// ```
    /// use autoretry::FinalError;
    /// assert!(FinalError::Text("").is_empty());
    /// ```
    pub const fn is_empty(&self) -> bool {
        matches!(self, FinalError::Text(text) if text.is_empty())
    }
}

impl<'a> From<&'a str> for FinalError<'a> {
    /// [`FinalError::Text`].
    fn from(text: &'a str) -> Self {
        FinalError::Text(text)
    }
}

impl FinalError<'_> {
    /// Hands the written text to `put` piece by piece, without `core::fmt`;
    /// `false` as soon as `put` returns `false`.
    fn write_pieces(&self, put: &mut dyn FnMut(&str) -> bool) -> bool {
        match *self {
            FinalError::Text(text) => put(text),
            FinalError::Stalled { silence_ms } => {
                ErrorText::Stalled { silence_ms }.write_pieces(put)
            }
            FinalError::WaitTooLong {
                requested_ms,
                max_delay_ms,
                error,
            } => {
                put("Provider requested ")
                    && put_decimal(put, requested_ms)
                    && put("ms wait, exceeds retry.maxDelayMs (")
                    && put_decimal(put, max_delay_ms)
                    && put("ms). Original error: ")
                    && error.write_pieces(put)
            }
            FinalError::Throttled { error } => {
                put("Retry throttled by the shared retry budget. Original error: ")
                    && error.write_pieces(put)
            }
            FinalError::TotalWait {
                total_ms,
                max_total_delay_ms,
                error,
            } => {
                put("Retry waits would total ")
                    && put_decimal(put, total_ms)
                    && put("ms, exceeds retry.maxTotalDelayMs (")
                    && put_decimal(put, max_total_delay_ms)
                    && put("ms). Original error: ")
                    && error.write_pieces(put)
            }
        }
    }
}

impl fmt::Display for FinalError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        display_pieces(f, |put| self.write_pieces(put))
    }
}

/// Compares the written text, without allocating.
impl PartialEq<str> for FinalError<'_> {
    fn eq(&self, other: &str) -> bool {
        pieces_eq(|put| self.write_pieces(put), other)
    }
}

/// Compares the written text, without allocating.
impl PartialEq<&str> for FinalError<'_> {
    fn eq(&self, other: &&str) -> bool {
        *self == **other
    }
}

/// An event for the RPC stream and the UI (spec §8).
///
/// Texts are borrowed: the error text from the input that caused the event,
/// or a `'static` string ([`RETRY_CANCELLED`], [`UNKNOWN_ERROR`]); on std,
/// `EventBuf` owns them. Its `Display` is the terminal text of spec §8:
/// the loader line of a start, the failure line of a failed end, and
/// **nothing for a successful end** (the loader line just goes away), so a
/// host that prints events as lines skips an empty one.
///
/// ```
/// use autoretry::Event;
/// let start = Event::Start { attempt: 1, max_attempts: 3, delay_ms: 2000, error_message: "overloaded_error".into() };
/// assert_eq!(start.to_string(), "Retrying (1/3) in 2s\u{2026} (esc to cancel)");
/// let success = Event::End { success: true, attempt: 1, final_error: None };
/// assert!(success.to_string().is_empty());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Event<'a> {
    /// `auto_retry_start`: retry number `attempt` will run after `delay_ms`.
    Start {
        /// 1-based number of this retry within the chain.
        attempt: u32,
        /// `maxAttempts`: the `maxRetries` setting when the retry was decided.
        max_attempts: u32,
        /// `delayMs`: the wait before the retry (0 after a credential switch).
        delay_ms: u64,
        /// `errorMessage`: the error that caused the retry (the message's
        /// own text, or the machine's for a stall or an empty answer,
        /// spec §12).
        error_message: ErrorText<'a>,
    },
    /// `auto_retry_end`: the chain is over.
    End {
        /// Whether a retry produced a good answer.
        success: bool,
        /// The number of the last retry started in the chain.
        attempt: u32,
        /// `finalError`: absent on success; otherwise the last error text,
        /// [`RETRY_CANCELLED`], [`UNKNOWN_ERROR`] or the fail-fast sentence.
        final_error: Option<FinalError<'a>>,
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

/// One thing the host must do (spec §5.5: the outputs of one input, in order).
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
///
/// # What ends what
///
/// - [`Output::CheckCompaction`] ends the prompt: it resolves an
///   `agent_end` that starts no retry (or whose backoff was cancelled).
///   Complete the prompt there, after the compaction check.
/// - [`Output::ContinueAgent`] (or [`Output::ResumeAgent`] after a
///   continuation) resolves an `agent_end` the other way: the agent runs
///   again and its next `agent_end` decides. Each `agent_end` gets exactly
///   one of the two.
/// - [`Output::Settled`] ends a waiting period (`is_retrying` turns
///   false). It comes only when a chain was open: never wait for it on a
///   prompt that may have answered at the first try.
/// - An [`Event::End`] with `success: true` can come from a `message_end`
///   in the middle of a run: the retry worked, but the run (and the
///   waiting period, `is_retrying` with `retry_attempt` 0) goes on until
///   its `agent_end`. See [`Machine::handle`](crate::Machine::handle).
///
/// ```
/// use autoretry::{AssistantMessage, Input, Machine, Output, StopReason};
/// /// Feeds the inputs and says whether the prompt is over after the last.
/// fn over(m: &mut Machine, inputs: &[Input<'_>]) -> bool {
///     let mut over = false;
///     for &input in inputs {
///         over = m.handle(input).unwrap().contains(&Output::CheckCompaction);
///     }
///     over
/// }
/// let good = Input::AgentEnd { message: AssistantMessage::new(StopReason::Stop), now_ms: None };
/// let failed = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
/// assert!(over(&mut Machine::default(), &[good])); // no `settled` here
/// let mut m = Machine::default();
/// assert!(!over(&mut m, &[failed])); // a backoff: not over
/// assert!(over(&mut m, &[Input::AbortRetry])); // cancelled: over
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
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
    /// `watch`: start a stall-watchdog timer, exactly as for
    /// [`Output::Sleep`] (spec §12.2); feed [`crate::Input::TimerFired`]
    /// with this id when it fires. Ids are one sequence for both.
    Watch {
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
    /// `continue_agent` with `resume: true` (spec §11.2): the backoff of a
    /// continuation ended; ask the model to continue its partial turn,
    /// which the host kept in the context, marked incomplete. It resolves
    /// an `agent_end` as [`Output::ContinueAgent`] does.
    ResumeAgent,
    /// `switch_model`: before the chain ends for a policy reason, try
    /// another model, then answer with [`crate::Input::ModelSwitched`]
    /// (spec §11.3, under `modelFallback`).
    SwitchModel {
        /// Why the chain would end.
        reason: FallbackReason,
    },
    /// `mark_usage_limit`: mark the current credential as limited, then answer
    /// with [`crate::Input::UsageLimitMarked`].
    MarkUsageLimit {
        /// `retryAfterMs`: the hint, if any: the message's own
        /// `retryAfterMs` (spec §10.2), else the text's (§10.4 under
        /// `honorHints`, §3.5 otherwise).
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
            Output::Watch { .. } => "watch",
            Output::CancelTimer { .. } => "cancel_timer",
            Output::ContinueAgent | Output::ResumeAgent => "continue_agent",
            Output::SwitchModel { .. } => "switch_model",
            Output::MarkUsageLimit { .. } => "mark_usage_limit",
            Output::CheckCompaction => "check_compaction",
            Output::AbortAgent => "abort_agent",
            Output::Settled => "settled",
        }
    }
}

/// The policy reason of a [`Output::SwitchModel`] (spec §11.3): why the
/// chain would end without another model.
///
/// ```
/// use autoretry::FallbackReason;
/// assert_eq!(FallbackReason::WaitTooLong.as_str(), "wait_too_long");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FallbackReason {
    /// `"exhausted"`: the retries are spent (spec §5.1.2).
    Exhausted,
    /// `"throttled"`: the shared retry budget throttled the retry (§11.4).
    Throttled,
    /// `"wait_too_long"`: the wait exceeds `maxDelayMs` (§10.3 step 8).
    WaitTooLong,
    /// `"total_wait"`: the chain's waits would exceed `maxTotalDelayMs`
    /// (§11.6).
    TotalWait,
}

impl FallbackReason {
    /// Every reason, in the order of a decision.
    pub const ALL: [FallbackReason; 4] = [
        FallbackReason::Exhausted,
        FallbackReason::Throttled,
        FallbackReason::WaitTooLong,
        FallbackReason::TotalWait,
    ];

    /// The wire name.
    pub const fn as_str(self) -> &'static str {
        match self {
            FallbackReason::Exhausted => "exhausted",
            FallbackReason::Throttled => "throttled",
            FallbackReason::WaitTooLong => "wait_too_long",
            FallbackReason::TotalWait => "total_wait",
        }
    }

    /// The reason of a wire name.
    pub fn from_wire(name: &str) -> Option<FallbackReason> {
        FallbackReason::ALL.into_iter().find(|r| r.as_str() == name)
    }
}

/// The most outputs one input produces: a global abort during backoff gives
/// `cancel_timer`, `emit`, `settled`, `check_compaction`, `abort_agent`.
pub const MAX_OUTPUTS: usize = 5;

/// The outputs of one input, in order, in a fixed-capacity buffer (no heap).
pub type Outputs<'a> = heapless::Vec<Output<'a>, MAX_OUTPUTS>;
