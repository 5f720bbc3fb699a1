//! The host side of the conformance vectors, `no_std` and allocation-free.
//!
//! Vectors write timers as ordinals within a scenario (`1` is the first
//! `sleep` or `watch` the scenario produced) and leave the usage-limit answer's text
//! to the host (vectors README, "Timers" and "Inputs"). [`VectorHost`] is
//! that host: it maps ordinals to the machine's timer ids and back, and
//! keeps the error text of the `agent_end` the machine asked to mark.

use autoretry::{Input, Output, TimerId};
use heapless::Deque;

/// How many of the last timer ids a [`VectorHost`] keeps by default.
pub const RECENT_TIMERS: usize = 16;

/// The host of the conformance vectors: timer ordinals to the machine's
/// [`TimerId`]s and back, and the kept usage-limit text.
///
/// It keeps the ids of the last `N` sleeps. The machine has at most one
/// pending timer, the last sleep's, so an older ordinal can only be stale:
/// [`VectorHost::machine_timer`] gives `None` for it as for an ordinal never
/// produced, and a host that skips the call or passes an id the machine
/// never issued sees the same (empty) outputs as with the old id (vectors
/// README, "Timers"). Nothing here allocates or fails.
///
/// `T` holds the kept text: `&'a str` where the inputs outlive the host
/// (firmware statics, a decoded vector file), `String` where each line is
/// dropped after its step (the replayer).
///
/// ```
/// use autoretry::{AssistantMessage, Input, Machine, Output, TimerId};
/// use autoretry_testkit::VectorHost;
///
/// let mut machine = Machine::default();
/// let mut host = VectorHost::<&str>::new();
/// let fail = Input::AgentEnd { message: AssistantMessage::error("503"), now_ms: None };
/// let out: Vec<_> = machine.handle(fail).unwrap().into_iter().map(|o| host.vector_output(&fail, o)).collect();
/// // The machine's id became the vector's ordinal 1.
/// assert_eq!(out[2], Output::Sleep { ms: 2000, timer: TimerId(1) });
///
/// // The vector fires ordinal 1: the host passes the machine's id.
/// let fired = host.machine_input(Input::TimerFired { timer: TimerId(1) }).unwrap();
/// assert_eq!(machine.handle(fired).unwrap()[..], [Output::ContinueAgent]);
/// // Ordinal 2 was never produced.
/// assert_eq!(host.machine_input(Input::TimerFired { timer: TimerId(2) }), None);
/// ```
#[derive(Clone, Debug)]
pub struct VectorHost<T, const N: usize = RECENT_TIMERS> {
    /// The machine's ids of the last sleeps, oldest first; the last one is
    /// ordinal `sleeps`.
    recent: Deque<TimerId, N>,
    /// How many sleeps the scenario produced: the last ordinal.
    sleeps: u64,
    /// The error text of the `agent_end` whose outputs asked for
    /// `mark_usage_limit`.
    marked: Option<T>,
}

impl<T, const N: usize> Default for VectorHost<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, const N: usize> VectorHost<T, N> {
    /// A host at the start of a scenario: no timers, no kept text. `N` must
    /// be at least 1 (checked at compile time).
    ///
    /// ```
    /// use autoretry_testkit::VectorHost;
    /// let host = VectorHost::<String, 4>::new();
    /// assert_eq!((host.sleeps(), host.marked()), (0, None));
    /// ```
    pub const fn new() -> Self {
        VectorHost {
            recent: Deque::new(),
            sleeps: 0,
            marked: None,
        }
    }

    /// Starts a new scenario: forgets the timers and the kept text.
    ///
    /// ```
    /// use autoretry::TimerId;
    /// use autoretry_testkit::VectorHost;
    /// let mut host = VectorHost::<&str>::new();
    /// host.record_sleep(TimerId(7));
    /// host.reset();
    /// assert_eq!(host.machine_timer(1), None);
    /// ```
    pub fn reset(&mut self) {
        *self = Self::new();
    }

    /// How many sleeps the scenario produced so far (the last ordinal).
    ///
    /// ```
    /// use autoretry::TimerId;
    /// use autoretry_testkit::VectorHost;
    /// let mut host = VectorHost::<&str>::new();
    /// host.record_sleep(TimerId(4));
    /// assert_eq!(host.sleeps(), 1);
    /// ```
    pub fn sleeps(&self) -> u64 {
        self.sleeps
    }

