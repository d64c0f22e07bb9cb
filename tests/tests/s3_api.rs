//! The S3 surface through the Rust aws-sdk-s3, against the real binary.

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    ChecksumAlgorithm, ChecksumMode, CompletedMultipartUpload, CompletedPart, Delete, MetadataDirective,
    ObjectIdentifier, Tag, Tagging,
};
use aws_sdk_s3::Client;
use md5::{Digest, Md5};
use penstock_tests::{get, put, Gateway, ACCESS_KEY};

fn code<E: ProvideErrorMetadata, R>(e: &SdkError<E, R>) -> String {
    e.code().unwrap_or("<none>").to_owned()
}

fn status<E>(e: &SdkError<E, aws_smithy_runtime_api::http::Response>) -> u16 {
    e.raw_response().map(|r| r.status().as_u16()).unwrap_or(0)
}

fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

fn data(n: usize, seed: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u32).wrapping_mul(2654435761).rotate_left(seed as u32) as u8)
        .collect()
}

async fn list_all(c: &Client, b: &str, prefix: Option<&str>, page: i32) -> Vec<String> {
    let mut keys = Vec::new();
    let mut token = None;
    loop {
        let r = c
            .list_objects_v2()
            .bucket(b)
            .set_prefix(prefix.map(str::to_owned))
            .max_keys(page)
            .set_continuation_token(token.take())
            .send()
            .await
            .unwrap();
        keys.extend(r.contents().iter().map(|o| o.key().unwrap().to_owned()));
        if r.is_truncated() == Some(true) {
            token = r.next_continuation_token().map(str::to_owned);
        } else {
            return keys;
        }
    }
}

#[tokio::test]
async fn bucket_lifecycle() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("alpha").send().await.unwrap();
    put(&c, "alpha", "kept", b"1").await;
    // us-east-1 (the default region): creating your own bucket again succeeds and changes nothing.
    c.create_bucket().bucket("alpha").send().await.unwrap();
    assert_eq!(get(&c, "alpha", "kept").await, b"1");
    c.delete_object().bucket("alpha").key("kept").send().await.unwrap();
    c.head_bucket().bucket("alpha").send().await.unwrap();
    let e = c.head_bucket().bucket("nope-nope").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    let names: Vec<String> = c
        .list_buckets()
        .send()
        .await
        .unwrap()
        .buckets()
        .iter()
        .map(|b| b.name().unwrap().to_owned())
        .collect();
    assert_eq!(names, ["alpha"]);
    // Names S3 reserves for access point aliases, directory buckets and the like.
    for reserved in ["data-s3alias", "data--ol-s3", "data.mrap", "sthree-data", "xn--data"] {
        let e = c.create_bucket().bucket(reserved).send().await.unwrap_err();
        assert_eq!(code(&e), "InvalidBucketName", "{reserved}");
    }
    let loc = c.get_bucket_location().bucket("alpha").send().await.unwrap();
    assert!(loc.location_constraint().is_none_or(|l| l.as_str().is_empty()));

    // The bucket is a vfolder at <volume>/<scope hex>/<aa>/<bb>/<rest>.
    put(&c, "alpha", "x", b"1").await;
    let dir = gw.folder_dir("x");
    let rel = dir.strip_prefix(gw.volume_dir()).unwrap();
    let parts: Vec<_> = rel.iter().map(|p| p.to_str().unwrap().len()).collect();
    assert_eq!(parts, [32, 2, 2, 28]);

    let e = c.delete_bucket().bucket("alpha").send().await.unwrap_err();
    assert_eq!(code(&e), "BucketNotEmpty");
    c.delete_object().bucket("alpha").key("x").send().await.unwrap();
    c.delete_bucket().bucket("alpha").send().await.unwrap();
    assert!(!dir.exists());
    let e = c.get_object().bucket("alpha").key("x").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
}

