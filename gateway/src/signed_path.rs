//! A SigV4-signed request's path, read as the client signed it.
//!
//! Two spellings of a path are read by the signature that came with them:
//!
//! - **A literal `+`.** S3 reads a `+` that arrives unencoded in the path as a space (a legacy it
//!   keeps: `GET /bucket/a+b` returns the object `a b`), and clients written against S3 sign such
//!   a path that way: aws4fetch, for one, puts `%20` in the canonical URI for every `+` of the
//!   URL it sends. The gateway reads that `+` as a plus, as MinIO and Ceph RGW do, which is also
//!   the name a file `a+b` in the folder has; and clients such as curl sign the `+` as sent. So
//!   before s3s sees a SigV4 request (header or presigned) whose path has a literal `+`, we check
//!   whether its signature is the one for the path with each `+` read as a space; if it is, the
//!   path is rewritten with `%20` there, and the key, the signature and what the client signed
//!   agree. Otherwise nothing changes. Nothing is accepted here: s3s still verifies every
//!   signature, so a wrong guess can only fail (as `crate::sigv2::normalize_bucket_path` does for
//!   V2's bucket paths).
//! - **The service root signed as `//`.** GDAL's `/vsis3/` (under rasterio, QGIS, pyogrio and
//!   the GDAL tools) builds a path-style canonical URI as `/` + bucket + `/` + key, so listing the
//!   buckets (`GET /`, bucket and key empty) is signed for `//` while `/` is sent. There is no
//!   other reading of either path: both can only name the service root. When a header-signed
//!   `GET /` fails for `/` and its signature holds for `//` under the key's secret, we replace
//!   its signature with the one the same request gets for `/`, which s3s then verifies. This is
//!   the one place the gateway signs for a client, and only after checking that client's
//!   signature over everything else the request carries.
//! - **A presigned URL over a payload hash.** A presigned URL's canonical request ends in
//!   `UNSIGNED-PAYLOAD`, unless the URL names the hash of the body it may carry: as the query
//!   parameter `X-Amz-Content-Sha256`, or as an `x-amz-content-sha256` header sent with it.
//!   botocore and the AWS SDK for Go (v1) then sign that hash, which S3 and MinIO read as such:
//!   the URL admits only that body (content-addressed uploads). s3s signs every presigned URL
//!   over `UNSIGNED-PAYLOAD` (and checks a body against the header's hash), so it refuses such
//!   a URL's signature. When the signature holds over the hash, the URL's `X-Amz-Signature` is
//!   replaced with the one the same request gets over `UNSIGNED-PAYLOAD`, and the hash is put in
//!   the header if only the query named it, so s3s accepts the signature and refuses a body
//!   with another hash (`XAmzContentSHA256Mismatch`), as S3 does.
//! - **A scope that names no region.** Clients pointed at a host of their own sometimes sign for
//!   a "region" that is none: git-annex's S3 remotes (under DataLad), through the Haskell `aws`
//!   library, sign for the endpoint's host name (`127.0.0.1`, `s3.example.org`); s3cmd's default
//!   configuration for `US`. s3s cannot read such a scope. S3-compatible servers verify the
//!   signature in the scope the client named (MinIO and Ceph RGW, by default); so does the
//!   gateway: when the signature holds in that scope, the request is signed again in the
//!   gateway's region (header: `Authorization`; presigned: `X-Amz-Credential` and
//!   `X-Amz-Signature`), which s3s then verifies. An aws-chunked body's chunk signatures chain
//!   from the scope, so such an upload keeps the refusal (`AuthorizationHeaderMalformed` naming
//!   the region to use, on which s3cmd and botocore sign again).
//!
use http::{HeaderMap, Request};
use s3s::auth::S3Auth;

use crate::auth::GatewayAuth;

