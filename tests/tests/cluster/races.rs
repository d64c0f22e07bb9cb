//! Races between gateways sharing one key: writers, deletes and conditional requests through
//! different gateways at the same instant, and a claim a live gateway left behind. What orders
//! them is the key's claim in the database (`Gateway::hold_key`) and the compare-and-set of
//! conditional writes (`Metadata::expectation`); each test here failed without them.

use super::*;

/// Conditional writes hold across gateways, not only under one gateway's key lock: racing
/// `If-None-Match: *` PUTs (and copies) of one key sent to all three gateways at once create it
/// exactly once, racing `If-Match` PUTs judged against the same ETag replace it exactly once, in
/// an unversioned and in a versioned bucket; the losers get 412 (or 409 while the winner is
/// still publishing) and the key holds the winner's bytes on every gateway.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn conditional_writes_hold_across_gateways() {
    use aws_sdk_s3::types::{BucketVersioningStatus, MetadataDirective, VersioningConfiguration};
    let c = Cluster::start(3);
    let g: Vec<Client> = (0..3).map(|i| c.gw(i).client()).collect();
    g[0].create_bucket().bucket("locks").send().await.unwrap();
    g[0].create_bucket().bucket("vlocks").send().await.unwrap();
    let conf = VersioningConfiguration::builder().status(BucketVersioningStatus::Enabled).build();
    g[1].put_bucket_versioning().bucket("vlocks").versioning_configuration(conf).send().await.unwrap();
    put(&g[2], "locks", "source", &pattern(999, 4096)).await;
    tokio::time::sleep(PROPAGATION).await;

    // One race: 12 writers, four per gateway, each with its own bytes; answers who won.
    #[derive(Clone)]
    enum Cond {
        Absent,
        Matching(String),
        CopyAbsent,
    }
    async fn race(g: &[Client], bucket: &str, key: &str, cond: Cond, seed: u64) -> Vec<u64> {
        let writes: Vec<_> = (0..12u64)
            .map(|i| {
                let (gw, bucket, key, cond) =
                    (g[i as usize % 3].clone(), bucket.to_owned(), key.to_owned(), cond.clone());
                tokio::spawn(async move {
                    let r = match cond {
                        Cond::CopyAbsent => {
                            let req = gw.copy_object().bucket(bucket).key(key).copy_source("locks/source");
                            let req =
                                req.metadata("writer", i.to_string()).metadata_directive(MetadataDirective::Replace);
                            req.if_none_match("*").send().await.map(drop).map_err(|e| (code(&e), status(&e)))
                        }
                        cond => {
                            let body = ByteStream::from(pattern(seed + i, 20_000));
                            let req = gw.put_object().bucket(bucket).key(key).body(body);
                            let req = match cond {
                                Cond::Matching(tag) => req.if_match(tag),
                                _ => req.if_none_match("*"),
                            };
                            req.send().await.map(drop).map_err(|e| (code(&e), status(&e)))
                        }
                    };
                    (i, r)
                })
            })
            .collect();
        let mut won = Vec::new();
        for w in writes {
            match w.await.unwrap() {
                (i, Ok(())) => won.push(i),
                (_, Err((code, status))) => assert!(
                    (code == "PreconditionFailed" && status == 412)
                        || (code == "ConditionalRequestConflict" && status == 409),
                    "a lost race is 412 or 409, not {code} {status}"
                ),
            }
        }
        won
    }
    for bucket in ["locks", "vlocks"] {
        for round in 0..4u64 {
            let key = format!("lock-{round}");
            let seed = 1000 * (round + 1);
            let won = race(&g, bucket, &key, Cond::Absent, seed).await;
            assert_eq!(won.len(), 1, "{bucket}/{key}: exactly one If-None-Match create wins: {won:?}");
            let first = pattern(seed + won[0], 20_000);
            let tag = format!("\"{}\"", penstock_tests::md5_hex(&first));
            for gw in &g {
                assert_eq!(get(gw, bucket, &key).await, first, "{bucket}/{key}: the winner's bytes everywhere");
            }
            let won = race(&g, bucket, &key, Cond::Matching(tag), seed + 100).await;
            assert_eq!(won.len(), 1, "{bucket}/{key}: exactly one If-Match replace wins: {won:?}");
            for gw in &g {
                assert_eq!(get(gw, bucket, &key).await, pattern(seed + 100 + won[0], 20_000));
            }
            if bucket == "vlocks" {
                let v = g[0].list_object_versions().bucket(bucket).prefix(&key).send().await.unwrap();
                assert_eq!(v.versions().len(), 2, "{key}: one version per winning write");
            }
        }
    }
    let won = race(&g, "locks", "copied", Cond::CopyAbsent, 0).await;
    assert_eq!(won.len(), 1, "exactly one If-None-Match copy wins: {won:?}");
    let h = g[1].head_object().bucket("locks").key("copied").send().await.unwrap();
    assert_eq!(h.metadata().and_then(|m| m.get("writer")), Some(&won[0].to_string()));
}

