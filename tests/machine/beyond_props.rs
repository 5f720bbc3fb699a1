//! Properties of spec section 11 over random runs of several machines that
//! share one retry budget: the budget's bounds and throttle, gRPC's bound
//! on the retries a budget lets through, continuations, the model-switch
//! question, and the total wait of a chain.

use autoretry::{
    AssistantMessage, Event, FinalError, HostOptions, Input, Machine, Output, Partial, RetryBudget,
    RetrySettings, StopReason,
};
use proptest::prelude::*;

use crate::common::{proptest_cases, proptest_config};

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/machine/beyond_props.txt";

/// The error texts the runs fail with: retryable, a usage limit with a
/// known reset, one with none, and one never retried.
const TEXTS: [&str; 4] = [
    "529 overloaded_error",
    "You've hit your usage limit. retry-after-ms=900000",
    "usage limit reached",
    "invalid api key",
];

#[derive(Clone, Copy, Debug)]
enum Step {
    /// An `agent_end` of machine `m`: an error (text, partial) or a good run.
    End {
        m: usize,
        error: Option<(usize, Partial)>,
    },
    /// Machine `m`'s pending timer fires.
    Fire { m: usize },
    /// Machine `m` is told whether the host switched (model or credential).
    Answer { m: usize, switched: bool },
    /// Machine `m`'s retry is cancelled.
    Cancel { m: usize },
}

fn partial() -> impl Strategy<Value = Partial> {
    prop_oneof![4 => Just(Partial::None), 1 => Just(Partial::Text), 1 => Just(Partial::Tools)]
}

fn step(machines: usize) -> impl Strategy<Value = Step> {
    let m = 0..machines;
    prop_oneof![
        4 => (m.clone(), proptest::option::weighted(0.7, (0..TEXTS.len(), partial())))
            .prop_map(|(m, error)| Step::End { m, error }),
        4 => m.clone().prop_map(|m| Step::Fire { m }),
        2 => (m.clone(), any::<bool>()).prop_map(|(m, switched)| Step::Answer { m, switched }),
        1 => m.prop_map(|m| Step::Cancel { m }),
    ]
}

fn settings() -> impl Strategy<Value = RetrySettings> {
    (
        0u32..4,
        prop_oneof![Just(0u64), Just(1000), Just(5000)],
        any::<bool>(),
        prop_oneof![Just(0u64), Just(1_000_000)],
        prop_oneof![Just(0u64), Just(2500), Just(10_000), Just(2_000_000)],
        any::<bool>(),
    )
        .prop_map(
            |(max_retries, max_delay_ms, honor_hints, usage_wait, total, fallback)| {
                RetrySettings::DEFAULT
                    .with_max_retries(max_retries)
                    .with_base_delay_ms(1000)
                    .with_max_delay_ms(max_delay_ms)
                    .with_honor_hints(honor_hints)
                    .with_max_usage_wait_ms(usage_wait)
                    .with_max_total_delay_ms(total)
                    .with_model_fallback(fallback)
            },
        )
}

fn budget() -> impl Strategy<Value = RetryBudget> {
    (1u32..=10, 1u32..=2000, 0u32..=1000).prop_map(|(max, ratio, share)| {
        let budget = RetryBudget::new(max, ratio).unwrap();
        budget.with_tokens_milli(max * share).unwrap()
    })
}

/// One machine of a run, and what the properties follow of it.
struct Session {
    machine: Machine,
    /// The error text of the last `agent_end` (what an answer carries).
    text: &'static str,
    /// The total of the open chain's start events since the chain or the
    /// last model switch began.
    total_ms: u64,
    /// A `switch_model` was output and not answered yet.
    asked: bool,
}

