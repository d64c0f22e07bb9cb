//! A bucket policy's conditions: the operators IAM defines (string, numeric, date, boolean,
//! address, ARN, binary and `Null` tests, their negations, `...IfExists` and the
//! `ForAllValues:`/`ForAnyValue:` set forms), the condition keys S3 knows, and how a condition
//! holds for a request's keys.

use std::collections::HashMap;
use std::net::IpAddr;

use serde_json::{Map, Value};

use super::matching::{
    arn_like, arn_matches, base64_bytes, cidr_contains, glob, matches_pattern, parse_cidr, parse_date,
    pattern_with_variables,
};
use super::{malformed, strings, Malformed};

/// One test of a statement's `Condition` block: an operator applied to one key.
#[derive(Debug, Clone)]
pub(super) struct Condition {
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
    /// The key, lower-cased but for a tag family's tag name.
    pub(super) key: String,
    values: Vec<String>,
}

/// An operator of a condition, named without its negation or `...IfExists`.
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

/// Lower-cases a condition key's name part (`s3:ExistingObjectTag/Owner` keeps `Owner`).
pub(super) fn key_name(key: &str) -> String {
    match key.split_once('/') {
        Some((family, tag)) => format!("{}/{tag}", family.to_ascii_lowercase()),
        None => key.to_ascii_lowercase(),
    }
}

impl Condition {
    /// Whether this condition keeps an Allow to everyone from being public (S3's rule for
    /// GetBucketPolicyStatus and BlockPublicPolicy): a fixed source address, network, account
    /// or user, matched un-negated and not only if present.
    pub(super) fn narrows(&self) -> bool {
        NARROWING_KEYS.contains(&self.key.as_str())
            && !self.negated
            && !self.if_exists
            && self
                .values
                .iter()
                .all(|v| !v.contains('*') && v != "0.0.0.0/0" && v != "::/0")
            && matches!(self.op, Op::StringEquals | Op::StringLike | Op::IpAddress | Op::ArnLike)
    }

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
    pub(super) fn holds(&self, keys: &HashMap<String, Vec<String>>) -> bool {
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

/// Parses a statement's `Condition` block; `variables` says whether policy variables in its
/// values are replaced (policy version 2012-10-17).
pub(super) fn parse_conditions(c: &Map<String, Value>, variables: bool) -> Result<Vec<Condition>, Malformed> {
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
