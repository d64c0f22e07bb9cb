//! The one place where backend and metadata errors become S3 errors, and where every error
//! code that s3s does not know (`QuotaExceeded`, `InvalidPartNumber`, the RDMA codes, ...) is
//! built with its status. Codes s3s knows are raised in place with `s3_error!`.

use http::{HeaderMap, HeaderValue, StatusCode};
use s3s::{S3Error, S3ErrorCode};

use penstock_backends::{BackendError, KeyError, QuotaScope};
use penstock_metadata::MetaError;

/// An S3 error document as S3 writes one, for answers made outside s3s's error path: `code`,
/// `message` (already XML-escaped) and any further elements (`extra`, such as `<Region>`).
pub(crate) fn error_document(code: &str, message: &str, extra: &str) -> String {
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>{code}</Code><Message>{message}</Message>\
         {extra}</Error>"
    )
}

pub(crate) fn custom(code: &'static str, status: StatusCode, msg: impl Into<String>) -> S3Error {
    let mut e = S3Error::with_message(S3ErrorCode::Custom(code.into()), msg.into());
    e.set_status_code(status);
    e
}

/// 400 `XAmzContentSHA256Mismatch`: the body's SHA-256 is not the one `x-amz-content-sha256`
/// named, in S3's words.
pub(crate) fn content_sha256_mismatch() -> S3Error {
    custom(
        "XAmzContentSHA256Mismatch",
        StatusCode::BAD_REQUEST,
        "The provided 'x-amz-content-sha256' header does not match what was computed.",
    )
}

/// 403 `QuotaExceeded`: a write of `delta` more bytes would take `scope` past its limit.
pub(crate) fn quota_exceeded(delta: i64, scope: &QuotaScope, left: u64, limit: u64) -> S3Error {
    custom(
        "QuotaExceeded",
        StatusCode::FORBIDDEN,
        format!("The write needs {delta} more bytes but quota scope {scope} has {left} of {limit} bytes left"),
    )
}

/// 416 `InvalidPartNumber`: GET or HEAD `?partNumber=` beyond the object's parts.
pub(crate) fn invalid_part_number() -> S3Error {
    custom(
        "InvalidPartNumber",
        StatusCode::RANGE_NOT_SATISFIABLE,
        "The requested partnumber is not satisfiable",
    )
}

/// 404 `ServerSideEncryptionConfigurationNotFoundError`: GetBucketEncryption of a bucket without
/// one. s3s's table says 400 for the code; S3 answers 404, and tools (Terraform) read the 404
/// and this message as "not configured".
pub(crate) fn no_encryption_configuration() -> S3Error {
    let mut e = S3Error::with_message(
        S3ErrorCode::ServerSideEncryptionConfigurationNotFoundError,
        "The server side encryption configuration was not found",
    );
    e.set_status_code(StatusCode::NOT_FOUND);
    e
}

/// The header an error carries inside the gateway with the elements S3 adds to that error's
/// document (`<Condition>`, `<ProposedSize>`, ...), as an XML fragment already escaped. The HTTP
/// layer (`observe.rs`) writes the fragment into the document and removes the header, so it
/// never reaches a client.
pub(crate) const DETAIL_HEADER: &str = "x-penstock-error-detail";

/// `e` with the document elements `xml` (escaped by the caller; see [`DETAIL_HEADER`]).
pub(crate) fn with_detail(mut e: S3Error, xml: &str) -> S3Error {
    if let Ok(v) = HeaderValue::from_str(xml) {
        let mut h = e.headers().cloned().unwrap_or_else(HeaderMap::new);
        h.insert(DETAIL_HEADER, v);
        e.set_headers(h);
    }
    e
}

