//! Reliability under races, crashes and hostile clients (issue #16), against the real binary:
//! readers racing writers see one writer's bytes with that writer's metadata; SIGKILL at random
//! instants loses no acknowledged write and no metadata of one; Complete racing Abort has one
//! winner. Hostile input is in `hostile_input.rs`, connection limits in `connections.rs`.
//!
//! `PENSTOCK_CRASH_ROUNDS` (default 4) and `PENSTOCK_RACE_SECS` (default 4) make the crash and
//! race suites longer.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_s3::error::ProvideErrorMetadata;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use md5::{Digest, Md5};
use penstock_tests::crash::{self, env_num};
use penstock_tests::{pattern, Gateway};

fn md5_hex(b: &[u8]) -> String {
    hex::encode(Md5::digest(b))
}

/// The body a writer PUTs for version `v`: its ETag and metadata can be recomputed from `v`.
fn versioned_body(v: u64) -> Vec<u8> {
    pattern(v, 4096)
}

/// Checks one answer of a reader: the bytes (if read), ETag, content type and user metadata all
/// belong to the same write. Returns a description of what is wrong.
fn check_answer(
    body: Option<&[u8]>,
    etag: Option<&str>,
    content_type: Option<&str>,
    meta_v: Option<&str>,
) -> Result<(), String> {
    let v: u64 = meta_v.ok_or("no x-amz-meta-v")?.parse().map_err(|_| "x-amz-meta-v is not a number")?;
    if content_type != Some("application/x-qa") {
        return Err(format!("content type {content_type:?}"));
    }
    let want = format!("\"{}\"", md5_hex(&versioned_body(v)));
    if etag != Some(want.as_str()) {
        return Err(format!("ETag {etag:?} is not that of version {v} ({want})"));
    }
    if let Some(b) = body {
        if b != versioned_body(v).as_slice() {
            return Err(format!("bytes are not those of version {v}"));
        }
    }
    Ok(())
}

