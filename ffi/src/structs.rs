//! The C form of inputs and outputs: fixed `repr(C)` structs, for hosts
//! that would rather not parse JSON, and their codes. The outputs are
//! filled from the same [`Output`]s the JSON form writes ([`outputs`] is
//! the struct form's only mapping). Safe code; `c.rs` has their exports.

use super::codes::{ERR_OUT_TOO_SMALL, PARTIAL_NONE, SHOULD_RETRY_ABSENT};
use autoretry::{ErrorText, Event, FallbackReason, FinalError, Output};

/// `message_end`: the message fields of `autoretry_input`. The codes start
/// at 1: a kind left at 0 is refused with `AUTORETRY_ERR_ARG`.
pub const INPUT_MESSAGE_END: u32 = 1;
/// `agent_end`: the message fields and `has_now`/`now_ms`.
pub const INPUT_AGENT_END: u32 = 2;
/// `timer_fired`: `timer`.
pub const INPUT_TIMER_FIRED: u32 = 3;
/// `usage_limit_marked`: `flag` is `switched` (0 is false).
pub const INPUT_USAGE_LIMIT_MARKED: u32 = 4;
/// `abort_retry`.
pub const INPUT_ABORT_RETRY: u32 = 5;
/// `abort`, the global abort.
pub const INPUT_ABORT: u32 = 6;
/// `set_auto_retry`: `flag` is `enabled` (0 is false).
pub const INPUT_SET_AUTO_RETRY: u32 = 7;
/// `settings`: `settings`, the whole `retry` group.
pub const INPUT_SETTINGS: u32 = 8;
/// `model_switched` (spec §11.3): `flag` is `switched` (0 is false); the
/// error text is the one the machine kept from the message that led to
/// `switch_model`.
pub const INPUT_MODEL_SWITCHED: u32 = 9;
/// `stream_start` (spec §12.2): the host sent a request to the provider.
/// `now_ms` is the host's monotonic clock in ms, required: `has_now` must
/// be non-zero (else `AUTORETRY_ERR_ARG`).
pub const INPUT_STREAM_START: u32 = 10;
/// `stream_event` (spec §12.2): an event of the answer that shows progress
/// (not a keep-alive ping). `now_ms` as for `AUTORETRY_INPUT_STREAM_START`.
pub const INPUT_STREAM_EVENT: u32 = 11;

/// `emit` of `auto_retry_start`: `attempt`, `max_attempts`, `ms` (the
/// event's `delayMs`) and `text` (its `errorMessage`).
pub const OUTPUT_START: u32 = 1;
/// `emit` of `auto_retry_end`: `success`, `attempt` and `final_error`
/// (with `text`, and for `AUTORETRY_FINAL_ERROR_WAIT_TOO_LONG` also
/// `requested_ms` and `max_delay_ms`).
pub const OUTPUT_END: u32 = 2;
/// `drop_trailing_error`.
pub const OUTPUT_DROP_TRAILING_ERROR: u32 = 3;
/// `sleep`: `ms` and `timer`.
pub const OUTPUT_SLEEP: u32 = 4;
/// `cancel_timer`: `timer`.
pub const OUTPUT_CANCEL_TIMER: u32 = 5;
/// `continue_agent`.
pub const OUTPUT_CONTINUE_AGENT: u32 = 6;
/// `mark_usage_limit`: `has_retry_after` and `retry_after_ms`.
pub const OUTPUT_MARK_USAGE_LIMIT: u32 = 7;
/// `check_compaction`.
pub const OUTPUT_CHECK_COMPACTION: u32 = 8;
/// `abort_agent`.
pub const OUTPUT_ABORT_AGENT: u32 = 9;
/// `settled`.
pub const OUTPUT_SETTLED: u32 = 10;
/// `continue_agent` with `resume: true` (spec §11.2): the backoff of a
/// continuation ended; ask the model to continue its partial turn.
pub const OUTPUT_RESUME_AGENT: u32 = 11;
/// `switch_model` (spec §11.3): `reason` is an `AUTORETRY_FALLBACK_*`; answer with
/// `model_switched`.
pub const OUTPUT_SWITCH_MODEL: u32 = 12;
/// `watch` (spec §12.2): `ms` and `timer`, the stall watchdog's timer. Run
/// it as a `sleep`'s and answer `AUTORETRY_INPUT_TIMER_FIRED` with its
/// `timer` when it runs out; timer ids are one sequence for both.
pub const OUTPUT_WATCH: u32 = 13;

