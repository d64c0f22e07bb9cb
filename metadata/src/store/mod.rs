//! Opening the database and reading and writing records.

use std::path::Path;
use std::sync::Mutex;

use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamily, ColumnFamilyDescriptor, Direction, IteratorMode, Options, WriteBatch,
    WriteOptions, DB,
};
use serde::de::DeserializeOwned;
use serde::Serialize;
use uuid::Uuid;

use crate::schema::*;
use crate::{BucketRecord, Domain, Keypair, ObjectRecord, Project, Quota, QuotaScope, UploadId, UploadRecord, User};
use cache::Records;

/// Errors of the metadata store.
#[derive(Debug, thiserror::Error)]
pub enum MetaError {
    #[error("RocksDB: {0}")]
    Db(#[from] rocksdb::Error),
    #[error("corrupt record in {cf}: {err}")]
    Corrupt { cf: &'static str, err: serde_json::Error },
    #[error("the metadata store has schema version {found}; this build understands up to {known}")]
    NewerSchema { found: u32, known: u32 },
    #[error("metadata task failed: {0}")]
    Task(String),
    /// The engine cannot be reached now (connection refused or lost, pool exhausted for too
    /// long, database shutting down): the request may succeed later.
    #[error("metadata engine unavailable: {0}")]
    Unavailable(String),
    #[error("PostgreSQL: {0}")]
    Postgres(String),
    #[error("metadata configuration: {0}")]
    Config(String),
    /// A conditional change found the key's record other than its caller read it (another write
    /// came between): nothing changed.
    #[error("the key's record changed since it was read")]
    Changed,
    /// A conditional change found another gateway publishing to the key: nothing changed.
    #[error("another gateway is publishing to the key")]
    Busy,
}

type Result<T> = std::result::Result<T, MetaError>;

/// How the store writes.
#[derive(Debug, Clone, Copy)]
pub struct StoreOptions {
    /// Sync the write-ahead log on every write, so an acknowledged change survives power loss.
    pub sync: bool,
}

impl Default for StoreOptions {
    fn default() -> Self {
        Self { sync: true }
    }
}

/// Memory all column families' memtables may use together, in bytes.
const MEMTABLE_BUDGET: usize = 32 << 20;
/// The block cache every column family shares, in bytes.
const BLOCK_CACHE: usize = 32 << 20;

/// Stored bytes of the tenancy records of each kind kept decoded in memory.
const TENANCY_CACHE: usize = 64 << 20;
/// Stored bytes of object records kept decoded in memory (a 4 KiB object's record is ~300).
const OBJECT_CACHE: usize = 8 << 20;

/// The metadata database.
pub struct Store {
    db: DB,
    sync: bool,
    /// Serializes check-then-insert of bucket names, and every change of a bucket record.
    bucket_lock: Mutex<()>,
    /// Serializes changes of user and keypair records (admin changes: rare, never contended
    /// by the data path), so an edit never writes back a record removed meanwhile.
    tenant_lock: Mutex<()>,
    domains: Records<Domain>,
    projects: Records<Project>,
    users: Records<User>,
    keypairs: Records<Keypair>,
    buckets: Records<BucketRecord>,
    /// Object records by key: every GET and HEAD reads one. Each write of this column family
    /// below forgets the key it wrote (`put_cached`, `delete_object`, `write_object_batch`), a
    /// bucket's removal all of them.
    objects: Records<ObjectRecord>,
}

impl Store {
    /// Opens (creating if needed) the store under `path` and checks its schema version.
    pub fn open(path: &Path, opts: StoreOptions) -> Result<Self> {
        let mut db_opts = Options::default();
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        // Metadata is small and hot; a modest shared block cache and few background jobs keep the
        // footprint predictable next to the data path.
        db_opts.increase_parallelism(2);
        db_opts.set_keep_log_file_num(4);
        db_opts.set_enable_write_thread_adaptive_yield(false);
        // Our writes are a few small keys each: the group leader inserts them all for the group
        // faster than followers are woken to insert their own and then wait again (measured on
        // 4 KiB PUTs at 16 in flight: +4 %, every round ahead).
        db_opts.set_allow_concurrent_memtable_write(false);
        // Memtables of all column families together stay under MEMTABLE_BUDGET: RocksDB's
        // default of 64 MiB per family, times every family, let the gateway's RSS climb for
        // minutes under a write-heavy load before the first flush (seen in a 10-minute soak).
        db_opts.set_db_write_buffer_size(MEMTABLE_BUDGET);
        let cache = Cache::new_lru_cache(BLOCK_CACHE);
        let cfs = ALL_CFS.iter().map(|n| {
            let mut o = Options::default();
            o.set_write_buffer_size(MEMTABLE_BUDGET / 4);
            o.set_max_write_buffer_number(2);
            let mut t = BlockBasedOptions::default();
            t.set_block_cache(&cache);
            o.set_block_based_table_factory(&t);
            ColumnFamilyDescriptor::new(*n, o)
        });
        let db = DB::open_cf_descriptors(&db_opts, path, cfs)?;
        let store = Self {
            db,
            sync: opts.sync,
            bucket_lock: Mutex::new(()),
            tenant_lock: Mutex::new(()),
            domains: Records::new(TENANCY_CACHE),
            projects: Records::new(TENANCY_CACHE),
            users: Records::new(TENANCY_CACHE),
            keypairs: Records::new(TENANCY_CACHE),
            buckets: Records::new(TENANCY_CACHE),
            objects: Records::new(OBJECT_CACHE),
        };
        store.check_schema()?;
        Ok(store)
    }

    /// The schema version the store is at (after [`Store::open`], always [`SCHEMA_VERSION`]).
    pub fn schema_version(&self) -> Result<Option<u32>> {
        Ok(self
            .db
            .get_cf(self.cf(CF_SYSTEM), SCHEMA_KEY)?
            .and_then(|v| Some(u32::from_be_bytes(v.get(..4)?.try_into().ok()?))))
    }

    /// Refuses a store written by a newer build and migrates an older one, in one atomic batch
    /// with the new version number: a crash midway leaves the old version, migrated again at
    /// the next open.
    fn check_schema(&self) -> Result<()> {
        let cf = self.cf(CF_SYSTEM);
        let found = match self.db.get_cf(cf, SCHEMA_KEY)? {
            Some(v) if v.len() == 4 => u32::from_be_bytes(v[..4].try_into().expect("length checked")),
            // A store that never recorded a version is a new one.
            _ => SCHEMA_VERSION,
        };
        if found > SCHEMA_VERSION {
            return Err(MetaError::NewerSchema {
                found,
                known: SCHEMA_VERSION,
            });
        }
        let mut batch = WriteBatch::default();
        if found < 2 {
            self.migrate_keypair_times(&mut batch)?;
        }
        batch.put_cf(cf, SCHEMA_KEY, SCHEMA_VERSION.to_be_bytes());
        self.db.write_opt(batch, &self.wopts())?;
        Ok(())
    }

    /// Schema 1 to 2: keypairs kept their creation time in Unix seconds (`created`); every
    /// record now says `created_ms`.
    fn migrate_keypair_times(&self, batch: &mut WriteBatch) -> Result<()> {
        let cf = self.cf(CF_KEYPAIRS);
        for item in self.db.iterator_cf(cf, IteratorMode::Start) {
            let (k, v) = item?;
            let mut doc: serde_json::Map<String, serde_json::Value> = decode(CF_KEYPAIRS, &v)?;
            if let Some(secs) = doc.remove("created") {
                let ms = secs.as_i64().unwrap_or(0).saturating_mul(1000);
                doc.insert("created_ms".into(), ms.into());
                batch.put_cf(cf, k, encode(&doc));
            }
        }
        Ok(())
    }

    fn cf(&self, name: &str) -> &ColumnFamily {
        self.db
            .cf_handle(name)
            .expect("all column families are created at open")
    }

    fn wopts(&self) -> WriteOptions {
        let mut w = WriteOptions::default();
        w.set_sync(self.sync);
        w
    }

    fn get<T: DeserializeOwned>(&self, cf: &'static str, key: &[u8]) -> Result<Option<T>> {
        Ok(self.get_sized(cf, key)?.0)
    }

    /// The record at `key` with the size of its stored form.
    fn get_sized<T: DeserializeOwned>(&self, cf: &'static str, key: &[u8]) -> Result<(Option<T>, usize)> {
        match self.db.get_pinned_cf(self.cf(cf), key)? {
            Some(v) => Ok((Some(decode(cf, &v)?), v.len())),
            None => Ok((None, 0)),
        }
    }

    fn put<T: Serialize>(&self, cf: &'static str, key: &[u8], value: &T) -> Result<()> {
        self.db.put_cf_opt(self.cf(cf), key, encode(value), &self.wopts())?;
        Ok(())
    }

    /// A record, through its cache.
    fn get_cached<T: DeserializeOwned + Clone>(
        &self,
        cache: &Records<T>,
        cf: &'static str,
        key: &[u8],
    ) -> Result<Option<T>> {
        cache.get(key, || self.get_sized(cf, key))
    }

    /// Writes a record, then drops its cached copy.
    fn put_cached<T: Serialize>(
        &self,
        cache: &Records<impl Clone>,
        cf: &'static str,
        key: &[u8],
        value: &T,
    ) -> Result<()> {
        let r = self.put(cf, key, value);
        cache.forget(key);
        r
    }

    /// Lets `edit` change the tenancy record at `key` under `lock`, writing it back if it says
    /// so: the record afterwards and whether it was written; `None` where there is none.
    fn update_cached<T: Serialize + DeserializeOwned + Clone>(
        &self,
        lock: &Mutex<()>,
        cache: &Records<T>,
        cf: &'static str,
        key: &[u8],
        edit: impl FnOnce(&mut T) -> bool,
    ) -> Result<Option<(T, bool)>> {
        let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let Some(stored) = self.get_cached(cache, cf, key)? else {
            return Ok(None);
        };
        let mut v = stored.clone();
        if !edit(&mut v) {
            return Ok(Some((stored, false)));
        }
        self.put_cached(cache, cf, key, &v)?;
        Ok(Some((v, true)))
    }

    fn delete(&self, cf: &'static str, key: &[u8]) -> Result<()> {
        self.db.delete_cf_opt(self.cf(cf), key, &self.wopts())?;
        Ok(())
    }

    fn all<T: DeserializeOwned>(&self, cf: &'static str) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.scan(cf, b"", b"", |_, v| {
            out.push(v);
            true
        })?;
        Ok(out)
    }

