//! The JSON-lines sidecar (feature `json`): an agent in any language drives
//! the machine over a pipe, and the sidecar owns the backoff timer (the
//! `autoretry rpc` command).
//!
//! # Lines in
//!
//! - the commands of [`Command`]: `set_auto_retry {enabled}`, `abort_retry`,
//!   `abort`, `get_retry_state`, `set_retry_settings {settings}` (each with
//!   an optional string or numeric `id`, echoed first in its response
//!   exactly as given). **`set_retry_settings` replaces the whole `retry`
//!   group, it does not patch it: every key it leaves out goes back to
//!   its profile's default**, whatever was in force (spec §4). To change
//!   one key, send the whole group with that key changed (its answer's
//!   `data` is the group in force);
//! - the agent's events: `{"type":"message_end","message":{...}}`,
//!   `{"type":"agent_end","message":{...},"nowMs"?:n}` and
//!   `{"type":"usage_limit_marked","switched":b}` (the answer to a
//!   `mark_usage_limit` action; the sidecar remembers the marked text) and
//!   `{"type":"model_switched","switched":b}` (the answer to a
//!   `switch_model` action, spec §11.3). A message may carry `partial`
//!   (spec §11.2).
//!
//! Blank lines are skipped. A line that is not a JSON object with a string
//! `type` answers the `parse` error of spec §7 (an object that gives a key
//! twice is not one); an unknown type answers `Unknown command: <type>`,
//! with the nearest known type in `didYouMean` when one is close; a
//! line longer than the limit ([`MAX_LINE_BYTES`] unless the [`Pipe`] says
//! otherwise) answers a `parse` error with the code `line_too_long`. Every
//! failed response has a `code` and the `line` number (see
//! [`crate::wire::rpc`]'s error codes); the sidecar keeps serving.
//!
//! # Lines out
//!
//! - one response per command (spec §7), before the command's other lines;
//!   an agent event is answered only when it is refused or malformed:
//!   `{"type":"response","command":"agent_end","success":false,"error":"...","code":"...","line":n}`;
//! - the events `auto_retry_start` / `auto_retry_end`, exactly as spec §8;
//! - what the agent must do, as `{"type":"action","action":"<name>"}`:
//!   `drop_trailing_error`, `continue_agent` (written when the backoff
//!   timer fires), `check_compaction`, `abort_agent`, `settled`,
//!   `mark_usage_limit` (with `"retryAfterMs":n|null`; answer with
//!   `usage_limit_marked`), `switch_model` (with `"reason":"..."`; answer
//!   with `model_switched`) and `sleep` (with `"ms":n`: informational, the
//!   sidecar owns the timer). A continuation's `continue_agent` carries
//!   `"resume":true` (spec §11.2). Timer cancellation stays inside the
//!   sidecar.
//! - with a shared retry budget ([`Sidecar::with_budget`]) whose store
//!   fails: `{"type":"budget_store_error","error":"..."}`, before the lines
//!   of the `agent_end` it concerns, which was decided without the budget
//!   (the sidecar fails open: see [`handle_shared`]) and keeps serving.
//!
//! # Time and fairness
//!
//! [`serve`] runs a [`Sidecar`] on a [`Source`]: lines stamped with the
//! time they arrived, and a clock. A due timer goes ahead of every line
//! that arrived at or after its deadline, however fast lines come (a line
//! that arrived before it, an `abort_retry` sent in time, goes first). So
//! `continue_agent` is never later than the answer to the line being
//! handled when the deadline passed. [`Pipe`] is the real source: a thread
//! reads the lines into a bounded queue ([`READ_AHEAD_LINES`]), so a client
//! that writes faster than the sidecar answers is held back by the pipe,
//! and the sidecar never holds more than a few lines of at most the limit
//! each. The tests run [`serve`] on a virtual clock.
//!
//! At the end of input the sidecar feeds `abort_retry` (the agent is gone):
//! an open chain ends as a cancel ends it (`auto_retry_end` with `Retry
//! cancelled`, `settled`, and `check_compaction` when a backoff was
//! pending); with no chain open nothing is written.
//!
//! ```
//! use autoretry::{Machine, host::sidecar::Sidecar};
//! use std::time::Duration;
//! let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
//! let now = Duration::ZERO;
//! sidecar.feed_line(br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"529 overloaded_error"}}"#, now).unwrap();
//! sidecar.feed_line(br#"{"type":"abort_retry","id":"a1"}"#, now).unwrap();
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

use std::io::{self, BufRead, BufReader, Read, Write};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender, TryRecvError};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::host::shared_budget::{handle_shared, SharedBudget};
use crate::host::thread::scaled;
use crate::host::timer::BackoffTimer;
use crate::machine::{Input, Machine, Refused};
use crate::output::{Output, Outputs};
use crate::owned::InputBuf;
#[cfg(feature = "rules")]
use crate::rules::Rules;
use crate::wire::json::{to_json, InputLine};
use crate::wire::rpc::{Command, Envelope, ErrorCode, Failure, Response};

