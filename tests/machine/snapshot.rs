//! Snapshots on every vector: before every step of every scenario (both
//! folders), the machine is saved, encoded (postcard, as a firmware would
//! store it, and JSON, as a server would move it), decoded and restored,
//! and the restored machine takes the step. Its outputs and state must be
//! the vector's, which the machine that was never saved gives too
//! (`vectors.rs`). Then damaged, foreign and other-version bytes.
#![cfg(feature = "json")]

use crate::common::scenarios::{refused, scenarios, FOLDERS};
use crate::common::{fail, ok, start};

use autoretry::{
    Event, FinalError, HostOptions, Input, Machine, Output, RetrySettings, Snapshot, SnapshotError,
};
use autoretry_testkit::forge::forge;
use autoretry_testkit::VectorHost;
use serde_json::Value;

/// `machine` through postcard and JSON and back.
fn round_trip(machine: &Machine) -> Machine {
    let mut buf = [0; Snapshot::MAX_POSTCARD_LEN];
    let bytes = postcard::to_slice(&machine.snapshot(), &mut buf).expect("fits the buffer");
    let decoded: Snapshot = postcard::from_bytes(bytes).expect("postcard decodes");
    let restored = Machine::restore(decoded).expect("restores");
    let json = serde_json::to_string(&restored.snapshot()).unwrap();
    let decoded: Snapshot = serde_json::from_str(&json).expect("JSON decodes");
    Machine::restore(decoded).expect("restores")
}

#[test]
fn a_restored_machine_takes_every_step_of_every_vector() {
    let mut steps = 0;
    for (folder, _) in FOLDERS {
        for scenario in scenarios(folder) {
            let header = &scenario.header;
            let mut machine = Machine::new(header.settings, header.host);
            let mut host = VectorHost::<String>::new();
            for (input, want, at) in &scenario.steps {
                let restored = round_trip(&machine);
                assert_eq!(restored, machine, "{at}: restored differs");
                machine = restored;
                steps += 1;
                let marked = host.marked_text().to_owned();
                let Ok(input) = input.as_input(&marked) else {
                    assert!(refused(want), "{at}");
                    continue;
                };
                let Some(input) = host.machine_input(input) else {
                    // A timer never produced: nothing to feed.
                    assert_eq!(want["out"], Value::Array(Vec::new()), "{at}");
                    continue;
                };
                let outputs = machine.handle(input);
                assert_eq!(outputs.is_err(), refused(want), "{at}: refused");
                let out: Vec<Value> = outputs
                    .unwrap_or_default()
                    .into_iter()
                    .map(|o| serde_json::to_value(host.vector_output(&input, o)).unwrap())
                    .collect();
                assert_eq!(Value::Array(out), want["out"], "{at}: outputs");
                let state = serde_json::to_value(machine.state()).unwrap();
                assert_eq!(state, want["state"], "{at}: state");
            }
            // And after the last step.
            assert_eq!(round_trip(&machine), machine);
        }
    }
    assert!(steps >= 456, "only {steps} steps");
}

#[test]
fn bad_bytes_are_errors_never_panics() {
    let mut buf = [0; Snapshot::MAX_POSTCARD_LEN];
    let bytes = postcard::to_slice(&Machine::default().snapshot(), &mut buf).unwrap();
    let good = bytes.to_vec();
    // Every truncation.
    for len in 0..good.len() {
        assert!(
            postcard::from_bytes::<Snapshot>(&good[..len]).is_err(),
            "{len}"
        );
    }
    // Every single-bit change: a decode error or a refused snapshot.
    for at in 0..good.len() {
        for bit in 0..8 {
            let mut bad = good.clone();
            bad[at] ^= 1 << bit;
            if let Ok(snapshot) = postcard::from_bytes::<Snapshot>(&bad) {
                assert!(Machine::restore(snapshot).is_err(), "byte {at} bit {bit}");
            }
        }
    }
    // Foreign bytes: a settings group, text, noise.
    for foreign in [
        &b"{\"maxRetries\":3}"[..],
        b"hello, machine",
        &[0xff; 64],
        &[1; 64],
    ] {
        if let Ok(snapshot) = postcard::from_bytes::<Snapshot>(foreign) {
            assert!(Machine::restore(snapshot).is_err(), "{foreign:?}");
        }
    }
    // Another version, with a correct digest.
    let newer = Machine::default()
        .snapshot()
        .with_version(Snapshot::VERSION + 1);
    let bytes = postcard::to_slice(&newer, &mut buf).unwrap();
    let err = Machine::restore(postcard::from_bytes(bytes).unwrap()).unwrap_err();
    assert_eq!(
        err,
        SnapshotError::Version {
            found: Snapshot::VERSION + 1
        }
    );
    // JSON: a missing or unknown field is a decode error naming it.
    let json = serde_json::to_value(Machine::default().snapshot()).unwrap();
    let mut extra = json.clone();
    extra["pending"] = Value::Bool(true);
    let err = serde_json::from_value::<Snapshot>(extra).unwrap_err();
    assert!(err.to_string().contains("pending"), "{err}");
    let mut missing = json;
    missing.as_object_mut().unwrap().remove("attempt");
    let err = serde_json::from_value::<Snapshot>(missing).unwrap_err();
    assert!(err.to_string().contains("attempt"), "{err}");
}

