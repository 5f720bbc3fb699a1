//! `autoretry rpc`, driven as a client would: lines in on stdin, lines out
//! on stdout, the sidecar owning the timers.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use serde_json::{json, Value};

/// Generous: only a bound for a line that must come, never a timing claim.
const PATIENCE: Duration = Duration::from_secs(20);

struct Client {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Client {
    fn start(args: &[&str]) -> Client {
        let mut child = Command::new(env!("CARGO_BIN_EXE_autoretry"))
            .arg("rpc")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                if tx.send(line.unwrap()).is_err() {
                    return;
                }
            }
        });
        Client {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
    }

    fn send_json(&mut self, value: Value) {
        self.send(&value.to_string());
    }

    /// The next line, as text.
    fn next_text(&mut self) -> String {
        self.lines
            .recv_timeout(PATIENCE)
            .expect("the sidecar wrote a line")
    }

    fn next(&mut self) -> Value {
        let line = self.next_text();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"))
    }

    /// The next `n` lines, as text.
    fn take(&mut self, n: usize) -> Vec<String> {
        (0..n).map(|_| self.next_text()).collect()
    }

    /// Closes stdin, then returns every remaining line and checks exit 0.
    fn finish(mut self) -> Vec<String> {
        drop(self.stdin.take());
        let rest: Vec<String> = self.lines.iter().collect();
        let status = self.child.wait().unwrap();
        assert!(status.success(), "{status}");
        rest
    }
}

fn failed(text: &str) -> Value {
    json!({"type": "agent_end", "message": {"role": "assistant", "stopReason": "error", "errorMessage": text}})
}

fn answered() -> Value {
    json!({"type": "agent_end", "message": {"role": "assistant", "stopReason": "stop"}})
}

