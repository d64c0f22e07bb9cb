//! SigV2 header authentication of bucket-level requests sent without a trailing slash, and the
//! headers a V2 presigned URL carries in its query ([`hoist_presigned_headers`]).
//!
//! In Signature Version 2 the string to sign ends with the canonical resource. For a request
//! that names only a bucket, S3 takes that resource to be `/bucket/`, and clients sign it that
//! way (botocore with `signature_version="s3"` signs `/bucket/` while it sends `PUT /bucket` for
//! CreateBucket and `GET /bucket?...` for ListObjects). s3s builds the resource from the request
//! path as it came, so such requests failed with `SignatureDoesNotMatch`. Other clients sign the
//! path as sent (`/bucket`), which s3s already accepts.
//!
//! Presigned V2 URLs are signed the same way (botocore's `generate_presigned_url` for
//! ListObjects of a path-style bucket signs `/bucket/` and sends `/bucket?...`).
//!
//! So before s3s sees a path-style, bucket-only request with a V2 `Authorization` header or a
//! V2 presigned query (`AWSAccessKeyId`, `Signature`, `Expires`), we check whether its
//! signature is the one for `/bucket/`; if it is, the path gets its trailing slash (which names
//! the same bucket) and s3s verifies it as usual. Nothing is accepted here:
//! s3s still verifies every signature, so a wrong guess can only fail.
//!
//! s3s also takes a V2 header-signed request of any date, so one captured request could be
//! replayed for ever. [`check_date`] holds V2 requests to S3's rules before any signature is
//! checked: a date that is missing, unreadable or before 1970 is 403 `AccessDenied`, and one
//! more than 15 minutes from the gateway's clock is 403 `RequestTimeTooSkewed`.

use base64::Engine;
use http::{HeaderMap, Method, Request, Uri};
use subtle::ConstantTimeEq;

use crate::auth::GatewayAuth;
use s3s::auth::S3Auth;

/// Query parameters that are part of the V2 canonical resource (S3's sub-resources and the
/// response header overrides), in the sorted order they are appended in.
const SUB_RESOURCES: &[&str] = &[
    "accelerate",
    "acl",
    "analytics",
    "cors",
    "defaultObjectAcl",
    "delete",
    "inventory",
    "lifecycle",
    "location",
    "logging",
    "metrics",
    "notification",
    "object-lock",
    "partNumber",
    "policy",
    "replication",
    "requestPayment",
    "response-cache-control",
    "response-content-disposition",
    "response-content-encoding",
    "response-content-language",
    "response-content-type",
    "response-expires",
    "restore",
    "select",
    "select-type",
    "storageClass",
    "tagging",
    "torrent",
    "uploadId",
    "uploads",
    "versionId",
    "versioning",
    "versions",
    "website",
];

/// `(access key, signature)` of a V2 `Authorization: AWS key:signature` header.
fn v2_credentials(headers: &HeaderMap) -> Option<(&str, &str)> {
    let auth = headers.get(http::header::AUTHORIZATION)?.to_str().ok()?;
    let rest = auth.strip_prefix("AWS ")?;
    rest.trim().split_once(':')
}

/// The path of a path-style request naming only a bucket (`/bucket`), if this is one.
fn bucket_only_path(uri: &Uri) -> Option<&str> {
    let path = uri.path();
    let name = path.strip_prefix('/')?;
    (!name.is_empty() && !name.contains('/')).then_some(path)
}

/// `(access key, signature, expires)` of a V2 presigned URL's query, percent-decoded.
fn v2_presigned_credentials(query: Option<&str>) -> Option<(String, String, String)> {
    let param = |name| crate::signed_path::query_param(query?, name);
    Some((param("AWSAccessKeyId")?, param("Signature")?, param("Expires")?))
}

/// The V2 string to sign of a request whose canonical resource path is `resource_path`.
/// `expires` is a presigned URL's `Expires`, which takes the Date line's place.
fn string_to_sign(
    method: &Method,
    headers: &HeaderMap,
    query: Option<&str>,
    resource_path: &str,
    expires: Option<&str>,
) -> String {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or("");
    let date_line = match expires {
        Some(expires) => expires,
        // With x-amz-date present, the Date line is empty (the header is signed below).
        None if headers.contains_key("x-amz-date") => "",
        None => header("date"),
    };
    let mut s = format!(
        "{}\n{}\n{}\n{}\n",
        method.as_str(),
        header("content-md5"),
        header("content-type"),
        date_line
    );
    let mut amz: Vec<(&str, &str)> = headers
        .iter()
        .filter(|(n, _)| n.as_str().starts_with("x-amz-"))
        .map(|(n, v)| (n.as_str(), v.to_str().unwrap_or("").trim()))
        .collect();
    amz.sort_by_key(|(n, _)| *n);
    let mut i = 0;
    while i < amz.len() {
        let name = amz[i].0;
        let values: Vec<&str> = amz[i..]
            .iter()
            .take_while(|(n, _)| *n == name)
            .map(|(_, v)| *v)
            .collect();
        i += values.len();
        s.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    s.push_str(resource_path);
    let params: Vec<(String, String)> = query
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            let dec = |x: &str| percent_encoding::percent_decode_str(x).decode_utf8_lossy().into_owned();
            (dec(k), dec(v))
        })
        .collect();
    let mut first = true;
    for name in SUB_RESOURCES {
        if let Some((_, v)) = params.iter().find(|(k, _)| k == name) {
            s.push(if first { '?' } else { '&' });
            first = false;
            s.push_str(name);
            if !v.is_empty() {
                s.push('=');
                s.push_str(v);
            }
        }
    }
    s
}

