//! The S3 service: one module per operation family, all methods of [`Gateway`].
//!
//! [`Gateway`] owns the metadata store and the volumes. Each S3 operation is implemented as an
//! inherent method in the module of its family (`get.rs`, `put.rs`, ...); the table in `ops.rs`
//! routes to them and says what each needs.

mod acl;
pub(crate) mod body_digest;
pub(crate) mod bucket;
mod checksum;
mod copy;
mod cors;
mod delete;
mod direct;
mod error;
mod get;
mod ignored_headers;
mod janitor;
mod lifecycle;
mod lifecycle_worker;
mod list;
mod locks;
mod multipart;
mod object;
mod object_lock;
pub(crate) mod ops;
mod policy;
pub(crate) mod post_form;
mod put;
mod quota;
mod raw_headers;
mod rdma;
mod restore;
mod sharing;
mod sse_c;
mod stream;
mod tagging;
mod unconfigured;
mod version_list;
mod versioning;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use s3s::dto::*;
use s3s::service::S3ServiceBuilder;
use s3s::{S3Request, S3Result};

use penstock_backends::nfs::NfsVolume;
use penstock_backends::posix::PosixVolume;
use penstock_backends::{Folder, FolderLocation, Volume};
use penstock_metadata::{BucketRecord, Metadata, PgMetadata, PgOptions, RocksMetadata, Store, StoreOptions};

use crate::auth::{Caller, GatewayAccess, GatewayAuth};
use crate::config::{Config, MetadataEngine, VolumeConfig};
use crate::metrics::Metrics;
use crate::observe::Observed;
use crate::secrets::MasterKey;
pub(crate) use object::{key_too_long_detail, now_ms, MAX_KEY_BYTES};
pub(crate) use unconfigured::{names_blocked_encryption_types, SSE_C_BLOCKED_MARK};
// The pure parsers and checks the fuzz targets drive (crate::fuzzing).
pub(crate) use acl::OWNERSHIPS;
pub(crate) use cors::asked_headers as cors_asked_headers;
pub use direct::DirectReads;
pub(crate) use error::{argument_detail, error_document, DETAIL_HEADER, MAX_UPLOAD_BYTES};
pub(crate) use sharing::LOCK_KEYS;

/// A status a handler answers with where s3s would write its fixed one (RestoreObject's 202):
/// put in the response's extensions, it replaces the status on the way out (`observe.rs`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct AnswerStatus(pub http::StatusCode);
pub(crate) use get::select;
pub(crate) use ignored_headers::range_ignored;
pub(crate) use ignored_headers::Verified;
pub(crate) use multipart::{check_part_number, parse_copy_range as copy_range};
pub(crate) use object::{parse_http_date, parse_key, validate_tags, Conditions};
pub use rdma::{has_token as rdma_has_token, PeerAddr};
pub(crate) use sharing::RequestFacts;
pub(crate) use unconfigured::{refuse_unknown_storage_class, refuse_unoffered, Unoffered};

pub(crate) use error::{internal, meta_err, presigned_too_long};

/// Shared state of the S3 service.
pub struct Gateway {
    /// The metadata engine.
    pub meta: Arc<dyn Metadata>,
    /// Prometheus metrics.
    pub metrics: Arc<Metrics>,
    /// This process among the gateways sharing the engine: its staging files and pending
    /// publishes carry it, and it heartbeats under it (see `janitor.rs`).
    pub instance: String,
    /// This run's hold on its data directory and its previous run's instance (`janitor.rs`).
    succession: janitor::Succession,
    liveness: janitor::Liveness,
    /// Wakes the janitor to look for vanished gateways (`Gateway::nudge_janitor`).
    janitor_nudge: tokio::sync::Notify,
    /// Seals and opens secret keys at rest.
    pub master: Arc<MasterKey>,
    volumes: HashMap<String, Arc<dyn Volume>>,
    pub(crate) default_volume: String,
    durable: bool,
    region: String,
    /// The Object Ownership of new buckets that name none: `None` is `BucketOwnerEnforced`.
    default_ownership: Option<String>,
    /// The domain whose buckets unsigned requests address.
    pub(crate) anonymous_domain: String,
    /// Whether the S3 listener speaks TLS (`aws:SecureTransport`).
    secure: bool,
    /// `AES256` when the operator attests that every volume encrypts at rest
    /// (`encrypted_at_rest`): what object answers and GetBucketEncryption then say.
    at_rest: Option<ServerSideEncryption>,
    /// Customer keys (SSE-C) are taken over plain HTTP from any peer, not only over TLS or
    /// loopback (`sse_c_over_http`).
    sse_c_over_http: bool,
    locks: locks::KeyLocks,
    quota_locks: Arc<locks::KeyLocks>,
    /// Orders CompleteMultipartUpload and AbortMultipartUpload of one upload, so exactly one of
    /// two racing wins and the other finds the upload gone. Separate from `locks`: Complete takes
    /// a key lock while holding this one, and stripes of one table could coincide.
    upload_locks: locks::KeyLocks,
    /// Bucket policies as parsed (`sharing::ParsedPolicies`).
    policies: sharing::ParsedPolicies,
    rdma: rdma::RdmaPath,
    lifecycle: lifecycle::LifecycleTiming,
}

