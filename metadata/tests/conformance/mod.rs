//! What every metadata engine must do, checked through the [`Metadata`] interface alone. Each
//! engine's test file opens a fresh, empty engine and hands it to [`run`]; a shared engine
//! (PostgreSQL) must also hold these properties when the calls come from several gateways, which
//! the races below exercise from many tasks at once.

use std::sync::Arc;

use penstock_metadata::{
    BucketRecord, Charge, Checksums, Domain, Expect, Fingerprint, KeyEdit, Keypair, MetaError, Metadata, ObjectAttrs,
    ObjectRecord, PartRecord, Perm, Project, QuotaScope, Role, UploadId, UploadQuery, UploadRecord, User, VersionQuery,
    VersionRecord, Versioning,
};
use uuid::Uuid;

/// Runs every check against `m`, a fresh engine with no records.
pub async fn run(m: Arc<dyn Metadata>) {
    tenants(m.as_ref()).await;
    tenant_edit_race(m.clone(), m.clone()).await;
    tenant_name_race(m.clone(), m.clone()).await;
    buckets(m.as_ref()).await;
    bucket_name_race(m.clone()).await;
    bucket_edit_race(m.clone(), m.clone()).await;
    quotas(m.as_ref()).await;
    quota_race(m.clone()).await;
    objects(m.as_ref()).await;
    publishing(m.as_ref()).await;
    conditional(m.as_ref()).await;
    multipart(m.as_ref()).await;
    versions(m.as_ref()).await;
    delete_bucket_takes_its_records(m.as_ref()).await;
    gateways(m.as_ref()).await;
}

async fn gateways(m: &dyn Metadata) {
    m.heartbeat("gwa").await.unwrap();
    m.heartbeat("gwb").await.unwrap();
    let known = m.gateways().await.unwrap();
    for id in ["gwa", "gwb"] {
        let age = known.iter().find(|(i, _)| i == id).map(|(_, a)| *a);
        assert!(age.is_some_and(|a| a < 5_000), "{id} just spoke: {known:?}");
    }
    assert!(!m.forget_gateway("gwa", 60_000).await.unwrap(), "not silent long enough");
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    m.heartbeat("gwb").await.unwrap();
    assert!(m.forget_gateway("gwa", 250).await.unwrap());
    assert!(!m.forget_gateway("gwb", 250).await.unwrap(), "gwb spoke again");
    let known: Vec<String> = m.gateways().await.unwrap().into_iter().map(|(i, _)| i).collect();
    assert!(!known.contains(&"gwa".to_owned()) && known.contains(&"gwb".to_owned()), "{known:?}");
}

fn bucket(domain: &str, name: &str) -> BucketRecord {
    let (id, owner) = (Uuid::new_v4(), QuotaScope::user(Uuid::new_v4()));
    BucketRecord {
        permission: Perm::Rw,
        ..BucketRecord::new(name.to_owned(), domain.to_owned(), id, "local".to_owned(), owner, 1_700_000_000_000)
    }
}

/// An object record whose fields all differ with `seed`, so a mixed-up record shows.
pub fn object(seed: u64) -> ObjectRecord {
    let mut attrs = ObjectAttrs { content_type: Some(format!("type/{seed}")), ..Default::default() };
    attrs.user_metadata.insert("seed".into(), seed.to_string());
    let checksums = Checksums { crc32c: Some(format!("crc-{seed}")), ..Default::default() };
    ObjectRecord {
        etag: format!("{seed:032x}"),
        fingerprint: Fingerprint { inode: seed, size: seed * 10, mtime_ns: seed as i128 * 1_000_000_007 },
        attrs,
        checksums,
        tags: vec![("k".into(), seed.to_string())],
        parts: Vec::new(),
        upload_id: None,
        replaces: None,
        version_id: None,
        change: None,
    }
}

/// A version row: an object version with a file when `seed` is given, else a delete marker.
pub fn version(id: &str, seq: i64, seed: Option<u64>) -> VersionRecord {
    VersionRecord {
        version_id: id.to_owned(),
        seq,
        last_modified_ms: 1_700_000_000_000 + seq,
        object: seed.map(object),
        storage: seed.map(|s| format!("{s:032x}")),
        owner: Some(Uuid::from_u128(seq as u128)),
    }
}

fn upload(key: &str, id: &UploadId) -> UploadRecord {
    UploadRecord {
        upload_id: id.clone(),
        key: key.to_owned(),
        initiated_ms: 1_700_000_000_000,
        initiator: "PKTEST".to_owned(),
        attrs: ObjectAttrs::default(),
        tags: Vec::new(),
        checksum_algorithm: None,
        checksum_type: None,
    }
}

fn part(n: u32, size: u64) -> PartRecord {
    PartRecord {
        part_number: n,
        md5_hex: format!("{n:032x}"),
        size,
        last_modified_ms: 1_700_000_000_000 + n as i64,
        checksums: Checksums::default(),
        fingerprint: None,
    }
}

