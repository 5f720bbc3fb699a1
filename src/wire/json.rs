//! JSON-lines decoding of host inputs (feature `json`).
//!
//! Lines are parsed with serde_json into a `Value` by [`parse_value`] (which
//! refuses an object that gives a key twice, naming the key), then read
//! field by field so every error names its field ([`DecodeError`]: where,
//! what kind of fault, the detail). Integers are read exactly (`u64` up to
//! `18446744073709551615`, never through `f64`). An input line decodes to
//! an [`InputLine`]: the owned input ([`InputBuf`], its message a
//! [`MessageBuf`]), or a [`RefusedLine`] the host must refuse.
//!
//! One rule for `null`: in an optional field it means absent; a required
//! field that is `null` is an error (`switched: expected a boolean, found
//! null`). The settings group is stricter (spec §4: `null` is a wrong type
//! for every key).

use std::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};

use crate::machine::Input;
use crate::message::{Partial, StopReason, Usage};
use crate::output::TimerId;
use crate::owned::{InputBuf, MessageBuf};
use crate::settings::RetrySettings;
use crate::wire::SettingsGroup;

/// A line or field that could not be decoded: where ([`path`](Self::path),
/// `message.usage.input`; empty for the whole text), what kind of fault
/// ([`kind`](Self::kind)) and the [`detail`](Self::detail). It displays as
/// `path: detail`, or the detail alone when the path is empty.
///
/// ```
/// use autoretry::wire::json::{ErrorKind, InputLine};
/// let value = serde_json::json!({"type": "timer_fired", "timer": -1});
/// let err = InputLine::from_json(&value).unwrap_err();
/// assert_eq!((err.path(), err.kind()), ("timer", ErrorKind::OutOfRange));
/// assert_eq!(err.detail(), "expected a non-negative integer that fits u64, found -1");
/// assert_eq!(err.to_string(), "timer: expected a non-negative integer that fits u64, found -1");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DecodeError {
    path: String,
    kind: ErrorKind,
    detail: String,
}

/// What kind of fault a [`DecodeError`] reports.
///
/// ```
/// use autoretry::wire::json::{parse_value, ErrorKind};
/// assert_eq!(parse_value("{").unwrap_err().kind(), ErrorKind::InvalidJson);
/// assert_eq!(parse_value(r#"{"a":1,"a":2}"#).unwrap_err().kind(), ErrorKind::DuplicateKey);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The text is not JSON (or not UTF-8).
    InvalidJson,
    /// An object gives a key twice.
    DuplicateKey,
    /// A required field is absent.
    Missing,
    /// A field has the wrong JSON type (`null` in a required field
    /// included).
    WrongType,
    /// A number outside the field's range (a negative, fractional or too
    /// large integer).
    OutOfRange,
    /// A string outside the field's set of names (`stopReason`, `type`,
    /// ...).
    UnknownValue,
    /// An object has a key it may not have.
    UnknownKey,
    /// The `retry` settings group fails validation; the path names the
    /// key (`retry.maxRetries`), or is `retry` for the group as a whole.
    InvalidSettings,
}

impl DecodeError {
    /// An error at `path` (empty: the whole text).
    ///
    /// ```
    /// use autoretry::wire::json::{DecodeError, ErrorKind};
    /// let err = DecodeError::new("host", ErrorKind::UnknownKey, r#"unknown key "window""#);
    /// assert_eq!(err.to_string(), r#"host: unknown key "window""#);
    /// assert_eq!(DecodeError::new("", ErrorKind::InvalidJson, "invalid UTF-8").to_string(), "invalid UTF-8");
    /// ```
    // Plumbing for the sibling crates (the test kit's and the command
    // line's decoders), not part of the documented API: hidden, and free
    // to change.
    #[doc(hidden)]
    pub fn new(path: impl Into<String>, kind: ErrorKind, detail: impl Into<String>) -> Self {
        DecodeError {
            path: path.into(),
            kind,
            detail: detail.into(),
        }
    }

    /// A required field that is absent: `field: missing (expected what)`.
    ///
    /// ```
    /// use autoretry::wire::json::{DecodeError, ErrorKind};
    /// let err = DecodeError::missing("in", "an input object");
    /// assert_eq!((err.kind(), err.to_string().as_str()), (ErrorKind::Missing, "in: missing (expected an input object)"));
    /// ```
    // Plumbing for the sibling crates (the test kit's and the command
    // line's decoders), not part of the documented API: hidden, and free
    // to change.
    #[doc(hidden)]
    pub fn missing(field: &str, what: &str) -> Self {
        DecodeError::new(
            field,
            ErrorKind::Missing,
            format!("missing (expected {what})"),
        )
    }

