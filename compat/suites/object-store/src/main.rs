//! object_store's published integration suite against a running gateway. The bucket named by
//! `AWS_BUCKET` must exist and be empty (each check deletes what it finds there).
//! Every configuration the suite's own S3 test runs is run, except where a reason is given.

use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder, Checksum, S3ConditionalPut, S3CopyIfNotExists};
use object_store::integration::*;
use object_store::path::Path;
use object_store::signer::Signer;
use object_store::{ObjectStore, ObjectStoreExt};

/// A store for the gateway and bucket the `AWS_*` variables name (`AWS_ENDPOINT`,
/// `AWS_ALLOW_HTTP`, `AWS_BUCKET`, keys, region), as the suite's own S3 test builds one.
fn builder() -> AmazonS3Builder {
    AmazonS3Builder::from_env()
}

/// Runs one check, printing its name first so that a failure's panic says which.
macro_rules! check {
    ($name:literal, $call:expr) => {{
        println!("-- {}", $name);
        $call.await;
    }};
}

/// A presigned GET (object_store's `Signer`) fetched without credentials answers the object.
async fn presigned_get(store: &AmazonS3) {
    let path = Path::from("signed/hello.txt");
    store.put(&path, "hello, signed world".into()).await.unwrap();
    let url = store
        .signed_url(reqwest::Method::GET, &path, Duration::from_secs(120))
        .await
        .unwrap();
    let got = reqwest::get(url).await.unwrap();
    assert_eq!(got.status(), 200, "the presigned URL is refused");
    assert_eq!(&got.bytes().await.unwrap()[..], b"hello, signed world");
    store.delete(&path).await.unwrap();
}

#[tokio::main]
async fn main() {
    // reqwest's rustls is built without a provider (see Cargo.toml); ring is the one.
    rustls::crypto::ring::default_provider()
        .install_default()
        .expect("no provider installed yet");
    let store = builder()
        .with_http_connector(MarkerHttpConnector::default())
        .with_conditional_put(S3ConditionalPut::ETagMatch)
        .with_copy_if_not_exists(S3CopyIfNotExists::Multipart)
        .build()
        .unwrap();
    check!("put_get_delete_list", put_get_delete_list(&store));
    check!("list_with_offset_exclusivity", list_with_offset_exclusivity(&store));
    check!("get_opts", get_opts(&store));
    check!(
        "list_uses_directories_correctly",
        list_uses_directories_correctly(&store)
    );
    check!("list_with_delimiter", list_with_delimiter(&store));
    check!("rename_and_copy", rename_and_copy(&store));
    check!("copy_rename_nonexistent_object", copy_rename_nonexistent_object(&store));
    check!("stream_get", stream_get(&store));
    check!("multipart", multipart(&store, &store));
    check!("multipart_with_opts", multipart_with_opts(&store, &store));
    check!(
        "multipart_put_part_out_of_order",
        multipart_put_part_out_of_order(&store, &store)
    );
    check!("multipart_race_condition", multipart_race_condition(&store, true));
    check!("multipart_out_of_order", multipart_out_of_order(&store));
    check!("presigned_get", presigned_get(&store));
    check!("put_get_attributes", put_get_attributes(&store));
    check!("list_paginated", list_paginated(&store, &store));
    check!("response_extensions", response_extensions(&store, true));
    check!("copy_if_not_exists", copy_if_not_exists(&store));
    check!("put_opts (conditional put, updates too)", put_opts(&store, true));
    let missing = get_nonexistent_object(&store, Some(Path::from("nonexistentname"))).await;
    assert!(
        matches!(missing, Err(object_store::Error::NotFound { .. })),
        "a missing key is NotFound: {missing:?}"
    );
    // Left out: s3_encryption (SSE is not offered) and tagging (its helper reads tags through
    // the crate's private client).

    for (name, variant) in [
        ("unsigned payload", builder().with_unsigned_payload(true)),
        ("SHA-256 checksums", builder().with_checksum_algorithm(Checksum::SHA256)),
        (
            "CRC64NVME checksums",
            builder().with_checksum_algorithm(Checksum::CRC64NVME),
        ),
    ] {
        let store: Arc<dyn ObjectStore> = Arc::new(variant.build().unwrap());
        println!("-- put_get_delete_list, {name}");
        put_get_delete_list(store.as_ref()).await;
    }
    println!("PASS: object_store integration suite");
}
