//! Plain GetObject and HeadObject requests answered without s3s's generic dispatch.
//!
//! Why: a 4 KiB GET spent about a fifth of the gateway's CPU in s3s's request preparation
//! (routing, query and header maps, a SigV4 signing key derived afresh for every request) and in
//! its input and output conversions (docs/benchmarks.md, session 21). Datasets of many small
//! files are read with exactly such requests.
//!
//! A request comes here only when this module understands every part of it: path style, no
//! query (or the SDKs' `x-id=GetObject`), a SigV4 `Authorization` header, a Range that parses or
//! none, and headers from a short list. It is verified here with a signing key cached per access key, day and region,
//! admitted by the same check as every other request ([`GatewayAccess::authorize`]) and answered
//! by the same handler. Everything else goes to s3s as before, and so does any request this path
//! would refuse (a bad signature, a missing key, a denied caller): s3s then answers it, so errors
//! keep the exact codes, messages and headers they had. This path only ever answers successes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use http::header::{HeaderName, HeaderValue};
use http::{HeaderMap, Method, Request, Response, StatusCode};
use ring::hmac;
use s3s::dto::{ChecksumMode, GetObjectInput, HeadObjectInput, Range, Timestamp};
use s3s::{Body, S3Request};

use super::object::format_http_date;
use super::{host_bucket, Gateway};
use crate::auth::{Asked, GatewayAccess};
use crate::observe::InfoSlot;

/// Request headers a plain read may carry: those that sign it, a Range that parses, the
/// checksum mode, and those no S3 read acts on. Any other header (conditions, SSE-C, tokens,
/// CORS origins, RDMA tokens) sends the request to s3s. [`plain_index`] gives each its place.
const PLAIN_HEADERS: [&str; 15] = [
    "host",
    "authorization",
    "x-amz-date",
    "x-amz-content-sha256",
    "x-amz-checksum-mode",
    "range",
    "content-length",
    "user-agent",
    "x-amz-user-agent",
    "accept",
    "accept-encoding",
    "connection",
    "keep-alive",
    "amz-sdk-invocation-id",
    "amz-sdk-request",
];

const HOST: usize = 0;
const AUTHORIZATION: usize = 1;
const AMZ_DATE: usize = 2;
const CONTENT_SHA256: usize = 3;
const CHECKSUM_MODE: usize = 4;
const RANGE: usize = 5;
const CONTENT_LENGTH: usize = 6;

/// The place of `name` in [`PLAIN_HEADERS`], the one list of them. Classifying a request's
/// headers by place, in one pass, replaced a hashed header-map lookup per header read (~3 % of a
/// 4 KiB GET's CPU with the list scan beside them; the scan of 15 short names is not the cost).
fn plain_index(name: &str) -> Option<usize> {
    PLAIN_HEADERS.iter().position(|n| *n == name)
}

/// A request's headers, read in one pass: every one is a [`PLAIN_HEADERS`] name.
#[derive(Debug, PartialEq, Eq)]
struct Seen<'a> {
    values: [Option<&'a HeaderValue>; PLAIN_HEADERS.len()],
    /// Bit `i`: header `i` came more than once.
    repeated: u32,
}

impl<'a> Seen<'a> {
    /// `None` when a header is not one a plain read may carry.
    fn scan(h: &'a HeaderMap) -> Option<Self> {
        let mut seen = Self {
            values: [None; PLAIN_HEADERS.len()],
            repeated: 0,
        };
        for (name, value) in h {
            let i = plain_index(name.as_str())?;
            match seen.values[i] {
                Some(_) => seen.repeated |= 1 << i,
                None => seen.values[i] = Some(value),
            }
        }
        Some(seen)
    }

