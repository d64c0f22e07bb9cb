//! Object records: stores and removals, publishes in flight and their notes, and changes
//! conditional on the record a key holds, alone and raced from two gateways.

use std::sync::Arc;

use penstock_metadata::{Expect, KeyEdit, MetaError, Metadata, ObjectRecord};
use uuid::Uuid;

use super::*;

pub(super) async fn objects(m: &dyn Metadata) {
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

pub(super) async fn publishing(m: &dyn Metadata) {
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
pub(super) async fn conditional(m: &dyn Metadata) {
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
