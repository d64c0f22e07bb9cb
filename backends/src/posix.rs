//! The POSIX backend: folders are directories on any mounted file system.
//!
//! Containment is race-free: every lookup resolves beneath the folder's directory handle with
//! `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, and every change (`mkdirat`, `renameat`,
//! `unlinkat`) names a single entry relative to a directory handle obtained that way. A symlink
//! inside a folder works if it stays inside; one that leads out is refused by the kernel (`EXDEV`),
//! not by a string check that could race with a rename.
//!
//! Blocking system calls run on tokio's blocking pool.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use rustix::fs::{AtFlags, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use crate::volume::{DirEntry, EntryKind, Folder, IoObserver, ReadHandle, StagingFile, Stat, Volume};
use crate::{BackendError, FolderLocation, ObjectPath, Result, MARKERS_DIR, STAGING_DIR};

/// Staging writes are gathered into blocks of this size before each blocking (vectored) write.
const WRITE_BLOCK: usize = 1 << 20;

/// Size of the aligned blocks that carry direct (page-cache bypassing) staging writes.
const DIRECT_BLOCK: usize = 1 << 20;

/// Alignment of direct writes' buffers, lengths and offsets: the largest logical block size of
/// common devices, so one value serves every file system that accepts `O_DIRECT`.
const DIRECT_ALIGN: usize = 4096;

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
}

impl Io {
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

/// Group commit for directory fsyncs. Writers that publish into the same directory each need
/// their rename durable, but one fsync that starts after several renames completed covers them
/// all: a writer whose rename an fsync already covered returns without issuing its own.
#[derive(Default)]
struct DirSyncs(std::sync::Mutex<std::collections::HashMap<(u64, u64), Arc<DirSync>>>);

#[derive(Default)]
struct DirSync {
    /// Changes (renames) completed in the directory so far.
    changed: std::sync::atomic::AtomicU64,
    /// Held while an fsync runs; holds how many changes the last successful fsync covered.
    synced: std::sync::Mutex<u64>,
}

impl DirSyncs {
    /// Makes every completed change in `dir` durable, including the caller's.
    fn sync_after_change(&self, dir: &OwnedFd) -> Result<()> {
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

/// Replaced files that staging can reuse instead of creating new ones, by staging directory.
///
/// Overwriting an object by rename frees the old file's inode and every upload allocates a new
/// one. On ext4 without a journal, allocation skips each inode freed in the last minutes, reading
/// its inode-table block to tell: under a steady overwrite load that scan became the largest cost
/// of a small PUT (4 KiB PUT fell from ~3000 to ~1100 ops/s within a minute here). Publishing over
/// a file therefore swaps it out atomically (`RENAME_EXCHANGE`), and the old inode is kept for the
/// next staging file, unless anyone else has it open or it has other names: then it is
/// removed as before, so a reader of the old object keeps reading the old bytes. Kept files keep
/// their blocks within a small budget: the next upload of about that size overwrites them in
/// place (no block allocation, no discard of freed blocks, fewer metadata writes at fsync) and
/// seal cuts off what it did not overwrite. On this project's virtio disk that made 16 MiB
/// overwrites 1.4x faster: freeing and reallocating every byte kept the disk 99% busy with
/// 3 ms writes, half of its time on discards; in place it is 70% busy with 0.75 ms writes.
struct Recycled {
    kept: std::sync::Mutex<KeptFiles>,
    /// Bytes held by kept files across the volume, at most `budget`.
    bytes: std::sync::atomic::AtomicU64,
    /// Most bytes kept files may hold: they are invisible to users and to quotas.
    budget: u64,
}

/// Kept files by staging directory (device, inode).
type KeptFiles = std::collections::HashMap<(u64, u64), KeptDir>;

/// The kept files of one staging directory: name and the bytes each still holds.
struct KeptDir {
    dir: Arc<OwnedFd>,
    files: Vec<(String, u64)>,
}

/// Recycled files kept per staging directory.
const RECYCLED_PER_DIR: usize = 64;

/// Most bytes kept files of one volume hold, and at most this share of the file system
/// (1/`RECYCLED_SHARE`); past it, kept files are emptied.
const RECYCLED_BYTES: u64 = 256 << 20;
const RECYCLED_SHARE: u64 = 100;

/// A kept file keeps its blocks only up to 1/`RECYCLED_FILE_SHARE` of the budget, so a few
/// uploads in flight each find one.
const RECYCLED_FILE_SHARE: u64 = 4;

impl Recycled {
    fn new(budget: u64) -> Self {
        Self {
            kept: Default::default(),
            bytes: Default::default(),
            budget,
        }
    }

    /// The budget for a volume at `root`: [`RECYCLED_BYTES`], less on small file systems.
    fn for_volume(root: &Path) -> Self {
        let size = rustix::fs::statvfs(root).map_or(0, |v| v.f_blocks.saturating_mul(v.f_frsize));
        Self::new(RECYCLED_BYTES.min(size / RECYCLED_SHARE))
    }

    /// Largest file that keeps its blocks when kept.
    fn keep_blocks(&self) -> u64 {
        self.budget / RECYCLED_FILE_SHARE
    }

    /// Keeps `name` (in staging directory `tmp`) for reuse when it is a regular file that no one
    /// else has open and that has no other name; otherwise removes it.
    fn keep_or_remove(&self, tmp: &Arc<OwnedFd>, name: &str) {
        let kept = (|| {
            let key = dir_key(tmp).ok()?;
            if self
                .kept
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&key)
                .map_or(0, |d| d.files.len())
                >= RECYCLED_PER_DIR
            {
                return None;
            }
            let fd = rustix::fs::openat(
                tmp,
                name,
                OFlags::WRONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK,
                Mode::empty(),
            )
            .ok()?;
            let st = rustix::fs::fstat(&fd).ok()?;
            let size = st.st_size as u64;
            let fits = size <= self.keep_blocks()
                && self
                    .bytes
                    .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |b| {
                        (b + size <= self.budget).then_some(b + size)
                    })
                    .is_ok();
            if kind_of(&st) != Some(EntryKind::File) || st.st_nlink != 1 || !claim_unshared(&fd, !fits) {
                if fits {
                    self.bytes.fetch_sub(size, Ordering::Relaxed);
                }
                return None;
            }
            let held = if fits { size } else { 0 };
            let mut map = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            if map.len() >= 1024 {
                map.retain(|_, d| !d.files.is_empty());
            }
            let kept = map.entry(key).or_insert_with(|| KeptDir {
                dir: tmp.clone(),
                files: Vec::new(),
            });
            kept.files.push((name.to_owned(), held));
            Some(())
        })();
        if kept.is_none() {
            let _ = rustix::fs::unlinkat(tmp, name, AtFlags::empty());
        }
    }

    /// Drops the kept files of a staging directory that is being removed.
    fn forget(&self, dir: (u64, u64)) {
        let gone = self.kept.lock().unwrap_or_else(|e| e.into_inner()).remove(&dir);
        let held: u64 = gone.iter().flat_map(|d| &d.files).map(|(_, held)| held).sum();
        self.bytes.fetch_sub(held, Ordering::Relaxed);
    }

    /// Removes every kept file that still holds blocks, in every staging directory; returns the
    /// bytes that frees. For a write that found the file system full: kept files are invisible
    /// to whoever meets that.
    fn release(&self) -> u64 {
        let full: Vec<KeptDir> = {
            let mut map = self.kept.lock().unwrap_or_else(|e| e.into_inner());
            map.values_mut()
                .map(|d| {
                    let (files, empty) = std::mem::take(&mut d.files)
                        .into_iter()
                        .partition(|(_, held)| *held > 0);
                    d.files = empty;
                    KeptDir {
                        dir: d.dir.clone(),
                        files,
                    }
                })
                .collect()
        };
        let mut freed = 0;
        for d in full {
            for (name, held) in d.files {
                let _ = rustix::fs::unlinkat(&*d.dir, name.as_str(), AtFlags::empty());
                self.bytes.fetch_sub(held, Ordering::Relaxed);
                freed += held;
            }
        }
        freed
    }

