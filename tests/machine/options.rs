//! The policy options of spec section 10: every vector of
//! `tests/vectors/options/` through the library API, and one test per
//! behaviour (presets, cap, ceiling, fail fast on each path, the jitter
//! generator and its range, hints, the host's message fields, strict
//! decoding of the new keys).
#![cfg(feature = "json")]

use crate::common;

use autoretry::classify::Classifier;
use autoretry::wire::json::{settings_from_json, InputLine};
use autoretry::wire::SettingsGroup;
use autoretry::{
    AssistantMessage, Event, FinalError, HostOptions, Input, JitterPct, Machine, Output, Profile,
    RetrySettings, StopReason, Usage,
};
use autoretry_testkit::SplitMix64;
use common::vectors::replay_folder_passes;
use common::*;
use proptest::prelude::*;

use crate::common::proptest_config;

/// Where this file's failing cases are kept.
const REGRESSIONS: &str = "proptest-regressions/tests/machine/options.txt";
use serde_json::json;

// ---------------------------------------------------------------------------
// The option vectors
// ---------------------------------------------------------------------------

#[test]
fn every_option_vector_step_passes() {
    // The shared set at the time of writing: 16 files, 16 scenarios, 126
    // steps.
    replay_folder_passes("tests/vectors/options", (16, 16, 126));
}

// ---------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------

fn machine(settings: RetrySettings) -> Machine {
    Machine::new(settings, HostOptions::DEFAULT)
}

