//! JSON-lines decoding of host inputs (feature `json`).
//!
//! Lines are parsed with serde_json into a `Value` by [`parse_value`] (which
//! refuses an object that gives a key twice, naming the key), then read
//! field by field so every error names its field. Integers are read exactly
//! (`u64` up to `18446744073709551615`, never through `f64`). The field
//! readers ([`uint`], [`boolean`], [`string`], [`object`], [`required`],
//! [`require`]) are public for hosts that decode objects of their own the
//! same way.
//!
//! One rule for `null`: in an optional field it means absent (the readers
//! return `Ok(None)`); a required field that is `null` is an error
//! ([`require`]: `switched: expected a boolean, found null`). The settings
//! group is stricter (spec §4: `null` is a wrong type for every key).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::map::Entry;
use serde_json::{Map, Value};

use crate::machine::Input;
use crate::message::{AssistantMessage, Partial, StopReason, Usage};
use crate::output::TimerId;
use crate::settings::RetrySettings;
use crate::wire::SettingsGroup;

/// A line or field that could not be decoded; the message names the field.
///
/// ```
/// use autoretry::wire::json::InputOwned;
/// let value = serde_json::json!({"type": "timer_fired", "timer": -1});
/// let err = InputOwned::from_json(&value).unwrap_err();
/// assert_eq!(err.to_string(), "timer: expected a non-negative integer that fits u64, found -1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DecodeError {
    message: String,
    kind: Kind,
}

/// What kind of bad input a [`DecodeError`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Kind {
    /// A field is missing, `null` where it is required, or ill-typed.
    Field,
    /// The text is not JSON.
    Syntax,
    /// An object gives a key twice.
    DuplicateKey,
}

impl DecodeError {
    /// An error with this message.
    ///
    /// ```
    /// use autoretry::wire::json::DecodeError;
    /// assert_eq!(DecodeError::new("in: missing").to_string(), "in: missing");
    /// ```
    pub fn new(message: impl Into<String>) -> Self {
        DecodeError {
            message: message.into(),
            kind: Kind::Field,
        }
    }

    /// Whether the text was not JSON at all (see [`parse_value`]).
    ///
    /// ```
    /// use autoretry::wire::json::parse_value;
    /// assert!(parse_value("{").unwrap_err().is_invalid_json());
    /// assert!(!parse_value(r#"{"a":1,"a":2}"#).unwrap_err().is_invalid_json());
    /// ```
    pub fn is_invalid_json(&self) -> bool {
        self.kind == Kind::Syntax
    }

    /// Whether an object gave a key twice (see [`parse_value`]).
    ///
    /// ```
    /// use autoretry::wire::json::parse_value;
    /// assert!(parse_value(r#"{"a":1,"a":2}"#).unwrap_err().is_duplicate_key());
    /// assert!(!parse_value("{").unwrap_err().is_duplicate_key());
    /// ```
    pub fn is_duplicate_key(&self) -> bool {
        self.kind == Kind::DuplicateKey
    }

    /// The message.
    ///
    /// ```
    /// use autoretry::wire::json::DecodeError;
    /// assert_eq!(DecodeError::new("x").message(), "x");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The same error inside the field `prefix`: `prefix.field: ...` when
    /// the message starts with a field name, else `prefix: ...`.
    ///
    /// ```
    /// use autoretry::wire::json::DecodeError;
    /// assert_eq!(DecodeError::new("input: missing").within("usage").to_string(), "usage.input: missing");
    /// assert_eq!(DecodeError::new("expected an object").within("in").to_string(), "in: expected an object");
    /// ```
    pub fn within(self, prefix: &str) -> Self {
        let names_field = self.message.split_once(": ").is_some_and(|(head, _)| {
            !head.is_empty()
                && head
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_')
        });
        let sep = if names_field { "." } else { ": " };
        DecodeError {
            message: format!("{prefix}{sep}{}", self.message),
            kind: self.kind,
        }
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl core::error::Error for DecodeError {}

/// Describes a JSON value for an error message: `null`, `a boolean true`,
/// `-1`, `3.0`, `a string "x"`, `an array`, `an object`.
///
/// ```
/// use autoretry::wire::json::describe;
/// assert_eq!(describe(&serde_json::json!("3")), r#"a string "3""#);
/// assert_eq!(describe(&serde_json::json!(null)), "null");
/// ```
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("a boolean {b}"),
        Value::Number(n) => n.to_string(),
        Value::String(s) => format!("a string {}", Value::String(s.clone())),
        Value::Array(_) => "an array".into(),
        Value::Object(_) => "an object".into(),
    }
}

