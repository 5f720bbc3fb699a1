//! The JSON exports: one per input (two for the inputs that carry
//! settings or a message: the §4 form of the first hosts, a one-line
//! forward to the `_ex` form with every option of §10), plus the pool's
//! `new`/`new_ex`/`free`, the state and the exchange buffers' addresses.
//! Each takes the host's scalars and buffers and hands them to the call
//! path (`call.rs`), which feeds the machine under the pool's lock and has
//! `out.rs` write the outputs.
// `#[no_mangle]` and `unsafe extern "C" fn` are `unsafe_code` by the lint's
// definition: these are the exports' declarations. Their only `unsafe`
// blocks forward the callers' contracts to `pool.rs`'s two conversions.
#![allow(unsafe_code)]

use super::call::{
    answer, create, feed_message, feed_simple, host_options, retry_settings, state, timer_fired,
    Answer, Fields, Sink, SECTION_11_OFF,
};
use super::codes::{
    CLASSIFIER_CLASSIC, ERR_HANDLE, MAX_TEXT, OUT_BUFFER_LEN, PARTIAL_NONE, PROFILE_CLASSIC,
    SHOULD_RETRY_ABSENT,
};
use super::out;
use super::pool::{self, with_slots};
use autoretry::{Input, Machine, RetrySettings, Usage};

/// The address of an `AUTORETRY_MAX_TEXT`-byte buffer for a host with no
/// allocator (a WebAssembly host) to write texts into before passing them
/// as `text`.
#[no_mangle]
pub extern "C" fn autoretry_text_buffer() -> *mut u8 {
    pool::text_buffer()
}

/// The address of an `AUTORETRY_OUT_BUFFER_LEN`-byte buffer for a host with
/// no allocator (a WebAssembly host) to pass as `out`.
#[no_mangle]
pub extern "C" fn autoretry_out_buffer() -> *mut u8 {
    pool::out_buffer()
}

/// `AUTORETRY_MAX_TEXT`, for hosts that cannot read the header's macros.
#[no_mangle]
pub extern "C" fn autoretry_max_text() -> u32 {
    MAX_TEXT as u32
}

/// `AUTORETRY_OUT_BUFFER_LEN`, for hosts that cannot read the header's macros.
#[no_mangle]
pub extern "C" fn autoretry_out_buffer_len() -> u32 {
    OUT_BUFFER_LEN as u32
}

/// Creates a machine with the settings of spec §4 (`enabled` is 0 or
/// not; the §10.1 keys take their `classic` defaults) and the host options
/// of §2 (`credential_store` is 0 or not; seed 0). Returns its handle
/// (`>= 0`) or `AUTORETRY_ERR_POOL_FULL`. `autoretry_new_ex()` takes every
/// option.
///
/// ```c
/// int32_t h = autoretry_new(1, 3, 2000, 0, 1); /* on, 3 retries from 2 s */
/// if (h < 0) return h;
/// /* ... */
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
    autoretry_new_ex(
        PROFILE_CLASSIC,
        enabled,
        max_retries,
        base_delay_ms,
        CLASSIC.max_delay_ms,
        CLASSIC.backoff_cap_ms,
        CLASSIC_JITTER,
        CLASSIC_HINTS,
        CLASSIFIER_CLASSIC,
        context_window,
        credential_store,
        0,
    )
}

/// The keys of spec §10.1 that the first hosts' forms leave out take their
/// `classic` defaults: these, in the scalar form of the `_ex` ones.
const CLASSIC: RetrySettings = RetrySettings::CLASSIC;
/// `CLASSIC.jitter_pct` as the `_ex` forms take it.
const CLASSIC_JITTER: u32 = CLASSIC.jitter_pct.get() as u32;
/// `CLASSIC.honor_hints` as the `_ex` forms take it.
const CLASSIC_HINTS: u32 = CLASSIC.honor_hints as u32;

