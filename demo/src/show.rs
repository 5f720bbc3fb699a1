//! The demo: the local provider on a free loopback port, the agent run
//! through every case of a plan over real HTTP, a live line per request
//! and decision, and a closing table (the failure, what the machine
//! decided, the wait and where it came from, the outcome).

use autoretry::classify::Classifier;
use autoretry::{read_headers, HostOptions, JitterPct, Profile, RetrySettings};

use crate::agent::{Agent, Config, Request, Trace};
use crate::clock::Scale;
use crate::plan::{Case, Plan};
use crate::provider::Provider;
use crate::wire::Wire;

/// The models the agent falls back through, per wire.
pub fn models(wire: Wire) -> Vec<String> {
    let names: [&str; 2] = match wire {
        Wire::Anthropic => ["claude-sonnet-4-5", "claude-haiku-4-5"],
        Wire::OpenAi => ["gpt-4o", "gpt-4o-mini"],
    };
    names.iter().map(|name| (*name).to_owned()).collect()
}

/// The agent's two keys.
pub fn keys() -> Vec<String> {
    vec!["key-primary".to_owned(), "key-secondary".to_owned()]
}

/// The settings the demo runs: the `modern` profile with the curated
/// classifier of spec 13.2 (client transport errors are transient, a plan
/// or daily quota is a usage limit, a per-minute one a plain retry), a
/// short backoff and no jitter (so a run reads the same each time), hints
/// honoured, a one-minute ceiling, model fallback, the stall watchdog (3 s
/// for the first event, 2 s of silence after one) and empty answers
/// retried.
pub fn settings() -> RetrySettings {
    RetrySettings::MODERN
        .with_profile(Profile::Modern)
        .with_classifier(Classifier::Curated)
        .with_max_retries(3)
        .with_base_delay_ms(500)
        .with_jitter_pct(JitterPct::ZERO)
        .with_max_delay_ms(60_000)
        .with_honor_hints(true)
        .with_model_fallback(true)
        .with_first_event_timeout_ms(3000)
        .with_idle_timeout_ms(2000)
        .with_retry_empty(true)
}

/// The host options: two keys make a credential store.
pub fn host() -> HostOptions {
    HostOptions::DEFAULT.with_credential_store(true)
}

/// The prompt every case asks.
pub const PROMPT: &str = "What is the capital of France?";

/// One case's run.
#[derive(Clone, Debug)]
pub struct CaseRun {
    /// The case.
    pub case: Case,
    /// What the agent saw and did.
    pub trace: Trace,
}

/// Runs every case of `plan` on `wire` against a provider it starts;
/// `live` gets each line as it happens.
pub async fn run_plan(
    plan: &Plan,
    wire: Wire,
    scale: Scale,
    live: &mut dyn FnMut(&str),
) -> Result<Vec<CaseRun>, String> {
    let provider = Provider::start(plan.clone(), scale)
        .await
        .map_err(|e| format!("cannot start the provider on 127.0.0.1: {e}"))?;
    live(&format!(
        "provider on http://{} ({} wire, time scale {})",
        provider.addr(),
        wire.name(),
        scale.get()
    ));
    let mut runs = Vec::new();
    for case in &plan.cases {
        live(&format!("{}: {}", case.name, case.about));
        let mut agent = Agent::new(Config {
            wire,
            base_url: provider.base_url(case.name),
            models: models(wire),
            keys: keys(),
            settings: settings(),
            host: host(),
            scale,
        })?;
        let scenario = format!("{}/{}", wire.name(), case.name);
        let trace = agent.run(&scenario, PROMPT, live).await;
        runs.push(CaseRun {
            case: case.clone(),
            trace,
        });
    }
    Ok(runs)
}

/// A failed request's failure, shortened for the table.
fn failure(request: &Request) -> String {
    shorten(&format!("#{} {}", request.number, request.result), 60)
}

