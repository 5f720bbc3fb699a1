//! Entry points for fuzzers (`fuzz/`) and property tests (feature `std`).
//!
//! Each `fuzz_*` function takes arbitrary bytes, drives one part of
//! `autoretry` with them and **panics** when one of its guarantees is violated:
//! that is what a fuzzer looks for. On any input that respects the contract
//! they return normally. The fuzz targets in `fuzz/fuzz_targets/` are one
//! line each, calling these functions, so a crash found by a fuzzer can be
//! replayed by an ordinary test (`tests/machine/fuzz_regressions.rs`).
//!
//! The machine's entry points run every input through the invariant
//! [`Monitor`], which the property tests use too.
//!
//! ```
//! use autoretry_testkit::fuzzing::{fuzz_classify, fuzz_machine};
//! fuzz_classify(b"529 overloaded_error retry-after: 3");
//! fuzz_machine(&[0, 3, 0, 0, 1, 2, 3, 4, 5, 6, 7]);
//! ```

use autoretry::classify::{self, Classifier};
use autoretry::{
    AssistantMessage, HostOptions, Input, JitterPct, Machine, Partial, Profile, RetryBudget,
    RetrySettings, StopReason, TimerId, Usage,
};

use crate::Monitor;

/// Texts the machine fuzzer draws from, besides texts taken from the fuzz
/// input itself: every class of spec §3 and some near misses.
pub const TEXTS: &[&str] = &[
    "",
    "529 overloaded_error",
    "503 Service Unavailable",
    "fetch failed",
    "Connection error.",
    "exceeds 5000 tokens",
    "usage_limit_reached retry-after-ms=11180000",
    "You have hit your usage limit. x-ratelimit-reset: 60",
    "usage limit retry-after: 1970-01-01T00:01:00Z",
    "Rate limit reached. retry-after: 1e30",
    "prompt is too long: 208254 tokens > 200000 maximum",
    "400 status code (no body)",
    "429 status code (no body)",
    "invalid_request_error: bad tool schema",
    "Usage Limit x-ratelimit-reset-ms: 99999999999999999999999",
    "usage\u{2028}limit 503",
    "rate lımit",
];

/// Texts the machine fuzzer draws from for messages that carry the host's
/// fields (spec §10.2): the hint forms of §10.3–10.4, waits around the
/// modern ceiling, and texts the extended classifier reads differently.
pub const OPTION_TEXTS: &[&str] = &[
    "usage_limit_reached retry-after-ms=11180000",
    "usage_limit_reached retry-after-ms=120000",
    "503 Service Unavailable retry-after-ms: 0",
    "429 Too Many Requests. Please retry in 41.820516331s.",
    "rate limit exceeded: reset after 1h30m10s",
    "You have hit your usage limit. Try again in ~158 min.",
    "{\"error\":{\"code\":429,\"status\":\"RESOURCE_EXHAUSTED\",\"details\":[{\"retryDelay\": \"38s\"}]}}",
    "This request would exceed your account's rate limit. Please try again later.",
    "quota exceeded",
    "socket hang up",
    "413 Request Entity Too Large",
    "request exceeds 5000 tokens per minute",
    "overloaded retry-after: 400",
];

/// Whether one of the **unanchored** overflow patterns of spec 3.3 (all but
/// `^4(00|13)...`) matches `text`. Unlike [`Classifier::matches_overflow`],
/// this predicate is monotone both ways: text added before or after a match
/// never removes it.
///
/// ```
/// use autoretry::classify::Classifier;
/// use autoretry_testkit::fuzzing::matches_overflow_unanchored;
/// assert!(Classifier::Classic.matches_overflow("413 (no body)") && !matches_overflow_unanchored("413 (no body)"));
/// assert!(matches_overflow_unanchored("error: too many tokens"));
/// ```
pub fn matches_overflow_unanchored(text: &str) -> bool {
    // A leading character that no pattern contains: the anchored rule
    // (`^4(00|13)...`) cannot match, and no unanchored match can use it.
    Classifier::Classic.matches_overflow(&format!("\u{e9}{text}"))
}

/// Reads fuzz bytes as a stream of small decisions; past the end it reads
/// zeros.
struct Reader<'a> {
    data: &'a [u8],
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> u8 {
        match self.data.split_first() {
            Some((&b, rest)) => {
                self.data = rest;
                b
            }
            None => 0,
        }
    }

    fn u64(&mut self) -> u64 {
        let mut v = 0u64;
        for _ in 0..8 {
            v = (v << 8) | u64::from(self.byte());
        }
        v
    }

    /// A number from a few interesting ones or the bytes themselves.
    fn number(&mut self, interesting: &[u64]) -> u64 {
        let pick = usize::from(self.byte());
        match interesting.get(pick % (interesting.len() + 1)) {
            Some(&v) => v,
            None => self.u64(),
        }
    }

    /// A text: one of [`TEXTS`], or up to 255 bytes of the input (the valid
    /// UTF-8 prefix of them).
    fn text(&mut self) -> &'a str {
        let pick = usize::from(self.byte());
        if pick < 200 {
            return TEXTS[pick % TEXTS.len()];
        }
        let len = usize::from(self.byte()).min(self.data.len());
        let (raw, rest) = self.data.split_at(len);
        self.data = rest;
        match core::str::from_utf8(raw) {
            Ok(s) => s,
            Err(e) => core::str::from_utf8(&raw[..e.valid_up_to()]).unwrap_or(""),
        }
    }

    fn is_empty(&self) -> bool {
        self.data.is_empty()
    }
}

