//! The async driver for any runtime: [`Driver`] owns the machine and its
//! backoff timer, on a [`Sleeper`] (the runtime's clock and timer, the one
//! thing a runtime must lend it).
//!
//! The host hands [`Driver::next`] a future of its next input (a channel's
//! `recv()`, say). The driver waits for whichever comes first, that input
//! or the pending backoff timer, feeds it to the machine and returns what
//! it did as a [`Step`]: `sleep` arms the timer, `cancel_timer` disarms
//! it, and a timer that fires becomes `timer_fired`. Every other output is
//! the host's to carry out, in order, before it asks for the next step.
//! The driver adds no policy and allocates nothing of its own; it is
//! `no_std`.
//!
//! Inputs are owned: any type that lends an [`Input`] ([`AsInput`]: the
//! borrowed [`Input`] itself, or the owned `InputBuf` on
//! std). The driver keeps the last one while its step, which borrows the
//! texts, is read: a step keeps the driver borrowed until it is dropped
//! (its outputs are a `heapless::Vec`, which has a destructor), so a host
//! carries out the outputs, then queries the driver, or drops the step
//! first.
//!
//! # Answering a hand-off
//!
//! [`Output::SwitchModel`](crate::Output::SwitchModel) and
//! [`Output::MarkUsageLimit`](crate::Output::MarkUsageLimit) ask the host
//! a question; the machine checks the answer against the error text of the
//! `agent_end` that asked. The driver keeps that `agent_end` until the
//! answer comes and gives the answer its text: the host answers with the
//! boolean alone (`InputBuf::ModelSwitched { switched }` on std, or an
//! [`Input::ModelSwitched`] with any text). Only a machine restored while
//! it awaits an answer needs the `agent_end` back
//! ([`Driver::keep_decision`]).
//!
//! ```
//! # use core::future::{ready, Ready};
//! # use autoretry::host::driver::Sleeper;
//! # struct Instantly;
//! # impl Sleeper for Instantly {
//! #     type Instant = u64;
//! #     type Sleep = Ready<()>;
//! #     fn now(&self) -> u64 { 0 }
//! #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
//! #     fn sleep_until(&self, _: u64) -> Ready<()> { ready(()) }
//! #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
//! # }
//! use autoretry::host::driver::Driver;
//! use autoretry::{AssistantMessage, HostOptions, Input, Machine, Output, RetrySettings};
//! let settings = RetrySettings::DEFAULT.with_max_retries(0).with_model_fallback(true);
//! let mut driver = Driver::new(Machine::new(settings, HostOptions::DEFAULT), Instantly);
//! let step = driver.handle(Input::agent_end(AssistantMessage::error("529 overloaded")));
//! assert!(matches!(step.outputs.as_deref(), Ok([Output::SwitchModel { .. }])));
//! drop(step);
//! // The host switched to another model: the boolean is the whole answer.
//! let step = driver.handle(Input::model_switched(true, ""));
//! assert_eq!(step.input, Input::model_switched(true, "529 overloaded"));
//! assert!(matches!(step.outputs.as_deref(), Ok([Output::Emit(_), Output::DropTrailingError, Output::Sleep { ms: 0, .. }])));
//! ```
//!
//! The adapters: `host::tokio` (feature `tokio`) and `host::embassy`
//! (feature `embassy`), listed with the other hosts in
//! [`host`](crate::host). Another runtime implements [`Sleeper`] in a few
//! lines:
//!
//! ```
//! use core::future::{ready, Ready};
//! use autoretry::host::driver::{Driver, Sleeper};
//! use autoretry::{AssistantMessage, Input, Machine, Output};
//!
//! /// A clock in milliseconds that stands still, and timers that are
//! /// always due: time passes only in the host's head.
//! struct Instantly;
//! impl Sleeper for Instantly {
//!     type Instant = u64;
//!     type Sleep = Ready<()>;
//!     fn now(&self) -> u64 { 0 }
//!     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
//!     fn sleep_until(&self, _: u64) -> Ready<()> { ready(()) }
//!     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
//! }
//!
//! let mut driver = Driver::new(Machine::default(), Instantly);
//! let failed = Input::AgentEnd { message: AssistantMessage::error("529 overloaded"), now_ms: None };
//! let step = driver.handle(failed);
//! assert!(matches!(step.outputs.as_deref(), Ok([_, _, Output::Sleep { ms: 2000, .. }])));
//! drop(step); // the step borrows the driver (it keeps the input)
//! assert_eq!(driver.deadline(), Some(2000));
//!
//! // No input comes (`pending`): the timer fires.
//! let step = embassy_futures::block_on(driver.next(core::future::pending::<Option<Input>>()));
//! let step = step.expect("the timer fired");
//! assert!(matches!(step.input, Input::TimerFired { .. }));
//! assert_eq!(step.outputs.as_deref(), Ok(&[Output::ContinueAgent][..]));
//! ```
//!
//! # Fairness and races
//!
//! The rule of every host ([`host::timer`](crate::host::timer)): a due
//! timer fires before any input that arrived at or after its deadline.
//! [`Driver::next`] reads the sleeper's clock first: a timer already due
//! fires before the input is polled (an input ready now may have come
//! after the deadline). So even an input that is always ready (a channel
//! kept full) delays `continue_agent` by at most the input in hand when
//! the deadline passed. While `next` waits, whichever wakes it first goes
//! first, the input when both are ready at once (an `abort_retry` sent in
//! time cancels the timer); the timer fires once; and the machine ignores
//! a `timer_fired` for any timer but the pending one.
//!
//! # After a snapshot or a move
//!
//! A [`Machine`] restored in a backoff ([`Machine::restore`]) still has its
//! pending timer, but no clock knows when it is due: a driver made with it
//! fires that timer at once unless the host, which kept its own deadline,
//! sets the time left with [`Driver::rearm`].

