//! The JSON-lines sidecar (feature `json`): an agent in any language drives
//! the machine over a pipe, and the sidecar owns the backoff timer (the
//! `autoretry rpc` command).
//!
//! # Lines in
//!
//! - the commands of [`Command`](crate::wire::rpc::Command): `set_auto_retry {enabled}`, `abort_retry`,
//!   `abort`, `get_retry_state`, `set_retry_settings {settings}` (each with
//!   an optional string or numeric `id`, echoed first in its response
//!   exactly as given). **`set_retry_settings` replaces the whole `retry`
//!   group, it does not patch it: every key it leaves out goes back to
//!   its profile's default**, whatever was in force (spec §4). To change
//!   one key, send the whole group with that key changed (its answer's
//!   `data` is the group in force);
//! - the agent's events: `{"type":"message_end","message":{...}}`,
//!   `{"type":"agent_end","message":{...},"nowMs"?:n}` and
//!   `{"type":"usage_limit_marked","switched":b}` (the answer to a
//!   `mark_usage_limit` action; the sidecar remembers the marked text) and
//!   `{"type":"model_switched","switched":b}` (the answer to a
//!   `switch_model` action, spec §11.3). A message may carry `partial`
//!   (spec §11.2) and `empty` (spec §12.3);
//! - the stream's events (spec §12.2): `{"type":"stream_start"}` when the
//!   agent sends a request to its provider and `{"type":"stream_event"}`
//!   when it receives an event that shows progress (never a keep-alive
//!   ping). A line without `nowMs` is stamped with the sidecar's clock when
//!   it arrived, in ms (scaled as its deadlines are, `--time-scale`), so
//!   an agent never passes time by hand; one with `nowMs` keeps it.
//!
//! Blank lines are skipped. A line that is not a JSON object with a string
//! `type` answers the `parse` error of spec §7 (an object that gives a key
//! twice is not one); an unknown type answers `Unknown command: <type>`,
//! with the nearest known type in `didYouMean` when one is close; a
//! line longer than the limit ([`MAX_LINE_BYTES`] unless the [`Pipe`] says
//! otherwise) answers a `parse` error with the code `line_too_long`. Every
//! failed response has a `code` and the `line` number (see
//! [`crate::wire::rpc`]'s error codes); the sidecar keeps serving.
//!
//! # Lines out
//!
//! - one response per command (spec §7), before the command's other lines;
//!   an agent event is answered only when it is refused or malformed:
//!   `{"type":"response","command":"agent_end","success":false,"error":"...","code":"...","line":n}`;
//! - the events `auto_retry_start` / `auto_retry_end`, exactly as spec §8;
//! - what the agent must do, as `{"type":"action","action":"<name>"}`:
//!   `drop_trailing_error`, `continue_agent` (written when the backoff
//!   timer fires), `check_compaction`, `abort_agent`, `settled`,
//!   `mark_usage_limit` (with `"retryAfterMs":n|null`; answer with
//!   `usage_limit_marked`), `switch_model` (with `"reason":"..."`; answer
//!   with `model_switched`), `sleep` and the stream's `watch` (spec §12.2;
//!   each with `"ms":n`: informational, the sidecar owns the timer and
//!   runs a watch as a sleep; when it fires with the stream silent too
//!   long, the action is `abort_agent`). A continuation's `continue_agent` carries
//!   `"resume":true` (spec §11.2). Timer cancellation stays inside the
//!   sidecar. Every line out is written by a `Serialize` impl through
//!   serde_json ([`output_line`]).
//! - with a shared retry budget ([`Sidecar::with_budget`]) whose store
//!   fails: `{"type":"budget_store_error","error":"..."}`, before the lines
//!   of the `agent_end` it concerns, which was decided without the budget
//!   (the sidecar fails open: see [`budget_store::handle`](crate::host::budget_store::handle)) and keeps serving.
//!
//! # Time and fairness
//!
//! [`serve`] runs a [`Sidecar`] on a [`Source`]: lines stamped with the
//! time they arrived, and a clock. A due timer goes ahead of every line
//! that arrived at or after its deadline, however fast lines come (a line
//! that arrived before it, an `abort_retry` sent in time, goes first). So
//! `continue_agent` is never later than the answer to the line being
//! handled when the deadline passed. [`Pipe`] is the real source: a thread
//! reads the lines into a bounded queue ([`READ_AHEAD_LINES`]), so a client
//! that writes faster than the sidecar answers is held back by the pipe,
//! and the sidecar never holds more than a few lines of at most the limit
//! each. The tests run [`serve`] on a virtual clock.
//!
//! At the end of input the sidecar feeds `abort_retry` (the agent is gone):
//! an open chain ends as a cancel ends it (`auto_retry_end` with `Retry
//! cancelled`, `settled`, and `check_compaction` when a backoff was
//! pending); with no chain open nothing is written.
//!
//! ```
//! use autoretry::{Machine, host::sidecar::Sidecar};
//! use std::time::Duration;
//! let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
//! let now = Duration::ZERO;
//! sidecar.feed_line(br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"529 overloaded_error"}}"#, now).unwrap();
//! sidecar.feed_line(br#"{"type":"abort_retry","id":"a1"}"#, now).unwrap();
//! let out = String::from_utf8(sidecar.into_inner()).unwrap();
//! assert_eq!(out.lines().collect::<Vec<_>>(), [
//!     r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529 overloaded_error"}"#,
//!     r#"{"type":"action","action":"drop_trailing_error"}"#,
//!     r#"{"type":"action","action":"sleep","ms":2000}"#,
//!     r#"{"id":"a1","type":"response","command":"abort_retry","success":true}"#,
//!     r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
//!     r#"{"type":"action","action":"settled"}"#,
//!     r#"{"type":"action","action":"check_compaction"}"#,
//! ]);
//! ```
//!
//! # Parts
//!
//! - `protocol`: lines in to commands and inputs, responses and the lines
//!   of outputs out ([`output_line`]);
//! - `schedule`: the [`Sidecar`] (the machine and its backoff timer) and
//!   [`serve`], the fairness rule;
//! - `pipe`: where lines and time come from ([`Source`], [`TimedLineEvent`],
//!   [`LineEvent`]) and the real source, [`Pipe`]: the reader thread and its
//!   bounds ([`MAX_LINE_BYTES`], [`READ_AHEAD_LINES`]), on a
//!   [`Clock`](crate::host::clock::Clock).

mod pipe;
mod protocol;
mod schedule;

pub use pipe::{LineEvent, Pipe, Source, TimedLineEvent, MAX_LINE_BYTES, READ_AHEAD_LINES};
pub use protocol::output_line;
pub use schedule::{serve, Sidecar};
