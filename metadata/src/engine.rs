//! The metadata interface the gateway talks to, whatever engine stands behind it.
//!
//! Every operation is async and names a whole change: where an engine must make a
//! read-check-write atomic (a quota charge, a bucket name claim, completing an upload), the
//! interface has one call for it, so an engine shared by several gateways can do it in one
//! statement or transaction instead of relying on a lock inside one process.

use async_trait::async_trait;
use uuid::Uuid;

use crate::{
    BucketRecord, Domain, Fingerprint, Keypair, MetaError, ObjectRecord, PartRecord, Project, Quota, QuotaScope,
    UploadId, UploadRecord, User, VersionRecord,
};

/// Result of a metadata call.
pub type MetaResult<T> = std::result::Result<T, MetaError>;

/// An edit of a stored record (see [`Metadata::update_bucket`]): changes the record it is
/// given, as stored now, and answers whether to write it back. It may run more than once (an
/// engine retries a transaction the database aborted), each time on the record as stored then.
pub type Edit<T> = Box<dyn FnMut(&mut T) -> bool + Send>;

/// An edit of a bucket's record.
pub type BucketEdit = Edit<BucketRecord>;

/// What a quota charge did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charge {
    /// The usage changed by the delta (a refund never goes below zero).
    Done,
    /// Growth beyond the limit was refused; nothing changed.
    Refused {
        /// Usage at the time of the refusal.
        usage: u64,
        /// The scope's limit.
        limit: u64,
    },
}

/// A key's stored record as a conditional request read it ([`Metadata::expectation`]) before
/// judging its conditions against the object: the change it then makes
/// ([`Metadata::begin_publish`], [`Metadata::put_object_if`], [`KeyEdit::expect`]) happens only
/// while the record is still this one and no other gateway is publishing the key, else it fails
/// with [`MetaError::Changed`] or [`MetaError::Busy`] and changes nothing. Every write through a
/// gateway changes the key's record before its file moves and notes the key as publishing until
/// the file is in place, so a record read while no other gateway was publishing and found
/// unchanged means no gateway's write came between the judgement and the change: the judgement
/// holds across gateways, not only under one gateway's key lock. (A pending record and its
/// settled form share ETag and fingerprint; the publishing note, not the record, tells them
/// apart, which is why the read refuses a key another gateway is publishing.)
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// The key had no record.
    Absent,
    /// The key's record had this ETag and fingerprint (together, one write's identity).
    Record {
        /// The record's ETag.
        etag: String,
        /// The record's fingerprint.
        fingerprint: Fingerprint,
    },
}

impl Expect {
    /// What `rec` (the key's stored record, or none) is expected to stay.
    pub fn of(rec: Option<&ObjectRecord>) -> Self {
        match rec {
            None => Self::Absent,
            Some(r) => Self::Record {
                etag: r.etag.clone(),
                fingerprint: r.fingerprint,
            },
        }
    }

    /// Whether `rec` (the key's stored record now) is the one expected.
    pub fn holds(&self, rec: Option<&ObjectRecord>) -> bool {
        *self == Self::of(rec)
    }
}

/// Object records with their keys, in key order.
pub type KeyedRecords = Vec<(String, ObjectRecord)>;

/// Which uploads of a folder to read: up to `limit` whose keys begin with `prefix`, after the
/// position `(key, upload id)` when given (the id need not be a valid one: it comes from a
/// client's marker).
#[derive(Debug, Clone, Copy)]
pub struct UploadQuery<'a> {
    /// Keys begin with this.
    pub prefix: &'a str,
    /// Start after this (key, upload id), exclusive.
    pub after: Option<(&'a str, &'a str)>,
    /// At most this many.
    pub limit: usize,
}

/// Which version rows of a folder to read: up to `limit` of keys beginning with `prefix`, in
/// key order and, within a key, newest first; after the position `after` when given: `(key,
/// None)` skips every version of `key`, `(key, Some(seq))` those of `key` with `seq` or larger.
#[derive(Debug, Clone, Copy)]
pub struct VersionQuery<'a> {
    /// Keys begin with this.
    pub prefix: &'a str,
    /// Start after this position, exclusive.
    pub after: Option<(&'a str, Option<i64>)>,
    /// At most this many.
    pub limit: usize,
}

