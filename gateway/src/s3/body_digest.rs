//! Digests of request bodies that s3s parses itself (DeleteObjects, PutObjectTagging,
//! CompleteMultipartUpload, bucket configurations, ...).
//!
//! Object data (PutObject, UploadPart) is hashed while it streams to disk (`put.rs`). The XML
//! and JSON documents of other operations reach the handlers already parsed, so their
//! `Content-MD5` and `x-amz-checksum-*` claims are checked here instead: the HTTP layer buffers
//! such a body (small, and s3s buffers it anyway), hashes it, and leaves the verdict in the
//! request's extensions. The access check enforces it once the request is authenticated and its
//! operation known, so a bad digest is refused before any handler changes anything, and an
//! unauthenticated caller still learns nothing but `AccessDenied`.

use bytes::Bytes;
use http::{HeaderMap, Method, Request};
use http_body_util::BodyExt;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Result};

use super::checksum::{BodyHasher, Claims};
use crate::limits::StallGuard;

/// Largest document buffered for checking. Beyond it the body streams through untouched and
/// s3s's own XML size limit refuses it.
const MAX_DOCUMENT: u64 = 4 << 20;

/// A PUT without a sub-resource is PutObject, CreateBucket or CopyObject; only bodies this small
/// (a CreateBucketConfiguration) are buffered, and only where the path names no more than a
/// bucket, so object uploads keep streaming.
const MAX_UNQUALIFIED_PUT: u64 = 64 << 10;

/// The verdict on a buffered body's digests, left in the request's extensions.
#[derive(Debug, Clone)]
pub(crate) enum BodyDigest {
    /// The request claimed no digest.
    Unclaimed,
    /// Every claimed digest matched.
    Verified,
    /// A claim was malformed or did not match: the error S3 answers (its code, message, status
    /// where the code alone does not give one, and the elements its document adds).
    Refused(S3ErrorCode, String, Option<http::StatusCode>, Option<String>),
    /// The body could not be read (the client stalled or went away): refused whatever the
    /// operation, since the handler would see an empty body.
    Unreadable(S3ErrorCode, String),
}

/// Whether the body of `req` is a document to check here rather than object data.
fn is_document(method: &Method, path: &str, virtual_hosted: bool, query: &str, headers: &HeaderMap) -> bool {
    let streaming = headers
        .get("x-amz-content-sha256")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("STREAMING-"))
        || headers.contains_key("x-amz-decoded-content-length")
        || headers
            .get(http::header::CONTENT_ENCODING)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("aws-chunked"));
    let Some(len) = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
    else {
        return false;
    };
    if streaming || len > MAX_DOCUMENT {
        return false;
    }
    let names = query_names(query);
    match *method {
        // UploadPart carries object data; everything else with a query names a sub-resource.
        Method::PUT if names.contains(&"partNumber") => false,
        // A path with a key is PutObject (or CopyObject, without a body), not a document. Small
        // ones are still read here, whole, which costs less than streaming them (~10 % of a
        // 4 KiB PUT's CPU) — except when the client waits for `100 Continue` before it sends
        // the body (botocore always does): reading it here would ask for the body before the
        // access check, and a refused upload must be answered without (403, no interim).
        Method::PUT if names.is_empty() => {
            len <= MAX_UNQUALIFIED_PUT
                && !(names_a_key(path, virtual_hosted) && crate::interim::expects_continue(headers))
        }
        Method::PUT => true,
        // POST without a query is a browser form upload (object data).
        Method::POST => !names.is_empty(),
        _ => false,
    }
}

/// The names in a query string, without presigning's `X-Amz-*` parameters.
pub(crate) fn query_names(query: &str) -> Vec<&str> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').map_or(p, |(k, _)| k))
        .filter(|k| !k.starts_with("X-Amz-") && !k.starts_with("x-amz-"))
        .collect()
}

/// Whether a document request is CompleteMultipartUpload (POST with `uploadId`), whose
/// `x-amz-checksum-*` headers state the whole object's checksum (checked by the handler against
/// the parts'), not the XML body's. minio-go sends the composite CRC32C there on every upload.
fn completes_upload(method: &Method, query: &str) -> bool {
    *method == Method::POST && query_names(query).contains(&"uploadId")
}

