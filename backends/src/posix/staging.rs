//! Staging files: bodies written beside the folder's objects, then renamed into place.

use std::fs::File;
use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use penstock_types::UploadId;
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use super::fs::{ensure_dir, kind_of, make_marker_dir, stat_fd};
use super::Io;
use crate::layout::{self, MARKERS_DIR, TMP_DIR};
use crate::volume::{Announce, Announced, EntryKind, StagingFile, Stat};
use crate::{BackendError, ObjectPath, Result};

/// Staging writes are gathered into blocks of this size before each blocking (vectored) write.
const WRITE_BLOCK: usize = 1 << 20;

/// Size of the aligned blocks that carry direct (page-cache bypassing) staging writes.
pub(super) const DIRECT_BLOCK: usize = 1 << 20;

/// Alignment of direct writes' buffers, lengths and offsets: the largest logical block size of
/// common devices, so one value serves every file system that accepts `O_DIRECT`.
const DIRECT_ALIGN: usize = 4096;

pub(super) struct PosixStaging {
    io: Arc<Io>,
    root: Arc<OwnedFd>,
    pub(super) name: String,
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
    pub(super) len: u64,
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
    pub(super) fn new() -> Self {
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
        let tmp_dir = ensure_dir(root, &TMP_DIR, None)?;
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
    pub(super) fn new(root: Arc<OwnedFd>, io: Arc<Io>, direct: bool, size_hint: Option<u64>) -> Self {
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
            name: layout::staging_name(),
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
    pub(super) fn create(root: Arc<OwnedFd>, io: Arc<Io>, direct: bool, size_hint: Option<u64>) -> Result<Self> {
        let mut s = Self::new(root, io, direct, size_hint);
        s.opened = Some(Opened::make(&s.root, &s.io, &s.name, direct, size_hint)?);
        Ok(s)
    }

    pub(super) fn file(&self) -> Arc<File> {
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
    pub(super) async fn settle(&mut self) -> Result<()> {
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

    /// The rename of this (made) file to `leaf` in the directory made of `dir` segments, to be
    /// run on a blocking thread.
    fn rename(&self, dir: Vec<String>, leaf: String, durable: bool) -> Rename {
        Rename {
            root: self.root.clone(),
            tmp_dir: self.opened.as_ref().expect("made before it is renamed").tmp_dir.clone(),
            name: self.name.clone(),
            io: self.io.clone(),
            dir,
            leaf,
            durable,
        }
    }

    /// After a rename: marks the file published and recycles the file it swapped out of the key.
    fn renamed(&mut self, replaced: Option<Replaced>) {
        self.published = true;
        if let Some((tmp_dir, name)) = replaced {
            // Emptying or removing a large file frees its extents, which took 8-16 ms per 16 MiB
            // file here (ext4 with `discard`): the write is durable already, so that waits for no
            // reply.
            let io = self.io.clone();
            tokio::task::spawn_blocking(move || io.recycled.keep_or_remove(&tmp_dir, &name));
        }
    }

    /// Renames the staging file to `leaf` in the directory made of `dir` segments.
    async fn rename_into(&mut self, dir: Vec<String>, leaf: String, durable: bool) -> Result<()> {
        self.ensure_opened().await?;
        let rename = self.rename(dir, leaf, durable);
        let replaced = self.io.run("rename", move || rename.run()).await?;
        self.renamed(replaced);
        Ok(())
    }

    /// Where `path` puts the file: the directory's segments, the leaf, and for a marker key the
    /// directory to make first.
    fn target(path: &ObjectPath) -> (Vec<String>, String, Option<Vec<String>>) {
        match path.marker_name() {
            // A marker with a body: the directory at the key, the bytes in the hidden area.
            Some(payload) => (
                MARKERS_DIR.map(str::to_owned).to_vec(),
                payload,
                Some(path.segments().to_vec()),
            ),
            None => (path.parent().to_vec(), path.leaf().to_owned(), None),
        }
    }
}

/// A file swapped out of its key, left under the staging name to be recycled.
type Replaced = (Arc<OwnedFd>, String);

/// A staging file's rename into its key, as one blocking call.
struct Rename {
    root: Arc<OwnedFd>,
    tmp_dir: Arc<OwnedFd>,
    name: String,
    io: Arc<Io>,
    dir: Vec<String>,
    leaf: String,
    durable: bool,
}

impl Rename {
    /// Renames (making the parent directories), syncs the directory when durable, and returns a
    /// large file it swapped out of the key, to be recycled after the reply.
    fn run(self) -> Result<Option<Replaced>> {
        let Rename {
            root,
            tmp_dir,
            name,
            io,
            dir,
            leaf,
            durable,
        } = self;
        let dir: Vec<&str> = dir.iter().map(String::as_str).collect();
        // A concurrent delete may prune a parent directory between our mkdir and the rename;
        // the rename then fails with ENOENT and the directories are made again.
        let mut attempts = 0;
        loop {
            attempts += 1;
            let parent = ensure_dir(&root, &dir, durable.then_some(&io.dir_syncs))?;
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

    async fn sync(&mut self) -> Result<()> {
        let Some(o) = &self.opened else {
            return Err(BackendError::Io(std::io::Error::other(
                "sync of a staging file not sealed",
            )));
        };
        let file = o.file.clone();
        self.io.run("sync", move || Ok(file.sync_all()?)).await
    }

    async fn publish(mut self: Box<Self>, path: &ObjectPath, durable: bool) -> Result<()> {
        let (dir, leaf, marker) = Self::target(path);
        if let Some(segs) = marker {
            let (root, io) = (self.root.clone(), self.io.clone());
            self.io
                .run("make_dir", move || {
                    make_marker_dir(&root, &segs, durable.then_some(&io.dir_syncs))
                })
                .await?;
        }
        self.rename_into(dir, leaf, durable).await
    }

    /// One blocking call for the sync, the caller's note, the rename and what follows it: a
    /// small PUT's file and metadata steps then wake one pool thread instead of four. Timed as
    /// the backend operation `publish`, the caller's steps included.
    async fn publish_announced(
        mut self: Box<Self>,
        path: &ObjectPath,
        durable: bool,
        a: Announce,
    ) -> Result<Announced> {
        self.ensure_opened().await?;
        let (dir, leaf, marker) = Self::target(path);
        let rename = self.rename(dir, leaf, durable);
        let (root, file, io) = (self.root.clone(), self.file(), self.io.clone());
        let (announced, replaced) = self
            .io
            .run("publish", move || {
                if durable {
                    file.sync_all()?;
                }
                if !(a.before)() {
                    return Ok((Announced::Withdrawn, None));
                }
                if let Some(segs) = marker {
                    make_marker_dir(&root, &segs, durable.then_some(&io.dir_syncs))?;
                }
                let replaced = rename.run()?;
                (a.after)();
                Ok((Announced::Published, replaced))
            })
            .await?;
        if announced == Announced::Published {
            self.renamed(replaced);
        }
        Ok(announced)
    }

    async fn publish_part(mut self: Box<Self>, upload_id: &UploadId, part: u32, durable: bool) -> Result<()> {
        let dir = layout::upload_dir(upload_id).map(str::to_owned).to_vec();
        self.rename_into(dir, layout::part_name(part), durable).await
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