async fn tenants(m: &dyn Metadata) {
    assert_eq!(m.domain("acme").await.unwrap(), None);
    for name in ["zeta", "acme"] {
        let d = Domain { name: name.into(), created_ms: 5 };
        m.put_domain(&d).await.unwrap();
    }
    let names: Vec<String> = m.domains().await.unwrap().into_iter().map(|d| d.name).collect();
    assert_eq!(names, ["acme", "zeta"], "domains come back by name");
    let again = Domain { name: "acme".into(), created_ms: 9 };
    assert!(!m.create_domain(&again).await.unwrap(), "a taken domain name is refused");
    assert_eq!(m.domain("acme").await.unwrap().unwrap().created_ms, 5, "and changes nothing");
    let beta = Domain { name: "beta".into(), created_ms: 9 };
    assert!(m.create_domain(&beta).await.unwrap());
    assert_eq!(m.domain("beta").await.unwrap(), Some(beta));

    let p = Project { id: Uuid::new_v4(), domain: "acme".into(), name: "ml".into(), created_ms: 6 };
    m.put_project(&p).await.unwrap();
    assert_eq!(m.project(p.id).await.unwrap(), Some(p.clone()));
    assert_eq!(m.projects().await.unwrap(), vec![p.clone()]);
    let twin = Project { id: Uuid::new_v4(), ..p.clone() };
    assert!(!m.create_project(&twin).await.unwrap(), "a project name is taken in its domain");
    let elsewhere = Project { id: Uuid::new_v4(), domain: "zeta".into(), ..p.clone() };
    assert!(m.create_project(&elsewhere).await.unwrap(), "and free in another");
    assert_eq!(m.project(elsewhere.id).await.unwrap(), Some(elsewhere.clone()));
    assert_eq!(m.project(twin.id).await.unwrap(), None);

    let mut u = User {
        id: Uuid::new_v4(),
        domain: "acme".into(),
        name: "alice".into(),
        role: Role::User,
        projects: [p.id].into(),
        created_ms: 7,
    };
    m.put_user(&u).await.unwrap();
    u.role = Role::DomainAdmin;
    m.put_user(&u).await.unwrap();
    assert_eq!(m.user(u.id).await.unwrap(), Some(u.clone()), "a put replaces");
    assert_eq!(m.users().await.unwrap().len(), 1);
    let twin = User { id: Uuid::new_v4(), ..u.clone() };
    assert!(!m.create_user(&twin).await.unwrap(), "a user name is taken in its domain");
    assert_eq!(m.user(twin.id).await.unwrap(), None);
    let bob = User { id: Uuid::new_v4(), name: "bob".into(), ..u.clone() };
    assert!(m.create_user(&bob).await.unwrap());
    assert_eq!(m.user(bob.id).await.unwrap(), Some(bob.clone()));

    let kp = |ak: &str| Keypair {
        access_key: ak.into(),
        sealed_secret: format!("sealed-{ak}"),
        user_id: u.id,
        enabled: true,
        created_ms: 8,
    };
    m.put_keypair(&kp("PKB")).await.unwrap();
    m.put_keypair(&kp("PKA")).await.unwrap();
    let mut off = kp("PKB");
    off.enabled = false;
    m.put_keypair(&off).await.unwrap();
    assert_eq!(m.keypair("PKB").await.unwrap(), Some(off));
    let aks: Vec<String> = m.keypairs().await.unwrap().into_iter().map(|k| k.access_key).collect();
    assert_eq!(aks, ["PKA", "PKB"], "keypairs come back by access key");
    m.delete_keypair("PKB").await.unwrap();
    assert_eq!(m.keypair("PKB").await.unwrap(), None);
    assert_eq!(m.keypairs().await.unwrap().len(), 1);
}

/// Many creations of one domain, project or user name at once, through one engine or two on
/// one database: exactly one inserts, and the stored record is the winner's.
pub async fn tenant_name_race(a: Arc<dyn Metadata>, b: Arc<dyn Metadata>) {
    async fn one_wins<T, F>(a: &Arc<dyn Metadata>, b: &Arc<dyn Metadata>, tries: Vec<T>, create: F) -> T
    where
        T: Clone + Send + 'static,
        F: Fn(Arc<dyn Metadata>, T) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send>>,
    {
        let tasks: Vec<_> = tries
            .iter()
            .cloned()
            .enumerate()
            .map(|(i, t)| tokio::spawn(create(if i % 2 == 0 { a.clone() } else { b.clone() }, t)))
            .collect();
        let mut won = Vec::new();
        for (i, t) in tasks.into_iter().enumerate() {
            if t.await.unwrap() {
                won.push(i);
            }
        }
        assert_eq!(won.len(), 1, "exactly one creation wins: {won:?}");
        tries[won[0]].clone()
    }
    let tag = Uuid::new_v4().simple().to_string();
    let domains = (0..12).map(|i| Domain { name: format!("d-{tag}"), created_ms: i }).collect();
    let d = one_wins(&a, &b, domains, |m, d| Box::pin(async move { m.create_domain(&d).await.unwrap() })).await;
    assert_eq!(b.domain(&d.name).await.unwrap(), Some(d.clone()));
    let projects = (0..12)
        .map(|i| Project { id: Uuid::new_v4(), domain: d.name.clone(), name: "team".into(), created_ms: i })
        .collect();
    let p = one_wins(&a, &b, projects, |m, p| Box::pin(async move { m.create_project(&p).await.unwrap() })).await;
    let named: Vec<Project> = a.projects().await.unwrap().into_iter().filter(|q| q.domain == d.name).collect();
    assert_eq!(named, vec![p]);
    let users = (0..12)
        .map(|i| User {
            id: Uuid::new_v4(),
            domain: d.name.clone(),
            name: "carol".into(),
            role: Role::User,
            projects: Default::default(),
            created_ms: i,
        })
        .collect();
    let u = one_wins(&a, &b, users, |m, u| Box::pin(async move { m.create_user(&u).await.unwrap() })).await;
    let named: Vec<User> = b.users().await.unwrap().into_iter().filter(|v| v.domain == d.name).collect();
    assert_eq!(named, vec![u]);
}

