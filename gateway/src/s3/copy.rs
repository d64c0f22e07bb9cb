//! CopyObject, and the byte copy shared with UploadPartCopy.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_backends::{ReadHandle, StagingFile, Stat};
use penstock_metadata::{ObjectRecord, Perm};

use super::acl::write_grants;
use super::checksum::{input_algo, s3_type, with_checksums, Algo, BodyHasher};
use super::error::backend_err;
use super::object::{
    attr_input, etag, fingerprint, last_modified, new_record, parse_key, parse_tagging_header, Conditions,
};
use super::put::WriteConditions;
use super::sse_c::{self, CustomerKey};
use super::{caller, peer, BucketCtx, Gateway, RequestFacts};

/// Bytes per block when copying between files.
const COPY_BLOCK: usize = 1 << 20;

/// The `x-amz-copy-source-if-*` conditions of a CopyObject or UploadPartCopy input.
macro_rules! copy_conditions {
    ($i:expr) => {
        $crate::s3::object::Conditions {
            if_match: $i.copy_source_if_match.as_ref(),
            if_none_match: $i.copy_source_if_none_match.as_ref(),
            if_modified_since: $i.copy_source_if_modified_since.as_ref(),
            if_unmodified_since: $i.copy_source_if_unmodified_since.as_ref(),
        }
    };
}
pub(crate) use copy_conditions;

/// A resolved, authorized copy source.
pub(crate) struct Source {
    pub bucket: BucketCtx,
    pub key: String,
    pub rec: ObjectRecord,
    pub st: Stat,
    pub handle: Option<std::sync::Arc<dyn ReadHandle>>,
}

impl Gateway {
    /// Resolves `x-amz-copy-source`, checks the caller may read it and evaluates the
    /// `x-amz-copy-source-if-*` conditions.
    pub(crate) async fn copy_source<T>(
        &self,
        req: &S3Request<T>,
        src: &CopySource,
        conds: Conditions<'_>,
    ) -> S3Result<Source> {
        let CopySource::Bucket {
            bucket,
            key,
            version_id,
        } = src
        else {
            return Err(s3_error!(NotImplemented, "Access point copy sources are not supported"));
        };
        parse_key(key)?;
        let source_key = CustomerKey::from_headers(&req.headers, &sse_c::SOURCE_KEY)?;
        let source_key = self.admit_key(&req.headers, peer(req), source_key)?;
        let who = caller(req)?;
        let sb = self.bucket(&who, bucket).await?;
        super::check_expected_owner(&req.headers, "x-amz-source-expected-bucket-owner", &sb.rec)?;
        // Reading the source is a GetObject (GetObjectVersion) of it: the folder's permission,
        // a bucket policy (its Deny by key included) and ACLs decide, as for a GET.
        let facts = RequestFacts {
            op: "GetObject",
            key: Some(key),
            version: version_id.as_deref(),
            uri: &req.uri,
            headers: &req.headers,
            peer: peer(req).map(|p| p.0.ip()),
        };
        if !self.permits(&who, &sb.rec, who.may(&sb.rec, Perm::Ro), &facts).await? {
            return Err(s3_error!(AccessDenied, "Access Denied"));
        }
        let (rec, st, handle) = match self.open_version(&sb, key, version_id.as_deref()).await {
            // A delete marker named by its id: S3 refuses the copy itself, and the marker's
            // headers describe the source, not this answer.
            Err(e) if *e.code() == s3s::S3ErrorCode::MethodNotAllowed => {
                return Err(s3_error!(
                    InvalidRequest,
                    "The source of a copy request may not specifically refer to a delete marker by version id."
                ))
            }
            r => r?,
        };
        // A source stored with a customer key is read with it (`x-amz-copy-source-server-side-
        // encryption-customer-*`), decrypted as it is copied.
        let handle = sse_c::open(&rec, source_key.as_ref(), handle)?;
        conds.check(&rec.etag, &st, true)?;
        Ok(Source {
            bucket: sb,
            key: key.to_string(),
            rec,
            st,
            handle,
        })
    }

