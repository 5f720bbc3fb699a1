//! The core allocates nothing: every vector step (sections 1–9 and the
//! options of section 10) and every corpus text runs under a counting
//! global allocator, and the count must stay at zero while the library
//! works, the events' terminal text and JSON (the fail-fast sentence
//! included) written into fixed buffers. Decoding the JSON (test code) happens outside the
//! counted windows.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use autoretry::classify::{self, Classifier};
use autoretry::{
    AssistantMessage, HostOptions, Input, JitterPct, Machine, Output, RetrySettings, StopReason,
    TimerId, Usage,
};
use serde_json::Value;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note();
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, size: usize) -> *mut u8 {
        note();
        System.realloc(ptr, layout, size)
    }
}

fn note() {
    // `try_with`: the thread-local may be gone while a thread shuts down.
    let _ = COUNTING.try_with(|on| {
        if on.get() {
            COUNT.with(|c| c.set(c.get() + 1));
        }
    });
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Runs `f` and returns its result with the number of allocations it made.
fn counted<T>(f: impl FnOnce() -> T) -> (T, u64) {
    COUNT.with(|c| c.set(0));
    COUNTING.with(|on| on.set(true));
    let value = f();
    COUNTING.with(|on| on.set(false));
    (value, COUNT.with(|c| c.get()))
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().expect("an unsigned integer")
}

fn message(v: &Value) -> AssistantMessage<'_> {
    AssistantMessage {
        stop_reason: StopReason::from_wire(v["stopReason"].as_str().unwrap()).unwrap(),
        error_message: v.get("errorMessage").and_then(Value::as_str),
        usage: v.get("usage").map(|u| Usage {
            input: u.get("input").map_or(0, u64_of),
            cache_read: u.get("cacheRead").map_or(0, u64_of),
            cache_write: u.get("cacheWrite").map_or(0, u64_of),
        }),
        should_retry: v.get("shouldRetry").map(|b| b.as_bool().unwrap()),
        retry_after_ms: v.get("retryAfterMs").map(u64_of),
    }
}

/// A scenario line's group (always valid there): the profile's defaults,
/// then each key given.
fn settings(v: &Value) -> RetrySettings {
    let d = match v.get("profile").and_then(Value::as_str) {
        Some("modern") => RetrySettings::MODERN,
        _ => RetrySettings::CLASSIC,
    };
    let flag = |key: &str, default: bool| v.get(key).map_or(default, |b| b.as_bool().unwrap());
    let ms = |key: &str, default: u64| v.get(key).map_or(default, u64_of);
    RetrySettings {
        enabled: flag("enabled", d.enabled),
        max_retries: v
            .get("maxRetries")
            .map_or(d.max_retries, |n| u32::try_from(u64_of(n)).unwrap()),
        base_delay_ms: ms("baseDelayMs", d.base_delay_ms),
        max_delay_ms: ms("maxDelayMs", d.max_delay_ms),
        backoff_cap_ms: ms("backoffCapMs", d.backoff_cap_ms),
        jitter_pct: v.get("jitterPct").map_or(d.jitter_pct, |n| {
            JitterPct::new(u8::try_from(u64_of(n)).unwrap()).unwrap()
        }),
        honor_hints: flag("honorHints", d.honor_hints),
        classifier: v.get("classifier").map_or(d.classifier, |c| {
            Classifier::from_wire(c.as_str().unwrap()).unwrap()
        }),
        ..d
    }
}

/// Counts what a `Display` writes, without storing it.
struct Sink(usize);

impl std::fmt::Write for Sink {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// The vector files of `dir` (relative to `tests/`), sorted.
fn vector_files(dir: &str) -> Vec<std::path::PathBuf> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join(dir);
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    files.sort();
    files
}

