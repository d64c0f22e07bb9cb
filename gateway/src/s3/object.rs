//! Helpers shared by the object operations: key parsing, the effective record of a file, HTTP
//! conditions, tags and timestamps.

use std::collections::BTreeMap;

use s3s::dto::{ETag, ETagCondition, Timestamp, TimestampFormat};
use s3s::{s3_error, S3Result};

use penstock_backends::{ObjectPath, Stat};
use penstock_metadata::{Checksums, Fingerprint, ObjectAttrs, ObjectRecord};

use super::error::{key_err, with_detail};

/// Longest object key S3 accepts, in bytes (UTF-8).
pub(crate) const MAX_KEY_BYTES: usize = 1024;

/// The elements of S3's `KeyTooLongError` document: the key's length and the limit.
pub(crate) fn key_too_long_detail(len: usize) -> String {
    format!("<Size>{len}</Size><MaxSizeAllowed>{MAX_KEY_BYTES}</MaxSizeAllowed>")
}

/// Validates an object key: at most 1024 bytes, as on S3, wherever it comes from (a request
/// path, a DeleteObjects document, a copy source), and a path the backend can store.
pub(crate) fn parse_key(key: &str) -> S3Result<ObjectPath> {
    if key.len() > MAX_KEY_BYTES {
        return Err(with_detail(
            s3_error!(KeyTooLongError, "Your key is too long"),
            &key_too_long_detail(key.len()),
        ));
    }
    ObjectPath::parse(key).map_err(key_err)
}

/// The fingerprint of a file as stored in records.
pub(crate) fn fingerprint(st: &Stat) -> Fingerprint {
    Fingerprint {
        inode: st.inode,
        size: st.size,
        mtime_ns: st.mtime_ns,
    }
}

/// The ETag of a file the gateway did not write (or that changed since). It contains a `-` so
/// that SDKs never mistake it for an MD5 of the content.
pub(crate) fn synthetic_etag(st: &Stat) -> String {
    format!("{:x}{:x}-{:x}", st.inode, st.mtime_ns, st.size)
}

/// The record that describes the file as it is now: the stored one (or, while a publish at the
/// key is pending, the one it replaces) whose fingerprint matches, else a synthesized one
/// (content type guessed from the extension).
pub(crate) fn effective_record(key: &str, st: &Stat, stored: Option<ObjectRecord>) -> ObjectRecord {
    match stored.and_then(|r| r.describing(&fingerprint(st))) {
        Some(r) => r,
        None => ObjectRecord {
            etag: synthetic_etag(st),
            fingerprint: fingerprint(st),
            attrs: ObjectAttrs {
                content_type: mime_guess::from_path(key).first_raw().map(str::to_owned),
                ..Default::default()
            },
            checksums: Checksums::default(),
            tags: Vec::new(),
            parts: Vec::new(),
            upload_id: None,
            replaces: None,
            version_id: None,
            change: None,
        },
    }
}

/// The record of a newly written single-part object: MD5 ETag and checksums from its digests,
/// fingerprint from its sealed file.
pub(crate) fn new_record(
    d: super::checksum::Digests,
    st: &Stat,
    attrs: ObjectAttrs,
    tags: Vec<(String, String)>,
) -> ObjectRecord {
    ObjectRecord {
        etag: data_etag(&d.md5, &attrs),
        fingerprint: fingerprint(st),
        attrs,
        checksums: d.checksums,
        tags,
        parts: Vec::new(),
        upload_id: None,
        replaces: None,
        version_id: None,
        change: None,
    }
}

/// The ETag value of bytes with MD5 `md5` written with `attrs`: the MD5 itself, or for an
/// object encrypted with a customer's key an ETag that does not reveal it (`sse_c::etag`).
pub(crate) fn data_etag(md5: &[u8; 16], attrs: &ObjectAttrs) -> String {
    super::sse_c::etag(md5, attrs.customer_key.as_ref().map(|k| k.salt.as_str()))
}

/// A strong ETag value as s3s serializes it.
pub(crate) fn etag(v: &str) -> ETag {
    ETag::Strong(v.to_owned())
}

