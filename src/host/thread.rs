//! A host on std (feature `std`): [`ThreadDriver`] runs the machine on
//! one thread, with a backoff timer on a [`Clock`] (real time unless told
//! otherwise) and inputs from a channel.
//!
//! The driver adds no policy: it carries out the two timer outputs itself
//! ([`Output::Sleep`](crate::Output::Sleep) sets a deadline,
//! [`Output::CancelTimer`](crate::Output::CancelTimer) clears it, in a
//! [`BackoffTimer`]),
//! feeds [`Input::TimerFired`] when the deadline passes, and delivers what
//! every input did as a [`Step`] (the shape of the embassy driver too):
//! the host carries out the other outputs, in order. Every decision stays
//! in the [`Machine`].
//!
//! One thread owns the driver and an [`mpsc::Receiver`]; other threads (a
//! stdin reader, a key reader, an agent) send it messages of any type `T`.
//! [`ThreadDriver::wait`] blocks for a message or the deadline, whichever
//! comes first; [`ThreadDriver::run`] loops on it and gives each [`MessageOrTimer`] (a
//! message, or the step of a fired timer) to a callback. A message becomes
//! a step with [`ThreadDriver::handle`]:
//!
//! ```
//! use std::ops::ControlFlow;
//! use std::sync::mpsc;
//! use autoretry::{AssistantMessage, HostOptions, Input, Machine, Output, RetrySettings, StopReason};
//! use autoretry::host::thread::{ThreadDriver, MessageOrTimer};
//!
//! // What the agent sends (owned: it crosses threads).
//! enum Msg { Failed(String), Answered }
//!
//! let (tx, rx) = mpsc::channel();
//! let agent = tx.clone();
//! tx.send(Msg::Failed("503 Service Unavailable".into())).unwrap();
//!
//! let settings = RetrySettings::DEFAULT.with_base_delay_ms(5);
//! let mut driver = ThreadDriver::new(Machine::new(settings, HostOptions::default()));
//! let mut log = Vec::new();
//! driver.run(&rx, |driver, next| {
//!     let msg; // outlives the step, which may borrow its text
//!     let step = match next {
//!         // The backoff (5 ms) is over: the driver fed `timer_fired`.
//!         MessageOrTimer::Fired(step) => step,
//!         MessageOrTimer::Message(m) => {
//!             msg = m;
//!             let message = match &msg {
//!                 Msg::Failed(text) => AssistantMessage::error(text),
//!                 Msg::Answered => AssistantMessage::new(StopReason::Stop),
//!             };
//!             driver.handle(Input::AgentEnd { message, now_ms: None })
//!         }
//!     };
//!     let mut over = false;
//!     for output in step.outputs.as_deref().expect("in turn") {
//!         match output {
//!             // The agent re-runs and answers well.
//!             Output::ContinueAgent => agent.send(Msg::Answered).unwrap(),
//!             // The prompt is over.
//!             Output::CheckCompaction => over = true,
//!             _ => {}
//!         }
//!         log.push(output.type_name());
//!     }
//!     if over { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
//! });
//! assert_eq!(log, ["emit", "drop_trailing_error", "sleep", "continue_agent",
//!                  "emit", "settled", "check_compaction"]);
//! ```
//!
//! # Fairness and cancellation races
//!
//! The rule of every host ([`host::timer`](crate::host::timer)): a due
//! timer fires before any message that arrived at or after its deadline.
//! [`ThreadDriver::wait`] reads the clock before it takes a message: a
//! timer already due fires first, so under a stream of messages that never
//! pauses `continue_agent` is never later than the message in hand when
//! the deadline passed. A cancellation and the deadline can meet; the
//! driver never lets that produce a continue after a cancel, or two
//! continues:
//!
//! - a message the driver takes before the deadline goes first: an
//!   `abort_retry` sent while it waits, in time, cancels the timer (the
//!   machine answers `cancel_timer`, which clears the deadline); one taken
//!   after the timer fired ends the continued run's chain instead;
//! - the deadline is cleared before [`Input::TimerFired`] is fed, so it
//!   fires once;
//! - the machine ignores a `timer_fired` for any timer but the pending one,
//!   so even a stale id could not continue the agent.

use std::ops::ControlFlow;
use std::sync::mpsc::{self, RecvTimeoutError, TryRecvError};
use std::time::Duration;

use crate::host::budget_store::BudgetStore;
use crate::host::clock::{Clock, SystemClock};
use crate::host::timer::BackoffTimer;
use crate::host::{awaits_answer, Step};
use crate::machine::{Input, Machine, RetryState};
use crate::output::TimerId;

/// Why [`ThreadDriver::wait`] returned.
///
/// ```
/// use std::sync::mpsc;
/// use autoretry::{Machine, host::thread::{ThreadDriver, WaitOutcome}};
/// let (tx, rx) = mpsc::channel();
/// tx.send("hello").unwrap();
/// let mut driver = ThreadDriver::new(Machine::default());
/// assert_eq!(driver.wait(&rx, None), WaitOutcome::Message("hello"));
/// drop(tx);
/// assert_eq!(driver.wait(&rx, None), WaitOutcome::Closed);
/// ```
// A step is moved out by value, as `handle` returns it; boxing would
// allocate once per fired timer for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WaitOutcome<T> {
    /// A message arrived; the caller feeds it with [`ThreadDriver::handle`].
    Message(T),
    /// The backoff deadline passed: the driver fed [`Input::TimerFired`];
    /// the step's outputs (`continue_agent`) are the caller's to carry out.
    Fired(Step<'static>),
    /// The `until` instant passed first (for a caller's own ticks, such as a
    /// spinner).
    Until,
    /// Every sender is gone: no more input will come.
    Closed,
}

