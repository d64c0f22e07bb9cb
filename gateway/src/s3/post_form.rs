//! Browser-form uploads (POST object): the key a request is authorized for, and `${filename}`.
//!
//! s3s parses the form and serves it as a PutObject, but its access check sees only the bucket
//! (the key is a form field, not part of the path), it keeps the file part's name to itself, and
//! it answers with the key as the form spelled it. So the pieces are put together here:
//! - the HTTP layer watches the body as s3s reads it for the file part's `filename`
//!   ([`watch`]);
//! - the POST access hook (`auth.rs`) puts that name in place of `${filename}` in the form's key,
//!   as S3 does, and only then authorizes the request, for the key that will be written (a bucket
//!   policy's Deny on a prefix holds for form uploads as for PUTs, and its Allow of a prefix
//!   admits anonymous form uploads there);
//! - the answer (201's document, 303's `Location`) names the key written, with the ETag quoted as
//!   S3 quotes it ([`rename_answer`]), and a 200/201/204 names the object's URL in `Location`
//!   ([`form_answer`]).
//!
//! The same watch reads the two form fields s3s leaves out of the PutObject it makes of a form:
//! `acl` (s3s reads `x-amz-acl` only) and `tagging` (an XML tag set; s3s reads only the header
//! form `x-amz-tagging`). The hook applies them, so a form's ACL is applied or refused and its
//! tags are kept, as S3 does, instead of being dropped without a word.

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;
use s3s::dto::{ObjectCannedACL, PostObjectInput, Tagging};
use s3s::{s3_error, S3Result};

use super::error_document;

/// What S3 replaces with the uploaded file's name in a form's `key`.
const FILENAME: &str = "${filename}";

/// Form bytes watched for the file part's headers at most. A form's fields are small (a policy,
/// a signature, a few values); one whose fields run past this keeps `${filename}` as written,
/// and what a request can make this layer hold stays bounded (s3s takes up to 20 MB of fields).
const MAX_WATCHED: usize = 1 << 20;

/// One form upload, shared by the body watch, the access hook and the answer.
#[derive(Default)]
pub(crate) struct FormUpload {
    /// The file part's `filename` (`None` when the part names none), once its headers went by.
    file_name: OnceLock<Option<String>>,
    /// The key as the form spelled it, and as written, when `${filename}` was replaced.
    renamed: OnceLock<(String, String)>,
    /// The fields s3s does not read, as the form gave them before its file part.
    fields: OnceLock<FormFields>,
    /// The key written, once the access hook settled it.
    written: OnceLock<String>,
    /// Where the form was sent: `scheme://host/bucket` (path style) or `scheme://host` (the
    /// Host names the bucket); the object's URL is this and its key.
    base: OnceLock<String>,
}

/// Form fields s3s leaves out of the PutObject it makes of a form (see the module's doc), and
/// what the form says of its signing, which s3s reads more leniently than S3.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct FormFields {
    acl: Option<String>,
    tagging: Option<String>,
    /// The `policy` field (base64 of the policy document).
    policy: Option<String>,
    /// The signature field the form carries: `Signature` (V2) or `X-Amz-Signature` (V4).
    signature: Option<Signing>,
    /// The signer the form names: `AWSAccessKeyId` (V2) or `X-Amz-Credential` (V4).
    credential: Option<Signing>,
}

/// The signature version a form's signing field belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signing {
    V2,
    V4,
}

impl FormFields {
    /// Keeps the value of part `name` if it is one of these fields (names in any case, as s3s
    /// reads a form's field names).
    fn keep(&mut self, name: &str, value: &[u8]) {
        let text = || String::from_utf8_lossy(value).into_owned();
        match name.to_ascii_lowercase().as_str() {
            "acl" => self.acl = Some(text()),
            "tagging" => self.tagging = Some(text()),
            "policy" => self.policy = Some(text()),
            "signature" => self.signature = Some(Signing::V2),
            "x-amz-signature" => self.signature = Some(Signing::V4),
            "awsaccesskeyid" => self.credential = Some(Signing::V2),
            "x-amz-credential" => self.credential = Some(Signing::V4),
            _ => {}
        }
    }

