//! GetObject and HeadObject: resolve the file and its effective record, evaluate preconditions,
//! select the byte range (Range or partNumber), then answer with the bytes in the body (streamed
//! by `stream.rs`) or written into a token's window.

use std::sync::Arc;

use futures::StreamExt;
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};
use sync_wrapper::SyncStream;

use penstock_backends::{EntryKind, ReadHandle, Stat};
use penstock_metadata::{ObjectAttrs, ObjectRecord};
use penstock_rdma::transport::PushError;

use super::checksum::{s3_type, with_checksums, Algo};
use super::error::{backend_err, meta_err};
use super::object::{
    effective_record, etag, fingerprint, last_modified, metadata_out, parse_http_date, parse_key, Conditions,
};
use super::rdma::{reply_headers, transfer_failed, window_too_small, Admission, Admitted};
use super::sse_c::CustomerKey;
use super::stream::{file_shrank, read_blocks, Streaming};
use super::versioning::Found;
use super::{caller, peer, BucketCtx, Gateway};
use crate::metrics::{DataPath, Direction};

/// Objects (or ranges) up to this size are read in one call before the answer starts.
const WHOLE_READ: usize = 64 << 10;

/// MD5 of the empty string: the ETag of directory markers.
pub(crate) const EMPTY_MD5: &str = "d41d8cd98f00b204e9800998ecf8427e";

/// The parameters GetObject and HeadObject share.
struct ReadRequest<'a> {
    who: &'a crate::auth::Caller,
    bucket: &'a str,
    key: &'a str,
    conds: Conditions<'a>,
    range: Option<Range>,
    part_number: Option<i32>,
    version_id: Option<&'a str>,
    /// The customer key the read sends (SSE-C).
    sse: Option<CustomerKey>,
}

/// The bytes of an object a read returns.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Selection {
    /// First byte.
    pub start: u64,
    /// Number of bytes.
    pub len: u64,
    /// `Content-Range` of a partial answer (206).
    pub content_range: Option<String>,
    /// `x-amz-mp-parts-count` for a multipart object.
    pub parts_count: Option<i32>,
    /// Index of the part whose checksum the answer carries.
    pub checksum_part: Option<usize>,
}

/// Selects the bytes of an object of `size` bytes (in parts of `part_sizes`, empty when it was
/// not uploaded in parts) that a read with `partNumber` or a (parsed) `Range` returns.
pub(crate) fn select(
    size: u64,
    part_sizes: &[u64],
    part_number: Option<i32>,
    range: Option<Range>,
) -> S3Result<Selection> {
    let multipart = !part_sizes.is_empty();
    match (part_number, range) {
        (Some(_), Some(_)) => Err(s3_error!(
            InvalidRequest,
            "Cannot specify both Range header and partNumber query parameter"
        )),
        (Some(n), None) => {
            // Outside 1..=10000 the number is malformed (400); past the object's parts it is
            // one the object does not have (416).
            super::check_part_number(n)?;
            let whole = [size];
            let parts = if multipart { part_sizes } else { &whole[..] };
            if n as usize > parts.len() {
                return Err(super::error::invalid_part_number());
            }
            let idx = n as usize - 1;
            let start: u64 = parts[..idx].iter().sum();
            let len = parts[idx];
            Ok(Selection {
                start,
                len,
                // An empty part (of an empty object: the part a client built on the AWS CRT
                // asks for after a ranged GET of it was refused) has no byte range to name.
                content_range: (len > 0).then(|| format!("bytes {start}-{}/{size}", start + len - 1)),
                parts_count: multipart.then_some(parts.len() as i32),
                checksum_part: multipart.then_some(idx),
            })
        }
        (None, Some(range)) => {
            let rg = range
                .check(size)
                .map_err(|_| super::error::invalid_range(&range, size))?;
            if rg.is_empty() {
                // A suffix range (`bytes=-N`) of an empty object: satisfiable under RFC 9110 yet
                // selecting nothing, so S3 answers 200 with the whole (empty) object.
                return select(size, part_sizes, None, None);
            }
            Ok(Selection {
                start: rg.start,
                len: rg.end - rg.start,
                content_range: Some(format!("bytes {}-{}/{size}", rg.start, rg.end - 1)),
                parts_count: None,
                checksum_part: None,
            })
        }
        (None, None) => Ok(Selection {
            start: 0,
            len: size,
            content_range: None,
            parts_count: multipart.then_some(part_sizes.len() as i32),
            checksum_part: None,
        }),
    }
}

