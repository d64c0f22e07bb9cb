//! Lifecycle configuration: Put/Get/DeleteBucketLifecycleConfiguration, validated as S3
//! validates it, stored in the bucket's record; and the expiry S3 announces in
//! `x-amz-expiration`. The worker that applies the rules is in `lifecycle_worker.rs`.

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3Request, S3Response, S3Result};

use penstock_metadata::{BucketRecord, LifecycleFilter, LifecycleRule as Rule, LifecycleTransition};

use super::error::meta_err;
use super::object::{format_http_date, ts_ms, validate_tags};
use super::{caller, Gateway};

/// Most rules one configuration holds (S3's limit).
const MAX_RULES: usize = 1000;

/// How long a lifecycle day lasts and how often the worker runs (`lifecycle_day_secs`,
/// `lifecycle_interval_secs`).
#[derive(Debug, Clone, Copy)]
pub struct LifecycleTiming {
    /// Between runs of the worker.
    pub interval: std::time::Duration,
    /// One "day" of a rule's Days, in milliseconds.
    pub day_ms: i64,
}

impl LifecycleTiming {
    /// When an object written at `written_ms` expires under a rule of `days` days: S3 counts
    /// from the write and rounds up to the next midnight UTC. Days shortened for tests are not
    /// rounded (a midnight means nothing to them).
    pub(crate) fn after_days(&self, written_ms: i64, days: u32) -> i64 {
        let at = written_ms.saturating_add(self.day_ms.saturating_mul(days as i64));
        const DAY: i64 = 86_400_000;
        if self.day_ms == DAY {
            at.div_euclid(DAY) * DAY + if at.rem_euclid(DAY) == 0 { 0 } else { DAY }
        } else {
            at
        }
    }

    /// When a current version written at `written_ms` with `tags` and `size` bytes expires, and
    /// the rule that says so: the earliest of the enabled rules that apply.
    pub(crate) fn expiry<'a>(
        &self,
        rules: &'a [Rule],
        key: &str,
        tags: &[(String, String)],
        size: u64,
        written_ms: i64,
    ) -> Option<(i64, &'a Rule)> {
        rules
            .iter()
            .filter(|r| r.enabled && r.filter.matches(key, tags, size))
            .filter_map(|r| Some((self.due_at(written_ms, r.expiration_days, r.expiration_date_ms)?, r)))
            .min_by_key(|(at, _)| *at)
    }

    /// When an action of `days` days or from `date_ms` is due for what was written at
    /// `written_ms` (days win where a rule somehow has both).
    fn due_at(&self, written_ms: i64, days: Option<u32>, date_ms: Option<i64>) -> Option<i64> {
        match (days, date_ms) {
            (Some(d), _) => Some(self.after_days(written_ms, d)),
            (None, date) => date,
        }
    }

    /// The coldest storage class the enabled rules that apply have moved a current version
    /// written at `written_ms` to by `now_ms`, if any.
    pub(crate) fn class_due<'a>(
        &self,
        rules: &'a [Rule],
        key: &str,
        tags: &[(String, String)],
        size: u64,
        written_ms: i64,
        now_ms: i64,
    ) -> Option<&'a str> {
        rules
            .iter()
            .filter(|r| r.enabled && r.filter.matches(key, tags, size))
            .flat_map(|r| &r.transitions)
            .filter(|t| {
                self.due_at(written_ms, t.days, t.date_ms)
                    .is_some_and(|at| at <= now_ms)
            })
            .map(|t| t.storage_class.as_str())
            .max_by_key(|c| coldness(c))
    }
}

/// `x-amz-expiration`: `expiry-date="<HTTP date>", rule-id="<id>"`.
pub(crate) fn expiration_header(at_ms: i64, rule: &Rule) -> Option<String> {
    let date = format_http_date(&ts_ms(at_ms))?;
    Some(format!(
        "expiry-date=\"{date}\", rule-id=\"{}\"",
        rule.id.replace('"', "")
    ))
}

impl Gateway {
    /// PutBucketLifecycleConfiguration: replaces the bucket's rules.
    pub(crate) async fn put_bucket_lifecycle_configuration(
        &self,
        req: S3Request<PutBucketLifecycleConfigurationInput>,
    ) -> S3Result<S3Response<PutBucketLifecycleConfigurationOutput>> {
        let i = &req.input;
        let conf = i
            .lifecycle_configuration
            .as_ref()
            .ok_or_else(|| s3_error!(MalformedXML, "The lifecycle configuration is missing"))?;
        let rules = parse_rules(&conf.rules)?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        self.update_bucket(&b.rec, move |rec| rec.lifecycle = rules.clone())
            .await?;
        Ok(S3Response::new(PutBucketLifecycleConfigurationOutput::default()))
    }