/// Outside us-east-1, S3 answers a repeated CreateBucket of your own bucket with 409.
#[tokio::test]
async fn create_own_bucket_again_outside_us_east_1() {
    let gw = Gateway::start_with_config("region = \"eu-west-1\"\n");
    let c = gw.client();
    c.create_bucket().bucket("beta").send().await.unwrap();
    let e = c.create_bucket().bucket("beta").send().await.unwrap_err();
    assert_eq!(code(&e), "BucketAlreadyOwnedByYou");
    assert_eq!(status(&e), 409);
}

#[tokio::test]
async fn objects_metadata_ranges_and_conditions() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("objs").send().await.unwrap();
    let body = data(3 << 20, 1);
    let put = c
        .put_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .body(ByteStream::from(body.clone()))
        .content_type("application/x-test")
        .content_disposition("attachment")
        .cache_control("max-age=5")
        .metadata("color", "blue")
        .send()
        .await
        .unwrap();
    assert_eq!(put.e_tag().unwrap(), format!("\"{}\"", md5_hex(&body)));

    // The object is a plain file at its key's path.
    let dir = gw.folder_dir("dir");
    assert_eq!(std::fs::read(dir.join("dir/sub/file.bin")).unwrap(), body);

    let h = c
        .head_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .send()
        .await
        .unwrap();
    assert_eq!(h.content_length(), Some(body.len() as i64));
    assert_eq!(h.content_type(), Some("application/x-test"));
    assert_eq!(h.content_disposition(), Some("attachment"));
    assert_eq!(h.cache_control(), Some("max-age=5"));
    assert_eq!(h.metadata().unwrap().get("color").map(String::as_str), Some("blue"));
    let etag = h.e_tag().unwrap().to_owned();

    assert_eq!(get(&c, "objs", "dir/sub/file.bin").await, body);
    let r = c
        .get_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .range("bytes=100-199")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.content_range(),
        Some(format!("bytes 100-199/{}", body.len()).as_str())
    );
    assert_eq!(r.body.collect().await.unwrap().into_bytes().as_ref(), &body[100..200]);
    let r = c
        .get_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .range("bytes=-10")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.body.collect().await.unwrap().into_bytes().as_ref(),
        &body[body.len() - 10..]
    );
    let e = c
        .get_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .range("bytes=99999999-")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidRange");

    let e = c
        .get_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .if_none_match(&etag)
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 304);
    let e = c
        .get_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .if_match("\"nope\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 412);
    c.get_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .if_match(&etag)
        .send()
        .await
        .unwrap();
    let r = c
        .get_object()
        .bucket("objs")
        .key("dir/sub/file.bin")
        .response_content_type("text/override")
        .response_cache_control("no-store")
        .send()
        .await
        .unwrap();
    assert_eq!(r.content_type(), Some("text/override"));
    assert_eq!(r.cache_control(), Some("no-store"));

    let e = c.head_object().bucket("objs").key("missing").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    let e = c.get_object().bucket("objs").key("missing").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
}

#[tokio::test]
async fn checksums_are_verified_stored_and_returned() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("sums").send().await.unwrap();
    for algo in [
        ChecksumAlgorithm::Crc32,
        ChecksumAlgorithm::Crc32C,
        ChecksumAlgorithm::Sha256,
        ChecksumAlgorithm::Crc64Nvme,
    ] {
        let key = format!("k-{}", algo.as_str());
        let p = c
            .put_object()
            .bucket("sums")
            .key(&key)
            .checksum_algorithm(algo.clone())
            .body(ByteStream::from(b"hello world".to_vec()))
            .send()
            .await
            .unwrap();
        let h = c
            .head_object()
            .bucket("sums")
            .key(&key)
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap();
        let (sent, got) = match algo {
            ChecksumAlgorithm::Crc32 => (p.checksum_crc32(), h.checksum_crc32()),
            ChecksumAlgorithm::Crc32C => (p.checksum_crc32_c(), h.checksum_crc32_c()),
            ChecksumAlgorithm::Sha256 => (p.checksum_sha256(), h.checksum_sha256()),
            _ => (p.checksum_crc64_nvme(), h.checksum_crc64_nvme()),
        };
        assert!(got.is_some(), "{algo:?}");
        assert_eq!(sent, got, "{algo:?}");
    }
    assert_eq!(
        c.head_object()
            .bucket("sums")
            .key("k-CRC32")
            .checksum_mode(ChecksumMode::Enabled)
            .send()
            .await
            .unwrap()
            .checksum_crc32(),
        Some("DUoRhQ==")
    );

    // A wrong checksum stores nothing.
    let e = c
        .put_object()
        .bucket("sums")
        .key("bad")
        .checksum_crc32("AAAAAA==")
        .body(ByteStream::from(b"hello world".to_vec()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    let e = c
        .put_object()
        .bucket("sums")
        .key("bad")
        .content_md5("1B2M2Y8AsgTpgAmY7PhCfg==")
        .body(ByteStream::from(b"not empty".to_vec()))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "BadDigest");
    assert_eq!(
        status(&c.head_object().bucket("sums").key("bad").send().await.unwrap_err()),
        404
    );
    let staging = gw.folder_dir("k-CRC32").join(".penstock/tmp");
    assert_eq!(
        std::fs::read_dir(staging).unwrap().count(),
        0,
        "no staging file left behind"
    );
}

