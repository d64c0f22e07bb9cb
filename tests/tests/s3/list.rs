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
    let r = c.list_objects_v2().bucket("lst").continuation_token("").start_after("a/c/d").send().await.unwrap();
    assert_eq!(r.contents()[0].key(), Some("a0"), "an empty continuation token means none");
    assert_eq!(r.continuation_token(), Some(""));

    let r = c.list_objects().bucket("lst").max_keys(3).send().await.unwrap();
    assert_eq!(r.contents().len(), 3);
    assert_eq!(r.is_truncated(), Some(true));
    let r = c.list_objects().bucket("lst").marker("b").send().await.unwrap();
    assert_eq!(r.contents()[0].key(), Some("dir/"));

    let v = c.list_object_versions().bucket("lst").send().await.unwrap();
    assert_eq!(v.versions().len(), keys.len());
    assert!(v.versions().iter().all(|o| o.version_id() == Some("null") && o.is_latest() == Some(true)));

    // A prefix no key can be under (keys are paths: no empty, `.` or `..` segment) lists
    // nothing; it is a filter, not a key to refuse.
    for prefix in ["/", "/a", "a//", "a/./b", "a/../a/b"] {
        for delimiter in [None, Some("/"), Some("d")] {
            let r = c
                .list_objects_v2()
                .bucket("lst")
                .prefix(prefix)
                .set_delimiter(delimiter.map(str::to_owned))
                .send()
                .await
                .unwrap_or_else(|e| panic!("prefix {prefix:?}: {e:?}"));
            assert!(r.contents().is_empty() && r.common_prefixes().is_empty(), "{prefix:?}");
            let r = c.list_objects().bucket("lst").prefix(prefix).send().await.unwrap();
            assert!(r.contents().is_empty(), "{prefix:?}");
        }
        let v = c.list_object_versions().bucket("lst").prefix(prefix).send().await.unwrap();
        assert!(v.versions().is_empty(), "{prefix:?}");
        let u = c.list_multipart_uploads().bucket("lst").prefix(prefix).send().await.unwrap();
        assert!(u.uploads().is_empty(), "{prefix:?}");
    }

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

/// A directory of many files written by a compute session (not through S3) lists completely and
/// in order, page by page, with prefixes, delimiters and start-after; once it has settled (the
/// gateway then keeps its names between pages), files a session adds, removes or rewrites
/// between pages show up in the pages that follow, as S3's listings would show them.
#[tokio::test]
async fn large_directories_page_in_order_and_follow_changes() {
    let (gw, c) = Gateway::with_bucket("big").await;
    put(&c, "big", "marker", b"").await;
    let folder = gw.folder_dir("marker");
    let dir = folder.join("shards");
    std::fs::create_dir(&dir).unwrap();
    let mut want = vec!["marker".to_owned()];
    for i in 0..2500 {
        let name = format!("s{:05}.tar", i * 2);
        std::fs::write(dir.join(&name), i.to_string()).unwrap();
        want.push(format!("shards/{name}"));
    }
    std::fs::create_dir(dir.join("s01000.tar.d")).unwrap();
    std::fs::write(dir.join("s01000.tar.d/idx"), b"i").unwrap();
    want.push("shards/s01000.tar.d/idx".to_owned());
    want.sort();
    assert_eq!(list_all(&c, "big", None, 1000).await, want);

    // Let the directory settle, so its names are kept from here on.
    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    for page in [1000, 777] {
        assert_eq!(list_all(&c, "big", None, page).await, want, "page size {page}");
    }
    let under: Vec<String> = want.iter().filter(|k| k.starts_with("shards/s0100")).cloned().collect();
    assert_eq!(list_all(&c, "big", Some("shards/s0100"), 3).await, under);
    let r = c.list_objects_v2().bucket("big").prefix("shards/s0100").delimiter("/").send().await.unwrap();
    let prefixes: Vec<_> = r.common_prefixes().iter().map(|p| p.prefix().unwrap()).collect();
    assert_eq!(prefixes, ["shards/s01000.tar.d/"]);
    assert_eq!(r.contents().len(), 5, "s01000.tar .. s01008.tar");
    let r = c.list_objects_v2().bucket("big").start_after("shards/s04997").max_keys(2).send().await.unwrap();
    let keys: Vec<_> = r.contents().iter().map(|o| o.key().unwrap()).collect();
    assert_eq!(keys, ["shards/s04998.tar"]);

    // Changes between pages: the first page, then a session adds one file on each side of it,
    // removes one after it and rewrites another in place.
    let first = c.list_objects_v2().bucket("big").max_keys(1000).send().await.unwrap();
    let token = first.next_continuation_token().unwrap().to_owned();
    let last_seen = first.contents().last().unwrap().key().unwrap().to_owned();
    std::fs::write(dir.join("s00001.tar"), b"before the marker").unwrap();
    std::fs::write(dir.join("s04999.tar"), b"after the marker").unwrap();
    std::fs::remove_file(dir.join("s03000.tar")).unwrap();
    std::fs::write(dir.join("s04000.tar"), vec![b'z'; 12345]).unwrap();
    let mut rest = Vec::new();
    let mut sizes = std::collections::HashMap::new();
    let mut token = Some(token);
    while let Some(t) = token.take() {
        let r = c.list_objects_v2().bucket("big").continuation_token(t).send().await.unwrap();
        for o in r.contents() {
            rest.push(o.key().unwrap().to_owned());
            sizes.insert(o.key().unwrap().to_owned(), o.size().unwrap());
        }
        token = r.next_continuation_token().map(str::to_owned);
    }
    let mut expected: Vec<String> =
        want.iter().filter(|k| k.as_str() > last_seen.as_str() && k.as_str() != "shards/s03000.tar").cloned().collect();
    expected.push("shards/s04999.tar".to_owned());
    expected.sort();
    let missing: Vec<_> = expected.iter().filter(|k| !rest.contains(k)).collect();
    let extra: Vec<_> = rest.iter().filter(|k| !expected.contains(k)).collect();
    assert!(missing.is_empty() && extra.is_empty(), "missing {missing:?}, not expected {extra:?}");
    assert_eq!(rest, expected, "in key order");
    assert_eq!(sizes["shards/s04000.tar"], 12345, "a file rewritten in place lists its new size");
}