    /// Header `i` when it may be absent: `Some(None)` when it is, `Some(value)` when it came
    /// once as text, `None` (not a plain read) when it is repeated or not visible ASCII.
    fn optional(&self, i: usize) -> Option<Option<&'a str>> {
        match self.values[i] {
            None => Some(None),
            Some(_) => self.single(i).map(Some),
        }
    }

    /// The only value of header `i`, as text: `None` when it is missing, repeated or not
    /// visible ASCII.
    fn single(&self, i: usize) -> Option<&'a str> {
        if self.repeated & (1 << i) != 0 {
            return None;
        }
        self.values[i]?.to_str().ok()
    }
}

/// How far a request's `x-amz-date` may be from our clock: s3s's default, which it applies to
/// every other request.
const MAX_SKEW_SECS: i64 = 900;

/// SHA-256 of the empty body, as clients send it for a GET.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// Signing keys kept at most; the cache starts over when full (a key costs four HMACs to derive).
const MAX_KEYS: usize = 4096;

/// Answers plain reads; see the module documentation.
pub struct DirectReads {
    gateway: Arc<Gateway>,
    /// Virtual-host domains, lower-cased: requests naming a bucket in `Host` go to s3s.
    domains: Vec<String>,
    keys: Mutex<HashMap<u64, Derived>>,
}

/// A derived signing key, what it was derived for, and the sealed secret it came from: a key
/// whose secret was replaced since no longer matches and is derived again.
struct Derived {
    access_key: String,
    date: String,
    region: String,
    sealed: String,
    key: hmac::Key,
}

/// A request this module can answer, borrowed from it.
#[derive(Debug, PartialEq, Eq)]
struct Plain<'a> {
    op: &'static str,
    bucket: &'a str,
    key: &'a str,
    /// The canonical query string: empty or `x-id=GetObject`.
    query: &'a str,
    checksum_mode: Option<&'a str>,
    /// A Range that parses; one that does not is left to s3s (and to the route that ignores it).
    range: Option<Range>,
    auth: SigV4<'a>,
    headers: Seen<'a>,
}

/// The parts of a SigV4 `Authorization` header and of the headers it signs.
#[derive(Debug, PartialEq, Eq)]
struct SigV4<'a> {
    access_key: &'a str,
    date: &'a str,
    region: &'a str,
    /// `host;x-amz-content-sha256;x-amz-date`: sorted, lower case, each header present once.
    signed: &'a str,
    signature: &'a str,
    amz_date: &'a str,
    payload: &'a str,
}

impl DirectReads {
    /// Serves plain reads of `gateway`'s buckets; `domains` are the virtual-host domains.
    pub fn new(gateway: Arc<Gateway>, domains: Vec<String>) -> Self {
        Self {
            gateway,
            domains,
            keys: Mutex::new(HashMap::new()),
        }
    }

