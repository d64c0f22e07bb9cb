//! The records stored in RocksDB. All are serde documents; new fields get `#[serde(default)]`.

use std::collections::{BTreeMap, BTreeSet};

pub use penstock_types::{ChecksumAlgorithm, ChecksumType, Perm, QuotaScope, Role, UploadId, UsageMode};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// A tenant domain: the namespace of bucket names, users and projects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Domain {
    pub name: String,
    /// Unix milliseconds.
    pub created_ms: i64,
}

/// A project inside a domain; its members share the project's folders.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Project {
    pub id: Uuid,
    pub domain: String,
    pub name: String,
    pub created_ms: i64,
}

/// A user: member of one domain and of any number of its projects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct User {
    pub id: Uuid,
    pub domain: String,
    pub name: String,
    pub role: Role,
    #[serde(default)]
    pub projects: BTreeSet<Uuid>,
    pub created_ms: i64,
}

/// An S3 access key belonging to a user. The secret is stored sealed under the master key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Keypair {
    pub access_key: String,
    /// base64(nonce ‖ AEAD ciphertext) of the secret key.
    pub sealed_secret: String,
    pub user_id: Uuid,
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Unix milliseconds (schema version 1 stored Unix seconds in `created`).
    pub created_ms: i64,
}

fn yes() -> bool {
    true
}

/// A bucket: a vfolder exported under a bucket name that is unique within its domain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketRecord {
    pub name: String,
    pub domain: String,
    pub folder_id: Uuid,
    pub volume: String,
    /// The owner, charged for the folder's bytes.
    pub quota_scope: QuotaScope,
    /// Unix milliseconds.
    pub created_ms: i64,
    #[serde(default)]
    pub usage_mode: UsageMode,
    /// Permission of project members on a project folder.
    #[serde(default = "wd")]
    pub permission: Perm,
    /// Users a user folder is shared with, and at which permission.
    #[serde(default)]
    pub grants: BTreeMap<Uuid, Perm>,
    /// S3 versioning: `None` until first set (an unversioned bucket), then enabled or suspended
    /// (never unset again, as on S3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versioning: Option<Versioning>,
    /// Lifecycle rules (PutBucketLifecycleConfiguration), applied by the lifecycle worker.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lifecycle: Vec<LifecycleRule>,
    /// The bucket policy document as PutBucketPolicy stored it (validated JSON).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy: Option<String>,
    /// PutPublicAccessBlock's settings; `None` when never set or deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_access_block: Option<PublicAccessBlock>,
    /// Object Ownership (PutBucketOwnershipControls): `None` is `BucketOwnerEnforced`, S3's
    /// default, under which ACLs are disabled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ownership: Option<String>,
    /// The bucket's ACL grants besides the owner's full control.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acl: Vec<AclGrant>,
    /// The ACL was set without the owner's full control (an AccessControlPolicy or
    /// `x-amz-grant-*` headers naming only others, or no one): it lists exactly `acl`. The
    /// owner's access does not come from the ACL and is kept. `false` (every canned ACL, and
    /// records written before this field) lists the owner's full control first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub acl_owner_omitted: bool,
    /// CORS rules (PutBucketCors), in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cors: Vec<CorsRule>,
    /// The bucket's tags (PutBucketTagging), key and value, in the order given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<(String, String)>,
    /// Object lock: `Some` once enabled (CreateBucket with object lock, or
    /// PutObjectLockConfiguration on a versioned bucket), never disabled again, as on S3.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_lock: Option<ObjectLock>,
    /// Writes with a customer-provided key (SSE-C) are refused: the bucket's default encryption
    /// names `SSE-C` among its `BlockedEncryptionTypes` (PutBucketEncryption).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sse_c_blocked: bool,
}

/// A bucket's object lock configuration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectLock {
    /// The retention new object versions get when their write names none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_retention: Option<DefaultRetention>,
}

/// A bucket's default retention: a mode and a period of days or of years.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DefaultRetention {
    pub mode: RetentionMode,
    /// The period, in days or in years (exactly one is set).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub years: Option<u32>,
}

/// An object lock retention mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum RetentionMode {
    /// Deletes and shortening need the bypass-governance permission and header.
    Governance,
    /// No one may delete the version or shorten its retention until it ends.
    Compliance,
}

