//! Prometheus metrics, served as text at `/metrics` on the admin listener.
//!
//! Counters and histograms are updated on the request path; values that live in the metadata
//! store (open multipart uploads, quota usage, RocksDB internals) are read when scraped.

use std::sync::atomic::AtomicU64;
use std::time::Duration;

use std::fmt::Write as _;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::Registry;

use penstock_backends::IoObserver;
use penstock_metadata::Metadata;

/// How payload bytes travelled.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum DataPath {
    /// In HTTP request and response bodies.
    Http,
    /// By RDMA from or to the client's registered memory.
    Rdma,
    /// By the software (TCP) transport of the RDMA token protocol.
    Software,
}

/// Direction of payload bytes, seen from the gateway.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Direction {
    /// Client to storage (PUT, UploadPart).
    In,
    /// Storage to client (GET).
    Out,
}

impl EncodeLabelValue for DataPath {
    fn encode(&self, e: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        e.write_str(match self {
            DataPath::Http => "http",
            DataPath::Rdma => "rdma",
            DataPath::Software => "software",
        })
    }
}

impl EncodeLabelValue for Direction {
    fn encode(&self, e: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        e.write_str(match self {
            Direction::In => "in",
            Direction::Out => "out",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    operation: String,
    status: u16,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OperationLabel {
    operation: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BytesLabels {
    path: DataPath,
    direction: Direction,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct CodeLabel {
    code: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BackendLabels {
    volume: String,
    op: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenLabel {
    kind: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ScopeLabel {
    scope: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PropertyLabel {
    property: String,
}

fn latency_buckets() -> impl Iterator<Item = f64> {
    // 100 µs .. ~52 s
    exponential_buckets(0.0001, 2.0, 20)
}

/// All metrics of one gateway process.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Family<OperationLabel, Histogram>,
    bytes: Family<BytesLabels, Counter>,
    in_flight: Gauge,
    errors: Family<CodeLabel, Counter>,
    backend: Family<BackendLabels, Histogram>,
    multipart_open: Gauge,
    quota_usage: Family<ScopeLabel, Gauge<u64, AtomicU64>>,
    quota_limit: Family<ScopeLabel, Gauge<u64, AtomicU64>>,
    rocksdb: Family<PropertyLabel, Gauge<u64, AtomicU64>>,
    rdma_declines: Family<TokenLabel, Counter>,
    rdma_errors: Family<TokenLabel, Counter>,
    connections_open: Gauge,
    connections_closed: Family<ReasonLabel, Counter>,
    connections_deferred: Counter,
    direct_reads: Counter,
    lifecycle_actions: Family<ActionLabel, Counter>,
    lifecycle_bytes_freed: Counter,
    lifecycle_last_run: Gauge<i64, std::sync::atomic::AtomicI64>,
}

/// What a lifecycle rule did.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum LifecycleAction {
    /// A current version expired (deleted, or hidden by a marker in a versioned bucket).
    Expired,
    /// A noncurrent version removed.
    NoncurrentExpired,
    /// A delete marker with nothing behind it removed.
    MarkerRemoved,
    /// An incomplete multipart upload aborted.
    UploadAborted,
    /// A current or noncurrent version moved to another storage class.
    Transitioned,
}

impl EncodeLabelValue for LifecycleAction {
    fn encode(&self, e: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        e.write_str(match self {
            LifecycleAction::Expired => "expired",
            LifecycleAction::NoncurrentExpired => "noncurrent_expired",
            LifecycleAction::MarkerRemoved => "delete_marker_removed",
            LifecycleAction::UploadAborted => "upload_aborted",
            LifecycleAction::Transitioned => "transitioned",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ActionLabel {
    action: LifecycleAction,
}

/// Why the gateway closed a connection itself.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum CloseReason {
    /// The request head did not arrive in time (HTTP/1), including idle keep-alive connections.
    HeaderTimeout,
    /// No request and no byte either way for the idle timeout.
    Idle,
    /// A request body stopped arriving for the stall timeout.
    BodyStall,
    /// A connection with nothing in flight stayed silent after being asked to close.
    Forced,
}

impl EncodeLabelValue for CloseReason {
    fn encode(&self, e: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        e.write_str(match self {
            CloseReason::HeaderTimeout => "header_timeout",
            CloseReason::Idle => "idle",
            CloseReason::BodyStall => "body_stall",
            CloseReason::Forced => "forced",
        })
    }
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: CloseReason,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("penstock");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "s3_requests",
            "S3 requests by operation and HTTP status",
            requests.clone(),
        );
        let latency = Family::<OperationLabel, Histogram>::new_with_constructor(|| Histogram::new(latency_buckets()));
        registry.register(
            "s3_request_duration_seconds",
            "S3 request latency by operation, until the response head",
            latency.clone(),
        );
        let bytes = Family::<BytesLabels, Counter>::default();
        registry.register(
            "payload_bytes",
            "Object payload bytes moved, by data path and direction",
            bytes.clone(),
        );
        let in_flight = Gauge::default();
        registry.register("s3_requests_in_flight", "S3 requests being served", in_flight.clone());
        let errors = Family::<CodeLabel, Counter>::default();
        registry.register("s3_errors", "S3 error responses by error code", errors.clone());
        let backend = Family::<BackendLabels, Histogram>::new_with_constructor(|| Histogram::new(latency_buckets()));
        registry.register(
            "backend_io_duration_seconds",
            "Latency of storage operations by volume and operation",
            backend.clone(),
        );
        let multipart_open = Gauge::default();
        registry.register(
            "multipart_uploads_open",
            "Multipart uploads started and not completed or aborted",
            multipart_open.clone(),
        );
        let quota_usage = Family::<ScopeLabel, Gauge<u64, AtomicU64>>::default();
        registry.register(
            "quota_usage_bytes",
            "Bytes charged to each quota scope",
            quota_usage.clone(),
        );
        let quota_limit = Family::<ScopeLabel, Gauge<u64, AtomicU64>>::default();
        registry.register(
            "quota_limit_bytes",
            "Byte limit of each quota scope that has one",
            quota_limit.clone(),
        );
        let rocksdb = Family::<PropertyLabel, Gauge<u64, AtomicU64>>::default();
        registry.register(
            "rocksdb_property",
            "Selected RocksDB properties of the metadata store",
            rocksdb.clone(),
        );
        let rdma_declines = Family::<TokenLabel, Counter>::default();
        registry.register(
            "rdma_declines",
            "Requests with an x-amz-rdma-token this gateway could not serve, by token kind",
            rdma_declines.clone(),
        );
        let rdma_errors = Family::<TokenLabel, Counter>::default();
        registry.register(
            "rdma_transfer_errors",
            "Token transfers that failed midway, by token kind",
            rdma_errors.clone(),
        );
        let connections_open = Gauge::default();
        registry.register(
            "connections_open",
            "Client connections open on the S3 listener",
            connections_open.clone(),
        );
        let connections_closed = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "connections_closed_by_gateway",
            "Connections the gateway closed because of a timeout, by reason",
            connections_closed.clone(),
        );
        let connections_deferred = Counter::default();
        registry.register(
            "connections_deferred",
            "Times the accept loop waited because max_connections were open or accept failed",
            connections_deferred.clone(),
        );
        let direct_reads = Counter::default();
        registry.register(
            "direct_reads",
            "GetObject and HeadObject requests answered without s3s's generic dispatch (s3/direct.rs)",
            direct_reads.clone(),
        );
        let lifecycle_actions = Family::<ActionLabel, Counter>::default();
        registry.register(
            "lifecycle_actions",
            "Objects, versions, delete markers and uploads the lifecycle rules removed, by action",
            lifecycle_actions.clone(),
        );
        let lifecycle_bytes_freed = Counter::default();
        registry.register(
            "lifecycle_freed_bytes",
            "Bytes the lifecycle rules freed",
            lifecycle_bytes_freed.clone(),
        );
        let lifecycle_last_run = Gauge::<i64, std::sync::atomic::AtomicI64>::default();
        registry.register(
            "lifecycle_last_run_timestamp_seconds",
            "When this gateway last finished applying the lifecycle rules (Unix seconds)",
            lifecycle_last_run.clone(),
        );
        Self {
            registry,
            requests,
            latency,
            bytes,
            in_flight,
            errors,
            backend,
            multipart_open,
            quota_usage,
            quota_limit,
            rocksdb,
            rdma_declines,
            rdma_errors,
            connections_open,
            connections_closed,
            connections_deferred,
            direct_reads,
            lifecycle_actions,
            lifecycle_bytes_freed,
            lifecycle_last_run,
        }
    }

    /// A lifecycle rule removed something of `bytes` bytes (0 when nothing was freed).
    pub fn lifecycle(&self, action: LifecycleAction, bytes: u64) {
        self.lifecycle_actions.get_or_create(&ActionLabel { action }).inc();
        self.lifecycle_bytes_freed.inc_by(bytes);
    }

    /// A lifecycle pass ended at Unix second `at`.
    pub fn lifecycle_ran(&self, at: i64) {
        self.lifecycle_last_run.set(at);
    }

    /// Open client connections (S3 listener).
    pub fn connections_open(&self) -> &Gauge {
        &self.connections_open
    }

    /// Counts a connection the gateway closed for `reason`.
    pub fn connection_closed(&self, reason: CloseReason) {
        self.connections_closed.get_or_create(&ReasonLabel { reason }).inc();
    }

    /// Counts a wait of the accept loop.
    pub fn connection_deferred(&self) {
        self.connections_deferred.inc();
    }

    /// Counts a read answered by `s3/direct.rs`.
    pub fn direct_read(&self) {
        self.direct_reads.inc();
    }

    /// Counts a declined token of kind `kind` (`dc`, `software`).
    pub fn rdma_decline(&self, kind: &str) {
        self.rdma_declines
            .get_or_create(&TokenLabel { kind: kind.to_owned() })
            .inc();
    }

    /// Counts a failed token transfer.
    pub fn rdma_error(&self, kind: &str) {
        self.rdma_errors
            .get_or_create(&TokenLabel { kind: kind.to_owned() })
            .inc();
    }

    /// Counts one finished request.
    pub fn request(&self, operation: &str, status: u16, elapsed: Duration, error_code: Option<&str>) {
        self.requests
            .get_or_create(&RequestLabels {
                operation: operation.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&OperationLabel {
                operation: operation.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
        if let Some(code) = error_code {
            self.errors.get_or_create(&CodeLabel { code: code.to_owned() }).inc();
        }
    }

    /// The in-flight request gauge.
    pub fn in_flight(&self) -> &Gauge {
        &self.in_flight
    }

    /// Counts payload bytes.
    pub fn payload(&self, path: DataPath, direction: Direction, n: u64) {
        self.bytes.get_or_create(&BytesLabels { path, direction }).inc_by(n);
    }

    /// Renders the text exposition, refreshing store-derived values first.
    pub async fn render(&self, meta: &dyn Metadata) -> String {
        if let Ok(n) = meta.count_uploads().await {
            self.multipart_open.set(n as i64);
        }
        if let Ok(quotas) = meta.quotas().await {
            for q in quotas {
                let l = ScopeLabel {
                    scope: q.scope.to_string(),
                };
                self.quota_usage.get_or_create(&l).set(q.usage_bytes);
                if let Some(limit) = q.limit_bytes {
                    self.quota_limit.get_or_create(&l).set(limit);
                }
            }
        }
        for (name, v) in meta.properties() {
            self.rocksdb
                .get_or_create(&PropertyLabel {
                    property: name.to_owned(),
                })
                .set(v);
        }
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry).expect("writing to a String");
        out
    }
}

impl IoObserver for Metrics {
    fn observe(&self, volume: &str, op: &'static str, elapsed: Duration) {
        self.backend
            .get_or_create(&BackendLabels {
                volume: volume.to_owned(),
                op: op.to_owned(),
            })
            .observe(elapsed.as_secs_f64());
    }
}
