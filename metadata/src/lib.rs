//! The metadata of Penstock: one async interface ([`Metadata`]) and its engines.
//!
//! RocksDB holds what the file tree cannot: access keys, the bucket → vfolder map, object
//! attributes (ETag, checksums, content headers, user metadata, tags) and multipart state. The
//! file tree stays the truth for bytes and existence; an object record carries the
//! [`Fingerprint`] of the file it describes so a file changed behind the gateway's back is noticed.
//!
//! Layout: one column family per record kind ([`schema`]), values are versioned JSON documents so
//! fields can be added without a migration.

pub mod dump;
mod engine;
mod postgres;
mod records;
mod rocks;
pub mod schema;
mod store;

pub use engine::{
    on_blocking_thread, BucketEdit, Charge, Edit, Expect, KeyEdit, KeyedRecords, KeyedVersions, MetaResult, Metadata,
    PendingPublish, UploadQuery, VersionQuery,
};
pub use postgres::{PgMetadata, PgOptions, PG_SCHEMA_VERSION};
pub use records::*;
pub use rocks::RocksMetadata;
pub use store::{MetaError, Store, StoreOptions};
