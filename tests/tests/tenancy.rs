//! Tenant isolation through a real SDK: domains, users, projects, every permission level and
//! every operation class; traversal attempts; quota races. Tenancy is driven by the real
//! `penstock admin` CLI.

use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::Client;
use penstock_tests::{keys, Gateway, Tenant};
use serde_json::Value;

fn s(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_else(|| panic!("{k} missing in {v}")).to_owned()
}

fn user(gw: &Gateway, domain: &str, name: &str, role: &str) -> Tenant {
    gw.tenant(domain, name, role)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Level {
    None,
    Ro,
    Rw,
    Wd,
}

/// Tries each operation class on `bucket` and returns the highest level that was allowed,
/// checking that the classes are allowed exactly up to that level.
async fn probe(c: &Client, bucket: &str, tag: &str) -> Level {
    let read = c.list_objects_v2().bucket(bucket).send().await.is_ok()
        & c.get_object().bucket(bucket).key("seed.txt").send().await.is_ok()
        & c.head_object().bucket(bucket).key("seed.txt").send().await.is_ok();
    let key = format!("probe-{tag}");
    let write = c.put_object().bucket(bucket).key(&key).body(ByteStream::from_static(b"p")).send().await.is_ok()
        & c.copy_object()
            .bucket(bucket)
            .key(format!("{key}-copy"))
            .copy_source(format!("{bucket}/seed.txt"))
            .send()
            .await
            .is_ok()
        & c.create_multipart_upload().bucket(bucket).key(format!("{key}-mpu")).send().await.is_ok();
    let victim = format!("victim-{tag}");
    let delete = c.delete_object().bucket(bucket).key(&victim).send().await.is_ok();
    match (read, write, delete) {
        (false, false, false) => Level::None,
        (true, false, false) => Level::Ro,
        (true, true, false) => Level::Rw,
        (true, true, true) => Level::Wd,
        other => panic!("inconsistent permissions on {bucket} for {tag}: {other:?}"),
    }
}

async fn seed(c: &Client, bucket: &str, tags: &[&str]) {
    c.put_object().bucket(bucket).key("seed.txt").body(ByteStream::from_static(b"seed")).send().await.unwrap();
    for t in tags {
        c.put_object()
            .bucket(bucket)
            .key(format!("victim-{t}"))
            .body(ByteStream::from_static(b"v"))
            .send()
            .await
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn isolation_matrix() {
    let gw = Gateway::start();
    for d in ["d1", "d2", "d3"] {
        gw.admin(&["domain", "create", d]);
    }
    let own = user(&gw, "d1", "owner", "user");
    let mem = user(&gw, "d1", "member", "user");
    let out = user(&gw, "d1", "outsider", "user");
    let ro = user(&gw, "d1", "reader", "user");
    let rw = user(&gw, "d1", "writer", "user");
    let rev = user(&gw, "d1", "revoked", "user");
    let gone = user(&gw, "d1", "former-member", "user");
    let dis = user(&gw, "d1", "disabled", "user");
    let da = user(&gw, "d1", "dadmin", "domain_admin");
    let d2 = user(&gw, "d2", "other-domain", "user");
    let d3 = user(&gw, "d3", "third-domain", "user");

    let p = gw.admin(&["project", "create", "--domain", "d1", "research"]);
    let pid = s(&p, "id");
    for u in [&mem, &gone] {
        gw.admin(&["project", "add-member", &pid, &u.id]);
    }
    gw.admin(&["project", "remove-member", &pid, &gone.id]);

    // A user folder made through S3, shared by grants; two project folders; a same-named bucket
    // in another domain.
    own.s3.create_bucket().bucket("datasets").send().await.unwrap();
    gw.admin(&["vfolder", "grant", "d1", "datasets", &ro.id, "ro"]);
    gw.admin(&["vfolder", "grant", "d1", "datasets", &rw.id, "rw"]);
    gw.admin(&["vfolder", "grant", "d1", "datasets", &rev.id, "wd"]);
    gw.admin(&["vfolder", "revoke", "d1", "datasets", &rev.id]);
    gw.admin(&["vfolder", "grant", "d1", "datasets", &dis.id, "wd"]);
    gw.admin(&["keypair", "disable", &dis.ak]);
    let scope = format!("project:{pid}");
    for (perm, name) in [("rw", "proj-rw"), ("ro", "proj-ro")] {
        let args = ["vfolder", "create", "--domain", "d1", "--owner", &scope, "--permission", perm, name];
        gw.admin(&args);
    }
    d2.s3.create_bucket().bucket("datasets").send().await.unwrap();

    let users: [(&str, &Tenant); 11] = [
        ("own", &own),
        ("mem", &mem),
        ("out", &out),
        ("ro", &ro),
        ("rw", &rw),
        ("rev", &rev),
        ("gone", &gone),
        ("dis", &dis),
        ("da", &da),
        ("d2", &d2),
        ("d3", &d3),
    ];
    let tags: Vec<&str> = users.iter().map(|(t, _)| *t).collect();
    seed(&own.s3, "datasets", &tags).await;
    seed(&da.s3, "proj-rw", &tags).await;
    seed(&da.s3, "proj-ro", &tags).await;
    seed(&d2.s3, "datasets", &[]).await;

    use Level::*;
    let expect: [(&str, [Level; 3]); 11] = [
        // (user, [datasets, proj-rw, proj-ro])
        ("own", [Wd, None, None]),
        ("mem", [None, Rw, Ro]),
        ("out", [None, None, None]),
        ("ro", [Ro, None, None]),
        ("rw", [Rw, None, None]),
        ("rev", [None, None, None]),
        ("gone", [None, None, None]),
        ("dis", [None, None, None]),
        ("da", [Wd, Wd, Wd]),
        // "datasets" resolves to d2's own bucket for d2 and checked separately below.
        ("d2", [Wd, None, None]),
        ("d3", [None, None, None]),
    ];
    for ((tag, t), (etag, levels)) in users.iter().zip(expect.iter()) {
        assert_eq!(tag, etag);
        for (bucket, want) in ["datasets", "proj-rw", "proj-ro"].iter().zip(levels) {
            let got = probe(&t.s3, bucket, tag).await;
            assert_eq!(got, *want, "{tag} on {bucket}");
        }
    }

    // Same-named buckets are separate folders: d2's writes never appear in d1's bucket.
    let d1_keys = keys(&own.s3, "datasets").await;
    assert!(!d1_keys.iter().any(|k| k.starts_with("probe-d2")), "{d1_keys:?}");
    let names = |c: &Client| {
        let c = c.clone();
        async move {
            c.list_buckets()
                .send()
                .await
                .unwrap()
                .buckets()
                .iter()
                .map(|b| b.name().unwrap().to_owned())
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(names(&own.s3).await, ["datasets"]);
    assert_eq!(names(&mem.s3).await, ["proj-ro", "proj-rw"]);
    assert_eq!(names(&out.s3).await, Vec::<String>::new());
    assert_eq!(names(&d2.s3).await, ["datasets"]);

    // Cross-bucket copy needs read on the source: a user with write on proj-rw cannot pull
    // from a folder they cannot read.
    let e =
        mem.s3.copy_object().bucket("proj-rw").key("stolen").copy_source("datasets/seed.txt").send().await.unwrap_err();
    assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(403));
    // Deleting a bucket needs wd on it.
    assert!(ro.s3.delete_bucket().bucket("datasets").send().await.is_err());
}

#[tokio::test]
async fn traversal_corpus_stays_inside() {
    let gw = Gateway::start();
    gw.admin(&["domain", "create", "t1"]);
    let a = user(&gw, "t1", "alice", "user");
    let b = user(&gw, "t1", "bob", "user");
    a.s3.create_bucket().bucket("alice-data").send().await.unwrap();
    b.s3.create_bucket().bucket("bob-data").send().await.unwrap();
    a.s3.put_object().bucket("alice-data").key("mine").body(ByteStream::from_static(b"a")).send().await.unwrap();
    b.s3.put_object().bucket("bob-data").key("secret").body(ByteStream::from_static(b"bob's")).send().await.unwrap();
    let adir = gw.folder_dir("mine");
    let bdir = gw.folder_dir("secret");

    // Keys that look like traversal are either refused or stored literally inside the folder.
    for key in ["../bob-data/secret", "a/../../x", "/etc/passwd", "a//b", "./x", "a/./b", "x\0y"] {
        let r = a.s3.put_object().bucket("alice-data").key(key).body(ByteStream::from_static(b"x")).send().await;
        assert!(r.is_err(), "{key:?} accepted");
    }
    for key in ["%2e%2e/x", "..%2fx", "...", "a..", "..a/b", "%00"] {
        a.s3.put_object().bucket("alice-data").key(key).body(ByteStream::from_static(b"lit")).send().await.unwrap();
        let got = a.s3.get_object().bucket("alice-data").key(key).send().await.unwrap();
        assert_eq!(got.body.collect().await.unwrap().into_bytes().as_ref(), b"lit");
        assert!(adir.join(key).exists(), "{key:?} not stored literally in the folder");
    }
    let too_long = "k".repeat(256);
    assert!(a
        .s3
        .put_object()
        .bucket("alice-data")
        .key(&too_long)
        .body(ByteStream::from_static(b"x"))
        .send()
        .await
        .is_err());

    // Symlinks planted by a session that point into another tenant's folder or outside.
    std::os::unix::fs::symlink(&bdir, adir.join("to-bob")).unwrap();
    std::os::unix::fs::symlink(bdir.join("secret"), adir.join("bob-secret")).unwrap();
    std::os::unix::fs::symlink("../../../..", adir.join("up")).unwrap();
    for key in ["to-bob/secret", "bob-secret", "up/etc"] {
        let e = a.s3.get_object().bucket("alice-data").key(key).send().await;
        assert!(e.is_err(), "{key} was readable");
        let e =
            a.s3.put_object()
                .bucket("alice-data")
                .key(format!("{key}/planted"))
                .body(ByteStream::from_static(b"x"))
                .send()
                .await;
        assert!(e.is_err(), "{key}/planted was writable");
    }
    assert!(!bdir.join("planted").exists());
    assert_eq!(std::fs::read(bdir.join("secret")).unwrap(), b"bob's");
    let keys = keys(&a.s3, "alice-data").await;
    assert!(!keys.iter().any(|k| k.contains("bob") || k.starts_with("up")), "{keys:?}");
    // Deleting through a symlinked directory does not touch the other folder.
    let _ = a.s3.delete_object().bucket("alice-data").key("to-bob/secret").send().await;
    assert!(bdir.join("secret").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn quota_races_never_end_above_the_limit() {
    let gw = Gateway::start();
    gw.admin(&["domain", "create", "q"]);
    let u = user(&gw, "q", "quser", "user");
    u.s3.create_bucket().bucket("quota-b").send().await.unwrap();
    let scope = format!("user:{}", u.id);
    let limit: u64 = 10 << 20;
    gw.admin(&["quota", "set", &scope, &limit.to_string()]);

    let mut tasks = Vec::new();
    for i in 0..12 {
        let c = u.s3.clone();
        tasks.push(tokio::spawn(async move {
            c.put_object()
                .bucket("quota-b")
                .key(format!("obj-{i}"))
                .body(ByteStream::from(vec![i as u8; 2 << 20]))
                .send()
                .await
        }));
    }
    let mut ok = 0;
    for t in tasks {
        match t.await.unwrap() {
            Ok(_) => ok += 1,
            Err(e) => {
                assert_eq!(e.raw_response().map(|r| r.status().as_u16()), Some(403));
                assert_eq!(aws_sdk_s3::error::ProvideErrorMetadata::code(&e), Some("QuotaExceeded"));
            }
        }
    }
    assert_eq!(ok, 5, "exactly five 2 MiB objects fit in 10 MiB");
    let q = gw.admin(&["quota", "show", &scope]);
    assert_eq!(q["usage_bytes"].as_u64().unwrap(), 5 * (2 << 20));
    let listed = u.s3.list_objects_v2().bucket("quota-b").send().await.unwrap().key_count().unwrap();
    assert_eq!(listed, 5, "rejected writes leave nothing behind");

    // Multipart parts count too; deleting frees space; a rescan agrees with the tracked usage.
    let e = u.s3.put_object().bucket("quota-b").key("one-more").body(ByteStream::from(vec![0u8; 1 << 20])).send().await;
    assert!(e.is_err());
    // Which five writers won is up to the race; free the space of two of them.
    let listed = u.s3.list_objects_v2().bucket("quota-b").send().await.unwrap();
    for o in &listed.contents()[..2] {
        u.s3.delete_object().bucket("quota-b").key(o.key().unwrap()).send().await.unwrap();
    }
    u.s3.put_object()
        .bucket("quota-b")
        .key("one-more")
        .body(ByteStream::from(vec![0u8; 1 << 20]))
        .send()
        .await
        .unwrap();
    let tracked = gw.admin(&["quota", "show", &scope])["usage_bytes"].as_u64().unwrap();
    let rescanned = gw.admin(&["quota", "rescan", &scope])["usage_bytes"].as_u64().unwrap();
    assert_eq!(tracked, rescanned);
    assert!(tracked <= limit);
}

#[tokio::test]
async fn import_existing_folder_and_admin_errors() {
    let gw = Gateway::start();
    gw.admin(&["domain", "create", "imp"]);
    let u = user(&gw, "imp", "importer", "user");
    // A folder that exists on the volume already (made by Backend.AI, say), at the layout path.
    let fid = "0123456789abcdef0123456789abcdef";
    let scope_hex = u.id.replace('-', "");
    let dir = gw.volume_dir().join(&scope_hex).join("01").join("23").join("456789abcdef0123456789abcdef");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::write(dir.join("data/existing.csv"), b"a,b\n1,2\n").unwrap();
    let scope = format!("user:{}", u.id);
    gw.admin(&["vfolder", "import", "--domain", "imp", "--owner", &scope, "--folder-id", fid, "legacy"]);
    let o = u.s3.get_object().bucket("legacy").key("data/existing.csv").send().await.unwrap();
    assert_eq!(o.body.collect().await.unwrap().into_bytes().as_ref(), b"a,b\n1,2\n");
    assert_eq!(gw.admin(&["quota", "show", &scope])["usage_bytes"].as_u64(), Some(8));

    // Bad input is refused with a clear error and changes nothing.
    assert!(!gw.admin_raw(&["domain", "create", "imp"]).status.success());
    assert!(!gw.admin_raw(&["user", "create", "--domain", "nope", "x"]).status.success());
    assert!(!gw
        .admin_raw(&["vfolder", "create", "--domain", "imp", "--owner", "user:nope", "zz-bucket"])
        .status
        .success());
    assert!(!gw.admin_raw(&["vfolder", "create", "--domain", "imp", "--owner", &scope, "Bad_Name"]).status.success());
    let out = std::process::Command::new(penstock_tests::binary())
        .args(["admin", "--url", &format!("http://{}", gw.admin_addr()), "--token", "wrong", "domain", "list"])
        .output()
        .unwrap();
    assert!(!out.status.success(), "a wrong token is refused");

    // Unregistering keeps the bytes when asked to.
    gw.admin(&["vfolder", "delete", "imp", "legacy", "--keep-data"]);
    assert!(dir.join("data/existing.csv").exists());
    assert!(u.s3.head_bucket().bucket("legacy").send().await.is_err());
}

/// Creations of one domain, project or user name sent at once (two operators, a retried
/// provisioning script) make one: one 201, the rest 409, and one record of that name.
#[tokio::test]
async fn admin_creations_of_one_name_at_once_make_one() {
    let gw = Gateway::start();
    let at_once = |args: &[&str]| -> usize {
        std::thread::scope(|s| {
            let runs: Vec<_> = (0..8).map(|_| s.spawn(|| gw.admin_raw(args))).collect();
            runs.into_iter().map(|r| r.join().unwrap()).filter(|o| o.status.success()).count()
        })
    };
    assert_eq!(at_once(&["domain", "create", "twins"]), 1);
    assert_eq!(at_once(&["project", "create", "--domain", "twins", "team"]), 1);
    assert_eq!(at_once(&["user", "create", "--domain", "twins", "dana"]), 1);
    let named = |kind: &str, name: &str| {
        let all = gw.admin(&[kind, "list", "--domain", "twins"]);
        all.as_array().unwrap().iter().filter(|r| r["name"] == name).count()
    };
    assert_eq!(named("project", "team"), 1);
    assert_eq!(named("user", "dana"), 1);
}

/// Clients that go away in the middle of an upload (PUT, overwrite, UploadPart) leave the
/// quota where it was: whatever was reserved for their bytes is given back, and nothing of
/// them is listed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_disconnect_midway_leak_no_quota() {
    use aws_sdk_s3::presigning::PresigningConfig;
    use penstock_tests::raw::Conn;
    use std::time::Duration;

    let gw = Gateway::start();
    gw.admin(&["domain", "create", "dq"]);
    let u = user(&gw, "dq", "dquser", "user");
    u.s3.create_bucket().bucket("dq-b").send().await.unwrap();
    let scope = format!("user:{}", u.id);
    gw.admin(&["quota", "set", &scope, &(64u64 << 20).to_string()]);
    u.s3.put_object().bucket("dq-b").key("base").body(ByteStream::from(vec![7u8; 1 << 20])).send().await.unwrap();
    let usage = || gw.admin(&["quota", "show", &scope])["usage_bytes"].as_u64().unwrap();
    assert_eq!(usage(), 1 << 20);
    let upload =
        u.s3.create_multipart_upload().bucket("dq-b").key("mp").send().await.unwrap().upload_id().unwrap().to_owned();

    let presign = || PresigningConfig::expires_in(Duration::from_secs(300)).unwrap();
    let declared = 8usize << 20;
    for round in 0..6 {
        let req = match round % 3 {
            0 => u.s3.put_object().bucket("dq-b").key(format!("new{round}")).presigned(presign()).await.unwrap(),
            1 => u.s3.put_object().bucket("dq-b").key("base").presigned(presign()).await.unwrap(),
            _ => {
                u.s3.upload_part()
                    .bucket("dq-b")
                    .key("mp")
                    .upload_id(&upload)
                    .part_number(round)
                    .presigned(presign())
                    .await
                    .unwrap()
            }
        };
        let mut conn = Conn::open(&gw);
        conn.send_head(&req, &[("content-length", declared.to_string())]);
        // Part of the body, then the client is gone.
        conn.send(&vec![1u8; (round as usize + 1) << 19]);
        std::thread::sleep(Duration::from_millis(100));
        conn.w.shutdown(std::net::Shutdown::Both).unwrap();
    }

    // The gateway notices each disconnect as the body ends early; give it a moment.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while usage() != 1 << 20 && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(usage(), 1 << 20, "an abandoned upload kept its reservation");
    let rescanned = gw.admin(&["quota", "rescan", &scope])["usage_bytes"].as_u64().unwrap();
    assert_eq!(rescanned, 1 << 20);
    let listed = u.s3.list_objects_v2().bucket("dq-b").send().await.unwrap();
    let keys: Vec<&str> = listed.contents().iter().filter_map(|o| o.key()).collect();
    assert_eq!(keys, ["base"]);
    let base = u.s3.get_object().bucket("dq-b").key("base").send().await.unwrap();
    assert_eq!(base.body.collect().await.unwrap().into_bytes().as_ref(), &vec![7u8; 1 << 20][..]);
    let parts = u.s3.list_parts().bucket("dq-b").key("mp").upload_id(&upload).send().await.unwrap();
    assert!(parts.parts().is_empty(), "an abandoned part was stored");
}
