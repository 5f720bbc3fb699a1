//! The vendored copies equal the shared originals byte for byte, with no
//! file missing on either side, sub-folders included:
//!
//! | shared (beside the clone) | copy in the repo |
//! |---|---|
//! | `../shared/vectors/` (and `options/`, `beyond/`) | `tests/vectors/` |
//! | `../shared/corpus/` (and `extended/`) | `tests/corpus/` |
//! | `../shared/spec/retry-policy.md` | `docs/retry-policy.md` |
//!
//! CI checks the clone out with `../shared` beside it and sets `CI`, and
//! then a missing `../shared` fails the test; elsewhere (a clone on its own)
//! it prints a note and passes, since the copies are all there is.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// Every file below `dir`, as paths relative to it (`options/x.jsonl`).
fn files(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(relative) = pending.pop() {
        let here = dir.join(&relative);
        let entries =
            fs::read_dir(&here).unwrap_or_else(|e| panic!("cannot list {}: {e}", here.display()));
        for entry in entries {
            let entry = entry.unwrap();
            let path = relative.join(entry.file_name());
            let kind = entry.file_type().unwrap();
            if kind.is_dir() {
                pending.push(path);
            } else if kind.is_file() {
                found.insert(path);
            }
        }
    }
    found
}

fn assert_same_file(original: &Path, copy: &Path) {
    let want = fs::read(original).unwrap();
    let got = fs::read(copy).unwrap_or_else(|e| panic!("{}: {e}", copy.display()));
    assert!(
        want == got,
        "{} differs from {}; copy it again",
        copy.display(),
        original.display()
    );
}

#[test]
fn copies_equal_the_shared_originals() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root.parent().map(|p| p.join("shared"));
    let Some(shared) = shared.filter(|s| s.is_dir()) else {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs with ../shared beside the clone, and it is not there"
        );
        println!("note: ../shared not found beside the crate; the copies are not checked");
        return;
    };
    let mut checked = 0;
    for kind in ["vectors", "corpus"] {
        let original = shared.join(kind);
        let copy = root.join("tests").join(kind);
        let (a, b) = (files(&original), files(&copy));
        let missing: Vec<_> = a.difference(&b).collect();
        let extra: Vec<_> = b.difference(&a).collect();
        assert!(
            missing.is_empty() && extra.is_empty(),
            "{kind}: missing from tests/{kind}: {missing:?}; not in shared/{kind}: {extra:?}"
        );
        for name in &a {
            assert_same_file(&original.join(name), &copy.join(name));
            checked += 1;
        }
        assert!(!a.is_empty(), "shared/{kind} is empty");
    }
    assert_same_file(
        &shared.join("spec/retry-policy.md"),
        &root.join("docs/retry-policy.md"),
    );
    checked += 1;
    println!("{checked} shared files match their copies");
}
