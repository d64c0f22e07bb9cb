//! The storage seam: a [`Volume`] holds folders, a [`Folder`] holds objects.
//!
//! Every path given to a folder is an [`ObjectPath`] (already validated) or a multipart upload id;
//! implementations must resolve them beneath the folder's directory so that neither keys nor
//! symlinks found on disk lead outside it.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;

use crate::{FolderLocation, ObjectPath, Result, SweepRule, UploadId};

/// What a directory entry or stat result is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
}

/// File attributes the gateway needs: size, times, and the identity used as a change fingerprint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stat {
    pub kind: EntryKind,
    pub size: u64,
    pub inode: u64,
    /// Modification time in nanoseconds since the Unix epoch.
    pub mtime_ns: i128,
}

/// One entry of a directory listing.
#[derive(Debug, Clone)]
pub struct DirEntry {
    pub name: String,
    pub stat: Stat,
}

impl DirEntry {
    /// The key by which S3 orders this entry among its siblings: directories sort as `name/`.
    pub fn sort_key(&self) -> String {
        match self.stat.kind {
            EntryKind::Dir => format!("{}/", self.name),
            EntryKind::File => self.name.clone(),
        }
    }
}

/// Receives the duration of every storage operation, for metrics.
pub trait IoObserver: Send + Sync {
    /// One operation `op` on `volume` took `elapsed`.
    fn observe(&self, volume: &str, op: &'static str, elapsed: std::time::Duration);
}

/// A storage location holding many folders.
#[async_trait]
pub trait Volume: Send + Sync {
    /// The volume's configured name (`volume1` in `local:volume1`).
    fn name(&self) -> &str;
    /// Creates a new, empty folder; fails with `FolderExists` if its directory is already there.
    async fn create_folder(&self, loc: &FolderLocation) -> Result<()>;
    /// Opens an existing folder.
    async fn open_folder(&self, loc: &FolderLocation) -> Result<Arc<dyn Folder>>;
    /// Removes a folder that holds no objects (the hidden staging directory is removed with it).
    async fn delete_folder(&self, loc: &FolderLocation) -> Result<()>;
    /// Checks that the volume is reachable and usable (readiness).
    async fn check(&self) -> Result<()>;
}

/// One folder's objects. All paths resolve beneath the folder's directory.
#[async_trait]
pub trait Folder: Send + Sync {
    /// Attributes of the file or directory at `path`, `None` when nothing is there.
    async fn stat(&self, path: &ObjectPath) -> Result<Option<Stat>>;
    /// [`stat`](Self::stat) of each of `paths`, in order: what a listing page checks again for
    /// the entries no stored record describes. A backend that can answer many at once (one
    /// directory handle for paths that share a parent) overrides this; the answers must be what
    /// `stat` would give for each path at some moment during the call.
    async fn stat_many(&self, paths: &[ObjectPath]) -> Result<Vec<Option<Stat>>> {
        stat_each(self, paths).await
    }
    /// Opens a file for reading; directories and missing paths are `None`.
    async fn open_read(&self, path: &ObjectPath) -> Result<Option<Box<dyn ReadHandle>>>;
    /// Starts a new staging file inside the folder's hidden directory. `size_hint` is the
    /// payload's declared size, when known, so a backend can choose how to write it.
    async fn create_staging(&self, size_hint: Option<u64>) -> Result<Box<dyn StagingFile>>;
    /// Starts a staging file whose contents are the given parts of an upload, in order. Also
    /// returns the attributes of each part file as it was read (taken from the opened file, not
    /// the path), so the caller can check that the bytes it joined are the parts it recorded even
    /// when a part is uploaded again meanwhile.
    async fn compose_parts(&self, upload_id: &UploadId, parts: &[u32]) -> Result<(Box<dyn StagingFile>, Vec<Stat>)>;
    /// Creates the directory for a marker key (`a/b/`) and its parents, and drops the payload
    /// the marker had (an empty marker is a bare directory). `durable`: the new directories'
    /// names are on disk before this returns.
    async fn make_dir(&self, path: &ObjectPath, durable: bool) -> Result<()>;
    /// Opens the payload stored for a marker key (`a/b/`) by [`StagingFile::publish`]; `None`
    /// when the marker has none (or `path` is not a marker key).
    async fn open_marker(&self, path: &ObjectPath) -> Result<Option<Box<dyn ReadHandle>>>;
    /// Removes the file (or, for a marker key, its payload and the directory if empty) and then
    /// every parent directory left empty below depth `keep_depth` (parents with marker records
    /// stay), never the folder root. Returns whether something was removed. `durable`: the
    /// removal is on disk before this returns (the emptied parents' removal need not be).
    async fn remove(&self, path: &ObjectPath, keep_depth: usize, durable: bool) -> Result<bool>;
    /// Entries of the directory `dir` (segments from the folder root), sorted in S3 key order,
    /// without the hidden staging directory, unreadable names or entries that escape the folder.
    async fn read_dir(&self, dir: &[String]) -> Result<Vec<DirEntry>>;
    /// The entries of [`read_dir`](Self::read_dir) whose sort keys ([`DirEntry::sort_key`]) are
    /// at or after `from`, at most `limit` of them: one page of a listing, costing the entries
    /// it returns rather than every entry's attributes.
    async fn read_dir_from(&self, dir: &[String], from: &str, limit: usize) -> Result<Vec<DirEntry>>;
    /// Whether the folder holds no objects (ignoring the hidden staging directory).
    async fn is_empty(&self) -> Result<bool>;
    /// Removes the stored parts of a multipart upload.
    async fn remove_upload(&self, upload_id: &UploadId) -> Result<()>;
    /// Removes the staging files `rule` names as leftovers of writes that a crash interrupted.
    /// Returns how many were removed.
    async fn sweep_staging(&self, rule: &SweepRule) -> Result<usize>;
    /// Bytes of regular files in the folder, multipart parts, marker payloads and noncurrent
    /// versions included, in-flight staging files not: what the folder charges to its quota
    /// scope.
    async fn usage(&self) -> Result<u64>;

