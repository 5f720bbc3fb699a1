//! The call path every export shares: the scalar settings and host options
//! decoded, a machine put in the pool, and an input fed to a copy of a
//! slot's machine whose outputs go to a [`Sink`] (their JSON or their C
//! structs) before the copy replaces the machine. The exports of `abi.rs`
//! (JSON), `c.rs` (structs) and `budget.rs` call it; it calls `pool.rs`,
//! `out.rs`, `structs.rs` and `refusal.rs`, and none of them calls back.
// `unsafe fn`s and their blocks forward the exports' contracts to
// `pool.rs`'s two conversions.
#![allow(unsafe_code)]

#[cfg(feature = "curated")]
use super::codes::CLASSIFIER_CURATED;
use super::codes::{
    CLASSIFIER_CLASSIC, ERR_ARG, ERR_HANDLE, ERR_POOL_FULL, ERR_REFUSED, ERR_SETTINGS, ERR_UTF8,
    PARTIAL_NONE, PARTIAL_TEXT, PARTIAL_TOOLS, PROFILE_CLASSIC, SHOULD_RETRY_ABSENT,
    SHOULD_RETRY_NO, SHOULD_RETRY_YES, STOP_ABORTED, STOP_ERROR, STOP_LENGTH, STOP_STOP,
    STOP_TOOL_USE,
};
#[cfg(feature = "extended")]
use super::codes::{CLASSIFIER_EXTENDED, PROFILE_MODERN};
use super::out;
use super::pool::{self, with_slots, Slot, Slots, Texts};
use super::refusal;
use super::structs::{self, AutoretryOutput};
use autoretry::classify::Classifier;
use autoretry::{
    AssistantMessage, HostOptions, Input, JitterPct, Machine, Output, Partial, Profile,
    RetrySettings, RetryState, StopReason, TimerId, Usage,
};

/// The host options from their scalar form.
pub(super) fn host_options(context_window: u64, credential_store: u32, seed: u64) -> HostOptions {
    HostOptions::DEFAULT
        .with_context_window(context_window)
        .with_credential_store(credential_store != 0)
        .with_seed(seed)
}

/// The classifier of a `CLASSIFIER_*` code, or [`ERR_SETTINGS`] for an
/// unknown code or one of a classifier this build leaves out (feature
/// `extended`, `curated`).
pub(super) fn classifier_of(code: u32) -> Result<Classifier, i32> {
    match code {
        CLASSIFIER_CLASSIC => Ok(Classifier::Classic),
        #[cfg(feature = "extended")]
        CLASSIFIER_EXTENDED => Ok(Classifier::Extended),
        #[cfg(feature = "curated")]
        CLASSIFIER_CURATED => Ok(Classifier::Curated),
        _ => Err(ERR_SETTINGS),
    }
}

/// The whole `retry` group from its scalar form (see [`autoretry_new_ex`]),
/// or [`ERR_SETTINGS`].
#[allow(clippy::too_many_arguments)]
pub(super) fn retry_settings(
    profile: u32,
    enabled: u32,
    max_retries: u32,
    base_delay_ms: u64,
    max_delay_ms: u64,
    backoff_cap_ms: u64,
    jitter_pct: u32,
    honor_hints: u32,
    classifier: u32,
    (model_fallback, max_usage_wait_ms, max_total_delay_ms): (u32, u64, u64),
) -> Result<RetrySettings, i32> {
    let profile = match profile {
        PROFILE_CLASSIC => Profile::Classic,
        #[cfg(feature = "extended")]
        PROFILE_MODERN => Profile::Modern,
        // Without feature `extended` (the default WebAssembly module) there
        // is no modern profile: its classifier is the extended one.
        _ => return Err(ERR_SETTINGS),
    };
    let classifier = classifier_of(classifier)?;
    let Some(jitter_pct) = u8::try_from(jitter_pct).ok().and_then(JitterPct::new) else {
        return Err(ERR_SETTINGS);
    };
    Ok(RetrySettings::DEFAULT
        .with_profile(profile)
        .with_enabled(enabled != 0)
        .with_max_retries(max_retries)
        .with_base_delay_ms(base_delay_ms)
        .with_max_delay_ms(max_delay_ms)
        .with_backoff_cap_ms(backoff_cap_ms)
        .with_jitter_pct(jitter_pct)
        .with_honor_hints(honor_hints != 0)
        .with_classifier(classifier)
        .with_model_fallback(model_fallback != 0)
        .with_max_usage_wait_ms(max_usage_wait_ms)
        .with_max_total_delay_ms(max_total_delay_ms))
}

/// The keys of spec §11.1 (`modelFallback`, `maxUsageWaitMs`,
/// `maxTotalDelayMs`) at their defaults, for the `_ex` forms, which leave
/// them out.
pub(super) const SECTION_11_OFF: (u32, u64, u64) = (0, 0, 0);

/// Puts a new machine in a free slot: its handle, or [`ERR_POOL_FULL`].
pub(super) fn create(settings: RetrySettings, host: HostOptions) -> i32 {
    let machine = Machine::new(settings, host);
    with_slots(|slots, _| slots.insert(machine).unwrap_or(ERR_POOL_FULL))
}

