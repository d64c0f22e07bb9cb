//! The NFS backend: folders are directories on an NFS export, spoken to from user space with
//! `nfs-rs` (no kernel mount).
//!
//! Containment: every path is resolved one LOOKUP at a time from the folder's file handle. `..` is
//! never sent to the server; it pops the resolver's own stack, and popping past the folder root is
//! an escape. Symlinks are read (READLINK) and followed only while their target stays inside the
//! folder; absolute targets are escapes. Changes (CREATE, MKDIR, RENAME, REMOVE, RMDIR) name one
//! entry in a directory handle obtained that way.
//!
//! Atomic publish: bytes go to a staging file in the folder's hidden directory (UNSTABLE WRITEs,
//! several in flight), then COMMIT (when durable; the server's write verifier is checked, so a
//! server restart between WRITE and COMMIT fails the request instead of losing data), then one
//! RENAME onto the key. NFSv3 servers commit RENAME and MKDIR to stable storage before replying.
//!
//! Connections: a small pool of mounts, each one TCP connection with many RPCs in flight. A mount
//! that reports a lost connection is dropped and made again on the next call; idempotent calls are
//! retried with backoff for a short budget, after which the caller gets `Unavailable` (S3 503).

use std::collections::VecDeque;
use std::future::Future;
use std::path::Component;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use futures::TryStreamExt;
use nfs_rs::{Attr, Mount, NfsError, WriteOutcome};
use tokio::task::JoinSet;

use crate::volume::{DirEntry, EntryKind, Folder, IoObserver, ReadHandle, StagingFile, Stat, Volume};
use crate::{BackendError, FolderLocation, ObjectPath, Result, MARKERS_DIR, STAGING_DIR};

/// How an NFS volume is reached.
#[derive(Debug, Clone)]
pub struct NfsOptions {
    /// `nfs://server[:port]/export?version=3&nfsport=..&mountport=..` (nfs-rs URL syntax).
    pub url: String,
    /// Directory inside the export that holds the volume's folders (created if missing); empty for
    /// the export root.
    pub path: String,
    /// Mounts (TCP connections) in the pool.
    pub connections: usize,
    /// Largest READ/WRITE payload per RPC; the server's limits cap it further.
    pub io_size: usize,
    /// RPCs in flight per staging file or read call.
    pub depth: usize,
    /// How long idempotent calls are retried on transport errors before `Unavailable`.
    pub retry_budget: Duration,
}

impl NfsOptions {
    /// Defaults for `url`: 4 connections, 1 MiB RPCs, 8 in flight, 3 s retry budget.
    pub fn new(url: &str) -> Self {
        Self {
            url: url.to_owned(),
            path: String::new(),
            connections: 4,
            io_size: 1 << 20,
            depth: 8,
            retry_budget: Duration::from_secs(3),
        }
    }
}

/// NFS file types (identical numbering in v3 `ftype3` and v4 `nfs_ftype4`).
const NF_REG: u32 = 1;
const NF_DIR: u32 = 2;
const NF_LNK: u32 = 5;

/// nfsstat3 / nfsstat4 codes the backend tells apart (shared numbering).
mod status {
    pub const PERM: u32 = 1;
    pub const NOENT: u32 = 2;
    pub const ACCES: u32 = 13;
    pub const EXIST: u32 = 17;
    pub const NOTDIR: u32 = 20;
    pub const ISDIR: u32 = 21;
    pub const NOSPC: u32 = 28;
    pub const NAMETOOLONG: u32 = 63;
    pub const NOTEMPTY: u32 = 66;
    pub const DQUOT: u32 = 69;
    pub const STALE: u32 = 70;
}

/// Symlinks followed in one resolution before it is refused (Linux's MAXSYMLINKS).
const MAX_LINKS: usize = 40;

/// An NFS failure, classified.
#[derive(Debug)]
enum Fault {
    /// The server answered with this status.
    Status(u32, String),
    /// The server could not be reached or is busy; worth retrying later.
    Transient(String),
    /// Anything else (protocol, decoding, local).
    Other(String),
}

impl Fault {
    fn classify(e: &NfsError) -> Fault {
        match e {
            NfsError::Nfs3(code) => {
                use nfs_rs::Nfs3ErrorCode as C;
                let c = match code {
                    C::NFS3ERR_PERM => status::PERM,
                    C::NFS3ERR_NOENT => status::NOENT,
                    C::NFS3ERR_ACCES => status::ACCES,
                    C::NFS3ERR_EXIST => status::EXIST,
                    C::NFS3ERR_NOTDIR => status::NOTDIR,
                    C::NFS3ERR_ISDIR => status::ISDIR,
                    C::NFS3ERR_NOSPC => status::NOSPC,
                    C::NFS3ERR_NAMETOOLONG => status::NAMETOOLONG,
                    C::NFS3ERR_NOTEMPTY => status::NOTEMPTY,
                    C::NFS3ERR_DQUOT => status::DQUOT,
                    C::NFS3ERR_STALE | C::NFS3ERR_BADHANDLE => status::STALE,
                    C::NFS3ERR_JUKEBOX => return Fault::Transient(e.to_string()),
                    _ => return Fault::Other(e.to_string()),
                };
                return Fault::Status(c, e.to_string());
            }
            NfsError::Nfs4(code) => {
                let c = *code as u32;
                // NFS4ERR_DELAY, NFS4ERR_GRACE: the server asks to come back later.
                if c == 10008 || c == 10013 {
                    return Fault::Transient(e.to_string());
                }
                return Fault::Status(c, e.to_string());
            }
            _ => {}
        }
        let transport = e.is_connection_lost()
            || e.is_server_busy()
            || e.operation_outcome().is_some()
            || matches!(
                e.transport_error_kind(),
                Some(std::io::ErrorKind::TimedOut | std::io::ErrorKind::NotConnected)
            )
            || matches!(e, NfsError::ClientClosed(_) | NfsError::LostOpenState(_));
        if transport {
            Fault::Transient(e.to_string())
        } else {
            Fault::Other(e.to_string())
        }
    }

