//! The admin API: JSON over HTTP on its own listener, for tenancy management, plus health and
//! readiness probes.
//!
//! Every `/v1/...` route needs `Authorization: Bearer <token>` (compared in constant time);
//! `/health`, `/ready` and `/metrics` (Prometheus) need nothing. The API speaks in the tenancy model's own terms: domains,
//! projects, users, keypairs, vfolders with grants, and quota scopes.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use subtle::ConstantTimeEq;
use tokio::net::TcpListener;
use uuid::Uuid;

use penstock_backends::{FolderLocation, QuotaScope, ScopeKind};
use penstock_metadata::{BucketRecord, Domain, Keypair, MetaError, Perm, Project, Quota, Role, UsageMode, User};

use crate::s3::{now_ms, Gateway};

/// Largest JSON request body accepted.
const MAX_BODY: usize = 1 << 20;

/// An admin API failure: HTTP status, a short code and a message.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

fn err(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError {
        status,
        code,
        message: message.into(),
    }
}

fn bad(message: impl Into<String>) -> ApiError {
    err(StatusCode::BAD_REQUEST, "BadRequest", message)
}

fn not_found(message: impl Into<String>) -> ApiError {
    err(StatusCode::NOT_FOUND, "NotFound", message)
}

fn conflict(message: impl Into<String>) -> ApiError {
    err(StatusCode::CONFLICT, "Conflict", message)
}

impl From<MetaError> for ApiError {
    fn from(e: MetaError) -> Self {
        if let MetaError::Unavailable(_) = e {
            tracing::warn!(error = %e, "admin: metadata engine unavailable");
            return err(
                StatusCode::SERVICE_UNAVAILABLE,
                "ServiceUnavailable",
                "metadata engine unavailable",
            );
        }
        tracing::error!(error = %e, "admin: metadata error");
        err(
            StatusCode::INTERNAL_SERVER_ERROR,
            "InternalError",
            "metadata store error",
        )
    }
}

impl From<penstock_backends::BackendError> for ApiError {
    fn from(e: penstock_backends::BackendError) -> Self {
        use penstock_backends::BackendError as B;
        match e {
            B::FolderNotEmpty => conflict("the folder is not empty"),
            B::FolderExists(p) => conflict(format!("folder directory already exists: {p}")),
            B::FolderNotFound(p) => not_found(format!("folder directory not found: {p}")),
            e => err(StatusCode::INTERNAL_SERVER_ERROR, "StorageError", e.to_string()),
        }
    }
}

type ApiResult = Result<(StatusCode, Value), ApiError>;

/// The admin token: `admin_token` from the config, `PENSTOCK_ADMIN_TOKEN`, or
/// `<data_dir>/admin.token`, generated on first start.
pub fn load_token(configured: Option<&str>, data_dir: &std::path::Path) -> anyhow::Result<String> {
    if let Some(t) = configured.filter(|t| !t.is_empty()) {
        return Ok(t.to_owned());
    }
    if let Ok(t) = std::env::var("PENSTOCK_ADMIN_TOKEN") {
        if !t.is_empty() {
            return Ok(t);
        }
    }
    let path = data_dir.join("admin.token");
    if let Ok(t) = std::fs::read_to_string(&path) {
        return Ok(t.trim().to_owned());
    }
    let t = crate::bootstrap::new_access_key().to_lowercase() + &crate::bootstrap::new_access_key().to_lowercase();
    crate::secrets::write_private(&path, &t)?;
    tracing::info!(path = %path.display(), "generated the admin API token");
    Ok(t)
}