/// Buffers the body of a document request and records its [`BodyDigest`]; other requests pass
/// through with their body untouched. `virtual_hosted`: the Host named the bucket, so the path
/// is all key.
pub(crate) async fn inspect(
    req: Request<StallGuard<hyper::body::Incoming>>,
    virtual_hosted: bool,
) -> Request<s3s::Body> {
    let query = req.uri().query().unwrap_or("");
    if !is_document(req.method(), req.uri().path(), virtual_hosted, query, req.headers()) {
        let mut req = req;
        // A request without a body (GET, HEAD, DELETE, CopyObject) signed over the hash of some
        // other body is refused as S3 refuses it; s3s reads no body there, so checks nothing, and
        // a DeleteObject so signed would otherwise go through.
        if hyper::body::Body::is_end_stream(req.body()) && contradicts_payload_hash(req.headers(), &Bytes::new()) {
            req.extensions_mut()
                .insert(refused(super::error::content_sha256_mismatch()));
        }
        return req.map(s3s::Body::http_body);
    }
    let (mut parts, body) = req.into_parts();
    let names = query_names(parts.uri.query().unwrap_or(""));
    let (verdict, bytes) = match body.collect().await {
        Ok(c) => {
            let bytes = c.to_bytes();
            let completes = completes_upload(&parts.method, parts.uri.query().unwrap_or(""));
            // A small PutObject's bytes are object data: s3s checks their hash as they are read.
            let object_data =
                parts.method == Method::PUT && names.is_empty() && names_a_key(parts.uri.path(), virtual_hosted);
            // An empty one is also CopyObject's (no data; s3s reads none), and checked here.
            let verdict = if (!object_data || bytes.is_empty()) && contradicts_payload_hash(&parts.headers, &bytes) {
                refused(super::error::content_sha256_mismatch())
            } else {
                verdict(&parts.headers, &bytes, completes).await
            };
            (verdict, bytes)
        }
        Err(e) => (
            match e.downcast::<S3Error>() {
                Ok(e) => BodyDigest::Unreadable(e.code().clone(), e.message().unwrap_or_default().to_owned()),
                Err(e) => BodyDigest::Unreadable(
                    S3ErrorCode::IncompleteBody,
                    format!("The request body could not be read: {e}"),
                ),
            },
            Bytes::new(),
        ),
    };
    parts.extensions.insert(verdict);
    // A document s3s's schema cannot read as sent takes a second pass (`ignored_headers.rs`).
    if parts.method == Method::PUT
        && names.contains(&"encryption")
        && super::unconfigured::names_blocked_encryption_types(&bytes)
    {
        parts.extensions.insert(super::unconfigured::BlockedEncryptionTypes);
    }
    Request::from_parts(parts, s3s::Body::from(bytes))
}

/// Whether `body` is not the one the SHA-256 in `x-amz-content-sha256` names. s3s checks a
/// signed payload's hash as it reads the body, and answers a document whose hash fails with 500
/// `InternalError` (from its document reader); checked here, where the document's bytes are at
/// hand, it is answered as S3 answers it, after the signature is checked (`enforce`).
fn contradicts_payload_hash(headers: &HeaderMap, body: &Bytes) -> bool {
    let Some(claimed) = headers.get("x-amz-content-sha256").map(|v| v.as_bytes()) else {
        return false;
    };
    // Only a hash in the form s3s takes for one is checked by s3s.
    if !crate::sigv4::is_payload_hash(claimed) {
        return false;
    }
    let mut ours = [0u8; 64];
    let digest = ring::digest::digest(&ring::digest::SHA256, body);
    hex::encode_to_slice(digest, &mut ours).is_ok() && ours[..] != claimed[..]
}

/// Whether `path` names an object: `/bucket/key` path-style, any `/key` when the Host named the
/// bucket (`virtual_hosted`); not just a bucket (`/bucket`, or `/`).
fn names_a_key(path: &str, virtual_hosted: bool) -> bool {
    let path = path.trim_start_matches('/');
    if virtual_hosted {
        return !path.is_empty();
    }
    path.split_once('/').is_some_and(|(_, key)| !key.is_empty())
}

/// The verdict on `body`'s claimed digests; with `object_checksums` the `x-amz-checksum-*`
/// headers are about an object (see `completes_upload`) and only `Content-MD5` is checked.
pub(crate) async fn verdict(headers: &HeaderMap, body: &Bytes, object_checksums: bool) -> BodyDigest {
    let claims = match Claims::from_headers(headers, None) {
        Ok(c) if object_checksums => c.content_md5_only(),
        Ok(c) => c,
        Err(e) => return refused(e),
    };
    if !claims.claims_any() {
        return BodyDigest::Unclaimed;
    }
    let mut hasher = BodyHasher::new(&claims.algos());
    hasher.update(body).await;
    match claims.verify(&hasher.finish().await, None) {
        Ok(()) => BodyDigest::Verified,
        Err(e) => refused(e),
    }
}

fn refused(e: S3Error) -> BodyDigest {
    BodyDigest::Refused(
        e.code().clone(),
        e.message().unwrap_or_default().to_owned(),
        e.status_code(),
        super::error::detail_of(&e),
    )
}

