//! Strict decoding of the `retry` settings group (spec §4, §10.1), with no
//! allocation.

use core::cell::Cell;
use core::fmt;

use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::classify::Classifier;
use crate::settings::{JitterPct, Profile, RetrySettings};

/// The `retry` settings group as it travels on the wire (spec §4, §10.1),
/// decoded strictly.
///
/// Decoding **replaces the whole group**: a missing key takes the default
/// of the group's `profile` (`classic` when `profile` is absent; see
/// [`RetrySettings`] for both columns). It rejects, with an error that
/// names the key,
///
/// - a wrong type, `null` included (`retry.enabled: expected a boolean, found null`);
/// - a number that is not a plain JSON integer literal: `3.0`, `1e3` and `-0`
///   (serde_json reads all three, and integers beyond `u64`, as floats; every
///   float is rejected);
/// - a negative or out-of-range integer (`maxRetries` must fit `u32`,
///   `baseDelayMs`, `maxDelayMs`, `backoffCapMs`, `maxUsageWaitMs`,
///   `maxTotalDelayMs`, `firstEventTimeoutMs` and `idleTimeoutMs` must fit `u64`, up to
///   `18446744073709551615` exactly, `jitterPct` must be at most 100):
///   `retry.maxRetries: expected a non-negative integer that fits u32, found -1`,
///   `retry.jitterPct: expected an integer from 0 to 100, found 101`;
/// - a `profile` or `classifier` other than its strings:
///   `retry.profile: expected "classic" or "modern", found a string "fast"`;
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
/// It serializes as `{"enabled":true,"maxRetries":3,"baseDelayMs":2000}`
/// at the defaults: `profile` first when it is `modern`, the keys of §4
/// always, and each key of §10.1, §11.1 and §12.1 only where it differs from the profile's
/// default, so that decoding gives the same settings back.
///
/// ```
/// use autoretry::{wire::SettingsGroup, RetrySettings};
///
/// let SettingsGroup(s) = serde_json::from_str(r#"{"maxRetries":5}"#).unwrap();
/// assert_eq!(s, RetrySettings::DEFAULT.with_max_retries(5));
///
/// let SettingsGroup(s) = serde_json::from_str(r#"{"profile":"modern","maxRetries":2}"#).unwrap();
/// assert_eq!(s, RetrySettings::MODERN.with_max_retries(2));
///
/// let bad = serde_json::json!({"maxRetries": 3.0});
/// let err = serde_json::from_value::<SettingsGroup>(bad).unwrap_err();
/// assert!(err.to_string().starts_with("retry.maxRetries: expected a non-negative integer"));
///
/// let err = serde_json::from_str::<SettingsGroup>(r#"{"retries":3}"#).unwrap_err();
/// assert!(err.to_string().starts_with(r#"retry: unknown key "retries""#));
///
/// let text = serde_json::to_string(&SettingsGroup(RetrySettings::MODERN.with_jitter_pct(autoretry::JitterPct::ZERO))).unwrap();
/// assert_eq!(text, r#"{"profile":"modern","enabled":true,"maxRetries":10,"baseDelayMs":500,"jitterPct":0}"#);
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
        let s = &self.0;
        let d = s.profile.defaults();
        let modern = s.profile != Profile::Classic;
        let options = [
            s.max_delay_ms != d.max_delay_ms,
            s.backoff_cap_ms != d.backoff_cap_ms,
            s.jitter_pct != d.jitter_pct,
            s.honor_hints != d.honor_hints,
            s.classifier != d.classifier,
            s.model_fallback != d.model_fallback,
            s.max_usage_wait_ms != d.max_usage_wait_ms,
            s.max_total_delay_ms != d.max_total_delay_ms,
            s.first_event_timeout_ms != d.first_event_timeout_ms,
            s.idle_timeout_ms != d.idle_timeout_ms,
            s.retry_empty != d.retry_empty,
        ];
        let len = 3 + usize::from(modern) + options.iter().filter(|&&b| b).count();
        let mut out = serializer.serialize_struct("retry", len)?;
        if modern {
            out.serialize_field("profile", s.profile.as_str())?;
        } else {
            out.skip_field("profile")?;
        }
        out.serialize_field("enabled", &s.enabled)?;
        out.serialize_field("maxRetries", &s.max_retries)?;
        out.serialize_field("baseDelayMs", &s.base_delay_ms)?;
        macro_rules! option {
            ($i:expr, $name:literal, $value:expr) => {
                if options[$i] {
                    out.serialize_field($name, &$value)?;
                } else {
                    out.skip_field($name)?;
                }
            };
        }
        option!(0, "maxDelayMs", s.max_delay_ms);
        option!(1, "backoffCapMs", s.backoff_cap_ms);
        option!(2, "jitterPct", s.jitter_pct.get());
        option!(3, "honorHints", s.honor_hints);
        option!(4, "classifier", s.classifier.as_str());
        option!(5, "modelFallback", s.model_fallback);
        option!(6, "maxUsageWaitMs", s.max_usage_wait_ms);
        option!(7, "maxTotalDelayMs", s.max_total_delay_ms);
        option!(8, "firstEventTimeoutMs", s.first_event_timeout_ms);
        option!(9, "idleTimeoutMs", s.idle_timeout_ms);
        option!(10, "retryEmpty", s.retry_empty);
        out.end()
    }
}

