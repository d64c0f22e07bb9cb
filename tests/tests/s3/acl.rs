//! ACLs: read as owner full control; other ACLs and unoffered operations are refused.

use aws_sdk_s3::primitives::ByteStream;
use penstock_tests::{code, put, status, Gateway};

/// Buckets behave as S3 buckets with ACLs disabled (bucket owner enforced): ACLs read as the
/// owner's full control, setting that same ACL succeeds, any other is refused and changes
/// nothing; operations the gateway does not offer answer NotImplemented, not AccessDenied.
#[tokio::test]
async fn acls_read_as_owner_full_control_and_other_acls_are_refused() {
    use aws_sdk_s3::types::{
        AccessControlPolicy, BucketCannedAcl, Grant, Grantee, ObjectCannedAcl, ObjectOwnership, Permission, Type,
    };
    let (gw, c) = Gateway::with_bucket("acl").await;
    put(&c, "acl", "k", b"body").await;

    let acl = c.get_bucket_acl().bucket("acl").send().await.unwrap();
    let owner = acl.owner().expect("owner").clone();
    let owner_id = owner.id().expect("owner id").to_owned();
    assert_eq!(acl.grants().len(), 1);
    let g = &acl.grants()[0];
    assert_eq!(g.permission(), Some(&Permission::FullControl));
    assert_eq!(g.grantee().and_then(|e| e.id()), Some(owner_id.as_str()));
    assert_eq!(g.grantee().map(|e| e.r#type()), Some(&Type::CanonicalUser));
    let listed = c.list_objects_v2().bucket("acl").fetch_owner(true).send().await.unwrap();
    assert_eq!(listed.contents()[0].owner().and_then(|o| o.id()), Some(owner_id.as_str()));

    let oacl = c.get_object_acl().bucket("acl").key("k").send().await.unwrap();
    assert_eq!(oacl.owner().and_then(|o| o.id()), Some(owner_id.as_str()));
    assert_eq!(oacl.grants()[0].permission(), Some(&Permission::FullControl));
    let e = c.get_object_acl().bucket("acl").key("missing").send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchKey"));

    // The ACL that is already there: accepted, in all three forms.
    c.put_object_acl().bucket("acl").key("k").acl(ObjectCannedAcl::Private).send().await.unwrap();
    c.put_bucket_acl().bucket("acl").grant_full_control(format!("id=\"{owner_id}\"")).send().await.unwrap();
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
    let e = c.put_object_acl().bucket("acl").key("k").acl(ObjectCannedAcl::PublicRead).send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "AccessControlListNotSupported"));
    let e = c.put_bucket_acl().bucket("acl").acl(BucketCannedAcl::PublicReadWrite).send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "AccessControlListNotSupported"));
    let e = c
        .put_bucket_acl()
        .bucket("acl")
        .access_control_policy(mine(Permission::Read, "0123456789abcdef"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessControlListNotSupported");
    // A body S3's schema refuses (no owner, an owner id of no id's form, a grantee type S3 does
    // not know) and a body beside a canned ACL are refused as S3 refuses them.
    let grant = |t: Type| {
        Grant::builder()
            .grantee(Grantee::builder().r#type(t).id(&owner_id).build().unwrap())
            .permission(Permission::FullControl)
            .build()
    };
    let no_owner = AccessControlPolicy::builder().grants(grant(Type::CanonicalUser)).build();
    let bad_owner = AccessControlPolicy::builder()
        .owner(aws_sdk_s3::types::Owner::builder().id("wrong-id").build())
        .grants(grant(Type::CanonicalUser))
        .build();
    let bad_type = AccessControlPolicy::builder().owner(owner.clone()).grants(grant(Type::from("BadType"))).build();
    for (policy, want) in
        [(no_owner, "MalformedACLError"), (bad_owner, "InvalidArgument"), (bad_type, "MalformedACLError")]
    {
        let e = c.put_object_acl().bucket("acl").key("k").access_control_policy(policy).send().await.unwrap_err();
        assert_eq!((status(&e), code(&e).as_str()), (400, want));
    }
    let e = c
        .put_object_acl()
        .bucket("acl")
        .key("k")
        .acl(ObjectCannedAcl::Private)
        .access_control_policy(mine(Permission::FullControl, &owner_id))
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (400, "UnexpectedContent"));
    let e = c.put_object_acl().bucket("acl").key("missing").acl(ObjectCannedAcl::Private).send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey");
    let oacl = c.get_object_acl().bucket("acl").key("k").send().await.unwrap();
    assert_eq!(oacl.grants().len(), 1, "a refused ACL changed nothing");

    // Writes that ask for an ACL: only the owner's full control, and a refused write leaves nothing.
    for canned in [ObjectCannedAcl::Private, ObjectCannedAcl::BucketOwnerFullControl] {
        c.put_object().bucket("acl").key("w").acl(canned).body(ByteStream::from_static(b"w")).send().await.unwrap();
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
    assert!(c.head_object().bucket("acl").key("public").send().await.is_err(), "refused write left an object");
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

    let e = c.get_bucket_website().bucket("acl").send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchWebsiteConfiguration"), "read as never set");
    // Lists of configurations never made are empty.
    let m = c.list_bucket_metrics_configurations().bucket("acl").send().await.unwrap();
    assert!(m.metrics_configuration_list().is_empty() && m.is_truncated() == Some(false));
    let i = c.list_bucket_inventory_configurations().bucket("acl").send().await.unwrap();
    assert!(i.inventory_configuration_list().is_empty() && i.is_truncated() == Some(false));
    let e = c.list_bucket_analytics_configurations().bucket("nosuchbucket").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
    // And none has any id: reading or deleting one is S3's 404, not an operation refused.
    let e = c.get_bucket_inventory_configuration().bucket("acl").id("daily").send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchConfiguration"));
    let e = c.get_bucket_metrics_configuration().bucket("acl").id("all").send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchConfiguration"));
    let e = c.get_bucket_analytics_configuration().bucket("acl").id("a").send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchConfiguration"));
    let e = c.get_bucket_intelligent_tiering_configuration().bucket("acl").id("t").send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchConfiguration"));
    let e = c.delete_bucket_inventory_configuration().bucket("acl").id("daily").send().await.unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (404, "NoSuchConfiguration"));
    let e = c
        .put_bucket_website()
        .bucket("acl")
        .website_configuration(
            aws_sdk_s3::types::WebsiteConfiguration::builder()
                .index_document(aws_sdk_s3::types::IndexDocument::builder().suffix("index.html").build().unwrap())
                .build(),
        )
        .send()
        .await
        .unwrap_err();
    assert_eq!((status(&e), code(&e).as_str()), (501, "NotImplemented"));
    // Deleting a setting not offered leaves it unset (204, as S3 answers for a bucket without
    // one), for those who may change the bucket's settings only.
    let bob = gw.tenant("default", "bob", "user");
    let e = bob.s3.delete_bucket_encryption().bucket("acl").send().await.unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    c.delete_bucket_encryption().bucket("acl").send().await.unwrap();
    c.delete_bucket_website().bucket("acl").send().await.unwrap();
    c.delete_bucket_replication().bucket("acl").send().await.unwrap();
    let e = c.get_bucket_website().bucket("acl").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchWebsiteConfiguration");
    let e = c.get_bucket_acl().bucket("nosuchbucket").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket");
}

/// CreateBucket applies its `x-amz-object-ownership` and ACL headers, or refuses them as S3
/// does; it never makes a bucket without what was asked.
#[tokio::test]
async fn create_bucket_applies_ownership_and_acl_or_refuses_them() {
    use aws_sdk_s3::types::{BucketCannedAcl, ObjectOwnership};
    let (_gw, c) = Gateway::with_bucket("first").await;
    let e = c.create_bucket().bucket("enforced").acl(BucketCannedAcl::PublicRead).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidBucketAclWithObjectOwnership", 400));
    assert_eq!(status(&c.head_bucket().bucket("enforced").send().await.unwrap_err()), 404, "no bucket made");
    c.create_bucket().bucket("enforced").acl(BucketCannedAcl::Private).send().await.unwrap();

    c.create_bucket()
        .bucket("writer")
        .object_ownership(ObjectOwnership::ObjectWriter)
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .unwrap();
    let oc = c.get_bucket_ownership_controls().bucket("writer").send().await.unwrap();
    let rules = oc.ownership_controls().map(|o| o.rules().to_vec()).unwrap_or_default();
    assert_eq!(rules[0].object_ownership(), &ObjectOwnership::ObjectWriter);
    let acl = c.get_bucket_acl().bucket("writer").send().await.unwrap();
    let public = acl.grants().iter().any(|g| {
        g.grantee().and_then(|e| e.uri()) == Some("http://acs.amazonaws.com/groups/global/AllUsers")
            && g.permission().map(|p| p.as_str()) == Some("READ")
    });
    assert!(public, "the bucket's ACL is the one asked for: {acl:?}");
}
