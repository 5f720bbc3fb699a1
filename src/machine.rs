//! The retry state machine (spec §5–§9): [`Machine`], its [`Input`]s and the
//! [`Refused`] error for inputs out of turn.

use core::fmt;

use crate::classify;
use crate::message::AssistantMessage;
use crate::output::{Event, Output, Outputs, TimerId, RETRY_CANCELLED, UNKNOWN_ERROR};
use crate::settings::{HostOptions, RetrySettings};

/// One thing that happened to the host (vectors README "Inputs").
///
/// Inputs borrow their texts; the [`Outputs`] of an input may borrow from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
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
        /// only for the absolute forms of retry hints (spec §3.5).
        now_ms: Option<u64>,
    },
    /// `timer_fired`: the timer of an [`Output::Sleep`] fired.
    TimerFired {
        /// The id the `sleep` carried.
        timer: TimerId,
    },
    /// `usage_limit_marked`: the host's answer to [`Output::MarkUsageLimit`].
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
enum Phase {
    /// No chain is open.
    Idle,
    /// A chain is open and the agent may run (the continued run is in
    /// flight, or a success was reported and the run has not ended yet).
    Running,
    /// A chain is open and the backoff timer `Machine::timer` is pending.
    Backoff,
    /// A chain is open and the host was asked to mark a usage limit; the start
    /// event's figures are fixed here (spec §5.1.4).
    /// (The delay is [`Machine::marked_delay_ms`], kept outside so the
    /// machine stays within 64 bytes.)
    AwaitingUsageLimit {
        max_attempts: u32,
        text_fingerprint: u32,
    },
}

/// The auto-retry state machine.
///
/// A plain value: no clock, no allocation, no I/O, no callbacks. Feed it one
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
pub struct Machine {
    settings: RetrySettings,
    host: HostOptions,
    /// The generation of the last timer issued; the pending one in `Backoff`.
    timer: u64,
    attempt: u32,
    /// In `AwaitingUsageLimit`, the delay fixed at the decision; else 0.
    marked_delay_ms: u64,
    phase: Phase,
}

impl Default for Machine {
    /// A machine with the default settings and host options.
    fn default() -> Self {
        Machine::new(
            RetrySettings::DEFAULT,
            HostOptions {
                context_window: 0,
                credential_store: false,
            },
        )
    }
}

