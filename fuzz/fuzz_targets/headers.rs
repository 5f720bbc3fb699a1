#![no_main]

// Panics on a violated guarantee; see `autoretry_testkit::fuzzing::fuzz_headers`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| autoretry_testkit::fuzzing::fuzz_headers(data));
