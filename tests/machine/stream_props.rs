//! Properties of spec section 12 (the stream): over the test kit's
//! scenarios, whose host clock jumps, stalls and goes backwards, every
//! guarantee of its monitor and those of the watchdog below; and over a
//! host whose clock runs forward and fires every timer on time, the stall
//! declared exactly when the silence reaches the limit in force.

use autoretry::{
    AssistantMessage, Event, HostOptions, Input, Machine, Output, RetrySettings, StopReason,
    TimerId,
};
use autoretry_testkit::strategies::{self, Step};
use autoretry_testkit::Monitor;
use proptest::prelude::*;

use crate::common::proptest_config;

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/machine/stream_props.txt";

/// What one scenario's run counted.
#[derive(Debug, Default)]
struct Counts {
    stalls: u64,
    decided: u64,
    empty: u64,
}

/// Runs a scenario through the monitor (which checks every decision of
/// section 12 against its own account) and checks the watchdog's
/// guarantees step by step.
fn run(scenario: &strategies::Scenario) -> Counts {
    let mut mon = Monitor::new(scenario.settings, scenario.host);
    let mut marked = "";
    // The watches issued and fired when the current stream started.
    let mut since_start = (0, 0);
    // A stall declared and not yet decided, forgotten or ended well.
    let mut stall_kept = false;
    for step in &scenario.steps {
        let m = mon.machine();
        let pending = m.pending_timer().or(m.pending_watch());
        let settings = m.settings();
        let stalls = mon.stalls();
        let decided = mon.stalls_decided();
        let input = step.input(pending, marked);
        let result = mon.step(input).map(|out| out.to_vec());
        marked = step.marks(&result).unwrap_or(marked);
        let Ok(out) = result else { continue };
        let m = mon.machine();
        // No watch during a backoff or a hand-off wait.
        assert!(
            m.pending_watch().is_none()
                || (m.pending_timer().is_none()
                    && !m.awaits_usage_limit_answer()
                    && !m.awaits_model_switch_answer()),
            "a watch pending during a backoff or a hand-off wait"
        );
        // At most one watch pending, and a stream issues at most one more
        // watch than its timer fired.
        assert!(
            out.iter()
                .filter(|o| matches!(o, Output::Watch { .. }))
                .count()
                <= 1
        );
        if let Step::StreamStart(_) = step {
            since_start = (mon.watches(), mon.watches_fired());
            // The new watch, if any, is counted for this stream.
            since_start.0 -= u64::from(out.iter().any(|o| matches!(o, Output::Watch { .. })));
        }
        let issued = mon.watches() - since_start.0;
        let fired = mon.watches_fired() - since_start.1;
        assert!(
            issued <= fired + 1,
            "{issued} watches issued for {fired} fired"
        );
        // Every stall produces exactly one abort_agent.
        if mon.stalls() > stalls {
            assert_eq!(out, [Output::AbortAgent]);
            stall_kept = true;
        }
        match input {
            Input::AgentEnd { message, .. } => {
                // The next erroring agent_end is decided as the stall.
                if stall_kept && !message.stop_reason.is_success() {
                    assert_eq!(
                        mon.stalls_decided(),
                        decided + 1,
                        "not decided as the stall"
                    );
                }
                stall_kept = false;
            }
            Input::Abort | Input::StreamStart { .. } => stall_kept = false,
            _ => {}
        }
        // An empty stop is never reported as a success under retryEmpty.
        if let Input::AgentEnd { message, .. } | Input::MessageEnd { message } = input {
            if settings.retry_empty && message.empty && message.stop_reason == StopReason::Stop {
                assert!(
                    !out.iter()
                        .any(|o| matches!(o, Output::Emit(Event::End { success: true, .. }))),
                    "an empty stop reported as a success: {out:?}"
                );
            }
        }
    }
    Counts {
        stalls: mon.stalls(),
        decided: mon.stalls_decided(),
        empty: mon.empty_failures(),
    }
}

/// One step of a host whose clock runs forward and fires its timers on
/// time: `Wait(ms)` lets `ms` pass (every timer due fires at its due
/// time), `Event` is a progress event now.
#[derive(Clone, Copy, Debug)]
enum Tick {
    Wait(u64),
    Event,
}

/// A host with a virtual clock around a monitored machine.
struct Clocked {
    mon: Monitor,
    now: u64,
    /// The pending timer's id and due time.
    timer: Option<(TimerId, u64)>,
    /// The times the stalls were declared at.
    stalls: Vec<u64>,
}

impl Clocked {
    fn new(settings: RetrySettings) -> Self {
        Clocked {
            mon: Monitor::new(settings, HostOptions::DEFAULT),
            now: 0,
            timer: None,
            stalls: Vec::new(),
        }
    }