proptest! {
    #![proptest_config(proptest_cases(10_000, REGRESSIONS))]

    #[test]
    fn section_11_invariants(
        machines in 1usize..4,
        settings in settings(),
        credential_store in any::<bool>(),
        budget in budget(),
        steps in (1usize..4).prop_flat_map(|n| proptest::collection::vec(step(n), 1..48)),
    ) {
        let host = HostOptions::DEFAULT.with_credential_store(credential_store);
        let mut sessions: Vec<Session> = (0..machines)
            .map(|_| Session {
                machine: Machine::new(settings, host),
                text: "",
                total_ms: 0,
                asked: false,
            })
            .collect();
        let mut budget = budget;
        let half_milli = budget.max_tokens() * 500;
        let start_milli = budget.tokens_milli();
        let (mut charged_starts, mut good_runs) = (0u64, 0u64);
        for step in steps {
            let m = match step {
                Step::End { m, .. } | Step::Fire { m } | Step::Answer { m, .. } | Step::Cancel { m } => m,
            };
            let Some(session) = sessions.get_mut(m) else { continue };
            let continuation = matches!(step, Step::End { error: Some((_, Partial::Text)), .. });
            let input = match step {
                Step::End { error: Some((t, partial)), .. } => {
                    session.text = TEXTS[t];
                    Input::AgentEnd {
                        message: AssistantMessage::error(TEXTS[t]).with_partial(partial),
                        now_ms: None,
                    }
                }
                Step::End { error: None, .. } => Input::AgentEnd {
                    message: AssistantMessage::new(StopReason::Stop),
                    now_ms: None,
                },
                Step::Fire { .. } => match session.machine.pending_timer() {
                    Some(timer) => Input::TimerFired { timer },
                    None => continue,
                },
                Step::Answer { switched, .. } if session.machine.awaits_usage_limit_answer() => {
                    Input::UsageLimitMarked { switched, error_message: session.text }
                }
                Step::Answer { switched, .. } => {
                    Input::ModelSwitched { switched, error_message: session.text }
                }
                Step::Cancel { .. } => Input::AbortRetry,
            };
            let before = budget;
            let Ok(out) = session.machine.handle_with_budget(input, &mut budget) else {
                prop_assert_eq!(budget, before, "a refused input changed the budget");
                continue;
            };
            // The tokens stay within [0, maxTokens].
            prop_assert!(budget.tokens_milli() <= budget.max_tokens() * 1000);
            if let Input::AgentEnd { message, .. } = input {
                if message.stop_reason.is_success() {
                    good_runs += 1;
                }
            }
            let switches = out.iter().filter(|o| matches!(o, Output::SwitchModel { .. })).count();
            prop_assert!(switches <= 1, "{:?}", out);
            if switches == 1 {
                // Asked at most once per decision: never again before the
                // answer, and not by the answer itself.
                prop_assert!(!session.asked, "asked twice: {:?}", out);
                prop_assert!(!matches!(input, Input::ModelSwitched { .. }), "asked again after an answer: {:?}", out);
                prop_assert!(settings.model_fallback && !continuation);
            }
            if matches!(input, Input::ModelSwitched { .. } | Input::AbortRetry | Input::AgentEnd { .. }) {
                session.asked = false;
            }
            session.asked |= switches == 1;
            for output in &out {
                match *output {
                    Output::Emit(Event::Start { attempt, delay_ms, .. }) => {
                        if !matches!(input, Input::ModelSwitched { switched: true, .. }) {
                            charged_starts += 1;
                        }
                        // With a budget, a start follows a charge that left
                        // more than half (a switched model is not charged).
                        if matches!(input, Input::AgentEnd { .. }) {
                            prop_assert!(budget.tokens_milli() > half_milli,
                                "a retry started at {} of {}", budget, budget.max_tokens());
                        }
                        let restarted = attempt == 1 || matches!(input, Input::ModelSwitched { switched: true, .. });
                        if restarted {
                            session.total_ms = 0;
                        }
                        session.total_ms = session.total_ms.saturating_add(delay_ms);
                        let limit = settings.max_total_delay_ms;
                        let switched = matches!(input, Input::ModelSwitched { switched: true, .. });
                        if limit > 0 && !switched {
                            prop_assert!(session.total_ms <= limit,
                                "the chain's waits total {} over {}", session.total_ms, limit);
                        }
                    }
                    Output::DropTrailingError => {
                        prop_assert!(!continuation, "a continuation dropped the trailing error");
                    }
                    // Throttled at the charge (an answer ends a decision whose
                    // charge came earlier).
                    Output::Emit(Event::End { final_error: Some(FinalError::Throttled { .. }), .. })
                        if matches!(input, Input::AgentEnd { .. }) =>
                    {
                        prop_assert!(budget.tokens_milli() <= half_milli);
                    }
                    _ => {}
                }
            }
            // gRPC's bound: every start of a charged decision spent a whole
            // token and left more than half, so such starts are fewer than
            // what the budget held above half at the beginning plus what
            // good runs refilled (a switched model's start is not charged).
            if charged_starts > 0 {
                let through = i128::from(start_milli) - i128::from(half_milli)
                    + i128::from(budget.ratio_milli()) * i128::from(good_runs);
                prop_assert!(i128::from(charged_starts) * 1000 < through,
                    "{} retries through a budget that let {} thousandths through",
                    charged_starts, through);
            }
        }
    }
}

