//! The extended classifier (spec 10.5) against the `regex` crate: its
//! retryable, usage-limit (window alternatives included) and overflow
//! patterns, translated to the reference form with `\b` an ASCII word
//! boundary, must give the same labels as `Classifier::Extended.classify` and
//! the `matches_*_with` functions; the hint must be that of the spec's own
//! expressions (10.4). On both corpora, on texts around the 80-character
//! window and the word boundaries, and on generated adversarial texts,
//! through the `&str` and the lossy bytes entry points.

use autoretry::classify::{wait_hint_ms, wait_hint_ms_bytes, Classifier};
use autoretry_gen::{literal_body, patterns};
use regex::Regex;

mod common;
use common::{corpus, generated, mangle, re, Hints, Rng, INVALID};

const EXTENDED: Classifier = Classifier::Extended;

struct Reference {
    retryable: Regex,
    usage_limit: Regex,
    overflow: Vec<Regex>,
    hints: Hints,
}

impl Reference {
    fn new() -> Self {
        let unanchored = patterns::OVERFLOW
            .iter()
            .map(|l| literal_body(l).unwrap())
            .filter(|body| !body.starts_with('^'));
        let added = patterns::OVERFLOW_EXTENDED
            .iter()
            .map(|l| literal_body(l).unwrap());
        let overflow: Vec<Regex> = unanchored.chain(added).map(re).collect();
        assert_eq!(overflow.len(), 27);
        Reference {
            retryable: re(patterns::RETRYABLE_EXTENDED),
            usage_limit: re(patterns::USAGE_LIMIT_EXTENDED),
            overflow,
            hints: Hints::new(),
        }
    }

    /// (retryable pattern or usage limit, overflow, usage limit).
    fn labels(&self, text: &str) -> (bool, bool, bool) {
        let usage_limit = self.usage_limit.is_match(text);
        (
            self.retryable.is_match(text) || usage_limit,
            self.overflow.iter().any(|r| r.is_match(text)),
            usage_limit,
        )
    }
}

#[derive(Default)]
struct Counts {
    texts: usize,
    byte_texts: usize,
    retryable: usize,
    overflow: usize,
    usage_limit: usize,
    hint: usize,
}

impl Counts {
    fn check(&mut self, reference: &Reference, text: &str) {
        let (r, o, u) = reference.labels(text);
        self.texts += 1;
        self.retryable += usize::from(r);
        self.overflow += usize::from(o);
        self.usage_limit += usize::from(u);
        assert_eq!(EXTENDED.matches_retryable(text), r, "retryable {text:?}");
        assert_eq!(EXTENDED.matches_overflow(text), o, "overflow {text:?}");
        assert_eq!(
            EXTENDED.matches_usage_limit(text),
            u,
            "usage limit {text:?}"
        );
        let c = EXTENDED.classify(text);
        assert_eq!(
            (c.retryable, c.overflow, c.usage_limit),
            (!text.is_empty() && !o && r, o, u),
            "classify {text:?}"
        );
        assert_eq!(c.hint_ms, wait_hint_ms(text, None), "hint {text:?}");
        if let Some(want) = reference.hints.wait_hint(text) {
            assert_eq!(c.hint_ms, want, "hint by the spec's expressions {text:?}");
        }
        self.hint += usize::from(c.hint_ms.is_some());
        assert_eq!(
            EXTENDED.classify_bytes(text.as_bytes()),
            c,
            "classify_bytes {text:?}"
        );
    }

    fn check_bytes(&mut self, reference: &Reference, bytes: &[u8]) {
        let lossy = String::from_utf8_lossy(bytes);
        let (r, o, u) = reference.labels(&lossy);
        self.byte_texts += 1;
        let c = EXTENDED.classify_bytes(bytes);
        assert_eq!(
            (c.retryable, c.overflow, c.usage_limit),
            (!bytes.is_empty() && !o && r, o, u),
            "classify_bytes {bytes:?}"
        );
        assert_eq!(c.hint_ms, wait_hint_ms_bytes(bytes, None), "hint {bytes:?}");
        assert_eq!(c.hint_ms, wait_hint_ms(&lossy, None), "hint {bytes:?}");
    }
}

