use super::conditions::key_name;
use super::*;

fn keys(pairs: &[(&str, &str)]) -> HashMap<String, Vec<String>> {
    pairs
        .iter()
        .map(|(k, v)| (key_name(k), vec![(*v).to_owned()]))
        .collect()
}

fn decide(p: &Policy, who: &[String], action: &str, resource: &str, k: &HashMap<String, Vec<String>>) -> Decision {
    p.evaluate(&Ctx {
        principal: who,
        action,
        resource,
        keys: k,
    })
}

fn alice() -> Vec<String> {
    principal_names("lab", "alice", &uuid::Uuid::from_u128(0xa11ce))
}

const PUBLIC_READ: &str = r#"{
  "Version": "2012-10-17",
  "Statement": [{"Sid": "PublicRead", "Effect": "Allow", "Principal": "*",
                 "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::data/*"}]
}"#;

#[test]
fn public_read_allows_objects_to_anyone_and_nothing_else() {
    let p = Policy::parse(PUBLIC_READ, "data").unwrap();
    let none = HashMap::new();
    assert_eq!(
        decide(&p, &[], "s3:GetObject", "arn:aws:s3:::data/a/b.bin", &none),
        Decision::Allow
    );
    assert_eq!(
        decide(&p, &alice(), "s3:GetObject", "arn:aws:s3:::data/x", &none),
        Decision::Allow
    );
    assert_eq!(
        decide(&p, &[], "s3:PutObject", "arn:aws:s3:::data/x", &none),
        Decision::Silent
    );
    assert_eq!(
        decide(&p, &[], "s3:ListBucket", "arn:aws:s3:::data", &none),
        Decision::Silent
    );
    assert!(p.is_public());
}