    /// Records the timer of a `sleep` and returns its ordinal (1 for the
    /// scenario's first). The oldest id is forgotten when `N` are kept.
    ///
    /// ```
    /// use autoretry::TimerId;
    /// use autoretry_testkit::VectorHost;
    /// let mut host = VectorHost::<&str, 2>::new();
    /// assert_eq!([9, 10, 11].map(|id| host.record_sleep(TimerId(id))), [1, 2, 3]);
    /// // Ordinal 1 is forgotten; 2 and 3 are kept.
    /// assert_eq!((1..=3).map(|n| host.machine_timer(n)).collect::<Vec<_>>(), [None, Some(TimerId(10)), Some(TimerId(11))]);
    /// ```
    pub fn record_sleep(&mut self, timer: TimerId) -> u64 {
        if self.recent.is_full() {
            self.recent.pop_front();
        }
        // Not full any more (`N` is at least 1): the push succeeds.
        let _ = self.recent.push_back(timer);
        self.sleeps = self.sleeps.saturating_add(1);
        self.sleeps
    }

    /// The ordinal of the oldest id kept (1 until more than `N` sleeps).
    fn first_kept(&self) -> u64 {
        // `len` is at most `sleeps`, so this is at least 1.
        self.sleeps
            .saturating_sub(self.recent.len() as u64)
            .saturating_add(1)
    }

    /// The machine's id of a vector's timer ordinal: `None` for an ordinal
    /// never produced (0 among them) or one older than the last `N`.
    ///
    /// ```
    /// use autoretry::TimerId;
    /// use autoretry_testkit::VectorHost;
    /// let mut host = VectorHost::<&str>::new();
    /// host.record_sleep(TimerId(5));
    /// assert_eq!([0, 1, 2].map(|n| host.machine_timer(n)), [None, Some(TimerId(5)), None]);
    /// ```
    pub fn machine_timer(&self, ordinal: u64) -> Option<TimerId> {
        let index = ordinal.checked_sub(self.first_kept())?;
        let index = usize::try_from(index).ok()?;
        self.recent.iter().nth(index).copied()
    }

    /// The ordinal of a machine timer id among the last `N` sleeps.
    ///
    /// ```
    /// use autoretry::TimerId;
    /// use autoretry_testkit::VectorHost;
    /// let mut host = VectorHost::<&str>::new();
    /// host.record_sleep(TimerId(5));
    /// host.record_sleep(TimerId(6));
    /// assert_eq!([5, 6, 7].map(|id| host.ordinal(TimerId(id))), [Some(1), Some(2), None]);
    /// ```
    pub fn ordinal(&self, timer: TimerId) -> Option<u64> {
        let index = self.recent.iter().rposition(|&id| id == timer)?;
        Some(self.first_kept().saturating_add(index as u64))
    }

    /// The kept usage-limit text: the error text of the last `agent_end`
    /// whose outputs asked for `mark_usage_limit` (see
    /// [`VectorHost::vector_output`]), until [`VectorHost::reset`].
    ///
    /// ```
    /// use autoretry::{AssistantMessage, Input, Output};
    /// use autoretry_testkit::VectorHost;
    /// let mut host = VectorHost::<String>::new();
    /// let end = Input::AgentEnd { message: AssistantMessage::error("usage limit"), now_ms: None };
    /// host.vector_output(&end, Output::MarkUsageLimit { retry_after_ms: None });
    /// assert_eq!(host.marked().map(String::as_str), Some("usage limit"));
    ///
    /// // A `&str` host gives the text with its own lifetime, so that an
    /// // input can carry it while the host records that input's outputs.
    /// let mut host = VectorHost::<&str>::new();
    /// host.vector_output(&end, Output::MarkUsageLimit { retry_after_ms: None });
    /// let text: &'static str = host.marked().copied().unwrap_or("");
    /// host.reset();
    /// assert_eq!(text, "usage limit");
    /// ```
    pub fn marked(&self) -> Option<&T> {
        self.marked.as_ref()
    }

