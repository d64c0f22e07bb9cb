//! `penstock-bench`: a load generator for S3 endpoints.
//!
//! Runs one workload (PUT, GET, HEAD, LIST, DELETE or a mix) with fixed object size, count,
//! concurrency and optional duration; object contents are derived from a seed so every GET is
//! verified byte for byte. Reports throughput, ops/s, p50/p99/max latency and errors as a table
//! or JSON. `--anonymous` issues unsigned GETs, to measure plain HTTP servers (nginx) serving the
//! same files.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use clap::{Parser, ValueEnum};
use penstock_client::Client;
use rand::{Rng, SeedableRng};
use serde::Serialize;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, Serialize)]
#[serde(rename_all = "lowercase")]
enum Workload {
    Put,
    Get,
    Head,
    List,
    Delete,
    /// 70% GET, 20% PUT, 10% HEAD over the same objects.
    Mixed,
    /// Every operation a client makes, for soak runs: GET (verified) 40%, HEAD 15%, overwriting
    /// PUT of the same bytes 15%, LIST 10%, PUT then DELETE of a scratch key 10%, and a two-part
    /// multipart upload of a scratch key read back, verified and deleted 10%.
    Soak,
    /// No server: writes the PUT payloads as files under `--dir`, each made durable as a PUT
    /// must be (the file fsynced, and a new file's directory too): what the disk itself gives
    /// for the same bytes at the same concurrency, the reference for PUT throughput.
    DiskPut,
    /// Lists every key under `--prefix`, a page of 1,000 at a time (each page starting after the
    /// last key of the one before), and checks that exactly `--count` keys came back, in order:
    /// one operation is one whole listing.
    ListAll,
    /// No server: reads the directory `--dir`, stats every entry and sorts the names, checking
    /// that it holds `--count` entries: what any listing of those files must do at least once,
    /// the reference for `list-all`.
    DiskList,
}

#[derive(Parser, Debug)]
#[command(name = "penstock-bench", about = "S3 load generator with verified reads")]
struct Args {
    /// S3 endpoint, e.g. http://127.0.0.1:9000
    #[arg(long)]
    endpoint: String,
    #[arg(long, env = "AWS_ACCESS_KEY_ID", default_value = "")]
    access_key: String,
    #[arg(long, env = "AWS_SECRET_ACCESS_KEY", default_value = "", hide_env_values = true)]
    secret_key: String,
    /// Unsigned GETs (plain HTTP file servers).
    #[arg(long)]
    anonymous: bool,
    #[arg(long, default_value = "bench")]
    bucket: String,
    #[arg(long, value_enum)]
    workload: Workload,
    /// Object size: bytes, or with K/M/G suffix (binary).
    #[arg(long, default_value = "1M")]
    size: String,
    /// Number of distinct objects.
    #[arg(long, default_value_t = 16)]
    count: u64,
    /// Requests in flight.
    #[arg(long, default_value_t = 4)]
    concurrency: usize,
    /// Run for this many seconds, cycling over the objects (default: each object once).
    #[arg(long)]
    duration: Option<f64>,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    #[arg(long, default_value = "obj")]
    prefix: String,
    /// Create the bucket and upload the objects first (not measured), for get/head/mixed/delete.
    #[arg(long)]
    populate: bool,
    /// Skip byte-for-byte verification of GETs.
    #[arg(long)]
    no_verify: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// The directory `disk-put` writes into (created if missing).
    #[arg(long)]
    dir: Option<std::path::PathBuf>,
    /// GET and PUT through the x-amz-rdma-token protocol over the software transport: payloads
    /// move between the gateway and a registered client buffer (one window per worker).
    #[arg(long)]
    token: bool,
    /// Without --token: plain HTTP GETs copy each body into the same kind of registered client
    /// buffer, for a like-for-like comparison with --token.
    #[arg(long)]
    buffer: bool,
}

