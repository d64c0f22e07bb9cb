//! Fuzz target `digest`: see [`penstock::fuzzing::digest`] for what it drives and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| penstock::fuzzing::digest(data));