/// `switch_model`'s reason `"exhausted"`.
pub const FALLBACK_EXHAUSTED: u32 = 1;
/// `switch_model`'s reason `"throttled"`.
pub const FALLBACK_THROTTLED: u32 = 2;
/// `switch_model`'s reason `"wait_too_long"`.
pub const FALLBACK_WAIT_TOO_LONG: u32 = 3;
/// `switch_model`'s reason `"total_wait"`.
pub const FALLBACK_TOTAL_WAIT: u32 = 4;

/// An end event without `finalError` (a success).
pub const FINAL_ERROR_NONE: u32 = 0;
/// `finalError` is `text` as it is.
pub const FINAL_ERROR_TEXT: u32 = 1;
/// `finalError` is the fail-fast sentence of spec §10.3:
/// `Provider requested {requested_ms}ms wait, exceeds retry.maxDelayMs
/// ({max_delay_ms}ms). Original error: {text}`.
pub const FINAL_ERROR_WAIT_TOO_LONG: u32 = 2;
/// `finalError` is the throttled sentence of spec §11.4:
/// `Retry throttled by the shared retry budget. Original error: {text}`.
pub const FINAL_ERROR_THROTTLED: u32 = 3;
/// `finalError` is the total-wait sentence of spec §11.6:
/// `Retry waits would total {requested_ms}ms, exceeds
/// retry.maxTotalDelayMs ({max_delay_ms}ms). Original error: {text}`.
pub const FINAL_ERROR_TOTAL_WAIT: u32 = 4;

/// The whole `retry` group (spec §4, §10.1 and §11.1) as scalars: the
/// arguments of `autoretry_new_ex()`, with the same codes and ranges, and
/// the three keys of §11.1. Every key is
/// given (none is absent, and 0 is a value: `enabled = 0` turns retrying
/// off), so start from a profile's column, `autoretry_settings_defaults()`,
/// and change the keys you mean to:
///
/// ```c
/// autoretry_retry_settings s;
/// autoretry_settings_defaults(AUTORETRY_PROFILE_CLASSIC, &s);
/// s.max_retries = 5;
/// autoretry_input in = {.kind = AUTORETRY_INPUT_SETTINGS, .settings = s};
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoretrySettings {
    /// `AUTORETRY_PROFILE_*`.
    pub profile: u32,
    /// 0 is false.
    pub enabled: u32,
    /// `maxRetries`.
    pub max_retries: u32,
    /// `jitterPct`, 0 to 100.
    pub jitter_pct: u32,
    /// `baseDelayMs`.
    pub base_delay_ms: u64,
    /// `maxDelayMs`, 0: none.
    pub max_delay_ms: u64,
    /// `backoffCapMs`, 0: none.
    pub backoff_cap_ms: u64,
    /// `honorHints`, 0 is false.
    pub honor_hints: u32,
    /// `AUTORETRY_CLASSIFIER_*`.
    pub classifier: u32,
    /// `modelFallback` (spec §11.3), 0 is false.
    pub model_fallback: u32,
    /// `maxUsageWaitMs` (spec §11.5), 0: never past `max_delay_ms`.
    pub max_usage_wait_ms: u64,
    /// `maxTotalDelayMs` (spec §11.6), 0: no limit.
    pub max_total_delay_ms: u64,
    /// `firstEventTimeoutMs` (spec §12.1), 0: not watched.
    pub first_event_timeout_ms: u64,
    /// `idleTimeoutMs` (spec §12.1), 0: not watched.
    pub idle_timeout_ms: u64,
    /// `retryEmpty` (spec §12.3), 0 is false.
    pub retry_empty: u32,
}