#[derive(Serialize)]
struct Report {
    workload: Workload,
    object_size: u64,
    objects: u64,
    concurrency: usize,
    ops: u64,
    errors: u64,
    seconds: f64,
    ops_per_sec: f64,
    mib_per_sec: f64,
    p50_ms: f64,
    p99_ms: f64,
    max_ms: f64,
    first_error: Option<String>,
    transport: &'static str,
}

fn parse_size(s: &str) -> anyhow::Result<u64> {
    let s = s.trim();
    let (n, m) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    Ok(n.parse::<u64>()? * m)
}

/// Object contents repeat a 64 KiB block derived from (seed, index): cheap to make and to check.
const BLOCK: usize = 64 * 1024;

fn block(seed: u64, index: u64) -> Vec<u8> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    let mut b = vec![0u8; BLOCK];
    rng.fill(&mut b[..]);
    b
}

fn object(seed: u64, index: u64, size: u64) -> Bytes {
    let b = block(seed, index);
    let mut out = Vec::with_capacity(size as usize);
    while out.len() < size as usize {
        let n = (size as usize - out.len()).min(BLOCK);
        out.extend_from_slice(&b[..n]);
    }
    Bytes::from(out)
}

struct Shared {
    args: Args,
    size: u64,
    client: Client,
    next: AtomicU64,
    deadline: Option<Instant>,
    bytes: AtomicU64,
    errors: AtomicU64,
    first_error: std::sync::Mutex<Option<String>>,
    payloads: Vec<Bytes>,
    /// The registered client buffer (`--token`, `--buffer`): `concurrency` windows of `size`.
    region: Option<penstock_client::rdma::Region>,
}

impl Shared {
    fn key(&self, i: u64) -> String {
        format!("{}-{i:08}", self.args.prefix)
    }

    /// The next operation index, or `None` when the run is over.
    fn take(&self) -> Option<u64> {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        match self.deadline {
            Some(d) if Instant::now() >= d => None,
            Some(_) => Some(n),
            // Without a duration, a listing workload lists once; the others touch each object once.
            None if matches!(self.args.workload, Workload::ListAll | Workload::DiskList) => (n == 0).then_some(n),
            None if n < self.args.count => Some(n),
            None => None,
        }
    }

    fn fail(&self, e: String) {
        self.errors.fetch_add(1, Ordering::Relaxed);
        let mut f = self.first_error.lock().unwrap();
        if f.is_none() {
            *f = Some(e);
        }
    }

    /// Checks that `data` is object `idx`.
    fn verify(&self, idx: u64, data: &[u8]) -> Result<(), String> {
        let expected = block(self.args.seed, idx % self.payloads.len() as u64);
        for (i, c) in data.chunks(BLOCK).enumerate() {
            if c != &expected[..c.len()] {
                return Err(format!("wrong bytes in block {i}"));
            }
        }
        Ok(())
    }

    /// GET or PUT against the worker's window of the registered buffer.
    async fn buffer_op(
        &self,
        region: &penstock_client::rdma::Region,
        idx: u64,
        slot: usize,
        w: Workload,
    ) -> Result<u64, String> {
        let a = &self.args;
        let key = self.key(idx);
        let e = |e: anyhow::Error| format!("{key}: {e:#}");
        let base = slot * self.size as usize;
        let token = region
            .token(base as u64, self.size)
            .ok_or("window outside the buffer")?;
        match w {
            Workload::Put if a.token => {
                region.write(base, &self.payloads[idx as usize % self.payloads.len()]);
                let r = self.client.put_from(&a.bucket, &key, &token, &[]).await.map_err(e)?;
                Ok(r.bytes)
            }
            _ if a.token => {
                let r = self.client.get_into(&a.bucket, &key, &token, None).await.map_err(e)?;
                if r.bytes != self.size {
                    return Err(format!("{key}: {} bytes, expected {}", r.bytes, self.size));
                }
                if !a.no_verify {
                    self.verify(idx, &region.to_vec(base, self.size as usize))?;
                }
                Ok(r.bytes)
            }
            _ => {
                let url = self.client.url(&a.bucket, Some(&key));
                let mut off = base;
                let end = base + self.size as usize;
                let (status, n) = self
                    .client
                    .get_streaming(&url, a.anonymous, |chunk| {
                        if off + chunk.len() > end {
                            anyhow::bail!("body longer than the object");
                        }
                        region.write(off, chunk);
                        off += chunk.len();
                        Ok(())
                    })
                    .await
                    .map_err(e)?;
                if !status.is_success() || n != self.size {
                    return Err(format!("{key}: HTTP {status}, {n} bytes"));
                }
                if !a.no_verify {
                    self.verify(idx, &region.to_vec(base, self.size as usize))?;
                }
                Ok(n)
            }
        }
    }

