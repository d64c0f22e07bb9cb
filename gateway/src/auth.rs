//! Who is calling and what they may touch.
//!
//! s3s verifies signatures (SigV4 header and presigned, SigV2, POST policy) with the secret that
//! [`GatewayAuth`] opens from the metadata store. [`GatewayAccess`] runs before every operation:
//! it resolves the calling user (or the anonymous caller of an unsigned request), maps the
//! operation to the folder permission it needs ([`required`]), compares it with what the user
//! holds on the bucket ([`Caller::perm_on`]) and lets the bucket's policy deny or extend that
//! (`s3/sharing.rs`). The [`Caller`] goes into the request extensions for the handlers.

use std::sync::Arc;

use s3s::access::{S3Access, S3AccessContext};
use s3s::auth::{S3Auth, SecretKey};
use s3s::dto::{PostObjectInput, PutObjectLegalHoldInput, PutObjectRetentionInput};
use s3s::path::S3Path;
use s3s::{s3_error, S3Request, S3Result};

use penstock_metadata::{BucketRecord, Keypair, Metadata, Perm, QuotaScope, Role, User};
use penstock_types::ScopeKind;

use crate::observe::InfoSlot;
use crate::s3::ops::{required, Need};
use crate::s3::post_form::FormUpload;
use crate::s3::{internal, meta_err, Gateway, PeerAddr, RequestFacts, Verified};
use crate::secrets::MasterKey;

/// The authenticated principal of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub access_key: String,
    pub user: User,
    /// The bucket the request addresses, as the access check found it: handlers take it from
    /// here instead of looking it up a second time.
    pub(crate) checked: Option<Arc<BucketRecord>>,
    /// Reads of missing keys answer 403 instead of 404: the caller was let in by a policy or an
    /// ACL that does not let them list the bucket, and S3 does not tell such callers which keys
    /// exist.
    pub(crate) hide_missing: bool,
    /// The bucket the request addresses, whether or not the access check found it: a handler
    /// must not find it later (created meanwhile) and act on it unchecked.
    pub(crate) addressed: Option<String>,
}

impl Caller {
    /// The caller of an unsigned request: no keypair, no role, no folder permissions; it
    /// addresses the buckets of `domain`, and gets only what bucket policies grant everyone.
    pub fn anonymous(domain: &str) -> Self {
        Self {
            access_key: String::new(),
            user: User {
                id: uuid::Uuid::nil(),
                domain: domain.to_owned(),
                name: "anonymous".to_owned(),
                role: Role::User,
                projects: Default::default(),
                created_ms: 0,
            },
            checked: None,
            hide_missing: false,
            addressed: None,
        }
    }

    /// Whether the request was unsigned.
    pub fn is_anonymous(&self) -> bool {
        self.access_key.is_empty()
    }

    /// The permission this caller holds on a bucket's folder, if any.
    ///
    /// Superadmins hold `wd` everywhere; domain admins on every folder of their domain. Otherwise
    /// the owner of a user folder holds `wd`, members of the owning project hold the folder's
    /// permission, and users it was shared with hold their grant. A folder of another domain is
    /// never reachable except by superadmins.
    pub fn perm_on(&self, b: &BucketRecord) -> Option<Perm> {
        let u = &self.user;
        if u.role == Role::Superadmin {
            return Some(Perm::Wd);
        }
        if b.domain != u.domain {
            return None;
        }
        if u.role == Role::DomainAdmin {
            return Some(Perm::Wd);
        }
        let QuotaScope { kind, id } = b.quota_scope;
        let owned = match kind {
            ScopeKind::User if id == u.id => Some(Perm::Wd),
            ScopeKind::Project if u.projects.contains(&id) => Some(b.permission),
            _ => None,
        };
        owned.max(b.grants.get(&u.id).copied())
    }

    /// Whether the caller holds at least `need` on the bucket.
    pub fn may(&self, b: &BucketRecord, need: Perm) -> bool {
        self.perm_on(b).is_some_and(|p| p >= need)
    }
}

/// The longest lifetime S3 accepts for a SigV4 presigned URL: seven days.
const MAX_PRESIGNED_SECS: u64 = 604_800;