    fn status(&self) -> Option<u32> {
        match self {
            Fault::Status(s, _) => Some(*s),
            _ => None,
        }
    }

    fn is(&self, s: u32) -> bool {
        self.status() == Some(s)
    }
}

impl From<Fault> for BackendError {
    fn from(f: Fault) -> Self {
        match f {
            Fault::Transient(m) => BackendError::Unavailable(format!("NFS: {m}")),
            Fault::Status(s, m) => {
                let errno = match s {
                    status::NOSPC => Some(rustix::io::Errno::NOSPC),
                    status::DQUOT => Some(rustix::io::Errno::DQUOT),
                    status::ACCES => Some(rustix::io::Errno::ACCESS),
                    status::PERM => Some(rustix::io::Errno::PERM),
                    status::NAMETOOLONG => Some(rustix::io::Errno::NAMETOOLONG),
                    status::NOENT => Some(rustix::io::Errno::NOENT),
                    _ => None,
                };
                match errno {
                    Some(e) => BackendError::Io(std::io::Error::from_raw_os_error(e.raw_os_error())),
                    None => BackendError::Io(std::io::Error::other(format!("NFS: {m}"))),
                }
            }
            Fault::Other(m) => BackendError::Io(std::io::Error::other(format!("NFS: {m}"))),
        }
    }
}

type FResult<T> = std::result::Result<T, Fault>;

/// One pooled mount: the current connection, made again after it is lost.
struct Slot {
    mount: RwLock<Option<Arc<dyn Mount>>>,
    connecting: tokio::sync::Mutex<()>,
}

/// The mounts of one volume and the retry policy around every call.
struct Pool {
    url: String,
    slots: Vec<Slot>,
    next: AtomicUsize,
    retry_budget: Duration,
    /// When the last mount attempt failed: callers within a short window fail fast instead of each
    /// waiting for its own connect timeout while the server is down.
    last_failure: Mutex<Option<(Instant, String)>>,
    /// The smallest READ/WRITE payload limit of any mount made so far (servers publish theirs at
    /// mount time; one restarted with other limits lowers it).
    io_cap: AtomicUsize,
}

/// How long a failed mount attempt answers for later callers.
const FAIL_FAST: Duration = Duration::from_millis(250);
/// Upper bound for one mount attempt (TCP connect, MOUNT, FSINFO).
const MOUNT_TIMEOUT: Duration = Duration::from_secs(5);

impl Pool {
    fn new(url: &str, connections: usize, retry_budget: Duration) -> Self {
        Self {
            url: url.to_owned(),
            slots: (0..connections.max(1))
                .map(|_| Slot {
                    mount: RwLock::new(None),
                    connecting: tokio::sync::Mutex::new(()),
                })
                .collect(),
            next: AtomicUsize::new(0),
            retry_budget,
            last_failure: Mutex::new(None),
            io_cap: AtomicUsize::new(usize::MAX),
        }
    }

    async fn mount(&self, i: usize) -> FResult<Arc<dyn Mount>> {
        let slot = &self.slots[i];
        if let Some(m) = slot.mount.read().expect("slot lock").clone() {
            return Ok(m);
        }
        let _guard = slot.connecting.lock().await;
        if let Some(m) = slot.mount.read().expect("slot lock").clone() {
            return Ok(m);
        }
        if let Some((at, msg)) = self.last_failure.lock().expect("failure lock").clone() {
            if at.elapsed() < FAIL_FAST {
                return Err(Fault::Transient(msg));
            }
        }
        let made = match tokio::time::timeout(MOUNT_TIMEOUT, nfs_rs::parse_url_and_mount(&self.url)).await {
            Ok(Ok(m)) => Ok(Arc::<dyn Mount>::from(m)),
            Ok(Err(e)) => Err(match Fault::classify(&e) {
                // A refused or unreachable server is transient; a refused export is not.
                Fault::Other(m) if e.kind() != std::io::ErrorKind::Other => Fault::Transient(m),
                f => f,
            }),
            Err(_) => Err(Fault::Transient(format!("mounting {} timed out", self.url))),
        };
        match made {
            Ok(m) => {
                let cap = m.get_max_read_size().min(m.get_max_write_size()) as usize;
                self.io_cap.fetch_min(cap.max(4096), Ordering::Relaxed);
                *slot.mount.write().expect("slot lock") = Some(m.clone());
                *self.last_failure.lock().expect("failure lock") = None;
                tracing::debug!(url = %self.url, slot = i, "NFS mount made");
                Ok(m)
            }
            Err(f) => {
                let msg = match &f {
                    Fault::Transient(m) | Fault::Other(m) | Fault::Status(_, m) => m.clone(),
                };
                *self.last_failure.lock().expect("failure lock") = Some((Instant::now(), msg));
                Err(f)
            }
        }
    }

