//! The hosts of the library on every conformance vector: the tokio and
//! embassy drivers in virtual time and the sidecar on a virtual clock. The
//! properties of the machine itself are in `tests/machine/`; the C ABI's
//! tests are the `autoretry-ffi` package's (`ffi/tests/`).

#[path = "../common/mod.rs"]
mod common;

mod embassy;
mod sidecar;
mod tokio;