/// Creates a machine with every key of the `retry` group (spec §4 and
/// §10.1, in the spec's order) and every host option (§2 and the jitter
/// `seed` of §10.1):
///
/// - `profile`: `AUTORETRY_PROFILE_CLASSIC` or `AUTORETRY_PROFILE_MODERN`
///   (it only records which column the host took the defaults from: every
///   key is given);
/// - `enabled`, `honor_hints`, `credential_store`: 0 is false, anything
///   else true;
/// - `jitter_pct`: 0 to 100;
/// - `classifier`: `AUTORETRY_CLASSIFIER_CLASSIC`,
///   `AUTORETRY_CLASSIFIER_EXTENDED` or (the C libraries)
///   `AUTORETRY_CLASSIFIER_CURATED`;
/// - `max_delay_ms`, `backoff_cap_ms`, `context_window`: 0 means none.
///
/// Returns its handle (`>= 0`), `AUTORETRY_ERR_SETTINGS` for a `jitter_pct`
/// above 100 or an unknown `profile` or `classifier` code (no machine is
/// made), or `AUTORETRY_ERR_POOL_FULL`.
///
/// ```c
/// /* The modern profile of spec §10.1, seed 42. */
/// int32_t h = autoretry_new_ex(AUTORETRY_PROFILE_MODERN, 1, 10, 500, 300000,
///                              8000, 25, 1, AUTORETRY_CLASSIFIER_EXTENDED,
///                              0, 0, 42);
/// ```
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub extern "C" fn autoretry_new_ex(
    profile: u32,
    enabled: u32,
    max_retries: u32,
    base_delay_ms: u64,
    max_delay_ms: u64,
    backoff_cap_ms: u64,
    jitter_pct: u32,
    honor_hints: u32,
    classifier: u32,
    context_window: u64,
    credential_store: u32,
    seed: u64,
) -> i32 {
    let settings = match retry_settings(
        profile,
        enabled,
        max_retries,
        base_delay_ms,
        max_delay_ms,
        backoff_cap_ms,
        jitter_pct,
        honor_hints,
        classifier,
        SECTION_11_OFF,
    ) {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    create(
        settings,
        host_options(context_window, credential_store, seed),
    )
}

/// Frees a machine. Returns 0, or `AUTORETRY_ERR_HANDLE`. The slot's next
/// machine gets another handle: the freed handle, and the freed machine's
/// timer ids, never reach it.
///
/// ```c
/// autoretry_free(h);            /* 0 */
/// autoretry_free(h);            /* AUTORETRY_ERR_HANDLE */
/// ```
#[no_mangle]
pub extern "C" fn autoretry_free(handle: i32) -> i32 {
    with_slots(|slots, _| match slots.live(handle) {
        Some(slot) => {
            slots.remove(slot);
            0
        }
        None => ERR_HANDLE,
    })
}

/// The machine's state as JSON,
/// `{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}`,
/// written to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG` (a null `out` with a
/// length), `AUTORETRY_ERR_OUT_TOO_SMALL`. `autoretry_state_c()` gives it
/// as a struct.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes (or null with
/// `out_cap == 0`).
///
/// ```c
/// char json[128];
/// int32_t n = autoretry_state(h, (uint8_t *)json, sizeof json);
/// if (n >= 0) printf("%.*s\n", (int)n, json);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_state(handle: i32, out: *mut u8, out_cap: u32) -> i32 {
    // SAFETY: the caller's contract.
    let out = match unsafe { pool::host_out(out, out_cap) } {
        Ok(out) => out,
        Err(code) => return code,
    };
    state(handle, |state| out::state(out, &state))
}

/// The pending backoff timer's id; 0 when none is pending or the handle is
/// not live (the module never issues 0).
#[no_mangle]
pub extern "C" fn autoretry_pending_timer(handle: i32) -> u64 {
    with_slots(|slots, _| {
        let Some(slot) = slots.live(handle) else {
            return 0;
        };
        slots
            .machine(slot)
            .and_then(Machine::pending_timer)
            .map_or(0, |timer| slot.timer_to_host(timer.get()))
    })
}

