//! The C ABI (`autoretry-ffi`) driven natively: every vector through it
//! (sections 1–9 through both the §4 entry points and the `_ex` ones, the
//! options of §10 through the `_ex` ones), its JSON against `wire`'s serde
//! output byte for byte, random scripts against the library, and every error
//! code. The pool is shared by the whole process, so the tests here take turns.

use std::fs;
use std::path::Path;
use std::sync::Mutex;

use autoretry::classify::Classifier;
use autoretry::wire::json::InputLine;
use autoretry::{
    HostOptions, Input, InputBuf, JitterPct, Machine, MessageBuf, Output, Outputs, Partial,
    Profile, RetryBudget, RetrySettings, StopReason, TimerId, Usage,
};
use autoretry_ffi::*;
use autoretry_testkit::vector::VectorLine;
use autoretry_testkit::VectorHost;
use proptest::prelude::*;
use serde_json::Value;

static TURN: Mutex<()> = Mutex::new(());

pub(crate) fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn stop_code(reason: StopReason) -> u32 {
    match reason {
        StopReason::Stop => STOP_STOP,
        StopReason::Length => STOP_LENGTH,
        StopReason::ToolUse => STOP_TOOL_USE,
        StopReason::Error => STOP_ERROR,
        StopReason::Aborted => STOP_ABORTED,
    }
}

fn profile_code(profile: Profile) -> u32 {
    match profile {
        Profile::Classic => PROFILE_CLASSIC,
        Profile::Modern => PROFILE_MODERN,
        other => panic!("no C ABI code for {other:?}"),
    }
}

fn classifier_code(classifier: Classifier) -> u32 {
    match classifier {
        Classifier::Classic => CLASSIFIER_CLASSIC,
        Classifier::Extended => CLASSIFIER_EXTENDED,
        Classifier::Curated => CLASSIFIER_CURATED,
        other => panic!("no C ABI code for {other:?}"),
    }
}

fn should_retry_code(verdict: Option<bool>) -> i32 {
    match verdict {
        None => SHOULD_RETRY_ABSENT,
        Some(false) => SHOULD_RETRY_NO,
        Some(true) => SHOULD_RETRY_YES,
    }
}

/// Which entry points a host uses for machines, settings and messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    /// `autoretry_new`, `autoretry_settings`, `autoretry_message_end`,
    /// `autoretry_agent_end`: the §4 settings and the §2 message only.
    Classic,
    /// The `_ex` forms: every option of §10.
    Ex,
    /// `autoretry_new_c` and `autoretry_handle_json`: the input struct with
    /// every field (spec §11's too), outputs as JSON, and a retry budget.
    Struct,
    /// As `Struct`, but `stream_start` and `stream_event` through
    /// `autoretry_stream_start` and `autoretry_stream_event`.
    StreamScalars,
}

/// The `PARTIAL_*` code of a message's `partial`.
fn partial_code(partial: Partial) -> u32 {
    match partial {
        Partial::None => PARTIAL_NONE,
        Partial::Text => PARTIAL_TEXT,
        Partial::Tools => PARTIAL_TOOLS,
    }
}

/// The whole `retry` group as the C form's struct.
fn settings_struct(s: RetrySettings) -> AutoretrySettings {
    AutoretrySettings {
        profile: profile_code(s.profile),
        enabled: u32::from(s.enabled),
        max_retries: s.max_retries,
        jitter_pct: u32::from(s.jitter_pct.get()),
        base_delay_ms: s.base_delay_ms,
        max_delay_ms: s.max_delay_ms,
        backoff_cap_ms: s.backoff_cap_ms,
        honor_hints: u32::from(s.honor_hints),
        classifier: classifier_code(s.classifier),
        model_fallback: u32::from(s.model_fallback),
        max_usage_wait_ms: s.max_usage_wait_ms,
        max_total_delay_ms: s.max_total_delay_ms,
        first_event_timeout_ms: s.first_event_timeout_ms,
        idle_timeout_ms: s.idle_timeout_ms,
        retry_empty: u32::from(s.retry_empty),
    }
}

/// The profile of settings the `_ex` entry points can give: the keys of
/// spec §11.1 at their defaults. (They leave the keys of §12.1 at their
/// classic defaults too, whatever the profile; a vector with a stream
/// input or an `empty` message goes through the input struct, and the
/// byte comparison with the library's machine catches any other.)
fn without_section_11(s: RetrySettings) -> Profile {
    let off = RetrySettings::DEFAULT;
    let keys = |s: RetrySettings| (s.model_fallback, s.max_usage_wait_ms, s.max_total_delay_ms);
    assert_eq!(keys(s), keys(off), "beyond the _ex entry points");
    s.profile
}

/// A retry budget in the module's table, freed on drop.
struct Budget(i32);

impl Budget {
    fn new(budget: RetryBudget) -> Self {
        let b = autoretry_budget_new(
            budget.max_tokens(),
            budget.ratio_milli(),
            1,
            budget.tokens_milli(),
        );
        assert!(b > 0, "autoretry_budget_new: {b}");
        Budget(b)
    }

    /// Its tokens in thousandths.
    fn tokens_milli(&self) -> u32 {
        let milli = autoretry_budget_tokens(self.0);
        u32::try_from(milli).unwrap_or_else(|_| panic!("autoretry_budget_tokens: {milli}"))
    }
}

impl Drop for Budget {
    fn drop(&mut self) {
        assert_eq!(autoretry_budget_free(self.0), 0);
    }
}

/// The settings the §4 entry points give: the three keys, the rest classic.
fn classic_form(s: RetrySettings) -> RetrySettings {
    RetrySettings::DEFAULT
        .with_enabled(s.enabled)
        .with_max_retries(s.max_retries)
        .with_base_delay_ms(s.base_delay_ms)
}

/// A machine in the pool, freed on drop, and the budget its inputs name
/// (0: none).
struct Handle(i32, Api, i32);

impl Handle {
    fn new(api: Api, settings: RetrySettings, host: HostOptions) -> Self {
        let h = match api {
            Api::Classic => {
                assert_eq!(
                    settings,
                    classic_form(settings),
                    "beyond the §4 entry point"
                );
                assert_eq!(host.seed, 0, "beyond the §4 entry point");
                autoretry_new(
                    u32::from(settings.enabled),
                    settings.max_retries,
                    settings.base_delay_ms,
                    host.context_window,
                    u32::from(host.credential_store),
                )
            }
            // SAFETY: the struct is live.
            Api::Struct | Api::StreamScalars => unsafe {
                autoretry_new_c(
                    &settings_struct(settings),
                    host.context_window,
                    u32::from(host.credential_store),
                    host.seed,
                )
            },
            Api::Ex => autoretry_new_ex(
                profile_code(without_section_11(settings)),
                u32::from(settings.enabled),
                settings.max_retries,
                settings.base_delay_ms,
                settings.max_delay_ms,
                settings.backoff_cap_ms,
                u32::from(settings.jitter_pct.get()),
                u32::from(settings.honor_hints),
                classifier_code(settings.classifier),
                host.context_window,
                u32::from(host.credential_store),
                host.seed,
            ),
        };
        assert!(h >= 0, "autoretry_new: {h}");
        Handle(h, api, 0)
    }

    /// The input in the C form's struct, naming this handle's budget.
    fn struct_input(&self, input: &InputBuf) -> AutoretryInput {
        let mut c = AutoretryInput {
            budget: self.2,
            ..AutoretryInput::default()
        };
        match input {
            InputBuf::MessageEnd { message } | InputBuf::AgentEnd { message, .. } => {
                c.kind = INPUT_MESSAGE_END;
                c.stop_reason = stop_code(message.stop_reason);
                (c.text, c.text_len) = match &message.error_message {
                    Some(t) => (t.as_ptr(), t.len() as i32),
                    None => (std::ptr::null(), -1),
                };
                if let Some(usage) = message.usage {
                    c.has_usage = 1;
                    (c.usage_input, c.usage_cache_read, c.usage_cache_write) =
                        (usage.input, usage.cache_read, usage.cache_write);
                }
                c.should_retry = should_retry_code(message.should_retry);
                if let Some(ms) = message.retry_after_ms {
                    (c.has_retry_after, c.retry_after_ms) = (1, ms);
                }
                c.partial = partial_code(message.partial);
                c.empty = u32::from(message.empty);
                if let InputBuf::AgentEnd { now_ms, .. } = input {
                    c.kind = INPUT_AGENT_END;
                    if let Some(now) = now_ms {
                        (c.has_now, c.now_ms) = (1, *now);
                    }
                }
            }
            InputBuf::TimerFired { timer } => {
                (c.kind, c.timer) = (INPUT_TIMER_FIRED, self.host_timer(timer.get()));
            }
            InputBuf::UsageLimitMarked { switched, .. } => {
                (c.kind, c.flag) = (INPUT_USAGE_LIMIT_MARKED, u32::from(*switched));
            }
            InputBuf::ModelSwitched { switched, .. } => {
                (c.kind, c.flag) = (INPUT_MODEL_SWITCHED, u32::from(*switched));
            }
            InputBuf::AbortRetry => c.kind = INPUT_ABORT_RETRY,
            InputBuf::Abort => c.kind = INPUT_ABORT,
            InputBuf::SetAutoRetry { enabled } => {
                (c.kind, c.flag) = (INPUT_SET_AUTO_RETRY, u32::from(*enabled));
            }
            InputBuf::Settings(s) => {
                (c.kind, c.settings) = (INPUT_SETTINGS, settings_struct(*s));
            }
            InputBuf::StreamStart { now_ms } => {
                (c.kind, c.has_now, c.now_ms) = (INPUT_STREAM_START, 1, *now_ms);
            }
            InputBuf::StreamEvent { now_ms } => {
                (c.kind, c.has_now, c.now_ms) = (INPUT_STREAM_EVENT, 1, *now_ms);
            }
        }
        c
    }