/// One input (spec §2, §10.2 and §11), for `autoretry_handle_c()` and
/// `autoretry_handle_json()`. `kind` is an
/// `AUTORETRY_INPUT_*` code and says which fields are read; the others are
/// ignored.
///
/// Safe at zero: start from `{0}` and set what the input has. Every field
/// left at 0 is absent (no text, no `usage`, no `shouldRetry`, no
/// `retryAfterMs`, no `nowMs`), and a required one left at 0 (`kind`, a
/// message's `stop_reason`) is refused with `AUTORETRY_ERR_ARG`:
///
/// ```c
/// const char *text = "529 overloaded_error";
/// autoretry_input in = {
///     .kind = AUTORETRY_INPUT_AGENT_END,
///     .stop_reason = AUTORETRY_STOP_ERROR,
///     .text = (const uint8_t *)text,
///     .text_len = (int32_t)strlen(text),
/// };
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AutoretryInput {
    /// `AUTORETRY_INPUT_*`; 0 is refused.
    pub kind: u32,
    /// Messages: an `AUTORETRY_STOP_*` code; 0 is refused.
    pub stop_reason: u32,
    /// Messages: the `errorMessage`, UTF-8, `text_len` bytes. Null with a
    /// `text_len` of 0 (or any pointer with `-1`): no text.
    pub text: *const u8,
    /// Messages: the text's length; `-1`, or 0 with a null `text`: no text.
    pub text_len: i32,
    /// Messages: an `AUTORETRY_SHOULD_RETRY_*` code; 0 is absent.
    pub should_retry: i32,
    /// Messages: non-zero when the message has `usage`; 0: none.
    pub has_usage: u32,
    /// Messages: non-zero when the message has `retryAfterMs`; 0: none.
    pub has_retry_after: u32,
    /// `agent_end`: non-zero when the input has `nowMs`; 0: none.
    /// `stream_start` and `stream_event`: required, non-zero.
    pub has_now: u32,
    /// `usage_limit_marked`'s `switched`, `set_auto_retry`'s `enabled`: 0 is
    /// false, anything else true (both are required by their input).
    pub flag: u32,
    /// `usage.input`.
    pub usage_input: u64,
    /// `usage.cacheRead`.
    pub usage_cache_read: u64,
    /// `usage.cacheWrite`.
    pub usage_cache_write: u64,
    /// `retryAfterMs`.
    pub retry_after_ms: u64,
    /// `nowMs`: for `agent_end` the host's wall clock in Unix ms; for
    /// `stream_start` and `stream_event` its monotonic clock in ms (any
    /// origin, spec §12.2).
    pub now_ms: u64,
    /// `timer_fired`: the timer id as the module gave it (it never gives 0,
    /// so a timer left at 0 is ignored, as any unknown timer).
    pub timer: u64,
    /// `settings`: the whole group, every key given (see
    /// `autoretry_retry_settings`).
    pub settings: AutoretrySettings,
    /// Messages: an `AUTORETRY_PARTIAL_*` code, what the failed turn left
    /// (spec §11.2); 0 is none.
    pub partial: u32,
    /// Every kind: a budget handle from `autoretry_budget_new()`, shared by
    /// any number of machines, to handle the input with (spec §11.4: a
    /// retry decision charges it, a good `agent_end` refills it); 0: none,
    /// no accounting. A handle that names no budget is refused with
    /// `AUTORETRY_ERR_BUDGET`.
    pub budget: i32,
    /// Messages: the response's header fields (spec §13.1), `headers_len`
    /// of them in the order received; null with a length of 0: none. For
    /// an `agent_end` the module reads `should_retry` and `retry_after_ms`
    /// from them where the struct does not set its own (as
    /// `autoretry_read_headers()` with `now_ms`). A range that fails the
    /// buffer checks is refused as a text's is.
    pub headers: *const AutoretryHeader,
    /// The number of `headers`.
    pub headers_len: u32,
    /// Messages: `empty` (spec §12.3), non-zero when the answer holds no
    /// visible text, no tool call and no image; 0: absent (false). With a
    /// `partial` of text or tools it is refused (`AUTORETRY_ERR_REFUSED`,
    /// `AUTORETRY_REFUSAL_EMPTY_WITH_PARTIAL`).
    pub empty: u32,
}

