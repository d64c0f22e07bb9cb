//! Both metadata engines pass the one conformance suite (`metadata/tests/conformance`): the
//! embedded RocksDB engine, and the PostgreSQL engine against a real server started here. The
//! PostgreSQL engine is also checked for what only a shared engine has: schema migrations applied
//! once by gateways starting together, a newer schema refused, and calls failing fast as
//! unavailable while the server is down, then recovering by themselves.

#[path = "../../metadata/tests/conformance/mod.rs"]
mod conformance;

use std::sync::Arc;
use std::time::{Duration, Instant};

use penstock_metadata::{
    MetaError, Metadata, PgMetadata, PgOptions, RocksMetadata, Store, StoreOptions, PG_SCHEMA_VERSION,
};
use penstock_tests::postgres::Postgres;

fn opts(url: String) -> PgOptions {
    PgOptions { url, pool_size: 16, wait: Duration::from_secs(2), cache: Duration::from_millis(500) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn rocksdb_engine_conforms() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("metadata"), StoreOptions::default()).unwrap();
    conformance::run(Arc::new(RocksMetadata::new(store))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_engine_conforms() {
    let pg = Postgres::start();
    let m = PgMetadata::connect(&opts(pg.database("conform"))).await.unwrap();
    assert_eq!(m.schema_version().await.unwrap(), Some(PG_SCHEMA_VERSION));
    conformance::run(Arc::new(m)).await;
}

/// The suite again with every transaction serializable, as CockroachDB always runs and as
/// PostgreSQL or YugabyteDB may be set: racing charges and bucket claims are then aborted with
/// serialization failures (40001), which the engine must retry, never report.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_engine_conforms_under_serializable_isolation() {
    let pg = Postgres::start();
    let url = pg.database("serial");
    let (client, conn) = tokio_postgres_connect(&url).await;
    client.batch_execute("ALTER DATABASE serial SET default_transaction_isolation TO 'serializable'").await.unwrap();
    drop(client);
    conn.abort();
    let m: Arc<dyn Metadata> = Arc::new(PgMetadata::connect(&opts(url)).await.unwrap());
    conformance::run(m.clone()).await;
    conformance::conditional_races(m.clone(), m).await;
}

/// Several gateways sharing the database are several engines: they see one another's writes at
/// once, and the atomic calls hold between them (checked by the suite's races run across two).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_engines_on_one_database_agree() {
    let pg = Postgres::start();
    let url = pg.database("shared");
    // Started together: each applies the migrations it finds missing, exactly once in all.
    let o = opts(url);
    let (a, b, c) = tokio::join!(PgMetadata::connect(&o), PgMetadata::connect(&o), PgMetadata::connect(&o));
    let (a, b, _c) = (a.unwrap(), b.unwrap(), c.unwrap());
    let rec = conformance::object(7);
    let folder = uuid::Uuid::new_v4();
    a.put_object(folder, "k", &rec).await.unwrap();
    assert_eq!(b.object(folder, "k").await.unwrap(), Some(rec), "read-after-write across engines");
    let scope = penstock_metadata::QuotaScope::user(uuid::Uuid::new_v4());
    a.set_quota_limit(&scope, Some(1000)).await.unwrap();
    let (a, b): (Arc<dyn Metadata>, Arc<dyn Metadata>) = (Arc::new(a), Arc::new(b));
    let tasks: Vec<_> = (0..40)
        .map(|i| {
            let m = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { m.charge(&scope, 100, true).await.unwrap() })
        })
        .collect();
    let mut done = 0;
    for t in tasks {
        done += u64::from(t.await.unwrap() == penstock_metadata::Charge::Done);
    }
    assert_eq!(done, 10);
    assert_eq!(b.quota(&scope).await.unwrap().unwrap().usage_bytes, 1000);
    conformance::bucket_edit_race(a.clone(), b.clone()).await;
    conformance::tenant_edit_race(a.clone(), b.clone()).await;
    conformance::tenant_name_race(a.clone(), b.clone()).await;
    conformance::conditional_races(a, b).await;
}