    /// Feeds one input; `Ok(json)` or the error code.
    fn feed(&self, input: &InputBuf) -> Result<String, i32> {
        let mut out = vec![0u8; OUT_BUFFER_LEN];
        let (o, cap) = (out.as_mut_ptr(), out.len() as u32);
        let h = self.0;
        let stream = matches!(
            input,
            InputBuf::StreamStart { .. } | InputBuf::StreamEvent { .. }
        );
        if self.1 == Api::Struct || self.1 == Api::StreamScalars && !stream {
            let mut c = self.struct_input(input);
            // The message's `headers` (spec §13.1), pointing into it.
            let headers: Vec<AutoretryHeader> = match input {
                InputBuf::MessageEnd { message } | InputBuf::AgentEnd { message, .. } => message
                    .headers
                    .iter()
                    .map(|(n, v)| c_header(n, v))
                    .collect(),
                _ => Vec::new(),
            };
            if !headers.is_empty() {
                (c.headers, c.headers_len) = (headers.as_ptr(), headers.len() as u32);
            }
            // SAFETY: the struct, its text, its headers and `out` are live,
            // disjoint and of the given lengths.
            let n = unsafe { autoretry_handle_json(h, &c, o, cap) };
            if n < 0 {
                return Err(n);
            }
            return Ok(String::from_utf8(out[..n as usize].to_vec()).expect("UTF-8"));
        }
        // SAFETY: texts and `out` are live, disjoint and of the given lengths.
        let n = unsafe {
            match input {
                InputBuf::MessageEnd { message } | InputBuf::AgentEnd { message, .. } => {
                    self.feed_message(input, message, o, cap)
                }
                InputBuf::TimerFired { timer } => {
                    autoretry_timer_fired(h, self.host_timer(timer.get()), o, cap)
                }
                InputBuf::UsageLimitMarked { switched, .. } => {
                    autoretry_usage_limit_marked(h, u32::from(*switched), o, cap)
                }
                InputBuf::AbortRetry => autoretry_abort_retry(h, o, cap),
                InputBuf::Abort => autoretry_abort(h, o, cap),
                InputBuf::SetAutoRetry { enabled } => {
                    autoretry_set_auto_retry(h, u32::from(*enabled), o, cap)
                }
                InputBuf::Settings(s) => match self.1 {
                    Api::Classic => {
                        assert_eq!(*s, classic_form(*s), "beyond the §4 entry point");
                        autoretry_settings(
                            h,
                            u32::from(s.enabled),
                            s.max_retries,
                            s.base_delay_ms,
                            o,
                            cap,
                        )
                    }
                    Api::Ex | Api::Struct | Api::StreamScalars => autoretry_settings_ex(
                        h,
                        profile_code(without_section_11(*s)),
                        u32::from(s.enabled),
                        s.max_retries,
                        s.base_delay_ms,
                        s.max_delay_ms,
                        s.backoff_cap_ms,
                        u32::from(s.jitter_pct.get()),
                        u32::from(s.honor_hints),
                        classifier_code(s.classifier),
                        o,
                        cap,
                    ),
                },
                InputBuf::ModelSwitched { switched, .. } => {
                    autoretry_model_switched(h, u32::from(*switched), o, cap)
                }
                InputBuf::StreamStart { now_ms } => autoretry_stream_start(h, *now_ms, o, cap),
                InputBuf::StreamEvent { now_ms } => autoretry_stream_event(h, *now_ms, o, cap),
            }
        };
        if n < 0 {
            return Err(n);
        }
        Ok(String::from_utf8(out[..n as usize].to_vec()).expect("UTF-8"))
    }

    /// A `message_end` or `agent_end` through this handle's entry points.
    ///
    /// # Safety
    ///
    /// `o` valid for writes of `cap` bytes.
    unsafe fn feed_message(
        &self,
        input: &InputBuf,
        message: &MessageBuf,
        o: *mut u8,
        cap: u32,
    ) -> i32 {
        let h = self.0;
        let (ptr, len) = match &message.error_message {
            Some(t) => (t.as_ptr(), t.len() as i32),
            None => (std::ptr::null(), -1),
        };
        let usage = message.usage.unwrap_or_default();
        let has_usage = u32::from(message.usage.is_some());
        let stop = stop_code(message.stop_reason);
        let now = match input {
            InputBuf::AgentEnd { now_ms, .. } => Some(*now_ms),
            _ => None,
        };
        let has_now = |now: Option<u64>| u32::from(now.is_some());
        // SAFETY: the text is live for `len` bytes, `o` by the contract.
        unsafe {
            match self.1 {
                Api::Classic => {
                    let extra = (
                        usage.cache_write,
                        message.should_retry,
                        message.retry_after_ms,
                    );
                    assert_eq!(extra, (0, None, None), "beyond the §4 entry point");
                    match now {
                        Some(now) => autoretry_agent_end(
                            h,
                            stop,
                            ptr,
                            len,
                            has_usage,
                            usage.input,
                            usage.cache_read,
                            has_now(now),
                            now.unwrap_or(0),
                            o,
                            cap,
                        ),
                        None => autoretry_message_end(
                            h,
                            stop,
                            ptr,
                            len,
                            has_usage,
                            usage.input,
                            usage.cache_read,
                            o,
                            cap,
                        ),
                    }
                }
                Api::Ex | Api::Struct | Api::StreamScalars => {
                    assert_eq!(
                        (message.partial, message.empty),
                        (Partial::None, false),
                        "beyond the _ex entry points"
                    );
                    let verdict = should_retry_code(message.should_retry);
                    let has_after = u32::from(message.retry_after_ms.is_some());
                    let after = message.retry_after_ms.unwrap_or(0);
                    match now {
                        Some(now) => autoretry_agent_end_ex(
                            h,
                            stop,
                            ptr,
                            len,
                            has_usage,
                            usage.input,
                            usage.cache_read,
                            usage.cache_write,
                            verdict,
                            has_after,
                            after,
                            has_now(now),
                            now.unwrap_or(0),
                            o,
                            cap,
                        ),
                        None => autoretry_message_end_ex(
                            h,
                            stop,
                            ptr,
                            len,
                            has_usage,
                            usage.input,
                            usage.cache_read,
                            usage.cache_write,
                            verdict,
                            has_after,
                            after,
                            o,
                            cap,
                        ),
                    }
                }
            }
        }
    }

    /// The timer id the module shows for the machine's own timer `id`.
    fn host_timer(&self, id: u64) -> u64 {
        host_timer(self.0, id)
    }

    /// The library's outputs with the timer ids the module shows.
    fn host_outputs<'a>(&self, mut outputs: Outputs<'a>) -> Outputs<'a> {
        for output in &mut outputs {
            if let Output::Sleep { timer, .. }
            | Output::Watch { timer, .. }
            | Output::CancelTimer { timer } = output
            {
                *timer = TimerId(self.host_timer(timer.get()));
            }
        }
        outputs
    }

    fn state(&self) -> Value {
        let mut out = [0u8; 128];
        // SAFETY: `out` is live and `out.len()` bytes long.
        let n = unsafe { autoretry_state(self.0, out.as_mut_ptr(), out.len() as u32) };
        assert!(n > 0, "autoretry_state: {n}");
        serde_json::from_slice(&out[..n as usize]).unwrap()
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        assert_eq!(autoretry_free(self.0), 0);
    }
}

/// The timer id the module shows for the machine's own timer `id` on the
/// machine of `handle`: the slot's generation (the handle's bits above its
/// low 8) above the low 40 bits.
pub(crate) fn host_timer(handle: i32, id: u64) -> u64 {
    ((handle as u64) >> 8) << 40 | id
}

/// What one vector file gave through the ABI.
#[derive(Debug, Default)]
struct FileRun {
    name: String,
    scenarios: usize,
    steps: usize,
    passed: usize,
    /// One message per step that differs from the vector.
    failures: Vec<String>,
}

