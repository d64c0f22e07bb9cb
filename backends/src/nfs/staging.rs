//! Staging files on the server: UNSTABLE WRITEs in flight, COMMIT, then one RENAME into place.

use std::sync::Arc;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use nfs_rs::WriteOutcome;
use penstock_types::UploadId;
use tokio::task::JoinSet;

use super::folder::NfsFolder;
use super::pool::status;
use super::pool::NF_DIR;
use super::rpc::{to_stat, Shared};
use crate::layout::{self, MARKERS_DIR};
use crate::volume::{StagingFile, Stat};
use crate::{BackendError, ObjectPath, Result};

/// A staging file on the server. WRITEs are UNSTABLE and run as spawned tasks, up to `depth` at a
/// time; their acknowledgements are kept for the COMMIT's verifier check.
pub(super) struct NfsStaging {
    pub(super) shared: Arc<Shared>,
    pub(super) folder: Bytes,
    pub(super) tmp_dir: Bytes,
    pub(super) name: String,
    pub(super) fh: Bytes,
    pub(super) buf: BytesMut,
    /// Offset of the first byte in `buf`.
    pub(super) offset: u64,
    pub(super) len: u64,
    pub(super) inflight: JoinSet<Result<Vec<WriteOutcome>>>,
    pub(super) acks: Vec<WriteOutcome>,
    pub(super) published: bool,
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

    pub(super) async fn write_inner(&mut self, data: Bytes) -> Result<()> {
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
    pub(super) async fn drain(&mut self) -> Result<()> {
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

    /// Moves the sealed file to `leaf` in the directory `dir` of the folder's hidden area,
    /// making that directory as needed (parts, marker bodies).
    async fn rename_into_hidden(&mut self, dir: &[&str], leaf: &str) -> Result<()> {
        let segs: Vec<String> = dir.iter().map(|s| (*s).to_owned()).collect();
        let target = self.folder().ensure_dir(&segs).await?;
        match self.rename_into(&target, leaf).await? {
            true => Ok(()),
            false => Err(BackendError::Unavailable(format!(
                "{} removed while a file was moved into it",
                segs.join("/")
            ))),
        }
    }

    /// COMMITs the unstable writes acknowledged so far (each checked against the server's write
    /// verifier, so a server restart since is caught), after which they are durable.
    async fn commit_acks(&mut self) -> Result<()> {
        if self.acks.is_empty() {
            return Ok(());
        }
        let (fh, acks) = (self.fh.clone(), std::mem::take(&mut self.acks));
        self.shared
            .pool
            .call(true, |m| {
                let fh = fh.clone();
                let acks = &acks;
                async move { m.commit_write_batch(fh, 0, 0, acks).await }
            })
            .await?;
        Ok(())
    }
}

/// Writes all of `data` at `off`, continuing after short writes.
pub(super) async fn write_fully(s: &Shared, fh: Bytes, mut off: u64, mut data: Bytes) -> Result<Vec<WriteOutcome>> {
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
            if durable {
                self.commit_acks().await?;
            }
            let attr = s.getattr(&self.fh).await?;
            to_stat(&attr).ok_or_else(|| std::io::Error::other("staging file is not a regular file").into())
        })
        .await
    }

    async fn sync(&mut self) -> Result<()> {
        let s = self.shared.clone();
        s.timed("commit", self.commit_acks()).await
    }

    async fn publish(mut self: Box<Self>, path: &ObjectPath, _durable: bool) -> Result<()> {
        let s = self.shared.clone();
        if let Some(payload) = path.marker_name() {
            // A marker with a body: the directory at the key, the bytes in the hidden area.
            return s
                .timed("rename", async {
                    self.folder().make_marker_dir(path.segments()).await?;
                    self.rename_into_hidden(&MARKERS_DIR, &payload).await
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

    async fn publish_part(mut self: Box<Self>, upload_id: &UploadId, part: u32, _durable: bool) -> Result<()> {
        let s = self.shared.clone();
        s.timed(
            "rename",
            self.rename_into_hidden(&layout::upload_dir(upload_id), &layout::part_name(part)),
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
