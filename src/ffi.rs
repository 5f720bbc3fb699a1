//! A C ABI for hosts that drive the machine by hand, with no allocator:
//! WebAssembly modules (`wasm32-unknown-unknown`, see `tests/wasm/`) and C
//! programs. Feature `ffi`.
//!
//! # Model
//!
//! - **Machines** live in a fixed pool of [`POOL_SIZE`] slots in a static;
//!   a handle is a slot index. [`autoretry_new`] takes a free slot,
//!   [`autoretry_free`] releases it.
//! - **Inputs** are one function each, with scalar arguments; texts (an
//!   `errorMessage`) come as a pointer and a byte length, UTF-8, at most
//!   [`MAX_TEXT`] bytes; a length of `-1` means "no text".
//! - **Outputs** of an input are written, as UTF-8 JSON, into the caller's
//!   buffer `(out, out_cap)`: an array of the output objects exactly as in
//!   the vectors and on the RPC stream (`[{"type":"sleep","ms":2000,"timer":1}]`,
//!   event keys in spec order). Timer ids are the machine's own. The return
//!   value is the JSON's length in bytes, or a negative error code
//!   (`ERR_*`); on [`ERR_REFUSED`] nothing changed (spec §6a).
//! - **Usage-limit answer**: when an `agent_end` produces
//!   `mark_usage_limit`, the slot keeps a copy of the message's error text
//!   (at most [`MAX_TEXT`] bytes, the limit for every text, so the copy
//!   always fits), and [`autoretry_usage_limit_marked`] passes it back.
//! - Settings are validated by the host (they arrive as typed integers).
//!
//! A WebAssembly host has no allocator to put texts in the module's memory:
//! it writes them into [`autoretry_text_buffer`] ([`MAX_TEXT`] bytes) and
//! passes [`autoretry_out_buffer`] ([`OUT_BUFFER_LEN`] bytes) for outputs.
//! Those two buffers belong to the host; the module only touches them
//! through the pointers the host passes back.
//!
//! # Safety
//!
//! This is the crate's only module with `unsafe` code. It needs it for
//! three things, each argued where it happens:
//! 1. turning the host's `(pointer, length)` pairs into slices;
//! 2. the pool in a static, behind an atomic lock;
//! 3. the two static exchange buffers, whose addresses are exported.
//!
//! ```
//! use autoretry::ffi::*;
//! let h = autoretry_new(1, 3, 2000, 0, 0);
//! assert!(h >= 0);
//! let text = "529 overloaded_error";
//! let mut out = [0u8; 512];
//! // SAFETY: `text` and `out` are live, disjoint and of the given lengths.
//! let n = unsafe {
//!     autoretry_agent_end(h, STOP_ERROR, text.as_ptr(), text.len() as i32, 0, 0, 0, 0, 0, out.as_mut_ptr(), out.len() as u32)
//! };
//! let json = core::str::from_utf8(&out[..n as usize]).unwrap();
//! assert!(json.ends_with(r#"{"type":"drop_trailing_error"},{"type":"sleep","ms":2000,"timer":1}]"#));
//! assert_eq!(autoretry_free(h), 0);
//! ```
#![allow(unsafe_code)]

use core::cell::UnsafeCell;
use core::sync::atomic::{AtomicBool, Ordering};

use crate::{
    AssistantMessage, Event, HostOptions, Input, Machine, Output, RetrySettings, StopReason,
    TimerId, Usage,
};

/// How many machines can be alive at once.
pub const POOL_SIZE: usize = 8;
/// The longest text (`errorMessage`) an input may carry, in bytes.
pub const MAX_TEXT: usize = 4096;
/// The length of [`autoretry_out_buffer`]: enough for the outputs of any
/// input whose text is within [`MAX_TEXT`] (a text escapes to at most six
/// times its length, and an input's outputs carry at most one text).
pub const OUT_BUFFER_LEN: usize = 6 * MAX_TEXT + 1024;

