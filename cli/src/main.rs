//! The `autoretry` command-line host: a thin loop over the library.
//!
//! - `autoretry replay [FILE]`: replays vector lines (the format of the
//!   shared vectors) on the real machine and prints, for each step line,
//!   one line `{"out":[...],"state":{...}}` (plus `"refused":true` when the
//!   input was refused). Scenario lines start a fresh machine and print
//!   nothing; a step's expectations (`out`, `state`, `refused`) are ignored;
//!   blank lines are skipped.
//! - `autoretry classify [FILE]`: reads `{"text":"..."}` lines and prints
//!   `{"retryable":b,"overflow":b,"usageLimit":b,"hintMs":n|null}` for each;
//!   with `--rules FILE`, also `"verdict":b|null`, and `retryable` with the
//!   verdict as the text's `shouldRetry`.
//! - `autoretry headers [FILE]`: reads `{"headers":[[name,value],...],"nowMs":n|null}`
//!   lines and prints the header reading of spec 13.1,
//!   `{"shouldRetry":b|null,"retryAfterMs":n|null}`, for each.
//! - `autoretry rules compile RULES.json -o RULES.bin`: compiles a rules
//!   file into the blob that `autoretry::rules::Rules::from_bytes` loads.
//!
//! - `autoretry simulate`: a real agent over real HTTP against a local
//!   provider that fails as scripted (see `http_simulate.rs` and the
//!   `autoretry-demo` crate).
//! - `autoretry simulate-in-process`: the real machine with real, scalable
//!   timers against a scripted flaky provider in the process (see
//!   `simulate.rs`).
//! - `autoretry rpc`: the JSON-lines sidecar of `autoretry::host::sidecar`
//!   on stdin and stdout.
//!
//! For `replay`, `classify` and `headers`, input comes from FILE, or stdin when absent. Lines are split on `\n`
//! only (texts may contain U+2028). They stream: each answer is written,
//! and flushed before the next line is waited for, before the next line is
//! read. A malformed line is reported on stderr as `line N: ...` (1-based,
//! naming the field) and the run goes on with the next line; the exit code
//! is then 1.

use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use autoretry::classify::{Classification, Classifier};
use autoretry::host::sidecar;
use autoretry::rules::{DfaKind, Endian, RuleSet, Rules};
use autoretry::wire::json::{
    headers_line, parse_object, parse_value, settings_from_json, DecodeError, ErrorKind,
};
use autoretry::{HostOptions, JitterPct, Machine, Partial, Profile, RetryBudget, RetrySettings};
use autoretry_testkit::replay::Replayer;
use clap::{Parser, Subcommand};

mod clock;
mod http_simulate;
mod redis_budget;
mod simulate;

