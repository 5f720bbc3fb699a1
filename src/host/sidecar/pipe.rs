//! Where the sidecar's lines come from: a [`Source`] delivers them, each
//! stamped with the time it arrived, and keeps the clock; [`Pipe`] is the
//! real one, a reader thread with bounded lines and a bounded queue, on a
//! [`Clock`].

use std::io::{self, BufRead, BufReader, Read};
use std::sync::mpsc::{self, RecvTimeoutError, SyncSender};
use std::thread;
use std::time::Duration;

use crate::host::clock::{Clock, SystemClock};

#[cfg(doc)]
use super::{serve, Sidecar};

/// The longest input line [`Pipe::new`] accepts by default, in bytes
/// (without its `\n`): 1 MiB. A longer line is answered with a
/// `line_too_long` error and skipped; `autoretry rpc --max-line-bytes N`
/// changes it.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// What a [`Source`] delivers: one [`LineEvent`] and the time it arrived,
/// on the source's clock.
#[derive(Debug)]
pub struct TimedLineEvent {
    /// When it arrived (the reader had it).
    pub at: Duration,
    /// What arrived.
    pub event: LineEvent,
}

/// What the input said next: a line, a line too long to read, the end of
/// input, or a failed read.
#[derive(Debug)]
pub enum LineEvent {
    /// A line, without its `\n`.
    Line(Vec<u8>),
    /// A line longer than `limit` bytes: `bytes` of them, skipped unread.
    TooLong {
        /// The line's length, without its `\n`.
        bytes: u64,
        /// The limit it broke.
        limit: usize,
    },
    /// The end of input.
    End,
    /// Reading failed; no more input.
    Failed(io::Error),
}

/// Where [`serve`] gets its lines and its time: [`Pipe`] in real life, a
/// virtual clock in tests.
///
/// ```
/// use std::time::Duration;
/// use autoretry::{Machine, host::sidecar::{serve, TimedLineEvent, LineEvent, Sidecar, Source}};
///
/// /// Lines that all arrived at once, on a clock that jumps to any
/// /// deadline it is asked to wait for.
/// struct AllAtOnce { lines: Vec<&'static str>, now: Duration }
///
/// impl Source for AllAtOnce {
///     fn now(&self) -> Duration { self.now }
///     fn next(&mut self, until: Option<Duration>) -> Option<TimedLineEvent> {
///         if self.lines.is_empty() {
///             if let Some(until) = until {
///                 self.now = self.now.max(until);
///                 return None;
///             }
///             return Some(TimedLineEvent { at: self.now, event: LineEvent::End });
///         }
///         let line = self.lines.remove(0);
///         Some(TimedLineEvent { at: Duration::ZERO, event: LineEvent::Line(line.into()) })
///     }
/// }
///
/// let mut source = AllAtOnce { lines: vec![
///     r#"{"type":"agent_end","message":{"stopReason":"error","errorMessage":"503"}}"#,
/// ], now: Duration::ZERO };
/// let mut sidecar = Sidecar::new(Machine::default(), Vec::new());
/// serve(&mut sidecar, &mut source).unwrap();
/// // The backoff ran out on the virtual clock: 2 s.
/// assert_eq!(source.now(), Duration::from_secs(2));
/// let out = String::from_utf8(sidecar.into_inner()).unwrap();
/// assert_eq!(out.lines().nth(3), Some(r#"{"type":"action","action":"continue_agent"}"#));
/// ```
pub trait Source {
    /// The time now, on this source's clock (since any fixed origin).
    fn now(&self) -> Duration;

    /// The next event, waiting for it at most until `until` (forever when
    /// `None`); `None` when `until` passed first. After [`LineEvent::End`] or
    /// [`LineEvent::Failed`] it is not called again.
    fn next(&mut self, until: Option<Duration>) -> Option<TimedLineEvent>;
}

