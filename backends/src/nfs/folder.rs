//! A folder on an NFS volume: path resolution inside it, and its [`Folder`] operations.

use std::collections::VecDeque;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use nfs_rs::Attr;
use penstock_types::UploadId;
use tokio::task::JoinSet;

use super::pool::{status, MAX_LINKS, NF_DIR, NF_LNK, NF_REG};
use super::rpc::{to_stat, Shared};
use super::staging::NfsStaging;
use crate::layout::{self, check_version_name, DirOps, SweepRule, WalkEntry, MARKERS_DIR, TMP_DIR, VERSIONS_DIR};
use crate::listing::{Names, Version, MIN_KEPT_ENTRIES};
use crate::volume::{DirEntry, EntryKind, Folder, ReadHandle, StagingFile, Stat};
use crate::{BackendError, ObjectPath, Result};

/// The outcome of resolving a path inside a folder: the object's handle and attributes, or
/// `None` when nothing is there (a component is missing or is not a directory).
pub(super) type Resolved = Option<(Bytes, Attr)>;

/// A folder on an NFS volume, addressed by its directory's file handle.
pub struct NfsFolder {
    pub(super) root: Bytes,
    pub(super) shared: Arc<Shared>,
}

impl NfsFolder {
    /// Resolves `segs` beneath the folder, following symlinks while they stay inside. With
    /// `follow_last` unset a symlink in the last position is returned itself.
    pub(super) async fn resolve(&self, segs: &[String], follow_last: bool) -> Result<Resolved> {
        let s = &self.shared;
        let mut stack: Vec<Bytes> = vec![self.root.clone()];
        let mut todo: VecDeque<String> = segs.iter().cloned().collect();
        let mut links = 0;
        // The entry reached so far; `None` means "the directory on top of the stack".
        let mut last: Option<(Bytes, Attr)> = None;
        while let Some(seg) = todo.pop_front() {
            match seg.as_str() {
                "" | "." => continue,
                ".." => {
                    if stack.len() == 1 {
                        return Err(BackendError::Escapes);
                    }
                    stack.pop();
                    last = None;
                    continue;
                }
                _ => {}
            }
            let dir = stack.last().expect("non-empty").clone();
            let (fh, attr) = match s.lookup(&dir, &seg).await {
                Ok(x) => x,
                Err(f) if f.is(status::NOENT) || f.is(status::NOTDIR) || f.is(status::NAMETOOLONG) => return Ok(None),
                Err(f) => return Err(f.into()),
            };
            let is_last = todo.is_empty();
            match attr.type_ {
                NF_LNK if !is_last || follow_last => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(BackendError::Escapes);
                    }
                    let target = s
                        .pool
                        .call(true, |m| {
                            let fh = fh.clone();
                            async move { m.readlink(fh).await }
                        })
                        .await?;
                    if target.starts_with('/') {
                        return Err(BackendError::Escapes);
                    }
                    for part in target.split('/').rev() {
                        todo.push_front(part.to_owned());
                    }
                    // An empty target resolves to nothing.
                    if target.is_empty() {
                        return Ok(None);
                    }
                }
                NF_DIR => {
                    stack.push(fh.clone());
                    last = Some((fh, attr));
                }
                _ if is_last => last = Some((fh, attr)),
                // A file (or device) where a directory is needed.
                _ => return Ok(None),
            }
        }
        let (fh, attr) = match last {
            Some(x) => x,
            None => {
                let top = stack.last().expect("non-empty").clone();
                let attr = s.getattr(&top).await?;
                (top, attr)
            }
        };
        Ok(Some((fh, attr)))
    }

    /// Handle of the directory `segs` (following symlinks inside the folder), `None` if absent or
    /// not a directory.
    pub(super) async fn dir(&self, segs: &[String]) -> Result<Option<Bytes>> {
        if segs.is_empty() {
            return Ok(Some(self.root.clone()));
        }
        match self.resolve(segs, true).await? {
            Some((fh, attr)) if attr.type_ == NF_DIR => Ok(Some(fh)),
            _ => Ok(None),
        }
    }

    /// Every entry of directory `dir` (handle `fh`), sorted, with its stat; and whether none
    /// was a symlink (whose kind follows its target, which can change without the directory
    /// changing, so the names of such a directory are not kept).
    async fn read_all(&self, dir: &[String], fh: &Bytes) -> Result<(Vec<DirEntry>, bool)> {
        let s = &self.shared;
        let mut entries = Vec::new();
        let mut plain = true;
        for e in s.read_dir_raw(fh).await? {
            let name = e.file_name.as_str();
            if layout::is_hidden(dir, name) {
                continue;
            }
            let stat = match s.entry_attr(&e).await {
                Some(a) if a.type_ == NF_LNK => {
                    plain = false;
                    self.link_stat(dir, name).await
                }
                Some(a) => to_stat(&a),
                None => None,
            };
            if let Some(stat) = stat {
                entries.push(DirEntry {
                    name: e.file_name,
                    stat,
                });
            }
        }
        entries.sort_by_cached_key(DirEntry::sort_key);
        Ok((entries, plain))
    }

    /// A symlink's stat is its target's, resolved from the folder root: links to siblings
    /// work, links leading out are dropped.
    async fn link_stat(&self, dir: &[String], name: &str) -> Option<Stat> {
        let mut full = dir.to_vec();
        full.push(name.to_owned());
        match self.resolve(&full, true).await {
            Ok(Some((_, attr))) => to_stat(&attr),
            _ => None,
        }
    }

    /// Up to `limit` entries of kept `names` from `from` on, each looked up for its stat (the
    /// lookups of a batch in flight together); entries gone or of another kind since the
    /// names were read are passed over.
    async fn page_of(&self, fh: &Bytes, names: &Names, from: &str, limit: usize) -> Result<Vec<DirEntry>> {
        let s = &self.shared;
        let mut out = Vec::with_capacity(limit.min(names.len()));
        let mut next = names.first_from(from);
        while out.len() < limit && next < names.len() {
            let batch: Vec<&str> = (next..names.len().min(next + (limit - out.len())))
                .map(|i| names.get(i))
                .collect();
            next += batch.len();
            let stats = futures::future::join_all(batch.iter().map(|key| async move {
                let (name, dir_kind) = match key.strip_suffix('/') {
                    Some(n) => (n, true),
                    None => (*key, false),
                };
                let stat = match s.lookup(fh, name).await {
                    Ok((_, a)) if a.type_ == NF_LNK => None,
                    Ok((_, a)) => to_stat(&a),
                    // Removed since the names were read (a server may answer with the stale
                    // handle it still had for the name).
                    Err(f) if f.is(status::NOENT) || f.is(status::STALE) => None,
                    Err(f) => return Err(BackendError::from(f)),
                };
                Ok(stat
                    .filter(|st| (st.kind == EntryKind::Dir) == dir_kind)
                    .map(|stat| DirEntry {
                        name: name.to_owned(),
                        stat,
                    }))
            }))
            .await;
            for st in stats {
                out.extend(st?);
            }
        }
        Ok(out)
    }

    /// Handle of the directory `segs`, creating missing levels; a file on the way is
    /// `ParentIsFile`, a symlink leading out is `Escapes`.
    pub(super) async fn ensure_dir(&self, segs: &[String]) -> Result<Bytes> {
        if let Some(fh) = self.dir(segs).await? {
            return Ok(fh);
        }
        let s = &self.shared;
        let mut dir = self.root.clone();
        for (i, seg) in segs.iter().enumerate() {
            dir = match s.lookup(&dir, seg).await {
                Ok((fh, a)) if a.type_ == NF_DIR => fh,
                Ok((_, a)) if a.type_ == NF_LNK => match self.resolve(&segs[..=i], true).await? {
                    Some((fh, attr)) if attr.type_ == NF_DIR => fh,
                    Some(_) => return Err(BackendError::ParentIsFile),
                    None => return Err(BackendError::ParentIsFile),
                },
                Ok(_) => return Err(BackendError::ParentIsFile),
                Err(f) if f.is(status::NOENT) => match s.mkdir(&dir, seg, true).await {
                    Ok(fh) => fh,
                    Err(f) if f.is(status::EXIST) => match s.lookup(&dir, seg).await? {
                        (fh, a) if a.type_ == NF_DIR => fh,
                        _ => return Err(BackendError::ParentIsFile),
                    },
                    Err(f) if f.is(status::NOTDIR) => return Err(BackendError::ParentIsFile),
                    Err(f) => return Err(f.into()),
                },
                Err(f) if f.is(status::NOTDIR) => return Err(BackendError::ParentIsFile),
                Err(f) => return Err(f.into()),
            };
        }
        Ok(dir)
    }

    async fn new_staging(&self) -> Result<NfsStaging> {
        let s = &self.shared;
        let tmp = self.ensure_dir(&TMP_DIR.map(str::to_owned)).await?;
        let name = layout::staging_name();
        // Random 128-bit names never collide, so the non-idempotent CREATE may be retried.
        let created = s
            .pool
            .call(true, |m| {
                let tmp = tmp.clone();
                let name = name.clone();
                async move { m.create(tmp, &name, Some(0o644)).await }
            })
            .await?;
        Ok(NfsStaging {
            shared: s.clone(),
            folder: self.root.clone(),
            tmp_dir: tmp,
            name,
            fh: created.fh,
            buf: BytesMut::new(),
            offset: 0,
            len: 0,
            inflight: JoinSet::new(),
            acks: Vec::new(),
            published: false,
        })
    }

    /// A reader of the file `fh`; `None` unless it is a regular file.
    fn reader(&self, fh: Bytes, attr: &Attr) -> Option<Box<dyn ReadHandle>> {
        let stat = to_stat(attr).filter(|_| attr.type_ == NF_REG)?;
        Some(Box::new(NfsReader {
            shared: self.shared.clone(),
            fh,
            stat,
        }))
    }

    /// Makes the directory of a marker key and its parents; a file at the key is `IsFile`.
    pub(super) async fn make_marker_dir(&self, segs: &[String]) -> Result<()> {
        let (leaf, parent) = segs.split_last().expect("non-empty path");
        let dir = self.ensure_dir(parent).await?;
        match self.shared.mkdir(&dir, leaf, true).await {
            Ok(_) => Ok(()),
            Err(f) if f.is(status::EXIST) => match self.resolve(segs, true).await? {
                Some((_, attr)) if attr.type_ == NF_DIR => Ok(()),
                _ => Err(BackendError::IsFile),
            },
            Err(f) if f.is(status::NOTDIR) => Err(BackendError::ParentIsFile),
            Err(f) => Err(f.into()),
        }
    }

    /// The directory holding the regular file at `path` (not a marker key), with the file's
    /// handle; `None` when no regular file is there.
    async fn key_file(&self, path: &ObjectPath) -> Result<Option<(Bytes, Bytes)>> {
        if path.is_dir() {
            return Ok(None);
        }
        let Some(parent) = self.dir(path.parent()).await? else {
            return Ok(None);
        };
        match self.shared.lookup(&parent, path.leaf()).await {
            Ok((fh, a)) if a.type_ == NF_REG => Ok(Some((parent, fh))),
            Ok(_) => Ok(None),
            Err(f) if f.is(status::NOENT) => Ok(None),
            Err(f) => Err(f.into()),
        }
    }

    /// The attributes of version `name` if it is the file `fh` (a LINK or RENAME whose
    /// uncertain first attempt took effect); else the error `f` stands.
    async fn version_is(&self, versions: &Bytes, name: &str, fh: &Bytes, f: super::pool::Fault) -> Result<Stat> {
        match self.shared.lookup(versions, name).await {
            Ok((got, a)) if got == *fh => to_stat(&a).ok_or_else(|| f.into()),
            _ => Err(f.into()),
        }
    }

    async fn versions_dir(&self) -> Result<Bytes> {
        self.ensure_dir(&VERSIONS_DIR.map(str::to_owned)).await
    }

    async fn uploads_dir(&self, upload_id: &UploadId) -> Result<Option<Bytes>> {
        self.dir(&layout::upload_dir(upload_id).map(str::to_owned)).await
    }
}

