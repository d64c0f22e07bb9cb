//! CopyObject and its metadata directives.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::MetadataDirective;
use penstock_tests::{code, get, md5_hex, status, Gateway};

#[tokio::test]
async fn copy_object_directives() {
    let (_gw, c) = Gateway::with_bucket("src-b").await;
    c.create_bucket().bucket("dst-b").send().await.unwrap();
    c.put_object()
        .bucket("src-b")
        .key("a.txt")
        .body(ByteStream::from_static(b"copy me"))
        .metadata("k", "v")
        .content_type("text/plain")
        .send()
        .await
        .unwrap();
    let r = c.copy_object().bucket("dst-b").key("b/c.txt").copy_source("src-b/a.txt").send().await.unwrap();
    assert_eq!(r.copy_object_result().unwrap().e_tag().unwrap(), format!("\"{}\"", md5_hex(b"copy me")));
    let h = c.head_object().bucket("dst-b").key("b/c.txt").send().await.unwrap();
    assert_eq!(h.metadata().unwrap().get("k").map(String::as_str), Some("v"));
    assert_eq!(h.content_type(), Some("text/plain"));

    c.copy_object()
        .bucket("dst-b")
        .key("b/d.txt")
        .copy_source("src-b/a.txt")
        .metadata_directive(MetadataDirective::Replace)
        .metadata("k2", "v2")
        .send()
        .await
        .unwrap();
    let h = c.head_object().bucket("dst-b").key("b/d.txt").send().await.unwrap();
    assert_eq!(h.metadata().unwrap().get("k"), None);
    assert_eq!(h.metadata().unwrap().get("k2").map(String::as_str), Some("v2"));

    // Self-copy needs REPLACE and changes only metadata.
    let e = c.copy_object().bucket("src-b").key("a.txt").copy_source("src-b/a.txt").send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidRequest");
    c.copy_object()
        .bucket("src-b")
        .key("a.txt")
        .copy_source("src-b/a.txt")
        .metadata_directive(MetadataDirective::Replace)
        .metadata("mode", "0644")
        .send()
        .await
        .unwrap();
    let h = c.head_object().bucket("src-b").key("a.txt").send().await.unwrap();
    assert_eq!(h.metadata().unwrap().get("mode").map(String::as_str), Some("0644"));
    assert_eq!(get(&c, "src-b", "a.txt").await, b"copy me");

    let e = c
        .copy_object()
        .bucket("dst-b")
        .key("x")
        .copy_source("src-b/a.txt")
        .copy_source_if_match("\"nope\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 412);
    let e = c.copy_object().bucket("dst-b").key("x").copy_source("src-b/missing%20one").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    // As S3 does, the document names the source's key, the one that is missing.
    let doc = String::from_utf8_lossy(e.raw_response().unwrap().body().bytes().unwrap()).into_owned();
    assert!(doc.contains("<Key>missing one</Key>"), "{doc}");
}
