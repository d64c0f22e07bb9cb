//! A store written by the first release (schema version 1, `tests/fixtures/store-v1.tar.gz`,
//! made by `tests/fixtures/make-store-v1.sh`) opens, migrates, and reads back as typed records.

use std::process::Command;

use penstock_metadata::{
    schema::SCHEMA_VERSION, ChecksumAlgorithm, ChecksumType, Perm, QuotaScope, Role, Store, StoreOptions, UploadId,
    UsageMode,
};
use uuid::Uuid;

/// The fixture's `data/` directory, unpacked, and what its maker recorded in `expect.json`.
fn unpack() -> (tempfile::TempDir, serde_json::Value) {
    let dir = tempfile::tempdir().unwrap();
    let tarball = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/store-v1.tar.gz");
    let untar = Command::new("tar")
        .args(["-xzf", tarball, "-C"])
        .arg(dir.path())
        .status();
    assert!(untar.expect("run tar").success(), "cannot unpack {tarball}");
    let expect = std::fs::read(dir.path().join("data/expect.json")).unwrap();
    (dir, serde_json::from_slice(&expect).unwrap())
}

#[test]
fn a_first_release_store_migrates_to_typed_records() {
    let (dir, expect) = unpack();
    let path = dir.path().join("data/metadata");
    let s = Store::open(&path, StoreOptions::default()).unwrap();
    assert_eq!(s.schema_version().unwrap(), Some(SCHEMA_VERSION));

    // Keypairs: seconds became milliseconds, nothing else moved.
    for old in expect["keypairs"].as_array().unwrap() {
        let kp = s.keypair(old["access_key"].as_str().unwrap()).unwrap().unwrap();
        assert_eq!(kp.created_ms, old["created"].as_i64().unwrap() * 1000);
        assert_eq!(kp.user_id.to_string(), old["user_id"].as_str().unwrap());
        assert!(kp.enabled);
    }

    let user: Uuid = expect["user"].as_str().unwrap().parse().unwrap();
    let project: Uuid = expect["project"].as_str().unwrap().parse().unwrap();
    assert_eq!(s.user(user).unwrap().unwrap().role, Role::User);
    assert!(s.users().unwrap().iter().any(|u| u.role == Role::Superadmin));

    let mine = s.bucket("acme", "alice-data").unwrap().unwrap();
    assert_eq!(mine.quota_scope, QuotaScope::user(user));
    assert_eq!(mine.usage_mode, UsageMode::General);
    let models = s.bucket("acme", "ml-models").unwrap().unwrap();
    assert_eq!(models.quota_scope, QuotaScope::project(project));
    assert_eq!(models.usage_mode, UsageMode::Model);
    assert_eq!(models.permission, Perm::Rw);

    let quota = s.quota(&QuotaScope::project(project)).unwrap().unwrap();
    assert_eq!(quota.limit_bytes, Some(1_000_000));

    let obj = s.object(mine.folder_id, "docs/hello.txt").unwrap().unwrap();
    assert_eq!(obj.etag, "e107ece8cc28b767006dae40007fabf9");
    assert_eq!(obj.checksums.checksum_type, Some(ChecksumType::FullObject));
    assert_eq!(obj.attrs.user_metadata.get("origin").map(String::as_str), Some("v1"));
    assert_eq!(obj.tags, vec![("stage".to_owned(), "old".to_owned())]);

    let id: UploadId = expect["upload_id"].as_str().unwrap().parse().unwrap();
    let up = s.upload(mine.folder_id, "big.bin", &id).unwrap().unwrap();
    assert_eq!(up.checksum_algorithm, Some(ChecksumAlgorithm::Crc32c));
    assert_eq!(s.parts(&id).unwrap().len(), 1);

    // Opening again finds nothing left to migrate and changes nothing.
    let before = s.keypairs().unwrap();
    drop(s);
    let s = Store::open(&path, StoreOptions::default()).unwrap();
    assert_eq!(s.keypairs().unwrap(), before);
}
