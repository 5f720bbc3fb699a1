//! Entry points for fuzzers (`fuzz/`) and property tests (feature `std`).
//!
//! Each `fuzz_*` function takes arbitrary bytes, drives one part of
//! `autoretry` with them and **panics** when one of its guarantees is violated:
//! that is what a fuzzer looks for. On any input that respects the contract
//! they return normally. The fuzz targets in `fuzz/fuzz_targets/` are one
//! line each, calling these functions, so a crash found by a fuzzer can be
//! replayed by an ordinary test (`tests/machine/fuzz_regressions.rs`).
//!
//! [`Monitor`] is the invariant checker of the machine: it watches the
//! inputs a host feeds and the outputs it gets back, keeps its own account
//! of the chain (from the outputs and the spec, not from the machine's
//! internals), and panics on the first violation. The property tests use it
//! too.
//!
//! ```
//! use autoretry_testkit::fuzzing::{fuzz_classify, fuzz_machine};
//! fuzz_classify(b"529 overloaded_error retry-after: 3");
//! fuzz_machine(&[0, 3, 0, 0, 1, 2, 3, 4, 5, 6, 7]);
//! ```

use std::collections::HashSet;

use autoretry::classify::{self, Classifier};
use autoretry::{
    AssistantMessage, Event, FallbackReason, FinalError, HostOptions, Input, JitterPct, Machine,
    Output, Outputs, Partial, Profile, Refused, RetryBudget, RetrySettings, RetryState, Snapshot,
    SnapshotError, StopReason, TimerId, Usage, MAX_OUTPUTS, RETRY_CANCELLED, UNKNOWN_ERROR,
};

/// Texts the machine fuzzer draws from, besides texts taken from the fuzz
/// input itself: every class of spec §3 and some near misses.
pub const TEXTS: &[&str] = &[
    "",
    "529 overloaded_error",
    "503 Service Unavailable",
    "fetch failed",
    "Connection error.",
    "exceeds 5000 tokens",
    "usage_limit_reached retry-after-ms=11180000",
    "You have hit your usage limit. x-ratelimit-reset: 60",
    "usage limit retry-after: 1970-01-01T00:01:00Z",
    "Rate limit reached. retry-after: 1e30",
    "prompt is too long: 208254 tokens > 200000 maximum",
    "400 status code (no body)",
    "429 status code (no body)",
    "invalid_request_error: bad tool schema",
    "Usage Limit x-ratelimit-reset-ms: 99999999999999999999999",
    "usage\u{2028}limit 503",
    "rate lımit",
];

/// Texts the machine fuzzer draws from for messages that carry the host's
/// fields (spec §10.2): the hint forms of §10.3–10.4, waits around the
/// modern ceiling, and texts the extended classifier reads differently.
pub const OPTION_TEXTS: &[&str] = &[
    "usage_limit_reached retry-after-ms=11180000",
    "usage_limit_reached retry-after-ms=120000",
    "503 Service Unavailable retry-after-ms: 0",
    "429 Too Many Requests. Please retry in 41.820516331s.",
    "rate limit exceeded: reset after 1h30m10s",
    "You have hit your usage limit. Try again in ~158 min.",
    "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"retryDelay\": \"38s\"}]}}",
    "This request would exceed your account's rate limit. Please try again later.",
    "quota exceeded",
    "socket hang up",
    "413 Request Entity Too Large",
    "request exceeds 5000 tokens per minute",
    "overloaded retry-after: 400",
];

/// Whether one of the **unanchored** overflow patterns of spec 3.3 (all but
/// `^4(00|13)...`) matches `text`. Unlike [`Classifier::matches_overflow`],
/// this predicate is monotone both ways: text added before or after a match
/// never removes it.
///
/// ```
/// use autoretry::classify::Classifier;
/// use autoretry_testkit::fuzzing::matches_overflow_unanchored;
/// assert!(Classifier::Classic.matches_overflow("413 (no body)") && !matches_overflow_unanchored("413 (no body)"));
/// assert!(matches_overflow_unanchored("error: too many tokens"));
/// ```
pub fn matches_overflow_unanchored(text: &str) -> bool {
    // A leading character that no pattern contains: the anchored rule
    // (`^4(00|13)...`) cannot match, and no unanchored match can use it.
    Classifier::Classic.matches_overflow(&format!("\u{e9}{text}"))
}

/// The delay of spec §5.1.3, computed independently: `base × 2^(attempt − 1)`
/// saturating at `u64::MAX`.
///
/// ```
/// use autoretry_testkit::fuzzing::expected_delay;
/// assert_eq!(expected_delay(2000, 3), 8000);
/// assert_eq!(expected_delay(3, 64), u64::MAX);
/// assert_eq!(expected_delay(0, 200), 0);
/// ```
pub fn expected_delay(base: u64, attempt: u32) -> u64 {
    let shift = attempt.saturating_sub(1);
    if base == 0 {
        return 0;
    }
    if shift >= 64 {
        return u64::MAX;
    }
    let wide = u128::from(base) << shift;
    u64::try_from(wide).unwrap_or(u64::MAX)
}

/// The wait of spec §10.3 steps 1–3, computed independently: the delay of
/// §5.1.3, then at most `backoffCapMs` and at most `maxDelayMs` (each only
/// when non-zero).
///
/// ```
/// use autoretry::RetrySettings;
/// use autoretry_testkit::fuzzing::expected_backoff;
/// assert_eq!(expected_backoff(&RetrySettings::CLASSIC, 3), 8000);
/// assert_eq!(expected_backoff(&RetrySettings::MODERN, 6), 8000); // 16000, capped
/// let ceiling = RetrySettings::CLASSIC.with_max_delay_ms(5000);
/// assert_eq!(expected_backoff(&ceiling, 40), 5000);
/// ```
pub fn expected_backoff(settings: &RetrySettings, attempt: u32) -> u64 {
    let mut backoff = expected_delay(settings.base_delay_ms, attempt);
    for limit in [settings.backoff_cap_ms, settings.max_delay_ms] {
        if limit > 0 {
            backoff = backoff.min(limit);
        }
    }
    backoff
}

