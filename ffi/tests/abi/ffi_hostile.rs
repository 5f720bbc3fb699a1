//! Hostile calls into the C ABI, natively (as `ffi/wasm/hostile.mjs` does
//! for the WebAssembly module): out-of-range and stale handles, lengths past
//! the buffers, buffers that wrap or overlap each other or run past an
//! exchange buffer, too-small output buffers, pool exhaustion and reuse, and
//! a freed machine's timer fired at its slot's next machine. Every failed
//! call returns its code, changes nothing and leaves every machine usable.
//! (The module's own data below `__heap_base` has no native counterpart the
//! test can name; the WebAssembly script covers it.)

use crate::ffi::{host_timer, turn};

use autoretry_ffi::*;

/// A live machine, made with the §4 entry point, freed on drop.
pub(crate) struct Machine(pub(crate) i32);

impl Machine {
    pub(crate) fn new() -> Self {
        let h = autoretry_new(1, 3, 2000, 0, 1);
        assert!(h >= 0, "autoretry_new: {h}");
        Machine(h)
    }
}

impl Drop for Machine {
    fn drop(&mut self) {
        assert_eq!(autoretry_free(self.0), 0);
    }
}

/// A buffer the test owns, big enough for any outputs.
fn buffer() -> Vec<u8> {
    vec![0; OUT_BUFFER_LEN]
}

/// `agent_end` with an error text; `Ok(json)` or the error code.
pub(crate) fn agent_end(h: i32, text: &str) -> Result<String, i32> {
    let mut out = buffer();
    // SAFETY: `text` and `out` are live, disjoint and of the given lengths.
    let n = unsafe {
        autoretry_agent_end(
            h,
            STOP_ERROR,
            text.as_ptr(),
            text.len() as i32,
            0,
            0,
            0,
            0,
            0,
            out.as_mut_ptr(),
            out.len() as u32,
        )
    };
    written(&out, n)
}

fn timer_fired(h: i32, timer: u64) -> Result<String, i32> {
    let mut out = buffer();
    // SAFETY: `out` is live and of the given length.
    let n = unsafe { autoretry_timer_fired(h, timer, out.as_mut_ptr(), out.len() as u32) };
    written(&out, n)
}

fn written(out: &[u8], n: i32) -> Result<String, i32> {
    if n < 0 {
        return Err(n);
    }
    Ok(String::from_utf8(out[..n as usize].to_vec()).unwrap())
}

/// Everything a failed call must leave as it was: each machine's state and
/// pending timer.
pub(crate) fn snapshot(handles: &[i32]) -> Vec<(String, u64)> {
    handles
        .iter()
        .map(|&h| {
            let mut out = [0u8; 128];
            // SAFETY: `out` is live and of the given length.
            let n = unsafe { autoretry_state(h, out.as_mut_ptr(), out.len() as u32) };
            (written(&out, n).unwrap(), autoretry_pending_timer(h))
        })
        .collect()
}

/// Every entry point that writes outputs, on machine `h`, into `(out, cap)`.
/// The text, when one is passed, is a valid one in the text buffer.
///
/// # Safety
///
/// `(out, cap)` valid for writes, or one the module refuses before writing.
pub(crate) unsafe fn every_output_call(h: i32, out: *mut u8, cap: u32) -> Vec<(&'static str, i32)> {
    let text = autoretry_text_buffer();
    // SAFETY: the text buffer is MAX_TEXT bytes long; this thread alone
    // uses it (`turn`).
    unsafe { std::ptr::copy_nonoverlapping(b"overloaded".as_ptr(), text, 10) };
    let timer = autoretry_pending_timer(h);
    // SAFETY: the caller's contract; the text is live for 10 bytes.
    unsafe {
        vec![
            ("abort", autoretry_abort(h, out, cap)),
            ("stream_start", autoretry_stream_start(h, 1, out, cap)),
            ("stream_event", autoretry_stream_event(h, 2, out, cap)),
            ("abort_retry", autoretry_abort_retry(h, out, cap)),
            ("timer_fired", autoretry_timer_fired(h, timer, out, cap)),
            ("set_auto_retry", autoretry_set_auto_retry(h, 0, out, cap)),
            ("settings", autoretry_settings(h, 0, 1, 5, out, cap)),
            (
                "settings_ex",
                autoretry_settings_ex(h, 0, 0, 1, 5, 0, 0, 0, 0, 0, out, cap),
            ),
            (
                "usage_limit_marked",
                autoretry_usage_limit_marked(h, 1, out, cap),
            ),
            ("model_switched", autoretry_model_switched(h, 1, out, cap)),
            (
                "handle_json",
                autoretry_handle_json(
                    h,
                    &AutoretryInput {
                        kind: INPUT_ABORT,
                        ..AutoretryInput::default()
                    },
                    out,
                    cap,
                ),
            ),
            ("state", autoretry_state(h, out, cap)),
            (
                "message_end",
                autoretry_message_end(h, STOP_STOP, text, -1, 0, 0, 0, out, cap),
            ),
            (
                "agent_end",
                autoretry_agent_end(h, STOP_ERROR, text, 10, 0, 0, 0, 0, 0, out, cap),
            ),
            (
                "agent_end_ex",
                autoretry_agent_end_ex(
                    h,
                    STOP_ERROR,
                    text,
                    10,
                    0,
                    0,
                    0,
                    0,
                    SHOULD_RETRY_ABSENT,
                    0,
                    0,
                    0,
                    0,
                    out,
                    cap,
                ),
            ),
            (
                "message_end_ex",
                autoretry_message_end_ex(
                    h,
                    STOP_ERROR,
                    text,
                    10,
                    0,
                    0,
                    0,
                    0,
                    SHOULD_RETRY_ABSENT,
                    0,
                    0,
                    out,
                    cap,
                ),
            ),
        ]
    }
}

