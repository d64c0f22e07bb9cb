//! Requests mended or answered before s3s sees them: an empty `Authorization`, repeated
//! `Content-Encoding` lines, a credential for something that is not a region, a session token
//! this gateway never issued.

use http::{HeaderValue, Request, Response};
use s3s::Body;

/// An `Authorization` header with nothing in it names no credentials: S3 serves such a request
/// as an anonymous one (403 `AccessDenied` unless a policy or ACL lets anyone in), where s3s
/// would refuse the header itself as malformed (400).
pub(super) fn drop_empty_authorization<B>(req: &mut Request<B>) {
    let auth = http::header::AUTHORIZATION;
    if req
        .headers()
        .get(&auth)
        .is_some_and(|v| v.as_bytes().trim_ascii().is_empty())
    {
        req.headers_mut().remove(auth);
    }
}

/// Several `Content-Encoding` lines as one, their values joined by `,`. The AWS SDK for Go v2
/// sends a compressed object's coding and the `aws-chunked` framing of a trailing checksum as
/// two lines; HTTP lets a list-valued field be split so, and S3 reads them as one list, where
/// s3s refuses a repeated header (400 "duplicate header"). A bare `,` is how SigV4 joins
/// repeated values in the canonical request, so the signature reads the same either way.
pub(super) fn join_content_encodings(headers: &mut http::HeaderMap) {
    let name = http::header::CONTENT_ENCODING;
    let mut values = headers.get_all(&name).iter();
    if values.next().is_none() || values.next().is_none() {
        return;
    }
    let joined: Vec<u8> = headers
        .get_all(&name)
        .iter()
        .map(|v| v.as_bytes().trim_ascii())
        .collect::<Vec<_>>()
        .join(&b","[..]);
    if let Ok(v) = http::HeaderValue::from_bytes(&joined) {
        headers.insert(name, v);
    }
}

/// The region a SigV4 credential (the `Authorization` header's, or a presigned URL's
/// `X-Amz-Credential`) names, when it is not a region name at all (`[a-z0-9-]+`): s3cmd's
/// default configuration signs for `US`, git-annex for the endpoint's host name. s3s cannot read
/// such a scope (it would refuse it with an `InvalidRequest` that tells the client nothing); the
/// request is signed again in the gateway's region if its signature holds in the scope it names
/// (`crate::signed_path::resign_for_region`), and otherwise answered as S3 answers a request
/// signed for another region, with `AuthorizationHeaderMalformed` naming the region to use,
/// where clients resend it. Also whether the credential came in the query (a presigned URL),
/// which S3 answers with another code.
pub(super) fn unusable_region<B>(req: &Request<B>) -> Option<(String, bool)> {
    // Checked on every request: nothing is allocated unless the region is unusable.
    let header = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .filter(|v| v.starts_with("AWS4-HMAC-SHA256"));
    if let Some(v) = header {
        let credential = v.split_once("Credential=")?.1.split(',').next()?.trim();
        return unusable_in(credential).map(|r| (r.to_owned(), false));
    }
    let v = req
        .uri()
        .query()?
        .split('&')
        .find_map(|p| p.strip_prefix("X-Amz-Credential="))?;
    let credential = percent_encoding::percent_decode_str(v).decode_utf8_lossy();
    unusable_in(&credential).map(|r| (r.to_owned(), true))
}

/// The region of credential scope `AK/date/region/service/aws4_request`, if it is not a region
/// name (`[a-z0-9-]+`; empty is left to s3s).
fn unusable_in(credential: &str) -> Option<&str> {
    let region = credential.split('/').nth(2)?;
    let usable = region.is_empty()
        || region
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    (!usable).then_some(region)
}

