//! Bucket policies: anonymous and cross-user access, explicit denies, conditions and policy
//! variables, malformed documents, policy status and the public access block, multi-deletes and
//! copies judged key by key.

use super::*;

#[tokio::test]
async fn public_read_policy_serves_anonymous_gets_and_nothing_more() {
    let (gw, c) = Gateway::with_bucket("pub").await;
    put(&c, "pub", "models/m.bin", b"weights").await;
    put(&c, "pub", "private/p", b"secret").await;
    let a = anon(&gw, "GET", "/pub/models/m.bin");
    assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessDenied"), "no policy, no anonymous access");
    assert!(a.header("x-amz-request-id").is_some());
    // An empty Authorization header names nobody: the request is anonymous, not malformed.
    let empty_auth = [("Authorization", "")];
    let a = Conn::open(&gw).unsigned("PUT", "/pub/models/m.bin", &empty_auth, b"overwritten");
    assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessDenied"));
    let e = c.get_bucket_policy().bucket("pub").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("NoSuchBucketPolicy", 404));

    let doc = public_read("pub", "models/");
    set_policy(&c, "pub", &doc).await;
    assert_eq!(c.get_bucket_policy().bucket("pub").send().await.unwrap().policy(), Some(doc.as_str()));
    let st = c.get_bucket_policy_status().bucket("pub").send().await.unwrap();
    assert_eq!(st.policy_status().and_then(|s| s.is_public()), Some(true));

    let a = anon(&gw, "GET", "/pub/models/m.bin");
    assert_eq!((a.status, a.body.as_slice()), (200, &b"weights"[..]));
    let a = Conn::open(&gw).unsigned("GET", "/pub/models/m.bin", &empty_auth, b"");
    assert_eq!((a.status, a.body.as_slice()), (200, &b"weights"[..]));
    assert_eq!(anon(&gw, "HEAD", "/pub/models/m.bin").status, 200);
    // A link cannot have a public object served as another type (HTML from this origin).
    let a = anon(&gw, "GET", "/pub/models/m.bin?response-content-type=text%2Fhtml");
    assert_eq!((a.status, xml_code(&a).as_str()), (400, "InvalidRequest"), "overrides need a signature");
    assert_eq!(anon(&gw, "HEAD", "/pub/models/m.bin?response-content-disposition=inline").status, 400);
    let signed =
        c.get_object().bucket("pub").key("models/m.bin").response_content_type("text/plain").send().await.unwrap();
    assert_eq!(signed.content_type(), Some("text/plain"), "a signed read may override");
    let a = anon(&gw, "GET", "/pub/models/none.bin");
    assert_eq!(
        (a.status, xml_code(&a).as_str()),
        (403, "AccessDenied"),
        "no listing right: a missing key is not revealed"
    );
    assert_eq!(anon(&gw, "HEAD", "/pub/models/none.bin").status, 403);
    let e = c.get_object().bucket("pub").key("models/none.bin").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey", "the owner sees it missing");
    // Virtual-hosted, as `curl http://pub.localhost:PORT/models/m.bin` sends it.
    let port = gw.endpoint.rsplit(':').next().unwrap().to_owned();
    let host = format!("pub.localhost:{port}");
    let a = Conn::open(&gw).unsigned("GET", "/models/m.bin", &[("Host", &host)], b"");
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    for (method, path) in
        [("GET", "/pub/private/p"), ("GET", "/pub?list-type=2"), ("GET", "/"), ("DELETE", "/pub/models/m.bin")]
    {
        let a = anon(&gw, method, path);
        assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessDenied"), "{method} {path}");
    }
    let a = anon_put(&gw, "/pub/models/evil", b"x");
    assert_eq!(a.status, 403);
    assert_eq!(get(&c, "pub", "models/m.bin").await, b"weights", "refused requests changed nothing");
    assert!(c.head_object().bucket("pub").key("models/evil").send().await.is_err());

    c.delete_bucket_policy().bucket("pub").send().await.unwrap();
    assert_eq!(anon(&gw, "GET", "/pub/models/m.bin").status, 403, "deleting the policy ends public access");
    c.delete_bucket_policy().bucket("pub").send().await.expect("deleting no policy succeeds, as on S3");
}