#[tokio::test]
async fn multipart_uploads() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("mpu").send().await.unwrap();
    let p1 = data(5 << 20, 2);
    let p2 = data(1 << 20, 3);
    let up = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("big")
        .content_type("app/x")
        .send()
        .await
        .unwrap();
    let id = up.upload_id().unwrap();
    let e1 = c
        .upload_part()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .part_number(1)
        .body(ByteStream::from(p1.clone()))
        .send()
        .await
        .unwrap();
    let e2 = c
        .upload_part()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .part_number(2)
        .body(ByteStream::from(p2.clone()))
        .send()
        .await
        .unwrap();
    let parts = c
        .list_parts()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .send()
        .await
        .unwrap();
    assert_eq!(parts.parts().len(), 2);
    assert_eq!(parts.parts()[1].size(), Some(p2.len() as i64));
    let ups = c.list_multipart_uploads().bucket("mpu").send().await.unwrap();
    assert_eq!(ups.uploads().len(), 1);

    let part = |n: i32, e: &str| CompletedPart::builder().part_number(n).e_tag(e).build();
    // Out of order.
    let err = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(part(2, e2.e_tag().unwrap()))
                .parts(part(1, e1.e_tag().unwrap()))
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "InvalidPartOrder");
    // Wrong ETag.
    let err = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .multipart_upload(CompletedMultipartUpload::builder().parts(part(1, "\"00\"")).build())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "InvalidPart");
    assert_eq!(
        status(&c.head_object().bucket("mpu").key("big").send().await.unwrap_err()),
        404
    );

    let done = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("big")
        .upload_id(id)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(part(1, e1.e_tag().unwrap()))
                .parts(part(2, e2.e_tag().unwrap()))
                .build(),
        )
        .send()
        .await
        .unwrap();
    let mut cat = hex::decode(md5_hex(&p1)).unwrap();
    cat.extend(hex::decode(md5_hex(&p2)).unwrap());
    assert_eq!(done.e_tag().unwrap(), format!("\"{}-2\"", md5_hex(&cat)));
    let mut whole = p1.clone();
    whole.extend_from_slice(&p2);
    assert_eq!(get(&c, "mpu", "big").await, whole);
    let h = c.head_object().bucket("mpu").key("big").send().await.unwrap();
    assert_eq!(h.content_type(), Some("app/x"));
    let g2 = c
        .get_object()
        .bucket("mpu")
        .key("big")
        .part_number(2)
        .send()
        .await
        .unwrap();
    assert_eq!(g2.parts_count(), Some(2));
    assert_eq!(g2.body.collect().await.unwrap().into_bytes().to_vec(), p2);
    assert!(c
        .list_multipart_uploads()
        .bucket("mpu")
        .send()
        .await
        .unwrap()
        .uploads()
        .is_empty());
    assert!(std::fs::read_dir(gw.folder_dir("big").join(".penstock/uploads"))
        .unwrap()
        .next()
        .is_none());

    // A small non-final part is refused; abort cleans up.
    let id2 = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("small")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let mut etags = vec![];
    for n in 1..=2 {
        let r = c
            .upload_part()
            .bucket("mpu")
            .key("small")
            .upload_id(&id2)
            .part_number(n)
            .body(ByteStream::from(vec![n as u8; 1000]))
            .send()
            .await
            .unwrap();
        etags.push(r.e_tag().unwrap().to_owned());
    }
    let err = c
        .complete_multipart_upload()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .multipart_upload(
            CompletedMultipartUpload::builder()
                .parts(part(1, &etags[0]))
                .parts(part(2, &etags[1]))
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "EntityTooSmall");
    c.abort_multipart_upload()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .send()
        .await
        .unwrap();
    let err = c
        .list_parts()
        .bucket("mpu")
        .key("small")
        .upload_id(&id2)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&err), "NoSuchUpload");

    // UploadPartCopy with a source range.
    let id3 = c
        .create_multipart_upload()
        .bucket("mpu")
        .key("copied")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let r = c
        .upload_part_copy()
        .bucket("mpu")
        .key("copied")
        .upload_id(&id3)
        .part_number(1)
        .copy_source("mpu/big")
        .copy_source_range("bytes=10-1009")
        .send()
        .await
        .unwrap();
    let et = r.copy_part_result().unwrap().e_tag().unwrap().to_owned();
    c.complete_multipart_upload()
        .bucket("mpu")
        .key("copied")
        .upload_id(&id3)
        .multipart_upload(CompletedMultipartUpload::builder().parts(part(1, &et)).build())
        .send()
        .await
        .unwrap();
    assert_eq!(get(&c, "mpu", "copied").await, &whole[10..1010]);
}

