//! The embassy driver (`autoretry::host::embassy`) on every vector, in virtual
//! time: embassy-time's mock driver stands still unless the test advances
//! it, so a backoff must not end one millisecond before its `sleep` says and
//! must end exactly then; every other input travels through the channel.
//! The vectors of sections 1–9, those of the policy options of section 10
//! (capped, jittered and hinted waits, fail-fast ends) and those of the
//! stream of section 12 (a `watch` on the driver's timer, as a `sleep`)
//! run. The mock clock is global: this file has one test.
#![cfg(all(feature = "embassy", feature = "json"))]

use crate::common::scenarios::{refused, scenarios, Scenario, FOLDERS};

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use autoretry::host::embassy::{duration_from_ms, receive, Channel, EmbassyDriver, EmbassySleeper};
use autoretry::host::Step;
use autoretry::wire::json::InputLine;
use autoretry::{HostOptions, Input, InputBuf, Machine, Output, RetrySettings, TimerId};
use autoretry_testkit::VectorHost;
use embassy_sync::blocking_mutex::raw::NoopRawMutex;
use embassy_time::{Duration, Instant, MockDriver};
use serde_json::Value;

/// The timer the driver runs: the backoff's, or the stream's watch (spec
/// §12.2), never both.
fn pending(machine: &Machine) -> Option<TimerId> {
    machine.pending_timer().or(machine.pending_watch())
}

struct Noop;

impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Polls `future` once.
fn poll_once<F: Future>(future: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    let waker = Waker::from(Arc::new(Noop));
    future.poll(&mut Context::from_waker(&waker))
}

/// Fails the scenario with a message unless `$cond`.
macro_rules! check {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err(format!($($why)+));
        }
    };
}

/// Fails the scenario unless the two are equal.
macro_rules! check_eq {
    ($got:expr, $want:expr, $at:expr) => {{
        let (got, want) = (&$got, &$want);
        check!(got == want, "{}: got {got:?}, want {want:?}", $at);
    }};
}

