//! The C ABI driven natively: every vector through each form of its entry
//! points, hostile calls, the refusal reasons, zeroed struct inputs and
//! your own rules. The pool is the process's, so the tests take turns
//! (`ffi::turn`).

mod ffi;
mod ffi_hostile;
mod ffi_refusal;
mod ffi_rules;
mod ffi_zeroed;

use std::path::PathBuf;

/// The vendored vector files of `dir` (relative to the repository's root),
/// sorted by name.
pub fn vector_files_in(dir: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join(dir);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    paths
}
