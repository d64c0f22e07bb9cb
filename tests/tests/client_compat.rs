//! Behaviours that stock S3 clients depend on, each found by using the gateway as a new user
//! would (issue #23): interim responses, resent parts, part checksums, tag counts, content
//! encodings, ignored Range headers, request ids in errors, directory markers with a body; and
//! two limits S3 enforces (#16): key length, presigned URL lifetime (the latter in the boto3 suite);
//! a `+` left unencoded in the path, read as the client signed it; a carriage return in a key,
//! written in XML documents so that parsers read it back; S3 functionality the gateway does
//! not have (appends, newer checksum algorithms), refused rather than misread; an `Expires` that
//! is no date, kept as sent.
//! Some need bytes on the wire that the SDK would not send, so they speak HTTP/1.1 over a socket
//! with presigned URLs.

use std::time::Duration;

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode, ChecksumType, CompletedMultipartUpload, CompletedPart};
use base64::Engine;
use penstock_tests::raw::Conn;
use penstock_tests::{get, md5_hex, pattern, put, Gateway, Upload};

fn presigning() -> PresigningConfig {
    PresigningConfig::expires_in(Duration::from_secs(600)).unwrap()
}

/// botocore sends `Expect: 100-continue` on every PUT with a file-like body, empty ones too,
/// and misreads the next answer on the connection unless an interim response came first.
#[tokio::test]
async fn expect_continue_gets_an_interim_response_even_without_a_body() {
    let (gw, c) = Gateway::with_bucket("cont").await;
    let empty = c.put_object().bucket("cont").key("pkg/__init__.py").presigned(presigning()).await.unwrap();
    let full = c.put_object().bucket("cont").key("pkg/a.py").presigned(presigning()).await.unwrap();
    let read = c.get_object().bucket("cont").key("pkg/a.py").presigned(presigning()).await.unwrap();
    let mut conn = Conn::open(&gw);
    let expect = ("Expect", "100-continue".to_owned());

    conn.send_head(&empty, &[("Content-Length", "0".into()), expect.clone()]);
    assert_eq!(conn.answer(false).status, 100);
    let a = conn.answer(false);
    assert_eq!(a.status, 200);
    assert_eq!(a.header("etag"), Some("\"d41d8cd98f00b204e9800998ecf8427e\""));

    // The same connection carries on, a body after the interim response as usual.
    conn.send_head(&full, &[("Content-Length", "5".into()), expect.clone()]);
    assert_eq!(conn.answer(false).status, 100);
    conn.send(b"hello");
    assert_eq!(conn.answer(false).status, 200);
    conn.send_head(&read, &[]);
    let a = conn.answer(false);
    assert_eq!((a.status, a.body.as_slice()), (200, &b"hello"[..]));

    // Without the expectation there is no interim response; a refused empty request gets one
    // before its error (the connection stays in step).
    conn.send_head(&empty, &[("Content-Length", "0".into())]);
    assert_eq!(conn.answer(false).status, 200);
    let denied = gw
        .client_with("NOSUCHKEY", "nosuchsecret")
        .put_object()
        .bucket("cont")
        .key("x")
        .presigned(presigning())
        .await
        .unwrap();
    conn.send_head(&denied, &[("Content-Length", "0".into()), expect]);
    assert_eq!(conn.answer(false).status, 100);
    assert_eq!(conn.answer(false).status, 403);
    conn.send_head(&read, &[]);
    assert_eq!(conn.answer(false).status, 200);
}

/// A client that waits for `100 Continue` before it sends a body is refused before it sends it:
/// the access check answers first, for small uploads too (botocore waits on every PUT), and an
/// upload the caller may make gets the interim response and then its answer.
#[tokio::test]
async fn refused_uploads_are_answered_before_their_body() {
    let (gw, c) = Gateway::with_bucket("guarded").await;
    let mut conn = Conn::open(&gw);
    let head = "PUT /guarded/obj HTTP/1.1\r\nHost: x\r\nContent-Length: 123\r\nExpect: 100-continue\r\n\r\n";
    conn.send(head.as_bytes());
    let a = conn.answer(false);
    assert_eq!(a.status, 403, "no 100 Continue for an anonymous upload to a private bucket");
    // The same addressed virtual-hosted style (the Host names the bucket, the path is the key).
    let mut conn = Conn::open(&gw);
    let head = "PUT /obj HTTP/1.1\r\nHost: guarded.localhost\r\nContent-Length: 123\r\nExpect: 100-continue\r\n\r\n";
    conn.send(head.as_bytes());
    assert_eq!(conn.answer(false).status, 403, "virtual-hosted style too");

    let put = c.put_object().bucket("guarded").key("obj").presigned(presigning()).await.unwrap();
    let mut conn = Conn::open(&gw);
    conn.send_head(&put, &[("Content-Length", "5".into()), ("Expect", "100-continue".into())]);
    assert_eq!(conn.answer(false).status, 100);
    conn.send(b"hello");
    assert_eq!(conn.answer(false).status, 200);
    assert_eq!(get(&c, "guarded", "obj").await, b"hello");
}

