//! The async driver on [embassy](https://embassy.dev) (feature `embassy`):
//! a [`Driver`] whose [`Sleeper`] is embassy-time's clock and [`Timer`]
//! ([`EmbassySleeper`]), fed inputs from any future, typically an
//! `embassy_sync` [`Channel`] through [`receive`].
//!
//! The host sends its inputs (agent events, commands, settings, the
//! usage-limit answer) into the channel; [`Driver::next`] waits for
//! whichever comes first, the next input or the pending backoff timer,
//! feeds it to the machine and returns what it did as a [`Step`](crate::host::Step), the
//! shape the thread driver delivers too. The driver carries out the timer
//! outputs itself: `sleep` arms its timer, `cancel_timer` (or any input
//! that ends the backoff) disarms it, and a timer that fires becomes
//! `timer_fired`. Every other output is the host's to carry out, in order.
//! The driver allocates nothing of its own (the classifier's speed tables
//! of feature `prefilter`, on std only, are built once per process).
//!
//! Milliseconds become [`Duration`]s only here, at the edge
//! ([`duration_from_ms`], [`ms_from_duration`]).
//!
//! ```
//! use autoretry::host::embassy::{receive, EmbassyDriver, EmbassySleeper};
//! use autoretry::{AssistantMessage, Input, Machine, Output, StopReason};
//! use embassy_sync::{blocking_mutex::raw::NoopRawMutex, channel::Channel};
//!
//! async fn host(inputs: &Channel<NoopRawMutex, Input<'static>, 4>) {
//!     let mut driver = EmbassyDriver::new(Machine::default(), EmbassySleeper);
//!     let rx = inputs.receiver();
//!     inputs.try_send(Input::AgentEnd { message: AssistantMessage::error("overloaded"), now_ms: None }).unwrap();
//!     // An embassy channel never closes: `next` always has a step.
//!     while let Some(step) = driver.next(receive(&rx)).await {
//!         // A refused input (spec §6a) changed nothing: log it and go on.
//!         let Ok(outputs) = step.outputs else { continue };
//!         for output in outputs {
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
//!
//! Inputs that own their texts (an error text read from a modem, a
//! message built at run time) need no allocator: any type that lends an
//! [`Input`] through [`AsInput`](crate::host::driver::AsInput) can travel
//! in the channel, for example one holding a `heapless::String`:
//!
//! ```
//! use autoretry::host::driver::AsInput;
//! use autoretry::host::embassy::{receive, EmbassyDriver, EmbassySleeper};
//! use autoretry::{AssistantMessage, Input, Machine, Output};
//! use embassy_sync::{blocking_mutex::raw::NoopRawMutex, channel::Channel};
//!
//! /// A run's end whose error text the firmware received into its own buffer.
//! #[derive(Debug)]
//! struct OwnedEnd(heapless::String<128>);
//!
//! impl AsInput for OwnedEnd {
//!     fn as_input(&self) -> Input<'_> {
//!         Input::agent_end(AssistantMessage::error(&self.0))
//!     }
//! }
//!
//! # embassy_futures::block_on(async {
//! let inputs: Channel<NoopRawMutex, OwnedEnd, 2> = Channel::new();
//! let mut text = heapless::String::new();
//! text.push_str("529 overloaded_error").unwrap();
//! inputs.try_send(OwnedEnd(text)).unwrap();
//! let mut driver: EmbassyDriver<OwnedEnd> = EmbassyDriver::new(Machine::default(), EmbassySleeper);
//! let rx = inputs.receiver();
//! let step = driver.next(receive(&rx)).await.unwrap();
//! assert!(matches!(step.outputs.as_deref(), Ok([Output::Emit(_), Output::DropTrailingError, Output::Sleep { .. }])));
//! # });
//! ```
//!
//! Sessions that talk to the same provider share one retry budget (spec
//! §11.4) behind a blocking mutex, lent to each driver for one input
//! ([`Driver::next_with_budget`](crate::host::driver::Driver::next_with_budget)):
//!
//! ```
//! use core::cell::RefCell;
//! use autoretry::host::embassy::{receive, EmbassyDriver, EmbassySleeper};
//! use autoretry::{AssistantMessage, Input, Machine, RetryBudget};
//! use embassy_sync::blocking_mutex::{raw::NoopRawMutex, Mutex};
//! use embassy_sync::channel::Channel;
//!
//! # embassy_futures::block_on(async {
//! let budget = Mutex::<NoopRawMutex, _>::new(RefCell::new(RetryBudget::new(4, 500).unwrap()));
//! let fail = Input::agent_end(AssistantMessage::error("429 rate limited"));
//! let mut retrying = [false; 2];
//! for session in &mut retrying {
//!     let inputs: Channel<NoopRawMutex, Input<'static>, 1> = Channel::new();
//!     inputs.try_send(fail).unwrap();
//!     let mut driver: EmbassyDriver = EmbassyDriver::new(Machine::default(), EmbassySleeper);
//!     let rx = inputs.receiver();
//!     *session = driver.next_with_budget(receive(&rx), &budget).await.unwrap().state.is_retrying;
//! }
//! // 4 → 3: the first retries; 3 → 2: the second is throttled.
//! assert_eq!(retrying, [true, false]);
//! # });
//! ```

