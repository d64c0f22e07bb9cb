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
    // 4. The advisory lock each gateway holds on a connection of its own while it runs (its
    //    sign of life, `postgres/liveness.rs`); none for gateways of builds before it.
    "ALTER TABLE gateways ADD COLUMN liveness BIGINT;",
];

/// The database's clock in Unix milliseconds: heartbeats are stamped and aged by it, so
/// gateways whose clocks disagree still agree on who is silent.
pub(super) const DB_NOW_MS: &str = "(extract(epoch FROM clock_timestamp()) * 1000)::BIGINT";

/// A common table expression (`lazy`) that turns off the wait for the commit's WAL flush for the
/// one statement that reads from it: `set_config(.., true)` holds until the end of the
/// statement's own transaction, whose commit reads the setting. For writes whose loss in a
/// database crash is harmless because what they record is made durable by the caller's next
/// synced write (WAL is flushed in order, so that flush covers them) or is settled again from the
/// volume (a publish's second half, a claim's release). The statement must draw its rows from
/// `lazy` (`SELECT … FROM lazy`, `USING lazy`) so that the expression is evaluated at all.
pub(super) const LAZY: &str = "lazy AS (SELECT set_config('synchronous_commit', 'off', true))";

/// [`UPSERT_OBJECT`] drawing its row from [`LAZY`], for a `WITH` that defines it.
pub(super) const UPSERT_OBJECT_LAZY: &str =
    "INSERT INTO objects (folder_id, key, doc) SELECT $1::uuid, $2::bytea, $3::text FROM lazy
     ON CONFLICT (folder_id, key) DO UPDATE SET doc = EXCLUDED.doc";

/// Stores an object record ($1 folder, $2 key, $3 document), replacing the key's record.
pub(super) const UPSERT_OBJECT: &str =
    "INSERT INTO objects (folder_id, key, doc) VALUES ($1, $2, $3) ON CONFLICT (folder_id, key) DO UPDATE SET doc = $3";

/// Removes an upload's record ($1 folder, $2 key, $3 upload id).
pub(super) const FORGET_UPLOAD: &str = "DELETE FROM uploads WHERE folder_id = $1 AND key = $2 AND upload_id = $3";
/// Removes an upload's parts ($3 upload id).
pub(super) const FORGET_PARTS: &str = "DELETE FROM parts WHERE upload_id = $3";

/// The PostgreSQL schema version this build reads and writes.
pub const PG_SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;
