//! `penstock admin ...`: a command-line client of the admin API. Every command prints a short
//! human-readable result, or the API's JSON with `--json` for scripts.

use std::io::IsTerminal as _;

use bytes::Bytes;
use clap::{Args, Subcommand};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use penstock_types::{Perm, QuotaScope, UsageMode};
use serde_json::{json, Value};

/// Connection settings shared by every admin command.
#[derive(Args, Debug)]
pub struct AdminOpts {
    /// Admin API base URL.
    #[arg(long, env = "PENSTOCK_ADMIN_URL", default_value = "http://127.0.0.1:9001")]
    pub url: String,
    /// Bearer token (else read from <data-dir>/admin.token).
    #[arg(long, env = "PENSTOCK_ADMIN_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Data dir whose admin.token to use when no token is given.
    #[arg(long, default_value = "./penstock-data")]
    pub data_dir: std::path::PathBuf,
    /// Print the API's JSON instead of a summary.
    #[arg(long, global = true)]
    pub json: bool,
    #[command(subcommand)]
    pub command: AdminCommand,
}

/// What to manage.
#[derive(Subcommand, Debug)]
pub enum AdminCommand {
    /// Tenant domains.
    #[command(subcommand)]
    Domain(DomainCmd),
    /// Projects and their members.
    #[command(subcommand)]
    Project(ProjectCmd),
    /// Users.
    #[command(subcommand)]
    User(UserCmd),
    /// S3 keypairs of users.
    #[command(subcommand)]
    Keypair(KeypairCmd),
    /// Virtual folders (buckets) and their grants.
    #[command(subcommand)]
    Vfolder(VfolderCmd),
    /// Quota scopes.
    #[command(subcommand)]
    Quota(QuotaCmd),
    /// Readiness of the metadata store and every volume.
    Ready,
}

#[derive(Subcommand, Debug)]
pub enum DomainCmd {
    Create { name: String },
    List,
}

