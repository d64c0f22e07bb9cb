//! The POSIX backend: folders are directories on any mounted file system.
//!
//! Containment is race-free: every lookup resolves beneath the folder's directory handle with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, and every change (`mkdirat`, `renameat`,
//! `unlinkat`) names a single entry relative to a directory handle obtained that way. A symlink
//! inside a folder works if it stays inside; one that leads out is refused by the kernel (`EXDEV`),
//! not by a string check that could race with a rename.
//!
//! Blocking system calls run on tokio's blocking pool, except those that cannot block: reads of
//! what the page cache holds (`RWF_NOWAIT`) and, on local disk file systems, opens and stats
//! whose whole path is in the dentry cache (`RESOLVE_CACHED`).

use std::fs::File;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use penstock_types::UploadId;
use rustix::fs::{AtFlags, OFlags};
use rustix::io::Errno;

use crate::layout::{self, check_version_name, MARKERS_DIR, TMP_DIR, UPLOADS_DIR, VERSIONS_DIR};
use crate::volume::{DirEntry, EntryKind, Folder, IoObserver, ReadHandle, StagingFile, Stat, Volume};
use crate::{BackendError, FolderLocation, ObjectPath, Result, SweepRule};

use fs::{
    absent_is_none, ensure_dir, is_local_fs, join_or_dot, kind_of, make_marker_dir, open_beneath, open_beneath_cached,
    open_dir_path, stat_fd, to_stat, DirSyncs, PosixDirs,
};
pub use fs::{create_dir_all_durably, write_file_durably};
use read::PosixReader;
use recycle::{dir_key, Recycled};
use staging::PosixStaging;

mod fs;
mod listing;
mod read;
mod recycle;
mod staging;
#[cfg(test)]
mod tests;

/// Payloads of at least this many bytes are staged with direct writes unless configured otherwise.
pub const DEFAULT_DIRECT_WRITES_FROM: u64 = 8 << 20;

/// A volume rooted at a local directory.
pub struct PosixVolume {
    name: String,
    root: PathBuf,
    io: Arc<Io>,
    direct_from: Option<u64>,
    handles: FolderHandles,
}

/// How long an opened folder's directory handle is reused. Every request opens its bucket's
/// folder, and the `open` costs a trip to the blocking pool; reusing the handle briefly removes
/// that trip from almost all requests, while a folder directory replaced behind the gateway's
/// back (not through it: deletes here drop the handle) is picked up within this time.
const HANDLE_TTL: std::time::Duration = std::time::Duration::from_secs(2);

/// Recently opened folder directory handles, by folder path.
#[derive(Default)]
struct FolderHandles(std::sync::Mutex<std::collections::HashMap<PathBuf, (Arc<OwnedFd>, std::time::Instant)>>);

impl FolderHandles {
    fn get(&self, dir: &Path) -> Option<Arc<OwnedFd>> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(dir)
            .filter(|(_, at)| at.elapsed() < HANDLE_TTL)
            .map(|(fd, _)| fd.clone())
    }

    fn put(&self, dir: PathBuf, fd: Arc<OwnedFd>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if map.len() >= 4096 {
            map.retain(|_, (_, at)| at.elapsed() < HANDLE_TTL);
        }
        map.insert(dir, (fd, std::time::Instant::now()));
    }

    fn forget(&self, dir: &Path) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).remove(dir);
    }
}

/// Runs blocking file-system calls on tokio's blocking pool, inside a tracing span, reporting
/// each call's duration to the volume's observer.
struct Io {
    volume: String,
    observer: Option<Arc<dyn IoObserver>>,
    dir_syncs: DirSyncs,
    recycled: Recycled,
    /// Whether opens and stats may first be tried on the calling task (see
    /// [`PosixFolder::lookup`]).
    inline_lookups: bool,
    /// Directory names kept for listings (kept only where lookups are local, see `listing`).
    pages: listing::DirPages,
}

impl Io {
    fn new(volume: &str, observer: Option<Arc<dyn IoObserver>>, recycled: Recycled, inline_lookups: bool) -> Self {
        Self {
            volume: volume.to_owned(),
            observer,
            dir_syncs: DirSyncs::default(),
            recycled,
            inline_lookups,
            pages: listing::DirPages::new(inline_lookups),
        }
    }