/// What [`ThreadDriver::run`] hands its callback: a message, or the step of
/// a fired timer.
///
/// ```
/// use std::ops::ControlFlow;
/// use std::sync::mpsc;
/// use autoretry::{Machine, host::thread::{ThreadDriver, MessageOrTimer}};
/// let (tx, rx) = mpsc::channel();
/// tx.send(7).unwrap();
/// drop(tx);
/// let mut seen = Vec::new();
/// ThreadDriver::new(Machine::default()).run(&rx, |_, next| {
///     seen.push(next);
///     ControlFlow::Continue(())
/// });
/// assert_eq!(seen, [MessageOrTimer::Message(7)]);
/// ```
// A step is moved out by value, as `handle` returns it; boxing would
// allocate once per fired timer for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MessageOrTimer<T> {
    /// A message arrived; the callback feeds it with [`ThreadDriver::handle`].
    Message(T),
    /// The backoff deadline passed: the driver fed [`Input::TimerFired`];
    /// the step's outputs (`continue_agent`) are the callback's to carry out.
    Fired(Step<'static>),
}

/// A [`Machine`] with a backoff timer on a [`Clock`]: [`SystemClock`]
/// (real time) from [`ThreadDriver::new`], any other from
/// [`ThreadDriver::with_clock`]. Instants are [`Duration`]s since the
/// clock's origin ([`Clock::now`]).
///
/// ```
/// use autoretry::{AssistantMessage, Input, Machine, host::thread::ThreadDriver};
/// let mut driver = ThreadDriver::new(Machine::default());
/// let mut outputs = Vec::new();
/// let failed = Input::AgentEnd { message: AssistantMessage::error("overloaded"), now_ms: None };
/// outputs.extend(driver.handle(failed).outputs.unwrap().iter().map(|o| o.type_name()));
/// assert!(driver.deadline().is_some()); // 2 s from now
/// outputs.extend(driver.handle(Input::AbortRetry).outputs.unwrap().iter().map(|o| o.type_name()));
/// assert!(driver.deadline().is_none());
/// assert_eq!(outputs, ["emit", "drop_trailing_error", "sleep",
///                      "cancel_timer", "emit", "settled", "check_compaction"]);
/// ```
#[derive(Clone, Debug)]
pub struct ThreadDriver<C: Clock = SystemClock> {
    machine: Machine,
    timer: BackoffTimer<Duration>,
    clock: C,
    /// The error text of the `agent_end` whose decision awaits an answer
    /// (`mark_usage_limit`, `switch_model`), kept until it is answered.
    decision: Option<String>,
}

impl ThreadDriver {
    /// A driver for this machine, in real time ([`SystemClock`]). A
    /// machine in a backoff (restored from a [`Snapshot`](crate::Snapshot),
    /// or moved) has its timer due at once unless [`ThreadDriver::rearm`]
    /// gives the time left.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, Machine, host::{clock::Clock, thread::ThreadDriver}};
    /// let mut machine = Machine::default();
    /// let _ = machine.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
    /// let driver = ThreadDriver::new(Machine::restore(machine.snapshot()).unwrap());
    /// assert!(driver.deadline().is_some_and(|at| at <= driver.clock().now()));
    /// ```
    pub fn new(machine: Machine) -> Self {
        ThreadDriver::with_clock(machine, SystemClock::new())
    }
}

impl<C: Clock> ThreadDriver<C> {
    /// A driver for this machine on `clock` (a
    /// [`VirtualClock`](crate::host::clock::VirtualClock) in tests, a
    /// scaled clock in `autoretry simulate-in-process --time-scale`). The machine's
    /// outputs and events keep their own figures; only the clock says how
    /// long a millisecond of backoff takes.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{AssistantMessage, Input, Machine};
    /// use autoretry::host::{clock::{Clock, VirtualClock}, thread::ThreadDriver};
    /// let clock = VirtualClock::new();
    /// clock.advance(Duration::from_secs(60));
    /// let mut driver = ThreadDriver::with_clock(Machine::default(), clock);
    /// driver.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
    /// assert_eq!(driver.deadline(), Some(Duration::from_secs(62)));
    /// ```
    pub fn with_clock(machine: Machine, clock: C) -> Self {
        let mut timer = BackoffTimer::new();
        if let Some(id) = machine.pending_timer() {
            timer.arm(id, Some(clock.now()));
        }
        ThreadDriver {
            machine,
            timer,
            clock,
            decision: None,
        }
    }

    /// Gives the driver the error text of the `agent_end` whose decision
    /// the machine awaits an answer to, for a machine restored while it
    /// awaits one (the host kept the text next to the snapshot), so that
    /// [`ThreadDriver::usage_limit_marked`] and
    /// [`ThreadDriver::model_switched`] answer it.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, HostOptions, Input, Machine, RetrySettings, host::thread::ThreadDriver};
    /// let settings = RetrySettings::DEFAULT.with_max_retries(0).with_model_fallback(true);
    /// let mut machine = Machine::new(settings, HostOptions::DEFAULT);
    /// let _ = machine.handle(Input::agent_end(AssistantMessage::error("529 overloaded")));
    /// let mut driver = ThreadDriver::new(Machine::restore(machine.snapshot()).unwrap());
    /// driver.keep_decision_text("529 overloaded");
    /// assert!(driver.model_switched(true).outputs.is_ok());
    /// assert!(driver.state().is_retrying);
    /// ```
    pub fn keep_decision_text(&mut self, error_message: impl Into<String>) {
        self.decision = Some(error_message.into());
    }