/// Words and phrases of the extended patterns and hints, whole and cut, and
/// near misses.
const FRAGMENTS: &[&str] = &[
    "no capacity",
    "no_capacity",
    "nocapacity",
    "high demand",
    "peak-demand",
    "at capacity",
    "over capacity",
    "insufficient_capacity",
    "capacity exceeded",
    "capacity-exhausted",
    "peak load",
    "capacity",
    "demand",
    "overloaded",
    "provider returned error",
    "provider",
    "returned",
    "rate limit",
    "rate-limit",
    "ratelimit",
    "rate",
    "limit",
    "limits",
    "too many requests",
    "429",
    "500",
    "502",
    "503",
    "504",
    "5",
    "0",
    "4",
    "13",
    "413",
    "400",
    "_",
    "-",
    "x",
    "service unavailable",
    "server error",
    "internal error",
    "retry your request",
    "network error",
    "connection error",
    "connection refused",
    "unable to connect. is the computer able to access the url?",
    "is the computer able to access the url?",
    "other side closed",
    "fetch failed",
    "upstream connect",
    "upstream request failed",
    "reset before headers",
    "socket hang up",
    "timed out",
    "time out",
    "timeout",
    "terminated",
    "retry delay",
    "stream stall",
    "no error details in response",
    "HTTP2StreamReset",
    "HTTP2RefusedStream",
    "HTTP2EnhanceYourCalm",
    "nghttp2_internal_error",
    "nghttp2_refused_stream",
    "stream closed with error code",
    "malformed function call",
    "usage limit",
    "usage_limit_reached",
    "usage_not_included",
    "limit_reached",
    "quota exceeded",
    "quota",
    "exceeded",
    "resource exhausted",
    "RESOURCE_EXHAUSTED",
    "exhausted your capacity",
    "quota will reset",
    "account",
    "account's",
    "accounts",
    "'s",
    "your account's rate limit",
    "account rate limit",
    "rate limit for this account",
    "                                        ",
    "0123456789012345678901234567890123456789",
    "request exceeds the maximum size",
    "payload too large",
    "entity too large",
    "request",
    "payload",
    "entity",
    "too large",
    "413 Request Entity Too Large",
    "model_context_window_exceeded",
    "prompt filled the context window",
    "(no body)",
    "status code",
    "prompt is too long",
    "context window",
    "exceeded",
    "too many tokens",
    "retry-after: ",
    "retry-after-ms=",
    "x-ratelimit-reset: ",
    "x-ratelimit-reset-ms: ",
    "reset after ",
    "please retry in ",
    "\"retryDelay\":",
    " \"",
    "\"",
    "try again in",
    " ~",
    "~",
    "1h",
    "30m",
    "5s",
    "s",
    "ms",
    "sec",
    "min",
    "mins",
    "minute",
    "minutes",
    "h",
    "hr",
    "hrs",
    "hour",
    "hours",
    "m",
    "2.5",
    "0.0001",
    "1.2.3",
    ".",
    "12",
    "41.820516331",
    "0",
    "1.005",
];

const SEPARATORS: &[&str] = &[
    " ", " ", " ", "", "", "", "\n", "\r", "\u{2028}", "\t", "\u{0B}", "\u{A0}", "ſ", "\u{212A}",
    "é", "😀", "\u{FFFD}", "—", ": ", "x", "_", "9", ". ", ", ",
];

#[test]
fn the_corpora_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rows = corpus("tests/corpus/extended/errors.jsonl");
    assert!(rows.len() >= 195);
    rows.extend(corpus("tests/corpus/errors.jsonl"));
    for text in &rows {
        counts.check(&reference, text);
        for invalid in INVALID {
            let mut bytes = text.as_bytes().to_vec();
            bytes.extend_from_slice(invalid);
            bytes.extend_from_slice(text.as_bytes());
            counts.check_bytes(&reference, &bytes);
        }
    }
    println!(
        "corpora: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}, hint {}",
        counts.texts,
        counts.byte_texts,
        counts.retryable,
        counts.overflow,
        counts.usage_limit,
        counts.hint
    );
    assert!(counts.retryable > 0 && counts.overflow > 0 && counts.usage_limit > 0);
}

