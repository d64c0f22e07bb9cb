//! Moving metadata between engines: every record written as one JSON line, read back into
//! another engine. `penstock metadata export` / `import` use it to move a deployment from the
//! embedded RocksDB engine to PostgreSQL and back.
//!
//! The dump holds what the engine alone knows: tenancy, buckets, quotas (limit and usage),
//! object records, noncurrent versions and delete markers, multipart uploads and parts, and the publishes a crash left pending (the
//! first gateway to start on the target settles them). Gateway heartbeats are not moved: the
//! gateways of the target register themselves. Stop every gateway before exporting.

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};
use uuid::Uuid;

use crate::engine::{KeyEdit, MetaResult, Metadata, UploadQuery, VersionQuery};
use crate::{
    BucketRecord, Domain, Keypair, MetaError, ObjectRecord, PartRecord, Project, Quota, UploadId, UploadRecord, User,
    VersionRecord,
};

/// Name and version of the dump format, in its first line.
const FORMAT: &str = "penstock-metadata";
const VERSION: u32 = 1;
/// Records read from the engine at a time.
const PAGE: usize = 1000;

/// One line of a dump: `{"<kind>": {...}}`. Externally tagged, so records deserialize straight
/// from the line (an internal tag would buffer them, which loses the i128 of fingerprints).
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum Line {
    Header {
        format: String,
        version: u32,
    },
    Domain {
        record: Domain,
    },
    Project {
        record: Project,
    },
    User {
        record: User,
    },
    Keypair {
        record: Keypair,
    },
    Bucket {
        record: BucketRecord,
    },
    Quota {
        record: Quota,
    },
    Object {
        folder: Uuid,
        key: String,
        record: ObjectRecord,
    },
    Publishing {
        folder: Uuid,
        key: String,
    },
    Version {
        folder: Uuid,
        key: String,
        record: VersionRecord,
    },
    Upload {
        folder: Uuid,
        record: UploadRecord,
    },
    Part {
        upload_id: UploadId,
        record: PartRecord,
    },
}

/// How many records of each kind a dump moved.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct DumpCounts {
    /// Domains, projects, users and keypairs.
    pub tenancy: u64,
    /// Buckets.
    pub buckets: u64,
    /// Quota scopes.
    pub quotas: u64,
    /// Object records.
    pub objects: u64,
    /// Pending publishes.
    pub publishing: u64,
    /// Noncurrent versions and delete markers.
    #[serde(default)]
    pub versions: u64,
    /// Multipart uploads.
    pub uploads: u64,
    /// Parts.
    pub parts: u64,
}

fn emit(out: &mut dyn Write, line: &Line) -> MetaResult<()> {
    let mut text = serde_json::to_vec(line).expect("records serialize");
    text.push(b'\n');
    out.write_all(&text)
        .map_err(|e| MetaError::Config(format!("writing the dump: {e}")))
}

/// Writes every record of `m` to `out`, one JSON line each, header first.
pub async fn export(m: &dyn Metadata, out: &mut dyn Write) -> MetaResult<DumpCounts> {
    let mut n = DumpCounts::default();
    emit(
        out,
        &Line::Header {
            format: FORMAT.into(),
            version: VERSION,
        },
    )?;
    let domains = m.domains().await?.into_iter().map(|record| Line::Domain { record });
    let projects = m.projects().await?.into_iter().map(|record| Line::Project { record });
    let users = m.users().await?.into_iter().map(|record| Line::User { record });
    let keypairs = m.keypairs().await?.into_iter().map(|record| Line::Keypair { record });
    for line in domains.chain(projects).chain(users).chain(keypairs) {
        emit(out, &line)?;
        n.tenancy += 1;
    }
    for record in m.quotas().await? {
        emit(out, &Line::Quota { record })?;
        n.quotas += 1;
    }
    let buckets = m.buckets().await?;
    for b in &buckets {
        emit(out, &Line::Bucket { record: b.clone() })?;
        n.buckets += 1;
        let folder = b.folder_id;
        let mut after: Option<String> = None;
        loop {
            let page = m.object_records(folder, after.as_deref(), PAGE).await?;
            after = page.last().map(|(k, _)| k.clone());
            let full = page.len() == PAGE;
            for (key, record) in page {
                emit(out, &Line::Object { folder, key, record })?;
                n.objects += 1;
            }
            if !full {
                break;
            }
        }
        let mut after: Option<(String, i64)> = None;
        loop {
            let q = VersionQuery {
                prefix: "",
                after: after.as_ref().map(|(k, seq)| (k.as_str(), Some(*seq))),
                limit: PAGE,
            };
            let page = m.list_versions(folder, q).await?;
            after = page.last().map(|(k, v)| (k.clone(), v.seq));
            let full = page.len() == PAGE;
            for (key, record) in page {
                emit(out, &Line::Version { folder, key, record })?;
                n.versions += 1;
            }
            if !full {
                break;
            }
        }
        let mut after: Option<(String, String)> = None;
        loop {
            let pos = after.as_ref().map(|(k, id)| (k.as_str(), id.as_str()));
            let page = m
                .uploads(
                    folder,
                    UploadQuery {
                        prefix: "",
                        after: pos,
                        limit: PAGE,
                    },
                )
                .await?;
            after = page.last().map(|u| (u.key.clone(), u.upload_id.to_string()));
            let full = page.len() == PAGE;
            for record in page {
                for part in m.parts(&record.upload_id).await? {
                    emit(
                        out,
                        &Line::Part {
                            upload_id: record.upload_id.clone(),
                            record: part,
                        },
                    )?;
                    n.parts += 1;
                }
                emit(out, &Line::Upload { folder, record })?;
                n.uploads += 1;
            }
            if !full {
                break;
            }
        }
    }
    for p in m.publishing().await? {
        if buckets.iter().any(|b| b.folder_id == p.folder) {
            emit(
                out,
                &Line::Publishing {
                    folder: p.folder,
                    key: p.key,
                },
            )?;
            n.publishing += 1;
        }
    }
    Ok(n)
}