/// PUTs of one key on two gateways racing each other and a DELETE on a third never leave a
/// writer's bytes with another's record (or none): each gateway claims the key in the shared
/// engine before it reads what its change depends on and keeps it until record and file are
/// both in place (`Gateway::hold_key`). After every round the key is absent or holds one
/// writer's bytes with that writer's content type and ETag. Without the claims this failed
/// within 1 to 12 rounds, with and without the DELETE (the last writer's bytes served as
/// binary/octet-stream).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn racing_writes_and_deletes_on_different_gateways_keep_records_with_their_files() {
    let c = Cluster::start(3);
    let g: Vec<Client> = (0..3).map(|i| c.gw(i).client()).collect();
    g[0].create_bucket().bucket("race").send().await.unwrap();
    tokio::time::sleep(PROPAGATION).await;
    for round in 0..150u32 {
        let writes: Vec<_> = (0..2u32)
            .map(|w| {
                let gw = g[w as usize].clone();
                tokio::spawn(async move {
                    let body = format!("round {round} writer {w}");
                    let req = gw.put_object().bucket("race").key("k").content_type(format!("x/{round}-{w}"));
                    req.body(ByteStream::from(body.into_bytes())).send().await.unwrap();
                })
            })
            .collect();
        let delete = {
            let gw = g[2].clone();
            tokio::spawn(async move { gw.delete_object().bucket("race").key("k").send().await.unwrap() })
        };
        for w in writes {
            w.await.unwrap();
        }
        delete.await.unwrap();
        match g[round as usize % 3].get_object().bucket("race").key("k").send().await {
            Ok(o) => {
                let ctype = o.content_type().unwrap_or_default().to_owned();
                let etag = o.e_tag().unwrap_or_default().to_owned();
                let body = o.body.collect().await.unwrap().into_bytes();
                let text = String::from_utf8_lossy(&body).into_owned();
                let w = text.rsplit(' ').next().unwrap();
                assert_eq!(ctype, format!("x/{round}-{w}"), "round {round}: {text:?} with another's content type");
                assert_eq!(etag, format!("\"{}\"", penstock_tests::md5_hex(&body)), "round {round}");
            }
            Err(e) => assert_eq!(code(&e), "NoSuchKey", "round {round}"),
        }
    }
}

/// A conditional delete through one gateway racing an overwrite through another never removes
/// the overwrite: the delete judges and unlinks under the key's claim, which the overwrite must
/// take too. Each round writes v1, then at once overwrites it with v2 on one gateway and deletes
/// `If-Match: v1` on another: whichever goes first, the key ends holding v2 (the delete either ran
/// before the overwrite, or found v2 and answered 412).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_conditional_delete_never_removes_an_overwrite_on_another_gateway() {
    let c = Cluster::start(3);
    let g: Vec<Client> = (0..3).map(|i| c.gw(i).client()).collect();
    g[0].create_bucket().bucket("cdel").send().await.unwrap();
    tokio::time::sleep(PROPAGATION).await;
    for round in 0..120u32 {
        let v1 = format!("v1 of round {round}");
        let tag = format!("\"{}\"", penstock_tests::md5_hex(v1.as_bytes()));
        put(&g[round as usize % 3], "cdel", "k", v1.as_bytes()).await;
        let v2 = format!("v2 of round {round}");
        let over = {
            let (gw, body) = (g[(round as usize + 1) % 3].clone(), v2.clone().into_bytes());
            tokio::spawn(
                async move { gw.put_object().bucket("cdel").key("k").body(ByteStream::from(body)).send().await },
            )
        };
        // Started 0 to 7 ms after the overwrite, so that over the rounds its judgement falls
        // before, inside and after the overwrite's publish.
        let delete = {
            let gw = g[(round as usize + 2) % 3].clone();
            let lag = Duration::from_micros(u64::from(round % 8) * 1000 + u64::from(round % 5) * 170);
            tokio::spawn(async move {
                tokio::time::sleep(lag).await;
                gw.delete_object().bucket("cdel").key("k").if_match(tag).send().await
            })
        };
        over.await.unwrap().unwrap();
        if let Err(e) = delete.await.unwrap() {
            assert_eq!((code(&e), status(&e)), ("PreconditionFailed".to_owned(), 412), "round {round}");
        }
        assert_eq!(get(&g[round as usize % 3], "cdel", "k").await, v2.as_bytes(), "round {round}: the overwrite stays");
    }
}

