#![no_main]

// Panics on a violated guarantee; see `autoretry::fuzzing::fuzz_rpc_line`.
libfuzzer_sys::fuzz_target!(|data: &[u8]| autoretry::fuzzing::fuzz_rpc_line(data));
