//! The service as a whole: authentication and graceful shutdown.

use penstock_tests::{code, xml_element, Gateway, ACCESS_KEY};
use sha2::Digest;

/// Midnight UTC of day `yyyymmdd` (a SigV4 scope's date).
fn day(yyyymmdd: &str) -> std::time::SystemTime {
    let n = |r: std::ops::Range<usize>| yyyymmdd[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(4..6), n(6..8));
    // Days since 1970-01-01 of a proleptic Gregorian date (March-based years).
    let (y, m) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    std::time::UNIX_EPOCH + std::time::Duration::from_secs(days as u64 * 86_400)
}

#[tokio::test]
async fn authentication() {
    let gw = Gateway::start();
    let bad_secret = gw.client_with(ACCESS_KEY, "wrong-secret");
    let e = bad_secret.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "SignatureDoesNotMatch");
    // As S3 answers it: with the canonical request and string to sign the gateway computed,
    // which are the client's own when only the secret differs (the client's signature of that
    // string under its secret is the one it sent).
    let c = gw.client();
    c.create_bucket().bucket("sig").send().await.unwrap();
    let e = bad_secret
        .put_object()
        .bucket("sig")
        .key("a b&c")
        .body(aws_sdk_s3::primitives::ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "SignatureDoesNotMatch");
    let doc = penstock_tests::error_doc(&e);
    let element = |tag: &str| xml_element(&doc, tag);
    assert_eq!(element("AWSAccessKeyId").as_deref(), Some(ACCESS_KEY), "{doc}");
    let canonical = element("CanonicalRequest").unwrap();
    assert!(canonical.starts_with("PUT\n/sig/a%20b%26c\n"), "{canonical}");
    let to_sign = element("StringToSign").unwrap();
    let lines: Vec<&str> = to_sign.split('\n').collect();
    assert_eq!(lines[0], "AWS4-HMAC-SHA256");
    assert_eq!(lines[3], hex::encode(sha2::Sha256::digest(canonical.as_bytes())));
    let bytes: String = to_sign.bytes().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join(" ");
    assert_eq!(element("StringToSignBytes").unwrap(), bytes);
    let date = lines[2].split('/').next().unwrap();
    let key = aws_sigv4::sign::v4::generate_signing_key("wrong-secret", day(date), "us-east-1", "s3");
    let theirs = aws_sigv4::sign::v4::calculate_signature(key, to_sign.as_bytes());
    assert_eq!(element("SignatureProvided"), Some(theirs));
    let unknown = gw.client_with("NOSUCHKEY", "whatever");
    let e = unknown.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidAccessKeyId");
}

#[tokio::test]
async fn graceful_shutdown() {
    let (gw, _c) = Gateway::with_bucket("bye").await;
    let st = gw.terminate();
    assert!(st.success(), "exit status {st:?}");
}

/// A request whose time is refused is answered as S3 answers it, with the times a client needs to
/// tell a wrong clock from a URL used too late: a header-signed request an hour old is 403
/// `RequestTimeTooSkewed` with its `RequestTime`, the `ServerTime` and the skew allowed; a
/// presigned URL past its life is 403 `AccessDenied` "Request has expired" with its
/// `X-Amz-Expires`, when it expired and the `ServerTime`.
#[tokio::test]
async fn refused_times_are_named() {
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::raw::Conn;
    use penstock_tests::sigv4::Signer;
    let (gw, _c) = Gateway::with_bucket("clock").await;
    penstock_tests::put(&gw.client(), "clock", "k", b"v").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let element = |doc: &str, tag: &str| xml_element(doc, tag);
    let hour_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
    let signer = Signer::new(ACCESS_KEY, penstock_tests::SECRET_KEY, hour_ago);
    let url = format!("{}/clock/k", gw.endpoint);
    let (added, _) = signer.sign("GET", &url, &[("host", host.as_str())], SignableBody::Bytes(b""));
    let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let a = Conn::open(&gw).unsigned("GET", "/clock/k", &headers, b"");
    let doc = String::from_utf8_lossy(&a.body).into_owned();
    assert_eq!(a.status, 403, "{doc}");
    assert_eq!(element(&doc, "Code").as_deref(), Some("RequestTimeTooSkewed"), "{doc}");
    assert_eq!(
        element(&doc, "Message").as_deref(),
        Some("The difference between the request time and the current time is too large.")
    );
    let sent = added.iter().find(|(k, _)| k == "x-amz-date").map(|(_, v)| v.clone());
    assert_eq!(element(&doc, "RequestTime"), sent);
    assert_eq!(element(&doc, "MaxAllowedSkewMilliseconds").as_deref(), Some("900000"));
    assert!(element(&doc, "ServerTime").is_some_and(|t| t.ends_with('Z')), "{doc}");

    // Presigned ten minutes ago for five.
    let ten_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(600);
    let signer = Signer::new(ACCESS_KEY, penstock_tests::SECRET_KEY, ten_ago);
    let query = signer.presign("GET", &url, &[("host", host.as_str())], "UNSIGNED-PAYLOAD");
    let a = Conn::open(&gw).unsigned("GET", &format!("/clock/k?{query}"), &[], b"");
    let doc = String::from_utf8_lossy(&a.body).into_owned();
    assert_eq!(a.status, 403, "{doc}");
    assert_eq!(element(&doc, "Code").as_deref(), Some("AccessDenied"), "{doc}");
    assert_eq!(element(&doc, "Message").as_deref(), Some("Request has expired"));
    assert_eq!(element(&doc, "X-Amz-Expires").as_deref(), Some("300"));
    let expired = element(&doc, "Expires").unwrap();
    let server = element(&doc, "ServerTime").unwrap();
    // ISO 8601 in UTC, as S3 writes them: the server's time after the expiry.
    assert!(expired.len() == 20 && expired.ends_with('Z') && server > expired, "{doc}");
}