    // ---- noncurrent versions (`layout::VERSIONS_DIR`); `name` is a `layout::version_name`

    /// Gives the regular file at `path` a second name, `name`, among the versions (a hard
    /// link), so its bytes outlive an overwrite of the key. Returns the file's attributes;
    /// `None` when no regular file is at `path` (a symlink is not followed).
    async fn keep_version(&self, path: &ObjectPath, name: &str, durable: bool) -> Result<Option<Stat>>;
    /// Moves the regular file at `path` to `name` among the versions (a rename: the key is
    /// empty from that instant), then removes parent directories left empty below
    /// `keep_depth` as [`Folder::remove`] does. `None` when no regular file was at `path`.
    async fn stash_version(
        &self,
        path: &ObjectPath,
        name: &str,
        keep_depth: usize,
        durable: bool,
    ) -> Result<Option<Stat>>;
    /// Moves version `name` to `path` (a rename that atomically replaces a file there),
    /// creating parent directories. `false` when there is no version `name`.
    async fn restore_version(&self, name: &str, path: &ObjectPath, durable: bool) -> Result<bool>;
    /// Opens version `name` for reading; `None` when there is none.
    async fn open_version(&self, name: &str) -> Result<Option<Box<dyn ReadHandle>>>;
    /// Removes version `name`; `false` when there was none.
    async fn remove_version(&self, name: &str) -> Result<bool>;
}

/// An open file for reading.
#[async_trait]
pub trait ReadHandle: Send + Sync {
    /// Attributes taken when the file was opened.
    fn stat(&self) -> &Stat;
    /// Reads up to `len` bytes at `offset`; shorter only at the end of the file.
    async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes>;
}

/// The steps a publish runs around its rename (see [`StagingFile::publish_announced`]). Both may
/// block: they run on a thread that may (never on a runtime worker).
pub struct Announce {
    /// Runs once the file's bytes are durable (when the publish is) and before the rename: the
    /// durable note that the file is about to replace what the key holds. `false` withdraws the
    /// publish: the file is not renamed and goes with the staging file.
    pub before: Box<dyn FnOnce() -> bool + Send>,
    /// Runs right after a successful rename (and directory sync), before the call returns.
    pub after: Box<dyn FnOnce() + Send>,
}

/// How [`StagingFile::publish_announced`] ended when nothing failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Announced {
    /// `before` agreed, the file is at its key and `after` has run.
    Published,
    /// `before` withdrew the publish; the key is untouched.
    Withdrawn,
}