#[derive(Parser)]
#[command(
    name = "autoretry",
    version,
    about = "Drive the autoretry state machine from JSON lines"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// A real agent over real HTTP: start a local provider on 127.0.0.1
    /// that speaks the Anthropic or OpenAI streaming API, and run the agent
    /// through every failure of its plan (overloaded, rate-limited with
    /// headers, server errors, an error event in a 200, a reset after a
    /// tool call, stalls, an empty answer, a daily quota, spent retries): a
    /// line per request and decision, then a closing table.
    Simulate {
        /// The cases to run, in order, comma-separated (the default: all
        /// of them): overloaded, rate-limited, server-errors, error-event,
        /// reset-after-tool, stall-first, stall-mid, empty, quota, fallback.
        #[arg(long, value_name = "CASES", value_delimiter = ',')]
        plan: Vec<String>,
        /// The wire format: `anthropic` or `openai`.
        #[arg(long, value_name = "WIRE", default_value = "anthropic", value_parser = parse_wire)]
        wire: autoretry_demo::wire::Wire,
        /// Multiplies every wait, stall and pause (0.1: ten times faster).
        /// A finite number > 0.
        #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_positive_scale)]
        time_scale: f64,
        /// Write what the agent fed the machine, and the outputs it saw, as
        /// vector lines (one scenario per case) to FILE.
        #[arg(long, value_name = "FILE")]
        record: Option<PathBuf>,
    },
    /// Run the real machine with real timers against a scripted flaky
    /// provider in this process: events as JSON lines, the retry loader
    /// during backoffs. Esc or Ctrl-C cancels the retry; a second Ctrl-C
    /// aborts.
    #[command(name = "simulate-in-process")]
    SimulateInProcess {
        /// The provider's error text.
        #[arg(long, default_value = "529 overloaded_error: Overloaded")]
        error: String,
        /// How many calls fail before the provider answers.
        #[arg(long, default_value_t = 2)]
        failures: u32,
        #[command(flatten)]
        settings: SettingsArgs,
        /// The jitter generator's seed (spec §10.6).
        #[arg(long, value_name = "N", default_value_t = 0)]
        seed: u64,
        /// Your own rules (a rules JSON or a compiled blob): their verdict
        /// is the failed message's `shouldRetry`.
        #[arg(long, value_name = "FILE")]
        rules: Option<PathBuf>,
        /// Multiplies every backoff and provider call (0.01: 100 times faster).
        #[arg(long, default_value_t = 1.0, value_parser = parse_scale)]
        time_scale: f64,
        /// How long one provider call takes, in ms.
        #[arg(long, default_value_t = 400)]
        latency_ms: u64,
        /// What a failing call had streamed before its error: `none`,
        /// `text` (the retry continues the turn) or `tools` (never
        /// replayed), spec §11.2.
        #[arg(long, value_name = "WHAT", default_value = "none", value_parser = parse_partial)]
        partial: Partial,
        /// How many other models the agent can switch to when the machine
        /// asks (`switch_model`); needs `--model-fallback true`.
        #[arg(long, value_name = "N", default_value_t = 0)]
        fallback_models: u32,
    },
    /// Serve the JSON-lines sidecar on stdin/stdout: commands and agent
    /// events in; responses, events and actions out; the sidecar owns the
    /// backoff timers.
    Rpc {
        /// The `retry` settings group, as JSON (default: the defaults).
        #[arg(long, value_name = "JSON")]
        settings: Option<String>,
        /// The model's context window in tokens (0: unknown).
        #[arg(long, value_name = "N", default_value_t = 0)]
        context_window: u64,
        /// The agent has a credential store: usage limits ask it to mark
        /// the credential (`mark_usage_limit`).
        #[arg(long)]
        credential_store: bool,
        /// The jitter generator's seed (spec §10.6).
        #[arg(long, value_name = "N", default_value_t = 0)]
        seed: u64,
        /// Your own rules (a rules JSON or a compiled blob): their verdict
        /// is the `shouldRetry` of every agent message that has none.
        #[arg(long, value_name = "FILE")]
        rules: Option<PathBuf>,
        /// Multiplies every backoff wait (0.01: a 2 s backoff waits 20 ms),
        /// for hosts' integration tests; the lines keep the unscaled
        /// figures. A finite number > 0.
        #[arg(long, value_name = "F", default_value_t = 1.0, value_parser = parse_positive_scale)]
        time_scale: f64,
        /// The longest input line, in bytes (without its newline); a longer
        /// line is answered with a `line_too_long` error and skipped.
        #[arg(long, value_name = "N", default_value_t = sidecar::MAX_LINE_BYTES, value_parser = clap::value_parser!(usize))]
        max_line_bytes: usize,
        /// A retry budget (spec §11.4): `MAX:RATIO` or `MAX:RATIO:TOKENS`
        /// (`10:0.1`: 10 tokens, a good run refills 0.1, a retry costs 1,
        /// at 5 or less a retry is throttled).
        #[arg(long, value_name = "MAX:RATIO[:TOKENS]", value_parser = parse_budget)]
        budget: Option<RetryBudget>,
        /// Keep the budget in Redis (`redis://127.0.0.1/`), shared by every
        /// sidecar given the same store and key (and the same `--budget`).
        /// When the store fails mid-run, a `budget_store_error` line says
        /// so and the decision is made without the budget (fail open).
        #[arg(long, value_name = "URL", requires = "budget")]
        budget_store: Option<String>,
        /// The store's key for the budget.
        #[arg(
            long,
            value_name = "KEY",
            default_value = "autoretry:budget",
            requires = "budget_store"
        )]
        budget_key: String,
        /// How long one decision may wait for the store, all its tries
        /// together (and the start, to connect); past it, the decision is
        /// made without the budget and a `budget_store_error` line says it
        /// timed out.
        #[arg(
            long,
            value_name = "MS",
            default_value_t = redis_budget::DEFAULT_TIMEOUT_MS,
            value_parser = clap::value_parser!(u64).range(1..=60_000),
            requires = "budget_store"
        )]
        budget_store_timeout_ms: u64,
        /// After the store failed to answer, how long it is not asked:
        /// meanwhile every decision is made without the budget at once
        /// (each with a `budget_store_error` line) instead of waiting for
        /// the timeout.
        #[arg(
            long,
            value_name = "MS",
            default_value_t = redis_budget::DEFAULT_REST_MS,
            value_parser = clap::value_parser!(u64).range(0..=3_600_000),
            requires = "budget_store"
        )]
        budget_store_rest_ms: u64,
    },
    /// Replay vector lines (scenario and step lines) and print each step's
    /// outputs and state as one JSON line.
    Replay {
        /// The vector file (JSON lines); stdin when absent.
        file: Option<PathBuf>,
    },
    /// Classify `{"text":"..."}` lines and print
    /// `{"retryable":b,"overflow":b,"usageLimit":b,"hintMs":n|null}` per line.
    Classify {
        /// The input file (JSON lines); stdin when absent.
        file: Option<PathBuf>,
        /// The pattern set: `classic` (spec §3), `extended` (spec §10.5,
        /// with the hints of §10.4) or `curated` (spec §13.2, with its
        /// hints).
        #[arg(long, value_name = "SET", default_value = "classic", value_parser = parse_classifier)]
        classifier: Classifier,
        /// Your own rules (a rules JSON or a compiled blob): adds
        /// `"verdict":b|null` to each line, and `retryable` takes the
        /// verdict as the text's `shouldRetry`.
        #[arg(long, value_name = "FILE")]
        rules: Option<PathBuf>,
    },
    /// Read response headers (spec §13.1): `{"headers":[[name,value],...],"nowMs":n|null}`
    /// lines in, `{"shouldRetry":b|null,"retryAfterMs":n|null}` per line out.
    Headers {
        /// The input file (JSON lines); stdin when absent.
        file: Option<PathBuf>,
    },
    /// Your own error rules.
    Rules {
        #[command(subcommand)]
        command: RulesCommand,
    },
}

