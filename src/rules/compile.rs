//! The run-time compiler (feature `rules-compile`): the rules file, the
//! DFA build and the blob writer.

use std::fmt;
use std::string::String;
use std::vec::Vec;

use regex_automata::dfa::{dense, StartKind};
use regex_automata::nfa::thompson::{self, WhichCaptures};
use regex_automata::MatchKind;
use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::{blob, syntax, Dfa, DfaKind, Endian, List, Rules, RulesError};

/// The most bytes a rules file may have ([`RuleSet::from_json`]).
pub const MAX_FILE_LEN: usize = 1 << 20;

/// The most patterns in each list.
pub const MAX_RULES: usize = 1024;

/// The deepest nesting of groups and classes in a pattern.
pub const NEST_LIMIT: u32 = 64;

/// The size limit of [`Rules::compile`], in bytes, applied to each of the
/// three things it builds: the NFA of all the patterns, the DFA (before
/// minimization; the compiled blob is never larger) and the
/// determinizer's scratch space. A rule set over it is a
/// [`RulesError::TooLarge`], not an out-of-memory.
pub const SIZE_LIMIT: usize = 2 << 20;

/// The two lists of a rules file, as pattern strings.
///
/// ```
/// use autoretry::rules::{List, RuleSet};
/// let set = RuleSet::from_json(r#"{"never": ["billing"]}"#).unwrap();
/// assert_eq!(set, RuleSet::new().with_never("billing"));
/// assert!(set.list(List::Retry).is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct RuleSet {
    /// `retry`: patterns whose match makes the verdict `Some(true)`.
    pub retry: Vec<String>,
    /// `never`: patterns whose match makes the verdict `Some(false)`.
    pub never: Vec<String>,
}

impl RuleSet {
    /// No rules.
    pub fn new() -> Self {
        RuleSet::default()
    }

    /// The same set with a `retry` pattern added.
    pub fn with_retry(mut self, pattern: impl Into<String>) -> Self {
        self.retry.push(pattern.into());
        self
    }

    /// The same set with a `never` pattern added.
    pub fn with_never(mut self, pattern: impl Into<String>) -> Self {
        self.never.push(pattern.into());
        self
    }

    /// One list.
    pub fn list(&self, list: List) -> &[String] {
        match list {
            List::Retry => &self.retry,
            List::Never => &self.never,
        }
    }

    /// Reads a rules file: a JSON object with the optional keys `retry`
    /// and `never`, each an array of pattern strings. Anything else is an
    /// error that names it: not JSON or not an object, an unknown or
    /// repeated key, a list that is not an array, an entry that is not a
    /// string, more than [`MAX_RULES`] entries in a list, a file over
    /// [`MAX_FILE_LEN`] bytes. (Patterns are parsed by [`Rules::compile`].)
    ///
    /// ```
    /// use autoretry::rules::{RuleSet, RulesError};
    /// assert_eq!(RuleSet::from_json("{}").unwrap(), RuleSet::new());
    /// let err = RuleSet::from_json(r#"{"retry": ["a", 7]}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "retry[1]: expected a pattern string, found a number");
    /// let err = RuleSet::from_json(r#"{"retry": [], "always": []}"#).unwrap_err();
    /// assert_eq!(err.to_string(), r#"rules file: unknown key "always" (expected "retry" or "never")"#);
    /// ```
    pub fn from_json(text: &str) -> Result<RuleSet, RulesError> {
        if text.len() > MAX_FILE_LEN {
            return Err(RulesError::TooLarge(format!(
                "the rules file has {} bytes, at most {MAX_FILE_LEN}",
                text.len()
            )));
        }
        let entries =
            serde_json::from_str::<Entries>(text).map_err(|e| RulesError::Json(e.to_string()))?;
        let mut set = RuleSet::new();
        let (mut seen_retry, mut seen_never) = (false, false);
        for (key, value) in entries.0 {
            let list = match key.as_str() {
                "retry" => List::Retry,
                "never" => List::Never,
                _ => return Err(RulesError::UnknownKey(key)),
            };
            let seen = match list {
                List::Retry => &mut seen_retry,
                List::Never => &mut seen_never,
            };
            if *seen {
                return Err(RulesError::DuplicateKey(list));
            }
            *seen = true;
            let Value::Array(items) = value else {
                return Err(RulesError::NotAnArray {
                    list,
                    found: kind(&value),
                });
            };
            if items.len() > MAX_RULES {
                return Err(RulesError::TooManyRules {
                    list,
                    count: items.len(),
                });
            }
            let patterns = items
                .into_iter()
                .enumerate()
                .map(|(index, item)| match item {
                    Value::String(pattern) => Ok(pattern),
                    other => Err(RulesError::NotAString {
                        list,
                        index,
                        found: kind(&other),
                    }),
                })
                .collect::<Result<Vec<_>, _>>()?;
            match list {
                List::Retry => set.retry = patterns,
                List::Never => set.never = patterns,
            }
        }
        Ok(set)
    }

