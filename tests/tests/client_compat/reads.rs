//! Reads: part reads, tag counts and encodings, ranges S3 ignores, date conditions and
//! `Expires` values as S3 answers them.

use super::*;

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
