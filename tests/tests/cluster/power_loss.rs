//! A power cut under the PostgreSQL engine: the machine that runs the gateways loses power
//! while the database (on a machine of its own) does not. The shared volume lives on
//! [`penstock_tests::powercut::PowerCutFs`], which forgets every write, rename and mkdir that
//! no fsync made durable; the gateways are killed with it. After each cut and restart, every
//! write any gateway
//! acknowledged is there with its bytes and metadata, no acknowledged delete has come back, and
//! nothing partial is listed: the records in the database describe only what the volume kept.

use std::time::Duration;

use penstock_tests::cluster::Cluster;
use penstock_tests::crash::{self, env_num};

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_power_cut_of_every_gateway_keeps_every_acknowledged_write() {
    use rand::Rng;
    let (mut c, mut disk) = Cluster::start_on_power_cut(3);
    c.gw(0).client().create_bucket().bucket("cut").send().await.unwrap();
    let mut buckets = vec!["cut".to_owned()];
    let workers = 4u64;
    let mut ledgers: Vec<crash::Ledger> = (0..workers).map(|_| crash::Ledger::default()).collect();
    for round in 0..env_num("PENSTOCK_CRASH_ROUNDS", 4) {
        // Worker w writes through gateway w % 3, so the gateways' writes interleave on the volume.
        let tasks: Vec<_> = ledgers
            .drain(..)
            .enumerate()
            .map(|(w, l)| {
                let cl = crash::without_retries(&c.gw(w % 3).client());
                tokio::spawn(crash::worker(cl, "cut".into(), crash::key_in_new_dirs, w as u64, round, l))
            })
            .collect();
        // A bucket created during the round (its folder made on the volume, its name claimed in
        // the database), acknowledged before the cut.
        let made = format!("made-in-round-{round}");
        if c.gw(round as usize % 3).client().create_bucket().bucket(&made).send().await.is_ok() {
            buckets.push(made);
        }
        let wait = rand::thread_rng().gen_range(300..1500);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        tokio::task::block_in_place(|| {
            for gw in &mut c.gateways {
                gw.kill();
            }
            disk.cut();
        });
        for t in tasks {
            ledgers.push(t.await.unwrap());
        }
        tokio::task::block_in_place(|| {
            for gw in &mut c.gateways {
                gw.restart();
            }
        });
        // Checked through another gateway each round: what one wrote, every one serves.
        let cl = c.gw((round as usize + 1) % 3).client();
        let mut problems = crash::settle(&cl, "cut", round, &mut ledgers).await;
        for b in &buckets {
            if let Err(e) = cl.head_bucket().bucket(b).send().await {
                problems.push(format!("round {round}: acknowledged bucket {b} is gone: {e:?}"));
            }
            // A bucket's folder must have survived with its record: a write into it succeeds.
            let put = cl.put_object().bucket(b).key(format!("after-{round}")).body(b"x".to_vec().into()).send().await;
            if let Err(e) = put {
                problems.push(format!("round {round}: bucket {b} takes no write: {e:?}"));
            }
            let _ = cl.delete_object().bucket(b).key(format!("after-{round}")).send().await;
        }
        let (files, dirs) = disk.fsyncs();
        eprintln!("round {round}: {files} file and {dirs} directory fsyncs so far");
        assert!(problems.is_empty(), "after a power cut in round {round}: {problems:#?}");
    }
    // Unmounted once no gateway uses it, before the directory holding the mount point goes.
    tokio::task::block_in_place(|| {
        for gw in &mut c.gateways {
            gw.kill();
        }
    });
    drop(disk);
    drop(c);
}
