//! Multipart uploads: parts are staged as files under the folder's hidden directory and joined
//! with `copy_file_range` on completion; their records live in the metadata store.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_metadata::{PartRecord, UploadId, UploadQuery, UploadRecord};

use super::acl::write_grants;
use super::checksum::{input_algo, s3_algo, s3_type, with_checksums, Algo, BodyHasher, ChecksumType, Claims};
use super::copy::{copy_conditions, copy_range};
use super::error::{backend_err, upload_detail};
use super::object::{attr_input, etag, fingerprint, now_ms, parse_key, parse_tagging_header, ts_ms};
use super::rdma::{reply_headers, Admission};
use super::sse_c::{self, CustomerKey};
use super::{caller, internal, meta_err, peer, BucketCtx, Gateway};

mod complete;

/// Smallest allowed size of every part but the last.
const MIN_PART_SIZE: u64 = 5 * 1024 * 1024;
const MAX_PART_NUMBER: i32 = 10_000;
/// Uploads read from the metadata engine at a time when listing them.
const PAGE: usize = 1000;

impl Gateway {
    async fn upload_record(&self, b: &BucketCtx, key: &str, upload_id: &str) -> S3Result<UploadRecord> {
        let no_such_upload = || {
            let e = s3_error!(NoSuchUpload, "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.");
            upload_detail(e, upload_id, None)
        };
        // An id the gateway cannot have made names no upload.
        let u: UploadId = upload_id.parse().map_err(|_| no_such_upload())?;
        self.meta
            .upload(b.rec.folder_id, key, &u)
            .await
            .map_err(meta_err)?
            .ok_or_else(no_such_upload)
    }

    /// CreateMultipartUpload.
    pub(crate) async fn create_multipart_upload(
        &self,
        mut req: S3Request<CreateMultipartUploadInput>,
    ) -> S3Result<S3Response<CreateMultipartUploadOutput>> {
        let who = caller(&req)?;
        let from = peer(&req);
        let input = &mut req.input;
        parse_key(&input.key)?;
        // The upload's key (SSE-C): every part is then sent and stored with it.
        let sse = self.admit_key(&req.headers, from, sse_c::input_key!(input)?)?;
        let b = self.bucket(&who, &input.bucket).await?;
        sse_c::check_bucket(&b.rec, sse.is_some())?;
        let (owner, acl) = self
            .write_acl(&b, &who, input.acl.as_ref(), write_grants!(input))
            .await?;
        let algo = input_algo(input.checksum_algorithm.as_ref())?;
        let ctype = match (input.checksum_type.as_ref().map(|t| t.as_str()), algo) {
            (Some(t), Some(a)) => match t.parse::<ChecksumType>() {
                Ok(ChecksumType::FullObject) if !a.is_crc() => {
                    return Err(s3_error!(
                        InvalidRequest,
                        "The FULL_OBJECT checksum type requires a CRC algorithm"
                    ))
                }
                Ok(t) => Some(t),
                Err(_) => return Err(s3_error!(InvalidRequest, "Invalid checksum type {t}")),
            },
            (Some(t), None) => return Err(s3_error!(InvalidRequest, "Invalid checksum type {t}")),
            (None, Some(Algo::Crc64Nvme)) => Some(ChecksumType::FullObject),
            (None, Some(_)) => Some(ChecksumType::Composite),
            (None, None) => None,
        };
        let up = UploadRecord {
            upload_id: UploadId::generate(),
            key: input.key.clone(),
            initiated_ms: now_ms(),
            initiator: who.user.id.simple().to_string(),
            tags: parse_tagging_header(input.tagging.as_deref())?,
            attrs: {
                let mut a = attr_input!(input)
                    .with_raw(req.extensions.get::<super::raw_headers::RawAttrs>())
                    .into_attrs()?;
                acl.set_on(&mut a);
                a.owner = owner;
                super::object_lock::lock_input!(input).apply(&b.rec, &mut a)?;
                a.customer_key = sse.as_ref().map(CustomerKey::keyed);
                a
            },
            checksum_algorithm: algo,
            checksum_type: ctype,
        };
        let (f, u) = (b.rec.folder_id, up.clone());
        self.meta.put_upload(f, &u).await.map_err(meta_err)?;
        let mut out = CreateMultipartUploadOutput {
            bucket: Some(input.bucket.clone()),
            key: Some(input.key.clone()),
            upload_id: Some(up.upload_id.to_string()),
            checksum_algorithm: input.checksum_algorithm.clone(),
            checksum_type: ctype.map(s3_type),
            server_side_encryption: self.at_rest(),
            ..Default::default()
        };
        sse_c::answer_key!(out, sse.as_ref().map(CustomerKey::md5));
        Ok(S3Response::new(out))
    }

