//! Property tests: the machine against the test kit's reference model of
//! the spec (`autoretry_testkit::model`) and the invariants of its
//! `Monitor`, step by step over long random input sequences.
//!
//! With the classic settings and none of the message fields of §10.2 the
//! machine must equal the model of sections 1–9 on random input sequences.
//! With the policy options (every key of §10.1, seeded hosts, the host's
//! message fields) the model adds the wait of §10.3; with the stream's
//! limits, its inputs and empty answers, the watchdog and the empty
//! answers of §12. Focused properties
//! check the jitter range, that a fail fast emits no start, drop or sleep,
//! and that the same seed and inputs give the same outputs.
//!
//! The default run takes 256 cases per property. The release profile of
//! these guarantees is 10,000 cases per property:
//!
//! ```text
//! PROPTEST_CASES=10000 cargo test --release --all-features --test machine model_props
//! ```
//!
//! A failing case is saved under `proptest-regressions/` and replayed first
//! on every later run; commit those files.
#![cfg(feature = "json")]

use autoretry::wire::json::{parse_value, InputLine};
use autoretry::wire::SettingsGroup;
use autoretry::{
    Event, FinalError, HostOptions, Input, JitterPct, Output, Profile, RetrySettings, TimerId,
    Usage, EMPTY_RESPONSE, MAX_OUTPUTS,
};
use autoretry_testkit::spec::expected_delay;
use autoretry_testkit::{strategies, Monitor, VectorHost, RECENT_TIMERS};
use proptest::prelude::*;
use serde_json::{json, Value};

use crate::common::proptest_config;
use crate::common::texts::*;
use autoretry_testkit::model::{Model, Msg, Out};

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/machine/model_props.txt";

#[derive(Clone, Debug)]
enum TimerPick {
    Pending,
    /// An ordinal counted back from the last sleep (already fired or
    /// cancelled, or the pending one).
    Earlier(usize),
    /// An id the machine never issued.
    Unknown(u64),
}

#[derive(Clone, Debug)]
enum Op {
    AgentEnd(Msg, Option<u64>),
    MessageEnd(Msg),
    Fire(TimerPick),
    Answer {
        switched: bool,
        wrong: Option<usize>,
    },
    AbortRetry,
    Abort,
    SetAutoRetry(bool),
    /// A settings group as JSON text, with the settings it must decode to
    /// (`None`: it must be refused).
    Settings(String, Option<RetrySettings>),
    /// `stream_start` at this time (spec §12.2).
    StreamStart(u64),
    /// `stream_event` at this time.
    StreamEvent(u64),
}

/// What the generators make: around which context window, and whether
/// with the policy options (settings keys of 10.1, message fields of 10.2,
/// texts beyond the labelled corpus) or the classic inputs alone.
/// With `stream`, the stream's inputs of section 12 (clocks that jump,
/// stall and go backwards) and empty answers too.
#[derive(Clone, Copy, Debug)]
struct Gen {
    window: u64,
    options: bool,
    stream: bool,
}

const CLASSIC: Gen = Gen {
    window: 0,
    options: false,
    stream: false,
};

impl Gen {
    const fn classic(window: u64) -> Gen {
        Gen {
            window,
            options: false,
            stream: false,
        }
    }

    const fn options(window: u64) -> Gen {
        Gen {
            window,
            options: true,
            stream: false,
        }
    }

    const fn stream(window: u64) -> Gen {
        Gen {
            window,
            options: true,
            stream: true,
        }
    }
}

/// Indices of labelled retryable texts, to make chains long.
fn retryable_index() -> impl Strategy<Value = usize> {
    let idx: Vec<usize> = (0..corpus().len())
        .filter(|&i| corpus()[i].retryable)
        .collect();
    proptest::sample::select(idx)
}

fn usage_limit_index() -> impl Strategy<Value = usize> {
    let idx: Vec<usize> = (0..corpus().len())
        .filter(|&i| corpus()[i].usage_limit && corpus()[i].retryable)
        .collect();
    proptest::sample::select(idx)
}

fn text_index(gen: Gen) -> BoxedStrategy<Option<usize>> {
    let classic = prop_oneof![
        1 => Just(None),
        4 => (0..corpus().len()).prop_map(Some),
        4 => retryable_index().prop_map(Some),
        2 => usage_limit_index().prop_map(Some),
    ];
    if gen.options {
        prop_oneof![
            6 => classic,
            2 => (0..text_count()).prop_map(Some),
            3 => hint_index().prop_map(Some),
        ]
        .boxed()
    } else {
        classic.boxed()
    }
}

/// Usage figures around the context window; with the options, cache
/// writes too.
fn usage(gen: Gen) -> BoxedStrategy<Option<Usage>> {
    let window = gen.window;
    let options = gen.options;
    let near = (0u64..3, -3i64..=3, 0u64..3).prop_map(move |(split, delta, write)| {
        let total = window.saturating_add_signed(delta);
        let cache_write = if options { total / (write + 2) } else { 0 };
        let input = (total - cache_write) / (split + 1);
        Usage::new(input, total - cache_write - input).with_cache_write(cache_write)
    });
    let any_usage = (any::<u64>(), any::<u64>(), any::<u64>())
        .prop_map(move |(i, r, w)| Usage::new(i, r).with_cache_write(if options { w } else { 0 }));
    prop_oneof![
        4 => Just(None),
        3 => near.prop_map(Some),
        1 => any_usage.prop_map(Some),
    ]
    .boxed()
}

