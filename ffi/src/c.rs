//! The exports of the C form (the structs of `structs.rs`): one entry point
//! takes any input ([`autoretry_handle_c`]) and writes its outputs as an
//! array of [`AutoretryOutput`], with the same checks, timer ids and
//! guarantees as the JSON form (a failed call changes nothing);
//! [`autoretry_handle_json`] takes the same input struct and writes JSON.
// `#[no_mangle]` and `unsafe extern "C" fn` are `unsafe_code` by the lint's
// definition; the only `unsafe` blocks forward the callers' contracts to
// `pool.rs`.
#![allow(unsafe_code)]

use super::call::{self, Answer, Fields, Sink};
use super::codes::{
    CLASSIFIER_CLASSIC, ERR_ARG, ERR_SETTINGS, ERR_UTF8, PROFILE_CLASSIC, SHOULD_RETRY_ABSENT,
    SHOULD_RETRY_NO, SHOULD_RETRY_YES,
};
#[cfg(feature = "extended")]
use super::codes::{CLASSIFIER_EXTENDED, PROFILE_MODERN};
use super::pool;
use super::structs::{
    AutoretryClassification, AutoretryHeader, AutoretryHeaderHints, AutoretryInput,
    AutoretryOutput, AutoretrySettings, AutoretryState, INPUT_ABORT, INPUT_ABORT_RETRY,
    INPUT_AGENT_END, INPUT_MESSAGE_END, INPUT_MODEL_SWITCHED, INPUT_SETTINGS, INPUT_SET_AUTO_RETRY,
    INPUT_STREAM_EVENT, INPUT_STREAM_START, INPUT_TIMER_FIRED, INPUT_USAGE_LIMIT_MARKED,
};
use autoretry::{HeaderHints, Input, RetrySettings, Usage};

impl AutoretrySettings {
    /// The settings, or [`ERR_SETTINGS`].
    fn decode(&self) -> Result<RetrySettings, i32> {
        let settings = call::retry_settings(
            self.profile,
            self.enabled,
            self.max_retries,
            self.base_delay_ms,
            self.max_delay_ms,
            self.backoff_cap_ms,
            self.jitter_pct,
            self.honor_hints,
            self.classifier,
            (
                self.model_fallback,
                self.max_usage_wait_ms,
                self.max_total_delay_ms,
            ),
        )?;
        Ok(settings
            .with_first_event_timeout_ms(self.first_event_timeout_ms)
            .with_idle_timeout_ms(self.idle_timeout_ms)
            .with_retry_empty(self.retry_empty != 0))
    }
}

/// Feeds one input (`*input`) and writes its outputs as `autoretry_output`
/// structs into `out` (room for `out_cap` of them; an input has at most
/// 8). Returns their count, or an error code as the JSON entry point of
/// the same input (`AUTORETRY_ERR_ARG` also for an unknown or zero `kind`,
/// a stream input without `has_now`, or a null or misaligned `input` or
/// `out`). A failed call changes nothing.
///
/// # Safety
///
/// `input` must point to one `autoretry_input`, its `text` valid for
/// `text_len` bytes (`message_end` and `agent_end` only); `out` must be
/// valid for writes of `out_cap` structs; the text and `out` must not
/// overlap (checked: `AUTORETRY_ERR_ARG`).
///
/// ```c
/// int32_t h = autoretry_new(1, 3, 2000, 0, 0);
/// const char *text = "529 overloaded_error";
/// autoretry_input in = {.kind = AUTORETRY_INPUT_AGENT_END,
///                       .stop_reason = AUTORETRY_STOP_ERROR,
///                       .text = (const uint8_t *)text,
///                       .text_len = (int32_t)strlen(text)};
/// autoretry_output out[8];
/// int32_t n = autoretry_handle_c(h, &in, out, 8);
/// /* n == 3: start (attempt 1, ms 2000), drop_trailing_error, sleep */
/// autoretry_input fired = {.kind = AUTORETRY_INPUT_TIMER_FIRED,
///                          .timer = out[2].timer};
/// n = autoretry_handle_c(h, &fired, out, 8);
/// /* n == 1: out[0].kind == AUTORETRY_OUTPUT_CONTINUE_AGENT */
/// autoretry_free(h);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_handle_c(
    handle: i32,
    input: *const AutoretryInput,
    out: *mut AutoretryOutput,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { handle_input(handle, input, (out, out_cap), Sink::Structs) }
}

