//! Replaying vector files on the real machine (feature `json`): the host of
//! the conformance vectors, shared by the CLI's `replay` and the tests.

use serde_json::Value;

use crate::machine::{Input, Machine, RetryState};
use crate::output::{Output, TimerId};
use crate::wire::json::{to_json, DecodeError, InputOwned, ScenarioHeader, VectorLine};

/// The result of one step: the outputs (each one JSON object text, in the
/// wire's key order, timers as ordinals), the state after the step, and
/// whether the input was refused (spec §6a).
///
/// ```
/// use autoretry::wire::replay::Replayer;
/// let mut r = Replayer::new();
/// let step = r.replay_line(r#"{"in":{"type":"abort_retry"}}"#).unwrap().unwrap();
/// assert_eq!(step.to_json_line(), r#"{"out":[],"state":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Step {
    /// The outputs, in order; each is the JSON text of one output
    /// (`{"type":"sleep","ms":2000,"timer":1}`), timer ids written as
    /// ordinals.
    pub out: Vec<String>,
    /// The query surface after the step.
    pub state: RetryState,
    /// Whether the input was refused (then `out` is empty).
    pub refused: bool,
}

impl Step {
    /// The outputs as JSON values (for comparing with a vector's `out`).
    ///
    /// ```
    /// use autoretry::wire::replay::Replayer;
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
    /// use autoretry::wire::replay::Replayer;
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
    /// use autoretry::wire::replay::Replayer;
    /// let mut r = Replayer::new();
    /// let step = r.replay_line(r#"{"in":{"type":"settings","settings":{"maxRetries":-1}}}"#).unwrap().unwrap();
    /// assert_eq!(step.to_json_line(), r#"{"out":[],"state":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0},"refused":true}"#);
    /// ```
    pub fn to_json_line(&self) -> String {
        let mut line = String::from("{\"out\":[");
        line.push_str(&self.out.join(","));
        line.push_str("],\"state\":");
        line.push_str(&to_json(&self.state));
        if self.refused {
            line.push_str(",\"refused\":true");
        }
        line.push('}');
        line
    }
}

/// A host for the vectors: a [`Machine`], the table from timer ordinals
/// (ordinal `n` is the `n`-th `sleep` of the scenario) to the machine's
/// [`TimerId`]s, and the error text of the last `agent_end` that asked for
/// `mark_usage_limit` (passed back with `usage_limit_marked`).
///
/// A `timer_fired` with an ordinal that was never produced is not passed to
/// the machine (its outputs are empty). Steps before any scenario line run
/// on a default machine.
///
/// ```
/// use autoretry::wire::replay::Replayer;
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
    /// `timers[n - 1]` is the machine's id of ordinal `n`.
    timers: Vec<TimerId>,
    marked_error: Option<String>,
}

impl Replayer {
    /// A replayer with a default machine.
    ///
    /// ```
    /// use autoretry::wire::replay::Replayer;
    /// assert_eq!(Replayer::new().machine().retry_attempt(), 0);
    /// ```
    pub fn new() -> Self {
        Replayer::default()
    }

    /// The machine.
    ///
    /// ```
    /// use autoretry::wire::replay::Replayer;
    /// assert!(Replayer::new().machine().auto_retry_enabled());
    /// ```
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// Starts a scenario: a fresh machine with the header's settings and
    /// host options, an empty timer table.
    ///
    /// ```
    /// use autoretry::{HostOptions, RetrySettings, wire::{json::ScenarioHeader, replay::Replayer}};
    /// let mut r = Replayer::new();
    /// r.start(&ScenarioHeader { name: "s".into(), settings: RetrySettings::DEFAULT.with_max_retries(0), host: HostOptions::default() });
    /// assert_eq!(r.machine().settings().max_retries, 0);
    /// ```
    pub fn start(&mut self, header: &ScenarioHeader) {
        *self = Replayer {
            machine: Machine::new(header.settings, header.host),
            timers: Vec::new(),
            marked_error: None,
        };
    }

    /// Feeds one input and returns the step's result.
    ///
    /// ```
    /// use autoretry::wire::{json::InputOwned, replay::Replayer};
    /// let step = Replayer::new().step(&InputOwned::TimerFired { timer: 3 });
    /// assert!(step.out.is_empty() && !step.refused);
    /// ```
    pub fn step(&mut self, input: &InputOwned) -> Step {
        let marked = self.marked_error.clone().unwrap_or_default();
        let mut machine_input = match input.as_input(&marked) {
            Ok(machine_input) => machine_input,
            Err(_invalid) => return self.result(Vec::new(), true),
        };
        if let Input::TimerFired { timer } = machine_input {
            let ordinal = usize::try_from(timer.get()).unwrap_or(usize::MAX);
            match ordinal.checked_sub(1).and_then(|i| self.timers.get(i)) {
                Some(&id) => machine_input = Input::TimerFired { timer: id },
                // Never produced: skip the call.
                None => return self.result(Vec::new(), false),
            }
        }
        let outputs = match self.machine.handle(machine_input) {
            Ok(outputs) => outputs,
            Err(_refused) => return self.result(Vec::new(), true),
        };
        let mut out = Vec::with_capacity(outputs.len());
        for output in &outputs {
            let output = match *output {
                Output::Sleep { ms, timer } => {
                    self.timers.push(timer);
                    Output::Sleep {
                        ms,
                        timer: TimerId(self.timers.len() as u64),
                    }
                }
                Output::CancelTimer { timer } => Output::CancelTimer {
                    timer: self.ordinal(timer),
                },
                Output::MarkUsageLimit { .. } => {
                    if let InputOwned::AgentEnd { message, .. } = input {
                        self.marked_error = message.error_message.clone();
                    }
                    *output
                }
                other => other,
            };
            out.push(to_json(&output));
        }
        self.result(out, false)
    }

    /// Handles one vector line: a scenario line starts a fresh machine
    /// (`Ok(None)`), a blank line is skipped (`Ok(None)`), a step returns its
    /// result. The expectations of a step line (`out`, `state`, `refused`)
    /// are ignored. A malformed line is an error and changes nothing.
    ///
    /// ```
    /// use autoretry::wire::replay::Replayer;
    /// let err = Replayer::new().replay_line(r#"{"in":{"type":"agent_end"}}"#).unwrap_err();
    /// assert_eq!(err.to_string(), "in.message: missing (expected an object)");
    /// ```
    pub fn replay_line(&mut self, line: &str) -> Result<Option<Step>, DecodeError> {
        Ok(match VectorLine::parse(line)? {
            None => None,
            Some(VectorLine::Scenario(header)) => {
                self.start(&header);
                None
            }
            Some(VectorLine::Step(input)) => Some(self.step(&input)),
        })
    }

    /// The ordinal of a machine timer id (the id itself if it was never
    /// produced, which the machine never does).
    fn ordinal(&self, timer: TimerId) -> TimerId {
        self.timers
            .iter()
            .rposition(|&id| id == timer)
            .map_or(timer, |i| TimerId(i as u64 + 1))
    }

    fn result(&self, out: Vec<String>, refused: bool) -> Step {
        Step {
            out,
            state: self.machine.state(),
            refused,
        }
    }
}
