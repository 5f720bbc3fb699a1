//! Forged snapshots: a [`Snapshot`] with fields edited and its check digest
//! made again, so that [`Machine::restore`](autoretry::Machine::restore)
//! must judge it on its fields alone. A damaged snapshot fails the digest;
//! a forged one tests the checks behind it (what no machine could reach).
//!
//! The digest is computed here from the snapshot's serde fields, as the
//! format defines it (FNV-1a over every field but `check`, little-endian,
//! in the order of [`FIELDS`], then [`FIELDS_V2`] from version 2 on),
//! independently of the library.
//!
//! ```
//! use autoretry::{Machine, SnapshotError};
//! use autoretry_testkit::forge::forge;
//! let snapshot = Machine::default().snapshot();
//! // Unedited, the digest made again is the snapshot's own.
//! assert_eq!(forge(snapshot, |_| {}), snapshot);
//! let forged = forge(snapshot, |f| f["phase"] = 2.into()); // a backoff, at attempt 0
//! assert!(matches!(Machine::restore(forged), Err(SnapshotError::Inconsistent(_))));
//! ```

use autoretry::Snapshot;
use serde_json::{Map, Value};

/// Every field of a snapshot but `check`, in the digest's order, with its
/// width in bytes (a boolean takes one).
pub const FIELDS: [(&str, usize); 20] = [
    ("version", 2),
    ("profile", 1),
    ("enabled", 1),
    ("max_retries", 4),
    ("base_delay_ms", 8),
    ("max_delay_ms", 8),
    ("backoff_cap_ms", 8),
    ("jitter_pct", 1),
    ("honor_hints", 1),
    ("classifier", 1),
    ("context_window", 8),
    ("credential_store", 1),
    ("jitter_state", 8),
    ("timer", 8),
    ("phase", 1),
    ("attempt", 4),
    ("marked_delay_ms", 8),
    ("marked_ceiling_ms", 8),
    ("marked_max_attempts", 4),
    ("marked_text_digest", 4),
];

/// The fields that version 2 of the format adds (spec §11's state), in the
/// digest's order after [`FIELDS`]; a version 1 snapshot's digest leaves
/// them out.
pub const FIELDS_V2: [(&str, usize); 8] = [
    ("model_fallback", 1),
    ("max_usage_wait_ms", 8),
    ("max_total_delay_ms", 8),
    ("total_ms", 8),
    ("resume", 1),
    ("marked_total_limit_ms", 8),
    ("marked_flags", 1),
    ("marked_reason", 1),
];

/// The fields version 3 added (spec §12), with their widths, in the
/// digest's order after [`FIELDS_V2`]; a snapshot before version 3 leaves
/// them out of its digest.
pub const FIELDS_V3: [(&str, usize); 11] = [
    ("first_event_timeout_ms", 8),
    ("idle_timeout_ms", 8),
    ("retry_empty", 1),
    ("marked_made", 1),
    ("marked_silence_ms", 8),
    ("stream", 1),
    ("stream_start_ms", 8),
    ("stream_last_ms", 8),
    ("stream_due_ms", 8),
    ("stream_flags", 1),
    ("stall_silence_ms", 8),
];

/// The snapshot's fields, as serde names them, after `edit`, with the
/// check digest made again.
///
/// # Panics
///
/// When an edited field is missing or out of its type's range (a forged
/// snapshot must still decode: the forgery is in the values, not the
/// shape).
///
/// ```
/// use autoretry::Machine;
/// use autoretry_testkit::forge::forge;
/// let forged = forge(Machine::default().snapshot(), |f| f["max_retries"] = 9.into());
/// assert_eq!(Machine::restore(forged).unwrap().settings().max_retries, 9);
/// ```
pub fn forge(snapshot: Snapshot, edit: impl FnOnce(&mut Map<String, Value>)) -> Snapshot {
    let Value::Object(mut fields) = serde_json::to_value(snapshot).expect("a snapshot serializes")
    else {
        panic!("a snapshot serializes as an object");
    };
    edit(&mut fields);
    let mut bytes = Vec::new();
    let version = fields["version"].as_u64().unwrap_or(0);
    let digested = FIELDS
        .iter()
        .chain(FIELDS_V2.iter().filter(|_| version >= 2))
        .chain(FIELDS_V3.iter().filter(|_| version >= 3));
    for &(name, width) in digested {
        let value = match &fields[name] {
            Value::Bool(b) => u64::from(*b),
            other => other.as_u64().expect("an integer field"),
        };
        bytes.extend_from_slice(&value.to_le_bytes()[..width]);
    }
    fields.insert("check".to_owned(), fnv1a(&bytes).into());
    serde_json::from_value(Value::Object(fields)).expect("the forged fields decode")
}

/// The digest a snapshot keeps of the awaited usage-limit text (its
/// `marked_text_digest`): FNV-1a over the text's bytes.
///
/// ```
/// use autoretry::{AssistantMessage, HostOptions, Input, Machine, RetrySettings};
/// use autoretry_testkit::forge::text_digest;
/// let mut m = Machine::new(RetrySettings::DEFAULT, HostOptions::DEFAULT.with_credential_store(true));
/// let failed = Input::AgentEnd { message: AssistantMessage::error("usage limit"), now_ms: None };
/// let _ = m.handle(failed).unwrap();
/// let fields = serde_json::to_value(m.snapshot()).unwrap();
/// assert_eq!(fields["marked_text_digest"], text_digest("usage limit"));
/// ```
pub fn text_digest(text: &str) -> u32 {
    fnv1a(text.as_bytes())
}

fn fnv1a(bytes: &[u8]) -> u32 {
    bytes.iter().fold(0x811c_9dc5_u32, |hash, &byte| {
        (hash ^ u32::from(byte)).wrapping_mul(0x0100_0193)
    })
}
