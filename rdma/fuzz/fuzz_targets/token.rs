//! Fuzzes the token parser: it must never panic, and whatever it accepts must format back to
//! an equivalent token.
#![no_main]

use libfuzzer_sys::fuzz_target;
use penstock_rdma::DcToken;

fuzz_target!(|data: &[u8]| {
    if let Ok(s) = std::str::from_utf8(data) {
        if let Ok(t) = DcToken::parse(s) {
            let again = DcToken::parse(&t.to_string()).expect("formatted tokens parse");
            assert_eq!(again, t);
        }
    }
});
