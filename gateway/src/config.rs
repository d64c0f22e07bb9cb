//! Typed configuration: a TOML file, overridden by command-line flags.
//!
//! Every field has a default, so `penstock serve` runs with no file at all: data under
//! `./penstock-data`, S3 on `127.0.0.1:9000`, one POSIX volume named `local` under the data dir.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// The whole configuration file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// Address of the S3 listener.
    pub listen: SocketAddr,
    /// Directory holding the metadata store and, by default, the `local` volume.
    pub data_dir: PathBuf,
    /// Region reported to clients and accepted in signatures.
    pub region: String,
    /// Object Ownership of a bucket whose CreateBucket names none: `BucketOwnerEnforced` (ACLs
    /// off, S3's default since 2023), or `BucketOwnerPreferred` / `ObjectWriter` (ACLs on, as
    /// buckets were before, and as clients and test suites written for that era expect).
    pub default_object_ownership: String,
    /// fsync files, directories and the metadata log before acknowledging a write.
    pub fsync: bool,
    /// Volume on which CreateBucket makes new folders.
    pub default_volume: String,
    /// Storage volumes. When empty, a POSIX volume `local` at `<data_dir>/volumes/local` is used.
    pub volumes: Vec<VolumeConfig>,
    /// Seconds to wait for in-flight requests on SIGTERM/SIGINT before closing connections.
    pub shutdown_grace_secs: u64,
    /// Base64 of the 32-byte key that seals secret keys at rest (else `PENSTOCK_MASTER_KEY`, else
    /// a key file generated in the data dir).
    pub master_key: Option<String>,
    /// Address of the admin API (JSON) with health, readiness and tenancy management.
    pub admin_listen: SocketAddr,
    /// Bearer token of the admin API (else `PENSTOCK_ADMIN_TOKEN`, else a token file generated in
    /// the data dir).
    pub admin_token: Option<String>,
    /// Log format: `text` (default) or `json`.
    pub log_format: crate::telemetry::LogFormat,
    /// Domains under which `<bucket>.<domain>` Host headers address a bucket (virtual-hosted
    /// style). Any other Host means path style.
    pub virtual_host_domains: Vec<String>,
    /// The tenant domain whose bucket names unsigned (anonymous) requests address.
    pub anonymous_domain: String,
    /// The `x-amz-rdma-token` data path.
    pub rdma: RdmaConfig,
    /// PEM certificate chain: with `tls_key`, the S3 listener speaks TLS (HTTP/2 by ALPN).
    pub tls_cert: Option<PathBuf>,
    /// PEM private key of `tls_cert`.
    pub tls_key: Option<PathBuf>,
    /// Seconds between checks of `tls_cert` and `tls_key` for new contents (a renewal), which
    /// the listener then presents to new connections; `0`: only on SIGHUP, which always reads
    /// them again.
    pub tls_reload_interval_secs: f64,
    /// Limits and timeouts of client connections on the S3 listener.
    pub connections: ConnectionLimits,
    /// Where the metadata lives (`[metadata]`).
    pub metadata: MetadataConfig,
    /// Seconds between runs of the lifecycle worker, which applies buckets' lifecycle rules.
    pub lifecycle_interval_secs: f64,
    /// Seconds in a lifecycle "day": rules' Days count in these. 86400 unless shortened to
    /// watch rules act in tests.
    pub lifecycle_day_secs: f64,
    /// MiB of freed heap memory the allocator may keep: once a second, when it holds more than
    /// this beyond what it held after its last release, its free pages go back to the system
    /// (glibc only). `0` turns the check off.
    pub heap_release_mib: u64,
    /// Answer plain GetObject and HeadObject requests (path style, SigV4 header auth, no
    /// conditions, a Range that parses or none) without s3s's generic dispatch
    /// (`s3/direct.rs`); every other request, and every refusal, goes through s3s either way.
    /// Off: all requests go through s3s.
    pub direct_reads: bool,
    /// Every volume this gateway serves encrypts its data at rest (dm-crypt/LUKS, self-encrypting
    /// drives, the storage system's own encryption), as the operator attests: objects are then
    /// what S3 calls SSE-S3 encrypted, and the gateway answers as S3 does since 2023, where every
    /// object is (`x-amz-server-side-encryption: AES256` on object answers, AES256 as every
    /// bucket's default encryption, SSE-S3 requests accepted). SSE-KMS stays refused; SSE-C,
    /// which brings its own key, is served either way.
    pub encrypted_at_rest: bool,
    /// Take customer-provided keys (SSE-C) in requests over plain HTTP from any peer. S3 takes
    /// them over TLS only; by default so does the gateway, besides from loopback peers (where
    /// the key crosses no network) and through a TLS-terminating proxy (`X-Forwarded-Proto`).
    pub sse_c_over_http: bool,
}

