//! Property tests: the machine against a reference model of the spec and the
//! invariants of `autoretry_testkit::fuzzing::Monitor`, and the classifier's
//! properties (spec §3, §10.4).
//!
//! The model runs two ways. With the classic settings and none of the
//! message fields of §10.2 it is the model of sections 1–9 alone (it
//! asserts so on every input), and the machine must equal it on random
//! input sequences. With the policy options (every key of §10.1, seeded
//! hosts, the host's message fields) it adds the wait of §10.3: the cap,
//! the ceiling, the jitter draws of §10.6, the host's `retryAfterMs` and the
//! text hints under `honorHints`, `delay = max(backoff, h)`, and the fail
//! fast at the `agent_end` and at the usage-limit answer. Focused
//! properties check the jitter range, that a fail fast emits no start,
//! drop or sleep, and that the same seed and inputs give the same outputs.
//!
//! The default run takes 256 cases per property. The release profile of
//! these guarantees is 10,000 cases per property:
//!
//! ```text
//! PROPTEST_CASES=10000 cargo test --release --all-features --test props
//! ```
//!
//! A failing case is saved under `proptest-regressions/` and replayed first
//! on every later run; commit those files.
#![cfg(feature = "json")]

use std::sync::OnceLock;

use autoretry::classify::{
    classify, classify_bytes, retry_hint_ms, retry_hint_ms_bytes, wait_hint_ms, Classifier,
};
use autoretry::wire::json::{parse_value, InputLine};
use autoretry::wire::SettingsGroup;
use autoretry::{
    AssistantMessage, Event, FinalError, HostOptions, Input, JitterPct, Output, Profile,
    RetrySettings, StopReason, TimerId, Usage, MAX_OUTPUTS,
};
use autoretry_testkit::fuzzing::{matches_overflow_unanchored, Monitor};
use autoretry_testkit::{strategies, VectorHost, RECENT_TIMERS};
use proptest::prelude::*;
use proptest::test_runner::Config;
use serde_json::{json, Value};

/// `PROPTEST_CASES` (default 256).
fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    Config {
        cases,
        ..Config::default()
    }
}

// ---------------------------------------------------------------------------
// Texts and their labels
// ---------------------------------------------------------------------------

/// A corpus text with the labels of `tests/corpus/errors.jsonl` (computed
/// from the spec, not by this crate).
#[derive(Clone, Debug)]
struct Labelled {
    text: String,
    retryable: bool,
    overflow: bool,
    usage_limit: bool,
    hint_ms: Option<u64>,
}

fn corpus() -> &'static [Labelled] {
    static CORPUS: OnceLock<Vec<Labelled>> = OnceLock::new();
    CORPUS.get_or_init(|| {
        include_str!("corpus/errors.jsonl")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("a corpus line");
                Labelled {
                    text: v["text"].as_str().expect("text").to_owned(),
                    retryable: v["retryable"].as_bool().expect("retryable"),
                    overflow: v["overflow"].as_bool().expect("overflow"),
                    usage_limit: v["usageLimit"].as_bool().expect("usageLimit"),
                    hint_ms: v["hintMs"].as_u64(),
                }
            })
            .collect()
    })
}

fn corpus_text() -> impl Strategy<Value = String> {
    (0..corpus().len()).prop_map(|i| corpus()[i].text.clone())
}

/// Error texts with the hint forms of spec 10.4 and 3.5 and the values
/// around the modern ceiling (300,000 ms), for the policy options.
const HINT_TEXTS: &[&str] = &[
    "429 Too Many Requests. Please retry in 41.820516331s.",
    "503 Service Unavailable retry-after-ms=11180000",
    "503 Service Unavailable retry-after-ms: 0",
    "rate limit exceeded: reset after 1h30m10s",
    "overloaded, reset after 2s",
    "You have hit your usage limit. Try again in ~158 min.",
    "usage limit reached, try again in 8.3 min",
    "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"retryDelay\": \"38s\"}]}}",
    "usage_limit_reached retry-after-ms=11180000",
    "usage_limit_reached retry-after-ms=120000",
    "overloaded_error retry-after: 2",
    "Rate limit reached. retry-after: 400",
    "You have hit your usage limit. x-ratelimit-reset: 60",
    "usage limit x-ratelimit-reset-ms: 299999",
    "This request would exceed your account's rate limit. Please try again later.",
    "socket hang up",
    "quota exceeded",
    "request exceeds 5000 tokens per minute",
    "413 Request Entity Too Large",
];

/// The texts beyond the labelled corpus: the extended corpus and
/// [`HINT_TEXTS`]. The models classify them with the crate's classifier.
fn extra_texts() -> &'static [String] {
    static EXTRA: OnceLock<Vec<String>> = OnceLock::new();
    EXTRA.get_or_init(|| {
        let mut texts: Vec<String> = include_str!("corpus/extended/errors.jsonl")
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("an extended corpus line");
                v["text"].as_str().expect("text").to_owned()
            })
            .filter(|t| !corpus().iter().any(|l| &l.text == t))
            .collect();
        texts.extend(HINT_TEXTS.iter().map(|t| (*t).to_owned()));
        texts
    })
}

/// The number of texts a message can carry: the labelled corpus first.
fn text_count() -> usize {
    corpus().len() + extra_texts().len()
}

/// Text `i`: of the labelled corpus, or beyond it.
fn text_of(i: usize) -> &'static str {
    match corpus().get(i) {
        Some(l) => &l.text,
        None => &extra_texts()[i - corpus().len()],
    }
}

// ---------------------------------------------------------------------------
// The reference model (spec §5, §6, §6a, §9 and §10), written from the spec
// ---------------------------------------------------------------------------

/// Outputs as the model writes them: timers are ordinals (the n-th sleep).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Out {
    Start {
        attempt: u32,
        max: u32,
        delay: u64,
        text: String,
    },
    End {
        success: bool,
        attempt: u32,
        error: Option<String>,
        /// The end of spec 10.3 step 8 (the error is its sentence).
        fail_fast: bool,
    },
    Drop,
    Sleep {
        ms: u64,
        ordinal: usize,
    },
    Cancel {
        ordinal: usize,
    },
    Continue,
    Mark {
        hint: Option<u64>,
    },
    Check,
    AbortAgent,
    Settled,
}

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
        attempt: u32,
        max: u32,
        delay: u64,
        /// The `maxDelayMs` that `delay` exceeds (10.3 step 8), else 0.
        ceiling: u64,
    },
}

#[derive(Clone, Debug)]
struct Model {
    settings: RetrySettings,
    /// Sections 1–9 only: every option at its `classic` value and no
    /// message field of 10.2, on every input (asserted). The chain then
    /// runs the code of sections 1–9 alone, without 10.3's steps 2–8.
    classic: bool,
    window: u64,
    store: bool,
    /// The jitter generator (10.6), from the host's seed.
    jitter: u64,
    attempt: u32,
    open: bool,
    wait: Wait,
    sleeps: usize,
}

/// A message as the model sees it: its stop reason, its text (an index:
/// see [`text_of`]), its usage and the host's fields of 10.2.
#[derive(Clone, Debug)]
struct Msg {
    stop: StopReason,
    text: Option<usize>,
    usage: Option<Usage>,
    should_retry: Option<bool>,
    retry_after: Option<u64>,
}

