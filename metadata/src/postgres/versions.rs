//! Object versions in PostgreSQL: the version rows of a key and the transaction that edits a
//! key's record, versions and publishing mark together.

use deadpool_postgres::Object;
use uuid::Uuid;

use super::claims::{claimed, ClaimObject};
use super::conn::{doc, json, pg, try_again};
use super::sql::{DB_NOW_MS, UPSERT_OBJECT};
use super::{successor, PgMetadata};
use crate::engine::{KeyEdit, KeyedVersions, MetaResult, VersionQuery};
use crate::{MetaError, VersionRecord};

impl PgMetadata {
    /// The key's version rows, newest first ([`crate::engine::Metadata::versions`]).
    pub(super) async fn key_versions(&self, folder: Uuid, key: &str) -> MetaResult<Vec<VersionRecord>> {
        let sql = "SELECT doc FROM versions WHERE folder_id = $1 AND key = $2 ORDER BY seq DESC";
        let rows = self.query(sql, &[&folder, &key.as_bytes()]).await?;
        rows.iter().map(|r| doc("versions", r, 0)).collect()
    }

    /// A page of version rows in key order, newest first within a key
    /// ([`crate::engine::Metadata::list_versions`]).
    pub(super) async fn versions_page(&self, folder: Uuid, q: VersionQuery<'_>) -> MetaResult<KeyedVersions> {
        let lo = q.prefix.as_bytes();
        let hi = successor(lo);
        let (ak, aseq) = match q.after {
            Some((k, seq)) => (Some(k.as_bytes()), seq),
            None => (None, None),
        };
        let limit = q.limit.min(i64::MAX as usize) as i64;
        let rows = self
            .query(
                "SELECT key, doc FROM versions
                 WHERE folder_id = $1 AND key >= $2 AND ($3::BYTEA IS NULL OR key < $3)
                   AND ($4::BYTEA IS NULL OR key > $4 OR (key = $4 AND seq < $5::BIGINT))
                 ORDER BY key, seq DESC LIMIT $6",
                &[&folder, &lo, &hi.as_deref(), &ak, &aseq, &limit],
            )
            .await?;
        rows.iter()
            .filter_map(|r| {
                let key = String::from_utf8(r.get(0)).ok()?;
                Some(doc("versions", r, 1).map(|v| (key, v)))
            })
            .collect()
    }

    /// [`crate::engine::Metadata::edit_key`] as one transaction, tried again after a
    /// serialization failure like a statement (`retried!`).
    pub(super) async fn edit_in_tx(
        &self,
        folder: Uuid,
        key: &[u8],
        edit: &KeyEdit<'_>,
        instance: &str,
    ) -> MetaResult<()> {
        let mut tries = 0u32;
        loop {
            let mut c = self.client().await?;
            let done = edit_once(&mut c, folder, key, edit, instance).await;
            drop(c);
            if let Err(e) = &done {
                if try_again(e, &mut tries).await {
                    continue;
                }
            }
            return done.map_err(pg)?;
        }
    }
}

/// One try of [`crate::engine::Metadata::edit_key`]: a transaction of a few statements (a row
/// removed and one added at the same place cannot share one statement: the primary key sees
/// both). The inner result is a conditional edit's refusal, the transaction rolled back.
async fn edit_once(
    c: &mut Object,
    folder: Uuid,
    key: &[u8],
    edit: &KeyEdit<'_>,
    instance: &str,
) -> Result<MetaResult<()>, tokio_postgres::Error> {
    let tx = c.transaction().await?;
    let gone: Vec<i64> = edit
        .remove
        .iter()
        .chain(edit.add.iter().map(|a| &a.seq))
        .copied()
        .collect();
    if !gone.is_empty() {
        let sql = "DELETE FROM versions WHERE folder_id = $1 AND key = $2 AND seq = ANY($3)";
        tx.execute(&tx.prepare_cached(sql).await?, &[&folder, &key, &gone])
            .await?;
    }
    if !edit.add.is_empty() {
        let sql = "INSERT INTO versions (folder_id, key, seq, version_id, doc) VALUES ($1, $2, $3, $4, $5)";
        let st = tx.prepare_cached(sql).await?;
        for a in edit.add {
            tx.execute(&st, &[&folder, &key, &a.seq, &a.version_id, &json(a)])
                .await?;
        }
    }
    match (edit.object, edit.expect) {
        (Some(Some(r)), Some(e)) => {
            let claim = ClaimObject::new(e, false);
            let st = tx.prepare_cached(claim.sql).await?;
            let d = json(r);
            let row = tx.query_one(&st, &claim.args([&folder, &key, &d, &instance])).await?;
            if let Err(refused) = claimed(row.get(0), row.get(1)) {
                return Ok(Err(refused));
            }
        }
        (_, Some(_)) => {
            return Ok(Err(MetaError::Task(
                "a conditional key edit must store a record".to_owned(),
            )))
        }
        (Some(Some(r)), None) => {
            tx.execute(&tx.prepare_cached(UPSERT_OBJECT).await?, &[&folder, &key, &json(r)])
                .await?;
        }
        (Some(None), None) => {
            let sql = "DELETE FROM objects WHERE folder_id = $1 AND key = $2";
            tx.execute(&tx.prepare_cached(sql).await?, &[&folder, &key]).await?;
        }
        (None, None) => {}
    }
    match edit.publishing {
        Some(true) => {
            let sql = format!(
                "INSERT INTO publishing (folder_id, key, since_ms, instance) VALUES ($1, $2, {DB_NOW_MS}, $3)
                 ON CONFLICT (folder_id, key) DO UPDATE SET since_ms = EXCLUDED.since_ms, instance = $3"
            );
            tx.execute(&tx.prepare_cached(&sql).await?, &[&folder, &key, &instance])
                .await?;
        }
        Some(false) => {
            let sql = "DELETE FROM publishing WHERE folder_id = $1 AND key = $2";
            tx.execute(&tx.prepare_cached(sql).await?, &[&folder, &key]).await?;
        }
        None => {}
    }
    tx.commit().await.map(Ok)
}
