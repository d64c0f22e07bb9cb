//! Fuzz target `conditional`: see [`penstock::fuzzing::conditional`] for what it drives and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| penstock::fuzzing::conditional(data));
