//! Sharing beyond tenancy: bucket policies (anonymous and cross-user access, explicit denies,
//! conditions), policy status and the public access block, through aws-sdk-s3 and unsigned HTTP.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::PublicAccessBlockConfiguration;
use aws_sdk_s3::Client;
use penstock_tests::raw::{Answer, Conn};
use penstock_tests::s3::{code, mkbucket, status};
use penstock_tests::{get, put, Gateway};

fn anon(gw: &Gateway, method: &str, path: &str) -> Answer {
    Conn::open(gw).unsigned(method, path, &[], b"")
}

fn anon_put(gw: &Gateway, path: &str, body: &[u8]) -> Answer {
    Conn::open(gw).unsigned("PUT", path, &[], body)
}

/// The S3 error code in an XML error body.
fn xml_code(a: &Answer) -> String {
    let b = String::from_utf8_lossy(&a.body);
    b.split("<Code>").nth(1).and_then(|r| r.split("</Code>").next()).unwrap_or_default().to_owned()
}

async fn set_policy(c: &Client, bucket: &str, policy: &str) {
    c.put_bucket_policy().bucket(bucket).policy(policy).send().await.unwrap();
}

fn public_read(bucket: &str, prefix: &str) -> String {
    format!(
        r#"{{"Version": "2012-10-17", "Statement": [{{"Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
            "Action": "s3:GetObject", "Resource": "arn:aws:s3:::{bucket}/{prefix}*"}}]}}"#
    )
}

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
async fn cors_rules_answer_preflights_and_mark_every_response() {
    use aws_sdk_s3::types::{CorsConfiguration, CorsRule};
    let (gw, c) = Gateway::with_bucket("web").await;
    put(&c, "web", "page.txt", b"hi").await;
    let pre = |origin: &'static str, method: &'static str| {
        let h = [
            ("Origin", origin),
            ("Access-Control-Request-Method", method),
            ("Access-Control-Request-Headers", "content-type, x-amz-date"),
        ];
        Conn::open(&gw).unsigned("OPTIONS", "/web/page.txt", &h, b"")
    };
    let a = pre("https://app.lab", "PUT");
    assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessForbidden"), "no rules, no CORS");
    let rule = CorsRule::builder()
        .allowed_origins("https://*.lab")
        .allowed_methods("GET")
        .allowed_methods("PUT")
        .allowed_headers("*")
        .expose_headers("ETag")
        .max_age_seconds(300)
        .build()
        .unwrap();
    let conf = CorsConfiguration::builder().cors_rules(rule).build().unwrap();
    c.put_bucket_cors().bucket("web").cors_configuration(conf).send().await.unwrap();
    let a = pre("https://app.lab", "PUT");
    assert_eq!(a.status, 200);
    assert_eq!(a.header("access-control-allow-origin"), Some("https://app.lab"));
    assert_eq!(a.header("access-control-allow-headers"), Some("content-type, x-amz-date"));
    assert_eq!(a.header("access-control-max-age"), Some("300"));
    assert_eq!(pre("https://app.other", "PUT").status, 403);
    assert_eq!(pre("https://app.lab", "DELETE").status, 403);
    let a = Conn::open(&gw).unsigned("OPTIONS", "/web/page.txt", &[("Origin", "https://app.lab")], b"");
    assert_eq!((a.status, xml_code(&a).as_str()), (400, "BadRequest"), "a preflight names its method");

    // Actual responses, errors included, carry the headers for an allowed origin only.
    let get =
        |origin: &'static str, path: &'static str| Conn::open(&gw).unsigned("GET", path, &[("Origin", origin)], b"");
    let a = get("https://app.lab", "/web/page.txt");
    assert_eq!(a.status, 403, "anonymous, no policy");
    assert_eq!(a.header("access-control-allow-origin"), Some("https://app.lab"));
    assert_eq!(a.header("access-control-expose-headers"), Some("ETag"));
    assert!(a.header("vary").is_some_and(|v| v.contains("Origin")));
    let a = get("https://evil.example", "/web/page.txt");
    assert_eq!(a.header("access-control-allow-origin"), None);
    // A rule is matched on the request's method, or on the one an Access-Control-Request-Method
    // header names where an actual request carries one (as RGW does; browsers never send it so).
    let send = |method: &'static str, asked: Option<&'static str>| {
        let mut h = vec![("Origin", "https://app.lab")];
        h.extend(asked.map(|m| ("Access-Control-Request-Method", m)));
        Conn::open(&gw).unsigned(method, "/web/page.txt", &h, b"")
    };
    assert_eq!(send("DELETE", None).header("access-control-allow-origin"), None, "no rule allows DELETE");
    let a = send("DELETE", Some("GET"));
    assert_eq!(a.header("access-control-allow-origin"), Some("https://app.lab"));
    assert_eq!(send("GET", Some("DELETE")).header("access-control-allow-origin"), None);
    let rules = c.get_bucket_cors().bucket("web").send().await.unwrap();
    assert_eq!(rules.cors_rules()[0].allowed_origins(), ["https://*.lab"]);
    c.delete_bucket_cors().bucket("web").send().await.unwrap();
    let e = c.get_bucket_cors().bucket("web").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("NoSuchCORSConfiguration", 404));
    assert_eq!(pre("https://app.lab", "PUT").status, 403);
}

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
        BucketCannedAcl, ObjectCannedAcl, ObjectOwnership, OwnershipControls, OwnershipControlsRule, Permission, Type,
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

