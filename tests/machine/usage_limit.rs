//! Usage limits with a credential store (spec §3.4, §3.5, §5.1.4, §6a).

use crate::common::*;
use autoretry::{
    AssistantMessage, HostOptions, Input, Machine, Output, Refused, RetrySettings, StopReason,
};

fn with_store() -> Machine {
    Machine::new(
        RetrySettings::DEFAULT,
        HostOptions::default().with_credential_store(true),
    )
}

const CODEX: &str =
    "Codex error: The usage limit has been reached (code=usage_limit_reached) retry-after-ms=3600000";

#[test]
fn a_switch_makes_the_delay_zero() {
    let mut m = with_store();
    assert_eq!(
        ok(&mut m, fail(CODEX)),
        [Output::MarkUsageLimit {
            retry_after_ms: Some(3_600_000)
        }]
    );
    assert!(m.is_retrying() && m.awaits_usage_limit_answer());
    let answer = Input::UsageLimitMarked {
        switched: true,
        error_message: CODEX,
    };
    let out = ok(&mut m, answer);
    assert_eq!(
        out,
        [
            start(1, 3, 0, CODEX),
            Output::DropTrailingError,
            Output::Sleep {
                ms: 0,
                timer: timer_of(&out)
            }
        ]
    );
}

#[test]
fn the_start_event_is_fixed_when_the_host_is_asked() {
    let mut m = with_store();
    ok(&mut m, fail("usage limit"));
    ok(
        &mut m,
        Input::Settings(
            RetrySettings::DEFAULT
                .with_max_retries(9)
                .with_base_delay_ms(1),
        ),
    );
    let out = ok(
        &mut m,
        Input::UsageLimitMarked {
            switched: false,
            error_message: "usage limit",
        },
    );
    assert_eq!(out[0], start(1, 3, 2000, "usage limit"));
}

#[test]
fn the_agent_may_not_run_while_the_answer_is_awaited() {
    let mut m = with_store();
    ok(&mut m, fail("usage limit"));
    let before = m.clone();
    assert_eq!(
        m.handle(end(StopReason::Stop)),
        Err(Refused::AwaitingUsageLimitAnswer)
    );
    assert_eq!(m, before);
}

#[test]
fn an_answer_about_another_text_is_refused() {
    let mut m = with_store();
    ok(&mut m, fail("usage limit"));
    let before = m.clone();
    let wrong = Input::UsageLimitMarked {
        switched: true,
        error_message: "usage limit!",
    };
    assert_eq!(m.handle(wrong), Err(Refused::UsageLimitTextMismatch));
    assert_eq!(m, before);
}

#[test]
fn cancel_before_the_answer_reports_the_last_started_attempt() {
    let mut m = with_store();
    ok(&mut m, fail("usage limit"));
    assert_eq!(
        ok(&mut m, Input::AbortRetry),
        [Output::Settled, Output::CheckCompaction],
        "no start in the chain: no end"
    );
    let late = Input::UsageLimitMarked {
        switched: true,
        error_message: "usage limit",
    };
    assert_eq!(ok(&mut m, late), [], "a late answer is ignored");

    let timer = timer_of(&ok(&mut m, fail("overloaded")));
    ok(&mut m, fired(timer));
    ok(&mut m, fail("usage limit"));
    assert_eq!(m.retry_attempt(), 2);
    assert_eq!(
        ok(&mut m, Input::AbortRetry),
        [
            ended(false, 1, Some("Retry cancelled")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
}

#[test]
fn without_a_store_a_usage_limit_is_an_ordinary_retry() {
    let mut m = Machine::default();
    let out = ok(&mut m, fail("usage limit reached, retry-after: 30"));
    assert_eq!(
        out[0],
        start(1, 3, 2000, "usage limit reached, retry-after: 30")
    );
}

#[test]
fn hints_use_the_host_clock_when_given() {
    let mut m = with_store();
    let input = Input::AgentEnd {
        message: AssistantMessage::error("usage_limit_reached x-ratelimit-reset: 1790000100"),
        now_ms: Some(1_790_000_000_000),
    };
    assert_eq!(
        ok(&mut m, input),
        [Output::MarkUsageLimit {
            retry_after_ms: Some(100_000)
        }]
    );
}

/// With a 16-bit text digest, this text (found by a search over suffixes)
/// had the digest of "usage limit 503" and was taken for it.
#[test]
fn a_wrong_text_with_a_16_bit_digest_collision_is_refused() {
    let mut m = Machine::new(
        RetrySettings::DEFAULT,
        HostOptions::default().with_credential_store(true),
    );
    let _ = m
        .handle(Input::AgentEnd {
            message: AssistantMessage::error("usage limit 503"),
            now_ms: None,
        })
        .unwrap();
    assert!(m.awaits_usage_limit_answer());
    let before = m.clone();
    for wrong in ["usage limit 503 #19675", "usage limit 503 "] {
        let answer = Input::UsageLimitMarked {
            switched: true,
            error_message: wrong,
        };
        assert_eq!(m.handle(answer), Err(Refused::UsageLimitTextMismatch));
        assert_eq!(m, before);
    }
}
