//! Decoded records kept in memory, exactly as current as the database: the tenancy records, and
//! the object records that every GET and HEAD reads.

use std::collections::HashMap;
use std::sync::RwLock;

/// Records of one kind (keypairs, users, buckets, objects...) by key, decoded. Every request reads
/// the caller's keypair (twice: signature, then access check), user and bucket, and every GET or
/// HEAD the object's record; from RocksDB each read is a point lookup plus a JSON decode, together
/// about a fifth of a small GET's CPU (docs/benchmarks.md). Only this process writes the database
/// (RocksDB locks it), and every write of these records goes through [`Store`](super::Store), which
/// calls [`Records::forget`] after writing: so an entry is never stale, absent records included,
/// without any expiry.
///
/// A read that missed loads from the database and then inserts what it loaded, but only if no
/// write forgot anything in between (`generation` unchanged): otherwise a lookup that read the
/// old record before a write could put it back after the write's `forget`.
pub(super) struct Records<T> {
    inner: RwLock<Inner<T>>,
}

struct Inner<T> {
    generation: u64,
    map: HashMap<Vec<u8>, Option<T>>,
}

impl<T: Clone> Records<T> {
    /// Entries kept at most, absent ones included (a client probing names, access keys or object
    /// keys must not grow the gateway without bound); when full, the cache starts over.
    const MAX: usize = 16_384;

    pub(super) fn new() -> Self {
        Self {
            inner: RwLock::new(Inner {
                generation: 0,
                map: HashMap::new(),
            }),
        }
    }

    /// The record at `key`, from memory or else from `load`.
    pub(super) fn get<E>(&self, key: &[u8], load: impl FnOnce() -> Result<Option<T>, E>) -> Result<Option<T>, E> {
        let generation = {
            let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
            if let Some(v) = inner.map.get(key) {
                return Ok(v.clone());
            }
            inner.generation
        };
        let v = load()?;
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if inner.generation == generation {
            if inner.map.len() >= Self::MAX {
                inner.map.clear();
            }
            inner.map.insert(key.to_vec(), v.clone());
        }
        Ok(v)
    }

    /// Drops `key` after its record was written or removed (called after the database write,
    /// whether or not it succeeded: a failed write may still have applied).
    pub(super) fn forget(&self, key: &[u8]) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        inner.generation += 1;
        inner.map.remove(key);
    }

    /// Drops every entry, after a write that removed a range of keys (a bucket's objects).
    pub(super) fn forget_all(&self) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        inner.generation += 1;
        inner.map.clear();
    }
}