    /// UploadPart.
    pub(crate) async fn upload_part(
        &self,
        mut req: S3Request<UploadPartInput>,
    ) -> S3Result<S3Response<UploadPartOutput>> {
        let who = caller(&req)?;
        let from = peer(&req);
        let input = &mut req.input;
        check_part_number(input.part_number)?;
        parse_key(&input.key)?;
        let b = self.bucket(&who, &input.bucket).await?;
        let up = self.upload_record(&b, &input.key, &input.upload_id).await?;
        let sse = self.admit_key(&req.headers, from, sse_c::input_key!(input)?)?;
        sse_c::check_part(up.attrs.customer_key.as_ref(), sse.as_ref())?;
        let requested = input_algo(input.checksum_algorithm.as_ref())?.or(up.checksum_algorithm);
        let claims = Claims::from_headers(&req.headers, requested)?;
        let admission = self.rdma.admit(&req.headers, from, &self.metrics, true)?;

        let hint = super::put::payload_hint(&admission, input.content_length);
        let staging = b.folder.create_staging(hint).await.map_err(backend_err)?;
        let (mut staging, salt) = sse_c::part_staging(sse.as_ref(), staging)?;
        let mut hasher = BodyHasher::new(&claims.algos());
        let path_kind = self
            .fill_staging(
                &admission,
                input.body.take(),
                staging.as_mut(),
                &mut hasher,
                input.content_length,
            )
            .await?;
        let moved = staging.len();
        self.metrics.payload(path_kind, crate::metrics::Direction::In, moved);
        let d = hasher.finish().await;
        let trailers = req.trailing_headers.as_ref().and_then(|t| t.take());
        claims.verify(&d, trailers.as_ref())?;

        let part = self
            .store_part(&b, &up, input.part_number as u32, staging, d, salt)
            .await?;
        let mut out = with_checksums!(
            &part.checksums,
            UploadPartOutput {
                e_tag: Some(etag(&part.md5_hex)),
                server_side_encryption: self.at_rest(),
            },
            ..Default::default()
        );
        sse_c::answer_key!(out, sse.as_ref().map(CustomerKey::md5));
        let mut resp = S3Response::new(out);
        if matches!(admission, Admission::Serve(_)) {
            reply_headers(&mut resp.headers, 200, Some(moved));
        }
        Ok(resp)
    }

    /// UploadPartCopy: a part copied from (a range of) an existing object.
    pub(crate) async fn upload_part_copy(
        &self,
        req: S3Request<UploadPartCopyInput>,
    ) -> S3Result<S3Response<UploadPartCopyOutput>> {
        let i = &req.input;
        check_part_number(i.part_number)?;
        parse_key(&i.key)?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let up = self.upload_record(&b, &i.key, &i.upload_id).await?;
        let sse = self.admit_key(&req.headers, peer(&req), sse_c::input_key!(i)?)?;
        sse_c::check_part(up.attrs.customer_key.as_ref(), sse.as_ref())?;
        let src = self.copy_source(&req, &i.copy_source, copy_conditions!(i)).await?;
        let size = src.st.size;
        let (start, len) = match &i.copy_source_range {
            None => (0, size),
            Some(r) => parse_copy_range(r, size)?,
        };
        let algos = vec![up.checksum_algorithm.unwrap_or(Algo::Crc64Nvme)];
        let staging = b.folder.create_staging(Some(len)).await.map_err(backend_err)?;
        let (mut staging, salt) = sse_c::part_staging(sse.as_ref(), staging)?;
        let mut hasher = BodyHasher::new(&algos);
        if let Some(h) = &src.handle {
            copy_range(h.as_ref(), start, len, staging.as_mut(), &mut hasher).await?;
        }
        let d = hasher.finish().await;
        let part = self.store_part(&b, &up, i.part_number as u32, staging, d, salt).await?;
        let mut out = UploadPartCopyOutput {
            copy_part_result: Some(with_checksums!(
                &part.checksums,
                CopyPartResult {
                    e_tag: Some(etag(&part.md5_hex)),
                    last_modified: Some(ts_ms(part.last_modified_ms)),
                }
            )),
            server_side_encryption: self.at_rest(),
            ..Default::default()
        };
        sse_c::answer_key!(out, sse.as_ref().map(CustomerKey::md5));
        Ok(S3Response::new(out))
    }

