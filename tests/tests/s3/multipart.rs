//! Multipart uploads: parts, listing, completion rules and retried completions.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use penstock_tests::{code, completed, data, get, md5_hex, put, status, Gateway};

#[tokio::test]
async fn multipart_uploads() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("mpu").send().await.unwrap();
    let p1 = data(5 << 20, 2);
    let p2 = data(1 << 20, 3);
    let up = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("big")
        .content_type("app/x")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let e1 = c
        .upload_part()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .part_number(1)
        .body(ByteStream::from(p1.clone()))
        .send()
        .await
        .unwrap();
    let e2 = c
        .upload_part()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .part_number(2)
        .body(ByteStream::from(p2.clone()))
        .send()
        .await
        .unwrap();
    let parts = c
        .list_parts()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .send()
        .await
        .unwrap();
    assert_eq!(parts.parts().len(), 2);
    assert_eq!(parts.parts()[1].size(), Some(p2.len() as i64));
    let ups = c.list_multipart_uploads().bucket("mpu").send().await.unwrap();
    assert_eq!(ups.uploads().len(), 1);

    let _part = |n: i32, e: &str| CompletedPart::builder().part_number(n).e_tag(e).build();
    // Out of order.
    let err = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .multipart_upload(completed(&[(2, e2.e_tag().unwrap()), (1, e1.e_tag().unwrap())]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "InvalidPartOrder");
    // Wrong ETag.
    let err = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .multipart_upload(completed(&[(1, "\"00\"")]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "InvalidPart");
    assert_eq!(
        status(&c.head_object().bucket("mpu").key("big").send().await.unwrap_err()),
        404
    );

    let done = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .multipart_upload(completed(&[(1, e1.e_tag().unwrap()), (2, e2.e_tag().unwrap())]))
        .send()
        .await
        .unwrap();
    let mut cat = hex::decode(md5_hex(&p1)).unwrap();
    cat.extend(hex::decode(md5_hex(&p2)).unwrap());
    assert_eq!(done.e_tag().unwrap(), format!("\"{}-2\"", md5_hex(&cat)));
    let mut whole = p1.clone();
    whole.extend_from_slice(&p2);
    assert_eq!(get(&c, "mpu", "big").await, whole);
    let h = c.head_object().bucket("mpu").key("big").send().await.unwrap();
    assert_eq!(h.content_type(), Some("app/x"));
    let g2 = c
        .get_object()
        .bucket("mpu")
        .key("big")
        .part_number(2)
        .send()
        .await
        .unwrap();
    assert_eq!(g2.parts_count(), Some(2));
    assert_eq!(g2.body.collect().await.unwrap().into_bytes().to_vec(), p2);
    assert!(c
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .unwrap()
        .uploads()
        .is_empty());
    assert!(std::fs::read_dir(gw.folder_dir("big").join(".penstock/uploads"))
        .unwrap()
        .next()
        .is_none());

    // A small non-final part is refused; abort cleans up.
    let id2 = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("small")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let mut etags = vec![];
    for n in 1..=2 {
        let r = c
            .upload_part()
            .bucket("mpu")
            .key("small")
            .upload_id(&id2)
            .part_number(n)
            .body(ByteStream::from(vec![n as u8; 1000]))
            .send()
            .await
            .unwrap();
        etags.push(r.e_tag().unwrap().to_owned());
    }
    let err = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .multipart_upload(completed(&[(1, &etags[0]), (2, &etags[1])]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "EntityTooSmall");
    c.abort_multipart_upload()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .send()
        .await
        .unwrap();
    let err = c
        .list_parts()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "NoSuchUpload");

    // UploadPartCopy with a source range.
    let id3 = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("copied")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let r = c
        .upload_part_copy()
        .bucket("mpu")
        .key("copied")
        .upload_id(&id3)
        .part_number(1)
        .copy_source("mpu/big")
        .copy_source_range("bytes=10-1009")
        .send()
        .await
        .unwrap();
    let et = r.copy_part_result().unwrap().e_tag().unwrap().to_owned();
    c.complete_multipart_upload()
        .bucket("mpu")
        .key("copied")
        .upload_id(&id3)
        .multipart_upload(completed(&[(1, &et)]))
        .send()
        .await
        .unwrap();
    assert_eq!(get(&c, "mpu", "copied").await, &whole[10..1010]);
}

/// A CompleteMultipartUpload retried after it succeeded (the client missed the answer) gets the
/// same answer, as S3 gives; with other parts, after the object changed, or for an upload that
/// never was, it is NoSuchUpload.
#[tokio::test]
async fn completing_twice_answers_the_same() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("again").send().await.unwrap();
    let id = c
        .create_multipart_upload()
        .bucket("again")
        .key("obj")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let mut parts = Vec::new();
    for (n, size) in [(1, 5 << 20), (2, 1234)] {
        let r = c
            .upload_part()
            .bucket("again")
            .key("obj")
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from(vec![n as u8; size]))
            .send()
            .await
            .unwrap();
        parts.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(r.e_tag().unwrap())
                .build(),
        );
    }
    let complete = |parts: Vec<CompletedPart>, id: String| {
        c.complete_multipart_upload()
            .bucket("again")
            .key("obj")
            .upload_id(id)
            .multipart_upload(CompletedMultipartUpload::builder().set_parts(Some(parts)).build())
            .send()
    };
    let first = complete(parts.clone(), id.clone()).await.unwrap();
    let again = complete(parts.clone(), id.clone()).await.unwrap();
    assert_eq!(again.e_tag(), first.e_tag());
    assert_eq!(again.checksum_crc64_nvme(), first.checksum_crc64_nvme());
    assert_eq!(get(&c, "again", "obj").await.len(), (5 << 20) + 1234);

    let e = complete(parts[..1].to_vec(), id.clone()).await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchUpload"), "other parts");
    let e = complete(parts.clone(), "0123456789abcdef0123456789abcdef".into())
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload", "an upload that never was");
    put(&c, "again", "obj", b"replaced").await;
    let e = complete(parts.clone(), id.clone()).await.unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload", "the object is no longer the upload's");
    assert_eq!(get(&c, "again", "obj").await, b"replaced");
}