    fn feed<'a>(&mut self, input: Input<'a>) -> Vec<Output<'a>> {
        let out = self.mon.step(input).expect("accepted").to_vec();
        for o in &out {
            match *o {
                Output::Watch { ms, timer } | Output::Sleep { ms, timer } => {
                    self.timer = Some((timer, self.now.saturating_add(ms)));
                }
                Output::CancelTimer { timer } if self.timer.is_some_and(|(t, _)| t == timer) => {
                    self.timer = None;
                }
                Output::AbortAgent => self.stalls.push(self.now),
                _ => {}
            }
        }
        out
    }

    /// Lets `ms` pass, firing every timer at its due time.
    fn wait(&mut self, ms: u64) {
        let until = self.now + ms;
        while let Some((timer, due)) = self.timer.filter(|&(_, due)| due <= until) {
            self.now = due;
            self.timer = None;
            let _ = self.feed(Input::TimerFired { timer });
        }
        self.now = until;
    }
}

fn limits() -> impl Strategy<Value = (u64, u64)> {
    (1u64..5000, 1u64..5000)
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    /// Every guarantee of the monitor and of the watchdog holds over the
    /// kit's scenarios (settings with the stream's limits and
    /// `retryEmpty`, stream inputs with clocks that jump, stall and go
    /// backwards, empty answers).
    #[test]
    fn the_watchdog_keeps_its_guarantees(scenario in strategies::scenario()) {
        let _ = run(&scenario);
    }

    /// No stall is declared while the progress events come closer
    /// together than the limit in force (the first one within the
    /// first-event limit), whatever the gaps below it.
    #[test]
    fn no_stall_while_events_come_closer_than_the_limit(
        (first, idle) in limits(),
        gaps in proptest::collection::vec(0.0f64..1.0, 1..60),
    ) {
        let settings = RetrySettings::DEFAULT
            .with_first_event_timeout_ms(first)
            .with_idle_timeout_ms(idle);
        let mut host = Clocked::new(settings);
        let _ = host.feed(Input::stream_start(0));
        for (i, share) in gaps.iter().enumerate() {
            let limit = if i == 0 { first } else { idle };
            // A gap strictly below the limit.
            host.wait(((limit - 1) as f64 * share) as u64);
            let _ = host.feed(Input::stream_event(host.now));
        }
        prop_assert!(host.stalls.is_empty(), "stalled at {:?}", host.stalls);
        prop_assert_eq!(host.mon.stalls(), 0);
    }

    /// With timers fired on time, the stall is declared exactly when the
    /// silence reaches the limit: not a millisecond before, at it, and
    /// the next erroring agent_end is decided as that stall. (The lease is
    /// lazy, spec §12.2 rule 2: a pending first-event watch is checked
    /// when it fires, so with an idle limit shorter than the first-event
    /// one a stall after the first event can come as late as that watch's
    /// due time; see the next property. Here the idle limit is at least
    /// the first-event one, as in the `modern` profile.)
    #[test]
    fn a_stall_exactly_when_the_silence_reaches_the_limit(
        (first, idle) in limits().prop_map(|(a, b)| (a.min(b), a.max(b))),
        ticks in proptest::collection::vec(
            prop_oneof![3 => (0u64..3000).prop_map(Tick::Wait), 2 => Just(Tick::Event)],
            0..40,
        ),
    ) {
        let settings = RetrySettings::DEFAULT
            .with_first_event_timeout_ms(first)
            .with_idle_timeout_ms(idle);
        let mut host = Clocked::new(settings);
        let _ = host.feed(Input::stream_start(0));
        // The reference of the silence: the start, then the last event.
        let (mut reference, mut limit) = (0, first);
        for tick in ticks {
            if !host.stalls.is_empty() {
                break;
            }
            match tick {
                Tick::Wait(ms) => {
                    let stalled_before = reference + limit <= host.now + ms;
                    host.wait(ms);
                    prop_assert_eq!(host.stalls.is_empty(), !stalled_before);
                    if let Some(&at) = host.stalls.first() {
                        prop_assert_eq!(at, reference + limit, "stalled off the limit");
                    }
                }
                Tick::Event => {
                    let _ = host.feed(Input::stream_event(host.now));
                    (reference, limit) = (host.now, idle);
                }
            }
        }
        if host.stalls.is_empty() {
            // The silence reaches the limit one millisecond later, not before.
            let left = reference + limit - host.now;
            host.wait(left - 1);
            prop_assert!(host.stalls.is_empty());
            host.wait(1);
            prop_assert_eq!(&host.stalls, &vec![reference + limit]);
        }
        prop_assert_eq!(host.mon.machine().stalled_ms(), Some(limit));
        let aborted = AssistantMessage::new(StopReason::Aborted);
        let out = host.mon.step(Input::agent_end(aborted)).expect("accepted").to_vec();
        prop_assert_eq!(host.mon.stalls_decided(), 1);
        let text = format!("Stream stalled: no event for {limit}ms");
        prop_assert!(matches!(
            out[0],
            Output::Emit(Event::Start { error_message, .. }) if error_message == text.as_str()
        ), "{:?}", out);
    }
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    /// `Machine::stream_event` is `handle(Input::StreamEvent)`: on every
    /// machine a kit scenario reaches (each of its steps in turn, the
    /// watch pending or not, a stream watched, stalled or none, in a
    /// backoff or a hand-off wait), at a clock reading of the kit's, the
    /// method gives the one output `handle` gives (never refused) and
    /// leaves the same machine.
    #[test]
    fn stream_event_is_handle_of_its_input(
        scenario in strategies::scenario(),
        clocks in proptest::collection::vec(strategies::clock_ms(), 1..16),
    ) {
        let mut m = Machine::new(scenario.settings, scenario.host);
        let mut marked = "";
        for (i, step) in scenario.steps.iter().enumerate() {
            let now_ms = clocks[i % clocks.len()];
            let mut by_handle = m.clone();
            let handled = by_handle.handle(Input::stream_event(now_ms));
            let mut by_method = m.clone();
            let output = by_method.stream_event(now_ms);
            prop_assert_eq!(handled.map(|out| out.to_vec()), Ok(output.into_iter().collect::<Vec<_>>()));
            prop_assert_eq!(&by_method, &by_handle);
            // On to the scenario's next machine.
            let input = step.input(m.pending_timer().or(m.pending_watch()), marked);
            let result = m.handle(input).map(|out| out.to_vec());
            marked = step.marks(&result).unwrap_or(marked);
        }
    }

    /// Whatever the two limits, a stall is never declared before the
    /// silence reaches the limit in force, and never after the due time
    /// of the watch pending when it did.
    #[test]
    fn a_stall_never_comes_early(
        (first, idle) in limits(),
        ticks in proptest::collection::vec(
            prop_oneof![3 => (0u64..3000).prop_map(Tick::Wait), 2 => Just(Tick::Event)],
            0..40,
        ),
    ) {
        let settings = RetrySettings::DEFAULT
            .with_first_event_timeout_ms(first)
            .with_idle_timeout_ms(idle);
        let mut host = Clocked::new(settings);
        let _ = host.feed(Input::stream_start(0));
        let (mut reference, mut limit) = (0, first);
        for tick in ticks.into_iter().chain([Tick::Wait(first.max(idle) * 2)]) {
            match tick {
                Tick::Wait(ms) => {
                    let due = host.timer.map(|(_, due)| due);
                    host.wait(ms);
                    if let Some(&at) = host.stalls.first() {
                        prop_assert!(at >= reference + limit, "a stall at {} before {}", at, reference + limit);
                        prop_assert!(due.is_some_and(|due| at <= due.max(reference + limit)));
                        prop_assert_eq!(host.mon.machine().stalled_ms(), Some(at - reference));
                        break;
                    }
                }
                Tick::Event => {
                    let _ = host.feed(Input::stream_event(host.now));
                    (reference, limit) = (host.now, idle);
                }
            }
        }
        prop_assert_eq!(host.stalls.len(), 1);
    }
}

/// The kit's scenarios reach what section 12 is about: stalls declared
/// and decided, and empty answers decided as failures.
#[test]
fn kit_scenarios_reach_section_12() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let mut total = Counts::default();
    for _ in 0..300 {
        let scenario = strategies::scenario_of(100..160)
            .new_tree(&mut runner)
            .expect("a tree")
            .current();
        let counts = run(&scenario);
        total.stalls += counts.stalls;
        total.decided += counts.decided;
        total.empty += counts.empty;
    }
    println!("{total:?}");
    assert!(total.stalls > 50, "{total:?}");
    assert!(total.decided > 20, "{total:?}");
    assert!(total.empty > 50, "{total:?}");
}

#[test]
fn a_machine_with_both_limits_off_never_watches() {
    let mut m = Machine::default();
    for t in [0, 5, 3, u64::MAX] {
        assert!(m.handle(Input::stream_start(t)).unwrap().is_empty());
        assert!(m.handle(Input::stream_event(t)).unwrap().is_empty());
    }
    assert_eq!(m.pending_watch(), None);
}