/// The agent's events the sidecar takes besides the commands.
const AGENT_EVENTS: [&str; 4] = [
    "message_end",
    "agent_end",
    "usage_limit_marked",
    "model_switched",
];
/// The longest input line [`Pipe::new`] accepts by default, in bytes
/// (without its `\n`): 1 MiB. A longer line is answered with a
/// `line_too_long` error and skipped; `autoretry rpc --max-line-bytes N`
/// changes it.
pub const MAX_LINE_BYTES: usize = 1 << 20;

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
        Output::SwitchModel { reason } => action(&format!(r#","reason":"{}""#, reason.as_str())),
        Output::ResumeAgent => action(r#","resume":true"#),
        Output::DropTrailingError
        | Output::ContinueAgent
        | Output::CheckCompaction
        | Output::AbortAgent
        | Output::Settled => action(""),
    })
}

/// The sidecar: a [`Machine`], its backoff timer, and the lines it writes
/// on `W`. It adds no policy: lines become inputs, outputs become lines,
/// `sleep` arms the timer and `cancel_timer` disarms it.
///
/// Time is a [`Duration`] on the caller's clock (since any fixed origin):
/// [`Sidecar::feed_line`] takes the time at which it runs, to arm the
/// timer; [`Sidecar::fire_due`] fires a timer whose deadline has passed.
///
/// ```
/// use std::time::Duration;
/// use autoretry::{Machine, host::sidecar::Sidecar};
/// let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
/// sidecar.feed_line(br#"{"type":"abort","id":"1"}"#, Duration::ZERO).unwrap();
/// assert_eq!(String::from_utf8(sidecar.into_inner()).unwrap(),
///     "{\"id\":\"1\",\"type\":\"response\",\"command\":\"abort\",\"success\":true}\n\
///      {\"type\":\"action\",\"action\":\"abort_agent\"}\n");
/// ```
#[derive(Debug)]
pub struct Sidecar<W: Write> {
    out: W,
    machine: Machine,
    /// The backoff timer, on the caller's clock.
    timer: BackoffTimer<Duration>,
    time_scale: f64,
    /// The number of the last line fed (1-based).
    line: u64,
    /// The error text of the `agent_end` whose decision asked for
    /// `mark_usage_limit` or `switch_model`.
    marked_error: Option<String>,
    /// Rules whose verdict is the `shouldRetry` of every agent message
    /// that has none.
    #[cfg(feature = "rules")]
    rules: Option<Rules<'static>>,
    /// The retry budget every `agent_end` is decided with (spec §11.4).
    budget: Option<Box<dyn SharedBudget + Send>>,
}

impl<W: Write> Sidecar<W> {
    /// A sidecar for `machine`, writing to `out` (flushed after every line
    /// fed and every timer fired), in real time (time scale 1).
    pub fn new(machine: Machine, out: W) -> Self {
        Sidecar {
            out,
            machine,
            timer: BackoffTimer::new(),
            time_scale: 1.0,
            line: 0,
            marked_error: None,
            #[cfg(feature = "rules")]
            rules: None,
            budget: None,
        }
    }

    /// The same sidecar deciding every `agent_end` with a retry budget
    /// (spec §11.4): a [`RetryBudget`](crate::RetryBudget) of its own, or a
    /// store that sidecars in several processes share (`autoretry rpc
    /// --budget 10:0.1 --budget-store redis://...`).
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{Machine, RetryBudget, host::sidecar::Sidecar};
    /// let budget = RetryBudget::new(2, 100).unwrap();
    /// let mut sidecar = Sidecar::new(Machine::default(), Vec::new()).with_budget(budget);
    /// // 2 tokens → 1, at most half: throttled at once.
    /// sidecar.feed_line(br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#, Duration::ZERO).unwrap();
    /// let out = String::from_utf8(sidecar.into_inner()).unwrap();
    /// assert!(out.starts_with(r#"{"type":"auto_retry_end","success":false,"attempt":0,"finalError":"Retry throttled"#));
    /// ```
    pub fn with_budget(mut self, budget: impl SharedBudget + Send + 'static) -> Self {
        self.budget = Some(Box::new(budget));
        self
    }

