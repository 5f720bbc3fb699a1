//! Your own rules (`autoretry::rules`): the verdicts against the `regex`
//! crate, the semantics case by case, every malformed rules file and blob,
//! and the verdict in the machine.
#![cfg(feature = "rules-compile")]

#[path = "../common/mod.rs"]
mod common;

mod blob;
mod differential;
mod files;
mod fuzz_seeds;
mod semantics;