/// Serves the admin API until the task is dropped.
pub async fn serve(gateway: Arc<Gateway>, listener: TcpListener, token: String) -> anyhow::Result<()> {
    tracing::info!(addr = %listener.local_addr()?, "admin API listening");
    let token = Arc::new(token);
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(x) => x,
            Err(e) => {
                tracing::warn!(error = %e, "admin accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let (gw, token) = (gateway.clone(), token.clone());
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| {
                let (gw, token) = (gw.clone(), token.clone());
                async move { Ok::<_, std::convert::Infallible>(handle(&gw, &token, req).await) }
            });
            let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

/// Response bodies: buffered JSON, or a stream for long operations.
type AdminBody = BoxBody<Bytes, std::convert::Infallible>;

async fn handle(gw: &Arc<Gateway>, token: &str, req: Request<Incoming>) -> Response<AdminBody> {
    let streaming = req
        .headers()
        .get(http::header::ACCEPT)
        .is_some_and(|a| a == "application/x-ndjson");
    if streaming && req.method() == Method::POST && authorized(token, &req) {
        let parts: Vec<&str> = req.uri().path().split('/').filter(|s| !s.is_empty()).collect();
        if let ["v1", "quotas", scope, "rescan"] = parts.as_slice() {
            let decoded = percent_encoding::percent_decode_str(scope)
                .decode_utf8_lossy()
                .into_owned();
            if let Ok(scope) = parse_scope(&decoded) {
                return rescan_stream(gw.clone(), scope);
            }
        }
    }
    if req.method() == Method::GET && req.uri().path() == "/metrics" {
        let text = gw.metrics.render(gw.meta.as_ref()).await;
        return Response::builder()
            .status(StatusCode::OK)
            .header(
                "content-type",
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )
            .body(BoxBody::new(Full::new(Bytes::from(text))))
            .expect("valid response");
    }
    let result = route(gw, token, req).await;
    let (status, body) = match result {
        Ok(x) => x,
        Err(e) => (e.status, json!({"error": e.message, "code": e.code})),
    };
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(BoxBody::new(Full::new(Bytes::from(
            serde_json::to_vec_pretty(&body).expect("json"),
        ))))
        .expect("valid response")
}

fn authorized(token: &str, req: &Request<Incoming>) -> bool {
    let given = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    given.as_bytes().ct_eq(token.as_bytes()).into()
}

async fn body<T: for<'de> Deserialize<'de>>(req: Request<Incoming>) -> Result<T, ApiError> {
    let bytes = Limited::new(req.into_body(), MAX_BODY)
        .collect()
        .await
        .map_err(|e| bad(format!("cannot read body: {e}")))?
        .to_bytes();
    serde_json::from_slice(&bytes).map_err(|e| bad(format!("invalid JSON body: {e}")))
}

fn query(req: &Request<Incoming>) -> HashMap<String, String> {
    req.uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            let dec = |s: &str| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned();
            (dec(k), dec(v))
        })
        .collect()
}

fn to_value<T: Serialize>(status: StatusCode, v: &T) -> ApiResult {
    Ok((status, serde_json::to_value(v).expect("records serialize")))
}

fn parse_uuid(s: &str, what: &str) -> Result<Uuid, ApiError> {
    Uuid::parse_str(s).map_err(|_| bad(format!("{what} is not a UUID: {s:?}")))
}

