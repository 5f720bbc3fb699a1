//! The classification patterns, written exactly as `retry-policy.md` (sections
//! 3.2 to 3.4) writes them, in JavaScript syntax, so they can be diffed
//! against the spec.
//!
//! They are not compiled at run time. The generator crate at `tools/dfa-gen/`
//! reads this file, translates each pattern into `regex-automata` syntax with
//! the matching semantics of section 3.1 (ASCII-only case folding, `.` as one
//! Unicode scalar value other than `\n`, `\r`, U+2028 and U+2029, `\d` as
//! `[0-9]`, `\s` as ASCII white space), builds DFAs and writes them as the
//! compact tables of `src/classify/dfa/`. Editing a pattern therefore means
//! regenerating the tables:
//!
//! ```text
//! cargo run --release --manifest-path tools/dfa-gen/Cargo.toml
//! ```
//!
//! ```
//! use autoretry::classify::patterns;
//!
//! assert!(patterns::RETRYABLE.contains("overloaded"));
//! assert_eq!(patterns::OVERFLOW.len(), 21);
//! ```

/// Section 3.2: the retryable pattern (unanchored, case-insensitive).
pub const RETRYABLE: &str = "overloaded|rate.?limit|usage.?limit|too many requests|429|500|502|503|504|service.?unavailable|server error|internal error|connection.?error|fetch failed|retry delay";

/// Section 3.3: the context-overflow text patterns, as JavaScript regex
/// literals. A text overflows when any of them matches; all are unanchored
/// except the last, which starts with `^`.
pub const OVERFLOW: &[&str] = &[
    r"/prompt is too long/i",
    r"/input is too long for requested model/i",
    r"/exceeds the context window/i",
    r"/input token count.*exceeds the maximum/i",
    r"/maximum prompt length is \d+/i",
    r"/reduce the length of the messages/i",
    r"/maximum context length is \d+ tokens/i",
    r"/exceeds the limit of \d+/i",
    r"/exceeds the available context size/i",
    r"/requested tokens?.*exceed.*context (window|length|size)/i",
    r"/context (window|length|size).*(exceeded|overflow|too small)/i",
    r"/(prompt|input).*(too long|too large).*(context|n_ctx)/i",
    r"/requested tokens?.*(exceeds?|greater than).*(n_ctx|context)/i",
    r"/greater than the context length/i",
    r"/context window exceeds limit/i",
    r"/exceeded model token limit/i",
    r"/context[_ ]length[_ ]exceeded/i",
    r"/too many tokens/i",
    r"/token limit exceeded/i",
    r"/request_too_large/i",
    r"/^4(00|13)\s*(status code)?\s*\(no body\)/i",
];

/// Section 3.4: the usage-limit pattern (unanchored, case-insensitive).
pub const USAGE_LIMIT: &str = "usage.?limit|usage_limit_reached|limit_reached";
