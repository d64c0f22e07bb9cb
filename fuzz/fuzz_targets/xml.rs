//! Fuzz target `xml`: see [`penstock::fuzzing::xml_body`] for what it drives and checks.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| penstock::fuzzing::xml_body(data));