    /// One output of the machine in the vectors' form, noting what the host
    /// must remember: a `sleep`'s or a `watch`'s timer is recorded and
    /// written as its ordinal (one sequence for both), a `cancel_timer`'s as its ordinal (0 for an id this host
    /// never recorded, which the machine never cancels), and a
    /// `mark_usage_limit` keeps the error text of `input`, the `agent_end`
    /// whose outputs these are (an empty text when it has none). Other
    /// outputs are returned as they are.
    ///
    /// ```
    /// use autoretry::{Input, Output, TimerId};
    /// use autoretry_testkit::VectorHost;
    /// let mut host = VectorHost::<&str>::new();
    /// let sleep = host.vector_output(&Input::Abort, Output::Sleep { ms: 10, timer: TimerId(41) });
    /// assert_eq!(sleep, Output::Sleep { ms: 10, timer: TimerId(1) });
    /// let cancel = host.vector_output(&Input::AbortRetry, Output::CancelTimer { timer: TimerId(41) });
    /// assert_eq!(cancel, Output::CancelTimer { timer: TimerId(1) });
    /// ```
    pub fn vector_output<'i, 'o>(&mut self, input: &Input<'i>, output: Output<'o>) -> Output<'o>
    where
        T: From<&'i str>,
    {
        match output {
            Output::Sleep { ms, timer } => Output::Sleep {
                ms,
                timer: TimerId(self.record_sleep(timer)),
            },
            // Ordinals count `sleep` and `watch` together (vectors README,
            // "Timers").
            Output::Watch { ms, timer } => Output::Watch {
                ms,
                timer: TimerId(self.record_sleep(timer)),
            },
            Output::CancelTimer { timer } => Output::CancelTimer {
                timer: TimerId(self.ordinal(timer).unwrap_or(0)),
            },
            Output::MarkUsageLimit { .. } | Output::SwitchModel { .. } => {
                if let Input::AgentEnd { message, .. } = input {
                    self.marked = Some(T::from(message.error_message.unwrap_or("")));
                }
                output
            }
            other => other,
        }
    }

    /// An input in the vectors' form to the machine's: a `timer_fired`
    /// whose timer is an ordinal gets the machine's id, or `None` when there
    /// is no such timer (see [`VectorHost::machine_timer`]: skip the call,
    /// or pass an id the machine never issued). Other inputs are returned
    /// as they are; a `usage_limit_marked` carries the text the caller gives
    /// it (the kept one, [`VectorHost::marked`]).
    ///
    /// ```
    /// use autoretry::{Input, TimerId};
    /// use autoretry_testkit::VectorHost;
    /// let mut host = VectorHost::<&str>::new();
    /// host.record_sleep(TimerId(3));
    /// assert_eq!(host.machine_input(Input::TimerFired { timer: TimerId(1) }), Some(Input::TimerFired { timer: TimerId(3) }));
    /// assert_eq!(host.machine_input(Input::Abort), Some(Input::Abort));
    /// ```
    pub fn machine_input<'a>(&self, input: Input<'a>) -> Option<Input<'a>> {
        match input {
            Input::TimerFired { timer } => Some(Input::TimerFired {
                timer: self.machine_timer(timer.get())?,
            }),
            other => Some(other),
        }
    }
}

impl<T: AsRef<str>, const N: usize> VectorHost<T, N> {
    /// The kept usage-limit text, or `""` when none was kept: the text a
    /// `usage_limit_marked` passes back.
    ///
    /// ```
    /// use autoretry_testkit::VectorHost;
    /// assert_eq!(VectorHost::<&str>::new().marked_text(), "");
    /// ```
    pub fn marked_text(&self) -> &str {
        self.marked.as_ref().map_or("", AsRef::as_ref)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ordinals_run_on_past_the_kept_window() {
        let mut host = VectorHost::<&str, 3>::new();
        for id in 1..=10 {
            assert_eq!(host.record_sleep(TimerId(100 + id)), id);
            assert_eq!(host.machine_timer(id), Some(TimerId(100 + id)));
            assert_eq!(host.ordinal(TimerId(100 + id)), Some(id));
        }
        // The last three are kept.
        assert_eq!(host.machine_timer(7), None);
        assert_eq!(host.ordinal(TimerId(107)), None);
        for n in 8..=10 {
            assert_eq!(host.machine_timer(n), Some(TimerId(100 + n)));
        }
        assert_eq!(host.machine_timer(11), None);
        assert_eq!(host.machine_timer(u64::MAX), None);
    }

    #[test]
    fn a_cancel_of_an_unknown_id_is_ordinal_zero() {
        let mut host = VectorHost::<&str>::new();
        let out = host.vector_output(
            &Input::AbortRetry,
            Output::CancelTimer { timer: TimerId(9) },
        );
        assert_eq!(out, Output::CancelTimer { timer: TimerId(0) });
    }

    #[test]
    fn only_an_agent_end_gives_the_kept_text() {
        let mut host = VectorHost::<&str>::new();
        let mark = Output::MarkUsageLimit {
            retry_after_ms: Some(5),
        };
        assert_eq!(host.vector_output(&Input::Abort, mark), mark);
        assert_eq!(host.marked(), None);
        let end = Input::AgentEnd {
            message: autoretry::AssistantMessage::new(autoretry::StopReason::Error),
            now_ms: None,
        };
        host.vector_output(&end, mark);
        assert_eq!(host.marked(), Some(&""));
    }
}
