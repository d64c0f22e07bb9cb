//! Deletes, single and batch, and how directories behave.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use penstock_tests::{code, get, keys, put, status, Gateway};

#[tokio::test]
async fn deletes_and_directory_semantics() {
    let (gw, c) = Gateway::with_bucket("del").await;
    put(&c, "del", "keep", b"k").await;
    put(&c, "del", "p/q/r", b"x").await;
    let dir = gw.folder_dir("keep");
    c.delete_object().bucket("del").key("p/q/r").send().await.unwrap();
    assert!(!dir.join("p").exists(), "empty parents are removed");
    c.delete_object().bucket("del").key("never-existed").send().await.unwrap();

    // A marker directory survives deletion of its contents.
    put(&c, "del", "m/", b"").await;
    put(&c, "del", "m/f", b"x").await;
    c.delete_object().bucket("del").key("m/f").send().await.unwrap();
    assert!(dir.join("m").is_dir());
    c.head_object().bucket("del").key("m/").send().await.unwrap();

    // File/directory conflicts are 409 and change nothing.
    put(&c, "del", "f", b"file").await;
    let e = c.put_object().bucket("del").key("f/g").body(ByteStream::from_static(b"x")).send().await.unwrap_err();
    assert_eq!(status(&e), 409);
    assert_eq!(code(&e), "ObjectParentIsFile");
    put(&c, "del", "d/e", b"x").await;
    let e = c.put_object().bucket("del").key("d").body(ByteStream::from_static(b"x")).send().await.unwrap_err();
    assert_eq!(status(&e), 409);
    assert_eq!(get(&c, "del", "f").await, b"file");
    // A marker key may carry a body (client_compat covers the rest): it reads back exactly.
    put(&c, "del", "n/", b"x").await;
    assert_eq!(get(&c, "del", "n/").await, b"x");

    let r = c
        .delete_objects()
        .bucket("del")
        .delete(
            Delete::builder()
                .objects(ObjectIdentifier::builder().key("keep").build().unwrap())
                .objects(ObjectIdentifier::builder().key("f").version_id("null").build().unwrap())
                .objects(ObjectIdentifier::builder().key("ghost").build().unwrap())
                .objects(ObjectIdentifier::builder().key("a//b").build().unwrap())
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(r.deleted().len(), 3);
    assert_eq!(r.errors().len(), 1);
    assert_eq!(r.errors()[0].key(), Some("a//b"));
    assert_eq!(keys(&c, "del").await, ["d/e", "m/", "n/"]);
}
