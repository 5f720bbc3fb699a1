//! The two streaming wire formats, as one type: which path a request
//! goes to, how it is authorized and written, and, for each side, the
//! module that writes (provider) and reads (agent) that provider's
//! stream: [`anthropic`] and [`openai`].
//!
//! ```
//! use autoretry_demo::wire::Wire;
//! assert_eq!(Wire::from_name("openai"), Some(Wire::OpenAi));
//! assert_eq!(Wire::Anthropic.path(), "/v1/messages");
//! ```

use serde_json::{json, Value};

use crate::plan::{Beat, End, Fault};
use crate::{anthropic, openai};

/// A provider's wire format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Wire {
    /// The Anthropic Messages API (`POST /v1/messages`, SSE events).
    Anthropic,
    /// The OpenAI Chat Completions API (`POST /v1/chat/completions`,
    /// `data:` chunks and `[DONE]`).
    OpenAi,
}

/// Both formats.
pub const WIRES: [Wire; 2] = [Wire::Anthropic, Wire::OpenAi];

impl Wire {
    /// `anthropic` or `openai`.
    pub fn from_name(name: &str) -> Option<Wire> {
        match name {
            "anthropic" => Some(Wire::Anthropic),
            "openai" => Some(Wire::OpenAi),
            _ => None,
        }
    }

    /// The name [`Wire::from_name`] reads.
    pub fn name(self) -> &'static str {
        match self {
            Wire::Anthropic => "anthropic",
            Wire::OpenAi => "openai",
        }
    }

    /// The path of a streamed request.
    pub fn path(self) -> &'static str {
        match self {
            Wire::Anthropic => "/v1/messages",
            Wire::OpenAi => "/v1/chat/completions",
        }
    }

    /// The request's own headers: the key as this provider takes it.
    pub fn auth_headers(self, key: &str) -> Vec<(&'static str, String)> {
        match self {
            Wire::Anthropic => vec![
                ("x-api-key", key.to_owned()),
                ("anthropic-version", "2023-06-01".to_owned()),
            ],
            Wire::OpenAi => vec![("authorization", format!("Bearer {key}"))],
        }
    }

    /// The key a request carried (what [`Wire::auth_headers`] wrote).
    pub fn key_of(self, headers: &hyper::HeaderMap) -> Option<String> {
        let value = match self {
            Wire::Anthropic => headers.get("x-api-key")?.to_str().ok()?,
            Wire::OpenAi => headers
                .get("authorization")?
                .to_str()
                .ok()?
                .strip_prefix("Bearer ")?,
        };
        Some(value.to_owned())
    }

    /// The streamed request's body: the model and the conversation
    /// (`(role, text)` pairs, `user` or `assistant`).
    ///
    /// ```
    /// use autoretry_demo::wire::Wire;
    /// let body = Wire::OpenAi.request_body("gpt-4o", &[("user", "Hi")]);
    /// assert_eq!(body["stream"], true);
    /// assert_eq!(body["messages"][0]["content"], "Hi");
    /// ```
    pub fn request_body(self, model: &str, messages: &[(&str, &str)]) -> Value {
        let messages: Vec<Value> = messages
            .iter()
            .map(|(role, text)| json!({"role": role, "content": text}))
            .collect();
        match self {
            Wire::Anthropic => {
                json!({"model": model, "max_tokens": 1024, "stream": true, "messages": messages})
            }
            Wire::OpenAi => json!({"model": model, "stream": true, "messages": messages}),
        }
    }

    /// The HTTP error of `fault`: its status, headers and body, as this
    /// provider sends it (`now_ms`: the wall clock, for absolute resets).
    pub fn error_response(self, fault: Fault, now_ms: u64) -> (u16, Vec<(String, String)>, String) {
        match self {
            Wire::Anthropic => anthropic::error_response(fault, now_ms),
            Wire::OpenAi => openai::error_response(fault, now_ms),
        }
    }

    /// A writer of this provider's stream for `model`.
    pub fn encoder(self, model: &str) -> Encoder {
        match self {
            Wire::Anthropic => Encoder::Anthropic(anthropic::Encoder::new(model)),
            Wire::OpenAi => Encoder::OpenAi(openai::Encoder::new(model)),
        }
    }

    /// A reader of this provider's stream.
    pub fn decoder(self) -> Decoder {
        match self {
            Wire::Anthropic => Decoder::Anthropic(anthropic::Decoder::default()),
            Wire::OpenAi => Decoder::OpenAi(openai::Decoder::default()),
        }
    }

    /// The error text an SDK prints for an HTTP error `status` with `body`
    /// (the `errorMessage` of the failed turn): Anthropic's SDK prints the
    /// status and the body's JSON, `529 {"type":"error",...}`; OpenAI's
    /// the status and the error's `message`.
    ///
    /// ```
    /// use autoretry_demo::wire::Wire;
    /// let body = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
    /// assert_eq!(Wire::Anthropic.printed_error(529, body), format!("529 {body}"));
    /// let body = r#"{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}"#;
    /// assert_eq!(Wire::OpenAi.printed_error(429, body), "429 Rate limit reached");
    /// ```
    pub fn printed_error(self, status: u16, body: &str) -> String {
        match self {
            Wire::Anthropic => anthropic::printed_error(status, body),
            Wire::OpenAi => openai::printed_error(status, body),
        }
    }
}

