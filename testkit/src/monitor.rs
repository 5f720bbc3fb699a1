//! The invariant [`Monitor`]: it watches the inputs a host feeds and the
//! outputs it gets back, keeps its own account of the chain (from the
//! outputs and the spec, not from the machine's internals), and panics on
//! the first violation. The fuzz entry points and the property tests run
//! every input through it.

use std::collections::HashSet;

use autoretry::classify::{self, Classifier};
use autoretry::{
    AssistantMessage, ErrorText, Event, FallbackReason, FinalError, HostOptions, Input, Machine,
    Output, Outputs, Partial, Refused, RetryBudget, RetrySettings, RetryState, Snapshot,
    SnapshotError, StopReason, TimerId, EMPTY_RESPONSE, MAX_OUTPUTS, RETRY_CANCELLED,
    UNKNOWN_ERROR,
};

use crate::spec::{
    expected_backoff, expected_jitter, expected_total_exceeds, expected_total_printed,
};
use crate::SplitMix64;

/// What the spec says an input must do, as the [`Monitor`] reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Expect {
    /// Not a decision (any input but `agent_end` and an awaited answer).
    Nothing,
    /// An `agent_end` that starts no retry: no start, no question, no
    /// policy end (an open chain ends with the message's error, §9).
    NoRetry,
    /// A chain that ends at once for a policy reason (§5.1.2, §10.3 step
    /// 8, §11.4, §11.6): the end with this final error, the retries made.
    Fail(Failure),
    /// §5.1.4 / §10.3 step 7: ask the host, with this hint.
    Mark { hint: Option<u64> },
    /// §11.3: ask the host for another model, for this reason.
    Ask { reason: FallbackReason },
    /// §5.1.5–8: the start with these figures, then (unless it is a
    /// continuation, §11.2) the drop, then the sleep.
    Start {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
        continuation: bool,
        /// The immediate retry on a new model (§11.3): attempt 1 of the
        /// kept `maxAttempts`, which may be 0.
        switched_model: bool,
    },
}

/// The final error of a policy end.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Failure {
    /// §5.1.2: the message's own error.
    Exhausted,
    /// §11.4: the throttle sentence.
    Throttled,
    /// §10.3 step 8: the fail-fast sentence.
    WaitTooLong {
        requested_ms: u64,
        max_delay_ms: u64,
    },
    /// §11.6: the total-wait sentence, with the total printed saturated;
    /// `exceeds` is the exact test.
    TotalWait {
        exceeds: bool,
        total_ms: u64,
        max_total_delay_ms: u64,
    },
}

/// The figures of one decision (spec §11.7), fixed at its `agent_end` and
/// kept while the machine waits for an answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Decision {
    /// The attempt `n` being decided (2^32 after u32::MAX).
    attempt: u64,
    /// `maxRetries`, reported as `maxAttempts`.
    max_attempts: u32,
    /// The wait of §10.3 steps 1–6, or the one the total was checked with.
    delay_ms: u64,
    /// The `maxDelayMs` the wait exceeds, else 0.
    exceeded_ceiling_ms: u64,
    /// §11.5: over the ceiling, a usage limit whose wait is within
    /// `maxUsageWaitMs`.
    usage_reset: bool,
    /// `maxTotalDelayMs`.
    max_total_delay_ms: u64,
    /// `modelFallback`, and not a continuation (§11.3).
    may_ask: bool,
    /// The host was asked for a model in this decision already.
    asked: bool,
    /// `partial: "text"` (§11.2).
    continuation: bool,
}

/// Which answer the machine waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Question {
    /// `usage_limit_marked` (§5.1.4).
    UsageLimit,
    /// `model_switched`, asked for this reason (§11.3).
    Model(FallbackReason),
}

/// The answer the machine waits for, with the figures fixed at the
/// `agent_end` (spec §5.1.4, §10.3 step 7, §11.3).
#[derive(Clone, Debug)]
struct Awaiting {
    question: Question,
    /// The text the answer carries: the message's own.
    text: String,
    /// The text the decision's events show: the message's, or the stall's
    /// or the empty answer's (spec §12).
    shown: String,
    decision: Decision,
}

/// The watched stream as the spec runs it (§12.2), from the inputs alone.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Watched {
    /// No stream watched, no stall kept.
    None,
    /// A request in flight: its start `S`, last event `L`, and the due time
    /// `D` of its pending watch timer.
    Stream {
        start: u64,
        last: Option<u64>,
        due: Option<u64>,
    },
    /// A stall declared after this silence, kept until the next
    /// `agent_end`, `abort` or `stream_start` (rule 4).
    Stalled(u64),
}

/// The monitor's own account of a retry budget over one input (spec
/// §11.4), in thousandths of a token.
#[derive(Clone, Copy, Debug)]
struct Tokens {
    max_milli: u64,
    ratio_milli: u64,
    milli: u64,
}

impl Tokens {
    fn of(budget: &RetryBudget) -> Tokens {
        Tokens {
            max_milli: u64::from(budget.max_tokens()) * 1000,
            ratio_milli: u64::from(budget.ratio_milli()),
            milli: u64::from(budget.tokens_milli()),
        }
    }

    /// The charge: one token, never below 0; then whether the retry is
    /// throttled (at most `maxTokens / 2`).
    fn charge(&mut self) -> bool {
        self.milli = self.milli.saturating_sub(1000);
        self.milli * 2 <= self.max_milli
    }

    /// The refill: `tokenRatio`, never above `maxTokens`.
    fn refill(&mut self) {
        self.milli = (self.milli + self.ratio_milli).min(self.max_milli);
    }
}

