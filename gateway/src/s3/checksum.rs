//! Body integrity: Content-MD5 and the `x-amz-checksum-*` family, from headers or aws-chunked
//! trailers, computed in one pass while the body streams to its staging file.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine as _;
use bytes::Bytes;
use http::HeaderMap;
use s3s::crypto::{Checksum as _, Crc32, Crc32c, Crc64Nvme, Md5, Sha1, Sha256};
use s3s::{s3_error, S3Result};

use penstock_md5::Md5Stream;

use penstock_metadata::Checksums;

/// Builds an S3 output struct with its five `checksum_*` fields taken from a stored
/// [`Checksums`] and the other fields as written: the output types name those fields alike but
/// share no trait. `with_checksums!(&c, Type { e_tag: .., }, ..Default::default())`.
macro_rules! with_checksums {
    ($c:expr, $ty:ident { $($field:ident: $value:expr),* $(,)? } $(, ..$rest:expr)?) => {{
        let c: &penstock_metadata::Checksums = $c;
        $ty {
            $($field: $value,)*
            checksum_crc32: c.crc32.clone(),
            checksum_crc32c: c.crc32c.clone(),
            checksum_crc64nvme: c.crc64nvme.clone(),
            checksum_sha1: c.sha1.clone(),
            checksum_sha256: c.sha256.clone(),
            $(..$rest)?
        }
    }};
}
pub(crate) use with_checksums;

pub(crate) use penstock_metadata::ChecksumAlgorithm as Algo;
pub(crate) use penstock_metadata::ChecksumType;

/// The checksum of `data` under algorithm `a`, in raw bytes.
pub(crate) fn digest(a: Algo, data: &[u8]) -> Vec<u8> {
    let mut s = State::new(a);
    s.update(data);
    s.finish()
}

/// The algorithm as s3s spells it in outputs.
pub(crate) fn s3_algo(a: Algo) -> s3s::dto::ChecksumAlgorithm {
    s3s::dto::ChecksumAlgorithm::from(a.as_str().to_owned())
}

/// An algorithm named in a request (any case, as SDKs differ), or `InvalidRequest`.
pub(crate) fn parse_algo(name: &str) -> S3Result<Algo> {
    Algo::parse_any_case(name).ok_or_else(|| s3_error!(InvalidRequest, "Unsupported checksum algorithm {name}"))
}

/// The algorithm an input names, if it names one.
pub(crate) fn input_algo(a: Option<&s3s::dto::ChecksumAlgorithm>) -> S3Result<Option<Algo>> {
    a.map(|a| parse_algo(a.as_str())).transpose()
}

/// The checksum type as s3s spells it in outputs.
pub(crate) fn s3_type(t: ChecksumType) -> s3s::dto::ChecksumType {
    s3s::dto::ChecksumType::from(t.as_str().to_owned())
}

enum State {
    Crc32(Crc32),
    Crc32c(Crc32c),
    Crc64Nvme(Crc64Nvme),
    Sha1(Sha1),
    Sha256(Sha256),
}

impl State {
    fn new(a: Algo) -> Self {
        match a {
            Algo::Crc32 => State::Crc32(Crc32::new()),
            Algo::Crc32c => State::Crc32c(Crc32c::new()),
            Algo::Crc64Nvme => State::Crc64Nvme(Crc64Nvme::new()),
            Algo::Sha1 => State::Sha1(Sha1::new()),
            Algo::Sha256 => State::Sha256(Sha256::new()),
        }
    }

    fn update(&mut self, d: &[u8]) {
        match self {
            State::Crc32(h) => h.update(d),
            State::Crc32c(h) => h.update(d),
            State::Crc64Nvme(h) => h.update(d),
            State::Sha1(h) => h.update(d),
            State::Sha256(h) => h.update(d),
        }
    }

    fn finish(self) -> Vec<u8> {
        match self {
            State::Crc32(h) => h.finalize().to_vec(),
            State::Crc32c(h) => h.finalize().to_vec(),
            State::Crc64Nvme(h) => h.finalize().to_vec(),
            State::Sha1(h) => h.finalize().as_ref().to_vec(),
            State::Sha256(h) => h.finalize().as_ref().to_vec(),
        }
    }
}

/// Computes MD5 (for the ETag) and the chosen checksums in one pass.
pub(crate) struct BodyHasher {
    md5: Md5Stream,
    states: Vec<(Algo, State)>,
}

/// The result of hashing a body.
pub(crate) struct Digests {
    pub md5: [u8; 16],
    pub checksums: Checksums,
}

