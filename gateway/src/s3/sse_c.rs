//! Server-side encryption with customer-provided keys (SSE-C).
//!
//! A writer sends a 256-bit key with each request (`x-amz-server-side-encryption-customer-*`);
//! the object's bytes are stored encrypted under it and read back only by a request that sends
//! the same key. The key itself is never stored or logged: an object's record keeps a random
//! salt and a keyed digest of it (HMAC-SHA256 under the key), which a later request's key must
//! reproduce, and every data key is derived from the customer's key and a salt of its own.
//!
//! The bytes are AES-256 in counter mode, keyed per object (or, for an object uploaded in parts,
//! per part upload: each `UploadPart` draws a fresh salt, so no two uploads of a part share a
//! key stream). Counter mode keeps the file exactly as long as the object, so the file's size is
//! the object's in listings, quotas and ranges, and any range decrypts on its own: byte `n` of a
//! segment is XORed with byte `n` of that segment's key stream. A compute session that mounts
//! the folder sees the ciphertext, as any reader without the key must. What this buys is
//! confidentiality at rest, which is what S3 promises of SSE-C; counter mode carries no
//! integrity tag. A file a session rewrites no longer matches its record's fingerprint and is
//! then served as the plain file it is (the rule for every object), not decrypted.
//!
//! ETags: S3 gives an SSE-C object an ETag that is not the MD5 of its data. Here it is the MD5
//! of the salt followed by the data's MD5: as unique as an MD5 ETag, cheap, and telling nothing
//! of the plaintext to anyone who may list the bucket but has no key.

use std::sync::Arc;

use aes::Aes256;
use async_trait::async_trait;
use base64::Engine;
use bytes::{Bytes, BytesMut};
use ctr::cipher::{KeyIvInit, StreamCipher, StreamCipherSeek};
use http::HeaderMap;
use s3s::{s3_error, S3Error, S3Result};

use penstock_backends::{Announce, Announced, ObjectPath, ReadHandle, StagingFile, Stat, UploadId};
use penstock_metadata::{CustomerKeyed, ObjectRecord};

/// AES-256 with a 128-bit big-endian block counter starting at zero: each data key encrypts one
/// segment only, so the counter never needs a nonce of its own.
type Aes256Ctr = ctr::Ctr128BE<Aes256>;

/// The one algorithm S3 takes for SSE-C.
pub(crate) const ALGORITHM: &str = "AES256";

/// The names of the three fields that carry a key: for the object a request writes or reads,
/// or for the source of a copy.
pub(crate) struct KeyFields {
    algorithm: &'static str,
    key: &'static str,
    md5: &'static str,
}

/// The object's own key (`x-amz-server-side-encryption-customer-*`).
pub(crate) const OBJECT_KEY: KeyFields = KeyFields {
    algorithm: "x-amz-server-side-encryption-customer-algorithm",
    key: "x-amz-server-side-encryption-customer-key",
    md5: "x-amz-server-side-encryption-customer-key-MD5",
};

/// A copy's source's key (`x-amz-copy-source-server-side-encryption-customer-*`).
pub(crate) const SOURCE_KEY: KeyFields = KeyFields {
    algorithm: "x-amz-copy-source-server-side-encryption-customer-algorithm",
    key: "x-amz-copy-source-server-side-encryption-customer-key",
    md5: "x-amz-copy-source-server-side-encryption-customer-key-MD5",
};

/// What domain-separates the digests derived from a customer key.
const CHECK_LABEL: &[u8] = b"penstock sse-c key check\0";
const DATA_LABEL: &[u8] = b"penstock sse-c data key\0";

/// A key a request provided, checked against the MD5 it came with.
pub(crate) struct CustomerKey {
    key: [u8; 32],
    /// Base64 MD5 of the key, as S3 answers it.
    md5: String,
}

impl std::fmt::Debug for CustomerKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key: debug output can reach logs.
        write!(f, "CustomerKey(md5 {})", self.md5)
    }
}

impl Drop for CustomerKey {
    fn drop(&mut self) {
        // Not left behind in freed memory longer than the request needs it; `black_box` keeps
        // the store from being elided as dead (best effort: copies made on the way, by the
        // HTTP stack included, are not ours to clear).
        self.key = [0; 32];
        std::hint::black_box(&self.key);
    }
}

