//! Listings: whole directories and pages of them in S3 key order, the hidden staging directory
//! left out, walks resumed from any key, and kept names that follow changes made behind the
//! gateway's back.

use super::*;

pub(super) async fn sorted_listing_and_hidden_staging(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    for k in ["a0", "a/b", "a.txt", "b", "ü", "@x", "%y", "sp ace"] {
        write(&f, k, b"").await.unwrap();
    }
    let got = names(&f, &[]).await;
    let mut want = got.clone();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(got, ["%y", "@x", "a.txt", "a/", "a0", "b", "sp ace", "ü"]);
    // An unpublished staging file is invisible and removed when dropped.
    let mut s = f.create_staging(None).await.unwrap();
    s.write(Bytes::from_static(b"partial")).await.unwrap();
    assert!(!names(&f, &[]).await.iter().any(|n| n.starts_with(".penstock")));
    drop(s);
    assert!(ObjectPath::parse(".penstock/tmp/x").is_err());
    // Leftovers of a crash are swept; files newer than the cutoff (in-flight writes) stay.
    let mut inflight = f.create_staging(None).await.unwrap();
    inflight.write(Bytes::from_static(b"x")).await.unwrap();
    inflight.seal(false).await.unwrap();
    let mine = SweepRule::alone(std::time::SystemTime::now() + std::time::Duration::from_secs(1));
    assert_eq!(f.sweep_staging(&mine).await.unwrap(), 0, "a live writer's file stays");
    std::mem::forget(inflight);
    // Another gateway sharing the volume sweeps it only once this one is not alive.
    let other_alive = SweepRule {
        alive: ["0".to_owned(), "peer".to_owned()].into(),
        dead: Default::default(),
        unknown_before: std::time::SystemTime::now() + std::time::Duration::from_secs(1),
    };
    assert_eq!(f.sweep_staging(&other_alive).await.unwrap(), 0);
    let this_dead = SweepRule {
        alive: ["peer".to_owned()].into(),
        dead: ["0".to_owned()].into(),
        unknown_before: std::time::SystemTime::UNIX_EPOCH,
    };
    assert_eq!(
        f.sweep_staging(&this_dead).await.unwrap(),
        1,
        "a dead writer's file goes"
    );
}

/// Recursively lists the folder in S3 key order from `read_dir` alone, as ListObjects walks it.
async fn walk(f: &Arc<dyn Folder>, dir: Vec<String>, out: &mut Vec<String>) {
    for e in f.read_dir(&dir).await.unwrap() {
        let mut path = dir.clone();
        path.push(e.name.clone());
        match e.stat.kind {
            EntryKind::File => out.push(path.join("/")),
            EntryKind::Dir => Box::pin(walk(f, path, out)).await,
        }
    }
}

pub(super) async fn sorted_walk_and_resumption(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let mut keys: Vec<String> = Vec::new();
    for a in ["a", "a-b", "a.b", "b", "zz"] {
        for b in ["1", "1-1", "1.d/x", "1.d/y/z", "2", "10"] {
            keys.push(format!("{a}/{b}"));
        }
        keys.push(format!("{a}0"));
    }
    for k in &keys {
        write(&f, k, k.as_bytes()).await.unwrap();
    }
    let mut got = Vec::new();
    walk(&f, Vec::new(), &mut got).await;
    keys.sort();
    assert_eq!(
        got, keys,
        "a depth-first walk of sorted directories yields S3 key order"
    );
    // Resuming after any key yields exactly the keys that sort after it.
    for (i, marker) in keys.iter().enumerate().step_by(7) {
        let rest: Vec<&String> = got.iter().filter(|k| k.as_str() > marker.as_str()).collect();
        assert_eq!(rest, keys[i + 1..].iter().collect::<Vec<_>>());
    }
    for k in &keys {
        assert_eq!(read(&f, k).await.unwrap(), k.as_bytes());
    }
}

