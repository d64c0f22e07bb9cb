//! The NFS client library (nfs-rs) alone, reading and writing files the way the gateway's NFS
//! volume does: the baseline that `compat/bench/nfs.sh` compares the gateway against.
//!
//! PUT: CREATE + `nfs_rs::write_all` (8 UNSTABLE WRITEs of the negotiated size in flight, then
//! COMMIT). GET: LOOKUP + GETATTR + `BufferedFile::read_at` in 8 MiB blocks (concurrent READs).
//! Workers share a pool of mounts. Prints one JSON line like `penstock-bench --json`.
//!
//! cargo run --release -p penstock-backends --example nfs_bench -- \
//!   --url 'nfs://127.0.0.1/export?version=3&nfsport=N&mountport=N' --dir some/dir \
//!   --workload put|get --size 16M --count 32 --concurrency 8 [--duration 8] [--connections 4]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use nfs_rs::{BufferedFile, Mount};

struct Args {
    url: String,
    dir: String,
    workload: String,
    size: u64,
    count: u64,
    concurrency: usize,
    duration: Option<Duration>,
    connections: usize,
    prefix: String,
}

fn parse_size(s: &str) -> u64 {
    let (n, m) = match s.chars().last() {
        Some('K' | 'k') => (&s[..s.len() - 1], 1u64 << 10),
        Some('M' | 'm') => (&s[..s.len() - 1], 1 << 20),
        Some('G' | 'g') => (&s[..s.len() - 1], 1 << 30),
        _ => (s, 1),
    };
    n.parse::<u64>().expect("size") * m
}

fn args() -> Args {
    let mut a = Args {
        url: String::new(),
        dir: String::new(),
        workload: "get".into(),
        size: 16 << 20,
        count: 16,
        concurrency: 4,
        duration: None,
        connections: 4,
        prefix: "obj".into(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().unwrap_or_else(|| panic!("{k} needs a value"));
        match k.as_str() {
            "--url" => a.url = v(),
            "--dir" => a.dir = v(),
            "--workload" => a.workload = v(),
            "--size" => a.size = parse_size(&v()),
            "--count" => a.count = v().parse().expect("count"),
            "--concurrency" => a.concurrency = v().parse().expect("concurrency"),
            "--duration" => a.duration = Some(Duration::from_secs_f64(v().parse().expect("duration"))),
            "--connections" => a.connections = v().parse().expect("connections"),
            "--prefix" => a.prefix = v(),
            "--json" => {}
            _ => panic!("unknown argument {k}"),
        }
    }
    assert!(!a.url.is_empty(), "--url is required");
    a
}

async fn dir_handle(m: &dyn Mount, dir: &str) -> Bytes {
    let mut fh = m.getfh().await;
    for seg in dir.split('/').filter(|s| !s.is_empty()) {
        fh = match m.lookup(fh.clone(), seg).await {
            Ok(r) => r.fh,
            Err(e) if e.is_not_found() => m.mkdir(fh, seg, 0o755).await.expect("mkdir").fh,
            Err(e) => panic!("lookup {seg}: {e}"),
        };
    }
    fh
}

#[tokio::main]
async fn main() {
    let a = Arc::new(args());
    let mut mounts: Vec<Arc<dyn Mount>> = Vec::new();
    for _ in 0..a.connections.max(1) {
        mounts.push(Arc::from(nfs_rs::parse_url_and_mount(&a.url).await.expect("mount")));
    }
    let dir = dir_handle(&*mounts[0], &a.dir).await;
    let data = Bytes::from((0..a.size).map(|i| ((i * 2654435761) >> 13) as u8).collect::<Vec<u8>>());
    let next = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for w in 0..a.concurrency {
        let (a, m, dir, data) = (a.clone(), mounts[w % mounts.len()].clone(), dir.clone(), data.clone());
        let (next, bytes) = (next.clone(), bytes.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                match a.duration {
                    Some(d) if start.elapsed() >= d => break,
                    None if i >= a.count => break,
                    _ => {}
                }
                let name = format!("{}-{:08}", a.prefix, i % a.count);
                let t = Instant::now();
                if a.workload == "put" {
                    let f = m.create(dir.clone(), &name, Some(0o644)).await.expect("create");
                    nfs_rs::write_all(&*m, f.fh, 0, data.clone()).await.expect("write_all");
                    bytes.fetch_add(data.len() as u64, Ordering::Relaxed);
                } else {
                    let f = m.lookup(dir.clone(), &name).await.expect("lookup");
                    let size = m.getattr(f.fh.clone()).await.expect("getattr").filesize;
                    let file = BufferedFile::new(m.clone(), f.fh);
                    let mut off = 0;
                    while off < size {
                        let n = (size - off).min(8 << 20) as u32;
                        let got = file.read_at(off, n).await.expect("read");
                        assert!(!got.is_empty(), "short file");
                        off += got.len() as u64;
                    }
                    bytes.fetch_add(size, Ordering::Relaxed);
                }
                lat.push(t.elapsed().as_micros() as u64);
            }
            lat
        }));
    }
    let mut lat = Vec::new();
    for t in tasks {
        lat.extend(t.await.expect("worker"));
    }
    let secs = start.elapsed().as_secs_f64();
    lat.sort_unstable();
    let p = |q: f64| {
        if lat.is_empty() {
            0.0
        } else {
            lat[((lat.len() as f64 * q) as usize).min(lat.len() - 1)] as f64 / 1000.0
        }
    };
    println!(
        "{{\"workload\":\"{}\",\"transport\":\"nfs-rs\",\"object_size\":{},\"concurrency\":{},\"ops\":{},\"errors\":0,\"seconds\":{secs:.3},\"ops_per_sec\":{:.3},\"mib_per_sec\":{:.3},\"p50_ms\":{:.3},\"p99_ms\":{:.3},\"max_ms\":{:.3}}}",
        a.workload,
        a.size,
        a.concurrency,
        lat.len(),
        lat.len() as f64 / secs,
        bytes.load(Ordering::Relaxed) as f64 / secs / (1 << 20) as f64,
        p(0.5),
        p(0.99),
        lat.last().map_or(0.0, |m| *m as f64 / 1000.0)
    );
}
