//! Per-request observation around the S3 service: a request id (`x-amz-request-id`), a tracing
//! span carrying operation, bucket, key, tenant, status and duration, one log line per request,
//! and the request metrics.
//!
//! The operation, bucket, key and tenant are only known once s3s has routed and authenticated
//! the request; the access check writes them into a [`RequestInfo`] slot that this layer put
//! into the request's extensions.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use s3s::service::S3Service;
use s3s::Body;
use tracing::{field, Instrument};

use crate::auth::GatewayAuth;
use crate::interim::{wants_interim_continue, ContinueSignal};
use crate::limits::{Activity, StallGuard};
use crate::metrics::Metrics;

/// What the access check learned about a request.
#[derive(Debug, Default, Clone)]
pub struct RequestInfo {
    pub operation: String,
    pub bucket: Option<String>,
    pub key: Option<String>,
    /// `domain/user (access key)`.
    pub tenant: Option<String>,
    /// The bucket record the access check found (CORS headers are read from it).
    pub bucket_record: Option<Arc<penstock_metadata::BucketRecord>>,
    /// The key a copy reads (`x-amz-copy-source`, decoded, without its version).
    pub copy_source_key: Option<String>,
}

/// The key named by an `x-amz-copy-source` value (`[/]bucket/key[?versionId=...]`, URL-encoded),
/// as s3s parses it for the copy itself.
pub(crate) fn copy_source_key(value: &str) -> Option<String> {
    match s3s::dto::CopySource::parse(value).ok()? {
        s3s::dto::CopySource::Bucket { key, .. } => Some(key.into()),
        _ => None,
    }
}

/// The slot shared between this layer and the access check.
#[derive(Debug, Default, Clone)]
pub struct InfoSlot(pub Arc<Mutex<RequestInfo>>);

/// The S3 service wrapped with observation.
#[derive(Clone)]
pub struct Observed {
    inner: S3Service,
    metrics: Arc<Metrics>,
    auth: Arc<GatewayAuth>,
    peer: Option<std::net::SocketAddr>,
    interim: Option<ContinueSignal>,
    activity: Option<Arc<Activity>>,
    body_stall: Option<Duration>,
    cors: Option<Arc<CorsSite>>,
    direct: Option<Arc<crate::s3::DirectReads>>,
    /// The region this gateway answers for (`region` in the configuration).
    region: Arc<str>,
    /// `https` where the gateway terminates TLS, else `http`: the scheme of URLs it names.
    scheme: &'static str,
}

/// What CORS handling needs outside s3s: the gateway (bucket rules) and how requests name buckets.
pub struct CorsSite {
    gateway: Arc<crate::s3::Gateway>,
    /// Virtual-host domains, lower-cased.
    domains: Vec<String>,
}

impl CorsSite {
    /// The bucket a request names: `<bucket>.<domain>` in `Host`, else the path's first segment.
    fn bucket_of<B>(&self, req: &Request<B>) -> Option<String> {
        if let Some(b) = self.host_bucket(req) {
            return Some(b);
        }
        let first = req
            .uri()
            .path()
            .trim_start_matches('/')
            .split('/')
            .next()
            .unwrap_or_default();
        let name = percent_encoding::percent_decode_str(first)
            .decode_utf8_lossy()
            .into_owned();
        (!name.is_empty()).then_some(name)
    }

    /// The bucket `Host` names (`<bucket>.<domain>`, virtual-hosted style), if it names one.
    fn host_bucket<B>(&self, req: &Request<B>) -> Option<String> {
        let host = req
            .headers()
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .map(|h| {
                h.rsplit_once(':').map_or(h, |(name, port)| {
                    if port.bytes().all(|b| b.is_ascii_digit()) {
                        name
                    } else {
                        h
                    }
                })
            })
            .unwrap_or_default()
            .to_ascii_lowercase();
        self.domains.iter().find_map(|d| {
            let b = host.strip_suffix(d.as_str())?.strip_suffix('.')?;
            Some(b.to_owned())
        })
    }
}

