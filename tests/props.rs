//! Property tests: the machine against a reference model of the spec and the
//! invariants of `autoretry_testkit::fuzzing::Monitor`, and the classifier's
//! properties (spec §3).
//!
//! The default run takes 256 cases per property. The release profile of
//! these guarantees is 10,000 cases per property:
//!
//! ```text
//! PROPTEST_CASES=10000 cargo test --release --all-features --test props
//! ```
//!
//! A failing case is saved under `proptest-regressions/` and replayed first
//! on every later run; commit those files.
#![cfg(feature = "json")]

use std::sync::OnceLock;

use autoretry::classify::{
    classify, classify_bytes, matches_overflow, matches_overflow_bytes, matches_retryable,
    matches_retryable_bytes, matches_usage_limit, matches_usage_limit_bytes, retry_hint_ms,
    retry_hint_ms_bytes,
};
use autoretry::wire::json::InputOwned;
use autoretry::wire::SettingsGroup;
use autoretry::{
    AssistantMessage, Event, HostOptions, Input, Output, RetrySettings, StopReason, TimerId, Usage,
    MAX_OUTPUTS,
};
use autoretry_testkit::fuzzing::{matches_overflow_unanchored, Monitor};
use autoretry_testkit::{VectorHost, RECENT_TIMERS};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

/// `PROPTEST_CASES` (default 256).
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------
// Texts and their labels
// ---------------------------------------------------------------------------

/// A corpus text with the labels of `tests/corpus/errors.jsonl` (computed
/// from the spec, not by this crate).
#[derive(Clone, Debug)]
struct Labelled {
    text: String,
    retryable: bool,
    overflow: bool,
    usage_limit: bool,
    hint_ms: Option<u64>,
}

fn corpus() -> &'static [Labelled] {
    static CORPUS: OnceLock<Vec<Labelled>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        include_str!("corpus/errors.jsonl")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("a corpus line");
                Labelled {
                    text: v["text"].as_str().expect("text").to_owned(),
                    retryable: v["retryable"].as_bool().expect("retryable"),
                    overflow: v["overflow"].as_bool().expect("overflow"),
                    usage_limit: v["usageLimit"].as_bool().expect("usageLimit"),
                    hint_ms: v["hintMs"].as_u64(),
                }
            })
            .collect()
    })
}

fn corpus_text() -> impl Strategy<Value = String> {
    (0..corpus().len()).prop_map(|i| corpus()[i].text.clone())
}

// ---------------------------------------------------------------------------
// The reference model (spec §5, §6, §6a, §9), written from the spec
// ---------------------------------------------------------------------------

/// Outputs as the model writes them: timers are ordinals (the n-th sleep).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Out {
    Start {
        attempt: u32,
        max: u32,
        delay: u64,
        text: String,
    },
    End {
        success: bool,
        attempt: u32,
        error: Option<String>,
    },
    Drop,
    Sleep {
        ms: u64,
        ordinal: usize,
    },
    Cancel {
        ordinal: usize,
    },
    Continue,
    Mark {
        hint: Option<u64>,
    },
    Check,
    AbortAgent,
    Settled,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Wait {
    /// No timer and no answer pending.
    Nothing,
    /// The backoff timer with this ordinal.
    Timer(usize),
    /// The usage-limit answer for this text, with the figures fixed at the
    /// decision: attempt, maxRetries, delay.
    Answer(String, u32, u32, u64),
}

#[derive(Clone, Debug)]
struct Model {
    enabled: bool,
    max_retries: u32,
    base_delay: u64,
    window: u64,
    store: bool,
    attempt: u32,
    open: bool,
    wait: Wait,
    sleeps: usize,
}

/// A message as the model sees it: its stop reason, its text with labels
/// (from the corpus), its usage.
#[derive(Clone, Debug)]
struct Msg {
    stop: StopReason,
    text: Option<usize>,
    usage: Option<Usage>,
}

/// `base × 2^(attempt−1)`, saturating, with wide integers.
fn delay(base: u64, attempt: u32) -> u64 {
    let mut d = u128::from(base);
    for _ in 1..attempt {
        d *= 2;
        if d > u128::from(u64::MAX) {
            return u64::MAX;
        }
    }
    u64::try_from(d).unwrap_or(u64::MAX)
}

const CANCELLED: &str = "Retry cancelled";

