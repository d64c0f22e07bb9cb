//! Per-key serialization of the short "write record, rename file" step of a write.
//!
//! Without it two PUTs of one key could interleave as record A, record B, rename B, rename A:
//! the bytes would be A's and the record B's. Holding a striped lock across the pair makes the
//! last writer win for both. Stripes keep memory constant; unrelated keys rarely share one.

use std::hash::{DefaultHasher, Hash, Hasher};

use tokio::sync::{Mutex, MutexGuard};
use uuid::Uuid;

const STRIPES: usize = 1024;

pub(crate) struct KeyLocks {
    stripes: Vec<Mutex<()>>,
}

impl KeyLocks {
    pub(crate) fn new() -> Self {
        Self {
            stripes: (0..STRIPES).map(|_| Mutex::new(())).collect(),
        }
    }

    pub(crate) async fn lock(&self, folder: Uuid, key: &str) -> MutexGuard<'_, ()> {
        let mut h = DefaultHasher::new();
        folder.hash(&mut h);
        key.hash(&mut h);
        self.stripes[(h.finish() as usize) % STRIPES].lock().await
    }
}