/// Replays a vector file through the ABI with `api`'s entry points. On every
/// step the module's bytes must be those serde_json writes for the library's
/// own machine fed the same input (else this panics: the ABI is wrong); a
/// step whose outputs, state or refusal differ from the vector is a failure.
fn replay_through_abi(path: &Path, api: Api) -> FileRun {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = fs::read_to_string(path).unwrap();
    let mut run = FileRun {
        name,
        ..FileRun::default()
    };
    let mut handle: Option<Handle> = None;
    // The scenario's budget in the module (dropped after the machine) and
    // natively.
    let mut budget: Option<Budget> = None;
    let mut native_budget: Option<RetryBudget> = None;
    // The same machine natively, whose outputs serde_json writes: the
    // module's bytes must be those, timer ids included. The vector host
    // maps its timers (the module's are the same) and keeps the
    // usage-limit text for it; the module keeps its own copy.
    let mut native = Machine::default();
    let mut host = VectorHost::<String>::new();
    let mut scenario = String::new();
    for (index, line) in text.split('\n').enumerate() {
        let at = format!("{}:{} [{scenario}] ({api:?})", run.name, index + 1);
        let input = match VectorLine::parse(line).unwrap() {
            None => continue,
            Some(VectorLine::Scenario(header)) => {
                // The old machine is freed before the new one is made.
                drop(handle.take());
                drop(budget.take());
                if header.budget.is_some() {
                    assert_ne!(api, Api::Classic, "a budget beyond the JSON entry points");
                    assert_ne!(api, Api::Ex, "a budget beyond the JSON entry points");
                }
                budget = header.budget.map(Budget::new);
                native_budget = header.budget;
                let mut h = Handle::new(api, header.settings, header.host);
                h.2 = budget.as_ref().map_or(0, |b| b.0);
                handle = Some(h);
                native = Machine::new(header.settings, header.host);
                host.reset();
                scenario = header.name;
                run.scenarios += 1;
                continue;
            }
            Some(VectorLine::Step(input)) => input,
        };
        let h = handle.as_ref().expect("a scenario line first");
        run.steps += 1;
        let want: Value = serde_json::from_str(line).unwrap();
        let want_refused = want.get("refused") == Some(&Value::Bool(true));
        // Timer ordinals to the module's ids; one never produced is skipped.
        let input = match input {
            InputLine::Input(InputBuf::TimerFired { timer }) => {
                match host.machine_timer(timer.get()) {
                    Some(id) => InputLine::Input(InputBuf::TimerFired { timer: id }),
                    None => {
                        if want["out"] == Value::Array(vec![]) && !want_refused {
                            run.passed += 1;
                        } else {
                            run.failures
                                .push(format!("{at}: timer {} was never produced", timer.get()));
                        }
                        continue;
                    }
                }
            }
            other => other,
        };
        let got = match &input {
            InputLine::Refused(_) => Err(ERR_REFUSED),
            InputLine::Input(input) => h.feed(input),
        };
        let marked = host.marked_text().to_owned();
        let native_input = input.as_input(&marked).ok();
        let outputs = native_input.and_then(|i| match native_budget.as_mut() {
            Some(b) => native.handle_with_budget(i, b).ok(),
            None => native.handle(i).ok(),
        });
        let serde =
            (outputs.clone()).map(|o| serde_json::to_string(h.host_outputs(o).as_slice()).unwrap());
        assert_eq!(got.as_ref().ok(), serde.as_ref(), "{at}: bytes");
        let mut problems = Vec::new();
        match (got, native_input.zip(outputs)) {
            (Err(ERR_REFUSED), _) if !want_refused => problems.push("refused".to_owned()),
            (Err(ERR_REFUSED), _) => {}
            (Err(code), _) => panic!("{at}: error {code}"),
            (Ok(_), Some((native_input, outputs))) => {
                if want_refused {
                    problems.push("accepted".to_owned());
                }
                // The module's outputs are the native ones (byte for
                // byte, above); in the vectors' form:
                let out: Vec<Value> = (outputs.into_iter())
                    .map(|o| host.vector_output(&native_input, o))
                    .map(|o| serde_json::to_value(o).unwrap())
                    .collect();
                if Value::Array(out.clone()) != want["out"] {
                    problems.push(format!("out {}, want {}", Value::Array(out), want["out"]));
                }
            }
            (Ok(json), None) => panic!("{at}: the module answered {json}, the machine refused"),
        }
        let state = h.state();
        if state != want["state"] {
            problems.push(format!("state {state}, want {}", want["state"]));
        }
        if let Some(b) = &budget {
            let tokens = b.tokens_milli();
            assert_eq!(
                Some(tokens),
                native_budget.map(|b| b.tokens_milli()),
                "{at}: budget"
            );
            let got: Value = match native_budget.and_then(|n| n.with_tokens_milli(tokens).ok()) {
                Some(n) => serde_json::from_str(&n.to_string()).unwrap(),
                None => Value::Null,
            };
            if got != want["budget"] {
                problems.push(format!("budget {got}, want {}", want["budget"]));
            }
        }
        if problems.is_empty() {
            run.passed += 1;
        } else {
            run.failures.push(format!("{at}: {}", problems.join("; ")));
        }
    }
    run
}

#[test]
fn every_vector_step_passes_through_the_c_abi() {
    let _turn = turn();
    let paths = crate::vector_files_in("tests/vectors");
    for api in [Api::Classic, Api::Ex, Api::Struct] {
        let (mut scenarios, mut steps) = (0, 0);
        let mut failures = Vec::new();
        for path in &paths {
            let run = replay_through_abi(path, api);
            assert_eq!(run.passed + run.failures.len(), run.steps);
            scenarios += run.scenarios;
            steps += run.steps;
            failures.extend(run.failures);
        }
        println!(
            "C ABI ({api:?} entry points), tests/vectors: {} files, {scenarios} scenarios, \
             {} of {steps} steps passed",
            paths.len(),
            steps - failures.len()
        );
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(steps > 100, "only {steps} steps");
    }
}

#[test]
fn every_option_vector_step_passes_through_the_c_abi() {
    let _turn = turn();
    let paths = crate::vector_files_in("tests/vectors/options");
    let (mut scenarios, mut steps, mut passed) = (0, 0, 0);
    let mut failures = Vec::new();
    for (path, api) in (paths.iter()).flat_map(|p| [(p, Api::Ex), (p, Api::Struct)]) {
        let run = replay_through_abi(path, api);
        assert_eq!(run.passed + run.failures.len(), run.steps);
        scenarios += run.scenarios;
        steps += run.steps;
        passed += run.passed;
        failures.extend(run.failures);
    }
    println!(
        "C ABI (Ex and Struct entry points), tests/vectors/options: {} files, {scenarios} scenarios, \
         {passed} of {steps} steps passed",
        paths.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        paths.len() >= 16 && scenarios >= 16 && steps >= 126,
        "too few option vectors ran"
    );
}

/// A header field pointing into `name` and `value`.
fn c_header(name: &str, value: &str) -> AutoretryHeader {
    AutoretryHeader {
        name: name.as_ptr(),
        name_len: name.len() as u32,
        value: value.as_ptr(),
        value_len: value.len() as u32,
    }
}

/// The response vectors of spec 13 (the headers, the `agent_end` clock
/// and the curated classifier): the input struct with its `headers`, JSON
/// outputs.
#[test]
fn every_response_vector_step_passes_through_the_c_abi() {
    let _turn = turn();
    let paths: Vec<_> = crate::vector_files_in("tests/vectors/response");
    let (mut steps, mut passed) = (0, 0);
    let mut failures = Vec::new();
    for path in &paths {
        let run = replay_through_abi(path, Api::Struct);
        steps += run.steps;
        passed += run.passed;
        failures.extend(run.failures);
    }
    println!(
        "C ABI (input struct), tests/vectors/response: {} files, {passed} of {steps} steps passed",
        paths.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        paths.len() >= 14 && steps >= 70,
        "too few response vectors ran"
    );
}