/// A machine awaiting the usage-limit answer for `CODEX`, at attempt 1,
/// `maxRetries = 3`, its wait of 2000 ms under no ceiling.
fn awaiting() -> Machine {
    let host = HostOptions::DEFAULT.with_credential_store(true);
    let mut m = Machine::new(RetrySettings::DEFAULT, host);
    let out = m.handle(fail(CODEX)).unwrap();
    assert!(matches!(out[..], [Output::MarkUsageLimit { .. }]));
    m
}

const CODEX: &str = "usage_limit_reached";

/// `snapshot` forged with `edits` (field, value).
fn forged(snapshot: Snapshot, edits: &[(&str, u64)]) -> Snapshot {
    forge(snapshot, |f| {
        for &(field, value) in edits {
            f[field] = value.into();
        }
    })
}

#[test]
fn kept_usage_limit_figures_must_be_ones_a_decision_fixes() {
    let answer = |switched| Input::UsageLimitMarked {
        switched,
        error_message: CODEX,
    };
    // The decision passed the max check: its attempt is within the kept
    // maxAttempts.
    let above_max = forged(
        awaiting().snapshot(),
        &[("attempt", 4), ("timer", 3), ("marked_max_attempts", 1)],
    );
    let err = Machine::restore(above_max).unwrap_err();
    assert_eq!(
        err,
        SnapshotError::Inconsistent(
            "a usage-limit answer awaited for an attempt above its kept maxAttempts"
        )
    );
    assert!(err.to_string().contains("maxAttempts"), "{err}");
    // At the kept maxAttempts, it is a state a machine reaches.
    let at_max = forged(
        awaiting().snapshot(),
        &[("attempt", 4), ("timer", 3), ("marked_max_attempts", 4)],
    );
    let mut m = Machine::restore(at_max).unwrap();
    assert_eq!(ok(&mut m, answer(true))[0], start(4, 4, 0, CODEX));

    // A kept ceiling is one the kept delay exceeds (spec §10.3 step 8).
    for delay in [0, 5] {
        let not_exceeded = forged(
            awaiting().snapshot(),
            &[("marked_delay_ms", delay), ("marked_ceiling_ms", 5)],
        );
        assert_eq!(
            Machine::restore(not_exceeded),
            Err(SnapshotError::Inconsistent(
                "a kept wait ceiling that the kept delay does not exceed"
            ))
        );
    }
    let exceeded = forged(
        awaiting().snapshot(),
        &[("marked_delay_ms", 6), ("marked_ceiling_ms", 5)],
    );
    let mut m = Machine::restore(exceeded).unwrap();
    let out = ok(&mut m, answer(false));
    assert!(
        matches!(
            out[0],
            Output::Emit(Event::End {
                final_error: Some(FinalError::WaitTooLong {
                    requested_ms: 6,
                    max_delay_ms: 5,
                    ..
                }),
                ..
            })
        ),
        "{out:?}"
    );
}

