//! Object attributes sent as raw bytes: a `Content-Disposition` with a UTF-8 file name
//! (`attachment; filename="résumé.pdf"`), and the like; and an `Expires` that is no HTTP date.
//!
//! HTTP allows bytes past ASCII in header values (obs-text), clients send UTF-8 there, and S3
//! stores and returns such values as they came (botocore's own integration tests set one). s3s
//! reads these headers as visible ASCII while it decodes the operation's input, so it refused
//! the upload with 400 "invalid header". The headers are signed, so they cannot be changed
//! before the signature is checked.
//!
//! `Expires` is the same case: s3s reads it as an HTTP date and refuses anything else, while S3
//! stores whatever text the header holds and answers it as it came (the AWS SDKs read it into
//! `ExpiresString` where it is no date). libs3 sends `Tue, 01 Jan 2030 00:00:00 UTC`; web
//! frameworks send `0` or `-1`, as HTTP lets caches read an invalid date as already expired.
//!
//! The second-pass route (`ignored_headers.rs`) takes such a write after s3s verified its
//! signature, takes the values out of the headers into [`RawAttrs`] and dispatches the request
//! once more without them; the handlers store what [`RawAttrs`] holds
//! (`AttrInput::with_raw`). A body s3s already decoded (aws-chunked) goes on decoded, and its
//! verified trailers go with it in [`CarriedTrailers`], so checksums sent in trailers are still
//! checked.

use http::header::{
    HeaderName, CACHE_CONTROL, CONTENT_DISPOSITION, CONTENT_ENCODING, CONTENT_LANGUAGE, CONTENT_TYPE, EXPIRES,
};
use http::HeaderMap;

/// The object attributes a write sends in headers whose values s3s reads as ASCII only.
const ATTR_HEADERS: [HeaderName; 5] = [
    CONTENT_DISPOSITION,
    CONTENT_TYPE,
    CONTENT_LANGUAGE,
    CACHE_CONTROL,
    CONTENT_ENCODING,
];

/// Attribute values taken out of a write's headers because they are not ASCII, as text.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RawAttrs {
    pub content_type: Option<String>,
    pub content_encoding: Option<String>,
    pub content_disposition: Option<String>,
    pub content_language: Option<String>,
    pub cache_control: Option<String>,
    /// An `Expires` that is not an HTTP date, as its text (never empty).
    pub expires: Option<String>,
}

/// The trailers s3s verified on the first pass of a write that goes through the second
/// (see the module's doc): the handler reads them here when its own request has none.
#[derive(Debug, Clone)]
pub(crate) struct CarriedTrailers(pub s3s::TrailingHeaders);

/// Whether a write's headers hold an attribute value s3s cannot read (bytes past ASCII, or an
/// `Expires` that is no HTTP date).
pub(crate) fn unreadable(headers: &HeaderMap) -> bool {
    ATTR_HEADERS
        .iter()
        .any(|n| headers.get(n).is_some_and(|v| v.to_str().is_err()))
        || headers.get(EXPIRES).is_some_and(|v| !is_http_date(v))
}

/// Whether `v` is a date as s3s reads `Expires` (an IMF-fixdate).
fn is_http_date(v: &http::HeaderValue) -> bool {
    v.to_str().ok().and_then(super::object::parse_http_date).is_some()
}

/// Takes the attribute values s3s cannot read out of `headers`.
pub(crate) fn take(headers: &mut HeaderMap) -> RawAttrs {
    let mut raw = RawAttrs::default();
    for name in ATTR_HEADERS {
        if headers.get(&name).is_none_or(|v| v.to_str().is_ok()) {
            continue;
        }
        let Some(value) = headers.remove(&name) else { continue };
        let text = Some(text(value.as_bytes()));
        match name {
            n if n == CONTENT_DISPOSITION => raw.content_disposition = text,
            n if n == CONTENT_TYPE => raw.content_type = text,
            n if n == CONTENT_LANGUAGE => raw.content_language = text,
            n if n == CACHE_CONTROL => raw.cache_control = text,
            _ => raw.content_encoding = text,
        }
    }
    if headers.get(EXPIRES).is_some_and(|v| !is_http_date(v)) {
        // An empty value sets nothing, as no header would.
        raw.expires = headers
            .remove(EXPIRES)
            .map(|v| text(v.as_bytes()).trim().to_owned())
            .filter(|t| !t.is_empty());
    }
    raw
}

/// A header value as text: UTF-8 where it is, else each byte as its Latin-1 character (what
/// HTTP's obs-text historically meant), so no value is refused or lost.
fn text(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(s) => s.to_owned(),
        Err(_) => bytes.iter().map(|&b| char::from(b)).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_past_ascii_are_taken_as_text() {
        let mut h = HeaderMap::new();
        let utf8 = "attachment; filename=\"5小時接力起跑.jpg\";";
        h.insert(
            CONTENT_DISPOSITION,
            http::HeaderValue::from_bytes(utf8.as_bytes()).unwrap(),
        );
        h.insert(CONTENT_LANGUAGE, http::HeaderValue::from_bytes(b"fran\xe7ais").unwrap());
        h.insert(CONTENT_TYPE, "text/plain".parse().unwrap());
        assert!(unreadable(&h));
        let raw = take(&mut h);
        assert_eq!(raw.content_disposition.as_deref(), Some(utf8));
        assert_eq!(
            raw.content_language.as_deref(),
            Some("français"),
            "Latin-1 where not UTF-8"
        );
        assert_eq!(raw.content_type, None, "ASCII values stay for s3s");
        assert_eq!(h.get(CONTENT_TYPE).unwrap(), "text/plain");
        assert!(h.get(CONTENT_DISPOSITION).is_none() && !unreadable(&h));
    }

    #[test]
    fn expires_that_is_no_date_is_taken_as_text() {
        let mut h = HeaderMap::new();
        h.insert(EXPIRES, "Tue, 01 Jan 2030 00:00:00 GMT".parse().unwrap());
        assert!(!unreadable(&h), "an HTTP date stays for s3s");
        assert_eq!(take(&mut h).expires, None);
        assert!(h.get(EXPIRES).is_some());
        for (sent, kept) in [
            ("Tue, 01 Jan 2030 00:00:00 UTC", Some("Tue, 01 Jan 2030 00:00:00 UTC")),
            ("0", Some("0")),
            ("-1", Some("-1")),
            ("2030-01-01T00:00:00Z", Some("2030-01-01T00:00:00Z")),
            ("", None),
        ] {
            let mut h = HeaderMap::new();
            h.insert(EXPIRES, sent.parse().unwrap());
            assert!(unreadable(&h), "{sent:?}");
            assert_eq!(take(&mut h).expires.as_deref(), kept, "{sent:?}");
            assert!(h.get(EXPIRES).is_none() && !unreadable(&h), "{sent:?}");
        }
    }
}
