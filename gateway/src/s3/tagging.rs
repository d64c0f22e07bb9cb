//! Tagging: an object's tags live in its record, a bucket's in the bucket's record.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::object::{check_tags, parse_key, reserved_tag_key, validate_object_tags};
use super::versioning::{no_such_version, Found};
use super::{caller, meta_err, BucketCtx, Gateway};
use crate::auth::Caller;
use penstock_metadata::ObjectRecord;

/// Most tags a bucket may carry.
const BUCKET_TAGS: usize = 50;

impl Gateway {
    /// GetBucketTagging: `NoSuchTagSet` (404) for a bucket without tags, as on S3.
    pub(crate) async fn get_bucket_tagging(
        &self,
        req: S3Request<GetBucketTaggingInput>,
    ) -> S3Result<S3Response<GetBucketTaggingOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if b.rec.tags.is_empty() {
            return Err(s3_error!(NoSuchTagSet, "The TagSet does not exist"));
        }
        Ok(S3Response::new(GetBucketTaggingOutput {
            tag_set: tag_set(b.rec.tags.clone()),
        }))
    }

    /// PutBucketTagging: replaces the bucket's whole tag set.
    pub(crate) async fn put_bucket_tagging(
        &self,
        req: S3Request<PutBucketTaggingInput>,
    ) -> S3Result<S3Response<PutBucketTaggingOutput>> {
        let i = &req.input;
        let tags = pairs(&i.tagging.tag_set)?;
        check_tags(&tags, BUCKET_TAGS, "Bucket tag count cannot be greater than 50")?;
        if let Some((k, _)) = tags.iter().find(|(k, _)| reserved_tag_key(k)) {
            let e = s3s::S3Error::with_message(
                s3s::S3ErrorCode::InvalidTag,
                "System tags cannot be added/updated by requester",
            );
            return Err(super::object::tag_detail(e, k, None));
        }
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        self.update_bucket(&b.rec, move |r| r.tags = tags.clone()).await?;
        Ok(S3Response::with_status(
            PutBucketTaggingOutput::default(),
            http::StatusCode::NO_CONTENT,
        ))
    }

    /// DeleteBucketTagging: 204 whether or not the bucket had tags.
    pub(crate) async fn delete_bucket_tagging(
        &self,
        req: S3Request<DeleteBucketTaggingInput>,
    ) -> S3Result<S3Response<DeleteBucketTaggingOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if !b.rec.tags.is_empty() {
            self.update_bucket(&b.rec, |r| r.tags.clear()).await?;
        }
        Ok(S3Response::with_status(
            DeleteBucketTaggingOutput::default(),
            http::StatusCode::NO_CONTENT,
        ))
    }

    /// GetObjectTagging.
    pub(crate) async fn get_object_tagging(
        &self,
        req: S3Request<GetObjectTaggingInput>,
    ) -> S3Result<S3Response<GetObjectTaggingOutput>> {
        let i = &req.input;
        parse_key(&i.key)?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let (rec, _, _) = match self.open_version(&b, &i.key, i.version_id.as_deref()).await {
            Err(e) => return Err(self.refused_by_marker(&b, &i.key, e).await),
            Ok(found) => found,
        };
        Ok(S3Response::new(GetObjectTaggingOutput {
            version_id: b.rec.versioning.map(|_| rec.version().to_owned()),
            tag_set: tag_set(rec.tags),
        }))
    }

    /// PutObjectTagging.
    pub(crate) async fn put_object_tagging(
        &self,
        req: S3Request<PutObjectTaggingInput>,
    ) -> S3Result<S3Response<PutObjectTaggingOutput>> {
        let i = &req.input;
        let tags = pairs(&i.tagging.tag_set)?;
        validate_object_tags(&tags)?;
        let version_id = self
            .edit_tags(&caller(&req)?, &i.bucket, &i.key, i.version_id.as_deref(), move |r| {
                r.tags = tags
            })
            .await?;
        Ok(S3Response::new(PutObjectTaggingOutput { version_id }))
    }

    /// DeleteObjectTagging.
    pub(crate) async fn delete_object_tagging(
        &self,
        req: S3Request<DeleteObjectTaggingInput>,
    ) -> S3Result<S3Response<DeleteObjectTaggingOutput>> {
        let i = &req.input;
        let version_id = self
            .edit_tags(&caller(&req)?, &i.bucket, &i.key, i.version_id.as_deref(), |r| {
                r.tags.clear()
            })
            .await?;
        let mut resp = S3Response::new(DeleteObjectTaggingOutput { version_id });
        resp.status = Some(http::StatusCode::NO_CONTENT);
        Ok(resp)
    }

    /// [`Gateway::edit_record`] of an object's tags, which S3 refuses with 405 on a key whose
    /// newest version is a delete marker (where other reads and edits answer 404).
    async fn edit_tags(
        &self,
        who: &Caller,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        edit: impl FnOnce(&mut ObjectRecord),
    ) -> S3Result<Option<String>> {
        match self.edit_record(who, bucket, key, version_id, edit).await {
            Err(e) if version_id.is_none() && *e.code() == s3s::S3ErrorCode::NoSuchKey => {
                let b = self.bucket(who, bucket).await?;
                Err(self.refused_by_marker(&b, key, e).await)
            }
            r => r,
        }
    }

    /// Edits the record of a version of `key` (the current one when `version_id` is `None`):
    /// its tags or its ACL; answers the version's id in a versioned bucket.
    pub(crate) async fn edit_record(
        &self,
        who: &Caller,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
        edit: impl FnOnce(&mut ObjectRecord),
    ) -> S3Result<Option<String>> {
        parse_key(key)?;
        let b = self.bucket(who, bucket).await?;
        let edited = self
            .edit_record_in(&b, key, version_id, |r| {
                edit(r);
                Ok(true)
            })
            .await?;
        Ok(match edited {
            Edited::Done { version_id } => version_id,
            Edited::Declined => None,
        })
    }

    /// [`Gateway::edit_record`] in a bucket already opened, under the key's lock, for an edit
    /// that may decline (answers false, and nothing is written) or refuse (an error, answered).
    pub(crate) async fn edit_record_in(
        &self,
        b: &BucketCtx,
        key: &str,
        version_id: Option<&str>,
        edit: impl FnOnce(&mut ObjectRecord) -> S3Result<bool>,
    ) -> S3Result<Edited> {
        let folder = b.rec.folder_id;
        let _guard = self.hold_key(folder, key).await?;
        let current = match version_id {
            Some(v) => matches!(self.find_version(b, key, v).await?, Found::Current),
            None => true,
        };
        if !current {
            let v = version_id.expect("only a version asked for by id is noncurrent");
            let rows = self.meta.versions(folder, key).await.map_err(meta_err)?;
            let mut row = rows
                .into_iter()
                .find(|r| r.version_id == v)
                .ok_or_else(no_such_version)?;
            let Some(obj) = row.object.as_mut() else {
                return Err(Gateway::marker_read(&row));
            };
            if !edit(obj)? {
                return Ok(Edited::Declined);
            }
            self.key_versions(b).update_row(key, &row).await?;
            return Ok(Edited::Done {
                version_id: Some(v.to_owned()),
            });
        }
        let (mut rec, _, _) = self.open_object(b, key).await?;
        if !edit(&mut rec)? {
            return Ok(Edited::Declined);
        }
        let k = key.to_owned();
        self.meta.put_object(folder, &k, &rec).await.map_err(meta_err)?;
        Ok(Edited::Done {
            version_id: b.rec.versioning.map(|_| rec.version().to_owned()),
        })
    }
}

/// What [`Gateway::edit_record_in`] did.
pub(crate) enum Edited {
    /// The edit declined: nothing was written.
    Declined,
    /// The record was written; `version_id` is the version's id in a versioned bucket.
    Done { version_id: Option<String> },
}

/// A request's tags as stored: key and value, in the order given.
fn pairs(set: &[Tag]) -> S3Result<Vec<(String, String)>> {
    set.iter()
        .map(|t| {
            let k = t
                .key
                .clone()
                .ok_or_else(|| s3_error!(InvalidTag, "A tag is missing its Key"))?;
            Ok((k, t.value.clone().unwrap_or_default()))
        })
        .collect()
}

/// Stored tags as S3 answers them, ordered by key. A tag set has no order of its own, and the
/// `x-amz-tagging` header, a form's tagging field and a TagSet document may each spell one set
/// in another order; sorted, one set reads the same however it was written (RGW and other S3
/// implementations answer so, and ceph's s3-tests compare the lists).
fn tag_set(mut tags: Vec<(String, String)>) -> TagSet {
    tags.sort();
    tags.into_iter()
        .map(|(k, v)| Tag {
            key: Some(k),
            value: Some(v),
        })
        .collect()
}
