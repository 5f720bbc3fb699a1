//! The embassy driver (`autoretry::host::embassy`) on every vector, in virtual
//! time: embassy-time's mock driver stands still unless the test advances
//! it, so a backoff must not end one millisecond before its `sleep` says and
//! must end exactly then; every other input travels through the channel.
//! The mock clock is global: this file has one test.
#![cfg(all(feature = "embassy", feature = "json"))]

use crate::common;

use std::fs;
use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use autoretry::host::embassy::{duration_from_ms, Channel, EmbassyDriver};
use autoretry::host::Step;
use autoretry::wire::json::InputOwned;
use autoretry::{Input, Machine, Output, TimerId};
use autoretry_testkit::vector::{ScenarioHeader, VectorLine};
use autoretry_testkit::VectorHost;
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_time::{Duration, Instant, MockDriver};
use serde_json::Value;

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Polls `future` once.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(Noop));
    future.poll(&mut Context::from_waker(&waker))
}

/// One scenario of a vector file: its header and its steps (input, line).
struct Scenario {
    header: ScenarioHeader,
    steps: Vec<(InputOwned, Value, String)>,
}

fn scenarios() -> Vec<Scenario> {
    let paths = common::vector_files();
    let mut all = Vec::new();
    for path in &paths {
        let text = fs::read_to_string(path).unwrap();
        for (index, line) in text.split('\n').enumerate() {
            let at = format!(
                "{}:{}",
                path.file_name().unwrap().to_string_lossy(),
                index + 1
            );
            match VectorLine::parse(line).unwrap() {
                None => {}
                Some(VectorLine::Scenario(header)) => all.push(Scenario {
                    header,
                    steps: Vec::new(),
                }),
                Some(VectorLine::Step(input)) => {
                    let scenario: &mut Scenario = all.last_mut().expect("a scenario line first");
                    scenario
                        .steps
                        .push((input, serde_json::from_str(line).unwrap(), at));
                }
            }
        }
    }
    all
}

/// Runs one scenario; returns the steps passed (it panics on a mismatch).
fn run(scenario: &Scenario) -> usize {
    let clock = MockDriver::get();
    clock.reset();
    let inputs: Channel<NoopRawMutex, Input<'_>, 4> = Channel::new();
    let header = &scenario.header;
    let mut driver = EmbassyDriver::new(
        Machine::new(header.settings, header.host),
        inputs.receiver(),
    );
    let mut host = VectorHost::<&str>::new();
    // When the last `sleep` said its timer is due (virtual time): the only
    // timer that can be pending.
    let mut due = Instant::now();
    let mut passed = 0;
    for (input, want, at) in &scenario.steps {
        let want_refused = want.get("refused") == Some(&Value::Bool(true));
        let step: Step<'_> = match input {
            InputOwned::Invalid { .. } => {
                // The host refuses it without asking the machine.
                assert!(want_refused, "{at}: refused");
                assert_eq!(
                    serde_json::to_value(driver.machine().state()).unwrap(),
                    want["state"],
                    "{at}"
                );
                passed += 1;
                continue;
            }
            InputOwned::TimerFired { timer: ordinal } => {
                match host.machine_timer(*ordinal) {
                    Some(id) if driver.machine().pending_timer() == Some(id) => {
                        // The driver's own timer: advance virtual time to
                        // when the `sleep` said, not when the driver thinks.
                        let mut next = pin!(driver.next());
                        let left = due.saturating_duration_since(Instant::now());
                        if left > Duration::from_ticks(0) {
                            let early = left
                                .checked_sub(Duration::from_millis(1))
                                .unwrap_or(Duration::from_ticks(0));
                            clock.advance(early);
                            // Twice: a due `Timer` yields once before it completes.
                            for _ in 0..2 {
                                assert!(
                                    poll_once(next.as_mut()).is_pending(),
                                    "{at}: the backoff ended early"
                                );
                            }
                            clock.advance(left.checked_sub(early).unwrap());
                        }
                        // An embassy `Timer` yields once before it completes,
                        // even when due: at most two polls.
                        let polled = match poll_once(next.as_mut()) {
                            Poll::Pending => poll_once(next.as_mut()),
                            ready => ready,
                        };
                        match polled {
                            Poll::Ready(step) => {
                                assert_eq!(step.input, Input::TimerFired { timer: id }, "{at}");
                                step
                            }
                            Poll::Pending => panic!("{at}: the backoff did not end on time"),
                        }
                    }
                    other => {
                        // A stale or never-produced timer: the host delivers it late.
                        let timer = other.unwrap_or(TimerId(u64::MAX));
                        send(&inputs, Input::TimerFired { timer }, &mut driver, at)
                    }
                }
            }
            other => {
                let marked = host.marked().copied().unwrap_or("");
                let input = other.as_input(marked).expect("valid");
                send(&inputs, input, &mut driver, at)
            }
        };
        let refused = step.outputs.is_err();
        assert_eq!(refused, want_refused, "{at}: refused");
        let mut out = Vec::new();
        for output in step.outputs.unwrap_or_default() {
            if let Output::Sleep { ms, .. } = output {
                due = Instant::now().saturating_add(duration_from_ms(ms));
            }
            let output = host.vector_output(&step.input, output);
            out.push(serde_json::to_value(output).unwrap());
        }
        assert_eq!(Value::Array(out), want["out"], "{at}");
        assert_eq!(
            serde_json::to_value(driver.machine().state()).unwrap(),
            want["state"],
            "{at}"
        );
        // The driver's timer is armed exactly while the machine's is pending.
        assert_eq!(
            driver.timer_deadline().is_some(),
            driver.machine().pending_timer().is_some(),
            "{at}"
        );
        passed += 1;
    }
    passed
}

