//! The RPC commands and responses of spec §7, as JSON lines (feature `json`).
//!
//! Handling a line has two stages, so a host can add its own line types
//! (the agent events of [`crate::host::sidecar`], say) without touching this
//! module:
//!
//! 1. [`Envelope::parse`] reads the line: a JSON object with a string `type`
//!    and an optional string or numeric `id`. Anything else answers a
//!    `parse` error.
//! 2. The host matches [`Envelope::type_name`] against its own commands first,
//!    then calls [`Command::from_envelope`] for the commands, and answers
//!    [`Envelope::unknown`] when nobody knows the type.
//!
//! [`handle_line`] does all of that for the commands alone:
//!
//! ```
//! use autoretry::{Machine, wire::rpc::handle_line};
//! let mut machine = Machine::default();
//! let (response, outputs) = handle_line(&mut machine, r#"{"type":"set_auto_retry","enabled":false,"id":"r1"}"#);
//! assert_eq!(response.to_json_line(), r#"{"id":"r1","type":"response","command":"set_auto_retry","success":true}"#);
//! assert!(outputs.is_empty());
//! assert!(!machine.auto_retry_enabled());
//! ```
//!
//! # `id`
//!
//! `id` may be any JSON string or number (an [`Id`]) and is echoed first in
//! the response exactly as given: a string as the same string, a number as
//! the same number text (`"id":7` answers `{"id":7,...}`, `"id":1.50`
//! answers `{"id":1.50,...}`). A request with an `id` that is present but
//! neither (`null`, `true`, an array or an object) is answered with an
//! error naming the field `id`
//! (`{"type":"response","command":"<type>","success":false,"error":"id: expected a string or a number, found null","code":"invalid_field"}`),
//! without an `id`, and the command is not executed.
//!
//! # Unknown commands
//!
//! A `type` nobody knows answers `Unknown command: <type>` (spec §7) with
//! the code `unknown_command`; when a known type is close to it (a typo, a
//! different case, `camelCase` for `snake_case`), the response names it in
//! `didYouMean`:
//! `{"type":"response","command":"set_auto_rety","success":false,"error":"Unknown command: set_auto_rety","code":"unknown_command","didYouMean":"set_auto_retry"}`.
//!
//! # Error codes
//!
//! Every failed response carries, next to the sentence of `error`, a
//! machine-readable `code` (an [`ErrorCode`]), and a host that counts its
//! lines may add the number of the line (`"line":n`, 1-based; the sidecar
//! does):
//! `{"type":"response","command":"parse","success":false,"error":"duplicate key \"type\" at line 1 column 37","code":"duplicate_key","line":3}`.
//!
//! | `code` | the line |
//! |---|---|
//! | `invalid_json` | is not JSON (or not UTF-8) |
//! | `duplicate_key` | has an object that gives a key twice |
//! | `not_an_object` | is JSON, but not an object |
//! | `invalid_field` | misses a field, gives a required one as `null`, or gives one of the wrong type (`type` and `id` included) |
//! | `unknown_command` | has a `type` nobody knows |
//! | `invalid_settings` | has a `retry` group that fails validation (spec §4) |
//! | `line_too_long` | is longer than the host's limit |
//! | `agent_run_during_backoff` | is refused (spec §6a): an agent event while a backoff is pending |
//! | `awaiting_usage_limit_answer` | is refused: an agent event while the usage-limit answer is awaited |
//! | `usage_limit_text_mismatch` | is refused: `usage_limit_marked` for a text other than the marked one |
//! | `awaiting_model_switch_answer` | is refused: an agent event while the model-switch answer is awaited |
//! | `model_switch_text_mismatch` | is refused: `model_switched` for a text other than the decision's |

use std::collections::BTreeMap;
use std::fmt;

use serde::ser::{Error as _, SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::machine::{Input, Machine, Refused};
use crate::output::Outputs;
use crate::settings::RetrySettings;
use crate::wire::json::{
    boolean, describe, parse_value, require, settings_from_json, to_json, DecodeError, ErrorKind,
};
use crate::wire::SettingsGroup;

/// A request line that is a JSON object with a string `type` (spec §7).
///
/// ```
/// use autoretry::wire::rpc::Envelope;
/// let env = Envelope::parse(r#"{"type":"abort_retry","id":"r2"}"#).unwrap();
/// assert_eq!((env.type_name(), env.id().and_then(|id| id.as_str())), ("abort_retry", Some("r2")));
///
/// let err = Envelope::parse("not json").unwrap_err();
/// assert!(err.to_json_line().starts_with(r#"{"type":"response","command":"parse","success":false,"error":"#));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    id: Option<Id>,
    type_name: String,
    fields: Map<String, Value>,
}

