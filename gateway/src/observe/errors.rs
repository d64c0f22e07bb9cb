//! Error answers as S3 writes them: the code read back for logs and metrics, a `<Message>`
//! where s3s gave none, the request id and what was not found, bodiless refusals of HEAD, and
//! GetObjectAttributes' bare ETag.

use bytes::Bytes;
use http::{HeaderValue, Response};
use http_body_util::BodyExt;
use s3s::Body;

use super::{InfoSlot, RequestInfo};

/// Error responses are small XML documents; the code is read from them for metrics and logs.
pub(super) const MAX_ERROR_BODY: usize = 64 * 1024;

/// The largest GetObjectAttributes document read whole: one with 1,000 parts (its most per page)
/// is ~250 KiB.
pub(super) const MAX_ATTRIBUTES_BODY: usize = 8 << 20;

/// A refusal of a HEAD request as S3 sends it: the error document's length in
/// `Content-Length` but no body (HTTP/1.1's codec drops a HEAD answer's body itself; over
/// HTTP/2 it would go out as DATA frames, which Go's client refuses as a protocol error), and,
/// for HeadBucket, the region in `x-amz-bucket-region`, which S3 gives even to a caller it
/// refuses: SDKs find a bucket's region so (the AWS SDK for Go's `manager.GetBucketRegion`
/// asks unsigned). Every bucket here is in the gateway's one region, so it tells nothing else.
pub(super) fn head_refusal(resp: &mut Response<Body>, slot: &InfoSlot, region: &str) {
    *resp.body_mut() = Body::empty();
    let bucket_refused =
        resp.status() == http::StatusCode::FORBIDDEN && slot.0.lock().is_ok_and(|i| i.operation == "HeadBucket");
    if bucket_refused {
        if let Ok(v) = HeaderValue::from_str(region) {
            resp.headers_mut().insert("x-amz-bucket-region", v);
        }
    }
}

pub(super) fn error_code(xml: &[u8]) -> Option<String> {
    let s = std::str::from_utf8(xml).ok()?;
    let start = s.find("<Code>")? + "<Code>".len();
    let end = s[start..].find("</Code>")? + start;
    Some(s[start..end].to_owned())
}

/// The elements S3 adds to an error document from the request itself: `<BucketName>` or
/// `<Key>` for what was not there or in the way (a copy's missing key is its source's, which S3
/// names; a copy's missing bucket may be either, so it is not named), and a path key's length
/// where it is too long.
pub(super) fn detail_of(code: &str, info: &RequestInfo) -> Option<String> {
    let element = |tag: &str, value: &str| format!("<{tag}>{}</{tag}>", crate::s3::post_form::xml_escape(value));
    if code == "KeyTooLongError" {
        return info.long_path_key.map(crate::s3::key_too_long_detail);
    }
    if matches!(info.operation.as_str(), "CopyObject" | "UploadPartCopy") {
        let key = info.copy_source_key.as_ref().filter(|_| code == "NoSuchKey")?;
        return Some(element("Key", key));
    }
    let (tag, value) = match code {
        "NoSuchKey" => ("Key", info.key.as_ref()?),
        // A bucket's missing configuration is named by its bucket too, as S3 names it.
        "NoSuchBucket"
        | "BucketNotEmpty"
        | "BucketAlreadyExists"
        | "BucketAlreadyOwnedByYou"
        | "InvalidBucketName"
        | "NoSuchCORSConfiguration"
        | "NoSuchLifecycleConfiguration"
        | "NoSuchTagSet"
        | "NoSuchBucketPolicy"
        | "NoSuchPublicAccessBlockConfiguration"
        | "NoSuchWebsiteConfiguration"
        | "OwnershipControlsNotFoundError"
        | "ObjectLockConfigurationNotFoundError"
        | "ReplicationConfigurationNotFoundError"
        | "ServerSideEncryptionConfigurationNotFoundError" => ("BucketName", info.bucket.as_ref()?),
        _ => return None,
    };
    Some(element(tag, value))
}