    /// A field of the wrong type: `field: expected what, found <found>`.
    ///
    /// ```
    /// use autoretry::wire::json::{DecodeError, ErrorKind};
    /// let err = DecodeError::wrong_type("n", "a string", &serde_json::json!(5));
    /// assert_eq!((err.kind(), err.to_string().as_str()), (ErrorKind::WrongType, "n: expected a string, found 5"));
    /// ```
    // Plumbing for the sibling crates (the test kit's and the command
    // line's decoders), not part of the documented API: hidden, and free
    // to change.
    #[doc(hidden)]
    pub fn wrong_type(field: &str, what: &str, found: &Value) -> Self {
        DecodeError::new(
            field,
            ErrorKind::WrongType,
            format!("expected {what}, found {}", describe(found)),
        )
    }

    /// Where: the field's path (`message.usage.input`, `in.timer`); empty
    /// when the fault is in the whole text.
    ///
    /// ```
    /// use autoretry::wire::json::parse_object;
    /// assert_eq!(parse_object("[1]").unwrap_err().path(), "");
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// What kind of fault.
    ///
    /// ```
    /// use autoretry::wire::json::{parse_object, ErrorKind};
    /// assert_eq!(parse_object("[1]").unwrap_err().kind(), ErrorKind::WrongType);
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }

    /// The detail, without the path.
    ///
    /// ```
    /// use autoretry::wire::json::parse_object;
    /// assert_eq!(parse_object("[1]").unwrap_err().detail(), "expected a JSON object, found an array");
    /// ```
    pub fn detail(&self) -> &str {
        &self.detail
    }

    /// The same error inside the field `prefix`: its path becomes
    /// `prefix.path`, or `prefix` when it was empty.
    ///
    /// ```
    /// use autoretry::wire::json::{DecodeError, ErrorKind};
    /// assert_eq!(DecodeError::missing("input", "an integer").within("usage").to_string(), "usage.input: missing (expected an integer)");
    /// assert_eq!(DecodeError::new("", ErrorKind::WrongType, "expected an object").within("in").to_string(), "in: expected an object");
    /// ```
    // Plumbing for the sibling crates (the test kit's and the command
    // line's decoders), not part of the documented API: hidden, and free
    // to change.
    #[doc(hidden)]
    pub fn within(mut self, prefix: &str) -> Self {
        self.path = if self.path.is_empty() {
            prefix.to_owned()
        } else {
            format!("{prefix}.{}", self.path)
        };
        self
    }
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.detail)
        } else {
            write!(f, "{}: {}", self.path, self.detail)
        }
    }
}

impl core::error::Error for DecodeError {}