async fn buckets(m: &dyn Metadata) {
    let a = bucket("d1", "data");
    assert!(m.create_bucket(&a).await.unwrap());
    assert!(!m.create_bucket(&bucket("d1", "data")).await.unwrap(), "a taken name is refused");
    assert_eq!(m.bucket("d1", "data").await.unwrap(), Some(a.clone()), "the first keeps it");
    // The same name in another domain is another bucket.
    let b = bucket("d2", "data");
    assert!(m.create_bucket(&b).await.unwrap());
    assert!(m.create_bucket(&bucket("d1", "cache")).await.unwrap());
    let all: Vec<(String, String)> = m.buckets().await.unwrap().into_iter().map(|b| (b.domain, b.name)).collect();
    assert_eq!(
        all,
        [("d1".into(), "cache".into()), ("d1".into(), "data".into()), ("d2".into(), "data".into())],
        "buckets come back by domain and name"
    );
    let mut changed = a.clone();
    changed.grants.insert(Uuid::new_v4(), Perm::Ro);
    changed.permission = Perm::Wd;
    m.put_bucket(&changed).await.unwrap();
    assert_eq!(m.bucket("d1", "data").await.unwrap(), Some(changed.clone()));
    m.delete_bucket(&changed).await.unwrap();
    assert_eq!(m.bucket("d1", "data").await.unwrap(), None);
    assert_eq!(m.bucket("d2", "data").await.unwrap(), Some(b));
}

/// Many creators of one name at once: exactly one wins, and the record is the winner's.
async fn bucket_name_race(m: Arc<dyn Metadata>) {
    let tries: Vec<BucketRecord> = (0..16).map(|_| bucket("race", "contested")).collect();
    let tasks: Vec<_> = tries
        .iter()
        .cloned()
        .map(|b| {
            let m = m.clone();
            tokio::spawn(async move { m.create_bucket(&b).await.unwrap() })
        })
        .collect();
    let mut won = Vec::new();
    for (i, t) in tasks.into_iter().enumerate() {
        if t.await.unwrap() {
            won.push(i);
        }
    }
    assert_eq!(won.len(), 1, "exactly one CreateBucket wins: {won:?}");
    let stored = m.bucket("race", "contested").await.unwrap().unwrap();
    assert_eq!(stored.folder_id, tries[won[0]].folder_id);
}

/// Edits of one user made at once (each joining its own project) all stay, through one engine
/// or two; a keypair removed while an edit of it runs stays removed, and an edit of a removed
/// one is `None`.
pub async fn tenant_edit_race(a: Arc<dyn Metadata>, b: Arc<dyn Metadata>) {
    let u = User {
        id: Uuid::new_v4(),
        domain: "acme".into(),
        name: format!("racer-{}", Uuid::new_v4().simple()),
        role: Role::User,
        projects: Default::default(),
        created_ms: 8,
    };
    a.put_user(&u).await.unwrap();
    let joined: Vec<Uuid> = (0..24).map(|_| Uuid::new_v4()).collect();
    let tasks: Vec<_> = joined
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let m = if i % 2 == 0 { a.clone() } else { b.clone() };
            let id = u.id;
            tokio::spawn(async move {
                let edit = Box::new(move |u: &mut User| u.projects.insert(p));
                m.update_user(id, edit).await.unwrap().unwrap().1
            })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap());
    }
    let stored = b.user(u.id).await.unwrap().unwrap();
    assert_eq!(stored.projects, joined.iter().copied().collect(), "every membership stays");
    assert!(a.update_user(Uuid::new_v4(), Box::new(|_| true)).await.unwrap().is_none());

    for round in 0..8 {
        let ak = format!("RACEKEY{round}");
        let kp = Keypair {
            access_key: ak.clone(),
            sealed_secret: "sealed".into(),
            user_id: u.id,
            enabled: true,
            created_ms: 9,
        };
        a.put_keypair(&kp).await.unwrap();
        let (m1, m2, ak1) = (a.clone(), b.clone(), ak.clone());
        let edit = tokio::spawn(async move {
            m1.update_keypair(&ak1, Box::new(|k: &mut Keypair| std::mem::replace(&mut k.enabled, false))).await.unwrap()
        });
        m2.delete_keypair(&ak).await.unwrap();
        edit.await.unwrap();
        assert_eq!(a.keypair(&ak).await.unwrap(), None, "round {round}: a removed keypair stays removed");
        assert_eq!(b.keypair(&ak).await.unwrap(), None);
        assert!(a.update_keypair(&ak, Box::new(|_| true)).await.unwrap().is_none());
    }
}

/// Edits of one bucket made at once (each adding its own tag, as PutBucketTagging,
/// PutBucketCors, PutBucketVersioning ... of one bucket may run at once) all stay, through one
/// engine or two on one database; an edit that declines writes nothing; a missing bucket is
/// `None`.
pub async fn bucket_edit_race(a: Arc<dyn Metadata>, b: Arc<dyn Metadata>) {
    let name = format!("edits-{}", Uuid::new_v4().simple());
    let rec = bucket("race", &name);
    assert!(a.create_bucket(&rec).await.unwrap());
    let tasks: Vec<_> = (0..24)
        .map(|i| {
            let (m, name) = (if i % 2 == 0 { a.clone() } else { b.clone() }, name.clone());
            tokio::spawn(async move {
                let edit = Box::new(move |r: &mut BucketRecord| {
                    r.tags.push((format!("t{i}"), String::new()));
                    true
                });
                m.update_bucket("race", &name, edit).await.unwrap().unwrap()
            })
        })
        .collect();
    for t in tasks {
        assert!(t.await.unwrap().1, "written");
    }
    let stored = b.bucket("race", &name).await.unwrap().unwrap();
    let mut tags: Vec<&str> = stored.tags.iter().map(|(k, _)| k.as_str()).collect();
    tags.sort();
    let mut want: Vec<String> = (0..24).map(|i| format!("t{i}")).collect();
    want.sort();
    assert_eq!(tags, want, "every edit stays");
    let (seen, written) = a
        .update_bucket(
            "race",
            &name,
            Box::new(|r: &mut BucketRecord| {
                r.tags.clear();
                false
            }),
        )
        .await
        .unwrap()
        .unwrap();
    assert!(!written);
    assert_eq!(seen.tags.len(), 24, "a declined edit answers the record as stored");
    assert_eq!(a.bucket("race", &name).await.unwrap().unwrap().tags.len(), 24, "and writes nothing");
    assert!(a.update_bucket("race", "no-such-bucket", Box::new(|_| true)).await.unwrap().is_none());
}