/// 400 `InvalidArgument` naming `field` and the value it had (`null` when it was missing), as
/// S3 answers a malformed SSE-C request.
fn malformed(message: &str, field: &str, value: Option<&str>) -> S3Error {
    super::error::invalid_argument(message, field, value.unwrap_or("null"))
}

impl CustomerKey {
    /// The key the three fields give (header values, or a browser form's fields); `None` when
    /// none is there. S3's 400s for each field missing or wrong.
    pub(crate) fn parse(
        algorithm: Option<&str>,
        key: Option<&str>,
        md5: Option<&str>,
        names: &KeyFields,
    ) -> S3Result<Option<Self>> {
        if algorithm.is_none() && key.is_none() && md5.is_none() {
            return Ok(None);
        }
        let Some(algorithm) = algorithm else {
            return Err(malformed(
                "Requests specifying Server Side Encryption with Customer provided keys must provide a valid encryption algorithm.",
                names.algorithm,
                None,
            ));
        };
        if algorithm != ALGORITHM {
            return Err(super::error::with_detail(
                super::error::custom(
                    "InvalidEncryptionAlgorithmError",
                    http::StatusCode::BAD_REQUEST,
                    "The Encryption request you specified is not valid. Supported value: AES256.",
                ),
                &super::error::argument_detail(names.algorithm, algorithm),
            ));
        }
        let Some(key) = key else {
            return Err(malformed(
                "Requests specifying Server Side Encryption with Customer provided keys must provide an appropriate secret key.",
                names.key,
                None,
            ));
        };
        let b64 = base64::engine::general_purpose::STANDARD;
        let decoded: [u8; 32] = b64
            .decode(key.trim())
            .ok()
            .and_then(|k| k.try_into().ok())
            // The value is the secret: S3 names the field only.
            .ok_or_else(|| {
                malformed(
                    "The secret key was invalid for the specified algorithm.",
                    names.key,
                    Some(""),
                )
            })?;
        let this = Self {
            key: decoded,
            md5: b64.encode(md5_of(&decoded)),
        };
        let Some(md5) = md5 else {
            return Err(malformed(
                "Requests specifying Server Side Encryption with Customer provided keys must provide the client calculated MD5 of the secret key.",
                names.md5,
                None,
            ));
        };
        if md5.trim() != this.md5 {
            return Err(malformed(
                "The calculated MD5 hash of the key did not match the hash that was provided.",
                names.md5,
                Some(md5),
            ));
        }
        Ok(Some(this))
    }

    /// The key a request's headers give under `names`.
    pub(crate) fn from_headers(headers: &HeaderMap, names: &KeyFields) -> S3Result<Option<Self>> {
        let get = |n: &str| headers.get(n).map(|v| v.to_str().unwrap_or("\u{fffd}"));
        Self::parse(get(names.algorithm), get(names.key), get(names.md5), names)
    }

    /// Base64 MD5 of the key, for answers.
    pub(crate) fn md5(&self) -> &str {
        &self.md5
    }

    /// The record of a new object (or upload) under this key: a fresh salt and its check.
    pub(crate) fn keyed(&self) -> CustomerKeyed {
        let salt: [u8; 32] = rand::random();
        CustomerKeyed {
            algorithm: ALGORITHM.to_owned(),
            key_md5: self.md5.clone(),
            salt: hex::encode(salt),
            check: hex::encode(self.derive(CHECK_LABEL, &salt)),
        }
    }

