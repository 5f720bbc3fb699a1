//! The sidecar on a virtual clock (feature `std`): a [`Script`] of lines
//! with the times they arrive, a [`Source`] for
//! [`autoretry::host::sidecar::serve`] whose clock moves only as the script
//! says, and a [`Log`] of what was delivered and written, in order. With
//! them a test checks the sidecar's fairness under any interleaving of
//! lines and timer deadlines, deterministically.
//!
//! ```
//! use std::time::Duration;
//! use autoretry::{Machine, host::sidecar::{serve, Sidecar}};
//! use autoretry_testkit::sidecar::{Entry, Log, Script};
//!
//! let ms = Duration::from_millis;
//! let log = Log::new();
//! let mut script = Script::new(ms(0), log.clone())
//!     .line(ms(0), r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#)
//!     // Polls before and after the 2 s deadline.
//!     .line(ms(1999), r#"{"type":"get_retry_state"}"#)
//!     .line(ms(2000), r#"{"type":"get_retry_state"}"#)
//!     .end(ms(2001));
//! let mut sidecar = Sidecar::new(Machine::default(), log.writer());
//! serve(&mut sidecar, &mut script).unwrap();
//! let lines: Vec<String> = log.entries().into_iter().filter_map(|e| match e {
//!     Entry::Line(line) => Some(line),
//!     _ => None,
//! }).collect();
//! // The timer fired ahead of the poll that arrived at its deadline.
//! assert!(lines[3].contains(r#""isRetrying":true,"retryAttempt":1"#));
//! assert_eq!(lines[4], r#"{"type":"action","action":"continue_agent"}"#);
//! assert!(lines[5].contains(r#""command":"get_retry_state""#));
//! ```

use std::cell::RefCell;
use std::collections::VecDeque;
use std::io::{self, Write};
use std::rc::Rc;
use std::time::Duration;

use autoretry::host::sidecar::{LineEvent, Source, TimedLineEvent};

/// One thing that happened, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Entry {
    /// The source delivered a line (or the end) that arrived at `at`; the
    /// sidecar handles it at `now` (after the line's cost).
    Delivered {
        /// When it arrived.
        at: Duration,
        /// The clock once it is delivered.
        now: Duration,
        /// The line (`None`: the end of input).
        line: Option<String>,
    },
    /// The source waited until `now` with no line (a deadline came first).
    Idle {
        /// The clock after the wait.
        now: Duration,
    },
    /// The sidecar wrote this line.
    Line(String),
}

/// A shared, ordered log of [`Entry`]s: the script records deliveries, the
/// writer of [`Log::writer`] the lines written.
#[derive(Clone, Debug, Default)]
pub struct Log(Rc<RefCell<Vec<Entry>>>);

impl Log {
    /// An empty log.
    pub fn new() -> Log {
        Log::default()
    }

    /// A writer that logs each line written.
    pub fn writer(&self) -> LogWriter {
        LogWriter {
            log: self.clone(),
            partial: Vec::new(),
        }
    }

    /// The entries so far.
    pub fn entries(&self) -> Vec<Entry> {
        self.0.borrow().clone()
    }

    fn push(&self, entry: Entry) {
        self.0.borrow_mut().push(entry);
    }
}

/// The writer of a [`Log`]: each complete line becomes an [`Entry::Line`].
#[derive(Debug)]
pub struct LogWriter {
    log: Log,
    partial: Vec<u8>,
}

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        for &b in buf {
            if b == b'\n' {
                let line = String::from_utf8_lossy(&self.partial).into_owned();
                self.log.push(Entry::Line(line));
                self.partial.clear();
            } else {
                self.partial.push(b);
            }
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Lines that arrive at given times on a virtual clock; each costs the
/// sidecar `cost` of that clock to handle, so lines queue up when they come
/// faster. A [`Source`]: `next` moves the clock to the next arrival, or to
/// the deadline when that comes first.
#[derive(Debug)]
pub struct Script {
    items: VecDeque<(Duration, Option<String>)>,
    now: Duration,
    cost: Duration,
    log: Log,
}

impl Script {
    /// An empty script, each line costing `cost`, logging to `log`.
    pub fn new(cost: Duration, log: Log) -> Script {
        Script {
            items: VecDeque::new(),
            now: Duration::ZERO,
            cost,
            log,
        }
    }

    /// Adds a line arriving at `at` (at or after the previous one).
    pub fn line(mut self, at: Duration, line: &str) -> Script {
        self.items.push_back((at, Some(line.to_owned())));
        self
    }

    /// Adds the end of input at `at`.
    pub fn end(mut self, at: Duration) -> Script {
        self.items.push_back((at, None));
        self
    }
}

impl Source for Script {
    fn now(&self) -> Duration {
        self.now
    }

    fn next(&mut self, until: Option<Duration>) -> Option<TimedLineEvent> {
        let at = match self.items.front() {
            None => {
                return Some(TimedLineEvent {
                    at: self.now,
                    event: LineEvent::End,
                })
            }
            Some(&(at, _)) => at,
        };
        if at > self.now {
            match until {
                Some(until) if until < at => {
                    self.now = self.now.max(until);
                    self.log.push(Entry::Idle { now: self.now });
                    return None;
                }
                _ => self.now = at,
            }
        }
        let (at, line) = self.items.pop_front()?;
        self.now += self.cost;
        self.log.push(Entry::Delivered {
            at,
            now: self.now,
            line: line.clone(),
        });
        Some(TimedLineEvent {
            at,
            event: line.map_or(LineEvent::End, |line| LineEvent::Line(line.into_bytes())),
        })
    }
}
