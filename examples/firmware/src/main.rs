//! Replays every conformance vector through the machine on a Cortex-M3
//! (QEMU `lm3s6965evb`), with no allocator, and exits through semihosting:
//! status 0 only when every step's outputs, state and refusal match (and,
//! under a retry budget, its tokens). Three folders run, each reported on
//! its own line: the vectors of sections 1–9, those of the policy options
//! of section 10 (new settings keys, the host's jitter seed, the message
//! fields of §10.2, fail-fast final errors) and those of section 11
//! (continuations after partial output, model fallback, the shared retry
//! budget, the usage-reset wait, the total wait).
//!
//! The vectors are compiled in by `build.rs`. The host side is simulated:
//! a millisecond clock that advances to a timer's deadline when the vector
//! fires it, and the test kit's `VectorHost` (the vectors' timer ordinals
//! to the machine's ids and back, the kept error text for the usage-limit
//! and model-switch answers), and the scenario's retry budget, which every
//! step is handled with (`handle_with_budget`) when the vector gives one.
#![no_std]
#![no_main]

use core::panic::PanicInfo;

use autoretry::classify::Classifier;
use autoretry::{
    AssistantMessage, ErrorText, Event, FallbackReason, FinalError, HostOptions, Input, JitterPct,
    Machine, Output, Partial, Profile, RetryBudget, RetrySettings, RetryState, StopReason, TimerId,
    Usage,
};
use autoretry_testkit::VectorHost;
use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};

/// A scenario: a fresh machine and its steps.
struct Scenario {
    name: &'static str,
    /// The vector file it comes from.
    file: &'static str,
    /// Its folder, an index into `vectors::FOLDERS`.
    folder: usize,
    /// The line of its scenario header.
    line: usize,
    settings: Settings,
    host: HostOptions,
    /// The shared retry budget of every step (spec §11.4), if any.
    budget: Option<Budget>,
    steps: &'static [Step],
}

/// A scenario's `budget`, its figures in thousandths as `build.rs` read
/// them exactly; built at run time, so that the crate's checks apply.
struct Budget {
    max_tokens: u32,
    ratio_milli: u32,
    tokens_milli: u32,
}

impl Budget {
    fn get(&self) -> Result<RetryBudget, &'static str> {
        RetryBudget::new(self.max_tokens, self.ratio_milli)
            .and_then(|b| b.with_tokens_milli(self.tokens_milli))
            .map_err(|_| "the scenario's budget is refused")
    }
}

/// One vector line.
struct Step {
    /// Line number in its file (for failure reports).
    line: usize,
    input: In,
    /// In the vectors' form: timers as ordinals.
    out: &'static [Output<'static>],
    state: RetryState,
    refused: bool,
    /// Under a budget, its tokens after the step, in thousandths.
    budget_milli: Option<u32>,
}

/// A settings group as the vectors give it. The profile and the classifier
/// are wire names, resolved at run time (`from_wire`), so the generated
/// statics compile whichever variants the core has; a group that this
/// build's core cannot represent fails its scenario.
#[derive(Debug)]
struct Settings {
    profile: &'static str,
    enabled: bool,
    max_retries: u32,
    base_delay_ms: u64,
    max_delay_ms: u64,
    backoff_cap_ms: u64,
    jitter_pct: u8,
    honor_hints: bool,
    classifier: &'static str,
    model_fallback: bool,
    max_usage_wait_ms: u64,
    max_total_delay_ms: u64,
    first_event_timeout_ms: u64,
    idle_timeout_ms: u64,
    retry_empty: bool,
}

impl Settings {
    fn get(&self) -> Result<RetrySettings, &'static str> {
        Ok(RetrySettings {
            profile: Profile::from_wire(self.profile)
                .ok_or("the core of this build lacks the settings' profile")?,
            enabled: self.enabled,
            max_retries: self.max_retries,
            base_delay_ms: self.base_delay_ms,
            max_delay_ms: self.max_delay_ms,
            backoff_cap_ms: self.backoff_cap_ms,
            jitter_pct: JitterPct::new(self.jitter_pct).ok_or("jitterPct above 100")?,
            honor_hints: self.honor_hints,
            classifier: Classifier::from_wire(self.classifier)
                .ok_or("the core of this build lacks the settings' classifier")?,
            model_fallback: self.model_fallback,
            max_usage_wait_ms: self.max_usage_wait_ms,
            max_total_delay_ms: self.max_total_delay_ms,
            first_event_timeout_ms: self.first_event_timeout_ms,
            idle_timeout_ms: self.idle_timeout_ms,
            retry_empty: self.retry_empty,
        })
    }
}

