//! Replays the rules fuzz targets' seeds (`fuzz/corpus/rules_*/`) and
//! minimized findings (`tests/fuzz_regressions/rules_*/`) through the
//! functions the targets call (`autoretry_testkit::rules_fuzz`); each
//! panics on a violated guarantee.

use std::path::Path;

use autoretry_testkit::fuzzing::{replay_inputs, Target};
use autoretry_testkit::rules_fuzz::{fuzz_rules_from_bytes, fuzz_rules_match};

const TARGETS: [Target; 2] = [
    ("rules_from_bytes", fuzz_rules_from_bytes),
    ("rules_match", |data| {
        fuzz_rules_match(data);
    }),
];

fn replay(root: &str) -> usize {
    replay_inputs(&Path::new(env!("CARGO_MANIFEST_DIR")).join(root), &TARGETS)
}

#[test]
fn seed_corpora_pass() {
    assert!(
        replay("fuzz/corpus") >= 40,
        "the rules seed corpora are missing"
    );
}

#[test]
fn fuzz_findings_stay_fixed() {
    replay("tests/fuzz_regressions");
}
