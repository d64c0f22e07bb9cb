//! Bucket operations: create, head, list, delete, location, and what each refuses.

use penstock_tests::{code, get, put, status, Gateway};

#[tokio::test]
async fn bucket_lifecycle() {
    let (gw, c) = Gateway::with_bucket("alpha").await;
    put(&c, "alpha", "kept", b"1").await;
    // us-east-1 (the default region): creating your own bucket again succeeds and changes nothing.
    c.create_bucket().bucket("alpha").send().await.unwrap();
    assert_eq!(get(&c, "alpha", "kept").await, b"1");
    c.delete_object().bucket("alpha").key("kept").send().await.unwrap();
    let head = c.head_bucket().bucket("alpha").send().await.unwrap();
    assert_eq!((head.bucket_region(), head.access_point_alias()), (Some("us-east-1"), Some(false)));
    let e = c.head_bucket().bucket("nope-nope").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    let listed = c.list_buckets().send().await.unwrap();
    let names: Vec<String> = listed.buckets().iter().map(|b| b.name().unwrap().to_owned()).collect();
    assert_eq!(names, ["alpha"]);
    // ListBuckets names its caller as the ACLs name the owner of the caller's buckets.
    let acl_owner = c.get_bucket_acl().bucket("alpha").send().await.unwrap().owner().unwrap().clone();
    let owner = listed.owner().unwrap();
    assert_eq!((owner.id(), owner.display_name()), (acl_owner.id(), acl_owner.display_name()));
    // Names S3 reserves for access point aliases, directory buckets and the like, and labels that
    // start or end with a hyphen.
    for reserved in ["data-s3alias", "data--ol-s3", "data.mrap", "sthree-data", "xn--data", "foo.-bar", "foo-.bar"] {
        let e = c.create_bucket().bucket(reserved).send().await.unwrap_err();
        assert_eq!(code(&e), "InvalidBucketName", "{reserved}");
    }
    // CreateBucket holds a name to S3's rules (an underscore, capitals, too short): 400
    // InvalidBucketName with a message and a request id.
    let raw = penstock_client::Client::new(&gw.endpoint, penstock_tests::ACCESS_KEY, penstock_tests::SECRET_KEY);
    for bad in ["test1_bucket", "Caps-Bucket", "ab"] {
        let r = raw.send(http::Method::PUT, &raw.url(bad, None), &[], bytes::Bytes::new()).await.unwrap();
        let body = String::from_utf8_lossy(&r.body);
        assert_eq!(r.status, 400, "PUT {bad}: {body}");
        assert!(body.contains("<Code>InvalidBucketName</Code>"), "PUT {bad}: {body}");
        assert!(body.contains("<Message>The specified bucket is not valid"), "PUT {bad}: {body}");
        assert!(body.contains("<RequestId>"), "PUT {bad}: {body}");
    }
    // Other requests may name a bucket by S3's legacy rules (capitals, underscores): such a
    // bucket cannot exist here, and S3 answers 404 NoSuchBucket for one that does not exist.
    // A name outside even those rules is refused before any lookup, with S3's message.
    for (method, name, key, status, code) in [
        (http::Method::GET, "Caps-Bucket", None, 404, "NoSuchBucket"),
        (http::Method::DELETE, "test1_bucket", Some("k"), 404, "NoSuchBucket"),
        (http::Method::GET, "ab", None, 400, "InvalidBucketName"),
        (http::Method::GET, "a%21b", Some("k"), 400, "InvalidBucketName"),
    ] {
        let r = raw.send(method.clone(), &raw.url(name, key), &[], bytes::Bytes::new()).await.unwrap();
        let body = String::from_utf8_lossy(&r.body);
        assert_eq!(r.status, status, "{method} {name}: {body}");
        assert!(body.contains(&format!("<Code>{code}</Code>")), "{method} {name}: {body}");
        assert!(body.contains("<Message>"), "{method} {name}: {body}");
        assert!(body.contains("<RequestId>"), "{method} {name}: {body}");
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

/// In us-east-1 a repeated CreateBucket of your own bucket succeeds, unless it names another
/// region: a bucket made there is answered as that region answers, with 409.
#[tokio::test]
async fn create_own_bucket_again_in_us_east_1() {
    use aws_sdk_s3::types::{BucketLocationConstraint, CreateBucketConfiguration};
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("gamma").send().await.unwrap();
    c.create_bucket().bucket("gamma").send().await.unwrap();
    let elsewhere =
        CreateBucketConfiguration::builder().location_constraint(BucketLocationConstraint::EuCentral1).build();
    c.create_bucket().bucket("delta").create_bucket_configuration(elsewhere.clone()).send().await.unwrap();
    let e = c.create_bucket().bucket("delta").create_bucket_configuration(elsewhere).send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (409, "BucketAlreadyOwnedByYou"));
}

/// Settings of one bucket changed at once (as Terraform applies a bucket's resources in
/// parallel) all stay: each change is made on the record as stored, in turn, not on a copy read
/// before another change landed.
#[tokio::test]
async fn bucket_settings_changed_at_once_all_stay() {
    use aws_sdk_s3::types::{
        BucketVersioningStatus, CorsConfiguration, CorsRule, PublicAccessBlockConfiguration, Tag, Tagging,
        VersioningConfiguration,
    };
    let gw = Gateway::start();
    let c = gw.client();
    for round in 0..5 {
        let b = format!("settings-{round}");
        penstock_tests::mkbucket(&c, &b).await;
        let tags = Tagging::builder().tag_set(Tag::builder().key("k").value("v").build().unwrap()).build().unwrap();
        let cors = CorsConfiguration::builder()
            .cors_rules(CorsRule::builder().allowed_methods("GET").allowed_origins("*").build().unwrap())
            .build()
            .unwrap();
        let versioning = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
        let block = PublicAccessBlockConfiguration::builder().block_public_acls(true).build();
        let policy = format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"Allow","Principal":"*","Action":"s3:GetObject","Resource":"arn:aws:s3:::{b}/*","Condition":{{"IpAddress":{{"aws:SourceIp":"10.0.0.0/8"}}}}}}]}}"#
        );
        let (t, co, v, pa, po) = tokio::join!(
            c.put_bucket_tagging().bucket(&b).tagging(tags).send(),
            c.put_bucket_cors().bucket(&b).cors_configuration(cors).send(),
            c.put_bucket_versioning().bucket(&b).versioning_configuration(versioning).send(),
            c.put_public_access_block().bucket(&b).public_access_block_configuration(block).send(),
            c.put_bucket_policy().bucket(&b).policy(policy).send(),
        );
        t.unwrap();
        co.unwrap();
        v.unwrap();
        pa.unwrap();
        po.unwrap();
        assert_eq!(c.get_bucket_tagging().bucket(&b).send().await.unwrap().tag_set().len(), 1, "{b}: tags");
        assert_eq!(c.get_bucket_cors().bucket(&b).send().await.unwrap().cors_rules().len(), 1, "{b}: cors");
        let v = c.get_bucket_versioning().bucket(&b).send().await.unwrap();
        assert_eq!(v.status(), Some(&BucketVersioningStatus::Enabled), "{b}: versioning");
        c.get_public_access_block().bucket(&b).send().await.unwrap();
        c.get_bucket_policy().bucket(&b).send().await.unwrap();
    }
}
