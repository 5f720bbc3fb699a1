//! The agent's trace as a vector file (the format of the conformance
//! vectors, `tests/vectors/README.md`): a scenario line with the settings
//! and host options, then one step line per input the agent fed the
//! machine, with the outputs it saw and the state after. Timer ids are
//! written as the scenario's ordinals. `autoretry replay` on the file
//! gives back the same outputs: the real path and the vectors agree.
//!
//! ```
//! use autoretry::{AssistantMessage, Input, Machine, HostOptions, RetrySettings};
//! use autoretry_demo::record::Recorder;
//! let settings = RetrySettings::DEFAULT.with_base_delay_ms(10);
//! let mut machine = Machine::new(settings, HostOptions::DEFAULT);
//! let mut recorder = Recorder::new("demo", settings, HostOptions::DEFAULT);
//! let input = Input::agent_end(AssistantMessage::error("503"));
//! let outputs = machine.handle(input).unwrap();
//! recorder.step(&input, Ok(&outputs), machine.state());
//! let lines = recorder.lines();
//! assert_eq!(lines[0], r#"{"scenario":"demo","settings":{"enabled":true,"maxRetries":3,"baseDelayMs":10},"host":{"contextWindow":0,"credentialStore":false,"seed":0}}"#);
//! assert!(lines[1].ends_with(r#"{"type":"sleep","ms":10,"timer":1}],"state":{"autoRetryEnabled":true,"isRetrying":true,"retryAttempt":1}}"#));
//! ```

use std::collections::HashMap;

use autoretry::wire::SettingsGroup;
use autoretry::{
    AssistantMessage, HostOptions, Input, Output, Refused, RetrySettings, RetryState, TimerId,
};
use serde_json::{json, Value};

/// Writes one scenario's lines.
#[derive(Clone, Debug)]
pub struct Recorder {
    lines: Vec<String>,
    ordinals: HashMap<u64, u64>,
}

impl Recorder {
    /// A scenario named `name` with these settings and host options.
    pub fn new(name: &str, settings: RetrySettings, host: HostOptions) -> Recorder {
        let header = format!(
            r#"{{"scenario":{},"settings":{},"host":{}}}"#,
            Value::from(name),
            serde_json::to_string(&SettingsGroup(settings)).unwrap_or_default(),
            json!({"contextWindow": host.context_window, "credentialStore": host.credential_store, "seed": host.seed}),
        );
        Recorder {
            lines: vec![header],
            ordinals: HashMap::new(),
        }
    }

    /// The ordinal of a machine timer id (a new one for an id first seen).
    fn ordinal(&mut self, id: u64) -> u64 {
        let next = self.ordinals.len() as u64 + 1;
        *self.ordinals.entry(id).or_insert(next)
    }

    /// Records one step: the input, its outputs (or that it was
    /// refused) and the state after.
    pub fn step(
        &mut self,
        input: &Input<'_>,
        outputs: Result<&[Output<'_>], Refused>,
        state: RetryState,
    ) {
        let input = self.input_json(input);
        let out: Vec<String> = match outputs {
            Ok(outputs) => outputs.iter().map(|o| self.output_json(o)).collect(),
            Err(_) => Vec::new(),
        };
        let state = serde_json::to_string(&state).unwrap_or_default();
        let refused = if outputs.is_err() {
            r#","refused":true"#
        } else {
            ""
        };
        self.lines.push(format!(
            r#"{{"in":{input},"out":[{}],"state":{state}{refused}}}"#,
            out.join(",")
        ));
    }

    /// The lines so far (the scenario line first).
    pub fn lines(&self) -> &[String] {
        &self.lines
    }

    /// An output's JSON in the wire's key order, its timer as an ordinal.
    fn output_json(&mut self, output: &Output<'_>) -> String {
        let output = match *output {
            Output::Sleep { ms, timer } => Output::Sleep {
                ms,
                timer: TimerId(self.ordinal(timer.0)),
            },
            Output::Watch { ms, timer } => Output::Watch {
                ms,
                timer: TimerId(self.ordinal(timer.0)),
            },
            Output::CancelTimer { timer } => Output::CancelTimer {
                timer: TimerId(self.ordinal(timer.0)),
            },
            other => other,
        };
        serde_json::to_string(&output).unwrap_or_default()
    }

    fn input_json(&mut self, input: &Input<'_>) -> Value {
        match *input {
            Input::MessageEnd { message } => {
                json!({"type": "message_end", "message": message_json(&message)})
            }
            Input::AgentEnd { message, now_ms } => {
                let mut value = json!({"type": "agent_end", "message": message_json(&message)});
                if let Some(now_ms) = now_ms {
                    value["nowMs"] = json!(now_ms);
                }
                value
            }
            Input::TimerFired { timer } => {
                // A timer never produced would get a fresh ordinal, which
                // the replayer skips as the machine ignored it.
                json!({"type": "timer_fired", "timer": self.ordinal(timer.0)})
            }
            Input::UsageLimitMarked { switched, .. } => {
                json!({"type": "usage_limit_marked", "switched": switched})
            }
            Input::ModelSwitched { switched, .. } => {
                json!({"type": "model_switched", "switched": switched})
            }
            Input::StreamStart { now_ms } => json!({"type": "stream_start", "nowMs": now_ms}),
            Input::StreamEvent { now_ms } => json!({"type": "stream_event", "nowMs": now_ms}),
            Input::AbortRetry => json!({"type": "abort_retry"}),
            Input::Abort => json!({"type": "abort"}),
            Input::SetAutoRetry { enabled } => {
                json!({"type": "set_auto_retry", "enabled": enabled})
            }
            Input::Settings(settings) => {
                json!({"type": "settings", "settings": SettingsGroup(settings)})
            }
        }
    }
}

/// A message as the vectors write it.
fn message_json(message: &AssistantMessage<'_>) -> Value {
    let mut value = json!({"role": "assistant", "stopReason": message.stop_reason.as_str()});
    if let Some(text) = message.error_message {
        value["errorMessage"] = json!(text);
    }
    if let Some(usage) = message.usage {
        value["usage"] = json!({"input": usage.input, "cacheRead": usage.cache_read, "cacheWrite": usage.cache_write});
    }
    if let Some(should_retry) = message.should_retry {
        value["shouldRetry"] = json!(should_retry);
    }
    if let Some(ms) = message.retry_after_ms {
        value["retryAfterMs"] = json!(ms);
    }
    if message.partial != autoretry::Partial::None {
        value["partial"] = json!(message.partial.as_str());
    }
    if message.empty {
        value["empty"] = json!(true);
    }
    if !message.headers.is_empty() {
        let pairs: Vec<[&str; 2]> = message.headers.iter().map(|(n, v)| [n, v]).collect();
        value["headers"] = json!(pairs);
    }
    value
}