/// 400 for a request signed for region `asked`, naming `ours` in the message and in
/// `<Region>`, where clients (s3cmd, botocore) read it: `AuthorizationHeaderMalformed`, or
/// `AuthorizationQueryParametersError` for a presigned URL (`in_query`).
pub(super) fn wrong_region_answer(asked: &str, in_query: bool, ours: &str) -> Response<Body> {
    let esc = crate::s3::post_form::xml_escape;
    let (code, what) = if in_query {
        (
            "AuthorizationQueryParametersError",
            "Error parsing the X-Amz-Credential parameter",
        )
    } else {
        ("AuthorizationHeaderMalformed", "The authorization header is malformed")
    };
    let message = format!(
        "{what}; the region &apos;{}&apos; is wrong; expecting &apos;{}&apos;",
        esc(asked),
        esc(ours)
    );
    bad_request(crate::s3::error_document(
        code,
        &message,
        &format!("<Region>{}</Region>", esc(ours)),
    ))
}

/// Whether a request bears a session token (`x-amz-security-token`, or a presigned URL's
/// `X-Amz-Security-Token`). This gateway issues none (it offers no STS), so none it is given is
/// valid; S3 refuses a request whose token it cannot validate, and serving it on the access key
/// alone would ignore whatever the token was meant to limit.
pub(super) fn carries_session_token<B>(req: &Request<B>) -> bool {
    req.headers().contains_key("x-amz-security-token")
        || req.uri().query().is_some_and(|q| {
            q.split('&').any(|p| {
                p.split_once('=')
                    .map_or(p, |(k, _)| k)
                    .eq_ignore_ascii_case("X-Amz-Security-Token")
            })
        })
}

/// S3's answer to a session token it cannot validate.
pub(super) fn invalid_token_answer() -> Response<Body> {
    bad_request(crate::s3::error_document(
        "InvalidToken",
        "The provided token is malformed or otherwise invalid.",
        "",
    ))
}

/// S3's answer to a presigned V4 URL whose `X-Amz-Expires` is not a number of seconds S3
/// takes: 400 `AuthorizationQueryParametersError`, as S3 words it. s3s answers a negative or
/// non-numeric value with `InvalidRequest` "missing presigned url v4 fields", which tells the
/// user nothing; `None` for any other request (s3s checks the upper bound, a week, itself).
pub(super) fn refused_expiry<B>(req: &Request<B>) -> Option<Response<Body>> {
    let query = req.uri().query()?;
    let mut signed = false;
    let mut expires = None;
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k == "X-Amz-Signature" {
            signed = true;
        } else if k == "X-Amz-Expires" {
            expires = Some(v);
        }
    }
    let expires = expires.filter(|_| signed)?;
    let message = match expires.parse::<i64>() {
        Ok(n) if n < 0 => "X-Amz-Expires must be non-negative",
        Ok(_) => return None,
        Err(_) => "X-Amz-Expires should be a number",
    };
    Some(bad_request(crate::s3::error_document(
        "AuthorizationQueryParametersError",
        message,
        "",
    )))
}

/// The values `x-amz-content-sha256` may take besides a SHA-256 in hex, as S3 lists them.
const PAYLOAD_KINDS: [&str; 6] = [
    "UNSIGNED-PAYLOAD",
    "STREAMING-UNSIGNED-PAYLOAD-TRAILER",
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD",
    "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER",
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD",
    "STREAMING-AWS4-ECDSA-P256-SHA256-PAYLOAD-TRAILER",
];

/// S3's answer to a SigV4 request (header-signed or presigned) whose `x-amz-content-sha256` is
/// neither a SHA-256 in hex nor one of [`PAYLOAD_KINDS`]: 400 `InvalidArgument` naming the
/// header and its value, before the signature is checked. s3s answers 403
/// `SignatureDoesNotMatch`, which sends a user looking at keys and clocks for a malformed header.
/// `None` for any other request.
pub(super) fn refused_content_sha256<B>(req: &Request<B>) -> Option<Response<Body>> {
    let value = req.headers().get("x-amz-content-sha256")?;
    let bytes = value.as_bytes();
    let hex = bytes.len() == 64 && bytes.iter().all(u8::is_ascii_hexdigit);
    if hex || PAYLOAD_KINDS.iter().any(|k| k.as_bytes() == bytes) {
        return None;
    }
    let v4 = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .is_some_and(|a| a.as_bytes().starts_with(b"AWS4-HMAC-SHA256"))
        || req
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p.starts_with("X-Amz-Algorithm=")));
    if !v4 {
        return None;
    }
    let message = format!(
        "x-amz-content-sha256 must be {} or a valid sha256 value.",
        PAYLOAD_KINDS.join(", ")
    );
    Some(bad_request(crate::s3::error_document(
        "InvalidArgument",
        &message,
        &crate::s3::argument_detail("x-amz-content-sha256", &String::from_utf8_lossy(bytes)),
    )))
}

