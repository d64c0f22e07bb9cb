//! Multipart uploads and their parts in the store.

use rocksdb::WriteBatch;
use uuid::Uuid;

use super::{encode, parts_range, Result, Store};
use crate::schema::*;
use crate::{ObjectRecord, PartRecord, UploadId, UploadRecord};

impl Store {
    /// Stores a new upload.
    pub fn put_upload(&self, folder: Uuid, up: &UploadRecord) -> Result<()> {
        self.put(CF_UPLOADS, &upload_key(folder, &up.key, &up.upload_id), up)
    }

    /// Looks up an upload.
    pub fn upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> Result<Option<UploadRecord>> {
        self.get(CF_UPLOADS, &upload_key(folder, key, upload_id))
    }

    /// Uploads of a folder in (key, upload id) order, starting at the encoded position `start`
    /// (see [`upload_key`]) and limited to keys beginning with `prefix`.
    pub fn uploads(
        &self,
        folder: Uuid,
        prefix: &str,
        start_after: Option<(&str, &str)>,
        mut f: impl FnMut(UploadRecord) -> bool,
    ) -> Result<()> {
        let scan_prefix = object_key(folder, prefix);
        let start = match start_after {
            // The marker's id comes from a client and need not be a valid one.
            Some((key, id)) => {
                let mut s = object_key(folder, key);
                s.push(0);
                s.extend_from_slice(id.as_bytes());
                s.push(0);
                s
            }
            None => scan_prefix.clone(),
        };
        self.scan(CF_UPLOADS, &scan_prefix, &start, |_, u| f(u))
    }

    /// Stores (or replaces) a part.
    pub fn put_part(&self, upload_id: &UploadId, part: &PartRecord) -> Result<()> {
        self.put(CF_PARTS, &part_key(upload_id, part.part_number), part)
    }

    /// One part of an upload.
    pub fn part(&self, upload_id: &UploadId, part: u32) -> Result<Option<PartRecord>> {
        self.get(CF_PARTS, &part_key(upload_id, part))
    }

    /// All parts of an upload, by part number.
    pub fn parts(&self, upload_id: &UploadId) -> Result<Vec<PartRecord>> {
        let mut out = Vec::new();
        let mut prefix = upload_id.as_str().as_bytes().to_vec();
        prefix.push(0);
        self.scan(CF_PARTS, &prefix, b"", |_, p| {
            out.push(p);
            true
        })?;
        Ok(out)
    }

    /// Removes an upload and its parts.
    pub fn delete_upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> Result<()> {
        let mut batch = WriteBatch::default();
        self.delete_upload_into(&mut batch, folder, key, upload_id);
        self.db.write_opt(batch, &self.wopts())?;
        Ok(())
    }

    /// Atomically records a completed object and forgets its upload.
    pub fn complete_upload(&self, folder: Uuid, key: &str, upload_id: &UploadId, rec: &ObjectRecord) -> Result<()> {
        let mut batch = WriteBatch::default();
        self.delete_upload_into(&mut batch, folder, key, upload_id);
        let k = object_key(folder, key);
        batch.put_cf(self.cf(CF_OBJECTS), &k, encode(rec));
        self.write_object_batch(&k, batch, &self.wopts())
    }

    fn delete_upload_into(&self, batch: &mut WriteBatch, folder: Uuid, key: &str, upload_id: &UploadId) {
        batch.delete_cf(self.cf(CF_UPLOADS), upload_key(folder, key, upload_id));
        let (lo, hi) = parts_range(upload_id);
        batch.delete_range_cf(self.cf(CF_PARTS), &lo, &hi);
    }
}
