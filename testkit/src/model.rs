//! The reference model of the machine (spec §5, §6, §6a, §9, §10 and the
//! stream of §12: the watched stream, its `watch` timers, the stall and
//! its decision, empty answers under `retryEmpty`),
//! written from the spec, for property tests that drive it beside the
//! machine step by step and compare every output and refusal
//! (`tests/machine/model_props.rs`). Where the [`Monitor`](crate::Monitor)
//! checks a host's log against invariants, the model predicts the whole
//! output sequence. Messages are [`Msg`]s whose text is an index into
//! [`corpus`](crate::corpus).
//!
//! With the classic settings and none of the message fields of §10.2 it is
//! the model of sections 1–9 alone (it asserts so on every input); with
//! the policy options it adds the wait of §10.3 (the cap, the ceiling, the
//! jitter draws of §10.6, the host's `retryAfterMs` and the text hints
//! under `honorHints`, `delay = max(backoff, h)`) and the fail fast at the
//! `agent_end` and at the usage-limit answer. The stream's inputs
//! ([`Model::stream_start`], [`Model::stream_event`]) and the `empty`
//! field of a [`Msg`] bring in section 12; its messages carry no `partial`
//! (a stalled turn is a replay).

use autoretry::classify::{curated_hint_ms, retry_hint_ms, wait_hint_ms, Classifier, LONG_WAIT_MS};
use autoretry::{AssistantMessage, HostOptions, RetrySettings, StopReason, Usage, EMPTY_RESPONSE};

use crate::corpus::{corpus, text_of};
use crate::spec::expected_delay;
use crate::SplitMix64;

/// Outputs as the model writes them: timers are ordinals (the n-th sleep).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Out {
    /// `auto_retry_start`.
    Start {
        /// `attempt`.
        attempt: u32,
        /// `maxAttempts`.
        max: u32,
        /// `delayMs`.
        delay: u64,
        /// `errorMessage`.
        text: String,
    },
    /// `auto_retry_end`.
    End {
        /// `success`.
        success: bool,
        /// `attempt`.
        attempt: u32,
        /// `finalError` as text; `None` on success.
        error: Option<String>,
        /// The end of spec 10.3 step 8 (the error is its sentence).
        fail_fast: bool,
    },
    /// `drop_trailing_error`.
    Drop,
    /// `sleep`, its timer as an ordinal.
    Sleep {
        /// The wait.
        ms: u64,
        /// The n-th timer (`sleep` or `watch`) of the run, from 1.
        ordinal: usize,
    },
    /// `watch` (spec §12.2), its timer as an ordinal.
    Watch {
        /// The time to the watch's due time.
        ms: u64,
        /// The n-th timer (`sleep` or `watch`) of the run, from 1.
        ordinal: usize,
    },
    /// `cancel_timer`.
    Cancel {
        /// The ordinal of the timer it cancels.
        ordinal: usize,
    },
    /// `continue_agent`.
    Continue,
    /// `mark_usage_limit`.
    Mark {
        /// `retryAfterMs`.
        hint: Option<u64>,
    },
    /// `check_compaction`.
    Check,
    /// `abort_agent`.
    AbortAgent,
    /// `settled`.
    Settled,
}

/// What the chain waits for.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Wait {
    /// No timer and no answer pending.
    Nothing,
    /// The backoff timer with this ordinal.
    Timer(usize),
    /// The usage-limit answer for this text, with the figures fixed at the
    /// decision (spec 5.1.4, 10.3 step 7).
    Answer {
        text: String,
        /// The text the answer carries: the message's own error text (for a
        /// stall or an empty answer, the events show the machine's text
        /// instead, spec §12; the host answers with what it fed).
        answer: String,
        attempt: u32,
        max: u32,
        delay: u64,
        /// The `maxDelayMs` that `delay` exceeds (10.3 step 8), else 0.
        ceiling: u64,
    },
}

/// The watched stream of spec §12.2.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Stream {
    /// None watched, no stall kept.
    None,
    /// A stream watched since `start`, its last progress event `last`, and
    /// its pending watch (ordinal, due time), if any.
    Watched {
        start: u64,
        last: Option<u64>,
        watch: Option<(usize, u64)>,
    },
    /// A stall declared after this silence, kept until the next
    /// `agent_end`, `abort` or `stream_start`.
    Stalled(u64),
}

