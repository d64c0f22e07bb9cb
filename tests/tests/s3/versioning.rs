//! Versioned buckets: the current version stays the plain file at the key's path, noncurrent
//! versions and delete markers are kept beside it, and every S3 rule about `null` versions,
//! markers and listing order holds.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{BucketVersioningStatus, Delete, ObjectIdentifier, Tag, Tagging, VersioningConfiguration};
use aws_sdk_s3::Client;
use penstock_tests::{code, get, put, status, Gateway};

const ADMIN_SCOPE: &str = "user:70656e73-746f-636b-6164-6d696e000001";

/// Sets bucket `b`'s versioning status.
pub(crate) async fn set_versioning(c: &Client, b: &str, s: BucketVersioningStatus) {
    let conf = VersioningConfiguration::builder().status(s).build();
    c.put_bucket_versioning().bucket(b).versioning_configuration(conf).send().await.unwrap();
}

/// PUTs `body` and answers the version id.
async fn put_v(c: &Client, b: &str, k: &str, body: &[u8]) -> String {
    let out = c.put_object().bucket(b).key(k).body(ByteStream::from(body.to_vec())).send().await.unwrap();
    out.version_id().unwrap().to_owned()
}

async fn get_v(c: &Client, b: &str, k: &str, v: &str) -> Vec<u8> {
    let out = c.get_object().bucket(b).key(k).version_id(v).send().await.unwrap();
    assert_eq!(out.version_id(), Some(v));
    out.body.collect().await.unwrap().into_bytes().to_vec()
}

/// `(key, version id, latest, is a delete marker)` of every version, as listed, paging by `page`.
/// Versions and markers come in two lists, so within a page and key the versions come first
/// (newest first), then the markers.
async fn versions(c: &Client, b: &str, prefix: Option<&str>, page: i32) -> Vec<(String, String, bool, bool)> {
    let (mut out, mut km, mut vm) = (Vec::new(), None::<String>, None::<String>);
    loop {
        let r = c
            .list_object_versions()
            .bucket(b)
            .set_prefix(prefix.map(str::to_owned))
            .max_keys(page)
            .set_key_marker(km.clone())
            .set_version_id_marker(vm.clone())
            .send()
            .await
            .unwrap();
        let mut got: Vec<_> = r
            .versions()
            .iter()
            .map(|v| (v.key().unwrap().to_owned(), v.version_id().unwrap().to_owned(), v.is_latest().unwrap(), false))
            .chain(r.delete_markers().iter().map(|m| {
                (m.key().unwrap().to_owned(), m.version_id().unwrap().to_owned(), m.is_latest().unwrap(), true)
            }))
            .collect();
        assert!(got.len() <= page as usize, "a page holds at most max-keys");
        // Versions and markers come in two lists; S3's order is by key, then newest first.
        got.sort_by_key(|(k, ..)| k.clone());
        out.extend(got);
        if !r.is_truncated().unwrap() {
            return out;
        }
        km = r.next_key_marker().map(str::to_owned);
        vm = r.next_version_id_marker().map(str::to_owned);
    }
}

fn ids(v: &[(String, String, bool, bool)]) -> Vec<&str> {
    v.iter().map(|(_, id, ..)| id.as_str()).collect()
}

#[tokio::test]
async fn configuration_round_trips() {
    let (_gw, c) = Gateway::with_bucket("vconf").await;
    let r = c.get_bucket_versioning().bucket("vconf").send().await.unwrap();
    assert_eq!(r.status(), None, "never versioned");
    set_versioning(&c, "vconf", BucketVersioningStatus::Enabled).await;
    let r = c.get_bucket_versioning().bucket("vconf").send().await.unwrap();
    assert_eq!(r.status(), Some(&BucketVersioningStatus::Enabled));
    set_versioning(&c, "vconf", BucketVersioningStatus::Suspended).await;
    let r = c.get_bucket_versioning().bucket("vconf").send().await.unwrap();
    assert_eq!(r.status(), Some(&BucketVersioningStatus::Suspended));
    let bad = VersioningConfiguration::builder().status(BucketVersioningStatus::from("Sometimes")).build();
    let e = c.put_bucket_versioning().bucket("vconf").versioning_configuration(bad).send().await.unwrap_err();
    assert_eq!(code(&e), "MalformedXML");
    let e = c.get_bucket_versioning().bucket("nope-bucket").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
}

