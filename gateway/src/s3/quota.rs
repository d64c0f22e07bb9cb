//! Quota scopes: byte limits per `user:<uuid>` / `project:<uuid>`, with usage tracked
//! incrementally on every write and delete.
//!
//! Each change takes the scope's lock, so writers racing against a limit are serialized at the
//! moment they commit: the usage can never end above the limit. A write that would exceed it is
//! refused before its file is published, and its staging file is dropped with it.

use std::sync::Arc;

use s3s::S3Result;

use penstock_backends::{FolderLocation, QuotaScope};
use penstock_metadata::{Quota, Store};

use super::locks::KeyLocks;
use super::Gateway;

impl Gateway {
    /// Recomputes a scope's usage by scanning all its folders, reporting `(done, total, bytes)`
    /// after each folder. Writes to the scope wait until the scan is stored, so no charge made
    /// during the scan is lost.
    pub async fn rescan_usage(
        &self,
        scope: QuotaScope,
        mut progress: impl FnMut(usize, usize, u64),
    ) -> S3Result<Quota> {
        let _guard = self.quota_locks.lock(uuid::Uuid::nil(), &scope.to_string()).await;
        let buckets = self
            .meta(move |st| {
                Ok(st
                    .buckets()?
                    .into_iter()
                    .filter(|b| b.quota_scope == scope)
                    .collect::<Vec<_>>())
            })
            .await?;
        let mut total = 0u64;
        progress(0, buckets.len(), 0);
        for (i, b) in buckets.iter().enumerate() {
            let folder = self
                .volume(&b.volume)?
                .open_folder(&FolderLocation { scope, id: b.folder_id })
                .await
                .map_err(super::error::backend_err)?;
            total += folder.usage().await.map_err(super::error::backend_err)?;
            progress(i + 1, buckets.len(), total);
        }
        let q = self
            .meta(move |st| {
                let mut q = st.quota(&scope)?.unwrap_or(Quota {
                    scope,
                    limit_bytes: None,
                    usage_bytes: 0,
                });
                q.usage_bytes = total;
                st.put_quota(&q)?;
                Ok(q)
            })
            .await?;
        Ok(q)
    }

    /// Adds `delta` bytes to the scope's usage, refusing growth beyond its limit. The change is
    /// durable when this returns.
    pub(crate) async fn charge(&self, scope: &QuotaScope, delta: i64) -> S3Result<()> {
        charge_scope(self.store.clone(), self.quota_locks.clone(), *scope, delta, true).await
    }
}

/// Adds `delta` bytes to `scope`'s usage under its lock, refusing growth beyond its limit;
/// `sync` makes the change durable on its own.
///
/// Writers pass `sync = false` and let their next synced metadata write (the object or part
/// record) make the change durable, as RocksDB syncs the whole write-ahead log up to that write:
/// the scope's lock is then held for a memtable insert instead of an fsync, so concurrent writers
/// of a scope do not queue behind each other's syncs. If the process dies before that record
/// write, the write was not acknowledged and its charge is lost with it.
///
/// A free function over shared handles so that a task that outlives its request (a publish,
/// which must finish once begun) can charge and refund.
pub(crate) async fn charge_scope(
    store: Arc<Store>,
    locks: Arc<KeyLocks>,
    scope: QuotaScope,
    delta: i64,
    sync: bool,
) -> S3Result<()> {
    if delta == 0 {
        return Ok(());
    }
    let _guard = locks.lock(uuid::Uuid::nil(), &scope.to_string()).await;
    // One metadata round trip: read, check and write under the scope's lock.
    let refused = super::run_meta(store, move |st| {
        let mut q = st.quota(&scope)?.unwrap_or(Quota {
            scope,
            limit_bytes: None,
            usage_bytes: 0,
        });
        let new = (q.usage_bytes as i64).saturating_add(delta).max(0) as u64;
        if delta > 0 {
            if let Some(limit) = q.limit_bytes {
                if new > limit {
                    return Ok(Some((limit.saturating_sub(q.usage_bytes), limit)));
                }
            }
        }
        q.usage_bytes = new;
        st.put_quota_opt(&q, sync)?;
        Ok(None)
    })
    .await?;
    if let Some((left, limit)) = refused {
        return Err(super::error::quota_exceeded(delta, &scope, left, limit));
    }
    Ok(())
}
