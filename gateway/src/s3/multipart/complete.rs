//! CompleteMultipartUpload: the client's part list judged against the stored parts, the parts
//! joined and their checksums combined into the object's, the object published; and a
//! Complete retried after it succeeded, answered as the first was.

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result};

use penstock_metadata::{Checksums, ObjectRecord, PartRecord, PartSummary, UploadId};

use super::MIN_PART_SIZE;
use crate::s3::checksum::{combine_crcs, composite, multipart_etag, with_checksums, Algo, ChecksumType};
use crate::s3::error::{backend_err, upload_detail};
use crate::s3::object::{etag, fingerprint, parse_key};
use crate::s3::put::WriteConditions;
use crate::s3::{caller, meta_err, BucketCtx, Gateway};

impl Gateway {
    /// CompleteMultipartUpload: validates the part list, joins the parts and publishes.
    pub(crate) async fn complete_multipart_upload(
        &self,
        mut req: S3Request<CompleteMultipartUploadInput>,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let who = caller(&req)?;
        // Where the object is, as the client addressed it: S3 names it in the answer, and some
        // clients (minio-js) take an answer without it for a failure.
        let location = crate::s3::object_url(&req.uri, &req.headers, self.secure, &req.input.bucket, &req.input.key);
        let input = &mut req.input;
        let path = parse_key(&input.key)?;
        let b = self.bucket(&who, &input.bucket).await?;
        let _racing_abort = self.upload_locks.lock(b.rec.folder_id, &input.upload_id).await;
        let up = match self.upload_record(&b, &input.key, &input.upload_id).await {
            Ok(up) => up,
            Err(gone) => return self.completed_before(&b, input, location, gone).await,
        };
        let id = up.upload_id.clone();
        let stored = self.meta.parts(&id).await.map_err(meta_err)?;

        // Validate the client's list against the stored parts: ascending numbers, matching
        // ETags (and checksums when sent), every part but the last at least 5 MiB.
        let wanted = input.multipart_upload.take().and_then(|m| m.parts).unwrap_or_default();
        if wanted.is_empty() {
            return Err(s3_error!(MalformedXML, "You must specify at least one part"));
        }
        let mut chosen: Vec<&PartRecord> = Vec::with_capacity(wanted.len());
        let mut last = 0;
        for w in &wanted {
            let n = w
                .part_number
                .ok_or_else(|| s3_error!(MalformedXML, "A part is missing its PartNumber"))?;
            if n <= last {
                let e = s3_error!(
                    InvalidPartOrder,
                    "The list of parts was not in ascending order. Parts must be ordered by part number."
                );
                return Err(upload_detail(e, &input.upload_id, None));
            }
            last = n;
            let given = w.e_tag.as_ref().map(|e| e.value());
            let refused = |e| upload_detail(e, &input.upload_id, Some((n, given)));
            let p = stored.iter().find(|p| p.part_number as i32 == n).ok_or_else(|| {
                refused(s3_error!(
                    InvalidPart,
                    "One or more of the specified parts could not be found. Part {n} was not uploaded."
                ))
            })?;
            if given.is_some_and(|e| e.trim_matches('"') != p.md5_hex) {
                return Err(refused(s3_error!(
                    InvalidPart,
                    "The ETag of part {n} does not match the uploaded part."
                )));
            }
            for (a, v) in [
                (Algo::Crc32, &w.checksum_crc32),
                (Algo::Crc32c, &w.checksum_crc32c),
                (Algo::Crc64Nvme, &w.checksum_crc64nvme),
                (Algo::Sha1, &w.checksum_sha1),
                (Algo::Sha256, &w.checksum_sha256),
            ] {
                if let Some(v) = v {
                    if p.checksums.get(a) != Some(v) {
                        return Err(refused(s3_error!(
                            InvalidPart,
                            "The {} checksum of part {n} does not match the uploaded part.",
                            a.as_str()
                        )));
                    }
                }
            }
            chosen.push(p);
        }
        for p in &chosen[..chosen.len() - 1] {
            if p.size < MIN_PART_SIZE {
                return Err(crate::s3::error::part_too_small(
                    p.part_number,
                    &p.md5_hex,
                    p.size,
                    MIN_PART_SIZE,
                ));
            }
        }
        // `x-amz-mp-object-size`: the size the client means the object to have. S3 refuses a
        // completion whose parts add up to another (400 `InvalidRequest`), before joining them.
        if let Some(expected) = input.mpu_object_size {
            let total: u64 = chosen.iter().map(|p| p.size).sum();
            if expected < 0 {
                return Err(s3_error!(
                    InvalidRequest,
                    "Value for x-amz-mp-object-size header is less than zero: '{expected}'"
                ));
            }
            if expected as u64 != total {
                return Err(s3_error!(
                    InvalidRequest,
                    "The provided 'x-amz-mp-object-size' header value {expected} does not match what was computed: {total}"
                ));
            }
        }

        let md5s: Vec<&str> = chosen.iter().map(|p| p.md5_hex.as_str()).collect();
        let etag_value = multipart_etag(&md5s).ok_or_else(|| s3_error!(InternalError, "corrupt part record"))?;
        let numbers: Vec<u32> = chosen.iter().map(|p| p.part_number).collect();
        let (mut staging, read) = b
            .folder
            .compose_parts(&up.upload_id, &numbers)
            .await
            .map_err(backend_err)?;
        // The bytes joined must be the parts whose ETags were checked above: a part uploaded again
        // since we read its record is refused, not joined under the older upload's ETag.
        for (p, st) in chosen.iter().zip(&read) {
            if p.fingerprint.is_some_and(|f| f != fingerprint(st)) {
                return Err(s3_error!(
                    InvalidPart,
                    "Part {} was uploaded again while the upload was completing; list the parts and complete again.",
                    p.part_number
                ));
            }
        }
        // Synced by `commit`, beside the metadata write that announces the publish.
        let st = staging.seal(false).await.map_err(backend_err)?;

        // Object checksums: composite over part checksums, or the CRC of the whole object.
        let mut checksums = Checksums::default();
        if let Some(a) = up.checksum_algorithm {
            if up.checksum_type == Some(ChecksumType::FullObject) {
                let sums: Option<Vec<(&str, u64)>> = chosen
                    .iter()
                    .map(|p| p.checksums.get(a).map(|c| (c.as_str(), p.size)))
                    .collect();
                if let Some(v) = sums.and_then(|s| combine_crcs(a, &s)) {
                    checksums.set(a, Some(v));
                    checksums.checksum_type = Some(ChecksumType::FullObject);
                }
            } else {
                let sums: Option<Vec<&str>> = chosen.iter().map(|p| p.checksums.get(a).map(String::as_str)).collect();
                if let Some(sums) = sums {
                    checksums.set(a, composite(a, &sums));
                    checksums.checksum_type = Some(ChecksumType::Composite);
                }
            }
            verify_complete_checksum(a, input, &checksums)?;
        } else {
            // Parts without a requested algorithm carry CRC64NVME (S3's default); combine them.
            let sums: Option<Vec<(&str, u64)>> = chosen
                .iter()
                .map(|p| p.checksums.crc64nvme.as_deref().map(|c| (c, p.size)))
                .collect();
            checksums.crc64nvme = sums.and_then(|s| combine_crcs(Algo::Crc64Nvme, &s));
            if checksums.crc64nvme.is_some() {
                checksums.checksum_type = Some(ChecksumType::FullObject);
            }
            verify_complete_checksum(Algo::Crc64Nvme, input, &checksums)?;
        }
        let rec = ObjectRecord {
            etag: etag_value,
            fingerprint: fingerprint(&st),
            attrs: up.attrs.clone(),
            checksums,
            tags: up.tags.clone(),
            parts: chosen
                .iter()
                .map(|p| PartSummary {
                    size: p.size,
                    checksums: p.checksums.clone(),
                    salt: p.salt.clone(),
                })
                .collect(),
            upload_id: Some(up.upload_id.clone()),
            replaces: None,
            version_id: None,
            change: None,
        };
        let conds = WriteConditions {
            if_match: input.if_match.take(),
            if_none_match: input.if_none_match.take(),
        };
        // Every part file goes away with the upload, chosen or not.
        let released: u64 = stored.iter().map(|p| p.size).sum();
        let version_id = self.commit(&b, &path, staging, &rec, Some(&conds), released).await?;

        // The object is visible; now forget the upload.
        let (f, k, id) = (b.rec.folder_id, input.key.clone(), up.upload_id.clone());
        self.meta.delete_upload(f, &k, &id).await.map_err(meta_err)?;
        if let Err(e) = b.folder.remove_upload(&up.upload_id).await {
            tracing::warn!(upload = %up.upload_id, error = %e, "could not remove part files");
        }
        let mut out = completed(input, &rec);
        out.location = location;
        // An object stored with a customer key is not SSE-S3's.
        out.server_side_encryption = self.at_rest().filter(|_| up.attrs.customer_key.is_none());
        out.version_id = crate::s3::put::version_out(&b, version_id);
        let (size, mtime) = (rec.fingerprint.size, rec.fingerprint.mtime_ns);
        out.expiration = self.expiration_of(&b.rec.lifecycle, &input.key, &rec.tags, size, mtime);
        Ok(S3Response::new(out))
    }

