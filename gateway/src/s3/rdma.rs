//! The `x-amz-rdma-token` data path: which requests carry a token, whether this gateway can
//! serve it, and the S3 answers of the protocol (declines, window errors, failed transfers).
//!
//! GetObject, PutObject and UploadPart call in here; every other operation ignores the header.

use std::net::SocketAddr;
use std::sync::Arc;

use http::{HeaderMap, HeaderValue};
use s3s::{s3_error, S3Error, S3Result};

use penstock_rdma::{Token, TransferError, Transport, Transports, BYTES_HEADER, REPLY_HEADER};

use super::error::{invalid_rdma_token as invalid_token, rdma_declined as declined};
use crate::config::{DeclineMode, RdmaConfig};
use crate::metrics::{DataPath, Metrics};

/// The address a request came from, put into the request extensions by the listener.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

/// The gateway's token data path.
pub(crate) struct RdmaPath {
    transports: Transports,
    decline: DeclineMode,
    any_host: bool,
    depth: usize,
}

/// A token this gateway will serve, with the transport that serves it.
pub(crate) struct Admitted {
    pub transport: Arc<dyn Transport>,
    pub token: Arc<Token>,
    /// Transfer operations in flight for this request (`[rdma] depth`).
    pub depth: usize,
}

impl Admitted {
    /// How the payload travels, for metrics.
    pub fn data_path(&self) -> DataPath {
        match *self.token {
            Token::Software(_) => DataPath::Software,
            Token::Dc(_) => DataPath::Rdma,
        }
    }
}

/// What to do with a request's token.
pub(crate) enum Admission {
    /// No token: plain HTTP.
    None,
    /// Serve the payload through the transport.
    Serve(Admitted),
    /// Declined in fallback mode: serve a GET over HTTP and say so in `x-amz-rdma-reply`.
    Fallback,
}

impl RdmaPath {
    /// Sets up the transports the configuration asks for.
    pub fn new(cfg: &RdmaConfig) -> Self {
        let software: Option<Arc<dyn Transport>> = cfg
            .software
            .then(|| Arc::new(penstock_rdma::SoftwareInitiator::default()) as Arc<dyn Transport>);
        let dc = dc_transport(cfg);
        match &dc {
            Ok(t) => tracing::info!(transport = t.name(), "RDMA DC transport ready"),
            Err(why) => tracing::info!(reason = %why, "RDMA DC transport unavailable; DC tokens will be declined"),
        }
        let depth = cfg.effective_depth();
        tracing::info!(depth, "token transfers keep {depth} operations in flight per request");
        Self {
            transports: Transports { software, dc },
            decline: cfg.decline,
            any_host: cfg.software_any_host,
            depth,
        }
    }

    /// Reads the request's token (if any) and decides how to serve it. `write` is true for
    /// PutObject and UploadPart, which cannot fall back to a body the client never sent.
    pub fn admit(
        &self,
        headers: &HeaderMap,
        peer: Option<PeerAddr>,
        metrics: &Metrics,
        write: bool,
    ) -> S3Result<Admission> {
        let Some(token) = token_of(headers)? else {
            return Ok(Admission::None);
        };
        if let (Token::Software(t), false) = (&token, self.any_host) {
            let client = peer.map(|p| p.0.ip().to_canonical());
            if client != Some(t.endpoint.ip().to_canonical()) {
                return Err(s3_error!(
                    AccessDenied,
                    "The software transport token names {}, which is not the address of this request's client",
                    t.endpoint
                ));
            }
        }
        match self.transports.for_token(&token) {
            Ok(transport) => Ok(Admission::Serve(Admitted {
                transport,
                token: Arc::new(token),
                depth: self.depth,
            })),
            Err(why) => {
                metrics.rdma_decline(token.kind());
                if self.decline == DeclineMode::Fallback && !write {
                    Ok(Admission::Fallback)
                } else {
                    Err(declined(&why))
                }
            }
        }
    }
}

#[cfg(feature = "verbs")]
fn dc_transport(cfg: &RdmaConfig) -> Result<Arc<dyn Transport>, String> {
    if !cfg.verbs {
        return Err("disabled by rdma.verbs = false".to_owned());
    }
    let opts = penstock_rdma::verbs::DcOptions {
        device: cfg.verbs_device.clone(),
        port: cfg.verbs_port,
        gid_index: cfg.verbs_gid_index,
        dc_key: cfg.dc_key,
    };
    penstock_rdma::verbs::DcTransport::open(&opts)
        .map(|t| Arc::new(t) as Arc<dyn Transport>)
        .map_err(|e| e.to_string())
}