#[test]
fn every_retry_started_has_its_own_timer_id() {
    let inconsistent =
        |snapshot, edits: &[(&str, u64)]| match Machine::restore(forged(snapshot, edits)) {
            Err(SnapshotError::Inconsistent(why)) => why,
            other => panic!("{edits:?}: {other:?}"),
        };
    let mut backoff = Machine::default();
    let _ = backoff.handle(fail("overloaded_error")).unwrap();
    let mut running = backoff.clone();
    let timer = running.pending_timer().unwrap();
    let _ = running.handle(Input::TimerFired { timer }).unwrap();
    for m in [&backoff, &running] {
        // Attempt 2 had two sleeps: ids 1 and 2 at least.
        let why = inconsistent(m.snapshot(), &[("attempt", 2), ("timer", 1)]);
        assert!(why.contains("timer id"), "{why}");
        assert!(Machine::restore(forged(m.snapshot(), &[("attempt", 2), ("timer", 2)])).is_ok());
    }
    // Awaiting the answer for attempt 3, two sleeps were had.
    let why = inconsistent(awaiting().snapshot(), &[("attempt", 3), ("timer", 1)]);
    assert!(why.contains("timer id"), "{why}");
    let two = forged(awaiting().snapshot(), &[("attempt", 3), ("timer", 2)]);
    assert!(Machine::restore(two).is_ok());
    // With every timer id issued no decision awaits the answer (its start
    // would have no id): the machine ends such a chain as past the max.
    let why = inconsistent(awaiting().snapshot(), &[("timer", u64::MAX)]);
    assert!(why.contains("no timer id left"), "{why}");
    // Idle, every id issued: reachable (counters.rs: no id is used again).
    let exhausted = forged(Machine::default().snapshot(), &[("timer", u64::MAX)]);
    assert!(Machine::restore(exhausted).is_ok());
}

/// A snapshot that awaits the model-switch answer keeps the figures the
/// policy reason was found with (spec §11.3): over the ceiling, the kept
/// delay exceeds the kept `maxDelayMs` (§10.3 step 8); over the total, the
/// chain's total plus the kept delay exceeds the kept `maxTotalDelayMs`
/// (§11.6). Restore takes forged figures that do not, and the answer
/// "not switched" then ends the chain with a sentence that is false
/// ("Retry waits would total 2000ms, exceeds retry.maxTotalDelayMs
/// (5000ms)"), a state no machine reaches.
#[test]
fn kept_model_question_figures_must_be_ones_a_decision_fixes() {
    use autoretry::{AssistantMessage, FallbackReason};
    // Over the total: 2000 ms of a 1000 ms total; the question is asked.
    let total = RetrySettings::DEFAULT
        .with_model_fallback(true)
        .with_max_total_delay_ms(1000);
    let mut m = Machine::new(total, HostOptions::DEFAULT);
    assert_eq!(
        ok(&mut m, fail("503")),
        [Output::SwitchModel {
            reason: FallbackReason::TotalWait
        }]
    );
    for limit in [0, 2000, 5000] {
        let within = forged(m.snapshot(), &[("marked_total_limit_ms", limit)]);
        assert!(
            matches!(
                Machine::restore(within),
                Err(SnapshotError::Inconsistent(_))
            ),
            "a total of 2000 ms kept with a limit of {limit} ms"
        );
    }
    // Over the ceiling: 400,000 ms asked for, over 300,000.
    let ceiling = RetrySettings::DEFAULT
        .with_model_fallback(true)
        .with_honor_hints(true)
        .with_max_delay_ms(300_000);
    let mut m = Machine::new(ceiling, HostOptions::DEFAULT);
    let asked = Input::AgentEnd {
        message: AssistantMessage::error("503").with_retry_after_ms(400_000),
        now_ms: None,
    };
    assert_eq!(
        ok(&mut m, asked),
        [Output::SwitchModel {
            reason: FallbackReason::WaitTooLong
        }]
    );
    for kept in [0, 400_000, 500_000] {
        let within = forged(m.snapshot(), &[("marked_ceiling_ms", kept)]);
        assert!(
            matches!(
                Machine::restore(within),
                Err(SnapshotError::Inconsistent(_))
            ),
            "a wait of 400,000 ms kept with a ceiling of {kept} ms"
        );
    }
}

