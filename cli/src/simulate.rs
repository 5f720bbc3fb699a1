//! `autoretry simulate-in-process`: the real machine, on the real-time driver, against
//! a scripted flaky provider.
//!
//! The provider fails `failures` times with the error text, then answers.
//! Each provider call takes `latency_ms`; backoffs and calls are multiplied
//! by the time scale. Every event is printed as the JSON line the RPC
//! stream carries; during a backoff the loader line of spec §8 shows (with
//! a spinner on a terminal), and a failed chain prints its failure line.
//!
//! On a terminal the loader counts the seconds down, in wall-clock time
//! (under `--time-scale` it also says the backoff's own length). Esc feeds
//! `abort_retry` while the loader shows (a backoff is pending) and is
//! ignored otherwise; a first Ctrl-C feeds `abort_retry` (during a backoff:
//! the retry is cancelled; otherwise a continued chain is ended and the call
//! in flight goes on), a second one feeds `abort`. Each Ctrl-C says what it
//! did.

use std::io::{self, IsTerminal, Write};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use crate::clock::ScaledClock;
use autoretry::host::clock::Clock;
use autoretry::host::thread::{ThreadDriver, WaitOutcome};
use autoretry::host::Step;
use autoretry::rules::Rules;
use autoretry::{
    AssistantMessage, Event, HostOptions, Input, LoaderLine, Machine, Output, Partial,
    RetrySettings, StopReason,
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
    /// What a failing call streamed before its error (spec §11.2).
    pub partial: Partial,
    /// How many other models the agent can switch to (spec §11.3).
    pub fallback_models: u32,
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
    extra(s.model_fallback, "modelFallback".into());
    extra(
        s.max_usage_wait_ms != d.max_usage_wait_ms,
        format!("maxUsageWaitMs {}", s.max_usage_wait_ms),
    );
    extra(
        s.max_total_delay_ms != d.max_total_delay_ms,
        format!("maxTotalDelayMs {}", s.max_total_delay_ms),
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
    /// When the backoff the loader shows ends, on the clock.
    loader_until: Option<Duration>,
    /// The clock of `--time-scale`, which the driver runs on too.
    clock: ScaledClock,
    time_scale: f64,
    frame: usize,
    /// When the provider call in flight answers, on the clock.
    call_due: Option<Duration>,
    /// How long a provider call takes, on the clock.
    latency: Duration,
    calls: u32,
    aborted: bool,
    /// The fallback models switched to so far.
    models_used: u32,
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
            let left = self
                .loader_until
                .and_then(|until| self.clock.real(until.saturating_sub(self.clock.now())));
            let text = loader_text(loader, left, self.time_scale);
            let _ = write!(
                self.out,
                "\r\x1b[2K{} {text} \u{b7} ctrl-c cancels too, twice aborts",
                SPINNER[self.frame]
            );
        }
        let _ = self.out.flush();
    }

    /// Starts a provider call (the user's prompt, or `continue_agent`).
    fn start_call(&mut self) {
        self.calls += 1;
        self.call_due = self.clock.now().checked_add(self.latency);
        let n = self.calls;
        self.line(&format!("agent: provider call {n}"));
    }

    fn clear_loader(&mut self) {
        self.loader_until = None;
        if self.loader.take().is_some() && self.spinner {
            let _ = write!(self.out, "\r\x1b[2K");
        }
    }
}

impl Sim {
    /// Carries out a step's outputs, in order (a refused step has none);
    /// `deadline` is the driver's after the step (when the loader's
    /// backoff ends).
    fn carry_out(&mut self, step: &Step<'_>, deadline: Option<Duration>) {
        self.carry_out_outputs(step);
        self.show_loader(deadline);
    }

    /// Carries out a step's outputs, in order (a refused step has none).
    fn carry_out_outputs(&mut self, step: &Step<'_>) {
        for output in step.outputs.iter().flatten() {
            self.output(output);
        }
    }