/// Parses one JSON text into a `Value`, strictly: an object that gives a
/// key twice is bad input (serde_json alone keeps the last), and the error
/// names the key and, below the top level, where it is
/// (`duplicate key "baseDelayMs" in settings at line 1 column 59`). Text
/// that is not JSON is `invalid JSON: ...`.
///
/// ```
/// use autoretry::wire::json::parse_value;
/// assert_eq!(parse_value(r#"{"a":[1,{"b":null}]}"#).unwrap(), serde_json::json!({"a": [1, {"b": null}]}));
/// let err = parse_value(r#"{"type":"abort_retry","type":"abort"}"#).unwrap_err();
/// assert_eq!(err.to_string(), r#"duplicate key "type" at line 1 column 37"#);
/// let err = parse_value(r#"{"settings":{"baseDelayMs":-1,"baseDelayMs":5}}"#).unwrap_err();
/// assert!(err.to_string().starts_with(r#"duplicate key "baseDelayMs" in settings"#), "{err}");
/// assert!(parse_value("{nope").unwrap_err().to_string().starts_with("invalid JSON: "));
/// ```
pub fn parse_value(text: &str) -> Result<Value, DecodeError> {
    let mut de = serde_json::Deserializer::from_str(text);
    Strict { path: Path::Root }
        .deserialize(&mut de)
        .and_then(|value| de.end().map(|()| value))
        .map_err(|e| match e.classify() {
            // The only data error a `Value` can meet is ours.
            serde_json::error::Category::Data => DecodeError {
                message: e.to_string(),
                kind: Kind::DuplicateKey,
            },
            _ => DecodeError {
                message: format!("invalid JSON: {e}"),
                kind: Kind::Syntax,
            },
        })
}

/// Where a value sits in the text being parsed, for the error message.
#[derive(Clone, Copy)]
enum Path<'p> {
    Root,
    Key(&'p Path<'p>, &'p str),
    Index(&'p Path<'p>, usize),
}

impl fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Path::Root => Ok(()),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, index) => write!(f, "{parent}[{index}]"),
        }
    }
}

/// A `Value` whose objects have unique keys (see [`parse_value`]).
struct Strict<'p> {
    path: Path<'p>,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        // serde_json reads only finite numbers.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        self.deserialize(deserializer)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            let path = Path::Index(&self.path, items.len());
            match seq.next_element_seed(Strict { path })? {
                Some(item) => items.push(item),
                None => return Ok(Value::Array(items)),
            }
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut entries = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            let value = map.next_value_seed(Strict {
                path: Path::Key(&self.path, &key),
            })?;
            match entries.entry(key) {
                Entry::Vacant(slot) => {
                    slot.insert(value);
                }
                Entry::Occupied(slot) => {
                    let name = to_json(slot.key());
                    return Err(de::Error::custom(match self.path {
                        Path::Root => format!("duplicate key {name}"),
                        path => format!("duplicate key {name} in {path}"),
                    }));
                }
            }
        }
        Ok(Value::Object(entries))
    }
}

/// Parses one line as a JSON object ([`parse_value`]: a key given twice is
/// an error naming it).
///
/// ```
/// use autoretry::wire::json::parse_object;
/// assert!(parse_object(r#"{"a":1}"#).is_ok());
/// assert_eq!(parse_object("[1]").unwrap_err().to_string(), "expected a JSON object, found an array");
/// assert!(parse_object(r#"{"a":1,"a":1}"#).unwrap_err().to_string().starts_with(r#"duplicate key "a""#));
/// ```
pub fn parse_object(line: &str) -> Result<Map<String, Value>, DecodeError> {
    match parse_value(line)? {
        Value::Object(map) => Ok(map),
        other => Err(DecodeError::new(format!(
            "expected a JSON object, found {}",
            describe(&other)
        ))),
    }
}

/// `obj[field]`, with `null` taken as absent.
fn present<'v>(obj: &'v Map<String, Value>, field: &str) -> Option<&'v Value> {
    obj.get(field).filter(|value| !value.is_null())
}

/// `field` as an object of `obj`, if present (`null` is absent).
///
/// ```
/// use autoretry::wire::json::{object, parse_object};
/// let obj = parse_object(r#"{"host":{},"n":1}"#).unwrap();
/// assert!(object(&obj, "host").unwrap().is_some());
/// assert_eq!(object(&obj, "n").unwrap_err().to_string(), "n: expected an object, found 1");
/// ```
pub fn object<'v>(
    obj: &'v Map<String, Value>,
    field: &str,
) -> Result<Option<&'v Map<String, Value>>, DecodeError> {
    match present(obj, field) {
        None => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(other) => Err(DecodeError::new(format!(
            "{field}: expected an object, found {}",
            describe(other)
        ))),
    }
}