impl<'de> de::Deserialize<'de> for SettingsGroup {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let at = Cell::new(None);
        deserializer
            .deserialize_any(GroupVisitor { at: &at })
            .map(SettingsGroup)
    }
}

impl SettingsGroup {
    /// Decodes the group as [`Deserialize`](de::Deserialize) does; an
    /// error comes with the name of the key whose value it is about
    /// (`None`: the group as a whole, such as an unknown or repeated key).
    /// Only the JSON decoder (feature `json`) names the key.
    #[cfg(feature = "json")]
    pub(crate) fn deserialize_keyed<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<RetrySettings, (Option<&'static str>, D::Error)> {
        let at = Cell::new(None);
        deserializer
            .deserialize_any(GroupVisitor { at: &at })
            .map_err(|e| (at.get().map(Key::name), e))
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
    Profile,
    Enabled,
    MaxRetries,
    BaseDelayMs,
    MaxDelayMs,
    BackoffCapMs,
    JitterPct,
    HonorHints,
    Classifier,
    ModelFallback,
    MaxUsageWaitMs,
    MaxTotalDelayMs,
    FirstEventTimeoutMs,
    IdleTimeoutMs,
    RetryEmpty,
}

impl Key {
    const ALL: [Key; 15] = [
        Key::Profile,
        Key::Enabled,
        Key::MaxRetries,
        Key::BaseDelayMs,
        Key::MaxDelayMs,
        Key::BackoffCapMs,
        Key::JitterPct,
        Key::HonorHints,
        Key::Classifier,
        Key::ModelFallback,
        Key::MaxUsageWaitMs,
        Key::MaxTotalDelayMs,
        Key::FirstEventTimeoutMs,
        Key::IdleTimeoutMs,
        Key::RetryEmpty,
    ];

    const fn name(self) -> &'static str {
        match self {
            Key::Profile => "profile",
            Key::Enabled => "enabled",
            Key::MaxRetries => "maxRetries",
            Key::BaseDelayMs => "baseDelayMs",
            Key::MaxDelayMs => "maxDelayMs",
            Key::BackoffCapMs => "backoffCapMs",
            Key::JitterPct => "jitterPct",
            Key::HonorHints => "honorHints",
            Key::Classifier => "classifier",
            Key::ModelFallback => "modelFallback",
            Key::MaxUsageWaitMs => "maxUsageWaitMs",
            Key::MaxTotalDelayMs => "maxTotalDelayMs",
            Key::FirstEventTimeoutMs => "firstEventTimeoutMs",
            Key::IdleTimeoutMs => "idleTimeoutMs",
            Key::RetryEmpty => "retryEmpty",
        }
    }

    fn from_name(name: &str) -> Option<Key> {
        Key::ALL.into_iter().find(|k| k.name() == name)
    }

    /// A `u64` key of the group.
    const fn u64_seed(self) -> UintSeed {
        UintSeed {
            key: self.name(),
            max: u64::MAX,
            expected: "a non-negative integer that fits u64",
        }
    }
}