/// AWS's own example policy that refuses unencrypted uploads is accepted and means what it says:
/// uploads here carry no encryption header (none is offered), so it refuses them.
#[tokio::test]
async fn encryption_condition_keys_are_accepted_and_evaluated() {
    let (gw, _c) = Gateway::with_bucket("other").await;
    let bob = gw.tenant("default", "bob", "user");
    mkbucket(&bob.s3, "enc").await;
    let policy = r#"{"Version": "2012-10-17", "Statement": [{"Sid": "DenyUnencrypted", "Effect": "Deny",
        "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::enc/*",
        "Condition": {"StringNotEquals": {"s3:x-amz-server-side-encryption": "AES256"}}}]}"#;
    set_policy(&bob.s3, "enc", policy).await;
    let e = bob.s3.put_object().bucket("enc").key("k").body(ByteStream::from_static(b"x")).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403));
    let deny_only_kms = policy.replace("StringNotEquals", "StringEquals").replace("AES256", "aws:kms");
    set_policy(&bob.s3, "enc", &deny_only_kms).await;
    put(&bob.s3, "enc", "k", b"x").await;
}

/// The condition keys of AWS's own policy examples beyond encryption: conditional writes
/// demanded (`s3:if-none-match`), presigned URLs held to an age (`s3:signatureAge`), tag keys a
/// write may set (`s3:RequestObjectTagKeys`), the bucket's account (`s3:ResourceAccount`), and
/// access point keys no request here carries.
#[tokio::test]
async fn write_condition_keys_signature_age_and_account_are_evaluated() {
    use aws_sdk_s3::presigning::PresigningConfig;
    use std::time::{Duration, SystemTime};
    let (gw, _c) = Gateway::with_bucket("other").await;
    let bob = gw.tenant("default", "bob", "user");
    mkbucket(&bob.s3, "cond").await;
    put(&bob.s3, "cond", "old", b"kept").await;
    let policy = r#"{"Version": "2012-10-17", "Statement": [
        {"Sid": "OnlyNewKeys", "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::cond/*", "Condition": {"Null": {"s3:if-none-match": "true"}}},
        {"Sid": "FreshUrls", "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::cond/*", "Condition": {"NumericGreaterThan": {"s3:signatureAge": "600000"}}},
        {"Sid": "TagKeys", "Effect": "Deny", "Principal": "*", "Action": "s3:PutObject",
         "Resource": "arn:aws:s3:::cond/*",
         "Condition": {"ForAnyValue:StringNotEquals": {"s3:RequestObjectTagKeys": ["project"]}}},
        {"Sid": "OwnAccount", "Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
         "Resource": "arn:aws:s3:::cond/*", "Condition": {"StringNotEquals": {"s3:ResourceAccount": "default"}}},
        {"Sid": "OwnCallers", "Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject",
         "Resource": "arn:aws:s3:::cond/*", "Condition": {"StringNotEquals": {"aws:PrincipalAccount": "default"},
         "ArnNotLike": {"aws:PrincipalArn": "arn:aws:iam::default:user/*"}}},
        {"Sid": "ViaAccessPoint", "Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::cond/*", "Condition": {"StringEquals": {"s3:DataAccessPointAccount": "123456789012"}}}
    ]}"#;
    set_policy(&bob.s3, "cond", policy).await;
    let body = || ByteStream::from_static(b"new");
    let e = bob.s3.put_object().bucket("cond").key("k").body(body()).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403), "a PUT without If-None-Match");
    bob.s3.put_object().bucket("cond").key("k").if_none_match("*").body(body()).send().await.unwrap();
    let tagged = |tags: &'static str| {
        bob.s3.put_object().bucket("cond").key(format!("t-{tags}")).if_none_match("*").tagging(tags).body(body()).send()
    };
    tagged("project=x").await.unwrap();
    let e = tagged("project=x&owner=y").await.unwrap_err();
    assert_eq!(status(&e), 403, "a tag key the policy does not list");
    // A URL signed 20 minutes ago (valid for an hour) is older than the policy allows.
    let presign = |start: SystemTime| {
        PresigningConfig::builder().start_time(start).expires_in(Duration::from_secs(3600)).build().unwrap()
    };
    let stale =
        bob.s3.get_object().bucket("cond").key("old").presigned(presign(SystemTime::now() - Duration::from_secs(1200)));
    let stale = stale.await.unwrap();
    let a = Conn::open(&gw).unsigned("GET", stale.uri().trim_start_matches(&gw.endpoint), &[], b"");
    assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessDenied"), "a stale URL");
    let fresh = bob.s3.get_object().bucket("cond").key("old").presigned(presign(SystemTime::now())).await.unwrap();
    let a = Conn::open(&gw).unsigned("GET", fresh.uri().trim_start_matches(&gw.endpoint), &[], b"");
    assert_eq!((a.status, a.body.as_slice()), (200, &b"kept"[..]), "a fresh URL");
    // The bucket and the caller are in the account the policy names, so deletes pass; no request
    // comes through an access point, so that grant admits nobody.
    bob.s3.delete_object().bucket("cond").key("k").send().await.unwrap();
    let a = anon(&gw, "GET", "/cond/old");
    assert_eq!(a.status, 403, "an access point's grant");
}