    /// Forgets `m` if it is still slot `i`'s mount, so the next call connects again.
    fn discard(&self, i: usize, m: &Arc<dyn Mount>) {
        let mut cur = self.slots[i].mount.write().expect("slot lock");
        if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, m)) {
            *cur = None;
            tracing::warn!(url = %self.url, slot = i, "NFS connection lost; reconnecting on next call");
        }
    }

    /// Runs `f` on a pooled mount. Transport failures drop the mount; `idempotent` calls are then
    /// retried on a fresh one until the retry budget is spent.
    async fn call<T, F, Fut>(&self, idempotent: bool, f: F) -> FResult<T>
    where
        F: Fn(Arc<dyn Mount>) -> Fut,
        Fut: Future<Output = nfs_rs::Result<T>>,
    {
        let start = Instant::now();
        let mut backoff = Duration::from_millis(50);
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
            // Whether the request may have reached the server.
            let (fault, sent) = match self.mount(i).await {
                Ok(m) => match f(m.clone()).await {
                    Ok(v) => return Ok(v),
                    Err(e) => {
                        let fault = Fault::classify(&e);
                        if matches!(fault, Fault::Transient(_)) && !e.is_server_busy() {
                            self.discard(i, &m);
                        }
                        (fault, true)
                    }
                },
                Err(f) => (f, false),
            };
            let again = matches!(fault, Fault::Transient(_))
                && (idempotent || !sent)
                && start.elapsed() + backoff < self.retry_budget;
            if !again {
                return Err(fault);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(800));
        }
    }
}

/// State shared by a volume, its folders and their files.
struct Shared {
    volume: String,
    pool: Pool,
    io_size: usize,
    depth: usize,
    /// File handle of the volume root (export root plus `path`), found on first use.
    root: tokio::sync::OnceCell<Bytes>,
    path: Vec<String>,
    observer: Option<Arc<dyn IoObserver>>,
    /// Folder directory handles by relative path: opening a folder then costs one GETATTR (to
    /// check the handle still names a directory) instead of a LOOKUP per path level.
    folders: Mutex<std::collections::HashMap<String, Bytes>>,
}

/// Cached folder handles before the cache is emptied and refilled.
const FOLDER_CACHE: usize = 16_384;

impl Shared {
    /// Times `fut` as storage operation `op` for the observer, inside a tracing span.
    async fn timed<T>(&self, op: &'static str, fut: impl Future<Output = Result<T>>) -> Result<T> {
        use tracing::Instrument;
        let start = Instant::now();
        let r = fut
            .instrument(tracing::debug_span!("backend", volume = %self.volume, op))
            .await;
        if let Some(o) = &self.observer {
            o.observe(&self.volume, op, start.elapsed());
        }
        r
    }

    /// Payload bytes per READ/WRITE RPC: the configured size within the server's limits.
    fn chunk(&self) -> usize {
        self.io_size.min(self.pool.io_cap.load(Ordering::Relaxed))
    }

    async fn root(&self) -> Result<Bytes> {
        self.root
            .get_or_try_init(|| async {
                let export = self.pool.call(true, |m| async move { Ok(m.getfh().await) }).await?;
                let segs: Vec<&str> = self.path.iter().map(String::as_str).collect();
                Ok::<_, BackendError>(self.mkdirs(export, &segs).await?.0)
            })
            .await
            .cloned()
    }

    async fn lookup(&self, dir: &Bytes, name: &str) -> FResult<(Bytes, Attr)> {
        let r = self
            .pool
            .call(true, |m| {
                let dir = dir.clone();
                async move { m.lookup(dir, name).await }
            })
            .await?;
        match r.attr {
            Some(a) => Ok((r.fh, a)),
            None => {
                let a = self.getattr(&r.fh).await?;
                Ok((r.fh, a))
            }
        }
    }

    async fn getattr(&self, fh: &Bytes) -> FResult<Attr> {
        self.pool
            .call(true, |m| {
                let fh = fh.clone();
                async move { m.getattr(fh).await }
            })
            .await
    }

    /// Looks up or makes each directory of `segs` below `dir` without following symlinks (used
    /// for the volume's own levels above folders). Returns the last handle and whether it was made.
    async fn mkdirs(&self, mut dir: Bytes, segs: &[&str]) -> Result<(Bytes, bool)> {
        let mut made = false;
        for seg in segs {
            made = false;
            dir = match self.lookup(&dir, seg).await {
                Ok((fh, a)) if a.type_ == NF_DIR => fh,
                Ok(_) => return Err(BackendError::ParentIsFile),
                Err(f) if f.is(status::NOENT) => match self.mkdir(&dir, seg, true).await {
                    Ok(fh) => {
                        made = true;
                        fh
                    }
                    Err(f) if f.is(status::EXIST) => match self.lookup(&dir, seg).await? {
                        (fh, a) if a.type_ == NF_DIR => fh,
                        _ => return Err(BackendError::ParentIsFile),
                    },
                    Err(f) => return Err(f.into()),
                },
                Err(f) => return Err(f.into()),
            };
        }
        Ok((dir, made))
    }

    /// MKDIR; a retried one may answer EXIST for its own first attempt, so callers that must
    /// tell "made by us" from "was there" pass `idempotent = false`.
    async fn mkdir(&self, dir: &Bytes, name: &str, idempotent: bool) -> FResult<Bytes> {
        let r = self
            .pool
            .call(idempotent, |m| {
                let dir = dir.clone();
                async move { m.mkdir(dir, name, 0o755).await }
            })
            .await?;
        Ok(r.fh)
    }

    async fn remove_entry(&self, dir: &Bytes, name: &str) -> FResult<()> {
        self.pool
            .call(true, |m| {
                let dir = dir.clone();
                async move { m.remove(dir, name).await }
            })
            .await
    }

    async fn rmdir(&self, dir: &Bytes, name: &str) -> FResult<()> {
        self.pool
            .call(true, |m| {
                let dir = dir.clone();
                async move { m.rmdir(dir, name).await }
            })
            .await
    }

