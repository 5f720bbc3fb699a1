//! The retry state machine (spec §5–§10): [`Machine`], its [`Input`]s and the
//! [`Refused`] error for inputs out of turn.

use core::fmt;

use crate::budget::RetryBudget;
use crate::classify;
use crate::message::{AssistantMessage, Partial, StopReason};
use crate::output::{
    ErrorText, Event, FallbackReason, FinalError, Output, Outputs, TimerId, EMPTY_RESPONSE,
    RETRY_CANCELLED, UNKNOWN_ERROR,
};
use crate::settings::{HostOptions, RetrySettings};
use crate::stream::Stream;

/// One thing that happened to the host (spec §5–§7: agent events, timers, commands).
///
/// Inputs borrow their texts; the [`Outputs`] of an input may borrow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Input<'a> {
    /// `message_end`: one assistant message of the running agent ended.
    MessageEnd {
        /// The message.
        message: AssistantMessage<'a>,
    },
    /// `agent_end`: the agent run ended; `message` is its last assistant message.
    AgentEnd {
        /// The run's last assistant message.
        message: AssistantMessage<'a>,
        /// The host's wall clock in Unix milliseconds, if it has one; used
        /// only for the absolute forms of retry hints (spec §3.5, §10.4)
        /// and the dates of the message's `headers` (§13.1).
        now_ms: Option<u64>,
    },
    /// `timer_fired`: the timer of an [`Output::Sleep`] or an
    /// [`Output::Watch`] fired.
    TimerFired {
        /// The id the `sleep` or `watch` carried.
        timer: TimerId,
    },
    /// `stream_start` (spec §12.2): the host sent a request to the
    /// provider (the first of a run, or a later one). Refused, like
    /// `agent_end`, while a backoff is pending or a hand-off answer is
    /// awaited.
    StreamStart {
        /// The host's monotonic clock, in ms (any origin).
        now_ms: u64,
    },
    /// `stream_event` (spec §12.2): the host received an event of the
    /// answer that shows progress (a parsed text, thinking or tool-call
    /// delta, or a message event; never a keep-alive ping, an SSE comment
    /// or the bytes of an unfinished event).
    StreamEvent {
        /// The host's monotonic clock, in ms, on the same origin as the
        /// stream's `stream_start`.
        now_ms: u64,
    },
    /// `usage_limit_marked`: the host's answer to [`Output::MarkUsageLimit`].
    /// A switch starts the retry at once; otherwise it waits the delay fixed
    /// at the `agent_end`, or ends the chain when that delay exceeds the
    /// ceiling fixed there (fail fast, spec §10.3 step 8).
    UsageLimitMarked {
        /// Whether the host switched to another credential or model.
        switched: bool,
        /// The error text of the message that was marked: the same text the
        /// `agent_end` carried. The start event borrows it, so the machine
        /// never stores messages; a different text is [`Refused`] (the
        /// machine compares a 32-bit digest of the text, so a wrong text
        /// passes only on a digest collision, about one in 2^32).
        error_message: &'a str,
    },
    /// `model_switched`: the host's answer to [`Output::SwitchModel`] (spec
    /// §11.3). A switch starts one immediate retry on the new model with a
    /// fresh retry count; otherwise the chain ends as it would have without
    /// `modelFallback` (or waits for a usage reset, §11.5). Outside that
    /// wait it is ignored.
    ModelSwitched {
        /// Whether the host switched to another model.
        switched: bool,
        /// The error text of the message of the decision: the same text
        /// the `agent_end` carried, which the start or end event borrows
        /// (checked by digest, as for [`Input::UsageLimitMarked`]).
        error_message: &'a str,
    },
    /// `abort_retry`: cancel the retry (RPC command, or Esc on the loader).
    AbortRetry,
    /// `abort`: the global abort: everything `abort_retry` does, then abort
    /// the agent.
    Abort,
    /// `set_auto_retry`: write `retry.enabled`; a pending backoff goes on.
    SetAutoRetry {
        /// The new value of `retry.enabled`.
        enabled: bool,
    },
    /// `settings`: replace the whole `retry` group; it applies from the next
    /// decision.
    Settings(RetrySettings),
}

impl<'a> Input<'a> {
    /// `agent_end` with the run's last message and no host clock.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, Machine};
    /// let out = Machine::default().handle(Input::agent_end(AssistantMessage::error("503"))).unwrap();
    /// assert_eq!(out.len(), 3);
    /// ```
    pub const fn agent_end(message: AssistantMessage<'a>) -> Self {
        Input::AgentEnd {
            message,
            now_ms: None,
        }
    }

    /// `agent_end` with the host's wall clock in Unix milliseconds (for the
    /// absolute forms of retry hints, spec §10.4).
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input};
    /// let input = Input::agent_end_at(AssistantMessage::error("503"), 1_700_000_000_000);
    /// assert!(matches!(input, Input::AgentEnd { now_ms: Some(1_700_000_000_000), .. }));
    /// ```
    pub const fn agent_end_at(message: AssistantMessage<'a>, now_ms: u64) -> Self {
        Input::AgentEnd {
            message,
            now_ms: Some(now_ms),
        }
    }

    /// `message_end`.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, StopReason};
    /// assert!(matches!(Input::message_end(AssistantMessage::new(StopReason::Stop)), Input::MessageEnd { .. }));
    /// ```
    pub const fn message_end(message: AssistantMessage<'a>) -> Self {
        Input::MessageEnd { message }
    }

    /// `timer_fired` for the timer of a `sleep`.
    ///
    /// ```
    /// use autoretry::{Input, TimerId};
    /// assert_eq!(Input::timer_fired(TimerId(1)), Input::TimerFired { timer: TimerId(1) });
    /// ```
    pub const fn timer_fired(timer: TimerId) -> Self {
        Input::TimerFired { timer }
    }

    /// `usage_limit_marked`, with the error text of the marked message.
    ///
    /// ```
    /// use autoretry::Input;
    /// assert!(matches!(Input::usage_limit_marked(true, "usage limit"), Input::UsageLimitMarked { switched: true, .. }));
    /// ```
    pub const fn usage_limit_marked(switched: bool, error_message: &'a str) -> Self {
        Input::UsageLimitMarked {
            switched,
            error_message,
        }
    }

    /// `model_switched`, with the error text of the decision's message.
    ///
    /// ```
    /// use autoretry::Input;
    /// assert!(matches!(Input::model_switched(false, "529"), Input::ModelSwitched { switched: false, .. }));
    /// ```
    pub const fn model_switched(switched: bool, error_message: &'a str) -> Self {
        Input::ModelSwitched {
            switched,
            error_message,
        }
    }

    /// `stream_start` at the host's monotonic `now_ms` (spec §12.2).
    ///
    /// ```
    /// use autoretry::Input;
    /// assert_eq!(Input::stream_start(5), Input::StreamStart { now_ms: 5 });
    /// ```
    pub const fn stream_start(now_ms: u64) -> Self {
        Input::StreamStart { now_ms }
    }

    /// `stream_event` at the host's monotonic `now_ms` (spec §12.2).
    ///
    /// ```
    /// use autoretry::Input;
    /// assert_eq!(Input::stream_event(9), Input::StreamEvent { now_ms: 9 });
    /// ```
    pub const fn stream_event(now_ms: u64) -> Self {
        Input::StreamEvent { now_ms }
    }

    /// `set_auto_retry`.
    ///
    /// ```
    /// use autoretry::Input;
    /// assert_eq!(Input::set_auto_retry(false), Input::SetAutoRetry { enabled: false });
    /// ```
    pub const fn set_auto_retry(enabled: bool) -> Self {
        Input::SetAutoRetry { enabled }
    }

    /// `settings`: the whole `retry` group.
    ///
    /// ```
    /// use autoretry::{Input, RetrySettings};
    /// let input = Input::settings(RetrySettings::DEFAULT.with_max_retries(5));
    /// assert!(matches!(input, Input::Settings(s) if s.max_retries == 5));
    /// ```
    pub const fn settings(settings: RetrySettings) -> Self {
        Input::Settings(settings)
    }
}

