//! Why a machine refused its last input: every entry point answers a
//! refusal (spec §6a) with the one code `AUTORETRY_ERR_REFUSED`, as the
//! first hosts expect; [`autoretry_last_refusal`] then says which rule
//! refused it, as a `REFUSAL_*` code.
//!
//! The reason is kept beside the pool, per slot, with the handle it was
//! recorded for, so a freed machine's reason never shows as its slot's next
//! machine's. It is written under the pool's lock; the atomics only make
//! the static shareable.
// `#[no_mangle]` is `unsafe_code` by the lint's definition: the export's
// declaration; there is no `unsafe` block here.
#![allow(unsafe_code)]

use core::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use super::codes::{ERR_HANDLE, POOL_SIZE};
use super::pool::{with_slots, Slot};
use autoretry::Refused;

/// The last input the machine was given was not refused (or it was given
/// none yet).
pub const REFUSAL_NONE: i32 = 0;
/// A `message_end` or `agent_end` arrived while a backoff timer is
/// pending: the agent must not run then.
pub const REFUSAL_AGENT_RUN_DURING_BACKOFF: i32 = 1;
/// A `message_end` or `agent_end` arrived while the machine waits for the
/// host's `usage_limit_marked` answer: the agent must not run then.
pub const REFUSAL_AWAITING_USAGE_LIMIT_ANSWER: i32 = 2;
/// A `usage_limit_marked` carried an error text other than the one of the
/// message the machine asked to mark. (The C ABI passes back the text the
/// slot kept, so its hosts do not meet it; the code is there for every
/// reason of spec §6a to have one.)
pub const REFUSAL_USAGE_LIMIT_TEXT_MISMATCH: i32 = 3;

/// A `message_end` or `agent_end` arrived while the machine waits for the
/// host's `model_switched` answer (spec §11.3; the C ABI's settings have
/// no fallback models, so its hosts do not meet it).
pub const REFUSAL_AWAITING_MODEL_SWITCH_ANSWER: i32 = 4;
/// A `model_switched` carried an error text other than the one of the
/// message whose decision asked for another model (spec §11.3; not met
/// through the C ABI either).
pub const REFUSAL_MODEL_SWITCH_TEXT_MISMATCH: i32 = 5;
/// A reason of a later version of the machine that has no code of its own
/// here yet (the machine's list of reasons may grow). This version never
/// answers it: every reason it has is one of the codes above.
pub const REFUSAL_OTHER: i32 = 6;
/// A `message_end` or `agent_end` whose message is `empty` while its
/// `partial` says the answer streamed text or a tool call (spec §12.3).
pub const REFUSAL_EMPTY_WITH_PARTIAL: i32 = 7;

/// Per slot: the handle the reason was recorded for, and the reason.
static LAST: [(AtomicI32, AtomicU32); POOL_SIZE] =
    [const { (AtomicI32::new(-1), AtomicU32::new(0)) }; POOL_SIZE];

/// The `REFUSAL_*` code of a refusal.
fn code(refused: Refused) -> i32 {
    match refused {
        Refused::AgentRunDuringBackoff => REFUSAL_AGENT_RUN_DURING_BACKOFF,
        Refused::AwaitingUsageLimitAnswer => REFUSAL_AWAITING_USAGE_LIMIT_ANSWER,
        Refused::UsageLimitTextMismatch => REFUSAL_USAGE_LIMIT_TEXT_MISMATCH,
        Refused::AwaitingModelSwitchAnswer => REFUSAL_AWAITING_MODEL_SWITCH_ANSWER,
        Refused::ModelSwitchTextMismatch => REFUSAL_MODEL_SWITCH_TEXT_MISMATCH,
        Refused::EmptyWithPartial => REFUSAL_EMPTY_WITH_PARTIAL,
        _ => REFUSAL_OTHER,
    }
}

/// Records how the machine of `handle`, in `slot`, took its last input:
/// `None` handled, `Some` refused. Called under the pool's lock.
pub(super) fn record(handle: i32, slot: Slot, refused: Option<Refused>) {
    if let Some((owner, reason)) = LAST.get(slot.index()) {
        owner.store(handle, Ordering::Relaxed);
        reason.store(refused.map_or(0, |r| code(r) as u32), Ordering::Relaxed);
    }
}

/// Why the machine of `handle` refused the last input it was given: an
/// `AUTORETRY_REFUSAL_*` code, `AUTORETRY_REFUSAL_NONE` when that input
/// was handled (or there was none yet), or `AUTORETRY_ERR_HANDLE`. Every
/// entry point returns `AUTORETRY_ERR_REFUSED` for a refusal, whatever its
/// reason, as it always has; this call tells the reasons apart. A call
/// that fails before the machine sees the input (a bad argument, a buffer
/// the module will not touch) leaves the reason as it was.
///
/// ```c
/// autoretry_output out[8];
/// int32_t n = autoretry_handle_c(h, &in, out, 8);
/// if (n == AUTORETRY_ERR_REFUSED &&
///     autoretry_last_refusal(h) == AUTORETRY_REFUSAL_AGENT_RUN_DURING_BACKOFF) {
///   /* the agent ran while a retry waited: the host's loop is out of step */
/// }
/// ```
#[no_mangle]
pub extern "C" fn autoretry_last_refusal(handle: i32) -> i32 {
    with_slots(|slots, _| {
        let Some(slot) = slots.live(handle) else {
            return ERR_HANDLE;
        };
        match LAST.get(slot.index()) {
            Some((owner, reason)) if owner.load(Ordering::Relaxed) == handle => {
                reason.load(Ordering::Relaxed) as i32
            }
            _ => REFUSAL_NONE,
        }
    })
}