    async fn read_dir_raw(&self, dir: &Bytes) -> FResult<Vec<nfs_rs::ReaddirplusEntry>> {
        self.pool
            .call(true, |m| {
                let dir = dir.clone();
                async move {
                    let stream = m.readdirplus(dir).await;
                    stream.try_collect::<Vec<_>>().await
                }
            })
            .await
    }

    /// Attributes of a directory entry, fetched when READDIRPLUS did not carry them.
    async fn entry_attr(&self, e: &nfs_rs::ReaddirplusEntry) -> Option<Attr> {
        match &e.attr {
            Some(a) => Some(a.clone()),
            None if !e.handle.is_empty() => self.getattr(&e.handle).await.ok(),
            None => None,
        }
    }

    /// Reads `len` bytes at `offset` of `fh` with up to `depth` RPCs in flight; shorter only at
    /// the end of the file.
    async fn read(&self, fh: &Bytes, offset: u64, len: usize) -> Result<Bytes> {
        let chunk = self.chunk();
        let mut out = BytesMut::with_capacity(len);
        let mut pos = 0usize;
        while pos < len {
            let wave: Vec<(u64, u32)> = (pos..len)
                .step_by(chunk)
                .take(self.depth)
                .map(|p| (offset + p as u64, (len - p).min(chunk) as u32))
                .collect();
            let results = futures::future::join_all(wave.iter().map(|&(off, n)| {
                self.pool.call(true, move |m| {
                    let fh = fh.clone();
                    async move { m.read(fh, off, n).await }
                })
            }))
            .await;
            for ((_, asked), r) in wave.iter().zip(results) {
                let got = r?;
                let n = got.len();
                out.extend_from_slice(&got);
                pos += n;
                if n < *asked as usize {
                    // End of file, or a short reply: the next wave restarts right after it.
                    if n == 0 {
                        return Ok(out.freeze());
                    }
                    break;
                }
            }
        }
        Ok(out.freeze())
    }
}

/// A volume on an NFS export.
pub struct NfsVolume {
    name: String,
    shared: Arc<Shared>,
}

impl NfsVolume {
    /// Connects to the export and opens (creating if needed) the volume directory. A server that
    /// cannot be reached now is not an error: the volume reports `Unavailable` until it can. A
    /// server that refuses the export is.
    pub async fn connect(name: &str, opts: NfsOptions) -> Result<Self> {
        nfs_rs_url_check(&opts.url)?;
        let path: Vec<String> = opts
            .path
            .split('/')
            .filter(|s| !s.is_empty() && *s != ".")
            .map(str::to_owned)
            .collect();
        if path.iter().any(|s| s == "..") {
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "NFS volume path has '..'").into());
        }
        let pool = Pool::new(&opts.url, opts.connections, opts.retry_budget);
        let shared = Arc::new(Shared {
            volume: name.to_owned(),
            pool,
            io_size: opts.io_size.max(4096),
            depth: opts.depth.max(1),
            root: tokio::sync::OnceCell::new(),
            path,
            observer: None,
            folders: Mutex::new(std::collections::HashMap::new()),
        });
        let v = Self {
            name: name.to_owned(),
            shared,
        };
        match v.shared.root().await {
            Ok(_) => {
                let m = v.shared.pool.mount(0).await?;
                tracing::info!(volume = name, url = %opts.url, version = ?m.version(), rpc_bytes = v.shared.chunk(), "NFS volume mounted");
                Ok(v)
            }
            Err(BackendError::Unavailable(m)) => {
                tracing::warn!(volume = name, url = %opts.url, error = %m, "NFS server unreachable; will retry on use");
                Ok(v)
            }
            Err(e) => Err(e),
        }
    }

    /// Reports the duration of every storage operation to `observer`.
    pub fn with_observer(self, observer: Arc<dyn IoObserver>) -> Self {
        let Self { name, shared } = self;
        let shared = match Arc::try_unwrap(shared) {
            Ok(mut s) => {
                s.observer = Some(observer);
                Arc::new(s)
            }
            Err(s) => s,
        };
        Self { name, shared }
    }

    async fn folder_dir(&self, loc: &FolderLocation) -> Result<Bytes> {
        let segs = location_segments(loc);
        let key = segs.join("/");
        let cached = self.shared.folders.lock().expect("folder cache").get(&key).cloned();
        if let Some(fh) = cached {
            match self.shared.getattr(&fh).await {
                Ok(a) if a.type_ == NF_DIR => return Ok(fh),
                // Removed (stale) or replaced: look it up again.
                Ok(_) => {}
                Err(f) if f.is(status::STALE) || f.is(status::NOENT) => {}
                Err(f) => return Err(f.into()),
            }
            self.shared.folders.lock().expect("folder cache").remove(&key);
        }
        let fh = self.lookup_folder(&segs).await?;
        let mut cache = self.shared.folders.lock().expect("folder cache");
        if cache.len() >= FOLDER_CACHE {
            cache.clear();
        }
        cache.insert(key, fh.clone());
        Ok(fh)
    }

    async fn lookup_folder(&self, segs: &[String]) -> Result<Bytes> {
        let root = self.shared.root().await?;
        let mut dir = root;
        for seg in segs {
            dir = match self.shared.lookup(&dir, seg).await {
                Ok((fh, a)) if a.type_ == NF_DIR => fh,
                Ok(_) => return Err(BackendError::FolderNotFound(segs.join("/"))),
                Err(f) if f.is(status::NOENT) || f.is(status::STALE) => {
                    return Err(BackendError::FolderNotFound(segs.join("/")))
                }
                Err(f) => return Err(f.into()),
            };
        }
        Ok(dir)
    }
}