/// A resolved bucket: its record and its opened folder.
pub(crate) struct BucketCtx {
    pub rec: Arc<BucketRecord>,
    pub folder: Arc<dyn Folder>,
}

impl Gateway {
    /// Opens the metadata store and the configured volumes.
    pub async fn open(cfg: &Config) -> anyhow::Result<Self> {
        // Made durably, as everything in it: a power cut right after the first start must not
        // take the data directory (or the metadata store's) with it.
        penstock_backends::posix::create_dir_all_durably(&cfg.data_dir)?;
        let meta = open_metadata(cfg).await?;
        // Staging files are named after the process; a second Gateway in one process (tests)
        // shares the first one's name.
        let instance = janitor::new_instance();
        let first = penstock_backends::set_instance(&instance);
        let instance = penstock_backends::layout::instance().to_owned();
        let succession = if first {
            janitor::Succession::take(&cfg.data_dir, &instance)
        } else {
            janitor::Succession::default()
        };
        let metrics = Arc::new(Metrics::new());
        let mut volumes: HashMap<String, Arc<dyn Volume>> = HashMap::new();
        for v in cfg.effective_volumes() {
            let vol: Arc<dyn Volume> = match &v {
                VolumeConfig::Posix {
                    name,
                    path,
                    direct_writes_from,
                } => Arc::new(
                    PosixVolume::open(name, path)?
                        .with_direct_writes_from((*direct_writes_from > 0).then_some(*direct_writes_from))
                        .with_observer(metrics.clone()),
                ),
                VolumeConfig::Nfs(n) => Arc::new(
                    NfsVolume::connect(&n.name, n.options())
                        .await
                        .map_err(|e| anyhow::anyhow!("volume {}: {e}", n.name))?
                        .with_observer(metrics.clone()),
                ),
            };
            volumes.insert(v.name().to_owned(), vol);
        }
        if cfg.metadata.engine == MetadataEngine::Postgres
            && cfg.master_key.is_none()
            && std::env::var_os("PENSTOCK_MASTER_KEY").is_none()
        {
            anyhow::bail!(
                "the postgres metadata engine is shared by every gateway, and so are the sealed secret keys in it: \
                 set master_key or PENSTOCK_MASTER_KEY to the same key on every gateway"
            );
        }
        let master = MasterKey::load(cfg.master_key.as_deref(), &cfg.data_dir)?;
        Ok(Self {
            meta,
            metrics,
            instance,
            succession,
            liveness: janitor::Liveness {
                heartbeat: Duration::from_secs_f64(cfg.metadata.heartbeat_secs.max(0.05)),
                gone_after: Duration::from_secs_f64(cfg.metadata.gone_after_secs.max(0.1)),
            },
            janitor_nudge: tokio::sync::Notify::new(),
            master: Arc::new(master),
            volumes,
            default_volume: cfg.default_volume.clone(),
            durable: cfg.fsync,
            region: cfg.region.clone(),
            default_ownership: (cfg.default_object_ownership != "BucketOwnerEnforced")
                .then(|| cfg.default_object_ownership.clone()),
            anonymous_domain: cfg.anonymous_domain.clone(),
            secure: cfg.tls_cert.is_some() && cfg.tls_key.is_some(),
            at_rest: cfg
                .encrypted_at_rest
                .then(|| ServerSideEncryption::from_static(ServerSideEncryption::AES256)),
            sse_c_over_http: cfg.sse_c_over_http,
            locks: locks::KeyLocks::new(),
            quota_locks: Arc::new(locks::KeyLocks::new()),
            upload_locks: locks::KeyLocks::new(),
            policies: sharing::ParsedPolicies::default(),
            rdma: rdma::RdmaPath::new(&cfg.rdma),
            lifecycle: lifecycle::LifecycleTiming {
                interval: Duration::from_secs_f64(cfg.lifecycle_interval_secs.max(0.01)),
                day_ms: (cfg.lifecycle_day_secs.max(0.01) * 1000.0) as i64,
            },
        })
    }

