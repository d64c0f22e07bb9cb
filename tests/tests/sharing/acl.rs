//! ACLs, once ownership controls enable them: grants, object writers as owners.

use super::*;

/// `default_object_ownership` gives buckets created without `x-amz-object-ownership` ACLs, as
/// buckets had before S3's 2023 default; one that names an ownership still gets it.
#[tokio::test]
async fn default_object_ownership_turns_acls_on_for_new_buckets() {
    use aws_sdk_s3::types::{BucketCannedAcl, ObjectCannedAcl, ObjectOwnership};
    let gw = Gateway::start_with_config("default_object_ownership = \"ObjectWriter\"\n");
    let c = gw.client();
    c.create_bucket().bucket("open").acl(BucketCannedAcl::PublicRead).send().await.unwrap();
    let oc = c.get_bucket_ownership_controls().bucket("open").send().await.unwrap();
    assert_eq!(oc.ownership_controls().unwrap().rules()[0].object_ownership(), &ObjectOwnership::ObjectWriter);
    let put_public = |bucket: &'static str| {
        c.put_object()
            .bucket(bucket)
            .key("pub.txt")
            .acl(ObjectCannedAcl::PublicRead)
            .body(ByteStream::from_static(b"data"))
            .send()
    };
    put_public("open").await.unwrap();
    assert_eq!(anon(&gw, "GET", "/open/pub.txt").status, 200);
    assert_eq!(anon(&gw, "GET", "/open?list-type=2").status, 200, "the bucket's public-read ACL");
    // Whoever may list the bucket learns that a key is missing (404), as a listing would tell.
    assert_eq!(anon(&gw, "GET", "/open/missing.txt").status, 404);
    assert_eq!(anon(&gw, "HEAD", "/open/missing.txt").status, 404);
    c.create_bucket().bucket("shut").send().await.unwrap();
    put_public("shut").await.unwrap();
    assert_eq!(anon(&gw, "GET", "/shut/pub.txt").status, 200);
    assert_eq!(anon(&gw, "GET", "/shut/missing.txt").status, 403, "may not list: missing is 403");
    let e = c
        .create_bucket()
        .bucket("closed")
        .object_ownership(ObjectOwnership::BucketOwnerEnforced)
        .acl(BucketCannedAcl::PublicRead)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidBucketAclWithObjectOwnership");
}

