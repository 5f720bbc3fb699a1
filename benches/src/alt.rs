//! What a user would write instead of `autoretry::classify`.
//!
//! - [`PerRule`]: the `regex` crate, one `Regex` per rule, with the spec's
//!   semantics (see [`to_regex_syntax`]).
//! - [`Set`]: the same patterns in one `RegexSet`.
//! - [`CuratedSet`]: spec 13.2's patterns (the curated classifier) in one
//!   `RegexSet`.
//! - [`Literals`]: `aho-corasick` on the literal parts of the retryable
//!   pattern (an approximation, see there).
//! - [`naive_labels`] / [`naive_retryable`]: ASCII-lowercase the text, then
//!   `contains`/`find`, with the spec's semantics.

use aho_corasick::AhoCorasick;
use regex::{Regex, RegexSet};

use crate::common::{curated_patterns, patterns, Labels};

/// A spec pattern (JavaScript syntax, `i` flag) in `regex` syntax with the
/// spec's semantics (§3.1): the whole pattern in `(?i-u)` (ASCII-only case
/// folding; `\d` is `[0-9]` and `\s` is `[\t\n\v\f\r ]`, both ASCII), and
/// each `.` as `(?u:[^\n\r\x{2028}\x{2029}])`: one scalar value but a line
/// terminator. (`regex`'s own `(?i)` would fold `ſ` and the Kelvin sign, and
/// its `.` would match `\r`, U+2028 and U+2029.) `\b` is then ASCII (10.5),
/// and the one negated class the patterns hold, `[^\n]`, becomes
/// `(?u:[^\n])`: one scalar value but `\n` (in `(?-u)` it would be one
/// byte, which `regex` refuses for `&str`).
pub fn to_regex_syntax(js: &str) -> String {
    let mut out = String::from("(?i-u:");
    let mut chars = js.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                out.push('\\');
                out.extend(chars.next());
            }
            '.' => out.push_str(r"(?u:[^\n\r\x{2028}\x{2029}])"),
            '[' if chars.as_str().starts_with(r"^\n]") => {
                out.push_str(r"(?u:[^\n])");
                chars.nth(3);
            }
            '[' => {
                assert!(
                    !chars.as_str().starts_with('^'),
                    "an untranslated negated class in {js}"
                );
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push(')');
    out
}

/// One `Regex` per rule.
pub struct PerRule {
    retryable: Regex,
    overflow: Vec<Regex>,
    usage_limit: Regex,
}

impl PerRule {
    pub fn new() -> Self {
        let (retryable, overflow, usage_limit) = patterns();
        let re = |p: &str| Regex::new(&to_regex_syntax(p)).expect("a valid regex");
        PerRule {
            retryable: re(&retryable),
            overflow: overflow.iter().map(|p| re(p)).collect(),
            usage_limit: re(&usage_limit),
        }
    }

    pub fn labels(&self, text: &str) -> Labels {
        let overflow = self.overflow.iter().any(|r| r.is_match(text));
        Labels {
            retryable: !text.is_empty() && !overflow && self.retryable.is_match(text),
            overflow,
            usage_limit: self.usage_limit.is_match(text),
        }
    }

    pub fn retryable(&self, text: &str) -> bool {
        self.retryable.is_match(text)
    }
}

/// Every rule in one `RegexSet`: 0 retryable, 1 usage limit, then overflow.
pub struct Set(RegexSet);

impl Set {
    pub fn new() -> Self {
        let (retryable, overflow, usage_limit) = patterns();
        let all = [retryable, usage_limit]
            .into_iter()
            .chain(overflow)
            .map(|p| to_regex_syntax(&p));
        Set(RegexSet::new(all).expect("a valid set"))
    }

    pub fn labels(&self, text: &str) -> Labels {
        let m = self.0.matches(text);
        let overflow = (2..self.0.len()).any(|i| m.matched(i));
        Labels {
            retryable: !text.is_empty() && !overflow && m.matched(0),
            overflow,
            usage_limit: m.matched(1),
        }
    }
}

/// Spec 13.2 in one `RegexSet`: 0 retryable (10.5's pattern or 13.2's
/// additions), 1 usage limit, 2 never retried, 3 the throttle, 4 `too many
/// tokens`, then the other overflow patterns. Labels as
/// `Classifier::Curated` combines them, the usage limit by its pattern
/// alone (the long-wait rule reads the hint).
pub struct CuratedSet(RegexSet);

impl CuratedSet {
    const RETRYABLE: usize = 0;
    const USAGE_LIMIT: usize = 1;
    const NEVER: usize = 2;
    const THROTTLE: usize = 3;
    const TOO_MANY_TOKENS: usize = 4;
    const OVERFLOW: usize = 5;