/// Last-Modified at the one-second precision HTTP dates carry.
pub(crate) fn last_modified(st: &Stat) -> Timestamp {
    let secs = st.mtime_ns.div_euclid(1_000_000_000) as i64;
    Timestamp::from(time::OffsetDateTime::from_unix_timestamp(secs).unwrap_or(time::OffsetDateTime::UNIX_EPOCH))
}

/// Milliseconds since the epoch to a timestamp.
pub(crate) fn ts_ms(ms: i64) -> Timestamp {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    Timestamp::from(t)
}

pub(crate) fn now_ms() -> i64 {
    (time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000) as i64
}

/// Seconds since the epoch of a timestamp.
pub(crate) fn unix(ts: &Timestamp) -> i64 {
    time::OffsetDateTime::from(ts.clone()).unix_timestamp()
}

/// `Expires` as stored (an HTTP date).
pub(crate) fn format_http_date(ts: &Timestamp) -> Option<String> {
    let mut buf = Vec::new();
    ts.format(TimestampFormat::HttpDate, &mut buf).ok()?;
    String::from_utf8(buf).ok()
}

pub(crate) fn parse_http_date(s: &str) -> Option<Timestamp> {
    Timestamp::parse(TimestampFormat::HttpDate, s).ok()
}

/// Content headers and user metadata given with an upload.
pub(crate) struct AttrInput {
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub content_disposition: Option<String>,
    pub content_language: Option<String>,
    pub cache_control: Option<String>,
    /// `Expires` as stored: an HTTP date as s3s read it, or the header's own text where it is
    /// no date (`raw_headers.rs`).
    pub expires: Option<String>,
    pub metadata: Option<s3s::dto::Metadata>,
    pub storage_class: Option<String>,
    pub website_redirect_location: Option<String>,
}

/// Most bytes of user metadata an object may carry: S3's 2 KB, the UTF-8 bytes of every key
/// (after `x-amz-meta-`) and value together.
const MAX_USER_METADATA: usize = 2048;

impl AttrInput {
    /// These attributes with the values a write sent as raw bytes in place of s3s's (see
    /// `raw_headers.rs`).
    pub(crate) fn with_raw(mut self, raw: Option<&super::raw_headers::RawAttrs>) -> Self {
        if let Some(r) = raw {
            let pick = |given: &Option<String>, s3s: &mut Option<String>| {
                if given.is_some() {
                    s3s.clone_from(given);
                }
            };
            pick(&r.content_type, &mut self.content_type);
            pick(&r.content_encoding, &mut self.content_encoding);
            pick(&r.content_disposition, &mut self.content_disposition);
            pick(&r.content_language, &mut self.content_language);
            pick(&r.cache_control, &mut self.cache_control);
            pick(&r.expires, &mut self.expires);
        }
        self
    }

    /// The attributes to store; 400 `MetadataTooLarge` for more user metadata than S3 takes.
    pub(crate) fn into_attrs(self) -> S3Result<ObjectAttrs> {
        let size: usize = self.metadata.iter().flatten().map(|(k, v)| k.len() + v.len()).sum();
        if size > MAX_USER_METADATA {
            return Err(s3_error!(
                MetadataTooLarge,
                "Your metadata headers exceed the maximum allowed metadata size."
            ));
        }
        Ok(ObjectAttrs {
            content_type: self.content_type,
            content_encoding: self.content_encoding.as_deref().and_then(stored_encoding),
            content_disposition: self.content_disposition,
            content_language: self.content_language,
            cache_control: self.cache_control,
            expires: self.expires,
            user_metadata: self
                .metadata
                .map(|m| m.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect())
                .unwrap_or_default(),
            acl: Vec::new(),
            acl_owner_omitted: false,
            owner: None,
            storage_class: stored_class(self.storage_class),
            restored_until_ms: None,
            retention: None,
            legal_hold: None,
            website_redirect_location: redirect_location(self.website_redirect_location)?,
            // Set by the write from its key fields (`sse_c.rs`), never taken from a source.
            customer_key: None,
        })
    }
}

/// Longest website redirect location S3 stores, in bytes.
const MAX_REDIRECT_LOCATION: usize = 2048;

