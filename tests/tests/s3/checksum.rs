//! Additional checksums: verified on upload, stored, returned.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode};
use penstock_tests::{code, error_doc, status, xml_element, Gateway};

#[tokio::test]
async fn checksums_are_verified_stored_and_returned() {
    let (gw, c) = Gateway::with_bucket("sums").await;
    for algo in
        [ChecksumAlgorithm::Crc32, ChecksumAlgorithm::Crc32C, ChecksumAlgorithm::Sha256, ChecksumAlgorithm::Crc64Nvme]
    {
        let key = format!("k-{}", algo.as_str());
        let p = c
            .put_object()
            .bucket("sums")
            .key(&key)
            .checksum_algorithm(algo.clone())
            .body(ByteStream::from(b"hello world".to_vec()))
            .send()
            .await
            .unwrap();
        let h = c.head_object().bucket("sums").key(&key).checksum_mode(ChecksumMode::Enabled).send().await.unwrap();
        let (sent, got) = match algo {
            ChecksumAlgorithm::Crc32 => (p.checksum_crc32(), h.checksum_crc32()),
            ChecksumAlgorithm::Crc32C => (p.checksum_crc32_c(), h.checksum_crc32_c()),
            ChecksumAlgorithm::Sha256 => (p.checksum_sha256(), h.checksum_sha256()),
            _ => (p.checksum_crc64_nvme(), h.checksum_crc64_nvme()),
        };
        assert!(got.is_some(), "{algo:?}");
        assert_eq!(sent, got, "{algo:?}");
    }
    assert_eq!(
        c.head_object()
            .bucket("sums")
            .key("k-CRC32")
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap()
            .checksum_crc32(),
        Some("DUoRhQ==")
    );

    // The mode is read in any case: clients built on the AWS CRT send `enabled` on the HEAD
    // whose checksum they validate a download against (GET too).
    for mode in ["enabled", "Enabled"] {
        let h = c.head_object().bucket("sums").key("k-CRC32").checksum_mode(ChecksumMode::from(mode));
        assert_eq!(h.send().await.unwrap().checksum_crc32(), Some("DUoRhQ=="), "{mode}");
        let g = c.get_object().bucket("sums").key("k-CRC32").checksum_mode(ChecksumMode::from(mode));
        assert_eq!(g.send().await.unwrap().checksum_crc32(), Some("DUoRhQ=="), "{mode}");
    }

    // A wrong checksum stores nothing.
    let e = c
        .put_object()
        .bucket("sums")
        .key("bad")
        .checksum_crc32("AAAAAA==")
        .body(ByteStream::from(b"hello world".to_vec()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    let e = c
        .put_object()
        .bucket("sums")
        .key("bad")
        .content_md5("1B2M2Y8AsgTpgAmY7PhCfg==")
        .body(ByteStream::from(b"not empty".to_vec()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    // As on S3, the document names the digest computed (base64) and the one claimed (hex: the
    // MD5 of no bytes).
    let doc = error_doc(&e);
    assert_eq!(xml_element(&doc, "CalculatedDigest").as_deref(), Some("eu3/pGh9N9QAe72Of88ADQ=="), "{doc}");
    assert_eq!(xml_element(&doc, "ExpectedDigest").as_deref(), Some("d41d8cd98f00b204e9800998ecf8427e"), "{doc}");
    assert_eq!(status(&c.head_object().bucket("sums").key("bad").send().await.unwrap_err()), 404);
    let staging = gw.folder_dir("k-CRC32").join(".penstock/tmp");
    assert_eq!(std::fs::read_dir(staging).unwrap().count(), 0, "no staging file left behind");
}

/// CompleteMultipartUpload's `x-amz-checksum-*` header states the whole object's checksum (for
/// a composite upload, the checksum of the parts' checksums, as minio-go sends it on every
/// upload), not the checksum of the request's XML: a right one completes, a wrong one is
/// refused with BadDigest and leaves the upload as it was.
#[tokio::test]
async fn complete_checks_the_objects_checksum_not_the_documents() {
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD;
    let (_gw, c) = Gateway::with_bucket("whole").await;
    let up = c
        .create_multipart_upload()
        .bucket("whole")
        .key("k")
        .checksum_algorithm(ChecksumAlgorithm::Crc32C)
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let mut parts = Vec::new();
    let mut concat = Vec::new();
    for (n, body) in [(1, vec![7u8; 5 << 20]), (2, b"tail".to_vec())] {
        let p = c
            .upload_part()
            .bucket("whole")
            .key("k")
            .upload_id(id)
            .part_number(n)
            .checksum_algorithm(ChecksumAlgorithm::Crc32C)
            .body(ByteStream::from(body))
            .send()
            .await
            .unwrap();
        let sum = p.checksum_crc32_c().unwrap().to_owned();
        concat.extend(b64.decode(&sum).unwrap());
        parts.push(CompletedPart::builder().part_number(n).e_tag(p.e_tag().unwrap()).checksum_crc32_c(sum).build());
    }
    let of_parts = b64.encode(crc32c::crc32c(&concat).to_be_bytes());
    let done = CompletedMultipartUpload::builder().set_parts(Some(parts)).build();
    let complete = |sum: &str| {
        c.complete_multipart_upload()
            .bucket("whole")
            .key("k")
            .upload_id(id)
            .multipart_upload(done.clone())
            .checksum_crc32_c(sum)
            .send()
    };
    let e = complete("AAAAAA==").await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "BadDigest"));
    let listed = c.list_parts().bucket("whole").key("k").upload_id(id).send().await.unwrap();
    assert_eq!(listed.parts().len(), 2, "a refused completion leaves the upload");
    let e = c.head_object().bucket("whole").key("k").send().await.unwrap_err();
    assert_eq!(status(&e), 404);

    let out = complete(&of_parts).await.unwrap();
    assert_eq!(out.checksum_crc32_c(), Some(format!("{of_parts}-2").as_str()));
    let h = c.head_object().bucket("whole").key("k").checksum_mode(ChecksumMode::Enabled).send().await.unwrap();
    assert_eq!(h.content_length(), Some((5 << 20) + 4));
}
