//! Replays the fuzz seeds (`fuzz/corpus/<target>/`) and the minimized
//! findings of the fuzzers (`tests/fuzz_regressions/<target>/`) through the
//! same functions the fuzz targets call; each panics on a violated guarantee.
#![cfg(feature = "json")]

use std::path::Path;

use autoretry_testkit::fuzzing;
use autoretry_testkit::fuzzing::{replay_inputs, Target};

const TARGETS: [Target; 6] = [
    ("classify", fuzzing::fuzz_classify),
    ("machine", fuzzing::fuzz_machine),
    ("settings_json", fuzzing::fuzz_settings_json),
    ("rpc_line", fuzzing::fuzz_rpc_line),
    ("hint", fuzzing::fuzz_hint),
    ("headers", fuzzing::fuzz_headers),
];

fn replay(root: &str) -> usize {
    replay_inputs(&Path::new(env!("CARGO_MANIFEST_DIR")).join(root), &TARGETS)
}

#[test]
fn seed_corpora_pass() {
    assert!(replay("fuzz/corpus") >= 100, "the seed corpora are missing");
}

#[test]
fn fuzz_findings_stay_fixed() {
    replay("tests/fuzz_regressions");
}