async fn route(gw: &Gateway, token: &str, req: Request<Incoming>) -> ApiResult {
    let path: Vec<String> = req
        .uri()
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| percent_encoding::percent_decode_str(s).decode_utf8_lossy().into_owned())
        .collect();
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    let method = req.method().clone();
    match (&method, p.as_slice()) {
        (&Method::GET, ["health"]) => return Ok((StatusCode::OK, json!({"status": "ok"}))),
        (&Method::GET, ["ready"]) => return ready(gw).await,
        _ => {}
    }
    if !authorized(token, &req) {
        return Err(err(
            StatusCode::UNAUTHORIZED,
            "Unauthorized",
            "missing or wrong bearer token",
        ));
    }
    let q = query(&req);
    match (&method, p.as_slice()) {
        (&Method::GET, ["v1", "domains"]) => to_value(StatusCode::OK, &gw.meta.domains().await?),
        (&Method::POST, ["v1", "domains"]) => create_domain(gw, body(req).await?).await,
        (&Method::GET, ["v1", "projects"]) => {
            let d = q.get("domain").cloned();
            let s = gw.meta.as_ref();
            let v = s
                .projects()
                .await?
                .into_iter()
                .filter(|p| d.as_ref().is_none_or(|d| &p.domain == d))
                .collect::<Vec<_>>();
            to_value(StatusCode::OK, &v)
        }
        (&Method::POST, ["v1", "projects"]) => create_project(gw, body(req).await?).await,
        (&Method::POST, ["v1", "projects", id, "members"]) => {
            let id = parse_uuid(id, "project id")?;
            let m: MemberBody = body(req).await?;
            membership(gw, id, m.user_id, true).await
        }
        (&Method::DELETE, ["v1", "projects", id, "members", user]) => {
            membership(gw, parse_uuid(id, "project id")?, parse_uuid(user, "user id")?, false).await
        }
        (&Method::GET, ["v1", "users"]) => {
            let d = q.get("domain").cloned();
            let s = gw.meta.as_ref();
            let v = s
                .users()
                .await?
                .into_iter()
                .filter(|u| d.as_ref().is_none_or(|d| &u.domain == d))
                .collect::<Vec<_>>();
            to_value(StatusCode::OK, &v)
        }
        (&Method::POST, ["v1", "users"]) => create_user(gw, body(req).await?).await,
        (&Method::GET, ["v1", "keypairs"]) => {
            let user = q.get("user_id").map(|u| parse_uuid(u, "user_id")).transpose()?;
            let s = gw.meta.as_ref();
            let v = s
                .keypairs()
                .await?
                .into_iter()
                .filter(|k| user.is_none_or(|u| k.user_id == u))
                .map(|k| keypair_view(&k))
                .collect::<Vec<_>>();
            Ok((StatusCode::OK, Value::Array(v)))
        }
        (&Method::POST, ["v1", "keypairs"]) => create_keypair(gw, body(req).await?).await,
        (&Method::PATCH, ["v1", "keypairs", ak]) => {
            let b: KeypairPatch = body(req).await?;
            let ak = ak.to_string();
            // Changed where it is stored: a keypair deleted meanwhile stays deleted.
            let enabled = b.enabled;
            let edit = Box::new(move |kp: &mut Keypair| std::mem::replace(&mut kp.enabled, enabled) != enabled);
            let (kp, _) = gw
                .meta
                .update_keypair(&ak, edit)
                .await?
                .ok_or_else(|| not_found("no such keypair"))?;
            Ok((StatusCode::OK, keypair_view(&kp)))
        }
        (&Method::DELETE, ["v1", "keypairs", ak]) => {
            let ak = ak.to_string();
            let s = gw.meta.as_ref();
            s.keypair(&ak).await?.ok_or_else(|| not_found("no such keypair"))?;
            s.delete_keypair(&ak).await?;
            Ok((StatusCode::OK, json!({"deleted": true})))
        }
        (&Method::GET, ["v1", "vfolders"]) => {
            let d = q.get("domain").cloned();
            let s = gw.meta.as_ref();
            let v = s
                .buckets()
                .await?
                .into_iter()
                .filter(|b| d.as_ref().is_none_or(|d| &b.domain == d))
                .collect::<Vec<_>>();
            to_value(StatusCode::OK, &v)
        }
        (&Method::POST, ["v1", "vfolders"]) => create_vfolder(gw, body(req).await?, false).await,
        (&Method::POST, ["v1", "vfolders", "import"]) => create_vfolder(gw, body(req).await?, true).await,
        (&Method::DELETE, ["v1", "vfolders", domain, name]) => {
            delete_vfolder(gw, domain, name, q.get("keep_data").is_some_and(|v| v == "true")).await
        }
        (&Method::POST, ["v1", "vfolders", domain, name, "grants"]) => {
            let g: GrantBody = body(req).await?;
            grant(gw, domain, name, g.user_id, Some(g.permission)).await
        }
        (&Method::DELETE, ["v1", "vfolders", domain, name, "grants", user]) => {
            grant(gw, domain, name, parse_uuid(user, "user id")?, None).await
        }
        (&Method::GET, ["v1", "quotas"]) => to_value(StatusCode::OK, &gw.meta.quotas().await?),
        (&Method::GET, ["v1", "quotas", scope]) => {
            let scope = parse_scope(scope)?;
            let s = gw.meta.as_ref();
            let q = s.quota(&scope).await?.unwrap_or(Quota {
                scope,
                limit_bytes: None,
                usage_bytes: 0,
            });
            to_value(StatusCode::OK, &q)
        }
        (&Method::PUT, ["v1", "quotas", scope]) => {
            let scope = parse_scope(scope)?;
            let b: QuotaBody = body(req).await?;
            let q = gw.meta.set_quota_limit(&scope, b.limit_bytes).await?;
            to_value(StatusCode::OK, &q)
        }
        (&Method::POST, ["v1", "quotas", scope, "rescan"]) => rescan(gw, parse_scope(scope)?).await,
        _ => Err(not_found(format!("no route for {method} {}", req.uri().path()))),
    }
}