/// The keys a group gave, before the profile's defaults fill the rest.
#[derive(Default)]
struct Given {
    profile: Option<Profile>,
    enabled: Option<bool>,
    max_retries: Option<u32>,
    base_delay_ms: Option<u64>,
    max_delay_ms: Option<u64>,
    backoff_cap_ms: Option<u64>,
    jitter_pct: Option<JitterPct>,
    honor_hints: Option<bool>,
    classifier: Option<Classifier>,
    model_fallback: Option<bool>,
    max_usage_wait_ms: Option<u64>,
    max_total_delay_ms: Option<u64>,
    first_event_timeout_ms: Option<u64>,
    idle_timeout_ms: Option<u64>,
    retry_empty: Option<bool>,
}

impl Given {
    /// The settings: each key given, else the default of the profile.
    fn settings(self) -> RetrySettings {
        let profile = self.profile.unwrap_or_default();
        let d = profile.defaults();
        RetrySettings {
            profile,
            enabled: self.enabled.unwrap_or(d.enabled),
            max_retries: self.max_retries.unwrap_or(d.max_retries),
            base_delay_ms: self.base_delay_ms.unwrap_or(d.base_delay_ms),
            max_delay_ms: self.max_delay_ms.unwrap_or(d.max_delay_ms),
            backoff_cap_ms: self.backoff_cap_ms.unwrap_or(d.backoff_cap_ms),
            jitter_pct: self.jitter_pct.unwrap_or(d.jitter_pct),
            honor_hints: self.honor_hints.unwrap_or(d.honor_hints),
            classifier: self.classifier.unwrap_or(d.classifier),
            model_fallback: self.model_fallback.unwrap_or(d.model_fallback),
            max_usage_wait_ms: self.max_usage_wait_ms.unwrap_or(d.max_usage_wait_ms),
            max_total_delay_ms: self.max_total_delay_ms.unwrap_or(d.max_total_delay_ms),
            first_event_timeout_ms: self
                .first_event_timeout_ms
                .unwrap_or(d.first_event_timeout_ms),
            idle_timeout_ms: self.idle_timeout_ms.unwrap_or(d.idle_timeout_ms),
            retry_empty: self.retry_empty.unwrap_or(d.retry_empty),
        }
    }
}

/// Decodes the group; `at` holds the key whose value is being read.
struct GroupVisitor<'a> {
    at: &'a Cell<Option<Key>>,
}

impl GroupVisitor<'_> {
    fn wrong<E: de::Error>(found: Found<'_>) -> E {
        E::custom(format_args!("retry: expected an object, found {found}"))
    }
}

