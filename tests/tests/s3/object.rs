//! Single objects: metadata, ranges, conditional requests, attributes, and files written beside the gateway.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, CompletedMultipartUpload, CompletedPart};
use penstock_tests::{code, data, get, keys, md5_hex, put, status, Gateway, Upload};

#[tokio::test]
async fn objects_metadata_ranges_and_conditions() {
    let (gw, c) = Gateway::with_bucket("objs").await;
    let body = data(3 << 20, 1);
    let put = c
        .put_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .body(ByteStream::from(body.clone()))
        .content_type("application/x-test")
        .content_disposition("attachment")
        .cache_control("max-age=5")
        .metadata("color", "blue")
        .send()
        .await
        .unwrap();
    assert_eq!(put.e_tag().unwrap(), format!("\"{}\"", md5_hex(&body)));

    // The object is a plain file at its key's path.
    let dir = gw.folder_dir("dir");
    assert_eq!(std::fs::read(dir.join("dir/sub/file.bin")).unwrap(), body);

    let h = c.head_object().bucket("objs").key("dir/sub/file.bin").send().await.unwrap();
    assert_eq!(h.content_length(), Some(body.len() as i64));
    assert_eq!(h.content_type(), Some("application/x-test"));
    assert_eq!(h.content_disposition(), Some("attachment"));
    // Stored without a type, an object reads back with S3's default one.
    let mut conn = penstock_tests::raw::Conn::open(&gw);
    let url = c.put_object().bucket("objs").key("untyped").presigned(presigning()).await.unwrap();
    conn.send_head(&url, &[("Content-Length", "1".into())]);
    conn.send(b"x");
    assert_eq!(conn.answer(false).status, 200);
    let untyped = c.head_object().bucket("objs").key("untyped").send().await.unwrap();
    assert_eq!(untyped.content_type(), Some("binary/octet-stream"));
    assert_eq!(h.cache_control(), Some("max-age=5"));
    assert_eq!(h.metadata().unwrap().get("color").map(String::as_str), Some("blue"));
    let etag = h.e_tag().unwrap().to_owned();

    assert_eq!(get(&c, "objs", "dir/sub/file.bin").await, body);
    let r = c.get_object().bucket("objs").key("dir/sub/file.bin").range("bytes=100-199").send().await.unwrap();
    assert_eq!(r.content_range(), Some(format!("bytes 100-199/{}", body.len()).as_str()));
    assert_eq!(r.body.collect().await.unwrap().into_bytes().as_ref(), &body[100..200]);
    let r = c.get_object().bucket("objs").key("dir/sub/file.bin").range("bytes=-10").send().await.unwrap();
    assert_eq!(r.body.collect().await.unwrap().into_bytes().as_ref(), &body[body.len() - 10..]);
    let e = c.get_object().bucket("objs").key("dir/sub/file.bin").range("bytes=99999999-").send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidRange");

    let e = c.get_object().bucket("objs").key("dir/sub/file.bin").if_none_match(&etag).send().await.unwrap_err();
    assert_eq!(status(&e), 304);
    let e = c.get_object().bucket("objs").key("dir/sub/file.bin").if_match("\"nope\"").send().await.unwrap_err();
    assert_eq!(status(&e), 412);
    // S3 names the condition that failed; the gateway's internal note of it does not leave.
    let raw = e.raw_response().unwrap();
    let doc = String::from_utf8_lossy(raw.body().bytes().unwrap()).into_owned();
    assert!(doc.contains("<Condition>If-Match</Condition>"), "{doc}");
    assert!(raw.headers().iter().all(|(k, _)| !k.starts_with("x-penstock")), "internal header leaked");
    c.get_object().bucket("objs").key("dir/sub/file.bin").if_match(&etag).send().await.unwrap();
    let r = c
        .get_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .response_content_type("text/override")
        .response_cache_control("no-store")
        .send()
        .await
        .unwrap();
    assert_eq!(r.content_type(), Some("text/override"));
    assert_eq!(r.cache_control(), Some("no-store"));

    let e = c.head_object().bucket("objs").key("missing").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    let e = c.get_object().bucket("objs").key("missing").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
}

