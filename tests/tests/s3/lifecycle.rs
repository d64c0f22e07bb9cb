//! Lifecycle rules: the configuration API as S3 validates it, and the worker applying the rules
//! on a gateway whose lifecycle day lasts one second (`lifecycle_day_secs`).

use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{
    AbortIncompleteMultipartUpload, BucketLifecycleConfiguration, BucketVersioningStatus, ExpirationStatus,
    LifecycleExpiration, LifecycleRule, LifecycleRuleAndOperator, LifecycleRuleFilter, NoncurrentVersionExpiration,
    Tag, VersioningConfiguration,
};
use aws_sdk_s3::Client;
use penstock_tests::{code, put, status, Gateway};

/// A gateway whose lifecycle day is one second and whose worker runs five times a second.
async fn fast_gateway(bucket: &str) -> (Gateway, Client) {
    let gw = Gateway::start_with_config("lifecycle_day_secs = 1\nlifecycle_interval_secs = 0.2\n");
    let c = gw.client();
    penstock_tests::mkbucket(&c, bucket).await;
    (gw, c)
}

fn rule(id: &str, filter: LifecycleRuleFilter) -> aws_sdk_s3::types::builders::LifecycleRuleBuilder {
    LifecycleRule::builder().id(id).status(ExpirationStatus::Enabled).filter(filter)
}

fn prefix(p: &str) -> LifecycleRuleFilter {
    LifecycleRuleFilter::builder().prefix(p).build()
}

fn expire_days(d: i32) -> LifecycleExpiration {
    LifecycleExpiration::builder().days(d).build()
}

async fn set_rules(c: &Client, b: &str, rules: Vec<LifecycleRule>) {
    let conf = BucketLifecycleConfiguration::builder().set_rules(Some(rules)).build().unwrap();
    c.put_bucket_lifecycle_configuration().bucket(b).lifecycle_configuration(conf).send().await.unwrap();
}

