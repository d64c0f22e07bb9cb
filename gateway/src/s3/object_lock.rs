//! Object lock: a bucket's configuration (PutObjectLockConfiguration, and CreateBucket with
//! object lock), each version's retention and legal hold (PutObjectRetention,
//! PutObjectLegalHold, or the `x-amz-object-lock-*` headers of the write that made it), and
//! the rule they enforce: a version under legal hold, or under a retention still running, is not
//! deleted for good (DeleteObject and DeleteObjects with a version id, lifecycle expiry), except a
//! `GOVERNANCE` retention by a caller allowed `s3:BypassGovernanceRetention` who sends
//! `x-amz-bypass-governance-retention: true`.
//!
//! A lock holds versions in S3's sense: an object lock bucket is versioned (and stays so), so an
//! overwrite or a delete without a version id keeps the locked version as a noncurrent one. What
//! it cannot hold is the key's file as a compute session sees it: a session that mounts the
//! folder writes files directly, outside S3 (docs/versioning.md).

use s3s::dto::*;
use s3s::{s3_error, S3Error, S3ErrorCode, S3Request, S3Response, S3Result};

use http::StatusCode;
use penstock_metadata::{
    BucketRecord, DefaultRetention, ObjectAttrs, ObjectLock, Perm, Retention, RetentionMode, Versioning,
};

use super::error::custom;
use penstock_backends::ObjectPath;

use super::object::{now_ms, parse_key, ts_ms};
use super::versioning::Found;
use super::{caller, peer, BucketCtx, Gateway, RequestFacts};

/// Longest default retention S3 takes, in days and in years.
const MAX_DEFAULT_DAYS: i32 = 36_500;
const MAX_DEFAULT_YEARS: i32 = 100;

/// What a write asks of object lock, from its headers (or a form's fields).
#[derive(Default)]
pub(crate) struct LockInput {
    pub mode: Option<String>,
    pub until: Option<Timestamp>,
    pub legal_hold: Option<String>,
}

/// The [`LockInput`] of any operation input with the usual `object_lock_*` fields.
macro_rules! lock_input {
    ($i:expr) => {
        $crate::s3::object_lock::LockInput {
            mode: $i.object_lock_mode.as_ref().map(|m| m.as_str().to_owned()),
            until: $i.object_lock_retain_until_date.clone(),
            legal_hold: $i.object_lock_legal_hold_status.as_ref().map(|h| h.as_str().to_owned()),
        }
    };
}
pub(crate) use lock_input;

impl LockInput {
    /// Sets the lock of a new version written into bucket `b`: the retention and legal hold its
    /// write names, else the bucket's default retention. A new version takes nothing of the lock
    /// of another (a copy's source, say), as on S3. A write naming a lock in a bucket without
    /// object lock is 400 `InvalidRequest`.
    pub(crate) fn apply(self, b: &BucketRecord, attrs: &mut ObjectAttrs) -> S3Result<()> {
        attrs.retention = None;
        attrs.legal_hold = None;
        let named = self.mode.is_some() || self.until.is_some() || self.legal_hold.is_some();
        let Some(lock) = &b.object_lock else {
            return if named { Err(missing_configuration()) } else { Ok(()) };
        };
        attrs.retention = match (self.mode, self.until) {
            (Some(mode), Some(until)) => {
                let mode = RetentionMode::parse(&mode)
                    .ok_or_else(|| s3_error!(InvalidArgument, "Unknown wormMode directive."))?;
                Some(Retention {
                    mode,
                    until_ms: future_ms(&until)?,
                })
            }
            (None, None) => lock.default_retention.as_ref().map(|d| default_retention(d, now_ms())),
            _ => {
                return Err(s3_error!(
                    InvalidArgument,
                    "x-amz-object-lock-retain-until-date and x-amz-object-lock-mode must both be supplied"
                ))
            }
        };
        if let Some(h) = self.legal_hold {
            attrs.legal_hold = Some(
                legal_hold_on(&h)
                    .ok_or_else(|| s3_error!(InvalidArgument, "Legal Hold must be either of 'ON' or 'OFF'"))?,
            );
        }
        Ok(())
    }
}