/// `message_end` with the message fields of spec §2: `stop_reason` is an
/// `AUTORETRY_STOP_*` code, `(text, text_len)` the `errorMessage`
/// (`text_len == -1`: none), `has_usage != 0` gives the message `usage`
/// with the two counts (`cacheWrite` 0); `shouldRetry` and `retryAfterMs`
/// are absent. `autoretry_message_end_ex()` takes every field. Writes the outputs' JSON to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_REFUSED` (its reason from
/// `autoretry_last_refusal()`), `AUTORETRY_ERR_UTF8`,
/// `AUTORETRY_ERR_TEXT_LEN`, `AUTORETRY_ERR_ARG` (an unknown or zero stop
/// reason, a null pointer with a length, overlapping buffers),
/// `AUTORETRY_ERR_BUFFER` (a buffer the module will not touch),
/// `AUTORETRY_ERR_OUT_TOO_SMALL` (nothing changed).
///
/// # Safety
///
/// `text` must be valid for reads of `text_len` bytes when `text_len > 0`;
/// `out` must be valid for writes of `out_cap` bytes; the two must not
/// overlap (checked: `AUTORETRY_ERR_ARG`).
///
/// ```c
/// uint8_t out[64];
/// int32_t n = autoretry_message_end(h, AUTORETRY_STOP_STOP, NULL, -1, 0, 0, 0,
///                                   out, sizeof out);
/// /* n == 2: "[]" */
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
    // SAFETY: the caller's contract, the same.
    unsafe {
        autoretry_message_end_ex(
            handle,
            stop_reason,
            text,
            text_len,
            has_usage,
            usage_input,
            usage_cache_read,
            0,
            SHOULD_RETRY_ABSENT,
            0,
            0,
            out,
            out_cap,
        )
    }
}

/// `message_end` with every message field (spec §2 and §10.2):
///
/// - `stop_reason`: an `AUTORETRY_STOP_*` code; `(text, text_len)`: the
///   `errorMessage` (`text_len == -1`: none);
/// - `has_usage != 0`: the message has `usage`, with the three counts
///   `input`, `cacheRead` and `cacheWrite`;
/// - `should_retry`: `AUTORETRY_SHOULD_RETRY_ABSENT` (0),
///   `AUTORETRY_SHOULD_RETRY_NO` or `AUTORETRY_SHOULD_RETRY_YES` (the
///   host's verdict);
/// - `has_retry_after != 0`: the message has `retryAfterMs`.
///
/// Writes the outputs' JSON to `out`; returns its length or an error code as `autoretry_message_end()` (`AUTORETRY_ERR_ARG`
/// also for an unknown `should_retry` code).
///
/// # Safety
///
/// As `autoretry_message_end()`.
///
/// ```c
/// uint8_t out[64];
/// /* usage 10/20/30, the host's verdict "no", retryAfterMs 500 */
/// int32_t n = autoretry_message_end_ex(h, AUTORETRY_STOP_STOP, NULL, -1,
///                                      1, 10, 20, 30,
///                                      AUTORETRY_SHOULD_RETRY_NO, 1, 500,
///                                      out, sizeof out);
/// ```
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn autoretry_message_end_ex(
    handle: i32,
    stop_reason: u32,
    text: *const u8,
    text_len: i32,
    has_usage: u32,
    usage_input: u64,
    usage_cache_read: u64,
    usage_cache_write: u64,
    should_retry: i32,
    has_retry_after: u32,
    retry_after_ms: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    let usage = Usage::new(usage_input, usage_cache_read).with_cache_write(usage_cache_write);
    let fields = Fields {
        stop_reason,
        usage: (has_usage != 0).then_some(usage),
        should_retry,
        retry_after_ms: (has_retry_after != 0).then_some(retry_after_ms),
        partial: PARTIAL_NONE,
        budget: 0,
        empty: false,
    };
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        feed_message(
            handle,
            fields,
            (text, text_len),
            None,
            (out, out_cap),
            Sink::Json,
        )
    }
}