async fn quotas(m: &dyn Metadata) {
    let s = QuotaScope::project(Uuid::new_v4());
    assert_eq!(m.quota(&s).await.unwrap(), None);
    // Without a limit anything fits; usage is created on first charge.
    assert_eq!(m.charge(&s, 700, true).await.unwrap(), Charge::Done);
    assert_eq!(m.quota(&s).await.unwrap().unwrap().usage_bytes, 700);
    let q = m.set_quota_limit(&s, Some(1000)).await.unwrap();
    assert_eq!((q.limit_bytes, q.usage_bytes), (Some(1000), 700), "a new limit keeps the usage");
    assert_eq!(m.charge(&s, 300, false).await.unwrap(), Charge::Done, "up to the limit fits");
    assert_eq!(m.charge(&s, 1, true).await.unwrap(), Charge::Refused { usage: 1000, limit: 1000 });
    assert_eq!(m.quota(&s).await.unwrap().unwrap().usage_bytes, 1000, "a refusal changes nothing");
    // Refunds are never refused and never go below zero.
    assert_eq!(m.charge(&s, -400, true).await.unwrap(), Charge::Done);
    let q = m.set_quota_limit(&s, Some(100)).await.unwrap();
    assert_eq!(q.usage_bytes, 600, "a limit below the usage is allowed");
    assert_eq!(m.charge(&s, -50, true).await.unwrap(), Charge::Done, "shrinking under a lowered limit");
    assert!(matches!(m.charge(&s, 1, true).await.unwrap(), Charge::Refused { .. }));
    assert_eq!(m.charge(&s, -10_000, true).await.unwrap(), Charge::Done);
    assert_eq!(m.quota(&s).await.unwrap().unwrap().usage_bytes, 0);
    let q = m.set_quota_usage(&s, 42).await.unwrap();
    assert_eq!((q.limit_bytes, q.usage_bytes), (Some(100), 42), "a rescan keeps the limit");
    let q = m.set_quota_limit(&s, None).await.unwrap();
    assert_eq!((q.limit_bytes, q.usage_bytes), (None, 42));
    assert!(m.quotas().await.unwrap().iter().any(|q| q.scope == s && q.usage_bytes == 42));
    assert_eq!(m.charge(&s, 0, true).await.unwrap(), Charge::Done);
}

/// Writers racing against one limit end with exactly the writes that fit.
async fn quota_race(m: Arc<dyn Metadata>) {
    let s = QuotaScope::user(Uuid::new_v4());
    m.set_quota_limit(&s, Some(10_000)).await.unwrap();
    let tasks: Vec<_> = (0..48)
        .map(|i| {
            let m = m.clone();
            tokio::spawn(async move { m.charge(&s, 700, i % 2 == 0).await.unwrap() })
        })
        .collect();
    let mut done = 0;
    for t in tasks {
        if t.await.unwrap() == Charge::Done {
            done += 1;
        }
    }
    assert_eq!(done, 10_000 / 700, "exactly the charges that fit succeed");
    assert_eq!(m.quota(&s).await.unwrap().unwrap().usage_bytes, done * 700);
}

async fn objects(m: &dyn Metadata) {
    let (f, other) = (Uuid::new_v4(), Uuid::new_v4());
    assert_eq!(m.object(f, "a").await.unwrap(), None);
    m.put_object(f, "a", &object(1)).await.unwrap();
    m.put_object(f, "dir/b", &object(2)).await.unwrap();
    m.put_object(other, "a", &object(3)).await.unwrap();
    assert_eq!(m.object(f, "a").await.unwrap(), Some(object(1)));
    assert_eq!(m.object(other, "a").await.unwrap(), Some(object(3)), "folders are separate");
    m.put_object(f, "a", &object(4)).await.unwrap();
    assert_eq!(m.object(f, "a").await.unwrap(), Some(object(4)), "a put replaces");
    let got = m.objects(f, &["dir/b", "missing", "a"]).await.unwrap();
    assert_eq!(got, vec![Some(object(2)), None, Some(object(4))], "in the order asked");
    assert!(m.objects(f, &[]).await.unwrap().is_empty());
    // Keys are bytes, not text to normalise: case, trailing slashes and odd characters differ.
    for k in ["A", "a/", "a b", "ключ", "a\u{7f}"] {
        assert_eq!(m.object(f, k).await.unwrap(), None, "{k:?}");
    }
    m.put_object(f, "a/", &object(5)).await.unwrap();
    assert_eq!(m.object(f, "a/").await.unwrap(), Some(object(5)));
    m.delete_object(f, "a", "gw-1").await.unwrap();
    assert_eq!(m.object(f, "a").await.unwrap(), None);
    assert_eq!(m.object(f, "a/").await.unwrap(), Some(object(5)));
    m.delete_object(f, "never", "gw-1").await.unwrap();
    // Exports read a folder's records in key order, a page at a time.
    let keys = |v: Vec<(String, ObjectRecord)>| v.into_iter().map(|(k, _)| k).collect::<Vec<_>>();
    assert_eq!(keys(m.object_records(f, None, 10).await.unwrap()), ["a/", "dir/b"]);
    assert_eq!(keys(m.object_records(f, None, 1).await.unwrap()), ["a/"]);
    assert_eq!(keys(m.object_records(f, Some("a/"), 10).await.unwrap()), ["dir/b"]);
    assert_eq!(keys(m.object_records(f, Some("a"), 10).await.unwrap()), ["a/", "dir/b"]);
    assert!(m.object_records(f, Some("dir/b"), 10).await.unwrap().is_empty());
    assert_eq!(m.object_records(other, None, 10).await.unwrap(), vec![("a".to_owned(), object(3))]);
    // A record carrying the one it replaces comes back whole.
    let mut pending = object(6);
    pending.replaces = Some(Box::new(object(7)));
    m.put_object(f, "p", &pending).await.unwrap();
    assert_eq!(m.object(f, "p").await.unwrap(), Some(pending));
}

