//! Turns the vendored conformance vectors into Rust statics
//! (`$OUT_DIR/vectors.rs`): those of sections 1–9 (`tests/vectors/*.jsonl`),
//! those of the policy options of section 10 (`tests/vectors/options/*.jsonl`)
//! those of section 11 (`tests/vectors/beyond/*.jsonl`), those of
//! section 12 (`tests/vectors/stream/*.jsonl`) and the response headers'
//! of section 13 (`tests/vectors/response/`; `curated-*` with feature
//! `curated`). Per
//! scenario its
//! file, folder, settings and host options (the jitter seed included) and
//! its retry budget, if any; per step the input (the message fields of
//! §10.2, §11.2, §12.3 and §13.1 included), the expected outputs (in the vectors' form:
//! timers as ordinals; a final error as its text), the expected state,
//! whether the input is refused and, under a budget, its tokens after the
//! step in thousandths. The firmware carries no JSON and no parser.
//!
//! Lines are decoded with the test kit's line format
//! (`autoretry_testkit::vector::VectorLine`) on the crate's strict decoder:
//! a settings group it rejects becomes `In::Invalid`, an input the host
//! refuses without asking the machine. Expected outputs are read with
//! serde_json alone; the budget figures are read exactly, in thousandths,
//! from their digits as written (the test kit's `budget_from_json` and
//! `budget_tokens_from_json`, on the crate's `RetryBudget::parse`).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

use autoretry::wire::json::InputLine;
use autoretry::{InputBuf, MessageBuf, RetryBudget, RetrySettings};
use autoretry_testkit::vector::{budget_tokens_from_json, VectorLine};
use serde_json::Value;

