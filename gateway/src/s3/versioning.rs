//! Versioned buckets: Put/GetBucketVersioning, and the writes and deletes that keep noncurrent
//! versions and delete markers.
//!
//! The current version of a key is always the plain file at the key's path (sessions see the
//! latest bytes), with its object record. Noncurrent versions are files in the folder's hidden
//! versions area, each with a version row in the metadata engine; delete markers are rows
//! without a file. A key's rows are ordered by `seq` (newest largest).
//!
//! Every change that moves files is recorded first, in one atomic metadata write, as a
//! [`VersionChange`] inside the key's object record (with the key noted as publishing): the rows
//! it adds, the rows it drops, and the fingerprint of the file it found at the key. Then the
//! files move: a kept version gets a second name (a hard link, so the key is never empty during
//! an overwrite), a deleted one is renamed away, a restored one renamed back over the key. Then
//! [`KeyVersions::settle`] looks at the key: if its file is no longer the one found, the change
//! happened and the dropped rows go with their files; if it still is, nothing happened and the
//! added rows go with theirs. A crash anywhere leaves the note, and the janitor settles it the
//! same way, so no version is ever lost and no row names a file that is not there.

use std::sync::Arc;

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result};

use penstock_backends::layout::version_name;
use penstock_backends::{EntryKind, Folder, ObjectPath, StagingFile, Stat};
use penstock_metadata::{
    Fingerprint, KeyEdit, Metadata, ObjectRecord, QuotaScope, VersionChange, VersionRecord, VersionRef, Versioning,
    NULL_VERSION,
};
use uuid::Uuid;

use super::error::{backend_err, meta_err};
use super::locks::KeyLocks;
use super::object::{effective_record, fingerprint};
use super::put::{write_err, Judged};
use super::{caller, BucketCtx, Gateway};

/// A fresh version id: 32 hex digits, the first 12 the time in milliseconds (ids of one key
/// made later sort later), the rest random.
pub(crate) fn new_version_id() -> String {
    let ms = super::now_ms().max(0) as u64 & 0xffff_ffff_ffff;
    format!("{ms:012x}{:020x}", rand::random::<u128>() >> 48)
}

/// Refuses a version id this gateway cannot have made, as S3 does (400 `InvalidArgument`):
/// ids are made in lower case (`new_version_id`), so one with capitals was altered.
pub(crate) fn check_version_id(v: &str) -> S3Result<()> {
    let ours = |b: u8| b.is_ascii_digit() || (b'a'..=b'f').contains(&b);
    if v == NULL_VERSION || (v.len() == 32 && v.bytes().all(ours)) {
        Ok(())
    } else {
        Err(s3_error!(InvalidArgument, "Invalid version id specified"))
    }
}

/// 404 `NoSuchVersion`.
pub(crate) fn no_such_version() -> S3Error {
    s3_error!(NoSuchVersion, "The specified version does not exist.")
}

/// Sets `x-amz-delete-marker: true` and the marker's version id on an error answer.
fn with_marker_headers(mut e: S3Error, version_id: &str) -> S3Error {
    let mut h = http::HeaderMap::new();
    h.insert("x-amz-delete-marker", http::HeaderValue::from_static("true"));
    if let Ok(v) = http::HeaderValue::from_str(version_id) {
        h.insert("x-amz-version-id", v);
    }
    e.set_headers(h);
    e
}

/// Unix milliseconds of a file's modification time.
fn mtime_ms(st: &Stat) -> i64 {
    (st.mtime_ns / 1_000_000) as i64
}

/// A `seq` above every row of the key: now (in nanoseconds), or one past the newest row if a
/// clock behind another gateway's says less.
fn next_seq(rows: &[VersionRecord]) -> i64 {
    let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64;
    rows.first().map_or(now, |r| now.max(r.seq + 1))
}

/// The file at a key and the record that describes it (synthesized for a file a session wrote).
pub(crate) struct Current {
    pub st: Stat,
    pub rec: ObjectRecord,
}