/// The website redirect location to store, checked as S3 checks it: a path in the bucket's
/// site (`/...`) or an absolute `http(s)` URL, at most 2 KB; else 400 `InvalidRedirectLocation`.
pub(crate) fn redirect_location(given: Option<String>) -> S3Result<Option<String>> {
    let Some(v) = given else { return Ok(None) };
    let invalid = |msg: &str| {
        Err(super::error::custom(
            "InvalidRedirectLocation",
            http::StatusCode::BAD_REQUEST,
            msg.to_owned(),
        ))
    };
    if v.len() > MAX_REDIRECT_LOCATION {
        return invalid("The length of website redirect location cannot exceed 2,048 characters.");
    }
    if !(v.starts_with('/') || v.starts_with("http://") || v.starts_with("https://")) {
        return invalid("The website redirect location must have a prefix of 'http://' or 'https://' or '/'.");
    }
    Ok(Some(v))
}

/// The storage class to record: none for `STANDARD`, what every object is without one.
pub(crate) fn stored_class(class: Option<String>) -> Option<String> {
    class.filter(|c| c != "STANDARD")
}

/// The storage class of an object (or an upload's object) as listings name it: the recorded
/// one, else `STANDARD`. Each answer wraps it in its own class type.
pub(crate) fn class_name(attrs: &ObjectAttrs) -> String {
    attrs.storage_class.clone().unwrap_or_else(|| "STANDARD".to_owned())
}

/// The Content-Encoding to store: the client's codings without `aws-chunked`, which frames the
/// request body on the wire and says nothing about the object (S3 drops it the same way).
fn stored_encoding(v: &str) -> Option<String> {
    let kept: Vec<&str> = v
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty() && !c.eq_ignore_ascii_case("aws-chunked"))
        .collect();
    (!kept.is_empty()).then(|| kept.join(", "))
}

/// Builds an `AttrInput` from any operation input that carries the usual content fields.
macro_rules! attr_input {
    ($i:expr) => {
        $crate::s3::object::AttrInput {
            content_type: $i.content_type.take(),
            content_encoding: $i.content_encoding.take(),
            content_disposition: $i.content_disposition.take(),
            content_language: $i.content_language.take(),
            cache_control: $i.cache_control.take(),
            expires: $i
                .expires
                .take()
                .as_ref()
                .and_then($crate::s3::object::format_http_date),
            metadata: $i.metadata.take(),
            storage_class: $i.storage_class.take().map(|c| c.as_str().to_owned()),
            website_redirect_location: $i.website_redirect_location.take(),
        }
    };
}
pub(crate) use attr_input;

/// User metadata in the shape s3s outputs.
pub(crate) fn metadata_out(m: &BTreeMap<String, String>) -> Option<s3s::dto::Metadata> {
    (!m.is_empty()).then(|| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
}

/// Parses the `x-amz-tagging` header (URL query syntax) and validates the set. A header that is
/// no such encoding of distinct tags (not UTF-8, a name twice, a character no tag may hold: the
/// commas of `a=1,b=2`) is S3's 400 `InvalidArgument` naming the header; the set's other rules
/// answer as for PutObjectTagging.
pub(crate) fn parse_tagging_header(h: Option<&str>) -> S3Result<Vec<(String, String)>> {
    let Some(h) = h.filter(|h| !h.is_empty()) else {
        return Ok(Vec::new());
    };
    let malformed = || {
        super::error::invalid_argument(
            "The header 'x-amz-tagging' shall be encoded as UTF-8 then URLEncoded URL query parameters without tag name duplicates.",
            "x-amz-tagging",
            h,
        )
    };
    let mut tags: Vec<(String, String)> = Vec::new();
    for pair in h.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let dec = |s: &str| {
            percent_encoding::percent_decode_str(&s.replace('+', " "))
                .decode_utf8()
                .map(|c| c.into_owned())
                .map_err(|_| malformed())
        };
        let (k, v) = (dec(k)?, dec(v)?);
        if !k.chars().chain(v.chars()).all(tag_char) || tags.iter().any(|(seen, _)| *seen == k) {
            return Err(malformed());
        }
        tags.push((k, v));
    }
    validate_object_tags(&tags)?;
    Ok(tags)
}

