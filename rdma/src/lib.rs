//! The GPU-direct data path of Penstock: the `x-amz-rdma-token` protocol.
//!
//! A client registers memory and describes a window of it in a token sent with an ordinary
//! signed S3 request; the gateway then moves the payload itself (a one-sided write for GET, a
//! read for PUT) and answers with an empty body.
//!
//! - [`token`]: the cuObject DC descriptor (RDMA NICs, Dynamically Connected transport).
//! - [`software`]: the same one-sided semantics over TCP, with its own token form, for hosts
//!   without RDMA NICs; both the client's target and the gateway's initiator.
//! - [`transport`]: the [`Transport`] seam and the pipelines that move whole objects through it.
//! - `verbs` (cargo feature `verbs`): the DC initiator on libibverbs and mlx5 direct verbs.

pub mod software;
pub mod token;
pub mod transport;
#[cfg(feature = "verbs")]
pub mod verbs;

pub use software::{Region, SoftwareInitiator, SoftwareTarget, SwToken};
pub use token::{DcToken, TokenError, Window};
pub use transport::{TransferError, Transport, Transports};

/// Header that carries a token (NVIDIA cuObject, MinIO, versitygw, NooBaa).
pub const TOKEN_HEADER: &str = "x-amz-rdma-token";
/// The same descriptor under Dell ObjectScale's header name.
pub const TOKEN_HEADER_ALT: &str = "x-rdma-info";
/// Response header: the status of the RDMA part of the request (`200`, `206`, `501`).
pub const REPLY_HEADER: &str = "x-amz-rdma-reply";
/// Response header: payload bytes moved by the transport.
pub const BYTES_HEADER: &str = "x-amz-rdma-bytes-transferred";

/// A token of any supported form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A cuObject DC descriptor.
    Dc(DcToken),
    /// A software transport token (`swt1:...`).
    Software(SwToken),
}

impl Token {
    /// Parses a header value: `swt1:` tokens are software tokens, anything else must be a DC
    /// descriptor.
    pub fn parse(s: &str) -> Result<Self, TokenError> {
        if s.trim_start().starts_with(software::PREFIX) {
            SwToken::parse(s).map(Token::Software)
        } else {
            DcToken::parse(s).map(Token::Dc)
        }
    }

    /// The window the gateway may touch.
    pub fn window(&self) -> Window {
        match self {
            Token::Dc(t) => t.window(),
            Token::Software(t) => t.window(),
        }
    }

    /// `dc` or `software`, for logs and errors.
    pub fn kind(&self) -> &'static str {
        match self {
            Token::Dc(_) => "dc",
            Token::Software(_) => "software",
        }
    }
}

impl std::fmt::Display for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Token::Dc(t) => t.fmt(f),
            Token::Software(t) => t.fmt(f),
        }
    }
}