fn main() {
    let manifest = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets it"));

    // The linker script of cortex-m-rt includes memory.x from the search path.
    fs::copy(manifest.join("memory.x"), out_dir.join("memory.x")).expect("memory.x");
    println!("cargo:rustc-link-search={}", out_dir.display());
    println!("cargo:rerun-if-changed=memory.x");

    // The folders, in the order of `FOLDERS` in the generated code.
    let folders = [
        "tests/vectors",
        "tests/vectors/options",
        "tests/vectors/beyond",
        "tests/vectors/stream",
        "tests/vectors/response",
    ];
    let curated = std::env::var_os("CARGO_FEATURE_CURATED").is_some();
    let mut paths: Vec<(usize, PathBuf)> = Vec::new();
    for (folder, dir) in folders.iter().enumerate() {
        let dir = manifest.join("../..").join(dir);
        println!("cargo:rerun-if-changed={}", dir.display());
        let mut files: Vec<PathBuf> = fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.expect("directory entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            // The curated classifier's vectors (spec 13.2) where the build
            // has it (feature `curated`).
            .filter(|p| {
                curated
                    || !p
                        .file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with("curated-"))
            })
            .collect();
        files.sort();
        assert!(!files.is_empty(), "no vectors in {}", dir.display());
        paths.extend(files.into_iter().map(|p| (folder, p)));
    }

    let mut code = format!(
        "pub const FOLDERS: [&str; {}] = {folders:?};\n",
        folders.len()
    );
    code.push_str("pub static SCENARIOS: &[Scenario] = &[\n");
    let (mut scenarios, mut steps) = (0, 0);
    for (folder, path) in &paths {
        println!("cargo:rerun-if-changed={}", path.display());
        let text = fs::read_to_string(path).expect("vector file");
        let mut open = false;
        // The scenario's budget: its step lines' tokens are read against it.
        let mut budget: Option<RetryBudget> = None;
        // Vector lines are separated by `\n` only.
        for (index, line) in text.split('\n').enumerate() {
            let at = || format!("{}:{}", file_name(path), index + 1);
            let parsed = VectorLine::parse(line).unwrap_or_else(|e| panic!("{}: {e}", at()));
            match parsed {
                None => {}
                Some(VectorLine::Scenario(header)) => {
                    if open {
                        code.push_str("    ] },\n");
                    }
                    open = true;
                    scenarios += 1;
                    let s = header.settings;
                    let h = header.host;
                    budget = header.budget;
                    writeln!(
                        code,
                        "    Scenario {{ name: {:?}, file: {:?}, folder: {folder}, line: {}, settings: {}, \
                         host: HostOptions {{ context_window: {}, credential_store: {}, seed: {} }}, budget: {}, steps: &[",
                        header.name,
                        file_name(path),
                        index + 1,
                        settings_code(&s),
                        h.context_window,
                        h.credential_store,
                        h.seed,
                        budget_code(header.budget.as_ref())
                    )
                    .unwrap();
                }
                Some(VectorLine::Step(input)) => {
                    assert!(open, "{}: a step before any scenario line", at());
                    steps += 1;
                    let obj: Value = serde_json::from_str(line).expect("parsed above");
                    let out = obj["out"]
                        .as_array()
                        .unwrap_or_else(|| panic!("{}: `out` must be an array", at()));
                    let outs: Vec<String> = out
                        .iter()
                        .map(|o| output(o).unwrap_or_else(|e| panic!("{}: out: {e}", at())))
                        .collect();
                    let state = &obj["state"];
                    let flag = |key: &str| {
                        state[key]
                            .as_bool()
                            .unwrap_or_else(|| panic!("{}: state.{key}", at()))
                    };
                    let attempt = state["retryAttempt"]
                        .as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or_else(|| panic!("{}: state.retryAttempt", at()));
                    let refused = match obj.get("refused") {
                        None => false,
                        Some(v) => v.as_bool().unwrap_or_else(|| panic!("{}: refused", at())),
                    };
                    let tokens_milli = match (budget, obj.get("budget")) {
                        (None, None) => None,
                        (Some(scenario), Some(_)) => Some(
                            budget_tokens_from_json(scenario, raw_budget(line))
                                .unwrap_or_else(|e| panic!("{}: {e}", at()))
                                .tokens_milli(),
                        ),
                        (None, Some(_)) => {
                            panic!("{}: a step budget without a scenario budget", at())
                        }
                        (Some(_), None) => {
                            panic!("{}: `budget` missing (the scenario has one)", at())
                        }
                    };
                    writeln!(
                        code,
                        "        Step {{ line: {}, input: {}, out: &[{}], state: RetryState {{ auto_retry_enabled: {}, is_retrying: {}, retry_attempt: {} }}, refused: {}, budget_milli: {} }},",
                        index + 1,
                        input_code(&input),
                        outs.join(", "),
                        flag("autoRetryEnabled"),
                        flag("isRetrying"),
                        attempt,
                        refused,
                        opt_u64(tokens_milli.map(u64::from))
                    )
                    .unwrap();
                }
            }
        }
        if open {
            code.push_str("    ] },\n");
        }
    }
    code.push_str("];\n");
    writeln!(code, "pub const SCENARIO_COUNT: usize = {scenarios};").unwrap();
    writeln!(code, "pub const STEP_COUNT: usize = {steps};").unwrap();
    fs::write(out_dir.join("vectors.rs"), code).expect("write vectors.rs");
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A Rust string literal (`{:?}` of a `str` is one).
fn lit(text: &str) -> String {
    format!("{text:?}")
}

fn opt_lit(text: Option<&str>) -> String {
    match text {
        Some(t) => format!("Some({})", lit(t)),
        None => "None".into(),
    }
}

fn opt_u64(n: Option<u64>) -> String {
    match n {
        Some(n) => format!("Some({n})"),
        None => "None".into(),
    }
}

/// The scenario's budget as a `Budget` literal (its figures in
/// thousandths), or `None`.
fn budget_code(budget: Option<&RetryBudget>) -> String {
    match budget {
        Some(b) => format!(
            "Some(Budget {{ max_tokens: {}, ratio_milli: {}, tokens_milli: {} }})",
            b.max_tokens(),
            b.ratio_milli(),
            b.tokens_milli()
        ),
        None => "None".into(),
    }
}

/// A step line's `budget` (the tokens after the step) as written, to be
/// read exactly.
fn raw_budget(line: &str) -> &str {
    let fields: std::collections::BTreeMap<String, &serde_json::value::RawValue> =
        serde_json::from_str(line).expect("parsed above");
    fields["budget"].get()
}

fn message_code(m: &MessageBuf) -> String {
    let usage = match m.usage {
        Some(u) => format!(
            "Some(Usage {{ input: {}, cache_read: {}, cache_write: {} }})",
            u.input, u.cache_read, u.cache_write
        ),
        None => "None".into(),
    };
    format!(
        "AssistantMessage {{ stop_reason: StopReason::{:?}, error_message: {}, usage: {}, \
         should_retry: {:?}, retry_after_ms: {}, partial: Partial::{:?}, empty: {}, \
         headers: autoretry::Headers::new(&[{}]) }}",
        m.stop_reason,
        opt_lit(m.error_message.as_deref()),
        usage,
        m.should_retry,
        opt_u64(m.retry_after_ms),
        m.partial,
        m.empty,
        m.headers
            .iter()
            .map(|(name, value)| format!("({name:?}, {value:?})"))
            .collect::<Vec<_>>()
            .join(", ")
    )
}

/// A settings group as a `Settings` literal: the profile and the
/// classifier by their wire names, resolved by the firmware at run time, so
/// that the generated code compiles whichever variants the core has.
fn settings_code(s: &RetrySettings) -> String {
    format!(
        "Settings {{ profile: {:?}, enabled: {}, max_retries: {}, base_delay_ms: {}, \
         max_delay_ms: {}, backoff_cap_ms: {}, jitter_pct: {}, honor_hints: {}, classifier: {:?}, \
         model_fallback: {}, max_usage_wait_ms: {}, max_total_delay_ms: {}, \
         first_event_timeout_ms: {}, idle_timeout_ms: {}, retry_empty: {} }}",
        s.profile.as_str(),
        s.enabled,
        s.max_retries,
        s.base_delay_ms,
        s.max_delay_ms,
        s.backoff_cap_ms,
        s.jitter_pct.get(),
        s.honor_hints,
        s.classifier.as_str(),
        s.model_fallback,
        s.max_usage_wait_ms,
        s.max_total_delay_ms,
        s.first_event_timeout_ms,
        s.idle_timeout_ms,
        s.retry_empty
    )
}

fn input_code(input: &InputLine) -> String {
    let InputLine::Input(input) = input else {
        return "In::Invalid".into();
    };
    match input {
        InputBuf::MessageEnd { message } => format!(
            "In::Machine(Input::MessageEnd {{ message: {} }})",
            message_code(message)
        ),
        InputBuf::AgentEnd { message, now_ms } => format!(
            "In::Machine(Input::AgentEnd {{ message: {}, now_ms: {} }})",
            message_code(message),
            opt_u64(*now_ms)
        ),
        InputBuf::TimerFired { timer } => {
            format!("In::TimerFired {{ ordinal: {} }}", timer.get())
        }
        InputBuf::StreamStart { now_ms } => {
            format!("In::Machine(Input::StreamStart {{ now_ms: {now_ms} }})")
        }
        InputBuf::StreamEvent { now_ms } => {
            format!("In::Machine(Input::StreamEvent {{ now_ms: {now_ms} }})")
        }
        InputBuf::UsageLimitMarked { switched, .. } => {
            format!("In::UsageLimitMarked {{ switched: {switched} }}")
        }
        InputBuf::ModelSwitched { switched, .. } => {
            format!("In::ModelSwitched {{ switched: {switched} }}")
        }
        InputBuf::AbortRetry => "In::Machine(Input::AbortRetry)".into(),
        InputBuf::Abort => "In::Machine(Input::Abort)".into(),
        InputBuf::SetAutoRetry { enabled } => {
            format!("In::Machine(Input::SetAutoRetry {{ enabled: {enabled} }})")
        }
        InputBuf::Settings(s) => {
            format!("In::Settings({})", settings_code(s))
        }
    }
}

fn u64_field(o: &Value, key: &str) -> Result<u64, String> {
    o[key]
        .as_u64()
        .ok_or_else(|| format!("`{key}` must be a non-negative integer"))
}

fn u32_field(o: &Value, key: &str) -> Result<u32, String> {
    u32::try_from(u64_field(o, key)?).map_err(|_| format!("`{key}` must fit u32"))
}

fn bool_field(o: &Value, key: &str) -> Result<bool, String> {
    o[key]
        .as_bool()
        .ok_or_else(|| format!("`{key}` must be a boolean"))
}

fn str_field<'a>(o: &'a Value, key: &str) -> Result<&'a str, String> {
    o[key]
        .as_str()
        .ok_or_else(|| format!("`{key}` must be a string"))
}