    /// Takes a kept file of staging directory `tmp`, renamed to `name`, opened with `flags`;
    /// returns it with the length of the stale bytes it still holds. With the upload's expected
    /// size (`want`), the file whose bytes come closest, so little is cut off at seal (freeing
    /// blocks on the upload's path) or newly allocated; without, the one holding least.
    fn take(&self, tmp: &OwnedFd, name: &str, flags: OFlags, want: Option<u64>) -> Option<(OwnedFd, u64)> {
        let key = dir_key(tmp).ok()?;
        loop {
            let (old, held) = {
                let mut map = self.kept.lock().unwrap_or_else(|e| e.into_inner());
                let files = &mut map.get_mut(&key)?.files;
                let at = (0..files.len()).min_by_key(|&i| files[i].1.abs_diff(want.unwrap_or(0)))?;
                files.swap_remove(at)
            };
            self.bytes.fetch_sub(held, Ordering::Relaxed);
            // A staging sweep removes files not modified since its cutoff; a kept file still has
            // its object's old mtime. Fresh mtime first, then a fresh name: a sweep that saw the
            // old name stale can no longer remove it, and one that sees the new name sees it fresh.
            let now = rustix::fs::Timestamps {
                last_access: rustix::fs::Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_NOW,
                },
                last_modification: rustix::fs::Timespec {
                    tv_sec: 0,
                    tv_nsec: rustix::fs::UTIME_NOW,
                },
            };
            if rustix::fs::utimensat(tmp, old.as_str(), &now, AtFlags::SYMLINK_NOFOLLOW).is_err()
                || rustix::fs::renameat(tmp, old.as_str(), tmp, name).is_err()
            {
                continue;
            }
            let opened = match rustix::fs::openat(tmp, name, flags, Mode::empty()) {
                Err(Errno::INVAL) if flags.contains(OFlags::DIRECT) => {
                    rustix::fs::openat(tmp, name, flags - OFlags::DIRECT, Mode::empty())
                }
                r => r,
            };
            match opened.as_ref().map(rustix::fs::fstat) {
                Ok(Ok(st))
                    if kind_of(&st) == Some(EntryKind::File)
                        && st.st_nlink == 1
                        && st.st_size as u64 <= self.keep_blocks() =>
                {
                    return opened.ok().map(|fd| (fd, st.st_size as u64));
                }
                _ => {
                    let _ = rustix::fs::unlinkat(tmp, name, AtFlags::empty());
                }
            }
        }
    }
}

/// Whether no other open file description refers to `fd`'s file (a write lease is granted only
/// then, and while it is held an open by anyone else waits for us); `empty` truncates it to
/// zero bytes under the lease.
fn claim_unshared(fd: &OwnedFd, empty: bool) -> bool {
    use std::os::fd::AsRawFd;
    // SAFETY: fcntl(F_SETLEASE) takes an int argument and touches no memory of ours; `fd` is an
    // open descriptor for the duration of both calls.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLEASE, libc::F_WRLCK) } != 0 {
        return false;
    }
    let claimed = !empty || rustix::fs::ftruncate(fd, 0).is_ok();
    // SAFETY: as above.
    unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETLEASE, libc::F_UNLCK) };
    claimed
}

/// Identifies a directory across handles.
fn dir_key(dir: &OwnedFd) -> Result<(u64, u64)> {
    let st = rustix::fs::fstat(dir)?;
    Ok((st.st_dev, st.st_ino))
}