fn action(name: &str) -> String {
    format!(r#"{{"type":"action","action":"{name}"}}"#)
}

#[test]
fn a_full_chain_that_succeeds() {
    let mut c = Client::start(&["--settings", r#"{"baseDelayMs":20}"#]);
    c.send_json(failed("529 overloaded_error"));
    assert_eq!(
        c.take(3),
        [
            r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":20,"errorMessage":"529 overloaded_error"}"#,
            &action("drop_trailing_error"),
            r#"{"type":"action","action":"sleep","ms":20}"#,
        ]
    );
    // The sidecar's timer fires on its own.
    assert_eq!(c.next_text(), action("continue_agent"));
    c.send_json(json!({"type": "message_end", "message": {"stopReason": "toolUse"}}));
    assert_eq!(
        c.next_text(),
        r#"{"type":"auto_retry_end","success":true,"attempt":1}"#
    );
    c.send_json(answered());
    assert_eq!(c.take(2), [action("settled"), action("check_compaction")]);
    c.send(r#"{"type":"get_retry_state","id":"q"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":"q","type":"response","command":"get_retry_state","success":true,"data":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#
    );
    assert!(c.finish().is_empty());
}

#[test]
fn a_full_chain_that_runs_out_of_retries() {
    let mut c = Client::start(&["--settings", r#"{"baseDelayMs":5,"maxRetries":3}"#]);
    c.send_json(failed("503 Service Unavailable"));
    for (attempt, delay) in [(1, 5), (2, 10), (3, 20)] {
        let start = c.next();
        assert_eq!(start["type"], "auto_retry_start");
        assert_eq!(
            (start["attempt"].clone(), start["delayMs"].clone()),
            (json!(attempt), json!(delay))
        );
        assert_eq!(c.take(3)[2], action("continue_agent"));
        c.send_json(failed("503 Service Unavailable"));
    }
    assert_eq!(
        c.take(3),
        [
            r#"{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"503 Service Unavailable"}"#,
            &action("settled"),
            &action("check_compaction"),
        ]
    );
    assert!(c.finish().is_empty());
}

#[test]
fn abort_retry_during_the_backoff_cancels_the_timer() {
    let mut c = Client::start(&["--settings", r#"{"baseDelayMs":60000}"#]);
    c.send_json(failed("overloaded"));
    let _ = c.take(3);
    c.send(r#"{"type":"get_retry_state","id":"s"}"#);
    assert_eq!(
        c.next()["data"],
        json!({"autoRetryEnabled": true, "isRetrying": true, "retryAttempt": 1})
    );
    // The agent must not run now.
    c.send_json(answered());
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"agent_end","success":false,"error":"the agent must not run while a retry backoff is pending","code":"agent_run_during_backoff","line":3}"#
    );
    c.send(r#"{"type":"abort_retry","id":"a"}"#);
    assert_eq!(
        c.take(4),
        [
            r#"{"id":"a","type":"response","command":"abort_retry","success":true}"#,
            r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
            &action("settled"),
            &action("check_compaction"),
        ]
    );
    // A second cancel has nothing to cancel.
    c.send(r#"{"type":"abort_retry"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"abort_retry","success":true}"#
    );
    let rest = c.finish();
    assert!(rest.is_empty(), "{rest:?}");
}

#[test]
fn a_cancel_racing_a_short_timer_never_continues_after_it() {
    for _ in 0..10 {
        let mut c = Client::start(&["--settings", r#"{"baseDelayMs":1}"#]);
        c.send_json(failed("overloaded"));
        c.send(r#"{"type":"abort_retry","id":"a"}"#);
        let rest = c.finish();
        let cancelled = rest
            .iter()
            .position(|l| l.contains(r#""command":"abort_retry""#))
            .expect("the response");
        let continues: Vec<usize> = rest
            .iter()
            .enumerate()
            .filter(|(_, l)| **l == action("continue_agent"))
            .map(|(i, _)| i)
            .collect();
        assert!(continues.len() <= 1, "{rest:?}");
        assert!(continues.iter().all(|&i| i < cancelled), "{rest:?}");
        assert_eq!(
            rest.iter().filter(|l| l.contains("auto_retry_end")).count(),
            1,
            "{rest:?}"
        );
    }
}

#[test]
fn the_global_abort_ends_the_chain_and_aborts_the_agent() {
    let mut c = Client::start(&["--settings", r#"{"baseDelayMs":60000}"#]);
    c.send(r#"{"type":"abort","id":"g0"}"#);
    assert_eq!(
        c.take(2),
        [
            r#"{"id":"g0","type":"response","command":"abort","success":true}"#,
            &action("abort_agent"),
        ]
    );
    c.send_json(failed("rate limit exceeded"));
    let _ = c.take(3);
    c.send(r#"{"type":"abort","id":"g1"}"#);
    assert_eq!(
        c.take(5),
        [
            r#"{"id":"g1","type":"response","command":"abort","success":true}"#,
            r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
            &action("settled"),
            &action("check_compaction"),
            &action("abort_agent"),
        ]
    );
    assert!(c.finish().is_empty());
}

#[test]
fn parse_errors_and_unknown_commands_keep_the_sidecar_serving() {
    let mut c = Client::start(&[]);
    c.send("not json");
    let parse = c.next_text();
    assert!(
        parse.starts_with(
            r#"{"type":"response","command":"parse","success":false,"error":"invalid JSON: "#
        ),
        "{parse}"
    );
    c.send("[1,2]");
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"parse","success":false,"error":"expected a JSON object, found an array","code":"not_an_object","line":2}"#
    );
    c.send(r#"{"id":"p"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":"p","type":"response","command":"parse","success":false,"error":"type: missing (expected a string)","code":"invalid_field","line":3}"#
    );
    c.send(r#"{"type":"reboot","id":"u"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":"u","type":"response","command":"reboot","success":false,"error":"Unknown command: reboot","code":"unknown_command","line":4}"#
    );
    c.send(r#"{"type":"timer_fired","timer":1}"#);
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"timer_fired","success":false,"error":"Unknown command: timer_fired","code":"unknown_command","line":5}"#
    );
    c.send(r#"{"type":"set_auto_retry","enabled":"yes","id":"b"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":"b","type":"response","command":"set_auto_retry","success":false,"error":"enabled: expected a boolean, found a string \"yes\"","code":"invalid_field","line":6}"#
    );
    c.send(r#"{"type":"agent_end","message":{"stopReason":"error","usage":{"input":-1}}}"#);
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"agent_end","success":false,"error":"message.usage.input: expected a non-negative integer that fits u64, found -1","code":"invalid_field","line":7}"#
    );
    c.send("");
    c.send(r#"{"type":"get_retry_state","id":"still"}"#);
    assert!(c.next_text().starts_with(
        r#"{"id":"still","type":"response","command":"get_retry_state","success":true"#
    ));
    assert!(c.finish().is_empty());
}

/// JSON-RPC habit: numeric ids, echoed as the same number text; an
/// unknown command with one still answers `unknown_command`, naming the
/// nearest known type (the agent events among them) when it is close.
#[test]
fn numeric_ids_echo_and_unknown_types_name_the_nearest() {
    let mut c = Client::start(&[]);
    c.send(r#"{"type":"get_retry_state","id":7}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":7,"type":"response","command":"get_retry_state","success":true,"data":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#
    );
    c.send(r#"{"type":"set_auto_retry","enabled":false,"id":1.50}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":1.50,"type":"response","command":"set_auto_retry","success":true}"#
    );
    c.send(r#"{"type":"reboot","id":8}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":8,"type":"response","command":"reboot","success":false,"error":"Unknown command: reboot","code":"unknown_command","line":3}"#
    );
    c.send(r#"{"type":"abort_rety","id":9}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":9,"type":"response","command":"abort_rety","success":false,"error":"Unknown command: abort_rety","code":"unknown_command","line":4,"didYouMean":"abort_retry"}"#
    );
    c.send(r#"{"type":"agentEnd","message":{"stopReason":"stop"}}"#);
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"agentEnd","success":false,"error":"Unknown command: agentEnd","code":"unknown_command","line":5,"didYouMean":"agent_end"}"#
    );
    c.send(r#"{"type":"abort_retry","id":null}"#);
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"abort_retry","success":false,"error":"id: expected a string or a number, found null","code":"invalid_field","line":6}"#
    );
}

#[test]
fn settings_changes_apply_from_the_next_decision() {
    let mut c = Client::start(&[]);
    c.send(r#"{"type":"set_retry_settings","settings":{"maxRetries":-1},"id":"bad"}"#);
    let bad = c.next_text();
    assert!(
        bad.starts_with(r#"{"id":"bad","type":"response","command":"set_retry_settings","success":false,"error":"retry.maxRetries: "#),
        "{bad}"
    );
    c.send(r#"{"type":"set_retry_settings","id":"s"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":"s","type":"response","command":"set_retry_settings","success":false,"error":"settings: missing (expected an object)","code":"invalid_field","line":2}"#
    );
    c.send(r#"{"type":"set_retry_settings","settings":{"maxRetries":0},"id":"s0"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":"s0","type":"response","command":"set_retry_settings","success":true,"data":{"enabled":true,"maxRetries":0,"baseDelayMs":2000}}"#
    );
    c.send_json(failed("overloaded"));
    assert_eq!(
        c.take(3),
        [
            r#"{"type":"auto_retry_end","success":false,"attempt":0,"finalError":"overloaded"}"#,
            &action("settled"),
            &action("check_compaction"),
        ]
    );
    c.send(r#"{"type":"set_auto_retry","enabled":false,"id":"off"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"id":"off","type":"response","command":"set_auto_retry","success":true}"#
    );
    c.send(
        r#"{"type":"set_retry_settings","settings":{"enabled":false,"maxRetries":5},"id":"s1"}"#,
    );
    assert_eq!(
        c.next()["data"],
        json!({"enabled": false, "maxRetries": 5, "baseDelayMs": 2000})
    );
    c.send_json(failed("overloaded"));
    assert_eq!(c.next_text(), action("check_compaction"));
    c.send(r#"{"type":"get_retry_state"}"#);
    assert_eq!(
        c.next()["data"],
        json!({"autoRetryEnabled": false, "isRetrying": false, "retryAttempt": 0})
    );
    assert!(c.finish().is_empty());
}

#[test]
fn end_of_input_during_a_backoff_cancels_the_chain_and_exits_0() {
    let mut c = Client::start(&["--settings", r#"{"baseDelayMs":5000}"#]);
    c.send_json(failed("overloaded"));
    let rest = c.finish();
    assert_eq!(
        rest[2..],
        [
            r#"{"type":"action","action":"sleep","ms":5000}"#,
            // Reported as an abort_retry would end it, not dropped.
            r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
            &action("settled"),
            &action("check_compaction"),
        ]
    );
    // With no chain open, nothing is written.
    let mut c = Client::start(&[]);
    c.send_json(answered());
    assert_eq!(c.finish(), [action("check_compaction")]);
}

#[test]
fn end_of_input_while_the_continued_run_is_in_flight_ends_the_chain() {
    let mut c = Client::start(&["--settings", r#"{"baseDelayMs":0}"#]);
    c.send_json(failed("overloaded"));
    assert_eq!(c.take(4)[3], action("continue_agent"));
    assert_eq!(
        c.finish(),
        [
            r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
            &action("settled"),
        ]
    );
}

#[test]
fn usage_limits_go_through_the_credential_store() {
    let mut c = Client::start(&[
        "--credential-store",
        "--settings",
        r#"{"baseDelayMs":60000}"#,
    ]);
    c.send_json(json!({"type": "agent_end", "nowMs": 0,
        "message": {"stopReason": "error", "errorMessage": "usage_limit_reached, x-ratelimit-reset: 30"}}));
    assert_eq!(
        c.next_text(),
        r#"{"type":"action","action":"mark_usage_limit","retryAfterMs":30000}"#
    );
    c.send_json(answered());
    assert!(c.next_text().contains("usage_limit_marked) is awaited"));
    // Switched: no backoff, the agent continues at once.
    c.send(r#"{"type":"usage_limit_marked","switched":true}"#);
    assert_eq!(
        c.take(4),
        [
            r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":0,"errorMessage":"usage_limit_reached, x-ratelimit-reset: 30"}"#,
            &action("drop_trailing_error"),
            r#"{"type":"action","action":"sleep","ms":0}"#,
            &action("continue_agent"),
        ]
    );
    c.send_json(answered());
    assert_eq!(
        c.take(3)[0],
        r#"{"type":"auto_retry_end","success":true,"attempt":1}"#
    );
    assert!(c.finish().is_empty());
}

#[test]
fn the_context_window_routes_overflow_to_compaction() {
    let mut c = Client::start(&["--context-window", "1000"]);
    c.send_json(json!({"type": "agent_end",
        "message": {"stopReason": "error", "errorMessage": "503", "usage": {"input": 900, "cacheRead": 200}}}));
    assert_eq!(c.next_text(), action("check_compaction"));
    assert!(c.finish().is_empty());
}

#[test]
fn bad_options_exit_2() {
    let out = Command::new(env!("CARGO_BIN_EXE_autoretry"))
        .args(["rpc", "--settings", r#"{"maxRetries":1.5}"#])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--settings: retry.maxRetries"), "{stderr}");
}

#[test]
fn the_modern_profile_and_the_seed_jitter_the_backoff() {
    // Modern: 500 ms base, jitter up to 25 %; the SplitMix64 draw of seed 42
    // takes 92 ms off the first backoff (the vector jitter-seeded.jsonl
    // shows the same draw on a 2000 ms backoff: 1630).
    let mut c = Client::start(&["--settings", r#"{"profile":"modern"}"#, "--seed", "42"]);
    c.send_json(failed("503 Service Unavailable"));
    assert_eq!(
        c.take(3),
        [
            r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":10,"delayMs":408,"errorMessage":"503 Service Unavailable"}"#,
            &action("drop_trailing_error"),
            r#"{"type":"action","action":"sleep","ms":408}"#,
        ]
    );
    c.send(r#"{"type":"abort_retry"}"#);
    assert_eq!(
        c.take(4)[1],
        r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#
    );
    assert!(c.finish().is_empty());
}

#[test]
fn a_hint_over_the_ceiling_fails_fast() {
    let mut c = Client::start(&["--settings", r#"{"profile":"modern"}"#]);
    c.send_json(failed("429 Too Many Requests, retry-after-ms: 11180000"));
    assert_eq!(
        c.take(3),
        [
            r#"{"type":"auto_retry_end","success":false,"attempt":0,"finalError":"Provider requested 11180000ms wait, exceeds retry.maxDelayMs (300000ms). Original error: 429 Too Many Requests, retry-after-ms: 11180000"}"#,
            &action("settled"),
            &action("check_compaction"),
        ]
    );
    assert!(c.finish().is_empty());
}

#[test]
fn the_hosts_own_verdict_and_wait_travel_in_agent_events() {
    let mut c = Client::start(&["--settings", r#"{"honorHints":true}"#]);
    // shouldRetry false: a 503 the host knows must not be repeated.
    c.send_json(json!({"type": "agent_end",
        "message": {"stopReason": "error", "errorMessage": "503", "shouldRetry": false}}));
    assert_eq!(c.next_text(), action("check_compaction"));
    // shouldRetry true on a text no pattern knows, with the host's wait.
    c.send_json(json!({"type": "agent_end",
        "message": {"stopReason": "error", "errorMessage": "gateway hiccup", "shouldRetry": true, "retryAfterMs": 7000}}));
    assert_eq!(
        c.take(3)[0],
        r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":7000,"errorMessage":"gateway hiccup"}"#
    );
    c.send_json(json!({"type": "agent_end",
        "message": {"stopReason": "error", "errorMessage": "x", "shouldRetry": "yes"}}));
    let refused = c.next_text();
    assert!(
        refused.starts_with(r#"{"type":"response","command":"agent_end","success":false,"error":"#)
            && refused.contains("shouldRetry"),
        "{refused}"
    );
    // The end of input cancels the pending backoff.
    assert_eq!(c.finish().len(), 3);
}

#[test]
fn option_settings_are_validated_by_key() {
    let mut c = Client::start(&[]);
    for (settings, key) in [
        (r#"{"jitterPct":101}"#, "retry.jitterPct"),
        (r#"{"profile":"fast"}"#, "retry.profile"),
        (r#"{"classifier":null}"#, "retry.classifier"),
        (r#"{"maxDelayMs":1e3}"#, "retry.maxDelayMs"),
    ] {
        c.send(&format!(
            r#"{{"type":"set_retry_settings","settings":{settings},"id":"s"}}"#
        ));
        let answer = c.next_text();
        assert!(
            answer.starts_with(&format!(
                r#"{{"id":"s","type":"response","command":"set_retry_settings","success":false,"error":"{key}: "#
            )),
            "{settings}: {answer}"
        );
    }
    c.send(r#"{"type":"get_retry_state"}"#);
    assert_eq!(
        c.next()["data"],
        json!({"autoRetryEnabled": true, "isRetrying": false, "retryAttempt": 0})
    );
    assert!(c.finish().is_empty());
}

#[test]
fn duplicate_keys_are_refused_on_every_path() {
    let out = Command::new(env!("CARGO_BIN_EXE_autoretry"))
        .args(["rpc", "--settings", r#"{"baseDelayMs":-1,"baseDelayMs":5}"#])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(r#"--settings: duplicate key "baseDelayMs""#),
        "{stderr}"
    );
    let mut c = Client::start(&[]);
    c.send(r#"{"type":"abort_retry","type":"abort","id":"x"}"#);
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"parse","success":false,"error":"duplicate key \"type\" at line 1 column 36","code":"duplicate_key","line":1}"#
    );
    // Nothing ran: no abort_agent.
    c.send(r#"{"type":"get_retry_state","id":"q"}"#);
    assert!(c.next_text().starts_with(r#"{"id":"q","#));
    assert!(c.finish().is_empty());
}

#[test]
fn null_in_an_optional_message_field_is_absent() {
    let mut c = Client::start(&[]);
    c.send(r#"{"type":"agent_end","nowMs":null,"message":{"stopReason":"error","errorMessage":"503","usage":null,"shouldRetry":null,"retryAfterMs":null}}"#);
    assert!(c.next_text().starts_with(r#"{"type":"auto_retry_start""#));
    assert_eq!(c.finish().len(), 5);
}

#[test]
fn a_line_over_the_limit_is_answered_and_skipped() {
    let mut c = Client::start(&["--max-line-bytes", "100"]);
    c.send(&format!(
        r#"{{"type":"get_retry_state","id":"{}"}}"#,
        "x".repeat(200)
    ));
    assert_eq!(
        c.next_text(),
        r#"{"type":"response","command":"parse","success":false,"error":"line too long: 234 bytes, the limit is 100","code":"line_too_long","line":1}"#
    );
    c.send(r#"{"type":"get_retry_state","id":"q"}"#);
    assert!(c.next_text().starts_with(r#"{"id":"q","#));
    // The default limit is 1 MiB: a 2 MiB line is refused too.
    let mut c = Client::start(&[]);
    c.send(&format!(
        r#"{{"type":"abort","id":"{}"}}"#,
        "x".repeat(2 << 20)
    ));
    assert!(c.next_text().contains(r#""code":"line_too_long""#));
    c.send(r#"{"type":"abort","id":"a"}"#);
    assert!(c.next_text().starts_with(r#"{"id":"a","#));
    c.finish();
}

#[test]
fn the_time_scale_shortens_the_waits_and_is_validated() {
    let mut c = Client::start(&[
        "--time-scale",
        "0.001",
        "--settings",
        r#"{"baseDelayMs":60000}"#,
    ]);
    c.send_json(failed("503"));
    // The lines keep the unscaled figures; the wait is 60 ms.
    assert_eq!(
        c.take(3)[2],
        r#"{"type":"action","action":"sleep","ms":60000}"#
    );
    assert_eq!(c.next_text(), action("continue_agent"));
    c.finish();
    for bad in ["0", "-1", "inf", "NaN", "x"] {
        let out = Command::new(env!("CARGO_BIN_EXE_autoretry"))
            .args(["rpc", "--time-scale", bad])
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{bad}");
    }
}

/// Polls `get_retry_state` as fast as the pipe allows after a backoff of
/// `base_delay_ms`; returns how many polls were answered between the
/// `sleep` and the `continue_agent`, and the time from the `sleep` to the
/// `continue_agent`.
fn poll_through_a_backoff(base_delay_ms: u64) -> (usize, Duration) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Instant;
    let settings = format!(r#"{{"baseDelayMs":{base_delay_ms}}}"#);
    let mut c = Client::start(&["--settings", &settings]);
    let mut stdin = c.stdin.take().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let stopped = stop.clone();
    let writer = thread::spawn(move || {
        writeln!(stdin, "{}", failed("503")).unwrap();
        let poll = b"{\"type\":\"get_retry_state\"}\n".repeat(64);
        // At most about 2 M polls: the old sidecar answered them all first.
        for _ in 0..32_768 {
            if stopped.load(Ordering::Relaxed) || stdin.write_all(&poll).is_err() {
                break;
            }
        }
    });
    let _ = c.take(2);
    assert!(c.next_text().contains(r#""sleep""#));
    let slept = Instant::now();
    let mut polls = 0;
    let waited = loop {
        let line = c.next_text();
        if line == action("continue_agent") {
            break slept.elapsed();
        }
        assert!(line.contains("get_retry_state"), "{line}");
        polls += 1;
    };
    stop.store(true, Ordering::Relaxed);
    writer.join().unwrap();
    let rest = c.finish();
    assert!(rest.iter().all(|l| !l.contains("continue_agent")));
    (polls, waited)
}

#[test]
fn a_due_timer_fires_ahead_of_polls_that_came_after_it() {
    // After a 0 ms backoff only the polls already read ahead (the bounded
    // queue) are answered first.
    let (polls, waited) = poll_through_a_backoff(0);
    eprintln!("0 ms backoff: continue_agent after {polls} polls, {waited:?}");
    assert!(
        polls <= autoretry::host::sidecar::READ_AHEAD_LINES + 1,
        "{polls} polls"
    );
    // After 100 ms the polls of those 100 ms go first, then the continue.
    let (polls, waited) = poll_through_a_backoff(100);
    eprintln!("100 ms backoff: continue_agent after {polls} polls, {waited:?}");
}

// ---------------------------------------------------------------------------
// Spec section 11 through the sidecar
// ---------------------------------------------------------------------------

#[test]
fn a_partial_turn_is_continued_and_a_spent_chain_asks_for_another_model() {
    let settings = r#"{"maxRetries":1,"baseDelayMs":10,"modelFallback":true}"#;
    let mut c = Client::start(&["--settings", settings, "--time-scale", "0.01"]);
    let cut = json!({"type": "agent_end", "message": {"stopReason": "error", "errorMessage": "503", "partial": "text"}});
    c.send_json(cut);
    // A continuation: no drop_trailing_error, and continue_agent resumes.
    let lines = c.take(3);
    assert!(lines[0].contains(r#""type":"auto_retry_start","attempt":1"#));
    assert_eq!(lines[1], r#"{"type":"action","action":"sleep","ms":10}"#);
    assert_eq!(
        lines[2],
        r#"{"type":"action","action":"continue_agent","resume":true}"#
    );
    // A replay now: spent, so the sidecar asks for another model.
    c.send_json(failed("503"));
    assert_eq!(
        c.next_text(),
        r#"{"type":"action","action":"switch_model","reason":"exhausted"}"#
    );
    // The agent must not run meanwhile.
    c.send_json(failed("503"));
    assert_eq!(c.next()["code"], "awaiting_model_switch_answer");
    c.send(r#"{"type":"model_switched","switched":true}"#);
    let lines = c.take(4);
    assert!(lines[0].contains(r#""attempt":1,"maxAttempts":1,"delayMs":0,"errorMessage":"503""#));
    assert_eq!(lines[1], action("drop_trailing_error"));
    assert_eq!(lines[3], action("continue_agent"));
    c.send_json(answered());
    assert_eq!(c.take(3)[2], action("check_compaction"));
    assert!(c.finish().is_empty());
}

#[test]
fn a_bad_budget_flag_or_store_is_a_clear_error() {
    for (args, says) in [
        (
            &["--budget", "0:0.1"][..],
            "maxTokens: expected an integer from 1 to 1000",
        ),
        (&["--budget", "10:0.0005"][..], "tokenRatio"),
        (
            &["--budget", "10"][..],
            "expected MAX:RATIO or MAX:RATIO:TOKENS",
        ),
        (
            &["--budget", "4:1:5"][..],
            "tokens: expected a number from 0 to maxTokens",
        ),
        (&["--budget-store", "redis://127.0.0.1:1/"][..], "--budget"),
        (
            &[
                "--budget",
                "4:1",
                "--budget-store",
                "redis://127.0.0.1:1/",
                "--budget-store-timeout-ms",
                "0",
            ][..],
            "--budget-store-timeout-ms",
        ),
        (
            &["--budget", "4:1", "--budget-store", "redis://127.0.0.1:1/"][..],
            "--budget-store retry budget store: redis://127.0.0.1:1/",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_autoretry"))
            .arg("rpc")
            .args(args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(says), "{args:?}: {stderr}");
    }
}

/// The scenario both budget tests play: two sidecars, one budget of 4
/// tokens refilled 0.5 per good run. The first failure costs a token (4 →
/// 3) and retries; the second, in the other sidecar, costs one more (3 →
/// 2), which is at most half: throttled.
fn two_sidecars_throttle_together(args: &[&str]) {
    let mut first = Client::start(args);
    let mut second = Client::start(args);
    first.send_json(failed("529 overloaded_error"));
    assert!(first
        .next_text()
        .contains(r#""type":"auto_retry_start","attempt":1"#));
    second.send_json(failed("529 overloaded_error"));
    assert_eq!(
        second.next()["finalError"],
        "Retry throttled by the shared retry budget. Original error: 529 overloaded_error"
    );
    assert_eq!(
        second.take(2),
        [action("settled"), action("check_compaction")]
    );
    // Three good runs refill 1.5 (2 → 3.5): the next failure (3.5 → 2.5)
    // retries again.
    for _ in 0..3 {
        second.send_json(answered());
        assert_eq!(second.next_text(), action("check_compaction"));
    }
    second.send_json(failed("529 overloaded_error"));
    assert!(second
        .next_text()
        .contains(r#""type":"auto_retry_start","attempt":1"#));
    drop(first);
    drop(second);
}

impl Drop for Client {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn two_sidecars_share_a_budget_in_redis() {
    let Some(url) = redis_url() else { return };
    let key = format!("autoretry:test:{}", std::process::id());
    two_sidecars_throttle_together(&[
        "--budget",
        "4:0.5",
        "--budget-store",
        &url,
        "--budget-key",
        &key,
    ]);
    // The store holds what the two decided: 4 − 1 − 1 + 3 × 0.5 − 1.
    let mut redis = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let tokens: u32 = redis::cmd("HGET")
        .arg(&key)
        .arg("tokens_milli")
        .query(&mut redis)
        .unwrap();
    assert_eq!(tokens, 2500);

    // A store that fails mid-run (here: a value that is no budget) is
    // reported, the decision is made without the budget, and the sidecar
    // keeps serving.
    let mut c = Client::start(&[
        "--budget",
        "4:0.5",
        "--budget-store",
        &url,
        "--budget-key",
        &key,
    ]);
    // Once it answers, it has connected (and checked the key).
    c.send(r#"{"type":"get_retry_state","id":"up"}"#);
    assert_eq!(c.next()["id"], "up");
    redis::cmd("HSET")
        .arg(&key)
        .arg("tokens_milli")
        .arg("not tokens")
        .query::<()>(&mut redis)
        .unwrap();
    c.send_json(failed("529 overloaded_error"));
    let report = c.next();
    assert_eq!(report["type"], "budget_store_error");
    assert!(report["error"]
        .as_str()
        .unwrap()
        .contains("holds tokens_milli \"not tokens\""));
    assert!(c
        .next_text()
        .contains(r#""type":"auto_retry_start","attempt":1"#));
    assert_eq!(c.take(2)[0], action("drop_trailing_error"));
    c.send(r#"{"type":"get_retry_state","id":"q"}"#);
    assert_eq!(c.next()["data"]["retryAttempt"], 1);
    let _: () = redis::cmd("DEL").arg(&key).query(&mut redis).unwrap();
}

#[test]
fn two_sidecars_in_one_process_share_a_budget() {
    use autoretry::host::sidecar::Sidecar;
    use autoretry::{Machine, RetryBudget};
    use std::sync::{Arc, Mutex};

    let budget = Arc::new(Mutex::new(RetryBudget::parse("4", "0.5", None).unwrap()));
    let mut first = Sidecar::new(Machine::default(), Vec::new()).with_budget(budget.clone());
    let mut second = Sidecar::new(Machine::default(), Vec::new()).with_budget(budget.clone());
    let now = Duration::ZERO;
    let fail = failed("529 overloaded_error").to_string();
    first.feed_line(fail.as_bytes(), now).unwrap();
    second.feed_line(fail.as_bytes(), now).unwrap();
    assert!(first.machine().is_retrying());
    assert!(!second.machine().is_retrying(), "throttled");
    let good = answered().to_string();
    for _ in 0..3 {
        second.feed_line(good.as_bytes(), now).unwrap();
    }
    second.feed_line(fail.as_bytes(), now).unwrap();
    assert!(second.machine().is_retrying());
    assert_eq!(budget.lock().unwrap().tokens_milli(), 2500);
    let out = String::from_utf8(second.into_inner()).unwrap();
    assert!(out.starts_with(
        r#"{"type":"auto_retry_end","success":false,"attempt":0,"finalError":"Retry throttled"#
    ));
}

/// The Redis server of `AUTORETRY_TEST_REDIS` (`.ci/run` starts one on the
/// loopback). Without it the Redis test is skipped with a note, except
/// under CI, where a missing server fails it.
fn redis_url() -> Option<String> {
    match std::env::var("AUTORETRY_TEST_REDIS") {
        Ok(url) => Some(url),
        Err(_) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI runs the Redis test: set AUTORETRY_TEST_REDIS (.ci/run starts the server)"
            );
            println!("note: AUTORETRY_TEST_REDIS is not set; the Redis budget test is skipped");
            None
        }
    }
}

/// Spec §13.1 through the sidecar: a message's `headers` set the wait
/// under `honorHints`, and a message whose `headers` are not a list of
/// string pairs, or an `agent_end` whose `nowMs` is not a u64, is refused
/// naming the field while the sidecar keeps serving.
#[test]
fn headers_travel_through_the_sidecar() {
    let mut c = Client::start(&["--settings", r#"{"baseDelayMs":5,"honorHints":true}"#]);
    c.send(r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"x","headers":{"retry-after":"1"}},"id":"h"}"#);
    let refused = c.next();
    assert_eq!(refused["success"], json!(false), "{refused}");
    assert!(
        refused["error"]
            .as_str()
            .unwrap()
            .starts_with("message.headers: "),
        "{refused}"
    );
    c.send(r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"x"},"nowMs":-1,"id":"n"}"#);
    let refused = c.next();
    assert_eq!(refused["success"], json!(false), "{refused}");
    assert!(
        refused["error"].as_str().unwrap().starts_with("nowMs: "),
        "{refused}"
    );
    c.send_json(json!({"type": "agent_end", "message": {
        "stopReason": "error", "errorMessage": "503 Service Unavailable",
        "headers": [["Retry-After-Ms", "30"], ["x-request-id", "abc"]]}}));
    assert_eq!(
        c.take(3),
        [
            r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":30,"errorMessage":"503 Service Unavailable"}"#,
            &action("drop_trailing_error"),
            r#"{"type":"action","action":"sleep","ms":30}"#,
        ]
    );
    assert_eq!(c.next_text(), action("continue_agent"));
    c.send_json(answered());
    assert_eq!(
        c.take(3),
        [
            r#"{"type":"auto_retry_end","success":true,"attempt":1}"#.to_string(),
            action("settled"),
            action("check_compaction")
        ]
    );
    assert!(c.finish().is_empty());
}