#[test]
fn deny_wins_and_principals_match_by_arn_account_or_id() {
    let p = Policy::parse(
        r#"{"Statement": [
            {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::lab:root"}, "Action": "s3:*", "Resource": ["arn:aws:s3:::data", "arn:aws:s3:::data/*"]},
            {"Effect": "Deny", "Principal": {"AWS": ["arn:aws:iam::lab:user/alice"]}, "Action": "s3:Delete*", "Resource": "arn:aws:s3:::data/*"}
        ]}"#,
        "data",
    )
    .unwrap();
    let none = HashMap::new();
    let bob = principal_names("lab", "bob", &uuid::Uuid::from_u128(0xb0b));
    let eve = principal_names("other", "eve", &uuid::Uuid::from_u128(0xe7e));
    assert_eq!(
        decide(&p, &alice(), "s3:GetObject", "arn:aws:s3:::data/k", &none),
        Decision::Allow
    );
    assert_eq!(
        decide(&p, &alice(), "s3:DeleteObject", "arn:aws:s3:::data/k", &none),
        Decision::Deny
    );
    assert_eq!(
        decide(&p, &bob, "s3:DeleteObject", "arn:aws:s3:::data/k", &none),
        Decision::Allow
    );
    assert_eq!(
        decide(&p, &eve, "s3:GetObject", "arn:aws:s3:::data/k", &none),
        Decision::Silent
    );
    assert_eq!(
        decide(&p, &[], "s3:GetObject", "arn:aws:s3:::data/k", &none),
        Decision::Silent
    );
    assert!(!p.is_public());
    let by_id = format!(
        r#"{{"Statement": {{"Effect": "Allow", "Principal": {{"CanonicalUser": "{}"}}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}}}}"#,
        uuid::Uuid::from_u128(0xb0b).simple()
    );
    let p = Policy::parse(&by_id, "data").unwrap();
    assert_eq!(
        decide(&p, &bob, "s3:GetObject", "arn:aws:s3:::data/k", &none),
        Decision::Allow
    );
    assert_eq!(
        decide(&p, &alice(), "s3:GetObject", "arn:aws:s3:::data/k", &none),
        Decision::Silent
    );
}

#[test]
fn not_action_not_resource_and_not_principal_invert_their_match() {
    let p = Policy::parse(
        r#"{"Statement": [{"Effect": "Deny", "NotPrincipal": {"AWS": "arn:aws:iam::lab:user/alice"},
            "NotAction": ["s3:GetObject", "s3:ListBucket"], "NotResource": "arn:aws:s3:::data/public/*"}]}"#,
        "data",
    )
    .unwrap();
    let none = HashMap::new();
    assert_eq!(
        decide(&p, &[], "s3:PutObject", "arn:aws:s3:::data/k", &none),
        Decision::Deny
    );
    assert_eq!(
        decide(&p, &[], "s3:GetObject", "arn:aws:s3:::data/k", &none),
        Decision::Silent
    );
    assert_eq!(
        decide(&p, &[], "s3:PutObject", "arn:aws:s3:::data/public/k", &none),
        Decision::Silent
    );
    assert_eq!(
        decide(&p, &alice(), "s3:PutObject", "arn:aws:s3:::data/k", &none),
        Decision::Silent
    );
    assert!(!p.is_public(), "a Deny publishes nothing");
}

fn with_condition(cond: &str) -> Policy {
    let text = format!(
        r#"{{"Statement": [{{"Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:ListBucket"],
            "Resource": ["arn:aws:s3:::data", "arn:aws:s3:::data/*"], "Condition": {cond}}}]}}"#
    );
    Policy::parse(&text, "data").unwrap_or_else(|e| panic!("{cond}: {e}"))
}

fn allowed(p: &Policy, k: &[(&str, &str)]) -> bool {
    decide(p, &[], "s3:GetObject", "arn:aws:s3:::data/k", &keys(k)) == Decision::Allow
}

/// Policies written for AWS services (CloudFront's origin access, log delivery) parse; the
/// service principal names nobody here, and the statement publishes nothing.
#[test]
fn service_principals_and_arn_and_binary_conditions() {
    let cloudfront = r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow",
        "Principal": {"Service": "cloudfront.amazonaws.com"}, "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::data/*",
        "Condition": {"ArnLike": {"AWS:SourceArn": "arn:aws:cloudfront::111122223333:distribution/*"}}}]}"#;
    let p = Policy::parse(cloudfront, "data").unwrap();
    assert!(!p.is_public());
    let none = HashMap::new();
    assert_eq!(
        decide(&p, &[], "s3:GetObject", "arn:aws:s3:::data/k", &none),
        Decision::Silent
    );
    assert_eq!(
        decide(&p, &alice(), "s3:GetObject", "arn:aws:s3:::data/k", &none),
        Decision::Silent
    );
    let bad = r#"{"Statement": [{"Effect": "Allow", "Principal": {"Service": ""}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"}]}"#;
    assert!(Policy::parse(bad, "data").unwrap_err().contains("Invalid principal"));

    // ARN operators match part by part: `*` stays within a part.
    let p = with_condition(r#"{"ArnLike": {"aws:SourceArn": "arn:aws:s3:::logs-*"}}"#);
    assert!(allowed(&p, &[("aws:sourcearn", "arn:aws:s3:::logs-2026")]));
    assert!(!allowed(&p, &[("aws:sourcearn", "arn:aws:s3:::other")]));
    let p = with_condition(r#"{"ArnEquals": {"aws:SourceArn": "arn:aws:*:us-east-1:*:x"}}"#);
    assert!(allowed(&p, &[("aws:sourcearn", "arn:aws:sqs:us-east-1:123:x")]));
    assert!(
        !allowed(&p, &[("aws:sourcearn", "arn:aws:sqs:eu:west:1:123:x")]),
        "a region is one part"
    );
    assert!(!allowed(&p, &[("aws:sourcearn", "not-an-arn")]));
    let p = with_condition(r#"{"ArnNotLike": {"aws:SourceArn": "arn:aws:s3:::logs-*"}}"#);
    assert!(allowed(&p, &[("aws:sourcearn", "arn:aws:s3:::other")]));
    assert!(allowed(&p, &[]), "a negated operator passes without the key");

    // BinaryEquals compares the key's bytes with the policy's base64.
    let p = with_condition(r#"{"BinaryEquals": {"aws:UserAgent": "Ym90bw=="}}"#);
    assert!(allowed(&p, &[("aws:useragent", "boto")]));
    assert!(!allowed(&p, &[("aws:useragent", "curl")]));
    let bad = r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*",
        "Condition": {"BinaryEquals": {"aws:UserAgent": "not base64!"}}}]}"#;
    assert!(Policy::parse(bad, "data")
        .unwrap_err()
        .contains("Invalid Condition value"));
}

/// Policy variables (version 2012-10-17): each user's own prefix, in resources and in
/// condition values, replaced by literals from the request; a missing key matches nothing
/// unless the variable gives a default; in a 2008-10-17 policy `${...}` is text.
#[test]
fn policy_variables_in_resources_and_conditions() {
    let home = |version: &str| {
        format!(
            r#"{{"Version": "{version}", "Statement": [
            {{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::data/home/${{aws:username}}/*"}},
            {{"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::data",
             "Condition": {{"StringLike": {{"s3:prefix": ["home/${{aws:username}}/*", "${{aws:username, 'nobody'}}-shared"]}}}}}}]}}"#
        )
    };
    let p = Policy::parse(&home("2012-10-17"), "data").unwrap();
    let alice_keys = keys(&[("aws:username", "alice")]);
    let get = |p: &Policy, key: &str, k: &HashMap<String, Vec<String>>| {
        decide(p, &[], "s3:GetObject", &format!("arn:aws:s3:::data/{key}"), k)
    };
    assert_eq!(get(&p, "home/alice/notes", &alice_keys), Decision::Allow);
    assert_eq!(get(&p, "home/bob/notes", &alice_keys), Decision::Silent);
    assert_eq!(
        get(&p, "home/alice/notes", &HashMap::new()),
        Decision::Silent,
        "no user name, no match"
    );
    let list = |p: &Policy, prefix: &str, user: Option<&str>| {
        let mut k = keys(&[("s3:prefix", prefix)]);
        if let Some(u) = user {
            k.insert("aws:username".into(), vec![u.into()]);
        }
        decide(p, &[], "s3:ListBucket", "arn:aws:s3:::data", &k)
    };
    assert_eq!(list(&p, "home/alice/x", Some("alice")), Decision::Allow);
    assert_eq!(list(&p, "home/bob/x", Some("alice")), Decision::Silent);
    assert_eq!(
        list(&p, "nobody-shared", None),
        Decision::Allow,
        "the default stands in"
    );
    assert_eq!(list(&p, "alice-shared", Some("alice")), Decision::Allow);
    // A value is literal: a user named `*` gets only the folder named `*`.
    let star = keys(&[("aws:username", "*")]);
    assert_eq!(get(&p, "home/bob/notes", &star), Decision::Silent);
    assert_eq!(get(&p, "home/*/notes", &star), Decision::Allow);
    // The 2008 grammar has no variables.
    let old = Policy::parse(&home("2008-10-17"), "data").unwrap();
    assert_eq!(get(&old, "home/alice/notes", &alice_keys), Decision::Silent);
    assert_eq!(get(&old, "home/${aws:username}/notes", &alice_keys), Decision::Allow);
    // `${*}` is a literal asterisk; an unclosed `${` is text.
    let p = Policy::parse(
        r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
            "Resource": "arn:aws:s3:::data/*", "Condition": {"StringEquals": {"aws:useragent": ["a${*}b", "c${d"]}}}]}"#,
        "data",
    )
    .unwrap();
    assert!(allowed(&p, &[("aws:useragent", "a*b")]));
    assert!(!allowed(&p, &[("aws:useragent", "axb")]));
    assert!(allowed(&p, &[("aws:useragent", "c${d")]));
}

