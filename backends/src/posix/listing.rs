//! Pages of a directory for listings. A page of a listing needs the entries after its marker,
//! in S3 key order, and the stats of only the ones it returns: the names are read and sorted
//! without a stat each, and those of large directories that have settled are kept, so paging
//! through a directory of a million files reads it once instead of once per page.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;

use super::fs::{join_or_dot, open_beneath, to_stat};
use crate::layout;
use crate::volume::{DirEntry, EntryKind, Stat};
use crate::Result;

/// A directory is kept only when both its times are at least this old: a change made in the
/// same clock tick as the time last read would not move them (ext4 stamps with the kernel's
/// coarse clock), and anything older is surely behind a change made now.
const SETTLED: Duration = Duration::from_secs(2);
/// Directories with fewer entries are read again for every page: that costs less than a page's
/// stats, and keeping only large ones keeps the table short.
const MIN_KEPT_ENTRIES: usize = 1000;
/// Bytes of names kept across all directories; the least recently used go first.
const MAX_KEPT_BYTES: usize = 64 << 20;

/// The sort keys of one directory's entries (`name/` for a directory, `name` for a file), in
/// S3 key order, in one buffer: ~4 bytes per entry besides its name.
pub(super) struct Names {
    keys: String,
    ends: Vec<u32>,
}

impl Names {
    fn from_sorted(keys: &[String]) -> Self {
        let mut buf = String::with_capacity(keys.iter().map(String::len).sum());
        let mut ends = Vec::with_capacity(keys.len());
        for k in keys {
            buf.push_str(k);
            ends.push(buf.len() as u32);
        }
        Self { keys: buf, ends }
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.keys[start..self.ends[i] as usize]
    }

    /// The first index whose key is at or after `from`.
    fn first_from(&self, from: &str) -> usize {
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

/// What a kept directory's names were read under: the directory's identity and times.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Version {
    mtime: (i64, i64),
    ctime: (i64, i64),
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
}

/// The kept directory names of one volume.
pub(super) struct DirPages {
    /// Off where a directory's times cannot be trusted to move with every change seen here (a
    /// network file system's cached attributes): then every page reads the names again.
    keep: bool,
    table: Mutex<Table>,
}

impl DirPages {
    pub(super) fn new(keep: bool) -> Self {
        Self {
            keep,
            table: Mutex::default(),
        }
    }

