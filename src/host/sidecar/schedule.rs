//! The sidecar's schedule: the machine, its backoff timer on the source's
//! clock, and the fairness rule of [`serve`]: a due timer fires before any
//! line that arrived at or after its deadline.

use std::io::{self, Write};
use std::time::Duration;

use super::pipe::{LineEvent, Source};
use super::protocol::{self, output_line, Request};
use crate::host::budget_store::{self, BudgetStore};
use crate::host::thread::after;
use crate::host::timer::BackoffTimer;
use crate::machine::{Input, Machine, Refused};
use crate::output::Outputs;
use crate::owned::InputBuf;
#[cfg(feature = "rules")]
use crate::rules::Rules;
use crate::wire::json::InputLine;
use crate::wire::rpc::{Envelope, ErrorCode, Response};

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
    budget: Option<Box<dyn SidecarStore>>,
}

/// A budget store the sidecar can own and show in its `Debug` output (a
/// store names itself there without its credentials).
trait SidecarStore: BudgetStore + std::fmt::Debug + Send {}

impl<T: BudgetStore + std::fmt::Debug + Send> SidecarStore for T {}

impl<W: Write> Sidecar<W> {
    /// A sidecar for `machine`, writing to `out` (flushed after every line
    /// fed and every timer fired). Its time is the caller's ([`serve`]
    /// takes it from the [`Source`]'s clock).
    pub fn new(machine: Machine, out: W) -> Self {
        Sidecar {
            out,
            machine,
            timer: BackoffTimer::new(),
            line: 0,
            marked_error: None,
            #[cfg(feature = "rules")]
            rules: None,
            budget: None,
        }
    }

    /// The same sidecar deciding every `agent_end` with a retry budget
    /// (spec §11.4), in any [`BudgetStore`]: a
    /// [`RetryBudget`](crate::RetryBudget) of its own, an
    /// `Arc<Mutex<RetryBudget>>` that sidecars of one process share, or a
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
    pub fn with_budget(
        mut self,
        budget: impl BudgetStore + std::fmt::Debug + Send + 'static,
    ) -> Self {
        self.budget = Some(Box::new(budget));
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
        let mut held = Vec::new();
        let response = match protocol::read_line(line, crate::host::thread::clock_ms(now)) {
            Request::Blank => return Ok(()),
            Request::Answer(response) => Some(response),
            Request::Command(envelope, command) => {
                Some(match command.input().map(|input| self.handle(input, now)) {
                    Some(Err(refused)) => envelope.refused(refused),
                    Some(Ok(outputs)) => {
                        held.extend(outputs.iter().filter_map(output_line));
                        command.answer(&envelope, &self.machine)
                    }
                    None => command.answer(&envelope, &self.machine),
                })
            }
            Request::Event(envelope, event) => self.agent_event(&envelope, &event, now, &mut held),
        };
        if let Some(response) = response {
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
        self.write_response(protocol::too_long(bytes, limit))?;
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
    /// docs](super#time-and-fairness)) and writes its lines.
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
    /// in order: `sleep` arms the timer (at `now` plus its wait),
    /// `cancel_timer` disarms it.
    fn handle<'a>(&mut self, input: Input<'a>, now: Duration) -> Result<Outputs<'a>, Refused> {
        let outputs = match (&mut self.budget, input) {
            // Never refused, never a budget's (spec §12.2 rule 2): the
            // machine's own entry point, a store while a watch is pending.
            (_, Input::StreamEvent { now_ms }) => {
                crate::host::stream_event(&mut self.machine, now_ms)
            }
            (Some(store), _) => {
                let (outputs, store_error) =
                    budget_store::handle(&mut self.machine, input, &mut **store)?;
                if let Some(error) = store_error {
                    let line = protocol::budget_store_error_line(&error.to_string());
                    // A failed write surfaces at the next line's flush.
                    let _ = writeln!(self.out, "{line}");
                }
                outputs
            }
            (None, _) => self.machine.handle(input)?,
        };
        // The backoff or the stream's watch (spec §12.2): never both.
        let pending = self
            .machine
            .pending_timer()
            .or(self.machine.pending_watch());
        self.timer.carry_out(&outputs, pending, |ms| after(now, ms));
        Ok(outputs)
    }