    /// GetBucketLifecycleConfiguration: the rules as given; 404 `NoSuchLifecycleConfiguration`
    /// when there are none.
    pub(crate) async fn get_bucket_lifecycle_configuration(
        &self,
        req: S3Request<GetBucketLifecycleConfigurationInput>,
    ) -> S3Result<S3Response<GetBucketLifecycleConfigurationOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if b.rec.lifecycle.is_empty() {
            return Err(s3_error!(
                NoSuchLifecycleConfiguration,
                "The lifecycle configuration does not exist"
            ));
        }
        Ok(S3Response::new(GetBucketLifecycleConfigurationOutput {
            rules: Some(b.rec.lifecycle.iter().map(rule_out).collect()),
            ..Default::default()
        }))
    }

    /// DeleteBucketLifecycle: removes every rule (204 whether there were any or not).
    pub(crate) async fn delete_bucket_lifecycle(
        &self,
        req: S3Request<DeleteBucketLifecycleInput>,
    ) -> S3Result<S3Response<DeleteBucketLifecycleOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        if !b.rec.lifecycle.is_empty() {
            self.update_bucket(&b.rec, |rec| rec.lifecycle.clear()).await?;
        }
        let mut resp = S3Response::new(DeleteBucketLifecycleOutput::default());
        resp.status = Some(http::StatusCode::NO_CONTENT);
        Ok(resp)
    }

    /// Changes a bucket's stored record by `f`, where it is stored (the access check's copy may
    /// be a moment old, and other changes of the bucket may run at once: see
    /// `Metadata::update_bucket`). 404 `NoSuchBucket` when it is gone (or another bucket took its
    /// name).
    pub(crate) async fn update_bucket(
        &self,
        seen: &BucketRecord,
        mut f: impl FnMut(&mut BucketRecord) + Send + 'static,
    ) -> S3Result<()> {
        self.edit_bucket(seen, move |rec| {
            f(rec);
            true
        })
        .await
        .map(drop)
    }

    /// [`Gateway::update_bucket`] for a change that may decline (`f` answers false, and nothing
    /// is written): the record as stored afterwards, and whether `f` changed it. `f` may be
    /// called more than once (on PostgreSQL, again after a serialization failure), each time on
    /// the record as stored then.
    pub(crate) async fn edit_bucket(
        &self,
        seen: &BucketRecord,
        mut f: impl FnMut(&mut BucketRecord) -> bool + Send + 'static,
    ) -> S3Result<(BucketRecord, bool)> {
        let folder = seen.folder_id;
        let edit = Box::new(move |rec: &mut BucketRecord| rec.folder_id == folder && f(rec));
        match self
            .meta
            .update_bucket(&seen.domain, &seen.name, edit)
            .await
            .map_err(meta_err)?
        {
            Some((rec, written)) if rec.folder_id == folder => Ok((rec, written)),
            _ => Err(s3_error!(NoSuchBucket, "The specified bucket does not exist")),
        }
    }

    /// The `x-amz-expiration` of a current version, if a rule of its bucket expires it.
    pub(crate) fn expiration_of(
        &self,
        rules: &[Rule],
        key: &str,
        tags: &[(String, String)],
        size: u64,
        mtime_ns: i128,
    ) -> Option<String> {
        let written_ms = (mtime_ns / 1_000_000) as i64;
        let (at, rule) = self.lifecycle.expiry(rules, key, tags, size, written_ms)?;
        expiration_header(at, rule)
    }
}

fn invalid(msg: impl Into<String>) -> S3Error {
    S3Error::with_message(s3s::S3ErrorCode::InvalidArgument, msg.into())
}

fn malformed() -> S3Error {
    s3_error!(
        MalformedXML,
        "The XML you provided was not well-formed or did not validate against our published schema"
    )
}

/// A positive count of days, as S3 words its refusal.
fn positive_days(v: Option<i32>, what: &str) -> S3Result<Option<u32>> {
    match v {
        None => Ok(None),
        Some(d) if d > 0 => Ok(Some(d as u32)),
        Some(_) => Err(invalid(format!("'{what}' must be a positive integer"))),
    }
}