/// Whether `c` may appear in a tag's key or value. S3 allows letters, numbers, separators
/// (spaces) and `_ . : / = + - @`, the pattern `[\p{L}\p{Z}\p{N}_.:/=+\-@]` of its tag rules,
/// and refuses the rest (a comma, `&`, `#`, control characters).
fn tag_char(c: char) -> bool {
    c.is_alphabetic()
        || c.is_numeric()
        || matches!(c, '_' | '.' | ':' | '/' | '=' | '+' | '-' | '@')
        || matches!(
            c,
            ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}'
        )
}

/// S3's rules for a set of up to 10 tags (an object's, a lifecycle filter's): unique keys of
/// 1..=128 chars, values up to 256 chars.
pub(crate) fn validate_tags(tags: &[(String, String)]) -> S3Result<()> {
    check_tags(tags, 10, "Object tags cannot be greater than 10")
}

/// The tags a request sets on an object: [`validate_tags`], and no key that starts with `aws:`
/// (in any case), which S3 reserves for the tags AWS itself sets.
pub(crate) fn validate_object_tags(tags: &[(String, String)]) -> S3Result<()> {
    validate_tags(tags)?;
    if let Some((k, _)) = tags.iter().find(|(k, _)| reserved_tag_key(k)) {
        let e = s3s::S3Error::with_message(s3s::S3ErrorCode::InvalidTag, "Your TagKey cannot be prefixed with aws:");
        return Err(tag_detail(e, k, None));
    }
    Ok(())
}

/// `e` naming the tag it refuses, as S3's documents do (`<TagKey>`, and `<TagValue>` when the
/// value is what is wrong).
pub(crate) fn tag_detail(e: s3s::S3Error, key: &str, value: Option<&str>) -> s3s::S3Error {
    let esc = super::post_form::xml_escape;
    let mut xml = format!("<TagKey>{}</TagKey>", esc(key));
    if let Some(v) = value {
        xml.push_str(&format!("<TagValue>{}</TagValue>", esc(v)));
    }
    super::error::with_detail(e, &xml)
}

/// Whether a tag key is one S3 keeps for the tags AWS itself sets (`aws:` in any case).
pub(crate) fn reserved_tag_key(k: &str) -> bool {
    k.get(..4).is_some_and(|p| p.eq_ignore_ascii_case("aws:"))
}

/// The rules of every tag set: at most `most` tags (else `InvalidTag` with `too_many`), unique
/// keys of 1..=128 chars, values up to 256 chars.
pub(crate) fn check_tags(tags: &[(String, String)], most: usize, too_many: &str) -> S3Result<()> {
    if tags.len() > most {
        return Err(s3_error!(InvalidTag, "{too_many}"));
    }
    let mut seen = std::collections::HashSet::new();
    let refuse = |msg: &str, k: &str, v: Option<&str>| {
        tag_detail(
            s3s::S3Error::with_message(s3s::S3ErrorCode::InvalidTag, msg.to_owned()),
            k,
            v,
        )
    };
    for (k, v) in tags {
        if k.is_empty() || k.chars().count() > 128 || !k.chars().all(tag_char) {
            return Err(refuse("The TagKey you have provided is invalid", k, None));
        }
        if v.chars().count() > 256 || !v.chars().all(tag_char) {
            return Err(refuse("The TagValue you have provided is invalid", k, Some(v)));
        }
        if !seen.insert(k) {
            return Err(refuse("Cannot provide multiple Tags with the same key", k, None));
        }
    }
    Ok(())
}

/// HTTP preconditions of a read, evaluated in RFC 9110 order.
pub(crate) struct Conditions<'a> {
    pub if_match: Option<&'a ETagCondition>,
    pub if_none_match: Option<&'a ETagCondition>,
    pub if_modified_since: Option<&'a Timestamp>,
    pub if_unmodified_since: Option<&'a Timestamp>,
}

/// Whether an entity-tag condition (`*` or a tag) holds for an object whose ETag is `etag`.
pub(crate) fn matches(cond: &ETagCondition, etag: &str) -> bool {
    match cond {
        ETagCondition::Any => true,
        ETagCondition::ETag(t) => t.value() == etag,
    }
}