/// A key the request does not carry: under a set operator the operator decides
/// (`ForAllValues:` holds, `ForAnyValue:` fails, negated or `...IfExists` alike); otherwise a
/// negated operator or `...IfExists` holds and a plain one fails.
#[test]
fn absent_keys_under_set_operators() {
    let tagged = [("s3:requestobjecttagkeys", "project")];
    for (cond, absent, present) in [
        (
            r#"{"ForAnyValue:StringNotEquals": {"s3:RequestObjectTagKeys": "x"}}"#,
            false,
            true,
        ),
        (
            r#"{"ForAnyValue:StringEqualsIfExists": {"s3:RequestObjectTagKeys": "project"}}"#,
            false,
            true,
        ),
        (
            r#"{"ForAllValues:StringEquals": {"s3:RequestObjectTagKeys": "x"}}"#,
            true,
            false,
        ),
        (
            r#"{"ForAllValues:StringNotEquals": {"s3:RequestObjectTagKeys": "project"}}"#,
            true,
            false,
        ),
        (
            r#"{"StringNotEquals": {"s3:RequestObjectTagKeys": "project"}}"#,
            true,
            false,
        ),
        (
            r#"{"StringEquals": {"s3:RequestObjectTagKeys": "project"}}"#,
            false,
            true,
        ),
    ] {
        let p = with_condition(cond);
        assert_eq!(allowed(&p, &[]), absent, "{cond} without the key");
        assert_eq!(allowed(&p, &tagged), present, "{cond} with it");
    }
}