async fn publishing(m: &dyn Metadata) {
    let f = Uuid::new_v4();
    let mut rec = object(10);
    rec.replaces = Some(Box::new(object(9)));
    m.begin_publish(f, "k", &rec, "gw1", None).await.unwrap();
    assert_eq!(m.object(f, "k").await.unwrap(), Some(rec.clone()));
    let pending = m.publishing().await.unwrap();
    let p = pending.iter().find(|p| p.folder == f && p.key == "k").expect("noted as publishing");
    assert!(p.instance == "gw1" || p.instance.is_empty(), "the instance, where recorded");
    m.begin_publish(f, "gone", &object(11), "gw1", None).await.unwrap();
    m.end_publish(f, "k", Some(&object(10))).await.unwrap();
    m.end_publish(f, "gone", None).await.unwrap();
    assert_eq!(m.object(f, "k").await.unwrap(), Some(object(10)));
    assert_eq!(m.object(f, "gone").await.unwrap(), None);
    assert!(!m.publishing().await.unwrap().iter().any(|p| p.folder == f), "both settled");
}

/// Conditional changes of one key, one at a time: each proceeds only while the key's record is
/// the one expected, and a refused one changes nothing.
async fn conditional(m: &dyn Metadata) {
    let f = Uuid::new_v4();
    let absent = Expect::Absent;
    m.begin_publish(f, "c", &object(20), "gw1", Some(&absent)).await.unwrap();
    m.end_publish(f, "c", Some(&object(20))).await.unwrap();
    let refused = m.begin_publish(f, "c", &object(21), "gw1", Some(&absent)).await;
    assert!(matches!(refused, Err(MetaError::Changed)), "a record is there now: {refused:?}");
    assert_eq!(m.object(f, "c").await.unwrap(), Some(object(20)), "a refused change changes nothing");
    let stale = Expect::of(Some(&object(19)));
    let refused = m.begin_publish(f, "c", &object(21), "gw1", Some(&stale)).await;
    assert!(matches!(refused, Err(MetaError::Changed)), "another record: {refused:?}");
    let seen = m.expectation(f, "c", "gw1").await.unwrap();
    assert_eq!(seen, Expect::of(Some(&object(20))), "what a conditional write reads");
    assert!(seen.holds(Some(&object(20))) && !seen.holds(None));
    assert_eq!(m.expectation(f, "none", "gw1").await.unwrap(), Expect::Absent);
    m.begin_publish(f, "c", &object(21), "gw1", Some(&seen)).await.unwrap();
    m.end_publish(f, "c", Some(&object(21))).await.unwrap();
    assert_eq!(m.object(f, "c").await.unwrap(), Some(object(21)));

    // The same without a publish (a metadata-only change), and as a key edit (versioned keys).
    let refused = m.put_object_if(f, "c", &object(22), &seen, "gw1").await;
    assert!(matches!(refused, Err(MetaError::Changed)), "{refused:?}");
    let now = Expect::of(Some(&object(21)));
    m.put_object_if(f, "c", &object(22), &now, "gw1").await.unwrap();
    m.put_object_if(f, "new", &object(23), &absent, "gw1").await.unwrap();
    assert_eq!(m.object(f, "new").await.unwrap(), Some(object(23)));
    let (rows, next) = ([version("v1", 1, Some(22))], object(24));
    let edit = |expect| KeyEdit { object: Some(Some(&next)), add: &rows, expect, ..Default::default() };
    let refused = m.edit_key(f, "c", &edit(Some(&now)), "gw1").await;
    assert!(matches!(refused, Err(MetaError::Changed)), "{refused:?}");
    assert!(m.versions(f, "c").await.unwrap().is_empty(), "a refused edit adds no version row");
    m.edit_key(f, "c", &edit(Some(&Expect::of(Some(&object(22))))), "gw1").await.unwrap();
    assert_eq!(m.object(f, "c").await.unwrap(), Some(object(24)));
    assert_eq!(m.versions(f, "c").await.unwrap().len(), 1);

    // A key claimed by its only gateway; claims and releases change no record.
    assert!(m.claim_key(f, "c", "gw1").await.unwrap());
    assert!(m.claim_key(f, "c", "gw1").await.unwrap(), "a claim it holds");
    m.release_key(f, "c", "gw1").await.unwrap();
    assert_eq!(m.object(f, "c").await.unwrap(), Some(object(24)));

    // A note is taken again only while it is there: once its publish ended, nothing is noted.
    m.begin_publish(f, "p", &object(25), "gw1", None).await.unwrap();
    assert!(m.take_note(f, "p", "gw1", "gw1").await.unwrap(), "a pending publish is taken again");
    m.end_publish(f, "p", Some(&object(25))).await.unwrap();
    assert!(!m.take_note(f, "p", "gw1", "gw1").await.unwrap(), "an ended publish leaves nothing");
    assert!(!m.take_note(f, "p", "gw1", "gw1").await.unwrap(), "and taking it noted nothing");
    assert!(!m.take_note(f, "never", "gw1", "gw1").await.unwrap());
    assert!(m.publishing().await.unwrap().iter().all(|p| p.folder != f), "nothing left noted");
}