    /// The response to `req` when it is a plain read that succeeds; `None` sends it to s3s.
    /// `slot` learns what the request was (for the log line and metrics).
    pub async fn serve<B>(
        &self,
        req: &Request<B>,
        slot: &InfoSlot,
        peer: Option<std::net::SocketAddr>,
    ) -> Option<Response<Body>> {
        let plain = plain(req, &self.domains)?;
        let gw = &self.gateway;
        let kp = gw.meta.keypair(plain.auth.access_key).await.ok()??;
        if !kp.enabled {
            return None;
        }
        let key = self.signing_key(&plain.auth, &kp.sealed_secret, &kp.access_key)?;
        let canonical = canonical_request(req, &plain)?;
        if !signature_holds(&key, &plain.auth, &canonical) || !fresh(plain.auth.amz_date, now_secs()) {
            return None;
        }
        let caller = GatewayAccess::caller_of(gw, kp).await.ok()?;
        let asked = Asked {
            op: plain.op,
            bucket: Some(plain.bucket.to_owned()),
            key: Some(plain.key.to_owned()),
            uri: req.uri(),
            headers: req.headers(),
            peer: peer.map(|p| p.ip()),
        };
        let caller = GatewayAccess::authorize(gw, caller, asked, Some(slot)).await.ok()?;
        let mut extensions = http::Extensions::new();
        if let Some(p) = peer {
            extensions.insert(super::PeerAddr(p));
        }
        extensions.insert(caller);
        let checksum_mode = plain.checksum_mode.map(|m| ChecksumMode::from(m.to_owned()));
        if plain.op == "HeadObject" {
            let input = read_input!(HeadObjectInput, plain, checksum_mode);
            let out = gw.head_object(s3_request(input, req, extensions)).await.ok()?;
            let mut resp = Response::new(Body::empty());
            // 206 for a HEAD with a satisfiable Range, as s3s would answer it.
            if let Some(status) = out.status {
                *resp.status_mut() = status;
            }
            let o = out.output;
            if !only_written!(o, archive_status) {
                return None;
            }
            object_headers!(resp.headers_mut(), o);
            resp.headers_mut().extend(out.headers);
            gw.metrics.direct_read();
            Some(resp)
        } else {
            let input = read_input!(GetObjectInput, plain, checksum_mode);
            let out = gw.get_object(s3_request(input, req, extensions)).await.ok()?;
            let mut o = out.output;
            if !only_written!(o) {
                return None;
            }
            let mut resp = Response::new(o.body.take().map(Body::from).unwrap_or_default());
            if o.content_range.is_some() {
                *resp.status_mut() = StatusCode::PARTIAL_CONTENT;
            }
            object_headers!(resp.headers_mut(), o);
            put(
                resp.headers_mut(),
                "x-amz-tagging-count",
                o.tag_count.map(HeaderValue::from),
            )?;
            resp.headers_mut().extend(out.headers);
            if resp
                .headers()
                .get(http::header::TRANSFER_ENCODING)
                .map(HeaderValue::as_bytes)
                == Some(b"chunked")
            {
                resp.headers_mut().remove(http::header::CONTENT_LENGTH);
            }
            gw.metrics.direct_read();
            Some(resp)
        }
    }

    /// The signing key for `auth`'s scope, from the cache when the secret is the one it was
    /// derived from.
    fn signing_key(&self, auth: &SigV4<'_>, sealed: &str, access_key: &str) -> Option<hmac::Key> {
        let scope = scope_hash(access_key, auth.date, auth.region);
        let matches = |d: &Derived| {
            d.access_key == access_key && d.date == auth.date && d.region == auth.region && d.sealed == sealed
        };
        if let Some(d) = self.keys.lock().ok()?.get(&scope).filter(|d| matches(d)) {
            return Some(d.key.clone());
        }
        let secret = self.gateway.master.open(access_key, sealed).ok()?;
        let key = derive_key(&secret, auth.date, auth.region);
        let mut keys = self.keys.lock().ok()?;
        if keys.len() >= MAX_KEYS {
            keys.clear();
        }
        keys.insert(
            scope,
            Derived {
                access_key: access_key.to_owned(),
                date: auth.date.to_owned(),
                region: auth.region.to_owned(),
                sealed: sealed.to_owned(),
                key: key.clone(),
            },
        );
        Some(key)
    }
}

/// Where a signing key is kept in the cache: a hash of what it is derived for (the entry itself
/// is compared in full, so a collision costs a derivation, never a wrong key).
fn scope_hash(access_key: &str, date: &str, region: &str) -> u64 {
    use std::hash::BuildHasher;
    static SEED: std::sync::OnceLock<std::collections::hash_map::RandomState> = std::sync::OnceLock::new();
    SEED.get_or_init(Default::default).hash_one((access_key, date, region))
}

/// The GetObject or HeadObject input (same field names) of a plain read; `None` (from the
/// enclosing function) if the builder refuses it.
macro_rules! read_input {
    ($ty:ty, $plain:expr, $mode:expr) => {{
        let mut input = <$ty>::builder()
            .bucket($plain.bucket.to_owned())
            .key($plain.key.to_owned())
            .build()
            .ok()?;
        input.checksum_mode = $mode;
        input.range = $plain.range;
        input
    }};
}
use read_input;