impl Model {
    fn new(s: RetrySettings, host: HostOptions) -> Self {
        Model {
            enabled: s.enabled,
            max_retries: s.max_retries,
            base_delay: s.base_delay_ms,
            window: host.context_window,
            store: host.credential_store,
            attempt: 0,
            open: false,
            wait: Wait::Nothing,
            sleeps: 0,
        }
    }

    fn agent_may_run(&self) -> bool {
        self.wait == Wait::Nothing
    }

    fn succeeds(&mut self, m: &Msg, out: &mut Vec<Out>) {
        let success = !matches!(m.stop, StopReason::Error | StopReason::Aborted);
        if success && self.attempt > 0 {
            out.push(Out::End {
                success: true,
                attempt: self.attempt,
                error: None,
            });
            self.attempt = 0;
        }
    }

    fn message_end(&mut self, m: &Msg) -> Option<Vec<Out>> {
        if !self.agent_may_run() {
            return None;
        }
        let mut out = Vec::new();
        self.succeeds(m, &mut out);
        Some(out)
    }

    fn agent_end(&mut self, m: &Msg, now: Option<u64>) -> Option<Vec<Out>> {
        if !self.agent_may_run() {
            return None;
        }
        let mut out = Vec::new();
        self.succeeds(m, &mut out);
        let label = m.text.map(|i| &corpus()[i]);
        let text = label.map(|l| l.text.as_str()).filter(|t| !t.is_empty());
        let is_error = m.stop == StopReason::Error;
        let usage_overflow = m.usage.is_some_and(|u| {
            self.window != 0
                && u128::from(u.input) + u128::from(u.cache_read) > u128::from(self.window)
        });
        let text_overflow = is_error && text.is_some() && label.is_some_and(|l| l.overflow);
        let retryable = is_error
            && text.is_some()
            && label.is_some_and(|l| l.retryable)
            && !usage_overflow
            && !text_overflow;
        if !(self.enabled && retryable) {
            if self.attempt > 0 {
                out.push(Out::End {
                    success: false,
                    attempt: self.attempt,
                    error: Some(text.unwrap_or("Unknown error").to_owned()),
                });
                self.attempt = 0;
            }
            if self.open {
                out.push(Out::Settled);
                self.open = false;
            }
            out.push(Out::Check);
            return Some(out);
        }
        let label = label.expect("retryable has a text");
        let text = label.text.clone();
        self.attempt += 1;
        self.open = true;
        if self.attempt > self.max_retries {
            out.push(Out::End {
                success: false,
                attempt: self.attempt - 1,
                error: Some(text),
            });
            self.attempt = 0;
            self.open = false;
            out.push(Out::Settled);
            out.push(Out::Check);
            return Some(out);
        }
        let d = delay(self.base_delay, self.attempt);
        if self.store && label.usage_limit {
            // The corpus labels the hint without a clock; with one, the
            // absolute forms may count too (checked by the classifier
            // properties below).
            let hint = match now {
                None => label.hint_ms,
                Some(now) => retry_hint_ms(&text, Some(now)),
            };
            out.push(Out::Mark { hint });
            self.wait = Wait::Answer(text, self.attempt, self.max_retries, d);
        } else {
            self.start(text, self.max_retries, d, &mut out);
        }
        Some(out)
    }

    fn start(&mut self, text: String, max: u32, d: u64, out: &mut Vec<Out>) {
        out.push(Out::Start {
            attempt: self.attempt,
            max,
            delay: d,
            text,
        });
        out.push(Out::Drop);
        self.sleeps += 1;
        out.push(Out::Sleep {
            ms: d,
            ordinal: self.sleeps,
        });
        self.wait = Wait::Timer(self.sleeps);
    }

    fn timer(&mut self, ordinal: usize) -> Vec<Out> {
        if self.wait == Wait::Timer(ordinal) {
            self.wait = Wait::Nothing;
            vec![Out::Continue]
        } else {
            vec![]
        }
    }

    fn answer(&mut self, switched: bool, text: &str) -> Option<Vec<Out>> {
        let Wait::Answer(marked, attempt, max, d) = self.wait.clone() else {
            return Some(vec![]);
        };
        if marked != text {
            return None;
        }
        debug_assert_eq!(attempt, self.attempt);
        let mut out = Vec::new();
        self.start(marked, max, if switched { 0 } else { d }, &mut out);
        Some(out)
    }

