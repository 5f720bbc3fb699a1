//! `autoretry` decides when an LLM agent retries a failed turn, and drives the
//! retry chain.
//!
//! It is a pure, synchronous, sans-IO state machine with a `no_std` core: it
//! consumes [`Input`]s (the assistant message at the end of a run, a timer
//! that fired, an abort, a settings change) and returns [`Output`]s (emit an
//! event, sleep N ms, continue the agent, drop the trailing error, check
//! compaction, ...). It never sleeps, reads a clock or does I/O, so any
//! async runtime, embedded executor, WASM host or test can drive it.
//! Without feature `prefilter` (firmware, WebAssembly) it never allocates;
//! on std, with the default `prefilter`, the classifier builds its speed
//! tables on the heap once per process, at first use, and nothing after.
//!
//! The behaviour is the contract of [`spec`] (`docs/retry-policy.md` in the
//! repository; "spec §N" in these docs means its section N); its terms map
//! to the API as follows:
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
//! | saving and restoring a machine | [`Machine::snapshot`], [`Machine::restore`], [`Snapshot`] |
//! | classification (§3, §10.5) | [`classify`] module, [`AssistantMessage::is_retryable_with`] |
//! | the host's `shouldRetry` (§10.2) from your own rules | `rules` module (feature `rules`) |
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
//! The default build is the library alone (its one dependency is
//! `heapless`); the `autoretry` command line is the separate package
//! `autoretry-cli`. A firmware or WebAssembly build takes
//! `default-features = false`, plus the features it needs:
//!
#![doc = include_str!("../docs/features.md")]
//!
//! The test scaffolding is not part of this crate: it is the test kit
//! `autoretry-testkit` (the repository's `testkit/`): the conformance
//! vectors' host, line format and replayer, the invariant `Monitor` that
//! checks a host's input/output log against the crate's guarantees, the
//! `proptest` strategies of its feature `proptest`, and the fuzz entry
//! points. It is not published: hosts take it from the repository
//! ([`guide::testkit`]).
//!
//! # Guides
//!
//! [`guide`] has a guide for each kind of host: [`guide::firmware`] (by
//! hand), [`guide::runtimes`] (tokio, embassy, threads), [`guide::options`],
//! [`guide::snapshots`], [`guide::rules`], [`guide::sidecar`], [`guide::c`],
//! [`guide::javascript`], [`guide::testkit`] and [`guide::classifier`].
#![cfg_attr(not(feature = "std"), no_std)]
// docs.rs builds with `--cfg docsrs`: items show the feature they need.
#![cfg_attr(docsrs, feature(doc_cfg))]
// Safety: no unsafe code at all. The C ABI, which needs some, is the
// package `autoretry-ffi` (`ffi/`).
#![forbid(unsafe_code)]
// Every public item is documented.
#![deny(missing_docs)]

pub mod classify;

mod machine;
pub use machine::{Input, Machine, Refused, RetryState};

mod message;
pub use message::{AssistantMessage, Partial, StopReason, Usage};

mod headers;
pub use headers::{read_headers, HeaderHints, Headers};

mod budget;
pub use budget::{BudgetError, RetryBudget};

#[cfg(feature = "std")]
mod owned;
#[cfg(feature = "std")]
pub use owned::{InputBuf, MessageBuf};

#[cfg(feature = "std")]
mod owned_output;
#[cfg(feature = "std")]
pub use owned_output::{EventBuf, OutputBuf};

mod snapshot;
pub use snapshot::{Snapshot, SnapshotError, SnapshotV1, SnapshotV2};

mod output;
pub use output::{
    ErrorText, Event, FallbackReason, FinalError, Output, Outputs, TimerId, EMPTY_RESPONSE,
    MAX_OUTPUTS, RETRY_CANCELLED, UNKNOWN_ERROR,
};

mod settings;
pub use settings::{HostOptions, JitterPct, Profile, RetrySettings};

mod stream;

mod text;
pub use text::{FailureLine, LoaderLine};

/// The behavioural contract, `docs/retry-policy.md`, as the crate
/// implements it (docs only: "spec §N" in these docs is its section N).
#[cfg(all(doc, not(doctest)))]
// The spec's indented blocks are regular expressions and pseudo-code.
#[allow(rustdoc::invalid_rust_codeblocks)]
#[doc = include_str!("../docs/retry-policy.md")]
pub mod spec {}

#[cfg(any(doc, doctest))]
pub mod guide;

/// The README's examples run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

#[cfg(feature = "serde")]
#[cfg_attr(docsrs, doc(cfg(feature = "serde")))]
pub mod wire;

pub mod host;

#[cfg(feature = "rules")]
#[cfg_attr(docsrs, doc(cfg(feature = "rules")))]
pub mod rules;

#[cfg(feature = "arbitrary")]
#[cfg_attr(docsrs, doc(cfg(feature = "arbitrary")))]
pub mod arbitrary;

// Every public type of the core has `defmt::Format` (feature `defmt`): a
// type left out fails the build.
#[cfg(feature = "defmt")]
const _: () = {
    const fn formats<T: defmt::Format>() {}
    formats::<Input<'static>>();
    formats::<Machine>();
    formats::<Refused>();
    formats::<RetryState>();
    formats::<AssistantMessage<'static>>();
    formats::<StopReason>();
    formats::<Usage>();
    formats::<Headers<'static>>();
    formats::<HeaderHints>();
    formats::<Partial>();
    formats::<RetryBudget>();
    formats::<BudgetError>();
    formats::<FallbackReason>();
    formats::<Event<'static>>();
    formats::<FinalError<'static>>();
    formats::<Output<'static>>();
    formats::<TimerId>();
    formats::<HostOptions>();
    formats::<JitterPct>();
    formats::<Profile>();
    formats::<RetrySettings>();
    formats::<classify::Classifier>();
    formats::<classify::Classification>();
    formats::<host::Step<'static>>();
    formats::<FailureLine<'static>>();
    formats::<LoaderLine>();
    formats::<Snapshot>();
    formats::<SnapshotV1>();
    formats::<SnapshotError>();
};