/// Two uploads of one part overlap and the one that started first finishes last: S3 keeps the
/// part whose upload completed last, and completing with its ETag succeeds.
#[tokio::test]
async fn resent_part_that_finishes_last_is_the_part() {
    let (gw, c) = Gateway::with_bucket("resent").await;
    let up = Upload::start(&c, "resent", "obj").await;
    let first = pattern(1, 3 << 20);
    let second = pattern(2, 2 << 20);
    let url = c
        .upload_part()
        .bucket("resent")
        .key("obj")
        .upload_id(&up.id)
        .part_number(1)
        .presigned(presigning())
        .await
        .unwrap();
    let mut conn = Conn::open(&gw);
    conn.send_head(&url, &[("Content-Length", first.len().to_string())]);
    conn.send(&first[..1 << 20]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(up.part(1, second.clone()).await, format!("\"{}\"", md5_hex(&second)));
    conn.send(&first[1 << 20..]);
    let a = conn.answer(false);
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let etag_first = a.header("etag").unwrap().to_owned();
    assert_eq!(etag_first, format!("\"{}\"", md5_hex(&first)));

    let parts = up.list_parts().await;
    assert_eq!(parts.parts()[0].e_tag(), Some(etag_first.as_str()));
    let e = up.try_complete(&[(1, format!("\"{}\"", md5_hex(&second)))]).await.unwrap_err();
    assert_eq!(e.code(), Some("InvalidPart"));
    up.complete(&[(1, etag_first)]).await;
    assert_eq!(get(&c, "resent", "obj").await, first);

    // The bytes joined are always the recorded part: a part file that is not the one its record
    // describes (replaced after the ETags were checked, or torn from its record) is refused.
    put(&c, "resent", "anchor", b"a").await;
    let up = Upload::start(&c, "resent", "obj2").await;
    let etag = up.part(1, second.clone()).await;
    let uploads = gw.folder_dir("anchor").join(".penstock/uploads").join(&up.id);
    std::fs::write(uploads.join("swap"), pattern(3, second.len())).unwrap();
    std::fs::rename(uploads.join("swap"), uploads.join("1")).unwrap();
    let e = up.try_complete(&[(1, etag)]).await.unwrap_err();
    assert_eq!(e.code(), Some("InvalidPart"));
    let e = c.head_object().bucket("resent").key("obj2").send().await.unwrap_err();
    assert_eq!(e.raw_response().unwrap().status().as_u16(), 404);
}

/// A part read (`?partNumber=N`) of a COMPOSITE multipart object answers that part's checksum
/// as COMPOSITE, as the whole-object HEAD and GetObjectAttributes do.
#[tokio::test]
async fn part_reads_of_composite_objects_carry_the_part_checksum() {
    let (_gw, c) = Gateway::with_bucket("comp").await;
    let sizes = [5 << 20, 5 << 20, 1000];
    for algo in
        [ChecksumAlgorithm::Sha256, ChecksumAlgorithm::Sha1, ChecksumAlgorithm::Crc32, ChecksumAlgorithm::Crc32C]
    {
        let key = format!("obj-{}", algo.as_str());
        let up = c
            .create_multipart_upload()
            .bucket("comp")
            .key(&key)
            .checksum_algorithm(algo.clone())
            .checksum_type(ChecksumType::Composite)
            .send()
            .await
            .unwrap();
        let id = up.upload_id().unwrap();
        let mut done = Vec::new();
        let mut sums = Vec::new();
        for (i, n) in sizes.iter().enumerate() {
            let r = c
                .upload_part()
                .bucket("comp")
                .key(&key)
                .upload_id(id)
                .part_number(i as i32 + 1)
                .checksum_algorithm(algo.clone())
                .body(ByteStream::from(pattern(i as u64 + 7, *n)))
                .send()
                .await
                .unwrap();
            let sum = [r.checksum_sha256(), r.checksum_sha1(), r.checksum_crc32(), r.checksum_crc32_c()]
                .into_iter()
                .flatten()
                .next()
                .unwrap()
                .to_owned();
            let mut part = CompletedPart::builder().part_number(i as i32 + 1).e_tag(r.e_tag().unwrap());
            part = match algo {
                ChecksumAlgorithm::Sha256 => part.checksum_sha256(&sum),
                ChecksumAlgorithm::Sha1 => part.checksum_sha1(&sum),
                ChecksumAlgorithm::Crc32 => part.checksum_crc32(&sum),
                _ => part.checksum_crc32_c(&sum),
            };
            done.push(part.build());
            sums.push(sum);
        }
        c.complete_multipart_upload()
            .bucket("comp")
            .key(&key)
            .upload_id(id)
            .multipart_upload(CompletedMultipartUpload::builder().set_parts(Some(done)).build())
            .send()
            .await
            .unwrap();
        for n in [1, 2, 3] {
            let h = c
                .head_object()
                .bucket("comp")
                .key(&key)
                .part_number(n)
                .checksum_mode(ChecksumMode::Enabled)
                .send()
                .await
                .unwrap();
            assert_eq!(h.checksum_type(), Some(&ChecksumType::Composite), "{key} part {n}");
            let got = [h.checksum_sha256(), h.checksum_sha1(), h.checksum_crc32(), h.checksum_crc32_c()]
                .into_iter()
                .flatten()
                .next();
            assert_eq!(got, Some(sums[n as usize - 1].as_str()), "{key} part {n}");
            assert_eq!(h.content_length(), Some(sizes[n as usize - 1] as i64));
        }
        let h = c.head_object().bucket("comp").key(&key).checksum_mode(ChecksumMode::Enabled).send().await.unwrap();
        assert_eq!(h.checksum_type(), Some(&ChecksumType::Composite));
    }
}

/// HEAD carries `x-amz-tagging-count` as GET does; `aws-chunked` is transport framing, not an
/// encoding of the object; errors carry one request id in header and body.
#[tokio::test]
async fn tag_counts_encodings_and_request_ids() {
    let (gw, c) = Gateway::with_bucket("hdrs").await;
    c.put_object()
        .bucket("hdrs")
        .key("tagged")
        .tagging("a=1&b=2")
        .body(ByteStream::from_static(b"t"))
        .send()
        .await
        .unwrap();
    let head = c.head_object().bucket("hdrs").key("tagged").presigned(presigning()).await.unwrap();
    let mut conn = Conn::open(&gw);
    conn.send_head(&head, &[]);
    let a = conn.answer(true);
    assert_eq!((a.status, a.header("x-amz-tagging-count")), (200, Some("2")));
    put(&c, "hdrs", "untagged", b"u").await;
    let head = c.head_object().bucket("hdrs").key("untagged").presigned(presigning()).await.unwrap();
    conn.send_head(&head, &[]);
    assert_eq!(conn.answer(true).header("x-amz-tagging-count"), None);

    for (sent, stored) in [
        ("gzip, aws-chunked", Some("gzip")),
        ("aws-chunked,gzip", Some("gzip")),
        ("aws-chunked", None),
        ("br", Some("br")),
    ] {
        let url = c.put_object().bucket("hdrs").key("enc").presigned(presigning()).await.unwrap();
        conn.send_head(&url, &[("Content-Length", "3".into()), ("Content-Encoding", sent.into())]);
        conn.send(b"abc");
        assert_eq!(conn.answer(false).status, 200);
        let h = c.head_object().bucket("hdrs").key("enc").send().await.unwrap();
        assert_eq!(h.content_encoding(), stored, "{sent}");
    }

    let missing = c.get_object().bucket("hdrs").key("missing").presigned(presigning()).await.unwrap();
    conn.send_head(&missing, &[]);
    let a = conn.answer(false);
    assert_eq!(a.status, 404);
    let id = a.header("x-amz-request-id").unwrap().to_owned();
    let body = String::from_utf8(a.body).unwrap();
    assert!(body.contains(&format!("<RequestId>{id}</RequestId>")), "{body}");
    assert!(body.contains("<Code>NoSuchKey</Code>"), "{body}");
    let missing = c.head_object().bucket("hdrs").key("missing").presigned(presigning()).await.unwrap();
    conn.send_head(&missing, &[]);
    let a = conn.answer(true);
    assert_eq!(a.status, 404);
    assert_eq!(a.header("x-amz-request-id").map(str::len), Some(16));
    // The SDK reads the same id.
    let e = c.get_object().bucket("hdrs").key("missing").send().await.unwrap_err();
    let meta = e.into_service_error();
    assert_eq!(meta.meta().extra("aws_request_id").map(str::len), Some(16));
}

/// A Range S3 ignores gives 200 and the whole object; one it honours still works, one past the
/// end is still 416, and numbers too large to hold are read as the RFC reads them.
#[tokio::test]
async fn ranges_s3_ignores_give_the_whole_object() {
    let (gw, c) = Gateway::with_bucket("rng").await;
    put(&c, "rng", "obj", b"0123456789").await;
    for r in ["bytes=5-2", "bytes=0-1,4-5", "items=0-1", "bytes=abc", "bytes=1", "bytes="] {
        let o = c.get_object().bucket("rng").key("obj").range(r).send().await.unwrap();
        assert_eq!(o.content_range(), None, "{r}");
        assert_eq!(o.content_length(), Some(10), "{r}");
        assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), b"0123456789", "{r}");
        let h = c.head_object().bucket("rng").key("obj").range(r).send().await.unwrap();
        assert_eq!(h.content_length(), Some(10), "{r}");
    }
    let o = c.get_object().bucket("rng").key("obj").range("bytes=2-4").send().await.unwrap();
    assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), b"234");
    let e = c.get_object().bucket("rng").key("obj").range("bytes=20-").send().await.unwrap_err();
    assert_eq!(e.raw_response().unwrap().status().as_u16(), 416);
    // Numbers too large to hold still ask for what they name (RFC 9110): the rest of the
    // object, nothing (416), the whole object. They were taken for malformed and ignored.
    let huge = "99999999999999999999999";
    let o = c.get_object().bucket("rng").key("obj").range(format!("bytes=5-{huge}")).send().await.unwrap();
    assert_eq!(o.content_range(), Some("bytes 5-9/10"));
    assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), b"56789");
    let e = c.get_object().bucket("rng").key("obj").range(format!("bytes={huge}-")).send().await.unwrap_err();
    assert_eq!(e.raw_response().unwrap().status().as_u16(), 416);
    let o = c.get_object().bucket("rng").key("obj").range(format!("bytes=-{huge}")).send().await.unwrap();
    assert_eq!(o.content_range(), Some("bytes 0-9/10"));
    assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), b"0123456789");
    // An empty object: a suffix range selects nothing and gets the whole (empty) object, as on
    // S3 (Trino reads tails so); any other range is unsatisfiable. The fuzzer found the suffix
    // case panicking.
    put(&c, "rng", "empty", b"").await;
    for r in ["bytes=-9", "bytes=-1"] {
        let o = c.get_object().bucket("rng").key("empty").range(r).send().await.unwrap();
        assert_eq!((o.content_length(), o.content_range()), (Some(0), None), "{r}");
        let h = c.head_object().bucket("rng").key("empty").range(r).send().await.unwrap();
        assert_eq!(h.content_length(), Some(0), "{r}");
    }
    // The refusal names the range and the object's size, in an answer typed application/xml:
    // clients built on the AWS CRT (awscrt, Mountpoint, the PyTorch connector) start every
    // download with a ranged GET of its first part and read `ActualObjectSize` 0 from this
    // answer to fetch an empty object whole; without both they fail on every empty object.
    for r in ["bytes=0-", "bytes=0-0", "bytes=0-8388607"] {
        let e = c.get_object().bucket("rng").key("empty").range(r).send().await.unwrap_err();
        let raw = e.raw_response().unwrap();
        assert_eq!(raw.status().as_u16(), 416, "{r}");
        assert_eq!(raw.headers().get("content-type"), Some("application/xml"), "{r}");
        let body = std::str::from_utf8(raw.body().bytes().unwrap()).unwrap();
        let named = format!("<RangeRequested>{r}</RangeRequested><ActualObjectSize>0</ActualObjectSize>");
        assert!(body.contains(&named), "{r}: {body}");
        // The size in `Content-Range` too, as S3 and HTTP's 416 give it.
        assert_eq!(raw.headers().get("content-range"), Some("bytes */0"), "{r}");
    }
    // ... and then asks for its part 1, which is empty: no byte range to name.
    let o = c.get_object().bucket("rng").key("empty").part_number(1).send().await.unwrap();
    assert_eq!((o.content_length(), o.content_range()), (Some(0), None));
    let e = c.get_object().bucket("rng").key("obj").range("bytes=20-30").send().await.unwrap_err();
    let body = std::str::from_utf8(e.raw_response().unwrap().body().bytes().unwrap()).unwrap().to_owned();
    assert!(body.contains("<ActualObjectSize>10</ActualObjectSize>"), "{body}");
    assert_eq!(e.raw_response().unwrap().headers().get("content-range"), Some("bytes */10"));
    // Any error document that carries elements of its own is typed so (412 names its condition).
    let e = c.get_object().bucket("rng").key("obj").if_match("\"nope\"").send().await.unwrap_err();
    let raw = e.raw_response().unwrap();
    assert_eq!(raw.status().as_u16(), 412);
    assert_eq!(raw.headers().get("content-type"), Some("application/xml"));
    // Date conditions that are not dates are ignored too (RFC 9110), signed or not; real ones
    // still hold, and a 304 names the object's validators.
    for (name, value) in [("if-modified-since", "garbage"), ("if-unmodified-since", "Tue, 99 Foo 1994")] {
        let o = c
            .get_object()
            .bucket("rng")
            .key("obj")
            .customize()
            .mutate_request(move |r| {
                r.headers_mut().insert(name, value);
            })
            .send()
            .await
            .unwrap();
        assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), b"0123456789", "{name}: {value}");
    }
    let mut conn = Conn::open(&gw);
    let url = c.get_object().bucket("rng").key("obj").presigned(presigning()).await.unwrap();
    // Now: not before the object's last change, and no date to come (which would be ignored).
    let now = aws_sdk_s3::primitives::DateTime::from(std::time::SystemTime::now())
        .fmt(aws_sdk_s3::primitives::DateTimeFormat::HttpDate)
        .unwrap();
    conn.send_head(&url, &[("If-Modified-Since", now)]);
    let a = conn.answer(false);
    assert_eq!(a.status, 304);
    let etag = c.head_object().bucket("rng").key("obj").send().await.unwrap().e_tag().unwrap().to_owned();
    assert_eq!(a.header("etag"), Some(etag.as_str()), "a 304 carries the ETag");
    assert!(a.header("last-modified").is_some(), "and Last-Modified");
    // Missing objects and buckets answer as without the header.
    let e = c.get_object().bucket("rng").key("nope").range("bytes=5-2").send().await.unwrap_err();
    assert_eq!(e.code(), Some("NoSuchKey"));
    // Presigned too: the signature in the query was checked once, and only once.
    let url = c.get_object().bucket("rng").key("obj").presigned(presigning()).await.unwrap();
    let mut conn = Conn::open(&gw);
    conn.send_head(&url, &[("Range", "bytes=9-3".into())]);
    let a = conn.answer(false);
    assert_eq!((a.status, a.body.as_slice()), (200, &b"0123456789"[..]));
    // Another user's bucket stays closed however the Range is written.
    let u = gw.admin(&["user", "create", "--domain", "default", "--role", "user", "mallory"]);
    let kp = gw.admin(&["keypair", "create", u["id"].as_str().unwrap()]);
    let mallory = gw.client_with(kp["access_key"].as_str().unwrap(), kp["secret_key"].as_str().unwrap());
    for r in ["bytes=5-2", "bytes=2-4"] {
        let e = mallory.get_object().bucket("rng").key("obj").range(r).send().await.unwrap_err();
        assert_eq!(e.code(), Some("AccessDenied"), "{r}");
    }
}