/// `autoretry_read_headers` on every case of `tests/corpus/headers.jsonl`,
/// exactly; and its refusals.
#[test]
fn read_headers_on_the_header_corpus() {
    let _turn = turn();
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/corpus/headers.jsonl");
    let corpus = std::fs::read_to_string(path).unwrap();
    let mut cases = 0;
    for line in corpus.lines().filter(|l| !l.trim().is_empty()) {
        let (pairs, now) = autoretry::wire::json::headers_line(line).unwrap();
        let want: serde_json::Value = serde_json::from_str(line).unwrap();
        let headers: Vec<AutoretryHeader> = pairs.iter().map(|(n, v)| c_header(n, v)).collect();
        let mut got = AutoretryHeaderHints::default();
        // SAFETY: the headers, their bytes and `got` are live.
        let code = unsafe {
            autoretry_read_headers(
                if headers.is_empty() {
                    std::ptr::null()
                } else {
                    headers.as_ptr()
                },
                headers.len() as u32,
                u32::from(now.is_some()),
                now.unwrap_or(0),
                &mut got,
            )
        };
        assert_eq!(code, 0, "{line}");
        let should_retry = match want["shouldRetry"].as_bool() {
            None => SHOULD_RETRY_ABSENT,
            Some(false) => SHOULD_RETRY_NO,
            Some(true) => SHOULD_RETRY_YES,
        };
        let retry_after = want["retryAfterMs"].as_u64();
        assert_eq!(
            got,
            AutoretryHeaderHints {
                should_retry,
                has_retry_after: u32::from(retry_after.is_some()),
                retry_after_ms: retry_after.unwrap_or(0),
            },
            "{line}"
        );
        cases += 1;
    }
    assert_eq!(cases, 43);
    let mut got = AutoretryHeaderHints::default();
    // SAFETY: null pointers with lengths are refused before any read.
    unsafe {
        assert_eq!(
            autoretry_read_headers(std::ptr::null(), 1, 0, 0, &mut got),
            ERR_ARG
        );
        assert_eq!(
            autoretry_read_headers(std::ptr::null(), 0, 0, 0, std::ptr::null_mut()),
            ERR_ARG
        );
        let bad = [AutoretryHeader {
            name: std::ptr::null(),
            name_len: 3,
            ..c_header("", "")
        }];
        assert_eq!(
            autoretry_read_headers(bad.as_ptr(), 1, 0, 0, &mut got),
            ERR_ARG
        );
    }
    assert_eq!(
        got,
        AutoretryHeaderHints::default(),
        "a failed call wrote nothing"
    );
}

/// `autoretry_classify` on one text: its return code and what it wrote.
fn classify_through_abi(code: u32, text: &[u8]) -> (i32, AutoretryClassification) {
    let mut got = AutoretryClassification::default();
    // SAFETY: `text` and `got` are live and disjoint.
    let n = unsafe { autoretry_classify(code, text.as_ptr(), text.len() as i32, &mut got) };
    (n, got)
}

/// A classification as `autoretry_classify` writes it.
fn classification_struct(c: autoretry::classify::Classification) -> AutoretryClassification {
    AutoretryClassification {
        retryable: u32::from(c.retryable),
        overflow: u32::from(c.overflow),
        usage_limit: u32::from(c.usage_limit),
        has_hint: u32::from(c.hint_ms.is_some()),
        hint_ms: c.hint_ms.unwrap_or(0),
    }
}

/// Every row of the three labelled corpora (`tests/corpus/errors.jsonl`,
/// `extended/errors.jsonl`, `curated/errors.jsonl`) through
/// `autoretry_classify` with its classifier: the four labels exactly.
#[test]
fn classify_on_every_corpus() {
    for (file, code, least) in [
        ("errors.jsonl", CLASSIFIER_CLASSIC, 126),
        ("extended/errors.jsonl", CLASSIFIER_EXTENDED, 195),
        ("curated/errors.jsonl", CLASSIFIER_CURATED, 1003),
    ] {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../tests/corpus")
            .join(file);
        let corpus = fs::read_to_string(&path).unwrap();
        let mut failures = Vec::new();
        let mut rows = 0;
        for (i, line) in corpus.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let row: Value = serde_json::from_str(line).unwrap();
            let flag = |key: &str| u32::from(row[key].as_bool().expect(key));
            let hint = row["hintMs"].as_u64();
            let want = AutoretryClassification {
                retryable: flag("retryable"),
                overflow: flag("overflow"),
                usage_limit: flag("usageLimit"),
                has_hint: u32::from(hint.is_some()),
                hint_ms: hint.unwrap_or(0),
            };
            let text = row["text"].as_str().unwrap();
            let got = classify_through_abi(code, text.as_bytes());
            if got != (0, want) {
                failures.push(format!(
                    "{file}:{}: {text:?}: got {got:?}, want {want:?}",
                    i + 1
                ));
            }
            rows += 1;
        }
        println!(
            "autoretry_classify, tests/corpus/{file}: {} of {rows} rows pass",
            rows - failures.len()
        );
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(rows >= least, "{file}: only {rows} rows");
    }
}

/// `autoretry_classify`: each classifier's answer is the library's, no
/// text reads as the empty one, and every refusal (invalid UTF-8 among
/// them) writes nothing.
#[test]
fn classify_labels_and_error_codes() {
    let classifiers = [
        (CLASSIFIER_CLASSIC, Classifier::Classic),
        (CLASSIFIER_EXTENDED, Classifier::Extended),
        (CLASSIFIER_CURATED, Classifier::Curated),
    ];
    for (code, classifier) in classifiers {
        for text in [
            "529 overloaded_error",
            "prompt is too long: 208254 tokens > 200000 maximum",
            "Rate limit exceeded. Try again in 30 seconds.",
            "socket hang up \u{1F4A5}",
            "",
        ] {
            assert_eq!(
                classify_through_abi(code, text.as_bytes()),
                (0, classification_struct(classifier.classify(text))),
                "{classifier:?} {text:?}"
            );
        }
        let mut got = AutoretryClassification::default();
        // SAFETY: no text (-1, null); `got` is live.
        let n = unsafe { autoretry_classify(code, std::ptr::null(), -1, &mut got) };
        assert_eq!((n, got), classify_through_abi(code, b""));
    }
    let text = "429 Too Many Requests";
    let bad = AutoretryClassification {
        retryable: 7,
        ..AutoretryClassification::default()
    };
    let mut got = bad;
    // SAFETY: every pointer is live for its length, or null with a length
    // the checks refuse before any read; the last text overlaps `got`.
    unsafe {
        for code in [3, u32::MAX] {
            assert_eq!(
                autoretry_classify(code, text.as_ptr(), text.len() as i32, &mut got),
                ERR_SETTINGS
            );
        }
        assert_eq!(
            autoretry_classify(CLASSIFIER_CLASSIC, text.as_ptr(), -2, &mut got),
            ERR_TEXT_LEN
        );
        let invalid = b"socket hang up\xFF";
        assert_eq!(
            autoretry_classify(
                CLASSIFIER_CLASSIC,
                invalid.as_ptr(),
                invalid.len() as i32,
                &mut got
            ),
            ERR_UTF8
        );
        let long = vec![b'a'; MAX_TEXT + 1];
        assert_eq!(
            autoretry_classify(
                CLASSIFIER_CLASSIC,
                long.as_ptr(),
                long.len() as i32,
                &mut got
            ),
            ERR_TEXT_LEN
        );
        assert_eq!(
            autoretry_classify(CLASSIFIER_CLASSIC, std::ptr::null(), 3, &mut got),
            ERR_ARG
        );
        assert_eq!(
            autoretry_classify(
                CLASSIFIER_CLASSIC,
                text.as_ptr(),
                text.len() as i32,
                std::ptr::null_mut()
            ),
            ERR_ARG
        );
        let mut two = [AutoretryClassification::default(); 2];
        let misaligned = two.as_mut_ptr().cast::<u8>().wrapping_add(4).cast();
        assert_eq!(
            autoretry_classify(
                CLASSIFIER_CLASSIC,
                text.as_ptr(),
                text.len() as i32,
                misaligned
            ),
            ERR_ARG
        );
        let over = std::ptr::addr_of!(got).cast::<u8>();
        assert_eq!(
            autoretry_classify(CLASSIFIER_CLASSIC, over, 8, &mut got),
            ERR_ARG
        );
    }
    assert_eq!(got, bad, "a failed call wrote nothing");
}

#[test]
fn every_beyond_vector_step_passes_through_the_c_abi() {
    let _turn = turn();
    let paths = crate::vector_files_in("tests/vectors/beyond");
    let (mut scenarios, mut steps, mut passed) = (0, 0, 0);
    let mut failures = Vec::new();
    for path in &paths {
        let run = replay_through_abi(path, Api::Struct);
        assert_eq!(run.passed + run.failures.len(), run.steps);
        scenarios += run.scenarios;
        steps += run.steps;
        passed += run.passed;
        failures.extend(run.failures);
    }
    println!(
        "C ABI (input struct, JSON outputs), tests/vectors/beyond: {} files, {scenarios} \
         scenarios, {passed} of {steps} steps passed",
        paths.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        paths.len() >= 14 && steps >= 50,
        "too few beyond vectors ran"
    );
}