#[tokio::test]
async fn overwrites_keep_versions_and_the_key_holds_the_latest() {
    let (gw, c) = Gateway::with_bucket("vover").await;
    put(&c, "vover", "d/k", b"before versioning").await;
    set_versioning(&c, "vover", BucketVersioningStatus::Enabled).await;
    let v1 = put_v(&c, "vover", "d/k", b"first").await;
    let out = c
        .put_object()
        .bucket("vover")
        .key("d/k")
        .content_type("text/x-second")
        .metadata("n", "2")
        .body(ByteStream::from_static(b"second!"))
        .send()
        .await
        .unwrap();
    let v2 = out.version_id().unwrap().to_owned();
    assert_ne!(v1, v2);
    // Sessions see the latest bytes at the key's path.
    let dir = gw.folder_dir("d");
    assert_eq!(std::fs::read(dir.join("d/k")).unwrap(), b"second!");
    assert_eq!(get(&c, "vover", "d/k").await, b"second!");
    assert_eq!(get_v(&c, "vover", "d/k", &v1).await, b"first");
    assert_eq!(get_v(&c, "vover", "d/k", "null").await, b"before versioning");
    // Each version keeps its own metadata.
    let h = c.head_object().bucket("vover").key("d/k").version_id(&v2).send().await.unwrap();
    assert_eq!((h.content_type(), h.version_id()), (Some("text/x-second"), Some(v2.as_str())));
    assert_eq!(h.metadata().unwrap()["n"], "2");
    let h = c.head_object().bucket("vover").key("d/k").version_id(&v1).send().await.unwrap();
    assert_eq!(h.content_length(), Some(5));
    assert!(h.metadata().is_none_or(|m| m.is_empty()));
    let h = c.head_object().bucket("vover").key("d/k").send().await.unwrap();
    assert_eq!(h.version_id(), Some(v2.as_str()));
    // Noncurrent versions are neither objects nor files a session sees as keys.
    let listed = c.list_objects_v2().bucket("vover").send().await.unwrap();
    assert_eq!(listed.contents().len(), 1);
    assert_eq!(ids(&versions(&c, "vover", None, 1000).await), [v2.as_str(), v1.as_str(), "null"]);
    // Every stored version counts against the quota, as a rescan finds it.
    let tracked = gw.admin(&["quota", "show", ADMIN_SCOPE])["usage_bytes"].as_u64().unwrap();
    assert_eq!(tracked, (17 + 5 + 7) as u64);
    let rescanned = gw.admin(&["quota", "rescan", ADMIN_SCOPE])["usage_bytes"].as_u64().unwrap();
    assert_eq!(rescanned, tracked);
    // Unknown and malformed version ids.
    let e = c
        .get_object()
        .bucket("vover")
        .key("d/k")
        .version_id("0123456789abcdef0123456789abcdef")
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e), status(&e)), ("NoSuchVersion".to_owned(), 404));
    let e = c.get_object().bucket("vover").key("d/k").version_id("not-a-version").send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("InvalidArgument".to_owned(), 400));
}

