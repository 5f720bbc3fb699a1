//! The classifier's properties (spec §3, §10.4): ASCII case, `İ ı ſ K`,
//! monotone predicates, bytes against lossy strings, saturating hints, the
//! hints of §10.4 against those of §3.5.

use autoretry::classify::{
    classify, classify_bytes, retry_hint_ms, retry_hint_ms_bytes, wait_hint_ms, Classifier,
};
use autoretry_testkit::fuzzing::matches_overflow_unanchored;
use proptest::prelude::*;

use crate::common::proptest_config;
use crate::common::texts::*;

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/classify/props.txt";

/// Whether `text` has none of the leading literals of rules 3–6 of 10.4
/// (ASCII-case-insensitively).
fn without_10_4_forms(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ![
        "reset after",
        "please retry in",
        "\"retrydelay\"",
        "try again in",
    ]
    .iter()
    .any(|form| lower.contains(form))
}

/// Text with the characters that matter to the patterns: letters of the
/// patterns, digits, separators, line terminators, non-ASCII letters.
fn texty() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => corpus_text(),
        2 => "[a-zA-Z0-9 _.:=,;-]{0,12}",
        1 => proptest::sample::select(vec![
            "rate", "limit", "usage", "overloaded", "429", "500", "503", "context", "window",
            "exceeded", "too long", "n_ctx", "tokens", "prompt", "400", "413", "(no body)",
            "status code", "retry-after", "x-ratelimit-reset", "\n", "\u{2028}", "\u{130}",
            "\u{131}", "\u{17F}", "\u{212A}", "é", "😀", "\u{FFFD}", "\t",
        ]).prop_map(str::to_owned),
        1 => any::<String>(),
    ];
    proptest::collection::vec(piece, 0..5).prop_map(|v| v.concat())
}

fn flip_case(text: &str, flips: &[bool]) -> String {
    text.chars()
        .zip(flips.iter().cycle())
        .map(|(c, &f)| {
            if f && c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else if f && c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c
            }
        })
        .collect()
}

/// Replaces the ASCII letters `i`, `s`, `k` (either case) chosen by `picks`
/// with `with(letter)`; returns the new text and the text with the chosen
/// letters removed.
fn substitute(text: &str, picks: &[bool], with: impl Fn(char) -> char) -> (String, String) {
    let mut replaced = String::new();
    let mut removed = String::new();
    let mut n = 0;
    for c in text.chars() {
        if matches!(c.to_ascii_lowercase(), 'i' | 's' | 'k') {
            let pick = picks.get(n % picks.len().max(1)).copied().unwrap_or(false);
            n += 1;
            if pick {
                replaced.push(with(c));
                continue;
            }
        }
        replaced.push(c);
        removed.push(c);
    }
    (replaced, removed)
}

fn folding(c: char, variant: bool) -> char {
    match (c.to_ascii_lowercase(), variant) {
        ('i', false) => '\u{130}',
        ('i', true) => '\u{131}',
        ('s', _) => '\u{17F}',
        _ => '\u{212A}',
    }
}

