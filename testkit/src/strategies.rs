//! [`proptest`](mod@proptest) strategies for property-testing a host of the machine
//! (feature `proptest`): settings, host options, messages, inputs, retry
//! budgets and whole host scenarios, all owned.
//!
//! The values lean toward what reaches deep states: retryable error texts
//! (and overflows, usage limits, server hints), small retry counts and
//! delays, the pending timer firing; and they reach the edges (`u64::MAX`
//! delays, `u32::MAX` retries, every profile, classifier and jitter).
//! They cover spec section 11 too: settings with `modelFallback`,
//! `maxUsageWaitMs` and `maxTotalDelayMs` ([`settings`]), messages with
//! `partial` ([`partial`]), the host's `model_switched` answer
//! ([`Step::ModelAnswer`]) and a shared retry budget ([`budget`],
//! [`Scenario::budget`]); [`classic_settings`] keeps them off. And spec
//! section 12: the stream's limits and `retryEmpty` ([`settings`]),
//! `empty` answers ([`message`]), and the stream's inputs with a host
//! clock that jumps, stalls and goes backwards ([`clock_ms`],
//! [`Step::StreamStart`], [`Step::StreamEvent`]; [`Step::FirePending`]
//! fires a pending watch as it fires a backoff).
//!
//! A [`Scenario`] is what happens *to* a host: the agent's runs end with
//! these messages, the pending timer fires, the user cancels, the settings
//! change. [`Step::input`] turns a step into the machine's input given the
//! host's pending timer and the text it marked for a usage-limit answer;
//! [`Step::marks`] tells which text that is, borrowed from the scenario,
//! so the input borrows nothing of the host, which the next line feeds.
//! The [`Monitor`](crate::Monitor) checks the host's log against the
//! crate's guarantees, taking what the host's `handle` returned as it is:
//!
//! ```
//! use autoretry::{Input, Machine, Outputs, Refused, RetryState, TimerId};
//! use autoretry_testkit::{strategies, Monitor};
//! use proptest::prelude::*;
//!
//! // The host under test: here a thin one around the crate's machine.
//! struct MyHost { machine: Machine }
//! impl MyHost {
//!     fn feed<'a>(&mut self, input: Input<'a>) -> Result<Outputs<'a>, Refused> {
//!         self.machine.handle(input)
//!     }
//!     fn pending_timer(&self) -> Option<TimerId> {
//!         self.machine.pending_timer().or(self.machine.pending_watch())
//!     }
//!     fn state(&self) -> RetryState { self.machine.state() }
//! }
//!
//! proptest!(|(scenario in strategies::scenario())| {
//!     let mut host = MyHost { machine: Machine::new(scenario.settings, scenario.host) };
//!     let mut monitor = Monitor::new(scenario.settings, scenario.host);
//!     let mut marked = ""; // the text of the question (usage limit, model) it answers
//!     for step in &scenario.steps {
//!         let input = step.input(host.pending_timer(), marked);
//!         let result = host.feed(input);
//!         marked = step.marks(&result).unwrap_or(marked);
//!         monitor.observe(input, result, host.state()); // panics on a broken guarantee
//!     }
//! });
//! ```

use autoretry::classify::Classifier;
use autoretry::wire::json::InputLine;
use autoretry::{
    HostOptions, Input, InputBuf, JitterPct, MessageBuf, Output, Partial, Profile, Refused,
    RetryBudget, RetrySettings, StopReason, TimerId, Usage,
};
use proptest::prelude::*;

use crate::fuzzing::{OPTION_TEXTS, TEXTS};

/// `stopReason`, errors most of the time.
///
/// ```
/// use autoretry::StopReason;
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let draws: Vec<StopReason> = (0..200)
///     .map(|_| autoretry_testkit::strategies::stop_reason().new_tree(&mut runner).unwrap().current())
///     .collect();
/// let errors = draws.iter().filter(|&&s| s == StopReason::Error).count();
/// assert!(errors > 80 && errors < 200, "{errors} errors of 200");
/// ```
pub fn stop_reason() -> impl Strategy<Value = StopReason> {
    prop_oneof![
        6 => Just(StopReason::Error),
        2 => Just(StopReason::Stop),
        1 => Just(StopReason::ToolUse),
        1 => Just(StopReason::Length),
        1 => Just(StopReason::Aborted),
    ]
}

