//! The classification patterns, written exactly as `retry-policy.md` writes
//! them (sections 3.2 to 3.4 for the classic classifier, 10.5 for the
//! extended one), in JavaScript syntax, so they can be diffed against the
//! spec.
//!
//! They are not compiled at run time. The generator crate at `tools/dfa-gen/`
//! reads this file, translates each pattern into `regex-automata` syntax with
//! the matching semantics of section 3.1 (ASCII-only case folding, `.` as one
//! Unicode scalar value other than `\n`, `\r`, U+2028 and U+2029, `\d` as
//! `[0-9]`, `\s` as ASCII white space, `\b` as an ASCII word boundary),
//! builds DFAs and writes them as the compact tables of `src/classify/dfa/`.
//! Editing a pattern therefore means regenerating the tables:
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
//! assert_eq!(patterns::OVERFLOW_EXTENDED.len(), 7);
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

/// Section 10.5: the extended classifier's retryable pattern (replaces
/// 3.2; unanchored, case-insensitive, `\b` an ASCII word boundary). A text
/// that matches [`USAGE_LIMIT_EXTENDED`] is retryable too.
pub const RETRYABLE_EXTENDED: &str = r"\b(?:no[_ -]?capacity|(?:high|peak)[ _-]?demand|(?:at|over|insufficient)[ _-]?capacity|capacity[ _-]?(?:exceeded|exhausted)|peak[ _-]?load)\b|overloaded|provider.?returned.?error|rate.?limit|too many requests|\b(?:429|500|502|503|504)\b|service.?unavailable|server.?error|internal.?error|retry your request|network.?error|connection.?error|connection.?refused|unable.?to.?connect\.\s*is the computer able to access the url\?|other side closed|fetch failed|upstream.?connect|upstream.?request.?failed|reset before headers|socket hang up|timed? out|timeout|terminated|retry delay|stream stall|no error details in response|HTTP2(?:StreamReset|RefusedStream|EnhanceYourCalm)|nghttp2_(?:internal_error|refused_stream)|stream closed with error code nghttp2_(?:internal_error|refused_stream)|malformed.?function.?call";

/// Section 10.5: the extended usage-limit pattern (replaces 3.4). In the
/// last two alternatives `[^\n]{0,80}` is up to 80 scalar values other
/// than `\n` between the two whole words.
pub const USAGE_LIMIT_EXTENDED: &str = r"usage.?limit|usage_limit_reached|usage_not_included|limit_reached|quota.?exceeded|resource.?exhausted|exhausted your capacity|quota will reset|\baccount(?:'s)?\b[^\n]{0,80}\brate.?limit\b|\brate.?limit\b[^\n]{0,80}\baccount\b";

/// Section 10.5: the context-overflow text patterns the extended classifier
/// adds to the unanchored ones of [`OVERFLOW`] (all but the last, whose
/// anchored `^4(00|13)` gives way to the unanchored `\b4(00|13)` here).
pub const OVERFLOW_EXTENDED: &[&str] = &[
    r"/request exceeds the maximum size/i",
    r"/payload too large/i",
    r"/entity too large/i",
    r"/\b413\b.*\b(request|payload|entity)\b.*\btoo large\b/i",
    r"/model_context_window_exceeded/i",
    r"/prompt filled the context window/i",
    r"/\b4(00|13)\s*(status code)?\s*\(no body\)/i",
];