/// A snapshot that a build of format version 1 wrote (before spec §11),
/// in postcard and in JSON, restores as the machine it saved.
#[test]
fn version_1_snapshots_of_an_earlier_build_restore() {
    use autoretry::{AssistantMessage, Snapshot, SnapshotV1};
    let mut saved = Machine::new(
        RetrySettings::DEFAULT.with_max_retries(5),
        HostOptions::DEFAULT
            .with_seed(9)
            .with_context_window(200_000),
    );
    let _ = saved
        .handle(Input::agent_end(AssistantMessage::error(
            "529 overloaded_error",
        )))
        .unwrap();
    // Written by the build at 1e84999, which read and wrote version 1.
    let postcard_bytes: &[u8] = &[
        1, 178, 190, 132, 158, 13, 0, 1, 5, 208, 15, 0, 0, 0, 0, 0, 192, 154, 12, 0, 9, 1, 2, 1, 0,
        0, 0, 0,
    ];
    let json = r#"{"version":1,"check":3552649010,"profile":0,"enabled":true,"max_retries":5,"base_delay_ms":2000,"max_delay_ms":0,"backoff_cap_ms":0,"jitter_pct":0,"honor_hints":false,"classifier":0,"context_window":200000,"credential_store":false,"jitter_state":9,"timer":1,"phase":2,"attempt":1,"marked_delay_ms":0,"marked_ceiling_ms":0,"marked_max_attempts":0,"marked_text_digest":0}"#;
    // Version 1 kept no chain total (spec §11.6): it counts from 0, which
    // matters only once a total limit is set.
    let same_as_saved = |mut restored: Machine| {
        assert_eq!(restored.state(), saved.state());
        assert_eq!(restored.settings(), saved.settings());
        assert_eq!(restored.host_options(), saved.host_options());
        let mut live = saved.clone();
        let timer = restored.pending_timer().unwrap();
        assert_eq!(live.pending_timer(), Some(timer));
        for input in [Input::timer_fired(timer), fail("529 overloaded_error")] {
            assert_eq!(restored.handle(input), live.handle(input));
        }
    };
    let v1: SnapshotV1 = postcard::from_bytes(postcard_bytes).unwrap();
    same_as_saved(Machine::restore(Snapshot::from(v1)).unwrap());
    let from_json: Snapshot = serde_json::from_str(json).unwrap();
    same_as_saved(Machine::restore(from_json).unwrap());
    // Positional bytes of version 1 are too short for version 2.
    assert!(postcard::from_bytes::<Snapshot>(postcard_bytes).is_err());
}

/// Whether `snapshot` is refused as inconsistent, with `why` in its reason.
fn refused_as(snapshot: Snapshot, why: &str) {
    match Machine::restore(snapshot) {
        Err(SnapshotError::Inconsistent(reason)) => assert!(reason.contains(why), "{reason}"),
        other => panic!("expected a refusal naming {why:?}: {other:?}"),
    }
}

/// A machine that asks for another model over the ceiling (spec §11.3)
/// for a usage limit whose 400,000 ms wait is within `maxUsageWaitMs`
/// (§11.5): the answer "not switched" starts that wait.
fn asked_over_the_ceiling() -> Machine {
    use autoretry::{AssistantMessage, FallbackReason};
    let settings = RetrySettings::DEFAULT
        .with_max_retries(10)
        .with_model_fallback(true)
        .with_honor_hints(true)
        .with_max_delay_ms(300_000)
        .with_max_usage_wait_ms(1_000_000);
    let mut m = Machine::new(settings, HostOptions::DEFAULT);
    let input = Input::AgentEnd {
        message: AssistantMessage::error(CODEX).with_retry_after_ms(400_000),
        now_ms: None,
    };
    assert_eq!(
        ok(&mut m, input),
        [Output::SwitchModel {
            reason: FallbackReason::WaitTooLong
        }]
    );
    m
}

/// Awaiting the model-switch answer, every retry started has its timer id,
/// as while the usage-limit answer is awaited: attempt 5 was decided after
/// four starts. Restore took timer id 0, and the answer "not switched"
/// then started the usage-reset wait at attempt 5 with timer id 1, a state
/// whose own snapshot is refused.
#[test]
fn a_model_question_at_attempt_5_needs_four_timer_ids() {
    let asked = asked_over_the_ceiling().snapshot();
    refused_as(forged(asked, &[("attempt", 5), ("timer", 0)]), "timer id");
    refused_as(forged(asked, &[("attempt", 5), ("timer", 3)]), "timer id");
    // With four ids issued the state is one a machine reaches, and so is
    // each state after it.
    let mut m = Machine::restore(forged(asked, &[("attempt", 5), ("timer", 4)])).unwrap();
    let out = ok(
        &mut m,
        Input::ModelSwitched {
            switched: false,
            error_message: CODEX,
        },
    );
    assert_eq!(out[0], start(5, 10, 400_000, CODEX));
    assert_eq!(Machine::restore(m.snapshot()), Ok(m));
}

