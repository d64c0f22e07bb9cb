//! Read headers that S3 ignores: Range headers, and conditions on dates that are not dates.
//!
//! HTTP lets a server ignore a Range header it cannot or will not honour, and S3 does so for
//! several ranges (`bytes=0-1,4-5`), a first byte past the last (`bytes=5-2`), other units and
//! malformed values: the answer is 200 with the whole object. Likewise an `If-Modified-Since` or
//! `If-Unmodified-Since` that is not an HTTP date must be ignored (RFC 9110 13.1.3, 13.1.4). s3s
//! parses these headers while it decodes the GetObject/HeadObject input and refuses what it
//! cannot parse with 400; the headers are usually signed, so they cannot be dropped before the
//! signature is checked.
//!
//! [`IgnoredHeaders`] is an s3s custom route, which s3s consults after verifying the signature:
//! it takes the GET and HEAD requests with such a header and dispatches them once more
//! through the same service without it. Writes whose attribute headers hold bytes past ASCII
//! take the same second pass, with those values carried beside the request
//! (`raw_headers.rs`), and so does a PutBucketEncryption whose document names an element s3s's
//! schema lacks (`BlockedEncryptionTypes`, `unconfigured.rs`), with the document as s3s can read
//! it: the document is signed (its SHA-256 is in a signed header), so it can only be changed
//! once the first pass has verified it. That second pass carries no signature (the
//! first one was verified); the access check accepts it through [`Verified`], an extension only
//! this route sets, so clients cannot forge it.

use std::sync::{Arc, OnceLock};

use http::{HeaderMap, Method, Uri};
use hyper::http::Extensions;
use s3s::route::S3Route;
use s3s::service::S3Service;
use s3s::{s3_error, Body, S3Request, S3Response, S3Result};

use super::unconfigured::{blocks_sse_c, without_blocked_encryption_types, BlockedEncryptionTypes, BlocksSseC};

/// The access key of a request whose signature s3s verified on its first pass.
#[derive(Debug, Clone)]
pub(crate) struct Verified(pub String);

/// Query parameters of presigned URLs (V4 and V2): they authenticated the first pass.
const PRESIGN_PARAMS: [&str; 10] = [
    "X-Amz-Algorithm",
    "X-Amz-Credential",
    "X-Amz-Date",
    "X-Amz-Expires",
    "X-Amz-SignedHeaders",
    "X-Amz-Signature",
    "X-Amz-Security-Token",
    "AWSAccessKeyId",
    "Signature",
    "Expires",
];

/// The custom route; `service` is the service it belongs to, set once that is built.
pub(crate) struct IgnoredHeaders {
    pub service: Arc<OnceLock<S3Service>>,
}

/// Whether S3 would ignore this request's Range header (s3s would refuse it).
pub(crate) fn range_ignored(headers: &HeaderMap) -> bool {
    let mut values = headers.get_all(http::header::RANGE).iter();
    let Some(first) = values.next() else { return false };
    if values.next().is_some() {
        return true;
    }
    first.to_str().map_or(true, |v| s3s::dto::Range::parse(v).is_err())
}

/// A single byte range whose numbers are too large to hold (s3s refuses it) in a form that asks
/// for what RFC 9110 says it asks for: a last position past any object's end is the rest of the
/// object (`bytes=5-`), a first position past it is unsatisfiable (416 `InvalidRange`), and a
/// suffix longer than any object is the whole object. `None` for anything else, including a
/// range whose first position is after its last (ignored, as S3 ignores it).
pub(crate) fn saturated_range(value: &str) -> Option<String> {
    // s3s takes positions up to i64::MAX (no object comes near) and suffixes up to u64::MAX.
    const MAX: u64 = i64::MAX as u64;
    let spec = value.trim().strip_prefix("bytes=")?.trim();
    let digits = |d: &str| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit());
    let fits = |d: &str| d.parse::<u64>().is_ok_and(|n| n <= MAX);
    // Digit strings compared as numbers, however long.
    let number = |d: &str| {
        let d = d.trim_start_matches('0');
        (d.len(), d.to_owned())
    };
    let (first, last) = spec.split_once('-')?;
    let saturated = if first.is_empty() {
        (digits(last) && last.parse::<u64>().is_err()).then(|| format!("bytes=-{}", u64::MAX))?
    } else if !digits(first) || !(last.is_empty() || digits(last)) || (!last.is_empty() && number(first) > number(last))
    {
        return None;
    } else if !fits(first) {
        format!("bytes={MAX}-")
    } else if !last.is_empty() && !fits(last) {
        format!("bytes={first}-")
    } else {
        return None;
    };
    s3s::dto::Range::parse(&saturated).is_ok().then_some(saturated)
}