fn nfs_rs_url_check(url: &str) -> Result<()> {
    if !url.starts_with("nfs://") {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("NFS volume URL must start with nfs:// (got {url})"),
        )
        .into());
    }
    Ok(())
}

fn location_segments(loc: &FolderLocation) -> Vec<String> {
    loc.relative_path()
        .components()
        .filter_map(|c| match c {
            Component::Normal(s) => s.to_str().map(str::to_owned),
            _ => None,
        })
        .collect()
}

#[async_trait]
impl Volume for NfsVolume {
    fn name(&self) -> &str {
        &self.name
    }

    async fn create_folder(&self, loc: &FolderLocation) -> Result<()> {
        let s = &self.shared;
        s.timed("create_folder", async {
            let root = s.root().await?;
            let segs = location_segments(loc);
            let (leaf, parents) = segs.split_last().expect("folder paths have parents");
            let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
            let (parent, _) = s.mkdirs(root, &parents).await?;
            let dir = match s.mkdir(&parent, leaf, false).await {
                Ok(fh) => fh,
                Err(f) if f.is(status::EXIST) => return Err(BackendError::FolderExists(segs.join("/"))),
                Err(f) => return Err(f.into()),
            };
            s.mkdirs(dir.clone(), &[STAGING_DIR, "tmp"]).await?;
            s.mkdirs(dir, &[STAGING_DIR, "uploads"]).await?;
            Ok(())
        })
        .await
    }

    async fn open_folder(&self, loc: &FolderLocation) -> Result<Arc<dyn Folder>> {
        let dir = self.shared.timed("open_folder", self.folder_dir(loc)).await?;

        Ok(Arc::new(NfsFolder {
            root: dir,
            shared: self.shared.clone(),
        }))
    }

    async fn delete_folder(&self, loc: &FolderLocation) -> Result<()> {
        let s = &self.shared;
        s.timed("delete_folder", async {
            let dir = self.folder_dir(loc).await?;
            s.folders
                .lock()
                .expect("folder cache")
                .remove(&location_segments(loc).join("/"));
            let folder = NfsFolder {
                root: dir.clone(),
                shared: s.clone(),
            };
            if !folder.is_empty_inner().await? {
                return Err(BackendError::FolderNotEmpty);
            }
            match s.lookup(&dir, STAGING_DIR).await {
                Ok(_) => remove_tree(s, &dir, STAGING_DIR).await?,
                Err(f) if f.is(status::NOENT) => {}
                Err(f) => return Err(f.into()),
            }
            // Walk back down to the folder's parent directories to remove the folder and then the
            // two shared hash levels above it if this was their last folder.
            let root = s.root().await?;
            let segs = location_segments(loc);
            let mut chain = vec![root];
            for seg in &segs[..segs.len() - 1] {
                let (fh, _) = s.lookup(chain.last().expect("non-empty"), seg).await?;
                chain.push(fh);
            }
            let n = segs.len();
            match s.rmdir(&chain[n - 1], &segs[n - 1]).await {
                Ok(()) => {}
                Err(f) if f.is(status::NOTEMPTY) || f.is(status::EXIST) => return Err(BackendError::FolderNotEmpty),
                Err(f) => return Err(f.into()),
            }
            for depth in [n - 1, n - 2] {
                if depth == 0 || s.rmdir(&chain[depth - 1], &segs[depth - 1]).await.is_err() {
                    break;
                }
            }
            Ok(())
        })
        .await
    }

    async fn check(&self) -> Result<()> {
        let s = &self.shared;
        s.timed("check", async {
            let root = s.root().await?;
            s.getattr(&root).await?;
            Ok(())
        })
        .await
    }
}

/// Recursively removes `name` in `dir` without following symlinks.
async fn remove_tree(s: &Shared, dir: &Bytes, name: &str) -> Result<()> {
    // Iterative depth-first walk: a stack of directories still to empty.
    let mut stack: Vec<(Bytes, String, Bytes, bool)> = Vec::new();
    let (fh, a) = s.lookup(dir, name).await?;
    if a.type_ != NF_DIR {
        return Ok(s.remove_entry(dir, name).await?);
    }
    stack.push((dir.clone(), name.to_owned(), fh, false));
    while let Some((parent, n, fh, expanded)) = stack.pop() {
        if expanded {
            match s.rmdir(&parent, &n).await {
                Ok(()) => {}
                Err(f) if f.is(status::NOENT) => {}
                Err(f) => return Err(f.into()),
            }
            continue;
        }
        stack.push((parent, n, fh.clone(), true));
        for e in s.read_dir_raw(&fh).await? {
            if e.file_name == "." || e.file_name == ".." {
                continue;
            }
            let kind = s.entry_attr(&e).await.map(|a| a.type_);
            if kind == Some(NF_DIR) {
                stack.push((fh.clone(), e.file_name, e.handle, false));
            } else {
                match s.remove_entry(&fh, &e.file_name).await {
                    Ok(()) => {}
                    Err(f) if f.is(status::NOENT) => {}
                    Err(f) => return Err(f.into()),
                }
            }
        }
    }
    Ok(())
}

fn to_stat(a: &Attr) -> Option<Stat> {
    let kind = match a.type_ {
        NF_REG => EntryKind::File,
        NF_DIR => EntryKind::Dir,
        _ => return None,
    };
    Some(Stat {
        kind,
        size: a.filesize,
        inode: a.fileid,
        mtime_ns: a.mtime.seconds as i128 * 1_000_000_000 + a.mtime.nseconds as i128,
    })
}

/// The outcome of resolving a path inside a folder: the object's handle and attributes, or
/// `None` when nothing is there (a component is missing or is not a directory).
type Resolved = Option<(Bytes, Attr)>;