/// What only a shared engine must add to [`conditional`]: conditional changes of one key racing
/// from many tasks on two engines (gateways) sharing the store, every one judged against the
/// same record, are won by exactly one; and a key another gateway is publishing refuses them as
/// busy until that publish ends.
pub async fn conditional_races(a: Arc<dyn Metadata>, b: Arc<dyn Metadata>) {
    let f = Uuid::new_v4();
    // Each writer its own record (seed `base + i`), none equal to the one all judged.
    let race = |expect: Expect, base: u64| {
        let tasks: Vec<_> = (0..16u64)
            .map(|i| {
                let (m, e) = (if i % 2 == 0 { a.clone() } else { b.clone() }, expect.clone());
                tokio::spawn(async move {
                    let r = m.begin_publish(f, "r", &object(base + i), &format!("gw{i}"), Some(&e)).await;
                    if r.is_ok() {
                        m.end_publish(f, "r", Some(&object(base + i))).await.unwrap();
                    }
                    (base + i, r)
                })
            })
            .collect();
        async move {
            let mut won = Vec::new();
            for t in tasks {
                match t.await.unwrap() {
                    (i, Ok(())) => won.push(i),
                    (_, Err(MetaError::Changed | MetaError::Busy)) => {}
                    (_, Err(e)) => panic!("a lost race is Changed or Busy, not {e}"),
                }
            }
            won
        }
    };
    let won = race(Expect::Absent, 100).await;
    assert_eq!(won.len(), 1, "exactly one creates the key: {won:?}");
    assert_eq!(a.object(f, "r").await.unwrap(), Some(object(won[0])));
    let won = race(Expect::of(Some(&object(won[0]))), 150).await;
    assert_eq!(won.len(), 1, "exactly one replaces the record all judged: {won:?}");
    assert_eq!(b.object(f, "r").await.unwrap(), Some(object(won[0])));

    let cur = Expect::of(Some(&object(won[0])));
    a.begin_publish(f, "r", &object(200), "gwx", None).await.unwrap();
    let mid = Expect::of(Some(&object(200)));
    // Read while another gateway publishes, a record says nothing of the file soon at the key.
    let busy = b.expectation(f, "r", "gwy").await;
    assert!(matches!(busy, Err(MetaError::Busy)), "{busy:?}");
    assert_eq!(a.expectation(f, "r", "gwx").await.unwrap(), mid, "its own publish does not count");
    let busy = b.begin_publish(f, "r", &object(201), "gwy", Some(&mid)).await;
    assert!(matches!(busy, Err(MetaError::Busy)), "another gateway is publishing: {busy:?}");
    let busy = b.put_object_if(f, "r", &object(201), &mid, "gwy").await;
    assert!(matches!(busy, Err(MetaError::Busy)), "{busy:?}");
    let late = b.begin_publish(f, "r", &object(201), "gwy", Some(&cur)).await;
    assert!(matches!(late, Err(MetaError::Changed | MetaError::Busy)), "{late:?}");
    a.begin_publish(f, "r", &object(200), "gwx", Some(&mid)).await.expect("its own publish does not count");
    a.end_publish(f, "r", Some(&object(200))).await.unwrap();
    b.begin_publish(f, "r", &object(201), "gwy", Some(&mid)).await.expect("settled: no longer busy");
    b.end_publish(f, "r", Some(&object(201))).await.unwrap();

    // Claims: one gateway at a time holds a key; a release by another changes nothing; the
    // holder's publish ends the claim like its release does.
    assert!(a.claim_key(f, "r", "gwx").await.unwrap());
    assert!(!b.claim_key(f, "r", "gwy").await.unwrap(), "gwx holds it");
    assert!(matches!(b.expectation(f, "r", "gwy").await, Err(MetaError::Busy)), "claimed is busy");
    b.release_key(f, "r", "gwy").await.unwrap();
    assert!(!b.claim_key(f, "r", "gwy").await.unwrap(), "still gwx's");
    assert!(a.claim_key(f, "r", "gwx").await.unwrap(), "held again by its holder");
    a.release_key(f, "r", "gwx").await.unwrap();
    assert!(b.claim_key(f, "r", "gwy").await.unwrap(), "released");
    b.begin_publish(f, "r", &object(202), "gwy", None).await.unwrap();
    b.end_publish(f, "r", Some(&object(202))).await.unwrap();
    assert!(a.claim_key(f, "r", "gwx").await.unwrap(), "the publish ended the claim");
    b.delete_object(f, "r", "gwy").await.unwrap();
    assert!(!b.claim_key(f, "r", "gwy").await.unwrap(), "another's delete leaves gwx's claim");
    a.delete_object(f, "r", "gwx").await.unwrap();
    assert_eq!(a.object(f, "r").await.unwrap(), None);
    assert!(b.claim_key(f, "r", "gwy").await.unwrap(), "the holder's delete ended the claim");
    b.release_key(f, "r", "gwy").await.unwrap();
    // A note is taken over only from the gateway it names, while it is there, by one taker.
    assert!(a.claim_key(f, "q", "gwx").await.unwrap());
    assert!(!b.take_note(f, "q", "gwy", "gwy").await.unwrap(), "a note in another's name");
    assert!(a.take_note(f, "q", "gwx", "gwx").await.unwrap(), "its own");
    assert!(b.take_note(f, "q", "gwx", "gwy").await.unwrap(), "taken over from gwx");
    assert!(!a.take_note(f, "q", "gwx", "gwz").await.unwrap(), "no longer gwx's: taken once");
    assert!(!a.claim_key(f, "q", "gwx").await.unwrap(), "held by the taker");
    assert!(matches!(a.expectation(f, "q", "gwx").await, Err(MetaError::Busy)));
    b.end_publish(f, "q", None).await.unwrap();
    assert!(!b.take_note(f, "q", "gwy", "gwy").await.unwrap(), "its settle ended the note");
    assert!(a.claim_key(f, "q", "gwx").await.unwrap(), "taking a gone note noted nothing");
    a.release_key(f, "q", "gwx").await.unwrap();
    let tasks: Vec<_> = (0..16u64)
        .map(|i| {
            let m = if i % 2 == 0 { a.clone() } else { b.clone() };
            tokio::spawn(async move { m.claim_key(f, "contested", &format!("gw{i}")).await.unwrap() })
        })
        .collect();
    let mut held = 0;
    for t in tasks {
        held += u32::from(t.await.unwrap());
    }
    assert_eq!(held, 1, "exactly one of sixteen racing claims holds the key");
}