/// Waits (up to 15 s) until `check` holds.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(15);
    while !check().await {
        assert!(Instant::now() < deadline, "lifecycle never {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn exists(c: &Client, b: &str, k: &str) -> bool {
    c.head_object().bucket(b).key(k).send().await.is_ok()
}

#[tokio::test]
async fn configuration_is_validated_and_round_trips() {
    let (_gw, c) = Gateway::with_bucket("lconf").await;
    let e = c.get_bucket_lifecycle_configuration().bucket("lconf").send().await.unwrap_err();
    assert_eq!((code(&e), status(&e)), ("NoSuchLifecycleConfiguration".to_owned(), 404));
    let and = LifecycleRuleAndOperator::builder()
        .prefix("logs/")
        .tags(Tag::builder().key("tier").value("scratch").build().unwrap())
        .object_size_greater_than(1024)
        .build();
    let rules = vec![
        rule("expire-tmp", prefix("tmp/")).expiration(expire_days(7)).build().unwrap(),
        rule("logs", LifecycleRuleFilter::builder().and(and).build())
            .expiration(expire_days(30))
            .noncurrent_version_expiration(
                NoncurrentVersionExpiration::builder().noncurrent_days(3).newer_noncurrent_versions(2).build(),
            )
            .build()
            .unwrap(),
        rule("uploads", prefix(""))
            .abort_incomplete_multipart_upload(
                AbortIncompleteMultipartUpload::builder().days_after_initiation(2).build(),
            )
            .build()
            .unwrap(),
    ];
    set_rules(&c, "lconf", rules.clone()).await;
    let got = c.get_bucket_lifecycle_configuration().bucket("lconf").send().await.unwrap();
    assert_eq!(got.rules(), &rules[..], "rules answered back as given");

    let bad = |r: LifecycleRule| {
        let c = c.clone();
        async move {
            let conf = BucketLifecycleConfiguration::builder().rules(r).build().unwrap();
            let e = c
                .put_bucket_lifecycle_configuration()
                .bucket("lconf")
                .lifecycle_configuration(conf)
                .send()
                .await
                .unwrap_err();
            code(&e)
        }
    };
    assert_eq!(bad(rule("zero", prefix("")).expiration(expire_days(0)).build().unwrap()).await, "InvalidArgument");
    assert_eq!(bad(rule("none", prefix("")).build().unwrap()).await, "InvalidRequest");
    let both = LifecycleExpiration::builder().days(1).expired_object_delete_marker(true).build();
    assert_eq!(bad(rule("both", prefix("")).expiration(both).build().unwrap()).await, "MalformedXML");
    let tagged = LifecycleRuleFilter::builder().tag(Tag::builder().key("a").value("b").build().unwrap()).build();
    let abort = AbortIncompleteMultipartUpload::builder().days_after_initiation(1).build();
    assert_eq!(
        bad(rule("tagabort", tagged).abort_incomplete_multipart_upload(abort).build().unwrap()).await,
        "InvalidRequest"
    );
    let dup = vec![
        rule("same", prefix("a")).expiration(expire_days(1)).build().unwrap(),
        rule("same", prefix("b")).expiration(expire_days(1)).build().unwrap(),
    ];
    let conf = BucketLifecycleConfiguration::builder().set_rules(Some(dup)).build().unwrap();
    let e =
        c.put_bucket_lifecycle_configuration().bucket("lconf").lifecycle_configuration(conf).send().await.unwrap_err();
    assert_eq!(code(&e), "InvalidArgument");
    // Refused configurations changed nothing.
    let got = c.get_bucket_lifecycle_configuration().bucket("lconf").send().await.unwrap();
    assert_eq!(got.rules().len(), 3);
    c.delete_bucket_lifecycle().bucket("lconf").send().await.unwrap();
    let e = c.get_bucket_lifecycle_configuration().bucket("lconf").send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchLifecycleConfiguration");
}

#[tokio::test]
async fn expiration_deletes_what_the_filter_selects() {
    let (gw, c) = fast_gateway("lexp").await;
    let and = LifecycleRuleAndOperator::builder()
        .prefix("f/")
        .tags(Tag::builder().key("t").value("x").build().unwrap())
        .object_size_greater_than(10)
        .build();
    let rules = vec![
        rule("tmp", prefix("tmp/")).expiration(expire_days(2)).build().unwrap(),
        rule("filtered", LifecycleRuleFilter::builder().and(and).build()).expiration(expire_days(1)).build().unwrap(),
    ];
    set_rules(&c, "lexp", rules).await;
    let out =
        c.put_object().bucket("lexp").key("tmp/a").body(ByteStream::from_static(b"scratch")).send().await.unwrap();
    let announced = out.expiration().unwrap_or_default().to_owned();
    assert!(announced.starts_with("expiry-date=\"") && announced.ends_with("rule-id=\"tmp\""), "{announced}");
    let h = c.head_object().bucket("lexp").key("tmp/a").send().await.unwrap();
    assert_eq!(h.expiration(), Some(announced.as_str()));
    put(&c, "lexp", "keep/b", b"stays").await;
    let tagged = |k: &str, body: &'static [u8], tags: &str| {
        c.put_object().bucket("lexp").key(k).tagging(tags).body(ByteStream::from_static(body)).send()
    };
    tagged("f/match", b"more than ten bytes", "t=x").await.unwrap();
    tagged("f/small", b"tiny", "t=x").await.unwrap();
    tagged("f/other", b"more than ten bytes", "t=y").await.unwrap();
    assert!(c.head_object().bucket("lexp").key("keep/b").send().await.unwrap().expiration().is_none());
    // A file a compute session wrote (no record: its ETag is made from the file) expires too;
    // the worker's delete is conditional on what it listed, and must match it.
    let tmp = gw.folder_dir("keep/b").join("tmp");
    std::fs::create_dir_all(&tmp).unwrap(); // the worker may have pruned it with tmp/a
    std::fs::write(tmp.join("session.bin"), b"from a session").unwrap();
    eventually("expired tmp/a, tmp/session.bin and f/match", || async {
        !exists(&c, "lexp", "tmp/a").await
            && !exists(&c, "lexp", "tmp/session.bin").await
            && !exists(&c, "lexp", "f/match").await
    })
    .await;
    for k in ["keep/b", "f/small", "f/other"] {
        assert!(exists(&c, "lexp", k).await, "{k} does not match a rule and stays");
    }
    let m = gw.admin_get("/metrics").1;
    assert!(m.contains("penstock_lifecycle_actions_total{action=\"expired\"} 3"), "{m}");
    assert!(m.contains("penstock_lifecycle_freed_bytes_total 40"), "7 + 14 + 19 bytes freed");
    assert!(m.contains("penstock_lifecycle_last_run_timestamp_seconds"));
}

