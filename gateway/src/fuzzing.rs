//! Entry points of the fuzz targets.
//!
//! Each function takes arbitrary bytes, feeds them to one of the parsers that see hostile input
//! (object keys, Range and conditional headers, the XML documents of requests, digest headers,
//! RDMA tokens) and panics only when an invariant breaks. The cargo-fuzz crate in `fuzz/` calls
//! them under libFuzzer (`scripts/fuzz`); the `fuzz_corpus` test replays every committed corpus
//! entry through them on stable Rust, so what the fuzzer once found stays fixed in CI.
//!
//! Not an API: the functions exist for those two callers only.

use std::sync::OnceLock;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use s3s::dto::{CompletedMultipartUpload, CreateBucketConfiguration, Delete, ETagCondition, Range, Tagging, Timestamp};
use s3s::xml;

use penstock_backends::key::{ObjectPath, MAX_PATH_BYTES, MAX_SEGMENT_BYTES};
use penstock_backends::{EntryKind, Stat, HIDDEN_DIR};

use crate::s3::body_digest::{verdict, BodyDigest};
use crate::s3::{
    check_part_number, copy_range, parse_http_date, parse_key, range_ignored, select, validate_tags, Conditions,
};

/// The entry point of a target: takes the fuzzer's bytes, panics when an invariant breaks.
pub type Target = fn(&[u8]);

/// The names of the targets, as `fuzz/` and `fuzz/corpus/` spell them, with their entry points.
pub const TARGETS: [(&str, Target); 6] = [
    ("key", key),
    ("range", range),
    ("conditional", conditional),
    ("xml", xml_body),
    ("digest", digest),
    ("token", token),
];

/// The key mapper: a key maps to a path exactly or is refused; an accepted key's segments are
/// plain names (no `.`/`..`, no `/`, no NUL, none empty, none too long), never the staging
/// directory, and give the key back; the gateway's own limit (1024 bytes) holds.
pub fn key(data: &[u8]) {
    let Ok(k) = std::str::from_utf8(data) else { return };
    if let Ok(p) = ObjectPath::parse(k) {
        assert!(k.len() <= MAX_PATH_BYTES);
        assert_eq!(p.key(), k, "the path gives its key back");
        assert!(!p.segments().is_empty());
        for s in p.segments() {
            assert!(!s.is_empty() && s != "." && s != "..", "segment {s:?} of {k:?}");
            assert!(!s.contains('/') && !s.contains('\0'), "segment {s:?} of {k:?}");
            assert!(s.len() <= MAX_SEGMENT_BYTES);
        }
        assert_ne!(p.segments()[0], HIDDEN_DIR);
        // Joined under a root, every component stays a plain name below it.
        let root = std::path::Path::new("/vfolder");
        let joined = root.join(p.rel());
        assert!(joined.starts_with(root));
        assert!(joined
            .strip_prefix(root)
            .unwrap()
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_))));
    }
    if let Ok(p) = parse_key(k) {
        assert!(k.len() <= 1024, "a key over 1024 bytes was accepted");
        assert_eq!(p.key(), k);
    }
}

/// Splits fuzz input into a number (the first 8 bytes) and the rest.
fn number_and_rest(data: &[u8]) -> Option<(u64, &[u8])> {
    let (n, rest) = data.split_first_chunk::<8>()?;
    Some((u64::from_le_bytes(*n), rest))
}

/// Range and partNumber selection: whatever the header, the selected bytes lie inside the
/// object, a Range S3 ignores is ignored, and `x-amz-copy-source-range` stays inside its source.
pub fn range(data: &[u8]) {
    let Some((n, rest)) = number_and_rest(data) else { return };
    let size = n >> 16;
    let part_number = (n & 0xffff) as i32 - 2;
    let Ok(header) = std::str::from_utf8(rest) else { return };

    // The header as a GET would carry it: parsed, or ignored (the whole object).
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_str(header) {
        headers.insert(http::header::RANGE, v);
        let ignored = range_ignored(&headers);
        assert_eq!(ignored, Range::parse(header).is_err());
    }
    let parsed = Range::parse(header).ok();
    // Parts of the object: up to 4, sizes that add up to `size`.
    let cut = (size / 3, size / 3 + size / 5);
    let parts = [cut.0, cut.1 - cut.0, size - cut.1];
    for part_sizes in [&[][..], &parts[..]] {
        for (pn, r) in [(None, parsed), (Some(part_number), None), (Some(part_number), parsed)] {
            if let Ok(s) = select(size, part_sizes, pn, r) {
                assert!(s.start.checked_add(s.len).is_some_and(|end| end <= size));
                match s.content_range {
                    Some(cr) => {
                        assert!(s.len > 0 || r.is_none(), "a partial answer has at least one byte");
                        if r.is_some() {
                            assert_eq!(cr, format!("bytes {}-{}/{size}", s.start, s.start + s.len - 1));
                        }
                    }
                    // A range answered with the whole object: only a suffix of an empty one.
                    None if r.is_some() => assert_eq!((size, s.start, s.len), (0, 0, 0)),
                    None => assert_eq!((s.start, s.len), (0, size)),
                }
            }
        }
    }
    if let Ok((first, len)) = copy_range(header, size) {
        assert!(len > 0 && first + len <= size);
    }
}

