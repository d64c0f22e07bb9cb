//! Server-side encryption with customer-provided keys (SSE-C): objects stored encrypted under
//! the writer's key, read back (whole, by range, by part, copied) only with that key, and
//! refused as S3 refuses a missing, wrong or malformed key.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{BucketVersioningStatus, ObjectAttributes, VersioningConfiguration};
use base64::Engine;
use md5::{Digest, Md5};
use penstock_tests::{code, completed, data, get, md5_hex, put, status, Gateway, Upload};

/// A customer key as clients send it: the key and its MD5, both base64.
struct Key {
    b64: String,
    md5: String,
}

fn key(seed: u8) -> Key {
    let raw = [seed; 32];
    let b64 = base64::engine::general_purpose::STANDARD;
    Key { b64: b64.encode(raw), md5: b64.encode(Md5::digest(raw)) }
}

/// Adds the object's key fields to a request builder.
macro_rules! with_key {
    ($b:expr, $k:expr) => {
        $b.sse_customer_algorithm("AES256").sse_customer_key(&$k.b64).sse_customer_key_md5(&$k.md5)
    };
}

/// Adds a copy source's key fields to a request builder.
macro_rules! with_source_key {
    ($b:expr, $k:expr) => {
        $b.copy_source_sse_customer_algorithm("AES256")
            .copy_source_sse_customer_key(&$k.b64)
            .copy_source_sse_customer_key_md5(&$k.md5)
    };
}

async fn get_with(c: &aws_sdk_s3::Client, bucket: &str, k: &str, key: &Key) -> Vec<u8> {
    let out = with_key!(c.get_object().bucket(bucket).key(k), key).send().await.unwrap();
    assert_eq!(out.sse_customer_algorithm(), Some("AES256"));
    assert_eq!(out.sse_customer_key_md5(), Some(key.md5.as_str()));
    out.body.collect().await.unwrap().into_bytes().to_vec()
}