/// One response header field (spec §13.1), for `autoretry_input`'s
/// `headers` and `autoretry_read_headers()`: `name_len` bytes at `name`
/// and `value_len` bytes at `value` (read as bytes: a header this module
/// reads is ASCII, so other bytes only make a value that yields nothing).
///
/// ```c
/// autoretry_header h[] = {
///     {(const uint8_t *)"retry-after", 11, (const uint8_t *)"120", 3},
/// };
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct AutoretryHeader {
    /// The name's bytes (any ASCII case).
    pub name: *const u8,
    /// The name's length.
    pub name_len: u32,
    /// The value's bytes.
    pub value: *const u8,
    /// The value's length.
    pub value_len: u32,
}

/// What `autoretry_read_headers()` found: spec §10.2's `shouldRetry` as an
/// `AUTORETRY_SHOULD_RETRY_*` code (`ABSENT` when the headers do not say)
/// and `retryAfterMs` when `has_retry_after` is 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoretryHeaderHints {
    /// `AUTORETRY_SHOULD_RETRY_*`.
    pub should_retry: i32,
    /// 1 when `retry_after_ms` is set, else 0.
    pub has_retry_after: u32,
    /// `retryAfterMs`.
    pub retry_after_ms: u64,
}

/// What `autoretry_classify()` found for an error text: spec §3's labels
/// (§10.5's or §13.2's for those classifiers), each 1 or 0, and the retry
/// hint read from the text without a clock when `has_hint` is 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoretryClassification {
    /// 1 when the text is retryable: not empty, not an overflow, and of
    /// the retryable patterns.
    pub retryable: u32,
    /// 1 when the text is a context overflow (never retryable).
    pub overflow: u32,
    /// 1 when the text is a usage limit, whatever its other labels.
    pub usage_limit: u32,
    /// 1 when `hint_ms` is set, else 0.
    pub has_hint: u32,
    /// The wait the text asks for, in ms.
    pub hint_ms: u64,
}

// The layout a WebAssembly host reads by hand (`ffi/wasm/run-corpus.mjs`).
const _: () = assert!(core::mem::size_of::<AutoretryClassification>() == 24);

// The layout a WebAssembly host writes by hand (`ffi/wasm/run-vectors.mjs`).
#[cfg(target_pointer_width = "32")]
const _: () = assert!(core::mem::size_of::<AutoretryInput>() == 208);

/// One output, as `autoretry_handle_c()` writes it. `kind` is an
/// `AUTORETRY_OUTPUT_*` code and says which fields are set; the others
/// are 0.
///
/// `text` points to `text_len` bytes of UTF-8 (not NUL-terminated): the
/// input's own text, a constant of the module, the machine's kept
/// usage-limit text, or the stall sentence (spec §12.2) the module wrote
/// for the machine. It stays valid while the input's text does and until
/// the next call on the same machine.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AutoretryOutput {
    /// `AUTORETRY_OUTPUT_*`.
    pub kind: u32,
    /// Start and end: `attempt`.
    pub attempt: u32,
    /// Start: `maxAttempts`.
    pub max_attempts: u32,
    /// End: `success` (1 or 0).
    pub success: u32,
    /// End: `AUTORETRY_FINAL_ERROR_*`.
    pub final_error: u32,
    /// `mark_usage_limit`: 1 when `retry_after_ms` is set.
    pub has_retry_after: u32,
    /// Start: `errorMessage`; end: the final error's text (the original
    /// error of a fail-fast end); else null.
    pub text: *const u8,
    /// The length of `text` in bytes.
    pub text_len: u32,
    /// Sleep and watch: `ms`; start: `delayMs`.
    pub ms: u64,
    /// Sleep, watch and cancel: the timer id.
    pub timer: u64,
    /// `mark_usage_limit`: `retryAfterMs`.
    pub retry_after_ms: u64,
    /// A fail-fast end: the wait the provider asked for, in ms.
    pub requested_ms: u64,
    /// A fail-fast end: `retry.maxDelayMs`; a total-wait end:
    /// `retry.maxTotalDelayMs`.
    pub max_delay_ms: u64,
    /// `switch_model`: `AUTORETRY_FALLBACK_*`.
    pub reason: u32,
}

