//! An async driver on [embassy](https://embassy.dev): the machine plus its
//! backoff timer, on `embassy-time`. Feature `embassy`.
//!
//! It is the async [`Driver`] of [`host::driver`](crate::host::driver) on
//! embassy-time ([`Embassy`]: an [`Instant`] clock and a [`Timer`]), reading
//! its inputs from an `embassy_sync` [`Channel`]. The host sends its inputs
//! (agent events, commands, settings, the usage-limit answer) into the
//! channel; [`EmbassyDriver::next`] waits for whichever comes first, the
//! next input or the pending backoff timer, feeds it to the machine and
//! returns what it did as a [`Step`], the shape the thread driver delivers
//! too. The driver carries out the timer outputs itself: `sleep` arms its
//! timer, `cancel_timer` (or any input that ends the backoff) disarms it,
//! and a timer that fires becomes `timer_fired`. Every other output is the
//! host's to carry out, in order. The driver allocates nothing of its own
//! (the classifier's speed tables of feature `prefilter`, on std only, are
//! built once per process).
//!
//! Milliseconds become [`Duration`]s only here, at the edge
//! ([`duration_from_ms`], [`ms_from_duration`]).
//!
//! ```
//! use autoretry::{host::embassy::EmbassyDriver, AssistantMessage, Input, Machine, Output, StopReason};
//! use embassy_sync::{blocking_mutex::raw::NoopRawMutex, channel::Channel};
//!
//! async fn host(inputs: &Channel<NoopRawMutex, Input<'static>, 4>) {
//!     let mut driver = EmbassyDriver::new(Machine::default(), inputs.receiver());
//!     inputs.try_send(Input::AgentEnd { message: AssistantMessage::error("overloaded"), now_ms: None }).unwrap();
//!     loop {
//!         let step = driver.next().await;
//!         for output in step.outputs.unwrap_or_default() {
//!             match output {
//!                 // The backoff (2 s) is over: run the agent again; it succeeds.
//!                 Output::ContinueAgent => inputs.try_send(Input::AgentEnd {
//!                     message: AssistantMessage::new(StopReason::Stop),
//!                     now_ms: None,
//!                 }).unwrap(),
//!                 // The prompt is over (`settled` only says a chain closed).
//!                 Output::CheckCompaction => return,
//!                 _ => {}
//!             }
//!         }
//!     }
//! }
//! # // In this example the mock time driver of the tests advances by itself.
//! # use core::future::Future;
//! # let inputs = Channel::new();
//! # let mut run = core::pin::pin!(host(&inputs));
//! # let waker = std::task::Waker::from(std::sync::Arc::new(Noop));
//! # struct Noop;
//! # impl std::task::Wake for Noop { fn wake(self: std::sync::Arc<Self>) {} }
//! # let mut cx = core::task::Context::from_waker(&waker);
//! # while run.as_mut().poll(&mut cx).is_pending() {
//! #     embassy_time::MockDriver::get().advance(embassy_time::Duration::from_millis(500));
//! # }
//! ```

use embassy_sync::blocking_mutex::raw::RawMutex;
pub use embassy_sync::channel::Channel;
use embassy_sync::channel::Receiver;
use embassy_time::{Duration, Instant, Timer};

use crate::host::driver::{Driver, Sleeper};
use crate::host::Step;
use crate::{Input, Machine, TimerId};

/// `ms` milliseconds as an embassy [`Duration`], rounded up to whole ticks
/// (a backoff never ends early); [`Duration::MAX`] when it does not fit.
///
/// ```
/// use autoretry::host::embassy::duration_from_ms;
/// assert_eq!(duration_from_ms(2000).as_millis(), 2000);
/// assert_eq!(duration_from_ms(u64::MAX), embassy_time::Duration::MAX);
/// ```
pub fn duration_from_ms(ms: u64) -> Duration {
    Duration::try_from_millis(ms).unwrap_or(Duration::MAX)
}

/// A [`Duration`] in whole milliseconds, rounded down.
///
/// ```
/// use autoretry::host::embassy::ms_from_duration;
/// assert_eq!(ms_from_duration(embassy_time::Duration::from_micros(2_999)), 2);
/// ```
pub fn ms_from_duration(duration: Duration) -> u64 {
    duration.as_millis()
}

/// embassy-time's clock and timer, the [`Sleeper`] of [`EmbassyDriver`]
/// (a host that reads its inputs from elsewhere uses it with [`Driver`]).
///
/// ```
/// use autoretry::host::{driver::Sleeper, embassy::Embassy};
/// let now = Embassy.now();
/// assert_eq!(Embassy.after(now, 2000).unwrap() - now, embassy_time::Duration::from_millis(2000));
/// // Beyond the clock: `Instant::MAX`, which no clock reaches.
/// assert_eq!(Embassy.after(now, u64::MAX), Some(embassy_time::Instant::MAX));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Embassy;

impl Sleeper for Embassy {
    type Instant = Instant;
    type Sleep = Timer;

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn after(&self, at: Instant, ms: u64) -> Option<Instant> {
        Some(at.saturating_add(duration_from_ms(ms)))
    }

