//! Spec section 12 (the stream): every vector of `tests/vectors/stream/`
//! through the library API, and one test per rule of the stall watchdog
//! and of empty answers.
#![cfg(feature = "json")]

use crate::common;

use autoretry::{
    AssistantMessage, ErrorText, Event, FinalError, HostOptions, Input, Machine, Output, Partial,
    Refused, RetryBudget, RetrySettings, StopReason, TimerId, EMPTY_RESPONSE,
};
use common::vectors::replay_folder_passes;
use common::*;

#[test]
fn every_stream_vector_step_passes() {
    // The shared set at the time of writing: 17 files, 17 scenarios, 120
    // steps.
    replay_folder_passes("tests/vectors/stream", (17, 17, 120));
}

fn watched(first: u64, idle: u64) -> Machine {
    Machine::new(
        RetrySettings::DEFAULT
            .with_first_event_timeout_ms(first)
            .with_idle_timeout_ms(idle)
            .with_base_delay_ms(10),
        HostOptions::DEFAULT,
    )
}

/// The watch among the outputs.
fn watch_of(out: &[Output<'_>]) -> (u64, TimerId) {
    out.iter()
        .find_map(|o| match *o {
            Output::Watch { ms, timer } => Some((ms, timer)),
            _ => None,
        })
        .expect("a watch output")
}

fn aborted() -> AssistantMessage<'static> {
    AssistantMessage {
        error_message: Some("Request was aborted."),
        ..AssistantMessage::new(StopReason::Aborted)
    }
}

#[test]
fn a_progress_event_only_stores_its_time_while_a_watch_is_pending() {
    let mut m = watched(0, 1000);
    assert!(ok(&mut m, Input::stream_start(0)).is_empty());
    let (ms, timer) = watch_of(&ok(&mut m, Input::stream_event(100)));
    assert_eq!(ms, 1000);
    let before = m.pending_watch();
    for t in 101..200 {
        assert!(ok(&mut m, Input::stream_event(t)).is_empty());
    }
    assert_eq!(m.pending_watch(), before);
    // Due at 1100, last event at 199: a silence of 901 ms, so 99 ms left
    // of the limit.
    let (ms, _) = watch_of(&ok(&mut m, fired(timer)));
    assert_eq!(ms, 99);
}

#[test]
fn a_clock_that_went_back_rearms_for_the_whole_limit() {
    let mut m = watched(500, 0);
    let (_, timer) = watch_of(&ok(&mut m, Input::stream_start(1000)));
    // Due at 1500; the first event says 2000 (after the due time): the
    // silence counts as 0, so the next due time is 1500 + 500.
    let mut idle = watched(0, 500);
    let _ = ok(&mut idle, Input::stream_start(0));
    let (_, t) = watch_of(&ok(&mut idle, Input::stream_event(1000)));
    assert!(ok(&mut idle, Input::stream_event(2000)).is_empty());
    let (ms, _) = watch_of(&ok(&mut idle, fired(t)));
    assert_eq!(ms, 500);
    // A first-event watch fired on time stalls.
    assert_eq!(ok(&mut m, fired(timer)), [Output::AbortAgent]);
    assert_eq!(m.stalled_ms(), Some(500));
}

#[test]
fn the_stall_is_retried_with_its_own_text() {
    let mut m = watched(300, 0);
    let (_, timer) = watch_of(&ok(&mut m, Input::stream_start(5)));
    assert_eq!(ok(&mut m, fired(timer)), [Output::AbortAgent]);
    assert!(!m.watches_stream());
    let out = ok(&mut m, Input::agent_end(aborted()));
    assert_eq!(
        out[0],
        Output::Emit(Event::Start {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 10,
            error_message: ErrorText::Stalled { silence_ms: 300 },
        })
    );
    assert_eq!(
        serde_json::to_value(out[0]).unwrap()["event"]["errorMessage"],
        "Stream stalled: no event for 300ms"
    );
    assert_eq!(m.stalled_ms(), None, "the stall is forgotten at agent_end");
}

#[test]
fn a_stall_that_is_not_retried_ends_the_chain_with_its_text() {
    let mut m = watched(50, 0);
    let out = ok(&mut m, fail("529 overloaded"));
    let _ = ok(&mut m, fired(timer_of(&out)));
    let (_, timer) = watch_of(&ok(&mut m, Input::stream_start(0)));
    let _ = ok(&mut m, fired(timer));
    let tools = aborted().with_partial(Partial::Tools);
    let out = ok(&mut m, Input::agent_end(tools));
    assert_eq!(
        out[0],
        Output::Emit(Event::End {
            success: false,
            attempt: 1,
            final_error: Some(FinalError::Stalled { silence_ms: 50 }),
        })
    );
}