/// One draw of the jitter generator of spec §10.6 (SplitMix64's output,
/// high half), advancing `state`.
///
/// ```
/// use autoretry_testkit::fuzzing::jitter_draw;
/// let mut state = 42;
/// let (a, b) = (jitter_draw(&mut state), jitter_draw(&mut state));
/// assert_ne!(a, b);
/// assert_eq!(state, 42u64.wrapping_add(2u64.wrapping_mul(0x9E37_79B9_7F4A_7C15)));
/// ```
pub fn jitter_draw(state: &mut u64) -> u32 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    u32::try_from(z >> 32).expect("the high half fits u32")
}

/// Step 4 of spec §10.3: `backoff − floor(backoff × pct × r / (100 × 2^32))`,
/// computed exactly in 128 bits. For a non-zero backoff the result lies in
/// `(backoff × (1 − pct/100), backoff]`.
///
/// ```
/// use autoretry_testkit::fuzzing::expected_jitter;
/// assert_eq!(expected_jitter(1000, 25, 0), 1000);
/// assert_eq!(expected_jitter(1000, 25, u32::MAX), 751);
/// assert_eq!(expected_jitter(u64::MAX, 100, u32::MAX), 1 << 32);
/// ```
pub fn expected_jitter(backoff: u64, pct: u8, r: u32) -> u64 {
    let share = u128::from(backoff) * u128::from(pct) * u128::from(r) / (100u128 << 32);
    u64::try_from(u128::from(backoff) - share).expect("the share is at most the backoff")
}

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
    /// §11.6: the total-wait sentence.
    TotalWait {
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
    text: String,
    decision: Decision,
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
/// use autoretry_testkit::fuzzing::Monitor;
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
    jitter: u64,
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
}