impl Envelope {
    /// Reads one line. The error is the response to send: `parse` when the
    /// line is not a JSON object with a string `type` (an object that gives
    /// a key twice is not: `duplicate key "type" at line 1 column 37`, see
    /// [`parse_value`]), or an error naming `id` when `id` is present but
    /// neither a string nor a number.
    pub fn parse(line: &str) -> Result<Envelope, Response> {
        let parse_error = |id: Option<Id>, code: ErrorCode, error: String| Response {
            id,
            command: "parse".into(),
            result: Err(Failure::new(code, error)),
        };
        let mut fields = match parse_value(line) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(parse_error(
                    None,
                    ErrorCode::NotAnObject,
                    format!("expected a JSON object, found {}", describe(&other)),
                ))
            }
            Err(e) => return Err(parse_error(None, ErrorCode::of(&e), e.to_string())),
        };
        let id = match fields.remove("id") {
            None => Ok(None),
            Some(Value::String(id)) => Ok(Some(Id::String(id))),
            Some(Value::Number(number)) => Ok(Some(Id::Number(
                raw_id(line).unwrap_or_else(|| number.to_string()),
            ))),
            Some(other) => Err(format!(
                "id: expected a string or a number, found {}",
                describe(&other)
            )),
        };
        let type_name = match fields.remove("type") {
            Some(Value::String(t)) => t,
            Some(other) => {
                return Err(parse_error(
                    id.ok().flatten(),
                    ErrorCode::InvalidField,
                    format!("type: expected a string, found {}", describe(&other)),
                ))
            }
            None => {
                return Err(parse_error(
                    id.ok().flatten(),
                    ErrorCode::InvalidField,
                    "type: missing (expected a string)".into(),
                ))
            }
        };
        let id = match id {
            Ok(id) => id,
            Err(error) => {
                return Err(Response {
                    id: None,
                    command: type_name,
                    result: Err(Failure::new(ErrorCode::InvalidField, error)),
                })
            }
        };
        Ok(Envelope {
            id,
            type_name,
            fields,
        })
    }

    /// The request's `id`, when it had one.
    ///
    /// ```
    /// use autoretry::wire::rpc::{Envelope, Id};
    /// assert_eq!(Envelope::parse(r#"{"type":"x"}"#).unwrap().id(), None);
    /// assert_eq!(Envelope::parse(r#"{"type":"x","id":7}"#).unwrap().id(), Some(&Id::Number("7".into())));
    /// ```
    pub fn id(&self) -> Option<&Id> {
        self.id.as_ref()
    }

    /// The request's `type`.
    ///
    /// ```
    /// use autoretry::wire::rpc::Envelope;
    /// assert_eq!(Envelope::parse(r#"{"type":"abort"}"#).unwrap().type_name(), "abort");
    /// ```
    pub fn type_name(&self) -> &str {
        &self.type_name
    }

    /// The other fields of the request (without `type` and `id`).
    ///
    /// ```
    /// use autoretry::wire::rpc::Envelope;
    /// let env = Envelope::parse(r#"{"type":"x","n":1}"#).unwrap();
    /// assert_eq!(env.fields()["n"], 1);
    /// ```
    pub fn fields(&self) -> &Map<String, Value> {
        &self.fields
    }

    /// The required boolean field `name`; the error response names it.
    ///
    /// ```
    /// use autoretry::wire::rpc::Envelope;
    /// let env = Envelope::parse(r#"{"type":"set_auto_retry","enabled":"yes"}"#).unwrap();
    /// assert_eq!(env.bool_field("enabled").unwrap_err().to_json_line(),
    ///     r#"{"type":"response","command":"set_auto_retry","success":false,"error":"enabled: expected a boolean, found a string \"yes\"","code":"invalid_field"}"#);
    /// ```
    pub fn bool_field(&self, name: &str) -> Result<bool, Response> {
        require(&self.fields, name, "a boolean", boolean)
            .map_err(|e| self.error(ErrorCode::InvalidField, e.to_string()))
    }

    /// A success response without data.
    ///
    /// ```
    /// use autoretry::wire::rpc::Envelope;
    /// let env = Envelope::parse(r#"{"type":"abort_retry","id":"r2"}"#).unwrap();
    /// assert_eq!(env.ok().to_json_line(), r#"{"id":"r2","type":"response","command":"abort_retry","success":true}"#);
    /// ```
    pub fn ok(&self) -> Response {
        Response {
            id: self.id.clone(),
            command: self.type_name.clone(),
            result: Ok(None),
        }
    }

    /// A success response with `data`, serialized in its own key order.
    ///
    /// ```
    /// use autoretry::{Machine, wire::rpc::Envelope};
    /// let env = Envelope::parse(r#"{"type":"get_retry_state"}"#).unwrap();
    /// assert_eq!(env.ok_with_data(&Machine::default().state()).to_json_line(),
    ///     r#"{"type":"response","command":"get_retry_state","success":true,"data":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#);
    /// ```
    pub fn ok_with_data<T: Serialize + ?Sized>(&self, data: &T) -> Response {
        Response {
            id: self.id.clone(),
            command: self.type_name.clone(),
            result: Ok(Some(to_json(data))),
        }
    }

    /// An error response.
    ///
    /// ```
    /// use autoretry::wire::rpc::{Envelope, ErrorCode};
    /// let env = Envelope::parse(r#"{"type":"x","id":"7"}"#).unwrap();
    /// assert_eq!(env.error(ErrorCode::InvalidField, "n: missing".into()).to_json_line(),
    ///     r#"{"id":"7","type":"response","command":"x","success":false,"error":"n: missing","code":"invalid_field"}"#);
    /// ```
    pub fn error(&self, code: ErrorCode, error: String) -> Response {
        Response {
            id: self.id.clone(),
            command: self.type_name.clone(),
            result: Err(Failure::new(code, error)),
        }
    }

    /// The response to a refused input (spec §6a): the refusal's sentence
    /// and code.
    ///
    /// ```
    /// use autoretry::{Refused, wire::rpc::Envelope};
    /// let env = Envelope::parse(r#"{"type":"agent_end"}"#).unwrap();
    /// assert_eq!(env.refused(Refused::AgentRunDuringBackoff).to_json_line(),
    ///     r#"{"type":"response","command":"agent_end","success":false,"error":"the agent must not run while a retry backoff is pending","code":"agent_run_during_backoff"}"#);
    /// ```
    pub fn refused(&self, refused: Refused) -> Response {
        self.error(ErrorCode::from(refused), refused.to_string())
    }

    /// The answer to a type nobody knows: `Unknown command: <type>`, with
    /// the nearest of the [`Command::NAMES`] in `didYouMean` when one is
    /// close (see [`Envelope::unknown_among`]).
    ///
    /// ```
    /// use autoretry::wire::rpc::Envelope;
    /// let env = Envelope::parse(r#"{"type":"reboot"}"#).unwrap();
    /// assert_eq!(env.unknown().to_json_line(), r#"{"type":"response","command":"reboot","success":false,"error":"Unknown command: reboot","code":"unknown_command"}"#);
    /// let env = Envelope::parse(r#"{"type":"abort_rety"}"#).unwrap();
    /// assert!(env.unknown().to_json_line().ends_with(r#""code":"unknown_command","didYouMean":"abort_retry"}"#));
    /// ```
    pub fn unknown(&self) -> Response {
        self.unknown_among(&Command::NAMES)
    }

    /// The answer to a type none of `known` is: `Unknown command: <type>`,
    /// and in `didYouMean` the known type nearest to it when it is close:
    /// at most a third of that type's length away in edit distance (two
    /// for a short one), where a change of case, or an `_` added or
    /// dropped, is one edit. A host with types of its own (the sidecar's
    /// agent events) passes them with the commands'.
    ///
    /// ```
    /// use autoretry::wire::rpc::{Command, Envelope};
    /// let env = Envelope::parse(r#"{"type":"agentEnd"}"#).unwrap();
    /// let known = [&Command::NAMES[..], &["agent_end"]].concat();
    /// assert!(env.unknown_among(&known).to_json_line().ends_with(r#""didYouMean":"agent_end"}"#));
    /// assert!(!env.unknown().to_json_line().contains("didYouMean"));
    /// ```
    pub fn unknown_among(&self, known: &[&'static str]) -> Response {
        let mut failure = Failure::new(
            ErrorCode::UnknownCommand,
            format!("Unknown command: {}", self.type_name),
        );
        failure.did_you_mean = nearest(&self.type_name, known);
        Response {
            id: self.id.clone(),
            command: self.type_name.clone(),
            result: Err(failure),
        }
    }
}