#[tokio::test]
async fn copy_object_directives() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("src-b").send().await.unwrap();
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
    let r = c
        .copy_object()
        .bucket("dst-b")
        .key("b/c.txt")
        .copy_source("src-b/a.txt")
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.copy_object_result().unwrap().e_tag().unwrap(),
        format!("\"{}\"", md5_hex(b"copy me"))
    );
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
    let e = c
        .copy_object()
        .bucket("src-b")
        .key("a.txt")
        .copy_source("src-b/a.txt")
        .send()
        .await
        .unwrap_err();
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
    let e = c
        .copy_object()
        .bucket("dst-b")
        .key("x")
        .copy_source("src-b/missing")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
}

#[tokio::test]
async fn listing_order_delimiters_and_pagination() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("lst").send().await.unwrap();
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

    let r = c
        .list_objects_v2()
        .bucket("lst")
        .prefix("z/")
        .delimiter("/")
        .send()
        .await
        .unwrap();
    let contents: Vec<_> = r.contents().iter().map(|o| o.key().unwrap()).collect();
    assert_eq!(contents, ["z/", "z/y"]);
    let r = c
        .list_objects_v2()
        .bucket("lst")
        .start_after("a/c/d")
        .send()
        .await
        .unwrap();
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
    assert!(v
        .versions()
        .iter()
        .all(|o| o.version_id() == Some("null") && o.is_latest() == Some(true)));

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

#[tokio::test]
async fn deletes_and_directory_semantics() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("del").send().await.unwrap();
    put(&c, "del", "keep", b"k").await;
    put(&c, "del", "p/q/r", b"x").await;
    let dir = gw.folder_dir("keep");
    c.delete_object().bucket("del").key("p/q/r").send().await.unwrap();
    assert!(!dir.join("p").exists(), "empty parents are removed");
    c.delete_object()
        .bucket("del")
        .key("never-existed")
        .send()
        .await
        .unwrap();

    // A marker directory survives deletion of its contents.
    put(&c, "del", "m/", b"").await;
    put(&c, "del", "m/f", b"x").await;
    c.delete_object().bucket("del").key("m/f").send().await.unwrap();
    assert!(dir.join("m").is_dir());
    c.head_object().bucket("del").key("m/").send().await.unwrap();

    // File/directory conflicts are 409 and change nothing.
    put(&c, "del", "f", b"file").await;
    let e = c
        .put_object()
        .bucket("del")
        .key("f/g")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 409);
    assert_eq!(code(&e), "ObjectParentIsFile");
    put(&c, "del", "d/e", b"x").await;
    let e = c
        .put_object()
        .bucket("del")
        .key("d")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
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
    assert_eq!(list_all(&c, "del", None, 1000).await, ["d/e", "m/", "n/"]);
}