#[test]
fn bad_buffers_are_refused_and_change_nothing() {
    let _turn = turn();
    let (a, b) = (Machine::new(), Machine::new());
    assert!(agent_end(a.0, "overloaded")
        .unwrap()
        .contains(r#""type":"sleep""#));
    let before = snapshot(&[a.0, b.0]);
    let (text, out) = (autoretry_text_buffer(), autoretry_out_buffer());
    let bad: [(&str, *mut u8, u32, i32); 6] = [
        ("null with a length", std::ptr::null_mut(), 64, ERR_ARG),
        (
            "wrapping the address space",
            std::ptr::without_provenance_mut(usize::MAX),
            64,
            ERR_BUFFER,
        ),
        (
            "wrapping the address space",
            std::ptr::without_provenance_mut(usize::MAX - 8),
            64,
            ERR_BUFFER,
        ),
        (
            "running past the out buffer",
            out.wrapping_add(OUT_BUFFER_LEN - 8),
            64,
            ERR_BUFFER,
        ),
        (
            "starting before the out buffer",
            out.wrapping_sub(8),
            64,
            ERR_BUFFER,
        ),
        (
            "running past the text buffer",
            text.wrapping_add(MAX_TEXT - 8),
            64,
            ERR_BUFFER,
        ),
    ];
    for (what, ptr, cap, want) in bad {
        // SAFETY: every one of these ranges is refused before it is touched.
        for (name, got) in unsafe { every_output_call(a.0, ptr, cap) } {
            assert_eq!(got, want, "{name}: out {what}");
        }
        assert_eq!(snapshot(&[a.0, b.0]), before, "out {what}");
    }
    // Texts: past a buffer, wrapping, overlapping the output, too long.
    let mut own = buffer();
    let (o, cap) = (own.as_mut_ptr(), own.len() as u32);
    let bad_texts: [(&str, *const u8, i32, i32); 7] = [
        ("null with a length", std::ptr::null(), 8, ERR_ARG),
        (
            "wrapping",
            std::ptr::without_provenance(usize::MAX - 4),
            8,
            ERR_BUFFER,
        ),
        (
            "running past the text buffer",
            text.wrapping_add(MAX_TEXT - 4),
            8,
            ERR_BUFFER,
        ),
        (
            "starting before the out buffer",
            out.wrapping_sub(4),
            8,
            ERR_BUFFER,
        ),
        (
            "longer than MAX_TEXT",
            text,
            MAX_TEXT as i32 + 1,
            ERR_TEXT_LEN,
        ),
        ("of length -2", text, -2, ERR_TEXT_LEN),
        ("overlapping out", o.wrapping_add(16), 8, ERR_ARG),
    ];
    for (what, ptr, len, want) in bad_texts {
        // SAFETY: every one of these is refused before the text is read;
        // `own` is live for `cap` bytes.
        let got = unsafe {
            [
                autoretry_agent_end(b.0, STOP_ERROR, ptr, len, 0, 0, 0, 0, 0, o, cap),
                autoretry_message_end(b.0, STOP_ERROR, ptr, len, 0, 0, 0, o, cap),
                autoretry_agent_end_ex(
                    b.0,
                    STOP_ERROR,
                    ptr,
                    len,
                    0,
                    0,
                    0,
                    0,
                    SHOULD_RETRY_ABSENT,
                    0,
                    0,
                    0,
                    0,
                    o,
                    cap,
                ),
                autoretry_message_end_ex(
                    b.0,
                    STOP_ERROR,
                    ptr,
                    len,
                    0,
                    0,
                    0,
                    0,
                    SHOULD_RETRY_ABSENT,
                    0,
                    0,
                    o,
                    cap,
                ),
            ]
        };
        assert_eq!(got, [want; 4], "text {what}");
        assert_eq!(snapshot(&[a.0, b.0]), before, "text {what}");
    }
    // Too small an output buffer (even `[]` needs 2 bytes): refused before
    // the input is applied, for every input.
    let mut tiny = [0u8; 1];
    for cap in [0, 1] {
        // SAFETY: `tiny` is live for `cap` bytes.
        for (name, got) in unsafe { every_output_call(b.0, tiny.as_mut_ptr(), cap) } {
            assert_eq!(got, ERR_OUT_TOO_SMALL, "{name} into {cap} bytes");
        }
        assert_eq!(snapshot(&[a.0, b.0]), before, "into {cap} bytes");
    }
    // Both machines carry on.
    let continued = Ok(r#"[{"type":"continue_agent"}]"#.to_owned());
    assert_eq!(timer_fired(a.0, autoretry_pending_timer(a.0)), continued);
    assert!(agent_end(b.0, "overloaded")
        .unwrap()
        .contains(r#""type":"sleep""#));
    assert_eq!(timer_fired(b.0, autoretry_pending_timer(b.0)), continued);
}

#[test]
fn out_of_range_and_stale_handles_are_refused() {
    let _turn = turn();
    let mut out = buffer();
    let (o, cap) = (out.as_mut_ptr(), out.len() as u32);
    let check_refused = |h: i32| {
        assert_eq!(autoretry_free(h), ERR_HANDLE, "{h}");
        assert_eq!(autoretry_pending_timer(h), 0, "{h}");
        assert_eq!(agent_end(h, "overloaded"), Err(ERR_HANDLE), "{h}");
        // SAFETY: `out` is live for `cap` bytes.
        for (name, got) in unsafe { every_output_call(h, o, cap) } {
            assert_eq!(got, ERR_HANDLE, "{name} {h}");
        }
    };
    for h in [-1, i32::MIN, POOL_SIZE as i32, 255, 256, i32::MAX] {
        check_refused(h);
    }
    // Exhaustion, then reuse: the freed handle is refused everywhere, its
    // slot's next machine has another handle and the others are untouched.
    let mut machines: Vec<Machine> = (0..POOL_SIZE).map(|_| Machine::new()).collect();
    assert_eq!(autoretry_new(1, 3, 2000, 0, 0), ERR_POOL_FULL);
    assert_eq!(
        autoretry_new_ex(0, 1, 3, 2000, 0, 0, 0, 0, 0, 0, 0, 0),
        ERR_POOL_FULL
    );
    let a = machines.remove(3);
    let stale = a.0;
    drop(a);
    let others: Vec<i32> = machines.iter().map(|m| m.0).collect();
    let before = snapshot(&others);
    check_refused(stale);
    let b = Machine::new();
    assert_eq!(b.0 & 0xff, stale & 0xff, "the freed slot");
    assert_ne!(b.0, stale);
    assert_eq!(autoretry_new(1, 3, 2000, 0, 0), ERR_POOL_FULL);
    check_refused(stale);
    assert_eq!(snapshot(&others), before);
    drop(b);
    drop(machines);
    // Many generations of one slot: no handle is given twice.
    let mut seen = std::collections::HashSet::new();
    for _ in 0..1000 {
        let m = Machine::new();
        assert!(seen.insert(m.0), "handle {} given twice", m.0);
    }
}

/// Spec §6 across slot reuse: the timer of a freed machine, fired at the
/// slot's next machine (whose own timer the machine also numbers 1), is
/// ignored; fired with its own stale handle, refused.
#[test]
fn a_freed_machines_timer_never_reaches_the_next_one() {
    let _turn = turn();
    let a = Machine::new();
    assert!(agent_end(a.0, "overloaded")
        .unwrap()
        .contains(r#""type":"sleep""#));
    let (stale_handle, stale_timer) = (a.0, autoretry_pending_timer(a.0));
    drop(a);
    let b = Machine::new();
    assert_eq!(b.0 & 0xff, stale_handle & 0xff, "the same slot");
    assert!(agent_end(b.0, "overloaded")
        .unwrap()
        .contains(r#""type":"sleep""#));
    let timer = autoretry_pending_timer(b.0);
    assert_eq!(timer, host_timer(b.0, 1));
    assert_ne!(timer, stale_timer);
    let before = snapshot(&[b.0]);
    assert_eq!(timer_fired(b.0, stale_timer), Ok("[]".to_owned()));
    assert_eq!(timer_fired(stale_handle, stale_timer), Err(ERR_HANDLE));
    assert_eq!(snapshot(&[b.0]), before);
    assert_eq!(
        timer_fired(b.0, timer),
        Ok(r#"[{"type":"continue_agent"}]"#.to_owned())
    );
}

/// The C form's own arguments: the input struct and the output array are
/// checked as every buffer is (null, misaligned, wrapping), an unknown
/// kind is refused, and too small an array changes nothing.
/// The C form's `agent_end` of an error `text` with a `SHOULD_RETRY_*`
/// code, the other fields absent.
pub(crate) fn agent_end_input(text: &str, should_retry: i32) -> AutoretryInput {
    AutoretryInput {
        kind: INPUT_AGENT_END,
        stop_reason: STOP_ERROR,
        text: text.as_ptr(),
        text_len: text.len() as i32,
        should_retry,
        has_usage: 0,
        has_retry_after: 0,
        has_now: 0,
        flag: 0,
        usage_input: 0,
        usage_cache_read: 0,
        usage_cache_write: 0,
        retry_after_ms: 0,
        now_ms: 0,
        timer: 0,
        settings: AutoretrySettings::default(),
        partial: PARTIAL_NONE,
        budget: 0,
        headers: std::ptr::null(),
        headers_len: 0,
        empty: 0,
    }
}

#[test]
fn the_c_form_refuses_bad_arguments_and_changes_nothing() {
    let _turn = turn();
    let m = Machine::new();
    let text = "529 overloaded_error";
    let input = agent_end_input(text, SHOULD_RETRY_ABSENT);
    let mut out = [AutoretryOutput::default(); 8];
    let o = out.as_mut_ptr();
    let before = snapshot(&[m.0]);
    let misaligned_out = o.cast::<u8>().wrapping_add(1).cast::<AutoretryOutput>();
    let misaligned_in = (&input as *const AutoretryInput)
        .cast::<u8>()
        .wrapping_add(1)
        .cast::<AutoretryInput>();
    let unknown = AutoretryInput { kind: 99, ..input };
    // SAFETY: every bad pointer here is refused before it is touched;
    // `input` and `out` are live.
    unsafe {
        assert_eq!(autoretry_handle_c(m.0, std::ptr::null(), o, 8), ERR_ARG);
        assert_eq!(autoretry_handle_c(m.0, misaligned_in, o, 8), ERR_ARG);
        assert_eq!(autoretry_handle_c(m.0, &unknown, o, 8), ERR_ARG);
        assert_eq!(
            autoretry_handle_c(m.0, &input, std::ptr::null_mut(), 8),
            ERR_ARG
        );
        assert_eq!(autoretry_handle_c(m.0, &input, misaligned_out, 8), ERR_ARG);
        let wrapping = std::ptr::without_provenance_mut::<AutoretryOutput>(usize::MAX - 64);
        assert_eq!(autoretry_handle_c(m.0, &input, wrapping, 8), ERR_BUFFER);
        for cap in 0..3 {
            assert_eq!(autoretry_handle_c(m.0, &input, o, cap), ERR_OUT_TOO_SMALL);
        }
        assert_eq!(snapshot(&[m.0]), before);
        let mut state = AutoretryState::default();
        assert_eq!(autoretry_state_c(m.0, std::ptr::null_mut()), ERR_ARG);
        assert_eq!(autoretry_state_c(m.0 ^ 0x100, &mut state), ERR_HANDLE);
        assert_eq!(autoretry_state_c(m.0, &mut state), 0);
        assert_eq!(state.is_retrying, 0);
        // Then the input runs, and its structs are the JSON form's outputs.
        assert_eq!(autoretry_handle_c(m.0, &input, o, 3), 3);
        let kinds: Vec<u32> = out[..3].iter().map(|o| o.kind).collect();
        assert_eq!(
            kinds,
            [OUTPUT_START, OUTPUT_DROP_TRAILING_ERROR, OUTPUT_SLEEP]
        );
        let start = out[0];
        let message = std::slice::from_raw_parts(start.text, start.text_len as usize);
        assert_eq!(message, text.as_bytes());
        assert_eq!(out[2].timer, autoretry_pending_timer(m.0));
        assert_eq!(autoretry_state_c(m.0, &mut state), 0);
        assert_eq!((state.is_retrying, state.retry_attempt), (1, 1));
    }
}

/// The budgets' own arguments and handles: figures out of range, the table
/// full, an input naming no budget (never made, freed, of another kind of
/// handle), an unknown `partial` code. Every failed call changes neither the
/// machine nor any budget; a freed budget's handle never names the next
/// one in its place.
#[test]
fn bad_budgets_and_partial_codes_are_refused_and_change_nothing() {
    let _turn = turn();
    for (max, ratio, has, tokens) in [
        (0, 1, 0, 0),
        (1001, 1, 0, 0),
        (4, 0, 0, 0),
        (4, 1_000_001, 0, 0),
        (4, 500, 1, 4001),
    ] {
        assert_eq!(
            autoretry_budget_new(max, ratio, has, tokens),
            ERR_ARG,
            "{max} {ratio} {has} {tokens}"
        );
    }
    let budgets: Vec<i32> = (0..BUDGET_POOL_SIZE)
        .map(|_| autoretry_budget_new(4, 500, 1, 3000))
        .collect();
    assert!(budgets.iter().all(|&b| b > 0), "{budgets:?}");
    assert_eq!(autoretry_budget_new(4, 500, 0, 0), ERR_POOL_FULL);
    let stale = budgets[2];
    assert_eq!(autoretry_budget_free(stale), 0);
    let next = autoretry_budget_new(4, 500, 0, 0);
    assert_eq!(
        (next & 0xff, next == stale),
        (stale & 0xff, false),
        "the freed place, another handle"
    );
    let m = Machine::new();
    let text = "529 overloaded_error";
    let mut out = buffer();
    let (o, cap) = (out.as_mut_ptr(), out.len() as u32);
    let before = snapshot(&[m.0]);
    // 5: generation 0, which no budget has; 0x1ff: place 255, past the table.
    for bad in [stale, -1, 5, 0x1ff, i32::MAX] {
        assert_eq!(autoretry_budget_tokens(bad), ERR_BUDGET, "{bad}");
        assert_eq!(autoretry_budget_free(bad), ERR_BUDGET, "{bad}");
        let input = AutoretryInput {
            budget: bad,
            ..agent_end_input(text, SHOULD_RETRY_ABSENT)
        };
        let abort = AutoretryInput {
            kind: INPUT_ABORT,
            budget: bad,
            ..AutoretryInput::default()
        };
        // SAFETY: the inputs, the text and `out` are live and disjoint.
        unsafe {
            assert_eq!(
                autoretry_handle_json(m.0, &input, o, cap),
                ERR_BUDGET,
                "{bad}"
            );
            assert_eq!(
                autoretry_handle_json(m.0, &abort, o, cap),
                ERR_BUDGET,
                "{bad}"
            );
        }
    }
    for partial in [3, u32::MAX] {
        let input = AutoretryInput {
            partial,
            ..agent_end_input(text, SHOULD_RETRY_ABSENT)
        };
        // SAFETY: as above.
        assert_eq!(
            unsafe { autoretry_handle_json(m.0, &input, o, cap) },
            ERR_ARG,
            "partial {partial}"
        );
    }
    assert_eq!(snapshot(&[m.0]), before);
    // Too small an output buffer changes the budget no more than the machine.
    let live = budgets[0];
    let input = AutoretryInput {
        budget: live,
        ..agent_end_input(text, SHOULD_RETRY_ABSENT)
    };
    // SAFETY: as above.
    assert_eq!(
        unsafe { autoretry_handle_json(m.0, &input, o, 8) },
        ERR_OUT_TOO_SMALL
    );
    assert_eq!(
        (autoretry_budget_tokens(live), snapshot(&[m.0])),
        (3000, before)
    );
    // Then it runs: the retry decision charges the budget one token.
    // SAFETY: as above.
    assert!(unsafe { autoretry_handle_json(m.0, &input, o, cap) } > 0);
    assert_eq!(autoretry_budget_tokens(live), 2000);
    for b in budgets.into_iter().filter(|&b| b != stale).chain([next]) {
        assert_eq!(autoretry_budget_free(b), 0);
    }
}