/// Runs the test kit's scenario (spec section 11 on) through `sessions`
/// machines, each under its own `Monitor`, step `i` going to session
/// `picks[i] % sessions`; with a budget, all of them share it, so each
/// monitor sees the tokens the others left. Returns the monitors.
fn run_shared(
    scenario: &autoretry_testkit::strategies::Scenario,
    sessions: usize,
    picks: &[usize],
) -> Vec<autoretry_testkit::Monitor> {
    let mut budget = scenario.budget;
    let mut hosts: Vec<(Machine, autoretry_testkit::Monitor, &str)> = (0..sessions)
        .map(|_| {
            (
                Machine::new(scenario.settings, scenario.host),
                autoretry_testkit::Monitor::new(scenario.settings, scenario.host),
                "",
            )
        })
        .collect();
    for (i, step) in scenario.steps.iter().enumerate() {
        let (machine, monitor, marked) = &mut hosts[picks.get(i).copied().unwrap_or(0) % sessions];
        let pending = machine.pending_timer().or(machine.pending_watch());
        let input = step.input(pending, marked);
        match budget.as_mut() {
            Some(budget) => {
                let before = *budget;
                let result = machine.handle_with_budget(input, budget);
                *marked = step.marks(&result).unwrap_or(marked);
                monitor.observe_with_budget(input, result, machine.state(), before, *budget);
            }
            None => {
                let result = machine.handle(input);
                *marked = step.marks(&result).unwrap_or(marked);
                monitor.observe(input, result, machine.state());
            }
        }
    }
    hosts.into_iter().map(|(_, monitor, _)| monitor).collect()
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    /// Every guarantee the test kit's monitor checks, section 11's
    /// included (the budget's tokens against its own account), holds for
    /// sessions that share one budget.
    #[test]
    fn the_monitor_accepts_sessions_sharing_a_budget(
        scenario in autoretry_testkit::strategies::scenario(),
        sessions in 1usize..4,
        picks in proptest::collection::vec(any::<usize>(), 160),
    ) {
        let _ = run_shared(&scenario, sessions, &picks);
    }
}

/// The kit's scenarios reach what section 11 is about: continuations,
/// model questions, throttled chains and chains ended by their total
/// wait or their retries, with the monitor's checks on.
#[test]
fn kit_scenarios_reach_section_11() {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    let (mut chains, mut questions, mut continuations, mut throttled) = (0, 0, 0, 0);
    for i in 0..200 {
        let scenario = autoretry_testkit::strategies::scenario_of(100..160)
            .new_tree(&mut runner)
            .expect("a tree")
            .current();
        let picks: Vec<usize> = (0..160).map(|k| k * 7 + i).collect();
        for monitor in run_shared(&scenario, 1 + i % 3, &picks) {
            chains += monitor.chains();
            questions += monitor.model_questions();
            continuations += monitor.continuations();
            throttled += monitor.throttled();
        }
    }
    println!("{chains} chains, {questions} model questions, {continuations} continuations, {throttled} throttled");
    assert!(chains > 200, "{chains} chains");
    assert!(questions > 50, "{questions} model questions");
    assert!(continuations > 50, "{continuations} continuations");
    assert!(throttled > 20, "{throttled} throttled chains");
}
