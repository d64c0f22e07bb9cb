//! Backend conformance: every `Volume` implementation must pass these checks. Each check takes a
//! fresh volume whose root directory is also visible on local disk (to plant foreign files and
//! symlinks the way a compute session would); POSIX and NFS (a real NFS-Ganesha exporting a temp
//! directory, over NFSv3 and NFSv4.1) run them all.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use penstock_backends::nfs::{NfsOptions, NfsVolume};
use penstock_backends::posix::PosixVolume;
use penstock_backends::{
    Announce, Announced, BackendError, EntryKind, Folder, FolderLocation, ObjectPath, QuotaScope, SweepRule, UploadId,
    Volume,
};
use uuid::Uuid;

fn loc() -> FolderLocation {
    FolderLocation {
        scope: QuotaScope::user(Uuid::new_v4()),
        id: Uuid::new_v4(),
    }
}

fn p(k: &str) -> ObjectPath {
    ObjectPath::parse(k).unwrap()
}

async fn write(f: &Arc<dyn Folder>, key: &str, data: &[u8]) -> Result<(), BackendError> {
    let mut s = f.create_staging(Some(data.len() as u64)).await?;
    s.write(Bytes::copy_from_slice(data)).await?;
    s.seal(true).await?;
    s.publish(&p(key), true).await
}

async fn read(f: &Arc<dyn Folder>, key: &str) -> Option<Vec<u8>> {
    let h = f.open_read(&p(key)).await.unwrap()?;
    let n = h.stat().size as usize;
    Some(h.read_at(0, n).await.unwrap().to_vec())
}

async fn names(f: &Arc<dyn Folder>, dir: &[&str]) -> Vec<String> {
    let d: Vec<String> = dir.iter().map(|s| s.to_string()).collect();
    f.read_dir(&d).await.unwrap().iter().map(|e| e.sort_key()).collect()
}

async fn folder_lifecycle(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    assert!(matches!(v.create_folder(&l).await, Err(BackendError::FolderExists(_))));
    let f = v.open_folder(&l).await.unwrap();
    assert!(f.is_empty().await.unwrap());
    write(&f, "x", b"1").await.unwrap();
    assert!(matches!(v.delete_folder(&l).await, Err(BackendError::FolderNotEmpty)));
    assert!(f.remove(&p("x"), 0, true).await.unwrap());
    v.delete_folder(&l).await.unwrap();
    assert!(matches!(v.open_folder(&l).await, Err(BackendError::FolderNotFound(_))));
}

async fn write_read_stat_remove(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let data: Vec<u8> = (0..3_000_000u32).map(|i| i as u8).collect();
    write(&f, "a/b/c.bin", &data).await.unwrap();
    assert_eq!(read(&f, "a/b/c.bin").await.unwrap(), data);
    let st = f.stat(&p("a/b/c.bin")).await.unwrap().unwrap();
    assert_eq!((st.kind, st.size), (EntryKind::File, data.len() as u64));
    assert_eq!(f.stat(&p("a/b/")).await.unwrap().unwrap().kind, EntryKind::Dir);
    let h = f.open_read(&p("a/b/c.bin")).await.unwrap().unwrap();
    assert_eq!(h.read_at(2_999_990, 100).await.unwrap().len(), 10);
    // Overwrite replaces atomically.
    write(&f, "a/b/c.bin", b"small").await.unwrap();
    assert_eq!(read(&f, "a/b/c.bin").await.unwrap(), b"small");
    assert!(f.remove(&p("a/b/c.bin"), 0, true).await.unwrap());
    assert!(!f.remove(&p("a/b/c.bin"), 0, true).await.unwrap());
    assert!(f.stat(&p("a/")).await.unwrap().is_none(), "empty parents pruned");
    assert!(f.is_empty().await.unwrap());
}

