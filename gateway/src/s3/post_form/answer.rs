//! The answer to a browser-form upload, as S3 gives it: policy refusals, the key written and
//! its URL, the ETag quoted.

use http::{HeaderValue, Response};
use http_body_util::BodyExt;

use super::{base_name, FormFields, FormUpload, FILENAME};
use crate::s3::error_document;

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
    // incomplete signing; S3 names the missing signature whatever the conditions say. (A policy
    // that leaves the bucket uncovered is refused by the hook alone, as one uncovered field
    // among any others s3s found first.)
    let refusal = upload.fields.get().and_then(FormFields::signing_refusal);
    let refusal = refusal.filter(|(code, _)| *code != "AccessDenied");
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

/// `s` with XML's five special characters escaped and carriage returns written as `&#13;`.
pub(crate) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
        .replace('\r', "&#13;")
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