/// Runs `write` with the state of the machine of `handle`, or returns
/// [`ERR_HANDLE`].
pub(super) fn state(handle: i32, write: impl FnOnce(RetryState) -> i32) -> i32 {
    with_live(handle, |slots, _, slot| match slots.machine(slot) {
        Some(machine) => write(machine.state()),
        None => ERR_HANDLE,
    })
}

/// `timer_fired` with a timer id as the host sees it, and a budget handle
/// (0: none).
pub(super) fn timer_fired(handle: i32, (timer, budget): (u64, i32), out: Sink<'_>) -> i32 {
    with_live(handle, |slots, texts, slot| {
        match slots.timer_from_host(slot, timer) {
            Some(id) => run(
                (slots, texts.stalled(slot)),
                (handle, slot),
                (Input::TimerFired { timer: TimerId(id) }, budget),
                out,
            )
            .map_or_else(|code| code, |(n, _)| n),
            // Not the pending timer (a freed machine's, a stale or unknown one):
            // ignored, as the machine itself ignores it.
            None => out.write(&[], &mut []),
        }
    })
}

/// Which decision the host answers.
#[derive(Clone, Copy)]
pub(super) enum Answer {
    /// `usage_limit_marked`, after `mark_usage_limit`.
    UsageLimitMarked,
    /// `model_switched`, after `switch_model`.
    ModelSwitched,
}

/// The answer to a decision (`switched` is 0 or not) with the slot's kept
/// text, and a budget handle (0: none).
pub(super) fn answer(
    handle: i32,
    (answer, switched, budget): (Answer, u32, i32),
    out: Sink<'_>,
) -> i32 {
    with_live(handle, |slots, texts, slot| {
        let Texts { kept, stalled } = texts;
        // The copy was taken from a `&str`, so it is UTF-8.
        let error_message = core::str::from_utf8(slots.kept(kept, slot)).unwrap_or("");
        let switched = switched != 0;
        let input = match answer {
            Answer::UsageLimitMarked => Input::UsageLimitMarked {
                switched,
                error_message,
            },
            Answer::ModelSwitched => Input::ModelSwitched {
                switched,
                error_message,
            },
        };
        let stalled = stalled
            .get_mut(slot.index())
            .map_or(&mut [][..], |s| &mut s[..]);
        run((slots, stalled), (handle, slot), (input, budget), out)
            .map_or_else(|code| code, |(n, _)| n)
    })
}

/// Runs `f` on the live slot of `handle` under the pool's lock, or
/// returns [`ERR_HANDLE`].
fn with_live(handle: i32, f: impl FnOnce(&mut Slots, &mut Texts, Slot) -> i32) -> i32 {
    with_slots(|slots, texts| match slots.live(handle) {
        Some(slot) => f(slots, texts, slot),
        None => ERR_HANDLE,
    })
}

