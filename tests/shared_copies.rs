//! The copies in `tests/vectors`, `tests/corpus` and `tests/corpus/extended`
//! equal the shared originals byte for byte, with no file missing on either
//! side. The
//! originals live in `../shared` beside the clone (CI checks it out there);
//! without it, the test prints a note and passes.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

fn files(dir: &Path) -> BTreeSet<String> {
    fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_type().unwrap().is_file())
        .map(|entry| entry.file_name().into_string().unwrap())
        .collect()
}

#[test]
fn copies_equal_the_shared_originals() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let shared = root.parent().map(|p| p.join("shared"));
    let Some(shared) = shared.filter(|s| s.is_dir()) else {
        println!("note: ../shared not found beside the crate; the copies are not checked");
        return;
    };
    let mut checked = 0;
    for kind in ["vectors", "corpus", "corpus/extended"] {
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
            let want = fs::read(original.join(name)).unwrap();
            let got = fs::read(copy.join(name)).unwrap();
            assert!(
                want == got,
                "tests/{kind}/{name} differs from {}; copy it again",
                original.join(name).display()
            );
            checked += 1;
        }
        assert!(!a.is_empty(), "shared/{kind} is empty");
    }
    println!("{checked} shared files match their copies");
}
