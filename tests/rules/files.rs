//! Every malformed rules file is an error that names what is wrong, and
//! changes nothing.

use autoretry::rules::{
    List, RuleSet, Rules, RulesError, MAX_FILE_LEN, MAX_RULES, NEST_LIMIT, SIZE_LIMIT,
};

fn error(json: &str) -> String {
    let err = Rules::load(json.as_bytes()).unwrap_err();
    err.to_string()
}

#[test]
fn the_shape_of_the_file() {
    assert_eq!(
        error(r#"{"retry": ["a"], "sometimes": ["b"]}"#),
        r#"rules file: unknown key "sometimes" (expected "retry" or "never")"#
    );
    assert_eq!(
        error(r#"{"retry": ["a"], "retry": ["b"]}"#),
        r#"rules file: key "retry" given twice"#
    );
    assert_eq!(
        error(r#"{"retry": "a"}"#),
        "retry: expected an array of pattern strings, found a string"
    );
    assert_eq!(
        error(r#"{"never": null}"#),
        "never: expected an array of pattern strings, found null"
    );
    assert_eq!(
        error(r#"{"never": {"a": 1}}"#),
        "never: expected an array of pattern strings, found an object"
    );
    assert_eq!(
        error(r#"{"retry": ["a", ["b"]]}"#),
        "retry[1]: expected a pattern string, found an array"
    );
    assert_eq!(
        error(r#"{"never": ["a", "b", true]}"#),
        "never[2]: expected a pattern string, found a boolean"
    );
    assert_eq!(
        error(r#"{"never": [1]}"#),
        "never[0]: expected a pattern string, found a number"
    );
    assert!(error(r#"["a"]"#).starts_with(
        r#"rules file: invalid type: sequence, expected an object {"retry": [...], "never": [...]}"#
    ));
    assert!(error(r#"{"retry": ["a"]"#).starts_with("rules file: EOF while parsing"));
    assert!(error("").starts_with("rules file: EOF while parsing"));
    assert!(error(r#"{"retry": ["a"]} x"#).starts_with("rules file: trailing characters"));
    assert!(Rules::load(b"{\"retry\": [\"\xff\"]}")
        .unwrap_err()
        .to_string()
        .starts_with("rules file: invalid UTF-8"));
    // Both lists are optional.
    for json in ["{}", r#"{"retry": []}"#, r#"{"never": ["x"]}"#] {
        assert!(Rules::load(json.as_bytes()).is_ok(), "{json}");
    }
}

#[test]
fn a_bad_pattern_names_its_list_index_and_the_parsers_message() {
    let cases = [
        (r#"{"retry": ["ok", "(unclosed"]}"#, "retry[1]: unclosed group at column 1"),
        (r#"{"never": ["a{3,1}"]}"#, "never[0]: invalid repetition count range, the start must be <= the end at column 2"),
        (r#"{"never": ["x", "y", "[z"]}"#, "never[2]: unclosed character class at column 1"),
        (r#"{"retry": ["\\p{Klingon}"]}"#, "retry[0]: Unicode property not found at column 1"),
        (r#"{"retry": ["a\\1"]}"#, "retry[0]: backreferences are not supported at column 2"),
        (r#"{"retry": ["(?<=a)b"]}"#, "retry[0]: look-around, including look-ahead and look-behind, is not supported at column 1"),
        (r#"{"never": ["(?m)^x"]}"#, "never[0]: flag m is not supported (rules match ASCII case-insensitively, `.` never matches a line break, `^` and `$` are the text's ends) at column 3"),
    ];
    for (json, expected) in cases {
        assert_eq!(error(json), expected, "{json}");
    }
    // In a multi-line (x mode) pattern, the line too.
    assert_eq!(
        error(r#"{"retry": ["(?x)\n a \n ("]}"#),
        "retry[0]: unclosed group at line 3, column 2"
    );
    let err = Rules::compile(&RuleSet::new().with_retry("(")).unwrap_err();
    assert!(matches!(
        err,
        RulesError::Pattern {
            list: List::Retry,
            index: 0,
            ..
        }
    ));
}

#[test]
fn too_large_is_an_error_not_an_out_of_memory() {
    // The file.
    let big = format!(r#"{{"retry": ["{}"]}}"#, "a".repeat(MAX_FILE_LEN));
    assert_eq!(
        error(&big),
        format!(
            "rules too large: the rules file has {} bytes, at most {MAX_FILE_LEN}",
            big.len()
        )
    );
    // Too many rules in a list.
    let many = format!(
        r#"{{"never": [{}]}}"#,
        vec![r#""x""#; MAX_RULES + 1].join(",")
    );
    assert_eq!(
        error(&many),
        format!(
            "never: {} patterns, at most {MAX_RULES} per list",
            MAX_RULES + 1
        )
    );
    let set = RuleSet {
        retry: vec!["x".into(); MAX_RULES + 1],
        never: Vec::new(),
    };
    assert!(matches!(
        Rules::compile(&set),
        Err(RulesError::TooManyRules { list: List::Retry, count }) if count == MAX_RULES + 1
    ));
    // An NFA over the limit.
    let err = error(r#"{"retry": ["x{1000}{1000}"]}"#);
    assert!(
        err.starts_with(&format!(
            "rules too large: the NFA would exceed the size limit of {SIZE_LIMIT} bytes"
        )),
        "{err}"
    );
    // A DFA over the limit: a small NFA whose DFA blows up.
    let err = error(r#"{"retry": ["[01]*1[01]{20}"]}"#);
    assert!(
        err.starts_with(&format!(
            "rules too large: the DFA would exceed the size limit of {SIZE_LIMIT} bytes"
        )),
        "{err}"
    );
    // Nesting.
    let deep = format!(
        "{}x{}",
        "(".repeat(NEST_LIMIT as usize + 1),
        ")".repeat(NEST_LIMIT as usize + 1)
    );
    let err = Rules::compile(&RuleSet::new().with_never(deep))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("never[0]: exceed the maximum number of nested parentheses"),
        "{err}"
    );
}
