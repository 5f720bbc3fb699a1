//! Forged snapshots, fuzzed (`autoretry_testkit::fuzzing::fuzz_snapshot`):
//! a reachable machine's snapshot with fields edited and its digest made
//! again; when the machine takes it, random inputs under a `Monitor` that
//! resumes from the restored state. Every guarantee the monitor checks
//! must hold: restore yields only states a machine reaches.
//!
//! The default run takes 256 cases (`PROPTEST_CASES`). The long run, by
//! hand, prints its counts:
//!
//! ```text
//! SNAPSHOT_FUZZ_CASES=1000000 cargo test --release --all-features --test machine \
//!     forged_snapshots_long_run -- --ignored --nocapture
//! ```
#![cfg(feature = "json")]

use crate::common::proptest_config;
use autoretry_testkit::fuzzing::fuzz_snapshot;
use autoretry_testkit::SplitMix64;
use proptest::collection::vec;
use proptest::prelude::*;

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/machine/snapshot_fuzz.txt";

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    #[test]
    fn forged_snapshots_restore_only_states_a_machine_reaches(bytes in vec(any::<u8>(), 0..600)) {
        let _ = fuzz_snapshot(&bytes);
    }
}

/// What a run of `fuzz_snapshot` did.
#[derive(Debug, Default)]
struct Counts {
    forged: u64,
    restored: u64,
    inputs: u64,
}

/// `cases` inputs of 0 to 599 bytes from the jitter generator (a
/// deterministic SplitMix64) seeded with `seed`.
fn run(cases: u64, seed: u64) -> Counts {
    let mut rng = SplitMix64::new(seed);
    let mut counts = Counts::default();
    for _ in 0..cases {
        let len = rng.draw() % 600;
        let bytes: Vec<u8> = (0..len).map(|_| rng.draw().to_le_bytes()[0]).collect();
        counts.forged += 1;
        if let Some(fed) = fuzz_snapshot(&bytes) {
            counts.restored += 1;
            counts.inputs += fed as u64;
        }
    }
    counts
}

#[test]
fn the_fuzzer_restores_and_drives_forged_machines() {
    let counts = run(300, 1);
    // Neither every forgery refused nor none: both sides are exercised.
    assert!(
        counts.restored > 30 && counts.restored < counts.forged,
        "{counts:?}"
    );
    assert!(counts.inputs > 1000, "{counts:?}");
}

#[test]
#[ignore = "the long run, by hand (see the module docs)"]
fn forged_snapshots_long_run() {
    let cases = std::env::var("SNAPSHOT_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let counts = run(cases, 0x5eed);
    println!(
        "snapshots forged {}, restored {}, inputs fed {}, violations 0",
        counts.forged, counts.restored, counts.inputs
    );
}