/// Why an input was refused (spec §6a). A refused input changes nothing and
/// produces no outputs.
///
/// ```
/// use autoretry::{AssistantMessage, Input, Machine, Refused, StopReason};
/// let mut m = Machine::default();
/// let _ = m.handle(Input::AgentEnd { message: AssistantMessage::error("overloaded"), now_ms: None }).unwrap();
/// let late = Input::MessageEnd { message: AssistantMessage::new(StopReason::Stop) };
/// assert_eq!(m.handle(late), Err(Refused::AgentRunDuringBackoff));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Refused {
    /// A `message_end` or `agent_end` arrived while a backoff timer is
    /// pending: the agent must not run then.
    AgentRunDuringBackoff,
    /// A `message_end` or `agent_end` arrived while the machine waits for the
    /// host's `usage_limit_marked` answer: the agent must not run then.
    AwaitingUsageLimitAnswer,
    /// A `usage_limit_marked` carried an error text other than the one of the
    /// message the machine asked to mark.
    UsageLimitTextMismatch,
    /// A `message_end` or `agent_end` arrived while the machine waits for the
    /// host's `model_switched` answer (spec §11.3).
    AwaitingModelSwitchAnswer,
    /// A `model_switched` carried an error text other than the one of the
    /// message whose decision asked for another model.
    ModelSwitchTextMismatch,
    /// A `message_end` or `agent_end` whose message is `empty` while its
    /// `partial` says it streamed text or a tool call (spec §12.3).
    EmptyWithPartial,
}

impl Refused {
    /// The reason, as one sentence.
    pub const fn as_str(self) -> &'static str {
        match self {
            Refused::AgentRunDuringBackoff => {
                "the agent must not run while a retry backoff is pending"
            }
            Refused::AwaitingUsageLimitAnswer => {
                "the agent must not run while the usage-limit answer (usage_limit_marked) is awaited"
            }
            Refused::UsageLimitTextMismatch => {
                "usage_limit_marked carries an error text other than the one that was marked"
            }
            Refused::AwaitingModelSwitchAnswer => {
                "the agent must not run while the model-switch answer (model_switched) is awaited"
            }
            Refused::ModelSwitchTextMismatch => {
                "model_switched carries an error text other than the one of the decision"
            }
            Refused::EmptyWithPartial => {
                "empty: an empty answer cannot have partial text or tool calls"
            }
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl core::error::Error for Refused {}

/// The query surface (spec §7): `autoRetryEnabled`, `isRetrying`, `retryAttempt`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RetryState {
    /// `autoRetryEnabled`: `retry.enabled`.
    pub auto_retry_enabled: bool,
    /// `isRetrying`: a chain is open.
    pub is_retrying: bool,
    /// `retryAttempt`: 0 when idle, else the number of the retry in progress.
    pub retry_attempt: u32,
}

/// Where the machine is between inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) enum Phase {
    /// No chain is open.
    Idle,
    /// A chain is open and the agent may run (the continued run is in
    /// flight, or a success was reported and the run has not ended yet).
    Running,
    /// A chain is open and the backoff timer `Machine::timer` is pending.
    Backoff,
    /// A chain is open and the host was asked to mark a usage limit; the
    /// figures of the start event or of the fail-fast end are fixed in
    /// `Machine::marked` (spec §5.1.4, §10.3 step 7).
    AwaitingUsageLimit,
    /// A chain is open and the host was asked to switch models; the
    /// decision is fixed in `Machine::marked` (spec §11.3).
    AwaitingModelSwitch,
}

/// A decision that waits for the host's answer (`usage_limit_marked` or
/// `model_switched`), with every figure it still needs, fixed at the
/// `agent_end` (spec §11.7: the settings in force there decide, even after
/// a hand-off answer). Kept outside [`Phase`] so that the phase stays one
/// byte.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct Marked {
    /// The wait (spec §10.3 step 6); while the model-switch answer to a
    /// `"total_wait"` is awaited, the wait that the total check added.
    pub(crate) delay_ms: u64,
    /// The `maxDelayMs` that `delay_ms` exceeds, when the chain must fail
    /// fast or ask for another model (§10.3 step 8); else 0.
    pub(crate) exceeded_ceiling_ms: u64,
    /// `maxTotalDelayMs` (§11.6); 0 = no limit.
    pub(crate) max_total_delay_ms: u64,
    /// `maxAttempts` of the start event.
    pub(crate) max_attempts: u32,
    /// The digest of the decision's error text.
    pub(crate) text_fingerprint: u32,
    /// The reason asked for, while the model-switch answer is awaited.
    pub(crate) reason: FallbackReason,
    /// `modelFallback` applies: on, and the retry is no continuation.
    pub(crate) may_ask: bool,
    /// The host was asked for another model in this decision (§11.3: at
    /// most once).
    pub(crate) asked: bool,
    /// Over the ceiling, the usage-reset wait of §11.5 applies (a usage
    /// limit, `delay_ms` at most `maxUsageWaitMs`).
    pub(crate) usage_reset: bool,
    /// The retry is a continuation (§11.2, `partial: "text"`).
    pub(crate) continuation: bool,
    /// The attempt being decided is 2^32, one past the kept `u32::MAX`.
    pub(crate) beyond: bool,
    /// Whose error text the decision reports: the message's (the answer
    /// carries it), or the machine's for a stall or an empty answer
    /// (spec §12).
    pub(crate) made: Made,
    /// With [`Made::Stalled`], the stall's silence.
    pub(crate) silence_ms: u64,
}