async fn ready(gw: &Gateway) -> ApiResult {
    let mut checks = serde_json::Map::new();
    let mut ok = true;
    let meta = gw.meta.schema_version().await;
    ok &= meta.is_ok();
    let state = match &meta {
        Ok(_) => "ok",
        Err(MetaError::Unavailable(_)) => "unavailable",
        Err(_) => "failed",
    };
    checks.insert("metadata".into(), json!(state));
    checks.insert("metadata_engine".into(), json!(gw.meta.engine()));
    checks.insert("instance".into(), json!(gw.instance));
    for (name, vol) in gw.volumes() {
        let r = vol.check().await;
        ok &= r.is_ok();
        checks.insert(
            format!("volume:{name}"),
            json!(r.map_or_else(|e| e.to_string(), |()| "ok".into())),
        );
    }
    let status = if ok {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    Ok((status, json!({"ready": ok, "checks": checks})))
}

fn parse_scope(s: &str) -> Result<QuotaScope, ApiError> {
    s.parse().map_err(|e: penstock_types::ParseError| bad(e.to_string()))
}

fn valid_name(s: &str, what: &str) -> Result<(), ApiError> {
    if s.is_empty() || s.len() > 64 || !s.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        return Err(bad(format!("{what} must be 1-64 letters, digits, '-', '_' or '.'")));
    }
    Ok(())
}

#[derive(Deserialize)]
struct DomainBody {
    name: String,
}

async fn create_domain(gw: &Gateway, b: DomainBody) -> ApiResult {
    valid_name(&b.name, "domain name")?;
    let d = Domain {
        name: b.name,
        created_ms: now_ms(),
    };
    // Checked and inserted in one step by the engine: of two creations of one name at once,
    // through one gateway or several, one is 201 and the other 409.
    if !gw.meta.create_domain(&d).await? {
        return Err(conflict(format!("domain {} exists", d.name)));
    }
    to_value(StatusCode::CREATED, &d)
}

#[derive(Deserialize)]
struct ProjectBody {
    domain: String,
    name: String,
}

async fn create_project(gw: &Gateway, b: ProjectBody) -> ApiResult {
    valid_name(&b.name, "project name")?;
    let s = gw.meta.as_ref();
    s.domain(&b.domain)
        .await?
        .ok_or_else(|| not_found(format!("no domain {}", b.domain)))?;
    let p = Project {
        id: Uuid::new_v4(),
        domain: b.domain,
        name: b.name,
        created_ms: now_ms(),
    };
    if !s.create_project(&p).await? {
        return Err(conflict(format!("project {} exists in {}", p.name, p.domain)));
    }
    to_value(StatusCode::CREATED, &p)
}

#[derive(Deserialize)]
struct MemberBody {
    user_id: Uuid,
}

async fn membership(gw: &Gateway, project: Uuid, user: Uuid, add: bool) -> ApiResult {
    let s = gw.meta.as_ref();
    let p = s.project(project).await?.ok_or_else(|| not_found("no such project"))?;
    // Changed where it is stored, so memberships changed at once (two projects, say) all stay.
    let domain = p.domain.clone();
    let edit = Box::new(move |u: &mut User| {
        u.domain == domain
            && if add {
                u.projects.insert(project)
            } else {
                u.projects.remove(&project)
            }
    });
    let (u, _) = s
        .update_user(user, edit)
        .await?
        .ok_or_else(|| not_found("no such user"))?;
    if u.domain != p.domain {
        return Err(bad("a user can only join projects of their own domain"));
    }
    to_value(StatusCode::OK, &u)
}

#[derive(Deserialize)]
struct UserBody {
    domain: String,
    name: String,
    #[serde(default = "default_role")]
    role: Role,
}

fn default_role() -> Role {
    Role::User
}

async fn create_user(gw: &Gateway, b: UserBody) -> ApiResult {
    valid_name(&b.name, "user name")?;
    let s = gw.meta.as_ref();
    s.domain(&b.domain)
        .await?
        .ok_or_else(|| not_found(format!("no domain {}", b.domain)))?;
    let u = User {
        id: Uuid::new_v4(),
        domain: b.domain,
        name: b.name,
        role: b.role,
        projects: Default::default(),
        created_ms: now_ms(),
    };
    if !s.create_user(&u).await? {
        return Err(conflict(format!("user {} exists in {}", u.name, u.domain)));
    }
    to_value(StatusCode::CREATED, &u)
}

#[derive(Deserialize)]
struct KeypairBody {
    user_id: Uuid,
}

#[derive(Deserialize)]
struct KeypairPatch {
    enabled: bool,
}