    /// Visits records whose key starts with `prefix`, from `start` (inclusive) on, until `f`
    /// returns false.
    fn scan<T: DeserializeOwned>(
        &self,
        cf: &'static str,
        prefix: &[u8],
        start: &[u8],
        mut f: impl FnMut(&[u8], T) -> bool,
    ) -> Result<()> {
        let from = if start > prefix { start } else { prefix };
        for item in self
            .db
            .iterator_cf(self.cf(cf), IteratorMode::From(from, Direction::Forward))
        {
            let (k, v) = item?;
            if !k.starts_with(prefix) {
                break;
            }
            if !f(&k, decode(cf, &v)?) {
                break;
            }
        }
        Ok(())
    }

    // ---- tenants

    /// Stores (or replaces) a domain.
    pub fn put_domain(&self, d: &Domain) -> Result<()> {
        let _guard = self.tenant_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.put_cached(&self.domains, CF_DOMAINS, d.name.as_bytes(), d)
    }

    /// Inserts a domain unless one of its name exists; false when one does. The check and the
    /// insert hold the tenant lock, so of two creations of one name at once one inserts.
    pub fn create_domain(&self, d: &Domain) -> Result<bool> {
        let _guard = self.tenant_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.domain(&d.name)?.is_some() {
            return Ok(false);
        }
        self.put_cached(&self.domains, CF_DOMAINS, d.name.as_bytes(), d)?;
        Ok(true)
    }

