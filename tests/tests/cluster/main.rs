//! Three gateways over one shared POSIX volume and one PostgreSQL database (issue #18): what one
//! gateway acknowledges, every other serves at once; what the engine must make atomic (quota,
//! bucket names, completing an upload) holds across gateways; admin changes reach every gateway
//! within the documented bound; a database outage fails requests fast and heals by itself.

use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use penstock_tests::cluster::Cluster;
use penstock_tests::{code, find_folder, get, keys, pattern, put, status, Upload};
use serde_json::Value;

mod power_loss;
mod races;

/// How long an admin change may take to reach every gateway (docs/scale-out.md). Gateways keep
/// no tenancy cache, so it is one database round trip; the bound leaves room for a slow machine.
const PROPAGATION: Duration = Duration::from_secs(1);

fn s(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_else(|| panic!("{k} missing in {v}")).to_owned()
}

/// A user of the default domain with a keypair, and a client for it on each gateway.
fn tenant(c: &Cluster, name: &str) -> (String, String, Vec<Client>) {
    let u = c.gw(0).admin(&["user", "create", "--domain", "default", name]);
    let id = s(&u, "id");
    let kp = c.gw(1).admin(&["keypair", "create", &id]);
    let (ak, sk) = (s(&kp, "access_key"), s(&kp, "secret_key"));
    let clients = c.gateways.iter().map(|g| g.client_with(&ak, &sk)).collect();
    (id, ak, clients)
}