/// `agent_end`: as `autoretry_message_end()`, plus `nowMs` (`has_now != 0`:
/// the host's wall clock in Unix ms). When the outputs ask to mark a usage
/// limit, the slot keeps the error text for
/// `autoretry_usage_limit_marked()`. `autoretry_agent_end_ex()` takes every
/// message field. Error codes as `autoretry_message_end()`.
///
/// # Safety
///
/// As `autoretry_message_end()`.
///
/// ```c
/// const char *text = "529 overloaded_error";
/// uint8_t out[512];
/// int32_t n = autoretry_agent_end(h, AUTORETRY_STOP_ERROR, (const uint8_t *)text,
///                                 (int32_t)strlen(text), 0, 0, 0, 0, 0,
///                                 out, sizeof out);
/// /* [..., {"type":"drop_trailing_error"},{"type":"sleep","ms":2000,"timer":1}] */
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
    // SAFETY: the caller's contract, the same.
    unsafe {
        autoretry_agent_end_ex(
            handle,
            stop_reason,
            text,
            text_len,
            has_usage,
            usage_input,
            usage_cache_read,
            0,
            SHOULD_RETRY_ABSENT,
            0,
            0,
            has_now,
            now_ms,
            out,
            out_cap,
        )
    }
}

/// `agent_end` with every message field: the arguments of
/// `autoretry_message_end_ex()`, plus `nowMs` (`has_now != 0`: the host's
/// wall clock in Unix ms) before `out`. When the outputs ask to mark a
/// usage limit, the slot keeps the error text for
/// `autoretry_usage_limit_marked()`. Error codes as
/// `autoretry_message_end_ex()`.
///
/// # Safety
///
/// As `autoretry_message_end()`.
///
/// ```c
/// /* The host read a two-hour Retry-After; hints honoured, waits over
///  * 300 s refused: the chain fails fast. */
/// int32_t h = autoretry_new_ex(AUTORETRY_PROFILE_CLASSIC, 1, 3, 2000, 300000,
///                              0, 0, 1, AUTORETRY_CLASSIFIER_CLASSIC, 0, 0, 0);
/// const char *text = "503 Service Unavailable";
/// uint8_t out[512];
/// int32_t n = autoretry_agent_end_ex(h, AUTORETRY_STOP_ERROR,
///                                    (const uint8_t *)text, (int32_t)strlen(text),
///                                    0, 0, 0, 0, AUTORETRY_SHOULD_RETRY_ABSENT,
///                                    1, 7200000, 0, 0, out, sizeof out);
/// /* [{"type":"emit","event":{"type":"auto_retry_end","success":false, ... */
/// ```
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn autoretry_agent_end_ex(
    handle: i32,
    stop_reason: u32,
    text: *const u8,
    text_len: i32,
    has_usage: u32,
    usage_input: u64,
    usage_cache_read: u64,
    usage_cache_write: u64,
    should_retry: i32,
    has_retry_after: u32,
    retry_after_ms: u64,
    has_now: u32,
    now_ms: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    let usage = Usage::new(usage_input, usage_cache_read).with_cache_write(usage_cache_write);
    let fields = Fields {
        stop_reason,
        usage: (has_usage != 0).then_some(usage),
        should_retry,
        retry_after_ms: (has_retry_after != 0).then_some(retry_after_ms),
        partial: PARTIAL_NONE,
        budget: 0,
        empty: false,
    };
    let now = Some((has_now != 0).then_some(now_ms));
    // SAFETY: the caller's contract, forwarded.
    unsafe {
        feed_message(
            handle,
            fields,
            (text, text_len),
            now,
            (out, out_cap),
            Sink::Json,
        )
    }
}

/// `timer_fired` with a timer id the module gave (a stale or unknown id is
/// ignored: no outputs, spec §6). Writes the outputs' JSON to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG` (a null `out` with a
/// length), `AUTORETRY_ERR_OUT_TOO_SMALL`.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// /* when the sleep's timer is due */
/// int32_t n = autoretry_timer_fired(h, timer, out, sizeof out);
/// /* [{"type":"continue_agent"}] */
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_timer_fired(
    handle: i32,
    timer: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract.
    match unsafe { pool::host_out(out, out_cap) } {
        Ok(out) => timer_fired(handle, (timer, 0), Sink::Json(out)),
        Err(code) => code,
    }
}

