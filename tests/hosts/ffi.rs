//! The C ABI (`autoretry::host::ffi`) driven natively: every vector through it,
//! its JSON against `wire`'s serde output byte for byte, and every error code.
//! The pool is shared by the whole process, so the tests here take turns.
#![cfg(all(feature = "ffi", feature = "json"))]

use crate::common;

use std::fs;
use std::sync::Mutex;

use autoretry::host::ffi::*;
use autoretry::wire::json::InputOwned;
use autoretry::{HostOptions, Input, Machine, RetrySettings, StopReason};
use autoretry_testkit::vector::VectorLine;
use autoretry_testkit::VectorHost;
use serde_json::Value;

static TURN: Mutex<()> = Mutex::new(());

fn turn() -> std::sync::MutexGuard<'static, ()> {
    TURN.lock().unwrap_or_else(|e| e.into_inner())
}

fn stop_code(reason: StopReason) -> u32 {
    match reason {
        StopReason::Stop => STOP_STOP,
        StopReason::Length => STOP_LENGTH,
        StopReason::ToolUse => STOP_TOOL_USE,
        StopReason::Error => STOP_ERROR,
        StopReason::Aborted => STOP_ABORTED,
    }
}

/// A machine in the pool, freed on drop.
struct Handle(i32);

impl Handle {
    fn new(settings: RetrySettings, host: HostOptions) -> Self {
        let h = autoretry_new(
            u32::from(settings.enabled),
            settings.max_retries,
            settings.base_delay_ms,
            host.context_window,
            u32::from(host.credential_store),
        );
        assert!(h >= 0, "autoretry_new: {h}");
        Handle(h)
    }

    /// Feeds one input; `Ok(json)` or the error code.
    fn feed(&self, input: &InputOwned) -> Result<String, i32> {
        let mut out = vec![0u8; OUT_BUFFER_LEN];
        let (o, cap) = (out.as_mut_ptr(), out.len() as u32);
        let h = self.0;
        // SAFETY: texts and `out` are live, disjoint and of the given lengths.
        let n = unsafe {
            match input {
                InputOwned::MessageEnd { message } | InputOwned::AgentEnd { message, .. } => {
                    let (ptr, len) = match &message.error_message {
                        Some(t) => (t.as_ptr(), t.len() as i32),
                        None => (std::ptr::null(), -1),
                    };
                    let usage = message.usage.unwrap_or_default();
                    let has_usage = u32::from(message.usage.is_some());
                    let stop = stop_code(message.stop_reason);
                    if let InputOwned::AgentEnd { now_ms, .. } = input {
                        autoretry_agent_end(
                            h,
                            stop,
                            ptr,
                            len,
                            has_usage,
                            usage.input,
                            usage.cache_read,
                            u32::from(now_ms.is_some()),
                            now_ms.unwrap_or(0),
                            o,
                            cap,
                        )
                    } else {
                        autoretry_message_end(
                            h,
                            stop,
                            ptr,
                            len,
                            has_usage,
                            usage.input,
                            usage.cache_read,
                            o,
                            cap,
                        )
                    }
                }
                InputOwned::TimerFired { timer } => autoretry_timer_fired(h, *timer, o, cap),
                InputOwned::UsageLimitMarked { switched } => {
                    autoretry_usage_limit_marked(h, u32::from(*switched), o, cap)
                }
                InputOwned::AbortRetry => autoretry_abort_retry(h, o, cap),
                InputOwned::Abort => autoretry_abort(h, o, cap),
                InputOwned::SetAutoRetry { enabled } => {
                    autoretry_set_auto_retry(h, u32::from(*enabled), o, cap)
                }
                InputOwned::Settings(s) => autoretry_settings(
                    h,
                    u32::from(s.enabled),
                    s.max_retries,
                    s.base_delay_ms,
                    o,
                    cap,
                ),
                InputOwned::Invalid { .. } => unreachable!("the host refuses it"),
            }
        };
        if n < 0 {
            return Err(n);
        }
        Ok(String::from_utf8(out[..n as usize].to_vec()).expect("UTF-8"))
    }