/// Refuses a SigV4 presigned URL that claims to live longer than S3 allows (s3s only checks
/// that it has not expired). Called by every path that admits a request: the access check and
/// the re-dispatching Range route.
pub(crate) fn check_presigned_lifetime(uri: &http::Uri) -> S3Result<()> {
    let Some(q) = uri.query() else { return Ok(()) };
    for pair in q.split('&') {
        let Some(("X-Amz-Expires", v)) = pair.split_once('=') else {
            continue;
        };
        if v.parse::<u64>().map_or(true, |secs| secs > MAX_PRESIGNED_SECS) {
            return Err(crate::s3::presigned_too_long(MAX_PRESIGNED_SECS));
        }
    }
    Ok(())
}

/// Secret-key lookup for signature verification.
pub struct GatewayAuth {
    meta: Arc<dyn Metadata>,
    master: Arc<MasterKey>,
}

impl GatewayAuth {
    /// Looks keys up in `meta` and opens them with `master`.
    pub fn new(meta: Arc<dyn Metadata>, master: Arc<MasterKey>) -> Self {
        Self { meta, master }
    }
}

#[async_trait::async_trait]
impl S3Auth for GatewayAuth {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        let kp = self.meta.keypair(access_key).await.map_err(meta_err)?;
        match kp {
            Some(kp) if kp.enabled => {
                let secret = self.master.open(&kp.access_key, &kp.sealed_secret).map_err(internal)?;
                Ok(SecretKey::from(secret))
            }
            _ => Err(s3_error!(
                InvalidAccessKeyId,
                "The AWS access key Id you provided does not exist in our records."
            )),
        }
    }
}

/// Per-request authorization.
pub struct GatewayAccess {
    gateway: Arc<Gateway>,
}

impl GatewayAccess {
    /// Authorizes against the gateway's store.
    pub fn new(gateway: Arc<Gateway>) -> Self {
        Self { gateway }
    }
}

/// What the access check needs to know of a request besides who signed it.
pub(crate) struct Asked<'a> {
    /// The operation, as s3s names it.
    pub op: &'a str,
    pub bucket: Option<String>,
    pub key: Option<String>,
    pub uri: &'a http::Uri,
    pub headers: &'a http::HeaderMap,
    pub peer: Option<std::net::IpAddr>,
}

impl GatewayAccess {
    /// The caller behind `access_key` (verified by whoever calls this), or the anonymous
    /// caller of an unsigned request.
    pub(crate) async fn caller(gateway: &Gateway, access_key: Option<&str>) -> S3Result<Caller> {
        let Some(ak) = access_key else {
            return Ok(Caller::anonymous(&gateway.anonymous_domain));
        };
        let meta = &gateway.meta;
        let kp = (meta.keypair(ak).await.map_err(meta_err)?)
            .filter(|kp| kp.enabled)
            .ok_or_else(|| s3_error!(InvalidAccessKeyId))?;
        Self::caller_of(gateway, kp).await
    }

    /// The caller behind an enabled keypair (looked up by whoever calls this).
    pub(crate) async fn caller_of(gateway: &Gateway, kp: Keypair) -> S3Result<Caller> {
        let meta = &gateway.meta;
        let user = (meta.user(kp.user_id).await.map_err(meta_err)?).ok_or_else(|| s3_error!(InvalidAccessKeyId))?;
        Ok(Caller {
            access_key: kp.access_key,
            user,
            checked: None,
            hide_missing: false,
            addressed: None,
        })
    }

