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
///
/// It also keeps new directories' names durable: a directory made by `mkdirat` is reachable after
/// a power cut only once its parent is fsynced, and a writer that finds a directory another one
/// has just made (and not yet synced into its parent) must not acknowledge a write beneath it
/// before that sync. See [`DirSyncs::make_dir`] and [`DirSyncs::settle_path`].
#[derive(Default)]
pub(super) struct DirSyncs {
    dirs: std::sync::Mutex<std::collections::HashMap<(u64, u64), Arc<DirSync>>>,
    /// Directories being made: (the parent's (device, inode), the new name), registered before
    /// the `mkdirat` and dropped once the parent's fsync covered it.
    making: std::sync::Mutex<Vec<((u64, u64), String)>>,
    /// `making.len()`, read without the lock: a path walk checks the list only when it is not
    /// empty, which is almost never.
    making_n: std::sync::atomic::AtomicUsize,
}

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
            let mut map = self.dirs.lock().unwrap_or_else(|e| e.into_inner());
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

    /// Makes directory `name` in `parent` and, unless it was there already, syncs `parent` so
    /// that the new name survives a power cut. Answers whether it was made here. A directory
    /// that exists already (another writer made it a moment ago) is left to [`Self::settle_path`].
    pub(super) fn make_dir(&self, parent: &OwnedFd, name: &str) -> Result<bool> {
        let st = rustix::fs::fstat(parent)?;
        let entry = ((st.st_dev, st.st_ino), name.to_owned());
        {
            let mut making = self.making.lock().unwrap_or_else(|e| e.into_inner());
            making.push(entry.clone());
            self.making_n.store(making.len(), Ordering::SeqCst);
        }
        let made = match rustix::fs::mkdirat(parent, name, Mode::from_raw_mode(0o755)) {
            Ok(()) => self.sync_after_change(parent).map(|()| true),
            Err(Errno::EXIST) => Ok(false),
            Err(e) => Err(e.into()),
        };
        let mut making = self.making.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = making.iter().position(|e| *e == entry) {
            making.swap_remove(i);
        }
        self.making_n.store(making.len(), Ordering::SeqCst);
        made
    }

    /// Before a write beneath `segs` (under `root`) is acknowledged: every level of the path
    /// that another writer is making right now gets its parent synced here, since that writer's
    /// own sync may not have happened yet. Costs one atomic load when nobody is making a
    /// directory.
    pub(super) fn settle_path(&self, root: &OwnedFd, segs: &[&str]) -> Result<()> {
        if self.making_n.load(Ordering::SeqCst) == 0 {
            return Ok(());
        }
        // Only a directory of one of these names can be one of this path's levels.
        let named = {
            let making = self.making.lock().unwrap_or_else(|e| e.into_inner());
            making.iter().any(|(_, n)| segs.contains(&n.as_str()))
        };
        if !named {
            return Ok(());
        }
        let mut cur = open_beneath(root, ".", OFlags::RDONLY | OFlags::DIRECTORY)?;
        for seg in segs {
            let st = rustix::fs::fstat(&cur)?;
            let key = (st.st_dev, st.st_ino);
            let pending = {
                let making = self.making.lock().unwrap_or_else(|e| e.into_inner());
                making.iter().any(|(k, n)| *k == key && n == seg)
            };
            if pending {
                // The directory exists (this writer found it), so a sync starting now covers it.
                self.sync_after_change(&cur)?;
            }
            cur = match open_beneath(&cur, seg, OFlags::RDONLY | OFlags::DIRECTORY) {
                Ok(fd) => fd,
                // Pruned since the caller opened it: the caller's rename fails and makes the
                // path again, settling it then.
                Err(Errno::NOENT | Errno::NOTDIR) => return Ok(()),
                Err(e) => return Err(e.into()),
            };
        }
        Ok(())
    }
}