#[async_trait]
impl Folder for NfsFolder {
    async fn stat(&self, path: &ObjectPath) -> Result<Option<Stat>> {
        self.shared
            .timed("stat", async {
                match self.resolve(path.segments(), true).await? {
                    Some((_, attr)) => Ok(to_stat(&attr)),
                    None => Ok(None),
                }
            })
            .await
    }

    /// Every path resolved at once (their LOOKUPs in flight together, as a listing page's are),
    /// each as [`stat`](Folder::stat) resolves it: a page of a thousand files a session wrote
    /// waits for about one round trip per level instead of a thousand.
    async fn stat_many(&self, paths: &[ObjectPath]) -> Result<Vec<Option<Stat>>> {
        self.shared
            .timed("stat_many", async {
                let each = futures::future::join_all(paths.iter().map(|path| async move {
                    Ok(self
                        .resolve(path.segments(), true)
                        .await?
                        .and_then(|(_, attr)| to_stat(&attr)))
                }))
                .await;
                each.into_iter().collect()
            })
            .await
    }

    async fn open_read(&self, path: &ObjectPath) -> Result<Option<Box<dyn ReadHandle>>> {
        self.shared
            .timed("open_read", async {
                if path.is_dir() {
                    return Ok(None);
                }
                Ok(self
                    .resolve(path.segments(), true)
                    .await?
                    .and_then(|(fh, attr)| self.reader(fh, &attr)))
            })
            .await
    }