/// `maxRetries`: mostly small, sometimes `u32::MAX` or any.
pub fn max_retries() -> impl Strategy<Value = u32> {
    prop_oneof![4 => 0u32..6, 1 => 6u32..12, 1 => Just(u32::MAX), 1 => any::<u32>()]
}

/// `baseDelayMs`: the defaults, tiny, huge or any.
pub fn base_delay_ms() -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(2000u64),
        2 => 0u64..4,
        1 => Just(500),
        1 => Just(u64::MAX),
        1 => Just(1u64 << 63),
        1 => any::<u64>(),
    ]
}

/// A ceiling (`maxDelayMs`) or a cap (`backoffCapMs`): none, the `modern`
/// value given, small, huge or any.
pub fn limit_ms(modern: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => Just(0u64),
        2 => Just(modern),
        2 => 1u64..10_000,
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

/// `jitterPct`: 0, 25, 100 or any in between.
pub fn jitter_pct() -> impl Strategy<Value = JitterPct> {
    prop_oneof![
        2 => Just(0u8),
        2 => Just(25u8),
        1 => Just(100u8),
        2 => 1u8..=100,
    ]
    .prop_map(|p| JitterPct::new(p).unwrap_or(JitterPct::ZERO))
}

/// `profile`: both columns of spec §10.1.
pub fn profile() -> impl Strategy<Value = Profile> {
    prop_oneof![Just(Profile::Classic), Just(Profile::Modern)]
}

/// `classifier`: the three pattern sets.
pub fn classifier() -> impl Strategy<Value = Classifier> {
    prop_oneof![
        Just(Classifier::Classic),
        Just(Classifier::Extended),
        Just(Classifier::Curated)
    ]
}

/// The settings of spec §4 alone (`enabled`, `maxRetries`, `baseDelayMs`;
/// the keys of §10.1 at their `classic` values).
///
/// ```
/// use proptest::prelude::*;
/// proptest!(|(s in autoretry_testkit::strategies::classic_settings())| {
///     prop_assert_eq!(s.max_delay_ms, 0);
/// });
/// ```
pub fn classic_settings() -> impl Strategy<Value = RetrySettings> {
    (
        prop_oneof![6 => Just(true), 1 => Just(false)],
        max_retries(),
        base_delay_ms(),
    )
        .prop_map(|(enabled, max_retries, base_delay_ms)| RetrySettings {
            enabled,
            max_retries,
            base_delay_ms,
            ..RetrySettings::DEFAULT
        })
}

/// `maxUsageWaitMs` and `maxTotalDelayMs` (spec §11.5–11.6): off half the
/// time, else around the waits the hint texts ask for (a minute to a few
/// hours), small, or any.
///
/// ```
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let draws: Vec<u64> = (0..200)
///     .map(|_| autoretry_testkit::strategies::wait_limit_ms().new_tree(&mut runner).unwrap().current())
///     .collect();
/// assert!(draws.iter().any(|&w| w == 0) && draws.iter().any(|&w| w > 0));
/// ```
pub fn wait_limit_ms() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => Just(0u64),
        2 => 1u64..20_000,
        2 => 60_000u64..20_000_000,
        1 => Just(u64::MAX),
        1 => any::<u64>(),
    ]
}

/// Settings with every key of spec §4 and §10.1; the keys of §11.1 keep
/// their defaults (off), for a model of sections 1–10.
///
/// ```
/// use proptest::prelude::*;
/// proptest!(|(s in autoretry_testkit::strategies::section_10_settings())| {
///     prop_assert!(!s.model_fallback && s.max_usage_wait_ms == 0 && s.max_total_delay_ms == 0);
/// });
/// ```
pub fn section_10_settings() -> impl Strategy<Value = RetrySettings> {
    (
        (
            profile(),
            prop_oneof![6 => Just(true), 1 => Just(false)],
            max_retries(),
            base_delay_ms(),
        ),
        (
            limit_ms(300_000),
            limit_ms(8000),
            jitter_pct(),
            any::<bool>(),
            classifier(),
        ),
    )
        .prop_map(
            |(
                (profile, enabled, max_retries, base_delay_ms),
                (max_delay_ms, backoff_cap_ms, jitter_pct, honor_hints, classifier),
            )| RetrySettings {
                profile,
                enabled,
                max_retries,
                base_delay_ms,
                max_delay_ms,
                backoff_cap_ms,
                jitter_pct,
                honor_hints,
                classifier,
                ..RetrySettings::DEFAULT
            },
        )
}