const DELAYS: &[u64] = &[0, 1, 2000, 1 << 62, u64::MAX / 3, u64::MAX];
const MAX_RETRIES: &[u64] = &[0, 1, 2, 3, 5, 64, u32::MAX as u64];
const WINDOWS: &[u64] = &[0, 1000, 200_000, u64::MAX];
/// Ceilings and caps (spec §10.1): none, small, the modern values, huge.
const LIMITS: &[u64] = &[0, 1, 1000, 8000, 300_000, u64::MAX];
/// The host's `retryAfterMs` (spec §10.2): around the modern ceiling.
const RETRY_AFTERS: &[u64] = &[
    0,
    1,
    41_821,
    299_999,
    300_000,
    300_001,
    11_180_000,
    u64::MAX,
];

/// Usage-reset waits and chain totals (spec §11.5–11.6): none, small,
/// around the modern ceiling and the hint texts' waits, huge.
const WAIT_LIMITS: &[u64] = &[0, 1, 5000, 300_000, 11_180_000, 20_000_000, u64::MAX];

/// The stream's limits (spec §12.1): off, tiny, short, the modern 300 s,
/// huge.
const STREAM_LIMITS: &[u64] = &[0, 1, 100, 1000, 300_000, u64::MAX];

/// How far a stream input's clock moves (spec §12.2): around the limits
/// of [`STREAM_LIMITS`], so that silences land on either side of them.
const CLOCK_STEPS: &[u64] = &[0, 1, 99, 100, 101, 999, 1000, 1001, 300_000];

/// A settings group. The first byte gives `enabled` (its low three bits);
/// with its high bit set, the keys of spec §10.1 follow (profile,
/// ceiling, cap, jitter, hints, classifier), else they keep their
/// `classic` values, as the seeds written before them expect; with its
/// bit 6 set, the keys of §11.1 follow (`modelFallback`,
/// `maxUsageWaitMs`, `maxTotalDelayMs`), else they keep their defaults;
/// with its bit 5 set, the keys of §12.1 follow last
/// (`firstEventTimeoutMs`, `idleTimeoutMs`, `retryEmpty`).
fn settings(r: &mut Reader<'_>) -> RetrySettings {
    let first = r.byte();
    let mut s = RetrySettings::DEFAULT;
    if first & 0x80 != 0 {
        s.profile = if r.byte() % 2 == 0 {
            Profile::Classic
        } else {
            Profile::Modern
        };
        s.max_delay_ms = r.number(LIMITS);
        s.backoff_cap_ms = r.number(LIMITS);
        let pct = match r.byte() % 4 {
            0 => 0,
            1 => 25,
            2 => 100,
            _ => r.byte() % 101,
        };
        s.jitter_pct = JitterPct::saturating(pct);
        s.honor_hints = r.byte() % 2 == 1;
        s.classifier = match r.byte() % 3 {
            0 => Classifier::Classic,
            1 => Classifier::Extended,
            _ => Classifier::Curated,
        };
    }
    s.enabled = first % 8 != 0;
    s.max_retries = r.number(MAX_RETRIES) as u32;
    s.base_delay_ms = r.number(DELAYS);
    if first & 0x40 != 0 {
        s.model_fallback = r.byte() % 2 == 1;
        s.max_usage_wait_ms = r.number(WAIT_LIMITS);
        s.max_total_delay_ms = r.number(WAIT_LIMITS);
    }
    if first & 0x20 != 0 {
        s.first_event_timeout_ms = r.number(STREAM_LIMITS);
        s.idle_timeout_ms = r.number(STREAM_LIMITS);
        s.retry_empty = r.byte() % 2 == 1;
    }
    s
}

/// The host's clock for the next stream input (spec §12.2), from `clock`:
/// a byte picks a step forward, a stall (the same time), a step back, or a
/// jump to any time (8 bytes follow).
fn next_clock(r: &mut Reader<'_>, clock: u64) -> u64 {
    match r.byte() % 4 {
        0 => clock.saturating_add(r.number(CLOCK_STEPS)),
        1 => clock,
        2 => clock.saturating_sub(r.number(CLOCK_STEPS)),
        _ => r.u64(),
    }
}

/// A retry budget (spec §11.4): `maxTokens` 1–1000, `tokenRatio` 0.001–1000
/// and the starting tokens, each from a few interesting figures or the
/// bytes.
fn budget(r: &mut Reader<'_>) -> RetryBudget {
    // v − 1 wraps, so that 1 ..= 1000 stay themselves.
    let max = u32::try_from(r.number(&[1, 2, 4, 10, 1000]).wrapping_sub(1) % 1000)
        .expect("below 1000")
        + 1;
    let ratio =
        u32::try_from(r.number(&[1, 100, 500, 1000, 1_000_000]).wrapping_sub(1) % 1_000_000)
            .expect("below 10^6")
            + 1;
    let full = RetryBudget::new(max, ratio).expect("figures in range");
    let tokens = r.number(&[
        u64::from(max) * 1000,
        0,
        u64::from(max) * 500,
        u64::from(max) * 500 + 1,
    ]);
    full.with_tokens_milli(u32::try_from(tokens % (u64::from(max) * 1000 + 1)).expect("in range"))
        .expect("tokens in range")
}

