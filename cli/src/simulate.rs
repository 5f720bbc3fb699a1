//! `autoretry simulate`: the real machine, on the real-time driver, against
//! a scripted flaky provider.
//!
//! The provider fails `failures` times with the error text, then answers.
//! Each provider call takes `latency_ms`; backoffs and calls are multiplied
//! by the time scale. Every event is printed as the JSON line the RPC
//! stream carries; during a backoff the loader line of spec §8 shows (with
//! a spinner on a terminal), and a failed chain prints its failure line.
//!
//! Esc (on a terminal) or a first Ctrl-C feeds `abort_retry`; a second
//! Ctrl-C feeds `abort`.

use std::io::{self, IsTerminal, Write};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use autoretry::host::thread::{ThreadDriver, Wake};
use autoretry::host::Step;
use autoretry::rules::Rules;
use autoretry::{
    AssistantMessage, Event, HostOptions, Input, LoaderLine, Machine, Output, RetrySettings,
    StopReason,
};

/// The scripted run.
pub struct Options {
    pub error: String,
    pub failures: u32,
    /// The `retry` group the machine runs with.
    pub settings: RetrySettings,
    /// The jitter generator's seed.
    pub seed: u64,
    pub time_scale: f64,
    pub latency_ms: u64,
    /// Rules whose verdict is the failed message's `shouldRetry`.
    pub rules: Option<Rules<'static>>,
}

/// The settings in one line: the profile, then each key that differs from
/// the profile's defaults (the §4 keys always).
fn settings_summary(s: &RetrySettings) -> String {
    let d = s.profile.defaults();
    let mut text = format!(
        "profile {}, maxRetries {}, baseDelayMs {}",
        s.profile.as_str(),
        s.max_retries,
        s.base_delay_ms
    );
    let mut extra = |differs: bool, item: String| {
        if differs {
            text.push_str(", ");
            text.push_str(&item);
        }
    };
    extra(!s.enabled, "disabled".into());
    extra(
        s.max_delay_ms != d.max_delay_ms,
        format!("maxDelayMs {}", s.max_delay_ms),
    );
    extra(
        s.backoff_cap_ms != d.backoff_cap_ms,
        format!("backoffCapMs {}", s.backoff_cap_ms),
    );
    extra(
        s.jitter_pct != d.jitter_pct,
        format!("jitterPct {}", s.jitter_pct.get()),
    );
    extra(
        s.honor_hints != d.honor_hints,
        format!("honorHints {}", s.honor_hints),
    );
    extra(
        s.classifier != d.classifier,
        format!("classifier {}", s.classifier.as_str()),
    );
    text
}

/// What the key and signal threads send.
enum Msg {
    /// Esc on the terminal.
    Escape,
    /// Ctrl-C (a key in raw mode, SIGINT otherwise).
    Interrupt,
}

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const SPIN_EVERY: Duration = Duration::from_millis(80);

/// How the simulation ended.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Outcome {
    Answered,
    Failed,
    Aborted,
}

/// The terminal (or pipe) and the simulated agent.
struct Sim {
    out: io::StdoutLock<'static>,
    /// Line ending: `\r\n` in raw mode.
    eol: &'static str,
    spinner: bool,
    loader: Option<LoaderLine>,
    frame: usize,
    /// When the provider call in flight answers.
    call_due: Option<Instant>,
    /// How long a provider call takes (scaled).
    latency: Duration,
    calls: u32,
    aborted: bool,
}

impl Sim {
    fn line(&mut self, text: &str) {
        let clear = if self.spinner && self.loader.is_some() {
            "\r\x1b[2K"
        } else {
            ""
        };
        let _ = write!(self.out, "{clear}{text}{}", self.eol);
        self.draw_loader();
    }

    fn draw_loader(&mut self) {
        if let (true, Some(loader)) = (self.spinner, self.loader) {
            let _ = write!(self.out, "\r\x1b[2K{} {loader}", SPINNER[self.frame]);
        }
        let _ = self.out.flush();
    }

