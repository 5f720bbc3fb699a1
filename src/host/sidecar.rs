//! The JSON-lines sidecar (feature `json`): an agent in any language drives
//! the machine over a pipe, and the sidecar owns the backoff timers (the
//! `autoretry rpc` command).
//!
//! # Lines in
//!
//! - the commands of [`Command`]: `set_auto_retry {enabled}`, `abort_retry`,
//!   `abort`, `get_retry_state`, `set_retry_settings {settings}` (each with
//!   an optional string `id`, echoed first in its response);
//! - the agent's events: `{"type":"message_end","message":{...}}`,
//!   `{"type":"agent_end","message":{...},"nowMs"?:n}` and
//!   `{"type":"usage_limit_marked","switched":b}` (the answer to a
//!   `mark_usage_limit` action; the sidecar remembers the marked text).
//!
//! Blank lines are skipped. A line that is not a JSON object with a string
//! `type` answers the `parse` error of spec §7; an unknown type answers
//! `Unknown command: <type>`; the sidecar keeps serving.
//!
//! # Lines out
//!
//! - one response per command (spec §7), before the command's other lines;
//!   an agent event is answered only when it is refused or malformed:
//!   `{"type":"response","command":"agent_end","success":false,"error":"..."}`;
//! - the events `auto_retry_start` / `auto_retry_end`, exactly as spec §8;
//! - what the agent must do, as `{"type":"action","action":"<name>"}`:
//!   `drop_trailing_error`, `continue_agent` (written when the backoff
//!   timer fires), `check_compaction`, `abort_agent`, `settled`,
//!   `mark_usage_limit` (with `"retryAfterMs":n|null`; answer with
//!   `usage_limit_marked`) and `sleep` (with `"ms":n`: informational, the
//!   sidecar owns the timer). Timer cancellation stays inside the sidecar.
//!
//! ```
//! use autoretry::{Machine, host::thread::ThreadDriver, host::sidecar::Sidecar};
//! let mut driver = ThreadDriver::new(Machine::default());
//! let mut sidecar = Sidecar::new(Vec::new());
//! sidecar.feed_line(&mut driver, br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"529 overloaded_error"}}"#).unwrap();
//! sidecar.feed_line(&mut driver, br#"{"type":"abort_retry","id":"a1"}"#).unwrap();
//! let out = String::from_utf8(sidecar.into_inner()).unwrap();
//! assert_eq!(out.lines().collect::<Vec<_>>(), [
//!     r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"529 overloaded_error"}"#,
//!     r#"{"type":"action","action":"drop_trailing_error"}"#,
//!     r#"{"type":"action","action":"sleep","ms":2000}"#,
//!     r#"{"id":"a1","type":"response","command":"abort_retry","success":true}"#,
//!     r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
//!     r#"{"type":"action","action":"settled"}"#,
//!     r#"{"type":"action","action":"check_compaction"}"#,
//! ]);
//! ```

use std::io::{self, BufRead, Write};
use std::ops::ControlFlow;
use std::sync::mpsc;
use std::thread;

use serde_json::Value;

use crate::host::thread::{ThreadDriver, Turn};
use crate::host::Step;
use crate::output::Output;
#[cfg(feature = "rules")]
use crate::rules::Rules;
use crate::wire::json::{to_json, InputOwned};
use crate::wire::rpc::{Command, Envelope, Response};