/// What a SigV4 signature names: the credential scope, the signed headers and the signature.
#[derive(Debug, PartialEq, Eq)]
struct Signed {
    access_key: String,
    date: String,
    region: String,
    service: String,
    amz_date: String,
    /// Lower-case names, `;`-separated, as the client listed them.
    headers: String,
    signature: String,
    /// Signed in the query (a presigned URL): the payload is `UNSIGNED-PAYLOAD` and
    /// `X-Amz-Signature` is left out of the canonical query.
    presigned: bool,
}

/// Rewrites each literal `+` of `req`'s path as `%20` when the request's SigV4 signature holds
/// for that reading (see the module docs).
pub async fn respell_signed_spaces<B>(req: &mut Request<B>, auth: &GatewayAuth) {
    let Some(spaced) = spaced_path(req.uri().path()) else {
        return;
    };
    let Some(s) = signed(req.headers(), req.uri().query()) else {
        return;
    };
    let canonicals: Vec<String> = payload_readings(req, &s)
        .iter()
        .filter_map(|payload| canonical_request(req, &s, &spaced, payload))
        .collect();
    if canonicals.is_empty() {
        return;
    }
    let Ok(secret) = auth.get_secret_key(&s.access_key).await else {
        return;
    };
    if !canonicals.iter().any(|c| signature_holds(secret.expose(), &s, c)) {
        return;
    }
    crate::sigv2::replace_path(req, spaced);
}

/// Gives a presigned URL whose signature covers a payload hash the signature s3s checks, over
/// `UNSIGNED-PAYLOAD`, and the hash as the header s3s checks the body against (see the module
/// docs); any other request is left as it is.
pub async fn accept_presigned_payload_hash<B>(req: &mut Request<B>, auth: &GatewayAuth) {
    if req.headers().contains_key(http::header::AUTHORIZATION) {
        return;
    }
    let Some(s) = signed(req.headers(), req.uri().query()).filter(|s| s.presigned) else {
        return;
    };
    let Some(hash) = presigned_hash(req) else {
        return;
    };
    let Ok(secret) = auth.get_secret_key(&s.access_key).await else {
        return;
    };
    if let Some(query) = resigned_unsigned(req, &s, &hash, secret.expose()) {
        let path = req.uri().path().to_owned();
        crate::sigv2::replace_path_and_query(req, &path, Some(&query));
        if !req.headers().contains_key(CONTENT_SHA256) {
            if let Ok(v) = http::HeaderValue::from_str(&hash) {
                req.headers_mut().insert(CONTENT_SHA256, v);
            }
        }
    }
}

/// Signs `req` again in region `ours` when its SigV4 signature holds in a scope whose region
/// s3s cannot read (see the module docs); whether it did. Any other request is left as it is.
pub async fn resign_for_region<B>(req: &mut Request<B>, auth: &GatewayAuth, ours: &str) -> bool {
    let Some(s) = signed(req.headers(), req.uri().query()) else {
        return false;
    };
    let streaming = req
        .headers()
        .get(CONTENT_SHA256)
        .is_some_and(|v| v.as_bytes().starts_with(b"STREAMING-"));
    if streaming || s.region == ours {
        return false;
    }
    let Ok(secret) = auth.get_secret_key(&s.access_key).await else {
        return false;
    };
    let path = req.uri().path().to_owned();
    let Some(payload) = payload_readings(req, &s)
        .into_iter()
        .find(|p| canonical_request(req, &s, &path, p).is_some_and(|c| signature_holds(secret.expose(), &s, &c)))
    else {
        return false;
    };
    let moved = Signed {
        region: ours.to_owned(),
        ..s
    };
    let key = moved.key(secret.expose());
    let credential = format!(
        "{}/{}/{}/{}/aws4_request",
        moved.access_key, moved.date, ours, moved.service
    );
    if !moved.presigned {
        let Some(canonical) = canonical_request(req, &moved, &path, &payload) else {
            return false;
        };
        let Some(ours_sig) = crate::sigv4::sign(&key, &moved.scope(), &canonical) else {
            return false;
        };
        let value = format!(
            "AWS4-HMAC-SHA256 Credential={credential},SignedHeaders={},Signature={}",
            moved.headers,
            String::from_utf8_lossy(&ours_sig)
        );
        let Ok(v) = http::HeaderValue::from_str(&value) else {
            return false;
        };
        req.headers_mut().insert(http::header::AUTHORIZATION, v);
        return true;
    }
    // Presigned: the credential is part of the canonical query, so the query changes first.
    let mut encoded = String::new();
    uri_encode(&mut encoded, credential.as_bytes(), false);
    let with_credential = with_param(req.uri().query().unwrap_or(""), "X-Amz-Credential", &encoded);
    crate::sigv2::replace_path_and_query(req, &path, Some(&with_credential));
    let Some(canonical) = canonical_request(req, &moved, &path, &payload) else {
        return false;
    };
    let Some(ours_sig) = crate::sigv4::sign(&key, &moved.scope(), &canonical) else {
        return false;
    };
    let query = with_param(&with_credential, "X-Amz-Signature", &String::from_utf8_lossy(&ours_sig));
    crate::sigv2::replace_path_and_query(req, &path, Some(&query));
    true
}