#[tokio::test]
async fn noncurrent_versions_and_lone_markers_expire() {
    let (_gw, c) = fast_gateway("lver").await;
    let conf = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
    c.put_bucket_versioning().bucket("lver").versioning_configuration(conf).send().await.unwrap();
    let keep_one = NoncurrentVersionExpiration::builder().noncurrent_days(1).newer_noncurrent_versions(1).build();
    let all = NoncurrentVersionExpiration::builder().noncurrent_days(1).build();
    let rules = vec![
        rule("keep-one", prefix("n/")).noncurrent_version_expiration(keep_one).build().unwrap(),
        rule("markers", prefix("m/"))
            .noncurrent_version_expiration(all)
            .expiration(LifecycleExpiration::builder().expired_object_delete_marker(true).build())
            .build()
            .unwrap(),
    ];
    set_rules(&c, "lver", rules).await;
    let mut ids = Vec::new();
    for n in 0..4 {
        let o = c.put_object().bucket("lver").key("n/k").body(ByteStream::from(vec![n; 100])).send().await.unwrap();
        ids.push(o.version_id().unwrap().to_owned());
    }
    put(&c, "lver", "m/k", b"gone soon").await;
    c.delete_object().bucket("lver").key("m/k").send().await.unwrap();
    let versions = |p: &'static str| {
        let c = c.clone();
        async move {
            let r = c.list_object_versions().bucket("lver").prefix(p).send().await.unwrap();
            let v: Vec<String> = r.versions().iter().map(|v| v.version_id().unwrap().to_owned()).collect();
            (v, r.delete_markers().len())
        }
    };
    eventually("kept only the newest noncurrent version", || async { versions("n/").await.0.len() == 2 }).await;
    assert_eq!(versions("n/").await.0, [ids[3].clone(), ids[2].clone()], "current and the newest noncurrent stay");
    eventually("removed the version and then the lone marker", || async { versions("m/").await == (vec![], 0) }).await;
    // The current version was never touched.
    let o = c.get_object().bucket("lver").key("n/k").send().await.unwrap();
    assert_eq!(o.version_id(), Some(ids[3].as_str()));
}

#[tokio::test]
async fn incomplete_uploads_are_aborted() {
    let (_gw, c) = fast_gateway("lmpu").await;
    let abort = AbortIncompleteMultipartUpload::builder().days_after_initiation(1).build();
    set_rules(&c, "lmpu", vec![rule("abort", prefix("up/")).abort_incomplete_multipart_upload(abort).build().unwrap()])
        .await;
    let stale = penstock_tests::Upload::start(&c, "lmpu", "up/x").await;
    stale.part(1, vec![1u8; 1000]).await;
    let other = penstock_tests::Upload::start(&c, "lmpu", "keep/y").await;
    other.part(1, vec![2u8; 1000]).await;
    let uploads = || async {
        let r = c.list_multipart_uploads().bucket("lmpu").send().await.unwrap();
        r.uploads().iter().map(|u| u.key().unwrap().to_owned()).collect::<Vec<_>>()
    };
    eventually("aborted the stale upload", || async { uploads().await == ["keep/y"] }).await;
    other.abort().await;
}