    async fn op(&self, n: u64, w: Workload, slot: usize) -> Result<u64, String> {
        let a = &self.args;
        let idx = n % a.count;
        let key = self.key(idx);
        let e = |e: anyhow::Error| format!("{key}: {e:#}");
        if let (Some(region), Workload::Get | Workload::Put) = (&self.region, w) {
            if a.token || w == Workload::Get {
                return self.buffer_op(region, idx, slot, w).await;
            }
        }
        match w {
            Workload::DiskPut => {
                let dir = a.dir.clone().ok_or("disk-put needs --dir")?;
                let body = self.payloads[idx as usize % self.payloads.len()].clone();
                tokio::task::spawn_blocking(move || {
                    write_durably(&dir, &key, &body).map_err(|e| format!("{key}: {e}"))
                })
                .await
                .map_err(|e| e.to_string())??;
                Ok(self.size)
            }
            Workload::Put => {
                let body = self.payloads[idx as usize % self.payloads.len()].clone();
                self.client.put_object(&a.bucket, &key, body).await.map_err(e)?;
                Ok(self.size)
            }
            Workload::Get => {
                // Verify while streaming: 64 readers of 1 GiB objects must not hold 64 GiB.
                let expected = block(a.seed, idx % self.payloads.len() as u64);
                let mut offset = 0usize;
                let verify = !a.no_verify;
                let url = self.client.url(&a.bucket, Some(&key));
                let (status, n) = self
                    .client
                    .get_streaming(&url, a.anonymous, |chunk| {
                        let mut rest = chunk;
                        while !rest.is_empty() {
                            let pos = offset % BLOCK;
                            let n = rest.len().min(BLOCK - pos);
                            if verify && rest[..n] != expected[pos..pos + n] {
                                anyhow::bail!("wrong bytes at offset {offset}");
                            }
                            rest = &rest[n..];
                            offset += n;
                        }
                        Ok(())
                    })
                    .await
                    .map_err(e)?;
                if !status.is_success() {
                    return Err(format!("{key}: HTTP {status}"));
                }
                if n != self.size {
                    return Err(format!("{key}: {n} bytes, expected {}", self.size));
                }
                Ok(n)
            }
            Workload::Head => match self.client.head_object(&a.bucket, &key).await.map_err(e)? {
                Some(_) => Ok(0),
                None => Err(format!("{key}: missing")),
            },
            Workload::ListAll => {
                let mut after: Option<String> = None;
                let mut listed = 0u64;
                loop {
                    let (keys, more) = self
                        .client
                        .list_page(&a.bucket, &a.prefix, after.as_deref(), 1000)
                        .await
                        .map_err(e)?;
                    if let Some(k) = keys.iter().zip(keys.iter().skip(1)).find(|(x, y)| x >= y) {
                        return Err(format!("keys out of order: {:?} before {:?}", k.0, k.1));
                    }
                    if let (Some(prev), Some(first)) = (&after, keys.first()) {
                        if first <= prev {
                            return Err(format!("page starts at {first:?}, not after {prev:?}"));
                        }
                    }
                    listed += keys.len() as u64;
                    match keys.last() {
                        Some(last) if more => after = Some(last.clone()),
                        _ => break,
                    }
                }
                if listed != a.count {
                    return Err(format!(
                        "listed {listed} keys under {:?}, expected {}",
                        a.prefix, a.count
                    ));
                }
                Ok(0)
            }
            Workload::DiskList => {
                let dir = a.dir.clone().ok_or("disk-list needs --dir")?;
                let found = tokio::task::spawn_blocking(move || list_dir(&dir))
                    .await
                    .map_err(|e| e.to_string())?
                    .map_err(|e| format!("disk-list: {e}"))?;
                if found != a.count {
                    return Err(format!("disk-list found {found} entries, expected {}", a.count));
                }
                Ok(0)
            }
            Workload::List => {
                self.client
                    .list_objects_v2(&a.bucket, &a.prefix, 1000)
                    .await
                    .map_err(e)?;
                Ok(0)
            }
            Workload::Delete => {
                self.client.delete_object(&a.bucket, &key).await.map_err(e)?;
                Ok(0)
            }
            Workload::Soak => match n % 20 {
                0..=7 => Box::pin(self.op(n, Workload::Get, slot)).await,
                8..=10 => Box::pin(self.op(n, Workload::Head, slot)).await,
                11..=13 => Box::pin(self.op(n, Workload::Put, slot)).await,
                14 | 15 => Box::pin(self.op(n, Workload::List, slot)).await,
                16 | 17 => {
                    let scratch = format!("{}-scratch-{n}", a.prefix);
                    let body = self.payloads[idx as usize % self.payloads.len()].clone();
                    let len = body.len() as u64;
                    self.client.put_object(&a.bucket, &scratch, body).await.map_err(e)?;
                    self.client.delete_object(&a.bucket, &scratch).await.map_err(e)?;
                    Ok(len)
                }
                _ => {
                    // Parts of 5 MiB and of the object size; the whole is checked on the way back.
                    let scratch = format!("{}-multipart-{n}", a.prefix);
                    let first = object(a.seed, n, 5 << 20);
                    let second = self.payloads[idx as usize % self.payloads.len()].clone();
                    self.client
                        .multipart_upload(&a.bucket, &scratch, &[first.clone(), second.clone()])
                        .await
                        .map_err(e)?;
                    let back = self.client.get_object(&a.bucket, &scratch).await.map_err(e)?;
                    if back.len() != first.len() + second.len()
                        || back[..first.len()] != first[..]
                        || back[first.len()..] != second[..]
                    {
                        return Err(format!("{scratch}: multipart object read back wrong"));
                    }
                    self.client.delete_object(&a.bucket, &scratch).await.map_err(e)?;
                    Ok(back.len() as u64 * 2)
                }
            },
            Workload::Mixed => {
                let w = match n % 10 {
                    0..=6 => Workload::Get,
                    7 | 8 => Workload::Put,
                    _ => Workload::Head,
                };
                Box::pin(self.op(n, w, slot)).await
            }
        }
    }
}