    /// Draws the loader of a backoff that ends at `deadline`, if one shows.
    fn show_loader(&mut self, deadline: Option<Duration>) {
        if self.loader.is_some() {
            self.loader_until = deadline;
            self.draw_loader();
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
                        } else {
                            let wait = self.clock.real(Duration::from_millis(delay_ms));
                            self.line(&loader_text(loader, wait, self.time_scale));
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
            Output::ResumeAgent => {
                self.clear_loader();
                self.line("agent: continuing the partial turn");
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
            | Output::Watch { .. }
            | Output::CancelTimer { .. }
            | Output::DropTrailingError
            | Output::MarkUsageLimit { .. }
            | Output::SwitchModel { .. }
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
    let clock = ScaledClock::new(options.time_scale);
    let mut driver = ThreadDriver::with_clock(Machine::new(options.settings, host), clock.clone());
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
        loader_until: None,
        clock,
        time_scale: options.time_scale,
        frame: 0,
        call_due: None,
        latency: Duration::from_millis(options.latency_ms),
        calls: 0,
        aborted: false,
        models_used: 0,
    };
    sim.line(&format!(
        "autoretry simulate-in-process: the provider fails {} time(s) with {:?}, then answers \
         ({}, time scale {}){}",
        options.failures,
        options.error,
        settings_summary(&options.settings),
        options.time_scale,
        if raw.is_some() {
            "; during a backoff Esc or Ctrl-C cancels the retry, a second Ctrl-C aborts"
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
            .and_then(|_| sim.clock.span(SPIN_EVERY))
            .and_then(|every| sim.clock.now().checked_add(every));
        let until = match (sim.call_due, tick) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        match driver.wait(&rx, until) {
            // Esc cancels only while the retry loader shows (spec §5.3).
            WaitOutcome::Message(Msg::Escape) => {
                if driver.machine().pending_timer().is_some() {
                    let step = driver.handle(Input::AbortRetry);
                    sim.carry_out(&step, driver.deadline());
                }
            }
            WaitOutcome::Message(Msg::Interrupt) => {
                interrupts += 1;
                let in_backoff = driver.machine().pending_timer().is_some();
                sim.line(interrupt_line(interrupts, in_backoff));
                let input = if interrupts == 1 {
                    Input::AbortRetry
                } else {
                    Input::Abort
                };
                let step = driver.handle(input);
                sim.carry_out(&step, driver.deadline());
            }
            // `continue_agent` starts the next call.
            WaitOutcome::Fired(step) => sim.carry_out(&step, driver.deadline()),
            WaitOutcome::Until => {
                if sim.call_due.is_some_and(|due| due <= sim.clock.now()) {
                    sim.call_due = None;
                    answered = provider_answers(&mut sim, &mut driver, options);
                } else {
                    sim.frame = (sim.frame + 1) % SPINNER.len();
                    sim.draw_loader();
                }
            }
            // Never: `tx` is open.
            WaitOutcome::Closed => break,
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
fn provider_answers(
    sim: &mut Sim,
    driver: &mut ThreadDriver<ScaledClock>,
    options: &Options,
) -> bool {
    let good = sim.calls > options.failures;
    let message = if good {
        sim.line("agent: the provider answered (stopReason stop)");
        let message = AssistantMessage::new(StopReason::Stop);
        let step = driver.handle(Input::MessageEnd { message });
        sim.carry_out(&step, driver.deadline());
        message
    } else {
        let streamed = match options.partial {
            Partial::None => String::new(),
            partial => format!(" after streaming {}", partial.as_str()),
        };
        sim.line(&format!(
            "agent: the provider failed{streamed}: {}",
            options.error
        ));
        let message = AssistantMessage::error(&options.error).with_partial(options.partial);
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
    // A failure the machine does not retry and no chain was open for: no
    // event says so, the prompt is simply over. Say why.
    let quiet_end = matches!(step.outputs.as_deref(), Ok([Output::CheckCompaction]));
    if !good && quiet_end {
        let settings = driver.machine().settings();
        sim.line(&format!(
            "agent: not retried: {}",
            why_not_retried(&message, &settings)
        ));
    }
    let asked = match &step.outputs {
        Ok(outputs) => outputs.iter().find_map(|o| match o {
            Output::SwitchModel { reason } => Some(*reason),
            _ => None,
        }),
        Err(_) => None,
    };
    match step.outputs {
        Ok(_) => sim.carry_out(&step, driver.deadline()),
        Err(refused) => sim.line(&format!("agent: refused: {refused}")),
    }
    drop(step);
    // The machine asks for another model (spec §11.3): switch while the
    // agent has one left.
    if let Some(reason) = asked {
        let switched = sim.models_used < options.fallback_models;
        if switched {
            sim.models_used += 1;
            sim.line(&format!(
                "agent: switch_model ({}): now on fallback model {}",
                reason.as_str(),
                sim.models_used
            ));
        } else {
            sim.line(&format!(
                "agent: switch_model ({}): no fallback model left",
                reason.as_str()
            ));
        }
        // The driver kept the failed message's text: the boolean answers.
        let step = driver.model_switched(switched);
        sim.carry_out_outputs(&step);
        drop(step);
        sim.show_loader(driver.deadline());
    }
    good
}

/// Why the machine retries no failure of `message` (spec §5.1: it enters
/// no chain): the first rule, in the order of spec §3 and §11.2, that
/// turns it away.
fn why_not_retried(message: &AssistantMessage<'_>, settings: &RetrySettings) -> &'static str {
    if !settings.enabled {
        "auto-retry is off (retry.enabled false)"
    } else if message.error_text().is_none() {
        "the error has no text (spec §3, rule 2)"
    } else if message.partial == Partial::Tools {
        "the turn had streamed a tool call, which a replay could repeat \
         (partial tools, spec §11.2)"
    } else if message.should_retry == Some(false) {
        "the message says shouldRetry false (spec §10.2)"
    } else if message.is_context_overflow_with(0, settings.classifier) {
        "the context overflowed: compaction, not a retry (spec §3.3)"
    } else {
        "the error is not one to retry (spec §3)"
    }
}

/// What the `n`-th Ctrl-C does, said as it happens.
fn interrupt_line(n: u32, in_backoff: bool) -> &'static str {
    match (n, in_backoff) {
        (1, true) => "^C: the retry is cancelled (abort_retry); Ctrl-C again aborts the agent",
        (1, false) => {
            "^C: abort_retry (no backoff pending: a continued chain ends, the call in flight goes on); \
             Ctrl-C again aborts the agent"
        }
        _ => "^C: the agent is aborted (abort)",
    }
}

/// The loader line of spec §8 with the wall-clock seconds `left` (the
/// backoff's own when unknown); under a time scale other than 1 it also
/// says the backoff's length.
fn loader_text(loader: LoaderLine, left: Option<Duration>, scale: f64) -> String {
    let shown = LoaderLine {
        delay_ms: left.map_or(loader.delay_ms, |left| {
            u64::try_from(left.as_millis()).unwrap_or(u64::MAX)
        }),
        ..loader
    };
    if scale == 1.0 {
        shown.to_string()
    } else {
        format!(
            "{shown} [a {}s backoff at time scale {scale}]",
            loader.seconds()
        )
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loader_counts_down_in_wall_clock_seconds() {
        let loader = LoaderLine {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
        };
        assert_eq!(
            loader_text(loader, None, 1.0),
            "Retrying (1/3) in 2s\u{2026} (esc to cancel)"
        );
        assert_eq!(
            loader_text(loader, Some(Duration::from_millis(1400)), 1.0),
            "Retrying (1/3) in 1s\u{2026} (esc to cancel)"
        );
        let loader = LoaderLine {
            delay_ms: 60_000,
            ..loader
        };
        assert_eq!(
            loader_text(loader, Some(Duration::from_secs(6)), 0.1),
            "Retrying (1/3) in 6s\u{2026} (esc to cancel) [a 60s backoff at time scale 0.1]"
        );
    }

    #[test]
    fn each_ctrl_c_says_what_it_does() {
        assert!(interrupt_line(1, true).contains("the retry is cancelled"));
        assert!(interrupt_line(1, false).contains("the call in flight goes on"));
        assert!(interrupt_line(2, true).contains("aborted"));
    }
}