    /// S3's refusal of a form whose signing is incomplete or whose policy's expiration is not
    /// in S3's form, where s3s would go on: a form that names a signer or carries a policy but
    /// has no signature (s3s takes it for an anonymous upload, and checks the policy's
    /// conditions first), and an expiration that is RFC 3339 but not the ISO 8601 S3 reads
    /// (`2026-11-26 12:00:00Z`, with a space, parses for s3s).
    fn signing_refusal(&self) -> Option<(&'static str, String)> {
        if self.signature.is_none() && (self.policy.is_some() || self.credential.is_some()) {
            let field = match self.credential {
                Some(Signing::V4) => "X-Amz-Signature",
                _ => "Signature",
            };
            return Some((
                "InvalidArgument",
                format!("Bucket POST must contain a field named '{field}'.  If it is specified, please check the order of the fields."),
            ));
        }
        let expiration = self.policy.as_deref().and_then(policy_expiration)?;
        (expiration.as_bytes().get(10) != Some(&b'T')).then(|| {
            (
                "InvalidPolicyDocument",
                format!("Invalid Policy: Invalid 'expiration' value: '{expiration}'"),
            )
        })
    }
}

/// The `expiration` of a base64 policy document, if it decodes and has one as a string.
fn policy_expiration(policy: &str) -> Option<String> {
    use base64::Engine;
    let doc = base64::engine::general_purpose::STANDARD.decode(policy.trim()).ok()?;
    let doc: serde_json::Value = serde_json::from_slice(&doc).ok()?;
    doc.get("expiration")?.as_str().map(str::to_owned)
}

/// The file name in a file part's `filename`, without the path some browsers send with it
/// (`C:\Program Files\a.txt` and `dir/a.txt` are `a.txt`), as S3 puts it in place of
/// `${filename}`.
fn base_name(name: &str) -> &str {
    name.rsplit(['/', '\\']).next().unwrap_or(name)
}

impl FormUpload {
    /// The key to write for the form's `key`: `${filename}` replaced by the file part's name,
    /// without any path a browser put before it ([`base_name`]). Records the change for the
    /// answer.
    pub(crate) fn key_for(&self, form_key: &str) -> String {
        let key = match self.file_name.get() {
            Some(Some(name)) if form_key.contains(FILENAME) => {
                let key = form_key.replace(FILENAME, base_name(name));
                let _ = self.renamed.set((form_key.to_owned(), key.clone()));
                key
            }
            _ => form_key.to_owned(),
        };
        let _ = self.written.set(key.clone());
        key
    }

    /// Records where the form was sent (see `base`): `scheme` and the request's `Host`, and the
    /// bucket when the path names it rather than the Host.
    pub(crate) fn sent_to(&self, scheme: &str, host: &str, path_bucket: Option<&str>) {
        let base = match path_bucket {
            Some(b) => format!("{scheme}://{host}/{b}"),
            None => format!("{scheme}://{host}"),
        };
        let _ = self.base.set(base);
    }

    /// The URL of the object written, as S3 gives it in a form answer's `Location` header (and
    /// the 201 document's `<Location>`): the key percent-encoded, its `/` kept.
    fn object_url(&self) -> Option<String> {
        let (base, key) = (self.base.get()?, self.written.get()?);
        Some(format!("{base}/{}", super::list::enc(true, key)))
    }

    /// S3's refusal of the form's signing, if it has one for it (see
    /// [`FormFields::signing_refusal`]), as an error to answer with.
    pub(crate) fn check_signing(&self) -> S3Result<()> {
        match self.fields.get().and_then(FormFields::signing_refusal) {
            Some(("InvalidArgument", message)) => Err(s3_error!(InvalidArgument, "{message}")),
            Some((_, message)) => Err(s3_error!(InvalidPolicyDocument, "{message}")),
            None => Ok(()),
        }
    }

    /// Puts the form's `acl` and `tagging` fields into the upload s3s made of the form, where
    /// it has none of its own (from `x-amz-acl`, `x-amz-tagging`). A tag set that is not XML
    /// is `MalformedXML`; the ACL and the tags are then checked as a PUT's are.
    pub(crate) fn apply_fields(&self, input: &mut PostObjectInput) -> S3Result<()> {
        let Some(fields) = self.fields.get() else {
            return Ok(());
        };
        if let (Some(acl), None) = (&fields.acl, &input.acl) {
            input.acl = Some(ObjectCannedACL::from(acl.trim().to_owned()));
        }
        if let (Some(doc), None) = (&fields.tagging, &input.tagging) {
            input.tagging = Some(tag_header(doc)?);
        }
        Ok(())
    }
}

