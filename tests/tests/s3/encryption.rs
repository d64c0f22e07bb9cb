//! Server-side encryption where the operator attests that volumes encrypt at rest
//! (`encrypted_at_rest`): objects are SSE-S3, as every S3 object has been since 2023. Where they
//! do not, `object.rs` checks that every encryption request is refused.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    BlockedEncryptionTypes, EncryptionType, ServerSideEncryption, ServerSideEncryptionByDefault,
    ServerSideEncryptionConfiguration, ServerSideEncryptionRule,
};
use penstock_tests::{code, completed, data, get, keys, mkbucket, put, status, Gateway, Upload};

fn rules(algorithm: ServerSideEncryption) -> ServerSideEncryptionConfiguration {
    blocking(algorithm, &[])
}

/// A default-encryption configuration of `algorithm` that blocks uploads encrypted with `blocked`
/// (an element S3 added in 2025 that s3s's schema lacks).
fn blocking(algorithm: ServerSideEncryption, blocked: &[EncryptionType]) -> ServerSideEncryptionConfiguration {
    let by_default = ServerSideEncryptionByDefault::builder().sse_algorithm(algorithm).build().unwrap();
    let mut rule = ServerSideEncryptionRule::builder().apply_server_side_encryption_by_default(by_default);
    if !blocked.is_empty() {
        let types = BlockedEncryptionTypes::builder().set_encryption_type(Some(blocked.to_vec())).build();
        rule = rule.blocked_encryption_types(types);
    }
    ServerSideEncryptionConfiguration::builder().rules(rule.build()).build().unwrap()
}