    /// Seals a staged part, charges its size to the folder's scope and records it, replacing an
    /// earlier upload of the same part number. `salt`: the part's own, when it was encrypted
    /// with the upload's customer key.
    async fn store_part(
        &self,
        b: &BucketCtx,
        up: &UploadRecord,
        n: u32,
        mut staging: Box<dyn penstock_backends::StagingFile>,
        d: super::checksum::Digests,
        salt: Option<String>,
    ) -> S3Result<PartRecord> {
        let st = staging.seal(self.durable).await.map_err(backend_err)?;
        let part = PartRecord {
            part_number: n,
            md5_hex: sse_c::etag(&d.md5, salt.as_deref()),
            size: st.size,
            last_modified_ms: now_ms(),
            checksums: d.checksums,
            fingerprint: Some(fingerprint(&st)),
            salt,
        };
        let id = up.upload_id.clone();
        let guard = self
            .locks
            .lock_owned(b.rec.folder_id, &format!("\0part/{id}/{n}"))
            .await;
        let previous = self.meta.part(&id, n).await.map_err(meta_err)?.map_or(0, |p| p.size);
        let delta = st.size as i64 - previous as i64;
        // The charge, the rename and the record go together even if the client disconnects
        // meanwhile (the request's future is dropped): a task of its own finishes them (refunding
        // on failure), holding the part's lock, so the part file and its record always describe
        // the same upload of the part and the scope is charged exactly for what landed.
        let (meta, quota_locks, scope, durable) = (
            self.meta.clone(),
            self.quota_locks.clone(),
            b.rec.quota_scope,
            self.durable,
        );
        let (id, p) = (up.upload_id.clone(), part.clone());
        tokio::spawn(async move {
            let _guard = guard;
            // Made durable by the part record's synced write below.
            super::quota::charge_scope(meta.clone(), quota_locks.clone(), scope, delta, false).await?;
            let stored = async {
                staging.publish_part(&id, n, durable).await.map_err(backend_err)?;
                meta.put_part(&id, &p).await.map_err(meta_err)
            }
            .await;
            if stored.is_err() {
                let _ = super::quota::charge_scope(meta, quota_locks, scope, -delta, true).await;
            }
            stored
        })
        .await
        .map_err(internal)??;
        Ok(part)
    }