/// The error text of a decision that the machine made itself (spec §12.2
/// rule 4, §12.3); the hand-off answers carry the message's own text,
/// which the events then do not show.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) enum Made {
    /// The message's own error text.
    Host,
    /// [`EMPTY_RESPONSE`].
    Empty,
    /// The stall sentence, with the silence kept beside the tag.
    Stalled,
}

impl Marked {
    /// The text the events of the decision show, given the message's.
    pub(crate) const fn text<'a>(&self, host: &'a str) -> ErrorText<'a> {
        match self.made {
            Made::Host => ErrorText::Text(host),
            Made::Empty => ErrorText::Text(EMPTY_RESPONSE),
            Made::Stalled => ErrorText::Stalled {
                silence_ms: self.silence_ms,
            },
        }
    }
}

impl Marked {
    pub(crate) const NONE: Marked = Marked {
        delay_ms: 0,
        exceeded_ceiling_ms: 0,
        max_total_delay_ms: 0,
        max_attempts: 0,
        text_fingerprint: 0,
        reason: FallbackReason::Exhausted,
        may_ask: false,
        asked: false,
        usage_reset: false,
        continuation: false,
        beyond: false,
        made: Made::Host,
        silence_ms: 0,
    };
}

/// The auto-retry state machine.
///
/// A plain value: no clock, no I/O, no callbacks, and no allocation but the
/// classifier's speed tables (feature `prefilter`, on std: built on the
/// heap once per process, at first use). Feed it one
/// [`Input`] at a time with [`Machine::handle`] and carry out every
/// [`Output`] it returns, in order, before the next input:
///
/// ```text
/// loop {
///     let input = next event of the agent, a fired timer, or a command;
///     match machine.handle(input) {
///         Ok(outputs) => for output in outputs { carry it out },
///         Err(refused) => report it (nothing changed),
///     }
/// }
/// ```
///
/// A whole chain, driven by hand:
///
/// ```
/// use autoretry::{AssistantMessage, Event, Input, Machine, Output, StopReason};
///
/// let mut m = Machine::default();
/// let out = m.handle(Input::AgentEnd { message: AssistantMessage::error("503 Service Unavailable"), now_ms: None }).unwrap();
/// let Output::Sleep { ms: 2000, timer } = out[2] else { panic!("{out:?}") };
/// assert!(m.is_retrying());
///
/// // ... 2000 ms later:
/// let out = m.handle(Input::TimerFired { timer }).unwrap();
/// assert_eq!(out[..], [Output::ContinueAgent]);
///
/// // The continued run succeeds.
/// let out = m.handle(Input::AgentEnd { message: AssistantMessage::new(StopReason::Stop), now_ms: None }).unwrap();
/// assert_eq!(out[..], [
///     Output::Emit(Event::End { success: true, attempt: 1, final_error: None }),
///     Output::Settled,
///     Output::CheckCompaction,
/// ]);
/// assert!(!m.is_retrying());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
// The fields are the crate's so that `snapshot.rs` can save and check them.
pub struct Machine {
    pub(crate) settings: RetrySettings,
    /// The host options, kept field by field so that `credential_store`
    /// packs with the small fields below; the seed lives on as `jitter`.
    pub(crate) context_window: u64,
    /// The jitter generator's state (spec §10.6), the host's seed when made.
    pub(crate) jitter: u64,
    /// The generation of the last timer issued; the pending one in `Backoff`.
    pub(crate) timer: u64,
    /// The sum of the waits of the open chain's start events (spec §11.6).
    pub(crate) total_ms: u64,
    /// In `AwaitingUsageLimit` and `AwaitingModelSwitch`, the figures fixed
    /// at the decision; else [`Marked::NONE`].
    pub(crate) marked: Marked,
    pub(crate) attempt: u32,
    pub(crate) phase: Phase,
    pub(crate) credential_store: bool,
    /// In `Backoff`, the retry is a continuation: its timer gives
    /// [`Output::ResumeAgent`] (spec §11.2).
    pub(crate) resume: bool,
    /// The watched stream and the declared stall (spec §12.2).
    pub(crate) stream: Stream,
}

// Small enough to embed by value anywhere: at most 192 bytes on every
// target (the fields are integers only, so the size does not depend on
// pointers).
//
// What the fields cost on a 64-bit target: the settings 72 bytes (seven
// u64 keys, `maxRetries` and seven one-byte keys; §12.1's three keys added
// 16), the host options, jitter state, timer generation and chain total 32,
// the decision awaiting an answer 48 (§12 added 8: the stall's silence,
// and its one-byte `made` tag fits in the padding), the attempt, phase and
// flags 8, and the watched stream of §12.2 32 (its start, last event and
// due time, two flags and the tag; a stall keeps its silence there): 192.
const _: () = assert!(core::mem::size_of::<Machine>() <= 192);

impl Default for Machine {
    /// A machine with the default settings and host options.
    fn default() -> Self {
        Machine::new(RetrySettings::DEFAULT, HostOptions::DEFAULT)
    }
}

impl Machine {
    /// A new, idle machine; its jitter generator starts from `host.seed`
    /// (spec §10.6).
    ///
    /// ```
    /// use autoretry::{HostOptions, Machine, RetrySettings};
    /// let m = Machine::new(RetrySettings::DEFAULT.with_max_retries(5), HostOptions::default());
    /// assert_eq!(m.settings().max_retries, 5);
    /// assert_eq!(m.retry_attempt(), 0);
    /// ```
    pub const fn new(settings: RetrySettings, host: HostOptions) -> Self {
        Machine {
            settings,
            context_window: host.context_window,
            jitter: host.seed,
            timer: 0,
            total_ms: 0,
            marked: Marked::NONE,
            attempt: 0,
            phase: Phase::Idle,
            credential_store: host.credential_store,
            resume: false,
            stream: Stream::None,
        }
    }

    /// The settings in force.
    pub const fn settings(&self) -> RetrySettings {
        self.settings
    }

