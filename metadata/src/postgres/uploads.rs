//! Multipart uploads and their parts: records keyed by folder, key and upload id; completing
//! an upload stores the object and forgets the upload in one statement.

use uuid::Uuid;

use super::conn::{doc, json};
use super::sql::{FORGET_PARTS, FORGET_UPLOAD};
use super::{successor, PgMetadata};
use crate::engine::{MetaResult, UploadQuery};
use crate::{ObjectRecord, PartRecord, UploadId, UploadRecord};

impl PgMetadata {
    /// [`Metadata::put_upload`].
    pub(super) async fn store_upload(&self, folder: Uuid, up: &UploadRecord) -> MetaResult<()> {
        let sql = "INSERT INTO uploads (folder_id, key, upload_id, doc) VALUES ($1, $2, $3, $4)
                   ON CONFLICT (folder_id, key, upload_id) DO UPDATE SET doc = $4";
        let args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [
            &folder,
            &up.key.as_bytes(),
            &up.upload_id.as_str().as_bytes(),
            &json(up),
        ];
        self.exec(sql, &args).await.map(drop)
    }
    /// [`Metadata::upload`].
    pub(super) async fn read_upload(
        &self,
        folder: Uuid,
        key: &str,
        upload_id: &UploadId,
    ) -> MetaResult<Option<UploadRecord>> {
        let sql = "SELECT doc FROM uploads WHERE folder_id = $1 AND key = $2 AND upload_id = $3";
        self.get(
            "uploads",
            sql,
            &[&folder, &key.as_bytes(), &upload_id.as_str().as_bytes()],
        )
        .await
    }
    /// [`Metadata::uploads`].
    pub(super) async fn list_uploads(&self, folder: Uuid, q: UploadQuery<'_>) -> MetaResult<Vec<UploadRecord>> {
        let UploadQuery { prefix, after, limit } = q;
        let lo = prefix.as_bytes();
        let hi = successor(lo);
        let (ak, aid) = match after {
            Some((k, id)) => (Some(k.as_bytes()), Some(id.as_bytes())),
            None => (None, None),
        };
        let limit = limit.min(i64::MAX as usize) as i64;
        let rows = self
            .query(
                "SELECT doc FROM uploads
                 WHERE folder_id = $1 AND key >= $2 AND ($3::BYTEA IS NULL OR key < $3)
                   AND ($4::BYTEA IS NULL OR (key, upload_id) > ($4, $5))
                 ORDER BY key, upload_id LIMIT $6",
                &[&folder, &lo, &hi.as_deref(), &ak, &aid, &limit],
            )
            .await?;
        rows.iter().map(|r| doc("uploads", r, 0)).collect()
    }
    /// [`Metadata::count_uploads`].
    pub(super) async fn uploads_count(&self) -> MetaResult<u64> {
        let row = self.query_one("SELECT count(*) FROM uploads", &[]).await?;
        Ok(row.get::<_, i64>(0).max(0) as u64)
    }
    /// [`Metadata::put_part`].
    pub(super) async fn store_part(&self, upload_id: &UploadId, part: &PartRecord) -> MetaResult<()> {
        let sql = "INSERT INTO parts (upload_id, part_number, doc) VALUES ($1, $2, $3)
                   ON CONFLICT (upload_id, part_number) DO UPDATE SET doc = $3";
        let n = part.part_number as i64;
        self.exec(sql, &[&upload_id.as_str().as_bytes(), &n, &json(part)])
            .await
            .map(drop)
    }
    /// [`Metadata::part`].
    pub(super) async fn read_part(&self, upload_id: &UploadId, part: u32) -> MetaResult<Option<PartRecord>> {
        let sql = "SELECT doc FROM parts WHERE upload_id = $1 AND part_number = $2";
        self.get("parts", sql, &[&upload_id.as_str().as_bytes(), &(part as i64)])
            .await
    }
    /// [`Metadata::parts`].
    pub(super) async fn list_parts(&self, upload_id: &UploadId) -> MetaResult<Vec<PartRecord>> {
        let rows = self
            .query(
                "SELECT doc FROM parts WHERE upload_id = $1 ORDER BY part_number",
                &[&upload_id.as_str().as_bytes()],
            )
            .await?;
        rows.iter().map(|r| doc("parts", r, 0)).collect()
    }
    /// [`Metadata::delete_upload`].
    pub(super) async fn forget_upload(&self, folder: Uuid, key: &str, upload_id: &UploadId) -> MetaResult<()> {
        let id = upload_id.as_str().as_bytes();
        let sql = format!("WITH u AS ({FORGET_UPLOAD}) {FORGET_PARTS}");
        self.exec(&sql, &[&folder, &key.as_bytes(), &id]).await.map(drop)
    }
    /// [`Metadata::complete_upload`].
    pub(super) async fn finish_upload(
        &self,
        folder: Uuid,
        key: &str,
        id: &UploadId,
        rec: &ObjectRecord,
    ) -> MetaResult<()> {
        let sql = format!(
            "WITH u AS ({FORGET_UPLOAD}), p AS ({FORGET_PARTS})
             INSERT INTO objects (folder_id, key, doc) VALUES ($1, $2, $4) ON CONFLICT (folder_id, key) DO UPDATE SET doc = $4"
        );
        let args: [&(dyn tokio_postgres::types::ToSql + Sync); 4] =
            [&folder, &key.as_bytes(), &id.as_str().as_bytes(), &json(rec)];
        self.exec(&sql, &args).await.map(drop)
    }
}
