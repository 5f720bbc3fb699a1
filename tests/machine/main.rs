//! The machine against the contract: the retry chain, cancellation, the
//! messages that start no retry, timers and inputs out of turn, usage
//! limits, the policy options of section 10, the terminal texts, every
//! conformance vector through the library, snapshots restored at every
//! step of every vector, forged snapshots fuzzed, the attempt and the
//! timer ids at the ends of their ranges, the fuzzers' findings, and the
//! vendored copies of the shared spec, vectors and corpus.

#[path = "../common/mod.rs"]
mod common;

mod arbitrary;
mod beyond;
mod beyond_props;
mod cancel;
mod chain;
mod counters;
mod fuzz_regressions;
mod model_props;
mod no_retry;
mod options;
mod presentation;
mod response;
mod shared_copies;
mod snapshot;
mod snapshot_fuzz;
mod stream;
mod stream_props;
mod timers;
mod usage_limit;
mod vectors;