use core::future::{poll_fn, Future};
use core::pin::pin;
use core::task::Poll;

use crate::host::budget_store::BudgetStore;
use crate::host::timer::BackoffTimer;
use crate::host::{awaits_answer, Step};
use crate::{Input, Machine, RetryBudget, RetryState, TimerId};

/// A runtime's clock and timer: all the driver needs from a runtime.
///
/// Deadlines are instants, not durations, so that a backoff ends when its
/// `sleep` said however often the driver is polled in between. See the
/// [module docs](self) for an implementation.
pub trait Sleeper {
    /// A point in the runtime's time (later instants compare greater).
    type Instant: Copy + PartialOrd;
    /// The future of a timer, ready at its deadline.
    type Sleep: Future<Output = ()>;
    /// The runtime's time now.
    fn now(&self) -> Self::Instant;
    /// `ms` milliseconds after `at` (rounded up to the clock's ticks, so a
    /// backoff never ends early); `None` when beyond the clock's range (that
    /// timer never fires).
    fn after(&self, at: Self::Instant, ms: u64) -> Option<Self::Instant>;
    /// A timer that is ready at `at`.
    fn sleep_until(&self, at: Self::Instant) -> Self::Sleep;
    /// The whole milliseconds from `from` to `to` (rounded down; 0 when
    /// `to` is not later; saturating at `u64::MAX`): the driver stamps the
    /// stream's inputs (spec §12.2) with the milliseconds since its start
    /// ([`Driver::now_ms`]).
    fn ms_between(&self, from: Self::Instant, to: Self::Instant) -> u64;
}

/// What the driver can feed the machine: a type that lends an [`Input`].
///
/// ```
/// use autoretry::{host::driver::AsInput, Input};
/// assert_eq!(Input::Abort.as_input(), Input::Abort);
/// ```
pub trait AsInput {
    /// The input, borrowing its texts from `self`.
    fn as_input(&self) -> Input<'_>;
}

impl AsInput for Input<'_> {
    fn as_input(&self) -> Input<'_> {
        *self
    }
}

#[cfg(feature = "std")]
impl AsInput for crate::InputBuf {
    fn as_input(&self) -> Input<'_> {
        crate::InputBuf::as_input(self)
    }
}

impl<T: AsInput + ?Sized> AsInput for &T {
    fn as_input(&self) -> Input<'_> {
        (**self).as_input()
    }
}