/// S3's answer to a PUT whose declared body is over the 5 GiB one upload may carry
/// (`Content-Length`, or an aws-chunked body's `x-amz-decoded-content-length`): 400
/// `EntityTooLarge` with the proposed and the allowed size, before a byte of the body is read
/// (a client that waits for 100 Continue sends none). Without this the gateway would read and
/// stage up to the whole declared size. `None` for any other request.
pub(super) fn refused_size<B>(req: &Request<B>) -> Option<Response<Body>> {
    use crate::s3::MAX_UPLOAD_BYTES;
    if req.method() != http::Method::PUT {
        return None;
    }
    let declared = |name: &str| req.headers().get(name)?.to_str().ok()?.trim().parse::<u64>().ok();
    let size = [declared("x-amz-decoded-content-length"), declared("content-length")]
        .into_iter()
        .flatten()
        .max()
        .filter(|&n| n > MAX_UPLOAD_BYTES)?;
    Some(bad_request(crate::s3::error_document(
        "EntityTooLarge",
        "Your proposed upload exceeds the maximum allowed size",
        &format!("<ProposedSize>{size}</ProposedSize><MaxSizeAllowed>{MAX_UPLOAD_BYTES}</MaxSizeAllowed>"),
    )))
}

/// S3's answer to a V2 header-signed request whose date it will not take (see
/// [`crate::sigv2::check_date`]), before its signature is checked; `None` for any other request.
pub(super) fn refused_v2_date<B>(req: &Request<B>) -> Option<Response<Body>> {
    use crate::sigv2::{check_date, DateRefusal, MAX_SKEW_SECS};
    use time::format_description::well_known::Rfc2822;
    let now = time::OffsetDateTime::now_utc();
    let doc = match check_date(req.headers(), req.uri().query(), now).err()? {
        DateRefusal::Invalid => crate::s3::error_document(
            "AccessDenied",
            "AWS authentication requires a valid Date or x-amz-date header",
            "",
        ),
        DateRefusal::Skewed(request_time) => crate::s3::error_document(
            "RequestTimeTooSkewed",
            "The difference between the request time and the current time is too large.",
            &format!(
                "<RequestTime>{}</RequestTime><ServerTime>{}</ServerTime>\
                 <MaxAllowedSkewMilliseconds>{}</MaxAllowedSkewMilliseconds>",
                crate::s3::post_form::xml_escape(&request_time),
                now.format(&Rfc2822).unwrap_or_default(),
                MAX_SKEW_SECS * 1000
            ),
        ),
    };
    Some(with_status(doc, http::StatusCode::FORBIDDEN))
}