impl BodyHasher {
    pub(crate) fn new(algos: &[Algo]) -> Self {
        Self {
            md5: Md5Stream::default(),
            states: algos.iter().map(|&a| (a, State::new(a))).collect(),
        }
    }

    pub(crate) async fn update(&mut self, data: &Bytes) {
        for (_, s) in &mut self.states {
            s.update(data);
        }
        self.md5.update(data.clone()).await;
    }

    pub(crate) async fn finish(self) -> Digests {
        let mut checksums = Checksums::default();
        for (a, s) in self.states {
            checksums.set(a, Some(B64.encode(s.finish())));
        }
        if !checksums.is_empty() {
            checksums.checksum_type = Some(ChecksumType::FullObject);
        }
        Digests {
            md5: self.md5.finish().await,
            checksums,
        }
    }
}

/// What the client asserts about a body: `Content-MD5`, checksum headers, a promised trailer.
pub(crate) struct Claims {
    content_md5: Option<String>,
    checksums: Checksums,
    trailer: Option<Algo>,
    requested: Option<Algo>,
}

impl Claims {
    /// Reads the claims from request headers. `requested` is an algorithm asked for without a
    /// value (`x-amz-sdk-checksum-algorithm`, or the upload's algorithm for a part).
    pub(crate) fn from_headers(headers: &HeaderMap, requested: Option<Algo>) -> S3Result<Self> {
        refuse_unknown_checksums(headers)?;
        let mut checksums = Checksums::default();
        for a in Algo::ALL {
            if let Some(v) = headers.get(a.header()) {
                let v = v
                    .to_str()
                    .map_err(|_| s3_error!(InvalidRequest, "Invalid {} header", a.header()))?;
                checksums.set(a, Some(v.to_owned()));
            }
        }
        let trailer = match headers.get("x-amz-trailer").map(|v| v.to_str().unwrap_or("")) {
            Some(t) if !t.is_empty() => {
                Some(Algo::from_header(t).ok_or_else(|| s3_error!(InvalidRequest, "Unsupported trailer {t}"))?)
            }
            _ => None,
        };
        let requested = match requested {
            Some(a) => Some(a),
            None => headers
                .get("x-amz-sdk-checksum-algorithm")
                .and_then(|v| v.to_str().ok())
                .map(parse_algo)
                .transpose()?,
        };
        Ok(Self {
            content_md5: headers
                .get("content-md5")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
            checksums,
            trailer,
            requested,
        })
    }

    /// Adds the digests a browser form states in its fields (`Content-MD5`, `x-amz-checksum-*`),
    /// which s3s puts in the upload's input rather than its headers, where the headers state
    /// none. For other requests s3s read those fields from the same headers: nothing changes.
    pub(crate) fn with_fields(mut self, content_md5: Option<&str>, fields: &Checksums) -> Self {
        if self.content_md5.is_none() {
            self.content_md5 = content_md5.map(str::to_owned);
        }
        for a in Algo::ALL {
            if self.checksums.get(a).is_none() {
                self.checksums.set(a, fields.get(a).cloned());
            }
        }
        self
    }

    /// Whether the request states any digest of its body (`Content-MD5` or a checksum value).
    /// The claims that can be about a document's body when its `x-amz-checksum-*` headers state
    /// the checksum of an object instead (CompleteMultipartUpload): `Content-MD5` alone.
    pub(crate) fn content_md5_only(self) -> Self {
        Self {
            content_md5: self.content_md5,
            checksums: Checksums::default(),
            trailer: None,
            requested: None,
        }
    }

    pub(crate) fn claims_any(&self) -> bool {
        self.content_md5.is_some() || !self.checksums.is_empty()
    }

    /// Algorithms to compute: everything claimed or requested; CRC64NVME when nothing is, as S3
    /// does by default for new objects.
    pub(crate) fn algos(&self) -> Vec<Algo> {
        let mut v: Vec<Algo> = Algo::ALL
            .into_iter()
            .filter(|&a| self.checksums.get(a).is_some())
            .collect();
        for a in [self.trailer, self.requested].into_iter().flatten() {
            if !v.contains(&a) {
                v.push(a);
            }
        }
        if v.is_empty() {
            v.push(Algo::Crc64Nvme);
        }
        v
    }

