//! Every conformance vector of sections 1–9, every step, through the
//! library API ([`Replayer`](autoretry_testkit::replay::Replayer) over the
//! real [`autoretry::Machine`]): outputs, state and `refused` compare as
//! JSON values; the key order of every emitted event is checked against the
//! expected line's raw text.
#![cfg(feature = "json")]

use crate::common;

use common::vectors::{raw_events, replay_folder_passes};

#[test]
fn every_vector_step_passes() {
    // The shared set at the time of writing: 26 files, 26 scenarios, 118
    // steps.
    replay_folder_passes("tests/vectors", (26, 26, 118));
}

#[test]
fn raw_event_extraction() {
    let line = r#"{"out":[{"type":"emit","event":{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"a}\"b"}}]}"#;
    assert_eq!(
        raw_events(line),
        [r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"a}\"b"}"#]
    );
}
