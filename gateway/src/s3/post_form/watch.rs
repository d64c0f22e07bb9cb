//! The body of a browser-form upload, watched as s3s reads it: the file part's name, the fields
//! s3s does not read, and `${filename}` put in place in the key before s3s sees it.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::Request;
use http_body::{Body, Frame, SizeHint};

use super::{base_name, FormFields, FormUpload, FILENAME};

/// Form bytes watched for the file part's headers at most. A form's fields are small (a policy,
/// a signature, a few values); one whose fields run past this keeps `${filename}` as written,
/// and what a request can make this layer hold stays bounded (s3s takes up to 20 MB of fields).
const MAX_WATCHED: usize = 1 << 20;

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

#[cfg(test)]
mod tests {
    use super::super::tests::{form_fields, FORM};
    use super::*;
    use http_body_util::BodyExt;

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
}