/// Writes a small file whole, so that after a power cut it is either absent (or, with `replace`,
/// its previous content) or all of `content`, never empty or cut short: the bytes go to a
/// temporary file beside it, which is fsynced, then put in place, and the directory is fsynced.
/// Without `replace` an existing file is an `AlreadyExists` error, as `create_new` opens.
/// The file gets permission bits `mode` (before the umask).
pub fn write_file_durably(path: &Path, content: &[u8], mode: u32, replace: bool) -> std::io::Result<()> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut tmp_name = path.file_name().unwrap_or_default().to_owned();
    tmp_name.push(format!(".tmp-{}", std::process::id()));
    let tmp = dir.join(tmp_name);
    let written = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(mode)
            .open(&tmp)?;
        f.write_all(content)?;
        f.sync_all()
    })();
    let placed = written.and_then(|()| {
        if replace {
            std::fs::rename(&tmp, path)
        } else {
            std::fs::hard_link(&tmp, path)
        }
    });
    if !replace || placed.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    placed?;
    std::fs::File::open(dir)?.sync_all()
}

/// Creates `path` and any missing parents, syncing the parent of each directory made so that
/// the new names survive a power cut (`std::fs::create_dir_all` leaves them in the page cache).
/// For the data directory, the metadata store's directory, volume roots and folders, which are
/// made once and must not vanish after the write that needed them was acknowledged.
pub fn create_dir_all_durably(path: &Path) -> std::io::Result<()> {
    let mut missing = Vec::new();
    let mut cur = path;
    while std::fs::symlink_metadata(cur).is_err() {
        missing.push(cur);
        match cur.parent() {
            Some(p) if !p.as_os_str().is_empty() => cur = p,
            _ => break,
        }
    }
    for dir in missing.into_iter().rev() {
        match std::fs::create_dir(dir) {
            Ok(()) => {
                let parent = dir
                    .parent()
                    .filter(|p| !p.as_os_str().is_empty())
                    .unwrap_or(Path::new("."));
                std::fs::File::open(parent)?.sync_all()?;
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    if !std::fs::metadata(path)?.is_dir() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AlreadyExists,
            format!("{} is not a directory", path.display()),
        ));
    }
    Ok(())
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

/// Opens the directory `segs` beneath `root`, creating missing levels. With `syncs` (durable
/// writes), each level made is synced into its parent and levels another writer is making are
/// settled ([`DirSyncs`]), so a write beneath them can be acknowledged.
pub(super) fn ensure_dir(root: &OwnedFd, segs: &[&str], syncs: Option<&DirSyncs>) -> Result<OwnedFd> {
    let dir_flags = OFlags::RDONLY | OFlags::DIRECTORY;
    let rel = if segs.is_empty() {
        ".".to_owned()
    } else {
        segs.join("/")
    };
    match open_beneath(root, &rel, dir_flags) {
        Ok(fd) => {
            if let Some(syncs) = syncs {
                syncs.settle_path(root, segs)?;
            }
            return Ok(fd);
        }
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
                match syncs {
                    Some(syncs) => {
                        syncs.make_dir(&cur, seg)?;
                    }
                    None => match rustix::fs::mkdirat(&cur, *seg, Mode::from_raw_mode(0o755)) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(e) => return Err(e.into()),
                    },
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
    if let Some(syncs) = syncs {
        // Levels found on the way may be another writer's, made and not yet synced.
        syncs.settle_path(root, segs)?;
    }
    Ok(cur)
}

/// Makes the directory of a marker key and its parents; a file at the key is `IsFile`. With
/// `syncs`, as [`ensure_dir`]: the new directory's name is durable before this returns.
pub(super) fn make_marker_dir(root: &OwnedFd, segs: &[String], syncs: Option<&DirSyncs>) -> Result<()> {
    let (leaf, parent) = segs.split_last().expect("non-empty path");
    let parent: Vec<&str> = parent.iter().map(String::as_str).collect();
    let dir = ensure_dir(root, &parent, syncs)?;
    let made = match syncs {
        Some(syncs) => syncs.make_dir(&dir, leaf),
        None => match rustix::fs::mkdirat(&dir, leaf.as_str(), Mode::from_raw_mode(0o755)) {
            Ok(()) => Ok(true),
            Err(Errno::EXIST) => Ok(false),
            Err(e) => Err(e.into()),
        },
    }?;
    if made {
        return Ok(());
    }
    match rustix::fs::statat(&dir, leaf.as_str(), AtFlags::empty()) {
        Ok(st) if kind_of(&st) == Some(EntryKind::Dir) => {
            if let Some(syncs) = syncs {
                let mut all = parent;
                all.push(leaf);
                syncs.settle_path(root, &all)?;
            }
            Ok(())
        }
        _ => Err(BackendError::IsFile),
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
