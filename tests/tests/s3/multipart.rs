//! Multipart uploads: parts, listing, completion rules and retried completions.

use penstock_tests::{code, data, error_doc, get, md5_hex, put, status, Gateway, Upload};

#[tokio::test]
async fn multipart_uploads() {
    let (gw, c) = Gateway::with_bucket("mpu").await;
    let p1 = data(5 << 20, 2);
    let p2 = data(1 << 20, 3);
    let up = c.create_multipart_upload().bucket("mpu").key("big").content_type("app/x").send().await.unwrap();
    let up = Upload::of(&c, "mpu", "big", up.upload_id().unwrap());
    let e1 = up.part(1, p1.clone()).await;
    let e2 = up.part(2, p2.clone()).await;
    let parts = up.list_parts().await;
    assert_eq!(parts.parts().len(), 2);
    for (max, marker) in [(Some(-1), None), (None, Some("-1"))] {
        let e = c
            .list_parts()
            .bucket("mpu")
            .key("big")
            .upload_id(&up.id)
            .set_max_parts(max)
            .set_part_number_marker(marker.map(str::to_owned))
            .send()
            .await
            .unwrap_err();
        assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidArgument"), "{max:?} {marker:?}");
    }
    assert_eq!(parts.parts()[1].size(), Some(p2.len() as i64));
    let ups = c.list_multipart_uploads().bucket("mpu").send().await.unwrap();
    assert_eq!(ups.uploads().len(), 1);
    // The initiator is named as ListBuckets names the caller (its user's ID), not by access key.
    let me = c.list_buckets().send().await.unwrap().owner().unwrap().clone();
    let initiator = ups.uploads()[0].initiator().unwrap();
    assert_eq!((initiator.id(), initiator.display_name()), (me.id(), me.display_name()));
    assert_eq!(parts.initiator().unwrap().id(), me.id());

    // Out of order. S3's documents name the upload, and a refused part by number and ETag.
    let err = up.try_complete(&[(2, &e2), (1, &e1)]).await.unwrap_err();
    assert_eq!(code(&err), "InvalidPartOrder");
    assert!(error_doc(&err).contains(&format!("<UploadId>{}</UploadId>", up.id)), "{}", error_doc(&err));
    // Wrong ETag.
    let err = up.try_complete(&[(1, "\"00\"")]).await.unwrap_err();
    assert_eq!(code(&err), "InvalidPart");
    let want = format!("<UploadId>{}</UploadId><PartNumber>1</PartNumber><ETag>00</ETag>", up.id);
    assert!(error_doc(&err).contains(&want), "{}", error_doc(&err));
    assert_eq!(status(&c.head_object().bucket("mpu").key("big").send().await.unwrap_err()), 404);

    let done = up.complete(&[(1, &e1), (2, &e2)]).await;
    // The object's URL as the request addressed it (path style here), as S3 names it; minio-js
    // takes an answer without it for a failure and aborts the upload it just completed.
    assert_eq!(done.location(), Some(format!("{}/mpu/big", gw.endpoint).as_str()));
    let mut cat = hex::decode(md5_hex(&p1)).unwrap();
    cat.extend(hex::decode(md5_hex(&p2)).unwrap());
    assert_eq!(done.e_tag().unwrap(), format!("\"{}-2\"", md5_hex(&cat)));
    let mut whole = p1.clone();
    whole.extend_from_slice(&p2);
    assert_eq!(get(&c, "mpu", "big").await, whole);
    let h = c.head_object().bucket("mpu").key("big").send().await.unwrap();
    assert_eq!(h.content_type(), Some("app/x"));
    let g2 = c.get_object().bucket("mpu").key("big").part_number(2).send().await.unwrap();
    assert_eq!(g2.parts_count(), Some(2));
    assert_eq!(g2.body.collect().await.unwrap().into_bytes().to_vec(), p2);
    // A part the object lacks is 416; a number no part can have is malformed (400).
    let e = c.get_object().bucket("mpu").key("big").part_number(3).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidPartNumber", 416));
    for n in [0, 10_001] {
        let e = c.get_object().bucket("mpu").key("big").part_number(n).send().await.unwrap_err();
        assert_eq!((code(&e).as_str(), status(&e)), ("InvalidArgument", 400), "part {n}");
    }
    let e = c.list_multipart_uploads().bucket("mpu").max_uploads(-1).send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    assert!(c.list_multipart_uploads().bucket("mpu").send().await.unwrap().uploads().is_empty());
    assert!(std::fs::read_dir(gw.folder_dir("big").join(".penstock/uploads")).unwrap().next().is_none());

    // A small non-final part is refused; abort cleans up.
    let small = Upload::start(&c, "mpu", "small").await;
    let etags = [small.part(1, vec![1; 1000]).await, small.part(2, vec![2; 1000]).await];
    let err = small.try_complete(&[(1, &etags[0]), (2, &etags[1])]).await.unwrap_err();
    assert_eq!(code(&err), "EntityTooSmall");
    // S3's message, with the part and its size in elements of their own.
    let doc = error_doc(&err);
    assert!(
        doc.contains("<Message>Your proposed upload is smaller than the minimum allowed object size.</Message>"),
        "{doc}"
    );
    assert!(
        doc.contains(&format!(
            "<ProposedSize>1000</ProposedSize><MinSizeAllowed>5242880</MinSizeAllowed><PartNumber>1</PartNumber>\
                 <ETag>{}</ETag>",
            md5_hex(&[1; 1000])
        )),
        "{doc}"
    );
    small.abort().await;
    let err = small.try_list_parts().await.unwrap_err();
    assert_eq!(code(&err), "NoSuchUpload");
    let doc = error_doc(&err);
    assert!(doc.contains(&format!("<UploadId>{}</UploadId>", small.id)), "{doc}");

    // UploadPartCopy with a source range.
    let copied = Upload::start(&c, "mpu", "copied").await;
    let r = c
        .upload_part_copy()
        .bucket("mpu")
        .key("copied")
        .upload_id(&copied.id)
        .part_number(1)
        .copy_source("mpu/big")
        .copy_source_range("bytes=10-1009")
        .send()
        .await
        .unwrap();
    let et = r.copy_part_result().unwrap().e_tag().unwrap().to_owned();
    copied.complete(&[(1, &et)]).await;
    assert_eq!(get(&c, "mpu", "copied").await, &whole[10..1010]);
}

