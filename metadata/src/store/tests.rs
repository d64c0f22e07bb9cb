//! Unit tests of the RocksDB store.
use super::*;
use crate::{Checksums, Fingerprint, KeyEdit, ObjectAttrs, PartRecord};

fn store() -> (tempfile::TempDir, Store) {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::open(dir.path(), StoreOptions { sync: false }).unwrap();
    (dir, s)
}

fn rec(etag: &str) -> ObjectRecord {
    ObjectRecord {
        etag: etag.into(),
        fingerprint: Fingerprint {
            inode: 1,
            size: 2,
            mtime_ns: 3,
        },
        attrs: ObjectAttrs {
            content_type: Some("text/plain".into()),
            user_metadata: [("k".to_owned(), "v".to_owned())].into(),
            ..Default::default()
        },
        checksums: Checksums {
            crc32: Some("AAAAAA==".into()),
            ..Default::default()
        },
        tags: vec![("t".into(), "1".into())],
        parts: vec![],
        upload_id: Some("0123456789abcdef0123456789abcdef".parse().unwrap()),
        replaces: None,
        version_id: None,
        change: None,
    }
}

#[test]
fn a_publish_keeps_the_replaced_record_until_it_ends() {
    let (dir, s) = store();
    let f = Uuid::from_u128(5);
    let old = rec("\"old\"");
    s.put_object(f, "k", &old).unwrap();
    let mut new = rec("\"new\"");
    new.fingerprint.inode = 77;
    let pending = ObjectRecord {
        replaces: Some(Box::new(old.clone())),
        ..new.clone()
    };
    s.begin_publish(f, "k", &pending, 1).unwrap();
    assert_eq!(s.publishing().unwrap(), [(f, "k".to_owned())]);
    // Both files resolve to their own record while the publish is pending, and after a
    // restart (a crash before the rename).
    drop(s);
    let s = Store::open(dir.path(), StoreOptions { sync: false }).unwrap();
    let stored = s.object(f, "k").unwrap().unwrap();
    assert_eq!(stored.clone().describing(&old.fingerprint), Some(old.clone()));
    assert_eq!(stored.clone().describing(&new.fingerprint), Some(new.clone()));
    assert_eq!(stored.in_force(), old);
    s.end_publish(f, "k", Some(&new)).unwrap();
    assert!(s.publishing().unwrap().is_empty());
    let stored = s.object(f, "k").unwrap().unwrap();
    assert_eq!(stored.clone().describing(&old.fingerprint), None);
    assert_eq!(stored, new);
    s.end_publish(f, "k", None).unwrap();
    assert_eq!(s.object(f, "k").unwrap(), None);
}

#[test]
fn records_round_trip_and_survive_reopen() {
    let dir = tempfile::tempdir().unwrap();
    let f = Uuid::new_v4();
    {
        let s = Store::open(dir.path(), StoreOptions::default()).unwrap();
        s.put_object(f, "a/b", &rec("\"x\"")).unwrap();
    }
    let s = Store::open(dir.path(), StoreOptions::default()).unwrap();
    assert_eq!(s.object(f, "a/b").unwrap(), Some(rec("\"x\"")));
    assert_eq!(s.object(f, "a").unwrap(), None);
    let many = s.objects(f, &["a", "a/b"]).unwrap();
    assert_eq!(many, vec![None, Some(rec("\"x\""))]);
}

#[test]
fn newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let s = Store::open(dir.path(), StoreOptions::default()).unwrap();
        s.db.put_cf(s.cf(CF_SYSTEM), SCHEMA_KEY, (SCHEMA_VERSION + 1).to_be_bytes())
            .unwrap();
    }
    assert!(matches!(
        Store::open(dir.path(), StoreOptions::default()),
        Err(MetaError::NewerSchema { .. })
    ));
}

#[test]
fn bucket_names_are_unique_and_delete_clears_folder() {
    let (_d, s) = store();
    let b = BucketRecord {
        permission: crate::Perm::Rw,
        ..BucketRecord::new(
            "b1".into(),
            "d1".into(),
            Uuid::new_v4(),
            "local".into(),
            QuotaScope::user(Uuid::nil()),
            0,
        )
    };
    assert!(s.create_bucket(&b).unwrap());
    assert!(!s.create_bucket(&b).unwrap());
    // The same name in another domain is a different bucket.
    let other_domain = BucketRecord {
        domain: "d2".into(),
        folder_id: Uuid::new_v4(),
        ..b.clone()
    };
    assert!(s.create_bucket(&other_domain).unwrap());
    assert_eq!(s.buckets().unwrap().len(), 2);
    let other = Uuid::new_v4();
    s.put_object(b.folder_id, "k", &rec("\"1\"")).unwrap();
    s.put_object(other, "k", &rec("\"2\"")).unwrap();
    s.delete_bucket(&b).unwrap();
    assert_eq!(s.bucket("d1", "b1").unwrap(), None);
    assert!(s.bucket("d2", "b1").unwrap().is_some());
    assert_eq!(s.object(b.folder_id, "k").unwrap(), None);
    assert!(s.object(other, "k").unwrap().is_some());
}