/// Folder directories on the shared volume (`<scope>/<aa>/<bb>/<rest>`).
fn folders(c: &Cluster) -> usize {
    fn walk(p: &std::path::Path, depth: usize) -> usize {
        let Ok(rd) = std::fs::read_dir(p) else { return 0 };
        let dirs = rd.flatten().filter(|e| e.path().is_dir() && !e.file_name().to_string_lossy().starts_with('.'));
        if depth == 3 {
            return dirs.count();
        }
        dirs.map(|e| walk(&e.path(), depth + 1)).sum()
    }
    walk(&c.volume_dir(), 0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_gateway_serves_what_another_acknowledged() {
    let c = Cluster::start(3);
    let (a, b, z) = (c.gw(0).client(), c.gw(1).client(), c.gw(2).client());
    a.create_bucket().bucket("shared").send().await.unwrap();
    b.head_bucket().bucket("shared").send().await.unwrap();
    a.put_object()
        .bucket("shared")
        .key("ckpt/model.bin")
        .content_type("application/x-one")
        .metadata("writer", "a")
        .body(ByteStream::from(pattern(1, 300_000)))
        .send()
        .await
        .unwrap();
    for other in [&b, &z] {
        assert_eq!(get(other, "shared", "ckpt/model.bin").await, pattern(1, 300_000));
        assert_eq!(keys(other, "shared").await, ["ckpt/model.bin"]);
    }
    // An overwrite on B: A and C never serve the old ETag, size or metadata afterwards.
    let second = pattern(2, 123_457);
    let put2 = b
        .put_object()
        .bucket("shared")
        .key("ckpt/model.bin")
        .content_type("application/x-two")
        .metadata("writer", "b")
        .body(ByteStream::from(second.clone()))
        .send()
        .await
        .unwrap();
    for other in [&a, &z] {
        let h = other.head_object().bucket("shared").key("ckpt/model.bin").send().await.unwrap();
        assert_eq!(h.e_tag(), put2.e_tag());
        assert_eq!(h.content_length(), Some(second.len() as i64));
        assert_eq!(h.content_type(), Some("application/x-two"));
        assert_eq!(h.metadata().and_then(|m| m.get("writer")).map(String::as_str), Some("b"));
        assert_eq!(get(other, "shared", "ckpt/model.bin").await, second);
    }
    z.delete_object().bucket("shared").key("ckpt/model.bin").send().await.unwrap();
    let e = a.head_object().bucket("shared").key("ckpt/model.bin").send().await.unwrap_err();
    assert_eq!(status(&e), 404);
    // Tagging and copies written on one gateway are read on another.
    put(&a, "shared", "src", b"copy me").await;
    b.copy_object().bucket("shared").key("dst").copy_source("shared/src").send().await.unwrap();
    assert_eq!(get(&z, "shared", "dst").await, b"copy me");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_bucket_name_is_claimed_once_across_gateways() {
    let c = Cluster::start(3);
    let users: Vec<_> = (0..3).map(|i| tenant(&c, &format!("claimant{i}"))).collect();
    let before = folders(&c);
    let tasks: Vec<_> = users
        .iter()
        .enumerate()
        .map(|(i, (_, _, clients))| {
            let cl = clients[i].clone();
            tokio::spawn(async move { cl.create_bucket().bucket("contested").send().await })
        })
        .collect();
    let mut won = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => won += 1,
            Err(e) => assert_eq!(code(&e), "BucketAlreadyExists"),
        }
    }
    assert_eq!(won, 1, "exactly one CreateBucket wins");
    assert_eq!(folders(&c), before + 1, "the losers' folders are gone");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quota_holds_across_gateways() {
    let c = Cluster::start(3);
    let (id, _, clients) = tenant(&c, "quotaed");
    let scope = format!("user:{id}");
    clients[0].create_bucket().bucket("quota").send().await.unwrap();
    const SIZE: usize = 100 << 10;
    c.gw(2).admin(&["quota", "set", &scope, &(1u64 << 20).to_string()]);
    let tasks: Vec<_> = (0..30)
        .map(|i| {
            let cl = clients[i % 3].clone();
            tokio::spawn(async move {
                let body = ByteStream::from(pattern(i as u64, SIZE));
                cl.put_object().bucket("quota").key(format!("obj-{i}")).body(body).send().await
            })
        })
        .collect();
    let mut stored = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => stored += 1,
            Err(e) => assert_eq!((status(&e), code(&e).as_str()), (403, "QuotaExceeded")),
        }
    }
    assert_eq!(stored, (1 << 20) / SIZE, "exactly the writes that fit");
    assert_eq!(keys(&clients[1], "quota").await.len(), stored);
    let tracked = c.gw(1).admin(&["quota", "show", &scope])["usage_bytes"].as_u64().unwrap();
    assert_eq!(tracked, (stored * SIZE) as u64);
    let rescanned = c.gw(0).admin(&["quota", "rescan", &scope])["usage_bytes"].as_u64().unwrap();
    assert_eq!(rescanned, tracked, "usage equals a rescan");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_multipart_upload_spans_gateways() {
    let c = Cluster::start(3);
    let cl: Vec<Client> = c.gateways.iter().map(|g| g.client()).collect();
    cl[0].create_bucket().bucket("mpu").send().await.unwrap();
    let parts = [pattern(1, 5 << 20), pattern(2, 5 << 20), pattern(3, 777)];
    let (started, etags) = spread_upload(&cl, "mpu", "big", &parts).await;
    let listed = Upload::of(&cl[1], "mpu", "big", &started.id).list_parts().await;
    assert_eq!(listed.parts().len(), 3);
    Upload::of(&cl[2], "mpu", "big", &started.id).complete(&etags).await;
    assert_eq!(get(&cl[0], "mpu", "big").await, parts.concat());
    let e = Upload::of(&cl[1], "mpu", "big", &started.id).try_list_parts().await.unwrap_err();
    assert_eq!(code(&e), "NoSuchUpload", "the upload is gone for every gateway");
}

/// Starts an upload of `bucket/key` on the first gateway and sends part i + 1 through gateway
/// i: answers the upload and the (part number, ETag) list to complete it with.
async fn spread_upload(cl: &[Client], bucket: &str, key: &str, parts: &[Vec<u8>]) -> (Upload, Vec<(i32, String)>) {
    let started = Upload::start(&cl[0], bucket, key).await;
    let mut etags = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        let on = Upload::of(&cl[i % cl.len()], bucket, key, &started.id);
        etags.push((i as i32 + 1, on.part(i as i32 + 1, p.clone()).await));
    }
    (started, etags)
}