impl Monitor {
    /// A monitor around a fresh machine.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::fuzzing::Monitor;
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
            jitter: host.seed,
            total_ms: 0,
            resume: false,
            counted: false,
            chains: 0,
            fail_fasts: 0,
            model_questions: 0,
            continuations: 0,
            throttled: 0,
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
    /// use autoretry_testkit::fuzzing::Monitor;
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
        let awaiting = question.map(|question| Awaiting {
            question,
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
            jitter: machine.host_options().seed,
            total_ms: field("total_ms"),
            resume: fields["resume"].as_bool().expect("a boolean field"),
            // A chain with starts before the snapshot was counted there.
            counted: machine.retry_attempt() > 0,
            chains: 0,
            fail_fasts: 0,
            model_questions: 0,
            continuations: 0,
            throttled: 0,
            machine,
        })
    }

    /// The machine under watch.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::fuzzing::Monitor;
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
    /// use autoretry_testkit::fuzzing::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).chains(), 0);
    /// ```
    pub fn chains(&self) -> u64 {
        self.chains
    }

    /// How many chains ended by failing fast (spec §10.3 step 8) so far.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::fuzzing::Monitor;
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
    /// use autoretry_testkit::fuzzing::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).model_questions(), 0);
    /// ```
    pub fn model_questions(&self) -> u64 {
        self.model_questions
    }

    /// How many continuations (spec §11.2) started so far.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::fuzzing::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).continuations(), 0);
    /// ```
    pub fn continuations(&self) -> u64 {
        self.continuations
    }

    /// How many chains the shared budget throttled (spec §11.4) so far.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::fuzzing::Monitor;
    /// assert_eq!(Monitor::new(RetrySettings::DEFAULT, HostOptions::default()).throttled(), 0);
    /// ```
    pub fn throttled(&self) -> u64 {
        self.throttled
    }

    /// The text whose usage-limit or model-switch answer is awaited, if any
    /// (the answer carries it back).
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::fuzzing::Monitor;
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
    /// use autoretry_testkit::fuzzing::Monitor;
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
    /// use autoretry_testkit::fuzzing::Monitor;
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
                    self.machine.awaits_usage_limit_answer(),
                    self.awaiting_question() == Some(Question::UsageLimit)
                );
                assert_eq!(
                    self.machine.awaits_model_switch_answer(),
                    matches!(self.awaiting_question(), Some(Question::Model(_)))
                );
                assert_eq!(self.machine.settings(), self.settings);
                // The machine's generator is where this one is (spec §10.6).
                assert_eq!(
                    self.machine.host_options().seed,
                    self.jitter,
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
                    Input::AgentEnd { .. } | Input::MessageEnd { .. } => {
                        self.pending.is_some() || self.awaiting.is_some()
                    }
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
    fn decide(
        &mut self,
        message: &AssistantMessage<'_>,
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
            if classifier == Classifier::Extended {
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
            return self.policy(FallbackReason::Exhausted, d, text);
        }
        // Step 4: the throttle.
        if throttled {
            return self.policy(FallbackReason::Throttled, d, text);
        }
        // Step 5: the wait of §10.3 steps 1–6.
        let n = u32::try_from(attempt).expect("at most maxRetries");
        let mut backoff = expected_backoff(&s, n);
        if s.jitter_pct.get() > 0 {
            let r = jitter_draw(&mut self.jitter);
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
        let hint = if s.honor_hints {
            message
                .retry_after_ms
                .or_else(|| classify::wait_hint_ms(text, now_ms))
        } else {
            None
        };
        d.delay_ms = hint.map_or(backoff, |h| h.max(backoff));
        let usage_limit = classifier.matches_usage_limit(text);
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
                    .or_else(|| classify::retry_hint_ms(text, now_ms))
            };
            self.awaiting = Some(Awaiting {
                question: Question::UsageLimit,
                text: text.to_owned(),
                decision: d,
            });
            return Expect::Mark { hint: mark };
        }
        self.ceiling(d, text)
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
        let total = self.total_ms.saturating_add(delay_ms);
        if d.max_total_delay_ms > 0 && total > d.max_total_delay_ms {
            d.delay_ms = delay_ms;
            return self.policy(FallbackReason::TotalWait, d, text);
        }
        self.total_ms = total;
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
                total_ms: self.total_ms.saturating_add(d.delay_ms),
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
            Input::AgentEnd { .. } | Input::MessageEnd { .. } => assert!(
                self.pending.is_none() && self.awaiting.is_none(),
                "the agent ran during a backoff or while an answer was awaited: {input:?}"
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
            Input::SetAutoRetry { .. } | Input::Settings(_) => &[""],
        };
        assert!(
            allowed.contains(&shape.as_str()),
            "outputs {out:?} (shape {shape}) for {input:?}"
        );

        // The text a decision is about: the message's, or the awaited one.
        let mut decided_text = "";
        let expect = match input {
            Input::AgentEnd { message, now_ms } => {
                decided_text = message.error_message.unwrap_or("");
                let expect = self.decide(&message, now_ms, host, tokens.as_deref_mut());
                // §11.4: a run that ended well refills the budget.
                if let (true, Some(tokens)) = (message.stop_reason.is_success(), tokens) {
                    tokens.refill();
                }
                expect
            }
            Input::UsageLimitMarked {
                switched,
                error_message,
            } => {
                decided_text = error_message;
                self.answer(Question::UsageLimit, switched, error_message)
            }
            Input::ModelSwitched {
                switched,
                error_message,
            } => {
                decided_text = error_message;
                self.answer(
                    Question::Model(FallbackReason::Exhausted),
                    switched,
                    error_message,
                )
            }
            _ => Expect::Nothing,
        };
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
            | Input::ModelSwitched { .. } => {}
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
                    assert_eq!(error_message, decided_text);
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
                    let error = decided_text;
                    match expect {
                        Expect::Fail(failure) => {
                            let want = match failure {
                                Failure::Exhausted => FinalError::Text(error),
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
                                    total_ms,
                                    max_total_delay_ms,
                                } => {
                                    assert!(
                                        total_ms > max_total_delay_ms && max_total_delay_ms > 0
                                    );
                                    FinalError::TotalWait {
                                        total_ms,
                                        max_total_delay_ms,
                                        error,
                                    }
                                }
                            };
                            assert_eq!(
                                final_error,
                                Some(want),
                                "the policy end (spec §5.1.2, §10.3, §11.4, §11.6)"
                            );
                        }
                        _ if !success && matches!(input, Input::AgentEnd { .. }) => {
                            let expected = match decided_text {
                                "" => UNKNOWN_ERROR,
                                t => t,
                            };
                            assert_eq!(final_error, Some(FinalError::Text(expected)));
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
/// `D` drop, `Z` sleep, `X` cancel timer, `K` continue, `R` resume, `M`
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

/// Reads fuzz bytes as a stream of small decisions; past the end it reads
/// zeros.
struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        let mut v = 0u64;
        for _ in 0..8 {
            v = (v << 8) | u64::from(self.byte());
        }
        v
    }

    /// A number from a few interesting ones or the bytes themselves.
    fn number(&mut self, interesting: &[u64]) -> u64 {
        let pick = usize::from(self.byte());
        match interesting.get(pick % (interesting.len() + 1)) {
            Some(&v) => v,
            None => self.u64(),
        }
    }

    /// A text: one of [`TEXTS`], or up to 255 bytes of the input (the valid
    /// UTF-8 prefix of them).
    fn text(&mut self) -> &'a str {
        let pick = usize::from(self.byte());
        if pick < 200 {
            return TEXTS[pick % TEXTS.len()];
        }
        let len = usize::from(self.byte()).min(self.data.len());
        let (raw, rest) = self.data.split_at(len);
        self.data = rest;
        match core::str::from_utf8(raw) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&raw[..e.valid_up_to()]).unwrap_or(""),
        }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

const DELAYS: &[u64] = &[0, 1, 2000, 1 << 62, u64::MAX / 3, u64::MAX];
const MAX_RETRIES: &[u64] = &[0, 1, 2, 3, 5, 64, u32::MAX as u64];
const WINDOWS: &[u64] = &[0, 1000, 200_000, u64::MAX];
/// Ceilings and caps (spec §10.1): none, small, the modern values, huge.
const LIMITS: &[u64] = &[0, 1, 1000, 8000, 300_000, u64::MAX];
/// The host's `retryAfterMs` (spec §10.2): around the modern ceiling.
const RETRY_AFTERS: &[u64] = &[
    0,
    1,
    41_821,
    299_999,
    300_000,
    300_001,
    11_180_000,
    u64::MAX,
];

/// Usage-reset waits and chain totals (spec §11.5–11.6): none, small,
/// around the modern ceiling and the hint texts' waits, huge.
const WAIT_LIMITS: &[u64] = &[0, 1, 5000, 300_000, 11_180_000, 20_000_000, u64::MAX];