/// A form's `tagging` document as the `x-amz-tagging` header would carry it
/// (`key=value&...`, percent-encoded).
fn tag_header(doc: &str) -> S3Result<String> {
    use s3s::xml::Deserialize;
    let mut d = s3s::xml::Deserializer::new(doc.trim().as_bytes());
    let tagging = Tagging::deserialize(&mut d)
        .and_then(|t| d.expect_eof().map(|()| t))
        .map_err(|_| s3_error!(MalformedXML, "The tagging form field is not a valid Tagging document"))?;
    let enc = |s: &str| percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string();
    let pairs: Vec<String> = tagging
        .tag_set
        .iter()
        .map(|t| {
            format!(
                "{}={}",
                enc(t.key.as_deref().unwrap_or("")),
                enc(t.value.as_deref().unwrap_or(""))
            )
        })
        .collect();
    Ok(pairs.join("&"))
}

/// For a browser-form upload (POST to a bucket, no query, a multipart form): watches its body
/// for the file part's name and puts the shared [`FormUpload`] in the request's extensions.
/// Other requests pass through untouched.
///
/// The form's fields are held back until the file part's headers arrive (s3s reads them all
/// before it does anything with the form), so that a `key` field with `${filename}` reaches
/// s3s with the file's name in place. S3 checks a policy's conditions against the key it
/// writes: `["starts-with", "$key", "foo"]` admits the key `${filename}` for a file named
/// `foo.txt`, and refuses it for `bar.txt`.
pub(crate) fn watch(req: Request<s3s::Body>) -> (Request<s3s::Body>, Option<Arc<FormUpload>>) {
    let boundary = (req.method() == http::Method::POST && req.uri().query().is_none_or(str::is_empty))
        .then(|| req.headers().get(http::header::CONTENT_TYPE))
        .flatten()
        .and_then(|v| v.to_str().ok())
        .and_then(boundary_of);
    let Some(boundary) = boundary else {
        return (req, None);
    };
    let upload = Arc::new(FormUpload::default());
    let (mut parts, body) = req.into_parts();
    parts.extensions.insert(upload.clone());
    let watched = FileNameWatch {
        inner: body,
        seen: Some(Vec::new()),
        place: Place::default(),
        delimiter: [b"--".as_slice(), boundary.as_bytes()].concat(),
        upload: upload.clone(),
        ready: None,
        trailers: None,
        ended: false,
    };
    (Request::from_parts(parts, s3s::Body::http_body(watched)), Some(upload))
}

/// The boundary of a `multipart/form-data` content type.
fn boundary_of(content_type: &str) -> Option<String> {
    let mut params = content_type.split(';');
    let kind = params.next()?.trim();
    if !kind.eq_ignore_ascii_case("multipart/form-data") {
        return None;
    }
    params
        .filter_map(|p| p.split_once('='))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("boundary"))
        .map(|(_, v)| v.trim().trim_matches('"').to_owned())
        .filter(|b| !b.is_empty())
}

/// A form body that records the file part's name as the bytes before it go by, holding them
/// back until then (see [`watch`]).
struct FileNameWatch<B> {
    inner: B,
    /// The form so far, not yet passed on; `None` once the file part's headers were read (or
    /// could not be) and the bytes went on.
    seen: Option<Vec<u8>>,
    /// Where in `seen` the scan goes on: the parts before it were read whole, so a frame costs
    /// a look at what is new, not the whole form again.
    place: Place,
    /// `--` and the boundary.
    delimiter: Vec<u8>,
    upload: Arc<FormUpload>,
    /// The held bytes, released (with the file's name in the key) and not yet passed on.
    ready: Option<Bytes>,
    /// Trailers that came while bytes were held, passed on after them.
    trailers: Option<Frame<Bytes>>,
    /// Whether the inner body ended while bytes were held.
    ended: bool,
}

impl<B> FileNameWatch<B> {
    /// Takes in a frame of the form; once the file part's headers are there (or cannot be
    /// found), the held bytes are released to `ready`.
    fn look(&mut self, data: &Bytes) {
        let Some(seen) = self.seen.as_mut() else { return };
        seen.extend_from_slice(data);
        match scan_from(seen, &self.delimiter, &mut self.place) {
            Scan::More if seen.len() <= MAX_WATCHED => {}
            Scan::Found(name) => {
                let form = self.seen.take().unwrap_or_default();
                let form = match (&name, self.place.key) {
                    (Some(name), Some(span)) => with_file_name(form, span, name),
                    _ => form,
                };
                self.ready = Some(Bytes::from(form));
                let _ = self.upload.file_name.set(name);
                let _ = self.upload.fields.set(std::mem::take(&mut self.place.fields));
            }
            Scan::More | Scan::NoFile => self.release(),
        }
    }