/// Builds the [`ReadRequest`] of a GetObject or HeadObject request `$req` with input `$i` (same
/// field names), its customer key admitted by gateway `$gw`.
macro_rules! read_request {
    ($gw:expr, $req:expr, $i:expr, $who:expr) => {
        ReadRequest {
            who: $who,
            bucket: &$i.bucket,
            key: &$i.key,
            conds: Conditions {
                if_match: $i.if_match.as_ref(),
                if_none_match: $i.if_none_match.as_ref(),
                if_modified_since: $i.if_modified_since.as_ref(),
                if_unmodified_since: $i.if_unmodified_since.as_ref(),
            },
            range: $i.range,
            part_number: $i.part_number,
            version_id: $i.version_id.as_deref(),
            sse: $gw.admit_key(&$req.headers, peer(&$req), super::sse_c::input_key!($i)?)?,
        }
    };
}

/// Refuses `response-*` overrides on an unsigned read, as S3 does: otherwise a link to a public
/// object could have it served as, say, `text/html` from the gateway's origin.
macro_rules! no_anonymous_overrides {
    ($who:expr, $i:expr) => {
        if $who.is_anonymous()
            && ($i.response_content_type.is_some()
                || $i.response_content_encoding.is_some()
                || $i.response_content_disposition.is_some()
                || $i.response_content_language.is_some()
                || $i.response_cache_control.is_some()
                || $i.response_expires.is_some())
        {
            return Err(s3_error!(
                InvalidRequest,
                "Request specific response headers cannot be used for anonymous GET requests."
            ));
        }
    };
}

/// Sets the object headers GetObject and HeadObject share: size and range, validators, content
/// headers (with `response-*` overrides), user metadata and, in checksum mode, checksums.
macro_rules! object_headers {
    ($out:expr, $i:expr, $plan:expr) => {{
        let a = &$plan.rec.attrs;
        $out.accept_ranges = Some("bytes".into());
        $out.content_length = Some($plan.len as i64);
        $out.content_range = $plan.content_range.clone();
        $out.parts_count = $plan.parts_count;
        $out.e_tag = Some(etag(&$plan.rec.etag));
        $out.version_id = $plan.version_id.clone();
        $out.expiration = $plan.expiration.clone();
        $out.last_modified = Some(last_modified(&$plan.st));
        $out.metadata = metadata_out(&a.user_metadata);
        // S3 names the class of an object only where it is not STANDARD.
        $out.storage_class = a.storage_class.clone().map(StorageClass::from);
        $out.website_redirect_location = a.website_redirect_location.clone();
        $out.restore = super::restore::restore_header(a);
        super::object_lock::lock_out!($out, a);
        super::sse_c::answer_key!($out, a.customer_key.as_ref().map(|k| k.key_md5.as_str()));
        $out.content_type = $i
            .response_content_type
            .clone()
            .or_else(|| a.content_type.clone())
            .or(Some(DEFAULT_TYPE.into()));
        $out.content_encoding = $i
            .response_content_encoding
            .clone()
            .or_else(|| a.content_encoding.clone());
        $out.content_disposition = $i
            .response_content_disposition
            .clone()
            .or_else(|| a.content_disposition.clone());
        $out.content_language = $i
            .response_content_language
            .clone()
            .or_else(|| a.content_language.clone());
        $out.cache_control = $i.response_cache_control.clone().or_else(|| a.cache_control.clone());
        $out.expires = $i
            .response_expires
            .clone()
            .or_else(|| a.expires.as_deref().and_then(parse_http_date));
        // In any case: clients built on the AWS CRT send `enabled`, and validate a download
        // against the checksum their HEAD gets back only if it comes back.
        if $i
            .checksum_mode
            .as_ref()
            .is_some_and(|m| m.as_str().eq_ignore_ascii_case(ChecksumMode::ENABLED))
        {
            let h = ObjectHeaders::new(&$plan);
            $out.checksum_crc32 = h.crc32;
            $out.checksum_crc32c = h.crc32c;
            $out.checksum_crc64nvme = h.crc64nvme;
            $out.checksum_sha1 = h.sha1;
            $out.checksum_sha256 = h.sha256;
            $out.checksum_type = h.checksum_type;
        }
    }};
}

