//! The async driver on [tokio](https://tokio.rs) (feature `tokio`): a
//! [`Driver`] whose [`Sleeper`] is tokio's timer, fed owned inputs
//! ([`InputBuf`] by default) from any future, typically a channel's
//! `recv()`.
//!
//! ```
//! use autoretry::host::tokio::{TokioDriver, TokioSleeper};
//! use autoretry::{InputBuf, Machine, MessageBuf, Output, StopReason};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let (tx, mut rx) = tokio::sync::mpsc::channel(4);
//! tx.send(InputBuf::agent_end(MessageBuf::error(String::from("503 Service Unavailable")))).await.unwrap();
//! let mut driver = TokioDriver::new(Machine::default(), TokioSleeper);
//! let mut log = Vec::new();
//! while let Some(step) = driver.next(rx.recv()).await {
//!     // A refused input (spec §6a) changed nothing: here, none is.
//!     let Ok(outputs) = step.outputs else { panic!("refused: {:?}", step.input) };
//!     for output in outputs {
//!         log.push(output.type_name());
//!         match output {
//!             // 2 s later (in tokio's time): the agent runs again and answers well.
//!             Output::ContinueAgent => tx.send(InputBuf::agent_end(MessageBuf::new(StopReason::Stop))).await.unwrap(),
//!             Output::CheckCompaction => rx.close(), // the prompt is over
//!             _ => {}
//!         }
//!     }
//! }
//! assert_eq!(log, ["emit", "drop_trailing_error", "sleep", "continue_agent",
//!                  "emit", "settled", "check_compaction"]);
//! # }
//! ```
//!
//! `examples/tokio_agent.rs` is a whole agent: a flaky provider, and Esc
//! (abort) from a channel.

use std::time::Duration;

use ::tokio::time::{sleep_until, Instant, Sleep};

use crate::host::driver::{Driver, Sleeper};
use crate::InputBuf;

/// Tokio's clock and timer ([`tokio::time`]): under a
/// paused clock (`start_paused`, `tokio::time::pause`) the driver runs in
/// virtual time.
///
/// ```
/// use autoretry::host::{driver::Sleeper, tokio::TokioSleeper};
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let now = TokioSleeper.now();
/// assert_eq!(TokioSleeper.after(now, 2000).unwrap() - now, std::time::Duration::from_secs(2));
/// TokioSleeper.sleep_until(now).await;
/// // The milliseconds between two instants, rounded down: a stream's `nowMs`.
/// let later = now + std::time::Duration::from_micros(2_999);
/// assert_eq!((TokioSleeper.ms_between(now, later), TokioSleeper.ms_between(later, now)), (2, 0));
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    type Instant = Instant;
    type Sleep = Sleep;

    fn now(&self) -> Instant {
        Instant::now()
    }

    fn after(&self, at: Instant, ms: u64) -> Option<Instant> {
        at.checked_add(Duration::from_millis(ms))
    }

    fn sleep_until(&self, at: Instant) -> Sleep {
        sleep_until(at)
    }

    fn ms_between(&self, from: Instant, to: Instant) -> u64 {
        u64::try_from(to.saturating_duration_since(from).as_millis()).unwrap_or(u64::MAX)
    }
}

/// The driver on tokio, fed `I` ([`InputBuf`] unless said otherwise):
/// `TokioDriver::new(machine, TokioSleeper)`.
pub type TokioDriver<I = InputBuf> = Driver<TokioSleeper, I>;
