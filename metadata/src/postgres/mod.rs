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

use std::sync::LazyLock;
use std::time::Duration;

use async_trait::async_trait;
use deadpool_postgres::{Manager, ManagerConfig, Object, Pool, RecyclingMethod, Runtime};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_postgres::error::SqlState;
use tokio_postgres::{NoTls, Row};
use uuid::Uuid;

mod claims;
mod recent;
mod sql;
mod versions;

use recent::Recent;
pub use sql::PG_SCHEMA_VERSION;
use sql::{DB_NOW_MS, FORGET_PARTS, FORGET_UPLOAD, LAZY, MIGRATIONS, UPSERT_OBJECT, UPSERT_OBJECT_LAZY};

use crate::engine::{
    BucketEdit, Charge, Edit, Expect, KeyEdit, KeyedRecords, KeyedVersions, MetaResult, Metadata, PendingPublish,
    UploadQuery, VersionQuery,
};
use crate::{
    BucketRecord, Domain, Keypair, MetaError, ObjectRecord, PartRecord, Project, Quota, QuotaScope, UploadId,
    UploadRecord, User, VersionRecord,
};

/// Times a statement is tried again after a serialization failure.
const RETRIES: u32 = 10;

/// Runs `$call` with a pooled connection `$c` and the prepared statement `$st` of `$sql`, again
/// (after a short, growing, jittered pause) when the database aborted it as a serialization
/// failure (SQLSTATE 40001). Every statement here is a whole transaction on its own, and an
/// aborted one changed nothing, so trying it again is safe. PostgreSQL at its default isolation
/// does not abort these statements; CockroachDB (always serializable) and PostgreSQL or
/// YugabyteDB set to serializable do, and expect the client to retry.
macro_rules! retried {
    ($self:ident, $sql:expr, |$c:ident, $st:ident| $call:expr) => {{
        let mut tries = 0u32;
        loop {
            let $c = $self.client().await?;
            let $st = $c.prepare_cached($sql).await.map_err(pg)?;
            match $call.await {
                Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) && tries < RETRIES => {
                    drop($c);
                    tries += 1;
                    pause_before_retry(tries).await;
                }
                done => break done.map_err(pg),
            }
        }
    }};
}

/// The pause before try `tries + 1` of an aborted transaction: up to 2^`tries` ms (capped at
/// 512), jittered so that transactions aborted together do not collide again.
async fn pause_before_retry(tries: u32) {
    let pause = rand::random::<u64>() % (2u64 << tries.min(8));
    tokio::time::sleep(Duration::from_millis(pause + 1)).await;
}