/// Conditions on a date that do not hold a date, which a read ignores.
const DATE_CONDITIONS: [http::header::HeaderName; 2] =
    [http::header::IF_MODIFIED_SINCE, http::header::IF_UNMODIFIED_SINCE];

/// Whether `headers` has `name` with a value that is not an HTTP date.
fn unreadable_date(headers: &HeaderMap, name: &http::header::HeaderName) -> bool {
    headers
        .get(name)
        .is_some_and(|v| v.to_str().ok().and_then(super::parse_http_date).is_none())
}

/// `uri` without the presigning parameters.
fn without_presign(uri: &Uri) -> S3Result<Uri> {
    let Some(q) = uri.query() else { return Ok(uri.clone()) };
    let kept: Vec<&str> = q
        .split('&')
        .filter(|p| {
            let name = p.split_once('=').map_or(*p, |(k, _)| k);
            !PRESIGN_PARAMS.contains(&name)
        })
        .collect();
    let pq = if kept.is_empty() {
        uri.path().to_owned()
    } else {
        format!("{}?{}", uri.path(), kept.join("&"))
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(pq.parse().map_err(|_| s3_error!(InvalidURI))?);
    Uri::from_parts(parts).map_err(|_| s3_error!(InvalidURI))
}

/// The PutBucketEncryption document of the first pass as s3s can read it, its length and
/// digests in `headers` made those of the new one (the first pass's digests were checked against
/// the document as sent: `body_digest.rs`), and whether its rules block SSE-C, which the
/// handler records ([`BlocksSseC`]).
async fn readable_document(mut body: Body, headers: &mut HeaderMap) -> S3Result<(Body, bool)> {
    // s3s verifies the payload's SHA-256 as the body is read; the document is small and
    // already buffered (`body_digest.rs`), so a failed read is a digest that did not hold.
    let doc = body
        .store_all_limited(MAX_DOCUMENT)
        .await
        .map_err(|_| super::error::content_sha256_mismatch())?;
    let sse_c = blocks_sse_c(&doc);
    let doc = without_blocked_encryption_types(doc);
    let digests: Vec<_> = headers
        .keys()
        .filter(|n| n.as_str() == "content-md5" || n.as_str().starts_with("x-amz-checksum-"))
        .cloned()
        .collect();
    for name in digests {
        headers.remove(name);
    }
    headers.remove("x-amz-sdk-checksum-algorithm");
    headers.insert(
        http::HeaderName::from_static("x-amz-content-sha256"),
        http::HeaderValue::from_static("UNSIGNED-PAYLOAD"),
    );
    headers.insert(http::header::CONTENT_LENGTH, doc.len().into());
    Ok((Body::from(doc), sse_c))
}

/// Largest PutBucketEncryption document read for its second pass (S3's documents of bucket
/// settings are far smaller).
const MAX_DOCUMENT: usize = 1 << 20;

#[async_trait::async_trait]
impl S3Route for IgnoredHeaders {
    fn is_match(&self, method: &Method, _uri: &Uri, headers: &HeaderMap, ext: &mut Extensions) -> bool {
        let read = (method == Method::GET || method == Method::HEAD)
            && (range_ignored(headers) || DATE_CONDITIONS.iter().any(|n| unreadable_date(headers, n)));
        // PutObject and CopyObject (PUT), CreateMultipartUpload (POST).
        let write = (method == Method::PUT || method == Method::POST) && super::raw_headers::unreadable(headers);
        let document = method == Method::PUT && ext.get::<BlockedEncryptionTypes>().is_some();
        read || write || document
    }

    async fn check_access(&self, req: &mut S3Request<Body>) -> S3Result<()> {
        // The second pass runs the full access check; what only the first pass can see (its
        // presigning parameters) is checked here.
        if req.credentials.is_none() {
            return Err(s3_error!(AccessDenied, "Anonymous access is not allowed"));
        }
        crate::auth::check_presigned_lifetime(&req.uri)
    }

    async fn call(&self, req: S3Request<Body>) -> S3Result<S3Response<Body>> {
        let cred = req
            .credentials
            .ok_or_else(|| s3_error!(AccessDenied, "Anonymous access is not allowed"))?;
        let service = self
            .service
            .get()
            .ok_or_else(|| s3_error!(ServiceUnavailable, "starting up"))?
            .clone();
        let mut headers = req.headers;
        let mut extensions = req.extensions;
        let body = if extensions.remove::<BlockedEncryptionTypes>().is_some() {
            let (doc, sse_c) = readable_document(req.input, &mut headers).await?;
            if sse_c {
                extensions.insert(BlocksSseC);
            }
            doc
        } else {
            req.input
        };
        let mut again = http::Request::new(body);
        *again.method_mut() = req.method;
        *again.uri_mut() = without_presign(&req.uri)?;
        if super::raw_headers::unreadable(&headers) {
            extensions.insert(super::raw_headers::take(&mut headers));
            if let Some(t) = req.trailing_headers {
                extensions.insert(super::raw_headers::CarriedTrailers(t));
            }
        }
        if range_ignored(&headers) {
            let saturated = headers
                .get(http::header::RANGE)
                .and_then(|v| v.to_str().ok())
                .and_then(saturated_range);
            match saturated.and_then(|r| http::HeaderValue::from_str(&r).ok()) {
                Some(r) if headers.get_all(http::header::RANGE).iter().count() == 1 => {
                    headers.insert(http::header::RANGE, r);
                }
                _ => {
                    headers.remove(http::header::RANGE);
                }
            }
        }
        for name in DATE_CONDITIONS {
            if unreadable_date(&headers, &name) {
                headers.remove(name);
            }
        }
        *again.headers_mut() = headers;
        again.headers_mut().remove(http::header::AUTHORIZATION);
        *again.extensions_mut() = extensions;
        again.extensions_mut().insert(Verified(cred.access_key));
        let resp = service
            .call(again)
            .await
            .map_err(|e| super::internal(format!("{e:?}")))?;
        let (parts, body) = resp.into_parts();
        let mut out = S3Response::new(body);
        out.status = Some(parts.status);
        out.headers = parts.headers;
        out.extensions = parts.extensions;
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_s3_ignores() {
        let h = |vals: &[&str]| {
            let mut m = HeaderMap::new();
            for v in vals {
                m.append(http::header::RANGE, v.parse().unwrap());
            }
            m
        };
        for v in [
            "bytes=5-2",
            "bytes=0-1,4-5",
            "items=0-1",
            "bytes=abc",
            "bytes=",
            "bytes=1",
        ] {
            assert!(range_ignored(&h(&[v])), "{v}");
        }
        assert!(range_ignored(&h(&["bytes=0-1", "bytes=2-3"])));
        for v in ["bytes=0-1", "bytes=5-", "bytes=-3", "bytes=100-200"] {
            assert!(!range_ignored(&h(&[v])), "{v}");
        }
        assert!(!range_ignored(&HeaderMap::new()));
    }

    #[test]
    fn ranges_too_large_to_hold_ask_for_what_they_name() {
        let huge = "99999999999999999999999";
        assert_eq!(saturated_range(&format!("bytes=5-{huge}")).as_deref(), Some("bytes=5-"));
        let past = format!("bytes={}-", i64::MAX);
        assert_eq!(saturated_range(&format!("bytes={huge}-")), Some(past.clone()));
        assert_eq!(saturated_range(&format!("bytes={huge}-{huge}9")), Some(past));
        assert_eq!(
            saturated_range(&format!("bytes=-{huge}")),
            Some(format!("bytes=-{}", u64::MAX))
        );
        // Past what s3s takes, though a u64 holds it.
        assert_eq!(
            saturated_range(&format!("bytes=0-{}", u64::MAX)).as_deref(),
            Some("bytes=0-")
        );
        // First after last, several ranges, numbers that fit, or no range at all: not this.
        for v in [
            format!("bytes={huge}-5"),
            format!("bytes={huge}9-{huge}"),
            format!("bytes=0-{huge},1-2"),
            "bytes=0-5".to_owned(),
            "bytes=-5".to_owned(),
            "bytes=abc".to_owned(),
            format!("items=0-{huge}"),
        ] {
            assert_eq!(saturated_range(&v), None, "{v}");
        }
    }

    #[test]
    fn presign_parameters_are_dropped() {
        let u: Uri = "/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&partNumber=1&X-Amz-Signature=ab"
            .parse()
            .unwrap();
        assert_eq!(without_presign(&u).unwrap().to_string(), "/b/k?partNumber=1");
        let u: Uri = "/b/k?AWSAccessKeyId=a&Expires=1&Signature=x".parse().unwrap();
        assert_eq!(without_presign(&u).unwrap().to_string(), "/b/k");
    }
}