/// An unsigned browser-form upload of `body` as file `file_name` with form field `key`.
fn anon_form(gw: &Gateway, bucket: &str, key: &str, file_name: &str, body: &[u8]) -> Answer {
    anon_form_with(gw, bucket, key, &[], file_name, body)
}

/// [`anon_form`] with more form fields before the file.
fn anon_form_with(
    gw: &Gateway,
    bucket: &str,
    key: &str,
    fields: &[(&str, &str)],
    file_name: &str,
    body: &[u8],
) -> Answer {
    let b = "----penstock-form";
    let mut form = format!("--{b}\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\n{key}\r\n");
    for (name, value) in fields {
        form += &format!("--{b}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n");
    }
    let mut form = format!(
        "{form}--{b}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{file_name}\"\r\n\
         Content-Type: application/octet-stream\r\n\r\n"
    )
    .into_bytes();
    form.extend_from_slice(body);
    form.extend_from_slice(format!("\r\n--{b}--\r\n").as_bytes());
    let ct = format!("multipart/form-data; boundary={b}");
    Conn::open(gw).unsigned("POST", &format!("/{bucket}"), &[("Content-Type", &ct)], &form)
}

#[tokio::test]
async fn form_uploads_are_authorized_for_the_key_they_write() {
    let (gw, c) = Gateway::with_bucket("drop").await;
    // Anyone may upload under incoming/, except under incoming/private/.
    let policy = r#"{"Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::drop/incoming/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::drop/incoming/private/*"}]}"#;
    set_policy(&c, "drop", policy).await;
    assert_eq!(anon_form(&gw, "drop", "incoming/a.txt", "x", b"a").status, 204);
    assert_eq!(get(&c, "drop", "incoming/a.txt").await, b"a");
    // The key written is the one authorized: `${filename}` is replaced before the check.
    assert_eq!(anon_form(&gw, "drop", "incoming/${filename}", "b.txt", b"b").status, 204);
    assert_eq!(get(&c, "drop", "incoming/b.txt").await, b"b");
    // A path in the file's name is dropped, as S3 drops it: it cannot steer the key elsewhere.
    assert_eq!(anon_form(&gw, "drop", "incoming/${filename}", "private/d", b"d").status, 204);
    assert_eq!(get(&c, "drop", "incoming/d").await, b"d");
    for (key, file_name) in [
        ("incoming/private/c", "x"),
        ("elsewhere/e", "x"),
        ("${filename}", "incoming/private/f"),
        ("${filename}", "incoming\\g"),
    ] {
        let a = anon_form(&gw, "drop", key, file_name, b"no");
        assert_eq!((a.status, xml_code(&a).as_str()), (403, "AccessDenied"), "{key} as {file_name}");
    }
    let listed = c.list_objects_v2().bucket("drop").send().await.unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["incoming/a.txt", "incoming/b.txt", "incoming/d"], "refused uploads wrote nothing");
}

/// A form's object lock fields are the condition keys a PutObject's headers would be.
#[tokio::test]
async fn form_uploads_answer_to_object_lock_conditions() {
    let gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("vault-drop").object_lock_enabled_for_bucket(true).send().await.unwrap();
    let policy = r#"{"Statement": [
        {"Effect": "Allow", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::vault-drop/*"},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::vault-drop/*",
         "Condition": {"StringEquals": {"s3:object-lock-mode": "COMPLIANCE"}}}]}"#;
    set_policy(&c, "vault-drop", policy).await;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let until = aws_sdk_s3::primitives::DateTime::from_secs(now + 300);
    let until = until.fmt(aws_sdk_s3::primitives::DateTimeFormat::DateTime).unwrap();
    let form = |mode: &str| {
        let fields = [("x-amz-object-lock-mode", mode), ("x-amz-object-lock-retain-until-date", until.as_str())];
        anon_form_with(&gw, "vault-drop", &format!("in/{mode}"), &fields, "x", b"locked")
    };
    let refused = form("COMPLIANCE");
    assert_eq!((refused.status, xml_code(&refused).as_str()), (403, "AccessDenied"));
    assert_eq!(form("GOVERNANCE").status, 204);
    let listed = c.list_objects_v2().bucket("vault-drop").send().await.unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["in/GOVERNANCE"]);
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