/// 400 `InvalidRequest`: a lock asked of a bucket without object lock.
fn missing_configuration() -> S3Error {
    s3_error!(InvalidRequest, "Bucket is missing Object Lock Configuration")
}

/// 400 `MalformedXML`: a lock document S3's schema does not admit.
fn malformed() -> S3Error {
    s3_error!(
        MalformedXML,
        "The XML you provided was not well-formed or did not validate against our published schema"
    )
}

/// 403 `AccessDenied`: the version's lock forbids the change.
fn protected() -> S3Error {
    s3_error!(AccessDenied, "Access Denied because object protected by object lock.")
}

/// `ON` or `OFF`, exactly as S3 spells them.
fn legal_hold_on(s: &str) -> Option<bool> {
    match s {
        "ON" => Some(true),
        "OFF" => Some(false),
        _ => None,
    }
}

/// A retain-until date in Unix milliseconds; 400 `InvalidArgument` unless still to come.
fn future_ms(t: &Timestamp) -> S3Result<i64> {
    let ms = (time::OffsetDateTime::from(t.clone()).unix_timestamp_nanos() / 1_000_000) as i64;
    if ms <= now_ms() {
        return Err(s3_error!(
            InvalidArgument,
            "The retain until date must be in the future!"
        ));
    }
    Ok(ms)
}

/// The retention a bucket's default gives a version written at `now` (Unix milliseconds):
/// days of 24 hours, or calendar years (29 February ends on 28 February of a common year).
fn default_retention(d: &DefaultRetention, now: i64) -> Retention {
    let until_ms = match (d.days, d.years) {
        (Some(days), _) => now + i64::from(days) * 86_400_000,
        (None, Some(years)) => {
            let t = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(now) * 1_000_000)
                .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
            let year = t.year() + years as i32;
            let later = t
                .replace_year(year)
                .or_else(|_| t.replace_day(28).and_then(|t| t.replace_year(year)))
                .unwrap_or(t);
            (later.unix_timestamp_nanos() / 1_000_000) as i64
        }
        (None, None) => now,
    };
    Retention { mode: d.mode, until_ms }
}

/// A retention still running at `now`.
fn running(r: Option<Retention>, now: i64) -> Option<Retention> {
    r.filter(|r| r.until_ms > now)
}

/// Refuses (403 `AccessDenied`) to remove for good a version whose lock protects it: a legal
/// hold, a `COMPLIANCE` retention still running, or a `GOVERNANCE` one unless `bypass` (see
/// [`Gateway::may_bypass`]).
pub(crate) fn check_removable(attrs: &ObjectAttrs, bypass: bool) -> S3Result<()> {
    if attrs.legal_hold == Some(true) {
        return Err(protected());
    }
    match running(attrs.retention, now_ms()) {
        Some(r) if r.mode == RetentionMode::Compliance || !bypass => Err(protected()),
        _ => Ok(()),
    }
}

/// Whether a version may be removed for good by the lifecycle worker (which never bypasses).
pub(crate) fn removable(attrs: &ObjectAttrs) -> bool {
    check_removable(attrs, false).is_ok()
}

/// Refuses (403 `AccessDenied`) a retention change that weakens one still running: a shorter
/// date, another mode or none at all; a `GOVERNANCE` retention allows it with `bypass`, a
/// `COMPLIANCE` one never (S3's rules).
fn check_retention_change(old: Option<Retention>, new: Option<Retention>, bypass: bool) -> S3Result<()> {
    let Some(old) = running(old, now_ms()) else {
        return Ok(());
    };
    let keeps = new.is_some_and(|n| n.mode == old.mode && n.until_ms >= old.until_ms);
    if keeps || (old.mode == RetentionMode::Governance && bypass) {
        return Ok(());
    }
    Err(protected())
}

/// A bucket's object lock configuration as S3 answers it.
fn configuration_out(lock: &ObjectLock) -> ObjectLockConfiguration {
    ObjectLockConfiguration {
        object_lock_enabled: Some(ObjectLockEnabled::from_static(ObjectLockEnabled::ENABLED)),
        rule: lock.default_retention.as_ref().map(|d| ObjectLockRule {
            default_retention: Some(s3s::dto::DefaultRetention {
                mode: Some(ObjectLockRetentionMode::from(d.mode.as_str().to_owned())),
                days: d.days.map(|n| n as i32),
                years: d.years.map(|n| n as i32),
            }),
        }),
    }
}

