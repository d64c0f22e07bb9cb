//! Helpers for driving the S3 API through aws-sdk-s3 in tests: error codes and statuses,
//! deterministic bodies, listing every key, and CompleteMultipartUpload documents.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use aws_sdk_s3::Client;
use md5::{Digest, Md5};

/// The S3 error code of a failed call, or `<none>`.
pub fn code<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> String {
    e.code().unwrap_or("<none>").to_owned()
}

/// The HTTP status of a failed call (0 when no response came).
pub fn status<E>(e: &SdkError<E, aws_smithy_runtime_api::http::Response>) -> u16 {
    e.raw_response().map(|r| r.status().as_u16()).unwrap_or(0)
}

/// Lowercase hex MD5, the digits of a single-part ETag.
pub fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

/// `n` bytes that differ with `seed` and repeat nowhere within a part.
pub fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2654435761).rotate_left(seed as u32) as u8)
        .collect()
}

/// Every key under `prefix`, fetched with ListObjectsV2 pages of `page` keys.
pub async fn list_all(c: &Client, b: &str, prefix: Option<&str>, page: i32) -> Vec<String> {
    let mut keys = Vec::new();
    let mut token = None;
    loop {
        let r = c
            .list_objects_v2()
            .bucket(b)
            .set_prefix(prefix.map(str::to_owned))
            .max_keys(page)
            .set_continuation_token(token.take())
            .send()
            .await
            .unwrap();
        keys.extend(r.contents().iter().map(|o| o.key().unwrap().to_owned()));
        if r.is_truncated() == Some(true) {
            token = r.next_continuation_token().map(str::to_owned);
        } else {
            return keys;
        }
    }
}

/// A CompleteMultipartUpload document naming `(part number, ETag)` in the order given.
pub fn completed<S: AsRef<str>>(parts: &[(i32, S)]) -> CompletedMultipartUpload {
    let parts = parts
        .iter()
        .map(|(n, e)| CompletedPart::builder().part_number(*n).e_tag(e.as_ref()).build())
        .collect();
    CompletedMultipartUpload::builder().set_parts(Some(parts)).build()
}