    /// The host options. Their `seed` is the jitter generator's state now:
    /// the seed the machine was made with until its first draw, and always
    /// the seed of a machine that would draw what this one draws next (the
    /// machine keeps no second copy, to stay within 96 bytes).
    ///
    /// ```
    /// use autoretry::{AssistantMessage, HostOptions, Input, JitterPct, Machine, RetrySettings};
    /// let host = HostOptions::DEFAULT.with_seed(7).with_context_window(1000);
    /// let jittered = RetrySettings::DEFAULT.with_jitter_pct(JitterPct::MAX);
    /// let mut m = Machine::new(jittered, host);
    /// assert_eq!(m.host_options(), host);
    ///
    /// let fail = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
    /// let _ = m.handle(fail).unwrap(); // one draw
    /// let mut twin = Machine::new(jittered, m.host_options());
    /// let _ = m.handle(Input::AbortRetry).unwrap();
    /// // The same next draw: the same start event.
    /// assert_eq!(m.handle(fail).unwrap()[0], twin.handle(fail).unwrap()[0]);
    /// ```
    pub const fn host_options(&self) -> HostOptions {
        HostOptions {
            context_window: self.context_window,
            credential_store: self.credential_store,
            seed: self.jitter,
        }
    }

    /// Changes the context window and the credential store (for example
    /// after a model switch); they apply from the next decision. The jitter
    /// generator goes on from its state (spec §10.6: only a new machine
    /// starts it again), so `host.seed` is not read here.
    ///
    /// ```
    /// use autoretry::{HostOptions, Machine};
    /// let mut m = Machine::default();
    /// m.set_host_options(HostOptions::DEFAULT.with_context_window(8000).with_seed(9));
    /// assert_eq!(m.host_options(), HostOptions::DEFAULT.with_context_window(8000).with_seed(0));
    /// ```
    pub fn set_host_options(&mut self, host: HostOptions) {
        self.context_window = host.context_window;
        self.credential_store = host.credential_store;
    }

    /// `autoRetryEnabled`: the `retry.enabled` setting.
    pub const fn auto_retry_enabled(&self) -> bool {
        self.settings.enabled
    }

    /// `isRetrying`: a chain is open (the host's prompt must not complete).
    pub const fn is_retrying(&self) -> bool {
        !matches!(self.phase, Phase::Idle)
    }

    /// `retryAttempt`: 0 when idle, else the number of the retry in progress.
    pub const fn retry_attempt(&self) -> u32 {
        self.attempt
    }

    /// The three queries at once.
    ///
    /// ```
    /// use autoretry::{Machine, RetryState};
    /// let state = Machine::default().state();
    /// assert_eq!(state, RetryState { auto_retry_enabled: true, is_retrying: false, retry_attempt: 0 });
    /// ```
    pub const fn state(&self) -> RetryState {
        RetryState {
            auto_retry_enabled: self.auto_retry_enabled(),
            is_retrying: self.is_retrying(),
            retry_attempt: self.attempt,
        }
    }

    /// The backoff timer currently pending, if any.
    ///
    /// Timer ids run 1, 2, 3, ...: never 0 (hosts may read 0 as "no timer"),
    /// never one issued before. They never wrap: once a machine has issued
    /// `u64::MAX` (2^64 − 1 sleeps, 584 years at one a nanosecond), every
    /// retryable error ends its chain as past `maxRetries` (spec §5.1.2).
    pub const fn pending_timer(&self) -> Option<TimerId> {
        match self.phase {
            Phase::Backoff => Some(TimerId(self.timer)),
            _ => None,
        }
    }

    /// Whether the machine waits for [`Input::UsageLimitMarked`].
    pub const fn awaits_usage_limit_answer(&self) -> bool {
        matches!(self.phase, Phase::AwaitingUsageLimit)
    }

    /// Whether the machine waits for [`Input::ModelSwitched`] (spec §11.3).
    pub const fn awaits_model_switch_answer(&self) -> bool {
        matches!(self.phase, Phase::AwaitingModelSwitch)
    }