/// Feeds one input (`*input`, as for `autoretry_handle_c()`) and writes its
/// outputs' JSON to `out`, as the JSON entry points do: the one JSON entry
/// point for every input and every field (a message's `partial`, a
/// `budget`, the settings keys of spec §11.1). Returns the JSON's length or
/// an error code as `autoretry_handle_c()`. `*input` is read before
/// anything is written, so it may lie in `out` (a WebAssembly host may
/// write it at the start of `autoretry_out_buffer()`).
///
/// # Safety
///
/// As `autoretry_handle_c()`, with `out` valid for writes of `out_cap`
/// bytes.
///
/// ```c
/// int32_t b = autoretry_budget_new(4, 500, 0, 0);
/// autoretry_input in = {.kind = AUTORETRY_INPUT_AGENT_END,
///                       .stop_reason = AUTORETRY_STOP_ERROR,
///                       .partial = AUTORETRY_PARTIAL_TEXT,
///                       .budget = b};
/// uint8_t out[512];
/// int32_t n = autoretry_handle_json(h, &in, out, sizeof out);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_handle_json(
    handle: i32,
    input: *const AutoretryInput,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    unsafe { handle_input(handle, input, (out, out_cap), Sink::Json) }
}

/// Feeds the host's input struct, outputs to `sink`.
///
/// # Safety
///
/// `input` as [`pool::host_value`]; its text and `out` as
/// [`pool::host_buffers`].
unsafe fn handle_input<'a, T>(
    handle: i32,
    input: *const AutoretryInput,
    (out, out_cap): (*mut T, u32),
    sink: fn(&'a mut [T]) -> Sink<'a>,
) -> i32 {
    // SAFETY: the caller's contract.
    let input = match unsafe { pool::host_value(input) } {
        Ok(input) => input,
        Err(code) => return code,
    };
    if let INPUT_MESSAGE_END | INPUT_AGENT_END = input.kind {
        let usage = Usage::new(input.usage_input, input.usage_cache_read)
            .with_cache_write(input.usage_cache_write);
        let now =
            (input.kind == INPUT_AGENT_END).then_some((input.has_now != 0).then_some(input.now_ms));
        // Spec §13.1: the headers fill in the fields the struct leaves
        // absent, read (and let go) before the output buffer is taken. A
        // `message_end`'s are only checked.
        // SAFETY: the caller's contract, forwarded.
        let read = match unsafe {
            pool::host_header_hints(input.headers, input.headers_len, now.flatten())
        } {
            Ok(read) if now.is_some() => read,
            Ok(_) => HeaderHints::default(),
            Err(code) => return code,
        };
        let should_retry = match (input.should_retry, read.should_retry) {
            (SHOULD_RETRY_ABSENT, Some(verdict)) => should_retry_code(Some(verdict)),
            (code, _) => code,
        };
        let fields = Fields {
            stop_reason: input.stop_reason,
            usage: (input.has_usage != 0).then_some(usage),
            should_retry,
            retry_after_ms: (input.has_retry_after != 0)
                .then_some(input.retry_after_ms)
                .or(read.retry_after_ms),
            partial: input.partial,
            budget: input.budget,
            empty: input.empty != 0,
        };
        // A null text of length 0 (a zero-initialised struct) is no text.
        let text_len = match (input.text.is_null(), input.text_len) {
            (true, 0) => -1,
            (_, len) => len,
        };
        let text = (input.text, text_len);
        // SAFETY: the caller's contract, forwarded.
        return unsafe { call::feed_message(handle, fields, text, now, (out, out_cap), sink) };
    }
    let simple = match input.kind {
        INPUT_TIMER_FIRED | INPUT_USAGE_LIMIT_MARKED | INPUT_MODEL_SWITCHED => None,
        INPUT_ABORT_RETRY => Some(Input::AbortRetry),
        INPUT_ABORT => Some(Input::Abort),
        INPUT_SET_AUTO_RETRY => Some(Input::SetAutoRetry {
            enabled: input.flag != 0,
        }),
        INPUT_SETTINGS => match input.settings.decode() {
            Ok(settings) => Some(Input::Settings(settings)),
            Err(code) => return code,
        },
        // Spec §12.2: `nowMs` is required.
        INPUT_STREAM_START | INPUT_STREAM_EVENT if input.has_now == 0 => return ERR_ARG,
        INPUT_STREAM_START => Some(Input::StreamStart {
            now_ms: input.now_ms,
        }),
        INPUT_STREAM_EVENT => Some(Input::StreamEvent {
            now_ms: input.now_ms,
        }),
        _ => return ERR_ARG,
    };
    // SAFETY: the caller's contract.
    let out = match unsafe { pool::host_out(out, out_cap) } {
        Ok(out) => sink(out),
        Err(code) => return code,
    };
    let budget = input.budget;
    match (simple, input.kind) {
        (Some(simple), _) => call::handle_simple(handle, (simple, budget), out),
        (None, INPUT_TIMER_FIRED) => call::timer_fired(handle, (input.timer, budget), out),
        (None, INPUT_MODEL_SWITCHED) => {
            call::answer(handle, (Answer::ModelSwitched, input.flag, budget), out)
        }
        (None, _) => call::answer(handle, (Answer::UsageLimitMarked, input.flag, budget), out),
    }
}