/// One bucket, a home prefix per user: the policy names `${aws:username}` once, and each user of
/// the domain reads, writes and lists only under their own name.
#[tokio::test]
async fn policy_variables_give_each_user_a_home_prefix() {
    let (gw, c) = Gateway::with_bucket("homes").await;
    let bob = gw.tenant("default", "bob", "user");
    let carol = gw.tenant("default", "carol", "user");
    let doc = r#"{"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::default:root"}, "Action": ["s3:GetObject", "s3:PutObject"],
         "Resource": "arn:aws:s3:::homes/home/${aws:username}/*"},
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::default:root"}, "Action": "s3:ListBucket",
         "Resource": "arn:aws:s3:::homes", "Condition": {"StringLike": {"s3:prefix": "home/${aws:username}/*"}}}]}"#;
    set_policy(&c, "homes", doc).await;
    put(&bob.s3, "homes", "home/bob/notes.txt", b"bob's").await;
    put(&carol.s3, "homes", "home/carol/notes.txt", b"carol's").await;
    assert_eq!(get(&bob.s3, "homes", "home/bob/notes.txt").await, b"bob's");
    let e = bob.s3.get_object().bucket("homes").key("home/carol/notes.txt").send().await.unwrap_err();
    assert_eq!(status(&e), 403, "another user's home");
    let e = carol.s3.put_object().bucket("homes").key("home/bob/x").body(ByteStream::from_static(b"x")).send().await;
    assert_eq!(status(&e.unwrap_err()), 403);
    let mine = bob.s3.list_objects_v2().bucket("homes").prefix("home/bob/").send().await.unwrap();
    assert_eq!(mine.contents().iter().filter_map(|o| o.key()).collect::<Vec<_>>(), ["home/bob/notes.txt"]);
    let e = bob.s3.list_objects_v2().bucket("homes").prefix("home/carol/").send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    let e = bob.s3.list_objects_v2().bucket("homes").send().await.unwrap_err();
    assert_eq!(status(&e), 403, "no prefix, no listing");
}