/// Runs every step of the vector files of `dir`; returns the steps run and
/// the allocations made while the machine handled them and while their
/// events were written (terminal text and JSON, into fixed buffers).
fn replay_counted(dir: &str) -> (usize, u64) {
    let (mut steps, mut total_allocs) = (0, 0);
    for file in &vector_files(dir) {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<Value> = text
            .split('\n')
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let mut machine = Machine::default();
        let mut timers: Vec<TimerId> = Vec::with_capacity(64);
        let mut marked: Option<&str> = None;
        let mut json = vec![0u8; 1 << 16];
        for line in &lines {
            if line.get("scenario").is_some() {
                let host = &line["host"];
                machine = Machine::new(
                    settings(&line["settings"]),
                    HostOptions {
                        context_window: host.get("contextWindow").map_or(0, u64_of),
                        credential_store: host
                            .get("credentialStore")
                            .is_some_and(|b| b.as_bool().unwrap()),
                        seed: host.get("seed").map_or(0, u64_of),
                    },
                );
                timers.clear();
                continue;
            }
            let step = &line["in"];
            let input = match step["type"].as_str().unwrap() {
                "message_end" => Input::MessageEnd {
                    message: message(&step["message"]),
                },
                "agent_end" => {
                    let message = message(&step["message"]);
                    marked = message.error_message;
                    Input::AgentEnd {
                        message,
                        now_ms: step.get("nowMs").map(u64_of),
                    }
                }
                "timer_fired" => {
                    let ordinal = u64_of(&step["timer"]) as usize;
                    match ordinal.checked_sub(1).and_then(|i| timers.get(i)) {
                        Some(&timer) => Input::TimerFired { timer },
                        None => Input::TimerFired {
                            timer: TimerId(u64::MAX),
                        },
                    }
                }
                "usage_limit_marked" => Input::UsageLimitMarked {
                    switched: step["switched"].as_bool().unwrap(),
                    error_message: marked.unwrap_or(""),
                },
                "abort_retry" => Input::AbortRetry,
                "abort" => Input::Abort,
                "set_auto_retry" => match step["enabled"].as_bool() {
                    Some(enabled) => Input::SetAutoRetry { enabled },
                    None => continue,
                },
                // Settings are decoded (and bad ones refused) at the edge.
                "settings" => continue,
                other => panic!("unknown input type {other}"),
            };
            let (sleeps, allocs) = counted(|| {
                let outputs = machine.handle(input).ok()?;
                let mut sleeps = [None; autoretry::MAX_OUTPUTS];
                for (slot, output) in sleeps.iter_mut().zip(&outputs) {
                    match output {
                        Output::Sleep { timer, .. } => *slot = Some(*timer),
                        Output::Emit(event) => {
                            let mut sink = Sink(0);
                            std::fmt::write(&mut sink, format_args!("{event}")).unwrap();
                            serde_json::to_writer(&mut json[..], event).unwrap();
                        }
                        _ => {}
                    }
                }
                Some(sleeps)
            });
            timers.extend(sleeps.into_iter().flatten().flatten());
            total_allocs += allocs;
            steps += 1;
        }
    }
    (steps, total_allocs)
}

#[test]
fn the_machine_allocates_nothing_on_any_vector() {
    let (steps, allocs) = replay_counted("vectors");
    assert!(steps > 100, "only {steps} steps ran");
    assert_eq!(allocs, 0, "the machine allocated");
}

#[test]
fn the_machine_allocates_nothing_on_any_option_vector() {
    let (steps, allocs) = replay_counted("vectors/options");
    assert!(steps > 100, "only {steps} steps ran");
    assert_eq!(allocs, 0, "the machine allocated");
}

#[test]
fn classification_allocates_nothing() {
    let corpus = include_str!("corpus/errors.jsonl");
    let texts: Vec<String> = corpus
        .split('\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut lossy = b"overloaded \xF0\x9F\x92 retry-after: 5".to_vec();
    lossy.extend_from_slice(&[0xC0, 0xFF, b'5', b'0', b'3']);
    let (labels, allocs) = counted(|| {
        let mut hits = 0usize;
        for text in &texts {
            let c = classify::classify(text);
            hits += usize::from(c.retryable)
                + usize::from(classify::classify_bytes(text.as_bytes()).overflow);
            hits += usize::from(classify::retry_hint_ms(text, Some(1_790_000_000_000)).is_some());
        }
        hits + usize::from(classify::classify_bytes(&lossy).retryable)
    });
    assert!(labels > 0);
    assert_eq!(allocs, 0, "classification allocated");
}
