//! The test kit of [`autoretry`]: what a host's property tests and fuzz
//! targets need to check a host against the crate's guarantees, and what
//! the crate's own tests, fuzz targets, firmware and command-line host
//! share, kept out of the library.
//!
//! It is not published (`publish = false`): a host's tests take it from
//! the repository, by path or git, as a dev-dependency
//! (`docs/guide/testkit.md`, rendered as `autoretry::guide::testkit`).
//!
//! - [`VectorHost`] (`no_std`, no allocation): the host of the conformance
//!   vectors, timer ordinals to the machine's ids and back, and the kept
//!   usage-limit text.
//! - [`SplitMix64`]: the jitter generator of spec §10.6, the test side's
//!   one deterministic source of pseudo-random numbers.
//! - With feature `std`:
//!   - [`Monitor`]: the invariant checker. [`Monitor::observe`] checks a
//!     host's log (each input, the outputs or refusal, the state after)
//!     against the crate's guarantees; [`Monitor::step`] drives a machine
//!     of its own and checks its insides too (with a shared retry budget:
//!     [`Monitor::observe_with_budget`], [`Monitor::step_with_budget`]);
//!   - [`spec`]: the spec's arithmetic (delays, waits, jitter), computed
//!     independently of the crate;
//!   - [`model`]: the reference model of the machine, which predicts
//!     every output, over the texts of [`corpus`];
//!   - [`vector`]: the line format of the vectors ([`vector::VectorLine`],
//!     [`vector::ScenarioHeader`]);
//!   - [`replay`]: the vectors replayed on the real machine
//!     ([`replay::Replayer`]);
//!   - [`fuzzing`]: the entry points of the fuzz targets, which **panic**
//!     on a violated guarantee, and the texts they draw from;
//!   - [`sidecar`]: the sidecar on a virtual clock ([`sidecar::Script`]).
//!   - [`forge`]: snapshots with edited fields and their digest made
//!     again, for tests of what `Machine::restore` refuses.
//! - With feature `proptest`: [`strategies`], proptest strategies for
//!   settings, host options, messages, inputs and whole host scenarios.
//! - With feature `rules-fuzz`: [`rules_fuzz`], generated rule sets with
//!   their `regex` reference, and the rules fuzz targets' entry points.
//!
//! For fuzzing with whole inputs, the library's own feature `arbitrary`
//! implements `arbitrary::Arbitrary` for its inputs and settings.
//!
//! ```
//! use autoretry::{AssistantMessage, Input, Machine, Output, TimerId};
//! use autoretry_testkit::VectorHost;
//!
//! let mut machine = Machine::default();
//! let mut host = VectorHost::<&str>::new();
//! let fail = Input::AgentEnd { message: AssistantMessage::error("overloaded"), now_ms: None };
//! for output in machine.handle(fail).unwrap() {
//!     if let Output::Sleep { timer, .. } = host.vector_output(&fail, output) {
//!         assert_eq!(timer, TimerId(1)); // the scenario's first sleep
//!     }
//! }
//! ```
#![cfg_attr(not(feature = "std"), no_std)]
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod host;
pub use host::{VectorHost, RECENT_TIMERS};

mod splitmix;
pub use splitmix::SplitMix64;

#[cfg(feature = "std")]
pub mod spec;

#[cfg(feature = "std")]
pub mod corpus;

#[cfg(feature = "std")]
pub mod model;

#[cfg(feature = "std")]
mod monitor;
#[cfg(feature = "std")]
pub use monitor::Monitor;

#[cfg(feature = "std")]
pub mod vector;

#[cfg(feature = "std")]
pub mod replay;

#[cfg(feature = "std")]
pub mod fuzzing;

#[cfg(feature = "std")]
pub mod sidecar;

#[cfg(feature = "std")]
pub mod forge;

#[cfg(feature = "rules-fuzz")]
pub mod rules_fuzz;

#[cfg(feature = "proptest")]
pub mod strategies;