/// The head of a SigV4-signed request as s3s verifies it, kept so that a refusal of its
/// signature or its time can be answered as S3 answers it: with the canonical request and the
/// string to sign the gateway computed, which a client compares with its own to find what it
/// signed otherwise (a header a proxy changed, a path encoded twice), or with the times it was
/// judged by. Taken only from signed requests that go to s3s.
#[derive(Debug)]
pub(crate) struct SignedHead(Request<()>);

/// s3s's message for a presigned URL past its life.
const EXPIRED: &[u8] = b"Request has expired";

impl SignedHead {
    /// The head of `req` when a SigV4 signature (header or query) comes with it.
    pub(crate) fn of<B>(req: &Request<B>) -> Option<Self> {
        let v4 = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .is_some_and(|v| v.as_bytes().starts_with(b"AWS4-HMAC-SHA256 "))
            || req.uri().query().is_some_and(|q| q.contains("X-Amz-Signature="));
        if !v4 {
            return None;
        }
        let mut head = Request::new(());
        *head.method_mut() = req.method().clone();
        *head.uri_mut() = req.uri().clone();
        *head.headers_mut() = req.headers().clone();
        Some(Self(head))
    }

    /// The signature this request carries, as the client named it.
    fn signed(&self) -> Option<Signed> {
        signed(self.0.headers(), self.0.uri().query())
    }

    /// The elements S3 adds to a `SignatureDoesNotMatch` document, escaped: `AWSAccessKeyId`,
    /// `StringToSign`, `SignatureProvided`, `StringToSignBytes`, `CanonicalRequest` and
    /// `CanonicalRequestBytes` (the two texts as space-separated hex bytes). `None` when the
    /// signature cannot be read, for which s3s gives other codes, and when it holds under the
    /// key's secret: what did not match was then a later one (an aws-chunked body's chunk), which
    /// this request's texts would not explain.
    pub(crate) async fn mismatch_detail(&self, auth: &GatewayAuth) -> Option<String> {
        let (req, s) = (&self.0, self.signed()?);
        // What s3s signs over: the header's hash or payload kind; a presigned URL's
        // `UNSIGNED-PAYLOAD` (a hash it names was moved into the header, `accept_presigned_payload_hash`).
        let payload = if s.presigned {
            UNSIGNED.to_owned()
        } else {
            req.headers().get(CONTENT_SHA256)?.to_str().ok()?.to_owned()
        };
        let canonical = canonical_request(req, &s, req.uri().path(), &payload)?;
        if let Ok(secret) = auth.get_secret_key(&s.access_key).await {
            if signature_holds(secret.expose(), &s, &canonical) {
                return None;
            }
        }
        let to_sign = crate::sigv4::string_to_sign(&s.scope(), &canonical)?;
        let bytes = |t: &str| t.bytes().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ");
        let esc = crate::s3::post_form::xml_escape;
        Some(format!(
            "<AWSAccessKeyId>{}</AWSAccessKeyId><StringToSign>{}</StringToSign>\
             <SignatureProvided>{}</SignatureProvided><StringToSignBytes>{}</StringToSignBytes>\
             <CanonicalRequest>{}</CanonicalRequest><CanonicalRequestBytes>{}</CanonicalRequestBytes>",
            esc(&s.access_key),
            esc(&to_sign),
            esc(&s.signature),
            bytes(&to_sign),
            esc(&canonical),
            bytes(&canonical)
        ))
    }

