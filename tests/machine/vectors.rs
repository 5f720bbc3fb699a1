//! Every conformance vector of sections 1–9, every step, through the
//! library API ([`Replayer`](autoretry_testkit::replay::Replayer) over the
//! real [`autoretry::Machine`]): outputs, state and `refused` compare as
//! JSON values; the key order of every emitted event is checked against the
//! expected line's raw text.
#![cfg(feature = "json")]

use crate::common;

use common::vectors::{raw_events, replay_file};

#[test]
fn every_vector_step_passes() {
    let paths = common::vector_files();
    let (mut files, mut scenarios, mut steps, mut events) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for path in &paths {
        let result = replay_file(path);
        files += 1;
        scenarios += result.scenarios;
        steps += result.steps;
        events += result.events;
        failures.extend(result.failures);
    }
    println!(
        "vectors: {files} files, {scenarios} scenarios, {steps} steps, {events} events passed"
    );
    assert!(
        failures.is_empty(),
        "{} of {steps} steps failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The shared set at the time of writing: 26 files, 26 scenarios, 118
    // steps. More is fine; fewer means something was silently skipped.
    assert!(
        files >= 26 && scenarios >= 26 && steps >= 118,
        "too few vectors ran: {files} files, {scenarios} scenarios, {steps} steps"
    );
}

#[test]
fn raw_event_extraction() {
    let line = r#"{"out":[{"type":"emit","event":{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"a}\"b"}}]}"#;
    assert_eq!(
        raw_events(line),
        [r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"a}\"b"}"#]
    );
}
