//! Storage volumes for Penstock.
//!
//! A bucket is a Backend.AI-style virtual folder: a directory on a volume at a path derived from its
//! quota scope and folder id ([`vfolder`]). Objects are plain files at their key's path ([`key`]) so
//! that compute sessions mounting the folder see the same bytes as S3 clients.
//!
//! [`Volume`] and [`Folder`] are the seam between the gateway and the storage: the gateway speaks S3
//! semantics, a backend moves bytes and keeps every path inside its folder. [`posix`] implements them
//! over any mounted file system with `openat2(RESOLVE_BENEATH)` containment; [`nfs`] speaks NFS
//! from user space to an export, with the same layout and containment.

pub mod error;
pub mod key;
pub mod layout;
mod listing;
pub mod nfs;
pub mod posix;
pub mod vfolder;
pub mod volume;

pub use error::{BackendError, Result};
pub use key::{KeyError, ObjectPath};
pub use vfolder::{FolderLocation, QuotaScope, ScopeKind};
pub use volume::{Announce, Announced, DirEntry, EntryKind, Folder, IoObserver, ReadHandle, StagingFile, Stat, Volume};

/// Name of the hidden per-folder directory; see [`layout`] for what it holds.
pub use layout::{set_instance, SweepRule, HIDDEN_DIR};
pub use penstock_types::UploadId;
