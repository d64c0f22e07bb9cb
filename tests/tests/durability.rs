//! Atomic publish under concurrency and crashes, through a real SDK and raw sockets.

use std::io::Write;
use std::time::Duration;

use aws_sdk_s3::presigning::PresigningConfig;
use aws_sdk_s3::primitives::ByteStream;
use md5::{Digest, Md5};
use penstock_tests::powercut::PowerCutFs;
use penstock_tests::Gateway;

/// Concurrent PUTs of one key: the object is exactly one writer's bytes, with that writer's ETag.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn last_writer_wins_never_a_mix() {
    let (_gw, c) = Gateway::with_bucket("race").await;
    for round in 0..3 {
        let mut tasks = Vec::new();
        for w in 0..8u8 {
            let c = c.clone();
            tasks.push(tokio::spawn(async move {
                let body = vec![w.wrapping_add(round * 10); 1 << 20];
                c.put_object().bucket("race").key("k").body(ByteStream::from(body)).send().await.unwrap();
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let o = c.get_object().bucket("race").key("k").send().await.unwrap();
        let etag = o.e_tag().unwrap().to_owned();
        let bytes = o.body.collect().await.unwrap().into_bytes();
        assert_eq!(bytes.len(), 1 << 20);
        assert!(bytes.iter().all(|b| *b == bytes[0]), "bytes of several writers mixed");
        assert_eq!(etag, format!("\"{}\"", hex::encode(Md5::digest(&bytes))), "record and bytes disagree");
    }
}

/// A crash in the middle of an upload exposes nothing; the leftover staging file is swept on
/// restart; acknowledged writes survive.
#[tokio::test]
async fn crash_mid_upload_exposes_nothing() {
    let mut gw = Gateway::start();
    let c = gw.client();
    c.create_bucket().bucket("crash").send().await.unwrap();
    c.put_object().bucket("crash").key("acked").body(ByteStream::from_static(b"durable")).send().await.unwrap();
    let url = c
        .put_object()
        .bucket("crash")
        .key("partial")
        .presigned(PresigningConfig::expires_in(Duration::from_secs(300)).unwrap())
        .await
        .unwrap();
    let uri: http::Uri = url.uri().parse().unwrap();
    let mut sock = std::net::TcpStream::connect(uri.authority().unwrap().as_str()).unwrap();
    let total = 8 << 20;
    write!(
        sock,
        "PUT {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {total}\r\n\r\n",
        uri.path_and_query().unwrap(),
        uri.authority().unwrap()
    )
    .unwrap();
    sock.write_all(&vec![7u8; total / 2]).unwrap();
    sock.flush().unwrap();
    // Wait until the staging file holds data, then crash.
    let tmp = gw.folder_dir("acked").join(".penstock/tmp");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(&tmp).unwrap().next().is_none() {
        assert!(std::time::Instant::now() < deadline, "no staging file appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    gw.crash_and_restart();
    drop(sock);

    let c = gw.client();
    let e = c.head_object().bucket("crash").key("partial").send().await.unwrap_err();
    assert_eq!(e.raw_response().unwrap().status().as_u16(), 404);
    let acked = c.get_object().bucket("crash").key("acked").send().await.unwrap();
    assert_eq!(acked.body.collect().await.unwrap().into_bytes().as_ref(), b"durable");
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(&tmp).unwrap().next().is_some() {
        assert!(std::time::Instant::now() < deadline, "staging leftovers were not swept");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// What one worker of the versioned crash test knows about its key: the versions acknowledged
/// (oldest first; `None` bytes for a delete marker) and the operation in flight when the gateway
/// was killed.
#[derive(Default)]
struct VersionLedger {
    versions: Vec<(String, Option<String>)>,
    in_flight: Option<VersionOp>,
}

#[derive(Clone, Debug)]
enum VersionOp {
    /// A PUT of bytes with this MD5.
    Put(String),
    /// A DELETE without a version id (a new marker).
    Mark,
    /// A DELETE of one version.
    Remove(String),
}

async fn version_worker(c: aws_sdk_s3::Client, key: String, seed: u64, mut l: VersionLedger) -> VersionLedger {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    loop {
        let op = match rng.gen_range(0..10) {
            0..=5 => VersionOp::Put(String::new()),
            6 | 7 => VersionOp::Mark,
            _ if l.versions.is_empty() => VersionOp::Mark,
            _ => VersionOp::Remove(l.versions[rng.gen_range(0..l.versions.len())].0.clone()),
        };
        let outcome = match op {
            VersionOp::Put(_) => {
                let body = penstock_tests::pattern(rng.gen(), rng.gen_range(1..300_000));
                let md5 = hex::encode(Md5::digest(&body));
                l.in_flight = Some(VersionOp::Put(md5.clone()));
                c.put_object()
                    .bucket("vcrash")
                    .key(&key)
                    .body(ByteStream::from(body))
                    .send()
                    .await
                    .map(|o| {
                        l.versions.push((o.version_id().unwrap().to_owned(), Some(md5)));
                    })
                    .map_err(drop)
            }
            VersionOp::Mark => {
                l.in_flight = Some(VersionOp::Mark);
                c.delete_object()
                    .bucket("vcrash")
                    .key(&key)
                    .send()
                    .await
                    .map(|o| {
                        l.versions.push((o.version_id().unwrap().to_owned(), None));
                    })
                    .map_err(drop)
            }
            VersionOp::Remove(v) => {
                l.in_flight = Some(VersionOp::Remove(v.clone()));
                c.delete_object()
                    .bucket("vcrash")
                    .key(&key)
                    .version_id(&v)
                    .send()
                    .await
                    .map(|_| {
                        l.versions.retain(|(id, _)| *id != v);
                    })
                    .map_err(drop)
            }
        };
        match outcome {
            Ok(()) => l.in_flight = None,
            // The gateway was killed: this operation may or may not have happened.
            Err(()) => return l,
        }
    }
}

/// The versions of `key` as the gateway has them now, by id, with the MD5 of each version's
/// bytes read back by id (`None` for a marker).
async fn versions_now(c: &aws_sdk_s3::Client, key: &str) -> Vec<(String, Option<String>)> {
    let r = c.list_object_versions().bucket("vcrash").prefix(key).send().await.unwrap();
    assert!(!r.is_truncated().unwrap());
    let mut out = Vec::new();
    for v in r.versions().iter().filter(|v| v.key() == Some(key)) {
        let id = v.version_id().unwrap().to_owned();
        let o = c.get_object().bucket("vcrash").key(key).version_id(&id).send().await.unwrap();
        let bytes = o.body.collect().await.unwrap().into_bytes();
        out.push((id, Some(hex::encode(Md5::digest(&bytes)))));
    }
    for m in r.delete_markers().iter().filter(|m| m.key() == Some(key)) {
        out.push((m.version_id().unwrap().to_owned(), None));
    }
    out.sort();
    out
}

/// SIGKILL at random instants while workers overwrite and delete in a versioned bucket (new
/// versions, delete markers, deletes of single versions, restores): after each restart every
/// acknowledged version is there by its id with its bytes, no acknowledged delete comes back,
/// and the one operation in flight per worker either happened or did not, never in part.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_nine_never_loses_a_version() {
    versions_survive_crashes(Gateway::start(), Gateway::kill).await;
}

/// The same through power cuts: the data directory is on [`PowerCutFs`], which loses every
/// change no fsync made durable (`power_loss.rs` says more).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_power_cut_never_loses_a_version() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("data")).unwrap();
    let mut disk = PowerCutFs::mount(&dir.path().join("data"));
    let gw = versions_survive_crashes(Gateway::start_in(dir, ""), |gw| {
        gw.kill();
        disk.cut();
    })
    .await;
    drop(disk);
    drop(gw);
}

/// The same under the PostgreSQL engine: the volume is on [`PowerCutFs`] and the database, on a
/// machine of its own in a real deployment, keeps running; a version's rows in the database must
/// never outlive its file on the volume, nor the other way round.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_power_cut_never_loses_a_version_under_postgres() {
    let (mut cluster, mut disk) = penstock_tests::cluster::Cluster::start_on_power_cut(1);
    let gw = versions_survive_crashes(cluster.gateways.remove(0), |gw| {
        gw.kill();
        disk.cut();
    })
    .await;
    drop(gw);
    drop(disk);
    drop(cluster);
}

/// Four rounds of the versioned workload below, each ended by `crash` (which leaves the gateway
/// stopped) and a restart, checking what each round acknowledged. Answers the gateway, stopped.
async fn versions_survive_crashes(mut gw: Gateway, mut crash: impl FnMut(&mut Gateway)) -> Gateway {
    use aws_sdk_s3::types::{BucketVersioningStatus, VersioningConfiguration};
    use rand::Rng;
    let c = gw.client();
    c.create_bucket().bucket("vcrash").send().await.unwrap();
    let conf = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
    c.put_bucket_versioning().bucket("vcrash").versioning_configuration(conf).send().await.unwrap();
    let workers = 4u64;
    let mut ledgers: Vec<VersionLedger> = (0..workers).map(|_| VersionLedger::default()).collect();
    for round in 0..4u64 {
        let conf =
            gw.client().config().to_builder().retry_config(aws_sdk_s3::config::retry::RetryConfig::disabled()).build();
        let c = aws_sdk_s3::Client::from_conf(conf);
        let tasks: Vec<_> = ledgers
            .drain(..)
            .enumerate()
            .map(|(w, l)| tokio::spawn(version_worker(c.clone(), format!("k{w}"), round * 100 + w as u64, l)))
            .collect();
        tokio::time::sleep(Duration::from_millis(rand::thread_rng().gen_range(200..1200))).await;
        tokio::task::block_in_place(|| crash(&mut gw));
        for t in tasks {
            ledgers.push(t.await.unwrap());
        }
        tokio::task::block_in_place(|| gw.restart());
        let c = gw.client();
        for (w, l) in ledgers.iter_mut().enumerate() {
            let key = format!("k{w}");
            let now = versions_now(&c, &key).await;
            let mut acked = l.versions.clone();
            acked.sort();
            let extra: Vec<_> = now.iter().filter(|v| !acked.contains(v)).cloned().collect();
            let missing: Vec<_> = acked.iter().filter(|v| !now.contains(v)).cloned().collect();
            let landed = match (l.in_flight.take(), &extra[..], &missing[..]) {
                (_, [], []) => true,
                (Some(VersionOp::Put(md5)), [(_, Some(m))], []) => *m == md5,
                (Some(VersionOp::Mark), [(_, None)], []) => true,
                (Some(VersionOp::Remove(v)), [], [(id, _)]) => *id == v,
                _ => false,
            };
            assert!(landed, "round {round}, {key}: now {now:?}, acknowledged {acked:?}");
            // What landed is acknowledged now, newest last.
            l.versions.retain(|v| now.contains(v));
            l.versions.extend(extra);
        }
        // The key reads as its newest version: its bytes, or 404 under a delete marker.
        for (w, l) in ledgers.iter().enumerate() {
            let key = format!("k{w}");
            let got = c.get_object().bucket("vcrash").key(&key).send().await;
            match (l.versions.last(), got) {
                (Some((_, Some(md5))), Ok(o)) => {
                    let bytes = o.body.collect().await.unwrap().into_bytes();
                    assert_eq!(&hex::encode(Md5::digest(&bytes)), md5, "round {round}, {key}");
                }
                (Some((_, None)) | None, Err(e)) => assert_eq!(e.raw_response().unwrap().status().as_u16(), 404),
                (v, got) => panic!(
                    "round {round}, {key}: newest {v:?} but GET gave {:?}",
                    got.map(|o| o.version_id().map(str::to_owned))
                ),
            }
        }
    }
    tokio::task::block_in_place(|| gw.kill());
    gw
}