/// Validates a configuration's rules and turns them into stored ones.
fn parse_rules(rules: &[LifecycleRule]) -> S3Result<Vec<Rule>> {
    if rules.is_empty() || rules.len() > MAX_RULES {
        return Err(malformed());
    }
    let mut out: Vec<Rule> = Vec::with_capacity(rules.len());
    for r in rules {
        let rule = parse_rule(r)?;
        if out.iter().any(|o| o.id == rule.id) {
            return Err(invalid("Rule ID must be unique. Found same ID for more than one rule"));
        }
        out.push(rule);
    }
    Ok(out)
}

fn parse_rule(r: &LifecycleRule) -> S3Result<Rule> {
    let id = match r.id.as_deref() {
        Some(id) if id.len() > 255 => return Err(invalid("ID length should not exceed allowed limit of 255")),
        Some(id) if !id.is_empty() => id.to_owned(),
        // S3 names a rule given without an id.
        _ => format!("{:016x}", rand::random::<u64>()),
    };
    let enabled = match r.status.as_str() {
        ExpirationStatus::ENABLED => true,
        ExpirationStatus::DISABLED => false,
        _ => return Err(malformed()),
    };
    let filter = parse_filter(r.filter.as_ref(), r.prefix.as_deref())?;
    let mut rule = Rule {
        id,
        enabled,
        filter,
        ..Default::default()
    };
    if let Some(e) = &r.expiration {
        let marker = e.expired_object_delete_marker;
        if marker.is_some() && (e.days.is_some() || e.date.is_some()) {
            return Err(malformed());
        }
        match (e.days, &e.date) {
            (Some(_), Some(_)) => return Err(malformed()),
            (None, None) if marker.is_none() => return Err(malformed()),
            _ => {}
        }
        rule.expiration_days = positive_days(e.days, "Days")?;
        if let Some(date) = &e.date {
            let t = time::OffsetDateTime::from(date.clone());
            if t.time() != time::Time::MIDNIGHT || t.offset() != time::UtcOffset::UTC {
                return Err(invalid("'Date' must be at midnight GMT"));
            }
            rule.expiration_date_ms = Some((t.unix_timestamp_nanos() / 1_000_000) as i64);
        }
        rule.expired_object_delete_marker = marker == Some(true);
        if marker == Some(true) && !rule.filter.tags.is_empty() {
            return Err(invalid(
                "ExpiredObjectDeleteMarker cannot be specified with a tag-based filter",
            ));
        }
    }
    if let Some(n) = &r.noncurrent_version_expiration {
        rule.noncurrent_days = positive_days(n.noncurrent_days, "NoncurrentDays")?;
        if rule.noncurrent_days.is_none() {
            return Err(malformed());
        }
        match n.newer_noncurrent_versions {
            None => {}
            Some(v) if (1..=100).contains(&v) => rule.newer_noncurrent_versions = Some(v as u32),
            Some(_) => return Err(invalid("'NewerNoncurrentVersions' must be between 1 and 100")),
        }
    }
    if let Some(a) = &r.abort_incomplete_multipart_upload {
        rule.abort_incomplete_days = positive_days(a.days_after_initiation, "DaysAfterInitiation")?;
        if rule.abort_incomplete_days.is_none() {
            return Err(malformed());
        }
        if !rule.filter.tags.is_empty()
            || rule.filter.size_greater_than.is_some()
            || rule.filter.size_less_than.is_some()
        {
            return Err(s3_error!(
                InvalidRequest,
                "AbortIncompleteMultipartUpload cannot be specified with Tags or object size filters"
            ));
        }
    }
    rule.transitions = r
        .transitions
        .iter()
        .flatten()
        .map(|t| transition(t.days, t.date.clone(), t.storage_class.as_ref(), None, "Transition"))
        .collect::<S3Result<_>>()?;
    rule.noncurrent_transitions = r
        .noncurrent_version_transitions
        .iter()
        .flatten()
        .map(|t| {
            let days = t.noncurrent_days.ok_or_else(malformed)?;
            let keep = match t.newer_noncurrent_versions {
                None => None,
                Some(v) if (1..=100).contains(&v) => Some(v as u32),
                Some(_) => return Err(invalid("'NewerNoncurrentVersions' must be between 1 and 100")),
            };
            transition(
                Some(days),
                None,
                t.storage_class.as_ref(),
                keep,
                "NoncurrentVersionTransition",
            )
        })
        .collect::<S3Result<_>>()?;
    check_transitions(&rule)?;
    let acts = rule.expiration_days.is_some()
        || rule.expiration_date_ms.is_some()
        || rule.expired_object_delete_marker
        || rule.noncurrent_days.is_some()
        || rule.abort_incomplete_days.is_some()
        || !rule.transitions.is_empty()
        || !rule.noncurrent_transitions.is_empty();
    if !acts {
        return Err(s3_error!(
            InvalidRequest,
            "At least one action needs to be specified in a rule"
        ));
    }
    Ok(rule)
}

