//! Upgrading in place: this build serves a data directory written by the first release
//! (`tests/fixtures/store-v1.tar.gz`, made by `tests/fixtures/make-store-v1.sh`), migrating its
//! metadata store at start-up. Keypairs, buckets, quotas and an unfinished multipart upload all
//! carry over.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use penstock_tests::{get, unpack_fixture, Gateway};
use serde_json::Value;

fn s<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_else(|| panic!("{k} missing in {v}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_release_data_dir_is_served_after_upgrade() {
    let (dir, expect) = unpack_fixture("store-v1.tar.gz");
    let gw = Gateway::start_in(dir, "");

    // Keypairs keep working, and report their creation time in milliseconds now.
    let listed = gw.admin(&["keypair", "list"]);
    for old in expect["keypairs"].as_array().unwrap() {
        let now = listed
            .as_array()
            .unwrap()
            .iter()
            .find(|k| k["access_key"] == old["access_key"])
            .unwrap_or_else(|| panic!("keypair {} lost: {listed}", old["access_key"]));
        assert_eq!(now["created_ms"].as_i64(), Some(old["created"].as_i64().unwrap() * 1000));
        assert_eq!(now["enabled"], Value::Bool(true));
    }
    let alice = gw.client_with(s(&expect, "access_key"), s(&expect, "secret_key"));
    assert_eq!(get(&alice, "alice-data", "docs/hello.txt").await, b"hello, v1\n");
    assert_eq!(get(&alice, "ml-models", "weights.bin").await, b"hello, v1\n");

    // Buckets keep their owner, usage mode and member permission; quotas their limit.
    let folders = gw.admin(&["vfolder", "list"]);
    let models = folders
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["name"] == "ml-models")
        .unwrap_or_else(|| panic!("ml-models lost: {folders}"));
    assert_eq!(models["usage_mode"], "model");
    assert_eq!(models["permission"], "rw");
    let scope = format!("project:{}", s(&expect, "project"));
    assert_eq!(models["quota_scope"], scope.as_str());
    let quota = gw.admin(&["quota", "show", &scope]);
    assert_eq!(quota["limit_bytes"], 1_000_000);

    // The upload begun before the upgrade takes a new part and finishes, with the checksum
    // algorithm it asked for. Unpacking gave part 1's file a new inode, which the gateway
    // rightly reads as that part having been replaced behind its back (an upgrade in place keeps
    // inodes), so the upload completes with the part written since.
    let id = s(&expect, "upload_id");
    alice
        .upload_part()
        .bucket("alice-data")
        .key("big.bin")
        .upload_id(id)
        .part_number(2)
        .checksum_algorithm(aws_sdk_s3::types::ChecksumAlgorithm::Crc32C)
        .body(ByteStream::from_static(b"tail"))
        .send()
        .await
        .unwrap();
    let parts = alice.list_parts().bucket("alice-data").key("big.bin").upload_id(id).send().await.unwrap();
    assert_eq!(parts.checksum_algorithm().map(|a| a.as_str()), Some("CRC32C"));
    let sizes: Vec<_> = parts.parts().iter().map(|p| (p.part_number(), p.size())).collect();
    assert_eq!(sizes, [(Some(1), Some(5 << 20)), (Some(2), Some(4))]);
    let p2 = &parts.parts()[1];
    let done = CompletedMultipartUpload::builder()
        .parts(
            CompletedPart::builder()
                .part_number(2)
                .e_tag(p2.e_tag().unwrap())
                .set_checksum_crc32_c(p2.checksum_crc32_c().map(str::to_owned))
                .build(),
        )
        .build();
    alice
        .complete_multipart_upload()
        .bucket("alice-data")
        .key("big.bin")
        .upload_id(id)
        .multipart_upload(done)
        .send()
        .await
        .unwrap();
    assert_eq!(get(&alice, "alice-data", "big.bin").await, b"tail");
}