    /// Lets `caller` run `asked.op` on what the request addresses, or says why not; the caller
    /// comes back with the bucket record it was checked against. Every path that admits a
    /// request comes through here: s3s's access check, and the plain reads of `s3/direct.rs`.
    /// `slot` learns the operation, bucket, key and tenant for the request's log line.
    pub(crate) async fn authorize(
        gateway: &Gateway,
        mut caller: Caller,
        asked: Asked<'_>,
        slot: Option<&InfoSlot>,
    ) -> S3Result<Caller> {
        let Asked {
            op,
            bucket,
            key,
            uri,
            headers,
            peer,
        } = asked;
        if let Some(Ok(mut info)) = slot.map(|s| s.0.lock()) {
            info.operation = op.to_owned();
            info.bucket.clone_from(&bucket);
            info.key.clone_from(&key);
            if matches!(op, "CopyObject" | "UploadPartCopy") {
                info.copy_source_key = headers
                    .get("x-amz-copy-source")
                    .and_then(|v| v.to_str().ok())
                    .and_then(crate::observe::copy_source_key);
            }
            info.tenant = Some(if caller.is_anonymous() {
                "anonymous".to_owned()
            } else {
                format!("{}/{} ({})", caller.user.domain, caller.user.name, caller.access_key)
            });
        }
        crate::s3::refuse_unoffered(op, headers, gateway.at_rest().is_some())?;
        let need = match required(op) {
            // Refused before any handler runs; not a matter of permissions, so not AccessDenied,
            // which would send clients looking for a policy to fix.
            Need::Unsupported => return Err(s3_error!(NotImplemented, "{op} is not implemented by this gateway")),
            // S3 answers an unsigned ListBuckets or CreateBucket so.
            Need::Authenticated if caller.is_anonymous() => return Err(s3_error!(AccessDenied, "Access Denied")),
            Need::Authenticated => None,
            Need::Folder(p) => Some(p),
        };
        caller.addressed.clone_from(&bucket);
        if let (Some(need), Some(name)) = (need, bucket) {
            // A missing bucket is left to the handler, which answers NoSuchBucket.
            let found = gateway
                .meta
                .bucket(&caller.user.domain, &name)
                .await
                .map_err(meta_err)?;
            if let Some(rec) = found {
                crate::s3::check_expected_owner(headers, "x-amz-expected-bucket-owner", &rec)?;
                let facts = RequestFacts {
                    op,
                    key: key.as_deref(),
                    version: None,
                    uri,
                    headers,
                    peer,
                };
                // DeleteObjects names its keys in its body, and a policy may grant deletes by key
                // (as S3, the handler then checks each key and reports the ones refused).
                let by_key = op == "DeleteObjects" && rec.policy.is_some();
                let read = matches!(op, "GetObject" | "HeadObject") && !caller.may(&rec, Perm::Ro);
                let listing = RequestFacts {
                    op: "ListObjectsV2",
                    key: None,
                    ..facts
                };
                if !gateway.permits(&caller, &rec, caller.may(&rec, need), &facts).await? && !by_key {
                    // S3 answers a read of a missing key 404 to whoever may list the bucket,
                    // whatever else it would refuse them (an ACL on an object that is not there
                    // grants nothing): the listing would tell them as much.
                    let current = !uri
                        .query()
                        .is_some_and(|q| q.split('&').any(|p| p.split('=').next() == Some("versionId")));
                    if let (true, true, Some(k)) = (read, current, key.as_deref()) {
                        if gateway.permits(&caller, &rec, false, &listing).await?
                            && !gateway.key_exists(&rec, k).await?
                        {
                            return Err(s3_error!(NoSuchKey, "The specified key does not exist."));
                        }
                    }
                    return Err(s3_error!(AccessDenied, "Access Denied"));
                }
                if read {
                    caller.hide_missing = !gateway.permits(&caller, &rec, false, &listing).await?;
                }
                let rec = Arc::new(rec);
                if let Some(Ok(mut info)) = slot.map(|s| s.0.lock()) {
                    info.bucket_record = Some(rec.clone());
                }
                caller.checked = Some(rec);
            }
        }
        Ok(caller)
    }
}