    /// Looks up a domain.
    pub fn domain(&self, name: &str) -> Result<Option<Domain>> {
        self.get_cached(&self.domains, CF_DOMAINS, name.as_bytes())
    }

    /// All domains by name.
    pub fn domains(&self) -> Result<Vec<Domain>> {
        self.all(CF_DOMAINS)
    }

    /// Stores (or replaces) a project.
    pub fn put_project(&self, p: &Project) -> Result<()> {
        let _guard = self.tenant_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.put_cached(&self.projects, CF_PROJECTS, p.id.as_bytes(), p)
    }

    /// Inserts a project unless its domain has one of its name; false when it has (checked and
    /// inserted under the tenant lock, as [`Store::create_domain`]).
    pub fn create_project(&self, p: &Project) -> Result<bool> {
        let _guard = self.tenant_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self
            .projects()?
            .iter()
            .any(|q| q.domain == p.domain && q.name == p.name)
        {
            return Ok(false);
        }
        self.put_cached(&self.projects, CF_PROJECTS, p.id.as_bytes(), p)?;
        Ok(true)
    }

    /// Looks up a project.
    pub fn project(&self, id: Uuid) -> Result<Option<Project>> {
        self.get_cached(&self.projects, CF_PROJECTS, id.as_bytes())
    }

