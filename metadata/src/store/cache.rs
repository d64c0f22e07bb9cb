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
    /// Bytes of stored records kept at most (their encoded size), absent ones counted as their
    /// key; when full, the cache starts over. A record bigger than a 256th of it is not kept.
    max_bytes: usize,
}

struct Inner<T> {
    generation: u64,
    map: HashMap<Vec<u8>, Option<T>>,
    bytes: usize,
}

impl<T: Clone> Records<T> {
    /// Entries kept at most, absent ones included (a client probing names, access keys or object
    /// keys must not grow the gateway without bound); when full, the cache starts over.
    const MAX: usize = 16_384;

    /// A cache of at most [`Self::MAX`] records and `max_bytes` of them.
    pub(super) fn new(max_bytes: usize) -> Self {
        Self {
            inner: RwLock::new(Inner {
                generation: 0,
                map: HashMap::new(),
                bytes: 0,
            }),
            max_bytes,
        }
    }

    /// The record at `key`, from memory or else from `load`, which gives it with its size.
    pub(super) fn get<E>(
        &self,
        key: &[u8],
        load: impl FnOnce() -> Result<(Option<T>, usize), E>,
    ) -> Result<Option<T>, E> {
        let generation = {
            let inner = self.inner.read().unwrap_or_else(|e| e.into_inner());
            if let Some(v) = inner.map.get(key) {
                return Ok(v.clone());
            }
            inner.generation
        };
        let (v, size) = load()?;
        // A multipart object's record lists its parts (up to 10,000): such records are read
        // from the database each time rather than crowd out thousands of small ones.
        let weight = size + key.len();
        if weight > self.max_bytes / 256 {
            return Ok(v);
        }
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        if inner.generation == generation {
            if inner.map.len() >= Self::MAX || inner.bytes + weight > self.max_bytes {
                inner.map.clear();
                inner.bytes = 0;
            }
            inner.map.insert(key.to_vec(), v.clone());
            inner.bytes += weight;
        }
        Ok(v)
    }

    /// Drops `key` after its record was written or removed (called after the database write,
    /// whether or not it succeeded: a failed write may still have applied).
    pub(super) fn forget(&self, key: &[u8]) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        inner.generation += 1;
        // The removed entry's bytes stay counted until the cache next starts over: `forget` runs
        // on every write, and a stale count only makes that happen sooner.
        inner.map.remove(key);
    }

    /// Drops every entry, after a write that removed a range of keys (a bucket's objects).
    pub(super) fn forget_all(&self) {
        let mut inner = self.inner.write().unwrap_or_else(|e| e.into_inner());
        inner.generation += 1;
        inner.map.clear();
        inner.bytes = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::Records;
    use std::cell::Cell;

    /// Loads counted: a second read of a kept record makes none.
    fn read(c: &Records<String>, key: &str, size: usize, loads: &Cell<u32>) -> Option<String> {
        c.get::<()>(key.as_bytes(), || {
            loads.set(loads.get() + 1);
            Ok((Some(format!("record {key}")), size))
        })
        .unwrap()
    }

    #[test]
    fn records_are_kept_within_the_byte_budget() {
        let c = Records::new(256 * 100);
        let loads = Cell::new(0);
        assert_eq!(read(&c, "a", 10, &loads).as_deref(), Some("record a"));
        read(&c, "a", 10, &loads);
        assert_eq!(loads.get(), 1, "a small record is kept");
        // Bigger than a 256th of the budget: read from the database every time.
        read(&c, "big", 200, &loads);
        read(&c, "big", 200, &loads);
        assert_eq!(loads.get(), 3);
        // 99 bytes each (with the key): the budget holds 258 of them, the next starts over.
        for i in 0..300 {
            read(&c, &format!("k{i:03}"), 95, &loads);
        }
        let before = loads.get();
        read(&c, "k299", 95, &loads);
        assert_eq!(loads.get(), before, "the last record read is kept");
        read(&c, "k000", 95, &loads);
        assert_eq!(loads.get(), before + 1, "the cache started over when its bytes ran out");
        c.forget_all();
        read(&c, "k299", 95, &loads);
        assert_eq!(loads.get(), before + 2);
    }
}
