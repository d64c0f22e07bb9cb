//! ListObjects (v1), ListObjectsV2 and ListObjectVersions over a sorted walk of the folder.
//!
//! S3 lists keys in byte order. A directory `a` holds keys `a/...`, which sort after `a.txt` and
//! before `a0`, so each directory's entries are sorted by `name/` for directories and `name` for
//! files ([`DirEntry::sort_key`]). The walk is depth-first in that order and resumes from a marker
//! by descending only into the directories on the marker's path, never rereading earlier ones.
//! With delimiter `/`, a directory below the prefix becomes a common prefix without being read.

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine as _;
use s3s::dto::*;
use s3s::{s3_error, S3Request, S3Response, S3Result};

use penstock_backends::{DirEntry, EntryKind, Stat};
use penstock_metadata::ObjectRecord;

use super::error::{backend_err, meta_err};
use super::get::EMPTY_MD5;
use super::object::{effective_record, etag, fingerprint, last_modified};
use super::{caller, BucketCtx, Gateway};

/// Where a listing resumes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Marker {
    /// Only keys greater than this are listed.
    pub after: String,
    /// The page ended on this common prefix: skip every key that starts with `after`.
    pub skip_group: bool,
}

/// One listed object.
pub(crate) struct Listed {
    pub key: String,
    pub st: Stat,
    pub rec: ObjectRecord,
}

/// One page of a listing.
pub(crate) struct Page {
    pub objects: Vec<Listed>,
    pub prefixes: Vec<String>,
    /// Set when more entries follow; resume from here.
    pub next: Option<Marker>,
}

/// Parameters of a walk.
pub(crate) struct Query<'a> {
    pub prefix: &'a str,
    pub delimiter: Option<&'a str>,
    pub marker: Marker,
    pub max: usize,
}

/// Entries asked of a directory at a time, at least: a page that has little room left still
/// reads enough to skip what it cannot take without another call.
const MIN_READ: usize = 32;

enum Item {
    Object(String, Stat),
    Prefix(String),
}

struct Walk<'a> {
    q: &'a Query<'a>,
    b: &'a BucketCtx,
    gw: &'a Gateway,
    items: Vec<Item>,
    /// One more than `max` is collected to know whether the page is truncated.
    limit: usize,
    last_prefix: Option<String>,
}