/// A key ending in `/` may carry a body (some tools write folder markers with a byte or a JSON
/// document): it stays a directory, and the key reads back exactly.
#[tokio::test]
async fn directory_markers_with_a_body_read_back_exactly() {
    let (gw, c) = Gateway::with_bucket("mkr").await;
    put(&c, "mkr", "anchor", b"a").await;
    let doc = br#"{"kind":"folder"}"#;
    let r = c
        .put_object()
        .bucket("mkr")
        .key("models/")
        .body(ByteStream::from_static(doc))
        .content_type("application/json")
        .metadata("owner", "ml")
        .send()
        .await
        .unwrap();
    assert_eq!(r.e_tag().unwrap(), format!("\"{}\"", md5_hex(doc)));
    let dir = gw.folder_dir("anchor");
    assert!(dir.join("models").is_dir(), "the marker is a directory sessions see");

    let o = c.get_object().bucket("mkr").key("models/").send().await.unwrap();
    assert_eq!(o.content_type(), Some("application/json"));
    assert_eq!(o.metadata().unwrap().get("owner").map(String::as_str), Some("ml"));
    assert_eq!(o.e_tag().unwrap(), format!("\"{}\"", md5_hex(doc)));
    assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), doc);
    let part = c.get_object().bucket("mkr").key("models/").range("bytes=1-6").send().await.unwrap();
    assert_eq!(part.body.collect().await.unwrap().into_bytes().as_ref(), &doc[1..7]);

    // Objects below it live in the directory; the listing shows the marker with its size.
    put(&c, "mkr", "models/m.bin", b"weights").await;
    assert_eq!(std::fs::read(dir.join("models/m.bin")).unwrap(), b"weights");
    let l = c.list_objects_v2().bucket("mkr").prefix("models/").send().await.unwrap();
    let listed: Vec<(&str, i64, &str)> =
        l.contents().iter().map(|o| (o.key().unwrap(), o.size().unwrap(), o.e_tag().unwrap())).collect();
    let doc_etag = format!("\"{}\"", md5_hex(doc));
    let bin_etag = format!("\"{}\"", md5_hex(b"weights"));
    assert_eq!(listed, [("models/", doc.len() as i64, doc_etag.as_str()), ("models/m.bin", 7, bin_etag.as_str())]);

    // A single byte; then an empty marker makes it a bare directory again.
    put(&c, "mkr", "models/", b"x").await;
    assert_eq!(get(&c, "mkr", "models/").await, b"x");
    put(&c, "mkr", "models/", b"").await;
    let h = c.head_object().bucket("mkr").key("models/").send().await.unwrap();
    assert_eq!(h.content_length(), Some(0));
    assert_eq!(h.e_tag(), Some("\"d41d8cd98f00b204e9800998ecf8427e\""));
    assert_eq!(get(&c, "mkr", "models/").await, b"");
    assert_eq!(std::fs::read_dir(dir.join(".penstock/markers")).unwrap().count(), 0);

    // Copies onto and from marker keys, and deletion: the payload goes, the objects below stay.
    c.copy_object().bucket("mkr").key("models/").copy_source("mkr/anchor").send().await.unwrap();
    assert_eq!(get(&c, "mkr", "models/").await, b"a");
    c.copy_object().bucket("mkr").key("copied").copy_source("mkr/models/").send().await.unwrap();
    assert_eq!(get(&c, "mkr", "copied").await, b"a");
    c.delete_object().bucket("mkr").key("models/").send().await.unwrap();
    let e = c.head_object().bucket("mkr").key("models/").send().await.unwrap_err();
    assert_eq!(e.raw_response().unwrap().status().as_u16(), 404);
    assert_eq!(get(&c, "mkr", "models/m.bin").await, b"weights");
    assert_eq!(std::fs::read_dir(dir.join(".penstock/markers")).unwrap().count(), 0);

    // Checksums of a marker's body are verified and stored like any object's.
    let crc = base64::engine::general_purpose::STANDARD.encode(crc32c::crc32c(b"zz").to_be_bytes());
    c.put_object()
        .bucket("mkr")
        .key("sums/")
        .body(ByteStream::from_static(b"zz"))
        .checksum_crc32_c(&crc)
        .send()
        .await
        .unwrap();
    let h = c.head_object().bucket("mkr").key("sums/").checksum_mode(ChecksumMode::Enabled).send().await.unwrap();
    assert_eq!(h.checksum_crc32_c(), Some(crc.as_str()));
    let e = c
        .put_object()
        .bucket("mkr")
        .key("bad/")
        .body(ByteStream::from_static(b"zz"))
        .checksum_crc32_c("AAAAAA==")
        .send()
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("BadDigest"));
    assert!(!dir.join("bad").exists(), "a refused marker leaves nothing");
}

