//! DeleteObject and DeleteObjects.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_backends::ObjectPath;

use super::error::{backend_err, meta_err};
use super::object::parse_key;
use super::{caller, BucketCtx, Gateway};

impl Gateway {
    /// DeleteObject: removing a missing key succeeds, as in S3.
    pub(crate) async fn delete_object(
        &self,
        req: S3Request<DeleteObjectInput>,
    ) -> S3Result<S3Response<DeleteObjectOutput>> {
        let i = &req.input;
        check_version(i.version_id.as_deref())?;
        let path = parse_key(&i.key)?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        self.delete_key(&b, &path).await?;
        Ok(S3Response::new(DeleteObjectOutput::default()))
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
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let quiet = i.delete.quiet == Some(true);
        let mut deleted = Vec::new();
        let mut errors = Vec::new();
        for obj in &i.delete.objects {
            let result = async {
                check_version(obj.version_id.as_deref())?;
                let path = parse_key(&obj.key)?;
                self.delete_key(&b, &path).await
            }
            .await;
            match result {
                Ok(()) if !quiet => deleted.push(DeletedObject {
                    key: Some(obj.key.clone()),
                    version_id: obj.version_id.clone(),
                    ..Default::default()
                }),
                Ok(()) => {}
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

    /// Removes the file (or empty marker directory) and its record, then prunes parent
    /// directories that became empty, except those that are directory markers themselves.
    pub(crate) async fn delete_key(&self, b: &BucketCtx, path: &ObjectPath) -> S3Result<()> {
        let folder = b.rec.folder_id;
        let key = path.key();
        let _guard = self.locks.lock(folder, &key).await;
        let parents: Vec<String> = (1..=path.parent().len())
            .map(|n| format!("{}/", path.parent()[..n].join("/")))
            .collect();
        // Parents that hold a marker record are directory markers and stay.
        let parents: Vec<&str> = parents.iter().map(String::as_str).collect();
        let records = self.meta.objects(folder, &parents).await.map_err(meta_err)?;
        let keep_depth = records.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
        let size = match b.folder.stat(path).await.map_err(backend_err)? {
            Some(st) if st.kind == penstock_backends::EntryKind::File => st.size,
            _ => self.marker_payload_size(b, path).await?,
        };
        if b.folder.remove(path, keep_depth).await.map_err(backend_err)? {
            self.charge(&b.rec.quota_scope, -(size as i64)).await?;
        }
        self.meta.delete_object(folder, &key).await.map_err(meta_err)
    }
}

/// Unversioned folders have exactly one version of each object, named "null".
fn check_version(v: Option<&str>) -> S3Result<()> {
    match v {
        None | Some("null") => Ok(()),
        Some(_) => Err(s3_error!(InvalidArgument, "Invalid version id specified")),
    }
}