/// `field` as a `u64` of `obj`, if present (`null` is absent): a plain
/// non-negative integer literal, read exactly.
///
/// ```
/// use autoretry::wire::json::{parse_object, uint};
/// let obj = parse_object(r#"{"a":18446744073709551615,"b":1.0}"#).unwrap();
/// assert_eq!(uint(&obj, "a").unwrap(), Some(u64::MAX));
/// assert_eq!(uint(&obj, "c").unwrap(), None);
/// assert_eq!(uint(&obj, "b").unwrap_err().to_string(), "b: expected a non-negative integer that fits u64, found 1.0");
/// ```
pub fn uint(obj: &Map<String, Value>, field: &str) -> Result<Option<u64>, DecodeError> {
    match present(obj, field) {
        None => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
        Some(other) => Err(DecodeError::new(format!(
            "{field}: expected a non-negative integer that fits u64, found {}",
            describe(other)
        ))),
    }
}

/// `field` as a boolean of `obj`, if present (`null` is absent).
///
/// ```
/// use autoretry::wire::json::{boolean, parse_object};
/// let obj = parse_object(r#"{"a":true,"b":"yes"}"#).unwrap();
/// assert_eq!(boolean(&obj, "a").unwrap(), Some(true));
/// assert_eq!(boolean(&obj, "b").unwrap_err().to_string(), r#"b: expected a boolean, found a string "yes""#);
/// ```
pub fn boolean(obj: &Map<String, Value>, field: &str) -> Result<Option<bool>, DecodeError> {
    match present(obj, field) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(DecodeError::new(format!(
            "{field}: expected a boolean, found {}",
            describe(other)
        ))),
    }
}

/// `field` as a string of `obj`, if present (`null` is absent).
///
/// ```
/// use autoretry::wire::json::{parse_object, string};
/// let obj = parse_object(r#"{"a":"x","b":5}"#).unwrap();
/// assert_eq!(string(&obj, "a").unwrap(), Some("x"));
/// assert_eq!(string(&obj, "b").unwrap_err().to_string(), "b: expected a string, found 5");
/// ```
pub fn string<'v>(
    obj: &'v Map<String, Value>,
    field: &str,
) -> Result<Option<&'v str>, DecodeError> {
    match present(obj, field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(DecodeError::new(format!(
            "{field}: expected a string, found {}",
            describe(other)
        ))),
    }
}

/// A field that must be present: `value`, or the error `field: missing
/// (expected what)`.
///
/// ```
/// use autoretry::wire::json::{parse_object, required, string};
/// let obj = parse_object("{}").unwrap();
/// let err = required(string(&obj, "type").unwrap(), "type", "a string").unwrap_err();
/// assert_eq!(err.to_string(), "type: missing (expected a string)");
/// ```
pub fn required<T>(value: Option<T>, field: &str, what: &str) -> Result<T, DecodeError> {
    value.ok_or_else(|| DecodeError::new(format!("{field}: missing (expected {what})")))
}

/// A field of `obj` that must be present and not `null`, read with `read`
/// (one of [`uint`], [`boolean`], [`string`], [`object`]): the error is
/// `field: missing (expected what)` or `field: expected what, found null`.
///
/// ```
/// use autoretry::wire::json::{boolean, parse_object, require};
/// let obj = parse_object(r#"{"a":true,"b":null}"#).unwrap();
/// assert_eq!(require(&obj, "a", "a boolean", boolean).unwrap(), true);
/// assert_eq!(require(&obj, "b", "a boolean", boolean).unwrap_err().to_string(), "b: expected a boolean, found null");
/// assert_eq!(require(&obj, "c", "a boolean", boolean).unwrap_err().to_string(), "c: missing (expected a boolean)");
/// ```
pub fn require<'v, T>(
    obj: &'v Map<String, Value>,
    field: &str,
    what: &str,
    read: impl FnOnce(&'v Map<String, Value>, &str) -> Result<Option<T>, DecodeError>,
) -> Result<T, DecodeError> {
    if obj.get(field).is_some_and(Value::is_null) {
        return Err(DecodeError::new(format!(
            "{field}: expected {what}, found null"
        )));
    }
    required(read(obj, field)?, field, what)
}

