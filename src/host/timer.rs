//! The backoff timer every host keeps: [`BackoffTimer`], the machine's
//! pending timer and its deadline on the host's clock.
//!
//! The machine names its timers and says how long each waits; the host
//! owns the clock. [`BackoffTimer::carry_out`] carries out the timer
//! outputs of a step ([`Output::Sleep`] arms it, and so does the stream's
//! [`Output::Watch`] (spec §12.2: the machine never has both pending), [`Output::CancelTimer`]
//! of the armed timer disarms it, a stale id changes nothing) and
//! [`BackoffTimer::take_due`] hands out the timer to fire once its
//! deadline has passed. The thread driver, the async driver and the
//! sidecar all keep one; a host that drives the machine by hand can too.
//!
//! # Fairness
//!
//! Every host follows one rule: a due timer fires before any input that
//! arrived at or after its deadline, so `continue_agent` is never later
//! than the input in hand when the deadline passed, however fast inputs
//! come. The sidecar knows when each line arrived and fires the timer
//! ahead of every line stamped at or after its deadline; the thread and
//! async drivers, whose channels carry no time, read their clock before
//! they take an input and fire a timer that is due
//! ([`BackoffTimer::take_due`]) first. An input they take before the
//! deadline (an `abort_retry` in time) still goes first.

use crate::{Output, TimerId};

/// The machine's pending backoff timer and its deadline, an instant of
/// type `T` on the host's clock (`std::time::Instant`, a tokio or embassy
/// `Instant`, a `Duration` since some origin, plain milliseconds).
///
/// `no_std`, no allocation: two words and an instant.
///
/// ```
/// use autoretry::host::timer::BackoffTimer;
/// use autoretry::{AssistantMessage, Input, Machine, Output};
///
/// // A host whose clock counts milliseconds.
/// let mut machine = Machine::default();
/// let mut timer = BackoffTimer::new();
/// let now = 1_000;
/// let outputs = machine.handle(Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None }).unwrap();
/// timer.carry_out(&outputs, machine.pending_timer(), |ms| u64::checked_add(now, ms));
/// assert_eq!(timer.deadline(), Some(3_000)); // 2 s later
///
/// // Not yet due; then due: it fires once.
/// assert_eq!(timer.take_due(2_999), None);
/// let fired = timer.take_due(3_000).unwrap();
/// assert_eq!(timer.deadline(), None);
/// let outputs = machine.handle(Input::TimerFired { timer: fired }).unwrap();
/// assert_eq!(outputs[..], [Output::ContinueAgent]);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct BackoffTimer<T> {
    armed: Option<Armed<T>>,
}

/// Disarmed.
impl<T> Default for BackoffTimer<T> {
    fn default() -> Self {
        BackoffTimer { armed: None }
    }
}

/// An armed timer: its id and deadline (`None`: beyond the clock's range,
/// it never fires).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
struct Armed<T> {
    timer: TimerId,
    at: Option<T>,
}

impl<T: Copy + PartialOrd> BackoffTimer<T> {
    /// A disarmed timer.
    ///
    /// ```
    /// use autoretry::host::timer::BackoffTimer;
    /// assert_eq!(BackoffTimer::<u64>::new().timer(), None);
    /// ```
    pub const fn new() -> Self {
        BackoffTimer { armed: None }
    }

    /// Arms `timer` to fire at `at` (`None`: never), replacing any armed
    /// one: for a machine restored in a backoff, whose deadline the host
    /// kept.
    ///
    /// ```
    /// use autoretry::{host::timer::BackoffTimer, TimerId};
    /// let mut timer = BackoffTimer::new();
    /// timer.arm(TimerId(4), Some(1_500));
    /// assert_eq!((timer.timer(), timer.deadline()), (Some(TimerId(4)), Some(1_500)));
    /// timer.arm(TimerId(5), None); // beyond the clock: armed, never due
    /// assert_eq!((timer.timer(), timer.deadline()), (Some(TimerId(5)), None));
    /// ```
    pub fn arm(&mut self, timer: TimerId, at: Option<T>) {
        self.armed = Some(Armed { timer, at });
    }

    /// Disarms the timer without firing it; returns the id it had.
    ///
    /// ```
    /// use autoretry::{host::timer::BackoffTimer, TimerId};
    /// let mut timer = BackoffTimer::new();
    /// timer.arm(TimerId(1), Some(10));
    /// assert_eq!(timer.disarm(), Some(TimerId(1)));
    /// assert_eq!(timer.disarm(), None);
    /// ```
    pub fn disarm(&mut self) -> Option<TimerId> {
        self.armed.take().map(|armed| armed.timer)
    }

    /// The armed timer's id, if one is armed.
    pub fn timer(&self) -> Option<TimerId> {
        self.armed.map(|armed| armed.timer)
    }

    /// When the armed timer is due; `None` when none is armed or it never
    /// fires.
    pub fn deadline(&self) -> Option<T> {
        self.armed.and_then(|armed| armed.at)
    }