/// Settings with every key of spec §4, §10.1, §11.1 and §12.1: those of
/// [`section_10_settings`], then `modelFallback` (half the time),
/// `maxUsageWaitMs` and `maxTotalDelayMs` ([`wait_limit_ms`]), then the
/// stream's limits ([`stream_limit_ms`]) and `retryEmpty`.
///
/// ```
/// use proptest::prelude::*;
/// proptest!(|(s in autoretry_testkit::strategies::settings())| {
///     prop_assert!(s.jitter_pct.get() <= 100);
/// });
/// ```
pub fn settings() -> impl Strategy<Value = RetrySettings> {
    (
        section_10_settings(),
        any::<bool>(),
        wait_limit_ms(),
        wait_limit_ms(),
        (stream_limit_ms(), stream_limit_ms(), any::<bool>()),
    )
        .prop_map(
            |(settings, model_fallback, max_usage_wait_ms, max_total_delay_ms, stream)| {
                let (first_event_timeout_ms, idle_timeout_ms, retry_empty) = stream;
                RetrySettings {
                    model_fallback,
                    max_usage_wait_ms,
                    max_total_delay_ms,
                    first_event_timeout_ms,
                    idle_timeout_ms,
                    retry_empty,
                    ..settings
                }
            },
        )
}

/// A limit of the stream (spec §12.1): off (0) a third of the time, else
/// short, the `modern` 300 s, or `u64::MAX`.
///
/// ```
/// use proptest::prelude::*;
/// proptest!(|(ms in autoretry_testkit::strategies::stream_limit_ms())| {
///     prop_assert!(ms == 0 || ms >= 1);
/// });
/// ```
pub fn stream_limit_ms() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => Just(0u64),
        6 => 1u64..2000,
        1 => Just(300_000),
        1 => Just(u64::MAX),
    ]
}

/// A reading of the host's monotonic clock (spec §12.2): mostly small
/// times, so that events come before, at and after the limits, and
/// sometimes far ones and `u64::MAX`; in a sequence of steps the clock so
/// jumps ahead, stalls (the same reading) and goes backwards.
pub fn clock_ms() -> impl Strategy<Value = u64> {
    prop_oneof![
        8 => 0u64..5000,
        1 => Just(0u64),
        1 => any::<u64>(),
        1 => Just(u64::MAX),
    ]
}

/// A context window: unknown (0), small, a real model's, `u64::MAX`, any.
pub fn context_window() -> impl Strategy<Value = u64> {
    prop_oneof![
        Just(0u64),
        Just(1000),
        Just(200_000),
        Just(u64::MAX),
        any::<u64>()
    ]
}

/// Host options of spec §2 (context window, credential store; seed 0).
pub fn classic_host_options() -> impl Strategy<Value = HostOptions> {
    (context_window(), any::<bool>()).prop_map(|(context_window, credential_store)| {
        HostOptions::DEFAULT
            .with_context_window(context_window)
            .with_credential_store(credential_store)
    })
}

/// Host options with a jitter seed (spec §10.1).
///
/// ```
/// use proptest::prelude::*;
/// proptest!(|(h in autoretry_testkit::strategies::host_options())| {
///     let _ = autoretry::Machine::new(autoretry::RetrySettings::MODERN, h);
/// });
/// ```
pub fn host_options() -> impl Strategy<Value = HostOptions> {
    (
        context_window(),
        any::<bool>(),
        prop_oneof![Just(0u64), Just(42), any::<u64>()],
    )
        .prop_map(|(context_window, credential_store, seed)| HostOptions {
            context_window,
            credential_store,
            seed,
        })
}