impl RetentionMode {
    /// The mode as S3 spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Governance => "GOVERNANCE",
            Self::Compliance => "COMPLIANCE",
        }
    }

    /// The mode S3 spells `s` (exactly, upper case), if any.
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "GOVERNANCE" => Some(Self::Governance),
            "COMPLIANCE" => Some(Self::Compliance),
            _ => None,
        }
    }
}

/// An object version's retention: its mode, and until when (Unix milliseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retention {
    pub mode: RetentionMode,
    pub until_ms: i64,
}

/// One ACL grant: who (`id:<user id hex>`, `AllUsers`, `AuthenticatedUsers` or `LogDelivery`)
/// holds which permission (`FULL_CONTROL`, `READ`, `WRITE`, `READ_ACP`, `WRITE_ACP`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclGrant {
    pub grantee: String,
    pub permission: String,
}

/// One CORS rule of a bucket, as PutBucketCors validated it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CorsRule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Origins, each with at most one `*`.
    pub allowed_origins: Vec<String>,
    /// Of GET, PUT, HEAD, POST, DELETE.
    pub allowed_methods: Vec<String>,
    /// Request headers a preflight may ask for, each with at most one `*`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub allowed_headers: Vec<String>,
    /// Response headers scripts may read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expose_headers: Vec<String>,
    /// How long a browser may cache the preflight's answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_age_secs: Option<i32>,
}

impl BucketRecord {
    /// A new bucket's record: a general-purpose folder whose project members (if a project owns
    /// it) hold `wd`, with no grants and none of the S3 bucket settings (versioning, lifecycle,
    /// policy, public access block, ownership, ACL, CORS, tags) set.
    pub fn new(
        name: String,
        domain: String,
        folder_id: Uuid,
        volume: String,
        quota_scope: QuotaScope,
        created_ms: i64,
    ) -> Self {
        Self {
            name,
            domain,
            folder_id,
            volume,
            quota_scope,
            created_ms,
            usage_mode: UsageMode::General,
            permission: Perm::Wd,
            grants: BTreeMap::new(),
            versioning: None,
            lifecycle: Vec::new(),
            policy: None,
            public_access_block: None,
            ownership: None,
            acl: Vec::new(),
            cors: Vec::new(),
            tags: Vec::new(),
            object_lock: None,
            sse_c_blocked: false,
            acl_owner_omitted: false,
        }
    }
}

/// The bucket-level public access block (S3's four switches).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicAccessBlock {
    /// PUTs of public ACLs are refused.
    #[serde(default)]
    pub block_public_acls: bool,
    /// Public ACLs are ignored when access is decided.
    #[serde(default)]
    pub ignore_public_acls: bool,
    /// PutBucketPolicy of a public policy is refused.
    #[serde(default)]
    pub block_public_policy: bool,
    /// While the policy is public, it grants nothing to anonymous callers or other domains.
    #[serde(default)]
    pub restrict_public_buckets: bool,
}

/// One lifecycle rule of a bucket, validated as S3 validates it. Days count in lifecycle days
/// (a day, or the configured `lifecycle_day_secs` in tests).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleRule {
    pub id: String,
    pub enabled: bool,
    /// Which objects the rule applies to.
    #[serde(default)]
    pub filter: LifecycleFilter,
    /// Current versions expire this many days after they were written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_days: Option<u32>,
    /// Current versions expire from this instant on (Unix milliseconds, a midnight UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_date_ms: Option<i64>,
    /// A delete marker with no other version of its key behind it is removed.
    #[serde(default)]
    pub expired_object_delete_marker: bool,
    /// Noncurrent versions go this many days after they became noncurrent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noncurrent_days: Option<u32>,
    /// ... except the newest this many noncurrent versions of each key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newer_noncurrent_versions: Option<u32>,
    /// Multipart uploads still incomplete this many days after they began are aborted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub abort_incomplete_days: Option<u32>,
    /// Current versions take these storage classes, each after its days or from its date.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub transitions: Vec<LifecycleTransition>,
    /// Noncurrent versions take these storage classes, each this many days after they became
    /// noncurrent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub noncurrent_transitions: Vec<LifecycleTransition>,
}