/// Transitions: validated as S3 validates them, answered back as given, and applied as a change
/// of the storage class label (current versions after their days, noncurrent ones after theirs,
/// never back to a warmer class), the bytes still readable where they are.
#[tokio::test]
async fn transitions_move_objects_to_their_storage_class() {
    use aws_sdk_s3::types::{
        NoncurrentVersionTransition, ObjectStorageClass, StorageClass, Transition, TransitionStorageClass,
    };
    let (_gw, c) = fast_gateway("ltier").await;
    let to = |class: TransitionStorageClass, days: i32| Transition::builder().storage_class(class).days(days).build();
    let bad = |r: LifecycleRule| {
        let c = c.clone();
        async move {
            let conf = BucketLifecycleConfiguration::builder().rules(r).build().unwrap();
            let put = c.put_bucket_lifecycle_configuration().bucket("ltier").lifecycle_configuration(conf);
            code(&put.send().await.unwrap_err())
        }
    };
    let ia_too_soon = rule("ia", prefix("")).transitions(to(TransitionStorageClass::StandardIa, 10)).build().unwrap();
    assert_eq!(bad(ia_too_soon).await, "InvalidArgument");
    let twice = rule("twice", prefix(""))
        .transitions(to(TransitionStorageClass::Glacier, 1))
        .transitions(to(TransitionStorageClass::Glacier, 5))
        .build()
        .unwrap();
    assert_eq!(bad(twice).await, "InvalidArgument");
    let expires_first = rule("early", prefix(""))
        .transitions(to(TransitionStorageClass::Glacier, 5))
        .expiration(expire_days(3))
        .build()
        .unwrap();
    assert_eq!(bad(expires_first).await, "InvalidArgument");
    let negative = rule("neg", prefix("")).transitions(to(TransitionStorageClass::Glacier, -1)).build().unwrap();
    assert_eq!(bad(negative).await, "InvalidArgument");

    let conf = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
    c.put_bucket_versioning().bucket("ltier").versioning_configuration(conf).send().await.unwrap();
    let rules = vec![
        rule("cold", prefix("cold/"))
            .transitions(to(TransitionStorageClass::GlacierIr, 1))
            .transitions(to(TransitionStorageClass::DeepArchive, 3))
            .expiration(expire_days(1000))
            .build()
            .unwrap(),
        rule("old-versions", prefix("v/"))
            .noncurrent_version_transitions(
                NoncurrentVersionTransition::builder()
                    .noncurrent_days(1)
                    .storage_class(TransitionStorageClass::Glacier)
                    .build(),
            )
            .build()
            .unwrap(),
    ];
    set_rules(&c, "ltier", rules.clone()).await;
    let got = c.get_bucket_lifecycle_configuration().bucket("ltier").send().await.unwrap();
    assert_eq!(got.rules(), &rules[..], "rules answered back as given");

    put(&c, "ltier", "cold/a", b"frozen bytes").await;
    put(&c, "ltier", "warm/b", b"stays standard").await;
    c.put_object()
        .bucket("ltier")
        .key("cold/already")
        .storage_class(StorageClass::DeepArchive)
        .body(ByteStream::from_static(b"deep already"))
        .send()
        .await
        .unwrap();
    let class = |k: &'static str| {
        let c = c.clone();
        async move { c.head_object().bucket("ltier").key(k).send().await.unwrap().storage_class().cloned() }
    };
    eventually("moved cold/a to GLACIER_IR", || async { class("cold/a").await == Some(StorageClass::GlacierIr) }).await;
    eventually("moved cold/a on to DEEP_ARCHIVE", || async {
        class("cold/a").await == Some(StorageClass::DeepArchive)
    })
    .await;
    let listed = c.list_objects_v2().bucket("ltier").prefix("cold/a").send().await.unwrap();
    assert_eq!(listed.contents()[0].storage_class(), Some(&ObjectStorageClass::DeepArchive));
    let o = c.get_object().bucket("ltier").key("cold/a").send().await.unwrap();
    assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), b"frozen bytes", "still readable");
    assert_eq!(class("warm/b").await, None, "outside the filter: STANDARD");
    assert_eq!(class("cold/already").await, Some(StorageClass::DeepArchive), "never moved back up");

    // Noncurrent versions move; the current one keeps its class.
    let first = c.put_object().bucket("ltier").key("v/k").body(ByteStream::from_static(b"one")).send().await.unwrap();
    put(&c, "ltier", "v/k", b"two").await;
    let first = first.version_id().unwrap().to_owned();
    let version_class = |v: String| {
        let c = c.clone();
        async move {
            let h = c.head_object().bucket("ltier").key("v/k").version_id(v).send().await.unwrap();
            h.storage_class().cloned()
        }
    };
    eventually("moved the noncurrent version", || async {
        version_class(first.clone()).await == Some(StorageClass::Glacier)
    })
    .await;
    assert_eq!(class("v/k").await, None, "the current version stays STANDARD");
    let versions = c.list_object_versions().bucket("ltier").prefix("v/").send().await.unwrap();
    let old = versions.versions().iter().find(|v| v.version_id() == Some(first.as_str())).unwrap();
    assert_eq!(old.storage_class().map(|s| s.as_str()), Some("GLACIER"));
}

