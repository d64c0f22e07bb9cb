//! ListObjectVersions: the current versions (files found by the folder walk of `list.rs`)
//! merged with the noncurrent versions and delete markers (version rows from the engine), in
//! S3's order: keys in byte order, and within a key the current version first, then the others
//! newest first. Common prefixes roll up both.

use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_metadata::{VersionQuery, VersionRecord};

use super::error::meta_err;
use super::list::{common_prefixes, enc, is_url, max_keys, Listed};
use super::object::{etag, last_modified, ts_ms};
use super::{caller, owner_of, BucketCtx, Gateway};

/// One entry of a listing, in order.
enum Entry {
    /// A key's current version.
    Current(Listed),
    /// A noncurrent version or delete marker; `latest` when it is the newest version of a key
    /// without a current one.
    Row {
        key: String,
        row: VersionRecord,
        latest: bool,
    },
    /// A common prefix.
    Prefix(String),
}

impl Entry {
    /// Where the entry sorts: its key (or prefix), then its place among the key's versions.
    fn position(&self) -> (&str, u8, i64) {
        match self {
            Entry::Current(l) => (&l.key, 0, 0),
            Entry::Row { key, row, .. } => (key, 1, -row.seq),
            Entry::Prefix(p) => (p, 0, 0),
        }
    }
}

/// Refuses a `version-id-marker` S3 refuses, in S3's order (after `max-keys`, before
/// `encoding-type`): one without a `key-marker` (a version id means nothing without its key), an
/// empty one, and one this gateway cannot have made. Each is 400 `InvalidArgument`.
fn check_version_marker(key_marker: &str, v: &str) -> S3Result<()> {
    if key_marker.is_empty() {
        return Err(s3_error!(
            InvalidArgument,
            "A version-id marker cannot be specified without a key marker."
        ));
    }
    if v.is_empty() {
        return Err(s3_error!(InvalidArgument, "A version-id marker cannot be empty."));
    }
    super::versioning::check_version_id(v)
}

/// Where a page of version rows ends: the key and `seq` of its last row, when it was full.
type Bound = Option<(String, i64)>;

impl Gateway {
    /// ListObjectVersions.
    pub(crate) async fn list_object_versions(
        &self,
        req: S3Request<ListObjectVersionsInput>,
    ) -> S3Result<S3Response<ListObjectVersionsOutput>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let max = max_keys(i.max_keys)?;
        let key_marker = i.key_marker.clone().unwrap_or_default();
        let version_marker = i.version_id_marker.clone();
        if let Some(v) = &version_marker {
            check_version_marker(&key_marker, v)?;
        }
        let url = is_url(i.encoding_type.as_ref())?;
        let prefix = i.prefix.clone().unwrap_or_default();
        let delimiter = i.delimiter.clone().filter(|d| !d.is_empty());

        // Where the rows resume: past every row of the key marker, or past the version marker.
        let mut rows_after: Option<(String, Option<i64>)> =
            (!key_marker.is_empty()).then(|| (key_marker.clone(), None));
        if let Some(v) = &version_marker {
            rows_after = Some((key_marker.clone(), self.seq_after(&b, &key_marker, v).await?));
        }
        let page = self
            .list_after_key(&b, &prefix, delimiter.as_deref(), &key_marker, max)
            .await?;
        let walk_bound = page.next.as_ref().map(|m| m.after.clone());
        let (rows, rows_bound) = self
            .version_rows(&b, &prefix, delimiter.as_deref(), rows_after, max + 1)
            .await?;