#[test]
fn the_hand_off_answers_carry_the_message_s_own_text() {
    // maxRetries 0 under modelFallback: the stall's decision asks for a
    // model; the answer carries the text the host fed, the start shows
    // the stall's.
    let settings = RetrySettings::DEFAULT
        .with_first_event_timeout_ms(70)
        .with_max_retries(0)
        .with_model_fallback(true);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let (_, timer) = watch_of(&ok(&mut m, Input::stream_start(0)));
    let _ = ok(&mut m, fired(timer));
    let out = ok(&mut m, Input::agent_end(aborted()));
    assert!(matches!(out[..], [Output::SwitchModel { .. }]), "{out:?}");
    assert_eq!(
        m.handle(Input::model_switched(
            true,
            "Stream stalled: no event for 70ms"
        )),
        Err(Refused::ModelSwitchTextMismatch)
    );
    let out = ok(&mut m, Input::model_switched(true, "Request was aborted."));
    assert_eq!(
        out[0],
        Output::Emit(Event::Start {
            attempt: 1,
            max_attempts: 0,
            delay_ms: 0,
            error_message: ErrorText::Stalled { silence_ms: 70 },
        })
    );
}

#[test]
fn no_watch_is_pending_during_a_backoff() {
    let mut m = watched(1000, 1000);
    let (_, timer) = watch_of(&ok(&mut m, Input::stream_start(0)));
    let out = ok(&mut m, fail("529 overloaded"));
    assert_eq!(out[0], Output::CancelTimer { timer });
    assert_eq!(m.pending_watch(), None);
    assert_eq!(
        m.handle(Input::stream_start(1)),
        Err(Refused::AgentRunDuringBackoff)
    );
    assert!(ok(&mut m, Input::stream_event(2)).is_empty());
    assert_eq!(m.pending_watch(), None);
}

#[test]
fn an_abort_cancels_the_watch_first_and_forgets_the_stall() {
    let mut m = watched(1000, 0);
    let (_, timer) = watch_of(&ok(&mut m, Input::stream_start(0)));
    assert_eq!(
        ok(&mut m, Input::Abort),
        [Output::CancelTimer { timer }, Output::AbortAgent]
    );
    // `abort_retry` leaves the stream alone.
    let (_, timer) = watch_of(&ok(&mut m, Input::stream_start(0)));
    assert!(ok(&mut m, Input::AbortRetry).is_empty());
    assert_eq!(m.pending_watch(), Some(timer));
}

#[test]
fn an_empty_stop_is_no_success_under_retry_empty() {
    let settings = RetrySettings::DEFAULT
        .with_retry_empty(true)
        .with_base_delay_ms(10);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let out = ok(&mut m, fail("529 overloaded"));
    let _ = ok(&mut m, fired(timer_of(&out)));
    let empty = AssistantMessage::new(StopReason::Stop).with_empty(true);
    assert!(ok(&mut m, Input::message_end(empty)).is_empty());
    let out = ok(&mut m, Input::agent_end(empty));
    assert_eq!(out[0], start(2, 3, 20, EMPTY_RESPONSE));
    assert_eq!(out[1], Output::DropTrailingError);
}

#[test]
fn an_empty_answer_is_charged_and_not_refilled() {
    let settings = RetrySettings::DEFAULT.with_retry_empty(true);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let mut budget = RetryBudget::new(10, 1000).unwrap();
    let empty = AssistantMessage::new(StopReason::Stop).with_empty(true);
    let _ = m
        .handle_with_budget(Input::agent_end(empty), &mut budget)
        .unwrap();
    assert_eq!(budget.tokens_milli(), 9000);
}

#[test]
fn an_empty_answer_with_partial_output_is_refused() {
    let mut m = Machine::default();
    for partial in [Partial::Text, Partial::Tools] {
        let message = AssistantMessage::new(StopReason::Stop)
            .with_empty(true)
            .with_partial(partial);
        assert_eq!(
            m.handle(Input::agent_end(message)),
            Err(Refused::EmptyWithPartial)
        );
        assert_eq!(
            m.handle(Input::message_end(message)),
            Err(Refused::EmptyWithPartial)
        );
    }
}

#[test]
fn timer_ids_run_on_across_sleeps_and_watches() {
    let mut m = watched(100, 0);
    let (_, first) = watch_of(&ok(&mut m, Input::stream_start(0)));
    let out = ok(&mut m, fail("503"));
    let sleep = timer_of(&out);
    assert_eq!(sleep.get(), first.get() + 1);
    let _ = ok(&mut m, fired(sleep));
    let (_, next) = watch_of(&ok(&mut m, Input::stream_start(0)));
    assert_eq!(next.get(), sleep.get() + 1);
    // The old watch is stale.
    assert!(ok(&mut m, fired(first)).is_empty());
}