/// Conditional headers: If-Match / If-None-Match values and HTTP dates parse or are refused,
/// and the evaluation follows RFC 9110 (a matching If-Match ignores If-Unmodified-Since, a
/// failed If-None-Match answers 304 for reads and 412 for copy sources).
pub fn conditional(data: &[u8]) {
    let Some((n, rest)) = number_and_rest(data) else { return };
    let mut fields = rest.splitn(4, |&b| b == b'\n');
    let (Some(im), Some(inm), ims, ius) = (fields.next(), fields.next(), fields.next(), fields.next()) else {
        return;
    };
    let im = ETagCondition::parse_http_header(im).ok();
    let inm = ETagCondition::parse_http_header(inm).ok();
    let date = |f: Option<&[u8]>| -> Option<Timestamp> {
        f.and_then(|b| std::str::from_utf8(b).ok()).and_then(parse_http_date)
    };
    let (ims, ius) = (date(ims), date(ius));
    let st = Stat {
        kind: EntryKind::File,
        size: n & 0xffff,
        inode: 1,
        mtime_ns: i128::from((n >> 16) as i32) * 1_000_000_000,
    };
    let etag = "0123456789abcdef0123456789abcdef";
    for copy in [false, true] {
        let c = Conditions {
            if_match: im.as_ref(),
            if_none_match: inm.as_ref(),
            if_modified_since: ims.as_ref(),
            if_unmodified_since: ius.as_ref(),
        };
        let verdict = c.check(etag, &st, copy);
        if let Err(e) = &verdict {
            let code = e.code().as_str();
            if copy {
                assert_eq!(code, "PreconditionFailed");
            } else {
                assert!(code == "PreconditionFailed" || code == "NotModified", "{code}");
            }
        }
        if im.as_ref().is_some_and(ETagCondition::is_any) && inm.is_none() && ims.is_none() {
            assert!(verdict.is_ok(), "If-Match: * on an existing object holds");
        }
    }
}

/// The XML documents of requests, as s3s parses them (the first byte picks which) and the
/// gateway's checks on what they say; each either parses and is checked or is refused.
pub fn xml_body(data: &[u8]) {
    let Some((&which, doc)) = data.split_first() else {
        return;
    };
    fn parse<'a, T: xml::Deserialize<'a>>(doc: &'a [u8]) -> Option<T> {
        let mut d = xml::Deserializer::new(doc);
        let t = T::deserialize(&mut d).ok()?;
        d.expect_eof().ok()?;
        Some(t)
    }
    match which % 4 {
        0 => {
            if let Some(t) = parse::<Tagging>(doc) {
                let tags: Vec<(String, String)> = t
                    .tag_set
                    .into_iter()
                    .map(|t| (t.key.unwrap_or_default(), t.value.unwrap_or_default()))
                    .collect();
                if validate_tags(&tags).is_ok() {
                    assert!(tags.len() <= 10);
                }
            }
        }
        1 => {
            if let Some(d) = parse::<Delete>(doc) {
                for o in &d.objects {
                    let _ = parse_key(&o.key);
                }
            }
        }
        2 => {
            if let Some(c) = parse::<CompletedMultipartUpload>(doc) {
                for p in c.parts.iter().flatten() {
                    let _ = check_part_number(p.part_number.unwrap_or(0));
                }
            }
        }
        _ => {
            let _ = parse::<CreateBucketConfiguration>(doc);
        }
    }
}

/// A runtime for the digest check, which hashes on the gateway's MD5 pool.
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a current-thread runtime")
    })
}

/// Digest claims on document bodies: any `Content-MD5` / `x-amz-checksum-*` value is verified
/// or refused without panicking, and the true Content-MD5 of the body is always accepted.
pub fn digest(data: &[u8]) {
    let Some((&which, rest)) = data.split_first() else {
        return;
    };
    let (value, body) = match rest.iter().position(|&b| b == b'\n') {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, &[][..]),
    };
    let names = [
        "content-md5",
        "x-amz-checksum-crc32",
        "x-amz-checksum-crc32c",
        "x-amz-checksum-crc64nvme",
        "x-amz-checksum-sha1",
        "x-amz-checksum-sha256",
        "x-amz-sdk-checksum-algorithm",
        "x-amz-trailer",
    ];
    let body = Bytes::copy_from_slice(body);
    let mut headers = HeaderMap::new();
    if let Ok(v) = HeaderValue::from_bytes(value) {
        headers.insert(names[usize::from(which) % names.len()], v);
    }
    let _ = runtime().block_on(verdict(&headers, &body, false));

    use base64::Engine;
    use s3s::crypto::Checksum;
    let md5 = base64::engine::general_purpose::STANDARD.encode(s3s::crypto::Md5::checksum(&body));
    let mut right = HeaderMap::new();
    right.insert("content-md5", HeaderValue::from_str(&md5).unwrap());
    let v = runtime().block_on(verdict(&right, &body, false));
    assert!(
        matches!(v, BodyDigest::Verified),
        "the true Content-MD5 was refused: {v:?}"
    );
}

/// RDMA tokens: no header value panics the parser, and a DC token that parses formats back to
/// an equal token.
pub fn token(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else { return };
    if let Ok(t) = penstock_rdma::Token::parse(s) {
        let w = t.window();
        assert!(w.len > 0 && w.addr.checked_add(w.len).is_some(), "{w:?}");
    }
    if let Ok(t) = penstock_rdma::DcToken::parse(s) {
        let again = penstock_rdma::DcToken::parse(&t.to_string()).expect("formatted tokens parse");
        assert_eq!(again, t);
    }
}