    /// The elements S3 adds when it refuses this request's time, escaped, with the message S3
    /// gives where s3s words it otherwise: for `RequestTimeTooSkewed`, the request's time, the
    /// server's and the skew allowed; for a presigned URL past its life (`AccessDenied`
    /// "Request has expired"), its `X-Amz-Expires`, when it expired and the server's time. A
    /// client that reads them can tell a wrong clock from a URL used too late. `None` for other
    /// refusals and for requests whose time cannot be read.
    pub(crate) fn time_detail(
        &self,
        code: &str,
        doc: &[u8],
        now: time::OffsetDateTime,
    ) -> Option<(&'static str, String)> {
        use time::macros::format_description;
        let s = self.signed()?;
        let iso = format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]Z");
        let server = now.to_offset(time::UtcOffset::UTC).format(iso).ok()?;
        let esc = crate::s3::post_form::xml_escape;
        match code {
            "RequestTimeTooSkewed" => Some((
                "The difference between the request time and the current time is too large.",
                format!(
                    "<RequestTime>{}</RequestTime><ServerTime>{server}</ServerTime>\
                     <MaxAllowedSkewMilliseconds>{}</MaxAllowedSkewMilliseconds>",
                    esc(&s.amz_date),
                    crate::sigv2::MAX_SKEW_SECS * 1000
                ),
            )),
            "AccessDenied" if s.presigned && doc.windows(EXPIRED.len()).any(|w| w == EXPIRED) => {
                let expires = query_param(self.0.uri().query()?, "X-Amz-Expires")?;
                let signed_at = time::PrimitiveDateTime::parse(
                    &s.amz_date,
                    format_description!("[year][month][day]T[hour][minute][second]Z"),
                )
                .ok()?
                .assume_utc();
                let until = signed_at + time::Duration::seconds(expires.parse().ok()?);
                Some((
                    "Request has expired",
                    format!(
                        "<X-Amz-Expires>{}</X-Amz-Expires><Expires>{}</Expires><ServerTime>{server}</ServerTime>",
                        esc(&expires),
                        until.format(iso).ok()?
                    ),
                ))
            }
            _ => None,
        }
    }
}

/// The header that names the payload's hash.
const CONTENT_SHA256: &str = "x-amz-content-sha256";

/// SigV4's payload hash for a body signed as unknown.
const UNSIGNED: &str = "UNSIGNED-PAYLOAD";

/// The payload hash a presigned URL names (its `X-Amz-Content-Sha256` parameter, else the
/// `x-amz-content-sha256` header), when it is a SHA-256 as s3s reads one (64 lower-case hex
/// digits) and the header, if sent, names the same; `None` otherwise.
fn presigned_hash<B>(req: &Request<B>) -> Option<String> {
    let header = req.headers().get(CONTENT_SHA256).map(|v| v.to_str().ok());
    let in_query = query_param(req.uri().query().unwrap_or(""), "X-Amz-Content-Sha256");
    let hash = match (in_query, header) {
        (_, Some(None)) => return None,
        (Some(q), Some(Some(h))) if q != h => return None,
        (Some(q), _) => q,
        (None, Some(Some(h))) => h.to_owned(),
        (None, None) => return None,
    };
    crate::sigv4::is_payload_hash(hash.as_bytes()).then_some(hash)
}

