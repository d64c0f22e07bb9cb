//! The lifecycle worker: applies every bucket's lifecycle rules each `lifecycle_interval_secs`.
//!
//! Each pass walks the buckets that have enabled rules: current versions past their expiry are
//! deleted (in a versioned bucket a delete marker hides them, as a DELETE would), noncurrent
//! versions past their noncurrent days go (keeping the newest `NewerNoncurrentVersions`),
//! delete markers with nothing behind them go where a rule says `ExpiredObjectDeleteMarker`,
//! multipart uploads left incomplete too long are aborted, and versions whose transitions are due
//! take their new storage class (a label: the bytes stay). Every action goes through the
//! same code as the S3 request that does it (key locks, quota, crash safety).
//!
//! With several gateways on one engine, only the live gateway with the smallest instance id
//! runs the pass, so no object is expired twice (a versioned bucket would get two markers).

use std::sync::Arc;

use s3s::dto::{ETag, ETagCondition};
use s3s::{S3ErrorCode, S3Result};

use penstock_metadata::{LifecycleRule, UploadQuery, VersionQuery, VersionRecord};
use uuid::Uuid;

use super::delete::DeleteConditions;
use super::lifecycle::coldness;
use super::list::{Listed, Marker, Query};
use super::object::{class_name, last_modified, now_ms, parse_key};
use super::tagging::Edited;
use super::{location, BucketCtx, Gateway};
use crate::metrics::LifecycleAction;

/// Records read per page while walking a bucket.
const PAGE: usize = 1000;

/// What one pass did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct LifecycleReport {
    /// Current versions expired.
    pub expired: u64,
    /// Noncurrent versions removed.
    pub noncurrent: u64,
    /// Delete markers removed.
    pub markers: u64,
    /// Incomplete uploads aborted.
    pub aborted: u64,
    /// Versions moved to another storage class (current and noncurrent).
    pub transitioned: u64,
    /// Bytes freed.
    pub bytes: u64,
}

