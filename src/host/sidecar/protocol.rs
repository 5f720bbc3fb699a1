//! The sidecar's protocol: an input line read as a command, an agent event
//! or a line answered at once; and the lines it writes, each by a
//! `Serialize` impl through serde_json (the encoder of `wire`): responses
//! ([`Response`]), the events of spec §8, the actions, and the budget
//! store's errors.

use serde::ser::{Serialize, SerializeStruct, Serializer};
use serde_json::Value;

use crate::output::Output;
use crate::wire::json::{to_json, InputLine};
use crate::wire::rpc::{Command, Envelope, ErrorCode, Failure, Response};

/// The agent's events the sidecar takes besides the commands.
const AGENT_EVENTS: [&str; 6] = [
    "message_end",
    "agent_end",
    "usage_limit_marked",
    "model_switched",
    "stream_start",
    "stream_event",
];

/// The events of the stream (spec §12.2): a line without `nowMs` is
/// stamped with the sidecar's clock.
const STREAM_EVENTS: [&str; 2] = ["stream_start", "stream_event"];

/// One input line, read.
pub(super) enum Request {
    /// A blank line: skipped.
    Blank,
    /// A command, with its envelope (the `id` its answer echoes).
    Command(Envelope, Command),
    /// An agent event, with its envelope (for a refusal).
    Event(Envelope, InputLine),
    /// A line answered at once: not UTF-8, not JSON, unknown or malformed.
    Answer(Response),
}

/// Reads one line (without its newline; a trailing `\r` is ignored);
/// `now_ms` is the sidecar's clock when the line arrived, in ms, which a
/// stream line without its own `nowMs` carries.
pub(super) fn read_line(line: &[u8], now_ms: u64) -> Request {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(|b| matches!(b, b' ' | b'\t')) {
        return Request::Blank;
    }
    let text = match std::str::from_utf8(line) {
        Ok(text) => text,
        Err(e) => {
            return Request::Answer(parse_error(
                ErrorCode::InvalidJson,
                format!("invalid UTF-8: {e}"),
            ))
        }
    };
    let envelope = match Envelope::parse(text) {
        Ok(envelope) => envelope,
        Err(response) => return Request::Answer(response),
    };
    if AGENT_EVENTS.contains(&envelope.type_name()) {
        let mut object = envelope.fields().clone();
        object.insert("type".into(), Value::String(envelope.type_name().into()));
        if STREAM_EVENTS.contains(&envelope.type_name()) && !object.contains_key("nowMs") {
            object.insert("nowMs".into(), now_ms.into());
        }
        return match InputLine::from_json(&Value::Object(object)) {
            Ok(event) => Request::Event(envelope, event),
            Err(e) => Request::Answer(envelope.error(ErrorCode::of(&e), e.to_string())),
        };
    }
    match Command::from_envelope(&envelope) {
        None => {
            Request::Answer(envelope.unknown_among(&[&Command::NAMES[..], &AGENT_EVENTS].concat()))
        }
        Some(Err(response)) => Request::Answer(response),
        Some(Ok(command)) => Request::Command(envelope, command),
    }
}

/// The answer to a line of `bytes` bytes, longer than `limit`, that was
/// not read.
pub(super) fn too_long(bytes: u64, limit: usize) -> Response {
    parse_error(
        ErrorCode::LineTooLong,
        format!("line too long: {bytes} bytes, the limit is {limit}"),
    )
}

/// A failed `parse` response.
fn parse_error(code: ErrorCode, message: String) -> Response {
    Response {
        id: None,
        command: "parse".into(),
        result: Err(Failure::new(code, message)),
    }
}

/// The line of `response` to the line numbered `line`: a failure names it.
pub(super) fn response_line(mut response: Response, line: u64) -> String {
    if let Err(failure) = response.result {
        response.result = Err(failure.at_line(line));
    }
    response.to_json_line()
}

/// The line for one output, or `None` for the outputs the sidecar keeps to
/// itself (`cancel_timer`).
///
/// ```
/// use autoretry::{Output, TimerId, host::sidecar::output_line};
/// assert_eq!(output_line(&Output::ContinueAgent).unwrap(), r#"{"type":"action","action":"continue_agent"}"#);
/// assert_eq!(output_line(&Output::MarkUsageLimit { retry_after_ms: None }).unwrap(),
///     r#"{"type":"action","action":"mark_usage_limit","retryAfterMs":null}"#);
/// assert_eq!(output_line(&Output::CancelTimer { timer: TimerId(1) }), None);
/// ```
pub fn output_line(output: &Output<'_>) -> Option<String> {
    match output {
        Output::CancelTimer { .. } => None,
        output => Some(to_json(&Line(output))),
    }
}