    /// AbortMultipartUpload.
    pub(crate) async fn abort_multipart_upload(
        &self,
        req: S3Request<AbortMultipartUploadInput>,
    ) -> S3Result<S3Response<AbortMultipartUploadOutput>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        self.abort_upload(&b, &i.key, &i.upload_id).await?;
        Ok(S3Response::new(AbortMultipartUploadOutput::default()))
    }

    /// Forgets an upload, removes its parts and gives their bytes back (also the lifecycle
    /// worker's AbortIncompleteMultipartUpload).
    pub(crate) async fn abort_upload(&self, b: &BucketCtx, key: &str, upload_id: &str) -> S3Result<()> {
        let _racing_complete = self.upload_locks.lock(b.rec.folder_id, upload_id).await;
        let up = self.upload_record(b, key, upload_id).await?;
        let (f, k, id) = (b.rec.folder_id, up.key.clone(), up.upload_id.clone());
        let released: u64 = self
            .meta
            .parts(&id)
            .await
            .map_err(meta_err)?
            .iter()
            .map(|p| p.size)
            .sum();
        self.meta.delete_upload(f, &k, &id).await.map_err(meta_err)?;
        b.folder.remove_upload(&up.upload_id).await.map_err(backend_err)?;
        self.charge(&b.rec.quota_scope, -(released as i64)).await
    }

    /// ListParts.
    pub(crate) async fn list_parts(&self, req: S3Request<ListPartsInput>) -> S3Result<S3Response<ListPartsOutput>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let up = self.upload_record(&b, &i.key, &i.upload_id).await?;
        let id = up.upload_id.clone();
        let parts = self.meta.parts(&id).await.map_err(meta_err)?;
        let max = super::list::page_size(i.max_parts, "max-parts")?;
        let marker = i.part_number_marker.unwrap_or(0);
        if marker < 0 {
            return Err(s3_error!(
                InvalidArgument,
                "part-number-marker must be a non-negative integer"
            ));
        }
        let mut page: Vec<&PartRecord> = parts.iter().filter(|p| p.part_number as i32 > marker).collect();
        let truncated = page.len() > max;
        page.truncate(max);
        let owner = super::object_owner(&b.rec, &up.attrs);
        Ok(S3Response::new(ListPartsOutput {
            bucket: Some(i.bucket.clone()),
            key: Some(i.key.clone()),
            upload_id: Some(up.upload_id.to_string()),
            // S3 answers both markers always: 0 where none was given or no part was listed.
            part_number_marker: Some(marker),
            next_part_number_marker: Some(page.last().map_or(0, |p| p.part_number as i32)),
            max_parts: Some(max as i32),
            is_truncated: Some(truncated),
            checksum_algorithm: up.checksum_algorithm.map(s3_algo),
            checksum_type: up.checksum_type.map(s3_type),
            initiator: Some(initiator(&up.initiator)),
            owner: Some(owner),
            storage_class: Some(upload_class(&up.attrs)),
            parts: Some(
                page.iter()
                    .map(|p| {
                        with_checksums!(
                            &p.checksums,
                            Part {
                                part_number: Some(p.part_number as i32),
                                e_tag: Some(etag(&p.md5_hex)),
                                size: Some(p.size as i64),
                                last_modified: Some(ts_ms(p.last_modified_ms)),
                            }
                        )
                    })
                    .collect(),
            ),
            ..Default::default()
        }))
    }

    /// ListMultipartUploads.
    pub(crate) async fn list_multipart_uploads(
        &self,
        req: S3Request<ListMultipartUploadsInput>,
    ) -> S3Result<S3Response<ListMultipartUploadsOutput>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let max = super::list::page_size(i.max_uploads, "max-uploads")?;
        let url = super::list::is_url(i.encoding_type.as_ref())?;
        let prefix = i.prefix.clone().unwrap_or_default();
        let delimiter = i.delimiter.clone().filter(|d| !d.is_empty());
        let key_marker = i.key_marker.clone().unwrap_or_default();
        // An empty upload id marker is none (S3 answers `<NextUploadIdMarker/>` so).
        let id_marker = i.upload_id_marker.clone().filter(|m| !m.is_empty());
        let folder = b.rec.folder_id;
        // Collect max+1 entries (uploads and common prefixes) to detect truncation, reading
        // the engine a page at a time.
        let mut uploads: Vec<UploadRecord> = Vec::new();
        let mut prefixes: Vec<String> = Vec::new();
        // Whether the last entry listed is a common prefix: the next page then starts after it.
        let mut last_is_prefix = false;
        let mut truncated = false;
        let mut after = match (&key_marker, &id_marker) {
            (k, Some(id)) if !k.is_empty() => Some((k.clone(), id.clone())),
            _ => None,
        };
        // A key marker without an upload id marker skips every upload of keys up to it.
        let skip_through = (after.is_none() && !key_marker.is_empty()).then(|| key_marker.clone());
        'pages: loop {
            let pos = after.as_ref().map(|(k, id)| (k.as_str(), id.as_str()));
            let q = UploadQuery {
                prefix: &prefix,
                after: pos,
                limit: PAGE,
            };
            let page = self.meta.uploads(folder, q).await.map_err(meta_err)?;
            let full = page.len() == PAGE;
            after = page.last().map(|u| (u.key.clone(), u.upload_id.to_string()));
            for u in page {
                // With a delimiter, an upload under a common prefix is listed as that prefix,
                // and the prefix is what a key marker is compared with (as S3 does: a marker
                // that is a listed prefix, or lies inside one, skips the whole group).
                let cp = delimiter.as_ref().and_then(|d| {
                    u.key[prefix.len()..]
                        .find(d.as_str())
                        .map(|pos| u.key[..prefix.len() + pos + d.len()].to_owned())
                });
                let listed_as = cp.as_deref().unwrap_or(&u.key);
                if skip_through.as_ref().is_some_and(|m| listed_as <= m.as_str()) {
                    continue;
                }
                if let Some(cp) = cp {
                    if prefixes.last() != Some(&cp) {
                        if uploads.len() + prefixes.len() >= max {
                            truncated = true;
                            break 'pages;
                        }
                        prefixes.push(cp);
                        last_is_prefix = true;
                    }
                    continue;
                }
                if uploads.len() + prefixes.len() >= max {
                    truncated = true;
                    break 'pages;
                }
                uploads.push(u);
                last_is_prefix = false;
            }
            if !full {
                break;
            }
        }
        // Where the next page starts: after the last entry listed, an upload (key and id) or a
        // common prefix (as a key marker alone). S3 answers both markers on every page, empty
        // where nothing was listed or a last page ends with a prefix.
        let (next_key, next_id) = match (last_is_prefix, uploads.last()) {
            (true, _) if truncated => (prefixes.last().cloned().unwrap_or_default(), String::new()),
            (true, _) => (String::new(), String::new()),
            (false, Some(u)) => (u.key.clone(), u.upload_id.to_string()),
            (false, None) => (String::new(), String::new()),
        };
        let e = |s: &str| super::list::enc(url, s);
        Ok(S3Response::new(ListMultipartUploadsOutput {
            bucket: Some(i.bucket.clone()),
            prefix: Some(e(&prefix)),
            delimiter: delimiter.as_deref().map(e),
            key_marker: Some(e(&key_marker)),
            upload_id_marker: Some(i.upload_id_marker.clone().unwrap_or_default()),
            max_uploads: Some(max as i32),
            is_truncated: Some(truncated),
            next_key_marker: Some(e(&next_key)),
            next_upload_id_marker: Some(next_id),
            encoding_type: i.encoding_type.clone(),
            common_prefixes: Some(super::list::common_prefixes(&prefixes, url)),
            uploads: Some(
                uploads
                    .into_iter()
                    .map(|u| MultipartUpload {
                        key: Some(e(&u.key)),
                        upload_id: Some(u.upload_id.into()),
                        initiated: Some(ts_ms(u.initiated_ms)),
                        initiator: Some(initiator(&u.initiator)),
                        owner: Some(super::object_owner(&b.rec, &u.attrs)),
                        storage_class: Some(upload_class(&u.attrs)),
                        checksum_algorithm: u.checksum_algorithm.map(s3_algo),
                        checksum_type: u.checksum_type.map(s3_type),
                    })
                    .collect(),
            ),
            ..Default::default()
        }))
    }
}