/// Keys are at most 1024 bytes, as on S3 (`KeyTooLongError`); the longest one works.
#[tokio::test]
async fn keys_longer_than_1024_bytes_are_refused() {
    let (_gw, c) = Gateway::with_bucket("long").await;
    let seg = "s".repeat(200);
    let longest = format!("{seg}/{seg}/{seg}/{seg}/{seg}/{}", "k".repeat(19));
    assert_eq!(longest.len(), 1024);
    put(&c, "long", &longest, b"1").await;
    assert_eq!(get(&c, "long", &longest).await, b"1");
    let e = c
        .put_object()
        .bucket("long")
        .key(format!("{longest}x"))
        .body(ByteStream::from_static(b"2"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(e.code(), Some("KeyTooLongError"));
    assert_eq!(e.raw_response().unwrap().status().as_u16(), 400);
    // The same limit holds for keys named in a DeleteObjects document: reported per key.
    use aws_sdk_s3::types::{Delete, ObjectIdentifier};
    let too_long = format!("{longest}x");
    let out = c
        .delete_objects()
        .bucket("long")
        .delete(
            Delete::builder()
                .objects(ObjectIdentifier::builder().key(&too_long).build().unwrap())
                .objects(ObjectIdentifier::builder().key(&longest).build().unwrap())
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let errors = out.errors();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0].code(), Some("KeyTooLongError"));
    assert_eq!(errors[0].key(), Some(too_long.as_str()));
    assert_eq!(out.deleted().len(), 1);
}

/// A `+` sent unencoded in the path: S3 reads it as a space, and clients written against S3
/// (aws4fetch) sign it so; clients that sign the `+` itself get a plus, as before. The signature
/// decides, for header-signed and presigned requests; a signature that holds for neither is
/// refused and writes nothing.
#[tokio::test]
async fn a_plus_in_the_path_is_read_as_the_client_signed_it() {
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, c) = Gateway::with_bucket("plus").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    // PUT `body` on the wire at `wire`, signed for `signed` (the paths differ only in escapes).
    let put_as = |wire: &str, signed: &str, body: &[u8], tamper: bool| {
        let url = format!("{}{signed}", gw.endpoint);
        let signer = Signer::admin().path_as_written();
        let (added, _) = signer.sign("PUT", &url, &[("host", host.as_str())], SignableBody::Bytes(body));
        let added: Vec<(String, String)> = added
            .into_iter()
            .map(|(k, v)| {
                if !(tamper && k.eq_ignore_ascii_case("authorization")) {
                    return (k, v);
                }
                // The signature's last hex digit changed.
                let flipped = if v.ends_with('0') { '1' } else { '0' };
                let v = format!("{}{flipped}", &v[..v.len() - 1]);
                (k, v)
            })
            .collect();
        let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Conn::open(&gw).unsigned("PUT", wire, &headers, body)
    };
    assert_eq!(put_as("/plus/a+b", "/plus/a%20b", b"space", false).status, 200);
    assert_eq!(put_as("/plus/c+d", "/plus/c%2Bd", b"plus", false).status, 200);
    let refused = put_as("/plus/e+f", "/plus/e%20f", b"x", true);
    assert_eq!(refused.status, 403, "{}", String::from_utf8_lossy(&refused.body));
    let keys: Vec<String> = c
        .list_objects_v2()
        .bucket("plus")
        .send()
        .await
        .unwrap()
        .contents()
        .iter()
        .filter_map(|o| o.key().map(str::to_owned))
        .collect();
    assert_eq!(keys, ["a b", "c+d"]);
    assert_eq!(get(&c, "plus", "a b").await, b"space");
    assert_eq!(get(&c, "plus", "c+d").await, b"plus");

    // Presigned GETs whose path came with `+` for the SDK's escape: `%20` is read as a space
    // only where the URL was signed so, `%2B` stays a plus.
    for (key, escape, body) in [("a b", "%20", &b"space"[..]), ("c+d", "%2B", &b"plus"[..])] {
        let url = c.get_object().bucket("plus").key(key).presigned(presigning()).await.unwrap();
        let uri: http::Uri = url.uri().parse().unwrap();
        let path = uri.path().replace(escape, "+");
        let mut conn = Conn::open(&gw);
        conn.send(format!("GET {path}?{} HTTP/1.1\r\nHost: {host}\r\n\r\n", uri.query().unwrap()).as_bytes());
        let a = conn.answer(false);
        assert_eq!((a.status, a.body.as_slice()), (200, body), "{key}: {}", String::from_utf8_lossy(&a.body));
    }
}