impl Current {
    fn fingerprint(&self) -> Fingerprint {
        fingerprint(&self.st)
    }
}

/// What a delete did, for the answer.
#[derive(Debug, Default)]
pub(crate) struct Deleted {
    /// `x-amz-version-id`: the version deleted, or the delete marker made.
    pub version_id: Option<String>,
    /// `x-amz-delete-marker`: a marker was made or deleted.
    pub marker: bool,
}

/// What a read of one version found.
pub(crate) enum Found {
    /// The current version (the file at the key).
    Current,
    /// A noncurrent version: its record and the opened file of its bytes.
    Noncurrent(Box<ObjectRecord>, Stat, Option<Arc<dyn penstock_backends::ReadHandle>>),
    /// A delete marker.
    Marker(Box<VersionRecord>),
}

/// The versions of one folder's keys: owned handles, so a change that must finish once begun
/// runs in a task of its own.
#[derive(Clone)]
pub(crate) struct KeyVersions {
    meta: Arc<dyn Metadata>,
    folder: Arc<dyn Folder>,
    folder_id: Uuid,
    scope: QuotaScope,
    quota_locks: Arc<KeyLocks>,
    durable: bool,
    instance: String,
}

impl Gateway {
    /// The versions of `b`'s keys.
    pub(crate) fn key_versions(&self, b: &BucketCtx) -> KeyVersions {
        KeyVersions {
            meta: self.meta.clone(),
            folder: b.folder.clone(),
            folder_id: b.rec.folder_id,
            scope: b.rec.quota_scope,
            quota_locks: self.quota_locks.clone(),
            durable: self.durable,
            instance: self.instance.clone(),
        }
    }

    /// PutBucketVersioning: `Enabled` or `Suspended`; once set, a bucket never goes back to
    /// unversioned (as on S3). MFA delete is not offered.
    pub(crate) async fn put_bucket_versioning(
        &self,
        req: S3Request<PutBucketVersioningInput>,
    ) -> S3Result<S3Response<PutBucketVersioningOutput>> {
        let i = &req.input;
        let conf = &i.versioning_configuration;
        if conf
            .mfa_delete
            .as_ref()
            .is_some_and(|m| m.as_str() == MFADelete::ENABLED)
        {
            return Err(s3_error!(NotImplemented, "MFA delete is not supported by this gateway"));
        }
        let status = match conf.status.as_ref().map(|s| s.as_str()) {
            Some(BucketVersioningStatus::ENABLED) => Versioning::Enabled,
            Some(BucketVersioningStatus::SUSPENDED) => Versioning::Suspended,
            _ => {
                return Err(s3_error!(
                    MalformedXML,
                    "The versioning Status must be Enabled or Suspended"
                ))
            }
        };
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        // Judged on the record as stored: object lock may have been enabled a moment ago.
        let (rec, _) = self
            .edit_bucket(&b.rec, move |rec| {
                let locked = rec.object_lock.is_some() && status != Versioning::Enabled;
                let change = !locked && rec.versioning != Some(status);
                if change {
                    rec.versioning = Some(status);
                }
                change
            })
            .await?;
        if rec.object_lock.is_some() && status != Versioning::Enabled {
            return Err(s3_error!(
                InvalidBucketState,
                "An Object Lock configuration is present on this bucket, so the versioning state cannot be changed."
            ));
        }
        Ok(S3Response::new(PutBucketVersioningOutput::default()))
    }

