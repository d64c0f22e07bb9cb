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

use penstock_tests::crash::{self, env_num};
use penstock_tests::powercut::PowerCutFs;
use penstock_tests::Gateway;

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
            .map(|(w, l)| {
                tokio::spawn(crash::worker(c.clone(), "cut".into(), crash::key_in_new_dirs, w as u64, round, l))
            })
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

/// Multipart uploads left open across power cuts: every part the gateway acknowledged is listed
/// with its ETag and size after the restart (the part in flight may be there or not), and the
/// upload completes from the acknowledged parts into exactly their bytes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_power_cut_keeps_the_acknowledged_parts_of_open_uploads() {
    use aws_sdk_s3::primitives::ByteStream;
    use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
    use rand::Rng;
    const PART: usize = 5 << 20;
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let mut disk = PowerCutFs::mount(&data);
    let mut gw = Gateway::start_in(dir, "");
    gw.client().create_bucket().bucket("parts").send().await.unwrap();
    for round in 0..env_num("PENSTOCK_CRASH_ROUNDS", 4).min(3) {
        let key = format!("r{round}/in/parts.bin");
        let up = gw.client().create_multipart_upload().bucket("parts").key(&key).send().await.unwrap();
        let id = up.upload_id().unwrap().to_owned();
        // Parts go up one after another until the gateway goes away; each acknowledged one is
        // kept with its ETag.
        let c = crash::without_retries(&gw.client());
        let (k, i) = (key.clone(), id.clone());
        let uploader = tokio::spawn(async move {
            let mut acked: Vec<(i32, String, Vec<u8>)> = Vec::new();
            for n in 1..=10_000 {
                let body = penstock_tests::pattern((round << 32) | n as u64, PART);
                let r = c
                    .upload_part()
                    .bucket("parts")
                    .key(&k)
                    .upload_id(&i)
                    .part_number(n)
                    .body(ByteStream::from(body.clone()))
                    .send()
                    .await;
                match r {
                    Ok(p) => acked.push((n, p.e_tag().unwrap().to_owned(), body)),
                    Err(_) => break,
                }
            }
            acked
        });
        tokio::time::sleep(Duration::from_millis(rand::thread_rng().gen_range(300..1500))).await;
        tokio::task::block_in_place(|| {
            gw.kill();
            disk.cut();
        });
        let acked = uploader.await.unwrap();
        tokio::task::block_in_place(|| gw.restart());
        let c = gw.client();
        let listed = c.list_parts().bucket("parts").key(&key).upload_id(&id).send().await.unwrap();
        let parts: Vec<(i32, String, i64)> = listed
            .parts()
            .iter()
            .map(|p| (p.part_number().unwrap(), p.e_tag().unwrap().to_owned(), p.size().unwrap()))
            .collect();
        for (n, etag, body) in &acked {
            assert!(
                parts.contains(&(*n, etag.clone(), body.len() as i64)),
                "round {round}: acknowledged part {n} ({etag}) is not listed: {parts:?}"
            );
        }
        assert!(parts.len() <= acked.len() + 1, "round {round}: parts nobody acknowledged: {parts:?}");
        if acked.is_empty() {
            continue;
        }
        let done = CompletedMultipartUpload::builder()
            .set_parts(Some(
                acked.iter().map(|(n, e, _)| CompletedPart::builder().part_number(*n).e_tag(e).build()).collect(),
            ))
            .build();
        c.complete_multipart_upload()
            .bucket("parts")
            .key(&key)
            .upload_id(&id)
            .multipart_upload(done)
            .send()
            .await
            .unwrap();
        let got = c.get_object().bucket("parts").key(&key).send().await.unwrap();
        let got = got.body.collect().await.unwrap().into_bytes();
        let want: Vec<u8> = acked.iter().flat_map(|(_, _, b)| b.iter().copied()).collect();
        assert!(got.as_ref() == want.as_slice(), "round {round}: the completed object is not the acknowledged parts");
        eprintln!("round {round}: {} parts acknowledged before the cut survived", acked.len());
    }
    tokio::task::block_in_place(|| gw.kill());
    drop(disk);
    drop(gw);
}