#[async_trait::async_trait]
impl S3Access for GatewayAccess {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        // A request re-dispatched after s3s verified its signature (s3/ignored_headers.rs) carries the
        // verified access key in an extension that only the gateway sets.
        check_presigned_lifetime(cx.uri())?;
        let verified = cx.extensions_mut().get::<Verified>().map(|v| v.0.clone());
        let ak = match (cx.credentials(), verified) {
            (Some(cred), _) => Some(cred.access_key.clone()),
            (None, Some(v)) => Some(v),
            (None, None) => None,
        };
        let caller = Self::caller(&self.gateway, ak.as_deref()).await?;
        if matches!(
            cx.s3_op().name(),
            "PostObject" | "PutObjectRetention" | "PutObjectLegalHold"
        ) {
            // What these are judged on is in their bodies: a form upload's key is a form field,
            // and a retention or legal hold document holds the values of object lock's policy
            // condition keys. The hooks below authorize them once s3s has parsed the body;
            // until then the request has no `Caller`, which every handler requires.
            cx.extensions_mut().insert(Deferred(caller));
            return Ok(());
        }
        let (bucket, key) = match cx.s3_path() {
            S3Path::Root => (None, None),
            S3Path::Bucket { bucket } => (Some(bucket.to_string()), None),
            S3Path::Object { bucket, key } => (Some(bucket.to_string()), Some(key.to_string())),
        };
        let slot = cx.extensions_mut().get::<InfoSlot>().cloned();
        let peer = cx.extensions_mut().get::<PeerAddr>().map(|p| p.0.ip());
        let asked = Asked {
            op: cx.s3_op().name(),
            bucket,
            key,
            uri: cx.uri(),
            headers: cx.headers(),
            peer,
        };
        let caller = Self::authorize(&self.gateway, caller, asked, slot.as_ref()).await?;
        // Documents whose digests do not hold are refused before any handler sees them.
        let op = cx.s3_op().name().to_owned();
        crate::s3::body_digest::enforce(&op, cx.extensions_mut().get::<crate::s3::body_digest::BodyDigest>())?;
        cx.extensions_mut().insert(caller);
        Ok(())
    }

    /// A browser-form upload, authorized for the key it will write: the form's `key` with
    /// `${filename}` replaced by the uploaded file's name (see `s3/post_form.rs`).
    async fn post_object(&self, req: &mut S3Request<PostObjectInput>) -> S3Result<()> {
        if let Some(upload) = req.extensions.get::<Arc<FormUpload>>() {
            upload.check_signing()?;
            req.input.key = upload.key_for(&req.input.key);
            upload.apply_fields(&mut req.input)?;
        }
        // A form asks for encryption in its fields, not in headers.
        let i = &req.input;
        let customer_key = i.sse_customer_algorithm.is_some() || i.sse_customer_key.is_some();
        crate::s3::Unoffered {
            sse: customer_key
                || i.server_side_encryption.is_some()
                || i.ssekms_key_id.is_some()
                || i.ssekms_encryption_context.is_some()
                || i.bucket_key_enabled.is_some(),
            customer_key,
            source_customer_key: false,
            method: i.server_side_encryption.as_ref().map(|m| m.as_str().to_owned()),
            kms_params: i.ssekms_key_id.is_some()
                || i.ssekms_encryption_context.is_some()
                || i.bucket_key_enabled.is_some(),
        }
        .refuse("PostObject", self.gateway.at_rest().is_some())?;
        if let Some(class) = &i.storage_class {
            crate::s3::refuse_unknown_storage_class(class.as_str().as_bytes())?;
        }
        // The form's object lock fields are what a PutObject's headers would be.
        let mode = i.object_lock_mode.as_ref().map(|m| m.as_str().to_owned());
        let until = i.object_lock_retain_until_date.clone().map(rfc3339);
        let hold = i.object_lock_legal_hold_status.as_ref().map(|h| h.as_str().to_owned());
        let (bucket, key) = (i.bucket.clone(), i.key.clone());
        self.authorize_with_document(req, "PostObject", bucket, key, |h| {
            set_header(h, "x-amz-object-lock-mode", mode);
            set_header(h, "x-amz-object-lock-retain-until-date", until);
            set_header(h, "x-amz-object-lock-legal-hold", hold);
        })
        .await
    }

    /// PutObjectRetention, authorized with the document's mode and date as the condition keys
    /// `s3:object-lock-mode`, `s3:object-lock-retain-until-date` and
    /// `s3:object-lock-remaining-retention-days`.
    async fn put_object_retention(&self, req: &mut S3Request<PutObjectRetentionInput>) -> S3Result<()> {
        let retention = req.input.retention.clone().unwrap_or_default();
        let mode = retention.mode.map(|m| m.as_str().to_owned());
        let until = retention.retain_until_date.map(rfc3339);
        let (bucket, key) = (req.input.bucket.clone(), req.input.key.clone());
        self.authorize_with_document(req, "PutObjectRetention", bucket, key, |h| {
            set_header(h, "x-amz-object-lock-mode", mode);
            set_header(h, "x-amz-object-lock-retain-until-date", until);
        })
        .await
    }

    /// PutObjectLegalHold, authorized with the document's status as `s3:object-lock-legal-hold`.
    async fn put_object_legal_hold(&self, req: &mut S3Request<PutObjectLegalHoldInput>) -> S3Result<()> {
        let status = req
            .input
            .legal_hold
            .as_ref()
            .and_then(|h| h.status.as_ref())
            .map(|s| s.as_str().to_owned());
        let (bucket, key) = (req.input.bucket.clone(), req.input.key.clone());
        self.authorize_with_document(req, "PutObjectLegalHold", bucket, key, |h| {
            set_header(h, "x-amz-object-lock-legal-hold", status);
        })
        .await
    }
}

