//! `autoretry simulate` in a pipe (no terminal: plain lines, no spinner),
//! with a tiny time scale.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn simulate(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_autoretry"))
        .arg("simulate-in-process")
        .args(["--time-scale", "0.001"])
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

fn lines(output: &Output) -> Vec<String> {
    String::from_utf8(output.stdout.clone())
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The JSON lines of the output, which are exactly the events.
fn events(lines: &[String]) -> Vec<Value> {
    lines
        .iter()
        .filter(|l| l.starts_with('{'))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_provider_recovers_within_the_retries() {
    let out = simulate(&["--failures", "2", "--error", "503 Service Unavailable"]);
    assert_eq!(out.status.code(), Some(0));
    let lines = lines(&out);
    assert!(
        !lines.concat().contains('\x1b'),
        "no terminal codes in a pipe"
    );
    let loaders: Vec<&String> = lines.iter().filter(|l| l.starts_with("Retrying")).collect();
    assert_eq!(
        loaders,
        [
            // The wall-clock seconds, and the backoff's own under the scale.
            "Retrying (1/3) in 0s\u{2026} (esc to cancel) [a 2s backoff at time scale 0.001]",
            "Retrying (2/3) in 0s\u{2026} (esc to cancel) [a 4s backoff at time scale 0.001]"
        ]
    );
    let events = events(&lines);
    assert_eq!(
        events,
        [
            serde_json::json!({"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"503 Service Unavailable"}),
            serde_json::json!({"type":"auto_retry_start","attempt":2,"maxAttempts":3,"delayMs":4000,"errorMessage":"503 Service Unavailable"}),
            serde_json::json!({"type":"auto_retry_end","success":true,"attempt":2}),
        ]
    );
    // Each event line is the stream's bytes, keys in spec order.
    assert!(lines.contains(&r#"{"type":"auto_retry_end","success":true,"attempt":2}"#.to_owned()));
    assert!(!lines.iter().any(|l| l.starts_with("Retry failed")));
}

#[test]
fn the_chain_fails_after_max_retries() {
    let out = simulate(&[
        "--failures",
        "10",
        "--max-retries",
        "2",
        "--base-delay-ms",
        "100",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out);
    let events = events(&lines);
    assert_eq!(events.len(), 3, "{lines:?}");
    assert_eq!(events[1]["delayMs"], 200);
    assert_eq!(
        events[2],
        serde_json::json!({"type":"auto_retry_end","success":false,"attempt":2,"finalError":"529 overloaded_error: Overloaded"})
    );
    let failure = lines.iter().position(|l| l.starts_with("Retry failed"));
    assert_eq!(
        lines[failure.expect("a failure line")],
        "Retry failed after 2 attempts: 529 overloaded_error: Overloaded"
    );
    assert!(lines.contains(
        &"Retrying (1/2) in 0s\u{2026} (esc to cancel) [a 0s backoff at time scale 0.001]"
            .to_owned()
    ));
}

#[test]
fn no_retries_means_no_loader() {
    let out = simulate(&["--failures", "1", "--max-retries", "0"]);
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out);
    assert!(
        !lines.iter().any(|l| l.starts_with("Retrying")),
        "{lines:?}"
    );
    assert!(lines
        .contains(&"Retry failed after 0 attempts: 529 overloaded_error: Overloaded".to_owned()));
}

#[test]
fn ctrl_c_cancels_the_retry_in_a_pipe() {
    // Real time: the backoff lasts long enough to be interrupted.
    let mut child = Command::new(env!("CARGO_BIN_EXE_autoretry"))
        .args([
            "simulate-in-process",
            "--latency-ms",
            "0",
            "--base-delay-ms",
            "60000",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut seen = Vec::new();
    loop {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "{seen:?}");
        let line = line.trim_end().to_owned();
        let loader = line.starts_with("Retrying (1/3) in 60s");
        seen.push(line);
        if loader {
            break;
        }
    }
    let status = Command::new("sh")
        .args(["-c", &format!("kill -INT {}", child.id())])
        .status()
        .unwrap();
    assert!(status.success());
    let rest: Vec<String> = stdout.lines().map(Result::unwrap).collect();
    assert_eq!(child.wait().unwrap().code(), Some(1));
    assert_eq!(
        rest[..3],
        [
            "^C: the retry is cancelled (abort_retry); Ctrl-C again aborts the agent",
            r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
            "Retry failed after 1 attempts: Retry cancelled",
        ]
    );
    assert!(
        !rest.iter().any(|l| l.contains("provider call 2")),
        "{rest:?}"
    );
}

#[test]
fn the_loader_shows_the_scaled_wait() {
    let out = Command::new(env!("CARGO_BIN_EXE_autoretry"))
        .args([
            "simulate-in-process",
            "--failures",
            "1",
            "--base-delay-ms",
            "60000",
        ])
        .args(["--latency-ms", "0", "--time-scale", "0.05"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let lines = lines(&out);
    assert!(
        lines.contains(
            &"Retrying (1/3) in 3s\u{2026} (esc to cancel) [a 60s backoff at time scale 0.05]"
                .to_owned()
        ),
        "{lines:?}"
    );
}

#[test]
fn bad_time_scales_are_refused() {
    for scale in ["-1", "NaN", "inf", "x"] {
        let out = Command::new(env!("CARGO_BIN_EXE_autoretry"))
            .args(["simulate-in-process", "--time-scale", scale])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{scale}");
    }
}

#[test]
fn a_hint_over_the_modern_ceiling_fails_fast() {
    let text = "usage_limit_reached retry-after-ms=11180000";
    let out = simulate(&["--profile", "modern", "--error", text]);
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out);
    let sentence = format!(
        "Provider requested 11180000ms wait, exceeds retry.maxDelayMs (300000ms). Original error: {text}"
    );
    assert_eq!(
        events(&lines),
        [
            serde_json::json!({"type":"auto_retry_end","success":false,"attempt":0,"finalError":sentence})
        ]
    );
    assert!(
        lines.contains(&format!("Retry failed after 0 attempts: {sentence}")),
        "{lines:?}"
    );
    assert!(
        !lines.iter().any(|l| l.starts_with("Retrying")),
        "{lines:?}"
    );
}

#[test]
fn the_same_seed_gives_the_same_jittered_delays() {
    let run = |seed: &str| {
        let out = simulate(&["--profile", "modern", "--failures", "3", "--seed", seed]);
        assert_eq!(out.status.code(), Some(0));
        events(&lines(&out))
            .iter()
            .filter_map(|e| e.get("delayMs").and_then(Value::as_u64))
            .collect::<Vec<_>>()
    };
    let delays = run("42");
    assert_eq!(delays, [408, 961, 1861]);
    assert_eq!(run("42"), delays);
    let other = run("7");
    assert_ne!(other, delays);
    // Each lies in (backoff * 0.75, backoff] for the backoffs 500, 1000, 2000.
    for (delay, backoff) in other.iter().zip([500u64, 1000, 2000]) {
        assert!(*delay * 4 > backoff * 3 && *delay <= backoff, "{other:?}");
    }
}

#[test]
fn options_override_the_profile_and_bad_values_exit_2() {
    let out = simulate(&[
        "--profile",
        "modern",
        "--jitter-pct",
        "0",
        "--failures",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let events = events(&lines(&out));
    assert_eq!(events[0]["delayMs"], 500, "{events:?}");
    for (flag, value) in [
        ("--jitter-pct", "101"),
        ("--profile", "fast"),
        ("--classifier", "regex"),
        ("--honor-hints", "yes"),
    ] {
        let out = simulate(&[flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(flag), "{flag}: {stderr}");
    }
}

#[test]
fn a_call_cut_off_after_text_is_continued() {
    let out = simulate(&["--failures", "1", "--partial", "text"]);
    assert_eq!(out.status.code(), Some(0));
    let lines = lines(&out);
    assert!(lines
        .iter()
        .any(|l| l.contains("failed after streaming text")));
    let resumed = lines
        .iter()
        .position(|l| l == "agent: continuing the partial turn");
    let call = lines.iter().position(|l| l == "agent: provider call 2");
    assert!(resumed.is_some() && resumed < call, "{lines:?}");
}

#[test]
fn a_call_that_ran_a_tool_is_never_replayed() {
    let out = simulate(&["--failures", "1", "--partial", "tools"]);
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out);
    assert!(events(&lines).is_empty(), "no chain opens");
    // No event says why: the simulation does, before it gives up.
    let why = lines.iter().position(|l| {
        l.starts_with("agent: not retried: the turn had streamed a tool call")
            && l.contains("partial tools, spec §11.2")
    });
    let done = lines
        .iter()
        .position(|l| l.starts_with("done: the agent gave up"));
    assert!(why.is_some() && why < done, "{lines:?}");
}

#[test]
fn an_error_not_to_retry_says_so() {
    let out = simulate(&["--error", "400 invalid_request_error"]);
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out);
    assert!(
        lines.contains(&"agent: not retried: the error is not one to retry (spec §3)".to_owned()),
        "{lines:?}"
    );
}

#[test]
fn fallback_models_without_model_fallback_exit_2() {
    for args in [
        &["--fallback-models", "1"][..],
        &["--fallback-models", "2", "--model-fallback", "false"],
    ] {
        let out = simulate(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("needs --model-fallback true"),
            "{args:?}: {stderr}"
        );
        assert!(out.stdout.is_empty(), "{args:?}: nothing ran");
    }
}

#[test]
fn a_spent_chain_switches_to_a_fallback_model_while_one_is_left() {
    let out = simulate(&[
        "--failures",
        "3",
        "--max-retries",
        "1",
        "--model-fallback",
        "true",
        "--fallback-models",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let lines = lines(&out);
    assert!(lines.contains(&"agent: switch_model (exhausted): now on fallback model 1".to_owned()));
    assert!(lines.contains(&"agent: switch_model (exhausted): no fallback model left".to_owned()));
    let events = events(&lines);
    // The first model's retry, the fallback model's retry at 0 ms, the end.
    assert_eq!(events.len(), 3, "{events:?}");
    assert_eq!(events[1]["delayMs"], 0);
    assert_eq!(events[2]["attempt"], 1);
}
