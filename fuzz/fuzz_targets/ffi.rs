#![no_main]
//! The C ABI (`autoretry_ffi`) under arbitrary call sequences: every
//! exported function with arbitrary handles (live, freed, out of range),
//! settings codes, texts, timer ids, and buffers that are valid (a scratch
//! buffer, the exchange buffers) or that the module must refuse before
//! touching them (null with a length, wrapping, running past an exchange
//! buffer, text and output overlapping). Spec §11 too: every input as an
//! `AutoretryInput` through `autoretry_handle_json` (a message's `partial`,
//! the settings keys of §11.1, `model_switched`, a budget handle), the
//! answer `autoretry_model_switched`, spec §12 through the same struct (the
//! stream inputs with their `now_ms`, the §12.1 keys, a message's `empty`;
//! `watch` timers fired as backoff timers are), and the budget table's entry points
//! (`autoretry_budget_new`, `_tokens`, `_free`), each budget shadowed by a
//! `RetryBudget` that the shadow machines are handed as the module's are.
//!
//! Checked on every call: no panic; a failed call changes nothing (every
//! machine's state and pending timer are as before); a call on one machine
//! changes no other, nor any budget; and every answer is the library's
//! own: a shadow `Machine` per handle is fed the same input (with a copy of
//! the shadow budget the input names, which replaces it only when the
//! module's call succeeds), and the module's JSON must be serde_json's of
//! the shadow's outputs (timer ids as the module shows them), its refusals
//! the shadow's, every budget's tokens the shadow's.
//!
//! Rules too: a small blob (or a prefix of it, which the module must refuse
//! by code) is lent to a machine or taken back, and its shadow applies the
//! same rules (`Rules::apply_input`) to every input. The rules match texts
//! the target sends, so verdicts change outcomes; they are small because
//! the module validates a blob on every load, and validating the example
//! blob (23 KB) took most of the time: checking blobs themselves is the
//! `rules_from_bytes` target's job.

use autoretry::classify::Classifier;
use autoretry::rules::Rules;
use autoretry::{
    AssistantMessage, HostOptions, Input, JitterPct, Machine, Output, Partial, Profile,
    RetryBudget, RetrySettings, StopReason, TimerId, Usage,
};
use autoretry_ffi::*;

const SCRATCH: usize = 8192;
/// Loads per input; a load past them takes the rules back instead. Each
/// load validates the whole blob, which took most of an execution's time
/// when inputs held dozens.
const MAX_LOADS: u32 = 3;
/// The rules lent to machines: `never` and `retry` patterns that match
/// some of [`TEXTS`] (an overload and a usage limit never retried, a
/// failed fetch and a rate limit retried).
const RULES_JSON: &str =
    r#"{"never": ["overloaded", "usage_limit"], "retry": ["fetch failed", "^rate limit"]}"#;

/// [`RULES_JSON`] compiled to a sparse blob once per process, and the same
/// rules loaded from it for the shadows. The blob is leaked, so it is never
/// written or freed and may be lent for the whole run.
fn rules() -> &'static (&'static [u8], Rules<'static>) {
    static RULES: std::sync::OnceLock<(&'static [u8], Rules<'static>)> = std::sync::OnceLock::new();
    RULES.get_or_init(|| {
        let [sparse, _] = autoretry_testkit::rules_fuzz::blobs_of(RULES_JSON);
        let blob: &'static [u8] = Vec::leak(sparse);
        (blob, Rules::from_bytes(blob).expect("the target's blob"))
    })
}
/// The low bits of a timer id the module shows that are the machine's own.
const TIMER_BITS: u32 = 40;

/// The fuzzer's bytes, read front to back; zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn u8(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }
    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.u8(), self.u8()])
    }
    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    /// A u64 biased to small values, 0 and u64::MAX.
    fn u64(&mut self) -> u64 {
        match self.u8() % 4 {
            0 => u64::from(self.u8()),
            1 => u64::from(self.u16()) * 100,
            2 => u64::MAX,
            _ => u64::from(self.u32()) << 32 | u64::from(self.u32()),
        }
    }
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A machine made through the ABI, with its shadow.
struct Live {
    handle: i32,
    shadow: Machine,
    /// The text the shadow's usage-limit answer needs (the slot keeps its own).
    kept: String,
    /// The rules lent to the machine, which the shadow applies.
    rules: Option<Rules<'static>>,
}

/// A budget made through the ABI, with its shadow.
struct Budget {
    handle: i32,
    shadow: RetryBudget,
}

/// Every machine's state and pending timer, and every budget's tokens.
#[derive(Debug, PartialEq)]
struct State {
    machines: Vec<(i32, Vec<u8>, u64)>,
    budgets: Vec<(i32, i32)>,
}