/// Every object answer says AES256 (whether or not the write asked for it, through the direct
/// read path and through s3s), SSE-S3 requests are served, SSE-KMS and SSE-C are refused and
/// write nothing, and the bucket's default encryption reads as SSE-S3 whatever is set or deleted.
#[tokio::test]
async fn volumes_encrypted_at_rest_answer_as_sse_s3() {
    let gw = Gateway::start_with_config("encrypted_at_rest = true\n");
    let c = gw.client();
    mkbucket(&c, "enc").await;
    let aes = Some(&ServerSideEncryption::Aes256);

    let out = c
        .put_object()
        .bucket("enc")
        .key("asked")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from_static(b"asked for SSE-S3"))
        .send()
        .await
        .unwrap();
    assert_eq!(out.server_side_encryption(), aes);
    let out = c.put_object().bucket("enc").key("plain").body(ByteStream::from_static(b"p")).send().await.unwrap();
    assert_eq!(out.server_side_encryption(), aes, "every object is encrypted at rest");
    // The tenant's folder holds the bytes a session reads (the volume decrypts them).
    assert_eq!(std::fs::read(gw.folder_dir("asked").join("asked")).unwrap(), b"asked for SSE-S3");

    let h = c.head_object().bucket("enc").key("asked").send().await.unwrap();
    assert_eq!(h.server_side_encryption(), aes, "HEAD");
    let g = c.get_object().bucket("enc").key("plain").send().await.unwrap();
    assert_eq!(g.server_side_encryption(), aes, "GET");
    // A condition sends the read through s3s rather than the direct path: the same answer.
    let etag = h.e_tag().unwrap();
    let g = c.get_object().bucket("enc").key("asked").if_match(etag).send().await.unwrap();
    assert_eq!(g.server_side_encryption(), aes, "GET through s3s");
    let h = c.head_object().bucket("enc").key("asked").if_match(etag).send().await.unwrap();
    assert_eq!(h.server_side_encryption(), aes, "HEAD through s3s");

    let copy = c
        .copy_object()
        .bucket("enc")
        .key("copy")
        .copy_source("enc/asked")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap();
    assert_eq!(copy.server_side_encryption(), aes, "CopyObject");
    assert_eq!(get(&c, "enc", "copy").await, b"asked for SSE-S3");
    // Naming an encryption lets an object be copied onto itself (a key rotation, to clients);
    // naming nothing still does not.
    let rotated = c
        .copy_object()
        .bucket("enc")
        .key("copy")
        .copy_source("enc/copy")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap();
    assert_eq!(rotated.server_side_encryption(), aes, "CopyObject onto itself");
    let e = c.copy_object().bucket("enc").key("copy").copy_source("enc/copy").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidRequest", 400));
    assert_eq!(get(&c, "enc", "copy").await, b"asked for SSE-S3");

    let created = c
        .create_multipart_upload()
        .bucket("enc")
        .key("multi")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .send()
        .await
        .unwrap();
    assert_eq!(created.server_side_encryption(), aes, "CreateMultipartUpload");
    let up = Upload::of(&c, "enc", "multi", created.upload_id().unwrap());
    let part = up.try_part(1, data(5 << 20, 3)).await.unwrap();
    assert_eq!(part.server_side_encryption(), aes, "UploadPart");
    let copied = c
        .upload_part_copy()
        .bucket("enc")
        .key("multi")
        .upload_id(&up.id)
        .part_number(2)
        .copy_source("enc/plain")
        .send()
        .await
        .unwrap();
    assert_eq!(copied.server_side_encryption(), aes, "UploadPartCopy");
    let parts = [(1, part.e_tag().unwrap()), (2, copied.copy_part_result().unwrap().e_tag().unwrap())];
    let done = c
        .complete_multipart_upload()
        .bucket("enc")
        .key("multi")
        .upload_id(&up.id)
        .multipart_upload(completed(&parts))
        .send()
        .await
        .unwrap();
    assert_eq!(done.server_side_encryption(), aes, "CompleteMultipartUpload");

    // No key here could honour SSE-KMS: refused, and nothing written. A customer's own key is
    // served (`sse_c.rs`), and such an object is not SSE-S3's.
    let e = c
        .put_object()
        .bucket("enc")
        .key("kms")
        .server_side_encryption(ServerSideEncryption::AwsKms)
        .body(ByteStream::from_static(b"k"))
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("NotImplemented", 501));
    let sealed = c
        .put_object()
        .bucket("enc")
        .key("ssec")
        .sse_customer_algorithm("AES256")
        .sse_customer_key("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
        .sse_customer_key_md5("y4HAEFCYWuvAXWFTtA1Qpg==")
        .body(ByteStream::from_static(b"c"))
        .send()
        .await
        .unwrap();
    assert_eq!((sealed.server_side_encryption(), sealed.sse_customer_algorithm()), (None, Some("AES256")));
    assert_eq!(keys(&c, "enc").await, ["asked", "copy", "multi", "plain", "ssec"]);

    let rule_of = |out: aws_sdk_s3::operation::get_bucket_encryption::GetBucketEncryptionOutput| {
        let config = out.server_side_encryption_configuration().unwrap().clone();
        let rule = config.rules()[0].clone();
        let by_default = rule.apply_server_side_encryption_by_default().unwrap().clone();
        let blocked = rule.blocked_encryption_types().map(|b| b.encryption_type().to_vec());
        (config.rules().len(), by_default.sse_algorithm().clone(), rule.bucket_key_enabled(), blocked)
    };
    // SSE-C is taken until a configuration blocks it.
    let sse_s3 = (1, ServerSideEncryption::Aes256, Some(false), None);
    let sse_c_blocked = (1, ServerSideEncryption::Aes256, Some(false), Some(vec![EncryptionType::SseC]));
    assert_eq!(rule_of(c.get_bucket_encryption().bucket("enc").send().await.unwrap()), sse_s3);
    c.put_bucket_encryption()
        .bucket("enc")
        .server_side_encryption_configuration(rules(ServerSideEncryption::Aes256))
        .send()
        .await
        .unwrap();
    // Blocking SSE-C, then no type, as the SDKs send it: writes with a customer key are
    // refused (403, as on S3) while it is blocked, objects stored with one stay readable.
    let sealed_put = || {
        c.put_object()
            .bucket("enc")
            .key("ssec")
            .sse_customer_algorithm("AES256")
            .sse_customer_key("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
            .sse_customer_key_md5("y4HAEFCYWuvAXWFTtA1Qpg==")
            .body(ByteStream::from_static(b"c2"))
    };
    for (blocked, want) in [(vec![EncryptionType::SseC], &sse_c_blocked), (vec![EncryptionType::None], &sse_s3)] {
        c.put_bucket_encryption()
            .bucket("enc")
            .server_side_encryption_configuration(blocking(ServerSideEncryption::Aes256, &blocked))
            .send()
            .await
            .unwrap();
        assert_eq!(&rule_of(c.get_bucket_encryption().bucket("enc").send().await.unwrap()), want);
        let refused = sealed_put().send().await.err();
        if blocked == [EncryptionType::SseC] {
            let e = refused.expect("a customer key refused while SSE-C is blocked");
            assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403));
            let create = c
                .create_multipart_upload()
                .bucket("enc")
                .key("ssec-multi")
                .sse_customer_algorithm("AES256")
                .sse_customer_key("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
                .sse_customer_key_md5("y4HAEFCYWuvAXWFTtA1Qpg==")
                .send()
                .await
                .unwrap_err();
            assert_eq!(status(&create), 403);
            let read = c
                .head_object()
                .bucket("enc")
                .key("ssec")
                .sse_customer_algorithm("AES256")
                .sse_customer_key("BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc=")
                .sse_customer_key_md5("y4HAEFCYWuvAXWFTtA1Qpg==")
                .send()
                .await
                .unwrap();
            assert_eq!(read.content_length(), Some(1), "the object written before stays readable");
        } else {
            assert!(refused.is_none(), "taken again once unblocked");
        }
    }
    c.put_bucket_encryption()
        .bucket("enc")
        .server_side_encryption_configuration(blocking(ServerSideEncryption::Aes256, &[EncryptionType::SseC]))
        .send()
        .await
        .unwrap();
    let e = c
        .put_bucket_encryption()
        .bucket("enc")
        .server_side_encryption_configuration(blocking(ServerSideEncryption::Aes256, &["SSE-KMS".into()]))
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("MalformedXML", 400), "a type S3 does not name");
    for blocked in [vec![], vec![EncryptionType::None]] {
        let e = c
            .put_bucket_encryption()
            .bucket("enc")
            .server_side_encryption_configuration(blocking(ServerSideEncryption::AwsKms, &blocked))
            .send()
            .await
            .unwrap_err();
        assert_eq!((code(&e).as_str(), status(&e)), ("NotImplemented", 501));
    }
    // The second pass (`ignored_headers.rs`) admits only whom the first would.
    let bob = gw.tenant("default", "bob", "user");
    let e = bob
        .s3
        .put_bucket_encryption()
        .bucket("enc")
        .server_side_encryption_configuration(blocking(ServerSideEncryption::Aes256, &[EncryptionType::None]))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    c.delete_bucket_encryption().bucket("enc").send().await.unwrap();
    assert_eq!(rule_of(c.get_bucket_encryption().bucket("enc").send().await.unwrap()), sse_s3);
    let e = c.get_bucket_encryption().bucket("none-such").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");

    // Reads take no method, as on S3.
    put(&c, "enc", "again", b"a").await;
    let e = c
        .get_object()
        .bucket("enc")
        .key("again")
        .customize()
        .mutate_request(|r| {
            r.headers_mut().insert("x-amz-server-side-encryption", "AES256");
        })
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidArgument", 400));
}

