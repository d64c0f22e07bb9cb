//! Writes: resent parts, directory markers with a body, key length, and S3 functionality the
//! gateway does not have, refused rather than misread.

use super::*;

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
    // The document names the key's length and the limit, as S3's does.
    let doc = error_doc(&e);
    assert_eq!(xml_element(&doc, "Size").as_deref(), Some("1025"), "{doc}");
    assert_eq!(xml_element(&doc, "MaxSizeAllowed").as_deref(), Some("1024"), "{doc}");
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
