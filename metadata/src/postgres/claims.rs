//! Conditional stores and key claims: what lets gateways that share the database order their
//! changes of one key ([`crate::Expect`], [`crate::engine::Metadata::claim_key`]).

use std::sync::LazyLock;

use tokio_postgres::types::ToSql;
use uuid::Uuid;

use super::sql::{DB_NOW_MS, LAZY};
use super::{json, PgMetadata};
use crate::engine::{Expect, MetaResult};
use crate::{MetaError, ObjectRecord};

/// True unless a gateway other than the one in parameter `instance` (`$3`, `$4`...) is
/// publishing the key (`$1` folder, `$2` key) now.
fn not_busy(instance: &str) -> String {
    format!(
        "NOT EXISTS (SELECT 1 FROM publishing WHERE folder_id = $1::uuid AND key = $2::bytea AND instance <> {instance}::text)"
    )
}

/// The text of a [`ClaimObject`]: for an expected `record` (else an absent one), with `note`.
fn claim_sql(record: bool, note: bool) -> String {
    let free = not_busy("$4");
    let stored = if record {
        format!(
            "UPDATE objects SET doc = $3::text WHERE folder_id = $1::uuid AND key = $2::bytea
               AND doc::jsonb ->> 'etag' = $5::text AND doc::jsonb -> 'fingerprint' = $6::text::jsonb
               AND {free} RETURNING 1"
        )
    } else {
        format!(
            "INSERT INTO objects (folder_id, key, doc) SELECT $1::uuid, $2::bytea, $3::text WHERE {free}
             ON CONFLICT (folder_id, key) DO NOTHING RETURNING 1"
        )
    };
    let noted = if note {
        format!(
            ", p AS (INSERT INTO publishing (folder_id, key, since_ms, instance)
                     SELECT $1::uuid, $2::bytea, {DB_NOW_MS}, $4::text FROM o
                     ON CONFLICT (folder_id, key) DO UPDATE SET since_ms = EXCLUDED.since_ms, instance = $4::text)"
        )
    } else {
        String::new()
    };
    format!("WITH o AS ({stored}){noted} SELECT EXISTS (SELECT 1 FROM o), NOT {free}")
}

/// One statement that stores `$3` as the key's record (a conditional write's) only while the
/// record is still the one expected and no other gateway is publishing the key; with `note`, it
/// also notes the key as publishing by `$4`. Parameters: `$1` folder, `$2` key, `$3` document,
/// `$4` instance, and for an expected record `$5` its ETag and `$6` its fingerprint as JSON
/// ([`ClaimObject::args`]). Answers one row: whether the record was stored, and whether another
/// gateway is publishing the key ([`claimed`]).
///
/// Atomic against every other writer of the key at read committed: an absent record is claimed
/// by an insert that does nothing on conflict (a concurrent insert is waited for, then seen), a
/// present one by an update whose condition is evaluated again on the row version it waits for.
/// Every write through a gateway stores the key's record before its file moves, so a writer
/// that came between the caller's read and this statement has changed the row it checks.
pub(super) struct ClaimObject<'e> {
    pub sql: &'static str,
    expect: &'e Expect,
    fingerprint: Option<String>,
}

impl<'e> ClaimObject<'e> {
    pub fn new(expect: &'e Expect, note: bool) -> Self {
        // The four forms (absent or expected record, with or without the note), composed once.
        static SQL: LazyLock<[[String; 2]; 2]> =
            LazyLock::new(|| [false, true].map(|record| [false, true].map(|note| claim_sql(record, note))));
        let (record, fingerprint) = match expect {
            Expect::Absent => (false, None),
            Expect::Record { fingerprint, .. } => (true, Some(json(fingerprint))),
        };
        Self {
            sql: &SQL[usize::from(record)][usize::from(note)],
            expect,
            fingerprint,
        }
    }