/// Decodes the bytes into a host (settings, context window, credential
/// store, jitter seed, a retry budget) and a sequence of up to 512
/// inputs, runs them through a [`Monitor`], and panics on any violated
/// invariant. Settings and messages may carry the policy options of spec
/// §10, §11 and §12 (see the byte format in the source: bits 5–7 of a
/// settings group's first byte, bits 3–7 of a message's first byte, bit 3
/// of its usage byte for `empty`), the host byte's bit 2 gives a budget
/// (§11.4) handed with every input, the machine's questions are answered
/// (`usage_limit_marked`, `model_switched`, sometimes the other kind, or a
/// wrong text), and the stream's inputs (`stream_start`, `stream_event`,
/// an op byte of 14 or 15 with bit 7 set) carry a clock that steps, stalls,
/// goes back or jumps; the pending timer that fires may be a `watch`.
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_machine(b"\x01\x03\x02\x00\x01\x00\x01\x02\x03");
/// // Options on: the modern profile with a 300,000 ms ceiling, 25 % jitter,
/// // hints honoured; 5 retries from 2000 ms; seed 7. Then an `agent_end`
/// // whose host's retryAfterMs (300,001 ms) is over the ceiling: fail fast.
/// autoretry_testkit::fuzzing::fuzz_machine(&[
///     0x81, 1, 4, 3, 1, 1, 0, 4, 2, 0, 2, 0, 0, 0, 0, 0, 0, 0, 7, // settings, host
///     0, 0x24, 5, 1, 1, 1, 0, // agent_end
/// ]);
/// // Section 11 on: 3 retries from 2000 ms, modelFallback, a 5000 ms total;
/// // a budget of 4 tokens refilling 0.5. A retry (4 → 3 tokens), its
/// // backoff, a second failure throttled (3 → 2) that asks for a model,
/// // the switch and its immediate retry, then a failure after visible text
/// // (a continuation, which never asks): throttled (2 → 1), it ends.
/// autoretry_testkit::fuzzing::fuzz_machine(&[
///     0x41, 3, 2, 1, 0, 2, 0, 0x04, 2, 2, 0, // settings, host, budget
///     0, 4, 1, 1, 1, 0, 14, // agent_end, the timer fires
///     0, 4, 1, 1, 1, 0, 8, 0, 1, 14, // agent_end, model_switched, the timer fires
///     0, 0x84, 1, 1, 1, 0, 0, // agent_end with partial "text"
/// ]);
/// // Section 12 on: a first-event and an idle limit of 1000 ms, retryEmpty.
/// // A request at 1000 ms and its watch; an event 999 ms later; the watch
/// // fires (1 ms of silence: the rest is watched), then again: a stall.
/// // The aborted end is retried as the stall; then an empty answer.
/// autoretry_testkit::fuzzing::fuzz_machine(&[
///     0x21, 3, 2, 3, 3, 1, 0, 0, // settings, host
///     0x8E, 0, 6, // stream_start, 1000 ms on
///     0x9E, 0, 5, // stream_event, 999 ms on
///     14, 14, // the watch fires twice
///     0, 3, 1, 1, 1, 0, // agent_end, aborted
///     14, // the backoff ends
///     0, 0, 0, 9, 0, // agent_end, an empty stop
/// ]);
/// ```
pub fn fuzz_machine(bytes: &[u8]) {
    let _ = fuzz_machine_monitor(bytes);
}

/// [`fuzz_machine`], returning its monitor: what the bytes reached (the
/// stalls, watches and empty answers of spec §12, the fail-fast ends),
/// for the tests of the byte format and its seeds.
///
/// ```
/// use autoretry_testkit::fuzzing::fuzz_machine_monitor;
/// // The section 12 example of `fuzz_machine`: a watch re-armed, a stall
/// // decided as such, an empty answer retried.
/// let mon = fuzz_machine_monitor(&[
///     0x21, 3, 2, 3, 3, 1, 0, 0, 0x8E, 0, 6, 0x9E, 0, 5, 14, 14, 0, 3, 1, 1, 1, 0, 14, 0, 0, 0, 9, 0,
/// ]);
/// assert_eq!((mon.watches(), mon.watches_fired()), (2, 2));
/// assert_eq!((mon.stalls(), mon.stalls_decided(), mon.empty_failures()), (1, 1, 1));
/// ```
pub fn fuzz_machine_monitor(bytes: &[u8]) -> Monitor {
    let mut r = Reader { data: bytes };
    let settings = settings(&mut r);
    let context_window = r.number(WINDOWS);
    let store = r.byte();
    let host = HostOptions {
        context_window,
        credential_store: store % 2 == 1,
        seed: if store & 2 != 0 { r.u64() } else { 0 },
    };
    let mut budget = (store & 4 != 0).then(|| budget(&mut r));
    let mut mon = Monitor::new(settings, host);
    drive(&mut r, &mut mon, budget.as_mut(), 512);
    mon
}

/// Values a forged snapshot field takes, by the field's width in bytes,
/// besides random ones: the edges of each type and the small figures of a
/// chain.
fn forged_value(r: &mut Reader<'_>, name: &str, width: usize) -> u64 {
    let v = match (name, width) {
        // The decision's flags: each alone, the pairs a decision never
        // sets together, and all of them.
        ("marked_flags", _) => r.number(&[0, 1, 2, 3, 4, 8, 9, 11, 16, 19, 31]),
        (_, 1) => r.number(&[0, 1, 2, 3, 4, 100, 101]),
        (_, 2) => r.number(&[0, 1, 2]),
        (_, 4) => r.number(&[0, 1, 2, 3, 4, u64::from(u32::MAX) - 1, u64::from(u32::MAX)]),
        _ => r.number(&[0, 1, 2, 3, 4, 2000, u64::from(u32::MAX), u64::MAX - 1]),
    };
    // Random values keep to the field's type (all ones: its maximum).
    v & (u64::MAX >> (64 - 8 * width))
}

