#![no_main]

// Panics on a violated guarantee; see `autoretry::fuzzing::fuzz_hint`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| autoretry::fuzzing::fuzz_hint(data));