/// S3's answer to an `Authorization` header it cannot read as a signature, before s3s (which
/// answers every such header 400 `InvalidRequest` "invalid header: authorization", a code no
/// client or test suite expects): a scheme S3 does not speak is `InvalidArgument` "Unsupported
/// Authorization Type", a V2 value without `AccessKeyId:Signature` is `InvalidArgument`, and a
/// V4 value without its three components (or with one that is not `Name=value`, or a credential
/// scope of other than five parts) is `AuthorizationHeaderMalformed`. Schemes starting `AWS4-`
/// other than SigV4's are left to s3s. `None` for any other request.
pub(super) fn refused_authorization<B>(req: &Request<B>) -> Option<Response<Body>> {
    let value = req.headers().get(http::header::AUTHORIZATION)?;
    let text = String::from_utf8_lossy(value.as_bytes());
    let text = text.trim();
    let esc = crate::s3::post_form::xml_escape;
    let invalid_argument = |message: &str| {
        bad_request(crate::s3::error_document(
            "InvalidArgument",
            message,
            &crate::s3::argument_detail("Authorization", text),
        ))
    };
    let malformed = |why: &str| {
        bad_request(crate::s3::error_document(
            "AuthorizationHeaderMalformed",
            &format!("The authorization header is malformed; {why}"),
            "",
        ))
    };
    if let Some(v2) = text.strip_prefix("AWS ") {
        return (!v2.contains(':'))
            .then(|| invalid_argument("AWS authorization header is invalid.  Expected AwsAccessKeyId:signature"));
    }
    let Some(v4) = text.strip_prefix("AWS4-HMAC-SHA256 ") else {
        return (!text.starts_with("AWS4-")).then(|| invalid_argument("Unsupported Authorization Type"));
    };
    let mut found = [false; 3];
    for component in v4.split(',').map(str::trim).filter(|c| !c.is_empty()) {
        let Some((name, value)) = component.split_once('=') else {
            return Some(malformed(&format!(
                "the authorization component \"{}\" is malformed.",
                esc(component)
            )));
        };
        match name.trim() {
            "Credential" => {
                found[0] = true;
                if value.trim().split('/').count() != 5 {
                    return Some(malformed(
                        "the Credential is mal-formed; expecting \"&lt;YOUR-AKID&gt;/YYYYMMDD/REGION/SERVICE/aws4_request\".",
                    ));
                }
            }
            "SignedHeaders" => found[1] = true,
            "Signature" => found[2] = true,
            _ => {}
        }
    }
    (!found.iter().all(|f| *f)).then(|| {
        malformed("the authorization header requires three components: Credential, SignedHeaders, and Signature.")
    })
}

/// The POST sub-resources of an object (`/bucket/key?uploads` and so on); a POST of an object
/// naming none of them is no S3 operation.
const OBJECT_POSTS: &[&str] = &["uploads", "uploadId", "restore", "select"];

/// A method S3 has no operation for on the resource addressed: 405 `MethodNotAllowed` naming
/// the method and the kind of resource (`SERVICE`, `BUCKET`, `OBJECT`), as S3 answers, before
/// anything reads the request. Methods outside S3's (PATCH, TRACE, ...) anywhere, and a POST of
/// an object that names no object sub-resource; s3s would answer both 501 `NotImplemented`, a
/// server error, for what is the client's. `host_bucket` tells whether the Host named the
/// bucket, so that the path is all key (asked only of such requests).
pub(super) fn refused_method<B>(req: &Request<B>, host_bucket: impl FnOnce() -> bool) -> Option<Response<Body>> {
    use http::Method;
    let method = req.method();
    let path = req.uri().path().trim_start_matches('/');
    let post = *method == Method::POST;
    // The service root's one operation is ListBuckets (GET; OPTIONS, a browser's preflight, is
    // left to the CORS answer). HEAD has none there either: S3 answers it 405 (s3s: 501).
    let not_listing = path.is_empty() && matches!(*method, Method::PUT | Method::POST | Method::DELETE | Method::HEAD);
    let known = [Method::GET, Method::HEAD, Method::PUT, Method::DELETE, Method::OPTIONS].contains(method);
    if known && !not_listing {
        return None;
    }
    let resource = resource_kind(path, host_bucket());
    let names = || crate::s3::body_digest::query_names(req.uri().query().unwrap_or(""));
    let refused = match resource {
        "BUCKET" if post => return refused_bucket_post(req, &names()),
        "BUCKET" => !known,
        "SERVICE" => true,
        _ => !post || !names().iter().any(|n| OBJECT_POSTS.contains(n)),
    };
    refused.then(|| method_not_allowed(method.as_str(), resource))
}

/// The kind of resource a request's path (without its leading `/`) addresses, as S3 names it in
/// `MethodNotAllowed`: `SERVICE`, `BUCKET` or `OBJECT`. `host_bucket`: the Host named the
/// bucket, so the path is all key.
fn resource_kind(path: &str, host_bucket: bool) -> &'static str {
    match (host_bucket, path.split_once('/')) {
        (true, _) if path.is_empty() => "BUCKET",
        (true, _) => "OBJECT",
        (false, _) if path.is_empty() => "SERVICE",
        (false, Some((_, key))) if !key.is_empty() => "OBJECT",
        (false, _) => "BUCKET",
    }
}