    async fn create_staging(&self, _size_hint: Option<u64>) -> Result<Box<dyn StagingFile>> {
        let st = self.shared.timed("create_staging", self.new_staging()).await?;
        Ok(Box::new(st))
    }

    async fn compose_parts(&self, upload_id: &UploadId, parts: &[u32]) -> Result<(Box<dyn StagingFile>, Vec<Stat>)> {
        let s = self.shared.clone();
        let (mut staging, stats) = s
            .timed("compose_parts", async {
                let Some(dir) = self.uploads_dir(upload_id).await? else {
                    return Err(BackendError::PartNotFound(parts.first().copied().unwrap_or(0)));
                };
                let mut staging = self.new_staging().await?;
                let mut stats = Vec::with_capacity(parts.len());
                // NFSv3 has no server-side copy: bytes pass through the gateway, several RPCs in
                // flight each way.
                let block = s.chunk() * s.depth;
                for &part in parts {
                    let (fh, attr) = match s.lookup(&dir, &layout::part_name(part)).await {
                        Ok((fh, a)) if a.type_ == NF_REG => (fh, a),
                        Ok(_) => return Err(BackendError::PartNotFound(part)),
                        Err(f) if f.is(status::NOENT) => return Err(BackendError::PartNotFound(part)),
                        Err(f) => return Err(f.into()),
                    };
                    // Reads go by this handle: a part renamed over meanwhile reads as stale,
                    // never as the newer file.
                    stats.push(to_stat(&attr).expect("regular file"));
                    let mut off = 0u64;
                    while off < attr.filesize {
                        let n = (attr.filesize - off).min(block as u64) as usize;
                        let data = s.read(&fh, off, n).await?;
                        if data.is_empty() {
                            break;
                        }
                        off += data.len() as u64;
                        staging.write_inner(data).await?;
                    }
                }
                Ok((staging, stats))
            })
            .await?;
        staging.drain().await?;
        Ok((Box::new(staging), stats))
    }

