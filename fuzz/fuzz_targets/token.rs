//! Fuzz target `token`: see [`penstock::fuzzing::token`] for what it drives and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| penstock::fuzzing::token(data));