/// Notes the object at `key` (in whichever folder holds it) as claimed by gateway `instance`,
/// as a write in flight there holds it.
async fn claim_as(db: &tokio_postgres::Client, key: &str, instance: &str) {
    let noted = db
        .execute(
            "INSERT INTO publishing (folder_id, key, since_ms, instance)
             SELECT folder_id, key, 0, $2 FROM objects WHERE key = convert_to($1, 'UTF8')",
            &[&key, &instance],
        )
        .await
        .unwrap();
    assert_eq!(noted, 1, "{key} noted as claimed by {instance}");
}

/// A claim a live gateway left in its own name (a release that failed during a database
/// hiccup, say) would keep every other gateway from writing that key (they wait for the claim,
/// then answer 503) for as long as the gateway lives: its janitor settles such notes of its own
/// every `gone_after` (3 s here), and the key can be written through the others again.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_key_a_live_gateway_left_claimed_is_freed_by_that_gateway() {
    let c = Cluster::start(2);
    let (a, b) = (c.gw(0).client(), c.gw(1).client());
    a.create_bucket().bucket("stuck").send().await.unwrap();
    put(&a, "stuck", "k", b"first").await;
    let owner = ready_of(&c, 0)["checks"]["instance"].as_str().unwrap().to_owned();
    let (db, conn) = tokio_postgres::connect(&c.pg.url("penstock"), tokio_postgres::NoTls).await.unwrap();
    let conn = tokio::spawn(conn);
    claim_as(&db, "k", &owner).await;
    // Through gateway 1 the write waits for the claim; it succeeds once gateway 0 has settled
    // its leftover (within a janitor period), never with a record that is not its own.
    let started = Instant::now();
    let out = b.put_object().bucket("stuck").key("k").content_type("x/second").body(ByteStream::from_static(b"second"));
    out.send().await.unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "freed within a janitor period: {:?}", started.elapsed());
    let o = a.get_object().bucket("stuck").key("k").send().await.unwrap();
    assert_eq!(o.content_type(), Some("x/second"));
    assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), b"second");
    no_claim_left(&db).await;
    conn.abort();
}

/// Asserts that no key is noted as claimed once the settling write of the last acknowledged
/// write has run: the answer leaves once the file is published and the settling write that
/// drops the note follows it (put.rs), so the note may outlive the answer by a moment, never
/// by a janitor period.
async fn no_claim_left(db: &tokio_postgres::Client) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left: i64 = db.query_one("SELECT count(*) FROM publishing", &[]).await.unwrap().get(0);
        if left == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "no claim left behind: {left} noted 2 s after the answer");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The sweep for claims a gateway left in its own name (every `gone_after`, 3 s here) lists the
/// notes, then takes each key's lock: a note listed while a write of its own was in flight is
/// gone by then, ended by that write, and is neither noted again nor counted as a leftover.
/// Before, the sweep claimed such a key afresh, settled it once more and reported it as left
/// claimed, on every sweep under a steady load of writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn writes_in_flight_are_not_taken_for_leftover_claims() {
    let c = Cluster::start(1);
    let a = c.gw(0).client();
    a.create_bucket().bucket("busy").send().await.unwrap();
    // Two sweeps' worth of steady writes, eight at a time.
    let until = Instant::now() + Duration::from_secs(7);
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let a = a.clone();
            tokio::spawn(async move {
                let mut n = 0u32;
                while Instant::now() < until {
                    put(&a, "busy", &format!("w{w}/{}", n % 16), format!("{w} {n}").as_bytes()).await;
                    n += 1;
                }
                n
            })
        })
        .collect();
    let mut written = 0;
    for w in writers {
        written += w.await.unwrap();
    }
    assert!(written > 100, "a steady load: {written} writes");
    let (db, conn) = tokio_postgres::connect(&c.pg.url("penstock"), tokio_postgres::NoTls).await.unwrap();
    let conn = tokio::spawn(conn);
    no_claim_left(&db).await;
    let log = c.gw(0).log();
    assert!(log.contains("penstock listening"), "the gateway's log is read");
    assert!(
        !log.contains("settled keys this gateway had left claimed"),
        "writes in flight were taken for leftovers:\n{}",
        log.lines().filter(|l| l.contains("left claimed")).collect::<Vec<_>>().join("\n")
    );
    conn.abort();
}

