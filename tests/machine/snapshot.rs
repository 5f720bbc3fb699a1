//! Snapshots on every vector: before every step of every scenario (both
//! folders), the machine is saved, encoded (postcard, as a firmware would
//! store it, and JSON, as a server would move it), decoded and restored,
//! and the restored machine takes the step. Its outputs and state must be
//! the vector's, which the machine that was never saved gives too
//! (`vectors.rs`). Then damaged, foreign and other-version bytes.
#![cfg(feature = "json")]

use crate::common::scenarios::{refused, scenarios, FOLDERS};

use autoretry::{Machine, Snapshot, SnapshotError};
use autoretry_testkit::VectorHost;
use serde_json::Value;

/// `machine` through postcard and JSON and back.
fn round_trip(machine: &Machine) -> Machine {
    let mut buf = [0; Snapshot::MAX_POSTCARD_LEN];
    let bytes = postcard::to_slice(&machine.snapshot(), &mut buf).expect("fits the buffer");
    let decoded: Snapshot = postcard::from_bytes(bytes).expect("postcard decodes");
    let restored = Machine::restore(decoded).expect("restores");
    let json = serde_json::to_string(&restored.snapshot()).unwrap();
    let decoded: Snapshot = serde_json::from_str(&json).expect("JSON decodes");
    Machine::restore(decoded).expect("restores")
}

#[test]
fn a_restored_machine_takes_every_step_of_every_vector() {
    let mut steps = 0;
    for folder in FOLDERS {
        for scenario in scenarios(folder) {
            let header = &scenario.header;
            let mut machine = Machine::new(header.settings, header.host);
            let mut host = VectorHost::<String>::new();
            for (input, want, at) in &scenario.steps {
                let restored = round_trip(&machine);
                assert_eq!(restored, machine, "{at}: restored differs");
                machine = restored;
                steps += 1;
                let marked = host.marked_text().to_owned();
                let Ok(input) = input.as_input(&marked) else {
                    assert!(refused(want), "{at}");
                    continue;
                };
                let Some(input) = host.machine_input(input) else {
                    // A timer never produced: nothing to feed.
                    assert_eq!(want["out"], Value::Array(Vec::new()), "{at}");
                    continue;
                };
                let outputs = machine.handle(input);
                assert_eq!(outputs.is_err(), refused(want), "{at}: refused");
                let out: Vec<Value> = outputs
                    .unwrap_or_default()
                    .into_iter()
                    .map(|o| serde_json::to_value(host.vector_output(&input, o)).unwrap())
                    .collect();
                assert_eq!(Value::Array(out), want["out"], "{at}: outputs");
                let state = serde_json::to_value(machine.state()).unwrap();
                assert_eq!(state, want["state"], "{at}: state");
            }
            // And after the last step.
            assert_eq!(round_trip(&machine), machine);
        }
    }
    assert!(steps >= 236, "only {steps} steps");
}

#[test]
fn bad_bytes_are_errors_never_panics() {
    let mut buf = [0; Snapshot::MAX_POSTCARD_LEN];
    let bytes = postcard::to_slice(&Machine::default().snapshot(), &mut buf).unwrap();
    let good = bytes.to_vec();
    // Every truncation.
    for len in 0..good.len() {
        assert!(
            postcard::from_bytes::<Snapshot>(&good[..len]).is_err(),
            "{len}"
        );
    }
    // Every single-bit change: a decode error or a refused snapshot.
    for at in 0..good.len() {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[at] ^= 1 << bit;
            if let Ok(snapshot) = postcard::from_bytes::<Snapshot>(&bad) {
                assert!(Machine::restore(snapshot).is_err(), "byte {at} bit {bit}");
            }
        }
    }
    // Foreign bytes: a settings group, text, noise.
    for foreign in [
        &b"{\"maxRetries\":3}"[..],
        b"hello, machine",
        &[0xff; 64],
        &[1; 64],
    ] {
        if let Ok(snapshot) = postcard::from_bytes::<Snapshot>(foreign) {
            assert!(Machine::restore(snapshot).is_err(), "{foreign:?}");
        }
    }
    // Another version, with a correct digest.
    let newer = Machine::default()
        .snapshot()
        .with_version(Snapshot::VERSION + 1);
    let bytes = postcard::to_slice(&newer, &mut buf).unwrap();
    let err = Machine::restore(postcard::from_bytes(bytes).unwrap()).unwrap_err();
    assert_eq!(
        err,
        SnapshotError::Version {
            found: Snapshot::VERSION + 1
        }
    );
    // JSON: a missing or unknown field is a decode error naming it.
    let json = serde_json::to_value(Machine::default().snapshot()).unwrap();
    let mut extra = json.clone();
    extra["pending"] = Value::Bool(true);
    let err = serde_json::from_value::<Snapshot>(extra).unwrap_err();
    assert!(err.to_string().contains("pending"), "{err}");
    let mut missing = json;
    missing.as_object_mut().unwrap().remove("attempt");
    let err = serde_json::from_value::<Snapshot>(missing).unwrap_err();
    assert!(err.to_string().contains("attempt"), "{err}");
}
