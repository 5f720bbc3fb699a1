//! Replays the fuzz seeds (`fuzz/corpus/<target>/`) and the minimized
//! findings of the fuzzers (`tests/fuzz_regressions/<target>/`) through the
//! same functions the fuzz targets call; each panics on a violated guarantee.
#![cfg(feature = "json")]

use std::fs;
use std::path::Path;

use autoretry_testkit::fuzzing;

/// A fuzz target: its directory name and the function it calls.
type Target = (&'static str, fn(&[u8]));

const TARGETS: [Target; 5] = [
    ("classify", fuzzing::fuzz_classify),
    ("machine", fuzzing::fuzz_machine),
    ("settings_json", fuzzing::fuzz_settings_json),
    ("rpc_line", fuzzing::fuzz_rpc_line),
    ("hint", fuzzing::fuzz_hint),
];

fn replay(root: &str) -> usize {
    let mut count = 0;
    for (target, run) in TARGETS {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join(root)
            .join(target);
        let Ok(entries) = fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let data = fs::read(&path).expect("a readable file");
            if std::panic::catch_unwind(|| run(&data)).is_err() {
                panic!("{target}: {} fails", path.display());
            }
            count += 1;
        }
    }
    count
}

#[test]
fn seed_corpora_pass() {
    assert!(replay("fuzz/corpus") >= 100, "the seed corpora are missing");
}

#[test]
fn fuzz_findings_stay_fixed() {
    replay("tests/fuzz_regressions");
}