/// Answers an object's stored `Expires` that is no HTTP date (`raw_headers.rs`) in `headers`:
/// S3 answers the text as it was sent, which s3s's output, a date, cannot hold. Nothing where
/// the object has none, the read asked for its own (`response-expires`), or it is a date.
fn answer_unparsed_expires(headers: &mut http::HeaderMap, a: &ObjectAttrs, response_expires: bool) {
    let Some(text) = a.expires.as_deref().filter(|_| !response_expires) else {
        return;
    };
    if parse_http_date(text).is_none() {
        if let Ok(v) = http::HeaderValue::from_str(text) {
            headers.insert(http::header::EXPIRES, v);
        }
    }
}

/// What a read resolved to.
struct ReadPlan {
    /// `x-amz-version-id`, in a versioned bucket.
    version_id: Option<String>,
    /// `x-amz-expiration`, when a lifecycle rule expires the (current) version read.
    expiration: Option<String>,
    rec: ObjectRecord,
    st: Stat,
    handle: Option<Arc<dyn ReadHandle>>,
    start: u64,
    len: u64,
    content_range: Option<String>,
    parts_count: Option<i32>,
    checksum_part: Option<usize>,
}

/// A missing key as a caller who may not list the bucket sees it: 403, as on S3.
fn hidden(who: &crate::auth::Caller, e: s3s::S3Error) -> s3s::S3Error {
    if who.hide_missing && *e.code() == s3s::S3ErrorCode::NoSuchKey {
        s3s::s3_error!(AccessDenied, "Access Denied")
    } else {
        e
    }
}

impl Gateway {
    /// GetObject.
    pub(crate) async fn get_object(&self, req: S3Request<GetObjectInput>) -> S3Result<S3Response<GetObjectOutput>> {
        let i = &req.input;
        let who = caller(&req)?;
        no_anonymous_overrides!(who, i);
        let admission = self.rdma.admit(&req.headers, peer(&req), &self.metrics, false)?;
        let plan = self
            .plan_read(read_request!(self, req, i, &who))
            .await
            .map_err(|e| hidden(&who, e))?;
        let mut out = GetObjectOutput {
            server_side_encryption: self.at_rest(),
            ..Default::default()
        };
        object_headers!(out, i, plan);
        out.tag_count = (!plan.rec.tags.is_empty()).then_some(plan.rec.tags.len() as i32);
        let own_expires = i.response_expires.is_some();
        let status = if plan.content_range.is_some() { 206 } else { 200 };
        match admission {
            Admission::Serve(a) => {
                let moved = self.push_to_window(&a, &plan).await?;
                out.content_length = Some(0);
                let mut resp = S3Response::new(out);
                answer_unparsed_expires(&mut resp.headers, &plan.rec.attrs, own_expires);
                reply_headers(&mut resp.headers, status, Some(moved));
                Ok(resp)
            }
            other => {
                out.body = match plan.handle.clone() {
                    // Read at once: one chunk, no read-ahead machinery, and a failed read is
                    // answered with an error instead of a body cut short.
                    Some(h) if plan.len <= WHOLE_READ as u64 => {
                        let bytes = h.read_at(plan.start, plan.len as usize).await.map_err(backend_err)?;
                        if bytes.len() as u64 != plan.len {
                            return Err(file_shrank());
                        }
                        self.metrics.payload(DataPath::Http, Direction::Out, plan.len);
                        Some(StreamingBlob::from(s3s::Body::from(bytes)))
                    }
                    h => h.map(|h| {
                        let m = self.metrics.clone();
                        let counted = Streaming::start();
                        let s = read_blocks(h, plan.start, plan.len, Streaming::block).inspect(move |r| {
                            let _ = &counted;
                            if let Ok(b) = r {
                                m.payload(DataPath::Http, Direction::Out, b.len() as u64);
                            }
                        });
                        StreamingBlob::wrap(SyncStream::new(s))
                    }),
                };
                let mut resp = S3Response::new(out);
                answer_unparsed_expires(&mut resp.headers, &plan.rec.attrs, own_expires);
                if matches!(other, Admission::Fallback) {
                    reply_headers(&mut resp.headers, 501, None);
                }
                Ok(resp)
            }
        }
    }