/// The request a handler takes: `input`, with `req`'s method, URI and headers.
fn s3_request<T, B>(input: T, req: &Request<B>, extensions: http::Extensions) -> S3Request<T> {
    S3Request {
        input,
        method: req.method().clone(),
        uri: req.uri().clone(),
        headers: req.headers().clone(),
        extensions,
        credentials: None,
        region: None,
        service: None,
        trailing_headers: None,
    }
}

/// Sets the object headers of a GetObject or HeadObject output (same field names) as s3s
/// serializes them; evaluates to `None` when a value is not a valid header value.
macro_rules! object_headers {
    ($h:expr, $o:expr) => {{
        let h: &mut HeaderMap = $h;
        let text = |v: Option<String>| v.map(HeaderValue::try_from).transpose();
        let date = |v: Option<Timestamp>| match v {
            None => Some(None),
            Some(t) => format_http_date(&t)
                .and_then(|d| HeaderValue::try_from(d).ok())
                .map(Some),
        };
        put(h, "accept-ranges", text($o.accept_ranges).ok()?)?;
        put(h, "cache-control", text($o.cache_control).ok()?)?;
        put(h, "x-amz-checksum-crc32", text($o.checksum_crc32).ok()?)?;
        put(h, "x-amz-checksum-crc32c", text($o.checksum_crc32c).ok()?)?;
        put(h, "x-amz-checksum-crc64nvme", text($o.checksum_crc64nvme).ok()?)?;
        put(h, "x-amz-checksum-sha1", text($o.checksum_sha1).ok()?)?;
        put(h, "x-amz-checksum-sha256", text($o.checksum_sha256).ok()?)?;
        put(
            h,
            "x-amz-checksum-type",
            text($o.checksum_type.map(|t| t.as_str().to_owned())).ok()?,
        )?;
        put(h, "content-disposition", text($o.content_disposition).ok()?)?;
        put(h, "content-encoding", text($o.content_encoding).ok()?)?;
        put(h, "content-language", text($o.content_language).ok()?)?;
        put(h, "content-length", $o.content_length.map(HeaderValue::from))?;
        put(h, "content-range", text($o.content_range).ok()?)?;
        put(h, "content-type", text($o.content_type).ok()?)?;
        put(h, "x-amz-delete-marker", $o.delete_marker.map(bool_value))?;
        put(h, "etag", $o.e_tag.map(|e| e.to_http_header()).transpose().ok()?)?;
        put(h, "x-amz-expiration", text($o.expiration).ok()?)?;
        put(h, "expires", date($o.expires)?)?;
        put(h, "last-modified", date($o.last_modified)?)?;
        for (k, v) in $o.metadata.unwrap_or_default() {
            // s3s encodes other values (RFC 2047); those answers are left to it.
            if !v.bytes().all(|b| (0x20..0x7f).contains(&b)) {
                return None;
            }
            let name = HeaderName::from_bytes(format!("x-amz-meta-{k}").as_bytes()).ok()?;
            h.insert(name, HeaderValue::try_from(v).ok()?);
        }
        put(h, "x-amz-mp-parts-count", $o.parts_count.map(HeaderValue::from))?;
        put(
            h,
            "x-amz-storage-class",
            text($o.storage_class.map(|s| s.as_str().to_owned())).ok()?,
        )?;
        put(h, "x-amz-version-id", text($o.version_id).ok()?)?;
        put(
            h,
            "x-amz-website-redirect-location",
            text($o.website_redirect_location).ok()?,
        )?;
        put(h, "x-amz-restore", text($o.restore).ok()?)?;
        put(
            h,
            "x-amz-server-side-encryption",
            text($o.server_side_encryption.map(|s| s.as_str().to_owned())).ok()?,
        )?;
    }};
}
use object_headers;