/// Spec §12 (the stall watchdog, `empty`): every stream vector through the
/// input struct (JSON outputs), and again through the scalar entry points
/// `autoretry_stream_start` / `autoretry_stream_event` for the stream
/// inputs (the other inputs still through the struct: the §12 keys and
/// `empty` travel only there).
#[test]
fn every_stream_vector_step_passes_through_the_c_abi() {
    let _turn = turn();
    let paths = crate::vector_files_in("tests/vectors/stream");
    for api in [Api::Struct, Api::StreamScalars] {
        let (mut scenarios, mut steps, mut passed) = (0, 0, 0);
        let mut failures = Vec::new();
        for path in &paths {
            let run = replay_through_abi(path, api);
            assert_eq!(run.passed + run.failures.len(), run.steps);
            scenarios += run.scenarios;
            steps += run.steps;
            passed += run.passed;
            failures.extend(run.failures);
        }
        println!(
            "C ABI ({api:?}), tests/vectors/stream: {} files, {scenarios} scenarios, \
             {passed} of {steps} steps passed",
            paths.len()
        );
        assert!(failures.is_empty(), "{}", failures.join("\n"));
        assert!(
            paths.len() >= 17 && scenarios >= 17 && steps >= 100,
            "too few stream vectors ran: {} files, {steps} steps",
            paths.len()
        );
    }
}

/// The C form of spec §12: `watch` as `AUTORETRY_OUTPUT_WATCH`, its timer
/// fired through the struct, the stall's sentence written by the module
/// (the machine keeps a number) and pointed to by the start event's
/// `text`; `empty` with partial text refused with its reason; a stream
/// input without `has_now` refused as a bad argument, changing nothing.
#[test]
fn stream_through_the_c_structs() {
    let _turn = turn();
    let settings = RetrySettings::DEFAULT
        .with_first_event_timeout_ms(1000)
        .with_idle_timeout_ms(500);
    let h = Handle::new(Api::Struct, settings, HostOptions::DEFAULT);
    let mut out = [AutoretryOutput::default(); 8];
    let handle = |input: &AutoretryInput, out: &mut [AutoretryOutput; 8]| {
        // SAFETY: the struct, its text and `out` are live and disjoint.
        unsafe { autoretry_handle_c(h.0, input, out.as_mut_ptr(), 8) }
    };
    let text = |o: &AutoretryOutput| {
        // SAFETY: the module's text pointer, valid until the next call.
        let bytes = unsafe { std::slice::from_raw_parts(o.text, o.text_len as usize) };
        String::from_utf8(bytes.to_vec()).unwrap()
    };
    // No `has_now`: a bad argument, before the machine sees it.
    let start = AutoretryInput {
        kind: INPUT_STREAM_START,
        now_ms: 100,
        ..AutoretryInput::default()
    };
    assert_eq!(handle(&start, &mut out), ERR_ARG);
    assert_eq!(autoretry_pending_timer(h.0), 0);
    let event = AutoretryInput {
        kind: INPUT_STREAM_EVENT,
        ..start
    };
    assert_eq!(handle(&event, &mut out), ERR_ARG);
    let start = AutoretryInput {
        has_now: 1,
        ..start
    };
    assert_eq!(handle(&start, &mut out), 1);
    assert_eq!(
        (out[0].kind, out[0].ms, out[0].timer),
        (OUTPUT_WATCH, 1000, h.host_timer(1))
    );
    // A first event at 400 only stores the time; the watch fires at 1100
    // (its due time), with 700 ms of silence: 500 is the idle limit, so
    // it stalls.
    let event = AutoretryInput {
        kind: INPUT_STREAM_EVENT,
        now_ms: 400,
        ..start
    };
    assert_eq!(handle(&event, &mut out), 0);
    let fired = AutoretryInput {
        kind: INPUT_TIMER_FIRED,
        timer: h.host_timer(1),
        ..AutoretryInput::default()
    };
    assert_eq!(handle(&fired, &mut out), 1);
    assert_eq!(out[0].kind, OUTPUT_ABORT_AGENT);
    // The aborted run ends; `empty` with partial text is refused first.
    let mut end = AutoretryInput {
        kind: INPUT_AGENT_END,
        stop_reason: STOP_ABORTED,
        partial: PARTIAL_TEXT,
        empty: 1,
        ..AutoretryInput::default()
    };
    assert_eq!(handle(&end, &mut out), ERR_REFUSED);
    assert_eq!(autoretry_last_refusal(h.0), REFUSAL_EMPTY_WITH_PARTIAL);
    end.empty = 0;
    assert_eq!(handle(&end, &mut out), 2);
    assert_eq!(
        (out[0].kind, out[0].attempt, out[0].ms),
        (OUTPUT_START, 1, 2000)
    );
    assert_eq!(text(&out[0]), "Stream stalled: no event for 700ms");
    // A continuation (partial text): no drop_trailing_error.
    assert_eq!(out[1].kind, OUTPUT_SLEEP);
}

/// The module's JSON is byte for byte serde_json's, for texts that need
/// every kind of escape.
#[test]
fn json_matches_serde_byte_for_byte() {
    let _turn = turn();
    let texts = [
        "503 \"quoted\" \\ back\tslash\n\r\u{8}\u{c}\u{1}\u{1f}\u{7f}",
        "overloaded \u{2028}\u{2029} ünïcödé 🚀",
        "rate limit",
    ];
    for text in texts {
        let settings = RetrySettings::DEFAULT.with_base_delay_ms(u64::MAX);
        let h = Handle::new(Api::Classic, settings, HostOptions::default());
        let mut native = Machine::new(settings, HostOptions::default());
        let inputs = [
            InputBuf::agent_end(MessageBuf::error(text)),
            InputBuf::AbortRetry,
        ];
        for input in &inputs {
            let outputs = native.handle(input.as_input()).unwrap();
            let want = serde_json::to_string(h.host_outputs(outputs).as_slice()).unwrap();
            assert_eq!(h.feed(input).unwrap(), want, "{text:?}");
        }
    }
}

#[test]
fn usage_limit_answer_passes_back_the_kept_text() {
    let _turn = turn();
    let h = Handle::new(
        Api::Classic,
        RetrySettings::DEFAULT,
        HostOptions::default().with_credential_store(true),
    );
    let text = "x".repeat(MAX_TEXT - 20) + " usage_limit_reached";
    let mut native = Machine::new(
        RetrySettings::DEFAULT,
        HostOptions::default().with_credential_store(true),
    );
    let end = InputBuf::agent_end(MessageBuf::error(text.clone()));
    // The C ABI passes back the text it kept, not this one.
    let marked = InputBuf::UsageLimitMarked { switched: false };
    let outputs = native.handle(end.as_input()).unwrap();
    let want = serde_json::to_string(h.host_outputs(outputs).as_slice()).unwrap();
    assert_eq!(h.feed(&end).unwrap(), want);
    // The machine keeps only a fingerprint; the slot's copy answers.
    let outputs = native
        .handle(Input::UsageLimitMarked {
            switched: false,
            error_message: &text,
        })
        .unwrap();
    let want = serde_json::to_string(h.host_outputs(outputs).as_slice()).unwrap();
    assert_eq!(h.feed(&marked).unwrap(), want);
    assert!(want.contains(&text));
}

/// `model_switched` carries the text the module kept from the message that
/// led to `switch_model`, as `usage_limit_marked` does after
/// `mark_usage_limit`, through both the JSON entry point and the struct.
#[test]
fn model_switched_passes_back_the_kept_text() {
    let _turn = turn();
    let settings = RetrySettings::DEFAULT
        .with_max_retries(0)
        .with_model_fallback(true);
    let text = "x".repeat(MAX_TEXT - 20) + " overloaded_error";
    let end = InputBuf::agent_end(MessageBuf::error(text.clone()));
    for api in [Api::Ex, Api::Struct] {
        // Made from the settings struct (`modelFallback`), fed through
        // `api`'s entry points.
        let mut h = Handle::new(Api::Struct, settings, HostOptions::default());
        h.1 = api;
        // No fallback asked yet: ignored (spec §11.3), not refused.
        let early = InputBuf::ModelSwitched { switched: true };
        assert_eq!(h.feed(&early).as_deref(), Ok("[]"), "{api:?}");
        let mut native = Machine::new(settings, HostOptions::default());
        let outputs = native.handle(end.as_input()).unwrap();
        assert!(matches!(outputs[..], [Output::SwitchModel { .. }]));
        let want = serde_json::to_string(h.host_outputs(outputs).as_slice()).unwrap();
        assert_eq!(h.feed(&end).unwrap(), want, "{api:?}");
        let outputs = native
            .handle(Input::ModelSwitched {
                switched: false,
                error_message: &text,
            })
            .unwrap();
        let want = serde_json::to_string(h.host_outputs(outputs).as_slice()).unwrap();
        assert!(want.contains(&text));
        let answer = InputBuf::ModelSwitched { switched: false };
        assert_eq!(h.feed(&answer).unwrap(), want, "{api:?}");
        // No decision awaits an answer now: the module answers as the
        // library does (a late answer is ignored).
        let late = native.handle(Input::ModelSwitched {
            switched: true,
            error_message: &text,
        });
        let want = late.map(|o| serde_json::to_string(o.as_slice()).unwrap());
        let answer = InputBuf::ModelSwitched { switched: true };
        assert_eq!(h.feed(&answer).ok(), want.ok(), "{api:?}");
    }
}