#[tokio::test]
async fn acls_count_once_ownership_controls_enable_them() {
    use aws_sdk_s3::types::{
        AccessControlPolicy, BucketCannedAcl, ObjectCannedAcl, ObjectOwnership, OwnershipControls,
        OwnershipControlsRule, Permission, Type,
    };
    let (gw, c) = Gateway::with_bucket("acls").await;
    let bob = gw.tenant("default", "bob", "user");
    let carol = gw.tenant("default", "carol", "user");
    let body = || ByteStream::from_static(b"data");
    let e = c
        .put_object()
        .bucket("acls")
        .key("pub.txt")
        .acl(ObjectCannedAcl::PublicRead)
        .body(body())
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessControlListNotSupported", 400), "ACLs are off by default");

    let controls = |o: ObjectOwnership| {
        OwnershipControls::builder()
            .rules(OwnershipControlsRule::builder().object_ownership(o).build().unwrap())
            .build()
            .unwrap()
    };
    c.put_bucket_ownership_controls()
        .bucket("acls")
        .ownership_controls(controls(ObjectOwnership::BucketOwnerPreferred))
        .send()
        .await
        .unwrap();
    let oc = c.get_bucket_ownership_controls().bucket("acls").send().await.unwrap();
    assert_eq!(oc.ownership_controls().unwrap().rules()[0].object_ownership(), &ObjectOwnership::BucketOwnerPreferred);
    c.put_object().bucket("acls").key("pub.txt").acl(ObjectCannedAcl::PublicRead).body(body()).send().await.unwrap();
    put(&c, "acls", "priv.txt", b"secret").await;
    assert_eq!(anon(&gw, "GET", "/acls/pub.txt").status, 200);
    assert_eq!(anon(&gw, "GET", "/acls/priv.txt").status, 403);
    assert_eq!(anon(&gw, "GET", "/acls?list-type=2").status, 403, "the bucket's ACL grants no listing");
    let acl = c.get_object_acl().bucket("acls").key("pub.txt").send().await.unwrap();
    let public = acl.grants().iter().any(|g| {
        g.permission() == Some(&Permission::Read)
            && g.grantee().is_some_and(|e| {
                e.r#type() == &Type::Group && e.uri() == Some("http://acs.amazonaws.com/groups/global/AllUsers")
            })
    });
    assert!(public, "{acl:?}");

    // A grant to one user by canonical id (their id, as the admin CLI shows it).
    c.put_object_acl().bucket("acls").key("priv.txt").grant_read(format!("id=\"{}\"", bob.id)).send().await.unwrap();
    assert_eq!(get(&bob.s3, "acls", "priv.txt").await, b"secret");
    // Grant headers grant exactly what they name, as on S3: the owner's full control is not
    // among them (its access is its own), as ceph's s3-tests read header grants back.
    let acl = c.get_object_acl().bucket("acls").key("priv.txt").send().await.unwrap();
    let listed: Vec<_> = acl
        .grants()
        .iter()
        .map(|g| (g.grantee().and_then(|e| e.id()).unwrap_or_default().to_owned(), g.permission().cloned()))
        .collect();
    assert_eq!(listed, vec![(bob.id.replace('-', ""), Some(Permission::Read))], "{acl:?}");
    assert_eq!(get(&c, "acls", "priv.txt").await, b"secret", "the owner still reads it");
    let e = carol.s3.get_object().bucket("acls").key("priv.txt").send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    let e = c
        .put_object_acl()
        .bucket("acls")
        .key("priv.txt")
        .grant_read("id=\"00000000000000000000000000000bad\"")
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "InvalidArgument", "grants name existing users");

    c.put_bucket_acl().bucket("acls").acl(BucketCannedAcl::PublicReadWrite).send().await.unwrap();
    assert_eq!(anon(&gw, "GET", "/acls?list-type=2").status, 200);
    assert_eq!(anon_put(&gw, "/acls/dropbox/in.txt", b"anon").status, 200, "public-read-write takes anonymous writes");
    assert_eq!(get(&c, "acls", "dropbox/in.txt").await, b"anon");

    // s3-tests' revoke-all: a policy of no grants reads back as none; the owner keeps its
    // access (lists, reads and sets the ACL), everyone else loses theirs.
    let before = c.get_bucket_acl().bucket("acls").send().await.unwrap();
    let none = AccessControlPolicy::builder().owner(before.owner().unwrap().clone()).set_grants(Some(vec![])).build();
    c.put_bucket_acl().bucket("acls").access_control_policy(none).send().await.unwrap();
    let after = c.get_bucket_acl().bucket("acls").send().await.unwrap();
    assert!(after.grants().is_empty(), "{after:?}");
    assert_eq!(anon(&gw, "GET", "/acls?list-type=2").status, 403);
    c.list_objects_v2().bucket("acls").send().await.unwrap();
    let back = AccessControlPolicy::builder()
        .owner(before.owner().unwrap().clone())
        .set_grants(Some(before.grants().to_vec()))
        .build();
    c.put_bucket_acl().bucket("acls").access_control_policy(back).send().await.unwrap();
    let again = c.get_bucket_acl().bucket("acls").send().await.unwrap();
    assert_eq!(again.grants(), before.grants(), "the owner's grant is listed again once granted");
    assert_eq!(anon(&gw, "GET", "/acls?list-type=2").status, 200);

    let block = |acls: bool, ignore: bool| {
        PublicAccessBlockConfiguration::builder().block_public_acls(acls).ignore_public_acls(ignore).build()
    };
    c.put_public_access_block()
        .bucket("acls")
        .public_access_block_configuration(block(false, true))
        .send()
        .await
        .unwrap();
    assert_eq!(anon(&gw, "GET", "/acls/pub.txt").status, 403, "public ACLs ignored");
    assert_eq!(get(&bob.s3, "acls", "priv.txt").await, b"secret", "grants to users still count");
    c.put_public_access_block()
        .bucket("acls")
        .public_access_block_configuration(block(true, false))
        .send()
        .await
        .unwrap();
    let e =
        c.put_object_acl().bucket("acls").key("priv.txt").acl(ObjectCannedAcl::PublicRead).send().await.unwrap_err();
    assert_eq!(status(&e), 403, "public ACLs blocked");
    c.delete_public_access_block().bucket("acls").send().await.unwrap();

    c.delete_bucket_ownership_controls().bucket("acls").send().await.unwrap();
    assert_eq!(anon(&gw, "GET", "/acls/pub.txt").status, 403, "back to BucketOwnerEnforced: ACLs no longer count");
    let e = bob.s3.get_object().bucket("acls").key("priv.txt").send().await.unwrap_err();
    assert_eq!(status(&e), 403);
}