impl Observed {
    /// Wraps `inner`; `auth` looks up secrets for [`crate::sigv2`].
    pub fn new(inner: S3Service, metrics: Arc<Metrics>, auth: GatewayAuth) -> Self {
        Self {
            inner,
            metrics,
            auth: Arc::new(auth),
            peer: None,
            interim: None,
            activity: None,
            body_stall: None,
            cors: None,
            direct: None,
            region: Arc::from("us-east-1"),
            scheme: "http",
        }
    }

    /// Whether clients reach this service over TLS (the scheme of the URLs it names).
    pub fn with_tls(mut self, tls: bool) -> Self {
        self.scheme = if tls { "https" } else { "http" };
        self
    }

    /// The region this gateway answers for, named to clients that sign for a region that is
    /// not one (see [`unusable_region`]).
    pub fn with_region(mut self, region: &str) -> Self {
        self.region = Arc::from(region);
        self
    }

    /// Answers plain reads without s3s's dispatch (see [`crate::s3::DirectReads`]).
    pub fn with_direct_reads(mut self, direct: crate::s3::DirectReads) -> Self {
        self.direct = Some(Arc::new(direct));
        self
    }

    /// Answers preflight `OPTIONS` requests and adds `Access-Control-*` headers from the rules
    /// of `gateway`'s buckets; `domains` are the virtual-host domains.
    pub fn with_cors(mut self, gateway: Arc<crate::s3::Gateway>, domains: Vec<String>) -> Self {
        self.cors = Some(Arc::new(CorsSite { gateway, domains }));
        self
    }

    /// Serves a request through s3s (or answers a CORS preflight): what it was asked with
    /// (method, `Origin`, the bucket named for CORS) and the outcome.
    async fn dispatch(
        &self,
        mut req: Request<Incoming>,
        slot: &InfoSlot,
        close: bool,
    ) -> (
        http::Method,
        Option<String>,
        Option<String>,
        Result<Response<Body>, s3s::HttpError>,
    ) {
        crate::sigv2::normalize_bucket_path(&mut req, &self.auth).await;
        let req = if close {
            req.map(|_| Body::empty())
        } else {
            let guarded = req.map(|b| StallGuard::new(b, self.body_stall, self.metrics.clone()));
            // Only a PUT's reading depends on it (body_digest.rs); the Host is not parsed for others.
            let virtual_hosted = guarded.method() == http::Method::PUT
                && self.cors.as_ref().is_some_and(|c| c.host_bucket(&guarded).is_some());
            crate::s3::body_digest::inspect(guarded, virtual_hosted).await
        };
        let method = req.method().clone();
        let origin = req
            .headers()
            .get("origin")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        // Only browsers' requests (an Origin, or a preflight) need the bucket's CORS rules.
        let named = self
            .cors
            .as_ref()
            .filter(|_| origin.is_some() || method == http::Method::OPTIONS)
            .and_then(|c| c.bucket_of(&req));
        let result = match &self.cors {
            Some(c) if method == http::Method::OPTIONS => {
                if let Ok(mut info) = slot.0.lock() {
                    info.operation = "PreflightRequest".to_owned();
                    info.bucket.clone_from(&named);
                }
                let (status, headers, body) = c.gateway.preflight(named.as_deref(), req.headers()).await;
                let mut resp = Response::new(Body::from(Bytes::from(body)));
                *resp.status_mut() = status;
                *resp.headers_mut() = headers;
                Ok(resp)
            }
            _ => {
                let (req, form) = crate::s3::post_form::watch(req);
                if let Some(form) = &form {
                    self.record_form_target(&req, form);
                }
                match self.inner.call(req).await {
                    Ok(mut resp) => {
                        // s3s answers every HeadObject 200 whatever status the handler gave; S3
                        // answers a HEAD with a satisfiable Range 206, and only such an answer
                        // has a Content-Range.
                        if method == http::Method::HEAD
                            && resp.status() == http::StatusCode::OK
                            && resp.headers().contains_key(http::header::CONTENT_RANGE)
                        {
                            *resp.status_mut() = http::StatusCode::PARTIAL_CONTENT;
                        }
                        if let Some(form) = form {
                            // Boxed: rare, and its state would otherwise enlarge every request's
                            // future.
                            resp = Box::pin(crate::s3::post_form::form_answer(resp, &form)).await;
                        }
                        Ok(resp)
                    }
                    Err(e) => Err(e),
                }
            }
        };
        (method, origin, named, result)
    }