    pub fn new() -> Self {
        let p = curated_patterns();
        let all = [
            p.retryable,
            p.usage_limit,
            p.never,
            p.throttle,
            p.too_many_tokens,
        ]
        .into_iter()
        .chain(p.overflow)
        .map(|p| to_regex_syntax(&p));
        CuratedSet(RegexSet::new(all).expect("a valid set"))
    }

    pub fn labels(&self, text: &str) -> Labels {
        let m = self.0.matches(text);
        let overflow = (Self::OVERFLOW..self.0.len()).any(|i| m.matched(i))
            || m.matched(Self::TOO_MANY_TOKENS) && !m.matched(Self::THROTTLE);
        let usage_limit = m.matched(Self::USAGE_LIMIT);
        Labels {
            retryable: !text.is_empty()
                && !overflow
                && (m.matched(Self::RETRYABLE) || usage_limit)
                && !m.matched(Self::NEVER),
            overflow,
            usage_limit,
        }
    }
}

/// `aho-corasick` (ASCII case-insensitive) on the literal alternatives of
/// the retryable pattern. It cannot express `.?`: each `X.?Y` becomes the
/// four literals `XY`, `X Y`, `X-Y`, `X_Y`, so any other character between
/// (`rate—limit`, `rate.limit`, `rate/limit`) is missed. Nor can it express
/// the overflow rules (`.*`, `\d+`, alternation inside a sequence, the
/// `^` anchor), so it only stands in for the retryable pattern.
pub struct Literals(AhoCorasick);

impl Literals {
    pub fn new() -> Self {
        let mut lits: Vec<String> = [
            "overloaded",
            "too many requests",
            "429",
            "500",
            "502",
            "503",
            "504",
            "server error",
            "internal error",
            "fetch failed",
            "retry delay",
        ]
        .map(String::from)
        .to_vec();
        for (x, y) in [
            ("rate", "limit"),
            ("usage", "limit"),
            ("service", "unavailable"),
            ("connection", "error"),
        ] {
            for sep in ["", " ", "-", "_"] {
                lits.push(format!("{x}{sep}{y}"));
            }
        }
        let ac = AhoCorasick::builder()
            .ascii_case_insensitive(true)
            .build(lits)
            .expect("an automaton");
        Literals(ac)
    }

    pub fn retryable(&self, text: &str) -> bool {
        self.0.is_match(text)
    }
}

/// `.` of the spec does not match these.
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// `\s` of the spec.
fn is_ws(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\x0B' | '\x0C' | '\r' | ' ')
}

/// `a.?b` in lowercase text `l`.
fn gap1(l: &str, a: &str, b: &str) -> bool {
    l.match_indices(a).any(|(i, _)| {
        let rest = &l[i + a.len()..];
        let mut after = rest.chars();
        rest.starts_with(b)
            || matches!(after.next(), Some(c) if !is_line_terminator(c))
                && after.as_str().starts_with(b)
    })
}

/// `(a1|a2..).*(b1|..).*...` on one line: each stage takes the earliest
/// end of any of its alternatives after the previous stage.
fn seq(line: &str, stages: &[&[&str]]) -> bool {
    let mut pos = 0;
    for alts in stages {
        let end = alts
            .iter()
            .filter_map(|a| line[pos..].find(a).map(|i| pos + i + a.len()))
            .min();
        match end {
            Some(end) => pos = end,
            None => return false,
        }
    }
    true
}

/// `seq` on any line of `l`.
fn seq_lines(l: &str, stages: &[&[&str]]) -> bool {
    l.split(is_line_terminator).any(|line| seq(line, stages))
}

/// `a` followed by at least one ASCII digit, then `then`.
fn digits_after(l: &str, a: &str, then: &str) -> bool {
    l.match_indices(a).any(|(i, _)| {
        let rest = &l[i + a.len()..];
        let n = rest.bytes().take_while(u8::is_ascii_digit).count();
        n > 0 && rest[n..].starts_with(then)
    })
}

/// `^4(00|13)\s*(status code)?\s*\(no body\)`.
fn no_body(l: &str) -> bool {
    let Some(rest) = l.strip_prefix("400").or_else(|| l.strip_prefix("413")) else {
        return false;
    };
    let rest = rest.trim_start_matches(is_ws);
    let rest = rest
        .strip_prefix("status code")
        .map_or(rest, |r| r.trim_start_matches(is_ws));
    rest.starts_with("(no body)")
}

fn retryable_lower(l: &str) -> bool {
    [
        "overloaded",
        "too many requests",
        "429",
        "500",
        "502",
        "503",
        "504",
        "server error",
        "internal error",
        "fetch failed",
        "retry delay",
    ]
    .iter()
    .any(|s| l.contains(s))
        || gap1(l, "rate", "limit")
        || gap1(l, "usage", "limit")
        || gap1(l, "service", "unavailable")
        || gap1(l, "connection", "error")
}