    /// The same sidecar with every backoff wait multiplied by `scale`
    /// (`autoretry rpc --time-scale`: 0.01 waits 20 ms for a 2 s backoff,
    /// for hosts' integration tests). The lines keep the unscaled figures
    /// (`"delayMs":2000`, `"ms":2000`). A negative or NaN scale counts as
    /// 0; an infinite one (or a wait beyond the clock's range) never fires.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{Machine, host::sidecar::Sidecar};
    /// let mut sidecar = Sidecar::new(Machine::default(), Vec::new()).with_time_scale(0.01);
    /// sidecar.feed_line(br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#, Duration::ZERO).unwrap();
    /// assert_eq!(sidecar.deadline(), Some(Duration::from_millis(20)));
    /// ```
    pub fn with_time_scale(mut self, scale: f64) -> Self {
        self.time_scale = if scale > 0.0 { scale } else { 0.0 };
        self
    }

    /// The same sidecar applying `rules` to the message of every
    /// `message_end` and `agent_end` ([`Rules::apply`]): their verdict is
    /// the message's `shouldRetry` when the agent sent none (spec §10.2).
    /// What `autoretry rpc --rules FILE` does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{Machine, host::sidecar::Sidecar};
    /// use autoretry::rules::{RuleSet, Rules};
    /// let rules = Rules::compile(&RuleSet::new().with_never("billing")).unwrap();
    /// let mut sidecar = Sidecar::new(Machine::default(), Vec::new()).with_rules(rules);
    /// // A 503 that the rules say never to retry.
    /// sidecar.feed_line(br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503 billing unavailable"}}"#, Duration::ZERO).unwrap();
    /// assert_eq!(sidecar.into_inner(), b"{\"type\":\"action\",\"action\":\"check_compaction\"}\n");
    /// ```
    #[cfg(feature = "rules")]
    #[cfg_attr(docsrs, doc(cfg(feature = "rules")))]
    pub fn with_rules(mut self, rules: Rules<'static>) -> Self {
        self.rules = Some(rules);
        self
    }

    /// The machine (for its queries: [`Machine::state`], settings, ...).
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// When the pending backoff timer fires, on the caller's clock; `None`
    /// when no timer is pending (or it never fires).
    pub fn deadline(&self) -> Option<Duration> {
        self.timer.deadline()
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.out
    }