#[tokio::test]
async fn malformed_policies_are_refused_and_change_nothing() {
    let (_gw, c) = Gateway::with_bucket("mal").await;
    let good = public_read("mal", "");
    set_policy(&c, "mal", &good).await;
    let cases = [
        ("{not json", "invalid Json"),
        (
            r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other/*"}]}"#,
            "invalid resource",
        ),
        (
            r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:Teleport", "Resource": "arn:aws:s3:::mal/*"}]}"#,
            "invalid action",
        ),
        (
            r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::mal"}]}"#,
            "Action does not apply",
        ),
        (
            r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::mal/*",
            "Condition": {"IpAddress": {"aws:SourceIp": "300.1.1.1"}}}]}"#,
            "Invalid Condition value",
        ),
    ];
    for (doc, why) in cases {
        let e = c.put_bucket_policy().bucket("mal").policy(doc).send().await.unwrap_err();
        assert_eq!((code(&e).as_str(), status(&e)), ("MalformedPolicy", 400), "{doc}");
        let msg = e.as_service_error().and_then(|s| s.meta().message()).unwrap_or_default().to_owned();
        assert!(msg.contains(why), "{doc}: {msg}");
    }
    let kept = c.get_bucket_policy().bucket("mal").send().await.unwrap();
    assert_eq!(kept.policy(), Some(good.as_str()), "a refused policy leaves the old one");
}

#[tokio::test]
async fn an_explicit_deny_beats_folder_permissions_but_never_locks_out_the_policy() {
    let (gw, c) = Gateway::with_bucket("keep").await;
    let bob = gw.tenant("default", "bob", "user");
    mkbucket(&bob.s3, "bobs").await;
    put(&bob.s3, "bobs", "k", b"v").await;
    let deny_all = r#"{"Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:*", "Resource": ["arn:aws:s3:::bobs", "arn:aws:s3:::bobs/*"]}]}"#;
    set_policy(&bob.s3, "bobs", deny_all).await;
    let e = bob.s3.get_object().bucket("bobs").key("k").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403), "the owner is denied too");
    let e = bob.s3.delete_object().bucket("bobs").key("k").send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    // The superadmin is not bound by tenant policies, and the owner can still remove the policy.
    assert_eq!(get(&c, "bobs", "k").await, b"v");
    bob.s3.get_bucket_policy().bucket("bobs").send().await.expect("the owner reads a policy that denies everything");
    bob.s3.delete_bucket_policy().bucket("bobs").send().await.unwrap();
    assert_eq!(get(&bob.s3, "bobs", "k").await, b"v");
}

#[tokio::test]
async fn a_policy_grants_a_user_of_the_domain_what_the_folder_does_not() {
    let (gw, c) = Gateway::with_bucket("shared").await;
    put(&c, "shared", "ds/a.csv", b"1,2,3").await;
    let bob = gw.tenant("default", "bob", "user");
    let carol = gw.tenant("default", "carol", "user");
    gw.admin(&["domain", "create", "other"]);
    let eve = gw.tenant("other", "eve", "user");
    let e = bob.s3.get_object().bucket("shared").key("ds/a.csv").send().await.unwrap_err();
    assert_eq!(status(&e), 403);
    let doc = r#"{"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::default:user/bob"]}, "Action": ["s3:GetObject", "s3:ListBucket"],
         "Resource": ["arn:aws:s3:::shared", "arn:aws:s3:::shared/ds/*"]}]}"#;
    set_policy(&c, "shared", doc).await;
    let st = c.get_bucket_policy_status().bucket("shared").send().await.unwrap();
    assert_eq!(st.policy_status().and_then(|s| s.is_public()), Some(false));
    assert_eq!(get(&bob.s3, "shared", "ds/a.csv").await, b"1,2,3");
    let listed = bob.s3.list_objects_v2().bucket("shared").send().await.unwrap();
    assert_eq!(listed.key_count(), Some(1));
    let e = bob.s3.get_object().bucket("shared").key("ds/none.csv").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchKey", "a caller who may list is told the key is missing");
    let e = bob
        .s3
        .put_object()
        .bucket("shared")
        .key("ds/b.csv")
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 403, "the policy grants reads only");
    let e = carol.s3.get_object().bucket("shared").key("ds/a.csv").send().await.unwrap_err();
    assert_eq!(status(&e), 403, "another user of the domain gets nothing");
    let e = eve.s3.get_object().bucket("shared").key("ds/a.csv").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchBucket", "bucket names are per domain: another domain never reaches it");
}

#[tokio::test]
async fn conditions_on_source_address_and_list_prefix() {
    let (gw, c) = Gateway::with_bucket("cond").await;
    put(&c, "cond", "pub/x", b"x").await;
    let doc = r#"{"Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::cond",
         "Condition": {"StringEquals": {"s3:prefix": "pub/"}}},
        {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::cond/*",
         "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}]}"#;
    set_policy(&c, "cond", doc).await;
    let a = anon(&gw, "GET", "/cond?list-type=2&prefix=pub%2F");
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    assert!(String::from_utf8_lossy(&a.body).contains("<Key>pub/x</Key>"));
    assert_eq!(anon(&gw, "GET", "/cond?list-type=2").status, 403, "no prefix, no listing");
    assert_eq!(anon(&gw, "GET", "/cond?list-type=2&prefix=other").status, 403);
    assert_eq!(anon(&gw, "GET", "/cond/pub/x").status, 403, "127.0.0.1 is not in 10.0.0.0/8");
    set_policy(&c, "cond", &doc.replace("10.0.0.0/8", "127.0.0.0/8")).await;
    assert_eq!(anon(&gw, "GET", "/cond/pub/x").status, 200);
}

#[tokio::test]
async fn the_public_access_block_blocks_and_restricts_public_policies() {
    let (gw, c) = Gateway::with_bucket("blk").await;
    put(&c, "blk", "o", b"o").await;
    let e = c.get_public_access_block().bucket("blk").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("NoSuchPublicAccessBlockConfiguration", 404));
    let cfg = |block_policy: bool, restrict: bool| {
        PublicAccessBlockConfiguration::builder()
            .block_public_acls(true)
            .ignore_public_acls(true)
            .block_public_policy(block_policy)
            .restrict_public_buckets(restrict)
            .build()
    };
    c.put_public_access_block().bucket("blk").public_access_block_configuration(cfg(true, false)).send().await.unwrap();
    let got = c.get_public_access_block().bucket("blk").send().await.unwrap();
    let got = got.public_access_block_configuration().unwrap();
    assert_eq!(
        (got.block_public_acls(), got.block_public_policy(), got.restrict_public_buckets()),
        (Some(true), Some(true), Some(false))
    );
    let e = c.put_bucket_policy().bucket("blk").policy(public_read("blk", "")).send().await.unwrap_err();
    assert_eq!(status(&e), 403, "a public policy is blocked");
    let narrow = r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::blk/*",
        "Condition": {"IpAddress": {"aws:SourceIp": "127.0.0.1/32"}}}]}"#;
    set_policy(&c, "blk", narrow).await;
    assert_eq!(anon(&gw, "GET", "/blk/o").status, 200, "a policy narrowed to one address is not public");

    c.put_public_access_block().bucket("blk").public_access_block_configuration(cfg(false, true)).send().await.unwrap();
    set_policy(&c, "blk", &public_read("blk", "")).await;
    assert_eq!(anon(&gw, "GET", "/blk/o").status, 403, "restricted: a public policy grants no anonymous access");
    c.delete_public_access_block().bucket("blk").send().await.unwrap();
    assert_eq!(anon(&gw, "GET", "/blk/o").status, 200);
    assert!(c.get_public_access_block().bucket("blk").send().await.is_err());
}

#[tokio::test]
async fn each_key_of_a_multi_delete_answers_to_the_policy() {
    let (gw, _c) = Gateway::with_bucket("keep").await;
    let bob = gw.tenant("default", "bob", "user");
    mkbucket(&bob.s3, "bobs").await;
    for k in ["keep/a", "tmp/b"] {
        put(&bob.s3, "bobs", k, b"v").await;
    }
    // Bob owns the folder (wd), but his policy protects keep/ from deletes, and every version
    // from being deleted for good.
    let policy = r#"{"Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::bobs/keep/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:DeleteObjectVersion", "Resource": "arn:aws:s3:::bobs/*"}]}"#;
    set_policy(&bob.s3, "bobs", policy).await;
    let id = |k: &str, v: Option<&str>| {
        aws_sdk_s3::types::ObjectIdentifier::builder().key(k).set_version_id(v.map(str::to_owned)).build().unwrap()
    };
    let delete = |objects: Vec<aws_sdk_s3::types::ObjectIdentifier>| {
        let d = aws_sdk_s3::types::Delete::builder().set_objects(Some(objects)).build().unwrap();
        bob.s3.delete_objects().bucket("bobs").delete(d).send()
    };
    let out = delete(vec![id("keep/a", None), id("tmp/b", None)]).await.unwrap();
    let denied: Vec<(&str, &str)> = out.errors().iter().map(|e| (e.key().unwrap(), e.code().unwrap())).collect();
    assert_eq!(denied, [("keep/a", "AccessDenied")]);
    let gone: Vec<&str> = out.deleted().iter().filter_map(|d| d.key()).collect();
    assert_eq!(gone, ["tmp/b"]);
    assert_eq!(get(&bob.s3, "bobs", "keep/a").await, b"v", "a denied key is kept");
    let e = bob.s3.delete_object().bucket("bobs").key("keep/a").send().await.unwrap_err();
    assert_eq!(status(&e), 403, "as a DeleteObject of it is refused");

    // In a versioned bucket a key with a VersionId is a DeleteObjectVersion.
    bob.s3
        .put_bucket_versioning()
        .bucket("bobs")
        .versioning_configuration(
            aws_sdk_s3::types::VersioningConfiguration::builder()
                .status(aws_sdk_s3::types::BucketVersioningStatus::Enabled)
                .build(),
        )
        .send()
        .await
        .unwrap();
    let v = bob.s3.put_object().bucket("bobs").key("tmp/c").body(ByteStream::from_static(b"c")).send().await.unwrap();
    let v = v.version_id().unwrap().to_owned();
    let out = delete(vec![id("tmp/c", Some(&v))]).await.unwrap();
    assert_eq!(out.errors().first().and_then(|e| e.code()), Some("AccessDenied"), "{out:?}");
    let out = delete(vec![id("tmp/c", None)]).await.unwrap();
    assert_eq!(out.deleted().first().and_then(|d| d.delete_marker()), Some(true), "a delete marker is a DeleteObject");
    let kept = bob.s3.get_object().bucket("bobs").key("tmp/c").version_id(&v).send().await.unwrap();
    assert_eq!(kept.body.collect().await.unwrap().into_bytes().as_ref(), b"c");
}

#[tokio::test]
async fn a_copy_reads_its_source_as_a_get_would() {
    let (gw, c) = Gateway::with_bucket("shared").await;
    put(&c, "shared", "ds/a.csv", b"1,2,3").await;
    put(&c, "shared", "ds/secret.csv", b"s").await;
    let bob = gw.tenant("default", "bob", "user");
    mkbucket(&bob.s3, "bobs").await;
    let copy = |src: &str, dst: &str| bob.s3.copy_object().bucket("bobs").key(dst).copy_source(src.to_owned()).send();
    let e = copy("shared/ds/a.csv", "a").await.unwrap_err();
    assert_eq!(status(&e), 403, "bob holds nothing on the source folder");
    // A policy that lets bob read ds/ lets him copy from it, except what it denies him.
    let doc = r#"{"Statement": [
        {"Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::default:user/bob"]}, "Action": "s3:GetObject",
         "Resource": "arn:aws:s3:::shared/ds/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::shared/ds/secret*"}]}"#;
    set_policy(&c, "shared", doc).await;
    copy("shared/ds/a.csv", "a").await.expect("a copy of what the policy lets bob read");
    assert_eq!(get(&bob.s3, "bobs", "a").await, b"1,2,3");
    let e = copy("shared/ds/secret.csv", "s").await.unwrap_err();
    assert_eq!(status(&e), 403, "a denied source cannot be copied out");
    let up = bob.s3.create_multipart_upload().bucket("bobs").key("m").send().await.unwrap();
    let e = bob
        .s3
        .upload_part_copy()
        .bucket("bobs")
        .key("m")
        .upload_id(up.upload_id().unwrap())
        .part_number(1)
        .copy_source("shared/ds/secret.csv")
        .send()
        .await
        .unwrap_err();
    assert_eq!(status(&e), 403, "nor copied into a part");
    // The owner's own Deny holds for his copies too.
    put(&bob.s3, "bobs", "locked/k", b"k").await;
    let deny = r#"{"Statement": [{"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::bobs/locked/*"}]}"#;
    set_policy(&bob.s3, "bobs", deny).await;
    let e = copy("bobs/locked/k", "unlocked").await.unwrap_err();
    assert_eq!(status(&e), 403);
    let e = bob.s3.head_object().bucket("bobs").key("unlocked").send().await.unwrap_err();
    assert_eq!(status(&e), 404, "a refused copy wrote nothing");
}

#[tokio::test]
async fn a_policy_may_grant_multi_deletes_by_key() {
    use base64::Engine as _;
    let (gw, c) = Gateway::with_bucket("drop").await;
    for k in ["incoming/a", "kept/b"] {
        put(&c, "drop", k, b"v").await;
    }
    let doc = r#"<Delete><Object><Key>incoming/a</Key></Object><Object><Key>kept/b</Key></Object></Delete>"#;
    let md5 =
        base64::engine::general_purpose::STANDARD.encode(hex::decode(penstock_tests::md5_hex(doc.as_bytes())).unwrap());
    let anon_delete = || {
        Conn::open(&gw).unsigned(
            "POST",
            "/drop?delete",
            &[("Content-MD5", &md5), ("Content-Type", "application/xml")],
            doc.as_bytes(),
        )
    };
    let a = anon_delete();
    assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessDenied"), "no policy: nothing for anonymous");
    let policy = r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:DeleteObject", "Resource": "arn:aws:s3:::drop/incoming/*"}]}"#;
    set_policy(&c, "drop", policy).await;
    let a = anon_delete();
    assert_eq!(a.status, 200, "{}", String::from_utf8_lossy(&a.body));
    let body = String::from_utf8_lossy(&a.body);
    assert!(body.contains("<Deleted><Key>incoming/a</Key>"), "{body}");
    assert!(body.contains("<Error><Code>AccessDenied</Code><Key>kept/b</Key>"), "{body}");
    assert_eq!(penstock_tests::keys(&c, "drop").await, ["kept/b"]);
}