/// No machine with this handle (never created, freed, or out of range).
pub const ERR_HANDLE: i32 = -1;
/// The machine refused the input (spec §6a); nothing changed.
pub const ERR_REFUSED: i32 = -2;
/// The text is not UTF-8.
pub const ERR_UTF8: i32 = -3;
/// The text is longer than [`MAX_TEXT`], or its length is negative other
/// than `-1`.
pub const ERR_TEXT_LEN: i32 = -4;
/// Every slot of the pool is in use.
pub const ERR_POOL_FULL: i32 = -5;
/// An argument is out of range (a stop reason, a null pointer with a
/// length, a text that overlaps the output buffer).
pub const ERR_ARG: i32 = -6;
/// The output buffer is too small. The input **was** handled: the outputs
/// are lost, so pass at least [`OUT_BUFFER_LEN`] bytes.
pub const ERR_OUT_TOO_SMALL: i32 = -7;

/// `stopReason` `"stop"`.
pub const STOP_STOP: u32 = 0;
/// `stopReason` `"length"`.
pub const STOP_LENGTH: u32 = 1;
/// `stopReason` `"toolUse"`.
pub const STOP_TOOL_USE: u32 = 2;
/// `stopReason` `"error"`.
pub const STOP_ERROR: u32 = 3;
/// `stopReason` `"aborted"`.
pub const STOP_ABORTED: u32 = 4;

/// The pool's machines, and the length of each slot's kept text.
struct Slots {
    machines: [Option<Machine>; POOL_SIZE],
    marked_len: [usize; POOL_SIZE],
}

/// The text each slot keeps for the usage-limit answer,
/// `texts[i][..marked_len[i]]`. A static of its own: all zeros, it takes no
/// room in the module's data section or the firmware's flash.
type Texts = [[u8; MAX_TEXT]; POOL_SIZE];

/// Data shared by every call, guarded by `LOCK`.
struct Guarded<T>(UnsafeCell<T>);

// SAFETY: the contents are only reached through `with_slots`, which holds
// `LOCK` (acquired with compare-exchange, released with a release store)
// for the whole borrow, so no two threads ever touch them at once.
unsafe impl<T> Sync for Guarded<T> {}

static LOCK: AtomicBool = AtomicBool::new(false);
static SLOTS: Guarded<Slots> = Guarded(UnsafeCell::new(Slots {
    machines: [const { None }; POOL_SIZE],
    marked_len: [0; POOL_SIZE],
}));
static TEXTS: Guarded<Texts> = Guarded(UnsafeCell::new([[0; MAX_TEXT]; POOL_SIZE]));

/// Runs `f` with exclusive access to the pool. Nothing in `f` calls back
/// into this module, so the lock is never taken twice by one thread; other
/// threads (native hosts only: wasm32 has one) spin until it is free.
fn with_slots<R>(f: impl FnOnce(&mut Slots, &mut Texts) -> R) -> R {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    // SAFETY: the lock is held (see `impl Sync for Guarded`), so these are
    // the only references to the pool until the release below; `f` cannot
    // keep them, as the borrows end with the call.
    let result = f(unsafe { &mut *SLOTS.0.get() }, unsafe {
        &mut *TEXTS.0.get()
    });
    LOCK.store(false, Ordering::Release);
    result
}

/// A static byte buffer whose address the host receives.
#[repr(C, align(8))]
struct Exchange<const N: usize>(UnsafeCell<[u8; N]>);

// SAFETY: Rust code never reads or writes these buffers by name; it only
// hands out their address. Accesses happen through pointers the host passes
// back, under the contracts of the functions that take them.
unsafe impl<const N: usize> Sync for Exchange<N> {}

static TEXT_BUFFER: Exchange<MAX_TEXT> = Exchange(UnsafeCell::new([0; MAX_TEXT]));
static OUT_BUFFER: Exchange<OUT_BUFFER_LEN> = Exchange(UnsafeCell::new([0; OUT_BUFFER_LEN]));

/// The address of a [`MAX_TEXT`]-byte buffer for a host with no allocator
/// to write texts into before passing it as `text`.
///
/// ```
/// assert!(!autoretry::ffi::autoretry_text_buffer().is_null());
/// ```
#[no_mangle]
pub extern "C" fn autoretry_text_buffer() -> *mut u8 {
    TEXT_BUFFER.0.get().cast()
}

/// The address of an [`OUT_BUFFER_LEN`]-byte buffer for a host with no
/// allocator to pass as `out`.
///
/// ```
/// assert!(!autoretry::ffi::autoretry_out_buffer().is_null());
/// ```
#[no_mangle]
pub extern "C" fn autoretry_out_buffer() -> *mut u8 {
    OUT_BUFFER.0.get().cast()
}