/// Reads a dump written by [`export`] into `m`. Refuses an engine that already has buckets (a
/// dump restores a deployment; it does not merge two), and a dump of an unknown format.
pub async fn import(m: &dyn Metadata, input: &mut dyn BufRead) -> MetaResult<DumpCounts> {
    if !m.buckets().await?.is_empty() {
        return Err(MetaError::Config(
            "the target engine already has buckets: import into an empty one".into(),
        ));
    }
    let mut n = DumpCounts::default();
    let mut line = String::new();
    let mut number = 0u64;
    loop {
        line.clear();
        let read = input
            .read_line(&mut line)
            .map_err(|e| MetaError::Config(format!("reading the dump: {e}")))?;
        if read == 0 {
            break;
        }
        number += 1;
        if line.trim().is_empty() {
            continue;
        }
        let parsed: Line =
            serde_json::from_str(&line).map_err(|e| MetaError::Config(format!("dump line {number}: {e}")))?;
        // Each arm stores one record and names the count it adds to.
        let count = match (number, parsed) {
            (1, Line::Header { format, version }) if format == FORMAT && version <= VERSION => continue,
            (1, _) => return Err(MetaError::Config("not a penstock metadata dump (no header)".into())),
            (_, Line::Header { .. }) => return Err(MetaError::Config(format!("dump line {number}: a second header"))),
            (_, Line::Domain { record }) => m.put_domain(&record).await.map(|()| &mut n.tenancy)?,
            (_, Line::Project { record }) => m.put_project(&record).await.map(|()| &mut n.tenancy)?,
            (_, Line::User { record }) => m.put_user(&record).await.map(|()| &mut n.tenancy)?,
            (_, Line::Keypair { record }) => m.put_keypair(&record).await.map(|()| &mut n.tenancy)?,
            (_, Line::Bucket { record }) => {
                if !m.create_bucket(&record).await? {
                    return Err(MetaError::Config(format!(
                        "dump line {number}: bucket {}/{} twice",
                        record.domain, record.name
                    )));
                }
                &mut n.buckets
            }
            (_, Line::Quota { record }) => {
                m.set_quota_limit(&record.scope, record.limit_bytes).await?;
                m.set_quota_usage(&record.scope, record.usage_bytes).await?;
                &mut n.quotas
            }
            (_, Line::Object { folder, key, record }) => {
                m.put_object(folder, &key, &record).await.map(|()| &mut n.objects)?
            }
            (_, Line::Publishing { folder, key }) => {
                // Noted by no live gateway: the first to start settles it against the file.
                let Some(record) = m.object(folder, &key).await? else {
                    continue;
                };
                m.begin_publish(folder, &key, &record, "", None).await?;
                &mut n.publishing
            }
            (_, Line::Version { folder, key, record }) => {
                let edit = KeyEdit {
                    add: std::slice::from_ref(&record),
                    ..Default::default()
                };
                m.edit_key(folder, &key, &edit, "").await.map(|()| &mut n.versions)?
            }
            (_, Line::Upload { folder, record }) => m.put_upload(folder, &record).await.map(|()| &mut n.uploads)?,
            (_, Line::Part { upload_id, record }) => m.put_part(&upload_id, &record).await.map(|()| &mut n.parts)?,
        };
        *count += 1;
    }
    if number == 0 {
        return Err(MetaError::Config("the dump is empty".into()));
    }
    Ok(n)
}