#[cfg(not(feature = "verbs"))]
fn dc_transport(_cfg: &RdmaConfig) -> Result<Arc<dyn Transport>, String> {
    Err("this gateway was built without the verbs feature".to_owned())
}

/// The token of a request: `x-amz-rdma-token`, or Dell ObjectScale's `x-rdma-info`.
fn token_of(headers: &HeaderMap) -> S3Result<Option<Token>> {
    let Some(v) = headers
        .get(penstock_rdma::TOKEN_HEADER)
        .or_else(|| headers.get(penstock_rdma::TOKEN_HEADER_ALT))
    else {
        return Ok(None);
    };
    let text = v.to_str().map_err(|_| invalid_token("the token is not ASCII"))?;
    Token::parse(text).map(Some).map_err(|e| invalid_token(&e.to_string()))
}

/// Whether a request carries a token (checked before s3s reads the body).
pub fn has_token(headers: &HeaderMap) -> bool {
    headers.contains_key(penstock_rdma::TOKEN_HEADER) || headers.contains_key(penstock_rdma::TOKEN_HEADER_ALT)
}

/// The object or range does not fit the client's window: nothing is moved.
pub(crate) fn window_too_small(need: u64, have: u64) -> S3Error {
    super::error::rdma_window_too_small(need, have)
}

/// A transfer failed midway: counted, logged, and answered `RDMATransferFailed`.
pub(crate) fn transfer_failed(e: &TransferError, metrics: &Metrics, kind: &str) -> S3Error {
    metrics.rdma_error(kind);
    tracing::warn!(error = %e, kind, "RDMA transfer failed");
    super::error::rdma_transfer_failed(e)
}

/// Sets `x-amz-rdma-reply` (and, when bytes moved, `x-amz-rdma-bytes-transferred`).
pub(crate) fn reply_headers(h: &mut HeaderMap, reply: u16, bytes: Option<u64>) {
    h.insert(REPLY_HEADER, HeaderValue::from(reply));
    if let Some(n) = bytes {
        h.insert(BYTES_HEADER, HeaderValue::from(n));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::StatusCode;

    fn headers(token: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(penstock_rdma::TOKEN_HEADER, HeaderValue::from_str(token).unwrap());
        h
    }

    const DC: &str = "00007f3a2c000000:00100000:0001a2b3:0000:00c0de:1:00000000000000000000ffffc0a80a07";

    #[test]
    fn admission() {
        let m = Metrics::new();
        let peer = Some(PeerAddr("127.0.0.1:5555".parse().unwrap()));
        let strict = RdmaPath::new(&RdmaConfig::default());
        assert!(matches!(
            strict.admit(&HeaderMap::new(), peer, &m, false),
            Ok(Admission::None)
        ));
        let e = strict.admit(&headers("junk"), peer, &m, false).err().unwrap();
        assert_eq!(e.code().as_str(), "InvalidRDMAToken");
        // Without the verbs feature (or a device), DC tokens are declined with 501.
        let e = strict.admit(&headers(DC), peer, &m, false).err().unwrap();
        assert_eq!(e.status_code(), Some(StatusCode::NOT_IMPLEMENTED));
        assert_eq!(e.headers().unwrap()[REPLY_HEADER], "501");

        let sw =
            "swt1:127.0.0.1:4000:0000000000000001:000102030405060708090a0b0c0d0e0f:0000000000000000:0000000000000010";
        assert!(matches!(
            strict.admit(&headers(sw), peer, &m, false),
            Ok(Admission::Serve(_))
        ));
        let elsewhere = sw.replace("127.0.0.1", "10.1.2.3");
        let e = strict.admit(&headers(&elsewhere), peer, &m, false).err().unwrap();
        assert_eq!(e.code().as_str(), "AccessDenied");

        let fallback = RdmaPath::new(&RdmaConfig {
            decline: DeclineMode::Fallback,
            software: false,
            ..RdmaConfig::default()
        });
        assert!(matches!(
            fallback.admit(&headers(sw), peer, &m, false),
            Ok(Admission::Fallback)
        ));
        assert!(
            fallback.admit(&headers(sw), peer, &m, true).is_err(),
            "PUT cannot fall back"
        );
    }
}