/// The metadata engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum MetadataEngine {
    /// RocksDB embedded in `<data_dir>/metadata`: one gateway.
    #[default]
    Rocksdb,
    /// A PostgreSQL database (or one speaking its protocol) shared by every gateway.
    Postgres,
}

/// The `[metadata]` section.
#[derive(Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MetadataConfig {
    /// `rocksdb` (default) or `postgres`.
    pub engine: MetadataEngine,
    /// `postgres://user[:password]@host[:port]/database` (else `PENSTOCK_METADATA_URL`).
    pub url: Option<String>,
    /// Connections to the database this gateway keeps at most.
    pub pool_size: usize,
    /// Seconds a metadata call waits for a connection before failing with 503: bounds how long
    /// requests hang while the database is unreachable.
    pub connect_timeout_secs: f64,
    /// Milliseconds a gateway keeps keypairs, users and buckets it read (postgres engine; 0
    /// turns the cache off): an admin change made through another gateway applies here within
    /// this time.
    pub cache_ms: u64,
    /// Seconds between a gateway's heartbeats to the engine.
    pub heartbeat_secs: f64,
    /// Seconds of silence after which a gateway counts as gone, and the others clean up the
    /// staging files and pending publishes it left. Longer than any stall a live gateway should
    /// survive: a gateway silent this long loses its in-flight writes.
    pub gone_after_secs: f64,
}

impl Default for MetadataConfig {
    fn default() -> Self {
        Self {
            engine: MetadataEngine::Rocksdb,
            url: None,
            pool_size: 16,
            connect_timeout_secs: 2.0,
            cache_ms: 500,
            heartbeat_secs: 5.0,
            gone_after_secs: 30.0,
        }
    }
}

impl MetadataConfig {
    /// The database URL: configured, else from `PENSTOCK_METADATA_URL`.
    pub fn url(&self) -> Option<String> {
        self.url
            .clone()
            .or_else(|| std::env::var("PENSTOCK_METADATA_URL").ok())
            .filter(|u| !u.is_empty())
    }
}

// The URL may carry a password: never print it.
impl std::fmt::Debug for MetadataConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MetadataConfig")
            .field("engine", &self.engine)
            .field("url", &self.url.as_ref().map(|_| "<set>"))
            .field("pool_size", &self.pool_size)
            .field("connect_timeout_secs", &self.connect_timeout_secs)
            .field("cache_ms", &self.cache_ms)
            .field("heartbeat_secs", &self.heartbeat_secs)
            .field("gone_after_secs", &self.gone_after_secs)
            .finish()
    }
}