    /// Passes the held bytes on as they came.
    fn release(&mut self) {
        if let Some(form) = self.seen.take().filter(|f| !f.is_empty()) {
            self.ready = Some(Bytes::from(form));
        }
    }
}

/// `form` with `${filename}` in the `key` field's value (at `span`) replaced by the file's
/// name, as S3 replaces it ([`base_name`]).
fn with_file_name(form: Vec<u8>, (start, end): (usize, usize), file_name: &str) -> Vec<u8> {
    let Ok(key) = std::str::from_utf8(&form[start..end]) else {
        return form;
    };
    if !key.contains(FILENAME) {
        return form;
    }
    let key = key.replace(FILENAME, base_name(file_name));
    [&form[..start], key.as_bytes(), &form[end..]].concat()
}

impl<B> Body for FileNameWatch<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        loop {
            if let Some(form) = self.ready.take() {
                return Poll::Ready(Some(Ok(Frame::data(form))));
            }
            if let Some(trailers) = self.trailers.take() {
                return Poll::Ready(Some(Ok(trailers)));
            }
            if self.ended {
                return Poll::Ready(None);
            }
            if self.seen.is_none() {
                return Pin::new(&mut self.inner).poll_frame(cx);
            }
            match std::task::ready!(Pin::new(&mut self.inner).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => self.look(&data),
                    Err(trailers) => {
                        self.release();
                        self.trailers = Some(trailers);
                    }
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                // The form ended while held: what was held goes on, then the end.
                None => {
                    self.release();
                    self.ended = true;
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.ready.is_none()
            && self.trailers.is_none()
            && (self.ended || (self.seen.is_none() && self.inner.is_end_stream()))
    }

    fn size_hint(&self) -> SizeHint {
        // The key may change length when `${filename}` is replaced.
        SizeHint::default()
    }
}

/// What the form read so far says of its file part.
#[derive(Debug, PartialEq, Eq)]
enum Scan {
    /// Its headers have not all arrived yet.
    More,
    /// The part named `file` (as s3s finds it: any case), and its `filename`, if any.
    Found(Option<String>),
    /// The form ended without one.
    NoFile,
}

/// Where a scan of a form stands between frames.
#[derive(Default)]
struct Place {
    /// A delimiter's start, or the start of a part's value, or 0.
    at: usize,
    /// The name of the part whose value starts at `at`.
    part: Option<String>,
    /// The fields kept from the parts read whole.
    fields: FormFields,
    /// Where the first `key` field's value lies in the form.
    key: Option<(usize, usize)>,
}

impl Place {
    /// Done with the part whose value is `value`, which starts at `start` in the form.
    fn finish_part(&mut self, start: usize, value: &[u8]) {
        if let Some(name) = self.part.take() {
            if name.eq_ignore_ascii_case("key") && self.key.is_none() {
                self.key = Some((start, start + value.len()));
            }
            self.fields.keep(&name, value);
        }
    }
}

/// Finds the file part's headers in a form's first bytes (`delimiter` is `--` and the boundary).
#[cfg(test)]
fn file_part(form: &[u8], delimiter: &[u8]) -> (Scan, FormFields) {
    let mut place = Place::default();
    let scan = scan_from(form, delimiter, &mut place);
    (scan, place.fields)
}

/// [`file_part`] from `place`, which it leaves at the part whose headers are not all there yet;
/// the values of the parts read whole on the way are kept if they are fields s3s does not read.
fn scan_from(form: &[u8], delimiter: &[u8], place: &mut Place) -> Scan {
    loop {
        let at_now = place.at;
        let Some(p) = find(&form[at_now..], delimiter) else {
            return Scan::More;
        };
        let after = at_now + p + delimiter.len();
        // The part before this delimiter ends here; its value is kept once, when the scan moves
        // past it (below, or at the form's end).
        let value = &form[at_now..at_now + p];
        let value = value.strip_suffix(b"\r\n").unwrap_or(value);
        match form.get(after..after + 2) {
            None => return Scan::More,
            Some(b"--") => {
                place.finish_part(at_now, value);
                return Scan::NoFile;
            }
            Some(_) => {}
        }
        let Some(end) = find(&form[after..], b"\r\n\r\n") else {
            return Scan::More;
        };
        place.finish_part(at_now, value);
        let headers = String::from_utf8_lossy(&form[after..after + end]);
        let part = disposition(&headers);
        if let Some((name, file_name)) = &part {
            if name.eq_ignore_ascii_case("file") {
                return Scan::Found(file_name.clone());
            }
        }
        place.part = part.map(|(name, _)| name);
        place.at = after + end + 4;
    }
}

/// The `name` and `filename` of a part's `Content-Disposition`.
fn disposition(headers: &str) -> Option<(String, Option<String>)> {
    let value = headers.split("\r\n").find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.trim().eq_ignore_ascii_case("content-disposition").then_some(v)
    })?;
    let mut name = None;
    let mut file_name = None;
    for param in value.split(';').skip(1) {
        let Some((k, v)) = param.split_once('=') else { continue };
        let v = v.trim();
        let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
        match k.trim().to_ascii_lowercase().as_str() {
            "name" => name = Some(v.to_owned()),
            "filename" => file_name = Some(v.to_owned()),
            _ => {}
        }
    }
    Some((name?, file_name))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// The largest error document [`policy_refusal`] reads to find its code.
