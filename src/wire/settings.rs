//! Strict decoding of the `retry` settings group (spec §4), with no allocation.

use core::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::settings::RetrySettings;

/// The `retry` settings group as it travels on the wire (spec §4), decoded
/// strictly.
///
/// Decoding **replaces the whole group**: a missing key takes its default
/// (`enabled: true`, `maxRetries: 3`, `baseDelayMs: 2000`). It rejects, with
/// an error that names the key,
///
/// - a wrong type, `null` included (`retry.enabled: expected a boolean, found null`);
/// - a number that is not a plain JSON integer literal: `3.0`, `1e3` and `-0`
///   (serde_json reads all three, and integers beyond `u64`, as floats; every
///   float is rejected);
/// - a negative or out-of-range integer (`maxRetries` must fit `u32`,
///   `baseDelayMs` must fit `u64`, up to `18446744073709551615` exactly):
///   `retry.maxRetries: expected a non-negative integer that fits u32, found -1`;
/// - an unknown key: `retry: unknown key "retries"`;
/// - a key given twice: `retry: duplicate key "maxRetries"`;
/// - a group that is not an object: `retry: expected an object, found an array`.
///
/// It decodes through `deserialize_any`, so it needs a self-describing format
/// (JSON and the like). With serde_json, decoding from a
/// [`serde_json::Value`](https://docs.rs/serde_json/latest/serde_json/enum.Value.html)
/// gives the bare message; decoding from text appends serde_json's
/// ` at line L column C`.
///
/// It serializes as `{"enabled":true,"maxRetries":3,"baseDelayMs":2000}`.
///
/// ```
/// use autoretry::{wire::SettingsGroup, RetrySettings};
///
/// let SettingsGroup(s) = serde_json::from_str(r#"{"maxRetries":5}"#).unwrap();
/// assert_eq!(s, RetrySettings::DEFAULT.with_max_retries(5));
///
/// let bad = serde_json::json!({"maxRetries": 3.0});
/// let err = serde_json::from_value::<SettingsGroup>(bad).unwrap_err();
/// assert!(err.to_string().starts_with("retry.maxRetries: expected a non-negative integer"));
///
/// let err = serde_json::from_str::<SettingsGroup>(r#"{"retries":3}"#).unwrap_err();
/// assert!(err.to_string().starts_with(r#"retry: unknown key "retries""#));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct SettingsGroup(pub RetrySettings);

impl From<SettingsGroup> for RetrySettings {
    /// Unwraps the settings.
    fn from(group: SettingsGroup) -> Self {
        group.0
    }
}

impl From<RetrySettings> for SettingsGroup {
    /// Wraps the settings.
    fn from(settings: RetrySettings) -> Self {
        SettingsGroup(settings)
    }
}

impl Serialize for SettingsGroup {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("retry", 3)?;
        s.serialize_field("enabled", &self.0.enabled)?;
        s.serialize_field("maxRetries", &self.0.max_retries)?;
        s.serialize_field("baseDelayMs", &self.0.base_delay_ms)?;
        s.end()
    }
}

impl<'de> de::Deserialize<'de> for SettingsGroup {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(GroupVisitor)
            .map(SettingsGroup)
    }
}

/// What a decoder found where it expected something else, for messages.
enum Found<'a> {
    Null,
    Bool(bool),
    Unsigned(u64),
    Negative(i64),
    Wide(i128),
    WideUnsigned(u128),
    Float(f64),
    Str(&'a str),
    Bytes,
    Array,
    Object,
}

impl fmt::Display for Found<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Found::Null => f.write_str("null"),
            Found::Bool(b) => write!(f, "a boolean {b}"),
            Found::Unsigned(v) => write!(f, "{v}"),
            Found::Negative(v) => write!(f, "{v}"),
            Found::Wide(v) => write!(f, "{v}"),
            Found::WideUnsigned(v) => write!(f, "{v}"),
            Found::Float(v) => write!(
                f,
                "a number that is not a plain integer literal in range ({v:?})"
            ),
            Found::Str(s) => write!(f, "a string {s:?}"),
            Found::Bytes => f.write_str("bytes"),
            Found::Array => f.write_str("an array"),
            Found::Object => f.write_str("an object"),
        }
    }
}

/// The keys of the group.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Key {
    Enabled,
    MaxRetries,
    BaseDelayMs,
}

impl Key {
    const fn name(self) -> &'static str {
        match self {
            Key::Enabled => "enabled",
            Key::MaxRetries => "maxRetries",
            Key::BaseDelayMs => "baseDelayMs",
        }
    }

    fn from_name(name: &str) -> Option<Key> {
        [Key::Enabled, Key::MaxRetries, Key::BaseDelayMs]
            .into_iter()
            .find(|k| k.name() == name)
    }
}

struct GroupVisitor;

impl GroupVisitor {
    fn wrong<E: de::Error>(found: Found<'_>) -> E {
        E::custom(format_args!("retry: expected an object, found {found}"))
    }
}

