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

use std::path::Component;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::layout::{self, TMP_DIR, UPLOADS_DIR};
use crate::volume::{Folder, IoObserver, Volume};
use crate::{BackendError, FolderLocation, Result};

use folder::NfsFolder;
use pool::{status, Pool, NF_DIR};
use rpc::{Shared, FOLDER_CACHE};

mod folder;
mod pool;
mod rpc;
mod staging;

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
            pages: Default::default(),
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
            s.mkdirs(dir.clone(), &TMP_DIR).await?;
            s.mkdirs(dir, &UPLOADS_DIR).await?;
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
            if !layout::is_empty(&folder).await? {
                return Err(BackendError::FolderNotEmpty);
            }
            layout::remove_hidden(&folder).await?;
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