/// The invariant checker of the machine (see the module docs).
///
/// Call [`Monitor::step`] for every input instead of [`Machine::handle`]
/// ([`Monitor::step_with_budget`] instead of
/// [`Machine::handle_with_budget`]). It predicts every retry decision from
/// the spec (sections 5, 10 and 11, in the order of §11.7): it classifies
/// the message with the crate's classifier, runs its own jitter generator
/// from the host's seed (§10.6), computes the wait of §10.3, and keeps its
/// own account of the chain's total wait (§11.6) and of a budget's tokens
/// (§11.4), so the start's figures, the usage-limit hint, the model-switch
/// question and its reason, and every policy end (max exceeded, throttled,
/// fail-fast, total wait: each reports the retries made, `n − 1`) are
/// checked exactly, whatever the options. It also checks that a turn with
/// `partial: "tools"` is never retried, that a continuation (`partial:
/// "text"`) keeps the trailing error, ends its backoff with
/// `resume_agent` and never asks for a model, that the host is asked for
/// a model at most once per decision, and what each answer gives (§11.2,
/// §11.3, §11.5).
///
/// ```
/// use autoretry::{AssistantMessage, HostOptions, Input, RetrySettings};
/// use autoretry_testkit::Monitor;
/// let mut mon = Monitor::new(RetrySettings::DEFAULT, HostOptions::default());
/// let out = mon.step(Input::AgentEnd { message: AssistantMessage::error("overloaded"), now_ms: None }).unwrap();
/// assert_eq!(out.len(), 3);
///
/// // Fail fast: the host asks for more than the ceiling.
/// let modern = RetrySettings::MODERN;
/// let mut mon = Monitor::new(modern, HostOptions::default().with_seed(7));
/// let message = AssistantMessage::error("503").with_retry_after_ms(400_000);
/// let out = mon.step(Input::AgentEnd { message, now_ms: None }).unwrap();
/// assert_eq!(out.len(), 3); // end, settled, check_compaction
/// assert_eq!(mon.fail_fasts(), 1);
///
/// // Section 11: the retries spent, the host is asked for another model.
/// let fallback = RetrySettings::DEFAULT.with_max_retries(0).with_model_fallback(true);
/// let mut mon = Monitor::new(fallback, HostOptions::default());
/// let failed = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
/// assert_eq!(mon.step(failed).unwrap().len(), 1); // switch_model
/// let answer = Input::ModelSwitched { switched: true, error_message: "503" };
/// assert_eq!(mon.step(answer).unwrap().len(), 3); // start (attempt 1 of 0), drop, sleep 0
/// assert_eq!(mon.model_questions(), 1);
/// ```
#[derive(Clone, Debug)]
pub struct Monitor {
    machine: Machine,
    /// The host options (no input changes them).
    host: HostOptions,
    /// The state after the last input.
    state: RetryState,
    /// Settings as the inputs set them.
    settings: RetrySettings,
    /// `maxRetries` in force when the current attempt was decided.
    decided_max: u32,
    /// The last attempt whose start was emitted in the open chain (0: none).
    started: u32,
    /// A waiting period is open (spec §5.2).
    open: bool,
    /// An `agent_end` that neither `continue_agent` nor `check_compaction`
    /// has resolved yet.
    unresolved: bool,
    /// The pending backoff timer.
    pending: Option<TimerId>,
    /// Every timer id issued so far.
    issued: HashSet<u64>,
    /// The greatest timer id issued, or a resumed machine's last id: once
    /// it is `u64::MAX`, no retry starts (`Machine`'s ids never wrap).
    last_timer: u64,
    /// A resumed machine's last timer id: every id up to it may have been
    /// issued before the monitor started; 0 for a new machine.
    resumed_timer: u64,
    /// The answer awaited (usage limit or model).
    awaiting: Option<Awaiting>,
    /// The jitter generator's state (spec §10.6), from the host's seed.
    jitter: SplitMix64,
    /// The total of the open chain's waits (spec §11.6).
    total_ms: u64,
    /// The pending timer ends a continuation's backoff (spec §11.2).
    resume: bool,
    /// The open chain was counted in `chains`.
    counted: bool,
    /// Number of chains that started (at least one start event).
    chains: u64,
    /// Number of fail-fast ends (spec §10.3 step 8).
    fail_fasts: u64,
    /// Number of `switch_model` questions (spec §11.3).
    model_questions: u64,
    /// Number of continuations started (spec §11.2).
    continuations: u64,
    /// Number of throttled ends (spec §11.4).
    throttled: u64,
    /// The watched stream (spec §12.2).
    stream: Watched,
    /// The pending watch timer.
    watch: Option<TimerId>,
    /// The text the events of the decision being made show (spec §12).
    shown: String,
    /// Number of watch timers issued.
    watches: u64,
    /// Number of watch timers that fired while pending.
    watches_fired: u64,
    /// Number of stalls declared (spec §12.2 rule 4).
    stalls: u64,
    /// Number of `agent_end`s decided as a stall.
    stalls_decided: u64,
    /// Number of empty answers decided as failures (spec §12.3).
    empty_failures: u64,
}

impl Monitor {
    /// A monitor around a fresh machine.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// let mon = Monitor::new(RetrySettings::DEFAULT, HostOptions::default());
    /// assert!(!mon.machine().is_retrying());
    /// ```
    pub fn new(settings: RetrySettings, host: HostOptions) -> Self {
        let machine = Machine::new(settings, host);
        Monitor {
            state: machine.state(),
            machine,
            host,
            settings,
            decided_max: settings.max_retries,
            started: 0,
            open: false,
            unresolved: false,
            pending: None,
            issued: HashSet::new(),
            last_timer: 0,
            resumed_timer: 0,
            awaiting: None,
            jitter: SplitMix64::new(host.seed),
            total_ms: 0,
            resume: false,
            counted: false,
            chains: 0,
            fail_fasts: 0,
            model_questions: 0,
            continuations: 0,
            throttled: 0,
            stream: Watched::None,
            watch: None,
            shown: String::new(),
            watches: 0,
            watches_fired: 0,
            stalls: 0,
            stalls_decided: 0,
            empty_failures: 0,
        }
    }

    /// A monitor around the machine `snapshot` restores, or the
    /// [`SnapshotError`] that refuses it. The monitor's account of the
    /// chain starts from the restored state: the phase, the attempt, the
    /// pending timer, the awaited usage-limit answer with its kept figures
    /// (`awaited_text` is the text the host kept with the snapshot; it is
    /// read only when an answer is awaited), and every timer id up to the
    /// snapshot's last counted as issued. The `maxRetries` of the decision
    /// behind a backoff or a running retry is not kept, so any is allowed.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, Machine};
    /// use autoretry_testkit::Monitor;
    /// let mut machine = Machine::default();
    /// let failed = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
    /// let _ = machine.handle(failed).unwrap();
    /// let mut mon = Monitor::resume(machine.snapshot(), "").unwrap();
    /// let timer = mon.machine().pending_timer().unwrap();
    /// assert_eq!(mon.step(Input::TimerFired { timer }).unwrap().len(), 1);
    /// ```
    pub fn resume(snapshot: Snapshot, awaited_text: &str) -> Result<Self, SnapshotError> {
        let machine = Machine::restore(snapshot)?;
        let fields = serde_json::to_value(snapshot).expect("a snapshot serializes");
        let field = |name: &str| fields[name].as_u64().expect("an integer field");
        let flags = field("marked_flags");
        // The attempt decided is 2^32 when its flag says so (spec §5.1.1).
        let attempt = match flags & 16 {
            0 => u64::from(machine.retry_attempt()),
            _ => 1 << 32,
        };
        let question = if machine.awaits_usage_limit_answer() {
            Some(Question::UsageLimit)
        } else if machine.awaits_model_switch_answer() {
            let reason =
                FallbackReason::ALL[usize::try_from(field("marked_reason")).expect("0 to 3")];
            Some(Question::Model(reason))
        } else {
            None
        };
        let shown = match field("marked_made") {
            1 => EMPTY_RESPONSE.to_owned(),
            2 => ErrorText::Stalled {
                silence_ms: field("marked_silence_ms"),
            }
            .to_string(),
            _ => awaited_text.to_owned(),
        };
        let flag = |bit: u64| field("stream_flags") & bit != 0;
        let stream = match field("stream") {
            1 => Watched::Stream {
                start: field("stream_start_ms"),
                last: flag(1).then(|| field("stream_last_ms")),
                due: flag(2).then(|| field("stream_due_ms")),
            },
            2 => Watched::Stalled(field("stall_silence_ms")),
            _ => Watched::None,
        };
        let awaiting = question.map(|question| Awaiting {
            question,
            shown: shown.clone(),
            text: awaited_text.to_owned(),
            decision: Decision {
                attempt,
                max_attempts: u32::try_from(field("marked_max_attempts")).expect("a u32 field"),
                delay_ms: field("marked_delay_ms"),
                exceeded_ceiling_ms: field("marked_ceiling_ms"),
                usage_reset: flags & 4 != 0,
                max_total_delay_ms: field("marked_total_limit_ms"),
                may_ask: flags & 1 != 0,
                asked: flags & 2 != 0,
                continuation: flags & 8 != 0,
            },
        });
        let pending = machine.pending_timer();
        let timer = field("timer");
        Ok(Monitor {
            state: machine.state(),
            host: machine.host_options(),
            settings: machine.settings(),
            decided_max: awaiting
                .as_ref()
                .map_or(u32::MAX, |a| a.decision.max_attempts),
            // While an answer is awaited, the attempt's own start is not out.
            started: match &awaiting {
                Some(a) => u32::try_from(a.decision.attempt - 1).expect("at most u32::MAX"),
                None => machine.retry_attempt(),
            },
            open: machine.is_retrying(),
            unresolved: pending.is_some() || awaiting.is_some(),
            pending,
            issued: HashSet::new(),
            last_timer: timer,
            resumed_timer: timer,
            awaiting,
            jitter: SplitMix64::new(machine.host_options().seed),
            total_ms: field("total_ms"),
            resume: fields["resume"].as_bool().expect("a boolean field"),
            // A chain with starts before the snapshot was counted there.
            counted: machine.retry_attempt() > 0,
            chains: 0,
            fail_fasts: 0,
            model_questions: 0,
            continuations: 0,
            throttled: 0,
            stream,
            watch: machine.pending_watch(),
            shown,
            watches: 0,
            watches_fired: 0,
            stalls: 0,
            stalls_decided: 0,
            empty_failures: 0,
            machine,
        })
    }