/// Version rows with their keys: key order, newest first within a key.
pub type KeyedVersions = Vec<(String, VersionRecord)>;

/// A change of one key, made atomically by [`Metadata::edit_key`].
#[derive(Debug, Clone, Copy, Default)]
pub struct KeyEdit<'a> {
    /// The key's object record: `Some(Some(r))` stores `r`, `Some(None)` removes it, `None`
    /// leaves it.
    pub object: Option<Option<&'a ObjectRecord>>,
    /// Version rows to store (a row with the same `seq` is replaced).
    pub add: &'a [VersionRecord],
    /// Version rows to remove, by `seq`. A row is named by its place, not its version id: while
    /// a change is pending a key may hold two `null` rows, the one it replaces and its own.
    pub remove: &'a [i64],
    /// `Some(true)` notes the key as publishing (by the calling instance), `Some(false)` stops
    /// that, `None` leaves it.
    pub publishing: Option<bool>,
    /// Makes the edit conditional on the key's record (see [`Expect`]).
    pub expect: Option<&'a Expect>,
}

/// A publish begun and not ended: the key's record may still name the file it replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingPublish {
    /// The folder.
    pub folder: Uuid,
    /// The object key.
    pub key: String,
    /// The gateway instance that began it; empty where the engine does not record it (the
    /// embedded engine, whose store one process opens: any pending publish found at start-up is
    /// a previous run's).
    pub instance: String,
}

