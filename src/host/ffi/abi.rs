//! The exported functions: one per input, plus the pool's `new`/`free`,
//! the state and the exchange buffers' addresses. Each checks its
//! arguments, builds the input, feeds the machine under the pool's lock,
//! keeps the usage-limit text, and has `out.rs` write the outputs.
// `#[no_mangle]` and `unsafe extern "C" fn` are `unsafe_code` by the lint's
// definition: these are the exports' declarations. Their only `unsafe`
// blocks forward the callers' contracts to `pool.rs`'s two conversions.
#![allow(unsafe_code)]

use super::pool::{self, with_slots};
use super::{
    out, ERR_ARG, ERR_HANDLE, ERR_POOL_FULL, ERR_REFUSED, ERR_UTF8, MAX_TEXT, OUT_BUFFER_LEN,
    STOP_ABORTED, STOP_ERROR, STOP_LENGTH, STOP_STOP, STOP_TOOL_USE,
};
use crate::{
    AssistantMessage, HostOptions, Input, Machine, Output, RetrySettings, StopReason, TimerId,
    Usage,
};

/// The address of a [`MAX_TEXT`]-byte buffer for a host with no allocator
/// to write texts into before passing it as `text`.
///
/// ```
/// assert!(!autoretry::host::ffi::autoretry_text_buffer().is_null());
/// ```
#[no_mangle]
pub extern "C" fn autoretry_text_buffer() -> *mut u8 {
    pool::text_buffer()
}

/// The address of an [`OUT_BUFFER_LEN`]-byte buffer for a host with no
/// allocator to pass as `out`.
///
/// ```
/// assert!(!autoretry::host::ffi::autoretry_out_buffer().is_null());
/// ```
#[no_mangle]
pub extern "C" fn autoretry_out_buffer() -> *mut u8 {
    pool::out_buffer()
}

/// [`MAX_TEXT`], for hosts that cannot read Rust constants.
///
/// ```
/// assert_eq!(autoretry::host::ffi::autoretry_max_text(), autoretry::host::ffi::MAX_TEXT as u32);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_max_text() -> u32 {
    MAX_TEXT as u32
}

/// [`OUT_BUFFER_LEN`], for hosts that cannot read Rust constants.
///
/// ```
/// assert_eq!(autoretry::host::ffi::autoretry_out_buffer_len(), autoretry::host::ffi::OUT_BUFFER_LEN as u32);
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
/// use autoretry::host::ffi::*;
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
/// use autoretry::host::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// assert_eq!(autoretry_free(h), 0);
/// assert_eq!(autoretry_free(h), ERR_HANDLE);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_free(handle: i32) -> i32 {
    with_slots(|slots, _| match slots.live(handle) {
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
/// use autoretry::host::ffi::*;
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
    let Some(out) = (unsafe { pool::host_out(out, out_cap) }) else {
        return ERR_ARG;
    };
    with_slots(|slots, _| {
        let Some(machine) = slots.machine(handle) else {
            return ERR_HANDLE;
        };
        out::state(out, &machine.state())
    })
}

/// The pending backoff timer's id; 0 when none is pending or the handle is
/// not live (the machine never issues 0).
///
/// ```
/// use autoretry::host::ffi::*;
/// let h = autoretry_new(1, 3, 2000, 0, 0);
/// assert_eq!(autoretry_pending_timer(h), 0);
/// autoretry_free(h);
/// ```
#[no_mangle]
pub extern "C" fn autoretry_pending_timer(handle: i32) -> u64 {
    with_slots(|slots, _| {
        slots
            .machine(handle)
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
/// use autoretry::host::ffi::*;
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
/// use autoretry::host::ffi::*;
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
/// use autoretry::host::ffi::*;
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
/// use autoretry::host::ffi::*;
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
    let Some(out) = (unsafe { pool::host_out(out, out_cap) }) else {
        return ERR_ARG;
    };
    with_slots(|slots, texts| {
        let Some(i) = slots.live(handle) else {
            return ERR_HANDLE;
        };
        let Some(machine) = slots.machines.get_mut(i).and_then(Option::as_mut) else {
            return ERR_HANDLE;
        };
        let kept = (texts.get(i).zip(slots.marked_len.get(i)))
            .and_then(|(text, &len)| text.get(..len))
            .unwrap_or_default();
        // The copy was taken from a `&str`, so it is UTF-8.
        let text = core::str::from_utf8(kept).unwrap_or("");
        let input = Input::UsageLimitMarked {
            switched: switched != 0,
            error_message: text,
        };
        match machine.handle(input) {
            Ok(outputs) => out::outputs(out, &outputs),
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
/// use autoretry::host::ffi::*;
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
/// use autoretry::host::ffi::*;
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
/// use autoretry::host::ffi::*;
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
/// use autoretry::host::ffi::*;
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

/// Feeds an input that carries no text.
///
/// # Safety
///
/// As [`pool::host_out`].
unsafe fn feed_simple(handle: i32, input: Input<'static>, out: *mut u8, out_cap: u32) -> i32 {
    // SAFETY: the caller's contract.
    let Some(out) = (unsafe { pool::host_out(out, out_cap) }) else {
        return ERR_ARG;
    };
    with_slots(|slots, _| {
        let Some(machine) = slots.machine(handle) else {
            return ERR_HANDLE;
        };
        match machine.handle(input) {
            Ok(outputs) => out::outputs(out, &outputs),
            Err(_) => ERR_REFUSED,
        }
    })
}

/// Feeds a `message_end` (`now == None`) or an `agent_end`.
///
/// # Safety
///
/// `text` as [`pool::host_text`], `out` as [`pool::host_out`]. Overlap is
/// checked before any slice is made.
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
    // SAFETY: the caller's contract, forwarded; `out` is only compared.
    let bytes = match unsafe { pool::host_text(text, text_len, out, out_cap) } {
        Ok(bytes) => bytes,
        Err(code) => return code,
    };
    let Ok(text) = core::str::from_utf8(bytes.unwrap_or_default()) else {
        return ERR_UTF8;
    };
    // SAFETY: the caller's contract; disjoint from `text` (checked by
    // `host_text`).
    let Some(out) = (unsafe { pool::host_out(out, out_cap) }) else {
        return ERR_ARG;
    };
    let message = AssistantMessage {
        stop_reason,
        error_message: bytes.map(|_| text),
        usage: (has_usage != 0).then_some(Usage::new(input, cache_read)),
        should_retry: None,
        retry_after_ms: None,
    };
    let input = match now {
        None => Input::MessageEnd { message },
        Some(now_ms) => Input::AgentEnd { message, now_ms },
    };
    with_slots(|slots, texts| {
        let Some(i) = slots.live(handle) else {
            return ERR_HANDLE;
        };
        let Some(machine) = slots.machines.get_mut(i).and_then(Option::as_mut) else {
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
            // `text.len() <= MAX_TEXT` (`host_text`), so the copy fits.
            if let Some(kept) = texts.get_mut(i).and_then(|t| t.get_mut(..text.len())) {
                kept.copy_from_slice(text.as_bytes());
                slots.marked_len[i] = text.len();
            }
        }
        out::outputs(out, &outputs)
    })
}