/// A settings group. The first byte gives `enabled` (its low three bits);
/// with its high bit set, the keys of spec §10.1 follow (profile,
/// ceiling, cap, jitter, hints, classifier), else they keep their
/// `classic` values, as the seeds written before them expect; with its
/// bit 6 set, the keys of §11.1 follow last (`modelFallback`,
/// `maxUsageWaitMs`, `maxTotalDelayMs`), else they keep their defaults.
fn settings(r: &mut Reader<'_>) -> RetrySettings {
    let first = r.byte();
    let mut s = RetrySettings::DEFAULT;
    if first & 0x80 != 0 {
        s.profile = if r.byte() % 2 == 0 {
            Profile::Classic
        } else {
            Profile::Modern
        };
        s.max_delay_ms = r.number(LIMITS);
        s.backoff_cap_ms = r.number(LIMITS);
        let pct = match r.byte() % 4 {
            0 => 0,
            1 => 25,
            2 => 100,
            _ => r.byte() % 101,
        };
        s.jitter_pct = JitterPct::saturating(pct);
        s.honor_hints = r.byte() % 2 == 1;
        s.classifier = if r.byte() % 2 == 0 {
            Classifier::Classic
        } else {
            Classifier::Extended
        };
    }
    s.enabled = first % 8 != 0;
    s.max_retries = r.number(MAX_RETRIES) as u32;
    s.base_delay_ms = r.number(DELAYS);
    if first & 0x40 != 0 {
        s.model_fallback = r.byte() % 2 == 1;
        s.max_usage_wait_ms = r.number(WAIT_LIMITS);
        s.max_total_delay_ms = r.number(WAIT_LIMITS);
    }
    s
}

/// A retry budget (spec §11.4): `maxTokens` 1–1000, `tokenRatio` 0.001–1000
/// and the starting tokens, each from a few interesting figures or the
/// bytes.
fn budget(r: &mut Reader<'_>) -> RetryBudget {
    // v − 1 wraps, so that 1 ..= 1000 stay themselves.
    let max = u32::try_from(r.number(&[1, 2, 4, 10, 1000]).wrapping_sub(1) % 1000)
        .expect("below 1000")
        + 1;
    let ratio =
        u32::try_from(r.number(&[1, 100, 500, 1000, 1_000_000]).wrapping_sub(1) % 1_000_000)
            .expect("below 10^6")
            + 1;
    let full = RetryBudget::new(max, ratio).expect("figures in range");
    let tokens = r.number(&[
        u64::from(max) * 1000,
        0,
        u64::from(max) * 500,
        u64::from(max) * 500 + 1,
    ]);
    full.with_tokens_milli(u32::try_from(tokens % (u64::from(max) * 1000 + 1)).expect("in range"))
        .expect("tokens in range")
}

/// Decodes the bytes into a host (settings, context window, credential
/// store, jitter seed, a retry budget) and a sequence of up to 512
/// inputs, runs them through a [`Monitor`], and panics on any violated
/// invariant. Settings and messages may carry the policy options of spec
/// §10 and §11 (see the byte format in the source: bits 6 and 7 of a
/// settings group's first byte, bits 3–7 of a message's first byte), the
/// host byte's bit 2 gives a budget (§11.4) handed with every input, and
/// the machine's questions are answered (`usage_limit_marked`,
/// `model_switched`, sometimes the other kind, or a wrong text).
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_machine(b"\x01\x03\x02\x00\x01\x00\x01\x02\x03");
/// // Options on: the modern profile with a 300,000 ms ceiling, 25 % jitter,
/// // hints honoured; 5 retries from 2000 ms; seed 7. Then an `agent_end`
/// // whose host's retryAfterMs (300,001 ms) is over the ceiling: fail fast.
/// autoretry_testkit::fuzzing::fuzz_machine(&[
///     0x81, 1, 4, 3, 1, 1, 0, 4, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7, // settings, host
///     0, 0x24, 5, 1, 1, 1, 0, // agent_end
/// ]);
/// // Section 11 on: 3 retries from 2000 ms, modelFallback, a 5000 ms total;
/// // a budget of 4 tokens refilling 0.5. A retry (4 → 3 tokens), its
/// // backoff, a second failure throttled (3 → 2) that asks for a model,
/// // the switch and its immediate retry, then a failure after visible text
/// // (a continuation, which never asks): throttled (2 → 1), it ends.
/// autoretry_testkit::fuzzing::fuzz_machine(&[
///     0x41, 3, 2, 1, 0, 2, 0, 0x04, 2, 2, 0, // settings, host, budget
///     0, 4, 1, 1, 1, 0, 14, // agent_end, the timer fires
///     0, 4, 1, 1, 1, 0, 8, 0, 1, 14, // agent_end, model_switched, the timer fires
///     0, 0x84, 1, 1, 1, 0, 0, // agent_end with partial "text"
/// ]);
/// ```
pub fn fuzz_machine(bytes: &[u8]) {
    let mut r = Reader { data: bytes };
    let settings = settings(&mut r);
    let context_window = r.number(WINDOWS);
    let store = r.byte();
    let host = HostOptions {
        context_window,
        credential_store: store % 2 == 1,
        seed: if store & 2 != 0 { r.u64() } else { 0 },
    };
    let mut budget = (store & 4 != 0).then(|| budget(&mut r));
    let mut mon = Monitor::new(settings, host);
    drive(&mut r, &mut mon, budget.as_mut(), 512);
}

/// Values a forged snapshot field takes, by the field's width in bytes,
/// besides random ones: the edges of each type and the small figures of a
/// chain.
fn forged_value(r: &mut Reader<'_>, width: usize) -> u64 {
    let v = match width {
        1 => r.number(&[0, 1, 2, 3, 4, 100, 101]),
        2 => r.number(&[0, 1, 2]),
        4 => r.number(&[0, 1, 2, 3, 4, u64::from(u32::MAX) - 1]),
        _ => r.number(&[0, 1, 2, 3, 4, 2000, u64::from(u32::MAX), u64::MAX - 1]),
    };
    // Random values keep to the field's type (all ones: its maximum).
    v & (u64::MAX >> (64 - 8 * width))
}

