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
use hyper::body::Incoming;
use s3s::service::S3Service;
use s3s::Body;
use tracing::{field, Instrument};

use crate::auth::GatewayAuth;
use crate::interim::{wants_interim_continue, ContinueSignal};
use crate::limits::{Activity, BodyEnd, StallGuard};
use crate::metrics::Metrics;

mod early;
mod errors;
mod subresource;

use early::{
    carries_session_token, drop_empty_authorization, invalid_token_answer, join_content_encodings, refused_append,
    refused_authorization, refused_content_sha256, refused_expiry, refused_header_section, refused_method,
    refused_size, refused_subresource, refused_v2_date, unusable_region, wrong_region_answer,
};
use errors::{
    bare_attributes_etag, blocked_sse_c, carriage_returns_as_references, collect_small, detail_of, error_code,
    head_refusal, location_document, missing_message, owner_first, with_body, with_message, with_request_id,
    KEY_DOCUMENTS, MAX_ATTRIBUTES_BODY, MAX_ERROR_BODY,
};

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
    /// The head of a SigV4-signed request handed to s3s, for the document of a signature that
    /// does not match.
    pub(crate) signed_head: Option<Arc<crate::signed_path::SignedHead>>,
    /// The length of the key a request path names, where it is over S3's limit: s3s refuses
    /// such a path with `KeyTooLongError` alone, and S3's document names the length.
    pub(crate) long_path_key: Option<usize>,
}

/// The length in bytes of the key request path `path` names, decoded: all of it when the Host
/// named the bucket (`virtual_hosted`), else what follows `/bucket/`.
fn path_key_len(path: &str, virtual_hosted: bool) -> Option<usize> {
    let path = path.strip_prefix('/')?;
    let key = if virtual_hosted { path } else { path.split_once('/')?.1 };
    Some(percent_encoding::percent_decode_str(key).count())
}

/// The key named by an `x-amz-copy-source` value (`[/]bucket/key[?versionId=...]`, URL-encoded),
/// as s3s parses it for the copy itself.
pub(crate) fn copy_source_key(value: &str) -> Option<String> {
    match s3s::dto::CopySource::parse(value).ok()? {
        s3s::dto::CopySource::Bucket { key, .. } => Some(key.into()),
        _ => None,
    }
}

/// What a browser's request asks, for its CORS headers: its `Origin`, the method it is judged
/// by (a preflight's question where it carries one), and the headers it asks to send.
type BrowserAsk = (String, http::Method, Vec<String>);

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
    /// Given to HTTP/1.x answers so that hyper spells their header names as S3 does
    /// ([`crate::header_case`]).
    spelling: Option<&'static http::Extensions>,
    /// Largest request header section accepted, in bytes; `0`: any (see
    /// [`crate::config::ConnectionLimits::max_header_bytes`]).
    max_header_bytes: usize,
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
        self.host_bucket(req).or_else(|| path_bucket(req))
    }

    /// Whether the request names an object in its bucket (S3's CORS refusals say `OBJECT` or
    /// `BUCKET`): a path past the bucket's segment, or any path under a bucket's host.
    fn names_object<B>(&self, req: &Request<B>) -> bool {
        let path = req.uri().path().trim_start_matches('/');
        if self.host_bucket(req).is_some() {
            return !path.is_empty();
        }
        path.split_once('/').is_some_and(|(_, key)| !key.is_empty())
    }

    /// The bucket the host names (`<bucket>.<domain>`, virtual-hosted style), if it names one:
    /// the same reading as s3s's routing (`s3::host_bucket`), so CORS rules, body digests, method
    /// checks and form answers concern the bucket the request goes to.
    fn host_bucket<B>(&self, req: &Request<B>) -> Option<String> {
        crate::s3::host_bucket(request_host(req)?, &self.domains)
    }
}

/// The host a request is addressed to, as s3s reads it: the `Host` header, else the URI's
/// authority (HTTP/2 carries it in `:authority`, and clients such as the AWS CRT send no `Host`).
fn request_host<B>(req: &Request<B>) -> Option<&str> {
    match req.headers().get(http::header::HOST) {
        Some(h) => h.to_str().ok(),
        None => req.uri().authority().map(|a| a.as_str()),
    }
}