/// `usage_limit_marked`: the host's answer to `mark_usage_limit`
/// (`switched` is 0 or not); the error text is the one the slot kept from
/// the message that led to the decision, so the host passes none. Writes
/// the outputs' JSON to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG` (a null `out` with a
/// length), `AUTORETRY_ERR_OUT_TOO_SMALL`. An answer no decision awaits
/// (none asked, or it comes after a cancel) is ignored, as the spec says:
/// it writes `[]` and changes nothing.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// /* after an agent_end whose outputs held mark_usage_limit: the host
///  * switched to another credential */
/// int32_t n = autoretry_usage_limit_marked(h, 1, out, sizeof out);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_usage_limit_marked(
    handle: i32,
    switched: u32,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract.
    match unsafe { pool::host_out(out, out_cap) } {
        Ok(out) => answer(
            handle,
            (Answer::UsageLimitMarked, switched, 0),
            Sink::Json(out),
        ),
        Err(code) => code,
    }
}

/// `model_switched`: the host's answer to `switch_model` (`switched` is 0
/// or not: whether it now talks to another model); the error text is the
/// one the slot kept from the message that led to the decision, so the
/// host passes none. Writes the outputs' JSON to `out`; returns its length
/// or an error code: `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG` (a null
/// `out` with a length), `AUTORETRY_ERR_OUT_TOO_SMALL`. An answer no
/// decision awaits (no fallback was asked, or it comes after a cancel) is
/// ignored, as spec §11.3 says: it writes `[]` and changes nothing.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// /* after an agent_end whose outputs held switch_model: the host moved
///  * the session to its fallback model */
/// int32_t n = autoretry_model_switched(h, 1, out, sizeof out);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_model_switched(
    handle: i32,
    switched: u32,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract.
    match unsafe { pool::host_out(out, out_cap) } {
        Ok(out) => answer(
            handle,
            (Answer::ModelSwitched, switched, 0),
            Sink::Json(out),
        ),
        Err(code) => code,
    }
}

/// `abort_retry`: the user cancels the retry. Writes the outputs' JSON to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG` (a null `out` with a
/// length), `AUTORETRY_ERR_OUT_TOO_SMALL`.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// int32_t n = autoretry_abort_retry(h, out, sizeof out);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_abort_retry(handle: i32, out: *mut u8, out_cap: u32) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, Input::AbortRetry, out, out_cap) }
}

/// `abort`, the global abort. Writes the outputs' JSON to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG` (a null `out` with a
/// length), `AUTORETRY_ERR_OUT_TOO_SMALL`.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// int32_t n = autoretry_abort(h, out, sizeof out);
/// /* [{"type":"abort_agent"}] */
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_abort(handle: i32, out: *mut u8, out_cap: u32) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, Input::Abort, out, out_cap) }
}

/// `stream_start` (spec §12.2): the host sent a request to the provider,
/// at `now_ms` on its monotonic clock (any origin). With
/// `firstEventTimeoutMs` set, the outputs arm the watchdog:
/// `{"type":"watch","ms":n,"timer":k}`, a timer the host runs as a
/// `sleep`'s, answering `autoretry_timer_fired(h, k, ...)` when it runs out
/// (a pending watch is cancelled first, `cancel_timer`). Writes the
/// outputs' JSON to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_REFUSED` (during a backoff or
/// while an answer is awaited; its reason from `autoretry_last_refusal()`),
/// `AUTORETRY_ERR_ARG` (a null `out` with a length),
/// `AUTORETRY_ERR_OUT_TOO_SMALL`.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// int32_t n = autoretry_stream_start(h, 1000, out, sizeof out);
/// /* with firstEventTimeoutMs 300000: [{"type":"watch","ms":300000,"timer":1}] */
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_stream_start(
    handle: i32,
    now_ms: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, Input::StreamStart { now_ms }, out, out_cap) }
}