/// A PUT with a key stores ciphertext of the object's length in the folder; GET, HEAD and
/// ranges answer the plaintext with the key and are refused without it (400), with another
/// (403), and a key is refused for an object stored without one (400).
#[tokio::test]
async fn objects_are_stored_encrypted_and_read_only_with_their_key() {
    let (gw, c) = Gateway::with_bucket("ssec").await;
    let (k, other) = (key(1), key(2));
    // Past the size read whole (64 KiB), so the streaming path decrypts too.
    let body = data(300_001, 9);
    let out = with_key!(c.put_object().bucket("ssec").key("dir/big"), k)
        .metadata("note", "kept")
        .body(ByteStream::from(body.clone()))
        .send()
        .await
        .unwrap();
    assert_eq!(out.sse_customer_algorithm(), Some("AES256"));
    assert_eq!(out.sse_customer_key_md5(), Some(k.md5.as_str()));
    let etag = out.e_tag().unwrap().to_owned();
    assert_ne!(etag.trim_matches('"'), md5_hex(&body), "the ETag does not reveal the plaintext's MD5");
    with_key!(c.put_object().bucket("ssec").key("small"), k)
        .body(ByteStream::from_static(b"thirteen byte"))
        .send()
        .await
        .unwrap();

    // The folder holds ciphertext, exactly as long as the object.
    let on_disk = std::fs::read(gw.folder_dir("dir").join("dir/big")).unwrap();
    assert_eq!(on_disk.len(), body.len());
    assert_ne!(on_disk[..4096], body[..4096]);
    assert_ne!(std::fs::read(gw.folder_dir("small").join("small")).unwrap(), b"thirteen byte");

    assert_eq!(get_with(&c, "ssec", "dir/big", &k).await, body);
    assert_eq!(get_with(&c, "ssec", "small", &k).await, b"thirteen byte");
    for (from, to) in [(0u64, 0u64), (1, 17), (65_535, 65_537), (123_457, 299_999), (300_000, 300_000)] {
        let out = with_key!(c.get_object().bucket("ssec").key("dir/big"), k)
            .range(format!("bytes={from}-{to}"))
            .send()
            .await
            .unwrap();
        let got = out.body.collect().await.unwrap().into_bytes();
        assert_eq!(got[..], body[from as usize..=to as usize], "bytes {from}-{to}");
    }
    let h = with_key!(c.head_object().bucket("ssec").key("dir/big"), k).send().await.unwrap();
    assert_eq!((h.content_length(), h.e_tag()), (Some(body.len() as i64), Some(etag.as_str())));
    assert_eq!(h.metadata().and_then(|m| m.get("note")).map(String::as_str), Some("kept"));
    assert_eq!(h.sse_customer_algorithm(), Some("AES256"));
    // Conditions are judged on the object's own ETag.
    let g = with_key!(c.get_object().bucket("ssec").key("small"), k).if_match(&etag).send().await.unwrap_err();
    assert_eq!(status(&g), 412);

    // Without the key, with another, or with one for an object stored without one.
    let e = c.get_object().bucket("ssec").key("dir/big").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400));
    let e = c.head_object().bucket("ssec").key("dir/big").send().await.unwrap_err();
    assert_eq!(status(&e), 400);
    let e = with_key!(c.get_object().bucket("ssec").key("dir/big"), other).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403));
    let e = with_key!(c.head_object().bucket("ssec").key("dir/big"), other).send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    put(&c, "ssec", "plain", b"plain bytes").await;
    let e = with_key!(c.get_object().bucket("ssec").key("plain"), k).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400));
    assert_eq!(get(&c, "ssec", "plain").await, b"plain bytes");

    // Its attributes are read with its key too, as on S3.
    let e = c
        .get_object_attributes()
        .bucket("ssec")
        .key("small")
        .object_attributes(ObjectAttributes::ObjectSize)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 400);
    let a = with_key!(c.get_object_attributes().bucket("ssec").key("small"), k)
        .object_attributes(ObjectAttributes::ObjectSize)
        .send()
        .await
        .unwrap();
    assert_eq!(a.object_size(), Some(13));

    // Listings show the object's size and ETag without a key.
    let listed = c.list_objects_v2().bucket("ssec").prefix("dir/").send().await.unwrap();
    let o = &listed.contents()[0];
    assert_eq!((o.size(), o.e_tag()), (Some(body.len() as i64), Some(etag.as_str())));
}