#[derive(Subcommand)]
enum RulesCommand {
    /// Compile a rules file (`{"retry": [...], "never": [...]}`) into a
    /// blob for `Rules::from_bytes` (firmware: `include_rules!`).
    Compile {
        /// The rules file (JSON).
        input: PathBuf,
        /// Where to write the blob.
        #[arg(short, long, value_name = "FILE")]
        output: PathBuf,
        /// The byte order of the target that loads it.
        #[arg(long, default_value = "little", value_parser = parse_endian)]
        endian: Endian,
        /// The DFA: `sparse` (a few times smaller, for flash) or `dense`
        /// (a few times faster to search).
        #[arg(long, default_value = "sparse", value_parser = parse_kind)]
        kind: DfaKind,
    },
}

/// The `retry` settings group as options: `--profile` gives the defaults
/// (spec §10.1), each other option overrides its key.
#[derive(clap::Args)]
struct SettingsArgs {
    /// `retry.profile`: `classic` (spec §4) or `modern` (spec §10.1).
    #[arg(long, value_name = "PROFILE", default_value = "classic", value_parser = parse_profile)]
    profile: Profile,
    /// `retry.maxRetries` [default: the profile's, 3 or 10].
    #[arg(long, value_name = "N")]
    max_retries: Option<u32>,
    /// `retry.baseDelayMs` [default: the profile's, 2000 or 500].
    #[arg(long, value_name = "MS")]
    base_delay_ms: Option<u64>,
    /// `retry.maxDelayMs`: the longest wait accepted, 0 = none [default: 0 or 300000].
    #[arg(long, value_name = "MS")]
    max_delay_ms: Option<u64>,
    /// `retry.backoffCapMs`: cap on the backoff, 0 = none [default: 0 or 8000].
    #[arg(long, value_name = "MS")]
    backoff_cap_ms: Option<u64>,
    /// `retry.jitterPct`: 0 to 100 [default: 0 or 25].
    #[arg(long, value_name = "PCT", value_parser = parse_jitter)]
    jitter_pct: Option<JitterPct>,
    /// `retry.honorHints`: `true` or `false` [default: false or true].
    #[arg(long, value_name = "BOOL")]
    honor_hints: Option<bool>,
    /// `retry.classifier`: `classic`, `extended` or `curated` [default: classic or extended].
    #[arg(long, value_name = "SET", value_parser = parse_classifier)]
    classifier: Option<Classifier>,
    /// `retry.modelFallback`: ask for another model before a chain ends
    /// for a policy reason (spec §11.3) [default: false].
    #[arg(long, value_name = "BOOL")]
    model_fallback: Option<bool>,
    /// `retry.maxUsageWaitMs`: wait out an announced usage reset up to
    /// this long, 0 = never (spec §11.5) [default: 0].
    #[arg(long, value_name = "MS")]
    max_usage_wait_ms: Option<u64>,
    /// `retry.maxTotalDelayMs`: the longest a chain may sleep in total,
    /// 0 = no limit (spec §11.6) [default: 0].
    #[arg(long, value_name = "MS")]
    max_total_delay_ms: Option<u64>,
}