    /// A Complete whose upload is gone: if it completed that upload into the object now at the
    /// key, with the same parts, it is a retry (the client missed the first answer) and gets the
    /// same answer, as S3 gives; anything else gets `gone`.
    async fn completed_before(
        &self,
        b: &BucketCtx,
        input: &CompleteMultipartUploadInput,
        location: Option<String>,
        gone: S3Error,
    ) -> S3Result<S3Response<CompleteMultipartUploadOutput>> {
        let Ok((rec, _, _)) = self.open_object(b, &input.key).await else {
            return Err(gone);
        };
        if rec.upload_id.as_ref().map(UploadId::as_str) != Some(input.upload_id.as_str()) {
            return Err(gone);
        }
        let parts = input
            .multipart_upload
            .as_ref()
            .and_then(|m| m.parts.as_deref())
            .unwrap_or_default();
        let md5s: Option<Vec<String>> = parts
            .iter()
            .map(|p| p.e_tag.as_ref().map(|e| e.value().trim_matches('"').to_owned()))
            .collect();
        let same_parts = md5s
            .and_then(|m| multipart_etag(&m.iter().map(String::as_str).collect::<Vec<_>>()))
            .is_some_and(|e| e == rec.etag);
        if !same_parts {
            return Err(gone);
        }
        let mut out = completed(input, &rec);
        out.location = location;
        out.server_side_encryption = self.at_rest();
        out.version_id = crate::s3::put::version_out(b, rec.version_id.clone());
        Ok(S3Response::new(out))
    }
}

