//! Errors of storage operations, typed so the gateway can map each to exactly one S3 error.

use crate::key::KeyError;

/// Result of a backend operation.
pub type Result<T, E = BackendError> = std::result::Result<T, E>;

/// What went wrong in a volume or folder operation.
#[derive(Debug, thiserror::Error)]
pub enum BackendError {
    /// The key cannot be mapped to a path inside a folder.
    #[error(transparent)]
    InvalidKey(#[from] KeyError),
    /// A path component that must be a directory is a file (`a/b` exists, `a/b/c` was asked for).
    #[error("a parent of the key is an existing object")]
    ParentIsFile,
    /// The key names a directory that holds other objects.
    #[error("the key is an existing directory")]
    IsDirectory,
    /// The key (ending in `/`) names a directory but a file exists at that path.
    #[error("the key is an existing object, not a directory")]
    IsFile,
    /// The path resolves outside its folder (a symlink pointing elsewhere).
    #[error("path escapes the folder")]
    Escapes,
    /// The folder's directory does not exist.
    #[error("folder not found: {0}")]
    FolderNotFound(String),
    /// The folder's directory already exists.
    #[error("folder already exists: {0}")]
    FolderExists(String),
    /// The folder still holds objects.
    #[error("folder is not empty")]
    FolderNotEmpty,
    /// A multipart part that should exist does not.
    #[error("part {0} not found")]
    PartNotFound(u32),
    /// The storage cannot be reached right now (NFS server down, volume unmounted); worth a retry.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// Any other I/O failure.
    #[error("I/O error: {0}")]
    Io(#[from] std::io::Error),
}

impl From<rustix::io::Errno> for BackendError {
    fn from(e: rustix::io::Errno) -> Self {
        BackendError::Io(e.into())
    }
}
