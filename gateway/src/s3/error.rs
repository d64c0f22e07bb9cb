//! The one place where backend and metadata errors become S3 errors.

use s3s::{S3Error, S3ErrorCode};

use penstock_backends::{BackendError, KeyError};
use penstock_metadata::MetaError;

fn custom(code: &'static str, status: http::StatusCode, msg: &str) -> S3Error {
    let mut e = S3Error::with_message(S3ErrorCode::Custom(code.into()), msg.to_owned());
    e.set_status_code(status);
    e
}

/// Maps a storage error to the S3 error a client should see.
pub(crate) fn backend_err(e: BackendError) -> S3Error {
    match e {
        BackendError::InvalidKey(k) => key_err(k),
        BackendError::ParentIsFile => custom(
            "ObjectParentIsFile",
            http::StatusCode::CONFLICT,
            "A prefix of this key is an existing object, so the key cannot be a path below it",
        ),
        BackendError::IsDirectory => custom(
            "ExistingObjectIsDirectory",
            http::StatusCode::CONFLICT,
            "The key names a directory that holds other objects",
        ),
        BackendError::IsFile => custom(
            "ExistingObjectIsFile",
            http::StatusCode::CONFLICT,
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
                return custom(
                    "EntityTooLarge",
                    http::StatusCode::INSUFFICIENT_STORAGE,
                    "The volume is full",
                );
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
    tracing::error!(error = %e, "metadata store error");
    S3Error::with_message(S3ErrorCode::InternalError, "metadata store error")
}

/// An unexpected failure: logged in full, reported as InternalError.
pub(crate) fn internal(e: impl std::fmt::Display) -> S3Error {
    tracing::error!(error = %e, "internal error");
    S3Error::with_message(
        S3ErrorCode::InternalError,
        "We encountered an internal error. Please try again.",
    )
}