impl Walk<'_> {
    fn full(&self) -> bool {
        self.items.len() >= self.limit
    }

    fn after_marker(&self, key: &str) -> bool {
        let m = &self.q.marker;
        key > m.after.as_str() && !(m.skip_group && key.starts_with(m.after.as_str()))
    }

    /// Emits a key (object or directory marker) subject to prefix, marker and delimiter rules.
    fn emit(&mut self, key: String, st: Stat) {
        if !key.starts_with(self.q.prefix) || !self.after_marker(&key) {
            return;
        }
        if let Some(d) = self.q.delimiter {
            if let Some(pos) = key[self.q.prefix.len()..].find(d) {
                let cp = key[..self.q.prefix.len() + pos + d.len()].to_owned();
                self.emit_prefix(cp);
                return;
            }
        }
        self.items.push(Item::Object(key, st));
    }

    fn emit_prefix(&mut self, cp: String) {
        if self.last_prefix.as_deref() == Some(cp.as_str()) {
            return;
        }
        let m = &self.q.marker;
        if cp.as_str() <= m.after.as_str() && m.after.starts_with(cp.as_str()) {
            // The marker lies inside this group: it was already returned on an earlier page.
            return;
        }
        self.last_prefix = Some(cp.clone());
        self.items.push(Item::Prefix(cp));
    }

    /// Visits the entries of `dir` in key order, from the first that can hold a key under the
    /// prefix and after the marker, until the page is full or the entries pass the prefix. The
    /// directory is read a page at a time, so a large one costs each listing page only the
    /// entries it returns.
    ///
    /// `own`: the directory's stat when its own key (a marker object, if the directory is
    /// empty or a record says so) may go on this page; it is listed before the entries.
    async fn walk_dir(&mut self, dir: Vec<String>, dir_key: String, mut own: Option<Stat>) -> S3Result<()> {
        let mut from = self.start_in(&dir_key);
        loop {
            let want = (self.limit - self.items.len()).max(MIN_READ);
            let entries = self
                .b
                .folder
                .read_dir_from(&dir, &from, want)
                .await
                .map_err(backend_err)?;
            if let Some(st) = own.take() {
                // Asked only where the page can take the key, so `from` is "" here and the
                // first read shows whether the directory is empty.
                if entries.is_empty() || self.has_marker_record(&dir_key).await? {
                    self.emit(dir_key.clone(), Stat { size: 0, ..st });
                }
            }
            let got = entries.len();
            let Some(last) = entries.last().map(DirEntry::sort_key) else {
                return Ok(());
            };
            for e in entries {
                let key = format!("{dir_key}{}", e.sort_key());
                if self.full() || self.past_prefix(&key) {
                    return Ok(());
                }
                self.visit(&dir, key, e).await?;
            }
            if got < want {
                return Ok(());
            }
            // The least key after `last`: names hold no NUL.
            from = format!("{last}\0");
        }
    }

    /// The least sort key in the directory at `dir_key` that may hold a key of this page: keys
    /// of entries before the prefix's (or the marker's) component in this directory can be
    /// neither under the prefix nor after the marker. Inclusive: the marker's own directory is
    /// walked into.
    fn start_in(&self, dir_key: &str) -> String {
        let component = |rest: &str| match rest.find('/') {
            Some(i) => rest[..=i].to_owned(),
            None => rest.to_owned(),
        };
        let by_prefix = self.q.prefix.strip_prefix(dir_key).map(component).unwrap_or_default();
        let by_marker = self
            .q
            .marker
            .after
            .strip_prefix(dir_key)
            .map(component)
            .unwrap_or_default();
        by_prefix.max(by_marker)
    }

    /// Whether the entry at `key`, and so every entry after it in its directory, comes after
    /// every key under the prefix.
    fn past_prefix(&self, key: &str) -> bool {
        key > self.q.prefix && !key.starts_with(self.q.prefix)
    }

    /// Visits the entry `e` whose key (its sort key under its directory's) is `key`.
    async fn visit(&mut self, dir: &[String], key: String, e: DirEntry) -> S3Result<()> {
        let prefix = self.q.prefix;
        match e.stat.kind {
            EntryKind::File => self.emit(key, e.stat),
            EntryKind::Dir => {
                // Skip subtrees that cannot hold keys under the prefix.
                if !(key.starts_with(prefix) || prefix.starts_with(key.as_str())) {
                    return Ok(());
                }
                // Skip subtrees entirely at or before the marker.
                let m = &self.q.marker;
                if m.skip_group && key.starts_with(m.after.as_str()) {
                    return Ok(());
                }
                if key.as_str() <= m.after.as_str() && !m.after.starts_with(key.as_str()) {
                    return Ok(());
                }
                // With delimiter '/', a directory strictly below the prefix is one common prefix.
                if self.q.delimiter == Some("/") && key.len() > prefix.len() && key.starts_with(prefix) {
                    let rest = &key[prefix.len()..];
                    if rest.find('/') == Some(rest.len() - 1) {
                        self.emit_prefix(key);
                        return Ok(());
                    }
                }
                let own = (key.starts_with(prefix) && self.after_marker(&key)).then_some(e.stat);
                let mut sub = dir.to_vec();
                sub.push(e.name);
                Box::pin(self.walk_dir(sub, key, own)).await?;
            }
        }
        Ok(())
    }

    async fn has_marker_record(&self, key: &str) -> S3Result<bool> {
        let stored = self.gw.meta.object(self.b.rec.folder_id, key).await.map_err(meta_err)?;
        Ok(stored.is_some())
    }
}