#[tokio::test]
async fn delete_markers_hide_and_deleting_them_restores() {
    let (gw, c) = Gateway::with_bucket("vdel").await;
    put(&c, "vdel", "here", b"marks the folder").await;
    c.delete_object().bucket("vdel").key("here").send().await.unwrap();
    set_versioning(&c, "vdel", BucketVersioningStatus::Enabled).await;
    let v1 = put_v(&c, "vdel", "a/b", b"one").await;
    let v2 = put_v(&c, "vdel", "a/b", b"two").await;
    let del = c.delete_object().bucket("vdel").key("a/b").send().await.unwrap();
    assert_eq!(del.delete_marker(), Some(true));
    let marker = del.version_id().unwrap().to_owned();
    let dir = gw.folder_dir(".penstock");
    assert!(!dir.join("a/b").exists(), "the key's file is gone");
    let e = c.get_object().bucket("vdel").key("a/b").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    let raw = e.raw_response().unwrap();
    assert_eq!(raw.headers().get("x-amz-delete-marker"), Some("true"));
    assert_eq!(raw.headers().get("x-amz-version-id"), Some(marker.as_str()));
    let e = c.head_object().bucket("vdel").key("a/b").version_id(&marker).send().await.unwrap_err();
    assert_eq!(status(&e), 405, "a delete marker read by id");
    let e = c.get_object().bucket("vdel").key("a/b").version_id(&marker).send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("MethodNotAllowed".to_owned(), 405));
    let raw = e.raw_response().unwrap();
    assert_eq!(raw.headers().get("allow"), Some("DELETE"));
    assert_eq!(raw.headers().get("x-amz-delete-marker"), Some("true"));
    let doc = std::str::from_utf8(raw.body().bytes().unwrap()).unwrap();
    assert!(doc.contains("<Method>GET</Method><ResourceType>DeleteMarker</ResourceType>"), "{doc}");
    // A copy may not name a marker as its source; a version id no gateway made is refused.
    let e = c
        .copy_object()
        .bucket("vdel")
        .key("copy")
        .copy_source(format!("vdel/a/b?versionId={marker}"))
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e), status(&e)), ("InvalidRequest".to_owned(), 400));
    let altered = format!("{}ABCD", &v1[..28]);
    let e = c.delete_object().bucket("vdel").key("a/b").version_id(&altered).send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("InvalidArgument".to_owned(), 400));
    assert_eq!(get_v(&c, "vdel", "a/b", &v2).await, b"two");
    let listed = versions(&c, "vdel", None, 1000).await;
    assert_eq!(ids(&listed), [v2.as_str(), v1.as_str(), marker.as_str()], "versions, then markers");
    assert_eq!(
        listed.iter().map(|(.., latest, m)| (*latest, *m)).collect::<Vec<_>>(),
        [(false, false), (false, false), (true, true)]
    );
    // A second delete adds a second marker.
    let again = c.delete_object().bucket("vdel").key("a/b").send().await.unwrap();
    let marker2 = again.version_id().unwrap().to_owned();
    assert_ne!(marker, marker2);
    // Deleting the latest marker uncovers the older marker; deleting that restores v2 at the path.
    let d = c.delete_object().bucket("vdel").key("a/b").version_id(&marker2).send().await.unwrap();
    assert_eq!((d.delete_marker(), d.version_id()), (Some(true), Some(marker2.as_str())));
    assert!(c.get_object().bucket("vdel").key("a/b").send().await.is_err());
    c.delete_object().bucket("vdel").key("a/b").version_id(&marker).send().await.unwrap();
    assert_eq!(std::fs::read(dir.join("a/b")).unwrap(), b"two");
    let h = c.head_object().bucket("vdel").key("a/b").send().await.unwrap();
    assert_eq!(h.version_id(), Some(v2.as_str()));
    assert_eq!(ids(&versions(&c, "vdel", None, 1000).await), [v2.as_str(), v1.as_str()]);
    // Deleting the current version by id makes the previous one current.
    c.delete_object().bucket("vdel").key("a/b").version_id(&v2).send().await.unwrap();
    assert_eq!(std::fs::read(dir.join("a/b")).unwrap(), b"one");
    assert_eq!(ids(&versions(&c, "vdel", None, 1000).await), [v1.as_str()]);
    // Deleting a version that is not there succeeds and changes nothing.
    c.delete_object().bucket("vdel").key("a/b").version_id(&v2).send().await.unwrap();
    // The bucket is not empty while any version or marker is left.
    c.delete_object().bucket("vdel").key("a/b").send().await.unwrap();
    let e = c.delete_bucket().bucket("vdel").send().await.unwrap_err();
    assert_eq!(code(&e), "BucketNotEmpty");
    let all = versions(&c, "vdel", None, 1000).await;
    let objects: Vec<ObjectIdentifier> =
        all.iter().map(|(k, v, ..)| ObjectIdentifier::builder().key(k).version_id(v).build().unwrap()).collect();
    let r = c
        .delete_objects()
        .bucket("vdel")
        .delete(Delete::builder().set_objects(Some(objects)).build().unwrap())
        .send()
        .await
        .unwrap();
    assert_eq!(r.deleted().len(), 2);
    assert!(r.errors().is_empty());
    assert!(r.deleted().iter().any(|d| d.delete_marker() == Some(true)), "{:?}", r.deleted());
    let tracked = gw.admin(&["quota", "show", ADMIN_SCOPE])["usage_bytes"].as_u64().unwrap();
    assert_eq!(tracked, 0, "every version's bytes were given back");
    c.delete_bucket().bucket("vdel").send().await.unwrap();
}