    /// Starts a provider call (the user's prompt, or `continue_agent`).
    fn start_call(&mut self) {
        self.calls += 1;
        self.call_due = Some(Instant::now() + self.latency);
        let n = self.calls;
        self.line(&format!("agent: provider call {n}"));
    }

    fn clear_loader(&mut self) {
        if self.loader.take().is_some() && self.spinner {
            let _ = write!(self.out, "\r\x1b[2K");
        }
    }
}

impl Sim {
    /// Carries out a step's outputs, in order (a refused step has none).
    fn carry_out(&mut self, step: &Step<'_>) {
        for output in step.outputs.iter().flatten() {
            self.output(output);
        }
    }

    fn output(&mut self, output: &Output<'_>) {
        match *output {
            Output::Emit(event) => {
                if matches!(event, Event::End { .. }) {
                    self.clear_loader();
                }
                self.line(&serde_json::to_string(&event).unwrap_or_default());
                match event {
                    Event::Start {
                        attempt,
                        max_attempts,
                        delay_ms,
                        ..
                    } => {
                        let loader = LoaderLine {
                            attempt,
                            max_attempts,
                            delay_ms,
                        };
                        if self.spinner {
                            self.loader = Some(loader);
                            self.draw_loader();
                        } else {
                            self.line(&loader.to_string());
                        }
                    }
                    Event::End { success: false, .. } => self.line(&event.to_string()),
                    Event::End { success: true, .. } => {}
                }
            }
            Output::ContinueAgent => {
                self.clear_loader();
                self.start_call();
            }
            Output::AbortAgent => {
                self.clear_loader();
                if self.call_due.take().is_some() {
                    self.line("agent: the provider call was aborted");
                }
                self.aborted = true;
            }
            Output::Sleep { .. }
            | Output::CancelTimer { .. }
            | Output::DropTrailingError
            | Output::MarkUsageLimit { .. }
            | Output::CheckCompaction
            | Output::Settled => {}
        }
    }
}