impl AutoretryOutput {
    const EMPTY: AutoretryOutput = AutoretryOutput {
        kind: 0,
        attempt: 0,
        max_attempts: 0,
        success: 0,
        final_error: FINAL_ERROR_NONE,
        has_retry_after: 0,
        text: core::ptr::null(),
        text_len: 0,
        ms: 0,
        timer: 0,
        retry_after_ms: 0,
        requested_ms: 0,
        max_delay_ms: 0,
        reason: 0,
    };

    /// The struct form of one output: the C form's only mapping. A stall's
    /// text (spec §12.2), which the machine keeps as a number, points to
    /// `stall`, that sentence as [`outputs`] wrote it for its silence.
    fn of(output: &Output<'_>, stall: Option<(u64, &str)>) -> Self {
        let text = |text: ErrorText<'_>| {
            let written = match text {
                ErrorText::Text(text) => Some(text),
                ErrorText::Stalled { silence_ms } => {
                    stall.filter(|&(s, _)| s == silence_ms).map(|(_, t)| t)
                }
            };
            match written {
                Some(text) => (text.as_ptr(), text.len() as u32),
                // Not reached: `outputs` wrote the stall of these outputs.
                None => (core::ptr::null(), 0),
            }
        };
        let mut o = AutoretryOutput::EMPTY;
        match *output {
            Output::Emit(Event::Start {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            }) => {
                (o.kind, o.attempt, o.max_attempts, o.ms) =
                    (OUTPUT_START, attempt, max_attempts, delay_ms);
                (o.text, o.text_len) = text(error_message);
            }
            Output::Emit(Event::End {
                success,
                attempt,
                final_error,
            }) => {
                (o.kind, o.success, o.attempt) = (OUTPUT_END, u32::from(success), attempt);
                match final_error {
                    None => {}
                    Some(FinalError::Text(error)) => {
                        o.final_error = FINAL_ERROR_TEXT;
                        (o.text, o.text_len) = text(error.into());
                    }
                    Some(FinalError::Stalled { silence_ms }) => {
                        o.final_error = FINAL_ERROR_TEXT;
                        (o.text, o.text_len) = text(ErrorText::Stalled { silence_ms });
                    }
                    Some(FinalError::WaitTooLong {
                        requested_ms,
                        max_delay_ms,
                        error,
                    }) => {
                        o.final_error = FINAL_ERROR_WAIT_TOO_LONG;
                        (o.requested_ms, o.max_delay_ms) = (requested_ms, max_delay_ms);
                        (o.text, o.text_len) = text(error);
                    }
                    Some(FinalError::Throttled { error }) => {
                        o.final_error = FINAL_ERROR_THROTTLED;
                        (o.text, o.text_len) = text(error);
                    }
                    Some(FinalError::TotalWait {
                        total_ms,
                        max_total_delay_ms,
                        error,
                    }) => {
                        o.final_error = FINAL_ERROR_TOTAL_WAIT;
                        (o.requested_ms, o.max_delay_ms) = (total_ms, max_total_delay_ms);
                        (o.text, o.text_len) = text(error);
                    }
                }
            }
            Output::DropTrailingError => o.kind = OUTPUT_DROP_TRAILING_ERROR,
            Output::Sleep { ms, timer } => {
                (o.kind, o.ms, o.timer) = (OUTPUT_SLEEP, ms, timer.get());
            }
            Output::CancelTimer { timer } => (o.kind, o.timer) = (OUTPUT_CANCEL_TIMER, timer.get()),
            Output::Watch { ms, timer } => {
                (o.kind, o.ms, o.timer) = (OUTPUT_WATCH, ms, timer.get());
            }
            Output::ContinueAgent => o.kind = OUTPUT_CONTINUE_AGENT,
            Output::ResumeAgent => o.kind = OUTPUT_RESUME_AGENT,
            Output::SwitchModel { reason } => {
                o.kind = OUTPUT_SWITCH_MODEL;
                o.reason = match reason {
                    FallbackReason::Exhausted => FALLBACK_EXHAUSTED,
                    FallbackReason::Throttled => FALLBACK_THROTTLED,
                    FallbackReason::WaitTooLong => FALLBACK_WAIT_TOO_LONG,
                    FallbackReason::TotalWait => FALLBACK_TOTAL_WAIT,
                };
            }
            Output::MarkUsageLimit { retry_after_ms } => {
                o.kind = OUTPUT_MARK_USAGE_LIMIT;
                if let Some(ms) = retry_after_ms {
                    (o.has_retry_after, o.retry_after_ms) = (1, ms);
                }
            }
            Output::CheckCompaction => o.kind = OUTPUT_CHECK_COMPACTION,
            Output::AbortAgent => o.kind = OUTPUT_ABORT_AGENT,
            Output::Settled => o.kind = OUTPUT_SETTLED,
        }
        o
    }
}

