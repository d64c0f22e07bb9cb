//! Object tagging.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{Tag, Tagging};
use penstock_tests::{code, status, Gateway};

#[tokio::test]
async fn tagging() {
    let (_gw, c) = Gateway::with_bucket("tags").await;
    c.put_object()
        .bucket("tags")
        .key("t")
        .tagging("b=two&a=1&c")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap();
    let t = c.get_object_tagging().bucket("tags").key("t").send().await.unwrap();
    // A set, answered in key order however it was spelled; a key without `=` has an empty value.
    let got: Vec<_> = t.tag_set().iter().map(|t| (t.key(), t.value())).collect();
    assert_eq!(got, [("a", "1"), ("b", "two"), ("c", "")]);
    assert_eq!(c.get_object().bucket("tags").key("t").send().await.unwrap().tag_count(), Some(3));
    c.put_object_tagging()
        .bucket("tags")
        .key("t")
        .tagging(Tagging::builder().tag_set(Tag::builder().key("z").value("9").build().unwrap()).build().unwrap())
        .send()
        .await
        .unwrap();
    let t = c.get_object_tagging().bucket("tags").key("t").send().await.unwrap();
    assert_eq!(t.tag_set()[0].key(), "z");
    c.delete_object_tagging().bucket("tags").key("t").send().await.unwrap();
    assert!(c.get_object_tagging().bucket("tags").key("t").send().await.unwrap().tag_set().is_empty());
    let e = c.get_object_tagging().bucket("tags").key("nope").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    // Keys starting with `aws:` are AWS's own: refused on every way in, and nothing changes.
    let reserved = Tagging::builder().tag_set(Tag::builder().key("aws:x").value("1").build().unwrap()).build().unwrap();
    let e = c.put_object_tagging().bucket("tags").key("t").tagging(reserved).send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidTag");
    let e = c.put_object().bucket("tags").key("n").tagging("aws:x=1").send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidTag");
    let e = c
        .copy_object()
        .bucket("tags")
        .key("n")
        .copy_source("tags/t")
        .tagging_directive(aws_sdk_s3::types::TaggingDirective::Replace)
        .tagging("AWS:x=1")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidTag");
    assert_eq!(c.head_object().bucket("tags").key("n").send().await.map_err(|e| status(&e)).unwrap_err(), 404);
    assert!(c.get_object_tagging().bucket("tags").key("t").send().await.unwrap().tag_set().is_empty());
}