    /// Feeds one input line (without its newline; a trailing `\r` is
    /// ignored) at time `now`: writes the response, if any, then the lines
    /// of the outputs, and flushes. Returns the first write error.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{Machine, host::sidecar::Sidecar};
    /// let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
    /// // An accepted agent event that starts nothing writes nothing but its action.
    /// sidecar.feed_line(br#"{"type":"agent_end","message":{"stopReason":"stop"}}"#, Duration::ZERO).unwrap();
    /// // A refused or malformed line is answered with a code and its line number.
    /// sidecar.feed_line(br#"{"type":"agent_end"}"#, Duration::ZERO).unwrap();
    /// assert_eq!(String::from_utf8(sidecar.into_inner()).unwrap(),
    ///     "{\"type\":\"action\",\"action\":\"check_compaction\"}\n\
    ///      {\"type\":\"response\",\"command\":\"agent_end\",\"success\":false,\"error\":\"message: missing (expected an object)\",\"code\":\"invalid_field\",\"line\":2}\n");
    /// ```
    pub fn feed_line(&mut self, line: &[u8], now: Duration) -> io::Result<()> {
        self.line += 1;
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| matches!(b, b' ' | b'\t')) {
            return Ok(());
        }
        let mut held = Vec::new();
        if let Some(response) = self.respond(line, now, &mut held) {
            self.write_response(response)?;
        }
        for line in held {
            writeln!(self.out, "{line}")?;
        }
        self.out.flush()
    }

    /// Answers a line that was longer than `limit` bytes (`bytes` of them,
    /// without the newline), and was not read: a `parse` error with the
    /// code `line_too_long`. Nothing else changes.
    ///
    /// ```
    /// use autoretry::{Machine, host::sidecar::Sidecar};
    /// let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
    /// sidecar.too_long(5_000_000, 1 << 20).unwrap();
    /// assert_eq!(String::from_utf8(sidecar.into_inner()).unwrap(),
    ///     "{\"type\":\"response\",\"command\":\"parse\",\"success\":false,\"error\":\"line too long: 5000000 bytes, the limit is 1048576\",\"code\":\"line_too_long\",\"line\":1}\n");
    /// ```
    pub fn too_long(&mut self, bytes: u64, limit: usize) -> io::Result<()> {
        self.line += 1;
        self.write_response(Response {
            id: None,
            command: "parse".into(),
            result: Err(Failure::new(
                ErrorCode::LineTooLong,
                format!("line too long: {bytes} bytes, the limit is {limit}"),
            )),
        })?;
        self.out.flush()
    }

    /// Fires the pending timer if its deadline is at or before `now`:
    /// feeds `timer_fired`, writes its lines (`continue_agent`) and
    /// flushes. Returns whether it fired.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{Machine, host::sidecar::Sidecar};
    /// let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
    /// sidecar.feed_line(br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#, Duration::ZERO).unwrap();
    /// assert!(!sidecar.fire_due(Duration::from_millis(1999)).unwrap());
    /// assert!(sidecar.fire_due(Duration::from_millis(2000)).unwrap());
    /// assert!(String::from_utf8(sidecar.into_inner()).unwrap().ends_with("{\"type\":\"action\",\"action\":\"continue_agent\"}\n"));
    /// ```
    pub fn fire_due(&mut self, now: Duration) -> io::Result<bool> {
        let Some(timer) = self.timer.take_due(now) else {
            return Ok(false);
        };
        // `timer_fired` is never refused.
        if let Ok(outputs) = self.handle(Input::TimerFired { timer }, now) {
            self.write_outputs(&outputs)?;
        }
        self.out.flush().map(|()| true)
    }

    /// The end of input: feeds `abort_retry` (see the [module
    /// docs](self#time-and-fairness)) and writes its lines.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{Machine, host::sidecar::Sidecar};
    /// let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
    /// sidecar.feed_line(br#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#, Duration::ZERO).unwrap();
    /// sidecar.end_of_input(Duration::ZERO).unwrap();
    /// assert_eq!(sidecar.deadline(), None);
    /// let out = String::from_utf8(sidecar.into_inner()).unwrap();
    /// assert_eq!(out.lines().skip(3).collect::<Vec<_>>(), [
    ///     r#"{"type":"auto_retry_end","success":false,"attempt":1,"finalError":"Retry cancelled"}"#,
    ///     r#"{"type":"action","action":"settled"}"#,
    ///     r#"{"type":"action","action":"check_compaction"}"#,
    /// ]);
    /// ```
    pub fn end_of_input(&mut self, now: Duration) -> io::Result<()> {
        // `abort_retry` is never refused.
        if let Ok(outputs) = self.handle(Input::AbortRetry, now) {
            self.write_outputs(&outputs)?;
        }
        self.out.flush()
    }

    /// Feeds one input to the machine and carries out its timer outputs,
    /// in order: `sleep` arms the timer (at `now` plus the scaled wait),
    /// `cancel_timer` disarms it.
    fn handle<'a>(&mut self, input: Input<'a>, now: Duration) -> Result<Outputs<'a>, Refused> {
        // Only an `agent_end` charges or refills a budget.
        let outputs = match &mut self.budget {
            Some(store) if matches!(input, Input::AgentEnd { .. }) => {
                let (outputs, store_error) = handle_shared(&mut self.machine, input, &mut **store)?;
                if let Some(error) = store_error {
                    let line = format!(
                        r#"{{"type":"budget_store_error","error":{}}}"#,
                        to_json(&error.to_string())
                    );
                    // A failed write surfaces at the next line's flush.
                    let _ = writeln!(self.out, "{line}");
                }
                outputs
            }
            _ => self.machine.handle(input)?,
        };
        let scale = self.time_scale;
        self.timer
            .carry_out(&outputs, self.machine.pending_timer(), |ms| {
                scaled(ms, scale).and_then(|wait| now.checked_add(wait))
            });
        Ok(outputs)
    }

    fn write_outputs(&mut self, outputs: &Outputs<'_>) -> io::Result<()> {
        for line in outputs.iter().filter_map(output_line) {
            writeln!(self.out, "{line}")?;
        }
        Ok(())
    }

    /// Writes a response; a failure names the line.
    fn write_response(&mut self, mut response: Response) -> io::Result<()> {
        if let Err(failure) = response.result {
            response.result = Err(failure.at_line(self.line));
        }
        writeln!(self.out, "{}", response.to_json_line())
    }

    /// Decodes and runs one line; the response to write, if any. The lines
    /// of the outputs go to `held` (they follow the response).
    fn respond(&mut self, line: &[u8], now: Duration, held: &mut Vec<String>) -> Option<Response> {
        let text = match std::str::from_utf8(line) {
            Ok(text) => text,
            Err(e) => {
                return Some(Response {
                    id: None,
                    command: "parse".into(),
                    result: Err(Failure::new(
                        ErrorCode::InvalidJson,
                        format!("invalid UTF-8: {e}"),
                    )),
                })
            }
        };
        let envelope = match Envelope::parse(text) {
            Ok(envelope) => envelope,
            Err(response) => return Some(response),
        };
        match envelope.type_name() {
            name if AGENT_EVENTS.contains(&name) => self.agent_event(&envelope, now, held),
            _ => Some(match Command::from_envelope(&envelope) {
                None => envelope.unknown_among(&[&Command::NAMES[..], &AGENT_EVENTS].concat()),
                Some(Err(response)) => response,
                Some(Ok(command)) => match command.input().map(|input| self.handle(input, now)) {
                    Some(Err(refused)) => envelope.refused(refused),
                    Some(Ok(outputs)) => {
                        held.extend(outputs.iter().filter_map(output_line));
                        command.answer(&envelope, &self.machine)
                    }
                    None => command.answer(&envelope, &self.machine),
                },
            }),
        }
    }

    /// An agent event: no response unless it is malformed or refused.
    fn agent_event(
        &mut self,
        envelope: &Envelope,
        now: Duration,
        held: &mut Vec<String>,
    ) -> Option<Response> {
        let mut object = envelope.fields().clone();
        object.insert("type".into(), Value::String(envelope.type_name().into()));
        let event = match InputLine::from_json(&Value::Object(object)) {
            Ok(event) => event,
            Err(e) => return Some(envelope.error(ErrorCode::of(&e), e.to_string())),
        };
        let awaited =
            self.machine.awaits_usage_limit_answer() || self.machine.awaits_model_switch_answer();
        let marked = if awaited {
            self.marked_error.clone().unwrap_or_default()
        } else {
            String::new()
        };
        let input = match event.as_input(&marked) {
            Ok(input) => input,
            Err(refused) => {
                return Some(envelope.error(ErrorCode::InvalidField, refused.to_string()))
            }
        };
        #[cfg(feature = "rules")]
        let input = match &self.rules {
            Some(rules) => rules.apply_input(input),
            None => input,
        };
        match self.handle(input, now) {
            Err(refused) => return Some(envelope.refused(refused)),
            Ok(outputs) => held.extend(outputs.iter().filter_map(output_line)),
        }
        // The text of the decision the host is asked about, kept until the
        // machine no longer awaits an answer.
        let awaits =
            self.machine.awaits_usage_limit_answer() || self.machine.awaits_model_switch_answer();
        match &event {
            InputLine::Input(InputBuf::AgentEnd { message, .. }) if awaits => {
                self.marked_error = message.error_message.clone();
            }
            _ if !awaits => self.marked_error = None,
            _ => {}
        }
        None
    }
}