    /// All projects.
    pub fn projects(&self) -> Result<Vec<Project>> {
        self.all(CF_PROJECTS)
    }

    /// Stores (or replaces) a user.
    pub fn put_user(&self, u: &User) -> Result<()> {
        let _guard = self.tenant_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.put_cached(&self.users, CF_USERS, u.id.as_bytes(), u)
    }

    /// Inserts a user unless its domain has one of its name; false when it has (checked and
    /// inserted under the tenant lock, as [`Store::create_domain`]).
    pub fn create_user(&self, u: &User) -> Result<bool> {
        let _guard = self.tenant_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.users()?.iter().any(|v| v.domain == u.domain && v.name == u.name) {
            return Ok(false);
        }
        self.put_cached(&self.users, CF_USERS, u.id.as_bytes(), u)?;
        Ok(true)
    }

    /// Lets `edit` change user `id` in turn with every other change of users and keypairs;
    /// see [`Store::update_bucket`].
    pub fn update_user(&self, id: Uuid, edit: impl FnOnce(&mut User) -> bool) -> Result<Option<(User, bool)>> {
        self.update_cached(&self.tenant_lock, &self.users, CF_USERS, id.as_bytes(), edit)
    }

    /// Looks up a user.
    pub fn user(&self, id: Uuid) -> Result<Option<User>> {
        self.get_cached(&self.users, CF_USERS, id.as_bytes())
    }

    /// All users.
    pub fn users(&self) -> Result<Vec<User>> {
        self.all(CF_USERS)
    }

    // ---- keypairs

    /// Looks up a keypair by access key.
    pub fn keypair(&self, access_key: &str) -> Result<Option<Keypair>> {
        self.get_cached(&self.keypairs, CF_KEYPAIRS, access_key.as_bytes())
    }

    /// Stores (or replaces) a keypair.
    pub fn put_keypair(&self, kp: &Keypair) -> Result<()> {
        let _guard = self.tenant_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.put_cached(&self.keypairs, CF_KEYPAIRS, kp.access_key.as_bytes(), kp)
    }

