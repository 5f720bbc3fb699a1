//! Your own error rules (feature `rules`): patterns that say "retry this"
//! or "never retry this", matched by regex-automata's DFAs, and their
//! verdict fed to the machine as the message's `shouldRetry` (spec §10.2).
//!
//! A rules file is JSON, both lists optional, no other key:
//!
//! ```json
//! {
//!   "retry": ["gateway (?:timeout|hiccup)", "\\bE_UPSTREAM_\\d+\\b"],
//!   "never": ["insufficient.?funds", "^billing:"]
//! }
//! ```
//!
//! Patterns are in the `regex` crate's syntax and match with the semantics
//! of spec §3.1, plus ASCII word classes:
//!
//! - only ASCII letters fold case (`A` = `a`); `İ`, `ı`, `ſ`, the Kelvin
//!   sign and every other non-ASCII character match only themselves, in
//!   literals and in classes;
//! - `.` is one Unicode scalar value other than `\n`, `\r`, U+2028 and
//!   U+2029;
//! - `\d` is `[0-9]`, `\s` ASCII white space (`[\t\n\x0B\x0C\r ]`), `\w`
//!   `[A-Za-z0-9_]`, and `\b`, `\B`, `\<`, `\>`, `\b{start}`, ... are ASCII
//!   word boundaries;
//! - `^` and `$` (like `\A` and `\z`) are the text's ends;
//! - a pattern matches anywhere in the text unless it is anchored.
//!
//! Inline flags that would change those semantics (`m`, `s`, `u`, `R`,
//! `-i`) are refused; `i` (already on), `x` and `U` are accepted.
//!
//! The verdict for a text ([`Rules::verdict`]) is `Some(false)` when any
//! `never` pattern matches, else `Some(true)` when any `retry` pattern
//! matches, else `None`. [`Rules::apply`] makes it the `shouldRetry` of a
//! message that has none of its own; the built-in classifier and the
//! overflow rule still apply as §10.2 says (a `retry` rule cannot retry a
//! context overflow or an empty error).
//!
//! # Two ways to build them
//!
//! - On std (feature `rules-compile`): [`RuleSet::from_json`] reads a rules
//!   file and [`Rules::compile`] builds one dense DFA for all its patterns
//!   at run time, within [`SIZE_LIMIT`]; [`Rules::load`] takes a rules file
//!   or a compiled blob.
//! - Ahead of time, for `no_std` (feature `rules` alone, no allocator):
//!   `autoretry rules compile RULES.json -o RULES.bin` writes the DFA behind
//!   a small header (see [`HEADER_LEN`]), and [`Rules::from_bytes`] loads it
//!   in place, validating the header and regex-automata's serialized DFA:
//!   a truncated, damaged, foreign or misaligned blob is an error, never a
//!   panic or undefined behaviour. [`include_rules!`](crate::include_rules)
//!   includes a blob at a 4-byte aligned address.
//! - Over the C ABI (the package `autoretry-ffi`, its feature `rules`): a C
//!   or WebAssembly host lends a machine a compiled blob with
//!   `autoretry_rules_load`.
//!
//! ```
//! # #[cfg(feature = "rules-compile")] {
//! use autoretry::rules::{RuleSet, Rules};
//! use autoretry::AssistantMessage;
//!
//! let set = RuleSet::from_json(r#"{"retry": ["gateway hiccup"], "never": ["billing"]}"#)?;
//! let rules = Rules::compile(&set)?;
//! assert_eq!(rules.verdict("Gateway Hiccup, try later"), Some(true));
//! assert_eq!(rules.verdict("503 billing service unavailable"), Some(false));
//! assert_eq!(rules.verdict("503 Service Unavailable"), None);
//!
//! // The same rules from a compiled blob.
//! let blob = rules.to_bytes(autoretry::rules::Endian::NATIVE, autoretry::rules::DfaKind::Sparse)?;
//! let loaded = Rules::load(&blob)?;
//! assert_eq!(loaded.verdict("GATEWAY HICCUP"), Some(true));
//!
//! // The verdict is the message's `shouldRetry` when it has none.
//! let msg = rules.apply(AssistantMessage::error("gateway hiccup"));
//! assert_eq!(msg.should_retry, Some(true));
//! assert!(msg.is_retryable(0));
//! # }
//! # Ok::<(), autoretry::rules::RulesError>(())
//! ```

