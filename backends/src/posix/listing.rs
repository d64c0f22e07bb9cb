//! Pages of a directory for listings: the names are read and sorted without a stat each, only
//! the entries a page returns are stat'ed, and the names of large directories that have settled
//! are kept (`crate::listing`), so paging through a directory of a million files reads it once
//! instead of once per page.

use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use rustix::fs::{AtFlags, FileType, OFlags};
use rustix::io::Errno;

use super::fs::{join_or_dot, open_beneath, to_stat};
use crate::layout;
use crate::listing::{KeptNames, Names, Version, MIN_KEPT_ENTRIES, SETTLED};
use crate::volume::{DirEntry, EntryKind, Stat};
use crate::Result;

/// Keeps the names of large directories that have settled, for the listings of one volume.
pub(super) struct DirPages {
    /// Off where a directory's times cannot be trusted to move with every change seen here (a
    /// network file system's cached attributes): then every page reads the names again.
    keep: bool,
    names: KeptNames,
}

impl DirPages {
    pub(super) fn new(keep: bool) -> Self {
        Self {
            keep,
            names: KeptNames::default(),
        }
    }

    /// The entries of `dir` (segments from the folder `root`) whose sort keys are at or after
    /// `from`, in S3 key order, at most `limit`, each with its stat (`Folder::read_dir_from`).
    /// Runs on a blocking thread.
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
        let kept = if self.keep { self.names.kept(id, version) } else { None };
        let names = match kept {
            Some(names) => names,
            None => {
                let (names, plain) = scan(root, dir, &rel, &fd)?;
                let names = Arc::new(names);
                // This machine's clock stamps a local file system's times: a directory whose
                // times are SETTLED old has seen no change since, and any change from now on
                // moves them.
                if self.keep && plain && names.len() >= MIN_KEPT_ENTRIES && settled(version) {
                    self.names.keep(id, version, names.clone());
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
        if layout::is_hidden(dir, name) {
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

    fn kept_dirs(p: &DirPages) -> usize {
        p.names.kept_dirs()
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