/// A PutObjectLockConfiguration document read: 400 `MalformedXML` for a status other than
/// `Enabled`, a mode S3 does not know, or a period that is not exactly one of days or years;
/// 400 `InvalidRetentionPeriod` for a period that is not positive (or beyond 100 years).
fn configuration_in(conf: Option<ObjectLockConfiguration>) -> S3Result<ObjectLock> {
    let conf = conf.ok_or_else(malformed)?;
    if conf.object_lock_enabled.as_ref().map(|e| e.as_str()) != Some(ObjectLockEnabled::ENABLED) {
        return Err(malformed());
    }
    let Some(d) = conf.rule.and_then(|r| r.default_retention) else {
        return Ok(ObjectLock::default());
    };
    let mode = d
        .mode
        .as_ref()
        .and_then(|m| RetentionMode::parse(m.as_str()))
        .ok_or_else(malformed)?;
    let period = |n: i32, most: i32| {
        if n <= 0 || n > most {
            return Err(custom(
                "InvalidRetentionPeriod",
                StatusCode::BAD_REQUEST,
                "Default retention period must be a positive integer value",
            ));
        }
        Ok(n as u32)
    };
    let (days, years) = match (d.days, d.years) {
        (Some(n), None) => (Some(period(n, MAX_DEFAULT_DAYS)?), None),
        (None, Some(n)) => (None, Some(period(n, MAX_DEFAULT_YEARS)?)),
        _ => return Err(malformed()),
    };
    Ok(ObjectLock {
        default_retention: Some(DefaultRetention { mode, days, years }),
    })
}

impl Gateway {
    /// Whether the request asks to bypass governance retention (`asked`: its
    /// `x-amz-bypass-governance-retention` is `true`) for `key` and its caller may: S3's
    /// `s3:BypassGovernanceRetention`, which holders of delete permission on the folder have
    /// and a bucket policy may grant others or deny anyone (administrators aside).
    pub(crate) async fn may_bypass<I>(
        &self,
        req: &S3Request<I>,
        asked: Option<bool>,
        b: &BucketRecord,
        key: &str,
        version: Option<&str>,
    ) -> S3Result<bool> {
        if asked != Some(true) {
            return Ok(false);
        }
        let who = caller(req)?;
        let facts = RequestFacts {
            op: "BypassGovernanceRetention",
            key: Some(key),
            version,
            uri: &req.uri,
            headers: &req.headers,
            peer: peer(req).map(|p| p.0.ip()),
        };
        self.permits(&who, b, who.may(b, Perm::Wd), &facts).await
    }

