//! Additional checksums: verified on upload, stored, returned.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{ChecksumAlgorithm, ChecksumMode};
use penstock_tests::{code, status, Gateway};

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
    assert_eq!(status(&c.head_object().bucket("sums").key("bad").send().await.unwrap_err()), 404);
    let staging = gw.folder_dir("k-CRC32").join(".penstock/tmp");
    assert_eq!(std::fs::read_dir(staging).unwrap().count(), 0, "no staging file left behind");
}