/// The storage classes a lifecycle rule may move objects to, warmest first: S3 moves objects
/// only down this list, never back up it.
const TRANSITION_CLASSES: [&str; 6] = [
    TransitionStorageClass::STANDARD_IA,
    TransitionStorageClass::INTELLIGENT_TIERING,
    TransitionStorageClass::ONEZONE_IA,
    TransitionStorageClass::GLACIER_IR,
    TransitionStorageClass::GLACIER,
    TransitionStorageClass::DEEP_ARCHIVE,
];

/// How cold a storage class is: 0 for `STANDARD` and the classes no transition leads to, then
/// the rank in [`TRANSITION_CLASSES`] from 1.
pub(crate) fn coldness(class: &str) -> usize {
    TRANSITION_CLASSES.iter().position(|c| *c == class).map_or(0, |i| i + 1)
}

/// One `Transition` or `NoncurrentVersionTransition`, validated as S3 does: exactly one of
/// days and date, days not negative (at least 30 to an infrequent-access class), a class
/// transitions lead to.
fn transition(
    days: Option<i32>,
    date: Option<Timestamp>,
    class: Option<&TransitionStorageClass>,
    newer_noncurrent_versions: Option<u32>,
    what: &str,
) -> S3Result<LifecycleTransition> {
    let class = class.ok_or_else(malformed)?.as_str();
    if coldness(class) == 0 {
        return Err(malformed());
    }
    let date_ms = match (days, date) {
        (Some(_), Some(_)) | (None, None) => return Err(malformed()),
        (Some(_), None) => None,
        (None, Some(d)) => {
            let t = time::OffsetDateTime::from(d);
            if t.time() != time::Time::MIDNIGHT || t.offset() != time::UtcOffset::UTC {
                return Err(invalid("'Date' must be at midnight GMT"));
            }
            Some((t.unix_timestamp_nanos() / 1_000_000) as i64)
        }
    };
    let days = match days {
        Some(d) if d < 0 => return Err(invalid(format!("'Days' for {what} action must be a positive integer"))),
        Some(d) => Some(d as u32),
        None => None,
    };
    let infrequent = [TransitionStorageClass::STANDARD_IA, TransitionStorageClass::ONEZONE_IA].contains(&class);
    if infrequent && days.is_some_and(|d| d < 30) {
        return Err(invalid(format!(
            "'Days' in {what} action must be greater than or equal to 30 for storageClass '{class}'"
        )));
    }
    Ok(LifecycleTransition {
        days,
        date_ms,
        storage_class: class.to_owned(),
        newer_noncurrent_versions,
    })
}