/// A request's `id` (spec §7): a JSON string or number, echoed first in
/// the response exactly as the request gave it.
///
/// ```
/// use autoretry::wire::rpc::Id;
/// assert_eq!(Id::String("r1".into()).to_json(), r#""r1""#);
/// assert_eq!(Id::Number("1e3".into()).to_json(), "1e3");
/// assert_eq!(Id::Number("7".into()).as_str(), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    /// A string `id`: the string (its JSON escapes decoded).
    String(String),
    /// A numeric `id`: the number's JSON text as the request wrote it
    /// (`7`, `-1`, `1.50`, `1e3`, `18446744073709551616`), echoed unchanged.
    Number(String),
}

impl Id {
    /// The string of a string `id`; `None` for a number.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Id::String(id) => Some(id),
            Id::Number(_) => None,
        }
    }

    /// The `id` as JSON text: a string quoted and escaped, a number as its
    /// text.
    pub fn to_json(&self) -> String {
        to_json(self)
    }
}

/// A string `id` as a JSON string; a numeric one as its text, unchanged
/// (serde_json's raw value: with another serializer it fails).
impl Serialize for Id {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::String(id) => serializer.serialize_str(id),
            Id::Number(text) => RawValue::from_string(text.clone())
                .map_err(S::Error::custom)?
                .serialize(serializer),
        }
    }
}

/// The text of the top-level `id` of a line that parsed as an object: a
/// number's exact text, which a parsed [`Value`] no longer holds (`1.50`
/// reads as 1.5, `1e3` as 1000.0).
fn raw_id(line: &str) -> Option<String> {
    let fields: BTreeMap<String, &RawValue> = serde_json::from_str(line).ok()?;
    fields.get("id").map(|raw| raw.get().to_owned())
}

/// The known name nearest to `name`, when it is close: at most a third of
/// the known name's length away in edit distance, and at least two (so a
/// typo in a short name counts), where a change of case or an `_` added or
/// dropped is one edit (`setAutoRetry` is four from `set_auto_retry`).
fn nearest<'k>(name: &str, known: &[&'k str]) -> Option<&'k str> {
    let chars = |s: &str| -> Vec<char> { s.chars().collect() };
    let name = chars(name);
    known
        .iter()
        .map(|&k| (edit_distance(&name, &chars(k)), k))
        .filter(|&(d, k)| d > 0 && d <= (k.chars().count() / 3).max(2))
        .min_by_key(|&(d, _)| d)
        .map(|(_, k)| k)
}

/// The Levenshtein distance of two texts: the fewest insertions,
/// deletions and substitutions of one char that turn `a` into `b`.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    // `row[j]`: the distance from the prefix of `a` done so far to `b[..j]`.
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        // The previous row's `row[j]` (the diagonal), then its `row[j + 1]`.
        let mut diagonal = i;
        let mut left = i + 1;
        for (cb, cell) in b.iter().zip(row.iter_mut().skip(1)) {
            let here = (diagonal + usize::from(ca != cb))
                .min(left + 1)
                .min(*cell + 1);
            diagonal = *cell;
            *cell = here;
            left = here;
        }
        if let Some(first) = row.first_mut() {
            *first = i + 1;
        }
    }
    row.last().copied().unwrap_or(0)
}