async fn conflicts(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    write(&f, "file", b"1").await.unwrap();
    assert!(matches!(
        write(&f, "file/child", b"2").await,
        Err(BackendError::ParentIsFile)
    ));
    write(&f, "dir/child", b"3").await.unwrap();
    assert!(matches!(write(&f, "dir", b"4").await, Err(BackendError::IsDirectory)));
    assert!(matches!(f.make_dir(&p("file/"), true).await, Err(BackendError::IsFile)));
    f.make_dir(&p("m/n/"), true).await.unwrap();
    assert_eq!(read(&f, "file").await.unwrap(), b"1");
    assert_eq!(names(&f, &[]).await, ["dir/", "file", "m/"]);
    // Pruning stops at kept depth (a directory marker).
    write(&f, "m/n/o", b"5").await.unwrap();
    f.remove(&p("m/n/o"), 2, true).await.unwrap();
    assert!(f.stat(&p("m/n/")).await.unwrap().is_some());
}

/// A marker key written with a body: a directory at the key, the bytes in the hidden area.
async fn marker_payloads(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let marker = |k: &str| {
        let f = f.clone();
        let path = p(k);
        async move {
            let h = f.open_marker(&path).await.unwrap()?;
            let n = h.stat().size as usize;
            Some(h.read_at(0, n).await.unwrap().to_vec())
        }
    };
    write(&f, "a/b/", b"{\"kind\":\"folder\"}").await.unwrap();
    assert_eq!(f.stat(&p("a/b/")).await.unwrap().unwrap().kind, EntryKind::Dir);
    assert_eq!(marker("a/b/").await.unwrap(), b"{\"kind\":\"folder\"}");
    assert!(marker("a/").await.is_none());
    assert!(f.open_marker(&p("a/b")).await.unwrap().is_none(), "not a marker key");
    // Payloads are not objects of their own: listings show the directory only.
    assert_eq!(names(&f, &[]).await, ["a/"]);
    assert_eq!(names(&f, &["a"]).await, ["b/"]);
    assert_eq!(f.usage().await.unwrap(), 17);
    // Replaced by a later payload; a file at the key is a conflict.
    write(&f, "a/b/", b"x").await.unwrap();
    assert_eq!(marker("a/b/").await.unwrap(), b"x");
    write(&f, "file", b"1").await.unwrap();
    assert!(matches!(write(&f, "file/", b"2").await, Err(BackendError::IsFile)));
    // An object below keeps the directory when the marker goes, but not the payload.
    write(&f, "a/b/c", b"123").await.unwrap();
    assert!(f.remove(&p("a/b/"), 0, true).await.unwrap());
    assert!(marker("a/b/").await.is_none());
    assert_eq!(read(&f, "a/b/c").await.unwrap(), b"123");
    // make_dir (an empty marker) drops a payload.
    write(&f, "m/", b"payload").await.unwrap();
    f.make_dir(&p("m/"), true).await.unwrap();
    assert!(marker("m/").await.is_none());
    assert_eq!(f.usage().await.unwrap(), 4);
    // Removing a marker with a payload removes both; a second removal finds nothing.
    write(&f, "gone/", b"zz").await.unwrap();
    assert!(f.remove(&p("gone/"), 0, true).await.unwrap());
    assert!(f.stat(&p("gone/")).await.unwrap().is_none());
    assert!(!f.remove(&p("gone/"), 0, true).await.unwrap());
}

