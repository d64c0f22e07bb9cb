//! The shared engine: [`Metadata`] in PostgreSQL, for many gateways over one volume.
//!
//! Every gateway opens the same database; everything the gateways must agree on lives there and
//! nowhere else. Each call is one statement or one transaction, so what the interface promises
//! atomically (a quota charge against a limit, a bucket name claim, completing an upload) holds
//! across gateways, not only within one process: no lock outside the database guards it.
//!
//! Records are the same serde documents the embedded engine stores, in `doc` columns; the columns
//! beside them are what statements select, order or update by. Object keys and upload ids are
//! `BYTEA`, so their order is byte order (S3's) whatever the database's collation; the short
//! tenancy lists are sorted here. The SQL sticks to what CockroachDB and YugabyteDB also run
//! (`INSERT … ON CONFLICT`, row comparisons, no advisory locks or PL/pgSQL).
//!
//! The [`Metadata`] implementation here holds the tenancy and bucket records, objects and their
//! publishing, and gateway liveness; beside it: `conn` (connections, retried statements, the
//! one-row edit and named-insert transactions, migrations), `claims` (conditional stores, key
//! claims), `versions`, `quotas` and `uploads`.

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio_postgres::NoTls;
use uuid::Uuid;

mod claims;
mod conn;
mod liveness;
mod quotas;
mod recent;
mod sql;
mod uploads;
mod versions;

use conn::{doc, json, pg, schema_version};
use recent::Recent;
pub use sql::PG_SCHEMA_VERSION;
use sql::{DB_NOW_MS, LAZY, UPSERT_OBJECT, UPSERT_OBJECT_LAZY};

use crate::engine::{
    BucketEdit, Charge, Edit, Expect, KeyEdit, KeyedRecords, KeyedVersions, MetaResult, Metadata, PendingPublish,
    UploadQuery, VersionQuery,
};
use crate::{
    BucketRecord, Domain, Keypair, MetaError, ObjectRecord, PartRecord, Project, Quota, QuotaScope, UploadId,
    UploadRecord, User, VersionRecord,
};

/// How to reach the database.
#[derive(Debug, Clone)]
pub struct PgOptions {
    /// `postgres://user[:password]@host[:port]/database[?options]`.
    pub url: String,
    /// Connections the pool keeps at most.
    pub pool_size: usize,
    /// How long a call waits for a connection (free or new) before failing as unavailable.
    pub wait: Duration,
    /// How long a keypair, user or bucket read stays in this gateway's memory; zero turns the
    /// cache off. Another gateway's change to one of them takes effect here within this time.
    pub cache: Duration,
}

/// The PostgreSQL engine.
pub struct PgMetadata {
    pool: Pool,
    /// This gateway's sign of life (`liveness.rs`).
    liveness: liveness::Liveness,
    keypairs: Recent<String, Keypair>,
    users: Recent<Uuid, User>,
    buckets: Recent<(String, String), BucketRecord>,
}

impl PgMetadata {
    /// Connects, applies the migrations this database lacks, and refuses a database whose schema
    /// is newer than this build's.
    pub async fn connect(opts: &PgOptions) -> MetaResult<Self> {
        let mut cfg: tokio_postgres::Config = opts
            .url
            .parse()
            .map_err(|e| MetaError::Config(format!("metadata url: {e}")))?;
        if cfg.get_connect_timeout().is_none() {
            cfg.connect_timeout(opts.wait);
        }
        // A dead peer (database host gone, connection cut by a balancer) is noticed by TCP
        // keepalives instead of hanging a request until the kernel gives up.
        cfg.keepalives(true).keepalives_idle(Duration::from_secs(10));
        let liveness = liveness::Liveness::new(cfg.clone());
        let mgr = Manager::from_config(
            cfg,
            NoTls,
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(mgr)
            .max_size(opts.pool_size.max(1))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(opts.wait))
            .create_timeout(Some(opts.wait))
            .recycle_timeout(Some(opts.wait))
            .build()
            .map_err(|e| MetaError::Config(format!("metadata pool: {e}")))?;
        let this = Self {
            pool,
            liveness,
            keypairs: Recent::new(opts.cache),
            users: Recent::new(opts.cache),
            buckets: Recent::new(opts.cache),
        };
        this.migrate().await?;
        Ok(this)
    }
}