/// [`MAX_TEXT`], for hosts that cannot read Rust constants.
///
/// ```
/// assert_eq!(autoretry::ffi::autoretry_max_text(), autoretry::ffi::MAX_TEXT as u32);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_max_text() -> u32 {
    MAX_TEXT as u32
}

/// [`OUT_BUFFER_LEN`], for hosts that cannot read Rust constants.
///
/// ```
/// assert_eq!(autoretry::ffi::autoretry_out_buffer_len(), autoretry::ffi::OUT_BUFFER_LEN as u32);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_out_buffer_len() -> u32 {
    OUT_BUFFER_LEN as u32
}

/// Creates a machine: settings (`enabled` is 0 or not), host options
/// (`credential_store` is 0 or not). Returns its handle (`>= 0`) or
/// [`ERR_POOL_FULL`].
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 1);
/// assert!(h >= 0);
/// autoretry_free(h);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_new(
    enabled: u32,
    max_retries: u32,
    base_delay_ms: u64,
    context_window: u64,
    credential_store: u32,
) -> i32 {
    let machine = Machine::new(
        RetrySettings::DEFAULT
            .with_enabled(enabled != 0)
            .with_max_retries(max_retries)
            .with_base_delay_ms(base_delay_ms),
        HostOptions::DEFAULT
            .with_context_window(context_window)
            .with_credential_store(credential_store != 0),
    );
    with_slots(
        |slots, _| match slots.machines.iter().position(Option::is_none) {
            Some(i) => {
                slots.machines[i] = Some(machine);
                slots.marked_len[i] = 0;
                i as i32
            }
            None => ERR_POOL_FULL,
        },
    )
}

/// Frees a machine. Returns 0, or [`ERR_HANDLE`].
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// assert_eq!(autoretry_free(h), 0);
/// assert_eq!(autoretry_free(h), ERR_HANDLE);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_free(handle: i32) -> i32 {
    with_slots(|slots, _| match live(slots, handle) {
        Some(i) => {
            slots.machines[i] = None;
            slots.marked_len[i] = 0;
            0
        }
        None => ERR_HANDLE,
    })
}

/// The machine's state as JSON,
/// `{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}`, written
/// to `out`; returns its length or an error code.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes (or null with
/// `out_cap == 0`).
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// let mut out = [0u8; 128];
/// // SAFETY: `out` is live and `out.len()` bytes long.
/// let n = unsafe { autoretry_state(h, out.as_mut_ptr(), out.len() as u32) };
/// assert_eq!(&out[..n as usize], br#"{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}"#);
/// autoretry_free(h);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_state(handle: i32, out: *mut u8, out_cap: u32) -> i32 {
    // SAFETY: the caller's contract.
    let Some(out) = (unsafe { out_slice(out, out_cap) }) else {
        return ERR_ARG;
    };
    with_slots(|slots, _| {
        let Some(machine) = machine(slots, handle) else {
            return ERR_HANDLE;
        };
        let state = machine.state();
        let mut w = Json::new(out);
        w.raw("{\"autoRetryEnabled\":");
        w.bool(state.auto_retry_enabled);
        w.raw(",\"isRetrying\":");
        w.bool(state.is_retrying);
        w.raw(",\"retryAttempt\":");
        w.u64(u64::from(state.retry_attempt));
        w.raw("}");
        w.finish()
    })
}

/// The pending backoff timer's id; 0 when none is pending or the handle is
/// not live (the machine never issues 0).
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// assert_eq!(autoretry_pending_timer(h), 0);
/// autoretry_free(h);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_pending_timer(handle: i32) -> u64 {
    with_slots(|slots, _| {
        machine(slots, handle)
            .and_then(|m| m.pending_timer())
            .map_or(0, TimerId::get)
    })
}