#[test]
fn uploads_and_parts() {
    let (_d, s) = store();
    let f = Uuid::new_v4();
    for (key, id) in [("b", "2"), ("a", "9"), ("a", "1"), ("c/d", "5")] {
        s.put_upload(
            f,
            &UploadRecord {
                upload_id: id.parse().unwrap(),
                key: key.into(),
                initiated_ms: 0,
                initiator: "ak".into(),
                attrs: Default::default(),
                tags: vec![],
                checksum_algorithm: None,
                checksum_type: None,
            },
        )
        .unwrap();
    }
    let mut seen = vec![];
    s.uploads(f, "", None, |u| {
        seen.push((u.key, u.upload_id.to_string()));
        true
    })
    .unwrap();
    let want: Vec<(String, String)> = [("a", "1"), ("a", "9"), ("b", "2"), ("c/d", "5")]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(seen, want);
    let mut after = vec![];
    s.uploads(f, "", Some(("a", "1")), |u| {
        after.push(u.upload_id.to_string());
        true
    })
    .unwrap();
    assert_eq!(after, ["9", "2", "5"]);
    let mut pref = vec![];
    s.uploads(f, "c/", None, |u| {
        pref.push(u.upload_id.to_string());
        true
    })
    .unwrap();
    assert_eq!(pref, ["5"]);

    let (one, ten): (UploadId, UploadId) = ("1".parse().unwrap(), "10".parse().unwrap());
    for n in [3, 1, 2] {
        let p = PartRecord {
            part_number: n,
            md5_hex: format!("{n}"),
            size: n as u64,
            last_modified_ms: 0,
            checksums: Default::default(),
            fingerprint: None,
            salt: None,
        };
        s.put_part(&one, &p).unwrap();
        s.put_part(&ten, &p).unwrap();
    }
    let nums: Vec<u32> = s.parts(&one).unwrap().iter().map(|p| p.part_number).collect();
    assert_eq!(nums, [1, 2, 3]);
    s.complete_upload(f, "a", &one, &rec("\"m-3\"")).unwrap();
    assert!(s.parts(&one).unwrap().is_empty());
    assert_eq!(s.parts(&ten).unwrap().len(), 3);
    assert!(s.upload(f, "a", &one).unwrap().is_none());
    assert!(s.object(f, "a").unwrap().is_some());
}

fn keypair(ak: &str, enabled: bool) -> Keypair {
    Keypair {
        access_key: ak.into(),
        sealed_secret: "sealed".into(),
        user_id: Uuid::from_u128(9),
        enabled,
        created_ms: 1,
    }
}

/// Tenancy reads come from memory after the first, yet always see the latest write: replaced,
/// removed and newly created records, and absent ones that appear later.
#[test]
fn cached_tenancy_reads_see_every_write() {
    let (_dir, s) = store();
    assert_eq!(s.keypair("AK").unwrap(), None);
    s.put_keypair(&keypair("AK", true)).unwrap();
    assert_eq!(s.keypair("AK").unwrap(), Some(keypair("AK", true)));
    s.put_keypair(&keypair("AK", false)).unwrap();
    assert_eq!(
        s.keypair("AK").unwrap(),
        Some(keypair("AK", false)),
        "disabling applies at once"
    );
    s.delete_keypair("AK").unwrap();
    assert_eq!(s.keypair("AK").unwrap(), None, "a removed key is gone at once");

    let mut b = BucketRecord::new(
        "b".into(),
        "d".into(),
        Uuid::from_u128(1),
        "v".into(),
        QuotaScope::user(Uuid::from_u128(2)),
        0,
    );
    assert_eq!(s.bucket("d", "b").unwrap(), None);
    assert!(s.create_bucket(&b).unwrap());
    assert_eq!(s.bucket("d", "b").unwrap(), Some(b.clone()));
    b.policy = Some("{}".into());
    s.put_bucket(&b).unwrap();
    assert_eq!(s.bucket("d", "b").unwrap().unwrap().policy.as_deref(), Some("{}"));
    s.delete_bucket(&b).unwrap();
    assert_eq!(s.bucket("d", "b").unwrap(), None);
}