/// How many client connections the S3 listener keeps, and how long it waits for them
/// (`[connections]`). The admin listener is not counted, so health checks still answer when the
/// S3 listener is full.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConnectionLimits {
    /// Most connections open at once; further clients wait in the kernel's accept queue until
    /// one closes. `0` (default) derives it from the open-file limit: a quarter of it, between
    /// 64 and 16384, so files and the metadata store keep descriptors to work with.
    pub max: usize,
    /// Seconds an HTTP/1 client has to send a complete request head, counted from the moment
    /// the gateway is ready for it: on a new connection, and after each response on a
    /// keep-alive connection (so it also closes idle HTTP/1 connections).
    pub header_read_timeout_secs: f64,
    /// Seconds without a request and without a byte either way after which a connection
    /// (HTTP/1 or HTTP/2) is closed gracefully.
    pub idle_timeout_secs: f64,
    /// Seconds a request body may stop arriving before the request fails with 400
    /// `RequestTimeout`. Slow uploads are fine as long as bytes keep coming.
    pub body_stall_timeout_secs: f64,
    /// Seconds between HTTP/2 PING frames that check an idle peer is alive; `0` turns them off.
    pub h2_keepalive_interval_secs: f64,
    /// Seconds to wait for a PING's answer before closing the HTTP/2 connection.
    pub h2_keepalive_timeout_secs: f64,
    /// Streams one HTTP/2 connection may have open at once.
    pub h2_max_concurrent_streams: u32,
    /// Largest request header section, in bytes (each field's name, value, `: ` and line end,
    /// as on the wire), that a request may carry; a larger one is refused with S3's 400
    /// `RequestHeaderSectionTooLarge` before anything reads it. `0` turns the check off. S3 allows
    /// 8 KiB.
    pub max_header_bytes: usize,
    /// Threads that serve connections, each running its own single-threaded scheduler; every
    /// connection stays on the thread it was given (see `conn_threads`). `0` (default): the
    /// shared work-stealing scheduler serves them.
    pub threads: usize,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            max: 0,
            header_read_timeout_secs: 20.0,
            idle_timeout_secs: 60.0,
            body_stall_timeout_secs: 60.0,
            h2_keepalive_interval_secs: 30.0,
            h2_keepalive_timeout_secs: 20.0,
            h2_max_concurrent_streams: 256,
            max_header_bytes: 8192,
            threads: 0,
        }
    }
}

/// How to answer a token the gateway cannot serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum DeclineMode {
    /// A 501 `RDMANotSupported` error (MinIO AIStor's convention; the only one safe for
    /// clients that look at the HTTP status alone, such as LMCache).
    #[default]
    Strict,
    /// GET: the object in the body with `x-amz-rdma-reply: 501`; PUT: the 501 error, so the
    /// client resends with a body (NVIDIA's aws-c-s3 fork, NooBaa).
    Fallback,
}

/// The `[rdma]` section.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RdmaConfig {
    /// Answer to tokens that cannot be served.
    pub decline: DeclineMode,
    /// Serve software transport (`swt1:`) tokens.
    pub software: bool,
    /// Let software tokens name any host. Off by default: a token may only point the gateway
    /// back at the address the request came from, so clients cannot make it connect elsewhere.
    pub software_any_host: bool,
    /// Serve DC tokens with the verbs transport (builds with the `verbs` feature only).
    pub verbs: bool,
    /// RDMA device for the verbs transport (default: the first one found).
    pub verbs_device: Option<String>,
    /// Port number on the device.
    pub verbs_port: u8,
    /// GID index of the port (RoCE v2 over IPv4 is commonly 3).
    pub verbs_gid_index: u8,
    /// The DC access key shared with clients (cuObject's default 0xffeeddcc).
    pub dc_key: u64,
    /// Transfer operations (4 MiB each) in flight per request, 1 to 16; unset: half the
    /// host's cores, at least 4 and at most 8 ([`RdmaConfig::effective_depth`]).
    pub depth: Option<usize>,
}

impl RdmaConfig {
    /// Operations in flight per request. Each operation reads its own range of the file, so
    /// one large object spreads over as many cores: on a 16-core host, 8 took a 1 GiB token GET
    /// into GPU memory from ~5 to ~9 GiB/s and 16 gave no more; on 2 cores, 8 gave nothing over
    /// 4 (docs/benchmarks.md, "Session 28"). Each costs a 4 MiB buffer while in flight.
    pub fn effective_depth(&self) -> usize {
        self.depth.unwrap_or_else(|| {
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            (cores / 2).clamp(penstock_rdma::transport::DEPTH, 8)
        })
    }
}

