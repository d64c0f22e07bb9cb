//! Column families, key encodings and the schema version.
//!
//! | column family | key | value |
//! |---|---|---|
//! | `system` | `schema_version` | u32, big endian |
//! | `domains` | domain name | [`Domain`](crate::Domain) |
//! | `projects` | project id (16 bytes) | [`Project`](crate::Project) |
//! | `users` | user id (16 bytes) | [`User`](crate::User) |
//! | `keypairs` | access key | [`Keypair`](crate::Keypair) |
//! | `buckets` | domain ‖ 0x00 ‖ bucket name | [`BucketRecord`](crate::BucketRecord) |
//! | `quotas` | quota scope (`user:<uuid>`) | [`Quota`](crate::Quota) |
//! | `objects` | folder id (16 bytes) ‖ object key | [`ObjectRecord`](crate::ObjectRecord) |
//! | `publishing` | folder id ‖ object key | Unix ms when a publish of that key began |
//! | `uploads` | folder id ‖ object key ‖ 0x00 ‖ upload id | [`UploadRecord`](crate::UploadRecord) |
//! | `parts` | upload id ‖ 0x00 ‖ part number (u32 BE) | [`PartRecord`](crate::PartRecord) |
//! | `versions` | folder id ‖ object key ‖ 0x00 ‖ (u64::MAX − seq) BE | [`VersionRecord`](crate::VersionRecord) |
//!
//! Object keys never contain NUL (the gateway rejects them), so 0x00 separates fields and keeps
//! byte order equal to S3 key order.

use penstock_types::{QuotaScope, UploadId};
use uuid::Uuid;

/// The schema this build reads and writes. Bump when an incompatible layout change lands, and
/// migrate older stores in `Store::check_schema`.
///
/// 1. The first release.
/// 2. Keypairs record `created_ms` (Unix milliseconds) instead of `created` (Unix seconds).
/// 3. The `versions` column family (versioned buckets); nothing to migrate.
pub const SCHEMA_VERSION: u32 = 3;

pub(crate) const CF_SYSTEM: &str = "system";
pub(crate) const CF_DOMAINS: &str = "domains";
pub(crate) const CF_PROJECTS: &str = "projects";
pub(crate) const CF_USERS: &str = "users";
pub(crate) const CF_QUOTAS: &str = "quotas";
pub(crate) const CF_KEYPAIRS: &str = "keypairs";
pub(crate) const CF_BUCKETS: &str = "buckets";
pub(crate) const CF_OBJECTS: &str = "objects";
pub(crate) const CF_UPLOADS: &str = "uploads";
pub(crate) const CF_PARTS: &str = "parts";
/// Keys whose object record carries a pending `replaces` (a publish not yet settled): the
/// start-up sweep settles them without scanning every record.
pub(crate) const CF_PUBLISHING: &str = "publishing";
/// Noncurrent versions and delete markers.
pub(crate) const CF_VERSIONS: &str = "versions";
pub(crate) const ALL_CFS: [&str; 12] = [
    CF_SYSTEM,
    CF_DOMAINS,
    CF_PROJECTS,
    CF_USERS,
    CF_KEYPAIRS,
    CF_BUCKETS,
    CF_QUOTAS,
    CF_OBJECTS,
    CF_UPLOADS,
    CF_PARTS,
    CF_PUBLISHING,
    CF_VERSIONS,
];
pub(crate) const SCHEMA_KEY: &[u8] = b"schema_version";

/// Key of a quota record: the scope as written, `user:<uuid>`.
pub fn quota_key(scope: &QuotaScope) -> Vec<u8> {
    scope.to_string().into_bytes()
}

/// Key of a bucket record: bucket names are unique per domain.
pub fn bucket_key(domain: &str, name: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(domain.len() + 1 + name.len());
    k.extend_from_slice(domain.as_bytes());
    k.push(0);
    k.extend_from_slice(name.as_bytes());
    k
}

/// Key of an object record.
pub fn object_key(folder: Uuid, key: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(16 + key.len());
    k.extend_from_slice(folder.as_bytes());
    k.extend_from_slice(key.as_bytes());
    k
}

/// Key of an upload record.
pub fn upload_key(folder: Uuid, key: &str, upload_id: &UploadId) -> Vec<u8> {
    let mut k = object_key(folder, key);
    k.push(0);
    k.extend_from_slice(upload_id.as_str().as_bytes());
    k
}

/// Key of a version row: a key's rows sort newest (largest `seq`) first.
pub fn version_key(folder: Uuid, key: &str, seq: i64) -> Vec<u8> {
    let mut k = version_prefix(folder, key);
    k.extend_from_slice(&(u64::MAX - seq.max(0) as u64).to_be_bytes());
    k
}

/// Prefix of every version row of one key.
pub fn version_prefix(folder: Uuid, key: &str) -> Vec<u8> {
    let mut k = object_key(folder, key);
    k.push(0);
    k
}

/// Key of a part record.
pub fn part_key(upload_id: &UploadId, part: u32) -> Vec<u8> {
    let mut k = Vec::with_capacity(upload_id.as_str().len() + 5);
    k.extend_from_slice(upload_id.as_str().as_bytes());
    k.push(0);
    k.extend_from_slice(&part.to_be_bytes());
    k
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_keys_sort_like_s3_keys() {
        let f = Uuid::from_u128(7);
        let mut keys = vec!["a0", "a/b", "a.txt", "a", "ü", "@x", "%41"];
        let mut encoded: Vec<_> = keys.iter().map(|k| object_key(f, k)).collect();
        keys.sort();
        encoded.sort();
        let decoded: Vec<_> = encoded.iter().map(|k| std::str::from_utf8(&k[16..]).unwrap()).collect();
        assert_eq!(decoded, keys);
    }

    fn id(s: &str) -> UploadId {
        s.parse().unwrap()
    }

    #[test]
    fn part_keys_sort_numerically() {
        let mut ks = [part_key(&id("u"), 10), part_key(&id("u"), 2), part_key(&id("u"), 1)];
        ks.sort();
        assert_eq!(ks[0], part_key(&id("u"), 1));
        assert_eq!(ks[2], part_key(&id("u"), 10));
        assert!(part_key(&id("u"), 10000) < part_key(&id("u0"), 1));
    }
}