    fn write_outputs(&mut self, outputs: &Outputs<'_>) -> io::Result<()> {
        for line in outputs.iter().filter_map(output_line) {
            writeln!(self.out, "{line}")?;
        }
        Ok(())
    }

    /// Writes a response; a failure names the line.
    fn write_response(&mut self, response: Response) -> io::Result<()> {
        writeln!(self.out, "{}", protocol::response_line(response, self.line))
    }

    /// An agent event: no response unless it is malformed or refused.
    fn agent_event(
        &mut self,
        envelope: &Envelope,
        event: &InputLine,
        now: Duration,
        held: &mut Vec<String>,
    ) -> Option<Response> {
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
        match event {
            InputLine::Input(InputBuf::AgentEnd { message, .. }) if awaits => {
                self.marked_error = message.error_message.clone();
            }
            _ if !awaits => self.marked_error = None,
            _ => {}
        }
        None
    }
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
        match arrival.event {
            LineEvent::Line(line) => sidecar.feed_line(&line, now)?,
            LineEvent::TooLong { bytes, limit } => sidecar.too_long(bytes, limit)?,
            LineEvent::End => return sidecar.end_of_input(now),
            LineEvent::Failed(e) => {
                sidecar.end_of_input(now)?;
                return Err(e);
            }
        }
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

    /// The lines written for `line` arriving at `now`.
    fn run_at(sidecar: &mut Sidecar<Vec<u8>>, line: &str, now: Duration) -> Vec<String> {
        let before = sidecar.out.len();
        sidecar.feed_line(line.as_bytes(), now).unwrap();
        String::from_utf8(sidecar.out[before..].to_vec())
            .unwrap()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn stream_lines_are_stamped_with_the_sidecar_clock_and_watched_like_a_sleep() {
        let ms = Duration::from_millis;
        let settings = RetrySettings::DEFAULT
            .with_first_event_timeout_ms(1000)
            .with_idle_timeout_ms(400);
        let mut s = Sidecar::new(Machine::new(settings, HostOptions::DEFAULT), Vec::new());
        // A request at 5 s on the sidecar's clock: a watch due at 6 s.
        let start = run_at(&mut s, r#"{"type":"stream_start"}"#, ms(5000));
        assert_eq!(start, [r#"{"type":"action","action":"watch","ms":1000}"#]);
        assert_eq!(s.deadline(), Some(ms(6000)));
        // Progress at 5.9 s, stamped by the clock: a store.
        assert!(run_at(&mut s, r#"{"type":"stream_event"}"#, ms(5900)).is_empty());
        // The watch fires at 6 s: 100 ms of silence, 300 ms left.
        assert!(s.fire_due(ms(6000)).unwrap());
        assert_eq!(s.deadline(), Some(ms(6300)));
        // Only pings from here: at 6.3 s the stream stalled.
        let before = s.out.len();
        assert!(s.fire_due(ms(6300)).unwrap());
        let out = String::from_utf8(s.out[before..].to_vec()).unwrap();
        assert!(
            out.ends_with("{\"type\":\"action\",\"action\":\"abort_agent\"}\n"),
            "{out}"
        );
        assert_eq!(s.machine().stalled_ms(), Some(400));
        // A line with its own nowMs keeps it; a bad one is refused.
        let refused = run(&mut s, r#"{"type":"stream_event","nowMs":-1}"#);
        assert!(refused[0].contains(r#""success":false"#), "{refused:?}");
        assert!(
            run(&mut s, r#"{"type":"stream_start","nowMs":7}"#)[0].contains(r#""action":"watch""#)
        );
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
}