    /// Whether this is the key `k` was made with: S3's 403 when it is not.
    pub(crate) fn verify(&self, k: &CustomerKeyed) -> S3Result<()> {
        let salt = salt_bytes(&k.salt)?;
        let expected = hex::decode(&k.check).map_err(|_| corrupt())?;
        // ring's verification compares in constant time: how much of the check matched is no
        // business of the requester's.
        let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &self.key);
        ring::hmac::verify(&key, &[CHECK_LABEL, &salt].concat(), &expected)
            .map_err(|_| s3_error!(AccessDenied, "Access Denied"))
    }

    /// HMAC-SHA256 under the customer's key of `label` followed by `salt`.
    fn derive(&self, label: &[u8], salt: &[u8]) -> [u8; 32] {
        let k = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &self.key);
        let mut ctx = ring::hmac::Context::with_key(&k);
        ctx.update(label);
        ctx.update(salt);
        let tag = ctx.sign();
        let mut out = [0u8; 32];
        out.copy_from_slice(tag.as_ref());
        out
    }

    /// The data key of the segment with salt `salt_hex`.
    fn data_key(&self, salt_hex: &str) -> S3Result<[u8; 32]> {
        Ok(self.derive(DATA_LABEL, &salt_bytes(salt_hex)?))
    }

    /// `staging`, encrypting what is written to it under the data key of `salt_hex` (the
    /// object's salt, or a part's).
    fn encrypting(&self, staging: Box<dyn StagingFile>, salt_hex: &str) -> S3Result<Box<dyn StagingFile>> {
        let key = self.data_key(salt_hex)?;
        Ok(Box::new(Encrypting {
            inner: staging,
            cipher: Aes256Ctr::new(&key.into(), &[0u8; 16].into()),
        }))
    }

    /// `handle` of the file of `rec`, decrypting what is read from it.
    fn decrypting(&self, rec: &ObjectRecord, handle: Arc<dyn ReadHandle>) -> S3Result<Arc<dyn ReadHandle>> {
        let k = rec.attrs.customer_key.as_ref().ok_or_else(corrupt)?;
        let segments = if rec.parts.is_empty() {
            vec![Segment {
                start: 0,
                len: u64::MAX,
                key: self.data_key(&k.salt)?,
            }]
        } else {
            let mut start = 0;
            let mut v = Vec::with_capacity(rec.parts.len());
            for p in &rec.parts {
                let salt = p.salt.as_deref().ok_or_else(corrupt)?;
                v.push(Segment {
                    start,
                    len: p.size,
                    key: self.data_key(salt)?,
                });
                start += p.size;
            }
            v
        };
        Ok(Arc::new(Decrypting {
            inner: handle,
            segments,
        }))
    }
}

/// The object's key ([`CustomerKey::parse`]) of an input with S3's three SSE-C fields (every
/// write and read of an object names them alike), as an `S3Result<Option<CustomerKey>>`.
macro_rules! input_key {
    ($i:expr) => {
        $crate::s3::sse_c::CustomerKey::parse(
            $i.sse_customer_algorithm.as_deref(),
            $i.sse_customer_key.as_deref(),
            $i.sse_customer_key_md5.as_deref(),
            &$crate::s3::sse_c::OBJECT_KEY,
        )
    };
}
pub(crate) use input_key;

/// Names the key in an answer (`x-amz-server-side-encryption-customer-algorithm` and `-key-MD5`,
/// same field names in every output that has them) when `$md5` (`Option<&str>`, the key's base64
/// MD5) is one; such an object is not also SSE-S3's (`x-amz-server-side-encryption`).
macro_rules! answer_key {
    ($out:expr, $md5:expr) => {
        if let Some(md5) = $md5 {
            $out.sse_customer_algorithm = Some($crate::s3::sse_c::ALGORITHM.to_owned());
            $out.sse_customer_key_md5 = Some(md5.to_owned());
            $out.server_side_encryption = None;
        }
    };
}
pub(crate) use answer_key;

impl super::Gateway {
    /// `key`, the customer key a request sent (or none), if the request may send one: S3 takes
    /// keys over TLS only. Here also from a loopback peer (the key crosses no network) and,
    /// with `sse_c_over_http`, from any; behind a TLS-terminating proxy, its
    /// `X-Forwarded-Proto: https` counts as TLS.
    pub(crate) fn admit_key(
        &self,
        headers: &HeaderMap,
        from: Option<super::PeerAddr>,
        key: Option<CustomerKey>,
    ) -> S3Result<Option<CustomerKey>> {
        if key.is_none()
            || self.sse_c_over_http
            || super::request_scheme(headers, self.secure) == "https"
            || from.is_some_and(|p| p.0.ip().is_loopback())
        {
            return Ok(key);
        }
        Err(s3_error!(
            InvalidRequest,
            "Requests specifying Server Side Encryption with Customer provided keys must be made over a secure connection."
        ))
    }
}