    /// Tells a form upload where it was sent, for the object's URL in its answer: the scheme
    /// (a TLS-terminating proxy's `X-Forwarded-Proto` where it names one), the `Host` (or an
    /// HTTP/2 request's authority), and the bucket when the path names it.
    fn record_form_target<B>(&self, req: &Request<B>, form: &crate::s3::post_form::FormUpload) {
        let forwarded = req.headers().get("x-forwarded-proto").and_then(|v| v.to_str().ok());
        let scheme = match forwarded {
            Some(p) if p.eq_ignore_ascii_case("https") => "https",
            Some(p) if p.eq_ignore_ascii_case("http") => "http",
            _ => self.scheme,
        };
        let host = req
            .headers()
            .get(http::header::HOST)
            .and_then(|h| h.to_str().ok())
            .or_else(|| req.uri().authority().map(|a| a.as_str()));
        let Some(host) = host else { return };
        let in_host = self.cors.as_ref().is_some_and(|c| c.host_bucket(req).is_some());
        let path_bucket = req
            .uri()
            .path()
            .trim_start_matches('/')
            .split('/')
            .next()
            .filter(|b| !b.is_empty());
        form.sent_to(scheme, host, if in_host { None } else { path_bucket });
    }

    /// The service for one connection from `peer`; `interim` asks the connection for a
    /// `100 Continue` (see [`crate::interim`]); `activity` learns which requests are in flight;
    /// request bodies that stall for `body_stall` fail (see [`crate::limits`]).
    pub fn for_connection(
        &self,
        peer: std::net::SocketAddr,
        interim: ContinueSignal,
        activity: Arc<Activity>,
        body_stall: Option<Duration>,
    ) -> Self {
        Self {
            peer: Some(peer),
            interim: Some(interim),
            activity: Some(activity),
            body_stall,
            ..self.clone()
        }
    }
}

/// An `Authorization` header with nothing in it names no credentials: S3 serves such a request
/// as an anonymous one (403 `AccessDenied` unless a policy or ACL lets anyone in), where s3s
/// would refuse the header itself as malformed (400).
fn drop_empty_authorization<B>(req: &mut Request<B>) {
    let auth = http::header::AUTHORIZATION;
    if req
        .headers()
        .get(&auth)
        .is_some_and(|v| v.as_bytes().trim_ascii().is_empty())
    {
        req.headers_mut().remove(auth);
    }
}

/// A refusal of a HEAD request as S3 sends it: the error document's length in
/// `Content-Length` but no body (HTTP/1.1's codec drops a HEAD answer's body itself; over
/// HTTP/2 it would go out as DATA frames, which Go's client refuses as a protocol error), and,
/// for HeadBucket, the region in `x-amz-bucket-region`, which S3 gives even to a caller it
/// refuses: SDKs find a bucket's region so (the AWS SDK for Go's `manager.GetBucketRegion`
/// asks unsigned). Every bucket here is in the gateway's one region, so it tells nothing else.
fn head_refusal(resp: &mut Response<Body>, slot: &InfoSlot, region: &str) {
    *resp.body_mut() = Body::empty();
    let bucket_refused =
        resp.status() == http::StatusCode::FORBIDDEN && slot.0.lock().is_ok_and(|i| i.operation == "HeadBucket");
    if bucket_refused {
        if let Ok(v) = HeaderValue::from_str(region) {
            resp.headers_mut().insert("x-amz-bucket-region", v);
        }
    }
}