/// One expected output as Rust code, in the vectors' form (timers as
/// ordinals, as `VectorHost::vector_output` writes them).
fn output(o: &Value) -> Result<String, String> {
    let ty = str_field(o, "type")?;
    Ok(match ty {
        "emit" => {
            let e = &o["event"];
            match str_field(e, "type")? {
                "auto_retry_start" => format!(
                    "Output::Emit(Event::Start {{ attempt: {}, max_attempts: {}, delay_ms: {}, error_message: autoretry::ErrorText::Text({}) }})",
                    u32_field(e, "attempt")?,
                    u32_field(e, "maxAttempts")?,
                    u64_field(e, "delayMs")?,
                    lit(str_field(e, "errorMessage")?)
                ),
                "auto_retry_end" => {
                    let final_error = match e.get("finalError") {
                        None => None,
                        Some(v) => Some(v.as_str().ok_or("`finalError` must be a string")?),
                    };
                    format!(
                        "Output::Emit(Event::End {{ success: {}, attempt: {}, final_error: {} }})",
                        bool_field(e, "success")?,
                        u32_field(e, "attempt")?,
                        match final_error {
                            Some(text) => format!("Some(autoretry::FinalError::Text({}))", lit(text)),
                            None => "None".into(),
                        }
                    )
                }
                other => return Err(format!("unknown event {other:?}")),
            }
        }
        "drop_trailing_error" => "Output::DropTrailingError".into(),
        "sleep" => format!(
            "Output::Sleep {{ ms: {}, timer: TimerId({}) }}",
            u64_field(o, "ms")?,
            u64_field(o, "timer")?
        ),
        "watch" => format!(
            "Output::Watch {{ ms: {}, timer: TimerId({}) }}",
            u64_field(o, "ms")?,
            u64_field(o, "timer")?
        ),
        "cancel_timer" => format!(
            "Output::CancelTimer {{ timer: TimerId({}) }}",
            u64_field(o, "timer")?
        ),
        "continue_agent" => match o.get("resume") {
            None => "Output::ContinueAgent".into(),
            Some(Value::Bool(true)) => "Output::ResumeAgent".into(),
            Some(other) => {
                return Err(format!("`resume` must be true when present, found {other}"))
            }
        },
        "switch_model" => {
            let reason = str_field(o, "reason")?;
            let reason = autoretry::FallbackReason::from_wire(reason)
                .ok_or_else(|| format!("unknown `reason` {reason:?}"))?;
            format!("Output::SwitchModel {{ reason: FallbackReason::{reason:?} }}")
        }
        "mark_usage_limit" => {
            let after = match o.get("retryAfterMs") {
                Some(Value::Null) => None,
                Some(v) => Some(
                    v.as_u64()
                        .ok_or("`retryAfterMs` must be an integer or null")?,
                ),
                None => return Err("`retryAfterMs` missing".into()),
            };
            format!(
                "Output::MarkUsageLimit {{ retry_after_ms: {} }}",
                opt_u64(after)
            )
        }
        "check_compaction" => "Output::CheckCompaction".into(),
        "abort_agent" => "Output::AbortAgent".into(),
        "settled" => "Output::Settled".into(),
        other => return Err(format!("unknown output {other:?}")),
    })
}
