//! Object records in the store, and the publishing notes that pair a record with the file being
//! renamed into place for it.

use rocksdb::{WriteBatch, WriteOptions};
use uuid::Uuid;

use super::{decode, encode, Result, Store};
use crate::schema::*;
use crate::{Expect, MetaError, ObjectRecord};

impl Store {
    /// The record of one object.
    pub fn object(&self, folder: Uuid, key: &str) -> Result<Option<ObjectRecord>> {
        let k = object_key(folder, key);
        self.get_cached(&self.objects, CF_OBJECTS, &k)
    }

    /// Records of many objects of one folder at once (listings).
    pub fn objects(&self, folder: Uuid, keys: &[&str]) -> Result<Vec<Option<ObjectRecord>>> {
        let cf = self.cf(CF_OBJECTS);
        let ks: Vec<_> = keys.iter().map(|k| (cf, object_key(folder, k))).collect();
        self.db
            .multi_get_cf(ks)
            .into_iter()
            .map(|r| match r? {
                Some(v) => Ok(Some(decode(CF_OBJECTS, &v)?)),
                None => Ok(None),
            })
            .collect()
    }

    /// Up to `limit` object records of a folder in key order, after `after` when given.
    pub fn object_records(
        &self,
        folder: Uuid,
        after: Option<&str>,
        limit: usize,
    ) -> Result<Vec<(String, ObjectRecord)>> {
        let prefix = folder.as_bytes().to_vec();
        let start = match after {
            // Just past the key: the key followed by the smallest byte.
            Some(k) => {
                let mut s = object_key(folder, k);
                s.push(0);
                s
            }
            None => prefix.clone(),
        };
        let mut out = Vec::new();
        self.scan(CF_OBJECTS, &prefix, &start, |k, rec: ObjectRecord| {
            if let Ok(key) = std::str::from_utf8(&k[16..]) {
                out.push((key.to_owned(), rec));
            }
            out.len() < limit
        })?;
        Ok(out)
    }

    /// Stores (or replaces) an object record.
    pub fn put_object(&self, folder: Uuid, key: &str, rec: &ObjectRecord) -> Result<()> {
        self.put_cached(&self.objects, CF_OBJECTS, &object_key(folder, key), rec)
    }

    /// Removes an object record.
    pub fn delete_object(&self, folder: Uuid, key: &str) -> Result<()> {
        let k = object_key(folder, key);
        let r = self.delete(CF_OBJECTS, &k);
        self.objects.forget(&k);
        r
    }

    /// Writes `batch`, which changes the object record at `k`, then drops the cached copy
    /// (whether or not the write succeeded: a failed write may still have applied).
    pub(super) fn write_object_batch(&self, k: &[u8], batch: WriteBatch, opts: &WriteOptions) -> Result<()> {
        let r = self.db.write_opt(batch, opts);
        self.objects.forget(k);
        Ok(r?)
    }

    /// First half of publishing a file at a key: stores `rec` (whose `replaces` names the record
    /// of the file now at the key) and notes the key as publishing, durably, before the file is
    /// renamed into place.
    pub fn begin_publish(&self, folder: Uuid, key: &str, rec: &ObjectRecord, now_ms: i64) -> Result<()> {
        let k = object_key(folder, key);
        let mut batch = WriteBatch::default();
        batch.put_cf(self.cf(CF_OBJECTS), &k, encode(rec));
        batch.put_cf(self.cf(CF_PUBLISHING), &k, encode(&now_ms));
        self.write_object_batch(&k, batch, &self.wopts())
    }

    /// Fails with [`MetaError::Changed`] unless the key's record is the one `expect` names (no
    /// expectation always holds). The caller orders this with its write (the gateway's key lock).
    pub fn expect(&self, folder: Uuid, key: &str, expect: Option<&Expect>) -> Result<()> {
        match expect {
            Some(e) if !e.holds(self.object(folder, key)?.as_ref()) => Err(MetaError::Changed),
            _ => Ok(()),
        }
    }

    /// Second half: the key's record becomes `rec` (the published one, or the replaced one if the
    /// rename failed; `None` removes it) and the key stops being publishing.
    ///
    /// Not synced: until it is durable the stored pair still resolves to the right record by
    /// fingerprint, and the next synced write (RocksDB's log is ordered) or the start-up sweep
    /// settles it. That keeps one WAL fsync per PUT.
    pub fn end_publish(&self, folder: Uuid, key: &str, rec: Option<&ObjectRecord>) -> Result<()> {
        let k = object_key(folder, key);
        let mut batch = WriteBatch::default();
        match rec {
            Some(r) => batch.put_cf(self.cf(CF_OBJECTS), &k, encode(r)),
            None => batch.delete_cf(self.cf(CF_OBJECTS), &k),
        }
        batch.delete_cf(self.cf(CF_PUBLISHING), &k);
        let mut w = WriteOptions::default();
        w.set_sync(false);
        self.write_object_batch(&k, batch, &w)
    }

    /// Whether the key has a publish that was begun and not ended.
    pub fn is_publishing(&self, folder: Uuid, key: &str) -> Result<bool> {
        Ok(self.get::<i64>(CF_PUBLISHING, &object_key(folder, key))?.is_some())
    }

    /// Keys with a publish that was begun and not ended (a crash interrupted it), as
    /// (folder, key).
    pub fn publishing(&self) -> Result<Vec<(Uuid, String)>> {
        let mut out = Vec::new();
        self.scan(CF_PUBLISHING, b"", b"", |k, _: i64| {
            if let (Some(f), Ok(key)) = (k.get(..16), std::str::from_utf8(k.get(16..).unwrap_or_default())) {
                out.push((Uuid::from_slice(f).expect("16 bytes"), key.to_owned()));
            }
            true
        })?;
        Ok(out)
    }
}