/// An error text: one of every class of spec §3 and §10.4–10.5 (retryable,
/// overflow, usage limit, hints, near misses) most of the time, else any
/// string.
pub fn error_text() -> impl Strategy<Value = String> {
    let known: Vec<&'static str> = TEXTS.iter().chain(OPTION_TEXTS).copied().collect();
    prop_oneof![
        6 => proptest::sample::select(known).prop_map(str::to_owned),
        1 => any::<String>(),
    ]
}

/// `usage`: absent, or any counts.
pub fn usage() -> impl Strategy<Value = Option<Usage>> {
    prop_oneof![
        3 => Just(None),
        1 => (0u64..300_000, 0u64..300_000, 0u64..300_000)
            .prop_map(|(i, r, w)| Some(Usage::new(i, r).with_cache_write(w))),
        1 => any::<(u64, u64, u64)>().prop_map(|(i, r, w)| Some(Usage::new(i, r).with_cache_write(w))),
    ]
}

/// `retryAfterMs` (spec §10.2): mostly absent, else around the `modern`
/// ceiling, or the edges.
pub fn retry_after_ms() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        6 => Just(None),
        1 => Just(Some(0)),
        2 => (1u64..10_000).prop_map(Some),
        2 => (299_990u64..300_010).prop_map(Some),
        1 => Just(Some(11_180_000)),
        1 => Just(Some(u64::MAX)),
        1 => any::<u64>().prop_map(Some),
    ]
}

/// `partial` (spec §11.2): mostly `"none"`, else `"text"` or `"tools"`.
///
/// ```
/// use proptest::prelude::*;
/// proptest!(|(p in autoretry_testkit::strategies::partial())| {
///     prop_assert!(autoretry::Partial::ALL.contains(&p));
/// });
/// ```
pub fn partial() -> impl Strategy<Value = Partial> {
    prop_oneof![
        4 => Just(Partial::None),
        2 => Just(Partial::Text),
        1 => Just(Partial::Tools),
    ]
}

/// A retry budget (spec §11.4): `maxTokens` small (so a few failures reach
/// the throttle) or up to 1000, `tokenRatio` from 0.001 to 1000, and the
/// tokens anywhere from 0 to `maxTokens` (full a third of the time).
///
/// ```
/// use proptest::prelude::*;
/// proptest!(|(b in autoretry_testkit::strategies::budget())| {
///     prop_assert!(b.tokens_milli() <= b.max_tokens() * 1000);
/// });
/// ```
pub fn budget() -> impl Strategy<Value = RetryBudget> {
    (
        prop_oneof![3 => 1u32..=10, 1 => 1u32..=RetryBudget::MAX_TOKENS],
        prop_oneof![
            2 => Just(500u32),
            2 => 1u32..=2000,
            1 => 1u32..=RetryBudget::MAX_RATIO_MILLI
        ],
        prop_oneof![1 => Just(None), 2 => any::<u32>().prop_map(Some)],
    )
        .prop_map(|(max_tokens, ratio_milli, tokens)| {
            let full = RetryBudget::new(max_tokens, ratio_milli).expect("figures in range");
            match tokens {
                None => full,
                Some(t) => full
                    .with_tokens_milli(t % (max_tokens * 1000 + 1))
                    .expect("tokens in range"),
            }
        })
}

/// An assistant message with every field of spec §2, §10.2 and §11.2, owned.
///
/// ```
/// use proptest::prelude::*;
/// proptest!(|(m in autoretry_testkit::strategies::message())| {
///     let _ = m.as_message().is_retryable(200_000);
/// });
/// ```
pub fn message() -> impl Strategy<Value = MessageBuf> {
    (
        stop_reason(),
        proptest::option::weighted(0.85, error_text()),
        usage(),
        prop_oneof![5 => Just(None), 1 => Just(Some(true)), 1 => Just(Some(false))],
        retry_after_ms(),
        partial(),
        prop_oneof![3 => Just(false), 1 => Just(true)],
    )
        .prop_map(
            |(stop_reason, error_message, usage, should_retry, retry_after_ms, partial, empty)| {
                MessageBuf {
                    error_message,
                    usage,
                    should_retry,
                    retry_after_ms,
                    partial,
                    // Mostly without partial output, as hosts send it; now
                    // and then with it, which the machine refuses.
                    empty: empty && (partial == Partial::None || stop_reason == StopReason::Length),
                    ..MessageBuf::new(stop_reason)
                }
            },
        )
}