    /// Runs a write that is safe to repeat; when the file system (or the user's disk quota) is
    /// full and kept files held space, frees them and runs it once more.
    fn with_space<T>(&self, mut write: impl FnMut() -> Result<T>) -> Result<T> {
        match write() {
            Err(BackendError::Io(e))
                if matches!(e.raw_os_error(), Some(libc::ENOSPC | libc::EDQUOT)) && self.recycled.release() > 0 =>
            {
                write()
            }
            r => r,
        }
    }

    async fn run<T: Send + 'static>(
        &self,
        op: &'static str,
        f: impl FnOnce() -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let span = tracing::debug_span!("backend", volume = %self.volume, op);
        let start = std::time::Instant::now();
        let r = tokio::task::spawn_blocking(move || span.in_scope(f))
            .await
            .map_err(|e| BackendError::Io(std::io::Error::other(e)))?;
        if let Some(o) = &self.observer {
            o.observe(&self.volume, op, start.elapsed());
        }
        r
    }
}

impl PosixVolume {
    /// Opens (creating if needed) the volume rooted at `root`.
    pub fn open(name: &str, root: &Path) -> Result<Self> {
        create_dir_all_durably(root)?;
        Ok(Self {
            name: name.to_owned(),
            root: root.canonicalize()?,
            io: Arc::new(Io::new(name, None, Recycled::for_volume(root), is_local_fs(root))),
            direct_from: Some(DEFAULT_DIRECT_WRITES_FROM),
            handles: FolderHandles::default(),
        })
    }

    /// Stages payloads whose declared size is at least `from` bytes with `O_DIRECT` writes
    /// (`None`: never). Large uploads then skip the copy into the page cache and its later
    /// writeback, and reach the disk while they arrive instead of all at the final fsync; the
    /// cost is that a fresh object is read from disk, not memory, the first time.
    pub fn with_direct_writes_from(mut self, from: Option<u64>) -> Self {
        self.direct_from = from;
        self
    }

    /// Reports the duration of every storage operation to `observer`.
    pub fn with_observer(mut self, observer: Arc<dyn IoObserver>) -> Self {
        self.io = Arc::new(Io::new(
            &self.name,
            Some(observer),
            Recycled::new(self.io.recycled.budget),
            self.io.inline_lookups,
        ));
        self
    }
}

#[async_trait]
impl Volume for PosixVolume {
    fn name(&self) -> &str {
        &self.name
    }

    async fn create_folder(&self, loc: &FolderLocation) -> Result<()> {
        let dir = self.root.join(loc.relative_path());
        self.handles.forget(&dir);
        let io = self.io.clone();
        self.io
            .run("create_folder", move || {
                // Every new level is synced into its parent: the bucket is acknowledged once
                // this returns, and its folder must not vanish in a power cut.
                let parent = dir.parent().expect("folder paths have parents");
                create_dir_all_durably(parent)?;
                let parent = open_dir_path(parent)?;
                let leaf = dir.file_name().expect("folder paths end in a name").to_string_lossy();
                if !io.dir_syncs.make_dir(&parent, &leaf)? {
                    return Err(BackendError::FolderExists(dir.display().to_string()));
                }
                let root = open_dir_path(&dir)?;
                ensure_dir(&root, &TMP_DIR, Some(&io.dir_syncs))?;
                ensure_dir(&root, &UPLOADS_DIR, Some(&io.dir_syncs))?;
                Ok(())
            })
            .await
    }

    async fn open_folder(&self, loc: &FolderLocation) -> Result<Arc<dyn Folder>> {
        let dir = self.root.join(loc.relative_path());
        let root = match self.handles.get(&dir) {
            Some(fd) => fd,
            None => {
                let d = dir.clone();
                let fd = Arc::new(self.io.run("open_folder", move || open_dir_path(&d)).await?);
                self.handles.put(dir, fd.clone());
                fd
            }
        };
        Ok(Arc::new(PosixFolder {
            root,
            io: self.io.clone(),
            direct_from: self.direct_from,
        }))
    }

    async fn check(&self) -> Result<()> {
        let root = self.root.clone();
        self.io
            .run("check", move || {
                let fd = open_dir_path(&root)?;
                rustix::fs::fstat(&fd)?;
                Ok(())
            })
            .await
    }