/// Decodes a `retry` settings group strictly (see [`SettingsGroup`]); the
/// error names the key (`retry.maxRetries: ...`).
///
/// ```
/// use autoretry::wire::json::settings_from_json;
/// let err = settings_from_json(&serde_json::json!({"maxRetries": 1e3})).unwrap_err();
/// assert!(err.to_string().starts_with("retry.maxRetries: expected a non-negative integer that fits u32"));
/// ```
pub fn settings_from_json(value: &Value) -> Result<RetrySettings, DecodeError> {
    SettingsGroup::deserialize(value)
        .map(|group| group.0)
        .map_err(|e| DecodeError::new(e.to_string()))
}

/// An assistant message that owns its error text (spec §2, §10.2); borrow
/// it as an [`AssistantMessage`] with [`MessageOwned::as_message`].
///
/// ```
/// use autoretry::{StopReason, wire::json::MessageOwned};
/// let value = serde_json::json!({"role": "assistant", "stopReason": "error", "errorMessage": "overloaded", "usage": {"input": 5}, "retryAfterMs": 1500});
/// let msg = MessageOwned::from_json(&value).unwrap();
/// assert_eq!(msg.as_message().stop_reason, StopReason::Error);
/// assert_eq!(msg.usage.unwrap().cache_read, 0);
/// assert_eq!((msg.should_retry, msg.retry_after_ms), (None, Some(1500)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct MessageOwned {
    /// `stopReason`.
    pub stop_reason: StopReason,
    /// `errorMessage`, when present.
    pub error_message: Option<String>,
    /// `usage`, when present (a missing count is 0).
    pub usage: Option<Usage>,
    /// `shouldRetry`, when present (spec §10.2).
    pub should_retry: Option<bool>,
    /// `retryAfterMs`, when present (spec §10.2).
    pub retry_after_ms: Option<u64>,
    /// `partial` (spec §11.2).
    pub partial: Partial,
}

impl MessageOwned {
    /// A message with this stop reason and error text, and none of the
    /// optional fields.
    ///
    /// ```
    /// use autoretry::{StopReason, wire::json::MessageOwned};
    /// let msg = MessageOwned::new(StopReason::Error, Some("503".into()));
    /// assert!(msg.as_message().is_retryable(0));
    /// ```
    pub fn new(stop_reason: StopReason, error_message: Option<String>) -> Self {
        MessageOwned {
            stop_reason,
            error_message,
            usage: None,
            should_retry: None,
            retry_after_ms: None,
            partial: Partial::None,
        }
    }

    /// Decodes
    /// `{"role":"assistant","stopReason":..,"errorMessage":..,"usage":{"input":n,"cacheRead":n,"cacheWrite":n},"shouldRetry":b,"retryAfterMs":n}`.
    /// `stopReason` is required and must be one of the five names;
    /// `role`, when present, must be `"assistant"`; other fields are ignored.
    /// An optional field given as `null` is absent.
    /// Errors name the field (`stopReason: ...`, `usage.input: ...`,
    /// `shouldRetry: ...`).
    ///
    /// ```
    /// use autoretry::wire::json::MessageOwned;
    /// let err = MessageOwned::from_json(&serde_json::json!({"stopReason": "Error"})).unwrap_err();
    /// assert!(err.to_string().starts_with(r#"stopReason: expected one of "stop", "length""#));
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, DecodeError> {
        let Value::Object(obj) = value else {
            return Err(DecodeError::new(format!(
                "expected an object, found {}",
                describe(value)
            )));
        };
        match string(obj, "role")? {
            None | Some("assistant") => {}
            Some(other) => {
                return Err(DecodeError::new(format!(
                    "role: expected \"assistant\", found {}",
                    describe(&Value::String(other.into()))
                )))
            }
        }
        let name = require(obj, "stopReason", "a string", string)?;
        let stop_reason = StopReason::from_wire(name).ok_or_else(|| {
            DecodeError::new(format!(
                "stopReason: expected one of \"stop\", \"length\", \"toolUse\", \"error\", \"aborted\", found {}",
                describe(&Value::String(name.into()))
            ))
        })?;
        let error_message = string(obj, "errorMessage")?.map(str::to_owned);
        let usage = match object(obj, "usage")? {
            None => None,
            Some(usage) => Some(Usage {
                input: uint(usage, "input")
                    .map_err(|e| e.within("usage"))?
                    .unwrap_or(0),
                cache_read: uint(usage, "cacheRead")
                    .map_err(|e| e.within("usage"))?
                    .unwrap_or(0),
                cache_write: uint(usage, "cacheWrite")
                    .map_err(|e| e.within("usage"))?
                    .unwrap_or(0),
            }),
        };
        Ok(MessageOwned {
            stop_reason,
            error_message,
            usage,
            should_retry: boolean(obj, "shouldRetry")?,
            retry_after_ms: uint(obj, "retryAfterMs")?,
            // Last: a bad `partial` in an otherwise good message is an
            // input to refuse (spec §11.2), which `InputOwned` tells apart.
            partial: partial(obj)?,
        })
    }