    // NFSv3 namespace operations (MKDIR, REMOVE, RENAME, ...) are on the server's stable storage
    // when answered (RFC 1813: only WRITE may be UNSTABLE), so `durable` needs nothing more here.
    async fn make_dir(&self, path: &ObjectPath, _durable: bool) -> Result<()> {
        self.shared
            .timed("make_dir", async {
                self.make_marker_dir(path.segments()).await?;
                if let Some(name) = path.marker_name() {
                    layout::remove_marker_body(self, &name).await?;
                }
                Ok(())
            })
            .await
    }

    async fn open_marker(&self, path: &ObjectPath) -> Result<Option<Box<dyn ReadHandle>>> {
        let Some(name) = path.marker_name() else {
            return Ok(None);
        };
        self.shared
            .timed("open_marker", async {
                let Some(dir) = self.dir(&MARKERS_DIR.map(str::to_owned)).await? else {
                    return Ok(None);
                };
                match self.shared.lookup(&dir, &name).await {
                    Ok((fh, attr)) => Ok(self.reader(fh, &attr)),
                    Err(f) if f.is(status::NOENT) => Ok(None),
                    Err(f) => Err(f.into()),
                }
            })
            .await
    }

    async fn remove(&self, path: &ObjectPath, keep_depth: usize, _durable: bool) -> Result<bool> {
        self.shared
            .timed("remove", async {
                let s = &self.shared;
                // A marker's body goes even when its directory stays (it holds other objects)
                // or is already gone.
                let body_removed = match path.marker_name() {
                    Some(name) => layout::remove_marker_body(self, &name).await?,
                    None => false,
                };
                let Some(parent) = self.dir(path.parent()).await? else {
                    return Ok(body_removed);
                };
                let removed = if path.is_dir() {
                    match s.rmdir(&parent, path.leaf()).await {
                        Ok(()) => true,
                        Err(f)
                            if [status::NOENT, status::NOTEMPTY, status::EXIST, status::NOTDIR]
                                .iter()
                                .any(|c| f.is(*c)) =>
                        {
                            false
                        }
                        Err(f) => return Err(f.into()),
                    }
                } else {
                    match s.lookup(&parent, path.leaf()).await {
                        Ok((_, a)) if a.type_ == NF_DIR => false,
                        Ok(_) => match s.remove_entry(&parent, path.leaf()).await {
                            Ok(()) => true,
                            Err(f) if f.is(status::NOENT) => false,
                            Err(f) => return Err(f.into()),
                        },
                        Err(f) if f.is(status::NOENT) => false,
                        Err(f) => return Err(f.into()),
                    }
                };
                if removed {
                    layout::prune_empty(self, path.parent(), keep_depth).await;
                }
                Ok(removed || body_removed)
            })
            .await
    }

