//! The Anthropic Messages API's streaming wire format: the provider's
//! writer ([`Encoder`], [`error_response`]) and the agent's reader
//! ([`Decoder`], [`printed_error`]).
//!
//! ```
//! use autoretry_demo::anthropic::Decoder;
//! use autoretry_demo::wire::Item;
//! let mut d = Decoder::default();
//! assert_eq!(d.item("ping", r#"{"type":"ping"}"#), Item::KeepAlive);
//! let delta = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}"#;
//! assert_eq!(d.item("content_block_delta", delta), Item::Text("Hi".into()));
//! ```

use serde_json::{json, Value};

use autoretry::StopReason;

use crate::clock::rfc3339;
use crate::plan::{Beat, End, Fault};
use crate::wire::{Frame, Item};

fn frame(event: &'static str, data: Value) -> Frame {
    Frame {
        event: Some(event),
        data: data.to_string(),
        comment: false,
    }
}

/// The error body, its keys in the provider's order:
/// `{"type":"error","error":{"type":..,"message":..}}`.
fn error_body(kind: &str, message: &str) -> String {
    format!(
        r#"{{"type":"error","error":{{"type":{},"message":{}}}}}"#,
        Value::from(kind),
        Value::from(message)
    )
}

/// The status, error type and message of `fault`.
fn fault_error(fault: Fault) -> (u16, &'static str, &'static str) {
    match fault {
        Fault::Overloaded => (529, "overloaded_error", "Overloaded"),
        Fault::RateLimited => (
            429,
            "rate_limit_error",
            "This request would exceed the rate limit for your organization of 50 requests per minute. Please try again later.",
        ),
        Fault::Server(502) => (502, "api_error", "Bad gateway"),
        Fault::Server(status) => (status, "api_error", "Internal server error"),
        Fault::Quota => (
            429,
            "rate_limit_error",
            "You have reached your daily usage limit. Your limit will reset in 6 hours.",
        ),
    }
}

/// A 429's or 529's headers as Anthropic sends them: `retry-after`,
/// `x-should-retry` and the `anthropic-ratelimit-*` buckets (resets as
/// RFC 3339 times from `now_ms`).
pub fn error_response(fault: Fault, now_ms: u64) -> (u16, Vec<(String, String)>, String) {
    let (status, kind, message) = fault_error(fault);
    let mut headers = vec![
        ("content-type", "application/json".to_owned()),
        ("request-id", "req_011demo".to_owned()),
    ];
    match fault {
        Fault::Overloaded => headers.push(("x-should-retry", "true".into())),
        Fault::RateLimited => {
            headers.extend([
                ("retry-after", "2".to_owned()),
                ("x-should-retry", "true".into()),
                ("anthropic-ratelimit-requests-limit", "50".into()),
                ("anthropic-ratelimit-requests-remaining", "0".into()),
                (
                    "anthropic-ratelimit-requests-reset",
                    rfc3339(now_ms + 2_000),
                ),
                ("anthropic-ratelimit-tokens-limit", "40000".into()),
                ("anthropic-ratelimit-tokens-remaining", "31000".into()),
                ("anthropic-ratelimit-tokens-reset", rfc3339(now_ms + 40_000)),
            ]);
        }
        Fault::Server(503) => headers.push(("retry-after", "1".into())),
        Fault::Server(_) => {}
        Fault::Quota => {
            // No retry-after: the spent bucket says when (six hours), the
            // other bucket is not spent and resets in a minute.
            headers.extend([
                ("anthropic-ratelimit-requests-limit", "1000".to_owned()),
                ("anthropic-ratelimit-requests-remaining", "0".into()),
                (
                    "anthropic-ratelimit-requests-reset",
                    rfc3339(now_ms + 6 * 3_600_000),
                ),
                ("anthropic-ratelimit-tokens-limit", "400000".into()),
                ("anthropic-ratelimit-tokens-remaining", "120000".into()),
                ("anthropic-ratelimit-tokens-reset", rfc3339(now_ms + 60_000)),
            ]);
        }
    }
    let headers = headers
        .into_iter()
        .map(|(n, v)| (n.to_owned(), v))
        .collect();
    (status, headers, error_body(kind, message))
}

/// The Anthropic SDK's text for an HTTP error: the status and the body's
/// JSON as `JSON.stringify` writes it back (keys in the order received;
/// the provider's compact body is that text),
/// `529 {"type":"error","error":{...}}`.
pub fn printed_error(status: u16, body: &str) -> String {
    format!("{status} {}", body.trim())
}

/// The block the stream is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    Text,
    Tool,
}

/// Writes one response's events: `message_start`, a `content_block_start`
/// before the first delta of each block, `content_block_delta`s (text,
/// `input_json_delta`), `content_block_stop`, `ping`, and at the end
/// `message_delta` (the stop reason) and `message_stop`.
#[derive(Clone, Debug)]
pub struct Encoder {
    model: String,
    open: Option<Block>,
    index: u32,
    tool: bool,
}