    pub(crate) fn volume(&self, name: &str) -> S3Result<&Arc<dyn Volume>> {
        self.volumes
            .get(name)
            .ok_or_else(|| s3s::s3_error!(ServiceUnavailable, "volume {name} is not configured on this gateway"))
    }

    /// The configured volumes by name.
    pub(crate) fn volumes(&self) -> impl Iterator<Item = (&String, &Arc<dyn Volume>)> {
        self.volumes.iter()
    }

    /// The bucket `name` in the caller's domain, with its folder opened: the record the access
    /// check found when the request addresses `name` (none if it found none), else a fresh
    /// lookup (a copy's source, whose handler checks the caller's permission on it).
    pub(crate) async fn bucket(&self, who: &Caller, name: &str) -> S3Result<BucketCtx> {
        let rec = match &who.checked {
            Some(rec) if rec.name == name => rec.clone(),
            // Missing when the access check looked: a bucket created since was never checked.
            _ if who.addressed.as_deref() == Some(name) => {
                return Err(s3s::s3_error!(NoSuchBucket, "The specified bucket does not exist"))
            }
            _ => self
                .meta
                .bucket(&who.user.domain, name)
                .await
                .map_err(meta_err)?
                .map(Arc::new)
                .ok_or_else(|| s3s::s3_error!(NoSuchBucket, "The specified bucket does not exist"))?,
        };
        let folder = self.folder_of(&rec).await?;
        Ok(BucketCtx { rec, folder })
    }

    /// Opens the folder of bucket `rec` on its volume.
    pub(crate) async fn folder_of(&self, rec: &BucketRecord) -> S3Result<Arc<dyn Folder>> {
        self.volume(&rec.volume)?
            .open_folder(&location(rec))
            .await
            .map_err(error::backend_err)
    }
}

/// Opens the configured metadata engine (applying its schema migrations).
pub async fn open_metadata(cfg: &Config) -> anyhow::Result<Arc<dyn Metadata>> {
    Ok(match cfg.metadata.engine {
        MetadataEngine::Rocksdb => {
            // RocksDB syncs the files it makes into its directory, not that directory into ours.
            let dir = cfg.data_dir.join("metadata");
            penstock_backends::posix::create_dir_all_durably(&dir)?;
            let store = Store::open(&dir, StoreOptions { sync: cfg.fsync })?;
            Arc::new(RocksMetadata::new(store))
        }
        MetadataEngine::Postgres => {
            let url = cfg.metadata.url().ok_or_else(|| {
                anyhow::anyhow!("metadata engine postgres needs [metadata] url or PENSTOCK_METADATA_URL")
            })?;
            let opts = PgOptions {
                url,
                pool_size: cfg.metadata.pool_size,
                wait: Duration::from_secs_f64(cfg.metadata.connect_timeout_secs.max(0.1)),
                cache: Duration::from_millis(cfg.metadata.cache_ms),
            };
            Arc::new(PgMetadata::connect(&opts).await?)
        }
    })
}

/// The folder location recorded for a bucket.
pub(crate) fn location(rec: &BucketRecord) -> FolderLocation {
    FolderLocation {
        scope: rec.quota_scope,
        id: rec.folder_id,
    }
}

/// The S3 owner of a bucket: its quota scope's principal.
pub(crate) fn owner_of(rec: &BucketRecord) -> Owner {
    Owner {
        id: Some(rec.quota_scope.id.simple().to_string()),
        display_name: Some(rec.quota_scope.to_string()),
    }
}

/// The S3 owner of an object: its writer where the object records one (buckets with ACLs
/// enabled, `acl.rs`), else the bucket's owner.
pub(crate) fn object_owner(bucket: &BucketRecord, attrs: &penstock_metadata::ObjectAttrs) -> Owner {
    attrs
        .owner
        .as_deref()
        .and_then(user_owner)
        .unwrap_or_else(|| owner_of(bucket))
}

