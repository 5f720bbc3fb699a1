//! The machine: ns per input, from the state that input meets in a real
//! chain, and one whole chain with the default settings.
//!
//! - `machine/timer_fired`: the pending backoff timer fires (→ continue).
//! - `machine/timer_fired_stale`: a timer nobody waits for (→ nothing).
//! - `machine/abort_retry`: cancel during a backoff (→ cancel the timer,
//!   end event, settled, compaction check).
//! - `machine/abort_retry_idle`: with no chain open (→ nothing).
//! - `machine/agent_end_success`: a good run ends, no chain (no classifying).
//! - `machine/agent_end_not_retryable`: an authentication error (classified,
//!   → compaction check).
//! - `machine/agent_end_retryable`: an overloaded error opens a chain
//!   (→ start event, drop the error, sleep).
//! - `machine/settings`, `machine/set_auto_retry`, `machine/abort_idle`,
//!   `machine/message_end_success`: the other inputs that classify nothing.
//! - The option paths (spec §10), each against `agent_end_retryable`:
//!   `agent_end_retryable_jitter` (jitter 25 %: one draw of the generator),
//!   `agent_end_retryable_hint` (hints honoured, a `retry-after` in the
//!   text), `agent_end_retryable_modern` (the modern profile: the extended
//!   classifier, jitter, hints, cap and ceiling).
//! - `machine/agent_end_retryable_budget`, `machine/agent_end_success_budget`:
//!   the same inputs through `handle_with_budget` (spec §11.4).
//! - `machine/default_chain`: 4 × agent_end (overloaded) and 3 ×
//!   timer_fired: three retries, then the chain gives up (7 inputs).
//! - The stream (spec §12.2), each against `timer_fired`:
//!   `machine/stream_event` (a progress event while the stream's watch is
//!   pending, through `Machine::stream_event`: the lazy lease stores its
//!   time, nothing else), `machine/stream_event_handle` (the same input
//!   through `Machine::handle`, its output buffer built and returned),
//!   `machine/stream_event_thread` and `machine/stream_event_tokio` (the
//!   same through `ThreadDriver::stream_event` and the tokio driver's
//!   `Driver::stream_event`, each stamped by its clock: the clock read
//!   included).

use std::hint::black_box;
use std::time::Duration;

use autoretry::{
    AssistantMessage, HostOptions, Input, JitterPct, Machine, Output, RetryBudget, RetrySettings,
    StopReason, TimerId,
};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion};

const OVERLOADED: &str =
    r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
const OVERLOADED_HINT: &str = r#"529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}} retry-after: 7"#;
const AUTH: &str =
    r#"401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}"#;

fn agent_end(text: &str) -> Input<'_> {
    Input::AgentEnd {
        message: AssistantMessage::error(text),
        now_ms: None,
    }
}

/// A default machine in its first backoff, and the pending timer.
fn in_backoff() -> (Machine, TimerId) {
    let mut m = Machine::default();
    let out = m.handle(agent_end(OVERLOADED)).expect("accepted");
    let timer = out
        .iter()
        .find_map(|o| match o {
            Output::Sleep { timer, .. } => Some(*timer),
            _ => None,
        })
        .expect("a sleep");
    (m, timer)
}

/// The default chain that gives up after three retries; the number of
/// outputs, so that nothing is optimised away.
fn default_chain(text: &str) -> usize {
    let mut m = Machine::default();
    let mut outputs = 0;
    loop {
        let Ok(out) = m.handle(agent_end(text)) else {
            return usize::MAX;
        };
        outputs += out.len();
        let timer = out.iter().find_map(|o| match o {
            Output::Sleep { timer, .. } => Some(*timer),
            _ => None,
        });
        let Some(timer) = timer else {
            return outputs;
        };
        match m.handle(Input::TimerFired { timer }) {
            Ok(out) => outputs += out.len(),
            Err(_) => return usize::MAX,
        }
    }
}

/// A machine with the modern profile's stream limits, watching a stream
/// whose watch is pending (after its request and one event at `at`).
fn watching(at: u64) -> Machine {
    let mut m = Machine::new(RetrySettings::MODERN, HostOptions::DEFAULT);
    let _ = m.handle(Input::StreamStart { now_ms: at });
    let _ = m.handle(Input::StreamEvent { now_ms: at });
    assert!(m.pending_watch().is_some(), "a watch pending");
    m
}