    /// PutObjectLockConfiguration: enables object lock on a versioned bucket (409
    /// `InvalidBucketState` on one that is not) and sets or clears its default retention.
    pub(crate) async fn put_object_lock_configuration(
        &self,
        req: S3Request<PutObjectLockConfigurationInput>,
    ) -> S3Result<S3Response<PutObjectLockConfigurationOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let lock = configuration_in(req.input.object_lock_configuration)?;
        // Judged on the record as stored: versioning may have changed a moment ago.
        let (rec, _) = self
            .edit_bucket(&b.rec, move |rec| {
                let allowed = rec.object_lock.is_some() || rec.versioning == Some(Versioning::Enabled);
                if allowed {
                    rec.object_lock = Some(lock.clone());
                }
                allowed
            })
            .await?;
        if rec.object_lock.is_none() {
            return Err(s3_error!(
                InvalidBucketState,
                "Versioning must be 'Enabled' on the bucket to apply a Object Lock configuration"
            ));
        }
        Ok(S3Response::new(PutObjectLockConfigurationOutput::default()))
    }

    /// GetObjectLockConfiguration: 404 `ObjectLockConfigurationNotFoundError` where object lock
    /// was never enabled.
    pub(crate) async fn get_object_lock_configuration(
        &self,
        req: S3Request<GetObjectLockConfigurationInput>,
    ) -> S3Result<S3Response<GetObjectLockConfigurationOutput>> {
        let b = self.bucket(&caller(&req)?, &req.input.bucket).await?;
        let lock = b.rec.object_lock.as_ref().ok_or_else(|| {
            s3_error!(
                ObjectLockConfigurationNotFoundError,
                "Object Lock configuration does not exist for this bucket"
            )
        })?;
        Ok(S3Response::new(GetObjectLockConfigurationOutput {
            object_lock_configuration: Some(configuration_out(lock)),
        }))
    }

    /// PutObjectRetention: sets (or, with an empty document, removes) a version's retention,
    /// never weakening one still running but as [`check_retention_change`] allows.
    pub(crate) async fn put_object_retention(
        &self,
        req: S3Request<PutObjectRetentionInput>,
    ) -> S3Result<S3Response<PutObjectRetentionOutput>> {
        let i = &req.input;
        parse_key(&i.key)?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        if b.rec.object_lock.is_none() {
            return Err(missing_configuration());
        }
        let given = i.retention.clone().unwrap_or_default();
        let new = match (given.mode, given.retain_until_date) {
            (None, None) => None,
            (Some(mode), Some(until)) => Some(Retention {
                mode: RetentionMode::parse(mode.as_str()).ok_or_else(malformed)?,
                until_ms: future_ms(&until)?,
            }),
            _ => return Err(malformed()),
        };
        let bypass = self
            .may_bypass(&req, i.bypass_governance_retention, &b.rec, &i.key, None)
            .await?;
        self.edit_record_in(&b, &i.key, i.version_id.as_deref(), |r| {
            check_retention_change(r.attrs.retention, new, bypass)?;
            r.attrs.retention = new;
            Ok(true)
        })
        .await?;
        Ok(S3Response::new(PutObjectRetentionOutput::default()))
    }

    /// GetObjectRetention: 404 `NoSuchObjectLockConfiguration` for a version without one.
    pub(crate) async fn get_object_retention(
        &self,
        req: S3Request<GetObjectRetentionInput>,
    ) -> S3Result<S3Response<GetObjectRetentionOutput>> {
        let i = &req.input;
        let attrs = self
            .locked_attrs(&req, &i.bucket, &i.key, i.version_id.as_deref())
            .await?;
        let r = attrs.retention.ok_or_else(no_lock_of_object)?;
        Ok(S3Response::new(GetObjectRetentionOutput {
            retention: Some(ObjectLockRetention {
                mode: Some(ObjectLockRetentionMode::from(r.mode.as_str().to_owned())),
                retain_until_date: Some(ts_ms(r.until_ms)),
            }),
        }))
    }

    /// PutObjectLegalHold: puts a version's legal hold on or off.
    pub(crate) async fn put_object_legal_hold(
        &self,
        req: S3Request<PutObjectLegalHoldInput>,
    ) -> S3Result<S3Response<PutObjectLegalHoldOutput>> {
        let i = &req.input;
        parse_key(&i.key)?;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        if b.rec.object_lock.is_none() {
            return Err(missing_configuration());
        }
        let on = i
            .legal_hold
            .as_ref()
            .and_then(|h| h.status.as_ref())
            .and_then(|s| legal_hold_on(s.as_str()))
            .ok_or_else(malformed)?;
        self.edit_record_in(&b, &i.key, i.version_id.as_deref(), |r| {
            r.attrs.legal_hold = Some(on);
            Ok(true)
        })
        .await?;
        Ok(S3Response::new(PutObjectLegalHoldOutput::default()))
    }

    /// GetObjectLegalHold: 404 `NoSuchObjectLockConfiguration` for a version whose legal hold
    /// was never set.
    pub(crate) async fn get_object_legal_hold(
        &self,
        req: S3Request<GetObjectLegalHoldInput>,
    ) -> S3Result<S3Response<GetObjectLegalHoldOutput>> {
        let i = &req.input;
        let attrs = self
            .locked_attrs(&req, &i.bucket, &i.key, i.version_id.as_deref())
            .await?;
        let on = attrs.legal_hold.ok_or_else(no_lock_of_object)?;
        Ok(S3Response::new(GetObjectLegalHoldOutput {
            legal_hold: Some(ObjectLockLegalHold {
                status: Some(ObjectLockLegalHoldStatus::from_static(if on {
                    ObjectLockLegalHoldStatus::ON
                } else {
                    ObjectLockLegalHoldStatus::OFF
                })),
            }),
        }))
    }

    /// Refuses (403 `AccessDenied`) to remove version `version_id` of `path` for good where its
    /// lock protects it ([`check_removable`]); a version not there (a no-op delete) or a delete
    /// marker passes. The caller holds the key's lock. The version's own record decides, not
    /// the bucket's configuration as this gateway last read it: with several gateways, that may
    /// be older than the lock another one just set.
    pub(crate) async fn check_version_removable(
        &self,
        b: &BucketCtx,
        path: &ObjectPath,
        version_id: &str,
        bypass: bool,
    ) -> S3Result<()> {
        let attrs = match self.find_version(b, &path.key(), version_id).await {
            Ok(Found::Current) => match self.key_versions(b).current(path).await? {
                Some(c) => c.rec.attrs,
                None => return Ok(()),
            },
            Ok(Found::Noncurrent(rec, ..)) => rec.attrs,
            Ok(Found::Marker(_)) => return Ok(()),
            Err(e) if *e.code() == S3ErrorCode::NoSuchVersion => return Ok(()),
            Err(e) => return Err(e),
        };
        check_removable(&attrs, bypass)
    }

    /// The attributes of a version of `key` in an object lock bucket (400 `InvalidRequest` in
    /// any other).
    async fn locked_attrs<I>(
        &self,
        req: &S3Request<I>,
        bucket: &str,
        key: &str,
        version_id: Option<&str>,
    ) -> S3Result<ObjectAttrs> {
        parse_key(key)?;
        let b = self.bucket(&caller(req)?, bucket).await?;
        if b.rec.object_lock.is_none() {
            return Err(missing_configuration());
        }
        let (rec, _, _) = self.open_version(&b, key, version_id).await?;
        Ok(rec.attrs)
    }
}

