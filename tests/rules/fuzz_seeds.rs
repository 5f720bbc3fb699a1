//! Replays the rules fuzz targets' seeds (`fuzz/corpus/rules_*/`) and
//! minimized findings (`tests/fuzz_regressions/rules_*/`) through the
//! functions the targets call (`autoretry_testkit::rules_fuzz`); each
//! panics on a violated guarantee.

use std::fs;
use std::path::Path;

use autoretry_testkit::rules_fuzz::{fuzz_rules_from_bytes, fuzz_rules_match};

type Target = (&'static str, fn(&[u8]));

const TARGETS: [Target; 2] = [
    ("rules_from_bytes", fuzz_rules_from_bytes),
    ("rules_match", |data| {
        fuzz_rules_match(data);
    }),
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
    assert!(
        replay("fuzz/corpus") >= 40,
        "the rules seed corpora are missing"
    );
}

#[test]
fn fuzz_findings_stay_fixed() {
    replay("tests/fuzz_regressions");
}
