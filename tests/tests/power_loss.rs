//! A power cut at a random instant (issue #16's promise, beyond kill -9): the gateway's data
//! directory (its RocksDB store, its keys and the volume) lives on [`PowerCutFs`], which forgets
//! every write, rename and mkdir that no fsync made durable when the power goes. After each cut
//! and restart, every acknowledged write is there with its bytes and metadata, no acknowledged
//! delete has come back, nothing partial is listed, and what the admin API acknowledged (users,
//! keypairs, buckets) is still there.
//!
//! Needs `/dev/fuse` and `fusermount3` (Debian's `fuse3`); `PENSTOCK_CRASH_ROUNDS` (default 4)
//! makes it longer.

use std::time::Duration;

use penstock_tests::powercut::PowerCutFs;
use penstock_tests::{crash, Gateway};

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Keys in directories that each round makes anew (`w1/r3/d2/k0`), so that a cut also finds
/// directories created since the last one, and keys of earlier rounds are checked again later.
fn key_of(w: u64, round: u64, seq: u64) -> String {
    format!("w{w}/r{round}/d{}/k{}", seq % 3, seq % 4)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_power_cut_keeps_every_acknowledged_write() {
    use rand::Rng;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let mut disk = PowerCutFs::mount(&data);
    let mut gw = Gateway::start_in(dir, "");
    let rounds = env_num("PENSTOCK_CRASH_ROUNDS", 4);
    let workers = 4u64;
    let mut ledgers: Vec<crash::Ledger> = (0..workers).map(|_| crash::Ledger::default()).collect();
    // Everything acknowledged before the first cut: a user with a keypair (its secret is sealed
    // under the master key the gateway generated in its data directory) and that user's bucket.
    let user = gw.tenant("default", "alice", "user");
    user.s3.create_bucket().bucket("cut").send().await.unwrap();
    let mut buckets = vec!["cut".to_owned()];
    for round in 0..rounds {
        let c = crash::without_retries(&user.s3);
        let tasks: Vec<_> = ledgers
            .drain(..)
            .enumerate()
            .map(|(w, l)| tokio::spawn(crash::worker(c.clone(), "cut".into(), key_of, w as u64, round, l)))
            .collect();
        // A bucket created during the round, acknowledged before the cut.
        let made = format!("made-in-round-{round}");
        if user.s3.create_bucket().bucket(&made).send().await.is_ok() {
            buckets.push(made);
        }
        let wait = rand::thread_rng().gen_range(300..1500);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        tokio::task::block_in_place(|| {
            gw.kill();
            disk.cut();
        });
        for t in tasks {
            ledgers.push(t.await.unwrap());
        }
        tokio::task::block_in_place(|| gw.restart());

        let c = &user.s3;
        let mut problems = crash::settle(c, "cut", round, &mut ledgers).await;
        for b in &buckets {
            if let Err(e) = c.head_bucket().bucket(b).send().await {
                problems.push(format!("round {round}: acknowledged bucket {b} is gone: {e:?}"));
            }
        }
        let (files, dirs) = disk.fsyncs();
        eprintln!("round {round}: {files} file and {dirs} directory fsyncs so far");
        assert!(problems.is_empty(), "after a power cut in round {round}: {problems:#?}");
    }
    // Unmounted before the gateway's directory (which holds the mount point) is removed.
    tokio::task::block_in_place(|| gw.kill());
    drop(disk);
    drop(gw);
}