#[tokio::test]
async fn tagging() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("tags").send().await.unwrap();
    c.put_object()
        .bucket("tags")
        .key("t")
        .tagging("a=1&b=two")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap();
    let t = c.get_object_tagging().bucket("tags").key("t").send().await.unwrap();
    assert_eq!(t.tag_set().len(), 2);
    assert_eq!(
        c.get_object().bucket("tags").key("t").send().await.unwrap().tag_count(),
        Some(2)
    );
    c.put_object_tagging()
        .bucket("tags")
        .key("t")
        .tagging(
            Tagging::builder()
                .tag_set(Tag::builder().key("z").value("9").build().unwrap())
                .build()
                .unwrap(),
        )
        .send()
        .await
        .unwrap();
    let t = c.get_object_tagging().bucket("tags").key("t").send().await.unwrap();
    assert_eq!(t.tag_set()[0].key(), "z");
    c.delete_object_tagging().bucket("tags").key("t").send().await.unwrap();
    assert!(c
        .get_object_tagging()
        .bucket("tags")
        .key("t")
        .send()
        .await
        .unwrap()
        .tag_set()
        .is_empty());
    let e = c
        .get_object_tagging()
        .bucket("tags")
        .key("nope")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
}

#[tokio::test]
async fn foreign_files_and_containment() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("shared").send().await.unwrap();
    put(&c, "shared", "gw.txt", b"via s3").await;
    let dir = gw.folder_dir("gw.txt");

    // A file written by a compute session is an object with a synthesized ETag.
    std::fs::create_dir_all(dir.join("session")).unwrap();
    std::fs::write(dir.join("session/out.json"), b"{\"a\":1}").unwrap();
    let h = c
        .head_object()
        .bucket("shared")
        .key("session/out.json")
        .send()
        .await
        .unwrap();
    assert!(h.e_tag().unwrap().contains('-'));
    assert_eq!(h.content_type(), Some("application/json"));
    assert_eq!(get(&c, "shared", "session/out.json").await, b"{\"a\":1}");

    // A file changed behind the gateway's back no longer carries its stale MD5 ETag.
    std::fs::write(dir.join("gw.txt"), b"changed by a session").unwrap();
    let h = c.head_object().bucket("shared").key("gw.txt").send().await.unwrap();
    assert_ne!(h.e_tag().unwrap(), format!("\"{}\"", md5_hex(b"via s3")));
    assert_eq!(h.content_length(), Some(20));

    // Symlinks out of the folder are neither listed nor readable; the staging dir is hidden.
    std::os::unix::fs::symlink("/etc/passwd", dir.join("escape")).unwrap();
    std::os::unix::fs::symlink("/etc", dir.join("escape-dir")).unwrap();
    std::os::unix::fs::symlink("gw.txt", dir.join("inside-link")).unwrap();
    let keys = list_all(&c, "shared", None, 1000).await;
    assert_eq!(keys, ["gw.txt", "inside-link", "session/out.json"]);
    let e = c.get_object().bucket("shared").key("escape").send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    let e = c
        .get_object()
        .bucket("shared")
        .key("escape-dir/passwd")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 403);
    let e = c
        .put_object()
        .bucket("shared")
        .key("escape-dir/x")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 403);
    assert!(!std::path::Path::new("/etc/x").exists());
    for bad in ["a/../b", ".penstock/tmp/x", "a//b", "./a"] {
        let e = c
            .put_object()
            .bucket("shared")
            .key(bad)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(status(&e), 400, "{bad}");
    }
}

#[tokio::test]
async fn authentication() {
    let gw = Gateway::start();
    let bad_secret = gw.client_with(ACCESS_KEY, "wrong-secret");
    let e = bad_secret.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "SignatureDoesNotMatch");
    let unknown = gw.client_with("NOSUCHKEY", "whatever");
    let e = unknown.list_buckets().send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidAccessKeyId");
}