const MAX_ERROR_DOC: usize = 16 * 1024;

/// The answer to a form upload: a form whose field breaks a condition of its signed policy is
/// refused with 403 `AccessDenied`, as S3 refuses it (s3s answers 400 `InvalidPolicyDocument`,
/// S3's answer to a policy that is not well formed, which stays so); the key is renamed in
/// the answer where `${filename}` was replaced (see [`rename_answer`]); a 200, 201 or 204
/// names the object's URL in `Location`, as S3's does (s3s sends none, and writes `/bucket/key`
/// into the 201 document), which browser upload scripts read to link what they uploaded.
pub(crate) async fn form_answer(resp: Response<s3s::Body>, upload: &FormUpload) -> Response<s3s::Body> {
    // s3s checks a policy's conditions before anything reaches the access hook, which refuses
    // incomplete signing; S3 names the missing signature whatever the conditions say.
    let refusal = upload.fields.get().and_then(FormFields::signing_refusal);
    if let Some((code, message)) = refusal.filter(|_| resp.status().is_client_error()) {
        let doc = error_document(code, &xml_escape(&message), "");
        let (mut parts, _) = resp.into_parts();
        parts.status = http::StatusCode::BAD_REQUEST;
        parts
            .headers
            .insert(http::header::CONTENT_LENGTH, HeaderValue::from(doc.len()));
        return Response::from_parts(parts, s3s::Body::from(doc));
    }
    if resp.status() == http::StatusCode::BAD_REQUEST {
        return policy_refusal(resp).await;
    }
    let mut resp = rename_answer(resp, upload).await;
    let done = [
        http::StatusCode::OK,
        http::StatusCode::CREATED,
        http::StatusCode::NO_CONTENT,
    ];
    if let Some(url) = upload.object_url().filter(|_| done.contains(&resp.status())) {
        if let Ok(v) = HeaderValue::from_str(&url) {
            resp.headers_mut().insert(http::header::LOCATION, v);
        }
    }
    resp
}

/// Where the text of `doc`'s first `<name>` element starts, and its length.
fn element_text(doc: &str, name: &str) -> Option<(usize, usize)> {
    let start = doc.find(&format!("<{name}>"))? + name.len() + 2;
    let len = doc[start..].find(&format!("</{name}>"))?;
    Some((start, len))
}

/// `doc` with the text of its first `<name>` element replaced by `value` (already escaped).
fn replace_element(doc: &str, name: &str, value: &str) -> String {
    match element_text(doc, name) {
        Some((start, len)) => format!("{}{value}{}", &doc[..start], &doc[start + len..]),
        None => doc.to_owned(),
    }
}

/// A 400 `InvalidPolicyDocument` whose message says a policy condition failed, as 403
/// `AccessDenied` "Invalid according to Policy"; any other answer unchanged.
async fn policy_refusal(resp: Response<s3s::Body>) -> Response<s3s::Body> {
    let (mut parts, body) = resp.into_parts();
    let doc = match http_body_util::Limited::new(body, MAX_ERROR_DOC).collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => return Response::from_parts(parts, s3s::Body::empty()),
    };
    let text = String::from_utf8_lossy(&doc);
    let failed = text.contains("<Code>InvalidPolicyDocument</Code>") && text.contains("<Message>Policy condition ");
    if !failed {
        return Response::from_parts(parts, s3s::Body::from(doc));
    }
    let message = text
        .split("<Message>")
        .nth(1)
        .and_then(|m| m.split("</Message>").next())
        .unwrap_or_default();
    // s3s checks the conditions before it looks for the key: a form without one fails the key's
    // condition first, where S3 answers that the key is missing.
    if message.contains("field &apos;key&apos; failed") && message.ends_with("got &apos;&apos;") {
        let missing = error_document(
            "InvalidArgument",
            "Bucket POST must contain a field named &apos;key&apos;.",
            "",
        );
        parts
            .headers
            .insert(http::header::CONTENT_LENGTH, HeaderValue::from(missing.len()));
        return Response::from_parts(parts, s3s::Body::from(missing));
    }
    let refused = error_document("AccessDenied", &format!("Invalid according to Policy: {message}"), "");
    parts.status = http::StatusCode::FORBIDDEN;
    parts
        .headers
        .insert(http::header::CONTENT_LENGTH, HeaderValue::from(refused.len()));
    Response::from_parts(parts, s3s::Body::from(refused))
}