/// An `AUTORETRY_SHOULD_RETRY_*` code.
fn should_retry_code(verdict: Option<bool>) -> i32 {
    match verdict {
        None => SHOULD_RETRY_ABSENT,
        Some(false) => SHOULD_RETRY_NO,
        Some(true) => SHOULD_RETRY_YES,
    }
}

/// Reads response headers as spec §13.1 says (the library's
/// `read_headers`): `len` header fields at `headers` (null with a length
/// of 0: none), the wall clock `now_ms` in Unix ms when `has_now` is
/// non-zero (dates need it), the answer into `*out`. Returns 0, or
/// `AUTORETRY_ERR_ARG` (a null or misaligned array with a length, or
/// `out`) or `AUTORETRY_ERR_BUFFER` (a range the module may not read or
/// write). Touches no machine.
///
/// # Safety
///
/// `headers` valid for reads of `len` structs and each name and value for
/// its length; `out` valid for writes of one `autoretry_header_hints`.
///
/// ```c
/// autoretry_header h[] = {
///     {(const uint8_t *)"x-ratelimit-remaining-requests", 30, (const uint8_t *)"0", 1},
///     {(const uint8_t *)"x-ratelimit-reset-requests", 26, (const uint8_t *)"6m0s", 4},
/// };
/// autoretry_header_hints hints;
/// if (autoretry_read_headers(h, 2, 0, 0, &hints) == 0 && hints.has_retry_after)
///   printf("wait %llu ms\n", (unsigned long long)hints.retry_after_ms); /* 360000 */
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_read_headers(
    headers: *const AutoretryHeader,
    len: u32,
    has_now: u32,
    now_ms: u64,
    out: *mut AutoretryHeaderHints,
) -> i32 {
    // SAFETY: the caller's contract, forwarded.
    let read =
        match unsafe { pool::host_header_hints(headers, len, (has_now != 0).then_some(now_ms)) } {
            Ok(read) => read,
            Err(code) => return code,
        };
    // SAFETY: the caller's contract.
    let out = match unsafe { pool::host_out(out, 1) } {
        Ok(out) => out,
        Err(code) => return code,
    };
    if let Some(slot) = out.first_mut() {
        *slot = AutoretryHeaderHints {
            should_retry: should_retry_code(read.should_retry),
            has_retry_after: u32::from(read.retry_after_ms.is_some()),
            retry_after_ms: read.retry_after_ms.unwrap_or(0),
        };
    }
    0
}