/// `message_end`: `stop_reason` is a `STOP_*` code, `(text, text_len)` the
/// `errorMessage` (`text_len == -1`: none), `has_usage != 0` gives the
/// message `usage` with the two counts. Writes the outputs' JSON to `out`;
/// returns its length or an error code.
///
/// # Safety
///
/// `text` must be valid for reads of `text_len` bytes when `text_len > 0`;
/// `out` must be valid for writes of `out_cap` bytes; the two must not
/// overlap (checked: [`ERR_ARG`]).
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// let mut out = [0u8; 64];
/// // SAFETY: no text; `out` is live and `out.len()` bytes long.
/// let n = unsafe { autoretry_message_end(h, STOP_STOP, core::ptr::null(), -1, 0, 0, 0, out.as_mut_ptr(), out.len() as u32) };
/// assert_eq!(&out[..n as usize], b"[]");
/// autoretry_free(h);
/// ```
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn autoretry_message_end(
    handle: i32,
    stop_reason: u32,
    text: *const u8,
    text_len: i32,
    has_usage: u32,
    usage_input: u64,
    usage_cache_read: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        feed_message(
            handle,
            stop_reason,
            (text, text_len),
            (has_usage, usage_input, usage_cache_read),
            None,
            (out, out_cap),
        )
    }
}

/// `agent_end`: as [`autoretry_message_end`], plus `nowMs` (`has_now != 0`:
/// the host's wall clock in Unix ms). When the outputs ask to mark a usage
/// limit, the slot keeps the error text for [`autoretry_usage_limit_marked`].
///
/// # Safety
///
/// As [`autoretry_message_end`].
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// let mut out = [0u8; 256];
/// // SAFETY: no text; `out` is live and `out.len()` bytes long.
/// let n = unsafe { autoretry_agent_end(h, STOP_STOP, core::ptr::null(), -1, 0, 0, 0, 0, 0, out.as_mut_ptr(), out.len() as u32) };
/// assert_eq!(&out[..n as usize], br#"[{"type":"check_compaction"}]"#);
/// autoretry_free(h);
/// ```
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn autoretry_agent_end(
    handle: i32,
    stop_reason: u32,
    text: *const u8,
    text_len: i32,
    has_usage: u32,
    usage_input: u64,
    usage_cache_read: u64,
    has_now: u32,
    now_ms: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        feed_message(
            handle,
            stop_reason,
            (text, text_len),
            (has_usage, usage_input, usage_cache_read),
            Some((has_now != 0).then_some(now_ms)),
            (out, out_cap),
        )
    }
}

/// `timer_fired` with the machine's timer id. Writes the outputs' JSON.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// let mut out = [0u8; 64];
/// // SAFETY: `out` is live and `out.len()` bytes long.
/// let n = unsafe { autoretry_timer_fired(h, 7, out.as_mut_ptr(), out.len() as u32) };
/// assert_eq!(&out[..n as usize], b"[]");
/// autoretry_free(h);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_timer_fired(
    handle: i32,
    timer: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        feed_simple(
            handle,
            Input::TimerFired {
                timer: TimerId(timer),
            },
            out,
            out_cap,
        )
    }
}

/// `usage_limit_marked`: the host's answer to `mark_usage_limit`; the error
/// text is the one the slot kept. Writes the outputs' JSON.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 1);
/// let text = "usage_limit_reached";
/// let mut out = [0u8; 512];
/// // SAFETY: `text` and `out` are live, disjoint and of the given lengths.
/// unsafe {
///     autoretry_agent_end(h, STOP_ERROR, text.as_ptr(), text.len() as i32, 0, 0, 0, 0, 0, out.as_mut_ptr(), out.len() as u32);
///     let n = autoretry_usage_limit_marked(h, 1, out.as_mut_ptr(), out.len() as u32);
///     assert!(core::str::from_utf8(&out[..n as usize]).unwrap().contains(r#""delayMs":0,"errorMessage":"usage_limit_reached""#));
/// }
/// autoretry_free(h);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_usage_limit_marked(
    handle: i32,
    switched: u32,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract.
    let Some(out) = (unsafe { out_slice(out, out_cap) }) else {
        return ERR_ARG;
    };
    with_slots(|slots, texts| {
        let Some(i) = live(slots, handle) else {
            return ERR_HANDLE;
        };
        let Some(machine) = slots.machines[i].as_mut() else {
            return ERR_HANDLE;
        };
        // The copy was taken from a `&str`, so it is UTF-8.
        let text = core::str::from_utf8(&texts[i][..slots.marked_len[i]]).unwrap_or("");
        let input = Input::UsageLimitMarked {
            switched: switched != 0,
            error_message: text,
        };
        match machine.handle(input) {
            Ok(outputs) => write_outputs(out, &outputs),
            Err(_) => ERR_REFUSED,
        }
    })
}