/// Describes a JSON value for an error message: `null`, `a boolean true`,
/// `-1`, `3.0`, `a string "x"`, `an array`, `an object`.
pub(crate) fn describe(value: &Value) -> String {
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
            serde_json::error::Category::Data => {
                DecodeError::new("", ErrorKind::DuplicateKey, e.to_string())
            }
            _ => DecodeError::new("", ErrorKind::InvalidJson, format!("invalid JSON: {e}")),
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
        other => Err(DecodeError::wrong_type("", "a JSON object", &other)),
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
// Plumbing for the sibling crates (the test kit reads its vector lines
// with it), not part of the documented API: hidden, and free to change.
#[doc(hidden)]
pub fn object<'v>(
    obj: &'v Map<String, Value>,
    field: &str,
) -> Result<Option<&'v Map<String, Value>>, DecodeError> {
    match present(obj, field) {
        None => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(other) => Err(DecodeError::wrong_type(field, "an object", other)),
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
// Plumbing for the sibling crates (the test kit reads its vector lines
// with it), not part of the documented API: hidden, and free to change.
#[doc(hidden)]
pub fn uint(obj: &Map<String, Value>, field: &str) -> Result<Option<u64>, DecodeError> {
    match present(obj, field) {
        None => Ok(None),
        Some(Value::Number(n)) if n.as_u64().is_some() => Ok(n.as_u64()),
        Some(other) => {
            let what = "a non-negative integer that fits u64";
            let e = DecodeError::wrong_type(field, what, other);
            Err(match other {
                Value::Number(_) => DecodeError {
                    kind: ErrorKind::OutOfRange,
                    ..e
                },
                _ => e,
            })
        }
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
// Plumbing for the sibling crates (the test kit reads its vector lines
// with it), not part of the documented API: hidden, and free to change.
#[doc(hidden)]
pub fn boolean(obj: &Map<String, Value>, field: &str) -> Result<Option<bool>, DecodeError> {
    match present(obj, field) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(other) => Err(DecodeError::wrong_type(field, "a boolean", other)),
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
// Plumbing for the sibling crates (the test kit reads its vector lines
// with it), not part of the documented API: hidden, and free to change.
#[doc(hidden)]
pub fn string<'v>(
    obj: &'v Map<String, Value>,
    field: &str,
) -> Result<Option<&'v str>, DecodeError> {
    match present(obj, field) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(other) => Err(DecodeError::wrong_type(field, "a string", other)),
    }
}

/// A field that must be present: `value`, or the error `field: missing
/// (expected what)`.
fn required<T>(value: Option<T>, field: &str, what: &str) -> Result<T, DecodeError> {
    value.ok_or_else(|| DecodeError::missing(field, what))
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
// Plumbing for the sibling crates (the test kit reads its vector lines
// with it), not part of the documented API: hidden, and free to change.
#[doc(hidden)]
pub fn require<'v, T>(
    obj: &'v Map<String, Value>,
    field: &str,
    what: &str,
    read: impl FnOnce(&'v Map<String, Value>, &str) -> Result<Option<T>, DecodeError>,
) -> Result<T, DecodeError> {
    if obj.get(field).is_some_and(Value::is_null) {
        return Err(DecodeError::wrong_type(field, what, &Value::Null));
    }
    required(read(obj, field)?, field, what)
}

/// Decodes a `retry` settings group strictly (see [`SettingsGroup`]); the
/// error is [`ErrorKind::InvalidSettings`], its path the key
/// (`retry.maxRetries`), or `retry` for the group as a whole (an unknown or
/// repeated key, a group that is not an object).
///
/// ```
/// use autoretry::wire::json::settings_from_json;
/// let err = settings_from_json(&serde_json::json!({"maxRetries": -1})).unwrap_err();
/// assert_eq!(err.path(), "retry.maxRetries");
/// assert_eq!(err.detail(), "expected a non-negative integer that fits u32, found -1");
/// let err = settings_from_json(&serde_json::json!({"retries": 3})).unwrap_err();
/// assert_eq!((err.path(), err.detail()), ("retry", r#"unknown key "retries""#));
/// assert_eq!(err.to_string(), r#"retry: unknown key "retries""#);
/// let err = settings_from_json(&serde_json::json!([1])).unwrap_err();
/// assert_eq!((err.path(), err.detail()), ("retry", "expected an object, found an array"));
/// let err = settings_from_json(&serde_json::json!({"maxRetries": 2, "enabled": null})).unwrap_err();
/// assert_eq!(err.to_string(), "retry.enabled: expected a boolean, found null");
/// ```
pub fn settings_from_json(value: &Value) -> Result<RetrySettings, DecodeError> {
    SettingsGroup::deserialize_keyed(value).map_err(|(key, e)| {
        let path = match key {
            Some(key) => format!("retry.{key}"),
            None => "retry".to_owned(),
        };
        // The group's messages start with their path; one of serde's own
        // (none is known to reach here) keeps its text whole.
        let message = e.to_string();
        match message
            .strip_prefix(path.as_str())
            .and_then(|m| m.strip_prefix(": "))
        {
            Some(detail) => DecodeError::new(path, ErrorKind::InvalidSettings, detail),
            None => DecodeError::new("", ErrorKind::InvalidSettings, message),
        }
    })
}

impl MessageBuf {
    /// Decodes
    /// `{"role":"assistant","stopReason":..,"errorMessage":..,"usage":{"input":n,"cacheRead":n,"cacheWrite":n},"shouldRetry":b,"retryAfterMs":n,"partial":..,"empty":b,"headers":[[name,value],..]}`
    /// (spec §2, §10.2, §11.2, §12.3, §13.1; feature `json`).
    /// `stopReason` is required and must be one of the five names;
    /// `role`, when present, must be `"assistant"`; other fields are ignored.
    /// An optional field given as `null` is absent; a missing count of
    /// `usage` is 0. Errors name the field (`stopReason: ...`,
    /// `usage.input: ...`, `shouldRetry: ...`).
    ///
    /// ```
    /// use autoretry::{MessageBuf, StopReason};
    /// let value = serde_json::json!({"role": "assistant", "stopReason": "error", "errorMessage": "overloaded", "usage": {"input": 5}, "retryAfterMs": 1500});
    /// let msg = MessageBuf::from_json(&value).unwrap();
    /// assert_eq!(msg.as_message().stop_reason, StopReason::Error);
    /// assert_eq!(msg.usage.unwrap().cache_read, 0);
    /// assert_eq!((msg.should_retry, msg.retry_after_ms), (None, Some(1500)));
    /// let err = MessageBuf::from_json(&serde_json::json!({"stopReason": "Error"})).unwrap_err();
    /// assert!(err.to_string().starts_with(r#"stopReason: expected one of "stop", "length""#));
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, DecodeError> {
        let Value::Object(obj) = value else {
            return Err(DecodeError::wrong_type("", "an object", value));
        };
        match string(obj, "role")? {
            None | Some("assistant") => {}
            Some(other) => {
                return Err(DecodeError::new(
                    "role",
                    ErrorKind::UnknownValue,
                    format!(
                        "expected \"assistant\", found {}",
                        describe(&Value::String(other.into()))
                    ),
                ))
            }
        }
        let name = require(obj, "stopReason", "a string", string)?;
        let stop_reason = StopReason::from_wire(name).ok_or_else(|| {
            DecodeError::new(
                "stopReason",
                ErrorKind::UnknownValue,
                format!(
                    "expected one of \"stop\", \"length\", \"toolUse\", \"error\", \"aborted\", found {}",
                    describe(&Value::String(name.into()))
                ),
            )
        })?;
        let error_message = string(obj, "errorMessage")?.map(str::to_owned);
        let usage = match object(obj, "usage")? {
            None => None,
            Some(usage) => {
                let count = |field| {
                    uint(usage, field)
                        .map(Option::unwrap_or_default)
                        .map_err(|e| e.within("usage"))
                };
                Some(Usage {
                    input: count("input")?,
                    cache_read: count("cacheRead")?,
                    cache_write: count("cacheWrite")?,
                })
            }
        };
        Ok(MessageBuf {
            stop_reason,
            error_message,
            usage,
            should_retry: boolean(obj, "shouldRetry")?,
            retry_after_ms: uint(obj, "retryAfterMs")?,
            // Last: a bad `partial`, `empty` or `headers` in an otherwise
            // good message is an input to refuse (spec §11.2, §12.3,
            // §13.1), which `InputLine` tells apart.
            partial: partial(obj)?,
            empty: empty(obj)?,
            headers: headers(obj)?,
        })
    }
}

/// `empty` of a message object (spec §12.3): absent or `null` is `false`;
/// anything but a boolean is an error naming it.
fn empty(obj: &Map<String, Value>) -> Result<bool, DecodeError> {
    Ok(boolean(obj, "empty")?.unwrap_or(false))
}

/// The error of a message's fields that make an input to refuse rather
/// than a malformed line (`partial`, `empty`, `headers`), in the order
/// decoded.
fn refusable(obj: &Map<String, Value>) -> Option<DecodeError> {
    partial(obj)
        .err()
        .or_else(|| empty(obj).err())
        .or_else(|| headers(obj).err())
}

/// One line of the header reading (spec §13.1, `autoretry headers`):
/// `{"headers":[[name,value],..],"nowMs":n|null}`, decoded to the pairs and
/// the clock. `headers` is required (`null` is an empty list); other keys
/// are ignored; errors name the field.
///
/// ```
/// use autoretry::{read_headers, wire::json::headers_line};
/// let (pairs, now_ms) = headers_line(r#"{"headers":[["Retry-After","120"]],"nowMs":null}"#).unwrap();
/// assert_eq!(read_headers(pairs, now_ms).retry_after_ms, Some(120_000));
/// let err = headers_line(r#"{"headers":[["a"]]}"#).unwrap_err();
/// assert_eq!(err.to_string(), "headers[0]: expected a [name, value] pair of strings, found an array");
/// let err = headers_line(r#"{"headers":[],"nowMs":-1}"#).unwrap_err();
/// assert_eq!(err.path(), "nowMs");
/// assert_eq!(headers_line("{}").unwrap_err().to_string(), "headers: missing (expected a list of [name, value] pairs of strings)");
/// ```
#[allow(clippy::type_complexity)]
pub fn headers_line(line: &str) -> Result<(Vec<(String, String)>, Option<u64>), DecodeError> {
    let obj = parse_object(line)?;
    if !obj.contains_key("headers") {
        return Err(DecodeError::missing("headers", HEADER_LIST));
    }
    Ok((headers(&obj)?, uint(&obj, "nowMs")?))
}

/// What `headers` must be.
const HEADER_LIST: &str = "a list of [name, value] pairs of strings";

/// `headers` of a message object (spec §13.1): absent or `null` is none;
/// otherwise a list of `[name, value]` pairs of strings, or an error naming
/// it (and the entry: `headers[2]: ...`).
///
/// ```
/// use autoretry::MessageBuf;
/// let ok = serde_json::json!({"stopReason": "error", "headers": [["retry-after", "5"]]});
/// assert_eq!(MessageBuf::from_json(&ok).unwrap().headers, [("retry-after".to_string(), "5".to_string())]);
/// let bad = serde_json::json!({"stopReason": "error", "headers": {"retry-after": "5"}});
/// assert_eq!(
///     MessageBuf::from_json(&bad).unwrap_err().to_string(),
///     "headers: expected a list of [name, value] pairs of strings, found an object",
/// );
/// let bad = serde_json::json!({"stopReason": "error", "headers": [["retry-after", 5]]});
/// assert_eq!(
///     MessageBuf::from_json(&bad).unwrap_err().to_string(),
///     "headers[0]: expected a [name, value] pair of strings, found an array",
/// );
/// ```
fn headers(obj: &Map<String, Value>) -> Result<Vec<(String, String)>, DecodeError> {
    let list = match present(obj, "headers") {
        None => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(other) => return Err(DecodeError::wrong_type("headers", HEADER_LIST, other)),
    };
    list.iter()
        .enumerate()
        .map(|(i, entry)| {
            match entry {
                Value::Array(pair) => match pair.as_slice() {
                    [Value::String(name), Value::String(value)] => {
                        Ok((name.clone(), value.clone()))
                    }
                    _ => Err(entry),
                },
                _ => Err(entry),
            }
            .map_err(|entry| {
                let what = "a [name, value] pair of strings";
                DecodeError::wrong_type(&format!("headers[{i}]"), what, entry)
            })
        })
        .collect()
}

/// `partial` of a message object (spec §11.2): absent or `null` is
/// [`Partial::None`]; anything but its three strings is an error naming it.
fn partial(obj: &Map<String, Value>) -> Result<Partial, DecodeError> {
    match present(obj, "partial") {
        None => Ok(Partial::None),
        Some(Value::String(name)) if Partial::from_wire(name).is_some() => {
            Ok(Partial::from_wire(name).unwrap_or_default())
        }
        Some(other) => {
            let e = DecodeError::wrong_type("partial", "\"none\", \"text\" or \"tools\"", other);
            Err(match other {
                Value::String(_) => DecodeError {
                    kind: ErrorKind::UnknownValue,
                    ..e
                },
                _ => e,
            })
        }
    }
}

/// One host input line (`{"type":"agent_end","message":{...}}`, ...),
/// decoded: an [`InputBuf`] for the machine, or a [`RefusedLine`].
///
/// On the wire, `timer_fired`'s `timer` is the number as written (in the
/// conformance vectors, an ordinal that the vector host maps to the
/// machine's id), and the answers `usage_limit_marked` and `model_switched`
/// carry no text: they decode with an empty `error_message`, and
/// [`InputLine::as_input`] lends them the text the host kept.
///
/// ```
/// use autoretry::{Input, InputBuf, TimerId, wire::json::InputLine};
/// let value = serde_json::json!({"type": "timer_fired", "timer": 18446744073709551615u64});
/// let line = InputLine::from_json(&value).unwrap();
/// assert_eq!(line, InputLine::Input(InputBuf::TimerFired { timer: TimerId(u64::MAX) }));
/// assert_eq!(line.as_input(""), Ok(Input::TimerFired { timer: TimerId(u64::MAX) }));
///
/// let bad = serde_json::json!({"type": "settings", "settings": {"maxRetries": -1}});
/// let InputLine::Refused(refused) = InputLine::from_json(&bad).unwrap() else { panic!() };
/// assert_eq!(refused.type_name, "settings");
/// assert!(refused.reason.to_string().starts_with("retry.maxRetries"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum InputLine {
    /// An input for the machine.
    Input(InputBuf),
    /// An input whose value fails validation: the host refuses it (spec
    /// §6a).
    Refused(RefusedLine),
}

/// A well-formed input line the host must refuse (spec §6a): a `settings`
/// whose group fails validation, a `set_auto_retry` or `model_switched`
/// whose boolean is missing or not a boolean, a message that is good but for
/// its `partial` (spec §11.2), its `empty` (§12.3) or its `headers`
/// (§13.1), an `agent_end` whose `nowMs` is not a u64 (§13.1), a
/// `stream_start` or `stream_event` whose `nowMs` is missing or not a u64
/// (§12.2).
///
/// ```
/// use autoretry::wire::json::{ErrorKind, InputLine};
/// let line = serde_json::json!({"type": "set_auto_retry", "enabled": "yes"});
/// let InputLine::Refused(refused) = InputLine::from_json(&line).unwrap() else { panic!() };
/// assert_eq!((refused.type_name, refused.reason.kind()), ("set_auto_retry", ErrorKind::WrongType));
/// assert_eq!(refused.to_string(), r#"enabled: expected a boolean, found a string "yes""#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RefusedLine {
    /// The input's `type`.
    pub type_name: &'static str,
    /// Why, naming the field (`retry.maxRetries: ...`, `enabled: ...`).
    pub reason: DecodeError,
}