/// 404 `NoSuchObjectLockConfiguration`: the version has no retention (or legal hold).
fn no_lock_of_object() -> S3Error {
    s3_error!(
        NoSuchObjectLockConfiguration,
        "The specified object does not have a ObjectLock configuration"
    )
}

/// Sets the object lock fields of a GET or HEAD answer from the version's attributes.
macro_rules! lock_out {
    ($out:expr, $attrs:expr) => {{
        let a: &penstock_metadata::ObjectAttrs = $attrs;
        if let Some(r) = a.retention {
            $out.object_lock_mode = Some(ObjectLockMode::from(r.mode.as_str().to_owned()));
            $out.object_lock_retain_until_date = Some($crate::s3::object::ts_ms(r.until_ms));
        }
        $out.object_lock_legal_hold_status = a.legal_hold.map(|on| {
            ObjectLockLegalHoldStatus::from_static(if on {
                ObjectLockLegalHoldStatus::ON
            } else {
                ObjectLockLegalHoldStatus::OFF
            })
        });
    }};
}
pub(crate) use lock_out;

#[cfg(test)]
mod tests {
    use super::*;

    fn conf(mode: &str, days: Option<i32>, years: Option<i32>) -> Option<ObjectLockConfiguration> {
        Some(ObjectLockConfiguration {
            object_lock_enabled: Some(ObjectLockEnabled::from_static(ObjectLockEnabled::ENABLED)),
            rule: Some(ObjectLockRule {
                default_retention: Some(s3s::dto::DefaultRetention {
                    mode: Some(ObjectLockRetentionMode::from(mode.to_owned())),
                    days,
                    years,
                }),
            }),
        })
    }

    fn code(e: S3Error) -> String {
        e.code().as_str().to_owned()
    }