/// The S3 owner user id `id` (either form) names: its canonical ID in hex and the display name
/// every answer gives that user (`user:<id>`); `None` for a string that is no user id.
pub(crate) fn user_owner(id: &str) -> Option<Owner> {
    let user = uuid::Uuid::try_parse(id).ok()?;
    Some(Owner {
        id: Some(user.simple().to_string()),
        display_name: Some(penstock_types::QuotaScope::user(user).to_string()),
    })
}

/// Refuses a request whose `header` (`x-amz-expected-bucket-owner`, or
/// `x-amz-source-expected-bucket-owner` for a copy's source) names someone other than the owner
/// of bucket `rec` (the owner ID that ListObjects, ACLs and ListBuckets give): 403
/// `AccessDenied`, as S3 answers, so a client that guards against writing into a bucket someone
/// else recreated under the same name is guarded here too.
pub(crate) fn check_expected_owner(headers: &http::HeaderMap, header: &str, rec: &BucketRecord) -> S3Result<()> {
    let Some(expected) = headers.get(header) else {
        return Ok(());
    };
    let mut buf = [0u8; uuid::fmt::Simple::LENGTH];
    let owner = rec.quota_scope.id.simple().encode_lower(&mut buf);
    if expected.as_bytes() == owner.as_bytes() {
        return Ok(());
    }
    Err(s3s::s3_error!(AccessDenied, "Access Denied"))
}

/// The caller put there by the access check; every authenticated request has one.
pub(crate) fn caller<T>(req: &S3Request<T>) -> S3Result<Caller> {
    req.extensions
        .get::<Caller>()
        .cloned()
        .ok_or_else(|| s3s::s3_error!(AccessDenied, "request is not authenticated"))
}

/// The client's address, when the listener recorded it.
pub(crate) fn peer<T>(req: &S3Request<T>) -> Option<PeerAddr> {
    req.extensions.get::<PeerAddr>().copied()
}

/// Builds the hyper service: s3s with our auth, access control and operations.
pub fn build_service(gateway: Arc<Gateway>, cfg: &Config) -> Observed {
    let metrics = gateway.metrics.clone();
    let domains: Vec<String> = cfg
        .virtual_host_domains
        .iter()
        .map(|d| d.to_ascii_lowercase())
        .collect();
    let mut b = S3ServiceBuilder::new(ops::S3Gateway(gateway.clone()));
    b.set_host(VirtualHosts {
        domains: domains.clone(),
    });
    b.set_validation(bucket::LookupNames);
    b.set_auth(GatewayAuth::new(gateway.meta.clone(), gateway.master.clone()));
    b.set_access(GatewayAccess::new(gateway.clone()));
    let itself = Arc::new(std::sync::OnceLock::new());
    b.set_route(ignored_headers::IgnoredHeaders {
        service: itself.clone(),
    });
    let service = b.build();
    // The route re-dispatches through the service it is part of.
    let _ = itself.set(service.clone());
    let auth = GatewayAuth::new(gateway.meta.clone(), gateway.master.clone());
    let observed = Observed::new(service, metrics, auth)
        .with_region(&cfg.region)
        .with_tls(cfg.tls_cert.is_some())
        .with_max_header_bytes(cfg.connections.max_header_bytes);
    let observed = if cfg.direct_reads {
        observed.with_direct_reads(DirectReads::new(gateway.clone(), domains.clone()))
    } else {
        observed
    };
    observed.with_cors(gateway, domains)
}

/// The scheme a client used to reach the gateway, for URLs named back to it: a
/// TLS-terminating proxy's `X-Forwarded-Proto` where it names `http` or `https`, else the
/// listener's own (`secure`: it speaks TLS).
pub(crate) fn request_scheme(headers: &http::HeaderMap, secure: bool) -> &'static str {
    match headers.get("x-forwarded-proto").and_then(|v| v.to_str().ok()) {
        Some(p) if p.eq_ignore_ascii_case("https") => "https",
        Some(p) if p.eq_ignore_ascii_case("http") => "http",
        _ if secure => "https",
        _ => "http",
    }
}