/// A continuation (spec §11.2) never asks for another model (§11.3): a
/// decision kept for one cannot be allowed to.
#[test]
fn a_continuation_is_never_allowed_to_ask_for_a_model() {
    use autoretry::{AssistantMessage, Partial};
    let settings = RetrySettings::DEFAULT
        .with_model_fallback(true)
        .with_max_delay_ms(1000);
    let host = HostOptions::DEFAULT.with_credential_store(true);
    let mut m = Machine::new(settings, host);
    let cut = Input::AgentEnd {
        message: AssistantMessage::error(CODEX).with_partial(Partial::Text),
        now_ms: None,
    };
    assert!(matches!(
        ok(&mut m, cut)[..],
        [Output::MarkUsageLimit { .. }]
    ));
    let kept = m.snapshot();
    assert_eq!(Machine::restore(kept).as_ref(), Ok(&m));
    // Its flags: continuation (8). With "may ask" (1) too, the answer "not
    // switched" over the ceiling would ask for a model for a continuation.
    let flags = serde_json::to_value(kept).unwrap()["marked_flags"]
        .as_u64()
        .unwrap();
    assert_eq!(flags & 9, 8);
    refused_as(
        forged(kept, &[("marked_flags", flags | 1)]),
        "continuation allowed to ask",
    );
}

/// The flag of the attempt past u32::MAX (spec §5.1.1) is set only when
/// the kept attempt is u32::MAX: at attempt 1 the answer "not switched"
/// would end a chain reporting attempt 1, a retry that never started.
#[test]
fn the_attempt_past_u32_max_is_flagged_only_at_u32_max() {
    let mut m = Machine::new(
        RetrySettings::DEFAULT
            .with_max_retries(0)
            .with_model_fallback(true),
        HostOptions::DEFAULT,
    );
    let _ = ok(&mut m, fail(CODEX)); // exhausted at once: the question
    assert!(m.awaits_model_switch_answer());
    let flags = serde_json::to_value(m.snapshot()).unwrap()["marked_flags"]
        .as_u64()
        .unwrap();
    refused_as(
        forged(m.snapshot(), &[("marked_flags", flags | 16)]),
        "past u32::MAX",
    );
    // At u32::MAX, with u32::MAX ids issued, it is reachable.
    let beyond = forged(
        m.snapshot(),
        &[
            ("marked_flags", flags | 16),
            ("attempt", u64::from(u32::MAX)),
            ("timer", u64::from(u32::MAX)),
        ],
    );
    assert!(Machine::restore(beyond).is_ok());
    refused_as(
        forged(beyond, &[("timer", u64::from(u32::MAX) - 1)]),
        "timer id",
    );
}

/// The other figures a model question keeps, as its decision fixes them
/// (spec §11.7): the reason is "exhausted" exactly when the max check
/// fails; the max check and the throttle keep no wait; a total-wait
/// question over a kept ceiling checked a wait of 0 (a switched
/// credential); a new chain's decision has a total of 0.
#[test]
fn a_model_question_keeps_the_figures_of_its_reason() {
    use autoretry::FallbackReason;
    let reason =
        |r: FallbackReason| FallbackReason::ALL.iter().position(|&x| x == r).unwrap() as u64;
    let mut exhausted = Machine::new(
        RetrySettings::DEFAULT
            .with_max_retries(0)
            .with_model_fallback(true),
        HostOptions::DEFAULT,
    );
    let _ = ok(&mut exhausted, fail(CODEX));
    let exhausted = exhausted.snapshot();
    // Within the maximum, the max check passed: not "exhausted".
    refused_as(
        forged(exhausted, &[("marked_max_attempts", 1)]),
        "max check",
    );
    // Past it, nothing else is asked about.
    refused_as(
        forged(
            exhausted,
            &[("marked_reason", reason(FallbackReason::Throttled))],
        ),
        "max check",
    );
    // No wait was computed.
    for edit in [("marked_delay_ms", 5), ("marked_ceiling_ms", 5)] {
        refused_as(forged(exhausted, &[edit]), "wait kept");
    }
    // A new chain's decision: no earlier waits in its total.
    refused_as(
        forged(exhausted, &[("total_ms", 1)]),
        "total of earlier waits",
    );
    // Over the total with a kept ceiling: only with a wait of 0.
    let over_total = forged(
        asked_over_the_ceiling().snapshot(),
        &[
            ("marked_reason", reason(FallbackReason::TotalWait)),
            ("marked_total_limit_ms", 1),
        ],
    );
    refused_as(over_total, "wait other than 0");
    let switched_credential = forged(
        over_total,
        &[
            ("marked_delay_ms", 0),
            ("attempt", 2),
            ("timer", 1),
            ("total_ms", 2),
        ],
    );
    assert!(Machine::restore(switched_credential).is_ok());
}