/// One input as it travels on the wire (`{"type":"agent_end",...}`),
/// owned: every input type, timers as small numbers (a machine issues 1,
/// 2, ...) or any `u64`, valid settings; never refused. Borrow it for the
/// machine with `InputLine::as_input(marked_text)`.
///
/// ```
/// use autoretry::Machine;
/// use proptest::prelude::*;
/// proptest!(|(inputs in proptest::collection::vec(autoretry_testkit::strategies::input(), 1..50))| {
///     let mut machine = Machine::default();
///     for input in &inputs {
///         let before = machine.clone();
///         if machine.handle(input.as_input("usage limit").unwrap()).is_err() {
///             prop_assert_eq!(&machine, &before); // a refusal changes nothing
///         }
///     }
/// });
/// ```
pub fn input() -> impl Strategy<Value = InputLine> {
    let answer = |switched| InputBuf::UsageLimitMarked { switched };
    let model_answer = |switched| InputBuf::ModelSwitched { switched };
    prop_oneof![
        8 => (message(), prop_oneof![3 => Just(None), 1 => any::<u64>().prop_map(Some)])
            .prop_map(|(message, now_ms)| InputBuf::AgentEnd { message, now_ms }),
        3 => message().prop_map(|message| InputBuf::MessageEnd { message }),
        6 => prop_oneof![4 => 1u64..8, 1 => any::<u64>()]
            .prop_map(|timer| InputBuf::TimerFired { timer: TimerId(timer) }),
        3 => any::<bool>().prop_map(answer),
        2 => any::<bool>().prop_map(model_answer),
        1 => Just(InputBuf::AbortRetry),
        1 => Just(InputBuf::Abort),
        1 => any::<bool>().prop_map(|enabled| InputBuf::SetAutoRetry { enabled }),
        1 => settings().prop_map(InputBuf::Settings),
        1 => clock_ms().prop_map(|now_ms| InputBuf::StreamStart { now_ms }),
        2 => clock_ms().prop_map(|now_ms| InputBuf::StreamEvent { now_ms }),
    ]
    .prop_map(InputLine::Input)
}

/// One thing that happens to a host, owned: an input of the machine, with
/// the timer and the usage-limit text left for the host to fill in
/// ([`Step::input`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A streamed message ended (`message_end`).
    MessageEnd(MessageBuf),
    /// A run of the agent ended with this message (`agent_end`), at this
    /// wall-clock time.
    AgentEnd(MessageBuf, Option<u64>),
    /// The pending timer fired: the backoff's, or the stream's watch
    /// (spec §12.2), on time (none pending: a timer the machine never
    /// issued).
    FirePending,
    /// The host sent a request (`stream_start`, spec §12.2) at this
    /// reading of its monotonic clock.
    StreamStart(u64),
    /// The host received a progress event (`stream_event`) at this
    /// reading of its monotonic clock.
    StreamEvent(u64),
    /// A timer with this id fired: stale, unknown, or by chance the pending one.
    FireTimer(u64),
    /// The host answers `mark_usage_limit` (`usage_limit_marked`) with the
    /// text it marked.
    Answer {
        /// Whether it switched to another credential.
        switched: bool,
    },
    /// The host answers `switch_model` (`model_switched`, spec §11.3) with
    /// the text of the decision.
    ModelAnswer {
        /// Whether it switched to another model.
        switched: bool,
    },
    /// The user cancels the retry (`abort_retry`, Esc).
    AbortRetry,
    /// The user aborts (`abort`).
    Abort,
    /// `set_auto_retry`.
    SetAutoRetry(bool),
    /// A new settings group (`settings`).
    Settings(RetrySettings),
}