/// The reference model of the machine, written from the spec; see the
/// [module docs](self).
///
/// ```
/// use autoretry::{HostOptions, RetrySettings, StopReason};
/// use autoretry_testkit::model::{Model, Msg, Out};
/// let mut model = Model::new(RetrySettings::CLASSIC, HostOptions::default(), true);
/// // Text 0 of the labelled corpus is retryable.
/// let failed = Msg { stop: StopReason::Error, text: Some(0), usage: None, should_retry: None, retry_after: None, empty: false };
/// let out = model.agent_end(&failed, None).unwrap();
/// assert_eq!(out[1..], [Out::Drop, Out::Sleep { ms: 2000, ordinal: 1 }]);
/// assert_eq!(model.timer(1), [Out::Continue]);
/// ```
#[derive(Clone, Debug)]
pub struct Model {
    settings: RetrySettings,
    /// Sections 1–9 only: every option at its `classic` value and no
    /// message field of 10.2, on every input (asserted). The chain then
    /// runs the code of sections 1–9 alone, without 10.3's steps 2–8.
    classic: bool,
    window: u64,
    store: bool,
    /// The jitter generator (10.6), from the host's seed.
    jitter: SplitMix64,
    attempt: u32,
    open: bool,
    wait: Wait,
    /// The timers (`sleep` and `watch`) issued so far: the last ordinal.
    sleeps: usize,
    stream: Stream,
}

/// A message as the model sees it: its stop reason, its text (an index:
/// see [`text_of`]), its usage and the host's fields of 10.2.
#[derive(Clone, Debug)]
pub struct Msg {
    /// `stopReason`.
    pub stop: StopReason,
    /// `errorMessage`: text `i` of [`text_of`].
    pub text: Option<usize>,
    /// `usage`.
    pub usage: Option<Usage>,
    /// The host's `shouldRetry` (spec §10.2).
    pub should_retry: Option<bool>,
    /// The host's `retryAfterMs` (spec §10.2).
    pub retry_after: Option<u64>,
    /// The host's `empty` (spec §12.3).
    pub empty: bool,
}

impl Msg {
    /// The message the machine is given.
    pub fn message(&self) -> AssistantMessage<'static> {
        AssistantMessage {
            stop_reason: self.stop,
            error_message: self.text.map(text_of),
            usage: self.usage,
            should_retry: self.should_retry,
            retry_after_ms: self.retry_after,
            partial: autoretry::Partial::None,
            empty: self.empty,
            headers: autoretry::Headers::NONE,
        }
    }

    /// Whether it carries none of the fields of 10.2.
    fn is_classic(&self) -> bool {
        self.should_retry.is_none()
            && self.retry_after.is_none()
            && self.usage.is_none_or(|u| u.cache_write == 0)
    }
}

/// The option values of the `classic` column of 10.1.
fn has_classic_options(s: &RetrySettings) -> bool {
    let c = RetrySettings::CLASSIC;
    (
        s.max_delay_ms,
        s.backoff_cap_ms,
        s.jitter_pct,
        s.honor_hints,
        s.classifier,
    ) == (
        c.max_delay_ms,
        c.backoff_cap_ms,
        c.jitter_pct,
        c.honor_hints,
        c.classifier,
    )
}

const CANCELLED: &str = "Retry cancelled";

/// The text classes the model needs: the corpus labels for a labelled text
/// under the classic classifier, else the crate's classifier (its pattern
/// sets are checked against the labelled corpora by their own tests; this
/// model is of the machine).
#[derive(Clone, Copy, Debug)]
struct Class {
    /// The pattern test of rule 4 of section 3, and not a text overflow.
    retryable: bool,
    overflow: bool,
    usage_limit: bool,
    /// The hint of 3.5 without a clock.
    hint_ms: Option<u64>,
}

fn class_of(i: usize, classifier: Classifier) -> Class {
    match (classifier, corpus().get(i)) {
        (Classifier::Classic, Some(l)) => Class {
            retryable: l.retryable,
            overflow: l.overflow,
            usage_limit: l.usage_limit,
            hint_ms: l.hint_ms,
        },
        (classifier, _) => class_of_text(text_of(i), classifier),
    }
}