/// Statement arguments.
type Args<'a> = &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)];

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
            keypairs: Recent::new(opts.cache),
            users: Recent::new(opts.cache),
            buckets: Recent::new(opts.cache),
        };
        this.migrate().await?;
        Ok(this)
    }

    async fn client(&self) -> MetaResult<Object> {
        self.pool.get().await.map_err(|e| MetaError::Unavailable(e.to_string()))
    }

    /// Applies missing migrations. Gateways starting together race to apply one: each claims a
    /// version by inserting its row inside the migration's transaction, so the loser waits on the
    /// row, fails on the key, rolls back and finds the version applied.
    async fn migrate(&self) -> MetaResult<()> {
        let mut c = self.client().await?;
        // CREATE TABLE IF NOT EXISTS is not safe against itself: of two gateways creating the
        // table at once, one can fail on a catalog index (23505, 42710, 42P07). The table exists
        // by then, so once more finds it.
        let create = "CREATE TABLE IF NOT EXISTS penstock_schema (version INT PRIMARY KEY, applied_ms BIGINT NOT NULL)";
        if c.batch_execute(create).await.is_err() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            c.batch_execute(create).await.map_err(pg)?;
        }
        loop {
            let found = schema_version(&c).await?.unwrap_or(0);
            if found > PG_SCHEMA_VERSION {
                return Err(MetaError::NewerSchema {
                    found,
                    known: PG_SCHEMA_VERSION,
                });
            }
            if found == PG_SCHEMA_VERSION {
                return Ok(());
            }
            let next = found + 1;
            let tx = c.transaction().await.map_err(pg)?;
            let claimed = tx
                .execute(
                    "INSERT INTO penstock_schema (version, applied_ms) VALUES ($1, $2)",
                    &[&(next as i32), &now_ms()],
                )
                .await;
            match claimed {
                Ok(_) => {
                    tx.batch_execute(MIGRATIONS[found as usize]).await.map_err(pg)?;
                    tx.commit().await.map_err(pg)?;
                    tracing::info!(version = next, "metadata schema migrated");
                }
                Err(e) if e.code() == Some(&SqlState::UNIQUE_VIOLATION) => drop(tx),
                Err(e) => return Err(pg(e)),
            }
        }
    }

    /// Edits the record (`doc`) of one row where it is stored: `select` reads and locks it
    /// (`... FOR UPDATE` by the key in `key`), `edit` changes it, `update` writes it back (the
    /// key's parameters, then the record), all in one transaction, so concurrent edits of the row
    /// through any gateway take turns. A serialization failure (serializable isolation) runs the
    /// whole again, edit included, on the row as it is then.
    async fn update_doc<T: Serialize + DeserializeOwned + Clone>(
        &self,
        table: &'static str,
        select: &str,
        update: &str,
        key: Args<'_>,
        mut edit: Edit<T>,
    ) -> MetaResult<Option<(T, bool)>> {
        let mut tries = 0u32;
        loop {
            match self.update_doc_once(table, select, update, key, &mut edit).await {
                Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) && tries < RETRIES => {
                    tries += 1;
                    pause_before_retry(tries).await;
                }
                done => return done.map_err(pg)?,
            }
        }
    }

    /// One try of [`PgMetadata::update_doc`]. The outer error is the database's, the inner one
    /// a record that does not parse (or no connection).
    async fn update_doc_once<T: Serialize + DeserializeOwned + Clone>(
        &self,
        table: &'static str,
        select: &str,
        update: &str,
        key: Args<'_>,
        edit: &mut Edit<T>,
    ) -> Result<MetaResult<Option<(T, bool)>>, tokio_postgres::Error> {
        let mut c = match self.client().await {
            Ok(c) => c,
            Err(e) => return Ok(Err(e)),
        };
        let tx = c.transaction().await?;
        let Some(row) = tx.query_opt(select, key).await? else {
            return Ok(Ok(None));
        };
        let stored: T = match doc(table, &row, 0) {
            Ok(v) => v,
            Err(e) => return Ok(Err(e)),
        };
        let mut v = stored.clone();
        if !edit(&mut v) {
            return Ok(Ok(Some((stored, false))));
        }
        let text = json(&v);
        let mut args: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = key.to_vec();
        args.push(&text);
        tx.execute(update, &args).await?;
        tx.commit().await?;
        Ok(Ok(Some((v, true))))
    }

    /// Inserts a project or user (`table`, `id`, `doc`) unless its domain has one named `name`;
    /// false when it has. The check and the insert run in one serializable transaction: of two
    /// creations of one name at once, through any gateways, the database aborts one (SQLSTATE
    /// 40001), and its next try finds the other's row. No unique index is needed on what the
    /// documents hold, and no advisory lock (which CockroachDB lacks).
    async fn insert_named(
        &self,
        table: &'static str,
        domain: &str,
        name: &str,
        id: Uuid,
        doc: &str,
    ) -> MetaResult<bool> {
        let taken =
            format!("SELECT 1 FROM {table} WHERE doc::jsonb->>'domain' = $1 AND doc::jsonb->>'name' = $2 LIMIT 1");
        let insert = format!("INSERT INTO {table} (id, doc) VALUES ($1, $2)");
        let mut tries = 0u32;
        loop {
            let mut c = self.client().await?;
            let once = async {
                let tx = c
                    .build_transaction()
                    .isolation_level(tokio_postgres::IsolationLevel::Serializable)
                    .start()
                    .await?;
                if tx.query_opt(&taken, &[&domain, &name]).await?.is_some() {
                    return Ok(false);
                }
                tx.execute(&insert, &[&id, &doc]).await?;
                tx.commit().await.map(|()| true)
            };
            match once.await {
                Err(e) if e.code() == Some(&SqlState::T_R_SERIALIZATION_FAILURE) && tries < RETRIES => {
                    tries += 1;
                    pause_before_retry(tries).await;
                }
                done => return done.map_err(pg),
            }
        }
    }

    /// Runs a statement, prepared once per connection (the statement cache saves a round trip
    /// per call), and answers its rows.
    async fn query(&self, sql: &str, args: Args<'_>) -> MetaResult<Vec<Row>> {
        retried!(self, sql, |c, st| c.query(&st, args))
    }

    /// [`PgMetadata::query`] for at most one row.
    async fn query_opt(&self, sql: &str, args: Args<'_>) -> MetaResult<Option<Row>> {
        retried!(self, sql, |c, st| c.query_opt(&st, args))
    }

    /// [`PgMetadata::query`] for exactly one row.
    async fn query_one(&self, sql: &str, args: Args<'_>) -> MetaResult<Row> {
        retried!(self, sql, |c, st| c.query_one(&st, args))
    }

    /// [`PgMetadata::query`] for the number of rows changed.
    async fn exec(&self, sql: &str, args: Args<'_>) -> MetaResult<u64> {
        retried!(self, sql, |c, st| c.execute(&st, args))
    }

    async fn get<T: DeserializeOwned>(&self, table: &'static str, sql: &str, args: Args<'_>) -> MetaResult<Option<T>> {
        let row = self.query_opt(sql, args).await?;
        row.map(|r| doc(table, &r, 0)).transpose()
    }

    async fn all<T: DeserializeOwned>(&self, table: &'static str, sql: &str) -> MetaResult<Vec<T>> {
        let rows = self.query(sql, &[]).await?;
        rows.iter().map(|r| doc(table, r, 0)).collect()
    }

    /// Upserts a scope's row, applying `set` (an SQL assignment list over `q` and `$2`).
    async fn upsert_quota(
        &self,
        scope: &QuotaScope,
        insert: (Option<i64>, i64),
        set: &str,
        arg: Option<i64>,
    ) -> MetaResult<Quota> {
        let sql = format!(
            "INSERT INTO quotas AS q (scope, limit_bytes, usage_bytes) VALUES ($1, $3::BIGINT, $4::BIGINT)
             ON CONFLICT (scope) DO UPDATE SET {set} RETURNING limit_bytes, usage_bytes"
        );
        let row = self
            .query_one(&sql, &[&scope.to_string(), &arg, &insert.0, &insert.1])
            .await?;
        Ok(quota_row(*scope, &row))
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
        let row = self
            .query_opt(
                "SELECT limit_bytes, usage_bytes FROM quotas WHERE scope = $1",
                &[&scope.to_string()],
            )
            .await?;
        Ok(row.map(|r| quota_row(*scope, &r)))
    }
    async fn quotas(&self) -> MetaResult<Vec<Quota>> {
        let rows = self
            .query("SELECT scope, limit_bytes, usage_bytes FROM quotas", &[])
            .await?;
        // Sorted here as the embedded engine sorts them (bytes of `kind:uuid`), whatever the
        // database's collation.
        let mut v: Vec<Quota> = rows
            .iter()
            .map(|r| {
                let scope: String = r.get(0);
                let scope = scope
                    .parse()
                    .map_err(|e| MetaError::Postgres(format!("quota scope {scope}: {e}")))?;
                Ok(Quota {
                    scope,
                    limit_bytes: r.get::<_, Option<i64>>(1).map(|l| l.max(0) as u64),
                    usage_bytes: r.get::<_, i64>(2).max(0) as u64,
                })
            })
            .collect::<MetaResult<_>>()?;
        v.sort_by_key(|q| q.scope.to_string());
        Ok(v)
    }
    async fn charge(&self, scope: &QuotaScope, delta: i64, sync: bool) -> MetaResult<Charge> {
        if delta == 0 {
            return Ok(Charge::Done);
        }
        // One statement: the row is locked for the check and the update, so charges from any
        // number of gateways serialize on it. A refused charge updates nothing and returns no row.
        // Unsynced, the row's lock is let go at the commit instead of after a WAL flush: every
        // write of a scope passes through this one row, and waiting for a flush while holding it
        // made concurrent charges take turns at one flush each (16 charging clients: ~3,600
        // charges/s synced, ~25,000 unsynced, pgbench on this machine).
        const CHARGE: &str = "ON CONFLICT (scope) DO UPDATE SET usage_bytes = GREATEST(q.usage_bytes + $2::BIGINT, 0)
                 WHERE $2::BIGINT <= 0 OR q.limit_bytes IS NULL OR q.usage_bytes + $2::BIGINT <= q.limit_bytes
                 RETURNING usage_bytes";
        const SYNCED: &str =
            "INSERT INTO quotas AS q (scope, limit_bytes, usage_bytes) VALUES ($1, NULL, GREATEST($2::BIGINT, 0))";
        static SQL: LazyLock<[String; 2]> = LazyLock::new(|| {
            [
                format!("{SYNCED} {CHARGE}"),
                format!(
                    "WITH {LAZY} INSERT INTO quotas AS q (scope, limit_bytes, usage_bytes)
                     SELECT $1::text, NULL, GREATEST($2::BIGINT, 0) FROM lazy {CHARGE}"
                ),
            ]
        });
        let sql = &SQL[usize::from(!sync)];
        let done = self.query_opt(sql, &[&scope.to_string(), &delta]).await?;
        if done.is_some() {
            return Ok(Charge::Done);
        }
        // (The statement's connection went back to the pool already: tasks holding one each
        // while waiting for a second would starve it.)
        let q = self.quota(scope).await?;
        Ok(match q {
            Some(Quota {
                limit_bytes: Some(limit),
                usage_bytes,
                ..
            }) => Charge::Refused {
                usage: usage_bytes,
                limit,
            },
            // The limit was lifted between the two statements: try again.
            _ => return self.charge(scope, delta, true).await,
        })
    }
    async fn set_quota_limit(&self, scope: &QuotaScope, limit: Option<u64>) -> MetaResult<Quota> {
        let limit = limit.map(|l| l.min(i64::MAX as u64) as i64);
        self.upsert_quota(scope, (limit, 0), "limit_bytes = $2::BIGINT", limit)
            .await
    }
    async fn set_quota_usage(&self, scope: &QuotaScope, usage: u64) -> MetaResult<Quota> {
        let usage = usage.min(i64::MAX as u64) as i64;
        self.upsert_quota(scope, (None, usage), "usage_bytes = $2::BIGINT", Some(usage))
            .await
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
        let sql = format!(
            "INSERT INTO gateways (instance, heartbeat_ms) VALUES ($1, {DB_NOW_MS})
             ON CONFLICT (instance) DO UPDATE SET heartbeat_ms = EXCLUDED.heartbeat_ms"
        );
        self.exec(&sql, &[&instance]).await.map(drop)
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
        let sql = "INSERT INTO uploads (folder_id, key, upload_id, doc) VALUES ($1, $2, $3, $4)
                   ON CONFLICT (folder_id, key, upload_id) DO UPDATE SET doc = $4";
        let args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [
            &folder,
            &up.key.as_bytes(),
            &up.upload_id.as_str().as_bytes(),
            &json(up),
        ];
        self.exec(sql, &args).await.map(drop)
    }
    async fn upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<Option<UploadRecord>> {
        let sql = "SELECT doc FROM uploads WHERE folder_id = $1 AND key = $2 AND upload_id = $3";
        self.get(
            "uploads",
            sql,
            &[&folder, &key.as_bytes(), &upload_id.as_str().as_bytes()],
        )
        .await
    }
    async fn uploads(&self, folder: Uuid, q: UploadQuery<'_>) -> MetaResult<Vec<UploadRecord>> {
        let UploadQuery { prefix, after, limit } = q;
        let lo = prefix.as_bytes();
        let hi = successor(lo);
        let (ak, aid) = match after {
            Some((k, id)) => (Some(k.as_bytes()), Some(id.as_bytes())),
            None => (None, None),
        };
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = self
            .query(
                "SELECT doc FROM uploads
                 WHERE folder_id = $1 AND key >= $2 AND ($3::BYTEA IS NULL OR key < $3)
                   AND ($4::BYTEA IS NULL OR (key, upload_id) > ($4, $5))
                 ORDER BY key, upload_id LIMIT $6",
                &[&folder, &lo, &hi.as_deref(), &ak, &aid, &limit],
            )
            .await?;
        rows.iter().map(|r| doc("uploads", r, 0)).collect()
    }
    async fn count_uploads(&self) -> MetaResult<u64> {
        let row = self.query_one("SELECT count(*) FROM uploads", &[]).await?;
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }
    async fn put_part(&self, upload_id: &UploadId, part: &PartRecord) -> MetaResult<()> {
        let sql = "INSERT INTO parts (upload_id, part_number, doc) VALUES ($1, $2, $3)
                   ON CONFLICT (upload_id, part_number) DO UPDATE SET doc = $3";
        let n = part.part_number as i64;
        self.exec(sql, &[&upload_id.as_str().as_bytes(), &n, &json(part)])
            .await
            .map(drop)
    }
    async fn part(&self, upload_id: &UploadId, part: u32) -> MetaResult<Option<PartRecord>> {
        let sql = "SELECT doc FROM parts WHERE upload_id = $1 AND part_number = $2";
        self.get("parts", sql, &[&upload_id.as_str().as_bytes(), &(part as i64)])
            .await
    }
    async fn parts(&self, upload_id: &UploadId) -> MetaResult<Vec<PartRecord>> {
        let rows = self
            .query(
                "SELECT doc FROM parts WHERE upload_id = $1 ORDER BY part_number",
                &[&upload_id.as_str().as_bytes()],
            )
            .await?;
        rows.iter().map(|r| doc("parts", r, 0)).collect()
    }
    async fn delete_upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<()> {
        let id = upload_id.as_str().as_bytes();
        let sql = format!("WITH u AS ({FORGET_UPLOAD}) {FORGET_PARTS}");
        self.exec(&sql, &[&folder, &key.as_bytes(), &id]).await.map(drop)
    }
    async fn complete_upload(&self, folder: Uuid, key: &str, id: &UploadId, rec: &ObjectRecord) -> MetaResult<()> {
        let sql = format!(
            "WITH u AS ({FORGET_UPLOAD}), p AS ({FORGET_PARTS})
             INSERT INTO objects (folder_id, key, doc) VALUES ($1, $2, $4) ON CONFLICT (folder_id, key) DO UPDATE SET doc = $4"
        );
        let args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&folder, &key.as_bytes(), &id.as_str().as_bytes(), &json(rec)];
        self.exec(&sql, &args).await.map(drop)
    }
}