    /// Gives the machine's pending timer `ms` milliseconds from now on the
    /// driver's clock, for a machine restored in a backoff: the host kept
    /// its own deadline next to the snapshot and passes the time left (0
    /// when it has passed). Returns the timer's id; `None`, changing
    /// nothing, when no timer is pending.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{AssistantMessage, Input, Machine, host::{clock::Clock, thread::ThreadDriver}};
    /// let mut machine = Machine::default();
    /// let _ = machine.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
    /// let mut driver = ThreadDriver::new(Machine::restore(machine.snapshot()).unwrap());
    /// assert_eq!(driver.rearm(1500), machine.pending_timer());
    /// assert!(driver.deadline().unwrap() > driver.clock().now() + Duration::from_millis(1000));
    /// assert_eq!(ThreadDriver::new(Machine::default()).rearm(1500), None);
    /// ```
    pub fn rearm(&mut self, ms: u64) -> Option<TimerId> {
        let timer = self.machine.pending_timer()?;
        let now = self.clock.now();
        self.timer.arm(timer, after(now, ms));
        Some(timer)
    }

    /// The driver's clock.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// The machine (for its queries: [`Machine::state`], settings, ...).
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The machine's query surface.
    pub fn state(&self) -> RetryState {
        self.machine.state()
    }

    /// When the pending backoff timer fires, on the driver's clock; `None`
    /// when no timer is pending.
    pub fn deadline(&self) -> Option<Duration> {
        self.timer.deadline()
    }

