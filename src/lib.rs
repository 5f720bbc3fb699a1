//! `autoretry` decides when an LLM agent retries a failed turn, and drives the
//! retry chain.
//!
//! It is a pure, synchronous, sans-IO state machine with a `no_std` core: it
//! consumes [`Input`]s (the assistant message at the end of a run, a timer
//! that fired, an abort, a settings change) and returns [`Output`]s (emit an
//! event, sleep N ms, continue the agent, drop the trailing error, check
//! compaction, ...). It never sleeps, reads a clock, allocates or does I/O, so
//! any async runtime, embedded executor, WASM host or test can drive it.
//!
//! The behaviour is the contract of `retry-policy.md`; its terms map to the
//! API as follows:
//!
//! | spec | API |
//! |---|---|
//! | inputs `message_end`, `agent_end`, `timer_fired`, ... | [`Input`] |
//! | outputs `emit`, `sleep`, `continue_agent`, ... | [`Output`], in [`Outputs`] |
//! | `auto_retry_start` / `auto_retry_end`, `finalError` | [`Event`], [`FinalError`] |
//! | refused inputs (§6a) | [`Refused`] |
//! | `retry` settings group (§4, §10.1) | [`RetrySettings`], [`Profile`], [`JitterPct`] |
//! | context window, credential store, jitter seed (§2, §10.1) | [`HostOptions`] |
//! | `autoRetryEnabled`, `isRetrying`, `retryAttempt` | [`Machine::state`] |
//! | classification (§3, §10.5) | [`classify`] module, [`AssistantMessage::is_retryable_with`] |
//! | terminal texts (§8, §10.7) | [`LoaderLine`], [`FailureLine`] |
//! | JSON on the wire (§7, §8) | `wire` module (feature `serde`) |
//!
//! # The run loop
//!
//! Feed one input to [`Machine::handle`], then carry out every output, in
//! order, before the next input:
//!
//! ```
//! use autoretry::{AssistantMessage, Input, Machine, Output, StopReason};
//!
//! let mut machine = Machine::default();
//! let mut inputs = vec![Input::AgentEnd {
//!     message: AssistantMessage::error("529 overloaded_error"),
//!     now_ms: None,
//! }];
//! let mut log = Vec::new();
//! while let Some(input) = inputs.pop() {
//!     for output in machine.handle(input).expect("a well-ordered host") {
//!         match output {
//!             Output::Emit(event) => log.push(event.type_name()),
//!             // A real host starts a timer; here it fires at once.
//!             Output::Sleep { timer, .. } => inputs.push(Input::TimerFired { timer }),
//!             // A real host re-runs the agent; here it answers well.
//!             Output::ContinueAgent => inputs.push(Input::AgentEnd {
//!                 message: AssistantMessage::new(StopReason::Stop),
//!                 now_ms: None,
//!             }),
//!             _ => {}
//!         }
//!     }
//! }
//! assert_eq!(log, ["auto_retry_start", "auto_retry_end"]);
//! assert!(!machine.is_retrying());
//! ```
//!
//! # Features
//!
//! - `std` (default): the `driver`
//!   module (the machine on a thread, with real timers); needed by the
//!   `autoretry` binary.
//! - `serde`: the `wire` module: strict decoding of the settings group and
//!   the JSON of events, outputs and RPC messages.
//! - `json` (std + serde_json): JSON-lines helpers in `wire`: host input
//!   and vector lines, RPC commands and responses (spec §7), the vector
//!   replayer, the JSON-lines sidecar of `autoretry rpc`.
//! - `cli` (default): the `autoretry` binary (`simulate`, `rpc`, `replay`,
//!   `classify`).
//! - `ffi`: a C ABI over a fixed pool of machines, for WebAssembly modules
//!   and C hosts with no allocator (`ffi` module; the crate's only `unsafe`).
//! - `embassy`: an async driver on embassy-time: backoff on a `Timer`,
//!   inputs from an `embassy_sync` channel (`embassy` module).
#![cfg_attr(not(feature = "std"), no_std)]
// Safety: the core has no unsafe code at all; the `ffi` module (feature
// `ffi`) is the one exception, allowed there and argued block by block.
#![deny(unsafe_code)]
// Every public item is documented.
#![deny(missing_docs)]

pub mod classify;

mod machine;
pub use machine::{Input, Machine, Refused, RetryState};

mod message;
pub use message::{AssistantMessage, StopReason, Usage};

mod output;
pub use output::{
    Event, FinalError, Output, Outputs, TimerId, MAX_OUTPUTS, RETRY_CANCELLED, UNKNOWN_ERROR,
};

mod settings;
pub use settings::{HostOptions, JitterPct, Profile, RetrySettings};

mod text;
pub use text::{FailureLine, LoaderLine};

/// The README's examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "serde")]
pub mod wire;

#[cfg(feature = "std")]
pub mod driver;

#[cfg(feature = "ffi")]
pub mod ffi;

#[cfg(feature = "embassy")]
pub mod embassy;

// Fuzz and property-test entry points: they panic on a violated guarantee,
// so they are hidden from the docs and kept out of the `no_std` core.
#[cfg(feature = "std")]
#[doc(hidden)]
pub mod fuzzing;