    fn state(&self) -> Value {
        let mut out = [0u8; 128];
        // SAFETY: `out` is live and `out.len()` bytes long.
        let n = unsafe { autoretry_state(self.0, out.as_mut_ptr(), out.len() as u32) };
        assert!(n > 0, "autoretry_state: {n}");
        serde_json::from_slice(&out[..n as usize]).unwrap()
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        assert_eq!(autoretry_free(self.0), 0);
    }
}

#[test]
fn every_vector_step_passes_through_the_c_abi() {
    let _turn = turn();
    let paths = common::vector_files();
    let mut steps = 0;
    for path in &paths {
        let text = fs::read_to_string(path).unwrap();
        let mut handle: Option<Handle> = None;
        // The same machine natively, whose outputs serde_json writes: the
        // module's bytes must be those, timer ids included. The vector host
        // maps its timers (the module's are the same) and keeps the
        // usage-limit text for it; the module keeps its own copy.
        let mut native = Machine::default();
        let mut host = VectorHost::<String>::new();
        for (index, line) in text.split('\n').enumerate() {
            let at = format!("{}:{}", path.display(), index + 1);
            let input = match VectorLine::parse(line).unwrap() {
                None => continue,
                Some(VectorLine::Scenario(header)) => {
                    handle = Some(Handle::new(header.settings, header.host));
                    native = Machine::new(header.settings, header.host);
                    host.reset();
                    continue;
                }
                Some(VectorLine::Step(input)) => input,
            };
            let h = handle.as_ref().expect("a scenario line first");
            let want: Value = serde_json::from_str(line).unwrap();
            let want_refused = want.get("refused") == Some(&Value::Bool(true));
            // Timer ordinals to the module's ids; one never produced is skipped.
            let input = match input {
                InputOwned::TimerFired { timer } => match host.machine_timer(timer) {
                    Some(id) => InputOwned::TimerFired { timer: id.get() },
                    None => {
                        assert_eq!(want["out"], Value::Array(vec![]), "{at}");
                        steps += 1;
                        continue;
                    }
                },
                other => other,
            };
            let got = match input {
                InputOwned::Invalid { .. } => Err(ERR_REFUSED),
                ref input => h.feed(input),
            };
            let marked = host.marked_text().to_owned();
            let native_input = input.as_input(&marked).ok();
            let outputs = native_input.and_then(|i| native.handle(i).ok());
            let serde = (outputs.as_ref()).map(|o| serde_json::to_string(o.as_slice()).unwrap());
            assert_eq!(got.as_ref().ok(), serde.as_ref(), "{at}: bytes");
            match (got, native_input.zip(outputs)) {
                (Err(ERR_REFUSED), _) => assert!(want_refused, "{at}: refused"),
                (Err(code), _) => panic!("{at}: error {code}"),
                (Ok(_), Some((native_input, outputs))) => {
                    assert!(!want_refused, "{at}: accepted");
                    // The module's outputs are the native ones (byte for
                    // byte, above); in the vectors' form:
                    let out: Vec<Value> = (outputs.into_iter())
                        .map(|o| host.vector_output(&native_input, o))
                        .map(|o| serde_json::to_value(o).unwrap())
                        .collect();
                    assert_eq!(Value::Array(out), want["out"], "{at}");
                }
                (Ok(json), None) => panic!("{at}: the module answered {json}, the machine refused"),
            }
            assert_eq!(h.state(), want["state"], "{at}");
            steps += 1;
        }
    }
    assert!(steps > 100, "only {steps} steps");
}

/// The module's JSON is byte for byte serde_json's, for texts that need
/// every kind of escape.
#[test]
fn json_matches_serde_byte_for_byte() {
    let _turn = turn();
    let texts = [
        "503 \"quoted\" \\ back\tslash\n\r\u{8}\u{c}\u{1}\u{1f}\u{7f}",
        "overloaded \u{2028}\u{2029} ünïcödé 🚀",
        "rate limit",
    ];
    for text in texts {
        let settings = RetrySettings::DEFAULT.with_base_delay_ms(u64::MAX);
        let h = Handle::new(settings, HostOptions::default());
        let mut native = Machine::new(settings, HostOptions::default());
        let inputs = [
            InputOwned::AgentEnd {
                message: autoretry::wire::json::MessageOwned::new(
                    StopReason::Error,
                    Some(text.into()),
                ),
                now_ms: None,
            },
            InputOwned::AbortRetry,
        ];
        for input in &inputs {
            let want = serde_json::to_string(
                &native
                    .handle(input.as_input("").unwrap())
                    .unwrap()
                    .as_slice(),
            )
            .unwrap();
            assert_eq!(h.feed(input).unwrap(), want, "{text:?}");
        }
    }
}

