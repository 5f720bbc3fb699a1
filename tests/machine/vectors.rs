//! Every conformance vector, every step, through the library API
//! ([`Replayer`] over the real [`autoretry::Machine`]): outputs, state and
//! `refused` compare as JSON values; the key order of every emitted event is
//! checked against the expected line's raw text.
#![cfg(feature = "json")]

use crate::common;

use std::fs;

use autoretry_testkit::replay::Replayer;
use autoretry_testkit::vector::VectorLine;
use serde_json::Value;

/// The raw text of each `"event":{...}` object in `line`, in order.
fn raw_events(line: &str) -> Vec<&str> {
    let mut events = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("\"event\":{") {
        let start = at + "\"event\":".len();
        let body = &rest[start..];
        // Events are flat objects; braces inside strings are skipped.
        let (mut in_string, mut escaped, mut end) = (false, false, None);
        for (i, c) in body.char_indices() {
            match (in_string, escaped, c) {
                (true, true, _) => escaped = false,
                (true, false, '\\') => escaped = true,
                (true, false, '"') => in_string = false,
                (false, _, '"') => in_string = true,
                (false, _, '}') => {
                    end = Some(i + 1);
                    break;
                }
                _ => {}
            }
        }
        let end = end.expect("unterminated event");
        events.push(&body[..end]);
        rest = &body[end..];
    }
    events
}

#[test]
fn every_vector_step_passes() {
    let paths = common::vector_files();
    let (mut files, mut scenarios, mut steps, mut events) = (0, 0, 0, 0);
    let mut failures = Vec::new();
    for path in &paths {
        files += 1;
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(path).unwrap();
        let mut replayer = Replayer::new();
        let mut scenario = String::from("(none)");
        for (index, line) in text.split('\n').enumerate() {
            let at = format!("{name}:{} [{scenario}]", index + 1);
            let parsed = VectorLine::parse(line).unwrap_or_else(|e| panic!("{at}: {e}"));
            match parsed {
                None => continue,
                Some(VectorLine::Scenario(header)) => {
                    scenarios += 1;
                    scenario = header.name.clone();
                    replayer.start(&header);
                    continue;
                }
                Some(VectorLine::Step(input)) => {
                    steps += 1;
                    let expected: Value = serde_json::from_str(line).unwrap();
                    let step = replayer.step(&input);
                    let want_out = expected["out"].as_array().expect("out").clone();
                    let want_refused = expected.get("refused") == Some(&Value::Bool(true));
                    let got_out = step.out_values();
                    if got_out != want_out
                        || step.state_value() != expected["state"]
                        || step.refused != want_refused
                    {
                        failures.push(format!(
                            "{at}\n   in: {}\n want: out {} state {} refused {want_refused}\n  got: {}",
                            expected["in"],
                            Value::Array(want_out),
                            expected["state"],
                            step.to_json_line()
                        ));
                        continue;
                    }
                    // Key order of the events, as raw text.
                    let want_events = raw_events(line);
                    let got_events: Vec<&str> =
                        step.out.iter().flat_map(|o| raw_events(o)).collect();
                    assert_eq!(got_events, want_events, "{at}: event key order");
                    events += got_events.len();
                }
            }
        }
    }
    println!(
        "vectors: {files} files, {scenarios} scenarios, {steps} steps, {events} events passed"
    );
    assert!(
        failures.is_empty(),
        "{} of {steps} steps failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The shared set at the time of writing: 26 files, 26 scenarios, 118
    // steps. More is fine; fewer means something was silently skipped.
    assert!(
        files >= 26 && scenarios >= 26 && steps >= 118,
        "too few vectors ran: {files} files, {scenarios} scenarios, {steps} steps"
    );
}

#[test]
fn raw_event_extraction() {
    let line = r#"{"out":[{"type":"emit","event":{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"a}\"b"}}]}"#;
    assert_eq!(
        raw_events(line),
        [r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"a}\"b"}"#]
    );
}