/// Runs one scenario: the number of steps (all passed), or the first
/// mismatch. `stamped`: the stream's inputs go through
/// `Driver::stream_start`/`stream_event`, stamped by the driver's clock,
/// after the mock clock moved to the vector's `nowMs` (plus an offset that
/// only grows where the vector's clock is behind the driver's).
fn run(scenario: &Scenario, stamped: bool) -> Result<usize, String> {
    let clock = MockDriver::get();
    clock.reset();
    let inputs: Channel<NoopRawMutex, Input<'_>, 4> = Channel::new();
    let rx = inputs.receiver();
    let header = &scenario.header;
    let mut driver = EmbassyDriver::new(Machine::new(header.settings, header.host), EmbassySleeper);
    let mut host = VectorHost::<&str>::new();
    // When the last `sleep` said its timer is due (virtual time): the only
    // timer that can be pending.
    let mut due = Instant::now();
    let mut passed = 0;
    // The driver's clock minus the vector's, in milliseconds.
    let mut offset = 0;
    for (input, want, at) in &scenario.steps {
        let want_refused = refused(want);
        let stamp = match input {
            InputLine::Input(InputBuf::StreamStart { now_ms }) if stamped => Some((true, *now_ms)),
            InputLine::Input(InputBuf::StreamEvent { now_ms }) if stamped => Some((false, *now_ms)),
            _ => None,
        };
        // What the host feeds through the channel; `None`: the driver's own
        // timer fires.
        let fed = match input {
            InputLine::Refused(_) => {
                // The host refuses it without asking the machine.
                check!(
                    want_refused,
                    "{at}: refused by the host, the vector accepts it"
                );
                check_eq!(
                    serde_json::to_value(driver.machine().state()).unwrap(),
                    want["state"],
                    at
                );
                passed += 1;
                continue;
            }
            InputLine::Input(InputBuf::TimerFired { timer: ordinal }) => {
                match host.machine_timer(ordinal.get()) {
                    Some(id) if pending(driver.machine()) == Some(id) => None,
                    // A stale or never-produced timer: the host delivers it late.
                    other => Some(Input::TimerFired {
                        timer: other.unwrap_or(TimerId(u64::MAX)),
                    }),
                }
            }
            other => Some(
                other
                    .as_input(host.marked().copied().unwrap_or(""))
                    .expect("valid"),
            ),
        };
        // The step borrows the driver: it is read in this block, then the
        // driver is free for queries.
        let out = {
            let step: Step<'_> = match fed {
                Some(_) if stamp.is_some() => {
                    let (start, vector_ms) = stamp.unwrap_or_default();
                    let now = driver.now_ms();
                    let mut target = vector_ms.saturating_add(offset);
                    if target < now {
                        offset = now - vector_ms;
                        target = now;
                    }
                    clock.advance(Duration::from_millis(target - now));
                    let (step, want_input) = if start {
                        (driver.stream_start(), Input::StreamStart { now_ms: target })
                    } else {
                        (driver.stream_event(), Input::StreamEvent { now_ms: target })
                    };
                    check_eq!(step.input, want_input, at);
                    step
                }
                Some(input) => send(&inputs, input, &mut driver, at)?,
                None => {
                    let id = pending(driver.machine());
                    // The driver's own timer: advance virtual time to when
                    // the `sleep` said, not when the driver thinks.
                    let mut next = pin!(driver.next(receive(&rx)));
                    let left = due.saturating_duration_since(Instant::now());
                    if left > Duration::from_ticks(0) {
                        let early = left
                            .checked_sub(Duration::from_millis(1))
                            .unwrap_or(Duration::from_ticks(0));
                        clock.advance(early);
                        // Twice: a due `Timer` yields once before it completes.
                        for _ in 0..2 {
                            check!(
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
                        Poll::Ready(Some(step)) => {
                            check_eq!(
                                Some(step.input),
                                id.map(|timer| Input::TimerFired { timer }),
                                at
                            );
                            step
                        }
                        _ => return Err(format!("{at}: the backoff did not end on time")),
                    }
                }
            };
            check_eq!(
                step.outputs.is_err(),
                want_refused,
                format!("{at}: refused")
            );
            // The vector host keeps the text of the input fed, which
            // outlives the step (a timer's has none).
            let input = fed.unwrap_or(Input::TimerFired { timer: TimerId(0) });
            let mut out = Vec::new();
            for output in step.outputs.iter().flatten() {
                if let Output::Sleep { ms, .. } | Output::Watch { ms, .. } = *output {
                    due = Instant::now().saturating_add(duration_from_ms(ms));
                }
                let output = host.vector_output(&input, *output);
                // A final error as its text: the fail-fast sentence of spec
                // 10.3 in full.
                out.push(serde_json::to_value(output).unwrap());
            }
            out
        };
        check_eq!(Value::Array(out), want["out"], at);
        check_eq!(
            serde_json::to_value(driver.machine().state()).unwrap(),
            want["state"],
            at
        );
        // The driver's timer is armed exactly while the machine's is pending.
        check_eq!(
            driver.deadline().is_some(),
            pending(driver.machine()).is_some(),
            at
        );
        passed += 1;
    }
    Ok(passed)
}

/// Sends `input` and expects the driver to take it at once, before any
/// timer (virtual time does not move).
fn send<'d, 'a>(
    inputs: &Channel<NoopRawMutex, Input<'a>, 4>,
    input: Input<'a>,
    driver: &'d mut EmbassyDriver<Input<'a>>,
    at: &str,
) -> Result<Step<'d>, String> {
    // An answer is sent with no text of its own: the driver gives it the
    // text of the decision that asked, which the step shows (a late answer,
    // which the machine ignores, keeps its own).
    let sent = match input {
        Input::UsageLimitMarked { switched, .. } => Input::usage_limit_marked(switched, ""),
        Input::ModelSwitched { switched, .. } => Input::model_switched(switched, ""),
        other => other,
    };
    let machine = driver.machine();
    let awaited = machine.awaits_usage_limit_answer() || machine.awaits_model_switch_answer();
    let input = if awaited { input } else { sent };
    inputs.try_send(sent).expect("room in the channel");
    let rx = inputs.receiver();
    let polled = poll_once(pin!(driver.next(receive(&rx))));
    match polled {
        Poll::Ready(Some(step)) => {
            check_eq!(step.input, input, at);
            Ok(step)
        }
        _ => Err(format!("{at}: the driver did not take the input")),
    }
}