    async fn read_dir(&self, dir: &[String]) -> Result<Vec<DirEntry>> {
        self.shared
            .timed("read_dir", async {
                match self.dir(dir).await {
                    Ok(Some(fh)) => Ok(self.read_all(dir, &fh).await?.0),
                    Ok(None) | Err(BackendError::Escapes) => Ok(Vec::new()),
                    Err(e) => Err(e),
                }
            })
            .await
    }

    /// A page read from kept names when the directory has not changed since they were read;
    /// else the whole directory is read (READDIRPLUS carries the stats), and its names kept
    /// once its times have held for `listing::SETTLED` by this gateway's clock (the server's
    /// clock stamps them, so comparing them with this one would not tell).
    async fn read_dir_from(&self, dir: &[String], from: &str, limit: usize) -> Result<Vec<DirEntry>> {
        self.shared
            .timed("read_dir", async {
                let s = &self.shared;
                let found = if dir.is_empty() {
                    Some((self.root.clone(), s.getattr(&self.root).await?))
                } else {
                    match self.resolve(dir, true).await {
                        Ok(r) => r,
                        Err(BackendError::Escapes) => None,
                        Err(e) => return Err(e),
                    }
                };
                let Some((fh, attr)) = found.filter(|(_, a)| a.type_ == NF_DIR) else {
                    return Ok(Vec::new());
                };
                let id = (attr.fsid, attr.fileid);
                let version = Version {
                    mtime: (attr.mtime.seconds as i64, attr.mtime.nseconds as i64),
                    ctime: (attr.ctime.seconds as i64, attr.ctime.nseconds as i64),
                };
                if let Some(names) = s.pages.kept(id, version) {
                    return self.page_of(&fh, &names, from, limit).await;
                }
                let (all, plain) = self.read_all(dir, &fh).await?;
                if plain && all.len() >= MIN_KEPT_ENTRIES && s.pages.seen_settled(id, version) {
                    let keys: Vec<String> = all.iter().map(DirEntry::sort_key).collect();
                    s.pages.keep(id, version, Arc::new(Names::from_sorted(&keys)));
                }
                let start = all.partition_point(|e| e.sort_key().as_str() < from);
                Ok(all.into_iter().skip(start).take(limit).collect())
            })
            .await
    }