impl fmt::Display for RefusedLine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.reason.fmt(f)
    }
}

impl InputLine {
    /// Decodes an input object. Unknown fields are ignored; a missing or
    /// ill-typed field is an error that names it. See [`RefusedLine`] for
    /// the inputs that decode to [`InputLine::Refused`].
    ///
    /// ```
    /// use autoretry::wire::json::InputLine;
    /// let err = InputLine::from_json(&serde_json::json!({"type": "agent_end"})).unwrap_err();
    /// assert_eq!(err.to_string(), "message: missing (expected an object)");
    /// let err = InputLine::from_json(&serde_json::json!({"type": "reboot"})).unwrap_err();
    /// assert!(err.to_string().starts_with(r#"type: unknown input "reboot""#));
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, DecodeError> {
        let Value::Object(obj) = value else {
            return Err(DecodeError::wrong_type("", "an object", value));
        };
        let ty = require(obj, "type", "a string", string)?;
        // A message that is good but for its `partial` makes an input to
        // refuse (spec §11.2), not a malformed line.
        let message = || -> Result<Result<MessageBuf, DecodeError>, DecodeError> {
            let value = required(obj.get("message"), "message", "an object")?;
            match MessageBuf::from_json(value) {
                Ok(message) => Ok(Ok(message)),
                Err(e) => {
                    let e = e.within("message");
                    let refusable = value.as_object().and_then(refusable);
                    if refusable.map(|p| p.within("message")).as_ref() == Some(&e) {
                        Ok(Err(e))
                    } else {
                        Err(e)
                    }
                }
            }
        };
        let refused = |type_name, reason| InputLine::Refused(RefusedLine { type_name, reason });
        Ok(match ty {
            "message_end" => match message()? {
                Ok(message) => InputLine::Input(InputBuf::MessageEnd { message }),
                Err(reason) => refused("message_end", reason),
            },
            // A `nowMs` that is not a u64 is refused (spec §13.1), after a
            // malformed message.
            "agent_end" => match (message()?, uint(obj, "nowMs")) {
                (Ok(message), Ok(now_ms)) => {
                    InputLine::Input(InputBuf::AgentEnd { message, now_ms })
                }
                (Err(reason), _) | (_, Err(reason)) => refused("agent_end", reason),
            },
            // A missing or ill-typed `nowMs` is an input to refuse (spec
            // §12.2).
            "stream_start" => match require(obj, "nowMs", "a non-negative integer", uint) {
                Ok(now_ms) => InputLine::Input(InputBuf::StreamStart { now_ms }),
                Err(reason) => refused("stream_start", reason),
            },
            "stream_event" => match require(obj, "nowMs", "a non-negative integer", uint) {
                Ok(now_ms) => InputLine::Input(InputBuf::StreamEvent { now_ms }),
                Err(reason) => refused("stream_event", reason),
            },
            "timer_fired" => InputLine::Input(InputBuf::TimerFired {
                timer: TimerId(require(obj, "timer", "a non-negative integer", uint)?),
            }),
            "usage_limit_marked" => InputLine::Input(InputBuf::UsageLimitMarked {
                switched: require(obj, "switched", "a boolean", boolean)?,
            }),
            // Refused, whether the machine waits for an answer or not
            // (spec §11.3).
            "model_switched" => match require(obj, "switched", "a boolean", boolean) {
                Ok(switched) => InputLine::Input(InputBuf::ModelSwitched { switched }),
                Err(reason) => refused("model_switched", reason),
            },
            "abort_retry" => InputLine::Input(InputBuf::AbortRetry),
            "abort" => InputLine::Input(InputBuf::Abort),
            "set_auto_retry" => match require(obj, "enabled", "a boolean", boolean) {
                Ok(enabled) => InputLine::Input(InputBuf::SetAutoRetry { enabled }),
                Err(reason) => refused("set_auto_retry", reason),
            },
            "settings" => {
                let group = required(obj.get("settings"), "settings", "an object")?;
                match settings_from_json(group) {
                    Ok(settings) => InputLine::Input(InputBuf::Settings(settings)),
                    Err(reason) => refused("settings", reason),
                }
            }
            other => {
                return Err(DecodeError::new(
                    "type",
                    ErrorKind::UnknownValue,
                    format!(
                        "unknown input {} (expected message_end, agent_end, timer_fired, \
                         stream_start, stream_event, usage_limit_marked, model_switched, \
                         abort_retry, abort, set_auto_retry or settings)",
                        Value::String(other.into())
                    ),
                ))
            }
        })
    }