/// A backoff of `base_delay_ms` while the channel is kept full and the
/// host spends `cost` on each input, on the mock clock (at most 3 s of
/// inputs). Returns how long after its deadline `continue_agent` came, and
/// how many inputs were taken at or after the deadline before it.
fn continue_under_a_full_channel(base_delay_ms: u64, cost: Duration) -> (Duration, u32) {
    let clock = MockDriver::get();
    clock.reset();
    let inputs: Channel<NoopRawMutex, Input<'_>, 4> = Channel::new();
    let rx = inputs.receiver();
    let settings = autoretry::RetrySettings::DEFAULT.with_base_delay_ms(base_delay_ms);
    let mut driver = EmbassyDriver::new(
        Machine::new(settings, autoretry::HostOptions::DEFAULT),
        EmbassySleeper,
    );
    let failed = Input::AgentEnd {
        message: autoretry::AssistantMessage::error("503"),
        now_ms: None,
    };
    drop(driver.handle(failed));
    let deadline = driver.deadline().expect("armed");
    let mut late = 0;
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        while inputs
            .try_send(Input::SetAutoRetry { enabled: true })
            .is_ok()
        {}
        clock.advance(cost);
        let polled = poll_once(pin!(driver.next(receive(&rx))));
        let Poll::Ready(Some(step)) = polled else {
            panic!("a full channel, and the driver waits")
        };
        if step.input == (Input::SetAutoRetry { enabled: true }) {
            late += u32::from(Instant::now() >= deadline);
            continue;
        }
        assert_eq!(step.outputs.as_deref(), Ok(&[Output::ContinueAgent][..]));
        return (Instant::now() - deadline, late);
    }
    panic!("the timer never fired: {late} inputs went ahead of it in 3 s")
}

