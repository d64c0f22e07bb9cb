//! Who is calling and what they may touch.
//!
//! s3s verifies signatures (SigV4 header and presigned, SigV2, POST policy) using the secret that
//! [`GatewayAuth`] looks up in the metadata store. [`GatewayAccess`] then runs before every
//! operation: it rejects anonymous requests, records the [`Caller`] in the request extensions for
//! the handlers, and denies access to buckets the caller may not use.

use std::sync::Arc;

use s3s::access::{S3Access, S3AccessContext};
use s3s::auth::{S3Auth, SecretKey};
use s3s::path::S3Path;
use s3s::{s3_error, S3Result};
use uuid::Uuid;

use penstock_metadata::{BucketRecord, Store};

use crate::s3::{internal, meta_err, Gateway};

/// The authenticated principal of a request.
#[derive(Debug, Clone)]
pub struct Caller {
    pub access_key: String,
    pub user_id: Uuid,
    pub superadmin: bool,
}

impl Caller {
    /// Whether this caller may use the bucket. Until project sharing and grants land, a bucket is
    /// reachable by its owner and by superadmins only.
    pub fn may_use(&self, bucket: &BucketRecord) -> bool {
        self.superadmin || bucket.owner == self.user_id
    }
}

/// Secret-key lookup for signature verification.
pub struct GatewayAuth {
    store: Arc<Store>,
}

impl GatewayAuth {
    /// Looks keys up in `store`.
    pub fn new(store: Arc<Store>) -> Self {
        Self { store }
    }
}

#[async_trait::async_trait]
impl S3Auth for GatewayAuth {
    async fn get_secret_key(&self, access_key: &str) -> S3Result<SecretKey> {
        let store = self.store.clone();
        let ak = access_key.to_owned();
        let kp = tokio::task::spawn_blocking(move || store.keypair(&ak))
            .await
            .map_err(internal)?
            .map_err(meta_err)?;
        match kp {
            Some(kp) if kp.enabled => Ok(SecretKey::from(kp.secret_key)),
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

#[async_trait::async_trait]
impl S3Access for GatewayAccess {
    async fn check(&self, cx: &mut S3AccessContext<'_>) -> S3Result<()> {
        let Some(cred) = cx.credentials() else {
            return Err(s3_error!(AccessDenied, "Anonymous access is not allowed"));
        };
        let ak = cred.access_key.clone();
        let kp = self
            .gateway
            .meta(move |s| s.keypair(&ak))
            .await?
            .filter(|k| k.enabled)
            .ok_or_else(|| s3_error!(InvalidAccessKeyId))?;
        let caller = Caller {
            access_key: kp.access_key,
            user_id: kp.user_id,
            superadmin: kp.superadmin,
        };
        let bucket = match cx.s3_path() {
            S3Path::Root => None,
            S3Path::Bucket { bucket } | S3Path::Object { bucket, .. } => Some(bucket.to_string()),
        };
        if let Some(name) = bucket {
            // A missing bucket is left to the handler (NoSuchBucket, or CreateBucket).
            if let Some(rec) = self.gateway.meta(move |s| s.bucket(&name)).await? {
                if !caller.may_use(&rec) {
                    return Err(s3_error!(AccessDenied, "Access Denied"));
                }
            }
        }
        cx.extensions_mut().insert(caller);
        Ok(())
    }
}