/// GDAL's `/vsis3/` in path style signs its bucket listing (`GET /`) for the canonical URI `//`:
/// the listing is answered to the key whose signature that is, and refused to a wrong one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bucket_listing_signed_as_gdal_signs_it_is_answered() {
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, _c) = Gateway::with_bucket("listed-for-gdal").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let list_signed_for = |signed: &str, tamper: bool| {
        let url = format!("{}{signed}", gw.endpoint);
        let (added, _) =
            Signer::admin().path_as_written().sign("GET", &url, &[("host", host.as_str())], SignableBody::Bytes(b""));
        let added: Vec<(String, String)> = added
            .into_iter()
            .map(|(k, v)| match tamper && k.eq_ignore_ascii_case("authorization") {
                true => (k, format!("{}{}", &v[..v.len() - 1], if v.ends_with('0') { '1' } else { '0' })),
                false => (k, v),
            })
            .collect();
        let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Conn::open(&gw).unsigned("GET", "/", &headers, b"")
    };
    for signed in ["/", "//"] {
        let a = list_signed_for(signed, false);
        let body = String::from_utf8_lossy(&a.body);
        assert_eq!(a.status, 200, "{signed}: {body}");
        assert!(body.contains("<Name>listed-for-gdal</Name>"), "{signed}: {body}");
        let refused = list_signed_for(signed, true);
        let body = String::from_utf8_lossy(&refused.body);
        assert_eq!(refused.status, 403, "{signed}: {body}");
        assert!(body.contains("SignatureDoesNotMatch"), "{signed}: {body}");
    }
}