fn machine_benches(c: &mut Criterion) {
    // Three retries (start, drop, sleep; then continue), then the end.
    assert_eq!(
        default_chain(OVERLOADED),
        3 * (3 + 1) + 3,
        "the default chain"
    );
    let mut g = c.benchmark_group("machine");

    g.bench_function("timer_fired", |b| {
        b.iter_batched_ref(
            in_backoff,
            |(m, timer)| m.handle(black_box(Input::TimerFired { timer: *timer })),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("timer_fired_stale", |b| {
        let mut m = Machine::default();
        let input = Input::TimerFired { timer: TimerId(7) };
        b.iter(|| m.handle(black_box(input)))
    });
    g.bench_function("abort_retry", |b| {
        b.iter_batched_ref(
            in_backoff,
            |(m, _)| m.handle(black_box(Input::AbortRetry)),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("abort_retry_idle", |b| {
        let mut m = Machine::default();
        b.iter(|| m.handle(black_box(Input::AbortRetry)))
    });
    g.bench_function("agent_end_success", |b| {
        let mut m = Machine::default();
        let input = Input::AgentEnd {
            message: AssistantMessage::new(StopReason::Stop),
            now_ms: None,
        };
        b.iter(|| m.handle(black_box(input)))
    });
    g.bench_function("agent_end_not_retryable", |b| {
        let mut m = Machine::default();
        b.iter(|| m.handle(black_box(agent_end(AUTH))))
    });
    g.bench_function("agent_end_retryable", |b| {
        b.iter_batched_ref(
            Machine::default,
            |m| m.handle(black_box(agent_end(OVERLOADED))),
            BatchSize::SmallInput,
        )
    });
    // Spec §11.4: the same decisions with a shared retry budget (a charge
    // and the throttle test; a refill for a good run), against the plain
    // ones above.
    g.bench_function("agent_end_retryable_budget", |b| {
        b.iter_batched_ref(
            || {
                (
                    Machine::default(),
                    RetryBudget::new(10, 100).expect("figures"),
                )
            },
            |(m, budget)| m.handle_with_budget(black_box(agent_end(OVERLOADED)), budget),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("agent_end_success_budget", |b| {
        let mut m = Machine::default();
        let mut budget = RetryBudget::new(10, 100).expect("figures");
        let input = Input::AgentEnd {
            message: AssistantMessage::new(StopReason::Stop),
            now_ms: None,
        };
        b.iter(|| m.handle_with_budget(black_box(input), &mut budget))
    });
    g.bench_function("settings", |b| {
        let mut m = Machine::default();
        let input = Input::Settings(RetrySettings::DEFAULT);
        b.iter(|| m.handle(black_box(input)))
    });
    g.bench_function("set_auto_retry", |b| {
        let mut m = Machine::default();
        let input = Input::SetAutoRetry { enabled: true };
        b.iter(|| m.handle(black_box(input)))
    });
    g.bench_function("abort_idle", |b| {
        let mut m = Machine::default();
        b.iter(|| m.handle(black_box(Input::Abort)))
    });
    g.bench_function("message_end_success", |b| {
        let mut m = Machine::default();
        let input = Input::MessageEnd {
            message: AssistantMessage::new(StopReason::Stop),
        };
        b.iter(|| m.handle(black_box(input)))
    });
    let with =
        |settings: RetrySettings| move || Machine::new(settings, HostOptions::DEFAULT.with_seed(7));
    g.bench_function("agent_end_retryable_jitter", |b| {
        b.iter_batched_ref(
            with(RetrySettings::DEFAULT.with_jitter_pct(JitterPct::saturating(25))),
            |m| m.handle(black_box(agent_end(OVERLOADED))),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("agent_end_retryable_hint", |b| {
        b.iter_batched_ref(
            with(RetrySettings::DEFAULT.with_honor_hints(true)),
            |m| m.handle(black_box(agent_end(OVERLOADED_HINT))),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("agent_end_retryable_modern", |b| {
        b.iter_batched_ref(
            with(RetrySettings::MODERN),
            |m| m.handle(black_box(agent_end(OVERLOADED_HINT))),
            BatchSize::SmallInput,
        )
    });
    g.bench_function("default_chain", |b| {
        b.iter(|| default_chain(black_box(OVERLOADED)))
    });
    // The stream: the watch pending stays pending (300 s), so every event
    // only stores its time; the clock moves on by a millisecond each time.
    g.bench_function("stream_event", |b| {
        let mut m = watching(0);
        let mut now = 0u64;
        b.iter(|| {
            now += 1;
            m.stream_event(black_box(now))
        })
    });
    g.bench_function("stream_event_handle", |b| {
        let mut m = watching(0);
        let mut now = 0u64;
        b.iter(|| {
            now += 1;
            m.handle(black_box(Input::StreamEvent { now_ms: now }))
                .map(|out| out.len())
        })
    });
    g.bench_function("stream_event_thread", |b| {
        let mut driver = autoretry::host::thread::ThreadDriver::new(watching(0));
        assert!(driver.stream_event().outputs.is_ok_and(|o| o.is_empty()));
        b.iter(|| {
            black_box(driver.stream_event())
                .outputs
                .map(|out| out.len())
        })
    });
    g.bench_function("stream_event_tokio", |b| {
        use autoretry::host::tokio::{TokioDriver, TokioSleeper};
        let mut driver: TokioDriver = TokioDriver::new(watching(0), TokioSleeper);
        assert!(driver.stream_event().outputs.is_ok_and(|o| o.is_empty()));
        b.iter(|| {
            black_box(driver.stream_event())
                .outputs
                .map(|out| out.len())
        })
    });
    g.finish();
}

fn config() -> Criterion {
    Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_millis(500))
        .nresamples(2000)
        .without_plots()
}

criterion_group! {
    name = benches;
    config = config();
    targets = machine_benches
}
criterion_main!(benches);
