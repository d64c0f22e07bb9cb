//! Tenancy: domains, projects, users and keypairs, buckets and their edits, quota scopes; each
//! with the races a shared engine must win exactly once.

use std::sync::Arc;

use penstock_metadata::{BucketRecord, Charge, Domain, Keypair, Metadata, Perm, Project, QuotaScope, Role, User};
use uuid::Uuid;

use super::*;

pub(super) async fn tenants(m: &dyn Metadata) {
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

pub(super) async fn buckets(m: &dyn Metadata) {
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
pub(super) async fn bucket_name_race(m: Arc<dyn Metadata>) {
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

pub(super) async fn quotas(m: &dyn Metadata) {
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
pub(super) async fn quota_race(m: Arc<dyn Metadata>) {
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