/// What a [`Source`] delivers: one item and the time it arrived, on the
/// source's clock.
#[derive(Debug)]
pub struct Arrival {
    /// When the item arrived (the reader had it).
    pub at: Duration,
    /// The item.
    pub item: Item,
}

/// One item of input.
#[derive(Debug)]
pub enum Item {
    /// A line, without its `\n`.
    Line(Vec<u8>),
    /// A line longer than `limit` bytes: `bytes` of them, skipped unread.
    TooLong {
        /// The line's length, without its `\n`.
        bytes: u64,
        /// The limit it broke.
        limit: usize,
    },
    /// The end of input.
    End,
    /// Reading failed; no more input.
    Failed(io::Error),
}

/// Where [`serve`] gets its lines and its time: [`Pipe`] in real life, a
/// virtual clock in tests.
///
/// ```
/// use std::time::Duration;
/// use autoretry::{Machine, host::sidecar::{serve, Arrival, Item, Sidecar, Source}};
///
/// /// Lines that all arrived at once, on a clock that jumps to any
/// /// deadline it is asked to wait for.
/// struct AllAtOnce { lines: Vec<&'static str>, now: Duration }
///
/// impl Source for AllAtOnce {
///     fn now(&self) -> Duration { self.now }
///     fn next(&mut self, until: Option<Duration>) -> Option<Arrival> {
///         if self.lines.is_empty() {
///             if let Some(until) = until {
///                 self.now = self.now.max(until);
///                 return None;
///             }
///             return Some(Arrival { at: self.now, item: Item::End });
///         }
///         let line = self.lines.remove(0);
///         Some(Arrival { at: Duration::ZERO, item: Item::Line(line.into()) })
///     }
/// }
///
/// let mut source = AllAtOnce { lines: vec![
///     r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#,
/// ], now: Duration::ZERO };
/// let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
/// serve(&mut sidecar, &mut source).unwrap();
/// // The backoff ran out on the virtual clock: 2 s.
/// assert_eq!(source.now(), Duration::from_secs(2));
/// let out = String::from_utf8(sidecar.into_inner()).unwrap();
/// assert_eq!(out.lines().nth(3), Some(r#"{"type":"action","action":"continue_agent"}"#));
/// ```
pub trait Source {
    /// The time now, on this source's clock (since any fixed origin).
    fn now(&self) -> Duration;

    /// The next item, waiting for it at most until `until` (forever when
    /// `None`); `None` when `until` passed first. After [`Item::End`] or
    /// [`Item::Failed`] it is not called again.
    fn next(&mut self, until: Option<Duration>) -> Option<Arrival>;
}