/// The commands of spec §7 (`set_auto_retry`, `abort_retry`,
/// `get_retry_state`) and the other two a host offers: `abort` (§5.3) and
/// `set_retry_settings` (§4).
///
/// ```
/// use autoretry::wire::rpc::{Command, Envelope};
/// let env = Envelope::parse(r#"{"type":"set_auto_retry","enabled":true}"#).unwrap();
/// assert_eq!(Command::from_envelope(&env), Some(Ok(Command::SetAutoRetry { enabled: true })));
/// let env = Envelope::parse(r#"{"type":"abort"}"#).unwrap();
/// assert_eq!(Command::from_envelope(&env), Some(Ok(Command::Abort)));
/// let env = Envelope::parse(r#"{"type":"agent_end"}"#).unwrap();
/// assert_eq!(Command::from_envelope(&env), None);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Command {
    /// `set_auto_retry {enabled}`: write `retry.enabled`.
    SetAutoRetry {
        /// `enabled` (a boolean).
        enabled: bool,
    },
    /// `abort_retry`: cancel the retry (spec §5.3).
    AbortRetry,
    /// `get_retry_state`: answers with `data`:
    /// `{"autoRetryEnabled":b,"isRetrying":b,"retryAttempt":n}`.
    GetRetryState,
    /// `abort`: the global abort (spec §5.3): everything `abort_retry`
    /// does, then `abort_agent`.
    Abort,
    /// `set_retry_settings {settings}`: **replaces the whole `retry` group;
    /// it is not a patch: a key left out takes its profile's default, not
    /// the value in force** (spec §4). To change one key, send the whole
    /// group with that key changed. Answers with `data`: the settings now
    /// in force. Bad settings answer an error naming the key and change
    /// nothing.
    SetRetrySettings {
        /// The decoded group.
        settings: RetrySettings,
    },
}

impl Command {
    /// The `type` of each command, in the order of the variants.
    ///
    /// ```
    /// use autoretry::wire::rpc::{Command, Envelope};
    /// for name in Command::NAMES {
    ///     let env = Envelope::parse(&format!(r#"{{"type":"{name}"}}"#)).unwrap();
    ///     assert!(Command::from_envelope(&env).is_some(), "{name}");
    /// }
    /// ```
    pub const NAMES: [&'static str; 5] = [
        "set_auto_retry",
        "abort_retry",
        "get_retry_state",
        "abort",
        "set_retry_settings",
    ];

    /// The command of a known type; `None` when the type is not a command,
    /// `Some(Err(response))` when a field is missing or ill-typed (or, for
    /// `set_retry_settings`, the group is invalid). Unknown extra fields are
    /// ignored.
    ///
    /// ```
    /// use autoretry::wire::rpc::{Command, Envelope};
    /// let env = Envelope::parse(r#"{"type":"set_retry_settings","settings":{"maxRetries":-1}}"#).unwrap();
    /// let err = Command::from_envelope(&env).unwrap().unwrap_err();
    /// assert!(err.to_json_line().contains(r#""error":"retry.maxRetries: expected a non-negative integer"#));
    /// ```
    pub fn from_envelope(envelope: &Envelope) -> Option<Result<Command, Response>> {
        Some(match envelope.type_name() {
            "set_auto_retry" => envelope
                .bool_field("enabled")
                .map(|enabled| Command::SetAutoRetry { enabled }),
            "abort_retry" => Ok(Command::AbortRetry),
            "get_retry_state" => Ok(Command::GetRetryState),
            "abort" => Ok(Command::Abort),
            "set_retry_settings" => match envelope.fields().get("settings") {
                None => Err(envelope.error(
                    ErrorCode::InvalidField,
                    "settings: missing (expected an object)".into(),
                )),
                Some(group) => settings_from_json(group)
                    .map(|settings| Command::SetRetrySettings { settings })
                    .map_err(|e| envelope.error(ErrorCode::InvalidSettings, e.to_string())),
            },
            _ => return None,
        })
    }