/// Puts the terminal back when dropped.
struct RawMode;

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// Runs the simulation; the exit status: 0 when the agent got its answer,
/// 1 when the chain failed or was cancelled, 130 when aborted.
pub fn run(options: &Options) -> u8 {
    // `tx` stays open for the whole run: without keys or signals, time
    // alone drives it.
    let (tx, rx) = mpsc::channel();
    listen_for_interrupts(tx.clone());
    let raw = if io::stdin().is_terminal() && crossterm::terminal::enable_raw_mode().is_ok() {
        listen_for_keys(tx.clone());
        Some(RawMode)
    } else {
        None
    };

    let host = HostOptions::DEFAULT.with_seed(options.seed);
    let mut driver =
        ThreadDriver::new(Machine::new(options.settings, host)).with_time_scale(options.time_scale);
    let latency = driver
        .scaled(options.latency_ms)
        .unwrap_or(Duration::from_secs(3600));
    let mut sim = Sim {
        out: io::stdout().lock(),
        // Raw mode turns off the terminal's own `\n` to `\r\n`.
        eol: if raw.is_some() && io::stdout().is_terminal() {
            "\r\n"
        } else {
            "\n"
        },
        spinner: io::stdout().is_terminal(),
        loader: None,
        frame: 0,
        call_due: None,
        latency,
        calls: 0,
        aborted: false,
    };
    sim.line(&format!(
        "autoretry simulate: the provider fails {} time(s) with {:?}, then answers \
         ({}, time scale {}){}",
        options.failures,
        options.error,
        settings_summary(&options.settings),
        options.time_scale,
        if raw.is_some() {
            "; Esc cancels the retry, Ctrl-C twice aborts"
        } else {
            ""
        }
    ));

    // The user's prompt starts the first provider call.
    let mut interrupts = 0;
    let mut answered = false;
    sim.start_call();
    loop {
        let tick = sim
            .loader
            .filter(|_| sim.spinner)
            .map(|_| Instant::now() + SPIN_EVERY);
        let until = match (sim.call_due, tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match driver.wait(&rx, until) {
            Wake::Message(Msg::Escape) => sim.carry_out(&driver.handle(Input::AbortRetry)),
            Wake::Message(Msg::Interrupt) => {
                interrupts += 1;
                if interrupts == 1 {
                    sim.line("^C: abort_retry (Ctrl-C again aborts)");
                    sim.carry_out(&driver.handle(Input::AbortRetry));
                } else {
                    sim.line("^C: abort");
                    sim.carry_out(&driver.handle(Input::Abort));
                }
            }
            // `continue_agent` starts the next call.
            Wake::Fired(step) => sim.carry_out(&step),
            Wake::Until => {
                if sim.call_due.is_some_and(|due| due <= Instant::now()) {
                    sim.call_due = None;
                    answered = provider_answers(&mut sim, &mut driver, options);
                } else {
                    sim.frame = (sim.frame + 1) % SPINNER.len();
                    sim.draw_loader();
                }
            }
            // Never: `tx` is open.
            Wake::Closed => break,
        }
        let idle =
            !driver.state().is_retrying && sim.call_due.is_none() && driver.deadline().is_none();
        if sim.aborted || idle {
            break;
        }
    }
    sim.clear_loader();
    let outcome = if sim.aborted {
        Outcome::Aborted
    } else if answered {
        Outcome::Answered
    } else {
        Outcome::Failed
    };
    let summary = match outcome {
        Outcome::Answered => format!(
            "done: the agent got its answer after {} provider call(s)",
            sim.calls
        ),
        Outcome::Failed => format!(
            "done: the agent gave up after {} provider call(s)",
            sim.calls
        ),
        Outcome::Aborted => "done: aborted".to_owned(),
    };
    sim.line(&summary);
    drop(sim);
    drop(raw);
    drop(tx);
    match outcome {
        Outcome::Answered => 0,
        Outcome::Failed => 1,
        Outcome::Aborted => 130,
    }
}

/// The provider answers the call in flight; feeds the run's end to the
/// machine. Returns whether the answer was good.
fn provider_answers(sim: &mut Sim, driver: &mut ThreadDriver, options: &Options) -> bool {
    let good = sim.calls > options.failures;
    let message = if good {
        sim.line("agent: the provider answered (stopReason stop)");
        let message = AssistantMessage::new(StopReason::Stop);
        sim.carry_out(&driver.handle(Input::MessageEnd { message }));
        message
    } else {
        sim.line(&format!("agent: the provider failed: {}", options.error));
        let message = AssistantMessage::error(&options.error);
        match &options.rules {
            None => message,
            Some(rules) => {
                let ruled = rules.apply(message);
                if let Some(verdict) = ruled.should_retry {
                    sim.line(&format!("rules: shouldRetry {verdict}"));
                }
                ruled
            }
        }
    };
    let step = driver.handle(Input::AgentEnd {
        message,
        now_ms: None,
    });
    match step.outputs {
        Ok(_) => sim.carry_out(&step),
        Err(refused) => sim.line(&format!("agent: refused: {refused}")),
    }
    good
}

/// Sends `Interrupt` on every SIGINT (Ctrl-C outside raw mode).
fn listen_for_interrupts(tx: mpsc::Sender<Msg>) {
    let Ok(mut signals) = signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT]) else {
        return;
    };
    thread::spawn(move || {
        for _ in signals.forever() {
            if tx.send(Msg::Interrupt).is_err() {
                return;
            }
        }
    });
}

/// Sends `Escape` and `Interrupt` for Esc and Ctrl-C (raw mode).
fn listen_for_keys(tx: mpsc::Sender<Msg>) {
    use crossterm::event::{self, Event as TermEvent, KeyCode, KeyEventKind, KeyModifiers};
    thread::spawn(move || loop {
        let Ok(TermEvent::Key(key)) = event::read() else {
            continue;
        };
        if key.kind == KeyEventKind::Release {
            continue;
        }
        let msg = match key.code {
            KeyCode::Esc => Msg::Escape,
            KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Msg::Interrupt,
            _ => continue,
        };
        if tx.send(msg).is_err() {
            return;
        }
    });
}