    /// Writes the planned bytes into the token's window, reading the file ahead of the transfer.
    async fn push_to_window(&self, a: &Admitted, plan: &ReadPlan) -> S3Result<u64> {
        let window = a.token.window().len;
        if plan.len > window {
            return Err(window_too_small(plan.len, window));
        }
        let Some(h) = plan.handle.clone() else {
            return Ok(0);
        };
        let start = plan.start;
        let read = move |off: u64, n: usize| {
            let h = h.clone();
            async move { h.read_at(start + off, n).await }
        };
        let moved = penstock_rdma::transport::push(
            a.transport.clone(),
            a.token.clone(),
            plan.len,
            penstock_rdma::transport::CHUNK,
            a.depth,
            read,
        )
        .await
        .map_err(|e| match e {
            PushError::Source(e) => backend_err(e),
            PushError::Short { .. } => file_shrank(),
            PushError::Transfer(e) => transfer_failed(&e, &self.metrics, a.token.kind()),
        })?;
        self.metrics.payload(a.data_path(), Direction::Out, moved);
        Ok(moved)
    }

    /// HeadObject.
    pub(crate) async fn head_object(&self, req: S3Request<HeadObjectInput>) -> S3Result<S3Response<HeadObjectOutput>> {
        let i = &req.input;
        let who = caller(&req)?;
        no_anonymous_overrides!(who, i);
        let plan = self
            .plan_read(read_request!(self, req, i, &who))
            .await
            .map_err(|e| hidden(&who, e))?;
        let mut out = HeadObjectOutput {
            server_side_encryption: self.at_rest(),
            ..Default::default()
        };
        object_headers!(out, i, plan);
        let mut resp = S3Response::new(out);
        answer_unparsed_expires(&mut resp.headers, &plan.rec.attrs, i.response_expires.is_some());
        // S3 answers HEAD with the tag count as GET does; s3s's HeadObjectOutput has no field for it.
        if !plan.rec.tags.is_empty() {
            resp.headers
                .insert("x-amz-tagging-count", http::HeaderValue::from(plan.rec.tags.len()));
        }
        resp.status = plan
            .content_range
            .is_some()
            .then_some(http::StatusCode::PARTIAL_CONTENT);
        Ok(resp)
    }

    /// GetObjectAttributes: ETag, checksum, size, storage class and (for multipart objects) the
    /// parts, from the object's record; only the attributes asked for.
    pub(crate) async fn get_object_attributes(
        &self,
        req: S3Request<GetObjectAttributesInput>,
    ) -> S3Result<S3Response<GetObjectAttributesOutput>> {
        let i = &req.input;
        parse_key(&i.key)?;
        // SDKs send the list comma-separated in one header.
        let asked: Vec<&str> = i
            .object_attributes
            .iter()
            .flat_map(|x| x.as_str().split(','))
            .map(str::trim)
            .filter(|a| !a.is_empty())
            .collect();
        let wants = |a: &str| asked.contains(&a);
        const KNOWN: [&str; 5] = [
            ObjectAttributes::ETAG,
            ObjectAttributes::CHECKSUM,
            ObjectAttributes::OBJECT_PARTS,
            ObjectAttributes::STORAGE_CLASS,
            ObjectAttributes::OBJECT_SIZE,
        ];
        if asked.is_empty() || asked.iter().any(|a| !KNOWN.contains(a)) {
            return Err(s3_error!(
                InvalidArgument,
                "Invalid attribute name specified: x-amz-object-attributes takes ETag, Checksum, ObjectParts, StorageClass and ObjectSize"
            ));
        }
        let sse = self.admit_key(&req.headers, peer(&req), super::sse_c::input_key!(i)?)?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let (rec, st, _) = self.open_version(&b, &i.key, i.version_id.as_deref()).await?;
        // Its metadata is read with the object's key, as its bytes are (S3's rule).
        super::sse_c::check_read(&rec, sse.as_ref())?;
        let mut out = GetObjectAttributesOutput {
            last_modified: Some(last_modified(&st)),
            version_id: b.rec.versioning.map(|_| rec.version().to_owned()),
            ..Default::default()
        };
        if wants(ObjectAttributes::ETAG) {
            out.e_tag = Some(etag(&rec.etag));
        }
        if wants(ObjectAttributes::OBJECT_SIZE) {
            out.object_size = Some(st.size as i64);
        }
        if wants(ObjectAttributes::STORAGE_CLASS) {
            out.storage_class = Some(StorageClass::from(super::object::class_name(&rec.attrs)));
        }
        if wants(ObjectAttributes::CHECKSUM) && !rec.checksums.is_empty() {
            out.checksum = Some(with_checksums!(
                &rec.checksums,
                Checksum {
                    checksum_type: rec.checksums.checksum_type.map(s3_type),
                }
            ));
        }
        if wants(ObjectAttributes::OBJECT_PARTS) && !rec.parts.is_empty() {
            let max = i.max_parts.unwrap_or(1000).clamp(0, 1000) as usize;
            let after = i.part_number_marker.unwrap_or(0).max(0) as usize;
            let listed: Vec<ObjectPart> = rec
                .parts
                .iter()
                .enumerate()
                .skip(after)
                .take(max)
                .map(|(n, p)| {
                    with_checksums!(
                        &p.checksums,
                        ObjectPart {
                            part_number: Some(n as i32 + 1),
                            size: Some(p.size as i64),
                        }
                    )
                })
                .collect();
            let last = listed.last().and_then(|p| p.part_number);
            let truncated = after + listed.len() < rec.parts.len();
            out.object_parts = Some(GetObjectAttributesParts {
                is_truncated: Some(truncated),
                max_parts: Some(max as i32),
                next_part_number_marker: last.filter(|_| truncated),
                part_number_marker: i.part_number_marker,
                parts: Some(listed),
                total_parts_count: Some(rec.parts.len() as i32),
            });
        }
        Ok(S3Response::new(out))
    }