    /// Borrows the message for the machine.
    ///
    /// ```
    /// use autoretry::{StopReason, wire::json::MessageOwned};
    /// let msg = MessageOwned { should_retry: Some(false), ..MessageOwned::new(StopReason::Error, Some("503".into())) };
    /// assert!(!msg.as_message().is_retryable(0));
    /// ```
    pub fn as_message(&self) -> AssistantMessage<'_> {
        AssistantMessage {
            stop_reason: self.stop_reason,
            error_message: self.error_message.as_deref(),
            usage: self.usage,
            should_retry: self.should_retry,
            retry_after_ms: self.retry_after_ms,
            partial: self.partial,
        }
    }
}

/// `partial` of a message object (spec §11.2): absent or `null` is
/// [`Partial::None`]; anything but its three strings is an error naming it.
fn partial(obj: &Map<String, Value>) -> Result<Partial, DecodeError> {
    match present(obj, "partial") {
        None => Ok(Partial::None),
        Some(Value::String(name)) if Partial::from_wire(name).is_some() => {
            Ok(Partial::from_wire(name).unwrap_or_default())
        }
        Some(other) => Err(DecodeError::new(format!(
            "partial: expected \"none\", \"text\" or \"tools\", found {}",
            describe(other)
        ))),
    }
}

/// One host input (`{"type":"agent_end","message":{...}}`, ...) that owns its texts; borrow it as
/// an [`Input`] with [`InputOwned::as_input`].
///
/// A `settings` input whose group fails validation, and a `set_auto_retry`
/// whose `enabled` is not a boolean, decode to [`InputOwned::Invalid`]: they
/// are inputs the host must refuse (spec §6a), not malformed lines.
///
/// ```
/// use autoretry::{Input, TimerId, wire::json::InputOwned};
/// let value = serde_json::json!({"type": "timer_fired", "timer": 18446744073709551615u64});
/// let input = InputOwned::from_json(&value).unwrap();
/// assert_eq!(input.as_input(""), Ok(Input::TimerFired { timer: TimerId(u64::MAX) }));
///
/// let bad = serde_json::json!({"type": "settings", "settings": {"maxRetries": -1}});
/// let input = InputOwned::from_json(&bad).unwrap();
/// assert!(matches!(input, InputOwned::Invalid { .. }));
/// assert!(input.as_input("").unwrap_err().starts_with("retry.maxRetries"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InputOwned {
    /// `message_end`.
    MessageEnd {
        /// `message`.
        message: MessageOwned,
    },
    /// `agent_end`.
    AgentEnd {
        /// `message`.
        message: MessageOwned,
        /// `nowMs`, when present.
        now_ms: Option<u64>,
    },
    /// `timer_fired`: `timer` as written (in the conformance vectors, an
    /// ordinal that the vector host maps to the machine's id).
    TimerFired {
        /// `timer`.
        timer: u64,
    },
    /// `usage_limit_marked`. The wire form has no error text: the host passes
    /// the text of the message it marked to [`InputOwned::as_input`].
    UsageLimitMarked {
        /// `switched`.
        switched: bool,
    },
    /// `model_switched` (spec §11.3). The wire form has no error text: the
    /// host passes the text of the decision's message to
    /// [`InputOwned::as_input`].
    ModelSwitched {
        /// `switched`.
        switched: bool,
    },
    /// `abort_retry`.
    AbortRetry,
    /// `abort`.
    Abort,
    /// `set_auto_retry` with a boolean `enabled`.
    SetAutoRetry {
        /// `enabled`.
        enabled: bool,
    },
    /// `settings` with a valid group.
    Settings(RetrySettings),
    /// A `settings` or `set_auto_retry` input whose value fails validation;
    /// the host refuses it (spec §6a).
    Invalid {
        /// The input's `type`.
        type_name: &'static str,
        /// Why, naming the key (`retry.maxRetries: ...`, `enabled: ...`).
        error: String,
    },
}

