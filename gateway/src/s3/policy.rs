//! Bucket policies: the IAM policy grammar S3 accepts on a bucket, validated as S3 validates it
//! (every refusal a `MalformedPolicy` naming the problem), and evaluated for each request.
//!
//! Principals are Penstock users: `"*"` (anyone, anonymous requests included), a user's ARN
//! `arn:aws:iam::<domain>:user/<name>`, a domain as an account (`arn:aws:iam::<domain>:root`, or
//! the bare domain name), or a user's canonical id (its id in hex, as ACLs show it).

use std::collections::HashMap;

use serde_json::{Map, Value};

mod conditions;
mod matching;

use conditions::{parse_conditions, Condition};
pub(crate) use matching::glob;
use matching::{matches_pattern, pattern_with_variables};

/// The largest bucket policy S3 accepts.
pub(crate) const MAX_POLICY_BYTES: usize = 20 * 1024;

/// What a policy says about a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Decision {
    /// A matching statement denies it: refused, whatever else allows it.
    Deny,
    /// A matching statement allows it and none denies it.
    Allow,
    /// No statement matches.
    Silent,
}

/// One request, as policies see it.
pub(crate) struct Ctx<'a> {
    /// The caller's principal names (see [`principal_names`]); empty for an anonymous request.
    pub principal: &'a [String],
    /// The IAM action, `s3:GetObject`.
    pub action: &'a str,
    /// `arn:aws:s3:::bucket` or `arn:aws:s3:::bucket/key`.
    pub resource: &'a str,
    /// Condition keys present in the request, lower-cased, with their values.
    pub keys: &'a HashMap<String, Vec<String>>,
}

/// The names a policy may use for an authenticated user.
pub(crate) fn principal_names(domain: &str, name: &str, id: &uuid::Uuid) -> Vec<String> {
    vec![
        format!("arn:aws:iam::{domain}:user/{name}"),
        format!("arn:aws:iam::{domain}:root"),
        domain.to_owned(),
        id.simple().to_string(),
    ]
}

/// A parsed, valid bucket policy.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    statements: Vec<Statement>,
}

#[derive(Debug, Clone)]
struct Statement {
    allow: bool,
    /// Whether policy variables in resources and condition values are replaced (version
    /// 2012-10-17; in 2008-10-17 and without a version, `${...}` is text).
    variables: bool,
    /// `(negated, names)`: `None` in the names means `*`.
    principal: (bool, Option<Vec<String>>),
    actions: (bool, Vec<String>),
    resources: (bool, Vec<String>),
    conditions: Vec<Condition>,
}