    async fn plan_read(&self, r: ReadRequest<'_>) -> S3Result<ReadPlan> {
        let b = self.bucket(r.who, r.bucket).await?;
        let (rec, st, handle) = self.open_version(&b, r.key, r.version_id).await?;
        let handle = super::sse_c::open(&rec, r.sse.as_ref(), handle)?;
        r.conds.check(&rec.etag, &st, false)?;

        let part_sizes: Vec<u64> = rec.parts.iter().map(|p| p.size).collect();
        let Selection {
            start,
            len,
            content_range,
            parts_count,
            checksum_part,
        } = select(st.size, &part_sizes, r.part_number, r.range)?;
        let expiration = match r.version_id {
            None => self.expiration_of(&b.rec.lifecycle, r.key, &rec.tags, st.size, st.mtime_ns),
            Some(_) => None,
        };
        Ok(ReadPlan {
            expiration,
            version_id: b.rec.versioning.map(|_| rec.version().to_owned()),
            rec,
            st,
            handle,
            start,
            len,
            content_range,
            parts_count,
            checksum_part,
        })
    }

    /// Opens version `version_id` of `key` (the current one when `None`): its record, the
    /// attributes of its file and a handle (none for a directory marker). A key whose latest
    /// version is a delete marker answers 404 with `x-amz-delete-marker`; a delete marker asked
    /// for by id, 405.
    pub(crate) async fn open_version(
        &self,
        b: &BucketCtx,
        key: &str,
        version_id: Option<&str>,
    ) -> S3Result<(ObjectRecord, Stat, Option<Arc<dyn ReadHandle>>)> {
        let Some(v) = version_id else {
            return match self.open_object(b, key).await {
                Err(e) if *e.code() == s3s::S3ErrorCode::NoSuchKey => Err(self.not_found(b, key, e).await),
                r => r,
            };
        };
        match self.find_version(b, key, v).await? {
            Found::Current => {
                let (rec, st, h) = self.open_object(b, key).await?;
                // Replaced between the lookup and the open: that version is noncurrent now.
                if rec.version() != v {
                    return Box::pin(self.open_version(b, key, Some(v))).await;
                }
                Ok((rec, st, h))
            }
            Found::Noncurrent(rec, st, h) => Ok((*rec, st, h)),
            Found::Marker(row) => Err(Gateway::marker_read(&row)),
        }
    }

