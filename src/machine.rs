//! The retry state machine (spec §5–§10): [`Machine`], its [`Input`]s and the
//! [`Refused`] error for inputs out of turn.

use core::fmt;

use crate::classify;
use crate::message::{AssistantMessage, StopReason};
use crate::output::{Event, FinalError, Output, Outputs, TimerId, RETRY_CANCELLED, UNKNOWN_ERROR};
use crate::settings::{HostOptions, RetrySettings};

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
        /// only for the absolute forms of retry hints (spec §3.5, §10.4).
        now_ms: Option<u64>,
    },
    /// `timer_fired`: the timer of an [`Output::Sleep`] fired.
    TimerFired {
        /// The id the `sleep` carried.
        timer: TimerId,
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
}

/// What the usage-limit answer needs, fixed at the `agent_end` (kept
/// outside [`Phase`] so that the machine stays within 96 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) struct Marked {
    /// The wait (spec §10.3 step 6).
    pub(crate) delay_ms: u64,
    /// The `maxDelayMs` that `delay_ms` exceeds, when the answer "not
    /// switched" must fail fast (§10.3 step 8); else 0.
    pub(crate) exceeded_ceiling_ms: u64,
    /// `maxAttempts` of the start event.
    pub(crate) max_attempts: u32,
    /// The digest of the marked error text.
    pub(crate) text_fingerprint: u32,
}

impl Marked {
    pub(crate) const NONE: Marked = Marked {
        delay_ms: 0,
        exceeded_ceiling_ms: 0,
        max_attempts: 0,
        text_fingerprint: 0,
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
    /// In `AwaitingUsageLimit`, the figures fixed at the decision; else
    /// [`Marked::NONE`].
    pub(crate) marked: Marked,
    pub(crate) attempt: u32,
    pub(crate) phase: Phase,
    pub(crate) credential_store: bool,
}

// Small enough to embed by value anywhere: at most 96 bytes on every target
// (the fields are integers only, so the size does not depend on pointers).
const _: () = assert!(core::mem::size_of::<Machine>() <= 96);

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
            marked: Marked::NONE,
            attempt: 0,
            phase: Phase::Idle,
            credential_store: host.credential_store,
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
        // The outputs are written once, straight into the result: the
        // common inputs (those that meet no open chain, and a pending timer)
        // give at most one output, chosen here; the others return theirs
        // from a call. A buffer of outputs copied into the result would cost
        // more than all the rest of such an input.
        let output = match input {
            Input::MessageEnd { message } => {
                self.check_agent_may_run()?;
                self.report_success(&message)
            }
            // No chain open and nothing to classify: the prompt is over.
            Input::AgentEnd { message, .. }
                if self.phase == Phase::Idle && self.attempt == 0 && !self.may_retry(&message) =>
            {
                Some(Output::CheckCompaction)
            }
            Input::AgentEnd { message, now_ms } => return self.agent_end(&message, now_ms),
            Input::TimerFired { timer } => {
                if self.pending_timer() == Some(timer) {
                    self.phase = Phase::Running;
                    Some(Output::ContinueAgent)
                } else {
                    None
                }
            }
            Input::UsageLimitMarked {
                switched,
                error_message,
            } => return self.usage_limit_marked(switched, error_message),
            Input::AbortRetry | Input::Abort => {
                let abort = input == Input::Abort;
                if self.phase != Phase::Idle {
                    return Ok(self.cancel(abort));
                }
                // No chain: nothing to cancel.
                self.attempt = 0;
                self.marked = Marked::NONE;
                abort.then_some(Output::AbortAgent)
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
    ) -> Result<Outputs<'a>, Refused> {
        self.check_agent_may_run()?;
        let retries = self.may_retry(message)
            && message.is_retryable_with(self.context_window, self.settings.classifier);
        Ok(match message.error_text() {
            Some(text) if retries => self.retry(message, text, now_ms),
            _ => self.settle(message),
        })
    }

