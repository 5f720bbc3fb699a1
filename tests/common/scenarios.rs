//! The vector files as scenarios (header and steps), for the tests that
//! drive a host or a restored machine step by step.

use std::fs;

use autoretry::wire::json::InputLine;
use autoretry_testkit::vector::{ScenarioHeader, VectorLine};
use serde_json::Value;

/// The folders of vectors a host replays, each with the fewest steps it
/// holds: those of sections 1–9, those of the policy options of section
/// 10, those of the stream of section 12 and those of the response of
/// section 13 (headers and the curated classifier).
pub const FOLDERS: [(&str, usize); 4] = [
    ("tests/vectors", 118),
    ("tests/vectors/options", 126),
    ("tests/vectors/stream", 120),
    ("tests/vectors/response", 92),
];

/// One scenario of a vector file: its header and its steps (input, the
/// whole expected line, place).
pub struct Scenario {
    pub header: ScenarioHeader,
    pub steps: Vec<(InputLine, Value, String)>,
}

/// Every scenario of the vector files in `folder`.
pub fn scenarios(folder: &str) -> Vec<Scenario> {
    let mut all = Vec::new();
    for path in &super::vector_files_in(folder) {
        let file = path.file_name().unwrap().to_string_lossy().into_owned();
        let text = fs::read_to_string(path).unwrap();
        for (index, line) in text.split('\n').enumerate() {
            let at = format!("{file}:{}", index + 1);
            match VectorLine::parse(line).unwrap() {
                None => {}
                Some(VectorLine::Scenario(header)) => all.push(Scenario {
                    header,
                    steps: Vec::new(),
                }),
                Some(VectorLine::Step(input)) => {
                    let scenario: &mut Scenario = all.last_mut().expect("a scenario line first");
                    scenario
                        .steps
                        .push((input, serde_json::from_str(line).unwrap(), at));
                }
            }
        }
    }
    all
}

/// Whether the expected line says the input is refused.
pub fn refused(want: &Value) -> bool {
    want.get("refused") == Some(&Value::Bool(true))
}