impl Gateway {
    /// Lists one page: walks the folder, then attaches records to the objects found.
    pub(crate) async fn list_page(&self, b: &BucketCtx, q: &Query<'_>) -> S3Result<Page> {
        let mut w = Walk {
            q,
            b,
            gw: self,
            items: Vec::new(),
            limit: q.max + 1,
            last_prefix: None,
        };
        if q.max > 0 {
            // Start at the deepest directory that the prefix names completely.
            let dir_part = match q.prefix.rfind('/') {
                Some(i) => &q.prefix[..=i],
                None => "",
            };
            let named: Vec<&str> = dir_part
                .strip_suffix('/')
                .map_or(Vec::new(), |d| d.split('/').collect());
            // A prefix whose directories include an empty, `.` or `..` segment (`/x`, `a//b`,
            // `a/../b`) names no directory a key can be in, so nothing is under it.
            if named.iter().all(|s| !s.is_empty() && *s != "." && *s != "..") {
                let segs: Vec<String> = named.into_iter().map(str::to_owned).collect();
                // The directory itself may be a marker object equal to the prefix.
                let mut own = None;
                if !dir_part.is_empty() && dir_part.starts_with(q.prefix) && w.after_marker(dir_part) {
                    if let Ok(Some(st)) = b.folder.stat(&penstock_backends::ObjectPath::dir(segs.clone())).await {
                        own = (st.kind == EntryKind::Dir).then_some(st);
                    }
                }
                w.walk_dir(segs, dir_part.to_owned(), own).await?;
            }
        }
        let mut items = w.items;
        let truncated = items.len() > q.max;
        items.truncate(q.max);
        let next = if truncated {
            items.last().map(|i| match i {
                Item::Object(k, _) => Marker {
                    after: k.clone(),
                    skip_group: false,
                },
                Item::Prefix(p) => Marker {
                    after: p.clone(),
                    skip_group: true,
                },
            })
        } else {
            None
        };
        let mut objects = Vec::new();
        let mut prefixes = Vec::new();
        for i in items {
            match i {
                Item::Object(k, st) => objects.push((k, st)),
                Item::Prefix(p) => prefixes.push(p),
            }
        }
        let folder = b.rec.folder_id;
        let keys: Vec<&str> = objects.iter().map(|(k, _)| k.as_str()).collect();
        let records = self.meta.objects(folder, &keys).await.map_err(meta_err)?;
        // Entries no stored record describes (files a session wrote, or keys a writer changed
        // since the directory was read) are stat'ed again, all at once, before they are listed.
        let mut rows = Vec::with_capacity(objects.len());
        let mut recheck = Vec::new();
        for ((key, st), stored) in objects.into_iter().zip(records) {
            let marker = key.ends_with('/');
            // A marker written with a body (its record's ETag is not the empty one) lists with
            // that payload's size and record.
            let payload = match &stored {
                Some(r) if marker && r.etag != EMPTY_MD5 => {
                    let path = penstock_backends::ObjectPath::parse(&key).map_err(super::error::key_err)?;
                    b.folder.open_marker(&path).await.map_err(backend_err)?
                }
                _ => None,
            };
            let row = match payload {
                Some(h) => Some((*h.stat(), effective_record(&key, h.stat(), stored))),
                None if marker => {
                    let mut rec = effective_record(&key, &st, None);
                    rec.etag = stored.map_or_else(|| EMPTY_MD5.to_owned(), |s| s.etag);
                    Some((st, rec))
                }
                None => match stored.and_then(|r| r.describing(&fingerprint(&st))) {
                    Some(rec) => Some((st, rec)),
                    None => {
                        recheck.push(penstock_backends::ObjectPath::parse(&key).map_err(super::error::key_err)?);
                        None
                    }
                },
            };
            rows.push((key, st, row));
        }
        let mut now = b.folder.stat_many(&recheck).await.map_err(backend_err)?.into_iter();
        let mut listed = Vec::with_capacity(rows.len());
        for (key, st, row) in rows {
            let (st, rec) = match row {
                Some(done) => done,
                // No record described the file read from the directory: it was written outside
                // the gateway (then it is there still, unchanged, at a moment after the record
                // was read, and is synthesized), or a writer replaced or removed it since (list
                // what is there now, or nothing).
                None => match now.next().flatten() {
                    None => continue,
                    Some(again) if again.kind != EntryKind::File => continue,
                    Some(again) if fingerprint(&again) == fingerprint(&st) => {
                        let rec = effective_record(&key, &again, None);
                        (again, rec)
                    }
                    Some(_) => match self.reread(b, &key, &st).await? {
                        Some(now) => now,
                        None => continue,
                    },
                },
            };
            listed.push(Listed { key, st, rec });
        }
        let objects = listed;
        Ok(Page {
            objects,
            prefixes,
            next,
        })
    }

    /// The file at a listed key and its record, when no stored record described the file the
    /// directory listing saw (`listed`) and the page's second look (`Folder::stat_many`) found
    /// it changed: `None` when the key holds no file now; a synthesized record when the file
    /// has not changed since (it was written outside the gateway); else the file a writer put
    /// there since, with its record.
    async fn reread(&self, b: &BucketCtx, key: &str, listed: &Stat) -> S3Result<Option<(Stat, ObjectRecord)>> {
        let path = penstock_backends::ObjectPath::parse(key).map_err(super::error::key_err)?;
        let mut seen = *listed;
        for _ in 0..=super::get::MAX_REOPENS {
            let Some(st) = b.folder.stat(&path).await.map_err(backend_err)? else {
                return Ok(None);
            };
            if st.kind != penstock_backends::EntryKind::File {
                return Ok(None);
            }
            if fingerprint(&st) == fingerprint(&seen) {
                // Unchanged since a moment when no record described it: not the gateway's.
                return Ok(Some((st, effective_record(key, &st, None))));
            }
            let (folder, k) = (b.rec.folder_id, key.to_owned());
            let stored = self.meta.object(folder, &k).await.map_err(meta_err)?;
            if let Some(rec) = stored.and_then(|r| r.describing(&fingerprint(&st))) {
                return Ok(Some((st, rec)));
            }
            seen = st;
        }
        Ok(Some((seen, effective_record(key, &seen, None))))
    }