/// A lifecycle rule's move of objects to another storage class. The class is a label (see
/// [`ObjectAttrs::storage_class`]): the object's bytes stay where they are.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleTransition {
    /// Days after the write (current versions) or after the version became noncurrent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub days: Option<u32>,
    /// From this instant on (current versions; Unix milliseconds, a midnight UTC).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub date_ms: Option<i64>,
    /// The class taken, as S3 names it.
    pub storage_class: String,
    /// Noncurrent versions only: the newest this many noncurrent versions of a key stay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub newer_noncurrent_versions: Option<u32>,
}

/// The objects a lifecycle rule applies to: every condition given must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LifecycleFilter {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<(String, String)>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_greater_than: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_less_than: Option<u64>,
    /// The rule gave its prefix as the old rule-level `Prefix`, not in a `Filter`: answered
    /// back the same way.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub legacy_prefix: bool,
    /// The conditions came in an `And` element.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub and: bool,
}

impl LifecycleFilter {
    /// Whether an object of `key` with `tags` and `size` bytes is one the rule applies to.
    pub fn matches(&self, key: &str, tags: &[(String, String)], size: u64) -> bool {
        key.starts_with(&self.prefix)
            && self.tags.iter().all(|t| tags.contains(t))
            && self.size_greater_than.is_none_or(|n| size > n)
            && self.size_less_than.is_none_or(|n| size < n)
    }
}

/// A bucket's versioning status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Versioning {
    /// Every write makes a new version; overwritten and deleted objects stay as noncurrent
    /// versions.
    Enabled,
    /// Writes make the `null` version, replacing the previous `null` one; versions made while
    /// enabled stay.
    Suspended,
}

fn wd() -> Perm {
    Perm::Wd
}

/// A quota scope's byte limit and tracked usage.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Quota {
    pub scope: QuotaScope,
    /// `None` means unlimited.
    pub limit_bytes: Option<u64>,
    pub usage_bytes: u64,
}

/// Identity of the file an object record describes; a mismatch means the file changed outside the
/// gateway and the record's ETag and checksums no longer apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub inode: u64,
    pub size: u64,
    pub mtime_ns: i128,
}

/// Content headers and user metadata given at upload and returned on GET/HEAD.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectAttrs {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_encoding: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_disposition: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_language: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_control: Option<String>,
    /// HTTP date as sent by the client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub user_metadata: BTreeMap<String, String>,
    /// ACL grants besides the object owner's full control (buckets with ACLs enabled).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acl: Vec<AclGrant>,
    /// The ACL was set without the object owner's full control: it lists exactly `acl`
    /// (as [`BucketRecord::acl_owner_omitted`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub acl_owner_omitted: bool,
    /// The object's owner, as ACLs name users (the user id in plain hex), where it is not the
    /// bucket owner: in a bucket with ACLs enabled, the user who wrote it (S3's
    /// `ObjectWriter`, and `BucketOwnerPreferred` unless the write gave the bucket owner full
    /// control).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// The storage class the write named (`x-amz-storage-class`), unless `STANDARD`. A label:
    /// every object here lies in its folder alike, and it reads back as it was given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class: Option<String>,
    /// An object of an archive class (`GLACIER`, `DEEP_ARCHIVE`) counts as restored until then
    /// (Unix milliseconds; RestoreObject), as S3's `x-amz-restore` says. Its bytes read here at
    /// any time: the restore is bookkeeping for clients that ask for one before they read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored_until_ms: Option<i64>,
    /// Object lock retention of this version (buckets with object lock).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// Object lock legal hold of this version: `None` never set, else on or off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub legal_hold: Option<bool>,
    /// Where a website endpoint would redirect a request for the object
    /// (`x-amz-website-redirect-location`). Kept and returned as S3 does; this gateway serves
    /// no website endpoint, and applications (link shorteners, static site deployers) read it
    /// back with HEAD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_redirect_location: Option<String>,
    /// Set when the object's bytes are encrypted with a key its writer provided (SSE-C): what
    /// tells a later request's key right or wrong, never the key itself.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub customer_key: Option<CustomerKeyed>,
}

/// How an object (or a multipart upload) encrypted with a customer-provided key (SSE-C) is
/// recognised: the key is never stored, only a salted keyed digest that a request's key must
/// reproduce, and the salt from which the data keys are derived.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomerKeyed {
    /// The algorithm S3 names (`AES256`).
    pub algorithm: String,
    /// Base64 MD5 of the key, as S3 answers it (`x-amz-server-side-encryption-customer-key-MD5`).
    pub key_md5: String,
    /// Hex of the random salt of this object (or upload).
    pub salt: String,
    /// Hex of the keyed digest of the salt under the key that a request's key must reproduce.
    pub check: String,
}

