//! The `Arbitrary` impls (feature `arbitrary`) under the test kit's
//! monitor: whatever the bytes, every input keeps the machine's
//! guarantees, and the inputs they make reach retry chains and fail-fasts
//! (the impls lean toward them), as a structure-aware fuzzer needs.
#![cfg(feature = "arbitrary")]

use arbitrary::{Arbitrary, Unstructured};
use autoretry::{HostOptions, Input, Partial, RetrySettings};
use autoretry_testkit::Monitor;

/// `len` pseudo-random bytes (SplitMix64 from `seed`).
fn bytes(mut seed: u64, len: usize) -> Vec<u8> {
    let mut next = move || {
        seed = seed.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = seed;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    (0..len).map(|_| next() as u8).collect()
}

/// The settings with the options of section 11 off: the `Monitor` models
/// sections 1–10 (section 11 has its vectors and `beyond.rs`).
fn sections_1_to_10(settings: RetrySettings) -> RetrySettings {
    settings
        .with_model_fallback(false)
        .with_max_usage_wait_ms(0)
        .with_max_total_delay_ms(0)
}

#[test]
fn arbitrary_inputs_keep_the_guarantees_and_reach_deep_states() {
    let (mut chains, mut fail_fasts, mut inputs) = (0, 0, 0);
    for seed in 0..300 {
        let data = bytes(seed, 2048);
        let mut u = Unstructured::new(&data);
        let settings = sections_1_to_10(RetrySettings::arbitrary(&mut u).expect("settings"));
        let host = HostOptions::arbitrary(&mut u).expect("host options from any bytes");
        let mut monitor = Monitor::new(settings, host);
        while !u.is_empty() {
            let Ok(input) = Input::arbitrary(&mut u) else {
                break;
            };
            let input = match input {
                Input::AgentEnd { message, now_ms } => Input::AgentEnd {
                    message: message.with_partial(Partial::None),
                    now_ms,
                },
                Input::MessageEnd { message } => Input::MessageEnd {
                    message: message.with_partial(Partial::None),
                },
                Input::Settings(settings) => Input::Settings(sections_1_to_10(settings)),
                other => other,
            };
            let _ = monitor.step(input);
            inputs += 1;
        }
        chains += monitor.chains();
        fail_fasts += monitor.fail_fasts();
    }
    assert!(inputs > 10_000, "{inputs} inputs");
    assert!(chains > 300, "{chains} chains");
    assert!(fail_fasts > 10, "{fail_fasts} fail-fasts");
}
