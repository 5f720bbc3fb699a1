//! The docs agree with the crate: the feature table (`docs/features.md`,
//! which the crate root includes and the README copies) lists exactly the
//! features of `Cargo.toml`, every guide of `docs/guide/` is rendered in
//! `autoretry::guide`, and no Rust block a user copies is left uncompiled.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;

fn read(path: &str) -> String {
    let full = Path::new(env!("CARGO_MANIFEST_DIR")).join(path);
    fs::read_to_string(&full).unwrap_or_else(|e| panic!("{}: {e}", full.display()))
}

/// The features of a manifest's `[features]` table, but `default`.
fn manifest_features(manifest: &str) -> BTreeSet<String> {
    let mut features = BTreeSet::new();
    let mut inside = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            inside = line == "[features]";
        } else if inside && !line.starts_with('#') {
            if let Some((name, _)) = line.split_once('=') {
                features.insert(name.trim().to_owned());
            }
        }
    }
    features.remove("default");
    features
}

/// The first cell of each row of a Markdown table, without its backquotes
/// (the header and the separator row left out).
fn first_column(table: &str) -> BTreeSet<String> {
    table
        .lines()
        .filter_map(|line| line.strip_prefix("| `"))
        .filter_map(|rest| rest.split_once('`'))
        .map(|(name, _)| name.to_owned())
        .collect()
}

#[test]
fn the_feature_table_lists_every_feature_of_the_manifest_and_no_other() {
    let features = manifest_features(&read("Cargo.toml"));
    assert!(
        features.contains("std") && features.contains("prefilter"),
        "{features:?}"
    );
    let table = first_column(&read("docs/features.md"));
    let missing: Vec<_> = features.difference(&table).collect();
    let stale: Vec<_> = table.difference(&features).collect();
    assert!(
        missing.is_empty(),
        "docs/features.md does not list {missing:?}"
    );
    assert!(
        stale.is_empty(),
        "docs/features.md lists {stale:?}, not features of Cargo.toml"
    );
}

#[test]
fn the_crate_root_renders_the_feature_table() {
    let lib = read("src/lib.rs");
    assert!(
        lib.contains(r#"#![doc = include_str!("../docs/features.md")]"#),
        "src/lib.rs does not include docs/features.md in the crate docs"
    );
}

#[test]
fn the_readme_carries_the_feature_table_as_it_is() {
    let table = read("docs/features.md");
    let readme = read("README.md");
    assert!(
        readme.contains(&table),
        "README.md's feature table differs from docs/features.md: copy the file into it"
    );
}

#[test]
fn every_guide_is_rendered_in_the_crate_docs() {
    let guide_rs = read("src/guide.rs");
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide");
    let mut guides = 0;
    for entry in fs::read_dir(&dir).expect("docs/guide") {
        let name = entry
            .expect("a guide")
            .file_name()
            .into_string()
            .expect("UTF-8");
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        guides += 1;
        let include = format!(r#"#[doc = include_str!("../docs/guide/{name}")]"#);
        assert!(
            guide_rs.contains(&include),
            "src/guide.rs does not render docs/guide/{name}"
        );
        assert!(
            guide_rs.contains(&format!("pub mod {stem} {{}}")),
            "src/guide.rs has no module `{stem}` for docs/guide/{name}"
        );
    }
    assert!(guides >= 10, "{guides} guides in docs/guide/");
}

/// Every Rust block of the README and the guides is a doctest: none is
/// `rust,ignore`.
#[test]
fn the_readme_and_the_guides_compile_their_rust_blocks() {
    let mut files = vec![String::from("README.md")];
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/guide");
    for entry in fs::read_dir(dir).expect("docs/guide") {
        let name = entry
            .expect("a guide")
            .file_name()
            .into_string()
            .expect("UTF-8");
        files.push(format!("docs/guide/{name}"));
    }
    for file in &files {
        for (n, line) in read(file).lines().enumerate() {
            assert!(
                !line.trim_start().starts_with("```rust,ignore"),
                "{file}:{}: a Rust block that is not compiled",
                n + 1
            );
        }
    }
}