    /// The machine input of the command; `None` for a query.
    ///
    /// ```
    /// use autoretry::{Input, wire::rpc::Command};
    /// assert_eq!(Command::Abort.input(), Some(Input::Abort));
    /// assert_eq!(Command::GetRetryState.input(), None);
    /// ```
    pub fn input(self) -> Option<Input<'static>> {
        Some(match self {
            Command::SetAutoRetry { enabled } => Input::SetAutoRetry { enabled },
            Command::AbortRetry => Input::AbortRetry,
            Command::GetRetryState => return None,
            Command::Abort => Input::Abort,
            Command::SetRetrySettings { settings } => Input::Settings(settings),
        })
    }

    /// The success response, once the command's input (if any) has been
    /// handled by `machine`: `data` for `get_retry_state` (the state) and
    /// `set_retry_settings` (the settings in force), none for the others.
    ///
    /// ```
    /// use autoretry::{Machine, wire::rpc::{Command, Envelope}};
    /// let env = Envelope::parse(r#"{"type":"set_retry_settings","settings":{},"id":"s"}"#).unwrap();
    /// assert_eq!(Command::from_envelope(&env).unwrap().unwrap().answer(&env, &Machine::default()).to_json_line(),
    ///     r#"{"id":"s","type":"response","command":"set_retry_settings","success":true,"data":{"enabled":true,"maxRetries":3,"baseDelayMs":2000}}"#);
    /// ```
    pub fn answer(self, envelope: &Envelope, machine: &Machine) -> Response {
        match self {
            Command::GetRetryState => envelope.ok_with_data(&machine.state()),
            Command::SetRetrySettings { .. } => {
                envelope.ok_with_data(&SettingsGroup(machine.settings()))
            }
            Command::SetAutoRetry { .. } | Command::AbortRetry | Command::Abort => envelope.ok(),
        }
    }

    /// Runs the command on the machine and returns the response and the
    /// outputs the host must carry out (for `abort_retry`: `cancel_timer`,
    /// the `auto_retry_end` event to stream, `settled`, ...).
    ///
    /// ```
    /// use autoretry::{Machine, wire::rpc::{Command, Envelope}};
    /// let env = Envelope::parse(r#"{"type":"abort_retry","id":"r2"}"#).unwrap();
    /// let (response, outputs) = Command::AbortRetry.execute(&env, &mut Machine::default());
    /// assert_eq!(response.to_json_line(), r#"{"id":"r2","type":"response","command":"abort_retry","success":true}"#);
    /// assert!(outputs.is_empty());
    /// ```
    pub fn execute(
        self,
        envelope: &Envelope,
        machine: &mut Machine,
    ) -> (Response, Outputs<'static>) {
        let outputs = match self.input().map(|input| machine.handle(input)) {
            None => Outputs::new(),
            Some(Ok(outputs)) => outputs,
            Some(Err(refused)) => return (envelope.refused(refused), Outputs::new()),
        };
        (self.answer(envelope, machine), outputs)
    }
}

/// Handles one command line: parse, decode, execute (no agent events: see
/// [`crate::host::sidecar`] for a host that also takes those and owns the
/// timers).
/// Returns the response line to send and the outputs to carry out.
///
/// ```
/// use autoretry::{Machine, wire::rpc::handle_line};
/// let mut m = Machine::default();
/// let (r, _) = handle_line(&mut m, r#"{"type":"get_retry_state","id":"q"}"#);
/// assert_eq!(r.to_json_line(), r#"{"id":"q","type":"response","command":"get_retry_state","success":true,"data":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#);
/// let (r, _) = handle_line(&mut m, r#"{"type":"set_auto_retry","id":"r1"}"#);
/// assert_eq!(r.to_json_line(), r#"{"id":"r1","type":"response","command":"set_auto_retry","success":false,"error":"enabled: missing (expected a boolean)","code":"invalid_field"}"#);
/// ```
pub fn handle_line(machine: &mut Machine, line: &str) -> (Response, Outputs<'static>) {
    let envelope = match Envelope::parse(line) {
        Ok(envelope) => envelope,
        Err(response) => return (response, Outputs::new()),
    };
    match Command::from_envelope(&envelope) {
        None => (envelope.unknown(), Outputs::new()),
        Some(Err(response)) => (response, Outputs::new()),
        Some(Ok(command)) => command.execute(&envelope, machine),
    }
}

/// The machine-readable `code` of a failed response, next to its sentence
/// (the table of the [module docs](self#error-codes)).
///
/// ```
/// use autoretry::{Refused, wire::rpc::ErrorCode};
/// assert_eq!(ErrorCode::DuplicateKey.as_str(), "duplicate_key");
/// assert_eq!(ErrorCode::from(Refused::AwaitingUsageLimitAnswer).as_str(), "awaiting_usage_limit_answer");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// `invalid_json`: the line is not JSON (or not UTF-8).
    InvalidJson,
    /// `duplicate_key`: an object of the line gives a key twice.
    DuplicateKey,
    /// `not_an_object`: the line is JSON, but not an object.
    NotAnObject,
    /// `invalid_field`: a field is missing, `null` where it is required, or
    /// of the wrong type.
    InvalidField,
    /// `unknown_command`: nobody knows the line's `type`.
    UnknownCommand,
    /// `invalid_settings`: the `retry` group fails validation (spec §4).
    InvalidSettings,
    /// `line_too_long`: the line is longer than the host's limit.
    LineTooLong,
    /// `agent_run_during_backoff`: [`Refused::AgentRunDuringBackoff`].
    AgentRunDuringBackoff,
    /// `awaiting_usage_limit_answer`: [`Refused::AwaitingUsageLimitAnswer`].
    AwaitingUsageLimitAnswer,
    /// `usage_limit_text_mismatch`: [`Refused::UsageLimitTextMismatch`].
    UsageLimitTextMismatch,
    /// `awaiting_model_switch_answer`: [`Refused::AwaitingModelSwitchAnswer`].
    AwaitingModelSwitchAnswer,
    /// `model_switch_text_mismatch`: [`Refused::ModelSwitchTextMismatch`].
    ModelSwitchTextMismatch,
    /// `empty_with_partial`: [`Refused::EmptyWithPartial`].
    EmptyWithPartial,
}

