//! Quota scopes: byte limits per `user:<uuid>` / `project:<uuid>`, with usage tracked
//! incrementally on every write and delete.
//!
//! Each change takes the scope's lock, so writers racing against a limit are serialized at the
//! moment they commit: the usage can never end above the limit. A write that would exceed it is
//! refused before its file is published, and its staging file is dropped with it.

use s3s::{S3Error, S3ErrorCode, S3Result};

use penstock_metadata::Quota;

use super::Gateway;

impl Gateway {
    /// Adds `delta` bytes to the scope's usage, refusing growth beyond its limit.
    pub(crate) async fn charge(&self, scope: &str, delta: i64) -> S3Result<()> {
        if delta == 0 {
            return Ok(());
        }
        let _guard = self.quota_locks.lock(uuid::Uuid::nil(), scope).await;
        let s = scope.to_owned();
        let mut q = self.meta(move |st| st.quota(&s)).await?.unwrap_or_else(|| Quota {
            scope: scope.to_owned(),
            limit_bytes: None,
            usage_bytes: 0,
        });
        let new = (q.usage_bytes as i64).saturating_add(delta).max(0) as u64;
        if delta > 0 {
            if let Some(limit) = q.limit_bytes {
                if new > limit {
                    let mut e = S3Error::with_message(
                        S3ErrorCode::Custom("QuotaExceeded".into()),
                        format!(
                            "The write needs {delta} more bytes but quota scope {scope} has {} of {limit} bytes left",
                            limit.saturating_sub(q.usage_bytes)
                        ),
                    );
                    e.set_status_code(http::StatusCode::FORBIDDEN);
                    return Err(e);
                }
            }
        }
        q.usage_bytes = new;
        self.meta(move |st| st.put_quota(&q)).await
    }
}
