//! The gateway on an NFS volume: a real NFS-Ganesha, the real binary, the AWS SDK and `nfs-cp`
//! (libnfs) as a second NFS client.

use std::process::Command;
use std::time::{Duration, Instant};

use aws_sdk_s3::primitives::ByteStream;
use md5::{Digest, Md5};
use penstock_tests::ganesha::Ganesha;
use penstock_tests::{find_folder, get, keys, pattern as payload, Gateway, Upload};

/// A gateway whose default volume is the server's export (subdirectory `penstock`).
fn gateway_on(server: &Ganesha, version: &str) -> Gateway {
    Gateway::start_with_config(&format!(
        "default_volume = \"nfs\"\nfsync = true\n[[volumes]]\nname = \"nfs\"\nbackend = \"nfs\"\nurl = \"{}\"\npath = \"penstock\"\nretry_secs = 1.0\n",
        server.url(version)
    ))
}

async fn s3_round_trip(version: &str) {
    let server = Ganesha::start();
    let gw = gateway_on(&server, version);
    let c = gw.client();
    c.create_bucket().bucket("onnfs").send().await.unwrap();
    let big = payload(1, 20 << 20);
    c.put_object().bucket("onnfs").key("dir/big.bin").body(ByteStream::from(big.clone())).send().await.unwrap();
    c.put_object().bucket("onnfs").key("marker").body(ByteStream::from_static(b"m")).send().await.unwrap();
    assert_eq!(get(&c, "onnfs", "dir/big.bin").await, big);
    let r = c.get_object().bucket("onnfs").key("dir/big.bin").range("bytes=1000000-1999999").send().await.unwrap();
    assert_eq!(r.body.collect().await.unwrap().into_bytes(), big[1_000_000..2_000_000]);

    // Multipart: three parts, composed on the server from part files.
    let up = Upload::start(&c, "onnfs", "mp").await;
    let mut parts = Vec::new();
    let mut whole = Vec::new();
    for n in 1..=3 {
        let body = payload(10 + n as u64, if n < 3 { 5 << 20 } else { 1234 });
        whole.extend_from_slice(&body);
        parts.push((n, up.part(n, body).await));
    }
    up.complete(&parts).await;
    assert_eq!(get(&c, "onnfs", "mp").await, whole);

    c.copy_object().bucket("onnfs").key("copy/of-big").copy_source("onnfs/dir/big.bin").send().await.unwrap();
    let keys = keys(&c, "onnfs").await;
    assert_eq!(keys, ["copy/of-big", "dir/big.bin", "marker", "mp"]);

    // Objects are plain files at their key's path in the export, with the vfolder layout.
    let folder = find_folder(&server.export.join("penstock"), "marker");
    assert_eq!(std::fs::read(folder.join("dir/big.bin")).unwrap(), big);
    assert_eq!(std::fs::read(folder.join("mp")).unwrap(), whole);
    assert!(std::fs::read_dir(folder.join(".penstock/tmp")).unwrap().next().is_none(), "no staging leftovers");

    for k in keys {
        c.delete_object().bucket("onnfs").key(k).send().await.unwrap();
    }
    assert!(!folder.join("dir").exists(), "emptied directories are pruned");
    c.delete_bucket().bucket("onnfs").send().await.unwrap();
    assert!(!folder.exists(), "the folder is removed with its bucket");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_round_trip_nfs3() {
    s3_round_trip("3").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn s3_round_trip_nfs41() {
    s3_round_trip("4.1").await;
}

/// A file written into the folder by another NFS client lists and downloads as an object.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_from_another_nfs_client_is_an_object() {
    let server = Ganesha::start();
    let gw = gateway_on(&server, "3");
    let c = gw.client();
    c.create_bucket().bucket("shared").send().await.unwrap();
    c.put_object().bucket("shared").key("marker").body(ByteStream::from_static(b"m")).send().await.unwrap();
    let folder = find_folder(&server.export.join("penstock"), "marker");
    let rel = folder.strip_prefix(&server.export).unwrap().join("from-session.bin");
    let data = payload(99, 3_000_000);
    let local = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(local.path(), &data).unwrap();
    let nfs_cp = ["/usr/bin/nfs-cp", "/usr/local/bin/nfs-cp"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .expect("nfs-cp not installed: run scripts/install-deps.sh (apt-get install libnfs-utils)");
    let out = Command::new(nfs_cp).arg(local.path()).arg(server.libnfs_url(rel.to_str().unwrap())).output().unwrap();
    assert!(out.status.success(), "nfs-cp failed: {}", String::from_utf8_lossy(&out.stderr));

    let l = c.list_objects_v2().bucket("shared").send().await.unwrap();
    let o = l.contents().iter().find(|o| o.key() == Some("from-session.bin")).expect("foreign file listed");
    assert_eq!(o.size(), Some(data.len() as i64));
    let got = c.get_object().bucket("shared").key("from-session.bin").send().await.unwrap();
    let etag = got.e_tag().unwrap().to_owned();
    assert_eq!(got.body.collect().await.unwrap().into_bytes(), data);
    // Files the gateway did not write carry a fingerprint ETag (file identity, size, mtime), the
    // same in listings and reads.
    assert_eq!(o.e_tag(), Some(etag.as_str()));
    assert_ne!(etag, format!("\"{}\"", hex::encode(Md5::digest(b""))));
}

/// The NFS server stops in the middle of uploads and downloads: requests fail with 503, nothing
/// partial becomes visible, and the gateway serves again by itself once the server is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn server_outage_fails_cleanly_and_recovers() {
    let mut server = Ganesha::start();
    let gw = gateway_on(&server, "3");
    let c = gw.client();
    c.create_bucket().bucket("outage").send().await.unwrap();
    const SIZE: usize = 8 << 20;
    c.put_object().bucket("outage").key("stable").body(ByteStream::from(payload(7, SIZE))).send().await.unwrap();

    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut workers = Vec::new();
    for w in 0..4u64 {
        let (c, stop) = (c.clone(), stop.clone());
        workers.push(tokio::spawn(async move {
            let (mut ok, mut unavailable) = (0, 0);
            let mut i = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                i += 1;
                let seed = w * 1_000_000 + i;
                let r = c
                    .put_object()
                    .bucket("outage")
                    .key(format!("w{w}/{seed}"))
                    .body(ByteStream::from(payload(seed, SIZE)))
                    .send()
                    .await;
                match r {
                    Ok(_) => ok += 1,
                    Err(e) => {
                        let status = e.raw_response().map(|r| r.status().as_u16());
                        assert_eq!(status, Some(503), "a failed PUT must be a 503, got {e:?}");
                        unavailable += 1;
                    }
                }
                if let Ok(o) = c.get_object().bucket("outage").key("stable").send().await {
                    // A GET that started may be cut off mid-body; one that completes is whole.
                    if let Ok(b) = o.body.collect().await {
                        assert_eq!(b.into_bytes().to_vec(), payload(7, SIZE));
                    }
                }
            }
            (ok, unavailable)
        }));
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    server.stop();
    // While the server is down every request is answered, with 503.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let err =
        c.head_object().bucket("outage").key("stable").send().await.expect_err("HEAD while the NFS server is down");
    assert_eq!(err.raw_response().map(|r| r.status().as_u16()), Some(503));
    server.restart();
    let back = Instant::now();
    loop {
        match c.head_object().bucket("outage").key("stable").send().await {
            Ok(_) => break,
            Err(e) => assert!(back.elapsed() < Duration::from_secs(20), "service did not resume: {e:?}"),
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(2)).await;
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (mut ok, mut unavailable) = (0, 0);
    for w in workers {
        let (o, u) = w.await.unwrap();
        ok += o;
        unavailable += u;
    }
    assert!(ok > 0 && unavailable > 0, "the outage hit the workload: {ok} ok, {unavailable} 503");

    // Every listed object is complete: an interrupted upload never became visible.
    let mut token = None;
    let mut listed = 0;
    loop {
        let l = c.list_objects_v2().bucket("outage").set_continuation_token(token).send().await.unwrap();
        for o in l.contents() {
            let k = o.key().unwrap();
            let seed = match k.rsplit_once('/') {
                Some((_, s)) => s.parse::<u64>().unwrap(),
                None => 7,
            };
            assert_eq!(o.size(), Some(SIZE as i64), "{k} listed with a partial size");
            assert!(get(&c, "outage", k).await == payload(seed, SIZE), "{k} has wrong bytes");
            listed += 1;
        }
        token = l.next_continuation_token().map(str::to_owned);
        if token.is_none() {
            break;
        }
    }
    assert!(listed >= ok, "acknowledged PUTs are all there ({listed} listed, {ok} acknowledged)");
    // And new writes work.
    c.put_object().bucket("outage").key("after").body(ByteStream::from_static(b"back")).send().await.unwrap();
}