/// Waits until `check` holds, for at most [`PROPAGATION`]; answers how long it took.
async fn within_bound<F, Fut>(what: &str, mut check: F) -> Duration
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let t = Instant::now();
    loop {
        if check().await {
            return t.elapsed();
        }
        assert!(t.elapsed() < PROPAGATION, "{what} did not reach every gateway within {PROPAGATION:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn admin_changes_reach_every_gateway_within_the_bound() {
    let c = Cluster::start(3);
    let (id, ak, clients) = tenant(&c, "subject");
    let admin = c.gw(0).client();
    admin.create_bucket().bucket("granted").send().await.unwrap();
    put(&admin, "granted", "k", b"v").await;
    c.gw(0).admin(&["vfolder", "grant", "default", "granted", &id, "ro"]);
    clients[1].create_bucket().bucket("own").send().await.unwrap();
    for cl in &clients {
        assert_eq!(get(cl, "granted", "k").await, b"v");
    }

    // A revoked grant.
    c.gw(0).admin(&["vfolder", "revoke", "default", "granted", &id]);
    within_bound("a revoked grant", || async {
        for cl in &clients {
            if cl.get_object().bucket("granted").key("k").send().await.is_ok() {
                return false;
            }
        }
        true
    })
    .await;

    // A lowered quota.
    let scope = format!("user:{id}");
    c.gw(1).admin(&["quota", "set", &scope, "10"]);
    within_bound("a lowered quota", || async {
        for cl in &clients {
            let body = ByteStream::from(vec![0u8; 100]);
            match cl.put_object().bucket("own").key("big").body(body).send().await {
                Err(e) if code(&e) == "QuotaExceeded" => {}
                _ => return false,
            }
        }
        true
    })
    .await;

    // A deleted bucket.
    c.gw(2).admin(&["vfolder", "delete", "default", "own"]);
    within_bound("a deleted bucket", || async {
        for cl in &clients {
            match cl.head_bucket().bucket("own").send().await {
                Err(e) if status(&e) == 404 => {}
                _ => return false,
            }
        }
        true
    })
    .await;

    // A disabled keypair.
    c.gw(2).admin(&["keypair", "disable", &ak]);
    within_bound("a disabled keypair", || async {
        for cl in &clients {
            match cl.list_buckets().send().await {
                Err(e) if status(&e) == 403 => {}
                _ => return false,
            }
        }
        true
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_outage_fails_fast_and_heals() {
    let mut c = Cluster::start(3);
    let cl: Vec<Client> = c.gateways.iter().map(|g| g.client()).collect();
    cl[0].create_bucket().bucket("outage").send().await.unwrap();
    let mut acknowledged = Vec::new();
    for i in 0..6 {
        let key = format!("before-{i}");
        put(&cl[i % 3], "outage", &key, &pattern(i as u64, 10_000)).await;
        acknowledged.push((key, i as u64));
    }
    c.pg.stop();
    for (i, g) in cl.iter().enumerate() {
        let t = Instant::now();
        let body = ByteStream::from(pattern(99, 10_000));
        let e = g.put_object().bucket("outage").key(format!("during-{i}")).body(body).send().await.unwrap_err();
        assert_eq!((status(&e), code(&e).as_str()), (503, "ServiceUnavailable"));
        let e = g.get_object().bucket("outage").key("before-0").send().await.unwrap_err();
        assert_eq!(status(&e), 503);
        // The SDK retries a 503 a few times; each try fails within the pool's wait bound.
        assert!(t.elapsed() < Duration::from_secs(30), "took {:?}", t.elapsed());
        let ready = ready_of(&c, i);
        assert_eq!(ready["checks"]["metadata"], "unavailable", "{ready}");
    }
    c.pg.restart();
    let t = Instant::now();
    loop {
        let body = ByteStream::from(pattern(100, 10_000));
        if cl[1].put_object().bucket("outage").key("after").body(body).send().await.is_ok() {
            break;
        }
        assert!(t.elapsed() < Duration::from_secs(20), "not healed after the restart");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for (key, seed) in &acknowledged {
        assert_eq!(get(&cl[2], "outage", key).await, pattern(*seed, 10_000), "{key}");
    }
    let listed = keys(&cl[0], "outage").await;
    assert!(!listed.iter().any(|k| k.starts_with("during-")), "a refused write is not an object: {listed:?}");
}

/// Writers on all three gateways keep going while PostgreSQL restarts under them: every request
/// ends (success or 503) within a bound, every acknowledged write is there afterwards with its
/// bytes, and writes succeed again without any gateway being restarted.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_restart_under_load_loses_no_acknowledged_write() {
    let mut c = Cluster::start(3);
    let cl: Vec<Client> = c.gateways.iter().map(|g| g.client()).collect();
    cl[0].create_bucket().bucket("restart").send().await.unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers: Vec<_> = (0..6u64)
        .map(|w| {
            let (cl, stop) = (cl[w as usize % 3].clone(), stop.clone());
            tokio::spawn(async move {
                let (mut acked, mut refused) = (Vec::new(), Vec::new());
                let mut i = 0u64;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let (key, seed) = (format!("w{w}/{i}"), w * 100_000 + i);
                    let t = Instant::now();
                    let body = ByteStream::from(pattern(seed, 20_000));
                    match cl.put_object().bucket("restart").key(&key).body(body).send().await {
                        Ok(_) => acked.push((key, seed)),
                        Err(e) => refused.push((status(&e), code(&e))),
                    }
                    assert!(t.elapsed() < Duration::from_secs(30), "a request hung for {:?}", t.elapsed());
                    i += 1;
                }
                (acked, refused)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(1)).await;
    c.pg.restart();
    let restarted = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut acked, mut refused) = (Vec::new(), Vec::new());
    for w in writers {
        let (a, r) = w.await.unwrap();
        acked.extend(a);
        refused.extend(r);
    }
    for (st, code) in &refused {
        assert_eq!((*st, code.as_str()), (503, "ServiceUnavailable"), "a refusal during the restart");
    }
    assert!(acked.len() > 12, "too few writes succeeded: {} (refused {})", acked.len(), refused.len());
    let after = cl[1].put_object().bucket("restart").key("after").body(ByteStream::from_static(b"a")).send().await;
    assert!(after.is_ok(), "not healed {:?} after the restart", restarted.elapsed());
    for (key, seed) in &acked {
        assert_eq!(get(&cl[(*seed as usize) % 3], "restart", key).await, pattern(*seed, 20_000), "{key}");
    }
}

/// The admin API's readiness answer of gateway `i` (a 503 when not ready).
fn ready_of(c: &Cluster, i: usize) -> Value {
    let out = c.gw(i).admin_raw(&["ready"]);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("ready: {}", String::from_utf8_lossy(&out.stdout)))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_gateways_leftovers_go_and_live_writes_stay() {
    let mut c = Cluster::start(3);
    let cl: Vec<Client> = c.gateways.iter().map(|g| g.client()).collect();
    cl[0].create_bucket().bucket("crash").send().await.unwrap();
    put(&cl[0], "crash", "marker", b"m").await;
    let tmp = find_folder(&c.volume_dir(), "marker").join(".penstock/tmp");
    let presign = || aws_sdk_s3::presigning::PresigningConfig::expires_in(Duration::from_secs(600)).unwrap();
    // PUTs whose bodies are still arriving: one on the gateway that will die, one on a survivor.
    let mut conns = Vec::new();
    for (i, key) in [(1, "half"), (0, "slow")] {
        let url = cl[i].put_object().bucket("crash").key(key).presigned(presign()).await.unwrap();
        let mut conn = penstock_tests::raw::Conn::open(c.gw(i));
        conn.send_head(&url, &[("Content-Length", (8 << 20).to_string())]);
        conn.send(&pattern(5, 4 << 20));
        conns.push(conn);
    }
    let instance = |i: usize| ready_of(&c, i)["checks"]["instance"].as_str().unwrap().to_owned();
    let (dying, surviving) = (instance(1), instance(0));
    let staged = |who: &str| -> usize {
        std::fs::read_dir(&tmp)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&format!("{who}.")))
            .count()
    };
    let t = Instant::now();
    while staged(&dying) == 0 || staged(&surviving) == 0 {
        assert!(t.elapsed() < Duration::from_secs(10), "both writes should be staging");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    c.gateways[1].kill();
    for g in [&cl[0], &cl[2]] {
        let e = g.head_object().bucket("crash").key("half").send().await.unwrap_err();
        assert_eq!(status(&e), 404, "nothing partial is visible");
        assert!(!keys(g, "crash").await.contains(&"half".to_owned()));
        put(g, "crash", "still-serving", b"yes").await;
    }
    // Once the dead gateway is gone (3 s of silence here), a survivor removes its staging file;
    // the survivor's own in-flight write keeps its file and completes.
    let t = Instant::now();
    while staged(&dying) > 0 {
        assert!(t.elapsed() < Duration::from_secs(20), "the dead gateway's staging file stayed");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(staged(&surviving), 1, "a live writer's staging file stays");
    let mut slow = conns.pop().unwrap();
    slow.send(&pattern(6, 4 << 20));
    assert_eq!(slow.answer(false).status, 200);
    let mut whole = pattern(5, 4 << 20);
    whole.extend(pattern(6, 4 << 20));
    assert_eq!(get(&cl[2], "crash", "slow").await, whole);
    assert!(!find_folder(&c.volume_dir(), "marker").join("half").exists());
}

/// Runs `penstock metadata ARGS`; panics with its output when it fails. Answers standard output.
fn metadata_cli(args: &[&str]) -> String {
    let out = std::process::Command::new(penstock_tests::binary()).arg("metadata").args(args).output().unwrap();
    assert!(
        out.status.success(),
        "penstock metadata {args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A deployment on the embedded engine moves to PostgreSQL with `penstock metadata export` and
/// `import`: a gateway on the database serves the same volume with every record intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_rocksdb_deployment_moves_to_postgres() {
    let mut old = penstock_tests::Gateway::start();
    let c = old.client();
    c.create_bucket().bucket("moving").send().await.unwrap();
    c.put_object()
        .bucket("moving")
        .key("data/a.bin")
        .content_type("application/x-a")
        .metadata("origin", "rocksdb")
        .tagging("stage=old")
        .body(ByteStream::from(pattern(1, 70_000)))
        .send()
        .await
        .unwrap();
    let up = Upload::start(&c, "moving", "big").await;
    let e1 = up.part(1, pattern(2, 5 << 20)).await;
    let u = old.admin(&["user", "create", "--domain", "default", "mover"]);
    let kp = old.admin(&["keypair", "create", &s(&u, "id")]);
    let scope = format!("user:{}", s(&u, "id"));
    old.admin(&["quota", "set", &scope, "1000000"]);
    let mover = old.client_with(&s(&kp, "access_key"), &s(&kp, "secret_key"));
    mover.create_bucket().bucket("movers-own").send().await.unwrap();
    put(&mover, "movers-own", "x", &pattern(3, 1234)).await;
    let usage = old.admin(&["quota", "show", &scope])["usage_bytes"].as_u64().unwrap();
    old.kill();

    let dir = tempfile::tempdir().unwrap();
    let dump = dir.path().join("dump.jsonl");
    let data = old.data_dir.to_str().unwrap().to_owned();
    metadata_cli(&["export", "--data-dir", &data, "--out", dump.to_str().unwrap()]);
    let pg = penstock_tests::postgres::Postgres::start();
    let master = std::fs::read_to_string(old.data_dir.join("master.key")).unwrap();
    let config = format!(
        "master_key = \"{}\"\n[[volumes]]\nname = \"local\"\nbackend = \"posix\"\npath = \"{}\"\n\
         [metadata]\nengine = \"postgres\"\nurl = \"{}\"\n",
        master.trim(),
        old.volume_dir().display(),
        pg.database("moved")
    );
    let cfg = dir.path().join("pg.toml");
    std::fs::write(&cfg, &config).unwrap();
    let cfg = cfg.to_str().unwrap();
    let version = metadata_cli(&["migrate", "--config", cfg]);
    assert!(version.starts_with("postgres schema version "), "{version}");
    metadata_cli(&["import", "--config", cfg, "--in", dump.to_str().unwrap()]);

    let new = penstock_tests::Gateway::start_with_config(&config);
    let c = new.client();
    let h = c.head_object().bucket("moving").key("data/a.bin").send().await.unwrap();
    assert_eq!(h.content_type(), Some("application/x-a"));
    assert_eq!(h.metadata().and_then(|m| m.get("origin")).map(String::as_str), Some("rocksdb"));
    let tags = c.get_object_tagging().bucket("moving").key("data/a.bin").send().await.unwrap();
    assert_eq!(tags.tag_set()[0].value(), "old");
    assert_eq!(get(&c, "moving", "data/a.bin").await, pattern(1, 70_000));
    let up = Upload::of(&c, "moving", "big", &up.id);
    let e2 = up.part(2, pattern(4, 100)).await;
    up.complete(&[(1, e1), (2, e2)]).await;
    assert_eq!(get(&c, "moving", "big").await, [pattern(2, 5 << 20), pattern(4, 100)].concat());
    let mover = new.client_with(&s(&kp, "access_key"), &s(&kp, "secret_key"));
    assert_eq!(get(&mover, "movers-own", "x").await, pattern(3, 1234));
    let q = new.admin(&["quota", "show", &scope]);
    assert_eq!((q["limit_bytes"].as_u64(), q["usage_bytes"].as_u64()), (Some(1_000_000), Some(usage)));
}

/// Three gateways, each with its own user-space NFS client, on one NFS-Ganesha export: the same
/// guarantees as on a shared POSIX mount.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_gateways_share_one_nfs_export() {
    let server = penstock_tests::ganesha::Ganesha::start();
    let spec = format!("backend = \"nfs\"\nurl = \"{}\"\npath = \"penstock\"\nretry_secs = 1.0\n", server.url("4.1"));
    let c = Cluster::start_on(3, &spec, server.export.join("penstock"), None);
    let cl: Vec<Client> = c.gateways.iter().map(|g| g.client()).collect();
    cl[0].create_bucket().bucket("onnfs").send().await.unwrap();
    put(&cl[0], "onnfs", "marker", b"m").await;
    put(&cl[1], "onnfs", "data/x.bin", &pattern(1, 2 << 20)).await;
    for g in &cl {
        assert_eq!(get(g, "onnfs", "data/x.bin").await, pattern(1, 2 << 20));
    }
    let over = cl[2].put_object().bucket("onnfs").key("data/x.bin").body(ByteStream::from(pattern(2, 1000))).send();
    let etag = over.await.unwrap().e_tag().unwrap().to_owned();
    for g in &cl {
        let h = g.head_object().bucket("onnfs").key("data/x.bin").send().await.unwrap();
        assert_eq!((h.e_tag(), h.content_length()), (Some(etag.as_str()), Some(1000)));
    }
    // A multipart upload with its parts on three gateways, each through its own NFS client.
    let parts = [pattern(3, 5 << 20), pattern(4, 5 << 20), pattern(5, 10)];
    let (started, etags) = spread_upload(&cl, "onnfs", "big", &parts).await;
    Upload::of(&cl[1], "onnfs", "big", &started.id).complete(&etags).await;
    assert_eq!(get(&cl[2], "onnfs", "big").await, parts.concat());
    assert_eq!(keys(&cl[0], "onnfs").await, ["big", "data/x.bin", "marker"]);
    // Bytes are plain files in the export, where NFS clients see them.
    let folder = find_folder(&c.volume_dir(), "marker");
    assert_eq!(std::fs::read(folder.join("big")).unwrap(), parts.concat());
}

/// Versioning across gateways: enabled on one, versions written through each, listed, read by
/// id, hidden by a marker and restored through the others; the bucket's status reaches every
/// gateway within the propagation bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn versions_are_shared_by_every_gateway() {
    use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
    let c = Cluster::start(3);
    let g: Vec<Client> = (0..3).map(|i| c.gw(i).client()).collect();
    g[0].create_bucket().bucket("vshared").send().await.unwrap();
    let conf = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
    g[1].put_bucket_versioning().bucket("vshared").versioning_configuration(conf).send().await.unwrap();
    tokio::time::sleep(PROPAGATION).await;
    for gw in &g {
        let s = gw.get_bucket_versioning().bucket("vshared").send().await.unwrap();
        assert_eq!(s.status(), Some(&BucketVersioningStatus::Enabled));
    }
    let mut ids = Vec::new();
    for (i, gw) in g.iter().enumerate() {
        let out = gw
            .put_object()
            .bucket("vshared")
            .key("ckpt")
            .body(ByteStream::from(pattern(i as u64, 50_000)))
            .send()
            .await
            .unwrap();
        ids.push(out.version_id().unwrap().to_owned());
    }
    for gw in &g {
        let listed = gw.list_object_versions().bucket("vshared").send().await.unwrap();
        let got: Vec<_> = listed.versions().iter().map(|v| v.version_id().unwrap().to_owned()).collect();
        assert_eq!(got, ids.iter().rev().cloned().collect::<Vec<_>>(), "newest first on every gateway");
        for (i, v) in ids.iter().enumerate() {
            let o = gw.get_object().bucket("vshared").key("ckpt").version_id(v).send().await.unwrap();
            assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), pattern(i as u64, 50_000));
        }
    }
    let marker = g[0].delete_object().bucket("vshared").key("ckpt").send().await.unwrap();
    for gw in &g {
        let e = gw.get_object().bucket("vshared").key("ckpt").send().await.unwrap_err();
        assert_eq!(e.raw_response().unwrap().headers().get("x-amz-delete-marker"), Some("true"));
    }
    g[2].delete_object().bucket("vshared").key("ckpt").version_id(marker.version_id().unwrap()).send().await.unwrap();
    assert_eq!(get(&g[1], "vshared", "ckpt").await, pattern(2, 50_000));
    g[1].delete_object().bucket("vshared").key("ckpt").version_id(&ids[2]).send().await.unwrap();
    assert_eq!(get(&g[0], "vshared", "ckpt").await, pattern(1, 50_000), "the previous version is current again");
}

/// Lifecycle rules set through one gateway are applied once for the whole cluster: an object
/// of a versioned bucket expires into exactly one delete marker, whichever gateway runs the
/// worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn lifecycle_rules_apply_once_across_gateways() {
    use aws_sdk_s3::types::{
        BucketLifecycleConfiguration, BucketVersioningStatus, ExpirationStatus, LifecycleExpiration, LifecycleRule,
        LifecycleRuleFilter, VersioningConfiguration,
    };
    let c = Cluster::start_with(3, "lifecycle_day_secs = 1\nlifecycle_interval_secs = 0.2\n");
    let g: Vec<Client> = (0..3).map(|i| c.gw(i).client()).collect();
    g[0].create_bucket().bucket("lshared").send().await.unwrap();
    let conf = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
    g[0].put_bucket_versioning().bucket("lshared").versioning_configuration(conf).send().await.unwrap();
    let rule = LifecycleRule::builder()
        .id("short")
        .status(ExpirationStatus::Enabled)
        .filter(LifecycleRuleFilter::builder().prefix("tmp/").build())
        .expiration(LifecycleExpiration::builder().days(1).build())
        .build()
        .unwrap();
    let lc = BucketLifecycleConfiguration::builder().rules(rule).build().unwrap();
    g[1].put_bucket_lifecycle_configuration().bucket("lshared").lifecycle_configuration(lc).send().await.unwrap();
    let got = g[2].get_bucket_lifecycle_configuration().bucket("lshared").send().await.unwrap();
    assert_eq!(got.rules().len(), 1);
    put(&g[2], "lshared", "tmp/a", b"scratch").await;
    put(&g[0], "lshared", "keep", b"stays").await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while g[1].head_object().bucket("lshared").key("tmp/a").send().await.is_ok() {
        assert!(Instant::now() < deadline, "tmp/a never expired");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // Several more passes: still one marker, the old version kept, the other key untouched.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let v = g[0].list_object_versions().bucket("lshared").prefix("tmp/").send().await.unwrap();
    assert_eq!((v.versions().len(), v.delete_markers().len()), (1, 1), "{v:?}");
    assert_eq!(get(&g[2], "lshared", "keep").await, b"stays");
}

/// A bucket policy put through one gateway opens the bucket to anonymous reads on every gateway,
/// and its deletion through another closes it everywhere within the documented bound; CORS rules
/// and ACLs set through one gateway count on all.
#[tokio::test]
async fn bucket_policies_acls_and_cors_reach_every_gateway() {
    use penstock_tests::raw::Conn;
    let c = Cluster::start(3);
    let g: Vec<Client> = (0..3).map(|i| c.gw(i).client()).collect();
    let cl = &c;
    g[0].create_bucket().bucket("published").send().await.unwrap();
    put(&g[1], "published", "model.bin", b"weights").await;
    let policy = r#"{"Statement": [{"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
        "Resource": "arn:aws:s3:::published/*"}]}"#;
    g[2].put_bucket_policy().bucket("published").policy(policy).send().await.unwrap();
    for (i, gi) in g.iter().enumerate() {
        within_bound("anonymous GET allowed", || async move {
            let a = Conn::open(cl.gw(i)).unsigned("GET", "/published/model.bin", &[], b"");
            a.status == 200 && a.body == b"weights"
        })
        .await;
        let doc = gi.get_bucket_policy().bucket("published").send().await.unwrap();
        assert_eq!(doc.policy(), Some(policy));
    }
    use aws_sdk_s3::types::{CorsConfiguration, CorsRule};
    let rule = CorsRule::builder().allowed_origins("https://notebook.lab").allowed_methods("GET").build().unwrap();
    let cors = CorsConfiguration::builder().cors_rules(rule).build().unwrap();
    g[0].put_bucket_cors().bucket("published").cors_configuration(cors).send().await.unwrap();
    for i in 0..3 {
        within_bound("CORS preflight answered", || async move {
            let h = [("Origin", "https://notebook.lab"), ("Access-Control-Request-Method", "GET")];
            let a = Conn::open(cl.gw(i)).unsigned("OPTIONS", "/published/model.bin", &h, b"");
            a.status == 200 && a.header("access-control-allow-origin") == Some("https://notebook.lab")
        })
        .await;
    }
    g[1].delete_bucket_policy().bucket("published").send().await.unwrap();
    for i in 0..3 {
        within_bound("anonymous GET refused", || async move {
            Conn::open(cl.gw(i)).unsigned("GET", "/published/model.bin", &[], b"").status == 403
        })
        .await;
    }
    // ACLs: ownership controls set through one gateway, an object ACL through another.
    use aws_sdk_s3::types::{ObjectCannedAcl, ObjectOwnership, OwnershipControls, OwnershipControlsRule};
    let rule = OwnershipControlsRule::builder().object_ownership(ObjectOwnership::ObjectWriter).build().unwrap();
    let controls = OwnershipControls::builder().rules(rule).build().unwrap();
    g[0].put_bucket_ownership_controls().bucket("published").ownership_controls(controls).send().await.unwrap();
    tokio::time::sleep(PROPAGATION).await;
    g[1].put_object_acl().bucket("published").key("model.bin").acl(ObjectCannedAcl::PublicRead).send().await.unwrap();
    for i in 0..3 {
        within_bound("anonymous GET allowed by the object's ACL", || async move {
            Conn::open(cl.gw(i)).unsigned("GET", "/published/model.bin", &[], b"").status == 200
        })
        .await;
    }
}