/// A sub-resource that names an S3 operation s3s does not route (501 `NotImplemented`), or a
/// PUT or DELETE of one S3 has no such operation for (405 `MethodNotAllowed`); s3s would run
/// the resource's plain operation instead (see [`super::subresource`]). `host_bucket` as for
/// [`refused_method`].
pub(super) fn refused_subresource<B>(req: &Request<B>, host_bucket: impl FnOnce() -> bool) -> Option<Response<Body>> {
    use super::subresource::{judge, Refusal};
    let query = req.uri().query().filter(|q| !q.is_empty())?;
    let path = req.uri().path().trim_start_matches('/');
    let method = req.method().as_str();
    if !matches!(method, "GET" | "PUT" | "DELETE" | "POST") {
        return None;
    }
    let resource = resource_kind(path, host_bucket());
    if resource == "SERVICE" {
        return None;
    }
    let names = crate::s3::body_digest::query_names(query);
    match judge(method, resource == "BUCKET", &names)? {
        Refusal::MethodNotAllowed(allowed) => {
            let mut resp = method_not_allowed(method, resource);
            if let Ok(v) = HeaderValue::from_str(&allowed.join(", ")) {
                resp.headers_mut().insert(http::header::ALLOW, v);
            }
            Some(resp)
        }
        Refusal::UploadMethodNotAllowed => {
            let mut resp = method_not_allowed(method, "UPLOAD");
            resp.headers_mut()
                .insert(http::header::ALLOW, HeaderValue::from_static("DELETE, POST, GET"));
            Some(resp)
        }
        Refusal::PartNumberWithoutUpload => Some(bad_request(crate::s3::error_document(
            "InvalidArgument",
            "This operation does not accept partNumber without uploadId",
            "<ArgumentName>partNumber</ArgumentName><ArgumentValue>partNumber</ArgumentValue>",
        ))),
        Refusal::NotImplemented(op) => Some(not_implemented(&format!("{op} is not implemented by this gateway"), "")),
    }
}

/// A PutObject that appends (`x-amz-write-offset-bytes`, which S3 takes for objects in
/// directory buckets): 501 `NotImplemented` naming the header. Taken as a plain PutObject, as
/// s3s would, it replaced the object with just the bytes meant for its end.
pub(super) fn refused_append<B>(req: &Request<B>) -> Option<Response<Body>> {
    const HEADER: &str = "x-amz-write-offset-bytes";
    req.headers().contains_key(HEADER).then(|| {
        not_implemented(
            "A header you provided implies functionality that is not implemented",
            &format!("<Header>{HEADER}</Header>"),
        )
    })
}

/// S3's 501 `NotImplemented` with `message` and the extra elements `detail`.
fn not_implemented(message: &str, detail: &str) -> Response<Body> {
    with_status(
        crate::s3::error_document("NotImplemented", message, detail),
        http::StatusCode::NOT_IMPLEMENTED,
    )
}

/// S3's 405 `MethodNotAllowed`, naming the method and the kind of resource.
fn method_not_allowed(method: &str, resource: &str) -> Response<Body> {
    let esc = crate::s3::post_form::xml_escape;
    with_status(
        crate::s3::error_document(
            "MethodNotAllowed",
            "The specified method is not allowed against this resource.",
            &format!(
                "<Method>{}</Method><ResourceType>{resource}</ResourceType>",
                esc(method)
            ),
        ),
        http::StatusCode::METHOD_NOT_ALLOWED,
    )
}

