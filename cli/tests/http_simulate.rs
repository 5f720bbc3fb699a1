//! `autoretry simulate`: the agent over real HTTP against the local
//! provider, its closing table, and its recorded trace replayed through
//! `autoretry replay` to exactly the outputs the agent saw.

use std::io::Write;
use std::process::{Command, Stdio};

use serde_json::Value;

fn autoretry(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_autoretry"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn simulate_prints_a_line_per_request_and_the_table() {
    let output = autoretry(&[
        "simulate",
        "--wire",
        "openai",
        "--plan",
        "overloaded,fallback",
        "--time-scale",
        "0.05",
    ]);
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.starts_with("provider on http://127.0.0.1:"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  #1 openai gpt-4o key key-primary"),
        "{stdout}"
    );
    assert!(
        stdout.contains("    <- 503 The engine is currently overloaded"),
        "{stdout}"
    );
    assert!(
        stdout.contains("switch_model: switched to gpt-4o-mini"),
        "{stdout}"
    );
    let table: Vec<&str> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("| case"))
        .collect();
    assert_eq!(table.len(), 7, "{stdout}");
    assert!(table[2].starts_with("| overloaded "), "{}", table[2]);
    assert!(table[2].contains("500 ms (backoff)"), "{}", table[2]);
    assert!(
        table[3].contains("answered by gpt-4o-mini on request 5"),
        "{}",
        table[3]
    );
}

#[test]
fn the_recorded_trace_replays_to_the_outputs_the_agent_saw() {
    let dir = std::env::temp_dir().join(format!("autoretry-http-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("trace.jsonl");
    let file_arg = file.to_str().unwrap();
    let output = autoretry(&[
        "simulate",
        "--plan",
        "rate-limited,server-errors,reset-after-tool,quota,fallback",
        "--time-scale",
        "0.05",
        "--record",
        file_arg,
    ]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let recorded = std::fs::read_to_string(&file).unwrap();
    let steps: Vec<Value> = recorded
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap())
        .filter(|line| line.get("in").is_some())
        .collect();
    assert_eq!(
        recorded
            .lines()
            .filter(|l| l.contains("\"scenario\""))
            .count(),
        5
    );
    let mut replay = Command::new(env!("CARGO_BIN_EXE_autoretry"))
        .arg("replay")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    replay
        .stdin
        .take()
        .unwrap()
        .write_all(recorded.as_bytes())
        .unwrap();
    let replayed = replay.wait_with_output().unwrap();
    assert!(replayed.status.success());
    let replayed: Vec<Value> = String::from_utf8(replayed.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(replayed.len(), steps.len());
    for (seen, replayed) in steps.iter().zip(&replayed) {
        assert_eq!(replayed["out"], seen["out"], "{seen}");
        assert_eq!(replayed["state"], seen["state"], "{seen}");
        assert_eq!(replayed.get("refused"), seen.get("refused"), "{seen}");
    }
    // The trace holds the hand-offs and their answers.
    for needle in [
        "\"mark_usage_limit\"",
        "\"usage_limit_marked\"",
        "\"switch_model\"",
        "\"model_switched\"",
    ] {
        assert!(recorded.contains(needle), "{needle} missing");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unknown_case_or_wire_is_refused() {
    let output = autoretry(&["simulate", "--plan", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("no case \"nope\""));
    let output = autoretry(&["simulate", "--wire", "grpc"]);
    assert_eq!(output.status.code(), Some(2));
}