/// Actions S3 knows for buckets and objects, lower-cased: a policy naming another (without
/// wildcards) is malformed. Those of features not offered here are known too (policies written
/// for S3 name them, and S3 takes them); they grant nothing here.
/// The second field says whether the action applies to objects (else to buckets).
const ACTIONS: &[(&str, bool)] = &[
    ("s3:abortmultipartupload", true),
    ("s3:bypassgovernanceretention", true),
    ("s3:createbucket", false),
    ("s3:createbucketmetadatatableconfiguration", false),
    ("s3:deletebucket", false),
    ("s3:deletebucketmetadatatableconfiguration", false),
    ("s3:deletebucketpolicy", false),
    ("s3:deletebucketwebsite", false),
    ("s3:deleteobject", true),
    ("s3:deleteobjecttagging", true),
    ("s3:deleteobjectversion", true),
    ("s3:deleteobjectversiontagging", true),
    ("s3:getaccelerateconfiguration", false),
    ("s3:getanalyticsconfiguration", false),
    ("s3:getbucketacl", false),
    ("s3:getbucketcors", false),
    ("s3:getbucketlocation", false),
    ("s3:getbucketlogging", false),
    ("s3:getbucketmetadatatableconfiguration", false),
    ("s3:getbucketnotification", false),
    ("s3:getbucketobjectlockconfiguration", false),
    ("s3:getbucketownershipcontrols", false),
    ("s3:getbucketpolicy", false),
    ("s3:getbucketpolicystatus", false),
    ("s3:getbucketpublicaccessblock", false),
    ("s3:getbucketrequestpayment", false),
    ("s3:getbuckettagging", false),
    ("s3:getbucketversioning", false),
    ("s3:getbucketwebsite", false),
    ("s3:getencryptionconfiguration", false),
    ("s3:getintelligenttieringconfiguration", false),
    ("s3:getinventoryconfiguration", false),
    ("s3:getlifecycleconfiguration", false),
    ("s3:getmetricsconfiguration", false),
    ("s3:getobject", true),
    ("s3:getobjectacl", true),
    ("s3:getobjectattributes", true),
    ("s3:getobjectlegalhold", true),
    ("s3:getobjectretention", true),
    ("s3:getobjecttagging", true),
    ("s3:getobjecttorrent", true),
    ("s3:getobjectversion", true),
    ("s3:getobjectversionacl", true),
    ("s3:getobjectversionattributes", true),
    ("s3:getobjectversionforreplication", true),
    ("s3:getobjectversiontagging", true),
    ("s3:getobjectversiontorrent", true),
    ("s3:getreplicationconfiguration", false),
    ("s3:initiatereplication", true),
    ("s3:listallmybuckets", false),
    ("s3:listbucket", false),
    ("s3:listbucketmultipartuploads", false),
    ("s3:listbucketversions", false),
    ("s3:listmultipartuploadparts", true),
    ("s3:objectowneroverridetobucketowner", true),
    ("s3:putaccelerateconfiguration", false),
    ("s3:putanalyticsconfiguration", false),
    ("s3:putbucketacl", false),
    ("s3:putbucketcors", false),
    ("s3:putbucketlogging", false),
    ("s3:putbucketnotification", false),
    ("s3:putbucketobjectlockconfiguration", false),
    ("s3:putbucketownershipcontrols", false),
    ("s3:putbucketpolicy", false),
    ("s3:putbucketpublicaccessblock", false),
    ("s3:putbucketrequestpayment", false),
    ("s3:putbuckettagging", false),
    ("s3:putbucketversioning", false),
    ("s3:putbucketwebsite", false),
    ("s3:putencryptionconfiguration", false),
    ("s3:putintelligenttieringconfiguration", false),
    ("s3:putinventoryconfiguration", false),
    ("s3:putlifecycleconfiguration", false),
    ("s3:putmetricsconfiguration", false),
    ("s3:putobject", true),
    ("s3:putobjectacl", true),
    ("s3:putobjectlegalhold", true),
    ("s3:putobjectretention", true),
    ("s3:putobjecttagging", true),
    ("s3:putobjectversionacl", true),
    ("s3:putobjectversiontagging", true),
    ("s3:putreplicationconfiguration", false),
    ("s3:replicatedelete", true),
    ("s3:replicateobject", true),
    ("s3:replicatetags", true),
    ("s3:restoreobject", true),
];

type Malformed = String;

fn malformed<T>(why: impl Into<String>) -> Result<T, Malformed> {
    Err(why.into())
}

/// A JSON value that may be one item or a list of them, as strings.
fn strings(v: &Value, what: &str) -> Result<Vec<String>, Malformed> {
    let one = |v: &Value| match v {
        Value::String(s) => Ok(s.clone()),
        Value::Number(n) => Ok(n.to_string()),
        Value::Bool(b) => Ok(b.to_string()),
        _ => malformed(format!("{what} must be a string or a list of strings")),
    };
    match v {
        Value::Array(items) if items.is_empty() => malformed(format!("{what} must not be empty")),
        Value::Array(items) => items.iter().map(one).collect(),
        v => Ok(vec![one(v)?]),
    }
}