#[tokio::test]
async fn null_versions_follow_the_suspended_rules() {
    let (_gw, c) = Gateway::with_bucket("vnull").await;
    put(&c, "vnull", "k", b"n0").await;
    set_versioning(&c, "vnull", BucketVersioningStatus::Enabled).await;
    let v1 = put_v(&c, "vnull", "k", b"v1").await;
    set_versioning(&c, "vnull", BucketVersioningStatus::Suspended).await;
    // Suspended: a PUT makes the null version, replacing the old null one; v1 stays. As on S3,
    // the PUT's answer names no version; reads name it `null`.
    let out = c.put_object().bucket("vnull").key("k").body(ByteStream::from_static(b"n1")).send().await.unwrap();
    assert_eq!(out.version_id(), None);
    let head = c.head_object().bucket("vnull").key("k").send().await.unwrap();
    assert_eq!(head.version_id(), Some("null"));
    assert_eq!(ids(&versions(&c, "vnull", None, 1000).await), ["null", v1.as_str()]);
    assert_eq!(get_v(&c, "vnull", "k", "null").await, b"n1");
    // ... and again: the null current version is replaced, not kept.
    put(&c, "vnull", "k", b"n2").await;
    assert_eq!(ids(&versions(&c, "vnull", None, 1000).await), ["null", v1.as_str()]);
    // A suspended DELETE: the null current goes, a null delete marker takes its place.
    let d = c.delete_object().bucket("vnull").key("k").send().await.unwrap();
    assert_eq!((d.delete_marker(), d.version_id()), (Some(true), Some("null")));
    let listed = versions(&c, "vnull", None, 1000).await;
    assert_eq!(ids(&listed), [v1.as_str(), "null"], "versions, then markers");
    assert!(listed[1].3 && listed[1].2, "the null version is now the latest, a marker");
    // Enabled again: new versions get ids; the null marker stays until removed by id.
    set_versioning(&c, "vnull", BucketVersioningStatus::Enabled).await;
    let v3 = put_v(&c, "vnull", "k", b"v3").await;
    assert_eq!(ids(&versions(&c, "vnull", None, 1000).await), [v3.as_str(), v1.as_str(), "null"]);
    c.delete_object().bucket("vnull").key("k").version_id("null").send().await.unwrap();
    assert_eq!(ids(&versions(&c, "vnull", None, 1000).await), [v3.as_str(), v1.as_str()]);
    assert_eq!(get(&c, "vnull", "k").await, b"v3");
}

#[tokio::test]
async fn files_written_by_sessions_are_null_versions() {
    let (gw, c) = Gateway::with_bucket("vsess").await;
    set_versioning(&c, "vsess", BucketVersioningStatus::Enabled).await;
    let v1 = put_v(&c, "vsess", "k", b"from s3").await;
    let dir = gw.folder_dir("k");
    // A session overwrites the file in place of the gateway: a null current version.
    std::fs::write(dir.join("k.tmp"), b"from a session").unwrap();
    std::fs::rename(dir.join("k.tmp"), dir.join("k")).unwrap();
    std::fs::write(dir.join("fresh"), b"new file").unwrap();
    let h = c.head_object().bucket("vsess").key("fresh").send().await.unwrap();
    assert_eq!(h.version_id(), Some("null"));
    assert_eq!(get_v(&c, "vsess", "k", "null").await, b"from a session");
    // Overwriting through S3 keeps the session's bytes as the null version.
    let v2 = put_v(&c, "vsess", "k", b"s3 again").await;
    assert_eq!(get_v(&c, "vsess", "k", "null").await, b"from a session");
    let listed = versions(&c, "vsess", Some("k"), 1000).await;
    assert_eq!(ids(&listed), [v2.as_str(), "null"], "v1's file was replaced by the session: {v1}");
}

