//! The SigV4 computations the gateway makes outside s3s (plain reads in `s3::direct`, the
//! readings of a path in `signed_path`): a scope's signing key, and the signature a canonical
//! request gets under it.

use ring::{digest, hmac};
use subtle::ConstantTimeEq;

/// The SigV4 signing key of `secret` for `date` (yyyymmdd), `region` and `service`.
pub(crate) fn derive_key(secret: &str, date: &str, region: &str, service: &str) -> hmac::Key {
    let step = |key: &[u8], data: &str| hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes());
    let k_date = step(format!("AWS4{secret}").as_bytes(), date);
    let k_region = step(k_date.as_ref(), region);
    let k_service = step(k_region.as_ref(), service);
    let k_signing = step(k_service.as_ref(), "aws4_request");
    hmac::Key::new(hmac::HMAC_SHA256, k_signing.as_ref())
}

/// Whether `v` is a payload hash as s3s reads one in `x-amz-content-sha256`: a SHA-256 in
/// 64 lower-case hex digits (any other value is a payload kind, or malformed).
pub(crate) fn is_payload_hash(v: &[u8]) -> bool {
    v.len() == 64 && v.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The scope and time a signature was made for, as the client named them.
pub(crate) struct Scope<'a> {
    /// `x-amz-date` (`yyyymmddThhmmssZ`).
    pub amz_date: &'a str,
    pub date: &'a str,
    pub region: &'a str,
    pub service: &'a str,
}

/// Whether `signature` (lower-case hex) is the one `key` gives `canonical` in `scope`, compared
/// in constant time.
pub(crate) fn signature_matches(key: &hmac::Key, scope: &Scope<'_>, canonical: &str, signature: &str) -> bool {
    sign(key, scope, canonical).is_some_and(|ours| bool::from(ours.ct_eq(signature.as_bytes())))
}

/// The signature (lower-case hex) `key` gives `canonical` in `scope`. The string to sign is fed
/// to the HMAC in pieces: plain reads check a signature on every request.
pub(crate) fn sign(key: &hmac::Key, scope: &Scope<'_>, canonical: &str) -> Option<[u8; 64]> {
    let hashed = hashed_canonical(canonical)?;
    let mut ctx = hmac::Context::with_key(key);
    for part in string_to_sign_parts(scope, std::str::from_utf8(&hashed).ok()?) {
        ctx.update(part.as_bytes());
    }
    let mut ours = [0u8; 64];
    hex::encode_to_slice(ctx.sign(), &mut ours).ok()?;
    Some(ours)
}

/// The string to sign of `canonical` in `scope`, whole: what [`sign`] signs, for an error
/// document that shows it.
pub(crate) fn string_to_sign(scope: &Scope<'_>, canonical: &str) -> Option<String> {
    let hashed = hashed_canonical(canonical)?;
    Some(string_to_sign_parts(scope, std::str::from_utf8(&hashed).ok()?).concat())
}

/// The lower-case hex SHA-256 of a canonical request.
fn hashed_canonical(canonical: &str) -> Option<[u8; 64]> {
    let mut hashed = [0u8; 64];
    hex::encode_to_slice(digest::digest(&digest::SHA256, canonical.as_bytes()), &mut hashed).ok()?;
    Some(hashed)
}

/// SigV4's string to sign in pieces: the algorithm, the time, the credential scope and the
/// canonical request's hash (`hashed`), each line but the last ending in a newline.
fn string_to_sign_parts<'a>(scope: &Scope<'a>, hashed: &'a str) -> [&'a str; 10] {
    [
        "AWS4-HMAC-SHA256\n",
        scope.amz_date,
        "\n",
        scope.date,
        "/",
        scope.region,
        "/",
        scope.service,
        "/aws4_request\n",
        hashed,
    ]
}
