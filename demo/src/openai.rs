//! The OpenAI Chat Completions API's streaming wire format: the
//! provider's writer ([`Encoder`], [`error_response`]) and the agent's
//! reader ([`Decoder`], [`printed_error`]).
//!
//! ```
//! use autoretry_demo::openai::Decoder;
//! use autoretry_demo::wire::Item;
//! let mut d = Decoder::default();
//! let chunk = r#"{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}"#;
//! assert_eq!(d.item(chunk), Item::Text("Hi".into()));
//! assert_eq!(d.item("[DONE]"), Item::Stop(autoretry::StopReason::Stop));
//! ```

use serde_json::{json, Value};

use autoretry::StopReason;

use crate::plan::{Beat, End, Fault};
use crate::wire::{Frame, Item};

fn data(value: Value) -> Frame {
    Frame {
        event: None,
        data: value.to_string(),
        comment: false,
    }
}

/// The status, `type`, `code` and `message` of `fault`'s error.
fn fault_error(fault: Fault) -> (u16, &'static str, Option<&'static str>, &'static str) {
    match fault {
        Fault::Overloaded => (
            503,
            "server_error",
            None,
            "The engine is currently overloaded, please try again later",
        ),
        Fault::RateLimited => (
            429,
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for gpt-4o in organization org-demo on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.",
        ),
        Fault::Server(502) => (502, "server_error", None, "Bad gateway."),
        Fault::Server(_) => (
            500,
            "server_error",
            None,
            "The server had an error while processing your request. Sorry about that!",
        ),
        Fault::Quota => (
            429,
            "requests",
            Some("rate_limit_exceeded"),
            "Rate limit reached for gpt-4o in organization org-demo on requests per day (RPD): Limit 10000, Used 10000, Requested 1. Please try again in 6h12m0s.",
        ),
    }
}

/// The error body, its keys in the provider's order:
/// `{"error":{"message":..,"type":..,"param":null,"code":..}}`.
fn error_body(fault: Fault) -> String {
    let (_, kind, code, message) = fault_error(fault);
    format!(
        r#"{{"error":{{"message":{},"type":{},"param":null,"code":{}}}}}"#,
        Value::from(message),
        Value::from(kind),
        code.map_or(Value::Null, Value::from)
    )
}

/// The status, headers and body of `fault` as OpenAI sends them:
/// `retry-after-ms`, `x-should-retry` and the `x-ratelimit-*` buckets
/// (resets as durations, so `now_ms` is not read).
pub fn error_response(fault: Fault, _now_ms: u64) -> (u16, Vec<(String, String)>, String) {
    let (status, ..) = fault_error(fault);
    let status = match fault {
        Fault::Server(status) => status,
        _ => status,
    };
    let mut headers = vec![
        ("content-type", "application/json"),
        ("x-request-id", "req_demo"),
    ];
    match fault {
        Fault::Overloaded | Fault::Server(_) => headers.push(("x-should-retry", "true")),
        Fault::RateLimited => headers.extend([
            ("retry-after-ms", "1500"),
            ("retry-after", "2"),
            ("x-should-retry", "true"),
            ("x-ratelimit-limit-requests", "500"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "1.5s"),
            ("x-ratelimit-limit-tokens", "30000"),
            ("x-ratelimit-remaining-tokens", "29000"),
            ("x-ratelimit-reset-tokens", "6m0s"),
        ]),
        Fault::Quota => headers.extend([
            ("x-ratelimit-limit-requests", "10000"),
            ("x-ratelimit-remaining-requests", "0"),
            ("x-ratelimit-reset-requests", "6h12m0s"),
            ("x-ratelimit-limit-tokens", "150000"),
            ("x-ratelimit-remaining-tokens", "149000"),
            ("x-ratelimit-reset-tokens", "6ms"),
        ]),
    }
    if fault == Fault::Server(503) {
        headers.push(("retry-after", "1"));
    }
    let headers = headers
        .into_iter()
        .map(|(n, v)| (n.to_owned(), v.to_owned()))
        .collect();
    (status, headers, error_body(fault))
}