/// S3's message for an error that s3s answers with a code alone (a path it cannot parse, a
/// signature it refuses before any handler runs), so every error document has the `<Message>`
/// clients show: botocore prints "Unknown" where it is missing.
fn standard_message(code: &str) -> Option<&'static str> {
    Some(match code {
        "InvalidBucketName" => "The specified bucket is not valid.",
        "InvalidURI" => "Couldn't parse the specified URI.",
        "KeyTooLongError" => "Your key is too long.",
        "NotImplemented" => "A header you provided implies functionality that is not implemented.",
        "SignatureDoesNotMatch" => {
            "The request signature we calculated does not match the signature you provided. \
             Check your key and signing method."
        }
        "InvalidAccessKeyId" => "The AWS access key Id you provided does not exist in our records.",
        "MethodNotAllowed" => "The specified method is not allowed against this resource.",
        "IncompleteBody" => "You did not provide the number of bytes specified by the Content-Length HTTP header.",
        "MaxMessageLengthExceeded" => "Your request was too big.",
        "MalformedXML" => "The XML you provided was not well-formed or did not validate against our published schema.",
        "InternalError" => "We encountered an internal error. Please try again.",
        "MalformedPOSTRequest" => "The body of your POST request is not well-formed multipart/form-data.",
        "MissingContentLength" => "You must provide the Content-Length HTTP header.",
        "MissingRequestBodyError" => "Request Body is empty.",
        "InvalidPolicyDocument" => {
            "The content of the form does not meet the conditions specified in the policy document."
        }
        _ => return None,
    })
}

/// `<Message>` for an error document that has none and whose code has a standard message.
pub(super) fn missing_message(xml: &[u8], code: Option<&str>) -> Option<String> {
    let has = xml.windows(b"<Message>".len()).any(|w| w == b"<Message>");
    let text = standard_message(code?).filter(|_| !has)?;
    Some(format!("<Message>{text}</Message>"))
}

/// An S3 error document with the request's id in `<RequestId>`, as S3 writes it, so the id a
/// client reports from the body is the one in the `x-amz-request-id` header and in our log; and
/// `detail` (escaped XML elements, possibly none) before it. Unchanged if it has a request id
/// already.
pub(super) fn with_request_id(xml: Bytes, id: &str, detail: &str) -> Bytes {
    const END: &[u8] = b"</Error>";
    let has_id = xml.windows(b"<RequestId>".len()).any(|w| w == b"<RequestId>");
    let Some(at) = xml.windows(END.len()).rposition(|w| w == END) else {
        return xml;
    };
    if has_id {
        return xml;
    }
    let mut out = Vec::with_capacity(xml.len() + id.len() + 24);
    out.extend_from_slice(&xml[..at]);
    out.extend_from_slice(detail.as_bytes());
    out.extend_from_slice(b"<RequestId>");
    out.extend_from_slice(id.as_bytes());
    out.extend_from_slice(b"</RequestId>");
    out.extend_from_slice(&xml[at..]);
    Bytes::from(out)
}

/// Error document `xml` with `message` (plain text, escaped here) as its `<Message>`, where
/// s3s words a refusal otherwise than S3; unchanged if it has no message.
pub(super) fn with_message(xml: Bytes, message: &str) -> Bytes {
    let find = |tag: &[u8]| xml.windows(tag.len()).position(|w| w == tag);
    let (Some(open), Some(close)) = (find(b"<Message>"), find(b"</Message>")) else {
        return xml;
    };
    let start = open + b"<Message>".len();
    if close < start {
        return xml;
    }
    let mut out = Vec::with_capacity(xml.len() + message.len());
    out.extend_from_slice(&xml[..start]);
    out.extend_from_slice(crate::s3::post_form::xml_escape(message).as_bytes());
    out.extend_from_slice(&xml[close..]);
    Bytes::from(out)
}

/// A small answer body read whole (empty if it runs past `limit` or fails).
pub(super) async fn collect_small(body: Body, limit: usize) -> Bytes {
    match http_body_util::Limited::new(body, limit).collect().await {
        Ok(c) => c.to_bytes(),
        Err(_) => Bytes::new(),
    }
}

/// An answer with a rewritten body, its `Content-Length` (where it had one) made to fit.
pub(super) fn with_body(mut parts: http::response::Parts, bytes: Bytes) -> Response<Body> {
    if parts.headers.contains_key(http::header::CONTENT_LENGTH) {
        parts
            .headers
            .insert(http::header::CONTENT_LENGTH, HeaderValue::from(bytes.len()));
    }
    Response::from_parts(parts, Body::from(bytes))
}

/// A GetObjectAttributes document with its `<ETag>` value unquoted, as S3 writes it there (and
/// nowhere else); SDKs hand the value over as it came.
pub(super) fn bare_attributes_etag(xml: Bytes) -> Bytes {
    const OPEN: &[u8] = b"<ETag>\"";
    let Some(at) = xml.windows(OPEN.len()).position(|w| w == OPEN) else {
        return xml;
    };
    let value_start = at + OPEN.len();
    let Some(len) = xml[value_start..].windows(8).position(|w| w == b"\"</ETag>") else {
        return xml;
    };
    let mut out = Vec::with_capacity(xml.len());
    out.extend_from_slice(&xml[..at + "<ETag>".len()]);
    out.extend_from_slice(&xml[value_start..value_start + len]);
    out.extend_from_slice(&xml[value_start + len + 1..]);
    Bytes::from(out)
}