use embassy_sync::blocking_mutex::raw::RawMutex;
pub use embassy_sync::channel::Channel;
use embassy_sync::channel::Receiver;
use embassy_time::{Duration, Instant, Timer};

use crate::host::driver::{Driver, Sleeper};
use crate::Input;

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

/// embassy-time's clock and timer ([`Instant`], [`Timer`]), the
/// [`Sleeper`] of [`EmbassyDriver`]: on the mock driver (feature
/// `mock-driver`) the driver runs in virtual time.
///
/// ```
/// use autoretry::host::{driver::Sleeper, embassy::EmbassySleeper};
/// let now = EmbassySleeper.now();
/// assert_eq!(EmbassySleeper.after(now, 2000).unwrap() - now, embassy_time::Duration::from_millis(2000));
/// // Beyond the clock: `Instant::MAX`, which no clock reaches.
/// assert_eq!(EmbassySleeper.after(now, u64::MAX), Some(embassy_time::Instant::MAX));
/// // The milliseconds between two instants, rounded down: a stream's `nowMs`.
/// let later = now + embassy_time::Duration::from_micros(2_999);
/// assert_eq!((EmbassySleeper.ms_between(now, later), EmbassySleeper.ms_between(later, now)), (2, 0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EmbassySleeper;

impl Sleeper for EmbassySleeper {
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

    fn ms_between(&self, from: Instant, to: Instant) -> u64 {
        ms_from_duration(to.saturating_duration_since(from))
    }
}

/// The driver on embassy, fed `I` (`Input<'static>` unless said
/// otherwise): `EmbassyDriver::new(machine, EmbassySleeper)`.
pub type EmbassyDriver<I = Input<'static>> = Driver<EmbassySleeper, I>;

/// The next input from an embassy channel, as [`Driver::next`] takes it:
/// always `Some` (an embassy channel never closes). Cancel-safe: an input
/// is taken from the channel only when the future completes with it.
///
/// ```
/// use autoretry::host::embassy::{receive, Channel, EmbassyDriver, EmbassySleeper};
/// use autoretry::{Input, Machine, Output};
/// use embassy_sync::blocking_mutex::raw::NoopRawMutex;
/// let inputs: Channel<NoopRawMutex, Input<'static>, 4> = Channel::new();
/// let rx = inputs.receiver();
/// let mut driver = EmbassyDriver::new(Machine::default(), EmbassySleeper);
/// inputs.try_send(Input::Abort).unwrap();
/// let step = embassy_futures::block_on(driver.next(receive(&rx))).unwrap();
/// assert_eq!(step.input, Input::Abort);
/// assert_eq!(step.outputs.unwrap()[..], [Output::AbortAgent]);
/// ```
pub async fn receive<M: RawMutex, T, const N: usize>(inputs: &Receiver<'_, M, T, N>) -> Option<T> {
    Some(inputs.receive().await)
}