async fn sorted_listing_and_hidden_staging(v: Arc<dyn Volume>) {
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

/// Payloads around the sizes where staging writes change shape (alignment, block boundaries),
/// arriving in odd-sized chunks, with right, missing and wrong size hints, read back whole.
async fn staged_sizes_roundtrip(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    const MIB: usize = 1 << 20;
    let sizes = [0, 1, 4095, 4096, 4097, MIB - 1, MIB, MIB + 1, 3 * MIB + 12_345];
    let mut pattern = vec![0u8; 3 * MIB + 12_345 + sizes.len()];
    for (i, b) in pattern.iter_mut().enumerate() {
        *b = (i.wrapping_mul(2_654_435_761) >> 13) as u8;
    }
    for (n, &size) in sizes.iter().enumerate() {
        for (h, hint) in [Some(size as u64), None, Some(size as u64 * 2 + 1)]
            .into_iter()
            .enumerate()
        {
            let body = &pattern[n..n + size];
            let mut s = f.create_staging(hint).await.unwrap();
            for chunk in body.chunks(7_001) {
                s.write(Bytes::copy_from_slice(chunk)).await.unwrap();
            }
            // One of the three seals without syncing and syncs after, as the gateway's PUT does.
            let split = h == 1;
            let sealed = s.seal(!split).await.unwrap();
            assert_eq!(sealed.size, size as u64);
            if split {
                s.sync().await.unwrap();
            }
            let key = format!("s{size}-{h}");
            s.publish(&p(&key), true).await.unwrap();
            assert!(read(&f, &key).await.unwrap() == body, "{key} differs");
            // The gateway fingerprints an object by the attributes seal gave (before the sync).
            assert_eq!(
                f.stat(&p(&key)).await.unwrap(),
                Some(sealed),
                "{key} changed since seal"
            );
        }
    }
}

async fn multipart_parts(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let id = UploadId::generate();
    let mut sealed = Vec::new();
    for (n, body) in [
        (1u32, b"hello ".as_slice()),
        (2, b"world".as_slice()),
        (3, b"!!".as_slice()),
    ] {
        let mut s = f.create_staging(None).await.unwrap();
        s.write(Bytes::copy_from_slice(body)).await.unwrap();
        sealed.push(s.seal(false).await.unwrap());
        s.publish_part(&id, n, false).await.unwrap();
    }
    let (mut s, stats) = f.compose_parts(&id, &[1, 3]).await.unwrap();
    // The parts read are the files sealed for them (same identity as at seal time).
    assert_eq!(stats, [sealed[0], sealed[2]]);
    assert_eq!(s.seal(false).await.unwrap().size, 8);
    s.publish(&p("joined"), false).await.unwrap();
    assert_eq!(read(&f, "joined").await.unwrap(), b"hello !!");
    assert!(matches!(
        f.compose_parts(&id, &[4]).await,
        Err(BackendError::PartNotFound(4))
    ));
    assert_eq!(f.usage().await.unwrap(), 13 + 8, "parts and objects count toward usage");
    f.remove_upload(&id).await.unwrap();
    assert_eq!(f.usage().await.unwrap(), 8);
    assert!(f.compose_parts(&id, &[1]).await.is_err());
    assert!("../../etc".parse::<UploadId>().is_err(), "upload ids cannot be paths");
}

/// Parts around block and alignment boundaries, composed whole and in part, read back whole.
async fn composed_sizes_roundtrip(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    const MIB: usize = 1 << 20;
    let sizes = [MIB + 1, 4095, 3 * MIB, 1, MIB, 4096 + 7];
    let id = UploadId::generate();
    let mut bodies = Vec::new();
    for (i, &size) in sizes.iter().enumerate() {
        let body: Vec<u8> = (0..size).map(|j| (j.wrapping_mul(31) ^ (i * 97)) as u8).collect();
        let mut s = f.create_staging(Some(size as u64)).await.unwrap();
        s.write(Bytes::from(body.clone())).await.unwrap();
        s.seal(false).await.unwrap();
        s.publish_part(&id, i as u32 + 1, false).await.unwrap();
        bodies.push(body);
    }
    for (name, numbers) in [("all", vec![1, 2, 3, 4, 5, 6]), ("some", vec![2, 4, 3])] {
        let want: Vec<u8> = numbers.iter().flat_map(|&n| bodies[n as usize - 1].clone()).collect();
        let (mut s, _) = f.compose_parts(&id, &numbers).await.unwrap();
        assert_eq!(s.len(), want.len() as u64);
        assert_eq!(s.seal(true).await.unwrap().size, want.len() as u64);
        s.publish(&p(name), true).await.unwrap();
        assert!(read(&f, name).await.unwrap() == want, "{name} differs");
    }
    f.remove_upload(&id).await.unwrap();
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

async fn sorted_walk_and_resumption(v: Arc<dyn Volume>) {
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

/// Files that another client puts straight into the folder are objects like any other.
async fn foreign_files(v: Arc<dyn Volume>, root: &Path) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let fdir = root.join(l.relative_path());
    std::fs::create_dir_all(fdir.join("from/session")).unwrap();
    std::fs::write(fdir.join("from/session/out.txt"), b"written by a session").unwrap();
    std::fs::write(fdir.join("top"), vec![7u8; 100_000]).unwrap();
    assert_eq!(names(&f, &[]).await, ["from/", "top"]);
    assert_eq!(read(&f, "from/session/out.txt").await.unwrap(), b"written by a session");
    let st = f.stat(&p("top")).await.unwrap().unwrap();
    assert_eq!(st.size, 100_000);
    // Changed behind our back: the new bytes and a new fingerprint.
    std::fs::write(fdir.join("top"), b"changed").unwrap();
    assert_eq!(read(&f, "top").await.unwrap(), b"changed");
    let st2 = f.stat(&p("top")).await.unwrap().unwrap();
    assert_ne!(st, st2);
    assert_eq!(f.usage().await.unwrap(), 20 + 7);
    assert!(!f.is_empty().await.unwrap());
    std::fs::remove_file(fdir.join("top")).unwrap();
    assert!(f.open_read(&p("top")).await.unwrap().is_none());
}

/// A new folder of `v` (and its directory under `root`), and a directory outside the volume
/// holding a file `secret`, for symlinks to lead out to.
async fn folder_beside_a_secret(v: &Arc<dyn Volume>, root: &Path) -> (tempfile::TempDir, Arc<dyn Folder>, PathBuf) {
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"top secret").unwrap();
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    (outside, f, root.join(l.relative_path()))
}

/// `stat_many` answers for each path what `stat` answers: files and directories in several
/// directories (each visited more than once, out of order), missing names, missing and
/// non-directory parents, symlinks followed while they stay inside; and a symlink that leads
/// out fails the call as `stat` fails.
async fn stat_many_is_stat_of_each(v: Arc<dyn Volume>, root: &Path) {
    let (outside, f, fdir) = folder_beside_a_secret(&v, root).await;
    write(&f, "a/one", b"1").await.unwrap();
    write(&f, "a/two", b"22").await.unwrap();
    write(&f, "b/c/three", b"333").await.unwrap();
    write(&f, "top", b"4444").await.unwrap();
    std::fs::write(fdir.join("a/session"), b"written by a session").unwrap();
    std::os::unix::fs::symlink("../top", fdir.join("a/link")).unwrap();
    let keys = [
        "a/one",
        "a/two",
        "a/missing",
        "a/link",
        "b/c/three",
        "a/session",
        "top",
        "b/c",
        "nowhere/x",
        "top/x",
        "b/c/three",
        "a/one",
    ];
    let paths: Vec<ObjectPath> = keys.iter().map(|k| p(k)).collect();
    let many = f.stat_many(&paths).await.unwrap();
    assert_eq!(many.len(), keys.len());
    for (k, got) in keys.iter().zip(&many) {
        assert_eq!(*got, f.stat(&p(k)).await.unwrap(), "{k}");
    }
    let sizes: Vec<Option<u64>> = many.iter().map(|s| s.map(|s| s.size)).collect();
    assert_eq!(
        sizes[..8],
        [Some(1), Some(2), None, Some(4), Some(3), Some(20), Some(4), sizes[7]],
        "{keys:?}"
    );
    assert_eq!(many[7].map(|s| s.kind), Some(EntryKind::Dir));
    assert_eq!(many[8], None);
    assert_eq!(many[9], None);
    assert!(f.stat_many(&[]).await.unwrap().is_empty());
    std::os::unix::fs::symlink(outside.path().join("secret"), fdir.join("a/out")).unwrap();
    assert!(f.stat(&p("a/out")).await.is_err());
    assert!(f.stat_many(&[p("a/one"), p("a/out")]).await.is_err());
}

/// Symlinks: ones that stay inside the folder work, ones that lead out are never followed.
async fn symlink_containment(v: Arc<dyn Volume>, root: &Path) {
    let (outside, f, fdir) = folder_beside_a_secret(&v, root).await;
    std::os::unix::fs::symlink(outside.path(), fdir.join("out")).unwrap();
    std::os::unix::fs::symlink(outside.path().join("secret"), fdir.join("secret-link")).unwrap();
    std::os::unix::fs::symlink("../../../../..", fdir.join("up")).unwrap();
    write(&f, "real", b"r").await.unwrap();
    std::os::unix::fs::symlink("real", fdir.join("in-link")).unwrap();

    assert!(matches!(
        f.open_read(&p("out/secret")).await,
        Err(BackendError::Escapes)
    ));
    assert!(matches!(
        f.open_read(&p("secret-link")).await,
        Err(BackendError::Escapes)
    ));
    assert!(f.stat(&p("up/")).await.is_err());
    assert!(matches!(write(&f, "out/new", b"x").await, Err(BackendError::Escapes)));
    assert!(!outside.path().join("new").exists());
    assert!(!f.remove(&p("out/secret"), 0, true).await.unwrap_or(false));
    assert!(outside.path().join("secret").exists());
    assert_eq!(read(&f, "in-link").await.unwrap(), b"r");
    assert_eq!(names(&f, &[]).await, ["in-link", "real"]);
    // A sibling folder on the same volume is outside too, however the link is spelled.
    let other = loc();
    v.create_folder(&other).await.unwrap();
    let g = v.open_folder(&other).await.unwrap();
    write(&g, "theirs", b"other tenant").await.unwrap();
    let rel = Path::new("../../../..").join(other.relative_path()).join("theirs");
    std::os::unix::fs::symlink(&rel, fdir.join("sideways")).unwrap();
    assert!(f.open_read(&p("sideways")).await.is_err() || f.open_read(&p("sideways")).await.unwrap().is_none());
    std::fs::create_dir(fdir.join("d")).unwrap();
    std::os::unix::fs::symlink("../real", fdir.join("d/up-in")).unwrap();
    assert_eq!(
        read(&f, "d/up-in").await.unwrap(),
        b"r",
        "a link may climb while it stays inside"
    );
    std::os::unix::fs::symlink("loop", fdir.join("loop")).unwrap();
    assert!(f.open_read(&p("loop")).await.is_err());
}

/// Pages of a directory (`read_dir_from`) are slices of its whole listing (`read_dir`): the same
/// entries with the same stats in the same order, from any place, symlinks resolved (or left
/// out) as the whole listing resolves them.
async fn paged_listing(v: Arc<dyn Volume>, root: &Path) {
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
async fn kept_pages_follow_changes(v: Arc<dyn Volume>, root: &Path) {
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

/// Noncurrent versions: kept by a second name while the key is overwritten, moved away by a
/// delete, moved back by a restore; counted in usage, never listed.
async fn versions(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let (n1, n2) = (
        penstock_backends::layout::version_name(),
        penstock_backends::layout::version_name(),
    );
    assert!(
        f.keep_version(&p("d/k"), &n1, true).await.unwrap().is_none(),
        "nothing to keep"
    );
    write(&f, "d/k", b"first").await.unwrap();
    let at_key = f.stat(&p("d/k")).await.unwrap().unwrap();
    let kept = f.keep_version(&p("d/k"), &n1, true).await.unwrap().unwrap();
    assert_eq!(
        (kept.inode, kept.size, kept.mtime_ns),
        (at_key.inode, 5, at_key.mtime_ns)
    );
    write(&f, "d/k", b"second!").await.unwrap();
    assert_eq!(read(&f, "d/k").await.unwrap(), b"second!");
    let h = f.open_version(&n1).await.unwrap().unwrap();
    assert_eq!(h.read_at(0, 100).await.unwrap(), &b"first"[..]);
    assert_eq!(f.usage().await.unwrap(), 12, "versions count");
    assert_eq!(names(&f, &[]).await, ["d/"], "versions are not listed");
    // A delete moves the current file away and prunes its emptied parent.
    let stashed = f.stash_version(&p("d/k"), &n2, 0, true).await.unwrap().unwrap();
    assert_eq!(stashed.size, 7);
    assert!(f.stat(&p("d/k")).await.unwrap().is_none());
    assert!(f.stat(&p("d/")).await.unwrap().is_none(), "emptied parent pruned");
    assert!(f.stash_version(&p("d/k"), &n2, 0, true).await.unwrap().is_none());
    // Restores make parents again and replace what is at the key.
    assert!(f.restore_version(&n1, &p("d/k"), true).await.unwrap());
    assert_eq!(read(&f, "d/k").await.unwrap(), b"first");
    assert!(f.open_version(&n1).await.unwrap().is_none());
    assert!(f.restore_version(&n2, &p("d/k"), true).await.unwrap());
    assert_eq!(read(&f, "d/k").await.unwrap(), b"second!");
    assert!(
        !f.restore_version(&n2, &p("d/k"), true).await.unwrap(),
        "already restored"
    );
    f.keep_version(&p("d/k"), &n1, true).await.unwrap().unwrap();
    assert!(f.remove_version(&n1).await.unwrap());
    assert!(!f.remove_version(&n1).await.unwrap());
    assert_eq!(
        read(&f, "d/k").await.unwrap(),
        b"second!",
        "removing a version leaves the key"
    );
    assert!(
        f.keep_version(&p("d/"), &n1, true).await.unwrap().is_none(),
        "markers keep no versions"
    );
    assert!(f.open_version("../../x").await.is_err(), "names are checked");
    assert!(f.remove(&p("d/k"), 0, true).await.unwrap());
    assert!(f.is_empty().await.unwrap());
}

/// A publish with the caller's steps around its rename: `before` runs while the key still holds
/// what it had, `after` once the new file is there; a `before` that says no leaves the key as it
/// was and no file behind. Markers and nested keys take the same path.
async fn announced_publishes(v: Arc<dyn Volume>, root: &Path) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let fdir = root.join(l.relative_path());
    let staged = |data: &'static [u8]| {
        let f = f.clone();
        async move {
            let mut s = f.create_staging(Some(data.len() as u64)).await.unwrap();
            s.write(Bytes::from_static(data)).await.unwrap();
            s.seal(false).await.unwrap();
            s
        }
    };
    write(&f, "a/k", b"old").await.unwrap();
    for (key, on_disk) in [("a/k", "a/k"), ("new/deep/k", "new/deep/k")] {
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (at_before, at_after) = (seen.clone(), seen.clone());
        let (p1, p2) = (fdir.join(on_disk), fdir.join(on_disk));
        let a = Announce {
            before: Box::new(move || {
                at_before.lock().unwrap().push(("before", std::fs::read(&p1).ok()));
                true
            }),
            after: Box::new(move || at_after.lock().unwrap().push(("after", std::fs::read(&p2).ok()))),
        };
        let s = staged(b"announced").await;
        assert_eq!(
            s.publish_announced(&p(key), true, a).await.unwrap(),
            Announced::Published
        );
        let old = (key == "a/k").then(|| b"old".to_vec());
        assert_eq!(
            *seen.lock().unwrap(),
            [("before", old), ("after", Some(b"announced".to_vec()))],
            "{key}"
        );
        assert_eq!(read(&f, key).await.unwrap(), b"announced");
    }
    // Withdrawn: nothing changes, `after` never runs, nothing is left in the staging area.
    let ran_after = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = ran_after.clone();
    let a = Announce {
        before: Box::new(|| false),
        after: Box::new(move || flag.store(true, std::sync::atomic::Ordering::SeqCst)),
    };
    let s = staged(b"withdrawn").await;
    assert_eq!(
        s.publish_announced(&p("a/k"), true, a).await.unwrap(),
        Announced::Withdrawn
    );
    assert!(!ran_after.load(std::sync::atomic::Ordering::SeqCst));
    assert_eq!(read(&f, "a/k").await.unwrap(), b"announced");
    // Dropping the staging file removes it (NFS with an RPC of its own, so give it a moment).
    let holds_withdrawn = || {
        std::fs::read_dir(fdir.join(".penstock/tmp"))
            .unwrap()
            .any(|e| std::fs::read(e.unwrap().path()).ok().as_deref() == Some(&b"withdrawn"[..]))
    };
    for _ in 0..100 {
        if !holds_withdrawn() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(!holds_withdrawn(), "the withdrawn file is left in the staging area");
    // A marker with a payload.
    let a = Announce {
        before: Box::new(|| true),
        after: Box::new(|| ()),
    };
    let s = staged(b"payload").await;
    assert_eq!(
        s.publish_announced(&p("m/"), true, a).await.unwrap(),
        Announced::Published
    );
    let h = f.open_marker(&p("m/")).await.unwrap().unwrap();
    assert_eq!(h.read_at(0, 100).await.unwrap(), &b"payload"[..]);
}

/// A backend under test: fresh volumes whose root is also a local directory.
trait Fixture {
    fn volume(&self) -> impl Future<Output = (Arc<dyn Volume>, PathBuf)>;
}

async fn run_all(fx: &impl Fixture) {
    folder_lifecycle(fx.volume().await.0).await;
    write_read_stat_remove(fx.volume().await.0).await;
    conflicts(fx.volume().await.0).await;
    marker_payloads(fx.volume().await.0).await;
    sorted_listing_and_hidden_staging(fx.volume().await.0).await;
    multipart_parts(fx.volume().await.0).await;
    staged_sizes_roundtrip(fx.volume().await.0).await;
    composed_sizes_roundtrip(fx.volume().await.0).await;
    sorted_walk_and_resumption(fx.volume().await.0).await;
    versions(fx.volume().await.0).await;
    let (v, root) = fx.volume().await;
    foreign_files(v, &root).await;
    let (v, root) = fx.volume().await;
    symlink_containment(v, &root).await;
    let (v, root) = fx.volume().await;
    stat_many_is_stat_of_each(v, &root).await;
    let (v, root) = fx.volume().await;
    announced_publishes(v, &root).await;
    let (v, root) = fx.volume().await;
    paged_listing(v, &root).await;
    let (v, root) = fx.volume().await;
    kept_pages_follow_changes(v, &root).await;
}

/// A POSIX volume in a temp dir, staging with direct writes from `direct_from` bytes.
struct Posix(tempfile::TempDir, Option<u64>);

impl Fixture for Posix {
    async fn volume(&self) -> (Arc<dyn Volume>, PathBuf) {
        let root = self.0.path().join(format!("{:x}", rand::random::<u64>()));
        let v = PosixVolume::open("v", &root).unwrap().with_direct_writes_from(self.1);
        (Arc::new(v), root)
    }
}

struct Nfs {
    server: penstock_tests::ganesha::Ganesha,
    version: &'static str,
}

impl Fixture for Nfs {
    async fn volume(&self) -> (Arc<dyn Volume>, PathBuf) {
        let sub = format!("vol-{:x}", rand::random::<u64>());
        let mut opts = NfsOptions::new(&self.server.url(self.version));
        opts.path = format!("volumes/{sub}");
        let v = NfsVolume::connect("v", opts).await.unwrap();
        (Arc::new(v), self.server.export.join("volumes").join(sub))
    }
}

#[tokio::test]
async fn posix_conformance() {
    run_all(&Posix(tempfile::tempdir().unwrap(), None)).await;
}

#[tokio::test]
async fn posix_direct_writes_conformance() {
    run_all(&Posix(tempfile::tempdir().unwrap(), Some(0))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nfs3_conformance() {
    let server = penstock_tests::ganesha::Ganesha::start();
    run_all(&Nfs { server, version: "3" }).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nfs41_conformance() {
    let server = penstock_tests::ganesha::Ganesha::start();
    run_all(&Nfs { server, version: "4.1" }).await;
}