/// Every error code names one failure: no two share a value.
#[test]
fn error_codes_are_distinct() {
    let mut codes = vec![
        ERR_HANDLE,
        ERR_REFUSED,
        ERR_UTF8,
        ERR_TEXT_LEN,
        ERR_POOL_FULL,
        ERR_ARG,
        ERR_OUT_TOO_SMALL,
        ERR_SETTINGS,
        ERR_BUFFER,
        ERR_BUDGET,
    ];
    #[cfg(feature = "rules")]
    codes.extend([
        ERR_RULES_FOREIGN,
        ERR_RULES_LENGTH,
        ERR_RULES_MISALIGNED,
        ERR_RULES_CORRUPT,
    ]);
    let n = codes.len();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), n, "{codes:?}");
    assert!(codes.iter().all(|&c| c < 0));
}

#[test]
fn error_codes() {
    let _turn = turn();
    let mut out = [0u8; 512];
    let (o, cap) = (out.as_mut_ptr(), out.len() as u32);
    // Unknown handles.
    for bad in [-1, POOL_SIZE as i32, i32::MAX] {
        assert_eq!(autoretry_free(bad), ERR_HANDLE);
        // SAFETY: `out` is live and `cap` bytes long.
        assert_eq!(unsafe { autoretry_abort(bad, o, cap) }, ERR_HANDLE);
    }
    // A full pool, then a freed slot is reused.
    let handles: Vec<Handle> = (0..POOL_SIZE)
        .map(|_| Handle::new(Api::Classic, RetrySettings::DEFAULT, HostOptions::default()))
        .collect();
    assert_eq!(autoretry_new(1, 3, 2000, 0, 0), ERR_POOL_FULL);
    let freed = handles[3].0;
    drop(handles);
    let h = Handle::new(Api::Classic, RetrySettings::DEFAULT, HostOptions::default());
    // The lowest free slot, with a handle of its next generation.
    assert!(h.0 & 0xff <= freed & 0xff);
    assert_ne!(h.0, freed);
    // SAFETY: `out` is live and `cap` bytes long; texts are live and of the
    // given lengths (the overlap case points into `out` on purpose).
    unsafe {
        let bad_utf8 = [b'5', 0xff];
        assert_eq!(
            autoretry_agent_end(h.0, STOP_ERROR, bad_utf8.as_ptr(), 2, 0, 0, 0, 0, 0, o, cap),
            ERR_UTF8
        );
        let long = vec![b'a'; MAX_TEXT + 1];
        assert_eq!(
            autoretry_agent_end(
                h.0,
                STOP_ERROR,
                long.as_ptr(),
                long.len() as i32,
                0,
                0,
                0,
                0,
                0,
                o,
                cap
            ),
            ERR_TEXT_LEN
        );
        assert_eq!(
            autoretry_agent_end(h.0, STOP_ERROR, long.as_ptr(), -2, 0, 0, 0, 0, 0, o, cap),
            ERR_TEXT_LEN
        );
        // An unknown stop reason, and none at all (0: the codes start at 1).
        for stop in [9, 0] {
            assert_eq!(
                autoretry_agent_end(h.0, stop, std::ptr::null(), -1, 0, 0, 0, 0, 0, o, cap),
                ERR_ARG
            );
        }
        assert_eq!(
            autoretry_agent_end(h.0, STOP_ERROR, std::ptr::null(), 3, 0, 0, 0, 0, 0, o, cap),
            ERR_ARG
        );
        assert_eq!(
            autoretry_agent_end(h.0, STOP_ERROR, o.add(8), 4, 0, 0, 0, 0, 0, o, cap),
            ERR_ARG
        );
        assert_eq!(autoretry_abort(h.0, std::ptr::null_mut(), 8), ERR_ARG);
        // None of those reached the machine.
        assert_eq!(h.state()["isRetrying"], false);

        // Too small a buffer: nothing changed, and the same call with a
        // buffer large enough then runs.
        let text = "overloaded";
        let mut tiny = [0u8; 8];
        for cap in [0, 2, tiny.len() as u32] {
            assert_eq!(
                autoretry_agent_end(
                    h.0,
                    STOP_ERROR,
                    text.as_ptr(),
                    text.len() as i32,
                    0,
                    0,
                    0,
                    0,
                    0,
                    tiny.as_mut_ptr(),
                    cap
                ),
                ERR_OUT_TOO_SMALL
            );
            assert_eq!(h.state()["isRetrying"], false);
            assert_eq!(autoretry_pending_timer(h.0), 0);
        }
        let n = autoretry_agent_end(
            h.0,
            STOP_ERROR,
            text.as_ptr(),
            text.len() as i32,
            0,
            0,
            0,
            0,
            0,
            o,
            cap,
        );
        assert!(out[..n as usize]
            .starts_with(br#"[{"type":"emit","event":{"type":"auto_retry_start","attempt":1"#));
        assert_eq!(h.state()["isRetrying"], true);
        // The agent must not run during the backoff.
        assert_eq!(
            autoretry_agent_end(h.0, STOP_STOP, std::ptr::null(), -1, 0, 0, 0, 0, 0, o, cap),
            ERR_REFUSED
        );
        let timer = host_timer(h.0, 1);
        assert_eq!(autoretry_pending_timer(h.0), timer);
        // Too small for `[{"type":"continue_agent"}]`: the timer stays.
        assert_eq!(autoretry_timer_fired(h.0, timer, o, 8), ERR_OUT_TOO_SMALL);
        assert_eq!(autoretry_pending_timer(h.0), timer);
        let n = autoretry_timer_fired(h.0, timer, o, cap);
        assert_eq!(&out[..n as usize], br#"[{"type":"continue_agent"}]"#);
    }
    // Settings the module refuses: no machine is made, the settings in
    // force stay. A `jitterPct` is never truncated (356 is not 100).
    drop(h);
    let bad = [
        (PROFILE_CLASSIC, 101, CLASSIFIER_CLASSIC),
        (PROFILE_CLASSIC, 356, CLASSIFIER_CLASSIC),
        (PROFILE_MODERN, u32::MAX, CLASSIFIER_EXTENDED),
        (2, 0, CLASSIFIER_CLASSIC),
        (u32::MAX, 0, CLASSIFIER_CLASSIC),
        (PROFILE_CLASSIC, 0, 3),
        (PROFILE_MODERN, 25, u32::MAX),
    ];
    let handles: Vec<Handle> = (0..POOL_SIZE - 1)
        .map(|_| Handle::new(Api::Classic, RetrySettings::DEFAULT, HostOptions::default()))
        .collect();
    for (profile, jitter, classifier) in bad {
        let made = autoretry_new_ex(profile, 1, 3, 1, 0, 0, jitter, 0, classifier, 0, 0, 0);
        assert_eq!(made, ERR_SETTINGS, "{profile} {jitter} {classifier}");
    }
    // The last slot is still free; then the pool is full, and validation
    // comes first.
    let last = Handle::new(Api::Ex, RetrySettings::MODERN, HostOptions::default());
    assert_eq!(
        autoretry_new_ex(PROFILE_CLASSIC, 1, 3, 1, 0, 0, 0, 0, 0, 0, 0, 0),
        ERR_POOL_FULL
    );
    assert_eq!(
        autoretry_new_ex(PROFILE_CLASSIC, 1, 3, 1, 0, 0, 101, 0, 0, 0, 0, 0),
        ERR_SETTINGS
    );
    drop(handles);
    let h = last;
    let mut big = vec![0u8; OUT_BUFFER_LEN];
    let (o, cap) = (big.as_mut_ptr(), big.len() as u32);
    // SAFETY: `big` is live and `cap` bytes long; texts are live and of
    // the given lengths.
    unsafe {
        for (profile, jitter, classifier) in bad {
            let n =
                autoretry_settings_ex(h.0, profile, 1, 3, 1, 0, 0, jitter, 0, classifier, o, cap);
            assert_eq!(n, ERR_SETTINGS, "{profile} {jitter} {classifier}");
        }
        assert_eq!(
            autoretry_settings_ex(-1, PROFILE_CLASSIC, 1, 3, 1, 0, 0, 0, 0, 0, o, cap),
            ERR_HANDLE
        );
        // A shouldRetry that is not one of the codes.
        let text = "overloaded";
        for verdict in [3, -1, i32::MIN, i32::MAX] {
            let (t, len) = (text.as_ptr(), text.len() as i32);
            let n = autoretry_agent_end_ex(
                h.0, STOP_ERROR, t, len, 0, 0, 0, 0, verdict, 0, 0, 0, 0, o, cap,
            );
            assert_eq!(n, ERR_ARG, "{verdict}");
            let n = autoretry_message_end_ex(
                h.0, STOP_ERROR, t, len, 0, 0, 0, 0, verdict, 0, 0, o, cap,
            );
            assert_eq!(n, ERR_ARG, "{verdict}");
        }
        assert_eq!(h.state()["isRetrying"], false);
        // The modern settings are still in force: 10 attempts, 500 ms
        // jittered down by at most 25 %.
        let n = autoretry_agent_end_ex(
            h.0,
            STOP_ERROR,
            text.as_ptr(),
            text.len() as i32,
            0,
            0,
            0,
            0,
            SHOULD_RETRY_ABSENT,
            0,
            0,
            0,
            0,
            o,
            cap,
        );
        let outputs: Value = serde_json::from_slice(&big[..n as usize]).unwrap();
        assert_eq!(outputs[0]["event"]["maxAttempts"], 10);
        let delay = outputs[0]["event"]["delayMs"].as_u64().unwrap();
        assert!((376..=500).contains(&delay), "{delay}");
    }
    // The exchange buffers are distinct and of the stated sizes.
    let (t, b) = (
        autoretry_text_buffer() as usize,
        autoretry_out_buffer() as usize,
    );
    assert!(t + MAX_TEXT <= b || b + OUT_BUFFER_LEN <= t);
}

/// Calls every exported function once, through the exported exchange
/// buffers as a WebAssembly host would: small enough to run under Miri.
#[test]
fn every_entry_point_once() {
    let _turn = turn();
    assert_eq!(autoretry_max_text() as usize, MAX_TEXT);
    assert_eq!(autoretry_out_buffer_len() as usize, OUT_BUFFER_LEN);
    let (text, out, cap) = (
        autoretry_text_buffer(),
        autoretry_out_buffer(),
        autoretry_out_buffer_len(),
    );
    let h = autoretry_new(1, 3, 2000, 0, 1);
    assert!(h >= 0);
    let error = b"usage limit";
    // SAFETY: the exchange buffers are MAX_TEXT and OUT_BUFFER_LEN bytes
    // long, disjoint, and only this thread uses them (`turn`).
    let read = |n: i32| -> String {
        assert!(n >= 0, "error code {n}");
        let bytes = unsafe { std::slice::from_raw_parts(out, n as usize) };
        String::from_utf8(bytes.to_vec()).unwrap()
    };
    unsafe {
        std::ptr::copy_nonoverlapping(error.as_ptr(), text, error.len());
        let len = error.len() as i32;
        let n = autoretry_agent_end(h, STOP_ERROR, text, len, 0, 0, 0, 0, 0, out, cap);
        assert_eq!(
            read(n),
            r#"[{"type":"mark_usage_limit","retryAfterMs":null}]"#
        );
        let n = autoretry_message_end(h, STOP_STOP, text, -1, 0, 0, 0, out, cap);
        assert_eq!(n, ERR_REFUSED);
        let n = autoretry_usage_limit_marked(h, 1, out, cap);
        let sleep = format!(r#"{{"type":"sleep","ms":0,"timer":{}}}]"#, host_timer(h, 1));
        assert!(read(n).ends_with(&sleep));
        let timer = autoretry_pending_timer(h);
        assert_eq!(read(autoretry_set_auto_retry(h, 1, out, cap)), "[]");
        assert_eq!(read(autoretry_settings(h, 1, 3, 10, out, cap)), "[]");
        let n = autoretry_timer_fired(h, timer, out, cap);
        assert_eq!(read(n), r#"[{"type":"continue_agent"}]"#);
        let n = autoretry_abort_retry(h, out, cap);
        assert!(read(n).contains("Retry cancelled"));
        assert_eq!(
            read(autoretry_abort(h, out, cap)),
            r#"[{"type":"abort_agent"}]"#
        );
        // Spec §12.2 with the classic keys: accepted, nothing watched.
        assert_eq!(read(autoretry_stream_start(h, 5, out, cap)), "[]");
        assert_eq!(read(autoretry_stream_event(h, 6, out, cap)), "[]");
        let n = autoretry_state(h, out, cap);
        assert_eq!(
            read(n),
            r#"{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}"#
        );
    }
    assert_eq!(autoretry_free(h), 0);
    // The `_ex` forms: a 60 s ceiling, hints honoured, half-jittered, seed 7.
    let h = autoretry_new_ex(
        PROFILE_CLASSIC,
        1,
        3,
        2000,
        60_000,
        0,
        50,
        1,
        CLASSIFIER_CLASSIC,
        1000,
        0,
        7,
    );
    assert!(h >= 0);
    let error = b"503 overloaded";
    // SAFETY: as above.
    unsafe {
        std::ptr::copy_nonoverlapping(error.as_ptr(), text, error.len());
        let len = error.len() as i32;
        let n = autoretry_message_end_ex(
            h,
            STOP_STOP,
            text,
            -1,
            1,
            10,
            20,
            30,
            SHOULD_RETRY_YES,
            1,
            5,
            out,
            cap,
        );
        assert_eq!(read(n), "[]");
        // The host's retryAfterMs is over the ceiling: the chain fails fast.
        let n = autoretry_agent_end_ex(
            h,
            STOP_ERROR,
            text,
            len,
            0,
            0,
            0,
            0,
            SHOULD_RETRY_ABSENT,
            1,
            90_000,
            1,
            0,
            out,
            cap,
        );
        assert_eq!(
            read(n),
            concat!(
                r#"[{"type":"emit","event":{"type":"auto_retry_end","success":false,"attempt":0,"#,
                r#""finalError":"Provider requested 90000ms wait, exceeds retry.maxDelayMs (60000ms). Original error: 503 overloaded"}},"#,
                r#"{"type":"settled"},{"type":"check_compaction"}]"#
            )
        );
        let n = autoretry_settings_ex(
            h,
            PROFILE_MODERN,
            1,
            10,
            500,
            300_000,
            8000,
            25,
            1,
            CLASSIFIER_EXTENDED,
            out,
            cap,
        );
        assert_eq!(read(n), "[]");
        // Under the extended classifier cacheWrite counts: 1 + 2 + 998 is
        // over the 1000-token window, and an overflow is never retried,
        // whatever the host's verdict.
        let n = autoretry_agent_end_ex(
            h,
            STOP_ERROR,
            text,
            len,
            1,
            1,
            2,
            998,
            SHOULD_RETRY_YES,
            0,
            0,
            0,
            0,
            out,
            cap,
        );
        assert_eq!(read(n), r#"[{"type":"check_compaction"}]"#);
    }
    assert_eq!(autoretry_free(h), 0);
}

// ---------------------------------------------------------------------------
// Random scripts: the `_ex` entry points against the library
// ---------------------------------------------------------------------------

/// The scalar arguments of a settings group, possibly out of range.
#[derive(Clone, Debug)]
struct SettingsArgs {
    profile: u32,
    enabled: bool,
    max_retries: u32,
    base_delay_ms: u64,
    max_delay_ms: u64,
    backoff_cap_ms: u64,
    jitter_pct: u32,
    honor_hints: bool,
    classifier: u32,
}

impl SettingsArgs {
    /// The settings the arguments stand for; `None` when the module must
    /// refuse them.
    fn settings(&self) -> Option<RetrySettings> {
        let profile = [Profile::Classic, Profile::Modern].get(self.profile as usize)?;
        let classifier = [
            Classifier::Classic,
            Classifier::Extended,
            Classifier::Curated,
        ]
        .get(self.classifier as usize)?;
        let jitter = JitterPct::new(u8::try_from(self.jitter_pct).ok()?)?;
        Some(
            RetrySettings::DEFAULT
                .with_profile(*profile)
                .with_enabled(self.enabled)
                .with_max_retries(self.max_retries)
                .with_base_delay_ms(self.base_delay_ms)
                .with_max_delay_ms(self.max_delay_ms)
                .with_backoff_cap_ms(self.backoff_cap_ms)
                .with_jitter_pct(jitter)
                .with_honor_hints(self.honor_hints)
                .with_classifier(*classifier),
        )
    }
}

fn settings_args() -> impl Strategy<Value = SettingsArgs> {
    let ms = prop_oneof![Just(0u64), 1u64..100_000, any::<u64>()];
    (
        prop_oneof![8 => 0u32..2, 1 => 2u32..5, 1 => Just(u32::MAX)],
        any::<bool>(),
        0u32..5,
        prop_oneof![0u64..5000, any::<u64>()],
        ms.clone(),
        ms,
        prop_oneof![8 => 0u32..=100, 1 => 101u32..400, 1 => Just(u32::MAX)],
        any::<bool>(),
        prop_oneof![8 => 0u32..3, 1 => 3u32..6],
    )
        .prop_map(
            |(profile, enabled, max_retries, base, max_delay, cap, jitter, honor, classifier)| {
                SettingsArgs {
                    profile,
                    enabled,
                    max_retries,
                    base_delay_ms: base,
                    max_delay_ms: max_delay,
                    backoff_cap_ms: cap,
                    jitter_pct: jitter,
                    honor_hints: honor,
                    classifier,
                }
            },
        )
}

const TEXTS: &[&str] = &[
    "529 overloaded_error",
    "503 retry-after-ms=90000",
    "usage limit retry-after: 30",
    "limit_reached",
    "prompt is too long",
    "upstream hiccup",
    "rate limit retry-after-ms=400000",
    "",
    // What the example rules retry, forbid, and what they cannot make
    // retried (an overflow).
    "stream stalled",
    "503 billing: insufficient funds",
    "upstream_error: prompt is too long",
];

#[derive(Clone, Debug)]
enum Step {
    Message {
        agent_end: bool,
        stop: StopReason,
        text: Option<usize>,
        usage: Option<Usage>,
        should_retry: Option<bool>,
        retry_after_ms: Option<u64>,
        now_ms: Option<u64>,
    },
    FirePending,
    Marked(bool),
    AbortRetry,
    Abort,
    SetAutoRetry(bool),
    Settings(SettingsArgs),
}

fn step() -> impl Strategy<Value = Step> {
    let stop = prop_oneof![
        6 => Just(StopReason::Error),
        1 => Just(StopReason::Stop),
        1 => Just(StopReason::Aborted),
        1 => Just(StopReason::Length),
        1 => Just(StopReason::ToolUse),
    ];
    let usage = (0u64..800, 0u64..300, 0u64..300)
        .prop_map(|(i, r, w)| Usage::new(i, r).with_cache_write(w));
    let message = (
        prop_oneof![4 => Just(true), 1 => Just(false)],
        stop,
        proptest::option::weighted(0.9, 0..TEXTS.len()),
        proptest::option::of(usage),
        proptest::option::of(any::<bool>()),
        proptest::option::of(prop_oneof![0u64..1000, 50_000u64..500_000, any::<u64>()]),
        proptest::option::of(0u64..100_000),
    )
        .prop_map(
            |(agent_end, stop, text, usage, should_retry, retry_after_ms, now_ms)| Step::Message {
                agent_end,
                stop,
                text,
                usage,
                should_retry,
                retry_after_ms,
                now_ms,
            },
        );
    prop_oneof![
        8 => message,
        4 => Just(Step::FirePending),
        2 => any::<bool>().prop_map(Step::Marked),
        1 => Just(Step::AbortRetry),
        1 => Just(Step::Abort),
        1 => any::<bool>().prop_map(Step::SetAutoRetry),
        1 => settings_args().prop_map(Step::Settings),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Random settings, host options and inputs through the `_ex` entry
    /// points give byte for byte the JSON of the library's machine made and
    /// fed the same; out-of-range settings are refused and change nothing.
    #[test]
    fn ex_entry_points_answer_as_the_library(script in script()) {
        same_as_the_library(&script, None)?;
    }

    /// The same with the example rules lent to the module's machine
    /// (`autoretry_rules_load`) and applied to the library's inputs
    /// (`Rules::apply_input`): the module applies them as the library does.
    #[cfg(feature = "rules")]
    #[test]
    fn rules_over_the_c_abi_answer_as_the_library(script in script()) {
        same_as_the_library(&script, Some(RULES_BLOB))?;
    }
}

/// The compiled example rules, as `autoretry rules compile` writes them.
#[cfg(feature = "rules")]
pub(crate) static RULES_BLOB: &[u8] = autoretry::include_rules!("../../../tests/rules/example.bin");

/// A random script: the settings arguments to create a machine with, its
/// host options (context window, credential store, seed), and its steps.
type Script = (SettingsArgs, u64, bool, u64, Vec<Step>);

fn script() -> impl Strategy<Value = Script> {
    (
        settings_args(),
        prop_oneof![Just(0u64), Just(1000)],
        any::<bool>(),
        any::<u64>(),
        proptest::collection::vec(step(), 1..24),
    )
}

/// Creates a machine with the script's settings through `autoretry_new_ex`
/// and the library's, lends the module's `rules` (and applies them to the
/// library's inputs), feeds both the steps, and compares every output and
/// state.
fn same_as_the_library(
    (create, context_window, credential_store, seed, steps): &Script,
    rules: Option<&'static [u8]>,
) -> Result<(), TestCaseError> {
    let (context_window, credential_store, seed) = (*context_window, *credential_store, *seed);
    let _turn = turn();
    let h = autoretry_new_ex(
        create.profile,
        u32::from(create.enabled),
        create.max_retries,
        create.base_delay_ms,
        create.max_delay_ms,
        create.backoff_cap_ms,
        create.jitter_pct,
        u32::from(create.honor_hints),
        create.classifier,
        context_window,
        u32::from(credential_store),
        seed,
    );
    let Some(settings) = create.settings() else {
        prop_assert_eq!(h, ERR_SETTINGS);
        return Ok(());
    };
    prop_assert!(h >= 0, "autoretry_new_ex: {}", h);
    let handle = Handle(h, Api::Ex, 0);
    #[cfg(feature = "rules")]
    let rules = rules.map(|blob| {
        // SAFETY: a static: valid and never written.
        let loaded = unsafe { autoretry_rules_load(h, blob.as_ptr(), blob.len() as u32) };
        assert_eq!(loaded, 0, "autoretry_rules_load");
        autoretry::rules::Rules::from_bytes(blob).unwrap()
    });
    #[cfg(not(feature = "rules"))]
    assert!(rules.is_none(), "rules need feature `rules`");
    let host = HostOptions::DEFAULT
        .with_context_window(context_window)
        .with_credential_store(credential_store)
        .with_seed(seed);
    let mut native = Machine::new(settings, host);
    let mut marked = String::new();
    let mut out = vec![0u8; OUT_BUFFER_LEN];
    let (o, cap) = (out.as_mut_ptr(), out.len() as u32);
    for (k, step) in steps.iter().enumerate() {
        let owned = match step {
            Step::Message {
                agent_end,
                stop,
                text,
                usage,
                should_retry,
                retry_after_ms,
                now_ms,
            } => {
                let message = MessageBuf {
                    stop_reason: *stop,
                    error_message: text.map(|t| TEXTS[t].to_owned()),
                    usage: *usage,
                    should_retry: *should_retry,
                    retry_after_ms: *retry_after_ms,
                    partial: autoretry::Partial::None,
                    empty: false,
                    headers: Vec::new(),
                };
                if *agent_end {
                    InputBuf::AgentEnd {
                        message,
                        now_ms: *now_ms,
                    }
                } else {
                    InputBuf::MessageEnd { message }
                }
            }
            Step::FirePending => InputBuf::TimerFired {
                timer: native.pending_timer().unwrap_or(TimerId(1)),
            },
            Step::Marked(switched) => InputBuf::UsageLimitMarked {
                switched: *switched,
            },
            Step::AbortRetry => InputBuf::AbortRetry,
            Step::Abort => InputBuf::Abort,
            Step::SetAutoRetry(enabled) => InputBuf::SetAutoRetry { enabled: *enabled },
            Step::Settings(args) => {
                let Some(s) = args.settings() else {
                    let before = native.state();
                    // SAFETY: `out` is live and `cap` bytes long.
                    let n = unsafe {
                        autoretry_settings_ex(
                            h,
                            args.profile,
                            u32::from(args.enabled),
                            args.max_retries,
                            args.base_delay_ms,
                            args.max_delay_ms,
                            args.backoff_cap_ms,
                            args.jitter_pct,
                            u32::from(args.honor_hints),
                            args.classifier,
                            o,
                            cap,
                        )
                    };
                    prop_assert_eq!(n, ERR_SETTINGS, "step {}", k);
                    prop_assert_eq!(handle.state(), serde_json::to_value(before).unwrap());
                    continue;
                };
                InputBuf::Settings(s)
            }
        };
        let got = handle.feed(&owned);
        let input = owned.as_input_answering(&marked);
        #[cfg(feature = "rules")]
        let input = rules
            .as_ref()
            .map_or(input, |rules| rules.apply_input(input));
        let mut kept = None;
        let want = native.handle(input).map(|outputs| {
            let marks = outputs
                .iter()
                .any(|o| matches!(o, autoretry::Output::MarkUsageLimit { .. }));
            if let (Input::AgentEnd { message, .. }, true) = (input, marks) {
                kept = Some(message.error_message.unwrap_or("").to_owned());
            }
            serde_json::to_string(handle.host_outputs(outputs).as_slice()).unwrap()
        });
        if let Some(text) = kept {
            marked = text;
        }
        match (&got, &want) {
            (Ok(got), Ok(want)) => prop_assert_eq!(got, want, "step {}: {:?}", k, step),
            (Err(code), Err(_)) => prop_assert_eq!(*code, ERR_REFUSED, "step {}", k),
            _ => prop_assert!(
                false,
                "step {} {:?}: module {:?}, library {:?}",
                k,
                step,
                got,
                want
            ),
        }
        prop_assert_eq!(
            handle.state(),
            serde_json::to_value(native.state()).unwrap(),
            "step {}",
            k
        );
    }
    Ok(())
}
