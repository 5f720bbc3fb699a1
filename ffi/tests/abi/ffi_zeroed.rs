//! The C form safe at zero: a zero-initialised `autoretry_input` (`{0}` in
//! C) with only its kind, stop reason and text set is the message with
//! every optional field absent (`shouldRetry`, `usage`, `retryAfterMs`,
//! `nowMs`; a null text of length 0 is no text), exactly as the library
//! takes it; the required fields left at 0 are refused.

use crate::ffi::turn;

use autoretry::{
    AssistantMessage, Event, FinalError, HostOptions, Input, Machine, Output, RetrySettings,
    StopReason,
};
use autoretry_ffi::*;

/// The settings both sides use: hints honoured, so that a `retryAfterMs`
/// of 0 (were a zero present) would change the wait; a credential store
/// and a context window, so that usage limits and overflows are in play.
const SETTINGS: RetrySettings = RetrySettings::DEFAULT.with_honor_hints(true);
const HOST: HostOptions = HostOptions::DEFAULT
    .with_context_window(1000)
    .with_credential_store(true);

const STOPS: [(u32, StopReason); 5] = [
    (STOP_STOP, StopReason::Stop),
    (STOP_LENGTH, StopReason::Length),
    (STOP_TOOL_USE, StopReason::ToolUse),
    (STOP_ERROR, StopReason::Error),
    (STOP_ABORTED, StopReason::Aborted),
];

const TEXTS: [Option<&str>; 5] = [
    None,
    Some(""),
    Some("529 overloaded_error"),
    Some("You have hit your usage_limit_reached, resets in 3 hours"),
    Some("prompt is too long: 1200 tokens > 1000 maximum"),
];

/// A C `{0}`.
fn zeroed() -> AutoretryInput {
    // SAFETY: every field of `AutoretryInput` is an integer or a raw
    // pointer, for which all-zero bytes are a valid value (0, null).
    unsafe { core::mem::zeroed() }
}

fn new_machine() -> i32 {
    let h = autoretry_new_ex(
        PROFILE_CLASSIC,
        1,
        SETTINGS.max_retries,
        SETTINGS.base_delay_ms,
        0,
        0,
        0,
        1,
        CLASSIFIER_CLASSIC,
        HOST.context_window,
        1,
        0,
    );
    assert!(h >= 0, "autoretry_new_ex: {h}");
    h
}

/// What a struct output says, in a form the library's outputs map to.
#[derive(Debug, PartialEq, Eq)]
struct Said {
    kind: u32,
    attempt: u32,
    ms: u64,
    retry_after: Option<u64>,
    text: Option<String>,
}

fn said_by_struct(o: &AutoretryOutput) -> Said {
    let text = (!o.text.is_null()).then(|| {
        // SAFETY: a written output's text points to `text_len` bytes of
        // UTF-8, valid until the next call on the machine.
        let bytes = unsafe { core::slice::from_raw_parts(o.text, o.text_len as usize) };
        String::from_utf8(bytes.to_vec()).unwrap()
    });
    Said {
        kind: o.kind,
        attempt: o.attempt,
        ms: o.ms,
        retry_after: (o.has_retry_after != 0).then_some(o.retry_after_ms),
        text,
    }
}

fn said_by_library(o: &Output<'_>) -> Said {
    let plain = |kind| Said {
        kind,
        attempt: 0,
        ms: 0,
        retry_after: None,
        text: None,
    };
    match *o {
        Output::Emit(Event::Start {
            attempt,
            delay_ms,
            error_message,
            ..
        }) => Said {
            attempt,
            ms: delay_ms,
            text: Some(error_message.to_string()),
            ..plain(OUTPUT_START)
        },
        Output::Emit(Event::End {
            attempt,
            final_error,
            ..
        }) => Said {
            attempt,
            text: final_error.map(|e| match e {
                FinalError::WaitTooLong { error, .. }
                | FinalError::Throttled { error }
                | FinalError::TotalWait { error, .. } => error.to_string(),
                other => other.to_string(),
            }),
            ..plain(OUTPUT_END)
        },
        Output::DropTrailingError => plain(OUTPUT_DROP_TRAILING_ERROR),
        Output::Sleep { ms, .. } => Said {
            ms,
            ..plain(OUTPUT_SLEEP)
        },
        Output::Watch { ms, .. } => Said {
            ms,
            ..plain(OUTPUT_WATCH)
        },
        Output::CancelTimer { .. } => plain(OUTPUT_CANCEL_TIMER),
        Output::ContinueAgent => plain(OUTPUT_CONTINUE_AGENT),
        Output::ResumeAgent => plain(OUTPUT_RESUME_AGENT),
        Output::SwitchModel { .. } => plain(OUTPUT_SWITCH_MODEL),
        Output::MarkUsageLimit { retry_after_ms } => Said {
            retry_after: retry_after_ms,
            ..plain(OUTPUT_MARK_USAGE_LIMIT)
        },
        Output::CheckCompaction => plain(OUTPUT_CHECK_COMPACTION),
        Output::AbortAgent => plain(OUTPUT_ABORT_AGENT),
        Output::Settled => plain(OUTPUT_SETTLED),
    }
}