/// `retryAfterMs` of 10.2: mostly absent, else around the modern ceiling.
fn retry_after() -> impl Strategy<Value = Option<u64>> {
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

fn should_retry() -> impl Strategy<Value = Option<bool>> {
    prop_oneof![5 => Just(None), 1 => Just(Some(true)), 1 => Just(Some(false))]
}

fn message(gen: Gen) -> BoxedStrategy<Msg> {
    let base = (strategies::stop_reason(), text_index(gen), usage(gen));
    let empty = if gen.stream {
        prop_oneof![2 => Just(false), 1 => Just(true)].boxed()
    } else {
        Just(false).boxed()
    };
    if gen.options {
        (base, should_retry(), retry_after(), empty)
            .prop_map(
                |((stop, text, usage), should_retry, retry_after, empty)| Msg {
                    stop,
                    text,
                    usage,
                    should_retry,
                    retry_after,
                    empty,
                },
            )
            .boxed()
    } else {
        base.prop_map(|(stop, text, usage)| Msg {
            stop,
            text,
            usage,
            should_retry: None,
            retry_after: None,
            empty: false,
        })
        .boxed()
    }
}

/// A group with a key given twice: refused by `SettingsGroup`.
const DUPLICATE_KEY: &str = r#"{"maxRetries":1,"maxRetries":2}"#;

/// The keys of the `retry` group (sections 4 and 10.1).
const KEYS: [&str; 9] = [
    "profile",
    "enabled",
    "maxRetries",
    "baseDelayMs",
    "maxDelayMs",
    "backoffCapMs",
    "jitterPct",
    "honorHints",
    "classifier",
];

/// Settings as JSON text: valid groups (some keys missing: they take the
/// defaults of the group's profile, 10.1) and invalid ones (sections 4 and
/// 10.1), with what they must decode to. Without the options, the keys of
/// section 4 alone.
fn settings_json(gen: Gen) -> BoxedStrategy<(String, Option<RetrySettings>)> {
    let classic = (strategies::classic_settings(), any::<[bool; 3]>()).prop_map(|(s, keep)| {
        let mut obj = serde_json::Map::new();
        let mut expected = RetrySettings::DEFAULT;
        if keep[0] {
            obj.insert("enabled".into(), json!(s.enabled));
            expected.enabled = s.enabled;
        }
        if keep[1] {
            obj.insert("maxRetries".into(), json!(s.max_retries));
            expected.max_retries = s.max_retries;
        }
        if keep[2] {
            obj.insert("baseDelayMs".into(), json!(s.base_delay_ms));
            expected.base_delay_ms = s.base_delay_ms;
        }
        (Value::Object(obj).to_string(), Some(expected))
    });
    // A profile given (or not), and each other key kept or left to it.
    let options = (
        strategies::settings(),
        prop_oneof![Just(None), strategies::profile().prop_map(Some)],
        any::<[bool; 8]>(),
    )
        .prop_map(|(s, profile, keep)| {
            let mut obj = serde_json::Map::new();
            let profile_given = profile.unwrap_or(Profile::Classic);
            if let Some(p) = profile {
                obj.insert("profile".into(), json!(p.as_str()));
            }
            let d = profile_given.defaults();
            let values = [
                json!(s.enabled),
                json!(s.max_retries),
                json!(s.base_delay_ms),
                json!(s.max_delay_ms),
                json!(s.backoff_cap_ms),
                json!(s.jitter_pct.get()),
                json!(s.honor_hints),
                json!(s.classifier.as_str()),
            ];
            for ((key, value), keep) in KEYS[1..].iter().zip(values).zip(keep) {
                if keep {
                    obj.insert((*key).into(), value);
                }
            }
            let expected = RetrySettings {
                profile: profile_given,
                enabled: if keep[0] { s.enabled } else { d.enabled },
                max_retries: if keep[1] {
                    s.max_retries
                } else {
                    d.max_retries
                },
                base_delay_ms: if keep[2] {
                    s.base_delay_ms
                } else {
                    d.base_delay_ms
                },
                max_delay_ms: if keep[3] {
                    s.max_delay_ms
                } else {
                    d.max_delay_ms
                },
                backoff_cap_ms: if keep[4] {
                    s.backoff_cap_ms
                } else {
                    d.backoff_cap_ms
                },
                jitter_pct: if keep[5] { s.jitter_pct } else { d.jitter_pct },
                honor_hints: if keep[6] {
                    s.honor_hints
                } else {
                    d.honor_hints
                },
                classifier: if keep[7] { s.classifier } else { d.classifier },
                // The keys of §11.1 and §12.1 are not generated here
                // (beyond.rs, stream.rs).
                model_fallback: d.model_fallback,
                max_usage_wait_ms: d.max_usage_wait_ms,
                max_total_delay_ms: d.max_total_delay_ms,
                first_event_timeout_ms: d.first_event_timeout_ms,
                idle_timeout_ms: d.idle_timeout_ms,
                retry_empty: d.retry_empty,
            };
            (Value::Object(obj).to_string(), Some(expected))
        });
    let invalid = prop_oneof![
        Just(r#"{"maxRetries":3.0}"#.to_owned()),
        Just(r#"{"maxRetries":1e3}"#.to_owned()),
        Just(r#"{"maxRetries":-0}"#.to_owned()),
        Just(r#"{"maxRetries":-1}"#.to_owned()),
        Just(r#"{"maxRetries":4294967296}"#.to_owned()),
        Just(r#"{"baseDelayMs":18446744073709551616}"#.to_owned()),
        Just(r#"{"baseDelayMs":null}"#.to_owned()),
        Just(r#"{"enabled":"true"}"#.to_owned()),
        Just(r#"{"enabled":1}"#.to_owned()),
        Just(r#"{"retries":3}"#.to_owned()),
        Just(DUPLICATE_KEY.to_owned()),
        Just(r#"[]"#.to_owned()),
        Just(r#"null"#.to_owned()),
        Just(r#"5"#.to_owned()),
        (any::<u32>(), "[a-zA-Z]{1,12}").prop_filter_map("a known key", |(n, key)| {
            (!KEYS.contains(&key.as_str())).then(|| format!(r#"{{"maxRetries":{n},"{key}":1}}"#))
        }),
        (1u64..u64::MAX).prop_map(|n| format!(r#"{{"baseDelayMs":-{n}}}"#)),
    ];
    // 10.1: the new keys refused.
    let invalid_options = prop_oneof![
        (101u64..=u64::MAX).prop_map(|n| format!(r#"{{"jitterPct":{n}}}"#)),
        Just(r#"{"jitterPct":25.0}"#.to_owned()),
        Just(r#"{"jitterPct":-0}"#.to_owned()),
        Just(r#"{"jitterPct":"25"}"#.to_owned()),
        Just(r#"{"profile":"Modern"}"#.to_owned()),
        Just(r#"{"profile":null}"#.to_owned()),
        Just(r#"{"profile":1}"#.to_owned()),
        Just(r#"{"classifier":"regex"}"#.to_owned()),
        Just(r#"{"classifier":null}"#.to_owned()),
        Just(r#"{"honorHints":"true"}"#.to_owned()),
        Just(r#"{"honorHints":null}"#.to_owned()),
        Just(r#"{"maxDelayMs":-1}"#.to_owned()),
        Just(r#"{"maxDelayMs":18446744073709551616}"#.to_owned()),
        Just(r#"{"backoffCapMs":1.5}"#.to_owned()),
        Just(r#"{"backoffCapMs":1e3}"#.to_owned()),
        Just(r#"{"profile":"modern","profile":"classic"}"#.to_owned()),
    ];
    if gen.options {
        prop_oneof![
            1 => classic,
            3 => options,
            1 => invalid.prop_map(|j| (j, None)),
            1 => invalid_options.prop_map(|j| (j, None)),
        ]
        .boxed()
    } else {
        prop_oneof![
            2 => classic,
            1 => invalid.prop_map(|j| (j, None)),
        ]
        .boxed()
    }
}

/// How far back `TimerPick::Earlier` reaches; the vector host keeps that many.
const EARLIER: usize = 4;
const _: () = assert!(EARLIER <= RECENT_TIMERS);

fn op(gen: Gen) -> BoxedStrategy<Op> {
    let base = base_op(gen);
    if gen.stream {
        prop_oneof![
            6 => base,
            1 => strategies::clock_ms().prop_map(Op::StreamStart),
            3 => strategies::clock_ms().prop_map(Op::StreamEvent),
        ]
        .boxed()
    } else {
        base.boxed()
    }
}

fn base_op(gen: Gen) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (message(gen), prop_oneof![3 => Just(None), 1 => any::<u64>().prop_map(Some)])
            .prop_map(|(m, now)| Op::AgentEnd(m, now)),
        3 => message(gen).prop_map(Op::MessageEnd),
        8 => Just(Op::Fire(TimerPick::Pending)),
        2 => (0..EARLIER).prop_map(|k| Op::Fire(TimerPick::Earlier(k))),
        1 => any::<u64>().prop_map(|t| Op::Fire(TimerPick::Unknown(t))),
        4 => (any::<bool>(), prop_oneof![3 => Just(None), 1 => (0..corpus().len()).prop_map(Some)])
            .prop_map(|(switched, wrong)| Op::Answer { switched, wrong }),
        1 => Just(Op::AbortRetry),
        1 => Just(Op::Abort),
        1 => any::<bool>().prop_map(Op::SetAutoRetry),
        1 => settings_json(gen).prop_map(|(j, s)| Op::Settings(j, s)),
    ]
}

fn scenario() -> impl Strategy<Value = (RetrySettings, HostOptions, Vec<Op>)> {
    (
        strategies::classic_settings(),
        strategies::classic_host_options(),
    )
        .prop_flat_map(|(s, h)| {
            (
                Just(s),
                Just(h),
                proptest::collection::vec(op(Gen::classic(h.context_window)), 1..160),
            )
        })
}

/// A scenario with the policy options: settings with every key, a seeded
/// host, option inputs.
fn option_scenario() -> impl Strategy<Value = (RetrySettings, HostOptions, Vec<Op>)> {
    (
        strategies::section_10_settings(),
        strategies::host_options(),
    )
        .prop_flat_map(|(s, h)| {
            (
                Just(s),
                Just(h),
                proptest::collection::vec(op(Gen::options(h.context_window)), 1..160),
            )
        })
}

/// A scenario with the stream of section 12: the settings of
/// [`option_scenario`] with the stream's limits and `retryEmpty`, stream
/// inputs whose clock jumps, stalls and goes backwards, empty answers.
fn stream_scenario() -> impl Strategy<Value = (RetrySettings, HostOptions, Vec<Op>)> {
    (
        strategies::section_10_settings(),
        strategies::stream_limit_ms(),
        strategies::stream_limit_ms(),
        prop_oneof![2 => Just(true), 1 => Just(false)],
        strategies::host_options(),
    )
        .prop_flat_map(|(s, first, idle, retry_empty, h)| {
            let s = s
                .with_first_event_timeout_ms(first)
                .with_idle_timeout_ms(idle)
                .with_retry_empty(retry_empty);
            (
                Just(s),
                Just(h.with_credential_store(h.credential_store)),
                proptest::collection::vec(op(Gen::stream(h.context_window)), 1..160),
            )
        })
}

// ---------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------

/// The host's timer table (the model keeps the usage-limit text itself).
type Host = VectorHost<&'static str>;

/// The machine's pending timer: the backoff's, or the stream's watch
/// (spec §12.2), never both.
fn pending(machine: &autoretry::Machine) -> Option<TimerId> {
    machine.pending_timer().or(machine.pending_watch())
}

/// A vector ordinal as the model counts.
fn ordinal(n: u64) -> usize {
    usize::try_from(n).expect("an ordinal fits usize")
}

/// Converts the machine's outputs to the model's form (timer ids become
/// ordinals through the vector host).
fn convert(out: &[Output<'_>], host: &mut Host) -> Vec<Out> {
    out.iter()
        .map(|o| match *o {
            Output::Emit(Event::Start {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            }) => Out::Start {
                attempt,
                max: max_attempts,
                delay: delay_ms,
                text: error_message.to_string(),
            },
            Output::Emit(Event::End {
                success,
                attempt,
                final_error,
            }) => Out::End {
                success,
                attempt,
                error: final_error.map(|e| e.to_string()),
                fail_fast: matches!(final_error, Some(FinalError::WaitTooLong { .. })),
            },
            Output::DropTrailingError => Out::Drop,
            Output::Sleep { ms, timer } => Out::Sleep {
                ms,
                ordinal: ordinal(host.record_sleep(timer)),
            },
            // The ordinals count `sleep` and `watch` together (spec §12.4).
            Output::Watch { ms, timer } => Out::Watch {
                ms,
                ordinal: ordinal(host.record_sleep(timer)),
            },
            Output::CancelTimer { timer } => Out::Cancel {
                ordinal: host.ordinal(timer).map_or(0, ordinal),
            },
            Output::ContinueAgent => Out::Continue,
            Output::MarkUsageLimit { retry_after_ms } => Out::Mark {
                hint: retry_after_ms,
            },
            Output::CheckCompaction => Out::Check,
            Output::AbortAgent => Out::AbortAgent,
            Output::Settled => Out::Settled,
            // The model covers sections 1–10 and 12, whose machines never
            // ask for a model or continue a partial turn.
            Output::ResumeAgent | Output::SwitchModel { .. } => {
                panic!("a section 11 output from sections 1-10 and 12: {o:?}")
            }
        })
        .collect()
}

/// Checks the number of outputs and converts them.
fn conv(
    result: Result<autoretry::Outputs<'_>, autoretry::Refused>,
    host: &mut Host,
) -> Result<Vec<Out>, autoretry::Refused> {
    result.map(|out| {
        assert!(out.len() <= MAX_OUTPUTS);
        convert(&out, host)
    })
}

/// Statistics of one run, so the tests can show the generator reaches deep
/// states, and the outputs of every step.
#[derive(Default)]
struct Reached {
    starts: u32,
    max_attempt: u32,
    refused: u32,
    marks: u32,
    fail_fasts: u32,
    /// Fail-fast ends at the usage-limit answer (10.3 step 8).
    fail_fasts_at_answer: u32,
    /// Starts decided at an `agent_end` whose delay differs from
    /// `base × 2^(n−1)`.
    reshaped_delays: u32,
    /// Stalls declared (spec §12.2 rule 4).
    stalls: u32,
    /// Starts decided as a stall, and as an empty answer (spec §12.3).
    stall_starts: u32,
    empty_starts: u32,
    /// Per step: the outputs (`None`: refused), and the settings in force
    /// before the step.
    steps: Vec<(Option<Vec<Out>>, RetrySettings)>,
}

/// Runs `ops` (and a final `abort_retry`) through the machine, under the
/// monitor, and through the model; they must agree at every step. With
/// `classic`, the model is that of sections 1–9 alone.
fn run(
    settings: RetrySettings,
    host: HostOptions,
    ops: &[Op],
    classic: bool,
) -> Result<Reached, TestCaseError> {
    let mut mon = Monitor::new(settings, host);
    let mut model = Model::new(settings, host, classic);
    let mut timers = Host::new();
    let mut reached = Reached::default();
    for (step, op) in ops.iter().chain([Op::AbortRetry].iter()).enumerate() {
        let before = mon.machine().clone();
        let settings_before = model.settings();
        let (result, expected) = match op {
            Op::AgentEnd(m, now) => {
                let result = mon.step(Input::AgentEnd {
                    message: m.message(),
                    now_ms: *now,
                });
                (conv(result, &mut timers), model.agent_end(m, *now))
            }
            Op::MessageEnd(m) => (
                conv(
                    mon.step(Input::MessageEnd {
                        message: m.message(),
                    }),
                    &mut timers,
                ),
                model.message_end(m),
            ),
            Op::Fire(pick) => {
                let (timer, ordinal) = match *pick {
                    TimerPick::Pending => match pending(mon.machine()) {
                        Some(t) => (t, timers.ordinal(t).map_or(0, ordinal)),
                        None => (TimerId(u64::MAX), 0),
                    },
                    TimerPick::Earlier(k) => {
                        // The ordinal `k` sleeps back from the last one.
                        match timers.sleeps().checked_sub(k as u64).filter(|&n| n > 0) {
                            Some(n) => (
                                timers.machine_timer(n).expect("kept: k < EARLIER"),
                                ordinal(n),
                            ),
                            None => (TimerId(u64::MAX - 1), 0),
                        }
                    }
                    TimerPick::Unknown(t) => {
                        (TimerId(t), timers.ordinal(TimerId(t)).map_or(0, ordinal))
                    }
                };
                (
                    conv(mon.step(Input::TimerFired { timer }), &mut timers),
                    Some(model.timer(ordinal)),
                )
            }
            Op::Answer { switched, wrong } => {
                let right = match model.awaited_text() {
                    Some(text) => text.to_owned(),
                    _ => corpus()[0].text.clone(),
                };
                let text = match wrong {
                    Some(i) => corpus()[*i].text.clone(),
                    None => right,
                };
                let result = mon.step(Input::UsageLimitMarked {
                    switched: *switched,
                    error_message: &text,
                });
                (conv(result, &mut timers), model.answer(*switched, &text))
            }
            Op::AbortRetry => (
                conv(mon.step(Input::AbortRetry), &mut timers),
                Some(model.cancel()),
            ),
            Op::Abort => (
                conv(mon.step(Input::Abort), &mut timers),
                Some(model.abort()),
            ),
            Op::StreamStart(now_ms) => (
                conv(
                    mon.step(Input::StreamStart { now_ms: *now_ms }),
                    &mut timers,
                ),
                model.stream_start(*now_ms),
            ),
            Op::StreamEvent(now_ms) => (
                conv(
                    mon.step(Input::StreamEvent { now_ms: *now_ms }),
                    &mut timers,
                ),
                Some(model.stream_event(*now_ms)),
            ),
            Op::SetAutoRetry(enabled) => {
                model.set_auto_retry(*enabled);
                (
                    conv(
                        mon.step(Input::SetAutoRetry { enabled: *enabled }),
                        &mut timers,
                    ),
                    Some(vec![]),
                )
            }
            Op::Settings(text, expected_settings) => {
                // The strict decoding of the group (wire::SettingsGroup).
                let direct = serde_json::from_str::<SettingsGroup>(text)
                    .map(|g| g.0)
                    .ok();
                prop_assert_eq!(direct, *expected_settings, "decoding {}", text);
                // The input-line decoding (wire::json) agrees, duplicate
                // keys included (the line's parser refuses them).
                let decoded = parse_value(&format!(r#"{{"type":"settings","settings":{text}}}"#))
                    .ok()
                    .map(|line| InputLine::from_json(&line).expect("a settings input"));
                prop_assert_eq!(
                    decoded.as_ref().and_then(|d| d.as_input("").ok()),
                    direct.map(Input::Settings),
                    "decoding the input line of {}",
                    text
                );
                match direct {
                    Some(s) => {
                        model.set(s);
                        (
                            conv(mon.step(Input::Settings(s)), &mut timers),
                            Some(vec![]),
                        )
                    }
                    None => {
                        // Refused by the host: nothing reaches the machine.
                        prop_assert_eq!(mon.machine(), &before);
                        reached.refused += 1;
                        reached.steps.push((None, settings_before));
                        continue;
                    }
                }
            }
        };
        match (result, expected) {
            (Err(_), None) => {
                prop_assert_eq!(mon.machine(), &before, "refused at step {}", step);
                reached.refused += 1;
                reached.steps.push((None, settings_before));
            }
            (Ok(got), Some(expected)) => {
                prop_assert_eq!(&got, &expected, "step {} {:?}", step, op);
                for o in &got {
                    match o {
                        Out::AbortAgent if matches!(op, Op::Fire(_)) => reached.stalls += 1,
                        Out::Start { text, .. } if text.starts_with("Stream stalled: ") => {
                            reached.starts += 1;
                            reached.stall_starts += 1;
                        }
                        Out::Start { text, .. } if text == EMPTY_RESPONSE => {
                            reached.starts += 1;
                            reached.empty_starts += 1;
                        }
                        Out::Start { attempt, delay, .. } => {
                            reached.starts += 1;
                            reached.max_attempt = reached.max_attempt.max(*attempt);
                            let decided_here = matches!(op, Op::AgentEnd(..));
                            if decided_here
                                && *delay != expected_delay(settings_before.base_delay_ms, *attempt)
                            {
                                reached.reshaped_delays += 1;
                            }
                        }
                        Out::Mark { .. } => reached.marks += 1,
                        Out::End {
                            fail_fast: true, ..
                        } => {
                            reached.fail_fasts += 1;
                            if matches!(op, Op::Answer { .. }) {
                                reached.fail_fasts_at_answer += 1;
                            }
                        }
                        _ => {}
                    }
                }
                reached.steps.push((Some(got), settings_before));
            }
            (got, expected) => {
                return Err(TestCaseError::fail(format!(
                    "step {step} {op:?}: machine {got:?}, model {expected:?}"
                )))
            }
        }
        let state = mon.machine().state();
        prop_assert_eq!(
            (
                state.auto_retry_enabled,
                state.is_retrying,
                state.retry_attempt
            ),
            (model.settings().enabled, model.is_open(), model.attempt()),
            "state after step {} {:?}",
            step,
            op
        );
        prop_assert_eq!(mon.machine().settings(), model.settings());
    }
    // The final abort_retry leaves everything idle.
    let state = mon.machine().state();
    prop_assert!(!state.is_retrying && state.retry_attempt == 0);
    prop_assert_eq!(mon.machine().pending_timer(), None);
    prop_assert_eq!(mon.fail_fasts(), u64::from(reached.fail_fasts));
    Ok(reached)
}

/// The machine's outputs (and refusals) for `ops`, as text, under the
/// monitor; the usage-limit answers carry the awaited text.
fn outputs_of(settings: RetrySettings, host: HostOptions, ops: &[Op]) -> Vec<String> {
    let mut mon = Monitor::new(settings, host);
    let mut seen = Vec::new();
    for op in ops {
        let awaited = mon.awaited_text().map(str::to_owned);
        let input = match op {
            Op::AgentEnd(m, now) => Input::AgentEnd {
                message: m.message(),
                now_ms: *now,
            },
            Op::MessageEnd(m) => Input::MessageEnd {
                message: m.message(),
            },
            Op::Fire(_) => match pending(mon.machine()) {
                Some(timer) => Input::TimerFired { timer },
                None => Input::TimerFired { timer: TimerId(0) },
            },
            Op::Answer { switched, .. } => {
                let result = mon.step(Input::UsageLimitMarked {
                    switched: *switched,
                    error_message: awaited.as_deref().unwrap_or(""),
                });
                seen.push(format!("{result:?}"));
                continue;
            }
            Op::AbortRetry => Input::AbortRetry,
            Op::Abort => Input::Abort,
            Op::SetAutoRetry(enabled) => Input::SetAutoRetry { enabled: *enabled },
            Op::Settings(_, Some(s)) => Input::Settings(*s),
            Op::Settings(_, None) => continue,
            Op::StreamStart(now_ms) => Input::StreamStart { now_ms: *now_ms },
            Op::StreamEvent(now_ms) => Input::StreamEvent { now_ms: *now_ms },
        };
        seen.push(format!("{:?}", mon.step(input)));
    }
    seen.push(format!("{:?}", mon.machine()));
    seen
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    /// Sections 1–9 (the classic settings, no message field of 10.2):
    /// long random input sequences, where the machine equals the reference
    /// model of those sections step by step (outputs, refusals, state), and
    /// the monitor's invariants hold.
    #[test]
    fn machine_follows_the_model((settings, host, ops) in scenario()) {
        run(settings, host, &ops, true)?;
    }

    /// Sections 1–9 with the default settings and host, where chains run to
    /// their end most often.
    #[test]
    fn default_machine_follows_the_model(ops in proptest::collection::vec(op(CLASSIC), 1..200)) {
        run(RetrySettings::DEFAULT, HostOptions::default(), &ops, true)?;
    }

    /// Sections 1–9 on a host with a credential store and a small window:
    /// the usage-limit path and overflow by usage.
    #[test]
    fn store_machine_follows_the_model(ops in proptest::collection::vec(op(Gen::classic(1000)), 1..200)) {
        run(
            RetrySettings::DEFAULT,
            HostOptions::DEFAULT.with_context_window(1000).with_credential_store(true),
            &ops,
            true,
        )?;
    }

    /// Section 10: settings with every key (changed by settings inputs on
    /// the way), seeded hosts, messages with the host's fields; the machine
    /// equals the model with 10.3's wait (cap, ceiling, the jitter draws,
    /// hints under honorHints, `delay = max(backoff, h)`, fail fast on
    /// both paths) step by step.
    #[test]
    fn options_machine_follows_the_model((settings, host, ops) in option_scenario()) {
        run(settings, host, &ops, false)?;
    }

    /// The modern profile on a host with a credential store: the
    /// usage-limit hand-off with hints over the ceiling, answered switched
    /// (the wait is 0) or not (fail fast at the answer).
    #[test]
    fn modern_store_machine_follows_the_model(
        seed in any::<u64>(),
        ops in proptest::collection::vec(op(Gen::options(1000)), 1..200),
    ) {
        run(
            RetrySettings::MODERN,
            HostOptions::DEFAULT.with_context_window(1000).with_credential_store(true).with_seed(seed),
            &ops,
            false,
        )?;
    }

    /// 10.3 step 4: with jitter and no hint, every delay lies in
    /// `(backoff·(1 − p/100), backoff]` for a non-zero backoff (the capped
    /// backoff of steps 1–3 under the settings in force), and is 0 for a
    /// zero backoff.
    #[test]
    fn jittered_delays_lie_in_their_range(
        (settings, host, ops) in (strategies::section_10_settings(), strategies::host_options(), 1u8..=100).prop_flat_map(|(s, h, p)| (
            Just(s.with_jitter_pct(JitterPct::new(p).expect("at most 100")).with_honor_hints(false)),
            Just(h.with_credential_store(false)),
            proptest::collection::vec(op(Gen::options(h.context_window)), 1..120),
        )),
    ) {
        let reached = run(settings, host, &ops, false)?;
        for (out, s) in &reached.steps {
            for o in out.iter().flatten() {
                let Out::Start { attempt, delay: d, .. } = o else { continue };
                // A settings change with honorHints on has no hint here:
                // only the hint-free starts are checked.
                if s.honor_hints || s.jitter_pct.get() == 0 {
                    continue;
                }
                let mut backoff = expected_delay(s.base_delay_ms, *attempt);
                for limit in [s.backoff_cap_ms, s.max_delay_ms] {
                    if limit > 0 {
                        backoff = backoff.min(limit);
                    }
                }
                let p = u128::from(s.jitter_pct.get());
                if backoff == 0 {
                    prop_assert_eq!(*d, 0);
                } else {
                    prop_assert!(*d <= backoff, "{} above {}", d, backoff);
                    prop_assert!(
                        u128::from(*d) * 100 > u128::from(backoff) * (100 - p),
                        "{} at or below {}·(1 − {}/100)", d, backoff, p
                    );
                }
            }
        }
    }

    /// 10.3 step 8: an end that fails fast comes with no start, no
    /// `drop_trailing_error` and no `sleep`, settles the chain and hands
    /// the message to the compaction check; the machine is idle after it.
    #[test]
    fn a_fail_fast_never_starts_drops_or_sleeps(
        (settings, host, ops) in (strategies::section_10_settings(), strategies::host_options(), 1u64..5000, any::<bool>()).prop_flat_map(|(s, h, ceiling, store)| (
            Just(s.with_max_delay_ms(ceiling).with_honor_hints(true)),
            Just(h.with_credential_store(store)),
            proptest::collection::vec(op(Gen::options(h.context_window)), 1..120),
        )),
    ) {
        let reached = run(settings, host, &ops, false)?;
        for (out, _) in &reached.steps {
            let Some(out) = out else { continue };
            if out.iter().any(|o| matches!(o, Out::End { fail_fast: true, .. })) {
                prop_assert!(
                    !out.iter().any(|o| matches!(o, Out::Start { .. } | Out::Drop | Out::Sleep { .. })),
                    "{:?}", out
                );
                let tail: Vec<&Out> = out.iter().skip(1).collect();
                prop_assert_eq!(tail, vec![&Out::Settled, &Out::Check]);
            }
        }
    }

    /// Section 12 beside section 10: the stream's limits and `retryEmpty`
    /// (changed by settings inputs on the way), stream inputs whose clock
    /// jumps, stalls and goes backwards, timers fired on time, late or
    /// never, empty answers; the machine equals the model step by step
    /// (every watch and its ordinal, the cancel of the stream's watch
    /// first, the stall's `abort_agent`, the stalled or empty `agent_end`
    /// decided as its text, refusals).
    #[test]
    fn stream_machine_follows_the_model((settings, host, ops) in stream_scenario()) {
        run(settings, host, &ops, false)?;
    }

    /// 10.6: the same seed and inputs give the same outputs, step by step,
    /// and the same machine at the end.
    #[test]
    fn the_same_seed_and_inputs_give_the_same_outputs((settings, host, ops) in option_scenario()) {
        let first = outputs_of(settings, host, &ops);
        let again = outputs_of(settings, host, &ops);
        prop_assert_eq!(first, again);
    }
}

/// The generator reaches what the properties are about: full chains, the
/// usage-limit answer, refusals; with the options, fail-fast ends on both
/// paths and delays reshaped by the cap, the ceiling, jitter and hints.
#[test]
fn the_generator_reaches_deep_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let hosts = [
        HostOptions::default(),
        HostOptions::DEFAULT
            .with_context_window(1000)
            .with_credential_store(true),
    ];
    for (host, options) in hosts.into_iter().flat_map(|h| [(h, false), (h, true)]) {
        let gen = Gen {
            window: host.context_window,
            options,
            stream: false,
        };
        let settings = if options {
            RetrySettings::MODERN
        } else {
            RetrySettings::DEFAULT
        };
        let mut total = Reached::default();
        // The options' runs check more per step: fewer of them.
        let runs = if options { 100 } else { 200 };
        for _ in 0..runs {
            let ops = proptest::collection::vec(op(gen), 100..101)
                .new_tree(&mut runner)
                .expect("a tree")
                .current();
            let r = run(settings, host, &ops, !options).expect("passes");
            total.starts += r.starts;
            total.max_attempt = total.max_attempt.max(r.max_attempt);
            total.refused += r.refused;
            total.marks += r.marks;
            total.fail_fasts += r.fail_fasts;
            total.fail_fasts_at_answer += r.fail_fasts_at_answer;
            total.reshaped_delays += r.reshaped_delays;
        }
        println!(
            "{host:?}, options {options}: {} starts, deepest {}, {} refused, {} marks, {} fail fast ({} at the answer), {} reshaped delays",
            total.starts,
            total.max_attempt,
            total.refused,
            total.marks,
            total.fail_fasts,
            total.fail_fasts_at_answer,
            total.reshaped_delays
        );
        assert!(total.starts > runs, "{} starts", total.starts);
        assert!(
            total.max_attempt >= 3,
            "deepest attempt {}",
            total.max_attempt
        );
        assert!(total.refused > 50, "{} refusals", total.refused);
        if host.credential_store {
            assert!(total.marks > 50, "{} usage-limit marks", total.marks);
        }
        if options {
            assert!(total.fail_fasts > 20, "{} fail-fast ends", total.fail_fasts);
            if host.credential_store {
                assert!(
                    total.fail_fasts_at_answer >= 3,
                    "{} fail-fast ends at the answer",
                    total.fail_fasts_at_answer
                );
            }
            assert!(
                total.reshaped_delays > 100,
                "{} reshaped delays",
                total.reshaped_delays
            );
        } else {
            assert_eq!((total.fail_fasts, total.reshaped_delays), (0, 0));
        }
    }
}

/// The stream generator reaches what section 12 is about: watches that
/// fire into stalls, and `agent_end`s decided as a stall and as an empty
/// answer.
#[test]
fn the_stream_generator_reaches_section_12() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut total = Reached::default();
    for _ in 0..200 {
        let (settings, host, ops) = stream_scenario()
            .new_tree(&mut runner)
            .expect("a tree")
            .current();
        let r = run(settings, host, &ops, false).expect("passes");
        total.stalls += r.stalls;
        total.stall_starts += r.stall_starts;
        total.empty_starts += r.empty_starts;
        total.starts += r.starts;
    }
    println!(
        "stream: {} stalls, {} starts ({} as a stall, {} as an empty answer)",
        total.stalls, total.starts, total.stall_starts, total.empty_starts
    );
    assert!(total.stalls > 50, "{} stalls", total.stalls);
    assert!(
        total.stall_starts > 10,
        "{} stall starts",
        total.stall_starts
    );
    assert!(
        total.empty_starts > 10,
        "{} empty starts",
        total.empty_starts
    );
}

/// The monitor accepts every step of every vector (sections 1–9 and the
/// options of section 10) on the real machine: its reading of the spec
/// agrees with the vectors wherever the machine does.
#[test]
fn the_monitor_accepts_every_vector() {
    use autoretry_testkit::vector::VectorLine;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut steps = 0;
    for dir in ["tests/vectors", "tests/vectors/options"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("the vectors")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("a vector file");
            let mut mon = Monitor::new(RetrySettings::DEFAULT, HostOptions::DEFAULT);
            let mut host = VectorHost::<String>::new();
            for line in text.split('\n') {
                match VectorLine::parse(line).expect("a vector line") {
                    None => {}
                    Some(VectorLine::Scenario(header)) => {
                        mon = Monitor::new(header.settings, header.host);
                        host.reset();
                    }
                    Some(VectorLine::Step(input)) => {
                        steps += 1;
                        let marked = host.marked_text().to_owned();
                        let Ok(input) = input.as_input(&marked) else {
                            continue;
                        };
                        let Some(input) = host.machine_input(input) else {
                            continue;
                        };
                        if let Ok(out) = mon.step(input) {
                            for o in out {
                                host.vector_output(&input, o);
                            }
                        };
                    }
                }
            }
        }
    }
    assert!(steps > 200, "only {steps} steps");
}