impl Machine {
    /// A new, idle machine.
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
            host,
            timer: 0,
            attempt: 0,
            marked_delay_ms: 0,
            phase: Phase::Idle,
        }
    }

    /// The settings in force.
    pub const fn settings(&self) -> RetrySettings {
        self.settings
    }

    /// The host options.
    pub const fn host_options(&self) -> HostOptions {
        self.host
    }

    /// Changes the host options (for example the context window after a
    /// model switch); they apply from the next decision.
    pub fn set_host_options(&mut self, host: HostOptions) {
        self.host = host;
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
        matches!(self.phase, Phase::AwaitingUsageLimit { .. })
    }

    /// Consumes one input and returns what the host must do, in order.
    ///
    /// A refused input (spec §6a) returns `Err`, produces nothing and changes
    /// nothing. Late inputs that are harmless (a stale timer, a late
    /// usage-limit answer, `abort_retry` with no chain) return no outputs.
    #[must_use = "the host must carry out every output, in order"]
    pub fn handle<'a>(&mut self, input: Input<'a>) -> Result<Outputs<'a>, Refused> {
        let mut out = Outputs::new();
        match input {
            Input::MessageEnd { message } => {
                self.check_agent_may_run()?;
                self.report_success(&message, &mut out);
            }
            Input::AgentEnd { message, now_ms } => {
                self.check_agent_may_run()?;
                self.agent_end(&message, now_ms, &mut out);
            }
            Input::TimerFired { timer } => {
                if self.pending_timer() == Some(timer) {
                    self.phase = Phase::Running;
                    push(&mut out, Output::ContinueAgent);
                }
            }
            Input::UsageLimitMarked {
                switched,
                error_message,
            } => {
                if let Phase::AwaitingUsageLimit {
                    max_attempts,
                    text_fingerprint,
                } = self.phase
                {
                    if fingerprint(error_message) != text_fingerprint {
                        return Err(Refused::UsageLimitTextMismatch);
                    }
                    let delay_ms = if switched { 0 } else { self.marked_delay_ms };
                    self.marked_delay_ms = 0;
                    self.start(error_message, delay_ms, max_attempts, &mut out);
                }
            }
            Input::AbortRetry => self.cancel(&mut out),
            Input::Abort => {
                self.cancel(&mut out);
                push(&mut out, Output::AbortAgent);
            }
            Input::SetAutoRetry { enabled } => self.settings.enabled = enabled,
            Input::Settings(settings) => self.settings = settings,
        }
        Ok(out)
    }

    fn check_agent_may_run(&self) -> Result<(), Refused> {
        match self.phase {
            Phase::Backoff => Err(Refused::AgentRunDuringBackoff),
            Phase::AwaitingUsageLimit { .. } => Err(Refused::AwaitingUsageLimitAnswer),
            Phase::Idle | Phase::Running => Ok(()),
        }
    }

    /// Spec §5.2: the first good message of a chain reports its success.
    fn report_success<'a>(&mut self, message: &AssistantMessage<'a>, out: &mut Outputs<'a>) {
        if self.attempt > 0 && message.stop_reason.is_success() {
            self.end(true, None, out);
        }
    }

    /// Spec §5.1 and §9: the decision at the end of a run.
    fn agent_end<'a>(
        &mut self,
        message: &AssistantMessage<'a>,
        now_ms: Option<u64>,
        out: &mut Outputs<'a>,
    ) {
        self.report_success(message, out);
        let retry_text = match message.error_text() {
            Some(text)
                if self.settings.enabled && message.is_retryable(self.host.context_window) =>
            {
                text
            }
            _ => {
                // No retry: end an open chain with the message's error (§9).
                if self.attempt > 0 {
                    let text = message.error_text().unwrap_or(UNKNOWN_ERROR);
                    self.end(false, Some(text), out);
                }
                if self.is_retrying() {
                    push(out, Output::Settled);
                    self.phase = Phase::Idle;
                }
                push(out, Output::CheckCompaction);
                return;
            }
        };

        // The chain opens (or goes on) atomically with the decision.
        self.attempt = self.attempt.saturating_add(1);
        let max_attempts = self.settings.max_retries;
        if self.attempt > max_attempts {
            self.attempt = self.attempt.saturating_sub(1);
            self.end(false, Some(retry_text), out);
            push(out, Output::Settled);
            push(out, Output::CheckCompaction);
            self.phase = Phase::Idle;
            return;
        }
        let delay_ms = self.settings.delay_ms(self.attempt);
        if self.host.credential_store && message.is_usage_limit() {
            self.marked_delay_ms = delay_ms;
            self.phase = Phase::AwaitingUsageLimit {
                max_attempts,
                text_fingerprint: fingerprint(retry_text),
            };
            let retry_after_ms = classify::retry_hint_ms(retry_text, now_ms);
            push(out, Output::MarkUsageLimit { retry_after_ms });
        } else {
            self.start(retry_text, delay_ms, max_attempts, out);
        }
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

    /// Spec §5.3 and §6a: `abort_retry`.
    fn cancel(&mut self, out: &mut Outputs<'_>) {
        match self.phase {
            Phase::Idle => {}
            Phase::Backoff => {
                push(
                    out,
                    Output::CancelTimer {
                        timer: TimerId(self.timer),
                    },
                );
                self.end(false, Some(RETRY_CANCELLED), out);
                push(out, Output::Settled);
                push(out, Output::CheckCompaction);
            }
            Phase::AwaitingUsageLimit { .. } => {
                // The attempt being prepared never had its start event.
                self.attempt = self.attempt.saturating_sub(1);
                if self.attempt > 0 {
                    self.end(false, Some(RETRY_CANCELLED), out);
                }
                push(out, Output::Settled);
                push(out, Output::CheckCompaction);
            }
            Phase::Running => {
                if self.attempt > 0 {
                    self.end(false, Some(RETRY_CANCELLED), out);
                }
                push(out, Output::Settled);
            }
        }
        self.attempt = 0;
        self.marked_delay_ms = 0;
        self.phase = Phase::Idle;
    }

    /// Emits an `auto_retry_end` for the current attempt and resets it.
    fn end<'a>(&mut self, success: bool, final_error: Option<&'a str>, out: &mut Outputs<'a>) {
        push(
            out,
            Output::Emit(Event::End {
                success,
                attempt: self.attempt,
                final_error,
            }),
        );
        self.attempt = 0;
    }
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