#[tokio::test]
async fn graceful_shutdown() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("bye").send().await.unwrap();
    let st = gw.terminate();
    assert!(st.success(), "exit status {st:?}");
}

/// Buckets behave as S3 buckets with ACLs disabled (bucket owner enforced): ACLs read as the
/// owner's full control, setting that same ACL succeeds, any other is refused and changes
/// nothing; operations the gateway does not offer answer NotImplemented, not AccessDenied.
#[tokio::test]
async fn acls_read_as_owner_full_control_and_other_acls_are_refused() {
    use aws_sdk_s3::types::{
        AccessControlPolicy, BucketCannedAcl, Grant, Grantee, ObjectCannedAcl, ObjectOwnership, Permission, Type,
    };
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("acl").send().await.unwrap();
    put(&c, "acl", "k", b"body").await;

    let acl = c.get_bucket_acl().bucket("acl").send().await.unwrap();
    let owner = acl.owner().expect("owner").clone();
    let owner_id = owner.id().expect("owner id").to_owned();
    assert_eq!(acl.grants().len(), 1);
    let g = &acl.grants()[0];
    assert_eq!(g.permission(), Some(&Permission::FullControl));
    assert_eq!(g.grantee().and_then(|e| e.id()), Some(owner_id.as_str()));
    assert_eq!(g.grantee().map(|e| e.r#type()), Some(&Type::CanonicalUser));
    let listed = c
        .list_objects_v2()
        .bucket("acl")
        .fetch_owner(true)
        .send()
        .await
        .unwrap();
    assert_eq!(
        listed.contents()[0].owner().and_then(|o| o.id()),
        Some(owner_id.as_str())
    );

    let oacl = c.get_object_acl().bucket("acl").key("k").send().await.unwrap();
    assert_eq!(oacl.owner().and_then(|o| o.id()), Some(owner_id.as_str()));
    assert_eq!(oacl.grants()[0].permission(), Some(&Permission::FullControl));
    let e = c
        .get_object_acl()
        .bucket("acl")
        .key("missing")
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchKey"));

    // The ACL that is already there: accepted, in all three forms.
    c.put_object_acl()
        .bucket("acl")
        .key("k")
        .acl(ObjectCannedAcl::Private)
        .send()
        .await
        .unwrap();
    c.put_bucket_acl()
        .bucket("acl")
        .grant_full_control(format!("id=\"{owner_id}\""))
        .send()
        .await
        .unwrap();
    let mine = |perm: Permission, id: &str| {
        AccessControlPolicy::builder()
            .owner(owner.clone())
            .grants(
                Grant::builder()
                    .grantee(Grantee::builder().r#type(Type::CanonicalUser).id(id).build().unwrap())
                    .permission(perm)
                    .build(),
            )
            .build()
    };
    c.put_object_acl()
        .bucket("acl")
        .key("k")
        .access_control_policy(mine(Permission::FullControl, &owner_id))
        .send()
        .await
        .unwrap();

    // Anything else: refused.
    let e = c
        .put_object_acl()
        .bucket("acl")
        .key("k")
        .acl(ObjectCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "AccessControlListNotSupported"));
    let e = c
        .put_bucket_acl()
        .bucket("acl")
        .acl(BucketCannedAcl::PublicReadWrite)
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "AccessControlListNotSupported"));
    let e = c
        .put_bucket_acl()
        .bucket("acl")
        .access_control_policy(mine(Permission::Read, "0123456789abcdef"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessControlListNotSupported");
    let e = c
        .put_object_acl()
        .bucket("acl")
        .key("missing")
        .acl(ObjectCannedAcl::Private)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    let oacl = c.get_object_acl().bucket("acl").key("k").send().await.unwrap();
    assert_eq!(oacl.grants().len(), 1, "a refused ACL changed nothing");

    // Writes that ask for an ACL: only the owner's full control, and a refused write leaves nothing.
    for canned in [ObjectCannedAcl::Private, ObjectCannedAcl::BucketOwnerFullControl] {
        c.put_object()
            .bucket("acl")
            .key("w")
            .acl(canned)
            .body(ByteStream::from_static(b"w"))
            .send()
            .await
            .unwrap();
    }
    let e = c
        .put_object()
        .bucket("acl")
        .key("public")
        .acl(ObjectCannedAcl::PublicRead)
        .body(ByteStream::from_static(b"p"))
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "AccessControlListNotSupported"));
    assert!(
        c.head_object().bucket("acl").key("public").send().await.is_err(),
        "refused write left an object"
    );
    let e = c
        .copy_object()
        .bucket("acl")
        .key("public")
        .copy_source("acl/k")
        .acl(ObjectCannedAcl::PublicReadWrite)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessControlListNotSupported");
    let e = c
        .create_multipart_upload()
        .bucket("acl")
        .key("public")
        .grant_read("uri=\"http://acs.amazonaws.com/groups/global/AllUsers\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessControlListNotSupported");
    let uploads = c.list_multipart_uploads().bucket("acl").send().await.unwrap();
    assert!(uploads.uploads().is_empty(), "refused upload was started");
    c.create_multipart_upload()
        .bucket("acl")
        .key("mine")
        .grant_full_control(format!("id={owner_id}"))
        .send()
        .await
        .unwrap();

    let oc = c.get_bucket_ownership_controls().bucket("acl").send().await.unwrap();
    let rules = oc.ownership_controls().expect("controls").rules();
    assert_eq!(rules[0].object_ownership(), &ObjectOwnership::BucketOwnerEnforced);

    let e = c.get_bucket_policy().bucket("acl").send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (501, "NotImplemented"));
    let e = c.get_bucket_acl().bucket("nosuchbucket").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
}