impl GatewayAccess {
    /// Authorizes a request the access check deferred until its body was parsed: as if the
    /// values `document` takes from the body came as the headers PutObject carries them in,
    /// which is where [`Gateway::permits`] reads object lock's condition keys; a value already
    /// in such a header is replaced, so a header cannot stand in for the document.
    async fn authorize_with_document<I>(
        &self,
        req: &mut S3Request<I>,
        op: &'static str,
        bucket: String,
        key: String,
        document: impl FnOnce(&mut http::HeaderMap),
    ) -> S3Result<()> {
        let Some(Deferred(caller)) = req.extensions.remove::<Deferred>() else {
            return Err(s3_error!(AccessDenied, "Access Denied"));
        };
        let mut headers = req.headers.clone();
        for (h, _) in crate::s3::LOCK_KEYS {
            headers.remove(h);
        }
        document(&mut headers);
        let slot = req.extensions.get::<InfoSlot>().cloned();
        let peer = req.extensions.get::<PeerAddr>().map(|p| p.0.ip());
        let asked = Asked {
            op,
            bucket: Some(bucket),
            key: Some(key),
            uri: &req.uri,
            headers: &headers,
            peer,
        };
        let caller = Self::authorize(&self.gateway, caller, asked, slot.as_ref()).await?;
        crate::s3::body_digest::enforce(op, req.extensions.get::<crate::s3::body_digest::BodyDigest>())?;
        req.extensions.insert(caller);
        Ok(())
    }
}

/// A date as an ISO 8601 header value carries it (`x-amz-object-lock-retain-until-date`).
fn rfc3339(t: s3s::dto::Timestamp) -> String {
    let t = time::OffsetDateTime::from(t);
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Sets header `name` to `value`, where there is one that a header may carry.
fn set_header(h: &mut http::HeaderMap, name: &'static str, value: Option<String>) {
    if let Some(v) = value.and_then(|v| http::HeaderValue::try_from(v).ok()) {
        h.insert(name, v);
    }
}

/// A caller authenticated but not yet authorized: the access check defers requests whose
/// bodies decide it ([`GatewayAccess::authorize_with_document`]).
#[derive(Clone)]
struct Deferred(Caller);

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    fn user(domain: &str, role: Role, projects: &[Uuid]) -> Caller {
        Caller {
            access_key: "ak".into(),
            user: User {
                id: Uuid::new_v4(),
                domain: domain.into(),
                name: "u".into(),
                role,
                projects: projects.iter().copied().collect(),
                created_ms: 0,
            },
            checked: None,
            hide_missing: false,
            addressed: None,
        }
    }

    fn bucket(domain: &str, scope: QuotaScope, perm: Perm) -> BucketRecord {
        BucketRecord {
            permission: perm,
            ..BucketRecord::new("b".into(), domain.into(), Uuid::new_v4(), "v".into(), scope, 0)
        }
    }

    #[test]
    fn permission_rules() {
        let p = Uuid::new_v4();
        let owner = user("d1", Role::User, &[]);
        let member = user("d1", Role::User, &[p]);
        let outsider = user("d1", Role::User, &[]);
        let foreign_member = user("d2", Role::User, &[p]);
        let dadmin = user("d1", Role::DomainAdmin, &[]);
        let sadmin = user("d9", Role::Superadmin, &[]);

        let mut ub = bucket("d1", QuotaScope::user(owner.user.id), Perm::Wd);
        assert_eq!(owner.perm_on(&ub), Some(Perm::Wd));
        assert_eq!(outsider.perm_on(&ub), None);
        ub.grants.insert(outsider.user.id, Perm::Ro);
        assert_eq!(outsider.perm_on(&ub), Some(Perm::Ro));
        assert!(!outsider.may(&ub, Perm::Rw));
        assert_eq!(dadmin.perm_on(&ub), Some(Perm::Wd));
        assert_eq!(sadmin.perm_on(&ub), Some(Perm::Wd));

        let pb = bucket("d1", QuotaScope::project(p), Perm::Rw);
        assert_eq!(member.perm_on(&pb), Some(Perm::Rw));
        assert_eq!(outsider.perm_on(&pb), None);
        assert_eq!(foreign_member.perm_on(&pb), None, "domains are walls");
    }

    #[test]
    fn presigned_urls_live_at_most_a_week() {
        let ok = |u: &str| check_presigned_lifetime(&u.parse().unwrap()).is_ok();
        assert!(ok("/b/k?X-Amz-Expires=604800&X-Amz-Signature=x"));
        assert!(ok("/b/k"));
        assert!(ok("/b/k?Expires=99999999999"), "SigV2 expiry is a date");
        assert!(!ok("/b/k?X-Amz-Expires=604801"));
        assert!(!ok("/b/k?a=1&X-Amz-Expires=1000000000"));
        assert!(!ok("/b/k?X-Amz-Expires=-1"));
    }
}
