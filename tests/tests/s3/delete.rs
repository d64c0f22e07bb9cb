//! Deletes, single and batch, and how directories behave.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Delete, ObjectIdentifier};
use penstock_tests::{code, get, keys, md5_hex, put, status, Gateway};

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

/// Conditional deletes (S3 since 2025) and conditional copies judge the key's current object
/// under the key lock: a failed condition is 412 and removes or replaces nothing.
#[tokio::test]
async fn conditional_deletes_and_copies() {
    let (_gw, c) = Gateway::with_bucket("cond").await;
    put(&c, "cond", "k", b"one").await;
    let etag = format!("\"{}\"", md5_hex(b"one"));
    let e = c.delete_object().bucket("cond").key("k").if_match("\"abc\"").send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("PreconditionFailed".to_owned(), 412));
    let e = c.delete_object().bucket("cond").key("k").if_match_size(7).send().await.unwrap_err();
    assert_eq!(status(&e), 412);
    assert_eq!(get(&c, "cond", "k").await, b"one");
    c.delete_object().bucket("cond").key("k").if_match(&etag).if_match_size(3).send().await.unwrap();
    // An entity tag (or '*') where nothing is: 404; a size alone: nothing to protect.
    let e = c.delete_object().bucket("cond").key("k").if_match("*").send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("NoSuchKey".to_owned(), 404));
    c.delete_object().bucket("cond").key("k").if_match_size(3).send().await.unwrap();

    put(&c, "cond", "a", b"a").await;
    put(&c, "cond", "b", b"b").await;
    let id = |k: &str, etag: &str| ObjectIdentifier::builder().key(k).e_tag(etag).build().unwrap();
    let r = c
        .delete_objects()
        .bucket("cond")
        .delete(
            Delete::builder().objects(id("a", "\"nope\"")).objects(id("b", "*")).objects(id("z", "*")).build().unwrap(),
        )
        .send()
        .await
        .unwrap();
    let deleted: Vec<_> = r.deleted().iter().filter_map(|d| d.key()).collect();
    let errors: Vec<_> = r.errors().iter().map(|e| (e.key().unwrap(), e.code().unwrap())).collect();
    assert_eq!(deleted, ["b"]);
    assert_eq!(errors, [("a", "PreconditionFailed"), ("z", "NoSuchKey")]);
    assert_eq!(keys(&c, "cond").await, ["a"]);

    // CopyObject's If-Match/If-None-Match are on the destination.
    let src = "cond/a";
    let e = c
        .copy_object()
        .bucket("cond")
        .key("a")
        .copy_source(src)
        .if_match("\"x\"")
        .metadata_directive(aws_sdk_s3::types::MetadataDirective::Replace)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 412);
    let e = c.copy_object().bucket("cond").key("a2").copy_source(src).if_match("*").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    c.copy_object().bucket("cond").key("a2").copy_source(src).if_none_match("*").send().await.unwrap();
    let e = c.copy_object().bucket("cond").key("a2").copy_source(src).if_none_match("*").send().await.unwrap_err();
    assert_eq!(status(&e), 412);
    // A directory marker is an object to If-None-Match too.
    put(&c, "cond", "d/", b"").await;
    let e = c
        .put_object()
        .bucket("cond")
        .key("d/")
        .if_none_match("*")
        .body(ByteStream::from_static(b""))
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 412);
}

/// DeleteObjects deletes its keys several at a time and answers them in request order; directory
/// markers deleted together with the keys beneath them (`d/` before or after `d/x`, nested
/// `d/e/`) go too, leaving no directory behind to read as a marker again. Before, a marker and
/// its one file deleted at the same moment (also as two DeleteObject requests) left the
/// marker's directory in about half the cases. The same in a versioned bucket, where the files'
/// deletes move them into the version store and leave delete markers.
#[tokio::test]
async fn batch_deletes_answer_in_order_and_take_markers_with_their_contents() {
    batch_delete_with_markers(false).await;
    batch_delete_with_markers(true).await;
}

async fn batch_delete_with_markers(versioned: bool) {
    use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
    let (gw, c) = Gateway::with_bucket("batch").await;
    if versioned {
        let on = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
        c.put_bucket_versioning().bucket("batch").versioning_configuration(on).send().await.unwrap();
    }
    // Markers with one file each, next to each other in the request (so deleted at once), a
    // marker holding many, and nested markers.
    let mut names: Vec<String> = Vec::new();
    for i in 0..40 {
        names.push(format!("m{i:02}/"));
        names.push(format!("m{i:02}/f"));
    }
    names.extend(["d/".into(), "d/e/".into()]);
    for i in 0..40 {
        names.push(format!("d/x{i:02}"));
        names.push(format!("d/e/y{i:02}"));
    }
    names.push("z/".into());
    for n in &names {
        put(&c, "batch", n, b"").await;
    }
    // Markers before, after and between their contents, as clients list them or not.
    let mut order = names.clone();
    order[80..].rotate_left(41);
    order.push("ghost".into());
    let delete = Delete::builder()
        .set_objects(Some(order.iter().map(|k| ObjectIdentifier::builder().key(k).build().unwrap()).collect()))
        .build()
        .unwrap();
    let r = c.delete_objects().bucket("batch").delete(delete).send().await.unwrap();
    assert!(r.errors().is_empty(), "{:?}", r.errors());
    let answered: Vec<&str> = r.deleted().iter().map(|d| d.key().unwrap()).collect();
    assert_eq!(answered, order.iter().map(String::as_str).collect::<Vec<_>>(), "answers in request order");
    assert!(keys(&c, "batch").await.is_empty(), "versioned {versioned}, left: {:?}", keys(&c, "batch").await);
    let dir = gw.folder_dir(".penstock");
    let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(left, [".penstock"], "versioned {versioned}: directories left behind");
}