impl ErrorCode {
    /// The code as it travels.
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::DuplicateKey => "duplicate_key",
            ErrorCode::NotAnObject => "not_an_object",
            ErrorCode::InvalidField => "invalid_field",
            ErrorCode::UnknownCommand => "unknown_command",
            ErrorCode::InvalidSettings => "invalid_settings",
            ErrorCode::LineTooLong => "line_too_long",
            ErrorCode::AgentRunDuringBackoff => "agent_run_during_backoff",
            ErrorCode::AwaitingUsageLimitAnswer => "awaiting_usage_limit_answer",
            ErrorCode::UsageLimitTextMismatch => "usage_limit_text_mismatch",
            ErrorCode::AwaitingModelSwitchAnswer => "awaiting_model_switch_answer",
            ErrorCode::ModelSwitchTextMismatch => "model_switch_text_mismatch",
            ErrorCode::EmptyWithPartial => "empty_with_partial",
        }
    }

    /// The code of a decoding error: `invalid_json`, `duplicate_key` or
    /// `invalid_field`.
    ///
    /// ```
    /// use autoretry::wire::{json::parse_value, rpc::ErrorCode};
    /// assert_eq!(ErrorCode::of(&parse_value("{").unwrap_err()), ErrorCode::InvalidJson);
    /// ```
    pub fn of(error: &DecodeError) -> ErrorCode {
        match error.kind() {
            ErrorKind::InvalidJson => ErrorCode::InvalidJson,
            ErrorKind::DuplicateKey => ErrorCode::DuplicateKey,
            _ => ErrorCode::InvalidField,
        }
    }
}

impl From<Refused> for ErrorCode {
    fn from(refused: Refused) -> Self {
        match refused {
            Refused::AgentRunDuringBackoff => ErrorCode::AgentRunDuringBackoff,
            Refused::AwaitingUsageLimitAnswer => ErrorCode::AwaitingUsageLimitAnswer,
            Refused::UsageLimitTextMismatch => ErrorCode::UsageLimitTextMismatch,
            Refused::AwaitingModelSwitchAnswer => ErrorCode::AwaitingModelSwitchAnswer,
            Refused::ModelSwitchTextMismatch => ErrorCode::ModelSwitchTextMismatch,
            Refused::EmptyWithPartial => ErrorCode::EmptyWithPartial,
        }
    }
}

/// Why a request failed: the sentence (`error`), its [`ErrorCode`], when
/// the host counts its lines the line's number, and for an unknown command
/// the known one it is close to.
///
/// ```
/// use autoretry::wire::rpc::{ErrorCode, Failure};
/// let failure = Failure::new(ErrorCode::LineTooLong, "too long".into()).at_line(7);
/// assert_eq!((failure.code, failure.line), (ErrorCode::LineTooLong, Some(7)));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Failure {
    /// `code`.
    pub code: ErrorCode,
    /// `error`: one sentence, naming the field when a field is at fault.
    pub message: String,
    /// `line`: the 1-based number of the request's line, when known.
    pub line: Option<u64>,
    /// `didYouMean`: for [`ErrorCode::UnknownCommand`], the known type
    /// nearest to the request's, when one is close.
    pub did_you_mean: Option<&'static str>,
}

impl Failure {
    /// A failure with no line number.
    pub fn new(code: ErrorCode, message: String) -> Self {
        Failure {
            code,
            message,
            line: None,
            did_you_mean: None,
        }
    }

    /// The same failure on line `line`.
    pub fn at_line(self, line: u64) -> Self {
        Failure {
            line: Some(line),
            ..self
        }
    }
}

/// A response line (spec §7):
/// `{"id":..,"type":"response","command":..,"success":true[,"data":..]}` or
/// `{"id":..,"type":"response","command":..,"success":false,"error":"..","code":"..",["line":n]}`,
/// `id` first and only when the request had one, then `didYouMean` last
/// when an unknown command is close to a known one.
///
/// ```
/// use autoretry::wire::rpc::{Id, Response};
/// let r = Response { id: Some(Id::String("r1".into())), command: "set_auto_retry".into(), result: Ok(None) };
/// assert_eq!(r.to_string(), r#"{"id":"r1","type":"response","command":"set_auto_retry","success":true}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Response {
    /// The request's `id`, echoed first when it had one.
    pub id: Option<Id>,
    /// `command`: the request's `type`, or `parse`.
    pub command: String,
    /// `Ok(data)` for `success: true`, with `data` as JSON text when there
    /// is some; `Err(failure)` for `success: false`.
    pub result: Result<Option<String>, Failure>,
}

impl Response {
    /// Whether the response reports success.
    ///
    /// ```
    /// use autoretry::wire::rpc::{ErrorCode, Failure, Response};
    /// let failure = Failure::new(ErrorCode::InvalidJson, "x".into());
    /// assert!(!Response { id: None, command: "parse".into(), result: Err(failure) }.is_success());
    /// ```
    pub fn is_success(&self) -> bool {
        self.result.is_ok()
    }

    /// The response as one JSON line (without the newline).
    ///
    /// ```
    /// use autoretry::wire::rpc::{ErrorCode, Failure, Response};
    /// let failure = Failure::new(ErrorCode::UnknownCommand, "Unknown command: x".into()).at_line(2);
    /// let r = Response { id: None, command: "x".into(), result: Err(failure) };
    /// assert_eq!(r.to_json_line(), r#"{"type":"response","command":"x","success":false,"error":"Unknown command: x","code":"unknown_command","line":2}"#);
    /// ```
    pub fn to_json_line(&self) -> String {
        to_json(self)
    }
}