/// The answer to a form upload as S3 gives it. s3s writes the form's spelling of the key into
/// the 201 document and the 303 `Location`, where S3 names the key written (`${filename}`
/// replaced), and the ETag without its quotes, where S3 sends `"…"` (`etag=%22…%22` in the
/// `Location`; browsers' scripts and ceph's s3-tests compare them with the object's ETag).
async fn rename_answer(resp: Response<s3s::Body>, upload: &FormUpload) -> Response<s3s::Body> {
    let renamed = match (upload.renamed.get(), upload.file_name.get()) {
        (Some((form_key, key)), Some(Some(name))) => Some((form_key.as_str(), key.as_str(), name.as_str())),
        _ => None,
    };
    match resp.status() {
        http::StatusCode::SEE_OTHER => {
            let (mut parts, body) = resp.into_parts();
            let relocated = parts
                .headers
                .get(http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| url::Url::parse(v).ok())
                .and_then(|mut url| {
                    let pairs: Vec<(String, String)> = url
                        .query_pairs()
                        .map(|(k, v)| {
                            let v = match (k.as_ref(), renamed) {
                                ("key", Some((form_key, key, _))) if v == form_key => key.to_owned(),
                                ("etag", _) => quoted(&v),
                                _ => v.into_owned(),
                            };
                            (k.into_owned(), v)
                        })
                        .collect();
                    url.query_pairs_mut().clear().extend_pairs(pairs);
                    HeaderValue::from_str(url.as_str()).ok()
                });
            if let Some(v) = relocated {
                parts.headers.insert(http::header::LOCATION, v);
            }
            Response::from_parts(parts, body)
        }
        http::StatusCode::CREATED => {
            let (mut parts, body) = resp.into_parts();
            let Ok(collected) = body.collect().await else {
                return Response::from_parts(parts, s3s::Body::empty());
            };
            let mut doc = String::from_utf8_lossy(&collected.to_bytes()).into_owned();
            if let Some((_, _, name)) = renamed {
                // The form's spelling differs from the key only where `${filename}` stood, which
                // needs no escaping in XML; the name put there does.
                doc = doc.replace(FILENAME, &xml_escape(base_name(name)));
            }
            doc = quote_etag_element(&doc);
            if let Some(url) = upload.object_url() {
                doc = replace_element(&doc, "Location", &xml_escape(&url));
            }
            parts
                .headers
                .insert(http::header::CONTENT_LENGTH, HeaderValue::from(doc.len()));
            Response::from_parts(parts, s3s::Body::from(doc))
        }
        _ => resp,
    }
}

/// An ETag value with S3's quotes (unchanged if it has them).
fn quoted(etag: &str) -> String {
    if etag.starts_with('"') {
        etag.to_owned()
    } else {
        format!("\"{etag}\"")
    }
}

/// A 201 form answer's document with its `<ETag>` value quoted.
fn quote_etag_element(doc: &str) -> String {
    let Some((start, len)) = element_text(doc, "ETag") else {
        return doc.to_owned();
    };
    let value = &doc[start..start + len];
    if value.starts_with('"') || value.starts_with("&quot;") {
        return doc.to_owned();
    }
    format!("{}\"{value}\"{}", &doc[..start], &doc[start + len..])
}

