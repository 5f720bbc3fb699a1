//! Replaying vector files on the real machine (feature `std`): the
//! conformance vectors' host on std, shared by the CLI's `replay` and the
//! tests.

use autoretry::wire::json::{DecodeError, InputLine};
use autoretry::{Machine, Output, RetryBudget, RetryState};
use serde_json::Value;

use crate::host::VectorHost;
use crate::vector::{ScenarioHeader, VectorLine};

/// The result of one step: the outputs (each one JSON object text, in the
/// wire's key order, timers as ordinals), the state after the step, and
/// whether the input was refused (spec §6a).
///
/// ```
/// use autoretry_testkit::replay::Replayer;
/// let mut r = Replayer::new();
/// let step = r.replay_line(r#"{"in":{"type":"abort_retry"}}"#).unwrap().unwrap();
/// assert_eq!(step.to_json_line(), r#"{"out":[],"state":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ReplayStep {
    /// The outputs, in order; each is the JSON text of one output
    /// (`{"type":"sleep","ms":2000,"timer":1}`), timer ids written as
    /// ordinals.
    pub out: Vec<String>,
    /// The query surface after the step.
    pub state: RetryState,
    /// Whether the input was refused (then `out` is empty).
    pub refused: bool,
    /// The scenario's retry budget after the step (spec §11.8), if it has
    /// one.
    pub budget: Option<RetryBudget>,
}

impl ReplayStep {
    /// The outputs as JSON values (for comparing with a vector's `out`).
    ///
    /// ```
    /// use autoretry_testkit::replay::Replayer;
    /// let mut r = Replayer::new();
    /// let step = r.replay_line(r#"{"in":{"type":"abort"}}"#).unwrap().unwrap();
    /// assert_eq!(step.out_values(), vec![serde_json::json!({"type": "abort_agent"})]);
    /// ```
    pub fn out_values(&self) -> Vec<Value> {
        self.out
            .iter()
            .map(|text| serde_json::from_str(text).unwrap_or(Value::Null))
            .collect()
    }

    /// The state as a JSON value.
    ///
    /// ```
    /// use autoretry_testkit::replay::Replayer;
    /// let step = Replayer::new().replay_line(r#"{"in":{"type":"abort"}}"#).unwrap().unwrap();
    /// assert_eq!(step.state_value()["retryAttempt"], 0);
    /// ```
    pub fn state_value(&self) -> Value {
        serde_json::to_value(self.state).unwrap_or(Value::Null)
    }

    /// The step as one JSON line (without the newline):
    /// `{"out":[...],"state":{...}}`, plus `"refused":true` when refused.
    ///
    /// ```
    /// use autoretry_testkit::replay::Replayer;
    /// let mut r = Replayer::new();
    /// let step = r.replay_line(r#"{"in":{"type":"settings","settings":{"maxRetries":-1}}}"#).unwrap().unwrap();
    /// assert_eq!(step.to_json_line(), r#"{"out":[],"state":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0},"refused":true}"#);
    /// ```
    pub fn to_json_line(&self) -> String {
        let mut line = String::from("{\"out\":[");
        line.push_str(&self.out.join(","));
        line.push_str("],\"state\":");
        line.push_str(&state_json(&self.state));
        if self.refused {
            line.push_str(",\"refused\":true");
        }
        if let Some(budget) = self.budget {
            line.push_str(&format!(",\"budget\":{budget}"));
        }
        line.push('}');
        line
    }
}

/// A host for the vectors: a [`Machine`] and a [`VectorHost`] (timer
/// ordinals to the machine's ids and back, the error text of the last
/// `agent_end` that asked for `mark_usage_limit`, passed back with
/// `usage_limit_marked`).
///
/// A `timer_fired` with an ordinal that was never produced (or is stale,
/// see [`VectorHost`]) is not passed to the machine (its outputs are
/// empty). Steps before any scenario line run on a default machine.
///
/// ```
/// use autoretry_testkit::replay::Replayer;
/// let mut r = Replayer::new();
/// assert!(r.replay_line(r#"{"scenario":"s","settings":{"baseDelayMs":10},"host":{}}"#).unwrap().is_none());
/// let step = r.replay_line(r#"{"in":{"type":"agent_end","message":{"role":"assistant","stopReason":"error","errorMessage":"503"}}}"#).unwrap().unwrap();
/// assert_eq!(step.out[2], r#"{"type":"sleep","ms":10,"timer":1}"#);
/// let step = r.replay_line(r#"{"in":{"type":"timer_fired","timer":1}}"#).unwrap().unwrap();
/// assert_eq!(step.out, [r#"{"type":"continue_agent"}"#]);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Replayer {
    machine: Machine,
    host: VectorHost<String>,
    budget: Option<RetryBudget>,
}