/// `abort_retry`. Writes the outputs' JSON.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// let mut out = [0u8; 64];
/// // SAFETY: `out` is live and `out.len()` bytes long.
/// let n = unsafe { autoretry_abort_retry(h, out.as_mut_ptr(), out.len() as u32) };
/// assert_eq!(&out[..n as usize], b"[]");
/// autoretry_free(h);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_abort_retry(handle: i32, out: *mut u8, out_cap: u32) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, Input::AbortRetry, out, out_cap) }
}

/// `abort`, the global abort. Writes the outputs' JSON.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// let mut out = [0u8; 64];
/// // SAFETY: `out` is live and `out.len()` bytes long.
/// let n = unsafe { autoretry_abort(h, out.as_mut_ptr(), out.len() as u32) };
/// assert_eq!(&out[..n as usize], br#"[{"type":"abort_agent"}]"#);
/// autoretry_free(h);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_abort(handle: i32, out: *mut u8, out_cap: u32) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, Input::Abort, out, out_cap) }
}

/// `set_auto_retry` (`enabled` is 0 or not). Writes the outputs' JSON.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// let mut out = [0u8; 128];
/// // SAFETY: `out` is live and `out.len()` bytes long.
/// unsafe {
///     autoretry_set_auto_retry(h, 0, out.as_mut_ptr(), out.len() as u32);
///     let n = autoretry_state(h, out.as_mut_ptr(), out.len() as u32);
///     assert!(out[..n as usize].starts_with(br#"{"autoRetryEnabled":false"#));
/// }
/// autoretry_free(h);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_set_auto_retry(
    handle: i32,
    enabled: u32,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    let input = Input::SetAutoRetry {
        enabled: enabled != 0,
    };
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, input, out, out_cap) }
}

/// `settings`: replaces the whole `retry` group (the host validated it).
/// Writes the outputs' JSON.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```
/// use autoretry::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// let mut out = [0u8; 64];
/// // SAFETY: `out` is live and `out.len()` bytes long.
/// let n = unsafe { autoretry_settings(h, 1, 0, 100, out.as_mut_ptr(), out.len() as u32) };
/// assert_eq!(&out[..n as usize], b"[]");
/// autoretry_free(h);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_settings(
    handle: i32,
    enabled: u32,
    max_retries: u32,
    base_delay_ms: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    let input = Input::Settings(
        RetrySettings::DEFAULT
            .with_enabled(enabled != 0)
            .with_max_retries(max_retries)
            .with_base_delay_ms(base_delay_ms),
    );
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, input, out, out_cap) }
}

/// The slot index of a live handle.
fn live(slots: &Slots, handle: i32) -> Option<usize> {
    usize::try_from(handle)
        .ok()
        .filter(|&i| slots.machines.get(i).is_some_and(Option::is_some))
}

/// The machine of a live handle.
fn machine(slots: &mut Slots, handle: i32) -> Option<&mut Machine> {
    let i = live(slots, handle)?;
    slots.machines[i].as_mut()
}

/// The output buffer as a slice; `None` for a null pointer with a length.
///
/// # Safety
///
/// `out` valid for writes of `out_cap` bytes, not aliased during the call.
unsafe fn out_slice<'a>(out: *mut u8, out_cap: u32) -> Option<&'a mut [u8]> {
    if out_cap == 0 {
        return Some(&mut []);
    }
    if out.is_null() {
        return None;
    }
    // SAFETY: non-null, and valid for `out_cap` bytes by the caller's
    // contract; the slice lives only for the call.
    Some(unsafe { core::slice::from_raw_parts_mut(out, out_cap as usize) })
}

/// Feeds an input that carries no text.
///
/// # Safety
///
/// As [`out_slice`].
unsafe fn feed_simple(handle: i32, input: Input<'static>, out: *mut u8, out_cap: u32) -> i32 {
    // SAFETY: the caller's contract.
    let Some(out) = (unsafe { out_slice(out, out_cap) }) else {
        return ERR_ARG;
    };
    with_slots(|slots, _| {
        let Some(machine) = machine(slots, handle) else {
            return ERR_HANDLE;
        };
        match machine.handle(input) {
            Ok(outputs) => write_outputs(out, &outputs),
            Err(_) => ERR_REFUSED,
        }
    })
}