    /// A listing that resumes after a key (ListObjects, ListObjectVersions). A marker that ends
    /// with the delimiter names a common prefix returned earlier: its whole group is skipped.
    pub(crate) async fn list_after_key(
        &self,
        b: &BucketCtx,
        prefix: &str,
        delimiter: Option<&str>,
        marker: &str,
        max: usize,
    ) -> S3Result<Page> {
        let skip_group = delimiter.is_some_and(|d| !marker.is_empty() && marker.ends_with(d));
        let q = Query {
            prefix,
            delimiter,
            marker: Marker {
                after: marker.to_owned(),
                skip_group,
            },
            max,
        };
        self.list_page(b, &q).await
    }

    /// ListObjectsV2.
    pub(crate) async fn list_objects_v2(
        &self,
        req: S3Request<ListObjectsV2Input>,
    ) -> S3Result<S3Response<ListObjectsV2Output>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let max = max_keys(i.max_keys)?;
        // An empty token reads as none (ceph's s3-tests, MinIO, RGW): clients that
        // thread `NextContinuationToken` through unconditionally send `continuation-token=`.
        let marker = match i.continuation_token.as_deref().filter(|t| !t.is_empty()) {
            Some(t) => decode_token(t)?,
            None => Marker {
                after: i.start_after.clone().unwrap_or_default(),
                skip_group: false,
            },
        };
        let prefix = i.prefix.clone().unwrap_or_default();
        let delimiter = i.delimiter.clone().filter(|d| !d.is_empty());
        let page = self
            .list_page(
                &b,
                &Query {
                    prefix: &prefix,
                    delimiter: delimiter.as_deref(),
                    marker,
                    max,
                },
            )
            .await?;
        let url = is_url(i.encoding_type.as_ref())?;
        let owners = (i.fetch_owner == Some(true)).then_some(&*b.rec);
        let restore = super::restore::asks_restore_status(i.optional_object_attributes.as_ref());
        let key_count = (page.objects.len() + page.prefixes.len()) as i32;
        let out = ListObjectsV2Output {
            name: Some(i.bucket.clone()),
            prefix: Some(enc(url, &prefix)),
            delimiter: delimiter.as_deref().map(|d| enc(url, d)),
            start_after: i.start_after.as_deref().map(|s| enc(url, s)),
            max_keys: Some(max as i32),
            key_count: Some(key_count),
            continuation_token: i.continuation_token.clone(),
            is_truncated: Some(page.next.is_some()),
            next_continuation_token: page.next.as_ref().map(encode_token),
            encoding_type: i.encoding_type.clone(),
            contents: Some(
                page.objects
                    .iter()
                    .map(|o| object_entry(o, url, owners, restore))
                    .collect(),
            ),
            common_prefixes: Some(common_prefixes(&page.prefixes, url)),
            ..Default::default()
        };
        Ok(S3Response::new(out))
    }

    /// ListObjects (v1).
    pub(crate) async fn list_objects(
        &self,
        req: S3Request<ListObjectsInput>,
    ) -> S3Result<S3Response<ListObjectsOutput>> {
        let i = &req.input;
        let b = self.bucket(&caller(&req)?, &i.bucket).await?;
        let max = max_keys(i.max_keys)?;
        let prefix = i.prefix.clone().unwrap_or_default();
        let delimiter = i.delimiter.clone().filter(|d| !d.is_empty());
        let marker_s = i.marker.clone().unwrap_or_default();
        let page = self
            .list_after_key(&b, &prefix, delimiter.as_deref(), &marker_s, max)
            .await?;
        let url = is_url(i.encoding_type.as_ref())?;
        let restore = super::restore::asks_restore_status(i.optional_object_attributes.as_ref());
        let next_marker = match (&page.next, &delimiter) {
            (Some(m), Some(_)) => Some(enc(url, &m.after)),
            _ => None,
        };
        let out = ListObjectsOutput {
            name: Some(i.bucket.clone()),
            prefix: Some(enc(url, &prefix)),
            delimiter: delimiter.as_deref().map(|d| enc(url, d)),
            marker: Some(enc(url, &marker_s)),
            next_marker,
            max_keys: Some(max as i32),
            is_truncated: Some(page.next.is_some()),
            encoding_type: i.encoding_type.clone(),
            contents: Some(
                page.objects
                    .iter()
                    .map(|o| object_entry(o, url, Some(&b.rec), restore))
                    .collect(),
            ),
            common_prefixes: Some(common_prefixes(&page.prefixes, url)),
            ..Default::default()
        };
        Ok(S3Response::new(out))
    }
}

