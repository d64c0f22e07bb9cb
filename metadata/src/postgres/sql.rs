//! The schema's migrations, in order, and the SQL pieces several calls of the engine share.

/// The schema, one migration per version, applied in order and each exactly once (recorded in
/// `penstock_schema`). Append; never edit one that has shipped.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1. The first schema.
    "CREATE TABLE domains (name TEXT PRIMARY KEY, doc TEXT NOT NULL);
     CREATE TABLE projects (id UUID PRIMARY KEY, doc TEXT NOT NULL);
     CREATE TABLE users (id UUID PRIMARY KEY, doc TEXT NOT NULL);
     CREATE TABLE keypairs (access_key TEXT PRIMARY KEY, doc TEXT NOT NULL);
     CREATE TABLE buckets (domain TEXT NOT NULL, name TEXT NOT NULL, doc TEXT NOT NULL,
                           PRIMARY KEY (domain, name));
     CREATE TABLE quotas (scope TEXT PRIMARY KEY, limit_bytes BIGINT, usage_bytes BIGINT NOT NULL);
     CREATE TABLE objects (folder_id UUID NOT NULL, key BYTEA NOT NULL, doc TEXT NOT NULL,
                           PRIMARY KEY (folder_id, key));
     CREATE TABLE publishing (folder_id UUID NOT NULL, key BYTEA NOT NULL, since_ms BIGINT NOT NULL,
                              PRIMARY KEY (folder_id, key));
     CREATE TABLE uploads (folder_id UUID NOT NULL, key BYTEA NOT NULL, upload_id BYTEA NOT NULL,
                           doc TEXT NOT NULL, PRIMARY KEY (folder_id, key, upload_id));
     CREATE TABLE parts (upload_id BYTEA NOT NULL, part_number BIGINT NOT NULL, doc TEXT NOT NULL,
                         PRIMARY KEY (upload_id, part_number));",
    // 2. Gateways and their heartbeats (by the database's clock); which gateway began each
    //    pending publish, so that only a dead gateway's are settled by another.
    "CREATE TABLE gateways (instance TEXT PRIMARY KEY, heartbeat_ms BIGINT NOT NULL);
     ALTER TABLE publishing ADD COLUMN instance TEXT NOT NULL DEFAULT '';",
    // 3. Noncurrent versions and delete markers of versioned buckets: a key's rows in `seq`
    //    order (newest largest), found by version id too.
    "CREATE TABLE versions (folder_id UUID NOT NULL, key BYTEA NOT NULL, seq BIGINT NOT NULL,
                            version_id TEXT NOT NULL, doc TEXT NOT NULL,
                            PRIMARY KEY (folder_id, key, seq));
     CREATE INDEX versions_by_id ON versions (folder_id, key, version_id);",
];

/// The database's clock in Unix milliseconds: heartbeats are stamped and aged by it, so
/// gateways whose clocks disagree still agree on who is silent.
pub(super) const DB_NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::BIGINT";

/// Stores an object record ($1 folder, $2 key, $3 document), replacing the key's record.
pub(super) const UPSERT_OBJECT: &str =
    "INSERT INTO objects (folder_id, key, doc) VALUES ($1, $2, $3) ON CONFLICT (folder_id, key) DO UPDATE SET doc = $3";

/// Removes an upload's record ($1 folder, $2 key, $3 upload id).
pub(super) const FORGET_UPLOAD: &str = "DELETE FROM uploads WHERE folder_id = $1 AND key = $2 AND upload_id = $3";
/// Removes an upload's parts ($3 upload id).
pub(super) const FORGET_PARTS: &str = "DELETE FROM parts WHERE upload_id = $3";

/// The PostgreSQL schema version this build reads and writes.
pub const PG_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// True unless a gateway other than $4 is publishing the key ($1 folder, $2 key) now.
pub(super) const NOT_BUSY: &str =
    "NOT EXISTS (SELECT 1 FROM publishing WHERE folder_id = $1::uuid AND key = $2::bytea AND instance <> $4::text)";

/// One statement that stores $3 as the key's record (a conditional write's, see
/// [`crate::Expect`]) only while the record is still the one expected and no other gateway is
/// publishing the key; with `note`, it also notes the key as publishing by $4. Parameters: $1
/// folder, $2 key, $3 document, $4 instance, and for an expected record $5 its ETag and $6 its
/// fingerprint as JSON. Answers one row: whether the record was stored, and whether another
/// gateway is publishing the key.
///
/// Atomic against every other writer of the key at read committed: an absent record is claimed
/// by an insert that does nothing on conflict (a concurrent insert is waited for, then seen), a
/// present one by an update whose condition is evaluated again on the row version it waits for.
/// Every write through a gateway stores the key's record before its file moves, so a writer
/// that came between the caller's read and this statement has changed the row it checks.
pub(super) fn claim_object(expect: &crate::Expect, note: bool) -> String {
    let stored = match expect {
        crate::Expect::Absent => format!(
            "INSERT INTO objects (folder_id, key, doc) SELECT $1::uuid, $2::bytea, $3::text WHERE {NOT_BUSY}
             ON CONFLICT (folder_id, key) DO NOTHING RETURNING 1"
        ),
        crate::Expect::Record { .. } => format!(
            "UPDATE objects SET doc = $3::text WHERE folder_id = $1::uuid AND key = $2::bytea
               AND doc::jsonb ->> 'etag' = $5::text AND doc::jsonb -> 'fingerprint' = $6::text::jsonb
               AND {NOT_BUSY} RETURNING 1"
        ),
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
    format!("WITH o AS ({stored}){noted} SELECT EXISTS (SELECT 1 FROM o), NOT {NOT_BUSY}")
}