/// How far a V2 request's date may be from the gateway's clock, either way: S3's 15 minutes.
pub const MAX_SKEW_SECS: i64 = 15 * 60;

/// Why a V2 header-signed request's date refuses it.
#[derive(Debug, PartialEq, Eq)]
pub enum DateRefusal {
    /// No date, one that does not parse, or one before the epoch: S3 answers 403
    /// `AccessDenied`.
    Invalid,
    /// A date further than [`MAX_SKEW_SECS`] from the gateway's clock (403
    /// `RequestTimeTooSkewed`); the request's time, as an HTTP date, for the error document.
    Skewed(String),
}

/// Checks the date of a request signed with a V2 `Authorization` header against `now`: the
/// `x-amz-date` header where there is one (it is what the signature covers then, even when
/// empty), else `Date`. Requests not signed that way (V4, presigned URLs, anonymous) pass:
/// s3s checks a V4 date and a presigned URL's expiry itself.
pub fn check_date(headers: &HeaderMap, query: Option<&str>, now: time::OffsetDateTime) -> Result<(), DateRefusal> {
    // s3s reads a `Signature` query parameter as a presigned URL first, whatever the header says.
    let presigned = query.is_some_and(|q| q.split('&').any(|p| p.split('=').next() == Some("Signature")));
    if v2_credentials(headers).is_none() || presigned {
        return Ok(());
    }
    let value = headers
        .get("x-amz-date")
        .or_else(|| headers.get(http::header::DATE))
        .ok_or(DateRefusal::Invalid)?;
    let at = value.to_str().ok().and_then(parse_date).ok_or(DateRefusal::Invalid)?;
    if at < time::OffsetDateTime::UNIX_EPOCH {
        return Err(DateRefusal::Invalid);
    }
    if (now - at).abs() > time::Duration::seconds(MAX_SKEW_SECS) {
        let shown = at
            .format(&time::format_description::well_known::Rfc2822)
            .unwrap_or_default();
        return Err(DateRefusal::Skewed(shown));
    }
    Ok(())
}

/// A V2 request date: the HTTP date forms (RFC 1123 with `GMT` or a numeric zone, RFC 850,
/// asctime) or the ISO 8601 basic form `20100707T215304Z` that some clients put in
/// `x-amz-date`.
fn parse_date(s: &str) -> Option<time::OffsetDateTime> {
    use time::format_description::well_known::Rfc2822;
    let s = s.trim();
    if let Ok(t) = time::OffsetDateTime::parse(s, &Rfc2822) {
        return Some(t);
    }
    if let Ok(t) = httpdate::parse_http_date(s) {
        return Some(time::OffsetDateTime::from(t));
    }
    let basic = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    time::PrimitiveDateTime::parse(s, &basic).ok().map(|t| t.assume_utc())
}

/// Base64 of HMAC-SHA1 over `data`: the V2 signature.
fn sign(secret: &str, data: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY, secret.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(ring::hmac::sign(&key, data.as_bytes()).as_ref())
}

/// Adds the trailing slash to a bucket-only path when the request's V2 signature (header or
/// presigned) was made for `/bucket/` (see the module docs). Virtual-hosted requests
/// (`Host: bucket.domain`, path `/`) are left alone: s3s already signs them as `/bucket/`.
pub async fn normalize_bucket_path<B>(req: &mut Request<B>, auth: &GatewayAuth) {
    let Some(path) = bucket_only_path(req.uri()) else {
        return;
    };
    // s3s reads a presigned query before any header, so this looks in the same order.
    let (access_key, signature, expires) = match v2_presigned_credentials(req.uri().query()) {
        Some((key, signature, expires)) => (key, signature, Some(expires)),
        None => match v2_credentials(req.headers()) {
            Some((key, signature)) => (key.to_owned(), signature.to_owned(), None),
            None => return,
        },
    };
    let with_slash = format!("{path}/");
    let Ok(secret) = auth.get_secret_key(&access_key).await else {
        return;
    };
    let sts = string_to_sign(
        req.method(),
        req.headers(),
        req.uri().query(),
        &with_slash,
        expires.as_deref(),
    );
    if !bool::from(sign(secret.expose(), &sts).as_bytes().ct_eq(signature.as_bytes())) {
        return;
    }
    replace_path(req, with_slash);
}

