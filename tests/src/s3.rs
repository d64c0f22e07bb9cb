//! Helpers for driving the S3 API through aws-sdk-s3 in tests: error codes and statuses,
//! deterministic bodies, listing every key, and multipart uploads driven step by step.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::operation::complete_multipart_upload::{CompleteMultipartUploadError, CompleteMultipartUploadOutput};
use aws_sdk_s3::operation::list_parts::{ListPartsError, ListPartsOutput};
use aws_sdk_s3::operation::upload_part::{UploadPartError, UploadPartOutput};
use aws_sdk_s3::primitives::ByteStream;
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

/// The error document of a failed call, as text (empty when no response came).
pub fn error_doc<E>(e: &SdkError<E, aws_smithy_runtime_api::http::Response>) -> String {
    e.raw_response().and_then(|r| r.body().bytes()).map(|b| String::from_utf8_lossy(b).into_owned()).unwrap_or_default()
}

/// The text of the first element `tag` of XML document `doc`, its entities decoded; `None`
/// where it has none.
pub fn xml_element(doc: &str, tag: &str) -> Option<String> {
    let text = doc.split(&format!("<{tag}>")).nth(1)?.split(&format!("</{tag}>")).next()?;
    Some(
        text.replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&quot;", "\"")
            .replace("&apos;", "'")
            .replace("&amp;", "&"),
    )
}

/// Lowercase hex MD5, the digits of a single-part ETag.
pub fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

/// `n` bytes that differ with `seed` and repeat nowhere within a part.
pub fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n).map(|i| (i as u32).wrapping_mul(2654435761).rotate_left(seed as u32) as u8).collect()
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

/// Every key in bucket `b`.
pub async fn keys(c: &Client, b: &str) -> Vec<String> {
    list_all(c, b, None, 1000).await
}

/// A CompleteMultipartUpload document naming `(part number, ETag)` in the order given.
pub fn completed<S: AsRef<str>>(parts: &[(i32, S)]) -> CompletedMultipartUpload {
    let parts = parts.iter().map(|(n, e)| CompletedPart::builder().part_number(*n).e_tag(e.as_ref()).build()).collect();
    CompletedMultipartUpload::builder().set_parts(Some(parts)).build()
}

/// Creates bucket `b`; panics on failure.
pub async fn mkbucket(c: &Client, b: &str) {
    c.create_bucket().bucket(b).send().await.unwrap();
}

/// The error a failed call answered, for asserting its code and status.
pub type Failure<E> = SdkError<E, aws_smithy_runtime_api::http::Response>;

/// A multipart upload in progress, for tests that drive one step by step.
pub struct Upload {
    c: Client,
    /// The bucket it writes into.
    pub bucket: String,
    /// The key it completes at.
    pub key: String,
    /// Its upload id.
    pub id: String,
}

impl Upload {
    /// Starts an upload of `bucket/key`; panics on failure.
    pub async fn start(c: &Client, bucket: &str, key: &str) -> Self {
        let out = c.create_multipart_upload().bucket(bucket).key(key).send().await.unwrap();
        Upload::of(c, bucket, key, out.upload_id().unwrap())
    }

    /// An upload started elsewhere (with headers `start` does not send, or by another client).
    pub fn of(c: &Client, bucket: &str, key: &str, id: &str) -> Self {
        Upload { c: c.clone(), bucket: bucket.to_owned(), key: key.to_owned(), id: id.to_owned() }
    }

    /// Uploads part `n`; answers the part's ETag as sent (quoted).
    pub async fn part(&self, n: i32, body: impl Into<Vec<u8>>) -> String {
        self.try_part(n, body).await.unwrap().e_tag().unwrap().to_owned()
    }

    /// Uploads part `n`, answering the gateway's verdict.
    pub async fn try_part(
        &self,
        n: i32,
        body: impl Into<Vec<u8>>,
    ) -> Result<UploadPartOutput, Failure<UploadPartError>> {
        let body = ByteStream::from(body.into());
        self.c
            .upload_part()
            .bucket(&self.bucket)
            .key(&self.key)
            .upload_id(&self.id)
            .part_number(n)
            .body(body)
            .send()
            .await
    }

    /// Completes with `(part number, ETag)` in the order given; panics on failure.
    pub async fn complete<S: AsRef<str>>(&self, parts: &[(i32, S)]) -> CompleteMultipartUploadOutput {
        self.try_complete(parts).await.unwrap()
    }

    /// Completes with `(part number, ETag)` in the order given, answering the gateway's verdict.
    pub async fn try_complete<S: AsRef<str>>(
        &self,
        parts: &[(i32, S)],
    ) -> Result<CompleteMultipartUploadOutput, Failure<CompleteMultipartUploadError>> {
        let req = self.c.complete_multipart_upload().bucket(&self.bucket).key(&self.key).upload_id(&self.id);
        req.multipart_upload(completed(parts)).send().await
    }

    /// ListParts of this upload, answering the gateway's verdict.
    pub async fn try_list_parts(&self) -> Result<ListPartsOutput, Failure<ListPartsError>> {
        self.c.list_parts().bucket(&self.bucket).key(&self.key).upload_id(&self.id).send().await
    }

    /// ListParts of this upload; panics on failure.
    pub async fn list_parts(&self) -> ListPartsOutput {
        self.try_list_parts().await.unwrap()
    }

    /// Aborts this upload; panics on failure.
    pub async fn abort(&self) {
        let req = self.c.abort_multipart_upload().bucket(&self.bucket).key(&self.key).upload_id(&self.id);
        req.send().await.unwrap();
    }
}