#[test]
fn the_window_is_exactly_80_characters_on_one_line() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let firsts = [
        "account",
        "account's",
        "Account's",
        "ACCOUNT",
        "accounts",
        "xaccount",
        "account_",
        "account'",
        "rate limit",
        "rate-limit",
        "ratelimit",
        "rate—limit",
        "rate limits",
        "rate\u{2028}limit",
        "rate\rlimit",
    ];
    let fillers = ["x", " ", "\r", "\u{2028}", "😀", "\u{FFFD}", "é", "\t"];
    for first in firsts {
        for second in firsts {
            for filler in fillers {
                for gap in [0, 1, 79, 80, 81] {
                    for sep in ["", " ", "'"] {
                        let text =
                            format!("{sep}{first}{sep}{}{sep}{second}{sep}", filler.repeat(gap));
                        counts.check(&reference, &text);
                        // A line break anywhere in the gap breaks it.
                        let broken = format!("{first} {}\n{second}", filler.repeat(gap));
                        counts.check(&reference, &broken);
                    }
                }
            }
        }
    }
    // Several first words: the nearest counts.
    for gap in 70..=90 {
        let text = format!(
            "account x{}account{}rate limit",
            " ".repeat(gap),
            " ".repeat(gap / 2)
        );
        counts.check(&reference, &text);
        let text = format!(
            "rate limit{}rate limit {}account",
            "-".repeat(gap),
            " ".repeat(gap - 60)
        );
        counts.check(&reference, &text);
    }
    // Invalid bytes count as one character each (one U+FFFD per subpart).
    for invalid in INVALID {
        for gap in [70usize, 79, 80, 81] {
            let mut bytes = b"account ".to_vec();
            for _ in 0..gap {
                bytes.extend_from_slice(invalid);
            }
            bytes.extend_from_slice(b" rate limit");
            counts.check_bytes(&reference, &bytes);
        }
    }
    println!(
        "window: {} texts, {} byte texts; usage limit {}",
        counts.texts, counts.byte_texts, counts.usage_limit
    );
    assert!(counts.usage_limit > counts.texts / 50);
    assert!(counts.usage_limit < counts.texts - counts.texts / 50);
}

#[test]
fn word_boundaries_are_ascii() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let codes = [
        "429", "500", "502", "503", "504", "413", "400", "5000", "4290",
    ];
    let around = [
        "", " ", "_", "a", "0", "é", "😀", "\u{FFFD}", "-", "\n", "(", "ſ", "\u{212A}",
    ];
    for code in codes {
        for before in around {
            for after in around {
                counts.check(&reference, &format!("{before}{code}{after}"));
                counts.check(&reference, &format!("{before}{code} (no body){after}"));
                counts.check(
                    &reference,
                    &format!("{before}{code}{after} request too large"),
                );
                counts.check(&reference, &format!("{before}no capacity{after}"));
                counts.check(&reference, &format!("{before}peak_load{after}"));
            }
        }
    }
    println!("boundaries: {} texts", counts.texts);
}

#[test]
fn generated_texts_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut fragments: Vec<&str> = FRAGMENTS.to_vec();
    fragments.extend_from_slice(SEPARATORS);
    for _ in 0..100_000 {
        let text = generated(&mut rng, &fragments);
        counts.check(&reference, &text);
        let mut bytes = text.into_bytes();
        for _ in 0..1 + rng.below(3) {
            let at = rng.below(bytes.len() + 1);
            let invalid = INVALID[rng.below(INVALID.len())];
            bytes.splice(at..at, invalid.iter().copied());
        }
        counts.check_bytes(&reference, &bytes);
    }
    println!(
        "generated: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}, hint {}",
        counts.texts,
        counts.byte_texts,
        counts.retryable,
        counts.overflow,
        counts.usage_limit,
        counts.hint
    );
    assert!(counts.hint > 200, "{}", counts.hint);
    for n in [counts.retryable, counts.overflow, counts.usage_limit] {
        assert!(
            n > counts.texts / 100 && n < counts.texts - counts.texts / 100,
            "{n}"
        );
    }
}

