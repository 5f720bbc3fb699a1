//! The tokio driver (`autoretry::host::tokio`) on every vector, in virtual
//! time: under tokio's paused clock, time moves only when every task
//! waits, and then straight to the next timer. A backoff must end exactly
//! when its `sleep` said (not a millisecond early or late), every other
//! input must be taken at once, and the inputs are owned (`InputBuf`)
//! through a tokio channel. The folders of sections 1–9, of the policy
//! options of section 10 and of the stream of section 12 run (a `watch`
//! on the driver's timer, as a `sleep`).
#![cfg(all(feature = "tokio", feature = "json"))]

use crate::common::scenarios::{refused, scenarios, Scenario, FOLDERS};

use std::time::Duration;

use autoretry::host::tokio::{TokioDriver, TokioSleeper};
use autoretry::wire::json::InputLine;
use autoretry::{
    Event, HostOptions, Input, InputBuf, Machine, MessageBuf, Output, RetrySettings, StopReason,
    TimerId,
};
use autoretry_testkit::VectorHost;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

/// Fails the scenario with a message unless `$cond`.
macro_rules! check {
    ($cond:expr, $($why:tt)+) => {
        if !$cond {
            return Err(format!($($why)+));
        }
    };
}

/// Runs one scenario: the number of steps (all passed), or the first
/// mismatch. `stamped`: the stream's inputs go through
/// `Driver::stream_start`/`stream_event`, stamped by the driver's clock,
/// after virtual time moved to the vector's `nowMs` (plus an offset that
/// only grows where the vector's clock is behind the driver's, which
/// starts no earlier than the last backoff or watch ended).
async fn run(scenario: &Scenario, stamped: bool) -> Result<usize, String> {
    let (tx, mut rx) = mpsc::channel::<InputBuf>(4);
    let header = &scenario.header;
    let mut driver = TokioDriver::new(Machine::new(header.settings, header.host), TokioSleeper);
    let mut host = VectorHost::<String>::new();
    // When the last `sleep` said its timer is due (virtual time).
    let mut due = Instant::now();
    let mut passed = 0;
    // The driver's clock minus the vector's, in milliseconds.
    let mut offset = 0;
    for (input, want, at) in &scenario.steps {
        let state = |driver: &TokioDriver| serde_json::to_value(driver.state()).unwrap();
        let stamp = match input {
            InputLine::Input(InputBuf::StreamStart { now_ms }) if stamped => Some((true, *now_ms)),
            InputLine::Input(InputBuf::StreamEvent { now_ms }) if stamped => Some((false, *now_ms)),
            _ => None,
        };
        let input = match input {
            _ if stamp.is_some() => None,
            InputLine::Refused(_) => {
                // The host refuses it without asking the machine.
                check!(
                    refused(want),
                    "{at}: refused by the host, the vector accepts it"
                );
                check!(state(&driver) == want["state"], "{at}: state");
                passed += 1;
                continue;
            }
            InputLine::Input(InputBuf::TimerFired { timer: ordinal }) => {
                match host.machine_timer(ordinal.get()) {
                    Some(id) if pending(driver.machine()) == Some(id) => None,
                    // A stale or never-produced timer: the host delivers it late.
                    other => Some(InputBuf::TimerFired {
                        timer: other.unwrap_or(TimerId(u64::MAX)),
                    }),
                }
            }
            // As decoded: an answer is its boolean alone, and the driver
            // gives it the decision's text.
            InputLine::Input(input) => Some(input.clone()),
        };
        let sent = input.is_some();
        if let Some(input) = input {
            tx.send(input).await.expect("the channel is open");
        }
        // The step borrows the driver: its outputs are read in this block,
        // then the driver is free for queries.
        let out = {
            let before = Instant::now();
            let step = if let Some((start, vector_ms)) = stamp {
                let now = driver.now_ms();
                let mut target = vector_ms.saturating_add(offset);
                if target < now {
                    offset = now - vector_ms;
                    target = now;
                }
                tokio::time::advance(Duration::from_millis(target - now)).await;
                let step = if start {
                    driver.stream_start()
                } else {
                    driver.stream_event()
                };
                let want_input = if start {
                    Input::StreamStart { now_ms: target }
                } else {
                    Input::StreamEvent { now_ms: target }
                };
                check!(step.input == want_input, "{at}: stamped {:?}", step.input);
                step
            } else {
                driver.next(rx.recv()).await.expect("the channel is open")
            };
            let waited = Instant::now() - before;
            if stamp.is_some() {
                // Fed at once, at the vector's time on the driver's clock.
            } else if sent {
                check!(waited == Duration::ZERO, "{at}: an input waited {waited:?}");
            } else {
                // The driver's own timer: it fires when the `sleep` said.
                check!(
                    Instant::now() == due,
                    "{at}: the backoff ended {:?} from when it was due",
                    Instant::now().max(due) - Instant::now().min(due)
                );
                check!(
                    matches!(step.input, Input::TimerFired { .. }),
                    "{at}: {:?} instead of the timer",
                    step.input
                );
            }
            check!(
                step.outputs.is_err() == refused(want),
                "{at}: refused {:?}",
                step.outputs
            );
            let mut out = Vec::new();
            for output in step.outputs.iter().flatten() {
                if let Output::Sleep { ms, .. } | Output::Watch { ms, .. } = output {
                    due = Instant::now() + Duration::from_millis(*ms);
                }
                let output = host.vector_output(&step.input, *output);
                out.push(serde_json::to_value(output).unwrap());
            }
            out
        };
        check!(
            Value::Array(out.clone()) == want["out"],
            "{at}: got {out:?}, want {}",
            want["out"]
        );
        check!(state(&driver) == want["state"], "{at}: state");
        check!(
            driver.deadline().is_some() == pending(driver.machine()).is_some(),
            "{at}: the timer is armed while the machine's is not pending, or not armed while it is"
        );
        passed += 1;
    }
    Ok(passed)
}