/// Feeds `input` to a copy of the slot's machine (its message with the
/// verdict of the machine's rules, if it holds any) and writes its outputs
/// (timer ids as the host sees them, see [`Slot::timer_to_host`]); the copy
/// replaces the machine only once the outputs are written. So a failed
/// call, [`ERR_REFUSED`] or [`ERR_OUT_TOO_SMALL`](super::ERR_OUT_TOO_SMALL), changes nothing. Returns
/// the JSON's length and whether the outputs ask for the decision's text
/// back (`mark_usage_limit`, `switch_model`). With a `budget` handle (not
/// 0) the input is handled with a copy of that budget, which replaces it
/// with the machine; [`ERR_BUDGET`](super::ERR_BUDGET) for a handle that names none.
/// `stalled` is the slot's buffer for a stall sentence in the outputs'
/// structs.
fn run(
    (slots, stalled): (&mut Slots, &mut [u8]),
    (handle, slot): (i32, Slot),
    (input, budget): (Input<'_>, i32),
    out: Sink<'_>,
) -> Result<(i32, bool), i32> {
    let mut machine = slots.machine(slot).ok_or(ERR_HANDLE)?.clone();
    let mut tokens = match budget {
        0 => None,
        budget => Some(slots.budgets.get(budget)?),
    };
    #[cfg(feature = "rules")]
    let input = match slots.rules(slot) {
        Some(rules) => rules.apply_input(input),
        None => input,
    };
    let outputs = match tokens.as_mut() {
        Some(tokens) => machine.handle_with_budget(input, tokens),
        None => machine.handle(input),
    };
    refusal::record(handle, slot, outputs.as_ref().err().copied());
    let mut outputs = outputs.map_err(|_| ERR_REFUSED)?;
    let mut marks = false;
    for output in &mut outputs {
        match output {
            Output::Sleep { timer, .. }
            | Output::Watch { timer, .. }
            | Output::CancelTimer { timer } => {
                *timer = TimerId(slot.timer_to_host(timer.get()));
            }
            Output::MarkUsageLimit { .. } | Output::SwitchModel { .. } => marks = true,
            _ => {}
        }
    }
    let n = out.write(&outputs, stalled);
    if n < 0 {
        return Err(n);
    }
    slots.commit(slot, machine);
    if let Some(tokens) = tokens {
        slots.budgets.set(budget, tokens);
    }
    Ok((n, marks))
}

/// Where a call's outputs go: their JSON (the entry points above) or their
/// C structs ([`autoretry_handle_c`](super::autoretry_handle_c)).
pub(super) enum Sink<'a> {
    Json(&'a mut [u8]),
    Structs(&'a mut [AutoretryOutput]),
}

impl Sink<'_> {
    /// Writes the outputs: the JSON's length or the structs' count, or
    /// [`ERR_OUT_TOO_SMALL`](super::ERR_OUT_TOO_SMALL).
    fn write(self, outputs: &[Output<'_>], stalled: &mut [u8]) -> i32 {
        match self {
            Sink::Json(out) => out::outputs(out, outputs),
            Sink::Structs(out) => structs::outputs(out, outputs, stalled),
        }
    }
}

/// Feeds an input that carries no text, outputs as JSON.
///
/// # Safety
///
/// As [`pool::host_out`].
pub(super) unsafe fn feed_simple(
    handle: i32,
    input: Input<'static>,
    out: *mut u8,
    out_cap: u32,
) -> i32 {
    // SAFETY: the caller's contract.
    match unsafe { pool::host_out(out, out_cap) } {
        Ok(out) => handle_simple(handle, (input, 0), Sink::Json(out)),
        Err(code) => code,
    }
}

/// Feeds an input that carries no text, with a budget handle (0: none).
pub(super) fn handle_simple(handle: i32, input: (Input<'static>, i32), out: Sink<'_>) -> i32 {
    with_live(handle, |slots, texts, slot| {
        run((slots, texts.stalled(slot)), (handle, slot), input, out)
            .map_or_else(|code| code, |(n, _)| n)
    })
}

/// A message's fields other than its text, as the exports received them.
pub(super) struct Fields {
    /// A `STOP_*` code.
    pub(super) stop_reason: u32,
    pub(super) usage: Option<Usage>,
    /// A `SHOULD_RETRY_*` code.
    pub(super) should_retry: i32,
    pub(super) retry_after_ms: Option<u64>,
    /// A `PARTIAL_*` code.
    pub(super) partial: u32,
    /// A budget handle; 0: none.
    pub(super) budget: i32,
    /// `empty` (spec §12.3); `false`: absent.
    pub(super) empty: bool,
}

/// Feeds a `message_end` (`now == None`) or an `agent_end`.
///
/// # Safety
///
/// As [`pool::host_buffers`]. Every range is checked before any slice is
/// made.
pub(super) unsafe fn feed_message<'a, T>(
    handle: i32,
    fields: Fields,
    text: (*const u8, i32),
    now: Option<Option<u64>>,
    out: (*mut T, u32),
    sink: fn(&'a mut [T]) -> Sink<'a>,
) -> i32 {
    let stop_reason = match fields.stop_reason {
        STOP_STOP => StopReason::Stop,
        STOP_LENGTH => StopReason::Length,
        STOP_TOOL_USE => StopReason::ToolUse,
        STOP_ERROR => StopReason::Error,
        STOP_ABORTED => StopReason::Aborted,
        _ => return ERR_ARG,
    };
    let should_retry = match fields.should_retry {
        SHOULD_RETRY_ABSENT => None,
        SHOULD_RETRY_NO => Some(false),
        SHOULD_RETRY_YES => Some(true),
        _ => return ERR_ARG,
    };
    let partial = match fields.partial {
        PARTIAL_NONE => Partial::None,
        PARTIAL_TEXT => Partial::Text,
        PARTIAL_TOOLS => Partial::Tools,
        _ => return ERR_ARG,
    };
    // SAFETY: the caller's contract, forwarded.
    let (bytes, out) = match unsafe { pool::host_buffers(text, out) } {
        Ok(buffers) => buffers,
        Err(code) => return code,
    };
    let Ok(text) = core::str::from_utf8(bytes.unwrap_or_default()) else {
        return ERR_UTF8;
    };
    let message = AssistantMessage {
        stop_reason,
        error_message: bytes.map(|_| text),
        usage: fields.usage,
        should_retry,
        retry_after_ms: fields.retry_after_ms,
        partial,
        empty: fields.empty,
        headers: autoretry::Headers::NONE,
    };
    let input = match now {
        None => Input::MessageEnd { message },
        Some(now_ms) => Input::AgentEnd { message, now_ms },
    };
    with_live(handle, |slots, texts, slot| {
        let stalled = texts.stalled(slot);
        match run(
            (slots, stalled),
            (handle, slot),
            (input, fields.budget),
            sink(out),
        ) {
            Ok((n, marks)) => {
                if marks {
                    slots.keep(&mut texts.kept, slot, text.as_bytes());
                }
                n
            }
            Err(code) => code,
        }
    })
}