/// Whether a GetObject or HeadObject output leaves unset every field [`object_headers`] does not
/// write (`$extra`: those only one of them has). Our handlers set none of them; should one ever,
/// s3s answers.
macro_rules! only_written {
    ($o:expr $(, $extra:ident)*) => {
        $o.bucket_key_enabled.is_none()
            && $o.missing_meta.is_none()
            && $o.object_lock_legal_hold_status.is_none()
            && $o.object_lock_mode.is_none()
            && $o.object_lock_retain_until_date.is_none()
            && $o.replication_status.is_none()
            && $o.request_charged.is_none()
            && $o.sse_customer_algorithm.is_none()
            && $o.sse_customer_key_md5.is_none()
            && $o.ssekms_key_id.is_none()
            $(&& $o.$extra.is_none())*
    };
}
use only_written;

/// Inserts `value` under `name` when there is one; `Some(())` so it chains with `?`.
fn put(h: &mut HeaderMap, name: &'static str, value: Option<HeaderValue>) -> Option<()> {
    if let Some(v) = value {
        h.insert(HeaderName::from_static(name), v);
    }
    Some(())
}

fn bool_value(b: bool) -> HeaderValue {
    HeaderValue::from_static(if b { "true" } else { "false" })
}

/// The plain read `req` is, if it is one this module answers.
fn plain<'a, B>(req: &'a Request<B>, domains: &[String]) -> Option<Plain<'a>> {
    let op = match *req.method() {
        Method::GET => "GetObject",
        Method::HEAD => "HeadObject",
        _ => return None,
    };
    let query = match req.uri().query() {
        None => "",
        Some("x-id=GetObject") if op == "GetObject" => "x-id=GetObject",
        Some(_) => return None,
    };
    let h = Seen::scan(req.headers())?;
    if !matches!(h.optional(CONTENT_LENGTH)?, None | Some("0")) {
        return None;
    }
    // Path style only, with nothing to decode: the key is the path as sent, which is also its
    // canonical form (S3 encodes every byte outside these once).
    let path = req.uri().path().strip_prefix('/')?;
    let (bucket, key) = path.split_once('/')?;
    let unreserved = |s: &str| s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-._~/".contains(&b));
    if bucket.is_empty() || key.is_empty() || key.len() > 1024 || !unreserved(bucket) || !unreserved(key) {
        return None;
    }
    if host_bucket(h.single(HOST)?, domains).is_some() {
        return None;
    }
    let checksum_mode = h.optional(CHECKSUM_MODE)?;
    let range = match h.optional(RANGE)? {
        None => None,
        Some(r) => Some(Range::parse(r).ok()?),
    };
    Some(Plain {
        op,
        bucket,
        key,
        query,
        checksum_mode,
        range,
        auth: sig_v4(&h)?,
        headers: h,
    })
}

/// The SigV4 header authorization of a request, when it has the usual shape.
fn sig_v4<'a>(h: &Seen<'a>) -> Option<SigV4<'a>> {
    let rest = h.single(AUTHORIZATION)?.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',') {
        match part.trim().split_once('=')? {
            ("Credential", v) if credential.is_none() => credential = Some(v),
            ("SignedHeaders", v) if signed.is_none() => signed = Some(v),
            ("Signature", v) if signature.is_none() => signature = Some(v),
            _ => return None,
        }
    }
    let mut scope = credential?.split('/');
    let (access_key, date, region) = (scope.next()?, scope.next()?, scope.next()?);
    if scope.next()? != "s3" || scope.next()? != "aws4_request" || scope.next().is_some() {
        return None;
    }
    let signed: &str = signed?;
    let signature: &str = signature?;
    // Signed names: sorted (so each once), each a plain-read header other than the signature's
    // own, and host, x-amz-content-sha256 and x-amz-date among them.
    let mut previous = "";
    let mut named = 0u32;
    for name in signed.split(';') {
        let i = plain_index(name).filter(|&i| i != AUTHORIZATION)?;
        if name <= previous {
            return None;
        }
        previous = name;
        named |= 1 << i;
    }
    let needed = (1 << HOST) | (1 << CONTENT_SHA256) | (1 << AMZ_DATE);
    if named & needed != needed || signature.len() != 64 || access_key.is_empty() {
        return None;
    }
    let amz_date = h.single(AMZ_DATE)?;
    let payload = h.single(CONTENT_SHA256)?;
    if amz_date.len() != 16 || amz_date.get(..8)? != date || !matches!(payload, "UNSIGNED-PAYLOAD" | EMPTY_SHA256) {
        return None;
    }
    Some(SigV4 {
        access_key,
        date,
        region,
        signed,
        signature,
        amz_date,
        payload,
    })
}

