//! Time for the demo: a time scale shared by the provider and the agent
//! (a plan millisecond takes `scale` real milliseconds), the driver's
//! sleeper on that scale, the monotonic clock the stream inputs carry,
//! and the wall clock with its RFC 3339 form for rate-limit resets.
//!
//! ```
//! use autoretry_demo::clock::{rfc3339, Scale};
//! assert_eq!(rfc3339(0), "1970-01-01T00:00:00.000Z");
//! assert_eq!(rfc3339(1_764_925_201_500), "2025-12-05T09:00:01.500Z");
//! assert_eq!(Scale::new(0.5).unwrap().real(2000), std::time::Duration::from_secs(1));
//! assert!(Scale::new(0.0).is_none());
//! ```

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use autoretry::host::driver::Sleeper;
use tokio::time::{sleep_until, Instant, Sleep};

/// How many real milliseconds a plan millisecond takes: a finite number
/// above 0 (0.1: ten times faster).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scale(f64);

impl Scale {
    /// Real time.
    pub const REAL: Scale = Scale(1.0);

    /// The scale, when finite and above 0.
    pub fn new(scale: f64) -> Option<Scale> {
        (scale.is_finite() && scale > 0.0).then_some(Scale(scale))
    }

    /// The factor.
    pub fn get(self) -> f64 {
        self.0
    }

    /// The real duration of `ms` plan milliseconds (saturating).
    pub fn real(self, ms: u64) -> Duration {
        Duration::try_from_secs_f64(ms as f64 * self.0 / 1000.0).unwrap_or(Duration::MAX)
    }

    /// The plan milliseconds of a real duration (rounded down).
    pub fn plan_ms(self, real: Duration) -> u64 {
        (real.as_secs_f64() * 1000.0 / self.0) as u64
    }
}

/// The driver's sleeper on tokio's timer, a backoff of `ms` taking
/// `scale.real(ms)`.
#[derive(Clone, Copy, Debug)]
pub struct ScaledSleeper {
    /// The scale.
    pub scale: Scale,
}

impl Sleeper for ScaledSleeper {
    type Instant = Instant;
    type Sleep = Sleep;

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn after(&self, at: Instant, ms: u64) -> Option<Instant> {
        at.checked_add(self.scale.real(ms))
    }

    fn sleep_until(&self, at: Instant) -> Sleep {
        sleep_until(at)
    }

    fn ms_between(&self, from: Instant, to: Instant) -> u64 {
        self.scale.plan_ms(to.saturating_duration_since(from))
    }
}

/// A monotonic clock in plan milliseconds from its start: the `nowMs` of
/// `stream_start` and `stream_event`.
#[derive(Clone, Copy, Debug)]
pub struct Monotonic {
    origin: Instant,
    scale: Scale,
}

impl Monotonic {
    /// A clock at 0 now.
    pub fn start(scale: Scale) -> Monotonic {
        Monotonic {
            origin: Instant::now(),
            scale,
        }
    }

    /// Plan milliseconds since the start.
    pub fn now_ms(&self) -> u64 {
        self.scale.plan_ms(self.origin.elapsed())
    }
}

/// The wall clock in Unix milliseconds.
pub fn wall_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Unix milliseconds as an RFC 3339 time in UTC with milliseconds, as
/// Anthropic writes its rate-limit resets.
pub fn rfc3339(unix_ms: u64) -> String {
    let secs = unix_ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil from days (proleptic Gregorian), after H. Hinnant.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        unix_ms % 1000
    )
}