/// `s` with XML's five special characters escaped.
pub(crate) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORM: &[u8] = b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nup/${filename}\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"ACL\"\r\n\r\npublic-read\r\n\
--XyZ\r\nContent-Disposition: form-data; name=\"tagging\"\r\n\r\n<Tagging><TagSet><Tag><Key>a b</Key><Value>1&amp;2</Value></Tag></TagSet></Tagging>\r\n\
--XyZ\r\ncontent-disposition: form-data; name=\"File\"; filename=\"photo 1.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n\
bytes--XyZ--\r\n";

    fn form_fields() -> FormFields {
        FormFields {
            acl: Some("public-read".into()),
            tagging: Some("<Tagging><TagSet><Tag><Key>a b</Key><Value>1&amp;2</Value></Tag></TagSet></Tagging>".into()),
            ..FormFields::default()
        }
    }

    #[test]
    fn the_file_part_is_found_however_the_bytes_arrive() {
        assert_eq!(
            file_part(FORM, b"--XyZ"),
            (Scan::Found(Some("photo 1.jpg".into())), form_fields())
        );
        let headers_end = find(FORM, b"image/jpeg\r\n\r\n").unwrap() + 14;
        for cut in 0..headers_end {
            assert_eq!(file_part(&FORM[..cut], b"--XyZ").0, Scan::More, "cut at {cut}");
        }
        let none = b"--XyZ\r\nContent-Disposition: form-data; name=\"acl\"\r\n\r\nprivate\r\n--XyZ--\r\n";
        let only_acl = FormFields {
            acl: Some("private".into()),
            ..FormFields::default()
        };
        assert_eq!(file_part(none, b"--XyZ"), (Scan::NoFile, only_acl));
        let unnamed = b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nx";
        assert_eq!(file_part(unnamed, b"--XyZ"), (Scan::Found(None), FormFields::default()));
    }

    #[test]
    fn form_fields_become_the_upload_s_acl_and_tags() {
        let upload = FormUpload::default();
        let _ = upload.fields.set(form_fields());
        let mut input = PostObjectInput::builder()
            .bucket("b".into())
            .key("k".into())
            .build()
            .unwrap();
        upload.apply_fields(&mut input).unwrap();
        assert_eq!(input.acl.as_ref().map(ObjectCannedACL::as_str), Some("public-read"));
        assert_eq!(input.tagging.as_deref(), Some("a%20b=1%262"));
        let bad = FormUpload::default();
        let _ = bad.fields.set(FormFields {
            tagging: Some("<Tagging><TagSet>".into()),
            ..FormFields::default()
        });
        input.tagging = None;
        let e = bad.apply_fields(&mut input).unwrap_err();
        assert_eq!(e.code().as_str(), "MalformedXML");
    }

    #[test]
    fn the_watch_finds_the_name_in_frames_of_any_size() {
        for frame in [1, 2, 7, 64, FORM.len()] {
            let upload = Arc::new(FormUpload::default());
            let mut w = FileNameWatch {
                inner: (),
                seen: Some(Vec::new()),
                place: Place::default(),
                delimiter: b"--XyZ".to_vec(),
                upload: upload.clone(),
                ready: None,
                trailers: None,
                ended: false,
            };
            let mut passed = Vec::new();
            for chunk in FORM.chunks(frame) {
                w.look(&Bytes::copy_from_slice(chunk));
                passed.extend(w.ready.take().unwrap_or_default());
            }
            // What was held goes on with the file's name in the key, and nothing else changed.
            let want = String::from_utf8_lossy(FORM).replace("up/${filename}", "up/photo 1.jpg");
            assert_eq!(
                String::from_utf8_lossy(&passed),
                want[..passed.len()],
                "frames of {frame}"
            );
            assert_eq!(
                upload.file_name.get(),
                Some(&Some("photo 1.jpg".to_owned())),
                "frames of {frame}"
            );
            assert_eq!(upload.fields.get(), Some(&form_fields()), "frames of {frame}");
            assert!(w.seen.is_none(), "the buffer is dropped once the name is known");
        }
    }

    #[test]
    fn form_answers_quote_the_etag_as_s3_does() {
        assert_eq!(quoted("abc"), "\"abc\"");
        assert_eq!(quoted("\"abc\""), "\"abc\"");
        let doc = "<PostResponse><Bucket>b</Bucket><Key>k</Key><ETag>abc</ETag></PostResponse>";
        assert_eq!(
            quote_etag_element(doc),
            "<PostResponse><Bucket>b</Bucket><Key>k</Key><ETag>\"abc\"</ETag></PostResponse>"
        );
        let quoted_doc = quote_etag_element(doc);
        assert_eq!(quote_etag_element(&quoted_doc), quoted_doc, "quoted once");
        assert_eq!(quote_etag_element("<Error/>"), "<Error/>");
    }

    #[test]
    fn boundaries_come_from_form_content_types_only() {
        assert_eq!(boundary_of("multipart/form-data; boundary=XyZ").as_deref(), Some("XyZ"));
        assert_eq!(
            boundary_of("Multipart/Form-Data;boundary=\"a b\"").as_deref(),
            Some("a b")
        );
        assert_eq!(boundary_of("multipart/mixed; boundary=XyZ"), None);
        assert_eq!(boundary_of("multipart/form-data"), None);
    }

    /// The body s3s reads: every byte of the form in order, the key's `${filename}` replaced,
    /// however the form's frames are cut, and a form without a file part unchanged.
    #[tokio::test]
    async fn the_watched_body_passes_the_form_on_with_the_name_in_the_key() {
        for frame in [1, 5, 64, FORM.len()] {
            for (form, want) in [
                (
                    FORM.to_vec(),
                    String::from_utf8_lossy(FORM).replace("${filename}", "photo 1.jpg"),
                ),
                (
                    b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n${filename}\r\n--XyZ--\r\n".to_vec(),
                    String::new(),
                ),
            ] {
                let want = if want.is_empty() {
                    String::from_utf8_lossy(&form).into_owned()
                } else {
                    want
                };
                let frames: Vec<Result<Frame<Bytes>, std::convert::Infallible>> = form
                    .chunks(frame)
                    .map(|c| Ok(Frame::data(Bytes::copy_from_slice(c))))
                    .collect();
                let inner = http_body_util::StreamBody::new(futures::stream::iter(frames));
                let w = FileNameWatch {
                    inner,
                    seen: Some(Vec::new()),
                    place: Place::default(),
                    delimiter: b"--XyZ".to_vec(),
                    upload: Arc::new(FormUpload::default()),
                    ready: None,
                    trailers: None,
                    ended: false,
                };
                let got = w.collect().await.unwrap().to_bytes();
                assert_eq!(String::from_utf8_lossy(&got), want, "frames of {frame}");
            }
        }
    }

    #[test]
    fn incomplete_signing_and_loose_expirations_are_refused() {
        use base64::Engine;
        let policy = |exp: &str| {
            base64::engine::general_purpose::STANDARD.encode(format!(r#"{{"expiration":"{exp}","conditions":[]}}"#))
        };
        let fields = |policy: Option<String>, signature, credential| FormFields {
            policy,
            signature,
            credential,
            ..FormFields::default()
        };
        let good = Some(policy("2030-01-01T00:00:00.000Z"));
        assert_eq!(
            fields(good.clone(), Some(Signing::V2), Some(Signing::V2)).signing_refusal(),
            None
        );
        assert_eq!(
            fields(None, None, None).signing_refusal(),
            None,
            "anonymous forms are the access check's"
        );
        let missing = fields(good.clone(), None, Some(Signing::V2)).signing_refusal().unwrap();
        assert_eq!(missing.0, "InvalidArgument");
        assert!(missing.1.contains("named 'Signature'"), "{}", missing.1);
        let v4 = fields(good.clone(), None, Some(Signing::V4)).signing_refusal().unwrap();
        assert!(v4.1.contains("'X-Amz-Signature'"), "{}", v4.1);
        assert!(
            fields(good, None, None).signing_refusal().is_some(),
            "a policy needs a signature"
        );
        let loose = fields(
            Some(policy("2030-01-01 00:00:00+00:00")),
            Some(Signing::V2),
            Some(Signing::V2),
        );
        assert_eq!(loose.signing_refusal().unwrap().0, "InvalidPolicyDocument");
    }

    #[test]
    fn the_key_names_the_file_only_where_the_form_asks() {
        let u = FormUpload::default();
        u.file_name.set(Some("a&b.txt".into())).unwrap();
        assert_eq!(u.key_for("plain"), "plain");
        assert!(u.renamed.get().is_none());
        assert_eq!(u.key_for("up/${filename}"), "up/a&b.txt");
        assert_eq!(u.renamed.get().unwrap().1, "up/a&b.txt");
        let unnamed = FormUpload::default();
        unnamed.file_name.set(None).unwrap();
        assert_eq!(unnamed.key_for("up/${filename}"), "up/${filename}");
        for path in ["C:\\Program Files\\dir\\file.txt", "home/me/file.txt", "file.txt"] {
            let u = FormUpload::default();
            u.file_name.set(Some(path.into())).unwrap();
            assert_eq!(u.key_for("up/${filename}"), "up/file.txt", "{path}");
        }
    }
}