/// The machine with its backoff timer on a [`Sleeper`], fed inputs of type
/// `I`. See the [module docs](self).
#[derive(Debug)]
pub struct Driver<S: Sleeper, I> {
    machine: Machine,
    sleeper: S,
    /// The driver's start on the sleeper's clock: the origin of the
    /// stream's `nowMs`.
    origin: S::Instant,
    timer: BackoffTimer<S::Instant>,
    /// The last input, which the last step borrows.
    input: Option<I>,
    /// The last `agent_end` fed while no answer was awaited: while the
    /// machine awaits an answer, the one whose decision asked, whose text
    /// the answer takes.
    decision: Option<I>,
}

impl<S: Sleeper, I: AsInput> Driver<S, I> {
    /// A driver for `machine` on `sleeper`. A machine in a backoff (restored
    /// or moved) has its timer armed to fire at once; see
    /// [`Driver::rearm`].
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, Input, Machine};
    /// // `Clock` says 100 ms now, and its timers are always due.
    /// let driver: Driver<Clock, Input> = Driver::new(Machine::default(), Clock);
    /// assert_eq!(driver.deadline(), None);
    /// ```
    pub fn new(machine: Machine, sleeper: S) -> Self {
        let mut timer = BackoffTimer::new();
        let origin = sleeper.now();
        if let Some(id) = machine.pending_timer() {
            timer.arm(id, Some(origin));
        }
        Driver {
            machine,
            sleeper,
            origin,
            timer,
            input: None,
            decision: None,
        }
    }

    /// Gives the driver the `agent_end` whose decision the machine awaits
    /// an answer to, for a machine restored while it awaits one (the host
    /// kept that input next to the snapshot): the answer then takes its
    /// text, as it does after an `agent_end` fed to this driver. Without
    /// it, an answer keeps its own text.
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, AssistantMessage, HostOptions, Input, Machine, RetrySettings};
    /// let settings = RetrySettings::DEFAULT.with_max_retries(0).with_model_fallback(true);
    /// let failed = Input::agent_end(AssistantMessage::error("529 overloaded"));
    /// let mut machine = Machine::new(settings, HostOptions::DEFAULT);
    /// let _ = machine.handle(failed);
    /// let restored = Machine::restore(machine.snapshot()).unwrap();
    ///
    /// let mut driver = Driver::new(restored, Clock);
    /// driver.keep_decision(failed);
    /// assert!(driver.handle(Input::model_switched(true, "")).outputs.is_ok());
    /// assert!(driver.state().is_retrying);
    /// ```
    pub fn keep_decision(&mut self, agent_end: I) {
        self.decision = Some(agent_end);
    }

    /// The machine (for its queries, or a [`Machine::snapshot`]).
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, Input, Machine};
    /// let driver: Driver<Clock, Input> = Driver::new(Machine::default(), Clock);
    /// assert_eq!(driver.machine().settings().max_retries, 3);
    /// ```
    pub fn machine(&self) -> &Machine {
        &self.machine
    }

    /// The machine's query surface.
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, Input, Machine};
    /// let mut driver: Driver<Clock, Input> = Driver::new(Machine::default(), Clock);
    /// drop(driver.handle(Input::SetAutoRetry { enabled: false }));
    /// assert!(!driver.state().auto_retry_enabled);
    /// ```
    pub fn state(&self) -> RetryState {
        self.machine.state()
    }

    /// The sleeper.
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, Input, Machine};
    /// let driver: Driver<Clock, Input> = Driver::new(Machine::default(), Clock);
    /// assert_eq!(driver.sleeper().now(), 100);
    /// ```
    pub fn sleeper(&self) -> &S {
        &self.sleeper
    }

    /// When the pending backoff timer fires; `None` when none is pending
    /// (or it never fires).
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, AssistantMessage, Input, Machine};
    /// let mut driver = Driver::new(Machine::default(), Clock);
    /// drop(driver.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None }));
    /// assert_eq!(driver.deadline(), Some(2100)); // 2000 ms after 100
    /// drop(driver.handle(Input::AbortRetry));
    /// assert_eq!(driver.deadline(), None);
    /// ```
    pub fn deadline(&self) -> Option<S::Instant> {
        self.timer.deadline()
    }

    /// Gives the machine's pending timer `ms` milliseconds from now, for a
    /// machine that was restored in a backoff: the host kept its own
    /// deadline (a wall-clock time next to the snapshot) and passes the
    /// time left (0 when it has passed). Returns the timer's id; `None`,
    /// changing nothing, when no timer is pending.
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, AssistantMessage, Input, Machine};
    /// let mut machine = Machine::default();
    /// let _ = machine.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
    /// let restored = Machine::restore(machine.snapshot()).unwrap();
    ///
    /// // `Clock` says 100 ms now; 1500 ms of the backoff are left.
    /// let mut driver: Driver<Clock, Input> = Driver::new(restored, Clock);
    /// assert_eq!(driver.deadline(), Some(100)); // at once, unless told
    /// assert_eq!(driver.rearm(1500), machine.pending_timer());
    /// assert_eq!(driver.deadline(), Some(1600));
    /// ```
    pub fn rearm(&mut self, ms: u64) -> Option<TimerId> {
        let timer = self.machine.pending_timer()?;
        let at = self.sleeper.after(self.sleeper.now(), ms);
        self.timer.arm(timer, at);
        Some(timer)
    }

    /// Feeds one input to the machine now and carries out its timer
    /// outputs. Returns the [`Step`]; every other output in it is the
    /// caller's to carry out. A refused input changes nothing.
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, AssistantMessage, Input, Machine, Output, Refused, StopReason};
    /// let mut driver = Driver::new(Machine::default(), Clock);
    /// let step = driver.handle(Input::AgentEnd { message: AssistantMessage::error("429"), now_ms: None });
    /// assert!(matches!(step.outputs.as_deref(), Ok([Output::Emit(_), Output::DropTrailingError, Output::Sleep { .. }])));
    /// drop(step);
    /// // During the backoff the agent must not run: refused, nothing changed.
    /// let early = Input::MessageEnd { message: AssistantMessage::new(StopReason::Stop) };
    /// assert_eq!(driver.handle(early).outputs, Err(Refused::AgentRunDuringBackoff));
    /// ```
    pub fn handle(&mut self, input: I) -> Step<'_> {
        self.feed(input, None::<&mut RetryBudget>)
    }

    /// [`Driver::handle`] with a retry budget that the drivers of several
    /// sessions share (spec §11.4, [`Machine::handle_with_budget`]), in any
    /// [`BudgetStore`]: the budget is lent for this input only. When the
    /// store fails, the input is decided without it and
    /// [`Step::budget_error`] says why.
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use core::cell::RefCell;
    /// use autoretry::{host::driver::Driver, AssistantMessage, Input, Machine, RetryBudget};
    /// let shared = RefCell::new(RetryBudget::new(4, 500).unwrap());
    /// let mut a = Driver::new(Machine::default(), Clock);
    /// let mut b = Driver::new(Machine::default(), Clock);
    /// let fail = Input::agent_end(AssistantMessage::error("429 rate limited"));
    /// assert!(a.handle_with_budget(fail, &shared).state.is_retrying); // 4 → 3
    /// assert!(!b.handle_with_budget(fail, &shared).state.is_retrying); // 3 → 2: throttled
    /// ```
    pub fn handle_with_budget(&mut self, input: I, budget: impl BudgetStore) -> Step<'_> {
        self.feed(input, Some(budget))
    }

    /// The driver's clock: the whole milliseconds since it was made, by its
    /// sleeper ([`Sleeper::ms_between`]). The `nowMs` of
    /// [`Driver::stream_start`] and [`Driver::stream_event`], for a host
    /// that stamps stream inputs it sends through [`Driver::next`] itself.
    ///
    /// ```
    /// # use core::cell::Cell;
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock<'a>(&'a Cell<u64>);
    /// # impl Sleeper for Clock<'_> {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { self.0.get() }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, Input, Machine};
    /// // `Clock` reads milliseconds from a cell: 5000 when the driver is made.
    /// let time = Cell::new(5_000);
    /// let driver: Driver<Clock, Input> = Driver::new(Machine::default(), Clock(&time));
    /// assert_eq!(driver.now_ms(), 0);
    /// time.set(5_250);
    /// assert_eq!(driver.now_ms(), 250);
    /// ```
    pub fn now_ms(&self) -> u64 {
        self.sleeper.ms_between(self.origin, self.sleeper.now())
    }

    /// Feeds `stream_start` (spec §12.2) now, stamped with the driver's
    /// clock ([`Driver::now_ms`]): the host sent a request to its provider.
    /// The `watch` it may give runs on the driver's timer, as a backoff
    /// does: [`Driver::next`] fires it (a timer already due before the
    /// input in hand), and the machine decides a stall by the time its
    /// inputs say. Refused (changing nothing) while a backoff timer is
    /// pending or a hand-off answer is awaited. Like [`Driver::handle`],
    /// it fires no timer itself: a host that takes its stream's events in
    /// the same loop as [`Driver::next`] polls `next` first.
    ///
    /// ```
    /// # use core::cell::Cell;
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock<'a>(&'a Cell<u64>);
    /// # impl Sleeper for Clock<'_> {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { self.0.get() }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, HostOptions, Input, Machine, Output, RetrySettings};
    /// use embassy_futures::block_on;
    /// let settings = RetrySettings::DEFAULT.with_first_event_timeout_ms(500);
    /// // `Clock` reads milliseconds from a cell; its timers are always due.
    /// let time = Cell::new(0);
    /// let mut driver: Driver<Clock, Input> = Driver::new(Machine::new(settings, HostOptions::DEFAULT), Clock(&time));
    /// time.set(40);
    /// let step = driver.stream_start();
    /// assert_eq!(step.input, Input::StreamStart { now_ms: 40 });
    /// assert!(matches!(step.outputs.as_deref(), Ok([Output::Watch { ms: 500, .. }])));
    /// assert_eq!(driver.deadline(), Some(540));
    ///
    /// // No event came: the watch fires, and the stream stalled.
    /// let step = block_on(driver.next(core::future::pending::<Option<Input>>())).unwrap();
    /// assert_eq!(step.outputs.as_deref(), Ok(&[Output::AbortAgent][..]));
    /// ```
    pub fn stream_start(&mut self) -> Step<'static> {
        let now_ms = self.now_ms();
        self.feed_stamped(Input::StreamStart { now_ms })
    }

    /// Feeds `stream_event` (spec §12.2) now, stamped with the driver's
    /// clock ([`Driver::now_ms`]): the host received an event of the answer
    /// that shows progress (a parsed text, thinking or tool-call delta, a
    /// message event; never a keep-alive ping or an SSE comment, so a
    /// stream that only pings stalls). While the stream's watch is pending
    /// it only stores the time; otherwise it may arm the idle watch on the
    /// driver's timer. See [`Driver::stream_start`].
    ///
    /// ```
    /// # use core::cell::Cell;
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock<'a>(&'a Cell<u64>);
    /// # impl Sleeper for Clock<'_> {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { self.0.get() }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, HostOptions, Input, Machine, Output, RetrySettings};
    /// use embassy_futures::block_on;
    /// let settings = RetrySettings::DEFAULT.with_first_event_timeout_ms(500).with_idle_timeout_ms(500);
    /// let time = Cell::new(0);
    /// let mut driver: Driver<Clock, Input> = Driver::new(Machine::new(settings, HostOptions::DEFAULT), Clock(&time));
    /// drop(driver.stream_start()); // the watch is due at 500 ms
    /// time.set(300);
    /// assert!(driver.stream_event().outputs.unwrap().is_empty()); // progress at 300 ms
    ///
    /// // Only pings from here (no input): the watch fires at 500 ms and
    /// // waits for what is left of the idle limit, then the stream stalls.
    /// let step = block_on(driver.next(core::future::pending::<Option<Input>>())).unwrap();
    /// assert!(matches!(step.outputs.as_deref(), Ok([Output::Watch { ms: 300, .. }])));
    /// drop(step);
    /// let step = block_on(driver.next(core::future::pending::<Option<Input>>())).unwrap();
    /// assert_eq!(step.outputs.as_deref(), Ok(&[Output::AbortAgent][..]));
    /// ```
    pub fn stream_event(&mut self) -> Step<'static> {
        let now_ms = self.now_ms();
        let step = Step::stream_event(&mut self.machine, now_ms);
        self.carried_out(step)
    }

    /// Feeds an input the driver made (a stream input it stamped) and
    /// carries out the timer outputs.
    fn feed_stamped(&mut self, input: Input<'static>) -> Step<'static> {
        let step = Step::of(&mut self.machine, input);
        self.carried_out(step)
    }

    /// Carries out the timer outputs of a step the driver fed.
    fn carried_out(&mut self, step: Step<'static>) -> Step<'static> {
        carry_out(&mut self.timer, &self.sleeper, &self.machine, &step);
        step
    }

    /// Feeds an input of the host, with the budget when there is one, and
    /// carries out the timer outputs.
    fn feed<B: BudgetStore>(&mut self, input: I, budget: Option<B>) -> Step<'_> {
        let awaits = awaits_answer(&self.machine);
        // An `agent_end` fed while no answer is awaited may ask a question:
        // it goes where the answer finds it. While one is awaited, that one
        // stays (the machine refuses another `agent_end` then).
        let decides = !awaits && matches!(input.as_input(), Input::AgentEnd { .. });
        let input = if decides {
            self.decision.insert(input).as_input()
        } else {
            let input = self.input.insert(input).as_input();
            match (awaits, decision_text(self.decision.as_ref())) {
                (true, Some(text)) => with_decision_text(input, text),
                _ => input,
            }
        };
        let machine = &mut self.machine;
        let step = match budget {
            Some(store) => Step::with_budget(machine, input, store),
            None => Step::of(machine, input),
        };
        carry_out(&mut self.timer, &self.sleeper, &self.machine, &step);
        step
    }

    /// Waits for the next input (`input` resolves to `None` when no more
    /// will come) or the backoff deadline, whichever comes first, feeds it
    /// to the machine and returns the step. `None`: `input` said no more
    /// input will come (the pending timer, if any, stays armed: the host
    /// may call again with another source).
    ///
    /// A timer already due by the sleeper's clock fires first, and `input`
    /// is dropped unpolled. Otherwise an input that is ready goes before
    /// the timer, which is polled only when the input is not ready, so
    /// `input` must be cancel-safe (tokio's and embassy's channel receivers
    /// are): when the timer fires, the `input` future is dropped.
    ///
    /// Dropping the returned future before it completes loses nothing the
    /// driver owns.
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use autoretry::{host::driver::Driver, AssistantMessage, Input, Machine, Output};
    /// use embassy_futures::block_on;
    /// let mut driver = Driver::new(Machine::default(), Clock);
    /// drop(driver.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None }));
    /// // Both ready (the input, and `Clock`'s timer): the input goes first.
    /// let step = block_on(driver.next(async { Some(Input::AbortRetry) })).unwrap();
    /// assert!(matches!(step.outputs.as_deref(), Ok([Output::CancelTimer { .. }, ..])));
    /// drop(step);
    /// // No more input: `None`.
    /// assert!(block_on(driver.next(async { None })).is_none());
    /// ```
    pub async fn next<F>(&mut self, input: F) -> Option<Step<'_>>
    where
        F: Future<Output = Option<I>>,
    {
        self.next_fed(input, None::<&mut RetryBudget>).await
    }

    /// [`Driver::next`] with a retry budget that the drivers of several
    /// sessions share (spec §11.4), in any [`BudgetStore`]: every input is
    /// fed with it (only an `agent_end` charges or refills it), lent for
    /// that input only, so a session that waits holds no lock.
    ///
    /// ```
    /// # use autoretry::host::driver::Sleeper;
    /// # struct Clock;
    /// # impl Sleeper for Clock {
    /// #     type Instant = u64;
    /// #     type Sleep = core::future::Ready<()>;
    /// #     fn now(&self) -> u64 { 100 }
    /// #     fn after(&self, at: u64, ms: u64) -> Option<u64> { at.checked_add(ms) }
    /// #     fn sleep_until(&self, _: u64) -> Self::Sleep { core::future::ready(()) }
    /// #     fn ms_between(&self, from: u64, to: u64) -> u64 { to.saturating_sub(from) }
    /// # }
    /// use core::cell::RefCell;
    /// use autoretry::{host::driver::Driver, AssistantMessage, Input, Machine, RetryBudget};
    /// use embassy_futures::block_on;
    /// let shared = RefCell::new(RetryBudget::new(10, 100).unwrap());
    /// let mut driver = Driver::new(Machine::default(), Clock);
    /// let fail = Input::agent_end(AssistantMessage::error("503"));
    /// let step = block_on(driver.next_with_budget(async { Some(fail) }, &shared)).unwrap();
    /// assert!(step.state.is_retrying);
    /// assert_eq!(shared.borrow().tokens_milli(), 9000);
    /// ```
    pub async fn next_with_budget<F>(
        &mut self,
        input: F,
        budget: impl BudgetStore,
    ) -> Option<Step<'_>>
    where
        F: Future<Output = Option<I>>,
    {
        self.next_fed(input, Some(budget)).await
    }

    /// [`Driver::next`], feeding the input with `budget` when there is one.
    async fn next_fed<F, B>(&mut self, input: F, budget: Option<B>) -> Option<Step<'_>>
    where
        F: Future<Output = Option<I>>,
        B: BudgetStore,
    {
        // A timer already due fires before any input is taken: the input
        // that is ready now may have come after the deadline.
        if let Some(timer) = self.timer.take_due(self.sleeper.now()) {
            return Some(self.fire(timer));
        }
        let armed = self.timer.timer().zip(self.timer.deadline());
        let woke = {
            let mut input = pin!(input);
            let sleep = armed.map(|(_, at)| self.sleeper.sleep_until(at));
            let mut sleep = pin!(sleep);
            poll_fn(|cx| {
                if let Poll::Ready(input) = input.as_mut().poll(cx) {
                    return Poll::Ready(input.map_or(Woke::Closed, Woke::Input));
                }
                match (sleep.as_mut().as_pin_mut(), armed) {
                    (Some(sleep), Some((timer, _))) => sleep.poll(cx).map(|()| Woke::Fired(timer)),
                    _ => Poll::Pending,
                }
            })
            .await
        };
        match woke {
            Woke::Input(input) => Some(self.feed(input, budget)),
            Woke::Fired(timer) => Some(self.fire(timer)),
            Woke::Closed => None,
        }
    }

    /// Clears the pending timer, feeds its `timer_fired` and carries out
    /// the timer outputs (a stream's watch that fires may arm the next,
    /// spec §12.2).
    fn fire(&mut self, timer: TimerId) -> Step<'_> {
        self.timer.disarm();
        self.input = None;
        let step = Step::of(&mut self.machine, Input::TimerFired { timer });
        carry_out(&mut self.timer, &self.sleeper, &self.machine, &step);
        step
    }
}