/// Texts made of hint forms, whole and broken: a name, white space, `~`,
/// a numeral (or a near miss), white space, a unit and what follows it.
fn hint_text(rng: &mut Rng) -> String {
    const NAMES: &[&str] = &[
        "retry-after",
        "retry-after-ms",
        "x-ratelimit-reset",
        "x-ratelimit-reset-ms",
        "reset after ",
        "Reset After ",
        "please retry in ",
        "Please retry in",
        "\"retryDelay\":",
        "\"retrydelay\" :",
        "try again in",
        "Try again in",
        "try again",
    ];
    const SEPS: &[&str] = &["", "", ":", "=", ": ", " = ", " :\u{b}", "\""];
    const SPACE: &[&str] = &[
        "", " ", "  ", "\t", "\n", "\u{b}", "\u{a0}", " ~", "~ ", " ~ ", "\"",
    ];
    const NUMERALS: &[&str] = &[
        "0",
        "5",
        "12",
        "2.5",
        "0.0001",
        "41.820516331",
        "8.3",
        "158",
        "5.",
        ".5",
        "0012",
        "1.2.3",
        ".",
        "..",
        "1.005",
        "99999999999999999999",
        "5124095576030",
        "0.000",
        "1h30m10",
        "3h6m38",
        "1h",
        "30m",
        "2e3",
        "-1",
        "1,5",
        "10",
        "7",
    ];
    const UNITS: &[&str] = &[
        "", "s", "ms", "S", "MS", "sec", "secs", "m", "min", "mins", "minute", "minutes", "h",
        "hr", "hrs", "hour", "hours", "mo", "x", "s\"", "ms\"", "\"",
    ];
    const AFTER: &[&str] = &["", "", " ", ".", ",", ";", "x", "_", "5", "é", "\n", "\""];
    let mut text = String::new();
    for _ in 0..1 + rng.below(3) {
        if rng.below(3) == 0 {
            text.push_str(rng.pick(FRAGMENTS));
        }
        text.push_str(rng.pick(NAMES));
        text.push_str(rng.pick(SEPS));
        text.push_str(rng.pick(SPACE));
        text.push_str(rng.pick(NUMERALS));
        text.push_str(rng.pick(SPACE));
        text.push_str(rng.pick(UNITS));
        text.push_str(rng.pick(AFTER));
    }
    text
}

#[test]
fn generated_hints_agree_with_the_spec_s_expressions() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for _ in 0..100_000 {
        let text = hint_text(&mut rng);
        counts.check(&reference, &text);
        let mut bytes = text.into_bytes();
        let at = rng.below(bytes.len() + 1);
        let invalid = INVALID[rng.below(INVALID.len())];
        bytes.splice(at..at, invalid.iter().copied());
        counts.check_bytes(&reference, &bytes);
    }
    println!(
        "hints: {} texts, {} byte texts; hint {}",
        counts.texts, counts.byte_texts, counts.hint
    );
    assert!(
        counts.hint > counts.texts / 10 && counts.hint < counts.texts - counts.texts / 10,
        "{}",
        counts.hint
    );
}

/// Filler of long bodies: the benches' proxy error page (no match).
const PAGE: &str = include_str!("../../../benches/data/body.html");

/// Long bodies (with feature `prefilter`, the skipping scan of texts of
/// 256 bytes or more): generated texts spread over filler, next to each
/// other, or between runs of letters, up to ~13 KB; the corpus texts at
/// either end of a long body.
#[test]
fn long_bodies_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut fragments: Vec<&str> = FRAGMENTS.to_vec();
    fragments.extend_from_slice(SEPARATORS);
    let page = PAGE.repeat(2);
    for _ in 0..2_000 {
        let mut text = String::new();
        let len = 256 + rng.below(13_000);
        let filler = rng.below(3);
        while text.len() < len {
            match filler {
                0 => {
                    let mut cut = rng.below(page.len());
                    while !page.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    text.push_str(&page[..cut]);
                }
                1 => {}
                _ => text.push_str(&"x".repeat(rng.below(4_200))),
            }
            text.push_str(&generated(&mut rng, &fragments));
        }
        counts.check(&reference, &text);
    }
    let body = PAGE.repeat(10);
    for file in [
        "tests/corpus/errors.jsonl",
        "tests/corpus/extended/errors.jsonl",
    ] {
        for text in &corpus(file) {
            counts.check(&reference, &format!("{body}{text}"));
            counts.check(&reference, &format!("{text}{body}"));
        }
    }
    println!(
        "long bodies: {} texts; retryable {}, overflow {}, usage limit {}, hint {}",
        counts.texts, counts.retryable, counts.overflow, counts.usage_limit, counts.hint
    );
    for n in [counts.retryable, counts.overflow, counts.usage_limit] {
        assert!(
            n > counts.texts / 50 && n < counts.texts - counts.texts / 50,
            "{n}"
        );
    }
}

/// The factor search's chunk ends (256 bytes, then growing to 4 KB) up to
/// `max`.
fn chunk_ends(max: usize) -> Vec<usize> {
    let mut ends = Vec::new();
    let mut end = 0;
    while end < max {
        end += 4096.min(end + 256);
        ends.push(end);
    }
    ends
}

/// `needle` at `at` bytes (or a few less, on a character boundary) into
/// `unit` repeated, and `unit` after it.
fn placed(unit: &str, at: usize, needle: &str) -> String {
    let mut text = unit.repeat(at / unit.len().max(1) + 1);
    let mut cut = at.min(text.len());
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    text.truncate(cut);
    text.push_str(needle);
    text.push_str(&unit.repeat(200 / unit.len().max(1) + 1));
    text
}