        let mut entries: Vec<Entry> = page.objects.into_iter().map(Entry::Current).collect();
        entries.extend(page.prefixes.into_iter().map(Entry::Prefix));
        entries.extend(rows);
        entries.sort_by(|a, b| a.position().cmp(&b.position()));
        entries.dedup_by(|a, b| matches!((a, b), (Entry::Prefix(x), Entry::Prefix(y)) if x == y));
        // Past the end of a source that stopped early, what follows is not known yet.
        let known = |e: &Entry| {
            let in_walk = walk_bound.as_deref().is_none_or(|w| e.position().0 <= w);
            let in_rows = match (&rows_bound, e) {
                (None, _) => true,
                (Some((k, seq)), Entry::Row { key, row, .. }) => key < k || (key == k && row.seq >= *seq),
                (Some((k, _)), other) => other.position().0 <= k.as_str(),
            };
            in_walk && in_rows
        };
        let total = entries.len();
        entries.retain(known);
        let mut truncated = entries.len() < total || walk_bound.is_some() || rows_bound.is_some();
        if entries.len() > max {
            entries.truncate(max);
            truncated = true;
        }
        // A row is the latest version when nothing is at its key now and no newer row is.
        let current_keys: std::collections::HashSet<String> = entries
            .iter()
            .filter_map(|e| match e {
                Entry::Current(l) => Some(l.key.clone()),
                _ => None,
            })
            .collect();
        let resumed_mid_key = version_marker.as_ref().map(|_| key_marker.as_str());
        let mut seen = std::collections::HashSet::new();
        for e in &mut entries {
            if let Entry::Row { key, latest, .. } = e {
                let first = seen.insert(key.clone());
                *latest = first && !current_keys.contains(key) && resumed_mid_key != Some(key.as_str());
            }
        }
        if truncated && entries.is_empty() {
            truncated = false;
        }
        let (next_key, next_version) = match entries.last().filter(|_| truncated) {
            Some(Entry::Current(l)) => (Some(l.key.clone()), Some(l.rec.version().to_owned())),
            Some(Entry::Row { key, row, .. }) => (Some(key.clone()), Some(row.version_id.clone())),
            Some(Entry::Prefix(p)) => (Some(p.clone()), None),
            None => (None, None),
        };