    /// Feeds one input to the machine and carries out its timer outputs,
    /// in order: a `sleep` starts the deadline, a `cancel_timer` clears it.
    /// Returns the [`Step`]; every other output in it is the caller's to
    /// carry out. A refused input changes nothing.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, Machine, Output, Refused, StopReason, host::thread::ThreadDriver};
    /// let mut driver = ThreadDriver::new(Machine::default());
    /// let failed = Input::AgentEnd { message: AssistantMessage::error("429 Too Many Requests"), now_ms: None };
    /// let step = driver.handle(failed);
    /// assert_eq!(step.input, failed);
    /// assert!(matches!(step.outputs.unwrap()[2], Output::Sleep { ms: 2000, .. }));
    /// let early = Input::MessageEnd { message: AssistantMessage::new(StopReason::Stop) };
    /// assert_eq!(driver.handle(early).outputs, Err(Refused::AgentRunDuringBackoff));
    /// ```
    pub fn handle<'a>(&mut self, input: Input<'a>) -> Step<'a> {
        let step = Step::of(&mut self.machine, input);
        self.after_step(step)
    }

    /// [`ThreadDriver::handle`] with a retry budget that the sessions of
    /// several threads (or processes) share (spec §11.4), in any
    /// [`BudgetStore`]: an `Arc<Mutex<RetryBudget>>` cloned into each
    /// thread, a `&Mutex<RetryBudget>`, a budget of its own by `&mut`. The
    /// store is used for this input only; when it fails, the input is
    /// decided without the budget and [`Step::budget_error`] says why.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use autoretry::{AssistantMessage, Input, Machine, RetryBudget, host::thread::ThreadDriver};
    /// let shared = Arc::new(Mutex::new(RetryBudget::new(4, 500).unwrap()));
    /// let fail = Input::agent_end(AssistantMessage::error("529 overloaded_error"));
    /// // A session on a thread of its own.
    /// let session = |shared: Arc<Mutex<RetryBudget>>| std::thread::spawn(move || {
    ///     let mut driver = ThreadDriver::new(Machine::default());
    ///     driver.handle_with_budget(fail, &shared).state.is_retrying
    /// });
    /// assert!(session(shared.clone()).join().unwrap()); // 4 → 3: retries
    /// assert!(!session(shared.clone()).join().unwrap()); // 3 → 2 (at most half): throttled
    /// assert_eq!(shared.lock().unwrap().tokens_milli(), 2000);
    /// ```
    pub fn handle_with_budget<'a>(
        &mut self,
        input: Input<'a>,
        budget: impl BudgetStore,
    ) -> Step<'a> {
        let step = Step::with_budget(&mut self.machine, input, budget);
        self.after_step(step)
    }

    /// Carries out a step's timer outputs, and keeps the error text of a
    /// decision that awaits an answer until it is answered.
    fn after_step<'a>(&mut self, step: Step<'a>) -> Step<'a> {
        carry_out(&mut self.timer, &self.clock, &self.machine, &step);
        if awaits_answer(&self.machine) {
            if let (Input::AgentEnd { message, .. }, Ok(_)) = (step.input, &step.outputs) {
                self.decision = Some(message.error_message.unwrap_or_default().into());
            }
        } else {
            self.decision = None;
        }
        step
    }

    /// Answers `mark_usage_limit` ([`Output::MarkUsageLimit`]): whether
    /// the host switched to another credential. The driver gives the
    /// answer the error text of the decision that asked, which it kept
    /// (see [`Input::UsageLimitMarked`]); otherwise as
    /// [`ThreadDriver::handle`].
    ///
    /// [`Output::MarkUsageLimit`]: crate::Output::MarkUsageLimit
    ///
    /// ```
    /// use autoretry::{AssistantMessage, HostOptions, Input, Machine, Output, RetrySettings};
    /// use autoretry::host::thread::ThreadDriver;
    /// let host = HostOptions::DEFAULT.with_credential_store(true);
    /// let mut driver = ThreadDriver::new(Machine::new(RetrySettings::DEFAULT, host));
    /// let limited = String::from("429 usage_limit_reached");
    /// let outputs = driver.handle(Input::agent_end(AssistantMessage::error(&limited))).outputs.unwrap();
    /// assert!(matches!(outputs[..], [Output::MarkUsageLimit { .. }]));
    /// drop(outputs);
    /// drop(limited); // the driver kept the text
    /// let step = driver.usage_limit_marked(true);
    /// assert!(matches!(step.outputs.unwrap()[0], Output::Emit(_)));
    /// ```
    pub fn usage_limit_marked(&mut self, switched: bool) -> Step<'_> {
        self.answer(|error_message| Input::UsageLimitMarked {
            switched,
            error_message,
        })
    }

    /// Answers `switch_model` ([`Output::SwitchModel`], spec §11.3):
    /// whether the host switched to another model. The driver gives the
    /// answer the error text of the decision that asked, which it kept
    /// (see [`Input::ModelSwitched`]); otherwise as [`ThreadDriver::handle`].
    ///
    /// [`Output::SwitchModel`]: crate::Output::SwitchModel
    ///
    /// ```
    /// use autoretry::{AssistantMessage, HostOptions, Input, Machine, Output, RetrySettings};
    /// use autoretry::host::thread::ThreadDriver;
    /// let settings = RetrySettings::DEFAULT.with_max_retries(0).with_model_fallback(true);
    /// let mut driver = ThreadDriver::new(Machine::new(settings, HostOptions::DEFAULT));
    /// let step = driver.handle(Input::agent_end(AssistantMessage::error("529 overloaded")));
    /// assert!(matches!(step.outputs.unwrap()[..], [Output::SwitchModel { .. }]));
    /// let step = driver.model_switched(true);
    /// assert_eq!(step.input, Input::model_switched(true, "529 overloaded"));
    /// assert!(matches!(step.outputs.unwrap()[2], Output::Sleep { ms: 0, .. }));
    /// ```
    pub fn model_switched(&mut self, switched: bool) -> Step<'_> {
        self.answer(|error_message| Input::ModelSwitched {
            switched,
            error_message,
        })
    }

    /// Feeds the answer `make` builds from the kept decision's text. The
    /// text stays kept while the machine awaits another answer to the same
    /// decision (a model not switched may ask to mark a usage limit); the
    /// next [`ThreadDriver::handle`] forgets it once none is awaited.
    fn answer(&mut self, make: impl FnOnce(&str) -> Input<'_>) -> Step<'_> {
        let text = self.decision.as_deref().unwrap_or_default();
        let step = Step::of(&mut self.machine, make(text));
        carry_out(&mut self.timer, &self.clock, &self.machine, &step);
        step
    }

    /// `stream_start` (spec §12.2) at the driver's clock, in whole
    /// milliseconds since its origin: the host sent a request to the
    /// provider. A `watch` it gives runs on the same timer as a backoff
    /// ([`ThreadDriver::deadline`], [`ThreadDriver::fire_due`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{AssistantMessage, HostOptions, Input, Machine, Output, RetrySettings, StopReason};
    /// use autoretry::host::{clock::VirtualClock, thread::ThreadDriver};
    /// let settings = RetrySettings::DEFAULT.with_first_event_timeout_ms(500).with_idle_timeout_ms(500);
    /// let clock = VirtualClock::new();
    /// let mut driver = ThreadDriver::with_clock(Machine::new(settings, HostOptions::DEFAULT), clock.clone());
    /// assert!(matches!(driver.stream_start().outputs.unwrap()[..], [Output::Watch { ms: 500, .. }]));
    /// clock.advance(Duration::from_millis(300));
    /// assert!(driver.stream_event().outputs.unwrap().is_empty()); // progress at 300 ms
    /// // Only pings from here: the watch fires at 500 ms, then at 800 ms.
    /// let step = driver.fire_due(driver.deadline().unwrap()).unwrap();
    /// assert!(matches!(step.outputs.unwrap()[..], [Output::Watch { ms: 300, .. }]));
    /// clock.advance(Duration::from_millis(500));
    /// let step = driver.fire_due(clock.now()).unwrap();
    /// assert_eq!(step.outputs.unwrap()[..], [Output::AbortAgent]);
    /// # use autoretry::host::clock::Clock;
    /// ```
    pub fn stream_start(&mut self) -> Step<'static> {
        let now_ms = clock_ms(self.clock.now());
        self.handle(Input::StreamStart { now_ms })
    }

    /// `stream_event` (spec §12.2) at the driver's clock: the host received
    /// an event of the answer that shows progress (never a keep-alive
    /// ping). While the stream's watch is pending it only stores the time.
    pub fn stream_event(&mut self) -> Step<'static> {
        let now_ms = clock_ms(self.clock.now());
        let step = Step::stream_event(&mut self.machine, now_ms);
        self.after_step(step)
    }

    /// Fires the pending timer if its deadline is at or before `now` (on
    /// the driver's clock): clears it, feeds [`Input::TimerFired`] and
    /// returns the step (its outputs are the caller's to carry out). `None`
    /// when nothing was due.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::{AssistantMessage, Input, Machine, Output, host::thread::ThreadDriver};
    /// let mut driver = ThreadDriver::new(Machine::default());
    /// driver.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
    /// let at = driver.deadline().unwrap();
    /// assert_eq!(driver.fire_due(at - Duration::from_millis(1)), None);
    /// let step = driver.fire_due(at).unwrap();
    /// assert!(matches!(step.input, Input::TimerFired { .. }));
    /// assert_eq!(step.outputs.unwrap()[..], [Output::ContinueAgent]);
    /// assert_eq!(driver.fire_due(at), None); // one-shot
    /// ```
    pub fn fire_due(&mut self, now: Duration) -> Option<Step<'static>> {
        let timer = self.timer.take_due(now)?;
        // The machine checks the id; `TimerFired` is never refused.
        Some(self.handle(Input::TimerFired { timer }))
    }

    /// Forgets the pending timer without telling the machine (which stays
    /// in its backoff): for a host that shuts down. Returns its id.
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, Machine, host::thread::ThreadDriver};
    /// let mut driver = ThreadDriver::new(Machine::default());
    /// driver.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
    /// assert_eq!(driver.stop_timer(), driver.machine().pending_timer());
    /// assert_eq!(driver.deadline(), None);
    /// ```
    pub fn stop_timer(&mut self) -> Option<TimerId> {
        self.timer.disarm()
    }

    /// Blocks until a message arrives, the backoff deadline passes (then the
    /// timer is fired, see [`ThreadDriver::fire_due`]), `until` passes (on
    /// the driver's clock), or the channel closes. A timer already due when
    /// it is called fires before any message is taken (the message may have
    /// come after the deadline); while it blocks, whichever comes first goes
    /// first.
    ///
    /// ```
    /// use std::sync::mpsc;
    /// use std::time::Duration;
    /// use autoretry::{AssistantMessage, Input, Machine, Output, RetrySettings, HostOptions};
    /// use autoretry::host::{clock::Clock, thread::{ThreadDriver, WaitOutcome}};
    /// let (_tx, rx) = mpsc::channel::<()>();
    /// let settings = RetrySettings::DEFAULT.with_base_delay_ms(2);
    /// let mut driver = ThreadDriver::new(Machine::new(settings, HostOptions::DEFAULT));
    /// driver.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
    /// let WaitOutcome::Fired(step) = driver.wait(&rx, None) else { panic!("the timer fires") };
    /// assert_eq!(step.outputs.unwrap()[..], [Output::ContinueAgent]);
    /// let soon = driver.clock().now() + Duration::from_millis(1);
    /// assert_eq!(driver.wait(&rx, Some(soon)), WaitOutcome::Until);
    /// ```
    pub fn wait<T>(&mut self, rx: &mpsc::Receiver<T>, until: Option<Duration>) -> WaitOutcome<T> {
        loop {
            // A due timer first: a message queued now may have come after
            // the deadline.
            let now = self.clock.now();
            if let Some(step) = self.fire_due(now) {
                return WaitOutcome::Fired(step);
            }
            match rx.try_recv() {
                Ok(message) => return WaitOutcome::Message(message),
                Err(TryRecvError::Disconnected) => return WaitOutcome::Closed,
                Err(TryRecvError::Empty) => {}
            }
            if until.is_some_and(|until| until <= now) {
                return WaitOutcome::Until;
            }
            let next = match (self.deadline(), until) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            match self.clock.recv_until(rx, next) {
                Ok(message) => return WaitOutcome::Message(message),
                Err(RecvTimeoutError::Disconnected) => return WaitOutcome::Closed,
                Err(RecvTimeoutError::Timeout) => {}
            }
        }
    }

    /// Runs until the channel closes or `on_each` breaks: waits as
    /// [`ThreadDriver::wait`] does and gives each message, and each fired
    /// timer's step, to `on_each` (which feeds a message to the machine
    /// with [`ThreadDriver::handle`] and carries out the outputs). On
    /// return, the pending timer is stopped ([`ThreadDriver::stop_timer`]):
    /// nothing fires after the run. See the [module docs](self) for a
    /// whole loop.
    pub fn run<T>(
        &mut self,
        rx: &mpsc::Receiver<T>,
        mut on_each: impl FnMut(&mut ThreadDriver<C>, MessageOrTimer<T>) -> ControlFlow<()>,
    ) {
        loop {
            let next = match self.wait(rx, None) {
                WaitOutcome::Message(message) => MessageOrTimer::Message(message),
                WaitOutcome::Fired(step) => MessageOrTimer::Fired(step),
                WaitOutcome::Until => continue,
                WaitOutcome::Closed => break,
            };
            if on_each(self, next).is_break() {
                break;
            }
        }
        self.stop_timer();
    }
}