/// A checksum sent with CompleteMultipartUpload must match the object's.
fn verify_complete_checksum(a: Algo, i: &CompleteMultipartUploadInput, c: &Checksums) -> S3Result<()> {
    let sent = match a {
        Algo::Crc32 => &i.checksum_crc32,
        Algo::Crc32c => &i.checksum_crc32c,
        Algo::Crc64Nvme => &i.checksum_crc64nvme,
        Algo::Sha1 => &i.checksum_sha1,
        Algo::Sha256 => &i.checksum_sha256,
    };
    if let (Some(sent), Some(ours)) = (sent, c.get(a)) {
        if sent != ours && sent.split('-').next() != ours.split('-').next() {
            return Err(s3_error!(
                BadDigest,
                "The {} you specified did not match the calculated checksum.",
                a.as_str()
            ));
        }
    }
    Ok(())
}

/// The answer to a successful CompleteMultipartUpload of `rec`.
fn completed(input: &CompleteMultipartUploadInput, rec: &ObjectRecord) -> CompleteMultipartUploadOutput {
    with_checksums!(
        &rec.checksums,
        CompleteMultipartUploadOutput {
            bucket: Some(input.bucket.clone()),
            key: Some(input.key.clone()),
            e_tag: Some(etag(&rec.etag)),
            checksum_type: rec.checksums.checksum_type.map(crate::s3::checksum::s3_type),
        },
        ..Default::default()
    )
}
