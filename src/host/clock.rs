//! The hosts' clock (feature `std`): [`Clock`], the time the thread driver
//! and the sidecar's pipe keep their backoff deadlines on and wait by.
//!
//! A host's time is a [`Duration`] since its clock's origin. A backoff of
//! `ms` milliseconds is due `ms` milliseconds later on that clock; how
//! clock time maps to real time is the clock's alone, so no host scales
//! anything:
//!
//! - [`SystemClock`] is real time (the default of every host);
//! - [`VirtualClock`] stands still until a wait for a deadline finds
//!   nothing to take, then jumps to the deadline (tests, and
//!   `autoretry rpc --time-scale 0`): every backoff is over at once, yet a
//!   message that was waiting still goes first;
//! - a clock of one's own implements the two methods, such as the CLI's
//!   `--time-scale`, which runs real time faster or slower.
//!
//! ```
//! use std::sync::mpsc;
//! use std::time::Duration;
//! use autoretry::host::clock::{Clock, VirtualClock};
//!
//! let clock = VirtualClock::new();
//! let (tx, rx) = mpsc::channel();
//! tx.send("early").unwrap();
//! // A message is waiting: it is taken, and the clock stays.
//! assert_eq!(clock.recv_until(&rx, Some(Duration::from_secs(2))), Ok("early"));
//! assert_eq!(clock.now(), Duration::ZERO);
//! // Nothing is waiting: the clock jumps to the deadline.
//! assert!(clock.recv_until(&rx, Some(Duration::from_secs(2))).is_err());
//! assert_eq!(clock.now(), Duration::from_secs(2));
//! ```

use core::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A host's clock: the time now, and a channel wait that ends at an
/// instant on this clock.
///
/// `Clone + Send + 'static` so that a reader thread can stamp what it reads
/// on the same clock (the sidecar's [`Pipe`](crate::host::sidecar::Pipe)):
/// clones share one time.
///
/// ```
/// use std::sync::mpsc::{Receiver, RecvTimeoutError};
/// use std::time::{Duration, Instant};
/// use autoretry::host::clock::Clock;
///
/// /// Real time, twice as fast: a 2 s backoff takes 1 s.
/// #[derive(Clone, Debug)]
/// struct Double(Instant);
///
/// impl Clock for Double {
///     fn now(&self) -> Duration {
///         self.0.elapsed() * 2
///     }
///     fn recv_until<T>(&self, rx: &Receiver<T>, until: Option<Duration>) -> Result<T, RecvTimeoutError> {
///         match until {
///             None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
///             Some(until) => rx.recv_timeout(until.saturating_sub(self.now()) / 2),
///         }
///     }
/// }
///
/// let clock = Double(Instant::now());
/// let (_tx, rx) = std::sync::mpsc::channel::<()>();
/// assert_eq!(clock.recv_until(&rx, Some(Duration::from_millis(4))), Err(RecvTimeoutError::Timeout));
/// assert!(clock.now() >= Duration::from_millis(4));
/// ```
pub trait Clock: Clone + Debug + Send + 'static {
    /// The time now on this clock, since its origin. It never goes back.
    fn now(&self) -> Duration;

    /// Takes a message from `rx`, waiting for one at most until this clock
    /// reads `until` (forever when `None`; at once, taking only a message
    /// already there, when `until` has passed). The errors are
    /// [`mpsc::Receiver::recv_timeout`](std::sync::mpsc::Receiver::recv_timeout)'s:
    /// `Timeout` when `until` came first (it may return early; the caller
    /// reads [`Clock::now`] again), `Disconnected` when every sender is
    /// gone.
    fn recv_until<T>(
        &self,
        rx: &Receiver<T>,
        until: Option<Duration>,
    ) -> Result<T, RecvTimeoutError>;
}

/// Real time since the clock was made: the default clock of every host.
///
/// ```
/// use std::time::Duration;
/// use autoretry::host::clock::{Clock, SystemClock};
/// let clock = SystemClock::new();
/// let (_tx, rx) = std::sync::mpsc::channel::<()>();
/// assert!(clock.recv_until(&rx, Some(Duration::from_millis(2))).is_err());
/// assert!(clock.now() >= Duration::from_millis(2));
/// ```
#[derive(Clone, Copy, Debug)]
pub struct SystemClock {
    origin: Instant,
}

impl SystemClock {
    /// A clock whose origin is now.
    pub fn new() -> Self {
        SystemClock {
            origin: Instant::now(),
        }
    }
}

/// A clock whose origin is now.
impl Default for SystemClock {
    fn default() -> Self {
        SystemClock::new()
    }
}