/// The classes of a text by the crate's classifier (a stall's or an empty
/// answer's text, spec §12).
fn class_of_text(text: &str, classifier: Classifier) -> Class {
    let c = classifier.classify(text);
    Class {
        retryable: c.retryable,
        overflow: c.overflow,
        usage_limit: c.usage_limit,
        hint_ms: retry_hint_ms(text, None),
    }
}

/// The wait of a decision: the delay, the ceiling it exceeds (or 0) and
/// the hint of the usage-limit hand-off.
struct Decided {
    delay: u64,
    ceiling: u64,
    mark: Option<u64>,
}

impl Model {
    /// The model of a machine with these settings and host options;
    /// `classic`: of sections 1–9 alone (it asserts that the settings and
    /// every message keep to them).
    pub fn new(s: RetrySettings, host: HostOptions, classic: bool) -> Self {
        assert!(
            !classic || has_classic_options(&s),
            "not the classic options: {s:?}"
        );
        Model {
            settings: s,
            classic,
            window: host.context_window,
            store: host.credential_store,
            jitter: SplitMix64::new(host.seed),
            attempt: 0,
            open: false,
            wait: Wait::Nothing,
            sleeps: 0,
            stream: Stream::None,
        }
    }

    /// New settings (`set_retry_settings`).
    pub fn set(&mut self, s: RetrySettings) {
        assert!(
            !self.classic || has_classic_options(&s),
            "not the classic options: {s:?}"
        );
        self.settings = s;
    }

    /// The settings in force.
    pub fn settings(&self) -> RetrySettings {
        self.settings
    }

    /// `set_auto_retry`: the settings' `enabled`.
    pub fn set_auto_retry(&mut self, enabled: bool) {
        self.settings.enabled = enabled;
    }

    /// The attempt of the open chain (0 when none).
    pub fn attempt(&self) -> u32 {
        self.attempt
    }

    /// Whether a chain is open (until its `settled`).
    pub fn is_open(&self) -> bool {
        self.open
    }

    /// The text the usage-limit answer must carry, while it is awaited.
    pub fn awaited_text(&self) -> Option<&str> {
        match &self.wait {
            Wait::Answer { answer, .. } => Some(answer),
            _ => None,
        }
    }

    fn agent_may_run(&self) -> bool {
        self.wait == Wait::Nothing
    }

    /// Whether `m` is an empty answer that is a failure (spec §12.3).
    fn empty_failure(&self, m: &Msg) -> bool {
        self.settings.retry_empty && m.empty && m.stop == StopReason::Stop
    }

    /// Spec §12.2 rule 5: the watched stream ends, its pending watch
    /// cancelled first; a declared stall is kept (the `agent_end` and
    /// `abort` take it).
    fn end_stream(&mut self, out: &mut Vec<Out>) {
        if let Stream::Watched { watch, .. } = self.stream {
            if let Some((ordinal, _)) = watch {
                out.push(Out::Cancel { ordinal });
            }
            self.stream = Stream::None;
        }
    }

    /// A new watch `ms` after `now`: its output, and the pending watch.
    fn watch(&mut self, now: u64, ms: u64, out: &mut Vec<Out>) -> Option<(usize, u64)> {
        self.sleeps += 1;
        out.push(Out::Watch {
            ms,
            ordinal: self.sleeps,
        });
        Some((self.sleeps, now.saturating_add(ms)))
    }

    /// `stream_start` at `now` (spec §12.2 rule 1): its outputs, or `None`
    /// when the machine must refuse it (a backoff or an answer pending).
    pub fn stream_start(&mut self, now: u64) -> Option<Vec<Out>> {
        if !self.agent_may_run() {
            return None;
        }
        let mut out = Vec::new();
        self.end_stream(&mut out);
        let first = self.settings.first_event_timeout_ms;
        let watch = if first > 0 {
            self.watch(now, first, &mut out)
        } else {
            None
        };
        self.stream = Stream::Watched {
            start: now,
            last: None,
            watch,
        };
        Some(out)
    }

