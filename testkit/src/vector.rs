//! The line format of the conformance vectors (vectors README, "Format"):
//! scenario lines and step lines, decoded strictly with the library's own
//! input decoder ([`InputLine`]), errors naming the field.

use autoretry::wire::json::{
    boolean, object, parse_object, require, settings_from_json, string, uint, DecodeError,
    ErrorKind, InputLine,
};
use autoretry::{HostOptions, RetryBudget, RetrySettings};
use serde_json::Value;

/// A scenario line of the vectors: `{"scenario":"name","about":..,"settings":{...},"host":{...}}`.
///
/// ```
/// use autoretry_testkit::vector::ScenarioHeader;
/// let value = serde_json::json!({"scenario": "s", "settings": {"maxRetries": 1}, "host": {"contextWindow": 1000, "seed": 42}});
/// let header = ScenarioHeader::from_json(&value).unwrap();
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
    /// ignored; an unknown key inside `host` is an error.
    ///
    /// ```
    /// use autoretry_testkit::vector::ScenarioHeader;
    /// let err = ScenarioHeader::from_json(&serde_json::json!({"scenario": "s", "host": {"window": 1}})).unwrap_err();
    /// assert_eq!(err.to_string(), r#"host: unknown key "window""#);
    /// let err = ScenarioHeader::from_json(&serde_json::json!({"scenario": "s", "host": {"contextWindow": -1}})).unwrap_err();
    /// assert!(err.to_string().starts_with("host.contextWindow: expected a non-negative integer"));
    /// ```
    pub fn from_json(value: &Value) -> Result<Self, DecodeError> {
        let Value::Object(obj) = value else {
            return Err(DecodeError::wrong_type("", "an object", value));
        };
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
            Some(b) => Some(budget_from_json(b)?),
        };
        Ok(ScenarioHeader {
            name,
            settings,
            host,
            budget,
        })
    }
}

/// A scenario's `budget` object (spec §11.4, §11.8): the figures as written
/// (`0.5000` is 0.5), refused with an error naming the field.
///
/// ```
/// use autoretry_testkit::vector::budget_from_json;
/// let value = serde_json::json!({"maxTokens": 4, "tokenRatio": 0.5, "tokens": 3});
/// let budget = budget_from_json(value.as_object().unwrap()).unwrap();
/// assert_eq!((budget.max_tokens(), budget.ratio_milli(), budget.tokens_milli()), (4, 500, 3000));
/// let bad = serde_json::json!({"maxTokens": 4, "tokenRatio": 0.0005});
/// let err = budget_from_json(bad.as_object().unwrap()).unwrap_err();
/// assert!(err.to_string().starts_with("budget.tokenRatio: expected a number from 0.001"));
/// ```
pub fn budget_from_json(obj: &serde_json::Map<String, Value>) -> Result<RetryBudget, DecodeError> {
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
    // A JSON number's text as serde_json writes it back: the shortest
    // decimal of its value, which is exact for figures in thousandths.
    let number = |field: &str| -> Result<Option<String>, DecodeError> {
        match obj.get(field) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(DecodeError::wrong_type(field, "a number", other).within("budget")),
        }
    };
    let missing = |field, what| DecodeError::missing(field, what).within("budget");
    let max_tokens =
        number("maxTokens")?.ok_or_else(|| missing("maxTokens", "an integer from 1 to 1000"))?;
    let token_ratio = number("tokenRatio")?.ok_or_else(|| missing("tokenRatio", "a number"))?;
    let tokens = number("tokens")?;
    RetryBudget::parse(&max_tokens, &token_ratio, tokens.as_deref()).map_err(|e| {
        DecodeError::new(
            e.field,
            ErrorKind::OutOfRange,
            format!("expected {}", e.expected),
        )
        .within("budget")
    })
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
            return ScenarioHeader::from_json(&Value::Object(obj))
                .map(|h| Some(VectorLine::Scenario(h)));
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