/// A CompleteMultipartUpload retried after it succeeded (the client missed the answer) gets the
/// same answer, as S3 gives; with other parts, after the object changed, or for an upload that
/// never was, it is NoSuchUpload.
#[tokio::test]
async fn completing_twice_answers_the_same() {
    let (_gw, c) = Gateway::with_bucket("again").await;
    let up = Upload::start(&c, "again", "obj").await;
    let parts = [(1, up.part(1, vec![1; 5 << 20]).await), (2, up.part(2, vec![2; 1234]).await)];
    let first = up.complete(&parts).await;
    let again = up.complete(&parts).await;
    assert_eq!(again.e_tag(), first.e_tag());
    assert_eq!(again.checksum_crc64_nvme(), first.checksum_crc64_nvme());
    assert_eq!(again.location(), first.location());
    assert!(first.location().is_some_and(|l| l.ends_with("/again/obj")), "{:?}", first.location());
    assert_eq!(get(&c, "again", "obj").await.len(), (5 << 20) + 1234);

    let e = up.try_complete(&parts[..1]).await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchUpload"), "other parts");
    let never = Upload::of(&c, "again", "obj", "0123456789abcdef0123456789abcdef");
    let e = never.try_complete(&parts).await.unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload", "an upload that never was");
    put(&c, "again", "obj", b"replaced").await;
    let e = up.try_complete(&parts).await.unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload", "the object is no longer the upload's");
    assert_eq!(get(&c, "again", "obj").await, b"replaced");
}

/// Uploads list as S3 lists them: a common prefix is one entry, a page that ends with one
/// resumes after the whole group, a key marker inside a group skips it, every page names both
/// next markers (empty where none), URL encoding applies when asked, and ListParts names both
/// part number markers (0 where none).
#[tokio::test]
async fn upload_listings_page_by_common_prefix() {
    let (_gw, c) = Gateway::with_bucket("mlist").await;
    let empty = c.list_multipart_uploads().bucket("mlist").send().await.unwrap();
    assert_eq!(
        (empty.key_marker(), empty.upload_id_marker(), empty.next_key_marker(), empty.next_upload_id_marker()),
        (Some(""), Some(""), Some(""), Some(""))
    );
    let mut ids = Vec::new();
    for k in ["folder/aSubfolder/subFile1", "folder/aSubfolder/subFile2", "folder/file1", "folder/file2"] {
        let up = c.create_multipart_upload().bucket("mlist").key(k).send().await.unwrap();
        ids.push(up.upload_id().unwrap().to_owned());
    }
    let page = |key: Option<String>, id: Option<String>| {
        c.list_multipart_uploads()
            .bucket("mlist")
            .prefix("folder/")
            .delimiter("/")
            .max_uploads(1)
            .set_key_marker(key)
            .set_upload_id_marker(id)
            .send()
    };
    let mut seen = Vec::new();
    let (mut key, mut id) = (None, None);
    loop {
        let r = page(key.clone(), id.clone()).await.unwrap();
        seen.extend(r.common_prefixes().iter().map(|p| p.prefix().unwrap().to_owned()));
        seen.extend(r.uploads().iter().map(|u| u.key().unwrap().to_owned()));
        if r.is_truncated() != Some(true) {
            assert_eq!(r.next_key_marker(), Some("folder/file2"), "the last page names its last upload");
            assert_eq!(r.next_upload_id_marker(), Some(ids[3].as_str()));
            break;
        }
        key = r.next_key_marker().map(str::to_owned);
        id = r.next_upload_id_marker().map(str::to_owned);
        assert!(seen.len() < 10, "pages never end: {seen:?}");
    }
    assert_eq!(seen, ["folder/aSubfolder/", "folder/file1", "folder/file2"]);
    // A key marker inside a group, or the group itself, skips the group.
    for marker in ["folder/aSubfolder/", "folder/aSubfolder/subFile1"] {
        let r = page(Some(marker.to_owned()), None).await.unwrap();
        assert!(r.common_prefixes().is_empty(), "{marker}");
        assert_eq!(r.uploads()[0].key(), Some("folder/file1"), "{marker}");
    }
    c.create_multipart_upload().bucket("mlist").key("sp ace+plus").send().await.unwrap();
    let r = c
        .list_multipart_uploads()
        .bucket("mlist")
        .prefix("sp")
        .encoding_type(aws_sdk_s3::types::EncodingType::Url)
        .send()
        .await
        .unwrap();
    assert_eq!(r.uploads()[0].key(), Some("sp%20ace%2Bplus"));
    assert_eq!(r.encoding_type().map(|e| e.as_str()), Some("url"));
    let parts = c.list_parts().bucket("mlist").key("folder/file1").upload_id(&ids[2]).send().await.unwrap();
    assert_eq!((parts.part_number_marker(), parts.next_part_number_marker()), (Some("0"), Some("0")));
}