impl Msg {
    fn message(&self) -> AssistantMessage<'static> {
        AssistantMessage {
            stop_reason: self.stop,
            error_message: self.text.map(text_of),
            usage: self.usage,
            should_retry: self.should_retry,
            retry_after_ms: self.retry_after,
            partial: autoretry::Partial::None,
        }
    }

    /// Whether it carries none of the fields of 10.2.
    fn is_classic(&self) -> bool {
        self.should_retry.is_none()
            && self.retry_after.is_none()
            && self.usage.is_none_or(|u| u.cache_write == 0)
    }
}

/// `base × 2^(attempt−1)`, saturating, with wide integers.
fn delay(base: u64, attempt: u32) -> u64 {
    let mut d = u128::from(base);
    for _ in 1..attempt {
        d *= 2;
        if d > u128::from(u64::MAX) {
            return u64::MAX;
        }
    }
    u64::try_from(d).unwrap_or(u64::MAX)
}

/// One draw of spec 10.6, from its text.
fn splitmix(state: &mut u64) -> u32 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 32) as u32
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
        (classifier, _) => {
            let text = text_of(i);
            let c = classifier.classify(text);
            Class {
                retryable: c.retryable,
                overflow: c.overflow,
                usage_limit: c.usage_limit,
                hint_ms: retry_hint_ms(text, None),
            }
        }
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
    fn new(s: RetrySettings, host: HostOptions, classic: bool) -> Self {
        assert!(
            !classic || has_classic_options(&s),
            "not the classic options: {s:?}"
        );
        Model {
            settings: s,
            classic,
            window: host.context_window,
            store: host.credential_store,
            jitter: host.seed,
            attempt: 0,
            open: false,
            wait: Wait::Nothing,
            sleeps: 0,
        }
    }

    fn set(&mut self, s: RetrySettings) {
        assert!(
            !self.classic || has_classic_options(&s),
            "not the classic options: {s:?}"
        );
        self.settings = s;
    }

    fn agent_may_run(&self) -> bool {
        self.wait == Wait::Nothing
    }

    fn succeeds(&mut self, m: &Msg, out: &mut Vec<Out>) {
        let success = !matches!(m.stop, StopReason::Error | StopReason::Aborted);
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

    fn message_end(&mut self, m: &Msg) -> Option<Vec<Out>> {
        if !self.agent_may_run() {
            return None;
        }
        let mut out = Vec::new();
        self.succeeds(m, &mut out);
        Some(out)
    }

    fn agent_end(&mut self, m: &Msg, now: Option<u64>) -> Option<Vec<Out>> {
        assert!(!self.classic || m.is_classic(), "a field of 10.2: {m:?}");
        if !self.agent_may_run() {
            return None;
        }
        let mut out = Vec::new();
        self.succeeds(m, &mut out);
        let classifier = self.settings.classifier;
        let class = m.text.map(|i| class_of(i, classifier));
        let text = m.text.map(text_of).filter(|t| !t.is_empty());
        let is_error = m.stop == StopReason::Error;
        let usage_overflow = m.usage.is_some_and(|u| {
            let mut tokens = u128::from(u.input) + u128::from(u.cache_read);
            // 10.5: the extended usage rule counts the cache writes too.
            if classifier == Classifier::Extended {
                tokens += u128::from(u.cache_write);
            }
            self.window != 0 && tokens > u128::from(self.window)
        });
        let text_overflow = is_error && text.is_some() && class.is_some_and(|c| c.overflow);
        // 10.2: the host's verdict replaces the pattern test; rules 1–3 hold.
        let pattern = class.is_some_and(|c| c.retryable);
        let retryable = is_error
            && text.is_some()
            && m.should_retry.unwrap_or(pattern)
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
        let text_hint = match now {
            None => class.hint_ms,
            Some(now) => retry_hint_ms(&text, Some(now)),
        };
        let decided = if self.classic {
            // Sections 1–9: 5.1.3 and the hint of 3.5.
            Decided {
                delay: delay(self.settings.base_delay_ms, self.attempt),
                ceiling: 0,
                mark: text_hint,
            }
        } else {
            self.wait_of(m, &text, now, text_hint)
        };
        if self.store && class.usage_limit {
            out.push(Out::Mark { hint: decided.mark });
            self.wait = Wait::Answer {
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
        let mut backoff = delay(s.base_delay_ms, self.attempt);
        if s.backoff_cap_ms > 0 {
            backoff = backoff.min(s.backoff_cap_ms);
        }
        if s.max_delay_ms > 0 {
            backoff = backoff.min(s.max_delay_ms);
        }
        // 4: one draw whenever jitter is on.
        let pct = u128::from(s.jitter_pct.get());
        if pct > 0 {
            let r = u128::from(splitmix(&mut self.jitter));
            let share = u128::from(backoff) * pct * r / (100 * (1u128 << 32));
            backoff -= u64::try_from(share).expect("at most the backoff");
        }
        // 5–6: the host's retryAfterMs ahead of the text's hint of 10.4.
        let hint = if s.honor_hints {
            m.retry_after.or_else(|| wait_hint_ms(text, now))
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

    fn timer(&mut self, ordinal: usize) -> Vec<Out> {
        if self.wait == Wait::Timer(ordinal) {
            self.wait = Wait::Nothing;
            vec![Out::Continue]
        } else {
            vec![]
        }
    }

    fn answer(&mut self, switched: bool, text: &str) -> Option<Vec<Out>> {
        let Wait::Answer {
            text: marked,
            attempt,
            max,
            delay,
            ceiling,
        } = self.wait.clone()
        else {
            return Some(vec![]);
        };
        if marked != text {
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

    fn cancel(&mut self) -> Vec<Out> {
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

// ---------------------------------------------------------------------------
// Operations and their generators
// ---------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum TimerPick {
    Pending,
    /// An ordinal counted back from the last sleep (already fired or
    /// cancelled, or the pending one).
    Earlier(usize),
    /// An id the machine never issued.
    Unknown(u64),
}

#[derive(Clone, Debug)]
enum Op {
    AgentEnd(Msg, Option<u64>),
    MessageEnd(Msg),
    Fire(TimerPick),
    Answer {
        switched: bool,
        wrong: Option<usize>,
    },
    AbortRetry,
    Abort,
    SetAutoRetry(bool),
    /// A settings group as JSON text, with the settings it must decode to
    /// (`None`: it must be refused).
    Settings(String, Option<RetrySettings>),
}

/// What the generators make: around which context window, and whether
/// with the policy options (settings keys of 10.1, message fields of 10.2,
/// texts beyond the labelled corpus) or the classic inputs alone.
#[derive(Clone, Copy, Debug)]
struct Gen {
    window: u64,
    options: bool,
}

const CLASSIC: Gen = Gen {
    window: 0,
    options: false,
};

impl Gen {
    const fn classic(window: u64) -> Gen {
        Gen {
            window,
            options: false,
        }
    }

    const fn options(window: u64) -> Gen {
        Gen {
            window,
            options: true,
        }
    }
}

/// Indices of labelled retryable texts, to make chains long.
fn retryable_index() -> impl Strategy<Value = usize> {
    let idx: Vec<usize> = (0..corpus().len())
        .filter(|&i| corpus()[i].retryable)
        .collect();
    proptest::sample::select(idx)
}

fn usage_limit_index() -> impl Strategy<Value = usize> {
    let idx: Vec<usize> = (0..corpus().len())
        .filter(|&i| corpus()[i].usage_limit && corpus()[i].retryable)
        .collect();
    proptest::sample::select(idx)
}

/// Indices of [`HINT_TEXTS`].
fn hint_index() -> impl Strategy<Value = usize> {
    let first = text_count() - HINT_TEXTS.len();
    first..text_count()
}

fn text_index(gen: Gen) -> BoxedStrategy<Option<usize>> {
    let classic = prop_oneof![
        1 => Just(None),
        4 => (0..corpus().len()).prop_map(Some),
        4 => retryable_index().prop_map(Some),
        2 => usage_limit_index().prop_map(Some),
    ];
    if gen.options {
        prop_oneof![
            6 => classic,
            2 => (0..text_count()).prop_map(Some),
            3 => hint_index().prop_map(Some),
        ]
        .boxed()
    } else {
        classic.boxed()
    }
}

/// Usage figures around the context window; with the options, cache
/// writes too.
fn usage(gen: Gen) -> BoxedStrategy<Option<Usage>> {
    let window = gen.window;
    let options = gen.options;
    let near = (0u64..3, -3i64..=3, 0u64..3).prop_map(move |(split, delta, write)| {
        let total = window.saturating_add_signed(delta);
        let cache_write = if options { total / (write + 2) } else { 0 };
        let input = (total - cache_write) / (split + 1);
        Usage::new(input, total - cache_write - input).with_cache_write(cache_write)
    });
    let any_usage = (any::<u64>(), any::<u64>(), any::<u64>())
        .prop_map(move |(i, r, w)| Usage::new(i, r).with_cache_write(if options { w } else { 0 }));
    prop_oneof![
        4 => Just(None),
        3 => near.prop_map(Some),
        1 => any_usage.prop_map(Some),
    ]
    .boxed()
}

/// `retryAfterMs` of 10.2: mostly absent, else around the modern ceiling.
fn retry_after() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        6 => Just(None),
        1 => Just(Some(0)),
        2 => (1u64..10_000).prop_map(Some),
        2 => (299_990u64..300_010).prop_map(Some),
        1 => Just(Some(11_180_000)),
        1 => Just(Some(u64::MAX)),
        1 => any::<u64>().prop_map(Some),
    ]
}

fn should_retry() -> impl Strategy<Value = Option<bool>> {
    prop_oneof![5 => Just(None), 1 => Just(Some(true)), 1 => Just(Some(false))]
}

fn message(gen: Gen) -> BoxedStrategy<Msg> {
    let base = (strategies::stop_reason(), text_index(gen), usage(gen));
    if gen.options {
        (base, should_retry(), retry_after())
            .prop_map(|((stop, text, usage), should_retry, retry_after)| Msg {
                stop,
                text,
                usage,
                should_retry,
                retry_after,
            })
            .boxed()
    } else {
        base.prop_map(|(stop, text, usage)| Msg {
            stop,
            text,
            usage,
            should_retry: None,
            retry_after: None,
        })
        .boxed()
    }
}

/// A group with a key given twice: refused by `SettingsGroup`.
const DUPLICATE_KEY: &str = r#"{"maxRetries":1,"maxRetries":2}"#;

/// The keys of the `retry` group (sections 4 and 10.1).
const KEYS: [&str; 9] = [
    "profile",
    "enabled",
    "maxRetries",
    "baseDelayMs",
    "maxDelayMs",
    "backoffCapMs",
    "jitterPct",
    "honorHints",
    "classifier",
];

/// Settings as JSON text: valid groups (some keys missing: they take the
/// defaults of the group's profile, 10.1) and invalid ones (sections 4 and
/// 10.1), with what they must decode to. Without the options, the keys of
/// section 4 alone.
fn settings_json(gen: Gen) -> BoxedStrategy<(String, Option<RetrySettings>)> {
    let classic = (strategies::classic_settings(), any::<[bool; 3]>()).prop_map(|(s, keep)| {
        let mut obj = serde_json::Map::new();
        let mut expected = RetrySettings::DEFAULT;
        if keep[0] {
            obj.insert("enabled".into(), json!(s.enabled));
            expected.enabled = s.enabled;
        }
        if keep[1] {
            obj.insert("maxRetries".into(), json!(s.max_retries));
            expected.max_retries = s.max_retries;
        }
        if keep[2] {
            obj.insert("baseDelayMs".into(), json!(s.base_delay_ms));
            expected.base_delay_ms = s.base_delay_ms;
        }
        (Value::Object(obj).to_string(), Some(expected))
    });
    // A profile given (or not), and each other key kept or left to it.
    let options = (
        strategies::settings(),
        prop_oneof![Just(None), strategies::profile().prop_map(Some)],
        any::<[bool; 8]>(),
    )
        .prop_map(|(s, profile, keep)| {
            let mut obj = serde_json::Map::new();
            let profile_given = profile.unwrap_or(Profile::Classic);
            if let Some(p) = profile {
                obj.insert("profile".into(), json!(p.as_str()));
            }
            let d = profile_given.defaults();
            let values = [
                json!(s.enabled),
                json!(s.max_retries),
                json!(s.base_delay_ms),
                json!(s.max_delay_ms),
                json!(s.backoff_cap_ms),
                json!(s.jitter_pct.get()),
                json!(s.honor_hints),
                json!(s.classifier.as_str()),
            ];
            for ((key, value), keep) in KEYS[1..].iter().zip(values).zip(keep) {
                if keep {
                    obj.insert((*key).into(), value);
                }
            }
            let expected = RetrySettings {
                profile: profile_given,
                enabled: if keep[0] { s.enabled } else { d.enabled },
                max_retries: if keep[1] {
                    s.max_retries
                } else {
                    d.max_retries
                },
                base_delay_ms: if keep[2] {
                    s.base_delay_ms
                } else {
                    d.base_delay_ms
                },
                max_delay_ms: if keep[3] {
                    s.max_delay_ms
                } else {
                    d.max_delay_ms
                },
                backoff_cap_ms: if keep[4] {
                    s.backoff_cap_ms
                } else {
                    d.backoff_cap_ms
                },
                jitter_pct: if keep[5] { s.jitter_pct } else { d.jitter_pct },
                honor_hints: if keep[6] {
                    s.honor_hints
                } else {
                    d.honor_hints
                },
                classifier: if keep[7] { s.classifier } else { d.classifier },
                // The keys of §11.1 are not generated here (beyond.rs).
                model_fallback: d.model_fallback,
                max_usage_wait_ms: d.max_usage_wait_ms,
                max_total_delay_ms: d.max_total_delay_ms,
            };
            (Value::Object(obj).to_string(), Some(expected))
        });
    let invalid = prop_oneof![
        Just(r#"{"maxRetries":3.0}"#.to_owned()),
        Just(r#"{"maxRetries":1e3}"#.to_owned()),
        Just(r#"{"maxRetries":-0}"#.to_owned()),
        Just(r#"{"maxRetries":-1}"#.to_owned()),
        Just(r#"{"maxRetries":4294967296}"#.to_owned()),
        Just(r#"{"baseDelayMs":18446744073709551616}"#.to_owned()),
        Just(r#"{"baseDelayMs":null}"#.to_owned()),
        Just(r#"{"enabled":"true"}"#.to_owned()),
        Just(r#"{"enabled":1}"#.to_owned()),
        Just(r#"{"retries":3}"#.to_owned()),
        Just(DUPLICATE_KEY.to_owned()),
        Just(r#"[]"#.to_owned()),
        Just(r#"null"#.to_owned()),
        Just(r#"5"#.to_owned()),
        (any::<u32>(), "[a-zA-Z]{1,12}").prop_filter_map("a known key", |(n, key)| {
            (!KEYS.contains(&key.as_str())).then(|| format!(r#"{{"maxRetries":{n},"{key}":1}}"#))
        }),
        (1u64..u64::MAX).prop_map(|n| format!(r#"{{"baseDelayMs":-{n}}}"#)),
    ];
    // 10.1: the new keys refused.
    let invalid_options = prop_oneof![
        (101u64..=u64::MAX).prop_map(|n| format!(r#"{{"jitterPct":{n}}}"#)),
        Just(r#"{"jitterPct":25.0}"#.to_owned()),
        Just(r#"{"jitterPct":-0}"#.to_owned()),
        Just(r#"{"jitterPct":"25"}"#.to_owned()),
        Just(r#"{"profile":"Modern"}"#.to_owned()),
        Just(r#"{"profile":null}"#.to_owned()),
        Just(r#"{"profile":1}"#.to_owned()),
        Just(r#"{"classifier":"regex"}"#.to_owned()),
        Just(r#"{"classifier":null}"#.to_owned()),
        Just(r#"{"honorHints":"true"}"#.to_owned()),
        Just(r#"{"honorHints":null}"#.to_owned()),
        Just(r#"{"maxDelayMs":-1}"#.to_owned()),
        Just(r#"{"maxDelayMs":18446744073709551616}"#.to_owned()),
        Just(r#"{"backoffCapMs":1.5}"#.to_owned()),
        Just(r#"{"backoffCapMs":1e3}"#.to_owned()),
        Just(r#"{"profile":"modern","profile":"classic"}"#.to_owned()),
    ];
    if gen.options {
        prop_oneof![
            1 => classic,
            3 => options,
            1 => invalid.prop_map(|j| (j, None)),
            1 => invalid_options.prop_map(|j| (j, None)),
        ]
        .boxed()
    } else {
        prop_oneof![
            2 => classic,
            1 => invalid.prop_map(|j| (j, None)),
        ]
        .boxed()
    }
}

/// How far back `TimerPick::Earlier` reaches; the vector host keeps that many.
const EARLIER: usize = 4;
const _: () = assert!(EARLIER <= RECENT_TIMERS);

fn op(gen: Gen) -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (message(gen), prop_oneof![3 => Just(None), 1 => any::<u64>().prop_map(Some)])
            .prop_map(|(m, now)| Op::AgentEnd(m, now)),
        3 => message(gen).prop_map(Op::MessageEnd),
        8 => Just(Op::Fire(TimerPick::Pending)),
        2 => (0..EARLIER).prop_map(|k| Op::Fire(TimerPick::Earlier(k))),
        1 => any::<u64>().prop_map(|t| Op::Fire(TimerPick::Unknown(t))),
        4 => (any::<bool>(), prop_oneof![3 => Just(None), 1 => (0..corpus().len()).prop_map(Some)])
            .prop_map(|(switched, wrong)| Op::Answer { switched, wrong }),
        1 => Just(Op::AbortRetry),
        1 => Just(Op::Abort),
        1 => any::<bool>().prop_map(Op::SetAutoRetry),
        1 => settings_json(gen).prop_map(|(j, s)| Op::Settings(j, s)),
    ]
}

fn scenario() -> impl Strategy<Value = (RetrySettings, HostOptions, Vec<Op>)> {
    (
        strategies::classic_settings(),
        strategies::classic_host_options(),
    )
        .prop_flat_map(|(s, h)| {
            (
                Just(s),
                Just(h),
                proptest::collection::vec(op(Gen::classic(h.context_window)), 1..160),
            )
        })
}

/// A scenario with the policy options: settings with every key, a seeded
/// host, option inputs.
fn option_scenario() -> impl Strategy<Value = (RetrySettings, HostOptions, Vec<Op>)> {
    (
        strategies::section_10_settings(),
        strategies::host_options(),
    )
        .prop_flat_map(|(s, h)| {
            (
                Just(s),
                Just(h),
                proptest::collection::vec(op(Gen::options(h.context_window)), 1..160),
            )
        })
}

// ---------------------------------------------------------------------------
// The driver
// ---------------------------------------------------------------------------

/// The host's timer table (the model keeps the usage-limit text itself).
type Host = VectorHost<&'static str>;

/// A vector ordinal as the model counts.
fn ordinal(n: u64) -> usize {
    usize::try_from(n).expect("an ordinal fits usize")
}

/// Converts the machine's outputs to the model's form (timer ids become
/// ordinals through the vector host).
fn convert(out: &[Output<'_>], host: &mut Host) -> Vec<Out> {
    out.iter()
        .map(|o| match *o {
            Output::Emit(Event::Start {
                attempt,
                max_attempts,
                delay_ms,
                error_message,
            }) => Out::Start {
                attempt,
                max: max_attempts,
                delay: delay_ms,
                text: error_message.to_owned(),
            },
            Output::Emit(Event::End {
                success,
                attempt,
                final_error,
            }) => Out::End {
                success,
                attempt,
                error: final_error.map(|e| e.to_string()),
                fail_fast: matches!(final_error, Some(FinalError::WaitTooLong { .. })),
            },
            Output::DropTrailingError => Out::Drop,
            Output::Sleep { ms, timer } => Out::Sleep {
                ms,
                ordinal: ordinal(host.record_sleep(timer)),
            },
            Output::CancelTimer { timer } => Out::Cancel {
                ordinal: host.ordinal(timer).map_or(0, ordinal),
            },
            Output::ContinueAgent => Out::Continue,
            Output::MarkUsageLimit { retry_after_ms } => Out::Mark {
                hint: retry_after_ms,
            },
            Output::CheckCompaction => Out::Check,
            Output::AbortAgent => Out::AbortAgent,
            Output::Settled => Out::Settled,
            // The model covers sections 1–10, whose machines never ask for a
            // model or continue a partial turn.
            Output::ResumeAgent | Output::SwitchModel { .. } => {
                panic!("a section 11 output from sections 1-10: {o:?}")
            }
        })
        .collect()
}

/// Checks the number of outputs and converts them.
fn conv(
    result: Result<autoretry::Outputs<'_>, autoretry::Refused>,
    host: &mut Host,
) -> Result<Vec<Out>, autoretry::Refused> {
    result.map(|out| {
        assert!(out.len() <= MAX_OUTPUTS);
        convert(&out, host)
    })
}

/// Statistics of one run, so the tests can show the generator reaches deep
/// states, and the outputs of every step.
#[derive(Default)]
struct Reached {
    starts: u32,
    max_attempt: u32,
    refused: u32,
    marks: u32,
    fail_fasts: u32,
    /// Fail-fast ends at the usage-limit answer (10.3 step 8).
    fail_fasts_at_answer: u32,
    /// Starts decided at an `agent_end` whose delay differs from
    /// `base × 2^(n−1)`.
    reshaped_delays: u32,
    /// Per step: the outputs (`None`: refused), and the settings in force
    /// before the step.
    steps: Vec<(Option<Vec<Out>>, RetrySettings)>,
}

/// Runs `ops` (and a final `abort_retry`) through the machine, under the
/// monitor, and through the model; they must agree at every step. With
/// `classic`, the model is that of sections 1–9 alone.
fn run(
    settings: RetrySettings,
    host: HostOptions,
    ops: &[Op],
    classic: bool,
) -> Result<Reached, TestCaseError> {
    let mut mon = Monitor::new(settings, host);
    let mut model = Model::new(settings, host, classic);
    let mut timers = Host::new();
    let mut reached = Reached::default();
    for (step, op) in ops.iter().chain([Op::AbortRetry].iter()).enumerate() {
        let before = mon.machine().clone();
        let settings_before = model.settings;
        let (result, expected) = match op {
            Op::AgentEnd(m, now) => {
                let result = mon.step(Input::AgentEnd {
                    message: m.message(),
                    now_ms: *now,
                });
                (conv(result, &mut timers), model.agent_end(m, *now))
            }
            Op::MessageEnd(m) => (
                conv(
                    mon.step(Input::MessageEnd {
                        message: m.message(),
                    }),
                    &mut timers,
                ),
                model.message_end(m),
            ),
            Op::Fire(pick) => {
                let (timer, ordinal) = match *pick {
                    TimerPick::Pending => match mon.machine().pending_timer() {
                        Some(t) => (t, timers.ordinal(t).map_or(0, ordinal)),
                        None => (TimerId(u64::MAX), 0),
                    },
                    TimerPick::Earlier(k) => {
                        // The ordinal `k` sleeps back from the last one.
                        match timers.sleeps().checked_sub(k as u64).filter(|&n| n > 0) {
                            Some(n) => (
                                timers.machine_timer(n).expect("kept: k < EARLIER"),
                                ordinal(n),
                            ),
                            None => (TimerId(u64::MAX - 1), 0),
                        }
                    }
                    TimerPick::Unknown(t) => {
                        (TimerId(t), timers.ordinal(TimerId(t)).map_or(0, ordinal))
                    }
                };
                (
                    conv(mon.step(Input::TimerFired { timer }), &mut timers),
                    Some(model.timer(ordinal)),
                )
            }
            Op::Answer { switched, wrong } => {
                let right = match &model.wait {
                    Wait::Answer { text, .. } => text.clone(),
                    _ => corpus()[0].text.clone(),
                };
                let text = match wrong {
                    Some(i) => corpus()[*i].text.clone(),
                    None => right,
                };
                let result = mon.step(Input::UsageLimitMarked {
                    switched: *switched,
                    error_message: &text,
                });
                (conv(result, &mut timers), model.answer(*switched, &text))
            }
            Op::AbortRetry => (
                conv(mon.step(Input::AbortRetry), &mut timers),
                Some(model.cancel()),
            ),
            Op::Abort => {
                let mut out = model.cancel();
                out.push(Out::AbortAgent);
                (conv(mon.step(Input::Abort), &mut timers), Some(out))
            }
            Op::SetAutoRetry(enabled) => {
                model.settings.enabled = *enabled;
                (
                    conv(
                        mon.step(Input::SetAutoRetry { enabled: *enabled }),
                        &mut timers,
                    ),
                    Some(vec![]),
                )
            }
            Op::Settings(text, expected_settings) => {
                // The strict decoding of the group (wire::SettingsGroup).
                let direct = serde_json::from_str::<SettingsGroup>(text)
                    .map(|g| g.0)
                    .ok();
                prop_assert_eq!(direct, *expected_settings, "decoding {}", text);
                // The input-line decoding (wire::json) agrees, duplicate
                // keys included (the line's parser refuses them).
                let decoded = parse_value(&format!(r#"{{"type":"settings","settings":{text}}}"#))
                    .ok()
                    .map(|line| InputLine::from_json(&line).expect("a settings input"));
                prop_assert_eq!(
                    decoded.as_ref().and_then(|d| d.as_input("").ok()),
                    direct.map(Input::Settings),
                    "decoding the input line of {}",
                    text
                );
                match direct {
                    Some(s) => {
                        model.set(s);
                        (
                            conv(mon.step(Input::Settings(s)), &mut timers),
                            Some(vec![]),
                        )
                    }
                    None => {
                        // Refused by the host: nothing reaches the machine.
                        prop_assert_eq!(mon.machine(), &before);
                        reached.refused += 1;
                        reached.steps.push((None, settings_before));
                        continue;
                    }
                }
            }
        };
        match (result, expected) {
            (Err(_), None) => {
                prop_assert_eq!(mon.machine(), &before, "refused at step {}", step);
                reached.refused += 1;
                reached.steps.push((None, settings_before));
            }
            (Ok(got), Some(expected)) => {
                prop_assert_eq!(&got, &expected, "step {} {:?}", step, op);
                for o in &got {
                    match o {
                        Out::Start { attempt, delay, .. } => {
                            reached.starts += 1;
                            reached.max_attempt = reached.max_attempt.max(*attempt);
                            let decided_here = matches!(op, Op::AgentEnd(..));
                            if decided_here
                                && *delay != self::delay(settings_before.base_delay_ms, *attempt)
                            {
                                reached.reshaped_delays += 1;
                            }
                        }
                        Out::Mark { .. } => reached.marks += 1,
                        Out::End {
                            fail_fast: true, ..
                        } => {
                            reached.fail_fasts += 1;
                            if matches!(op, Op::Answer { .. }) {
                                reached.fail_fasts_at_answer += 1;
                            }
                        }
                        _ => {}
                    }
                }
                reached.steps.push((Some(got), settings_before));
            }
            (got, expected) => {
                return Err(TestCaseError::fail(format!(
                    "step {step} {op:?}: machine {got:?}, model {expected:?}"
                )))
            }
        }
        let state = mon.machine().state();
        prop_assert_eq!(
            (
                state.auto_retry_enabled,
                state.is_retrying,
                state.retry_attempt
            ),
            (model.settings.enabled, model.open, model.attempt),
            "state after step {} {:?}",
            step,
            op
        );
        prop_assert_eq!(mon.machine().settings(), model.settings);
    }
    // The final abort_retry leaves everything idle.
    let state = mon.machine().state();
    prop_assert!(!state.is_retrying && state.retry_attempt == 0);
    prop_assert_eq!(mon.machine().pending_timer(), None);
    prop_assert_eq!(mon.fail_fasts(), u64::from(reached.fail_fasts));
    Ok(reached)
}

/// The machine's outputs (and refusals) for `ops`, as text, under the
/// monitor; the usage-limit answers carry the awaited text.
fn outputs_of(settings: RetrySettings, host: HostOptions, ops: &[Op]) -> Vec<String> {
    let mut mon = Monitor::new(settings, host);
    let mut seen = Vec::new();
    for op in ops {
        let awaited = mon.awaited_text().map(str::to_owned);
        let input = match op {
            Op::AgentEnd(m, now) => Input::AgentEnd {
                message: m.message(),
                now_ms: *now,
            },
            Op::MessageEnd(m) => Input::MessageEnd {
                message: m.message(),
            },
            Op::Fire(_) => match mon.machine().pending_timer() {
                Some(timer) => Input::TimerFired { timer },
                None => Input::TimerFired { timer: TimerId(0) },
            },
            Op::Answer { switched, .. } => {
                let result = mon.step(Input::UsageLimitMarked {
                    switched: *switched,
                    error_message: awaited.as_deref().unwrap_or(""),
                });
                seen.push(format!("{result:?}"));
                continue;
            }
            Op::AbortRetry => Input::AbortRetry,
            Op::Abort => Input::Abort,
            Op::SetAutoRetry(enabled) => Input::SetAutoRetry { enabled: *enabled },
            Op::Settings(_, Some(s)) => Input::Settings(*s),
            Op::Settings(_, None) => continue,
        };
        seen.push(format!("{:?}", mon.step(input)));
    }
    seen.push(format!("{:?}", mon.machine()));
    seen
}

proptest! {
    #![proptest_config(config())]

    /// Sections 1–9 (the classic settings, no message field of 10.2):
    /// long random input sequences, where the machine equals the reference
    /// model of those sections step by step (outputs, refusals, state), and
    /// the monitor's invariants hold.
    #[test]
    fn machine_follows_the_model((settings, host, ops) in scenario()) {
        run(settings, host, &ops, true)?;
    }

    /// Sections 1–9 with the default settings and host, where chains run to
    /// their end most often.
    #[test]
    fn default_machine_follows_the_model(ops in proptest::collection::vec(op(CLASSIC), 1..200)) {
        run(RetrySettings::DEFAULT, HostOptions::default(), &ops, true)?;
    }

    /// Sections 1–9 on a host with a credential store and a small window:
    /// the usage-limit path and overflow by usage.
    #[test]
    fn store_machine_follows_the_model(ops in proptest::collection::vec(op(Gen::classic(1000)), 1..200)) {
        run(
            RetrySettings::DEFAULT,
            HostOptions::DEFAULT.with_context_window(1000).with_credential_store(true),
            &ops,
            true,
        )?;
    }

    /// Section 10: settings with every key (changed by settings inputs on
    /// the way), seeded hosts, messages with the host's fields; the machine
    /// equals the model with 10.3's wait (cap, ceiling, the jitter draws,
    /// hints under honorHints, `delay = max(backoff, h)`, fail fast on
    /// both paths) step by step.
    #[test]
    fn options_machine_follows_the_model((settings, host, ops) in option_scenario()) {
        run(settings, host, &ops, false)?;
    }

    /// The modern profile on a host with a credential store: the
    /// usage-limit hand-off with hints over the ceiling, answered switched
    /// (the wait is 0) or not (fail fast at the answer).
    #[test]
    fn modern_store_machine_follows_the_model(
        seed in any::<u64>(),
        ops in proptest::collection::vec(op(Gen::options(1000)), 1..200),
    ) {
        run(
            RetrySettings::MODERN,
            HostOptions::DEFAULT.with_context_window(1000).with_credential_store(true).with_seed(seed),
            &ops,
            false,
        )?;
    }

    /// 10.3 step 4: with jitter and no hint, every delay lies in
    /// `(backoff·(1 − p/100), backoff]` for a non-zero backoff (the capped
    /// backoff of steps 1–3 under the settings in force), and is 0 for a
    /// zero backoff.
    #[test]
    fn jittered_delays_lie_in_their_range(
        (settings, host, ops) in (strategies::section_10_settings(), strategies::host_options(), 1u8..=100).prop_flat_map(|(s, h, p)| (
            Just(s.with_jitter_pct(JitterPct::new(p).expect("at most 100")).with_honor_hints(false)),
            Just(h.with_credential_store(false)),
            proptest::collection::vec(op(Gen::options(h.context_window)), 1..120),
        )),
    ) {
        let reached = run(settings, host, &ops, false)?;
        for (out, s) in &reached.steps {
            for o in out.iter().flatten() {
                let Out::Start { attempt, delay: d, .. } = o else { continue };
                // A settings change with honorHints on has no hint here:
                // only the hint-free starts are checked.
                if s.honor_hints || s.jitter_pct.get() == 0 {
                    continue;
                }
                let mut backoff = delay(s.base_delay_ms, *attempt);
                for limit in [s.backoff_cap_ms, s.max_delay_ms] {
                    if limit > 0 {
                        backoff = backoff.min(limit);
                    }
                }
                let p = u128::from(s.jitter_pct.get());
                if backoff == 0 {
                    prop_assert_eq!(*d, 0);
                } else {
                    prop_assert!(*d <= backoff, "{} above {}", d, backoff);
                    prop_assert!(
                        u128::from(*d) * 100 > u128::from(backoff) * (100 - p),
                        "{} at or below {}·(1 − {}/100)", d, backoff, p
                    );
                }
            }
        }
    }

    /// 10.3 step 8: an end that fails fast comes with no start, no
    /// `drop_trailing_error` and no `sleep`, settles the chain and hands
    /// the message to the compaction check; the machine is idle after it.
    #[test]
    fn a_fail_fast_never_starts_drops_or_sleeps(
        (settings, host, ops) in (strategies::section_10_settings(), strategies::host_options(), 1u64..5000, any::<bool>()).prop_flat_map(|(s, h, ceiling, store)| (
            Just(s.with_max_delay_ms(ceiling).with_honor_hints(true)),
            Just(h.with_credential_store(store)),
            proptest::collection::vec(op(Gen::options(h.context_window)), 1..120),
        )),
    ) {
        let reached = run(settings, host, &ops, false)?;
        for (out, _) in &reached.steps {
            let Some(out) = out else { continue };
            if out.iter().any(|o| matches!(o, Out::End { fail_fast: true, .. })) {
                prop_assert!(
                    !out.iter().any(|o| matches!(o, Out::Start { .. } | Out::Drop | Out::Sleep { .. })),
                    "{:?}", out
                );
                let tail: Vec<&Out> = out.iter().skip(1).collect();
                prop_assert_eq!(tail, vec![&Out::Settled, &Out::Check]);
            }
        }
    }

    /// 10.6: the same seed and inputs give the same outputs, step by step,
    /// and the same machine at the end.
    #[test]
    fn the_same_seed_and_inputs_give_the_same_outputs((settings, host, ops) in option_scenario()) {
        let first = outputs_of(settings, host, &ops);
        let again = outputs_of(settings, host, &ops);
        prop_assert_eq!(first, again);
    }
}

/// The generator reaches what the properties are about: full chains, the
/// usage-limit answer, refusals; with the options, fail-fast ends on both
/// paths and delays reshaped by the cap, the ceiling, jitter and hints.
#[test]
fn the_generator_reaches_deep_states() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let hosts = [
        HostOptions::default(),
        HostOptions::DEFAULT
            .with_context_window(1000)
            .with_credential_store(true),
    ];
    for (host, options) in hosts.into_iter().flat_map(|h| [(h, false), (h, true)]) {
        let gen = Gen {
            window: host.context_window,
            options,
        };
        let settings = if options {
            RetrySettings::MODERN
        } else {
            RetrySettings::DEFAULT
        };
        let mut total = Reached::default();
        // The options' runs check more per step: fewer of them.
        let runs = if options { 100 } else { 200 };
        for _ in 0..runs {
            let ops = proptest::collection::vec(op(gen), 100..101)
                .new_tree(&mut runner)
                .expect("a tree")
                .current();
            let r = run(settings, host, &ops, !options).expect("passes");
            total.starts += r.starts;
            total.max_attempt = total.max_attempt.max(r.max_attempt);
            total.refused += r.refused;
            total.marks += r.marks;
            total.fail_fasts += r.fail_fasts;
            total.fail_fasts_at_answer += r.fail_fasts_at_answer;
            total.reshaped_delays += r.reshaped_delays;
        }
        println!(
            "{host:?}, options {options}: {} starts, deepest {}, {} refused, {} marks, {} fail fast ({} at the answer), {} reshaped delays",
            total.starts,
            total.max_attempt,
            total.refused,
            total.marks,
            total.fail_fasts,
            total.fail_fasts_at_answer,
            total.reshaped_delays
        );
        assert!(total.starts > runs, "{} starts", total.starts);
        assert!(
            total.max_attempt >= 3,
            "deepest attempt {}",
            total.max_attempt
        );
        assert!(total.refused > 50, "{} refusals", total.refused);
        if host.credential_store {
            assert!(total.marks > 50, "{} usage-limit marks", total.marks);
        }
        if options {
            assert!(total.fail_fasts > 20, "{} fail-fast ends", total.fail_fasts);
            if host.credential_store {
                assert!(
                    total.fail_fasts_at_answer >= 3,
                    "{} fail-fast ends at the answer",
                    total.fail_fasts_at_answer
                );
            }
            assert!(
                total.reshaped_delays > 100,
                "{} reshaped delays",
                total.reshaped_delays
            );
        } else {
            assert_eq!((total.fail_fasts, total.reshaped_delays), (0, 0));
        }
    }
}

/// The monitor accepts every step of every vector (sections 1–9 and the
/// options of section 10) on the real machine: its reading of the spec
/// agrees with the vectors wherever the machine does.
#[test]
fn the_monitor_accepts_every_vector() {
    use autoretry_testkit::vector::VectorLine;
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut steps = 0;
    for dir in ["tests/vectors", "tests/vectors/options"] {
        let mut paths: Vec<_> = std::fs::read_dir(root.join(dir))
            .expect("the vectors")
            .map(|e| e.expect("an entry").path())
            .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
            .collect();
        paths.sort();
        for path in paths {
            let text = std::fs::read_to_string(&path).expect("a vector file");
            let mut mon = Monitor::new(RetrySettings::DEFAULT, HostOptions::DEFAULT);
            let mut host = VectorHost::<String>::new();
            for line in text.split('\n') {
                match VectorLine::parse(line).expect("a vector line") {
                    None => {}
                    Some(VectorLine::Scenario(header)) => {
                        mon = Monitor::new(header.settings, header.host);
                        host.reset();
                    }
                    Some(VectorLine::Step(input)) => {
                        steps += 1;
                        let marked = host.marked_text().to_owned();
                        let Ok(input) = input.as_input(&marked) else {
                            continue;
                        };
                        let Some(input) = host.machine_input(input) else {
                            continue;
                        };
                        if let Ok(out) = mon.step(input) {
                            for o in out {
                                host.vector_output(&input, o);
                            }
                        };
                    }
                }
            }
        }
    }
    assert!(steps > 200, "only {steps} steps");
}

/// Whether `text` has none of the leading literals of rules 3–6 of 10.4
/// (ASCII-case-insensitively).
fn without_10_4_forms(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    ![
        "reset after",
        "please retry in",
        "\"retrydelay\"",
        "try again in",
    ]
    .iter()
    .any(|form| lower.contains(form))
}

// ---------------------------------------------------------------------------
// Classifier properties (spec §3)
// ---------------------------------------------------------------------------

/// Text with the characters that matter to the patterns: letters of the
/// patterns, digits, separators, line terminators, non-ASCII letters.
fn texty() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        4 => corpus_text(),
        2 => "[a-zA-Z0-9 _.:=,;-]{0,12}",
        1 => proptest::sample::select(vec![
            "rate", "limit", "usage", "overloaded", "429", "500", "503", "context", "window",
            "exceeded", "too long", "n_ctx", "tokens", "prompt", "400", "413", "(no body)",
            "status code", "retry-after", "x-ratelimit-reset", "\n", "\u{2028}", "\u{130}",
            "\u{131}", "\u{17F}", "\u{212A}", "é", "😀", "\u{FFFD}", "\t",
        ]).prop_map(str::to_owned),
        1 => any::<String>(),
    ];
    proptest::collection::vec(piece, 0..5).prop_map(|v| v.concat())
}

fn flip_case(text: &str, flips: &[bool]) -> String {
    text.chars()
        .zip(flips.iter().cycle())
        .map(|(c, &f)| {
            if f && c.is_ascii_lowercase() {
                c.to_ascii_uppercase()
            } else if f && c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c
            }
        })
        .collect()
}

/// Replaces the ASCII letters `i`, `s`, `k` (either case) chosen by `picks`
/// with `with(letter)`; returns the new text and the text with the chosen
/// letters removed.
fn substitute(text: &str, picks: &[bool], with: impl Fn(char) -> char) -> (String, String) {
    let mut replaced = String::new();
    let mut removed = String::new();
    let mut n = 0;
    for c in text.chars() {
        if matches!(c.to_ascii_lowercase(), 'i' | 's' | 'k') {
            let pick = picks.get(n % picks.len().max(1)).copied().unwrap_or(false);
            n += 1;
            if pick {
                replaced.push(with(c));
                continue;
            }
        }
        replaced.push(c);
        removed.push(c);
    }
    (replaced, removed)
}

fn folding(c: char, variant: bool) -> char {
    match (c.to_ascii_lowercase(), variant) {
        ('i', false) => '\u{130}',
        ('i', true) => '\u{131}',
        ('s', _) => '\u{17F}',
        _ => '\u{212A}',
    }
}

/// The monotone predicates, in a fixed order.
fn monotone(t: &str) -> [bool; 4] {
    [
        Classifier::Classic.matches_retryable(t),
        Classifier::Classic.matches_usage_limit(t),
        Classifier::Classic.matches_overflow(t),
        matches_overflow_unanchored(t),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// ASCII case never changes a label (nor the hint).
    #[test]
    fn ascii_case_changes_nothing(text in texty(), flips in proptest::collection::vec(any::<bool>(), 1..8), now in any::<Option<u64>>()) {
        let flipped = flip_case(&text, &flips);
        prop_assert_eq!(classify(&flipped), classify(&text));
        prop_assert_eq!(retry_hint_ms(&flipped, now), retry_hint_ms(&text, now));
    }

    /// `İ ı ſ K` in place of `i`/`s`/`k` classify exactly like a letter that
    /// folds nowhere (`é`), and never match more than the text without them.
    #[test]
    fn folding_letters_never_match(text in texty(), picks in proptest::collection::vec(any::<bool>(), 1..6), variant in any::<bool>()) {
        let (folded, removed) = substitute(&text, &picks, |c| folding(c, variant));
        let (neutral, _) = substitute(&text, &picks, |_| 'é');
        prop_assert_eq!(classify(&folded), classify(&neutral), "{:?}", folded);
        for (with, without) in monotone(&folded).into_iter().zip(monotone(&removed)) {
            prop_assert!(!with || without, "{:?} matches more than {:?}", folded, removed);
        }
    }

    /// On corpus texts that match, turning a letter the pattern needs into
    /// its folding look-alike never creates a match the neutral letter would
    /// not (the same statement, on the texts where it bites).
    #[test]
    fn folding_letters_in_matching_texts(i in 0..corpus().len(), picks in proptest::collection::vec(any::<bool>(), 1..4), variant in any::<bool>()) {
        let text = &corpus()[i].text;
        let (folded, removed) = substitute(text, &picks, |c| folding(c, variant));
        let (neutral, _) = substitute(text, &picks, |_| '\u{FFFD}');
        prop_assert_eq!(classify(&folded), classify(&neutral));
        for (with, without) in monotone(&folded).into_iter().zip(monotone(&removed)) {
            prop_assert!(!with || without);
        }
    }

    /// Appending text never loses a match of a monotone predicate; prepending
    /// never loses one of the unanchored patterns.
    #[test]
    fn more_text_never_loses_a_match(text in texty(), extra in texty()) {
        let appended = format!("{text}{extra}");
        for (before, after) in monotone(&text).into_iter().zip(monotone(&appended)) {
            prop_assert!(!before || after, "{:?} -> {:?}", text, appended);
        }
        let prepended = format!("{extra}{text}");
        let [r, u, _, o] = monotone(&text);
        let [r2, u2, _, o2] = monotone(&prepended);
        prop_assert!((!r || r2) && (!u || u2) && (!o || o2), "{:?} -> {:?}", text, prepended);
    }

    /// The bytes entry points read bytes as `String::from_utf8_lossy` does.
    #[test]
    fn bytes_equal_lossy_strings(
        bytes in prop_oneof![
            any::<Vec<u8>>(),
            (texty(), any::<Vec<u8>>(), any::<prop::sample::Index>()).prop_map(|(t, junk, at)| {
                let mut b = t.into_bytes();
                let at = at.index(b.len() + 1);
                b.splice(at..at, junk);
                b
            }),
        ],
        now in any::<Option<u64>>(),
    ) {
        let lossy = String::from_utf8_lossy(&bytes);
        prop_assert_eq!(classify_bytes(&bytes), classify(&lossy));
        prop_assert_eq!(Classifier::Classic.matches_retryable_bytes(&bytes), Classifier::Classic.matches_retryable(&lossy));
        prop_assert_eq!(Classifier::Classic.matches_overflow_bytes(&bytes), Classifier::Classic.matches_overflow(&lossy));
        prop_assert_eq!(Classifier::Classic.matches_usage_limit_bytes(&bytes), Classifier::Classic.matches_usage_limit(&lossy));
        prop_assert_eq!(retry_hint_ms_bytes(&bytes, now), retry_hint_ms(&lossy, now));
    }

    /// Hints never panic, and the integer rules saturate as spec §3.5 says
    /// (computed here with wide integers).
    #[test]
    fn hints_saturate(
        rule in 0usize..3,
        digits in "[0-9]{1,40}",
        ws1 in "[ \t]{0,2}",
        sep in prop_oneof![Just(':'), Just('=')],
        ws2 in "[ \t]{0,2}",
        prefix in "[a-z ]{0,10}",
        suffix in prop_oneof![Just(String::new()), "[ ,;][a-z ]{0,10}"],
        flips in proptest::collection::vec(any::<bool>(), 1..5),
        now in any::<Option<u64>>(),
    ) {
        let name = ["retry-after-ms", "x-ratelimit-reset-ms", "x-ratelimit-reset"][rule];
        let text = format!("{prefix}{}{ws1}{sep}{ws2}{digits}{suffix}", flip_case(name, &flips));
        // Digits saturate at u64::MAX.
        let v: u128 = digits.parse::<u128>().map_or(u128::from(u64::MAX), |v| v.min(u128::from(u64::MAX)));
        let max = u128::from(u64::MAX);
        let expected: Option<u128> = match rule {
            0 => Some(v),
            1 if v <= 1_000_000_000_000 => Some(v),
            1 => now.map(|now| v.saturating_sub(u128::from(now))),
            _ if v <= 1_000_000_000 => Some(v * 1000),
            _ => now.map(|now| (v * 1000).min(max).saturating_sub(u128::from(now))),
        };
        let expected = expected.map(|e| u64::try_from(e.min(max)).expect("fits"));
        prop_assert_eq!(retry_hint_ms(&text, now), expected, "{:?}", text);
    }

    /// Any text and any clock: no panic, and the hint does not depend on
    /// the entry point.
    #[test]
    fn hints_never_panic(text in texty(), tail in "[0-9eE.+:TZz-]{0,30}", now in any::<Option<u64>>()) {
        for name in ["retry-after: ", "retry-after-ms=", "x-ratelimit-reset-ms:", "x-ratelimit-reset ="] {
            let t = format!("{text}{name}{tail}");
            prop_assert_eq!(retry_hint_ms(&t, now), retry_hint_ms_bytes(t.as_bytes(), now));
        }
    }
}

proptest! {
    #![proptest_config(config())]

    /// 10.4 keeps the rules of 3.5 (as its rules 1, 2, 7 and 8) around four
    /// new ones: on a text with none of the new rules' leading literals, the
    /// wait hint is the hint of 3.5, with or without a clock.
    #[test]
    fn wait_hints_are_those_of_3_5_without_the_new_forms(
        text in prop_oneof![3 => texty(), 1 => hint_index().prop_map(|i| text_of(i).to_owned())],
        tail in "[0-9eE.+:TZz-]{0,30}",
        now in any::<Option<u64>>(),
    ) {
        for name in ["", "retry-after: ", "retry-after-ms=", "x-ratelimit-reset-ms:", "x-ratelimit-reset ="] {
            let t = format!("{text}{name}{tail}");
            if without_10_4_forms(&t) {
                prop_assert_eq!(wait_hint_ms(&t, now), retry_hint_ms(&t, now), "{:?}", t);
            }
        }
    }
}

/// The predicates left out of the monotonicity properties are indeed not
/// monotone: the anchored overflow pattern and the `retryable` label.
#[test]
fn anchored_overflow_and_the_retryable_label_are_not_monotone() {
    assert!(Classifier::Classic.matches_overflow("413 (no body)"));
    assert!(!Classifier::Classic.matches_overflow("x 413 (no body)"));
    assert!(classify("503").retryable);
    assert!(!classify("503 prompt is too long").retryable);
}