/// Object reads come from memory after the first, yet see every kind of write of the key's
/// record at once: stores, removals, both halves of a publish, a completed upload, a versioning
/// edit and the removal of the whole bucket.
#[test]
fn cached_object_reads_see_every_write() {
    let (_dir, s) = store();
    let f = Uuid::from_u128(7);
    let etag = |s: &Store| s.object(f, "k").unwrap().map(|r| r.etag);
    assert_eq!(etag(&s), None);
    s.put_object(f, "k", &rec("e1")).unwrap();
    assert_eq!(etag(&s).as_deref(), Some("e1"));
    s.begin_publish(f, "k", &rec("e2"), 1).unwrap();
    assert_eq!(etag(&s).as_deref(), Some("e2"));
    s.end_publish(f, "k", Some(&rec("e3"))).unwrap();
    assert_eq!(etag(&s).as_deref(), Some("e3"));
    s.end_publish(f, "k", None).unwrap();
    assert_eq!(etag(&s), None);
    let id = "0123456789abcdef0123456789abcdef".parse().unwrap();
    s.complete_upload(f, "k", &id, &rec("e4")).unwrap();
    assert_eq!(etag(&s).as_deref(), Some("e4"));
    let r5 = rec("e5");
    let edit = KeyEdit {
        object: Some(Some(&r5)),
        add: &[],
        remove: &[],
        publishing: None,
        expect: None,
    };
    s.edit_key(f, "k", &edit, 1).unwrap();
    assert_eq!(etag(&s).as_deref(), Some("e5"));
    s.delete_object(f, "k").unwrap();
    assert_eq!(etag(&s), None);
    s.put_object(f, "k", &rec("e6")).unwrap();
    assert_eq!(etag(&s).as_deref(), Some("e6"));
    let b = BucketRecord::new(
        "b".into(),
        "d".into(),
        f,
        "v".into(),
        QuotaScope::user(Uuid::from_u128(2)),
        0,
    );
    assert!(s.create_bucket(&b).unwrap());
    s.delete_bucket(&b).unwrap();
    assert_eq!(etag(&s), None, "a removed bucket's objects are gone at once");
}

/// Readers racing writers never leave an old record in the cache: once the writes stop, every
/// read returns the last one written.
#[test]
fn cached_tenancy_reads_race_writes_without_keeping_an_old_record() {
    let (_dir, s) = store();
    let s = std::sync::Arc::new(s);
    for round in 0..200 {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let readers: Vec<_> = (0..3)
            .map(|_| {
                let (s, stop) = (s.clone(), stop.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        s.keypair("AK").unwrap();
                    }
                })
            })
            .collect();
        for i in 0..50 {
            s.put_keypair(&keypair("AK", i % 2 == 0)).unwrap();
        }
        let last = round % 2 == 0;
        s.put_keypair(&keypair("AK", last)).unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(s.keypair("AK").unwrap().map(|k| k.enabled), Some(last), "round {round}");
    }
}

/// Inside `on_blocking_thread` the embedded engine's writes run on the calling thread: with a
/// blocking pool of one thread, already taken by the caller, the hand-off it would otherwise make
/// could never run and the write would hang.
#[test]
fn writes_inside_on_blocking_thread_need_no_other_thread() {
    use crate::{on_blocking_thread, Metadata, RocksMetadata};
    let dir = tempfile::tempdir().unwrap();
    let meta = std::sync::Arc::new(RocksMetadata::new(
        Store::open(dir.path(), StoreOptions::default()).unwrap(),
    ));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .max_blocking_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let f = uuid::Uuid::new_v4();
    let (m, h) = (meta.clone(), rt.handle().clone());
    let written = rt.block_on(async move {
        let task =
            tokio::task::spawn_blocking(move || on_blocking_thread(|| h.block_on(m.put_object(f, "k", &rec("e1")))));
        tokio::time::timeout(std::time::Duration::from_secs(10), task).await
    });
    written
        .expect("the write waited for a second blocking thread")
        .unwrap()
        .unwrap();
    assert_eq!(meta.store().object(f, "k").unwrap().unwrap().etag, "e1");
    // The mark ends with the closure, also when it unwinds.
    assert!(!crate::engine::may_block_here());
    assert!(std::panic::catch_unwind(|| on_blocking_thread(|| panic!("inside"))).is_err());
    assert!(!crate::engine::may_block_here());
}