/// A gateway killed while it holds a key, and started again on its data directory, frees the
/// key at once: the data directory names its previous run, which it knows to be gone, so its
/// claims and pending publishes are settled at start instead of after `gone_after` (60 s here),
/// during which every other gateway's write of the key waited and answered 503.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_restarted_gateway_frees_the_keys_its_previous_run_held() {
    let (mut c, before, db, conn) = two_gateways_with_a_key("restart").await;
    // Gateway 0 dies holding the key (the claim of a write in flight).
    claim_as(&db, "k", &before).await;
    c.gateways[0].crash_and_restart();
    let after = ready_of(&c, 0)["checks"]["instance"].as_str().unwrap().to_owned();
    assert_ne!(before, after, "a new run, a new instance");
    let took = written_through_the_other(&c, &db, "restart", &before, 0).await;
    assert!(took < Duration::from_secs(8), "freed at the restart: {took:?}");
    conn.abort();
}

/// Two gateways that count a silent peer as gone after 60 s, a bucket with key `k` written
/// through gateway 0, gateway 0's instance, and a connection to the database.
async fn two_gateways_with_a_key(
    bucket: &str,
) -> (Cluster, String, tokio_postgres::Client, tokio::task::JoinHandle<()>) {
    let c = Cluster::start_with_gone_after(2, 60.0);
    let a = c.gw(0).client();
    a.create_bucket().bucket(bucket).send().await.unwrap();
    put(&a, bucket, "k", b"first").await;
    let instance = ready_of(&c, 0)["checks"]["instance"].as_str().unwrap().to_owned();
    let (db, conn) = tokio_postgres::connect(&c.pg.url("penstock"), tokio_postgres::NoTls).await.unwrap();
    let conn = tokio::spawn(async move {
        let _ = conn.await;
    });
    (c, instance, db, conn)
}

/// Writes key `k` of `bucket` through gateway 1 while gateway 0's run `gone` held it, and checks
/// that the write is what gateway `reader` serves, that no claim is left and that `gone` is
/// forgotten; answers how long the write took.
async fn written_through_the_other(
    c: &Cluster,
    db: &tokio_postgres::Client,
    bucket: &str,
    gone: &str,
    reader: usize,
) -> Duration {
    let started = Instant::now();
    let b = c.gw(1).client();
    let out = b.put_object().bucket(bucket).key("k").content_type("x/second").body(ByteStream::from_static(b"second"));
    out.send().await.unwrap();
    let took = started.elapsed();
    let o = c.gw(reader).client().get_object().bucket(bucket).key("k").send().await.unwrap();
    assert_eq!(o.content_type(), Some("x/second"));
    no_claim_left(db).await;
    let known: i64 = db.query_one("SELECT count(*) FROM gateways WHERE instance = $1", &[&gone]).await.unwrap().get(0);
    assert_eq!(known, 0, "the gateway that is gone is forgotten");
    took
}