impl Conditions<'_> {
    /// For GET/HEAD: 412 for failed If-Match/If-Unmodified-Since, 304 for If-None-Match/
    /// If-Modified-Since. For copy sources (`copy = true`) every failure is 412.
    pub(crate) fn check(&self, etag: &str, st: &Stat, copy: bool) -> S3Result<()> {
        let lm = unix(&last_modified(st));
        let not_modified = || {
            if copy {
                s3_error!(
                    PreconditionFailed,
                    "At least one of the pre-conditions you specified did not hold"
                )
            } else {
                // A 304 carries the validators a 200 would (RFC 9110 15.4.5): caches and
                // browsers refresh what they hold with them.
                let mut e = s3_error!(NotModified);
                let mut h = http::HeaderMap::new();
                if let Ok(v) = http::HeaderValue::from_str(&format!("\"{etag}\"")) {
                    h.insert(http::header::ETAG, v);
                }
                if let Some(v) = format_http_date(&last_modified(st)).and_then(|d| http::HeaderValue::from_str(&d).ok())
                {
                    h.insert(http::header::LAST_MODIFIED, v);
                }
                e.set_headers(h);
                e
            }
        };
        // A copy's conditions are on its source (`x-amz-copy-source-if-*`); their failures name
        // no condition here.
        let failed = |condition| {
            if copy {
                s3_error!(
                    PreconditionFailed,
                    "At least one of the pre-conditions you specified did not hold"
                )
            } else {
                super::error::precondition_failed(condition)
            }
        };
        match self.if_match {
            Some(c) if !matches(c, etag) => return Err(failed("If-Match")),
            Some(_) => {}
            None => {
                if let Some(t) = self.if_unmodified_since {
                    if lm > unix(t) {
                        return Err(failed("If-Unmodified-Since"));
                    }
                }
            }
        }
        match self.if_none_match {
            Some(c) if matches(c, etag) => return Err(not_modified()),
            Some(_) => {}
            None => {
                // A date later than now is no valid condition (RFC 9110 13.1.3) and is ignored,
                // as S3 ignores it: no object is older than a date that has not come yet.
                let now = super::now_ms().div_euclid(1000);
                if let Some(t) = self.if_modified_since.filter(|t| unix(t) <= now) {
                    if lm <= unix(t) {
                        return Err(not_modified());
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use penstock_backends::EntryKind;

    fn st(mtime_s: i64) -> Stat {
        Stat {
            kind: EntryKind::File,
            size: 3,
            inode: 9,
            mtime_ns: mtime_s as i128 * 1_000_000_000 + 5,
        }
    }

    #[test]
    fn stale_records_are_replaced_by_synthesized_ones() {
        let s = st(100);
        let rec = effective_record("x.json", &s, None);
        assert!(rec.etag.contains('-'));
        assert_eq!(rec.attrs.content_type.as_deref(), Some("application/json"));
        let mut stored = rec.clone();
        stored.etag = "abc".into();
        assert_eq!(effective_record("x.json", &s, Some(stored.clone())).etag, "abc");
        assert_ne!(effective_record("x.json", &st(101), Some(stored)).etag, "abc");
    }

    #[test]
    fn conditions_follow_rfc_order() {
        let s = st(1000);
        let any = ETagCondition::Any;
        let other = ETagCondition::ETag(ETag::Strong("zzz".into()));
        let same = ETagCondition::ETag(ETag::Strong("e".into()));
        let later = Timestamp::from(time::OffsetDateTime::from_unix_timestamp(2000).unwrap());
        let earlier = Timestamp::from(time::OffsetDateTime::from_unix_timestamp(10).unwrap());
        let c = |im, inm, ims, ius| Conditions {
            if_match: im,
            if_none_match: inm,
            if_modified_since: ims,
            if_unmodified_since: ius,
        };
        assert!(c(Some(&same), None, None, None).check("e", &s, false).is_ok());
        assert!(c(Some(&other), None, None, None).check("e", &s, false).is_err());
        // If-Match true wins over a failing If-Unmodified-Since.
        assert!(c(Some(&any), None, None, Some(&earlier)).check("e", &s, false).is_ok());
        assert!(c(None, None, None, Some(&earlier)).check("e", &s, false).is_err());
        let e = c(None, Some(&same), None, None).check("e", &s, false).unwrap_err();
        assert_eq!(e.code(), &s3s::S3ErrorCode::NotModified);
        let h = e.headers().expect("a 304 carries validators");
        assert_eq!(h.get("etag").unwrap(), "\"e\"");
        assert_eq!(h.get("last-modified").unwrap(), "Thu, 01 Jan 1970 00:16:40 GMT");
        let e = c(None, Some(&same), None, None).check("e", &s, true).unwrap_err();
        assert_eq!(e.code(), &s3s::S3ErrorCode::PreconditionFailed);
        // If-None-Match false wins over a failing If-Modified-Since.
        assert!(c(None, Some(&other), Some(&later), None).check("e", &s, false).is_ok());
        assert!(c(None, None, Some(&later), None).check("e", &s, false).is_err());
        assert!(c(None, None, Some(&earlier), None).check("e", &s, false).is_ok());
        // A date that has not come yet is ignored, for reads and copies alike.
        let tomorrow = Timestamp::from(time::OffsetDateTime::now_utc() + time::Duration::days(1));
        assert!(c(None, None, Some(&tomorrow), None).check("e", &s, false).is_ok());
        assert!(c(None, None, Some(&tomorrow), None).check("e", &s, true).is_ok());
    }

    #[test]
    fn aws_chunked_is_not_stored_as_an_encoding() {
        assert_eq!(stored_encoding("gzip, aws-chunked").as_deref(), Some("gzip"));
        assert_eq!(stored_encoding("aws-chunked,gzip").as_deref(), Some("gzip"));
        assert_eq!(stored_encoding("AWS-CHUNKED"), None);
        assert_eq!(stored_encoding("aws-chunked"), None);
        assert_eq!(stored_encoding("gzip,br").as_deref(), Some("gzip, br"));
        assert_eq!(stored_encoding("identity").as_deref(), Some("identity"));
    }

    #[test]
    fn tag_sets_refuse_characters_s3_refuses() {
        let set = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
        assert!(validate_tags(&set("Key 1_.:/=+-@", "Välue ٣")).is_ok());
        for (k, v) in [
            ("Key1,Key2", "a"),
            ("Key1", "Val1,Val2"),
            ("a&b", ""),
            ("k", "tab\there"),
        ] {
            let e = validate_tags(&set(k, v)).unwrap_err();
            assert_eq!(e.code(), &s3s::S3ErrorCode::InvalidTag, "{k} {v}");
        }
    }

    #[test]
    fn tagging_header() {
        let t = parse_tagging_header(Some("a=1&b=x%20y&c=")).unwrap();
        assert_eq!(
            t,
            [
                ("a".into(), "1".into()),
                ("b".into(), "x y".into()),
                ("c".into(), "".into())
            ]
        );
        // Not the encoding of distinct tags: S3 names the header.
        for malformed in ["a=1&a=2", "key1=val1,key2=val2", "a=%FF", "a#b=1"] {
            let e = parse_tagging_header(Some(malformed)).unwrap_err();
            assert_eq!(e.code(), &s3s::S3ErrorCode::InvalidArgument, "{malformed}");
        }
        // Letters of any script, numbers, spaces and `_ . : / = + - @` are a tag's to hold.
        assert!(parse_tagging_header(Some("caf%C3%A9=%E6%97%A5+1&p_a.t:h/x=a%3Db%2Bc-d%40e")).is_ok());
        // `aws:` keys are AWS's own (in any case); `aws` alone or inside a key is the user's.
        for reserved in ["aws:tag=1", "AWS:x=1", "a=1&aws:cloudformation:stack=s"] {
            let e = parse_tagging_header(Some(reserved)).unwrap_err();
            assert_eq!(e.code(), &s3s::S3ErrorCode::InvalidTag, "{reserved}");
        }
        assert!(parse_tagging_header(Some("aws=1&my:aws:x=2&awsx=3")).is_ok());
    }
}