impl Default for RdmaConfig {
    fn default() -> Self {
        Self {
            decline: DeclineMode::Strict,
            software: true,
            software_any_host: false,
            verbs: true,
            verbs_device: None,
            verbs_port: 1,
            verbs_gid_index: 3,
            dc_key: 0xffee_ddcc,
            depth: None,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9000".parse().expect("valid literal"),
            data_dir: PathBuf::from("./penstock-data"),
            region: "us-east-1".to_owned(),
            default_object_ownership: "BucketOwnerEnforced".to_owned(),
            fsync: true,
            default_volume: "local".to_owned(),
            volumes: Vec::new(),
            shutdown_grace_secs: 30,
            master_key: None,
            admin_listen: "127.0.0.1:9001".parse().expect("valid literal"),
            admin_token: None,
            log_format: crate::telemetry::LogFormat::Text,
            virtual_host_domains: vec!["localhost".to_owned()],
            anonymous_domain: "default".to_owned(),
            rdma: RdmaConfig::default(),
            tls_cert: None,
            tls_key: None,
            tls_reload_interval_secs: 60.0,
            connections: ConnectionLimits::default(),
            metadata: MetadataConfig::default(),
            lifecycle_interval_secs: 3600.0,
            lifecycle_day_secs: 86400.0,
            heap_release_mib: 16,
            direct_reads: true,
            encrypted_at_rest: false,
            sse_c_over_http: false,
        }
    }
}

/// One named volume; `backend` selects the kind of storage behind it.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "backend", rename_all = "lowercase", deny_unknown_fields)]
pub enum VolumeConfig {
    /// A directory on a mounted file system.
    Posix {
        /// Volume name (`volume1` in `local:volume1`).
        name: String,
        /// Root directory of the volume.
        path: PathBuf,
        /// Payloads declaring at least this many bytes are staged with direct I/O (`O_DIRECT`,
        /// around the page cache); `0` turns direct writes off.
        #[serde(default = "default_direct_writes_from")]
        direct_writes_from: u64,
    },
    /// A directory on an NFS export, spoken to from user space (no kernel mount).
    Nfs(NfsVolumeConfig),
}

/// An NFS volume (`backend = "nfs"`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NfsVolumeConfig {
    /// Volume name.
    pub name: String,
    /// `nfs://server[:port]/export?version=3|4.1|4.2&nfsport=N&mountport=N&uid=N&gid=N`.
    pub url: String,
    /// Directory inside the export that holds the folders; created if missing.
    #[serde(default)]
    pub path: String,
    /// TCP connections (mounts) to the server.
    #[serde(default = "default_nfs_connections")]
    pub connections: usize,
    /// Largest READ/WRITE payload per RPC in bytes (the server's limits cap it further).
    #[serde(default = "default_nfs_io_size")]
    pub io_size: usize,
    /// RPCs in flight per object being read or written.
    #[serde(default = "default_nfs_depth")]
    pub depth: usize,
    /// Seconds idempotent calls are retried while the server is unreachable before the request
    /// fails with 503.
    #[serde(default = "default_nfs_retry_secs")]
    pub retry_secs: f64,
}

fn default_direct_writes_from() -> u64 {
    penstock_backends::posix::DEFAULT_DIRECT_WRITES_FROM
}
fn default_nfs_connections() -> usize {
    4
}
fn default_nfs_io_size() -> usize {
    1 << 20
}
fn default_nfs_depth() -> usize {
    8
}
fn default_nfs_retry_secs() -> f64 {
    3.0
}

impl NfsVolumeConfig {
    /// The backend's options.
    pub fn options(&self) -> penstock_backends::nfs::NfsOptions {
        let mut o = penstock_backends::nfs::NfsOptions::new(&self.url);
        o.path = self.path.clone();
        o.connections = self.connections;
        o.io_size = self.io_size;
        o.depth = self.depth;
        o.retry_budget = std::time::Duration::from_secs_f64(self.retry_secs);
        o
    }
}

impl VolumeConfig {
    /// The volume's name.
    pub fn name(&self) -> &str {
        match self {
            VolumeConfig::Posix { name, .. } => name,
            VolumeConfig::Nfs(n) => &n.name,
        }
    }
}

