//! The hosts: loops that feed the machine its inputs and carry out its
//! outputs, with no policy of their own (every decision stays in
//! [`Machine`](crate::Machine)). A host that drives the machine by hand
//! (firmware, a test) needs none of them:
//! [`Machine::handle`](crate::Machine::handle) is the whole protocol.
//!
//! ```
//! // Each host is behind its own feature; the room itself is always there.
//! use autoretry::host;
//! ```

#[cfg(feature = "ffi")]
pub mod ffi;