    fn cancel(&mut self) -> Vec<Out> {
        let mut out = Vec::new();
        match self.wait.clone() {
            Wait::Timer(ordinal) => {
                out.push(Out::Cancel { ordinal });
                out.push(Out::End {
                    success: false,
                    attempt: self.attempt,
                    error: Some(CANCELLED.into()),
                });
                out.push(Out::Settled);
                out.push(Out::Check);
            }
            Wait::Answer(..) => {
                let started = self.attempt - 1;
                if started > 0 {
                    out.push(Out::End {
                        success: false,
                        attempt: started,
                        error: Some(CANCELLED.into()),
                    });
                }
                out.push(Out::Settled);
                out.push(Out::Check);
            }
            Wait::Nothing if self.open => {
                if self.attempt > 0 {
                    out.push(Out::End {
                        success: false,
                        attempt: self.attempt,
                        error: Some(CANCELLED.into()),
                    });
                }
                out.push(Out::Settled);
            }
            Wait::Nothing => {}
        }
        self.attempt = 0;
        self.open = false;
        self.wait = Wait::Nothing;
        out
    }
}

// ---------------------------------------------------------------------------
// Operations and their generators
// ---------------------------------------------------------------------------

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
}

fn stop_reason() -> impl Strategy<Value = StopReason> {
    prop_oneof![
        6 => Just(StopReason::Error),
        2 => Just(StopReason::Stop),
        1 => Just(StopReason::ToolUse),
        1 => Just(StopReason::Length),
        1 => Just(StopReason::Aborted),
    ]
}

/// Indices of retryable texts, to make chains long.
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

fn text_index() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![
        1 => Just(None),
        4 => (0..corpus().len()).prop_map(Some),
        4 => retryable_index().prop_map(Some),
        2 => usage_limit_index().prop_map(Some),
    ]
}

/// Usage figures around the context window `window`.
fn usage(window: u64) -> impl Strategy<Value = Option<Usage>> {
    let near = (0u64..3, -3i64..=3).prop_map(move |(split, delta)| {
        let total = window.saturating_add_signed(delta);
        let input = total / (split + 1);
        Usage::new(input, total - input)
    });
    prop_oneof![
        4 => Just(None),
        3 => near.prop_map(Some),
        1 => (any::<u64>(), any::<u64>()).prop_map(|(input, cache_read)| Some(Usage::new(input, cache_read))),
    ]
}

fn message(window: u64) -> impl Strategy<Value = Msg> {
    (stop_reason(), text_index(), usage(window)).prop_map(|(stop, text, usage)| Msg {
        stop,
        text,
        usage,
    })
}

fn settings_values() -> impl Strategy<Value = RetrySettings> {
    (
        prop_oneof![6 => Just(true), 1 => Just(false)],
        prop_oneof![4 => 0u32..6, 1 => Just(u32::MAX), 1 => any::<u32>()],
        prop_oneof![
            3 => Just(2000u64),
            2 => 0u64..4,
            1 => Just(u64::MAX),
            1 => Just(1u64 << 63),
            1 => any::<u64>(),
        ],
    )
        .prop_map(|(enabled, max_retries, base_delay_ms)| RetrySettings {
            enabled,
            max_retries,
            base_delay_ms,
            ..RetrySettings::DEFAULT
        })
}

/// A group with a key given twice: refused by `SettingsGroup`.
const DUPLICATE_KEY: &str = r#"{"maxRetries":1,"maxRetries":2}"#;