impl<'de> Visitor<'de> for GroupVisitor<'_> {
    type Value = RetrySettings;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the retry settings object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RetrySettings, A::Error> {
        let mut given = Given::default();
        let mut seen = [false; Key::ALL.len()];
        while let Some(key) = {
            self.at.set(None);
            map.next_key_seed(KeySeed)?
        } {
            let first = seen
                .get_mut(key as usize)
                .is_some_and(|slot| !core::mem::replace(slot, true));
            if !first {
                return Err(de::Error::custom(format_args!(
                    "retry: duplicate key {:?}",
                    key.name()
                )));
            }
            self.at.set(Some(key));
            match key {
                Key::Profile => {
                    given.profile = Some(map.next_value_seed(ChoiceSeed {
                        key: key.name(),
                        expected: PROFILES,
                        parse: Profile::from_wire,
                    })?);
                }
                Key::Enabled => given.enabled = Some(map.next_value_seed(BoolSeed(key.name()))?),
                Key::MaxRetries => {
                    let v = map.next_value_seed(UintSeed {
                        key: key.name(),
                        max: u64::from(u32::MAX),
                        expected: "a non-negative integer that fits u32",
                    })?;
                    // In range by construction.
                    given.max_retries = Some(u32::try_from(v).unwrap_or(u32::MAX));
                }
                Key::BaseDelayMs => {
                    given.base_delay_ms = Some(map.next_value_seed(key.u64_seed())?);
                }
                Key::MaxDelayMs => given.max_delay_ms = Some(map.next_value_seed(key.u64_seed())?),
                Key::BackoffCapMs => {
                    given.backoff_cap_ms = Some(map.next_value_seed(key.u64_seed())?);
                }
                Key::JitterPct => {
                    let v = map.next_value_seed(UintSeed {
                        key: key.name(),
                        max: 100,
                        expected: "an integer from 0 to 100",
                    })?;
                    // In range by construction.
                    given.jitter_pct =
                        Some(JitterPct::saturating(u8::try_from(v).unwrap_or(u8::MAX)));
                }
                Key::HonorHints => {
                    given.honor_hints = Some(map.next_value_seed(BoolSeed(key.name()))?);
                }
                Key::Classifier => {
                    given.classifier = Some(map.next_value_seed(ChoiceSeed {
                        key: key.name(),
                        expected: CLASSIFIERS,
                        parse: Classifier::from_wire,
                    })?);
                }
                Key::ModelFallback => {
                    given.model_fallback = Some(map.next_value_seed(BoolSeed(key.name()))?);
                }
                Key::MaxUsageWaitMs => {
                    given.max_usage_wait_ms = Some(map.next_value_seed(key.u64_seed())?);
                }
                Key::MaxTotalDelayMs => {
                    given.max_total_delay_ms = Some(map.next_value_seed(key.u64_seed())?);
                }
                Key::FirstEventTimeoutMs => {
                    given.first_event_timeout_ms = Some(map.next_value_seed(key.u64_seed())?);
                }
                Key::IdleTimeoutMs => {
                    given.idle_timeout_ms = Some(map.next_value_seed(key.u64_seed())?);
                }
                Key::RetryEmpty => {
                    given.retry_empty = Some(map.next_value_seed(BoolSeed(key.name()))?);
                }
            }
        }
        self.at.set(None);
        Ok(given.settings())
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

/// Reads one of the strings of a key (`"classic"` or `"modern"`, ...).
/// The profiles and classifiers this build can decode, for error messages.
#[cfg(feature = "extended")]
const PROFILES: &str = r#""classic" or "modern""#;
#[cfg(not(feature = "extended"))]
const PROFILES: &str = r#""classic" (this build has no "modern": cargo feature `extended`)"#;
#[cfg(feature = "curated")]
const CLASSIFIERS: &str = r#""classic", "extended" or "curated""#;
#[cfg(all(feature = "extended", not(feature = "curated")))]
const CLASSIFIERS: &str =
    r#""classic" or "extended" (this build has no "curated": cargo feature `curated`)"#;
#[cfg(not(feature = "extended"))]
const CLASSIFIERS: &str = r#""classic" (this build has no "extended": cargo feature `extended`)"#;

struct ChoiceSeed<T> {
    key: &'static str,
    /// The strings, for messages: `"classic" or "modern"`.
    expected: &'static str,
    parse: fn(&str) -> Option<T>,
}

impl<T> ChoiceSeed<T> {
    fn wrong<E: de::Error>(&self, found: Found<'_>) -> E {
        E::custom(format_args!(
            "retry.{}: expected {}, found {found}",
            self.key, self.expected
        ))
    }
}

impl<'de, T> DeserializeSeed<'de> for ChoiceSeed<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de, T> Visitor<'de> for ChoiceSeed<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "retry.{}: {}", self.key, self.expected)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.parse)(v).ok_or_else(|| self.wrong(Found::Str(v)))
    }
    fn visit_unit<E: de::Error>(self) -> Result<T, E> {
        Err(self.wrong(Found::Null))
    }
    fn visit_none<E: de::Error>(self) -> Result<T, E> {
        Err(self.wrong(Found::Null))
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<T, E> {
        Err(self.wrong(Found::Bool(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        Err(self.wrong(Found::Unsigned(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        Err(self.wrong(Found::Negative(v)))
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<T, E> {
        Err(self.wrong(Found::WideUnsigned(v)))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<T, E> {
        Err(self.wrong(Found::Wide(v)))
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        Err(self.wrong(Found::Float(v)))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<T, E> {
        Err(self.wrong(Found::Bytes))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Err(self.wrong(Found::Array))
    }
    fn visit_map<A: MapAccess<'de>>(self, _: A) -> Result<T, A::Error> {
        Err(self.wrong(Found::Object))
    }
}

/// Reads a non-negative integer literal up to `max`.
struct UintSeed {
    key: &'static str,
    max: u64,
    /// What the key takes, for messages: `a non-negative integer that fits u32`.
    expected: &'static str,
}

impl UintSeed {
    fn wrong<E: de::Error>(&self, found: Found<'_>) -> E {
        E::custom(format_args!(
            "retry.{}: expected {}, found {found}",
            self.key, self.expected
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
        write!(f, "retry.{}: {}", self.key, self.expected)
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
            RetrySettings::DEFAULT
                .with_enabled(false)
                .with_max_retries(u32::MAX)
                .with_base_delay_ms(u64::MAX)
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
