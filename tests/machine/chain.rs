//! The retry chain: backoff, continue, success, exhaustion (spec §5.1, §5.2).

use crate::common::*;
use autoretry::{HostOptions, Machine, Output, RetrySettings, StopReason};

#[test]
fn defaults_back_off_2_4_8_seconds_then_give_up_with_the_raw_error() {
    let mut m = Machine::default();
    let text = "503 Service Unavailable";
    for (attempt, delay) in [(1, 2000), (2, 4000), (3, 8000)] {
        let out = ok(&mut m, fail(text));
        let timer = timer_of(&out);
        assert_eq!(
            out,
            [
                start(attempt, 3, delay, text),
                Output::DropTrailingError,
                Output::Sleep { ms: delay, timer }
            ]
        );
        assert_eq!(m.retry_attempt(), attempt);
        assert_eq!(ok(&mut m, fired(timer)), [Output::ContinueAgent]);
    }
    assert_eq!(
        ok(&mut m, fail(text)),
        [
            ended(false, 3, Some(text)),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
    assert_eq!(m.retry_attempt(), 0);
    assert!(!m.is_retrying());
}

#[test]
fn success_is_reported_at_the_first_good_message_and_settled_at_agent_end() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("overloaded_error")));
    ok(&mut m, fired(timer));
    assert_eq!(
        ok(&mut m, message(StopReason::ToolUse)),
        [ended(true, 1, None)]
    );
    assert!(m.is_retrying(), "the chain stays open until agent_end");
    assert_eq!(
        ok(&mut m, message(StopReason::Stop)),
        [],
        "success is reported once"
    );
    assert_eq!(
        ok(&mut m, end(StopReason::Stop)),
        [Output::Settled, Output::CheckCompaction]
    );
    assert!(!m.is_retrying());
}

#[test]
fn a_new_failure_after_a_reported_success_starts_over_without_settling() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("overloaded_error")));
    ok(&mut m, fired(timer));
    ok(&mut m, message(StopReason::ToolUse));
    let out = ok(&mut m, fail("overloaded_error"));
    assert_eq!(out[0], start(1, 3, 2000, "overloaded_error"));
    assert!(!out.contains(&Output::Settled));
}

#[test]
fn max_retries_zero_ends_at_once_with_attempt_zero() {
    let mut m = Machine::new(
        RetrySettings::DEFAULT.with_max_retries(0),
        HostOptions::default(),
    );
    assert_eq!(
        ok(&mut m, fail("fetch failed")),
        [
            ended(false, 0, Some("fetch failed")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
}

#[test]
fn delays_saturate_instead_of_overflowing() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(u32::MAX)
        .with_base_delay_ms(u64::MAX / 2 + 1);
    let mut m = Machine::new(settings, HostOptions::default());
    let mut delays = Vec::new();
    for _ in 0..3 {
        let out = ok(&mut m, fail("overloaded"));
        let Output::Sleep { ms, timer } = out[2] else {
            panic!("{out:?}")
        };
        delays.push(ms);
        ok(&mut m, fired(timer));
    }
    assert_eq!(delays, [u64::MAX / 2 + 1, u64::MAX, u64::MAX]);
}

#[test]
fn settings_are_read_at_each_decision() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("overloaded")));
    ok(
        &mut m,
        autoretry::Input::Settings(RetrySettings::DEFAULT.with_base_delay_ms(10)),
    );
    ok(&mut m, fired(timer));
    let out = ok(&mut m, fail("overloaded"));
    assert_eq!(out[0], start(2, 3, 20, "overloaded"));
}
