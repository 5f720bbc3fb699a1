//! Your own rules over the C ABI (features `ffi` and `rules`): a machine
//! may be lent a compiled rules blob (`autoretry rules compile`), whose
//! verdict is then the `shouldRetry` of every message it is given without
//! one (spec §10.2, [`Rules::apply_input`](crate::rules::Rules::apply_input)).
//!
//! The blob stays the host's memory: the module validates it once, then
//! searches it in place, with no copy and no allocator. A WebAssembly host
//! puts it above the module's data by growing the memory
//! (`memory.grow`), as the JavaScript wrapper's `Machine.loadRules` does;
//! a C host passes its own bytes, 4-byte aligned (a dense DFA needs it;
//! `malloc` and `static _Alignas(4)` arrays are).
// `#[no_mangle]` and `unsafe extern "C" fn` are `unsafe_code` by the lint's
// definition: these are the exports' declarations. Their only `unsafe`
// block forwards the caller's contract to `pool::host_blob`.
#![allow(unsafe_code)]

use super::pool::{self, with_slots};
use super::ERR_HANDLE;
use crate::rules::{Rules, RulesError};

/// The bytes are not a compiled rules blob, or one of another format
/// version or byte order ([`RulesError::Foreign`], [`RulesError::Version`],
/// [`RulesError::Endian`]). Nothing changed.
pub const ERR_RULES_FOREIGN: i32 = -10;
/// The blob is shorter or longer than its header says: a truncated or
/// padded file ([`RulesError::Truncated`], [`RulesError::TrailingBytes`]).
/// Nothing changed.
pub const ERR_RULES_LENGTH: i32 = -11;
/// The blob holds a dense DFA and does not start at a 4-byte aligned
/// address ([`RulesError::Misaligned`]). Nothing changed.
pub const ERR_RULES_MISALIGNED: i32 = -12;
/// The blob is damaged: a header field, its checksum, its rule counts, or
/// a DFA that regex-automata refuses ([`RulesError::Corrupt`],
/// [`RulesError::Dfa`]). Nothing changed.
pub const ERR_RULES_CORRUPT: i32 = -13;

/// The `ERR_RULES_*` code of a blob's refusal.
fn code(error: &RulesError) -> i32 {
    match error {
        RulesError::Foreign | RulesError::Version(_) | RulesError::Endian(_) => ERR_RULES_FOREIGN,
        RulesError::Truncated { .. } | RulesError::TrailingBytes { .. } => ERR_RULES_LENGTH,
        RulesError::Misaligned => ERR_RULES_MISALIGNED,
        _ => ERR_RULES_CORRUPT,
    }
}

/// Lends the machine of `handle` the compiled rules blob `(blob,
/// blob_len)`, in place of any it held: from the next input on, a
/// `message_end` or `agent_end` whose message has an error text and no
/// `shouldRetry` gets the rules' verdict as its `shouldRetry` (the
/// built-in classifier and the overflow rule still apply, spec §10.2).
///
/// Returns 0, or an error code, and then nothing changed (the machine
/// keeps the rules it had): [`ERR_HANDLE`]; [`ERR_ARG`](super::ERR_ARG)
/// (a null `blob` with a length); [`ERR_BUFFER`](super::ERR_BUFFER) (a
/// range the module will not read, as for any buffer, or one that overlaps
/// an exchange buffer); [`ERR_RULES_FOREIGN`], [`ERR_RULES_LENGTH`],
/// [`ERR_RULES_MISALIGNED`], [`ERR_RULES_CORRUPT`] (the blob, checked as
/// [`Rules::from_bytes`] checks it).
///
/// While a machine holds a blob, no call may write over it: an `out`
/// buffer that overlaps it is refused with `ERR_BUFFER`.
///
/// # Safety
///
/// `blob` must be valid for reads of `blob_len` bytes and stay so,
/// neither written nor freed, until the machine's rules are cleared
/// ([`autoretry_rules_clear`]) or replaced, or the machine is freed. One
/// blob may be lent to several machines.
///
/// ```
/// use autoretry::host::ffi::*;
/// static BLOB: &[u8] = autoretry::include_rules!("../../../tests/rules/example.bin");
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// // SAFETY: `BLOB` is a static: valid, and never written.
/// assert_eq!(unsafe { autoretry_rules_load(h, BLOB.as_ptr(), BLOB.len() as u32) }, 0);
/// // A `never` rule: the 503 of a billing error is not retried.
/// let text = "503 billing: insufficient funds";
/// let mut out = [0u8; 512];
/// // SAFETY: `text` and `out` are live, disjoint and of the given lengths.
/// let n = unsafe {
///     autoretry_agent_end(h, STOP_ERROR, text.as_ptr(), text.len() as i32, 0, 0, 0, 0, 0, out.as_mut_ptr(), out.len() as u32)
/// };
/// // No retry chain: the turn ends as any error that is not retried.
/// assert_eq!(&out[..n as usize], br#"[{"type":"check_compaction"}]"#);
/// // A truncated blob is refused, and the machine keeps its rules.
/// // SAFETY: as above.
/// assert_eq!(unsafe { autoretry_rules_load(h, BLOB.as_ptr(), 100) }, ERR_RULES_LENGTH);
/// assert_eq!(autoretry_free(h), 0);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_rules_load(handle: i32, blob: *const u8, blob_len: u32) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    let bytes = match unsafe { pool::host_blob(blob, blob_len) } {
        Ok(bytes) => bytes,
        Err(code) => return code,
    };
    let rules = match Rules::from_bytes(bytes) {
        Ok(rules) => rules,
        Err(error) => return code(&error),
    };
    with_slots(|slots, _| match slots.live(handle) {
        Some(slot) => {
            slots.set_rules(slot, Some((rules, bytes)));
            0
        }
        None => ERR_HANDLE,
    })
}

/// Takes the rules of the machine of `handle` away (if it held any): its
/// messages are classified by the patterns alone again, and the host may
/// reuse the blob's memory. Returns 0 or [`ERR_HANDLE`]. Freeing a machine
/// clears its rules too.
///
/// ```
/// use autoretry::host::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// assert_eq!(autoretry_rules_clear(h), 0);
/// autoretry_free(h);
/// assert_eq!(autoretry_rules_clear(h), ERR_HANDLE);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_rules_clear(handle: i32) -> i32 {
    with_slots(|slots, _| match slots.live(handle) {
        Some(slot) => {
            slots.set_rules(slot, None);
            0
        }
        None => ERR_HANDLE,
    })
}