impl Policy {
    /// Parses and validates the policy document of bucket `bucket`; the error is the message
    /// of S3's `MalformedPolicy`.
    pub(crate) fn parse(text: &str, bucket: &str) -> Result<Self, Malformed> {
        if text.len() > MAX_POLICY_BYTES {
            return malformed(format!("Policies must be no more than {MAX_POLICY_BYTES} bytes"));
        }
        let doc: Value =
            serde_json::from_str(text).or_else(|e| malformed(format!("This policy contains invalid Json: {e}")))?;
        let Value::Object(doc) = doc else {
            return malformed("This policy contains invalid Json");
        };
        for k in doc.keys() {
            if !matches!(k.as_str(), "Version" | "Id" | "Statement") {
                return malformed(format!("Unknown field {k}"));
            }
        }
        let variables = match doc.get("Version") {
            None => false,
            Some(Value::String(v)) if v == "2012-10-17" || v == "2008-10-17" => v == "2012-10-17",
            Some(_) => return malformed("The policy must contain a valid version string"),
        };
        let stmts = match doc.get("Statement") {
            Some(Value::Array(a)) if !a.is_empty() => a.iter().collect::<Vec<_>>(),
            Some(v @ Value::Object(_)) => vec![v],
            _ => return malformed("Missing required field Statement"),
        };
        let statements = stmts
            .into_iter()
            .map(|s| match s {
                Value::Object(s) => Statement::parse(s, bucket, variables),
                _ => malformed("Statement must be an object"),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { statements })
    }

    /// Deny beats Allow beats silence.
    pub(crate) fn evaluate(&self, cx: &Ctx<'_>) -> Decision {
        let mut allowed = false;
        for s in self.statements.iter().filter(|s| s.applies(cx)) {
            if !s.allow {
                return Decision::Deny;
            }
            allowed = true;
        }
        if allowed {
            Decision::Allow
        } else {
            Decision::Silent
        }
    }

    /// Whether the policy grants anything to everyone, as S3's GetBucketPolicyStatus and
    /// BlockPublicPolicy judge it: an Allow to `*` not narrowed by a fixed source address,
    /// network, account or user.
    pub(crate) fn is_public(&self) -> bool {
        self.statements.iter().any(|s| {
            let to_everyone = match &s.principal {
                (false, None) => true,
                (true, _) => true,
                (false, Some(_)) => false,
            };
            s.allow && to_everyone && !s.conditions.iter().any(Condition::narrows)
        })
    }

    /// Whether any condition reads the tags of the existing object (they are then looked up).
    pub(crate) fn reads_object_tags(&self) -> bool {
        self.statements
            .iter()
            .flat_map(|s| &s.conditions)
            .any(|c| c.key.starts_with("s3:existingobjecttag/"))
    }
}

impl Statement {
    fn parse(s: &Map<String, Value>, bucket: &str, variables: bool) -> Result<Self, Malformed> {
        for k in s.keys() {
            if !matches!(
                k.as_str(),
                "Sid"
                    | "Effect"
                    | "Principal"
                    | "NotPrincipal"
                    | "Action"
                    | "NotAction"
                    | "Resource"
                    | "NotResource"
                    | "Condition"
            ) {
                return malformed(format!("Unknown field {k}"));
            }
        }
        let allow = match s.get("Effect") {
            Some(Value::String(e)) if e == "Allow" => true,
            Some(Value::String(e)) if e == "Deny" => false,
            Some(_) => return malformed("Invalid effect"),
            None => return malformed("Missing required field Effect"),
        };
        let principal = match (s.get("Principal"), s.get("NotPrincipal")) {
            (Some(p), None) => (false, parse_principal(p)?),
            (None, Some(p)) => (true, parse_principal(p)?),
            (Some(_), Some(_)) => return malformed("Statement has both Principal and NotPrincipal"),
            (None, None) => return malformed("Missing required field Principal"),
        };
        let actions = match (s.get("Action"), s.get("NotAction")) {
            (Some(a), None) => (false, parse_actions(a)?),
            (None, Some(a)) => (true, parse_actions(a)?),
            (Some(_), Some(_)) => return malformed("Statement has both Action and NotAction"),
            (None, None) => return malformed("Missing required field Action"),
        };
        let resources = match (s.get("Resource"), s.get("NotResource")) {
            (Some(r), None) => (false, parse_resources(r, bucket)?),
            (None, Some(r)) => (true, parse_resources(r, bucket)?),
            (Some(_), Some(_)) => return malformed("Statement has both Resource and NotResource"),
            (None, None) => return malformed("Missing required field Resource"),
        };
        if !actions.0 && !resources.0 {
            check_actions_meet_resources(&actions.1, &resources.1)?;
        }
        let conditions = match s.get("Condition") {
            None => Vec::new(),
            Some(Value::Object(c)) => parse_conditions(c, variables)?,
            Some(_) => return malformed("Condition must be an object"),
        };
        Ok(Self {
            allow,
            variables,
            principal,
            actions,
            resources,
            conditions,
        })
    }

