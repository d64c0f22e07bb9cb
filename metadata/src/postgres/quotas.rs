//! Quota accounting: a scope's limit and usage in one row, charged by one statement that
//! checks the limit and updates the usage under the row's lock, whichever gateway charges.

use std::sync::LazyLock;

use tokio_postgres::Row;

use super::sql::LAZY;
use super::PgMetadata;
use crate::engine::{Charge, MetaResult};
use crate::{MetaError, Quota, QuotaScope};

impl PgMetadata {
    /// Upserts a scope's row, applying `set` (an SQL assignment list over `q` and `$2`).
    pub(super) async fn upsert_quota(
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

    /// [`Metadata::quota`].
    pub(super) async fn read_quota(&self, scope: &QuotaScope) -> MetaResult<Option<Quota>> {
        let row = self
            .query_opt(
                "SELECT limit_bytes, usage_bytes FROM quotas WHERE scope = $1",
                &[&scope.to_string()],
            )
            .await?;
        Ok(row.map(|r| quota_row(*scope, &r)))
    }
    /// [`Metadata::quotas`].
    pub(super) async fn all_quotas(&self) -> MetaResult<Vec<Quota>> {
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
    /// [`Metadata::charge`].
    pub(super) async fn charge_scope(&self, scope: &QuotaScope, delta: i64, sync: bool) -> MetaResult<Charge> {
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
        let mut sync = sync;
        loop {
            let sql = &SQL[usize::from(!sync)];
            let done = self.query_opt(sql, &[&scope.to_string(), &delta]).await?;
            if done.is_some() {
                return Ok(Charge::Done);
            }
            // (The statement's connection went back to the pool already: tasks holding one each
            // while waiting for a second would starve it.)
            if let Some(Quota {
                limit_bytes: Some(limit),
                usage_bytes,
                ..
            }) = self.read_quota(scope).await?
            {
                return Ok(Charge::Refused {
                    usage: usage_bytes,
                    limit,
                });
            }
            // The limit was lifted between the two statements: try again.
            sync = true;
        }
    }
    /// [`Metadata::set_quota_limit`].
    pub(super) async fn set_limit(&self, scope: &QuotaScope, limit: Option<u64>) -> MetaResult<Quota> {
        let limit = limit.map(|l| l.min(i64::MAX as u64) as i64);
        self.upsert_quota(scope, (limit, 0), "limit_bytes = $2::BIGINT", limit)
            .await
    }
    /// [`Metadata::set_quota_usage`].
    pub(super) async fn set_usage(&self, scope: &QuotaScope, usage: u64) -> MetaResult<Quota> {
        let usage = usage.min(i64::MAX as u64) as i64;
        self.upsert_quota(scope, (None, usage), "usage_bytes = $2::BIGINT", Some(usage))
            .await
    }
}

fn quota_row(scope: QuotaScope, r: &Row) -> Quota {
    Quota {
        scope,
        limit_bytes: r.get::<_, Option<i64>>(0).map(|l| l.max(0) as u64),
        usage_bytes: r.get::<_, i64>(1).max(0) as u64,
    }
}