#[test]
fn usage_limit_answer_passes_back_the_kept_text() {
    let _turn = turn();
    let h = Handle::new(
        RetrySettings::DEFAULT,
        HostOptions::default().with_credential_store(true),
    );
    let text = "x".repeat(MAX_TEXT - 20) + " usage_limit_reached";
    let mut native = Machine::new(
        RetrySettings::DEFAULT,
        HostOptions::default().with_credential_store(true),
    );
    let end = InputOwned::AgentEnd {
        message: autoretry::wire::json::MessageOwned::new(StopReason::Error, Some(text.clone())),
        now_ms: None,
    };
    let marked = InputOwned::UsageLimitMarked { switched: false };
    let want = serde_json::to_string(&native.handle(end.as_input("").unwrap()).unwrap().as_slice())
        .unwrap();
    assert_eq!(h.feed(&end).unwrap(), want);
    // The machine keeps only a fingerprint; the slot's copy answers.
    let want = serde_json::to_string(
        &native
            .handle(Input::UsageLimitMarked {
                switched: false,
                error_message: &text,
            })
            .unwrap()
            .as_slice(),
    )
    .unwrap();
    assert_eq!(h.feed(&marked).unwrap(), want);
    assert!(want.contains(&text));
}

#[test]
fn error_codes() {
    let _turn = turn();
    let mut out = [0u8; 64];
    let (o, cap) = (out.as_mut_ptr(), out.len() as u32);
    // Unknown handles.
    for bad in [-1, POOL_SIZE as i32, i32::MAX] {
        assert_eq!(autoretry_free(bad), ERR_HANDLE);
        // SAFETY: `out` is live and `cap` bytes long.
        assert_eq!(unsafe { autoretry_abort(bad, o, cap) }, ERR_HANDLE);
    }
    // A full pool, then a freed slot is reused.
    let handles: Vec<Handle> = (0..POOL_SIZE)
        .map(|_| Handle::new(RetrySettings::DEFAULT, HostOptions::default()))
        .collect();
    assert_eq!(autoretry_new(1, 3, 2000, 0, 0), ERR_POOL_FULL);
    let freed = handles[3].0;
    drop(handles);
    let h = Handle::new(RetrySettings::DEFAULT, HostOptions::default());
    assert!(h.0 <= freed);
    // SAFETY: `out` is live and `cap` bytes long; texts are live and of the
    // given lengths (the overlap case points into `out` on purpose).
    unsafe {
        let bad_utf8 = [b'5', 0xff];
        assert_eq!(
            autoretry_agent_end(h.0, STOP_ERROR, bad_utf8.as_ptr(), 2, 0, 0, 0, 0, 0, o, cap),
            ERR_UTF8
        );
        let long = vec![b'a'; MAX_TEXT + 1];
        assert_eq!(
            autoretry_agent_end(
                h.0,
                STOP_ERROR,
                long.as_ptr(),
                long.len() as i32,
                0,
                0,
                0,
                0,
                0,
                o,
                cap
            ),
            ERR_TEXT_LEN
        );
        assert_eq!(
            autoretry_agent_end(h.0, STOP_ERROR, long.as_ptr(), -2, 0, 0, 0, 0, 0, o, cap),
            ERR_TEXT_LEN
        );
        assert_eq!(
            autoretry_agent_end(h.0, 9, std::ptr::null(), -1, 0, 0, 0, 0, 0, o, cap),
            ERR_ARG
        );
        assert_eq!(
            autoretry_agent_end(h.0, STOP_ERROR, std::ptr::null(), 3, 0, 0, 0, 0, 0, o, cap),
            ERR_ARG
        );
        assert_eq!(
            autoretry_agent_end(h.0, STOP_ERROR, o.add(8), 4, 0, 0, 0, 0, 0, o, cap),
            ERR_ARG
        );
        assert_eq!(autoretry_abort(h.0, std::ptr::null_mut(), 8), ERR_ARG);
        // None of those reached the machine.
        assert_eq!(h.state()["isRetrying"], false);

        // Too small a buffer: the input was handled, the outputs are lost.
        let text = "overloaded";
        let mut tiny = [0u8; 8];
        assert_eq!(
            autoretry_agent_end(
                h.0,
                STOP_ERROR,
                text.as_ptr(),
                text.len() as i32,
                0,
                0,
                0,
                0,
                0,
                tiny.as_mut_ptr(),
                tiny.len() as u32
            ),
            ERR_OUT_TOO_SMALL
        );
        assert_eq!(h.state()["isRetrying"], true);
        // The agent must not run during the backoff.
        assert_eq!(
            autoretry_agent_end(h.0, STOP_STOP, std::ptr::null(), -1, 0, 0, 0, 0, 0, o, cap),
            ERR_REFUSED
        );
        assert_eq!(autoretry_pending_timer(h.0), 1);
        let n = autoretry_timer_fired(h.0, 1, o, cap);
        assert_eq!(&out[..n as usize], br#"[{"type":"continue_agent"}]"#);
    }
    // The exchange buffers are distinct and of the stated sizes.
    let (t, b) = (
        autoretry_text_buffer() as usize,
        autoretry_out_buffer() as usize,
    );
    assert!(t + MAX_TEXT <= b || b + OUT_BUFFER_LEN <= t);
}

/// Calls every exported function once, through the exported exchange
/// buffers as a WebAssembly host would: small enough to run under Miri.
#[test]
fn every_entry_point_once() {
    let _turn = turn();
    assert_eq!(autoretry_max_text() as usize, MAX_TEXT);
    assert_eq!(autoretry_out_buffer_len() as usize, OUT_BUFFER_LEN);
    let (text, out, cap) = (
        autoretry_text_buffer(),
        autoretry_out_buffer(),
        autoretry_out_buffer_len(),
    );
    let h = autoretry_new(1, 3, 2000, 0, 1);
    assert!(h >= 0);
    let error = b"usage limit";
    // SAFETY: the exchange buffers are MAX_TEXT and OUT_BUFFER_LEN bytes
    // long, disjoint, and only this thread uses them (`turn`).
    let read = |n: i32| -> String {
        assert!(n >= 0, "error code {n}");
        let bytes = unsafe { std::slice::from_raw_parts(out, n as usize) };
        String::from_utf8(bytes.to_vec()).unwrap()
    };
    unsafe {
        std::ptr::copy_nonoverlapping(error.as_ptr(), text, error.len());
        let len = error.len() as i32;
        let n = autoretry_agent_end(h, STOP_ERROR, text, len, 0, 0, 0, 0, 0, out, cap);
        assert_eq!(
            read(n),
            r#"[{"type":"mark_usage_limit","retryAfterMs":null}]"#
        );
        let n = autoretry_message_end(h, STOP_STOP, text, -1, 0, 0, 0, out, cap);
        assert_eq!(n, ERR_REFUSED);
        let n = autoretry_usage_limit_marked(h, 1, out, cap);
        assert!(read(n).ends_with(r#"{"type":"sleep","ms":0,"timer":1}]"#));
        let timer = autoretry_pending_timer(h);
        assert_eq!(read(autoretry_set_auto_retry(h, 1, out, cap)), "[]");
        assert_eq!(read(autoretry_settings(h, 1, 3, 10, out, cap)), "[]");
        let n = autoretry_timer_fired(h, timer, out, cap);
        assert_eq!(read(n), r#"[{"type":"continue_agent"}]"#);
        let n = autoretry_abort_retry(h, out, cap);
        assert!(read(n).contains("Retry cancelled"));
        assert_eq!(
            read(autoretry_abort(h, out, cap)),
            r#"[{"type":"abort_agent"}]"#
        );
        let n = autoretry_state(h, out, cap);
        assert_eq!(
            read(n),
            r#"{"autoRetryEnabled":true,"isRetrying":false,"retryAttempt":0}"#
        );
    }
    assert_eq!(autoretry_free(h), 0);
}