    /// CopyObject.
    pub(crate) async fn copy_object(
        &self,
        mut req: S3Request<CopyObjectInput>,
    ) -> S3Result<S3Response<CopyObjectOutput>> {
        let path = parse_key(&req.input.key)?;
        let who = caller(&req)?;
        let b = self.bucket(&who, &req.input.bucket).await?;
        let i = &req.input;
        let (owner, acl) = self.write_acl(&b, &who, i.acl.as_ref(), write_grants!(i)).await?;
        let src = self.copy_source(&req, &i.copy_source, copy_conditions!(i)).await?;
        let replace_meta = directive(i.metadata_directive.as_ref().map(|d| d.as_str()))?;
        let replace_tags = directive(i.tagging_directive.as_ref().map(|d| d.as_str()))?;
        let same = src.bucket.rec.folder_id == b.rec.folder_id && src.key == i.key;
        // As on S3, a copy has the storage class its request names (STANDARD by default), not
        // the source's. Naming a class at all lets an object copy onto itself, its own class
        // included, as S3 answers: rclone's SetTier and `aws s3 cp --storage-class` over the
        // object itself send the class the object already has. So does naming an encryption
        // (served only where volumes encrypt at rest: `unconfigured.rs`), which is how clients
        // rotate an object's SSE-S3 key in place (minio-go's functional suite does).
        let class = super::object::stored_class(i.storage_class.as_ref().map(|c| c.as_str().to_owned()));
        // The copy's own key (SSE-C), if it is to be stored with one: never the source's. A key
        // is a change of encryption (how a client rotates an object's key).
        let dest_key = self.admit_key(&req.headers, peer(&req), sse_c::input_key!(i)?)?;
        sse_c::check_bucket(&b.rec, dest_key.is_some())?;
        // Taking a customer key off (a source stored with one, read with it) is one too.
        let encryption =
            i.server_side_encryption.is_some() || dest_key.is_some() || src.rec.attrs.customer_key.is_some();
        // Nor is a website redirect location copied: each object has the one its own write
        // named (S3's rule), so naming one is a change of an object copied onto itself.
        let redirect = super::object::redirect_location(i.website_redirect_location.clone())?;
        if same && !replace_meta && !replace_tags && i.storage_class.is_none() && !encryption && redirect.is_none() {
            return Err(s3_error!(
                InvalidRequest,
                "This copy request is illegal because it is trying to copy an object to itself without changing the object's metadata, storage class, website redirect location or encryption attributes."
            ));
        }
        let tags = if replace_tags {
            parse_tagging_header(i.tagging.as_deref())?
        } else {
            src.rec.tags.clone()
        };
        let requested = input_algo(i.checksum_algorithm.as_ref())?;
        let conds = destination_conditions(&req.headers)?;
        let input = &mut req.input;
        let mut attrs = if replace_meta {
            attr_input!(input)
                .with_raw(req.extensions.get::<super::raw_headers::RawAttrs>())
                .into_attrs()?
        } else {
            src.rec.attrs.clone()
        };
        // As on S3, a copy gets the ACL its request asks for (private by default), not the source's.
        acl.set_on(&mut attrs);
        attrs.owner = owner;
        attrs.storage_class = class;
        attrs.website_redirect_location = redirect;
        // A copy is a new object: restored only if it is restored itself, locked as its own
        // request (or the bucket's default retention) says.
        attrs.restored_until_ms = None;
        super::object_lock::lock_input!(input).apply(&b.rec, &mut attrs)?;
        attrs.customer_key = dest_key.as_ref().map(CustomerKey::keyed);

        let mut updated = None;
        // In a versioned bucket even a metadata-only copy makes a new version; an object with a
        // customer key, or one getting one, has its bytes encrypted anew.
        let keyless = src.rec.attrs.customer_key.is_none() && dest_key.is_none();
        if same && keyless && src.handle.is_some() && b.rec.versioning.is_none() {
            // Metadata-only change of an object onto itself (s3fs chmod/utimens): no byte copy,
            // as long as the file is still the one read above. If a writer replaced it since,
            // the bytes read (the handle still holds them) are copied below like any source's.
            let (folder, key) = (b.rec.folder_id, path.key());
            let _guard = self.hold_key(folder, &key).await?;
            let judged = self.check_write_conditions(&b, &path, &conds).await?;
            let unchanged = match self.open_object(&b, &key).await {
                Ok((_, now, _)) => fingerprint(&now) == fingerprint(&src.st),
                Err(_) => false,
            };
            if unchanged {
                let mut rec = src.rec.clone();
                rec.attrs = attrs.clone();
                rec.tags = tags.clone();
                self.put_record(&b, &key, &rec, judged.as_ref()).await?;
                updated = Some(rec);
            }
        }
        let mut version_id = None;
        let rec = if let Some(rec) = updated {
            rec
        } else {
            let algos = copy_algos(&src.rec, requested);
            let staging = b.folder.create_staging(Some(src.st.size)).await.map_err(backend_err)?;
            let mut staging = sse_c::object_staging(dest_key.as_ref(), attrs.customer_key.as_ref(), staging)?;
            let mut hasher = BodyHasher::new(&algos);
            if let Some(h) = &src.handle {
                copy_range(h.as_ref(), 0, src.st.size, staging.as_mut(), &mut hasher).await?;
            }
            let d = hasher.finish().await;
            if path.is_dir() && staging.is_empty() {
                // Copied onto a marker key with no bytes: a bare directory, as a PUT makes it.
                drop(staging);
                self.store_empty_marker(&b, &path, d, attrs, tags, Some(&conds)).await?
            } else {
                // Synced by `commit`, beside the metadata write that announces the publish.
                let st = staging.seal(false).await.map_err(backend_err)?;
                let rec = new_record(d, &st, attrs, tags);
                version_id = self.commit(&b, &path, staging, &rec, Some(&conds), 0).await?;
                rec
            }
        };
        let lm = b
            .folder
            .stat(&path)
            .await
            .map_err(backend_err)?
            .map(|st| last_modified(&st));
        let result = with_checksums!(
            &rec.checksums,
            CopyObjectResult {
                e_tag: Some(etag(&rec.etag)),
                last_modified: lm,
                checksum_type: rec.checksums.checksum_type.map(s3_type),
            }
        );
        let mut out = CopyObjectOutput {
            copy_object_result: Some(result),
            version_id: super::put::version_out(&b, version_id),
            copy_source_version_id: src.bucket.rec.versioning.map(|_| src.rec.version().to_owned()),
            server_side_encryption: self.at_rest(),
            ..Default::default()
        };
        sse_c::answer_key!(out, dest_key.as_ref().map(CustomerKey::md5));
        Ok(S3Response::new(out))
    }
}