    /// The machine under watch.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// let mon = Monitor::new(RetrySettings::DEFAULT.with_max_retries(7), HostOptions::default());
    /// assert_eq!(mon.machine().settings().max_retries, 7);
    /// ```
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// How many chains had at least one start event so far.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).chains(), 0);
    /// ```
    pub fn chains(&self) -> u64 {
        self.chains
    }

    /// How many chains ended by failing fast (spec §10.3 step 8) so far.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::MODERN, HostOptions::default()).fail_fasts(), 0);
    /// ```
    pub fn fail_fasts(&self) -> u64 {
        self.fail_fasts
    }

    /// How many `switch_model` questions (spec §11.3) the machine asked so
    /// far.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).model_questions(), 0);
    /// ```
    pub fn model_questions(&self) -> u64 {
        self.model_questions
    }

    /// How many continuations (spec §11.2) started so far.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).continuations(), 0);
    /// ```
    pub fn continuations(&self) -> u64 {
        self.continuations
    }

    /// How many chains the shared budget throttled (spec §11.4) so far.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).throttled(), 0);
    /// ```
    pub fn throttled(&self) -> u64 {
        self.throttled
    }

    /// How many watch timers (spec §12.2) the machine issued so far.
    ///
    /// ```
    /// use autoretry::{HostOptions, Input, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// let mut mon = Monitor::new(RetrySettings::DEFAULT.with_first_event_timeout_ms(5), HostOptions::default());
    /// mon.step(Input::StreamStart { now_ms: 0 }).unwrap();
    /// assert_eq!(mon.watches(), 1);
    /// ```
    pub fn watches(&self) -> u64 {
        self.watches
    }

    /// How many pending watch timers fired so far.
    pub fn watches_fired(&self) -> u64 {
        self.watches_fired
    }

    /// How many stalls (spec §12.2 rule 4) the machine declared so far.
    pub fn stalls(&self) -> u64 {
        self.stalls
    }

    /// How many `agent_end`s were decided as a stall so far.
    pub fn stalls_decided(&self) -> u64 {
        self.stalls_decided
    }

    /// How many empty answers were decided as failures (spec §12.3) so far.
    pub fn empty_failures(&self) -> u64 {
        self.empty_failures
    }