    /// `stream_event` at `now` (spec §12.2 rule 2): a watch when none is
    /// pending and the idle limit is on.
    pub fn stream_event(&mut self, now: u64) -> Vec<Out> {
        let mut out = Vec::new();
        let idle = self.settings.idle_timeout_ms;
        if let Stream::Watched { start, watch, .. } = self.stream {
            let watch = match watch {
                None if idle > 0 => self.watch(now, idle, &mut out),
                other => other,
            };
            self.stream = Stream::Watched {
                start,
                last: Some(now),
                watch,
            };
        }
        out
    }

    /// The watch of this ordinal fires (spec §12.2 rule 3).
    fn watch_fired(&mut self, ordinal: usize) -> Vec<Out> {
        let Stream::Watched {
            start,
            last,
            watch: Some((pending, due)),
        } = self.stream
        else {
            return vec![];
        };
        if pending != ordinal {
            return vec![];
        }
        let s = self.settings;
        let (limit, reference) = match last {
            None => (s.first_event_timeout_ms, start),
            Some(last) => (s.idle_timeout_ms, last),
        };
        let silence = due.saturating_sub(reference);
        let mut out = Vec::new();
        let watch = if limit == 0 {
            None
        } else if silence >= limit {
            self.stream = Stream::Stalled(silence);
            return vec![Out::AbortAgent];
        } else {
            self.watch(due, limit - silence, &mut out)
        };
        self.stream = Stream::Watched { start, last, watch };
        out
    }

    /// `abort`: the stream ends (its watch cancelled first, a stall
    /// forgotten), the chain is cancelled, and the agent is aborted.
    pub fn abort(&mut self) -> Vec<Out> {
        let mut out = Vec::new();
        self.end_stream(&mut out);
        self.stream = Stream::None;
        out.extend(self.cancel());
        out.push(Out::AbortAgent);
        out
    }

    fn succeeds(&mut self, stop: StopReason, out: &mut Vec<Out>) {
        let success = !matches!(stop, StopReason::Error | StopReason::Aborted);
        if success && self.attempt > 0 {
            out.push(Out::End {
                success: true,
                attempt: self.attempt,
                error: None,
                fail_fast: false,
            });
            self.attempt = 0;
        }
    }

    /// `message_end`: its outputs, or `None` when the machine must refuse it.
    pub fn message_end(&mut self, m: &Msg) -> Option<Vec<Out>> {
        if !self.agent_may_run() {
            return None;
        }
        let mut out = Vec::new();
        self.end_stream(&mut out);
        // §12.3: an empty stop under retryEmpty is no success.
        if !self.empty_failure(m) {
            self.succeeds(m.stop, &mut out);
        }
        Some(out)
    }

