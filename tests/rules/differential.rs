//! Random small rule sets and random texts: the rules, compiled at run time
//! and loaded from dense and sparse blobs, give the verdicts of a
//! `regex::RegexSet` of the same patterns with the semantics written out
//! (`autoretry_testkit::rules_fuzz`). `PROPTEST_CASES` sets the number of
//! rule sets (256 by default).

use crate::common::proptest_config;
use autoretry_testkit::rules_fuzz::{check_against_reference, fuzz_rules_match, Pattern};
use proptest::prelude::*;

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/rules/differential.txt";

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    #[test]
    fn verdicts_equal_the_regex_crate(data in proptest::collection::vec(any::<u8>(), 0..160)) {
        fuzz_rules_match(&data);
    }
}

/// The generated cases are not vacuous: over a fixed sweep of inputs every
/// verdict occurs often.
#[test]
fn the_sweep_meets_every_verdict() {
    let (mut counts, mut too_large) = ([0usize; 3], 0);
    let mut state = 0x2545_f491_4f6c_dd1d_u64;
    for _ in 0..400 {
        let data: Vec<u8> = (0..120)
            .map(|_| {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let Some(verdicts) = fuzz_rules_match(&data) else {
            too_large += 1;
            continue;
        };
        for verdict in verdicts {
            counts[match verdict {
                None => 0,
                Some(false) => 1,
                Some(true) => 2,
            }] += 1;
        }
    }
    println!(
        "verdicts over the sweep: none {}, never {}, retry {}; {too_large} of 400 sets over the size limit",
        counts[0], counts[1], counts[2]
    );
    assert!(counts.iter().all(|&n| n >= 100), "{counts:?}");
    assert!(
        too_large <= 8,
        "{too_large} of 400 sets over the size limit"
    );
}

fn p(rule: &str, reference: &str) -> Pattern {
    Pattern {
        rule: rule.into(),
        reference: reference.into(),
    }
}

/// Hand-picked patterns where a Unicode-aware engine would differ.
#[test]
fn the_semantics_where_engines_differ() {
    let texts: Vec<String> = [
        "ſ",
        "s",
        "S",
        "K",
        "\u{212A}",
        "k",
        "İ",
        "i",
        "é",
        "É",
        "a\rb",
        "a\nb",
        "a\u{2028}b",
        "a b",
        "aéb",
        "x_y",
        "ab",
        "",
        "\u{0661}",
        "٣",
    ]
    .map(String::from)
    .to_vec();
    let retry = [
        p("s", "[sS]"),
        p("k", "[kK]"),
        p("i", "[iI]"),
        p("é", "é"),
        p("a.b", r"[aA][^\n\r\x{2028}\x{2029}][bB]"),
        p(r"\w", "[0-9A-Za-z_]"),
        p(r"a\b", r"[aA](?-u:\b)"),
        p(r"^$", r"\A\z"),
        p(r"\d", "[0-9]"),
        p(r"[^a]b", "[^aA][bB]"),
        p(r"\p{Lu}", r"[\p{Lu}a-z]"),
    ];
    for rule in &retry {
        assert!(check_against_reference(&[], std::slice::from_ref(rule), &texts).is_some());
        assert!(check_against_reference(std::slice::from_ref(rule), &[], &texts).is_some());
    }
    assert!(check_against_reference(&retry[..3], &retry[3..], &texts).is_some());
}