/// Stored checksums, base64 as S3 returns them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checksums {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc32c: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub crc64nvme: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha1: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sha256: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<ChecksumType>,
}

impl Checksums {
    /// The stored checksum of algorithm `a`.
    pub fn get(&self, a: ChecksumAlgorithm) -> Option<&String> {
        match a {
            ChecksumAlgorithm::Crc32 => self.crc32.as_ref(),
            ChecksumAlgorithm::Crc32c => self.crc32c.as_ref(),
            ChecksumAlgorithm::Crc64Nvme => self.crc64nvme.as_ref(),
            ChecksumAlgorithm::Sha1 => self.sha1.as_ref(),
            ChecksumAlgorithm::Sha256 => self.sha256.as_ref(),
        }
    }

    /// Stores (or with `None` clears) the checksum of algorithm `a`.
    pub fn set(&mut self, a: ChecksumAlgorithm, v: Option<String>) {
        let slot = match a {
            ChecksumAlgorithm::Crc32 => &mut self.crc32,
            ChecksumAlgorithm::Crc32c => &mut self.crc32c,
            ChecksumAlgorithm::Crc64Nvme => &mut self.crc64nvme,
            ChecksumAlgorithm::Sha1 => &mut self.sha1,
            ChecksumAlgorithm::Sha256 => &mut self.sha256,
        };
        *slot = v;
    }

    /// True when no checksum is stored.
    pub fn is_empty(&self) -> bool {
        self.crc32.is_none()
            && self.crc32c.is_none()
            && self.crc64nvme.is_none()
            && self.sha1.is_none()
            && self.sha256.is_none()
    }
}

/// Size and checksums of one part of a completed multipart object (for GET ?partNumber=).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartSummary {
    pub size: u64,
    #[serde(default, skip_serializing_if = "Checksums::is_empty")]
    pub checksums: Checksums,
    /// Hex of the part's own salt, for a part encrypted with a customer-provided key: each part
    /// has its data key (derived from the upload's key and this salt).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salt: Option<String>,
}

/// What the gateway knows about one object beyond its bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRecord {
    /// The ETag's hex digits, unquoted (MD5 of the bytes, or `<md5 of part MD5s>-<parts>`).
    pub etag: String,
    pub fingerprint: Fingerprint,
    #[serde(default)]
    pub attrs: ObjectAttrs,
    #[serde(default, skip_serializing_if = "Checksums::is_empty")]
    pub checksums: Checksums,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<(String, String)>,
    /// Parts of a multipart object, in order; empty for single-part objects.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parts: Vec<PartSummary>,
    /// The multipart upload whose completion wrote this object: a Complete retried after it
    /// succeeded is answered from the object while it is still this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upload_id: Option<UploadId>,
    /// Set only while this record's file is being published at the key: the record of the file it
    /// replaces (if that file had one). Until the rename lands, or forever if a crash stops it,
    /// the old file is at the key and its record must stay findable; readers pick whichever of
    /// the two describes the file they opened ([`ObjectRecord::describing`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<Box<ObjectRecord>>,
    /// The version id of this object in a versioned bucket; `None` is the `null` version (every
    /// object of a bucket never versioned, objects written while versioning was suspended, and
    /// files written by sessions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_id: Option<String>,
    /// Set only while a change of the key's versions that moves files is under way; see
    /// [`VersionChange`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub change: Option<Box<VersionChange>>,
}

/// The id S3 gives the `null` version.
pub const NULL_VERSION: &str = "null";

/// One noncurrent version of a key, or one of its delete markers. The key's current version,
/// when it has one, is the file at the key's path with its [`ObjectRecord`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRecord {
    /// The version id ([`NULL_VERSION`] for the null version).
    pub version_id: String,
    /// Orders a key's versions, newest largest: Unix nanoseconds when this version stopped
    /// being current (or, for a delete marker, was made), kept above the key's other versions.
    pub seq: i64,
    /// Last-Modified of the version, Unix milliseconds.
    pub last_modified_ms: i64,
    /// The object's record; `None` for a delete marker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectRecord>,
    /// The file holding the version's bytes in the folder's versions area; `None` for a delete
    /// marker, and for a version with no bytes to keep (a directory marker).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    /// Who made the version or delete marker (a user id), for listings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<Uuid>,
}