/// The SigV4 canonical request of a plain read; `None` when a signed header is missing.
fn canonical_request<B>(req: &Request<B>, p: &Plain<'_>) -> Option<String> {
    let mut c = String::with_capacity(256);
    c.push_str(req.method().as_str());
    c.push('\n');
    c.push_str(req.uri().path());
    c.push('\n');
    c.push_str(p.query);
    c.push('\n');
    for name in p.auth.signed.split(';') {
        c.push_str(name);
        c.push(':');
        // Trimmed, inner runs of whitespace as one space (SigV4's canonical header value).
        let mut words = p.headers.single(plain_index(name)?)?.split_whitespace();
        if let Some(w) = words.next() {
            c.push_str(w);
        }
        for w in words {
            c.push(' ');
            c.push_str(w);
        }
        c.push('\n');
    }
    c.push('\n');
    c.push_str(p.auth.signed);
    c.push('\n');
    c.push_str(p.auth.payload);
    Some(c)
}

/// The SigV4 signing key of `secret` for `date` (yyyymmdd) and `region`, service `s3`.
fn derive_key(secret: &str, date: &str, region: &str) -> hmac::Key {
    crate::sigv4::derive_key(secret, date, region, "s3")
}

/// Whether the request's signature is the one `key` gives its canonical request.
fn signature_holds(key: &hmac::Key, auth: &SigV4<'_>, canonical: &str) -> bool {
    let scope = crate::sigv4::Scope {
        amz_date: auth.amz_date,
        date: auth.date,
        region: auth.region,
        service: "s3",
    };
    crate::sigv4::signature_matches(key, &scope, canonical, auth.signature)
}

fn now_secs() -> i64 {
    time::OffsetDateTime::now_utc().unix_timestamp()
}

