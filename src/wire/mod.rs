//! JSON on the wire (spec §4, §7, §8): strict decoding of the `retry`
//! settings group, `Serialize` for events, outputs and the state, and (with
//! feature `json`) JSON-lines helpers for hosts: input lines, RPC commands
//! and responses.
//!
//! The feature `serde` part is `no_std` and allocates nothing:
//!
//! - [`SettingsGroup`]: the `retry` group, decoded strictly (every error
//!   names the key);
//! - `Serialize` for [`Event`](crate::Event) (spec §8 key order, `finalError`
//!   absent on success), [`Output`](crate::Output) (`{"type":"sleep","ms":..,"timer":..}`, ...),
//!   [`RetryState`](crate::RetryState) (`{"autoRetryEnabled":..,"isRetrying":..,"retryAttempt":..}`),
//!   [`TimerId`](crate::TimerId) (its number) and
//!   [`Classification`](crate::classify::Classification) (the corpus form).
//!
//! ```
//! use autoretry::{Event, wire::SettingsGroup};
//! let event = Event::End { success: true, attempt: 1, final_error: None };
//! assert_eq!(serde_json::to_string(&event).unwrap(), r#"{"type":"auto_retry_end","success":true,"attempt":1}"#);
//! let SettingsGroup(settings) = serde_json::from_str(r#"{"enabled":false}"#).unwrap();
//! assert!(!settings.enabled);
//! ```
//!
//! With feature `json` (std + serde_json):
//!
//! - [`json`]: input lines decoded to the owned inputs
//!   ([`InputBuf`](crate::InputBuf), [`MessageBuf`](crate::MessageBuf)) or
//!   a line to refuse, with errors that say where and what
//!   ([`json::DecodeError`]);
//! - [`rpc`]: the RPC commands and responses of spec §7, byte for byte;
//!
//! The JSON-lines sidecar built on these is a host:
//! [`host::sidecar`](crate::host::sidecar). The conformance vectors' line
//! format and replayer are test code, in the unpublished test kit
//! (`testkit/`).

mod ser;

mod settings;
pub use settings::SettingsGroup;

#[cfg(feature = "json")]
pub mod json;

#[cfg(feature = "json")]
pub mod rpc;