    /// GetBucketVersioning: no status for a bucket never versioned (S3's answer).
    pub(crate) async fn get_bucket_versioning(
        &self,
        req: S3Request<GetBucketVersioningInput>,
    ) -> S3Result<S3Response<GetBucketVersioningOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let status = b.rec.versioning.map(|v| {
            BucketVersioningStatus::from_static(match v {
                Versioning::Enabled => BucketVersioningStatus::ENABLED,
                Versioning::Suspended => BucketVersioningStatus::SUSPENDED,
            })
        });
        Ok(S3Response::new(GetBucketVersioningOutput {
            status,
            ..Default::default()
        }))
    }

    /// The version `version_id` of `key` as a read finds it. In an unversioned bucket only the
    /// `null` version exists.
    pub(crate) async fn find_version(&self, b: &BucketCtx, key: &str, version_id: &str) -> S3Result<Found> {
        check_version_id(version_id)?;
        let path = super::parse_key(key)?;
        if b.rec.versioning.is_none() || path.is_dir() {
            return if version_id == NULL_VERSION {
                Ok(Found::Current)
            } else {
                Err(no_such_version())
            };
        }
        let kv = self.key_versions(b);
        if let Some(c) = kv.current(&path).await? {
            if c.rec.version() == version_id {
                return Ok(Found::Current);
            }
        }
        let rows = self.meta.versions(b.rec.folder_id, key).await.map_err(meta_err)?;
        let Some(row) = rows.into_iter().find(|r| r.version_id == version_id) else {
            return Err(no_such_version());
        };
        let Some(rec) = row.object.clone() else {
            return Ok(Found::Marker(Box::new(row)));
        };
        let handle = match &row.storage {
            Some(name) => Some(Arc::from(
                b.folder
                    .open_version(name)
                    .await
                    .map_err(backend_err)?
                    .ok_or_else(no_such_version)?,
            )),
            None => None,
        };
        let st = handle.as_ref().map_or(
            Stat {
                kind: EntryKind::File,
                size: 0,
                inode: 0,
                mtime_ns: row.last_modified_ms as i128 * 1_000_000,
            },
            |h: &Arc<dyn penstock_backends::ReadHandle>| *h.stat(),
        );
        Ok(Found::Noncurrent(Box::new(rec), st, handle))
    }

    /// The answer to a read of a key with no file, in a versioned bucket whose newest version of
    /// the key is a delete marker: 404 with `x-amz-delete-marker`; else `e`.
    pub(crate) async fn not_found(&self, b: &BucketCtx, key: &str, e: S3Error) -> S3Error {
        if b.rec.versioning.is_none() {
            return e;
        }
        match self.meta.versions(b.rec.folder_id, key).await {
            Ok(rows) => match rows.first() {
                Some(r) if r.is_delete_marker() => with_marker_headers(e, &r.version_id),
                _ => e,
            },
            Err(_) => e,
        }
    }

    /// For the operations S3 refuses on a delete marker even when it is only the newest version
    /// (an object's tags): `e`, a 404 of such a key, as the marker's 405; else `e` unchanged.
    pub(crate) async fn refused_by_marker(&self, b: &BucketCtx, key: &str, e: S3Error) -> S3Error {
        if *e.code() != s3s::S3ErrorCode::NoSuchKey || b.rec.versioning.is_none() {
            return e;
        }
        match self.meta.versions(b.rec.folder_id, key).await {
            Ok(rows) => match rows.first() {
                Some(r) if r.is_delete_marker() => Gateway::marker_read(r),
                _ => e,
            },
            Err(_) => e,
        }
    }

    /// The answer to a read of a delete marker by its version id (GET, HEAD, its tags or
    /// ACL): 405 naming the resource a `DeleteMarker`, with `Allow: DELETE`, as on S3 (the
    /// HTTP layer adds the `<Method>`, as to every `MethodNotAllowed`).
    pub(crate) fn marker_read(row: &VersionRecord) -> S3Error {
        let e = s3_error!(
            MethodNotAllowed,
            "The specified method is not allowed against this resource."
        );
        let mut e = with_marker_headers(e, &row.version_id);
        let mut h = e.headers().cloned().unwrap_or_default();
        h.insert(http::header::ALLOW, http::HeaderValue::from_static("DELETE"));
        e.set_headers(h);
        super::error::with_detail(e, "<ResourceType>DeleteMarker</ResourceType>")
    }
}