/// Classifies an error text (the `errorMessage` of a message whose stop
/// reason is `error`) with one classifier, as the machine does (the
/// library's `Classifier::classify`): `classifier` is an
/// `AUTORETRY_CLASSIFIER_*` code, `(text, text_len)` the text (UTF-8;
/// `text_len == -1`: no text, classified as the empty one), the labels
/// and the hint into `*out`. Returns 0, or `AUTORETRY_ERR_SETTINGS` (an
/// unknown `classifier`, or one the build leaves out: the extended one
/// without feature `extended`, the curated one without `curated`),
/// `AUTORETRY_ERR_UTF8`, `AUTORETRY_ERR_TEXT_LEN`, `AUTORETRY_ERR_ARG` (a null text with a
/// length, a null or misaligned `out`, a text that overlaps `out`) or
/// `AUTORETRY_ERR_BUFFER` (a range the module may not read or write); a
/// failed call writes nothing. Touches no machine.
///
/// # Safety
///
/// `text` valid for reads of `text_len` bytes when `text_len > 0`; `out`
/// valid for writes of one `autoretry_classification`.
///
/// ```c
/// const char *text = "429 Too Many Requests";
/// autoretry_classification c;
/// if (autoretry_classify(AUTORETRY_CLASSIFIER_CLASSIC, (const uint8_t *)text,
///                        (int32_t)strlen(text), &c) == 0 && c.retryable)
///   printf("retryable\n");
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_classify(
    classifier: u32,
    text: *const u8,
    text_len: i32,
    out: *mut AutoretryClassification,
) -> i32 {
    let classifier = match call::classifier_of(classifier) {
        Ok(classifier) => classifier,
        Err(code) => return code,
    };
    // SAFETY: the caller's contract, forwarded.
    let (bytes, out) = match unsafe { pool::host_buffers((text, text_len), (out, 1)) } {
        Ok(buffers) => buffers,
        Err(code) => return code,
    };
    let Ok(text) = core::str::from_utf8(bytes.unwrap_or_default()) else {
        return ERR_UTF8;
    };
    let found = classifier.classify(text);
    if let Some(slot) = out.first_mut() {
        *slot = AutoretryClassification {
            retryable: u32::from(found.retryable),
            overflow: u32::from(found.overflow),
            usage_limit: u32::from(found.usage_limit),
            has_hint: u32::from(found.hint_ms.is_some()),
            hint_ms: found.hint_ms.unwrap_or(0),
        };
    }
    0
}

/// Creates a machine with the whole `retry` group as a struct (every key,
/// spec §11.1's included) and the host options of `autoretry_new_ex()`.
/// Returns its handle (`>= 0`), `AUTORETRY_ERR_SETTINGS` for a key out of
/// range (no machine is made), `AUTORETRY_ERR_POOL_FULL`, or as
/// `autoretry_state_c()` for `settings`.
///
/// # Safety
///
/// `settings` must point to one `autoretry_retry_settings`.
///
/// ```c
/// autoretry_retry_settings s;
/// autoretry_settings_defaults(AUTORETRY_PROFILE_CLASSIC, &s);
/// s.model_fallback = 1;
/// int32_t h = autoretry_new_c(&s, 0, 0, 0);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_new_c(
    settings: *const AutoretrySettings,
    context_window: u64,
    credential_store: u32,
    seed: u64,
) -> i32 {
    // SAFETY: the caller's contract.
    let settings = match unsafe { pool::host_value(settings) }.map(|s| s.decode()) {
        Ok(Ok(settings)) => settings,
        Ok(Err(code)) | Err(code) => return code,
    };
    call::create(
        settings,
        call::host_options(context_window, credential_store, seed),
    )
}