/// Serves `sidecar` until the end of `source`'s input: feeds each line as
/// it comes and fires the timer when it is due, ahead of every line that
/// arrived at or after its deadline. At the end of input it calls
/// [`Sidecar::end_of_input`]. Returns the first read or write error.
///
/// ```
/// use autoretry::{Machine, host::sidecar::{serve, Pipe, Sidecar, MAX_LINE_BYTES}};
/// let input = b"{\"type\":\"get_retry_state\",\"id\":\"q\"}\nnot json\n";
/// let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
/// serve(&mut sidecar, &mut Pipe::new(&input[..], MAX_LINE_BYTES)).unwrap();
/// let out = String::from_utf8(sidecar.into_inner()).unwrap();
/// let lines: Vec<&str> = out.lines().collect();
/// assert_eq!(lines[0], r#"{"id":"q","type":"response","command":"get_retry_state","success":true,"data":{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}}"#);
/// assert!(lines[1].starts_with(r#"{"type":"response","command":"parse","success":false,"error":"invalid JSON: "#));
/// assert!(lines[1].ends_with(r#","code":"invalid_json","line":2}"#));
/// ```
pub fn serve<W: Write>(sidecar: &mut Sidecar<W>, source: &mut impl Source) -> io::Result<()> {
    loop {
        let Some(arrival) = source.next(sidecar.deadline()) else {
            // The deadline passed with no input.
            sidecar.fire_due(source.now())?;
            continue;
        };
        sidecar.fire_due(arrival.at)?;
        let now = source.now();
        match arrival.item {
            Item::Line(line) => sidecar.feed_line(&line, now)?,
            Item::TooLong { bytes, limit } => sidecar.too_long(bytes, limit)?,
            Item::End => return sidecar.end_of_input(now),
            Item::Failed(e) => {
                sidecar.end_of_input(now)?;
                return Err(e);
            }
        }
    }
}

/// The real [`Source`]: a thread reads lines from `R`, stamped on a
/// monotonic clock, into a bounded queue: at most [`READ_AHEAD_LINES`]
/// lines are read ahead of the sidecar (passed on in batches of what the
/// client has already written, so a fast client costs no thread switch per
/// line). A line longer than the limit is skipped as it is read, never
/// held, and reported as [`Item::TooLong`].
///
/// ```
/// use autoretry::host::sidecar::{Item, Pipe, Source};
/// let mut pipe = Pipe::new(&b"{}\nxxxxxxxx\n"[..], 4);
/// assert!(matches!(pipe.next(None).unwrap().item, Item::Line(line) if line == b"{}"));
/// assert!(matches!(pipe.next(None).unwrap().item, Item::TooLong { bytes: 8, limit: 4 }));
/// assert!(matches!(pipe.next(None).unwrap().item, Item::End));
/// ```
#[derive(Debug)]
pub struct Pipe {
    rx: mpsc::Receiver<Vec<Arrival>>,
    /// The batch being handed out, in order.
    batch: std::collections::VecDeque<Arrival>,
    origin: Instant,
}

/// The lines of one batch, at most.
const BATCH_LINES: usize = 64;
/// A batch is passed on once it holds this many bytes.
const BATCH_BYTES: usize = 64 * 1024;
/// Batches waiting in the channel, at most.
const QUEUE_BATCHES: usize = 2;

/// How many lines a [`Pipe`] reads ahead of the sidecar, at most (the
/// batches in the queue, the one being handed out and the one being
/// read). When they are all waiting the reader stops reading, and the pipe
/// holds the client back. Their bytes are bounded too: a batch is passed
/// on at 64 KiB, so the queue holds at most about four batches of 64 KiB
/// or one line each.
pub const READ_AHEAD_LINES: usize = (QUEUE_BATCHES + 2) * BATCH_LINES;

impl Pipe {
    /// Starts the reader thread on `input`, with lines of at most
    /// `max_line_bytes` bytes (without the `\n`).
    pub fn new<R: Read + Send + 'static>(input: R, max_line_bytes: usize) -> Pipe {
        let origin = Instant::now();
        let (tx, rx) = mpsc::sync_channel(QUEUE_BATCHES);
        let input = BufReader::with_capacity(BATCH_BYTES, input);
        // Detached: it ends at the end of input, or at its next line once
        // the sidecar is gone.
        thread::spawn(move || read_lines(input, &tx, max_line_bytes, origin));
        Pipe {
            rx,
            batch: std::collections::VecDeque::new(),
            origin,
        }
    }

    /// The next batch, waiting at most until `until`; false when `until`
    /// passed first.
    fn refill(&mut self, until: Option<Duration>) -> bool {
        let received = match until {
            None => self.rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(until) => match until.checked_sub(self.now()).filter(|w| !w.is_zero()) {
                None => self.rx.try_recv().map_err(|e| match e {
                    TryRecvError::Empty => RecvTimeoutError::Timeout,
                    TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
                }),
                Some(wait) => self.rx.recv_timeout(wait),
            },
        };
        match received {
            Ok(batch) => self.batch.extend(batch),
            Err(RecvTimeoutError::Timeout) => return false,
            // The reader is gone without a word: the end.
            Err(RecvTimeoutError::Disconnected) => self.batch.push_back(Arrival {
                at: self.origin.elapsed(),
                item: Item::End,
            }),
        }
        true
    }
}