    fn sleep_until(&self, at: Instant) -> Timer {
        Timer::at(at)
    }
}

/// The machine driven on embassy: inputs from a channel, the backoff on an
/// embassy-time [`Timer`]. See the [module docs](self) for a whole loop.
pub struct EmbassyDriver<'ch, 'a, M: RawMutex, const N: usize> {
    driver: Driver<Embassy, Input<'a>>,
    inputs: Receiver<'ch, M, Input<'a>, N>,
}

impl<'ch, 'a, M: RawMutex, const N: usize> EmbassyDriver<'ch, 'a, M, N> {
    /// A driver for `machine`, reading the host's inputs from `inputs`. A
    /// machine in a backoff (restored from a snapshot) fires at once
    /// unless [`EmbassyDriver::rearm`] gives the time left.
    ///
    /// ```
    /// use autoretry::{host::embassy::{Channel, EmbassyDriver}, Input, Machine};
    /// use embassy_sync::blocking_mutex::raw::NoopRawMutex;
    /// let inputs: Channel<NoopRawMutex, Input<'static>, 4> = Channel::new();
    /// let driver = EmbassyDriver::new(Machine::default(), inputs.receiver());
    /// assert!(driver.timer_deadline().is_none());
    /// ```
    pub fn new(machine: Machine, inputs: Receiver<'ch, M, Input<'a>, N>) -> Self {
        EmbassyDriver {
            driver: Driver::new(machine, Embassy),
            inputs,
        }
    }

    /// The machine (for its queries).
    ///
    /// ```
    /// use autoretry::{host::embassy::{Channel, EmbassyDriver}, Input, Machine};
    /// use embassy_sync::blocking_mutex::raw::NoopRawMutex;
    /// let inputs: Channel<NoopRawMutex, Input<'static>, 4> = Channel::new();
    /// assert!(!EmbassyDriver::new(Machine::default(), inputs.receiver()).machine().is_retrying());
    /// ```
    pub fn machine(&self) -> &Machine {
        self.driver.machine()
    }

    /// When the pending backoff timer fires, if one is pending.
    ///
    /// ```
    /// use autoretry::{host::embassy::{Channel, EmbassyDriver}, Input, Machine};
    /// use embassy_sync::blocking_mutex::raw::NoopRawMutex;
    /// let inputs: Channel<NoopRawMutex, Input<'static>, 4> = Channel::new();
    /// assert_eq!(EmbassyDriver::new(Machine::default(), inputs.receiver()).timer_deadline(), None);
    /// ```
    pub fn timer_deadline(&self) -> Option<Instant> {
        self.driver.deadline()
    }

    /// Gives a restored machine's pending timer `ms` milliseconds from now
    /// ([`Driver::rearm`]).
    ///
    /// ```
    /// use autoretry::{host::embassy::{Channel, EmbassyDriver}, AssistantMessage, Input, Machine};
    /// use embassy_sync::blocking_mutex::raw::NoopRawMutex;
    /// let mut machine = Machine::default();
    /// let _ = machine.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
    /// let inputs: Channel<NoopRawMutex, Input<'static>, 4> = Channel::new();
    /// let mut driver = EmbassyDriver::new(Machine::restore(machine.snapshot()).unwrap(), inputs.receiver());
    /// assert_eq!(driver.rearm(1500), machine.pending_timer());
    /// ```
    pub fn rearm(&mut self, ms: u64) -> Option<TimerId> {
        self.driver.rearm(ms)
    }

    /// Waits for the next input or the backoff timer, whichever comes
    /// first, feeds it to the machine and returns what happened (a
    /// [`Step`]). Timer outputs are already carried out; the host carries
    /// out the others, in order, before it calls `next` again.
    ///
    /// When both are ready at once, the input goes first (an abort sent in
    /// time cancels the timer); see [`Driver::next`].
    ///
    /// Cancel-safe: dropping the future before it completes loses nothing
    /// (an input is taken from the channel only when the future completes
    /// with it).
    ///
    /// ```
    /// use autoretry::{host::embassy::{Channel, EmbassyDriver}, Input, Machine};
    /// use embassy_sync::blocking_mutex::raw::NoopRawMutex;
    /// let inputs: Channel<NoopRawMutex, Input<'static>, 4> = Channel::new();
    /// let mut driver = EmbassyDriver::new(Machine::default(), inputs.receiver());
    /// inputs.try_send(Input::Abort).unwrap();
    /// let step = embassy_futures::block_on(driver.next());
    /// assert_eq!(step.input, Input::Abort);
    /// assert_eq!(step.outputs.unwrap()[..], [autoretry::Output::AbortAgent]);
    /// ```
    pub async fn next(&mut self) -> Step<'_> {
        let inputs = &self.inputs;
        match self
            .driver
            .next(async { Some(inputs.receive().await) })
            .await
        {
            Some(step) => step,
            // An embassy channel never closes.
            None => core::future::pending().await,
        }
    }
}