/// Feeds a `message_end` (`now == None`) or an `agent_end`.
///
/// # Safety
///
/// `text` valid for reads of `text_len` bytes when `text_len > 0`; `out`
/// as [`out_slice`]. Overlap is checked before any slice is made.
unsafe fn feed_message(
    handle: i32,
    stop_reason: u32,
    (text, text_len): (*const u8, i32),
    (has_usage, input, cache_read): (u32, u64, u64),
    now: Option<Option<u64>>,
    (out, out_cap): (*mut u8, u32),
) -> i32 {
    let stop_reason = match stop_reason {
        STOP_STOP => StopReason::Stop,
        STOP_LENGTH => StopReason::Length,
        STOP_TOOL_USE => StopReason::ToolUse,
        STOP_ERROR => StopReason::Error,
        STOP_ABORTED => StopReason::Aborted,
        _ => return ERR_ARG,
    };
    let text_len = match text_len {
        -1 => None,
        n => match usize::try_from(n) {
            Ok(n) if n <= MAX_TEXT => Some(n),
            _ => return ERR_TEXT_LEN,
        },
    };
    if let Some(n) = text_len.filter(|&n| n > 0) {
        if text.is_null() {
            return ERR_ARG;
        }
        // Address comparison only: the ranges must be disjoint.
        let (t, o) = (text as usize, out as usize);
        if out_cap > 0 && t < o.saturating_add(out_cap as usize) && o < t.saturating_add(n) {
            return ERR_ARG;
        }
    }
    let bytes: &[u8] = match text_len {
        None | Some(0) => &[],
        // SAFETY: non-null (checked), valid for `n` bytes by the caller's
        // contract, disjoint from `out` (checked); read-only for the call.
        Some(n) => unsafe { core::slice::from_raw_parts(text, n) },
    };
    let Ok(text) = core::str::from_utf8(bytes) else {
        return ERR_UTF8;
    };
    // SAFETY: the caller's contract; disjoint from `text` (checked).
    let Some(out) = (unsafe { out_slice(out, out_cap) }) else {
        return ERR_ARG;
    };
    let message = AssistantMessage {
        stop_reason,
        error_message: text_len.map(|_| text),
        usage: (has_usage != 0).then_some(Usage::new(input, cache_read)),
        should_retry: None,
        retry_after_ms: None,
    };
    let input = match now {
        None => Input::MessageEnd { message },
        Some(now_ms) => Input::AgentEnd { message, now_ms },
    };
    with_slots(|slots, texts| {
        let Some(i) = live(slots, handle) else {
            return ERR_HANDLE;
        };
        let Some(machine) = slots.machines[i].as_mut() else {
            return ERR_HANDLE;
        };
        let outputs = match machine.handle(input) {
            Ok(outputs) => outputs,
            Err(_) => return ERR_REFUSED,
        };
        if outputs
            .iter()
            .any(|o| matches!(o, Output::MarkUsageLimit { .. }))
        {
            // `text.len() <= MAX_TEXT`, checked above.
            texts[i][..text.len()].copy_from_slice(text.as_bytes());
            slots.marked_len[i] = text.len();
        }
        write_outputs(out, &outputs)
    })
}

/// The WebAssembly module is a final artifact without `std`: it needs a
/// panic handler. The core is panic-free, so this is never reached; if it
/// were, the host sees a trap.
#[cfg(all(target_arch = "wasm32", not(feature = "std"), not(test)))]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

