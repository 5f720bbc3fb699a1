//! The hosts: loops that feed the machine its inputs and carry out its
//! outputs, with no policy of their own (every decision stays in
//! [`Machine`](crate::Machine)).
//!
//! | host | feature | what it is |
//! |---|---|---|
//! | [`thread`] | `std` | the machine on one thread, a real backoff deadline, inputs from an `mpsc` channel |
//! | [`embassy`] | `embassy` | an async driver on `embassy-time`: the backoff on a `Timer`, inputs from a channel |
//! | [`sidecar`] | `json` | the JSON-lines sidecar of `autoretry rpc`, on top of [`thread`] |
//!
//! A host that drives the machine by hand (firmware, a test) needs none of
//! them: [`Machine::handle`](crate::Machine::handle) is the whole protocol.

#[cfg(feature = "std")]
#[cfg_attr(docsrs, doc(cfg(feature = "std")))]
pub mod thread;

#[cfg(feature = "embassy")]
#[cfg_attr(docsrs, doc(cfg(feature = "embassy")))]
pub mod embassy;

#[cfg(feature = "json")]
#[cfg_attr(docsrs, doc(cfg(feature = "json")))]
pub mod sidecar;
