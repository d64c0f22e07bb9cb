//! Single-entry file-system calls beneath a folder's directory handle, and the folder's
//! [`DirOps`] for the walks of [`layout`](crate::layout).

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use async_trait::async_trait;
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::layout::{self, DirOps, WalkEntry};
use crate::volume::{EntryKind, Stat};
use crate::{BackendError, Result};

/// Group commit for directory fsyncs. Writers that publish into the same directory each need
/// their rename durable, but one fsync that starts after several renames completed covers them
/// all: a writer whose rename an fsync already covered returns without issuing its own.
#[derive(Default)]
pub(super) struct DirSyncs(std::sync::Mutex<std::collections::HashMap<(u64, u64), Arc<DirSync>>>);

#[derive(Default)]
pub(super) struct DirSync {
    /// Changes (renames) completed in the directory so far.
    changed: std::sync::atomic::AtomicU64,
    /// Held while an fsync runs; holds how many changes the last successful fsync covered.
    synced: std::sync::Mutex<u64>,
}

impl DirSyncs {
    /// Makes every completed change in `dir` durable, including the caller's.
    pub(super) fn sync_after_change(&self, dir: &OwnedFd) -> Result<()> {
        let st = rustix::fs::fstat(dir)?;
        let ds = {
            let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
            if map.len() >= 1024 {
                map.retain(|_, d| Arc::strong_count(d) > 1);
            }
            map.entry((st.st_dev, st.st_ino)).or_default().clone()
        };
        let mine = ds.changed.fetch_add(1, Ordering::SeqCst) + 1;
        let mut synced = ds.synced.lock().unwrap_or_else(|e| e.into_inner());
        if *synced >= mine {
            return Ok(());
        }
        // Every change counted by now completed before this fsync starts, so it covers them.
        let upto = ds.changed.load(Ordering::SeqCst);
        rustix::fs::fsync(dir)?;
        *synced = upto;
        Ok(())
    }
}
pub(super) fn open_dir_path(dir: &Path) -> Result<OwnedFd> {
    match rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT | Errno::NOTDIR) => Err(BackendError::FolderNotFound(dir.display().to_string())),
        Err(e) => Err(e.into()),
    }
}

pub(super) fn join_or_dot(segs: &[String]) -> String {
    if segs.is_empty() {
        ".".to_owned()
    } else {
        segs.join("/")
    }
}

/// Opens `rel` beneath `root`; symlinks are followed only while they stay inside.
pub(super) fn open_beneath(root: &OwnedFd, rel: &str, flags: OFlags) -> std::result::Result<OwnedFd, Errno> {
    rustix::fs::openat2(
        root,
        rel,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )
}

/// [`open_beneath`] only when the whole path is in the dentry cache: `EAGAIN` otherwise,
/// before anything could wait for the disk or the network (`RESOLVE_CACHED`, Linux 5.12;
/// older kernels refuse the flag with `EINVAL`, which callers treat as "not cached").
pub(super) fn open_beneath_cached(root: &OwnedFd, rel: &str, flags: OFlags) -> std::result::Result<OwnedFd, Errno> {
    rustix::fs::openat2(
        root,
        rel,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS | ResolveFlags::CACHED,
    )
}

/// Whether `path` is on a local disk file system, where opening and `fstat`ing an entry the
/// dentry cache holds does no I/O. Network and FUSE file systems may revalidate on open (NFS's
/// close-to-open check) or answer `fstat` from the server, so they are not listed; neither is
/// anything unknown.
pub(super) fn is_local_fs(path: &Path) -> bool {
    const LOCAL: &[u64] = &[
        0xEF53,      // ext2/3/4
        0x5846_5342, // xfs
        0x9123_683E, // btrfs
        0x0102_1994, // tmpfs
        0xF2F5_2010, // f2fs
        0x2FC1_2FC1, // zfs
        0xCA45_1A4E, // bcachefs
        0x794C_7630, // overlayfs
    ];
    rustix::fs::statfs(path).is_ok_and(|st| LOCAL.contains(&(st.f_type as u64)))
}

/// Maps "nothing there" errors to `None`; escape attempts to `Escapes`.
pub(super) fn absent_is_none<T>(e: Errno) -> Result<Option<T>> {
    match e {
        Errno::NOENT | Errno::NOTDIR | Errno::NAMETOOLONG => Ok(None),
        Errno::XDEV | Errno::LOOP => Err(BackendError::Escapes),
        e => Err(e.into()),
    }
}

/// Opens the directory `segs` beneath `root`, creating missing levels.
pub(super) fn ensure_dir(root: &OwnedFd, segs: &[&str]) -> Result<OwnedFd> {
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY;
    let rel = if segs.is_empty() {
        ".".to_owned()
    } else {
        segs.join("/")
    };
    match open_beneath(root, &rel, dir_flags) {
        Ok(fd) => return Ok(fd),
        Err(Errno::NOENT) => {}
        Err(Errno::NOTDIR) => return Err(BackendError::ParentIsFile),
        Err(Errno::XDEV | Errno::LOOP) => return Err(BackendError::Escapes),
        Err(e) => return Err(e.into()),
    }
    let mut cur = open_beneath(root, ".", dir_flags)?;
    for seg in segs {
        let next = match open_beneath(&cur, seg, dir_flags) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => {
                match rustix::fs::mkdirat(&cur, *seg, Mode::from_raw_mode(0o755)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(e.into()),
                }
                match open_beneath(&cur, seg, dir_flags) {
                    Ok(fd) => fd,
                    Err(Errno::NOTDIR) => return Err(BackendError::ParentIsFile),
                    Err(e) => return Err(e.into()),
                }
            }
            Err(Errno::NOTDIR) => return Err(BackendError::ParentIsFile),
            Err(Errno::XDEV | Errno::LOOP) => return Err(BackendError::Escapes),
            Err(e) => return Err(e.into()),
        };
        cur = next;
    }
    Ok(cur)
}