/// What a write into the bucket of `rec` with a customer key (`asked`) may: S3's 403 where the
/// bucket's default encryption blocks SSE-C (PutBucketEncryption's `BlockedEncryptionTypes`).
/// Objects stored with a key before stay readable with it.
pub(crate) fn check_bucket(rec: &penstock_metadata::BucketRecord, asked: bool) -> S3Result<()> {
    if asked && rec.sse_c_blocked {
        return Err(s3_error!(
            AccessDenied,
            "This bucket's default encryption blocks writes with customer-provided keys (SSE-C)."
        ));
    }
    Ok(())
}

/// A fresh salt for one part upload.
fn part_salt() -> String {
    hex::encode(rand::random::<[u8; 32]>())
}

/// The staging file of an object written with `key` (none: `staging` itself), encrypting
/// under the salt of `keyed`, the object's record of the key.
pub(crate) fn object_staging(
    key: Option<&CustomerKey>,
    keyed: Option<&CustomerKeyed>,
    staging: Box<dyn StagingFile>,
) -> S3Result<Box<dyn StagingFile>> {
    match (key, keyed) {
        (Some(k), Some(keyed)) => k.encrypting(staging, &keyed.salt),
        _ => Ok(staging),
    }
}

/// The staging file of a part written with `key` (none: `staging` itself) and the fresh salt
/// it encrypts under, for the part's record.
pub(crate) fn part_staging(
    key: Option<&CustomerKey>,
    staging: Box<dyn StagingFile>,
) -> S3Result<(Box<dyn StagingFile>, Option<String>)> {
    let Some(k) = key else {
        return Ok((staging, None));
    };
    let salt = part_salt();
    Ok((k.encrypting(staging, &salt)?, Some(salt)))
}

/// The ETag of data with MD5 `md5`: the MD5 itself, or for data encrypted under salt
/// `salt_hex` the MD5 of the salt and the MD5 (see the module's note).
pub(crate) fn etag(md5: &[u8; 16], salt_hex: Option<&str>) -> String {
    let Some(salt_hex) = salt_hex else {
        return hex::encode(md5);
    };
    let mut c = penstock_md5::Chain::default();
    c.update(salt_hex.as_bytes());
    c.update(md5);
    hex::encode(c.finish())
}

fn md5_of(data: &[u8]) -> [u8; 16] {
    let mut c = penstock_md5::Chain::default();
    c.update(data);
    c.finish()
}

fn salt_bytes(salt_hex: &str) -> S3Result<Vec<u8>> {
    hex::decode(salt_hex).map_err(|_| corrupt())
}

fn corrupt() -> S3Error {
    s3_error!(InternalError, "The object's encryption record is damaged")
}

/// 400 `InvalidRequest` for a read without a key of an object stored with one.
fn key_required() -> S3Error {
    s3_error!(
        InvalidRequest,
        "The object was stored using a form of Server Side Encryption. The correct parameters must be provided to retrieve the object."
    )
}

/// 400 `InvalidRequest` for a key sent for an object stored without one.
pub(crate) fn not_applicable() -> S3Error {
    s3_error!(
        InvalidRequest,
        "The encryption parameters are not applicable to this object."
    )
}

/// What a read of `rec` with `key` may have: `Ok` when both are without a key or the key is
/// the object's, S3's refusal otherwise.
pub(crate) fn check_read(rec: &ObjectRecord, key: Option<&CustomerKey>) -> S3Result<()> {
    match (&rec.attrs.customer_key, key) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(not_applicable()),
        (Some(_), None) => Err(key_required()),
        (Some(k), Some(key)) => key.verify(k),
    }
}

/// [`check_read`], then the handle that reads the object's plaintext: `handle` itself for an
/// object stored without a key.
pub(crate) fn open(
    rec: &ObjectRecord,
    key: Option<&CustomerKey>,
    handle: Option<Arc<dyn ReadHandle>>,
) -> S3Result<Option<Arc<dyn ReadHandle>>> {
    check_read(rec, key)?;
    match (key, handle) {
        (Some(key), Some(h)) => key.decrypting(rec, h).map(Some),
        (_, h) => Ok(h),
    }
}

