//! Hostile input on the request path (issue #16): digests of XML bodies and signatures of
//! aws-chunked bodies are checked, and a refused request changes nothing.

use aws_sdk_s3::primitives::ByteStream;
use base64::Engine;
use bytes::Bytes;
use md5::{Digest, Md5};
use penstock_tests::raw::Conn;
use penstock_tests::sigv4::Signer;
use penstock_tests::{pattern, Gateway, ACCESS_KEY, SECRET_KEY};

fn raw_client(gw: &Gateway) -> penstock_client::Client {
    penstock_client::Client::new(&gw.endpoint, ACCESS_KEY, SECRET_KEY)
}

fn b64_md5(b: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(Md5::digest(b))
}

fn error_code(body: &[u8]) -> String {
    let s = String::from_utf8_lossy(body);
    s.split("<Code>").nth(1).and_then(|r| r.split("</Code>").next()).unwrap_or("").to_owned()
}

/// Headers sent with a DeleteObjects body, and the status and code S3 answers.
type DigestCase<'a> = (&'a [(&'a str, &'a str)], u16, &'a str);

/// Content-MD5 and checksums of XML bodies are checked like those of object data: a wrong or
/// malformed digest is refused with S3's error and changes nothing; DeleteObjects without one
/// is refused as S3 refuses it.
#[tokio::test]
async fn digests_of_xml_bodies_are_checked() {
    use http::Method;
    let (gw, c) = Gateway::with_bucket("dig").await;
    penstock_tests::put(&c, "dig", "a", b"keep me").await;
    let raw = raw_client(&gw);
    let delete_url = format!("{}/dig?delete", gw.endpoint);
    let doc = Bytes::from_static(b"<Delete><Object><Key>a</Key></Object></Delete>");
    let wrong = b64_md5(b"another body");
    let cases: [DigestCase; 4] = [
        (&[("content-md5", &wrong)], 400, "BadDigest"),
        (&[("content-md5", "notbase64!!")], 400, "InvalidDigest"),
        (&[("x-amz-checksum-crc32", "AAAAAA==")], 400, "BadDigest"),
        (&[], 400, "InvalidRequest"),
    ];
    for (headers, status, code) in cases {
        let r = raw.send(Method::POST, &delete_url, headers, doc.clone()).await.unwrap();
        assert_eq!(
            (r.status.as_u16(), error_code(&r.body).as_str()),
            (status, code),
            "DeleteObjects with {headers:?}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert!(String::from_utf8_lossy(&r.body).contains("<RequestId>"));
        assert_eq!(penstock_tests::get(&c, "dig", "a").await, b"keep me", "{headers:?} deleted the object");
    }
    // A document's BadDigest names both digests, as an object's does.
    let r = raw.send(Method::POST, &delete_url, &[("content-md5", &wrong)], doc.clone()).await.unwrap();
    let body = String::from_utf8_lossy(&r.body);
    let claimed = hex::encode(base64::engine::general_purpose::STANDARD.decode(&wrong).unwrap());
    assert!(
        body.contains(&format!(
            "<CalculatedDigest>{}</CalculatedDigest><ExpectedDigest>{claimed}</ExpectedDigest>",
            b64_md5(&doc)
        )),
        "{body}"
    );

    // PutObjectTagging with a wrong Content-MD5 leaves the tags alone.
    let tag_url = format!("{}/dig/a?tagging", gw.endpoint);
    let tags = Bytes::from_static(b"<Tagging><TagSet><Tag><Key>t</Key><Value>1</Value></Tag></TagSet></Tagging>");
    let r = raw.send(Method::PUT, &tag_url, &[("content-md5", &wrong)], tags.clone()).await.unwrap();
    assert_eq!((r.status.as_u16(), error_code(&r.body).as_str()), (400, "BadDigest"));
    let t = c.get_object_tagging().bucket("dig").key("a").send().await.unwrap();
    assert!(t.tag_set().is_empty(), "a refused tagging changed the tags");
    let right = b64_md5(&tags);
    let r = raw.send(Method::PUT, &tag_url, &[("content-md5", &right)], tags).await.unwrap();
    assert_eq!(r.status.as_u16(), 200, "{}", String::from_utf8_lossy(&r.body));

    // CompleteMultipartUpload with a wrong Content-MD5 leaves the upload open.
    let up = c.create_multipart_upload().bucket("dig").key("m").send().await.unwrap();
    let id = up.upload_id().unwrap().to_owned();
    let p = c
        .upload_part()
        .bucket("dig")
        .key("m")
        .upload_id(&id)
        .part_number(1)
        .body(ByteStream::from_static(b"part one"))
        .send()
        .await
        .unwrap();
    let complete_url = format!("{}/dig/m?uploadId={id}", gw.endpoint);
    let xml = Bytes::from(format!(
        "<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>{}</ETag></Part></CompleteMultipartUpload>",
        p.e_tag().unwrap()
    ));
    let r = raw.send(Method::POST, &complete_url, &[("content-md5", &wrong)], xml.clone()).await.unwrap();
    assert_eq!((r.status.as_u16(), error_code(&r.body).as_str()), (400, "BadDigest"));
    assert!(c.head_object().bucket("dig").key("m").send().await.is_err());
    let r = raw.send(Method::POST, &complete_url, &[("content-md5", &b64_md5(&xml))], xml).await.unwrap();
    assert_eq!(r.status.as_u16(), 200, "{}", String::from_utf8_lossy(&r.body));

    // The right digest deletes.
    let r = raw.send(Method::POST, &delete_url, &[("content-md5", &b64_md5(&doc))], doc).await.unwrap();
    assert_eq!(r.status.as_u16(), 200);
    assert!(c.head_object().bucket("dig").key("a").send().await.is_err());
}

/// A signed aws-chunked PUT (`STREAMING-AWS4-HMAC-SHA256-PAYLOAD`) of `chunks`, as raw bytes on
/// the wire; `tamper` flips one byte of that chunk's signature (the final, empty chunk is the
/// last index).
fn signed_chunked_put(gw: &Gateway, path: &str, chunks: &[&[u8]], tamper: Option<usize>) -> Vec<u8> {
    use aws_sigv4::http_request::SignableBody;

    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let decoded: usize = chunks.iter().map(|c| c.len()).sum();
    let signer = Signer::admin();
    let decoded = decoded.to_string();
    let seed_headers = [
        ("host", host.as_str()),
        ("content-encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", decoded.as_str()),
    ];
    let (added, seed) = signer.sign(
        "PUT",
        &format!("{}{path}", gw.endpoint),
        &seed_headers,
        SignableBody::Precomputed("STREAMING-AWS4-HMAC-SHA256-PAYLOAD".to_owned()),
    );

    // The body: every data chunk, then the empty final chunk, each signed over the one before.
    let mut running = seed;
    let mut body = Vec::new();
    for (i, data) in chunks.iter().copied().chain([&b""[..]]).enumerate() {
        let sig = signer.sign_chunk(data, &running);
        running = sig.clone();
        let mut sent = sig.into_bytes();
        if tamper == Some(i) {
            sent[0] = if sent[0] == b'0' { b'1' } else { b'0' };
        }
        body.extend_from_slice(format!("{:x};chunk-signature=", data.len()).as_bytes());
        body.extend_from_slice(&sent);
        body.extend_from_slice(b"\r\n");
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    }

    let mut req = format!("PUT {path} HTTP/1.1\r\n");
    for (k, v) in &seed_headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    for (k, v) in &added {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
    let mut wire = req.into_bytes();
    wire.extend_from_slice(&body);
    wire
}

/// A chunk whose signature does not follow from the seed is refused with 403
/// `SignatureDoesNotMatch`, whichever chunk it is, and the key keeps what it had.
#[tokio::test]
async fn a_bad_chunk_signature_is_refused() {
    let (gw, c) = Gateway::with_bucket("chunks").await;
    let a = pattern(1, 64 * 1024);
    let b = pattern(2, 1000);

    // Correctly signed, the upload lands: the framing and signing here are right.
    let mut conn = Conn::open(&gw);
    conn.send(&signed_chunked_put(&gw, "/chunks/k", &[&a, &b], None));
    let r = conn.answer(false);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    let mut whole = a.clone();
    whole.extend_from_slice(&b);
    assert_eq!(penstock_tests::get(&c, "chunks", "k").await, whole);

    // A bad signature on the first, the second or the final chunk changes nothing.
    for bad in 0..3 {
        let mut conn = Conn::open(&gw);
        conn.send(&signed_chunked_put(&gw, "/chunks/k", &[&b, &a], Some(bad)));
        let r = conn.answer(false);
        assert_eq!(
            (r.status, error_code(&r.body).as_str()),
            (403, "SignatureDoesNotMatch"),
            "chunk {bad}: {}",
            String::from_utf8_lossy(&r.body)
        );
        assert!(String::from_utf8_lossy(&r.body).contains("<RequestId>"));
        // The request's own signature held: its canonical request would explain nothing.
        assert!(!String::from_utf8_lossy(&r.body).contains("<CanonicalRequest>"));
        assert_eq!(penstock_tests::get(&c, "chunks", "k").await, whole, "chunk {bad} replaced the object");

        let mut conn = Conn::open(&gw);
        conn.send(&signed_chunked_put(&gw, "/chunks/new", &[&b], Some(bad.min(1))));
        assert_eq!(conn.answer(false).status, 403);
        let e = c.head_object().bucket("chunks").key("new").send().await;
        assert!(e.is_err(), "a refused upload created the key");
    }
}

/// The hex SHA-256 of `b`.
fn sha256_hex(b: &[u8]) -> String {
    use sha2::Digest as _;
    hex::encode(sha2::Sha256::digest(b))
}

/// Sends `method path` signed in its headers over payload hash `payload` (whatever the body's
/// real hash), with `body`, and reads the answer.
fn header_signed(gw: &Gateway, method: &str, path: &str, payload: &str, body: &[u8]) -> penstock_tests::raw::Answer {
    use aws_sigv4::http_request::SignableBody;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let (added, _) = Signer::admin().sign(
        method,
        &format!("{}{path}", gw.endpoint),
        &[("host", host.as_str())],
        SignableBody::Precomputed(payload.to_owned()),
    );
    let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    Conn::open(gw).unsigned(method, path, &headers, body)
}

/// A body whose SHA-256 is not the one its request signed (`x-amz-content-sha256`) is refused
/// with 400 `XAmzContentSHA256Mismatch` and changes nothing: object data, small and streamed,
/// documents, and requests with no body (a DELETE and a CopyObject among them). A value that is
/// no hash is 400 `InvalidArgument`. A presigned URL made over a payload hash (a signed
/// `x-amz-content-sha256` header, as botocore and the AWS SDK for Go presign, or the hash in its
/// query) admits the body with that hash and no other.
#[tokio::test]
async fn payload_hashes_are_held_to_their_bodies() {
    let (gw, c) = Gateway::with_bucket("hash").await;
    penstock_tests::put(&c, "hash", "k", b"keep me").await;
    let wrong = sha256_hex(b"another body");
    let answer = |a: &penstock_tests::raw::Answer| (a.status, error_code(&a.body));
    let mismatch = (400, "XAmzContentSHA256Mismatch".to_owned());

    for body in [pattern(1, 100), pattern(2, 200 * 1024)] {
        let r = header_signed(&gw, "PUT", "/hash/k", &wrong, &body);
        assert_eq!(answer(&r), mismatch, "{} bytes: {}", body.len(), String::from_utf8_lossy(&r.body));
        assert!(String::from_utf8_lossy(&r.body).contains("<RequestId>"));
        assert_eq!(penstock_tests::get(&c, "hash", "k").await, b"keep me");
        let r = header_signed(&gw, "PUT", "/hash/k", &sha256_hex(&body), &body);
        assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
        penstock_tests::put(&c, "hash", "k", b"keep me").await;
    }
    // A document (s3s would answer 500 from its reader).
    let tags = b"<Tagging><TagSet><Tag><Key>t</Key><Value>1</Value></Tag></TagSet></Tagging>";
    let r = header_signed(&gw, "PUT", "/hash/k?tagging", &wrong, tags);
    assert_eq!(answer(&r), mismatch, "{}", String::from_utf8_lossy(&r.body));
    let t = c.get_object_tagging().bucket("hash").key("k").send().await.unwrap();
    assert!(t.tag_set().is_empty(), "a refused tagging changed the tags");
    assert_eq!(header_signed(&gw, "PUT", "/hash/k?tagging", &sha256_hex(tags), tags).status, 200);

    // Requests without a body signed over another body's hash: refused as S3 refuses them, and
    // the DELETE deletes nothing.
    for (method, path) in [("GET", "/hash/k"), ("HEAD", "/hash/k"), ("GET", "/hash?list-type=2"), ("DELETE", "/hash/k")]
    {
        let r = header_signed(&gw, method, path, &wrong, b"");
        assert_eq!(r.status, 400, "{method} {path}");
        if method != "HEAD" {
            assert_eq!(answer(&r), mismatch, "{method} {path}: {}", String::from_utf8_lossy(&r.body));
        }
        assert_eq!(penstock_tests::get(&c, "hash", "k").await, b"keep me");
    }
    // CopyObject reads no body either.
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    for (payload, status) in [(wrong.clone(), 400), (sha256_hex(b""), 200)] {
        let seed = [("host", host.as_str()), ("x-amz-copy-source", "/hash/k")];
        let (added, _) = Signer::admin().sign(
            "PUT",
            &format!("{}/hash/copy", gw.endpoint),
            &seed,
            aws_sigv4::http_request::SignableBody::Precomputed(payload),
        );
        let mut headers: Vec<(&str, &str)> = seed.to_vec();
        headers.extend(added.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let r = Conn::open(&gw).unsigned("PUT", "/hash/copy", &headers, b"");
        assert_eq!(r.status, status, "{}", String::from_utf8_lossy(&r.body));
        let copied = c.head_object().bucket("hash").key("copy").send().await.is_ok();
        assert_eq!(copied, status == 200, "a refused copy made the key, or an accepted one did not");
    }

    // No hash at all: S3's InvalidArgument, naming the header and its value.
    let r = header_signed(&gw, "PUT", "/hash/k", "GIBBERISH", b"x");
    assert_eq!(answer(&r), (400, "InvalidArgument".to_owned()));
    let text = String::from_utf8_lossy(&r.body);
    assert!(
        text.contains("<ArgumentName>x-amz-content-sha256</ArgumentName><ArgumentValue>GIBBERISH</ArgumentValue>"),
        "{text}"
    );
    assert_eq!(penstock_tests::get(&c, "hash", "k").await, b"keep me");

    // Presigned over a payload hash: in a signed header, or in the query.
    let body = pattern(3, 5000);
    let hash = sha256_hex(&body);
    let url = format!("{}/hash/p", gw.endpoint);
    let in_header = Signer::admin().presign("PUT", &url, &[("host", &host), ("x-amz-content-sha256", &hash)], &hash);
    let send = |path: &str, headers: &[(&str, &str)], body: &[u8]| Conn::open(&gw).unsigned("PUT", path, headers, body);
    let sha = [("x-amz-content-sha256", hash.as_str())];
    let r = send(&format!("/hash/p?{in_header}"), &sha, &pattern(4, 5000));
    assert_eq!(answer(&r), mismatch, "{}", String::from_utf8_lossy(&r.body));
    assert!(c.head_object().bucket("hash").key("p").send().await.is_err(), "a refused upload created the key");
    let r = send(&format!("/hash/p?{in_header}"), &sha, &body);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(penstock_tests::get(&c, "hash", "p").await, body);

    let query_url = format!("{url}?X-Amz-Content-Sha256={hash}");
    let in_query = Signer::admin().presign("PUT", &query_url, &[("host", &host)], &hash);
    let path = format!("/hash/p?X-Amz-Content-Sha256={hash}&{in_query}");
    let r = send(&path, &[], &pattern(5, 5000));
    assert_eq!(answer(&r), mismatch, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(penstock_tests::get(&c, "hash", "p").await, body);
    assert_eq!(send(&path, &[], &body).status, 200);

    // The same URL's signature does not stand for another hash.
    let other = [("x-amz-content-sha256", wrong.as_str())];
    let r = send(&format!("/hash/p?{in_header}"), &other, b"another body");
    assert_eq!(answer(&r), (403, "SignatureDoesNotMatch".to_owned()));
}

/// A request signed in a scope whose "region" is none (git-annex signs for the endpoint's host
/// name, s3cmd for `US`) is served when its signature holds there, header-signed or presigned,
/// as S3-compatible servers do; a wrong signature in such a scope, and an aws-chunked upload
/// (whose chunk signatures chain from the scope), keep S3's refusal naming the region to use.
#[tokio::test]
async fn scopes_that_name_no_region_are_verified_as_named() {
    use aws_sigv4::http_request::SignableBody;
    let (gw, c) = Gateway::with_bucket("scope").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let body = pattern(6, 3000);
    for region in ["127.0.0.1", "US", "s3.example.org"] {
        let signer = Signer::admin().in_region(region);
        let url = format!("{}/scope/h", gw.endpoint);
        let (added, _) =
            signer.sign("PUT", &url, &[("host", host.as_str())], SignableBody::Precomputed(sha256_hex(&body)));
        let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let r = Conn::open(&gw).unsigned("PUT", "/scope/h", &headers, &body);
        assert_eq!(r.status, 200, "{region}: {}", String::from_utf8_lossy(&r.body));
        assert_eq!(penstock_tests::get(&c, "scope", "h").await, body);

        // The same headers with one byte of the signature changed: refused, naming our region.
        let tampered: Vec<(String, String)> = added
            .iter()
            .map(|(k, v)| {
                // Another last hex digit than the one signed (a fixed '0' left one signature in
                // sixteen as it was, and the test then failed on the body's hash instead).
                let v = if k == "authorization" {
                    let other = if v.ends_with('0') { '1' } else { '0' };
                    format!("{}{other}", &v[..v.len() - 1])
                } else {
                    v.clone()
                };
                (k.clone(), v)
            })
            .collect();
        let tampered: Vec<(&str, &str)> = tampered.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let r = Conn::open(&gw).unsigned("PUT", "/scope/h", &tampered, b"not this");
        let text = String::from_utf8_lossy(&r.body).into_owned();
        assert_eq!((r.status, error_code(&r.body).as_str()), (400, "AuthorizationHeaderMalformed"), "{text}");
        assert!(text.contains("<Region>us-east-1</Region>"), "{text}");
        assert_eq!(penstock_tests::get(&c, "scope", "h").await, body);

        // Presigned, read back.
        let query = signer.presign("GET", &url, &[("host", host.as_str())], "UNSIGNED-PAYLOAD");
        let r = Conn::open(&gw).unsigned("GET", &format!("/scope/h?{query}"), &[], b"");
        assert_eq!(r.status, 200, "{region}: {}", String::from_utf8_lossy(&r.body));
        assert_eq!(r.body, body);
    }

    // An aws-chunked upload signed for a host name: its chunks cannot be signed again.
    let signer = Signer::admin().in_region("127.0.0.1");
    let decoded = body.len().to_string();
    let seed_headers = [
        ("host", host.as_str()),
        ("content-encoding", "aws-chunked"),
        ("x-amz-decoded-content-length", decoded.as_str()),
    ];
    let (added, _) = signer.sign(
        "PUT",
        &format!("{}/scope/chunked", gw.endpoint),
        &seed_headers,
        SignableBody::Precomputed("STREAMING-AWS4-HMAC-SHA256-PAYLOAD".to_owned()),
    );
    let mut headers: Vec<(&str, &str)> = seed_headers.to_vec();
    headers.extend(added.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let r = Conn::open(&gw).unsigned("PUT", "/scope/chunked", &headers, b"0;chunk-signature=00\r\n\r\n");
    assert_eq!((r.status, error_code(&r.body).as_str()), (400, "AuthorizationHeaderMalformed"));
    assert!(c.head_object().bucket("scope").key("chunked").send().await.is_err());
}

/// A session token the gateway never issued (it offers no STS) is refused with 400
/// InvalidToken, in a header or a presigned URL, and the request changes nothing: the keys alone
/// do not stand in for a token's limits.
#[tokio::test]
async fn session_tokens_are_refused() {
    use aws_sdk_s3::config::{Credentials, Region};
    let (gw, c) = Gateway::with_bucket("tok").await;
    let conf = aws_sdk_s3::Config::builder()
        .behavior_version_latest()
        .region(Region::new("us-east-1"))
        .endpoint_url(&gw.endpoint)
        .credentials_provider(Credentials::new(ACCESS_KEY, SECRET_KEY, Some("made-up".into()), None, "test"))
        .force_path_style(true)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .build();
    let tokened = aws_sdk_s3::Client::from_conf(conf);
    let e = tokened.put_object().bucket("tok").key("k").body(ByteStream::from_static(b"x")).send().await.unwrap_err();
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(400));
    assert_eq!(e.into_service_error().meta().code(), Some("InvalidToken"));
    let e = tokened.head_bucket().bucket("tok").send().await.unwrap_err();
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(400));
    let presigned = tokened
        .get_object()
        .bucket("tok")
        .key("k")
        .presigned(aws_sdk_s3::presigning::PresigningConfig::expires_in(std::time::Duration::from_secs(60)).unwrap())
        .await
        .unwrap();
    assert!(presigned.uri().contains("X-Amz-Security-Token"));
    let mut conn = Conn::open(&gw);
    conn.send_head(&presigned, &[]);
    let a = conn.answer(false);
    assert_eq!((a.status, error_code(&a.body).as_str()), (400, "InvalidToken"));
    let listed = c.list_objects_v2().bucket("tok").send().await.unwrap();
    assert_eq!(listed.key_count(), Some(0), "nothing was written");
}

/// The head of a PUT signed with `UNSIGNED-PAYLOAD` whose body follows in HTTP chunks: no
/// Content-Length, as a client streaming a body of unknown length sends it.
fn unsigned_chunked_head(gw: &Gateway, path: &str) -> String {
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let (added, _) = Signer::admin().sign(
        "PUT",
        &format!("{}{path}", gw.endpoint),
        &[("host", host.as_str())],
        aws_sigv4::http_request::SignableBody::UnsignedPayload,
    );
    let mut head = format!("PUT {path} HTTP/1.1\r\nhost: {host}\r\ntransfer-encoding: chunked\r\n");
    for (k, v) in added {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head + "\r\n"
}

/// An answer given before the request's body was read (411 to a PUT of unknown length) says
/// `Connection: close`, and the gateway closes the connection: the unread body no longer lines
/// up with the next request's framing, and a client that pools connections must not send its
/// next request into one that is closing (aws-sdk-go-v2 then fails a PUT it cannot replay).
/// Answers after a body read to its end keep the connection open.
#[tokio::test]
async fn an_answer_before_the_body_is_read_closes_the_connection() {
    use std::io::Read;
    let (gw, c) = Gateway::with_bucket("framing").await;

    let mut conn = Conn::open(&gw);
    conn.send(unsigned_chunked_head(&gw, "/framing/k").as_bytes());
    conn.send(b"6\r\nabc123\r\n");
    let r = conn.answer(false);
    assert_eq!((r.status, error_code(&r.body).as_str()), (411, "MissingContentLength"));
    assert_eq!(r.header("connection"), Some("close"), "{:?}", r.headers);
    // The rest of the body may find the connection closed already (EPIPE): what is checked is
    // that nothing more comes back.
    let _ = std::io::Write::write_all(&mut conn.w, b"0\r\n\r\n");
    let mut rest = Vec::new();
    let read = conn.w.read_to_end(&mut rest);
    assert!(matches!(read, Ok(0)) || read.is_err(), "the connection stayed open: {rest:?}");
    let e = c.head_object().bucket("framing").key("k").send().await;
    assert!(e.is_err(), "a refused upload created the key");

    // Bodies read to their end (Content-Length, aws-chunked, a refusal after the body, an
    // anonymous GET) leave the connection open for the next request.
    let mut conn = Conn::open(&gw);
    let a = pattern(3, 70_000);
    conn.send(&signed_chunked_put(&gw, "/framing/k", &[&a], None));
    let r = conn.answer(false);
    assert_eq!(r.status, 200, "{}", String::from_utf8_lossy(&r.body));
    assert_eq!(r.header("connection"), None);
    let r = conn.unsigned("PUT", "/framing/anon", &[], b"no keys");
    assert_eq!(r.status, 403);
    assert_eq!(r.header("connection"), None, "a refusal after its body was read: {:?}", r.headers);
    let r = conn.unsigned("GET", "/framing/k", &[], b"");
    assert_eq!(r.status, 403);
    assert_eq!(r.header("connection"), None);
    assert_eq!(penstock_tests::get(&c, "framing", "k").await, a);
}

/// A request whose header section is over 8 KiB is refused as S3 refuses it (400
/// `RequestHeaderSectionTooLarge`, naming the size allowed) before it is authenticated or
/// served, and stores nothing; `[connections] max_header_bytes` moves the limit.
#[tokio::test]
async fn oversized_header_sections_are_refused() {
    let (gw, c) = Gateway::with_bucket("heads").await;
    let put = |gw: &Gateway, filler: usize| {
        use aws_sigv4::http_request::SignableBody;
        let host = gw.endpoint.trim_start_matches("http://").to_owned();
        let body = b"header test";
        let (added, _) = Signer::admin().sign(
            "PUT",
            &format!("{}/heads/k", gw.endpoint),
            &[("host", host.as_str())],
            SignableBody::Precomputed(sha256_hex(body)),
        );
        let mut headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let filler = "f".repeat(filler);
        headers.push(("x-filler", filler.as_str()));
        Conn::open(gw).unsigned("PUT", "/heads/k", &headers, body)
    };
    let r = put(&gw, 9000);
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert_eq!((r.status, error_code(&r.body).as_str()), (400, "RequestHeaderSectionTooLarge"), "{text}");
    assert!(text.contains("<MaxSizeAllowed>8192</MaxSizeAllowed>") && text.contains("<RequestId>"), "{text}");
    assert!(c.head_object().bucket("heads").key("k").send().await.is_err(), "a refused PUT stored the object");
    // Well within the limit: served.
    assert_eq!(put(&gw, 4000).status, 200);

    let gw = Gateway::start_with_config("[connections]\nmax_header_bytes = 16384\n");
    let c = gw.client();
    c.create_bucket().bucket("heads").send().await.unwrap();
    assert_eq!(put(&gw, 9000).status, 200, "the configured limit is 16 KiB");
    assert_eq!(error_code(&put(&gw, 17000).body), "RequestHeaderSectionTooLarge");
}

/// A method S3 has no operation for (PATCH, PROPFIND, a POST of an object naming no
/// sub-resource, a PUT, DELETE or HEAD of the service root) is 405 `MethodNotAllowed` naming the method and the resource's kind, with a
/// request id, whether or not the request is signed, and changes nothing; s3s answered 501.
#[tokio::test]
async fn methods_without_an_operation_are_not_allowed() {
    let (gw, c) = Gateway::with_bucket("methods").await;
    penstock_tests::put(&c, "methods", "k", b"keep me").await;
    for (method, path, kind) in [
        ("PATCH", "/methods/k", "OBJECT"),
        ("POST", "/methods/k", "OBJECT"),
        ("PROPFIND", "/methods", "BUCKET"),
        ("TRACE", "/", "SERVICE"),
        ("DELETE", "/", "SERVICE"),
        ("PUT", "/", "SERVICE"),
    ] {
        for signed in [true, false] {
            let r = if signed {
                header_signed(&gw, method, path, &sha256_hex(b"new"), b"new")
            } else {
                Conn::open(&gw).unsigned(method, path, &[], b"new")
            };
            let text = String::from_utf8_lossy(&r.body).into_owned();
            assert_eq!((r.status, error_code(&r.body).as_str()), (405, "MethodNotAllowed"), "{method} {path}: {text}");
            let detail = format!("<Method>{method}</Method><ResourceType>{kind}</ResourceType>");
            assert!(text.contains(&detail) && text.contains("<RequestId>"), "{text}");
        }
    }
    // HEAD of the service root, as S3 answers it: 405 without a body, with a request id.
    for signed in [true, false] {
        let r = if signed {
            header_signed(&gw, "HEAD", "/", &sha256_hex(b""), b"")
        } else {
            Conn::open(&gw).unsigned("HEAD", "/", &[], b"")
        };
        assert_eq!(r.status, 405, "HEAD / (signed: {signed})");
        assert!(r.header("x-amz-request-id").is_some(), "{:?}", r.headers);
    }
    assert_eq!(penstock_tests::get(&c, "methods", "k").await, b"keep me");
    // A POST of a bucket that is neither DeleteObjects nor a form upload.
    let r = header_signed(&gw, "POST", "/methods", &sha256_hex(b"k=v"), b"k=v");
    assert_eq!((r.status, error_code(&r.body).as_str()), (412, "PreconditionFailed"));
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert!(
        text.contains("<Condition>Bucket POST must be of the enclosure-type multipart/form-data</Condition>"),
        "{text}"
    );
    // A form whose boundary is empty cannot be split: S3's code, with S3's message.
    let r = Conn::open(&gw).unsigned("POST", "/methods", &[("content-type", "multipart/form-data; boundary=")], b"x");
    assert_eq!((r.status, error_code(&r.body).as_str()), (400, "MalformedPOSTRequest"));
    let text = String::from_utf8_lossy(&r.body).into_owned();
    assert!(text.contains("<Message>The body of your POST request is not well-formed"), "{text}");
    let r = header_signed(&gw, "POST", "/methods?uploads", &sha256_hex(b""), b"");
    assert_eq!((r.status, error_code(&r.body).as_str()), (405, "MethodNotAllowed"));
    // The object's own POST sub-resources still work.
    let up = c.create_multipart_upload().bucket("methods").key("k").send().await.unwrap();
    assert!(up.upload_id().is_some());
}

/// A sub-resource s3s does not route used to fall through to the resource's plain operation:
/// DeleteBucketMetadataConfiguration deleted the (empty) bucket, RenameObject replaced the
/// object with an empty one. Operations S3 has and the gateway does not are now 501
/// `NotImplemented` naming them, and a PUT or DELETE of a sub-resource S3 has no such operation
/// for is 405 `MethodNotAllowed`; so is a PUT naming an upload but no part number, and one naming
/// a part number but no upload is 400 `InvalidArgument` (both were PutObjects). Nothing changes.
#[tokio::test]
async fn sub_resources_without_a_route_change_nothing() {
    let (gw, c) = Gateway::with_bucket("subres").await;
    c.create_bucket().bucket("subres-empty").send().await.unwrap();
    penstock_tests::put(&c, "subres", "k", b"keep me").await;
    for (method, path, status, code, detail) in [
        ("DELETE", "/subres-empty?metadataConfiguration", 501, "NotImplemented", "DeleteBucketMetadataConfiguration"),
        ("PUT", "/subres/k?renameObject", 501, "NotImplemented", "RenameObject"),
        ("PUT", "/subres/k?encryption", 501, "NotImplemented", "UpdateObjectEncryption"),
        ("GET", "/subres?abac", 501, "NotImplemented", "GetBucketAbac"),
        ("POST", "/subres?metadataConfiguration", 501, "NotImplemented", "CreateBucketMetadataConfiguration"),
        ("DELETE", "/subres-empty?acl", 405, "MethodNotAllowed", "<ResourceType>BUCKET"),
        ("DELETE", "/subres-empty?versioning", 405, "MethodNotAllowed", "<ResourceType>BUCKET"),
        ("DELETE", "/subres/k?retention", 405, "MethodNotAllowed", "<ResourceType>OBJECT"),
        ("DELETE", "/subres/k?legal-hold", 405, "MethodNotAllowed", "<ResourceType>OBJECT"),
        ("PUT", "/subres/k?uploads", 405, "MethodNotAllowed", "<ResourceType>OBJECT"),
        // One of a part upload's two parameters without the other (PutObject to s3s).
        ("PUT", "/subres/k?uploadId=abc", 405, "MethodNotAllowed", "<ResourceType>UPLOAD"),
        ("PUT", "/subres/k?partNumber=1", 400, "InvalidArgument", "without uploadId"),
    ] {
        let r = header_signed(&gw, method, path, &sha256_hex(b""), b"");
        let text = String::from_utf8_lossy(&r.body).into_owned();
        assert_eq!((r.status, error_code(&r.body).as_str()), (status, code), "{method} {path}: {text}");
        assert!(text.contains(detail), "{method} {path}: {text}");
    }
    // S3 lists the methods the sub-resource has operations for.
    let r = header_signed(&gw, "DELETE", "/subres-empty?acl", &sha256_hex(b""), b"");
    assert_eq!(r.header("allow"), Some("GET, PUT"));
    let r = header_signed(&gw, "PUT", "/subres/k?uploadId=abc", &sha256_hex(b""), b"");
    assert_eq!(r.header("allow"), Some("DELETE, POST, GET"));
    let buckets = c.list_buckets().send().await.unwrap();
    let names: Vec<_> = buckets.buckets().iter().filter_map(|b| b.name()).collect();
    assert!(names.contains(&"subres-empty"), "{names:?}");
    assert_eq!(penstock_tests::get(&c, "subres", "k").await, b"keep me");
    // The sub-resources s3s does route still work.
    c.delete_bucket_policy().bucket("subres-empty").send().await.unwrap();
    c.delete_object_tagging().bucket("subres").key("k").send().await.unwrap();
    c.delete_bucket().bucket("subres-empty").send().await.unwrap();
}

/// An upload that declares more than the 5 GiB one PUT or part may carry is refused with S3's
/// 400 `EntityTooLarge` (naming the proposed and the allowed size) before its body is read: a
/// client waiting for 100 Continue gets the refusal instead, and nothing is stored. The
/// declared size of an aws-chunked body counts as its length.
#[tokio::test]
async fn uploads_over_five_gib_are_refused_before_their_body() {
    use aws_sigv4::http_request::SignableBody;
    let (gw, c) = Gateway::with_bucket("big").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    for (length_header, size) in [("content-length", 6u64 << 30), ("x-amz-decoded-content-length", (5u64 << 30) + 1)] {
        let (added, _) = Signer::admin().sign(
            "PUT",
            &format!("{}/big/k", gw.endpoint),
            &[("host", host.as_str())],
            SignableBody::UnsignedPayload,
        );
        let mut head = format!("PUT /big/k HTTP/1.1\r\nHost: {host}\r\nExpect: 100-continue\r\n");
        for (k, v) in &added {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        if length_header == "content-length" {
            head.push_str(&format!("Content-Length: {size}\r\n\r\n"));
        } else {
            head.push_str(&format!("x-amz-decoded-content-length: {size}\r\nContent-Length: 100\r\n\r\n"));
        }
        let mut conn = Conn::open(&gw);
        conn.send(head.as_bytes());
        let r = conn.answer(false);
        let text = String::from_utf8_lossy(&r.body).into_owned();
        assert_eq!((r.status, error_code(&r.body).as_str()), (400, "EntityTooLarge"), "{length_header}: {text}");
        assert!(
            text.contains(&format!("<ProposedSize>{size}</ProposedSize>"))
                && text.contains("<MaxSizeAllowed>5368709120</MaxSizeAllowed>"),
            "{text}"
        );
    }
    assert!(c.head_object().bucket("big").key("k").send().await.is_err(), "nothing stored");
}
