//! Directory names kept between the pages of a listing. A page needs the entries after its
//! marker, in S3 key order, and the stats of only the ones it returns; a backend that keeps a
//! large directory's sorted names reads the directory once for a whole listing instead of once
//! per page. Kept names are valid only while the directory's times are those they were read
//! under, and only for directories that had settled (see each backend for how it decides).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a directory's times must have held before its names are kept: a change made in
/// the same clock tick as the times last read would not move them, and a tick is far shorter.
pub(crate) const SETTLED: Duration = Duration::from_secs(2);
/// Directories with fewer entries are read again for every page: that costs less than a page's
/// stats, and keeping only large ones keeps the table short.
pub(crate) const MIN_KEPT_ENTRIES: usize = 1000;
/// Bytes of names kept across all directories; the least recently used go first.
const MAX_KEPT_BYTES: usize = 64 << 20;
/// Directories whose first sighting is remembered (`KeptNames::seen_settled`) before the
/// table starts over.
const MAX_SIGHTINGS: usize = 4096;

/// The sort keys of one directory's entries (`name/` for a directory, `name` for a file), in
/// S3 key order, in one buffer: ~4 bytes per entry besides its name.
pub(crate) struct Names {
    keys: String,
    ends: Vec<u32>,
}

impl Names {
    /// Names from sort keys already in order.
    pub(crate) fn from_sorted<S: AsRef<str>>(keys: &[S]) -> Self {
        let mut buf = String::with_capacity(keys.iter().map(|k| k.as_ref().len()).sum());
        let mut ends = Vec::with_capacity(keys.len());
        for k in keys {
            buf.push_str(k.as_ref());
            ends.push(buf.len() as u32);
        }
        Self { keys: buf, ends }
    }

    pub(crate) fn len(&self) -> usize {
        self.ends.len()
    }

    pub(crate) fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.keys[start..self.ends[i] as usize]
    }

    /// The first index whose key is at or after `from`.
    pub(crate) fn first_from(&self, from: &str) -> usize {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if self.get(mid) < from {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    fn bytes(&self) -> usize {
        self.keys.len() + self.ends.len() * 4
    }
}

/// A directory's times when its names were read: `(seconds, nanoseconds)` of mtime and ctime.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Version {
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
}

struct Kept {
    version: Version,
    names: Arc<Names>,
    used: u64,
}

#[derive(Default)]
struct Table {
    by_dir: HashMap<(u64, u64), Kept>,
    bytes: usize,
    clock: u64,
    sightings: HashMap<((u64, u64), Version), Instant>,
}

/// The kept directory names of one volume, by directory identity (file system and inode).
#[derive(Default)]
pub(crate) struct KeptNames {
    table: Mutex<Table>,
}

impl KeptNames {
    /// The names of directory `id` if they were kept under `version`; names kept under another
    /// version are dropped.
    pub(crate) fn kept(&self, id: (u64, u64), version: Version) -> Option<Arc<Names>> {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        t.clock += 1;
        let now = t.clock;
        let stale = match t.by_dir.get_mut(&id) {
            Some(k) if k.version == version => {
                k.used = now;
                return Some(k.names.clone());
            }
            Some(_) => true,
            None => false,
        };
        if stale {
            if let Some(old) = t.by_dir.remove(&id) {
                t.bytes -= old.names.bytes();
            }
        }
        None
    }

    /// Keeps `names` of directory `id`, read under `version`, evicting the least recently
    /// used directories to stay within the byte budget.
    pub(crate) fn keep(&self, id: (u64, u64), version: Version, names: Arc<Names>) {
        let size = names.bytes();
        if size > MAX_KEPT_BYTES {
            return;
        }
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        while t.bytes + size > MAX_KEPT_BYTES {
            let Some(oldest) = t.by_dir.iter().min_by_key(|(_, k)| k.used).map(|(id, _)| *id) else {
                break;
            };
            if let Some(old) = t.by_dir.remove(&oldest) {
                t.bytes -= old.names.bytes();
            }
        }
        t.clock += 1;
        let used = t.clock;
        if let Some(old) = t.by_dir.insert(id, Kept { version, names, used }) {
            t.bytes -= old.names.bytes();
        }
        t.bytes += size;
    }

    /// Whether directory `id` has shown `version` for at least [`SETTLED`] by this process's
    /// own clock, remembering the first sighting. For file systems whose clock is not this
    /// machine's (a server's), where comparing the times with this clock would not tell.
    pub(crate) fn seen_settled(&self, id: (u64, u64), version: Version) -> bool {
        let mut t = self.table.lock().unwrap_or_else(|e| e.into_inner());
        if t.sightings.len() >= MAX_SIGHTINGS && !t.sightings.contains_key(&(id, version)) {
            t.sightings.clear();
        }
        let first = *t.sightings.entry((id, version)).or_insert_with(Instant::now);
        first.elapsed() >= SETTLED
    }

    #[cfg(test)]
    pub(crate) fn kept_dirs(&self) -> usize {
        self.table.lock().unwrap().by_dir.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_find_their_place_in_key_order() {
        let mut keys: Vec<String> = ["a.txt", "a/", "a0", "b", "sub/", "sub.txt"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        keys.sort_unstable();
        let n = Names::from_sorted(&keys);
        assert_eq!(
            (0..n.len()).map(|i| n.get(i)).collect::<Vec<_>>(),
            ["a.txt", "a/", "a0", "b", "sub.txt", "sub/"]
        );
        assert_eq!(n.first_from(""), 0);
        assert_eq!(n.first_from("a/"), 1);
        assert_eq!(n.first_from("a/\0"), 2);
        assert_eq!(n.first_from("sub/"), 5);
        assert_eq!(n.first_from("zzz"), 6);
    }

    #[test]
    fn a_version_settles_after_it_has_held_and_a_new_one_starts_over() {
        let k = KeptNames::default();
        let v = Version {
            mtime: (1, 0),
            ctime: (1, 0),
        };
        assert!(!k.seen_settled((1, 2), v));
        std::thread::sleep(SETTLED + Duration::from_millis(50));
        assert!(k.seen_settled((1, 2), v));
        let changed = Version { mtime: (2, 0), ..v };
        assert!(!k.seen_settled((1, 2), changed));
    }

    #[test]
    fn kept_names_go_with_a_new_version() {
        let k = KeptNames::default();
        let v = Version {
            mtime: (1, 0),
            ctime: (1, 0),
        };
        k.keep((1, 2), v, Arc::new(Names::from_sorted(&["a", "b"])));
        assert_eq!(k.kept((1, 2), v).map(|n| n.len()), Some(2));
        assert!(k.kept((1, 2), Version { ctime: (1, 1), ..v }).is_none());
        assert!(k.kept((1, 2), v).is_none(), "dropped once seen stale");
        assert_eq!(k.kept_dirs(), 0);
    }
}