    /// [`Machine::handle`] with the retry budget shared by sessions (spec
    /// §11.4): a retry decision charges it one token and is throttled while
    /// it holds at most half its tokens; an `agent_end` whose stop reason
    /// is neither `error` nor `aborted` refills it. A refused input changes
    /// neither the machine nor the budget.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Event, FinalError, Input, Machine, Output, RetryBudget};
    /// let mut budget = RetryBudget::new(2, 100).unwrap().with_tokens_milli(1500).unwrap();
    /// let mut m = Machine::default();
    /// let fail = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
    /// let out = m.handle_with_budget(fail, &mut budget).unwrap();
    /// assert_eq!(out[0], Output::Emit(Event::End {
    ///     success: false,
    ///     attempt: 0,
    ///     final_error: Some(FinalError::Throttled { error: "503".into() }),
    /// }));
    /// assert_eq!(budget.tokens_milli(), 500);
    /// ```
    #[must_use = "the host must carry out every output, in order"]
    pub fn handle_with_budget<'a>(
        &mut self,
        input: Input<'a>,
        budget: &mut RetryBudget,
    ) -> Result<Outputs<'a>, Refused> {
        let refill = matches!(input, Input::AgentEnd { message, .. } if self.is_success(&message));
        let out = self.step(input, Some(budget))?;
        if refill {
            budget.refill();
        }
        Ok(out)
    }

    /// Consumes one input and returns what the host must do, in order.
    ///
    /// A refused input (spec §6a) returns `Err`, produces nothing and changes
    /// nothing. Late inputs that are harmless (a stale timer, a late
    /// usage-limit answer, `abort_retry` with no chain) return no outputs.
    ///
    /// # The host's rules
    ///
    /// **Carry out every output, in order, before the next input** (the
    /// drain rule). Then:
    ///
    /// **A prompt is over at `check_compaction`.** Every `agent_end` is
    /// resolved by exactly one [`Output::ContinueAgent`] (its backoff ended:
    /// run the agent again, another `agent_end` will come) or one
    /// [`Output::CheckCompaction`] (no retry: run the compaction check and
    /// complete the prompt), spec §5.5. A cancel during a backoff (or while
    /// the usage-limit answer is awaited) resolves
    /// the pending `agent_end` with `check_compaction` too; a cancel while
    /// the continued run is in flight does not (that run's own `agent_end`
    /// will). [`Output::Settled`] is no end-of-prompt signal: it comes only
    /// when a chain was open, so a prompt answered at the first try has none.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, Machine, Output, StopReason};
    /// let mut m = Machine::default();
    /// let good = Input::AgentEnd { message: AssistantMessage::new(StopReason::Stop), now_ms: None };
    /// // First try: over, with no `settled`.
    /// assert_eq!(m.handle(good).unwrap()[..], [Output::CheckCompaction]);
    ///
    /// // Abort_retry while the continued run is in flight: the chain ends
    /// // (`settled`), but the prompt is over only at the run's own end.
    /// let failed = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
    /// let Output::Sleep { timer, .. } = m.handle(failed).unwrap()[2] else { unreachable!() };
    /// let _ = m.handle(Input::TimerFired { timer }).unwrap(); // continue_agent
    /// let out = m.handle(Input::AbortRetry).unwrap();
    /// assert_eq!(out.last(), Some(&Output::Settled));
    /// assert!(!out.contains(&Output::CheckCompaction));
    /// assert_eq!(m.handle(good).unwrap()[..], [Output::CheckCompaction]);
    /// ```
    ///
    /// **Feed every assistant `message_end`.** During a chain, the first
    /// good message (any stop reason but `error` and `aborted`) reports the
    /// chain's success at once, `auto_retry_end {success: true}`, and sets
    /// the attempt to 0, even while the run goes on with its tool calls
    /// (spec §5.2). The chain stays open until the run's `agent_end`, which
    /// gives `settled` and `check_compaction`. Outside a chain a
    /// `message_end` does nothing.
    ///
    /// **So `is_retrying` can be true with `retry_attempt` 0**: between that
    /// good `message_end` and the `agent_end`, the retry has succeeded but
    /// the waiting period is not over (the prompt must not complete yet).
    /// If the same run fails again, the new chain (attempt 1) continues
    /// that waiting period, with no `settled` in between.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Event, Input, Machine, Output, StopReason};
    /// let mut m = Machine::default();
    /// let failed = Input::AgentEnd { message: AssistantMessage::error("529 overloaded"), now_ms: None };
    /// let Output::Sleep { timer, .. } = m.handle(failed).unwrap()[2] else { unreachable!() };
    /// let _ = m.handle(Input::TimerFired { timer }).unwrap();
    ///
    /// // The continued run's first message is good: the success is reported now.
    /// let tool_use = Input::MessageEnd { message: AssistantMessage::new(StopReason::ToolUse) };
    /// let out = m.handle(tool_use).unwrap();
    /// assert_eq!(out[..], [Output::Emit(Event::End { success: true, attempt: 1, final_error: None })]);
    /// assert!(m.is_retrying() && m.retry_attempt() == 0); // the run is not over
    ///
    /// // The run ends after its tools: the waiting period closes.
    /// let done = Input::AgentEnd { message: AssistantMessage::new(StopReason::Stop), now_ms: None };
    /// assert_eq!(m.handle(done).unwrap()[..], [Output::Settled, Output::CheckCompaction]);
    /// assert!(!m.is_retrying());
    /// ```
    #[must_use = "the host must carry out every output, in order"]
    pub fn handle<'a>(&mut self, input: Input<'a>) -> Result<Outputs<'a>, Refused> {
        self.step(input, None)
    }

    /// One input, with or without a budget to account.
    #[inline(always)]
    fn step<'a>(
        &mut self,
        input: Input<'a>,
        budget: Option<&mut RetryBudget>,
    ) -> Result<Outputs<'a>, Refused> {
        // The outputs are written once, straight into the result: the
        // common inputs (those that meet no open chain, and a pending timer)
        // give at most one output, chosen here; the others return theirs
        // from a call. A buffer of outputs copied into the result would cost
        // more than all the rest of such an input.
        let output = match input {
            Input::MessageEnd { message } => {
                self.check_agent_may_run()?;
                check_empty(&message)?;
                if self.stream != Stream::None {
                    let mut out = Outputs::new();
                    self.end_stream(&mut out);
                    if let Some(end) = self.report_success(&message) {
                        push(&mut out, end);
                    }
                    return Ok(out);
                }
                self.report_success(&message)
            }
            // No chain open, no stream, and nothing to classify: the
            // prompt is over.
            Input::AgentEnd { message, .. }
                if self.phase == Phase::Idle
                    && self.attempt == 0
                    && self.stream == Stream::None
                    && !self.may_retry(&message)
                    && !self.is_empty_failure(&message) =>
            {
                check_empty(&message)?;
                Some(Output::CheckCompaction)
            }
            // §13.3: the headers are read, then the message classified.
            Input::AgentEnd { message, now_ms } => {
                let message = message.with_header_hints(now_ms);
                return self.agent_end(&message, now_ms, budget);
            }
            Input::StreamEvent { now_ms } => self.stream_event(now_ms),
            Input::TimerFired { timer } => {
                if self.pending_timer() == Some(timer) {
                    self.phase = Phase::Running;
                    if core::mem::take(&mut self.resume) {
                        Some(Output::ResumeAgent)
                    } else {
                        Some(Output::ContinueAgent)
                    }
                } else if self.pending_watch() == Some(timer) {
                    self.watch_fired()
                } else {
                    None
                }
            }
            Input::StreamStart { now_ms } => {
                self.check_agent_may_run()?;
                return Ok(self.stream_start(now_ms));
            }
            Input::ModelSwitched {
                switched,
                error_message,
            } => return self.model_switched(switched, error_message),
            Input::UsageLimitMarked {
                switched,
                error_message,
            } => return self.usage_limit_marked(switched, error_message),
            Input::AbortRetry => {
                if self.phase != Phase::Idle {
                    let mut out = Outputs::new();
                    self.cancel(false, &mut out);
                    return Ok(out);
                }
                // No chain: nothing to cancel.
                self.attempt = 0;
                self.marked = Marked::NONE;
                None
            }
            Input::Abort => {
                // The stream ends first (its watch cancelled, a stall
                // forgotten), then the chain, then the agent.
                let mut out = Outputs::new();
                self.end_stream(&mut out);
                self.stream = Stream::None;
                self.cancel(true, &mut out);
                return Ok(out);
            }
            Input::SetAutoRetry { enabled } => {
                self.settings.enabled = enabled;
                None
            }
            Input::Settings(settings) => {
                self.settings = settings;
                None
            }
        };
        let mut out = Outputs::new();
        if let Some(output) = output {
            push(&mut out, output);
        }
        Ok(out)
    }

    /// Spec §5.1, §9 and §10.3: the decision at the end of a run.
    #[inline(never)]
    fn agent_end<'a>(
        &mut self,
        message: &AssistantMessage<'a>,
        now_ms: Option<u64>,
        budget: Option<&mut RetryBudget>,
    ) -> Result<Outputs<'a>, Refused> {
        self.check_agent_may_run()?;
        check_empty(message)?;
        let mut out = Outputs::new();
        // §12.2 rule 5: the stream ends, its watch cancelled first.
        self.end_stream(&mut out);
        // §13.3: a stall (§12.2 rule 4), else an empty answer (§12.3),
        // makes the message's error; the stall is forgotten either way.
        let stalled = core::mem::replace(&mut self.stream, Stream::None);
        let text = match stalled {
            Stream::Stalled { silence_ms } if !message.stop_reason.is_success() => {
                Some(ErrorText::Stalled { silence_ms })
            }
            _ if self.is_empty_failure(message) => Some(ErrorText::Text(EMPTY_RESPONSE)),
            _ => None,
        };
        let Some(text) = text else {
            let retries = self.may_retry(message)
                && message.is_retryable_with(self.context_window, self.settings.classifier);
            match message.error_text() {
                Some(text) if retries => {
                    let decision = Decision {
                        text: ErrorText::Text(text),
                        made: Made::Host,
                        fingerprint: fingerprint(text),
                    };
                    self.retry(message, text, decision, now_ms, budget, &mut out);
                }
                text => self.settle(
                    message.stop_reason.is_success(),
                    text.map(ErrorText::Text),
                    &mut out,
                ),
            }
            return Ok(out);
        };
        // The message as §12 rewrites it: an error with the machine's
        // text, retryable by the host's own verdict; its other fields stay.
        let mut buf = [0; ErrorText::STALLED_MAX_LEN];
        let rules_text = text.write_into(&mut buf).unwrap_or(EMPTY_RESPONSE);
        let rewritten = AssistantMessage {
            stop_reason: StopReason::Error,
            error_message: Some(rules_text),
            should_retry: Some(true),
            ..*message
        };
        let retries = self.may_retry(&rewritten)
            && rewritten.is_retryable_with(self.context_window, self.settings.classifier);
        if retries {
            let decision = Decision {
                text,
                made: match text {
                    ErrorText::Stalled { .. } => Made::Stalled,
                    ErrorText::Text(_) => Made::Empty,
                },
                // The hand-off answers carry the text the host fed.
                fingerprint: fingerprint(message.error_message.unwrap_or("")),
            };
            self.retry(&rewritten, rules_text, decision, now_ms, budget, &mut out);
        } else {
            self.settle(false, Some(text), &mut out);
        }
        Ok(out)
    }

    /// Whether the message is an empty answer that `retryEmpty` makes a
    /// failure (spec §12.3).
    fn is_empty_failure(&self, message: &AssistantMessage<'_>) -> bool {
        self.settings.retry_empty && message.empty && message.stop_reason == StopReason::Stop
    }

    /// Whether the message is a good answer (spec §5.2), an empty one under
    /// `retryEmpty` excepted (§12.3).
    fn is_success(&self, message: &AssistantMessage<'_>) -> bool {
        message.stop_reason.is_success() && !self.is_empty_failure(message)
    }

    fn check_agent_may_run(&self) -> Result<(), Refused> {
        match self.phase {
            Phase::Backoff => Err(Refused::AgentRunDuringBackoff),
            Phase::AwaitingUsageLimit => Err(Refused::AwaitingUsageLimitAnswer),
            Phase::AwaitingModelSwitch => Err(Refused::AwaitingModelSwitchAnswer),
            Phase::Idle | Phase::Running => Ok(()),
        }
    }

    /// Spec §5.2: the first good message of a chain reports its success.
    fn report_success<'a>(&mut self, message: &AssistantMessage<'a>) -> Option<Output<'a>> {
        (self.attempt > 0 && self.is_success(message)).then(|| self.end(true, None))
    }

    /// Whether the run may retry at all: an error message with an error
    /// text, under `retry.enabled`. Only then is the text classified.
    fn may_retry(&self, message: &AssistantMessage<'_>) -> bool {
        message.stop_reason == StopReason::Error
            && message.error_text().is_some()
            && self.settings.enabled
    }

    /// Spec §5.2 and §9: a run that ends without a retry. A success ends an
    /// open chain's attempt with success, an error with the message's
    /// error; an open chain settles; the prompt is over.
    fn settle<'a>(&mut self, success: bool, text: Option<ErrorText<'a>>, out: &mut Outputs<'a>) {
        if self.attempt > 0 {
            let end = if success {
                self.end(true, None)
            } else {
                let text = text.unwrap_or(ErrorText::Text(UNKNOWN_ERROR));
                self.end(false, Some(FinalError::of(text)))
            };
            push(out, end);
        }
        if self.is_retrying() {
            push(out, Output::Settled);
        }
        push(out, Output::CheckCompaction);
        self.phase = Phase::Idle;
    }

    /// Spec §5.1, §10.3 and §11.7: a run whose error retries, in the order
    /// of one decision.
    ///
    /// `message` is the message as the rules see it (rewritten by §12),
    /// `rules_text` its error text; the events show `made.text`.
    fn retry<'a>(
        &mut self,
        message: &AssistantMessage<'_>,
        rules_text: &str,
        made: Decision<'a>,
        now_ms: Option<u64>,
        budget: Option<&mut RetryBudget>,
        out: &mut Outputs<'a>,
    ) {
        let retry_text = made.text;
        let settings = self.settings;
        let classifier = settings.classifier;
        let continuation = message.partial == Partial::Text;
        let mut decision = Marked {
            max_total_delay_ms: settings.max_total_delay_ms,
            max_attempts: settings.max_retries,
            text_fingerprint: made.fingerprint,
            may_ask: settings.model_fallback && !continuation,
            continuation,
            made: made.made,
            silence_ms: match made.text {
                ErrorText::Stalled { silence_ms } => silence_ms,
                ErrorText::Text(_) => 0,
            },
            ..Marked::NONE
        };

        // 1. The chain opens (or goes on) atomically with the decision; a
        // new chain's total of §11.6 restarts. The attempt after u32::MAX
        // (2^32) is kept as u32::MAX with `beyond` set.
        match self.next_attempt() {
            Some(attempt) => self.attempt = attempt,
            None => decision.beyond = true,
        }
        if self.attempt == 1 {
            self.total_ms = 0;
        }
        // 2. The budget is charged (§11.4).
        let throttled = budget.is_some_and(|budget| {
            budget.charge();
            budget.is_throttled()
        });
        // 3. The max check (§5.1.2): past the maximum, or no timer id left.
        if decision.beyond || self.attempt > settings.max_retries || self.timer == u64::MAX {
            self.policy(FallbackReason::Exhausted, retry_text, decision, out);
            return;
        }
        // 4. The throttle (§11.4).
        if throttled {
            self.policy(FallbackReason::Throttled, retry_text, decision, out);
            return;
        }

        // 5. §10.3 steps 1–6. Steps 1–3: the exponential backoff, capped,
        // under the ceiling.
        let mut backoff = settings.backoff_ms(self.attempt);
        // Step 4: one draw whenever jitter is on, whatever comes next.
        if settings.jitter_pct.get() > 0 {
            let r = self.draw();
            backoff = settings.jitter_pct.reduce(backoff, r);
        }
        // Steps 5–6: the hint, under honorHints, can only lengthen the wait.
        // Under `curated` the hints of 13.2 give the text hint everywhere
        // one is read.
        #[cfg(feature = "curated")]
        let curated = classifier == classify::Classifier::Curated;
        #[cfg(not(feature = "curated"))]
        let curated = false;
        let text_hint = |wait: fn(&str, Option<u64>) -> Option<u64>| {
            #[cfg(feature = "curated")]
            if curated {
                return classify::curated_hint_ms(rules_text, now_ms);
            }
            wait(rules_text, now_ms)
        };
        let hint = if settings.honor_hints {
            message
                .retry_after_ms
                .or_else(|| text_hint(classify::wait_hint_ms))
        } else {
            None
        };
        let delay_ms = hint.map_or(backoff, |h| backoff.max(h));
        // §13.2: under `curated` a hint of 15 minutes or more (the
        // message's, else the text's) is a usage limit too.
        let usage_limit = message.is_usage_limit_with(classifier)
            || curated
                && message
                    .retry_after_ms
                    .or_else(|| text_hint(classify::wait_hint_ms))
                    .is_some_and(|h| h >= classify::LONG_WAIT_MS);
        decision.delay_ms = delay_ms;
        // Step 8's test, with the figures of this decision.
        if settings.max_delay_ms > 0 && delay_ms > settings.max_delay_ms {
            decision.exceeded_ceiling_ms = settings.max_delay_ms;
            decision.usage_reset = usage_limit && delay_ms <= settings.max_usage_wait_ms;
        }

        // 6. The usage-limit hand-off (§10.3 step 7).
        if self.credential_store && usage_limit {
            let retry_after_ms = if settings.honor_hints {
                hint
            } else {
                message
                    .retry_after_ms
                    .or_else(|| text_hint(classify::retry_hint_ms))
            };
            self.marked = decision;
            self.phase = Phase::AwaitingUsageLimit;
            push(out, Output::MarkUsageLimit { retry_after_ms });
        } else {
            self.ceiling(retry_text, decision, out);
        }
    }

    /// Spec §11.7 step 7: over the ceiling, another model, else the
    /// usage-reset wait (§11.5), else the fail-fast end; under it, step 8.
    fn ceiling<'a>(&mut self, text: ErrorText<'a>, decision: Marked, out: &mut Outputs<'a>) {
        if decision.exceeded_ceiling_ms > 0 {
            self.policy(FallbackReason::WaitTooLong, text, decision, out);
        } else {
            self.total_then_start(text, decision, decision.delay_ms, out);
        }
    }

    /// Spec §11.7 steps 8–9: the total of §11.6 with a wait of `delay_ms`,
    /// then the start.
    fn total_then_start<'a>(
        &mut self,
        text: ErrorText<'a>,
        mut decision: Marked,
        delay_ms: u64,
        out: &mut Outputs<'a>,
    ) {
        // `total + d > maxTotalDelayMs` taken exactly: a sum past u64::MAX
        // exceeds every limit, u64::MAX included.
        let limit = decision.max_total_delay_ms;
        let exceeds = self
            .total_ms
            .checked_add(delay_ms)
            .is_none_or(|total| total > limit);
        if limit > 0 && exceeds {
            // The answer "not switched" reports the wait checked here.
            decision.delay_ms = delay_ms;
            self.policy(FallbackReason::TotalWait, text, decision, out);
            return;
        }
        self.total_ms = self.total_ms.saturating_add(delay_ms);
        let continuation = decision.continuation;
        self.start(text, delay_ms, decision.max_attempts, continuation, out);
    }

    /// Spec §11.3: a chain about to end for a policy reason asks for
    /// another model, at most once per decision and never for a
    /// continuation; else it goes on as without `modelFallback`.
    fn policy<'a>(
        &mut self,
        reason: FallbackReason,
        text: ErrorText<'a>,
        mut decision: Marked,
        out: &mut Outputs<'a>,
    ) {
        if decision.may_ask && !decision.asked {
            decision.reason = reason;
            decision.asked = true;
            self.marked = decision;
            self.phase = Phase::AwaitingModelSwitch;
            push(out, Output::SwitchModel { reason });
        } else {
            self.without_fallback(reason, text, decision, out);
        }
    }

    /// What a policy reason does without another model: the end of its
    /// reason, except that over the ceiling the usage-reset wait of §11.5
    /// is tried first.
    fn without_fallback<'a>(
        &mut self,
        reason: FallbackReason,
        text: ErrorText<'a>,
        decision: Marked,
        out: &mut Outputs<'a>,
    ) {
        let final_error = match reason {
            FallbackReason::Exhausted => FinalError::of(text),
            FallbackReason::Throttled => FinalError::Throttled { error: text },
            FallbackReason::WaitTooLong if decision.usage_reset => {
                return self.total_then_start(text, decision, decision.delay_ms, out);
            }
            FallbackReason::WaitTooLong => FinalError::WaitTooLong {
                requested_ms: decision.delay_ms,
                max_delay_ms: decision.exceeded_ceiling_ms,
                error: text,
            },
            FallbackReason::TotalWait => FinalError::TotalWait {
                total_ms: self.total_ms.saturating_add(decision.delay_ms),
                max_total_delay_ms: decision.max_total_delay_ms,
                error: text,
            },
        };
        self.fail(decision, final_error, out);
    }

    /// Spec §5.1.1: the number of the next retry, `attempt + 1`, or `None`
    /// when that is 2^32 (past every maximum; the sum is never saturated,
    /// so a chain at u32::MAX ends rather than retrying u32::MAX forever).
    fn next_attempt(&self) -> Option<u32> {
        self.attempt.checked_add(1)
    }

    /// Spec §10.3 steps 7–8: the host's answer to `mark_usage_limit`; late
    /// answers give nothing. A switched credential goes on to the total
    /// check with a wait of 0 (§11.7 step 6).
    #[inline(never)]
    fn usage_limit_marked<'a>(
        &mut self,
        switched: bool,
        error_message: &'a str,
    ) -> Result<Outputs<'a>, Refused> {
        let mut out = Outputs::new();
        if self.phase == Phase::AwaitingUsageLimit {
            let marked = self.marked;
            if fingerprint(error_message) != marked.text_fingerprint {
                return Err(Refused::UsageLimitTextMismatch);
            }
            self.marked = Marked::NONE;
            let text = marked.text(error_message);
            if switched {
                self.total_then_start(text, marked, 0, &mut out);
            } else {
                self.ceiling(text, marked, &mut out);
            }
        }
        Ok(out)
    }

    /// Spec §11.3: the host's answer to `switch_model`; late answers give
    /// nothing. A switch starts one immediate retry with a fresh count and
    /// total (no budget charge, no total check).
    #[inline(never)]
    fn model_switched<'a>(
        &mut self,
        switched: bool,
        error_message: &'a str,
    ) -> Result<Outputs<'a>, Refused> {
        let mut out = Outputs::new();
        if self.phase == Phase::AwaitingModelSwitch {
            let marked = self.marked;
            if fingerprint(error_message) != marked.text_fingerprint {
                return Err(Refused::ModelSwitchTextMismatch);
            }
            self.marked = Marked::NONE;
            // With every timer id issued, a new model's retry could not
            // sleep: the chain ends as if none were found.
            let text = marked.text(error_message);
            if switched && self.timer < u64::MAX {
                self.attempt = 1;
                self.total_ms = 0;
                self.start(text, 0, marked.max_attempts, false, &mut out);
            } else {
                self.without_fallback(marked.reason, text, marked, &mut out);
            }
        }
        Ok(out)
    }

    /// Spec §10.6: one draw of the jitter generator (SplitMix64's output,
    /// high half).
    fn draw(&mut self) -> u32 {
        self.jitter = self.jitter.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.jitter;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 32) as u32
    }

    /// A chain that ends without starting the attempt being decided: it
    /// reports the retries it made, with `final_error`; no start, no drop,
    /// no sleep (spec §5.1.2, §10.3 step 8, §11.4, §11.6).
    fn fail<'a>(&mut self, decision: Marked, final_error: FinalError<'a>, out: &mut Outputs<'a>) {
        // The attempt being decided was never started: the end reports the
        // one before (which is the kept one when it was beyond u32::MAX).
        if !decision.beyond {
            self.attempt = self.attempt.saturating_sub(1);
        }
        push(out, self.end(false, Some(final_error)));
        push(out, Output::Settled);
        push(out, Output::CheckCompaction);
        self.phase = Phase::Idle;
    }

    /// Spec §5.1.5–7: announce the retry and start its backoff; a
    /// continuation (§11.2) keeps the trailing error and resumes.
    fn start<'a>(
        &mut self,
        text: ErrorText<'a>,
        delay_ms: u64,
        max_attempts: u32,
        continuation: bool,
        out: &mut Outputs<'a>,
    ) {
        push(
            out,
            Output::Emit(Event::Start {
                attempt: self.attempt,
                max_attempts,
                delay_ms,
                error_message: text,
            }),
        );
        if !continuation {
            push(out, Output::DropTrailingError);
        }
        // Every start follows a max check that found an id left (or a model
        // switch, which has none to spend when the last id is issued: see
        // `model_switched`), so ids never wrap to 0 nor repeat.
        self.timer = self.timer.saturating_add(1);
        push(
            out,
            Output::Sleep {
                ms: delay_ms,
                timer: TimerId(self.timer),
            },
        );
        self.resume = continuation;
        self.phase = Phase::Backoff;
    }

    /// Spec §5.3 and §6a: `abort_retry` while a chain is open, and with
    /// `abort` the global abort, which then aborts the agent.
    #[inline(never)]
    fn cancel(&mut self, abort: bool, out: &mut Outputs<'_>) {
        let cancelled = Some(FinalError::Text(RETRY_CANCELLED));
        match self.phase {
            Phase::Idle => {}
            Phase::Backoff => {
                push(
                    out,
                    Output::CancelTimer {
                        timer: TimerId(self.timer),
                    },
                );
                let end = self.end(false, cancelled);
                push(out, end);
                push(out, Output::Settled);
                push(out, Output::CheckCompaction);
            }
            Phase::AwaitingUsageLimit | Phase::AwaitingModelSwitch => {
                // As during a backoff, but no timer runs, and the attempt
                // being prepared never had its start event: the end reports
                // the one before, and none is emitted when that is 0 (even
                // after an earlier chain of the same waiting period). Past
                // u32::MAX, the one before is the kept u32::MAX.
                if !self.marked.beyond {
                    self.attempt = self.attempt.saturating_sub(1);
                }
                if self.attempt > 0 {
                    let end = self.end(false, cancelled);
                    push(out, end);
                }
                push(out, Output::Settled);
                push(out, Output::CheckCompaction);
            }
            Phase::Running => {
                if self.attempt > 0 {
                    let end = self.end(false, cancelled);
                    push(out, end);
                }
                push(out, Output::Settled);
            }
        }
        if abort {
            push(out, Output::AbortAgent);
        }
        self.attempt = 0;
        self.marked = Marked::NONE;
        self.resume = false;
        self.phase = Phase::Idle;
    }

    /// The `auto_retry_end` of the current attempt; resets the attempt.
    fn end<'a>(&mut self, success: bool, final_error: Option<FinalError<'a>>) -> Output<'a> {
        let attempt = self.attempt;
        self.attempt = 0;
        Output::Emit(Event::End {
            success,
            attempt,
            final_error,
        })
    }
}

/// Appends an output. The buffer holds [`crate::MAX_OUTPUTS`], the most any
/// input produces, so this never drops anything.
pub(crate) fn push<'a>(out: &mut Outputs<'a>, output: Output<'a>) {
    let _ = out.push(output);
}

/// Spec §12.3: an `empty` answer cannot have streamed text or tools.
fn check_empty(message: &AssistantMessage<'_>) -> Result<(), Refused> {
    if message.empty && message.partial != Partial::None {
        Err(Refused::EmptyWithPartial)
    } else {
        Ok(())
    }
}

/// The text a retry decision's events show, with whose it is and the
/// digest the hand-off answers are checked against.
#[derive(Clone, Copy)]
pub(crate) struct Decision<'a> {
    pub(crate) text: ErrorText<'a>,
    pub(crate) made: Made,
    pub(crate) fingerprint: u32,
}

/// A 32-bit digest of the text (FNV-1a), to recognise the text of the
/// usage-limit answer. It guards against host mistakes, not adversaries: a
/// different text passes only when its digest collides (about one text in
/// 2^32; a 16-bit digest would let one wrong text in 65,536 through).
fn fingerprint(text: &str) -> u32 {
    text.bytes().fold(0x811c_9dc5_u32, |hash, byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}