/// GetObjectAttributes answers from the object's record: only the attributes asked for, the
/// stored checksum, and the parts of a multipart object, paginated.
/// S3 takes up to 2 KB of user metadata, which short names fit well over a hundred of: such a PUT
/// (more header fields than hyper's default 100) is stored and reads back whole.
#[tokio::test]
async fn many_metadata_fields_are_taken() {
    let (gw, c) = Gateway::with_bucket("meta").await;
    let mut req = c.put_object().bucket("meta").key("k").body(ByteStream::from_static(b"x"));
    for i in 0..150 {
        req = req.metadata(format!("m{i:03}"), "v");
    }
    req.send().await.unwrap();
    // Read raw: the SDK's own HTTP client refuses an answer of more than 100 header fields.
    let url = c.head_object().bucket("meta").key("k").presigned(presigning()).await.unwrap();
    let mut conn = penstock_tests::raw::Conn::open(&gw);
    conn.send_head(&url, &[]);
    let a = conn.answer(true);
    assert_eq!(a.status, 200);
    let meta: Vec<_> = a.headers.iter().filter(|(n, _)| n.starts_with("x-amz-meta-")).collect();
    assert_eq!(meta.len(), 150);
    assert_eq!(a.header("x-amz-meta-m149"), Some("v"));
}