/// Makes a V2 presigned URL's header parameters headers again. A V2 presigner moves the headers
/// it signs into the URL's query, since whoever uses the URL will not send them: every `x-amz-*`
/// header (user metadata, an ACL), `Content-Type` and `Content-MD5` (botocore's
/// `HmacV1QueryAuth`, boto 2's `generate_url`). S3 reads them back as the request's headers, for
/// the signature and for the request itself (the metadata is stored); s3s looks for them in the
/// headers only, so such URLs failed with `SignatureDoesNotMatch`. A parameter is moved only
/// where the request has no such header; the signature still covers every value moved, so
/// nothing unsigned gets in this way.
pub fn hoist_presigned_headers<B>(req: &mut Request<B>) {
    let Some(query) = req.uri().query() else { return };
    if v2_presigned_credentials(Some(query)).is_none() {
        return;
    }
    let dec = |x: &str| {
        percent_encoding::percent_decode_str(&x.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    let mut moved: Vec<(http::HeaderName, http::HeaderValue)> = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let name = dec(k).to_ascii_lowercase();
        if !(name.starts_with("x-amz-") || name == "content-type" || name == "content-md5") {
            continue;
        }
        let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(&dec(v)),
        ) else {
            continue;
        };
        if !req.headers().contains_key(&name) && !moved.iter().any(|(n, _)| *n == name) {
            moved.push((name, value));
        }
    }
    req.headers_mut().extend(moved);
}

/// Gives `req` the path `path` (already in its escaped form), keeping its query; leaves the
/// request as it is if that would not make a URI.
pub(crate) fn replace_path<B>(req: &mut Request<B>, path: String) {
    let query = req.uri().query().map(str::to_owned);
    replace_path_and_query(req, &path, query.as_deref());
}