    /// Opens the object at `key`: a file, or a directory marker (which has no handle).
    pub(crate) async fn open_object(
        &self,
        b: &BucketCtx,
        key: &str,
    ) -> S3Result<(ObjectRecord, Stat, Option<Arc<dyn ReadHandle>>)> {
        let path = parse_key(key)?;
        let folder = b.rec.folder_id;
        let no_such_key = || s3_error!(NoSuchKey, "The specified key does not exist.");
        if path.is_dir() {
            let st = b
                .folder
                .stat(&path)
                .await
                .map_err(backend_err)?
                .ok_or_else(no_such_key)?;
            if st.kind != EntryKind::Dir {
                return Err(no_such_key());
            }
            let k = key.to_owned();
            let stored = self.meta.object(folder, &k).await.map_err(meta_err)?;
            // A marker written with a body reads back as those bytes.
            if let Some(h) = b.folder.open_marker(&path).await.map_err(backend_err)? {
                let st = *h.stat();
                return Ok((effective_record(key, &st, stored), st, Some(Arc::from(h))));
            }
            let rec = match stored.map(ObjectRecord::in_force) {
                Some(mut r) => {
                    // Directory mtimes change with their contents; the marker's identity is its record.
                    r.fingerprint = fingerprint(&st);
                    r
                }
                None if b
                    .folder
                    .read_dir_from(path.segments(), "", 1)
                    .await
                    .map_err(backend_err)?
                    .is_empty() =>
                {
                    let mut r = effective_record(key, &st, None);
                    r.etag = EMPTY_MD5.to_owned();
                    r.attrs.content_type = None;
                    r
                }
                None => return Err(no_such_key()),
            };
            let st = Stat { size: 0, ..st };
            return Ok((rec, st, None));
        }
        let mut attempt = 0;
        loop {
            let handle: Arc<dyn ReadHandle> = Arc::from(
                b.folder
                    .open_read(&path)
                    .await
                    .map_err(backend_err)?
                    .ok_or_else(no_such_key)?,
            );
            let st = *handle.stat();
            let k = key.to_owned();
            let stored = self.meta.object(folder, &k).await.map_err(meta_err)?;
            if let Some(rec) = stored.and_then(|r| r.describing(&fingerprint(&st))) {
                return Ok((rec, st, Some(handle)));
            }
            // No record describes the file we opened. Either it changed outside the gateway (any
            // record is stale: synthesize one), or a writer replaced or removed it after we
            // opened it and the record now describes what came next: then open again, so the
            // answer is one writer's bytes with that writer's metadata (or a 404).
            match b.folder.stat(&path).await.map_err(backend_err)? {
                None => return Err(no_such_key()),
                Some(now) if fingerprint(&now) != fingerprint(&st) && attempt < MAX_REOPENS => attempt += 1,
                Some(_) => return Ok((effective_record(key, &st, None), st, Some(handle))),
            }
        }
    }
}

/// How often a read opens a key again because a writer replaced it between open and record
/// lookup. Each retry races only the next overwrite's few-microsecond window.
pub(crate) const MAX_REOPENS: u32 = 8;

/// The Content-Type of an object stored without one (and of a file whose name gives no type):
/// what S3 answers for an upload that named none.
const DEFAULT_TYPE: &str = "binary/octet-stream";

/// Checksum headers to return: the whole object's, or one part's for `?partNumber=` reads of a
/// multipart object. Ranged reads carry none (S3 has no checksum for an arbitrary range).
struct ObjectHeaders {
    crc32: Option<String>,
    crc32c: Option<String>,
    crc64nvme: Option<String>,
    sha1: Option<String>,
    sha256: Option<String>,
    checksum_type: Option<ChecksumType>,
}

impl ObjectHeaders {
    fn new(plan: &ReadPlan) -> Self {
        use super::checksum::ChecksumType::Composite;
        let composite = plan.rec.checksums.checksum_type == Some(Composite);
        let src = match plan.checksum_part {
            // S3 gives a part's own checksum where the object's checksum is made of them (every
            // part of a COMPOSITE object) or equals it (the one part of a single-part upload).
            // A part of a FULL_OBJECT object of several parts has no checksum of its own to
            // give; the part's bytes are no range the object's checksum covers.
            Some(i) if composite || plan.rec.parts.len() == 1 => plan.rec.parts.get(i).map(|p| &p.checksums),
            Some(_) => None,
            None if plan.content_range.is_none() => Some(&plan.rec.checksums),
            None => None,
        };
        let get = |a: Algo| src.and_then(|c| c.get(a).cloned());
        let [crc32, crc32c, crc64nvme, sha1, sha256] = Algo::ALL.map(get);
        // A part's checksum covers that part's bytes in full, but it belongs to the object's
        // scheme: parts of a COMPOSITE object are reported as COMPOSITE, as S3 does.
        let checksum_type = match plan.checksum_part {
            Some(_) if composite => src.map(|_| Composite),
            _ => src.and_then(|c| c.checksum_type),
        }
        .map(s3_type);
        Self {
            crc32,
            crc32c,
            crc64nvme,
            sha1,
            sha256,
            checksum_type,
        }
    }
}
