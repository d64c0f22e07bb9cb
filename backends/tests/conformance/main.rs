//! Backend conformance: every `Volume` implementation must pass these checks. Each check takes a
//! fresh volume whose root directory is also visible on local disk (to plant foreign files and
//! symlinks the way a compute session would); POSIX and NFS (a real NFS-Ganesha exporting a temp
//! directory, over NFSv3 and NFSv4.1) run them all. Listing checks are in `listing`, files the
//! gateway did not write (a session's files, symlinks) in `foreign`.

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

mod foreign;
mod listing;

use foreign::{foreign_files, stat_many_is_stat_of_each, symlink_containment};
use listing::{
    kept_pages_follow_changes, paged_listing, sorted_listing_and_hidden_staging, sorted_walk_and_resumption,
};

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