impl SettingsArgs {
    /// The profile's settings with every given option applied.
    fn settings(&self) -> RetrySettings {
        let mut s = self.profile.defaults();
        if let Some(n) = self.max_retries {
            s = s.with_max_retries(n);
        }
        if let Some(ms) = self.base_delay_ms {
            s = s.with_base_delay_ms(ms);
        }
        if let Some(ms) = self.max_delay_ms {
            s = s.with_max_delay_ms(ms);
        }
        if let Some(ms) = self.backoff_cap_ms {
            s = s.with_backoff_cap_ms(ms);
        }
        if let Some(pct) = self.jitter_pct {
            s = s.with_jitter_pct(pct);
        }
        if let Some(honor) = self.honor_hints {
            s = s.with_honor_hints(honor);
        }
        if let Some(classifier) = self.classifier {
            s = s.with_classifier(classifier);
        }
        if let Some(fallback) = self.model_fallback {
            s = s.with_model_fallback(fallback);
        }
        if let Some(ms) = self.max_usage_wait_ms {
            s = s.with_max_usage_wait_ms(ms);
        }
        if let Some(ms) = self.max_total_delay_ms {
            s = s.with_max_total_delay_ms(ms);
        }
        s
    }
}

/// Turns one input line into the line to print (or nothing).
type LineHandler = Box<dyn FnMut(&str) -> Result<Option<String>, DecodeError>>;

