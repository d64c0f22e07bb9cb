//! Per-key serialization of the short "write record, rename file" step of a write.
//!
//! Without it two PUTs of one key could interleave as record A, record B, rename B, rename A:
//! the bytes would be A's and the record B's. Holding a striped lock across the pair makes the
//! last writer win for both. Stripes keep memory constant; unrelated keys rarely share one.
//! Gateways that share a metadata engine also claim the key there ([`Gateway::hold_key`]), which
//! orders the writers of different gateways the same way.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant};

use penstock_backends::layout::instance as layout_instance;
use penstock_metadata::Metadata;
use s3s::{s3_error, S3Result};
use tokio::sync::{Mutex, MutexGuard, OwnedMutexGuard};
use uuid::Uuid;

use super::error::meta_err;
use super::Gateway;

const STRIPES: usize = 1024;

pub(crate) struct KeyLocks {
    stripes: Vec<Arc<Mutex<()>>>,
}

impl KeyLocks {
    pub(crate) fn new() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Arc::new(Mutex::new(()))).collect(),
        }
    }

    fn stripe(&self, folder: Uuid, key: &str) -> &Arc<Mutex<()>> {
        let mut h = DefaultHasher::new();
        folder.hash(&mut h);
        key.hash(&mut h);
        &self.stripes[(h.finish() as usize) % STRIPES]
    }

    pub(crate) async fn lock(&self, folder: Uuid, key: &str) -> MutexGuard<'_, ()> {
        self.stripe(folder, key).lock().await
    }

    /// A guard that can move into a spawned task, so a step that must not be cut short by a
    /// dropped request (a client that disconnects) stays serialized until it is done.
    pub(crate) async fn lock_owned(&self, folder: Uuid, key: &str) -> OwnedMutexGuard<()> {
        self.stripe(folder, key).clone().lock_owned().await
    }
}

/// How long a change waits for a key another gateway holds before answering 503 SlowDown (which
/// clients retry). A live holder keeps a key for one record write and one rename; a dead one's
/// claim is settled by a survivor within `gone_after_secs`.
const CLAIM_WAIT: Duration = Duration::from_secs(10);

/// A key held for one change: this gateway's lock of it and, where gateways share the metadata
/// engine, the engine's claim (`Metadata::claim_key`). Dropped, it gives the claim up before the
/// lock, in a task (a drop cannot wait), so that the next holder on this gateway claims after
/// the release and never has its claim released by it.
pub(crate) struct KeyGuard {
    local: Option<OwnedMutexGuard<()>>,
    claim: Option<(Arc<dyn Metadata>, Uuid, String)>,
}

impl KeyGuard {
    /// The change ended the key's publishing in the engine (`end_publish`, a versioned settle),
    /// which also ended the claim: nothing is left to release.
    pub(crate) fn ended(&mut self) {
        self.claim = None;
    }
}

impl Drop for KeyGuard {
    fn drop(&mut self) {
        let (Some((meta, folder, key)), Ok(rt)) = (self.claim.take(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let local = self.local.take();
        rt.spawn(async move {
            if let Err(e) = meta.release_key(folder, &key, layout_instance()).await {
                // Left noted: a later claim by this gateway takes it again, another gateway's
                // waits until this one's heartbeat stops and a survivor settles it.
                tracing::warn!(%key, error = %e, "could not release a key claim");
            }
            drop(local);
        });
    }
}

impl Gateway {
    /// Holds `key` of `folder` for one change of its record or file: every write, delete and
    /// record change takes it before reading what the change depends on and keeps it until
    /// record and file are both in place.
    pub(crate) async fn hold_key(&self, folder: Uuid, key: &str) -> S3Result<KeyGuard> {
        if !self.meta.shared() {
            return Ok(KeyGuard {
                local: Some(self.locks.lock_owned(folder, key).await),
                claim: None,
            });
        }
        let (start, mut pause) = (Instant::now(), Duration::from_millis(1));
        loop {
            let local = self.locks.lock_owned(folder, key).await;
            if self
                .meta
                .claim_key(folder, key, layout_instance())
                .await
                .map_err(meta_err)?
            {
                return Ok(KeyGuard {
                    local: Some(local),
                    claim: Some((self.meta.clone(), folder, key.to_owned())),
                });
            }
            // Waited for without the local lock: its stripe is shared with other keys, whose
            // changes on this gateway must not queue behind another gateway's hold of this one.
            drop(local);
            // The holder may have been killed: its claim is freed once the janitor sees so.
            self.nudge_janitor();
            if start.elapsed() > CLAIM_WAIT {
                return Err(s3_error!(SlowDown, "Please reduce your request rate."));
            }
            // Jittered, so that gateways waiting for one key do not retry in step.
            let jitter = Duration::from_micros(rand::random::<u64>() % 1000);
            tokio::time::sleep(pause + jitter).await;
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }
}
