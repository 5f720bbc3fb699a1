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
    AssistantMessage, Event, FinalError, HostOptions, Input, JitterPct, Machine, Output, Outputs,
    Profile, Refused, RetrySettings, RetryState, Snapshot, SnapshotError, StopReason, TimerId,
    Usage, MAX_OUTPUTS, RETRY_CANCELLED, UNKNOWN_ERROR,
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
/// `^4(00|13)...`) matches `text`. Unlike [`classify::matches_overflow`],
/// this predicate is monotone both ways: text added before or after a match
/// never removes it.
///
/// ```
/// use autoretry::classify::matches_overflow;
/// use autoretry_testkit::fuzzing::matches_overflow_unanchored;
/// assert!(matches_overflow("413 (no body)") && !matches_overflow_unanchored("413 (no body)"));
/// assert!(matches_overflow_unanchored("error: too many tokens"));
/// ```
pub fn matches_overflow_unanchored(text: &str) -> bool {
    // A leading character that no pattern contains: the anchored rule
    // (`^4(00|13)...`) cannot match, and no unanchored match can use it.
    classify::matches_overflow(&format!("\u{e9}{text}"))
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
    /// An `agent_end` that starts no retry: no start, no mark, no
    /// fail-fast end (an open chain ends with the message's error, §9).
    NoRetry,
    /// §5.1.2: the end with the message's error, the retries made.
    MaxExceeded,
    /// §5.1.4 / §10.3 step 7: ask the host, with this hint.
    Mark { hint: Option<u64> },
    /// §10.3 step 8: the end with the sentence, the retries made.
    FailFast {
        requested_ms: u64,
        max_delay_ms: u64,
    },
    /// §5.1.5–7: the start with these figures, then drop and sleep.
    Start {
        attempt: u32,
        max_attempts: u32,
        delay_ms: u64,
    },
}

/// The usage-limit answer the machine waits for, with the figures fixed at
/// the `agent_end` (spec §5.1.4, §10.3 step 7).
#[derive(Clone, Debug)]
struct Awaiting {
    text: String,
    attempt: u32,
    max_attempts: u32,
    delay_ms: u64,
    /// The `maxDelayMs` the delay exceeds (the answer "not switched" fails
    /// fast), else 0.
    exceeded_ceiling_ms: u64,
}