/// Forges a snapshot and, when the machine takes it, drives the restored
/// machine under a [`Monitor`] that resumes from it; panics on any
/// violated guarantee. Returns `None` when the snapshot is refused, else
/// how many inputs were fed after restoring.
///
/// The bytes give, in order: a host and settings, and up to 15 inputs,
/// as [`fuzz_machine`] reads them (a reachable machine, from which a
/// snapshot is taken); the text the host keeps with it; up to three field
/// edits ([`forge::FIELDS`](crate::forge::FIELDS) then
/// [`forge::FIELDS_V2`](crate::forge::FIELDS_V2): the field, then a
/// value, an edge of its type or random); after edits, whether the last
/// timer id is raised to the attempt; then the inputs fed to the restored
/// machine. Without edits the snapshot must restore to the very machine.
/// When the forged snapshot awaits an answer (usage limit or model), its
/// text digest is the kept text's, as the host keeps the text.
///
/// ```
/// use autoretry_testkit::fuzzing::fuzz_snapshot;
/// // No edit: the default machine restores; nothing more to feed.
/// assert_eq!(fuzz_snapshot(&[1, 3, 2, 0, 0, 0, 0]), Some(0));
/// // One edit: field 14 (`phase`) to 2 (a backoff at attempt 0): refused.
/// assert_eq!(fuzz_snapshot(&[1, 3, 2, 0, 0, 0, 1, 14, 2]), None);
/// ```
pub fn fuzz_snapshot(bytes: &[u8]) -> Option<usize> {
    use crate::forge::{forge, text_digest, FIELDS, FIELDS_V2};

    let mut r = Reader { data: bytes };
    let settings = settings(&mut r);
    let context_window = r.number(WINDOWS);
    let store = r.byte();
    let host = HostOptions {
        context_window,
        credential_store: store % 2 == 1,
        seed: if store & 2 != 0 { r.u64() } else { 0 },
    };
    let mut live = Monitor::new(settings, host);
    let prefix = usize::from(r.byte() % 16);
    drive(&mut r, &mut live, None, prefix);
    let machine = live.machine().clone();
    // The text a host keeps is one the machine asked to mark: never empty.
    let text = match live.awaited_text() {
        Some(text) => text.to_owned(),
        None => Some(r.text())
            .filter(|t| !t.is_empty())
            .unwrap_or(TEXTS[1])
            .to_owned(),
    };
    let edits: Vec<(&str, u64)> = (0..r.byte() % 4)
        .map(|_| {
            let at = usize::from(r.byte()) % (FIELDS.len() + FIELDS_V2.len());
            let (name, width) = match FIELDS.get(at) {
                Some(&field) => field,
                None => FIELDS_V2[at - FIELDS.len()],
            };
            (name, forged_value(&mut r, name, width))
        })
        .collect();
    let ids_for_attempt = !edits.is_empty() && r.byte() % 2 == 0;
    let forged = forge(machine.snapshot(), |fields| {
        for &(name, value) in &edits {
            fields[name] = match fields[name] {
                serde_json::Value::Bool(_) => (value % 2 == 1).into(),
                _ => value.into(),
            };
        }
        // Half the time a timer id for every retry, so that forged
        // attempts (up to u32::MAX) restore more often.
        if ids_for_attempt && fields["timer"].as_u64() < fields["attempt"].as_u64() {
            fields["timer"] = fields["attempt"].clone();
        }
        if fields["phase"] == 3 || fields["phase"] == 4 {
            fields["marked_text_digest"] = text_digest(&text).into();
        }
    });
    if edits.is_empty() {
        assert_eq!(forged, machine.snapshot(), "the digest made again differs");
        assert_eq!(Machine::restore(forged).as_ref(), Ok(&machine));
    }
    let mut mon = match Monitor::resume(forged, &text) {
        Ok(mon) => mon,
        Err(e) => {
            assert!(!e.to_string().is_empty());
            return None;
        }
    };
    // A restored machine snapshots to the same snapshot (in the format
    // version it was read from).
    let again = mon.machine().snapshot();
    let again = if forged.version() == again.version() {
        again
    } else {
        again.with_version(forged.version())
    };
    assert_eq!(again, forged, "restore then snapshot");
    Some(drive(&mut r, &mut mon, None, 512))
}

/// Feeds `mon` up to `limit` inputs read from `r` (the byte format of
/// [`fuzz_machine`]), with `budget` when there is one, and returns how many
/// it fed.
fn drive(
    r: &mut Reader<'_>,
    mon: &mut Monitor,
    mut budget: Option<&mut RetryBudget>,
    limit: usize,
) -> usize {
    // The texts of the inputs are borrowed from the bytes or `TEXTS`, and
    // the awaited text from a copy kept here.
    let mut last_text = String::new();
    // The host's monotonic clock of the stream's inputs; fuzzed, it may go
    // back.
    let mut clock = 0u64;
    let mut fed = 0;
    for _ in 0..limit {
        if r.is_empty() {
            break;
        }
        let op = r.byte();
        let awaited = mon.awaited_text().map(String::from);
        if let Some(text) = &awaited {
            last_text.clone_from(text);
        }
        // The backoff or the stream's watch (spec §12.2): never both.
        let pending = mon
            .machine()
            .pending_timer()
            .or(mon.machine().pending_watch());
        let input = match op % 16 {
            0..=3 => Input::AgentEnd {
                message: message(r),
                now_ms: match r.byte() % 3 {
                    0 => None,
                    1 => Some(r.u64()),
                    _ => Some(1_700_000_000_000),
                },
            },
            4 | 5 => Input::MessageEnd {
                message: message(r),
            },
            6 | 7 => {
                let timer = match (r.byte() % 4, pending) {
                    (0 | 1, Some(t)) => t,
                    (2, Some(t)) => TimerId(t.0.wrapping_sub(1)),
                    _ => TimerId(r.u64() % 8),
                };
                Input::TimerFired { timer }
            }
            8 | 9 => {
                let switched = r.byte() % 2 == 0;
                let error_message = if r.byte() % 4 != 0 && awaited.is_some() {
                    last_text.as_str()
                } else {
                    r.text()
                };
                // The answer the machine waits for; a high nibble of 0xF
                // gives the other kind.
                let model = mon.machine().awaits_model_switch_answer() != (op >= 0xF0);
                if model {
                    Input::ModelSwitched {
                        switched,
                        error_message,
                    }
                } else {
                    Input::UsageLimitMarked {
                        switched,
                        error_message,
                    }
                }
            }
            10 => Input::AbortRetry,
            11 => Input::Abort,
            12 => Input::SetAutoRetry {
                enabled: r.byte() % 2 == 0,
            },
            13 => Input::Settings(self::settings(r)),
            _ => {
                // Other sessions share the budget: bit 5 charges it, bit 6
                // refills it, before the input.
                if let Some(budget) = budget.as_deref_mut() {
                    if op & 0x20 != 0 {
                        budget.charge();
                    }
                    if op & 0x40 != 0 {
                        budget.refill();
                    }
                }
                if op & 0x80 != 0 {
                    // The stream (spec §12.2): bit 4 gives an event, else a
                    // request, at the host's next clock reading.
                    clock = next_clock(r, clock);
                    if op & 0x10 != 0 {
                        Input::StreamEvent { now_ms: clock }
                    } else {
                        Input::StreamStart { now_ms: clock }
                    }
                } else {
                    // Let a pending timer fire, as a host would.
                    match pending {
                        Some(timer) => Input::TimerFired { timer },
                        None => Input::AgentEnd {
                            message: AssistantMessage::new(StopReason::Stop),
                            now_ms: None,
                        },
                    }
                }
            }
        };
        let _ = match budget.as_deref_mut() {
            Some(budget) => mon.step_with_budget(input, budget),
            None => mon.step(input),
        };
        fed += 1;
    }
    fed
}