/// What a failed call must leave as it was.
fn snapshot(live: &[Live], budgets: &[Budget]) -> State {
    let machines = live
        .iter()
        .map(|m| {
            let mut out = [0u8; 128];
            // SAFETY: `out` is live for its length.
            let n = unsafe { autoretry_state(m.handle, out.as_mut_ptr(), out.len() as u32) };
            assert!(n > 0, "state of a live machine: {n}");
            (
                m.handle,
                out[..n as usize].to_vec(),
                autoretry_pending_timer(m.handle),
            )
        })
        .collect();
    let budgets = budgets
        .iter()
        .map(|b| (b.handle, autoretry_budget_tokens(b.handle)))
        .collect();
    State { machines, budgets }
}

/// The handle's generation, as the module puts it into timer ids.
fn generation(handle: i32) -> u64 {
    (handle as u64) >> 8
}

/// A buffer for the call: valid memory, or one the module refuses untouched.
#[derive(Clone, Copy, Debug)]
enum Buffer {
    /// `scratch[at..at + len]`.
    Scratch(usize, usize),
    /// The start of an exchange buffer (text or output), within it.
    Exchange(bool, usize),
    /// Refused before use: null with a length, a wrapping range, or one
    /// running past the end of an exchange buffer.
    Null(usize),
    Wrapping(usize),
    PastExchange(bool, usize),
}

impl Buffer {
    fn pick(b: &mut Bytes<'_>, max: usize) -> Self {
        let len = |b: &mut Bytes<'_>| usize::from(b.u16()) % (max + 1);
        match b.u8() % 16 {
            0 => Buffer::Null(len(b).max(1)),
            1 => Buffer::Wrapping(len(b).max(2)),
            2 => Buffer::PastExchange(b.u8() % 2 == 0, usize::from(b.u8()) + 1),
            3..=5 => Buffer::Exchange(b.u8() % 2 == 0, len(b)),
            6..=7 => {
                let n = usize::from(b.u8());
                Buffer::Scratch(usize::from(b.u16()) % (SCRATCH - n), n)
            }
            _ => {
                let n = len(b).min(SCRATCH);
                Buffer::Scratch(usize::from(b.u16()) % (SCRATCH - n + 1), n)
            }
        }
    }

    /// The pointer and length to pass, and whether the module must refuse
    /// it (before any overlap check).
    fn raw(self, scratch: *mut u8) -> (*mut u8, usize, bool) {
        let exchange = |text: bool| {
            if text {
                (autoretry_text_buffer(), MAX_TEXT)
            } else {
                (autoretry_out_buffer(), OUT_BUFFER_LEN)
            }
        };
        match self {
            Buffer::Scratch(at, len) => (scratch.wrapping_add(at), len, false),
            Buffer::Exchange(text, len) => {
                let (p, n) = exchange(text);
                (p, len.min(n), false)
            }
            Buffer::Null(len) => (std::ptr::null_mut(), len, true),
            Buffer::Wrapping(len) => (
                std::ptr::without_provenance_mut(usize::MAX - len / 2),
                len,
                true,
            ),
            Buffer::PastExchange(text, over) => {
                let (p, n) = exchange(text);
                (p.wrapping_add(n - 1), over + 1, true)
            }
        }
    }
}

fn stop(code: u32) -> Option<StopReason> {
    Some(match code {
        STOP_STOP => StopReason::Stop,
        STOP_LENGTH => StopReason::Length,
        STOP_TOOL_USE => StopReason::ToolUse,
        STOP_ERROR => StopReason::Error,
        STOP_ABORTED => StopReason::Aborted,
        _ => return None,
    })
}

/// The settings of `new_ex`/`settings_ex`'s scalars, `None` for those the
/// module must refuse (codes: the C libraries' classic, extended, curated).
#[allow(clippy::too_many_arguments)]
fn settings(
    profile: u32,
    enabled: u32,
    max_retries: u32,
    base: u64,
    max_delay: u64,
    cap: u64,
    jitter: u32,
    hints: u32,
    classifier: u32,
) -> Option<RetrySettings> {
    let profile = [Profile::Classic, Profile::Modern]
        .get(profile as usize)
        .copied()?;
    let classifier = [
        Classifier::Classic,
        Classifier::Extended,
        Classifier::Curated,
    ]
    .get(classifier as usize)
    .copied()?;
    let jitter = JitterPct::new(u8::try_from(jitter).ok()?)?;
    Some(
        RetrySettings::DEFAULT
            .with_profile(profile)
            .with_enabled(enabled != 0)
            .with_max_retries(max_retries)
            .with_base_delay_ms(base)
            .with_max_delay_ms(max_delay)
            .with_backoff_cap_ms(cap)
            .with_jitter_pct(jitter)
            .with_honor_hints(hints != 0)
            .with_classifier(classifier),
    )
}