/// `COPY` (default) or `REPLACE`; true for replace.
fn directive(d: Option<&str>) -> S3Result<bool> {
    match d {
        None | Some("COPY") => Ok(false),
        Some("REPLACE") => Ok(true),
        Some(o) => Err(s3_error!(InvalidArgument, "Unknown directive: {o}")),
    }
}

/// Checksums of a copy: the requested algorithm, else the ones the source had, else CRC64NVME.
pub(crate) fn copy_algos(src: &ObjectRecord, requested: Option<Algo>) -> Vec<Algo> {
    if let Some(r) = requested {
        return vec![r];
    }
    let mut v: Vec<Algo> = Algo::ALL
        .into_iter()
        .filter(|&a| src.checksums.get(a).is_some())
        .collect();
    if v.is_empty() {
        v.push(Algo::Crc64Nvme);
    }
    v
}

/// Copies `len` bytes from `src` at `start` into `dst`, hashing them.
pub(crate) async fn copy_range(
    src: &dyn ReadHandle,
    start: u64,
    len: u64,
    dst: &mut dyn StagingFile,
    hasher: &mut BodyHasher,
) -> S3Result<()> {
    let mut done = 0;
    while done < len {
        let n = (len - done).min(COPY_BLOCK as u64) as usize;
        let block = src.read_at(start + done, n).await.map_err(backend_err)?;
        if block.is_empty() {
            return Err(s3_error!(InternalError, "The source object shrank during the copy"));
        }
        done += block.len() as u64;
        hasher.update(&block).await;
        dst.write(block).await.map_err(backend_err)?;
    }
    Ok(())
}

/// The destination's `If-Match`/`If-None-Match` of a CopyObject (S3's conditional copy; s3s's
/// input does not carry them, so they are read from the headers). One that is not an entity tag
/// or `*` is refused rather than ignored: a precondition a writer relies on is never dropped.
fn destination_conditions(headers: &http::HeaderMap) -> S3Result<WriteConditions> {
    let parse = |name: &str| -> S3Result<Option<ETagCondition>> {
        headers
            .get(name)
            .map(|v| {
                ETagCondition::parse_http_header(v.as_bytes())
                    .map_err(|_| s3_error!(InvalidArgument, "The {name} header is not an entity tag or '*'"))
            })
            .transpose()
    };
    Ok(WriteConditions {
        if_match: parse("if-match")?,
        if_none_match: parse("if-none-match")?,
    })
}