    /// `agent_end` (with the host's clock, `nowMs`): its outputs, or `None`
    /// when the machine must refuse it.
    pub fn agent_end(&mut self, m: &Msg, now: Option<u64>) -> Option<Vec<Out>> {
        assert!(!self.classic || m.is_classic(), "a field of 10.2: {m:?}");
        if !self.agent_may_run() {
            return None;
        }
        let mut out = Vec::new();
        self.end_stream(&mut out);
        let stall = match core::mem::replace(&mut self.stream, Stream::None) {
            Stream::Stalled(silence) => Some(silence),
            _ => None,
        };
        // §12.2 rule 4 and §12.3: a stalled run that ended with an error or
        // an abort, or an empty stop under retryEmpty, is an error with a
        // text of the machine's, retryable (`shouldRetry: true`).
        let made = match stall {
            Some(silence) if matches!(m.stop, StopReason::Error | StopReason::Aborted) => {
                Some(format!("Stream stalled: no event for {silence}ms"))
            }
            _ if self.empty_failure(m) => Some(EMPTY_RESPONSE.to_owned()),
            _ => None,
        };
        let stop = if made.is_some() {
            StopReason::Error
        } else {
            m.stop
        };
        let should_retry = if made.is_some() {
            Some(true)
        } else {
            m.should_retry
        };
        self.succeeds(stop, &mut out);
        let classifier = self.settings.classifier;
        let (class, text) = match &made {
            Some(text) => (Some(class_of_text(text, classifier)), Some(text.as_str())),
            None => (
                m.text.map(|i| class_of(i, classifier)),
                m.text.map(text_of).filter(|t| !t.is_empty()),
            ),
        };
        let is_error = stop == StopReason::Error;
        let usage_overflow = m.usage.is_some_and(|u| {
            let mut tokens = u128::from(u.input) + u128::from(u.cache_read);
            // 10.5: the extended usage rule counts the cache writes too.
            if classifier != Classifier::Classic {
                tokens += u128::from(u.cache_write);
            }
            self.window != 0 && tokens > u128::from(self.window)
        });
        let text_overflow = is_error && text.is_some() && class.is_some_and(|c| c.overflow);
        // 10.2: the host's verdict replaces the pattern test; rules 1–3 hold.
        let pattern = class.is_some_and(|c| c.retryable);
        let retryable = is_error
            && text.is_some()
            && should_retry.unwrap_or(pattern)
            && !usage_overflow
            && !text_overflow;
        if !(self.settings.enabled && retryable) {
            if self.attempt > 0 {
                out.push(Out::End {
                    success: false,
                    attempt: self.attempt,
                    error: Some(text.unwrap_or("Unknown error").to_owned()),
                    fail_fast: false,
                });
                self.attempt = 0;
            }
            if self.open {
                out.push(Out::Settled);
                self.open = false;
            }
            out.push(Out::Check);
            return Some(out);
        }
        let class = class.expect("retryable has a text");
        let text = text.expect("retryable has a text").to_owned();
        self.attempt += 1;
        self.open = true;
        let max = self.settings.max_retries;
        if self.attempt > max {
            out.push(Out::End {
                success: false,
                attempt: self.attempt - 1,
                error: Some(text),
                fail_fast: false,
            });
            self.attempt = 0;
            self.open = false;
            out.push(Out::Settled);
            out.push(Out::Check);
            return Some(out);
        }
        // The hint of 3.5: the corpus labels it without a clock; with one,
        // the absolute forms may count too (checked by the classifier
        // properties below).
        let curated = self.settings.classifier == Classifier::Curated;
        let text_hint = match now {
            // §13.2: under `curated` its hints are the text hint everywhere.
            _ if curated => curated_hint_ms(&text, now),
            None => class.hint_ms,
            Some(now) => retry_hint_ms(&text, Some(now)),
        };
        // §13.2: under `curated` a long wait (the message's, else the
        // text's) is a usage limit too.
        let usage_limit = if curated {
            self.settings.classifier.matches_usage_limit(&text)
                || m.retry_after
                    .or(text_hint)
                    .is_some_and(|h| h >= LONG_WAIT_MS)
        } else {
            class.usage_limit
        };
        let decided = if self.classic {
            // Sections 1–9: 5.1.3 and the hint of 3.5.
            Decided {
                delay: expected_delay(self.settings.base_delay_ms, self.attempt),
                ceiling: 0,
                mark: text_hint,
            }
        } else {
            self.wait_of(m, &text, now, text_hint)
        };
        if self.store && usage_limit {
            out.push(Out::Mark { hint: decided.mark });
            self.wait = Wait::Answer {
                answer: match &made {
                    Some(_) => m.text.map_or("", text_of).to_owned(),
                    None => text.clone(),
                },
                text,
                attempt: self.attempt,
                max,
                delay: decided.delay,
                ceiling: decided.ceiling,
            };
        } else if decided.ceiling > 0 {
            self.fail_fast(text, decided.delay, decided.ceiling, &mut out);
        } else {
            self.start(text, max, decided.delay, &mut out);
        }
        Some(out)
    }

