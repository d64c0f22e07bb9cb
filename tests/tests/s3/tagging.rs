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

#[tokio::test]
async fn tags_s3_refuses_are_refused_as_s3_refuses_them() {
    let (_gw, c) = Gateway::with_bucket("tagrules").await;
    let put = |tagging: &'static str| {
        c.put_object().bucket("tagrules").key("h").tagging(tagging).body(ByteStream::from_static(b"x")).send()
    };
    // A header that is no URL encoding of distinct tags names itself; nothing is written.
    for header in ["key1=val1&key1=val2", "key1=val1,key2=val2"] {
        let e = put(header).await.unwrap_err();
        assert_eq!((code(&e), status(&e)), ("InvalidArgument".to_owned(), 400), "{header}");
        let doc = std::str::from_utf8(e.raw_response().unwrap().body().bytes().unwrap()).unwrap().to_owned();
        assert!(doc.contains("<ArgumentName>x-amz-tagging</ArgumentName>"), "{doc}");
    }
    assert_eq!(c.head_object().bucket("tagrules").key("h").send().await.map_err(|e| status(&e)).unwrap_err(), 404);
    // Letters of any script, numbers, spaces and `_ . : / = + - @` are allowed.
    put("caf%C3%A9=a%2Bb%40c&path%2Fto=x%3Dy").await.unwrap();
    // A set with a character outside them names the tag it refuses.
    let tag =
        |k: &str, v: &str| Tagging::builder().tag_set(Tag::builder().key(k).value(v).build().unwrap()).build().unwrap();
    for (k, v, named) in
        [("Key1,Key2", "a", "<TagKey>Key1,Key2</TagKey>"), ("Key1", "Val1,Val2", "<TagValue>Val1,Val2</TagValue>")]
    {
        let e = c.put_object_tagging().bucket("tagrules").key("h").tagging(tag(k, v)).send().await.unwrap_err();
        assert_eq!(code(&e), "InvalidTag");
        let doc = std::str::from_utf8(e.raw_response().unwrap().body().bytes().unwrap()).unwrap().to_owned();
        assert!(doc.contains(named), "{doc}");
    }
    let kept = c.get_object_tagging().bucket("tagrules").key("h").send().await.unwrap();
    assert_eq!(kept.tag_set().len(), 2, "a refused set changes nothing");
    // The tags of a key whose newest version is a delete marker: 405, as for the marker by id.
    crate::versioning::set_versioning(&c, "tagrules", aws_sdk_s3::types::BucketVersioningStatus::Enabled).await;
    c.delete_object().bucket("tagrules").key("h").send().await.unwrap();
    let e = c.get_object_tagging().bucket("tagrules").key("h").send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("MethodNotAllowed".to_owned(), 405));
    let e = c.put_object_tagging().bucket("tagrules").key("h").tagging(tag("a", "b")).send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("MethodNotAllowed".to_owned(), 405));
    let e = c.delete_object_tagging().bucket("tagrules").key("h").send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("MethodNotAllowed".to_owned(), 405));
    let e = c.get_object_tagging().bucket("tagrules").key("never").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey", "a key that never was is still 404");
}