/// A GetBucketEncryption document with each rule naming SSE-C among its blocked encryption types,
/// for a bucket whose configuration blocks it (writes with customer-provided keys are then
/// refused), so a configuration that Terraform or CloudFormation applied with SSE-C blocked reads
/// back as applied. s3s 0.14's schema has no such element, so it is written into the serialized
/// document.
pub(super) fn blocked_sse_c(xml: Bytes) -> Bytes {
    const BLOCKED: &str = "<BlockedEncryptionTypes><EncryptionType>SSE-C</EncryptionType></BlockedEncryptionTypes>";
    if crate::s3::names_blocked_encryption_types(&xml) {
        return xml;
    }
    let text = String::from_utf8_lossy(&xml);
    if !text.contains("</Rule>") {
        return xml;
    }
    Bytes::from(text.replace("</Rule>", &format!("{BLOCKED}</Rule>")))
}

/// Operations whose documents carry keys or prefixes as the client wrote them.
pub(super) const KEY_DOCUMENTS: [&str; 8] = [
    "ListObjects",
    "ListObjectsV2",
    "ListObjectVersions",
    "ListMultipartUploads",
    "ListParts",
    "CreateMultipartUpload",
    "CompleteMultipartUpload",
    "DeleteObjects",
];

/// An XML document with every carriage return written as `&#13;`. XML parsers turn a literal CR
/// (and CR LF) in text into a line feed (XML 1.0, 2.11), so a key holding one came back from a
/// listing as another key, which a GET or DELETE then missed (rclone's encoding tests; S3 itself
/// writes the CR literally, which is why the AWS SDKs list with `encoding-type=url`). The
/// reference reads back as the CR it stands for. The documents come from s3s's serializer, where a
/// CR byte can only be text: element names, the declaration and escapes have none, and in UTF-8
/// the byte 0x0D is never part of another character.
pub(super) fn carriage_returns_as_references(xml: Bytes) -> Bytes {
    if !xml.contains(&b'\r') {
        return xml;
    }
    let mut out = Vec::with_capacity(xml.len() + 16);
    for &b in xml.iter() {
        match b {
            b'\r' => out.extend_from_slice(b"&#13;"),
            _ => out.push(b),
        }
    }
    Bytes::from(out)
}

/// A GetBucketLocation document as S3 writes it: the XML declaration on a line of its own, and
/// the element empty (`<LocationConstraint .../>`) for `us-east-1`. The AWS SDK for JavaScript
/// v2 reads the region from the raw text with `/>(.+)<\/Location/`, which on s3s's single line
/// (`...?><LocationConstraint xmlns="...">eu-west-1</LocationConstraint>`) captures the start
/// tag too, and so signs every later request for a region named `<LocationConstraint ...`.
pub(super) fn location_document(xml: Bytes) -> Bytes {
    const XMLNS: &str = "http://s3.amazonaws.com/doc/2006-03-01/";
    let text = String::from_utf8_lossy(&xml);
    let Some(open) = text.find("<LocationConstraint") else {
        return xml;
    };
    let rest = &text[open..];
    let region = match rest.find('>') {
        Some(end) if !rest[..end].ends_with('/') => {
            let inner = &rest[end + 1..];
            match inner.find("</LocationConstraint>") {
                Some(close) => inner[..close].trim(),
                None => return xml,
            }
        }
        Some(_) => "",
        None => return xml,
    };
    let doc = if region.is_empty() {
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint xmlns=\"{XMLNS}\"/>")
    } else {
        format!("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint xmlns=\"{XMLNS}\">{region}</LocationConstraint>")
    };
    Bytes::from(doc)
}