impl PosixVolume {
    /// Opens (creating if needed) the volume rooted at `root`.
    pub fn open(name: &str, root: &Path) -> Result<Self> {
        std::fs::create_dir_all(root)?;
        Ok(Self {
            name: name.to_owned(),
            root: root.canonicalize()?,
            io: Arc::new(Io {
                volume: name.to_owned(),
                observer: None,
                dir_syncs: DirSyncs::default(),
                recycled: Recycled::for_volume(root),
            }),
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
        self.io = Arc::new(Io {
            volume: self.name.clone(),
            observer: Some(observer),
            dir_syncs: DirSyncs::default(),
            recycled: Recycled::new(self.io.recycled.budget),
        });
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
        self.io
            .run("create_folder", move || {
                let parent = dir.parent().expect("folder paths have parents");
                std::fs::create_dir_all(parent)?;
                match std::fs::create_dir(&dir) {
                    Ok(()) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                        return Err(BackendError::FolderExists(dir.display().to_string()))
                    }
                    Err(e) => return Err(e.into()),
                }
                let root = open_dir_path(&dir)?;
                ensure_dir(&root, &[STAGING_DIR, "tmp"])?;
                ensure_dir(&root, &[STAGING_DIR, "uploads"])?;
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
                let root = open_dir_path(&dir)?;
                if !dir_is_empty(&root)? {
                    return Err(BackendError::FolderNotEmpty);
                }
                // Its kept files go with the staging directory.
                if let Ok(tmp) = open_beneath(&root, &format!("{STAGING_DIR}/tmp"), OFlags::RDONLY | OFlags::DIRECTORY)
                {
                    if let Ok(key) = dir_key(&tmp) {
                        io.recycled.forget(key);
                    }
                }
                match rustix::fs::statat(&root, STAGING_DIR, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(_) => remove_tree(&root, STAGING_DIR)?,
                    Err(Errno::NOENT) => {}
                    Err(e) => return Err(e.into()),
                }
                drop(root);
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
    /// Opens the regular file at `rel` (beneath the folder) for reading; `None` when absent or
    /// not a regular file.
    async fn open_file(&self, op: &'static str, rel: String) -> Result<Option<Box<dyn ReadHandle>>> {
        let root = self.root.clone();
        let opened = self
            .io
            .run(op, move || {
                let fd = match open_beneath(&root, &rel, OFlags::RDONLY) {
                    Ok(fd) => fd,
                    Err(e) => return absent_is_none(e),
                };
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
        let root = self.root.clone();
        let rel = path.rel();
        self.io
            .run("stat", move || match open_beneath(&root, &rel, OFlags::PATH) {
                Ok(fd) => Ok(Some(stat_fd(&fd)?)),
                Err(e) => absent_is_none(e),
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

    async fn compose_parts(&self, upload_id: &str, parts: &[u32]) -> Result<(Box<dyn StagingFile>, Vec<Stat>)> {
        check_upload_id(upload_id)?;
        let root = self.root.clone();
        let upload_dir = format!("{STAGING_DIR}/uploads/{upload_id}");
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
                    let fd = match open_beneath(&root, &format!("{upload_dir}/{part}"), OFlags::RDONLY) {
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

    async fn make_dir(&self, path: &ObjectPath) -> Result<()> {
        let root = self.root.clone();
        let segs = path.segments().to_vec();
        let payload = path.marker_name();
        self.io
            .run("make_dir", move || {
                make_marker_dir(&root, &segs)?;
                if let Some(name) = payload {
                    remove_marker_payload(&root, &name)?;
                }
                Ok(())
            })
            .await
    }

    async fn open_marker(&self, path: &ObjectPath) -> Result<Option<Box<dyn ReadHandle>>> {
        let Some(name) = path.marker_name() else {
            return Ok(None);
        };
        self.open_file("open_marker", format!("{STAGING_DIR}/{MARKERS_DIR}/{name}"))
            .await
    }

    async fn remove(&self, path: &ObjectPath, keep_depth: usize) -> Result<bool> {
        let root = self.root.clone();
        let path = path.clone();
        self.io
            .run("remove", move || {
                // A marker's payload goes even when its directory stays (it holds other objects)
                // or is already gone.
                let payload_removed = match path.marker_name() {
                    Some(name) => remove_marker_payload(&root, &name)?,
                    None => false,
                };
                let parent = match open_beneath(&root, &join_or_dot(path.parent()), OFlags::RDONLY | OFlags::DIRECTORY)
                {
                    Ok(fd) => fd,
                    Err(e) => return absent_is_none(e).map(|_: Option<()>| payload_removed),
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
                    prune_empty(&root, path.parent(), keep_depth);
                }
                Ok(removed || payload_removed)
            })
            .await
    }

    async fn read_dir(&self, dir: &[String]) -> Result<Vec<DirEntry>> {
        let root = self.root.clone();
        let dir = dir.to_vec();
        self.io.run("read_dir", move || read_dir_sorted(&root, &dir)).await
    }

    async fn is_empty(&self) -> Result<bool> {
        let root = self.root.clone();
        self.io.run("is_empty", move || dir_is_empty(&root)).await
    }

    async fn remove_upload(&self, upload_id: &str) -> Result<()> {
        check_upload_id(upload_id)?;
        let root = self.root.clone();
        let upload_id = upload_id.to_owned();
        self.io
            .run("remove_upload", move || {
                let uploads = match open_beneath(
                    &root,
                    &format!("{STAGING_DIR}/uploads"),
                    OFlags::RDONLY | OFlags::DIRECTORY,
                ) {
                    Ok(fd) => fd,
                    Err(Errno::NOENT) => return Ok(()),
                    Err(e) => return Err(e.into()),
                };
                match remove_tree(&uploads, &upload_id) {
                    Err(BackendError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    r => r,
                }
            })
            .await
    }

    async fn sweep_staging(&self, cutoff: SystemTime) -> Result<usize> {
        let root = self.root.clone();
        self.io.run("sweep_staging", move || sweep_tmp(&root, cutoff)).await
    }

    async fn usage(&self) -> Result<u64> {
        let root = self.root.clone();
        self.io
            .run("usage", move || {
                let dir = rustix::fs::openat(
                    &*root,
                    ".",
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
                    Mode::empty(),
                )?;
                tree_bytes(&dir, true)
            })
            .await
    }
}

/// Sums regular-file sizes below `dir` without following symlinks; skips the staging `tmp` dir.
fn tree_bytes(dir: &OwnedFd, is_root: bool) -> Result<u64> {
    let mut total = 0;
    let mut subdirs = Vec::new();
    let mut d = rustix::fs::Dir::read_from(dir)?;
    while let Some(ent) = d.read() {
        let ent = ent?;
        let Ok(name) = ent.file_name().to_str() else { continue };
        if name == "." || name == ".." {
            continue;
        }
        let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        match rustix::fs::FileType::from_raw_mode(st.st_mode) {
            rustix::fs::FileType::RegularFile => total += st.st_size as u64,
            rustix::fs::FileType::Directory => subdirs.push(name.to_owned()),
            _ => {}
        }
    }
    for name in subdirs {
        let sub = rustix::fs::openat(
            dir,
            name.as_str(),
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        if is_root && name == STAGING_DIR {
            // Parts and marker payloads count; in-flight staging files do not.
            for counted in ["uploads", MARKERS_DIR] {
                if let Ok(d) = rustix::fs::openat(
                    &sub,
                    counted,
                    OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
                    Mode::empty(),
                ) {
                    total += tree_bytes(&d, false)?;
                }
            }
            continue;
        }
        total += tree_bytes(&sub, false)?;
    }
    Ok(total)
}

/// Removes regular files in the staging directory modified before `cutoff`.
fn sweep_tmp(root: &OwnedFd, cutoff: SystemTime) -> Result<usize> {
    let tmp = match open_beneath(root, &format!("{STAGING_DIR}/tmp"), OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let cutoff_ns = cutoff
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i128);
    let mut stale = Vec::new();
    let mut d = rustix::fs::Dir::read_from(&tmp)?;
    while let Some(ent) = d.read() {
        let ent = ent?;
        let Ok(name) = ent.file_name().to_str() else { continue };
        if name == "." || name == ".." {
            continue;
        }
        if let Ok(st) = rustix::fs::statat(&tmp, name, AtFlags::SYMLINK_NOFOLLOW) {
            if to_stat(&st).is_some_and(|s| s.kind == EntryKind::File && s.mtime_ns < cutoff_ns) {
                stale.push(name.to_owned());
            }
        }
    }
    let mut removed = 0;
    for name in stale {
        if rustix::fs::unlinkat(&tmp, name.as_str(), AtFlags::empty()).is_ok() {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes directories of `parents` that became empty, deepest first, keeping the first
/// `keep_depth` levels (directories that carry a marker record of their own).
fn prune_empty(root: &OwnedFd, parents: &[String], keep_depth: usize) {
    for depth in (keep_depth + 1..=parents.len()).rev() {
        let (leaf, above) = parents[..depth].split_last().expect("depth >= 1");
        let Ok(dir) = open_beneath(root, &join_or_dot(above), OFlags::RDONLY | OFlags::DIRECTORY) else {
            break;
        };
        if rustix::fs::unlinkat(&dir, leaf.as_str(), AtFlags::REMOVEDIR).is_err() {
            break;
        }
    }
}

struct PosixReader {
    file: Arc<File>,
    stat: Stat,
    io: Arc<Io>,
}

#[async_trait]
impl ReadHandle for PosixReader {
    fn stat(&self) -> &Stat {
        &self.stat
    }

    async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        // Read into uninitialized capacity: zeroing a block first would cost a pass over every
        // byte served.
        let mut buf = Vec::with_capacity(len);
        // What the page cache holds is copied right here: handing a cached block to the blocking
        // pool cost more than the copy (a thread wakeup each way: 16 MiB GETs x 8 went from
        // 3144 to 4130 MiB/s).
        let start = std::time::Instant::now();
        let eof = read_cached(&self.file, &mut buf, offset, len);
        if eof || buf.len() == len {
            if let Some(o) = &self.io.observer {
                o.observe(&self.io.volume, "read", start.elapsed());
            }
            return Ok(Bytes::from(buf));
        }
        let file = self.file.clone();
        self.io
            .run("read", move || {
                while buf.len() < len {
                    let at = offset + buf.len() as u64;
                    match rustix::io::pread(&*file, rustix::buffer::spare_capacity(&mut buf), at) {
                        Ok(0) => break,
                        Ok(_) => {}
                        Err(Errno::INTR) => {}
                        Err(e) => return Err(e.into()),
                    }
                }
                Ok(Bytes::from(buf))
            })
            .await
    }
}

/// Appends to `buf`, up to `len` bytes in all, the bytes from `offset + buf.len()` on that the
/// page cache holds, without blocking (`RWF_NOWAIT`). Returns whether the end of the file was
/// reached. Stops at the first byte not cached; errors (including file systems without
/// `RWF_NOWAIT`) leave the rest to a blocking read, which reports them.
fn read_cached(file: &File, buf: &mut Vec<u8>, offset: u64, len: usize) -> bool {
    use std::os::fd::AsRawFd;
    while buf.len() < len {
        let want = len - buf.len();
        let spare = &mut buf.spare_capacity_mut()[..want];
        let iov = libc::iovec {
            iov_base: spare.as_mut_ptr().cast(),
            iov_len: spare.len(),
        };
        let Ok(at) = i64::try_from(offset + buf.len() as u64) else {
            return false;
        };
        // SAFETY: the iovec covers spare capacity of `buf`, which the call only writes to;
        // `file` is open for the whole call.
        let n = unsafe { libc::preadv2(file.as_raw_fd(), &iov, 1, at, libc::RWF_NOWAIT) };
        match n {
            0 => return true,
            // SAFETY: the kernel wrote `n` bytes right after the initialized ones.
            n if n > 0 => unsafe { buf.set_len(buf.len() + n as usize) },
            _ if std::io::Error::last_os_error().raw_os_error() == Some(libc::EINTR) => {}
            _ => return false,
        }
    }
    false
}

struct PosixStaging {
    io: Arc<Io>,
    root: Arc<OwnedFd>,
    name: String,
    /// The file, made by the first write that reaches it: a small body is created, written,
    /// synced and stat'ed in one blocking call at seal.
    opened: Option<Opened>,
    /// Also says whether the file is made with `O_DIRECT` ([`Sink::Direct`]).
    sink: Sink,
    /// The block being written in the background while the next one is received; a direct
    /// write hands its block back for reuse.
    inflight: Option<tokio::task::JoinHandle<Result<Option<AlignedBlock>>>>,
    /// Bytes handed to writes so far: where the next direct block lands.
    flushed: u64,
    len: u64,
    /// The payload's declared size, if any: picks the kept file to reuse.
    size_hint: Option<u64>,
    published: bool,
}

/// How a staging file's bytes travel to the file.
enum Sink {
    /// Through the page cache: received chunks are gathered and written with one `writev`,
    /// without a copy.
    Buffered { pending: Vec<Bytes>, pending_len: usize },
    /// Around the page cache (`O_DIRECT`): bytes are copied into an aligned block that is written
    /// whole; the unaligned tail goes through the page cache at seal.
    Direct {
        block: AlignedBlock,
        spare: Option<AlignedBlock>,
    },
}

/// A `DIRECT_BLOCK`-sized buffer starting at a `DIRECT_ALIGN` boundary.
struct AlignedBlock {
    raw: Box<[u8]>,
    start: usize,
    len: usize,
}

impl AlignedBlock {
    fn new() -> Self {
        let raw = vec![0u8; DIRECT_BLOCK + DIRECT_ALIGN].into_boxed_slice();
        let start = raw.as_ptr().align_offset(DIRECT_ALIGN);
        Self { raw, start, len: 0 }
    }

    /// Copies as much of `data` as fits; returns how much.
    fn fill(&mut self, data: &[u8]) -> usize {
        let n = data.len().min(DIRECT_BLOCK - self.len);
        let at = self.start + self.len;
        self.raw[at..at + n].copy_from_slice(&data[..n]);
        self.len += n;
        n
    }

    fn is_full(&self) -> bool {
        self.len == DIRECT_BLOCK
    }

    fn filled(&self) -> &[u8] {
        &self.raw[self.start..self.start + self.len]
    }
}

/// A staging file on disk.
struct Opened {
    tmp_dir: Arc<OwnedFd>,
    file: Arc<File>,
    /// Length of a recycled file's old bytes, which seal cuts off beyond the new length.
    stale: u64,
}

impl Opened {
    /// Makes the file `name` in the folder's staging directory: a kept file when there is one
    /// (possibly still holding stale bytes, see `stale`), else a new one; with `O_DIRECT` when
    /// `direct` and the file system takes it.
    /// `want` is the expected size, to pick a kept file by.
    fn make(root: &OwnedFd, io: &Io, name: &str, direct: bool, want: Option<u64>) -> Result<Self> {
        let tmp_dir = ensure_dir(root, &[STAGING_DIR, "tmp"])?;
        let open_flags = OFlags::WRONLY | OFlags::CLOEXEC | OFlags::NOFOLLOW;
        let direct_flag = if direct { OFlags::DIRECT } else { OFlags::empty() };
        let (fd, stale) = match io.recycled.take(&tmp_dir, name, open_flags | direct_flag, want) {
            Some(taken) => taken,
            None => {
                let flags = open_flags | OFlags::CREATE | OFlags::EXCL;
                let mode = Mode::from_raw_mode(0o644);
                let fd = match rustix::fs::openat(&tmp_dir, name, flags | direct_flag, mode) {
                    // File systems without O_DIRECT (tmpfs, some FUSE ones) refuse it at open.
                    Err(Errno::INVAL) if direct => rustix::fs::openat(&tmp_dir, name, flags, mode)?,
                    r => r?,
                };
                (fd, 0)
            }
        };
        Ok(Self {
            tmp_dir: Arc::new(tmp_dir),
            file: Arc::new(File::from(fd)),
            stale,
        })
    }
}

impl PosixStaging {
    /// A staging file whose file is made when the first bytes reach it.
    fn new(root: Arc<OwnedFd>, io: Arc<Io>, direct: bool, size_hint: Option<u64>) -> Self {
        let sink = if direct {
            Sink::Direct {
                block: AlignedBlock::new(),
                spare: None,
            }
        } else {
            Sink::Buffered {
                pending: Vec::new(),
                pending_len: 0,
            }
        };
        Self {
            root,
            name: format!("{:032x}", rand::random::<u128>()),
            opened: None,
            sink,
            inflight: None,
            flushed: 0,
            len: 0,
            size_hint,
            published: false,
            io,
        }
    }

    /// A staging file whose file exists already (blocking).
    fn create(root: Arc<OwnedFd>, io: Arc<Io>, direct: bool, size_hint: Option<u64>) -> Result<Self> {
        let mut s = Self::new(root, io, direct, size_hint);
        s.opened = Some(Opened::make(&s.root, &s.io, &s.name, direct, size_hint)?);
        Ok(s)
    }

    fn file(&self) -> Arc<File> {
        self.opened
            .as_ref()
            .expect("staging file is made before it is written")
            .file
            .clone()
    }

    /// Makes the file if no write has yet.
    async fn ensure_opened(&mut self) -> Result<()> {
        if self.opened.is_none() {
            let direct = matches!(self.sink, Sink::Direct { .. });
            let (root, io, name, hint) = (self.root.clone(), self.io.clone(), self.name.clone(), self.size_hint);
            let opened = self
                .io
                .run("create_staging", move || Opened::make(&root, &io, &name, direct, hint))
                .await?;
            self.opened = Some(opened);
        }
        Ok(())
    }

    /// Waits for the block being written, if any, and reports its failure.
    async fn settle(&mut self) -> Result<()> {
        let Some(h) = self.inflight.take() else { return Ok(()) };
        let returned = h.await.map_err(|e| BackendError::Io(std::io::Error::other(e)))??;
        if let (Sink::Direct { spare, .. }, Some(mut b)) = (&mut self.sink, returned) {
            b.len = 0;
            *spare = Some(b);
        }
        Ok(())
    }

    /// Hands the received bytes to a background write (after the previous one finished, so
    /// blocks land in order) and returns without waiting for it: receiving the next block
    /// overlaps writing this one.
    async fn flush(&mut self) -> Result<()> {
        self.settle().await?;
        self.ensure_opened().await?;
        let (file, io, at) = (self.file(), self.io.clone(), self.flushed);
        let task = match &mut self.sink {
            Sink::Buffered { pending, pending_len } => {
                if pending.is_empty() {
                    return Ok(());
                }
                let chunks = std::mem::take(pending);
                self.flushed += *pending_len as u64;
                *pending_len = 0;
                tokio::spawn(async move {
                    let writer = io.clone();
                    io.run("write", move || {
                        writer.with_space(|| write_all_vectored(&file, &chunks, at).map(|()| None))
                    })
                    .await
                })
            }
            Sink::Direct { block, spare } => {
                if block.len == 0 {
                    return Ok(());
                }
                let next = spare.take().unwrap_or_else(AlignedBlock::new);
                let full = std::mem::replace(block, next);
                self.flushed += full.len as u64;
                let writer = io.clone();
                tokio::spawn(async move {
                    io.run("write", move || {
                        writer.with_space(|| write_direct(&file, full.filled(), at))?;
                        Ok(Some(full))
                    })
                    .await
                })
            }
        };
        self.inflight = Some(task);
        Ok(())
    }

    /// Renames the staging file to `leaf` in the directory made of `dir` segments.
    async fn rename_into(&mut self, dir: Vec<String>, leaf: String, durable: bool) -> Result<()> {
        self.ensure_opened().await?;
        let root = self.root.clone();
        let tmp_dir = self.opened.as_ref().expect("made just above").tmp_dir.clone();
        let name = self.name.clone();
        let io = self.io.clone();
        // A large file swapped out of the key, to be recycled after the reply (see below).
        let replaced = self
            .io
            .run("rename", move || {
                let dir: Vec<&str> = dir.iter().map(String::as_str).collect();
                // A concurrent delete may prune a parent directory between our mkdir and the rename;
                // the rename then fails with ENOENT and the directories are made again.
                let mut attempts = 0;
                loop {
                    attempts += 1;
                    let parent = ensure_dir(&root, &dir)?;
                    let existing = rustix::fs::statat(&parent, leaf.as_str(), AtFlags::SYMLINK_NOFOLLOW)
                        .ok()
                        .and_then(|st| kind_of(&st));
                    if existing == Some(EntryKind::Dir) {
                        return Err(BackendError::IsDirectory);
                    }
                    if existing == Some(EntryKind::File) {
                        // Swap instead of replace, so the old inode can be reused (see `Recycled`).
                        let swapped = rustix::fs::renameat_with(
                            &tmp_dir,
                            name.as_str(),
                            &parent,
                            leaf.as_str(),
                            rustix::fs::RenameFlags::EXCHANGE,
                        );
                        if swapped.is_ok() {
                            let st = rustix::fs::statat(&tmp_dir, name.as_str(), AtFlags::SYMLINK_NOFOLLOW)?;
                            if kind_of(&st) == Some(EntryKind::Dir) {
                                // A directory took the key since we looked: put it back, fail as rename would.
                                rustix::fs::renameat_with(
                                    &tmp_dir,
                                    name.as_str(),
                                    &parent,
                                    leaf.as_str(),
                                    rustix::fs::RenameFlags::EXCHANGE,
                                )?;
                                return Err(BackendError::IsDirectory);
                            }
                            if durable {
                                io.dir_syncs.sync_after_change(&parent)?;
                            }
                            if st.st_size as u64 > io.recycled.keep_blocks() {
                                // Emptying or removing a large file frees its extents, which took
                                // 8-16 ms per 16 MiB file here (ext4 with `discard`): the write
                                // is durable already, so that waits for no reply.
                                return Ok(Some((tmp_dir, name)));
                            }
                            io.recycled.keep_or_remove(&tmp_dir, &name);
                            return Ok(None);
                        }
                        // Gone since we looked, or no RENAME_EXCHANGE here: a plain rename does it.
                    }
                    match rustix::fs::renameat(&tmp_dir, name.as_str(), &parent, leaf.as_str()) {
                        Ok(()) => {
                            if durable {
                                io.dir_syncs.sync_after_change(&parent)?;
                            }
                            return Ok(None);
                        }
                        Err(Errno::NOENT) if attempts < 5 => continue,
                        Err(Errno::ISDIR | Errno::NOTEMPTY | Errno::EXIST) => return Err(BackendError::IsDirectory),
                        Err(Errno::NOTDIR) => return Err(BackendError::ParentIsFile),
                        Err(e) => return Err(e.into()),
                    }
                }
            })
            .await?;
        self.published = true;
        if let Some((tmp_dir, name)) = replaced {
            let io = self.io.clone();
            tokio::task::spawn_blocking(move || io.recycled.keep_or_remove(&tmp_dir, &name));
        }
        Ok(())
    }
}

#[async_trait]
impl StagingFile for PosixStaging {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        self.len += data.len() as u64;
        match &mut self.sink {
            Sink::Buffered { pending, pending_len } => {
                *pending_len += data.len();
                pending.push(data);
                if *pending_len >= WRITE_BLOCK {
                    self.flush().await?;
                }
            }
            Sink::Direct { .. } => {
                let mut rest = &data[..];
                while !rest.is_empty() {
                    let Sink::Direct { block, .. } = &mut self.sink else {
                        unreachable!()
                    };
                    rest = &rest[block.fill(rest)..];
                    if block.is_full() {
                        self.flush().await?;
                    }
                }
            }
        }
        Ok(())
    }

    fn len(&self) -> u64 {
        self.len
    }

    async fn seal(&mut self, durable: bool) -> Result<Stat> {
        // The last bytes are written by the same blocking call that syncs and stats: for a
        // small object that is the only write, and one trip to the blocking pool fewer.
        let done = Sink::Buffered {
            pending: Vec::new(),
            pending_len: 0,
        };
        let last = std::mem::replace(&mut self.sink, done);
        self.settle().await?;
        let at = self.flushed;
        self.flushed = self.len;
        let made = self.opened.as_ref().map(|o| (o.file.clone(), o.stale));
        let direct = matches!(last, Sink::Direct { .. });
        let (root, io, name, len) = (self.root.clone(), self.io.clone(), self.name.clone(), self.len);
        let (opened, st) = self
            .io
            .run("seal", move || {
                let (opened, file, stale) = match made {
                    Some((f, stale)) => (None, f, stale),
                    None => {
                        let o = Opened::make(&root, &io, &name, direct, Some(len))?;
                        let (f, stale) = (o.file.clone(), o.stale);
                        (Some(o), f, stale)
                    }
                };
                io.with_space(|| match &last {
                    Sink::Buffered { pending, .. } => write_all_vectored(&file, pending, at),
                    Sink::Direct { block, .. } => {
                        // Whole aligned sectors still go direct; the last partial one cannot.
                        let data = block.filled();
                        let aligned = data.len() & !(DIRECT_ALIGN - 1);
                        write_direct(&file, &data[..aligned], at)?;
                        if aligned < data.len() {
                            set_direct(&file, false)?;
                            pwrite_all(&file, &data[aligned..], at + aligned as u64)?;
                        }
                        Ok(())
                    }
                })?;
                if stale > len {
                    file.set_len(len)?;
                }
                if durable {
                    file.sync_all()?;
                }
                Ok((opened, stat_fd(&file.as_fd())?))
            })
            .await?;
        if opened.is_some() {
            self.opened = opened;
        }
        Ok(st)
    }

    async fn publish(mut self: Box<Self>, path: &ObjectPath, durable: bool) -> Result<()> {
        if let Some(payload) = path.marker_name() {
            // A marker with a body: the directory at the key, the bytes in the hidden area.
            let root = self.root.clone();
            let segs = path.segments().to_vec();
            self.io.run("make_dir", move || make_marker_dir(&root, &segs)).await?;
            let dir = vec![STAGING_DIR.to_owned(), MARKERS_DIR.to_owned()];
            return self.rename_into(dir, payload, durable).await;
        }
        self.rename_into(path.parent().to_vec(), path.leaf().to_owned(), durable)
            .await
    }

    async fn publish_part(mut self: Box<Self>, upload_id: &str, part: u32, durable: bool) -> Result<()> {
        check_upload_id(upload_id)?;
        let dir = vec![STAGING_DIR.to_owned(), "uploads".to_owned(), upload_id.to_owned()];
        self.rename_into(dir, part.to_string(), durable).await
    }
}

impl Drop for PosixStaging {
    fn drop(&mut self) {
        if let (false, Some(o)) = (self.published, &self.opened) {
            let _ = rustix::fs::unlinkat(&*o.tmp_dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

/// Writes every byte of `chunks` at `at`, as few `pwritev` calls as it takes.
fn write_all_vectored(file: &File, chunks: &[Bytes], mut at: u64) -> Result<()> {
    let mut slices: Vec<std::io::IoSlice<'_>> = chunks
        .iter()
        .filter(|c| !c.is_empty())
        .map(|c| std::io::IoSlice::new(c))
        .collect();
    let mut rest = &mut slices[..];
    while !rest.is_empty() {
        match rustix::io::pwritev(file, rest, at) {
            Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into()),
            Ok(n) => {
                std::io::IoSlice::advance_slices(&mut rest, n);
                at += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Writes `data` at `at` on a file opened with `O_DIRECT`. A refusal of the direct write
/// (`EINVAL`: the file system's alignment rules differ) switches the file to page-cache writes.
fn write_direct(file: &File, data: &[u8], at: u64) -> Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    match pwrite_all(file, data, at) {
        Err(BackendError::Io(e)) if e.raw_os_error() == Some(Errno::INVAL.raw_os_error()) => {
            set_direct(file, false)?;
            pwrite_all(file, data, at)
        }
        r => r,
    }
}

fn set_direct(file: &File, on: bool) -> Result<()> {
    let flags = rustix::fs::fcntl_getfl(file)?;
    let want = if on {
        flags | OFlags::DIRECT
    } else {
        flags - OFlags::DIRECT
    };
    if want != flags {
        rustix::fs::fcntl_setfl(file, want)?;
    }
    Ok(())
}

fn pwrite_all(file: &File, mut data: &[u8], mut at: u64) -> Result<()> {
    while !data.is_empty() {
        match rustix::io::pwrite(file, data, at) {
            Ok(0) => return Err(std::io::Error::from(std::io::ErrorKind::WriteZero).into()),
            Ok(n) => {
                data = &data[n..];
                at += n as u64;
            }
            Err(Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

/// Upload ids name directories; only the characters the gateway generates are accepted.
fn check_upload_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "malformed upload id").into());
    }
    Ok(())
}

fn open_dir_path(dir: &Path) -> Result<OwnedFd> {
    match rustix::fs::open(dir, OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty()) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOENT | Errno::NOTDIR) => Err(BackendError::FolderNotFound(dir.display().to_string())),
        Err(e) => Err(e.into()),
    }
}

fn join_or_dot(segs: &[String]) -> String {
    if segs.is_empty() {
        ".".to_owned()
    } else {
        segs.join("/")
    }
}

/// Opens `rel` beneath `root`; symlinks are followed only while they stay inside.
fn open_beneath(root: &OwnedFd, rel: &str, flags: OFlags) -> std::result::Result<OwnedFd, Errno> {
    rustix::fs::openat2(
        root,
        rel,
        flags | OFlags::CLOEXEC,
        Mode::empty(),
        ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS,
    )
}

/// Maps "nothing there" errors to `None`; escape attempts to `Escapes`.
fn absent_is_none<T>(e: Errno) -> Result<Option<T>> {
    match e {
        Errno::NOENT | Errno::NOTDIR | Errno::NAMETOOLONG => Ok(None),
        Errno::XDEV | Errno::LOOP => Err(BackendError::Escapes),
        e => Err(e.into()),
    }
}

/// Opens the directory `segs` beneath `root`, creating missing levels.
fn ensure_dir(root: &OwnedFd, segs: &[&str]) -> Result<OwnedFd> {
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
fn make_marker_dir(root: &OwnedFd, segs: &[String]) -> Result<()> {
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

/// Removes a marker's payload file; returns whether there was one.
fn remove_marker_payload(root: &OwnedFd, name: &str) -> Result<bool> {
    let markers = match open_beneath(
        root,
        &format!("{STAGING_DIR}/{MARKERS_DIR}"),
        OFlags::RDONLY | OFlags::DIRECTORY,
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    match rustix::fs::unlinkat(&markers, name, AtFlags::empty()) {
        Ok(()) => Ok(true),
        Err(Errno::NOENT) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

fn kind_of(st: &rustix::fs::Stat) -> Option<EntryKind> {
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile => Some(EntryKind::File),
        rustix::fs::FileType::Directory => Some(EntryKind::Dir),
        _ => None,
    }
}

fn to_stat(st: &rustix::fs::Stat) -> Option<Stat> {
    Some(Stat {
        kind: kind_of(st)?,
        size: st.st_size as u64,
        inode: st.st_ino,
        mtime_ns: st.st_mtime as i128 * 1_000_000_000 + st.st_mtime_nsec as i128,
    })
}

fn stat_fd(fd: &impl AsFd) -> Result<Stat> {
    let st = rustix::fs::fstat(fd)?;
    to_stat(&st).ok_or_else(|| std::io::Error::other("not a regular file or directory").into())
}

fn read_dir_sorted(root: &OwnedFd, dir: &[String]) -> Result<Vec<DirEntry>> {
    let rel = join_or_dot(dir);
    let fd = match open_beneath(root, &rel, OFlags::RDONLY | OFlags::DIRECTORY) {
        Ok(fd) => fd,
        Err(Errno::NOENT | Errno::NOTDIR | Errno::XDEV | Errno::LOOP) => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let mut entries = Vec::new();
    let mut d = rustix::fs::Dir::read_from(&fd)?;
    while let Some(ent) = d.read() {
        let ent = ent?;
        let Ok(name) = ent.file_name().to_str() else {
            continue;
        };
        if name == "." || name == ".." || (dir.is_empty() && name == STAGING_DIR) {
            continue;
        }
        let st = match ent.file_type() {
            rustix::fs::FileType::RegularFile | rustix::fs::FileType::Directory => {
                match rustix::fs::statat(&fd, name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => to_stat(&st),
                    Err(_) => None,
                }
            }
            // Symlinks (and file systems without d_type) resolve from the folder root so that
            // links to siblings work and links leading out are dropped.
            _ => {
                let full = if dir.is_empty() {
                    name.to_owned()
                } else {
                    format!("{rel}/{name}")
                };
                match open_beneath(root, &full, OFlags::PATH) {
                    Ok(target) => rustix::fs::fstat(&target).ok().and_then(|st| to_stat(&st)),
                    Err(_) => None,
                }
            }
        };
        if let Some(stat) = st {
            entries.push(DirEntry {
                name: name.to_owned(),
                stat,
            });
        }
    }
    entries.sort_by_cached_key(DirEntry::sort_key);
    Ok(entries)
}

fn dir_is_empty(dir: &OwnedFd) -> Result<bool> {
    let mut d = rustix::fs::Dir::read_from(dir)?;
    while let Some(ent) = d.read() {
        let ent = ent?;
        let name = ent.file_name().to_bytes();
        if name != b"." && name != b".." && name != STAGING_DIR.as_bytes() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Removes `name` under `parent` recursively without following symlinks.
fn remove_tree(parent: &OwnedFd, name: &str) -> Result<()> {
    let st = rustix::fs::statat(parent, name, AtFlags::SYMLINK_NOFOLLOW)?;
    if rustix::fs::FileType::from_raw_mode(st.st_mode) != rustix::fs::FileType::Directory {
        rustix::fs::unlinkat(parent, name, AtFlags::empty())?;
        return Ok(());
    }
    let dir = rustix::fs::openat(
        parent,
        name,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::empty(),
    )?;
    let mut names = Vec::new();
    let mut d = rustix::fs::Dir::read_from(&dir)?;
    while let Some(ent) = d.read() {
        let ent = ent?;
        let n = ent.file_name().to_string_lossy().into_owned();
        if n != "." && n != ".." {
            names.push(n);
        }
    }
    for n in names {
        remove_tree(&dir, &n)?;
    }
    rustix::fs::unlinkat(parent, name, AtFlags::REMOVEDIR)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    async fn put(f: &Arc<dyn Folder>, key: &str, data: &[u8]) {
        let mut s = f.create_staging(Some(data.len() as u64)).await.unwrap();
        s.write(Bytes::copy_from_slice(data)).await.unwrap();
        s.seal(true).await.unwrap();
        s.publish(&ObjectPath::parse(key).unwrap(), true).await.unwrap();
    }

    async fn folder(root: &Path) -> (Arc<dyn Folder>, PathBuf) {
        folder_with_budget(root, None).await
    }

    /// A folder on a volume whose kept files may hold `budget` bytes (default: the volume's).
    async fn folder_with_budget(root: &Path, budget: Option<u64>) -> (Arc<dyn Folder>, PathBuf) {
        let mut v = PosixVolume::open("v", root).unwrap();
        if let Some(b) = budget {
            v.io = Arc::new(Io {
                volume: "v".into(),
                observer: None,
                dir_syncs: DirSyncs::default(),
                recycled: Recycled::new(b),
            });
        }
        let loc = crate::FolderLocation {
            scope: crate::QuotaScope::user(uuid::Uuid::new_v4()),
            id: uuid::Uuid::new_v4(),
        };
        v.create_folder(&loc).await.unwrap();
        (v.open_folder(&loc).await.unwrap(), root.join(loc.relative_path()))
    }

    /// Overwrites reuse the replaced files' inodes, the staging directory keeps at most
    /// `RECYCLED_PER_DIR` files, and every version reads back exactly.
    #[tokio::test]
    async fn overwrites_recycle_inodes() {
        let dir = tempfile::tempdir().unwrap();
        let (f, path) = folder(dir.path()).await;
        let mut inodes = std::collections::HashSet::new();
        for i in 0..200u32 {
            let key = format!("k{}", i % 20);
            // Lengths go up and down, so reused files are both outgrown and cut short.
            let body = format!("version {i};").repeat(1 + (i as usize * 37) % 300);
            put(&f, &key, body.as_bytes()).await;
            assert_eq!(std::fs::read(path.join(&key)).unwrap(), body.as_bytes());
            inodes.insert(std::fs::metadata(path.join(&key)).unwrap().ino());
        }
        // 20 keys, 200 writes: a handful of inodes beyond the 20 live ones, not 200.
        assert!(inodes.len() < 40, "{} distinct inodes for 200 writes", inodes.len());
        let kept = std::fs::read_dir(path.join(STAGING_DIR).join("tmp")).unwrap().count();
        assert!(kept <= RECYCLED_PER_DIR, "{kept} files kept");
    }

    /// A kept file carries its object's old mtime; once taken for reuse it must not look like
    /// a crash leftover to the staging sweep.
    #[tokio::test]
    async fn reused_files_are_fresh_for_the_staging_sweep() {
        let dir = tempfile::tempdir().unwrap();
        let v = PosixVolume::open("v", dir.path()).unwrap();
        let loc = crate::FolderLocation {
            scope: crate::QuotaScope::user(uuid::Uuid::new_v4()),
            id: uuid::Uuid::new_v4(),
        };
        v.create_folder(&loc).await.unwrap();
        let f = v.open_folder(&loc).await.unwrap();
        let path = dir.path().join(loc.relative_path());
        put(&f, "k", b"old").await;
        let long_ago = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let k = std::fs::File::options().write(true).open(path.join("k")).unwrap();
        k.set_modified(long_ago).unwrap();
        drop(k);
        put(&f, "k", b"new").await;
        // The kept file's bytes count against the volume's budget until it is taken.
        assert_eq!(v.io.recycled.bytes.load(Ordering::Relaxed), 3);
        let tmp = open_dir_path(&path.join(STAGING_DIR).join("tmp")).unwrap();
        let (fd, stale) =
            v.io.recycled
                .take(&tmp, "reused", OFlags::WRONLY, None)
                .expect("the old file was kept");
        assert_eq!((stale, v.io.recycled.bytes.load(Ordering::Relaxed)), (3, 0));
        let cutoff = SystemTime::now() - std::time::Duration::from_secs(60);
        assert_eq!(f.sweep_staging(cutoff).await.unwrap(), 0, "the taken file looked stale");
        assert!(rustix::fs::fstat(&fd).is_ok_and(|st| st.st_nlink == 1));
        // Removing the folder releases what its kept files held.
        put(&f, "k", b"newer").await;
        assert_eq!(v.io.recycled.bytes.load(Ordering::Relaxed), 3);
        assert!(f.remove(&ObjectPath::parse("k").unwrap(), 0).await.unwrap());
        drop(fd);
        let _ = rustix::fs::unlinkat(&tmp, "reused", AtFlags::empty());
        v.delete_folder(&loc).await.unwrap();
        assert_eq!(v.io.recycled.bytes.load(Ordering::Relaxed), 0);
    }

    /// A file someone has open, or that has another name, is never reused: the reader keeps
    /// reading the old bytes and the other name keeps them.
    #[tokio::test]
    async fn open_or_linked_files_are_not_recycled() {
        let dir = tempfile::tempdir().unwrap();
        let (f, path) = folder(dir.path()).await;
        put(&f, "held", &[b'a'; 5000]).await;
        put(&f, "linked", &[b'b'; 5000]).await;
        let held = std::fs::File::open(path.join("held")).unwrap();
        std::fs::hard_link(path.join("linked"), path.join("other-name")).unwrap();
        put(&f, "held", b"new").await;
        put(&f, "linked", b"new").await;
        for i in 0..100 {
            put(&f, &format!("x{i}"), &[b'z'; 6000]).await;
            put(&f, &format!("x{i}"), &[b'y'; 7000]).await;
        }
        let mut old = Vec::new();
        std::io::Read::read_to_end(&mut &held, &mut old).unwrap();
        assert!(old == [b'a'; 5000], "a reader of a replaced file saw other bytes");
        assert!(std::fs::read(path.join("other-name")).unwrap() == [b'b'; 5000]);
        assert_eq!(std::fs::read(path.join("held")).unwrap(), b"new");
    }

    /// Reads come back exact whether the page cache holds all, part or none of the range: the
    /// cached part is copied on the caller's task, the rest read by a blocking read.
    #[tokio::test]
    async fn reads_are_exact_cached_or_not() {
        use std::os::fd::AsFd;
        let dir = tempfile::tempdir().unwrap();
        let (f, path) = folder(dir.path()).await;
        let body: Vec<u8> = (0..(3 << 20) + 123).map(|i| (i * 31 % 251) as u8).collect();
        put(&f, "o", &body).await;
        let file = File::open(path.join("o")).unwrap();
        let mut buf = Vec::with_capacity(body.len() + 10);
        std::io::Read::read_to_end(&mut &file, &mut Vec::new()).unwrap();
        assert!(
            read_cached(&file, &mut buf, 0, body.len() + 10),
            "the end of the file was not seen"
        );
        assert!(buf == body, "cached bytes differ");
        let key = ObjectPath::parse("o").unwrap();
        let h = f.open_read(&key).await.unwrap().unwrap();
        for (evict, at, n) in [(true, 0, body.len()), (false, 5, 1 << 20), (true, 2 << 20, body.len())] {
            if evict {
                // Clean pages go; one page at 2 MiB is read back, so the read from there
                // starts cached and goes on uncached (unless read-ahead brought the rest).
                rustix::fs::fadvise(file.as_fd(), 0, None, rustix::fs::Advice::DontNeed).unwrap();
                let mut half = vec![0u8; 4096];
                rustix::io::pread(&file, &mut half, (2 << 20) as u64).unwrap();
            }
            let got = h.read_at(at as u64, n).await.unwrap();
            let end = (at + n).min(body.len());
            assert!(got[..] == body[at..end], "read of {n} at {at} (evicted: {evict})");
        }
    }

    /// Large overwrites reuse the replaced files with their blocks: every version reads back
    /// exactly whether it is longer or shorter than the file it reused, few inodes are used, and
    /// kept files never hold more than the budget.
    #[tokio::test]
    async fn large_overwrites_reuse_files_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 16 << 20;
        let (f, path) = folder_with_budget(dir.path(), Some(budget)).await;
        let mut inodes = std::collections::HashSet::new();
        for i in 0..24usize {
            let key = format!("k{}", i % 3);
            let len = [3 << 20, (2 << 20) + 5, (3 << 20) + 4096 + 77, 1 << 20][i % 4];
            let body: Vec<u8> = (0..len).map(|j| (j * 7 + i) as u8).collect();
            put(&f, &key, &body).await;
            assert!(std::fs::read(path.join(&key)).unwrap() == body, "write {i}");
            inodes.insert(std::fs::metadata(path.join(&key)).unwrap().ino());
            // Recycling runs after the reply for large files; let it land.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        assert!(inodes.len() < 10, "{} distinct inodes for 24 writes", inodes.len());
        let held: u64 = std::fs::read_dir(path.join(STAGING_DIR).join("tmp"))
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().len())
            .sum();
        assert!(held <= budget, "kept files hold {held} bytes");
        assert!(held > 0, "no kept file kept its blocks");
    }

    /// A write that finds the file system full frees the kept files that hold blocks and is
    /// tried once more; with nothing left to free, the error stands after one try.
    #[test]
    fn a_full_file_system_releases_kept_files() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = Arc::new(open_dir_path(dir.path()).unwrap());
        let io = Io {
            volume: "v".into(),
            observer: None,
            dir_syncs: DirSyncs::default(),
            recycled: Recycled::new(64 << 20),
        };
        std::fs::write(dir.path().join("kept"), vec![1u8; 4096]).unwrap();
        io.recycled.keep_or_remove(&tmp, "kept");
        assert_eq!(io.recycled.bytes.load(Ordering::Relaxed), 4096);
        let full = || Err::<(), _>(BackendError::Io(std::io::Error::from_raw_os_error(libc::ENOSPC)));
        let mut tries = 0;
        let r = io.with_space(|| {
            tries += 1;
            if tries == 1 {
                full()
            } else {
                Ok(())
            }
        });
        assert!(r.is_ok() && tries == 2, "not tried again after freeing ({tries} tries)");
        assert!(!dir.path().join("kept").exists(), "the kept file is still there");
        assert_eq!(io.recycled.bytes.load(Ordering::Relaxed), 0);
        let mut tries = 0;
        assert!(io
            .with_space(|| {
                tries += 1;
                full()
            })
            .is_err());
        assert_eq!(tries, 1);
    }

    /// A kept file is picked by the upload's expected size, so a small upload does not take (and
    /// cut down) a large file.
    #[test]
    fn kept_files_are_picked_by_size() {
        let dir = tempfile::tempdir().unwrap();
        let tmp = Arc::new(open_dir_path(dir.path()).unwrap());
        let r = Recycled::new(64 << 20);
        for (name, len) in [("small", 100u64), ("large", 5 << 20), ("middle", 1 << 20)] {
            std::fs::write(dir.path().join(name), vec![1u8; len as usize]).unwrap();
            r.keep_or_remove(&tmp, name);
        }
        let stale = |want| r.take(&tmp, "taken", OFlags::WRONLY, want).map(|(_, stale)| stale);
        assert_eq!(stale(Some(4 << 20)), Some(5 << 20));
        assert_eq!(stale(None), Some(100));
        assert_eq!(stale(Some(0)), Some(1 << 20));
        assert_eq!(stale(Some(1)), None);
    }

    /// A replaced file too large to keep its blocks is recycled after the publish returns: it
    /// ends up emptied (or removed), never holding its old bytes invisibly, unless a reader still
    /// has it open, who keeps reading the old bytes.
    #[tokio::test]
    async fn large_replaced_files_are_emptied_after_publish() {
        let dir = tempfile::tempdir().unwrap();
        let budget = 4 << 20;
        let (f, path) = folder_with_budget(dir.path(), Some(budget)).await;
        let big = (budget / RECYCLED_FILE_SHARE) as usize * 2;
        put(&f, "big", &vec![b'a'; big]).await;
        put(&f, "held", &vec![b'b'; big]).await;
        let held = std::fs::File::open(path.join("held")).unwrap();
        put(&f, "big", &vec![b'c'; big]).await;
        put(&f, "held", &vec![b'd'; big]).await;
        let tmp = path.join(STAGING_DIR).join("tmp");
        let held_bytes = |tmp: &Path| -> u64 {
            std::fs::read_dir(tmp)
                .unwrap()
                .filter_map(|e| e.ok()?.metadata().ok())
                .map(|m| m.len())
                .sum()
        };
        let mut waited = 0;
        while held_bytes(&tmp) > 0 {
            assert!(waited < 500, "replaced files still hold {} bytes", held_bytes(&tmp));
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            waited += 1;
        }
        let mut old = Vec::new();
        std::io::Read::read_to_end(&mut &held, &mut old).unwrap();
        assert!(old == vec![b'b'; big], "a reader of a replaced file saw other bytes");
        assert!(std::fs::read(path.join("big")).unwrap() == vec![b'c'; big]);
        assert!(std::fs::read(path.join("held")).unwrap() == vec![b'd'; big]);
    }

    /// Where the file system takes `O_DIRECT`, large staging files keep it through whole blocks
    /// (no silent fallback to the page cache) and still end with exactly the bytes written.
    #[tokio::test]
    async fn direct_staging_stays_direct() {
        let dir = tempfile::tempdir().unwrap();
        let probe = rustix::fs::open(
            dir.path().join("probe"),
            OFlags::WRONLY | OFlags::CREATE | OFlags::DIRECT,
            Mode::from_raw_mode(0o600),
        );
        let root = Arc::new(open_dir_path(dir.path()).unwrap());
        let io = Arc::new(Io {
            volume: "v".into(),
            observer: None,
            dir_syncs: DirSyncs::default(),
            recycled: Recycled::new(0),
        });
        let mut s = PosixStaging::create(root, io, true, None).unwrap();
        let direct = |s: &PosixStaging| rustix::fs::fcntl_getfl(&*s.file()).unwrap().contains(OFlags::DIRECT);
        assert_eq!(
            direct(&s),
            probe.is_ok(),
            "O_DIRECT at open iff the file system takes it"
        );
        let body: Vec<u8> = (0..DIRECT_BLOCK * 2 + 5000).map(|i| (i % 251) as u8).collect();
        for c in body.chunks(65_537) {
            s.write(Bytes::copy_from_slice(c)).await.unwrap();
        }
        s.settle().await.unwrap();
        assert_eq!(direct(&s), probe.is_ok(), "whole blocks were written direct");
        let st = s.seal(true).await.unwrap();
        assert_eq!(st.size, body.len() as u64);
        let got = std::fs::read(dir.path().join(STAGING_DIR).join("tmp").join(&s.name)).unwrap();
        assert!(got == body);
    }
}