use core::fmt;

use regex_automata::dfa::{dense, sparse, Automaton, OverlappingState, StartKind};

use crate::classify::{Classification, Classifier};
use crate::machine::Input;
use crate::message::AssistantMessage;

mod blob;
pub use blob::{is_blob, FORMAT_VERSION, HEADER_LEN, MAGIC};

#[cfg(feature = "rules-compile")]
mod compile;
#[cfg(feature = "rules-compile")]
mod syntax;
#[cfg(feature = "rules-compile")]
#[cfg_attr(docsrs, doc(cfg(feature = "rules-compile")))]
pub use compile::{RuleSet, MAX_FILE_LEN, MAX_RULES, NEST_LIMIT, SIZE_LIMIT};

/// One of the two lists of a rules file.
///
/// ```
/// use autoretry::rules::List;
/// assert_eq!(List::Never.as_str(), "never");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum List {
    /// `retry`: a match makes the verdict `Some(true)`, unless a `never`
    /// pattern matches too.
    Retry,
    /// `never`: a match makes the verdict `Some(false)`.
    Never,
}

impl List {
    /// The key in a rules file: `"retry"` or `"never"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            List::Retry => "retry",
            List::Never => "never",
        }
    }
}

/// The byte order of a compiled blob's DFA (its header's integers are
/// always little-endian). A blob loads only on a target of its byte order.
///
/// ```
/// use autoretry::rules::Endian;
/// # #[cfg(target_endian = "little")]
/// assert_eq!(Endian::NATIVE, Endian::Little);
/// assert_eq!(Endian::from_name("big"), Some(Endian::Big));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Endian {
    /// Least significant byte first (x86, Arm Cortex-M, WebAssembly).
    Little = 0,
    /// Most significant byte first.
    Big = 1,
}

impl Endian {
    /// This target's byte order.
    #[cfg(target_endian = "little")]
    pub const NATIVE: Endian = Endian::Little;
    /// This target's byte order.
    #[cfg(target_endian = "big")]
    pub const NATIVE: Endian = Endian::Big;

    /// `"little"` or `"big"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Endian::Little => "little",
            Endian::Big => "big",
        }
    }

    /// The byte order of a name, `"little"` or `"big"`.
    pub fn from_name(name: &str) -> Option<Endian> {
        match name {
            "little" => Some(Endian::Little),
            "big" => Some(Endian::Big),
            _ => None,
        }
    }
}

/// Which of regex-automata's DFAs a compiled blob holds.
///
/// A dense DFA is a full transition table (4 bytes per state and byte
/// class, rounded up to a power of two): the fastest search, and what
/// [`Rules::compile`] builds. A sparse DFA stores each state's transitions
/// as ranges: a few times smaller, slower to search; the choice for flash.
///
/// Validation differs too. regex-automata checks a dense DFA completely,
/// with or without an allocator. A sparse DFA's check that every transition
/// leads to a state needs an allocator (a set of the state IDs); without
/// one, regex-automata checks that each target decodes, which keeps a
/// forged blob from causing undefined behaviour or a panic in a release
/// build, but not from giving wrong verdicts. A blob's checksum catches
/// damage either way; for blobs from a source you do not trust, on a
/// target with no allocator, prefer dense.
///
/// ```
/// use autoretry::rules::DfaKind;
/// assert_eq!(DfaKind::from_name("sparse"), Some(DfaKind::Sparse));
/// assert_eq!(DfaKind::Dense.as_str(), "dense");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DfaKind {
    /// `regex_automata::dfa::dense::DFA` (needs a 4-byte aligned blob).
    Dense = 0,
    /// `regex_automata::dfa::sparse::DFA` (any alignment).
    Sparse = 1,
}