/// The real [`Source`]: a thread reads lines from `R`, stamped on the
/// pipe's [`Clock`] (real time from [`Pipe::new`]), into a bounded queue: at most [`READ_AHEAD_LINES`]
/// lines are read ahead of the sidecar (passed on in batches of what the
/// client has already written, so a fast client costs no thread switch per
/// line). A line longer than the limit is skipped as it is read, never
/// held, and reported as [`LineEvent::TooLong`].
///
/// ```
/// use autoretry::host::sidecar::{LineEvent, Pipe, Source};
/// let mut pipe = Pipe::new(&b"{}\nxxxxxxxx\n"[..], 4);
/// assert!(matches!(pipe.next(None).unwrap().event, LineEvent::Line(line) if line == b"{}"));
/// assert!(matches!(pipe.next(None).unwrap().event, LineEvent::TooLong { bytes: 8, limit: 4 }));
/// assert!(matches!(pipe.next(None).unwrap().event, LineEvent::End));
/// ```
#[derive(Debug)]
pub struct Pipe<C: Clock = SystemClock> {
    rx: mpsc::Receiver<Vec<TimedLineEvent>>,
    /// The batch being handed out, in order.
    batch: std::collections::VecDeque<TimedLineEvent>,
    clock: C,
}

/// The lines of one batch, at most.
const BATCH_LINES: usize = 64;
/// A batch is passed on once it holds this many bytes.
const BATCH_BYTES: usize = 64 * 1024;
/// Batches waiting in the channel, at most.
const QUEUE_BATCHES: usize = 2;

/// How many lines a [`Pipe`] reads ahead of the sidecar, at most (the
/// batches in the queue, the one being handed out and the one being
/// read). When they are all waiting the reader stops reading, and the pipe
/// holds the client back. Their bytes are bounded too: a batch is passed
/// on at 64 KiB, so the queue holds at most about four batches of 64 KiB
/// or one line each.
pub const READ_AHEAD_LINES: usize = (QUEUE_BATCHES + 2) * BATCH_LINES;

impl Pipe {
    /// Starts the reader thread on `input`, with lines of at most
    /// `max_line_bytes` bytes (without the `\n`), in real time.
    pub fn new<R: Read + Send + 'static>(input: R, max_line_bytes: usize) -> Pipe {
        Pipe::with_clock(input, max_line_bytes, SystemClock::new())
    }
}

impl<C: Clock> Pipe<C> {
    /// Starts the reader thread on `input`, with lines of at most
    /// `max_line_bytes` bytes (without the `\n`), on `clock`: lines are
    /// stamped and deadlines awaited on it (`autoretry rpc --time-scale`
    /// passes a scaled clock).
    ///
    /// ```
    /// use std::time::Duration;
    /// use autoretry::host::{clock::VirtualClock, sidecar::{LineEvent, Pipe, Source}};
    /// let clock = VirtualClock::new();
    /// clock.advance(Duration::from_secs(5));
    /// let mut pipe = Pipe::with_clock(&b"{}\n"[..], 1024, clock.clone());
    /// let arrival = pipe.next(None).unwrap();
    /// assert!(matches!(arrival.event, LineEvent::Line(line) if line == b"{}"));
    /// assert_eq!(arrival.at, Duration::from_secs(5)); // stamped on the pipe's clock
    /// assert_eq!(pipe.now(), Duration::from_secs(5));
    /// ```
    pub fn with_clock<R: Read + Send + 'static>(
        input: R,
        max_line_bytes: usize,
        clock: C,
    ) -> Pipe<C> {
        let (tx, rx) = mpsc::sync_channel(QUEUE_BATCHES);
        let input = BufReader::with_capacity(BATCH_BYTES, input);
        let stamps = clock.clone();
        // Detached: it ends at the end of input, or at its next line once
        // the sidecar is gone.
        thread::spawn(move || read_lines(input, &tx, max_line_bytes, &stamps));
        Pipe {
            rx,
            batch: std::collections::VecDeque::new(),
            clock,
        }
    }

    /// The next batch, waiting at most until `until`; false when `until`
    /// passed first.
    fn refill(&mut self, until: Option<Duration>) -> bool {
        match self.clock.recv_until(&self.rx, until) {
            Ok(batch) => self.batch.extend(batch),
            Err(RecvTimeoutError::Timeout) => return false,
            // The reader is gone without a word: the end.
            Err(RecvTimeoutError::Disconnected) => self.batch.push_back(TimedLineEvent {
                at: self.clock.now(),
                event: LineEvent::End,
            }),
        }
        true
    }
}

impl<C: Clock> Source for Pipe<C> {
    fn now(&self) -> Duration {
        self.clock.now()
    }