fn at(message: AssistantMessage<'_>, now_ms: Option<u64>) -> Input<'_> {
    Input::AgentEnd { message, now_ms }
}

/// The `delayMs` of the start among the outputs, if any.
fn delay_of(out: &[Output<'_>]) -> Option<u64> {
    out.iter().find_map(|o| match o {
        Output::Emit(Event::Start { delay_ms, .. }) => Some(*delay_ms),
        _ => None,
    })
}

/// Runs a failure that starts a retry and lets its timer fire; the delay.
fn retry(m: &mut Machine, input: Input<'_>) -> u64 {
    let out = ok(m, input);
    let delay = delay_of(&out).unwrap_or_else(|| panic!("no start: {out:?}"));
    assert_eq!(ok(m, fired(timer_of(&out))), [Output::ContinueAgent]);
    delay
}

fn wait_too_long(requested_ms: u64, max_delay_ms: u64, error: &str) -> FinalError<'_> {
    FinalError::WaitTooLong {
        requested_ms,
        max_delay_ms,
        error: error.into(),
    }
}

/// The draws `r` of spec 10.6 from `seed`.
fn draws(seed: u64, n: usize) -> Vec<u32> {
    let mut rng = SplitMix64::new(seed);
    (0..n).map(|_| rng.draw()).collect()
}

/// Step 4 of 10.3 in plain 128-bit arithmetic.
fn jittered(backoff: u64, pct: u8, r: u32) -> u64 {
    let share = u128::from(backoff) * u128::from(pct) * u128::from(r) / (100u128 << 32);
    backoff - u64::try_from(share).unwrap()
}

// ---------------------------------------------------------------------------
// Presets and settings
// ---------------------------------------------------------------------------

#[test]
fn the_presets_are_the_columns_of_10_1() {
    assert_eq!(RetrySettings::CLASSIC, RetrySettings::DEFAULT);
    assert_eq!(RetrySettings::default(), RetrySettings::CLASSIC);
    let c = RetrySettings::CLASSIC;
    assert_eq!(
        (
            c.profile,
            c.enabled,
            c.max_retries,
            c.base_delay_ms,
            c.max_delay_ms,
            c.backoff_cap_ms,
            c.jitter_pct.get(),
            c.honor_hints,
            c.classifier
        ),
        (
            Profile::Classic,
            true,
            3,
            2000,
            0,
            0,
            0,
            false,
            Classifier::Classic
        )
    );
    let m = RetrySettings::MODERN;
    assert_eq!(
        (
            m.profile,
            m.enabled,
            m.max_retries,
            m.base_delay_ms,
            m.max_delay_ms,
            m.backoff_cap_ms,
            m.jitter_pct.get(),
            m.honor_hints,
            m.classifier
        ),
        (
            Profile::Modern,
            true,
            10,
            500,
            300_000,
            8000,
            25,
            true,
            Classifier::Extended
        )
    );
    assert_eq!(Profile::Classic.defaults(), RetrySettings::CLASSIC);
    assert_eq!(Profile::Modern.defaults(), RetrySettings::MODERN);
    assert_eq!(HostOptions::DEFAULT, HostOptions::default());
    assert_eq!(HostOptions::DEFAULT.seed, 0);
    // The presets decode from the profile alone.
    for (group, want) in [
        (json!({}), RetrySettings::CLASSIC),
        (json!({"profile": "classic"}), RetrySettings::CLASSIC),
        (json!({"profile": "modern"}), RetrySettings::MODERN),
    ] {
        assert_eq!(settings_from_json(&group).unwrap(), want, "{group}");
    }
}

#[test]
fn jitter_pct_cannot_hold_more_than_100() {
    assert_eq!(JitterPct::new(0), Some(JitterPct::ZERO));
    assert_eq!(JitterPct::new(100), Some(JitterPct::MAX));
    for pct in 101..=u8::MAX {
        assert_eq!(JitterPct::new(pct), None);
        assert_eq!(JitterPct::saturating(pct), JitterPct::MAX);
    }
    assert_eq!(JitterPct::saturating(42).get(), 42);
}

#[test]
fn a_missing_key_takes_the_default_of_the_groups_profile() {
    // `profile` may come after the keys it fills.
    let s = settings_from_json(&json!({"maxRetries": 2, "profile": "modern"})).unwrap();
    assert_eq!(s, RetrySettings::MODERN.with_max_retries(2));
    let s =
        settings_from_json(&json!({"profile": "modern", "classifier": "classic", "jitterPct": 0}))
            .unwrap();
    assert_eq!(
        s,
        RetrySettings::MODERN
            .with_classifier(Classifier::Classic)
            .with_jitter_pct(JitterPct::ZERO)
    );
    let s = settings_from_json(&json!({
        "maxDelayMs": 18446744073709551615u64, "backoffCapMs": 0, "jitterPct": 100,
        "honorHints": true, "classifier": "extended"
    }))
    .unwrap();
    assert_eq!(
        s,
        RetrySettings::CLASSIC
            .with_max_delay_ms(u64::MAX)
            .with_jitter_pct(JitterPct::MAX)
            .with_honor_hints(true)
            .with_classifier(Classifier::Extended)
    );
}

#[test]
fn bad_option_values_are_refused_naming_the_key() {
    let err = |group: serde_json::Value| settings_from_json(&group).unwrap_err().to_string();
    let cases = [
        (
            json!({"profile": "fast"}),
            r#"retry.profile: expected "classic" or "modern", found a string "fast""#,
        ),
        (
            json!({"profile": null}),
            r#"retry.profile: expected "classic" or "modern", found null"#,
        ),
        (
            json!({"profile": "Modern"}),
            r#"retry.profile: expected "classic" or "modern", found a string "Modern""#,
        ),
        (
            json!({"profile": 1}),
            r#"retry.profile: expected "classic" or "modern", found 1"#,
        ),
        (
            json!({"classifier": "strict"}),
            r#"retry.classifier: expected "classic", "extended" or "curated", found a string "strict""#,
        ),
        (
            json!({"classifier": null}),
            r#"retry.classifier: expected "classic", "extended" or "curated", found null"#,
        ),
        (
            json!({"classifier": ["classic"]}),
            r#"retry.classifier: expected "classic", "extended" or "curated", found an array"#,
        ),
        (
            json!({"jitterPct": 101}),
            "retry.jitterPct: expected an integer from 0 to 100, found 101",
        ),
        (
            json!({"jitterPct": -1}),
            "retry.jitterPct: expected an integer from 0 to 100, found -1",
        ),
        (
            json!({"jitterPct": 25.0}),
            "retry.jitterPct: expected an integer from 0 to 100, found a number that is not a plain integer literal in range (25.0)",
        ),
        (
            json!({"jitterPct": "25"}),
            r#"retry.jitterPct: expected an integer from 0 to 100, found a string "25""#,
        ),
        (
            json!({"honorHints": "yes"}),
            r#"retry.honorHints: expected a boolean, found a string "yes""#,
        ),
        (
            json!({"honorHints": null}),
            "retry.honorHints: expected a boolean, found null",
        ),
        (
            json!({"maxDelayMs": -1}),
            "retry.maxDelayMs: expected a non-negative integer that fits u64, found -1",
        ),
        (
            json!({"backoffCapMs": 1.5}),
            "retry.backoffCapMs: expected a non-negative integer that fits u64, found a number that is not a plain integer literal in range (1.5)",
        ),
        (
            json!({"backoffCapMs": null}),
            "retry.backoffCapMs: expected a non-negative integer that fits u64, found null",
        ),
        (json!({"seed": 1}), r#"retry: unknown key "seed""#),
    ];
    for (group, want) in cases {
        assert_eq!(err(group.clone()), want, "{group}");
    }
    // From text: `1e3`, `-0` and integers beyond u64 are not plain literals.
    for text in [
        r#"{"maxDelayMs":1e3}"#,
        r#"{"maxDelayMs":-0}"#,
        r#"{"backoffCapMs":18446744073709551616}"#,
        r#"{"jitterPct":1e1}"#,
    ] {
        let e = serde_json::from_str::<SettingsGroup>(text)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("retry.maxDelayMs: expected")
                || e.starts_with("retry.backoffCapMs: expected")
                || e.starts_with("retry.jitterPct: expected"),
            "{text}: {e}"
        );
    }
    let e = serde_json::from_str::<SettingsGroup>(r#"{"profile":"modern","profile":"classic"}"#)
        .unwrap_err()
        .to_string();
    assert!(e.starts_with(r#"retry: duplicate key "profile""#), "{e}");
}

#[test]
fn refused_settings_change_nothing() {
    let mut m = machine(RetrySettings::MODERN);
    let input =
        InputLine::from_json(&json!({"type": "settings", "settings": {"jitterPct": 101}})).unwrap();
    assert!(input.as_input("").is_err(), "an invalid group is refused");
    assert_eq!(m.settings(), RetrySettings::MODERN);
    let good = InputLine::from_json(
        &json!({"type": "settings", "settings": {"profile": "modern", "maxRetries": 2}}),
    )
    .unwrap();
    assert!(ok(&mut m, good.as_input("").unwrap()).is_empty());
    assert_eq!(m.settings(), RetrySettings::MODERN.with_max_retries(2));
}

#[test]
fn settings_serialize_so_that_they_decode_back() {
    let text = |s: RetrySettings| serde_json::to_string(&SettingsGroup(s)).unwrap();
    assert_eq!(
        text(RetrySettings::CLASSIC),
        r#"{"enabled":true,"maxRetries":3,"baseDelayMs":2000}"#
    );
    assert_eq!(
        text(RetrySettings::MODERN),
        r#"{"profile":"modern","enabled":true,"maxRetries":10,"baseDelayMs":500}"#
    );
    assert_eq!(
        text(
            RetrySettings::CLASSIC
                .with_max_delay_ms(5)
                .with_honor_hints(true)
        ),
        r#"{"enabled":true,"maxRetries":3,"baseDelayMs":2000,"maxDelayMs":5,"honorHints":true}"#
    );
    assert_eq!(
        text(
            RetrySettings::MODERN
                .with_backoff_cap_ms(0)
                .with_jitter_pct(JitterPct::MAX)
                .with_classifier(Classifier::Classic)
        ),
        r#"{"profile":"modern","enabled":true,"maxRetries":10,"baseDelayMs":500,"backoffCapMs":0,"jitterPct":100,"classifier":"classic"}"#
    );
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    #[test]
    fn every_settings_value_round_trips(
        modern in any::<bool>(),
        enabled in any::<bool>(),
        max_retries in any::<u32>(),
        base in any::<u64>(),
        ceiling in prop_oneof![Just(0u64), Just(300_000), any::<u64>()],
        cap in prop_oneof![Just(0u64), Just(8000), any::<u64>()],
        pct in 0u8..=100,
        honor in any::<bool>(),
        extended in any::<bool>(),
    ) {
        let s = if modern { RetrySettings::MODERN } else { RetrySettings::CLASSIC }
            .with_enabled(enabled)
            .with_max_retries(max_retries)
            .with_base_delay_ms(base)
            .with_max_delay_ms(ceiling)
            .with_backoff_cap_ms(cap)
            .with_jitter_pct(JitterPct::new(pct).unwrap())
            .with_honor_hints(honor)
            .with_classifier(if extended { Classifier::Extended } else { Classifier::Classic });
        let text = serde_json::to_string(&SettingsGroup(s)).unwrap();
        let SettingsGroup(back) = serde_json::from_str(&text).unwrap();
        prop_assert_eq!(back, s, "{}", text);
    }
}

// ---------------------------------------------------------------------------
// The wait (10.3): cap and ceiling
// ---------------------------------------------------------------------------

#[test]
fn the_cap_and_the_ceiling_bound_the_backoff() {
    let mut m = machine(
        RetrySettings::DEFAULT
            .with_max_retries(8)
            .with_base_delay_ms(1000)
            .with_backoff_cap_ms(6000),
    );
    let delays: Vec<u64> = (0..6).map(|_| retry(&mut m, fail("overloaded"))).collect();
    assert_eq!(delays, [1000, 2000, 4000, 6000, 6000, 6000]);

    // The ceiling bounds the backoff too (step 3): a backoff alone never
    // fails fast.
    let mut m = machine(
        RetrySettings::DEFAULT
            .with_max_retries(5)
            .with_max_delay_ms(5000),
    );
    let delays: Vec<u64> = (0..5).map(|_| retry(&mut m, fail("overloaded"))).collect();
    assert_eq!(delays, [2000, 4000, 5000, 5000, 5000]);

    // Saturated backoffs are capped exactly.
    let mut m = machine(
        RetrySettings::DEFAULT
            .with_base_delay_ms(u64::MAX)
            .with_backoff_cap_ms(u64::MAX - 1),
    );
    assert_eq!(retry(&mut m, fail("overloaded")), u64::MAX - 1);
}

// ---------------------------------------------------------------------------
// Fail fast (10.3 step 8)
// ---------------------------------------------------------------------------

const HOUR_HINT: &str = "429 rate limited retry-after-ms=3600000";

#[test]
fn a_hint_over_the_ceiling_fails_fast_at_once() {
    let mut m = machine(
        RetrySettings::DEFAULT
            .with_honor_hints(true)
            .with_max_delay_ms(60_000),
    );
    let out = ok(&mut m, fail(HOUR_HINT));
    assert_eq!(
        out,
        [
            Output::Emit(Event::End {
                success: false,
                attempt: 0,
                final_error: Some(wait_too_long(3_600_000, 60_000, HOUR_HINT)),
            }),
            Output::Settled,
            Output::CheckCompaction,
        ]
    );
    assert!(!m.is_retrying() && m.retry_attempt() == 0 && m.pending_timer().is_none());
    let Output::Emit(event) = out[0] else {
        unreachable!()
    };
    assert_eq!(
        event.to_string(),
        "Retry failed after 0 attempts: Provider requested 3600000ms wait, exceeds \
         retry.maxDelayMs (60000ms). Original error: 429 rate limited retry-after-ms=3600000"
    );
    // The next failure starts a fresh chain.
    assert_eq!(retry(&mut m, fail("overloaded")), 2000);
    assert_eq!(m.retry_attempt(), 1);
}

#[test]
fn fail_fast_mid_chain_reports_the_retries_made() {
    let mut m = machine(
        RetrySettings::DEFAULT
            .with_honor_hints(true)
            .with_max_delay_ms(60_000),
    );
    retry(&mut m, fail("overloaded"));
    retry(&mut m, fail("overloaded"));
    let out = ok(&mut m, fail(HOUR_HINT));
    assert_eq!(
        out[0],
        Output::Emit(Event::End {
            success: false,
            attempt: 2,
            final_error: Some(wait_too_long(3_600_000, 60_000, HOUR_HINT)),
        })
    );
    assert_eq!(out[1..], [Output::Settled, Output::CheckCompaction]);
}

#[test]
fn a_hint_at_the_ceiling_waits() {
    let mut m = machine(
        RetrySettings::DEFAULT
            .with_honor_hints(true)
            .with_max_delay_ms(3_600_000),
    );
    assert_eq!(retry(&mut m, fail(HOUR_HINT)), 3_600_000);
}

#[test]
fn without_honor_hints_or_a_ceiling_nothing_fails_fast() {
    // Hints ignored for the wait: the backoff.
    let mut m = machine(RetrySettings::DEFAULT.with_max_delay_ms(60_000));
    assert_eq!(retry(&mut m, fail(HOUR_HINT)), 2000);
    let mut m = machine(RetrySettings::DEFAULT.with_max_delay_ms(60_000));
    let host_hint = AssistantMessage::error("overloaded").with_retry_after_ms(u64::MAX);
    assert_eq!(retry(&mut m, at(host_hint, None)), 2000);
    // No ceiling: the hint is waited for, however long.
    let mut m = machine(RetrySettings::DEFAULT.with_honor_hints(true));
    assert_eq!(retry(&mut m, at(host_hint, None)), u64::MAX);
}

fn store(settings: RetrySettings) -> Machine {
    Machine::new(settings, HostOptions::DEFAULT.with_credential_store(true))
}

const LIMIT: &str = "usage_limit_reached retry-after-ms=7200000";

#[test]
fn on_the_hand_off_path_fail_fast_waits_for_the_answer() {
    let settings = RetrySettings::DEFAULT
        .with_honor_hints(true)
        .with_max_delay_ms(300_000);
    let mut m = store(settings);
    retry(&mut m, fail("overloaded"));
    assert_eq!(
        ok(&mut m, fail(LIMIT)),
        [Output::MarkUsageLimit {
            retry_after_ms: Some(7_200_000)
        }]
    );
    assert_eq!(m.retry_attempt(), 2);
    // Settings changed while the host answers do not move the figures.
    ok(&mut m, Input::Settings(RetrySettings::DEFAULT));
    let answer = Input::UsageLimitMarked {
        switched: false,
        error_message: LIMIT,
    };
    assert_eq!(
        ok(&mut m, answer),
        [
            Output::Emit(Event::End {
                success: false,
                attempt: 1,
                final_error: Some(wait_too_long(7_200_000, 300_000, LIMIT)),
            }),
            Output::Settled,
            Output::CheckCompaction,
        ]
    );
    assert!(!m.is_retrying());
    // A late second answer is ignored.
    assert!(ok(&mut m, answer).is_empty());
}

#[test]
fn a_switch_makes_the_wait_zero_and_skips_fail_fast() {
    let mut m = store(
        RetrySettings::DEFAULT
            .with_honor_hints(true)
            .with_max_delay_ms(300_000),
    );
    ok(&mut m, fail(LIMIT));
    let out = ok(
        &mut m,
        Input::UsageLimitMarked {
            switched: true,
            error_message: LIMIT,
        },
    );
    assert_eq!(
        out,
        [
            start(1, 3, 0, LIMIT),
            Output::DropTrailingError,
            Output::Sleep {
                ms: 0,
                timer: timer_of(&out)
            }
        ]
    );
}

#[test]
fn the_answer_without_fail_fast_starts_with_the_fixed_delay() {
    let mut m = store(
        RetrySettings::DEFAULT
            .with_honor_hints(true)
            .with_max_delay_ms(300_000),
    );
    let short = "usage limit retry-after-ms=90000";
    ok(&mut m, fail(short));
    // A ceiling set while the host answers does not apply to this retry.
    ok(
        &mut m,
        Input::Settings(RetrySettings::DEFAULT.with_max_delay_ms(1)),
    );
    let out = ok(
        &mut m,
        Input::UsageLimitMarked {
            switched: false,
            error_message: short,
        },
    );
    assert_eq!(out[0], start(1, 3, 90_000, short));
}

#[test]
fn cancelling_while_awaiting_the_answer_ends_as_6a_says() {
    let settings = RetrySettings::DEFAULT
        .with_honor_hints(true)
        .with_max_delay_ms(300_000);
    // First retry of the chain: only settled and check_compaction.
    let mut m = store(settings);
    ok(&mut m, fail(LIMIT));
    assert_eq!(
        ok(&mut m, Input::AbortRetry),
        [Output::Settled, Output::CheckCompaction]
    );
    let late = Input::UsageLimitMarked {
        switched: false,
        error_message: LIMIT,
    };
    assert!(ok(&mut m, late).is_empty(), "the late answer is ignored");
    assert_eq!(
        m.state(),
        Machine::new(settings, HostOptions::DEFAULT).state()
    );
    // Later in a chain: the end reports the retry before; abort adds abort_agent.
    let mut m = store(settings);
    retry(&mut m, fail("overloaded"));
    ok(&mut m, fail(LIMIT));
    assert_eq!(
        ok(&mut m, Input::Abort),
        [
            ended(false, 1, Some("Retry cancelled")),
            Output::Settled,
            Output::CheckCompaction,
            Output::AbortAgent,
        ]
    );
    // After a success in the same waiting period, a new chain cancelled
    // before its start emits no end.
    let mut m = store(settings);
    retry(&mut m, fail("overloaded"));
    ok(&mut m, message(StopReason::Stop));
    ok(&mut m, fail(LIMIT));
    assert_eq!(m.retry_attempt(), 1);
    assert_eq!(
        ok(&mut m, Input::AbortRetry),
        [Output::Settled, Output::CheckCompaction]
    );
}

// ---------------------------------------------------------------------------
// Hints (10.3 steps 5–7) and the host's message fields (10.2)
// ---------------------------------------------------------------------------

#[test]
fn the_wait_is_the_longer_of_backoff_and_hint() {
    let mut m = machine(RetrySettings::DEFAULT.with_honor_hints(true));
    assert_eq!(retry(&mut m, fail("503 retry-after-ms=50")), 2000);
    assert_eq!(retry(&mut m, fail("503 retry-after-ms=50000")), 50_000);
    // A 0 hint wins its rule and the wait is the backoff.
    assert_eq!(retry(&mut m, fail("503 retry-after-ms=0")), 8000);
}

#[test]
fn the_message_retry_after_comes_before_the_text() {
    let mut m = machine(RetrySettings::DEFAULT.with_honor_hints(true));
    let msg = AssistantMessage::error("503 retry-after-ms=90000").with_retry_after_ms(15_000);
    assert_eq!(retry(&mut m, at(msg, None)), 15_000);
    // The clock reaches the text hint (an absolute retry-after).
    let mut m = machine(RetrySettings::DEFAULT.with_honor_hints(true));
    let dated = AssistantMessage::error("503 retry-after: 1970-01-01T00:01:00Z");
    assert_eq!(retry(&mut m, at(dated, Some(10_000))), 50_000);
    let mut m = machine(RetrySettings::DEFAULT.with_honor_hints(true));
    assert_eq!(retry(&mut m, at(dated, None)), 2000);
}

#[test]
fn the_hand_off_hint_is_the_message_field_then_the_text() {
    let mark = |settings: RetrySettings, msg: AssistantMessage<'_>| {
        let mut m = store(settings);
        match ok(&mut m, at(msg, Some(0)))[..] {
            [Output::MarkUsageLimit { retry_after_ms }] => retry_after_ms,
            ref other => panic!("{other:?}"),
        }
    };
    let text = AssistantMessage::error("usage limit retry-after: 30");
    for honor in [false, true] {
        let s = RetrySettings::DEFAULT.with_honor_hints(honor);
        assert_eq!(mark(s, text), Some(30_000));
        assert_eq!(mark(s, text.with_retry_after_ms(5)), Some(5));
        assert_eq!(mark(s, AssistantMessage::error("usage limit")), None);
    }
}

#[test]
fn should_retry_replaces_only_the_pattern_test() {
    let mut m = machine(RetrySettings::DEFAULT);
    let veto = AssistantMessage::error("503 Service Unavailable").with_should_retry(false);
    assert_eq!(ok(&mut m, at(veto, None)), [Output::CheckCompaction]);
    let unknown = AssistantMessage::error("upstream hiccup").with_should_retry(true);
    assert_eq!(retry(&mut m, at(unknown, None)), 2000);
    // Overflow still wins, and ends the open chain.
    let overflow = AssistantMessage::error("prompt is too long").with_should_retry(true);
    assert_eq!(
        ok(&mut m, at(overflow, None)),
        [
            ended(false, 1, Some("prompt is too long")),
            Output::Settled,
            Output::CheckCompaction
        ]
    );
    // Rules 1 and 2 still hold.
    let empty = AssistantMessage::error("").with_should_retry(true);
    assert_eq!(ok(&mut m, at(empty, None)), [Output::CheckCompaction]);
    let stopped = AssistantMessage::new(StopReason::Aborted).with_should_retry(true);
    assert_eq!(ok(&mut m, at(stopped, None)), [Output::CheckCompaction]);
    // A host-retryable usage-limit text goes to the hand-off.
    let mut m = store(RetrySettings::DEFAULT);
    let limit = AssistantMessage::error("limit_reached").with_should_retry(true);
    assert_eq!(
        ok(&mut m, at(limit, None)),
        [Output::MarkUsageLimit {
            retry_after_ms: None
        }]
    );
}

#[test]
fn cache_write_counts_only_under_the_extended_classifier() {
    let host = HostOptions::DEFAULT.with_context_window(1000);
    let msg = AssistantMessage::error("overloaded")
        .with_usage(Usage::new(600, 300).with_cache_write(200));
    let mut classic = Machine::new(RetrySettings::DEFAULT, host);
    assert_eq!(retry(&mut classic, at(msg, None)), 2000);
    let mut extended = Machine::new(
        RetrySettings::DEFAULT.with_classifier(Classifier::Extended),
        host,
    );
    assert_eq!(ok(&mut extended, at(msg, None)), [Output::CheckCompaction]);
    // Exactly at the window is no overflow; u64 sums do not wrap.
    let at_window = msg.with_usage(Usage::new(600, 200).with_cache_write(200));
    assert_eq!(retry(&mut extended, at(at_window, None)), 2000);
    let huge = msg.with_usage(Usage::new(u64::MAX, u64::MAX).with_cache_write(u64::MAX));
    assert!(huge.is_context_overflow_with(u64::MAX, Classifier::Extended));
}

// ---------------------------------------------------------------------------
// The jitter generator (10.6)
// ---------------------------------------------------------------------------

#[test]
fn splitmix64_known_answers() {
    // SplitMix64 from seed 0 starts 0xE220A8397B1DCDAF, 0x6E789E6AA1B965F4.
    assert_eq!(draws(0, 2), [0xE220_A839, 0x6E78_9E6A]);
    // With 100 % and a backoff of 2^32 the wait is 2^32 − r exactly.
    let settings = RetrySettings::DEFAULT
        .with_base_delay_ms(1 << 32)
        .with_jitter_pct(JitterPct::MAX)
        .with_max_retries(2);
    let mut m = machine(settings);
    assert_eq!(retry(&mut m, fail("overloaded")), (1 << 32) - 0xE220_A839);
    assert_eq!(
        retry(&mut m, fail("overloaded")),
        (2 << 32) - 2 * 0x6E78_9E6A
    );
}

#[test]
fn each_decision_that_reaches_step_4_draws_once() {
    let settings = RetrySettings::DEFAULT
        .with_max_retries(1)
        .with_jitter_pct(JitterPct::saturating(50))
        .with_honor_hints(true)
        .with_max_delay_ms(60_000);
    let r = draws(9, 6);
    let host = HostOptions::DEFAULT
        .with_seed(9)
        .with_credential_store(true);
    let mut m = Machine::new(settings, host);
    // Draw 1: a fail-fast end still consumes its draw.
    assert!(delay_of(&ok(&mut m, fail(HOUR_HINT))).is_none());
    // Draw 2: a retry.
    assert_eq!(retry(&mut m, fail("overloaded")), jittered(2000, 50, r[1]));
    // Max exceeded: step 4 does not run, no draw.
    assert!(delay_of(&ok(&mut m, fail("overloaded"))).is_none());
    // Draw 3: the hand-off, answered with a switch.
    ok(&mut m, fail("usage limit"));
    let out = ok(
        &mut m,
        Input::UsageLimitMarked {
            switched: true,
            error_message: "usage limit",
        },
    );
    assert_eq!(delay_of(&out), Some(0));
    ok(&mut m, fired(timer_of(&out)));
    ok(&mut m, end(StopReason::Stop));
    // Settings changes and chain ends do not reset the generator: draw 4.
    ok(&mut m, Input::Settings(settings.with_max_retries(3)));
    assert_eq!(retry(&mut m, fail("overloaded")), jittered(2000, 50, r[3]));
    ok(&mut m, Input::AbortRetry);
    // Nor does a change of the host options: draw 5.
    m.set_host_options(HostOptions::DEFAULT.with_seed(9));
    assert_eq!(retry(&mut m, fail("overloaded")), jittered(2000, 50, r[4]));
    // Without jitter no draw happens: the next jittered retry takes draw 6.
    ok(
        &mut m,
        Input::Settings(
            settings
                .with_max_retries(9)
                .with_jitter_pct(JitterPct::ZERO),
        ),
    );
    assert_eq!(retry(&mut m, fail("overloaded")), 4000);
    ok(&mut m, Input::Settings(settings.with_max_retries(9)));
    assert_eq!(retry(&mut m, fail("overloaded")), jittered(8000, 50, r[5]));
}

#[test]
fn jitter_comes_after_cap_and_ceiling_and_before_the_hint() {
    let r = draws(3, 2);
    let settings = RetrySettings::DEFAULT
        .with_base_delay_ms(10_000)
        .with_backoff_cap_ms(8000)
        .with_max_delay_ms(6000)
        .with_jitter_pct(JitterPct::saturating(40))
        .with_honor_hints(true);
    let mut m = Machine::new(settings, HostOptions::DEFAULT.with_seed(3));
    assert_eq!(retry(&mut m, fail("overloaded")), jittered(6000, 40, r[0]));
    // A hint longer than the jittered backoff and within the ceiling: the hint.
    assert_eq!(
        retry(&mut m, fail("503 retry-after-ms=5999")),
        5999.max(jittered(6000, 40, r[1]))
    );
}

proptest! {
    #![proptest_config(proptest_config(REGRESSIONS))]

    /// Every jittered wait lies in `(backoff·(1 − p/100), backoff]`, and
    /// the same seed and inputs give the same outputs.
    #[test]
    fn jittered_waits_stay_in_range_and_repeat(
        seed in any::<u64>(),
        pct in 0u8..=100,
        base in prop_oneof![1u64..10_000, any::<u64>()],
        cap in prop_oneof![Just(0u64), 1u64..100_000],
        retries in 1u32..12,
    ) {
        let settings = RetrySettings::DEFAULT
            .with_max_retries(retries)
            .with_base_delay_ms(base)
            .with_backoff_cap_ms(cap)
            .with_jitter_pct(JitterPct::new(pct).unwrap());
        let host = HostOptions::DEFAULT.with_seed(seed);
        let mut a = Machine::new(settings, host);
        let mut b = Machine::new(settings, host);
        for attempt in 1..=retries {
            let backoff = settings.backoff_ms(attempt);
            let out_a = ok(&mut a, fail("overloaded"));
            let out_b = ok(&mut b, fail("overloaded"));
            prop_assert_eq!(&out_a, &out_b);
            let delay = delay_of(&out_a).unwrap();
            prop_assert!(delay <= backoff);
            if backoff > 0 && pct > 0 {
                // delay > backoff·(1 − p/100), exactly: 100·delay > backoff·(100 − p).
                prop_assert!(
                    100 * u128::from(delay) > u128::from(backoff) * u128::from(100 - pct),
                    "delay {} backoff {} pct {}", delay, backoff, pct
                );
            }
            if pct == 0 {
                prop_assert_eq!(delay, backoff);
            }
            ok(&mut a, fired(timer_of(&out_a)));
            ok(&mut b, fired(timer_of(&out_b)));
        }
    }

    /// A fail-fast never emits a start, a drop or a sleep, and closes the chain.
    #[test]
    fn fail_fast_never_starts(
        ceiling in 1u64..1_000_000,
        over in 1u64..u64::MAX / 2,
        field in any::<bool>(),
        with_store in any::<bool>(),
        chain in 0u32..3,
    ) {
        let settings = RetrySettings::DEFAULT
            .with_honor_hints(true)
            .with_max_delay_ms(ceiling)
            .with_base_delay_ms(1);
        let host = HostOptions::DEFAULT.with_credential_store(with_store);
        let mut m = Machine::new(settings, host);
        for _ in 0..chain {
            retry(&mut m, fail("overloaded"));
        }
        let hint = ceiling.saturating_add(over);
        let text = format!("usage limit retry-after-ms={hint}");
        let msg = if field {
            AssistantMessage::error("usage limit").with_retry_after_ms(hint)
        } else {
            AssistantMessage::error(&text)
        };
        let mut out = ok(&mut m, at(msg, None));
        if with_store {
            prop_assert_eq!(&out[..], &[Output::MarkUsageLimit { retry_after_ms: Some(hint) }][..]);
            out = ok(&mut m, Input::UsageLimitMarked { switched: false, error_message: msg.error_message.unwrap() });
        }
        let starts = out.iter().any(|o| {
            matches!(
                o,
                Output::Emit(Event::Start { .. }) | Output::DropTrailingError | Output::Sleep { .. }
            )
        });
        prop_assert!(!starts, "a start, drop or sleep: {:?}", out);
        prop_assert_eq!(
            &out[..],
            &[
                Output::Emit(Event::End {
                    success: false,
                    attempt: chain,
                    final_error: Some(wait_too_long(hint, ceiling, msg.error_message.unwrap())),
                }),
                Output::Settled,
                Output::CheckCompaction,
            ][..]
        );
        prop_assert!(!m.is_retrying());
    }

    /// With the classic settings and none of the new message fields, the
    /// seed changes nothing.
    #[test]
    fn without_options_the_seed_is_irrelevant(seed in any::<u64>(), n in 1usize..6) {
        let mut a = Machine::new(RetrySettings::CLASSIC, HostOptions::DEFAULT);
        let mut b = Machine::new(RetrySettings::CLASSIC, HostOptions::DEFAULT.with_seed(seed));
        for _ in 0..n {
            let (oa, ob) = (ok(&mut a, fail("503")), ok(&mut b, fail("503")));
            prop_assert_eq!(&oa, &ob);
            if let Some(Output::Sleep { timer, .. }) = oa.last() {
                prop_assert_eq!(ok(&mut a, fired(*timer)), ok(&mut b, fired(*timer)));
            }
        }
    }
}