/// The query of presigned `req` (signature `s`) with the `X-Amz-Signature` it gets over
/// `UNSIGNED-PAYLOAD` under `secret`, when `s` is the signature over `hash`; `None` otherwise.
fn resigned_unsigned<B>(req: &Request<B>, s: &Signed, hash: &str, secret: &str) -> Option<String> {
    let path = req.uri().path();
    let over_hash = canonical_request(req, s, path, hash)?;
    let (key, scope) = (s.key(secret), s.scope());
    if !crate::sigv4::signature_matches(&key, &scope, &over_hash, &s.signature) {
        return None;
    }
    let unsigned = canonical_request(req, s, path, UNSIGNED)?;
    let ours = crate::sigv4::sign(&key, &scope, &unsigned)?;
    let ours = std::str::from_utf8(&ours).ok()?;
    Some(with_param(req.uri().query()?, "X-Amz-Signature", ours))
}

/// `query` with the value of parameter `name` (already encoded) replaced by `value`.
fn with_param(query: &str, name: &str, value: &str) -> String {
    query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _)) if k == name => format!("{name}={value}"),
            _ => p.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("&")
}

/// The payload hashes `s` may have been made over: a header-signed request's
/// `x-amz-content-sha256`; for a presigned URL, the hash it names (see [`presigned_hash`]) and
/// `UNSIGNED-PAYLOAD`, which s3s reads (with a real hash in the header, for it to check).
fn payload_readings<B>(req: &Request<B>, s: &Signed) -> Vec<String> {
    if !s.presigned {
        let header = req.headers().get(CONTENT_SHA256).and_then(|v| v.to_str().ok());
        return header.map(str::to_owned).into_iter().collect();
    }
    presigned_hash(req).into_iter().chain([UNSIGNED.to_owned()]).collect()
}

/// The percent-decoded value of parameter `name` in `query`.
pub(crate) fn query_param(query: &str, name: &str) -> Option<String> {
    let (_, v) = query
        .split('&')
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| *k == name)?;
    String::from_utf8(percent_decode(v)).ok()
}

/// Gives a header-signed `GET /` whose signature is the one for the canonical URI `//` the
/// signature it gets for `/` (see the module docs); any other request is left as it is.
pub async fn accept_root_signed_as_double_slash<B>(req: &mut Request<B>, auth: &GatewayAuth) {
    if req.method() != http::Method::GET || req.uri().path() != "/" {
        return;
    }
    let Some(s) = signed(req.headers(), None) else {
        return;
    };
    let Ok(secret) = auth.get_secret_key(&s.access_key).await else {
        return;
    };
    if let Some(v) = resigned_root(req, &s, secret.expose()) {
        req.headers_mut().insert(http::header::AUTHORIZATION, v);
    }
}

/// The `Authorization` that signs `req` (a header-signed `GET /`, whose signature is `s`) for
/// `/` under `secret`, when `s` is the signature for `//` (then it cannot also be the one for
/// `/`, which s3s checks as usual).
fn resigned_root<B>(req: &Request<B>, s: &Signed, secret: &str) -> Option<http::HeaderValue> {
    let payload = req.headers().get(CONTENT_SHA256)?.to_str().ok()?;
    let doubled = canonical_request(req, s, "//", payload)?;
    let (key, scope) = (s.key(secret), s.scope());
    if !crate::sigv4::signature_matches(&key, &scope, &doubled, &s.signature) {
        return None;
    }
    let as_sent = canonical_request(req, s, "/", payload)?;
    let ours = crate::sigv4::sign(&key, &scope, &as_sent)?;
    let value = format!(
        "AWS4-HMAC-SHA256 Credential={}/{}/{}/{}/aws4_request,SignedHeaders={},Signature={}",
        s.access_key,
        s.date,
        s.region,
        s.service,
        s.headers,
        std::str::from_utf8(&ours).ok()?
    );
    http::HeaderValue::from_str(&value).ok()
}

