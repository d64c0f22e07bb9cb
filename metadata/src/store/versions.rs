//! Version rows (noncurrent versions and delete markers of versioned buckets) in the store.

use rocksdb::WriteBatch;
use uuid::Uuid;

use super::{encode, Result, Store};
use crate::schema::*;
use crate::{KeyEdit, VersionQuery, VersionRecord};

/// Bytes after a key in a version row's key: the separator and the inverted sequence number.
const ROW_SUFFIX: usize = 9;

impl Store {
    /// The version rows of one key, newest first.
    pub fn versions(&self, folder: Uuid, key: &str) -> Result<Vec<VersionRecord>> {
        let mut out = Vec::new();
        self.scan(CF_VERSIONS, &version_prefix(folder, key), b"", |_, v| {
            out.push(v);
            true
        })?;
        Ok(out)
    }

    /// A page of a folder's version rows, in key order and newest first within a key.
    pub fn list_versions(&self, folder: Uuid, q: VersionQuery<'_>) -> Result<Vec<(String, VersionRecord)>> {
        let prefix = object_key(folder, q.prefix);
        let start = match q.after {
            // Past every row of the key: its rows continue with the 0x00 separator, and a
            // longer key continues with a byte above it (keys hold no NUL).
            Some((k, None)) => {
                let mut s = object_key(folder, k);
                s.push(1);
                s
            }
            Some((k, Some(seq))) => {
                let mut s = version_key(folder, k, seq);
                s.push(0);
                s
            }
            None => prefix.clone(),
        };
        let mut out = Vec::new();
        if q.limit == 0 {
            return Ok(out);
        }
        self.scan(CF_VERSIONS, &prefix, &start, |k, v: VersionRecord| {
            let key = k.get(16..k.len().saturating_sub(ROW_SUFFIX)).unwrap_or_default();
            if let Ok(key) = std::str::from_utf8(key) {
                out.push((key.to_owned(), v));
            }
            out.len() < q.limit
        })?;
        Ok(out)
    }

    /// Changes a key's object record, version rows and publishing note in one synced batch.
    pub fn edit_key(&self, folder: Uuid, key: &str, edit: &KeyEdit<'_>, now_ms: i64) -> Result<()> {
        let mut batch = WriteBatch::default();
        let versions = self.cf(CF_VERSIONS);
        for seq in edit.remove {
            batch.delete_cf(versions, version_key(folder, key, *seq));
        }
        for a in edit.add {
            batch.put_cf(versions, version_key(folder, key, a.seq), encode(a));
        }
        let k = object_key(folder, key);
        match edit.object {
            Some(Some(r)) => batch.put_cf(self.cf(CF_OBJECTS), &k, encode(r)),
            Some(None) => batch.delete_cf(self.cf(CF_OBJECTS), &k),
            None => {}
        }
        match edit.publishing {
            Some(true) => batch.put_cf(self.cf(CF_PUBLISHING), &k, encode(&now_ms)),
            Some(false) => batch.delete_cf(self.cf(CF_PUBLISHING), &k),
            None => {}
        }
        self.write_object_batch(&k, batch, &self.wopts())
    }
}
