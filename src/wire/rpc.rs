//! The RPC commands and responses of spec §7, as JSON lines (feature `json`).
//!
//! Handling a line has two stages, so a host can add its own line types
//! (the agent events of [`crate::host::sidecar`], say) without touching this
//! module:
//!
//! 1. [`Envelope::parse`] reads the line: a JSON object with a string `type`
//!    and an optional string `id`. Anything else answers a `parse` error.
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
//! `id` may be any JSON string and is echoed first in the response. A
//! request with an `id` that is present but not a string (a number, `null`,
//! ...) is answered with an error naming the field `id`
//! (`{"type":"response","command":"<type>","success":false,"error":"id: expected a string, found 5"}`),
//! without an `id`, and the command is not executed.

use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::machine::{Input, Machine};
use crate::output::Outputs;
use crate::settings::RetrySettings;
use crate::wire::json::{boolean, describe, settings_from_json, to_json};
use crate::wire::SettingsGroup;

/// A request line that is a JSON object with a string `type` (spec §7).
///
/// ```
/// use autoretry::wire::rpc::Envelope;
/// let env = Envelope::parse(r#"{"type":"abort_retry","id":"r2"}"#).unwrap();
/// assert_eq!((env.type_name(), env.id()), ("abort_retry", Some("r2")));
///
/// let err = Envelope::parse("not json").unwrap_err();
/// assert!(err.to_json_line().starts_with(r#"{"type":"response","command":"parse","success":false,"error":"#));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Envelope {
    id: Option<String>,
    type_name: String,
    fields: Map<String, Value>,
}

