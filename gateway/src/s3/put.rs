//! PutObject, and the write path shared by every operation that creates an object: stream the
//! body into a staging file while hashing, verify, then publish record and file together.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use futures::StreamExt;
use s3s::dto::*;
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result};

use penstock_backends::layout::instance as layout_instance;
use penstock_backends::{Announce, Announced, ObjectPath, StagingFile};
use penstock_metadata::{
    on_blocking_thread, Checksums, Expect, MetaError, MetaResult, ObjectAttrs, ObjectRecord, Versioning,
};

use super::acl::write_grants;
use super::checksum::{input_algo, with_checksums, BodyHasher, Claims};
use super::error::{backend_err, meta_err};
use super::object::{attr_input, etag, fingerprint, matches, new_record, parse_key, parse_tagging_header};
use super::rdma::{reply_headers, transfer_failed, Admission};
use super::sse_c::{self, CustomerKey};
use super::{caller, peer, BucketCtx, Gateway};
use crate::metrics::{DataPath, Direction};

/// What must hold about the current object for a conditional write to proceed.
pub(crate) struct WriteConditions {
    pub if_match: Option<ETagCondition>,
    pub if_none_match: Option<ETagCondition>,
}

impl Gateway {
    /// PutObject: a file (or, for keys ending in `/`, a directory marker) at the key's path.
    pub(crate) async fn put_object(&self, mut req: S3Request<PutObjectInput>) -> S3Result<S3Response<PutObjectOutput>> {
        let who = caller(&req)?;
        let from = peer(&req);
        let input = &mut req.input;
        let path = parse_key(&input.key)?;
        let b = self.bucket(&who, &input.bucket).await?;
        let (owner, acl) = self
            .write_acl(&b, &who, input.acl.as_ref(), write_grants!(input))
            .await?;
        let mut attrs = attr_input!(input)
            .with_raw(req.extensions.get::<super::raw_headers::RawAttrs>())
            .into_attrs()?;
        acl.set_on(&mut attrs);
        attrs.owner = owner;
        super::object_lock::lock_input!(input).apply(&b.rec, &mut attrs)?;
        let sse = self.admit_key(&req.headers, from, sse_c::input_key!(input)?)?;
        sse_c::check_bucket(&b.rec, sse.is_some())?;
        attrs.customer_key = sse.as_ref().map(CustomerKey::keyed);
        let tags = parse_tagging_header(input.tagging.as_deref())?;
        let conds = WriteConditions {
            if_match: input.if_match.take(),
            if_none_match: input.if_none_match.take(),
        };
        let stated = Checksums {
            crc32: input.checksum_crc32.clone(),
            crc32c: input.checksum_crc32c.clone(),
            crc64nvme: input.checksum_crc64nvme.clone(),
            sha1: input.checksum_sha1.clone(),
            sha256: input.checksum_sha256.clone(),
            checksum_type: None,
        };
        let claims = Claims::from_headers(&req.headers, input_algo(input.checksum_algorithm.as_ref())?)?
            .with_fields(input.content_md5.as_deref(), &stated);
        let admission = self.rdma.admit(&req.headers, from, &self.metrics, true)?;
        let body = input.body.take();

        if path.is_dir() && matches!(admission, Admission::Serve(_)) {
            return Err(s3_error!(
                InvalidRequest,
                "A key ending in '/' is a directory marker, which takes no payload through an RDMA token"
            ));
        }

        // Stream the payload into a staging file inside the folder, hashing as it goes.
        let hint = payload_hint(&admission, input.content_length);
        let staging = b.folder.create_staging(hint).await.map_err(backend_err)?;
        let mut staging = sse_c::object_staging(sse.as_ref(), attrs.customer_key.as_ref(), staging)?;
        let mut hasher = BodyHasher::new(&claims.algos());
        let path_kind = self
            .fill_staging(&admission, body, staging.as_mut(), &mut hasher, input.content_length)
            .await?;
        let moved = staging.len();
        self.metrics.payload(path_kind, Direction::In, moved);

        // Nothing becomes visible unless every checksum, including trailers, matched.
        let digests = hasher.finish().await;
        // A write that took the second pass (raw_headers.rs) carries its first pass's trailers.
        let carried = req
            .extensions
            .get::<super::raw_headers::CarriedTrailers>()
            .map(|c| &c.0);
        let trailers = req.trailing_headers.as_ref().or(carried).and_then(|t| t.take());
        claims.verify(&digests, trailers.as_ref())?;

        let (rec, size, version_id) = if path.is_dir() && staging.is_empty() {
            // An empty marker is a bare directory; one with a body keeps it in the hidden area
            // (`StagingFile::publish`) like any other file.
            drop(staging);
            (
                self.store_empty_marker(&b, &path, digests, attrs, tags, Some(&conds))
                    .await?,
                0,
                None,
            )
        } else {
            // Synced by `commit`, beside the metadata write that announces the publish.
            let st = staging.seal(false).await.map_err(backend_err)?;
            let rec = new_record(digests, &st, attrs, tags);
            let version_id = self.commit(&b, &path, staging, &rec, Some(&conds), 0).await?;
            (rec, st.size, version_id)
        };

        let mut output = with_checksums!(
            &rec.checksums,
            PutObjectOutput {
                e_tag: Some(etag(&rec.etag)),
                checksum_type: rec.checksums.checksum_type.map(super::checksum::s3_type),
                size: Some(size as i64),
                version_id: version_out(&b, version_id),
                expiration: self.expiration_of(&b.rec.lifecycle, &input.key, &rec.tags, size, rec.fingerprint.mtime_ns),
                server_side_encryption: self.at_rest(),
            },
            ..Default::default()
        );
        sse_c::answer_key!(output, sse.as_ref().map(CustomerKey::md5));
        let mut resp = S3Response::new(output);
        if matches!(admission, Admission::Serve(_)) {
            reply_headers(&mut resp.headers, 200, Some(moved));
        }
        if req
            .extensions
            .get::<std::sync::Arc<super::post_form::FormUpload>>()
            .is_some()
        {
            form_headers(&mut resp);
        }
        Ok(resp)
    }