/// A message. Its first byte gives the stop reason (bits 0–2) and the
/// host's fields of spec §10.2: `shouldRetry` (bits 3–4: none, true,
/// false, none), `retryAfterMs` (bit 5: a number follows), and a text
/// from [`OPTION_TEXTS`] (bit 6). With bit 2 of the usage byte set, the
/// usage has cache writes; with its bit 3 set, the message is `empty`
/// (spec §12.3). With bit 7 of the first byte set, a last byte
/// gives `partial` (spec §11.2): `"text"` when even, else `"tools"`.
fn message<'a>(r: &mut Reader<'a>) -> AssistantMessage<'a> {
    let first = r.byte();
    let stop_reason = match first % 8 {
        0 => StopReason::Stop,
        1 => StopReason::Length,
        2 => StopReason::ToolUse,
        3 => StopReason::Aborted,
        _ => StopReason::Error,
    };
    let should_retry = match (first >> 3) & 3 {
        1 => Some(true),
        2 => Some(false),
        _ => None,
    };
    let retry_after_ms = if first & 0x20 != 0 {
        Some(r.number(RETRY_AFTERS))
    } else {
        None
    };
    let error_message = match r.byte() % 8 {
        0 => None,
        _ if first & 0x40 != 0 => Some(OPTION_TEXTS[usize::from(r.byte()) % OPTION_TEXTS.len()]),
        _ => Some(r.text()),
    };
    let usage_byte = r.byte();
    let usage = match usage_byte % 4 {
        0 => Some(Usage {
            input: r.number(WINDOWS),
            cache_read: r.number(&[0, 1, u64::MAX]),
            cache_write: if usage_byte & 4 != 0 {
                r.number(&[0, 1, 600, u64::MAX])
            } else {
                0
            },
        }),
        _ => None,
    };
    let partial = match first & 0x80 {
        0 => Partial::None,
        _ if r.byte() % 2 == 0 => Partial::Text,
        _ => Partial::Tools,
    };
    AssistantMessage {
        stop_reason,
        error_message,
        usage,
        should_retry,
        retry_after_ms,
        partial,
        empty: usage_byte & 8 != 0,
        headers: autoretry::Headers::NONE,
    }
}

/// Classifies the bytes every way the crate can and panics when two ways
/// disagree: the bytes entry points against the lossy-decoded string,
/// [`classify::classify`] against the single predicates, ASCII case changes,
/// the non-ASCII letters that fold to ASCII elsewhere (`İ ı ſ K`) against a
/// letter that folds nowhere, and appending a suffix (the second half of the
/// input) for the monotone predicates.
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_classify("Rate Limit; retry-after: 2".as_bytes());
/// ```
pub fn fuzz_classify(bytes: &[u8]) {
    let text = String::from_utf8_lossy(bytes);
    let c = classify::classify(&text);
    assert_eq!(classify::classify_bytes(bytes), c, "bytes vs lossy string");
    assert_eq!(
        Classifier::Classic.matches_retryable_bytes(bytes),
        Classifier::Classic.matches_retryable(&text)
    );
    assert_eq!(
        Classifier::Classic.matches_overflow_bytes(bytes),
        c.overflow
    );
    assert_eq!(
        Classifier::Classic.matches_usage_limit_bytes(bytes),
        c.usage_limit
    );
    assert_eq!(
        c.usage_limit,
        Classifier::Classic.matches_usage_limit(&text)
    );
    assert_eq!(c.overflow, Classifier::Classic.matches_overflow(&text));
    assert_eq!(
        c.retryable,
        !text.is_empty() && !c.overflow && Classifier::Classic.matches_retryable(&text)
    );
    assert_eq!(c.hint_ms, classify::retry_hint_ms(&text, None));

    // The curated set (spec 13.2): bytes against the lossy string, the
    // classification against its predicates, its hint and its long wait.
    let curated = Classifier::Curated;
    let k = curated.classify(&text);
    assert_eq!(
        curated.classify_bytes(bytes),
        k,
        "curated: bytes vs lossy string"
    );
    assert_eq!(curated.matches_overflow_bytes(bytes), k.overflow);
    assert_eq!(curated.matches_overflow(&text), k.overflow);
    let retryable = curated.matches_retryable(&text);
    assert_eq!(curated.matches_retryable_bytes(bytes), retryable);
    assert_eq!(
        k.retryable,
        !text.is_empty() && !k.overflow && retryable,
        "curated retryable"
    );
    let usage = curated.matches_usage_limit(&text);
    assert_eq!(curated.matches_usage_limit_bytes(bytes), usage);
    assert_eq!(k.hint_ms, classify::curated_hint_ms(&text, None));
    assert_eq!(
        k.usage_limit,
        usage || k.retryable && k.hint_ms.is_some_and(|h| h >= classify::LONG_WAIT_MS),
        "curated usage limit"
    );

    // ASCII case never matters.
    assert_eq!(
        classify::classify(&text.to_ascii_uppercase()),
        c,
        "upper case"
    );
    assert_eq!(
        classify::classify(&text.to_ascii_lowercase()),
        c,
        "lower case"
    );

    // İ ı ſ K behave like any other letter outside ASCII.
    let neutral: String = text
        .chars()
        .map(|ch| match ch {
            '\u{130}' | '\u{131}' | '\u{17F}' | '\u{212A}' => 'é',
            other => other,
        })
        .collect();
    assert_eq!(classify::classify(&neutral), c, "a folding letter matched");

    // Appending never loses a match of a monotone predicate.
    let cut = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    let head = &text[..cut];
    let monotone = |t: &str| {
        [
            Classifier::Classic.matches_retryable(t),
            Classifier::Classic.matches_usage_limit(t),
            Classifier::Classic.matches_overflow(t),
            matches_overflow_unanchored(t),
        ]
    };
    let (before, after) = (monotone(head), monotone(&text));
    for (i, (b, a)) in before.iter().zip(after).enumerate() {
        assert!(
            !b || a,
            "predicate {i} lost its match when text was appended"
        );
    }
    // Prepending never loses a match of the unanchored patterns.
    let tail = &text[cut..];
    if matches_overflow_unanchored(tail) {
        assert!(matches_overflow_unanchored(&text));
    }
    if Classifier::Classic.matches_retryable(tail) {
        assert!(Classifier::Classic.matches_retryable(&text));
    }
}