/// Forges a snapshot and, when the machine takes it, drives the restored
/// machine under a [`Monitor`] that resumes from it; panics on any
/// violated guarantee. Returns `None` when the snapshot is refused, else
/// how many inputs were fed after restoring.
///
/// The bytes give, in order: a host and settings, and up to 15 inputs,
/// as [`fuzz_machine`] reads them (a reachable machine, from which a
/// snapshot is taken); the text the host keeps with it; up to three field
/// edits ([`forge::FIELDS`](crate::forge::FIELDS): the field, then a
/// value, an edge of its type or random); after edits, whether the last
/// timer id is raised to the attempt; then the inputs fed to the restored
/// machine. Without edits the snapshot must restore to the very machine.
/// When the forged snapshot awaits an answer (usage limit or model), its
/// text digest is the kept text's, as the host keeps the text.
///
/// ```
/// use autoretry_testkit::fuzzing::fuzz_snapshot;
/// // No edit: the default machine restores; nothing more to feed.
/// assert_eq!(fuzz_snapshot(&[1, 3, 2, 0, 0, 0, 0]), Some(0));
/// // One edit: field 14 (`phase`) to 2 (a backoff at attempt 0): refused.
/// assert_eq!(fuzz_snapshot(&[1, 3, 2, 0, 0, 0, 1, 14, 2]), None);
/// ```
pub fn fuzz_snapshot(bytes: &[u8]) -> Option<usize> {
    use crate::forge::{forge, text_digest, FIELDS};

    let mut r = Reader { data: bytes };
    let settings = settings(&mut r);
    let context_window = r.number(WINDOWS);
    let store = r.byte();
    let host = HostOptions {
        context_window,
        credential_store: store % 2 == 1,
        seed: if store & 2 != 0 { r.u64() } else { 0 },
    };
    let mut live = Monitor::new(settings, host);
    let prefix = usize::from(r.byte() % 16);
    drive(&mut r, &mut live, None, prefix);
    let machine = live.machine().clone();
    // The text a host keeps is one the machine asked to mark: never empty.
    let text = match live.awaited_text() {
        Some(text) => text.to_owned(),
        None => Some(r.text())
            .filter(|t| !t.is_empty())
            .unwrap_or(TEXTS[1])
            .to_owned(),
    };
    let edits: Vec<(&str, u64)> = (0..r.byte() % 4)
        .map(|_| {
            let (name, width) = FIELDS[usize::from(r.byte()) % FIELDS.len()];
            (name, forged_value(&mut r, width))
        })
        .collect();
    let ids_for_attempt = !edits.is_empty() && r.byte() % 2 == 0;
    let forged = forge(machine.snapshot(), |fields| {
        for &(name, value) in &edits {
            fields[name] = match fields[name] {
                serde_json::Value::Bool(_) => (value % 2 == 1).into(),
                _ => value.into(),
            };
        }
        // Half the time a timer id for every retry, so that forged
        // attempts (up to u32::MAX) restore more often.
        if ids_for_attempt && fields["timer"].as_u64() < fields["attempt"].as_u64() {
            fields["timer"] = fields["attempt"].clone();
        }
        if fields["phase"] == 3 || fields["phase"] == 4 {
            fields["marked_text_digest"] = text_digest(&text).into();
        }
    });
    if edits.is_empty() {
        assert_eq!(forged, machine.snapshot(), "the digest made again differs");
        assert_eq!(Machine::restore(forged).as_ref(), Ok(&machine));
    }
    let mut mon = match Monitor::resume(forged, &text) {
        Ok(mon) => mon,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return None;
        }
    };
    // A restored machine snapshots to the same snapshot (in the format
    // version it was read from).
    let again = mon.machine().snapshot();
    let again = if forged.version() == again.version() {
        again
    } else {
        again.with_version(forged.version())
    };
    assert_eq!(again, forged, "restore then snapshot");
    Some(drive(&mut r, &mut mon, None, 512))
}

/// Feeds `mon` up to `limit` inputs read from `r` (the byte format of
/// [`fuzz_machine`]), with `budget` when there is one, and returns how many
/// it fed.
fn drive(
    r: &mut Reader<'_>,
    mon: &mut Monitor,
    mut budget: Option<&mut RetryBudget>,
    limit: usize,
) -> usize {
    // The texts of the inputs are borrowed from the bytes or `TEXTS`, and
    // the awaited text from a copy kept here.
    let mut last_text = String::new();
    let mut fed = 0;
    for _ in 0..limit {
        if r.is_empty() {
            break;
        }
        let op = r.byte();
        let awaited = mon.awaited_text().map(String::from);
        if let Some(text) = &awaited {
            last_text.clone_from(text);
        }
        let input = match op % 16 {
            0..=3 => Input::AgentEnd {
                message: message(r),
                now_ms: match r.byte() % 3 {
                    0 => None,
                    1 => Some(r.u64()),
                    _ => Some(1_700_000_000_000),
                },
            },
            4 | 5 => Input::MessageEnd {
                message: message(r),
            },
            6 | 7 => {
                let pending = mon.machine().pending_timer();
                let timer = match (r.byte() % 4, pending) {
                    (0 | 1, Some(t)) => t,
                    (2, Some(t)) => TimerId(t.0.wrapping_sub(1)),
                    _ => TimerId(r.u64() % 8),
                };
                Input::TimerFired { timer }
            }
            8 | 9 => {
                let switched = r.byte() % 2 == 0;
                let error_message = if r.byte() % 4 != 0 && awaited.is_some() {
                    last_text.as_str()
                } else {
                    r.text()
                };
                // The answer the machine waits for; a high nibble of 0xF
                // gives the other kind.
                let model = mon.machine().awaits_model_switch_answer() != (op >= 0xF0);
                if model {
                    Input::ModelSwitched {
                        switched,
                        error_message,
                    }
                } else {
                    Input::UsageLimitMarked {
                        switched,
                        error_message,
                    }
                }
            }
            10 => Input::AbortRetry,
            11 => Input::Abort,
            12 => Input::SetAutoRetry {
                enabled: r.byte() % 2 == 0,
            },
            13 => Input::Settings(self::settings(r)),
            _ => {
                // Other sessions share the budget: bit 5 charges it, bit 6
                // refills it, before the input.
                if let Some(budget) = budget.as_deref_mut() {
                    if op & 0x20 != 0 {
                        budget.charge();
                    }
                    if op & 0x40 != 0 {
                        budget.refill();
                    }
                }
                // Let a pending timer fire, as a host would.
                match mon.machine().pending_timer() {
                    Some(timer) => Input::TimerFired { timer },
                    None => Input::AgentEnd {
                        message: AssistantMessage::new(StopReason::Stop),
                        now_ms: None,
                    },
                }
            }
        };
        let _ = match budget.as_deref_mut() {
            Some(budget) => mon.step_with_budget(input, budget),
            None => mon.step(input),
        };
        fed += 1;
    }
    fed
}