/// The path with each literal `+` written `%20`; `None` when it has none.
fn spaced_path(path: &str) -> Option<String> {
    path.contains('+').then(|| path.replace('+', "%20"))
}

/// The parts of the request's SigV4 signature, from `Authorization` or from the query (whose
/// values clients send percent-encoded: `X-Amz-Credential=AK%2F20261127%2F...`).
fn signed(h: &HeaderMap, query: Option<&str>) -> Option<Signed> {
    if let Some(v) = h.get(http::header::AUTHORIZATION) {
        let rest = v.to_str().ok()?.strip_prefix("AWS4-HMAC-SHA256 ")?;
        let (mut credential, mut headers, mut signature) = (None, None, None);
        for part in rest.split(',') {
            let (k, v) = part.trim().split_once('=')?;
            match k {
                "Credential" => credential = Some(v),
                "SignedHeaders" => headers = Some(v),
                "Signature" => signature = Some(v),
                _ => return None,
            }
        }
        let amz_date = h.get("x-amz-date")?.to_str().ok()?;
        return scoped(credential?, amz_date, headers?, signature?, false);
    }
    let q = query?;
    let param = |name: &str| query_param(q, name);
    if param("X-Amz-Algorithm")? != "AWS4-HMAC-SHA256" {
        return None;
    }
    scoped(
        &param("X-Amz-Credential")?,
        &param("X-Amz-Date")?,
        &param("X-Amz-SignedHeaders")?,
        &param("X-Amz-Signature")?,
        true,
    )
}

fn scoped(credential: &str, amz_date: &str, headers: &str, signature: &str, presigned: bool) -> Option<Signed> {
    let mut c = credential.split('/');
    let (access_key, date, region, service) = (c.next()?, c.next()?, c.next()?, c.next()?);
    if c.next()? != "aws4_request" || c.next().is_some() {
        return None;
    }
    Some(Signed {
        access_key: access_key.to_owned(),
        date: date.to_owned(),
        region: region.to_owned(),
        service: service.to_owned(),
        amz_date: amz_date.to_owned(),
        headers: headers.to_owned(),
        signature: signature.to_owned(),
        presigned,
    })
}

/// Encodes `s` as SigV4's canonical forms do: every byte but `A-Z a-z 0-9 - _ . ~` as `%XX`,
/// and `/` too unless `keep_slash`.
fn uri_encode(out: &mut String, s: &[u8], keep_slash: bool) {
    for &b in s {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) || (keep_slash && b == b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
}

fn percent_decode(s: &str) -> Vec<u8> {
    percent_encoding::percent_decode_str(s).collect()
}

/// The canonical request of `req`, signed as `signed` says, with `path` as its path and
/// `payload` as its payload hash (SigV4: method, canonical URI, canonical query, canonical
/// headers, signed headers, payload hash); `None` when the request does not carry what a SigV4
/// signature needs.
fn canonical_request<B>(req: &Request<B>, signed: &Signed, path: &str, payload: &str) -> Option<String> {
    let mut c = String::with_capacity(512);
    c.push_str(req.method().as_str());
    c.push('\n');
    uri_encode(&mut c, &percent_decode(path), true);
    c.push('\n');
    let mut pairs: Vec<(String, String)> = Vec::new();
    for p in req.uri().query().unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = p.split_once('=').unwrap_or((p, ""));
        if signed.presigned && k == "X-Amz-Signature" {
            continue;
        }
        let (mut ek, mut ev) = (String::new(), String::new());
        uri_encode(&mut ek, &percent_decode(k), false);
        uri_encode(&mut ev, &percent_decode(v), false);
        pairs.push((ek, ev));
    }
    pairs.sort();
    let query: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
    c.push_str(&query.join("&"));
    c.push('\n');
    for name in signed.headers.split(';') {
        let values: Vec<String> = if name == "host" && !req.headers().contains_key(http::header::HOST) {
            // HTTP/2 carries the host in the URI's authority.
            vec![req.uri().authority()?.as_str().to_owned()]
        } else {
            req.headers()
                .get_all(name)
                .iter()
                .map(|v| Some(v.to_str().ok()?.split_whitespace().collect::<Vec<_>>().join(" ")))
                .collect::<Option<_>>()?
        };
        if values.is_empty() {
            return None;
        }
        c.push_str(name);
        c.push(':');
        c.push_str(&values.join(","));
        c.push('\n');
    }
    c.push('\n');
    c.push_str(&signed.headers);
    c.push('\n');
    c.push_str(payload);
    Some(c)
}