    /// The entries of `dir` (segments from the folder `root`) whose sort keys are at or after
    /// `from`, in S3 key order, at most `limit`, each with its stat; as
    /// [`read_dir_sorted`](super::fs::read_dir_sorted) would list them. Runs on a blocking thread.
    pub(super) fn page(&self, root: &OwnedFd, dir: &[String], from: &str, limit: usize) -> Result<Vec<DirEntry>> {
        let rel = join_or_dot(dir);
        let fd = match open_beneath(root, &rel, OFlags::RDONLY | OFlags::DIRECTORY) {
            Ok(fd) => fd,
            Err(Errno::NOENT | Errno::NOTDIR | Errno::XDEV | Errno::LOOP) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let st = rustix::fs::fstat(&fd)?;
        let id = (st.st_dev, st.st_ino);
        let version = Version {
            mtime: (st.st_mtime, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime, st.st_ctime_nsec as i64),
        };
        let names = match self.kept(id, version) {
            Some(names) => names,
            None => {
                let (names, plain) = scan(root, dir, &rel, &fd)?;
                let names = Arc::new(names);
                if self.keep && plain && names.len() >= MIN_KEPT_ENTRIES && settled(version) {
                    self.keep(id, version, names.clone());
                }
                names
            }
        };
        let mut out = Vec::with_capacity(limit.min(names.len()));
        for i in names.first_from(from)..names.len() {
            if out.len() >= limit {
                break;
            }
            let key = names.get(i);
            let (name, want) = match key.strip_suffix('/') {
                Some(n) => (n, EntryKind::Dir),
                None => (key, EntryKind::File),
            };
            // Gone since the names were read, or no longer of the kind it was sorted as: the
            // directory changed, and the next page reads it again.
            match entry_stat(root, &rel, &fd, dir, name) {
                Some(stat) if stat.kind == want => out.push(DirEntry {
                    name: name.to_owned(),
                    stat,
                }),
                _ => {}
            }
        }
        Ok(out)
    }

    fn kept(&self, id: (u64, u64), version: Version) -> Option<Arc<Names>> {
        if !self.keep {
            return None;
        }
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

    fn keep(&self, id: (u64, u64), version: Version, names: Arc<Names>) {
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
}

fn settled(v: Version) -> bool {
    let Ok(now) = SystemTime::now().duration_since(UNIX_EPOCH) else {
        return false;
    };
    let cutoff = now.saturating_sub(SETTLED);
    let at = |(s, ns): (i64, i64)| Duration::new(s.max(0) as u64, ns.clamp(0, 999_999_999) as u32);
    at(v.mtime) <= cutoff && at(v.ctime) <= cutoff
}

/// Reads `dir`'s names and kinds, sorted by sort key, without the hidden staging directory and
/// names that are not UTF-8. `plain` is false when a symlink was among them: its kind follows
/// its target, which can change without the directory changing, so such a directory is not
/// kept.
fn scan(root: &OwnedFd, dir: &[String], rel: &str, fd: &OwnedFd) -> Result<(Names, bool)> {
    let mut keys = Vec::new();
    let mut plain = true;
    let mut d = rustix::fs::Dir::read_from(fd)?;
    while let Some(ent) = d.read() {
        let ent = ent?;
        let Ok(name) = ent.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." || layout::is_hidden(dir, name) {
            continue;
        }
        let kind = match ent.file_type() {
            FileType::RegularFile => Some(EntryKind::File),
            FileType::Directory => Some(EntryKind::Dir),
            FileType::Symlink => {
                plain = false;
                resolve_link(root, rel, dir, name).map(|s| s.kind)
            }
            // No type in the directory entry (some file systems): ask the inode.
            FileType::Unknown => match rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::Symlink => {
                    plain = false;
                    resolve_link(root, rel, dir, name).map(|s| s.kind)
                }
                Ok(st) => to_stat(&st).map(|s| s.kind),
                Err(_) => None,
            },
            _ => None,
        };
        match kind {
            Some(EntryKind::Dir) => keys.push(format!("{name}/")),
            Some(EntryKind::File) => keys.push(name.to_owned()),
            None => {}
        }
    }
    keys.sort_unstable();
    Ok((Names::from_sorted(&keys), plain))
}

/// The stat of entry `name`; a symlink's is its target's, if the target stays in the folder.
fn entry_stat(root: &OwnedFd, rel: &str, fd: &OwnedFd, dir: &[String], name: &str) -> Option<Stat> {
    let st = rustix::fs::statat(fd, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
        return resolve_link(root, rel, dir, name);
    }
    to_stat(&st)
}

/// A symlink resolves from the folder root, so links to siblings work and links leading out
/// are dropped.
fn resolve_link(root: &OwnedFd, rel: &str, dir: &[String], name: &str) -> Option<Stat> {
    let full = if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{rel}/{name}")
    };
    let target = open_beneath(root, &full, OFlags::PATH).ok()?;
    rustix::fs::fstat(&target).ok().and_then(|st| to_stat(&st))
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

    fn kept_dirs(p: &DirPages) -> usize {
        p.table.lock().unwrap().by_dir.len()
    }

    /// Names are kept once the directory has settled and dropped when it changes; what pages
    /// return is the same either way.
    #[test]
    fn names_are_kept_for_settled_large_directories_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = super::super::fs::open_dir_path(tmp.path()).unwrap();
        let d = tmp.path().join("big");
        std::fs::create_dir(&d).unwrap();
        for i in 0..MIN_KEPT_ENTRIES {
            std::fs::write(d.join(format!("{i:05}")), b"x").unwrap();
        }
        std::fs::write(tmp.path().join("small"), b"x").unwrap();
        let pages = DirPages::new(true);
        let big = vec!["big".to_owned()];
        let first = pages.page(&root, &big, "", 10).unwrap();
        assert_eq!(first.len(), 10);
        assert_eq!(kept_dirs(&pages), 0, "a directory changed just now is not kept");

        std::thread::sleep(SETTLED + Duration::from_millis(100));
        assert_eq!(pages.page(&root, &big, "", 10).unwrap().len(), 10);
        assert_eq!(pages.page(&root, &[], "", 10).unwrap().len(), 2);
        assert_eq!(
            kept_dirs(&pages),
            1,
            "the large settled directory is kept, the small root not"
        );
        let page = pages.page(&root, &big, "00998", 10).unwrap();
        assert_eq!(
            page.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(),
            ["00998", "00999"]
        );

        std::fs::remove_file(d.join("00999")).unwrap();
        let page = pages.page(&root, &big, "00998", 10).unwrap();
        assert_eq!(page.iter().map(|e| e.name.as_str()).collect::<Vec<_>>(), ["00998"]);
        assert_eq!(
            kept_dirs(&pages),
            0,
            "changed, so read again and not kept until it settles"
        );

        let off = DirPages::new(false);
        off.page(&root, &big, "", 10).unwrap();
        assert_eq!(kept_dirs(&off), 0);
    }
}