    async fn is_empty(&self) -> Result<bool> {
        self.shared.timed("is_empty", layout::is_empty(self)).await
    }

    async fn remove_upload(&self, upload_id: &UploadId) -> Result<()> {
        self.shared
            .timed("remove_upload", layout::remove_upload(self, upload_id))
            .await
    }

    async fn sweep_staging(&self, rule: &SweepRule) -> Result<usize> {
        self.shared
            .timed("sweep_staging", layout::sweep_staging(self, rule))
            .await
    }

    async fn usage(&self) -> Result<u64> {
        self.shared.timed("usage", layout::usage(self)).await
    }

    async fn keep_version(&self, path: &ObjectPath, name: &str, _durable: bool) -> Result<Option<Stat>> {
        check_version_name(name)?;
        // Directory operations are synchronous on an NFS server: no commit is needed.
        self.shared
            .timed("keep_version", async {
                let Some((_, fh)) = self.key_file(path).await? else {
                    return Ok(None);
                };
                let versions = self.versions_dir().await?;
                match self.shared.link(&fh, &versions, name).await {
                    Ok(()) => {}
                    Err(f) if f.is(status::NOENT) || f.is(status::STALE) => return Ok(None),
                    Err(f) if f.is(status::EXIST) => return self.version_is(&versions, name, &fh, f).await.map(Some),
                    Err(f) => return Err(f.into()),
                }
                let (_, a) = self.shared.lookup(&versions, name).await?;
                Ok(to_stat(&a))
            })
            .await
    }

    async fn stash_version(
        &self,
        path: &ObjectPath,
        name: &str,
        keep_depth: usize,
        _durable: bool,
    ) -> Result<Option<Stat>> {
        check_version_name(name)?;
        self.shared
            .timed("stash_version", async {
                let Some((parent, fh)) = self.key_file(path).await? else {
                    return Ok(None);
                };
                let versions = self.versions_dir().await?;
                let st = match self.shared.rename(&parent, path.leaf(), &versions, name).await {
                    Ok(()) => {
                        let (_, a) = self.shared.lookup(&versions, name).await?;
                        to_stat(&a)
                    }
                    Err(f) if f.is(status::NOENT) => match self.version_is(&versions, name, &fh, f).await {
                        Ok(st) => Some(st),
                        Err(_) => return Ok(None),
                    },
                    Err(f) => return Err(f.into()),
                };
                layout::prune_empty(self, path.parent(), keep_depth).await;
                Ok(st)
            })
            .await
    }

    async fn restore_version(&self, name: &str, path: &ObjectPath, _durable: bool) -> Result<bool> {
        check_version_name(name)?;
        if path.is_dir() {
            return Err(BackendError::IsDirectory);
        }
        self.shared
            .timed("restore_version", async {
                let s = &self.shared;
                let Some(versions) = self.dir(&VERSIONS_DIR.map(str::to_owned)).await? else {
                    return Ok(false);
                };
                let vfh = match s.lookup(&versions, name).await {
                    Ok((fh, _)) => fh,
                    Err(f) if f.is(status::NOENT) => return Ok(false),
                    Err(f) => return Err(f.into()),
                };
                for _ in 0..5 {
                    let parent = self.ensure_dir(path.parent()).await?;
                    if let Ok((_, a)) = s.lookup(&parent, path.leaf()).await {
                        if a.type_ == NF_DIR {
                            return Err(BackendError::IsDirectory);
                        }
                    }
                    match s.rename(&versions, name, &parent, path.leaf()).await {
                        Ok(()) => return Ok(true),
                        Err(f) if f.is(status::NOENT) || f.is(status::STALE) => {
                            if let Ok((got, _)) = s.lookup(&parent, path.leaf()).await {
                                if got == vfh {
                                    return Ok(true);
                                }
                            }
                            if s.lookup(&versions, name).await.is_err() {
                                return Ok(false);
                            }
                        }
                        Err(f) if f.is(status::ISDIR) || f.is(status::NOTEMPTY) || f.is(status::EXIST) => {
                            return Err(BackendError::IsDirectory)
                        }
                        Err(f) if f.is(status::NOTDIR) => return Err(BackendError::ParentIsFile),
                        Err(f) => return Err(f.into()),
                    }
                }
                Err(BackendError::Unavailable("parent directories kept vanishing".into()))
            })
            .await
    }

