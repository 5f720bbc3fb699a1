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

/// The machine's seeds reach section 12: the stream vectors' scenarios
/// and the hand-written ones arm and fire watches, declare stalls that the
/// next `agent_end` is decided as, and retry empty answers.
#[test]
fn machine_seeds_reach_the_stream() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus/machine");
    let (mut watches, mut fired, mut stalls, mut decided, mut empty) = (0, 0, 0, 0, 0);
    for entry in std::fs::read_dir(dir).expect("the machine seeds") {
        let bytes = std::fs::read(entry.expect("an entry").path()).expect("a seed");
        let mon = fuzzing::fuzz_machine_monitor(&bytes);
        watches += mon.watches();
        fired += mon.watches_fired();
        stalls += mon.stalls();
        decided += mon.stalls_decided();
        empty += mon.empty_failures();
    }
    println!(
        "{watches} watches ({fired} fired), {stalls} stalls ({decided} decided), {empty} empty"
    );
    assert!(
        watches >= 20 && fired >= 10,
        "{watches} watches, {fired} fired"
    );
    assert!(
        stalls >= 8 && decided >= 5,
        "{stalls} stalls, {decided} decided"
    );
    assert!(empty >= 4, "{empty} empty answers retried");
}
