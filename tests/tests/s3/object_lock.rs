//! Object lock: bucket configuration, retention and legal hold per version, and the deletes and
//! retention changes they refuse, as S3 answers them.

use std::time::{Duration, SystemTime};

use aws_sdk_s3::primitives::{ByteStream, DateTime};
use aws_sdk_s3::types::{
    BucketVersioningStatus, CompletedMultipartUpload, CompletedPart, Delete, ExpirationStatus, LifecycleRule,
    LifecycleRuleFilter, NoncurrentVersionExpiration, ObjectIdentifier, ObjectLockConfiguration, ObjectLockEnabled,
    ObjectLockLegalHold, ObjectLockLegalHoldStatus, ObjectLockMode, ObjectLockRetention, ObjectLockRetentionMode,
    ObjectLockRule, VersioningConfiguration,
};
use aws_sdk_s3::Client;
use penstock_tests::{code, put, status, Gateway};

async fn lock_bucket(c: &Client, b: &str) {
    c.create_bucket().bucket(b).object_lock_enabled_for_bucket(true).send().await.unwrap();
}

fn at(secs_from_now: i64) -> DateTime {
    let now = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).unwrap().as_secs() as i64;
    DateTime::from_secs(now + secs_from_now)
}

fn retention(mode: ObjectLockRetentionMode, until: DateTime) -> ObjectLockRetention {
    ObjectLockRetention::builder().mode(mode).retain_until_date(until).build()
}

fn hold(on: bool) -> ObjectLockLegalHold {
    let s = if on { ObjectLockLegalHoldStatus::On } else { ObjectLockLegalHoldStatus::Off };
    ObjectLockLegalHold::builder().status(s).build()
}

fn default_rule(mode: ObjectLockRetentionMode, days: Option<i32>, years: Option<i32>) -> ObjectLockConfiguration {
    let d = aws_sdk_s3::types::DefaultRetention::builder().mode(mode).set_days(days).set_years(years).build();
    ObjectLockConfiguration::builder()
        .object_lock_enabled(ObjectLockEnabled::Enabled)
        .rule(ObjectLockRule::builder().default_retention(d).build())
        .build()
}

/// PutObjectRetention of `key` in bucket `vault` (version `v`, or the current one) with `mode`
/// until `until`, with or without the bypass header: the error code S3 answered, if any.
async fn set_retention(
    c: &Client,
    key: &str,
    v: Option<&str>,
    mode: ObjectLockRetentionMode,
    until: DateTime,
    bypass: bool,
) -> Result<(), String> {
    let r = c
        .put_object_retention()
        .bucket("vault")
        .key(key)
        .set_version_id(v.map(str::to_owned))
        .retention(retention(mode, until))
        .bypass_governance_retention(bypass)
        .send()
        .await;
    r.map(drop).map_err(|e| code(&e))
}

async fn put_version(c: &Client, b: &str, k: &str) -> String {
    let r = c.put_object().bucket(b).key(k).body(ByteStream::from_static(b"abc")).send().await.unwrap();
    r.version_id().unwrap().to_owned()
}