async fn schema_version(c: &tokio_postgres::Client) -> MetaResult<Option<u32>> {
    let row = c
        .query_one("SELECT max(version) FROM penstock_schema", &[])
        .await
        .map_err(pg)?;
    Ok(row.get::<_, Option<i32>>(0).map(|v| v.max(0) as u32))
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

fn quota_row(scope: QuotaScope, r: &Row) -> Quota {
    Quota {
        scope,
        limit_bytes: r.get::<_, Option<i64>>(0).map(|l| l.max(0) as u64),
        usage_bytes: r.get::<_, i64>(1).max(0) as u64,
    }
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("records serialize")
}

fn doc<T: DeserializeOwned>(table: &'static str, r: &Row, col: usize) -> MetaResult<T> {
    let text: &str = r.get(col);
    serde_json::from_str(text).map_err(|err| MetaError::Corrupt { cf: table, err })
}

/// A failed statement: the database unreachable (connection refused, closed, reset, timed out,
/// or the server shutting down), or a statement it refused.
fn pg(e: tokio_postgres::Error) -> MetaError {
    let shutting_down = [
        SqlState::ADMIN_SHUTDOWN,
        SqlState::CRASH_SHUTDOWN,
        SqlState::CANNOT_CONNECT_NOW,
    ];
    if let Some(db) = e.as_db_error() {
        let text = format!("{} ({})", db.message(), db.code().code());
        return if shutting_down.contains(db.code()) {
            MetaError::Unavailable(text)
        } else {
            MetaError::Postgres(text)
        };
    }
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    let text = e.to_string();
    if e.is_closed() || io || text.starts_with("error connecting") || text.starts_with("timeout") {
        MetaError::Unavailable(text)
    } else {
        MetaError::Postgres(text)
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
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