/// HTTP/1.1 answers spell header names as S3 does: HTSlib (samtools), Fluent Bit and the AWS SDK
/// for Java 1.7-1.10 search an upload part's answer for `ETag: "` and abort the upload without
/// it. The `x-amz-*` names and user metadata stay in lower case, as S3 writes them.
#[tokio::test]
async fn answers_spell_header_names_as_s3_does() {
    let (gw, c) = Gateway::with_bucket("spelt").await;
    let put = c.put_object().bucket("spelt").key("k").presigned(presigning()).await.unwrap();
    let read = c.get_object().bucket("spelt").key("k").presigned(presigning()).await.unwrap();
    let mut conn = Conn::open(&gw);
    conn.send_head(&put, &[("Content-Length", "3".into())]);
    conn.send(b"abc");
    let names = |a: &penstock_tests::raw::Answer| a.headers.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    let a = conn.answer(false);
    assert_eq!(a.status, 200);
    for want in ["ETag", "Content-Length", "Date", "x-amz-request-id"] {
        assert!(names(&a).iter().any(|n| n == want), "{want} in {:?}", names(&a));
    }
    conn.send_head(&read, &[]);
    let a = conn.answer(false);
    assert_eq!((a.status, a.body.as_slice()), (200, &b"abc"[..]));
    for want in ["ETag", "Last-Modified", "Content-Type", "Accept-Ranges", "x-amz-request-id"] {
        assert!(names(&a).iter().any(|n| n == want), "{want} in {:?}", names(&a));
    }
    // Errors too.
    let missing = c.get_object().bucket("spelt").key("none").presigned(presigning()).await.unwrap();
    conn.send_head(&missing, &[]);
    let a = conn.answer(false);
    assert_eq!(a.status, 404);
    assert!(names(&a).iter().any(|n| n == "Content-Type"), "{:?}", names(&a));
}

/// A key holding a carriage return lists as itself: XML parsers read a literal CR in text as a
/// line feed, so listings, deletes' results and upload documents write it as `&#13;` (rclone's
/// encoding tests listed `\rkey` as `\nkey`, and then found no such object).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn carriage_returns_in_keys_survive_xml() {
    use aws_sdk_s3::types::{Delete, ObjectIdentifier};
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, c) = Gateway::with_bucket("crs").await;
    let keys = ["\rlead", "trail\r", "mid\rdle/inner", "line\r\nend"];
    for k in keys {
        put(&c, "crs", k, b"x").await;
    }
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let raw = |method: &str, query: &str, body: &[u8]| {
        let url = format!("{}/crs?{query}", gw.endpoint);
        let (added, _) = Signer::admin().sign(method, &url, &[("host", host.as_str())], SignableBody::Bytes(body));
        let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        Conn::open(&gw).unsigned(method, &format!("/crs?{query}"), &headers, body)
    };
    for query in ["list-type=2", "list-type=2&delimiter=%2F", "delimiter=%2F", "versions", "uploads"] {
        let a = raw("GET", query, b"");
        assert_eq!(a.status, 200, "{query}: {}", String::from_utf8_lossy(&a.body));
        assert!(!a.body.contains(&b'\r'), "{query}: a literal CR: {}", String::from_utf8_lossy(&a.body));
    }
    let listed = raw("GET", "list-type=2", b"");
    let text = String::from_utf8_lossy(&listed.body);
    assert!(text.contains("<Key>&#13;lead</Key>") && text.contains("<Key>line&#13;\nend</Key>"), "{text}");
    let grouped = raw("GET", "list-type=2&delimiter=%2F", b"");
    assert!(String::from_utf8_lossy(&grouped.body).contains("<Prefix>mid&#13;dle/</Prefix>"));

    // The SDK reads each key back as written, and reaches the object by it.
    let out = c.list_objects_v2().bucket("crs").send().await.unwrap();
    let mut listed: Vec<String> = out.contents().iter().filter_map(|o| o.key().map(str::to_owned)).collect();
    listed.sort();
    let mut want: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    want.sort();
    assert_eq!(listed, want);
    for k in &listed {
        assert_eq!(get(&c, "crs", k).await, b"x", "{k:?}");
    }

    // Upload documents and a multi-delete's answer name the key the same way.
    let created = c.create_multipart_upload().bucket("crs").key("\rpart").send().await.unwrap();
    assert_eq!(created.key(), Some("\rpart"));
    let parts = raw("GET", "uploads&prefix=%0Dpart", b"");
    assert!(String::from_utf8_lossy(&parts.body).contains("<Key>&#13;part</Key>"));
    let objects: Vec<ObjectIdentifier> =
        keys.iter().map(|k| ObjectIdentifier::builder().key(*k).build().unwrap()).collect();
    let deleted = c
        .delete_objects()
        .bucket("crs")
        .delete(Delete::builder().set_objects(Some(objects)).build().unwrap())
        .send()
        .await
        .unwrap();
    let mut gone: Vec<&str> = deleted.deleted().iter().filter_map(|d| d.key()).collect();
    gone.sort();
    assert_eq!(gone, want.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(c.list_objects_v2().bucket("crs").send().await.unwrap().key_count(), Some(0));
}