/// Long bodies (with feature `prefilter`, the factor search of texts of
/// 128 bytes or more): the extended patterns' matches and near misses
/// across the search's chunk boundaries, in filler crowded with factors;
/// status codes whose word boundary falls at a segment's start; `\s*` runs
/// across lines and chunk edges; window words 79 to 81 characters apart.
#[test]
fn matches_across_chunks_agree_with_regex() {
    let reference = Reference::new();
    let mut counts = Counts::default();
    let mut rng = Rng(0xD1B5_4A32_D192_ED03);
    let units = [
        "y",
        " ",
        "\n",
        "lorem ipsum dolor ",
        "usage limits per account; ",
        "server internal upstream 4000 time ",
        "account ",
        "limit ",
        "413x ",
        "rate of calls\n",
        PAGE,
    ];
    let spaces = ["", " ", "\n", "\r\n\t ", "\n\n\n\n", "    "];
    let mut needles: Vec<String> = [
        "429",
        "x429",
        "_503 ",
        " 503_",
        "5000",
        "peak load",
        "xpeak load",
        "no capacity",
        "socket hang up",
        "timed out",
        "time-out",
        "rate limit",
        "usage_not_included",
        "quota will reset",
        "413 Request Entity Too Large",
        "prompt filled the context window",
        "input token count 12 exceeds the maximum",
        "nghttp2_refused_stream",
        "retry-after: 7",
        "please retry in 5s",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for space in spaces {
        let long = space.repeat(1 + 300 / space.len().max(1));
        for s in [space, long.as_str()] {
            needles.push(format!(
                "unable to connect.{s}is the computer able to access the url?"
            ));
            needles.push(format!("unable.to.connect.{s}is the computer able"));
            needles.push(format!("400{s}(no body)"));
            needles.push(format!("413{s}status code{s}(no body)"));
            needles.push(format!("x413{s}(no body)"));
        }
    }
    for (first, second) in [
        ("account", "rate limit"),
        ("account's", "ratelimit"),
        ("rate-limit", "account"),
        ("accounts", "rate limit"),
    ] {
        for gap in [0usize, 1, 78, 79, 80, 81] {
            for filler in ["x", " ", "é", "\r"] {
                let inner = filler.repeat(gap.saturating_sub(2));
                let between = if gap >= 2 {
                    format!(" {inner} ")
                } else {
                    " ".repeat(gap)
                };
                needles.push(format!("{first}{between}{second}"));
            }
        }
        needles.push(format!("{first} {}\n{second}", "y".repeat(20)));
    }
    let ends = chunk_ends(13_000);
    for needle in &needles {
        for _ in 0..12 {
            let unit = units[rng.below(units.len())];
            let near = ends[rng.below(ends.len())];
            let at = (near + rng.below(80)).saturating_sub(40 + rng.below(needle.len() + 1));
            let text = placed(unit, at, &mangle(&mut rng, needle));
            counts.check(&reference, &text);
            if rng.below(4) == 0 {
                let mut bytes = text.into_bytes();
                let at = rng.below(bytes.len() + 1);
                let invalid = INVALID[rng.below(INVALID.len())];
                bytes.splice(at..at, invalid.iter().copied());
                counts.check_bytes(&reference, &bytes);
            }
        }
    }
    // Two needles in one body, near each other or a chunk apart.
    for _ in 0..3_000 {
        let unit = units[rng.below(units.len())];
        let a = &needles[rng.below(needles.len())];
        let b = &needles[rng.below(needles.len())];
        let near = ends[rng.below(ends.len())];
        let at = (near + rng.below(80)).saturating_sub(40);
        let gap = unit.repeat(1 + rng.below(3));
        let text = placed(unit, at, &format!("{a}{gap}{b}"));
        counts.check(&reference, &text);
    }
    println!(
        "across chunks: {} texts, {} byte texts; retryable {}, overflow {}, usage limit {}, hint {}",
        counts.texts,
        counts.byte_texts,
        counts.retryable,
        counts.overflow,
        counts.usage_limit,
        counts.hint
    );
    for n in [counts.retryable, counts.overflow, counts.usage_limit] {
        assert!(
            n > counts.texts / 50 && n < counts.texts - counts.texts / 50,
            "{n}"
        );
    }
}