fn overflow_lower(l: &str) -> bool {
    const CTX: &[&str] = &["context window", "context length", "context size"];
    [
        "prompt is too long",
        "input is too long for requested model",
        "exceeds the context window",
        "reduce the length of the messages",
        "exceeds the available context size",
        "greater than the context length",
        "context window exceeds limit",
        "exceeded model token limit",
        "context_length_exceeded",
        "context_length exceeded",
        "context length_exceeded",
        "context length exceeded",
        "too many tokens",
        "token limit exceeded",
        "request_too_large",
    ]
    .iter()
    .any(|s| l.contains(s))
        || digits_after(l, "maximum prompt length is ", "")
        || digits_after(l, "maximum context length is ", " tokens")
        || digits_after(l, "exceeds the limit of ", "")
        || no_body(l)
        || seq_lines(l, &[&["input token count"], &["exceeds the maximum"]])
        || seq_lines(l, &[&["requested token"], &["exceed"], CTX])
        || seq_lines(l, &[CTX, &["exceeded", "overflow", "too small"]])
        || seq_lines(
            l,
            &[
                &["prompt", "input"],
                &["too long", "too large"],
                &["context", "n_ctx"],
            ],
        )
        || seq_lines(
            l,
            &[
                &["requested token"],
                &["exceed", "greater than"],
                &["n_ctx", "context"],
            ],
        )
}

fn usage_limit_lower(l: &str) -> bool {
    // `usage_limit_reached` is a case of `usage.?limit`.
    gap1(l, "usage", "limit") || l.contains("limit_reached")
}

/// The three labels by lowercasing and searching for literals.
pub fn naive_labels(text: &str) -> Labels {
    let l = text.to_ascii_lowercase();
    let overflow = overflow_lower(&l);
    Labels {
        retryable: !l.is_empty() && !overflow && retryable_lower(&l),
        overflow,
        usage_limit: usage_limit_lower(&l),
    }
}

/// The retryable pattern alone, by lowercasing and searching.
pub fn naive_retryable(text: &str) -> bool {
    retryable_lower(&text.to_ascii_lowercase())
}

/// Texts on the edges of the spec's semantics (§3.1), for the
/// equivalence checks.
pub const EDGE_CASES: &[&str] = &[
    "",
    "rate limit",
    "ratelimit",
    "rate—limit",
    "rate😀limit",
    "rate\tlimit",
    "rate\nlimit",
    "rate\rlimit",
    "rate\u{2028}limit",
    "rate\u{2029}limit",
    "rate  limit",
    "rate😀😀limit",
    "İnternal error",
    "ınternal error",
    "overloadſd",
    "ſervice unavailable",
    "rate \u{212A}imit",
    "too many to\u{212A}ens",
    "TOO MANY TOKENS",
    "USAGE_LIMIT_REACHED",
    "usage\u{2028}limit",
    "400 (no body)",
    "413 status code (no body)",
    "413\u{b}\u{c}status code\t(no body)",
    "413 status code(no body)",
    "413\u{a0}(no body)",
    "proxy: 413 status code (no body)",
    "429 status code (no body)",
    "maximum context length is 4096 tokens",
    "maximum context length is tokens",
    "maximum context length is ٤ tokens",
    "exceeds the limit of 5",
    "exceeds the limit of x5",
    "input token count 5 exceeds the maximum",
    "input token count 5\nexceeds the maximum",
    "requested token count exceeds the context window",
    "requested tokens, exceed\u{2029}context size",
    "context size is too small",
    "prompt is large, too large for the context",
    "input too long n_ctx",
    "requested tokens greater than n_ctx",
    "context length_exceeded",
    "fetch failed",
    "exceeds 5000 tokens",
];

/// Texts on the edges of spec 13.2's semantics, for the curated checks.
pub const CURATED_EDGE_CASES: &[&str] = &[
    "",
    "busy",
    "busy_",
    "not busy.",
    "ECONNRESET",
    "xeconnreset",
    "ſocket closed",
    "socket closed",
    "请稍后再试",
    "服务繁忙，请稍后",
    "并发",
    "利用制限",
    "your account's rate limit",
    "account\r rate limit",
    "account\nrate limit",
    "account\u{2028}rate-limit",
    "rate limit for this account",
    "daily token quota",
    "daily\nquota",
    "5-hour limit",
    "x5-hour limit",
    "tpd",
    "org_tpd",
    "rpm",
    "per minute",
    "too many tokens",
    "Too many tokens, please wait before trying again.",
    "too many tokens per day",
    "ThrottlingException: too many tokens",
    "insufficient funds",
    "insufficient\u{2028}funds",
    "insufficient 0123456789funds",
    "503 insufficient_quota",
    "400 from upstream: provider returned error",
    "provider returned error 4000",
    "quota exceeded",
    "exceeds model context window",
    "out of room in the model's context window",
    "request too large for gpt-4",
    "request too large for_",
    "max_tokens must be at least 1, got -5",
    "proxy: 413 status code (no body)",
    "413 Request Entity Too Large",
];