/// Malformed keys are refused as S3 refuses them (400 and the code it gives) and write nothing.
#[tokio::test]
async fn malformed_keys_are_refused_and_write_nothing() {
    let (_gw, c) = Gateway::with_bucket("bad").await;
    let k = key(3);
    let put = || c.put_object().bucket("bad").key("k").body(ByteStream::from_static(b"v"));
    let cases = [
        (
            "a wrong MD5",
            put().sse_customer_algorithm("AES256").sse_customer_key(&k.b64).sse_customer_key_md5(key(4).md5),
            "InvalidArgument",
        ),
        ("no algorithm", put().sse_customer_key(&k.b64).sse_customer_key_md5(&k.md5), "InvalidArgument"),
        ("no key", put().sse_customer_algorithm("AES256").sse_customer_key_md5(&k.md5), "InvalidArgument"),
        (
            "a short key",
            put().sse_customer_algorithm("AES256").sse_customer_key("c2hvcnQ=").sse_customer_key_md5(&k.md5),
            "InvalidArgument",
        ),
        ("another algorithm", with_key!(put(), k).sse_customer_algorithm("AES128"), "InvalidEncryptionAlgorithmError"),
    ];
    for (what, req, want) in cases {
        let e = req.send().await.unwrap_err();
        assert_eq!((code(&e).as_str(), status(&e)), (want, 400), "{what}");
    }
    // A key beside an encryption method is a contradiction.
    let e = with_key!(put(), k)
        .server_side_encryption(aws_sdk_s3::types::ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidArgument", 400));
    let listed = c.list_objects_v2().bucket("bad").send().await.unwrap();
    assert!(listed.contents().is_empty(), "refused writes leave nothing");
}

/// Copies decrypt a source with its key (`x-amz-copy-source-server-side-encryption-customer-*`)
/// and store the copy under the copy's own key or none; copying an object onto itself with a
/// new key rotates it, and without one takes the key off.
#[tokio::test]
async fn copies_decrypt_their_source_and_encrypt_under_their_own_key() {
    let (_gw, c) = Gateway::with_bucket("copies").await;
    let (k, k2) = (key(5), key(6));
    let body = data(70_000, 4);
    with_key!(c.put_object().bucket("copies").key("src"), k).body(ByteStream::from(body.clone())).send().await.unwrap();

    let e = c.copy_object().bucket("copies").key("plain").copy_source("copies/src").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400), "a source read without its key");
    let e = with_source_key!(c.copy_object().bucket("copies").key("plain").copy_source("copies/src"), k2)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 403, "a source read with another key");

    let out = with_source_key!(c.copy_object().bucket("copies").key("plain").copy_source("copies/src"), k)
        .send()
        .await
        .unwrap();
    assert_eq!(out.sse_customer_algorithm(), None);
    assert_eq!(get(&c, "copies", "plain").await, body, "decrypted into a plain object");
    assert_eq!(
        out.copy_object_result().and_then(|r| r.e_tag()).map(|e| e.trim_matches('"').to_owned()),
        Some(md5_hex(&body)),
        "a plain copy has the MD5 ETag"
    );

    let out =
        with_key!(c.copy_object().bucket("copies").key("sealed").copy_source("copies/plain"), k2).send().await.unwrap();
    assert_eq!(out.sse_customer_key_md5(), Some(k2.md5.as_str()));
    assert_eq!(get_with(&c, "copies", "sealed", &k2).await, body);

    // Rotation in place: the old key no longer opens it, the new one does.
    with_key!(with_source_key!(c.copy_object().bucket("copies").key("src").copy_source("copies/src"), k), k2)
        .send()
        .await
        .unwrap();
    let e = with_key!(c.get_object().bucket("copies").key("src"), k).send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    assert_eq!(get_with(&c, "copies", "src", &k2).await, body);
    // And off: copied onto itself with its key and no new one, it is a plain object again (a
    // change of encryption, so no refusal as a copy onto itself that changes nothing).
    with_source_key!(c.copy_object().bucket("copies").key("src").copy_source("copies/src"), k2).send().await.unwrap();
    assert_eq!(get(&c, "copies", "src").await, body);
}