    async fn delete_folder(&self, loc: &FolderLocation) -> Result<()> {
        let dir = self.root.join(loc.relative_path());
        self.handles.forget(&dir);
        let volume_root = self.root.clone();
        let d = dir.clone();
        let io = self.io.clone();
        let r = self
            .io
            .run("delete_folder", move || {
                let dir = d;
                let dirs = PosixDirs {
                    top: Arc::new(open_dir_path(&dir)?),
                };
                if !fs::walk(layout::is_empty(&dirs))? {
                    return Err(BackendError::FolderNotEmpty);
                }
                // Its kept files go with the staging directory.
                if let Ok(tmp) = open_beneath(&dirs.top, &layout::rel(&TMP_DIR), OFlags::RDONLY | OFlags::DIRECTORY) {
                    if let Ok(key) = dir_key(&tmp) {
                        io.recycled.forget(key);
                    }
                }
                fs::walk(layout::remove_hidden(&dirs))?;
                drop(dirs);
                std::fs::remove_dir(&dir)?;
                // The two hash levels above the folder are shared with other folders; remove them only
                // when this was the last one, and never the scope directory or the volume root.
                let mut p = dir.parent();
                for _ in 0..2 {
                    match p {
                        Some(d) if d != volume_root && std::fs::remove_dir(d).is_ok() => p = d.parent(),
                        _ => break,
                    }
                }
                Ok(())
            })
            .await;
        // A request that opened the folder while it was being removed must not leave its
        // handle behind.
        self.handles.forget(&dir);
        r
    }
}

/// A folder opened by its directory handle.
pub struct PosixFolder {
    root: Arc<OwnedFd>,
    io: Arc<Io>,
    direct_from: Option<u64>,
}

impl PosixFolder {
    fn dirs(&self) -> PosixDirs {
        PosixDirs { top: self.root.clone() }
    }

    /// Opens `rel` beneath the folder with `flags` and hands the descriptor to `found`; `None`
    /// when nothing is there. On a local file system the open is first tried on the calling
    /// task with `RESOLVE_CACHED`, which fails with `EAGAIN` unless every path component is in
    /// the dentry cache, before anything could wait; there an open or `fstat` of a cached entry
    /// does no I/O. Otherwise (not cached, a network or unknown file system, a kernel without
    /// the flag: `EINVAL`) it runs on the blocking pool. A small GET made two pool trips (open,
    /// record) for microseconds of work, and the handoffs were a third of the gateway's CPU
    /// samples (docs/benchmarks.md).
    async fn lookup<T: Send + 'static>(
        &self,
        op: &'static str,
        rel: String,
        flags: OFlags,
        found: fn(OwnedFd) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        if self.io.inline_lookups {
            let start = std::time::Instant::now();
            let answered = match open_beneath_cached(&self.root, &rel, flags) {
                Ok(fd) => Some(found(fd)),
                Err(Errno::AGAIN | Errno::INVAL) => None,
                // Absence is known from a cached negative entry as surely as from the disk.
                Err(e) => Some(absent_is_none(e)),
            };
            if let Some(r) = answered {
                if let (Ok(_), Some(o)) = (&r, &self.io.observer) {
                    o.observe(&self.io.volume, op, start.elapsed());
                }
                return r;
            }
        }
        let root = self.root.clone();
        self.io
            .run(op, move || match open_beneath(&root, &rel, flags) {
                Ok(fd) => found(fd),
                Err(e) => absent_is_none(e),
            })
            .await
    }

    /// Opens the regular file at `rel` (beneath the folder) for reading; `None` when absent or
    /// not a regular file.
    async fn open_file(&self, op: &'static str, rel: String) -> Result<Option<Box<dyn ReadHandle>>> {
        let opened = self
            .lookup(op, rel, OFlags::RDONLY, |fd| {
                let stat = stat_fd(&fd)?;
                Ok((stat.kind == EntryKind::File).then(|| (Arc::new(File::from(fd)), stat)))
            })
            .await?;
        Ok(opened.map(|(file, stat)| {
            Box::new(PosixReader {
                file,
                stat,
                io: self.io.clone(),
            }) as Box<dyn ReadHandle>
        }))
    }
}

#[async_trait]
impl Folder for PosixFolder {
    async fn stat(&self, path: &ObjectPath) -> Result<Option<Stat>> {
        self.lookup("stat", path.rel(), OFlags::PATH, |fd| stat_fd(&fd).map(Some))
            .await
    }