#[tokio::test]
async fn bucket_configuration_follows_s3() {
    let gw = Gateway::start();
    let c = gw.client();
    lock_bucket(&c, "locked").await;
    let v = c.get_bucket_versioning().bucket("locked").send().await.unwrap();
    assert_eq!(v.status(), Some(&BucketVersioningStatus::Enabled), "object lock versions the bucket");
    let got = c.get_object_lock_configuration().bucket("locked").send().await.unwrap();
    let conf = got.object_lock_configuration().unwrap();
    assert_eq!(conf.object_lock_enabled(), Some(&ObjectLockEnabled::Enabled));
    assert!(conf.rule().is_none());

    let rule = default_rule(ObjectLockRetentionMode::Compliance, None, Some(1));
    c.put_object_lock_configuration().bucket("locked").object_lock_configuration(rule.clone()).send().await.unwrap();
    let got = c.get_object_lock_configuration().bucket("locked").send().await.unwrap();
    assert_eq!(got.object_lock_configuration(), Some(&rule));

    for (bad, want) in [
        (default_rule(ObjectLockRetentionMode::Governance, Some(1), Some(1)), "MalformedXML"),
        (default_rule(ObjectLockRetentionMode::Governance, Some(0), None), "InvalidRetentionPeriod"),
        (default_rule(ObjectLockRetentionMode::from("governance"), Some(1), None), "MalformedXML"),
    ] {
        let e =
            c.put_object_lock_configuration().bucket("locked").object_lock_configuration(bad).send().await.unwrap_err();
        assert_eq!((code(&e).as_str(), status(&e)), (want, 400));
    }
    let got = c.get_object_lock_configuration().bucket("locked").send().await.unwrap();
    assert_eq!(got.object_lock_configuration(), Some(&rule), "refused configurations changed nothing");

    let suspend = VersioningConfiguration::builder().status(BucketVersioningStatus::Suspended).build();
    let e = c.put_bucket_versioning().bucket("locked").versioning_configuration(suspend).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidBucketState", 409));

    // A bucket made without object lock: none to read, none to set until it is versioned.
    penstock_tests::mkbucket(&c, "plain").await;
    let e = c.get_object_lock_configuration().bucket("plain").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("ObjectLockConfigurationNotFoundError", 404));
    let enable = ObjectLockConfiguration::builder().object_lock_enabled(ObjectLockEnabled::Enabled).build();
    let e = c
        .put_object_lock_configuration()
        .bucket("plain")
        .object_lock_configuration(enable.clone())
        .send()
        .await
        .unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("InvalidBucketState", 409));
    put(&c, "plain", "k", b"abc").await;
    for e in [
        code(&c.get_object_retention().bucket("plain").key("k").send().await.unwrap_err()),
        code(&c.get_object_legal_hold().bucket("plain").key("k").send().await.unwrap_err()),
        code(&c.put_object_legal_hold().bucket("plain").key("k").legal_hold(hold(true)).send().await.unwrap_err()),
        code(
            &c.put_object()
                .bucket("plain")
                .key("k2")
                .object_lock_mode(ObjectLockMode::Governance)
                .object_lock_retain_until_date(at(3600))
                .body(ByteStream::from_static(b"x"))
                .send()
                .await
                .unwrap_err(),
        ),
    ] {
        assert_eq!(e, "InvalidRequest");
    }
    let enabled = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
    c.put_bucket_versioning().bucket("plain").versioning_configuration(enabled).send().await.unwrap();
    c.put_object_lock_configuration().bucket("plain").object_lock_configuration(enable).send().await.unwrap();
    c.get_object_lock_configuration().bucket("plain").send().await.unwrap();
}

