//! Messages that start no retry, and how they end an open chain (spec §3, §9).

use crate::common::*;
use autoretry::{
    AssistantMessage, HostOptions, Input, Machine, Output, RetrySettings, StopReason, Usage,
};

#[test]
fn a_non_retryable_error_goes_to_the_compaction_check() {
    let mut m = Machine::default();
    for text in ["401 invalid x-api-key", ""] {
        assert_eq!(ok(&mut m, fail(text)), [Output::CheckCompaction]);
    }
    assert_eq!(
        ok(&mut m, end(StopReason::Error)),
        [Output::CheckCompaction]
    );
    assert!(!m.is_retrying());
}

#[test]
fn context_overflow_is_never_retried() {
    let mut m = Machine::default();
    for text in [
        "prompt is too long: 213462 tokens > 200000 maximum",
        "429 too many tokens in request",
        "400 status code (no body)",
    ] {
        assert_eq!(ok(&mut m, fail(text)), [Output::CheckCompaction], "{text}");
    }
}

#[test]
fn usage_over_a_known_context_window_is_an_overflow() {
    let mut m = Machine::new(
        RetrySettings::DEFAULT,
        HostOptions::default().with_context_window(1000),
    );
    let over = AssistantMessage::error("overloaded_error").with_usage(Usage::new(900, 101));
    let exact = over.with_usage(Usage::new(900, 100));
    let input = |message| Input::AgentEnd {
        message,
        now_ms: None,
    };
    assert_eq!(ok(&mut m, input(over)), [Output::CheckCompaction]);
    assert!(matches!(ok(&mut m, input(exact))[0], Output::Emit(_)));
}

#[test]
fn huge_usage_does_not_overflow() {
    let msg = AssistantMessage::error("overloaded").with_usage(Usage::new(u64::MAX, u64::MAX));
    assert!(msg.is_context_overflow(u64::MAX));
    assert!(
        !msg.is_context_overflow(0),
        "an unknown window never overflows"
    );
}

#[test]
fn a_non_retryable_error_mid_chain_ends_it_with_that_error() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("502 Bad Gateway")));
    ok(&mut m, fired(timer));
    assert_eq!(
        ok(&mut m, fail("401 invalid x-api-key")),
        [
            ended(false, 1, Some("401 invalid x-api-key")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
}

#[test]
fn an_aborted_or_textless_run_mid_chain_ends_it() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("overloaded")));
    ok(&mut m, fired(timer));
    assert_eq!(
        ok(&mut m, end(StopReason::Aborted)),
        [
            ended(false, 1, Some("Unknown error")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
}

#[test]
fn disabling_keeps_the_backoff_but_ends_the_chain_at_the_next_error() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("overloaded_error")));
    assert_eq!(ok(&mut m, Input::SetAutoRetry { enabled: false }), []);
    assert_eq!(m.pending_timer(), Some(timer));
    assert_eq!(ok(&mut m, fired(timer)), [Output::ContinueAgent]);
    assert_eq!(
        ok(&mut m, fail("overloaded_error")),
        [
            ended(false, 1, Some("overloaded_error")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
    assert!(!m.auto_retry_enabled());
}
