//! The NFS calls the backend makes, each timed for the volume's observer.

use std::future::Future;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::{Bytes, BytesMut};
use futures::TryStreamExt;
use nfs_rs::Attr;

use super::pool::{status, FResult, Pool, NF_DIR, NF_REG};
use crate::volume::{EntryKind, IoObserver, Stat};
use crate::{BackendError, Result};

/// State shared by a volume, its folders and their files.
pub(super) struct Shared {
    pub(super) volume: String,
    pub(super) pool: Pool,
    pub(super) io_size: usize,
    pub(super) depth: usize,
    /// File handle of the volume root (export root plus `path`), found on first use.
    pub(super) root: tokio::sync::OnceCell<Bytes>,
    pub(super) path: Vec<String>,
    pub(super) observer: Option<Arc<dyn IoObserver>>,
    /// Folder directory handles by relative path: opening a folder then costs one GETATTR (to
    /// check the handle still names a directory) instead of a LOOKUP per path level.
    pub(super) folders: Mutex<std::collections::HashMap<String, Bytes>>,
    /// Sorted names of large directories, kept between the pages of a listing.
    pub(super) pages: crate::listing::KeptNames,
}

/// Cached folder handles before the cache is emptied and refilled.
pub(super) const FOLDER_CACHE: usize = 16_384;

impl Shared {
    /// Times `fut` as storage operation `op` for the observer, inside a tracing span.
    pub(super) async fn timed<T>(&self, op: &'static str, fut: impl Future<Output = Result<T>>) -> Result<T> {
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
    pub(super) fn chunk(&self) -> usize {
        self.io_size.min(self.pool.io_cap.load(Ordering::Relaxed))
    }

    pub(super) async fn root(&self) -> Result<Bytes> {
        self.root
            .get_or_try_init(|| async {
                let export = self.pool.call(true, |m| async move { Ok(m.getfh().await) }).await?;
                let segs: Vec<&str> = self.path.iter().map(String::as_str).collect();
                Ok::<_, BackendError>(self.mkdirs(export, &segs).await?.0)
            })
            .await
            .cloned()
    }

    pub(super) async fn lookup(&self, dir: &Bytes, name: &str) -> FResult<(Bytes, Attr)> {
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

    pub(super) async fn getattr(&self, fh: &Bytes) -> FResult<Attr> {
        self.pool
            .call(true, |m| {
                let fh = fh.clone();
                async move { m.getattr(fh).await }
            })
            .await
    }

    /// Looks up or makes each directory of `segs` below `dir` without following symlinks (used
    /// for the volume's own levels above folders). Returns the last handle and whether it was made.
    pub(super) async fn mkdirs(&self, mut dir: Bytes, segs: &[&str]) -> Result<(Bytes, bool)> {
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
    pub(super) async fn mkdir(&self, dir: &Bytes, name: &str, idempotent: bool) -> FResult<Bytes> {
        let r = self
            .pool
            .call(idempotent, |m| {
                let dir = dir.clone();
                async move { m.mkdir(dir, name, 0o755).await }
            })
            .await?;
        Ok(r.fh)
    }

    pub(super) async fn remove_entry(&self, dir: &Bytes, name: &str) -> FResult<()> {
        self.pool
            .call(true, |m| {
                let dir = dir.clone();
                async move { m.remove(dir, name).await }
            })
            .await
    }

    /// LINK: gives the file `fh` the name `name` in `dir`. Not idempotent: a retry may answer
    /// EXIST for its own first attempt, which callers check by handle.
    pub(super) async fn link(&self, fh: &Bytes, dir: &Bytes, name: &str) -> FResult<()> {
        self.pool
            .call(true, |m| {
                let (fh, dir) = (fh.clone(), dir.clone());
                async move { m.link(fh, dir, name).await.map(drop) }
            })
            .await
    }

    /// RENAME. Not idempotent: a retry may answer NOENT for its own first attempt, which
    /// callers check by looking up the target.
    pub(super) async fn rename(&self, from_dir: &Bytes, from: &str, to_dir: &Bytes, to: &str) -> FResult<()> {
        self.pool
            .call(true, |m| {
                let (from_dir, to_dir) = (from_dir.clone(), to_dir.clone());
                async move { m.rename(from_dir, from, to_dir, to).await }
            })
            .await
    }

    pub(super) async fn rmdir(&self, dir: &Bytes, name: &str) -> FResult<()> {
        self.pool
            .call(true, |m| {
                let dir = dir.clone();
                async move { m.rmdir(dir, name).await }
            })
            .await
    }

    pub(super) async fn read_dir_raw(&self, dir: &Bytes) -> FResult<Vec<nfs_rs::ReaddirplusEntry>> {
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
    pub(super) async fn entry_attr(&self, e: &nfs_rs::ReaddirplusEntry) -> Option<Attr> {
        match &e.attr {
            Some(a) => Some(a.clone()),
            None if !e.handle.is_empty() => self.getattr(&e.handle).await.ok(),
            None => None,
        }
    }

    /// Reads `len` bytes at `offset` of `fh` with up to `depth` RPCs in flight; shorter only at
    /// the end of the file.
    pub(super) async fn read(&self, fh: &Bytes, offset: u64, len: usize) -> Result<Bytes> {
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

pub(super) fn to_stat(a: &Attr) -> Option<Stat> {
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