    async fn open_version(&self, name: &str) -> Result<Option<Box<dyn ReadHandle>>> {
        check_version_name(name)?;
        self.shared
            .timed("open_version", async {
                let Some(dir) = self.dir(&VERSIONS_DIR.map(str::to_owned)).await? else {
                    return Ok(None);
                };
                match self.shared.lookup(&dir, name).await {
                    Ok((fh, attr)) => Ok(self.reader(fh, &attr)),
                    Err(f) if f.is(status::NOENT) => Ok(None),
                    Err(f) => Err(f.into()),
                }
            })
            .await
    }

    async fn remove_version(&self, name: &str) -> Result<bool> {
        self.shared
            .timed("remove_version", layout::remove_version(self, name))
            .await
    }
}

#[async_trait]
impl DirOps for NfsFolder {
    type Dir = Bytes;

    fn top(&self) -> Bytes {
        self.root.clone()
    }

    async fn open_path(&self, segs: &[&str]) -> Result<Option<Bytes>> {
        let segs: Vec<String> = segs.iter().map(|s| (*s).to_owned()).collect();
        self.dir(&segs).await
    }

    async fn open_child(&self, dir: &Bytes, name: &str) -> Result<Option<Bytes>> {
        match self.shared.lookup(dir, name).await {
            Ok((fh, a)) if a.type_ == NF_DIR => Ok(Some(fh)),
            Ok(_) => Ok(None),
            Err(f) if f.is(status::NOENT) || f.is(status::NOTDIR) => Ok(None),
            Err(f) => Err(f.into()),
        }
    }

    async fn entries(&self, dir: &Bytes) -> Result<Vec<WalkEntry>> {
        let s = &self.shared;
        let mut out = Vec::new();
        for e in s.read_dir_raw(dir).await? {
            if e.file_name == "." || e.file_name == ".." {
                continue;
            }
            // Gone since it was listed: nothing to count or remove.
            let Some(a) = s.entry_attr(&e).await else { continue };
            out.push(WalkEntry {
                kind: to_stat(&a).map(|st| st.kind),
                size: a.filesize,
                mtime_ns: a.mtime.seconds as i128 * 1_000_000_000 + a.mtime.nseconds as i128,
                name: e.file_name,
            });
        }
        Ok(out)
    }

    async fn remove_file(&self, dir: &Bytes, name: &str) -> Result<bool> {
        match self.shared.remove_entry(dir, name).await {
            Ok(()) => Ok(true),
            Err(f) if f.is(status::NOENT) => Ok(false),
            Err(f) => Err(f.into()),
        }
    }

    async fn remove_dir(&self, dir: &Bytes, name: &str) -> Result<bool> {
        match self.shared.rmdir(dir, name).await {
            Ok(()) => Ok(true),
            Err(f) if f.is(status::NOENT) || f.is(status::NOTEMPTY) || f.is(status::EXIST) => Ok(false),
            Err(f) => Err(f.into()),
        }
    }
}

pub(super) struct NfsReader {
    pub(super) shared: Arc<Shared>,
    pub(super) fh: Bytes,
    pub(super) stat: Stat,
}

#[async_trait]
impl ReadHandle for NfsReader {
    fn stat(&self) -> &Stat {
        &self.stat
    }

    async fn read_at(&self, offset: u64, len: usize) -> Result<Bytes> {
        self.shared.timed("read", self.shared.read(&self.fh, offset, len)).await
    }
}