/// GetObjectAttributes answers from the object's record: only the attributes asked for, the
/// stored checksum, and the parts of a multipart object, paginated.
#[tokio::test]
async fn object_attributes() {
    use aws_sdk_s3::types::{ObjectAttributes, StorageClass};
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("attrs").send().await.unwrap();
    let put = c
        .put_object()
        .bucket("attrs")
        .key("one")
        .checksum_algorithm(ChecksumAlgorithm::Crc32)
        .body(ByteStream::from_static(b"hello attributes"))
        .send()
        .await
        .unwrap();
    let a = c
        .get_object_attributes()
        .bucket("attrs")
        .key("one")
        .object_attributes(ObjectAttributes::Etag)
        .object_attributes(ObjectAttributes::ObjectSize)
        .object_attributes(ObjectAttributes::StorageClass)
        .object_attributes(ObjectAttributes::Checksum)
        .send()
        .await
        .unwrap();
    assert_eq!(
        a.e_tag().map(|e| e.trim_matches('"')),
        put.e_tag().map(|e| e.trim_matches('"'))
    );
    assert_eq!(a.object_size(), Some(16));
    assert_eq!(a.storage_class(), Some(&StorageClass::Standard));
    assert_eq!(a.checksum().and_then(|c| c.checksum_crc32()), put.checksum_crc32());
    assert!(a.last_modified().is_some());
    assert!(a.object_parts().is_none(), "a single-part object has no parts");
    let only_size = c
        .get_object_attributes()
        .bucket("attrs")
        .key("one")
        .object_attributes(ObjectAttributes::ObjectSize)
        .send()
        .await
        .unwrap();
    assert_eq!((only_size.object_size(), only_size.e_tag()), (Some(16), None));

    let id = c
        .create_multipart_upload()
        .bucket("attrs")
        .key("multi")
        .checksum_algorithm(ChecksumAlgorithm::Crc32)
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let mut done = CompletedMultipartUpload::builder();
    let sizes = [5 << 20, 5 << 20, 1000];
    for (n, size) in sizes.iter().enumerate() {
        let n = n as i32 + 1;
        let r = c
            .upload_part()
            .bucket("attrs")
            .key("multi")
            .upload_id(&id)
            .part_number(n)
            .checksum_algorithm(ChecksumAlgorithm::Crc32)
            .body(ByteStream::from(vec![n as u8; *size]))
            .send()
            .await
            .unwrap();
        done = done.parts(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(r.e_tag().unwrap())
                .checksum_crc32(r.checksum_crc32().unwrap())
                .build(),
        );
    }
    c.complete_multipart_upload()
        .bucket("attrs")
        .key("multi")
        .upload_id(&id)
        .multipart_upload(done.build())
        .send()
        .await
        .unwrap();
    let page = |marker: Option<String>| {
        c.get_object_attributes()
            .bucket("attrs")
            .key("multi")
            .object_attributes(ObjectAttributes::ObjectParts)
            .max_parts(2)
            .set_part_number_marker(marker)
            .send()
    };
    let first = page(None).await.unwrap();
    let parts = first.object_parts().expect("parts");
    assert_eq!(parts.total_parts_count(), Some(3));
    assert_eq!(parts.is_truncated(), Some(true));
    assert_eq!(parts.next_part_number_marker(), Some("2"));
    let got: Vec<(Option<i32>, Option<i64>)> = parts.parts().iter().map(|p| (p.part_number(), p.size())).collect();
    assert_eq!(got, [(Some(1), Some(5 << 20)), (Some(2), Some(5 << 20))]);
    assert!(parts.parts()[0].checksum_crc32().is_some(), "part checksums are listed");
    let second = page(Some("2".into())).await.unwrap();
    let parts = second.object_parts().expect("parts");
    assert_eq!(parts.is_truncated(), Some(false));
    let got: Vec<(Option<i32>, Option<i64>)> = parts.parts().iter().map(|p| (p.part_number(), p.size())).collect();
    assert_eq!(got, [(Some(3), Some(1000))]);

    let e = c
        .get_object_attributes()
        .bucket("attrs")
        .key("one")
        .object_attributes(ObjectAttributes::from("Colour"))
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "InvalidArgument"));
    let e = c
        .get_object_attributes()
        .bucket("attrs")
        .key("missing")
        .object_attributes(ObjectAttributes::Etag)
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchKey"));
}