async fn multipart(m: &dyn Metadata) {
    let f = Uuid::new_v4();
    let before = m.count_uploads().await.unwrap();
    let mut ids: Vec<UploadId> = (0..5).map(|_| UploadId::generate()).collect();
    // Uploads of one key list in upload id order.
    ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    let keys = ["b", "a/x", "a/y", "b", "c"];
    for (k, id) in keys.iter().zip(&ids) {
        m.put_upload(f, &upload(k, id)).await.unwrap();
    }
    m.put_upload(Uuid::new_v4(), &upload("a/x", &UploadId::generate())).await.unwrap();
    assert_eq!(m.count_uploads().await.unwrap(), before + 6);
    assert_eq!(m.upload(f, "b", &ids[0]).await.unwrap(), Some(upload("b", &ids[0])));
    assert_eq!(m.upload(f, "c", &ids[0]).await.unwrap(), None, "an id belongs to its key");

    let all = page(m, f, "", None, 100).await;
    let want = vec![
        ("a/x".to_owned(), ids[1].clone()),
        ("a/y".to_owned(), ids[2].clone()),
        ("b".to_owned(), ids[0].clone()),
        ("b".to_owned(), ids[3].clone()),
        ("c".to_owned(), ids[4].clone()),
    ];
    assert_eq!(all, want, "by key, then upload id; other folders never show");
    assert_eq!(page(m, f, "a/", None, 100).await, want[..2].to_vec());
    assert_eq!(page(m, f, "", None, 2).await, want[..2].to_vec());
    // Paging: after a (key, id) position, exclusive.
    let after = Some(("b", ids[0].as_str()));
    assert_eq!(page(m, f, "", after, 100).await, want[3..].to_vec());
    // A position that is no record (an id a client made up) still orders by key, then id.
    let after = Some(("b", ""));
    assert_eq!(page(m, f, "", after, 100).await, want[2..].to_vec());
    let after = Some(("a/zz", "whatever"));
    assert_eq!(page(m, f, "", after, 100).await, want[2..].to_vec());
    assert!(page(m, f, "zz", None, 100).await.is_empty());

    let id = &ids[0];
    for (n, size) in [(3, 30), (1, 10), (2, 20)] {
        m.put_part(id, &part(n, size)).await.unwrap();
    }
    m.put_part(id, &part(2, 25)).await.unwrap();
    m.put_part(&ids[3], &part(1, 99)).await.unwrap();
    let parts: Vec<(u32, u64)> = m.parts(id).await.unwrap().iter().map(|p| (p.part_number, p.size)).collect();
    assert_eq!(parts, [(1, 10), (2, 25), (3, 30)], "by part number; a put replaces");
    assert_eq!(m.part(id, 2).await.unwrap(), Some(part(2, 25)));
    assert_eq!(m.part(id, 4).await.unwrap(), None);

    // Completing records the object and forgets the upload and its parts, in one step.
    let mut done = object(20);
    done.upload_id = Some(id.clone());
    m.complete_upload(f, "b", id, &done).await.unwrap();
    assert_eq!(m.object(f, "b").await.unwrap(), Some(done));
    assert_eq!(m.upload(f, "b", id).await.unwrap(), None);
    assert!(m.parts(id).await.unwrap().is_empty());
    assert_eq!(m.parts(&ids[3]).await.unwrap().len(), 1, "other uploads keep their parts");
    m.delete_upload(f, "b", &ids[3]).await.unwrap();
    assert_eq!(m.upload(f, "b", &ids[3]).await.unwrap(), None);
    assert!(m.parts(&ids[3]).await.unwrap().is_empty());
    assert_eq!(m.count_uploads().await.unwrap(), before + 4);
}

/// A page of uploads as (key, upload id).
async fn page(
    m: &dyn Metadata,
    f: Uuid,
    prefix: &str,
    after: Option<(&str, &str)>,
    limit: usize,
) -> Vec<(String, UploadId)> {
    let q = UploadQuery { prefix, after, limit };
    m.uploads(f, q).await.unwrap().into_iter().map(|u| (u.key, u.upload_id)).collect()
}