impl Gateway {
    /// Applies the lifecycle rules every interval, forever.
    pub async fn run_lifecycle(self: Arc<Self>) {
        let mut tick = tokio::time::interval(self.lifecycle.interval);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            if !self.leads_lifecycle().await {
                continue;
            }
            let r = self.apply_lifecycle().await;
            if r != LifecycleReport::default() {
                tracing::info!(
                    expired = r.expired,
                    noncurrent = r.noncurrent,
                    markers = r.markers,
                    aborted = r.aborted,
                    transitioned = r.transitioned,
                    bytes = r.bytes,
                    "lifecycle rules applied"
                );
            }
            self.metrics.lifecycle_ran(now_ms() / 1000);
        }
    }

    /// Whether this gateway is the one that applies lifecycle rules: the live gateway with the
    /// smallest instance id.
    async fn leads_lifecycle(&self) -> bool {
        let gone_ms = self.liveness.gone_after.as_millis() as u64;
        match self.meta.gateways().await {
            Ok(g) => g
                .iter()
                .filter(|(_, age)| *age < gone_ms)
                .map(|(i, _)| i)
                .min()
                .is_none_or(|first| *first == self.instance),
            Err(e) => {
                tracing::warn!(error = %e, "lifecycle: cannot list gateways");
                false
            }
        }
    }

    /// One pass over every bucket with enabled rules.
    pub async fn apply_lifecycle(&self) -> LifecycleReport {
        let mut report = LifecycleReport::default();
        let buckets = match self.meta.buckets().await {
            Ok(b) => b,
            Err(e) => {
                tracing::warn!(error = %e, "lifecycle: cannot list buckets");
                return report;
            }
        };
        for rec in buckets {
            if !rec.lifecycle.iter().any(|r| r.enabled) {
                continue;
            }
            let name = rec.name.clone();
            let outcome = async {
                let folder = self
                    .volume(&rec.volume)?
                    .open_folder(&location(&rec))
                    .await
                    .map_err(super::error::backend_err)?;
                self.apply_to_bucket(
                    &BucketCtx {
                        rec: Arc::new(rec),
                        folder,
                    },
                    &mut report,
                )
                .await
            }
            .await;
            if let Err(e) = outcome {
                tracing::warn!(bucket = %name, error = ?e, "lifecycle: bucket skipped this pass");
            }
        }
        report
    }

    async fn apply_to_bucket(&self, b: &BucketCtx, report: &mut LifecycleReport) -> S3Result<()> {
        let rules: Vec<&LifecycleRule> = b.rec.lifecycle.iter().filter(|r| r.enabled).collect();
        let owner = b.rec.quota_scope.id;
        if rules
            .iter()
            .any(|r| r.expiration_days.is_some() || r.expiration_date_ms.is_some())
        {
            self.expire_current(b, owner, report).await?;
        }
        if b.rec.versioning.is_some()
            && rules
                .iter()
                .any(|r| r.noncurrent_days.is_some() || r.expired_object_delete_marker)
        {
            self.expire_versions(b, &rules, owner, report).await?;
        }
        if rules.iter().any(|r| r.abort_incomplete_days.is_some()) {
            self.abort_stale_uploads(b, &rules, report).await?;
        }
        if rules.iter().any(|r| !r.transitions.is_empty()) {
            self.transition_current(b, report).await?;
        }
        if b.rec.versioning.is_some() && rules.iter().any(|r| !r.noncurrent_transitions.is_empty()) {
            self.transition_noncurrent(b, &rules, report).await?;
        }
        Ok(())
    }

    /// Moves current versions to the coldest storage class their rules' transitions have
    /// reached, where that is colder than the class they have (S3 never moves one back up).
    async fn transition_current(&self, b: &BucketCtx, report: &mut LifecycleReport) -> S3Result<()> {
        let now = now_ms();
        let mut walk = CurrentWalk::default();
        while let Some(page) = walk.next(self, b).await? {
            for o in &page {
                let written = (o.st.mtime_ns / 1_000_000) as i64;
                let rules = &b.rec.lifecycle;
                let Some(class) = self
                    .lifecycle
                    .class_due(rules, &o.key, &o.rec.tags, o.st.size, written, now)
                else {
                    continue;
                };
                if coldness(class) <= coldness(&class_name(&o.rec.attrs)) {
                    continue;
                }
                // Only the object judged: one written over it since the listing is judged later.
                let judged = &o.rec.etag;
                let moved = self
                    .edit_record_in(b, &o.key, None, |r| {
                        let still = r.etag == *judged;
                        if still {
                            r.attrs.storage_class = Some(class.to_owned());
                        }
                        Ok(still)
                    })
                    .await;
                match moved {
                    Ok(Edited::Done { .. }) => {
                        report.transitioned += 1;
                        self.metrics.lifecycle(LifecycleAction::Transitioned, 0);
                    }
                    Ok(Edited::Declined) => {}
                    Err(e) if *e.code() == S3ErrorCode::NoSuchKey => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(())
    }

    /// Moves noncurrent versions to the coldest storage class their rules' noncurrent
    /// transitions have reached (counted from when each stopped being current), leaving the
    /// newest `NewerNoncurrentVersions` of each key where they are.
    async fn transition_noncurrent(
        &self,
        b: &BucketCtx,
        rules: &[&LifecycleRule],
        report: &mut LifecycleReport,
    ) -> S3Result<()> {
        let now = now_ms();
        let mut walk = VersionedWalk::default();
        while let Some(page) = walk.next(self, b).await? {
            for (key, rows) in &page {
                let objects = rows.iter().filter_map(|v| v.object.as_ref().map(|o| (v, o)));
                for (i, (v, o)) in objects.enumerate() {
                    // `seq` is the nanosecond the version stopped being current.
                    let since = v.seq / 1_000_000;
                    let due = rules
                        .iter()
                        .filter(|r| r.filter.matches(key, &o.tags, o.fingerprint.size))
                        .flat_map(|r| &r.noncurrent_transitions)
                        .filter(|t| i >= t.newer_noncurrent_versions.unwrap_or(0) as usize)
                        .filter(|t| t.days.is_some_and(|d| self.lifecycle.after_days(since, d) <= now))
                        .map(|t| t.storage_class.as_str())
                        .max_by_key(|c| coldness(c));
                    let Some(class) = due.filter(|c| coldness(c) > coldness(&class_name(&o.attrs))) else {
                        continue;
                    };
                    let moved = self
                        .edit_record_in(b, key, Some(&v.version_id), |r| {
                            r.attrs.storage_class = Some(class.to_owned());
                            Ok(true)
                        })
                        .await;
                    match moved {
                        Ok(_) => {
                            report.transitioned += 1;
                            self.metrics.lifecycle(LifecycleAction::Transitioned, 0);
                        }
                        // Removed meanwhile.
                        Err(e) if *e.code() == S3ErrorCode::NoSuchVersion => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
        Ok(())
    }

    /// Deletes the current versions whose expiry has passed.
    async fn expire_current(&self, b: &BucketCtx, owner: Uuid, report: &mut LifecycleReport) -> S3Result<()> {
        let now = now_ms();
        let mut walk = CurrentWalk::default();
        while let Some(page) = walk.next(self, b).await? {
            for o in &page {
                let written = (o.st.mtime_ns / 1_000_000) as i64;
                let due = self
                    .lifecycle
                    .expiry(&b.rec.lifecycle, &o.key, &o.rec.tags, o.st.size, written)
                    .is_some_and(|(at, _)| at <= now);
                if !due {
                    continue;
                }
                // Freed unless the version stays as a noncurrent one.
                let freed = match b.rec.versioning {
                    None => o.st.size,
                    Some(penstock_metadata::Versioning::Suspended) if o.rec.version_id.is_none() => o.st.size,
                    Some(_) => 0,
                };
                // Only the object judged due goes: one written over it since the listing (a new
                // ETag, size or time, or none there) is left for a later pass to judge. A
                // directory marker has no bytes to lose, and its time moves with its contents.
                let conds = if o.key.ends_with('/') {
                    DeleteConditions::default()
                } else {
                    DeleteConditions {
                        if_match: Some(ETagCondition::ETag(ETag::Strong(o.rec.etag.clone()))),
                        last_modified: Some(last_modified(&o.st)),
                        size: Some(o.st.size as i64),
                    }
                };
                match self
                    .delete_any(b, &parse_key(&o.key)?, None, owner, &conds, false)
                    .await
                {
                    Ok(_) => {}
                    Err(e) if matches!(e.code(), S3ErrorCode::PreconditionFailed | S3ErrorCode::NoSuchKey) => continue,
                    Err(e) => return Err(e),
                }
                report.expired += 1;
                report.bytes += freed;
                self.metrics.lifecycle(LifecycleAction::Expired, freed);
            }
        }
        Ok(())
    }

    /// Removes noncurrent versions past their days (keeping the newest ones a rule keeps) and
    /// delete markers left alone, key by key.
    async fn expire_versions(
        &self,
        b: &BucketCtx,
        rules: &[&LifecycleRule],
        owner: Uuid,
        report: &mut LifecycleReport,
    ) -> S3Result<()> {
        let mut walk = VersionedWalk::default();
        while let Some(page) = walk.next(self, b).await? {
            for (key, rows) in &page {
                for (vid, freed, action) in self.versions_due(b, key, rows, rules).await? {
                    let gone = self
                        .delete_any(b, &parse_key(key)?, Some(&vid), owner, &Default::default(), false)
                        .await;
                    match gone {
                        Ok(_) => {}
                        // Locked since the listing: kept, as a lock keeps a version from rules.
                        Err(e) if *e.code() == S3ErrorCode::AccessDenied => continue,
                        Err(e) => return Err(e),
                    }
                    match action {
                        LifecycleAction::MarkerRemoved => report.markers += 1,
                        _ => report.noncurrent += 1,
                    }
                    report.bytes += freed;
                    self.metrics.lifecycle(action, freed);
                }
            }
        }
        Ok(())
    }

    /// The version ids of one key's rows that rules remove now, with the bytes each frees.
    async fn versions_due(
        &self,
        b: &BucketCtx,
        key: &str,
        rows: &[VersionRecord],
        rules: &[&LifecycleRule],
    ) -> S3Result<Vec<(String, u64, LifecycleAction)>> {
        let now = now_ms();
        let mut due: Vec<(String, u64, LifecycleAction)> = Vec::new();
        for r in rules.iter().filter(|r| r.noncurrent_days.is_some()) {
            let days = r.noncurrent_days.expect("filtered");
            let keep = r.newer_noncurrent_versions.unwrap_or(0) as usize;
            let versions = rows.iter().filter_map(|v| v.object.as_ref().map(|o| (v, o)));
            for (v, o) in versions.skip(keep) {
                // `seq` is the nanosecond the version stopped being current.
                let since = v.seq / 1_000_000;
                let applies = r.filter.matches(key, &o.tags, o.fingerprint.size);
                // A version its object lock protects stays, whatever the rules say (as on S3).
                if applies
                    && super::object_lock::removable(&o.attrs)
                    && self.lifecycle.after_days(since, days) <= now
                    && !due.iter().any(|(id, ..)| *id == v.version_id)
                {
                    due.push((
                        v.version_id.clone(),
                        o.fingerprint.size,
                        LifecycleAction::NoncurrentExpired,
                    ));
                }
            }
        }
        // A delete marker that is the key's only version hides nothing: it expires.
        let lone_marker = matches!(rows, [only] if only.is_delete_marker());
        let marker_rule = rules
            .iter()
            .any(|r| r.expired_object_delete_marker && r.filter.matches(key, &[], 0));
        if lone_marker && marker_rule {
            let path = parse_key(key)?;
            if self.key_versions(b).current(&path).await?.is_none() {
                due.push((rows[0].version_id.clone(), 0, LifecycleAction::MarkerRemoved));
            }
        }
        Ok(due)
    }

    /// Aborts the multipart uploads that rules say were left incomplete too long.
    async fn abort_stale_uploads(
        &self,
        b: &BucketCtx,
        rules: &[&LifecycleRule],
        report: &mut LifecycleReport,
    ) -> S3Result<()> {
        let now = now_ms();
        let mut after: Option<(String, String)> = None;
        loop {
            let q = UploadQuery {
                prefix: "",
                after: after.as_ref().map(|(k, id)| (k.as_str(), id.as_str())),
                limit: PAGE,
            };
            let page = self.meta.uploads(b.rec.folder_id, q).await.map_err(super::meta_err)?;
            let full = page.len() == PAGE;
            after = page.last().map(|u| (u.key.clone(), u.upload_id.to_string()));
            for u in page {
                let stale = rules.iter().any(|r| {
                    r.abort_incomplete_days.is_some_and(|d| {
                        u.key.starts_with(&r.filter.prefix) && self.lifecycle.after_days(u.initiated_ms, d) <= now
                    })
                });
                if !stale {
                    continue;
                }
                let freed: u64 = self
                    .meta
                    .parts(&u.upload_id)
                    .await
                    .map_err(super::meta_err)?
                    .iter()
                    .map(|p| p.size)
                    .sum();
                match self.abort_upload(b, &u.key, u.upload_id.as_str()).await {
                    Ok(()) => {
                        report.aborted += 1;
                        report.bytes += freed;
                        self.metrics.lifecycle(LifecycleAction::UploadAborted, freed);
                    }
                    // Completed or aborted by a client meanwhile.
                    Err(e) if *e.code() == s3s::S3ErrorCode::NoSuchUpload => {}
                    Err(e) => return Err(e),
                }
            }
            if !full {
                return Ok(());
            }
        }
    }
}

/// A walk over a bucket's current versions, a page of listing at a time.
struct CurrentWalk {
    /// Where the next page starts; `None` once the last page was read.
    next: Option<Marker>,
}

impl Default for CurrentWalk {
    fn default() -> Self {
        Self {
            next: Some(Marker::default()),
        }
    }
}

impl CurrentWalk {
    async fn next(&mut self, gw: &Gateway, b: &BucketCtx) -> S3Result<Option<Vec<Listed>>> {
        let Some(marker) = self.next.take() else {
            return Ok(None);
        };
        let q = Query {
            prefix: "",
            delimiter: None,
            marker,
            max: PAGE,
        };
        let page = gw.list_page(b, &q).await?;
        self.next = page.next;
        Ok(Some(page.objects))
    }
}

/// A walk over the keys of a bucket that have version rows (noncurrent versions, delete
/// markers), a page of keys at a time, each with all its rows, newest first.
#[derive(Default)]
struct VersionedWalk {
    /// The last key read; `done` once the last page was.
    after: Option<String>,
    done: bool,
}

impl VersionedWalk {
    async fn next(&mut self, gw: &Gateway, b: &BucketCtx) -> S3Result<Option<Vec<(String, Vec<VersionRecord>)>>> {
        if self.done {
            return Ok(None);
        }
        let folder = b.rec.folder_id;
        let q = VersionQuery {
            prefix: "",
            after: self.after.as_deref().map(|k| (k, None)),
            limit: PAGE,
        };
        let page = gw.meta.list_versions(folder, q).await.map_err(super::meta_err)?;
        self.done = page.len() < PAGE;
        let mut keys: Vec<String> = page.into_iter().map(|(k, _)| k).collect();
        keys.dedup();
        self.after = keys.last().cloned();
        self.done |= self.after.is_none();
        let mut out = Vec::with_capacity(keys.len());
        for key in keys {
            // All rows of the key at once: a page may hold only some of them.
            let rows = gw.meta.versions(folder, &key).await.map_err(super::meta_err)?;
            out.push((key, rows));
        }
        Ok(Some(out))
    }
}
