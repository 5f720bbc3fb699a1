//! Replays every conformance vector through the machine on a Cortex-M3
//! (QEMU `lm3s6965evb`), with no allocator, and exits through semihosting:
//! status 0 only when every step's outputs, state and refusal match.
//!
//! The vectors are compiled in by `build.rs`. The host side is simulated:
//! a millisecond clock that advances to a timer's deadline when the vector
//! fires it, and the test kit's `VectorHost` (the vectors' timer ordinals
//! to the machine's ids and back, the kept error text for the usage-limit
//! answer).
#![no_std]
#![no_main]

use core::panic::PanicInfo;

use autoretry::{
    AssistantMessage, Event, HostOptions, Input, Machine, Output, RetrySettings, RetryState,
    StopReason, TimerId, Usage,
};
use autoretry_testkit::VectorHost;
use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};

/// A scenario: a fresh machine and its steps.
struct Scenario {
    name: &'static str,
    settings: RetrySettings,
    host: HostOptions,
    steps: &'static [Step],
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
}

/// An input as the vectors state it.
#[derive(Debug)]
enum In {
    /// Fed as is.
    Machine(Input<'static>),
    /// `timer_fired` with the vectors' ordinal.
    TimerFired { ordinal: u64 },
    /// `usage_limit_marked`: the host passes back the text it marked.
    UsageLimitMarked { switched: bool },
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
    /// Timer ordinals and the kept usage-limit text.
    vectors: VectorHost<&'static str>,
    /// The pending timer and its deadline on the simulated clock.
    pending: Option<(TimerId, u64)>,
    /// The simulated clock, ms since the scenario started.
    now_ms: u64,
}

impl Host {
    fn new(scenario: &Scenario) -> Self {
        Host {
            machine: Machine::new(scenario.settings, scenario.host),
            vectors: VectorHost::new(),
            pending: None,
            now_ms: 0,
        }
    }

    /// Runs one step; `Err` describes the first mismatch.
    fn step(&mut self, step: &Step) -> Result<(), &'static str> {
        let input = match step.input {
            In::Machine(input) => input,
            In::TimerFired { ordinal } => {
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
            In::UsageLimitMarked { switched } => Input::UsageLimitMarked {
                switched,
                error_message: self.vectors.marked().copied().unwrap_or(""),
            },
            In::Invalid => {
                return self.check_rest(step, true);
            }
        };
        let outputs = match self.machine.handle(input) {
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
                Output::Sleep { ms, timer } => {
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
            if got != *want {
                hprintln!("  got {:?}", got);
                hprintln!("  want {:?}", want);
                return Err("an output differs");
            }
        }
        self.check_rest(step, false)
    }

    /// Checks the refusal flag and the state.
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
        Ok(())
    }
}

#[entry]
fn main() -> ! {
    let (mut scenarios_passed, mut steps_passed, mut steps_run) = (0usize, 0usize, 0usize);
    let mut virtual_ms: u64 = 0;
    for scenario in vectors::SCENARIOS {
        let mut host = Host::new(scenario);
        let mut ok = true;
        for step in scenario.steps {
            steps_run += 1;
            match host.step(step) {
                Ok(()) => steps_passed += 1,
                Err(why) => {
                    hprintln!(
                        "FAIL {} (line {}, {:?}): {}",
                        scenario.name,
                        step.line,
                        step.input,
                        why
                    );
                    ok = false;
                    break;
                }
            }
        }
        virtual_ms = virtual_ms.saturating_add(host.now_ms);
        if ok {
            scenarios_passed += 1;
        }
    }
    let all = scenarios_passed == vectors::SCENARIO_COUNT && steps_passed == vectors::STEP_COUNT;
    hprintln!(
        "autoretry on thumbv7m: {}/{} scenarios, {}/{} steps passed ({} steps run, {} ms of simulated time)",
        scenarios_passed,
        vectors::SCENARIO_COUNT,
        steps_passed,
        vectors::STEP_COUNT,
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

/// Reports the panic and exits non-zero.
#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    #[allow(clippy::empty_loop)]
    loop {}
}