    /// Carries out the timer outputs of one step, in order:
    /// [`Output::Sleep`] arms its timer at `after(ms)` (the host's instant
    /// `ms` milliseconds from now, rounded up to its clock's ticks; `None`
    /// when beyond its range: armed, never due), [`Output::CancelTimer`]
    /// disarms the armed timer when it names it, and a stale id changes
    /// nothing; an [`Output::Watch`] arms it as a sleep does. Then only the
    /// machine's pending timer (`pending`, its
    /// [`Machine::pending_timer`](crate::Machine::pending_timer) or
    /// [`Machine::pending_watch`](crate::Machine::pending_watch) after the
    /// step) stays armed: a timer the host fed itself, or one whose chain
    /// ended, is dropped.
    ///
    /// ```
    /// use autoretry::{host::timer::BackoffTimer, Output, TimerId};
    /// let mut timer = BackoffTimer::new();
    /// timer.carry_out(&[Output::Sleep { ms: 2000, timer: TimerId(2) }], Some(TimerId(2)), |ms| Some(ms));
    /// // A cancel of another (stale) timer changes nothing.
    /// timer.carry_out(&[Output::CancelTimer { timer: TimerId(1) }], Some(TimerId(2)), |ms| Some(ms));
    /// assert_eq!(timer.timer(), Some(TimerId(2)));
    /// timer.carry_out(&[Output::CancelTimer { timer: TimerId(2) }], None, |ms| Some(ms));
    /// assert_eq!(timer.timer(), None);
    /// ```
    pub fn carry_out(
        &mut self,
        outputs: &[Output<'_>],
        pending: Option<TimerId>,
        mut after: impl FnMut(u64) -> Option<T>,
    ) {
        for output in outputs {
            match *output {
                Output::Sleep { ms, timer } | Output::Watch { ms, timer } => {
                    self.arm(timer, after(ms));
                }
                Output::CancelTimer { timer } if self.timer() == Some(timer) => {
                    self.armed = None;
                }
                _ => {}
            }
        }
        if self.timer() != pending {
            self.armed = None;
        }
    }

    /// The timer to fire at `now`: when its deadline is at or before `now`,
    /// disarms it (it fires once) and returns its id, for the host to feed
    /// as [`Input::TimerFired`](crate::Input::TimerFired). `None` when
    /// nothing is due.
    ///
    /// ```
    /// use autoretry::{host::timer::BackoffTimer, TimerId};
    /// let mut timer = BackoffTimer::new();
    /// timer.arm(TimerId(3), Some(50));
    /// assert_eq!(timer.take_due(49), None);
    /// assert_eq!(timer.take_due(50), Some(TimerId(3)));
    /// assert_eq!(timer.take_due(60), None);
    /// ```
    pub fn take_due(&mut self, now: T) -> Option<TimerId> {
        if self.deadline().is_some_and(|at| at <= now) {
            self.disarm()
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn sleep(ms: u64, timer: u64) -> Output<'static> {
        Output::Sleep {
            ms,
            timer: TimerId(timer),
        }
    }

    const fn cancel(timer: u64) -> Output<'static> {
        Output::CancelTimer {
            timer: TimerId(timer),
        }
    }

    /// A clock at 100 ms whose range ends at `u64::MAX`.
    fn after(ms: u64) -> Option<u64> {
        100u64.checked_add(ms)
    }

    #[test]
    fn a_sleep_arms_and_a_later_one_replaces_it() {
        let mut timer = BackoffTimer::new();
        timer.carry_out(&[sleep(50, 1)], Some(TimerId(1)), after);
        assert_eq!(
            (timer.timer(), timer.deadline()),
            (Some(TimerId(1)), Some(150))
        );
        timer.carry_out(&[cancel(1), sleep(70, 2)], Some(TimerId(2)), after);
        assert_eq!(
            (timer.timer(), timer.deadline()),
            (Some(TimerId(2)), Some(170))
        );
    }

    #[test]
    fn a_stale_cancel_changes_nothing() {
        let mut timer = BackoffTimer::new();
        timer.carry_out(&[sleep(50, 2)], Some(TimerId(2)), after);
        let before = timer;
        timer.carry_out(&[cancel(1), cancel(3)], Some(TimerId(2)), after);
        assert_eq!(timer, before);
    }

    #[test]
    fn only_the_machines_pending_timer_stays_armed() {
        let mut timer = BackoffTimer::new();
        timer.carry_out(&[sleep(50, 1)], Some(TimerId(1)), after);
        // The host fed the timer itself: the machine has none pending.
        timer.carry_out(&[Output::ContinueAgent], None, after);
        assert_eq!(timer, BackoffTimer::new());
    }

    #[test]
    fn a_deadline_beyond_the_clock_never_fires() {
        let mut timer = BackoffTimer::new();
        timer.carry_out(&[sleep(u64::MAX, 1)], Some(TimerId(1)), after);
        assert_eq!((timer.timer(), timer.deadline()), (Some(TimerId(1)), None));
        assert_eq!(timer.take_due(u64::MAX), None);
        assert_eq!(timer.disarm(), Some(TimerId(1)));
    }
}