fn shorten(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max - 1).collect();
    format!("{cut}…")
}

/// What the machine decided about a failed request.
fn decision(request: &Request) -> String {
    let interesting: Vec<&str> = request
        .decisions
        .iter()
        .map(String::as_str)
        .filter_map(|d| match d {
            "continue_agent (resume)" => Some("continue the partial text"),
            "abort_agent" => Some("abort the stalled stream"),
            "cancel_timer"
            | "settled"
            | "drop_trailing_error"
            | "check_compaction"
            | "continue_agent" => None,
            d if d.starts_with("sleep ")
                || d.starts_with("watch ")
                || d.starts_with("succeeded") =>
            {
                None
            }
            d => Some(d),
        })
        .collect();
    if interesting.is_empty() {
        return "not retried".to_owned();
    }
    shorten(&interesting.join("; "), 70)
}

/// The wait after a failed request and where it came from.
fn wait(request: &Request) -> String {
    let Some(ms) = request.decisions.iter().find_map(|d| {
        d.strip_prefix("sleep ")?
            .strip_suffix(" ms")?
            .parse::<u64>()
            .ok()
    }) else {
        return "-".to_owned();
    };
    format!("{ms} ms ({})", wait_source(request, ms))
}

/// Where a wait came from: a switch (0), the response's headers (read as
/// the machine reads them, spec 13.1, naming the header that gave it), or
/// the backoff.
pub fn wait_source(request: &Request, ms: u64) -> String {
    if ms == 0 {
        return "switched: no wait".to_owned();
    }
    let read = |headers: &[(String, String)]| {
        read_headers(headers.iter().map(|(n, v)| (n, v)), request.now_ms).retry_after_ms
    };
    if read(&request.headers) != Some(ms) {
        return "backoff".to_owned();
    }
    // The first header that alone gives the wait.
    for (name, value) in &request.headers {
        if read(&[(name.clone(), value.clone())]) == Some(ms) {
            return format!("header {name}: {value}");
        }
    }
    "rate-limit headers".to_owned()
}

/// The outcome: answered after how many requests, or the end.
fn outcome(trace: &Trace) -> String {
    let n = trace.requests.len();
    if trace.answered {
        let last = trace.requests.last();
        let how = match last {
            Some(r) if r.resumed => ", continued",
            _ => "",
        };
        let model = last.map_or("", |r| r.model.as_str());
        format!("answered by {model} on request {n}{how}")
    } else {
        match trace
            .events
            .iter()
            .rev()
            .find(|e| e.starts_with("Retry failed"))
        {
            Some(end) => shorten(end, 60),
            None => format!("failed on request {n}, as it stands"),
        }
    }
}

/// The closing table: a row per failed request (the case and its
/// outcome on the case's first row).
pub fn table(runs: &[CaseRun]) -> String {
    let mut rows: Vec<[String; 5]> = Vec::new();
    for run in runs {
        let failed = run.trace.requests.iter().filter(|r| r.result != "answered");
        for (i, request) in failed.enumerate() {
            let first = |text: String| if i == 0 { text } else { String::new() };
            rows.push([
                first(run.case.name.to_owned()),
                failure(request),
                decision(request),
                wait(request),
                first(outcome(&run.trace)),
            ]);
        }
    }
    let header = ["case", "failure", "decision", "wait (from)", "outcome"].map(String::from);
    let mut widths = [0; 5];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let line = |row: &[String; 5]| {
        let cells: Vec<String> = row
            .iter()
            .zip(widths)
            .map(|(cell, width)| format!("{cell:width$}"))
            .collect();
        format!("| {} |", cells.join(" | "))
    };
    let mut out = vec![line(&header)];
    out.push(format!(
        "|{}|",
        widths
            .iter()
            .map(|w| "-".repeat(w + 2))
            .collect::<Vec<_>>()
            .join("|")
    ));
    out.extend(rows.iter().map(line));
    out.join("\n")
}
