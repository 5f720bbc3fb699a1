//! The `autoretry` binary: `replay` on every vector file, `classify` on the
//! corpus, `headers` on the header cases, and the error paths.

use std::fs;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::Value;

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
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

/// The repository root (this package is `cli/` in it).
fn root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
}

/// The vendored vector files of one folder of the root package
/// (`tests/vectors`, `tests/vectors/options`, `tests/vectors/beyond`,
/// `tests/vectors/stream`),
/// sorted by name.
fn vector_files(folder: &str) -> Vec<PathBuf> {
    let mut paths: Vec<_> = fs::read_dir(root().join(folder))
        .expect(folder)
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    paths
}

#[test]
fn replay_every_vector_file() {
    let (files, steps) = replay_folder("tests/vectors");
    println!("cli replay: {files} files, {steps} steps");
    assert!(files >= 26 && steps >= 118, "{files} files, {steps} steps");
}

#[test]
fn replay_every_beyond_vector_file() {
    let (files, steps) = replay_folder("tests/vectors/beyond");
    println!("cli replay, beyond: {files} files, {steps} steps");
    assert!(files >= 14 && steps >= 66, "{files} files, {steps} steps");
}

#[test]
fn replay_every_stream_vector_file() {
    let (files, steps) = replay_folder("tests/vectors/stream");
    println!("cli replay, stream: {files} files, {steps} steps");
    assert!(files >= 17 && steps >= 120, "{files} files, {steps} steps");
}

#[test]
fn replay_every_option_vector_file() {
    let (files, steps) = replay_folder("tests/vectors/options");
    println!("cli replay, options: {files} files, {steps} steps");
    assert!(files >= 16 && steps >= 126, "{files} files, {steps} steps");
}

/// The response vectors of spec 13: the headers (`headers-*.jsonl`), the
/// `agent_end` clock and the curated classifier (`curated-*.jsonl`).
#[test]
fn replay_every_response_vector_file() {
    let paths: Vec<PathBuf> = vector_files("tests/vectors/response");
    let curated = paths
        .iter()
        .filter(|p| p.to_string_lossy().contains("/curated-"))
        .count();
    let (files, steps) = replay_files(&paths);
    println!("cli replay, response: {files} files, {steps} steps");
    assert!(curated >= 7, "{curated} curated files");
    assert!(files >= 14 && steps >= 70, "{files} files, {steps} steps");
}

/// Every case of `tests/corpus/headers.jsonl` through `autoretry headers`,
/// exactly: one answer line per case, in the corpus's key order.
#[test]
fn headers_the_corpus() {
    let path = root().join("tests/corpus/headers.jsonl");
    let output = bin().arg("headers").arg(&path).output().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let got: Vec<&str> = stdout.lines().collect();
    let text = fs::read_to_string(&path).unwrap();
    let cases: Vec<Value> = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(cases.len(), 43);
    assert_eq!(got.len(), cases.len(), "one answer per case");
    for (i, (got, case)) in got.iter().zip(&cases).enumerate() {
        let want = format!(
            r#"{{"shouldRetry":{},"retryAfterMs":{}}}"#,
            case["shouldRetry"], case["retryAfterMs"]
        );
        assert_eq!(*got, want, "case {}", i + 1);
    }
}

#[test]
fn headers_bad_lines_name_the_line_and_fail() {
    let input = concat!(
        "{\"headers\":[[\"retry-after\",\"5\"]],\"nowMs\":null}\n",
        "{\"headers\":{\"retry-after\":\"5\"}}\n",
        "\n",
        "{\"headers\":[[\"a\",1]]}\n",
        "{\"headers\":[],\"nowMs\":1.5}\n",
        "{\"nowMs\":1}\n",
        "not json\n",
        "{\"headers\":[[\"x-should-retry\",\"true\"]]}\n",
    );
    let output = run_stdin(&["headers"], input.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        "{\"shouldRetry\":null,\"retryAfterMs\":5000}\n{\"shouldRetry\":true,\"retryAfterMs\":null}\n"
    );
    let stderr = String::from_utf8(output.stderr).unwrap();
    let lines: Vec<&str> = stderr.lines().collect();
    assert_eq!(lines.len(), 5, "{stderr}");
    assert!(
        lines[0].starts_with("line 2: headers: expected a list of [name, value] pairs"),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with("line 4: headers[0]: expected a [name, value] pair"),
        "{stderr}"
    );
    assert!(
        lines[2].starts_with("line 5: nowMs: expected a non-negative integer"),
        "{stderr}"
    );
    assert!(lines[3].starts_with("line 6: headers: missing"), "{stderr}");
    assert!(lines[4].starts_with("line 7: "), "{stderr}");
}