/// Settings as JSON text: valid groups (some keys missing: they default)
/// and invalid ones (spec §4), with what they must decode to.
fn settings_json() -> impl Strategy<Value = (String, Option<RetrySettings>)> {
    let valid = (settings_values(), any::<[bool; 3]>()).prop_map(|(s, keep)| {
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
        (any::<u32>(), "[a-zA-Z]{1,8}").prop_filter_map("a known key", |(n, key)| {
            (!["enabled", "maxRetries", "baseDelayMs"].contains(&key.as_str()))
                .then(|| format!(r#"{{"maxRetries":{n},"{key}":1}}"#))
        }),
        (1u64..u64::MAX).prop_map(|n| format!(r#"{{"baseDelayMs":-{n}}}"#)),
    ];
    prop_oneof![
        2 => valid,
        1 => invalid.prop_map(|j| (j, None)),
    ]
}

/// How far back `TimerPick::Earlier` reaches; the vector host keeps that many.
const EARLIER: usize = 4;
const _: () = assert!(EARLIER <= RECENT_TIMERS);

fn op(window: u64) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (message(window), prop_oneof![3 => Just(None), 1 => any::<u64>().prop_map(Some)])
            .prop_map(|(m, now)| Op::AgentEnd(m, now)),
        3 => message(window).prop_map(Op::MessageEnd),
        8 => Just(Op::Fire(TimerPick::Pending)),
        2 => (0..EARLIER).prop_map(|k| Op::Fire(TimerPick::Earlier(k))),
        1 => any::<u64>().prop_map(|t| Op::Fire(TimerPick::Unknown(t))),
        4 => (any::<bool>(), prop_oneof![3 => Just(None), 1 => (0..corpus().len()).prop_map(Some)])
            .prop_map(|(switched, wrong)| Op::Answer { switched, wrong }),
        1 => Just(Op::AbortRetry),
        1 => Just(Op::Abort),
        1 => any::<bool>().prop_map(Op::SetAutoRetry),
        1 => settings_json().prop_map(|(j, s)| Op::Settings(j, s)),
    ]
}

fn host() -> impl Strategy<Value = HostOptions> {
    (
        prop_oneof![
            Just(0u64),
            Just(1000),
            Just(200_000),
            Just(u64::MAX),
            any::<u64>()
        ],
        any::<bool>(),
    )
        .prop_map(|(context_window, credential_store)| HostOptions {
            context_window,
            credential_store,
            ..HostOptions::DEFAULT
        })
}

fn scenario() -> impl Strategy<Value = (RetrySettings, HostOptions, Vec<Op>)> {
    (settings_values(), host()).prop_flat_map(|(s, h)| {
        (
            Just(s),
            Just(h),
            proptest::collection::vec(op(h.context_window), 1..160),
        )
    })
}

// ---------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------

/// The host's timer table (the model keeps the usage-limit text itself).
type Host = VectorHost<&'static str>;

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
                text: error_message.to_owned(),
            },
            Output::Emit(Event::End {
                success,
                attempt,
                final_error,
            }) => Out::End {
                success,
                attempt,
                error: final_error.map(|e| e.to_string()),
            },
            Output::DropTrailingError => Out::Drop,
            Output::Sleep { ms, timer } => Out::Sleep {
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

/// Statistics of one run, so the test can show the generator reaches deep
/// states.
#[derive(Default)]
struct Reached {
    starts: u32,
    max_attempt: u32,
    refused: u32,
    marks: u32,
}

fn run(settings: RetrySettings, host: HostOptions, ops: &[Op]) -> Result<Reached, TestCaseError> {
    let mut mon = Monitor::new(settings, host);
    let mut model = Model::new(settings, host);
    let mut timers = Host::new();
    let mut reached = Reached::default();
    for (step, op) in ops.iter().chain([Op::AbortRetry].iter()).enumerate() {
        let owned_message = |m: &Msg| m.text.map(|i| corpus()[i].text.as_str());
        let before = mon.machine().clone();
        let (result, expected) = match op {
            Op::AgentEnd(m, now) => {
                let message = AssistantMessage {
                    stop_reason: m.stop,
                    error_message: owned_message(m),
                    usage: m.usage,
                    should_retry: None,
                    retry_after_ms: None,
                };
                let result = mon.step(Input::AgentEnd {
                    message,
                    now_ms: *now,
                });
                (conv(result, &mut timers), model.agent_end(m, *now))
            }
            Op::MessageEnd(m) => {
                let message = AssistantMessage {
                    stop_reason: m.stop,
                    error_message: owned_message(m),
                    usage: m.usage,
                    should_retry: None,
                    retry_after_ms: None,
                };
                (
                    conv(mon.step(Input::MessageEnd { message }), &mut timers),
                    model.message_end(m),
                )
            }
            Op::Fire(pick) => {
                let (timer, ordinal) = match *pick {
                    TimerPick::Pending => match mon.machine().pending_timer() {
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
                let right = match &model.wait {
                    Wait::Answer(t, ..) => t.clone(),
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
            Op::Abort => {
                let mut out = model.cancel();
                out.push(Out::AbortAgent);
                (conv(mon.step(Input::Abort), &mut timers), Some(out))
            }
            Op::SetAutoRetry(enabled) => {
                model.enabled = *enabled;
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
                // The input-line decoding (wire::json) agrees, except that a
                // JSON value cannot show a duplicate key (it keeps the last).
                if text != DUPLICATE_KEY {
                    let line: Value = serde_json::from_str(&format!(
                        r#"{{"type":"settings","settings":{text}}}"#
                    ))
                    .expect("the op is JSON");
                    let decoded = InputOwned::from_json(&line).expect("a settings input");
                    prop_assert_eq!(
                        decoded.as_input("").ok(),
                        direct.map(Input::Settings),
                        "decoding the input line of {}",
                        text
                    );
                }
                match direct {
                    Some(s) => {
                        model.enabled = s.enabled;
                        model.max_retries = s.max_retries;
                        model.base_delay = s.base_delay_ms;
                        (
                            conv(mon.step(Input::Settings(s)), &mut timers),
                            Some(vec![]),
                        )
                    }
                    None => {
                        // Refused by the host: nothing reaches the machine.
                        prop_assert_eq!(mon.machine(), &before);
                        reached.refused += 1;
                        continue;
                    }
                }
            }
        };
        match (result, expected) {
            (Err(_), None) => {
                prop_assert_eq!(mon.machine(), &before, "refused at step {}", step);
                reached.refused += 1;
            }
            (Ok(got), Some(expected)) => {
                prop_assert_eq!(&got, &expected, "step {} {:?}", step, op);
                for o in &got {
                    match o {
                        Out::Start { attempt, .. } => {
                            reached.starts += 1;
                            reached.max_attempt = reached.max_attempt.max(*attempt);
                        }
                        Out::Mark { .. } => reached.marks += 1,
                        _ => {}
                    }
                }
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
            (model.enabled, model.open, model.attempt),
            "state after step {} {:?}",
            step,
            op
        );
    }
    // The final abort_retry leaves everything idle.
    let state = mon.machine().state();
    prop_assert!(!state.is_retrying && state.retry_attempt == 0);
    prop_assert_eq!(mon.machine().pending_timer(), None);
    Ok(reached)
}

proptest! {
    #![proptest_config(config())]

    /// Long random input sequences: the machine equals the reference model
    /// step by step (outputs, refusals, state), and the monitor's
    /// invariants hold.
    #[test]
    fn machine_follows_the_model((settings, host, ops) in scenario()) {
        run(settings, host, &ops)?;
    }

    /// The same with the default settings and host, where chains run to
    /// their end most often.
    #[test]
    fn default_machine_follows_the_model(ops in proptest::collection::vec(op(0), 1..200)) {
        run(RetrySettings::DEFAULT, HostOptions::default(), &ops)?;
    }

    /// A host with a credential store and a small window: the usage-limit
    /// path and overflow by usage.
    #[test]
    fn store_machine_follows_the_model(ops in proptest::collection::vec(op(1000), 1..200)) {
        run(
            RetrySettings::DEFAULT,
            HostOptions::DEFAULT.with_context_window(1000).with_credential_store(true),
            &ops,
        )?;
    }
}

/// The generator reaches what the properties are about: full chains, the
/// usage-limit answer, refusals.
#[test]
fn the_generator_reaches_deep_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    for host in [
        HostOptions::default(),
        HostOptions::DEFAULT
            .with_context_window(1000)
            .with_credential_store(true),
    ] {
        let mut total = Reached::default();
        for _ in 0..200 {
            let ops = proptest::collection::vec(op(host.context_window), 100..101)
                .new_tree(&mut runner)
                .expect("a tree")
                .current();
            let r = run(RetrySettings::DEFAULT, host, &ops).expect("passes");
            total.starts += r.starts;
            total.max_attempt = total.max_attempt.max(r.max_attempt);
            total.refused += r.refused;
            total.marks += r.marks;
        }
        assert!(total.starts > 200, "{} starts", total.starts);
        assert!(
            total.max_attempt >= 3,
            "deepest attempt {}",
            total.max_attempt
        );
        assert!(total.refused > 50, "{} refusals", total.refused);
        if host.credential_store {
            assert!(total.marks > 50, "{} usage-limit marks", total.marks);
        }
    }
}

// ---------------------------------------------------------------------------
// Classifier properties (spec §3)
// ---------------------------------------------------------------------------

/// Text with the characters that matter to the patterns: letters of the
/// patterns, digits, separators, line terminators, non-ASCII letters.
fn texty() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => corpus_text(),
        2 => "[a-zA-Z0-9 _.:=,;-]{0,12}",
        1 => proptest::sample::select(vec![
            "rate", "limit", "usage", "overloaded", "429", "500", "503", "context", "window",
            "exceeded", "too long", "n_ctx", "tokens", "prompt", "400", "413", "(no body)",
            "status code", "retry-after", "x-ratelimit-reset", "\n", "\u{2028}", "\u{130}",
            "\u{131}", "\u{17F}", "\u{212A}", "é", "😀", "\u{FFFD}", "\t",
        ]).prop_map(str::to_owned),
        1 => any::<String>(),
    ];
    proptest::collection::vec(piece, 0..5).prop_map(|v| v.concat())
}

fn flip_case(text: &str, flips: &[bool]) -> String {
    text.chars()
        .zip(flips.iter().cycle())
        .map(|(c, &f)| {
            if f && c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else if f && c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c
            }
        })
        .collect()
}

/// Replaces the ASCII letters `i`, `s`, `k` (either case) chosen by `picks`
/// with `with(letter)`; returns the new text and the text with the chosen
/// letters removed.
fn substitute(text: &str, picks: &[bool], with: impl Fn(char) -> char) -> (String, String) {
    let mut replaced = String::new();
    let mut removed = String::new();
    let mut n = 0;
    for c in text.chars() {
        if matches!(c.to_ascii_lowercase(), 'i' | 's' | 'k') {
            let pick = picks.get(n % picks.len().max(1)).copied().unwrap_or(false);
            n += 1;
            if pick {
                replaced.push(with(c));
                continue;
            }
        }
        replaced.push(c);
        removed.push(c);
    }
    (replaced, removed)
}

fn folding(c: char, variant: bool) -> char {
    match (c.to_ascii_lowercase(), variant) {
        ('i', false) => '\u{130}',
        ('i', true) => '\u{131}',
        ('s', _) => '\u{17F}',
        _ => '\u{212A}',
    }
}

/// The monotone predicates, in a fixed order.
fn monotone(t: &str) -> [bool; 4] {
    [
        matches_retryable(t),
        matches_usage_limit(t),
        matches_overflow(t),
        matches_overflow_unanchored(t),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// ASCII case never changes a label (nor the hint).
    #[test]
    fn ascii_case_changes_nothing(text in texty(), flips in proptest::collection::vec(any::<bool>(), 1..8), now in any::<Option<u64>>()) {
        let flipped = flip_case(&text, &flips);
        prop_assert_eq!(classify(&flipped), classify(&text));
        prop_assert_eq!(retry_hint_ms(&flipped, now), retry_hint_ms(&text, now));
    }

    /// `İ ı ſ K` in place of `i`/`s`/`k` classify exactly like a letter that
    /// folds nowhere (`é`), and never match more than the text without them.
    #[test]
    fn folding_letters_never_match(text in texty(), picks in proptest::collection::vec(any::<bool>(), 1..6), variant in any::<bool>()) {
        let (folded, removed) = substitute(&text, &picks, |c| folding(c, variant));
        let (neutral, _) = substitute(&text, &picks, |_| 'é');
        prop_assert_eq!(classify(&folded), classify(&neutral), "{:?}", folded);
        for (with, without) in monotone(&folded).into_iter().zip(monotone(&removed)) {
            prop_assert!(!with || without, "{:?} matches more than {:?}", folded, removed);
        }
    }

    /// On corpus texts that match, turning a letter the pattern needs into
    /// its folding look-alike never creates a match the neutral letter would
    /// not (the same statement, on the texts where it bites).
    #[test]
    fn folding_letters_in_matching_texts(i in 0..corpus().len(), picks in proptest::collection::vec(any::<bool>(), 1..4), variant in any::<bool>()) {
        let text = &corpus()[i].text;
        let (folded, removed) = substitute(text, &picks, |c| folding(c, variant));
        let (neutral, _) = substitute(text, &picks, |_| '\u{FFFD}');
        prop_assert_eq!(classify(&folded), classify(&neutral));
        for (with, without) in monotone(&folded).into_iter().zip(monotone(&removed)) {
            prop_assert!(!with || without);
        }
    }

    /// Appending text never loses a match of a monotone predicate; prepending
    /// never loses one of the unanchored patterns.
    #[test]
    fn more_text_never_loses_a_match(text in texty(), extra in texty()) {
        let appended = format!("{text}{extra}");
        for (before, after) in monotone(&text).into_iter().zip(monotone(&appended)) {
            prop_assert!(!before || after, "{:?} -> {:?}", text, appended);
        }
        let prepended = format!("{extra}{text}");
        let [r, u, _, o] = monotone(&text);
        let [r2, u2, _, o2] = monotone(&prepended);
        prop_assert!((!r || r2) && (!u || u2) && (!o || o2), "{:?} -> {:?}", text, prepended);
    }

    /// The bytes entry points read bytes as `String::from_utf8_lossy` does.
    #[test]
    fn bytes_equal_lossy_strings(
        bytes in prop_oneof![
            any::<Vec<u8>>(),
            (texty(), any::<Vec<u8>>(), any::<prop::sample::Index>()).prop_map(|(t, junk, at)| {
                let mut b = t.into_bytes();
                let at = at.index(b.len() + 1);
                b.splice(at..at, junk);
                b
            }),
        ],
        now in any::<Option<u64>>(),
    ) {
        let lossy = String::from_utf8_lossy(&bytes);
        prop_assert_eq!(classify_bytes(&bytes), classify(&lossy));
        prop_assert_eq!(matches_retryable_bytes(&bytes), matches_retryable(&lossy));
        prop_assert_eq!(matches_overflow_bytes(&bytes), matches_overflow(&lossy));
        prop_assert_eq!(matches_usage_limit_bytes(&bytes), matches_usage_limit(&lossy));
        prop_assert_eq!(retry_hint_ms_bytes(&bytes, now), retry_hint_ms(&lossy, now));
    }

    /// Hints never panic, and the integer rules saturate as spec §3.5 says
    /// (computed here with wide integers).
    #[test]
    fn hints_saturate(
        rule in 0usize..3,
        digits in "[0-9]{1,40}",
        ws1 in "[ \t]{0,2}",
        sep in prop_oneof![Just(':'), Just('=')],
        ws2 in "[ \t]{0,2}",
        prefix in "[a-z ]{0,10}",
        suffix in prop_oneof![Just(String::new()), "[ ,;][a-z ]{0,10}"],
        flips in proptest::collection::vec(any::<bool>(), 1..5),
        now in any::<Option<u64>>(),
    ) {
        let name = ["retry-after-ms", "x-ratelimit-reset-ms", "x-ratelimit-reset"][rule];
        let text = format!("{prefix}{}{ws1}{sep}{ws2}{digits}{suffix}", flip_case(name, &flips));
        // Digits saturate at u64::MAX.
        let v: u128 = digits.parse::<u128>().map_or(u128::from(u64::MAX), |v| v.min(u128::from(u64::MAX)));
        let max = u128::from(u64::MAX);
        let expected: Option<u128> = match rule {
            0 => Some(v),
            1 if v <= 1_000_000_000_000 => Some(v),
            1 => now.map(|now| v.saturating_sub(u128::from(now))),
            _ if v <= 1_000_000_000 => Some(v * 1000),
            _ => now.map(|now| (v * 1000).min(max).saturating_sub(u128::from(now))),
        };
        let expected = expected.map(|e| u64::try_from(e.min(max)).expect("fits"));
        prop_assert_eq!(retry_hint_ms(&text, now), expected, "{:?}", text);
    }

    /// Any text and any clock: no panic, and the hint does not depend on
    /// the entry point.
    #[test]
    fn hints_never_panic(text in texty(), tail in "[0-9eE.+:TZz-]{0,30}", now in any::<Option<u64>>()) {
        for name in ["retry-after: ", "retry-after-ms=", "x-ratelimit-reset-ms:", "x-ratelimit-reset ="] {
            let t = format!("{text}{name}{tail}");
            prop_assert_eq!(retry_hint_ms(&t, now), retry_hint_ms_bytes(t.as_bytes(), now));
        }
    }
}

/// The predicates left out of the monotonicity properties are indeed not
/// monotone: the anchored overflow pattern and the `retryable` label.
#[test]
fn anchored_overflow_and_the_retryable_label_are_not_monotone() {
    assert!(matches_overflow("413 (no body)"));
    assert!(!matches_overflow("x 413 (no body)"));
    assert!(classify("503").retryable);
    assert!(!classify("503 prompt is too long").retryable);
}