#[test]
fn every_vector_in_virtual_time() {
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for (folder, min_steps) in FOLDERS {
        let scenarios = scenarios(folder);
        let (mut total, mut passed, mut steps, mut steps_passed) = (0, 0, 0, 0);
        for scenario in &scenarios {
            let result = run(scenario, false);
            total += 1;
            steps += scenario.steps.len();
            match result {
                Ok(n) => {
                    passed += 1;
                    steps_passed += n;
                }
                Err(why) => failures.push(why),
            }
        }
        report.push(format!(
            "{folder}: {passed}/{total} scenarios, {steps_passed}/{steps} steps passed"
        ));
        assert!(steps >= min_steps, "{folder}: only {steps} steps");
    }
    println!("embassy driver in virtual time:\n  {}", report.join("\n  "));
    assert!(failures.is_empty(), "{}", failures.join("\n"));

    // The stream vectors again, every `stream_start` and `stream_event`
    // stamped by the driver's clock on the mock clock moved to the
    // vector's `nowMs`: the same outputs, watches firing when they said.
    let stream = scenarios("tests/vectors/stream");
    let failures: Vec<_> = stream.iter().filter_map(|s| run(s, true).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(stream.len() >= 17);

    // A stream on the mock clock, stamped by the driver: a host that feeds
    // `stream_event` for each delta and nothing for a ping.
    let clock = MockDriver::get();
    for (deltas, want) in [
        // No event before the first-event limit: a stall at 1000 ms.
        (&[][..], &[(0, "watch"), (1000, "abort_agent")][..]),
        // Deltas at 100 and 300 ms, then only pings: the watch fires at
        // 500 ms and waits for what is left of the idle limit; the stall
        // comes 500 ms after the last delta.
        (
            &[100, 300][..],
            &[(0, "watch"), (500, "watch"), (800, "abort_agent")][..],
        ),
    ] {
        clock.reset();
        let settings = RetrySettings::DEFAULT
            .with_first_event_timeout_ms(if deltas.is_empty() { 1000 } else { 500 })
            .with_idle_timeout_ms(500);
        let mut driver: EmbassyDriver =
            EmbassyDriver::new(Machine::new(settings, HostOptions::DEFAULT), EmbassySleeper);
        let mut log = Vec::new();
        let names = |step: Step<'_>| -> Vec<&'static str> {
            step.outputs
                .iter()
                .flatten()
                .map(|o| o.type_name())
                .collect()
        };
        log.extend(names(driver.stream_start()).into_iter().map(|n| (0, n)));
        let quiet: Channel<NoopRawMutex, Input<'static>, 1> = Channel::new();
        let rx = quiet.receiver();
        // Every 100 ms: a delta (fed) or a ping (nothing), then the timer.
        while !log.iter().any(|(_, n)| *n == "abort_agent") && driver.now_ms() < 5000 {
            clock.advance(Duration::from_millis(100));
            if deltas.contains(&driver.now_ms()) {
                assert!(driver.stream_event().outputs.unwrap().is_empty());
            }
            let mut next = pin!(driver.next(receive(&rx)));
            let polled = match poll_once(next.as_mut()) {
                Poll::Pending => poll_once(next.as_mut()),
                ready => ready,
            };
            if let Poll::Ready(Some(step)) = polled {
                let now = Instant::now().as_millis();
                log.extend(names(step).into_iter().map(|n| (now, n)));
            }
        }
        assert_eq!(log, want, "deltas at {deltas:?}");
    }

    // An input that arrives during the backoff beats the timer, even when
    // both are ready: the abort cancels it, and the timer never fires.
    clock.reset();
    let inputs: Channel<NoopRawMutex, Input<'_>, 4> = Channel::new();
    let rx = inputs.receiver();
    let mut driver = EmbassyDriver::new(Machine::default(), EmbassySleeper);
    let fail = Input::AgentEnd {
        message: autoretry::AssistantMessage::error("overloaded"),
        now_ms: None,
    };
    for (before, after) in [(1999, 1), (1000, 0)] {
        let step = send(&inputs, fail, &mut driver, "race").unwrap();
        assert!(matches!(
            step.outputs.as_deref(),
            Ok([_, _, Output::Sleep { ms: 2000, .. }])
        ));
        drop(step);
        {
            let mut next = pin!(driver.next(receive(&rx)));
            clock.advance(Duration::from_millis(before));
            assert!(poll_once(next.as_mut()).is_pending());
            inputs.try_send(Input::AbortRetry).unwrap();
            // At 2000 ms both are ready: the input goes first.
            clock.advance(Duration::from_millis(after));
            let Poll::Ready(Some(step)) = poll_once(next.as_mut()) else {
                panic!("not ready")
            };
            assert_eq!(step.input, Input::AbortRetry);
            assert!(matches!(
                step.outputs.unwrap()[0],
                Output::CancelTimer { .. }
            ));
        }
        assert!(!driver.machine().is_retrying());
        // The backoff's deadline passes: nothing fires.
        assert!(driver.deadline().is_none());
        clock.advance(Duration::from_millis(5000));
        assert!(poll_once(pin!(driver.next(receive(&rx)))).is_pending());
    }

    // A backoff under a channel that is kept full (it never waits), with a
    // host that spends `cost` on each input: the timer fires at the first
    // `next` at or after its deadline, never later than the input in hand
    // when the deadline passed.
    let mut worst = Duration::from_ticks(0);
    for (base_delay_ms, cost_us) in [(50, 1000), (50, 7000), (2000, 333), (0, 1000), (1, 250)] {
        let cost = Duration::from_micros(cost_us);
        let (delay, late) = continue_under_a_full_channel(base_delay_ms, cost);
        assert_eq!(late, 0, "{late} inputs went ahead of the due timer");
        assert!(delay <= cost, "{delay:?} late, with {cost:?} per input");
        worst = worst.max(delay);
    }
    println!(
        "embassy driver, a full channel: continue_agent at most {} µs after its deadline",
        worst.as_micros()
    );

    // A machine restored in a backoff: the host gives the time left, and
    // the timer fires then, not earlier.
    clock.reset();
    let mut machine = Machine::default();
    let _ = machine.handle(fail).unwrap();
    let restored = Machine::restore(machine.snapshot()).unwrap();
    let mut driver = EmbassyDriver::new(restored, EmbassySleeper);
    assert_eq!(driver.rearm(700), machine.pending_timer());
    let mut next = pin!(driver.next(receive(&rx)));
    clock.advance(Duration::from_millis(699));
    for _ in 0..2 {
        assert!(poll_once(next.as_mut()).is_pending());
    }
    clock.advance(Duration::from_millis(1));
    let polled = match poll_once(next.as_mut()) {
        Poll::Pending => poll_once(next.as_mut()),
        ready => ready,
    };
    let Poll::Ready(Some(step)) = polled else {
        panic!("the restored backoff did not end on time")
    };
    assert_eq!(step.outputs.unwrap()[..], [Output::ContinueAgent]);
}