/// Gives `req` the path `path` and the query `query` (both already in their escaped forms);
/// leaves the request as it is if that would not make a URI.
pub(crate) fn replace_path_and_query<B>(req: &mut Request<B>, path: &str, query: Option<&str>) {
    let pq = match query {
        Some(q) => format!("{path}?{q}"),
        None => path.to_owned(),
    };
    let mut parts = req.uri().clone().into_parts();
    let Ok(pq) = pq.parse() else { return };
    parts.path_and_query = Some(pq);
    if let Ok(uri) = Uri::from_parts(parts) {
        *req.uri_mut() = uri;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn string_to_sign_follows_the_v2_rules() {
        let mut h = HeaderMap::new();
        h.insert("date", "Tue, 27 Mar 2007 19:36:42 +0000".parse().unwrap());
        h.insert("content-type", "text/plain".parse().unwrap());
        h.append("x-amz-meta-b", " 2 ".parse().unwrap());
        h.append("x-amz-meta-a", "1".parse().unwrap());
        h.append("x-amz-meta-b", "3".parse().unwrap());
        let s = string_to_sign(&Method::PUT, &h, Some("prefix=x&acl&uploadId=a%2Bb"), "/b/k", None);
        assert_eq!(
            s,
            "PUT\n\ntext/plain\nTue, 27 Mar 2007 19:36:42 +0000\nx-amz-meta-a:1\nx-amz-meta-b:2,3\n/b/k?acl&uploadId=a+b"
        );
        h.insert("x-amz-date", "Tue, 27 Mar 2007 19:36:42 +0000".parse().unwrap());
        let s = string_to_sign(&Method::GET, &h, None, "/b/", None);
        assert!(s.starts_with("GET\n\ntext/plain\n\nx-amz-date:"), "{s}");
        let s = string_to_sign(&Method::GET, &h, Some("Expires=99&list-type=2"), "/b/", Some("99"));
        assert!(s.starts_with("GET\n\ntext/plain\n99\nx-amz-date:"), "{s}");
        assert!(s.ends_with("/b/"), "{s}");
    }

    #[test]
    fn presigned_header_parameters_become_headers() {
        let hoisted = |uri: &str, headers: &[(&str, &str)]| {
            let mut b = Request::builder().method("PUT").uri(uri);
            for (n, v) in headers {
                b = b.header(*n, *v);
            }
            let mut req = b.body(()).unwrap();
            hoist_presigned_headers(&mut req);
            let mut h: Vec<(String, String)> = req
                .headers()
                .iter()
                .map(|(n, v)| (n.to_string(), v.to_str().unwrap().to_owned()))
                .collect();
            h.sort();
            h
        };
        let signed = "AWSAccessKeyId=AK&Signature=c2ln&Expires=99";
        assert_eq!(
            hoisted(
                &format!("/b/k?x-amz-meta-team=a%20b&X-Amz-Acl=private&content-type=text%2Fplain&prefix=p&{signed}"),
                &[]
            ),
            [
                ("content-type".to_owned(), "text/plain".to_owned()),
                ("x-amz-acl".to_owned(), "private".to_owned()),
                ("x-amz-meta-team".to_owned(), "a b".to_owned()),
            ]
        );
        assert_eq!(
            hoisted(
                &format!("/b/k?content-type=text%2Fplain&{signed}"),
                &[("content-type", "x/y")]
            ),
            [("content-type".to_owned(), "x/y".to_owned())],
            "a header sent wins"
        );
        assert!(
            hoisted("/b/k?x-amz-meta-team=a&X-Amz-Signature=s", &[]).is_empty(),
            "V4 URLs are left alone"
        );
        assert!(hoisted("/b/k?x-amz-meta-team=a", &[]).is_empty(), "not presigned");
    }

    /// The example from S3's V2 documentation (GET of an object, date header).
    #[test]
    fn signature_matches_the_documented_example() {
        let mut h = HeaderMap::new();
        h.insert("date", "Tue, 27 Mar 2007 19:36:42 +0000".parse().unwrap());
        let sts = string_to_sign(&Method::GET, &h, None, "/awsexamplebucket1/photos/puppy.jpg", None);
        assert_eq!(
            sign("wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", &sts),
            "qgk2+6Sv9/oM7G3qLEjTH1a1l1g="
        );
    }

    #[test]
    fn v2_dates_are_held_to_s3s_window() {
        let now = time::macros::datetime!(2026-11-26 12:00:00 UTC);
        let check = |headers: &[(&'static str, &str)], query: Option<&str>| {
            let mut h = HeaderMap::new();
            h.insert("authorization", "AWS AKID:c2lnbmF0dXJl".parse().unwrap());
            for (n, v) in headers {
                h.insert(*n, v.parse().unwrap());
            }
            check_date(&h, query, now)
        };
        assert_eq!(check(&[("date", "Thu, 26 Nov 2026 12:14:00 GMT")], None), Ok(()));
        assert_eq!(check(&[("date", "Thu, 26 Nov 2026 11:46:00 +0000")], None), Ok(()));
        assert_eq!(check(&[("date", "Thursday, 26-Nov-26 12:00:00 GMT")], None), Ok(()));
        assert_eq!(check(&[("x-amz-date", "20261126T120500Z")], None), Ok(()));
        // x-amz-date, not Date, is what a V2 signature covers when both are sent.
        let both = [
            ("date", "Thu, 26 Nov 2026 12:00:00 GMT"),
            ("x-amz-date", "Tue, 07 Jul 2010 21:53:04 GMT"),
        ];
        assert_eq!(
            check(&both, None),
            Err(DateRefusal::Skewed("Wed, 07 Jul 2010 21:53:04 +0000".into()))
        );
        assert!(matches!(
            check(&[("date", "Thu, 26 Nov 2026 12:16:00 GMT")], None),
            Err(DateRefusal::Skewed(_))
        ));
        assert!(matches!(
            check(&[("x-amz-date", "Tue, 07 Jul 9999 21:53:04 GMT")], None),
            Err(DateRefusal::Skewed(_))
        ));
        for bad in ["Bad Date", "", "Tue, 07 Jul 1950 21:53:04 GMT"] {
            assert_eq!(
                check(&[("x-amz-date", bad)], None),
                Err(DateRefusal::Invalid),
                "{bad:?}"
            );
        }
        assert_eq!(check(&[], None), Err(DateRefusal::Invalid));
        // Presigned URLs carry Expires instead, and s3s checks it; V4 and anonymous requests
        // are not V2 header-signed.
        assert_eq!(check(&[], Some("AWSAccessKeyId=AKID&Expires=1&Signature=x")), Ok(()));
        let mut v4 = HeaderMap::new();
        v4.insert(
            "authorization",
            "AWS4-HMAC-SHA256 Credential=AKID/20261126/us-east-1/s3/aws4_request"
                .parse()
                .unwrap(),
        );
        assert_eq!(check_date(&v4, None, now), Ok(()));
        assert_eq!(check_date(&HeaderMap::new(), None, now), Ok(()));
    }

    #[test]
    fn only_path_style_bucket_paths() {
        let p = |s: &str| bucket_only_path(&s.parse::<Uri>().unwrap()).map(str::to_owned);
        assert_eq!(p("/bucket?list-type=2").as_deref(), Some("/bucket"));
        assert_eq!(p("/bucket/"), None);
        assert_eq!(p("/bucket/key"), None);
        assert_eq!(p("/"), None);
    }
}