async fn versions(m: &dyn Metadata) {
    let mut b = bucket("ver", "sioned");
    assert!(m.create_bucket(&b).await.unwrap());
    b.versioning = Some(Versioning::Enabled);
    m.put_bucket(&b).await.unwrap();
    assert_eq!(m.bucket("ver", "sioned").await.unwrap().unwrap().versioning, Some(Versioning::Enabled));
    let f = b.folder_id;
    let add = |rows: &'static [(&'static str, i64, Option<u64>)]| {
        rows.iter().map(|(i, s, o)| version(i, *s, *o)).collect::<Vec<_>>()
    };
    // Added out of order, over several edits; read back newest first.
    let rows = add(&[("v1", 10, Some(1)), ("v3", 30, None)]);
    m.edit_key(f, "k", &KeyEdit { add: &rows, ..Default::default() }, "gw1").await.unwrap();
    let more = add(&[("null", 20, Some(2))]);
    let cur = object(9);
    let edit = KeyEdit { object: Some(Some(&cur)), add: &more, publishing: Some(true), ..Default::default() };
    m.edit_key(f, "k", &edit, "gw1").await.unwrap();
    let ids = |v: Vec<VersionRecord>| v.into_iter().map(|r| r.version_id).collect::<Vec<_>>();
    assert_eq!(ids(m.versions(f, "k").await.unwrap()), ["v3", "null", "v1"]);
    assert_eq!(m.versions(f, "k").await.unwrap()[1], version("null", 20, Some(2)), "rows round trip");
    assert_eq!(m.object(f, "k").await.unwrap(), Some(object(9)), "the record changed with the rows");
    assert!(m.publishing().await.unwrap().iter().any(|p| p.folder == f && p.key == "k"));
    // Rows are named by place: two null rows may stand together while a change is pending.
    let again = add(&[("null", 40, Some(3))]);
    m.edit_key(f, "k", &KeyEdit { add: &again, ..Default::default() }, "gw1").await.unwrap();
    assert_eq!(ids(m.versions(f, "k").await.unwrap()), ["null", "v3", "null", "v1"]);
    let edit = KeyEdit { object: Some(None), remove: &[10, 20, 99], publishing: Some(false), ..Default::default() };
    m.edit_key(f, "k", &edit, "gw1").await.unwrap();
    let rows = m.versions(f, "k").await.unwrap();
    assert_eq!(ids(rows.clone()), ["null", "v3"]);
    assert_eq!(rows[0].object, Some(object(3)));
    assert_eq!(m.object(f, "k").await.unwrap(), None);
    assert!(!m.publishing().await.unwrap().iter().any(|p| p.folder == f && p.key == "k"));
    // Listing: key order (byte order), newest first within a key, resumable mid-key.
    for (k, seqs) in [("a", &[5i64, 7][..]), ("k/x", &[1]), ("k\u{1}", &[2]), ("ka", &[3, 4])] {
        let rows: Vec<_> = seqs.iter().map(|s| version(&format!("{k}-{s}"), *s, None)).collect();
        m.edit_key(f, k, &KeyEdit { add: &rows, ..Default::default() }, "").await.unwrap();
    }
    let list = |prefix: &'static str, after: Option<(&'static str, Option<i64>)>, limit| async move {
        let q = VersionQuery { prefix, after, limit };
        m.list_versions(f, q).await.unwrap().into_iter().map(|(k, v)| format!("{k}:{}", v.seq)).collect::<Vec<_>>()
    };
    assert_eq!(list("", None, 100).await, ["a:7", "a:5", "k:40", "k:30", "k\u{1}:2", "k/x:1", "ka:4", "ka:3"]);
    assert_eq!(list("k", None, 3).await, ["k:40", "k:30", "k\u{1}:2"]);
    assert_eq!(list("", Some(("a", Some(7))), 2).await, ["a:5", "k:40"]);
    assert_eq!(list("", Some(("k", None)), 2).await, ["k\u{1}:2", "k/x:1"]);
    assert_eq!(list("k", Some(("k", Some(30))), 10).await, ["k\u{1}:2", "k/x:1", "ka:4", "ka:3"]);
    assert_eq!(list("ka", Some(("ka", Some(3))), 10).await, Vec::<String>::new());
    assert_eq!(list("zz", None, 10).await, Vec::<String>::new());
    // Another folder's rows stay apart; deleting the bucket takes the folder's rows.
    let other = bucket("ver", "other");
    assert!(m.create_bucket(&other).await.unwrap());
    let rows = add(&[("o1", 1, Some(4))]);
    m.edit_key(other.folder_id, "k", &KeyEdit { add: &rows, ..Default::default() }, "").await.unwrap();
    assert_eq!(m.versions(other.folder_id, "k").await.unwrap().len(), 1);
    m.delete_bucket(&b).await.unwrap();
    assert!(m.versions(f, "k").await.unwrap().is_empty());
    assert!(list("", None, 10).await.is_empty());
    assert_eq!(m.versions(other.folder_id, "k").await.unwrap().len(), 1);
}

async fn delete_bucket_takes_its_records(m: &dyn Metadata) {
    let (gone, kept) = (bucket("dl", "gone"), bucket("dl", "kept"));
    for b in [&gone, &kept] {
        assert!(m.create_bucket(b).await.unwrap());
        m.put_object(b.folder_id, "obj", &object(30)).await.unwrap();
        m.begin_publish(b.folder_id, "pub", &object(31), "gw1", None).await.unwrap();
    }
    let id = UploadId::generate();
    m.put_upload(gone.folder_id, &upload("big", &id)).await.unwrap();
    m.put_part(&id, &part(1, 5)).await.unwrap();
    m.delete_bucket(&gone).await.unwrap();
    assert_eq!(m.bucket("dl", "gone").await.unwrap(), None);
    assert_eq!(m.object(gone.folder_id, "obj").await.unwrap(), None);
    assert_eq!(m.upload(gone.folder_id, "big", &id).await.unwrap(), None);
    assert!(m.parts(&id).await.unwrap().is_empty());
    let pending = m.publishing().await.unwrap();
    assert!(!pending.iter().any(|p| p.folder == gone.folder_id));
    assert!(pending.iter().any(|p| p.folder == kept.folder_id && p.key == "pub"));
    assert_eq!(m.object(kept.folder_id, "obj").await.unwrap(), Some(object(30)));
}

/// Records of every kind in folders that have buckets, for export tests: objects (one with a
/// pending publish), an upload with parts, a quota.
pub async fn populate_for_dump(m: &dyn Metadata) {
    let b = bucket("dump", "everything");
    assert!(m.create_bucket(&b).await.unwrap());
    for (i, k) in ["a", "b/c", "ü", "z/"].iter().enumerate() {
        m.put_object(b.folder_id, k, &object(100 + i as u64)).await.unwrap();
    }
    m.begin_publish(b.folder_id, "pending", &object(120), "", None).await.unwrap();
    let id = UploadId::generate();
    m.put_upload(b.folder_id, &upload("big", &id)).await.unwrap();
    for n in 1..=3 {
        m.put_part(&id, &part(n, 5 << 20)).await.unwrap();
    }
    m.set_quota_limit(&b.quota_scope, Some(1 << 30)).await.unwrap();
    m.charge(&b.quota_scope, 12345, true).await.unwrap();
    let rows = [version("v1", 1, Some(130)), version("v2", 2, None)];
    m.edit_key(b.folder_id, "a", &KeyEdit { add: &rows, ..Default::default() }, "").await.unwrap();
}
