//! The `Arbitrary` impls (feature `arbitrary`) under the test kit's
//! monitor: whatever the bytes, every input keeps the machine's
//! guarantees, and the inputs they make reach retry chains, fail-fasts and
//! the options of spec section 11 (continuations, model questions, and,
//! with a shared budget, throttled chains), as a structure-aware fuzzer
//! needs.
#![cfg(feature = "arbitrary")]

use arbitrary::{Arbitrary, Unstructured};
use autoretry::{HostOptions, Input, RetryBudget, RetrySettings};
use autoretry_testkit::{Monitor, SplitMix64};

/// `len` pseudo-random bytes (SplitMix64 from `seed`).
fn bytes(seed: u64, len: usize) -> Vec<u8> {
    let mut rng = SplitMix64::new(seed);
    (0..len).map(|_| rng.next_u64().to_le_bytes()[0]).collect()
}

#[test]
fn arbitrary_inputs_keep_the_guarantees_and_reach_deep_states() {
    let (mut chains, mut fail_fasts, mut inputs) = (0, 0, 0);
    let (mut questions, mut continuations, mut throttled) = (0, 0, 0);
    for seed in 0..300 {
        let data = bytes(seed, 2048);
        let mut u = Unstructured::new(&data);
        let settings = RetrySettings::arbitrary(&mut u).expect("settings");
        let host = HostOptions::arbitrary(&mut u).expect("host options from any bytes");
        let mut monitor = Monitor::new(settings, host);
        // Every other seed hands a small shared budget (spec §11.4), which
        // a few failures bring down to its throttle.
        let mut budget = (seed % 2 == 1).then(|| RetryBudget::new(4, 500).expect("valid figures"));
        while !u.is_empty() {
            let Ok(input) = Input::arbitrary(&mut u) else {
                break;
            };
            let _ = match budget.as_mut() {
                Some(budget) => monitor.step_with_budget(input, budget),
                None => monitor.step(input),
            };
            inputs += 1;
        }
        chains += monitor.chains();
        fail_fasts += monitor.fail_fasts();
        questions += monitor.model_questions();
        continuations += monitor.continuations();
        throttled += monitor.throttled();
    }
    eprintln!("{inputs} inputs, {chains} chains, {fail_fasts} fail-fasts, {questions} model questions, {continuations} continuations, {throttled} throttled");
    assert!(inputs > 10_000, "{inputs} inputs");
    // A third of the failed turns streamed a tool call and every other
    // seed shares a budget: fewer chains than sections 1–10 alone give.
    assert!(chains > 150, "{chains} chains");
    assert!(fail_fasts > 10, "{fail_fasts} fail-fasts");
    assert!(questions > 5, "{questions} model questions");
    assert!(continuations > 30, "{continuations} continuations");
    assert!(throttled > 2, "{throttled} throttled chains");
}