/// Computes the retry hint of the bytes (the first 9 bytes give the clock:
/// a flag and a big-endian `u64`) every way and panics when they disagree,
/// or on an arithmetic overflow (a debug build checks them).
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_hint(b"\x01\x00\x00\x00\x00\x00\x00\x00\x05x-ratelimit-reset: 99999999999999999999");
/// ```
pub fn fuzz_hint(bytes: &[u8]) {
    let mut r = Reader { data: bytes };
    let now = match r.byte() % 2 {
        0 => None,
        _ => Some(r.u64()),
    };
    let rest = r.data;
    let text = String::from_utf8_lossy(rest);
    let hint = classify::retry_hint_ms_bytes(rest, now);
    assert_eq!(
        hint,
        classify::retry_hint_ms(&text, now),
        "bytes vs lossy string"
    );
    assert_eq!(
        classify::retry_hint_ms(&text.to_ascii_uppercase(), now),
        hint,
        "upper case"
    );
    assert_eq!(
        classify::retry_hint_ms(&text.to_ascii_lowercase(), now),
        hint,
        "lower case"
    );
    if now.is_none() {
        assert_eq!(classify::classify_bytes(rest).hint_ms, hint);
    }
}

/// Reads response headers (spec 13.1) from fuzz bytes and checks the
/// reading's guarantees: no panic, the same answer on bytes and on lossy
/// strings, in any ASCII case of the names, with every pair given again
/// later (only the first occurrence counts), through the owned message,
/// and a machine that reads the headers decides exactly as one given the
/// read fields.
///
/// The bytes: a first byte whose low bit says whether a clock (8 bytes,
/// big-endian) follows, then lines `name:value` split on `\n` (a line
/// without `:` is a name with an empty value).
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_headers(b"\x00retry-after: 5\nx-should-retry:true");
/// autoretry_testkit::fuzzing::fuzz_headers(b"\x01\x00\x00\x01\x9a\x0f\x4f\x4c\x00retry-after:Mon, 21 Sep 2026 14:14:00 GMT");
/// ```
pub fn fuzz_headers(bytes: &[u8]) {
    use autoretry::{read_headers, Headers, MessageBuf};

    let mut r = Reader { data: bytes };
    let now = match r.byte() % 2 {
        0 => None,
        _ => Some(r.u64()),
    };
    let pairs: Vec<(&[u8], &[u8])> = r
        .data
        .split(|&b| b == b'\n')
        .map(|line| match line.iter().position(|&b| b == b':') {
            Some(at) => (&line[..at], &line[at + 1..]),
            None => (line, &[][..]),
        })
        .collect();
    let read = read_headers(pairs.iter().copied(), now);

    let lossy: Vec<(String, String)> = pairs
        .iter()
        .map(|(n, v)| {
            (
                String::from_utf8_lossy(n).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            )
        })
        .collect();
    assert_eq!(
        Headers::from_owned(&lossy).read(now),
        read,
        "bytes vs lossy strings"
    );
    for case in [str::to_ascii_uppercase, str::to_ascii_lowercase] {
        let cased: Vec<(String, String)> =
            lossy.iter().map(|(n, v)| (case(n), v.clone())).collect();
        assert_eq!(
            Headers::from_owned(&cased).read(now),
            read,
            "ASCII case of the names"
        );
    }
    let mut again = lossy.clone();
    again.extend(
        lossy
            .iter()
            .map(|(n, v)| (n.to_ascii_uppercase(), format!("0{v}"))),
    );
    assert_eq!(
        Headers::from_owned(&again).read(now),
        read,
        "a later occurrence was read"
    );
    if now.is_some() {
        assert_eq!(
            Headers::from_owned(&lossy).read(None).should_retry,
            read.should_retry,
            "the clock changed shouldRetry"
        );
    }

    // The machine: headers in the message, or the read fields given (a
    // plain retry, and a usage-limit hand-off).
    let settings = RetrySettings::MODERN;
    let host = HostOptions::default().with_credential_store(true);
    let decide = |message: &MessageBuf| {
        let mut machine = Machine::new(settings, host);
        let input = Input::AgentEnd {
            message: message.as_message(),
            now_ms: now,
        };
        let outputs: Vec<String> = machine
            .handle(input)
            .map(|out| out.iter().map(|o| format!("{o:?}")).collect())
            .unwrap_or_default();
        (outputs, machine.state())
    };
    for text in ["503 Service Unavailable", "429 usage_limit_reached"] {
        let with_headers = MessageBuf::error(text).with_headers(lossy.iter().cloned());
        let mut given = MessageBuf::error(text);
        given.should_retry = read.should_retry;
        given.retry_after_ms = read.retry_after_ms;
        assert_eq!(
            decide(&with_headers),
            decide(&given),
            "the machine's reading"
        );
    }
}