/// A message. Its first byte gives the stop reason (bits 0–2) and the
/// host's fields of spec §10.2: `shouldRetry` (bits 3–4: none, true,
/// false, none), `retryAfterMs` (bit 5: a number follows), and a text
/// from [`OPTION_TEXTS`] (bit 6). With bit 2 of the usage byte set, the
/// usage has cache writes. With bit 7 of the first byte set, a last byte
/// gives `partial` (spec §11.2): `"text"` when even, else `"tools"`.
fn message<'a>(r: &mut Reader<'a>) -> AssistantMessage<'a> {
    let first = r.byte();
    let stop_reason = match first % 8 {
        0 => StopReason::Stop,
        1 => StopReason::Length,
        2 => StopReason::ToolUse,
        3 => StopReason::Aborted,
        _ => StopReason::Error,
    };
    let should_retry = match (first >> 3) & 3 {
        1 => Some(true),
        2 => Some(false),
        _ => None,
    };
    let retry_after_ms = if first & 0x20 != 0 {
        Some(r.number(RETRY_AFTERS))
    } else {
        None
    };
    let error_message = match r.byte() % 8 {
        0 => None,
        _ if first & 0x40 != 0 => Some(OPTION_TEXTS[usize::from(r.byte()) % OPTION_TEXTS.len()]),
        _ => Some(r.text()),
    };
    let usage_byte = r.byte();
    let usage = match usage_byte % 4 {
        0 => Some(Usage {
            input: r.number(WINDOWS),
            cache_read: r.number(&[0, 1, u64::MAX]),
            cache_write: if usage_byte & 4 != 0 {
                r.number(&[0, 1, 600, u64::MAX])
            } else {
                0
            },
        }),
        _ => None,
    };
    let partial = match first & 0x80 {
        0 => Partial::None,
        _ if r.byte() % 2 == 0 => Partial::Text,
        _ => Partial::Tools,
    };
    AssistantMessage {
        stop_reason,
        error_message,
        usage,
        should_retry,
        retry_after_ms,
        partial,
    }
}

/// Classifies the bytes every way the crate can and panics when two ways
/// disagree: the bytes entry points against the lossy-decoded string,
/// [`classify::classify`] against the single predicates, ASCII case changes,
/// the non-ASCII letters that fold to ASCII elsewhere (`İ ı ſ K`) against a
/// letter that folds nowhere, and appending a suffix (the second half of the
/// input) for the monotone predicates.
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_classify("Rate Limit; retry-after: 2".as_bytes());
/// ```
pub fn fuzz_classify(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let c = classify::classify(&text);
    assert_eq!(classify::classify_bytes(bytes), c, "bytes vs lossy string");
    assert_eq!(
        Classifier::Classic.matches_retryable_bytes(bytes),
        Classifier::Classic.matches_retryable(&text)
    );
    assert_eq!(
        Classifier::Classic.matches_overflow_bytes(bytes),
        c.overflow
    );
    assert_eq!(
        Classifier::Classic.matches_usage_limit_bytes(bytes),
        c.usage_limit
    );
    assert_eq!(
        c.usage_limit,
        Classifier::Classic.matches_usage_limit(&text)
    );
    assert_eq!(c.overflow, Classifier::Classic.matches_overflow(&text));
    assert_eq!(
        c.retryable,
        !text.is_empty() && !c.overflow && Classifier::Classic.matches_retryable(&text)
    );
    assert_eq!(c.hint_ms, classify::retry_hint_ms(&text, None));

    // ASCII case never matters.
    assert_eq!(
        classify::classify(&text.to_ascii_uppercase()),
        c,
        "upper case"
    );
    assert_eq!(
        classify::classify(&text.to_ascii_lowercase()),
        c,
        "lower case"
    );

    // İ ı ſ K behave like any other letter outside ASCII.
    let neutral: String = text
        .chars()
        .map(|ch| match ch {
            '\u{130}' | '\u{131}' | '\u{17F}' | '\u{212A}' => 'é',
            other => other,
        })
        .collect();
    assert_eq!(classify::classify(&neutral), c, "a folding letter matched");

    // Appending never loses a match of a monotone predicate.
    let cut = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    let head = &text[..cut];
    let monotone = |t: &str| {
        [
            Classifier::Classic.matches_retryable(t),
            Classifier::Classic.matches_usage_limit(t),
            Classifier::Classic.matches_overflow(t),
            matches_overflow_unanchored(t),
        ]
    };
    let (before, after) = (monotone(head), monotone(&text));
    for (i, (b, a)) in before.iter().zip(after).enumerate() {
        assert!(
            !b || a,
            "predicate {i} lost its match when text was appended"
        );
    }
    // Prepending never loses a match of the unanchored patterns.
    let tail = &text[cut..];
    if matches_overflow_unanchored(tail) {
        assert!(matches_overflow_unanchored(&text));
    }
    if Classifier::Classic.matches_retryable(tail) {
        assert!(Classifier::Classic.matches_retryable(&text));
    }
}