/// The monotone predicates, in a fixed order.
fn monotone(t: &str) -> [bool; 4] {
    [
        Classifier::Classic.matches_retryable(t),
        Classifier::Classic.matches_usage_limit(t),
        Classifier::Classic.matches_overflow(t),
        matches_overflow_unanchored(t),
    ]
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    /// ASCII case never changes a label (nor the hint).
    #[test]
    fn ascii_case_changes_nothing(text in texty(), flips in proptest::collection::vec(any::<bool>(), 1..8), now in any::<Option<u64>>()) {
        let flipped = flip_case(&text, &flips);
        prop_assert_eq!(classify(&flipped), classify(&text));
        prop_assert_eq!(retry_hint_ms(&flipped, now), retry_hint_ms(&text, now));
    }

    /// `İ ı ſ K` in place of `i`/`s`/`k` classify exactly like a letter that
    /// folds nowhere (`é`), and never match more than the text without them.
    #[test]
    fn folding_letters_never_match(text in texty(), picks in proptest::collection::vec(any::<bool>(), 1..6), variant in any::<bool>()) {
        let (folded, removed) = substitute(&text, &picks, |c| folding(c, variant));
        let (neutral, _) = substitute(&text, &picks, |_| 'é');
        prop_assert_eq!(classify(&folded), classify(&neutral), "{:?}", folded);
        for (with, without) in monotone(&folded).into_iter().zip(monotone(&removed)) {
            prop_assert!(!with || without, "{:?} matches more than {:?}", folded, removed);
        }
    }

    /// On corpus texts that match, turning a letter the pattern needs into
    /// its folding look-alike never creates a match the neutral letter would
    /// not (the same statement, on the texts where it bites).
    #[test]
    fn folding_letters_in_matching_texts(i in 0..corpus().len(), picks in proptest::collection::vec(any::<bool>(), 1..4), variant in any::<bool>()) {
        let text = &corpus()[i].text;
        let (folded, removed) = substitute(text, &picks, |c| folding(c, variant));
        let (neutral, _) = substitute(text, &picks, |_| '\u{FFFD}');
        prop_assert_eq!(classify(&folded), classify(&neutral));
        for (with, without) in monotone(&folded).into_iter().zip(monotone(&removed)) {
            prop_assert!(!with || without);
        }
    }

    /// Appending text never loses a match of a monotone predicate; prepending
    /// never loses one of the unanchored patterns.
    #[test]
    fn more_text_never_loses_a_match(text in texty(), extra in texty()) {
        let appended = format!("{text}{extra}");
        for (before, after) in monotone(&text).into_iter().zip(monotone(&appended)) {
            prop_assert!(!before || after, "{:?} -> {:?}", text, appended);
        }
        let prepended = format!("{extra}{text}");
        let [r, u, _, o] = monotone(&text);
        let [r2, u2, _, o2] = monotone(&prepended);
        prop_assert!((!r || r2) && (!u || u2) && (!o || o2), "{:?} -> {:?}", text, prepended);
    }

    /// The bytes entry points read bytes as `String::from_utf8_lossy` does.
    #[test]
    fn bytes_equal_lossy_strings(
        bytes in prop_oneof![
            any::<Vec<u8>>(),
            (texty(), any::<Vec<u8>>(), any::<prop::sample::Index>()).prop_map(|(t, junk, at)| {
                let mut b = t.into_bytes();
                let at = at.index(b.len() + 1);
                b.splice(at..at, junk);
                b
            }),
        ],
        now in any::<Option<u64>>(),
    ) {
        let lossy = String::from_utf8_lossy(&bytes);
        prop_assert_eq!(classify_bytes(&bytes), classify(&lossy));
        prop_assert_eq!(Classifier::Classic.matches_retryable_bytes(&bytes), Classifier::Classic.matches_retryable(&lossy));
        prop_assert_eq!(Classifier::Classic.matches_overflow_bytes(&bytes), Classifier::Classic.matches_overflow(&lossy));
        prop_assert_eq!(Classifier::Classic.matches_usage_limit_bytes(&bytes), Classifier::Classic.matches_usage_limit(&lossy));
        prop_assert_eq!(retry_hint_ms_bytes(&bytes, now), retry_hint_ms(&lossy, now));
    }

    /// Hints never panic, and the integer rules saturate as spec §3.5 says
    /// (computed here with wide integers).
    #[test]
    fn hints_saturate(
        rule in 0usize..3,
        digits in "[0-9]{1,40}",
        ws1 in "[ \t]{0,2}",
        sep in prop_oneof![Just(':'), Just('=')],
        ws2 in "[ \t]{0,2}",
        prefix in "[a-z ]{0,10}",
        suffix in prop_oneof![Just(String::new()), "[ ,;][a-z ]{0,10}"],
        flips in proptest::collection::vec(any::<bool>(), 1..5),
        now in any::<Option<u64>>(),
    ) {
        let name = ["retry-after-ms", "x-ratelimit-reset-ms", "x-ratelimit-reset"][rule];
        let text = format!("{prefix}{}{ws1}{sep}{ws2}{digits}{suffix}", flip_case(name, &flips));
        // Digits saturate at u64::MAX.
        let v: u128 = digits.parse::<u128>().map_or(u128::from(u64::MAX), |v| v.min(u128::from(u64::MAX)));
        let max = u128::from(u64::MAX);
        let expected: Option<u128> = match rule {
            0 => Some(v),
            1 if v <= 1_000_000_000_000 => Some(v),
            1 => now.map(|now| v.saturating_sub(u128::from(now))),
            _ if v <= 1_000_000_000 => Some(v * 1000),
            _ => now.map(|now| (v * 1000).min(max).saturating_sub(u128::from(now))),
        };
        let expected = expected.map(|e| u64::try_from(e.min(max)).expect("fits"));
        prop_assert_eq!(retry_hint_ms(&text, now), expected, "{:?}", text);
    }

    /// Any text and any clock: no panic, and the hint does not depend on
    /// the entry point.
    #[test]
    fn hints_never_panic(text in texty(), tail in "[0-9eE.+:TZz-]{0,30}", now in any::<Option<u64>>()) {
        for name in ["retry-after: ", "retry-after-ms=", "x-ratelimit-reset-ms:", "x-ratelimit-reset ="] {
            let t = format!("{text}{name}{tail}");
            prop_assert_eq!(retry_hint_ms(&t, now), retry_hint_ms_bytes(t.as_bytes(), now));
        }
    }
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    /// 10.4 keeps the rules of 3.5 (as its rules 1, 2, 7 and 8) around four
    /// new ones: on a text with none of the new rules' leading literals, the
    /// wait hint is the hint of 3.5, with or without a clock.
    #[test]
    fn wait_hints_are_those_of_3_5_without_the_new_forms(
        text in prop_oneof![3 => texty(), 1 => hint_index().prop_map(|i| text_of(i).to_owned())],
        tail in "[0-9eE.+:TZz-]{0,30}",
        now in any::<Option<u64>>(),
    ) {
        for name in ["", "retry-after: ", "retry-after-ms=", "x-ratelimit-reset-ms:", "x-ratelimit-reset ="] {
            let t = format!("{text}{name}{tail}");
            if without_10_4_forms(&t) {
                prop_assert_eq!(wait_hint_ms(&t, now), retry_hint_ms(&t, now), "{:?}", t);
            }
        }
    }
}

/// The predicates left out of the monotonicity properties are indeed not
/// monotone: the anchored overflow pattern and the `retryable` label.
#[test]
fn anchored_overflow_and_the_retryable_label_are_not_monotone() {
    assert!(Classifier::Classic.matches_overflow("413 (no body)"));
    assert!(!Classifier::Classic.matches_overflow("x 413 (no body)"));
    assert!(classify("503").retryable);
    assert!(!classify("503 prompt is too long").retryable);
}
