//! Fuzz target `key`: see [`penstock::fuzzing::key`] for what it drives and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| penstock::fuzzing::key(data));