impl InputOwned {
    /// Decodes an input object. Unknown fields are ignored; a missing or
    /// ill-typed field is an error that names it. See the type's docs for
    /// the inputs that decode to [`InputOwned::Invalid`].
    ///
    /// ```
    /// use autoretry::wire::json::InputOwned;
    /// let err = InputOwned::from_json(&serde_json::json!({"type": "agent_end"})).unwrap_err();
    /// assert_eq!(err.to_string(), "message: missing (expected an object)");
    /// let err = InputOwned::from_json(&serde_json::json!({"type": "reboot"})).unwrap_err();
    /// assert!(err.to_string().starts_with(r#"type: unknown input "reboot""#));
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, DecodeError> {
        let Value::Object(obj) = value else {
            return Err(DecodeError::new(format!(
                "expected an object, found {}",
                describe(value)
            )));
        };
        let ty = require(obj, "type", "a string", string)?;
        // A message that is good but for its `partial` makes an input to
        // refuse (spec §11.2), not a malformed line.
        let message = || -> Result<Result<MessageOwned, String>, DecodeError> {
            let value = required(obj.get("message"), "message", "an object")?;
            match MessageOwned::from_json(value) {
                Ok(message) => Ok(Ok(message)),
                Err(e) => {
                    let bad_partial = value.as_object().and_then(|m| partial(m).err());
                    let e = e.within("message");
                    if bad_partial.map(|p| p.within("message")) == Some(e.clone()) {
                        Ok(Err(e.message))
                    } else {
                        Err(e)
                    }
                }
            }
        };
        let invalid = |type_name, error| InputOwned::Invalid { type_name, error };
        Ok(match ty {
            "message_end" => match message()? {
                Ok(message) => InputOwned::MessageEnd { message },
                Err(error) => invalid("message_end", error),
            },
            "agent_end" => {
                let now_ms = uint(obj, "nowMs")?;
                match message()? {
                    Ok(message) => InputOwned::AgentEnd { message, now_ms },
                    Err(error) => invalid("agent_end", error),
                }
            }
            "timer_fired" => InputOwned::TimerFired {
                timer: require(obj, "timer", "a non-negative integer", uint)?,
            },
            "usage_limit_marked" => InputOwned::UsageLimitMarked {
                switched: require(obj, "switched", "a boolean", boolean)?,
            },
            // Refused, whether the machine waits for an answer or not
            // (spec §11.3).
            "model_switched" => match require(obj, "switched", "a boolean", boolean) {
                Ok(switched) => InputOwned::ModelSwitched { switched },
                Err(e) => invalid("model_switched", e.message),
            },
            "abort_retry" => InputOwned::AbortRetry,
            "abort" => InputOwned::Abort,
            "set_auto_retry" => match require(obj, "enabled", "a boolean", boolean) {
                Ok(enabled) => InputOwned::SetAutoRetry { enabled },
                Err(e) => InputOwned::Invalid {
                    type_name: "set_auto_retry",
                    error: e.message,
                },
            },
            "settings" => {
                let group = required(obj.get("settings"), "settings", "an object")?;
                match settings_from_json(group) {
                    Ok(settings) => InputOwned::Settings(settings),
                    Err(e) => InputOwned::Invalid {
                        type_name: "settings",
                        error: e.message,
                    },
                }
            }
            other => {
                return Err(DecodeError::new(format!(
                    "type: unknown input {} (expected message_end, agent_end, timer_fired, \
                     usage_limit_marked, model_switched, abort_retry, abort, set_auto_retry or \
                     settings)",
                    Value::String(other.into())
                )))
            }
        })
    }

    /// Borrows the input for [`crate::Machine::handle`]. `marked_error` is
    /// used only by `usage_limit_marked` and `model_switched`: the error
    /// text of the `agent_end` whose decision asked for `mark_usage_limit`
    /// or `switch_model` (the host remembers it).
    /// Timer numbers are passed through as [`TimerId`]s. An
    /// [`InputOwned::Invalid`] input gives its error text: refuse it.
    ///
    /// ```
    /// use autoretry::{Input, wire::json::InputOwned};
    /// let input = InputOwned::UsageLimitMarked { switched: true };
    /// assert_eq!(input.as_input("usage limit"), Ok(Input::UsageLimitMarked { switched: true, error_message: "usage limit" }));
    /// ```
    pub fn as_input<'a>(&'a self, marked_error: &'a str) -> Result<Input<'a>, &'a str> {
        Ok(match self {
            InputOwned::MessageEnd { message } => Input::MessageEnd {
                message: message.as_message(),
            },
            InputOwned::AgentEnd { message, now_ms } => Input::AgentEnd {
                message: message.as_message(),
                now_ms: *now_ms,
            },
            InputOwned::TimerFired { timer } => Input::TimerFired {
                timer: TimerId(*timer),
            },
            InputOwned::UsageLimitMarked { switched } => Input::UsageLimitMarked {
                switched: *switched,
                error_message: marked_error,
            },
            InputOwned::ModelSwitched { switched } => Input::ModelSwitched {
                switched: *switched,
                error_message: marked_error,
            },
            InputOwned::AbortRetry => Input::AbortRetry,
            InputOwned::Abort => Input::Abort,
            InputOwned::SetAutoRetry { enabled } => Input::SetAutoRetry { enabled: *enabled },
            InputOwned::Settings(settings) => Input::Settings(*settings),
            InputOwned::Invalid { error, .. } => return Err(error),
        })
    }
}