/// A bucket policy that denies uploads not asking for SSE-S3, as written for S3, holds: a plain
/// upload is refused, one asking for AES256 is stored.
#[tokio::test]
async fn policies_can_demand_sse_s3_where_volumes_encrypt_at_rest() {
    let gw = Gateway::start_with_config("encrypted_at_rest = true\n");
    let bob = gw.tenant("default", "bob", "user");
    mkbucket(&bob.s3, "bobs").await;
    let policy = r#"{"Version": "2012-10-17", "Statement": [{"Sid": "DenyUnencrypted", "Effect": "Deny",
        "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::bobs/*",
        "Condition": {"StringNotEquals": {"s3:x-amz-server-side-encryption": "AES256"}}}]}"#;
    bob.s3.put_bucket_policy().bucket("bobs").policy(policy).send().await.unwrap();
    let e =
        bob.s3.put_object().bucket("bobs").key("plain").body(ByteStream::from_static(b"p")).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403));
    let out = bob
        .s3
        .put_object()
        .bucket("bobs")
        .key("sealed")
        .server_side_encryption(ServerSideEncryption::Aes256)
        .body(ByteStream::from_static(b"s"))
        .send()
        .await
        .unwrap();
    assert_eq!(out.server_side_encryption(), Some(&ServerSideEncryption::Aes256));
    assert_eq!(keys(&bob.s3, "bobs").await, ["sealed"]);
}

/// Without encryption at rest, setting a bucket's default encryption is not offered (reading
/// it answers that none is set, `object.rs` and the boto3 scenario check the rest).
#[tokio::test]
async fn bucket_encryption_is_not_offered_without_encryption_at_rest() {
    let (_gw, c) = Gateway::with_bucket("plain").await;
    let e = c
        .put_bucket_encryption()
        .bucket("plain")
        .server_side_encryption_configuration(rules(ServerSideEncryption::Aes256))
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("NotImplemented", 501));
    // A body S3 refuses is refused as S3 refuses it, before what is offered here is asked.
    let aes = || ServerSideEncryptionByDefault::builder().sse_algorithm(ServerSideEncryption::Aes256);
    let rule = |d: ServerSideEncryptionByDefault| {
        ServerSideEncryptionRule::builder().apply_server_side_encryption_by_default(d).build()
    };
    let two = ServerSideEncryptionConfiguration::builder()
        .rules(rule(aes().build().unwrap()))
        .rules(rule(aes().build().unwrap()))
        .build()
        .unwrap();
    let keyed = ServerSideEncryptionConfiguration::builder()
        .rules(rule(aes().kms_master_key_id("k1").build().unwrap()))
        .build()
        .unwrap();
    for (conf, want) in [(two, "MalformedXML"), (keyed, "InvalidArgument")] {
        let e = c
            .put_bucket_encryption()
            .bucket("plain")
            .server_side_encryption_configuration(conf)
            .send()
            .await
            .unwrap_err();
        assert_eq!((code(&e).as_str(), status(&e)), (want, 400));
    }
    let e = c.get_bucket_encryption().bucket("plain").send().await.unwrap_err();
    assert_eq!(code(&e), "ServerSideEncryptionConfigurationNotFoundError");
    let out = c.put_object().bucket("plain").key("k").body(ByteStream::from_static(b"v")).send().await.unwrap();
    assert_eq!(out.server_side_encryption(), None);
    let h = c.head_object().bucket("plain").key("k").send().await.unwrap();
    assert_eq!(h.server_side_encryption(), None);
}