#[tokio::test]
async fn object_attributes() {
    use aws_sdk_s3::types::{ObjectAttributes, StorageClass};
    let (_gw, c) = Gateway::with_bucket("attrs").await;
    let put = c
        .put_object()
        .bucket("attrs")
        .key("one")
        .checksum_algorithm(ChecksumAlgorithm::Crc32)
        .body(ByteStream::from_static(b"hello attributes"))
        .send()
        .await
        .unwrap();
    let a = c
        .get_object_attributes()
        .bucket("attrs")
        .key("one")
        .object_attributes(ObjectAttributes::Etag)
        .object_attributes(ObjectAttributes::ObjectSize)
        .object_attributes(ObjectAttributes::StorageClass)
        .object_attributes(ObjectAttributes::Checksum)
        .send()
        .await
        .unwrap();
    // S3 writes this one ETag without its quotes.
    assert_eq!(a.e_tag(), put.e_tag().map(|e| e.trim_matches('"')));
    assert_eq!(a.object_size(), Some(16));
    assert_eq!(a.storage_class(), Some(&StorageClass::Standard));
    assert_eq!(a.checksum().and_then(|c| c.checksum_crc32()), put.checksum_crc32());
    assert!(a.last_modified().is_some());
    assert!(a.object_parts().is_none(), "a single-part object has no parts");
    let only_size = c
        .get_object_attributes()
        .bucket("attrs")
        .key("one")
        .object_attributes(ObjectAttributes::ObjectSize)
        .send()
        .await
        .unwrap();
    assert_eq!((only_size.object_size(), only_size.e_tag()), (Some(16), None));

    let id = c
        .create_multipart_upload()
        .bucket("attrs")
        .key("multi")
        .checksum_algorithm(ChecksumAlgorithm::Crc32)
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let mut done = CompletedMultipartUpload::builder();
    let sizes = [5 << 20, 5 << 20, 1000];
    for (n, size) in sizes.iter().enumerate() {
        let n = n as i32 + 1;
        let r = c
            .upload_part()
            .bucket("attrs")
            .key("multi")
            .upload_id(&id)
            .part_number(n)
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .body(ByteStream::from(vec![n as u8; *size]))
            .send()
            .await
            .unwrap();
        done = done.parts(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(r.e_tag().unwrap())
                .checksum_crc32(r.checksum_crc32().unwrap())
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket("attrs")
        .key("multi")
        .upload_id(&id)
        .multipart_upload(done.build())
        .send()
        .await
        .unwrap();
    let page = |marker: Option<String>| {
        c.get_object_attributes()
            .bucket("attrs")
            .key("multi")
            .object_attributes(ObjectAttributes::ObjectParts)
            .max_parts(2)
            .set_part_number_marker(marker)
            .send()
    };
    let first = page(None).await.unwrap();
    let parts = first.object_parts().expect("parts");
    assert_eq!(parts.total_parts_count(), Some(3));
    assert_eq!(parts.is_truncated(), Some(true));
    assert_eq!(parts.next_part_number_marker(), Some("2"));
    let got: Vec<(Option<i32>, Option<i64>)> = parts.parts().iter().map(|p| (p.part_number(), p.size())).collect();
    assert_eq!(got, [(Some(1), Some(5 << 20)), (Some(2), Some(5 << 20))]);
    assert!(parts.parts()[0].checksum_crc32().is_some(), "part checksums are listed");
    let second = page(Some("2".into())).await.unwrap();
    let parts = second.object_parts().expect("parts");
    assert_eq!(parts.is_truncated(), Some(false));
    let got: Vec<(Option<i32>, Option<i64>)> = parts.parts().iter().map(|p| (p.part_number(), p.size())).collect();
    assert_eq!(got, [(Some(3), Some(1000))]);

    let e = c
        .get_object_attributes()
        .bucket("attrs")
        .key("one")
        .object_attributes(ObjectAttributes::from("Colour"))
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidArgument"));
    let e = c
        .get_object_attributes()
        .bucket("attrs")
        .key("missing")
        .object_attributes(ObjectAttributes::Etag)
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchKey"));
}

#[tokio::test]
async fn foreign_files_and_containment() {
    let (gw, c) = Gateway::with_bucket("shared").await;
    put(&c, "shared", "gw.txt", b"via s3").await;
    let dir = gw.folder_dir("gw.txt");

    // A file written by a compute session is an object with a synthesized ETag.
    std::fs::create_dir_all(dir.join("session")).unwrap();
    std::fs::write(dir.join("session/out.json"), b"{\"a\":1}").unwrap();
    let h = c.head_object().bucket("shared").key("session/out.json").send().await.unwrap();
    assert!(h.e_tag().unwrap().contains('-'));
    assert_eq!(h.content_type(), Some("application/json"));
    assert_eq!(get(&c, "shared", "session/out.json").await, b"{\"a\":1}");

    // A file changed behind the gateway's back no longer carries its stale MD5 ETag.
    std::fs::write(dir.join("gw.txt"), b"changed by a session").unwrap();
    let h = c.head_object().bucket("shared").key("gw.txt").send().await.unwrap();
    assert_ne!(h.e_tag().unwrap(), format!("\"{}\"", md5_hex(b"via s3")));
    assert_eq!(h.content_length(), Some(20));

    // Symlinks out of the folder are neither listed nor readable; the staging dir is hidden.
    std::os::unix::fs::symlink("/etc/passwd", dir.join("escape")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("escape-dir")).unwrap();
    std::os::unix::fs::symlink("gw.txt", dir.join("inside-link")).unwrap();
    let keys = keys(&c, "shared").await;
    assert_eq!(keys, ["gw.txt", "inside-link", "session/out.json"]);
    let e = c.get_object().bucket("shared").key("escape").send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    let e = c.get_object().bucket("shared").key("escape-dir/passwd").send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    let e = c
        .put_object()
        .bucket("shared")
        .key("escape-dir/x")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 403);
    assert!(!std::path::Path::new("/etc/x").exists());
    for bad in ["a/../b", ".penstock/tmp/x", "a//b", "./a"] {
        let e = c.put_object().bucket("shared").key(bad).body(ByteStream::from_static(b"x")).send().await.unwrap_err();
        assert_eq!(status(&e), 400, "{bad}");
    }
}

/// A write is answered before its pending record is settled (the settling write follows under
/// the key lock): every read right after an acknowledged overwrite, through HEAD, GET and a
/// listing, must already describe that write (its bytes, ETag, size, user metadata).
#[tokio::test]
async fn reads_right_after_an_overwrite_see_it() {
    let (_gw, c) = Gateway::with_bucket("raw").await;
    for i in 0..150usize {
        let body = data(100 + i * 37, i as u8);
        let note = format!("write-{i}");
        let put = c
            .put_object()
            .bucket("raw")
            .key("hot")
            .metadata("note", &note)
            .body(ByteStream::from(body.clone()))
            .send()
            .await
            .unwrap();
        let etag = put.e_tag().unwrap().to_owned();
        assert_eq!(etag, format!("\"{}\"", md5_hex(&body)));
        let head = c.head_object().bucket("raw").key("hot").send().await.unwrap();
        assert_eq!(head.e_tag(), Some(etag.as_str()), "HEAD after write {i}");
        assert_eq!(head.content_length(), Some(body.len() as i64));
        assert_eq!(head.metadata().and_then(|m| m.get("note")), Some(&note), "metadata after write {i}");
        assert_eq!(get(&c, "raw", "hot").await, body, "GET after write {i}");
        let listed = c.list_objects_v2().bucket("raw").send().await.unwrap();
        let o = &listed.contents()[0];
        assert_eq!((o.e_tag(), o.size()), (Some(etag.as_str()), Some(body.len() as i64)), "listing after write {i}");
    }
}

fn presigning() -> aws_sdk_s3::presigning::PresigningConfig {
    aws_sdk_s3::presigning::PresigningConfig::expires_in(std::time::Duration::from_secs(600)).unwrap()
}

/// Server-side encryption by the gateway's keys (SSE-S3, SSE-KMS) is not offered where volumes
/// are not declared encrypted at rest: a request asking for it is refused as S3 refuses what it
/// does not do, and writes nothing, so no client believes an object encrypted that is a plain
/// file (a customer's own key, SSE-C, is served: `sse_c.rs`). Object lock headers on a bucket
/// without object lock are refused the same way.
#[tokio::test]
async fn encryption_and_object_lock_requests_are_refused_and_write_nothing() {
    use aws_sdk_s3::types::{ObjectLockMode, ServerSideEncryption};
    let (_gw, c) = Gateway::with_bucket("sse").await;
    let key = [7u8; 32];
    let key_b64 = base64_encode(&key);
    let key_md5 = base64_encode(&<md5::Md5 as md5::Digest>::digest(key));
    for sse in [ServerSideEncryption::AwsKms, ServerSideEncryption::Aes256] {
        let e = c
            .put_object()
            .bucket("sse")
            .key("k")
            .server_side_encryption(sse.clone())
            .body(ByteStream::from_static(b"secret"))
            .send()
            .await
            .unwrap_err();
        assert_eq!((code(&e).as_str(), status(&e)), ("NotImplemented", 501), "{sse:?}");
        let e =
            c.create_multipart_upload().bucket("sse").key("m").server_side_encryption(sse).send().await.unwrap_err();
        assert_eq!(code(&e), "NotImplemented");
    }
    let e = c
        .put_object()
        .bucket("sse")
        .key("k")
        .object_lock_mode(ObjectLockMode::Governance)
        .object_lock_retain_until_date(aws_sdk_s3::primitives::DateTime::from_secs(4_000_000_000))
        .body(ByteStream::from_static(b"locked"))
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400));
    assert!(keys(&c, "sse").await.is_empty(), "refused writes leave nothing");
    assert!(c.list_multipart_uploads().bucket("sse").send().await.unwrap().uploads().is_empty());

    // Reads naming a customer key: the object was not encrypted with one.
    put(&c, "sse", "plain", b"plain bytes").await;
    let e = c
        .get_object()
        .bucket("sse")
        .key("plain")
        .sse_customer_algorithm("AES256")
        .sse_customer_key(&key_b64)
        .sse_customer_key_md5(&key_md5)
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400));
    let e = c
        .copy_object()
        .bucket("sse")
        .key("copy")
        .copy_source("sse/plain")
        .copy_source_sse_customer_algorithm("AES256")
        .copy_source_sse_customer_key(&key_b64)
        .copy_source_sse_customer_key_md5(&key_md5)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    assert_eq!(get(&c, "sse", "plain").await, b"plain bytes");
}