/// Applies the verdict for operation `op`: refuses bad digests on any document, and a
/// DeleteObjects that claims none (S3 requires Content-MD5 or a checksum there).
pub(crate) fn enforce(op: &str, verdict: Option<&BodyDigest>) -> S3Result<()> {
    if let Some(BodyDigest::Unreadable(code, msg)) = verdict {
        return Err(S3Error::with_message(code.clone(), msg.clone()));
    }
    // Object data is verified while it streams (put.rs, multipart.rs).
    if matches!(op, "PutObject" | "UploadPart" | "PostObject") {
        return Ok(());
    }
    match verdict {
        Some(BodyDigest::Refused(code, msg, status, detail)) => {
            let mut e = S3Error::with_message(code.clone(), msg.clone());
            if let Some(status) = status {
                e.set_status_code(*status);
            }
            Err(match detail {
                Some(xml) => super::error::with_detail(e, xml),
                None => e,
            })
        }
        Some(BodyDigest::Unclaimed) if op == "DeleteObjects" => Err(s3_error!(
            InvalidRequest,
            "Missing required header for this request: Content-MD5"
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(http::HeaderName::from_bytes(k.as_bytes()).unwrap(), v.parse().unwrap());
        }
        h
    }

    #[test]
    fn documents_are_told_from_object_data() {
        let small = headers(&[("content-length", "100")]);
        assert!(is_document(&Method::POST, "/b", false, "delete", &small));
        assert!(is_document(&Method::POST, "/b", false, "uploadId=abc", &small));
        assert!(is_document(&Method::PUT, "/b", false, "tagging", &small));
        assert!(is_document(&Method::PUT, "/b", false, "", &small));
        assert!(is_document(&Method::PUT, "/b/", false, "", &small));
        assert!(
            is_document(&Method::PUT, "/b/key", false, "", &small),
            "a small PutObject is read whole"
        );
        let expecting = headers(&[("content-length", "100"), ("expect", "100-continue")]);
        assert!(
            !is_document(&Method::PUT, "/b/key", false, "", &expecting),
            "unless the client waits"
        );
        assert!(
            is_document(&Method::PUT, "/b", false, "", &expecting),
            "a CreateBucketConfiguration"
        );
        assert!(
            !is_document(&Method::PUT, "/key", true, "", &expecting),
            "a key under a virtual host"
        );
        assert!(
            is_document(&Method::PUT, "/", true, "", &expecting),
            "CreateBucket under a virtual host"
        );
        assert!(is_document(&Method::PUT, "/b/key", false, "tagging", &small));
        assert!(!is_document(
            &Method::PUT,
            "/b",
            false,
            "partNumber=1&uploadId=abc",
            &small
        ));
        assert!(!is_document(&Method::POST, "/b", false, "", &small));
        assert!(!is_document(&Method::GET, "/b", false, "tagging", &small));
        let big = headers(&[("content-length", "1000000")]);
        assert!(!is_document(&Method::PUT, "/b", false, "", &big));
        assert!(!is_document(
            &Method::PUT,
            "/b",
            false,
            "X-Amz-Signature=x&X-Amz-Date=y",
            &big
        ));
        assert!(is_document(&Method::POST, "/b", false, "delete", &big));
        let streamed = headers(&[
            ("content-length", "100"),
            ("x-amz-content-sha256", "STREAMING-UNSIGNED-PAYLOAD-TRAILER"),
        ]);
        assert!(!is_document(&Method::POST, "/b", false, "delete", &streamed));
        assert!(!is_document(&Method::POST, "/b", false, "delete", &HeaderMap::new()));
    }

    #[tokio::test]
    async fn verdicts() {
        let body = Bytes::from_static(b"<Delete><Object><Key>a</Key></Object></Delete>");
        let md5 = {
            use base64::Engine as _;
            use md5::Digest as _;
            base64::engine::general_purpose::STANDARD.encode(md5::Md5::digest(&body[..]))
        };
        assert!(matches!(
            verdict(&HeaderMap::new(), &body, false).await,
            BodyDigest::Unclaimed
        ));
        let good = headers(&[("content-md5", &md5)]);
        assert!(matches!(verdict(&good, &body, false).await, BodyDigest::Verified));
        let other = headers(&[("content-md5", "1B2M2Y8AsgTpgAmY7PhCfg==")]);
        assert!(
            matches!(verdict(&other, &body, false).await, BodyDigest::Refused(c, ..) if c == S3ErrorCode::BadDigest)
        );
        let junk = headers(&[("content-md5", "notbase64!!")]);
        assert!(
            matches!(verdict(&junk, &body, false).await, BodyDigest::Refused(c, ..) if c == S3ErrorCode::InvalidDigest)
        );
        let crc = headers(&[("x-amz-checksum-crc32", "AAAAAA==")]);
        assert!(matches!(verdict(&crc, &body, false).await, BodyDigest::Refused(c, ..) if c == S3ErrorCode::BadDigest));
        assert!(enforce("DeleteObjects", Some(&BodyDigest::Unclaimed)).is_err());
        assert!(enforce("PutObjectTagging", Some(&BodyDigest::Unclaimed)).is_ok());
        assert!(enforce(
            "PutObject",
            Some(&BodyDigest::Refused(S3ErrorCode::BadDigest, String::new(), None, None))
        )
        .is_ok());
        assert!(enforce(
            "CompleteMultipartUpload",
            Some(&BodyDigest::Refused(S3ErrorCode::BadDigest, String::new(), None, None))
        )
        .is_err());
    }
}