pub(crate) fn max_keys(m: Option<i32>) -> S3Result<usize> {
    page_size(m, "max-keys")
}

/// A page size asked for with `max-keys`, `max-uploads` or `max-parts` (`name`): at most 1000,
/// 1000 when not given; a negative one is `InvalidArgument`, as S3 answers.
pub(crate) fn page_size(m: Option<i32>, name: &str) -> S3Result<usize> {
    match m {
        None => Ok(1000),
        Some(n) if n < 0 => Err(s3_error!(InvalidArgument, "{name} must be a non-negative integer")),
        Some(n) => Ok((n as usize).min(1000)),
    }
}

pub(crate) fn is_url(e: Option<&EncodingType>) -> S3Result<bool> {
    match e.map(EncodingType::as_str) {
        None => Ok(false),
        Some(s) if s.eq_ignore_ascii_case("url") => Ok(true),
        Some(s) => Err(s3_error!(
            InvalidArgument,
            "Invalid Encoding Method specified in Request: {s}"
        )),
    }
}

/// Characters left as-is under `encoding-type=url`: RFC 3986 unreserved and `/`.
const KEEP: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

pub(crate) fn enc(url: bool, s: &str) -> String {
    if url {
        percent_encoding::utf8_percent_encode(s, KEEP).to_string()
    } else {
        s.to_owned()
    }
}

/// A listed object; with its owner where `owners` (the bucket's record) is given, and its
/// restore status where `restore` asks for it.
fn object_entry(o: &Listed, url: bool, owners: Option<&penstock_metadata::BucketRecord>, restore: bool) -> Object {
    let algos: Vec<ChecksumAlgorithm> = super::checksum::Algo::ALL
        .into_iter()
        .filter(|&a| o.rec.checksums.get(a).is_some())
        .map(super::checksum::s3_algo)
        .collect();
    Object {
        key: Some(enc(url, &o.key)),
        e_tag: Some(etag(&o.rec.etag)),
        size: Some(o.st.size as i64),
        last_modified: Some(last_modified(&o.st)),
        storage_class: Some(ObjectStorageClass::from(super::object::class_name(&o.rec.attrs))),
        checksum_algorithm: (!algos.is_empty()).then_some(algos),
        checksum_type: o.rec.checksums.checksum_type.map(super::checksum::s3_type),
        owner: owners.map(|b| super::object_owner(b, &o.rec.attrs)),
        restore_status: super::restore::restore_status(restore, &o.rec.attrs),
    }
}

pub(crate) fn common_prefixes(p: &[String], url: bool) -> Vec<CommonPrefix> {
    p.iter()
        .map(|p| CommonPrefix {
            prefix: Some(enc(url, p)),
        })
        .collect()
}

fn encode_token(m: &Marker) -> String {
    let mut raw = vec![u8::from(m.skip_group)];
    raw.extend_from_slice(m.after.as_bytes());
    B64.encode(raw)
}

fn decode_token(t: &str) -> S3Result<Marker> {
    let bad = || s3_error!(InvalidArgument, "The continuation token provided is incorrect");
    let raw = B64.decode(t).map_err(|_| bad())?;
    let (flag, key) = raw.split_first().ok_or_else(bad)?;
    if *flag > 1 {
        return Err(bad());
    }
    Ok(Marker {
        after: String::from_utf8(key.to_vec()).map_err(|_| bad())?,
        skip_group: *flag == 1,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_reject_garbage() {
        for m in [
            Marker::default(),
            Marker {
                after: "a/b ü@%".into(),
                skip_group: true,
            },
        ] {
            assert_eq!(decode_token(&encode_token(&m)).unwrap(), m);
        }
        assert!(decode_token("!!!").is_err());
        assert!(decode_token(&B64.encode([7u8, b'a'])).is_err());
    }

    #[test]
    fn url_encoding_keeps_slashes() {
        assert_eq!(enc(true, "a b/c@d%e+"), "a%20b/c%40d%25e%2B");
        assert_eq!(enc(false, "a b"), "a b");
    }
}