/// RestoreObject: archived objects (GLACIER, DEEP_ARCHIVE) are restored at once for the days
/// asked (202, then 200 while restored), HEAD and GET say so in `x-amz-restore` until the days
/// are over; other classes are refused (403 InvalidObjectState) and change nothing. The bytes
/// read in every class, restored or not.
#[tokio::test]
async fn archived_objects_restore_at_once() {
    use aws_sdk_s3::types::StorageClass;
    let (gw, c) = fast_gateway("lrest").await;
    put(&c, "lrest", "plain", b"standard bytes").await;
    c.put_object()
        .bucket("lrest")
        .key("cold")
        .storage_class(StorageClass::Glacier)
        .body(ByteStream::from_static(b"archived bytes"))
        .send()
        .await
        .unwrap();
    let raw = penstock_client::Client::new(&gw.endpoint, penstock_tests::ACCESS_KEY, penstock_tests::SECRET_KEY);
    // Answers the status and the error code (empty on success).
    let restore = |k: &'static str, days: Option<i32>| {
        let (raw, url) = (raw.clone(), format!("{}/lrest/{k}?restore", gw.endpoint));
        async move {
            let days = days.map(|d| format!("<Days>{d}</Days>")).unwrap_or_default();
            let body =
                format!("<RestoreRequest xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{days}</RestoreRequest>");
            let r = raw.send(http::Method::POST, &url, &[], body.into()).await.unwrap();
            let text = String::from_utf8_lossy(&r.body).into_owned();
            let code = text.split("<Code>").nth(1).and_then(|c| c.split("</Code>").next()).unwrap_or("").to_owned();
            (r.status.as_u16(), code)
        }
    };
    let head_restore = |k: &'static str| {
        let c = c.clone();
        async move { c.head_object().bucket("lrest").key(k).send().await.unwrap().restore().map(str::to_owned) }
    };
    assert_eq!(restore("plain", Some(3)).await, (403, "InvalidObjectState".to_owned()));
    assert_eq!(head_restore("plain").await, None);
    assert_eq!(restore("cold", None).await, (400, "InvalidArgument".to_owned()));
    assert_eq!(restore("missing", Some(1)).await, (404, "NoSuchKey".to_owned()));

    assert_eq!(head_restore("cold").await, None, "not restored yet");
    let got = c.get_object().bucket("lrest").key("cold").send().await.unwrap();
    assert_eq!(got.body.collect().await.unwrap().into_bytes().as_ref(), b"archived bytes", "reads before a restore");
    assert_eq!(restore("cold", Some(3)).await, (202, String::new()));
    let h = head_restore("cold").await.expect("restored");
    assert!(h.starts_with("ongoing-request=\"false\", expiry-date=\"") && h.ends_with(" GMT\""), "{h}");
    let got = c.get_object().bucket("lrest").key("cold").send().await.unwrap();
    assert_eq!(got.restore(), Some(h.as_str()), "GET says it too");
    assert_eq!(restore("cold", Some(3)).await, (200, String::new()), "already restored");
    // Listings answer the restore where asked for it, and only for a restored object.
    use aws_sdk_s3::types::OptionalObjectAttributes;
    let listed = c
        .list_objects_v2()
        .bucket("lrest")
        .optional_object_attributes(OptionalObjectAttributes::RestoreStatus)
        .send()
        .await
        .unwrap();
    let status = |k: &str| listed.contents().iter().find(|o| o.key() == Some(k)).unwrap().restore_status().cloned();
    let cold = status("cold").expect("a restore status for the restored object");
    assert_eq!(cold.is_restore_in_progress(), Some(false));
    assert!(cold.restore_expiry_date().is_some());
    assert_eq!(status("plain"), None);
    let unasked = c.list_objects_v2().bucket("lrest").send().await.unwrap();
    assert!(unasked.contents().iter().all(|o| o.restore_status().is_none()), "not asked for");
    // Three one-second days later the restore is over.
    eventually("ended the restore", || async { head_restore("cold").await.is_none() }).await;
    let got = c.get_object().bucket("lrest").key("cold").send().await.unwrap();
    assert_eq!(got.body.collect().await.unwrap().into_bytes().as_ref(), b"archived bytes");
}
