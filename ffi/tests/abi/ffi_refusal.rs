//! `autoretry_last_refusal`: which rule of spec §6a refused a machine's
//! last input, while every entry point still answers `ERR_REFUSED`.

use crate::ffi::turn;
use crate::ffi_hostile::{agent_end, Machine};

use autoretry_ffi::*;

/// `message_end` with no text: `Ok(json)` or the error code.
fn message_end(h: i32) -> Result<String, i32> {
    let mut out = vec![0u8; OUT_BUFFER_LEN];
    // SAFETY: no text; `out` is live and of the given length.
    let n = unsafe {
        autoretry_message_end(
            h,
            STOP_STOP,
            core::ptr::null(),
            -1,
            0,
            0,
            0,
            out.as_mut_ptr(),
            out.len() as u32,
        )
    };
    if n < 0 {
        return Err(n);
    }
    Ok(String::from_utf8(out[..n as usize].to_vec()).unwrap())
}

#[test]
fn each_refusal_has_its_reason_and_a_handled_input_clears_it() {
    let _turn = turn();
    let m = Machine::new();
    assert_eq!(autoretry_last_refusal(m.0), REFUSAL_NONE);
    // A retry waits: the agent must not run.
    assert!(agent_end(m.0, "529 overloaded_error")
        .unwrap()
        .contains("sleep"));
    assert_eq!(agent_end(m.0, "529 overloaded_error"), Err(ERR_REFUSED));
    assert_eq!(
        autoretry_last_refusal(m.0),
        REFUSAL_AGENT_RUN_DURING_BACKOFF
    );
    assert_eq!(message_end(m.0), Err(ERR_REFUSED));
    assert_eq!(
        autoretry_last_refusal(m.0),
        REFUSAL_AGENT_RUN_DURING_BACKOFF
    );
    // A call refused before the machine sees it leaves the reason.
    let mut out = [0u8; 8];
    // SAFETY: `out` is live; the unknown stop reason is refused first.
    let bad = unsafe {
        autoretry_message_end(m.0, 99, core::ptr::null(), -1, 0, 0, 0, out.as_mut_ptr(), 8)
    };
    assert_eq!(bad, ERR_ARG);
    assert_eq!(
        autoretry_last_refusal(m.0),
        REFUSAL_AGENT_RUN_DURING_BACKOFF
    );
    // An input the machine handles clears it.
    // SAFETY: `out` is live and 8 bytes long.
    assert!(
        unsafe { autoretry_abort_retry(m.0, out.as_mut_ptr(), 8) } < 0,
        "too small"
    );
    assert_eq!(
        autoretry_last_refusal(m.0),
        REFUSAL_NONE,
        "handled, then too small a buffer"
    );

    // The usage-limit answer is awaited (the machine has a credential store).
    let u = Machine::new();
    let marked = agent_end(u.0, "usage_limit_reached").unwrap();
    assert!(marked.contains("mark_usage_limit"), "{marked}");
    assert_eq!(message_end(u.0), Err(ERR_REFUSED));
    assert_eq!(
        autoretry_last_refusal(u.0),
        REFUSAL_AWAITING_USAGE_LIMIT_ANSWER
    );
    // The other machine's reason is its own.
    assert_eq!(autoretry_last_refusal(m.0), REFUSAL_NONE);
}

#[test]
fn a_freed_machines_reason_never_reaches_its_slots_next_machine() {
    let _turn = turn();
    let m = Machine::new();
    agent_end(m.0, "529 overloaded_error").unwrap();
    assert_eq!(agent_end(m.0, "529 overloaded_error"), Err(ERR_REFUSED));
    let freed = m.0;
    drop(m);
    assert_eq!(autoretry_last_refusal(freed), ERR_HANDLE);
    assert_eq!(autoretry_last_refusal(-1), ERR_HANDLE);
    let next = Machine::new();
    assert_eq!(freed & 0xff, next.0 & 0xff, "the same slot");
    assert_eq!(autoretry_last_refusal(next.0), REFUSAL_NONE);
}