/// The line for one output, or `None` for the outputs the sidecar keeps to
/// itself (`cancel_timer`).
///
/// ```
/// use autoretry::{Output, TimerId, host::sidecar::output_line};
/// assert_eq!(output_line(&Output::ContinueAgent).unwrap(), r#"{"type":"action","action":"continue_agent"}"#);
/// assert_eq!(output_line(&Output::MarkUsageLimit { retry_after_ms: None }).unwrap(),
///     r#"{"type":"action","action":"mark_usage_limit","retryAfterMs":null}"#);
/// assert_eq!(output_line(&Output::CancelTimer { timer: TimerId(1) }), None);
/// ```
pub fn output_line(output: &Output<'_>) -> Option<String> {
    let action = |extra: &str| {
        format!(
            r#"{{"type":"action","action":"{}"{extra}}}"#,
            output.type_name()
        )
    };
    Some(match *output {
        Output::Emit(event) => to_json(&event),
        Output::CancelTimer { .. } => return None,
        Output::Sleep { ms, .. } => action(&format!(r#","ms":{ms}"#)),
        Output::MarkUsageLimit { retry_after_ms } => action(&format!(
            r#","retryAfterMs":{}"#,
            retry_after_ms.map_or_else(|| "null".to_owned(), |ms| ms.to_string())
        )),
        Output::DropTrailingError
        | Output::ContinueAgent
        | Output::CheckCompaction
        | Output::AbortAgent
        | Output::Settled => action(""),
    })
}

/// The sidecar's side of the pipe: turns lines into inputs of a
/// [`ThreadDriver`] and the outputs of its [`Step`]s into lines on `W`.
///
/// ```
/// use autoretry::{Machine, host::thread::ThreadDriver, host::sidecar::Sidecar};
/// let mut driver = ThreadDriver::new(Machine::default());
/// let mut sidecar = Sidecar::new(Vec::new());
/// sidecar.feed_line(&mut driver, br#"{"type":"abort","id":"1"}"#).unwrap();
/// assert_eq!(String::from_utf8(sidecar.into_inner()).unwrap(),
///     "{\"id\":\"1\",\"type\":\"response\",\"command\":\"abort\",\"success\":true}\n\
///      {\"type\":\"action\",\"action\":\"abort_agent\"}\n");
/// ```
#[derive(Debug)]
pub struct Sidecar<W: Write> {
    out: W,
    /// The error text of the `agent_end` that asked for `mark_usage_limit`.
    marked_error: Option<String>,
    /// Rules whose verdict is the `shouldRetry` of every agent message
    /// that has none.
    #[cfg(feature = "rules")]
    rules: Option<Rules<'static>>,
}

impl<W: Write> Sidecar<W> {
    /// A sidecar writing to `out` (flushed after every line fed and every
    /// step written).
    pub fn new(out: W) -> Self {
        Sidecar {
            out,
            marked_error: None,
            #[cfg(feature = "rules")]
            rules: None,
        }
    }

    /// The same sidecar applying `rules` to the message of every
    /// `message_end` and `agent_end` ([`Rules::apply`]): their verdict is
    /// the message's `shouldRetry` when the agent sent none (spec §10.2).
    /// What `autoretry rpc --rules FILE` does.
    ///
    /// ```
    /// use autoretry::{Machine, host::thread::ThreadDriver, host::sidecar::Sidecar};
    /// use autoretry::rules::{RuleSet, Rules};
    /// let rules = Rules::compile(&RuleSet::new().with_never("billing")).unwrap();
    /// let mut driver = ThreadDriver::new(Machine::default());
    /// let mut sidecar = Sidecar::new(Vec::new()).with_rules(rules);
    /// // A 503 that the rules say never to retry.
    /// sidecar.feed_line(&mut driver, br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503 billing unavailable"}}"#).unwrap();
    /// assert_eq!(sidecar.into_inner(), b"{\"type\":\"action\",\"action\":\"check_compaction\"}\n");
    /// ```
    #[cfg(feature = "rules")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rules")))]
    pub fn with_rules(mut self, rules: Rules<'static>) -> Self {
        self.rules = Some(rules);
        self
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Feeds one input line (without its newline; a trailing `\r` is
    /// ignored) to the driver: writes the response, if any, then the lines
    /// of the outputs, and flushes. Returns the first write error.
    ///
    /// ```
    /// use autoretry::{Machine, host::thread::ThreadDriver, host::sidecar::Sidecar};
    /// let mut driver = ThreadDriver::new(Machine::default());
    /// let mut sidecar = Sidecar::new(Vec::new());
    /// // An accepted agent event that starts nothing writes nothing but its action.
    /// sidecar.feed_line(&mut driver, br#"{"type":"agent_end","message":{"stopReason":"stop"}}"#).unwrap();
    /// assert_eq!(sidecar.into_inner(), b"{\"type\":\"action\",\"action\":\"check_compaction\"}\n");
    /// ```
    pub fn feed_line(&mut self, driver: &mut ThreadDriver, line: &[u8]) -> io::Result<()> {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| matches!(b, b' ' | b'\t')) {
            return Ok(());
        }
        let mut held = Vec::new();
        let response = self.respond(driver, line, &mut held);
        if let Some(response) = response {
            writeln!(self.out, "{}", response.to_json_line())?;
        }
        for line in held {
            writeln!(self.out, "{line}")?;
        }
        self.out.flush()
    }

    /// Writes the lines of a step's outputs (a fired timer's, from
    /// [`ThreadDriver::wait`] or [`ThreadDriver::run`]) and flushes. A
    /// refused step writes nothing: refusals are answered by
    /// [`Sidecar::feed_line`], which names the command.
    ///
    /// ```
    /// use std::time::Instant;
    /// use autoretry::{Machine, host::thread::ThreadDriver, host::sidecar::Sidecar};
    /// let mut driver = ThreadDriver::new(Machine::default()).with_time_scale(0.0);
    /// let mut sidecar = Sidecar::new(Vec::new());
    /// sidecar.feed_line(&mut driver, br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#).unwrap();
    /// let mut sidecar = Sidecar::new(Vec::new());
    /// sidecar.write_step(&driver.fire_due(Instant::now()).unwrap()).unwrap();
    /// assert_eq!(sidecar.into_inner(), b"{\"type\":\"action\",\"action\":\"continue_agent\"}\n");
    /// ```
    pub fn write_step(&mut self, step: &Step<'_>) -> io::Result<()> {
        for line in step.outputs.iter().flatten().filter_map(output_line) {
            writeln!(self.out, "{line}")?;
        }
        self.out.flush()
    }

    /// Decodes and runs one line; the response to write, if any. The lines
    /// of the outputs go to `held` (they follow the response).
    fn respond(
        &mut self,
        driver: &mut ThreadDriver,
        line: &[u8],
        held: &mut Vec<String>,
    ) -> Option<Response> {
        let text = match std::str::from_utf8(line) {
            Ok(text) => text,
            Err(e) => {
                return Some(Response {
                    id: None,
                    command: "parse".into(),
                    result: Err(format!("invalid UTF-8: {e}")),
                })
            }
        };
        let envelope = match Envelope::parse(text) {
            Ok(envelope) => envelope,
            Err(response) => return Some(response),
        };
        match envelope.type_name() {
            "message_end" | "agent_end" | "usage_limit_marked" => {
                self.agent_event(driver, &envelope, held)
            }
            _ => Some(match Command::from_envelope(&envelope) {
                None => envelope.unknown(),
                Some(Err(response)) => response,
                Some(Ok(command)) => match command.input().map(|input| driver.handle(input)) {
                    Some(Step {
                        outputs: Err(refused),
                        ..
                    }) => envelope.error(refused.to_string()),
                    Some(Step {
                        outputs: Ok(outputs),
                        ..
                    }) => {
                        held.extend(outputs.iter().filter_map(output_line));
                        command.answer(&envelope, driver.machine())
                    }
                    None => command.answer(&envelope, driver.machine()),
                },
            }),
        }
    }

    /// An agent event: no response unless it is malformed or refused.
    fn agent_event(
        &mut self,
        driver: &mut ThreadDriver,
        envelope: &Envelope,
        held: &mut Vec<String>,
    ) -> Option<Response> {
        let mut object = envelope.fields().clone();
        object.insert("type".into(), Value::String(envelope.type_name().into()));
        let event = match InputOwned::from_json(&Value::Object(object)) {
            Ok(event) => event,
            Err(e) => return Some(envelope.error(e.message().to_owned())),
        };
        let awaited = driver.machine().awaits_usage_limit_answer();
        let marked = if awaited {
            self.marked_error.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let input = match event.as_input(&marked) {
            Ok(input) => input,
            Err(error) => return Some(envelope.error(error.to_owned())),
        };
        #[cfg(feature = "rules")]
        let input = match &self.rules {
            Some(rules) => rules.apply_input(input),
            None => input,
        };
        match driver.handle(input).outputs {
            Err(refused) => return Some(envelope.error(refused.to_string())),
            Ok(outputs) => held.extend(outputs.iter().filter_map(output_line)),
        }
        match &event {
            InputOwned::AgentEnd { message, .. }
                if driver.machine().awaits_usage_limit_answer() =>
            {
                self.marked_error = message.error_message.clone();
            }
            InputOwned::UsageLimitMarked { .. } if awaited => self.marked_error = None,
            _ => {}
        }
        None
    }
}

/// Serves the sidecar until the end of `input`: a thread reads lines from
/// `input` into a channel, the calling thread runs the driver and writes to
/// `output`. At the end of input the pending timer is cancelled (nothing is
/// written after it) and `output` is flushed.
///
/// Returns the first read or write error.
///
/// ```
/// use autoretry::{Machine, host::thread::ThreadDriver, host::sidecar::serve};
/// let input = b"{\"type\":\"get_retry_state\",\"id\":\"q\"}\nnot json\n";
/// let mut out = Vec::new();
/// serve(ThreadDriver::new(Machine::default()), &input[..], &mut out).unwrap();
/// let out = String::from_utf8(out).unwrap();
/// let lines: Vec<&str> = out.lines().collect();
/// assert_eq!(lines[0], r#"{"id":"q","type":"response","command":"get_retry_state","success":true,"data":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#);
/// assert!(lines[1].starts_with(r#"{"type":"response","command":"parse","success":false,"error":"invalid JSON: "#));
/// ```
pub fn serve<R, W>(driver: ThreadDriver, input: R, output: W) -> io::Result<()>
where
    R: BufRead + Send + 'static,
    W: Write,
{
    serve_with(driver, input, Sidecar::new(output))
}

/// [`serve`] with a sidecar of the caller's (one [`Sidecar::with_rules`],
/// say), writing to its writer.
///
/// ```
/// use autoretry::{Machine, host::thread::ThreadDriver, host::sidecar::{serve_with, Sidecar}};
/// let input = b"{\"type\":\"abort\",\"id\":\"1\"}\n";
/// let mut out = Vec::new();
/// serve_with(ThreadDriver::new(Machine::default()), &input[..], Sidecar::new(&mut out)).unwrap();
/// assert!(String::from_utf8(out).unwrap().ends_with("{\"type\":\"action\",\"action\":\"abort_agent\"}\n"));
/// ```
pub fn serve_with<R, W>(mut driver: ThreadDriver, input: R, sidecar: Sidecar<W>) -> io::Result<()>
where
    R: BufRead + Send + 'static,
    W: Write,
{
    let (tx, rx) = mpsc::channel::<io::Result<Vec<u8>>>();
    let reader = thread::spawn(move || read_lines(input, &tx));
    let mut sidecar = sidecar;
    let mut result = Ok(());
    driver.run(&rx, |driver, turn| {
        let written = match turn {
            Turn::Message(line) => line.and_then(|line| sidecar.feed_line(driver, &line)),
            Turn::Fired(step) => sidecar.write_step(&step),
        };
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                result = Err(e);
                ControlFlow::Break(())
            }
        }
    });
    if result.is_ok() {
        result = sidecar.out.flush();
    }
    drop(rx);
    // The reader ends at the end of input, or at its next line once the
    // channel is gone; it is not waited for after an error.
    if result.is_ok() {
        let _ = reader.join();
    }
    result
}

/// Sends every line of `input` (without its `\n`), then an error if reading
/// failed; stops when the receiver is gone.
fn read_lines<R: BufRead>(mut input: R, tx: &mpsc::Sender<io::Result<Vec<u8>>>) {
    loop {
        let mut line = Vec::new();
        match input.read_until(b'\n', &mut line) {
            Ok(0) => return,
            Ok(_) => {
                if line.last() == Some(&b'\n') {
                    line.pop();
                }
                if tx.send(Ok(line)).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HostOptions, Machine, RetrySettings};

    fn run(driver: &mut ThreadDriver, sidecar: &mut Sidecar<Vec<u8>>, line: &str) -> Vec<String> {
        let before = sidecar.out.len();
        sidecar.feed_line(driver, line.as_bytes()).unwrap();
        String::from_utf8(sidecar.out[before..].to_vec())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn refused_and_malformed_agent_events_answer() {
        let mut driver = ThreadDriver::new(Machine::default());
        let mut s = Sidecar::new(Vec::new());
        let failed =
            r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#;
        assert_eq!(run(&mut driver, &mut s, failed).len(), 3);
        assert_eq!(
            run(&mut driver, &mut s, failed),
            [
                r#"{"type":"response","command":"agent_end","success":false,"error":"the agent must not run while a retry backoff is pending"}"#
            ]
        );
        assert_eq!(
            run(&mut driver, &mut s, r#"{"type":"message_end","id":"m"}"#),
            [
                r#"{"id":"m","type":"response","command":"message_end","success":false,"error":"message: missing (expected an object)"}"#
            ]
        );
        assert_eq!(
            run(
                &mut driver,
                &mut s,
                r#"{"type":"agent_end","message":{"stopReason":"oops"}}"#
            )[0],
            r#"{"type":"response","command":"agent_end","success":false,"error":"message.stopReason: expected one of \"stop\", \"length\", \"toolUse\", \"error\", \"aborted\", found a string \"oops\""}"#
        );
        assert_eq!(
            run(&mut driver, &mut s, r#"{"type":"usage_limit_marked"}"#),
            [
                r#"{"type":"response","command":"usage_limit_marked","success":false,"error":"switched: missing (expected a boolean)"}"#
            ]
        );
        // Still in the same backoff.
        assert_eq!(driver.state().retry_attempt, 1);
        assert!(driver.deadline().is_some());
    }

    #[test]
    fn the_usage_limit_answer_carries_the_marked_text() {
        let host = HostOptions::default().with_credential_store(true);
        let mut driver = ThreadDriver::new(Machine::new(RetrySettings::DEFAULT, host));
        let mut s = Sidecar::new(Vec::new());
        let limited = r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"usage_limit_reached retry-after-ms: 1500"}}"#;
        assert_eq!(
            run(&mut driver, &mut s, limited),
            [r#"{"type":"action","action":"mark_usage_limit","retryAfterMs":1500}"#]
        );
        assert_eq!(
            run(
                &mut driver,
                &mut s,
                r#"{"type":"usage_limit_marked","switched":true}"#
            ),
            [
                r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":0,"errorMessage":"usage_limit_reached retry-after-ms: 1500"}"#,
                r#"{"type":"action","action":"drop_trailing_error"}"#,
                r#"{"type":"action","action":"sleep","ms":0}"#,
            ]
        );
        // A late answer is ignored.
        assert!(run(
            &mut driver,
            &mut s,
            r#"{"type":"usage_limit_marked","switched":false}"#
        )
        .is_empty());
    }

    #[test]
    fn commands_answer_first() {
        let mut driver = ThreadDriver::new(Machine::default());
        let mut s = Sidecar::new(Vec::new());
        assert_eq!(
            run(&mut driver, &mut s, r#"{"type":"abort","id":"x"}"#),
            [
                r#"{"id":"x","type":"response","command":"abort","success":true}"#,
                r#"{"type":"action","action":"abort_agent"}"#,
            ]
        );
        assert_eq!(
            run(
                &mut driver,
                &mut s,
                r#"{"type":"set_retry_settings","settings":{"maxRetries":1,"bogus":2}}"#
            ),
            [
                r#"{"type":"response","command":"set_retry_settings","success":false,"error":"retry: unknown key \"bogus\""}"#
            ]
        );
        assert_eq!(driver.machine().settings(), RetrySettings::DEFAULT);
        assert!(run(&mut driver, &mut s, "  \r").is_empty());
        s.feed_line(&mut driver, b"{\"type\":\"abort\xff\"}")
            .unwrap();
        let out = String::from_utf8(s.into_inner()).unwrap();
        let last = out.lines().last().unwrap();
        assert!(
            last.starts_with(
                r#"{"type":"response","command":"parse","success":false,"error":"invalid UTF-8: "#
            ),
            "{last}"
        );
    }
}
