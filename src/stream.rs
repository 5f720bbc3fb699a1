//! The stall watchdog of spec §12.2: the watched stream, its one lazy
//! watch timer, and the declared stall.
//!
//! The machine reads no clock: time is the `nowMs` of the host's
//! `stream_start` and `stream_event` inputs, and a watch timer is taken to
//! fire at its due time. The lease is lazy: a progress event only stores
//! its time, and the pending timer, when it fires, either declares the
//! stall or is armed again for what is left of the limit.

use crate::machine::{push, Machine};
use crate::output::{Output, Outputs, TimerId};

/// The stream the machine watches, if any (spec §12.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub(crate) enum Stream {
    /// No stream is watched and no stall is kept.
    None,
    /// A request is in flight and watched.
    Watched {
        /// `S`: the `nowMs` of its `stream_start`.
        start_ms: u64,
        /// `L`: the `nowMs` of its last progress event, when `has_last`.
        last_ms: u64,
        /// `D`: the due time of the pending watch timer, when `pending`;
        /// else 0.
        due_ms: u64,
        /// A progress event came (the idle phase).
        has_last: bool,
        /// A watch timer is pending: the machine's last timer id.
        pending: bool,
    },
    /// The stream stalled after a silence of `silence_ms`; kept until the
    /// next `agent_end`, `abort` or `stream_start` (rule 4).
    Stalled {
        /// The silence `s` that declared the stall.
        silence_ms: u64,
    },
}

impl Machine {
    /// The watch timer currently pending, if any (spec §12.2): at most one,
    /// and never while a backoff timer is pending.
    ///
    /// ```
    /// use autoretry::{Input, Machine, Output, RetrySettings};
    /// let mut m = Machine::new(RetrySettings::DEFAULT.with_first_event_timeout_ms(1000), Default::default());
    /// let out = m.handle(Input::StreamStart { now_ms: 0 }).unwrap();
    /// let Output::Watch { ms: 1000, timer } = out[0] else { panic!("{out:?}") };
    /// assert_eq!(m.pending_watch(), Some(timer));
    /// ```
    pub const fn pending_watch(&self) -> Option<crate::TimerId> {
        match self.stream {
            Stream::Watched { pending: true, .. } => Some(TimerId(self.timer)),
            _ => None,
        }
    }

    /// Whether a stall was declared and waits for the run's `agent_end`
    /// (spec §12.2 rule 4), with its silence.
    ///
    /// ```
    /// use autoretry::{Input, Machine, Output, RetrySettings};
    /// let mut m = Machine::new(RetrySettings::DEFAULT.with_first_event_timeout_ms(50), Default::default());
    /// let Output::Watch { timer, .. } = m.handle(Input::StreamStart { now_ms: 7 }).unwrap()[0] else { unreachable!() };
    /// assert_eq!(m.handle(Input::TimerFired { timer }).unwrap()[..], [Output::AbortAgent]);
    /// assert_eq!(m.stalled_ms(), Some(50));
    /// ```
    pub const fn stalled_ms(&self) -> Option<u64> {
        match self.stream {
            Stream::Stalled { silence_ms } => Some(silence_ms),
            _ => None,
        }
    }

    /// Whether a stream is watched (started, not ended, not stalled).
    pub const fn watches_stream(&self) -> bool {
        matches!(self.stream, Stream::Watched { .. })
    }