impl KeyVersions {
    /// The regular file at `path` and its record; `None` for no file (or a directory).
    pub(crate) async fn current(&self, path: &ObjectPath) -> S3Result<Option<Current>> {
        let Some(st) = self.folder.stat(path).await.map_err(backend_err)? else {
            return Ok(None);
        };
        if st.kind != EntryKind::File || path.is_dir() {
            return Ok(None);
        }
        let key = path.key();
        let stored = self.meta.object(self.folder_id, &key).await.map_err(meta_err)?;
        Ok(Some(Current {
            rec: effective_record(&key, &st, stored),
            st,
        }))
    }

    async fn charge(&self, delta: i64, sync: bool) -> S3Result<()> {
        super::quota::charge_scope(self.meta.clone(), self.quota_locks.clone(), self.scope, delta, sync).await
    }

    async fn edit(&self, key: &str, edit: KeyEdit<'_>) -> S3Result<()> {
        self.meta
            .edit_key(self.folder_id, key, &edit, &self.instance)
            .await
            .map_err(meta_err)
    }

    /// Begins a change: `rec` (carrying `change`) becomes the key's record, `added` rows are
    /// stored, and the key is noted as publishing, in one atomic write.
    /// With `judged`, only if the key's record is still the one a conditional write judged.
    async fn begin(
        &self,
        key: &str,
        rec: &ObjectRecord,
        added: &[VersionRecord],
        judged: Option<&Judged>,
    ) -> S3Result<()> {
        let edit = KeyEdit {
            object: Some(Some(rec)),
            add: added,
            remove: &[],
            publishing: Some(true),
            expect: judged.map(|j| &j.expect),
        };
        self.meta
            .edit_key(self.folder_id, key, &edit, &self.instance)
            .await
            .map_err(|e| write_err(judged, e))
    }

    /// Publishes `staging` as the new current version of `path` in a versioned bucket (its
    /// record `rec` already carries the new version id, `None` while suspended), keeping the
    /// version it replaces as a noncurrent one unless both are `null`. Charges the new bytes
    /// (less `released` bytes of multipart parts it consumes). `staging` was sealed without a
    /// sync, which this makes. Runs under the key lock.
    pub(crate) async fn publish(
        &self,
        path: &ObjectPath,
        mut staging: Box<dyn StagingFile>,
        rec: &ObjectRecord,
        status: Versioning,
        released: u64,
        judged: Option<&Judged>,
    ) -> S3Result<()> {
        let key = path.key();
        let current = self.current(path).await?;
        let rows = self.meta.versions(self.folder_id, &key).await.map_err(meta_err)?;
        // Suspended, a null current version is replaced like any object of an unversioned
        // bucket; every other current version stays, as a noncurrent one.
        let kept = current
            .as_ref()
            .filter(|c| status == Versioning::Enabled || c.rec.version_id.is_some())
            .map(|c| VersionRecord {
                version_id: c.rec.version().to_owned(),
                seq: next_seq(&rows),
                last_modified_ms: mtime_ms(&c.st),
                object: Some(c.rec.clone().settled()),
                storage: Some(version_name()),
                owner: None,
            });
        // There is one null version: a new one (suspended) or the current one kept replaces
        // the null row.
        let new_null = rec.version_id.is_none() || kept.as_ref().is_some_and(|k| k.version_id == NULL_VERSION);
        let drops = null_rows(&rows, new_null);
        let replaced_size = match (&current, &kept) {
            (Some(c), None) => c.st.size,
            _ => 0,
        };
        let delta = rec.fingerprint.size as i64 - replaced_size as i64 - released as i64;
        // Made durable by the synced metadata write right below.
        self.charge(delta, false).await?;
        let added: Vec<VersionRecord> = kept.into_iter().collect();
        let pending = ObjectRecord {
            replaces: current.as_ref().map(|c| Box::new(c.rec.clone().settled())),
            change: Some(Box::new(VersionChange {
                before: current.as_ref().map(Current::fingerprint),
                deletes: false,
                added: added.iter().map(VersionRecord::reference).collect(),
                drops,
            })),
            ..rec.clone()
        };
        // The staged file's sync and the synced metadata write run together, as in `commit`.
        let (synced, begun) = tokio::join!(
            super::put::sync_if(staging.as_mut(), self.durable),
            self.begin(&key, &pending, &added, judged)
        );
        if let Err(e) = begun {
            let _ = self.charge(-delta, true).await;
            return Err(e);
        }
        // A failed sync leaves the key as it was: `settle` below then undoes the change.
        let mut outcome = synced.map_err(backend_err);
        if let Some(k) = added.first().filter(|_| outcome.is_ok()) {
            let name = k.storage.as_deref().expect("kept versions have files");
            match self.folder.keep_version(path, name, self.durable).await {
                Ok(Some(_)) => {}
                // The file left the key since (a session removed it): nothing to keep.
                Ok(None) => {
                    outcome = self
                        .edit(
                            &key,
                            KeyEdit {
                                remove: &[k.seq],
                                ..Default::default()
                            },
                        )
                        .await
                }
                Err(e) => outcome = Err(backend_err(e)),
            }
        }
        if outcome.is_ok() {
            outcome = staging.publish(path, self.durable).await.map_err(backend_err);
        }
        let happened = self.settle(path).await?;
        if outcome.is_ok() && happened != Some(true) {
            outcome = Err(s3_error!(
                InternalError,
                "The object changed while it was being written"
            ));
        }
        if outcome.is_err() && happened != Some(true) {
            let _ = self.charge(-delta, true).await;
        }
        outcome
    }