#[derive(Subcommand, Debug)]
pub enum ProjectCmd {
    Create {
        #[arg(long)]
        domain: String,
        name: String,
    },
    List {
        #[arg(long)]
        domain: Option<String>,
    },
    AddMember {
        project_id: String,
        user_id: String,
    },
    RemoveMember {
        project_id: String,
        user_id: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum UserCmd {
    Create {
        #[arg(long)]
        domain: String,
        /// user, domain_admin or superadmin
        #[arg(long, default_value = "user")]
        role: String,
        name: String,
    },
    List {
        #[arg(long)]
        domain: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum KeypairCmd {
    /// Creates a keypair; the secret is shown only in this answer.
    Create {
        user_id: String,
    },
    List {
        #[arg(long)]
        user_id: Option<String>,
    },
    Disable {
        access_key: String,
    },
    Enable {
        access_key: String,
    },
    Delete {
        access_key: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum VfolderCmd {
    Create {
        #[arg(long)]
        domain: String,
        /// user:<uuid> or project:<uuid>
        #[arg(long)]
        owner: QuotaScope,
        #[arg(long)]
        volume: Option<String>,
        /// general, model or data.
        #[arg(long, default_value = "general")]
        usage_mode: UsageMode,
        /// Permission of project members (ro, rw, wd).
        #[arg(long, default_value = "rw")]
        permission: Perm,
        /// Bucket name.
        name: String,
    },
    /// Registers an existing folder directory as a bucket without moving bytes.
    Import {
        #[arg(long)]
        domain: String,
        #[arg(long)]
        owner: QuotaScope,
        #[arg(long)]
        folder_id: String,
        #[arg(long)]
        volume: Option<String>,
        #[arg(long, default_value = "general")]
        usage_mode: UsageMode,
        #[arg(long, default_value = "rw")]
        permission: Perm,
        name: String,
    },
    Delete {
        domain: String,
        name: String,
        /// Unregister only; leave the directory and its files.
        #[arg(long)]
        keep_data: bool,
    },
    List {
        #[arg(long)]
        domain: Option<String>,
    },
    Grant {
        domain: String,
        name: String,
        user_id: String,
        /// ro, rw or wd.
        permission: Perm,
    },
    Revoke {
        domain: String,
        name: String,
        user_id: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum QuotaCmd {
    /// Sets the byte limit of a scope (`none` removes it).
    Set {
        scope: String,
        limit: String,
    },
    Show {
        scope: String,
    },
    List,
    /// Recomputes a scope's usage by scanning its folders.
    Rescan {
        scope: String,
    },
}

/// Runs one admin command and prints its result.
pub async fn run(opts: AdminOpts) -> anyhow::Result<()> {
    let token = match &opts.token {
        Some(t) => t.clone(),
        None => std::fs::read_to_string(opts.data_dir.join("admin.token"))
            .map_err(|e| {
                anyhow::anyhow!(
                    "no --token and cannot read {}: {e}",
                    opts.data_dir.join("admin.token").display()
                )
            })?
            .trim()
            .to_owned(),
    };
    let (method, path, body) = request_of(&opts.command)?;
    // On a terminal, a rescan streams progress so the CLI can draw a bar on stderr.
    let progress =
        matches!(opts.command, AdminCommand::Quota(QuotaCmd::Rescan { .. })) && std::io::stderr().is_terminal();
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<Bytes>>();
    let uri = format!("{}{}", opts.url.trim_end_matches('/'), path);
    let mut req = http::Request::builder()
        .method(method)
        .uri(&uri)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", "application/json");
    if progress {
        req = req.header("accept", "application/x-ndjson");
    }
    let req = req.body(Full::new(Bytes::from(body.map(|b| b.to_string()).unwrap_or_default())))?;
    let resp = client
        .request(req)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach the admin API at {uri}: {e}"))?;
    let mut status = resp.status();
    let streamed = resp
        .headers()
        .get("content-type")
        .is_some_and(|c| c == "application/x-ndjson");
    let value: Value = if streamed {
        let v = follow_progress(resp.into_body()).await?;
        if v.get("error").is_some() {
            status = http::StatusCode::INTERNAL_SERVER_ERROR;
        }
        v.get("result").cloned().unwrap_or(v)
    } else {
        let bytes = resp.into_body().collect().await?.to_bytes();
        serde_json::from_slice(&bytes).unwrap_or_else(|_| json!({"raw": String::from_utf8_lossy(&bytes)}))
    };
    if opts.json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_human(&value);
    }
    if !status.is_success() {
        anyhow::bail!("admin API answered {status}");
    }
    Ok(())
}

/// Reads JSON lines of a streamed rescan, drawing a progress bar; returns the last line.
async fn follow_progress(mut body: hyper::body::Incoming) -> anyhow::Result<Value> {
    use std::io::Write as _;
    let mut buf = Vec::new();
    let mut last = Value::Null;
    while let Some(frame) = body.frame().await {
        if let Ok(data) = frame?.into_data() {
            buf.extend_from_slice(&data);
        }
        while let Some(nl) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=nl).collect();
            let v: Value = serde_json::from_slice(&line)?;
            if let (Some(done), Some(total)) = (v["done"].as_u64(), v["total"].as_u64()) {
                const WIDTH: u64 = 30;
                let filled = (done * WIDTH).checked_div(total).unwrap_or(WIDTH);
                eprint!(
                    "\r[{}{}] {done}/{total} folders, {} bytes",
                    "#".repeat(filled as usize),
                    " ".repeat((WIDTH - filled) as usize),
                    v["bytes"]
                );
                let _ = std::io::stderr().flush();
            }
            last = v;
        }
    }
    eprintln!();
    Ok(last)
}

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn request_of(cmd: &AdminCommand) -> anyhow::Result<(&'static str, String, Option<Value>)> {
    use AdminCommand as A;
    let opt_q = |k: &str, v: &Option<String>| v.as_ref().map_or_else(String::new, |v| format!("?{k}={}", enc(v)));
    Ok(match cmd {
        A::Ready => ("GET", "/ready".into(), None),
        A::Domain(DomainCmd::Create { name }) => ("POST", "/v1/domains".into(), Some(json!({"name": name}))),
        A::Domain(DomainCmd::List) => ("GET", "/v1/domains".into(), None),
        A::Project(ProjectCmd::Create { domain, name }) => (
            "POST",
            "/v1/projects".into(),
            Some(json!({"domain": domain, "name": name})),
        ),
        A::Project(ProjectCmd::List { domain }) => ("GET", format!("/v1/projects{}", opt_q("domain", domain)), None),
        A::Project(ProjectCmd::AddMember { project_id, user_id }) => (
            "POST",
            format!("/v1/projects/{}/members", enc(project_id)),
            Some(json!({"user_id": user_id})),
        ),
        A::Project(ProjectCmd::RemoveMember { project_id, user_id }) => (
            "DELETE",
            format!("/v1/projects/{}/members/{}", enc(project_id), enc(user_id)),
            None,
        ),
        A::User(UserCmd::Create { domain, role, name }) => (
            "POST",
            "/v1/users".into(),
            Some(json!({"domain": domain, "name": name, "role": role.replace('-', "_")})),
        ),
        A::User(UserCmd::List { domain }) => ("GET", format!("/v1/users{}", opt_q("domain", domain)), None),
        A::Keypair(KeypairCmd::Create { user_id }) => {
            ("POST", "/v1/keypairs".into(), Some(json!({"user_id": user_id})))
        }
        A::Keypair(KeypairCmd::List { user_id }) => ("GET", format!("/v1/keypairs{}", opt_q("user_id", user_id)), None),
        A::Keypair(KeypairCmd::Disable { access_key }) => (
            "PATCH",
            format!("/v1/keypairs/{}", enc(access_key)),
            Some(json!({"enabled": false})),
        ),
        A::Keypair(KeypairCmd::Enable { access_key }) => (
            "PATCH",
            format!("/v1/keypairs/{}", enc(access_key)),
            Some(json!({"enabled": true})),
        ),
        A::Keypair(KeypairCmd::Delete { access_key }) => ("DELETE", format!("/v1/keypairs/{}", enc(access_key)), None),
        A::Vfolder(VfolderCmd::Create {
            domain,
            owner,
            volume,
            usage_mode,
            permission,
            name,
        }) => (
            "POST",
            "/v1/vfolders".into(),
            Some(json!({"domain": domain, "name": name, "owner": owner, "volume": volume,
                        "usage_mode": usage_mode, "permission": permission})),
        ),
        A::Vfolder(VfolderCmd::Import {
            domain,
            owner,
            folder_id,
            volume,
            usage_mode,
            permission,
            name,
        }) => (
            "POST",
            "/v1/vfolders/import".into(),
            Some(
                json!({"domain": domain, "name": name, "owner": owner, "folder_id": folder_id,
                        "volume": volume, "usage_mode": usage_mode, "permission": permission}),
            ),
        ),
        A::Vfolder(VfolderCmd::Delete {
            domain,
            name,
            keep_data,
        }) => (
            "DELETE",
            format!(
                "/v1/vfolders/{}/{}{}",
                enc(domain),
                enc(name),
                if *keep_data { "?keep_data=true" } else { "" }
            ),
            None,
        ),
        A::Vfolder(VfolderCmd::List { domain }) => ("GET", format!("/v1/vfolders{}", opt_q("domain", domain)), None),
        A::Vfolder(VfolderCmd::Grant {
            domain,
            name,
            user_id,
            permission,
        }) => (
            "POST",
            format!("/v1/vfolders/{}/{}/grants", enc(domain), enc(name)),
            Some(json!({"user_id": user_id, "permission": permission})),
        ),
        A::Vfolder(VfolderCmd::Revoke { domain, name, user_id }) => (
            "DELETE",
            format!("/v1/vfolders/{}/{}/grants/{}", enc(domain), enc(name), enc(user_id)),
            None,
        ),
        A::Quota(QuotaCmd::Set { scope, limit }) => {
            let limit: Option<u64> = match limit.as_str() {
                "none" | "unlimited" => None,
                l => Some(parse_bytes(l)?),
            };
            (
                "PUT",
                format!("/v1/quotas/{}", enc(scope)),
                Some(json!({"limit_bytes": limit})),
            )
        }
        A::Quota(QuotaCmd::Show { scope }) => ("GET", format!("/v1/quotas/{}", enc(scope)), None),
        A::Quota(QuotaCmd::List) => ("GET", "/v1/quotas".into(), None),
        A::Quota(QuotaCmd::Rescan { scope }) => ("POST", format!("/v1/quotas/{}/rescan", enc(scope)), None),
    })
}

/// Parses `123`, `10K`, `5M`, `2G`, `1T` (binary multiples).
fn parse_bytes(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    let (num, mult) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        Some('T' | 't') => (&s[..s.len() - 1], 1 << 40),
        _ => (s, 1),
    };
    let n: u64 = num.parse().map_err(|_| anyhow::anyhow!("not a byte count: {s:?}"))?;
    n.checked_mul(mult)
        .ok_or_else(|| anyhow::anyhow!("byte count too large: {s:?}"))
}

fn print_human(v: &Value) {
    match v {
        Value::Array(items) if items.is_empty() => println!("(none)"),
        Value::Array(items) => items.iter().for_each(|i| println!("{}", line(i))),
        other => println!("{}", line(other)),
    }
}

fn line(v: &Value) -> String {
    match v {
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => format!("{k}={s}"),
                other => format!("{k}={other}"),
            })
            .collect::<Vec<_>>()
            .join(" "),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts() {
        assert_eq!(parse_bytes("10").unwrap(), 10);
        assert_eq!(parse_bytes("10M").unwrap(), 10 << 20);
        assert_eq!(parse_bytes("2g").unwrap(), 2 << 30);
        assert!(parse_bytes("x").is_err());
    }
}
