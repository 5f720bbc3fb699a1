//! The line format of the conformance vectors (vectors README, "Format"):
//! scenario lines and step lines, decoded strictly with the library's own
//! input decoder ([`InputLine`]), errors naming the field.

use autoretry::wire::json::{
    boolean, object, parse_object, parse_value, require, settings_from_json, string, uint,
    DecodeError, ErrorKind, InputLine,
};
use autoretry::{HostOptions, RetryBudget, RetrySettings};
use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// A scenario line of the vectors: `{"scenario":"name","about":..,"settings":{...},"host":{...}}`.
///
/// ```
/// use autoretry_testkit::vector::ScenarioHeader;
/// let line = r#"{"scenario": "s", "settings": {"maxRetries": 1}, "host": {"contextWindow": 1000, "seed": 42}}"#;
/// let header = ScenarioHeader::parse(line).unwrap();
/// assert_eq!((header.settings.max_retries, header.host.context_window, header.host.seed), (1, 1000, 42));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ScenarioHeader {
    /// `scenario`: the name.
    pub name: String,
    /// `settings`, strictly decoded; defaults when absent.
    pub settings: RetrySettings,
    /// `host`: `contextWindow` (default 0), `credentialStore` (default
    /// false) and `seed` (default 0).
    pub host: HostOptions,
    /// `budget` (spec §11.8): `maxTokens`, `tokenRatio` and `tokens`
    /// (default `maxTokens`), one retry budget for every step of the
    /// scenario; `None` when absent.
    pub budget: Option<RetryBudget>,
}

impl ScenarioHeader {
    /// Decodes a scenario line. `about` and unknown top-level fields are
    /// ignored; an unknown key inside `host` is an error. The line is taken
    /// as text so that the budget's figures are read as written
    /// ([`budget_from_json`]).
    ///
    /// ```
    /// use autoretry_testkit::vector::ScenarioHeader;
    /// let err = ScenarioHeader::parse(r#"{"scenario": "s", "host": {"window": 1}}"#).unwrap_err();
    /// assert_eq!(err.to_string(), r#"host: unknown key "window""#);
    /// let err = ScenarioHeader::parse(r#"{"scenario": "s", "host": {"contextWindow": -1}}"#).unwrap_err();
    /// assert!(err.to_string().starts_with("host.contextWindow: expected a non-negative integer"));
    /// let err = ScenarioHeader::parse(r#"{"scenario": "s", "budget": {"maxTokens": 4, "tokenRatio": 1e-400}}"#).unwrap_err();
    /// assert!(err.to_string().starts_with("budget.tokenRatio: expected a number from 0.001"));
    /// ```
    pub fn parse(line: &str) -> Result<Self, DecodeError> {
        Self::from_object(line, &parse_object(line)?)
    }

    /// The header of `line`, already decoded as `obj`.
    fn from_object(line: &str, obj: &serde_json::Map<String, Value>) -> Result<Self, DecodeError> {
        let name = require(obj, "scenario", "a string", string)?.to_owned();
        let settings = match obj.get("settings") {
            None => RetrySettings::DEFAULT,
            // The message already names the key (`retry.maxRetries: ...`).
            Some(group) => settings_from_json(group)?,
        };
        let mut host = HostOptions::default();
        if let Some(h) = object(obj, "host")? {
            if let Some(key) = h
                .keys()
                .find(|k| !matches!(k.as_str(), "contextWindow" | "credentialStore" | "seed"))
            {
                return Err(DecodeError::new(
                    "host",
                    ErrorKind::UnknownKey,
                    format!("unknown key {}", Value::String(key.clone())),
                ));
            }
            host.context_window = uint(h, "contextWindow")
                .map_err(|e| e.within("host"))?
                .unwrap_or(0);
            host.credential_store = boolean(h, "credentialStore")
                .map_err(|e| e.within("host"))?
                .unwrap_or(false);
            host.seed = uint(h, "seed").map_err(|e| e.within("host"))?.unwrap_or(0);
        }
        let budget = match object(obj, "budget")? {
            None => None,
            Some(_) => Some(budget_from_json(raw_field(line, "budget")?)?),
        };
        Ok(ScenarioHeader {
            name,
            settings,
            host,
            budget,
        })
    }
}