    /// One trip to the blocking pool for all of `paths`: each parent directory is opened once
    /// (beneath the folder, as [`stat`](Folder::stat) resolves it) and each entry is `stat`ed
    /// relative to it, where `stat` would open every path from the folder root and close it.
    /// A symlink is followed as `stat` follows it, through the folder root.
    async fn stat_many(&self, paths: &[ObjectPath]) -> Result<Vec<Option<Stat>>> {
        if paths.len() < 2 {
            return crate::volume::stat_each(self, paths).await;
        }
        let root = self.root.clone();
        let wanted: Vec<(String, String, String)> = paths
            .iter()
            .map(|p| (join_or_dot(p.parent()), p.leaf().to_owned(), p.rel()))
            .collect();
        self.io
            .run("stat_many", move || {
                let mut out = Vec::with_capacity(wanted.len());
                // The parent directory opened last, `None` when it is not there.
                let mut dir: Option<(String, Option<OwnedFd>)> = None;
                for (parent, leaf, rel) in wanted {
                    if dir.as_ref().is_none_or(|(p, _)| *p != parent) {
                        let fd = match open_beneath(&root, &parent, OFlags::PATH | OFlags::DIRECTORY) {
                            Ok(fd) => Some(fd),
                            Err(e) => absent_is_none::<()>(e).map(|_| None)?,
                        };
                        dir = Some((parent, fd));
                    }
                    let Some((_, Some(fd))) = &dir else {
                        out.push(None);
                        continue;
                    };
                    let st = match rustix::fs::statat(fd, leaf.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => st,
                        Err(e) => {
                            out.push(absent_is_none(e)?);
                            continue;
                        }
                    };
                    let found = if rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::Symlink {
                        match open_beneath(&root, &rel, OFlags::PATH) {
                            Ok(fd) => Some(stat_fd(&fd)?),
                            Err(e) => absent_is_none(e)?,
                        }
                    } else {
                        Some(to_stat(&st).ok_or_else(|| std::io::Error::other("not a regular file or directory"))?)
                    };
                    out.push(found);
                }
                Ok(out)
            })
            .await
    }

    async fn open_read(&self, path: &ObjectPath) -> Result<Option<Box<dyn ReadHandle>>> {
        self.open_file("open_read", path.rel()).await
    }

    async fn create_staging(&self, size_hint: Option<u64>) -> Result<Box<dyn StagingFile>> {
        let root = self.root.clone();
        let io = self.io.clone();
        let direct = matches!((size_hint, self.direct_from), (Some(n), Some(from)) if n >= from);
        Ok(Box::new(PosixStaging::new(root, io, direct, size_hint)))
    }

    async fn compose_parts(&self, upload_id: &UploadId, parts: &[u32]) -> Result<(Box<dyn StagingFile>, Vec<Stat>)> {
        let root = self.root.clone();
        let upload_dir = layout::rel(&layout::upload_dir(upload_id));
        let parts = parts.to_vec();
        let io = self.io.clone();
        let staging = self
            .io
            .run("compose_parts", move || {
                let mut staging = PosixStaging::create(root.clone(), io, false, None)?;
                let file = staging.file();
                let mut out: &File = &file;
                let mut stats = Vec::with_capacity(parts.len());
                for part in parts {
                    let fd = match open_beneath(
                        &root,
                        &format!("{upload_dir}/{}", layout::part_name(part)),
                        OFlags::RDONLY,
                    ) {
                        Ok(fd) => fd,
                        Err(Errno::NOENT) => return Err(BackendError::PartNotFound(part)),
                        Err(e) => return Err(e.into()),
                    };
                    stats.push(stat_fd(&fd)?);
                    // std::io::copy between files uses copy_file_range, so no bytes cross user space.
                    staging.len += std::io::copy(&mut File::from(fd), &mut out)?;
                }
                Ok((staging, stats))
            })
            .await?;
        Ok((Box::new(staging.0), staging.1))
    }

    async fn make_dir(&self, path: &ObjectPath, durable: bool) -> Result<()> {
        let (dirs, io) = (self.dirs(), self.io.clone());
        let segs = path.segments().to_vec();
        let body = path.marker_name();
        self.io
            .run("make_dir", move || {
                make_marker_dir(&dirs.top, &segs, durable.then_some(&io.dir_syncs))?;
                if let Some(name) = body {
                    fs::walk(layout::remove_marker_body(&dirs, &name))?;
                }
                Ok(())
            })
            .await
    }

    async fn open_marker(&self, path: &ObjectPath) -> Result<Option<Box<dyn ReadHandle>>> {
        let Some(name) = path.marker_name() else {
            return Ok(None);
        };
        self.open_file("open_marker", format!("{}/{name}", layout::rel(&MARKERS_DIR)))
            .await
    }