fn main() -> ExitCode {
    let cli = Cli::parse();
    let (file, mut handle): (_, LineHandler) = match cli.command {
        Command::Simulate {
            plan,
            wire,
            time_scale,
            record,
        } => {
            return ExitCode::from(http_simulate::run(&http_simulate::Options {
                cases: plan,
                wire,
                time_scale,
                record,
            }));
        }
        Command::SimulateInProcess {
            error,
            failures,
            settings,
            seed,
            rules,
            time_scale,
            latency_ms,
            partial,
            fallback_models,
        } => {
            let settings = settings.settings();
            if fallback_models > 0 && !settings.model_fallback {
                eprintln!(
                    "autoretry simulate: --fallback-models {fallback_models} needs \
                     --model-fallback true: without it the machine never asks for \
                     another model (spec §11.3)"
                );
                return ExitCode::from(2);
            }
            let rules = match rules.as_deref().map(load_rules).transpose() {
                Ok(rules) => rules,
                Err(e) => {
                    eprintln!("autoretry simulate-in-process: --rules {e}");
                    return ExitCode::from(2);
                }
            };
            return ExitCode::from(simulate::run(&simulate::Options {
                error,
                failures,
                settings,
                seed,
                rules,
                time_scale,
                latency_ms,
                partial,
                fallback_models,
            }));
        }
        Command::Rpc {
            settings,
            context_window,
            credential_store,
            seed,
            rules,
            time_scale,
            max_line_bytes,
            budget,
            budget_store,
            budget_key,
            budget_store_timeout_ms,
            budget_store_rest_ms,
        } => {
            let host = HostOptions::DEFAULT
                .with_context_window(context_window)
                .with_credential_store(credential_store)
                .with_seed(seed);
            let budget = budget.map(|figures| BudgetFlags {
                figures,
                store: budget_store,
                key: budget_key,
                timeout: Duration::from_millis(budget_store_timeout_ms),
                rest: Duration::from_millis(budget_store_rest_ms),
            });
            return rpc(
                settings.as_deref(),
                host,
                rules.as_deref(),
                time_scale,
                max_line_bytes,
                budget,
            );
        }
        Command::Rules {
            command:
                RulesCommand::Compile {
                    input,
                    output,
                    endian,
                    kind,
                },
        } => return compile_rules(&input, &output, endian, kind),
        Command::Replay { file } => {
            let mut replayer = Replayer::new();
            (
                file,
                Box::new(move |line| {
                    Ok(replayer.replay_line(line)?.map(|step| step.to_json_line()))
                }),
            )
        }
        Command::Classify {
            file,
            classifier,
            rules,
        } => {
            let rules = match rules.as_deref().map(load_rules).transpose() {
                Ok(rules) => rules,
                Err(e) => {
                    eprintln!("autoretry classify: --rules {e}");
                    return ExitCode::from(2);
                }
            };
            (
                file,
                Box::new(move |line| {
                    if is_blank(line) {
                        return Ok(None);
                    }
                    let text = classify_line_text(line)?;
                    Ok(Some(match &rules {
                        None => classification_json(&classifier.classify(&text)),
                        Some(rules) => {
                            let c = rules.classify_with(&text, classifier);
                            with_verdict(&classification_json(&c.classification), c.verdict)
                        }
                    }))
                }),
            )
        }
        Command::Headers { file } => (
            file,
            Box::new(|line| {
                if is_blank(line) {
                    return Ok(None);
                }
                let (pairs, now_ms) = headers_line(line)?;
                let read = autoretry::read_headers(pairs, now_ms);
                Ok(Some(serde_json::to_string(&read).unwrap_or_else(|e| {
                    format!("\"serialization failed: {e}\"")
                })))
            }),
        ),
    };
    let input: Box<dyn Read> = match &file {
        None => Box::new(io::stdin()),
        Some(path) => match std::fs::File::open(path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("autoretry: cannot read {}: {e}", path.display());
                return ExitCode::FAILURE;
            }
        },
    };
    let name = file.map_or_else(|| "stdin".into(), |f| f.display().to_string());
    stream_lines(
        io::BufReader::with_capacity(64 * 1024, input),
        &name,
        &mut io::stdout().lock(),
        &mut handle,
    )
}

/// Reads `input` line by line, hands each to `handle` and prints its answer
/// before reading on: the output is flushed whenever the next line is not
/// read yet, so a client on a pipe sees each answer before it writes the
/// next line. A malformed line is reported on stderr as `line N: ...` and
/// the run goes on; the status is then 1.
fn stream_lines(
    mut input: io::BufReader<Box<dyn Read>>,
    name: &str,
    out: &mut impl Write,
    handle: &mut LineHandler,
) -> ExitCode {
    let mut out = io::BufWriter::new(out);
    let mut status = ExitCode::SUCCESS;
    let mut raw = Vec::new();
    for number in 1.. {
        raw.clear();
        // The next line is not all read yet: the answers so far go out
        // before the read waits for the client.
        if !input.buffer().contains(&b'\n') && out.flush().is_err() {
            return status;
        }
        match input.read_until(b'\n', &mut raw) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                let _ = out.flush();
                eprintln!("autoretry: cannot read {name}: {e}");
                return ExitCode::FAILURE;
            }
        }
        let line = raw.strip_suffix(b"\n").unwrap_or(&raw);
        let result = std::str::from_utf8(line)
            .map_err(|e| {
                DecodeError::new("", ErrorKind::InvalidJson, format!("invalid UTF-8: {e}"))
            })
            .and_then(&mut *handle);
        match result {
            Ok(None) => {}
            Ok(Some(line)) => {
                if writeln!(out, "{line}").is_err() {
                    // The reader went away (broken pipe): stop quietly.
                    return status;
                }
            }
            Err(e) => {
                let _ = out.flush();
                eprintln!("line {number}: {e}");
                status = ExitCode::FAILURE;
            }
        }
    }
    let _ = out.flush();
    status
}