/// Makes the directory of a marker key and its parents; a file at the key is `IsFile`.
pub(super) fn make_marker_dir(root: &OwnedFd, segs: &[String]) -> Result<()> {
    let (leaf, parent) = segs.split_last().expect("non-empty path");
    let parent: Vec<&str> = parent.iter().map(String::as_str).collect();
    let dir = ensure_dir(root, &parent)?;
    match rustix::fs::mkdirat(&dir, leaf.as_str(), Mode::from_raw_mode(0o755)) {
        Ok(()) => Ok(()),
        Err(Errno::EXIST) => match rustix::fs::statat(&dir, leaf.as_str(), AtFlags::empty()) {
            Ok(st) if kind_of(&st) == Some(EntryKind::Dir) => Ok(()),
            _ => Err(BackendError::IsFile),
        },
        Err(e) => Err(e.into()),
    }
}

pub(super) fn kind_of(st: &rustix::fs::Stat) -> Option<EntryKind> {
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile => Some(EntryKind::File),
        rustix::fs::FileType::Directory => Some(EntryKind::Dir),
        _ => None,
    }
}

pub(super) fn to_stat(st: &rustix::fs::Stat) -> Option<Stat> {
    Some(Stat {
        kind: kind_of(st)?,
        size: st.st_size as u64,
        inode: st.st_ino,
        mtime_ns: mtime_ns(st),
    })
}

fn mtime_ns(st: &rustix::fs::Stat) -> i128 {
    st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128
}

pub(super) fn stat_fd(fd: &impl AsFd) -> Result<Stat> {
    let st = rustix::fs::fstat(fd)?;
    to_stat(&st).ok_or_else(|| std::io::Error::other("not a regular file or directory").into())
}

/// Runs a walk of [`layout`] over a POSIX folder, on the calling (blocking-pool) thread. The
/// directory operations of [`PosixDirs`] are plain system calls that never suspend, so one poll
/// finishes the walk.
pub(super) fn walk<T>(f: impl std::future::Future<Output = T>) -> T {
    futures::executor::block_on(f)
}

/// A POSIX folder's directory operations, beneath its directory handle.
pub(super) struct PosixDirs {
    pub(super) top: Arc<OwnedFd>,
}

/// Opens the directory `name` of `dir`, not following a symlink.
fn open_child_dir(dir: &OwnedFd, name: &str) -> Result<Option<OwnedFd>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT | Errno::NOTDIR | Errno::LOOP) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

#[async_trait]
impl DirOps for PosixDirs {
    type Dir = Arc<OwnedFd>;

    fn top(&self) -> Arc<OwnedFd> {
        self.top.clone()
    }

    async fn open_path(&self, segs: &[&str]) -> Result<Option<Arc<OwnedFd>>> {
        match open_beneath(&self.top, &layout::rel(segs), OFlags::RDONLY | OFlags::DIRECTORY) {
            Ok(fd) => Ok(Some(Arc::new(fd))),
            Err(e) => absent_is_none(e),
        }
    }

    async fn open_child(&self, dir: &Arc<OwnedFd>, name: &str) -> Result<Option<Arc<OwnedFd>>> {
        Ok(open_child_dir(dir, name)?.map(Arc::new))
    }

    async fn entries(&self, dir: &Arc<OwnedFd>) -> Result<Vec<WalkEntry>> {
        let mut out = Vec::new();
        let mut d = rustix::fs::Dir::read_from(&**dir)?;
        while let Some(ent) = d.read() {
            let ent = ent?;
            let Ok(name) = ent.file_name().to_str() else { continue };
            if name == "." || name == ".." {
                continue;
            }
            // Gone since it was listed: nothing to count or remove.
            let Ok(st) = rustix::fs::statat(&**dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
                continue;
            };
            out.push(WalkEntry {
                name: name.to_owned(),
                kind: kind_of(&st),
                size: st.st_size as u64,
                mtime_ns: mtime_ns(&st),
            });
        }
        Ok(out)
    }

    async fn remove_file(&self, dir: &Arc<OwnedFd>, name: &str) -> Result<bool> {
        match rustix::fs::unlinkat(&**dir, name, AtFlags::empty()) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }

    async fn remove_dir(&self, dir: &Arc<OwnedFd>, name: &str) -> Result<bool> {
        match rustix::fs::unlinkat(&**dir, name, AtFlags::REMOVEDIR) {
            Ok(()) => Ok(true),
            Err(Errno::NOENT | Errno::NOTEMPTY | Errno::EXIST) => Ok(false),
            Err(e) => Err(e.into()),
        }
    }
}