/// Computes the retry hint of the bytes (the first 9 bytes give the clock:
/// a flag and a big-endian `u64`) every way and panics when they disagree,
/// or on an arithmetic overflow (a debug build checks them).
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_hint(b"\x01\x00\x00\x00\x00\x00\x00\x00\x05x-ratelimit-reset: 99999999999999999999");
/// ```
pub fn fuzz_hint(bytes: &[u8]) {
    let mut r = Reader { data: bytes };
    let now = match r.byte() % 2 {
        0 => None,
        _ => Some(r.u64()),
    };
    let rest = r.data;
    let text = String::from_utf8_lossy(rest);
    let hint = classify::retry_hint_ms_bytes(rest, now);
    assert_eq!(
        hint,
        classify::retry_hint_ms(&text, now),
        "bytes vs lossy string"
    );
    assert_eq!(
        classify::retry_hint_ms(&text.to_ascii_uppercase(), now),
        hint,
        "upper case"
    );
    assert_eq!(
        classify::retry_hint_ms(&text.to_ascii_lowercase(), now),
        hint,
        "lower case"
    );
    if now.is_none() {
        assert_eq!(classify::classify_bytes(rest).hint_ms, hint);
    }
}

/// Decodes the bytes as a `retry` settings group (spec §4, §10.1) both
/// ways the crate offers, compares them with an independent reading of §4
/// and §10.1 on the parsed JSON value, and checks that accepted settings round-trip and that
/// the machine takes them without outputs.
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_settings_json(br#"{"maxRetries":5,"baseDelayMs":18446744073709551615}"#);
/// autoretry_testkit::fuzzing::fuzz_settings_json(br#"{"maxRetries":-0}"#);
/// autoretry_testkit::fuzzing::fuzz_settings_json(br#"{"profile":"modern","jitterPct":100,"classifier":"classic"}"#);
/// autoretry_testkit::fuzzing::fuzz_settings_json(br#"{"jitterPct":101}"#);
/// ```
pub fn fuzz_settings_json(bytes: &[u8]) {
    use autoretry::wire::{json::settings_from_json, SettingsGroup};
    use serde_json::Value;

    let direct = serde_json::from_slice::<SettingsGroup>(bytes).map(|g| g.0);
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        assert!(direct.is_err(), "accepted text that is not JSON");
        return;
    };
    let via_value = settings_from_json(&value);
    let expected = settings_by_the_spec(&value);
    assert_eq!(via_value.as_ref().ok(), expected.as_ref(), "{value}");
    if let Ok(settings) = direct {
        // The direct reading also refuses duplicate keys, which a Value
        // cannot show; anything it accepts is accepted via the Value too.
        assert_eq!(Some(settings), expected, "{value}");
        let json = serde_json::to_string(&SettingsGroup(settings)).expect("serializes");
        let SettingsGroup(again) = serde_json::from_str(&json).expect("round trip");
        assert_eq!(again, settings);
        let mut m = Machine::default();
        let out = m
            .handle(Input::Settings(settings))
            .expect("settings are accepted");
        assert!(out.is_empty());
        assert_eq!(m.settings(), settings);
    }
    if let Err(e) = &via_value {
        assert!(
            e.to_string().starts_with("retry"),
            "the error names the key: {e}"
        );
    }
}