/// A multipart upload started with a key takes parts only with that key; each part is stored
/// under a key of its own, and the completed object reads back with the upload's key across
/// part boundaries, by part number and by range, whatever parts were uploaded again.
#[tokio::test]
async fn multipart_uploads_encrypt_every_part_under_the_uploads_key() {
    let (_gw, c) = Gateway::with_bucket("multi").await;
    let (k, k2) = (key(7), key(8));
    let created = with_key!(c.create_multipart_upload().bucket("multi").key("obj"), k).send().await.unwrap();
    assert_eq!(created.sse_customer_algorithm(), Some("AES256"));
    let up = Upload::of(&c, "multi", "obj", created.upload_id().unwrap());
    let part = |n: i32, body: Vec<u8>, key: Option<&Key>| {
        let req =
            c.upload_part().bucket("multi").key("obj").upload_id(&up.id).part_number(n).body(ByteStream::from(body));
        match key {
            Some(key) => with_key!(req, key),
            None => req,
        }
    };
    let (one, two) = (data(5 << 20, 1), data((5 << 20) + 3, 2));
    let e = part(1, one.clone(), None).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400), "a part without the key");
    let e = part(1, one.clone(), Some(&k2)).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400), "a part with another key");
    // Part 1 uploaded twice: the second (new salt, new key stream) is the one joined.
    part(1, data(5 << 20, 99), Some(&k)).send().await.unwrap();
    let p1 = part(1, one.clone(), Some(&k)).send().await.unwrap();
    assert_eq!(p1.sse_customer_key_md5(), Some(k.md5.as_str()));
    let p2 = part(2, two.clone(), Some(&k)).send().await.unwrap();

    // Part 3 is copied from an encrypted object, decrypted with its key and re-encrypted.
    let three = data(77_777, 3);
    with_key!(c.put_object().bucket("multi").key("src"), k2)
        .body(ByteStream::from(three.clone()))
        .send()
        .await
        .unwrap();
    let copy =
        c.upload_part_copy().bucket("multi").key("obj").upload_id(&up.id).part_number(3).copy_source("multi/src");
    let e = with_source_key!(copy.clone(), k2).send().await.unwrap_err();
    assert_eq!(status(&e), 400, "a copied part without the upload's key");
    let p3 = with_key!(with_source_key!(copy, k2), k).send().await.unwrap();
    let p3_etag = p3.copy_part_result().and_then(|r| r.e_tag()).unwrap().to_owned();

    let parts = [(1, p1.e_tag().unwrap().to_owned()), (2, p2.e_tag().unwrap().to_owned()), (3, p3_etag)];
    c.complete_multipart_upload()
        .bucket("multi")
        .key("obj")
        .upload_id(&up.id)
        .multipart_upload(completed(&parts))
        .send()
        .await
        .unwrap();
    let whole = [one.clone(), two.clone(), three.clone()].concat();
    assert_eq!(get_with(&c, "multi", "obj", &k).await, whole);
    let span = (5 << 20) - 10..(5 << 20) + two.len() + 10;
    let out = with_key!(c.get_object().bucket("multi").key("obj"), k)
        .range(format!("bytes={}-{}", span.start, span.end - 1))
        .send()
        .await
        .unwrap();
    assert_eq!(out.body.collect().await.unwrap().into_bytes()[..], whole[span], "a range across two boundaries");
    let out = with_key!(c.get_object().bucket("multi").key("obj"), k).part_number(2).send().await.unwrap();
    assert_eq!(out.body.collect().await.unwrap().into_bytes()[..], two[..], "part 2 by number");
    let e = c.get_object().bucket("multi").key("obj").send().await.unwrap_err();
    assert_eq!(status(&e), 400);

    // An upload started without a key takes no part with one.
    let plain = Upload::start(&c, "multi", "plain").await;
    let req = c.upload_part().bucket("multi").key("plain").upload_id(&plain.id).part_number(1);
    let e = with_key!(req, k).body(ByteStream::from_static(b"p")).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400));
}

/// Versions keep the key they were written with: a noncurrent encrypted version reads back by
/// id with its key after a plain overwrite.
#[tokio::test]
async fn versions_keep_their_key() {
    let (_gw, c) = Gateway::with_bucket("ver").await;
    let enabled = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
    c.put_bucket_versioning().bucket("ver").versioning_configuration(enabled).send().await.unwrap();
    let k = key(9);
    let first = with_key!(c.put_object().bucket("ver").key("v"), k)
        .body(ByteStream::from_static(b"first, sealed"))
        .send()
        .await
        .unwrap();
    put(&c, "ver", "v", b"second, plain").await;
    assert_eq!(get(&c, "ver", "v").await, b"second, plain");
    let id = first.version_id().unwrap();
    let e = c.get_object().bucket("ver").key("v").version_id(id).send().await.unwrap_err();
    assert_eq!(status(&e), 400);
    let out = with_key!(c.get_object().bucket("ver").key("v").version_id(id), k).send().await.unwrap();
    assert_eq!(out.body.collect().await.unwrap().into_bytes()[..], b"first, sealed"[..]);
}
