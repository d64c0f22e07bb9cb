//! Bucket policies: the IAM policy grammar S3 accepts on a bucket, validated as S3 validates it
//! (every refusal a `MalformedPolicy` naming the problem), and evaluated for each request.
//!
//! Principals are Penstock users: `"*"` (anyone, anonymous requests included), a user's ARN
//! `arn:aws:iam::<domain>:user/<name>`, a domain as an account (`arn:aws:iam::<domain>:root`, or
//! the bare domain name), or a user's canonical id (its id in hex, as ACLs show it).

use std::collections::HashMap;
use std::net::IpAddr;

use serde_json::{Map, Value};

mod matching;

pub(crate) use matching::glob;
use matching::{
    arn_like, arn_matches, base64_bytes, cidr_contains, matches_pattern, parse_cidr, parse_date, pattern_with_variables,
};

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

#[derive(Debug, Clone)]
struct Condition {
    op: Op,
    /// The operator's negated form (`StringNotEquals`, `NotIpAddress`, ...).
    negated: bool,
    /// `...IfExists`: true when the key is absent.
    if_exists: bool,
    /// `ForAllValues:`: every value of the key must match (and an absent key matches).
    for_all: bool,
    /// `ForAnyValue:`: one value of the key must match (and an absent key fails, negated
    /// operator or `...IfExists` notwithstanding, as IAM evaluates it).
    for_any: bool,
    /// Whether policy variables in the values are replaced (policies of version 2012-10-17).
    variables: bool,
    key: String,
    values: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    StringEquals,
    StringEqualsIgnoreCase,
    StringLike,
    NumericEquals,
    NumericLessThan,
    NumericLessThanEquals,
    NumericGreaterThan,
    NumericGreaterThanEquals,
    DateEquals,
    DateLessThan,
    DateLessThanEquals,
    DateGreaterThan,
    DateGreaterThanEquals,
    Bool,
    IpAddress,
    /// `ArnEquals`/`ArnLike` (IAM treats both alike): each of an ARN's six `:`-separated parts
    /// matched on its own, wildcards within a part.
    ArnLike,
    /// `BinaryEquals`: the key's bytes against the base64 the policy holds.
    BinaryEquals,
    Null,
}