impl DfaKind {
    /// `"dense"` or `"sparse"`.
    pub const fn as_str(self) -> &'static str {
        match self {
            DfaKind::Dense => "dense",
            DfaKind::Sparse => "sparse",
        }
    }

    /// The kind of a name, `"dense"` or `"sparse"`.
    pub fn from_name(name: &str) -> Option<DfaKind> {
        match name {
            "dense" => Some(DfaKind::Dense),
            "sparse" => Some(DfaKind::Sparse),
            _ => None,
        }
    }
}

/// Why rules could not be loaded or compiled. Its `Display` names what
/// was wrong (the list and index of a bad pattern, the field of a bad
/// blob).
///
/// ```
/// use autoretry::rules::{Rules, RulesError};
/// let err = Rules::from_bytes(b"ARTRULES\x01\x00").unwrap_err();
/// assert!(matches!(err, RulesError::Truncated { expected: 24, found: 10 }));
/// assert_eq!(err.to_string(), "truncated rules blob: 10 bytes, expected 24");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum RulesError {
    /// The bytes are not a compiled rules blob (no [`MAGIC`]).
    Foreign,
    /// The blob is shorter than its header says.
    Truncated {
        /// The length the header asks for (or the header's length).
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// The blob is longer than its header says.
    TrailingBytes {
        /// The length the header asks for.
        expected: usize,
        /// The length given.
        found: usize,
    },
    /// The blob's format version is not [`FORMAT_VERSION`].
    Version(u16),
    /// The blob was compiled for the other byte order.
    Endian(Endian),
    /// The blob is damaged: a header field, the checksum, or the rule
    /// counts against the DFA.
    Corrupt(&'static str),
    /// The blob of a dense DFA does not start at a 4-byte aligned
    /// address, which the DFA needs: include it with [`include_rules!`](crate::include_rules) (or
    /// an [`Aligned`]).
    Misaligned,
    /// regex-automata refused the serialized DFA.
    Dfa(DfaError),
    /// The rules file is not JSON of the right shape (feature
    /// `rules-compile`).
    #[cfg(feature = "rules-compile")]
    Json(String),
    /// The rules file has a key other than `retry` and `never`.
    #[cfg(feature = "rules-compile")]
    UnknownKey(String),
    /// The rules file has a key twice.
    #[cfg(feature = "rules-compile")]
    DuplicateKey(List),
    /// A list is not an array.
    #[cfg(feature = "rules-compile")]
    NotAnArray {
        /// The list.
        list: List,
        /// What it is instead (`"a string"`, `"null"`, ...).
        found: &'static str,
    },
    /// A list's entry is not a string.
    #[cfg(feature = "rules-compile")]
    NotAString {
        /// The list.
        list: List,
        /// The entry's index.
        index: usize,
        /// What it is instead.
        found: &'static str,
    },
    /// A pattern does not parse, or uses what the rules refuse.
    #[cfg(feature = "rules-compile")]
    Pattern {
        /// The list.
        list: List,
        /// The pattern's index in its list.
        index: usize,
        /// The parser's message, with where in the pattern.
        message: String,
    },
    /// A list has more than [`MAX_RULES`] patterns.
    #[cfg(feature = "rules-compile")]
    TooManyRules {
        /// The list.
        list: List,
        /// How many it has.
        count: usize,
    },
    /// The rules file is over [`MAX_FILE_LEN`] bytes, or its automaton
    /// over [`SIZE_LIMIT`].
    #[cfg(feature = "rules-compile")]
    TooLarge(String),
    /// Rules loaded from a sparse blob cannot be written as a dense one
    /// ([`Rules::to_bytes`]).
    #[cfg(feature = "rules-compile")]
    SparseToDense,
}

/// regex-automata's reason for refusing a serialized DFA (in
/// [`RulesError::Dfa`]).
#[derive(Debug)]
pub struct DfaError(regex_automata::util::wire::DeserializeError);

impl fmt::Display for DfaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RulesError::Foreign => f.write_str("not a compiled rules blob (no ARTRULES header)"),
            RulesError::Truncated { expected, found } => {
                write!(f, "truncated rules blob: {found} bytes, expected {expected}")
            }
            RulesError::TrailingBytes { expected, found } => write!(
                f,
                "rules blob has trailing bytes: {found} bytes, expected {expected}"
            ),
            RulesError::Version(v) => write!(
                f,
                "rules blob format version {v}; this build reads version {FORMAT_VERSION}"
            ),
            RulesError::Endian(e) => write!(
                f,
                "rules blob is {}-endian but this target is {}-endian (compile it with --endian {})",
                e.as_str(),
                Endian::NATIVE.as_str(),
                Endian::NATIVE.as_str()
            ),
            RulesError::Corrupt(what) => write!(f, "corrupt rules blob: {what}"),
            RulesError::Misaligned => f.write_str(
                "rules blob is not at a 4-byte aligned address (include it with autoretry::include_rules!)",
            ),
            RulesError::Dfa(e) => write!(f, "corrupt rules blob: its DFA: {e}"),
            #[cfg(feature = "rules-compile")]
            RulesError::Json(e) => write!(f, "rules file: {e}"),
            #[cfg(feature = "rules-compile")]
            RulesError::UnknownKey(key) => write!(
                f,
                "rules file: unknown key {key:?} (expected \"retry\" or \"never\")"
            ),
            #[cfg(feature = "rules-compile")]
            RulesError::DuplicateKey(list) => {
                write!(f, "rules file: key {:?} given twice", list.as_str())
            }
            #[cfg(feature = "rules-compile")]
            RulesError::NotAnArray { list, found } => write!(
                f,
                "{}: expected an array of pattern strings, found {found}",
                list.as_str()
            ),
            #[cfg(feature = "rules-compile")]
            RulesError::NotAString { list, index, found } => write!(
                f,
                "{}[{index}]: expected a pattern string, found {found}",
                list.as_str()
            ),
            #[cfg(feature = "rules-compile")]
            RulesError::Pattern {
                list,
                index,
                message,
            } => write!(f, "{}[{index}]: {message}", list.as_str()),
            #[cfg(feature = "rules-compile")]
            RulesError::TooManyRules { list, count } => write!(
                f,
                "{}: {count} patterns, at most {MAX_RULES} per list",
                list.as_str()
            ),
            #[cfg(feature = "rules-compile")]
            RulesError::TooLarge(what) => write!(f, "rules too large: {what}"),
            #[cfg(feature = "rules-compile")]
            RulesError::SparseToDense => f.write_str(
                "rules loaded from a sparse blob cannot be written as a dense DFA (compile the rules file)",
            ),
        }
    }
}