/// Sends `input` and expects the driver to take it at once, before any
/// timer (virtual time does not move).
fn send<'a>(
    inputs: &Channel<NoopRawMutex, Input<'a>, 4>,
    input: Input<'a>,
    driver: &mut EmbassyDriver<'_, 'a, NoopRawMutex, 4>,
    at: &str,
) -> Step<'a> {
    inputs.try_send(input).expect("room in the channel");
    match poll_once(pin!(driver.next())) {
        Poll::Ready(step) => {
            assert_eq!(step.input, input, "{at}");
            step
        }
        Poll::Pending => panic!("{at}: the driver did not take the input"),
    }
}

#[test]
fn every_vector_in_virtual_time() {
    let scenarios = scenarios();
    let steps: usize = scenarios.iter().map(|s| s.steps.len()).sum();
    let passed: usize = scenarios.iter().map(run).sum();
    assert_eq!(passed, steps);
    assert!(steps > 100, "only {steps} steps");

    // An input that arrives during the backoff wins the race with the timer:
    // the abort cancels it, and the timer never fires afterwards.
    let clock = MockDriver::get();
    clock.reset();
    let inputs: Channel<NoopRawMutex, Input<'_>, 4> = Channel::new();
    let mut driver = EmbassyDriver::new(Machine::default(), inputs.receiver());
    let fail = Input::AgentEnd {
        message: autoretry::AssistantMessage::error("overloaded"),
        now_ms: None,
    };
    let step = send(&inputs, fail, &mut driver, "race");
    assert!(matches!(
        step.outputs.unwrap()[2],
        Output::Sleep { ms: 2000, .. }
    ));
    {
        let mut next = pin!(driver.next());
        clock.advance(Duration::from_millis(1999));
        assert!(poll_once(next.as_mut()).is_pending());
        inputs.try_send(Input::AbortRetry).unwrap();
        clock.advance(Duration::from_millis(1));
        // Both are ready: the timer is polled first and wins.
        let Poll::Ready(step) = poll_once(next.as_mut()) else {
            panic!("not ready")
        };
        assert!(matches!(step.input, Input::TimerFired { .. }));
    }
    // The abort is still in the channel, and it ends the chain.
    let Poll::Ready(step) = poll_once(pin!(driver.next())) else {
        panic!("the abort was lost")
    };
    assert_eq!(step.input, Input::AbortRetry);
    assert!(!driver.machine().is_retrying());

    let step = send(&inputs, fail, &mut driver, "race");
    assert!(matches!(
        step.outputs.unwrap()[2],
        Output::Sleep { ms: 2000, .. }
    ));
    {
        let mut next = pin!(driver.next());
        clock.advance(Duration::from_millis(1000));
        assert!(poll_once(next.as_mut()).is_pending());
        inputs.try_send(Input::AbortRetry).unwrap();
        let Poll::Ready(step) = poll_once(next.as_mut()) else {
            panic!("not ready")
        };
        assert_eq!(step.input, Input::AbortRetry);
        assert!(matches!(
            step.outputs.unwrap()[0],
            Output::CancelTimer { .. }
        ));
    }
    // The backoff's deadline passes: nothing fires.
    assert!(driver.timer_deadline().is_none());
    clock.advance(Duration::from_millis(5000));
    assert!(poll_once(pin!(driver.next())).is_pending());
}