/// The invariant checker of the machine (see the module docs).
///
/// Call [`Monitor::step`] for every input instead of [`Machine::handle`].
/// It predicts every retry decision from the spec (sections 5 and 10): it
/// classifies the message with the crate's classifier, runs its own jitter
/// generator from the host's seed (§10.6) and computes the wait of §10.3,
/// so the start's figures, the usage-limit hint and the fail-fast end
/// (which reports the retries made, `n − 1`) are checked exactly, whatever
/// the options.
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
    /// The usage-limit answer awaited.
    awaiting: Option<Awaiting>,
    /// The jitter generator's state (spec §10.6), from the host's seed.
    jitter: u64,
    /// Number of chains that started (at least one start event).
    chains: u64,
    /// Number of fail-fast ends (spec §10.3 step 8).
    fail_fasts: u64,
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
            chains: 0,
            fail_fasts: 0,
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
        let attempt = machine.retry_attempt();
        let awaiting = machine.awaits_usage_limit_answer().then(|| Awaiting {
            text: awaited_text.to_owned(),
            attempt,
            max_attempts: u32::try_from(field("marked_max_attempts")).expect("a u32 field"),
            delay_ms: field("marked_delay_ms"),
            exceeded_ceiling_ms: field("marked_ceiling_ms"),
        });
        let pending = machine.pending_timer();
        let timer = field("timer");
        Ok(Monitor {
            state: machine.state(),
            host: machine.host_options(),
            settings: machine.settings(),
            decided_max: awaiting.as_ref().map_or(u32::MAX, |a| a.max_attempts),
            // While the answer is awaited, the attempt's own start is not out.
            started: attempt - u32::from(awaiting.is_some()),
            open: machine.is_retrying(),
            unresolved: pending.is_some() || awaiting.is_some(),
            pending,
            issued: HashSet::new(),
            last_timer: timer,
            resumed_timer: timer,
            awaiting,
            jitter: machine.host_options().seed,
            chains: 0,
            fail_fasts: 0,
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

    /// The text whose usage-limit answer is awaited, if any.
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
        let before = self.machine.clone();
        let result = self.machine.handle(input);
        let state = self.machine.state();
        self.observe(input, result.as_ref().map_err(|&refused| refused), state);
        match result {
            Err(_) => {
                assert_eq!(self.machine, before, "a refused input changed the machine");
            }
            Ok(_) => {
                assert_eq!(self.machine.pending_timer(), self.pending);
                assert_eq!(
                    self.machine.awaits_usage_limit_answer(),
                    self.awaiting.is_some()
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
    /// the fail-fast and cancelled ends' final errors) is the one spec
    /// sections 3, 5 and 10 give, with this monitor's own classifier call
    /// and jitter draws; that timer ids are never reused, only the pending
    /// timer is cancelled or continues the agent, every `agent_end` is
    /// resolved once (`continue_agent` or `check_compaction`), `settled`
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
        let out = match &result {
            Err(refused) => {
                assert_eq!(state, self.state, "a refused input changed the state");
                let expected = match input {
                    Input::AgentEnd { .. } | Input::MessageEnd { .. } => {
                        self.pending.is_some() || self.awaiting.is_some()
                    }
                    Input::UsageLimitMarked { error_message, .. } => self
                        .awaiting
                        .as_ref()
                        .is_some_and(|a| a.text != error_message),
                    _ => false,
                };
                assert!(expected, "refused {input:?} ({refused})");
                return;
            }
            Ok(out) => out.as_ref(),
        };
        assert!(out.len() <= MAX_OUTPUTS);
        self.check(input, out, state);
        self.state = state;
    }

    /// The spec's decision on an `agent_end` the machine accepted (spec
    /// §3, §5.1, §9, §10.2–10.3), with this monitor's own jitter draw.
    fn decide(
        &mut self,
        message: &AssistantMessage<'_>,
        now_ms: Option<u64>,
        host: HostOptions,
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
        let overflow = by_usage
            || (is_error && text.is_some_and(|t| classify::matches_overflow_with(t, classifier)));
        let Some(text) = text.filter(|_| s.enabled && is_error && !overflow) else {
            return Expect::NoRetry;
        };
        // §10.2: the host's verdict replaces the pattern test.
        let retryable = message
            .should_retry
            .unwrap_or_else(|| classify::matches_retryable_with(text, classifier));
        if !retryable {
            return Expect::NoRetry;
        }
        // §5.1.1–2, exactly: at u32::MAX the next attempt, 2^32, is past
        // every maximum. With every timer id issued no retry can sleep.
        let Some(attempt) = self
            .started
            .checked_add(1)
            .filter(|&n| n <= s.max_retries && self.last_timer < u64::MAX)
        else {
            return Expect::MaxExceeded;
        };
        let mut backoff = expected_backoff(&s, attempt);
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
        let delay_ms = hint.map_or(backoff, |h| h.max(backoff));
        let exceeded_ceiling_ms = if s.max_delay_ms > 0 && delay_ms > s.max_delay_ms {
            s.max_delay_ms
        } else {
            0
        };
        if host.credential_store && classify::matches_usage_limit_with(text, classifier) {
            let mark = if s.honor_hints {
                hint
            } else {
                message
                    .retry_after_ms
                    .or_else(|| classify::retry_hint_ms(text, now_ms))
            };
            self.awaiting = Some(Awaiting {
                text: text.to_owned(),
                attempt,
                max_attempts: s.max_retries,
                delay_ms,
                exceeded_ceiling_ms,
            });
            Expect::Mark { hint: mark }
        } else if exceeded_ceiling_ms > 0 {
            Expect::FailFast {
                requested_ms: delay_ms,
                max_delay_ms: exceeded_ceiling_ms,
            }
        } else {
            Expect::Start {
                attempt,
                max_attempts: s.max_retries,
                delay_ms,
            }
        }
    }

    fn check(&mut self, input: Input<'_>, out: &[Output<'_>], state: RetryState) {
        let host = self.host;
        // Inputs that must be refused were not.
        match input {
            Input::AgentEnd { .. } | Input::MessageEnd { .. } => assert!(
                self.pending.is_none() && self.awaiting.is_none(),
                "the agent ran during a backoff or a usage-limit answer: {input:?}"
            ),
            Input::UsageLimitMarked { error_message, .. } => {
                if let Some(a) = &self.awaiting {
                    assert_eq!(
                        a.text, error_message,
                        "a usage-limit answer with a wrong text"
                    );
                }
            }
            _ => {}
        }
        let shape = shape(out);
        let allowed: &[&str] = match input {
            Input::MessageEnd { .. } => &["", "E+"],
            Input::AgentEnd { .. } => &[
                "C", "E+C", "SDZ", "E+SDZ", "M", "E+M", "TC", "E+TC", "E-TC", "E+E-TC",
            ],
            Input::TimerFired { .. } => &["", "K"],
            Input::UsageLimitMarked { .. } => &["", "SDZ", "E-TC"],
            Input::AbortRetry => &["", "XE-TC", "E-TC", "TC", "E-T", "T"],
            Input::Abort => &["A", "XE-TCA", "E-TCA", "TCA", "E-TA", "TA"],
            // The Monitor models sections 1–10: its machines never ask for a
            // model, so an answer is always ignored.
            Input::SetAutoRetry { .. } | Input::Settings(_) | Input::ModelSwitched { .. } => &[""],
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
                self.decide(&message, now_ms, host)
            }
            Input::UsageLimitMarked {
                switched,
                error_message,
            } => match self.awaiting.take() {
                Some(a) => {
                    decided_text = error_message;
                    if switched {
                        // A switch makes the wait 0 and skips the ceiling.
                        Expect::Start {
                            attempt: a.attempt,
                            max_attempts: a.max_attempts,
                            delay_ms: 0,
                        }
                    } else if a.exceeded_ceiling_ms > 0 {
                        Expect::FailFast {
                            requested_ms: a.delay_ms,
                            max_delay_ms: a.exceeded_ceiling_ms,
                        }
                    } else {
                        Expect::Start {
                            attempt: a.attempt,
                            max_attempts: a.max_attempts,
                            delay_ms: a.delay_ms,
                        }
                    }
                }
                None => Expect::Nothing,
            },
            _ => Expect::Nothing,
        };
        let expected_shape = match expect {
            Expect::MaxExceeded | Expect::FailFast { .. } => Some("E-TC"),
            Expect::Mark { .. } => Some("M"),
            Expect::Start { .. } => Some("SDZ"),
            Expect::NoRetry => None,
            Expect::Nothing => match input {
                Input::UsageLimitMarked { .. } => Some(""),
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
                !shape.contains('S') && !shape.contains('M'),
                "a retry where the spec starts none: {input:?} -> {out:?}"
            );
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
                if shape.contains('S') || shape.contains('M') || shape.contains("E-") {
                    self.decided_max = self.settings.max_retries;
                }
                if shape.contains('M') {
                    self.open = true;
                }
            }
            Input::TimerFired { timer } => {
                if self.pending == Some(timer) {
                    assert_eq!(shape, "K", "the pending timer fired without continue_agent");
                    self.pending = None;
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
                        "start numbers run 1, 2, 3, ..."
                    );
                    if self.started == 0 {
                        self.chains += 1;
                    }
                    self.started = attempt;
                    let Expect::Start {
                        attempt: a,
                        max_attempts: max,
                        delay_ms: delay,
                    } = expect
                    else {
                        panic!("a start for {input:?} where the spec expects {expect:?}");
                    };
                    assert_eq!(
                        (attempt, max_attempts, delay_ms),
                        (a, max, delay),
                        "the start's attempt, maxAttempts and delayMs (spec §10.3)"
                    );
                    assert_eq!(error_message, decided_text);
                    assert!(attempt <= max_attempts, "attempt beyond maxRetries");
                    assert!(!error_message.is_empty());
                    self.open = true;
                }
                Output::Emit(Event::End {
                    success,
                    attempt,
                    final_error,
                }) => {
                    if self.started == 0 {
                        assert!(
                            !success
                                && attempt == 0
                                && matches!(expect, Expect::MaxExceeded | Expect::FailFast { .. }),
                            "an end without a start: {out:?} for {input:?}"
                        );
                    } else {
                        // A fail-fast end too reports the retries made:
                        // n − 1 for the attempt n it was deciding.
                        assert_eq!(attempt, self.started, "the end reports the last start");
                    }
                    assert_eq!(success, final_error.is_none());
                    if let (Input::AbortRetry | Input::Abort, false) = (input, success) {
                        assert_eq!(final_error, Some(FinalError::Text(RETRY_CANCELLED)));
                    }
                    match expect {
                        Expect::FailFast {
                            requested_ms,
                            max_delay_ms,
                        } => {
                            assert_eq!(
                                final_error,
                                Some(FinalError::WaitTooLong {
                                    requested_ms,
                                    max_delay_ms,
                                    error: decided_text,
                                }),
                                "the fail-fast end (spec §10.3 step 8)"
                            );
                            assert!(requested_ms > max_delay_ms && max_delay_ms > 0);
                            self.fail_fasts += 1;
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
                Output::DropTrailingError | Output::AbortAgent => {}
                Output::SwitchModel { .. } => {
                    panic!("a model switch with modelFallback off: {input:?} -> {out:?}")
                }
            }
        }
        if let Input::AgentEnd { .. } = input {
            assert!(
                !self.unresolved || self.pending.is_some() || self.awaiting.is_some(),
                "an agent_end neither continued nor checked"
            );
        }
        assert!(settled <= 1, "settled twice");

        assert_eq!(
            state.retry_attempt,
            self.started_or_awaited(),
            "retryAttempt"
        );
        assert!(
            state.retry_attempt <= self.decided_max || state.retry_attempt == 0,
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

    fn started_or_awaited(&self) -> u32 {
        match &self.awaiting {
            Some(a) => a.attempt,
            None => self.started,
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

/// A settings group. The first byte gives `enabled` (its low three bits)
/// and, with its high bit set, the keys of spec §10.1 follow (profile,
/// ceiling, cap, jitter, hints, classifier); else they keep their
/// `classic` values, as the seeds written before them expect.
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
    RetrySettings {
        enabled: first % 8 != 0,
        max_retries: r.number(MAX_RETRIES) as u32,
        base_delay_ms: r.number(DELAYS),
        ..s
    }
}

/// Decodes the bytes into a host (settings, context window, credential
/// store, jitter seed) and a sequence of up to 512 inputs, runs them
/// through a [`Monitor`], and panics on any violated invariant. Settings
/// and messages may carry the policy options of spec §10 (see the byte
/// format in the source: a set high bit of a settings group's first byte,
/// and bits 3–6 of a message's first byte).
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
    let mut mon = Monitor::new(settings, host);
    drive(&mut r, &mut mon, 512);
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
/// snapshot is taken); the usage-limit text the host keeps with it; up to
/// three field edits ([`forge::FIELDS`](crate::forge::FIELDS): the field,
/// then a value, an edge of its type or random); after edits, whether the
/// last timer id is raised to the attempt; then the inputs fed to the
/// restored machine. Without edits the snapshot must restore to the
/// very machine. When the forged snapshot awaits the usage-limit answer,
/// its text digest is the kept text's, as the host keeps the text.
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
    drive(&mut r, &mut live, prefix);
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
        if fields["phase"] == 3 {
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
    Some(drive(&mut r, &mut mon, 512))
}

/// Feeds `mon` up to `limit` inputs read from `r` (the byte format of
/// [`fuzz_machine`]) and returns how many it fed.
fn drive(r: &mut Reader<'_>, mon: &mut Monitor, limit: usize) -> usize {
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
            8 | 9 => Input::UsageLimitMarked {
                switched: r.byte() % 2 == 0,
                error_message: if r.byte() % 4 != 0 && awaited.is_some() {
                    last_text.as_str()
                } else {
                    r.text()
                },
            },
            10 => Input::AbortRetry,
            11 => Input::Abort,
            12 => Input::SetAutoRetry {
                enabled: r.byte() % 2 == 0,
            },
            13 => Input::Settings(self::settings(r)),
            _ => {
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
        let _ = mon.step(input);
        fed += 1;
    }
    fed
}

/// A message. Its first byte gives the stop reason (bits 0–2) and the
/// host's fields of spec §10.2: `shouldRetry` (bits 3–4: none, true,
/// false, none), `retryAfterMs` (bit 5: a number follows), and a text
/// from [`OPTION_TEXTS`] (bit 6). With bit 2 of the usage byte set, the
/// usage has cache writes.
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
    AssistantMessage {
        stop_reason,
        error_message,
        usage,
        should_retry,
        retry_after_ms,
        partial: autoretry::Partial::None,
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
        classify::matches_retryable_bytes(bytes),
        classify::matches_retryable(&text)
    );
    assert_eq!(classify::matches_overflow_bytes(bytes), c.overflow);
    assert_eq!(classify::matches_usage_limit_bytes(bytes), c.usage_limit);
    assert_eq!(c.usage_limit, classify::matches_usage_limit(&text));
    assert_eq!(c.overflow, classify::matches_overflow(&text));
    assert_eq!(
        c.retryable,
        !text.is_empty() && !c.overflow && classify::matches_retryable(&text)
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
            classify::matches_retryable(t),
            classify::matches_usage_limit(t),
            classify::matches_overflow(t),
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
    if classify::matches_retryable(tail) {
        assert!(classify::matches_retryable(&text));
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
/// answer; the first byte picks it) and checks the response: valid JSON
/// with the key order of §7, the `id` echoed, nothing changed when it
/// fails, and the outputs checked by a [`Monitor`].
///
/// ```
/// // State 1 (a backoff is pending), then the line.
/// autoretry_testkit::fuzzing::fuzz_rpc_line(b"\x01{\"type\":\"abort_retry\",\"id\":\"r2\"}");
/// ```
pub fn fuzz_rpc_line(bytes: &[u8]) {
    use autoretry::wire::rpc::handle_line;
    use serde_json::Value;

    let (state, line) = bytes.split_first().map_or((0, &[][..]), |(s, l)| (*s, l));
    let line = String::from_utf8_lossy(line);
    let mut mon = Monitor::new(
        RetrySettings::DEFAULT,
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