    /// Spec 10.3 steps 1–7 at attempt `self.attempt`.
    fn wait_of(
        &mut self,
        m: &Msg,
        text: &str,
        now: Option<u64>,
        text_hint: Option<u64>,
    ) -> Decided {
        let s = self.settings;
        // 1–3: the exponential backoff, capped, under the ceiling.
        let mut backoff = expected_delay(s.base_delay_ms, self.attempt);
        if s.backoff_cap_ms > 0 {
            backoff = backoff.min(s.backoff_cap_ms);
        }
        if s.max_delay_ms > 0 {
            backoff = backoff.min(s.max_delay_ms);
        }
        // 4: one draw whenever jitter is on.
        let pct = u128::from(s.jitter_pct.get());
        if pct > 0 {
            let r = u128::from(self.jitter.draw());
            let share = u128::from(backoff) * pct * r / (100 * (1u128 << 32));
            backoff -= u64::try_from(share).expect("at most the backoff");
        }
        // 5–6: the host's retryAfterMs ahead of the text's hint of 10.4.
        let hint = if s.honor_hints {
            m.retry_after.or_else(|| {
                if s.classifier == Classifier::Curated {
                    curated_hint_ms(text, now)
                } else {
                    wait_hint_ms(text, now)
                }
            })
        } else {
            None
        };
        let delay = hint.map_or(backoff, |h| h.max(backoff));
        let ceiling = if s.max_delay_ms > 0 && delay > s.max_delay_ms {
            s.max_delay_ms
        } else {
            0
        };
        // 7: the hand-off's hint.
        let mark = if s.honor_hints {
            hint
        } else {
            m.retry_after.or(text_hint)
        };
        Decided {
            delay,
            ceiling,
            mark,
        }
    }

    /// Spec 10.3 step 8.
    fn fail_fast(&mut self, text: String, delay: u64, ceiling: u64, out: &mut Vec<Out>) {
        out.push(Out::End {
            success: false,
            attempt: self.attempt - 1,
            error: Some(format!(
                "Provider requested {delay}ms wait, exceeds retry.maxDelayMs ({ceiling}ms). \
                 Original error: {text}"
            )),
            fail_fast: true,
        });
        self.attempt = 0;
        self.open = false;
        self.wait = Wait::Nothing;
        out.push(Out::Settled);
        out.push(Out::Check);
    }

    fn start(&mut self, text: String, max: u32, d: u64, out: &mut Vec<Out>) {
        out.push(Out::Start {
            attempt: self.attempt,
            max,
            delay: d,
            text,
        });
        out.push(Out::Drop);
        self.sleeps += 1;
        out.push(Out::Sleep {
            ms: d,
            ordinal: self.sleeps,
        });
        self.wait = Wait::Timer(self.sleeps);
    }

    /// `timer_fired` for the timer (`sleep` or `watch`) of this ordinal.
    pub fn timer(&mut self, ordinal: usize) -> Vec<Out> {
        if self.wait == Wait::Timer(ordinal) {
            self.wait = Wait::Nothing;
            vec![Out::Continue]
        } else {
            self.watch_fired(ordinal)
        }
    }

    /// `usage_limit_marked` for `text`: its outputs, or `None` when the
    /// machine must refuse it (another text than the marked one).
    pub fn answer(&mut self, switched: bool, text: &str) -> Option<Vec<Out>> {
        let Wait::Answer {
            text: marked,
            answer,
            attempt,
            max,
            delay,
            ceiling,
        } = self.wait.clone()
        else {
            return Some(vec![]);
        };
        if answer != text {
            return None;
        }
        debug_assert_eq!(attempt, self.attempt);
        let mut out = Vec::new();
        if switched {
            // A switch makes the wait 0 and skips the ceiling.
            self.start(marked, max, 0, &mut out);
        } else if ceiling > 0 {
            self.fail_fast(marked, delay, ceiling, &mut out);
        } else {
            self.start(marked, max, delay, &mut out);
        }
        Some(out)
    }

    /// `abort_retry` (and the cancel of an `abort`).
    pub fn cancel(&mut self) -> Vec<Out> {
        let mut out = Vec::new();
        let cancelled = |attempt| Out::End {
            success: false,
            attempt,
            error: Some(CANCELLED.into()),
            fail_fast: false,
        };
        match self.wait.clone() {
            Wait::Timer(ordinal) => {
                out.push(Out::Cancel { ordinal });
                out.push(cancelled(self.attempt));
                out.push(Out::Settled);
                out.push(Out::Check);
            }
            Wait::Answer { .. } => {
                let started = self.attempt - 1;
                if started > 0 {
                    out.push(cancelled(started));
                }
                out.push(Out::Settled);
                out.push(Out::Check);
            }
            Wait::Nothing if self.open => {
                if self.attempt > 0 {
                    out.push(cancelled(self.attempt));
                }
                out.push(Out::Settled);
            }
            Wait::Nothing => {}
        }
        self.attempt = 0;
        self.open = false;
        self.wait = Wait::Nothing;
        out
    }
}