/// What a part request (`UploadPart`, `UploadPartCopy`) must carry for its upload: the upload's
/// own key when it was started with one, none otherwise.
pub(crate) fn check_part(upload: Option<&CustomerKeyed>, key: Option<&CustomerKey>) -> S3Result<()> {
    match (upload, key) {
        (None, None) => Ok(()),
        (None, Some(_)) => Err(s3_error!(
            InvalidRequest,
            "The multipart upload initiate did not request encryption with a customer-provided key; part requests must not include encryption parameters."
        )),
        (Some(_), None) => Err(s3_error!(
            InvalidRequest,
            "The multipart upload initiate requested encryption. Subsequent part requests must include the appropriate encryption parameters."
        )),
        (Some(k), Some(key)) => key.verify(k).map_err(|_| {
            s3_error!(
                InvalidRequest,
                "The provided encryption parameters did not match the ones used originally."
            )
        }),
    }
}

/// A stretch of a file encrypted under one data key, from its `start` in the file.
struct Segment {
    start: u64,
    len: u64,
    key: [u8; 32],
}

/// XORs `buf`, the bytes of a file from `offset`, with the key streams of the segments it
/// spans.
fn apply(segments: &[Segment], offset: u64, buf: &mut [u8]) {
    let end = offset + buf.len() as u64;
    for s in segments {
        let s_end = s.start.saturating_add(s.len);
        let (from, to) = (offset.max(s.start), end.min(s_end));
        if from >= to {
            continue;
        }
        let mut c = Aes256Ctr::new(&s.key.into(), &[0u8; 16].into());
        c.seek(from - s.start);
        c.apply_keystream(&mut buf[(from - offset) as usize..(to - offset) as usize]);
    }
}

/// Bytes that may be changed in place: `b` itself when nothing else holds it, else a copy.
fn owned(b: Bytes) -> BytesMut {
    b.try_into_mut().unwrap_or_else(|b| BytesMut::from(&b[..]))
}

/// A read handle that decrypts.
struct Decrypting {
    inner: Arc<dyn ReadHandle>,
    segments: Vec<Segment>,
}

#[async_trait]
impl ReadHandle for Decrypting {
    fn stat(&self) -> &Stat {
        self.inner.stat()
    }

    async fn read_at(&self, offset: u64, len: usize) -> penstock_backends::Result<Bytes> {
        let mut buf = owned(self.inner.read_at(offset, len).await?);
        apply(&self.segments, offset, &mut buf);
        Ok(buf.freeze())
    }
}

/// A staging file that encrypts what is written to it, in order, under one data key.
struct Encrypting {
    inner: Box<dyn StagingFile>,
    cipher: Aes256Ctr,
}

#[async_trait]
impl StagingFile for Encrypting {
    async fn write(&mut self, data: Bytes) -> penstock_backends::Result<()> {
        let mut buf = owned(data);
        self.cipher.apply_keystream(&mut buf);
        self.inner.write(buf.freeze()).await
    }

    fn len(&self) -> u64 {
        self.inner.len()
    }

    async fn seal(&mut self, durable: bool) -> penstock_backends::Result<Stat> {
        self.inner.seal(durable).await
    }

    async fn sync(&mut self) -> penstock_backends::Result<()> {
        self.inner.sync().await
    }

    async fn publish(self: Box<Self>, path: &ObjectPath, durable: bool) -> penstock_backends::Result<()> {
        self.inner.publish(path, durable).await
    }

    async fn publish_part(
        self: Box<Self>,
        upload_id: &UploadId,
        part: u32,
        durable: bool,
    ) -> penstock_backends::Result<()> {
        self.inner.publish_part(upload_id, part, durable).await
    }