/// Readers (GET, HEAD, LIST) racing two overwriting writers and a deleter on one key: every
/// answer is one writer's complete bytes with that writer's ETag, content type and metadata, or
/// a 404. Before the publish kept the replaced record, about one answer in eight carried a
/// synthesized ETag and no metadata.
#[tokio::test(flavor = "multi_thread", worker_threads = 8)]
async fn readers_racing_writers_see_one_writers_bytes_and_metadata() {
    let (_gw, c) = Gateway::with_bucket("race").await;
    let secs = env_num("PENSTOCK_RACE_SECS", 4);
    let stop = Arc::new(AtomicBool::new(false));
    let version = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let mut writers = Vec::new();
    for w in 0..3 {
        let (c, stop, version) = (c.clone(), stop.clone(), version.clone());
        writers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if w == 2 {
                    // The deleter.
                    c.delete_object().bucket("race").key("k").send().await.unwrap();
                    tokio::time::sleep(Duration::from_millis(5)).await;
                    continue;
                }
                let v = version.fetch_add(1, Ordering::Relaxed);
                c.put_object()
                    .bucket("race")
                    .key("k")
                    .content_type("application/x-qa")
                    .metadata("v", v.to_string())
                    .body(ByteStream::from(versioned_body(v)))
                    .send()
                    .await
                    .unwrap();
            }
        }));
    }
    let answers = Arc::new(AtomicUsize::new(0));
    let missing = Arc::new(AtomicUsize::new(0));
    let mut readers = Vec::new();
    for r in 0..5 {
        let (c, stop, answers, missing) = (c.clone(), stop.clone(), answers.clone(), missing.clone());
        readers.push(tokio::spawn(async move {
            let mut bad = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let outcome = match r % 3 {
                    0 => match c.get_object().bucket("race").key("k").send().await {
                        Ok(o) => {
                            let (etag, ct) = (o.e_tag().map(str::to_owned), o.content_type().map(str::to_owned));
                            let v = o.metadata().and_then(|m| m.get("v")).cloned();
                            let body = o.body.collect().await.unwrap().into_bytes();
                            Some(check_answer(Some(&body), etag.as_deref(), ct.as_deref(), v.as_deref()))
                        }
                        Err(e) if e.code() == Some("NoSuchKey") => None,
                        Err(e) => Some(Err(format!("GET failed: {e:?}"))),
                    },
                    1 => match c.head_object().bucket("race").key("k").send().await {
                        Ok(o) => {
                            let v = o.metadata().and_then(|m| m.get("v")).cloned();
                            Some(check_answer(None, o.e_tag(), o.content_type(), v.as_deref()))
                        }
                        Err(e) if e.raw_response().is_some_and(|r| r.status().as_u16() == 404) => None,
                        Err(e) => Some(Err(format!("HEAD failed: {e:?}"))),
                    },
                    _ => {
                        let l = c.list_objects_v2().bucket("race").send().await.unwrap();
                        match l.contents().first() {
                            Some(o) if o.e_tag().is_some_and(|e| e.contains('-')) => {
                                Some(Err(format!("listed with a synthesized ETag {:?}", o.e_tag())))
                            }
                            Some(_) => Some(Ok(())),
                            None => None,
                        }
                    }
                };
                match outcome {
                    Some(Err(e)) => bad.push(e),
                    Some(Ok(())) => {
                        answers.fetch_add(1, Ordering::Relaxed);
                    }
                    None => {
                        missing.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            bad
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.await.unwrap();
    }
    let mut bad = Vec::new();
    for r in readers {
        bad.extend(r.await.unwrap());
    }
    let (ok, gone) = (answers.load(Ordering::Relaxed), missing.load(Ordering::Relaxed));
    eprintln!("{ok} consistent answers, {gone} 404s, {} inconsistent", bad.len());
    assert!(ok > 100, "too few answers to mean anything: {ok}");
    assert!(bad.is_empty(), "{} inconsistent answers, first: {:?}", bad.len(), &bad[..bad.len().min(5)]);
}

/// SIGKILL at random instants while workers overwrite, delete and complete multipart uploads:
/// after each restart every acknowledged write is there with its bytes, ETag, content type and
/// metadata (or, for the one write in flight per worker, either outcome), no acknowledged
/// delete comes back, listings match, and staging leftovers are swept.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn kill_nine_at_random_instants_keeps_every_acknowledged_write() {
    use rand::Rng;
    let mut gw = Gateway::start();
    gw.client().create_bucket().bucket("crash").send().await.unwrap();
    let rounds = env_num("PENSTOCK_CRASH_ROUNDS", 4);
    let workers = 4u64;
    let mut ledgers: Vec<crash::Ledger> = (0..workers).map(|_| crash::Ledger::default()).collect();
    fn key_of(w: u64, _round: u64, seq: u64) -> String {
        format!("w{w}/k{}", seq % 4)
    }
    for round in 0..rounds {
        let c = client_without_retries(&gw);
        let tasks: Vec<_> = ledgers
            .drain(..)
            .enumerate()
            .map(|(w, l)| tokio::spawn(crash::worker(c.clone(), "crash".into(), key_of, w as u64, round, l)))
            .collect();
        let wait = rand::thread_rng().gen_range(200..1200);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        tokio::task::block_in_place(|| gw.kill());
        for t in tasks {
            ledgers.push(t.await.unwrap());
        }
        tokio::task::block_in_place(|| gw.restart());

        let problems = crash::settle(&gw.client(), "crash", round, &mut ledgers).await;
        assert!(problems.is_empty(), "after kill -9 in round {round}: {problems:#?}");
    }
    // Staging files of the interrupted writes are swept after a restart.
    let tmp = gw.folder_dir(".penstock").join(".penstock/tmp");
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::fs::read_dir(&tmp).map(|mut d| d.next().is_some()).unwrap_or(false) {
        assert!(Instant::now() < deadline, "staging leftovers were not swept");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A client that fails at once when the gateway is gone, so a worker stops at the kill.
fn client_without_retries(gw: &Gateway) -> aws_sdk_s3::Client {
    crash::without_retries(&gw.client())
}

/// CompleteMultipartUpload racing AbortMultipartUpload: exactly one wins; the other gets 404
/// NoSuchUpload; the object exists exactly when Complete won.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn complete_racing_abort_has_one_winner() {
    let (_gw, c) = Gateway::with_bucket("complete-abort").await;
    let mut wins = [0; 2];
    for i in 0..12 {
        let key = format!("k{i}");
        let up = c.create_multipart_upload().bucket("complete-abort").key(&key).send().await.unwrap();
        let id = up.upload_id().unwrap().to_owned();
        let p = c
            .upload_part()
            .bucket("complete-abort")
            .key(&key)
            .upload_id(&id)
            .part_number(1)
            .body(ByteStream::from(pattern(i, 3 << 20)))
            .send()
            .await
            .unwrap();
        let parts = CompletedMultipartUpload::builder()
            .parts(CompletedPart::builder().part_number(1).e_tag(p.e_tag().unwrap()).build())
            .build();
        let complete = c
            .complete_multipart_upload()
            .bucket("complete-abort")
            .key(&key)
            .upload_id(&id)
            .multipart_upload(parts)
            .send();
        let abort = c.abort_multipart_upload().bucket("complete-abort").key(&key).upload_id(&id).send();
        let (done, aborted) = if i % 2 == 0 {
            tokio::join!(complete, abort)
        } else {
            let (a, d) = tokio::join!(abort, complete);
            (d, a)
        };
        let exists = c.head_object().bucket("complete-abort").key(&key).send().await.is_ok();
        match (done, aborted) {
            (Ok(_), Err(e)) => {
                assert_eq!(e.code(), Some("NoSuchUpload"), "abort lost with {e:?}");
                assert!(exists, "Complete won but there is no object");
                wins[0] += 1;
            }
            (Err(e), Ok(_)) => {
                assert_eq!(e.code(), Some("NoSuchUpload"), "complete lost with {e:?}");
                assert!(!exists, "Abort won but the object exists");
                wins[1] += 1;
            }
            (d, a) => panic!("round {i}: both or neither won: complete {d:?}, abort {a:?}"),
        }
    }
    eprintln!("complete won {} times, abort {}", wins[0], wins[1]);
}
