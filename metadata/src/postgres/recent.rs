//! The engine's short-lived cache of tenancy records.

use std::time::Duration;

/// Recently read records of one kind, each kept for a fixed time. Every request reads the
/// caller's keypair (twice: signature, then access check), user and bucket; caching them for
/// a fraction of a second saves most of a small request's database round trips, at the price of
/// that much delay before another gateway's admin change applies here. Absent records are not
/// cached (a bucket created on another gateway is found at once); this gateway's own writes
/// replace or drop its entries at once.
pub(super) struct Recent<K, V> {
    ttl: Duration,
    map: std::sync::Mutex<std::collections::HashMap<K, (std::time::Instant, V)>>,
}

impl<K: std::hash::Hash + Eq, V: Clone> Recent<K, V> {
    /// Entries kept at most; beyond, expired ones are dropped, then all.
    const MAX: usize = 65_536;

    pub(super) fn new(ttl: Duration) -> Self {
        Recent {
            ttl,
            map: Default::default(),
        }
    }

    pub(super) fn get<Q: std::hash::Hash + Eq + ?Sized>(&self, k: &Q) -> Option<V>
    where
        K: std::borrow::Borrow<Q>,
    {
        let map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.get(k)
            .filter(|(t, _)| t.elapsed() < self.ttl)
            .map(|(_, v)| v.clone())
    }

    pub(super) fn put(&self, k: K, v: &Option<V>) {
        let Some(v) = v else { return };
        if self.ttl.is_zero() {
            return;
        }
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= Self::MAX {
            map.retain(|_, (t, _)| t.elapsed() < self.ttl);
            if map.len() >= Self::MAX {
                map.clear();
            }
        }
        map.insert(k, (std::time::Instant::now(), v.clone()));
    }

    pub(super) fn forget<Q: std::hash::Hash + Eq + ?Sized>(&self, k: &Q)
    where
        K: std::borrow::Borrow<Q>,
    {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).remove(k);
    }
}