/// The URL of object `key` of `bucket` as the request at `uri` with `headers` addressed it,
/// as S3 names an object in CompleteMultipartUpload's `<Location>`: `scheme://host/bucket/key`
/// for a path-style request, `scheme://host/key` where the host named the bucket; the key
/// percent-encoded with its `/` kept. `None` without a `Host` (or HTTP/2 authority).
pub(crate) fn object_url(
    uri: &http::Uri,
    headers: &http::HeaderMap,
    secure: bool,
    bucket: &str,
    key: &str,
) -> Option<String> {
    let host = headers
        .get(http::header::HOST)
        .and_then(|h| h.to_str().ok())
        .or_else(|| uri.authority().map(|a| a.as_str()))?;
    let scheme = request_scheme(headers, secure);
    // Path style unless the path is the key alone: a virtual-hosted request's path is `/key`
    // (the key may itself start with the bucket's name, so the bucket's segment decides nothing).
    let path = percent_encoding::percent_decode_str(uri.path()).decode_utf8_lossy();
    let hosted = path.strip_prefix('/') == Some(key);
    let key = list::enc(true, key);
    Some(if hosted {
        format!("{scheme}://{host}/{key}")
    } else {
        format!("{scheme}://{host}/{}/{key}", list::enc(true, bucket))
    })
}

/// Virtual-hosted-style addressing: `<bucket>.<domain>` for a configured domain; any other Host
/// (an IP, the bare domain, an unknown name) is path style rather than an error, so a gateway
/// reached under any name keeps working for path-style clients.
struct VirtualHosts {
    domains: Vec<String>,
}

impl s3s::host::S3Host for VirtualHosts {
    fn parse_host_header<'a>(&'a self, host: &'a str) -> S3Result<s3s::host::VirtualHost<'a>> {
        Ok(match host_bucket(host, &self.domains) {
            Some(bucket) => s3s::host::VirtualHost::new(host).with_bucket(bucket),
            None => s3s::host::VirtualHost::new(host),
        })
    }
}

/// The bucket a `Host` header names as `<bucket>.<domain>` for one of `domains` (lower case);
/// `None` for path style.
pub(crate) fn host_bucket(host: &str, domains: &[String]) -> Option<String> {
    if domains.is_empty() {
        return None;
    }
    let name = host.rsplit_once(':').map_or(host, |(h, port)| {
        if port.bytes().all(|b| b.is_ascii_digit()) {
            h
        } else {
            host
        }
    });
    let lower = name.to_ascii_lowercase();
    domains.iter().find_map(|d| {
        let bucket = lower.strip_suffix(d.as_str())?.strip_suffix('.')?;
        (!bucket.is_empty()).then(|| bucket.to_owned())
    })
}

#[cfg(test)]
mod tests {
    use super::{host_bucket, object_url};

    #[test]
    fn hosts_name_buckets_under_the_configured_domains_only() {
        let domains = ["localhost".to_owned(), "s3.example.com".to_owned()];
        let b = |h: &str| host_bucket(h, &domains);
        assert_eq!(b("photos.localhost:9000").as_deref(), Some("photos"));
        assert_eq!(b("Photos.S3.Example.com").as_deref(), Some("photos"));
        assert_eq!(b("a.b.s3.example.com").as_deref(), Some("a.b"));
        // Path style: the bare domain, an empty label, an IP, another name.
        for host in ["localhost", ".localhost", "127.0.0.1:9000", "example.org", "xlocalhost"] {
            assert_eq!(b(host), None, "{host}");
        }
        assert_eq!(host_bucket("photos.localhost", &[]), None);
    }

    #[test]
    fn object_urls_follow_the_request_s_addressing() {
        let url = |uri: &str, host: &str, proto: Option<&str>, secure: bool, bucket: &str, key: &str| {
            let mut h = http::HeaderMap::new();
            h.insert(http::header::HOST, host.parse().unwrap());
            if let Some(p) = proto {
                h.insert("x-forwarded-proto", p.parse().unwrap());
            }
            object_url(&uri.parse().unwrap(), &h, secure, bucket, key)
        };
        let path = url("/b/a/x%20y+z?uploadId=1", "127.0.0.1:9000", None, false, "b", "a/x y+z");
        assert_eq!(path.as_deref(), Some("http://127.0.0.1:9000/b/a/x%20y%2Bz"));
        // Virtual-hosted: the path is the key, even a key that starts with the bucket's name.
        let hosted = url("/b/k?uploadId=1", "b.localhost:9000", None, true, "b", "b/k");
        assert_eq!(hosted.as_deref(), Some("https://b.localhost:9000/b/k"));
        let path = url("/b/b/k?uploadId=1", "localhost", Some("https"), false, "b", "b/k");
        assert_eq!(path.as_deref(), Some("https://localhost/b/b/k"));
        let mut none = http::HeaderMap::new();
        none.insert("x-forwarded-proto", "https".parse().unwrap());
        assert_eq!(object_url(&"/b/k".parse().unwrap(), &none, false, "b", "k"), None);
    }
}
