//! Your own rules through the `autoretry` binary: `rules compile`, and
//! `--rules FILE` (a rules JSON or a compiled blob) of `classify`, `rpc`
//! and `simulate`.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use autoretry::classify::Classifier;
use autoretry::rules::Rules;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_autoretry"))
}

fn run_stdin(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A bad `--rules FILE` ends the binary before it reads its input, which
    // closes the pipe: the write may then fail; its exit status tells.
    let _ = child.stdin.take().unwrap().write_all(stdin);
    child.wait_with_output().unwrap()
}

fn path(relative: &str) -> String {
    format!("{}/../{relative}", env!("CARGO_MANIFEST_DIR"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("rules");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

const TEXTS: &[&str] = &[
    "stream stalled",
    "upstream_error: try later",
    "503 billing: insufficient funds",
    "503 Service Unavailable",
    "tool error: bad input",
    "upstream_error: prompt is too long",
    "E_GATEWAY_504",
    "401 unauthorized",
    "",
];

fn classify_input() -> Vec<u8> {
    TEXTS
        .iter()
        .map(|t| format!("{}\n", serde_json::json!({ "text": t })))
        .collect::<String>()
        .into_bytes()
}

#[test]
fn classify_gives_the_same_verdicts_from_the_json_and_the_blob() {
    let input = classify_input();
    let json = run_stdin(
        &["classify", "--rules", &path("tests/rules/example.json")],
        &input,
    );
    let blob = run_stdin(
        &["classify", "--rules", &path("tests/rules/example.bin")],
        &input,
    );
    assert!(
        json.status.success(),
        "{}",
        String::from_utf8_lossy(&json.stderr)
    );
    assert!(
        blob.status.success(),
        "{}",
        String::from_utf8_lossy(&blob.stderr)
    );
    assert_eq!(json.stdout, blob.stdout);
    let dense = scratch("example.dense.bin");
    let out = bin()
        .args(["rules", "compile", &path("tests/rules/example.json"), "-o"])
        .arg(&dense)
        .args(["--kind", "dense"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let from_dense = run_stdin(&["classify", "--rules", dense.to_str().unwrap()], &input);
    assert_eq!(from_dense.stdout, json.stdout);

    // Each line: the classification with the verdict applied, and the verdict.
    let rules = Rules::load(include_bytes!("../../tests/rules/example.json")).unwrap();
    let lines: Vec<&str> = std::str::from_utf8(&json.stdout).unwrap().lines().collect();
    assert_eq!(lines.len(), TEXTS.len());
    for (text, line) in TEXTS.iter().zip(&lines) {
        let c = rules.classify_with(text, Classifier::Classic);
        let expected = format!(
            r#"{{"retryable":{},"overflow":{},"usageLimit":{},"hintMs":null,"verdict":{}}}"#,
            c.classification.retryable,
            c.classification.overflow,
            c.classification.usage_limit,
            c.verdict.map_or("null".to_owned(), |v| v.to_string())
        );
        assert_eq!(*line, expected, "{text:?}");
    }
    assert_eq!(
        lines[2],
        r#"{"retryable":false,"overflow":false,"usageLimit":false,"hintMs":null,"verdict":false}"#
    );
    assert_eq!(
        lines[0],
        r#"{"retryable":true,"overflow":false,"usageLimit":false,"hintMs":null,"verdict":true}"#
    );
    // Without --rules the lines have no verdict.
    let plain = run_stdin(&["classify"], &input);
    assert!(!String::from_utf8_lossy(&plain.stdout).contains("verdict"));
}

#[test]
fn rules_compile_writes_the_committed_example_blob() {
    let out_path = scratch("example.bin");
    let out = bin()
        .args(["rules", "compile", &path("tests/rules/example.json"), "-o"])
        .arg(&out_path)
        .output()
        .unwrap();
    assert!(out.status.success());
    let committed = std::fs::read(path("tests/rules/example.bin")).unwrap();
    assert_eq!(std::fs::read(&out_path).unwrap(), committed);
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(
        stderr.ends_with(&format!(
            ": 3 never and 4 retry rules, {} bytes (sparse, little-endian)\n",
            committed.len()
        )),
        "{stderr}"
    );
}

#[test]
fn a_bad_rules_file_is_a_clear_error_and_a_non_zero_exit() {
    let bad_json = scratch("bad.json");
    std::fs::write(&bad_json, r#"{"retry": ["ok", "(x"]}"#).unwrap();
    let unknown = scratch("unknown.json");
    std::fs::write(&unknown, r#"{"retry": [], "maybe": []}"#).unwrap();
    let blob = std::fs::read(path("tests/rules/example.bin")).unwrap();
    let truncated = scratch("truncated.bin");
    std::fs::write(&truncated, &blob[..blob.len() - 1]).unwrap();
    let missing = scratch("missing.json");
    let cases = [
        (&bad_json, "retry[1]: unclosed group at column 1".to_owned()),
        (&unknown, r#"rules file: unknown key "maybe""#.to_owned()),
        (
            &truncated,
            format!(
                "truncated rules blob: {} bytes, expected {}",
                blob.len() - 1,
                blob.len()
            ),
        ),
        (&missing, "cannot read".to_owned()),
    ];
    for (file, message) in &cases {
        let file = file.to_str().unwrap();
        for (command, stdin) in [
            (vec!["classify", "--rules", file], classify_input()),
            (vec!["rpc", "--rules", file], Vec::new()),
            (
                vec!["simulate-in-process", "--rules", file, "--time-scale", "0"],
                Vec::new(),
            ),
        ] {
            let out = run_stdin(&command, &stdin);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{command:?}: {stderr}");
            assert!(out.stdout.is_empty(), "{command:?}");
            assert!(
                stderr.starts_with(&format!("autoretry {}: --rules {file}: ", command[0]))
                    && stderr.contains(message.as_str()),
                "{command:?}: {stderr}"
            );
        }
        if file.ends_with(".json") {
            let out = bin()
                .args(["rules", "compile", file, "-o"])
                .arg(scratch("never-written.bin"))
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(message.as_str()), "{stderr}");
        }
    }
    assert!(!scratch("never-written.bin").exists());
}

#[test]
fn rpc_applies_the_verdict_to_agent_messages_without_their_own() {
    let lines = [
        // The classifier would retry a 503; a `never` rule forbids it.
        r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503 billing: insufficient funds"}}"#,
        // The agent's own verdict stays.
        r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503 billing: insufficient funds","shouldRetry":true}}"#,
        r#"{"type":"abort_retry"}"#,
        // The classifier would not retry this; a `retry` rule does.
        r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"stream stalled"}}"#,
    ];
    let input = lines.join("\n") + "\n";
    let out = run_stdin(
        &["rpc", "--rules", &path("tests/rules/example.bin")],
        input.as_bytes(),
    );
    assert!(out.status.success());
    let stdout = String::from_utf8(out.stdout).unwrap();
    let got: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        got,
        [
            r#"{"type":"action","action":"check_compaction"}"#,
            r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"503 billing: insufficient funds"}"#,
            r#"{"type":"action","action":"drop_trailing_error"}"#,
            r#"{"type":"action","action":"sleep","ms":2000}"#,
            r#"{"type":"response","command":"abort_retry","success":true}"#,
            r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
            r#"{"type":"action","action":"settled"}"#,
            r#"{"type":"action","action":"check_compaction"}"#,
            r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"stream stalled"}"#,
            r#"{"type":"action","action":"drop_trailing_error"}"#,
            r#"{"type":"action","action":"sleep","ms":2000}"#,
            // The end of input cancels the pending backoff.
            r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
            r#"{"type":"action","action":"settled"}"#,
            r#"{"type":"action","action":"check_compaction"}"#,
        ]
    );
}

#[test]
fn simulate_applies_the_verdict_to_the_failed_message() {
    let run = |error: &str, rules: Option<&str>| {
        let mut args = vec![
            "simulate-in-process",
            "--error",
            error,
            "--failures",
            "1",
            "--time-scale",
            "0",
            "--latency-ms",
            "0",
        ];
        if let Some(rules) = rules {
            args.extend(["--rules", rules]);
        }
        let out = run_stdin(&args, b"");
        (out.status.code(), String::from_utf8(out.stdout).unwrap())
    };
    let json = path("tests/rules/example.json");
    let (code, stdout) = run("stream stalled", Some(&json));
    assert_eq!(code, Some(0), "{stdout}");
    assert!(stdout.contains("rules: shouldRetry true\n"), "{stdout}");
    assert!(stdout.contains(r#"{"type":"auto_retry_end","success":true,"attempt":1}"#));
    assert_eq!(run("stream stalled", None).0, Some(1));
    let (code, stdout) = run("503 billing: insufficient funds", Some(&json));
    assert_eq!(code, Some(1));
    assert!(stdout.contains("rules: shouldRetry false\n"), "{stdout}");
    assert!(!stdout.contains("auto_retry_start"), "{stdout}");
    assert_eq!(run("503 billing: insufficient funds", None).0, Some(0));
}