/// The timer id the module shows for a machine's own id `own`.
fn host_timer(generation: u64, own: u64) -> u64 {
    generation << TIMER_BITS | (own & ((1 << TIMER_BITS) - 1))
}

/// A budget handle to pass: none (0), a live or freed one, or any number.
fn pick_budget(b: &mut Bytes<'_>, budgets: &[Budget], seen: &[i32]) -> i32 {
    match b.u8() % 8 {
        0 | 1 => 0,
        2 => b.u32() as i32,
        k => budgets
            .iter()
            .map(|x| x.handle)
            .chain(seen.iter().copied())
            .nth(usize::from(k) % (budgets.len() + seen.len()).max(1))
            .unwrap_or(0),
    }
}

/// The `partial` of a `PARTIAL_*` code, `None` for those the module must
/// refuse.
fn partial(code: u32) -> Option<Partial> {
    Some(match code {
        PARTIAL_NONE => Partial::None,
        PARTIAL_TEXT => Partial::Text,
        PARTIAL_TOOLS => Partial::Tools,
        _ => return None,
    })
}

const TEXTS: [&str; 8] = [
    "529 overloaded_error",
    "usage_limit_reached",
    "rate limit, retry after 3s",
    "prompt is too long: 250000 tokens > 200000 maximum",
    "fetch failed",
    "Retry-After: 1e3",
    "",
    "internal server error \u{2028} \"x\"",
];