/// What S3 checks across a rule's transitions: one class at most once among the transitions of
/// each kind, days or dates but not both (with the expiration's too), and expiry after every
/// transition.
fn check_transitions(rule: &Rule) -> S3Result<()> {
    for (list, what) in [
        (&rule.transitions, "Transition"),
        (&rule.noncurrent_transitions, "NoncurrentVersionTransition"),
    ] {
        for (i, t) in list.iter().enumerate() {
            if list[..i].iter().any(|o| o.storage_class == t.storage_class) {
                return Err(invalid(format!(
                    "'StorageClass' must be different for '{what}' actions in same 'Rule'"
                )));
            }
        }
    }
    let by_days = rule.transitions.iter().filter(|t| t.days.is_some()).count();
    let by_date = rule.transitions.len() - by_days;
    // Days somewhere (a transition's or the expiration's) and dates somewhere.
    let days = by_days > 0 || rule.expiration_days.is_some();
    let dates = by_date > 0 || rule.expiration_date_ms.is_some();
    let mixed = !rule.transitions.is_empty() && days && dates;
    if mixed {
        return Err(invalid(
            "Found mixed 'Date' and 'Days' based Expiration and Transition actions in lifecycle rule",
        ));
    }
    // Expiry comes after every transition of its kind.
    let after = |expiry: Option<i64>, transition: Option<i64>, msg: &str| match (expiry, transition) {
        (Some(e), Some(t)) if e <= t => Err(invalid(msg)),
        _ => Ok(()),
    };
    let latest_days = |list: &[LifecycleTransition]| list.iter().filter_map(|t| t.days.map(i64::from)).max();
    after(
        rule.expiration_days.map(i64::from),
        latest_days(&rule.transitions),
        "'Days' in the Expiration action must be greater than 'Days' in the Transition action",
    )?;
    after(
        rule.expiration_date_ms,
        rule.transitions.iter().filter_map(|t| t.date_ms).max(),
        "'Date' in the Expiration action must be later than 'Date' in the Transition action",
    )?;
    after(
        rule.noncurrent_days.map(i64::from),
        latest_days(&rule.noncurrent_transitions),
        "'NoncurrentDays' in the NoncurrentVersionExpiration action must be greater than 'NoncurrentDays' in the NoncurrentVersionTransition action",
    )?;
    Ok(())
}

/// The filter of a rule: the rule-level `Prefix` of the old schema, or a `Filter` holding one
/// of `Prefix`, `Tag`, `ObjectSizeGreaterThan`, `ObjectSizeLessThan`, or an `And` of several.
fn parse_filter(f: Option<&LifecycleRuleFilter>, legacy: Option<&str>) -> S3Result<LifecycleFilter> {
    let Some(f) = f else {
        return Ok(LifecycleFilter {
            prefix: legacy.unwrap_or_default().to_owned(),
            legacy_prefix: legacy.is_some(),
            ..Default::default()
        });
    };
    if legacy.is_some() {
        return Err(malformed());
    }
    let given = [
        f.prefix.is_some(),
        f.tag.is_some(),
        f.object_size_greater_than.is_some(),
        f.object_size_less_than.is_some(),
        f.and.is_some(),
    ];
    if given.iter().filter(|g| **g).count() > 1 {
        return Err(malformed());
    }
    let size = |v: Option<i64>| -> S3Result<Option<u64>> {
        v.map(|n| u64::try_from(n).map_err(|_| invalid("Object size must be a non-negative integer")))
            .transpose()
    };
    let tag = |t: &Tag| -> S3Result<(String, String)> {
        let k = t.key.clone().ok_or_else(malformed)?;
        Ok((k, t.value.clone().unwrap_or_default()))
    };
    let mut out = LifecycleFilter::default();
    if let Some(a) = &f.and {
        out.and = true;
        out.prefix = a.prefix.clone().unwrap_or_default();
        out.tags = a.tags.iter().flatten().map(tag).collect::<S3Result<_>>()?;
        out.size_greater_than = size(a.object_size_greater_than)?;
        out.size_less_than = size(a.object_size_less_than)?;
    } else {
        out.prefix = f.prefix.clone().unwrap_or_default();
        out.tags = f.tag.iter().map(tag).collect::<S3Result<_>>()?;
        out.size_greater_than = size(f.object_size_greater_than)?;
        out.size_less_than = size(f.object_size_less_than)?;
    }
    if !out.tags.is_empty() {
        validate_tags(&out.tags)?;
    }
    if let (Some(gt), Some(lt)) = (out.size_greater_than, out.size_less_than) {
        if gt >= lt {
            return Err(invalid("ObjectSizeGreaterThan must be less than ObjectSizeLessThan"));
        }
    }
    Ok(out)
}