    /// Settles the key's pending change, if it has one, by what is at the key now: the change
    /// happened (its dropped rows go, with their files) or it did not (its added rows go, with
    /// theirs). Answers whether it happened; `None` when no change was pending.
    pub(crate) async fn settle(&self, path: &ObjectPath) -> S3Result<Option<bool>> {
        let key = path.key();
        let Some(rec) = self.meta.object(self.folder_id, &key).await.map_err(meta_err)? else {
            return Ok(None);
        };
        let Some(change) = rec.change.clone() else {
            return Ok(None);
        };
        let now = match self.folder.stat(path).await.map_err(backend_err)? {
            Some(st) if st.kind == EntryKind::File => Some(fingerprint(&st)),
            _ => None,
        };
        let happened = now != change.before;
        let (object, gone) = if happened {
            let after = (!change.deletes).then(|| rec.clone().settled());
            (after, &change.drops)
        } else {
            let before = match change.deletes {
                true => Some(rec.clone().settled()),
                false => rec.replaces.clone().map(|r| r.settled()),
            };
            (before, &change.added)
        };
        let remove: Vec<i64> = gone.iter().map(|r| r.seq).collect();
        self.edit(
            &key,
            KeyEdit {
                object: Some(object.as_ref()),
                add: &[],
                remove: &remove,
                publishing: Some(false),
                expect: None,
            },
        )
        .await?;
        // Rows dropped by a change that happened free their bytes; files of rows added by one
        // that did not are second names of bytes still at the key (or absent).
        let mut freed = 0;
        for r in gone {
            if let Some(name) = &r.storage {
                if self.folder.remove_version(name).await.map_err(backend_err)? && happened {
                    freed += r.size;
                }
            }
        }
        if freed > 0 {
            self.charge(-(freed as i64), true).await?;
        }
        Ok(Some(happened))
    }

