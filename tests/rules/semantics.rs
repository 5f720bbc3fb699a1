//! The rules' semantics case by case (spec §3.1 plus ASCII `\w` and `\b`,
//! `^`/`$` at the text's ends), and their verdict in the machine (§10.2).

use autoretry::classify::Classifier;
use autoretry::rules::{RuleSet, Rules};
use autoretry::{AssistantMessage, Event, Input, Machine, Output};

fn verdict(retry: &str, text: &str) -> Option<bool> {
    Rules::compile(&RuleSet::new().with_retry(retry))
        .unwrap_or_else(|e| panic!("{retry}: {e}"))
        .verdict(text)
}

fn matches(pattern: &str, text: &str) -> bool {
    verdict(pattern, text) == Some(true)
}

#[test]
fn only_ascii_letters_fold_case() {
    assert!(matches("gateway", "GATEWAY hiccup"));
    assert!(matches("GATEWAY", "gAtEwAy"));
    assert!(matches("[a-c]x", "BX"));
    // No other character folds: not in literals, not in classes.
    for (pattern, text) in [
        ("s", "ſ"),
        ("k", "\u{212A}"),
        ("i", "İ"),
        ("i", "ı"),
        ("é", "É"),
        ("[s]", "ſ"),
        ("[a-z]", "\u{212A}"),
        (r"\w", "é"),
    ] {
        assert!(!matches(pattern, text), "{pattern} matched {text:?}");
    }
    assert!(matches("é", "é"));
    // Negation comes after folding: [^a] refuses A too.
    assert!(!matches("^[^a]$", "A"));
    assert!(matches("^[^a]$", "b"));
    // A named class folds its ASCII letters only.
    assert!(matches(r"^\p{Lu}$", "q"));
    assert!(!matches(r"^\p{Lu}$", "é"));
    assert!(matches(r"^\p{Lu}$", "É"));
    assert!(matches("^[[:upper:]]$", "q"));
}

#[test]
fn dot_is_a_scalar_value_but_line_breaks() {
    assert!(matches("^a.b$", "aéb"));
    assert!(matches("^a.b$", "a\u{1F600}b"));
    assert!(matches("^a.b$", "a\tb"));
    for text in ["a\nb", "a\rb", "a\u{2028}b", "a\u{2029}b", "ab"] {
        assert!(!matches("^a.b$", text), "{text:?}");
    }
    // `.` is one scalar value, not one byte.
    assert!(!matches("^a..b$", "aéb"));
}

#[test]
fn perl_classes_and_boundaries_are_ascii() {
    assert!(matches(r"^\d$", "7"));
    assert!(!matches(r"\d", "\u{0663}")); // ARABIC-INDIC DIGIT THREE
    assert!(matches(r"^\s$", "\u{0B}"));
    assert!(!matches(r"\s", "\u{A0}"));
    assert!(!matches(r"\s", "\u{2003}"));
    assert!(matches(r"^\w+$", "Az09_"));
    assert!(matches(r"^\W$", "é"));
    // `é` is no word character: a boundary lies between it and a letter.
    assert!(matches(r"\bcode\b", "écodeé"));
    assert!(!matches(r"\bcode\b", "xcode"));
    assert!(!matches(r"e\B", "eé"));
    assert!(matches(r"\<err", "an err"));
    assert!(!matches(r"\<err", "anerr"));
    assert!(matches(r"err\>", "err!"));
}

#[test]
fn anchors_are_the_texts_ends() {
    assert!(matches("^tool error", "tool error: x"));
    assert!(!matches("^tool error", "x\ntool error"));
    assert!(matches("failed$", "it failed"));
    assert!(!matches("failed$", "failed\n"));
    assert!(!matches("failed$", "failed\nagain"));
    assert!(matches(r"\Afailed\z", "FAILED"));
    // Unanchored: anywhere.
    assert!(matches("hiccup", "a gateway hiccup, retry"));
}

#[test]
fn flags_that_would_change_the_semantics_are_refused() {
    for pattern in [
        "(?m)^x", "(?s).", "(?-i)x", "(?u)x", "(?-u)x", "(?R)x", "a(?m:b)",
    ] {
        let err = Rules::compile(&RuleSet::new().with_retry(pattern)).unwrap_err();
        assert!(
            err.to_string().starts_with("retry[0]: flag "),
            "{pattern}: {err}"
        );
    }
    assert!(matches("(?i)X", "x"));
    assert!(matches("(?x) a b  c ", "ABC"));
    assert!(matches("(?U)a+", "a"));
}

#[test]
fn never_wins_and_no_match_is_no_verdict() {
    let rules = Rules::compile(
        &RuleSet::new()
            .with_retry("retry")
            .with_retry("hiccup")
            .with_never("billing"),
    )
    .unwrap();
    assert_eq!(rules.verdict("please retry"), Some(true));
    assert_eq!(rules.verdict("retry: billing failed"), Some(false));
    assert_eq!(rules.verdict("billing then retry, hiccup"), Some(false));
    assert_eq!(rules.verdict("nothing"), None);
    assert_eq!(rules.verdict(""), None);
    let empty = Rules::compile(&RuleSet::new()).unwrap();
    assert_eq!((empty.never_len(), empty.retry_len()), (0, 0));
    assert_eq!(empty.verdict("anything"), None);
    // A pattern that matches the empty text matches every text.
    let always = Rules::compile(&RuleSet::new().with_never("")).unwrap();
    assert_eq!(always.verdict(""), Some(false));
    assert_eq!(always.verdict("x"), Some(false));
}

#[test]
fn the_verdict_is_should_retry_and_the_overflow_rule_still_holds() {
    let rules = Rules::compile(
        &RuleSet::new()
            .with_retry("gateway hiccup|prompt")
            .with_never("billing"),
    )
    .unwrap();
    let run = |text: &str, own: Option<bool>| {
        let mut message = AssistantMessage::error(text);
        message.should_retry = own;
        let mut machine = Machine::default();
        let out = machine
            .handle(rules.apply_input(Input::AgentEnd {
                message,
                now_ms: None,
            }))
            .unwrap();
        matches!(out.first(), Some(Output::Emit(Event::Start { .. })))
    };
    // Not retryable by the classifier, retried by a rule.
    assert!(!AssistantMessage::error("gateway hiccup").is_retryable(0));
    assert!(run("gateway hiccup", None));
    // Retryable by the classifier (503), never retried by a rule.
    assert!(!run("503 billing unavailable", None));
    // The host's own verdict stays.
    assert!(run("503 billing unavailable", Some(true)));
    assert!(!run("gateway hiccup", Some(false)));
    // No verdict: the classifier decides.
    assert!(run("503 Service Unavailable", None));
    // An overflow is never retried, whatever a rule says.
    assert!(!run(
        "prompt is too long: 213462 tokens > 200000 maximum",
        None
    ));
    // The classification with the verdict applied.
    let c = rules.classify_with("prompt is too long", Classifier::Classic);
    assert_eq!(c.verdict, Some(true));
    assert!(c.classification.overflow && !c.classification.retryable);
    for text in [
        "gateway hiccup",
        "503 billing",
        "503",
        "nothing",
        "",
        "prompt",
    ] {
        for classifier in [Classifier::Classic, Classifier::Extended] {
            let c = rules.classify_with(text, classifier);
            let message = rules.apply(AssistantMessage::error(text));
            assert_eq!(
                c.classification.retryable,
                message.is_retryable_with(0, classifier),
                "{text:?}"
            );
        }
    }
}