/// Requests for S3 functionality the gateway does not have are refused and change nothing,
/// rather than served as something else: an appending PutObject (`x-amz-write-offset-bytes`)
/// replaced the object with the bytes meant for its end; a checksum of an algorithm the gateway
/// does not compute (`x-amz-checksum-sha512`) was taken unchecked. A completion whose parts do
/// not add up to `x-amz-mp-object-size` is refused as S3 refuses it.
#[tokio::test]
async fn functionality_not_kept_is_refused_not_misread() {
    let (_gw, c) = Gateway::with_bucket("notkept").await;
    put(&c, "notkept", "log", b"hello ").await;
    let e = c
        .put_object()
        .bucket("notkept")
        .key("log")
        .write_offset_bytes(6)
        .body(ByteStream::from_static(b"world"))
        .send()
        .await
        .unwrap_err();
    assert_eq!((e.raw_response().unwrap().status().as_u16(), e.code()), (501, Some("NotImplemented")));
    assert_eq!(get(&c, "notkept", "log").await, b"hello ");

    for name in ["x-amz-checksum-sha512", "x-amz-checksum-xxhash64", "x-amz-checksum-md5"] {
        let e = c
            .put_object()
            .bucket("notkept")
            .key("log")
            .body(ByteStream::from_static(b"unchecked"))
            .customize()
            .mutate_request(move |r| {
                r.headers_mut().insert(name, "AAAAAAAAAAA=");
            })
            .send()
            .await
            .unwrap_err();
        assert_eq!((e.raw_response().unwrap().status().as_u16(), e.code()), (400, Some("InvalidRequest")), "{name}");
    }
    assert_eq!(get(&c, "notkept", "log").await, b"hello ");

    let up = c.create_multipart_upload().bucket("notkept").key("mp").send().await.unwrap();
    let id = up.upload_id().unwrap();
    let p = c
        .upload_part()
        .bucket("notkept")
        .key("mp")
        .upload_id(id)
        .part_number(1)
        .body(ByteStream::from_static(b"ten bytes!"))
        .send()
        .await
        .unwrap();
    let parts = CompletedMultipartUpload::builder()
        .parts(CompletedPart::builder().part_number(1).e_tag(p.e_tag().unwrap()).build())
        .build();
    let complete = |size: i64| {
        c.complete_multipart_upload()
            .bucket("notkept")
            .key("mp")
            .upload_id(id)
            .mpu_object_size(size)
            .multipart_upload(parts.clone())
            .send()
    };
    let e = complete(11).await.unwrap_err();
    assert_eq!((e.raw_response().unwrap().status().as_u16(), e.code()), (400, Some("InvalidRequest")));
    assert!(c.head_object().bucket("notkept").key("mp").send().await.is_err(), "nothing completed");
    complete(10).await.unwrap();
    assert_eq!(get(&c, "notkept", "mp").await, b"ten bytes!");
}