impl Encoder {
    /// A writer for `model`'s answer.
    pub fn new(model: &str) -> Encoder {
        Encoder {
            model: model.to_owned(),
            open: None,
            index: 0,
            tool: false,
        }
    }

    fn close(&mut self, frames: &mut Vec<Frame>) {
        if self.open.take().is_some() {
            frames.push(frame(
                "content_block_stop",
                json!({"type": "content_block_stop", "index": self.index}),
            ));
            self.index += 1;
        }
    }

    /// The events of one beat.
    pub fn beat(&mut self, beat: &Beat) -> Vec<Frame> {
        let mut frames = Vec::new();
        match beat {
            Beat::Start => frames.push(frame(
                "message_start",
                json!({"type": "message_start", "message": {
                    "id": "msg_01demo", "type": "message", "role": "assistant",
                    "model": self.model, "content": [], "stop_reason": null,
                    "stop_sequence": null, "usage": {"input_tokens": 25, "output_tokens": 1}}}),
            )),
            Beat::Text(text) => {
                if self.open != Some(Block::Text) {
                    self.close(&mut frames);
                    self.open = Some(Block::Text);
                    frames.push(frame(
                        "content_block_start",
                        json!({"type": "content_block_start", "index": self.index,
                               "content_block": {"type": "text", "text": ""}}),
                    ));
                }
                frames.push(frame(
                    "content_block_delta",
                    json!({"type": "content_block_delta", "index": self.index,
                           "delta": {"type": "text_delta", "text": text}}),
                ));
            }
            Beat::Tool { name, input } => {
                self.close(&mut frames);
                self.open = Some(Block::Tool);
                self.tool = true;
                frames.push(frame(
                    "content_block_start",
                    json!({"type": "content_block_start", "index": self.index,
                           "content_block": {"type": "tool_use", "id": "toolu_01demo",
                                             "name": name, "input": {}}}),
                ));
                let (head, tail) = input.split_at(input.len() / 2);
                for part in [head, tail] {
                    frames.push(frame(
                        "content_block_delta",
                        json!({"type": "content_block_delta", "index": self.index,
                               "delta": {"type": "input_json_delta", "partial_json": part}}),
                    ));
                }
            }
            Beat::Ping => frames.push(frame("ping", json!({"type": "ping"}))),
            Beat::Pause(_) => {}
        }
        frames
    }

    /// The events of an end: the stop (`message_delta`, `message_stop`) or
    /// an in-band `error` event.
    pub fn end(&mut self, end: &End) -> Vec<Frame> {
        let mut frames = Vec::new();
        match end {
            End::Finish => {
                self.close(&mut frames);
                let reason = if self.tool { "tool_use" } else { "end_turn" };
                frames.push(frame(
                    "message_delta",
                    json!({"type": "message_delta",
                           "delta": {"stop_reason": reason, "stop_sequence": null},
                           "usage": {"output_tokens": 12}}),
                ));
                frames.push(frame("message_stop", json!({"type": "message_stop"})));
            }
            End::Error(fault) => {
                let (_, kind, message) = fault_error(*fault);
                frames.push(Frame {
                    event: Some("error"),
                    data: error_body(kind, message),
                    comment: false,
                });
            }
            End::Reset | End::Hang { .. } => {}
        }
        frames
    }
}

/// Reads one response's events; keeps the stop reason of `message_delta`
/// for `message_stop`.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    stop: Option<StopReason>,
}

impl Decoder {
    /// What the event is. Unknown event types are no progress (the API
    /// may add some; its docs ask clients to skip them).
    pub fn item(&mut self, event: &str, data: &str) -> Item {
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(e) => return Item::Error(format!("invalid event {event}: {e}")),
        };
        let kind = value["type"].as_str().unwrap_or(event);
        match kind {
            "ping" => Item::KeepAlive,
            // The SDK's text for an in-band error: the event's JSON, no
            // status (the response was a 200).
            "error" => Item::Error(data.trim().to_owned()),
            "message_start" | "content_block_stop" => Item::Progress,
            "content_block_start" => match value["content_block"]["type"].as_str() {
                Some("tool_use" | "server_tool_use") => Item::Tool,
                _ => Item::Progress,
            },
            "content_block_delta" => match value["delta"]["type"].as_str() {
                Some("text_delta") => {
                    Item::Text(value["delta"]["text"].as_str().unwrap_or("").to_owned())
                }
                Some("input_json_delta") => Item::Tool,
                _ => Item::Progress,
            },
            "message_delta" => {
                self.stop = match value["delta"]["stop_reason"].as_str() {
                    Some("tool_use") => Some(StopReason::ToolUse),
                    Some("max_tokens") => Some(StopReason::Length),
                    Some(_) => Some(StopReason::Stop),
                    None => self.stop,
                };
                Item::Progress
            }
            "message_stop" => Item::Stop(self.stop.unwrap_or(StopReason::Stop)),
            _ => Item::KeepAlive,
        }
    }
}