/// Writes `[output, ...]`; returns the length or [`ERR_OUT_TOO_SMALL`].
fn write_outputs(out: &mut [u8], outputs: &[Output<'_>]) -> i32 {
    let mut w = Json::new(out);
    w.raw("[");
    for (i, output) in outputs.iter().enumerate() {
        if i > 0 {
            w.raw(",");
        }
        write_output(&mut w, output);
    }
    w.raw("]");
    w.finish()
}

/// One output, keys in the order of `wire` (spec §7–§8).
fn write_output(w: &mut Json<'_>, output: &Output<'_>) {
    w.raw("{\"type\":");
    w.string(output.type_name());
    match *output {
        Output::Emit(event) => {
            w.raw(",\"event\":{\"type\":");
            w.string(event.type_name());
            match event {
                Event::Start {
                    attempt,
                    max_attempts,
                    delay_ms,
                    error_message,
                } => {
                    w.raw(",\"attempt\":");
                    w.u64(u64::from(attempt));
                    w.raw(",\"maxAttempts\":");
                    w.u64(u64::from(max_attempts));
                    w.raw(",\"delayMs\":");
                    w.u64(delay_ms);
                    w.raw(",\"errorMessage\":");
                    w.string(error_message);
                }
                Event::End {
                    success,
                    attempt,
                    final_error,
                } => {
                    w.raw(",\"success\":");
                    w.bool(success);
                    w.raw(",\"attempt\":");
                    w.u64(u64::from(attempt));
                    if let Some(error) = final_error {
                        w.raw(",\"finalError\":");
                        w.display(&error);
                    }
                }
            }
            w.raw("}");
        }
        Output::Sleep { ms, timer } => {
            w.raw(",\"ms\":");
            w.u64(ms);
            w.raw(",\"timer\":");
            w.u64(timer.get());
        }
        Output::CancelTimer { timer } => {
            w.raw(",\"timer\":");
            w.u64(timer.get());
        }
        Output::MarkUsageLimit { retry_after_ms } => {
            w.raw(",\"retryAfterMs\":");
            match retry_after_ms {
                Some(ms) => w.u64(ms),
                None => w.raw("null"),
            }
        }
        Output::DropTrailingError
        | Output::ContinueAgent
        | Output::CheckCompaction
        | Output::AbortAgent
        | Output::Settled => {}
    }
    w.raw("}");
}

/// A JSON writer into a fixed buffer; escapes strings as serde_json does.
struct Json<'b> {
    buf: &'b mut [u8],
    len: usize,
    overflow: bool,
}

impl<'b> Json<'b> {
    fn new(buf: &'b mut [u8]) -> Self {
        Json {
            buf,
            len: 0,
            overflow: false,
        }
    }

    fn bytes(&mut self, bytes: &[u8]) {
        match self.buf.get_mut(self.len..self.len + bytes.len()) {
            Some(dst) if !self.overflow => {
                dst.copy_from_slice(bytes);
                self.len += bytes.len();
            }
            _ => self.overflow = true,
        }
    }

    fn raw(&mut self, text: &str) {
        self.bytes(text.as_bytes());
    }

    fn bool(&mut self, b: bool) {
        self.raw(if b { "true" } else { "false" });
    }

    fn u64(&mut self, mut n: u64) {
        let mut digits = [0u8; 20];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        self.bytes(&digits[i..]);
    }

    fn string(&mut self, text: &str) {
        self.raw("\"");
        self.escaped(text);
        self.raw("\"");
    }

    /// A JSON string of what `value` writes, escaped piece by piece.
    fn display(&mut self, value: &dyn core::fmt::Display) {
        struct Escaping<'j, 'b>(&'j mut Json<'b>);
        impl core::fmt::Write for Escaping<'_, '_> {
            fn write_str(&mut self, piece: &str) -> core::fmt::Result {
                self.0.escaped(piece);
                Ok(())
            }
        }
        self.raw("\"");
        // Writing into `Escaping` cannot fail.
        let _ = core::fmt::write(&mut Escaping(self), format_args!("{value}"));
        self.raw("\"");
    }

    /// The body of a JSON string (no quotes).
    fn escaped(&mut self, text: &str) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let bytes = text.as_bytes();
        let mut start = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let escape: &[u8] = match b {
                b'"' => b"\\\"",
                b'\\' => b"\\\\",
                b'\n' => b"\\n",
                b'\r' => b"\\r",
                b'\t' => b"\\t",
                0x08 => b"\\b",
                0x0c => b"\\f",
                0x00..=0x1f => &[
                    b'\\',
                    b'u',
                    b'0',
                    b'0',
                    HEX[usize::from(b >> 4)],
                    HEX[usize::from(b & 0xf)],
                ],
                _ => continue,
            };
            self.bytes(&bytes[start..i]);
            self.bytes(escape);
            start = i + 1;
        }
        self.bytes(&bytes[start..]);
    }

    fn finish(self) -> i32 {
        if self.overflow {
            ERR_OUT_TOO_SMALL
        } else {
            // At most `u32::MAX` bytes fit a buffer the host describes with
            // a `u32`; larger than `i32::MAX` is reported as too small.
            i32::try_from(self.len).unwrap_or(ERR_OUT_TOO_SMALL)
        }
    }
}