/// An input as the vectors state it.
#[derive(Debug)]
enum In {
    /// Fed as is.
    Machine(Input<'static>),
    /// `settings`, built at run time.
    Settings(Settings),
    /// `timer_fired` with the vectors' ordinal.
    TimerFired { ordinal: u64 },
    /// `usage_limit_marked`: the host passes back the text it marked.
    UsageLimitMarked { switched: bool },
    /// `model_switched`: the host passes back the text of the decision.
    ModelSwitched { switched: bool },
    /// An input the host refuses before the machine (bad settings group).
    Invalid,
}

#[allow(clippy::all)]
mod vectors {
    use super::*;
    include!(concat!(env!("OUT_DIR"), "/vectors.rs"));
}

/// The host around the machine.
struct Host {
    machine: Machine,
    /// Timer ordinals and the kept text of the last decision that asked
    /// the host (`mark_usage_limit`, `switch_model`).
    vectors: VectorHost<&'static str>,
    /// The scenario's retry budget, if it has one.
    budget: Option<RetryBudget>,
    /// The pending timer and its deadline on the simulated clock.
    pending: Option<(TimerId, u64)>,
    /// The simulated clock, ms since the scenario started.
    now_ms: u64,
}

impl Host {
    fn new(scenario: &Scenario) -> Result<Self, &'static str> {
        Ok(Host {
            machine: Machine::new(scenario.settings.get()?, scenario.host),
            vectors: VectorHost::new(),
            budget: scenario.budget.as_ref().map(Budget::get).transpose()?,
            pending: None,
            now_ms: 0,
        })
    }

    /// Deep sleep between two steps: the machine is saved as postcard bytes
    /// and restored from them; the host keeps its own deadline (`pending`).
    #[cfg(feature = "snapshot")]
    fn deep_sleep(&mut self) -> Result<(), &'static str> {
        let mut buf = [0u8; autoretry::Snapshot::MAX_POSTCARD_LEN];
        let bytes = postcard::to_slice(&self.machine.snapshot(), &mut buf)
            .map_err(|_| "a snapshot does not fit its buffer")?;
        let snapshot = postcard::from_bytes(bytes).map_err(|_| "a snapshot does not decode")?;
        let restored = Machine::restore(snapshot).map_err(|_| "a snapshot is refused")?;
        if restored != self.machine {
            return Err("the restored machine differs");
        }
        self.machine = restored;
        Ok(())
    }

    /// Runs one step; `Err` describes the first mismatch.
    fn step(&mut self, step: &Step) -> Result<(), &'static str> {
        #[cfg(feature = "snapshot")]
        self.deep_sleep()?;
        let input = match &step.input {
            In::Machine(input) => *input,
            In::Settings(settings) => Input::Settings(settings.get()?),
            &In::TimerFired { ordinal } => {
                let id = self
                    .vectors
                    .machine_timer(ordinal)
                    // An ordinal never produced: an id the machine never issued.
                    .unwrap_or(TimerId(u64::MAX));
                if let Some((pending, deadline)) = self.pending {
                    if pending == id {
                        // The clock runs until the timer is due.
                        self.now_ms = self.now_ms.max(deadline);
                        self.pending = None;
                    }
                }
                Input::TimerFired { timer: id }
            }
            &In::UsageLimitMarked { switched } => Input::UsageLimitMarked {
                switched,
                error_message: self.vectors.marked().copied().unwrap_or(""),
            },
            &In::ModelSwitched { switched } => Input::ModelSwitched {
                switched,
                error_message: self.vectors.marked().copied().unwrap_or(""),
            },
            In::Invalid => {
                return self.check_rest(step, true);
            }
        };
        let handled = match &mut self.budget {
            Some(budget) => self.machine.handle_with_budget(input, budget),
            None => self.machine.handle(input),
        };
        let outputs = match handled {
            Ok(outputs) => outputs,
            Err(_) => return self.check_rest(step, true),
        };
        if step.refused {
            return Err("the input was accepted, the vector refuses it");
        }
        if outputs.len() != step.out.len() {
            hprintln!("  got {:?}", outputs.as_slice());
            hprintln!("  want {:?}", step.out);
            return Err("the number of outputs differs");
        }
        for (&got, want) in outputs.iter().zip(step.out) {
            match got {
                // A watch (spec §12.2) runs on the same timer as a sleep.
                Output::Sleep { ms, timer } | Output::Watch { ms, timer } => {
                    self.pending = Some((timer, self.now_ms.saturating_add(ms)));
                }
                Output::CancelTimer { timer }
                    if self.pending.is_some_and(|(id, _)| id == timer) =>
                {
                    self.pending = None;
                }
                _ => {}
            }
            let got = self.vectors.vector_output(&input, got);
            if !same_output(&got, want) {
                hprintln!("  got {:?}", got);
                hprintln!("  want {:?}", want);
                return Err("an output differs");
            }
        }
        self.check_rest(step, false)
    }

    /// Checks the refusal flag, the state and the budget's tokens.
    fn check_rest(&self, step: &Step, refused: bool) -> Result<(), &'static str> {
        if refused != step.refused {
            return Err(if refused {
                "the input was refused, the vector accepts it"
            } else {
                "the input was accepted, the vector refuses it"
            });
        }
        if refused && !step.out.is_empty() {
            return Err("a refused step expects outputs");
        }
        let state = self.machine.state();
        if state != step.state {
            hprintln!("  got {:?}", state);
            hprintln!("  want {:?}", step.state);
            return Err("the state differs");
        }
        let tokens = self.budget.as_ref().map(RetryBudget::tokens_milli);
        if tokens != step.budget_milli {
            hprintln!("  got budget {:?} thousandths", tokens);
            hprintln!("  want budget {:?} thousandths", step.budget_milli);
            return Err("the budget's tokens differ");
        }
        Ok(())
    }
}

