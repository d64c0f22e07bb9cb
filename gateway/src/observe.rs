//! Per-request observation around the S3 service: a request id (`x-amz-request-id`), a tracing
//! span carrying operation, bucket, key, tenant, status and duration, one log line per request,
//! and the request metrics.
//!
//! The operation, bucket, key and tenant are only known once s3s has routed and authenticated
//! the request; the access check writes them into a [`RequestInfo`] slot that this layer put
//! into the request's extensions.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use s3s::service::S3Service;
use s3s::Body;
use tracing::{field, Instrument};

use crate::metrics::Metrics;

/// What the access check learned about a request.
#[derive(Debug, Default, Clone)]
pub struct RequestInfo {
    pub operation: String,
    pub bucket: Option<String>,
    pub key: Option<String>,
    /// `domain/user (access key)`.
    pub tenant: Option<String>,
}

/// The slot shared between this layer and the access check.
#[derive(Debug, Default, Clone)]
pub struct InfoSlot(pub Arc<Mutex<RequestInfo>>);

/// The S3 service wrapped with observation.
#[derive(Clone)]
pub struct Observed {
    inner: S3Service,
    metrics: Arc<Metrics>,
    peer: Option<std::net::SocketAddr>,
}

impl Observed {
    /// Wraps `inner`.
    pub fn new(inner: S3Service, metrics: Arc<Metrics>) -> Self {
        Self {
            inner,
            metrics,
            peer: None,
        }
    }

    /// The service for one connection from `peer`.
    pub fn with_peer(&self, peer: std::net::SocketAddr) -> Self {
        Self {
            peer: Some(peer),
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

/// A request id in the style of S3's: 16 upper-case hex digits.
fn request_id() -> String {
    format!("{:016X}", rand::random::<u64>())
}

/// Error responses are small XML documents; the code is read from them for metrics and logs.
const MAX_ERROR_BODY: usize = 64 * 1024;

fn error_code(xml: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(xml).ok()?;
    let start = s.find("<Code>")? + "<Code>".len();
    let end = s[start..].find("</Code>")? + start;
    Some(s[start..end].to_owned())
}

impl hyper::service::Service<Request<Incoming>> for Observed {
    type Response = Response<Body>;
    type Error = s3s::HttpError;
    type Future = std::pin::Pin<Box<dyn std::future::Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn call(&self, mut req: Request<Incoming>) -> Self::Future {
        let inner = self.inner.clone();
        let metrics = self.metrics.clone();
        let id = request_id();
        let slot = InfoSlot::default();
        req.extensions_mut().insert(slot.clone());
        if let Some(p) = self.peer {
            req.extensions_mut().insert(crate::s3::PeerAddr(p));
        }
        let close = unsent_body(&req) && req.version() <= http::Version::HTTP_11;
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
                metrics.in_flight().inc();
                let start = Instant::now();
                let req = if close {
                    req.map(|_| Body::empty())
                } else {
                    req.map(Body::from)
                };
                let result = inner.call(req).await;
                metrics.in_flight().dec();
                let mut resp = result?;
                let elapsed = start.elapsed();
                let status = resp.status();

                // Read the error code of failures (small, buffered bodies) and put it back.
                let mut code = None;
                if status.as_u16() >= 400 {
                    let (parts, body) = resp.into_parts();
                    let bytes = match http_body_util::Limited::new(body, MAX_ERROR_BODY).collect().await {
                        Ok(c) => c.to_bytes(),
                        Err(_) => Bytes::new(),
                    };
                    code = Some(error_code(&bytes).unwrap_or_else(|| format!("HTTP{}", status.as_u16())));
                    resp = Response::from_parts(parts, Body::from(bytes));
                }
                if let Ok(v) = HeaderValue::from_str(&id) {
                    resp.headers_mut().insert("x-amz-request-id", v);
                }
                if close {
                    resp.headers_mut()
                        .insert(http::header::CONNECTION, HeaderValue::from_static("close"));
                }

                let info = slot.0.lock().map(|i| i.clone()).unwrap_or_default();
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
    fn reads_error_codes() {
        let xml = b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>x</Message></Error>";
        assert_eq!(error_code(xml).as_deref(), Some("NoSuchKey"));
        assert_eq!(error_code(b"<Error></Error>"), None);
        assert_eq!(request_id().len(), 16);
    }
}