/// Pages of a directory (`read_dir_from`) are slices of its whole listing (`read_dir`): the same
/// entries with the same stats in the same order, from any place, symlinks resolved (or left
/// out) as the whole listing resolves them.
pub(super) async fn paged_listing(v: Arc<dyn Volume>, root: &Path) {
    let outside = tempfile::tempdir().unwrap();
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let fdir = root.join(l.relative_path());
    for (k, body) in [
        ("a0", &b"0"[..]),
        ("a/b", b"ab"),
        ("a.txt", b"txt"),
        ("b", b"bbbb"),
        ("sub.txt", b"s"),
        ("sub/x", b"x"),
        ("sub0", b""),
        ("ü", b"u"),
    ] {
        write(&f, k, body).await.unwrap();
    }
    std::os::unix::fs::symlink("b", fdir.join("link-b")).unwrap();
    std::os::unix::fs::symlink("sub", fdir.join("link-sub")).unwrap();
    std::os::unix::fs::symlink(outside.path(), fdir.join("out")).unwrap();
    type Row = (String, Option<EntryKind>, u64);
    let rows = |es: Vec<penstock_backends::DirEntry>| -> Vec<Row> {
        es.iter()
            .map(|e| (e.sort_key(), Some(e.stat.kind), e.stat.size))
            .collect()
    };
    let whole = rows(f.read_dir(&[]).await.unwrap());
    let keys: Vec<&str> = whole.iter().map(|r| r.0.as_str()).collect();
    assert_eq!(
        keys,
        [
            "a.txt",
            "a/",
            "a0",
            "b",
            "link-b",
            "link-sub/",
            "sub.txt",
            "sub/",
            "sub0",
            "ü"
        ]
    );
    for limit in [1, 2, 3, 100] {
        let mut paged = Vec::new();
        let mut from = String::new();
        loop {
            let page = rows(f.read_dir_from(&[], &from, limit).await.unwrap());
            assert!(page.len() <= limit);
            let done = page.len() < limit;
            if let Some(last) = page.last() {
                from = format!("{}\0", last.0);
            }
            paged.extend(page);
            if done {
                break;
            }
        }
        assert_eq!(paged, whole, "pages of {limit}");
    }
    for (i, r) in whole.iter().enumerate() {
        let page = rows(f.read_dir_from(&[], &r.0, 2).await.unwrap());
        assert_eq!(page, whole[i..(i + 2).min(whole.len())], "from {:?}", r.0);
    }
    let page = rows(f.read_dir_from(&[], "a/\0", 1).await.unwrap());
    assert_eq!(page[0].0, "a0", "from between two keys");
    assert!(
        f.read_dir_from(&[], "\u{ffff}", 10).await.unwrap().is_empty(),
        "from after every key"
    );
    let sub = vec!["sub".to_owned()];
    assert_eq!(
        rows(f.read_dir_from(&sub, "", 10).await.unwrap()),
        rows(f.read_dir(&sub).await.unwrap())
    );
    assert!(f.read_dir_from(&["nope".to_owned()], "", 10).await.unwrap().is_empty());
    assert!(
        f.read_dir_from(&["out".to_owned()], "", 10).await.unwrap().is_empty(),
        "not out of the folder"
    );
}

/// Every page of `dir`, `limit` entries at a time, as (sort key, size).
async fn all_pages(f: &Arc<dyn Folder>, dir: &[String], limit: usize) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut from = String::new();
    loop {
        let page = f.read_dir_from(dir, &from, limit).await.unwrap();
        let done = page.len() < limit;
        out.extend(page.iter().map(|e| (e.sort_key(), e.stat.size)));
        match page.last() {
            Some(e) if !done => from = format!("{}\0", e.sort_key()),
            _ => return out,
        }
    }
}

/// A large directory that has settled is paged from names the backend keeps: the pages still
/// follow files added, removed and rewritten in place behind the backend's back.
pub(super) async fn kept_pages_follow_changes(v: Arc<dyn Volume>, root: &Path) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let big = root.join(l.relative_path()).join("big");
    std::fs::create_dir(&big).unwrap();
    for i in 0..1200 {
        std::fs::write(big.join(format!("f{i:05}")), vec![b'x'; i % 5]).unwrap();
    }
    let dir = vec!["big".to_owned()];
    let whole = |f: Arc<dyn Folder>| async move {
        let all = f.read_dir(&["big".to_owned()]).await.unwrap();
        all.iter().map(|e| (e.sort_key(), e.stat.size)).collect::<Vec<_>>()
    };
    assert_eq!(all_pages(&f, &dir, 500).await, whole(f.clone()).await);
    tokio::time::sleep(std::time::Duration::from_millis(2200)).await;
    for _ in 0..2 {
        let paged = all_pages(&f, &dir, 500).await;
        assert_eq!(paged.len(), 1200);
        assert_eq!(paged, whole(f.clone()).await);
    }
    // A rewrite in place changes no directory time. Names come and go through the folder: an
    // NFS server may answer for names removed behind its back with stale handles.
    std::fs::write(big.join("f00007"), vec![b'y'; 777]).unwrap();
    assert!(f.remove(&p("big/f00100"), 0, true).await.unwrap());
    write(&f, "big/f00100a", b"new").await.unwrap();
    let paged = all_pages(&f, &dir, 500).await;
    assert!(paged.contains(&("f00100a".to_owned(), 3)) && !paged.iter().any(|(k, _)| k == "f00100"));
    assert_eq!(paged, whole(f.clone()).await);
}
