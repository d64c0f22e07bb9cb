//! The embedded engine: [`Metadata`] over the RocksDB [`Store`], for one gateway process.
//!
//! Writes and scans run on tokio's blocking pool, as a write may wait for a WAL fsync (or right
//! where they are called, inside [`crate::on_blocking_thread`]). Point
//! reads of tenancy records (keypairs, users, buckets, domains, projects) and of one object's
//! record run on the calling task: RocksDB answers them from its memtables and block cache in
//! microseconds, and every request makes several of them, so the trip to the pool would cost more
//! than the read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;
use uuid::Uuid;

use crate::engine::{
    BucketEdit, Charge, Edit, Expect, KeyEdit, KeyedRecords, KeyedVersions, MetaResult, Metadata, PendingPublish,
    UploadQuery, VersionQuery,
};
use crate::{
    BucketRecord, Domain, Keypair, MetaError, ObjectRecord, PartRecord, Project, Quota, QuotaScope, Store, UploadId,
    UploadRecord, User, VersionRecord,
};

/// The RocksDB engine. Only one process opens a store, so an in-process lock is a complete
/// guard for the read-check-write of a quota charge.
pub struct RocksMetadata {
    store: Arc<Store>,
    quota: Arc<Mutex<()>>,
    gateways: Mutex<HashMap<String, Instant>>,
}

impl RocksMetadata {
    /// Serves an opened store.
    pub fn new(store: Store) -> Self {
        Self {
            store: Arc::new(store),
            quota: Arc::new(Mutex::new(())),
            gateways: Mutex::new(HashMap::new()),
        }
    }

    /// The store itself, for tools that work on it offline.
    pub fn store(&self) -> &Store {
        &self.store
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Store) -> MetaResult<T> + Send + 'static,
    ) -> MetaResult<T> {
        if crate::engine::may_block_here() {
            // Already on a thread that may block (see `on_blocking_thread`).
            return f(&self.store);
        }
        let store = self.store.clone();
        let span = tracing::debug_span!("metadata");
        tokio::task::spawn_blocking(move || span.in_scope(|| f(&store)))
            .await
            .map_err(|e| MetaError::Task(e.to_string()))?
    }

    /// [`RocksMetadata::blocking`] with an owned copy of `v`, for writes of one record.
    async fn with<V: Clone + Send + 'static, T: Send + 'static>(
        &self,
        v: &V,
        f: impl FnOnce(&Store, &V) -> MetaResult<T> + Send + 'static,
    ) -> MetaResult<T> {
        let v = v.clone();
        self.blocking(move |s| f(s, &v)).await
    }

    /// Reads a scope's record, lets `f` change it and writes it back if `f` says so, all under
    /// the engine's quota lock; answers the record and whether it was written. A synced update
    /// waits for the WAL and so runs on the blocking pool; an unsynced one is a memtable insert
    /// and runs here.
    async fn update_quota(
        &self,
        scope: QuotaScope,
        sync: bool,
        f: impl FnOnce(&mut Quota) -> bool + Send + 'static,
    ) -> MetaResult<(Quota, bool)> {
        let lock = self.quota.clone();
        let run = move |s: &Store| {
            let _guard = lock.lock().unwrap_or_else(|e| e.into_inner());
            let mut q = s.quota(&scope)?.unwrap_or(Quota {
                scope,
                limit_bytes: None,
                usage_bytes: 0,
            });
            let write = f(&mut q);
            if write {
                s.put_quota_opt(&q, sync)?;
            }
            Ok((q, write))
        };
        if sync {
            self.blocking(run).await
        } else {
            run(&self.store)
        }
    }
}