/// One SSE event to send: its `event:` name (Anthropic's) or none, and
/// its `data:`; or a comment line (a keep-alive), when `comment` is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Frame {
    /// The `event:` field.
    pub event: Option<&'static str>,
    /// The `data:` field, or the comment's text.
    pub data: String,
    /// A comment (`: data`), which no SSE parser delivers as an event.
    pub comment: bool,
}

impl Frame {
    /// The frame's bytes on the wire, with the blank line that ends it.
    ///
    /// ```
    /// use autoretry_demo::wire::Frame;
    /// let frame = Frame { event: Some("ping"), data: r#"{"type":"ping"}"#.into(), comment: false };
    /// assert_eq!(frame.to_text(), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
    /// ```
    pub fn to_text(&self) -> String {
        if self.comment {
            return format!(": {}\n\n", self.data);
        }
        match self.event {
            Some(event) => format!("event: {event}\ndata: {}\n\n", self.data),
            None => format!("data: {}\n\n", self.data),
        }
    }
}

/// A provider's stream writer: one per response.
#[derive(Clone, Debug)]
pub enum Encoder {
    /// Anthropic's.
    Anthropic(anthropic::Encoder),
    /// OpenAI's.
    OpenAi(openai::Encoder),
}

impl Encoder {
    /// The frames of one beat ([`Beat::Pause`] has none).
    pub fn beat(&mut self, beat: &Beat) -> Vec<Frame> {
        match self {
            Encoder::Anthropic(e) => e.beat(beat),
            Encoder::OpenAi(e) => e.beat(beat),
        }
    }

    /// The frames of an end that sends something ([`End::Finish`],
    /// [`End::Error`]); none for the others.
    pub fn end(&mut self, end: &End) -> Vec<Frame> {
        match self {
            Encoder::Anthropic(e) => e.end(end),
            Encoder::OpenAi(e) => e.end(end),
        }
    }
}

/// What one parsed event of a stream is to the agent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Item {
    /// A message event that shows progress but adds no content
    /// (`message_start`, a block's start or stop, a role chunk).
    Progress,
    /// A text delta.
    Text(String),
    /// A tool call began or its input grew.
    Tool,
    /// A keep-alive: no progress.
    KeepAlive,
    /// The answer stopped normally, with this stop reason.
    Stop(autoretry::StopReason),
    /// An in-band error, as the SDK prints it.
    Error(String),
}

/// A provider's stream reader: one per response.
#[derive(Clone, Debug)]
pub enum Decoder {
    /// Anthropic's.
    Anthropic(anthropic::Decoder),
    /// OpenAI's.
    OpenAi(openai::Decoder),
}

impl Decoder {
    /// What the event named `event` (empty when unnamed) with `data` is.
    pub fn item(&mut self, event: &str, data: &str) -> Item {
        match self {
            Decoder::Anthropic(d) => d.item(event, data),
            Decoder::OpenAi(d) => d.item(data),
        }
    }
}
