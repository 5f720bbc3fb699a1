//! The hosts of the library on every conformance vector: the tokio and
//! embassy drivers in virtual time, the sidecar on a virtual clock, and the
//! C ABI driven natively. The properties of the machine itself are in
//! `tests/machine/`.

#[path = "../common/mod.rs"]
mod common;

mod embassy;
mod ffi;
mod ffi_hostile;
mod ffi_refusal;
mod ffi_rules;
mod ffi_zeroed;
mod sidecar;
mod tokio;