impl VersionRecord {
    /// Whether this is a delete marker.
    pub fn is_delete_marker(&self) -> bool {
        self.object.is_none()
    }

    /// The row's place, id and file.
    pub fn reference(&self) -> VersionRef {
        VersionRef {
            version_id: self.version_id.clone(),
            seq: self.seq,
            storage: self.storage.clone(),
            size: self.object.as_ref().map_or(0, |o| o.fingerprint.size),
        }
    }
}

/// A version row of a key, named by its place (`seq`), with its file and the file's size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionRef {
    pub version_id: String,
    pub seq: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<String>,
    #[serde(default)]
    pub size: u64,
}

/// A change of one key's versions that moves files (a versioned overwrite or delete, a
/// restore), recorded in the key's object record before the first file moves so that a crash
/// at any point can be settled: the change happened exactly when the file at the key is no
/// longer the one it found (`before`). Then the rows it `drops` go with their files; if it did
/// not happen, the rows it `added` go with theirs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionChange {
    /// The fingerprint of the file at the key when the change began; `None`: no file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<Fingerprint>,
    /// The change leaves no file at the key (a delete): the record carrying this change is
    /// the one of the file it removes, kept until the change is settled.
    #[serde(default)]
    pub deletes: bool,
    /// Version rows the change added as it began.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub added: Vec<VersionRef>,
    /// Version rows the change removes once it happened (a replaced `null` version, a
    /// version restored to the key).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub drops: Vec<VersionRef>,
}

impl ObjectRecord {
    /// The record, of this one and the one it replaces, that describes the file with fingerprint
    /// `fp`; `None` when neither does (the file changed outside the gateway).
    pub fn describing(self, fp: &Fingerprint) -> Option<ObjectRecord> {
        if self.fingerprint == *fp {
            Some(self.settled())
        } else {
            self.replaces.and_then(|r| r.describing(fp))
        }
    }

    /// This record without the one it replaces, and without a pending change.
    pub fn settled(mut self) -> ObjectRecord {
        self.replaces = None;
        self.change = None;
        self
    }

    /// The version id as S3 names it.
    pub fn version(&self) -> &str {
        self.version_id.as_deref().unwrap_or(NULL_VERSION)
    }

    /// The record in force when nothing identifies the file (a directory marker without a
    /// payload, whose directory's mtime moves with its contents): the replaced one while a
    /// publish is pending, since the new file has not landed, else this one.
    pub fn in_force(self) -> ObjectRecord {
        match self.replaces {
            Some(r) => r.in_force(),
            None => self,
        }
    }
}

/// An ongoing multipart upload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadRecord {
    pub upload_id: UploadId,
    pub key: String,
    /// Unix milliseconds.
    pub initiated_ms: i64,
    /// Who started the upload: the user's ID in simple (hex) form. Records written before
    /// 2026-11-26 hold the access key instead; both read back as the upload's initiator.
    pub initiator: String,
    #[serde(default)]
    pub attrs: ObjectAttrs,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<(String, String)>,
    /// Checksum algorithm requested at creation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_algorithm: Option<ChecksumAlgorithm>,
    /// Set when an algorithm was requested.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_type: Option<ChecksumType>,
}

/// One uploaded part of a multipart upload.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartRecord {
    pub part_number: u32,
    /// Hex MD5 of the part, unquoted.
    pub md5_hex: String,
    pub size: u64,
    /// Unix milliseconds.
    pub last_modified_ms: i64,
    #[serde(default, skip_serializing_if = "Checksums::is_empty")]
    pub checksums: Checksums,
    /// The part file this record describes. CompleteMultipartUpload joins a part only when the
    /// file it read is this one: a part uploaded again meanwhile (or torn by a crash between its
    /// rename and this record) is refused instead of joined under another upload's ETag. Absent
    /// in records written before it existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    /// Hex of the part's salt when its upload encrypts with a customer-provided key (SSE-C):
    /// a part uploaded again gets a new salt, so no two uploads of a part share a key stream.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub salt: Option<String>,
}