    #[test]
    fn configurations_are_read_as_s3_reads_them() {
        let ok = configuration_in(conf("GOVERNANCE", Some(1), None)).unwrap();
        assert_eq!(ok.default_retention.unwrap().days, Some(1));
        let ok = configuration_in(conf("COMPLIANCE", None, Some(1))).unwrap();
        assert_eq!(ok.default_retention.unwrap().mode, RetentionMode::Compliance);
        for (mode, days, years, expect) in [
            ("GOVERNANCE", Some(1), Some(1), "MalformedXML"),
            ("GOVERNANCE", None, None, "MalformedXML"),
            ("governance", Some(1), None, "MalformedXML"),
            ("abc", Some(1), None, "MalformedXML"),
            ("GOVERNANCE", Some(0), None, "InvalidRetentionPeriod"),
            ("GOVERNANCE", None, Some(-1), "InvalidRetentionPeriod"),
            ("GOVERNANCE", None, Some(101), "InvalidRetentionPeriod"),
        ] {
            let e = configuration_in(conf(mode, days, years)).unwrap_err();
            assert_eq!(code(e), expect, "{mode} {days:?} {years:?}");
        }
        let mut disabled = conf("GOVERNANCE", Some(1), None).unwrap();
        disabled.object_lock_enabled = Some(ObjectLockEnabled::from("Disabled".to_owned()));
        assert_eq!(code(configuration_in(Some(disabled)).unwrap_err()), "MalformedXML");
        // Enabled without a rule: object lock without a default retention.
        let bare = ObjectLockConfiguration {
            object_lock_enabled: Some(ObjectLockEnabled::from_static(ObjectLockEnabled::ENABLED)),
            rule: None,
        };
        assert_eq!(configuration_in(Some(bare)).unwrap(), ObjectLock::default());
    }

    #[test]
    fn default_retention_counts_days_and_calendar_years() {
        let leap_day = 1_709_164_800_000; // 2024-02-29T00:00:00Z
        let days = DefaultRetention {
            mode: RetentionMode::Governance,
            days: Some(2),
            years: None,
        };
        assert_eq!(default_retention(&days, leap_day).until_ms, leap_day + 2 * 86_400_000);
        let years = DefaultRetention {
            mode: RetentionMode::Compliance,
            days: None,
            years: Some(1),
        };
        let r = default_retention(&years, leap_day);
        assert_eq!(r.until_ms, 1_740_700_800_000, "2025-02-28T00:00:00Z");
        assert_eq!(r.mode, RetentionMode::Compliance);
    }

    #[test]
    fn locks_refuse_what_s3_refuses() {
        let now = now_ms();
        let gov = Retention {
            mode: RetentionMode::Governance,
            until_ms: now + 60_000,
        };
        let comp = Retention {
            mode: RetentionMode::Compliance,
            until_ms: now + 60_000,
        };
        let past = Retention {
            mode: RetentionMode::Compliance,
            until_ms: now - 1,
        };
        let attrs = |r: Option<Retention>, hold: Option<bool>| ObjectAttrs {
            retention: r,
            legal_hold: hold,
            ..Default::default()
        };
        assert!(check_removable(&attrs(None, None), false).is_ok());
        assert!(check_removable(&attrs(Some(past), Some(false)), false).is_ok());
        assert!(check_removable(&attrs(Some(gov), None), false).is_err());
        assert!(check_removable(&attrs(Some(gov), None), true).is_ok());
        assert!(check_removable(&attrs(Some(comp), None), true).is_err());
        assert!(check_removable(&attrs(None, Some(true)), true).is_err());

        let later = |r: Retention| Retention {
            until_ms: r.until_ms + 1,
            ..r
        };
        let sooner = |r: Retention| Retention {
            until_ms: r.until_ms - 1,
            ..r
        };
        assert!(check_retention_change(Some(gov), Some(later(gov)), false).is_ok());
        assert!(check_retention_change(Some(gov), Some(sooner(gov)), false).is_err());
        assert!(check_retention_change(Some(gov), Some(sooner(gov)), true).is_ok());
        assert!(check_retention_change(Some(gov), Some(comp), false).is_err());
        assert!(check_retention_change(Some(gov), Some(comp), true).is_ok());
        assert!(check_retention_change(Some(gov), None, true).is_ok());
        assert!(check_retention_change(Some(comp), Some(later(comp)), false).is_ok());
        assert!(check_retention_change(Some(comp), Some(sooner(comp)), true).is_err());
        assert!(check_retention_change(Some(comp), Some(gov), true).is_err());
        assert!(check_retention_change(Some(past), None, false).is_ok());
    }
}