/// The document elements [`with_detail`] gave `e`, if any.
pub(crate) fn detail_of(e: &S3Error) -> Option<String> {
    e.headers()
        .and_then(|h| h.get(DETAIL_HEADER))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// The elements S3 adds to an `InvalidArgument` document to name what it refuses:
/// `<ArgumentName>name</ArgumentName><ArgumentValue>value</ArgumentValue>`, the value escaped.
pub(crate) fn argument_detail(name: &str, value: &str) -> String {
    format!(
        "<ArgumentName>{name}</ArgumentName><ArgumentValue>{}</ArgumentValue>",
        super::post_form::xml_escape(value)
    )
}

/// 400 `InvalidArgument` with `message`, naming the argument `name` and its `value`.
pub(crate) fn invalid_argument(message: &str, name: &str, value: &str) -> S3Error {
    with_detail(
        S3Error::with_message(S3ErrorCode::InvalidArgument, message.to_owned()),
        &argument_detail(name, value),
    )
}

/// 412 `PreconditionFailed` naming the condition that failed (`If-Match`, `If-None-Match`,
/// `If-Unmodified-Since`), as S3's error document names it in `<Condition>`: SDKs surface the
/// element (boto3's `Error.Condition`), and clients of conditional writes read it.
pub(crate) fn precondition_failed(condition: &'static str) -> S3Error {
    let e = S3Error::with_message(
        S3ErrorCode::PreconditionFailed,
        "At least one of the pre-conditions you specified did not hold",
    );
    with_detail(e, &format!("<Condition>{condition}</Condition>"))
}

/// 416 `InvalidRange`: `range` selects no byte of an object of `size` bytes. S3's document
/// names the range and the object's size (`<RangeRequested>`, `<ActualObjectSize>`); clients
/// built on the AWS CRT read the size to tell an empty object, whose first ranged GET every
/// download starts with is refused so, from a failed read, and then fetch it whole. The answer
/// also carries `Content-Range: bytes */<size>`, as S3 sends it and HTTP asks of a 416 (RFC 9110
/// 15.5.17), for clients that learn the size from the header.
pub(crate) fn invalid_range(range: &s3s::dto::Range, size: u64) -> S3Error {
    let mut e = S3Error::with_message(S3ErrorCode::InvalidRange, "The requested range is not satisfiable");
    let mut headers = http::HeaderMap::new();
    if let Ok(v) = http::HeaderValue::from_str(&format!("bytes */{size}")) {
        headers.insert(http::header::CONTENT_RANGE, v);
    }
    e.set_headers(headers);
    let asked = match range {
        s3s::dto::Range::Int {
            first,
            last: Some(last),
        } => format!("bytes={first}-{last}"),
        s3s::dto::Range::Int { first, last: None } => format!("bytes={first}-"),
        s3s::dto::Range::Suffix { length } => format!("bytes=-{length}"),
    };
    with_detail(
        e,
        &format!("<RangeRequested>{asked}</RangeRequested><ActualObjectSize>{size}</ActualObjectSize>"),
    )
}

/// 400 `EntityTooSmall`: part `part` (MD5 `md5_hex`) of a completed upload is `size` bytes,
/// under `min`. S3's message is fixed; the part, its ETag and the sizes go in elements of their
/// own.
pub(crate) fn part_too_small(part: u32, md5_hex: &str, size: u64, min: u64) -> S3Error {
    let e = S3Error::with_message(
        S3ErrorCode::EntityTooSmall,
        "Your proposed upload is smaller than the minimum allowed object size.",
    );
    with_detail(
        e,
        &format!(
            "<ProposedSize>{size}</ProposedSize><MinSizeAllowed>{min}</MinSizeAllowed><PartNumber>{part}</PartNumber>\
             <ETag>{md5_hex}</ETag>"
        ),
    )
}

/// `e`, an error about upload `upload_id` (`NoSuchUpload`, `InvalidPartOrder`, `InvalidPart`),
/// with the elements S3's document names it by: `<UploadId>`, and for a part refused, the
/// `<PartNumber>` and the `<ETag>` the client gave for it. The id is the client's, so escaped.
pub(crate) fn upload_detail(e: S3Error, upload_id: &str, part: Option<(i32, Option<&str>)>) -> S3Error {
    let mut xml = format!("<UploadId>{}</UploadId>", super::post_form::xml_escape(upload_id));
    if let Some((n, etag)) = part {
        xml.push_str(&format!("<PartNumber>{n}</PartNumber>"));
        if let Some(etag) = etag {
            xml.push_str(&format!("<ETag>{}</ETag>", super::post_form::xml_escape(etag)));
        }
    }
    with_detail(e, &xml)
}

/// The most one upload (a PutObject or an UploadPart) may carry, as S3 allows: 5 GiB.
pub(crate) const MAX_UPLOAD_BYTES: u64 = 5 << 30;

/// 400 `EntityTooLarge`: an upload of `size` bytes (declared, or counted so far), over
/// [`MAX_UPLOAD_BYTES`]; S3's document names both.
pub(crate) fn upload_too_large(size: u64) -> S3Error {
    let e = S3Error::with_message(
        S3ErrorCode::EntityTooLarge,
        "Your proposed upload exceeds the maximum allowed size",
    );
    with_detail(
        e,
        &format!("<ProposedSize>{size}</ProposedSize><MaxSizeAllowed>{MAX_UPLOAD_BYTES}</MaxSizeAllowed>"),
    )
}

/// 400 `AuthorizationQueryParametersError`: a presigned URL that claims to live too long.
pub(crate) fn presigned_too_long(max_secs: u64) -> S3Error {
    custom(
        "AuthorizationQueryParametersError",
        StatusCode::BAD_REQUEST,
        format!("X-Amz-Expires must be less than a week (in seconds) that is {max_secs}"),
    )
}

/// 400 `InvalidRDMAToken`: the `x-amz-rdma-token` header does not parse.
pub(crate) fn invalid_rdma_token(why: &str) -> S3Error {
    custom(
        "InvalidRDMAToken",
        StatusCode::BAD_REQUEST,
        format!("The RDMA token is malformed: {why}"),
    )
}

/// 501 `RDMANotSupported` with `x-amz-rdma-reply: 501`: the client should resend without the
/// token and take the bytes over HTTP.
pub(crate) fn rdma_declined(why: &str) -> S3Error {
    let mut e = custom(
        "RDMANotSupported",
        StatusCode::NOT_IMPLEMENTED,
        format!("This gateway cannot serve the RDMA token ({why}); resend the request without it"),
    );
    let mut h = HeaderMap::new();
    h.insert(penstock_rdma::REPLY_HEADER, HeaderValue::from_static("501"));
    e.set_headers(h);
    e
}

/// 400 `RDMAWindowTooSmall`: the payload does not fit the client's window; nothing moved.
pub(crate) fn rdma_window_too_small(need: u64, have: u64) -> S3Error {
    custom(
        "RDMAWindowTooSmall",
        StatusCode::BAD_REQUEST,
        format!("The payload is {need} bytes but the RDMA token's window holds {have}; no bytes were transferred"),
    )
}

/// 500 `RDMATransferFailed`: a transfer failed midway.
pub(crate) fn rdma_transfer_failed(e: &penstock_rdma::TransferError) -> S3Error {
    custom(
        "RDMATransferFailed",
        StatusCode::INTERNAL_SERVER_ERROR,
        format!("The RDMA transfer failed: {e}"),
    )
}

/// Maps a storage error to the S3 error a client should see.
pub(crate) fn backend_err(e: BackendError) -> S3Error {
    match e {
        BackendError::InvalidKey(k) => key_err(k),
        BackendError::ParentIsFile => custom(
            "ObjectParentIsFile",
            StatusCode::CONFLICT,
            "A prefix of this key is an existing object, so the key cannot be a path below it",
        ),
        BackendError::IsDirectory => custom(
            "ExistingObjectIsDirectory",
            StatusCode::CONFLICT,
            "The key names a directory that holds other objects",
        ),
        BackendError::IsFile => custom(
            "ExistingObjectIsFile",
            StatusCode::CONFLICT,
            "A directory marker cannot replace an existing object of the same name",
        ),
        BackendError::Escapes => {
            s3s::s3_error!(AccessDenied, "The key resolves outside the bucket's folder")
        }
        BackendError::FolderNotFound(_) => {
            s3s::s3_error!(ServiceUnavailable, "The bucket's folder is missing on its volume")
        }
        BackendError::FolderExists(_) => s3s::s3_error!(InternalError, "folder id collision"),
        BackendError::FolderNotEmpty => s3s::s3_error!(BucketNotEmpty, "The bucket you tried to delete is not empty"),
        BackendError::PartNotFound(n) => s3s::s3_error!(InvalidPart, "Part {n} was not found"),
        BackendError::Unavailable(m) => {
            s3s::s3_error!(ServiceUnavailable, "Storage unavailable: {m}")
        }
        BackendError::Io(e) => {
            if e.raw_os_error() == Some(libc_enospc()) {
                return custom("EntityTooLarge", StatusCode::INSUFFICIENT_STORAGE, "The volume is full");
            }
            internal(e)
        }
    }
}

fn libc_enospc() -> i32 {
    rustix::io::Errno::NOSPC.raw_os_error()
}

/// Maps an unmappable key to a 400 error.
pub(crate) fn key_err(k: KeyError) -> S3Error {
    match k {
        KeyError::TooLong | KeyError::SegmentTooLong => s3s::s3_error!(KeyTooLongError, "{k}"),
        k => s3s::s3_error!(InvalidArgument, "Invalid object key: {k}"),
    }
}

/// Maps a metadata store failure.
pub(crate) fn meta_err(e: MetaError) -> S3Error {
    match e {
        // A conditional write's change found another gateway writing the key (see `Expect`).
        MetaError::Busy => custom(
            "ConditionalRequestConflict",
            StatusCode::CONFLICT,
            "A conflicting conditional operation is currently in progress against this resource. Try again.",
        ),
        // One whose judged record changed since; callers that know the condition name it.
        MetaError::Changed => S3Error::with_message(
            S3ErrorCode::PreconditionFailed,
            "At least one of the pre-conditions you specified did not hold",
        ),
        // The engine is down or unreachable: a retry may succeed, and clients retry 503s.
        MetaError::Unavailable(_) => {
            tracing::warn!(error = %e, "metadata engine unavailable");
            S3Error::with_message(
                S3ErrorCode::ServiceUnavailable,
                "The metadata service is unavailable. Please try again.",
            )
        }
        e => {
            tracing::error!(error = %e, "metadata store error");
            S3Error::with_message(S3ErrorCode::InternalError, "metadata store error")
        }
    }
}

/// An unexpected failure: logged in full, reported as InternalError.
pub(crate) fn internal(e: impl std::fmt::Display) -> S3Error {
    tracing::error!(error = %e, "internal error");
    S3Error::with_message(
        S3ErrorCode::InternalError,
        "We encountered an internal error. Please try again.",
    )
}