/// `rpc`'s budget flags: the figures, and the shared store if any.
struct BudgetFlags {
    figures: RetryBudget,
    store: Option<String>,
    key: String,
    timeout: Duration,
    rest: Duration,
}

/// `autoretry rpc`: exit 0 at the end of input, 1 on an I/O error, 2 on a
/// bad option.
fn rpc(
    settings: Option<&str>,
    host: HostOptions,
    rules: Option<&Path>,
    time_scale: f64,
    max_line_bytes: usize,
    budget: Option<BudgetFlags>,
) -> ExitCode {
    let settings = match settings.map(parse_settings) {
        None => RetrySettings::DEFAULT,
        Some(Ok(settings)) => settings,
        Some(Err(e)) => {
            eprintln!("autoretry rpc: --settings: {e}");
            return ExitCode::from(2);
        }
    };
    let mut sidecar = sidecar::Sidecar::new(Machine::new(settings, host), io::stdout().lock());
    match rules.map(load_rules).transpose() {
        Ok(None) => {}
        Ok(Some(rules)) => sidecar = sidecar.with_rules(rules),
        Err(e) => {
            eprintln!("autoretry rpc: --rules {e}");
            return ExitCode::from(2);
        }
    }
    match budget {
        None => {}
        Some(BudgetFlags {
            figures,
            store: None,
            ..
        }) => sidecar = sidecar.with_budget(figures),
        Some(BudgetFlags {
            figures,
            store: Some(url),
            key,
            timeout,
            rest,
        }) => match redis_budget::RedisBudget::connect(&url, &key, figures, timeout, rest) {
            Ok(store) => sidecar = sidecar.with_budget(store),
            Err(e) => {
                eprintln!("autoretry rpc: --budget-store {e}");
                return ExitCode::from(2);
            }
        },
    }
    let clock = clock::ScaledClock::new(time_scale);
    let mut input = sidecar::Pipe::with_clock(io::stdin(), max_line_bytes, clock);
    match sidecar::serve(&mut sidecar, &mut input) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("autoretry rpc: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Rules from a rules JSON or a compiled blob (told apart by the blob's
/// header); the error names the file.
fn load_rules(path: &Path) -> Result<Rules<'static>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    Rules::load(&bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// `autoretry rules compile`: exit 0 when the blob is written, 1 when the
/// rules file is bad or a file cannot be read or written.
fn compile_rules(input: &Path, output: &Path, endian: Endian, kind: DfaKind) -> ExitCode {
    let compiled = std::fs::read(input)
        .map_err(|e| format!("cannot read: {e}"))
        .and_then(|bytes| RuleSet::from_json_bytes(&bytes).map_err(|e| e.to_string()))
        .and_then(|set| Rules::compile(&set).map_err(|e| e.to_string()))
        .and_then(|rules| {
            let blob = rules.to_bytes(endian, kind).map_err(|e| e.to_string())?;
            Ok((rules, blob))
        });
    let (rules, blob) = match compiled {
        Ok(compiled) => compiled,
        Err(e) => {
            eprintln!("autoretry rules compile: {}: {e}", input.display());
            return ExitCode::FAILURE;
        }
    };
    if let Err(e) = std::fs::write(output, &blob) {
        eprintln!(
            "autoretry rules compile: {}: cannot write: {e}",
            output.display()
        );
        return ExitCode::FAILURE;
    }
    eprintln!(
        "{}: {} never and {} retry rules, {} bytes ({}, {}-endian)",
        output.display(),
        rules.never_len(),
        rules.retry_len(),
        blob.len(),
        kind.as_str(),
        endian.as_str()
    );
    ExitCode::SUCCESS
}

fn parse_kind(text: &str) -> Result<DfaKind, String> {
    DfaKind::from_name(text).ok_or_else(|| format!("expected sparse or dense, found {text:?}"))
}

fn parse_endian(text: &str) -> Result<Endian, String> {
    Endian::from_name(text).ok_or_else(|| format!("expected little or big, found {text:?}"))
}

fn parse_partial(text: &str) -> Result<Partial, String> {
    Partial::from_wire(text).ok_or_else(|| format!("expected none, text or tools, found {text:?}"))
}

/// `MAX:RATIO` or `MAX:RATIO:TOKENS` (spec §11.4's figures).
fn parse_budget(text: &str) -> Result<RetryBudget, String> {
    let mut parts = text.split(':');
    let (Some(max), Some(ratio), tokens, None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(format!(
            "expected MAX:RATIO or MAX:RATIO:TOKENS (for example 10:0.1), found {text:?}"
        ));
    };
    RetryBudget::parse(max, ratio, tokens).map_err(|e| e.to_string())
}

/// The text of a `classify` line, `{"text":"..."}` (other fields are
/// ignored).
fn classify_line_text(line: &str) -> Result<String, DecodeError> {
    match parse_object(line)?.remove("text") {
        Some(serde_json::Value::String(s)) => Ok(s),
        Some(other) => Err(DecodeError::wrong_type("text", "a string", &other)),
        None => Err(DecodeError::missing("text", "a string")),
    }
}

fn parse_settings(text: &str) -> Result<RetrySettings, String> {
    let value = parse_value(text).map_err(|e| e.to_string())?;
    settings_from_json(&value).map_err(|e| e.to_string())
}

fn parse_profile(text: &str) -> Result<Profile, String> {
    Profile::from_wire(text).ok_or_else(|| format!("expected classic or modern, found {text:?}"))
}

fn parse_classifier(text: &str) -> Result<Classifier, String> {
    Classifier::from_wire(text)
        .ok_or_else(|| format!("expected classic, extended or curated, found {text:?}"))
}

fn parse_jitter(text: &str) -> Result<JitterPct, String> {
    text.parse::<u8>()
        .ok()
        .and_then(JitterPct::new)
        .ok_or_else(|| format!("expected a whole percentage from 0 to 100, found {text:?}"))
}

/// The corpus form `{"retryable":b,"overflow":b,"usageLimit":b,"hintMs":n|null}`.
fn classification_json(c: &Classification) -> String {
    serde_json::to_string(c).unwrap_or_else(|e| format!("\"serialization failed: {e}\""))
}

/// A classification line with `"verdict":b|null` added last.
fn with_verdict(json: &str, verdict: Option<bool>) -> String {
    let verdict = verdict.map_or_else(|| "null".to_owned(), |v| v.to_string());
    match json.strip_suffix('}') {
        Some(body) => format!(r#"{body},"verdict":{verdict}}}"#),
        None => json.to_owned(),
    }
}

fn parse_positive_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(scale) if scale.is_finite() && scale > 0.0 => Ok(scale),
        _ => Err(format!("expected a finite number > 0, found {text:?}")),
    }
}

fn parse_wire(text: &str) -> Result<autoretry_demo::wire::Wire, String> {
    autoretry_demo::wire::Wire::from_name(text)
        .ok_or_else(|| format!("expected anthropic or openai, found {text:?}"))
}

fn parse_scale(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(scale) if scale.is_finite() && scale >= 0.0 => Ok(scale),
        _ => Err(format!("expected a finite number >= 0, found {text:?}")),
    }
}

fn is_blank(line: &str) -> bool {
    line.trim_matches([' ', '\t', '\r']).is_empty()
}
