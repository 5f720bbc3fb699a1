//! Your own rules over the C ABI (features `ffi` and `rules`): a machine
//! may be lent a compiled rules blob (`autoretry rules compile`), whose
//! verdict is then the `shouldRetry` of every message it is given without
//! one (spec §10.2, [`Rules::apply_input`](autoretry::rules::Rules::apply_input)).
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

use super::codes::ERR_HANDLE;
use super::pool::{self, with_slots};
use autoretry::rules::{Rules, RulesError};

/// The bytes are not a compiled rules blob, or one of another format
/// version or byte order. Nothing changed.
pub const ERR_RULES_FOREIGN: i32 = -10;
/// The blob is shorter or longer than its header says: a truncated or
/// padded file. Nothing changed.
pub const ERR_RULES_LENGTH: i32 = -11;
/// The blob holds a dense DFA and does not start at a 4-byte aligned
/// address (`malloc`'s memory and `_Alignas(4)` arrays are). Nothing
/// changed.
pub const ERR_RULES_MISALIGNED: i32 = -12;
/// The blob is damaged: a header field, its checksum, its rule counts, or
/// a DFA that fails validation. Nothing changed.
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
/// blob_len)` (`autoretry rules compile`), in place of any it held: from
/// the next input on, a `message_end` or `agent_end` whose message has an
/// error text and no `shouldRetry` gets the rules' verdict as its
/// `shouldRetry` (the built-in classifier and the overflow rule still
/// apply, spec §10.2).
///
/// Returns 0, or an error code, and then nothing changed (the machine
/// keeps the rules it had): `AUTORETRY_ERR_HANDLE`; `AUTORETRY_ERR_ARG` (a
/// null `blob` with a length); `AUTORETRY_ERR_BUFFER` (a range the module
/// will not read, as for any buffer, or one that overlaps an exchange
/// buffer); `AUTORETRY_ERR_RULES_FOREIGN`, `AUTORETRY_ERR_RULES_LENGTH`,
/// `AUTORETRY_ERR_RULES_MISALIGNED`, `AUTORETRY_ERR_RULES_CORRUPT` (the
/// blob).
///
/// While a machine holds a blob, no call may write over it: an `out`
/// buffer that overlaps it is refused with `AUTORETRY_ERR_BUFFER`.
///
/// # Safety
///
/// `blob` must be valid for reads of `blob_len` bytes and stay so,
/// neither written nor freed, until the machine's rules are cleared
/// (`autoretry_rules_clear()`) or replaced, or the machine is freed. One
/// blob may be lent to several machines.
///
/// ```c
/// /* blob: the bytes of RULES.bin in malloc'd memory, kept until freed */
/// int32_t code = autoretry_rules_load(h, blob, (uint32_t)blob_len);
/// if (code != 0) fprintf(stderr, "rules refused: %d\n", code);
/// /* ... */
/// autoretry_free(h); /* or autoretry_rules_clear(h) */
/// free(blob);
/// ```
///
/// See `ffi/examples/rules.c`.
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
/// reuse the blob's memory. Returns 0 or `AUTORETRY_ERR_HANDLE`. Freeing a
/// machine clears its rules too.
///
/// ```c
/// autoretry_rules_clear(h);
/// free(blob);
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