impl<'de> Visitor<'de> for GroupVisitor {
    type Value = RetrySettings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the retry settings object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RetrySettings, A::Error> {
        let mut settings = RetrySettings::DEFAULT;
        let mut seen = [false; 3];
        while let Some(key) = map.next_key_seed(KeySeed)? {
            let slot = &mut seen[key as usize];
            if *slot {
                return Err(de::Error::custom(format_args!(
                    "retry: duplicate key {:?}",
                    key.name()
                )));
            }
            *slot = true;
            match key {
                Key::Enabled => settings.enabled = map.next_value_seed(BoolSeed(key.name()))?,
                Key::MaxRetries => {
                    let v = map.next_value_seed(UintSeed {
                        key: key.name(),
                        max: u64::from(u32::MAX),
                        ty: "u32",
                    })?;
                    // In range by construction.
                    settings.max_retries = u32::try_from(v).unwrap_or(u32::MAX);
                }
                Key::BaseDelayMs => {
                    settings.base_delay_ms = map.next_value_seed(UintSeed {
                        key: key.name(),
                        max: u64::MAX,
                        ty: "u64",
                    })?;
                }
            }
        }
        Ok(settings)
    }

    fn visit_unit<E: de::Error>(self) -> Result<RetrySettings, E> {
        Err(Self::wrong(Found::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<RetrySettings, E> {
        Err(Self::wrong(Found::Null))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<RetrySettings, E> {
        Err(Self::wrong(Found::Bool(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<RetrySettings, E> {
        Err(Self::wrong(Found::Unsigned(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<RetrySettings, E> {
        Err(Self::wrong(Found::Negative(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<RetrySettings, E> {
        Err(Self::wrong(Found::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<RetrySettings, E> {
        Err(Self::wrong(Found::Str(v)))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<RetrySettings, E> {
        Err(Self::wrong(Found::Bytes))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<RetrySettings, A::Error> {
        Err(Self::wrong(Found::Array))
    }
}

/// Reads a key; an unknown one is an error right away, while its text is
/// still at hand (no allocation).
struct KeySeed;

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Key;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Key, D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Key;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a key of the retry settings")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
        Key::from_name(v).ok_or_else(|| E::custom(format_args!("retry: unknown key {v:?}")))
    }
}

/// Reads a strict boolean.
struct BoolSeed(&'static str);

impl BoolSeed {
    fn wrong<E: de::Error>(&self, found: Found<'_>) -> E {
        E::custom(format_args!(
            "retry.{}: expected a boolean, found {found}",
            self.0
        ))
    }
}

impl<'de> DeserializeSeed<'de> for BoolSeed {
    type Value = bool;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<bool, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for BoolSeed {
    type Value = bool;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "retry.{}: a boolean", self.0)
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<bool, E> {
        Ok(v)
    }
    fn visit_unit<E: de::Error>(self) -> Result<bool, E> {
        Err(self.wrong(Found::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<bool, E> {
        Err(self.wrong(Found::Null))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<bool, E> {
        Err(self.wrong(Found::Unsigned(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<bool, E> {
        Err(self.wrong(Found::Negative(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<bool, E> {
        Err(self.wrong(Found::Float(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<bool, E> {
        Err(self.wrong(Found::Str(v)))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<bool, E> {
        Err(self.wrong(Found::Bytes))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<bool, A::Error> {
        Err(self.wrong(Found::Array))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<bool, A::Error> {
        Err(self.wrong(Found::Object))
    }
}

/// Reads a non-negative integer literal up to `max`.
struct UintSeed {
    key: &'static str,
    max: u64,
    ty: &'static str,
}

impl UintSeed {
    fn wrong<E: de::Error>(&self, found: Found<'_>) -> E {
        E::custom(format_args!(
            "retry.{}: expected a non-negative integer that fits {}, found {found}",
            self.key, self.ty
        ))
    }
}

impl<'de> DeserializeSeed<'de> for UintSeed {
    type Value = u64;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<u64, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for UintSeed {
    type Value = u64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "retry.{}: a non-negative integer that fits {}",
            self.key, self.ty
        )
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
        if v <= self.max {
            Ok(v)
        } else {
            Err(self.wrong(Found::Unsigned(v)))
        }
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
        // serde_json calls this only for a literal with a minus sign (`-0`
        // itself arrives as a float); other formats may use it for any
        // integer, so a non-negative value is accepted.
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(self.wrong(Found::Negative(v))),
        }
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(self.wrong(Found::WideUnsigned(v))),
        }
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<u64, E> {
        match u64::try_from(v) {
            Ok(v) => self.visit_u64(v),
            Err(_) => Err(self.wrong(Found::Wide(v))),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
        Err(self.wrong(Found::Float(v)))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<u64, E> {
        Err(self.wrong(Found::Bool(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<u64, E> {
        Err(self.wrong(Found::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<u64, E> {
        Err(self.wrong(Found::Null))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
        Err(self.wrong(Found::Str(v)))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<u64, E> {
        Err(self.wrong(Found::Bytes))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<u64, A::Error> {
        Err(self.wrong(Found::Array))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<u64, A::Error> {
        Err(self.wrong(Found::Object))
    }
}

#[cfg(all(test, feature = "json"))]
mod tests {
    use super::SettingsGroup;
    use crate::RetrySettings;

    fn err_value(text: &str) -> String {
        let value: serde_json::Value = serde_json::from_str(text).unwrap();
        serde_json::from_value::<SettingsGroup>(value)
            .unwrap_err()
            .to_string()
    }

    fn err_text(text: &str) -> String {
        serde_json::from_str::<SettingsGroup>(text)
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn defaults_and_replacement() {
        let SettingsGroup(s) = serde_json::from_str("{}").unwrap();
        assert_eq!(s, RetrySettings::DEFAULT);
        let SettingsGroup(s) = serde_json::from_str(
            r#"{"enabled":false,"maxRetries":4294967295,"baseDelayMs":18446744073709551615}"#,
        )
        .unwrap();
        assert_eq!(
            s,
            RetrySettings {
                enabled: false,
                max_retries: u32::MAX,
                base_delay_ms: u64::MAX
            }
        );
        let SettingsGroup(s) = serde_json::from_str(r#"{"maxRetries":0}"#).unwrap();
        assert_eq!(s, RetrySettings::DEFAULT.with_max_retries(0));
    }

    #[test]
    fn rejections_name_the_key() {
        let u32_msg = "retry.maxRetries: expected a non-negative integer that fits u32, found";
        let u64_msg = "retry.baseDelayMs: expected a non-negative integer that fits u64, found";
        let cases: &[(&str, &str)] = &[
            (
                r#"{"maxRetries":-1}"#,
                "retry.maxRetries: expected a non-negative integer that fits u32, found -1",
            ),
            (r#"{"maxRetries":3.0}"#, u32_msg),
            (r#"{"maxRetries":1e3}"#, u32_msg),
            (r#"{"maxRetries":-0}"#, u32_msg),
            (
                r#"{"maxRetries":null}"#,
                "retry.maxRetries: expected a non-negative integer that fits u32, found null",
            ),
            (
                r#"{"maxRetries":"3"}"#,
                r#"retry.maxRetries: expected a non-negative integer that fits u32, found a string "3""#,
            ),
            (
                r#"{"maxRetries":4294967296}"#,
                "retry.maxRetries: expected a non-negative integer that fits u32, found 4294967296",
            ),
            (r#"{"maxRetries":true}"#, u32_msg),
            (r#"{"maxRetries":[3]}"#, u32_msg),
            (r#"{"baseDelayMs":18446744073709551616}"#, u64_msg),
            (r#"{"baseDelayMs":1.5}"#, u64_msg),
            (r#"{"baseDelayMs":1e3}"#, u64_msg),
            (r#"{"baseDelayMs":-0}"#, u64_msg),
            (r#"{"baseDelayMs":-5}"#, u64_msg),
            (r#"{"baseDelayMs":null}"#, u64_msg),
            (r#"{"baseDelayMs":{}}"#, u64_msg),
            (
                r#"{"enabled":"yes"}"#,
                r#"retry.enabled: expected a boolean, found a string "yes""#,
            ),
            (
                r#"{"enabled":null}"#,
                "retry.enabled: expected a boolean, found null",
            ),
            (
                r#"{"enabled":1}"#,
                "retry.enabled: expected a boolean, found 1",
            ),
            (r#"{"retries":3}"#, r#"retry: unknown key "retries""#),
            (r#"{"Enabled":true}"#, r#"retry: unknown key "Enabled""#),
            ("null", "retry: expected an object, found null"),
            ("[]", "retry: expected an object, found an array"),
            ("3", "retry: expected an object, found 3"),
            (r#""{}""#, "retry: expected an object, found a string"),
        ];
        for (input, want) in cases {
            let from_value = err_value(input);
            assert!(from_value.starts_with(want), "{input}: {from_value}");
            let from_text = err_text(input);
            assert!(from_text.starts_with(want), "{input}: {from_text}");
        }
        // Exact messages from a Value (no position suffix).
        assert_eq!(
            err_value(r#"{"maxRetries":-1}"#),
            "retry.maxRetries: expected a non-negative integer that fits u32, found -1"
        );
        assert_eq!(
            err_value(r#"{"retries":3}"#),
            r#"retry: unknown key "retries""#
        );
        assert_eq!(
            err_value(r#"{"maxRetries":-0}"#),
            "retry.maxRetries: expected a non-negative integer that fits u32, \
             found a number that is not a plain integer literal in range (-0.0)"
        );
        // serde_json merges duplicate keys in a Value; from text they are refused.
        assert_eq!(
            err_text(r#"{"maxRetries":1,"maxRetries":2}"#)
                .split(" at line")
                .next()
                .unwrap(),
            r#"retry: duplicate key "maxRetries""#
        );
    }

    #[test]
    fn serializes_in_key_order() {
        let text = serde_json::to_string(&SettingsGroup(RetrySettings::DEFAULT)).unwrap();
        assert_eq!(
            text,
            r#"{"enabled":true,"maxRetries":3,"baseDelayMs":2000}"#
        );
    }
}