/// Decodes the bytes as a `retry` settings group (spec §4, §10.1) both
/// ways the crate offers, compares them with an independent reading of §4
/// and §10.1 on the parsed JSON value, and checks that accepted settings round-trip and that
/// the machine takes them without outputs.
///
/// ```
/// autoretry_testkit::fuzzing::fuzz_settings_json(br#"{"maxRetries":5,"baseDelayMs":18446744073709551615}"#);
/// autoretry_testkit::fuzzing::fuzz_settings_json(br#"{"maxRetries":-0}"#);
/// autoretry_testkit::fuzzing::fuzz_settings_json(br#"{"profile":"modern","jitterPct":100,"classifier":"classic"}"#);
/// autoretry_testkit::fuzzing::fuzz_settings_json(br#"{"jitterPct":101}"#);
/// ```
pub fn fuzz_settings_json(bytes: &[u8]) {
    use autoretry::wire::{json::settings_from_json, SettingsGroup};
    use serde_json::Value;

    let direct = serde_json::from_slice::<SettingsGroup>(bytes).map(|g| g.0);
    let Ok(value) = serde_json::from_slice::<Value>(bytes) else {
        assert!(direct.is_err(), "accepted text that is not JSON");
        return;
    };
    let via_value = settings_from_json(&value);
    let expected = settings_by_the_spec(&value);
    assert_eq!(via_value.as_ref().ok(), expected.as_ref(), "{value}");
    if let Ok(settings) = direct {
        // The direct reading also refuses duplicate keys, which a Value
        // cannot show; anything it accepts is accepted via the Value too.
        assert_eq!(Some(settings), expected, "{value}");
        let json = serde_json::to_string(&SettingsGroup(settings)).expect("serializes");
        let SettingsGroup(again) = serde_json::from_str(&json).expect("round trip");
        assert_eq!(again, settings);
        let mut m = Machine::default();
        let out = m
            .handle(Input::Settings(settings))
            .expect("settings are accepted");
        assert!(out.is_empty());
        assert_eq!(m.settings(), settings);
    }
    if let Err(e) = &via_value {
        // The path names the key the error is about (a key of the group,
        // or `retry` for the group as a whole), and the message is the
        // path and the detail.
        let key = e.path().strip_prefix("retry.");
        assert!(
            e.path() == "retry" || key.is_some_and(|k| value.get(k).is_some()),
            "the error names the key: {e}"
        );
        assert_eq!(e.to_string(), format!("{}: {}", e.path(), e.detail()));
    }
}

/// Spec §4 and §10.1 read on a JSON value, independently of `wire`: the
/// group's `profile` (`classic` when absent) picks the column of the
/// table of §10.1 that gives the missing keys; every key is strict.
fn settings_by_the_spec(value: &serde_json::Value) -> Option<RetrySettings> {
    let obj = value.as_object()?;
    let classic = RetrySettings {
        profile: Profile::Classic,
        enabled: true,
        max_retries: 3,
        base_delay_ms: 2000,
        max_delay_ms: 0,
        backoff_cap_ms: 0,
        jitter_pct: JitterPct::new(0)?,
        honor_hints: false,
        classifier: Classifier::Classic,
        model_fallback: false,
        max_usage_wait_ms: 0,
        max_total_delay_ms: 0,
        first_event_timeout_ms: 0,
        idle_timeout_ms: 0,
        retry_empty: false,
    };
    let modern = RetrySettings {
        profile: Profile::Modern,
        enabled: true,
        max_retries: 10,
        base_delay_ms: 500,
        max_delay_ms: 300_000,
        backoff_cap_ms: 8000,
        jitter_pct: JitterPct::new(25)?,
        honor_hints: true,
        classifier: Classifier::Extended,
        model_fallback: false,
        max_usage_wait_ms: 0,
        max_total_delay_ms: 0,
        first_event_timeout_ms: 300_000,
        idle_timeout_ms: 300_000,
        retry_empty: true,
    };
    // The columns of the table of §10.1, picked by the group's profile.
    let mut s = match obj.get("profile") {
        None => classic,
        Some(v) => match v.as_str()? {
            "classic" => classic,
            "modern" => modern,
            _ => return None,
        },
    };
    for (key, v) in obj {
        match key.as_str() {
            "profile" => {}
            "enabled" => s.enabled = v.as_bool()?,
            "maxRetries" => s.max_retries = u32::try_from(v.as_u64()?).ok()?,
            "baseDelayMs" => s.base_delay_ms = v.as_u64()?,
            "maxDelayMs" => s.max_delay_ms = v.as_u64()?,
            "backoffCapMs" => s.backoff_cap_ms = v.as_u64()?,
            "jitterPct" => s.jitter_pct = JitterPct::new(u8::try_from(v.as_u64()?).ok()?)?,
            "honorHints" => s.honor_hints = v.as_bool()?,
            "modelFallback" => s.model_fallback = v.as_bool()?,
            "maxUsageWaitMs" => s.max_usage_wait_ms = v.as_u64()?,
            "maxTotalDelayMs" => s.max_total_delay_ms = v.as_u64()?,
            "firstEventTimeoutMs" => s.first_event_timeout_ms = v.as_u64()?,
            "idleTimeoutMs" => s.idle_timeout_ms = v.as_u64()?,
            "retryEmpty" => s.retry_empty = v.as_bool()?,
            "classifier" => {
                s.classifier = match v.as_str()? {
                    "classic" => Classifier::Classic,
                    "extended" => Classifier::Extended,
                    "curated" => Classifier::Curated,
                    _ => return None,
                }
            }
            _ => return None,
        }
    }
    Some(s)
}