impl Envelope {
    /// Reads one line. The error is the response to send: `parse` when the
    /// line is not a JSON object with a string `type`, or an error naming
    /// `id` when `id` is present but not a string.
    pub fn parse(line: &str) -> Result<Envelope, Response> {
        let parse_error = |id: Option<String>, error: String| Response {
            id,
            command: "parse".into(),
            result: Err(error),
        };
        let mut fields = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(map)) => map,
            Ok(other) => {
                return Err(parse_error(
                    None,
                    format!("expected a JSON object, found {}", describe(&other)),
                ))
            }
            Err(e) => return Err(parse_error(None, format!("invalid JSON: {e}"))),
        };
        let string_id = match fields.get("id") {
            Some(Value::String(id)) => Some(id.clone()),
            _ => None,
        };
        let type_name = match fields.remove("type") {
            Some(Value::String(t)) => t,
            Some(other) => {
                return Err(parse_error(
                    string_id,
                    format!("type: expected a string, found {}", describe(&other)),
                ))
            }
            None => {
                return Err(parse_error(
                    string_id,
                    "type: missing (expected a string)".into(),
                ))
            }
        };
        let id = match fields.remove("id") {
            None => None,
            Some(Value::String(id)) => Some(id),
            Some(other) => {
                return Err(Response {
                    id: None,
                    command: type_name,
                    result: Err(format!("id: expected a string, found {}", describe(&other))),
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
    /// use autoretry::wire::rpc::Envelope;
    /// assert_eq!(Envelope::parse(r#"{"type":"x"}"#).unwrap().id(), None);
    /// ```
    pub fn id(&self) -> Option<&str> {
        self.id.as_deref()
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
    ///     r#"{"type":"response","command":"set_auto_retry","success":false,"error":"enabled: expected a boolean, found a string \"yes\""}"#);
    /// ```
    pub fn bool_field(&self, name: &str) -> Result<bool, Response> {
        match boolean(&self.fields, name) {
            Ok(Some(b)) => Ok(b),
            Ok(None) => Err(self.error(format!("{name}: missing (expected a boolean)"))),
            Err(e) => Err(self.error(e.message().to_owned())),
        }
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
    /// use autoretry::wire::rpc::Envelope;
    /// let env = Envelope::parse(r#"{"type":"x","id":"7"}"#).unwrap();
    /// assert_eq!(env.error("boom".into()).to_json_line(), r#"{"id":"7","type":"response","command":"x","success":false,"error":"boom"}"#);
    /// ```
    pub fn error(&self, error: String) -> Response {
        Response {
            id: self.id.clone(),
            command: self.type_name.clone(),
            result: Err(error),
        }
    }

    /// The answer to a type nobody knows: `Unknown command: <type>`.
    ///
    /// ```
    /// use autoretry::wire::rpc::Envelope;
    /// let env = Envelope::parse(r#"{"type":"reboot"}"#).unwrap();
    /// assert_eq!(env.unknown().to_json_line(), r#"{"type":"response","command":"reboot","success":false,"error":"Unknown command: reboot"}"#);
    /// ```
    pub fn unknown(&self) -> Response {
        self.error(format!("Unknown command: {}", self.type_name))
    }
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
    /// `set_retry_settings {settings}`: replace the whole `retry` group
    /// (spec §4; missing keys take their defaults). Answers with `data`:
    /// the settings now in force. Bad settings answer an error naming the
    /// key and change nothing.
    SetRetrySettings {
        /// The decoded group.
        settings: RetrySettings,
    },
}

impl Command {
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
                None => Err(envelope.error("settings: missing (expected an object)".into())),
                Some(group) => settings_from_json(group)
                    .map(|settings| Command::SetRetrySettings { settings })
                    .map_err(|e| envelope.error(e.message().to_owned())),
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
            Some(Err(refused)) => return (envelope.error(refused.to_string()), Outputs::new()),
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
/// assert_eq!(r.to_json_line(), r#"{"id":"r1","type":"response","command":"set_auto_retry","success":false,"error":"enabled: missing (expected a boolean)"}"#);
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

/// A response line (spec §7):
/// `{"id":..,"type":"response","command":..,"success":true[,"data":..]}` or
/// `{"id":..,"type":"response","command":..,"success":false,"error":".."}`,
/// `id` first and only when the request had one.
///
/// ```
/// use autoretry::wire::rpc::Response;
/// let r = Response { id: Some("r1".into()), command: "set_auto_retry".into(), result: Ok(None) };
/// assert_eq!(r.to_string(), r#"{"id":"r1","type":"response","command":"set_auto_retry","success":true}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Response {
    /// The request's `id`, echoed first when it had one.
    pub id: Option<String>,
    /// `command`: the request's `type`, or `parse`.
    pub command: String,
    /// `Ok(data)` for `success: true`, with `data` as JSON text when there
    /// is some; `Err(error)` for `success: false`.
    pub result: Result<Option<String>, String>,
}

impl Response {
    /// Whether the response reports success.
    ///
    /// ```
    /// use autoretry::wire::rpc::Response;
    /// assert!(!Response { id: None, command: "parse".into(), result: Err("x".into()) }.is_success());
    /// ```
    pub fn is_success(&self) -> bool {
        self.result.is_ok()
    }

    /// The response as one JSON line (without the newline).
    ///
    /// ```
    /// use autoretry::wire::rpc::Response;
    /// let r = Response { id: None, command: "x".into(), result: Err("Unknown command: x".into()) };
    /// assert_eq!(r.to_json_line(), r#"{"type":"response","command":"x","success":false,"error":"Unknown command: x"}"#);
    /// ```
    pub fn to_json_line(&self) -> String {
        let mut line = String::from("{");
        if let Some(id) = &self.id {
            line.push_str("\"id\":");
            line.push_str(&to_json(id));
            line.push(',');
        }
        line.push_str("\"type\":\"response\",\"command\":");
        line.push_str(&to_json(&self.command));
        match &self.result {
            Ok(None) => line.push_str(",\"success\":true"),
            Ok(Some(data)) => {
                line.push_str(",\"success\":true,\"data\":");
                line.push_str(data);
            }
            Err(error) => {
                line.push_str(",\"success\":false,\"error\":");
                line.push_str(&to_json(error));
            }
        }
        line.push('}');
        line
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
             r#"{"id":"r9","type":"response","command":"frobnicate","success":false,"error":"Unknown command: frobnicate"}"#),
            (r#"{"type":"set_auto_retry","enabled":1,"id":"r3"}"#,
             r#"{"id":"r3","type":"response","command":"set_auto_retry","success":false,"error":"enabled: expected a boolean, found 1"}"#),
            (r#"{"type":"set_auto_retry","enabled":null}"#,
             r#"{"type":"response","command":"set_auto_retry","success":false,"error":"enabled: expected a boolean, found null"}"#),
            (r#"{"type":"set_auto_retry"}"#,
             r#"{"type":"response","command":"set_auto_retry","success":false,"error":"enabled: missing (expected a boolean)"}"#),
            (r#"{"type":"abort_retry","id":5}"#,
             r#"{"type":"response","command":"abort_retry","success":false,"error":"id: expected a string, found 5"}"#),
            (r#"[1]"#,
             r#"{"type":"response","command":"parse","success":false,"error":"expected a JSON object, found an array"}"#),
            (r#"{"type":3,"id":"r4"}"#,
             r#"{"id":"r4","type":"response","command":"parse","success":false,"error":"type: expected a string, found 3"}"#),
            (r#"{"type":"abort","id":"g"}"#,
             r#"{"id":"g","type":"response","command":"abort","success":true}"#),
            (r#"{"type":"set_retry_settings","settings":{"baseDelayMs":"1"}}"#,
             r#"{"type":"response","command":"set_retry_settings","success":false,"error":"retry.baseDelayMs: expected a non-negative integer that fits u64, found a string \"1\""}"#),
            (r#"{"type":"set_retry_settings","settings":[]}"#,
             r#"{"type":"response","command":"set_retry_settings","success":false,"error":"retry: expected an object, found an array"}"#),
            (r#"{"type":"set_retry_settings","settings":{"enabled":true},"id":"s"}"#,
             r#"{"id":"s","type":"response","command":"set_retry_settings","success":true,"data":{"enabled":true,"maxRetries":3,"baseDelayMs":2000}}"#),
            (r#"{"id":"r5"}"#,
             r#"{"id":"r5","type":"response","command":"parse","success":false,"error":"type: missing (expected a string)"}"#),
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