/// A gateway killed while it holds a key frees it within seconds, not after `gone_after` (60 s
/// here): its sign of life in the database (an advisory lock on a connection of its own) falls
/// with the process, and the survivor, asked to look by the write that waits for the key,
/// cleans up after it. Before, that write waited its 10 s and answered 503 `SlowDown`, as every
/// write of the key would until `gone_after` had passed. A live gateway is never taken for gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_gateway_frees_the_keys_it_held_in_seconds() {
    let (mut c, victim, db, conn) = two_gateways_with_a_key("killed").await;
    let a = c.gw(0).client();
    // A gateway believes a missing sign of life once its own has held for 10 s (liveness.rs).
    tokio::time::sleep(Duration::from_secs(11)).await;
    let signs: i64 =
        db.query_one("SELECT count(*) FROM gateways WHERE liveness IS NOT NULL", &[]).await.unwrap().get(0);
    assert_eq!(signs, 2, "both gateways registered with a sign of life, and neither taken for gone");

    // A live gateway whose own connection breaks takes its lock again at once, and is not taken
    // for gone: still registered, and writing, seconds later.
    let lock_of = "SELECT l.pid FROM pg_locks l JOIN gateways g ON l.locktype = 'advisory'
           AND l.classid = ((g.liveness >> 32) & 4294967295)::oid AND l.objid = (g.liveness & 4294967295)::oid
         WHERE g.instance = $1";
    let holder: i32 = db.query_one(lock_of, &[&victim]).await.unwrap().get(0);
    db.execute("SELECT pg_terminate_backend($1)", &[&holder]).await.unwrap();
    tokio::time::sleep(Duration::from_secs(4)).await;
    let known: i64 =
        db.query_one("SELECT count(*) FROM gateways WHERE instance = $1", &[&victim]).await.unwrap().get(0);
    assert_eq!(known, 1, "a gateway whose connection broke was taken for gone");
    let again: i32 = db.query_one(lock_of, &[&victim]).await.unwrap().get(0);
    assert_ne!(again, holder, "the lock is held again, on a new connection");
    put(&a, "killed", "after-the-break", b"still writing").await;

    // Gateway 0 dies holding the key (the claim of a write in flight).
    claim_as(&db, "k", &victim).await;
    c.gateways[0].kill();
    let took = written_through_the_other(&c, &db, "killed", &victim, 1).await;
    assert!(took < Duration::from_secs(8), "freed within seconds: {took:?}");
    conn.abort();
}

/// The stripe of a gateway's key locks that `key` of `folder` falls in (`s3::locks`, 1024
/// stripes, hashed as there: same toolchain, same hasher).
fn stripe(folder: uuid::Uuid, key: &str) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    let mut h = DefaultHasher::new();
    folder.hash(&mut h);
    key.hash(&mut h);
    h.finish() % 1024
}

/// A write waiting for a key another gateway holds does not hold up this gateway's writes of
/// other keys, those whose local lock shares its stripe included: the wait for the claim runs
/// without the local lock. (Before, such a key's PUT queued behind the waiter, up to its 10 s.)
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_write_waiting_for_another_gateway_does_not_hold_up_other_keys() {
    let c = Cluster::start(2);
    let b = c.gw(1).client();
    b.create_bucket().bucket("stripes").send().await.unwrap();
    put(&b, "stripes", "held", b"first").await;
    let (db, conn) = tokio_postgres::connect(&c.pg.url("penstock"), tokio_postgres::NoTls).await.unwrap();
    let conn = tokio::spawn(conn);
    let folder: uuid::Uuid =
        db.query_one("SELECT folder_id FROM objects WHERE key = 'held'::bytea", &[]).await.unwrap().get(0);
    let near = (0..1_000_000)
        .map(|i| format!("near-{i}"))
        .find(|k| stripe(folder, k) == stripe(folder, "held"))
        .expect("a key in the same stripe");
    // Held by a gateway no one knows: nothing settles it, so the write of it waits.
    let noted = db
        .execute(
            "INSERT INTO publishing (folder_id, key, since_ms, instance) VALUES ($1, 'held'::bytea, 0, 'elsewhere')",
            &[&folder],
        )
        .await
        .unwrap();
    assert_eq!(noted, 1);
    let waiting = {
        let b = b.clone();
        tokio::spawn(async move {
            let r = b.put_object().bucket("stripes").key("held").body(ByteStream::from_static(b"second"));
            r.send().await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    let started = Instant::now();
    put(&b, "stripes", &near, b"beside").await;
    assert!(started.elapsed() < Duration::from_secs(2), "a key of the same stripe waited {:?}", started.elapsed());
    assert!(!waiting.is_finished(), "the held key's write is still waiting");
    assert_eq!(get(&b, "stripes", "held").await, b"first");
    // Released, the key is written by the waiter.
    db.execute("DELETE FROM publishing WHERE instance = 'elsewhere'", &[]).await.unwrap();
    waiting.await.unwrap().unwrap();
    assert_eq!(get(&b, "stripes", "held").await, b"second");
    conn.abort();
}