/// Where ACLs are enabled an object belongs to the user who wrote it, as on S3: under
/// `ObjectWriter` always, under `BucketOwnerPreferred` unless the write gives the bucket owner
/// full control. The owner has full control of it (reads it and its ACL), shows as its owner in
/// GetObjectAcl, listings and uploads, and `bucket-owner-*` canned ACLs grant the bucket owner.
#[tokio::test]
async fn writers_own_what_they_write_where_acls_are_enabled() {
    use aws_sdk_s3::types::{BucketCannedAcl, ObjectCannedAcl, ObjectOwnership, Permission};
    let gw = Gateway::start_with_config("default_object_ownership = \"ObjectWriter\"\n");
    let alice = gw.tenant("default", "alice", "user");
    let bob = gw.tenant("default", "bob", "user");
    let carol = gw.tenant("default", "carol", "user");
    let body = || ByteStream::from_static(b"bob's");
    alice.s3.create_bucket().bucket("shared").acl(BucketCannedAcl::PublicReadWrite).send().await.unwrap();
    bob.s3.put_object().bucket("shared").key("mine").body(body()).send().await.unwrap();
    let acl = bob.s3.get_object_acl().bucket("shared").key("mine").send().await.unwrap();
    assert_eq!(acl.owner().and_then(|o| o.id()), Some(bob.id.replace('-', "").as_str()));
    assert_eq!(get(&bob.s3, "shared", "mine").await, b"bob's", "the owner reads what it owns");
    let e = carol.s3.get_object().bucket("shared").key("mine").send().await.unwrap_err();
    assert_eq!(status(&e), 403, "no grant, no read");
    let listed = alice.s3.list_objects().bucket("shared").send().await.unwrap();
    let owner = listed.contents()[0].owner().and_then(|o| o.id()).map(str::to_owned);
    assert_eq!(owner.as_deref(), Some(bob.id.replace('-', "").as_str()));

    // `bucket-owner-read`: the bucket owner may read it too.
    bob.s3
        .put_object()
        .bucket("shared")
        .key("shown")
        .acl(ObjectCannedAcl::BucketOwnerRead)
        .body(body())
        .send()
        .await
        .unwrap();
    let acl = bob.s3.get_object_acl().bucket("shared").key("shown").send().await.unwrap();
    let alice_id = alice.id.replace('-', "");
    let to_alice: Vec<_> = acl
        .grants()
        .iter()
        .filter(|g| g.grantee().and_then(|e| e.id()) == Some(alice_id.as_str()))
        .map(|g| g.permission().cloned())
        .collect();
    assert_eq!(to_alice, [Some(Permission::Read)]);

    // Under BucketOwnerPreferred, `bucket-owner-full-control` hands the object to the bucket
    // owner; without it the writer keeps it.
    alice
        .s3
        .create_bucket()
        .bucket("preferred")
        .object_ownership(ObjectOwnership::BucketOwnerPreferred)
        .acl(BucketCannedAcl::PublicReadWrite)
        .send()
        .await
        .unwrap();
    for (key, canned, owner) in
        [("given", Some(ObjectCannedAcl::BucketOwnerFullControl), &alice_id), ("kept", None, &bob.id.replace('-', ""))]
    {
        bob.s3.put_object().bucket("preferred").key(key).set_acl(canned).body(body()).send().await.unwrap();
        // The bucket owner's folder permissions let it read any object's ACL.
        let acl = alice.s3.get_object_acl().bucket("preferred").key(key).send().await.unwrap();
        let acl = acl.owner().and_then(|o| o.id()).map(str::to_owned);
        assert_eq!(acl.as_deref(), Some(owner.as_str()), "{key}");
    }
}