/// Replays each vector file of `folder` through `autoretry replay` and
/// checks every step's line; returns the files and steps checked.
fn replay_folder(folder: &str) -> (usize, usize) {
    replay_files(&vector_files(folder))
}

/// [`replay_folder`] on these files.
fn replay_files(paths: &[PathBuf]) -> (usize, usize) {
    let (mut files, mut steps) = (0, 0);
    for path in paths {
        let output = bin().arg("replay").arg(path).output().unwrap();
        let name = path.display();
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let stdout = String::from_utf8(output.stdout).unwrap();
        let got: Vec<&str> = stdout.lines().collect();
        let text = fs::read_to_string(path).unwrap();
        let want: Vec<Value> = text
            .split('\n')
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|v| v.get("scenario").is_none())
            .collect();
        assert_eq!(got.len(), want.len(), "{name}: one output line per step");
        for (i, (got_line, want)) in got.iter().zip(&want).enumerate() {
            let got: Value = serde_json::from_str(got_line).unwrap();
            assert_eq!(got["out"], want["out"], "{name} step {}", i + 1);
            assert_eq!(got["state"], want["state"], "{name} step {}", i + 1);
            let refused = want.get("refused") == Some(&Value::Bool(true));
            assert_eq!(
                got.get("refused").is_some(),
                refused,
                "{name} step {}",
                i + 1
            );
            if refused {
                assert_eq!(got["refused"], Value::Bool(true));
            }
            // The budget's tokens after the step, when the scenario has one
            // (spec §11.8), as numbers.
            assert_eq!(
                got.get("budget").and_then(Value::as_f64),
                want.get("budget").and_then(Value::as_f64),
                "{name} step {}",
                i + 1
            );
            // The keys in order: out, state, refused when refused, then the
            // budget when there is one.
            assert!(got_line.starts_with(r#"{"out":["#));
            let unbudgeted = match got_line.rfind(r#","budget":"#) {
                Some(at) => format!("{}}}", &got_line[..at]),
                None => got_line.to_string(),
            };
            assert_eq!(
                unbudgeted.ends_with(r#","refused":true}"#),
                refused,
                "{name} step {}",
                i + 1
            );
            steps += 1;
        }
        files += 1;
    }
    (files, steps)
}

#[test]
fn classify_the_corpus() {
    let rows = classify_corpus("tests/corpus/errors.jsonl", &[]);
    assert!(rows >= 126, "corpus rows: {rows}");
}

#[test]
fn classify_the_extended_corpus() {
    let rows = classify_corpus(
        "tests/corpus/extended/errors.jsonl",
        &["--classifier", "extended"],
    );
    assert!(rows >= 195, "corpus rows: {rows}");
}

#[test]
fn classify_the_curated_corpus() {
    let rows = classify_corpus(
        "tests/corpus/curated/errors.jsonl",
        &["--classifier", "curated"],
    );
    assert!(rows >= 1000, "corpus rows: {rows}");
}

#[test]
fn classify_refuses_an_unknown_classifier() {
    let output = bin()
        .args(["classify", "--classifier", "strict"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("expected classic, extended or curated"),
        "{stderr}"
    );
}

/// Runs `autoretry classify ARGS` on a corpus file and checks every line
/// against its labels; returns the number of rows.
fn classify_corpus(file: &str, args: &[&str]) -> usize {
    let path = root().join(file);
    let output = bin()
        .arg("classify")
        .args(args)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    let rows: Vec<&str> = text.split('\n').filter(|l| !l.is_empty()).collect();
    let got: Vec<&str> = stdout.split('\n').filter(|l| !l.is_empty()).collect();
    assert_eq!(got.len(), rows.len());
    let mut failures = Vec::new();
    for (row, line) in rows.iter().zip(&got) {
        let want: Value = serde_json::from_str(row).unwrap();
        let expected = format!(
            r#"{{"retryable":{},"overflow":{},"usageLimit":{},"hintMs":{}}}"#,
            want["retryable"], want["overflow"], want["usageLimit"], want["hintMs"]
        );
        if *line != expected {
            failures.push(format!(
                "{}\n  want {expected}\n   got {line}",
                want["text"]
            ));
        }
    }
    println!(
        "cli classify {file}: {} of {} corpus rows passed",
        rows.len() - failures.len(),
        rows.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    rows.len()
}

#[test]
fn stdin_blank_lines_and_expectations_ignored() {
    let input = concat!(
        "{\"scenario\":\"s\",\"settings\":{\"baseDelayMs\":1},\"host\":{}}\n",
        "\n",
        "   \n",
        "{\"in\":{\"type\":\"agent_end\",\"message\":{\"role\":\"assistant\",\"stopReason\":\"error\",\"errorMessage\":\"503\u{2028}x\"}},\"out\":[\"bogus\"],\"state\":{}}\n",
        "{\"in\":{\"type\":\"settings\",\"settings\":{\"maxRetries\":-0}},\"refused\":false}\n",
        "{\"in\":{\"type\":\"timer_fired\",\"timer\":9}}",
    );
    let output = run_stdin(&["replay"], input.as_bytes());
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = stdout.split('\n').collect();
    assert_eq!(
        lines,
        [
            "{\"out\":[{\"type\":\"emit\",\"event\":{\"type\":\"auto_retry_start\",\"attempt\":1,\"maxAttempts\":3,\"delayMs\":1,\"errorMessage\":\"503\u{2028}x\"}},{\"type\":\"drop_trailing_error\"},{\"type\":\"sleep\",\"ms\":1,\"timer\":1}],\"state\":{\"autoRetryEnabled\":true,\"isRetrying\":true,\"retryAttempt\":1}}",
            r#"{"out":[],"state":{"autoRetryEnabled":true,"isRetrying":true,"retryAttempt":1},"refused":true}"#,
            r#"{"out":[],"state":{"autoRetryEnabled":true,"isRetrying":true,"retryAttempt":1}}"#,
            "",
        ]
    );
}

#[test]
fn malformed_line_names_the_line_and_fails() {
    let input = concat!(
        "{\"scenario\":\"s\",\"settings\":{},\"host\":{}}\n",
        "{\"in\":{\"type\":\"abort_retry\"}}\n",
        "\n",
        "{\"in\":{\"type\":\"agent_end\",\"message\":{\"stopReason\":\"oops\"}}}\n",
        "{\"in\":{\"type\":\"abort_retry\"}}\n",
    );
    let output = run_stdin(&["replay"], input.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(
        stderr.starts_with("line 4: in.message.stopReason: expected one of"),
        "{stderr}"
    );
    // The bad line has its error; the lines around it have their answers.
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert_eq!(String::from_utf8(output.stdout).unwrap().lines().count(), 2);

    let cases: [(&[u8], &str); 7] = [
        (b"not json\n", "line 1: invalid JSON: "),
        (
            b"{\"in\":{\"type\":\"abort_retry\",\"type\":\"abort\"}}\n",
            "line 1: duplicate key \"type\" in in at line 1 column 43",
        ),
        (
            b"{\"scenario\":\"s\",\"settings\":{\"baseDelayMs\":-1,\"baseDelayMs\":5}}\n",
            "line 1: duplicate key \"baseDelayMs\" in settings",
        ),
        (
            b"{\"in\":{\"type\":\"reboot\"}}\n",
            "line 1: in.type: unknown input \"reboot\"",
        ),
        (b"{\"out\":[]}\n", "line 1: in: missing"),
        (
            b"{\"scenario\":\"s\",\"settings\":{\"maxRetries\":3.0}}\n",
            "line 1: retry.maxRetries: expected",
        ),
        (b"\n\xff\n", "line 2: invalid UTF-8"),
    ];
    for (input, want) in cases {
        let output = run_stdin(&["replay"], input);
        assert_eq!(output.status.code(), Some(1), "{want}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        assert!(stderr.starts_with(want), "{want}: {stderr}");
    }
}

/// A scenario's budget and `rpc --budget` read the same figures from their
/// digits with one parser: what one refuses, the other refuses with the
/// same words, and digits a binary float would round away are refused, not
/// rounded.
#[test]
fn a_scenario_budget_is_read_exactly_like_the_budget_flag() {
    for (max, ratio, tokens) in [
        ("4", "0.0010000000000000001", "4"),
        ("4", "1e-400", "4"),
        ("4", "0.5", "2.0000000001"),
        ("4", "0.5", "1e-400"),
        ("4.0000000000000001", "0.5", "4"),
        ("4", "0.0005", "4"),
        ("4", "0.5000", "2.5"),
        ("4", "1e-3", "0e-400"),
        ("4", "1000.000000000000000", "4"),
    ] {
        let case = format!("{max}:{ratio}:{tokens}");
        let want = autoretry::RetryBudget::parse(max, ratio, Some(tokens));
        let flag = run_stdin(&["rpc", "--budget", &case], b"");
        let line = format!(
            "{{\"scenario\":\"s\",\"budget\":{{\"maxTokens\":{max},\"tokenRatio\":{ratio},\"tokens\":{tokens}}}}}\n\
             {{\"in\":{{\"type\":\"abort\"}}}}\n"
        );
        let replay = run_stdin(&["replay"], line.as_bytes());
        let (flag_err, replay_err) = (
            String::from_utf8_lossy(&flag.stderr),
            String::from_utf8_lossy(&replay.stderr),
        );
        match want {
            Ok(_) => {
                assert_eq!(flag.status.code(), Some(0), "{case}: {flag_err}");
                assert_eq!(replay.status.code(), Some(0), "{case}: {replay_err}");
            }
            Err(e) => {
                assert_eq!(flag.status.code(), Some(2), "{case}: {flag_err}");
                assert!(flag_err.contains(&e.to_string()), "{case}: {flag_err}");
                assert_eq!(replay.status.code(), Some(1), "{case}: {replay_err}");
                assert_eq!(replay_err, format!("line 1: budget.{e}\n"), "{case}");
            }
        }
    }
}

#[test]
fn replay_goes_on_after_each_malformed_line() {
    let input = concat!(
        "{\"in\":{\"type\":\"abort\",\"type\":\"abort\"}}\n",
        "{\"in\":{\"type\":\"abort_retry\"}}\n",
        "{\"in\":{\"type\":\"timer_fired\",\"timer\":null}}\n",
        "{\"in\":{\"type\":\"abort_retry\"}}\n",
    );
    let output = run_stdin(&["replay"], input.as_bytes());
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        concat!(
            "line 1: duplicate key \"type\" in in at line 1 column 37\n",
            "line 3: in.timer: expected a non-negative integer, found null\n",
        )
    );
    assert_eq!(String::from_utf8(output.stdout).unwrap().lines().count(), 2);
}

#[test]
fn null_in_an_optional_message_field_is_absent() {
    let input = concat!(
        "{\"in\":{\"type\":\"agent_end\",\"nowMs\":null,\"message\":{\"stopReason\":\"error\",",
        "\"errorMessage\":null,\"usage\":null,\"shouldRetry\":null,\"retryAfterMs\":null}}}\n",
        "{\"in\":{\"type\":\"agent_end\",\"message\":{\"stopReason\":\"error\",\"errorMessage\":\"503\",",
        "\"usage\":{\"input\":null}}}}\n",
    );
    let output = run_stdin(&["replay"], input.as_bytes());
    assert!(output.status.success(), "{output:?}");
    let out = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<&str> = out.lines().collect();
    // An error with no text is not retried; a 503 is.
    assert_eq!(
        lines[0],
        r#"{"out":[{"type":"check_compaction"}],"state":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#
    );
    assert!(
        lines[1].starts_with(r#"{"out":[{"type":"emit","event":{"type":"auto_retry_start""#),
        "{}",
        lines[1]
    );
}

/// Writes one line to a child's stdin and reads its answer before writing
/// the next: the command answers each line before it reads on. A command
/// that read its whole input first would never answer (the child is
/// killed after a minute and the test fails).
fn answers_line_by_line(args: &[&str], lines: &[&str]) -> Vec<String> {
    use std::io::{BufRead, BufReader};
    use std::sync::mpsc;
    use std::time::Duration;
    let mut child = bin()
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines() {
            if tx.send(line.unwrap()).is_err() {
                return;
            }
        }
    });
    let mut answers = Vec::new();
    for line in lines {
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(answer) => answers.push(answer),
            Err(_) => {
                let _ = child.kill();
                panic!("no answer to {line} before the next line");
            }
        }
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    answers
}

#[test]
fn replay_and_classify_stream() {
    let answers = answers_line_by_line(
        &["replay"],
        &[
            r#"{"in":{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}}"#,
            r#"{"in":{"type":"abort_retry"}}"#,
        ],
    );
    assert!(answers[0].contains(r#""retryAttempt":1"#), "{answers:?}");
    assert!(answers[1].contains(r#""retryAttempt":0"#), "{answers:?}");
    let answers = answers_line_by_line(
        &["classify"],
        &[
            r#"{"text":"503 Service Unavailable"}"#,
            r#"{"text":"prompt is too long"}"#,
        ],
    );
    assert!(
        answers[0].starts_with(r#"{"retryable":true"#),
        "{answers:?}"
    );
    assert!(
        answers[1].starts_with(r#"{"retryable":false,"overflow":true"#),
        "{answers:?}"
    );
}

#[test]
fn classify_lines() {
    let input = "{\"text\":\"503 Service Unavailable\"}\n\n{\"text\":\"prompt is too long\"}\n";
    let output = run_stdin(&["classify"], input.as_bytes());
    assert!(output.status.success());
    assert_eq!(
        String::from_utf8(output.stdout).unwrap(),
        concat!(
            "{\"retryable\":true,\"overflow\":false,\"usageLimit\":false,\"hintMs\":null}\n",
            "{\"retryable\":false,\"overflow\":true,\"usageLimit\":false,\"hintMs\":null}\n",
        )
    );
    let output = run_stdin(
        &["classify"],
        b"{\"text\":\"x\"}\n{\"txt\":\"y\"}\n{\"text\":\"a\",\"text\":\"b\"}\n{\"text\":\"z\"}\n",
    );
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        String::from_utf8(output.stderr).unwrap(),
        "line 2: text: missing (expected a string)\nline 3: duplicate key \"text\" at line 1 column 23\n"
    );
    assert_eq!(String::from_utf8(output.stdout).unwrap().lines().count(), 2);
    let missing = bin()
        .args(["classify", "/nonexistent/file.jsonl"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(1));
}

/// Every `js` and `python` example of `docs/guide/headers.md` runs (node,
/// python3), and `autoretry headers` answers the line it prints with the
/// answer its `→` comment shows.
#[test]
fn the_headers_guide_examples_read_as_shown() {
    let guide = fs::read_to_string(root().join("docs/guide/headers.md")).unwrap();
    let mut ran = 0;
    for (lang, program, comment) in [("js", "node", "// → "), ("python", "python3", "# → ")] {
        let fence = format!("```{lang}\n");
        for block in guide.split(&fence).skip(1) {
            let code = block.split("```").next().unwrap();
            let want = code
                .lines()
                .find_map(|l| l.strip_prefix(comment))
                .unwrap_or_else(|| panic!("a {lang} example without its {comment:?} line"));
            let mut child = Command::new(program)
                .arg(if lang == "js" {
                    "--input-type=module"
                } else {
                    "-"
                })
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .unwrap_or_else(|e| panic!("{program}: {e}"));
            child
                .stdin
                .take()
                .unwrap()
                .write_all(code.as_bytes())
                .unwrap();
            let printed = child.wait_with_output().unwrap();
            assert!(printed.status.success(), "the {lang} example failed");
            let answer = run_stdin(&["headers"], &printed.stdout);
            assert!(
                answer.status.success(),
                "{}",
                String::from_utf8_lossy(&answer.stderr)
            );
            assert_eq!(
                String::from_utf8(answer.stdout).unwrap().trim_end(),
                want,
                "{lang}"
            );
            ran += 1;
        }
    }
    assert_eq!(ran, 2, "one js and one python example");
}