/// Writes the outputs' structs into `out`: their count, or
/// [`ERR_OUT_TOO_SMALL`]. A stall sentence is written into `stalled` (the
/// slot's buffer of [`ErrorText::STALLED_MAX_LEN`] bytes) once, before any
/// output points to it: the outputs of one input carry at most one stall,
/// so they share it.
pub(super) fn outputs(
    out: &mut [AutoretryOutput],
    outputs: &[Output<'_>],
    stalled: &mut [u8],
) -> i32 {
    let Some(slots) = out.get_mut(..outputs.len()) else {
        return ERR_OUT_TOO_SMALL;
    };
    let silence = outputs.iter().find_map(|output| match error_text(output) {
        Some(ErrorText::Stalled { silence_ms }) => Some(silence_ms),
        _ => None,
    });
    let stall = silence.and_then(|silence_ms| {
        let text = ErrorText::Stalled { silence_ms }.write_into(stalled)?;
        Some((silence_ms, text))
    });
    for (slot, output) in slots.iter_mut().zip(outputs) {
        *slot = AutoretryOutput::of(output, stall);
    }
    outputs.len() as i32
}

/// The error text an output carries: a start's `errorMessage`, an end's
/// final error (the original error of a sentence built around one).
fn error_text<'a>(output: &Output<'a>) -> Option<ErrorText<'a>> {
    match *output {
        Output::Emit(Event::Start { error_message, .. }) => Some(error_message),
        Output::Emit(Event::End {
            final_error: Some(error),
            ..
        }) => Some(match error {
            FinalError::Text(text) => ErrorText::Text(text),
            FinalError::Stalled { silence_ms } => ErrorText::Stalled { silence_ms },
            FinalError::WaitTooLong { error, .. }
            | FinalError::Throttled { error }
            | FinalError::TotalWait { error, .. } => error,
        }),
        _ => None,
    }
}

/// The machine's state, as `autoretry_state_c()` writes it:
/// `autoRetryEnabled`, `isRetrying` (1 or 0) and `retryAttempt`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AutoretryState {
    /// `autoRetryEnabled`.
    pub auto_retry_enabled: u32,
    /// `isRetrying`.
    pub is_retrying: u32,
    /// `retryAttempt`.
    pub retry_attempt: u32,
}

/// Every optional field absent, as a C `{0}`: no kind, no stop reason
/// (both must be set), a null text of length 0 (no text), and every code
/// and flag 0 (absent).
impl Default for AutoretryInput {
    fn default() -> Self {
        AutoretryInput {
            kind: 0,
            stop_reason: 0,
            text: core::ptr::null(),
            text_len: 0,
            should_retry: SHOULD_RETRY_ABSENT,
            has_usage: 0,
            has_retry_after: 0,
            has_now: 0,
            flag: 0,
            usage_input: 0,
            usage_cache_read: 0,
            usage_cache_write: 0,
            retry_after_ms: 0,
            now_ms: 0,
            timer: 0,
            settings: AutoretrySettings::default(),
            partial: PARTIAL_NONE,
            budget: 0,
            headers: core::ptr::null(),
            headers_len: 0,
            empty: 0,
        }
    }
}

impl Default for AutoretryOutput {
    fn default() -> Self {
        AutoretryOutput::EMPTY
    }
}