#[async_trait]
impl Metadata for PgMetadata {
    fn engine(&self) -> &'static str {
        "postgres"
    }

    fn properties(&self) -> Vec<(&'static str, u64)> {
        let s = self.pool.status();
        vec![
            ("pool_size", s.size as u64),
            ("pool_available", s.available as u64),
            ("pool_waiting", s.waiting as u64),
        ]
    }

    async fn schema_version(&self) -> MetaResult<Option<u32>> {
        let c = self.client().await?;
        schema_version(&c).await
    }

    async fn put_domain(&self, d: &Domain) -> MetaResult<()> {
        let sql = "INSERT INTO domains (name, doc) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET doc = $2";
        self.exec(sql, &[&d.name, &json(d)]).await.map(drop)
    }
    async fn create_domain(&self, d: &Domain) -> MetaResult<bool> {
        let sql = "INSERT INTO domains (name, doc) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING";
        Ok(self.exec(sql, &[&d.name, &json(d)]).await? == 1)
    }
    async fn domain(&self, name: &str) -> MetaResult<Option<Domain>> {
        self.get("domains", "SELECT doc FROM domains WHERE name = $1", &[&name])
            .await
    }
    async fn domains(&self) -> MetaResult<Vec<Domain>> {
        let mut v: Vec<Domain> = self.all("domains", "SELECT doc FROM domains").await?;
        v.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(v)
    }
    async fn put_project(&self, p: &Project) -> MetaResult<()> {
        let sql = "INSERT INTO projects (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = $2";
        self.exec(sql, &[&p.id, &json(p)]).await.map(drop)
    }
    async fn create_project(&self, p: &Project) -> MetaResult<bool> {
        self.insert_named("projects", &p.domain, &p.name, p.id, &json(p)).await
    }
    async fn project(&self, id: Uuid) -> MetaResult<Option<Project>> {
        self.get("projects", "SELECT doc FROM projects WHERE id = $1", &[&id])
            .await
    }
    async fn projects(&self) -> MetaResult<Vec<Project>> {
        let mut v: Vec<Project> = self.all("projects", "SELECT doc FROM projects").await?;
        v.sort_by_key(|p| p.id);
        Ok(v)
    }
    async fn put_user(&self, u: &User) -> MetaResult<()> {
        self.users.forget(&u.id);
        let sql = "INSERT INTO users (id, doc) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET doc = $2";
        self.exec(sql, &[&u.id, &json(u)]).await.map(drop)
    }
    async fn create_user(&self, u: &User) -> MetaResult<bool> {
        self.users.forget(&u.id);
        self.insert_named("users", &u.domain, &u.name, u.id, &json(u)).await
    }
    async fn update_user(&self, id: Uuid, edit: Edit<User>) -> MetaResult<Option<(User, bool)>> {
        let select = "SELECT doc FROM users WHERE id = $1 FOR UPDATE";
        let update = "UPDATE users SET doc = $2 WHERE id = $1";
        let done = self.update_doc("users", select, update, &[&id], edit).await;
        self.users.forget(&id);
        done
    }
    async fn user(&self, id: Uuid) -> MetaResult<Option<User>> {
        if let Some(u) = self.users.get(&id) {
            return Ok(Some(u));
        }
        let u = self.get("users", "SELECT doc FROM users WHERE id = $1", &[&id]).await?;
        self.users.put(id, &u);
        Ok(u)
    }
    async fn users(&self) -> MetaResult<Vec<User>> {
        let mut v: Vec<User> = self.all("users", "SELECT doc FROM users").await?;
        v.sort_by_key(|u| u.id);
        Ok(v)
    }
    async fn keypair(&self, access_key: &str) -> MetaResult<Option<Keypair>> {
        if let Some(kp) = self.keypairs.get(access_key) {
            return Ok(Some(kp));
        }
        let sql = "SELECT doc FROM keypairs WHERE access_key = $1";
        let kp = self.get("keypairs", sql, &[&access_key]).await?;
        self.keypairs.put(access_key.to_owned(), &kp);
        Ok(kp)
    }
    async fn put_keypair(&self, kp: &Keypair) -> MetaResult<()> {
        self.keypairs.forget(kp.access_key.as_str());
        let sql = "INSERT INTO keypairs (access_key, doc) VALUES ($1, $2)
                   ON CONFLICT (access_key) DO UPDATE SET doc = $2";
        self.exec(sql, &[&kp.access_key, &json(kp)]).await.map(drop)
    }
    async fn update_keypair(&self, access_key: &str, edit: Edit<Keypair>) -> MetaResult<Option<(Keypair, bool)>> {
        let select = "SELECT doc FROM keypairs WHERE access_key = $1 FOR UPDATE";
        let update = "UPDATE keypairs SET doc = $2 WHERE access_key = $1";
        let done = self.update_doc("keypairs", select, update, &[&access_key], edit).await;
        self.keypairs.forget(access_key);
        done
    }
    async fn delete_keypair(&self, access_key: &str) -> MetaResult<()> {
        self.keypairs.forget(access_key);
        let sql = "DELETE FROM keypairs WHERE access_key = $1";
        self.exec(sql, &[&access_key]).await.map(drop)
    }
    async fn keypairs(&self) -> MetaResult<Vec<Keypair>> {
        let mut v: Vec<Keypair> = self.all("keypairs", "SELECT doc FROM keypairs").await?;
        v.sort_by(|a, b| a.access_key.cmp(&b.access_key));
        Ok(v)
    }

    async fn create_bucket(&self, b: &BucketRecord) -> MetaResult<bool> {
        let sql = "INSERT INTO buckets (domain, name, doc) VALUES ($1, $2, $3) ON CONFLICT (domain, name) DO NOTHING";
        Ok(self.exec(sql, &[&b.domain, &b.name, &json(b)]).await? == 1)
    }
    async fn put_bucket(&self, b: &BucketRecord) -> MetaResult<()> {
        self.buckets.forget(&(b.domain.clone(), b.name.clone()));
        let sql = "INSERT INTO buckets (domain, name, doc) VALUES ($1, $2, $3)
                   ON CONFLICT (domain, name) DO UPDATE SET doc = $3";
        self.exec(sql, &[&b.domain, &b.name, &json(b)]).await.map(drop)
    }
    async fn update_bucket(
        &self,
        domain: &str,
        name: &str,
        edit: BucketEdit,
    ) -> MetaResult<Option<(BucketRecord, bool)>> {
        let select = "SELECT doc FROM buckets WHERE domain = $1 AND name = $2 FOR UPDATE";
        let update = "UPDATE buckets SET doc = $3 WHERE domain = $1 AND name = $2";
        let done = self
            .update_doc("buckets", select, update, &[&domain, &name], edit)
            .await;
        self.buckets.forget(&(domain.to_owned(), name.to_owned()));
        done
    }
    async fn bucket(&self, domain: &str, name: &str) -> MetaResult<Option<BucketRecord>> {
        let k = (domain.to_owned(), name.to_owned());
        if let Some(b) = self.buckets.get(&k) {
            return Ok(Some(b));
        }
        let sql = "SELECT doc FROM buckets WHERE domain = $1 AND name = $2";
        let b = self.get("buckets", sql, &[&domain, &name]).await?;
        self.buckets.put(k, &b);
        Ok(b)
    }
    async fn buckets(&self) -> MetaResult<Vec<BucketRecord>> {
        let mut v: Vec<BucketRecord> = self.all("buckets", "SELECT doc FROM buckets").await?;
        v.sort_by(|a, b| (&a.domain, &a.name).cmp(&(&b.domain, &b.name)));
        Ok(v)
    }
    async fn delete_bucket(&self, b: &BucketRecord) -> MetaResult<()> {
        self.buckets.forget(&(b.domain.clone(), b.name.clone()));
        let mut c = self.client().await?;
        let tx = c.transaction().await.map_err(pg)?;
        let f = &b.folder_id;
        tx.execute(
            "DELETE FROM parts WHERE upload_id IN (SELECT upload_id FROM uploads WHERE folder_id = $1)",
            &[f],
        )
        .await
        .map_err(pg)?;
        for table in ["uploads", "objects", "publishing", "versions"] {
            tx.execute(&format!("DELETE FROM {table} WHERE folder_id = $1"), &[f])
                .await
                .map_err(pg)?;
        }
        tx.execute(
            "DELETE FROM buckets WHERE domain = $1 AND name = $2",
            &[&b.domain, &b.name],
        )
        .await
        .map_err(pg)?;
        tx.commit().await.map_err(pg)
    }

    async fn quota(&self, scope: &QuotaScope) -> MetaResult<Option<Quota>> {
        self.read_quota(scope).await
    }
    async fn quotas(&self) -> MetaResult<Vec<Quota>> {
        self.all_quotas().await
    }
    async fn charge(&self, scope: &QuotaScope, delta: i64, sync: bool) -> MetaResult<Charge> {
        self.charge_scope(scope, delta, sync).await
    }
    async fn set_quota_limit(&self, scope: &QuotaScope, limit: Option<u64>) -> MetaResult<Quota> {
        self.set_limit(scope, limit).await
    }
    async fn set_quota_usage(&self, scope: &QuotaScope, usage: u64) -> MetaResult<Quota> {
        self.set_usage(scope, usage).await
    }

    async fn object(&self, folder: Uuid, key: &str) -> MetaResult<Option<ObjectRecord>> {
        let sql = "SELECT doc FROM objects WHERE folder_id = $1 AND key = $2";
        self.get("objects", sql, &[&folder, &key.as_bytes()]).await
    }
    async fn objects(&self, folder: Uuid, keys: &[&str]) -> MetaResult<Vec<Option<ObjectRecord>>> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let wanted: Vec<&[u8]> = keys.iter().map(|k| k.as_bytes()).collect();
        let rows = self
            .query(
                "SELECT key, doc FROM objects WHERE folder_id = $1 AND key = ANY($2)",
                &[&folder, &wanted],
            )
            .await?;
        let mut found = std::collections::HashMap::with_capacity(rows.len());
        for r in &rows {
            found.insert(r.get::<_, Vec<u8>>(0), doc::<ObjectRecord>("objects", r, 1)?);
        }
        Ok(keys.iter().map(|k| found.get(k.as_bytes()).cloned()).collect())
    }
    async fn object_records(&self, folder: Uuid, after: Option<&str>, limit: usize) -> MetaResult<KeyedRecords> {
        let rows = self
            .query(
                "SELECT key, doc FROM objects WHERE folder_id = $1 AND ($2::BYTEA IS NULL OR key > $2)
                 ORDER BY key LIMIT $3",
                &[
                    &folder,
                    &after.map(str::as_bytes),
                    &(limit.min(i64::MAX as usize) as i64),
                ],
            )
            .await?;
        rows.iter()
            .map(|r| {
                let key = String::from_utf8(r.get(0)).map_err(|e| MetaError::Postgres(format!("object key: {e}")))?;
                Ok((key, doc("objects", r, 1)?))
            })
            .collect()
    }
    async fn put_object(&self, folder: Uuid, key: &str, rec: &ObjectRecord) -> MetaResult<()> {
        self.exec(UPSERT_OBJECT, &[&folder, &key.as_bytes(), &json(rec)])
            .await
            .map(drop)
    }
    async fn expectation(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<Expect> {
        self.read_expectation(folder, key, instance).await
    }
    async fn put_object_if(
        &self,
        folder: Uuid,
        key: &str,
        rec: &ObjectRecord,
        expect: &Expect,
        instance: &str,
    ) -> MetaResult<()> {
        self.claim(folder, key, rec, instance, expect, false).await
    }
    async fn delete_object(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<()> {
        let sql = "WITH o AS (DELETE FROM objects WHERE folder_id = $1 AND key = $2)
                   DELETE FROM publishing WHERE folder_id = $1 AND key = $2 AND instance = $3";
        self.exec(sql, &[&folder, &key.as_bytes(), &instance]).await.map(drop)
    }
    fn shared(&self) -> bool {
        true
    }
    async fn claim_key(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<bool> {
        self.claim_note(folder, key, instance).await
    }
    async fn take_note(&self, folder: Uuid, key: &str, noted: &str, instance: &str) -> MetaResult<bool> {
        self.take_over_note(folder, key, noted, instance).await
    }
    async fn release_key(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<()> {
        self.release_note(folder, key, instance).await
    }
    // Each write below is one statement, its parts joined by data-modifying CTEs: atomic as a
    // transaction, at one round trip instead of four (BEGIN, two statements, COMMIT).
    async fn begin_publish(
        &self,
        folder: Uuid,
        key: &str,
        rec: &ObjectRecord,
        instance: &str,
        expect: Option<&Expect>,
    ) -> MetaResult<()> {
        if let Some(e) = expect {
            return self.claim(folder, key, rec, instance, e, true).await;
        }
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "WITH o AS ({UPSERT_OBJECT})
                 INSERT INTO publishing (folder_id, key, since_ms, instance) VALUES ($1, $2, {DB_NOW_MS}, $4)
                 ON CONFLICT (folder_id, key) DO UPDATE SET since_ms = EXCLUDED.since_ms, instance = $4"
            )
        });
        self.exec(&SQL, &[&folder, &key.as_bytes(), &json(rec), &instance])
            .await
            .map(drop)
    }
    // Unsynced (`LAZY`): the publish's first half is durable and, alone, already resolves to the
    // record of the file at the key; a second half lost in a database crash leaves the key noted,
    // and the note is settled again from the volume (by this gateway's janitor, or a survivor's).
    async fn end_publish(&self, folder: Uuid, key: &str, rec: Option<&ObjectRecord>) -> MetaResult<()> {
        const UNNOTE: &str = "DELETE FROM publishing USING lazy WHERE folder_id = $1 AND key = $2";
        static STORE: LazyLock<String> = LazyLock::new(|| format!("WITH {LAZY}, o AS ({UPSERT_OBJECT_LAZY}) {UNNOTE}"));
        static REMOVE: LazyLock<String> = LazyLock::new(|| {
            format!("WITH {LAZY}, o AS (DELETE FROM objects WHERE folder_id = $1 AND key = $2) {UNNOTE}")
        });
        let k = key.as_bytes();
        match rec {
            Some(r) => self.exec(&STORE, &[&folder, &k, &json(r)]).await,
            None => self.exec(&REMOVE, &[&folder, &k]).await,
        }
        .map(drop)
    }
    async fn publishing(&self) -> MetaResult<Vec<PendingPublish>> {
        let rows = self
            .query(
                "SELECT folder_id, key, instance FROM publishing ORDER BY folder_id, key",
                &[],
            )
            .await?;
        Ok(rows
            .iter()
            .filter_map(|r| {
                Some(PendingPublish {
                    folder: r.get(0),
                    key: String::from_utf8(r.get(1)).ok()?,
                    instance: r.get(2),
                })
            })
            .collect())
    }

    async fn versions(&self, folder: Uuid, key: &str) -> MetaResult<Vec<VersionRecord>> {
        self.key_versions(folder, key).await
    }
    async fn list_versions(&self, folder: Uuid, q: VersionQuery<'_>) -> MetaResult<KeyedVersions> {
        self.versions_page(folder, q).await
    }
    async fn edit_key(&self, folder: Uuid, key: &str, edit: &KeyEdit<'_>, instance: &str) -> MetaResult<()> {
        self.edit_in_tx(folder, key.as_bytes(), edit, instance).await
    }

    async fn heartbeat(&self, instance: &str) -> MetaResult<()> {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "INSERT INTO gateways (instance, heartbeat_ms, liveness) VALUES ($1, {DB_NOW_MS}, $2)
                 ON CONFLICT (instance) DO UPDATE SET heartbeat_ms = EXCLUDED.heartbeat_ms, liveness = EXCLUDED.liveness"
            )
        });
        self.exec(&SQL, &[&instance, &self.liveness.held_key()]).await.map(drop)
    }
    async fn hold_liveness(&self, instance: &str) -> MetaResult<()> {
        self.liveness.hold(instance).await
    }
    async fn vanished(&self) -> MetaResult<Vec<String>> {
        if !self.liveness.trusted() {
            return Ok(Vec::new());
        }
        // A bigint advisory lock is listed with its high half as `classid`, its low half as
        // `objid`, and `objsubid` 1.
        const SQL: &str = "SELECT g.instance FROM gateways g WHERE g.liveness IS NOT NULL AND NOT EXISTS (
             SELECT 1 FROM pg_locks l WHERE l.locktype = 'advisory' AND l.objsubid = 1
               AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
               AND l.classid = ((g.liveness >> 32) & 4294967295)::oid
               AND l.objid = (g.liveness & 4294967295)::oid)
             ORDER BY g.instance";
        let rows = self.query(SQL, &[]).await?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }
    async fn gateways(&self) -> MetaResult<Vec<(String, u64)>> {
        let sql = format!("SELECT instance, {DB_NOW_MS} - heartbeat_ms FROM gateways ORDER BY instance");
        let rows = self.query(&sql, &[]).await?;
        Ok(rows
            .iter()
            .map(|r| (r.get(0), r.get::<_, i64>(1).max(0) as u64))
            .collect())
    }
    async fn forget_gateway(&self, instance: &str, silent_ms: u64) -> MetaResult<bool> {
        // Still silent at the moment of deletion: a gateway that came back meanwhile stays.
        let sql = format!("DELETE FROM gateways WHERE instance = $1 AND heartbeat_ms <= {DB_NOW_MS} - $2::BIGINT");
        let silent = silent_ms.min(i64::MAX as u64) as i64;
        Ok(self.exec(&sql, &[&instance, &silent]).await? == 1)
    }

    async fn put_upload(&self, folder: Uuid, up: &UploadRecord) -> MetaResult<()> {
        self.store_upload(folder, up).await
    }
    async fn upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<Option<UploadRecord>> {
        self.read_upload(folder, key, upload_id).await
    }
    async fn uploads(&self, folder: Uuid, q: UploadQuery<'_>) -> MetaResult<Vec<UploadRecord>> {
        self.list_uploads(folder, q).await
    }
    async fn count_uploads(&self) -> MetaResult<u64> {
        self.uploads_count().await
    }
    async fn put_part(&self, upload_id: &UploadId, part: &PartRecord) -> MetaResult<()> {
        self.store_part(upload_id, part).await
    }
    async fn part(&self, upload_id: &UploadId, part: u32) -> MetaResult<Option<PartRecord>> {
        self.read_part(upload_id, part).await
    }
    async fn parts(&self, upload_id: &UploadId) -> MetaResult<Vec<PartRecord>> {
        self.list_parts(upload_id).await
    }
    async fn delete_upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<()> {
        self.forget_upload(folder, key, upload_id).await
    }
    async fn complete_upload(&self, folder: Uuid, key: &str, id: &UploadId, rec: &ObjectRecord) -> MetaResult<()> {
        self.finish_upload(folder, key, id, rec).await
    }
}

/// The smallest byte string greater than every string that starts with `prefix`; `None` when no
/// such bound exists (an empty prefix, or one of 0xff bytes only).
fn successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut s = prefix.to_vec();
    while let Some(last) = s.pop() {
        if last < 0xff {
            s.push(last + 1);
            return Some(s);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::successor;

    #[test]
    fn successor_bounds_every_string_with_the_prefix() {
        assert_eq!(successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(successor(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(successor(b"\xff\xff"), None);
        assert_eq!(successor(b""), None);
    }
}