    /// Fills `staging` with the request's payload: the body, or the token's window read through
    /// the transport (the window's size is the payload's size). Returns how the bytes came.
    pub(crate) async fn fill_staging(
        &self,
        admission: &Admission,
        body: Option<StreamingBlob>,
        staging: &mut dyn StagingFile,
        hasher: &mut BodyHasher,
        declared_len: Option<i64>,
    ) -> S3Result<DataPath> {
        let Admission::Serve(a) = admission else {
            ingest(body, staging, hasher, declared_len).await?;
            return Ok(DataPath::Http);
        };
        // Declared-but-unsent bodies (LMCache's form) were replaced by an empty one upstream.
        drop(body);
        let len = a.token.window().len;
        if len > super::error::MAX_UPLOAD_BYTES {
            return Err(s3_error!(
                EntityTooLarge,
                "The RDMA token's window of {len} bytes exceeds the 5 GiB limit of one PUT or part"
            ));
        }
        let chunks = penstock_rdma::transport::pull(
            a.transport.clone(),
            a.token.clone(),
            len,
            penstock_rdma::transport::pull_chunk(len, a.depth),
            a.depth,
        );
        let mut chunks = std::pin::pin!(chunks);
        while let Some(c) = chunks.next().await {
            let c = c.map_err(|e| transfer_failed(&e, &self.metrics, a.token.kind()))?;
            hasher.update(&c).await;
            staging.write(c).await.map_err(backend_err)?;
        }
        Ok(a.data_path())
    }

    /// An empty directory marker: the directory (without any payload it had) and its record.
    pub(crate) async fn store_empty_marker(
        &self,
        b: &BucketCtx,
        path: &ObjectPath,
        digests: super::checksum::Digests,
        attrs: ObjectAttrs,
        tags: Vec<(String, String)>,
        conds: Option<&WriteConditions>,
    ) -> S3Result<ObjectRecord> {
        let key = path.key();
        let _guard = self.hold_key(b.rec.folder_id, &key).await?;
        let judged = match conds {
            Some(c) => self.check_write_conditions(b, path, c).await?,
            None => None,
        };
        let released = self.marker_payload_size(b, path).await?;
        b.folder.make_dir(path, self.durable).await.map_err(backend_err)?;
        if released > 0 {
            self.charge(&b.rec.quota_scope, -(released as i64)).await?;
        }
        let st = b
            .folder
            .stat(path)
            .await
            .map_err(backend_err)?
            .ok_or_else(|| s3_error!(InternalError, "directory vanished after creation"))?;
        let rec = ObjectRecord {
            etag: super::object::data_etag(&digests.md5, &attrs),
            fingerprint: fingerprint(&st),
            attrs,
            checksums: digests.checksums,
            tags,
            parts: Vec::new(),
            upload_id: None,
            replaces: None,
            version_id: None,
            change: None,
        };
        self.put_record(b, &key, &rec, judged.as_ref()).await?;
        Ok(rec)
    }