/// Reads the text of a `classify` line, `{"text":"..."}` (other fields are
/// ignored).
///
/// ```
/// use autoretry::wire::json::classify_line_text;
/// assert_eq!(classify_line_text(r#"{"text":"503","retryable":true}"#).unwrap(), "503");
/// assert_eq!(classify_line_text("{}").unwrap_err().to_string(), "text: missing (expected a string)");
/// ```
pub fn classify_line_text(line: &str) -> Result<String, DecodeError> {
    let mut obj = parse_object(line)?;
    match obj.remove("text") {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(DecodeError::new(format!(
            "text: expected a string, found {}",
            describe(&other)
        ))),
        None => Err(DecodeError::new("text: missing (expected a string)")),
    }
}

/// Classifies `text` and writes the corpus form
/// `{"retryable":b,"overflow":b,"usageLimit":b,"hintMs":n|null}`.
///
/// ```
/// use autoretry::wire::json::classify_to_json;
/// assert_eq!(classify_to_json("503 Service Unavailable"),
///     r#"{"retryable":true,"overflow":false,"usageLimit":false,"hintMs":null}"#);
/// ```
pub fn classify_to_json(text: &str) -> String {
    to_json(&crate::classify::classify(text))
}

/// Serializes a value that cannot fail to serialize (the wire's own types).
pub(crate) fn to_json<T: serde::Serialize + ?Sized>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|e| format!("\"serialization failed: {e}\""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn message_errors_name_the_field() {
        let cases = [
            (
                json!({"type":"agent_end","message":{"stopReason":"error","usage":{"input":-1}}}),
                "message.usage.input: expected a non-negative integer that fits u64, found -1",
            ),
            (
                json!({"type":"agent_end","message":{"stopReason":"error","errorMessage":5}}),
                "message.errorMessage: expected a string, found 5",
            ),
            (
                json!({"type":"agent_end","message":{"role":"user","stopReason":"stop"}}),
                "message.role: expected \"assistant\", found a string \"user\"",
            ),
            (
                json!({"type":"agent_end","message":{"stopReason":"stop"},"nowMs":1.5}),
                "nowMs: expected a non-negative integer that fits u64, found 1.5",
            ),
            (
                json!({"type":"usage_limit_marked"}),
                "switched: missing (expected a boolean)",
            ),
            (
                json!({"type":"timer_fired","timer":"1"}),
                "timer: expected a non-negative integer that fits u64, found a string \"1\"",
            ),
            (json!({"type":5}), "type: expected a string, found 5"),
            (
                json!({"type":"agent_end","message":{"stopReason":"error","shouldRetry":"yes"}}),
                "message.shouldRetry: expected a boolean, found a string \"yes\"",
            ),
            (
                json!({"type":"agent_end","message":{"stopReason":null}}),
                "message.stopReason: expected a string, found null",
            ),
            (
                json!({"type":"usage_limit_marked","switched":null}),
                "switched: expected a boolean, found null",
            ),
            (
                json!({"type":"message_end","message":{"stopReason":"error","retryAfterMs":-5}}),
                "message.retryAfterMs: expected a non-negative integer that fits u64, found -5",
            ),
            (
                json!({"type":"agent_end","message":{"stopReason":"error","retryAfterMs":1.5}}),
                "message.retryAfterMs: expected a non-negative integer that fits u64, found 1.5",
            ),
            (
                json!({"type":"agent_end","message":{"stopReason":"error","usage":{"cacheWrite":"1"}}}),
                "message.usage.cacheWrite: expected a non-negative integer that fits u64, found a string \"1\"",
            ),
        ];
        for (value, want) in cases {
            assert_eq!(InputOwned::from_json(&value).unwrap_err().to_string(), want);
        }
    }

    #[test]
    fn null_in_an_optional_field_is_absent() {
        let line = r#"{"type":"agent_end","nowMs":null,"message":{"role":null,"stopReason":"error","errorMessage":null,"usage":null,"shouldRetry":null,"retryAfterMs":null}}"#;
        assert_eq!(
            InputOwned::from_json(&parse_value(line).unwrap()).unwrap(),
            InputOwned::AgentEnd {
                message: MessageOwned::new(StopReason::Error, None),
                now_ms: None
            }
        );
        let line = r#"{"type":"message_end","message":{"stopReason":"stop","usage":{"input":null,"cacheRead":3,"cacheWrite":null}}}"#;
        let Ok(InputOwned::MessageEnd { message }) =
            InputOwned::from_json(&parse_value(line).unwrap())
        else {
            panic!()
        };
        assert_eq!(message.usage, Some(Usage::new(0, 3)));
    }

    #[test]
    fn a_key_given_twice_is_refused_at_any_depth() {
        let cases = [
            (
                r#"{"type":"abort_retry","type":"abort"}"#,
                r#"duplicate key "type" at line 1 column 37"#,
            ),
            (
                r#"{"type":"agent_end","message":{"stopReason":"error","stopReason":"stop"}}"#,
                r#"duplicate key "stopReason" in message at line 1 column 72"#,
            ),
            (
                r#"{"in":{"type":"settings","settings":{"baseDelayMs":-1,"baseDelayMs":5}}}"#,
                r#"duplicate key "baseDelayMs" in in.settings at line 1 column 70"#,
            ),
            (
                r#"{"out":[{},{"a":1,"a":2}]}"#,
                r#"duplicate key "a" in out[1] at line 1 column 24"#,
            ),
            (
                r#"{"\u0061":1,"a":2}"#,
                r#"duplicate key "a" at line 1 column 18"#,
            ),
        ];
        for (line, want) in cases {
            assert_eq!(parse_value(line).unwrap_err().to_string(), want, "{line}");
        }
        // The same keys in different objects are no duplicates.
        assert!(parse_value(r#"{"a":{"a":{"a":1}},"b":[{"a":1},{"a":2}]}"#).is_ok());
    }

    #[test]
    fn exact_integers() {
        let line = r#"{"type":"agent_end","nowMs":18446744073709551615,"message":{"stopReason":"error","usage":{"input":18446744073709551615,"cacheRead":18446744073709551615}}}"#;
        let Ok(InputOwned::AgentEnd { message, now_ms }) =
            InputOwned::from_json(&serde_json::from_str(line).unwrap())
        else {
            panic!()
        };
        assert_eq!(now_ms, Some(u64::MAX));
        assert_eq!(message.usage, Some(Usage::new(u64::MAX, u64::MAX)));
        let line = r#"{"type":"agent_end","message":{"stopReason":"error","usage":{"cacheWrite":18446744073709551615},"shouldRetry":true,"retryAfterMs":18446744073709551615}}"#;
        let Ok(InputOwned::AgentEnd { message, .. }) =
            InputOwned::from_json(&serde_json::from_str(line).unwrap())
        else {
            panic!()
        };
        assert_eq!(
            message.usage,
            Some(Usage::new(0, 0).with_cache_write(u64::MAX))
        );
        assert_eq!(message.should_retry, Some(true));
        assert_eq!(message.retry_after_ms, Some(u64::MAX));
        let line = r#"{"type":"timer_fired","timer":18446744073709551616}"#;
        let err = InputOwned::from_json(&serde_json::from_str(line).unwrap()).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("timer: expected a non-negative integer"));
    }

    #[test]
    fn refusable_inputs() {
        let v = json!({"type":"set_auto_retry","enabled":"yes"});
        assert_eq!(
            InputOwned::from_json(&v).unwrap(),
            InputOwned::Invalid {
                type_name: "set_auto_retry",
                error: "enabled: expected a boolean, found a string \"yes\"".into()
            }
        );
        let v = json!({"type":"set_auto_retry"});
        assert!(matches!(
            InputOwned::from_json(&v).unwrap(),
            InputOwned::Invalid { .. }
        ));
        let v = json!({"type":"settings","settings":null});
        assert_eq!(
            InputOwned::from_json(&v).unwrap(),
            InputOwned::Invalid {
                type_name: "settings",
                error: "retry: expected an object, found null".into()
            }
        );
    }
}
