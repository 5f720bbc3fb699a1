//! The classification patterns, written exactly as `retry-policy.md` writes
//! them (sections 3.2 to 3.4 for the classic classifier, 10.5 for the
//! extended one, 13.2 for the curated one), in JavaScript syntax, so they
//! can be diffed against the spec (`tests/classify/patterns.rs` does).
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

/// Section 13.2: the retryable alternatives the curated classifier adds to
/// [`RETRYABLE_EXTENDED`] (its retryable pattern is the two joined by `|`;
/// unanchored, case-insensitive, `\b` an ASCII word boundary, the Chinese
/// wordings matched as written). A text that matches
/// [`USAGE_LIMIT_CURATED`] is retryable too.
pub const RETRYABLE_CURATED: &str = r"socket connection was closed unexpectedly|connection closed mid-response|peer closed connection|incomplete chunked read|server disconnected|\bsocket closed\b|forcibly closed|no close frame received|premature close|\beconnreset\b|\beconnaborted\b|\betimedout\b|\beconnrefused\b|\behostunreach\b|\benetunreach\b|\beai_again\b|\bepipe\b|und_err_socket|und_err_headers_timeout|und_err_body_timeout|err_stream_premature_close|connection.?reset|connection aborted|remote end closed connection|remotedisconnected|connection failed|connect error|context deadline exceeded|stream disconnected before completion|error sending request for url|eof occurred in violation of protocol|unexpected_eof_while_reading|bad.?gateway|gateway request failed|server had an error|\bbusy\b|no (?:free )?slots? available|concurrency limit|high concurrency|too many concurrent|rate increased too quickly|throttlingexception|please wait before trying again|try again later|is unable to process your request|\bper minute\b|\b(?:rpm|tpm)\b|resource has been exhausted|quota.?exceeded|resource.?exhausted|exhausted your capacity|quota will reset|请稍后再试|请稍候再试|稍后重试|负载已饱和|服务繁忙|并发|过于频繁|请求速度过快|访问频率|其他请求正在进行";

/// Section 13.2: the curated usage-limit pattern (replaces 3.4). Each
/// `[^\n]{0,n}` is up to `n` scalar values other than `\n` between two
/// whole words. Per-minute quotas are no longer usage limits here: they
/// are in [`RETRYABLE_CURATED`].
pub const USAGE_LIMIT_CURATED: &str = r"usage.?limit|usage_limit_reached|usage_not_included|limit_reached|\baccount(?:'s)?\b[^\n]{0,80}\brate.?limit\b|\brate.?limit\b[^\n]{0,80}\baccount\b|\bhit (?:your|a)\b[^\n]{0,20}\blimit\b|\b\d+-hour limit\b|\b(?:session|weekly) limit\b|\blimits? will reset\b|\bdaily\b[^\n]{0,40}\b(?:quota|limit|allocation)\b|\bmonthly\b[^\n]{0,40}\bquota\b|\bper[ _-]?day\b|(?:\b|_)(?:rpd|tpd)\b|perday|\bpremium requests?\b|\bno quota\b|\bquota reached\b|allocated quota|\bfree usage\b|使用上限|日访问量|\bper hour\b|\bfor the hour\b|\bin 1 hour\b|\bwithin the last 24 hours\b|\bmonthly\b[^\n]{0,40}\b(?:quota|credits|allowance)\b|\bmonthly (?:chat messages |usage )?limit (?:has been )?(?:reached|exhausted|exceeded)\b|\b(?:reached|exhausted|exceeded) (?:your |the |its )?monthly (?:chat messages |usage )?limit\b|\busage cap\b|\bout of free (?:messages|requests|credits)\b|利用制限";

/// Section 13.2: the never-retried pattern (billing, a wrong key or
/// permission, an untrusted certificate, a local model that cannot load, a
/// provider's wrapped 400): a text that matches it is not retryable,
/// whatever the two patterns above say (a sixth rule of section 3).
pub const NEVER_CURATED: &str = r"insufficient_quota|used all available credits|run out of credits|credit balance is too low|insufficient balance|insufficient.{0,10}funds|requires more credits|余额不足|请充值|incorrect api key|invalid.?api.?key|permission.?denied|access (?:is )?denied|not authorized to perform|self[- ]signed certificate|self_signed_cert_in_chain|certificate verify failed|unable to get local issuer certificate|unable_to_get_issuer_cert|process has terminated|llama runner exited|requires more system memory|unable to allocate|(?:unable to|failed to|could not) load model|error loading model|extra usage is required|no available channels?|\b400\b[^\n]{0,40}provider returned error|provider returned error[^\n]{0,40}\b400\b";

/// Section 13.2: the context-overflow text patterns the curated classifier
/// adds to those of the extended one (the unanchored ones of [`OVERFLOW`]
/// and [`OVERFLOW_EXTENDED`]).
pub const OVERFLOW_CURATED: &[&str] = &[
    r"/request too large for\b/i",
    r"/exceeds? (?:the |model )?context (?:limit|window)/i",
    r"/out of room in the model.s context window/i",
    r"/max_tokens must be at least 1, got -/i",
];

/// Section 13.2: where this matches, `/too many tokens/i` of [`OVERFLOW`]
/// does not count under the curated classifier (Bedrock's throttle and its
/// daily quota, and rate limits worded as tokens per minute).
pub const TOO_MANY_TOKENS_THROTTLE: &str = r"throttlingexception|please wait before trying again|too many tokens per (?:day|minute)|\bper (?:day|minute)\b|\btpm\b";