fn keypair_view(k: &Keypair) -> Value {
    json!({"access_key": k.access_key, "user_id": k.user_id, "enabled": k.enabled, "created_ms": k.created_ms})
}

async fn create_keypair(gw: &Gateway, b: KeypairBody) -> ApiResult {
    let access_key = crate::bootstrap::new_access_key();
    let secret_key = crate::bootstrap::new_secret_key();
    let sealed = gw.master.seal(&access_key, &secret_key);
    let ak = access_key.clone();
    let s = gw.meta.as_ref();
    s.user(b.user_id).await?.ok_or_else(|| not_found("no such user"))?;
    s.put_keypair(&Keypair {
        access_key: ak,
        sealed_secret: sealed,
        user_id: b.user_id,
        enabled: true,
        created_ms: now_ms(),
    })
    .await?;
    Ok((
        StatusCode::CREATED,
        json!({"access_key": access_key, "secret_key": secret_key, "user_id": b.user_id, "enabled": true}),
    ))
}

#[derive(Deserialize)]
struct VfolderBody {
    domain: String,
    /// Bucket name.
    name: String,
    /// `user:<uuid>` or `project:<uuid>`.
    owner: QuotaScope,
    volume: Option<String>,
    #[serde(default)]
    usage_mode: UsageMode,
    #[serde(default = "rw")]
    permission: Perm,
    /// Only for import: the existing folder's id.
    folder_id: Option<Uuid>,
}

fn rw() -> Perm {
    Perm::Rw
}

async fn create_vfolder(gw: &Gateway, b: VfolderBody, import: bool) -> ApiResult {
    if let Some(why) = crate::s3::bucket::refused_bucket_name(&b.name) {
        return Err(bad(format!("{:?} is not a valid bucket name: {why}", b.name)));
    }
    let scope = b.owner;
    let (domain, owner) = (b.domain.clone(), scope);
    let s = gw.meta.as_ref();
    s.domain(&domain)
        .await?
        .ok_or_else(|| not_found(format!("no domain {domain}")))?;
    let owner_domain = match owner.kind {
        ScopeKind::User => s.user(owner.id).await?.map(|u| u.domain),
        ScopeKind::Project => s.project(owner.id).await?.map(|p| p.domain),
    }
    .ok_or_else(|| not_found(format!("owner {owner} does not exist")))?;
    if owner_domain != domain {
        return Err(bad(format!(
            "owner {owner} belongs to domain {owner_domain}, not {domain}"
        )));
    }
    let volume_name = b.volume.clone().unwrap_or_else(|| gw.default_volume.clone());
    let volume = gw
        .volume(&volume_name)
        .map_err(|_| bad(format!("no volume {volume_name}")))?
        .clone();
    let loc = FolderLocation {
        scope,
        id: match (import, b.folder_id) {
            (true, Some(id)) => id,
            (true, None) => return Err(bad("import needs folder_id")),
            (false, None) => Uuid::new_v4(),
            (false, Some(_)) => return Err(bad("folder_id is only for import")),
        },
    };
    if import {
        volume.open_folder(&loc).await?;
    } else {
        volume.create_folder(&loc).await?;
    }
    let rec = BucketRecord {
        usage_mode: b.usage_mode,
        permission: b.permission,
        ..BucketRecord::new(b.name, b.domain, loc.id, volume_name, scope, now_ms())
    };
    let created = claim_bucket(gw, &rec).await;
    match created {
        Ok(true) => {}
        Ok(false) | Err(_) => {
            if !import {
                let _ = volume.delete_folder(&loc).await;
            }
            created?;
            return Err(conflict(format!("bucket {} exists in domain {}", rec.name, rec.domain)));
        }
    }
    if import {
        // Adopted bytes count toward the owner's quota scope.
        let used = volume.open_folder(&loc).await?.usage().await?;
        gw.charge(&rec.quota_scope, used as i64)
            .await
            .map_err(|e| bad(e.to_string()))?;
    }
    to_value(StatusCode::CREATED, &rec)
}

/// Records the bucket unless its folder is exported already; false when its name is taken.
async fn claim_bucket(gw: &Gateway, rec: &BucketRecord) -> Result<bool, ApiError> {
    if gw.meta.buckets().await?.iter().any(|x| x.folder_id == rec.folder_id) {
        return Err(conflict("this folder is already exported as a bucket"));
    }
    Ok(gw.meta.create_bucket(rec).await?)
}