    fn applies(&self, cx: &Ctx<'_>) -> bool {
        let who = match &self.principal.1 {
            None => true,
            Some(names) => names.iter().any(|n| cx.principal.iter().any(|p| p == n)),
        };
        let action = self.actions.1.iter().any(|a| glob(a, &cx.action.to_ascii_lowercase()));
        let resource = self.resources.1.iter().any(|r| {
            if self.variables && r.contains("${") {
                pattern_with_variables(r, cx.keys).is_some_and(|p| matches_pattern(&p, cx.resource))
            } else {
                glob(r, cx.resource)
            }
        });
        who != self.principal.0
            && action != self.actions.0
            && resource != self.resources.0
            && self.conditions.iter().all(|c| c.holds(cx.keys))
    }
}

fn parse_principal(p: &Value) -> Result<Option<Vec<String>>, Malformed> {
    let invalid = || malformed("Invalid principal in policy");
    match p {
        Value::String(s) if s == "*" => Ok(None),
        Value::Object(m) if !m.is_empty() => {
            let mut names = Vec::new();
            for (kind, v) in m {
                // An AWS service (CloudFront, log delivery) is a principal S3 takes; none calls
                // here, so it names nobody.
                if kind == "Service" {
                    if strings(v, "Principal")?.iter().any(String::is_empty) {
                        return invalid();
                    }
                    continue;
                }
                if kind != "AWS" && kind != "CanonicalUser" {
                    return invalid();
                }
                for n in strings(v, "Principal")? {
                    if n == "*" {
                        return Ok(None);
                    }
                    if n.is_empty() || (n.starts_with("arn:") && !n.starts_with("arn:aws:iam::")) {
                        return invalid();
                    }
                    names.push(n);
                }
            }
            Ok(Some(names))
        }
        _ => invalid(),
    }
}

/// Whether `a` (as [`action_of`] spells it, any case) is an action S3 knows.
pub(crate) fn known_action(a: &str) -> bool {
    let a = a.to_ascii_lowercase();
    ACTIONS.iter().any(|(n, _)| *n == a)
}

fn parse_actions(a: &Value) -> Result<Vec<String>, Malformed> {
    let list = strings(a, "Action")?;
    list.into_iter()
        .map(|a| {
            let a = a.to_ascii_lowercase();
            let known = a == "*" || (a.starts_with("s3:") && (a.contains(['*', '?']) || known_action(&a)));
            if known {
                Ok(a)
            } else {
                malformed("Policy has invalid action")
            }
        })
        .collect()
}

fn parse_resources(r: &Value, bucket: &str) -> Result<Vec<String>, Malformed> {
    strings(r, "Resource")?
        .into_iter()
        .map(|r| {
            if r == "*" {
                return Ok(r);
            }
            let Some(path) = r.strip_prefix("arn:aws:s3:::") else {
                return malformed("Policy has invalid resource");
            };
            let b = path.split('/').next().unwrap_or_default();
            if glob(b, bucket) {
                Ok(r)
            } else {
                malformed("Policy has invalid resource")
            }
        })
        .collect()
}

/// S3 refuses a statement whose named actions can act on none of its resources (`s3:GetObject`
/// on `arn:aws:s3:::bucket` alone, say).
fn check_actions_meet_resources(actions: &[String], resources: &[String]) -> Result<(), Malformed> {
    let object_level = |r: &String| {
        r == "*"
            || r.strip_prefix("arn:aws:s3:::")
                .is_some_and(|p| p.contains('/') || p.ends_with('*'))
    };
    let bucket_level = |r: &String| r == "*" || r.strip_prefix("arn:aws:s3:::").is_some_and(|p| !p.contains('/'));
    for a in actions {
        let Some(&(_, on_objects)) = ACTIONS.iter().find(|(n, _)| n == a) else {
            continue; // a wildcard: it names actions of both kinds
        };
        let met = if on_objects {
            resources.iter().any(object_level)
        } else {
            resources.iter().any(bucket_level)
        };
        if !met {
            return malformed("Action does not apply to any resource(s) in statement");
        }
    }
    Ok(())
}

/// The IAM action of an S3 operation (as s3s names it), given whether it names a version.
pub(crate) fn action_of(op: &str, versioned: bool) -> String {
    let a = match (op, versioned) {
        ("GetObject" | "HeadObject", false) => "GetObject",
        ("GetObject" | "HeadObject", true) => "GetObjectVersion",
        ("DeleteObject", true) => "DeleteObjectVersion",
        ("GetObjectTagging", true) => "GetObjectVersionTagging",
        ("PutObjectTagging", true) => "PutObjectVersionTagging",
        ("DeleteObjectTagging", true) => "DeleteObjectVersionTagging",
        ("GetObjectAcl", true) => "GetObjectVersionAcl",
        ("PutObjectAcl", true) => "PutObjectVersionAcl",
        ("GetObjectAttributes", true) => "GetObjectVersionAttributes",
        ("HeadBucket" | "ListObjects" | "ListObjectsV2", _) => "ListBucket",
        ("ListObjectVersions", _) => "ListBucketVersions",
        ("ListMultipartUploads", _) => "ListBucketMultipartUploads",
        ("ListParts", _) => "ListMultipartUploadParts",
        (
            "PutObject"
            | "PostObject"
            | "CopyObject"
            | "CreateMultipartUpload"
            | "UploadPart"
            | "UploadPartCopy"
            | "CompleteMultipartUpload",
            _,
        ) => "PutObject",
        ("DeleteObjects", _) => "DeleteObject",
        ("GetBucketLifecycleConfiguration", _) => "GetLifecycleConfiguration",
        ("PutBucketLifecycleConfiguration" | "DeleteBucketLifecycle", _) => "PutLifecycleConfiguration",
        ("GetPublicAccessBlock", _) => "GetBucketPublicAccessBlock",
        ("PutPublicAccessBlock" | "DeletePublicAccessBlock", _) => "PutBucketPublicAccessBlock",
        ("DeleteBucketOwnershipControls", _) => "PutBucketOwnershipControls",
        ("ListBuckets", _) => "ListAllMyBuckets",
        ("GetBucketCors", _) => "GetBucketCORS",
        ("PutBucketCors" | "DeleteBucketCors", _) => "PutBucketCORS",
        ("DeleteBucketTagging", _) => "PutBucketTagging",
        ("GetBucketEncryption", _) => "GetEncryptionConfiguration",
        ("PutBucketEncryption" | "DeleteBucketEncryption", _) => "PutEncryptionConfiguration",
        ("DeleteBucketReplication", _) => "PutReplicationConfiguration",
        ("GetBucketNotificationConfiguration", _) => "GetBucketNotification",
        ("GetObjectLockConfiguration", _) => "GetBucketObjectLockConfiguration",
        ("PutObjectLockConfiguration", _) => "PutBucketObjectLockConfiguration",
        ("GetBucketAccelerateConfiguration", _) => "GetAccelerateConfiguration",
        ("GetBucketReplication", _) => "GetReplicationConfiguration",
        ("ListBucketAnalyticsConfigurations" | "GetBucketAnalyticsConfiguration", _) => "GetAnalyticsConfiguration",
        ("DeleteBucketAnalyticsConfiguration", _) => "PutAnalyticsConfiguration",
        ("ListBucketInventoryConfigurations" | "GetBucketInventoryConfiguration", _) => "GetInventoryConfiguration",
        ("DeleteBucketInventoryConfiguration", _) => "PutInventoryConfiguration",
        ("ListBucketMetricsConfigurations" | "GetBucketMetricsConfiguration", _) => "GetMetricsConfiguration",
        ("DeleteBucketMetricsConfiguration", _) => "PutMetricsConfiguration",
        ("ListBucketIntelligentTieringConfigurations" | "GetBucketIntelligentTieringConfiguration", _) => {
            "GetIntelligentTieringConfiguration"
        }
        ("DeleteBucketIntelligentTieringConfiguration", _) => "PutIntelligentTieringConfiguration",
        (op, _) => op,
    };
    format!("s3:{a}")
}

#[cfg(test)]
mod tests;