/// A folder on an NFS volume, addressed by its directory's file handle.
pub struct NfsFolder {
    root: Bytes,
    shared: Arc<Shared>,
}

impl NfsFolder {
    /// Resolves `segs` beneath the folder, following symlinks while they stay inside. With
    /// `follow_last` unset a symlink in the last position is returned itself.
    async fn resolve(&self, segs: &[String], follow_last: bool) -> Result<Resolved> {
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
    async fn dir(&self, segs: &[String]) -> Result<Option<Bytes>> {
        if segs.is_empty() {
            return Ok(Some(self.root.clone()));
        }
        match self.resolve(segs, true).await? {
            Some((fh, attr)) if attr.type_ == NF_DIR => Ok(Some(fh)),
            _ => Ok(None),
        }
    }

    /// Handle of the directory `segs`, creating missing levels; a file on the way is
    /// `ParentIsFile`, a symlink leading out is `Escapes`.
    async fn ensure_dir(&self, segs: &[String]) -> Result<Bytes> {
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

    async fn is_empty_inner(&self) -> Result<bool> {
        let entries = self.shared.read_dir_raw(&self.root).await?;
        Ok(entries
            .iter()
            .all(|e| e.file_name == "." || e.file_name == ".." || e.file_name == STAGING_DIR))
    }

    async fn new_staging(&self) -> Result<NfsStaging> {
        let s = &self.shared;
        let tmp = self.ensure_dir(&[STAGING_DIR.to_owned(), "tmp".to_owned()]).await?;
        let name = format!("{:032x}", rand::random::<u128>());
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
    async fn make_marker_dir(&self, segs: &[String]) -> Result<()> {
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

    /// Removes a marker's payload file; returns whether there was one.
    async fn remove_marker_payload(&self, name: &str) -> Result<bool> {
        let Some(dir) = self.dir(&[STAGING_DIR.to_owned(), MARKERS_DIR.to_owned()]).await? else {
            return Ok(false);
        };
        match self.shared.remove_entry(&dir, name).await {
            Ok(()) => Ok(true),
            Err(f) if f.is(status::NOENT) => Ok(false),
            Err(f) => Err(f.into()),
        }
    }

    /// Removes empty parents of a removed entry, deepest first, keeping `keep_depth` levels.
    async fn prune_empty(&self, parents: &[String], keep_depth: usize) {
        for depth in (keep_depth + 1..=parents.len()).rev() {
            let (leaf, above) = parents[..depth].split_last().expect("depth >= 1");
            let Ok(Some(dir)) = self.dir(above).await else { break };
            if self.shared.rmdir(&dir, leaf).await.is_err() {
                break;
            }
        }
    }

    async fn uploads_dir(&self, upload_id: &str) -> Result<Option<Bytes>> {
        check_upload_id(upload_id)?;
        self.dir(&[STAGING_DIR.to_owned(), "uploads".to_owned(), upload_id.to_owned()])
            .await
    }

    async fn tree_bytes(&self, dir: Bytes, is_root: bool) -> Result<u64> {
        let s = &self.shared;
        let mut total = 0;
        let mut todo = vec![(dir, is_root)];
        while let Some((dir, root)) = todo.pop() {
            for e in s.read_dir_raw(&dir).await? {
                if e.file_name == "." || e.file_name == ".." {
                    continue;
                }
                let Some(a) = s.entry_attr(&e).await else { continue };
                match a.type_ {
                    NF_REG => total += a.filesize,
                    NF_DIR if root && e.file_name == STAGING_DIR => {
                        // Parts and marker payloads count; in-flight staging files do not.
                        for counted in ["uploads", MARKERS_DIR] {
                            if let Ok((d, da)) = s.lookup(&e.handle, counted).await {
                                if da.type_ == NF_DIR {
                                    todo.push((d, false));
                                }
                            }
                        }
                    }
                    NF_DIR => todo.push((e.handle, false)),
                    _ => {}
                }
            }
        }
        Ok(total)
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

    async fn compose_parts(&self, upload_id: &str, parts: &[u32]) -> Result<(Box<dyn StagingFile>, Vec<Stat>)> {
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
                    let (fh, attr) = match s.lookup(&dir, &part.to_string()).await {
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

    async fn make_dir(&self, path: &ObjectPath) -> Result<()> {
        self.shared
            .timed("make_dir", async {
                self.make_marker_dir(path.segments()).await?;
                if let Some(name) = path.marker_name() {
                    self.remove_marker_payload(&name).await?;
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
                let Some(dir) = self.dir(&[STAGING_DIR.to_owned(), MARKERS_DIR.to_owned()]).await? else {
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

    async fn remove(&self, path: &ObjectPath, keep_depth: usize) -> Result<bool> {
        self.shared
            .timed("remove", async {
                let s = &self.shared;
                // A marker's payload goes even when its directory stays (it holds other objects)
                // or is already gone.
                let payload_removed = match path.marker_name() {
                    Some(name) => self.remove_marker_payload(&name).await?,
                    None => false,
                };
                let Some(parent) = self.dir(path.parent()).await? else {
                    return Ok(payload_removed);
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
                    self.prune_empty(path.parent(), keep_depth).await;
                }
                Ok(removed || payload_removed)
            })
            .await
    }

    async fn read_dir(&self, dir: &[String]) -> Result<Vec<DirEntry>> {
        self.shared
            .timed("read_dir", async {
                let s = &self.shared;
                let fh = match self.dir(dir).await {
                    Ok(Some(fh)) => fh,
                    Ok(None) | Err(BackendError::Escapes) => return Ok(Vec::new()),
                    Err(e) => return Err(e),
                };
                let mut entries = Vec::new();
                for e in s.read_dir_raw(&fh).await? {
                    let name = e.file_name.as_str();
                    if name == "." || name == ".." || (dir.is_empty() && name == STAGING_DIR) {
                        continue;
                    }
                    let stat = match s.entry_attr(&e).await {
                        Some(a) if a.type_ == NF_LNK => {
                            // Symlinks resolve from the folder root: links to siblings work, links
                            // leading out are dropped.
                            let mut full = dir.to_vec();
                            full.push(name.to_owned());
                            match self.resolve(&full, true).await {
                                Ok(Some((_, attr))) => to_stat(&attr),
                                _ => None,
                            }
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
                Ok(entries)
            })
            .await
    }

    async fn is_empty(&self) -> Result<bool> {
        self.shared.timed("is_empty", self.is_empty_inner()).await
    }

    async fn remove_upload(&self, upload_id: &str) -> Result<()> {
        self.shared
            .timed("remove_upload", async {
                check_upload_id(upload_id)?;
                let Some(uploads) = self.dir(&[STAGING_DIR.to_owned(), "uploads".to_owned()]).await? else {
                    return Ok(());
                };
                match remove_tree(&self.shared, &uploads, upload_id).await {
                    Err(BackendError::Io(e)) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    r => r,
                }
            })
            .await
    }

    async fn sweep_staging(&self, cutoff: SystemTime) -> Result<usize> {
        self.shared
            .timed("sweep_staging", async {
                let s = &self.shared;
                let Some(tmp) = self.dir(&[STAGING_DIR.to_owned(), "tmp".to_owned()]).await? else {
                    return Ok(0);
                };
                let cutoff_ns = cutoff
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as i128);
                let mut removed = 0;
                for e in s.read_dir_raw(&tmp).await? {
                    let Some(a) = s.entry_attr(&e).await else { continue };
                    let stale = to_stat(&a).is_some_and(|st| st.kind == EntryKind::File && st.mtime_ns < cutoff_ns);
                    if stale && s.remove_entry(&tmp, &e.file_name).await.is_ok() {
                        removed += 1;
                    }
                }
                Ok(removed)
            })
            .await
    }

    async fn usage(&self) -> Result<u64> {
        self.shared
            .timed("usage", self.tree_bytes(self.root.clone(), true))
            .await
    }
}

struct NfsReader {
    shared: Arc<Shared>,
    fh: Bytes,
    stat: Stat,
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

/// A staging file on the server. WRITEs are UNSTABLE and run as spawned tasks, up to `depth` at a
/// time; their acknowledgements are kept for the COMMIT's verifier check.
struct NfsStaging {
    shared: Arc<Shared>,
    folder: Bytes,
    tmp_dir: Bytes,
    name: String,
    fh: Bytes,
    buf: BytesMut,
    /// Offset of the first byte in `buf`.
    offset: u64,
    len: u64,
    inflight: JoinSet<Result<Vec<WriteOutcome>>>,
    acks: Vec<WriteOutcome>,
    published: bool,
}

impl NfsStaging {
    /// Sends `data` (one RPC's worth or less) at the current offset as a spawned task.
    async fn send(&mut self, data: Bytes) -> Result<()> {
        while self.inflight.len() >= self.shared.depth {
            self.reap_one().await?;
        }
        let off = self.offset;
        self.offset += data.len() as u64;
        let shared = self.shared.clone();
        let fh = self.fh.clone();
        self.inflight
            .spawn(async move { write_fully(&shared, fh, off, data).await });
        Ok(())
    }

    async fn reap_one(&mut self) -> Result<()> {
        if let Some(r) = self.inflight.join_next().await {
            let acks = r.map_err(|e| BackendError::Io(std::io::Error::other(e)))??;
            self.acks.extend(acks);
        }
        Ok(())
    }

    async fn write_inner(&mut self, data: Bytes) -> Result<()> {
        let chunk = self.shared.chunk();
        self.len += data.len() as u64;
        if self.buf.is_empty() {
            // Whole RPCs straight from the caller's buffer, no copy.
            let mut data = data;
            while data.len() >= chunk {
                let head = data.split_to(chunk);
                self.send(head).await?;
            }
            self.buf.extend_from_slice(&data);
            return Ok(());
        }
        self.buf.extend_from_slice(&data);
        while self.buf.len() >= chunk {
            let head = self.buf.split_to(chunk).freeze();
            self.send(head).await?;
        }
        Ok(())
    }

    /// Sends what is buffered and waits for every WRITE.
    async fn drain(&mut self) -> Result<()> {
        if !self.buf.is_empty() {
            let rest = self.buf.split().freeze();
            self.send(rest).await?;
        }
        while !self.inflight.is_empty() {
            self.reap_one().await?;
        }
        Ok(())
    }

    /// Renames the staging file to `leaf` in `dir`. `Ok(false)`: the target directory vanished
    /// (a concurrent delete pruned it) and the caller should make it again.
    async fn rename_into(&mut self, dir: &Bytes, leaf: &str) -> Result<bool> {
        let s = &self.shared;
        let (tmp, name) = (self.tmp_dir.clone(), self.name.clone());
        // RENAME is not idempotent in general, but the source name is ours alone: a retry that
        // finds it gone after an uncertain first attempt means that attempt took effect.
        let r = s
            .pool
            .call(true, |m| {
                let (tmp, dir) = (tmp.clone(), dir.clone());
                let name = name.clone();
                async move { m.rename(tmp, &name, dir, leaf).await }
            })
            .await;
        match r {
            Ok(()) => {}
            Err(f) if f.is(status::NOENT) || f.is(status::STALE) => {
                if let Ok((fh, _)) = s.lookup(dir, leaf).await {
                    if fh == self.fh {
                        self.published = true;
                        return Ok(true);
                    }
                }
                return match s.lookup(&self.tmp_dir, &self.name).await {
                    Ok(_) => Ok(false),
                    Err(_) => Err(BackendError::Io(std::io::Error::other(
                        "staging file vanished before rename",
                    ))),
                };
            }
            Err(f) if f.is(status::ISDIR) || f.is(status::NOTEMPTY) || f.is(status::EXIST) => {
                return Err(BackendError::IsDirectory)
            }
            Err(f) if f.is(status::NOTDIR) => return Err(BackendError::ParentIsFile),
            Err(f) => return Err(f.into()),
        }
        self.published = true;
        Ok(true)
    }

    fn folder(&self) -> NfsFolder {
        NfsFolder {
            root: self.folder.clone(),
            shared: self.shared.clone(),
        }
    }

    /// Moves the sealed file to `leaf` in the directory `dir` below the folder's hidden one,
    /// making that directory as needed (parts, marker payloads).
    async fn rename_into_hidden(&mut self, dir: &[&str], leaf: &str) -> Result<()> {
        let segs: Vec<String> = std::iter::once(STAGING_DIR)
            .chain(dir.iter().copied())
            .map(str::to_owned)
            .collect();
        let target = self.folder().ensure_dir(&segs).await?;
        match self.rename_into(&target, leaf).await? {
            true => Ok(()),
            false => Err(BackendError::Unavailable(format!(
                "{} removed while a file was moved into it",
                segs.join("/")
            ))),
        }
    }
}

/// Writes all of `data` at `off`, continuing after short writes.
async fn write_fully(s: &Shared, fh: Bytes, mut off: u64, mut data: Bytes) -> Result<Vec<WriteOutcome>> {
    let mut acks = Vec::new();
    while !data.is_empty() {
        let ack = s
            .pool
            .call(true, |m| {
                let (fh, data) = (fh.clone(), data.clone());
                async move { m.write(fh, off, data).await }
            })
            .await?;
        let n = (ack.count as usize).min(data.len());
        if n == 0 {
            return Err(BackendError::Io(std::io::Error::other("NFS server accepted no bytes")));
        }
        bytes::Buf::advance(&mut data, n);
        off += n as u64;
        acks.push(ack);
    }
    Ok(acks)
}

#[async_trait]
impl StagingFile for NfsStaging {
    async fn write(&mut self, data: Bytes) -> Result<()> {
        self.write_inner(data).await
    }

    fn len(&self) -> u64 {
        self.len
    }

    async fn seal(&mut self, durable: bool) -> Result<Stat> {
        let s = self.shared.clone();
        s.timed("seal", async {
            self.drain().await?;
            if durable && !self.acks.is_empty() {
                let (fh, acks) = (self.fh.clone(), std::mem::take(&mut self.acks));
                s.pool
                    .call(true, |m| {
                        let fh = fh.clone();
                        let acks = &acks;
                        async move { m.commit_write_batch(fh, 0, 0, acks).await }
                    })
                    .await?;
            }
            let attr = s.getattr(&self.fh).await?;
            to_stat(&attr).ok_or_else(|| std::io::Error::other("staging file is not a regular file").into())
        })
        .await
    }

    async fn publish(mut self: Box<Self>, path: &ObjectPath, _durable: bool) -> Result<()> {
        let s = self.shared.clone();
        if let Some(payload) = path.marker_name() {
            // A marker with a body: the directory at the key, the bytes in the hidden area.
            return s
                .timed("rename", async {
                    self.folder().make_marker_dir(path.segments()).await?;
                    self.rename_into_hidden(&[MARKERS_DIR], &payload).await
                })
                .await;
        }
        s.timed("rename", async {
            let folder = self.folder();
            // A concurrent delete may prune a parent between our MKDIR and the RENAME; the rename
            // then fails with NOENT on the target directory and the directories are made again.
            let mut attempts = 0;
            loop {
                attempts += 1;
                let dir = folder.ensure_dir(path.parent()).await?;
                if let Ok((_, a)) = s.lookup(&dir, path.leaf()).await {
                    if a.type_ == NF_DIR {
                        return Err(BackendError::IsDirectory);
                    }
                }
                match self.rename_into(&dir, path.leaf()).await? {
                    true => return Ok(()),
                    false if attempts < 5 => continue,
                    false => {
                        return Err(BackendError::Io(std::io::Error::other(
                            "target directory keeps vanishing",
                        )))
                    }
                }
            }
        })
        .await
    }

    async fn publish_part(mut self: Box<Self>, upload_id: &str, part: u32, _durable: bool) -> Result<()> {
        check_upload_id(upload_id)?;
        let s = self.shared.clone();
        s.timed(
            "rename",
            self.rename_into_hidden(&["uploads", upload_id], &part.to_string()),
        )
        .await
    }
}

impl Drop for NfsStaging {
    fn drop(&mut self) {
        self.inflight.abort_all();
        if self.published {
            return;
        }
        // Removing needs an RPC; hand it to the runtime. If the server is down the sweep of
        // stale staging files removes it later.
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let (s, tmp, name) = (self.shared.clone(), self.tmp_dir.clone(), self.name.clone());
            rt.spawn(async move {
                let _ = s.remove_entry(&tmp, &name).await;
            });
        }
    }
}

/// Upload ids name directories; only the characters the gateway generates are accepted.
fn check_upload_id(id: &str) -> Result<()> {
    if id.is_empty() || id.len() > 64 || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
        return Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "malformed upload id").into());
    }
    Ok(())
}