/// A ListBuckets document with `<Owner>` before `<Buckets>`, where S3 writes it (s3s writes it
/// last). The AWS SDK for Java v1 gives each bucket the owner read before its `<Bucket>`
/// starts, so with the owner last every `Bucket.getOwner()` is null.
pub(super) fn owner_first(xml: Bytes) -> Bytes {
    let text = String::from_utf8_lossy(&xml);
    let (Some(buckets), Some(owner)) = (text.find("<Buckets"), text.find("<Owner>")) else {
        return xml;
    };
    let Some(owner_end) = text[owner..].find("</Owner>").map(|e| owner + e + "</Owner>".len()) else {
        return xml;
    };
    if owner < buckets {
        return xml;
    }
    // Bucket names hold no `<`, so the first `<Owner>` after `<Buckets` is the document's.
    let mut doc = String::with_capacity(text.len());
    doc.push_str(&text[..buckets]);
    doc.push_str(&text[owner..owner_end]);
    doc.push_str(&text[buckets..owner]);
    doc.push_str(&text[owner_end..]);
    Bytes::from(doc)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observe::{copy_source_key, request_id};

    #[test]
    fn bucket_lists_name_their_owner_first() {
        let s3s = Bytes::from_static(
            b"<?xml version=\"1.0\"?><ListAllMyBucketsResult><Buckets><Bucket><Name>a</Name></Bucket></Buckets><Owner><ID>x</ID></Owner><Prefix>p</Prefix></ListAllMyBucketsResult>",
        );
        assert_eq!(
            &owner_first(s3s)[..],
            b"<?xml version=\"1.0\"?><ListAllMyBucketsResult><Owner><ID>x</ID></Owner><Buckets><Bucket><Name>a</Name></Bucket></Buckets><Prefix>p</Prefix></ListAllMyBucketsResult>"
        );
        let none =
            Bytes::from_static(b"<ListAllMyBucketsResult><Buckets/><Owner><ID>x</ID></Owner></ListAllMyBucketsResult>");
        assert_eq!(
            &owner_first(none)[..],
            b"<ListAllMyBucketsResult><Owner><ID>x</ID></Owner><Buckets/></ListAllMyBucketsResult>"
        );
        let already = Bytes::from_static(b"<L><Owner><ID>x</ID></Owner><Buckets></Buckets></L>");
        assert_eq!(owner_first(already.clone()), already);
    }

    #[test]
    fn location_documents_read_as_s3_writes_them() {
        let s3s = |inner: &str| {
            Bytes::from(format!(
                "<?xml version=\"1.0\" encoding=\"UTF-8\"?><LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{inner}</LocationConstraint>"
            ))
        };
        let doc = location_document(s3s("eu-west-1"));
        let text = std::str::from_utf8(&doc).unwrap();
        assert_eq!(
            text,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">eu-west-1</LocationConstraint>"
        );
        // What the JavaScript SDK v2's pattern takes from it: the region alone.
        let line = text.lines().nth(1).unwrap();
        let (start, end) = (line.find('>').unwrap() + 1, line.find("</Location").unwrap());
        assert_eq!(&line[start..end], "eu-west-1");
        let empty = location_document(s3s(""));
        assert_eq!(
            std::str::from_utf8(&empty).unwrap(),
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<LocationConstraint xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"/>"
        );
        assert_eq!(location_document(empty.clone()), empty);
        let odd = Bytes::from_static(b"<Other/>");
        assert_eq!(location_document(odd.clone()), odd);
    }

    #[test]
    fn carriage_returns_become_references() {
        let doc = Bytes::from_static(b"<a><Key>\rx</Key><Key>y\r\nz</Key><Key>\xc3\xa9</Key></a>");
        assert_eq!(
            &carriage_returns_as_references(doc)[..],
            b"<a><Key>&#13;x</Key><Key>y&#13;\nz</Key><Key>\xc3\xa9</Key></a>"
        );
        let plain = Bytes::from_static(b"<a><Key>x\ty\n</Key></a>");
        assert_eq!(carriage_returns_as_references(plain.clone()), plain);
    }

    #[test]
    fn attribute_etags_lose_their_quotes() {
        let doc = Bytes::from_static(
            b"<GetObjectAttributesOutput><ETag>\"abc-2\"</ETag><ObjectSize>3</ObjectSize></GetObjectAttributesOutput>",
        );
        assert_eq!(
            &bare_attributes_etag(doc)[..],
            b"<GetObjectAttributesOutput><ETag>abc-2</ETag><ObjectSize>3</ObjectSize></GetObjectAttributesOutput>"
        );
        let without =
            Bytes::from_static(b"<GetObjectAttributesOutput><ObjectSize>3</ObjectSize></GetObjectAttributesOutput>");
        assert_eq!(bare_attributes_etag(without.clone()), without);
    }

    #[test]
    fn reads_error_codes() {
        let xml = b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Message>x</Message></Error>";
        assert_eq!(error_code(xml).as_deref(), Some("NoSuchKey"));
        assert_eq!(error_code(b"<Error></Error>"), None);
        assert_eq!(request_id().len(), 16);
    }

    #[test]
    fn error_documents_carry_the_request_id() {
        let xml = Bytes::from_static(b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code></Error>");
        let out = with_request_id(xml.clone(), "0123456789ABCDEF", "");
        assert_eq!(
            &out[..],
            b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><RequestId>0123456789ABCDEF</RequestId></Error>"
        );
        // Already there, or not an error document: unchanged.
        assert_eq!(with_request_id(out.clone(), "X", ""), out);
        assert_eq!(&with_request_id(Bytes::from_static(b"oops"), "X", "")[..], b"oops");
        let info = RequestInfo {
            operation: "GetObject".into(),
            bucket: Some("b".into()),
            key: Some("a<b".into()),
            ..RequestInfo::default()
        };
        let out = with_request_id(xml, "ID", &detail_of("NoSuchKey", &info).unwrap());
        assert_eq!(
            &out[..],
            b"<?xml version=\"1.0\"?><Error><Code>NoSuchKey</Code><Key>a&lt;b</Key><RequestId>ID</RequestId></Error>"
        );
    }

    #[test]
    fn errors_without_a_message_get_the_standard_one() {
        let bare = b"<Error><Code>InvalidBucketName</Code></Error>";
        assert_eq!(
            missing_message(bare, Some("InvalidBucketName")).as_deref(),
            Some("<Message>The specified bucket is not valid.</Message>")
        );
        let given = b"<Error><Code>InvalidBucketName</Code><Message>mine</Message></Error>";
        assert_eq!(
            missing_message(given, Some("InvalidBucketName")),
            None,
            "a message is kept"
        );
        // s3s refuses a form it cannot split with the code alone.
        assert_eq!(
            missing_message(
                b"<Error><Code>MalformedPOSTRequest</Code></Error>",
                Some("MalformedPOSTRequest")
            )
            .as_deref(),
            Some("<Message>The body of your POST request is not well-formed multipart/form-data.</Message>")
        );
        assert_eq!(missing_message(bare, Some("SomethingElse")), None);
        assert_eq!(missing_message(bare, None), None);
    }

    #[test]
    fn errors_name_what_was_missing_and_a_copy_names_its_source_key() {
        let mut info = RequestInfo {
            operation: "GetObject".into(),
            bucket: Some("b".into()),
            key: Some("k".into()),
            ..RequestInfo::default()
        };
        assert_eq!(detail_of("NoSuchKey", &info), Some("<Key>k</Key>".to_owned()));
        assert_eq!(
            detail_of("NoSuchBucket", &info),
            Some("<BucketName>b</BucketName>".to_owned())
        );
        assert_eq!(
            detail_of("NoSuchCORSConfiguration", &info),
            Some("<BucketName>b</BucketName>".to_owned())
        );
        assert_eq!(detail_of("AccessDenied", &info), None);
        info.operation = "CopyObject".into();
        assert_eq!(detail_of("NoSuchKey", &info), None, "no source known");
        info.copy_source_key = copy_source_key("/src/a%20b%26c.txt?versionId=3");
        assert_eq!(info.copy_source_key.as_deref(), Some("a b&c.txt"));
        assert_eq!(
            detail_of("NoSuchKey", &info),
            Some("<Key>a b&amp;c.txt</Key>".to_owned())
        );
        assert_eq!(detail_of("NoSuchBucket", &info), None, "source or destination");
        assert_eq!(copy_source_key("src"), None);
        // A path key over the limit, which s3s refuses without a document of ours.
        info.long_path_key = Some(1025);
        assert_eq!(
            detail_of("KeyTooLongError", &info).as_deref(),
            Some("<Size>1025</Size><MaxSizeAllowed>1024</MaxSizeAllowed>")
        );
        assert_eq!(copy_source_key("src/d/e"), Some("d/e".to_owned()));
    }

    #[test]
    fn encryption_rules_name_sse_c_blocked() {
        let doc = "<ServerSideEncryptionConfiguration><Rule><ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256\
                   </SSEAlgorithm></ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false</BucketKeyEnabled></Rule>\
                   </ServerSideEncryptionConfiguration>";
        let out = blocked_sse_c(Bytes::from(doc));
        let out = String::from_utf8_lossy(&out);
        assert!(out.contains(
            "<BucketKeyEnabled>false</BucketKeyEnabled><BlockedEncryptionTypes><EncryptionType>SSE-C</EncryptionType>\
             </BlockedEncryptionTypes></Rule>"
        ));
        assert_eq!(
            blocked_sse_c(Bytes::from(out.to_string())),
            Bytes::from(out.to_string()),
            "once only"
        );
        assert_eq!(
            blocked_sse_c(Bytes::from_static(b"<Error/>")),
            Bytes::from_static(b"<Error/>")
        );
    }
}