    /// [`RuleSet::from_json`] on the bytes of a file (which must be UTF-8).
    ///
    /// ```
    /// use autoretry::rules::RuleSet;
    /// assert!(RuleSet::from_json_bytes(b"{\"retry\": [\"\xff\"]}").is_err());
    /// ```
    pub fn from_json_bytes(bytes: &[u8]) -> Result<RuleSet, RulesError> {
        if bytes.len() > MAX_FILE_LEN {
            return Err(RulesError::TooLarge(format!(
                "the rules file has {} bytes, at most {MAX_FILE_LEN}",
                bytes.len()
            )));
        }
        let text = std::str::from_utf8(bytes)
            .map_err(|e| RulesError::Json(format!("invalid UTF-8: {e}")))?;
        RuleSet::from_json(text)
    }
}

/// What a JSON value is, for error messages.
fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The top-level object's entries in order, repeated keys kept (a JSON
/// map would keep only the last).
struct Entries(Vec<(String, Value)>);

impl<'de> Deserialize<'de> for Entries {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct EntriesVisitor;
        impl<'de> Visitor<'de> for EntriesVisitor {
            type Value = Entries;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(r#"an object {"retry": [...], "never": [...]}"#)
            }
            fn visit_map<M: MapAccess<'de>>(self, mut map: M) -> Result<Entries, M::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<String>()? {
                    let value = map.next_value::<Value>()?;
                    entries.push((key, value));
                }
                Ok(Entries(entries))
            }
        }
        deserializer.deserialize_map(EntriesVisitor)
    }
}

impl Rules<'static> {
    /// Builds the rules' DFA at run time: every pattern is parsed (the
    /// `regex` crate's syntax) and translated with the semantics of the
    /// [module docs](crate::rules), then one dense DFA is built for all of
    /// them (`never` first) and minimized.
    ///
    /// A bad pattern is a [`RulesError::Pattern`] naming its list, its
    /// index and the parser's message; a rule set whose automaton would
    /// exceed [`SIZE_LIMIT`] is a [`RulesError::TooLarge`].
    ///
    /// ```
    /// use autoretry::rules::{RuleSet, Rules};
    /// let set = RuleSet::new().with_retry(r"\bE\d{3}\b").with_never("fatal");
    /// let rules = Rules::compile(&set).unwrap();
    /// assert_eq!(rules.verdict("upstream e503 ..."), Some(true));
    /// assert_eq!(rules.verdict("E5030"), None);
    /// assert_eq!(rules.verdict("E503 FATAL"), Some(false));
    ///
    /// let err = Rules::compile(&RuleSet::new().with_never("ok").with_never("(unclosed")).unwrap_err();
    /// assert_eq!(err.to_string(), "never[1]: unclosed group at column 1");
    /// let err = Rules::compile(&RuleSet::new().with_retry("a{2000}{2000}")).unwrap_err();
    /// assert!(err.to_string().starts_with("rules too large: "));
    /// ```
    pub fn compile(set: &RuleSet) -> Result<Rules<'static>, RulesError> {
        let mut hirs = Vec::with_capacity(set.never.len() + set.retry.len());
        for list in [List::Never, List::Retry] {
            let patterns = set.list(list);
            if patterns.len() > MAX_RULES {
                return Err(RulesError::TooManyRules {
                    list,
                    count: patterns.len(),
                });
            }
            for (index, pattern) in patterns.iter().enumerate() {
                let hir = syntax::translate(pattern).map_err(|message| RulesError::Pattern {
                    list,
                    index,
                    message,
                })?;
                hirs.push(hir);
            }
        }
        let too_large = |what: &str, e: &dyn fmt::Display| {
            RulesError::TooLarge(format!(
                "the {what} would exceed the size limit of {SIZE_LIMIT} bytes ({e})"
            ))
        };
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .nfa_size_limit(Some(SIZE_LIMIT))
                    .which_captures(WhichCaptures::None),
            )
            .build_many_from_hir(&hirs)
            .map_err(|e| too_large("NFA", &e))?;
        let dfa = dense::Builder::new()
            .configure(
                dense::Config::new()
                    .match_kind(MatchKind::All)
                    .start_kind(StartKind::Unanchored)
                    .minimize(true)
                    .dfa_size_limit(Some(SIZE_LIMIT))
                    .determinize_size_limit(Some(SIZE_LIMIT)),
            )
            .build_from_nfa(&nfa)
            .map_err(|e| too_large("DFA", &e))?;
        // Both counts are at most MAX_RULES, checked above.
        let count = |list| u16::try_from(set.list(list).len()).unwrap_or(u16::MAX);
        Ok(Rules {
            dfa: Dfa::DenseOwned(dfa),
            never: count(List::Never),
            retry: count(List::Retry),
        })
    }

    /// Rules from the bytes of a file that is either a compiled blob (told
    /// by its header, [`is_blob`](super::is_blob)) or a JSON rules file: the
    /// blob is validated as [`Rules::from_bytes`] does (from an aligned copy,
    /// so the bytes may be at any address), the JSON is read by
    /// [`RuleSet::from_json_bytes`] and compiled.
    ///
    /// ```
    /// use autoretry::rules::{DfaKind, Endian, RuleSet, Rules};
    /// let json = br#"{"retry": ["hiccup"]}"#;
    /// let from_json = Rules::load(json).unwrap();
    /// let blob = from_json.to_bytes(Endian::NATIVE, DfaKind::Dense).unwrap();
    /// let from_blob = Rules::load(&blob).unwrap();
    /// assert_eq!(from_blob.verdict("HICCUP"), Some(true));
    /// assert!(Rules::load(&blob[..30]).is_err());
    /// ```
    pub fn load(bytes: &[u8]) -> Result<Rules<'static>, RulesError> {
        if !blob::is_blob(bytes) {
            return Rules::compile(&RuleSet::from_json_bytes(bytes)?);
        }
        // A copy at a 4-byte aligned address (a dense DFA needs one;
        // `Vec<u8>` promises none).
        let mut buf = std::vec![0u8; bytes.len() + 3];
        let offset = (4 - buf.as_ptr() as usize % 4) % 4;
        let copy = buf
            .get_mut(offset..offset + bytes.len())
            .ok_or(RulesError::Misaligned)?;
        copy.copy_from_slice(bytes);
        Ok(Rules::from_bytes(copy)?.into_owned())
    }
}