    fn next(&mut self, until: Option<Duration>) -> Option<TimedLineEvent> {
        if self.batch.is_empty() && !self.refill(until) {
            return None;
        }
        self.batch.pop_front()
    }
}

/// Sends every line of `input` (without its `\n`; a line over `max` bytes
/// as [`LineEvent::TooLong`], dropped as it is read), then the end or the read
/// error, in batches: a batch goes when it is full or when the next line
/// is not all read yet. Stops when the receiver is gone.
fn read_lines<R: Read>(
    mut input: BufReader<R>,
    tx: &SyncSender<Vec<TimedLineEvent>>,
    max: usize,
    clock: &impl Clock,
) {
    let mut batch = Vec::new();
    let mut batch_bytes = 0;
    let mut line = Vec::new();
    let mut bytes: u64 = 0;
    loop {
        // The next line is not all read: what is read goes first.
        if !batch.is_empty() && !input.buffer().contains(&b'\n') {
            batch_bytes = 0;
            if tx.send(std::mem::take(&mut batch)).is_err() {
                return;
            }
        }
        let (complete, used) = match input.fill_buf() {
            Ok([]) => {
                // A last line without its `\n` counts.
                if bytes > 0 {
                    batch.push(TimedLineEvent {
                        at: clock.now(),
                        event: take_line(&mut line, bytes, max),
                    });
                }
                batch.push(TimedLineEvent {
                    at: clock.now(),
                    event: LineEvent::End,
                });
                let _ = tx.send(batch);
                return;
            }
            Ok(buf) => {
                let (piece, complete) = match buf.iter().position(|&b| b == b'\n') {
                    Some(end) => (&buf[..end], true),
                    None => (buf, false),
                };
                bytes = bytes.saturating_add(piece.len() as u64);
                if bytes <= max as u64 {
                    line.extend_from_slice(piece);
                } else if !line.is_empty() {
                    // Too long: what was kept goes, the rest is skipped.
                    line = Vec::new();
                }
                (complete, piece.len() + usize::from(complete))
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                batch.push(TimedLineEvent {
                    at: clock.now(),
                    event: LineEvent::Failed(e),
                });
                let _ = tx.send(batch);
                return;
            }
        };
        input.consume(used);
        if complete {
            batch_bytes += line.len();
            batch.push(TimedLineEvent {
                at: clock.now(),
                event: take_line(&mut line, bytes, max),
            });
            bytes = 0;
            if batch.len() == BATCH_LINES || batch_bytes >= BATCH_BYTES {
                batch_bytes = 0;
                if tx.send(std::mem::take(&mut batch)).is_err() {
                    return;
                }
            }
        }
    }
}

/// The line read so far, as an event; `line` is left empty.
fn take_line(line: &mut Vec<u8>, bytes: u64, max: usize) -> LineEvent {
    if bytes > max as u64 {
        LineEvent::TooLong { bytes, limit: max }
    } else {
        LineEvent::Line(std::mem::take(line))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_bounds_long_lines() {
        let mut input = b"ab\n".to_vec();
        input.extend(vec![b'x'; 100_000]);
        input.extend(b"\ncd\r\nlast");
        // Three bytes per read: lines arrive in pieces.
        struct Trickle(io::Cursor<Vec<u8>>);
        impl Read for Trickle {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(3);
                self.0.read(&mut buf[..n])
            }
        }
        let mut pipe = Pipe::new(Trickle(io::Cursor::new(input)), 10);
        let mut items = Vec::new();
        loop {
            let item = pipe.next(None).unwrap().event;
            let end = matches!(item, LineEvent::End);
            items.push(format!("{item:?}"));
            if end {
                break;
            }
        }
        assert_eq!(
            items,
            [
                format!("{:?}", LineEvent::Line(b"ab".to_vec())),
                format!(
                    "{:?}",
                    LineEvent::TooLong {
                        bytes: 100_000,
                        limit: 10
                    }
                ),
                format!("{:?}", LineEvent::Line(b"cd\r".to_vec())),
                format!("{:?}", LineEvent::Line(b"last".to_vec())),
                format!("{:?}", LineEvent::End),
            ]
        );
        // Exactly the limit is accepted.
        let mut pipe = Pipe::new(&b"0123456789\n"[..], 10);
        assert!(matches!(pipe.next(None).unwrap().event, LineEvent::Line(l) if l.len() == 10));
    }
}