impl Config {
    /// Reads and validates a configuration file.
    pub fn load(path: &Path) -> anyhow::Result<Self> {
        let text = std::fs::read_to_string(path).map_err(|e| anyhow::anyhow!("cannot read {}: {e}", path.display()))?;
        let cfg: Config = toml::from_str(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        Ok(cfg)
    }

    /// The configured volumes, or the default `local` volume under the data dir.
    pub fn effective_volumes(&self) -> Vec<VolumeConfig> {
        if self.volumes.is_empty() {
            vec![VolumeConfig::Posix {
                name: "local".to_owned(),
                path: self.data_dir.join("volumes").join("local"),
                direct_writes_from: default_direct_writes_from(),
            }]
        } else {
            self.volumes.clone()
        }
    }

    /// Checks cross-field rules that serde cannot express.
    pub fn validate(&self) -> anyhow::Result<()> {
        for (name, v) in [
            ("lifecycle_interval_secs", self.lifecycle_interval_secs),
            ("lifecycle_day_secs", self.lifecycle_day_secs),
        ] {
            if !(v.is_finite() && v >= 0.01) {
                anyhow::bail!("{name} must be at least 0.01 seconds, not {v}");
            }
        }
        if let Some(d) = self.rdma.depth.filter(|d| !(1..=16).contains(d)) {
            // 16: the verbs transport's staging buffers; a deeper request would only wait for them.
            anyhow::bail!("rdma.depth must be between 1 and 16, not {d}");
        }
        if self.connections.threads > 1024 {
            anyhow::bail!("connections.threads is at most 1024, not {}", self.connections.threads);
        }
        let vols = self.effective_volumes();
        let mut names = std::collections::HashSet::new();
        for v in &vols {
            let name = v.name();
            if name.is_empty()
                || !name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                anyhow::bail!("volumes: invalid volume name {name:?} (letters, digits, '-' and '_')");
            }
            if !names.insert(name) {
                anyhow::bail!("volumes: duplicate volume name {name:?}");
            }
            if let VolumeConfig::Nfs(n) = v {
                if !n.url.starts_with("nfs://") {
                    anyhow::bail!("volumes: {name}: url must be nfs://server/export?... (got {:?})", n.url);
                }
                if n.connections == 0 || n.depth == 0 || n.io_size < 4096 {
                    anyhow::bail!("volumes: {name}: connections and depth must be >= 1, io_size >= 4096");
                }
                if !(n.retry_secs >= 0.0 && n.retry_secs <= 3600.0) {
                    anyhow::bail!("volumes: {name}: retry_secs must be between 0 and 3600");
                }
                if n.path.split('/').any(|s| s == "..") {
                    anyhow::bail!("volumes: {name}: path must not contain '..'");
                }
            }
        }
        if !names.contains(self.default_volume.as_str()) {
            anyhow::bail!(
                "default_volume: {:?} is not one of the configured volumes",
                self.default_volume
            );
        }
        if let Some(k) = &self.master_key {
            crate::secrets::MasterKey::from_base64(k).map_err(|e| anyhow::anyhow!("master_key: {e}"))?;
        }
        if self.region.is_empty() {
            anyhow::bail!("region: must not be empty");
        }
        if !crate::s3::OWNERSHIPS.contains(&self.default_object_ownership.as_str()) {
            anyhow::bail!(
                "default_object_ownership: {:?} is not one of {}",
                self.default_object_ownership,
                crate::s3::OWNERSHIPS.join(", ")
            );
        }
        let m = &self.metadata;
        if m.engine == MetadataEngine::Postgres && m.url().is_none() {
            anyhow::bail!("metadata: engine \"postgres\" needs url (or PENSTOCK_METADATA_URL)");
        }
        // Written so that NaN fails too.
        let positive = |x: f64| x > 0.0;
        if m.pool_size == 0 || !positive(m.connect_timeout_secs) || !positive(m.heartbeat_secs) {
            anyhow::bail!("metadata: pool_size, connect_timeout_secs and heartbeat_secs must be positive");
        }
        let long_enough = m.gone_after_secs >= 2.0 * m.heartbeat_secs;
        if !long_enough {
            anyhow::bail!("metadata: gone_after_secs must be at least twice heartbeat_secs");
        }
        match (&self.tls_cert, &self.tls_key) {
            (Some(_), None) => anyhow::bail!("tls_key: required when tls_cert is set"),
            (None, Some(_)) => anyhow::bail!("tls_cert: required when tls_key is set"),
            (Some(c), Some(k)) => crate::tls::check(c, k)?,
            (None, None) => {}
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.effective_volumes()[0].name(), "local");
    }