thread_local! {
    static ON_BLOCKING_THREAD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f` with this thread marked as one that may block: an engine whose calls end in a
/// blocking step (the embedded engine's writes, which may wait for a WAL fsync) then does that
/// step right here instead of handing it to another thread and waiting for it. For callers that
/// are already on a blocking thread (tokio's `spawn_blocking`, never a runtime worker) and drive
/// a metadata call there with `Handle::block_on`: the hand-off would cost two thread wake-ups for
/// a step this thread can do itself.
pub fn on_blocking_thread<R>(f: impl FnOnce() -> R) -> R {
    struct Reset(bool);
    impl Drop for Reset {
        fn drop(&mut self) {
            ON_BLOCKING_THREAD.with(|c| c.set(self.0));
        }
    }
    let _reset = Reset(ON_BLOCKING_THREAD.with(|c| c.replace(true)));
    f()
}

/// Whether the calling thread is inside [`on_blocking_thread`].
pub(crate) fn may_block_here() -> bool {
    ON_BLOCKING_THREAD.with(|c| c.get())
}

/// One metadata engine: tenancy records, bucket ↔ vfolder map, object records, multipart state
/// and quota accounting. Implementations: [`crate::RocksMetadata`] (embedded, one process).
#[async_trait]
pub trait Metadata: Send + Sync {
    /// The engine's name as configured (`rocksdb`, `postgres`).
    fn engine(&self) -> &'static str;

    /// Gauges worth exporting as metrics, by label.
    fn properties(&self) -> Vec<(&'static str, u64)>;

    /// The schema version the store is at.
    async fn schema_version(&self) -> MetaResult<Option<u32>>;

    // ---- tenants

    /// Stores (or replaces) a domain.
    async fn put_domain(&self, d: &Domain) -> MetaResult<()>;
    /// Inserts a domain unless one of its name exists; false when one does. Of several
    /// creations of one name at once, through one gateway or several, exactly one inserts.
    async fn create_domain(&self, d: &Domain) -> MetaResult<bool>;
    /// A domain by name.
    async fn domain(&self, name: &str) -> MetaResult<Option<Domain>>;
    /// All domains, by name.
    async fn domains(&self) -> MetaResult<Vec<Domain>>;
    /// Stores (or replaces) a project.
    async fn put_project(&self, p: &Project) -> MetaResult<()>;
    /// Inserts a project unless its domain has one of its name; false when it has. Of several
    /// creations of one name at once, exactly one inserts, as [`Metadata::create_domain`].
    async fn create_project(&self, p: &Project) -> MetaResult<bool>;
    /// A project by id.
    async fn project(&self, id: Uuid) -> MetaResult<Option<Project>>;
    /// All projects.
    async fn projects(&self) -> MetaResult<Vec<Project>>;
    /// Stores (or replaces) a user.
    async fn put_user(&self, u: &User) -> MetaResult<()>;
    /// Inserts a user unless its domain has one of its name; false when it has. Of several
    /// creations of one name at once, exactly one inserts, as [`Metadata::create_domain`].
    async fn create_user(&self, u: &User) -> MetaResult<bool>;
    /// Edits user `id` where it is stored, in turn with every other change of it, as
    /// [`Metadata::update_bucket`] does for buckets; `None` where there is no such user.
    async fn update_user(&self, id: Uuid, edit: Edit<User>) -> MetaResult<Option<(User, bool)>>;
    /// A user by id.
    async fn user(&self, id: Uuid) -> MetaResult<Option<User>>;
    /// All users.
    async fn users(&self) -> MetaResult<Vec<User>>;
    /// A keypair by access key.
    async fn keypair(&self, access_key: &str) -> MetaResult<Option<Keypair>>;
    /// Edits keypair `access_key` where it is stored, in turn with every other change of it
    /// (its removal included: a keypair removed meanwhile is not written back), as
    /// [`Metadata::update_bucket`] does for buckets; `None` where there is no such keypair.
    async fn update_keypair(&self, access_key: &str, edit: Edit<Keypair>) -> MetaResult<Option<(Keypair, bool)>>;
    /// Stores (or replaces) a keypair.
    async fn put_keypair(&self, kp: &Keypair) -> MetaResult<()>;
    /// Removes a keypair.
    async fn delete_keypair(&self, access_key: &str) -> MetaResult<()>;
    /// All keypairs, by access key.
    async fn keypairs(&self) -> MetaResult<Vec<Keypair>>;

    // ---- buckets

    /// Inserts a bucket unless its name is taken in its domain; false when it is.
    async fn create_bucket(&self, b: &BucketRecord) -> MetaResult<bool>;
    /// Replaces an existing bucket record.
    async fn put_bucket(&self, b: &BucketRecord) -> MetaResult<()>;
    /// Edits bucket `domain/name` where it is stored: `edit` gets the record as it is now and
    /// answers whether to write it back. Edits of one bucket take turns (RocksDB: the store's
    /// bucket lock; PostgreSQL: the row's lock), so two settings changed at once, through one
    /// gateway or several, both stay. Answers the record as it is afterwards and whether `edit`
    /// wrote it; `None` where there is no such bucket.
    async fn update_bucket(
        &self,
        domain: &str,
        name: &str,
        edit: BucketEdit,
    ) -> MetaResult<Option<(BucketRecord, bool)>>;
    /// A bucket by domain and name.
    async fn bucket(&self, domain: &str, name: &str) -> MetaResult<Option<BucketRecord>>;
    /// All buckets, by domain and name.
    async fn buckets(&self) -> MetaResult<Vec<BucketRecord>>;
    /// Removes a bucket with every object, version, upload and part record of its folder.
    async fn delete_bucket(&self, b: &BucketRecord) -> MetaResult<()>;

    // ---- quotas

    /// A scope's limit and usage, if any was recorded.
    async fn quota(&self, scope: &QuotaScope) -> MetaResult<Option<Quota>>;
    /// All recorded scopes.
    async fn quotas(&self) -> MetaResult<Vec<Quota>>;
    /// Adds `delta` bytes to the scope's usage, atomically refusing growth beyond its limit.
    /// With `sync` unset an engine may leave the change to be made durable by the caller's next
    /// synced write (the object or part record that follows every charge).
    async fn charge(&self, scope: &QuotaScope, delta: i64, sync: bool) -> MetaResult<Charge>;
    /// Sets a scope's limit (`None`: unlimited), keeping its usage.
    async fn set_quota_limit(&self, scope: &QuotaScope, limit: Option<u64>) -> MetaResult<Quota>;
    /// Sets a scope's usage (after a rescan), keeping its limit.
    async fn set_quota_usage(&self, scope: &QuotaScope, usage: u64) -> MetaResult<Quota>;

    // ---- objects

    /// The record of one object.
    async fn object(&self, folder: Uuid, key: &str) -> MetaResult<Option<ObjectRecord>>;
    /// Records of many objects of one folder (listings), in the order of `keys`.
    async fn objects(&self, folder: Uuid, keys: &[&str]) -> MetaResult<Vec<Option<ObjectRecord>>>;
    /// Up to `limit` object records of a folder in key order, after key `after` when given
    /// (exports; listings read the file tree).
    async fn object_records(&self, folder: Uuid, after: Option<&str>, limit: usize) -> MetaResult<KeyedRecords>;
    /// Stores (or replaces) an object record.
    async fn put_object(&self, folder: Uuid, key: &str, rec: &ObjectRecord) -> MetaResult<()>;
    /// The key's record as a conditional write must judge it, for its change to carry: fails
    /// with [`MetaError::Busy`] while a gateway other than `instance` is publishing the key (the
    /// file at the key may be about to change under a record that already names it).
    async fn expectation(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<Expect>;
    /// Replaces an object record if the key's record is still the one expected (see [`Expect`];
    /// `instance` is the calling gateway, whose own pending publish does not count as another's).
    async fn put_object_if(
        &self,
        folder: Uuid,
        key: &str,
        rec: &ObjectRecord,
        expect: &Expect,
        instance: &str,
    ) -> MetaResult<()>;
    /// Removes an object record and, in the same write, ends gateway `instance`'s claim of the
    /// key ([`Metadata::claim_key`]; nothing if another gateway holds it): a delete needs no
    /// [`Metadata::release_key`] after it.
    async fn delete_object(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<()>;
    /// Whether several gateways may share this engine, and so must claim keys
    /// ([`Metadata::claim_key`]) to order their changes of one key.
    fn shared(&self) -> bool;
    /// Claims a key for gateway `instance`'s next change of it (a write, a delete, a change of
    /// its record): notes the key as publishing by `instance` unless another gateway has it
    /// noted, and answers whether `instance` holds it now (a claim it already held included).
    /// Gateways sharing an engine hold a claim from before they read what a change depends on
    /// until its record and file are both in place, so the "store record, move file" steps of
    /// writers on different gateways never interleave (record A, record B, rename B, rename A
    /// would leave A's bytes with B's record). The note ends with [`Metadata::end_publish`], a
    /// versioned edit that stops publishing, [`Metadata::delete_object`] or
    /// [`Metadata::release_key`]; a dead gateway's is
    /// settled by a survivor like any pending publish. An engine one gateway opens (RocksDB)
    /// answers true at once: that gateway's key lock orders its writers.
    async fn claim_key(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<bool>;
    /// Takes over the note of a key that gateway `noted` holds (a claim or a pending publish in
    /// its name) for gateway `instance`, only if it is still `noted`'s, answering whether it
    /// was; `noted` may be `instance` itself. A janitor settling notes it listed (a gone
    /// gateway's, or leftovers of its own) takes each over first, under its key lock: a note
    /// listed while a write was in flight is gone once that write ended, and one another
    /// janitor settled may since be a new writer's, which a settle must neither end nor
    /// overwrite the pending record of. Held by `instance`, the key waits for its settle.
    /// [`Metadata::claim_key`] would note the key afresh. An engine whose notes name no gateway
    /// (RocksDB) answers whether the key is noted at all.
    async fn take_note(&self, folder: Uuid, key: &str, noted: &str, instance: &str) -> MetaResult<bool>;
    /// Gives up `instance`'s claim of a key (nothing if another gateway holds it, or none does).
    async fn release_key(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<()>;
    /// First half of publishing a file at a key: stores `rec` and notes the key as publishing
    /// by gateway `instance`, durably, before the file is renamed into place. With `expect`, only
    /// if the key's record is still the one expected (see [`Expect`]).
    async fn begin_publish(
        &self,
        folder: Uuid,
        key: &str,
        rec: &ObjectRecord,
        instance: &str,
        expect: Option<&Expect>,
    ) -> MetaResult<()>;
    /// Second half: the key's record becomes `rec` (`None` removes it) and the key stops being
    /// publishing.
    async fn end_publish(&self, folder: Uuid, key: &str, rec: Option<&ObjectRecord>) -> MetaResult<()>;
    /// Publishes begun and not ended.
    async fn publishing(&self) -> MetaResult<Vec<PendingPublish>>;

    // ---- versions

    /// The version rows (noncurrent versions and delete markers) of one key, newest first.
    async fn versions(&self, folder: Uuid, key: &str) -> MetaResult<Vec<VersionRecord>>;
    /// A page of a folder's version rows ([`VersionQuery`]).
    async fn list_versions(&self, folder: Uuid, q: VersionQuery<'_>) -> MetaResult<KeyedVersions>;
    /// Changes a key's object record, version rows and publishing note in one atomic step, by
    /// gateway `instance`.
    async fn edit_key(&self, folder: Uuid, key: &str, edit: &KeyEdit<'_>, instance: &str) -> MetaResult<()>;

    // ---- gateways

    /// Records that gateway `instance` is alive now, by the engine's clock (gateways' clocks
    /// may disagree).
    async fn heartbeat(&self, instance: &str) -> MetaResult<()>;
    /// Gateways known to the engine, with the milliseconds since each last heartbeat.
    async fn gateways(&self) -> MetaResult<Vec<(String, u64)>>;
    /// Forgets gateway `instance` if it has been silent for at least `silent_ms` (its leftovers
    /// were swept); false when it spoke since and stays.
    async fn forget_gateway(&self, instance: &str, silent_ms: u64) -> MetaResult<bool>;
    /// Takes, for the life of this process, a sign of life that the engine drops the moment the
    /// process dies (its connection closes), so that peers learn of a killed gateway in seconds
    /// instead of after `gone_after` of silence ([`Metadata::vanished`]). To be called before
    /// the first [`Metadata::heartbeat`], which then names the sign. Nothing for an engine only
    /// one gateway uses.
    async fn hold_liveness(&self, _instance: &str) -> MetaResult<()> {
        Ok(())
    }
    /// Registered gateways whose sign of life ([`Metadata::hold_liveness`]) is gone: killed, or
    /// cut off from the engine. Empty while this process's own sign has not been held long
    /// enough to tell (just started, or the engine restarted and every sign fell at once), and
    /// for engines without such signs.
    async fn vanished(&self) -> MetaResult<Vec<String>> {
        Ok(Vec::new())
    }

    // ---- multipart

    /// Stores a new upload.
    async fn put_upload(&self, folder: Uuid, up: &UploadRecord) -> MetaResult<()>;
    /// One upload.
    async fn upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<Option<UploadRecord>>;
    /// A page of a folder's uploads, in (key, upload id) order.
    async fn uploads(&self, folder: Uuid, q: UploadQuery<'_>) -> MetaResult<Vec<UploadRecord>>;
    /// Number of uploads in progress in all folders.
    async fn count_uploads(&self) -> MetaResult<u64>;
    /// Stores (or replaces) a part.
    async fn put_part(&self, upload_id: &UploadId, part: &PartRecord) -> MetaResult<()>;
    /// One part of an upload.
    async fn part(&self, upload_id: &UploadId, part: u32) -> MetaResult<Option<PartRecord>>;
    /// All parts of an upload, by part number.
    async fn parts(&self, upload_id: &UploadId) -> MetaResult<Vec<PartRecord>>;
    /// Removes an upload and its parts.
    async fn delete_upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<()>;
    /// Atomically records a completed object and forgets its upload and parts.
    async fn complete_upload(&self, folder: Uuid, key: &str, id: &UploadId, rec: &ObjectRecord) -> MetaResult<()>;
}