    async fn publish_announced(
        self: Box<Self>,
        path: &ObjectPath,
        durable: bool,
        a: Announce,
    ) -> penstock_backends::Result<Announced> {
        // The backend's own: the POSIX one does it in one blocking-pool trip.
        self.inner.publish_announced(path, durable, a).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use penstock_backends::EntryKind;
    use penstock_metadata::{ObjectAttrs, PartSummary};

    const KEY: &str = "pO3upElrwuEXSoFwCfnZPdSsmt/xWeFa0N9KgDijwVs=";
    const KEY_MD5: &str = "DWygnHRtgiJ77HCm+1rvHw==";
    const OTHER: &str = "6b+WOZ1T3cqZMxgThRcXAQBrS5mXKdDUphvpxptl9/4=";
    const OTHER_MD5: &str = "arxBvwY2V4SiOne6yppVPQ==";

    fn key(k: &str, md5: &str) -> CustomerKey {
        CustomerKey::parse(Some("AES256"), Some(k), Some(md5), &OBJECT_KEY)
            .unwrap()
            .unwrap()
    }

    fn code(r: S3Result<Option<CustomerKey>>) -> String {
        r.unwrap_err().code().as_str().to_owned()
    }

    #[test]
    fn fields_are_judged_as_s3_judges_them() {
        let p = |a, k, m| CustomerKey::parse(a, k, m, &OBJECT_KEY);
        assert!(p(None, None, None).unwrap().is_none());
        assert_eq!(
            p(Some("AES256"), Some(KEY), Some(KEY_MD5)).unwrap().unwrap().md5(),
            KEY_MD5
        );
        assert_eq!(code(p(None, Some(KEY), Some(KEY_MD5))), "InvalidArgument");
        assert_eq!(
            code(p(Some("AES128"), Some(KEY), Some(KEY_MD5))),
            "InvalidEncryptionAlgorithmError"
        );
        assert_eq!(code(p(Some("AES256"), None, Some(KEY_MD5))), "InvalidArgument");
        assert_eq!(code(p(Some("AES256"), Some(KEY), None)), "InvalidArgument");
        assert_eq!(code(p(Some("AES256"), Some(KEY), Some(OTHER_MD5))), "InvalidArgument");
        // 31 bytes: not an AES-256 key.
        let short = base64::engine::general_purpose::STANDARD.encode([7u8; 31]);
        assert_eq!(code(p(Some("AES256"), Some(&short), Some(KEY_MD5))), "InvalidArgument");
        assert_eq!(
            code(p(Some("AES256"), Some("not base64!"), Some(KEY_MD5))),
            "InvalidArgument"
        );
        let e = p(Some("AES256"), Some(&short), Some(KEY_MD5)).unwrap_err();
        assert!(!format!("{e:?}").contains(&short), "the key never appears in an error");
    }

    #[test]
    fn only_the_key_a_record_was_made_with_verifies() {
        let k = key(KEY, KEY_MD5);
        let rec = k.keyed();
        assert_eq!(rec.key_md5, KEY_MD5);
        k.verify(&rec).unwrap();
        let e = key(OTHER, OTHER_MD5).verify(&rec).unwrap_err();
        assert_eq!(e.code().as_str(), "AccessDenied");
        assert_ne!(k.keyed().salt, rec.salt, "every object its own salt");
        assert!(!format!("{k:?}").contains(KEY));
    }

    fn record(k: &CustomerKey, parts: &[(u64, Option<String>)]) -> ObjectRecord {
        ObjectRecord {
            etag: String::new(),
            fingerprint: penstock_metadata::Fingerprint {
                inode: 1,
                size: parts.iter().map(|p| p.0).sum(),
                mtime_ns: 0,
            },
            attrs: ObjectAttrs {
                customer_key: Some(k.keyed()),
                ..Default::default()
            },
            checksums: Default::default(),
            tags: Vec::new(),
            parts: parts
                .iter()
                .map(|(size, salt)| PartSummary {
                    size: *size,
                    checksums: Default::default(),
                    salt: salt.clone(),
                })
                .collect(),
            upload_id: None,
            replaces: None,
            version_id: None,
            change: None,
        }
    }

    /// A file in memory.
    struct Memory(Stat, Vec<u8>);

    #[async_trait]
    impl ReadHandle for Memory {
        fn stat(&self) -> &Stat {
            &self.0
        }
        async fn read_at(&self, offset: u64, len: usize) -> penstock_backends::Result<Bytes> {
            let end = (offset as usize + len).min(self.1.len());
            Ok(Bytes::copy_from_slice(&self.1[(offset as usize).min(end)..end]))
        }
    }

    fn memory(bytes: Vec<u8>) -> Arc<dyn ReadHandle> {
        let stat = Stat {
            kind: EntryKind::File,
            size: bytes.len() as u64,
            inode: 1,
            mtime_ns: 0,
        };
        Arc::new(Memory(stat, bytes))
    }

    /// Encrypts `plain` as the write path does: each part under its salt's key, in chunks of
    /// `chunk` bytes.
    fn encrypt(k: &CustomerKey, rec: &ObjectRecord, plain: &[u8], chunk: usize) -> Vec<u8> {
        let salts: Vec<(u64, String)> = if rec.parts.is_empty() {
            vec![(
                plain.len() as u64,
                rec.attrs.customer_key.as_ref().unwrap().salt.clone(),
            )]
        } else {
            rec.parts.iter().map(|p| (p.size, p.salt.clone().unwrap())).collect()
        };
        let mut out = Vec::new();
        let mut at = 0usize;
        for (size, salt) in salts {
            let key = k.data_key(&salt).unwrap();
            let mut c = Aes256Ctr::new(&key.into(), &[0u8; 16].into());
            for piece in plain[at..at + size as usize].chunks(chunk.max(1)) {
                let mut b = piece.to_vec();
                c.apply_keystream(&mut b);
                out.extend(b);
            }
            at += size as usize;
        }
        out
    }

    #[tokio::test]
    async fn any_range_decrypts_across_parts() {
        let k = key(KEY, KEY_MD5);
        let plain: Vec<u8> = (0..10_000u32).map(|i| (i * 7 % 251) as u8).collect();
        for parts in [
            vec![],
            vec![
                (3_001, Some(part_salt())),
                (4_000, Some(part_salt())),
                (2_999, Some(part_salt())),
            ],
        ] {
            let rec = if parts.is_empty() {
                record(&k, &[])
            } else {
                record(&k, &parts)
            };
            // Written in odd chunks: the stream's counter carries across writes.
            let stored = encrypt(&k, &rec, &plain, 977);
            assert_ne!(stored[..64], plain[..64]);
            assert_eq!(stored.len(), plain.len(), "as long as the object");
            let h = open(&rec, Some(&k), Some(memory(stored))).unwrap().unwrap();
            for (off, len) in [
                (0, 10_000),
                (1, 15),
                (17, 3_500),
                (2_990, 20),
                (3_001, 4_000),
                (7_000, 3_000),
                (9_999, 1),
            ] {
                let got = h.read_at(off, len).await.unwrap();
                assert_eq!(got[..], plain[off as usize..off as usize + len], "{off}+{len}");
            }
        }
    }

    #[test]
    fn reads_need_the_objects_own_key() {
        let k = key(KEY, KEY_MD5);
        let rec = record(&k, &[]);
        let plain_rec = ObjectRecord {
            attrs: ObjectAttrs::default(),
            ..rec.clone()
        };
        check_read(&rec, Some(&k)).unwrap();
        check_read(&plain_rec, None).unwrap();
        let c = |r: S3Result<()>| r.unwrap_err().code().as_str().to_owned();
        assert_eq!(c(check_read(&rec, None)), "InvalidRequest");
        assert_eq!(c(check_read(&plain_rec, Some(&k))), "InvalidRequest");
        assert_eq!(c(check_read(&rec, Some(&key(OTHER, OTHER_MD5)))), "AccessDenied");
        let up = k.keyed();
        check_part(Some(&up), Some(&k)).unwrap();
        assert_eq!(c(check_part(Some(&up), None)), "InvalidRequest");
        assert_eq!(c(check_part(None, Some(&k))), "InvalidRequest");
        assert_eq!(c(check_part(Some(&up), Some(&key(OTHER, OTHER_MD5)))), "InvalidRequest");
    }

    #[test]
    fn etags_differ_by_salt_and_data() {
        let (a, b) = (part_salt(), part_salt());
        let (a, b) = (Some(a.as_str()), Some(b.as_str()));
        assert_ne!(etag(&[1; 16], a), etag(&[1; 16], b));
        assert_ne!(etag(&[1; 16], a), etag(&[2; 16], a));
        assert_ne!(etag(&[1; 16], a), etag(&[1; 16], None));
        assert_eq!(etag(&[1; 16], a).len(), 32);
        assert_eq!(etag(&[1; 16], None), "01".repeat(16), "no salt: the MD5 itself");
    }
}
