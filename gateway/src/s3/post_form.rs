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
//! - the answer (201's document, 303's `Location`) names the key written ([`rename_answer`]).

use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{HeaderValue, Request, Response};
use http_body::{Body, Frame, SizeHint};
use http_body_util::BodyExt;

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
}

impl FormUpload {
    /// The key to write for the form's `key`: `${filename}` replaced by the file part's name.
    /// Records the change for the answer.
    pub(crate) fn key_for(&self, form_key: &str) -> String {
        let Some(Some(name)) = self.file_name.get() else {
            return form_key.to_owned();
        };
        if !form_key.contains(FILENAME) {
            return form_key.to_owned();
        }
        let key = form_key.replace(FILENAME, name);
        let _ = self.renamed.set((form_key.to_owned(), key.clone()));
        key
    }
}

/// For a browser-form upload (POST to a bucket, no query, a multipart form): watches its body
/// for the file part's name and puts the shared [`FormUpload`] in the request's extensions.
/// Other requests pass through untouched.
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
        scanned: 0,
        delimiter: [b"--".as_slice(), boundary.as_bytes()].concat(),
        upload: upload.clone(),
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

/// A form body that records the file part's name as the bytes before it go by.
struct FileNameWatch<B> {
    inner: B,
    /// The form so far; dropped once the file part's headers were read (or could not be).
    seen: Option<Vec<u8>>,
    /// Where in `seen` the scan goes on: the parts before it were read whole, so a frame costs
    /// a look at what is new, not the whole form again.
    scanned: usize,
    /// `--` and the boundary.
    delimiter: Vec<u8>,
    upload: Arc<FormUpload>,
}

impl<B> FileNameWatch<B> {
    fn look(&mut self, data: &Bytes) {
        let Some(seen) = self.seen.as_mut() else { return };
        seen.extend_from_slice(data);
        match scan_from(seen, &self.delimiter, &mut self.scanned) {
            Scan::More if seen.len() <= MAX_WATCHED => {}
            Scan::Found(name) => {
                let _ = self.upload.file_name.set(name);
                self.seen = None;
            }
            Scan::More | Scan::NoFile => self.seen = None,
        }
    }
}

impl<B> Body for FileNameWatch<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let Poll::Ready(Some(Ok(frame))) = &polled {
            if let Some(data) = frame.data_ref() {
                self.look(data);
            }
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
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

/// Finds the file part's headers in a form's first bytes (`delimiter` is `--` and the boundary).
#[cfg(test)]
fn file_part(form: &[u8], delimiter: &[u8]) -> Scan {
    scan_from(form, delimiter, &mut 0)
}

/// [`file_part`] from offset `at` (a delimiter's start, or 0), which it leaves at the part whose
/// headers are not all there yet.
fn scan_from(form: &[u8], delimiter: &[u8], at: &mut usize) -> Scan {
    loop {
        let at_now = *at;
        let Some(p) = find(&form[at_now..], delimiter) else {
            return Scan::More;
        };
        let after = at_now + p + delimiter.len();
        match form.get(after..after + 2) {
            None => return Scan::More,
            Some(b"--") => return Scan::NoFile,
            Some(_) => {}
        }
        let Some(end) = find(&form[after..], b"\r\n\r\n") else {
            return Scan::More;
        };
        let headers = String::from_utf8_lossy(&form[after..after + end]);
        if let Some((name, file_name)) = disposition(&headers) {
            if name.eq_ignore_ascii_case("file") {
                return Scan::Found(file_name);
            }
        }
        *at = after + end + 4;
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

/// The answer to a form upload whose key had `${filename}` replaced, naming the key written:
/// s3s writes the form's spelling into the 201 document and the 303 `Location`.
pub(crate) async fn rename_answer(resp: Response<s3s::Body>, upload: &FormUpload) -> Response<s3s::Body> {
    let (Some((form_key, key)), Some(Some(name))) = (upload.renamed.get(), upload.file_name.get()) else {
        return resp;
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
                            let v = if k == "key" && v == form_key.as_str() {
                                key.clone()
                            } else {
                                v.into_owned()
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
            // The form's spelling differs from the key only where `${filename}` stood, which
            // needs no escaping in XML; the name put there does.
            let doc = String::from_utf8_lossy(&collected.to_bytes()).replace(FILENAME, &xml_escape(name));
            parts
                .headers
                .insert(http::header::CONTENT_LENGTH, HeaderValue::from(doc.len()));
            Response::from_parts(parts, s3s::Body::from(doc))
        }
        _ => resp,
    }
}

fn xml_escape(s: &str) -> String {
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
--XyZ\r\ncontent-disposition: form-data; name=\"File\"; filename=\"photo 1.jpg\"\r\nContent-Type: image/jpeg\r\n\r\n\
bytes--XyZ--\r\n";

    #[test]
    fn the_file_part_is_found_however_the_bytes_arrive() {
        assert_eq!(file_part(FORM, b"--XyZ"), Scan::Found(Some("photo 1.jpg".into())));
        let headers_end = find(FORM, b"image/jpeg\r\n\r\n").unwrap() + 14;
        for cut in 0..headers_end {
            assert_eq!(file_part(&FORM[..cut], b"--XyZ"), Scan::More, "cut at {cut}");
        }
        let none = b"--XyZ\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--XyZ--\r\n";
        assert_eq!(file_part(none, b"--XyZ"), Scan::NoFile);
        let unnamed = b"--XyZ\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nx";
        assert_eq!(file_part(unnamed, b"--XyZ"), Scan::Found(None));
    }

    #[test]
    fn the_watch_finds_the_name_in_frames_of_any_size() {
        for frame in [1, 2, 7, 64, FORM.len()] {
            let upload = Arc::new(FormUpload::default());
            let mut w = FileNameWatch {
                inner: (),
                seen: Some(Vec::new()),
                scanned: 0,
                delimiter: b"--XyZ".to_vec(),
                upload: upload.clone(),
            };
            for chunk in FORM.chunks(frame) {
                w.look(&Bytes::copy_from_slice(chunk));
            }
            assert_eq!(
                upload.file_name.get(),
                Some(&Some("photo 1.jpg".to_owned())),
                "frames of {frame}"
            );
            assert!(w.seen.is_none(), "the buffer is dropped once the name is known");
        }
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
    }
}