impl Replayer {
    /// A replayer with a default machine.
    ///
    /// ```
    /// use autoretry_testkit::replay::Replayer;
    /// assert_eq!(Replayer::new().machine().retry_attempt(), 0);
    /// ```
    pub fn new() -> Self {
        Replayer::default()
    }

    /// The machine.
    ///
    /// ```
    /// use autoretry_testkit::replay::Replayer;
    /// assert!(Replayer::new().machine().auto_retry_enabled());
    /// ```
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// Starts a scenario: a fresh machine with the header's settings and
    /// host options, a fresh vector host, and the header's budget (which
    /// every step then charges and refills).
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings};
    /// use autoretry_testkit::{replay::Replayer, vector::ScenarioHeader};
    /// let mut r = Replayer::new();
    /// r.start(&ScenarioHeader { name: "s".into(), settings: RetrySettings::DEFAULT.with_max_retries(0), host: HostOptions::default(), budget: None });
    /// assert_eq!(r.machine().settings().max_retries, 0);
    /// ```
    pub fn start(&mut self, header: &ScenarioHeader) {
        *self = Replayer {
            machine: Machine::new(header.settings, header.host),
            host: VectorHost::new(),
            budget: header.budget,
        };
    }

    /// Feeds one input and returns the step's result.
    ///
    /// ```
    /// use autoretry::{wire::json::InputLine, InputBuf, TimerId};
    /// use autoretry_testkit::replay::Replayer;
    /// let step = Replayer::new().step(&InputLine::Input(InputBuf::TimerFired { timer: TimerId(3) }));
    /// assert!(step.out.is_empty() && !step.refused);
    /// ```
    pub fn step(&mut self, input: &InputLine) -> ReplayStep {
        let marked = self.host.marked_text().to_owned();
        let vector_input = match input.as_input(&marked) {
            Ok(vector_input) => vector_input,
            Err(_invalid) => return self.result(Vec::new(), true),
        };
        let Some(machine_input) = self.host.machine_input(vector_input) else {
            // No such timer: skip the call.
            return self.result(Vec::new(), false);
        };
        let handled = match &mut self.budget {
            Some(budget) => self.machine.handle_with_budget(machine_input, budget),
            None => self.machine.handle(machine_input),
        };
        let outputs = match handled {
            Ok(outputs) => outputs,
            Err(_refused) => return self.result(Vec::new(), true),
        };
        let out = outputs
            .into_iter()
            .map(|output| output_json(&self.host.vector_output(&machine_input, output)))
            .collect();
        self.result(out, false)
    }

    /// Handles one vector line: a scenario line starts a fresh machine
    /// (`Ok(None)`), a blank line is skipped (`Ok(None)`), a step returns its
    /// result. The expectations of a step line (`out`, `state`, `refused`)
    /// are ignored. A malformed line is an error and changes nothing.
    ///
    /// ```
    /// use autoretry_testkit::replay::Replayer;
    /// let err = Replayer::new().replay_line(r#"{"in":{"type":"agent_end"}}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "in.message: missing (expected an object)");
    /// ```
    pub fn replay_line(&mut self, line: &str) -> Result<Option<ReplayStep>, DecodeError> {
        Ok(match VectorLine::parse(line)? {
            None => None,
            Some(VectorLine::Scenario(header)) => {
                self.start(&header);
                None
            }
            Some(VectorLine::Step(input)) => Some(self.step(&input)),
        })
    }

    fn result(&self, out: Vec<String>, refused: bool) -> ReplayStep {
        ReplayStep {
            out,
            state: self.machine.state(),
            refused,
            budget: self.budget,
        }
    }
}

/// The JSON of one output (the wire's `Serialize`, which cannot fail).
fn output_json(output: &Output<'_>) -> String {
    serde_json::to_string(output).unwrap_or_else(|e| format!("\"serialization failed: {e}\""))
}

/// The JSON of the state (the wire's `Serialize`, which cannot fail).
fn state_json(state: &RetryState) -> String {
    serde_json::to_string(state).unwrap_or_else(|e| format!("\"serialization failed: {e}\""))
}