/// Carries out the timer outputs of a step on the driver's timer: the
/// backoff or the stream's watch (spec §12.2), never both pending.
fn carry_out<S: Sleeper>(
    timer: &mut BackoffTimer<S::Instant>,
    sleeper: &S,
    machine: &Machine,
    step: &Step<'_>,
) {
    if let Ok(outputs) = &step.outputs {
        let pending = machine.pending_timer().or(machine.pending_watch());
        timer.carry_out(outputs, pending, |ms| sleeper.after(sleeper.now(), ms));
    }
}

/// The error text of a kept `agent_end`, if it has one.
fn decision_text<I: AsInput>(decision: Option<&I>) -> Option<&str> {
    match decision?.as_input() {
        Input::AgentEnd { message, .. } => message.error_message,
        _ => None,
    }
}

/// `input` with the decision's text, when it is an answer to a hand-off.
fn with_decision_text<'a>(input: Input<'a>, text: &'a str) -> Input<'a> {
    match input {
        Input::UsageLimitMarked { switched, .. } => Input::UsageLimitMarked {
            switched,
            error_message: text,
        },
        Input::ModelSwitched { switched, .. } => Input::ModelSwitched {
            switched,
            error_message: text,
        },
        other => other,
    }
}

/// What woke [`Driver::next`].
enum Woke<I> {
    Input(I),
    Fired(TimerId),
    Closed,
}