    fn check_agent_may_run(&self) -> Result<(), Refused> {
        match self.phase {
            Phase::Backoff => Err(Refused::AgentRunDuringBackoff),
            Phase::AwaitingUsageLimit => Err(Refused::AwaitingUsageLimitAnswer),
            Phase::Idle | Phase::Running => Ok(()),
        }
    }

    /// Spec §5.2: the first good message of a chain reports its success.
    fn report_success<'a>(&mut self, message: &AssistantMessage<'a>) -> Option<Output<'a>> {
        (self.attempt > 0 && message.stop_reason.is_success()).then(|| self.end(true, None))
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
    fn settle<'a>(&mut self, message: &AssistantMessage<'a>) -> Outputs<'a> {
        let end = if self.attempt == 0 {
            None
        } else if message.stop_reason.is_success() {
            Some(self.end(true, None))
        } else {
            let text = message.error_text().unwrap_or(UNKNOWN_ERROR);
            Some(self.end(false, Some(FinalError::Text(text))))
        };
        let settled = self.is_retrying();
        self.phase = Phase::Idle;
        match (end, settled) {
            (Some(end), true) => outputs([end, Output::Settled, Output::CheckCompaction]),
            (Some(end), false) => outputs([end, Output::CheckCompaction]),
            (None, true) => outputs([Output::Settled, Output::CheckCompaction]),
            (None, false) => outputs([Output::CheckCompaction]),
        }
    }

    /// Spec §5.1 and §10.3: a run whose error retries.
    fn retry<'a>(
        &mut self,
        message: &AssistantMessage<'a>,
        retry_text: &'a str,
        now_ms: Option<u64>,
    ) -> Outputs<'a> {
        let mut out = Outputs::new();
        let settings = self.settings;
        let classifier = settings.classifier;

        // The chain opens (or goes on) atomically with the decision.
        self.attempt = self.attempt.saturating_add(1);
        let max_attempts = settings.max_retries;
        if self.attempt > max_attempts {
            self.attempt = self.attempt.saturating_sub(1);
            let end = self.end(false, Some(FinalError::Text(retry_text)));
            self.phase = Phase::Idle;
            return outputs([end, Output::Settled, Output::CheckCompaction]);
        }

        // §10.3 steps 1–3: the exponential backoff, capped, under the ceiling.
        let mut backoff = settings.backoff_ms(self.attempt);
        // Step 4: one draw whenever jitter is on, whatever comes next.
        if settings.jitter_pct.get() > 0 {
            let r = self.draw();
            backoff = settings.jitter_pct.reduce(backoff, r);
        }
        // Steps 5–6: the hint, under honorHints, can only lengthen the wait.
        let hint = if settings.honor_hints {
            message
                .retry_after_ms
                .or_else(|| classify::wait_hint_ms(retry_text, now_ms))
        } else {
            None
        };
        let delay_ms = hint.map_or(backoff, |h| backoff.max(h));
        // Step 8's test, with the figures of this decision.
        let exceeded_ceiling_ms = if settings.max_delay_ms > 0 && delay_ms > settings.max_delay_ms {
            settings.max_delay_ms
        } else {
            0
        };

        // Step 7: the usage-limit hand-off.
        if self.credential_store && message.is_usage_limit_with(classifier) {
            let retry_after_ms = if settings.honor_hints {
                hint
            } else {
                message
                    .retry_after_ms
                    .or_else(|| classify::retry_hint_ms(retry_text, now_ms))
            };
            self.marked = Marked {
                delay_ms,
                exceeded_ceiling_ms,
                max_attempts,
                text_fingerprint: fingerprint(retry_text),
            };
            self.phase = Phase::AwaitingUsageLimit;
            push(&mut out, Output::MarkUsageLimit { retry_after_ms });
        } else if exceeded_ceiling_ms > 0 {
            self.fail_fast(retry_text, delay_ms, exceeded_ceiling_ms, &mut out);
        } else {
            self.start(retry_text, delay_ms, max_attempts, &mut out);
        }
        out
    }

    /// Spec §10.3 steps 7–8: the host's answer to `mark_usage_limit`; late
    /// answers give nothing.
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
            if switched {
                // A switch makes the wait 0 and skips the ceiling.
                self.start(error_message, 0, marked.max_attempts, &mut out);
            } else if marked.exceeded_ceiling_ms > 0 {
                self.fail_fast(
                    error_message,
                    marked.delay_ms,
                    marked.exceeded_ceiling_ms,
                    &mut out,
                );
            } else {
                self.start(
                    error_message,
                    marked.delay_ms,
                    marked.max_attempts,
                    &mut out,
                );
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

    /// Spec §10.3 step 8: the wait exceeds the ceiling, so the chain ends at
    /// once, reporting the retries it made: no start, no drop, no sleep.
    fn fail_fast<'a>(
        &mut self,
        text: &'a str,
        requested_ms: u64,
        max_delay_ms: u64,
        out: &mut Outputs<'a>,
    ) {
        self.attempt = self.attempt.saturating_sub(1);
        let final_error = FinalError::WaitTooLong {
            requested_ms,
            max_delay_ms,
            error: text,
        };
        push(out, self.end(false, Some(final_error)));
        push(out, Output::Settled);
        push(out, Output::CheckCompaction);
        self.phase = Phase::Idle;
    }

    /// Spec §5.1.5–7: announce the retry and start its backoff.
    fn start<'a>(
        &mut self,
        text: &'a str,
        delay_ms: u64,
        max_attempts: u32,
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
        push(out, Output::DropTrailingError);
        self.timer = self.timer.wrapping_add(1);
        push(
            out,
            Output::Sleep {
                ms: delay_ms,
                timer: TimerId(self.timer),
            },
        );
        self.phase = Phase::Backoff;
    }

    /// Spec §5.3 and §6a: `abort_retry` while a chain is open, and with
    /// `abort` the global abort, which then aborts the agent.
    #[inline(never)]
    fn cancel(&mut self, abort: bool) -> Outputs<'static> {
        let cancelled = Some(FinalError::Text(RETRY_CANCELLED));
        let out = match self.phase {
            Phase::Idle => then_abort([], abort),
            Phase::Backoff => {
                let timer = TimerId(self.timer);
                let end = self.end(false, cancelled);
                then_abort(
                    [
                        Output::CancelTimer { timer },
                        end,
                        Output::Settled,
                        Output::CheckCompaction,
                    ],
                    abort,
                )
            }
            Phase::AwaitingUsageLimit => {
                // As during a backoff, but no timer runs, and the attempt
                // being prepared never had its start event: the end reports
                // the one before, and none is emitted when that is 0 (even
                // after an earlier chain of the same waiting period).
                self.attempt = self.attempt.saturating_sub(1);
                if self.attempt > 0 {
                    let end = self.end(false, cancelled);
                    then_abort([end, Output::Settled, Output::CheckCompaction], abort)
                } else {
                    then_abort([Output::Settled, Output::CheckCompaction], abort)
                }
            }
            Phase::Running => {
                if self.attempt > 0 {
                    let end = self.end(false, cancelled);
                    then_abort([end, Output::Settled], abort)
                } else {
                    then_abort([Output::Settled], abort)
                }
            }
        };
        self.attempt = 0;
        self.marked = Marked::NONE;
        self.phase = Phase::Idle;
        out
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

/// The outputs `items`, in order. `K` is at most [`crate::MAX_OUTPUTS`]
/// wherever this is called, so nothing is dropped; a fixed list (rather
/// than pushes after branches) keeps every output at a fixed place.
fn outputs<'a, const K: usize>(items: [Output<'a>; K]) -> Outputs<'a> {
    let mut out = Outputs::new();
    for item in items {
        push(&mut out, item);
    }
    out
}

/// `items`, then `abort_agent` when `abort` is set.
fn then_abort<const K: usize>(items: [Output<'static>; K], abort: bool) -> Outputs<'static> {
    let mut out = outputs(items);
    if abort {
        push(&mut out, Output::AbortAgent);
    }
    out
}

/// Appends an output. The buffer holds [`crate::MAX_OUTPUTS`], the most any
/// input produces, so this never drops anything.
fn push<'a>(out: &mut Outputs<'a>, output: Output<'a>) {
    let _ = out.push(output);
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