/// Whether `s.signature` is the SigV4 signature of `canonical` under `secret`.
fn signature_holds(secret: &str, s: &Signed, canonical: &str) -> bool {
    crate::sigv4::signature_matches(&s.key(secret), &s.scope(), canonical, &s.signature)
}

impl Signed {
    /// The signing key of `secret` for this signature's scope.
    fn key(&self, secret: &str) -> ring::hmac::Key {
        crate::sigv4::derive_key(secret, &self.date, &self.region, &self.service)
    }

    /// The scope and time this signature was made for.
    fn scope(&self) -> crate::sigv4::Scope<'_> {
        crate::sigv4::Scope {
            amz_date: &self.amz_date,
            date: &self.date,
            region: &self.region,
            service: &self.service,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    const EMPTY: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    fn holds(req: &Request<()>, path: &str) -> bool {
        let s = signed(req.headers(), req.uri().query()).expect("a SigV4 signature");
        payload_readings(req, &s)
            .iter()
            .filter_map(|payload| canonical_request(req, &s, path, payload))
            .any(|c| signature_holds(SECRET, &s, &c))
    }

    /// S3's documented header-signed example (GET with a Range, SigV4 documentation).
    #[test]
    fn the_documented_header_signature_holds_for_its_path_only() {
        let req = Request::get("/test.txt")
            .header("host", "examplebucket.s3.amazonaws.com")
            .header("range", "bytes=0-9")
            .header("x-amz-content-sha256", EMPTY)
            .header("x-amz-date", "20130524T000000Z")
            .header(
                "authorization",
                "AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request,\
                 SignedHeaders=host;range;x-amz-content-sha256;x-amz-date,\
                 Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41",
            )
            .body(())
            .unwrap();
        let s = signed(req.headers(), None).unwrap();
        assert_eq!(
            (s.access_key.as_str(), s.region.as_str(), s.presigned),
            ("AKIAIOSFODNN7EXAMPLE", "us-east-1", false)
        );
        assert!(holds(&req, "/test.txt"));
        assert!(!holds(&req, "/test%20txt"));
    }

    /// S3's documented presigned example; its credential comes percent-encoded.
    #[test]
    fn the_documented_presigned_signature_holds() {
        let req = Request::get(
            "/test.txt?X-Amz-Algorithm=AWS4-HMAC-SHA256\
             &X-Amz-Credential=AKIAIOSFODNN7EXAMPLE%2F20130524%2Fus-east-1%2Fs3%2Faws4_request\
             &X-Amz-Date=20130524T000000Z&X-Amz-Expires=86400&X-Amz-SignedHeaders=host\
             &X-Amz-Signature=aeeed9bbccd4d02ee5c0109b86d86835f995330da4c265957d157751f604d404",
        )
        .header("host", "examplebucket.s3.amazonaws.com")
        .body(())
        .unwrap();
        assert!(holds(&req, "/test.txt"));
        assert!(!holds(&req, "/test.txt2"));
    }

    /// A `GET /` as GDAL signs it in path style (canonical URI `//`), from a captured request.
    #[test]
    fn the_root_signed_as_double_slash_is_signed_again_for_slash() {
        let secret = "probe-secret-0123456789abcdefghijklmnop";
        let req = |signature: &str| {
            Request::get("/")
                .header("host", "127.0.0.1:19700")
                .header("x-amz-date", "20261127T195628Z")
                .header("x-amz-content-sha256", EMPTY)
                .header(
                    "authorization",
                    format!(
                        "AWS4-HMAC-SHA256 Credential=PKPROBE000000000001/20261127/us-east-1/s3/aws4_request,\
                         SignedHeaders=host;x-amz-content-sha256;x-amz-date,Signature={signature}"
                    ),
                )
                .body(())
                .unwrap()
        };
        let gdal = req("c1865720f8f32728d0d368ed5a860a713fed0d649b539b77f47396bbdab1122c");
        let s = signed(gdal.headers(), None).unwrap();
        let v = resigned_root(&gdal, &s, secret).expect("signed for //");
        let again = req(v.to_str().unwrap().rsplit_once("Signature=").unwrap().1);
        let s2 = signed(again.headers(), None).unwrap();
        let canonical = canonical_request(&again, &s2, "/", EMPTY).unwrap();
        assert!(signature_holds(secret, &s2, &canonical));
        // Signed for `/` already, or for neither, or under another secret: left alone.
        assert_eq!(resigned_root(&again, &s2, secret), None);
        let wrong = req("c1865720f8f32728d0d368ed5a860a713fed0d649b539b77f47396bbdab1122d");
        assert_eq!(
            resigned_root(&wrong, &signed(wrong.headers(), None).unwrap(), secret),
            None
        );
        assert_eq!(resigned_root(&gdal, &s, "another-secret"), None);
    }

    #[test]
    fn only_literal_pluses_are_spelled_again() {
        assert_eq!(spaced_path("/b/a+b%2Bc+").as_deref(), Some("/b/a%20b%2Bc%20"));
        assert_eq!(spaced_path("/b/a%20b"), None);
        let mut out = String::new();
        uri_encode(&mut out, &percent_decode("/b/a%20b%2Bc é~"), true);
        assert_eq!(out, "/b/a%20b%2Bc%20%C3%A9~");
    }

    #[test]
    fn requests_without_sigv4_are_not_read() {
        let h = HeaderMap::new();
        assert_eq!(signed(&h, None), None);
        assert_eq!(
            signed(&h, Some("X-Amz-Algorithm=AWS4-HMAC-SHA1&X-Amz-Credential=a")),
            None
        );
        let mut v2 = HeaderMap::new();
        v2.insert("authorization", "AWS AK:c2ln".parse().unwrap());
        assert_eq!(signed(&v2, None), None);
    }

    /// A presigned URL names a payload hash in its query or in the header; the two must agree,
    /// and only a hash s3s takes for one (lower-case hex) counts.
    #[test]
    fn the_hash_a_presigned_url_names() {
        let hash = "44ce7dd67c959e0d3524ffac1771dfbba87d2b6b4b4e99e42034a8b803f8b072";
        let named = |query: &str, header: Option<&str>| {
            let mut b = Request::put(format!("/b/k?{query}"));
            if let Some(h) = header {
                b = b.header("x-amz-content-sha256", h);
            }
            presigned_hash(&b.body(()).unwrap())
        };
        let q = format!("X-Amz-Content-Sha256={hash}&X-Amz-Signature=s");
        assert_eq!(named(&q, None).as_deref(), Some(hash));
        assert_eq!(named("X-Amz-Signature=s", Some(hash)).as_deref(), Some(hash));
        assert_eq!(named(&q, Some(hash)).as_deref(), Some(hash));
        assert_eq!(named(&q, Some(EMPTY)), None, "query and header disagree");
        assert_eq!(named("X-Amz-Signature=s", Some("UNSIGNED-PAYLOAD")), None);
        assert_eq!(named("X-Amz-Signature=s", Some(&hash.to_uppercase())), None);
        assert_eq!(named("X-Amz-Signature=s", None), None);
    }
}
