//! Your own rules on a Cortex-M3 with no allocator: the example rules
//! (`tests/rules/example.json`), compiled ahead of time by `autoretry rules
//! compile` into `tests/rules/example.bin` and included with
//! `include_rules!`, are loaded in place, refuse their truncations, give
//! their verdicts, and steer the machine: a rule retries what the
//! classifier would not, and forbids what it would. Exits through
//! semihosting, status 0 only when every check passed (`./run-rules.sh`).
#![no_std]
#![no_main]

use core::panic::PanicInfo;

use autoretry::rules::{Rules, RulesError};
use autoretry::{AssistantMessage, Event, Input, Machine, Output};
use cortex_m_rt::entry;
use cortex_m_semihosting::{debug, hprintln};

static BLOB: &[u8] = autoretry::include_rules!("../../../../tests/rules/example.bin");

/// Texts and the verdict the example rules give them.
const VERDICTS: &[(&str, Option<bool>)] = &[
    ("stream stalled", Some(true)),
    ("Stream idle timeout after 30s", Some(true)),
    ("HTTP 502 upstream_error", Some(true)),
    ("upstream_errors", None),
    ("please RETRY YOUR REQUEST", Some(true)),
    ("E_GATEWAY_504", Some(true)),
    ("E_GATEWAY_5040", None),
    ("503 billing: insufficient funds", Some(false)),
    ("stream stalled: insufficient_funds", Some(false)),
    ("tool error: exit 1", Some(false)),
    ("the tool error: exit 1", None),
    ("stream \u{17F}talled", None),
    ("", None),
];

/// Agent ends and whether the machine opens a retry chain for them with
/// the rules applied.
const CHAINS: &[(&str, Option<bool>, bool)] = &[
    // A rule retries what the classifier would not.
    ("stream stalled", None, true),
    ("upstream_error: try later", None, true),
    // A rule forbids what the classifier would retry (a 503).
    ("503 billing: insufficient funds", None, false),
    ("tool error: 503 from the tool", None, false),
    // No verdict: the classifier decides.
    ("503 Service Unavailable", None, true),
    ("401 unauthorized", None, false),
    // The host's own verdict stays.
    ("stream stalled", Some(false), false),
    ("503 billing: insufficient funds", Some(true), true),
    // An overflow is never retried, whatever a rule says.
    ("upstream_error: prompt is too long", None, false),
];

#[entry]
fn main() -> ! {
    let mut failures = 0u32;
    let mut check = |ok: bool, what: &str, text: &str| {
        if !ok {
            failures += 1;
            hprintln!("FAIL {}: {:?}", what, text);
        }
    };

    let rules = match Rules::from_bytes(BLOB) {
        Ok(rules) => rules,
        Err(e) => {
            hprintln!("the example blob does not load: {}", e);
            debug::exit(debug::EXIT_FAILURE);
            #[allow(clippy::empty_loop)]
            loop {}
        }
    };
    check(
        (rules.never_len(), rules.retry_len()) == (3, 4),
        "rule counts",
        "",
    );

    // Truncated blobs are refused, every length up to the whole.
    let mut refused = 0usize;
    for len in 0..BLOB.len() {
        match Rules::from_bytes(&BLOB[..len]) {
            Err(RulesError::Truncated { .. }) | Err(RulesError::Foreign) => refused += 1,
            _ => check(false, "a truncated blob", ""),
        }
    }

    for &(text, verdict) in VERDICTS {
        check(rules.verdict(text) == verdict, "verdict", text);
    }

    for &(text, own, retries) in CHAINS {
        let mut message = AssistantMessage::error(text);
        message.should_retry = own;
        let mut machine = Machine::default();
        let input = rules.apply_input(Input::AgentEnd {
            message,
            now_ms: None,
        });
        match machine.handle(input) {
            Ok(out) => {
                let started = matches!(out.first(), Some(Output::Emit(Event::Start { .. })));
                check(
                    started == retries && machine.is_retrying() == retries,
                    "chain",
                    text,
                );
            }
            Err(_) => check(false, "refused", text),
        }
    }

    hprintln!(
        "autoretry rules on thumbv7m: {} bytes of blob, {} truncations refused, {} verdicts, {} chains, {} failures",
        BLOB.len(),
        refused,
        VERDICTS.len(),
        CHAINS.len(),
        failures
    );
    debug::exit(if failures == 0 {
        debug::EXIT_SUCCESS
    } else {
        debug::EXIT_FAILURE
    });
    #[allow(clippy::empty_loop)]
    loop {}
}

/// Reports the panic and exits non-zero.
#[panic_handler]
fn panic(info: &PanicInfo) -> ! {
    hprintln!("panic: {}", info);
    debug::exit(debug::EXIT_FAILURE);
    #[allow(clippy::empty_loop)]
    loop {}
}