#[async_trait]
impl Metadata for RocksMetadata {
    fn engine(&self) -> &'static str {
        "rocksdb"
    }

    fn properties(&self) -> Vec<(&'static str, u64)> {
        self.store.db_properties()
    }

    async fn schema_version(&self) -> MetaResult<Option<u32>> {
        self.store.schema_version()
    }

    async fn put_domain(&self, d: &Domain) -> MetaResult<()> {
        self.with(d, |s, d| s.put_domain(d)).await
    }
    async fn create_domain(&self, d: &Domain) -> MetaResult<bool> {
        self.with(d, |s, d| s.create_domain(d)).await
    }
    async fn domain(&self, name: &str) -> MetaResult<Option<Domain>> {
        self.store.domain(name)
    }
    async fn domains(&self) -> MetaResult<Vec<Domain>> {
        self.blocking(|s| s.domains()).await
    }
    async fn put_project(&self, p: &Project) -> MetaResult<()> {
        self.with(p, |s, p| s.put_project(p)).await
    }
    async fn create_project(&self, p: &Project) -> MetaResult<bool> {
        self.with(p, |s, p| s.create_project(p)).await
    }
    async fn project(&self, id: Uuid) -> MetaResult<Option<Project>> {
        self.store.project(id)
    }
    async fn projects(&self) -> MetaResult<Vec<Project>> {
        self.blocking(|s| s.projects()).await
    }
    async fn put_user(&self, u: &User) -> MetaResult<()> {
        self.with(u, |s, u| s.put_user(u)).await
    }
    async fn create_user(&self, u: &User) -> MetaResult<bool> {
        self.with(u, |s, u| s.create_user(u)).await
    }
    async fn update_user(&self, id: Uuid, edit: Edit<User>) -> MetaResult<Option<(User, bool)>> {
        self.blocking(move |s| s.update_user(id, edit)).await
    }
    async fn user(&self, id: Uuid) -> MetaResult<Option<User>> {
        self.store.user(id)
    }
    async fn users(&self) -> MetaResult<Vec<User>> {
        self.blocking(|s| s.users()).await
    }
    async fn keypair(&self, access_key: &str) -> MetaResult<Option<Keypair>> {
        self.store.keypair(access_key)
    }
    async fn put_keypair(&self, kp: &Keypair) -> MetaResult<()> {
        self.with(kp, |s, kp| s.put_keypair(kp)).await
    }
    async fn update_keypair(&self, access_key: &str, edit: Edit<Keypair>) -> MetaResult<Option<(Keypair, bool)>> {
        let ak = access_key.to_owned();
        self.blocking(move |s| s.update_keypair(&ak, edit)).await
    }
    async fn delete_keypair(&self, access_key: &str) -> MetaResult<()> {
        self.with(&access_key.to_owned(), |s, ak| s.delete_keypair(ak)).await
    }
    async fn keypairs(&self) -> MetaResult<Vec<Keypair>> {
        self.blocking(|s| s.keypairs()).await
    }

    async fn create_bucket(&self, b: &BucketRecord) -> MetaResult<bool> {
        self.with(b, |s, b| s.create_bucket(b)).await
    }
    async fn put_bucket(&self, b: &BucketRecord) -> MetaResult<()> {
        self.with(b, |s, b| s.put_bucket(b)).await
    }
    async fn update_bucket(
        &self,
        domain: &str,
        name: &str,
        edit: BucketEdit,
    ) -> MetaResult<Option<(BucketRecord, bool)>> {
        let (domain, name) = (domain.to_owned(), name.to_owned());
        self.blocking(move |s| s.update_bucket(&domain, &name, edit)).await
    }
    async fn bucket(&self, domain: &str, name: &str) -> MetaResult<Option<BucketRecord>> {
        self.store.bucket(domain, name)
    }
    async fn buckets(&self) -> MetaResult<Vec<BucketRecord>> {
        self.blocking(|s| s.buckets()).await
    }
    async fn delete_bucket(&self, b: &BucketRecord) -> MetaResult<()> {
        self.with(b, |s, b| s.delete_bucket(b)).await
    }

    async fn quota(&self, scope: &QuotaScope) -> MetaResult<Option<Quota>> {
        self.store.quota(scope)
    }
    async fn quotas(&self) -> MetaResult<Vec<Quota>> {
        self.blocking(|s| s.quotas()).await
    }
    async fn charge(&self, scope: &QuotaScope, delta: i64, sync: bool) -> MetaResult<Charge> {
        if delta == 0 {
            return Ok(Charge::Done);
        }
        let (q, written) = self
            .update_quota(*scope, sync, move |q| {
                let new = (q.usage_bytes as i64).saturating_add(delta).max(0) as u64;
                let refused = delta > 0 && q.limit_bytes.is_some_and(|limit| new > limit);
                if !refused {
                    q.usage_bytes = new;
                }
                !refused
            })
            .await?;
        Ok(match (written, q.limit_bytes) {
            (false, Some(limit)) => Charge::Refused {
                usage: q.usage_bytes,
                limit,
            },
            _ => Charge::Done,
        })
    }
    async fn set_quota_limit(&self, scope: &QuotaScope, limit: Option<u64>) -> MetaResult<Quota> {
        let (q, _) = self
            .update_quota(*scope, true, move |q| {
                q.limit_bytes = limit;
                true
            })
            .await?;
        Ok(q)
    }
    async fn set_quota_usage(&self, scope: &QuotaScope, usage: u64) -> MetaResult<Quota> {
        let (q, _) = self
            .update_quota(*scope, true, move |q| {
                q.usage_bytes = usage;
                true
            })
            .await?;
        Ok(q)
    }

    async fn object(&self, folder: Uuid, key: &str) -> MetaResult<Option<ObjectRecord>> {
        // A point read, on the calling task like the tenancy reads: every GET makes one, and
        // the trip to the blocking pool cost more than the read (docs/benchmarks.md, "Small GET").
        self.store.object(folder, key)
    }
    async fn objects(&self, folder: Uuid, keys: &[&str]) -> MetaResult<Vec<Option<ObjectRecord>>> {
        let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
        self.blocking(move |s| s.objects(folder, &keys.iter().map(String::as_str).collect::<Vec<_>>()))
            .await
    }
    async fn object_records(&self, folder: Uuid, after: Option<&str>, limit: usize) -> MetaResult<KeyedRecords> {
        let after = after.map(str::to_owned);
        self.blocking(move |s| s.object_records(folder, after.as_deref(), limit))
            .await
    }
    async fn put_object(&self, folder: Uuid, key: &str, rec: &ObjectRecord) -> MetaResult<()> {
        let (key, rec) = (key.to_owned(), rec.clone());
        self.blocking(move |s| s.put_object(folder, &key, &rec)).await
    }
    // One gateway opens the store: no other is ever publishing a key.
    async fn expectation(&self, folder: Uuid, key: &str, _instance: &str) -> MetaResult<Expect> {
        Ok(Expect::of(self.object(folder, key).await?.as_ref()))
    }
    // One gateway opens the store, and its key lock orders the writers of a key: the expected
    // record is checked in the same blocking step as the write, with no other writer between.
    async fn put_object_if(
        &self,
        folder: Uuid,
        key: &str,
        rec: &ObjectRecord,
        expect: &Expect,
        _instance: &str,
    ) -> MetaResult<()> {
        let (key, rec, expect) = (key.to_owned(), rec.clone(), expect.clone());
        self.blocking(move |s| {
            s.expect(folder, &key, Some(&expect))?;
            s.put_object(folder, &key, &rec)
        })
        .await
    }
    async fn delete_object(&self, folder: Uuid, key: &str, _instance: &str) -> MetaResult<()> {
        let key = key.to_owned();
        self.blocking(move |s| s.delete_object(folder, &key)).await
    }
    // One gateway opens the store: its key lock alone orders the changes of a key.
    fn shared(&self) -> bool {
        false
    }
    async fn claim_key(&self, _folder: Uuid, _key: &str, _instance: &str) -> MetaResult<bool> {
        Ok(true)
    }
    async fn take_note(&self, folder: Uuid, key: &str, _noted: &str, _instance: &str) -> MetaResult<bool> {
        let key = key.to_owned();
        self.blocking(move |s| s.is_publishing(folder, &key)).await
    }
    async fn release_key(&self, _folder: Uuid, _key: &str, _instance: &str) -> MetaResult<()> {
        Ok(())
    }
    async fn begin_publish(
        &self,
        folder: Uuid,
        key: &str,
        rec: &ObjectRecord,
        _instance: &str,
        expect: Option<&Expect>,
    ) -> MetaResult<()> {
        let (key, rec, expect) = (key.to_owned(), rec.clone(), expect.cloned());
        self.blocking(move |s| {
            s.expect(folder, &key, expect.as_ref())?;
            s.begin_publish(folder, &key, &rec, now_ms())
        })
        .await
    }
    async fn end_publish(&self, folder: Uuid, key: &str, rec: Option<&ObjectRecord>) -> MetaResult<()> {
        let (key, rec) = (key.to_owned(), rec.cloned());
        self.blocking(move |s| s.end_publish(folder, &key, rec.as_ref())).await
    }
    async fn publishing(&self) -> MetaResult<Vec<PendingPublish>> {
        let pending = self.blocking(|s| s.publishing()).await?;
        Ok(pending
            .into_iter()
            .map(|(folder, key)| PendingPublish {
                folder,
                key,
                instance: String::new(),
            })
            .collect())
    }

    async fn versions(&self, folder: Uuid, key: &str) -> MetaResult<Vec<VersionRecord>> {
        let key = key.to_owned();
        self.blocking(move |s| s.versions(folder, &key)).await
    }
    async fn list_versions(&self, folder: Uuid, q: VersionQuery<'_>) -> MetaResult<KeyedVersions> {
        let (prefix, after, limit) = (q.prefix.to_owned(), q.after.map(|(k, s)| (k.to_owned(), s)), q.limit);
        self.blocking(move |s| {
            let q = VersionQuery {
                prefix: &prefix,
                after: after.as_ref().map(|(k, s)| (k.as_str(), *s)),
                limit,
            };
            s.list_versions(folder, q)
        })
        .await
    }
    async fn edit_key(&self, folder: Uuid, key: &str, edit: &KeyEdit<'_>, _instance: &str) -> MetaResult<()> {
        let key = key.to_owned();
        let object = edit.object.map(|o| o.cloned());
        let (add, remove, publishing) = (edit.add.to_vec(), edit.remove.to_vec(), edit.publishing);
        let expect = edit.expect.cloned();
        self.blocking(move |s| {
            s.expect(folder, &key, expect.as_ref())?;
            let edit = KeyEdit {
                object: object.as_ref().map(Option::as_ref),
                add: &add,
                remove: &remove,
                publishing,
                expect: None,
            };
            s.edit_key(folder, &key, &edit, now_ms())
        })
        .await
    }

    // One process opens the store: the gateways it knows are the ones this process registered,
    // and nothing from a previous run is alive.
    async fn heartbeat(&self, instance: &str) -> MetaResult<()> {
        let mut g = self.gateways.lock().unwrap_or_else(|e| e.into_inner());
        g.insert(instance.to_owned(), Instant::now());
        Ok(())
    }
    async fn gateways(&self) -> MetaResult<Vec<(String, u64)>> {
        let g = self.gateways.lock().unwrap_or_else(|e| e.into_inner());
        Ok(g.iter()
            .map(|(i, t)| (i.clone(), t.elapsed().as_millis() as u64))
            .collect())
    }
    async fn forget_gateway(&self, instance: &str, silent_ms: u64) -> MetaResult<bool> {
        let mut g = self.gateways.lock().unwrap_or_else(|e| e.into_inner());
        match g.get(instance) {
            Some(t) if (t.elapsed().as_millis() as u64) < silent_ms => Ok(false),
            _ => Ok(g.remove(instance).is_some()),
        }
    }

    async fn put_upload(&self, folder: Uuid, up: &UploadRecord) -> MetaResult<()> {
        let up = up.clone();
        self.blocking(move |s| s.put_upload(folder, &up)).await
    }
    async fn upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<Option<UploadRecord>> {
        let (key, id) = (key.to_owned(), upload_id.clone());
        self.blocking(move |s| s.upload(folder, &key, &id)).await
    }
    async fn uploads(&self, folder: Uuid, q: UploadQuery<'_>) -> MetaResult<Vec<UploadRecord>> {
        let (prefix, limit) = (q.prefix.to_owned(), q.limit);
        let after = q.after.map(|(k, id)| (k.to_owned(), id.to_owned()));
        self.blocking(move |s| {
            let mut out = Vec::new();
            let after = after.as_ref().map(|(k, id)| (k.as_str(), id.as_str()));
            s.uploads(folder, &prefix, after, |u| {
                out.push(u);
                out.len() < limit
            })?;
            Ok(out)
        })
        .await
    }
    async fn count_uploads(&self) -> MetaResult<u64> {
        self.blocking(|s| s.count_uploads()).await
    }
    async fn put_part(&self, upload_id: &UploadId, part: &PartRecord) -> MetaResult<()> {
        let (id, part) = (upload_id.clone(), part.clone());
        self.blocking(move |s| s.put_part(&id, &part)).await
    }
    async fn part(&self, upload_id: &UploadId, part: u32) -> MetaResult<Option<PartRecord>> {
        let id = upload_id.clone();
        self.blocking(move |s| s.part(&id, part)).await
    }
    async fn parts(&self, upload_id: &UploadId) -> MetaResult<Vec<PartRecord>> {
        self.with(upload_id, |s, id| s.parts(id)).await
    }
    async fn delete_upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<()> {
        let (key, id) = (key.to_owned(), upload_id.clone());
        self.blocking(move |s| s.delete_upload(folder, &key, &id)).await
    }
    async fn complete_upload(&self, folder: Uuid, key: &str, id: &UploadId, rec: &ObjectRecord) -> MetaResult<()> {
        let (key, id, rec) = (key.to_owned(), id.clone(), rec.clone());
        self.blocking(move |s| s.complete_upload(folder, &key, &id, &rec)).await
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