/// Spec §4 and §10.1 read on a JSON value, independently of `wire`: the
/// group's `profile` (`classic` when absent) picks the column of the
/// table of §10.1 that gives the missing keys; every key is strict.
fn settings_by_the_spec(value: &serde_json::Value) -> Option<RetrySettings> {
    let obj = value.as_object()?;
    let classic = RetrySettings {
        profile: Profile::Classic,
        enabled: true,
        max_retries: 3,
        base_delay_ms: 2000,
        max_delay_ms: 0,
        backoff_cap_ms: 0,
        jitter_pct: JitterPct::new(0)?,
        honor_hints: false,
        classifier: Classifier::Classic,
        model_fallback: false,
        max_usage_wait_ms: 0,
        max_total_delay_ms: 0,
    };
    let modern = RetrySettings {
        profile: Profile::Modern,
        enabled: true,
        max_retries: 10,
        base_delay_ms: 500,
        max_delay_ms: 300_000,
        backoff_cap_ms: 8000,
        jitter_pct: JitterPct::new(25)?,
        honor_hints: true,
        classifier: Classifier::Extended,
        model_fallback: false,
        max_usage_wait_ms: 0,
        max_total_delay_ms: 0,
    };
    // The columns of the table of §10.1, picked by the group's profile.
    let mut s = match obj.get("profile") {
        None => classic,
        Some(v) => match v.as_str()? {
            "classic" => classic,
            "modern" => modern,
            _ => return None,
        },
    };
    for (key, v) in obj {
        match key.as_str() {
            "profile" => {}
            "enabled" => s.enabled = v.as_bool()?,
            "maxRetries" => s.max_retries = u32::try_from(v.as_u64()?).ok()?,
            "baseDelayMs" => s.base_delay_ms = v.as_u64()?,
            "maxDelayMs" => s.max_delay_ms = v.as_u64()?,
            "backoffCapMs" => s.backoff_cap_ms = v.as_u64()?,
            "jitterPct" => s.jitter_pct = JitterPct::new(u8::try_from(v.as_u64()?).ok()?)?,
            "honorHints" => s.honor_hints = v.as_bool()?,
            "modelFallback" => s.model_fallback = v.as_bool()?,
            "maxUsageWaitMs" => s.max_usage_wait_ms = v.as_u64()?,
            "maxTotalDelayMs" => s.max_total_delay_ms = v.as_u64()?,
            "classifier" => {
                s.classifier = match v.as_str()? {
                    "classic" => Classifier::Classic,
                    "extended" => Classifier::Extended,
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    Some(s)
}

/// Handles the bytes (lossy-decoded) as one RPC line (spec §7) on a machine
/// in one of four states (idle, backoff, running, awaiting a usage-limit
/// answer; the first byte's low two bits pick it; with its bit 2 set,
/// under `modelFallback` with `maxRetries: 0`, so the first failure asks
/// for a model (spec §11.3) and states 1 and 3 await that answer instead)
/// and checks the response: valid JSON with the key order of §7, the `id`
/// echoed, nothing changed when it fails, and the outputs checked by a
/// [`Monitor`].
///
/// ```
/// // State 1 (a backoff is pending), then the line.
/// autoretry_testkit::fuzzing::fuzz_rpc_line(b"\x01{\"type\":\"abort_retry\",\"id\":\"r2\"}");
/// // State 5 (a model-switch answer is awaited), then the line.
/// autoretry_testkit::fuzzing::fuzz_rpc_line(b"\x05{\"type\":\"abort_retry\"}");
/// ```
pub fn fuzz_rpc_line(bytes: &[u8]) {
    use autoretry::wire::rpc::handle_line;
    use serde_json::Value;

    let (state, line) = bytes.split_first().map_or((0, &[][..]), |(s, l)| (*s, l));
    let line = String::from_utf8_lossy(line);
    let settings = match state & 4 {
        0 => RetrySettings::DEFAULT,
        _ => RetrySettings::DEFAULT
            .with_model_fallback(true)
            .with_max_retries(0),
    };
    let mut mon = Monitor::new(
        settings,
        HostOptions {
            context_window: 0,
            credential_store: state % 4 == 3,
            ..HostOptions::DEFAULT
        },
    );
    let text = "usage limit 503";
    if state % 4 != 0 {
        let _ = mon.step(Input::AgentEnd {
            message: AssistantMessage::error(text),
            now_ms: None,
        });
    }
    if state % 4 == 2 {
        if mon.machine().awaits_model_switch_answer() {
            let _ = mon.step(Input::ModelSwitched {
                switched: true,
                error_message: text,
            });
        }
        let timer = mon.machine().pending_timer().expect("backoff");
        let _ = mon.step(Input::TimerFired { timer });
    }
    let before = mon.machine().clone();
    let mut machine = before.clone();
    let (response, outputs) = handle_line(&mut machine, &line);
    let json = response.to_json_line();
    let parsed: Value = serde_json::from_str(&json).expect("the response is JSON");
    let obj = parsed.as_object().expect("the response is an object");
    let request: Option<Value> = serde_json::from_str(&line).ok();
    let id = request.as_ref().and_then(|r| r.get("id"));
    if response.id.is_none() {
        assert!(
            json.starts_with("{\"type\":\"response\",\"command\":"),
            "{json}"
        );
    }
    if response.id.is_some() {
        let echoed = response.id.as_ref().map(|echoed| {
            serde_json::from_str::<Value>(&echoed.to_json()).expect("the id is JSON")
        });
        assert_eq!(echoed.as_ref(), id, "the id is the request's");
        assert!(json.starts_with("{\"id\":"), "the id comes first: {json}");
    }
    assert_eq!(obj.get("type"), Some(&Value::from("response")));
    assert_eq!(
        obj.get("success").and_then(Value::as_bool),
        Some(response.is_success())
    );
    if !response.is_success() {
        assert!(outputs.is_empty());
        assert_eq!(machine, before, "a failed command changed the machine");
        assert!(obj.get("error").is_some_and(Value::is_string));
        return;
    }
    let request = request.expect("a successful command was JSON");
    let input = match request.get("type").and_then(Value::as_str) {
        Some("set_auto_retry") => Input::SetAutoRetry {
            enabled: request["enabled"].as_bool().expect("enabled was a boolean"),
        },
        Some("abort_retry") => Input::AbortRetry,
        Some("abort") => Input::Abort,
        Some("set_retry_settings") => Input::Settings(
            settings_by_the_spec(&request["settings"]).expect("the settings were valid"),
        ),
        Some("get_retry_state") => {
            assert_eq!(machine, before);
            let data = &obj["data"];
            assert_eq!(
                data["retryAttempt"].as_u64(),
                Some(u64::from(before.retry_attempt()))
            );
            assert_eq!(data["isRetrying"].as_bool(), Some(before.is_retrying()));
            return;
        }
        other => panic!("success for an unknown command {other:?}"),
    };
    let expected = mon.step(input).expect("accepted");
    assert_eq!(outputs, expected);
    assert_eq!(&machine, mon.machine());
}

/// A fuzz target for [`replay_inputs`]: its directory name and the function
/// it calls.
pub type Target = (&'static str, fn(&[u8]));

/// Runs every file of `root/<target>/` through its target's function (the
/// fuzz seeds of `fuzz/corpus/`, the minimized findings of
/// `tests/fuzz_regressions/`) and returns how many ran; a missing directory
/// counts none. Panics, naming the target and the file, when one fails.
///
/// ```
/// use autoretry_testkit::fuzzing::{fuzz_hint, replay_inputs};
/// let none = std::env::temp_dir().join("no such fuzz corpus");
/// assert_eq!(replay_inputs(&none, &[("hint", fuzz_hint)]), 0);
/// ```
pub fn replay_inputs(root: &std::path::Path, targets: &[Target]) -> usize {
    let mut count = 0;
    for &(target, run) in targets {
        let Ok(entries) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let data = std::fs::read(&path).expect("a readable file");
            if std::panic::catch_unwind(|| run(&data)).is_err() {
                panic!("{target}: {} fails", path.display());
            }
            count += 1;
        }
    }
    count
}
