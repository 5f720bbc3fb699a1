//! The sidecar's fairness under arbitrary interleavings of lines and timer
//! deadlines, on the test kit's virtual clock: a due timer goes ahead of
//! every line that arrived at or after its deadline, never fires early,
//! never after a cancel, and every chain ends (at the latest with the end
//! of input).
#![cfg(feature = "json")]

use std::time::Duration;

use autoretry::host::sidecar::{serve, Sidecar};
use autoretry::{HostOptions, Machine, RetrySettings};
use autoretry_testkit::sidecar::{Entry, Log, Script};
use proptest::prelude::*;

use crate::common::proptest_cases;

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/hosts/sidecar.txt";

/// What an agent may send, in any order.
const LINES: &[&str] = &[
    r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503 Service Unavailable"}}"#,
    r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"529 overloaded_error"}}"#,
    r#"{"type":"agent_end","message":{"stopReason":"stop"}}"#,
    r#"{"type":"message_end","message":{"stopReason":"toolUse"}}"#,
    r#"{"type":"get_retry_state","id":"q"}"#,
    r#"{"type":"get_retry_state"}"#,
    r#"{"type":"abort_retry"}"#,
    r#"{"type":"abort"}"#,
    r#"{"type":"set_auto_retry","enabled":false}"#,
    r#"{"type":"set_auto_retry","enabled":true}"#,
    r#"{"type":"set_retry_settings","settings":{"baseDelayMs":0}}"#,
    r#"{"type":"set_retry_settings","settings":{"baseDelayMs":7,"maxRetries":5}}"#,
    r#"{"type":"abort_retry","type":"abort"}"#,
    "not json",
    "",
];

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Checks the log of one run; `Err` says what went wrong where.
fn check(entries: &[Entry]) -> Result<(), String> {
    // The deadline of the pending timer, on the virtual clock.
    let mut deadline: Option<Duration> = None;
    // The clock at which the sidecar handled the last delivered line.
    let mut handled_at = Duration::ZERO;
    // The last delivery or wait: when the sidecar looked at the clock.
    let mut looked: Option<&Entry> = None;
    // A line arrived at or after the deadline: the timer must fire first.
    let mut must_fire = false;
    let (mut starts, mut ends, mut last_start, mut last_end) = (0, 0, None, None);
    for (i, entry) in entries.iter().enumerate() {
        match entry {
            Entry::Delivered { at, now, .. } => {
                if must_fire {
                    return Err(format!("#{i}: a line went ahead of the due timer"));
                }
                must_fire = deadline.is_some_and(|d| d <= *at);
                handled_at = *now;
                looked = Some(entry);
            }
            Entry::Idle { .. } => {
                if must_fire {
                    return Err(format!("#{i}: waited with a due timer"));
                }
                looked = Some(entry);
            }
            Entry::Line(line) => {
                let is_continue = line == r#"{"type":"action","action":"continue_agent"}"#;
                if must_fire && !is_continue {
                    return Err(format!("#{i}: {line} went ahead of the due timer"));
                }
                if is_continue {
                    must_fire = false;
                    let Some(d) = deadline.take() else {
                        return Err(format!("#{i}: continue_agent with no timer pending"));
                    };
                    let seen = match looked {
                        Some(Entry::Delivered { at, .. }) => *at,
                        Some(Entry::Idle { now }) => *now,
                        _ => Duration::ZERO,
                    };
                    if seen < d {
                        return Err(format!("#{i}: fired at {seen:?}, before {d:?}"));
                    }
                } else if let Some(rest) =
                    line.strip_prefix(r#"{"type":"action","action":"sleep","ms":"#)
                {
                    let wait: u64 = rest
                        .trim_end_matches('}')
                        .parse()
                        .map_err(|e| format!("{e}"))?;
                    deadline = Some(handled_at + ms(wait));
                } else if line.starts_with(r#"{"type":"auto_retry_start""#) {
                    starts += 1;
                    last_start = Some(i);
                } else if line.starts_with(r#"{"type":"auto_retry_end""#) {
                    ends += 1;
                    last_end = Some(i);
                    // A chain's end disarms its timer.
                    deadline = None;
                }
            }
        }
    }
    if must_fire || deadline.is_some() {
        return Err("a timer was left pending at the end".into());
    }
    if last_start > last_end || (starts > 0 && ends == 0) {
        return Err(format!("a chain never ended: {starts} starts, {ends} ends"));
    }
    Ok(())
}

proptest! {
    #![proptest_config(proptest_cases(2000, REGRESSIONS))]

    #[test]
    fn a_due_timer_is_never_starved_and_every_chain_ends(
        base_delay_ms in 0u64..20,
        max_retries in 0u32..4,
        cost_ms in 0u64..4,
        lines in prop::collection::vec((0u64..12, 0..LINES.len()), 0..40),
        tail_ms in 0u64..50,
    ) {
        let log = Log::new();
        let mut script = Script::new(ms(cost_ms), log.clone());
        let mut at = Duration::ZERO;
        for &(gap, which) in &lines {
            at += ms(gap);
            script = script.line(at, LINES[which]);
        }
        let mut script = script.end(at + ms(tail_ms));
        let settings = RetrySettings::DEFAULT
            .with_base_delay_ms(base_delay_ms)
            .with_max_retries(max_retries);
        let mut sidecar = Sidecar::new(Machine::new(settings, HostOptions::default()), log.writer());
        serve(&mut sidecar, &mut script).unwrap();
        let entries = log.entries();
        if let Err(e) = check(&entries) {
            return Err(TestCaseError::fail(format!("{e}\n{entries:#?}")));
        }
        prop_assert!(!sidecar.machine().is_retrying());
        prop_assert_eq!(sidecar.deadline(), None);
    }
}

/// A client that polls faster than the sidecar answers, from before a
/// 0 ms backoff to long after it: the continue comes before the answer to
/// the first poll that arrived after the deadline.
#[test]
fn polling_cannot_hold_back_a_zero_ms_backoff() {
    let log = Log::new();
    // Each line costs 2 ms; a poll arrives every 1 ms.
    let mut script = Script::new(ms(2), log.clone()).line(
        ms(0),
        r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#,
    );
    for i in 0..1000 {
        script = script.line(ms(i), r#"{"type":"get_retry_state"}"#);
    }
    let mut script = script.end(ms(1000));
    let settings = RetrySettings::DEFAULT.with_base_delay_ms(0);
    let mut sidecar = Sidecar::new(Machine::new(settings, HostOptions::default()), log.writer());
    serve(&mut sidecar, &mut script).unwrap();
    check(&log.entries()).unwrap();
    let lines: Vec<String> = log
        .entries()
        .into_iter()
        .filter_map(|e| match e {
            Entry::Line(line) => Some(line),
            _ => None,
        })
        .collect();
    let cont = lines
        .iter()
        .position(|l| l.ends_with(r#""continue_agent"}"#))
        .expect("the timer fired");
    // The deadline is 2 ms (when the agent_end was handled): the polls of
    // 0 and 1 ms arrived before it and are answered first.
    assert_eq!(cont, 5, "{lines:#?}");
}