    #[test]
    fn rdma_depth_is_bounded() {
        let c: Config = toml::from_str("[rdma]\ndepth = 8\n").unwrap();
        c.validate().unwrap();
        assert_eq!(c.rdma.effective_depth(), 8);
        let auto = Config::default().rdma.effective_depth();
        assert!((4..=8).contains(&auto), "{auto}");
        for bad in ["0", "17"] {
            let c: Config = toml::from_str(&format!("[rdma]\ndepth = {bad}\n")).unwrap();
            assert!(c.validate().unwrap_err().to_string().contains("rdma.depth"), "{bad}");
        }
    }

    #[test]
    fn default_object_ownership_is_one_s3_knows() {
        for ok in ["BucketOwnerEnforced", "BucketOwnerPreferred", "ObjectWriter"] {
            let c: Config = toml::from_str(&format!("default_object_ownership = {ok:?}")).unwrap();
            c.validate().unwrap();
        }
        let c: Config = toml::from_str("default_object_ownership = \"Everyone\"").unwrap();
        assert!(c
            .validate()
            .unwrap_err()
            .to_string()
            .contains("default_object_ownership"));
    }

    #[test]
    fn connection_threads_are_bounded() {
        let c: Config = toml::from_str("[connections]\nthreads = 2\n").unwrap();
        c.validate().unwrap();
        assert_eq!(c.connections.threads, 2);
        let c: Config = toml::from_str("[connections]\nthreads = 5000\n").unwrap();
        assert!(c.validate().unwrap_err().to_string().contains("connections.threads"));
    }

    #[test]
    fn parses_volumes_and_rejects_unknown_keys() {
        let c: Config = toml::from_str(
            "listen = \"0.0.0.0:9100\"\ndefault_volume = \"v1\"\n[[volumes]]\nname = \"v1\"\nbackend = \"posix\"\npath = \"/srv/v1\"\n",
        )
        .unwrap();
        c.validate().unwrap();
        assert_eq!(c.listen.port(), 9100);
        assert!(matches!(
            c.volumes[0],
            VolumeConfig::Posix { direct_writes_from: f, .. } if f == 8 << 20
        ));
        let off: Config =
            toml::from_str("[[volumes]]\nname = \"v\"\nbackend = \"posix\"\npath = \"/x\"\ndirect_writes_from = 0\n")
                .unwrap();
        assert!(matches!(
            off.volumes[0],
            VolumeConfig::Posix {
                direct_writes_from: 0,
                ..
            }
        ));
        assert!(toml::from_str::<Config>("lissten = \"x\"").is_err());
        let typo = "[[volumes]]\nname = \"v\"\nbackend = \"posix\"\npth = \"/x\"\n";
        assert!(toml::from_str::<Config>(typo).is_err());
        let bad: Config = toml::from_str("default_volume = \"nope\"").unwrap();
        assert!(bad.validate().unwrap_err().to_string().contains("default_volume"));
    }

    #[test]
    fn parses_nfs_volumes() {
        let c: Config = toml::from_str(
            "default_volume = \"n\"\n[[volumes]]\nname = \"n\"\nbackend = \"nfs\"\nurl = \"nfs://10.0.0.5/export?version=3\"\npath = \"penstock\"\nconnections = 2\n",
        )
        .unwrap();
        c.validate().unwrap();
        let VolumeConfig::Nfs(n) = &c.volumes[0] else {
            panic!("nfs volume")
        };
        let o = n.options();
        assert_eq!(
            (o.connections, o.depth, o.io_size, o.path.as_str()),
            (2, 8, 1 << 20, "penstock")
        );
        let typo = "[[volumes]]\nname = \"n\"\nbackend = \"nfs\"\nurl = \"nfs://h/e\"\nconections = 2\n";
        assert!(toml::from_str::<Config>(typo).is_err());
        let bad: Config = toml::from_str(
            "default_volume = \"n\"\n[[volumes]]\nname = \"n\"\nbackend = \"nfs\"\nurl = \"http://h/e\"\n",
        )
        .unwrap();
        assert!(bad.validate().unwrap_err().to_string().contains("nfs://"));
    }
}