fn run(data: &[u8]) {
    let mut b = Bytes(data);
    let mut scratch = vec![0u8; SCRATCH];
    let sp = scratch.as_mut_ptr();
    let mut live: Vec<Live> = Vec::new();
    let mut budgets: Vec<Budget> = Vec::new();
    // Handles seen, freed ones included (machines', budgets'), and the
    // timer ids seen.
    let mut handles: Vec<i32> = Vec::new();
    let mut budget_handles: Vec<i32> = Vec::new();
    let mut timers: Vec<u64> = Vec::new();
    let mut steps = 0;
    let mut loads = 0;
    let (blob_full, shadow_rules) = rules();
    while !b.is_empty() && steps < 64 {
        steps += 1;
        // 0-17: the entry points of sections 1-10 and the rules; 18-20 the
        // budgets; 21-23 `autoretry_handle_json`; 24 `model_switched`.
        let op = b.u8() % 25;
        let handle = match b.u8() % 8 {
            0 => b.u32() as i32,
            1 => -1,
            k => {
                let pool: Vec<i32> = live
                    .iter()
                    .map(|m| m.handle)
                    .chain(handles.iter().copied())
                    .collect();
                pool.get(usize::from(k) % pool.len().max(1))
                    .copied()
                    .unwrap_or(0)
            }
        };
        let before = snapshot(&live, &budgets);
        let target = live.iter().position(|m| m.handle == handle);
        if op < 2 {
            // new / new_ex
            let args = (
                b.u8() % 3,
                b.u8(),
                b.u8() % 12,
                b.u64(),
                b.u64(),
                b.u64(),
                b.u8() % 110,
                b.u8() % 2,
                b.u8() % 3,
            );
            let (context, store, seed) = (b.u64(), b.u8() % 2, b.u64());
            let (want, h) = if op == 0 {
                let s = RetrySettings::DEFAULT
                    .with_enabled(args.1 != 0)
                    .with_max_retries(u32::from(args.2))
                    .with_base_delay_ms(args.3);
                (
                    Some(s),
                    autoretry_new(
                        u32::from(args.1),
                        u32::from(args.2),
                        args.3,
                        context,
                        u32::from(store),
                    ),
                )
            } else {
                let s = settings(
                    u32::from(args.0),
                    u32::from(args.1),
                    u32::from(args.2),
                    args.3,
                    args.4,
                    args.5,
                    u32::from(args.6),
                    u32::from(args.7),
                    u32::from(args.8),
                );
                let h = autoretry_new_ex(
                    u32::from(args.0),
                    u32::from(args.1),
                    u32::from(args.2),
                    args.3,
                    args.4,
                    args.5,
                    u32::from(args.6),
                    u32::from(args.7),
                    u32::from(args.8),
                    context,
                    u32::from(store),
                    seed,
                );
                (s, h)
            };
            let seed = if op == 0 { 0 } else { seed };
            match want {
                None => assert_eq!(h, ERR_SETTINGS),
                Some(_) if live.len() == POOL_SIZE => assert_eq!(h, ERR_POOL_FULL),
                Some(s) => {
                    assert!(h >= 0, "new: {h}");
                    assert!(!handles.contains(&h), "handle {h} given twice");
                    let host = HostOptions::DEFAULT
                        .with_context_window(context)
                        .with_credential_store(store != 0)
                        .with_seed(seed);
                    live.push(Live {
                        handle: h,
                        shadow: Machine::new(s, host),
                        kept: String::new(),
                        rules: None,
                    });
                    handles.push(h);
                }
            }
            if h < 0 {
                assert_eq!(snapshot(&live, &budgets), before, "a failed new");
            }
            continue;
        }
        if op == 2 {
            let got = autoretry_free(handle);
            match target {
                Some(i) => {
                    assert_eq!(got, 0);
                    live.remove(i);
                }
                None => assert_eq!(got, ERR_HANDLE),
            }
            let after = snapshot(&live, &budgets);
            let kept: Vec<_> = before
                .machines
                .into_iter()
                .filter(|s| s.0 != handle)
                .collect();
            assert_eq!(after.machines, kept, "free changes no other machine");
            assert_eq!(after.budgets, before.budgets, "free changes no budget");
            continue;
        }
        if (18..=20).contains(&op) {
            let bh = pick_budget(&mut b, &budgets, &budget_handles);
            let at = budgets.iter().position(|x| x.handle == bh);
            match op {
                18 => {
                    let max = u32::from(b.u16()) % 1100;
                    let ratio = b.u32() % 1_100_000;
                    let has = b.u8() % 2;
                    let tokens = b.u32() % (max.min(1000) * 1000 + 1001);
                    let got = autoretry_budget_new(max, ratio, u32::from(has), tokens);
                    let want = RetryBudget::new(max, ratio).and_then(|x| match has {
                        0 => Ok(x),
                        _ => x.with_tokens_milli(tokens),
                    });
                    match want {
                        Err(_) => {
                            assert_eq!(got, ERR_ARG, "budget_new({max}, {ratio}, {has}, {tokens})")
                        }
                        Ok(_) if budgets.len() == BUDGET_POOL_SIZE => {
                            assert_eq!(got, ERR_POOL_FULL)
                        }
                        Ok(shadow) => {
                            assert!(got > 0, "budget_new: {got}");
                            assert!(!budget_handles.contains(&got), "budget {got} given twice");
                            budgets.push(Budget {
                                handle: got,
                                shadow,
                            });
                            budget_handles.push(got);
                        }
                    }
                    if got < 0 {
                        assert_eq!(snapshot(&live, &budgets), before, "a failed budget_new");
                    }
                }
                19 => {
                    let got = autoretry_budget_tokens(bh);
                    let want = at.map_or(ERR_BUDGET, |i| budgets[i].shadow.tokens_milli() as i32);
                    assert_eq!(got, want, "budget_tokens({bh})");
                }
                _ => {
                    let got = autoretry_budget_free(bh);
                    match at {
                        Some(i) => {
                            assert_eq!(got, 0);
                            budgets.remove(i);
                        }
                        None => assert_eq!(got, ERR_BUDGET),
                    }
                }
            }
            // No machine changes, nor any other budget.
            let after = snapshot(&live, &budgets);
            assert_eq!(
                after.machines, before.machines,
                "a budget call changed a machine"
            );
            for (h, tokens) in &after.budgets {
                if let Some(old) = before.budgets.iter().find(|x| x.0 == *h) {
                    assert_eq!(tokens, &old.1, "a budget call changed budget {h}");
                }
            }
            continue;
        }
        if op >= 16 && op < 18 {
            // Lend the blob, or a prefix of it, or take rules back.
            let (got, lent) = if op == 16 && loads < MAX_LOADS {
                loads += 1;
                let len = match b.u8() % 4 {
                    0 => usize::from(b.u16()) % blob_full.len(),
                    _ => blob_full.len(),
                };
                let blob = &blob_full[..len];
                // SAFETY: leaked, so live for the whole run and never written.
                let got = unsafe { autoretry_rules_load(handle, blob.as_ptr(), len as u32) };
                let want = match (len, target) {
                    (0, _) => ERR_RULES_FOREIGN,
                    (n, _) if n < blob_full.len() => ERR_RULES_LENGTH,
                    (_, None) => ERR_HANDLE,
                    (_, Some(_)) => 0,
                };
                assert_eq!(got, want, "rules_load of {len} bytes");
                (got, Some(shadow_rules.clone()))
            } else {
                let got = autoretry_rules_clear(handle);
                assert_eq!(got, if target.is_some() { 0 } else { ERR_HANDLE });
                (got, None)
            };
            if got == 0 {
                if let Some(i) = target {
                    live[i].rules = lent;
                }
            }
            assert_eq!(snapshot(&live, &budgets), before, "rules change no state");
            continue;
        }
        if op == 3 {
            let t = autoretry_pending_timer(handle);
            match target {
                Some(i) => {
                    let want = live[i]
                        .shadow
                        .pending_timer()
                        .map_or(0, |t| generation(handle) << TIMER_BITS | t.get());
                    assert_eq!(t, want);
                }
                None => assert_eq!(t, 0),
            }
            continue;
        }
        // An input with outputs.
        let out = Buffer::pick(&mut b, OUT_BUFFER_LEN);
        let (o, cap, out_refused) = out.raw(sp);
        let cap = cap as u32;
        let stop_code = u32::from(b.u8() % 6);
        let text_choice = b.u8();
        let text_buffer = Buffer::pick(&mut b, MAX_TEXT + 2);
        let verdict = i32::from(b.u8() % 4);
        let (has_usage, usage) = (
            b.u8() % 2,
            Usage::new(b.u64(), b.u64()).with_cache_write(b.u64()),
        );
        let (has_after, after) = (b.u8() % 2, b.u64());
        let (has_now, now) = (b.u8() % 2, b.u64());
        let timer = match b.u8() % 4 {
            0 => b.u64(),
            1 => timers
                .get(usize::from(b.u8()) % timers.len().max(1))
                .copied()
                .unwrap_or(1),
            _ => autoretry_pending_timer(handle),
        };
        let flag = u32::from(b.u8() % 3);
        let sargs = (
            b.u8() % 3,
            b.u8(),
            b.u8() % 12,
            b.u64(),
            b.u64(),
            b.u64(),
            b.u8() % 110,
            b.u8() % 2,
            b.u8() % 3,
        );
        // The input struct's own fields (`autoretry_handle_json`), read for
        // its ops alone, so the other ops' bytes mean what they did: a kind
        // (0 and 12 refused; 10 and 11 the stream inputs of §12.2, refused
        // without `has_now`), a `partial` code (3 refused), a budget handle,
        // the settings keys of §11.1 and §12.1 (limits of up to 65 s, so
        // that watches fire and stalls happen), and a message's `empty`.
        let json_op = (21..=23).contains(&op);
        let (kind, partial_code, budget, s11, s12, empty) = if json_op {
            (
                u32::from(b.u8() % 13),
                u32::from(b.u8() % 4),
                pick_budget(&mut b, &budgets, &budget_handles),
                (b.u8() % 2, b.u64(), b.u64()),
                (u64::from(b.u16()), u64::from(b.u16()), b.u8() % 2),
                b.u8() % 2 != 0,
            )
        } else {
            (0, PARTIAL_NONE, 0, (0, 0, 0), (0, 0, 0), false)
        };
        // The text: one of TEXTS, or raw bytes (maybe not UTF-8), written
        // where the buffer says when it is valid memory.
        let (tp, tlen, text_refused) = text_buffer.raw(sp);
        let mut tlen = tlen as i32;
        let text_bytes: Vec<u8> = if text_choice % 2 == 0 {
            TEXTS[usize::from(text_choice / 2) % TEXTS.len()]
                .as_bytes()
                .to_vec()
        } else {
            (0..tlen.max(0))
                .map(|k| (k as u8).wrapping_mul(text_choice))
                .collect()
        };
        match text_choice % 7 {
            0 => tlen = -1,
            1 => tlen = -2 - i32::from(text_choice),
            _ if !text_refused => {
                let n = (tlen as usize).min(text_bytes.len());
                tlen = n as i32;
                // SAFETY: `tp` is valid for `tlen` bytes (scratch or an
                // exchange buffer, not refused).
                unsafe { std::ptr::copy_nonoverlapping(text_bytes.as_ptr(), tp, n) };
            }
            _ => {}
        }
        let text_in: Option<&[u8]> = match tlen {
            -1 => None,
            n if n < 0 || n as usize > MAX_TEXT || text_refused => None,
            // SAFETY: written just above, valid for `n` bytes.
            n => Some(unsafe { std::slice::from_raw_parts(tp, n as usize) }),
        };
        let owned_text: Option<Vec<u8>> = text_in.map(<[u8]>::to_vec);
        let is_message =
            matches!(op, 4..=7) || (json_op && matches!(kind, INPUT_MESSAGE_END | INPUT_AGENT_END));
        // What the module must answer before it looks at the machine.
        let text_len_bad = tlen < -1 || tlen as i64 > MAX_TEXT as i64;
        let text_overlaps = {
            let (t, n, o2, c) = (tp as usize, tlen.max(0) as usize, o as usize, cap as usize);
            n > 0 && c > 0 && t < o2.wrapping_add(c) && o2 < t.wrapping_add(n)
        };
        let code = |b: &Buffer| match b {
            Buffer::Null(_) => ERR_ARG,
            _ => ERR_BUFFER,
        };
        let s_ex = settings(
            u32::from(sargs.0),
            u32::from(sargs.1),
            u32::from(sargs.2),
            sargs.3,
            sargs.4,
            sargs.5,
            u32::from(sargs.6),
            u32::from(sargs.7),
            u32::from(sargs.8),
        );
        let s_json = s_ex.map(|s| {
            s.with_model_fallback(s11.0 != 0)
                .with_max_usage_wait_ms(s11.1)
                .with_max_total_delay_ms(s11.2)
                .with_first_event_timeout_ms(s12.0)
                .with_idle_timeout_ms(s12.1)
                .with_retry_empty(s12.2 != 0)
        });
        let stream_kind = json_op && matches!(kind, INPUT_STREAM_START | INPUT_STREAM_EVENT);
        let early: Option<i32> = if is_message {
            let verdict_bad =
                op >= 6 && !(SHOULD_RETRY_ABSENT..=SHOULD_RETRY_YES).contains(&verdict);
            if stop(stop_code).is_none() || verdict_bad || partial(partial_code).is_none() {
                Some(ERR_ARG)
            } else if text_len_bad {
                Some(ERR_TEXT_LEN)
            } else if tlen > 0 && text_refused {
                Some(code(&text_buffer))
            } else if out_refused && cap > 0 {
                Some(code(&out))
            } else if text_overlaps {
                Some(ERR_ARG)
            } else if owned_text
                .as_deref()
                .is_some_and(|t| std::str::from_utf8(t).is_err())
            {
                Some(ERR_UTF8)
            } else {
                None
            }
        } else if json_op && !(INPUT_MESSAGE_END..=INPUT_STREAM_EVENT).contains(&kind)
            || stream_kind && has_now == 0
        {
            Some(ERR_ARG)
        } else if (op == 15 || (json_op && kind == INPUT_SETTINGS)) && s_ex.is_none() {
            Some(ERR_SETTINGS)
        } else if out_refused && cap > 0 {
            Some(code(&out))
        } else {
            None
        };
        let text_str = owned_text
            .as_deref()
            .and_then(|t| std::str::from_utf8(t).ok());
        let message = AssistantMessage {
            stop_reason: stop(stop_code).unwrap_or(StopReason::Stop),
            error_message: text_str,
            usage: (has_usage != 0).then_some(if op >= 6 {
                usage
            } else {
                Usage::new(usage.input, usage.cache_read)
            }),
            should_retry: if op >= 6 {
                [None, Some(false), Some(true)]
                    .get(verdict as usize)
                    .copied()
                    .flatten()
            } else {
                None
            },
            retry_after_ms: (op >= 6 && has_after != 0).then_some(after),
            // Only the input struct carries a partial turn.
            partial: partial(partial_code).unwrap_or(Partial::None),
            // Only the input struct carries an empty answer.
            empty: json_op && empty,
            headers: autoretry::Headers::NONE,
        };
        let (tp, o) = (tp.cast_const(), o);
        // SAFETY: every buffer is valid memory of its length, or one the
        // module refuses before touching it (checked by `early`).
        let got = unsafe {
            match op {
                4 => autoretry_message_end(
                    handle,
                    stop_code,
                    tp,
                    tlen,
                    u32::from(has_usage),
                    usage.input,
                    usage.cache_read,
                    o,
                    cap,
                ),
                5 => autoretry_agent_end(
                    handle,
                    stop_code,
                    tp,
                    tlen,
                    u32::from(has_usage),
                    usage.input,
                    usage.cache_read,
                    u32::from(has_now),
                    now,
                    o,
                    cap,
                ),
                6 => autoretry_message_end_ex(
                    handle,
                    stop_code,
                    tp,
                    tlen,
                    u32::from(has_usage),
                    usage.input,
                    usage.cache_read,
                    usage.cache_write,
                    verdict,
                    u32::from(has_after),
                    after,
                    o,
                    cap,
                ),
                7 => autoretry_agent_end_ex(
                    handle,
                    stop_code,
                    tp,
                    tlen,
                    u32::from(has_usage),
                    usage.input,
                    usage.cache_read,
                    usage.cache_write,
                    verdict,
                    u32::from(has_after),
                    after,
                    u32::from(has_now),
                    now,
                    o,
                    cap,
                ),
                8 | 9 => autoretry_timer_fired(handle, timer, o, cap),
                10 => autoretry_usage_limit_marked(handle, flag, o, cap),
                11 => autoretry_abort_retry(handle, o, cap),
                12 => autoretry_abort(handle, o, cap),
                13 => autoretry_set_auto_retry(handle, flag, o, cap),
                21..=23 => {
                    let input = AutoretryInput {
                        kind,
                        stop_reason: stop_code,
                        text: tp,
                        text_len: tlen,
                        should_retry: verdict,
                        has_usage: u32::from(has_usage),
                        has_retry_after: u32::from(has_after),
                        has_now: u32::from(has_now),
                        flag,
                        usage_input: usage.input,
                        usage_cache_read: usage.cache_read,
                        usage_cache_write: usage.cache_write,
                        retry_after_ms: after,
                        now_ms: now,
                        timer,
                        settings: AutoretrySettings {
                            profile: u32::from(sargs.0),
                            enabled: u32::from(sargs.1),
                            max_retries: u32::from(sargs.2),
                            jitter_pct: u32::from(sargs.6),
                            base_delay_ms: sargs.3,
                            max_delay_ms: sargs.4,
                            backoff_cap_ms: sargs.5,
                            honor_hints: u32::from(sargs.7),
                            classifier: u32::from(sargs.8),
                            model_fallback: u32::from(s11.0),
                            max_usage_wait_ms: s11.1,
                            max_total_delay_ms: s11.2,
                            first_event_timeout_ms: s12.0,
                            idle_timeout_ms: s12.1,
                            retry_empty: u32::from(s12.2),
                        },
                        partial: partial_code,
                        budget,
                        headers: std::ptr::null(),
                        headers_len: 0,
                        empty: u32::from(empty),
                    };
                    autoretry_handle_json(handle, &input, o, cap)
                }
                24 => autoretry_model_switched(handle, flag, o, cap),
                14 => autoretry_settings(
                    handle,
                    u32::from(sargs.1),
                    u32::from(sargs.2),
                    sargs.3,
                    o,
                    cap,
                ),
                _ => autoretry_settings_ex(
                    handle,
                    u32::from(sargs.0),
                    u32::from(sargs.1),
                    u32::from(sargs.2),
                    sargs.3,
                    sargs.4,
                    sargs.5,
                    u32::from(sargs.6),
                    u32::from(sargs.7),
                    u32::from(sargs.8),
                    o,
                    cap,
                ),
            }
        };
        if let Some(code) = early {
            assert_eq!(got, code, "op {op}: {out:?} {text_buffer:?} {tlen}");
            assert_eq!(
                snapshot(&live, &budgets),
                before,
                "a call refused early changed something"
            );
            continue;
        }
        let Some(i) = target else {
            assert_eq!(got, ERR_HANDLE, "op {op} on handle {handle}");
            assert_eq!(snapshot(&live, &budgets), before);
            continue;
        };
        // The shadow's answer.
        let m = &mut live[i];
        let gen = generation(handle);
        let kept = m.kept.clone();
        // A timer reaches the machine only as its pending one (a backoff's
        // or a watch's); any other is answered `[]` before the budget is
        // looked at.
        let pending = (m.shadow.pending_timer())
            .or(m.shadow.pending_watch())
            .map(|t| t.get());
        let fired = pending
            .filter(|&own| host_timer(gen, own) == timer)
            .map(|own| Input::TimerFired {
                timer: TimerId(own),
            });
        let json = |k: u32| json_op && kind == k;
        let input = match op {
            4 | 6 => Some(Input::MessageEnd { message }),
            5 | 7 => Some(Input::AgentEnd {
                message,
                now_ms: (has_now != 0).then_some(now),
            }),
            _ if json(INPUT_MESSAGE_END) => Some(Input::MessageEnd { message }),
            _ if json(INPUT_AGENT_END) => Some(Input::AgentEnd {
                message,
                now_ms: (has_now != 0).then_some(now),
            }),
            8 | 9 => fired,
            _ if json(INPUT_TIMER_FIRED) => fired,
            10 => Some(Input::UsageLimitMarked {
                switched: flag != 0,
                error_message: &kept,
            }),
            _ if json(INPUT_USAGE_LIMIT_MARKED) => Some(Input::UsageLimitMarked {
                switched: flag != 0,
                error_message: &kept,
            }),
            11 => Some(Input::AbortRetry),
            _ if json(INPUT_ABORT_RETRY) => Some(Input::AbortRetry),
            12 => Some(Input::Abort),
            _ if json(INPUT_ABORT) => Some(Input::Abort),
            13 => Some(Input::SetAutoRetry { enabled: flag != 0 }),
            _ if json(INPUT_SET_AUTO_RETRY) => Some(Input::SetAutoRetry { enabled: flag != 0 }),
            14 => Some(Input::Settings(
                RetrySettings::DEFAULT
                    .with_enabled(sargs.1 != 0)
                    .with_max_retries(u32::from(sargs.2))
                    .with_base_delay_ms(sargs.3),
            )),
            15 => s_ex.map(Input::Settings),
            _ if json(INPUT_SETTINGS) => s_json.map(Input::Settings),
            24 => Some(Input::ModelSwitched {
                switched: flag != 0,
                error_message: &kept,
            }),
            _ if json(INPUT_MODEL_SWITCHED) => Some(Input::ModelSwitched {
                switched: flag != 0,
                error_message: &kept,
            }),
            _ if json(INPUT_STREAM_START) => Some(Input::StreamStart { now_ms: now }),
            _ if json(INPUT_STREAM_EVENT) => Some(Input::StreamEvent { now_ms: now }),
            _ => unreachable!("op {op}, kind {kind}: refused early"),
        };
        // The budget the input names: a copy, which replaces it only when
        // the call succeeds. One that names none is refused once the input
        // is to reach the machine.
        let named = budgets.iter().position(|x| x.handle == budget);
        let mut tokens = match (budget, named) {
            (0, _) => None,
            _ if input.is_none() => None,
            (_, Some(j)) => Some(budgets[j].shadow),
            (_, None) => {
                assert_eq!(got, ERR_BUDGET, "op {op}, budget {budget}");
                assert_eq!(
                    snapshot(&live, &budgets),
                    before,
                    "an unknown budget changed something"
                );
                continue;
            }
        };
        let mut shadow = m.shadow.clone();
        let want: Result<Vec<Output<'_>>, ()> = match input {
            None => Ok(Vec::new()),
            Some(input) => {
                let input = m.rules.as_ref().map_or(input, |r| r.apply_input(input));
                match tokens.as_mut() {
                    Some(tokens) => shadow.handle_with_budget(input, tokens),
                    None => shadow.handle(input),
                }
                .map(|o| o.to_vec())
                .map_err(|_| ())
            }
        };
        let want = want.map(|mut outputs| {
            for output in &mut outputs {
                if let Output::Sleep { timer, .. }
                | Output::Watch { timer, .. }
                | Output::CancelTimer { timer } = output
                {
                    *timer = TimerId(gen << TIMER_BITS | timer.get());
                }
            }
            outputs
        });
        match want {
            Err(()) => {
                assert_eq!(got, ERR_REFUSED, "op {op}: the library refused");
                assert_eq!(
                    snapshot(&live, &budgets),
                    before,
                    "a refusal changed something"
                );
            }
            Ok(outputs) => {
                let json = serde_json::to_vec(&outputs).unwrap();
                if json.len() > cap as usize {
                    assert_eq!(got, ERR_OUT_TOO_SMALL, "op {op}");
                    assert_eq!(
                        snapshot(&live, &budgets),
                        before,
                        "too small a buffer changed something"
                    );
                    continue;
                }
                assert_eq!(got, json.len() as i32, "op {op}");
                // SAFETY: `o` is valid for `cap >= json.len()` bytes.
                let written = unsafe { std::slice::from_raw_parts(o, json.len()) };
                assert_eq!(written, &json[..], "op {op}");
                for output in &outputs {
                    if let Output::Sleep { timer, .. } | Output::Watch { timer, .. } = output {
                        timers.push(timer.get());
                    }
                }
                // A message whose decision asks for an answer: the slot keeps
                // its text for `usage_limit_marked` and `model_switched`.
                let marks = outputs.iter().any(|o| {
                    matches!(
                        o,
                        Output::MarkUsageLimit { .. } | Output::SwitchModel { .. }
                    )
                });
                if marks && is_message {
                    m.kept = text_str.unwrap_or("").to_owned();
                }
                m.shadow = shadow;
                if let (Some(j), Some(tokens)) = (named, tokens) {
                    budgets[j].shadow = tokens;
                }
                let after = snapshot(&live, &budgets);
                for (x, y) in before.machines.iter().zip(&after.machines) {
                    if x.0 != handle {
                        assert_eq!(x, y, "a call on {handle} changed {}", x.0);
                    }
                }
                let shadows: Vec<_> = budgets
                    .iter()
                    .map(|x| (x.handle, x.shadow.tokens_milli() as i32))
                    .collect();
                assert_eq!(after.budgets, shadows, "op {op}: the budgets' tokens");
            }
        }
    }
    for m in live {
        assert_eq!(autoretry_free(m.handle), 0);
    }
    // The tables are the process's: the next input starts with none.
    for x in budgets {
        assert_eq!(autoretry_budget_free(x.handle), 0);
    }
    drop(scratch);
}

libfuzzer_sys::fuzz_target!(|data: &[u8]| run(data));