#[tokio::test]
async fn listing_versions_pages_in_s3_order() {
    let (_gw, c) = Gateway::with_bucket("vlist").await;
    set_versioning(&c, "vlist", BucketVersioningStatus::Enabled).await;
    let mut expected = Vec::new();
    for key in ["a", "b/x", "b/y", "c"] {
        let mut ids = Vec::new();
        for n in 0..3 {
            ids.push(put_v(&c, "vlist", key, format!("{key}{n}").as_bytes()).await);
        }
        if key == "b/y" {
            let d = c.delete_object().bucket("vlist").key(key).send().await.unwrap();
            ids.push(d.version_id().unwrap().to_owned());
        }
        ids.reverse();
        expected.extend(ids.into_iter().map(|v| (key.to_owned(), v)));
    }
    for page in [1, 2, 3, 5, 1000] {
        let got = versions(&c, "vlist", None, page).await;
        assert_eq!(got.len(), expected.len(), "page size {page}");
        let keys: Vec<_> = got.iter().map(|(k, ..)| k.clone()).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]), "keys in order, page size {page}");
        for key in ["a", "b/x", "b/y", "c"] {
            // The marker of b/y is its newest version; the others follow newest first.
            let g: Vec<_> = got.iter().filter(|(k, _, _, m)| k == key && !m).map(|(_, v, ..)| v).collect();
            let e: Vec<_> =
                expected.iter().filter(|(k, _)| k == key).map(|(_, v)| v).skip(usize::from(key == "b/y")).collect();
            assert_eq!(g, e, "versions of {key} newest first, page size {page}");
        }
    }
    // Latest flags: the newest version of each key, or the marker of a deleted one.
    let all = versions(&c, "vlist", None, 1000).await;
    let latest: Vec<_> = all.iter().filter(|v| v.2).map(|v| (v.0.as_str(), v.3)).collect();
    assert_eq!(latest.len(), 4);
    assert!(latest.contains(&("b/y", true)));
    // Prefix and delimiter roll up both current and noncurrent versions.
    let r = c.list_object_versions().bucket("vlist").delimiter("/").send().await.unwrap();
    // Both markers are answered, empty when not asked for, as S3 answers them.
    assert_eq!((r.key_marker(), r.version_id_marker()), (Some(""), Some("")));
    let prefixes: Vec<_> = r.common_prefixes().iter().map(|p| p.prefix().unwrap()).collect();
    assert_eq!(prefixes, ["b/"]);
    assert_eq!(r.versions().len(), 6);
    assert!(r.delete_markers().is_empty());
    let r = c.list_object_versions().bucket("vlist").prefix("b/").send().await.unwrap();
    assert_eq!((r.versions().len(), r.delete_markers().len()), (6, 1));
    // Resuming after a key marker alone skips all of that key's versions.
    let r = c.list_object_versions().bucket("vlist").key_marker("b/y").send().await.unwrap();
    assert!(r.versions().iter().all(|v| v.key() == Some("c")));
    // A version marker without its key, or one no gateway made, is refused as S3 refuses it.
    let v = &expected[0].1;
    for (key_marker, version_marker, message) in [
        (None, v.as_str(), "A version-id marker cannot be specified without a key marker."),
        (Some("a"), "test", "Invalid version id specified"),
    ] {
        let e = c
            .list_object_versions()
            .bucket("vlist")
            .set_key_marker(key_marker.map(str::to_owned))
            .version_id_marker(version_marker)
            .send()
            .await
            .unwrap_err();
        assert_eq!((code(&e), status(&e)), ("InvalidArgument".to_owned(), 400));
        assert_eq!(aws_sdk_s3::error::ProvideErrorMetadata::message(&e), Some(message));
    }
}

#[tokio::test]
async fn copy_tagging_and_multipart_speak_versions() {
    let (_gw, c) = Gateway::with_bucket("vcopy").await;
    set_versioning(&c, "vcopy", BucketVersioningStatus::Enabled).await;
    let v1 = put_v(&c, "vcopy", "src", b"old bytes").await;
    let v2 = put_v(&c, "vcopy", "src", b"new bytes").await;
    let out = c
        .copy_object()
        .bucket("vcopy")
        .key("dst")
        .copy_source(format!("vcopy/src?versionId={v1}"))
        .send()
        .await
        .unwrap();
    assert_eq!(out.copy_source_version_id(), Some(v1.as_str()));
    let dst_v = out.version_id().unwrap().to_owned();
    assert_eq!(get_v(&c, "vcopy", "dst", &dst_v).await, b"old bytes");
    // Tags of one version, current or not.
    let tags = Tagging::builder().tag_set(Tag::builder().key("t").value("old").build().unwrap()).build().unwrap();
    let r = c.put_object_tagging().bucket("vcopy").key("src").version_id(&v1).tagging(tags).send().await.unwrap();
    assert_eq!(r.version_id(), Some(v1.as_str()));
    let t = c.get_object_tagging().bucket("vcopy").key("src").version_id(&v1).send().await.unwrap();
    assert_eq!(t.tag_set()[0].value(), "old");
    assert!(c.get_object_tagging().bucket("vcopy").key("src").send().await.unwrap().tag_set().is_empty());
    let t = c.get_object_tagging().bucket("vcopy").key("src").send().await.unwrap();
    assert_eq!(t.version_id(), Some(v2.as_str()));
    // A multipart upload completes into a new version.
    let up = penstock_tests::s3::Upload::start(&c, "vcopy", "src").await;
    let e1 = up.part(1, vec![7u8; 5 << 20]).await;
    let done = up.complete(&[(1, e1)]).await;
    let v3 = done.version_id().unwrap().to_owned();
    assert_eq!(ids(&versions(&c, "vcopy", Some("src"), 1000).await), [v3.as_str(), v2.as_str(), v1.as_str()]);
    assert_eq!(get_v(&c, "vcopy", "src", &v2).await, b"new bytes");
}