/// A POST of a bucket is DeleteObjects (`?delete`) or a browser form upload
/// (`multipart/form-data`); any other is refused as S3 refuses it: 412 `PreconditionFailed` for
/// a body of another type, 405 `MethodNotAllowed` for another sub-resource.
/// `names`: the query's parameter names.
fn refused_bucket_post<B>(req: &Request<B>, names: &[&str]) -> Option<Response<Body>> {
    let form = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("multipart/form-data"));
    if names.contains(&"delete") || form {
        return None;
    }
    if names.is_empty() {
        let condition = "Bucket POST must be of the enclosure-type multipart/form-data";
        return Some(with_status(
            crate::s3::error_document(
                "PreconditionFailed",
                "At least one of the pre-conditions you specified did not hold",
                &format!("<Condition>{condition}</Condition>"),
            ),
            http::StatusCode::PRECONDITION_FAILED,
        ));
    }
    Some(method_not_allowed("POST", "BUCKET"))
}

/// A request whose header section (each field's name and value, with the `: ` and line end they
/// take on the wire) is larger than `limit` bytes: S3 answers 400 `RequestHeaderSectionTooLarge`
/// naming the size it allows (8 KiB). hyper refuses a head of more than 100 fields, or one larger
/// than its read buffer, itself (431, no document); within those, the limit is this one.
pub(super) fn refused_header_section<B>(req: &Request<B>, limit: usize) -> Option<Response<Body>> {
    if limit == 0 {
        return None;
    }
    let size: usize = req.headers().iter().map(|(k, v)| k.as_str().len() + v.len() + 4).sum();
    if size <= limit {
        return None;
    }
    Some(bad_request(crate::s3::error_document(
        "RequestHeaderSectionTooLarge",
        "Your request header section exceeds the maximum allowed size.",
        &format!("<MaxSizeAllowed>{limit}</MaxSizeAllowed>"),
    )))
}

/// A 400 carrying the error document `doc`.
fn bad_request(doc: String) -> Response<Body> {
    with_status(doc, http::StatusCode::BAD_REQUEST)
}