    /// DeleteObject without a version id in a versioned bucket: the current version becomes a
    /// noncurrent one (suspended: a null one is removed) and a delete marker becomes the latest.
    /// Runs under the key lock.
    pub(crate) async fn delete_latest(
        &self,
        path: &ObjectPath,
        keep_depth: usize,
        status: Versioning,
        owner: Uuid,
    ) -> S3Result<Deleted> {
        let key = path.key();
        let current = self.current(path).await?;
        let rows = self.meta.versions(self.folder_id, &key).await.map_err(meta_err)?;
        let seq = next_seq(&rows);
        let stash = current
            .as_ref()
            .filter(|c| status == Versioning::Enabled || c.rec.version_id.is_some())
            .map(|c| VersionRecord {
                version_id: c.rec.version().to_owned(),
                seq,
                last_modified_ms: mtime_ms(&c.st),
                object: Some(c.rec.clone().settled()),
                storage: Some(version_name()),
                owner: None,
            });
        let marker = VersionRecord {
            version_id: match status {
                Versioning::Enabled => new_version_id(),
                Versioning::Suspended => NULL_VERSION.to_owned(),
            },
            seq: seq + 1,
            last_modified_ms: super::now_ms(),
            object: None,
            storage: None,
            owner: Some(owner),
        };
        let new_null =
            marker.version_id == NULL_VERSION || stash.as_ref().is_some_and(|s| s.version_id == NULL_VERSION);
        let drops = null_rows(&rows, new_null);
        let answer = Deleted {
            version_id: Some(marker.version_id.clone()),
            marker: true,
        };
        let mut added: Vec<VersionRecord> = stash.into_iter().collect();
        added.push(marker);
        let Some(c) = current else {
            // Nothing at the key: the marker alone (and a replaced null row).
            let remove: Vec<i64> = drops.iter().map(|r| r.seq).collect();
            self.edit(
                &key,
                KeyEdit {
                    add: &added,
                    remove: &remove,
                    ..Default::default()
                },
            )
            .await?;
            self.remove_files(&drops).await?;
            return Ok(answer);
        };
        let pending = ObjectRecord {
            change: Some(Box::new(VersionChange {
                before: Some(c.fingerprint()),
                deletes: true,
                added: added.iter().map(VersionRecord::reference).collect(),
                drops,
            })),
            ..c.rec.clone().settled()
        };
        self.begin(&key, &pending, &added, None).await?;
        let stashed = match &added[..] {
            [kept, _marker] => {
                let name = kept.storage.as_deref().expect("kept versions have files");
                self.folder
                    .stash_version(path, name, keep_depth, self.durable)
                    .await
                    .map(drop)
            }
            _ => self.folder.remove(path, keep_depth, self.durable).await.map(drop),
        };
        let happened = self.settle(path).await?;
        stashed.map_err(backend_err)?;
        if happened == Some(true) && added.len() == 1 {
            // A null current version removed, not kept.
            self.charge(-(c.st.size as i64), true).await?;
        }
        Ok(answer)
    }

