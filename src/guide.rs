//! Guides: how to use the crate in each kind of host (docs only).
//!
//! Each guide is a file of `docs/guide/` in the repository, rendered here;
//! its Rust examples run as doctests (those of a guide that needs features
//! run when they are on, as with `--all-features`). Start with the one for
//! your host:
//!
//! | guide | what it covers |
//! |---|---|
//! | [`firmware`] | by hand, on firmware and in WebAssembly: the drain rule, `no_std` builds, QEMU |
//! | [`runtimes`] | the drivers: tokio, embassy, threads, your own runtime |
//! | [`options`] | the policy options of spec §10: profiles, jitter, hints, the ceiling and fail fast |
//! | [`beyond`] | spec §11: continuations, model fallback, the shared retry budget, usage-reset and total waits |
//! | [`stream`] | spec §12: the stall watchdog (what counts as progress, the two limits, `watch` and the abort) and empty answers |
//! | [`snapshots`] | saving and restoring a machine |
//! | [`rules`] | your own error rules: the rules file, run-time compiling, blobs for firmware |
//! | [`sidecar`] | the `autoretry` command line and the JSON-lines sidecar protocol |
//! | [`c`] | the C ABI: C hosts, the WebAssembly module, rules over the ABI |
//! | [`javascript`] | the JavaScript and TypeScript wrapper |
//! | [`testkit`] | property tests and fuzzing of your host with the test kit |
//! | [`classifier`] | how error texts are classified |
//! | [`headers`] | response headers (spec §13.1): reqwest, hyper, fetch and Python clients |
//!
//! A new guide is a file of `docs/guide/` and a module here, gated on the
//! features its examples need (`cfg(any(not(doctest), ...))`: rendered
//! always, tested with those features).

#[doc = include_str!("../docs/guide/firmware.md")]
pub mod firmware {}

#[cfg(any(not(doctest), all(feature = "tokio", feature = "embassy")))]
#[doc = include_str!("../docs/guide/runtimes.md")]
pub mod runtimes {}

#[cfg(any(not(doctest), feature = "extended"))]
#[doc = include_str!("../docs/guide/options.md")]
pub mod options {}

#[cfg(any(not(doctest), feature = "std"))]
#[doc = include_str!("../docs/guide/beyond.md")]
pub mod beyond {}

#[doc = include_str!("../docs/guide/stream.md")]
pub mod stream {}

#[cfg(any(not(doctest), feature = "serde"))]
#[doc = include_str!("../docs/guide/snapshots.md")]
pub mod snapshots {}

#[cfg(any(not(doctest), feature = "rules-compile"))]
#[doc = include_str!("../docs/guide/rules.md")]
pub mod rules {}

#[cfg(any(not(doctest), feature = "json"))]
#[doc = include_str!("../docs/guide/sidecar.md")]
pub mod sidecar {}

// No Rust examples: its C examples are the files of `ffi/examples/`, which CI
// builds and runs.
#[doc = include_str!("../docs/guide/c.md")]
pub mod c {}

// No Rust examples: `js/test/guide.test.js` runs its `js` blocks.
#[doc = include_str!("../docs/guide/javascript.md")]
pub mod javascript {}

#[cfg(any(not(doctest), feature = "arbitrary"))]
#[doc = include_str!("../docs/guide/testkit.md")]
pub mod testkit {}

#[cfg(any(not(doctest), feature = "curated"))]
#[doc = include_str!("../docs/guide/classifier.md")]
pub mod classifier {}

#[cfg(any(not(doctest), feature = "std"))]
#[doc = include_str!("../docs/guide/headers.md")]
pub mod headers {}