    /// Lets `edit` change keypair `access_key` in turn with every other change of users and
    /// keypairs (a keypair removed meanwhile stays removed); see [`Store::update_bucket`].
    pub fn update_keypair(
        &self,
        access_key: &str,
        edit: impl FnOnce(&mut Keypair) -> bool,
    ) -> Result<Option<(Keypair, bool)>> {
        self.update_cached(
            &self.tenant_lock,
            &self.keypairs,
            CF_KEYPAIRS,
            access_key.as_bytes(),
            edit,
        )
    }

    /// Removes a keypair.
    pub fn delete_keypair(&self, access_key: &str) -> Result<()> {
        let _guard = self.tenant_lock.lock().unwrap_or_else(|e| e.into_inner());
        let r = self.delete(CF_KEYPAIRS, access_key.as_bytes());
        self.keypairs.forget(access_key.as_bytes());
        r
    }

    /// All keypairs, ordered by access key.
    pub fn keypairs(&self) -> Result<Vec<Keypair>> {
        self.all(CF_KEYPAIRS)
    }

    // ---- buckets

    /// Inserts a bucket unless its name is taken in its domain; returns false when it is.
    pub fn create_bucket(&self, b: &BucketRecord) -> Result<bool> {
        let _guard = self.bucket_lock.lock().unwrap_or_else(|e| e.into_inner());
        if self.bucket(&b.domain, &b.name)?.is_some() {
            return Ok(false);
        }
        self.put_cached(&self.buckets, CF_BUCKETS, &bucket_key(&b.domain, &b.name), b)?;
        Ok(true)
    }

    /// Replaces an existing bucket record (grants, permission, status).
    pub fn put_bucket(&self, b: &BucketRecord) -> Result<()> {
        let _guard = self.bucket_lock.lock().unwrap_or_else(|e| e.into_inner());
        self.put_cached(&self.buckets, CF_BUCKETS, &bucket_key(&b.domain, &b.name), b)
    }

    /// Lets `edit` change bucket `domain/name` under the bucket lock, writing it back if it says
    /// so: the record afterwards and whether it was written; `None` where there is none.
    pub fn update_bucket(
        &self,
        domain: &str,
        name: &str,
        edit: impl FnOnce(&mut BucketRecord) -> bool,
    ) -> Result<Option<(BucketRecord, bool)>> {
        let key = bucket_key(domain, name);
        self.update_cached(&self.bucket_lock, &self.buckets, CF_BUCKETS, &key, edit)
    }

    /// Looks up a bucket by domain and name.
    pub fn bucket(&self, domain: &str, name: &str) -> Result<Option<BucketRecord>> {
        self.get_cached(&self.buckets, CF_BUCKETS, &bucket_key(domain, name))
    }

    /// All buckets, ordered by domain and name.
    pub fn buckets(&self) -> Result<Vec<BucketRecord>> {
        self.all(CF_BUCKETS)
    }

    /// Removes a bucket and every object, version, upload and part record of its folder.
    pub fn delete_bucket(&self, b: &BucketRecord) -> Result<()> {
        let mut uploads = Vec::new();
        self.scan(CF_UPLOADS, b.folder_id.as_bytes(), b"", |_, u: UploadRecord| {
            uploads.push(u.upload_id);
            true
        })?;
        let mut batch = WriteBatch::default();
        let (lo, hi) = folder_range(b.folder_id);
        batch.delete_range_cf(self.cf(CF_OBJECTS), &lo, &hi);
        batch.delete_range_cf(self.cf(CF_UPLOADS), &lo, &hi);
        batch.delete_range_cf(self.cf(CF_PUBLISHING), &lo, &hi);
        batch.delete_range_cf(self.cf(CF_VERSIONS), &lo, &hi);
        for id in uploads {
            let (plo, phi) = parts_range(&id);
            batch.delete_range_cf(self.cf(CF_PARTS), &plo, &phi);
        }
        let key = bucket_key(&b.domain, &b.name);
        batch.delete_cf(self.cf(CF_BUCKETS), &key);
        let r = self.db.write_opt(batch, &self.wopts());
        self.buckets.forget(&key);
        self.objects.forget_all();
        r?;
        Ok(())
    }

