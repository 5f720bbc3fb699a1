//! The clock of `--time-scale`: [`ScaledClock`], real time run faster or
//! slower, which `rpc` hands to the sidecar's pipe and `simulate` to its
//! thread driver. The hosts only read it; the scale is the CLI's alone.

use std::sync::mpsc::{Receiver, RecvTimeoutError, TryRecvError};
use std::time::{Duration, Instant};

use autoretry::host::clock::{Clock, VirtualClock};

/// A clock on which a millisecond of backoff takes `scale` real
/// milliseconds: 0.01 runs a 2 s backoff in 20 ms, 1 is real time, an
/// infinite scale never ends a backoff, and 0 ends every backoff as soon as
/// nothing else is waiting (a [`VirtualClock`]).
#[derive(Clone, Debug)]
pub enum ScaledClock {
    /// Real time divided by the scale (more than 0, up to infinity).
    Scaled {
        /// When the clock read zero.
        origin: Instant,
        /// Real milliseconds per clock millisecond.
        scale: f64,
    },
    /// Scale 0.
    Skipping(VirtualClock),
}

impl ScaledClock {
    /// A clock at `scale` (0 or more; the CLI refuses anything else, and a
    /// NaN or negative scale counts as 0 here).
    pub fn new(scale: f64) -> Self {
        if scale > 0.0 {
            ScaledClock::Scaled {
                origin: Instant::now(),
                scale,
            }
        } else {
            ScaledClock::Skipping(VirtualClock::new())
        }
    }

    /// The real time `span` of this clock takes; `None` when it never ends
    /// (an infinite scale, or beyond `Duration`).
    pub fn real(&self, span: Duration) -> Option<Duration> {
        match self {
            ScaledClock::Scaled { scale, .. } if *scale == 1.0 => Some(span),
            ScaledClock::Scaled { scale, .. } => {
                Duration::try_from_secs_f64(span.as_secs_f64() * scale).ok()
            }
            ScaledClock::Skipping(_) => Some(Duration::ZERO),
        }
    }

    /// The time on this clock that `real` time covers; `None` when it is
    /// beyond `Duration` (at scale 0, any real time is).
    pub fn span(&self, real: Duration) -> Option<Duration> {
        match self {
            ScaledClock::Scaled { scale, .. } if *scale == 1.0 => Some(real),
            ScaledClock::Scaled { scale, .. } => {
                Duration::try_from_secs_f64(real.as_secs_f64() / scale).ok()
            }
            ScaledClock::Skipping(_) => None,
        }
    }
}

impl Clock for ScaledClock {
    fn now(&self) -> Duration {
        match self {
            ScaledClock::Scaled { origin, .. } => {
                self.span(origin.elapsed()).unwrap_or(Duration::MAX)
            }
            ScaledClock::Skipping(clock) => clock.now(),
        }
    }

    fn recv_until<T>(
        &self,
        rx: &Receiver<T>,
        until: Option<Duration>,
    ) -> Result<T, RecvTimeoutError> {
        if let ScaledClock::Skipping(clock) = self {
            return clock.recv_until(rx, until);
        }
        let wait = until.map(|until| until.saturating_sub(self.now()));
        match wait.map(|wait| (wait, self.real(wait))) {
            // No deadline, or one that real time never reaches.
            None | Some((_, None)) => rx.recv().map_err(|_| RecvTimeoutError::Disconnected),
            Some((wait, _)) if wait.is_zero() => rx.try_recv().map_err(|e| match e {
                TryRecvError::Empty => RecvTimeoutError::Timeout,
                TryRecvError::Disconnected => RecvTimeoutError::Disconnected,
            }),
            // Rounding may end it a hair early: the host reads the clock
            // again and waits the rest.
            Some((_, Some(real))) => rx.recv_timeout(real),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn a_scaled_clock_runs_its_backoffs_at_scale() {
        let clock = ScaledClock::new(0.01);
        assert_eq!(
            clock.real(Duration::from_secs(2)),
            Some(Duration::from_millis(20))
        );
        assert_eq!(
            clock.span(Duration::from_millis(20)),
            Some(Duration::from_secs(2))
        );
        let (_tx, rx) = mpsc::channel::<()>();
        let start = Instant::now();
        let until = clock.now() + Duration::from_secs(1);
        while clock.now() < until {
            assert!(clock.recv_until(&rx, Some(until)).is_err());
        }
        // 1 s of clock time in about 10 ms.
        assert!(start.elapsed() >= Duration::from_millis(10));
        assert!(start.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn the_extreme_scales() {
        let frozen = ScaledClock::new(f64::INFINITY);
        assert_eq!(frozen.real(Duration::from_millis(1)), None);
        assert_eq!(frozen.now(), Duration::ZERO);
        let skipping = ScaledClock::new(0.0);
        assert_eq!(skipping.real(Duration::from_secs(9)), Some(Duration::ZERO));
        let (_tx, rx) = mpsc::channel::<()>();
        assert!(skipping
            .recv_until(&rx, Some(Duration::from_secs(9)))
            .is_err());
        assert_eq!(skipping.now(), Duration::from_secs(9));
        assert!(matches!(
            ScaledClock::new(f64::NAN),
            ScaledClock::Skipping(_)
        ));
    }
}