/// Handles the bytes (lossy-decoded) as one RPC line (spec §7) on a machine
/// in one of four states (idle, backoff, running, awaiting a usage-limit
/// answer; the first byte's low two bits pick it; with its bit 2 set,
/// under `modelFallback` with `maxRetries: 0`, so the first failure asks
/// for a model (spec §11.3) and states 1 and 3 await that answer instead)
/// and checks the response: valid JSON with the key order of §7, the `id`
/// echoed, nothing changed when it fails, and the outputs checked by a
/// [`Monitor`].
///
/// ```
/// // State 1 (a backoff is pending), then the line.
/// autoretry_testkit::fuzzing::fuzz_rpc_line(b"\x01{\"type\":\"abort_retry\",\"id\":\"r2\"}");
/// // State 5 (a model-switch answer is awaited), then the line.
/// autoretry_testkit::fuzzing::fuzz_rpc_line(b"\x05{\"type\":\"abort_retry\"}");
/// ```
pub fn fuzz_rpc_line(bytes: &[u8]) {
    use autoretry::wire::rpc::handle_line;
    use serde_json::Value;

    let (state, line) = bytes.split_first().map_or((0, &[][..]), |(s, l)| (*s, l));
    let line = String::from_utf8_lossy(line);
    let settings = match state & 4 {
        0 => RetrySettings::DEFAULT,
        _ => RetrySettings::DEFAULT
            .with_model_fallback(true)
            .with_max_retries(0),
    };
    let mut mon = Monitor::new(
        settings,
        HostOptions {
            context_window: 0,
            credential_store: state % 4 == 3,
            ..HostOptions::DEFAULT
        },
    );
    let text = "usage limit 503";
    if state % 4 != 0 {
        let _ = mon.step(Input::AgentEnd {
            message: AssistantMessage::error(text),
            now_ms: None,
        });
    }
    if state % 4 == 2 {
        if mon.machine().awaits_model_switch_answer() {
            let _ = mon.step(Input::ModelSwitched {
                switched: true,
                error_message: text,
            });
        }
        let timer = mon.machine().pending_timer().expect("backoff");
        let _ = mon.step(Input::TimerFired { timer });
    }
    let before = mon.machine().clone();
    let mut machine = before.clone();
    let (response, outputs) = handle_line(&mut machine, &line);
    let json = response.to_json_line();
    let parsed: Value = serde_json::from_str(&json).expect("the response is JSON");
    let obj = parsed.as_object().expect("the response is an object");
    let request: Option<Value> = serde_json::from_str(&line).ok();
    let id = request.as_ref().and_then(|r| r.get("id"));
    if response.id.is_none() {
        assert!(
            json.starts_with("{\"type\":\"response\",\"command\":"),
            "{json}"
        );
    }
    if response.id.is_some() {
        let echoed = response.id.as_ref().map(|echoed| {
            serde_json::from_str::<Value>(&echoed.to_json()).expect("the id is JSON")
        });
        assert_eq!(echoed.as_ref(), id, "the id is the request's");
        assert!(json.starts_with("{\"id\":"), "the id comes first: {json}");
    }
    assert_eq!(obj.get("type"), Some(&Value::from("response")));
    assert_eq!(
        obj.get("success").and_then(Value::as_bool),
        Some(response.is_success())
    );
    if !response.is_success() {
        assert!(outputs.is_empty());
        assert_eq!(machine, before, "a failed command changed the machine");
        assert!(obj.get("error").is_some_and(Value::is_string));
        return;
    }
    let request = request.expect("a successful command was JSON");
    let input = match request.get("type").and_then(Value::as_str) {
        Some("set_auto_retry") => Input::SetAutoRetry {
            enabled: request["enabled"].as_bool().expect("enabled was a boolean"),
        },
        Some("abort_retry") => Input::AbortRetry,
        Some("abort") => Input::Abort,
        Some("set_retry_settings") => Input::Settings(
            settings_by_the_spec(&request["settings"]).expect("the settings were valid"),
        ),
        Some("get_retry_state") => {
            assert_eq!(machine, before);
            let data = &obj["data"];
            assert_eq!(
                data["retryAttempt"].as_u64(),
                Some(u64::from(before.retry_attempt()))
            );
            assert_eq!(data["isRetrying"].as_bool(), Some(before.is_retrying()));
            return;
        }
        other => panic!("success for an unknown command {other:?}"),
    };
    let expected = mon.step(input).expect("accepted");
    assert_eq!(outputs, expected);
    assert_eq!(&machine, mon.machine());
}

/// A fuzz target for [`replay_inputs`]: its directory name and the function
/// it calls.
pub type Target = (&'static str, fn(&[u8]));

/// Runs every file of `root/<target>/` through its target's function (the
/// fuzz seeds of `fuzz/corpus/`, the minimized findings of
/// `tests/fuzz_regressions/`) and returns how many ran; a missing directory
/// counts none. Panics, naming the target and the file, when one fails.
///
/// ```
/// use autoretry_testkit::fuzzing::{fuzz_hint, replay_inputs};
/// let none = std::env::temp_dir().join("no such fuzz corpus");
/// assert_eq!(replay_inputs(&none, &[("hint", fuzz_hint)]), 0);
/// ```
pub fn replay_inputs(root: &std::path::Path, targets: &[Target]) -> usize {
    let mut count = 0;
    for &(target, run) in targets {
        let Ok(entries) = std::fs::read_dir(root.join(target)) else {
            continue;
        };
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let data = std::fs::read(&path).expect("a readable file");
            if std::panic::catch_unwind(|| run(&data)).is_err() {
                panic!("{target}: {} fails", path.display());
            }
            count += 1;
        }
    }
    count
}
