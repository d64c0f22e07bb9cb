//! How statements reach the database: the pool's connections, statements retried after a
//! serialization failure, transactions that edit one row or insert under a name, the schema's
//! migrations, and the conversions between rows and records every part of the engine shares.

use std::time::Duration;

use deadpool_postgres::Object;
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio_postgres::error::SqlState;
use tokio_postgres::Row;
use uuid::Uuid;

use super::sql::{MIGRATIONS, PG_SCHEMA_VERSION};
use super::PgMetadata;
use crate::engine::{Edit, MetaResult};
use crate::MetaError;

/// Times a statement is tried again after a serialization failure.
pub(super) const RETRIES: u32 = 10;

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
            let done = {
                let $c = $self.client().await?;
                let $st = $c.prepare_cached($sql).await.map_err(pg)?;
                $call.await
            };
            if let Err(e) = &done {
                if try_again(e, &mut tries).await {
                    continue;
                }
            }
            break done.map_err(pg);
        }
    }};
}

/// After a try of a transaction that failed with `e`: whether to run it again, which is when
/// the database aborted it as a serialization failure (an aborted transaction changed nothing)
/// and fewer than [`RETRIES`] tries were made; then after a pause of up to 2^`tries` ms (capped
/// at 512), jittered so that transactions aborted together do not collide again. The caller
/// lets its connection go back to the pool before asking, so the pause holds none.
pub(super) async fn try_again(e: &tokio_postgres::Error, tries: &mut u32) -> bool {
    if e.code() != Some(&SqlState::T_R_SERIALIZATION_FAILURE) || *tries >= RETRIES {
        return false;
    }
    *tries += 1;
    let pause = rand::random::<u64>() % (2u64 << (*tries).min(8));
    tokio::time::sleep(Duration::from_millis(pause + 1)).await;
    true
}

/// Statement arguments.
pub(super) type Args<'a> = &'a [&'a (dyn tokio_postgres::types::ToSql + Sync)];

impl PgMetadata {
    pub(super) async fn client(&self) -> MetaResult<Object> {
        self.pool.get().await.map_err(|e| MetaError::Unavailable(e.to_string()))
    }

    /// Applies missing migrations. Gateways starting together race to apply one: each claims a
    /// version by inserting its row inside the migration's transaction, so the loser waits on the
    /// row, fails on the key, rolls back and finds the version applied.
    pub(super) async fn migrate(&self) -> MetaResult<()> {
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
    pub(super) async fn update_doc<T: Serialize + DeserializeOwned + Clone>(
        &self,
        table: &'static str,
        select: &str,
        update: &str,
        key: Args<'_>,
        mut edit: Edit<T>,
    ) -> MetaResult<Option<(T, bool)>> {
        let mut tries = 0u32;
        loop {
            let done = self.update_doc_once(table, select, update, key, &mut edit).await;
            if let Err(e) = &done {
                if try_again(e, &mut tries).await {
                    continue;
                }
            }
            return done.map_err(pg)?;
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
    pub(super) async fn insert_named(
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
            let done = async {
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
            }
            .await;
            drop(c);
            if let Err(e) = &done {
                if try_again(e, &mut tries).await {
                    continue;
                }
            }
            return done.map_err(pg);
        }
    }

    /// Runs a statement, prepared once per connection (the statement cache saves a round trip
    /// per call), and answers its rows.
    pub(super) async fn query(&self, sql: &str, args: Args<'_>) -> MetaResult<Vec<Row>> {
        retried!(self, sql, |c, st| c.query(&st, args))
    }

    /// [`PgMetadata::query`] for at most one row.
    pub(super) async fn query_opt(&self, sql: &str, args: Args<'_>) -> MetaResult<Option<Row>> {
        retried!(self, sql, |c, st| c.query_opt(&st, args))
    }

    /// [`PgMetadata::query`] for exactly one row.
    pub(super) async fn query_one(&self, sql: &str, args: Args<'_>) -> MetaResult<Row> {
        retried!(self, sql, |c, st| c.query_one(&st, args))
    }

    /// [`PgMetadata::query`] for the number of rows changed.
    pub(super) async fn exec(&self, sql: &str, args: Args<'_>) -> MetaResult<u64> {
        retried!(self, sql, |c, st| c.execute(&st, args))
    }

    pub(super) async fn get<T: DeserializeOwned>(
        &self,
        table: &'static str,
        sql: &str,
        args: Args<'_>,
    ) -> MetaResult<Option<T>> {
        let row = self.query_opt(sql, args).await?;
        row.map(|r| doc(table, &r, 0)).transpose()
    }

    pub(super) async fn all<T: DeserializeOwned>(&self, table: &'static str, sql: &str) -> MetaResult<Vec<T>> {
        let rows = self.query(sql, &[]).await?;
        rows.iter().map(|r| doc(table, r, 0)).collect()
    }
}

pub(super) async fn schema_version(c: &tokio_postgres::Client) -> MetaResult<Option<u32>> {
    let row = c
        .query_one("SELECT max(version) FROM penstock_schema", &[])
        .await
        .map_err(pg)?;
    Ok(row.get::<_, Option<i32>>(0).map(|v| v.max(0) as u32))
}

pub(super) fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).expect("records serialize")
}

pub(super) fn doc<T: DeserializeOwned>(table: &'static str, r: &Row, col: usize) -> MetaResult<T> {
    let text: &str = r.get(col);
    serde_json::from_str(text).map_err(|err| MetaError::Corrupt { cf: table, err })
}

/// A failed statement: the database unreachable (connection refused, closed, reset, timed out,
/// or the server shutting down), or a statement it refused.
pub(super) fn pg(e: tokio_postgres::Error) -> MetaError {
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

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}