    async fn remove(&self, path: &ObjectPath, keep_depth: usize, durable: bool) -> Result<bool> {
        let (dirs, io) = (self.dirs(), self.io.clone());
        let path = path.clone();
        self.io
            .run("remove", move || {
                // A marker's body goes even when its directory stays (it holds other objects)
                // or is already gone.
                let body_removed = match path.marker_name() {
                    Some(name) => fs::walk(layout::remove_marker_body(&dirs, &name))?,
                    None => false,
                };
                let parent = match open_beneath(
                    &dirs.top,
                    &join_or_dot(path.parent()),
                    OFlags::RDONLY | OFlags::DIRECTORY,
                ) {
                    Ok(fd) => fd,
                    Err(e) => return absent_is_none(e).map(|_: Option<()>| body_removed),
                };
                let removed = if path.is_dir() {
                    match rustix::fs::unlinkat(&parent, path.leaf(), AtFlags::REMOVEDIR) {
                        Ok(()) => true,
                        Err(Errno::NOENT | Errno::NOTEMPTY | Errno::EXIST | Errno::NOTDIR) => false,
                        Err(e) => return Err(e.into()),
                    }
                } else {
                    match rustix::fs::statat(&parent, path.leaf(), AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) if kind_of(&st) == Some(EntryKind::Dir) => false,
                        Ok(_) => match rustix::fs::unlinkat(&parent, path.leaf(), AtFlags::empty()) {
                            Ok(()) => true,
                            Err(Errno::NOENT) => false,
                            Err(e) => return Err(e.into()),
                        },
                        Err(Errno::NOENT) => false,
                        Err(e) => return Err(e.into()),
                    }
                };
                if removed {
                    if durable {
                        // An acknowledged delete must not come back after a power cut.
                        io.dir_syncs.sync_after_change(&parent)?;
                    }
                    fs::walk(layout::prune_empty(&dirs, path.parent(), keep_depth));
                }
                Ok(removed || body_removed)
            })
            .await
    }

    async fn read_dir(&self, dir: &[String]) -> Result<Vec<DirEntry>> {
        self.read_dir_from(dir, "", usize::MAX).await
    }

    async fn read_dir_from(&self, dir: &[String], from: &str, limit: usize) -> Result<Vec<DirEntry>> {
        let (root, io) = (self.root.clone(), self.io.clone());
        let (dir, from) = (dir.to_vec(), from.to_owned());
        self.io
            .run("read_dir", move || io.pages.page(&root, &dir, &from, limit))
            .await
    }

    async fn is_empty(&self) -> Result<bool> {
        let dirs = self.dirs();
        self.io.run("is_empty", move || fs::walk(layout::is_empty(&dirs))).await
    }

    async fn remove_upload(&self, upload_id: &UploadId) -> Result<()> {
        let (dirs, id) = (self.dirs(), upload_id.clone());
        self.io
            .run("remove_upload", move || fs::walk(layout::remove_upload(&dirs, &id)))
            .await
    }

    async fn sweep_staging(&self, rule: &SweepRule) -> Result<usize> {
        let (dirs, rule) = (self.dirs(), rule.clone());
        self.io
            .run("sweep_staging", move || fs::walk(layout::sweep_staging(&dirs, &rule)))
            .await
    }

    async fn usage(&self) -> Result<u64> {
        let dirs = self.dirs();
        self.io.run("usage", move || fs::walk(layout::usage(&dirs))).await
    }

    async fn keep_version(&self, path: &ObjectPath, name: &str, durable: bool) -> Result<Option<Stat>> {
        check_version_name(name)?;
        let (root, io, path, name) = (self.root.clone(), self.io.clone(), path.clone(), name.to_owned());
        self.io
            .run("keep_version", move || {
                let Some(parent) = key_file_parent(&root, &path)? else {
                    return Ok(None);
                };
                let versions = ensure_dir(&root, &VERSIONS_DIR, durable.then_some(&io.dir_syncs))?;
                // linkat does not follow a symlink at the key: only a regular file is kept.
                match rustix::fs::linkat(&parent, path.leaf(), &versions, name.as_str(), AtFlags::empty()) {
                    Ok(()) => {}
                    Err(Errno::NOENT) => return Ok(None),
                    Err(e) => return Err(e.into()),
                }
                if durable {
                    io.dir_syncs.sync_after_change(&versions)?;
                }
                let st = rustix::fs::statat(&versions, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                Ok(to_stat(&st))
            })
            .await
    }

    async fn stash_version(
        &self,
        path: &ObjectPath,
        name: &str,
        keep_depth: usize,
        durable: bool,
    ) -> Result<Option<Stat>> {
        check_version_name(name)?;
        let (dirs, io, path, name) = (self.dirs(), self.io.clone(), path.clone(), name.to_owned());
        self.io
            .run("stash_version", move || {
                let Some(parent) = key_file_parent(&dirs.top, &path)? else {
                    return Ok(None);
                };
                let versions = ensure_dir(&dirs.top, &VERSIONS_DIR, durable.then_some(&io.dir_syncs))?;
                match rustix::fs::renameat(&parent, path.leaf(), &versions, name.as_str()) {
                    Ok(()) => {}
                    Err(Errno::NOENT) => return Ok(None),
                    Err(e) => return Err(e.into()),
                }
                if durable {
                    io.dir_syncs.sync_after_change(&versions)?;
                    io.dir_syncs.sync_after_change(&parent)?;
                }
                let st = rustix::fs::statat(&versions, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                fs::walk(layout::prune_empty(&dirs, path.parent(), keep_depth));
                Ok(to_stat(&st))
            })
            .await
    }

    async fn restore_version(&self, name: &str, path: &ObjectPath, durable: bool) -> Result<bool> {
        check_version_name(name)?;
        if path.is_dir() {
            return Err(BackendError::IsDirectory);
        }
        let (root, io, path, name) = (self.root.clone(), self.io.clone(), path.clone(), name.to_owned());
        self.io
            .run("restore_version", move || {
                let Ok(versions) = open_beneath(&root, &layout::rel(&VERSIONS_DIR), OFlags::RDONLY | OFlags::DIRECTORY)
                else {
                    return Ok(false);
                };
                let segs: Vec<&str> = path.parent().iter().map(String::as_str).collect();
                // A concurrent delete may prune a parent between the mkdir and the rename.
                for _ in 0..5 {
                    let parent = ensure_dir(&root, &segs, durable.then_some(&io.dir_syncs))?;
                    if let Ok(st) = rustix::fs::statat(&parent, path.leaf(), AtFlags::SYMLINK_NOFOLLOW) {
                        if kind_of(&st) == Some(EntryKind::Dir) {
                            return Err(BackendError::IsDirectory);
                        }
                    }
                    match rustix::fs::renameat(&versions, name.as_str(), &parent, path.leaf()) {
                        Ok(()) => {
                            if durable {
                                io.dir_syncs.sync_after_change(&parent)?;
                                io.dir_syncs.sync_after_change(&versions)?;
                            }
                            return Ok(true);
                        }
                        Err(Errno::NOENT) => {
                            if rustix::fs::statat(&versions, name.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_err() {
                                return Ok(false);
                            }
                        }
                        Err(Errno::ISDIR | Errno::NOTEMPTY | Errno::EXIST) => return Err(BackendError::IsDirectory),
                        Err(Errno::NOTDIR) => return Err(BackendError::ParentIsFile),
                        Err(e) => return Err(e.into()),
                    }
                }
                Err(BackendError::Unavailable("parent directories kept vanishing".into()))
            })
            .await
    }

    async fn open_version(&self, name: &str) -> Result<Option<Box<dyn ReadHandle>>> {
        check_version_name(name)?;
        self.open_file("open_version", format!("{}/{name}", layout::rel(&VERSIONS_DIR)))
            .await
    }

    async fn remove_version(&self, name: &str) -> Result<bool> {
        let (dirs, name) = (self.dirs(), name.to_owned());
        self.io
            .run("remove_version", move || fs::walk(layout::remove_version(&dirs, &name)))
            .await
    }
}

/// The directory holding the regular file at `path` (a key that is not a marker); `None` when
/// no regular file is there (a symlink at the key is not one).
fn key_file_parent(root: &OwnedFd, path: &ObjectPath) -> Result<Option<OwnedFd>> {
    if path.is_dir() {
        return Ok(None);
    }
    let parent = match open_beneath(root, &join_or_dot(path.parent()), OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => fd,
        Err(e) => return absent_is_none(e),
    };
    match rustix::fs::statat(&parent, path.leaf(), AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) if kind_of(&st) == Some(EntryKind::File) => Ok(Some(parent)),
        Ok(_) | Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}