/// The line of a budget store's failure:
/// `{"type":"budget_store_error","error":"..."}`.
pub(super) fn budget_store_error_line(error: &str) -> String {
    to_json(&BudgetStoreError(error))
}

/// An output as a line of the sidecar: an event as spec §8 writes it, any
/// other output as `{"type":"action","action":"<name>"}` with its fields:
/// `"ms"` (sleep), `"retryAfterMs"` (mark_usage_limit, `null` when
/// none), `"reason"` (switch_model), `"resume":true` (a continuation's
/// continue_agent), `"timer"` (cancel_timer, which the sidecar keeps to
/// itself).
struct Line<'a, 'o>(&'a Output<'o>);

impl Serialize for Line<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let output = self.0;
        let field = match output {
            Output::Emit(event) => return event.serialize(serializer),
            Output::Sleep { .. }
            | Output::Watch { .. }
            | Output::MarkUsageLimit { .. }
            | Output::SwitchModel { .. }
            | Output::ResumeAgent
            | Output::CancelTimer { .. } => 1,
            Output::DropTrailingError
            | Output::ContinueAgent
            | Output::CheckCompaction
            | Output::AbortAgent
            | Output::Settled => 0,
        };
        let mut s = serializer.serialize_struct("Action", 2 + field)?;
        s.serialize_field("type", "action")?;
        s.serialize_field("action", output.type_name())?;
        match *output {
            Output::Sleep { ms, .. } | Output::Watch { ms, .. } => s.serialize_field("ms", &ms)?,
            Output::MarkUsageLimit { retry_after_ms } => {
                s.serialize_field("retryAfterMs", &retry_after_ms)?;
            }
            Output::SwitchModel { reason } => s.serialize_field("reason", reason.as_str())?,
            Output::ResumeAgent => s.serialize_field("resume", &true)?,
            Output::CancelTimer { timer } => s.serialize_field("timer", &timer)?,
            _ => {}
        }
        s.end()
    }
}

/// `{"type":"budget_store_error","error":"..."}`.
struct BudgetStoreError<'a>(&'a str);

impl Serialize for BudgetStoreError<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("BudgetStoreError", 2)?;
        s.serialize_field("type", "budget_store_error")?;
        s.serialize_field("error", self.0)?;
        s.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{Event, FallbackReason, FinalError, TimerId};

    /// Every output's line, byte for byte as the sidecar has always
    /// written them.
    #[test]
    fn every_output_has_its_line() {
        let start = Event::Start {
            attempt: 1,
            max_attempts: 3,
            delay_ms: 2000,
            error_message: "503 \"x\"".into(),
        };
        let end = Event::End {
            success: false,
            attempt: 2,
            final_error: Some(FinalError::Text("Retry cancelled")),
        };
        let cases = [
            (
                Output::Emit(start),
                r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"503 \"x\""}"#,
            ),
            (
                Output::Emit(end),
                r#"{"type":"auto_retry_end","success":false,"attempt":2,"finalError":"Retry cancelled"}"#,
            ),
            (
                Output::Sleep {
                    ms: u64::MAX,
                    timer: TimerId(4),
                },
                r#"{"type":"action","action":"sleep","ms":18446744073709551615}"#,
            ),
            (
                Output::MarkUsageLimit {
                    retry_after_ms: Some(1500),
                },
                r#"{"type":"action","action":"mark_usage_limit","retryAfterMs":1500}"#,
            ),
            (
                Output::SwitchModel {
                    reason: FallbackReason::Exhausted,
                },
                r#"{"type":"action","action":"switch_model","reason":"exhausted"}"#,
            ),
            (
                Output::ResumeAgent,
                r#"{"type":"action","action":"continue_agent","resume":true}"#,
            ),
            (
                Output::DropTrailingError,
                r#"{"type":"action","action":"drop_trailing_error"}"#,
            ),
            (
                Output::CheckCompaction,
                r#"{"type":"action","action":"check_compaction"}"#,
            ),
            (
                Output::AbortAgent,
                r#"{"type":"action","action":"abort_agent"}"#,
            ),
            (Output::Settled, r#"{"type":"action","action":"settled"}"#),
        ];
        for (output, line) in cases {
            assert_eq!(output_line(&output).as_deref(), Some(line));
        }
        assert_eq!(
            budget_store_error_line("connection refused \"x\""),
            r#"{"type":"budget_store_error","error":"connection refused \"x\""}"#
        );
    }
}
