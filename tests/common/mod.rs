//! Shorthands shared by the scenario tests.
#![allow(dead_code)]

#[cfg(feature = "json")]
pub mod vectors;

#[cfg(feature = "json")]
pub mod scenarios;

pub mod texts;

use std::path::PathBuf;

use proptest::test_runner::{Config, FileFailurePersistence};

use autoretry::{AssistantMessage, Event, FinalError, Input, Machine, Output, StopReason, TimerId};

pub fn fail(text: &str) -> Input<'_> {
    Input::AgentEnd {
        message: AssistantMessage::error(text),
        now_ms: None,
    }
}

pub fn end(reason: StopReason) -> Input<'static> {
    Input::AgentEnd {
        message: AssistantMessage::new(reason),
        now_ms: None,
    }
}

pub fn message(reason: StopReason) -> Input<'static> {
    Input::MessageEnd {
        message: AssistantMessage::new(reason),
    }
}

pub fn fired(timer: TimerId) -> Input<'static> {
    Input::TimerFired { timer }
}

pub fn start(attempt: u32, max_attempts: u32, delay_ms: u64, text: &str) -> Output<'_> {
    Output::Emit(Event::Start {
        attempt,
        max_attempts,
        delay_ms,
        error_message: autoretry::ErrorText::Text(text),
    })
}

pub fn ended(success: bool, attempt: u32, final_error: Option<&str>) -> Output<'_> {
    Output::Emit(Event::End {
        success,
        attempt,
        final_error: final_error.map(FinalError::Text),
    })
}

/// Handles an input that must be accepted, returning its outputs as a Vec.
pub fn ok<'a>(m: &mut Machine, input: Input<'a>) -> Vec<Output<'a>> {
    match m.handle(input) {
        Ok(out) => out.into_iter().collect(),
        Err(refused) => panic!("refused {input:?}: {refused}"),
    }
}

/// The timer of the `sleep` among the outputs.
pub fn timer_of(out: &[Output<'_>]) -> TimerId {
    out.iter()
        .find_map(|o| match o {
            Output::Sleep { timer, .. } => Some(*timer),
            _ => None,
        })
        .expect("a sleep output")
}

/// The vendored vector files of sections 1–9, sorted by name.
pub fn vector_files() -> Vec<PathBuf> {
    vector_files_in("tests/vectors")
}

/// The vendored vector files of `dir` (relative to the crate), sorted by name.
pub fn vector_files_in(dir: &str) -> Vec<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(dir);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .collect();
    paths.sort();
    paths
}

/// The vectors of `tests/vectors/response/` (spec section 13): the
/// response headers (`headers-*.jsonl`), the `agent_end` clock
/// (`agent-end-now-refused.jsonl`) and the curated classifier of 13.2
/// (`curated-*.jsonl`).
pub fn response_vector_files() -> Vec<PathBuf> {
    vector_files_in("tests/vectors/response")
}

/// The settings of every property test here: proptest's own (the number of
/// cases from `PROPTEST_CASES`, 256 unless set), with failing cases saved to
/// and replayed from `file`, a path under the one `proptest-regressions/`
/// folder at the root (tests run there) that mirrors the test's own path.
pub fn proptest_config(file: &'static str) -> Config {
    Config {
        failure_persistence: Some(Box::new(FileFailurePersistence::Direct(file))),
        ..Config::default()
    }
}

/// [`proptest_config`] with a fixed number of cases.
pub fn proptest_cases(cases: u32, file: &'static str) -> Config {
    Config {
        cases,
        ..proptest_config(file)
    }
}