/// The keys of spec §7 in order: `id` (when the request had one), `type`,
/// `command`, `success`, then `data` (its JSON text as it is) or `error`,
/// `code`, `line` (when known) and `didYouMean` (when close).
impl Serialize for Response {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(None)?;
        if let Some(id) = &self.id {
            map.serialize_entry("id", id)?;
        }
        map.serialize_entry("type", "response")?;
        map.serialize_entry("command", &self.command)?;
        map.serialize_entry("success", &self.result.is_ok())?;
        match &self.result {
            Ok(None) => {}
            Ok(Some(data)) => {
                let data = RawValue::from_string(data.clone()).map_err(S::Error::custom)?;
                map.serialize_entry("data", &data)?;
            }
            Err(failure) => {
                map.serialize_entry("error", &failure.message)?;
                map.serialize_entry("code", failure.code.as_str())?;
                if let Some(number) = failure.line {
                    map.serialize_entry("line", &number)?;
                }
                if let Some(name) = failure.did_you_mean {
                    map.serialize_entry("didYouMean", name)?;
                }
            }
        }
        map.end()
    }
}

impl fmt::Display for Response {
    /// [`Response::to_json_line`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_json_line())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AssistantMessage, Output};

    fn answer(machine: &mut Machine, line: &str) -> String {
        handle_line(machine, line).0.to_json_line()
    }