/// Several `Content-Encoding` lines as one, their values joined by `,`. The AWS SDK for Go v2
/// sends a compressed object's coding and the `aws-chunked` framing of a trailing checksum as
/// two lines; HTTP lets a list-valued field be split so, and S3 reads them as one list, where
/// s3s refuses a repeated header (400 "duplicate header"). A bare `,` is how SigV4 joins
/// repeated values in the canonical request, so the signature reads the same either way.
fn join_content_encodings(headers: &mut http::HeaderMap) {
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
/// default configuration signs for `US`. S3 answers such a request, as any signed for another
/// region, with `AuthorizationHeaderMalformed` naming the region to use, and clients resend it
/// there; s3s would refuse it with an `InvalidRequest` that tells them nothing. Also whether the
/// credential came in the query (a presigned URL), which S3 answers with another code.
fn unusable_region<B>(req: &Request<B>) -> Option<(String, bool)> {
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
fn wrong_region_answer(asked: &str, in_query: bool, ours: &str) -> Response<Body> {
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
fn carries_session_token<B>(req: &Request<B>) -> bool {
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
fn invalid_token_answer() -> Response<Body> {
    bad_request(crate::s3::error_document(
        "InvalidToken",
        "The provided token is malformed or otherwise invalid.",
        "",
    ))
}

/// A 400 carrying the error document `doc`.
fn bad_request(doc: String) -> Response<Body> {
    let mut resp = Response::new(Body::from(doc));
    *resp.status_mut() = http::StatusCode::BAD_REQUEST;
    resp.headers_mut()
        .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/xml"));
    resp
}

/// A PUT with an RDMA token whose declared body never comes (LMCache's cuObject connector sends
/// `Content-Length: <size>` and no bytes): s3s must not wait for it, and the connection, whose
/// byte stream no longer lines up with HTTP framing, is closed after the response.
fn unsent_body(req: &Request<Incoming>) -> bool {
    req.method() == http::Method::PUT
        && crate::s3::rdma_has_token(req.headers())
        && req
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|n| n > 0)
}

/// A request id in the style of S3's: 16 upper-case hex digits.
fn request_id() -> String {
    format!("{:016X}", rand::random::<u64>())
}

/// Error responses are small XML documents; the code is read from them for metrics and logs.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// The largest GetObjectAttributes document read whole: one with 1,000 parts (its most per page)
/// is ~250 KiB.
const MAX_ATTRIBUTES_BODY: usize = 8 << 20;

fn error_code(xml: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(xml).ok()?;
    let start = s.find("<Code>")? + "<Code>".len();
    let end = s[start..].find("</Code>")? + start;
    Some(s[start..end].to_owned())
}

/// The element S3 adds to an error document to name what was not there or in the way:
/// `<BucketName>` or `<Key>`, from the request's own bucket and key. A copy's missing key is its
/// source's, which S3 names; a copy's missing bucket may be either, so it is not named.
fn detail_of(code: &str, info: &RequestInfo) -> Option<(&'static str, String)> {
    if matches!(info.operation.as_str(), "CopyObject" | "UploadPartCopy") {
        let key = info.copy_source_key.as_ref().filter(|_| code == "NoSuchKey")?;
        return Some(("Key", crate::s3::post_form::xml_escape(key)));
    }
    let (tag, value) = match code {
        "NoSuchKey" => ("Key", info.key.as_ref()?),
        "NoSuchBucket" | "BucketNotEmpty" | "BucketAlreadyExists" | "BucketAlreadyOwnedByYou" => {
            ("BucketName", info.bucket.as_ref()?)
        }
        _ => return None,
    };
    Some((tag, crate::s3::post_form::xml_escape(value)))
}

/// S3's message for an error that s3s answers with a code alone (a path it cannot parse, a
/// signature it refuses before any handler runs), so every error document has the `<Message>`
/// clients show: botocore prints "Unknown" where it is missing.
fn standard_message(code: &str) -> Option<&'static str> {
    Some(match code {
        "InvalidBucketName" => "The specified bucket is not valid.",
        "InvalidURI" => "Couldn't parse the specified URI.",
        "KeyTooLongError" => "Your key is too long.",
        "NotImplemented" => "A header you provided implies functionality that is not implemented.",
        "SignatureDoesNotMatch" => {
            "The request signature we calculated does not match the signature you provided. \
             Check your key and signing method."
        }
        "InvalidAccessKeyId" => "The AWS access key Id you provided does not exist in our records.",
        "MethodNotAllowed" => "The specified method is not allowed against this resource.",
        "IncompleteBody" => "You did not provide the number of bytes specified by the Content-Length HTTP header.",
        "MaxMessageLengthExceeded" => "Your request was too big.",
        "MalformedXML" => "The XML you provided was not well-formed or did not validate against our published schema.",
        "InternalError" => "We encountered an internal error. Please try again.",
        _ => return None,
    })
}

/// `<Message>` for an error document that has none and whose code has a standard message.
fn missing_message(xml: &[u8], code: Option<&str>) -> Option<String> {
    let has = xml.windows(b"<Message>".len()).any(|w| w == b"<Message>");
    let text = standard_message(code?).filter(|_| !has)?;
    Some(format!("<Message>{text}</Message>"))
}

/// An S3 error document with the request's id in `<RequestId>`, as S3 writes it, so the id a
/// client reports from the body is the one in the `x-amz-request-id` header and in our log; and
/// `detail` (escaped XML elements, possibly none) before it. Unchanged if it has a request id
/// already.
fn with_request_id(xml: Bytes, id: &str, detail: &str) -> Bytes {
    const END: &[u8] = b"</Error>";
    let has_id = xml.windows(b"<RequestId>".len()).any(|w| w == b"<RequestId>");
    let Some(at) = xml.windows(END.len()).rposition(|w| w == END) else {
        return xml;
    };
    if has_id {
        return xml;
    }
    let mut out = Vec::with_capacity(xml.len() + id.len() + 24);
    out.extend_from_slice(&xml[..at]);
    out.extend_from_slice(detail.as_bytes());
    out.extend_from_slice(b"<RequestId>");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b"</RequestId>");
    out.extend_from_slice(&xml[at..]);
    Bytes::from(out)
}

/// A small answer body read whole (empty if it runs past `limit` or fails).
async fn collect_small(body: Body, limit: usize) -> Bytes {
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => Bytes::new(),
    }
}

