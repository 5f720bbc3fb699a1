//! The monitor catches a host's log that breaks spec section 11: each test
//! records a real machine's log, changes one thing the section fixes, and
//! expects the monitor to panic; the unchanged log passes.
#![cfg(feature = "std")]

use autoretry::{
    AssistantMessage, Event, FallbackReason, FinalError, HostOptions, Input, Machine, Output,
    Partial, RetryBudget, RetrySettings, TimerId,
};
use autoretry_testkit::Monitor;

const TEXT: &str = "529 overloaded_error";

fn failed(partial: Partial) -> Input<'static> {
    Input::AgentEnd {
        message: AssistantMessage::error(TEXT).with_partial(partial),
        now_ms: None,
    }
}

/// Feeds `inputs` to a machine and the monitor, replacing the outputs of
/// input `at` (when given) with `edit` of them.
fn replay(
    settings: RetrySettings,
    inputs: &[Input<'static>],
    at: Option<usize>,
    edit: fn(Vec<Output<'static>>) -> Vec<Output<'static>>,
) {
    let mut machine = Machine::new(settings, HostOptions::DEFAULT);
    let mut monitor = Monitor::new(settings, HostOptions::DEFAULT);
    for (i, &input) in inputs.iter().enumerate() {
        let input = match input {
            // The pending timer, whatever its id.
            Input::TimerFired { .. } => Input::TimerFired {
                timer: machine.pending_timer().unwrap_or(TimerId(1)),
            },
            other => other,
        };
        let out: Vec<Output<'static>> = machine.handle(input).expect("accepted").to_vec();
        let out = if at == Some(i) { edit(out) } else { out };
        monitor.observe(input, Ok::<_, autoretry::Refused>(out), machine.state());
    }
}

const FIRE: Input<'static> = Input::TimerFired { timer: TimerId(1) };

#[test]
fn a_continuation_as_the_machine_makes_it_passes() {
    replay(
        RetrySettings::DEFAULT,
        &[failed(Partial::Text), FIRE],
        None,
        |o| o,
    );
}

#[test]
#[should_panic(expected = "the spec expects")]
fn a_continuation_that_drops_the_partial_turn_is_caught() {
    replay(
        RetrySettings::DEFAULT,
        &[failed(Partial::Text)],
        Some(0),
        |mut o| {
            o.insert(1, Output::DropTrailingError);
            o
        },
    );
}

#[test]
#[should_panic(expected = "continuation")]
fn a_continuation_continued_without_resume_is_caught() {
    replay(
        RetrySettings::DEFAULT,
        &[failed(Partial::Text), FIRE],
        Some(1),
        |_| vec![Output::ContinueAgent],
    );
}

#[test]
#[should_panic(expected = "a retry where the spec starts none")]
fn a_retried_tool_call_is_caught() {
    // What a machine that ignored `partial: "tools"` would do.
    replay(
        RetrySettings::DEFAULT,
        &[failed(Partial::Tools)],
        Some(0),
        |_| {
            vec![
                Output::Emit(Event::Start {
                    attempt: 1,
                    max_attempts: 3,
                    delay_ms: 2000,
                    error_message: TEXT.into(),
                }),
                Output::DropTrailingError,
                Output::Sleep {
                    ms: 2000,
                    timer: TimerId(1),
                },
            ]
        },
    );
}

#[test]
#[should_panic(expected = "the spec expects")]
fn a_chain_that_ends_instead_of_asking_for_a_model_is_caught() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(0)
        .with_model_fallback(true);
    replay(settings, &[failed(Partial::None)], Some(0), |_| {
        vec![
            Output::Emit(Event::End {
                success: false,
                attempt: 0,
                final_error: Some(FinalError::Text(TEXT)),
            }),
            Output::Settled,
            Output::CheckCompaction,
        ]
    });
}

#[test]
#[should_panic(expected = "the spec expects")]
fn a_continuation_that_asks_for_a_model_is_caught() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(0)
        .with_model_fallback(true);
    replay(settings, &[failed(Partial::Text)], Some(0), |_| {
        vec![Output::SwitchModel {
            reason: FallbackReason::Exhausted,
        }]
    });
}

#[test]
fn a_model_switch_as_the_machine_makes_it_passes() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(0)
        .with_model_fallback(true);
    let answer = Input::ModelSwitched {
        switched: true,
        error_message: TEXT,
    };
    replay(
        settings,
        &[failed(Partial::None), answer, FIRE],
        None,
        |o| o,
    );
}

#[test]
#[should_panic(expected = "the policy end")]
fn a_total_wait_end_with_a_wrong_total_is_caught() {
    // 2000 ms over a limit of 1000: the end says 2000.
    let settings = RetrySettings::DEFAULT.with_max_total_delay_ms(1000);
    replay(settings, &[failed(Partial::None)], Some(0), |mut o| {
        o[0] = Output::Emit(Event::End {
            success: false,
            attempt: 0,
            final_error: Some(FinalError::TotalWait {
                total_ms: 4000,
                max_total_delay_ms: 1000,
                error: TEXT.into(),
            }),
        });
        o
    });
}

#[test]
#[should_panic(expected = "the start's attempt, maxAttempts and delayMs")]
fn a_usage_reset_wait_the_machine_cut_short_is_caught() {
    // A usage limit asking for 900,000 ms, over a ceiling of 300,000 and
    // within maxUsageWaitMs: the retry waits 900,000 ms, not the ceiling.
    let settings = RetrySettings::DEFAULT
        .with_honor_hints(true)
        .with_max_delay_ms(300_000)
        .with_max_usage_wait_ms(1_000_000);
    let limit = Input::AgentEnd {
        message: AssistantMessage::error("usage limit reached. retry-after-ms=900000"),
        now_ms: None,
    };
    replay(settings, &[limit], Some(0), |mut o| {
        let Output::Emit(Event::Start {
            attempt,
            max_attempts,
            error_message,
            ..
        }) = o[0]
        else {
            panic!("no start: {o:?}")
        };
        o[0] = Output::Emit(Event::Start {
            attempt,
            max_attempts,
            delay_ms: 300_000,
            error_message,
        });
        o[2] = Output::Sleep {
            ms: 300_000,
            timer: TimerId(1),
        };
        o
    });
}

/// Feeds one failure with `budget`, then checks the monitor with the
/// tokens after changed by `skew` thousandths.
fn budget_log(skew: i64) {
    let mut machine = Machine::default();
    let mut monitor = Monitor::new(RetrySettings::DEFAULT, HostOptions::DEFAULT);
    let mut budget = RetryBudget::new(4, 500).expect("valid figures");
    let before = budget;
    let input = failed(Partial::None);
    let result = machine.handle_with_budget(input, &mut budget);
    let tokens = i64::from(budget.tokens_milli()) + skew;
    let after = before
        .with_tokens_milli(u32::try_from(tokens).expect("in range"))
        .expect("in range");
    monitor.observe_with_budget(input, result, machine.state(), before, after);
}

#[test]
fn the_budget_as_the_machine_leaves_it_passes() {
    budget_log(0);
}

#[test]
#[should_panic(expected = "the budget's tokens")]
fn a_decision_that_does_not_charge_the_budget_is_caught() {
    budget_log(1000);
}
