//! Spec section 11 (when retrying is not enough): every vector of
//! `tests/vectors/beyond/` through the library API, with the scenario's
//! shared budget, and one test per behaviour.
#![cfg(feature = "json")]

use crate::common;

use autoretry::{
    AssistantMessage, Event, FallbackReason, FinalError, HostOptions, Input, Machine, Output,
    Partial, Refused, RetryBudget, RetrySettings, StopReason,
};
use common::vectors::replay_folder_passes;
use common::*;

#[test]
fn every_beyond_vector_step_passes() {
    // The shared set at the time of writing: 14 files, 14 scenarios, 66
    // steps.
    replay_folder_passes("tests/vectors/beyond", (14, 14, 66));
}

const OVERLOADED: &str = "529 overloaded_error";

fn fallback(max_retries: u32) -> Machine {
    Machine::new(
        RetrySettings::DEFAULT
            .with_max_retries(max_retries)
            .with_base_delay_ms(10)
            .with_model_fallback(true),
        HostOptions::DEFAULT,
    )
}

#[test]
fn a_continuation_keeps_the_partial_turn_and_resumes() {
    let mut m = Machine::default();
    let cut = Input::AgentEnd {
        message: AssistantMessage::error(OVERLOADED).with_partial(Partial::Text),
        now_ms: None,
    };
    let out = ok(&mut m, cut);
    assert_eq!(out.len(), 2, "no drop_trailing_error: {out:?}");
    assert_eq!(out[0], start(1, 3, 2000, OVERLOADED));
    let timer = timer_of(&out);
    assert_eq!(ok(&mut m, fired(timer)), [Output::ResumeAgent]);
    // A later replay in the same chain drops only its own error and
    // continues plainly.
    let out = ok(&mut m, fail(OVERLOADED));
    assert!(out.contains(&Output::DropTrailingError));
    assert_eq!(ok(&mut m, fired(timer_of(&out))), [Output::ContinueAgent]);
}

#[test]
fn a_turn_with_tool_output_is_never_replayed() {
    let mut m = Machine::default();
    let tools = AssistantMessage::error(OVERLOADED)
        .with_partial(Partial::Tools)
        .with_should_retry(true);
    assert!(!tools.is_retryable(0));
    let out = ok(
        &mut m,
        Input::AgentEnd {
            message: tools,
            now_ms: None,
        },
    );
    assert_eq!(out, [Output::CheckCompaction]);
}

#[test]
fn fallback_is_asked_once_and_a_switch_restarts_the_count() {
    let mut m = fallback(1);
    let out = ok(&mut m, fail(OVERLOADED));
    let _ = ok(&mut m, fired(timer_of(&out)));
    // Spent: ask.
    let out = ok(&mut m, fail(OVERLOADED));
    assert_eq!(
        out,
        [Output::SwitchModel {
            reason: FallbackReason::Exhausted
        }]
    );
    assert!(m.awaits_model_switch_answer() && m.retry_attempt() == 2);
    // The agent must not run meanwhile.
    assert_eq!(
        m.handle(fail(OVERLOADED)),
        Err(Refused::AwaitingModelSwitchAnswer)
    );
    // A wrong text is refused and changes nothing.
    let before = m.clone();
    let wrong = Input::ModelSwitched {
        switched: true,
        error_message: "other",
    };
    assert_eq!(m.handle(wrong), Err(Refused::ModelSwitchTextMismatch));
    assert_eq!(m, before);
    // Switched: attempt 1 at 0 ms on the new model.
    let yes = Input::ModelSwitched {
        switched: true,
        error_message: OVERLOADED,
    };
    let out = ok(&mut m, yes);
    assert_eq!(out[0], start(1, 1, 0, OVERLOADED));
    // A late answer is ignored.
    let _ = ok(&mut m, fired(timer_of(&out)));
    assert_eq!(ok(&mut m, yes), []);
}