    /// The text whose usage-limit or model-switch answer is awaited, if any
    /// (the answer carries it back).
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).awaited_text(), None);
    /// ```
    pub fn awaited_text(&self) -> Option<&str> {
        self.awaiting.as_ref().map(|a| a.text.as_str())
    }

    /// Feeds one input to the machine, checks every invariant on the
    /// outputs and the state after, and returns what the machine returned.
    ///
    /// Besides what [`Monitor::observe`] checks, it sees the machine's
    /// insides: a refused input left the whole machine as it was, the
    /// pending timer, the awaited usage-limit answer, the settings and the
    /// jitter generator's state are where the spec puts them.
    ///
    /// # Panics
    ///
    /// On the first violated invariant, with a message that names it.
    ///
    /// ```
    /// use autoretry::{HostOptions, Input, RetrySettings, TimerId};
    /// use autoretry_testkit::Monitor;
    /// let mut mon = Monitor::new(RetrySettings::DEFAULT, HostOptions::default());
    /// assert!(mon.step(Input::TimerFired { timer: TimerId(9) }).unwrap().is_empty());
    /// ```
    pub fn step<'a>(&mut self, input: Input<'a>) -> Result<Outputs<'a>, Refused> {
        self.step_inner(input, None)
    }

    /// [`Monitor::step`] with the retry budget shared by sessions (spec
    /// §11.4), fed through [`Machine::handle_with_budget`]: besides what
    /// `step` checks, the budget's tokens after the input are those the
    /// monitor's own account gives from the tokens before it (the charge of
    /// a retry decision, the refill of a run that ended well, nothing else),
    /// and a decision is throttled exactly when that account says so. The
    /// budget may be shared: other machines may change it between steps.
    ///
    /// # Panics
    ///
    /// On the first violated invariant, as [`Monitor::step`].
    ///
    /// ```
    /// use autoretry::{AssistantMessage, HostOptions, Input, RetryBudget, RetrySettings};
    /// use autoretry_testkit::Monitor;
    /// let mut budget = RetryBudget::new(4, 500).unwrap().with_tokens_milli(2500).unwrap();
    /// let mut mon = Monitor::new(RetrySettings::DEFAULT, HostOptions::default());
    /// let failed = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
    /// // 2.5 − 1 = 1.5, at most half of 4: throttled (end, settled, check_compaction).
    /// assert_eq!(mon.step_with_budget(failed, &mut budget).unwrap().len(), 3);
    /// assert_eq!((budget.tokens_milli(), mon.throttled()), (1500, 1));
    /// ```
    pub fn step_with_budget<'a>(
        &mut self,
        input: Input<'a>,
        budget: &mut RetryBudget,
    ) -> Result<Outputs<'a>, Refused> {
        self.step_inner(input, Some(budget))
    }

    fn step_inner<'a>(
        &mut self,
        input: Input<'a>,
        budget: Option<&mut RetryBudget>,
    ) -> Result<Outputs<'a>, Refused> {
        let before = self.machine.clone();
        let (result, budgets) = match budget {
            Some(budget) => {
                let kept = *budget;
                let result = self.machine.handle_with_budget(input, budget);
                (result, Some((kept, *budget)))
            }
            None => (self.machine.handle(input), None),
        };
        let state = self.machine.state();
        self.observe_inner(
            input,
            result.as_ref().map_err(|&refused| refused),
            state,
            budgets,
        );
        match result {
            Err(_) => {
                assert_eq!(self.machine, before, "a refused input changed the machine");
            }
            Ok(_) => {
                assert_eq!(self.machine.pending_timer(), self.pending);
                assert_eq!(
                    self.machine.pending_watch(),
                    self.watch,
                    "the pending watch"
                );
                assert_eq!(
                    self.machine.awaits_usage_limit_answer(),
                    self.awaiting_question() == Some(Question::UsageLimit)
                );
                assert_eq!(
                    self.machine.awaits_model_switch_answer(),
                    matches!(self.awaiting_question(), Some(Question::Model(_)))
                );
                assert_eq!(self.machine.settings(), self.settings);
                // Every state a machine reaches is one its snapshot restores
                // to, exactly.
                assert_eq!(
                    Machine::restore(self.machine.snapshot()).as_ref(),
                    Ok(&self.machine),
                    "the machine's own snapshot restores"
                );
                // The machine's generator is where this one is (spec §10.6).
                assert_eq!(
                    self.machine.host_options().seed,
                    self.jitter.state(),
                    "the jitter state"
                );
            }
        }
        result
    }

    /// Checks one entry of a host's log: the input the host fed, what the
    /// machine answered (its outputs, or the refusal: what
    /// [`Machine::handle`] returns, or the outputs as any other
    /// `AsRef<[Output]>`, a slice or an array; a refusal written out alone
    /// names the outputs' type, `Err::<&[Output], _>(refused)`) and the
    /// state after (`Machine::state`). Feed it every entry, in order, from the
    /// machine's creation with the settings and host options this monitor
    /// was made with; the monitor's own machine is not used. This checks a
    /// host built on the crate (a log recorded at its `Machine::handle`
    /// calls) as well as any other implementation of the spec whose log is
    /// turned into these types (a sidecar's, the WebAssembly module's).
    ///
    /// It checks that an input is refused exactly when spec §6a says and
    /// changes no state then; that the outputs of each input come in an
    /// order the spec allows; that every retry decision (start or not, the
    /// start's attempt, `maxAttempts` and `delayMs`, the usage-limit hint,
    /// the model-switch question, the policy and cancelled ends' final
    /// errors, a continuation's missing drop and its `resume_agent`) is the
    /// one spec sections 3, 5, 10 and 11 give, with this monitor's own
    /// classifier call, jitter draws and chain total; that timer ids are
    /// never reused, only the pending timer is cancelled or continues the
    /// agent, every `agent_end` is resolved once (`continue_agent`,
    /// `resume_agent` or `check_compaction`), `settled`
    /// ends every open chain exactly once; and that the state reports the
    /// chain the outputs describe.
    ///
    /// # Panics
    ///
    /// On the first violated guarantee, with a message that names it (a
    /// property test's runner reports it and shrinks the case).
    ///
    /// ```
    /// use autoretry::{AssistantMessage, HostOptions, Input, Machine, RetrySettings};
    /// use autoretry_testkit::Monitor;
    ///
    /// // A host's log: here, recorded around a real machine.
    /// let (settings, host) = (RetrySettings::DEFAULT, HostOptions::DEFAULT);
    /// let mut machine = Machine::new(settings, host);
    /// let mut monitor = Monitor::new(settings, host);
    /// let inputs = [
    ///     Input::AgentEnd { message: AssistantMessage::error("529 overloaded_error"), now_ms: None },
    ///     Input::AbortRetry,
    /// ];
    /// for input in inputs {
    ///     // What `handle` returns goes in as it is.
    ///     let result = machine.handle(input);
    ///     monitor.observe(input, result, machine.state());
    /// }
    /// assert_eq!(monitor.chains(), 1);
    /// ```
    ///
    /// A log that breaks a guarantee panics, naming it:
    ///
    /// ```should_panic
    /// use autoretry::{AssistantMessage, HostOptions, Input, Output, RetrySettings, RetryState};
    /// use autoretry_testkit::Monitor;
    ///
    /// let mut monitor = Monitor::new(RetrySettings::DEFAULT, HostOptions::DEFAULT);
    /// let failed = Input::AgentEnd { message: AssistantMessage::error("529 overloaded_error"), now_ms: None };
    /// // A host that retried at once, with no backoff: the spec expects a start, a drop and a sleep.
    /// let state = RetryState { auto_retry_enabled: true, is_retrying: true, retry_attempt: 1 };
    /// monitor.observe(failed, Ok(&[Output::ContinueAgent]), state);
    /// ```
    pub fn observe<'o, O: AsRef<[Output<'o>]>>(
        &mut self,
        input: Input<'_>,
        result: Result<O, Refused>,
        state: RetryState,
    ) {
        self.observe_inner(input, result, state, None);
    }

    /// [`Monitor::observe`] for a host that hands a retry budget with the
    /// input (spec §11.4): `before` and `after` are the budget as it was
    /// handed and as the step left it. Besides what `observe` checks, the
    /// tokens after are those of the monitor's own account (see
    /// [`Monitor::step_with_budget`]), and the figures never change.
    ///
    /// # Panics
    ///
    /// On the first violated guarantee, as [`Monitor::observe`].
    ///
    /// ```
    /// use autoretry::{AssistantMessage, HostOptions, Input, Machine, RetryBudget, RetrySettings, StopReason};
    /// use autoretry_testkit::Monitor;
    /// let mut machine = Machine::default();
    /// let mut monitor = Monitor::new(RetrySettings::DEFAULT, HostOptions::DEFAULT);
    /// let mut budget = RetryBudget::new(4, 500).unwrap().with_tokens_milli(3000).unwrap();
    /// let good = Input::AgentEnd { message: AssistantMessage::new(StopReason::Stop), now_ms: None };
    /// let before = budget;
    /// let result = machine.handle_with_budget(good, &mut budget);
    /// monitor.observe_with_budget(good, result, machine.state(), before, budget);
    /// assert_eq!(budget.tokens_milli(), 3500);
    /// ```
    pub fn observe_with_budget<'o, O: AsRef<[Output<'o>]>>(
        &mut self,
        input: Input<'_>,
        result: Result<O, Refused>,
        state: RetryState,
        before: RetryBudget,
        after: RetryBudget,
    ) {
        self.observe_inner(input, result, state, Some((before, after)));
    }

    fn observe_inner<'o, O: AsRef<[Output<'o>]>>(
        &mut self,
        input: Input<'_>,
        result: Result<O, Refused>,
        state: RetryState,
        budgets: Option<(RetryBudget, RetryBudget)>,
    ) {
        if let Some((before, after)) = budgets {
            assert_eq!(
                (before.max_tokens(), before.ratio_milli()),
                (after.max_tokens(), after.ratio_milli()),
                "the budget's figures changed"
            );
        }
        let out = match &result {
            Err(refused) => {
                assert_eq!(state, self.state, "a refused input changed the state");
                if let Some((before, after)) = budgets {
                    assert_eq!(before, after, "a refused input changed the budget");
                }
                let expected = match input {
                    Input::AgentEnd { message, .. } | Input::MessageEnd { message } => {
                        self.pending.is_some()
                            || self.awaiting.is_some()
                            || (message.empty && message.partial != Partial::None)
                    }
                    // §12.2 rule 1: no request during a backoff or a wait.
                    Input::StreamStart { .. } => self.pending.is_some() || self.awaiting.is_some(),
                    Input::UsageLimitMarked { error_message, .. } => {
                        self.awaiting.as_ref().is_some_and(|a| {
                            a.question == Question::UsageLimit && a.text != error_message
                        })
                    }
                    Input::ModelSwitched { error_message, .. } => {
                        self.awaiting.as_ref().is_some_and(|a| {
                            a.question != Question::UsageLimit && a.text != error_message
                        })
                    }
                    _ => false,
                };
                assert!(expected, "refused {input:?} ({refused})");
                return;
            }
            Ok(out) => out.as_ref(),
        };
        assert!(out.len() <= MAX_OUTPUTS);
        let mut tokens = budgets.map(|(before, _)| Tokens::of(&before));
        self.check(input, out, state, tokens.as_mut());
        if let (Some(tokens), Some((_, after))) = (tokens, budgets) {
            assert_eq!(
                u64::from(after.tokens_milli()),
                tokens.milli,
                "the budget's tokens after {input:?} (spec §11.4)"
            );
        }
        self.state = state;
    }

    fn awaiting_question(&self) -> Option<Question> {
        self.awaiting.as_ref().map(|a| a.question)
    }

    /// The spec's decision on an `agent_end` the machine accepted (spec
    /// §3, §5.1, §9, §10.2–10.3, §11.2–11.7), with this monitor's own
    /// jitter draw and its own account of the budget's tokens.
    ///
    /// `message` is the message as the rules read it (rewritten by §12);
    /// `host_text` is the text the host's answers carry.
    fn decide(
        &mut self,
        message: &AssistantMessage<'_>,
        host_text: &str,
        now_ms: Option<u64>,
        host: HostOptions,
        tokens: Option<&mut Tokens>,
    ) -> Expect {
        let s = self.settings;
        let classifier = s.classifier;
        let is_error = message.stop_reason == StopReason::Error;
        let text = message.error_message.filter(|t| !t.is_empty());
        let by_usage = message.usage.is_some_and(|u| {
            let mut tokens = u128::from(u.input) + u128::from(u.cache_read);
            // §10.5 and §13.2: the cache writes count too.
            if classifier != Classifier::Classic {
                tokens += u128::from(u.cache_write);
            }
            host.context_window != 0 && tokens > u128::from(host.context_window)
        });
        let overflow =
            by_usage || (is_error && text.is_some_and(|t| classifier.matches_overflow(t)));
        // §11.2: a turn that streamed a tool call is never replayed.
        let replayable = message.partial != Partial::Tools;
        let Some(text) = text.filter(|_| s.enabled && is_error && !overflow && replayable) else {
            return Expect::NoRetry;
        };
        // §10.2: the host's verdict replaces the pattern test.
        let retryable = message
            .should_retry
            .unwrap_or_else(|| classifier.matches_retryable(text));
        if !retryable {
            return Expect::NoRetry;
        }
        let continuation = message.partial == Partial::Text;
        // §11.7 step 1: the attempt n (2^32 after u32::MAX); a new chain's
        // total restarts.
        let attempt = u64::from(self.started) + 1;
        if attempt == 1 {
            self.total_ms = 0;
        }
        let mut d = Decision {
            attempt,
            max_attempts: s.max_retries,
            delay_ms: 0,
            exceeded_ceiling_ms: 0,
            usage_reset: false,
            max_total_delay_ms: s.max_total_delay_ms,
            may_ask: s.model_fallback && !continuation,
            asked: false,
            continuation,
        };
        // Step 2: the charge.
        let throttled = tokens.is_some_and(Tokens::charge);
        // Step 3: the max check. With every timer id issued no retry can
        // sleep either.
        if attempt > u64::from(s.max_retries) || self.last_timer == u64::MAX {
            return self.policy(FallbackReason::Exhausted, d, host_text);
        }
        // Step 4: the throttle.
        if throttled {
            return self.policy(FallbackReason::Throttled, d, host_text);
        }
        // Step 5: the wait of §10.3 steps 1–6.
        let n = u32::try_from(attempt).expect("at most maxRetries");
        let mut backoff = expected_backoff(&s, n);
        if s.jitter_pct.get() > 0 {
            let r = self.jitter.draw();
            let jittered = expected_jitter(backoff, s.jitter_pct.get(), r);
            // The range of §10.3 step 4, as rationals.
            assert!(
                backoff == 0
                    || (jittered <= backoff
                        && u128::from(jittered) * 100
                            > u128::from(backoff) * u128::from(100 - s.jitter_pct.get())),
                "the jittered backoff {jittered} is outside its range for {backoff}"
            );
            backoff = jittered;
        }
        // §13.2: under `curated` its hints are the text hint everywhere.
        let curated = classifier == Classifier::Curated;
        let text_hint = |wait: fn(&str, Option<u64>) -> Option<u64>| {
            if curated {
                classify::curated_hint_ms(text, now_ms)
            } else {
                wait(text, now_ms)
            }
        };
        let hint = if s.honor_hints {
            message
                .retry_after_ms
                .or_else(|| text_hint(classify::wait_hint_ms))
        } else {
            None
        };
        d.delay_ms = hint.map_or(backoff, |h| h.max(backoff));
        // §13.2: a long wait is a usage limit under `curated`.
        let usage_limit = classifier.matches_usage_limit(text)
            || curated
                && message
                    .retry_after_ms
                    .or_else(|| text_hint(classify::wait_hint_ms))
                    .is_some_and(|h| h >= classify::LONG_WAIT_MS);
        if s.max_delay_ms > 0 && d.delay_ms > s.max_delay_ms {
            d.exceeded_ceiling_ms = s.max_delay_ms;
            // §11.5: the provider said when; wait for it if it is near.
            d.usage_reset = usage_limit && d.delay_ms <= s.max_usage_wait_ms;
        }
        // Step 6: the usage-limit hand-off.
        if host.credential_store && usage_limit {
            let mark = if s.honor_hints {
                hint
            } else {
                message
                    .retry_after_ms
                    .or_else(|| text_hint(classify::retry_hint_ms))
            };
            self.awaiting = Some(Awaiting {
                question: Question::UsageLimit,
                text: host_text.to_owned(),
                shown: self.shown.clone(),
                decision: d,
            });
            return Expect::Mark { hint: mark };
        }
        self.ceiling(d, host_text)
    }

    /// §11.7 step 7: over the ceiling, a policy reason; else the total.
    fn ceiling(&mut self, d: Decision, text: &str) -> Expect {
        if d.exceeded_ceiling_ms > 0 {
            self.policy(FallbackReason::WaitTooLong, d, text)
        } else {
            self.total_then_start(d, d.delay_ms, text)
        }
    }

    /// §11.7 steps 8–9: the total of §11.6 with a wait of `delay_ms`, then
    /// the start.
    fn total_then_start(&mut self, mut d: Decision, delay_ms: u64, text: &str) -> Expect {
        if expected_total_exceeds(self.total_ms, delay_ms, d.max_total_delay_ms) {
            d.delay_ms = delay_ms;
            return self.policy(FallbackReason::TotalWait, d, text);
        }
        self.total_ms = expected_total_printed(self.total_ms, delay_ms);
        Expect::Start {
            attempt: u32::try_from(d.attempt).expect("a started attempt is within maxRetries"),
            max_attempts: d.max_attempts,
            delay_ms,
            continuation: d.continuation,
            switched_model: false,
        }
    }

    /// §11.3: a chain about to end for a policy reason asks for another
    /// model once per decision (never for a continuation), else ends.
    fn policy(&mut self, reason: FallbackReason, mut d: Decision, text: &str) -> Expect {
        if d.may_ask && !d.asked {
            d.asked = true;
            self.awaiting = Some(Awaiting {
                question: Question::Model(reason),
                text: text.to_owned(),
                shown: self.shown.clone(),
                decision: d,
            });
            return Expect::Ask { reason };
        }
        self.without_fallback(reason, d, text)
    }

    /// §11.3 `switched: false` (or no fallback): the end of the reason,
    /// except that over the ceiling the usage-reset wait of §11.5 comes
    /// first.
    fn without_fallback(&mut self, reason: FallbackReason, d: Decision, text: &str) -> Expect {
        Expect::Fail(match reason {
            FallbackReason::Exhausted => Failure::Exhausted,
            FallbackReason::Throttled => Failure::Throttled,
            FallbackReason::WaitTooLong if d.usage_reset => {
                return self.total_then_start(d, d.delay_ms, text);
            }
            FallbackReason::WaitTooLong => Failure::WaitTooLong {
                requested_ms: d.delay_ms,
                max_delay_ms: d.exceeded_ceiling_ms,
            },
            FallbackReason::TotalWait => Failure::TotalWait {
                exceeds: expected_total_exceeds(self.total_ms, d.delay_ms, d.max_total_delay_ms),
                total_ms: expected_total_printed(self.total_ms, d.delay_ms),
                max_total_delay_ms: d.max_total_delay_ms,
            },
        })
    }

    /// The decision going on at the host's answer (spec §10.3 steps 7–8,
    /// §11.3), or nothing when no answer of this kind is awaited.
    fn answer(&mut self, question: Question, switched: bool, text: &str) -> Expect {
        let Some(a) = self.awaiting.take_if(|a| {
            matches!(
                (a.question, question),
                (Question::UsageLimit, Question::UsageLimit)
                    | (Question::Model(_), Question::Model(_))
            )
        }) else {
            return Expect::Nothing;
        };
        let d = a.decision;
        self.shown = a.shown;
        match a.question {
            // A switched credential skips the ceiling: the total, with 0.
            Question::UsageLimit if switched => self.total_then_start(d, 0, text),
            Question::UsageLimit => self.ceiling(d, text),
            // A new model: attempt 1, a fresh total, no checks. With every
            // timer id issued, no retry can sleep: as if none were found.
            Question::Model(_) if switched && self.last_timer < u64::MAX => {
                self.total_ms = 0;
                Expect::Start {
                    attempt: 1,
                    max_attempts: d.max_attempts,
                    delay_ms: 0,
                    continuation: false,
                    switched_model: true,
                }
            }
            Question::Model(reason) => self.without_fallback(reason, d, text),
        }
    }

    /// Spec §12.2: checks the stream's part of an input's outputs (a
    /// watch cancelled first at the stream's end, a watch armed, a stall's
    /// `abort_agent`) against this monitor's own account of the watched
    /// stream, and returns the rest of the outputs, which the chain's
    /// checks read, with the silence of the stall an `agent_end` ends.
    fn check_stream<'s, 'o>(
        &mut self,
        input: Input<'_>,
        out: &'s [Output<'o>],
    ) -> (&'s [Output<'o>], Option<u64>) {
        let s = self.settings;
        let mut rest = out;
        // Rule 5 (and rule 1): the stream ends, its watch cancelled first.
        if let Input::MessageEnd { .. }
        | Input::AgentEnd { .. }
        | Input::Abort
        | Input::StreamStart { .. } = input
        {
            if let Some(timer) = self.watch.take() {
                assert_eq!(
                    out.first(),
                    Some(&Output::CancelTimer { timer }),
                    "the stream's end cancels its watch first (spec §12.2 rule 5): {out:?} for {input:?}"
                );
                rest = &out[1..];
            }
            if matches!(self.stream, Watched::Stream { .. }) {
                self.stream = Watched::None;
            }
        }
        let mut stall = None;
        let expected: Option<Output<'static>> = match input {
            Input::AgentEnd { .. } => {
                if let Watched::Stalled(silence) = self.stream {
                    stall = Some(silence);
                }
                self.stream = Watched::None;
                return (rest, stall);
            }
            Input::Abort => {
                self.stream = Watched::None;
                return (rest, None);
            }
            Input::MessageEnd { .. } => return (rest, None),
            Input::StreamStart { now_ms } => {
                let due = (s.first_event_timeout_ms > 0 && self.last_timer < u64::MAX)
                    .then(|| now_ms.saturating_add(s.first_event_timeout_ms));
                self.stream = Watched::Stream {
                    start: now_ms,
                    last: None,
                    due,
                };
                due.map(|_| Output::Watch {
                    ms: s.first_event_timeout_ms,
                    timer: TimerId(0),
                })
            }
            Input::StreamEvent { now_ms } => match &mut self.stream {
                Watched::Stream { last, due, .. } => {
                    *last = Some(now_ms);
                    if due.is_none() && s.idle_timeout_ms > 0 && self.last_timer < u64::MAX {
                        *due = Some(now_ms.saturating_add(s.idle_timeout_ms));
                        Some(Output::Watch {
                            ms: s.idle_timeout_ms,
                            timer: TimerId(0),
                        })
                    } else {
                        None
                    }
                }
                Watched::None | Watched::Stalled(_) => None,
            },
            Input::TimerFired { timer } if self.watch == Some(timer) => {
                self.watch = None;
                self.watches_fired += 1;
                let Watched::Stream { start, last, due } = self.stream else {
                    panic!("a watch timer pending with no stream watched");
                };
                let due = due.expect("a pending watch has a due time");
                let (limit, reference) = match last {
                    None => (s.first_event_timeout_ms, start),
                    Some(last) => (s.idle_timeout_ms, last),
                };
                let silence = due.saturating_sub(reference);
                if limit == 0 {
                    self.stream = Watched::Stream {
                        start,
                        last,
                        due: None,
                    };
                    None
                } else if silence >= limit {
                    self.stream = Watched::Stalled(silence);
                    self.stalls += 1;
                    assert_eq!(
                        out,
                        [Output::AbortAgent],
                        "a stall aborts the stream (spec §12.2 rule 4)"
                    );
                    return (&[], None);
                } else {
                    let ms = limit - silence;
                    let next = (self.last_timer < u64::MAX).then(|| due.saturating_add(ms));
                    self.stream = Watched::Stream {
                        start,
                        last,
                        due: next,
                    };
                    next.map(|_| Output::Watch {
                        ms,
                        timer: TimerId(0),
                    })
                }
            }
            _ => return (rest, None),
        };
        match expected {
            None => assert!(
                rest.iter().all(|o| !matches!(o, Output::Watch { .. })),
                "a watch the spec does not arm: {out:?} for {input:?}"
            ),
            Some(Output::Watch { ms: want, .. }) => {
                let Some(&Output::Watch { ms, timer }) = rest.first() else {
                    panic!("no watch where the spec arms one (spec §12.2): {out:?} for {input:?}");
                };
                assert_eq!(ms, want, "the watch's ms (spec §12.2): {input:?}");
                assert!(
                    timer.0 > self.last_timer && self.issued.insert(timer.0),
                    "a watch timer id was reused"
                );
                assert!(
                    self.pending.is_none() && self.awaiting.is_none(),
                    "a watch during a backoff or a hand-off wait (spec §12.2)"
                );
                assert!(self.watch.is_none(), "a second watch pending (spec §12.2)");
                self.last_timer = timer.0;
                self.watch = Some(timer);
                self.watches += 1;
                rest = &rest[1..];
            }
            Some(_) => unreachable!(),
        }
        (rest, None)
    }

    fn check(
        &mut self,
        input: Input<'_>,
        out: &[Output<'_>],
        state: RetryState,
        mut tokens: Option<&mut Tokens>,
    ) {
        let host = self.host;
        // Inputs that must be refused were not.
        match input {
            Input::AgentEnd { message, .. } | Input::MessageEnd { message } => {
                assert!(
                    self.pending.is_none() && self.awaiting.is_none(),
                    "the agent ran during a backoff or while an answer was awaited: {input:?}"
                );
                assert!(
                    !message.empty || message.partial == Partial::None,
                    "an empty answer with partial output was accepted (spec §12.3)"
                );
            }
            Input::StreamStart { .. } => assert!(
                self.pending.is_none() && self.awaiting.is_none(),
                "a request started during a backoff or while an answer was awaited (spec §12.2)"
            ),
            Input::UsageLimitMarked { error_message, .. } => {
                if let Some(a) = self
                    .awaiting
                    .as_ref()
                    .filter(|a| a.question == Question::UsageLimit)
                {
                    assert_eq!(
                        a.text, error_message,
                        "a usage-limit answer with a wrong text"
                    );
                }
            }
            Input::ModelSwitched { error_message, .. } => {
                if let Some(a) = self
                    .awaiting
                    .as_ref()
                    .filter(|a| a.question != Question::UsageLimit)
                {
                    assert_eq!(
                        a.text, error_message,
                        "a model-switch answer with a wrong text"
                    );
                }
            }
            _ => {}
        }
        let (out, stall) = self.check_stream(input, out);
        let shape = shape(out);
        let allowed: &[&str] = match input {
            Input::MessageEnd { .. } => &["", "E+"],
            Input::AgentEnd { .. } => &[
                "C", "E+C", "SDZ", "SZ", "M", "W", "TC", "E+TC", "E-TC", "E+E-TC",
            ],
            Input::TimerFired { .. } => &["", "K", "R"],
            Input::UsageLimitMarked { .. } => &["", "SDZ", "SZ", "W", "E-TC"],
            Input::ModelSwitched { .. } => &["", "SDZ", "E-TC"],
            Input::AbortRetry => &["", "XE-TC", "E-TC", "TC", "E-T", "T"],
            Input::Abort => &["A", "XE-TCA", "E-TCA", "TCA", "E-TA", "TA"],
            Input::SetAutoRetry { .. }
            | Input::Settings(_)
            | Input::StreamStart { .. }
            | Input::StreamEvent { .. } => &[""],
        };
        assert!(
            allowed.contains(&shape.as_str()),
            "outputs {out:?} (shape {shape}) for {input:?}"
        );

        // The text a decision is about: the message's, or the awaited one.
        let empty_failure = |message: &AssistantMessage<'_>, settings: &RetrySettings| {
            settings.retry_empty && message.empty && message.stop_reason == StopReason::Stop
        };
        let expect = match input {
            Input::AgentEnd { message, now_ms } => {
                let host_text = message.error_message.unwrap_or("");
                // §13.3: a stall (§12.2 rule 4), else an empty answer
                // (§12.3), makes the message's error.
                let made = match stall {
                    Some(silence_ms) if !message.stop_reason.is_success() => {
                        self.stalls_decided += 1;
                        Some(ErrorText::Stalled { silence_ms }.to_string())
                    }
                    _ if empty_failure(&message, &self.settings) => {
                        self.empty_failures += 1;
                        Some(EMPTY_RESPONSE.to_owned())
                    }
                    _ => None,
                };
                let expect = match made {
                    Some(text) => {
                        let rewritten = AssistantMessage {
                            stop_reason: StopReason::Error,
                            error_message: Some(&text),
                            should_retry: Some(true),
                            ..message
                        };
                        self.shown = text.clone();
                        self.decide(&rewritten, host_text, now_ms, host, tokens.as_deref_mut())
                    }
                    None => {
                        self.shown = host_text.to_owned();
                        self.decide(&message, host_text, now_ms, host, tokens.as_deref_mut())
                    }
                };
                // §11.4: a run that ended well refills the budget (an
                // empty answer under retryEmpty did not, §12.3).
                let good =
                    message.stop_reason.is_success() && !empty_failure(&message, &self.settings);
                if let (true, Some(tokens)) = (good, tokens) {
                    tokens.refill();
                }
                expect
            }
            Input::UsageLimitMarked {
                switched,
                error_message,
            } => {
                self.shown = error_message.to_owned();
                self.answer(Question::UsageLimit, switched, error_message)
            }
            Input::ModelSwitched {
                switched,
                error_message,
            } => {
                self.shown = error_message.to_owned();
                self.answer(
                    Question::Model(FallbackReason::Exhausted),
                    switched,
                    error_message,
                )
            }
            Input::MessageEnd { message } => {
                // §5.2 and §12.3: the first good message of a chain
                // reports its success; an empty stop under retryEmpty is
                // none.
                let good =
                    message.stop_reason.is_success() && !empty_failure(&message, &self.settings);
                let want = if self.started > 0 && good { "E+" } else { "" };
                assert_eq!(
                    shape, want,
                    "the success of a message_end (spec §5.2, §12.3)"
                );
                Expect::Nothing
            }
            _ => Expect::Nothing,
        };
        let decided_text = self.shown.clone();
        let expected_shape = match expect {
            Expect::Fail(_) => Some("E-TC"),
            Expect::Mark { .. } => Some("M"),
            Expect::Ask { .. } => Some("W"),
            Expect::Start {
                continuation: true, ..
            } => Some("SZ"),
            Expect::Start { .. } => Some("SDZ"),
            Expect::NoRetry => None,
            Expect::Nothing => match input {
                Input::UsageLimitMarked { .. } | Input::ModelSwitched { .. } => Some(""),
                _ => None,
            },
        };
        if let Some(want) = expected_shape {
            assert_eq!(
                shape, want,
                "the spec expects {expect:?}: {out:?} for {input:?}"
            );
        }
        if expect == Expect::NoRetry {
            assert!(
                !shape.contains('S') && !shape.contains('M') && !shape.contains('W'),
                "a retry where the spec starts none: {input:?} -> {out:?}"
            );
        }
        if let Expect::Start {
            switched_model: true,
            max_attempts,
            ..
        } = expect
        {
            // A new model's fresh count (§11.3): its start is attempt 1.
            self.started = 0;
            self.decided_max = max_attempts.max(1);
        }

        let was_open = self.open;
        let mut settled = 0;
        match input {
            Input::SetAutoRetry { enabled } => self.settings.enabled = enabled,
            Input::Settings(settings) => self.settings = settings,
            Input::AgentEnd { .. } => {
                assert!(
                    !self.unresolved,
                    "agent_end before the last one was resolved"
                );
                self.unresolved = true;
                if shape.contains('S')
                    || shape.contains('M')
                    || shape.contains('W')
                    || shape.contains("E-")
                {
                    self.decided_max = self.settings.max_retries;
                }
                if shape.contains('M') || shape.contains('W') {
                    self.open = true;
                }
            }
            Input::TimerFired { timer } => {
                if self.pending == Some(timer) {
                    let want = if self.resume { "R" } else { "K" };
                    assert_eq!(
                        shape, want,
                        "the pending timer fired without continue_agent (resume: a continuation, spec §11.2)"
                    );
                    self.pending = None;
                    self.resume = false;
                } else {
                    assert_eq!(shape, "", "a stale or unknown timer produced outputs");
                }
            }
            Input::AbortRetry | Input::Abort => {
                if !self.open {
                    assert!(
                        shape.is_empty() || shape == "A",
                        "a cancel with no chain: {out:?}"
                    );
                }
                self.awaiting = None;
                self.resume = false;
            }
            Input::MessageEnd { .. }
            | Input::UsageLimitMarked { .. }
            | Input::ModelSwitched { .. }
            | Input::StreamStart { .. }
            | Input::StreamEvent { .. } => {}
        }

        for output in out {
            match *output {
                Output::Emit(Event::Start {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message,
                }) => {
                    assert_eq!(
                        Some(attempt),
                        self.started.checked_add(1),
                        "start numbers run 1, 2, 3, ... (from 1 again on a new model)"
                    );
                    if !self.counted {
                        self.chains += 1;
                        self.counted = true;
                    }
                    self.started = attempt;
                    let Expect::Start {
                        attempt: a,
                        max_attempts: max,
                        delay_ms: delay,
                        continuation,
                        switched_model,
                    } = expect
                    else {
                        panic!("a start for {input:?} where the spec expects {expect:?}");
                    };
                    assert_eq!(
                        (attempt, max_attempts, delay_ms),
                        (a, max, delay),
                        "the start's attempt, maxAttempts and delayMs (spec §10.3, §11)"
                    );
                    assert_eq!(error_message, decided_text.as_str());
                    assert!(
                        attempt <= max_attempts || switched_model,
                        "attempt beyond maxRetries"
                    );
                    assert!(!error_message.is_empty());
                    self.continuations += u64::from(continuation);
                    self.resume = continuation;
                    self.open = true;
                }
                Output::Emit(Event::End {
                    success,
                    attempt,
                    final_error,
                }) => {
                    if self.started == 0 {
                        assert!(
                            !success && attempt == 0 && matches!(expect, Expect::Fail(_)),
                            "an end without a start: {out:?} for {input:?}"
                        );
                    } else {
                        // A policy end too reports the retries made: n − 1
                        // for the attempt n it was deciding.
                        assert_eq!(attempt, self.started, "the end reports the last start");
                    }
                    assert_eq!(success, final_error.is_none());
                    if let (Input::AbortRetry | Input::Abort, false) = (input, success) {
                        assert_eq!(final_error, Some(FinalError::Text(RETRY_CANCELLED)));
                    }
                    let error = ErrorText::Text(&decided_text);
                    match expect {
                        Expect::Fail(failure) => {
                            let want = match failure {
                                Failure::Exhausted => FinalError::Text(&decided_text),
                                Failure::Throttled => {
                                    self.throttled += 1;
                                    FinalError::Throttled { error }
                                }
                                Failure::WaitTooLong {
                                    requested_ms,
                                    max_delay_ms,
                                } => {
                                    assert!(requested_ms > max_delay_ms && max_delay_ms > 0);
                                    self.fail_fasts += 1;
                                    FinalError::WaitTooLong {
                                        requested_ms,
                                        max_delay_ms,
                                        error,
                                    }
                                }
                                Failure::TotalWait {
                                    exceeds,
                                    total_ms,
                                    max_total_delay_ms,
                                } => {
                                    assert!(exceeds, "a total-wait end within the limit");
                                    FinalError::TotalWait {
                                        total_ms,
                                        max_total_delay_ms,
                                        error,
                                    }
                                }
                            };
                            // Compared as written: the machine carries a
                            // stall's text as its number (§12.2).
                            assert_eq!(
                                final_error.map(|e| e.to_string()),
                                Some(want.to_string()),
                                "the policy end (spec §5.1.2, §10.3, §11.4, §11.6)"
                            );
                        }
                        _ if !success && matches!(input, Input::AgentEnd { .. }) => {
                            let expected = match decided_text.as_str() {
                                "" => UNKNOWN_ERROR,
                                t => t,
                            };
                            assert_eq!(
                                final_error.map(|e| e.to_string()),
                                Some(expected.to_owned()),
                                "the final error of a run that starts no retry (spec §9, §12)"
                            );
                        }
                        _ => {}
                    }
                    self.started = 0;
                    self.counted = false;
                }
                Output::Sleep { ms, timer } => {
                    assert!(
                        self.issued.insert(timer.0) && timer.0 > self.resumed_timer,
                        "a timer id was reused"
                    );
                    assert_ne!(
                        timer.0, 0,
                        "a sleep with id 0, which hosts read as no timer"
                    );
                    self.last_timer = self.last_timer.max(timer.0);
                    assert!(self.pending.is_none());
                    assert!(
                        self.watch.is_none(),
                        "a backoff with a watch timer pending (spec §12.2)"
                    );
                    assert_eq!(
                        Some(ms),
                        out.iter().find_map(|o| match o {
                            Output::Emit(Event::Start { delay_ms, .. }) => Some(*delay_ms),
                            _ => None,
                        })
                    );
                    self.pending = Some(timer);
                }
                Output::CancelTimer { timer } => {
                    assert_eq!(Some(timer), self.pending, "cancelled a timer not pending");
                    self.pending = None;
                }
                Output::ContinueAgent | Output::ResumeAgent | Output::CheckCompaction => {
                    assert!(
                        self.unresolved,
                        "{} resolves no agent_end",
                        output.type_name()
                    );
                    self.unresolved = false;
                }
                Output::Settled => {
                    assert!(
                        was_open || self.open || shape.contains("E-"),
                        "settled with no waiting period"
                    );
                    settled += 1;
                    self.open = false;
                }
                Output::MarkUsageLimit { retry_after_ms } => {
                    assert_eq!(
                        expect,
                        Expect::Mark {
                            hint: retry_after_ms
                        },
                        "the usage-limit hint (spec §10.3 step 7)"
                    );
                }
                Output::SwitchModel { reason } => {
                    assert_eq!(
                        expect,
                        Expect::Ask { reason },
                        "the model-switch question (spec §11.3)"
                    );
                    self.model_questions += 1;
                }
                Output::Watch { .. } => {
                    panic!("a watch outside the stream's rules (spec §12.2): {out:?} for {input:?}")
                }
                Output::DropTrailingError | Output::AbortAgent => {}
            }
        }
        if let Input::AgentEnd { .. } = input {
            assert!(
                !self.unresolved || self.pending.is_some() || self.awaiting.is_some(),
                "an agent_end neither continued nor checked"
            );
        }
        assert!(settled <= 1, "settled twice");

        // While an answer is awaited the state reports the attempt being
        // decided (2^32 shows as u32::MAX); else the last start.
        let attempt = match &self.awaiting {
            Some(a) => u32::try_from(a.decision.attempt).unwrap_or(u32::MAX),
            None => self.started,
        };
        assert_eq!(state.retry_attempt, attempt, "retryAttempt");
        assert!(
            self.awaiting.is_some()
                || state.retry_attempt <= self.decided_max
                || state.retry_attempt == 0,
            "retryAttempt {} beyond maxRetries {}",
            state.retry_attempt,
            self.decided_max
        );
        assert_eq!(state.is_retrying, self.open, "isRetrying");
        assert_eq!(state.auto_retry_enabled, self.settings.enabled);
        if settled == 1 {
            assert_eq!((state.retry_attempt, state.is_retrying), (0, false));
        }
        if was_open && !self.open {
            assert_eq!(settled, 1, "a chain closed without settled");
        }
    }
}

/// The kinds of the outputs as a short string: `S` start, `E+`/`E-` end,
/// `D` drop, `Z` sleep, `V` watch, `X` cancel timer, `K` continue, `R` resume, `M`
/// mark, `W` switch model, `C` check compaction, `A` abort agent, `T`
/// settled.
fn shape(out: &[Output<'_>]) -> String {
    let mut s = String::new();
    for o in out {
        s.push_str(match o {
            Output::Emit(Event::Start { .. }) => "S",
            Output::Emit(Event::End { success: true, .. }) => "E+",
            Output::Emit(Event::End { success: false, .. }) => "E-",
            Output::DropTrailingError => "D",
            Output::Sleep { .. } => "Z",
            Output::Watch { .. } => "V",
            Output::CancelTimer { .. } => "X",
            Output::ContinueAgent => "K",
            Output::ResumeAgent => "R",
            Output::SwitchModel { .. } => "W",
            Output::MarkUsageLimit { .. } => "M",
            Output::CheckCompaction => "C",
            Output::AbortAgent => "A",
            Output::Settled => "T",
        });
    }
    s
}