impl Rules<'_> {
    /// The compiled blob of these rules: the header, then the DFA of
    /// `kind` in `endian` byte order (what `autoretry rules compile`
    /// writes). A dense DFA converts to a sparse one, not back:
    /// [`RulesError::SparseToDense`]; the conversion to sparse is bounded
    /// by [`SIZE_LIMIT`] like the build.
    ///
    /// ```
    /// use autoretry::rules::{DfaKind, Endian, RuleSet, Rules, HEADER_LEN};
    /// let rules = Rules::compile(&RuleSet::new().with_retry("hiccup")).unwrap();
    /// let blob = rules.to_bytes(Endian::NATIVE, DfaKind::Dense).unwrap();
    /// assert_eq!(&blob[..8], b"ARTRULES");
    /// assert_eq!(blob.len(), HEADER_LEN + rules.dfa_len());
    /// let sparse = rules.to_bytes(Endian::NATIVE, DfaKind::Sparse).unwrap();
    /// assert!(sparse.len() < blob.len());
    /// assert_eq!(Rules::from_bytes(&sparse).unwrap().verdict("a Hiccup"), Some(true));
    /// ```
    pub fn to_bytes(&self, endian: Endian, kind: DfaKind) -> Result<Vec<u8>, RulesError> {
        let little = endian == Endian::Little;
        let dense_bytes = |d: &dense::DFA<&[u32]>| {
            let (bytes, pad) = if little {
                d.to_bytes_little_endian()
            } else {
                d.to_bytes_big_endian()
            };
            bytes.get(pad..).unwrap_or(&[]).to_vec()
        };
        let sparse_bytes = |d: &regex_automata::dfa::sparse::DFA<&[u8]>| {
            if little {
                d.to_bytes_little_endian()
            } else {
                d.to_bytes_big_endian()
            }
        };
        let to_sparse = |d: &dense::DFA<&[u32]>| {
            let sparse = d.to_sparse().map_err(|e| {
                RulesError::TooLarge(format!("the sparse DFA could not be built ({e})"))
            })?;
            Ok::<_, RulesError>(sparse_bytes(&sparse.as_ref()))
        };
        let dfa = match (&self.dfa, kind) {
            (Dfa::Dense(d), DfaKind::Dense) => dense_bytes(d),
            (Dfa::DenseOwned(d), DfaKind::Dense) => dense_bytes(&d.as_ref()),
            (Dfa::Dense(d), DfaKind::Sparse) => to_sparse(d)?,
            (Dfa::DenseOwned(d), DfaKind::Sparse) => to_sparse(&d.as_ref())?,
            (Dfa::Sparse(d), DfaKind::Sparse) => sparse_bytes(d),
            (Dfa::SparseOwned(d), DfaKind::Sparse) => sparse_bytes(&d.as_ref()),
            (Dfa::Sparse(_) | Dfa::SparseOwned(_), DfaKind::Dense) => {
                return Err(RulesError::SparseToDense)
            }
        };
        if dfa.len() > SIZE_LIMIT {
            return Err(RulesError::TooLarge(format!(
                "the {} DFA has {} bytes, over the size limit of {SIZE_LIMIT} bytes",
                kind.as_str(),
                dfa.len()
            )));
        }
        let mut out = Vec::with_capacity(blob::HEADER_LEN + dfa.len());
        out.extend_from_slice(&blob::header(endian, kind, self.never, self.retry, &dfa));
        out.extend_from_slice(&dfa);
        Ok(out)
    }

    /// The same rules owning their DFA.
    pub fn into_owned(self) -> Rules<'static> {
        Rules {
            dfa: match self.dfa {
                Dfa::Dense(d) => Dfa::DenseOwned(d.to_owned()),
                Dfa::Sparse(d) => Dfa::SparseOwned(d.to_owned()),
                Dfa::DenseOwned(d) => Dfa::DenseOwned(d),
                Dfa::SparseOwned(d) => Dfa::SparseOwned(d),
            },
            never: self.never,
            retry: self.retry,
        }
    }
}
