//! The attempt and the timer ids at the ends of their ranges (spec §5.1.1–2,
//! §6): reached through forged snapshots, as no test runs 2^32 retries.
#![cfg(feature = "json")]

use crate::common::*;
use autoretry::{
    FallbackReason, HostOptions, Input, Machine, Output, RetrySettings, TimerId, RETRY_CANCELLED,
};
use autoretry_testkit::forge::forge;

/// A machine in a backoff whose attempt and last timer id are forged to
/// `attempt` and `timer`, under `maxRetries = u32::MAX`.
fn in_backoff(attempt: u32, timer: u64) -> Machine {
    let settings = RetrySettings::DEFAULT.with_max_retries(u32::MAX);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let _ = ok(&mut m, fail("overloaded_error"));
    Machine::restore(forge(m.snapshot(), |f| {
        f["attempt"] = attempt.into();
        f["timer"] = timer.into();
    }))
    .expect("a state a machine reaches")
}

#[test]
fn the_attempt_after_u32_max_is_past_every_maximum() {
    let mut m = in_backoff(u32::MAX - 1, u64::from(u32::MAX));
    let timer = m.pending_timer().unwrap();
    assert_eq!(ok(&mut m, fired(timer)), [Output::ContinueAgent]);
    // Retry 2^32 − 1 is within maxRetries = 2^32 − 1: it starts.
    let out = ok(&mut m, fail("overloaded_error"));
    assert_eq!(
        out[0],
        start(u32::MAX, u32::MAX, u64::MAX, "overloaded_error")
    );
    assert_eq!(m.retry_attempt(), u32::MAX);
    assert_eq!(ok(&mut m, fired(timer_of(&out))), [Output::ContinueAgent]);
    // Retry 2^32 would be past it: the chain ends, reporting the retries made.
    assert_eq!(
        ok(&mut m, fail("overloaded_error")),
        [
            ended(false, u32::MAX, Some("overloaded_error")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
    assert_eq!((m.retry_attempt(), m.is_retrying()), (0, false));
}

#[test]
fn timer_ids_never_wrap_to_0_nor_repeat() {
    // The last id is issued as usual.
    let mut m = in_backoff(1, u64::MAX - 1);
    assert_eq!(
        ok(&mut m, fired(TimerId(u64::MAX - 1))),
        [Output::ContinueAgent]
    );
    let out = ok(&mut m, fail("overloaded_error"));
    assert_eq!(timer_of(&out), TimerId(u64::MAX));
    assert_eq!(
        ok(&mut m, fired(TimerId(u64::MAX))),
        [Output::ContinueAgent]
    );
    // With every id issued, no retry can sleep: the chain ends as past the
    // maximum, reporting the retries made, and so does every later chain.
    assert_eq!(
        ok(&mut m, fail("overloaded_error")),
        [
            ended(false, 2, Some("overloaded_error")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
    assert_eq!(
        ok(&mut m, fail("overloaded_error")),
        [
            ended(false, 0, Some("overloaded_error")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
    // That machine is one a machine reaches: its snapshot restores.
    assert_eq!(Machine::restore(m.snapshot()), Ok(m));
}

/// Spec §11.3: "a cancel ends the chain reporting `attempt − 1` retries"
/// while the model-switch answer is awaited. After u32::MAX retries the
/// attempt being decided is 2^32, so the cancelled end must report
/// u32::MAX, the retries made (as the `switched: false` end does); the
/// machine keeps the attempt as u32::MAX and subtracts 1, reporting
/// u32::MAX − 1.
#[test]
fn a_cancel_of_the_model_question_after_u32_max_reports_the_retries_made() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(u32::MAX)
        .with_model_fallback(true);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let _ = ok(&mut m, fail("overloaded_error"));
    // Retry u32::MAX ran (its timer fired): u32::MAX retries made.
    let mut m = Machine::restore(forge(m.snapshot(), |f| {
        f["phase"] = 1.into();
        f["attempt"] = u32::MAX.into();
        f["timer"] = u64::from(u32::MAX).into();
    }))
    .expect("a state a machine reaches");
    assert_eq!(
        ok(&mut m, fail("overloaded_error")),
        [Output::SwitchModel {
            reason: FallbackReason::Exhausted
        }]
    );
    assert_eq!(
        ok(&mut m, Input::AbortRetry),
        [
            ended(false, u32::MAX, Some(RETRY_CANCELLED)),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
}