/// A scenario's `budget` object (spec §11.4, §11.8), given as its JSON
/// text: each figure is read from its digits as written, with the parser
/// of the command line's `--budget` ([`RetryBudget::parse`]), so `0.5000`
/// is 0.5 and a figure no number of thousandths equals
/// (`0.0010000000000000001`, `1e-400`) is refused with an error naming the
/// field, never rounded through a binary float.
///
/// ```
/// use autoretry_testkit::vector::budget_from_json;
/// let budget = budget_from_json(r#"{"maxTokens": 4, "tokenRatio": 0.5, "tokens": 3}"#).unwrap();
/// assert_eq!((budget.max_tokens(), budget.ratio_milli(), budget.tokens_milli()), (4, 500, 3000));
/// let err = budget_from_json(r#"{"maxTokens": 4, "tokenRatio": 0.0005}"#).unwrap_err();
/// assert!(err.to_string().starts_with("budget.tokenRatio: expected a number from 0.001"));
/// let err = budget_from_json(r#"{"maxTokens": 4, "tokenRatio": 0.0010000000000000001}"#).unwrap_err();
/// assert!(err.to_string().starts_with("budget.tokenRatio: expected a number from 0.001"));
/// ```
pub fn budget_from_json(text: &str) -> Result<RetryBudget, DecodeError> {
    // Decoded once as values (a key given twice, a type), once as texts.
    let obj = match parse_value(text).map_err(|e| e.within("budget"))? {
        Value::Object(obj) => obj,
        other => return Err(DecodeError::wrong_type("budget", "an object", &other)),
    };
    if let Some(key) = obj
        .keys()
        .find(|k| !matches!(k.as_str(), "maxTokens" | "tokenRatio" | "tokens"))
    {
        return Err(DecodeError::new(
            "budget",
            ErrorKind::UnknownKey,
            format!("unknown key {}", Value::String(key.clone())),
        ));
    }
    let texts = raw_fields(text).map_err(|e| e.within("budget"))?;
    let number = |field: &str| -> Result<Option<&str>, DecodeError> {
        match obj.get(field) {
            None => Ok(None),
            Some(Value::Number(_)) => Ok(texts.get(field).map(|raw| raw.get())),
            Some(other) => Err(DecodeError::wrong_type(field, "a number", other).within("budget")),
        }
    };
    let missing = |field, what| DecodeError::missing(field, what).within("budget");
    let max_tokens =
        number("maxTokens")?.ok_or_else(|| missing("maxTokens", "an integer from 1 to 1000"))?;
    let token_ratio = number("tokenRatio")?.ok_or_else(|| missing("tokenRatio", "a number"))?;
    let tokens = number("tokens")?;
    RetryBudget::parse(max_tokens, token_ratio, tokens)
        .map_err(|e| budget_error(e).within("budget"))
}

/// The tokens of a step line's `budget` (spec §11.8), given as the
/// number's JSON text, in the scenario's `budget`: read as written, like
/// [`budget_from_json`].
///
/// ```
/// use autoretry::RetryBudget;
/// use autoretry_testkit::vector::budget_tokens_from_json;
/// let scenario = RetryBudget::new(4, 500).unwrap();
/// assert_eq!(budget_tokens_from_json(scenario, "2.5").unwrap().tokens_milli(), 2500);
/// assert!(budget_tokens_from_json(scenario, "2.5000000000000001").is_err());
/// assert!(budget_tokens_from_json(scenario, "\"2.5\"").is_err());
/// ```
pub fn budget_tokens_from_json(
    scenario: RetryBudget,
    text: &str,
) -> Result<RetryBudget, DecodeError> {
    match parse_value(text).map_err(|e| e.within("budget"))? {
        Value::Number(_) => scenario
            .with_tokens(text.trim_matches([' ', '\t', '\r', '\n']))
            .map_err(|e| {
                DecodeError::new(
                    "budget",
                    ErrorKind::OutOfRange,
                    format!("expected {}", e.expected),
                )
            }),
        other => Err(DecodeError::wrong_type("budget", "a number", &other)),
    }
}

/// A refused figure as a decode error at its field.
fn budget_error(e: autoretry::BudgetError) -> DecodeError {
    DecodeError::new(
        e.field,
        ErrorKind::OutOfRange,
        format!("expected {}", e.expected),
    )
}

/// The fields of a JSON object's text, each as written (a number keeps
/// its digits).
fn raw_fields(text: &str) -> Result<BTreeMap<String, &RawValue>, DecodeError> {
    serde_json::from_str(text)
        .map_err(|e| DecodeError::new("", ErrorKind::InvalidJson, e.to_string()))
}