impl core::error::Error for RulesError {}

/// Bytes at a 4-byte aligned address, as a serialized DFA needs them: put
/// an included blob in one (what [`include_rules!`](crate::include_rules)
/// does).
///
/// ```
/// use autoretry::rules::Aligned;
/// static BLOB: &Aligned<[u8]> = &Aligned::new([1, 2, 3, 4, 5]);
/// assert_eq!(BLOB.as_bytes().as_ptr() as usize % 4, 0);
/// assert_eq!(BLOB.as_bytes(), [1, 2, 3, 4, 5]);
/// ```
#[repr(C)]
pub struct Aligned<B: ?Sized> {
    _align: [u32; 0],
    bytes: B,
}

impl<B> Aligned<B> {
    /// `bytes`, aligned.
    pub const fn new(bytes: B) -> Self {
        Aligned { _align: [], bytes }
    }
}

impl Aligned<[u8]> {
    /// The bytes.
    pub const fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

impl<const N: usize> Aligned<[u8; N]> {
    /// The bytes.
    pub const fn as_bytes(&self) -> &[u8] {
        &self.bytes
    }
}

/// Includes a compiled rules blob (`autoretry rules compile`) as a
/// `&'static [u8]` at a 4-byte aligned address, for
/// [`Rules::from_bytes`](crate::rules::Rules::from_bytes). The path is
/// relative to the file that invokes it, as for `include_bytes!`.
///
/// ```
/// use autoretry::rules::Rules;
/// static BLOB: &[u8] = autoretry::include_rules!("../../tests/rules/example.bin");
/// let rules = Rules::from_bytes(BLOB).expect("a valid blob");
/// assert_eq!(rules.verdict("upstream_error: please retry your request"), Some(true));
/// ```
#[macro_export]
#[cfg_attr(docsrs, doc(cfg(feature = "rules")))]
macro_rules! include_rules {
    ($path:expr) => {{
        static ALIGNED: &$crate::rules::Aligned<[u8]> =
            &$crate::rules::Aligned::new(*::core::include_bytes!($path));
        ALIGNED.as_bytes()
    }};
}

#[derive(Clone)]
enum Dfa<'a> {
    Dense(dense::DFA<&'a [u32]>),
    Sparse(sparse::DFA<&'a [u8]>),
    #[cfg(feature = "rules-compile")]
    DenseOwned(dense::DFA<std::vec::Vec<u32>>),
    #[cfg(feature = "rules-compile")]
    SparseOwned(sparse::DFA<std::vec::Vec<u8>>),
}

/// Runs `$body` with `$dfa` bound to whichever DFA `$rules` holds.
macro_rules! with_dfa {
    ($dfa_enum:expr, $dfa:ident => $body:expr) => {
        match $dfa_enum {
            Dfa::Dense($dfa) => $body,
            Dfa::Sparse($dfa) => $body,
            #[cfg(feature = "rules-compile")]
            Dfa::DenseOwned($dfa) => $body,
            #[cfg(feature = "rules-compile")]
            Dfa::SparseOwned($dfa) => $body,
        }
    };
}

/// Compiled rules: one DFA (dense or sparse, [`DfaKind`]) whose patterns
/// are the `never` list, then the `retry` list.
///
/// [`Rules::from_bytes`] borrows a compiled blob (no allocation);
/// [`Rules::compile`] and [`Rules::load`] (feature `rules-compile`) own
/// their DFA (`Rules<'static>`).
#[derive(Clone)]
pub struct Rules<'a> {
    dfa: Dfa<'a>,
    never: u16,
    retry: u16,
}

impl fmt::Debug for Rules<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Rules")
            .field("never", &self.never)
            .field("retry", &self.retry)
            .field("kind", &self.kind())
            .field("dfa_bytes", &self.dfa_len())
            .finish()
    }
}

