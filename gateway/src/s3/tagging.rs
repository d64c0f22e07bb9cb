//! Object tagging: tags live in the object's record.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use super::object::{parse_key, validate_tags};
use super::{caller, meta_err, Gateway};
use crate::auth::Caller;

impl Gateway {
    /// GetObjectTagging.
    pub(crate) async fn get_object_tagging(
        &self,
        req: S3Request<GetObjectTaggingInput>,
    ) -> S3Result<S3Response<GetObjectTaggingOutput>> {
        let i = &req.input;
        parse_key(&i.key)?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let (rec, _, _) = self.open_object(&b, &i.key).await?;
        Ok(S3Response::new(GetObjectTaggingOutput {
            tag_set: rec
                .tags
                .into_iter()
                .map(|(k, v)| Tag {
                    key: Some(k),
                    value: Some(v),
                })
                .collect(),
            ..Default::default()
        }))
    }

    /// PutObjectTagging.
    pub(crate) async fn put_object_tagging(
        &self,
        req: S3Request<PutObjectTaggingInput>,
    ) -> S3Result<S3Response<PutObjectTaggingOutput>> {
        let i = &req.input;
        let mut tags = Vec::with_capacity(i.tagging.tag_set.len());
        for t in &i.tagging.tag_set {
            let k = t
                .key
                .clone()
                .ok_or_else(|| s3_error!(InvalidTag, "A tag is missing its Key"))?;
            tags.push((k, t.value.clone().unwrap_or_default()));
        }
        validate_tags(&tags)?;
        self.set_tags(&caller(&req)?, &i.bucket, &i.key, tags).await?;
        Ok(S3Response::new(PutObjectTaggingOutput::default()))
    }

    /// DeleteObjectTagging.
    pub(crate) async fn delete_object_tagging(
        &self,
        req: S3Request<DeleteObjectTaggingInput>,
    ) -> S3Result<S3Response<DeleteObjectTaggingOutput>> {
        let i = &req.input;
        self.set_tags(&caller(&req)?, &i.bucket, &i.key, Vec::new()).await?;
        let mut resp = S3Response::new(DeleteObjectTaggingOutput::default());
        resp.status = Some(http::StatusCode::NO_CONTENT);
        Ok(resp)
    }

    async fn set_tags(&self, who: &Caller, bucket: &str, key: &str, tags: Vec<(String, String)>) -> S3Result<()> {
        parse_key(key)?;
        let b = self.bucket(who, bucket).await?;
        let folder = b.rec.folder_id;
        let _guard = self.locks.lock(folder, key).await;
        let (mut rec, _, _) = self.open_object(&b, key).await?;
        rec.tags = tags;
        let k = key.to_owned();
        self.meta.put_object(folder, &k, &rec).await.map_err(meta_err)
    }
}