/// Whether an `x-amz-date` (`yyyymmddThhmmssZ`) is within [`MAX_SKEW_SECS`] of `now`.
fn fresh(amz_date: &str, now: i64) -> bool {
    let num = |r: std::ops::Range<usize>| {
        amz_date
            .get(r)
            .filter(|s| s.bytes().all(|b| b.is_ascii_digit()))?
            .parse::<u32>()
            .ok()
    };
    let parsed = (|| {
        if amz_date.as_bytes().get(8) != Some(&b'T') || amz_date.as_bytes().get(15) != Some(&b'Z') {
            return None;
        }
        let month = time::Month::try_from(u8::try_from(num(4..6)?).ok()?).ok()?;
        let date =
            time::Date::from_calendar_date(i32::try_from(num(0..4)?).ok()?, month, u8::try_from(num(6..8)?).ok()?)
                .ok()?;
        let t = time::Time::from_hms(
            u8::try_from(num(9..11)?).ok()?,
            u8::try_from(num(11..13)?).ok()?,
            u8::try_from(num(13..15)?).ok()?,
        )
        .ok()?;
        Some(date.with_time(t).assume_utc().unix_timestamp())
    })();
    parsed.is_some_and(|t| (now - t).abs() <= MAX_SKEW_SECS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signed_get(headers: &[(&str, &str)], uri: &str) -> Request<()> {
        let mut b = Request::builder().method("GET").uri(uri);
        for (k, v) in headers {
            b = b.header(*k, *v);
        }
        b.body(()).unwrap()
    }

    const AK: &str = "AKIAIOSFODNN7EXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";

    fn auth_header(signed: &str, signature: &str) -> String {
        format!("AWS4-HMAC-SHA256 Credential={AK}/20130524/us-east-1/s3/aws4_request, SignedHeaders={signed}, Signature={signature}")
    }

    /// Requests signed by botocore's `S3SigV4Auth` (an independent implementation), with the
    /// signatures it gave.
    #[test]
    fn verifies_what_botocore_signs() {
        let check = |uri: &str, extra: &[(&str, &str)], signed: &str, signature: &str| {
            let auth = format!(
                "AWS4-HMAC-SHA256 Credential={AK}/20261125/us-east-1/s3/aws4_request, SignedHeaders={signed}, Signature={signature}"
            );
            let mut h = vec![
                ("host", "127.0.0.1:9000"),
                ("x-amz-date", "20261125T154936Z"),
                ("x-amz-content-sha256", EMPTY_SHA256),
                ("authorization", auth.as_str()),
            ];
            h.extend_from_slice(extra);
            let req = signed_get(&h, uri);
            let p = plain(&req, &[]).expect("a plain read");
            let key = derive_key(SECRET, "20261125", "us-east-1");
            signature_holds(&key, &p.auth, &canonical_request(&req, &p).unwrap())
        };
        let plain_get = "host;x-amz-content-sha256;x-amz-date";
        let sig = "fc7b864150122c2dea75e04b25aac7280721eec4f1bdde4efb679612b4ccb9cc";
        assert!(check("/examplebucket/photos/2013/a.jpg", &[], plain_get, sig));
        let with_mode = "host;x-amz-checksum-mode;x-amz-content-sha256;x-amz-date";
        let sig2 = "d49ca386685bc8c4d93b20fde7fffb45b024aac217336507dcb807e4eb917fbf";
        let mode = [("x-amz-checksum-mode", "ENABLED")];
        assert!(check("/examplebucket/k?x-id=GetObject", &mode, with_mode, sig2));
        // Another key, another query, another signed value, another secret: refused.
        assert!(!check("/examplebucket/photos/2013/b.jpg", &[], plain_get, sig));
        assert!(!check("/examplebucket/k", &mode, with_mode, sig2));
        assert!(!check(
            "/examplebucket/k?x-id=GetObject",
            &[("x-amz-checksum-mode", "enabled")],
            with_mode,
            sig2
        ));
        let req = signed_get(
            &[
                ("host", "127.0.0.1:9000"),
                ("x-amz-date", "20261125T154936Z"),
                ("x-amz-content-sha256", EMPTY_SHA256),
                ("authorization", &format!("AWS4-HMAC-SHA256 Credential={AK}/20261125/us-east-1/s3/aws4_request, SignedHeaders={plain_get}, Signature={sig}")),
            ],
            "/examplebucket/photos/2013/a.jpg",
        );
        let p = plain(&req, &[]).unwrap();
        let other = derive_key("another-secret", "20261125", "us-east-1");
        assert!(!signature_holds(&other, &p.auth, &canonical_request(&req, &p).unwrap()));
    }

    #[test]
    fn only_plain_reads_qualify() {
        let auth = auth_header("host;x-amz-content-sha256;x-amz-date", &"a".repeat(64));
        let base = [
            ("host", "127.0.0.1:9000"),
            ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
            ("x-amz-date", "20130524T000000Z"),
            ("authorization", auth.as_str()),
        ];
        let with = |extra: &[(&str, &str)], uri: &str| {
            let mut h = base.to_vec();
            h.extend_from_slice(extra);
            signed_get(&h, uri)
        };
        assert!(plain(&with(&[], "/b/k/x.bin"), &[]).is_some());
        assert!(plain(&with(&[], "/b/k?x-id=GetObject"), &[]).is_some());
        assert!(plain(&with(&[("user-agent", "x")], "/b/k"), &[]).is_some());
        // Anything s3s must see: queries, conditions, encoded keys, buckets only.
        assert!(plain(&with(&[], "/b/k?versionId=1"), &[]).is_none());
        assert!(plain(&with(&[("range", "bytes=0-1")], "/b/k"), &[]).is_some());
        // A Range s3s cannot parse is S3's to ignore: left to s3s and the route that does.
        assert!(plain(&with(&[("range", "bytes=0-1,3-4")], "/b/k"), &[]).is_none());
        assert!(plain(&with(&[("range", "items=0-1")], "/b/k"), &[]).is_none());
        assert!(plain(&with(&[("if-match", "\"x\"")], "/b/k"), &[]).is_none());
        assert!(plain(&with(&[("origin", "https://x")], "/b/k"), &[]).is_none());
        assert!(plain(&with(&[("x-amz-rdma-token", "t")], "/b/k"), &[]).is_none());
        assert!(plain(&with(&[], "/b/a%20b"), &[]).is_none());
        assert!(plain(&with(&[], "/b/"), &[]).is_none());
        assert!(plain(&with(&[], "/b"), &[]).is_none());
        assert!(plain(&with(&[("content-length", "3")], "/b/k"), &[]).is_none());
        // A bucket named in Host.
        assert!(plain(&with(&[], "/b/k"), &["0.1:9000".to_owned(), "0.0.1".to_owned()]).is_none());
        // Unsigned host, unsorted or missing signed headers, another service.
        for bad in [
            auth_header("x-amz-content-sha256;x-amz-date", &"a".repeat(64)),
            auth_header("x-amz-date;host;x-amz-content-sha256", &"a".repeat(64)),
            auth_header("host;x-amz-content-sha256;x-amz-date", "abc"),
            auth.replace("/s3/", "/sts/"),
        ] {
            let mut h = base.to_vec();
            h[3] = ("authorization", bad.as_str());
            assert!(plain(&signed_get(&h, "/b/k"), &[]).is_none(), "{bad}");
        }
    }

    #[test]
    fn every_plain_header_has_its_place() {
        for (i, name) in PLAIN_HEADERS.iter().enumerate() {
            assert_eq!(plain_index(name), Some(i), "{name}");
        }
        assert_eq!(plain_index("if-match"), None);
        assert_eq!(plain_index(""), None);
    }

    #[test]
    fn repeated_headers_have_no_single_value() {
        let auth = auth_header("host;x-amz-content-sha256;x-amz-date", &"a".repeat(64));
        let mut h = vec![
            ("host", "127.0.0.1:9000"),
            ("x-amz-content-sha256", "UNSIGNED-PAYLOAD"),
            ("x-amz-date", "20130524T000000Z"),
            ("authorization", auth.as_str()),
            ("accept", "*/*"),
            ("accept", "text/plain"),
        ];
        let req = signed_get(&h, "/b/k");
        let p = plain(&req, &[]).expect("unsigned headers may repeat");
        assert_eq!(p.headers.single(9), None);
        assert_eq!(p.headers.single(HOST), Some("127.0.0.1:9000"));
        h.push(("x-amz-date", "20130524T000001Z"));
        assert!(
            plain(&signed_get(&h, "/b/k"), &[]).is_none(),
            "a repeated signed header"
        );
        let mut ranged = h[..4].to_vec();
        ranged.extend([("range", "bytes=0-1"), ("range", "bytes=2-3")]);
        assert!(plain(&signed_get(&ranged, "/b/k"), &[]).is_none(), "two ranges");
        let mut signed_accept = h[..4].to_vec();
        let auth2 = auth_header("accept;host;x-amz-content-sha256;x-amz-date", &"a".repeat(64));
        signed_accept[3] = ("authorization", auth2.as_str());
        signed_accept.extend([("accept", "a"), ("accept", "b")]);
        let req = signed_get(&signed_accept, "/b/k");
        let p = plain(&req, &[]).expect("parses");
        assert!(canonical_request(&req, &p).is_none(), "a signed header with two values");
    }

    #[test]
    fn dates_must_be_recent() {
        let t = 1_369_353_600; // 2013-05-24T00:00:00Z
        assert!(fresh("20130524T000000Z", t));
        assert!(fresh("20130524T001500Z", t));
        assert!(!fresh("20130524T001501Z", t));
        assert!(!fresh("20130523T234459Z", t));
        assert!(!fresh("20130524 000000Z", t));
        assert!(!fresh("20131324T000000Z", t));
    }
}