pub(crate) fn check_part_number(n: i32) -> S3Result<()> {
    if !(1..=MAX_PART_NUMBER).contains(&n) {
        return Err(s3_error!(
            InvalidArgument,
            "Part number must be an integer between 1 and 10000, inclusive"
        ));
    }
    Ok(())
}

/// Parses `x-amz-copy-source-range: bytes=first-last` against the source size.
pub(crate) fn parse_copy_range(r: &str, size: u64) -> S3Result<(u64, u64)> {
    let bad = || {
        s3_error!(InvalidArgument, "The x-amz-copy-source-range value must be of the form bytes=first-last where first and last are the zero-based offsets of the first and last bytes to copy")
    };
    let spec = r.trim().strip_prefix("bytes=").ok_or_else(bad)?;
    let (a, b) = spec.split_once('-').ok_or_else(bad)?;
    let first: u64 = a.parse().map_err(|_| bad())?;
    let last: u64 = b.parse().map_err(|_| bad())?;
    if first > last {
        return Err(bad());
    }
    if last >= size {
        return Err(s3_error!(InvalidRange, "The requested range is not satisfiable"));
    }
    Ok((first, last - first + 1))
}

/// An upload's initiator as S3 names it: the user's canonical ID, with the display name the
/// ACLs and ListBuckets give that user (`user:<id>`). A record from before initiators were user
/// IDs holds an access key, shown as it is.
fn initiator(stored: &str) -> Initiator {
    let display_name = super::user_owner(stored)
        .and_then(|o| o.display_name)
        .unwrap_or_else(|| stored.to_owned());
    Initiator {
        id: Some(stored.to_owned()),
        display_name: Some(display_name),
    }
}

/// The storage class an upload's object will have, as ListParts and ListMultipartUploads name it.
fn upload_class(attrs: &penstock_metadata::ObjectAttrs) -> StorageClass {
    StorageClass::from(super::object::class_name(attrs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initiators_are_users() {
        let id = uuid::Uuid::new_v4();
        let i = initiator(&id.simple().to_string());
        assert_eq!(i.id.as_deref(), Some(id.simple().to_string().as_str()));
        assert_eq!(i.display_name, Some(format!("user:{id}")));
        let old = initiator("PKOLDACCESSKEY");
        assert_eq!(
            (old.id.as_deref(), old.display_name.as_deref()),
            (Some("PKOLDACCESSKEY"), Some("PKOLDACCESSKEY"))
        );
    }

    #[test]
    fn copy_ranges() {
        assert_eq!(parse_copy_range("bytes=0-9", 100).unwrap(), (0, 10));
        assert_eq!(parse_copy_range("bytes=90-99", 100).unwrap(), (90, 10));
        assert!(parse_copy_range("bytes=90-100", 100).is_err());
        assert!(parse_copy_range("bytes=5-4", 100).is_err());
        assert!(parse_copy_range("0-4", 100).is_err());
    }
}