impl<'a> Rules<'a> {
    /// Loads a compiled blob in place: checks its header (magic, format
    /// version, byte order, DFA kind, length, checksum), its address (4-byte
    /// aligned for a dense DFA), then has regex-automata validate the DFA,
    /// and checks the DFA against the header's rule counts. No allocation; any malformed
    /// input is an error, never a panic.
    ///
    /// ```
    /// use autoretry::rules::{Rules, RulesError};
    /// static BLOB: &[u8] = autoretry::include_rules!("../../tests/rules/example.bin");
    /// let rules = Rules::from_bytes(BLOB).unwrap();
    /// assert_eq!((rules.never_len(), rules.retry_len()), (3, 4));
    /// assert!(matches!(Rules::from_bytes(&BLOB[..BLOB.len() - 1]), Err(RulesError::Truncated { .. })));
    /// assert!(matches!(Rules::from_bytes(b"{}"), Err(RulesError::Foreign)));
    /// ```
    // Inlined across the crate boundary too: a caller that maps the error
    // to a code keeps none of its details. The C ABI's WebAssembly module
    // with rules is 4.5 KB smaller for it, and the firmware's rules 2 KB.
    #[inline]
    pub fn from_bytes(bytes: &'a [u8]) -> Result<Rules<'a>, RulesError> {
        let (header, dfa_bytes) = blob::split(bytes)?;
        let dfa_error = |e| RulesError::Dfa(DfaError(e));
        let (dfa, read) = match header.kind {
            DfaKind::Dense => {
                if dfa_bytes.as_ptr() as usize % core::mem::align_of::<u32>() != 0 {
                    return Err(RulesError::Misaligned);
                }
                let (dfa, read) = dense::DFA::from_bytes(dfa_bytes).map_err(dfa_error)?;
                (Dfa::Dense(dfa), read)
            }
            DfaKind::Sparse => {
                let (dfa, read) = sparse::DFA::from_bytes(dfa_bytes).map_err(dfa_error)?;
                (Dfa::Sparse(dfa), read)
            }
        };
        if read != dfa_bytes.len() {
            return Err(RulesError::Corrupt(
                "the DFA is shorter than the header says",
            ));
        }
        let (patterns, start_kind) = with_dfa!(&dfa, d => (d.pattern_len(), d.start_kind()));
        if patterns != usize::from(header.never) + usize::from(header.retry) {
            return Err(RulesError::Corrupt(
                "the rule counts do not match the DFA's patterns",
            ));
        }
        if start_kind == StartKind::Anchored {
            return Err(RulesError::Corrupt("the DFA cannot search unanchored"));
        }
        Ok(Rules {
            dfa,
            never: header.never,
            retry: header.retry,
        })
    }

    /// The verdict for an error text: `Some(false)` when a `never` pattern
    /// matches, else `Some(true)` when a `retry` pattern matches, else
    /// `None`. One pass over the text, no allocation.
    ///
    /// (A search error, which only a hand-made blob whose DFA can give up
    /// could cause, is no verdict.)
    ///
    /// ```
    /// use autoretry::rules::Rules;
    /// static BLOB: &[u8] = autoretry::include_rules!("../../tests/rules/example.bin");
    /// let rules = Rules::from_bytes(BLOB).unwrap();
    /// assert_eq!(rules.verdict("stream stalled: no data for 30s"), Some(true));
    /// // `never` wins: a billing error is not retried, even as a 503.
    /// assert_eq!(rules.verdict("503 billing: insufficient funds"), Some(false));
    /// assert_eq!(rules.verdict("a plain failure"), None);
    /// ```
    pub fn verdict(&self, text: &str) -> Option<bool> {
        let never = usize::from(self.never);
        with_dfa!(&self.dfa, dfa => verdict_of(dfa, never, text))
    }

    /// The message with the verdict of its error text as its
    /// `should_retry`, when the host gave none (spec §10.2). A message
    /// with its own `should_retry`, or with no error text, is returned as
    /// it is.
    ///
    /// ```
    /// use autoretry::{rules::Rules, AssistantMessage};
    /// static BLOB: &[u8] = autoretry::include_rules!("../../tests/rules/example.bin");
    /// let rules = Rules::from_bytes(BLOB).unwrap();
    /// let billing = AssistantMessage::error("503 billing: insufficient funds");
    /// assert!(billing.is_retryable(0));
    /// assert!(!rules.apply(billing).is_retryable(0));
    /// // The host's own verdict stays.
    /// assert!(rules.apply(billing.with_should_retry(true)).is_retryable(0));
    /// ```
    pub fn apply<'m>(&self, message: AssistantMessage<'m>) -> AssistantMessage<'m> {
        if message.should_retry.is_some() {
            return message;
        }
        match message.error_text().and_then(|text| self.verdict(text)) {
            Some(verdict) => message.with_should_retry(verdict),
            None => message,
        }
    }

    /// [`Rules::apply`] on the message of a `message_end` or `agent_end`
    /// input; other inputs are returned as they are.
    ///
    /// ```
    /// use autoretry::{rules::Rules, AssistantMessage, Input};
    /// static BLOB: &[u8] = autoretry::include_rules!("../../tests/rules/example.bin");
    /// let rules = Rules::from_bytes(BLOB).unwrap();
    /// let input = Input::AgentEnd { message: AssistantMessage::error("stream stalled"), now_ms: None };
    /// let Input::AgentEnd { message, .. } = rules.apply_input(input) else { unreachable!() };
    /// assert_eq!(message.should_retry, Some(true));
    /// assert_eq!(rules.apply_input(Input::Abort), Input::Abort);
    /// ```
    pub fn apply_input<'m>(&self, input: Input<'m>) -> Input<'m> {
        match input {
            Input::MessageEnd { message } => Input::MessageEnd {
                message: self.apply(message),
            },
            Input::AgentEnd { message, now_ms } => Input::AgentEnd {
                message: self.apply(message),
                now_ms,
            },
            other => other,
        }
    }

    /// Classifies an error text with `classifier` and the verdict applied
    /// as its `shouldRetry`: `retryable` is then the verdict for a
    /// non-empty text that is no overflow (spec §10.2); with no verdict
    /// the classification is `classifier`'s alone. What
    /// `autoretry classify --rules` prints.
    ///
    /// ```
    /// use autoretry::{classify::Classifier, rules::Rules};
    /// static BLOB: &[u8] = autoretry::include_rules!("../../tests/rules/example.bin");
    /// let rules = Rules::from_bytes(BLOB).unwrap();
    /// let c = rules.classify_with("stream stalled", Classifier::Classic);
    /// assert_eq!(c.verdict, Some(true));
    /// assert!(c.classification.retryable);
    /// // An overflow stays an overflow.
    /// let c = rules.classify_with("upstream_error: prompt is too long", Classifier::Classic);
    /// assert_eq!(c.verdict, Some(true));
    /// assert!(c.classification.overflow && !c.classification.retryable);
    /// ```
    pub fn classify_with(&self, text: &str, classifier: Classifier) -> Classified {
        let verdict = self.verdict(text);
        let mut classification = classifier.classify(text);
        if let Some(verdict) = verdict {
            classification.retryable = verdict && !text.is_empty() && !classification.overflow;
        }
        Classified {
            verdict,
            classification,
        }
    }

    /// How many `never` patterns.
    pub fn never_len(&self) -> usize {
        usize::from(self.never)
    }

    /// How many `retry` patterns.
    pub fn retry_len(&self) -> usize {
        usize::from(self.retry)
    }

    /// The size of the DFA in bytes (what a blob holds after its header).
    ///
    /// ```
    /// use autoretry::rules::{Rules, HEADER_LEN};
    /// static BLOB: &[u8] = autoretry::include_rules!("../../tests/rules/example.bin");
    /// assert_eq!(Rules::from_bytes(BLOB).unwrap().dfa_len() + HEADER_LEN, BLOB.len());
    /// ```
    pub fn dfa_len(&self) -> usize {
        with_dfa!(&self.dfa, dfa => dfa.write_to_len())
    }

    /// The kind of DFA the rules hold: [`DfaKind::Dense`] when compiled at
    /// run time, the blob's kind when loaded from one.
    pub fn kind(&self) -> DfaKind {
        match self.dfa {
            Dfa::Dense(_) => DfaKind::Dense,
            Dfa::Sparse(_) => DfaKind::Sparse,
            #[cfg(feature = "rules-compile")]
            Dfa::DenseOwned(_) => DfaKind::Dense,
            #[cfg(feature = "rules-compile")]
            Dfa::SparseOwned(_) => DfaKind::Sparse,
        }
    }
}

/// A classification with the rules' verdict applied
/// ([`Rules::classify_with`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Classified {
    /// The rules' verdict for the text.
    pub verdict: Option<bool>,
    /// The classifier's labels, `retryable` decided by the verdict when
    /// there is one.
    pub classification: Classification,
}

/// The overlapping search: every match of every pattern, in the order of
/// their ends; a `never` pattern (IDs below `never`) ends it.
fn verdict_of<A: Automaton>(dfa: &A, never: usize, text: &str) -> Option<bool> {
    let input = regex_automata::Input::new(text);
    let mut state = OverlappingState::start();
    let mut retry = false;
    loop {
        dfa.try_search_overlapping_fwd(&input, &mut state).ok()?;
        match state.get_match() {
            None => return retry.then_some(true),
            Some(m) if m.pattern().as_usize() < never => return Some(false),
            Some(_) if never == 0 => return Some(true),
            Some(_) => retry = true,
        }
    }
}