    /// Borrows the input for [`crate::Machine::handle`], or the
    /// [`RefusedLine`] to refuse. The answers `usage_limit_marked` and
    /// `model_switched` take `marked_error` as their text: the error text of
    /// the `agent_end` whose decision asked for `mark_usage_limit` or
    /// `switch_model` (the host keeps it); every other input ignores it.
    ///
    /// ```
    /// use autoretry::{Input, InputBuf, wire::json::InputLine};
    /// let line = InputLine::Input(InputBuf::UsageLimitMarked { switched: true });
    /// assert_eq!(line.as_input("usage limit"), Ok(Input::UsageLimitMarked { switched: true, error_message: "usage limit" }));
    /// ```
    pub fn as_input<'a>(&'a self, marked_error: &'a str) -> Result<Input<'a>, &'a RefusedLine> {
        match self {
            InputLine::Input(input) => Ok(input.as_input_answering(marked_error)),
            InputLine::Refused(refused) => Err(refused),
        }
    }
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
            assert_eq!(InputLine::from_json(&value).unwrap_err().to_string(), want);
        }
    }

    #[test]
    fn null_in_an_optional_field_is_absent() {
        let line = r#"{"type":"agent_end","nowMs":null,"message":{"role":null,"stopReason":"error","errorMessage":null,"usage":null,"shouldRetry":null,"retryAfterMs":null}}"#;
        assert_eq!(
            InputLine::from_json(&parse_value(line).unwrap()).unwrap(),
            InputLine::Input(InputBuf::AgentEnd {
                message: MessageBuf::new(StopReason::Error),
                now_ms: None
            })
        );
        let line = r#"{"type":"message_end","message":{"stopReason":"stop","usage":{"input":null,"cacheRead":3,"cacheWrite":null}}}"#;
        let Ok(InputLine::Input(InputBuf::MessageEnd { message })) =
            InputLine::from_json(&parse_value(line).unwrap())
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
        let Ok(InputLine::Input(InputBuf::AgentEnd { message, now_ms })) =
            InputLine::from_json(&serde_json::from_str(line).unwrap())
        else {
            panic!()
        };
        assert_eq!(now_ms, Some(u64::MAX));
        assert_eq!(message.usage, Some(Usage::new(u64::MAX, u64::MAX)));
        let line = r#"{"type":"agent_end","message":{"stopReason":"error","usage":{"cacheWrite":18446744073709551615},"shouldRetry":true,"retryAfterMs":18446744073709551615}}"#;
        let Ok(InputLine::Input(InputBuf::AgentEnd { message, .. })) =
            InputLine::from_json(&serde_json::from_str(line).unwrap())
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
        let err = InputLine::from_json(&serde_json::from_str(line).unwrap()).unwrap_err();
        assert!(err
            .to_string()
            .starts_with("timer: expected a non-negative integer"));
    }

    #[test]
    fn refusable_inputs() {
        let v = json!({"type":"set_auto_retry","enabled":"yes"});
        assert_eq!(
            InputLine::from_json(&v).unwrap(),
            InputLine::Refused(RefusedLine {
                type_name: "set_auto_retry",
                reason: DecodeError::wrong_type("enabled", "a boolean", &json!("yes")),
            })
        );
        let v = json!({"type":"set_auto_retry"});
        let InputLine::Refused(refused) = InputLine::from_json(&v).unwrap() else {
            panic!()
        };
        assert_eq!(refused.reason.kind(), ErrorKind::Missing);
        let v = json!({"type":"settings","settings":null});
        let InputLine::Refused(refused) = InputLine::from_json(&v).unwrap() else {
            panic!()
        };
        assert_eq!(refused.type_name, "settings");
        assert_eq!(refused.reason.kind(), ErrorKind::InvalidSettings);
        assert_eq!(refused.to_string(), "retry: expected an object, found null");
        let v = json!({"type":"message_end","message":{"stopReason":"stop","partial":"all"}});
        let InputLine::Refused(refused) = InputLine::from_json(&v).unwrap() else {
            panic!()
        };
        assert_eq!(
            (refused.reason.path(), refused.reason.kind()),
            ("message.partial", ErrorKind::UnknownValue)
        );
        assert_eq!(
            InputLine::Refused(refused)
                .as_input("")
                .unwrap_err()
                .type_name,
            "message_end"
        );
    }

    #[test]
    fn bad_headers_and_clocks_are_refused_naming_them() {
        let refused = |v: Value| match InputLine::from_json(&v) {
            Ok(InputLine::Refused(refused)) => (refused.type_name, refused.to_string()),
            other => panic!("{other:?}"),
        };
        let end = |headers: Value| json!({"type":"agent_end","message":{"stopReason":"error","errorMessage":"503","headers":headers}});
        let pairs = "a list of [name, value] pairs of strings";
        let pair = "a [name, value] pair of strings";
        for (headers, want) in [
            (
                json!({"a": "b"}),
                format!("message.headers: expected {pairs}, found an object"),
            ),
            (
                json!("a: b"),
                format!("message.headers: expected {pairs}, found a string \"a: b\""),
            ),
            (
                json!(5),
                format!("message.headers: expected {pairs}, found 5"),
            ),
            (
                json!([["a"]]),
                format!("message.headers[0]: expected {pair}, found an array"),
            ),
            (
                json!([["a", "b"], ["a", 1]]),
                format!("message.headers[1]: expected {pair}, found an array"),
            ),
            (
                json!([["a", "b", "c"]]),
                format!("message.headers[0]: expected {pair}, found an array"),
            ),
            (
                json!([null]),
                format!("message.headers[0]: expected {pair}, found null"),
            ),
            (
                json!(["a", "b"]),
                format!("message.headers[0]: expected {pair}, found a string \"a\""),
            ),
        ] {
            assert_eq!(refused(end(headers)), ("agent_end", want));
        }
        let v = json!({"type":"message_end","message":{"stopReason":"stop","headers":[["a",1]]}});
        assert_eq!(refused(v).0, "message_end");
        for now in [
            json!(1.5),
            json!(-5),
            json!("now"),
            json!(true),
            json!(1e30),
        ] {
            let v = json!({"type":"agent_end","message":{"stopReason":"stop"},"nowMs":now});
            let (ty, why) = refused(v);
            assert_eq!(ty, "agent_end");
            assert!(
                why.starts_with("nowMs: expected a non-negative integer that fits u64"),
                "{why}"
            );
        }
        // A malformed message is still an error, not a refusal.
        let v = json!({"type":"agent_end","message":{"stopReason":5,"headers":5},"nowMs":"now"});
        assert!(InputLine::from_json(&v).is_err());
        // `null` is absent; an empty list reads nothing.
        for headers in [Value::Null, json!([])] {
            let Ok(InputLine::Input(InputBuf::AgentEnd { message, .. })) =
                InputLine::from_json(&end(headers))
            else {
                panic!()
            };
            assert!(message.headers.is_empty());
        }
    }

    #[test]
    fn errors_say_where_and_what_kind() {
        let cases = [
            (
                json!({"type":"agent_end","message":{"stopReason":"error","usage":{"input":-1}}}),
                "message.usage.input",
                ErrorKind::OutOfRange,
            ),
            (
                json!({"type":"agent_end","message":{"stopReason":"error","usage":{"input":"1"}}}),
                "message.usage.input",
                ErrorKind::WrongType,
            ),
            (json!({"type":"agent_end"}), "message", ErrorKind::Missing),
            (
                json!({"type":"agent_end","message":{"stopReason":"fine"}}),
                "message.stopReason",
                ErrorKind::UnknownValue,
            ),
            (
                json!({"type":"agent_end","message":{"role":"user","stopReason":"stop"}}),
                "message.role",
                ErrorKind::UnknownValue,
            ),
            (json!({"type":"reboot"}), "type", ErrorKind::UnknownValue),
            (
                json!({"type":"usage_limit_marked","switched":null}),
                "switched",
                ErrorKind::WrongType,
            ),
            (json!([]), "", ErrorKind::WrongType),
        ];
        for (value, path, kind) in cases {
            let err = InputLine::from_json(&value).unwrap_err();
            assert_eq!((err.path(), err.kind()), (path, kind), "{value}");
        }
    }

    #[test]
    fn the_answers_take_the_kept_text() {
        for (line, want) in [
            (
                json!({"type":"usage_limit_marked","switched":true}),
                Input::UsageLimitMarked {
                    switched: true,
                    error_message: "kept",
                },
            ),
            (
                json!({"type":"model_switched","switched":false}),
                Input::ModelSwitched {
                    switched: false,
                    error_message: "kept",
                },
            ),
        ] {
            assert_eq!(
                InputLine::from_json(&line).unwrap().as_input("kept"),
                Ok(want)
            );
        }
        let end = InputLine::from_json(
            &json!({"type":"agent_end","message":{"stopReason":"error","errorMessage":"own"}}),
        )
        .unwrap();
        let Ok(Input::AgentEnd { message, .. }) = end.as_input("kept") else {
            panic!()
        };
        assert_eq!(message.error_message, Some("own"));
    }
}