/// Creates the bucket unless it exists. Peers without owners (s3s-fs) answer BucketAlreadyExists
/// where Penstock answers BucketAlreadyOwnedByYou; for a benchmark both mean "ready".
async fn ensure_bucket(client: &Client, bucket: &str) -> anyhow::Result<()> {
    match client.create_bucket(bucket).await {
        Err(e) if e.to_string().contains("BucketAlreadyExists") => Ok(()),
        r => r,
    }
}

/// Writes `body` to `dir/name` over what is there (in place, as an overwrite that reuses the
/// file), then makes it durable: the file's bytes, and for a new file its directory entry.
fn write_durably(dir: &std::path::Path, name: &str, body: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let path = dir.join(name);
    let created = !path.exists();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)?;
    f.write_all(body)?;
    f.set_len(body.len() as u64)?;
    f.sync_all()?;
    if created {
        std::fs::File::open(dir)?.sync_all()?;
    }
    Ok(())
}

/// Reads `dir`, stats every entry and sorts the names: a listing's least work on the disk.
fn list_dir(dir: &std::path::Path) -> std::io::Result<u64> {
    let mut names = Vec::new();
    for ent in std::fs::read_dir(dir)? {
        let ent = ent?;
        let md = std::fs::symlink_metadata(ent.path())?;
        names.push((ent.file_name(), md.len()));
    }
    names.sort_unstable();
    Ok(names.len() as u64)
}