#[tokio::test]
async fn locked_versions_are_not_deleted() {
    let gw = Gateway::start();
    let c = gw.client();
    lock_bucket(&c, "vault").await;

    // Retention set afterwards: GOVERNANCE holds against deletes by id unless bypassed.
    let v1 = put_version(&c, "vault", "gov").await;
    let e = c.get_object_retention().bucket("vault").key("gov").send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("NoSuchObjectLockConfiguration", 404));
    let until = at(3600);
    set_retention(&c, "gov", None, ObjectLockRetentionMode::Governance, until, false).await.unwrap();
    let r = c.get_object_retention().bucket("vault").key("gov").version_id(&v1).send().await.unwrap();
    assert_eq!(r.retention().unwrap().retain_until_date(), Some(&until));
    let head = c.head_object().bucket("vault").key("gov").send().await.unwrap();
    assert_eq!(head.object_lock_mode(), Some(&ObjectLockMode::Governance));
    assert_eq!(head.object_lock_retain_until_date(), Some(&until));
    let e = c.delete_object().bucket("vault").key("gov").version_id(&v1).send().await.unwrap_err();
    assert_eq!((code(&e).as_str(), status(&e)), ("AccessDenied", 403));
    // A delete without a version id leaves a marker over the locked version, which stays.
    let m = c.delete_object().bucket("vault").key("gov").send().await.unwrap();
    assert_eq!(m.delete_marker(), Some(true));
    let got = c.get_object().bucket("vault").key("gov").version_id(&v1).send().await.unwrap();
    assert_eq!(got.body.collect().await.unwrap().into_bytes().as_ref(), b"abc");
    // Shortening needs the bypass; so does a delete.
    let (gov, sooner) = (ObjectLockRetentionMode::Governance, at(60));
    let denied = Err("AccessDenied".to_owned());
    assert_eq!(set_retention(&c, "gov", Some(&v1), gov.clone(), sooner, false).await, denied);
    set_retention(&c, "gov", Some(&v1), gov.clone(), sooner, true).await.unwrap();

    // A user who may write but not delete cannot bypass.
    let rw = gw.tenant("default", "writer", "user");
    gw.admin(&["vfolder", "grant", "default", "vault", &rw.id, "rw"]);
    assert_eq!(set_retention(&rw.s3, "gov", Some(&v1), gov.clone(), at(30), true).await, denied);
    // A bucket policy may grant the bypass (s3:BypassGovernanceRetention) to that user...
    let policy = |effect: &str, who: &str, actions: &str| {
        format!(
            r#"{{"Version":"2012-10-17","Statement":[{{"Effect":"{effect}","Principal":{{"AWS":"arn:aws:iam::default:user/{who}"}},"Action":{actions},"Resource":"arn:aws:s3:::vault/*"}}]}}"#
        )
    };
    let grant = policy("Allow", "writer", r#"["s3:PutObjectRetention","s3:BypassGovernanceRetention"]"#);
    c.put_bucket_policy().bucket("vault").policy(grant).send().await.unwrap();
    set_retention(&rw.s3, "gov", Some(&v1), gov.clone(), at(45), true).await.unwrap();
    // ...or deny it to a user whose folder permission includes it.
    let wd = gw.tenant("default", "deleter", "user");
    gw.admin(&["vfolder", "grant", "default", "vault", &wd.id, "wd"]);
    let deny = policy("Deny", "deleter", r#""s3:BypassGovernanceRetention""#);
    c.put_bucket_policy().bucket("vault").policy(deny).send().await.unwrap();
    let e = wd
        .s3
        .delete_object()
        .bucket("vault")
        .key("gov")
        .version_id(&v1)
        .bypass_governance_retention(true)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    c.delete_bucket_policy().bucket("vault").send().await.unwrap();
    set_retention(&wd.s3, "gov", Some(&v1), gov.clone(), at(40), true).await.unwrap();

    // DeleteObjects: a locked entry fails on its own; with the bypass it goes.
    let free = put_version(&c, "vault", "free").await;
    let del = |bypass: bool, objects: Vec<ObjectIdentifier>| {
        let c = c.clone();
        async move {
            let d = Delete::builder().set_objects(Some(objects)).build().unwrap();
            c.delete_objects().bucket("vault").delete(d).bypass_governance_retention(bypass).send().await.unwrap()
        }
    };
    let id = |k: &str, v: &str| ObjectIdentifier::builder().key(k).version_id(v).build().unwrap();
    let r = del(false, vec![id("gov", &v1), id("free", &free)]).await;
    assert_eq!(r.deleted().len(), 1);
    assert_eq!(r.errors().len(), 1);
    assert_eq!((r.errors()[0].key(), r.errors()[0].code()), (Some("gov"), Some("AccessDenied")));
    let r = del(true, vec![id("gov", &v1)]).await;
    assert_eq!((r.deleted().len(), r.errors().len()), (1, 0));
    let e = c.get_object().bucket("vault").key("gov").version_id(&v1).send().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchVersion");

    // COMPLIANCE: no bypass, no shortening, no change of mode; a later date is fine.
    let v2 = c
        .put_object()
        .bucket("vault")
        .key("comp")
        .object_lock_mode(ObjectLockMode::Compliance)
        .object_lock_retain_until_date(at(3))
        .body(ByteStream::from_static(b"kept"))
        .send()
        .await
        .unwrap()
        .version_id()
        .unwrap()
        .to_owned();
    assert_eq!(set_retention(&c, "comp", None, gov, at(3600), true).await, denied);
    let e = c
        .delete_object()
        .bucket("vault")
        .key("comp")
        .version_id(&v2)
        .bypass_governance_retention(true)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    // Once its date has passed, it goes like any version.
    tokio::time::sleep(Duration::from_secs(4)).await;
    c.delete_object().bucket("vault").key("comp").version_id(&v2).send().await.unwrap();

    // Legal hold: holds even against the bypass, until it is off.
    let v3 = put_version(&c, "vault", "held").await;
    c.put_object_legal_hold().bucket("vault").key("held").legal_hold(hold(true)).send().await.unwrap();
    let h = c.get_object_legal_hold().bucket("vault").key("held").send().await.unwrap();
    assert_eq!(h.legal_hold().and_then(|h| h.status()), Some(&ObjectLockLegalHoldStatus::On));
    let e = c
        .delete_object()
        .bucket("vault")
        .key("held")
        .version_id(&v3)
        .bypass_governance_retention(true)
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    let e = c
        .put_object_legal_hold()
        .bucket("vault")
        .key("held")
        .legal_hold(ObjectLockLegalHold::builder().status(ObjectLockLegalHoldStatus::from("abc")).build())
        .send()
        .await
        .unwrap_err();
    assert_eq!(code(&e), "MalformedXML");
    c.put_object_legal_hold().bucket("vault").key("held").legal_hold(hold(false)).send().await.unwrap();
    c.delete_object().bucket("vault").key("held").version_id(&v3).send().await.unwrap();
}

#[tokio::test]
async fn new_versions_take_their_lock_from_their_write_or_the_default() {
    let gw = Gateway::start();
    let c = gw.client();
    lock_bucket(&c, "dflt").await;
    c.put_object_lock_configuration()
        .bucket("dflt")
        .object_lock_configuration(default_rule(ObjectLockRetentionMode::Governance, Some(1), None))
        .send()
        .await
        .unwrap();
    let v = put_version(&c, "dflt", "a").await;
    let r = c.get_object_retention().bucket("dflt").key("a").send().await.unwrap();
    let r = r.retention().unwrap();
    assert_eq!(r.mode(), Some(&ObjectLockRetentionMode::Governance));
    let until = r.retain_until_date().unwrap().secs();
    let day = at(86_400).secs();
    assert!((until - day).abs() < 60, "a day's default retention ends {until}, not about {day}");
    let e = c.delete_object().bucket("dflt").key("a").version_id(&v).send().await.unwrap_err();
    assert_eq!(code(&e), "AccessDenied");

    // A multipart upload's lock is given when it starts.
    let later = at(7200);
    let up = c
        .create_multipart_upload()
        .bucket("dflt")
        .key("mp")
        .object_lock_mode(ObjectLockMode::Compliance)
        .object_lock_retain_until_date(later)
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .send()
        .await
        .unwrap();
    let part = c
        .upload_part()
        .bucket("dflt")
        .key("mp")
        .upload_id(up.upload_id().unwrap())
        .part_number(1)
        .body(ByteStream::from_static(b"part"))
        .send()
        .await
        .unwrap();
    let done = CompletedMultipartUpload::builder()
        .parts(CompletedPart::builder().part_number(1).e_tag(part.e_tag().unwrap()).build())
        .build();
    c.complete_multipart_upload()
        .bucket("dflt")
        .key("mp")
        .upload_id(up.upload_id().unwrap())
        .multipart_upload(done)
        .send()
        .await
        .unwrap();
    let got = c.get_object().bucket("dflt").key("mp").send().await.unwrap();
    assert_eq!(got.object_lock_mode(), Some(&ObjectLockMode::Compliance));
    assert_eq!(got.object_lock_retain_until_date(), Some(&later));
    assert_eq!(got.object_lock_legal_hold_status(), Some(&ObjectLockLegalHoldStatus::On));

    // A copy takes the default, not its source's lock; its own request's lock wins.
    c.copy_object().bucket("dflt").key("cp").copy_source("dflt/mp").send().await.unwrap();
    let h = c.head_object().bucket("dflt").key("cp").send().await.unwrap();
    assert_eq!(h.object_lock_mode(), Some(&ObjectLockMode::Governance));
    assert_eq!(h.object_lock_legal_hold_status(), None);

    // Malformed locks on a write are refused and write nothing.
    for (mode, until, want) in [
        (Some(ObjectLockMode::Governance), None, "InvalidArgument"),
        (Some(ObjectLockMode::from("WORM")), Some(at(60)), "InvalidArgument"),
        (Some(ObjectLockMode::Governance), Some(at(-60)), "InvalidArgument"),
    ] {
        let e = c
            .put_object()
            .bucket("dflt")
            .key("bad")
            .set_object_lock_mode(mode)
            .set_object_lock_retain_until_date(until)
            .body(ByteStream::from_static(b"x"))
            .send()
            .await
            .unwrap_err();
        assert_eq!(code(&e), want);
    }
    assert!(c.head_object().bucket("dflt").key("bad").send().await.is_err());

    // A directory marker keeps one version: its lock holds against the delete that would end it.
    c.put_object()
        .bucket("dflt")
        .key("dir/")
        .object_lock_legal_hold_status(ObjectLockLegalHoldStatus::On)
        .body(ByteStream::from_static(b""))
        .send()
        .await
        .unwrap();
    let e = c.delete_object().bucket("dflt").key("dir/").send().await.unwrap_err();
    assert_eq!(code(&e), "AccessDenied");
    c.head_object().bucket("dflt").key("dir/").send().await.unwrap();
    c.put_object_legal_hold().bucket("dflt").key("dir/").legal_hold(hold(false)).send().await.unwrap();
    c.delete_object().bucket("dflt").key("dir/").bypass_governance_retention(true).send().await.unwrap();
    assert!(c.head_object().bucket("dflt").key("dir/").send().await.is_err());
}

/// Lifecycle rules never remove a locked version; they remove its unlocked neighbours.
#[tokio::test]
async fn lifecycle_keeps_locked_versions() {
    let gw = Gateway::start_with_config("lifecycle_day_secs = 1\nlifecycle_interval_secs = 0.2\n");
    let c = gw.client();
    lock_bucket(&c, "aging").await;
    let locked = put_version(&c, "aging", "k").await;
    c.put_object_legal_hold().bucket("aging").key("k").version_id(&locked).legal_hold(hold(true)).send().await.unwrap();
    let free = put_version(&c, "aging", "k").await;
    put_version(&c, "aging", "k").await;
    let rule = LifecycleRule::builder()
        .id("old")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("").build())
        .noncurrent_version_expiration(NoncurrentVersionExpiration::builder().noncurrent_days(1).build())
        .build()
        .unwrap();
    let conf = aws_sdk_s3::types::BucketLifecycleConfiguration::builder().rules(rule).build().unwrap();
    c.put_bucket_lifecycle_configuration().bucket("aging").lifecycle_configuration(conf).send().await.unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let gone = c.head_object().bucket("aging").key("k").version_id(&free).send().await.is_err();
        if gone {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the unlocked noncurrent version never expired");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // A few more passes: the held version is still there.
    tokio::time::sleep(Duration::from_secs(2)).await;
    c.head_object().bucket("aging").key("k").version_id(&locked).send().await.unwrap();
}

/// Bucket policies bound object lock through its condition keys, read from PutObject's headers
/// and from the documents of PutObjectRetention and PutObjectLegalHold: a Deny caps how long
/// the bucket's owner may lock, and an Allow lets another user set short retentions only.
#[tokio::test]
async fn policies_bound_locks_through_their_condition_keys() {
    let gw = Gateway::start();
    let owner = gw.tenant("default", "lockowner", "user");
    let other = gw.tenant("default", "auditor", "user");
    let c = &owner.s3;
    c.create_bucket().bucket("bounded").object_lock_enabled_for_bucket(true).send().await.unwrap();
    let policy = r#"{"Version": "2012-10-17", "Statement": [
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObjectRetention",
         "Resource": "arn:aws:s3:::bounded/*",
         "Condition": {"NumericGreaterThan": {"s3:object-lock-remaining-retention-days": "10"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObject", "Resource": "arn:aws:s3:::bounded/*",
         "Condition": {"StringEquals": {"s3:object-lock-mode": "COMPLIANCE"}}},
        {"Effect": "Deny", "Principal": "*", "Action": "s3:PutObjectLegalHold",
         "Resource": "arn:aws:s3:::bounded/*",
         "Condition": {"StringEquals": {"s3:object-lock-legal-hold": "OFF"}}},
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::default:user/auditor"},
         "Action": "s3:PutObjectRetention", "Resource": "arn:aws:s3:::bounded/*",
         "Condition": {"NumericLessThanEquals": {"s3:object-lock-remaining-retention-days": "3"}}}
    ]}"#;
    c.put_bucket_policy().bucket("bounded").policy(policy).send().await.unwrap();
    put(c, "bounded", "k", b"abc").await;
    let retain = |who: &Client, days: i64| {
        let r = who
            .put_object_retention()
            .bucket("bounded")
            .key("k")
            .retention(retention(ObjectLockRetentionMode::Governance, at(days * 86_400 - 60)));
        async move { r.send().await.map(drop).map_err(|e| code(&e)) }
    };
    assert_eq!(retain(c, 5).await, Ok(()));
    assert_eq!(retain(c, 20).await.unwrap_err(), "AccessDenied", "beyond the policy's 10 days");
    assert_eq!(retain(&other.s3, 20).await.unwrap_err(), "AccessDenied", "the Allow does not reach 20 days");
    assert_eq!(retain(&other.s3, 7).await.unwrap_err(), "AccessDenied", "nor 7");
    let r = other.s3.put_object_retention().bucket("bounded").key("k").version_id("nope");
    let e = r.retention(retention(ObjectLockRetentionMode::Governance, at(86_400))).send().await;
    assert_ne!(e.map(drop).map_err(|e| code(&e)), Err("AccessDenied".to_owned()), "but reaches 1 day");

    let locked_put = |mode: ObjectLockMode| {
        c.put_object()
            .bucket("bounded")
            .key("new")
            .body(ByteStream::from_static(b"x"))
            .object_lock_mode(mode)
            .object_lock_retain_until_date(at(3600))
            .send()
    };
    assert_eq!(code(&locked_put(ObjectLockMode::Compliance).await.unwrap_err()), "AccessDenied");
    locked_put(ObjectLockMode::Governance).await.unwrap();

    let set_hold = |on: bool| c.put_object_legal_hold().bucket("bounded").key("k").legal_hold(hold(on)).send();
    set_hold(true).await.unwrap();
    assert_eq!(code(&set_hold(false).await.unwrap_err()), "AccessDenied");
}