/// `stream_event` (spec §12.2): the host received an event of the answer
/// that shows progress (a text, thinking or tool-call delta, a message
/// event; not a keep-alive ping), at `now_ms` on the clock of
/// `autoretry_stream_start()`. It only stores the time, unless no watch is
/// pending and `idleTimeoutMs` is set: then it arms one (`watch`). A
/// watch timer that fires may declare the stall: `abort_agent`, and the
/// run's aborted `agent_end` is then retried as `Stream stalled: no event
/// for <n>ms`. Writes the outputs' JSON to `out`; returns its length or an
/// error code: `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG` (a null `out`
/// with a length), `AUTORETRY_ERR_OUT_TOO_SMALL`.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// int32_t n = autoretry_stream_event(h, 1250, out, sizeof out);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_stream_event(
    handle: i32,
    now_ms: u64,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, Input::StreamEvent { now_ms }, out, out_cap) }
}

/// `set_auto_retry` (`enabled` is 0 or not): writes `enabled` alone.
/// Writes the outputs' JSON to `out`; returns its length or an error code: `AUTORETRY_ERR_HANDLE`,
/// `AUTORETRY_ERR_ARG` (a null `out` with a length),
/// `AUTORETRY_ERR_OUT_TOO_SMALL`.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// autoretry_set_auto_retry(h, 0, out, sizeof out); /* retrying off */
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

/// `settings` with the keys of spec §4. **It replaces the whole `retry`
/// group**: the §10.1 keys go back to their `classic` defaults (as a JSON
/// group of those three keys decodes), whatever they were.
/// `autoretry_settings_ex()` takes every key. Writes the outputs' JSON to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG`,
/// `AUTORETRY_ERR_OUT_TOO_SMALL`.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// int32_t n = autoretry_settings(h, 1, 0, 100, out, sizeof out); /* no retries */
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
    // SAFETY: the caller's contract, the same.
    unsafe {
        autoretry_settings_ex(
            handle,
            PROFILE_CLASSIC,
            enabled,
            max_retries,
            base_delay_ms,
            CLASSIC.max_delay_ms,
            CLASSIC.backoff_cap_ms,
            CLASSIC_JITTER,
            CLASSIC_HINTS,
            CLASSIFIER_CLASSIC,
            out,
            out_cap,
        )
    }
}

/// `settings` with every key of the `retry` group. **It replaces the whole
/// group**: a key is never kept from the settings in force. The keys are
/// the arguments of `autoretry_new_ex()`, in its order. Writes the outputs' JSON to `out`; returns its length or an error code:
/// `AUTORETRY_ERR_SETTINGS` for a `jitter_pct` above 100 or an unknown
/// `profile` or `classifier` code (the settings in force stay; the machine
/// sees no input), `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG`,
/// `AUTORETRY_ERR_OUT_TOO_SMALL`.
///
/// # Safety
///
/// `out` must be valid for writes of `out_cap` bytes.
///
/// ```c
/// int32_t n = autoretry_settings_ex(h, AUTORETRY_PROFILE_MODERN, 1, 10, 500,
///                                   300000, 8000, 25, 1,
///                                   AUTORETRY_CLASSIFIER_EXTENDED,
///                                   out, sizeof out);
/// ```
#[no_mangle]
#[allow(clippy::too_many_arguments)]
pub unsafe extern "C" fn autoretry_settings_ex(
    handle: i32,
    profile: u32,
    enabled: u32,
    max_retries: u32,
    base_delay_ms: u64,
    max_delay_ms: u64,
    backoff_cap_ms: u64,
    jitter_pct: u32,
    honor_hints: u32,
    classifier: u32,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    let settings = match retry_settings(
        profile,
        enabled,
        max_retries,
        base_delay_ms,
        max_delay_ms,
        backoff_cap_ms,
        jitter_pct,
        honor_hints,
        classifier,
        SECTION_11_OFF,
    ) {
        Ok(settings) => settings,
        Err(code) => return code,
    };
    // SAFETY: the caller's contract, forwarded.
    unsafe { feed_simple(handle, Input::Settings(settings), out, out_cap) }
}