/// Feeds `input` to a new machine: what its outputs say, or the code.
fn through_c(input: &AutoretryInput) -> Result<Vec<Said>, i32> {
    let h = new_machine();
    let mut out = [AutoretryOutput::default(); 8];
    // SAFETY: `input`, its text and `out` are live, disjoint and of the
    // given sizes.
    let n = unsafe { autoretry_handle_c(h, input, out.as_mut_ptr(), out.len() as u32) };
    let said = (n >= 0).then(|| out[..n as usize].iter().map(said_by_struct).collect());
    assert_eq!(autoretry_free(h), 0);
    said.ok_or(n)
}

#[test]
fn a_zeroed_input_is_the_message_with_every_optional_field_absent() {
    let _turn = turn();
    for (kind, agent_end) in [(INPUT_MESSAGE_END, false), (INPUT_AGENT_END, true)] {
        for (code, stop_reason) in STOPS {
            for text in TEXTS {
                let mut input = zeroed();
                (input.kind, input.stop_reason) = (kind, code);
                if let Some(text) = text {
                    (input.text, input.text_len) = (text.as_ptr(), text.len() as i32);
                }
                let message = AssistantMessage {
                    error_message: text,
                    ..AssistantMessage::new(stop_reason)
                };
                let library = match agent_end {
                    false => Input::MessageEnd { message },
                    true => Input::AgentEnd {
                        message,
                        now_ms: None,
                    },
                };
                let mut machine = Machine::new(SETTINGS, HOST);
                let want: Vec<Said> = machine
                    .handle(library)
                    .unwrap()
                    .iter()
                    .map(said_by_library)
                    .collect();
                assert_eq!(
                    through_c(&input),
                    Ok(want),
                    "{kind} {stop_reason:?} {text:?}"
                );
            }
        }
    }
}

/// The test above can fail: each optional field, set to its present form,
/// changes what the same zeroed input gives.
#[test]
fn each_optional_field_present_differs_from_zero() {
    let _turn = turn();
    let text = "529 overloaded_error";
    let mut base = zeroed();
    (base.kind, base.stop_reason) = (INPUT_AGENT_END, STOP_ERROR);
    (base.text, base.text_len) = (text.as_ptr(), text.len() as i32);
    let absent = through_c(&base).unwrap();
    assert_eq!(
        absent[0].kind, OUTPUT_START,
        "a zeroed overloaded error retries"
    );
    let no = AutoretryInput {
        should_retry: SHOULD_RETRY_NO,
        ..base
    };
    let hinted = AutoretryInput {
        has_retry_after: 1,
        retry_after_ms: 5000,
        ..base
    };
    let empty = AutoretryInput {
        text_len: 0,
        text: "".as_ptr(),
        ..base
    };
    for (what, input) in [
        ("no", no),
        ("retryAfterMs 0", hinted),
        ("empty text", empty),
    ] {
        assert_ne!(through_c(&input).unwrap(), absent, "{what}");
    }
    // Usage over the window is an overflow, whatever the text (spec §3).
    let over = AutoretryInput {
        has_usage: 1,
        usage_input: 2000,
        ..base
    };
    let unset = AutoretryInput {
        has_usage: 0,
        ..over
    };
    assert_ne!(through_c(&over).unwrap(), absent, "usage");
    assert_eq!(
        through_c(&unset).unwrap(),
        absent,
        "usage counts without has_usage"
    );
}

#[test]
fn the_required_fields_left_at_zero_are_refused() {
    let _turn = turn();
    // No kind.
    assert_eq!(through_c(&zeroed()), Err(ERR_ARG));
    // A message with no stop reason.
    for kind in [INPUT_MESSAGE_END, INPUT_AGENT_END] {
        let input = AutoretryInput { kind, ..zeroed() };
        assert_eq!(through_c(&input), Err(ERR_ARG), "{kind}");
    }
    // A stream input without its clock (`has_now`, spec §12.2), even with
    // a `now_ms`; with it, `now_ms` 0 is a time like any other.
    for kind in [INPUT_STREAM_START, INPUT_STREAM_EVENT] {
        let input = AutoretryInput { kind, ..zeroed() };
        assert_eq!(through_c(&input), Err(ERR_ARG), "{kind}");
        let input = AutoretryInput { now_ms: 5, ..input };
        assert_eq!(through_c(&input), Err(ERR_ARG), "{kind}");
        let input = AutoretryInput {
            has_now: 1,
            ..zeroed()
        };
        let input = AutoretryInput { kind, ..input };
        assert_eq!(through_c(&input), Ok(vec![]), "{kind}");
    }
    // A timer left at 0 is no timer the module gave: ignored (spec §6).
    let input = AutoretryInput {
        kind: INPUT_TIMER_FIRED,
        ..zeroed()
    };
    assert_eq!(through_c(&input), Ok(vec![]));
}