/// A CompleteMultipartUpload retried after it succeeded (the client missed the answer) gets the
/// same answer, as S3 gives; with other parts, after the object changed, or for an upload that
/// never was, it is NoSuchUpload.
#[tokio::test]
async fn completing_twice_answers_the_same() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("again").send().await.unwrap();
    let id = c
        .create_multipart_upload()
        .bucket("again")
        .key("obj")
        .send()
        .await
        .unwrap()
        .upload_id()
        .unwrap()
        .to_owned();
    let mut parts = Vec::new();
    for (n, size) in [(1, 5 << 20), (2, 1234)] {
        let r = c
            .upload_part()
            .bucket("again")
            .key("obj")
            .upload_id(&id)
            .part_number(n)
            .body(ByteStream::from(vec![n as u8; size]))
            .send()
            .await
            .unwrap();
        parts.push(
            CompletedPart::builder()
                .part_number(n)
                .e_tag(r.e_tag().unwrap())
                .build(),
        );
    }
    let complete = |parts: Vec<CompletedPart>, id: String| {
        c.complete_multipart_upload()
            .bucket("again")
            .key("obj")
            .upload_id(id)
            .multipart_upload(CompletedMultipartUpload::builder().set_parts(Some(parts)).build())
            .send()
    };
    let first = complete(parts.clone(), id.clone()).await.unwrap();
    let again = complete(parts.clone(), id.clone()).await.unwrap();
    assert_eq!(again.e_tag(), first.e_tag());
    assert_eq!(again.checksum_crc64_nvme(), first.checksum_crc64_nvme());
    assert_eq!(get(&c, "again", "obj").await.len(), (5 << 20) + 1234);

    let e = complete(parts[..1].to_vec(), id.clone()).await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchUpload"), "other parts");
    let e = complete(parts.clone(), "0123456789abcdef0123456789abcdef".into())
        .await
        .unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload", "an upload that never was");
    put(&c, "again", "obj", b"replaced").await;
    let e = complete(parts.clone(), id.clone()).await.unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload", "the object is no longer the upload's");
    assert_eq!(get(&c, "again", "obj").await, b"replaced");
}