impl Step {
    /// The machine's input for this step: `pending` is the host's pending
    /// timer (the backoff's or the watch's), `marked` the error text of the question it answers,
    /// usage limit or model ([`Step::marks`] of the step that asked it).
    ///
    /// ```
    /// use autoretry::{Input, TimerId};
    /// use autoretry_testkit::strategies::Step;
    /// assert_eq!(Step::FirePending.input(Some(TimerId(3)), ""), Input::TimerFired { timer: TimerId(3) });
    /// assert_eq!(Step::Answer { switched: true }.input(None, "usage limit"),
    ///     Input::UsageLimitMarked { switched: true, error_message: "usage limit" });
    /// assert_eq!(Step::ModelAnswer { switched: false }.input(None, "overloaded"),
    ///     Input::ModelSwitched { switched: false, error_message: "overloaded" });
    /// ```
    pub fn input<'a>(&'a self, pending: Option<TimerId>, marked: &'a str) -> Input<'a> {
        match self {
            Step::MessageEnd(message) => Input::MessageEnd {
                message: message.as_message(),
            },
            Step::AgentEnd(message, now_ms) => Input::AgentEnd {
                message: message.as_message(),
                now_ms: *now_ms,
            },
            Step::FirePending => Input::TimerFired {
                timer: pending.unwrap_or(TimerId(u64::MAX)),
            },
            Step::FireTimer(id) => Input::TimerFired {
                timer: TimerId(*id),
            },
            Step::StreamStart(now_ms) => Input::StreamStart { now_ms: *now_ms },
            Step::StreamEvent(now_ms) => Input::StreamEvent { now_ms: *now_ms },
            Step::Answer { switched } => Input::UsageLimitMarked {
                switched: *switched,
                error_message: marked,
            },
            Step::ModelAnswer { switched } => Input::ModelSwitched {
                switched: *switched,
                error_message: marked,
            },
            Step::AbortRetry => Input::AbortRetry,
            Step::Abort => Input::Abort,
            Step::SetAutoRetry(enabled) => Input::SetAutoRetry { enabled: *enabled },
            Step::Settings(settings) => Input::Settings(*settings),
        }
    }

    /// The text this step had the host keep for its answer: the error text
    /// of an `agent_end` when the machine's answer to it (what `handle`
    /// returned) asks for `mark_usage_limit` or `switch_model`, else
    /// `None` (a question asked at an answer is about the text already
    /// kept). It is borrowed from the step, not from the host, so a test
    /// keeps it across steps for [`Step::input`] while it feeds the host.
    ///
    /// ```
    /// use autoretry::{HostOptions, Machine, Output, RetrySettings, StopReason};
    /// use autoretry::MessageBuf;
    /// use autoretry_testkit::strategies::Step;
    ///
    /// // A host with a credential store asks for the usage-limit answer.
    /// let mut machine = Machine::new(RetrySettings::DEFAULT, HostOptions::DEFAULT.with_credential_store(true));
    /// let limit = Step::AgentEnd(MessageBuf::error("usage limit reached"), None);
    /// let result = machine.handle(limit.input(None, ""));
    /// assert!(matches!(result.as_deref(), Ok([Output::MarkUsageLimit { .. }])));
    /// assert_eq!(limit.marks(&result), Some("usage limit reached"));
    ///
    /// // The answer with the marked text is accepted; it marks nothing.
    /// let answer = Step::Answer { switched: true };
    /// let result = machine.handle(answer.input(None, "usage limit reached"));
    /// assert!(result.is_ok());
    /// assert_eq!(answer.marks(&result), None);
    /// ```
    pub fn marks<'o, O: AsRef<[Output<'o>]>>(&self, result: &Result<O, Refused>) -> Option<&str> {
        let asked = result.as_ref().is_ok_and(|out| {
            out.as_ref().iter().any(|o| {
                matches!(
                    o,
                    Output::MarkUsageLimit { .. } | Output::SwitchModel { .. }
                )
            })
        });
        self.error_text().filter(|_| asked)
    }

    /// The error text of an `agent_end` step: what a host keeps when the
    /// machine asks for `mark_usage_limit` or `switch_model` (see
    /// [`Step::marks`]).
    ///
    /// ```
    /// use autoretry::MessageBuf;
    /// use autoretry_testkit::strategies::Step;
    /// let step = Step::AgentEnd(MessageBuf::error("usage limit"), None);
    /// assert_eq!(step.error_text(), Some("usage limit"));
    /// assert_eq!(Step::Abort.error_text(), None);
    /// ```
    pub fn error_text(&self) -> Option<&str> {
        match self {
            Step::AgentEnd(message, _) => message.error_message.as_deref(),
            _ => None,
        }
    }
}