/// The timer the driver runs: the backoff's, or the stream's watch (spec
/// §12.2), never both.
fn pending(machine: &Machine) -> Option<TimerId> {
    machine.pending_timer().or(machine.pending_watch())
}

#[tokio::test(start_paused = true)]
async fn every_vector_in_virtual_time() {
    let mut failures = Vec::new();
    let mut report = Vec::new();
    for (folder, min_steps) in FOLDERS {
        let scenarios = scenarios(folder);
        let (mut passed, mut steps, mut steps_passed) = (0, 0, 0);
        for scenario in &scenarios {
            steps += scenario.steps.len();
            match run(scenario, false).await {
                Ok(n) => {
                    passed += 1;
                    steps_passed += n;
                }
                Err(why) => failures.push(why),
            }
        }
        report.push(format!(
            "{folder}: {passed}/{} scenarios, {steps_passed}/{steps} steps passed",
            scenarios.len()
        ));
        assert!(steps >= min_steps, "{folder}: only {steps} steps");
    }
    println!("tokio driver in virtual time:\n  {}", report.join("\n  "));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The stream vectors with every `stream_start` and `stream_event` stamped
/// by the driver's clock (`TokioDriver::stream_start`/`stream_event`), in
/// virtual time moved to the vector's `nowMs`: the same outputs, watches
/// firing when they said.
#[tokio::test(start_paused = true)]
async fn the_stream_vectors_stamped_by_the_drivers_clock() {
    let scenarios = scenarios("tests/vectors/stream");
    let mut failures = Vec::new();
    let mut stamped = 0;
    for scenario in &scenarios {
        stamped += scenario
            .steps
            .iter()
            .filter(|(input, ..)| {
                matches!(
                    input,
                    InputLine::Input(InputBuf::StreamStart { .. } | InputBuf::StreamEvent { .. })
                )
            })
            .count();
        if let Err(why) = run(scenario, true).await {
            failures.push(why);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(
        scenarios.len() >= 17 && stamped >= 30,
        "{stamped} stamped inputs"
    );
    println!(
        "tokio driver, stamped: {} stream scenarios, {stamped} stamped inputs",
        scenarios.len()
    );
}

/// What the provider's stream delivers to the host.
#[derive(Clone, Copy, Debug)]
enum Sse {
    /// A text delta: progress.
    Delta,
    /// A keep-alive ping: not progress.
    Ping,
    /// The answer's last event.
    Stop,
}

/// What woke the host's loop.
enum Woke {
    /// The driver's step (its outputs' names; the input was the timer's).
    Step(Vec<&'static str>),
    /// The provider's stream.
    Sse(Option<Sse>),
}

/// An agent's host on the tokio driver in virtual time: it starts a
/// request, feeds `stream_event` for each delta (never for a ping) and
/// carries out the driver's steps, polled first (`biased`), so a due watch
/// goes before the event in hand. The provider sends `plan`, each item
/// `ms` after the one before. Returns each output's name with the
/// driver's time, and the error text the stall was decided as.
async fn stream_host(
    settings: RetrySettings,
    plan: Vec<(u64, Sse)>,
) -> (Vec<(u64, &'static str)>, Option<String>) {
    let (sse_tx, mut sse) = mpsc::channel(4);
    tokio::spawn(async move {
        for (ms, item) in plan {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            if sse_tx.send(item).await.is_err() {
                return; // the host aborted the stream
            }
        }
    });
    // The host's other inputs (an Esc, settings): none here.
    let (_tx, mut inputs) = mpsc::channel::<InputBuf>(1);
    let mut driver = TokioDriver::new(Machine::new(settings, HostOptions::DEFAULT), TokioSleeper);
    let mut log = Vec::new();
    let names = |step: autoretry::host::Step<'_>| -> Vec<&'static str> {
        step.outputs
            .iter()
            .flatten()
            .map(|o| o.type_name())
            .collect()
    };
    for name in names(driver.stream_start()) {
        log.push((driver.now_ms(), name));
    }
    loop {
        let woke = tokio::select! {
            biased;
            step = driver.next(inputs.recv()) => Woke::Step(names(step.expect("the channel is open"))),
            item = sse.recv() => Woke::Sse(item),
        };
        let now = driver.now_ms();
        let outputs = match woke {
            Woke::Step(outputs) => outputs,
            Woke::Sse(Some(Sse::Delta)) => names(driver.stream_event()),
            Woke::Sse(Some(Sse::Ping)) => Vec::new(),
            Woke::Sse(Some(Sse::Stop) | None) => {
                let done = InputBuf::agent_end(MessageBuf::new(StopReason::Stop));
                let outputs = names(driver.handle(done));
                log.extend(outputs.into_iter().map(|name| (now, name)));
                return (log, None);
            }
        };
        let stalled = outputs.contains(&"abort_agent");
        log.extend(outputs.into_iter().map(|name| (now, name)));
        if stalled {
            // The host aborts the stream; its agent loop ends the run aborted.
            drop(sse);
            let aborted = InputBuf::agent_end(MessageBuf::new(StopReason::Aborted));
            let step = driver.handle(aborted);
            let text = step.outputs.iter().flatten().find_map(|o| match o {
                Output::Emit(Event::Start { error_message, .. }) => Some(error_message.to_string()),
                _ => None,
            });
            return (log, text);
        }
    }
}

/// Pings every 100 ms, `n` times.
fn pings(n: usize) -> Vec<(u64, Sse)> {
    vec![(100, Sse::Ping); n]
}

#[tokio::test(start_paused = true)]
async fn a_stream_silent_before_its_first_event_stalls_at_the_limit() {
    let settings = RetrySettings::DEFAULT
        .with_first_event_timeout_ms(1000)
        .with_idle_timeout_ms(1000);
    // Only pings, for 5 s: the first event never comes.
    let (log, text) = stream_host(settings, pings(50)).await;
    assert_eq!(log, [(0, "watch"), (1000, "abort_agent")]);
    assert_eq!(text.as_deref(), Some("Stream stalled: no event for 1000ms"));
}

#[tokio::test(start_paused = true)]
async fn an_idle_stream_stalls_when_only_pings_flow() {
    let settings = RetrySettings::DEFAULT
        .with_first_event_timeout_ms(500)
        .with_idle_timeout_ms(500);
    // Deltas at 100 and 300 ms, then pings every 100 ms for 5 s.
    let mut plan = vec![(100, Sse::Delta), (200, Sse::Delta)];
    plan.extend(pings(50));
    let (log, text) = stream_host(settings, plan).await;
    // The first-event watch fires at 500 ms and waits for what is left of
    // the idle limit; the pings do not count: 500 ms after the last delta.
    assert_eq!(log, [(0, "watch"), (500, "watch"), (800, "abort_agent")]);
    assert_eq!(text.as_deref(), Some("Stream stalled: no event for 500ms"));
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_answers_in_time_never_stalls() {
    let settings = RetrySettings::DEFAULT
        .with_first_event_timeout_ms(500)
        .with_idle_timeout_ms(500);
    // A delta every 450 ms (pings between) for 9 s, then the end.
    let mut plan = vec![(450, Sse::Delta)];
    for _ in 0..19 {
        plan.extend([(200, Sse::Ping), (250, Sse::Delta)]);
    }
    plan.push((100, Sse::Stop));
    let (log, text) = stream_host(settings, plan).await;
    assert_eq!(text, None);
    let names: Vec<_> = log.iter().map(|(_, name)| *name).collect();
    assert!(!names.contains(&"abort_agent"), "{log:?}");
    // The lazy lease: one watch per firing at most, never one per event.
    let watches = names.iter().filter(|n| **n == "watch").count();
    assert!((2..=21).contains(&watches), "{watches} watches: {log:?}");
    assert_eq!(log.last(), Some(&(9100, "check_compaction")), "{log:?}");
    assert!(names.contains(&"cancel_timer"), "{log:?}");
}

fn failed() -> InputBuf {
    InputBuf::agent_end(MessageBuf::error(String::from("529 overloaded_error")))
}

#[tokio::test(start_paused = true)]
async fn an_abort_before_the_deadline_beats_the_timer() {
    let (tx, mut rx) = mpsc::channel(4);
    let mut driver = TokioDriver::new(Machine::default(), TokioSleeper);
    let _ = driver.handle(failed());
    tokio::time::advance(Duration::from_millis(1999)).await;
    tx.send(InputBuf::AbortRetry).await.unwrap();
    let step = driver.next(rx.recv()).await.unwrap();
    assert_eq!(step.input, Input::AbortRetry);
    assert!(matches!(
        step.outputs.as_deref(),
        Ok([Output::CancelTimer { .. }, ..])
    ));
    // In an async fn the step keeps the driver borrowed until it is dropped.
    drop(step);
    assert_eq!(driver.deadline(), None);
    // Nothing fires afterwards: the closed channel ends the wait.
    drop(tx);
    assert!(driver.next(rx.recv()).await.is_none());
    assert!(!driver.state().is_retrying);
}

#[tokio::test(start_paused = true)]
async fn an_abort_at_the_deadline_comes_after_the_timer() {
    let (tx, mut rx) = mpsc::channel(4);
    let mut driver = TokioDriver::new(Machine::default(), TokioSleeper);
    let _ = driver.handle(failed());
    tokio::time::advance(Duration::from_millis(2000)).await;
    // Sent at the deadline: the due timer goes first.
    tx.send(InputBuf::AbortRetry).await.unwrap();
    let step = driver.next(rx.recv()).await.unwrap();
    assert!(matches!(step.input, Input::TimerFired { .. }));
    assert_eq!(step.outputs.as_deref(), Ok(&[Output::ContinueAgent][..]));
    drop(step);
    // The abort then ends the continued run's chain: no continue after it.
    let step = driver.next(rx.recv()).await.unwrap();
    assert_eq!(step.input, Input::AbortRetry);
    let names: Vec<_> = step
        .outputs
        .iter()
        .flatten()
        .map(|o| o.type_name())
        .collect();
    assert_eq!(names, ["emit", "settled"]);
    drop(step);
    assert!(!driver.state().is_retrying);
}

/// A backoff under inputs that are always ready (a future that never
/// waits) and a host that spends `cost` on each, on the paused clock:
/// the timer fires at the first `next` at or after its deadline. Returns
/// how long after its deadline `continue_agent` came, and how many inputs
/// were taken at or after the deadline before it.
async fn continue_under_a_non_stop_stream(base_delay_ms: u64, cost: Duration) -> (Duration, u32) {
    let settings = autoretry::RetrySettings::DEFAULT.with_base_delay_ms(base_delay_ms);
    let mut driver = TokioDriver::new(
        Machine::new(settings, autoretry::HostOptions::DEFAULT),
        TokioSleeper,
    );
    drop(driver.handle(failed()));
    let deadline = driver.deadline().expect("armed");
    let mut late = 0;
    // At most 3 s of inputs.
    let end = Instant::now() + Duration::from_secs(3);
    while Instant::now() < end {
        tokio::time::advance(cost).await;
        let always_ready = async { Some(InputBuf::SetAutoRetry { enabled: true }) };
        let step = driver
            .next(always_ready)
            .await
            .expect("an input or the timer");
        if step.input == (Input::SetAutoRetry { enabled: true }) {
            late += u32::from(Instant::now() >= deadline);
            continue;
        }
        assert_eq!(step.outputs.as_deref(), Ok(&[Output::ContinueAgent][..]));
        return (Instant::now() - deadline, late);
    }
    panic!("the timer never fired: {late} inputs went ahead of it in 3 s")
}

#[tokio::test(start_paused = true)]
async fn a_due_timer_fires_under_inputs_that_are_always_ready() {
    let mut worst = Duration::ZERO;
    for (base_delay_ms, cost_us) in [(50, 1000), (50, 7000), (2000, 333), (0, 1000), (1, 250)] {
        let cost = Duration::from_micros(cost_us);
        let (delay, late) = continue_under_a_non_stop_stream(base_delay_ms, cost).await;
        // Never later than the input in hand when the deadline passed.
        assert_eq!(late, 0, "{late} inputs went ahead of the due timer");
        assert!(delay <= cost, "{delay:?} late, with {cost:?} per input");
        worst = worst.max(delay);
    }
    println!(
        "tokio driver, always-ready inputs: continue_agent at most {worst:?} after its deadline"
    );
}

#[tokio::test(start_paused = true)]
async fn a_closed_channel_leaves_the_timer_armed() {
    let (tx, mut rx) = mpsc::channel::<InputBuf>(1);
    let mut driver = TokioDriver::new(Machine::default(), TokioSleeper);
    drop(driver.handle(failed()));
    drop(tx);
    assert!(driver.next(rx.recv()).await.is_none());
    assert!(driver.deadline().is_some());
    assert!(format!("{driver:?}").contains("armed: Some"), "{driver:?}");
    // Another source: the timer fires at its deadline.
    let start = Instant::now();
    let step = driver.next(std::future::pending()).await.unwrap();
    assert_eq!(Instant::now() - start, Duration::from_millis(2000));
    assert_eq!(step.outputs.unwrap()[..], [Output::ContinueAgent]);
}

#[tokio::test(start_paused = true)]
async fn a_restored_backoff_fires_after_the_time_left() {
    let mut machine = Machine::default();
    let _ = machine.handle(failed().as_input()).unwrap();
    let mut buf = [0; autoretry::Snapshot::MAX_POSTCARD_LEN];
    let bytes = postcard::to_slice(&machine.snapshot(), &mut buf).unwrap();
    let restored = Machine::restore(postcard::from_bytes(bytes).unwrap()).unwrap();
    let mut driver = TokioDriver::<InputBuf>::new(restored, TokioSleeper);
    assert_eq!(driver.rearm(1234), machine.pending_timer());
    let start = Instant::now();
    let step = driver.next(std::future::pending()).await.unwrap();
    assert_eq!(Instant::now() - start, Duration::from_millis(1234));
    assert_eq!(step.outputs.as_deref(), Ok(&[Output::ContinueAgent][..]));
    drop(step);
    // The continued run answers well: the same ends as the unsaved machine.
    let done = InputBuf::agent_end(MessageBuf::new(StopReason::Stop));
    let mut twin = machine.clone();
    let _ = twin.handle(Input::TimerFired {
        timer: machine.pending_timer().unwrap(),
    });
    let want = twin.handle(done.as_input()).unwrap();
    assert_eq!(driver.handle(done.clone()).outputs, Ok(want));
}

/// Sessions on tokio tasks share one retry budget (spec §11.4) through
/// `next_with_budget`: the second session's retry is throttled by the
/// first one's, and good runs refill the budget for both.
#[tokio::test]
async fn sessions_on_tasks_share_one_budget() {
    use autoretry::RetryBudget;
    use std::sync::{Arc, Mutex};

    let budget = Arc::new(Mutex::new(RetryBudget::new(4, 500).unwrap()));
    let session = |budget: Arc<Mutex<RetryBudget>>, first: InputBuf| async move {
        let (tx, mut rx) = mpsc::channel::<InputBuf>(2);
        tx.send(first).await.unwrap();
        drop(tx);
        let mut driver = TokioDriver::new(Machine::default(), TokioSleeper);
        let step = driver.next_with_budget(rx.recv(), &budget).await.unwrap();
        step.state.is_retrying
    };
    let fail = || InputBuf::agent_end(MessageBuf::error("429 rate limited"));
    // 4 → 3: retries; 3 → 2: throttled.
    assert!(tokio::spawn(session(budget.clone(), fail())).await.unwrap());
    assert!(!tokio::spawn(session(budget.clone(), fail())).await.unwrap());
    // Three good runs refill 1.5 (2 → 3.5); the next failure retries (2.5).
    for _ in 0..3 {
        let good = InputBuf::agent_end(MessageBuf::new(StopReason::Stop));
        assert!(!tokio::spawn(session(budget.clone(), good)).await.unwrap());
    }
    assert!(tokio::spawn(session(budget.clone(), fail())).await.unwrap());
    assert_eq!(budget.lock().unwrap().tokens_milli(), 2500);
}

/// A hand-off is answered with the boolean alone: the driver keeps the
/// `agent_end` whose decision asked (here a usage limit, then another
/// model, one decision) and gives each answer its text; an `agent_end`
/// refused while an answer is awaited does not take its place.
#[tokio::test(start_paused = true)]
async fn answers_take_the_kept_decision_text() {
    let settings = RetrySettings::DEFAULT
        .with_honor_hints(true)
        .with_max_delay_ms(60_000)
        .with_max_usage_wait_ms(18_000_000)
        .with_model_fallback(true);
    let host = HostOptions::DEFAULT.with_credential_store(true);
    let mut driver = TokioDriver::new(Machine::new(settings, host), TokioSleeper);
    let text = "You've hit your usage limit. Try again in 3 hours. retry-after-ms=10800000";
    let step = driver.handle(InputBuf::agent_end(MessageBuf::error(text)));
    assert!(matches!(
        step.outputs.as_deref(),
        Ok([Output::MarkUsageLimit { .. }])
    ));
    drop(step);
    // Refused (the machine awaits an answer): the decision stays kept.
    let other = InputBuf::agent_end(MessageBuf::error("another text"));
    assert_eq!(
        driver.handle(other).outputs,
        Err(autoretry::Refused::AwaitingUsageLimitAnswer)
    );
    let step = driver.handle(InputBuf::UsageLimitMarked { switched: false });
    assert_eq!(step.input, Input::usage_limit_marked(false, text));
    assert!(matches!(
        step.outputs.as_deref(),
        Ok([Output::SwitchModel { .. }])
    ));
    drop(step);
    let step = driver.handle(InputBuf::ModelSwitched { switched: false });
    let Ok(
        [Output::Emit(Event::Start { error_message, .. }), Output::DropTrailingError, Output::Sleep { ms: 10_800_000, .. }],
    ) = step.outputs.as_deref()
    else {
        panic!("{:?}", step.outputs)
    };
    assert_eq!(*error_message, text);
}

/// A machine restored while it awaits an answer: the host gives the driver
/// the `agent_end` it kept next to the snapshot, then answers with the
/// boolean alone.
#[tokio::test(start_paused = true)]
async fn a_restored_hand_off_is_answered_with_the_kept_decision() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(0)
        .with_model_fallback(true);
    let failed = InputBuf::agent_end(MessageBuf::error("529 overloaded"));
    let mut machine = Machine::new(settings, HostOptions::DEFAULT);
    let _ = machine.handle(failed.as_input()).unwrap();
    let restored = || Machine::restore(machine.snapshot()).unwrap();
    // Without the decision, the answer has no text: refused, nothing changed.
    let mut driver = TokioDriver::new(restored(), TokioSleeper);
    assert_eq!(
        driver
            .handle(InputBuf::ModelSwitched { switched: true })
            .outputs,
        Err(autoretry::Refused::ModelSwitchTextMismatch)
    );
    let mut driver = TokioDriver::new(restored(), TokioSleeper);
    driver.keep_decision(failed);
    let step = driver.handle(InputBuf::ModelSwitched { switched: true });
    assert!(matches!(
        step.outputs.as_deref(),
        Ok([
            Output::Emit(Event::Start { attempt: 1, .. }),
            Output::DropTrailingError,
            Output::Sleep { ms: 0, .. }
        ])
    ));
}
