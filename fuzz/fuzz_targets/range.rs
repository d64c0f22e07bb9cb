//! Fuzz target `range`: see [`penstock::fuzzing::range`] for what it drives and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| penstock::fuzzing::range(data));