/// One step, weighted toward the agent's runs and the pending timer.
pub fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => (message(), prop_oneof![3 => Just(None), 1 => any::<u64>().prop_map(Some)])
            .prop_map(|(m, now)| Step::AgentEnd(m, now)),
        3 => message().prop_map(Step::MessageEnd),
        8 => Just(Step::FirePending),
        2 => prop_oneof![0u64..8, any::<u64>()].prop_map(Step::FireTimer),
        2 => clock_ms().prop_map(Step::StreamStart),
        4 => clock_ms().prop_map(Step::StreamEvent),
        4 => any::<bool>().prop_map(|switched| Step::Answer { switched }),
        3 => any::<bool>().prop_map(|switched| Step::ModelAnswer { switched }),
        1 => Just(Step::AbortRetry),
        1 => Just(Step::Abort),
        1 => any::<bool>().prop_map(Step::SetAutoRetry),
        1 => settings().prop_map(Step::Settings),
    ]
}

/// A whole host scenario: a machine's settings and host options, the
/// retry budget the host hands with every input, if any, and what happens
/// to the host, in order.
///
/// A host that shares a budget feeds each input with it and gives the
/// monitor the budget before and after:
///
/// ```
/// use autoretry::Machine;
/// use autoretry_testkit::{strategies, Monitor};
/// use proptest::prelude::*;
///
/// proptest!(|(scenario in strategies::scenario())| {
///     let mut machine = Machine::new(scenario.settings, scenario.host);
///     let mut monitor = Monitor::new(scenario.settings, scenario.host);
///     let mut budget = scenario.budget;
///     let mut marked = "";
///     for step in &scenario.steps {
///         let input = step.input(machine.pending_timer().or(machine.pending_watch()), marked);
///         match budget.as_mut() {
///             Some(budget) => {
///                 let before = *budget;
///                 let result = machine.handle_with_budget(input, budget);
///                 marked = step.marks(&result).unwrap_or(marked);
///                 monitor.observe_with_budget(input, result, machine.state(), before, *budget);
///             }
///             None => {
///                 let result = machine.handle(input);
///                 marked = step.marks(&result).unwrap_or(marked);
///                 monitor.observe(input, result, machine.state());
///             }
///         }
///     }
/// });
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scenario {
    /// The settings the machine starts with.
    pub settings: RetrySettings,
    /// The host options.
    pub host: HostOptions,
    /// The retry budget handed with every input (spec §11.4), or none.
    pub budget: Option<RetryBudget>,
    /// What happens, in order.
    pub steps: Vec<Step>,
}

/// A scenario of up to 160 steps (see the module docs for a property over
/// it).
pub fn scenario() -> impl Strategy<Value = Scenario> {
    scenario_of(1..160)
}

/// A scenario with a number of steps in `len`.
///
/// ```
/// use proptest::strategy::{Strategy, ValueTree};
/// let mut runner = proptest::test_runner::TestRunner::deterministic();
/// let scenario = autoretry_testkit::strategies::scenario_of(3..4).new_tree(&mut runner).unwrap().current();
/// assert_eq!(scenario.steps.len(), 3);
/// ```
pub fn scenario_of(len: core::ops::Range<usize>) -> impl Strategy<Value = Scenario> {
    (
        settings(),
        host_options(),
        proptest::option::of(budget()),
        proptest::collection::vec(step(), len),
    )
        .prop_map(|(settings, host, budget, steps)| Scenario {
            settings,
            host,
            budget,
            steps,
        })
}