impl Source for Pipe {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn next(&mut self, until: Option<Duration>) -> Option<Arrival> {
        if self.batch.is_empty() && !self.refill(until) {
            return None;
        }
        self.batch.pop_front()
    }
}

/// Sends every line of `input` (without its `\n`; a line over `max` bytes
/// as [`Item::TooLong`], dropped as it is read), then the end or the read
/// error, in batches: a batch goes when it is full or when the next line
/// is not all read yet. Stops when the receiver is gone.
fn read_lines<R: Read>(
    mut input: BufReader<R>,
    tx: &SyncSender<Vec<Arrival>>,
    max: usize,
    origin: Instant,
) {
    let mut batch = Vec::new();
    let mut batch_bytes = 0;
    let mut line = Vec::new();
    let mut bytes: u64 = 0;
    loop {
        // The next line is not all read: what is read goes first.
        if !batch.is_empty() && !input.buffer().contains(&b'\n') {
            batch_bytes = 0;
            if tx.send(std::mem::take(&mut batch)).is_err() {
                return;
            }
        }
        let (complete, used) = match input.fill_buf() {
            Ok([]) => {
                // A last line without its `\n` counts.
                if bytes > 0 {
                    batch.push(Arrival {
                        at: origin.elapsed(),
                        item: take_line(&mut line, bytes, max),
                    });
                }
                batch.push(Arrival {
                    at: origin.elapsed(),
                    item: Item::End,
                });
                let _ = tx.send(batch);
                return;
            }
            Ok(buf) => {
                let (piece, complete) = match buf.iter().position(|&b| b == b'\n') {
                    Some(end) => (&buf[..end], true),
                    None => (buf, false),
                };
                bytes = bytes.saturating_add(piece.len() as u64);
                if bytes <= max as u64 {
                    line.extend_from_slice(piece);
                } else if !line.is_empty() {
                    // Too long: what was kept goes, the rest is skipped.
                    line = Vec::new();
                }
                (complete, piece.len() + usize::from(complete))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                batch.push(Arrival {
                    at: origin.elapsed(),
                    item: Item::Failed(e),
                });
                let _ = tx.send(batch);
                return;
            }
        };
        input.consume(used);
        if complete {
            batch_bytes += line.len();
            batch.push(Arrival {
                at: origin.elapsed(),
                item: take_line(&mut line, bytes, max),
            });
            bytes = 0;
            if batch.len() == BATCH_LINES || batch_bytes >= BATCH_BYTES {
                batch_bytes = 0;
                if tx.send(std::mem::take(&mut batch)).is_err() {
                    return;
                }
            }
        }
    }
}