    /// Checks the computed digests against every claim, including trailers read after the body.
    pub(crate) fn verify(&self, d: &Digests, trailers: Option<&HeaderMap>) -> S3Result<()> {
        if let Some(m) = &self.content_md5 {
            let raw = B64
                .decode(m.trim())
                .ok()
                .filter(|r| r.len() == 16)
                .ok_or_else(|| s3_error!(InvalidDigest, "The Content-MD5 you specified was invalid."))?;
            if raw != d.md5 {
                // S3's document names both digests: what it computed in base64, what the
                // request claimed in hex.
                return Err(super::error::with_detail(
                    s3_error!(
                        BadDigest,
                        "The Content-MD5 you specified did not match what we received."
                    ),
                    &format!(
                        "<CalculatedDigest>{}</CalculatedDigest><ExpectedDigest>{}</ExpectedDigest>",
                        B64.encode(d.md5),
                        hex::encode(&raw)
                    ),
                ));
            }
        }
        for a in Algo::ALL {
            if let Some(claimed) = self.checksums.get(a) {
                compare(a, claimed, &d.checksums)?;
            }
        }
        if let Some(a) = self.trailer {
            let value = trailers
                .and_then(|t| t.get(a.header()))
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    s3_error!(
                        InvalidRequest,
                        "The trailing {} checksum promised by x-amz-trailer is missing",
                        a.as_str()
                    )
                })?;
            compare(a, value, &d.checksums)?;
        }
        Ok(())
    }
}

/// A checksum header of an algorithm S3 has and this gateway does not compute (SHA512, MD5 and
/// the XXHASH family, added to S3's API after the five it keeps) is 400 `InvalidRequest`, as an
/// unknown `x-amz-sdk-checksum-algorithm` is: taking the upload without checking the value
/// would tell the client its bytes were verified when they were not.
fn refuse_unknown_checksums(headers: &HeaderMap) -> S3Result<()> {
    const NOT_VALUES: [&str; 3] = ["mode", "type", "algorithm"];
    for name in headers.keys() {
        let Some(algo) = name.as_str().strip_prefix("x-amz-checksum-") else {
            continue;
        };
        if NOT_VALUES.contains(&algo) || Algo::from_header(name.as_str()).is_some() {
            continue;
        }
        return Err(s3_error!(
            InvalidRequest,
            "Unsupported checksum algorithm {}",
            algo.to_ascii_uppercase()
        ));
    }
    Ok(())
}

fn compare(a: Algo, claimed: &str, computed: &Checksums) -> S3Result<()> {
    let ours = computed.get(a).expect("claimed algorithms are computed");
    let theirs = B64.decode(claimed.trim()).map_err(|_| {
        s3_error!(
            InvalidRequest,
            "Value for x-amz-checksum-{} header is invalid.",
            a.as_str().to_lowercase()
        )
    })?;
    if B64.decode(ours).ok().as_deref() != Some(theirs.as_slice()) {
        return Err(s3_error!(
            BadDigest,
            "The {} you specified did not match the calculated checksum.",
            a.as_str()
        ));
    }
    Ok(())
}

/// The composite checksum of a multipart object: the checksum of the concatenated raw part
/// checksums, suffixed with the part count.
pub(crate) fn composite(a: Algo, parts: &[&str]) -> Option<String> {
    let mut concat = Vec::new();
    for p in parts {
        concat.extend(B64.decode(p).ok()?);
    }
    Some(format!("{}-{}", B64.encode(digest(a, &concat)), parts.len()))
}

/// The CRC of a whole object from the CRCs and sizes of its parts, without rereading the bytes.
pub(crate) fn combine_crcs(a: Algo, parts: &[(&str, u64)]) -> Option<String> {
    let alg = match a {
        Algo::Crc32 => crc_fast::CrcAlgorithm::Crc32IsoHdlc,
        Algo::Crc32c => crc_fast::CrcAlgorithm::Crc32Iscsi,
        Algo::Crc64Nvme => crc_fast::CrcAlgorithm::Crc64Nvme,
        Algo::Sha1 | Algo::Sha256 => return None,
    };
    let width = if a == Algo::Crc64Nvme { 8 } else { 4 };
    let mut acc: Option<u64> = None;
    for (b64, len) in parts {
        let raw = B64.decode(b64).ok().filter(|r| r.len() == width)?;
        let v = raw.iter().fold(0u64, |x, b| (x << 8) | u64::from(*b));
        acc = Some(match acc {
            None => v,
            Some(prev) => crc_fast::checksum_combine(alg, prev, v, *len),
        });
    }
    let v = acc?;
    Some(B64.encode(&v.to_be_bytes()[8 - width..]))
}