    /// The statement's parameters: `fixed` ($1 to $4), then what the expected record adds.
    pub fn args<'a>(&'a self, fixed: [&'a (dyn ToSql + Sync); 4]) -> Vec<&'a (dyn ToSql + Sync)> {
        let mut args = fixed.to_vec();
        if let (Expect::Record { etag, .. }, Some(f)) = (self.expect, &self.fingerprint) {
            args.extend([etag as &(dyn ToSql + Sync), f as &(dyn ToSql + Sync)]);
        }
        args
    }
}

/// The outcome of a conditional store: whether it stored, and whether another gateway was
/// publishing the key (why it did not).
pub(super) fn claimed(stored: bool, busy: bool) -> MetaResult<()> {
    match (stored, busy) {
        (true, _) => Ok(()),
        (false, true) => Err(MetaError::Busy),
        (false, false) => Err(MetaError::Changed),
    }
}

impl PgMetadata {
    /// Stores `rec` at the key if its record is the one expected, noting the key as publishing
    /// by `instance` with `note` (see [`ClaimObject`]).
    pub(super) async fn claim(
        &self,
        folder: Uuid,
        key: &str,
        rec: &ObjectRecord,
        instance: &str,
        expect: &Expect,
        note: bool,
    ) -> MetaResult<()> {
        let st = ClaimObject::new(expect, note);
        let (k, d) = (key.as_bytes(), json(rec));
        let row = self.query_one(st.sql, &st.args([&folder, &k, &d, &instance])).await?;
        claimed(row.get(0), row.get(1))
    }

    /// [`crate::engine::Metadata::expectation`]: the record and the publishing note from one
    /// snapshot, in one statement.
    pub(super) async fn read_expectation(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<Expect> {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "SELECT (SELECT doc FROM objects WHERE folder_id = $1::uuid AND key = $2::bytea), NOT {}",
                not_busy("$3")
            )
        });
        let row = self.query_one(&SQL, &[&folder, &key.as_bytes(), &instance]).await?;
        if row.get::<_, bool>(1) {
            return Err(MetaError::Busy);
        }
        let rec: Option<ObjectRecord> = match row.get::<_, Option<&str>>(0) {
            Some(text) => Some(serde_json::from_str(text).map_err(|err| MetaError::Corrupt { cf: "objects", err })?),
            None => None,
        };
        Ok(Expect::of(rec.as_ref()))
    }

    /// [`crate::engine::Metadata::claim_key`]: a note another gateway holds is left as it is (no
    /// row comes back); this gateway's own (a claim it holds, a settling write that failed) is
    /// taken again.
    pub(super) async fn claim_note(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<bool> {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "INSERT INTO publishing (folder_id, key, since_ms, instance) VALUES ($1, $2, {DB_NOW_MS}, $3)
                 ON CONFLICT (folder_id, key) DO UPDATE SET since_ms = EXCLUDED.since_ms
                 WHERE publishing.instance = $3 RETURNING 1"
            )
        });
        Ok(self
            .query_opt(&SQL, &[&folder, &key.as_bytes(), &instance])
            .await?
            .is_some())
    }

    /// [`crate::engine::Metadata::take_note`]: moves the note to `instance` only where it is
    /// still in `noted`'s name (one statement, so two janitors never both take one note); none
    /// is added.
    pub(super) async fn take_over_note(
        &self,
        folder: Uuid,
        key: &str,
        noted: &str,
        instance: &str,
    ) -> MetaResult<bool> {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!(
                "UPDATE publishing SET since_ms = {DB_NOW_MS}, instance = $4
                 WHERE folder_id = $1 AND key = $2 AND instance = $3 RETURNING 1"
            )
        });
        Ok(self
            .query_opt(&SQL, &[&folder, &key.as_bytes(), &noted, &instance])
            .await?
            .is_some())
    }

    /// [`crate::engine::Metadata::release_key`]. Unsynced ([`LAZY`]): a release lost in a
    /// database crash leaves this gateway's own note, which its janitor settles.
    pub(super) async fn release_note(&self, folder: Uuid, key: &str, instance: &str) -> MetaResult<()> {
        static SQL: LazyLock<String> = LazyLock::new(|| {
            format!("WITH {LAZY} DELETE FROM publishing USING lazy WHERE folder_id = $1 AND key = $2 AND instance = $3")
        });
        self.exec(&SQL, &[&folder, &key.as_bytes(), &instance]).await.map(drop)
    }
}