    /// DeleteObject with a version id: that version goes for good. Deleting the current
    /// version, or the delete marker that is the latest, makes the newest remaining version
    /// current again (its file is renamed back to the key). A version the key does not have
    /// is nothing to delete (success, as on S3). Runs under the key lock.
    pub(crate) async fn delete_version(&self, path: &ObjectPath, keep_depth: usize, v: &str) -> S3Result<Deleted> {
        let key = path.key();
        let current = self.current(path).await?;
        let rows = self.meta.versions(self.folder_id, &key).await.map_err(meta_err)?;
        let mut answer = Deleted {
            version_id: Some(v.to_owned()),
            marker: false,
        };
        let has_current = current.is_some();
        if let Some(c) = current.filter(|c| c.rec.version() == v) {
            let restored = rows.first().filter(|r| !r.is_delete_marker() && r.storage.is_some());
            let pending = match restored {
                Some(p) => ObjectRecord {
                    replaces: Some(Box::new(c.rec.clone().settled())),
                    change: Some(Box::new(VersionChange {
                        before: Some(c.fingerprint()),
                        deletes: false,
                        added: Vec::new(),
                        drops: vec![p.reference()],
                    })),
                    ..p.object.clone().expect("not a marker").settled()
                },
                None => ObjectRecord {
                    change: Some(Box::new(VersionChange {
                        before: Some(c.fingerprint()),
                        deletes: true,
                        added: Vec::new(),
                        drops: Vec::new(),
                    })),
                    ..c.rec.clone().settled()
                },
            };
            self.begin(&key, &pending, &[], None).await?;
            let moved = match restored {
                Some(p) => {
                    let name = p.storage.as_deref().expect("checked above");
                    self.folder.restore_version(name, path, self.durable).await.map(drop)
                }
                None => self.folder.remove(path, keep_depth, self.durable).await.map(drop),
            };
            let happened = self.settle(path).await?;
            moved.map_err(backend_err)?;
            if happened == Some(true) {
                self.charge(-(c.st.size as i64), true).await?;
            }
            return Ok(answer);
        }
        let Some(pos) = rows.iter().position(|r| r.version_id == v) else {
            return Ok(answer);
        };
        let row = &rows[pos];
        answer.marker = row.is_delete_marker();
        let under = rows
            .get(pos + 1)
            .filter(|r| !r.is_delete_marker() && r.storage.is_some());
        if let Some(p) = under.filter(|_| answer.marker && pos == 0 && !has_current) {
            // The latest is this marker: the version under it becomes current again.
            let pending = ObjectRecord {
                change: Some(Box::new(VersionChange {
                    before: None,
                    deletes: false,
                    added: Vec::new(),
                    drops: vec![row.reference(), p.reference()],
                })),
                ..p.object.clone().expect("not a marker").settled()
            };
            self.begin(&key, &pending, &[], None).await?;
            let name = p.storage.as_deref().expect("checked above");
            let moved = self.folder.restore_version(name, path, self.durable).await;
            self.settle(path).await?;
            moved.map_err(backend_err)?;
            return Ok(answer);
        }
        self.edit(
            &key,
            KeyEdit {
                remove: &[row.seq],
                ..Default::default()
            },
        )
        .await?;
        self.remove_files(std::slice::from_ref(&row.reference())).await?;
        Ok(answer)
    }

    /// Removes the files of rows already gone from the engine, refunding their bytes. A crash
    /// before this leaves the files behind (counted by a rescan), never a row without its file.
    async fn remove_files(&self, rows: &[VersionRef]) -> S3Result<()> {
        let mut freed = 0;
        for r in rows {
            if let Some(name) = &r.storage {
                if self.folder.remove_version(name).await.map_err(backend_err)? {
                    freed += r.size;
                }
            }
        }
        if freed > 0 {
            self.charge(-(freed as i64), true).await?;
        }
        Ok(())
    }

    /// Stores a noncurrent version's changed record (its tags), in place.
    pub(crate) async fn update_row(&self, key: &str, row: &VersionRecord) -> S3Result<()> {
        self.edit(
            key,
            KeyEdit {
                add: std::slice::from_ref(row),
                ..Default::default()
            },
        )
        .await
    }
}

/// The `null` rows of a key that a new null version replaces (all of them when `new_null`).
fn null_rows(rows: &[VersionRecord], new_null: bool) -> Vec<VersionRef> {
    if !new_null {
        return Vec::new();
    }
    rows.iter()
        .filter(|r| r.version_id == NULL_VERSION)
        .map(VersionRecord::reference)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_ids_are_checked_and_sort_by_time() {
        let a = new_version_id();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let b = new_version_id();
        assert!(check_version_id(&a).is_ok() && check_version_id("null").is_ok());
        assert!(a[..12] < b[..12], "{a} {b}");
        let altered = format!("{}ABCD", &a[..28]);
        for bad in [
            "",
            "NULL",
            "../x",
            &"a".repeat(33),
            "zzzzzzzzzzzzzzzzzzzzzzzzzzzzzzzz",
            &altered,
        ] {
            assert!(check_version_id(bad).is_err(), "{bad}");
        }
    }
}