    #[test]
    fn responses_byte_exact() {
        let mut m = Machine::default();
        let cases = [
            (r#"{"type":"set_auto_retry","enabled":true,"id":"r1"}"#,
             r#"{"id":"r1","type":"response","command":"set_auto_retry","success":true}"#),
            (r#"{"type":"abort_retry","id":"r2"}"#,
             r#"{"id":"r2","type":"response","command":"abort_retry","success":true}"#),
            (r#"{"type":"abort_retry"}"#,
             r#"{"type":"response","command":"abort_retry","success":true}"#),
            (r#"{"id":"é\"\u2028","type":"get_retry_state"}"#,
             "{\"id\":\"é\\\"\u{2028}\",\"type\":\"response\",\"command\":\"get_retry_state\",\"success\":true,\"data\":{\"autoRetryEnabled\":true,\"isRetrying\":false,\"retryAttempt\":0}}"),
            (r#"{"type":"frobnicate","id":"r9"}"#,
             r#"{"id":"r9","type":"response","command":"frobnicate","success":false,"error":"Unknown command: frobnicate","code":"unknown_command"}"#),
            (r#"{"type":"set_auto_retry","enabled":1,"id":"r3"}"#,
             r#"{"id":"r3","type":"response","command":"set_auto_retry","success":false,"error":"enabled: expected a boolean, found 1","code":"invalid_field"}"#),
            (r#"{"type":"set_auto_retry","enabled":null}"#,
             r#"{"type":"response","command":"set_auto_retry","success":false,"error":"enabled: expected a boolean, found null","code":"invalid_field"}"#),
            (r#"{"type":"set_auto_retry"}"#,
             r#"{"type":"response","command":"set_auto_retry","success":false,"error":"enabled: missing (expected a boolean)","code":"invalid_field"}"#),
            (r#"{"type":"abort_retry","id":null}"#,
             r#"{"type":"response","command":"abort_retry","success":false,"error":"id: expected a string or a number, found null","code":"invalid_field"}"#),
            (r#"[1]"#,
             r#"{"type":"response","command":"parse","success":false,"error":"expected a JSON object, found an array","code":"not_an_object"}"#),
            (r#"{"type":3,"id":"r4"}"#,
             r#"{"id":"r4","type":"response","command":"parse","success":false,"error":"type: expected a string, found 3","code":"invalid_field"}"#),
            (r#"{"type":"abort","id":"g"}"#,
             r#"{"id":"g","type":"response","command":"abort","success":true}"#),
            (r#"{"type":"set_retry_settings","settings":{"baseDelayMs":"1"}}"#,
             r#"{"type":"response","command":"set_retry_settings","success":false,"error":"retry.baseDelayMs: expected a non-negative integer that fits u64, found a string \"1\"","code":"invalid_settings"}"#),
            (r#"{"type":"set_retry_settings","settings":[]}"#,
             r#"{"type":"response","command":"set_retry_settings","success":false,"error":"retry: expected an object, found an array","code":"invalid_settings"}"#),
            (r#"{"type":"set_retry_settings","settings":{"enabled":true},"id":"s"}"#,
             r#"{"id":"s","type":"response","command":"set_retry_settings","success":true,"data":{"enabled":true,"maxRetries":3,"baseDelayMs":2000}}"#),
            (r#"{"id":"r5"}"#,
             r#"{"id":"r5","type":"response","command":"parse","success":false,"error":"type: missing (expected a string)","code":"invalid_field"}"#),
        ];
        for (line, want) in cases {
            assert_eq!(answer(&mut m, line), want, "{line}");
        }
        let parse = answer(&mut m, "{nope");
        assert!(
            parse.starts_with(
                r#"{"type":"response","command":"parse","success":false,"error":"invalid JSON: "#
            ),
            "{parse}"
        );
    }

    /// A numeric `id` is accepted and echoed as the request wrote it, the
    /// command runs, and an unknown command with one still answers
    /// `unknown_command`; `id`s that are neither string nor number are
    /// refused by name.
    #[test]
    fn numeric_ids_echo_as_written() {
        let mut m = Machine::default();
        for id in [
            "5",
            "0",
            "-1",
            "1.50",
            "-0",
            "1e3",
            "2E-2",
            "18446744073709551616",
            "123456789012345678901234567890",
        ] {
            let line = format!(r#"{{"type":"get_retry_state", "id" : {id} }}"#);
            let want = format!(
                r#"{{"id":{id},"type":"response","command":"get_retry_state","success":true,"data":{{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}}}"#
            );
            assert_eq!(answer(&mut m, &line), want, "{line}");
        }
        let (r, _) = handle_line(
            &mut m,
            r#"{"type":"set_auto_retry","enabled":false,"id":42}"#,
        );
        assert_eq!(r.id, Some(Id::Number("42".into())));
        assert!(r.is_success() && !m.auto_retry_enabled());
        assert_eq!(
            answer(&mut m, r#"{"type":"frobnicate","id":9}"#),
            r#"{"id":9,"type":"response","command":"frobnicate","success":false,"error":"Unknown command: frobnicate","code":"unknown_command"}"#
        );
        assert_eq!(
            answer(&mut m, r#"{"type":3,"id":4}"#),
            r#"{"id":4,"type":"response","command":"parse","success":false,"error":"type: expected a string, found 3","code":"invalid_field"}"#
        );
        for (id, found) in [
            ("true", "a boolean true"),
            ("[1]", "an array"),
            ("{}", "an object"),
        ] {
            let line = format!(r#"{{"type":"abort_retry","id":{id}}}"#);
            let want = format!(
                r#"{{"type":"response","command":"abort_retry","success":false,"error":"id: expected a string or a number, found {found}","code":"invalid_field"}}"#
            );
            assert_eq!(answer(&mut m, &line), want, "{line}");
        }
    }

    /// An unknown command close to a known one names it; one far from
    /// every known one does not.
    #[test]
    fn unknown_commands_suggest_the_nearest_known_one() {
        let mut m = Machine::default();
        let cases = [
            ("set_auto_rety", Some("set_auto_retry")),
            ("setAutoRetry", Some("set_auto_retry")),
            ("ABORT", None),
            ("Abort", Some("abort")),
            ("abort_retyr", Some("abort_retry")),
            ("get_retrystate", Some("get_retry_state")),
            ("get_state", None),
            ("set_settings", Some("set_retry_settings")),
            ("retry_settings", Some("set_retry_settings")),
            ("reboot", None),
            ("timer_fired", None),
            ("", None),
            ("agent_end", None),
        ];
        for (name, want) in cases {
            let line = format!(r#"{{"type":"{name}","id":"u"}}"#);
            let mut response = format!(
                r#"{{"id":"u","type":"response","command":"{name}","success":false,"error":"Unknown command: {name}","code":"unknown_command""#
            );
            if let Some(known) = want {
                response.push_str(&format!(r#","didYouMean":"{known}""#));
            }
            response.push('}');
            assert_eq!(answer(&mut m, &line), response, "{name}");
        }
    }

    /// The rule the docs put in bold: `set_retry_settings` replaces the
    /// whole group, so a key left out goes back to its default rather
    /// than keeping the value in force.
    #[test]
    fn set_retry_settings_replaces_the_whole_group() {
        let mut m = Machine::default();
        let set = r#"{"type":"set_retry_settings","settings":{"maxRetries":5,"baseDelayMs":7}}"#;
        assert!(handle_line(&mut m, set).0.is_success());
        assert_eq!(
            (m.settings().max_retries, m.settings().base_delay_ms),
            (5, 7)
        );
        let (r, _) = handle_line(
            &mut m,
            r#"{"type":"set_retry_settings","settings":{"baseDelayMs":9}}"#,
        );
        assert_eq!(
            r.to_json_line(),
            r#"{"type":"response","command":"set_retry_settings","success":true,"data":{"enabled":true,"maxRetries":3,"baseDelayMs":9}}"#
        );
        assert_eq!(m.settings().max_retries, RetrySettings::DEFAULT.max_retries);
    }

    #[test]
    fn edit_distance_counts_single_char_edits() {
        let d = |a: &str, b: &str| {
            edit_distance(
                &a.chars().collect::<Vec<_>>(),
                &b.chars().collect::<Vec<_>>(),
            )
        };
        for (a, b, want) in [
            ("", "", 0),
            ("", "abc", 3),
            ("abc", "", 3),
            ("kitten", "sitting", 3),
            ("flaw", "lawn", 2),
            ("abort", "abort", 0),
            ("abort", "Abort", 1),
            ("é", "e", 1),
        ] {
            assert_eq!(d(a, b), want, "{a} {b}");
            assert_eq!(d(b, a), want, "{b} {a}");
        }
    }

    #[test]
    fn commands_drive_the_machine() {
        let mut m = Machine::default();
        let (r, out) = handle_line(&mut m, r#"{"type":"set_auto_retry","enabled":false}"#);
        assert!(r.is_success() && out.is_empty());
        assert!(!m.auto_retry_enabled());
        let _ = handle_line(&mut m, r#"{"type":"set_auto_retry","enabled":true}"#);
        let _ = m
            .handle(Input::AgentEnd {
                message: AssistantMessage::error("overloaded"),
                now_ms: None,
            })
            .unwrap();
        let (r, out) = handle_line(&mut m, r#"{"type":"get_retry_state","id":"s"}"#);
        assert_eq!(
            r.to_json_line(),
            r#"{"id":"s","type":"response","command":"get_retry_state","success":true,"data":{"autoRetryEnabled":true,"isRetrying":true,"retryAttempt":1}}"#
        );
        assert!(out.is_empty());
        let (r, out) = handle_line(&mut m, r#"{"type":"abort_retry","id":"a"}"#);
        assert!(r.is_success());
        assert!(matches!(out[0], Output::CancelTimer { .. }));
        assert!(!m.is_retrying());
    }
}