#[tokio::test]
async fn postgres_refuses_a_newer_schema() {
    let pg = Postgres::start();
    let url = pg.database("newer");
    let m = PgMetadata::connect(&opts(url.clone())).await.unwrap();
    drop(m);
    let (client, conn) = tokio_postgres_connect(&url).await;
    client
        .execute("INSERT INTO penstock_schema (version, applied_ms) VALUES ($1, 0)", &[&(PG_SCHEMA_VERSION as i32 + 1)])
        .await
        .unwrap();
    drop(client);
    conn.abort();
    match PgMetadata::connect(&opts(url)).await {
        Err(MetaError::NewerSchema { found, known }) => {
            assert_eq!((found, known), (PG_SCHEMA_VERSION + 1, PG_SCHEMA_VERSION))
        }
        other => panic!("expected NewerSchema, got {:?}", other.err()),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_outage_fails_fast_and_recovers() {
    let mut pg = Postgres::start();
    let m = PgMetadata::connect(&opts(pg.database("outage"))).await.unwrap();
    m.domains().await.unwrap();
    pg.stop();
    let t = Instant::now();
    match m.domains().await {
        Err(MetaError::Unavailable(_)) => {}
        other => panic!("expected Unavailable while the server is down, got {other:?}"),
    }
    assert!(t.elapsed() < Duration::from_secs(5), "failed after {:?}", t.elapsed());
    pg.restart();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match m.domains().await {
            Ok(_) => break,
            Err(e) => assert!(Instant::now() < deadline, "not recovered: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Writes the engine leaves unsynced (a charge with `sync` unset, a publish's second half) are
/// made durable by the synced write after them: a database crash right after an acknowledged
/// publish keeps the charge and the published record, the note gone or left for the janitor.
/// Each round crashes the server (immediate shutdown) right after the writes and lets it recover.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unsynced_writes_survive_a_database_crash_behind_a_synced_one() {
    use penstock_metadata::QuotaScope;
    let mut pg = Postgres::start();
    let url = pg.database("crash");
    let s = QuotaScope::user(uuid::Uuid::new_v4());
    let f = uuid::Uuid::new_v4();
    for round in 1..=3u64 {
        let m = PgMetadata::connect(&opts(url.clone())).await.unwrap();
        let key = format!("k{round}");
        let rec = conformance::object(round);
        m.charge(&s, 100, false).await.unwrap();
        m.begin_publish(f, &key, &rec, "gw", None).await.unwrap();
        m.end_publish(f, &key, Some(&rec)).await.unwrap();
        pg.crash_and_restart();
        let m = PgMetadata::connect(&opts(url.clone())).await.unwrap();
        let usage = m.quota(&s).await.unwrap().map(|q| q.usage_bytes);
        assert_eq!(usage, Some(100 * round), "round {round}: a charge was lost");
        assert_eq!(m.object(f, &key).await.unwrap(), Some(rec), "round {round}");
        for p in m.publishing().await.unwrap() {
            assert_eq!((p.folder, p.key.as_str()), (f, key.as_str()), "only this round's note may be left");
            m.end_publish(f, &key, m.object(f, &key).await.unwrap().as_ref()).await.unwrap();
        }
    }
}

/// A dump of the embedded engine imported into PostgreSQL and exported again is the same dump,
/// and so is the way back.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn dumps_move_every_record_between_engines() {
    use penstock_metadata::dump;
    let dir = tempfile::tempdir().unwrap();
    let open_rocks = |name: &str| {
        let store = Store::open(&dir.path().join(name), StoreOptions::default()).unwrap();
        Arc::new(RocksMetadata::new(store)) as Arc<dyn Metadata>
    };
    let first = open_rocks("first");
    conformance::run(first.clone()).await;
    conformance::populate_for_dump(first.as_ref()).await;
    let mut a = Vec::new();
    let counts = dump::export(first.as_ref(), &mut a).await.unwrap();
    assert!(counts.objects > 0 && counts.uploads > 0 && counts.parts > 0 && counts.quotas > 0, "{counts:?}");

    let pg = Postgres::start();
    let shared = PgMetadata::connect(&opts(pg.database("moved"))).await.unwrap();
    assert_eq!(dump::import(&shared, &mut a.as_slice()).await.unwrap(), counts);
    let mut b = Vec::new();
    dump::export(&shared, &mut b).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&b), String::from_utf8_lossy(&a), "PostgreSQL holds what RocksDB held");
    let e = dump::import(&shared, &mut a.as_slice()).await.unwrap_err();
    assert!(e.to_string().contains("already has buckets"), "{e}");

    let back = open_rocks("back");
    dump::import(back.as_ref(), &mut b.as_slice()).await.unwrap();
    let mut c = Vec::new();
    dump::export(back.as_ref(), &mut c).await.unwrap();
    assert_eq!(String::from_utf8_lossy(&c), String::from_utf8_lossy(&a), "and back");
    assert!(dump::import(back.as_ref(), &mut &b"{\"domain\":{}}\n"[..]).await.is_err());
}

async fn tokio_postgres_connect(url: &str) -> (tokio_postgres::Client, tokio::task::JoinHandle<()>) {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls).await.unwrap();
    (
        client,
        tokio::spawn(async move {
            let _ = conn.await;
        }),
    )
}