/// The machine's state into `*out`. Returns 0 or an error code:
/// `AUTORETRY_ERR_HANDLE`, `AUTORETRY_ERR_ARG` (a null or misaligned
/// `out`), `AUTORETRY_ERR_BUFFER`.
///
/// # Safety
///
/// `out` must be valid for writes of one `autoretry_retry_state`.
///
/// ```c
/// autoretry_retry_state state;
/// if (autoretry_state_c(h, &state) == 0 && state.is_retrying)
///   printf("attempt %u\n", state.retry_attempt);
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_state_c(handle: i32, out: *mut AutoretryState) -> i32 {
    // SAFETY: the caller's contract.
    let out = match unsafe { pool::host_out(out, 1) } {
        Ok(out) => out,
        Err(code) => return code,
    };
    call::state(handle, |state| {
        if let Some(slot) = out.first_mut() {
            *slot = AutoretryState {
                auto_retry_enabled: u32::from(state.auto_retry_enabled),
                is_retrying: u32::from(state.is_retrying),
                retry_attempt: state.retry_attempt,
            };
        }
        0
    })
}

/// Fills `*out` with the column of a profile of spec §10.1 (the defaults
/// of the keys a `retry` group leaves out): `AUTORETRY_PROFILE_CLASSIC` or
/// `AUTORETRY_PROFILE_MODERN`. Returns 0, `AUTORETRY_ERR_SETTINGS` for
/// another code (and for `AUTORETRY_PROFILE_MODERN` in a build without the
/// `extended` feature), or as `autoretry_state_c()` for `out`.
///
/// # Safety
///
/// `out` must be valid for writes of one `autoretry_retry_settings`.
///
/// ```c
/// autoretry_retry_settings s;
/// autoretry_settings_defaults(AUTORETRY_PROFILE_MODERN, &s);
/// /* s.max_retries == 10, s.base_delay_ms == 500, s.jitter_pct == 25 */
/// ```
#[no_mangle]
pub unsafe extern "C" fn autoretry_settings_defaults(
    profile: u32,
    out: *mut AutoretrySettings,
) -> i32 {
    let settings = match profile {
        PROFILE_CLASSIC => RetrySettings::CLASSIC,
        #[cfg(feature = "extended")]
        PROFILE_MODERN => RetrySettings::MODERN,
        // No modern profile without feature `extended` (see `retry_settings`).
        _ => return ERR_SETTINGS,
    };
    // SAFETY: the caller's contract.
    let out = match unsafe { pool::host_out(out, 1) } {
        Ok(out) => out,
        Err(code) => return code,
    };
    let classifier = match settings.classifier {
        #[cfg(feature = "extended")]
        autoretry::classify::Classifier::Extended => CLASSIFIER_EXTENDED,
        #[cfg(feature = "curated")]
        autoretry::classify::Classifier::Curated => crate::codes::CLASSIFIER_CURATED,
        _ => CLASSIFIER_CLASSIC,
    };
    if let Some(slot) = out.first_mut() {
        *slot = AutoretrySettings {
            profile,
            enabled: u32::from(settings.enabled),
            max_retries: settings.max_retries,
            jitter_pct: u32::from(settings.jitter_pct.get()),
            base_delay_ms: settings.base_delay_ms,
            max_delay_ms: settings.max_delay_ms,
            backoff_cap_ms: settings.backoff_cap_ms,
            honor_hints: u32::from(settings.honor_hints),
            classifier,
            model_fallback: u32::from(settings.model_fallback),
            max_usage_wait_ms: settings.max_usage_wait_ms,
            max_total_delay_ms: settings.max_total_delay_ms,
            first_event_timeout_ms: settings.first_event_timeout_ms,
            idle_timeout_ms: settings.idle_timeout_ms,
            retry_empty: u32::from(settings.retry_empty),
        };
    }
    0
}