#[test]
fn a_continuation_never_asks_for_another_model() {
    let mut m = fallback(0);
    let cut = Input::AgentEnd {
        message: AssistantMessage::error(OVERLOADED).with_partial(Partial::Text),
        now_ms: None,
    };
    let out = ok(&mut m, cut);
    assert_eq!(
        out,
        [
            ended(false, 0, Some(OVERLOADED)),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
}

#[test]
fn max_retries_zero_under_fallback_asks_at_once() {
    let mut m = fallback(0);
    assert_eq!(
        ok(&mut m, fail(OVERLOADED)),
        [Output::SwitchModel {
            reason: FallbackReason::Exhausted
        }]
    );
    let out = ok(
        &mut m,
        Input::ModelSwitched {
            switched: true,
            error_message: OVERLOADED,
        },
    );
    assert_eq!(out[0], start(1, 0, 0, OVERLOADED));
}

#[test]
fn the_total_wait_ends_the_chain_before_it_would_be_passed() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(10)
        .with_base_delay_ms(1000)
        .with_max_total_delay_ms(2500);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let out = ok(&mut m, fail(OVERLOADED));
    let _ = ok(&mut m, fired(timer_of(&out)));
    // 1000 + 2000 > 2500.
    let out = ok(&mut m, fail(OVERLOADED));
    let Output::Emit(Event::End {
        attempt: 1,
        final_error: Some(e),
        ..
    }) = out[0]
    else {
        panic!("{out:?}")
    };
    assert_eq!(
        e,
        FinalError::TotalWait {
            total_ms: 3000,
            max_total_delay_ms: 2500,
            error: OVERLOADED.into()
        }
    );
    assert_eq!(
        e.to_string(),
        "Retry waits would total 3000ms, exceeds retry.maxTotalDelayMs (2500ms). Original error: 529 overloaded_error"
    );
}

/// Spec §11.6 takes `total + d > maxTotalDelayMs` exactly: once the total
/// has saturated at u64::MAX, the next wait goes past even a limit of
/// u64::MAX (the sum is printed saturated). A saturating sum would compare
/// u64::MAX with u64::MAX and retry for ever.
#[test]
fn a_saturated_total_passes_even_the_largest_limit() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(10)
        .with_base_delay_ms(u64::MAX)
        .with_max_delay_ms(0)
        .with_backoff_cap_ms(0)
        .with_max_total_delay_ms(u64::MAX);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let mut mon = autoretry_testkit::Monitor::new(settings, HostOptions::DEFAULT);
    // 0 + (2^64 − 1) is within the limit: the first retry waits.
    let out = ok(&mut m, fail(OVERLOADED));
    assert_eq!(out[0], start(1, 10, u64::MAX, OVERLOADED));
    assert_eq!(mon.step(fail(OVERLOADED)).unwrap()[..], out[..]);
    let timer = timer_of(&out);
    assert_eq!(
        mon.step(fired(timer)).unwrap()[..],
        ok(&mut m, fired(timer))[..]
    );
    // (2^64 − 1) + (2^64 − 1) exceeds it.
    let out = ok(&mut m, fail(OVERLOADED));
    let error = FinalError::TotalWait {
        total_ms: u64::MAX,
        max_total_delay_ms: u64::MAX,
        error: OVERLOADED.into(),
    };
    assert_eq!(
        out[..],
        [
            Output::Emit(Event::End {
                success: false,
                attempt: 1,
                final_error: Some(error),
            }),
            Output::Settled,
            Output::CheckCompaction,
        ]
    );
    assert_eq!(mon.step(fail(OVERLOADED)).unwrap()[..], out[..]);
    assert_eq!(
        error.to_string(),
        "Retry waits would total 18446744073709551615ms, exceeds retry.maxTotalDelayMs \
         (18446744073709551615ms). Original error: 529 overloaded_error"
    );
    // The question of another model, asked for that total, restores.
    let mut asked = Machine::new(settings.with_model_fallback(true), HostOptions::DEFAULT);
    let out = ok(&mut asked, fail(OVERLOADED));
    let _ = ok(&mut asked, fired(timer_of(&out)));
    assert_eq!(
        ok(&mut asked, fail(OVERLOADED)),
        [Output::SwitchModel {
            reason: FallbackReason::TotalWait
        }]
    );
    assert_eq!(Machine::restore(asked.snapshot()), Ok(asked));
}

#[test]
fn the_budget_is_charged_by_decisions_and_refilled_by_good_runs_only() {
    let mut budget = RetryBudget::new(10, 250).unwrap();
    let mut m = Machine::default();
    let out = m.handle_with_budget(fail(OVERLOADED), &mut budget).unwrap();
    assert_eq!(budget.tokens_milli(), 9000);
    // A refused input changes nothing.
    assert!(m.handle_with_budget(fail(OVERLOADED), &mut budget).is_err());
    assert_eq!(budget.tokens_milli(), 9000);
    // A timer, an aborted run and a non-retryable error change nothing.
    let _ = m
        .handle_with_budget(fired(timer_of(&out)), &mut budget)
        .unwrap();
    let _ = m
        .handle_with_budget(end(StopReason::Aborted), &mut budget)
        .unwrap();
    let _ = m
        .handle_with_budget(fail("invalid api key"), &mut budget)
        .unwrap();
    assert_eq!(budget.tokens_milli(), 9000);
    // A good run refills.
    let _ = m
        .handle_with_budget(end(StopReason::Stop), &mut budget)
        .unwrap();
    assert_eq!(budget.tokens_milli(), 9250);
    // The plain handle does no accounting.
    let _ = m.handle(fail(OVERLOADED)).unwrap();
    assert_eq!(budget.tokens_milli(), 9250);
}

#[test]
fn a_snapshot_keeps_the_section_11_state() {
    let mut m = fallback(0);
    let _ = ok(&mut m, fail(OVERLOADED));
    assert!(m.awaits_model_switch_answer());
    let restored = Machine::restore(m.snapshot()).unwrap();
    assert_eq!(restored, m);

    let mut m = Machine::default();
    let cut = Input::AgentEnd {
        message: AssistantMessage::error(OVERLOADED).with_partial(Partial::Text),
        now_ms: None,
    };
    let _ = ok(&mut m, cut);
    let mut restored = Machine::restore(m.snapshot()).unwrap();
    let timer = restored.pending_timer().unwrap();
    assert_eq!(ok(&mut restored, fired(timer)), [Output::ResumeAgent]);
}

#[test]
fn a_cancel_while_asked_past_u32_max_reports_every_retry_made() {
    use autoretry_testkit::forge::forge;
    let settings = RetrySettings::DEFAULT
        .with_max_retries(u32::MAX)
        .with_model_fallback(true);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let _ = ok(&mut m, fail(OVERLOADED));
    // Restored in the backoff of retry u32::MAX, then run on: the next
    // decision is retry 2^32, past every maximum, and asks for a model.
    let mut m = Machine::restore(forge(m.snapshot(), |f| {
        f["attempt"] = u32::MAX.into();
        f["timer"] = u64::from(u32::MAX).into();
    }))
    .unwrap();
    let timer = m.pending_timer().unwrap();
    let _ = ok(&mut m, fired(timer));
    let out = ok(&mut m, fail(OVERLOADED));
    assert_eq!(
        out,
        [Output::SwitchModel {
            reason: FallbackReason::Exhausted
        }]
    );
    let out = ok(&mut m, Input::AbortRetry);
    assert_eq!(
        out[0],
        ended(false, u32::MAX, Some(autoretry::RETRY_CANCELLED))
    );
}
