//! What every metadata engine must do, checked through the [`Metadata`] interface alone. Each
//! engine's test file opens a fresh, empty engine and hands it to [`run`]; a shared engine
//! (PostgreSQL) must also hold these properties when the calls come from several gateways, which
//! the races below exercise from many tasks at once. Tenancy records are checked in `tenancy`,
//! object records and conditional changes in `objects`.

use std::sync::Arc;

use penstock_metadata::{
    BucketRecord, Checksums, CustomerKeyed, Fingerprint, KeyEdit, Metadata, ObjectAttrs, ObjectRecord, PartRecord,
    Perm, QuotaScope, UploadId, UploadQuery, UploadRecord, VersionQuery, VersionRecord, Versioning,
};
use uuid::Uuid;

mod objects;
mod tenancy;

pub use objects::conditional_races;
use objects::{conditional, objects, publishing};
pub use tenancy::{bucket_edit_race, tenant_edit_race, tenant_name_race};
use tenancy::{bucket_name_race, buckets, quota_race, quotas, tenants};

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
    // Every other record is an SSE-C object's, whose key check must round-trip.
    attrs.customer_key = (seed % 2 == 1).then(|| CustomerKeyed {
        algorithm: "AES256".into(),
        key_md5: format!("md5-{seed}"),
        salt: format!("{seed:064x}"),
        check: format!("{:064x}", seed * 3),
    });
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
        // An SSE-C part's salt travels with its record in every engine.
        salt: n.is_multiple_of(2).then(|| format!("{n:064x}")),
    }
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