    /// Issues the next timer id for a watch of `ms`, due at `now + ms`;
    /// `None` once every id is spent (then nothing is watched).
    fn arm(&mut self, ms: u64) -> Option<Output<'static>> {
        if self.timer == u64::MAX {
            return None;
        }
        self.timer += 1;
        Some(Output::Watch {
            ms,
            timer: TimerId(self.timer),
        })
    }

    /// Rule 1: a request starts at `now_ms` (the caller checked that the
    /// agent may run).
    pub(crate) fn stream_start(&mut self, now_ms: u64) -> Outputs<'static> {
        let mut out = Outputs::new();
        self.end_stream(&mut out);
        let limit = self.settings.first_event_timeout_ms;
        let watch = if limit > 0 { self.arm(limit) } else { None };
        self.stream = Stream::Watched {
            start_ms: now_ms,
            last_ms: 0,
            due_ms: if watch.is_some() {
                now_ms.saturating_add(limit)
            } else {
                0
            },
            has_last: false,
            pending: watch.is_some(),
        };
        if let Some(watch) = watch {
            push(&mut out, watch);
        }
        out
    }

    /// `stream_event` at the host's monotonic `now_ms` (spec §12.2 rule 2):
    /// the host received an event of the answer that shows progress (never
    /// a keep-alive ping). Exactly what [`Machine::handle`] does and gives
    /// for [`Input::StreamEvent`], which is never refused: at most one
    /// output, returned without the output buffer `handle` builds.
    ///
    /// With no watched stream it does nothing. Otherwise it stores the time
    /// of the event; only when no watch timer is pending does it arm one
    /// for the idle limit ([`Output::Watch`], when `idleTimeoutMs > 0`).
    /// While the stream's watch is pending (the common case) the event is
    /// that store and nothing else: the lazy lease, checked when the timer
    /// fires.
    ///
    /// [`Input::StreamEvent`]: crate::Input::StreamEvent
    ///
    /// ```
    /// use autoretry::{HostOptions, Input, Machine, Output, RetrySettings};
    /// let settings = RetrySettings::DEFAULT.with_idle_timeout_ms(500);
    /// let mut m = Machine::new(settings, HostOptions::DEFAULT);
    /// assert_eq!(m.stream_event(10), None); // no stream watched: ignored
    /// assert!(m.handle(Input::stream_start(0)).unwrap().is_empty()); // no first-event limit
    /// // The first event arms the idle watch; the next ones only store their time.
    /// let Some(Output::Watch { ms: 500, timer }) = m.stream_event(20) else { unreachable!() };
    /// assert_eq!(m.stream_event(30), None);
    /// assert_eq!(m.pending_watch(), Some(timer));
    /// // The same as `handle` gives for the input.
    /// let mut other = m.clone();
    /// assert!(other.handle(Input::stream_event(40)).unwrap().is_empty());
    /// assert_eq!(m.stream_event(40), None);
    /// assert_eq!(m, other);
    /// ```
    #[inline]
    #[must_use = "the host must carry out the output (a `watch` timer to start)"]
    pub fn stream_event(&mut self, now_ms: u64) -> Option<Output<'static>> {
        let Stream::Watched {
            last_ms,
            has_last,
            pending,
            ..
        } = &mut self.stream
        else {
            return None;
        };
        *last_ms = now_ms;
        *has_last = true;
        if *pending {
            return None;
        }
        self.arm_idle(now_ms)
    }

    /// Rule 2's second half, kept out of the store's path.
    #[inline(never)]
    fn arm_idle(&mut self, now_ms: u64) -> Option<Output<'static>> {
        let limit = self.settings.idle_timeout_ms;
        if limit == 0 {
            return None;
        }
        let watch = self.arm(limit)?;
        if let Stream::Watched {
            due_ms, pending, ..
        } = &mut self.stream
        {
            *due_ms = now_ms.saturating_add(limit);
            *pending = true;
        }
        Some(watch)
    }

    /// Rule 3: the pending watch timer fired (the caller checked its id).
    pub(crate) fn watch_fired(&mut self) -> Option<Output<'static>> {
        let Stream::Watched {
            start_ms,
            last_ms,
            due_ms,
            has_last,
            // Only the pending watch's id reaches here: it is set.
            pending: _,
        } = self.stream
        else {
            return None;
        };
        let (limit, reference) = if has_last {
            (self.settings.idle_timeout_ms, last_ms)
        } else {
            (self.settings.first_event_timeout_ms, start_ms)
        };
        let silence_ms = due_ms.saturating_sub(reference);
        if limit == 0 {
            self.set_pending(false, 0);
            None
        } else if silence_ms >= limit {
            // Rule 4: the stall aborts the stream.
            self.stream = Stream::Stalled { silence_ms };
            Some(Output::AbortAgent)
        } else {
            let ms = limit - silence_ms;
            let watch = self.arm(ms);
            let next_due_ms = if watch.is_some() {
                due_ms.saturating_add(ms)
            } else {
                0
            };
            self.set_pending(watch.is_some(), next_due_ms);
            watch
        }
    }

    fn set_pending(&mut self, now_pending: bool, now_due_ms: u64) {
        if let Stream::Watched {
            due_ms, pending, ..
        } = &mut self.stream
        {
            *due_ms = now_due_ms;
            *pending = now_pending;
        }
    }

    /// Rule 5: the stream ends (`message_end`, `agent_end`, `abort`, and a
    /// new `stream_start`): a pending watch is cancelled first and the
    /// stream is no longer watched; a declared stall is kept.
    pub(crate) fn end_stream<'a>(&mut self, out: &mut Outputs<'a>) {
        if let Stream::Watched { pending, .. } = self.stream {
            if pending {
                push(
                    out,
                    Output::CancelTimer {
                        timer: TimerId(self.timer),
                    },
                );
            }
            self.stream = Stream::None;
        }
    }
}
