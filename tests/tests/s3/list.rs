//! Listing: order, delimiters and pagination.

use penstock_tests::{list_all, put, Gateway};

#[tokio::test]
async fn listing_order_delimiters_and_pagination() {
    let (_gw, c) = Gateway::with_bucket("lst").await;
    let mut keys = vec![
        "a.txt",
        "a/b",
        "a/c/d",
        "a0",
        "b",
        "ünï/cødé",
        "m@1@0@abc@bf16",
        "100%",
        "with space",
        "z/",
        "z/y",
        "dir/",
    ];
    for k in &keys {
        put(&c, "lst", k, b"").await;
    }
    keys.sort();
    for page in [1, 2, 3, 1000] {
        assert_eq!(list_all(&c, "lst", None, page).await, keys, "page size {page}");
    }
    assert_eq!(list_all(&c, "lst", Some("a/"), 1).await, ["a/b", "a/c/d"]);

    let r = c.list_objects_v2().bucket("lst").delimiter("/").send().await.unwrap();
    let contents: Vec<_> = r.contents().iter().map(|o| o.key().unwrap()).collect();
    let prefixes: Vec<_> = r.common_prefixes().iter().map(|p| p.prefix().unwrap()).collect();
    assert_eq!(contents, ["100%", "a.txt", "a0", "b", "m@1@0@abc@bf16", "with space"]);
    assert_eq!(prefixes, ["a/", "dir/", "z/", "ünï/"]);

    // Paginated delimiter listing returns each prefix once.
    let mut seen = vec![];
    let mut token = None;
    loop {
        let r = c
            .list_objects_v2()
            .bucket("lst")
            .delimiter("/")
            .max_keys(2)
            .set_continuation_token(token.take())
            .send()
            .await
            .unwrap();
        seen.extend(r.contents().iter().map(|o| o.key().unwrap().to_owned()));
        seen.extend(r.common_prefixes().iter().map(|p| p.prefix().unwrap().to_owned()));
        match r.next_continuation_token() {
            Some(t) => token = Some(t.to_owned()),
            None => break,
        }
    }
    seen.sort();
    let mut want: Vec<String> = contents.iter().chain(prefixes.iter()).map(|s| s.to_string()).collect();
    want.sort();
    assert_eq!(seen, want);

    let r = c.list_objects_v2().bucket("lst").prefix("z/").delimiter("/").send().await.unwrap();
    let contents: Vec<_> = r.contents().iter().map(|o| o.key().unwrap()).collect();
    assert_eq!(contents, ["z/", "z/y"]);
    let r = c.list_objects_v2().bucket("lst").start_after("a/c/d").send().await.unwrap();
    assert_eq!(r.contents()[0].key(), Some("a0"));
    let r = c.list_objects_v2().bucket("lst").delimiter("").send().await.unwrap();
    assert_eq!(r.contents().len(), keys.len(), "an empty delimiter means none");

    let r = c.list_objects().bucket("lst").max_keys(3).send().await.unwrap();
    assert_eq!(r.contents().len(), 3);
    assert_eq!(r.is_truncated(), Some(true));
    let r = c.list_objects().bucket("lst").marker("b").send().await.unwrap();
    assert_eq!(r.contents()[0].key(), Some("dir/"));

    let v = c.list_object_versions().bucket("lst").send().await.unwrap();
    assert_eq!(v.versions().len(), keys.len());
    assert!(v.versions().iter().all(|o| o.version_id() == Some("null") && o.is_latest() == Some(true)));

    let r = c
        .list_objects_v2()
        .bucket("lst")
        .prefix("with")
        .encoding_type(aws_sdk_s3::types::EncodingType::Url)
        .send()
        .await
        .unwrap();
    // The SDK hands back the encoded form when the caller asked for it explicitly.
    assert_eq!(r.contents()[0].key(), Some("with%20space"));
}