/// An `Expires` that is no HTTP date is stored as it came and answered so, as S3 does (the AWS
/// SDKs read it into `ExpiresString`): libs3 sends its dates as `... UTC`, web frameworks send
/// `0`. It was refused with 400 "invalid header". A date is still read as one, and a read's
/// `response-expires` still names its own.
#[tokio::test]
async fn expires_that_is_no_date_is_kept_as_sent() {
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, c) = Gateway::with_bucket("exp").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let put_with = |method: &str, key: &str, query: &str, expires: &str| {
        let path = format!("/exp/{key}{query}");
        let url = format!("{}{path}", gw.endpoint);
        let signed = [("host", host.as_str()), ("expires", expires)];
        let (added, _) = Signer::admin().sign(method, &url, &signed, SignableBody::Bytes(b"x"));
        let mut headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        headers.push(("expires", expires));
        Conn::open(&gw).unsigned(method, &path, &headers, b"x")
    };
    for sent in ["Tue, 01 Jan 2030 00:00:00 UTC", "0", "-1", "2030-01-01T00:00:00Z"] {
        let a = put_with("PUT", "k", "", sent);
        assert_eq!(a.status, 200, "{sent}: {}", String::from_utf8_lossy(&a.body));
        let head = c.head_object().bucket("exp").key("k").send().await.unwrap();
        assert_eq!(head.expires_string(), Some(sent), "HEAD");
        let got = c.get_object().bucket("exp").key("k").send().await.unwrap();
        assert_eq!(got.expires_string(), Some(sent), "GET");
        let ranged = c.get_object().bucket("exp").key("k").range("bytes=0-0").send().await.unwrap();
        assert_eq!(ranged.expires_string(), Some(sent), "ranged GET (s3s's path)");
        let overridden = aws_sdk_s3::primitives::DateTime::from_secs(1_924_992_000);
        let asked = c.get_object().bucket("exp").key("k").response_expires(overridden).send().await.unwrap();
        assert_eq!(asked.expires_string(), Some("Wed, 01 Jan 2031 00:00:00 GMT"), "response-expires");
    }
    // Copies keep it; an upload's object has it from CreateMultipartUpload.
    c.copy_object().bucket("exp").key("copy").copy_source("exp/k").send().await.unwrap();
    let head = c.head_object().bucket("exp").key("copy").send().await.unwrap();
    assert_eq!(head.expires_string(), Some("2030-01-01T00:00:00Z"));
    let created = put_with("POST", "up", "?uploads", "never");
    assert_eq!(created.status, 200, "{}", String::from_utf8_lossy(&created.body));
    let doc = String::from_utf8_lossy(&created.body);
    let id = doc.split("<UploadId>").nth(1).and_then(|s| s.split('<').next()).unwrap().to_owned();
    let part = c
        .upload_part()
        .bucket("exp")
        .key("up")
        .upload_id(&id)
        .part_number(1)
        .body(ByteStream::from_static(b"y"))
        .send()
        .await
        .unwrap();
    let parts = CompletedMultipartUpload::builder()
        .parts(CompletedPart::builder().part_number(1).e_tag(part.e_tag().unwrap()).build())
        .build();
    c.complete_multipart_upload().bucket("exp").key("up").upload_id(&id).multipart_upload(parts).send().await.unwrap();
    let head = c.head_object().bucket("exp").key("up").send().await.unwrap();
    assert_eq!(head.expires_string(), Some("never"));
    // A date stays a date.
    let a = put_with("PUT", "dated", "", "Tue, 01 Jan 2030 00:00:00 GMT");
    assert_eq!(a.status, 200);
    let head = c.head_object().bucket("exp").key("dated").send().await.unwrap();
    assert_eq!(head.expires_string(), Some("Tue, 01 Jan 2030 00:00:00 GMT"));
    #[allow(deprecated)]
    let date = head.expires().map(|d| d.secs());
    assert_eq!(date, Some(1_893_456_000));
}

/// ListBuckets names the owner before the buckets, where S3 writes it: the AWS SDK for Java v1
/// gives each bucket the owner read before it (`Bucket.getOwner()`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bucket_lists_name_the_owner_before_the_buckets() {
    use aws_sigv4::http_request::SignableBody;
    use penstock_tests::sigv4::Signer;

    let (gw, _c) = Gateway::with_bucket("owned").await;
    let host = gw.endpoint.trim_start_matches("http://").to_owned();
    let url = format!("{}/", gw.endpoint);
    let (added, _) = Signer::admin().sign("GET", &url, &[("host", host.as_str())], SignableBody::Bytes(b""));
    let headers: Vec<(&str, &str)> = added.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let a = Conn::open(&gw).unsigned("GET", "/", &headers, b"");
    let doc = String::from_utf8_lossy(&a.body).into_owned();
    assert_eq!(a.status, 200, "{doc}");
    let (owner, buckets) = (doc.find("<Owner>").expect(&doc), doc.find("<Buckets>").expect(&doc));
    assert!(owner < buckets, "{doc}");
    assert!(doc.contains("<Name>owned</Name>"), "{doc}");
}

/// An `If-Modified-Since` (or a copy's `x-amz-copy-source-if-modified-since`) later than now is
/// no valid condition and is ignored, as S3 ignores it (RFC 9110 13.1.3).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modified_since_dates_to_come_are_ignored() {
    let (_gw, c) = Gateway::with_bucket("ims").await;
    put(&c, "ims", "src", b"data").await;
    let tomorrow = aws_sdk_s3::primitives::DateTime::from_secs(
        (std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 86_400) as i64,
    );
    let got = c.get_object().bucket("ims").key("src").if_modified_since(tomorrow).send().await.unwrap();
    assert_eq!(got.body.collect().await.unwrap().into_bytes().as_ref(), b"data");
    c.copy_object()
        .bucket("ims")
        .key("dst")
        .copy_source("ims/src")
        .copy_source_if_modified_since(tomorrow)
        .send()
        .await
        .unwrap();
    assert_eq!(get(&c, "ims", "dst").await, b"data");
    // Now, not later than the object's last change, still holds a read back (304).
    let now = aws_sdk_s3::primitives::DateTime::from_secs(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64,
    );
    let e = c.get_object().bucket("ims").key("src").if_modified_since(now).send().await.unwrap_err();
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(304));
}

/// `Authorization` headers S3 cannot read as a signature get S3's codes (s3s answers them all
/// 400 `InvalidRequest`), and a PUT so refused writes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreadable_authorization_headers_get_s3_s_codes() {
    let (gw, c) = Gateway::with_bucket("authz").await;
    for (auth, want) in [
        ("Basic dXNlcjpwYXNz", "InvalidArgument"),
        ("AWS HAHAHA", "InvalidArgument"),
        ("AWS4-HMAC-SHA256 garbage", "AuthorizationHeaderMalformed"),
        ("AWS4-HMAC-SHA256 Credential=AKIA/20261129/us-east-1/s3/aws4_request", "AuthorizationHeaderMalformed"),
    ] {
        let a = Conn::open(&gw).unsigned("PUT", "/authz/k", &[("authorization", auth), ("content-length", "1")], b"x");
        let doc = String::from_utf8_lossy(&a.body).into_owned();
        assert_eq!(a.status, 400, "{auth}: {doc}");
        assert!(doc.contains(&format!("<Code>{want}</Code>")), "{auth}: {doc}");
    }
    let e = c.head_object().bucket("authz").key("k").send().await.unwrap_err();
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(404), "nothing was written");
}