async fn lookup(gw: &Gateway, domain: &str, name: &str) -> Result<BucketRecord, ApiError> {
    let found = gw.meta.bucket(domain, name).await?;
    found.ok_or_else(|| not_found(format!("no vfolder {name} in domain {domain}")))
}

async fn delete_vfolder(gw: &Gateway, domain: &str, name: &str, keep_data: bool) -> ApiResult {
    let rec = lookup(gw, domain, name).await?;
    let volume = gw
        .volume(&rec.volume)
        .map_err(|_| bad("volume not configured"))?
        .clone();
    let loc = FolderLocation {
        scope: rec.quota_scope,
        id: rec.folder_id,
    };
    let used = match volume.open_folder(&loc).await {
        Ok(f) => f.usage().await?,
        Err(_) => 0,
    };
    if !keep_data {
        volume.delete_folder(&loc).await?;
    }
    let r = rec.clone();
    let s = gw.meta.as_ref();
    s.delete_bucket(&r).await?;
    gw.charge(&rec.quota_scope, -(used as i64))
        .await
        .map_err(|e| bad(e.to_string()))?;
    Ok((StatusCode::OK, json!({"deleted": true, "kept_data": keep_data})))
}

#[derive(Deserialize)]
struct GrantBody {
    user_id: Uuid,
    permission: Perm,
}

async fn grant(gw: &Gateway, domain: &str, name: &str, user: Uuid, perm: Option<Perm>) -> ApiResult {
    let (d, n) = (domain.to_owned(), name.to_owned());
    let s = gw.meta.as_ref();
    let b = s
        .bucket(&d, &n)
        .await?
        .ok_or_else(|| not_found(format!("no vfolder {n} in domain {d}")))?;
    if b.quota_scope.kind != ScopeKind::User {
        return Err(bad(
            "project folders are shared with the project's members; grants are for user folders",
        ));
    }
    let u = s.user(user).await?.ok_or_else(|| not_found("no such user"))?;
    if u.domain != b.domain {
        return Err(bad("folders can only be shared within their domain"));
    }
    // The change is made where the record is stored, so a bucket setting changed at the same
    // moment (through S3, here or on another gateway) is not undone by this write.
    let folder = b.folder_id;
    let edit = Box::new(move |b: &mut BucketRecord| {
        b.folder_id == folder
            && match perm {
                Some(p) => b.grants.insert(user, p) != Some(p),
                None => b.grants.remove(&user).is_some(),
            }
    });
    let (rec, written) = s
        .update_bucket(&d, &n, edit)
        .await?
        .filter(|(rec, _)| rec.folder_id == folder)
        .ok_or_else(|| not_found(format!("no vfolder {n} in domain {d}")))?;
    if perm.is_none() && !written {
        return Err(not_found("the user has no grant on this folder"));
    }
    to_value(StatusCode::OK, &rec)
}

async fn rescan(gw: &Gateway, scope: QuotaScope) -> ApiResult {
    let q = gw.rescan_usage(scope, |_, _, _| {}).await.map_err(|e| {
        err(
            StatusCode::INTERNAL_SERVER_ERROR,
            "RescanFailed",
            e.message().unwrap_or("scan failed").to_owned(),
        )
    })?;
    to_value(StatusCode::OK, &q)
}

/// The rescan as a stream of JSON lines: `{"done":n,"total":m,"bytes":b}` per folder, then the
/// resulting quota, so a terminal client can draw progress.
fn rescan_stream(gw: Arc<Gateway>, scope: QuotaScope) -> Response<AdminBody> {
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<Bytes>();
    tokio::spawn(async move {
        let progress_tx = tx.clone();
        let result = gw
            .rescan_usage(scope, move |done, total, bytes| {
                let line = json!({"done": done, "total": total, "bytes": bytes}).to_string() + "\n";
                let _ = progress_tx.send(Bytes::from(line));
            })
            .await;
        let last = match result {
            Ok(q) => json!({"result": q}),
            Err(e) => json!({"error": e.message().unwrap_or("scan failed"), "code": "RescanFailed"}),
        };
        let _ = tx.send(Bytes::from(last.to_string() + "\n"));
    });
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(b)), rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header("content-type", "application/x-ndjson")
        .body(BoxBody::new(http_body_util::StreamBody::new(stream)))
        .expect("valid response")
}

#[derive(Deserialize)]
struct QuotaBody {
    /// `null` removes the limit.
    limit_bytes: Option<u64>,
}
