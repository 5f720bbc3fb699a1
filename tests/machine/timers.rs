//! Timers and inputs out of turn (spec §6, §6a).

use crate::common::*;
use autoretry::{Input, Machine, Output, Refused, StopReason, TimerId};

#[test]
fn only_the_pending_timer_continues_and_only_once() {
    let mut m = Machine::default();
    let first = timer_of(&ok(&mut m, fail("overloaded_error")));
    assert_eq!(ok(&mut m, fired(TimerId(first.get() + 100))), []);
    assert_eq!(ok(&mut m, fired(first)), [Output::ContinueAgent]);
    assert_eq!(ok(&mut m, fired(first)), [], "firing is one-shot");
    let second = timer_of(&ok(&mut m, fail("overloaded_error")));
    assert_ne!(first, second, "every sleep has a fresh id");
    assert_eq!(ok(&mut m, fired(first)), [], "an old timer stays stale");
    assert_eq!(ok(&mut m, fired(second)), [Output::ContinueAgent]);
}

#[test]
fn the_agent_may_not_run_during_backoff() {
    let mut m = Machine::default();
    let timer = timer_of(&ok(&mut m, fail("overloaded_error")));
    let before = m.clone();
    assert_eq!(
        m.handle(end(StopReason::Stop)),
        Err(Refused::AgentRunDuringBackoff)
    );
    assert_eq!(
        m.handle(message(StopReason::Stop)),
        Err(Refused::AgentRunDuringBackoff)
    );
    assert_eq!(m, before, "a refused input changes nothing");
    assert_eq!(m.pending_timer(), Some(timer));
}

#[test]
fn refusals_explain_themselves() {
    assert_eq!(
        Refused::AgentRunDuringBackoff.to_string(),
        "the agent must not run while a retry backoff is pending"
    );
}

#[test]
fn the_machine_stays_small() {
    // 64 bytes for sections 1–9; the options of section 10 (the settings'
    // new keys, the jitter state, the fail-fast figures kept while the
    // usage-limit answer is awaited) take it to 96; section 11 (its three
    // keys, the chain's total, the continuation flag, the figures kept
    // while a model-switch answer is awaited) to at most 136; section 12
    // (its three keys, the watched stream, the stall's silence kept with
    // an awaited decision) to at most 192.
    assert!(core::mem::size_of::<Machine>() <= 192);
    let _ = Input::AbortRetry;
}