/// A stored rule as GetBucketLifecycleConfiguration answers it: in the form it was given.
fn rule_out(r: &Rule) -> LifecycleRule {
    let f = &r.filter;
    let tag = |(k, v): &(String, String)| Tag {
        key: Some(k.clone()),
        value: Some(v.clone()),
    };
    let size = |v: Option<u64>| v.map(|n| n as i64);
    let filter = if f.legacy_prefix {
        None
    } else if f.and {
        Some(LifecycleRuleFilter {
            and: Some(LifecycleRuleAndOperator {
                prefix: (!f.prefix.is_empty()).then(|| f.prefix.clone()),
                tags: (!f.tags.is_empty()).then(|| f.tags.iter().map(tag).collect()),
                object_size_greater_than: size(f.size_greater_than),
                object_size_less_than: size(f.size_less_than),
            }),
            ..Default::default()
        })
    } else {
        Some(LifecycleRuleFilter {
            prefix: (f.tags.is_empty() && f.size_greater_than.is_none() && f.size_less_than.is_none())
                .then(|| f.prefix.clone()),
            tag: f.tags.first().map(tag),
            object_size_greater_than: size(f.size_greater_than),
            object_size_less_than: size(f.size_less_than),
            ..Default::default()
        })
    };
    let expiration = (r.expiration_days.is_some() || r.expiration_date_ms.is_some() || r.expired_object_delete_marker)
        .then(|| LifecycleExpiration {
            days: r.expiration_days.map(|d| d as i32),
            date: r.expiration_date_ms.map(ts_ms),
            expired_object_delete_marker: r.expired_object_delete_marker.then_some(true),
        });
    LifecycleRule {
        id: Some(r.id.clone()),
        status: ExpirationStatus::from_static(if r.enabled {
            ExpirationStatus::ENABLED
        } else {
            ExpirationStatus::DISABLED
        }),
        prefix: f.legacy_prefix.then(|| f.prefix.clone()),
        filter,
        expiration,
        noncurrent_version_expiration: r.noncurrent_days.map(|d| NoncurrentVersionExpiration {
            noncurrent_days: Some(d as i32),
            newer_noncurrent_versions: r.newer_noncurrent_versions.map(|n| n as i32),
        }),
        abort_incomplete_multipart_upload: r.abort_incomplete_days.map(|d| AbortIncompleteMultipartUpload {
            days_after_initiation: Some(d as i32),
        }),
        transitions: (!r.transitions.is_empty()).then(|| {
            r.transitions
                .iter()
                .map(|t| Transition {
                    days: t.days.map(|d| d as i32),
                    date: t.date_ms.map(ts_ms),
                    storage_class: Some(TransitionStorageClass::from(t.storage_class.clone())),
                })
                .collect()
        }),
        noncurrent_version_transitions: (!r.noncurrent_transitions.is_empty()).then(|| {
            r.noncurrent_transitions
                .iter()
                .map(|t| NoncurrentVersionTransition {
                    noncurrent_days: t.days.map(|d| d as i32),
                    newer_noncurrent_versions: t.newer_noncurrent_versions.map(|n| n as i32),
                    storage_class: Some(TransitionStorageClass::from(t.storage_class.clone())),
                })
                .collect()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_days_round_up_to_midnight_and_short_days_do_not() {
        let day = LifecycleTiming {
            interval: std::time::Duration::from_secs(1),
            day_ms: 86_400_000,
        };
        // Written 2026-01-01 13:00 UTC, one day: expires 2026-01-03 00:00 UTC.
        let written = 1_767_272_400_000;
        assert_eq!(day.after_days(written, 1), 1_767_398_400_000);
        let short = LifecycleTiming { day_ms: 1000, ..day };
        assert_eq!(short.after_days(written, 3), written + 3000);
    }

    #[test]
    fn rules_are_validated_as_s3_does() {
        let rule = |days: Option<i32>| LifecycleRule {
            id: Some("r".into()),
            status: ExpirationStatus::from_static(ExpirationStatus::ENABLED),
            expiration: Some(LifecycleExpiration {
                days,
                ..Default::default()
            }),
            abort_incomplete_multipart_upload: None,
            filter: None,
            noncurrent_version_expiration: None,
            noncurrent_version_transitions: None,
            prefix: None,
            transitions: None,
        };
        assert!(parse_rules(&[rule(Some(3))]).is_ok());
        assert_eq!(
            parse_rules(&[rule(Some(0))]).unwrap_err().code().as_str(),
            "InvalidArgument"
        );
        assert_eq!(parse_rules(&[rule(None)]).unwrap_err().code().as_str(), "MalformedXML");
        assert_eq!(
            parse_rules(&[rule(Some(1)), rule(Some(2))])
                .unwrap_err()
                .code()
                .as_str(),
            "InvalidArgument"
        );
        assert_eq!(parse_rules(&[]).unwrap_err().code().as_str(), "MalformedXML");
        let mut bad = rule(Some(1));
        bad.status = ExpirationStatus::from("enabled".to_owned());
        assert_eq!(parse_rules(&[bad]).unwrap_err().code().as_str(), "MalformedXML");
    }
}
