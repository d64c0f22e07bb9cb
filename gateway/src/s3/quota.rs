//! Quota scopes: byte limits per `user:<uuid>` / `project:<uuid>`, with usage tracked
//! incrementally on every write and delete.
//!
//! Each change is one atomic charge in the metadata engine, so writers racing against a limit
//! (on this gateway or another) never leave the usage above it. A write that would exceed it is
//! refused before its file is published, and its staging file is dropped with it. A rescan holds
//! the scope's lock in this process so that no charge made here during the scan is lost.

use std::sync::Arc;

use s3s::S3Result;

use penstock_backends::{FolderLocation, QuotaScope};
use penstock_metadata::{Charge, Metadata, Quota};

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
        let buckets: Vec<_> = (self.meta.buckets().await.map_err(super::meta_err)?)
            .into_iter()
            .filter(|b| b.quota_scope == scope)
            .collect();
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
        self.meta.set_quota_usage(&scope, total).await.map_err(super::meta_err)
    }

    /// Adds `delta` bytes to the scope's usage, refusing growth beyond its limit. The change is
    /// durable when this returns.
    pub(crate) async fn charge(&self, scope: &QuotaScope, delta: i64) -> S3Result<()> {
        charge_scope(self.meta.clone(), self.quota_locks.clone(), *scope, delta, true).await
    }
}

/// Adds `delta` bytes to `scope`'s usage, refusing growth beyond its limit; `sync` makes the
/// change durable on its own.
///
/// Writers pass `sync = false` and let their next synced metadata write (the object or part
/// record) make the change durable, as RocksDB syncs the whole write-ahead log up to that write:
/// a charge is then a memtable insert instead of an fsync, so concurrent writers of a scope do
/// not queue behind each other's syncs. If the process dies before that record write, the write
/// was not acknowledged and its charge is lost with it.
///
/// A free function over shared handles so that a task that outlives its request (a publish,
/// which must finish once begun) can charge and refund.
pub(crate) async fn charge_scope(
    meta: Arc<dyn Metadata>,
    locks: Arc<KeyLocks>,
    scope: QuotaScope,
    delta: i64,
    sync: bool,
) -> S3Result<()> {
    if delta == 0 {
        return Ok(());
    }
    // Waits while a rescan of the scope runs in this process.
    let _guard = locks.lock(uuid::Uuid::nil(), &scope.to_string()).await;
    match meta.charge(&scope, delta, sync).await.map_err(super::meta_err)? {
        Charge::Done => Ok(()),
        Charge::Refused { usage, limit } => Err(super::error::quota_exceeded(
            delta,
            &scope,
            limit.saturating_sub(usage),
            limit,
        )),
    }
}