/// The bucket a path-style request names: the path's first segment, decoded.
fn path_bucket<B>(req: &Request<B>) -> Option<String> {
    let first = req.uri().path().trim_start_matches('/').split('/').next()?;
    let name = percent_encoding::percent_decode_str(first)
        .decode_utf8_lossy()
        .into_owned();
    (!name.is_empty()).then_some(name)
}

impl Observed {
    /// Wraps `inner`; `auth` looks up secrets for [`crate::sigv2`] and [`crate::signed_path`].
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
            spelling: crate::header_case::spelling(),
            max_header_bytes: crate::config::ConnectionLimits::default().max_header_bytes,
        }
    }

    /// Refuses requests whose header section is larger than `bytes` (`0`: no limit).
    pub fn with_max_header_bytes(mut self, bytes: usize) -> Self {
        self.max_header_bytes = bytes;
        self
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
    /// (method; `Origin` and the method a CORS rule must allow; the bucket named for CORS) and
    /// the outcome.
    async fn dispatch(
        &self,
        mut req: Request<Incoming>,
        slot: &InfoSlot,
        close: bool,
        end: BodyEnd,
    ) -> (
        http::Method,
        Option<BrowserAsk>,
        Option<String>,
        Result<Response<Body>, s3s::HttpError>,
    ) {
        crate::sigv2::hoist_presigned_headers(&mut req);
        crate::sigv2::normalize_bucket_path(&mut req, &self.auth).await;
        crate::signed_path::respell_signed_spaces(&mut req, &self.auth).await;
        crate::signed_path::accept_root_signed_as_double_slash(&mut req, &self.auth).await;
        crate::signed_path::accept_presigned_payload_hash(&mut req, &self.auth).await;
        // Only a path longer than the limit can name a key over it.
        if req.uri().path().len() > crate::s3::MAX_KEY_BYTES {
            let virtual_hosted = self.cors.as_ref().is_some_and(|c| c.host_bucket(&req).is_some());
            let len = path_key_len(req.uri().path(), virtual_hosted);
            if let Ok(mut info) = slot.0.lock() {
                info.long_path_key = len.filter(|&n| n > crate::s3::MAX_KEY_BYTES);
            }
        }
        let req = if close {
            req.map(|_| Body::empty())
        } else {
            let guarded = req.map(|b| StallGuard::new(b, self.body_stall, self.metrics.clone()).reporting_end(end));
            // Only a PUT's reading depends on it (body_digest.rs); the Host is not parsed for others.
            let virtual_hosted = guarded.method() == http::Method::PUT
                && self.cors.as_ref().is_some_and(|c| c.host_bucket(&guarded).is_some());
            crate::s3::body_digest::inspect(guarded, virtual_hosted).await
        };
        let method = req.method().clone();
        // The method a CORS rule must allow for this answer's headers: the request's own, or the
        // one an `Access-Control-Request-Method` header names. Browsers send that header on
        // preflights only; ceph's s3-tests send it on actual requests too and expect the rule
        // for the method it names, as RGW answers.
        let origin = req.headers().get("origin").and_then(|v| v.to_str().ok()).map(|o| {
            let asked = req
                .headers()
                .get("access-control-request-method")
                .and_then(|v| http::Method::from_bytes(v.as_bytes()).ok());
            let headers = crate::s3::cors_asked_headers(req.headers());
            (o.to_owned(), asked.unwrap_or_else(|| method.clone()), headers)
        });
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
                let object = c.names_object(&req);
                let (status, headers, body) = c.gateway.preflight(named.as_deref(), object, req.headers()).await;
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
                if let Some(head) = crate::signed_path::SignedHead::of(&req) {
                    if let Ok(mut info) = slot.0.lock() {
                        info.signed_head = Some(Arc::new(head));
                    }
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
        let scheme = crate::s3::request_scheme(req.headers(), self.scheme == "https");
        let Some(host) = request_host(req) else { return };
        let in_host = self.cors.as_ref().is_some_and(|c| c.host_bucket(req).is_some());
        form.sent_to(scheme, host, if in_host { None } else { path_bucket(req) }.as_deref());
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

/// The refusals made before anything reads a request, after its session token and its region
/// (see `call`).
fn refused_otherwise<B>(req: &Request<B>) -> Option<Response<Body>> {
    refused_authorization(req)
        .or_else(|| refused_v2_date(req))
        .or_else(|| refused_expiry(req))
        .or_else(|| refused_content_sha256(req))
        .or_else(|| refused_size(req))
        .or_else(|| refused_append(req))
}

/// A request id in the style of S3's: 16 upper-case hex digits.
fn request_id() -> String {
    format!("{:016X}", rand::random::<u64>())
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
        // Refused before anything else reads the request. A scope that names no region is
        // refused only if its signature does not hold there (`signed_path::resign_for_region`),
        // which takes the secret's lookup: below.
        // An oversized header section, or a method S3 has no operation for, is refused before
        // anything else looks at the request.
        let host_bucket = || self.cors.as_ref().is_some_and(|c| c.host_bucket(&req).is_some());
        // Sub-resources first: a POST naming an S3 operation the gateway lacks is 501 naming it,
        // not the 405 `refused_method` gives POSTs that name no operation it knows.
        let oversized = refused_header_section(&req, self.max_header_bytes)
            .or_else(|| refused_subresource(&req, host_bucket))
            .or_else(|| refused_method(&req, host_bucket));
        let token = oversized.is_none() && carries_session_token(&req);
        let odd_region = if token || oversized.is_some() {
            None
        } else {
            unusable_region(&req)
        };
        let early = if oversized.is_some() {
            oversized
        } else if token {
            Some(invalid_token_answer())
        } else if odd_region.is_some() {
            None
        } else {
            refused_otherwise(&req)
        };
        let in_flight = self.activity.as_ref().map(|a| a.begin());
        let http1 = req.version() <= http::Version::HTTP_11;
        let close = unsent_body(&req) && http1;
        let end = BodyEnd::new(hyper::body::Body::is_end_stream(req.body()));
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
                let early = match odd_region {
                    Some((asked, in_query)) => {
                        if crate::signed_path::resign_for_region(&mut req, &this.auth, &this.region).await {
                            refused_otherwise(&req)
                        } else {
                            Some(wrong_region_answer(&asked, in_query, &this.region))
                        }
                    }
                    None => early,
                };
                let served = match (early, &this.direct) {
                    (Some(answer), _) => Some(answer),
                    (None, Some(d)) => d.serve(&req, &slot, this.peer).await,
                    (None, None) => None,
                };
                let (method, origin, named, result) = match served {
                    Some(resp) => (req.method().clone(), None, None, Ok(resp)),
                    None => this.dispatch(req, &slot, close, end.clone()).await,
                };
                metrics.in_flight().dec();
                drop(in_flight);
                let mut resp = result?;
                if let Some(s) = resp.extensions_mut().remove::<crate::s3::AnswerStatus>() {
                    *resp.status_mut() = s.0;
                }
                let elapsed = start.elapsed();
                let status = resp.status();

                // Documents S3 writes otherwise than s3s: GetObjectAttributes' ETag without its
                // quotes (`bare_attributes_etag`), GetBucketLocation's layout
                // (`location_document`), GetBucketEncryption's SSE-C blocked where the bucket blocks it
                // (`blocked_sse_c`),
                // ListBuckets' owner before its buckets (`owner_first`), and keys or prefixes
                // holding a carriage return written as `&#13;` (`carriage_returns_as_references`).
                // The operation is looked up once, for successes only.
                let (rewrite, echoes_keys) = if status == http::StatusCode::OK {
                    slot.0.lock().map_or((None, false), |i| {
                        let op = i.operation.as_str();
                        let rewrite: Option<fn(Bytes) -> Bytes> = match op {
                            "GetObjectAttributes" => Some(bare_attributes_etag),
                            "GetBucketLocation" => Some(location_document),
                            "ListBuckets" => Some(owner_first),
                            _ => None,
                        };
                        (rewrite, KEY_DOCUMENTS.contains(&op))
                    })
                } else {
                    (None, false)
                };
                // A bucket that blocks SSE-C, as its handler marks it.
                let rewrite = match resp.headers_mut().remove(crate::s3::SSE_C_BLOCKED_MARK) {
                    Some(_) if status == http::StatusCode::OK => Some(blocked_sse_c as fn(Bytes) -> Bytes),
                    _ => rewrite,
                };
                if let Some(rewrite) = rewrite {
                    let (parts, body) = resp.into_parts();
                    let bytes = collect_small(body, MAX_ATTRIBUTES_BODY).await;
                    resp = with_body(parts, rewrite(bytes));
                }
                // s3s serializes whole documents, so their bytes are at hand, listings of any size.
                if echoes_keys {
                    if let Some(xml) = resp.body().bytes().filter(|b| b.contains(&b'\r')) {
                        let (parts, _) = resp.into_parts();
                        resp = with_body(parts, carriage_returns_as_references(xml));
                    }
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
                    // A signed request's refusals that S3 explains from the request itself.
                    let signed_head = match found.as_deref() {
                        Some("SignatureDoesNotMatch" | "RequestTimeTooSkewed" | "AccessDenied") if given.is_none() => {
                            slot.0.lock().ok().and_then(|i| i.signed_head.clone())
                        }
                        _ => None,
                    };
                    let mut bytes = bytes;
                    let given = match (signed_head, found.as_deref()) {
                        (Some(head), Some("SignatureDoesNotMatch")) => head.mismatch_detail(&this.auth).await,
                        (Some(head), Some(code)) => {
                            match head.time_detail(code, &bytes, time::OffsetDateTime::now_utc()) {
                                Some((message, detail)) => {
                                    bytes = with_message(bytes, message);
                                    Some(detail)
                                }
                                None => None,
                            }
                        }
                        _ => given,
                    };
                    let detail = given.or_else(|| slot.0.lock().ok().and_then(|i| detail_of(found.as_deref()?, &i)));
                    let message = missing_message(&bytes, found.as_deref()).unwrap_or_default();
                    let mut detail = message + detail.as_deref().unwrap_or_default();
                    // S3's 405 documents name the method refused, whatever refused it.
                    if found.as_deref() == Some("MethodNotAllowed")
                        && !detail.contains("<Method>")
                        && !bytes.windows(8).any(|w| w == b"<Method>")
                    {
                        detail = format!("<Method>{method}</Method>{detail}");
                    }
                    // s3s gives an error that carries headers of its own (the detail above, an
                    // RDMA reply) those headers instead of its own, `Content-Type` included; an
                    // error document says what it is, as S3's do: clients built on the AWS CRT
                    // read an error's elements only from an `application/xml` answer.
                    if found.is_some() && !parts.headers.contains_key(http::header::CONTENT_TYPE) {
                        parts
                            .headers
                            .insert(http::header::CONTENT_TYPE, HeaderValue::from_static("application/xml"));
                    }
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
                if close || (http1 && !end.reached()) {
                    resp.headers_mut()
                        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                }
                if let Some(spelling) = this.spelling.filter(|_| http1) {
                    resp.extensions_mut().extend(spelling.clone());
                }
                if let (Some(c), Some((origin, allowing, asked)), Some(bucket)) = (&this.cors, &origin, &named) {
                    if method != http::Method::OPTIONS {
                        let found = slot.0.lock().ok().and_then(|i| i.bucket_record.clone());
                        c.gateway
                            .decorate(found, bucket, origin, (allowing, asked), resp.headers_mut())
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
    fn a_path_key_is_measured_decoded_and_without_its_bucket() {
        assert_eq!(path_key_len("/b/a%20b", false), Some(3));
        assert_eq!(path_key_len("/a%20b/c", true), Some(5));
        assert_eq!(path_key_len("/b", false), None);
        assert_eq!(path_key_len("/b/%E2%82%AC", false), Some(3), "bytes, not characters");
    }

    #[test]
    fn the_host_is_read_from_the_authority_when_no_header_names_it() {
        let h2 = Request::builder()
            .version(http::Version::HTTP_2)
            .uri("https://kvcache.localhost:9443/key")
            .body(())
            .unwrap();
        assert_eq!(request_host(&h2), Some("kvcache.localhost:9443"));
        let h1 = Request::builder()
            .uri("/key")
            .header("host", "other.localhost:9000")
            .body(())
            .unwrap();
        assert_eq!(request_host(&h1), Some("other.localhost:9000"));
        assert_eq!(request_host(&Request::builder().uri("/key").body(()).unwrap()), None);
    }
}