/// An error answer: `status` and the error document `doc`.
fn with_status(doc: String, status: http::StatusCode) -> Response<Body> {
    let mut resp = Response::new(Body::from(doc));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/xml"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn methods_without_an_operation_are_not_allowed() {
        let asked = |method: &str, uri: &str, in_host: bool| {
            let req = Request::builder().method(method).uri(uri).body(()).unwrap();
            refused_method(&req, || in_host).map(|r| {
                let body = r.into_body();
                let bytes = futures::executor::block_on(http_body_util::BodyExt::collect(body))
                    .unwrap()
                    .to_bytes();
                let text = String::from_utf8(bytes.to_vec()).unwrap();
                // The resource's kind where the answer names one, else the error's code.
                let element = |tag: &str| Some(text.split(&format!("<{tag}>")).nth(1)?.split('<').next()?.to_owned());
                element("ResourceType").or_else(|| element("Code")).unwrap()
            })
        };
        assert_eq!(asked("PATCH", "/b/k", false).as_deref(), Some("OBJECT"));
        assert_eq!(asked("PATCH", "/b", false).as_deref(), Some("BUCKET"));
        assert_eq!(asked("TRACE", "/", false).as_deref(), Some("SERVICE"));
        assert_eq!(
            asked("PATCH", "/k", true).as_deref(),
            Some("OBJECT"),
            "virtual-hosted: the path is the key"
        );
        assert_eq!(asked("POST", "/b/k", false).as_deref(), Some("OBJECT"));
        for allowed in [
            "/b/k?uploads",
            "/b/k?uploadId=x",
            "/b/k?restore",
            "/b/k?select&select-type=2",
            "/b?delete",
        ] {
            assert_eq!(asked("POST", allowed, false), None, "{allowed}");
        }
        assert_eq!(asked("POST", "/b?uploads", false).as_deref(), Some("BUCKET"));
        assert_eq!(asked("POST", "/b", false).as_deref(), Some("PreconditionFailed"));
        let form = Request::builder()
            .method("POST")
            .uri("/b")
            .header("content-type", "multipart/form-data; boundary=x")
            .body(())
            .unwrap();
        assert!(refused_method(&form, || false).is_none(), "a form upload");
        for method in ["GET", "HEAD", "PUT", "DELETE", "OPTIONS"] {
            assert_eq!(asked(method, "/b/k", false), None, "{method}");
        }
        // The service root answers ListBuckets only; with the bucket in the Host, `/` is the bucket.
        for method in ["PUT", "POST", "DELETE", "HEAD"] {
            assert_eq!(asked(method, "/", false).as_deref(), Some("SERVICE"), "{method}");
            let bucket = asked(method, "/", true);
            let expected = (method == "POST").then(|| "PreconditionFailed".to_owned());
            assert_eq!(
                bucket, expected,
                "{method} of a bucket named by the Host (POST: not a form)"
            );
        }
        for method in ["GET", "OPTIONS"] {
            assert_eq!(asked(method, "/", false), None, "{method}");
        }
    }

    #[test]
    fn authorization_headers_s3_cannot_read_are_refused_as_s3_refuses_them() {
        let code = |auth: &str| {
            let req = Request::builder()
                .uri("/b/k")
                .header("authorization", auth)
                .body(())
                .unwrap();
            refused_authorization(&req).map(|r| {
                let bytes = futures::executor::block_on(http_body_util::BodyExt::collect(r.into_body()))
                    .unwrap()
                    .to_bytes();
                let text = String::from_utf8(bytes.to_vec()).unwrap();
                text.split("<Code>")
                    .nth(1)
                    .unwrap()
                    .split('<')
                    .next()
                    .unwrap()
                    .to_owned()
            })
        };
        let good = "AWS4-HMAC-SHA256 Credential=AK/20261129/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=ab";
        assert_eq!(code(good), None);
        assert_eq!(code(&good.replace(", ", ",")), None, "components without spaces");
        assert_eq!(code("AWS AK:c2ln"), None);
        assert_eq!(
            code("AWS4-ECDSA-P256-SHA256 Credential=x"),
            None,
            "SigV4a is s3s's to judge"
        );
        for unsupported in ["garbage", "Basic dXNlcjpwYXNz", "Bearer t"] {
            assert_eq!(code(unsupported).as_deref(), Some("InvalidArgument"), "{unsupported}");
        }
        assert_eq!(code("AWS HAHAHA").as_deref(), Some("InvalidArgument"));
        for malformed in [
            "AWS4-HMAC-SHA256 garbage",
            "AWS4-HMAC-SHA256 Credential=AK/20261129/us-east-1/s3/aws4_request",
            "AWS4-HMAC-SHA256 Credential=AK/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=ab",
        ] {
            assert_eq!(
                code(malformed).as_deref(),
                Some("AuthorizationHeaderMalformed"),
                "{malformed}"
            );
        }
    }

    #[test]
    fn header_sections_are_measured_as_sent() {
        // `x-big: <v>\r\n` is 9 bytes plus the value; `host: h\r\n` 9.
        let with_value = |n: usize| {
            Request::builder()
                .uri("/b/k")
                .header("host", "h")
                .header("x-big", "v".repeat(n))
                .body(())
                .unwrap()
        };
        assert!(
            refused_header_section(&with_value(8192 - 18), 8192).is_none(),
            "exactly the limit"
        );
        let refused = refused_header_section(&with_value(8192 - 17), 8192).expect("one byte over");
        assert_eq!(refused.status(), http::StatusCode::BAD_REQUEST);
        assert!(
            refused_header_section(&with_value(100_000), 0).is_none(),
            "0 turns it off"
        );
    }

    #[test]
    fn credentials_for_no_region_are_told_where_to_go() {
        let signed = |cred: &str| {
            Request::builder()
                .uri("/b/k")
                .header(
                    "authorization",
                    format!("AWS4-HMAC-SHA256 Credential={cred}, SignedHeaders=host, Signature=ab"),
                )
                .body(())
                .unwrap()
        };
        assert_eq!(
            unusable_region(&signed("AK/20261126/US/s3/aws4_request")),
            Some(("US".to_owned(), false))
        );
        assert_eq!(unusable_region(&signed("AK/20261126/us-east-1/s3/aws4_request")), None);
        assert_eq!(
            unusable_region(&signed("AK/20261126/eu-west-1/s3/aws4_request")),
            None,
            "another region is s3s's call"
        );
        let presigned = Request::builder()
            .uri("/b/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20261126%2FEU%2Fs3%2Faws4_request")
            .body(())
            .unwrap();
        assert_eq!(unusable_region(&presigned), Some(("EU".to_owned(), true)));
        assert_eq!(unusable_region(&Request::builder().uri("/b/k").body(()).unwrap()), None);
        assert_eq!(wrong_region_answer("US", false, "us-east-1").status(), 400);
        let with = |uri: &str, header: bool| {
            let mut r = Request::builder().uri(uri);
            if header {
                r = r.header("x-amz-security-token", "t");
            }
            carries_session_token(&r.body(()).unwrap())
        };
        assert!(with("/b/k", true));
        assert!(with("/b/k?X-Amz-Algorithm=a&X-Amz-Security-Token=t", false));
        assert!(!with("/b/k?X-Amz-Algorithm=a", false));
        assert!(!with("/b/k?x-amz-security-tokens=1", false));
    }

    #[test]
    fn presigned_expiries_s3_does_not_take_are_named() {
        let status = |q: &str| {
            let req = Request::get(format!("/b/k?{q}")).body(()).unwrap();
            refused_expiry(&req).map(|r| r.status().as_u16())
        };
        assert_eq!(status("X-Amz-Expires=-7&X-Amz-Signature=s"), Some(400));
        assert_eq!(status("X-Amz-Expires=soon&X-Amz-Signature=s"), Some(400));
        assert_eq!(
            status("X-Amz-Expires=0&X-Amz-Signature=s"),
            None,
            "s3s answers it expired"
        );
        assert_eq!(status("X-Amz-Expires=3600&X-Amz-Signature=s"), None);
        assert_eq!(status("X-Amz-Expires=-7"), None, "not a presigned URL");
        assert_eq!(status("prefix=X-Amz-Expires%3D-7"), None);
    }

    #[test]
    fn repeated_content_encodings_are_one_list() {
        let mut h = http::HeaderMap::new();
        h.append(http::header::CONTENT_ENCODING, "gzip".parse().unwrap());
        h.append(http::header::CONTENT_ENCODING, " aws-chunked".parse().unwrap());
        join_content_encodings(&mut h);
        let all: Vec<_> = h.get_all(http::header::CONTENT_ENCODING).iter().collect();
        assert_eq!(all, ["gzip,aws-chunked"]);
        let mut one = http::HeaderMap::new();
        one.insert(http::header::CONTENT_ENCODING, "gzip, br".parse().unwrap());
        join_content_encodings(&mut one);
        assert_eq!(one.get(http::header::CONTENT_ENCODING).unwrap(), "gzip, br");
    }

    #[test]
    fn payload_hashes_that_are_none_are_invalid_arguments() {
        let status = |value: &str, signed: &str| {
            let mut b = Request::put(format!("/b/k{signed}")).header("x-amz-content-sha256", value);
            if signed.is_empty() {
                b = b.header(
                    "authorization",
                    "AWS4-HMAC-SHA256 Credential=AK/20261128/us-east-1/s3/aws4_request",
                );
            }
            refused_content_sha256(&b.body(()).unwrap()).map(|r| r.status().as_u16())
        };
        let hex = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        for ok in [hex, "UNSIGNED-PAYLOAD", "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"] {
            assert_eq!(status(ok, ""), None, "{ok}");
        }
        assert_eq!(status(&hex.to_uppercase(), ""), None, "hex in capitals is left to s3s");
        assert_eq!(status("GIBBERISH", ""), Some(400));
        assert_eq!(status("invalid-sha256", "?X-Amz-Algorithm=AWS4-HMAC-SHA256"), Some(400));
        assert_eq!(status(&hex[1..], ""), Some(400), "63 digits");
        assert_eq!(status("unsigned-payload", ""), Some(400));
        // Not a SigV4 request (anonymous, or V2): the header means nothing there.
        assert_eq!(status("GIBBERISH", "?acl"), None);
    }
}