/// The text of `field` of the JSON object `text`, as written (`null` when
/// absent).
fn raw_field<'t>(text: &'t str, field: &str) -> Result<&'t str, DecodeError> {
    Ok(raw_fields(text)?.get(field).map_or("null", |raw| raw.get()))
}

/// One non-blank line of a vector file.
///
/// ```
/// use autoretry_testkit::vector::VectorLine;
/// assert!(matches!(VectorLine::parse(r#"{"scenario":"s"}"#), Ok(Some(VectorLine::Scenario(_)))));
/// assert!(matches!(VectorLine::parse(r#"{"in":{"type":"abort"},"out":[]}"#), Ok(Some(VectorLine::Step(_)))));
/// assert!(matches!(VectorLine::parse("  "), Ok(None)));
/// assert!(VectorLine::parse(r#"{"out":[]}"#).is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum VectorLine {
    /// A line with a `scenario` key: start a fresh machine.
    Scenario(ScenarioHeader),
    /// A step: its `in` (the expectations `out`, `state`, `refused` are
    /// ignored here).
    Step(InputLine),
}

impl VectorLine {
    /// Parses one line; `Ok(None)` for a blank line (JSON white space only).
    /// A line with a `scenario` key is a header, else it needs an `in`
    /// object.
    pub fn parse(line: &str) -> Result<Option<VectorLine>, DecodeError> {
        if line.trim_matches([' ', '\t', '\r', '\n']).is_empty() {
            return Ok(None);
        }
        let obj = parse_object(line)?;
        if obj.contains_key("scenario") {
            return ScenarioHeader::from_object(line, &obj).map(|h| Some(VectorLine::Scenario(h)));
        }
        let input = obj
            .get("in")
            .ok_or_else(|| DecodeError::missing("in", "an input object"))?;
        InputLine::from_json(input)
            .map(|i| Some(VectorLine::Step(i)))
            .map_err(|e| e.within("in"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use autoretry::{HostOptions, InputBuf, Usage};

    #[test]
    fn exact_integers() {
        let line = r#"{"in":{"type":"agent_end","nowMs":18446744073709551615,"message":{"stopReason":"error","usage":{"input":18446744073709551615,"cacheRead":18446744073709551615}}}}"#;
        let Some(VectorLine::Step(InputLine::Input(InputBuf::AgentEnd { message, now_ms }))) =
            VectorLine::parse(line).unwrap()
        else {
            panic!()
        };
        assert_eq!(now_ms, Some(u64::MAX));
        assert_eq!(message.usage, Some(Usage::new(u64::MAX, u64::MAX)));
        let err =
            VectorLine::parse(r#"{"in":{"type":"timer_fired","timer":18446744073709551616}}"#)
                .unwrap_err();
        assert!(err
            .to_string()
            .starts_with("in.timer: expected a non-negative integer"));
        let header = r#"{"scenario":"s","host":{"seed":18446744073709551615}}"#;
        let Some(VectorLine::Scenario(header)) = VectorLine::parse(header).unwrap() else {
            panic!()
        };
        assert_eq!(header.host, HostOptions::DEFAULT.with_seed(u64::MAX));
        let err = VectorLine::parse(r#"{"scenario":"s","host":{"seed":-1}}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "host.seed: expected a non-negative integer that fits u64, found -1"
        );
        let err =
            VectorLine::parse(r#"{"scenario":"s","settings":{"jitterPct":101}}"#).unwrap_err();
        assert_eq!(
            err.to_string(),
            "retry.jitterPct: expected an integer from 0 to 100, found 101"
        );
    }

    #[test]
    fn errors_name_the_line_part() {
        let cases = [
            (r#"{"scenario":5}"#, "scenario: expected a string, found 5"),
            (
                r#"{"scenario":"s","host":[]}"#,
                "host: expected an object, found an array",
            ),
            (
                r#"{"scenario":"s","host":{"credentialStore":1}}"#,
                "host.credentialStore: expected a boolean, found 1",
            ),
            (
                r#"{"in":"abort"}"#,
                r#"in: expected an object, found a string "abort""#,
            ),
            ("[]", "expected a JSON object, found an array"),
        ];
        for (line, want) in cases {
            assert_eq!(
                VectorLine::parse(line).unwrap_err().to_string(),
                want,
                "{line}"
            );
        }
        // A scenario line's settings are strict too.
        let err =
            VectorLine::parse(r#"{"scenario":"s","settings":{"maxRetries":3.0}}"#).unwrap_err();
        assert!(err.to_string().starts_with("retry.maxRetries: "), "{err}");
    }
}
