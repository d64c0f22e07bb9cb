//! DeleteObject and DeleteObjects.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_backends::layout::instance as layout_instance;
use penstock_backends::ObjectPath;

use super::error::{backend_err, meta_err, precondition_failed};
use super::object::{last_modified, matches, parse_key, unix};
use super::versioning::{check_version_id, Deleted};
use super::{caller, peer, BucketCtx, Gateway, RequestFacts};
use crate::auth::Caller;
use penstock_metadata::Perm;
use uuid::Uuid;

use futures::StreamExt;

/// Keys of one DeleteObjects request deleted at once.
const DELETES_IN_FLIGHT: usize = 16;

impl Gateway {
    /// DeleteObject: removing a missing key succeeds, as in S3.
    pub(crate) async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let i = &req.input;
        let who = caller(&req)?;
        if let Some(v) = &i.version_id {
            check_version_id(v)?;
        }
        let path = parse_key(&i.key)?;
        let b = self.bucket(&who, &i.bucket).await?;
        let conds = DeleteConditions {
            if_match: i.if_match.clone(),
            last_modified: i.if_match_last_modified_time.clone(),
            size: i.if_match_size,
        };
        let bypass = self
            .may_bypass(&req, i.bypass_governance_retention, &b.rec, &i.key, None)
            .await?;
        let d = self
            .delete_any(&b, &path, i.version_id.as_deref(), who.user.id, &conds, bypass)
            .await?;
        Ok(S3Response::new(DeleteObjectOutput {
            version_id: d.version_id,
            delete_marker: d.marker.then_some(true),
            ..Default::default()
        }))
    }

    /// DeleteObjects: each key is deleted independently; failures are reported per key.
    pub(crate) async fn delete_objects(
        &self,
        req: S3Request<DeleteObjectsInput>,
    ) -> S3Result<S3Response<DeleteObjectsOutput>> {
        let i = &req.input;
        if i.delete.objects.len() > 1000 {
            return Err(s3_error!(
                MalformedXML,
                "The request may not contain more than 1000 keys"
            ));
        }
        let who = caller(&req)?;
        let b = self.bucket(&who, &i.bucket).await?;
        let quiet = i.delete.quiet == Some(true);
        let peer = peer(&req).map(|p| p.0.ip());
        let tenancy = who.may(&b.rec, Perm::Wd);
        let mut deleted = Vec::new();
        let mut errors = Vec::new();
        // Keys are deleted several at a time (answers stay in request order): each delete waits
        // for its synced metadata write and directory sync, and deletes in flight together share
        // those flushes (group commit), so a batch of 1000 keys takes a fraction of one flush per
        // key. A key named twice is serialized by its key lock; a directory marker deleted with
        // the keys beneath it goes with them (`prune_kept_markers`).
        let objects = &i.delete.objects;
        let each: Vec<_> = objects
            .iter()
            .map(|obj| self.delete_listed(&req, &who, &b, tenancy, peer, obj))
            .collect();
        let results: Vec<_> = futures::stream::iter(each).buffered(DELETES_IN_FLIGHT).collect().await;
        for (obj, result) in objects.iter().zip(results) {
            match result {
                Ok(d) if !quiet => deleted.push(DeletedObject {
                    key: Some(obj.key.clone()),
                    version_id: obj.version_id.clone(),
                    delete_marker: d.marker.then_some(true),
                    delete_marker_version_id: d.version_id.filter(|_| d.marker),
                }),
                Ok(_) => {}
                Err(e) => errors.push(Error {
                    key: Some(obj.key.clone()),
                    version_id: obj.version_id.clone(),
                    code: Some(e.code().as_str().to_owned()),
                    message: e.message().map(str::to_owned),
                }),
            }
        }
        Ok(S3Response::new(DeleteObjectsOutput {
            deleted: Some(deleted),
            errors: (!errors.is_empty()).then_some(errors),
            ..Default::default()
        }))
    }

    /// One key of a DeleteObjects request: a DeleteObject (or DeleteObjectVersion) of its own,
    /// which a bucket policy may deny or grant by key (see `authorize`).
    async fn delete_listed(
        &self,
        req: &S3Request<DeleteObjectsInput>,
        who: &Caller,
        b: &BucketCtx,
        tenancy: bool,
        peer: Option<std::net::IpAddr>,
        obj: &ObjectIdentifier,
    ) -> S3Result<Deleted> {
        let facts = RequestFacts {
            op: "DeleteObject",
            key: Some(&obj.key),
            version: obj.version_id.as_deref(),
            uri: &req.uri,
            headers: &req.headers,
            peer,
        };
        if !self.permits(who, &b.rec, tenancy, &facts).await? {
            return Err(s3_error!(AccessDenied, "Access Denied"));
        }
        if let Some(v) = &obj.version_id {
            check_version_id(v)?;
        }
        let path = parse_key(&obj.key)?;
        let bypass = self
            .may_bypass(
                req,
                req.input.bypass_governance_retention,
                &b.rec,
                &obj.key,
                obj.version_id.as_deref(),
            )
            .await?;
        let conds = DeleteConditions {
            if_match: obj.e_tag.clone().map(|t| match t {
                ETag::Strong(v) if v == "*" => ETagCondition::Any,
                t => ETagCondition::ETag(t),
            }),
            last_modified: obj.last_modified_time.clone(),
            size: obj.size,
        };
        self.delete_any(b, &path, obj.version_id.as_deref(), who.user.id, &conds, bypass)
            .await
    }

    /// Deletes a key, or one version of it (unless its object lock protects it; `bypass` lets a
    /// governance retention go). In a versioned bucket (keys ending in `/` aside: directories
    /// keep one version) the change runs in a task of its own, so a client that disconnects
    /// cannot leave it half done.
    pub(crate) async fn delete_any(
        &self,
        b: &BucketCtx,
        path: &ObjectPath,
        version_id: Option<&str>,
        owner: Uuid,
        conds: &DeleteConditions,
        bypass: bool,
    ) -> S3Result<Deleted> {
        let Some(status) = b.rec.versioning.filter(|_| !path.is_dir()) else {
            check_version(version_id)?;
            self.delete_key(b, path, conds, bypass).await?;
            return Ok(Deleted {
                version_id: version_id.map(str::to_owned),
                marker: false,
            });
        };
        let guard = self.hold_key(b.rec.folder_id, &path.key()).await?;
        self.check_delete_conditions(b, path, conds).await?;
        if let Some(v) = version_id {
            self.check_version_removable(b, path, v, bypass).await?;
        }
        let keep_depth = self.keep_depth(b, path).await?;
        let (kv, owned, version_id) = (self.key_versions(b), path.clone(), version_id.map(str::to_owned));
        let deleted = tokio::spawn(async move {
            let _guard = guard;
            match version_id {
                None => kv.delete_latest(&owned, keep_depth, status, owner).await,
                Some(v) => kv.delete_version(&owned, keep_depth, &v).await,
            }
        })
        .await
        .map_err(super::internal)??;
        // The key's lock went with the task.
        self.prune_kept_markers(b, path, keep_depth).await?;
        Ok(deleted)
    }

    /// How many parent directories of `path` stay when it is removed: up to the deepest that
    /// holds a marker record (a directory marker itself).
    async fn keep_depth(&self, b: &BucketCtx, path: &ObjectPath) -> S3Result<usize> {
        let parents: Vec<String> = (1..=path.parent().len())
            .map(|n| format!("{}/", path.parent()[..n].join("/")))
            .collect();
        let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
        let records = self.meta.objects(b.rec.folder_id, &parents).await.map_err(meta_err)?;
        Ok(records.iter().rposition(Option::is_some).map_or(0, |i| i + 1))
    }

    /// Removes the file (or empty marker directory) and its record, then prunes parent
    /// directories that became empty, except those that are directory markers themselves. A
    /// directory marker of an object lock bucket (its one version) goes only as its lock allows.
    pub(crate) async fn delete_key(
        &self,
        b: &BucketCtx,
        path: &ObjectPath,
        conds: &DeleteConditions,
        bypass: bool,
    ) -> S3Result<()> {
        let folder = b.rec.folder_id;
        let key = path.key();
        let mut guard = self.hold_key(folder, &key).await?;
        self.check_delete_conditions(b, path, conds).await?;
        if path.is_dir() && b.rec.versioning.is_some() {
            if let Some(rec) = self.meta.object(folder, &key).await.map_err(meta_err)? {
                super::object_lock::check_removable(&rec.attrs, bypass)?;
            }
        }
        // Parents that hold a marker record are directory markers and stay.
        let keep_depth = self.keep_depth(b, path).await?;
        let size = match b.folder.stat(path).await.map_err(backend_err)? {
            Some(st) if st.kind == penstock_backends::EntryKind::File => st.size,
            _ => self.marker_payload_size(b, path).await?,
        };
        if b.folder
            .remove(path, keep_depth, self.durable)
            .await
            .map_err(backend_err)?
        {
            self.charge(&b.rec.quota_scope, -(size as i64)).await?;
        }
        self.meta
            .delete_object(folder, &key, layout_instance())
            .await
            .map_err(meta_err)?;
        // The record's removal ended the claim too.
        guard.ended();
        if path.is_dir() {
            // Still under this marker's lock, so a marker written again meanwhile keeps its
            // directory; see `prune_kept_markers`.
            let keep_depth = self.keep_depth(b, path).await?;
            b.folder
                .remove(path, keep_depth, self.durable)
                .await
                .map_err(backend_err)?;
        }
        // Each task holds one key lock at a time (their stripes may be shared).
        drop(guard);
        self.prune_kept_markers(b, path, keep_depth).await
    }

    /// A directory marker deleted while a key beneath it is (concurrent requests, or one
    /// DeleteObjects): the key's delete may have kept the marker's directory, judging by the
    /// marker's record before it went, while the marker's delete found the key's file still in
    /// it. Whichever of the two finishes last takes the directory, so no empty directory is left
    /// to read as the marker again: the marker's delete tries its directory once more after its
    /// record is gone (in `delete_key`), and the key's delete, here, prunes the directory it kept
    /// (`kept` levels deep) when that marker's record is gone now, under the marker's key lock
    /// so that a marker written again meanwhile keeps its directory.
    async fn prune_kept_markers(&self, b: &BucketCtx, path: &ObjectPath, kept: usize) -> S3Result<()> {
        if kept == 0 {
            return Ok(());
        }
        let now = self.keep_depth(b, path).await?;
        if now >= kept {
            return Ok(());
        }
        let marker = format!("{}/", path.parent()[..kept].join("/"));
        let marker_path = parse_key(&marker)?;
        let _guard = self.hold_key(b.rec.folder_id, &marker).await?;
        if self
            .meta
            .object(b.rec.folder_id, &marker)
            .await
            .map_err(meta_err)?
            .is_none()
        {
            let now = self.keep_depth(b, &marker_path).await?;
            b.folder
                .remove(&marker_path, now, self.durable)
                .await
                .map_err(backend_err)?;
        }
        Ok(())
    }

    /// Refuses a delete whose conditions the key's current object fails (412, naming the
    /// condition), or that names an entity tag (or `*`) where the key holds no object (404
    /// `NoSuchKey`), as S3 judges conditional deletes: against the current version only, also
    /// when the request names a version. A size or time alone, on a key that holds nothing,
    /// lets the delete go ahead (nothing is there to protect). The caller holds the key lock.
    async fn check_delete_conditions(&self, b: &BucketCtx, path: &ObjectPath, c: &DeleteConditions) -> S3Result<()> {
        if c.if_match.is_none() && c.last_modified.is_none() && c.size.is_none() {
            return Ok(());
        }
        let Some((rec, st)) = self.current_object(b, path).await? else {
            return match c.if_match {
                Some(_) => Err(s3_error!(NoSuchKey, "The specified key does not exist.")),
                None => Ok(()),
            };
        };
        if c.if_match.as_ref().is_some_and(|cond| !matches(cond, &rec.etag)) {
            return Err(precondition_failed("If-Match"));
        }
        if c.last_modified
            .as_ref()
            .is_some_and(|t| unix(t) != unix(&last_modified(&st)))
        {
            return Err(precondition_failed("x-amz-if-match-last-modified-time"));
        }
        if c.size.is_some_and(|n| n != st.size as i64) {
            return Err(precondition_failed("x-amz-if-match-size"));
        }
        Ok(())
    }
}

/// What must hold about a key's current object for a delete to go ahead: `If-Match` (a
/// DeleteObjects entry's `<ETag>`), and the size and modification time S3 lets a delete name
/// too (`x-amz-if-match-size`, `x-amz-if-match-last-modified-time`, or `<Size>` and
/// `<LastModifiedTime>`). A condition is never ignored: a client deleting what it read believes
/// the condition protects a concurrent rewrite.
#[derive(Default)]
pub(crate) struct DeleteConditions {
    pub if_match: Option<ETagCondition>,
    pub last_modified: Option<Timestamp>,
    pub size: Option<i64>,
}

/// Unversioned folders have exactly one version of each object, named "null".
fn check_version(v: Option<&str>) -> S3Result<()> {
    match v {
        None | Some("null") => Ok(()),
        Some(_) => Err(s3_error!(InvalidArgument, "Invalid version id specified")),
    }
}
