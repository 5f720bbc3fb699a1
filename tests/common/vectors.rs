//! Replays vector files through the library API ([`Replayer`] over the real
//! machine) and compares every step: outputs, state and `refused` as JSON
//! values, and the key order of every emitted event against the expected
//! line's raw text.

use std::fs;
use std::path::Path;

use autoretry_testkit::replay::Replayer;
use autoretry_testkit::vector::VectorLine;
use serde_json::Value;

/// What one file gave.
#[derive(Debug, Default)]
pub struct FileResult {
    /// The file name.
    pub name: String,
    pub scenarios: usize,
    pub steps: usize,
    /// Events whose key order was checked.
    pub events: usize,
    /// One message per failed step.
    pub failures: Vec<String>,
}

/// The raw text of each `"event":{...}` object in `line`, in order.
pub fn raw_events(line: &str) -> Vec<&str> {
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

/// Replays every step of the file at `path`. A line that does not parse
/// panics (the vectors are well-formed); a step that differs is a failure.
pub fn replay_file(path: &Path) -> FileResult {
    let name = path.file_name().unwrap().to_string_lossy().into_owned();
    let text = fs::read_to_string(path).unwrap();
    let mut result = FileResult {
        name: name.clone(),
        ..FileResult::default()
    };
    let mut replayer = Replayer::new();
    let mut scenario = String::from("(none)");
    for (index, line) in text.split('\n').enumerate() {
        let at = format!("{name}:{} [{scenario}]", index + 1);
        let parsed = VectorLine::parse(line).unwrap_or_else(|e| panic!("{at}: {e}"));
        let input = match parsed {
            None => continue,
            Some(VectorLine::Scenario(header)) => {
                result.scenarios += 1;
                scenario = header.name.clone();
                replayer.start(&header);
                continue;
            }
            Some(VectorLine::Step(input)) => input,
        };
        result.steps += 1;
        let expected: Value = serde_json::from_str(line).unwrap();
        let step = replayer.step(&input);
        let want_out = expected["out"].as_array().expect("out").clone();
        let want_refused = expected.get("refused") == Some(&Value::Bool(true));
        // The budget's tokens after the step (spec §11.8), compared as the
        // numbers they are: thousandths divide exactly to the nearest f64.
        let got_budget = step.budget.map(|b| f64::from(b.tokens_milli()) / 1000.0);
        let want_budget = expected.get("budget").and_then(Value::as_f64);
        if step.out_values() != want_out
            || step.state_value() != expected["state"]
            || step.refused != want_refused
            || got_budget != want_budget
        {
            result.failures.push(format!(
                "{at}\n   in: {}\n want: out {} state {} refused {want_refused} budget {:?}\n  got: {}",
                expected["in"],
                Value::Array(want_out),
                expected["state"],
                want_budget,
                step.to_json_line()
            ));
            continue;
        }
        // Key order of the events, as raw text.
        let want_events = raw_events(line);
        let got_events: Vec<&str> = step.out.iter().flat_map(|o| raw_events(o)).collect();
        if got_events != want_events {
            result.failures.push(format!(
                "{at}: event key order\n want: {want_events:?}\n  got: {got_events:?}"
            ));
            continue;
        }
        result.events += got_events.len();
    }
    result
}

/// Replays every vector file of `dir` (relative to the crate) and checks
/// that every step passed and that at least `min` (files, scenarios,
/// steps) ran: more is fine, fewer means something was silently skipped.
pub fn replay_folder_passes(dir: &str, min: (usize, usize, usize)) {
    replay_files_pass(dir, &super::vector_files_in(dir), min);
}

/// [`replay_folder_passes`] on these files, `dir` naming them.
pub fn replay_files_pass(dir: &str, paths: &[std::path::PathBuf], min: (usize, usize, usize)) {
    let (mut scenarios, mut steps, mut events) = (0, 0, 0);
    let mut failures = Vec::new();
    for path in paths {
        let result = replay_file(path);
        scenarios += result.scenarios;
        steps += result.steps;
        events += result.events;
        failures.extend(result.failures);
    }
    let files = paths.len();
    println!("{dir}: {files} files, {scenarios} scenarios, {steps} steps, {events} events passed");
    assert!(
        failures.is_empty(),
        "{} of {steps} steps failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        files >= min.0 && scenarios >= min.1 && steps >= min.2,
        "too few vectors ran in {dir}: {files} files, {scenarios} scenarios, {steps} steps"
    );
}