/// A file being written in the staging directory. Dropping it before `publish` removes it.
#[async_trait]
pub trait StagingFile: Send {
    /// Appends bytes.
    async fn write(&mut self, data: Bytes) -> Result<()>;
    /// Bytes written so far.
    fn len(&self) -> u64;
    /// Whether nothing has been written.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Flushes buffered data (and fsyncs when `durable`) and returns the file's attributes, which
    /// stay the same after `publish` (rename keeps the inode and mtime).
    async fn seal(&mut self, durable: bool) -> Result<Stat>;
    /// Makes the bytes of a file sealed with `durable: false` durable (fsync, NFS COMMIT); the
    /// attributes `seal` returned stay the same. `seal(false)` then `sync` is `seal(true)` in two
    /// steps, so that the wait for the disk can run beside other work that must also be done
    /// before `publish` (the metadata write that announces it).
    async fn sync(&mut self) -> Result<()>;
    /// Atomically moves the sealed file to `path`, creating parent directories. For a marker key
    /// (`a/b/`) the directory is made (as by [`Folder::make_dir`]) and the file becomes the
    /// marker's payload, replacing an earlier one (read back with [`Folder::open_marker`]).
    async fn publish(self: Box<Self>, path: &ObjectPath, durable: bool) -> Result<()>;
    /// Atomically moves the sealed file to part `part` of upload `upload_id`.
    async fn publish_part(self: Box<Self>, upload_id: &UploadId, part: u32, durable: bool) -> Result<()>;
    /// For a file sealed with `durable: false`: makes it durable when `durable` (as [`sync`]),
    /// runs `a.before`, and if it agrees publishes the file at `path` (as [`publish`]) and runs
    /// `a.after`. An error means the sync or the publish failed (the key keeps what it had); the
    /// caller's steps say themselves whether they ran.
    ///
    /// This default does the steps one after another with a blocking-pool trip for each of the
    /// caller's, the sync beside `before`. A backend whose file steps are blocking calls does
    /// them all in one trip (the POSIX one), so a small PUT wakes fewer threads.
    ///
    /// [`sync`]: StagingFile::sync
    /// [`publish`]: StagingFile::publish
    async fn publish_announced(
        mut self: Box<Self>,
        path: &ObjectPath,
        durable: bool,
        a: Announce,
    ) -> Result<Announced> {
        let Announce { before, after } = a;
        let announced = tokio::task::spawn_blocking(before);
        let synced = if durable { self.sync().await } else { Ok(()) };
        let go = announced
            .await
            .map_err(|e| crate::BackendError::Io(std::io::Error::other(e)))?;
        if !go {
            return Ok(Announced::Withdrawn);
        }
        synced?;
        self.publish(path, durable).await?;
        tokio::task::spawn_blocking(after)
            .await
            .map_err(|e| crate::BackendError::Io(std::io::Error::other(e)))?;
        Ok(Announced::Published)
    }
}

/// [`Folder::stat`] of each of `paths`, one after another: [`Folder::stat_many`] where a backend
/// has nothing better.
pub async fn stat_each<F: Folder + ?Sized>(folder: &F, paths: &[ObjectPath]) -> Result<Vec<Option<Stat>>> {
    let mut out = Vec::with_capacity(paths.len());
    for p in paths {
        out.push(folder.stat(p).await?);
    }
    Ok(out)
}