        let own = owner_of(&b.rec);
        let restore = super::restore::asks_restore_status(i.optional_object_attributes.as_ref());
        // ListObjectVersions names every version's class, STANDARD included.
        let class =
            |a: &penstock_metadata::ObjectAttrs| Some(ObjectVersionStorageClass::from(super::object::class_name(a)));
        let (mut versions, mut markers, mut prefixes) = (Vec::new(), Vec::new(), Vec::new());
        for e in entries {
            match e {
                Entry::Current(l) => versions.push(ObjectVersion {
                    key: Some(enc(url, &l.key)),
                    e_tag: Some(etag(&l.rec.etag)),
                    size: Some(l.st.size as i64),
                    last_modified: Some(last_modified(&l.st)),
                    is_latest: Some(true),
                    version_id: Some(l.rec.version().to_owned()),
                    owner: Some(super::object_owner(&b.rec, &l.rec.attrs)),
                    storage_class: class(&l.rec.attrs),
                    restore_status: super::restore::restore_status(restore, &l.rec.attrs),
                    ..Default::default()
                }),
                Entry::Row { key, row, latest } => match &row.object {
                    Some(o) => versions.push(ObjectVersion {
                        key: Some(enc(url, &key)),
                        e_tag: Some(etag(&o.etag)),
                        size: Some(o.fingerprint.size as i64),
                        last_modified: Some(ts_ms(row.last_modified_ms)),
                        is_latest: Some(latest),
                        version_id: Some(row.version_id.clone()),
                        owner: Some(super::object_owner(&b.rec, &o.attrs)),
                        storage_class: class(&o.attrs),
                        restore_status: super::restore::restore_status(restore, &o.attrs),
                        ..Default::default()
                    }),
                    None => markers.push(DeleteMarkerEntry {
                        key: Some(enc(url, &key)),
                        last_modified: Some(ts_ms(row.last_modified_ms)),
                        is_latest: Some(latest),
                        version_id: Some(row.version_id.clone()),
                        owner: Some(own.clone()),
                    }),
                },
                Entry::Prefix(p) => prefixes.push(p),
            }
        }
        Ok(S3Response::new(ListObjectVersionsOutput {
            name: Some(i.bucket.clone()),
            prefix: Some(enc(url, &prefix)),
            delimiter: delimiter.as_deref().map(|d| enc(url, d)),
            key_marker: Some(enc(url, &key_marker)),
            // S3 answers the element even when empty, as it does KeyMarker.
            version_id_marker: Some(version_marker.unwrap_or_default()),
            max_keys: Some(max as i32),
            is_truncated: Some(truncated),
            next_key_marker: next_key.map(|k| enc(url, &k)),
            next_version_id_marker: next_version,
            encoding_type: i.encoding_type.clone(),
            versions: Some(versions),
            delete_markers: (!markers.is_empty()).then_some(markers),
            common_prefixes: Some(common_prefixes(&prefixes, url)),
            ..Default::default()
        }))
    }

    /// The `seq` after which the rows of `key` resume when a listing continues after version
    /// `v`: all of them when `v` is the current version (or unknown), those older than it when
    /// it is a row.
    async fn seq_after(&self, b: &BucketCtx, key: &str, v: &str) -> S3Result<Option<i64>> {
        let rows = self.meta.versions(b.rec.folder_id, key).await.map_err(meta_err)?;
        Ok(Some(
            rows.iter().find(|r| r.version_id == v).map_or(i64::MAX, |r| r.seq),
        ))
    }

    /// Version rows under `prefix` after `after`, as up to `limit` entries: rows whose key has
    /// the delimiter past the prefix become one common prefix each (read on past the rows it
    /// swallows). Also answers the last row read when more may follow.
    async fn version_rows(
        &self,
        b: &BucketCtx,
        prefix: &str,
        delimiter: Option<&str>,
        mut after: Option<(String, Option<i64>)>,
        limit: usize,
    ) -> S3Result<(Vec<Entry>, Bound)> {
        let mut out: Vec<Entry> = Vec::new();
        for _ in 0..64 {
            let want = limit.saturating_sub(out.len()).max(1);
            let q = VersionQuery {
                prefix,
                after: after.as_ref().map(|(k, s)| (k.as_str(), *s)),
                limit: want,
            };
            let page = self.meta.list_versions(b.rec.folder_id, q).await.map_err(meta_err)?;
            let full = page.len() == want;
            let mut last = None;
            for (key, row) in page {
                last = Some((key.clone(), row.seq));
                let group = delimiter.and_then(|d| {
                    key[prefix.len()..]
                        .find(d)
                        .map(|pos| key[..prefix.len() + pos + d.len()].to_owned())
                });
                match group {
                    Some(cp) if matches!(out.last(), Some(Entry::Prefix(p)) if *p == cp) => {}
                    Some(cp) => out.push(Entry::Prefix(cp)),
                    None => out.push(Entry::Row {
                        key,
                        row,
                        latest: false,
                    }),
                }
            }
            if !full {
                return Ok((out, None));
            }
            if out.len() >= limit {
                return Ok((out, last));
            }
            // Full, yet common prefixes swallowed rows: go on past the last group.
            after = match (out.last(), last) {
                (Some(Entry::Prefix(cp)), _) => Some((format!("{cp}{}", char::MAX), None)),
                (_, Some((k, seq))) => Some((k, Some(seq))),
                (_, None) => return Ok((out, None)),
            };
        }
        let last = out.last().map(|e| {
            let (k, _, neg_seq) = e.position();
            (k.to_owned(), -neg_seq)
        });
        Ok((out, last))
    }
}

#[cfg(test)]
mod tests {
    use super::check_version_marker;

    #[test]
    fn version_markers_are_checked_as_s3_checks_them() {
        let msg = |k: &str, v: &str| {
            check_version_marker(k, v)
                .unwrap_err()
                .message()
                .unwrap_or_default()
                .to_owned()
        };
        assert_eq!(
            msg("", "test"),
            "A version-id marker cannot be specified without a key marker."
        );
        assert_eq!(
            msg("", ""),
            "A version-id marker cannot be specified without a key marker."
        );
        assert_eq!(msg("k", ""), "A version-id marker cannot be empty.");
        assert_eq!(msg("k", "test"), "Invalid version id specified");
        assert!(check_version_marker("k", "null").is_ok());
        assert!(check_version_marker("k", "019ac2b1f5e3a0c4d7e8f9a0b1c2d3e4").is_ok());
    }
}