#[test]
fn source_ip_conditions_and_their_public_status() {
    let p = with_condition(r#"{"IpAddress": {"aws:SourceIp": ["10.1.0.0/16", "2001:db8::/32"]}}"#);
    assert!(allowed(&p, &[("aws:SourceIp", "10.1.2.3")]));
    assert!(allowed(&p, &[("aws:SourceIp", "2001:db8::1")]));
    assert!(
        allowed(&p, &[("aws:SourceIp", "::ffff:10.1.9.9")]),
        "v4-mapped v6 peers"
    );
    assert!(!allowed(&p, &[("aws:SourceIp", "10.2.0.1")]));
    assert!(!allowed(&p, &[]), "an absent key fails a positive operator");
    assert!(!p.is_public(), "a fixed source network is not public");
    let p = with_condition(r#"{"NotIpAddress": {"aws:SourceIp": "192.168.0.0/24"}}"#);
    assert!(allowed(&p, &[("aws:SourceIp", "10.0.0.1")]));
    assert!(!allowed(&p, &[("aws:SourceIp", "192.168.0.7")]));
    assert!(p.is_public());
    let p = with_condition(r#"{"IpAddress": {"aws:SourceIp": "0.0.0.0/0"}}"#);
    assert!(p.is_public(), "all of IPv4 is everyone");
}

#[test]
fn string_numeric_date_bool_null_and_if_exists() {
    let p = with_condition(r#"{"StringLike": {"s3:prefix": ["home/${x}", "pub/*"]}}"#);
    assert!(allowed(&p, &[("s3:prefix", "pub/data")]));
    assert!(!allowed(&p, &[("s3:prefix", "priv/data")]));
    let p = with_condition(r#"{"StringNotEquals": {"s3:delimiter": "/"}}"#);
    assert!(allowed(&p, &[]), "a negated operator passes on an absent key");
    assert!(!allowed(&p, &[("s3:delimiter", "/")]));
    let p = with_condition(r#"{"StringEqualsIgnoreCase": {"aws:UserAgent": "Curl/8.0"}}"#);
    assert!(allowed(&p, &[("aws:UserAgent", "curl/8.0")]));
    let p = with_condition(r#"{"NumericLessThanEquals": {"s3:max-keys": 100}}"#);
    assert!(allowed(&p, &[("s3:max-keys", "100")]));
    assert!(!allowed(&p, &[("s3:max-keys", "1000")]));
    assert!(!allowed(&p, &[("s3:max-keys", "lots")]));
    let p = with_condition(
        r#"{"DateLessThan": {"aws:CurrentTime": "2030-01-01T00:00:00Z"}, "DateGreaterThan": {"aws:CurrentTime": "2020-01-01"}}"#,
    );
    assert!(allowed(&p, &[("aws:CurrentTime", "2026-11-24T10:00:00Z")]));
    assert!(!allowed(&p, &[("aws:CurrentTime", "2031-01-01T00:00:00.5Z")]));
    assert!(!allowed(&p, &[("aws:CurrentTime", "2019-12-31T23:59:59+00:00")]));
    let p = with_condition(r#"{"Bool": {"aws:SecureTransport": "true"}}"#);
    assert!(allowed(&p, &[("aws:SecureTransport", "true")]));
    assert!(!allowed(&p, &[("aws:SecureTransport", "false")]));
    let p = with_condition(r#"{"Null": {"s3:x-amz-acl": "true"}}"#);
    assert!(allowed(&p, &[]));
    assert!(!allowed(&p, &[("s3:x-amz-acl", "public-read")]));
    let p = with_condition(r#"{"StringEqualsIfExists": {"s3:x-amz-acl": "private"}}"#);
    assert!(allowed(&p, &[]));
    assert!(allowed(&p, &[("s3:x-amz-acl", "private")]));
    assert!(!allowed(&p, &[("s3:x-amz-acl", "public-read")]));
    let p = with_condition(r#"{"StringEquals": {"s3:ExistingObjectTag/Share": "yes"}}"#);
    assert!(p.reads_object_tags());
    assert!(allowed(&p, &[("s3:ExistingObjectTag/Share", "yes")]));
    assert!(
        !allowed(&p, &[("s3:ExistingObjectTag/share", "yes")]),
        "tag keys keep their case"
    );
    let p = with_condition(r#"{"ForAllValues:StringEquals": {"aws:TagKeys": ["a", "b"]}}"#);
    let mut k = keys(&[]);
    k.insert("aws:tagkeys".into(), vec!["a".into(), "b".into()]);
    assert_eq!(
        decide(&p, &[], "s3:GetObject", "arn:aws:s3:::data/k", &k),
        Decision::Allow
    );
    k.insert("aws:tagkeys".into(), vec!["a".into(), "c".into()]);
    assert_eq!(
        decide(&p, &[], "s3:GetObject", "arn:aws:s3:::data/k", &k),
        Decision::Silent
    );
}

#[test]
fn malformed_policies_say_why() {
    let bad = |text: &str, why: &str| {
        let e = Policy::parse(text, "data").expect_err(text);
        assert!(e.contains(why), "{text}: {e}");
    };
    let stmt = |extra: &str| {
        format!(
            r#"{{"Version": "2012-10-17", "Statement": [{{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data/*"{extra}}}]}}"#
        )
    };
    bad("not json", "invalid Json");
    bad("[]", "invalid Json");
    bad(r#"{"Version": "2012-10-17"}"#, "Missing required field Statement");
    bad(r#"{"Version": "2013-01-01", "Statement": []}"#, "valid version");
    bad(
        r#"{"Statement": [{"Principal": "*", "Action": "s3:GetObject", "Resource": "*"}]}"#,
        "Effect",
    );
    bad(
        r#"{"Statement": [{"Effect": "Permit", "Principal": "*", "Action": "s3:GetObject", "Resource": "*"}]}"#,
        "Invalid effect",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Action": "s3:GetObject", "Resource": "*"}]}"#,
        "Principal",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Resource": "*"}]}"#,
        "Action",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject"}]}"#,
        "Resource",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:FlyAway", "Resource": "*"}]}"#,
        "invalid action",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "ec2:RunInstances", "Resource": "*"}]}"#,
        "invalid action",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other/*"}]}"#,
        "invalid resource",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::data"}]}"#,
        "Action does not apply",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:ListBucket", "Resource": "arn:aws:s3:::data/*"}]}"#,
        "Action does not apply",
    );
    bad(
        r#"{"Statement": [{"Effect": "Allow", "Principal": {"Bogus": "x"}, "Action": "s3:GetObject", "Resource": "*"}]}"#,
        "Invalid principal",
    );
    bad(
        &stmt(r#", "Condition": {"StringSmells": {"s3:prefix": "x"}}"#),
        "Invalid Condition type",
    );
    bad(
        &stmt(r#", "Condition": {"NullIfExists": {"s3:prefix": "true"}}"#),
        "Invalid Condition type",
    );
    bad(
        &stmt(r#", "Condition": {"StringEquals": {"s3:colour": "x"}}"#),
        "invalid condition key",
    );
    bad(
        &stmt(r#", "Condition": {"IpAddress": {"aws:SourceIp": "10.0.0.0/33"}}"#),
        "Invalid Condition value",
    );
    bad(
        &stmt(r#", "Condition": {"NumericEquals": {"s3:max-keys": "ten"}}"#),
        "Invalid Condition value",
    );
    bad(
        &stmt(r#", "Condition": {"DateLessThan": {"aws:CurrentTime": "tomorrow"}}"#),
        "Invalid Condition value",
    );
    bad(&stmt(r#", "Colour": "blue""#), "Unknown field Colour");
    bad(
        &format!(r#"{{"Statement": [], "Id": "{}"}}"#, "x".repeat(MAX_POLICY_BYTES)),
        "no more than",
    );
    assert!(Policy::parse(&stmt(""), "data").is_ok());
    assert!(Policy::parse(&stmt(r#", "Sid": "s1", "Condition": {}"#), "data").is_ok());
}

/// Policies written for S3 (a deployment role's, a replication destination's) name actions of
/// features this gateway does not offer; S3 takes them, and so does the gateway.
#[test]
fn actions_of_features_not_offered_are_known() {
    let deploy = r#"{"Version": "2012-10-17", "Statement": [
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
         "Action": ["s3:PutBucketWebsite", "s3:PutBucketLogging", "s3:PutBucketNotification",
                    "s3:PutBucketRequestPayment", "s3:PutAccelerateConfiguration",
                    "s3:GetInventoryConfiguration", "s3:PutInventoryConfiguration",
                    "s3:GetMetricsConfiguration", "s3:PutMetricsConfiguration",
                    "s3:GetAnalyticsConfiguration", "s3:PutAnalyticsConfiguration",
                    "s3:GetIntelligentTieringConfiguration", "s3:PutIntelligentTieringConfiguration"],
         "Resource": "arn:aws:s3:::data"},
        {"Effect": "Allow", "Principal": {"AWS": "arn:aws:iam::123456789012:root"},
         "Action": ["s3:ReplicateObject", "s3:ReplicateDelete", "s3:ReplicateTags",
                    "s3:GetObjectVersionForReplication", "s3:ObjectOwnerOverrideToBucketOwner",
                    "s3:GetObjectTorrent", "s3:InitiateReplication"],
         "Resource": "arn:aws:s3:::data/*"}]}"#;
    Policy::parse(deploy, "data").unwrap();
    // An object's action on the bucket alone still applies to nothing.
    let e = Policy::parse(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:ReplicateObject", "Resource": "arn:aws:s3:::data"}]}"#,
        "data",
    )
    .unwrap_err();
    assert!(e.contains("Action does not apply"), "{e}");
}

#[test]
fn globs_and_actions() {
    assert!(glob("*", ""));
    assert!(glob("a*c", "abbbc"));
    assert!(glob("a?c", "abc"));
    assert!(!glob("a?c", "ac"));
    assert!(glob("data/*/x*", "data/1/2/xyz"));
    assert!(!glob("data/*", "datax/1"));
    assert_eq!(action_of("HeadObject", false), "s3:GetObject");
    assert_eq!(action_of("GetObject", true), "s3:GetObjectVersion");
    assert_eq!(action_of("ListObjectsV2", false), "s3:ListBucket");
    assert_eq!(action_of("UploadPart", false), "s3:PutObject");
    assert_eq!(action_of("DeleteBucketPolicy", false), "s3:DeleteBucketPolicy");
    assert_eq!(action_of("DeleteBucketTagging", false), "s3:PutBucketTagging");
    assert_eq!(action_of("GetBucketEncryption", false), "s3:GetEncryptionConfiguration");
    assert_eq!(
        action_of("DeleteBucketEncryption", false),
        "s3:PutEncryptionConfiguration"
    );
    assert_eq!(action_of("PutBucketEncryption", false), "s3:PutEncryptionConfiguration");
    assert_eq!(action_of("DeleteBucketWebsite", false), "s3:DeleteBucketWebsite");
    assert_eq!(
        action_of("ListBucketInventoryConfigurations", false),
        "s3:GetInventoryConfiguration"
    );
    assert_eq!(
        action_of("DeleteBucketReplication", false),
        "s3:PutReplicationConfiguration"
    );
    assert_eq!(
        action_of("GetObjectLockConfiguration", false),
        "s3:GetBucketObjectLockConfiguration"
    );
    let p = Policy::parse(
        r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:Get*", "Resource": "arn:aws:s3:::data*"}]}"#,
        "data",
    )
    .unwrap();
    let none = HashMap::new();
    assert_eq!(
        decide(&p, &[], "s3:GetObjectVersion", "arn:aws:s3:::data/k", &none),
        Decision::Allow
    );
    assert_eq!(
        decide(&p, &[], "s3:GetBucketPolicy", "arn:aws:s3:::data", &none),
        Decision::Allow
    );
}
