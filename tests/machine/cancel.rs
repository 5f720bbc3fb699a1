//! Cancellation: abort_retry and the global abort (spec §5.3, §6a).

use crate::common::*;
use autoretry::{HostOptions, Input, Machine, Output, RetrySettings, StopReason};

#[test]
fn abort_retry_during_backoff_cancels_the_timer() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("Connection error.")));
    assert_eq!(
        ok(&mut m, Input::AbortRetry),
        [
            Output::CancelTimer { timer },
            ended(false, 1, Some("Retry cancelled")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
    assert_eq!(ok(&mut m, fired(timer)), [], "the cancelled timer is stale");
    assert_eq!(ok(&mut m, end(StopReason::Stop)), [Output::CheckCompaction]);
}

#[test]
fn abort_retry_during_the_continued_run_ends_the_chain_but_not_the_run() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("internal error")));
    ok(&mut m, fired(timer));
    assert_eq!(
        ok(&mut m, Input::AbortRetry),
        [ended(false, 1, Some("Retry cancelled")), Output::Settled]
    );
    assert_eq!(m.retry_attempt(), 0);
    assert_eq!(ok(&mut m, message(StopReason::Stop)), []);
    assert_eq!(ok(&mut m, end(StopReason::Stop)), [Output::CheckCompaction]);
}

#[test]
fn abort_retry_after_a_reported_success_only_settles() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("internal error")));
    ok(&mut m, fired(timer));
    ok(&mut m, message(StopReason::ToolUse));
    assert_eq!(ok(&mut m, Input::AbortRetry), [Output::Settled]);
}

#[test]
fn global_abort_cancels_first_then_aborts_the_agent() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("rate limit exceeded")));
    assert_eq!(
        ok(&mut m, Input::Abort),
        [
            Output::CancelTimer { timer },
            ended(false, 1, Some("Retry cancelled")),
            Output::Settled,
            Output::CheckCompaction,
            Output::AbortAgent
        ]
    );
}

#[test]
fn cancelling_when_idle_does_nothing_but_abort_still_aborts() {
    let mut m = Machine::new(RetrySettings::DEFAULT, HostOptions::default());
    assert_eq!(ok(&mut m, Input::AbortRetry), []);
    assert_eq!(ok(&mut m, Input::Abort), [Output::AbortAgent]);
}