fn percentile(sorted: &[u64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let size = parse_size(&args.size)?;
    let client = Client::new(&args.endpoint, &args.access_key, &args.secret_key);
    // Distinct payloads for up to 64 objects; more objects reuse them (verification still exact,
    // since the index into the payloads is part of the check).
    let distinct = args.count.clamp(1, 64);
    let payloads: Vec<Bytes> = (0..distinct).map(|i| object(args.seed, i, size)).collect();

    if args.populate {
        ensure_bucket(&client, &args.bucket).await?;
        for i in 0..args.count {
            let key = format!("{}-{i:08}", args.prefix);
            client
                .put_object(&args.bucket, &key, payloads[(i % distinct) as usize].clone())
                .await?;
        }
    } else if args.workload == Workload::DiskPut {
        let dir = args
            .dir
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("disk-put needs --dir"))?;
        std::fs::create_dir_all(dir)?;
    } else if args.workload == Workload::Put && !args.anonymous {
        ensure_bucket(&client, &args.bucket).await?;
    }

    let workload = args.workload;
    let concurrency = args.concurrency;
    // The target must outlive the run; its registration is the client buffer.
    let mut _target = None;
    let region = if args.token || args.buffer {
        let t = penstock_client::rdma::SoftwareTarget::bind("127.0.0.1:0".parse()?).await?;
        let r = t.register(concurrency * size as usize);
        _target = Some(t);
        Some(r)
    } else {
        None
    };
    let transport = match (args.token, args.buffer) {
        (true, _) => "token-software",
        (false, true) => "http-into-buffer",
        _ => "http",
    };
    let shared = Arc::new(Shared {
        deadline: args.duration.map(|d| Instant::now() + Duration::from_secs_f64(d)),
        size,
        client,
        next: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        first_error: Default::default(),
        payloads,
        args,
        region,
    });
    let start = Instant::now();
    let mut tasks = Vec::new();
    for slot in 0..concurrency {
        let s = shared.clone();
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            while let Some(n) = s.take() {
                let t = Instant::now();
                match s.op(n, workload, slot).await {
                    Ok(b) => {
                        s.bytes.fetch_add(b, Ordering::Relaxed);
                        lat.push(t.elapsed().as_micros() as u64);
                    }
                    Err(e) => s.fail(e),
                }
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await?);
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let ops = lat.len() as u64;
    let bytes = shared.bytes.load(Ordering::Relaxed);
    let report = Report {
        workload,
        object_size: size,
        objects: shared.args.count,
        concurrency,
        ops,
        errors: shared.errors.load(Ordering::Relaxed),
        seconds: secs,
        ops_per_sec: ops as f64 / secs,
        mib_per_sec: bytes as f64 / secs / (1 << 20) as f64,
        p50_ms: percentile(&lat, 0.50),
        p99_ms: percentile(&lat, 0.99),
        max_ms: lat.last().map_or(0.0, |m| *m as f64 / 1000.0),
        first_error: shared.first_error.lock().unwrap().clone(),
        transport,
    };
    if shared.args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "{:<7} {:<16} {:>10} {:>6} {:>4} | {:>8} ops {:>10.1} ops/s {:>9.1} MiB/s | p50 {:>8.2} ms p99 {:>8.2} ms max {:>8.2} ms | errors {}",
            format!("{:?}", report.workload).to_lowercase(),
            report.transport,
            size,
            report.objects,
            report.concurrency,
            report.ops,
            report.ops_per_sec,
            report.mib_per_sec,
            report.p50_ms,
            report.p99_ms,
            report.max_ms,
            report.errors
        );
        if let Some(e) = &report.first_error {
            println!("first error: {e}");
        }
    }
    if report.errors > 0 {
        std::process::exit(2);
    }
    Ok(())
}