    /// Stores an object record outside a publish (a directory marker, a metadata-only copy),
    /// conditional on what a conditional write judged.
    pub(crate) async fn put_record(
        &self,
        b: &BucketCtx,
        key: &str,
        rec: &ObjectRecord,
        judged: Option<&Judged>,
    ) -> S3Result<()> {
        let folder = b.rec.folder_id;
        let stored = match judged {
            Some(j) => {
                self.meta
                    .put_object_if(folder, key, rec, &j.expect, layout_instance())
                    .await
            }
            None => self.meta.put_object(folder, key, rec).await,
        };
        stored.map_err(|e| write_err(judged, e))
    }

    /// Bytes of the payload stored for a directory marker (0 for other keys, or none stored).
    pub(crate) async fn marker_payload_size(&self, b: &BucketCtx, path: &ObjectPath) -> S3Result<u64> {
        if !path.is_dir() {
            return Ok(0);
        }
        let h = b.folder.open_marker(path).await.map_err(backend_err)?;
        Ok(h.map_or(0, |h| h.stat().size))
    }

    /// Makes a staging file sealed without syncing (`seal(false)`) the object at `path`, with its
    /// record, charging the size difference (minus `released` bytes of multipart parts it
    /// consumes) to the folder's scope.
    ///
    /// Two metadata writes surround the rename. The first (synced) stores the new record with
    /// the record of the file it replaces inside it and notes the key as publishing; the file's
    /// own sync runs at the same time (both must be durable before the rename, neither needs the
    /// other, so a durable PUT waits for one disk flush there instead of two); the rename
    /// then puts the file in place (rename keeps inode and mtime, so the new record's fingerprint
    /// matches the moment the file appears); the second keeps only the record of the file that
    /// ended up at the key. At every instant, a crash included, the file at the key has its
    /// record in the store: readers choose by fingerprint and the start-up sweep
    /// (`janitor.rs`) finishes what a crash interrupted. The key lock orders
    /// writers of one key: the last to commit wins for record and bytes.
    pub(crate) async fn commit(
        &self,
        b: &BucketCtx,
        path: &ObjectPath,
        staging: Box<dyn StagingFile>,
        rec: &ObjectRecord,
        conds: Option<&WriteConditions>,
        released: u64,
    ) -> S3Result<Option<String>> {
        let folder = b.rec.folder_id;
        let key = path.key();
        let guard = self.hold_key(folder, &key).await?;
        let judged = match conds {
            Some(c) => self.check_write_conditions(b, path, c).await?,
            None => None,
        };
        if let Some(status) = b.rec.versioning.filter(|_| !path.is_dir()) {
            // Keys ending in '/' are directories on the volume and keep one (null) version.
            let version_id = (status == Versioning::Enabled).then(super::versioning::new_version_id);
            let rec = ObjectRecord {
                version_id: version_id.clone(),
                ..rec.clone()
            };
            let (kv, path) = (self.key_versions(b), path.clone());
            return tokio::spawn(async move {
                let mut guard = guard;
                kv.publish(&path, staging, &rec, status, released, judged.as_ref())
                    .await?;
                // Its settling edit stopped the key's publishing, and with it the claim.
                guard.ended();
                Ok(Some(rec.version().to_owned()))
            })
            .await
            .map_err(super::internal)?;
        }
        let (old, replaced) = self.in_place(b, path).await?;
        let delta = rec.fingerprint.size as i64 - old as i64 - released as i64;
        // From the charge on, the publish runs in a task of its own: a client that disconnects
        // (dropping this future) cannot stop it halfway, with the scope charged for a file that
        // never landed or a pending record never settled. The key lock goes with it.
        let (meta, quota_locks, scope) = (self.meta.clone(), self.quota_locks.clone(), b.rec.quota_scope);
        let (path, rec, durable) = (path.clone(), rec.clone(), self.durable);
        let refund = {
            let (meta, quota_locks, scope) = (meta.clone(), quota_locks.clone(), scope);
            move || super::quota::charge_scope(meta, quota_locks, scope, -delta, true)
        };
        // The answer leaves as soon as the file is published; the settling write after it runs
        // on, still under the key lock (see below).
        let (answer, answered) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let mut guard = guard;
            // Made durable by the record's synced write below.
            if let Err(e) = super::quota::charge_scope(meta.clone(), quota_locks, scope, delta, false).await {
                let _ = answer.send(Err(e));
                return;
            }
            let pending = ObjectRecord {
                replaces: replaced.clone().map(Box::new),
                ..rec.clone()
            };
            // The file's steps and both metadata writes run on the thread that syncs and renames
            // the file (one blocking-pool trip for a small PUT instead of five). The steps report
            // through these: whether the announcing write ran and how, and the answer, which the
            // step after the rename sends.
            let begun: Arc<Mutex<Option<MetaResult<()>>>> = Arc::default();
            let settled = Arc::new(AtomicBool::new(false));
            let answer = Arc::new(Mutex::new(Some(answer)));
            let rt = tokio::runtime::Handle::current();
            let before = {
                let (meta, key, rt, begun) = (meta.clone(), key.clone(), rt.clone(), begun.clone());
                let expect = judged.as_ref().map(|j| j.expect.clone());
                Box::new(move || {
                    let begin = meta.begin_publish(folder, &key, &pending, layout_instance(), expect.as_ref());
                    let r = on_this_thread(&rt, begin);
                    let ok = r.is_ok();
                    *lock(&begun) = Some(r);
                    ok
                })
            };
            let after = {
                let (meta, key, answer, rec) = (meta.clone(), key.clone(), answer.clone(), rec.clone());
                let done = settled.clone();
                Box::new(move || {
                    // Acknowledged before the pending record is settled: the new record was made
                    // durable with the publish noted (begin_publish), every reader picks, of it
                    // and the one it replaces, the record whose fingerprint matches the file now
                    // at the key, and a crash from here on is settled the same way by the janitor.
                    // The key lock stays held until the settling write is done, so the next write
                    // of this key starts from a settled record.
                    if let Some(a) = lock(&answer).take() {
                        let _ = a.send(Ok(None));
                    }
                    match on_this_thread(&rt, meta.end_publish(folder, &key, Some(&rec))) {
                        Ok(()) => done.store(true, Ordering::Release),
                        // The stored pair still resolves by fingerprint; once this gateway is
                        // gone, the janitor of another (or of its next run) settles it.
                        Err(e) => tracing::warn!(%key, error = %e, "could not settle a published record"),
                    }
                })
            };
            let outcome = staging
                .publish_announced(&path, durable, Announce { before, after })
                .await;
            let begun = lock(&begun).take();
            let failure = match (outcome, begun) {
                (Ok(Announced::Published), _) => {
                    // The settling write stopped the key's publishing, and with it the claim.
                    if settled.load(Ordering::Acquire) {
                        guard.ended();
                    }
                    return;
                }
                (Ok(Announced::Withdrawn), Some(Err(e))) => write_err(judged.as_ref(), e),
                (Ok(Announced::Withdrawn), _) => super::internal("a publish withdrawn without a failed note"),
                // Announced, then the rename failed (or the sync, beside it on another backend):
                // the key keeps what it had, so the replaced record is the settled one.
                (Err(e), Some(Ok(()))) => {
                    if let Err(e) = meta.end_publish(folder, &key, replaced.as_ref()).await {
                        tracing::warn!(%key, error = %e, "could not settle a failed publish");
                    }
                    backend_err(e)
                }
                // The sync failed before anything was announced.
                (Err(e), _) => backend_err(e),
            };
            let _ = refund().await;
            let taken = lock(&answer).take();
            if let Some(a) = taken {
                let _ = a.send(Err(failure));
            }
        });
        answered
            .await
            .map_err(|_| super::internal("the publish task ended without an answer"))?
    }

    /// What the key holds now: its size in bytes (a file's, or a directory marker's payload's)
    /// and the stored record that describes it, if any.
    pub(crate) async fn in_place(&self, b: &BucketCtx, path: &ObjectPath) -> S3Result<(u64, Option<ObjectRecord>)> {
        let (folder, k) = (b.rec.folder_id, path.key());
        let stored = self.meta.object(folder, &k).await.map_err(meta_err)?;
        match b.folder.stat(path).await.map_err(backend_err)? {
            Some(st) if st.kind == penstock_backends::EntryKind::File => {
                Ok((st.size, stored.and_then(|r| r.describing(&fingerprint(&st)))))
            }
            Some(st) if st.kind == penstock_backends::EntryKind::Dir && path.is_dir() => {
                match b.folder.open_marker(path).await.map_err(backend_err)? {
                    Some(h) => Ok((h.stat().size, stored.and_then(|r| r.describing(&fingerprint(h.stat()))))),
                    None => Ok((0, stored.map(ObjectRecord::in_force))),
                }
            }
            _ => Ok((0, None)),
        }
    }

    /// The object a key holds now, or `None` where it holds none (nothing there, a delete
    /// marker, a directory that is no marker): what conditional writes and deletes judge.
    pub(crate) async fn current_object(
        &self,
        b: &BucketCtx,
        path: &ObjectPath,
    ) -> S3Result<Option<(ObjectRecord, penstock_backends::Stat)>> {
        match self.open_object(b, &path.key()).await {
            Ok((rec, st, _)) => Ok(Some((rec, st))),
            Err(e) if *e.code() == s3s::S3ErrorCode::NoSuchKey => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Refuses a write whose `If-Match`/`If-None-Match` the key's current object fails. The
    /// caller holds the key lock, so no write through this gateway comes between this check and
    /// the write; the write then gives the metadata engine what was judged (`Judged`), so that
    /// none through another gateway does either. `None` for a write without conditions.
    pub(crate) async fn check_write_conditions(
        &self,
        b: &BucketCtx,
        path: &ObjectPath,
        c: &WriteConditions,
    ) -> S3Result<Option<Judged>> {
        if c.if_match.is_none() && c.if_none_match.is_none() {
            return Ok(None);
        }
        // Read before judging: a write that lands after this read changes the record, and the
        // engine then refuses this write (409 here while another gateway is publishing the key).
        let expect = self
            .meta
            .expectation(b.rec.folder_id, &path.key(), layout_instance())
            .await
            .map_err(meta_err)?;
        let current = self.current_object(b, path).await?.map(|(rec, _)| rec.etag);
        if let (Some(cond), Some(cur)) = (&c.if_none_match, &current) {
            if matches(cond, cur) {
                return Err(super::error::precondition_failed("If-None-Match"));
            }
        }
        if let Some(cond) = &c.if_match {
            match &current {
                None => return Err(s3_error!(NoSuchKey, "The specified key does not exist.")),
                Some(cur) if !matches(cond, cur) => return Err(super::error::precondition_failed("If-Match")),
                Some(_) => {}
            }
        }
        Ok(Some(Judged {
            expect,
            condition: if c.if_none_match.is_some() {
                "If-None-Match"
            } else {
                "If-Match"
            },
        }))
    }
}

/// What a conditional write judged its conditions against: the key's record as read before
/// judging. The write's metadata change carries it, and the engine refuses the change if the
/// record has changed since (a write through another gateway came between).
pub(crate) struct Judged {
    pub expect: Expect,
    /// The condition a change since would break (`If-None-Match` where both were given).
    condition: &'static str,
}

impl Judged {
    /// The answer to a write the engine refused: 412 naming the condition where the key
    /// changed, 409 `ConditionalRequestConflict` where another gateway is writing it now.
    pub fn refused(&self, e: MetaError) -> S3Error {
        match e {
            MetaError::Changed => super::error::precondition_failed(self.condition),
            e => meta_err(e),
        }
    }
}

/// The answer to a failed metadata change of a write, judged (`Judged::refused`) or not.
pub(crate) fn write_err(judged: Option<&Judged>, e: MetaError) -> S3Error {
    match judged {
        Some(j) => j.refused(e),
        None => meta_err(e),
    }
}

/// Drives a metadata call to its end on this (blocking-pool) thread, the engine's own blocking
/// step included (see `on_blocking_thread`).
fn on_this_thread<T>(rt: &tokio::runtime::Handle, call: impl std::future::Future<Output = T>) -> T {
    on_blocking_thread(|| rt.block_on(call))
}

/// Locks a mutex whose holder cannot leave it half-changed (a slot taken or filled whole).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Syncs a staging file sealed with `seal(false)` when the gateway writes durably; the versioned
/// publish runs it beside the synced metadata write that announces the publish.
pub(crate) async fn sync_if(staging: &mut dyn StagingFile, durable: bool) -> penstock_backends::Result<()> {
    match durable {
        true => staging.sync().await,
        false => Ok(()),
    }
}

/// `x-amz-version-id` of a write: the new version's id in a versioning-enabled bucket. A write
/// while versioning is suspended makes the `null` version, which S3 does not name in its answer
/// (PutObject, CopyObject, CompleteMultipartUpload and POST answers carry no version id then;
/// reads and listings name it `null`); a bucket never versioned has none.
pub(crate) fn version_out(b: &BucketCtx, written: Option<String>) -> Option<String> {
    b.rec
        .versioning
        .and(written)
        .filter(|v| v != penstock_metadata::NULL_VERSION)
}

/// The size a PUT or UploadPart payload declares: the token's window, or the body's length.
pub(crate) fn payload_hint(admission: &Admission, declared_len: Option<i64>) -> Option<u64> {
    match admission {
        Admission::Serve(a) => Some(a.token.window().len),
        _ => declared_len.and_then(|n| u64::try_from(n).ok()),
    }
}

/// Streams a request body into `staging`, hashing every byte. Memory stays bounded by the
/// staging file's write block.
async fn ingest(
    body: Option<StreamingBlob>,
    staging: &mut dyn StagingFile,
    hasher: &mut BodyHasher,
    declared_len: Option<i64>,
) -> S3Result<()> {
    let mut total: u64 = 0;
    if let Some(mut body) = body {
        while let Some(chunk) = body.next().await {
            let chunk = chunk.map_err(body_err)?;
            total += chunk.len() as u64;
            // A body that declared no length (chunked transfer coding) is held to S3's limit as
            // it arrives; a declared one over it was refused before it was read
            // (`observe::early::refused_size`).
            if total > super::error::MAX_UPLOAD_BYTES {
                return Err(super::error::upload_too_large(total));
            }
            hasher.update(&chunk).await;
            staging.write(chunk).await.map_err(backend_err)?;
        }
    }
    if let Some(n) = declared_len {
        if n >= 0 && total != n as u64 {
            return Err(s3_error!(
                IncompleteBody,
                "You did not provide the number of bytes specified by the Content-Length HTTP header"
            ));
        }
    }
    Ok(())
}

/// A failure while reading the request body: s3s's own errors pass through, a chunk whose
/// signature does not follow from the seed is 403 `SignatureDoesNotMatch` and a body whose
/// SHA-256 is not the one `x-amz-content-sha256` named is 400 `XAmzContentSHA256Mismatch`, as on
/// S3, and anything else means the client did not deliver the body.
pub(crate) fn body_err(e: s3s::StdError) -> S3Error {
    match e.downcast::<S3Error>() {
        Ok(e) => *e,
        Err(e) if names_in_chain(&*e, "AwsChunkedStreamError: SignatureMismatch") => s3_error!(
            SignatureDoesNotMatch,
            "The request signature we calculated does not match the signature you provided. Check your key and signing method."
        ),
        Err(e) if names_in_chain(&*e, "UploadStreamError: Sha256Mismatch") => super::error::content_sha256_mismatch(),
        Err(e) => s3_error!(IncompleteBody, "The request body could not be read: {e}"),
    }
}

/// Whether `e` (or an error under it) reads `message`. s3s keeps the error types of its body
/// checks (the aws-chunked signature mismatch, the payload hash mismatch) private, so they are
/// known by their messages; `a_bad_chunk_signature_is_refused` and
/// `payload_hashes_are_held_to_their_bodies` in tests/tests/hostile_input.rs fail if an s3s
/// upgrade changes them.
fn names_in_chain(e: &(dyn std::error::Error + 'static), message: &str) -> bool {
    let mut cur = Some(e);
    while let Some(e) = cur {
        if e.to_string() == message {
            return true;
        }
        cur = e.source();
    }
    false
}

/// A browser-form upload answers with its ETag, version and encryption in headers, as S3's
/// does (a script reads them to record what it uploaded); s3s builds a form's answer from its
/// success fields alone and keeps only the headers the handler set, so they are set here.
fn form_headers(resp: &mut S3Response<PutObjectOutput>) {
    let pairs = [
        (
            http::header::ETAG,
            resp.output.e_tag.as_ref().map(|e| format!("\"{}\"", e.value())),
        ),
        (
            http::HeaderName::from_static("x-amz-version-id"),
            resp.output.version_id.clone(),
        ),
        (
            http::HeaderName::from_static("x-amz-server-side-encryption"),
            resp.output
                .server_side_encryption
                .as_ref()
                .map(|s| s.as_str().to_owned()),
        ),
    ];
    for (name, value) in pairs {
        if let Some(v) = value.and_then(|v| http::HeaderValue::from_str(&v).ok()) {
            resp.headers.insert(name, v);
        }
    }
}