/// The S3 multipart ETag: MD5 of the concatenated binary part MD5s, then `-<count>`.
pub(crate) fn multipart_etag(part_md5_hex: &[&str]) -> Option<String> {
    let mut concat = Vec::with_capacity(part_md5_hex.len() * 16);
    for h in part_md5_hex {
        concat.extend(hex::decode(h).ok()?);
    }
    Some(format!(
        "{}-{}",
        hex::encode(Md5::checksum(&concat)),
        part_md5_hex.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_etag_matches_s3() {
        // Two parts: md5("a") and md5("b"); S3 publishes md5(md5a || md5b)-2.
        let a = hex::encode(Md5::checksum(b"a"));
        let b = hex::encode(Md5::checksum(b"b"));
        let mut cat = Md5::checksum(b"a").to_vec();
        cat.extend(Md5::checksum(b"b"));
        assert_eq!(
            multipart_etag(&[&a, &b]).unwrap(),
            format!("{}-2", hex::encode(Md5::checksum(&cat)))
        );
        assert!(multipart_etag(&["zz"]).is_none());
    }

    #[test]
    fn combined_crcs_equal_whole_object_crcs() {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + 3) as u8).collect();
        let (a, b) = data.split_at(60_001);
        for algo in [Algo::Crc32, Algo::Crc32c, Algo::Crc64Nvme] {
            let whole = B64.encode(digest(algo, &data));
            let pa = B64.encode(digest(algo, a));
            let pb = B64.encode(digest(algo, b));
            let combined = combine_crcs(algo, &[(&pa, a.len() as u64), (&pb, b.len() as u64)]).unwrap();
            assert_eq!(combined, whole, "{algo:?}");
        }
        assert!(combine_crcs(Algo::Sha256, &[]).is_none());
    }

    #[tokio::test]
    async fn known_checksum_values() {
        // Reference values for "hello world" published in AWS documentation and test suites.
        let mut h = BodyHasher::new(&[Algo::Crc32, Algo::Crc32c, Algo::Sha256]);
        h.update(&Bytes::from_static(b"hello ")).await;
        h.update(&Bytes::from_static(b"world")).await;
        let d = h.finish().await;
        assert_eq!(hex::encode(d.md5), "5eb63bbbe01eeed093cb22bb8f5acdc3");
        assert_eq!(d.checksums.crc32.as_deref(), Some("DUoRhQ=="));
        assert_eq!(d.checksums.crc32c.as_deref(), Some("yZRlqg=="));
        assert_eq!(
            d.checksums.sha256.as_deref(),
            Some("uU0nuZNNPgilLlLX2n2r+sSE7+N6U4DukIj3rOLvzek=")
        );
    }

    #[tokio::test]
    async fn claims_are_verified() {
        let mut headers = HeaderMap::new();
        headers.insert("x-amz-checksum-crc32", "DUoRhQ==".parse().unwrap());
        let claims = Claims::from_headers(&headers, None).unwrap();
        assert_eq!(claims.algos(), [Algo::Crc32]);
        let mut h = BodyHasher::new(&claims.algos());
        h.update(&Bytes::from_static(b"hello world")).await;
        assert!(claims.verify(&h.finish().await, None).is_ok());
        let mut h = BodyHasher::new(&claims.algos());
        h.update(&Bytes::from_static(b"hello world!")).await;
        assert!(claims.verify(&h.finish().await, None).is_err());

        let mut headers = HeaderMap::new();
        headers.insert("x-amz-trailer", "x-amz-checksum-crc64nvme".parse().unwrap());
        let claims = Claims::from_headers(&headers, None).unwrap();
        let mut h = BodyHasher::new(&claims.algos());
        h.update(&Bytes::from_static(b"x")).await;
        let d = h.finish().await;
        let mut trailers = HeaderMap::new();
        trailers.insert(
            "x-amz-checksum-crc64nvme",
            d.checksums.crc64nvme.clone().unwrap().parse().unwrap(),
        );
        assert!(claims.verify(&d, Some(&trailers)).is_ok());
        assert!(claims.verify(&d, None).is_err());
    }

    #[test]
    fn checksums_of_algorithms_not_computed_are_refused() {
        for name in ["x-amz-checksum-sha512", "x-amz-checksum-md5", "x-amz-checksum-xxhash64"] {
            let mut headers = HeaderMap::new();
            headers.insert(name, "AAAA".parse().unwrap());
            let e = Claims::from_headers(&headers, None).err().expect(name);
            assert_eq!(*e.code(), s3s::S3ErrorCode::InvalidRequest, "{name}");
        }
        let mut headers = HeaderMap::new();
        for name in ["x-amz-checksum-mode", "x-amz-checksum-type", "x-amz-checksum-algorithm"] {
            headers.insert(name, "x".parse().unwrap());
        }
        headers.insert("x-amz-checksum-sha256", "AAAA".parse().unwrap());
        assert!(Claims::from_headers(&headers, None).is_ok());
    }
}
