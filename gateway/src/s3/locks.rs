//! Per-key serialization of the short "write record, rename file" step of a write.
//!
//! Without it two PUTs of one key could interleave as record A, record B, rename B, rename A:
//! the bytes would be A's and the record B's. Holding a striped lock across the pair makes the
//! last writer win for both. Stripes keep memory constant; unrelated keys rarely share one.

use std::hash::{DefaultHasher, Hash, Hasher};

use std::sync::Arc;

use tokio::sync::{Mutex, MutexGuard, OwnedMutexGuard};
use uuid::Uuid;

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