/// What one folder gave.
#[derive(Clone, Copy)]
struct Tally {
    scenarios: usize,
    scenarios_passed: usize,
    steps: usize,
    steps_passed: usize,
}

impl Tally {
    const ZERO: Tally = Tally {
        scenarios: 0,
        scenarios_passed: 0,
        steps: 0,
        steps_passed: 0,
    };
}

#[entry]
fn main() -> ! {
    let mut tallies = [Tally::ZERO; vectors::FOLDERS.len()];
    let mut steps_run = 0usize;
    let mut virtual_ms: u64 = 0;
    let mut all = true;
    for scenario in vectors::SCENARIOS {
        let mut passed = 0;
        // The line and the input of the first mismatch, and why.
        let mut failure: Option<(usize, Option<&In>, &str)> = None;
        match Host::new(scenario) {
            Ok(mut host) => {
                for step in scenario.steps {
                    steps_run += 1;
                    match host.step(step) {
                        Ok(()) => passed += 1,
                        Err(why) => {
                            failure = Some((step.line, Some(&step.input), why));
                            break;
                        }
                    }
                }
                virtual_ms = virtual_ms.saturating_add(host.now_ms);
            }
            Err(why) => failure = Some((scenario.line, None, why)),
        }
        let Some(tally) = tallies.get_mut(scenario.folder) else {
            hprintln!("FAIL {}: no folder {}", scenario.name, scenario.folder);
            all = false;
            continue;
        };
        tally.scenarios += 1;
        tally.steps += scenario.steps.len();
        tally.steps_passed += passed;
        match failure {
            None => tally.scenarios_passed += 1,
            Some((line, input, why)) => {
                hprintln!(
                    "FAIL {} ({} line {}, {:?}): {}",
                    scenario.name,
                    scenario.file,
                    line,
                    input,
                    why
                );
                all = false;
            }
        }
    }
    let (mut scenarios, mut steps) = (0, 0);
    for (folder, tally) in vectors::FOLDERS.iter().zip(&tallies) {
        scenarios += tally.scenarios;
        steps += tally.steps;
        hprintln!(
            "{}: {}/{} scenarios, {}/{} steps passed",
            folder,
            tally.scenarios_passed,
            tally.scenarios,
            tally.steps_passed,
            tally.steps
        );
    }
    // Every scenario was counted once, in its folder.
    all &= scenarios == vectors::SCENARIO_COUNT && steps == vectors::STEP_COUNT;
    hprintln!(
        "autoretry on thumbv7m: {} scenarios, {} steps ({} run), {} ms of simulated time",
        scenarios,
        steps,
        steps_run,
        virtual_ms
    );
    debug::exit(if all {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    #[allow(clippy::empty_loop)]
    loop {}
}

/// Whether an output of the machine (in the vectors' form) is the one the
/// vector expects. A final error compares as its text: the vectors write the
/// fail-fast sentence of spec 10.3 in full, the machine gives a value that
/// writes it (`FinalError::WaitTooLong`), compared without allocating.
fn same_output(got: &Output<'_>, want: &Output<'_>) -> bool {
    match (got, want) {
        // A start's text compares as written too: the machine carries a
        // stall's (spec §12.2) as its number.
        (
            Output::Emit(Event::Start {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            }),
            Output::Emit(Event::Start {
                attempt: want_attempt,
                max_attempts: want_max,
                delay_ms: want_delay,
                error_message: ErrorText::Text(want_text),
            }),
        ) => {
            attempt == want_attempt
                && max_attempts == want_max
                && delay_ms == want_delay
                && error_message == want_text
        }
        (
            Output::Emit(Event::End {
                success,
                attempt,
                final_error,
            }),
            Output::Emit(Event::End {
                success: want_success,
                attempt: want_attempt,
                final_error: want_error,
            }),
        ) => {
            success == want_success
                && attempt == want_attempt
                && match (final_error, want_error) {
                    (None, None) => true,
                    (Some(error), Some(FinalError::Text(text))) => error == text,
                    (Some(error), Some(want)) => error == want,
                    _ => false,
                }
        }
        _ => got == want,
    }
}

/// Reports the panic and exits non-zero.
#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    #[allow(clippy::empty_loop)]
    loop {}
}
