#![no_main]

// Panics on a violated guarantee; see `autoretry_testkit::rules_fuzz::fuzz_rules_from_bytes`.
libfuzzer_sys::fuzz_target!(
    |data: &[u8]| autoretry_testkit::rules_fuzz::fuzz_rules_from_bytes(data)
);