impl Clock for SystemClock {
    fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    fn recv_until<T>(
        &self,
        rx: &Receiver<T>,
        until: Option<Duration>,
    ) -> Result<T, RecvTimeoutError> {
        match until {
            None => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some(until) => match until.checked_sub(self.now()).filter(|w| !w.is_zero()) {
                None => try_recv(rx),
                // Beyond `Instant`'s range, `recv_timeout` waits forever.
                Some(wait) => rx.recv_timeout(wait),
            },
        }
    }
}

/// A clock that stands still, except that a wait for a deadline that finds
/// no message jumps it to the deadline: every backoff is over as soon as
/// the host has nothing else to do, and a message already waiting still
/// goes first. Clones share one time. For tests, and `autoretry rpc
/// --time-scale 0`.
///
/// ```
/// use std::sync::mpsc;
/// use std::time::Duration;
/// use autoretry::{AssistantMessage, Input, Machine, Output};
/// use autoretry::host::{clock::{Clock, VirtualClock}, thread::{ThreadDriver, WaitOutcome}};
///
/// let clock = VirtualClock::new();
/// let mut driver = ThreadDriver::with_clock(Machine::default(), clock.clone());
/// driver.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None });
/// let (_tx, rx) = mpsc::channel::<()>();
/// let WaitOutcome::Fired(step) = driver.wait(&rx, None) else { panic!("the timer fires") };
/// assert_eq!(step.outputs.unwrap()[..], [Output::ContinueAgent]);
/// assert_eq!(clock.now(), Duration::from_secs(2)); // at once, in real time
/// ```
#[derive(Clone, Debug, Default)]
pub struct VirtualClock {
    /// Nanoseconds since the origin.
    nanos: Arc<AtomicU64>,
}

impl VirtualClock {
    /// A clock at its origin.
    pub fn new() -> Self {
        VirtualClock::default()
    }

    /// Moves the clock `by` forward (saturating at about 584 years), as if
    /// that much time had passed.
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::host::clock::{Clock, VirtualClock};
    /// let clock = VirtualClock::new();
    /// clock.advance(Duration::from_millis(1500));
    /// assert_eq!(clock.now(), Duration::from_millis(1500));
    /// ```
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // `fetch_update` with a closure that always succeeds cannot fail.
        let _ = self
            .nanos
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |now| {
                Some(now.saturating_add(by))
            });
    }

    /// Moves the clock to `to` unless it is already there or later.
    fn reach(&self, to: Duration) {
        let to = u64::try_from(to.as_nanos()).unwrap_or(u64::MAX);
        self.nanos.fetch_max(to, Ordering::SeqCst);
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Duration {
        Duration::from_nanos(self.nanos.load(Ordering::SeqCst))
    }

    fn recv_until<T>(
        &self,
        rx: &Receiver<T>,
        until: Option<Duration>,
    ) -> Result<T, RecvTimeoutError> {
        let Some(until) = until else {
            return rx.recv().map_err(|_| RecvTimeoutError::Disconnected);
        };
        let taken = try_recv(rx);
        if matches!(taken, Err(RecvTimeoutError::Timeout)) {
            self.reach(until);
        }
        taken
    }
}

/// A message already in `rx`, with `recv_timeout`'s errors.
fn try_recv<T>(rx: &Receiver<T>) -> Result<T, RecvTimeoutError> {
    rx.try_recv().map_err(|e| match e {
        TryRecvError::Empty => RecvTimeoutError::Timeout,
        TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_virtual_clock_never_goes_back() {
        let clock = VirtualClock::new();
        let (tx, rx) = mpsc::channel::<u8>();
        clock.advance(Duration::from_secs(5));
        // A deadline already passed: no jump back.
        assert_eq!(
            clock.recv_until(&rx, Some(Duration::from_secs(1))),
            Err(RecvTimeoutError::Timeout)
        );
        assert_eq!(clock.now(), Duration::from_secs(5));
        // Clones share the time.
        let other = clock.clone();
        other.advance(Duration::MAX);
        assert_eq!(clock.now(), Duration::from_nanos(u64::MAX));
        drop(tx);
        assert_eq!(
            clock.recv_until(&rx, None),
            Err(RecvTimeoutError::Disconnected)
        );
    }

    #[test]
    fn the_system_clock_takes_a_waiting_message_at_a_passed_deadline() {
        let clock = SystemClock::new();
        let (tx, rx) = mpsc::channel();
        tx.send(1).unwrap();
        assert_eq!(clock.recv_until(&rx, Some(Duration::ZERO)), Ok(1));
        assert_eq!(
            clock.recv_until(&rx, Some(Duration::ZERO)),
            Err(RecvTimeoutError::Timeout)
        );
        // A deadline beyond any clock: a message still arrives.
        tx.send(2).unwrap();
        assert_eq!(clock.recv_until(&rx, Some(Duration::MAX)), Ok(2));
        drop(tx);
        assert_eq!(
            clock.recv_until(&rx, Some(Duration::MAX)),
            Err(RecvTimeoutError::Disconnected)
        );
    }
}