/// An operator's name: the operator it tests, and whether the test is negated.
fn parse_op(name: &str) -> Option<(Op, bool)> {
    Some(match name {
        "StringEquals" => (Op::StringEquals, false),
        "StringNotEquals" => (Op::StringEquals, true),
        "StringEqualsIgnoreCase" => (Op::StringEqualsIgnoreCase, false),
        "StringNotEqualsIgnoreCase" => (Op::StringEqualsIgnoreCase, true),
        "StringLike" => (Op::StringLike, false),
        "StringNotLike" => (Op::StringLike, true),
        "NumericEquals" => (Op::NumericEquals, false),
        "NumericNotEquals" => (Op::NumericEquals, true),
        "NumericLessThan" => (Op::NumericLessThan, false),
        "NumericLessThanEquals" => (Op::NumericLessThanEquals, false),
        "NumericGreaterThan" => (Op::NumericGreaterThan, false),
        "NumericGreaterThanEquals" => (Op::NumericGreaterThanEquals, false),
        "DateEquals" => (Op::DateEquals, false),
        "DateNotEquals" => (Op::DateEquals, true),
        "DateLessThan" => (Op::DateLessThan, false),
        "DateLessThanEquals" => (Op::DateLessThanEquals, false),
        "DateGreaterThan" => (Op::DateGreaterThan, false),
        "DateGreaterThanEquals" => (Op::DateGreaterThanEquals, false),
        "Bool" => (Op::Bool, false),
        "IpAddress" => (Op::IpAddress, false),
        "NotIpAddress" => (Op::IpAddress, true),
        "ArnEquals" | "ArnLike" => (Op::ArnLike, false),
        "ArnNotEquals" | "ArnNotLike" => (Op::ArnLike, true),
        "BinaryEquals" => (Op::BinaryEquals, false),
        "Null" => (Op::Null, false),
        _ => return None,
    })
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

/// Condition keys of S3 a policy may name, lower-cased (besides the `aws:` global keys and the
/// tag families below).
const S3_KEYS: &[&str] = &[
    "s3:prefix",
    "s3:delimiter",
    "s3:max-keys",
    "s3:versionid",
    "s3:x-amz-acl",
    "s3:x-amz-copy-source",
    "s3:x-amz-metadata-directive",
    "s3:x-amz-storage-class",
    "s3:x-amz-content-sha256",
    "s3:x-amz-grant-full-control",
    "s3:x-amz-grant-read",
    "s3:x-amz-grant-read-acp",
    "s3:x-amz-grant-write",
    "s3:x-amz-grant-write-acp",
    "s3:x-amz-server-side-encryption",
    "s3:x-amz-server-side-encryption-aws-kms-key-id",
    "s3:x-amz-server-side-encryption-customer-algorithm",
    "s3:signatureversion",
    "s3:authtype",
    "s3:tlsversion",
    "s3:objectcreationoperation",
    "s3:object-lock-mode",
    "s3:object-lock-retain-until-date",
    "s3:object-lock-remaining-retention-days",
    "s3:object-lock-legal-hold",
    "s3:signatureage",
    "s3:requestobjecttagkeys",
    "s3:resourceaccount",
    "s3:if-match",
    "s3:if-none-match",
    // Keys no request here carries (access points, CreateBucket's own), which policies written
    // for S3 name: accepted, and a condition on one holds only where S3's rules say an absent key
    // makes it hold (`...IfExists`, `Null`, negated operators).
    "s3:dataaccesspointaccount",
    "s3:dataaccesspointarn",
    "s3:accesspointnetworkorigin",
    "s3:x-amz-object-ownership",
    "s3:locationconstraint",
];

/// Keys whose fixed value keeps a statement granting `*` from being public (S3's rule).
const NARROWING_KEYS: &[&str] = &[
    "aws:sourceip",
    "aws:sourcevpc",
    "aws:sourcevpce",
    "aws:sourceaccount",
    "aws:sourcearn",
    "aws:sourceowner",
    "aws:principalaccount",
    "aws:principalarn",
    "aws:principalorgid",
    "aws:userid",
    "aws:username",
];

type Malformed = String;

fn malformed<T>(why: impl Into<String>) -> Result<T, Malformed> {
    Err(why.into())
}

/// Lower-cases a condition key's name part (`s3:ExistingObjectTag/Owner` keeps `Owner`).
fn key_name(key: &str) -> String {
    match key.split_once('/') {
        Some((family, tag)) => format!("{}/{tag}", family.to_ascii_lowercase()),
        None => key.to_ascii_lowercase(),
    }
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

impl Condition {
    /// [`Condition::test`], with the policy variables in a string or ARN operator's value
    /// replaced first; a value naming a key the request lacks matches nothing.
    fn value_matches(&self, have: &str, want: &str, keys: &HashMap<String, Vec<String>>) -> bool {
        let textual = matches!(
            self.op,
            Op::StringEquals | Op::StringEqualsIgnoreCase | Op::StringLike | Op::ArnLike
        );
        if !(self.variables && textual && want.contains("${")) {
            return self.test(have, want);
        }
        let Some(p) = pattern_with_variables(want, keys) else {
            return false;
        };
        match self.op {
            Op::StringLike => matches_pattern(&p, have),
            Op::ArnLike => arn_matches(&p, have),
            _ => self.test(have, &p.iter().map(|c| c.char()).collect::<String>()),
        }
    }

    /// Whether one value of the request matches one value of the policy (un-negated).
    fn test(&self, have: &str, want: &str) -> bool {
        let num = || Some((have.parse::<f64>().ok()?, want.parse::<f64>().ok()?));
        let date = || Some((parse_date(have)?, parse_date(want)?));
        match self.op {
            Op::StringEquals => have == want,
            Op::StringEqualsIgnoreCase => have.to_lowercase() == want.to_lowercase(),
            Op::StringLike => glob(want, have),
            Op::NumericEquals => num().is_some_and(|(h, w)| h == w),
            Op::NumericLessThan => num().is_some_and(|(h, w)| h < w),
            Op::NumericLessThanEquals => num().is_some_and(|(h, w)| h <= w),
            Op::NumericGreaterThan => num().is_some_and(|(h, w)| h > w),
            Op::NumericGreaterThanEquals => num().is_some_and(|(h, w)| h >= w),
            Op::DateEquals => date().is_some_and(|(h, w)| h == w),
            Op::DateLessThan => date().is_some_and(|(h, w)| h < w),
            Op::DateLessThanEquals => date().is_some_and(|(h, w)| h <= w),
            Op::DateGreaterThan => date().is_some_and(|(h, w)| h > w),
            Op::DateGreaterThanEquals => date().is_some_and(|(h, w)| h >= w),
            Op::Bool => have.eq_ignore_ascii_case(want),
            Op::IpAddress => match (parse_cidr(want), have.parse::<IpAddr>()) {
                (Some(net), Ok(ip)) => cidr_contains(net, ip),
                _ => false,
            },
            Op::ArnLike => arn_like(want, have),
            Op::BinaryEquals => base64_bytes(want).is_some_and(|w| w == have.as_bytes()),
            Op::Null => unreachable!("Null tests presence, not values"),
        }
    }

    /// IAM's rules: an absent key fails a condition, except that negated operators and
    /// `...IfExists` pass, and `Null` tests exactly presence; under a set operator the operator
    /// alone decides (`ForAllValues:` passes, `ForAnyValue:` fails). Several policy values are
    /// ORed (NORed when negated); several request values must all match under `ForAllValues:`.
    fn holds(&self, keys: &HashMap<String, Vec<String>>) -> bool {
        let c = self;
        let have = keys.get(&c.key).filter(|v| !v.is_empty());
        if c.op == Op::Null {
            let want_absent = c.values.iter().any(|v| v.eq_ignore_ascii_case("true"));
            return have.is_none() == want_absent;
        }
        let Some(have) = have else {
            return c.for_all || (!c.for_any && (c.if_exists || c.negated));
        };
        let one = |h: &String| {
            let any = c.values.iter().any(|w| c.value_matches(h, w, keys));
            any != self.negated
        };
        if c.for_all {
            have.iter().all(one)
        } else {
            have.iter().any(one)
        }
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
            s.allow
                && to_everyone
                && !s.conditions.iter().any(|c| {
                    let narrowing = NARROWING_KEYS.contains(&c.key.as_str())
                        && !c.negated
                        && !c.if_exists
                        && c.values
                            .iter()
                            .all(|v| !v.contains('*') && v != "0.0.0.0/0" && v != "::/0");
                    narrowing && matches!(c.op, Op::StringEquals | Op::StringLike | Op::IpAddress | Op::ArnLike)
                })
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

fn parse_conditions(c: &Map<String, Value>, variables: bool) -> Result<Vec<Condition>, Malformed> {
    let mut out = Vec::new();
    for (op_name, block) in c {
        let (set, rest) = match op_name.split_once(':') {
            Some(("ForAnyValue", r)) => (Some(false), r),
            Some(("ForAllValues", r)) => (Some(true), r),
            Some(_) => return malformed(format!("Invalid Condition type : {op_name}")),
            None => (None, op_name.as_str()),
        };
        let (base, if_exists) = match rest.strip_suffix("IfExists") {
            Some(b) => (b, true),
            None => (rest, false),
        };
        let Some((op, negated)) = parse_op(base) else {
            return malformed(format!("Invalid Condition type : {op_name}"));
        };
        if op == Op::Null && if_exists {
            return malformed(format!("Invalid Condition type : {op_name}"));
        }
        let Value::Object(block) = block else {
            return malformed(format!("Condition {op_name} must map keys to values"));
        };
        if block.is_empty() {
            return malformed(format!("Condition {op_name} has no keys"));
        }
        for (key, v) in block {
            let key = key_name(key);
            check_key(&key)?;
            let values = strings(v, "Condition value")?;
            check_values(op, &values)?;
            out.push(Condition {
                op,
                negated,
                if_exists,
                for_all: set == Some(true),
                for_any: set == Some(false),
                variables,
                key,
                values,
            });
        }
    }
    Ok(out)
}

fn check_key(key: &str) -> Result<(), Malformed> {
    let ok = key.starts_with("aws:")
        || S3_KEYS.contains(&key)
        || key.starts_with("s3:existingobjecttag/")
        || key.starts_with("s3:requestobjecttag/");
    if ok && !key.ends_with('/') {
        Ok(())
    } else {
        malformed(format!("Policy has an invalid condition key: {key}"))
    }
}

fn check_values(op: Op, values: &[String]) -> Result<(), Malformed> {
    for v in values {
        let ok = match op {
            Op::NumericEquals
            | Op::NumericLessThan
            | Op::NumericLessThanEquals
            | Op::NumericGreaterThan
            | Op::NumericGreaterThanEquals => v.parse::<f64>().is_ok(),
            Op::DateEquals
            | Op::DateLessThan
            | Op::DateLessThanEquals
            | Op::DateGreaterThan
            | Op::DateGreaterThanEquals => parse_date(v).is_some(),
            Op::Bool | Op::Null => v.eq_ignore_ascii_case("true") || v.eq_ignore_ascii_case("false"),
            Op::IpAddress => parse_cidr(v).is_some(),
            Op::BinaryEquals => base64_bytes(v).is_some(),
            Op::StringEquals | Op::StringEqualsIgnoreCase | Op::StringLike | Op::ArnLike => true,
        };
        if !ok {
            return malformed(format!("Invalid Condition value: {v}"));
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
        ("ListBucketAnalyticsConfigurations", _) => "GetAnalyticsConfiguration",
        ("ListBucketInventoryConfigurations", _) => "GetInventoryConfiguration",
        ("ListBucketMetricsConfigurations", _) => "GetMetricsConfiguration",
        ("ListBucketIntelligentTieringConfigurations", _) => "GetIntelligentTieringConfiguration",
        (op, _) => op,
    };
    format!("s3:{a}")
}

#[cfg(test)]
mod tests;