/// `x-amz-expected-bucket-owner` (and `x-amz-source-expected-bucket-owner` for a copy's source)
/// guard a request against a bucket owned by someone else: 403 when they name another owner.
#[tokio::test]
async fn expected_bucket_owner_is_checked() {
    let (_gw, c) = Gateway::with_bucket("owned").await;
    put(&c, "owned", "k", b"v").await;
    let acl = c.get_bucket_acl().bucket("owned").send().await.unwrap();
    let owner = acl.owner().and_then(|o| o.id()).unwrap().to_owned();
    let other = format!("{owner}0");

    c.head_object().bucket("owned").key("k").expected_bucket_owner(&owner).send().await.unwrap();
    let out = c.list_objects_v2().bucket("owned").expected_bucket_owner(&owner).send().await.unwrap();
    assert_eq!(out.key_count(), Some(1));
    let e = c.list_objects_v2().bucket("owned").expected_bucket_owner(&other).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403));
    let e = c.get_object().bucket("owned").key("k").expected_bucket_owner(&other).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403));
    let e = c
        .put_object()
        .bucket("owned")
        .key("k")
        .expected_bucket_owner(&other)
        .body(ByteStream::from_static(b"overwritten"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    assert_eq!(get(&c, "owned", "k").await, b"v", "a refused write changes nothing");

    let e = c
        .copy_object()
        .bucket("owned")
        .key("copy")
        .copy_source("owned/k")
        .expected_source_bucket_owner(&other)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    c.copy_object()
        .bucket("owned")
        .key("copy")
        .copy_source("owned/k")
        .expected_source_bucket_owner(&owner)
        .expected_bucket_owner(&owner)
        .send()
        .await
        .unwrap();
    assert_eq!(get(&c, "owned", "copy").await, b"v");
}

fn base64_encode(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

/// A storage class S3 knows is kept as the write named it and read back everywhere S3 names
/// one (HEAD, listings, versions, uploads, attributes); STANDARD is what an object has without
/// one, and a copy has the class its request names, not its source's.
#[tokio::test]
async fn storage_classes_read_back_as_written() {
    use aws_sdk_s3::types::{ObjectAttributes, ObjectStorageClass, StorageClass};
    let (_gw, c) = Gateway::with_bucket("classes").await;
    let body = || ByteStream::from_static(b"cold");
    c.put_object()
        .bucket("classes")
        .key("ia")
        .storage_class(StorageClass::StandardIa)
        .body(body())
        .send()
        .await
        .unwrap();
    put(&c, "classes", "plain", b"warm").await;
    let h = c.head_object().bucket("classes").key("ia").send().await.unwrap();
    assert_eq!(h.storage_class(), Some(&StorageClass::StandardIa));
    let h = c.head_object().bucket("classes").key("plain").send().await.unwrap();
    assert_eq!(h.storage_class(), None, "S3 names no class for STANDARD objects");
    let g = c.get_object().bucket("classes").key("ia").send().await.unwrap();
    assert_eq!(g.storage_class(), Some(&StorageClass::StandardIa));
    let l = c.list_objects_v2().bucket("classes").send().await.unwrap();
    let classes: Vec<_> = l.contents().iter().map(|o| (o.key().unwrap(), o.storage_class().cloned())).collect();
    assert_eq!(classes, [("ia", Some(ObjectStorageClass::StandardIa)), ("plain", Some(ObjectStorageClass::Standard))]);
    let v = c.list_object_versions().bucket("classes").prefix("ia").send().await.unwrap();
    assert_eq!(v.versions()[0].storage_class().map(|s| s.as_str()), Some("STANDARD_IA"));
    let a = c
        .get_object_attributes()
        .bucket("classes")
        .key("ia")
        .object_attributes(ObjectAttributes::StorageClass)
        .send()
        .await
        .unwrap();
    assert_eq!(a.storage_class(), Some(&StorageClass::StandardIa));

    // A copy takes the class its request names: STANDARD unless it names another.
    c.copy_object().bucket("classes").key("copied").copy_source("classes/ia").send().await.unwrap();
    let h = c.head_object().bucket("classes").key("copied").send().await.unwrap();
    assert_eq!(h.storage_class(), None);
    // Naming a class lets an object be copied onto itself: another class, and then the class it
    // has (rclone's SetTier, `aws s3 cp --storage-class` in place). Naming none is refused.
    for _ in 0..2 {
        c.copy_object()
            .bucket("classes")
            .key("plain")
            .copy_source("classes/plain")
            .storage_class(StorageClass::Glacier)
            .send()
            .await
            .unwrap();
        let h = c.head_object().bucket("classes").key("plain").send().await.unwrap();
        assert_eq!(h.storage_class(), Some(&StorageClass::Glacier));
        assert_eq!(get(&c, "classes", "plain").await, b"warm");
    }
    let refused = c.copy_object().bucket("classes").key("plain").copy_source("classes/plain").send().await.unwrap_err();
    assert_eq!(code(&refused), "InvalidRequest");

    // Multipart uploads carry the class from their start to the object.
    let up = c
        .create_multipart_upload()
        .bucket("classes")
        .key("mp")
        .storage_class(StorageClass::OnezoneIa)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let ups = c.list_multipart_uploads().bucket("classes").send().await.unwrap();
    assert_eq!(ups.uploads()[0].storage_class(), Some(&StorageClass::OnezoneIa));
    let part =
        c.upload_part().bucket("classes").key("mp").upload_id(id).part_number(1).body(body()).send().await.unwrap();
    let parts = c.list_parts().bucket("classes").key("mp").upload_id(id).send().await.unwrap();
    assert_eq!(parts.storage_class(), Some(&StorageClass::OnezoneIa));
    let done = CompletedMultipartUpload::builder()
        .parts(CompletedPart::builder().part_number(1).e_tag(part.e_tag().unwrap()).build())
        .build();
    c.complete_multipart_upload()
        .bucket("classes")
        .key("mp")
        .upload_id(id)
        .multipart_upload(done)
        .send()
        .await
        .unwrap();
    let h = c.head_object().bucket("classes").key("mp").send().await.unwrap();
    assert_eq!(h.storage_class(), Some(&StorageClass::OnezoneIa));
}

/// A website redirect location is kept with the object and read back by HEAD and GET (also
/// through a multipart upload), as S3 does; one that is neither a path nor an http(s) URL, or
/// longer than 2 KB, is 400 `InvalidRedirectLocation` and writes nothing. A copy has the one
/// its own request names, never its source's, and naming one lets an object copy onto itself.
#[tokio::test]
async fn website_redirect_locations_are_kept_and_checked() {
    let (_gw, c) = Gateway::with_bucket("redir").await;
    let write = |key: &'static str, to: String| {
        c.put_object()
            .bucket("redir")
            .key(key)
            .website_redirect_location(to)
            .body(ByteStream::from_static(b"moved"))
            .send()
    };
    write("short", "https://example.com/long/path?q=1".into()).await.unwrap();
    write("local", "/elsewhere/index.html".into()).await.unwrap();
    let h = c.head_object().bucket("redir").key("short").send().await.unwrap();
    assert_eq!(h.website_redirect_location(), Some("https://example.com/long/path?q=1"));
    let g = c.get_object().bucket("redir").key("local").send().await.unwrap();
    assert_eq!(g.website_redirect_location(), Some("/elsewhere/index.html"));
    assert_eq!(g.body.collect().await.unwrap().into_bytes().as_ref(), b"moved");

    for bad in ["ftp://example.com/", "elsewhere", &format!("/{}", "a".repeat(2048))] {
        let e = write("bad", bad.to_owned()).await.unwrap_err();
        assert_eq!((code(&e), status(&e)), ("InvalidRedirectLocation".to_owned(), 400), "{bad:.20}");
    }
    let e = c.head_object().bucket("redir").key("bad").send().await.unwrap_err();
    assert_eq!(status(&e), 404, "a refused write writes nothing");

    // Copies: not carried over from the source, with or without REPLACE; taken from the request.
    c.copy_object().bucket("redir").key("copied").copy_source("redir/short").send().await.unwrap();
    let h = c.head_object().bucket("redir").key("copied").send().await.unwrap();
    assert_eq!(h.website_redirect_location(), None);
    c.copy_object()
        .bucket("redir")
        .key("short")
        .copy_source("redir/short")
        .website_redirect_location("/new")
        .send()
        .await
        .unwrap();
    let h = c.head_object().bucket("redir").key("short").send().await.unwrap();
    assert_eq!(h.website_redirect_location(), Some("/new"));
    assert_eq!(get(&c, "redir", "short").await, b"moved");

    let up = c
        .create_multipart_upload()
        .bucket("redir")
        .key("mp")
        .website_redirect_location("http://example.org/")
        .send()
        .await
        .unwrap();
    let up = Upload::of(&c, "redir", "mp", up.upload_id().unwrap());
    let part = up.part(1, b"parts".to_vec()).await;
    up.complete(&[(1, part)]).await;
    let h = c.head_object().bucket("redir").key("mp").send().await.unwrap();
    assert_eq!(h.website_redirect_location(), Some("http://example.org/"));
}