/// The OpenAI SDK's text for an HTTP error: the status and the error's
/// `message` (the body's JSON when it has none, the body when it is not
/// JSON).
pub fn printed_error(status: u16, body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(value) => match value["error"]["message"].as_str() {
            Some(message) => format!("{status} {message}"),
            None => format!("{status} {value}"),
        },
        Err(_) => format!("{status} {body}"),
    }
}

/// Writes one response's chunks: each a `chat.completion.chunk` with one
/// choice's `delta` (the role, text, `tool_calls`), the last with its
/// `finish_reason`, then `[DONE]`; keep-alives are SSE comments.
#[derive(Clone, Debug)]
pub struct Encoder {
    model: String,
    tool: bool,
}

impl Encoder {
    /// A writer for `model`'s answer.
    pub fn new(model: &str) -> Encoder {
        Encoder {
            model: model.to_owned(),
            tool: false,
        }
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Frame {
        data(
            json!({"id": "chatcmpl-demo", "object": "chat.completion.chunk",
                    "created": 1_764_900_000, "model": self.model,
                    "choices": [{"index": 0, "delta": delta, "logprobs": null,
                                 "finish_reason": finish}]}),
        )
    }

    /// The chunks of one beat.
    pub fn beat(&mut self, beat: &Beat) -> Vec<Frame> {
        match beat {
            Beat::Start => vec![self.chunk(json!({"role": "assistant", "content": ""}), None)],
            Beat::Text(text) => vec![self.chunk(json!({"content": text}), None)],
            Beat::Tool { name, input } => {
                self.tool = true;
                let (head, tail) = input.split_at(input.len() / 2);
                vec![
                    self.chunk(
                        json!({"tool_calls": [{"index": 0, "id": "call_demo", "type": "function",
                                               "function": {"name": name, "arguments": ""}}]}),
                        None,
                    ),
                    self.chunk(
                        json!({"tool_calls": [{"index": 0, "function": {"arguments": head}}]}),
                        None,
                    ),
                    self.chunk(
                        json!({"tool_calls": [{"index": 0, "function": {"arguments": tail}}]}),
                        None,
                    ),
                ]
            }
            Beat::Ping => vec![Frame {
                event: None,
                data: "keep-alive".into(),
                comment: true,
            }],
            Beat::Pause(_) => vec![],
        }
    }

    /// The chunks of an end: the last chunk and `[DONE]`, or an in-band
    /// error object.
    pub fn end(&mut self, end: &End) -> Vec<Frame> {
        match end {
            End::Finish => {
                let reason = if self.tool { "tool_calls" } else { "stop" };
                vec![
                    self.chunk(json!({}), Some(reason)),
                    Frame {
                        event: None,
                        data: "[DONE]".into(),
                        comment: false,
                    },
                ]
            }
            End::Error(fault) => vec![Frame {
                event: None,
                data: error_body(*fault),
                comment: false,
            }],
            End::Reset | End::Hang { .. } => vec![],
        }
    }
}

/// Reads one response's chunks; keeps the last `finish_reason` for
/// `[DONE]`.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    stop: Option<StopReason>,
}

impl Decoder {
    /// What the chunk is: an `error` object is the SDK's error (its
    /// `message`), a delta's `content` text, its `tool_calls` a tool call.
    pub fn item(&mut self, data: &str) -> Item {
        if data == "[DONE]" {
            return Item::Stop(self.stop.unwrap_or(StopReason::Stop));
        }
        let value: Value = match serde_json::from_str(data) {
            Ok(value) => value,
            Err(e) => return Item::Error(format!("invalid chunk: {e}")),
        };
        if let Some(error) = value.get("error") {
            return Item::Error(match error["message"].as_str() {
                Some(message) => message.to_owned(),
                None => error.to_string(),
            });
        }
        let choice = &value["choices"][0];
        match choice["finish_reason"].as_str() {
            Some("tool_calls" | "function_call") => self.stop = Some(StopReason::ToolUse),
            Some("length") => self.stop = Some(StopReason::Length),
            Some(_) => self.stop = Some(StopReason::Stop),
            None => {}
        }
        let delta = &choice["delta"];
        if delta
            .get("tool_calls")
            .is_some_and(|calls| !calls.is_null())
        {
            return Item::Tool;
        }
        match delta["content"].as_str() {
            Some(text) if !text.is_empty() => Item::Text(text.to_owned()),
            _ => Item::Progress,
        }
    }
}