/// The line read so far, as an item; `line` is left empty.
fn take_line(line: &mut Vec<u8>, bytes: u64, max: usize) -> Item {
    if bytes > max as u64 {
        Item::TooLong { bytes, limit: max }
    } else {
        Item::Line(std::mem::take(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{HostOptions, RetrySettings};

    const T0: Duration = Duration::ZERO;

    fn run(sidecar: &mut Sidecar<Vec<u8>>, line: &str) -> Vec<String> {
        let before = sidecar.out.len();
        sidecar.feed_line(line.as_bytes(), T0).unwrap();
        String::from_utf8(sidecar.out[before..].to_vec())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn refused_and_malformed_agent_events_answer() {
        let mut s = Sidecar::new(Machine::default(), Vec::new());
        let failed =
            r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#;
        assert_eq!(run(&mut s, failed).len(), 3);
        assert_eq!(
            run(&mut s, failed),
            [
                r#"{"type":"response","command":"agent_end","success":false,"error":"the agent must not run while a retry backoff is pending","code":"agent_run_during_backoff","line":2}"#
            ]
        );
        assert_eq!(
            run(&mut s, r#"{"type":"message_end","id":"m"}"#),
            [
                r#"{"id":"m","type":"response","command":"message_end","success":false,"error":"message: missing (expected an object)","code":"invalid_field","line":3}"#
            ]
        );
        assert_eq!(
            run(
                &mut s,
                r#"{"type":"agent_end","message":{"stopReason":"oops"}}"#
            )[0],
            r#"{"type":"response","command":"agent_end","success":false,"error":"message.stopReason: expected one of \"stop\", \"length\", \"toolUse\", \"error\", \"aborted\", found a string \"oops\"","code":"invalid_field","line":4}"#
        );
        assert_eq!(
            run(&mut s, r#"{"type":"usage_limit_marked"}"#),
            [
                r#"{"type":"response","command":"usage_limit_marked","success":false,"error":"switched: missing (expected a boolean)","code":"invalid_field","line":5}"#
            ]
        );
        // Still in the same backoff.
        assert_eq!(s.machine().retry_attempt(), 1);
        assert!(s.deadline().is_some());
    }

    #[test]
    fn a_key_given_twice_is_refused_and_changes_nothing() {
        let mut s = Sidecar::new(Machine::default(), Vec::new());
        assert_eq!(
            run(&mut s, r#"{"type":"abort_retry","type":"abort","id":"x"}"#),
            [
                r#"{"type":"response","command":"parse","success":false,"error":"duplicate key \"type\" at line 1 column 36","code":"duplicate_key","line":1}"#
            ]
        );
        assert_eq!(
            run(
                &mut s,
                r#"{"type":"set_retry_settings","settings":{"baseDelayMs":-1,"baseDelayMs":5}}"#
            ),
            [
                r#"{"type":"response","command":"parse","success":false,"error":"duplicate key \"baseDelayMs\" in settings at line 1 column 74","code":"duplicate_key","line":2}"#
            ]
        );
        assert_eq!(s.machine().settings(), RetrySettings::DEFAULT);
    }

    #[test]
    fn the_usage_limit_answer_carries_the_marked_text() {
        let host = HostOptions::default().with_credential_store(true);
        let mut s = Sidecar::new(Machine::new(RetrySettings::DEFAULT, host), Vec::new());
        let limited = r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"usage_limit_reached retry-after-ms: 1500"}}"#;
        assert_eq!(
            run(&mut s, limited),
            [r#"{"type":"action","action":"mark_usage_limit","retryAfterMs":1500}"#]
        );
        assert_eq!(
            run(&mut s, r#"{"type":"usage_limit_marked","switched":true}"#),
            [
                r#"{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":0,"errorMessage":"usage_limit_reached retry-after-ms: 1500"}"#,
                r#"{"type":"action","action":"drop_trailing_error"}"#,
                r#"{"type":"action","action":"sleep","ms":0}"#,
            ]
        );
        // A late answer is ignored.
        assert!(run(&mut s, r#"{"type":"usage_limit_marked","switched":false}"#).is_empty());
    }

    #[test]
    fn commands_answer_first() {
        let mut s = Sidecar::new(Machine::default(), Vec::new());
        assert_eq!(
            run(&mut s, r#"{"type":"abort","id":"x"}"#),
            [
                r#"{"id":"x","type":"response","command":"abort","success":true}"#,
                r#"{"type":"action","action":"abort_agent"}"#,
            ]
        );
        assert_eq!(
            run(
                &mut s,
                r#"{"type":"set_retry_settings","settings":{"maxRetries":1,"bogus":2}}"#
            ),
            [
                r#"{"type":"response","command":"set_retry_settings","success":false,"error":"retry: unknown key \"bogus\"","code":"invalid_settings","line":2}"#
            ]
        );
        assert_eq!(s.machine().settings(), RetrySettings::DEFAULT);
        assert!(run(&mut s, "  \r").is_empty());
        s.feed_line(b"{\"type\":\"abort\xff\"}", T0).unwrap();
        let out = String::from_utf8(s.into_inner()).unwrap();
        let last = out.lines().last().unwrap();
        assert!(
            last.starts_with(
                r#"{"type":"response","command":"parse","success":false,"error":"invalid UTF-8: "#
            ) && last.ends_with(r#","code":"invalid_json","line":4}"#),
            "{last}"
        );
    }

    #[test]
    fn the_reader_bounds_long_lines() {
        let mut input = b"ab\n".to_vec();
        input.extend(vec![b'x'; 100_000]);
        input.extend(b"\ncd\r\nlast");
        // Three bytes per read: lines arrive in pieces.
        struct Trickle(io::Cursor<Vec<u8>>);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(3);
                self.0.read(&mut buf[..n])
            }
        }
        let mut pipe = Pipe::new(Trickle(io::Cursor::new(input)), 10);
        let mut items = Vec::new();
        loop {
            let item = pipe.next(None).unwrap().item;
            let end = matches!(item, Item::End);
            items.push(format!("{item:?}"));
            if end {
                break;
            }
        }
        assert_eq!(
            items,
            [
                format!("{:?}", Item::Line(b"ab".to_vec())),
                format!(
                    "{:?}",
                    Item::TooLong {
                        bytes: 100_000,
                        limit: 10
                    }
                ),
                format!("{:?}", Item::Line(b"cd\r".to_vec())),
                format!("{:?}", Item::Line(b"last".to_vec())),
                format!("{:?}", Item::End),
            ]
        );
        // Exactly the limit is accepted.
        let mut pipe = Pipe::new(&b"0123456789\n"[..], 10);
        assert!(matches!(pipe.next(None).unwrap().item, Item::Line(l) if l.len() == 10));
    }
}