    // ---- statistics

    /// Number of multipart uploads in progress (all folders).
    pub fn count_uploads(&self) -> Result<u64> {
        let mut n = 0;
        for item in self.db.iterator_cf(self.cf(CF_UPLOADS), IteratorMode::Start) {
            item?;
            n += 1;
        }
        Ok(n)
    }

    /// RocksDB properties worth watching, summed over column families.
    pub fn db_properties(&self) -> Vec<(&'static str, u64)> {
        const PROPS: [(&str, &str); 4] = [
            (
                "estimate_pending_compaction_bytes",
                "rocksdb.estimate-pending-compaction-bytes",
            ),
            ("cur_size_all_mem_tables", "rocksdb.cur-size-all-mem-tables"),
            ("estimate_num_keys", "rocksdb.estimate-num-keys"),
            ("live_sst_files_size", "rocksdb.live-sst-files-size"),
        ];
        PROPS
            .iter()
            .map(|(label, prop)| {
                let sum = ALL_CFS
                    .iter()
                    .filter_map(|cf| self.db.property_int_value_cf(self.cf(cf), *prop).ok().flatten())
                    .sum();
                (*label, sum)
            })
            .collect()
    }

    // ---- quotas

    /// A quota scope's limit and usage, if any was recorded.
    pub fn quota(&self, scope: &QuotaScope) -> Result<Option<Quota>> {
        self.get(CF_QUOTAS, &quota_key(scope))
    }

    /// Stores a quota scope's limit and usage.
    pub fn put_quota(&self, q: &Quota) -> Result<()> {
        self.put(CF_QUOTAS, &quota_key(&q.scope), q)
    }

    /// Stores a quota scope's limit and usage; with `sync` unset the write is not synced on its
    /// own but by the next synced write (one write-ahead log for the whole store).
    pub fn put_quota_opt(&self, q: &Quota, sync: bool) -> Result<()> {
        let mut w = self.wopts();
        if !sync {
            w.set_sync(false);
        }
        self.db
            .put_cf_opt(self.cf(CF_QUOTAS), quota_key(&q.scope), encode(q), &w)?;
        Ok(())
    }

    /// All quota scopes.
    pub fn quotas(&self) -> Result<Vec<Quota>> {
        self.all(CF_QUOTAS)
    }
}

fn folder_range(folder: Uuid) -> (Vec<u8>, Vec<u8>) {
    let lo = folder.as_bytes().to_vec();
    let hi = folder
        .as_u128()
        .checked_add(1)
        .map_or_else(|| vec![0xff; 17], |n| n.to_be_bytes().to_vec());
    (lo, hi)
}

fn parts_range(upload_id: &UploadId) -> (Vec<u8>, Vec<u8>) {
    let mut lo = upload_id.as_str().as_bytes().to_vec();
    lo.push(0);
    let mut hi = upload_id.as_str().as_bytes().to_vec();
    hi.push(1);
    (lo, hi)
}

/// Values are a format byte followed by JSON, leaving room for a denser encoding later.
const FORMAT_JSON: u8 = 1;

fn encode<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = vec![FORMAT_JSON];
    serde_json::to_writer(&mut out, v).expect("records serialize");
    out
}

fn decode<T: DeserializeOwned>(cf: &'static str, v: &[u8]) -> Result<T> {
    let body = match v.split_first() {
        Some((&FORMAT_JSON, rest)) => rest,
        _ => {
            return Err(MetaError::Corrupt {
                cf,
                err: serde::de::Error::custom("unknown record format"),
            })
        }
    };
    serde_json::from_slice(body).map_err(|err| MetaError::Corrupt { cf, err })
}

mod cache;
mod objects;
#[cfg(test)]
mod tests;
mod uploads;
mod versions;