/// Carries out the timer outputs of `step`, in order: a `sleep` starts
/// the deadline (the clock is read only then), a `cancel_timer` clears it.
fn carry_out<C: Clock>(
    timer: &mut BackoffTimer<Duration>,
    clock: &C,
    machine: &Machine,
    step: &Step<'_>,
) {
    if let Ok(outputs) = &step.outputs {
        // The backoff or the stream's watch (spec §12.2): never both.
        let pending = machine.pending_timer().or(machine.pending_watch());
        // The clock is read only where an output arms the timer.
        timer.carry_out(outputs, pending, |ms| after(clock.now(), ms));
    }
}

/// A reading of a driver's clock in whole milliseconds since its origin,
/// for the stream's `nowMs` (saturating at `u64::MAX`).
pub(crate) fn clock_ms(now: Duration) -> u64 {
    u64::try_from(now.as_millis()).unwrap_or(u64::MAX)
}

/// The instant `ms` milliseconds after `now` on a host's clock (`None`,
/// never due, only beyond `Duration`'s range, which no `u64` of
/// milliseconds reaches from a clock's first 584 years). The sidecar's
/// deadlines too.
pub(crate) fn after(now: Duration, ms: u64) -> Option<Duration> {
    now.checked_add(Duration::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::clock::VirtualClock;
    use crate::{AssistantMessage, Output, Refused, RetrySettings, StopReason};
    use std::thread;
    use std::time::Instant;

    fn failed() -> Input<'static> {
        Input::AgentEnd {
            message: AssistantMessage::error("503 Service Unavailable"),
            now_ms: None,
        }
    }

    fn answered() -> Input<'static> {
        Input::AgentEnd {
            message: AssistantMessage::new(StopReason::Stop),
            now_ms: None,
        }
    }

    /// Both answers of one decision (a usage limit not switched, then no
    /// other model) take the text the driver kept, after the message it
    /// came from is gone; an `agent_end` refused meanwhile does not take
    /// its place.
    #[test]
    fn answers_take_the_kept_decision_text() {
        let settings = RetrySettings::DEFAULT
            .with_honor_hints(true)
            .with_max_delay_ms(60_000)
            .with_max_usage_wait_ms(18_000_000)
            .with_model_fallback(true);
        let host = crate::HostOptions::DEFAULT.with_credential_store(true);
        let mut driver =
            ThreadDriver::with_clock(Machine::new(settings, host), VirtualClock::new());
        let text = String::from("usage limit reached retry-after-ms=10800000");
        let step = driver.handle(Input::agent_end(AssistantMessage::error(&text)));
        assert!(matches!(
            step.outputs.as_deref(),
            Ok([Output::MarkUsageLimit { .. }])
        ));
        let kept = text.clone();
        drop(step);
        drop(text);
        let other = Input::agent_end(AssistantMessage::error("another text"));
        assert!(driver.handle(other).outputs.is_err());
        let step = driver.usage_limit_marked(false);
        assert_eq!(step.input, Input::usage_limit_marked(false, &kept));
        assert!(matches!(
            step.outputs.as_deref(),
            Ok([Output::SwitchModel { .. }])
        ));
        drop(step);
        let step = driver.model_switched(false);
        let Ok([Output::Emit(crate::Event::Start { error_message, .. }), _, _]) =
            step.outputs.as_deref()
        else {
            panic!("{:?}", step.outputs)
        };
        assert_eq!(*error_message, kept.as_str());
        drop(step);
        assert!(driver.deadline().is_some());
    }

    fn names(outputs: &[String], name: &str) -> usize {
        outputs.iter().filter(|o| *o == name).count()
    }

    /// No `continue_agent` after a cancellation of the same chain, and at
    /// most one per backoff.
    fn check_no_continue_after_cancel(log: &[String]) {
        let cancel = log.iter().position(|o| o == "cancel_timer" || o == "end");
        let continues = names(log, "continue_agent");
        assert!(continues <= 1, "{log:?}");
        if let (Some(cancel), Some(cont)) = (cancel, log.iter().position(|o| o == "continue_agent"))
        {
            assert!(cont < cancel, "continue after cancel: {log:?}");
        }
    }

    /// Appends the names of an accepted step's outputs to `log`.
    fn record(log: &mut Vec<String>, step: &Step<'_>) {
        let outputs = step.outputs.as_ref().expect("accepted");
        log.extend(outputs.iter().map(|o| match o {
            Output::Emit(crate::Event::End { .. }) => "end".into(),
            other => other.type_name().into(),
        }));
    }

    /// A loop that feeds every input it receives and records the outputs.
    fn record_each<'l, C: Clock>(
        log: &'l mut Vec<String>,
    ) -> impl FnMut(&mut ThreadDriver<C>, MessageOrTimer<Input<'static>>) -> ControlFlow<()> + 'l
    {
        move |driver, next| {
            let step = match next {
                MessageOrTimer::Message(input) => driver.handle(input),
                MessageOrTimer::Fired(step) => step,
            };
            record(log, &step);
            ControlFlow::Continue(())
        }
    }

    #[test]
    fn a_cancel_queued_before_the_deadline_beats_the_timer() {
        let mut driver = ThreadDriver::new(Machine::default());
        let mut log = Vec::new();
        let (tx, rx) = mpsc::channel();
        record(&mut log, &driver.handle(failed()));
        tx.send(Input::AbortRetry).unwrap();
        drop(tx);
        driver.run(&rx, record_each(&mut log));
        assert_eq!(names(&log, "continue_agent"), 0, "{log:?}");
        assert_eq!(names(&log, "cancel_timer"), 1, "{log:?}");
        assert!(!driver.state().is_retrying);
    }

    #[test]
    fn a_cancel_queued_after_the_deadline_comes_after_the_timer() {
        // The deadline has passed when the cancel is queued. The timer
        // fires first; the cancel then ends the continued run's chain.
        let clock = VirtualClock::new();
        let mut driver = ThreadDriver::with_clock(Machine::default(), clock.clone());
        let mut log = Vec::new();
        let (tx, rx) = mpsc::channel();
        record(&mut log, &driver.handle(failed()));
        clock.advance(Duration::from_secs(2));
        tx.send(Input::AbortRetry).unwrap();
        drop(tx);
        driver.run(&rx, record_each(&mut log));
        assert_eq!(
            log,
            [
                "emit",
                "drop_trailing_error",
                "sleep",
                "continue_agent",
                "end",
                "settled"
            ]
        );
        assert!(!driver.state().is_retrying);
    }

    #[test]
    fn a_cancel_just_after_the_fire_ends_the_running_chain() {
        let mut driver = ThreadDriver::new(Machine::default());
        let mut log = Vec::new();
        record(&mut log, &driver.handle(failed()));
        let timer = driver.machine().pending_timer().unwrap();
        let at = driver.deadline().expect("armed");
        let fired = driver.fire_due(at).expect("due");
        assert_eq!(fired.input, Input::TimerFired { timer });
        record(&mut log, &fired);
        record(&mut log, &driver.handle(Input::AbortRetry));
        // A late, duplicate fire of the same timer changes nothing.
        record(&mut log, &driver.handle(Input::TimerFired { timer }));
        assert_eq!(driver.fire_due(Duration::MAX), None);
        assert_eq!(
            log,
            [
                "emit",
                "drop_trailing_error",
                "sleep",
                "continue_agent",
                "end",
                "settled"
            ]
        );
    }

    #[test]
    fn a_timer_the_host_fed_itself_is_disarmed() {
        let mut driver = ThreadDriver::new(Machine::default());
        let mut log = Vec::new();
        record(&mut log, &driver.handle(failed()));
        let timer = driver.machine().pending_timer().unwrap();
        record(&mut log, &driver.handle(Input::TimerFired { timer }));
        // The machine has no timer pending: neither has the driver, and no
        // empty `Fired` wakes the host later.
        assert_eq!(driver.deadline(), None);
        assert_eq!(driver.fire_due(Duration::MAX), None);
        assert_eq!(names(&log, "continue_agent"), 1, "{log:?}");
    }

    #[test]
    fn a_stale_timer_never_continues() {
        let mut driver = ThreadDriver::new(Machine::default());
        let mut log = Vec::new();
        record(&mut log, &driver.handle(failed()));
        let timer = driver.machine().pending_timer().unwrap();
        record(&mut log, &driver.handle(Input::AbortRetry));
        assert_eq!(driver.deadline(), None);
        record(&mut log, &driver.handle(Input::TimerFired { timer }));
        assert_eq!(driver.fire_due(Duration::MAX), None);
        assert_eq!(names(&log, "continue_agent"), 0, "{log:?}");
    }

    #[test]
    fn racing_cancels_never_continue_after_cancel() {
        // A sender thread cancels around the deadline; whichever side wins,
        // the invariants hold.
        for round in 0..60u64 {
            let settings = RetrySettings::DEFAULT.with_base_delay_ms(2);
            let mut driver = ThreadDriver::new(Machine::new(settings, Default::default()));
            let mut log = Vec::new();
            let (tx, rx) = mpsc::channel();
            record(&mut log, &driver.handle(failed()));
            let sender = thread::spawn(move || {
                thread::sleep(Duration::from_micros(round * 70));
                let _ = tx.send(Input::AbortRetry);
            });
            driver.run(&rx, record_each(&mut log));
            sender.join().unwrap();
            check_no_continue_after_cancel(&log);
            assert_eq!(names(&log, "end"), 1, "{log:?}");
            assert!(!driver.state().is_retrying, "{log:?}");
        }
    }

    #[test]
    fn the_timer_fires_once_and_in_time() {
        let settings = RetrySettings::DEFAULT.with_base_delay_ms(10);
        let mut driver = ThreadDriver::new(Machine::new(settings, Default::default()));
        let (tx, rx) = mpsc::channel::<Input<'static>>();
        let mut log = Vec::new();
        let start = Instant::now();
        record(&mut log, &driver.handle(failed()));
        let timer = driver.machine().pending_timer().unwrap();
        let WaitOutcome::Fired(step) = driver.wait(&rx, None) else {
            panic!("the timer fires")
        };
        assert!(start.elapsed() >= Duration::from_millis(10));
        assert_eq!(step.input, Input::TimerFired { timer });
        record(&mut log, &step);
        // Nothing is pending any more: a bounded wait ends by `until`.
        let until = Some(driver.clock().now() + Duration::from_millis(5));
        assert_eq!(driver.wait(&rx, until), WaitOutcome::Until);
        record(&mut log, &driver.handle(answered()));
        assert_eq!(names(&log, "continue_agent"), 1, "{log:?}");
        drop(tx);
        assert_eq!(driver.wait(&rx, None), WaitOutcome::Closed);
    }

    #[test]
    fn a_fired_timer_reaches_the_run_loop() {
        let settings = RetrySettings::DEFAULT.with_base_delay_ms(1);
        let mut driver = ThreadDriver::new(Machine::new(settings, Default::default()));
        let (tx, rx) = mpsc::channel::<Input<'static>>();
        let mut log = Vec::new();
        record(&mut log, &driver.handle(failed()));
        let mut calls = 0;
        driver.run(&rx, |driver, next| {
            calls += 1;
            let MessageOrTimer::Fired(step) = next else {
                panic!("no message was sent")
            };
            record(&mut log, &step);
            record(&mut log, &driver.handle(answered()));
            ControlFlow::Break(())
        });
        drop(tx);
        assert_eq!(calls, 1);
        assert_eq!(
            log,
            [
                "emit",
                "drop_trailing_error",
                "sleep",
                "continue_agent",
                "end",
                "settled",
                "check_compaction"
            ]
        );
    }

    #[test]
    fn end_of_input_stops_the_timer() {
        let mut driver = ThreadDriver::new(Machine::default());
        let (tx, rx) = mpsc::channel::<Input<'static>>();
        let mut log = Vec::new();
        record(&mut log, &driver.handle(failed()));
        drop(tx);
        driver.run(&rx, |_, _| ControlFlow::Continue(()));
        assert_eq!(driver.deadline(), None);
        assert_eq!(names(&log, "continue_agent"), 0);
    }

    #[test]
    fn refused_inputs_leave_the_timer_alone() {
        let mut driver = ThreadDriver::new(Machine::default());
        let mut log = Vec::new();
        record(&mut log, &driver.handle(failed()));
        let deadline = driver.deadline();
        let step = driver.handle(answered());
        assert_eq!(step.input, answered());
        assert_eq!(step.outputs, Err(Refused::AgentRunDuringBackoff));
        assert_eq!(driver.deadline(), deadline);
        assert_eq!(log.len(), 3);
    }

    #[test]
    fn a_restored_backoff_fires_once_rearmed() {
        let mut machine = Machine::default();
        let _ = machine.handle(failed()).unwrap();
        let restored = Machine::restore(machine.snapshot()).unwrap();
        // Untold, the driver fires the restored timer at once.
        let mut driver = ThreadDriver::new(restored.clone());
        let fired = driver.fire_due(driver.clock().now()).expect("due at once");
        assert_eq!(fired.outputs.unwrap()[..], [Output::ContinueAgent]);
        // Told the time left, it fires then.
        let mut driver = ThreadDriver::new(restored);
        driver.rearm(10);
        assert_eq!(driver.fire_due(driver.clock().now()), None);
        let (_tx, rx) = mpsc::channel::<()>();
        let WaitOutcome::Fired(step) = driver.wait(&rx, None) else {
            panic!("the timer fires")
        };
        assert_eq!(step.outputs.unwrap()[..], [Output::ContinueAgent]);
    }

    /// A backoff of 50 ms under a stream of messages that never pauses
    /// (the channel is kept full for up to 3 s, and the loop feeds each
    /// message to the machine and works 200 µs on it): the timer fires at the first wait after its
    /// deadline, so no message the driver takes after the deadline goes
    /// ahead of it.
    #[test]
    fn a_due_timer_fires_under_a_stream_that_never_pauses() {
        let mut worst = Duration::ZERO;
        for _ in 0..10 {
            let settings = RetrySettings::DEFAULT.with_base_delay_ms(50);
            let mut driver = ThreadDriver::new(Machine::new(settings, Default::default()));
            let (tx, rx) = mpsc::sync_channel(4);
            let sender = thread::spawn(move || {
                let end = Instant::now() + Duration::from_secs(3);
                while Instant::now() < end && tx.send(()).is_ok() {}
            });
            record(&mut Vec::new(), &driver.handle(failed()));
            let deadline = driver.deadline().expect("armed");
            // Messages handed out once the deadline had passed, before it fired.
            let mut late = 0;
            let mut fired = None;
            driver.run(&rx, |driver, next| match next {
                MessageOrTimer::Message(()) => {
                    late += usize::from(driver.clock().now() >= deadline);
                    let step = driver.handle(Input::SetAutoRetry { enabled: true });
                    assert_eq!(step.outputs.map(|o| o.len()), Ok(0));
                    // The host's work on a message: time for the sender to
                    // refill the channel, which is never empty.
                    thread::sleep(Duration::from_micros(200));
                    ControlFlow::Continue(())
                }
                MessageOrTimer::Fired(step) => {
                    fired = Some((driver.clock().now(), step.outputs));
                    ControlFlow::Break(())
                }
            });
            drop(rx);
            sender.join().unwrap();
            let Some((at, outputs)) = fired else {
                let after = driver.clock().now() - deadline;
                panic!("the timer never fired: the stream ended {after:?} after its deadline, {late} messages later");
            };
            assert_eq!(outputs.unwrap()[..], [Output::ContinueAgent]);
            let delay = at - deadline;
            worst = worst.max(delay);
            // At most the message in hand when the deadline passed.
            assert!(
                late <= 1,
                "{late} messages went ahead of the due timer, {delay:?} late"
            );
        }
        println!(
            "thread driver, non-stop stream: continue_agent at most {worst:?} after its deadline"
        );
    }

    #[test]
    fn huge_backoffs_are_due_when_their_time_comes() {
        let settings = RetrySettings::DEFAULT.with_base_delay_ms(u64::MAX);
        let clock = VirtualClock::new();
        let mut driver =
            ThreadDriver::with_clock(Machine::new(settings, Default::default()), clock);
        let mut log = Vec::new();
        record(&mut log, &driver.handle(failed()));
        assert!(driver.machine().pending_timer().is_some());
        let at = driver.deadline().expect("armed");
        assert_eq!(at, Duration::from_millis(u64::MAX));
        assert_eq!(driver.fire_due(at - Duration::from_nanos(1)), None);
        assert_eq!(driver.stop_timer(), driver.machine().pending_timer());
    }
}