/// An answer with a rewritten body, its `Content-Length` (where it had one) made to fit.
fn with_body(mut parts: http::response::Parts, bytes: Bytes) -> Response<Body> {
    if parts.headers.contains_key(http::header::CONTENT_LENGTH) {
        parts
            .headers
            .insert(http::header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// A GetObjectAttributes document with its `<ETag>` value unquoted, as S3 writes it there (and
/// nowhere else); SDKs hand the value over as it came.
fn bare_attributes_etag(xml: Bytes) -> Bytes {
    const OPEN: &[u8] = b"<ETag>\"";
    let Some(at) = xml.windows(OPEN.len()).position(|w| w == OPEN) else {
        return xml;
    };
    let value_start = at + OPEN.len();
    let Some(len) = xml[value_start..].windows(8).position(|w| w == b"\"</ETag>") else {
        return xml;
    };
    let mut out = Vec::with_capacity(xml.len());
    out.extend_from_slice(&xml[..at + "<ETag>".len()]);
    out.extend_from_slice(&xml[value_start..value_start + len]);
    out.extend_from_slice(&xml[value_start + len + 1..]);
    Bytes::from(out)
}

impl hyper::service::Service<Request<Incoming>> for Observed {
    type Response = Response<Body>;
    type Error = s3s::HttpError;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        let this = self.clone();
        let id = request_id();
        let slot = InfoSlot::default();
        req.extensions_mut().insert(slot.clone());
        if let Some(p) = self.peer {
            req.extensions_mut().insert(crate::s3::PeerAddr(p));
        }
        drop_empty_authorization(&mut req);
        join_content_encodings(req.headers_mut());
        // Refused before anything else reads the request.
        let early = if carries_session_token(&req) {
            Some(invalid_token_answer())
        } else {
            unusable_region(&req).map(|(r, in_query)| wrong_region_answer(&r, in_query, &self.region))
        };
        let in_flight = self.activity.as_ref().map(|a| a.begin());
        let close = unsent_body(&req) && req.version() <= http::Version::HTTP_11;
        if let Some(signal) = self.interim.as_ref().filter(|_| wants_interim_continue(&req)) {
            signal.request();
        }
        let span = tracing::info_span!(
            "request",
            request_id = %id,
            method = %req.method(),
            version = ?req.version(),
            operation = field::Empty,
            bucket = field::Empty,
            key = field::Empty,
            tenant = field::Empty,
            status = field::Empty,
            duration_ms = field::Empty,
        );
        Box::pin(
            async move {
                let metrics = &this.metrics;
                metrics.in_flight().inc();
                let start = Instant::now();
                let served = match (early, &this.direct) {
                    (Some(answer), _) => Some(answer),
                    (None, Some(d)) => d.serve(&req, &slot, this.peer).await,
                    (None, None) => None,
                };
                let (method, origin, named, result) = match served {
                    Some(resp) => (req.method().clone(), None, None, Ok(resp)),
                    None => this.dispatch(req, &slot, close).await,
                };
                metrics.in_flight().dec();
                drop(in_flight);
                let mut resp = result?;
                let elapsed = start.elapsed();
                let status = resp.status();

                // GetObjectAttributes is the one answer where S3 writes the ETag without its
                // quotes; s3s quotes every ETag it serializes (`bare_attributes_etag`).
                if status == http::StatusCode::OK && slot.0.lock().is_ok_and(|i| i.operation == "GetObjectAttributes") {
                    let (parts, body) = resp.into_parts();
                    let bytes = collect_small(body, MAX_ATTRIBUTES_BODY).await;
                    resp = with_body(parts, bare_attributes_etag(bytes));
                }

                // Read the error code of failures (small, buffered bodies) and put it back.
                let mut code = None;
                if status.as_u16() >= 400 {
                    let (mut parts, body) = resp.into_parts();
                    let bytes = collect_small(body, MAX_ERROR_BODY).await;
                    let found = error_code(&bytes);
                    // Elements a handler gave its error (`s3::DETAIL_HEADER`, already escaped);
                    // the header that carried them stops here.
                    let given = parts
                        .headers
                        .remove(crate::s3::DETAIL_HEADER)
                        .and_then(|v| v.to_str().ok().map(str::to_owned));
                    let detail = given.or_else(|| {
                        let (tag, value) = slot.0.lock().ok().and_then(|i| detail_of(found.as_deref()?, &i))?;
                        Some(format!("<{tag}>{value}</{tag}>"))
                    });
                    let message = missing_message(&bytes, found.as_deref()).unwrap_or_default();
                    let detail = message + detail.as_deref().unwrap_or_default();
                    code = Some(found.unwrap_or_else(|| format!("HTTP{}", status.as_u16())));
                    resp = with_body(parts, with_request_id(bytes, &id, &detail));
                    if method == http::Method::HEAD {
                        head_refusal(&mut resp, &slot, &this.region);
                    }
                }
                // 304 and 204 answers have no body whatever the method: s3s writes its
                // NotModified error document into a 304, which HTTP/1.1's codec drops but
                // HTTP/2 would send as DATA, a protocol error to the client (a browser's or an
                // SDK's conditional GET over h2).
                if matches!(status, http::StatusCode::NOT_MODIFIED | http::StatusCode::NO_CONTENT) {
                    *resp.body_mut() = Body::empty();
                    resp.headers_mut().remove(http::header::CONTENT_LENGTH);
                }
                if let Ok(v) = HeaderValue::from_str(&id) {
                    resp.headers_mut().insert("x-amz-request-id", v);
                }
                if close {
                    resp.headers_mut()
                        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                }
                if let (Some(c), Some(origin), Some(bucket)) = (&this.cors, &origin, &named) {
                    if method != http::Method::OPTIONS {
                        let found = slot.0.lock().ok().and_then(|i| i.bucket_record.clone());
                        c.gateway
                            .decorate(found, bucket, origin, &method, resp.headers_mut())
                            .await;
                    }
                }

                // Read in place: a copy of the record cost an allocation per field per request.
                let guard = slot.0.lock();
                let empty = RequestInfo::default();
                let info = guard.as_deref().unwrap_or(&empty);
                let op = if info.operation.is_empty() {
                    "Unknown"
                } else {
                    info.operation.as_str()
                };
                let span = tracing::Span::current();
                span.record("operation", op);
                if let Some(b) = &info.bucket {
                    span.record("bucket", b.as_str());
                }
                if let Some(k) = &info.key {
                    span.record("key", k.as_str());
                }
                if let Some(t) = &info.tenant {
                    span.record("tenant", t.as_str());
                }
                span.record("status", status.as_u16());
                span.record("duration_ms", elapsed.as_secs_f64() * 1000.0);
                match &code {
                    Some(c) if status.is_server_error() => tracing::warn!(error_code = %c, "request failed"),
                    Some(c) => tracing::info!(error_code = %c, "request refused"),
                    None => tracing::info!("request done"),
                }
                metrics.request(op, status.as_u16(), elapsed, code.as_deref());
                Ok(resp)
            }
            .instrument(span),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attribute_etags_lose_their_quotes() {
        let doc = Bytes::from_static(
            b"<GetObjectAttributesOutput><ETag>\"abc-2\"</ETag><ObjectSize>3</ObjectSize></GetObjectAttributesOutput>",
        );
        assert_eq!(
            &bare_attributes_etag(doc)[..],
            b"<GetObjectAttributesOutput><ETag>abc-2</ETag><ObjectSize>3</ObjectSize></GetObjectAttributesOutput>"
        );
        let without =
            Bytes::from_static(b"<GetObjectAttributesOutput><ObjectSize>3</ObjectSize></GetObjectAttributesOutput>");
        assert_eq!(bare_attributes_etag(without.clone()), without);
    }

    #[test]
    fn reads_error_codes() {
        let xml = b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>x</Message></Error>";
        assert_eq!(error_code(xml).as_deref(), Some("NoSuchKey"));
        assert_eq!(error_code(b"<Error></Error>"), None);
        assert_eq!(request_id().len(), 16);
    }

    #[test]
    fn error_documents_carry_the_request_id() {
        let xml = Bytes::from_static(b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code></Error>");
        let out = with_request_id(xml.clone(), "0123456789ABCDEF", "");
        assert_eq!(
            &out[..],
            b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><RequestId>0123456789ABCDEF</RequestId></Error>"
        );
        // Already there, or not an error document: unchanged.
        assert_eq!(with_request_id(out.clone(), "X", ""), out);
        assert_eq!(&with_request_id(Bytes::from_static(b"oops"), "X", "")[..], b"oops");
        let info = RequestInfo {
            operation: "GetObject".into(),
            bucket: Some("b".into()),
            key: Some("a<b".into()),
            ..RequestInfo::default()
        };
        let (tag, value) = detail_of("NoSuchKey", &info).unwrap();
        let out = with_request_id(xml, "ID", &format!("<{tag}>{value}</{tag}>"));
        assert_eq!(
            &out[..],
            b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Key>a&lt;b</Key><RequestId>ID</RequestId></Error>"
        );
    }

    #[test]
    fn errors_without_a_message_get_the_standard_one() {
        let bare = b"<Error><Code>InvalidBucketName</Code></Error>";
        assert_eq!(
            missing_message(bare, Some("InvalidBucketName")).as_deref(),
            Some("<Message>The specified bucket is not valid.</Message>")
        );
        let given = b"<Error><Code>InvalidBucketName</Code><Message>mine</Message></Error>";
        assert_eq!(
            missing_message(given, Some("InvalidBucketName")),
            None,
            "a message is kept"
        );
        assert_eq!(missing_message(bare, Some("SomethingElse")), None);
        assert_eq!(missing_message(bare, None), None);
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
    fn errors_name_what_was_missing_and_a_copy_names_its_source_key() {
        let mut info = RequestInfo {
            operation: "GetObject".into(),
            bucket: Some("b".into()),
            key: Some("k".into()),
            ..RequestInfo::default()
        };
        assert_eq!(detail_of("NoSuchKey", &info), Some(("Key", "k".to_owned())));
        assert_eq!(detail_of("NoSuchBucket", &info), Some(("BucketName", "b".to_owned())));
        assert_eq!(detail_of("AccessDenied", &info), None);
        info.operation = "CopyObject".into();
        assert_eq!(detail_of("NoSuchKey", &info), None, "no source known");
        info.copy_source_key = copy_source_key("/src/a%20b%26c.txt?versionId=3");
        assert_eq!(info.copy_source_key.as_deref(), Some("a b&c.txt"));
        assert_eq!(detail_of("NoSuchKey", &info), Some(("Key", "a b&amp;c.txt".to_owned())));
        assert_eq!(detail_of("NoSuchBucket", &info), None, "source or destination");
        assert_eq!(copy_source_key("src"), None);
        assert_eq!(copy_source_key("src/d/e"), Some("d/e".to_owned()));
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
}
