//! Tests of what is particular to the POSIX backend; the conformance suite covers the contract.

use super::fs::{is_local_fs, open_beneath_cached};
use super::read::read_cached;
use super::recycle::{RECYCLED_FILE_SHARE, RECYCLED_PER_DIR};
use super::staging::DIRECT_BLOCK;
use super::*;
use crate::layout::{self, TMP_DIR};
use bytes::Bytes;
use rustix::fs::Mode;
use std::os::unix::fs::MetadataExt;
use std::sync::atomic::Ordering;
use std::time::SystemTime;

async fn put(f: &Arc<dyn Folder>, key: &str, data: &[u8]) {
    let mut s = f.create_staging(Some(data.len() as u64)).await.unwrap();
    s.write(Bytes::copy_from_slice(data)).await.unwrap();
    s.seal(true).await.unwrap();
    s.publish(&ObjectPath::parse(key).unwrap(), true).await.unwrap();
}

async fn folder(root: &Path) -> (Arc<dyn Folder>, PathBuf) {
    folder_with_budget(root, None).await
}

/// A folder on a volume whose kept files may hold `budget` bytes (default: the volume's).
async fn folder_with_budget(root: &Path, budget: Option<u64>) -> (Arc<dyn Folder>, PathBuf) {
    let mut v = PosixVolume::open("v", root).unwrap();
    if let Some(b) = budget {
        v.io = Arc::new(Io::new("v", None, Recycled::new(b), v.io.inline_lookups));
    }
    let loc = crate::FolderLocation {
        scope: crate::QuotaScope::user(uuid::Uuid::new_v4()),
        id: uuid::Uuid::new_v4(),
    };
    v.create_folder(&loc).await.unwrap();
    (v.open_folder(&loc).await.unwrap(), root.join(loc.relative_path()))
}

/// Overwrites reuse the replaced files' inodes, the staging directory keeps at most
/// `RECYCLED_PER_DIR` files, and every version reads back exactly.
#[tokio::test]
async fn overwrites_recycle_inodes() {
    let dir = tempfile::tempdir().unwrap();
    let (f, path) = folder(dir.path()).await;
    let mut inodes = std::collections::HashSet::new();
    for i in 0..200u32 {
        let key = format!("k{}", i % 20);
        // Lengths go up and down, so reused files are both outgrown and cut short.
        let body = format!("version {i};").repeat(1 + (i as usize * 37) % 300);
        put(&f, &key, body.as_bytes()).await;
        assert_eq!(std::fs::read(path.join(&key)).unwrap(), body.as_bytes());
        inodes.insert(std::fs::metadata(path.join(&key)).unwrap().ino());
    }
    // 20 keys, 200 writes: a handful of inodes beyond the 20 live ones, not 200.
    assert!(inodes.len() < 40, "{} distinct inodes for 200 writes", inodes.len());
    let kept = std::fs::read_dir(path.join(layout::rel(&TMP_DIR))).unwrap().count();
    assert!(kept <= RECYCLED_PER_DIR, "{kept} files kept");
}

/// A kept file carries its object's old mtime; once taken for reuse it must not look like
/// a crash leftover to the staging sweep.
#[tokio::test]
async fn reused_files_are_fresh_for_the_staging_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let v = PosixVolume::open("v", dir.path()).unwrap();
    let loc = crate::FolderLocation {
        scope: crate::QuotaScope::user(uuid::Uuid::new_v4()),
        id: uuid::Uuid::new_v4(),
    };
    v.create_folder(&loc).await.unwrap();
    let f = v.open_folder(&loc).await.unwrap();
    let path = dir.path().join(loc.relative_path());
    put(&f, "k", b"old").await;
    let long_ago = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    let k = std::fs::File::options().write(true).open(path.join("k")).unwrap();
    k.set_modified(long_ago).unwrap();
    drop(k);
    put(&f, "k", b"new").await;
    // The kept file's bytes count against the volume's budget until it is taken.
    assert_eq!(v.io.recycled.bytes.load(Ordering::Relaxed), 3);
    let tmp = open_dir_path(&path.join(layout::rel(&TMP_DIR))).unwrap();
    let (fd, stale) =
        v.io.recycled
            .take(&tmp, "reused", OFlags::WRONLY, None)
            .expect("the old file was kept");
    assert_eq!((stale, v.io.recycled.bytes.load(Ordering::Relaxed)), (3, 0));
    let cutoff = SystemTime::now() - std::time::Duration::from_secs(60);
    assert_eq!(
        f.sweep_staging(&layout::SweepRule::alone(cutoff)).await.unwrap(),
        0,
        "the taken file looked stale"
    );
    assert!(rustix::fs::fstat(&fd).is_ok_and(|st| st.st_nlink == 1));
    // Removing the folder releases what its kept files held.
    put(&f, "k", b"newer").await;
    assert_eq!(v.io.recycled.bytes.load(Ordering::Relaxed), 3);
    assert!(f.remove(&ObjectPath::parse("k").unwrap(), 0, true).await.unwrap());
    drop(fd);
    let _ = rustix::fs::unlinkat(&tmp, "reused", AtFlags::empty());
    v.delete_folder(&loc).await.unwrap();
    assert_eq!(v.io.recycled.bytes.load(Ordering::Relaxed), 0);
}

/// A file someone has open, or that has another name, is never reused: the reader keeps
/// reading the old bytes and the other name keeps them.
#[tokio::test]
async fn open_or_linked_files_are_not_recycled() {
    let dir = tempfile::tempdir().unwrap();
    let (f, path) = folder(dir.path()).await;
    put(&f, "held", &[b'a'; 5000]).await;
    put(&f, "linked", &[b'b'; 5000]).await;
    let held = std::fs::File::open(path.join("held")).unwrap();
    std::fs::hard_link(path.join("linked"), path.join("other-name")).unwrap();
    put(&f, "held", b"new").await;
    put(&f, "linked", b"new").await;
    for i in 0..100 {
        put(&f, &format!("x{i}"), &[b'z'; 6000]).await;
        put(&f, &format!("x{i}"), &[b'y'; 7000]).await;
    }
    let mut old = Vec::new();
    std::io::Read::read_to_end(&mut &held, &mut old).unwrap();
    assert!(old == [b'a'; 5000], "a reader of a replaced file saw other bytes");
    assert!(std::fs::read(path.join("other-name")).unwrap() == [b'b'; 5000]);
    assert_eq!(std::fs::read(path.join("held")).unwrap(), b"new");
}

/// Reads come back exact whether the page cache holds all, part or none of the range: the
/// cached part is copied on the caller's task, the rest read by a blocking read.
#[tokio::test]
async fn reads_are_exact_cached_or_not() {
    use std::os::fd::AsFd;
    let dir = tempfile::tempdir().unwrap();
    let (f, path) = folder(dir.path()).await;
    let body: Vec<u8> = (0..(3 << 20) + 123).map(|i| (i * 31 % 251) as u8).collect();
    put(&f, "o", &body).await;
    let file = File::open(path.join("o")).unwrap();
    let mut buf = Vec::with_capacity(body.len() + 10);
    std::io::Read::read_to_end(&mut &file, &mut Vec::new()).unwrap();
    assert!(
        read_cached(&file, &mut buf, 0, body.len() + 10),
        "the end of the file was not seen"
    );
    assert!(buf == body, "cached bytes differ");
    let key = ObjectPath::parse("o").unwrap();
    let h = f.open_read(&key).await.unwrap().unwrap();
    for (evict, at, n) in [(true, 0, body.len()), (false, 5, 1 << 20), (true, 2 << 20, body.len())] {
        if evict {
            // Clean pages go; one page at 2 MiB is read back, so the read from there
            // starts cached and goes on uncached (unless read-ahead brought the rest).
            rustix::fs::fadvise(file.as_fd(), 0, None, rustix::fs::Advice::DontNeed).unwrap();
            let mut half = vec![0u8; 4096];
            rustix::io::pread(&file, &mut half, (2 << 20) as u64).unwrap();
        }
        let got = h.read_at(at as u64, n).await.unwrap();
        let end = (at + n).min(body.len());
        assert!(got[..] == body[at..end], "read of {n} at {at} (evicted: {evict})");
    }
}

/// Large overwrites reuse the replaced files with their blocks: every version reads back
/// exactly whether it is longer or shorter than the file it reused, few inodes are used, and
/// kept files never hold more than the budget.
#[tokio::test]
async fn large_overwrites_reuse_files_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 16 << 20;
    let (f, path) = folder_with_budget(dir.path(), Some(budget)).await;
    let mut inodes = std::collections::HashSet::new();
    for i in 0..24usize {
        let key = format!("k{}", i % 3);
        let len = [3 << 20, (2 << 20) + 5, (3 << 20) + 4096 + 77, 1 << 20][i % 4];
        let body: Vec<u8> = (0..len).map(|j| (j * 7 + i) as u8).collect();
        put(&f, &key, &body).await;
        assert!(std::fs::read(path.join(&key)).unwrap() == body, "write {i}");
        inodes.insert(std::fs::metadata(path.join(&key)).unwrap().ino());
        // Recycling runs after the reply for large files; let it land.
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert!(inodes.len() < 10, "{} distinct inodes for 24 writes", inodes.len());
    let held: u64 = std::fs::read_dir(path.join(layout::rel(&TMP_DIR)))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(held <= budget, "kept files hold {held} bytes");
    assert!(held > 0, "no kept file kept its blocks");
}

/// A write that finds the file system full frees the kept files that hold blocks and is
/// tried once more; with nothing left to free, the error stands after one try.
#[test]
fn a_full_file_system_releases_kept_files() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = Arc::new(open_dir_path(dir.path()).unwrap());
    let io = Io::new("v", None, Recycled::new(64 << 20), false);
    std::fs::write(dir.path().join("kept"), vec![1u8; 4096]).unwrap();
    io.recycled.keep_or_remove(&tmp, "kept");
    assert_eq!(io.recycled.bytes.load(Ordering::Relaxed), 4096);
    let full = || Err::<(), _>(BackendError::Io(std::io::Error::from_raw_os_error(libc::ENOSPC)));
    let mut tries = 0;
    let r = io.with_space(|| {
        tries += 1;
        if tries == 1 {
            full()
        } else {
            Ok(())
        }
    });
    assert!(r.is_ok() && tries == 2, "not tried again after freeing ({tries} tries)");
    assert!(!dir.path().join("kept").exists(), "the kept file is still there");
    assert_eq!(io.recycled.bytes.load(Ordering::Relaxed), 0);
    let mut tries = 0;
    assert!(io
        .with_space(|| {
            tries += 1;
            full()
        })
        .is_err());
    assert_eq!(tries, 1);
}

/// A kept file is picked by the upload's expected size, so a small upload does not take (and
/// cut down) a large file.
#[test]
fn kept_files_are_picked_by_size() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = Arc::new(open_dir_path(dir.path()).unwrap());
    let r = Recycled::new(64 << 20);
    for (name, len) in [("small", 100u64), ("large", 5 << 20), ("middle", 1 << 20)] {
        std::fs::write(dir.path().join(name), vec![1u8; len as usize]).unwrap();
        r.keep_or_remove(&tmp, name);
    }
    let stale = |want| r.take(&tmp, "taken", OFlags::WRONLY, want).map(|(_, stale)| stale);
    assert_eq!(stale(Some(4 << 20)), Some(5 << 20));
    assert_eq!(stale(None), Some(100));
    assert_eq!(stale(Some(0)), Some(1 << 20));
    assert_eq!(stale(Some(1)), None);
}

/// A replaced file too large to keep its blocks is recycled after the publish returns: it
/// ends up emptied (or removed), never holding its old bytes invisibly, unless a reader still
/// has it open, who keeps reading the old bytes.
#[tokio::test]
async fn large_replaced_files_are_emptied_after_publish() {
    let dir = tempfile::tempdir().unwrap();
    let budget = 4 << 20;
    let (f, path) = folder_with_budget(dir.path(), Some(budget)).await;
    let big = (budget / RECYCLED_FILE_SHARE) as usize * 2;
    put(&f, "big", &vec![b'a'; big]).await;
    put(&f, "held", &vec![b'b'; big]).await;
    let held = std::fs::File::open(path.join("held")).unwrap();
    put(&f, "big", &vec![b'c'; big]).await;
    put(&f, "held", &vec![b'd'; big]).await;
    let tmp = path.join(layout::rel(&TMP_DIR));
    let held_bytes = |tmp: &Path| -> u64 {
        std::fs::read_dir(tmp)
            .unwrap()
            .filter_map(|e| e.ok()?.metadata().ok())
            .map(|m| m.len())
            .sum()
    };
    let mut waited = 0;
    while held_bytes(&tmp) > 0 {
        assert!(waited < 500, "replaced files still hold {} bytes", held_bytes(&tmp));
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        waited += 1;
    }
    let mut old = Vec::new();
    std::io::Read::read_to_end(&mut &held, &mut old).unwrap();
    assert!(old == vec![b'b'; big], "a reader of a replaced file saw other bytes");
    assert!(std::fs::read(path.join("big")).unwrap() == vec![b'c'; big]);
    assert!(std::fs::read(path.join("held")).unwrap() == vec![b'd'; big]);
}

/// Where the file system takes `O_DIRECT`, large staging files keep it through whole blocks
/// (no silent fallback to the page cache) and still end with exactly the bytes written.
#[tokio::test]
async fn direct_staging_stays_direct() {
    let dir = tempfile::tempdir().unwrap();
    let probe = rustix::fs::open(
        dir.path().join("probe"),
        OFlags::WRONLY | OFlags::CREATE | OFlags::DIRECT,
        Mode::from_raw_mode(0o600),
    );
    let root = Arc::new(open_dir_path(dir.path()).unwrap());
    let io = Arc::new(Io::new("v", None, Recycled::new(0), false));
    let mut s = PosixStaging::create(root, io, true, None).unwrap();
    let direct = |s: &PosixStaging| rustix::fs::fcntl_getfl(&*s.file()).unwrap().contains(OFlags::DIRECT);
    assert_eq!(
        direct(&s),
        probe.is_ok(),
        "O_DIRECT at open iff the file system takes it"
    );
    let body: Vec<u8> = (0..DIRECT_BLOCK * 2 + 5000).map(|i| (i % 251) as u8).collect();
    for c in body.chunks(65_537) {
        s.write(Bytes::copy_from_slice(c)).await.unwrap();
    }
    s.settle().await.unwrap();
    assert_eq!(direct(&s), probe.is_ok(), "whole blocks were written direct");
    let st = s.seal(true).await.unwrap();
    assert_eq!(st.size, body.len() as u64);
    let got = std::fs::read(dir.path().join(layout::rel(&TMP_DIR)).join(&s.name)).unwrap();
    assert!(got == body);
}

/// Opens and stats tried on the calling task (entries in the dentry cache, local file system)
/// find exactly what the blocking pool finds: files, directories, absent keys, symlinks that
/// stay inside, and the refusal of ones that lead out.
#[tokio::test]
async fn lookups_on_the_task_agree_with_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let (f, path) = folder(dir.path()).await;
    put(&f, "a/b", b"bytes").await;
    std::os::unix::fs::symlink("a/b", path.join("inside")).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", path.join("absolute")).unwrap();
    std::os::unix::fs::symlink("../../../../../x", path.join("up")).unwrap();
    let root = Arc::new(open_dir_path(&path).unwrap());
    let on = |inline| PosixFolder {
        root: root.clone(),
        io: Arc::new(Io::new("v", None, Recycled::new(0), inline)),
        direct_from: None,
    };
    let (task, pool) = (on(true), on(false));
    // Just written or looked up: in the dentry cache, so the fast path answers.
    assert!(open_beneath_cached(&root, "a/b", OFlags::RDONLY).is_ok());
    for key in ["a/b", "a", "a/c", "nope/b", "inside", "absolute", "up", "a/b/c"] {
        let p = ObjectPath::parse(key).unwrap();
        for _ in 0..2 {
            let (st, sp) = (task.stat(&p).await, pool.stat(&p).await);
            assert_eq!(format!("{st:?}"), format!("{sp:?}"), "stat {key}");
            let read = |r: Result<Option<Box<dyn ReadHandle>>>| match r {
                Ok(Some(h)) => format!("file of {}", h.stat().size),
                Ok(None) => "none".to_owned(),
                Err(e) => format!("{e}"),
            };
            let (rt, rp) = (read(task.open_read(&p).await), read(pool.open_read(&p).await));
            assert_eq!(rt, rp, "open {key}");
        }
    }
    let r = task
        .open_read(&ObjectPath::parse("inside").unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(&r.read_at(0, 5).await.unwrap()[..], b"bytes");
    assert!(matches!(
        task.open_read(&ObjectPath::parse("absolute").unwrap()).await,
        Err(BackendError::Escapes)
    ));
}

/// Lookups run on the calling task only on local disk file systems.
#[test]
fn only_local_file_systems_take_lookups_on_the_task() {
    assert!(is_local_fs(Path::new("/dev/shm")), "tmpfs is local");
    assert!(!is_local_fs(Path::new("/proc")), "procfs is not a disk file system");
}

/// Every page of `dir` from `from` as the folder answers it, read `limit` entries at a time.
async fn paged(f: &Arc<dyn Folder>, dir: &[String], limit: usize) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut from = String::new();
    loop {
        let page = f.read_dir_from(dir, &from, limit).await.unwrap();
        let done = page.len() < limit;
        for e in &page {
            out.push((e.sort_key(), e.stat.size));
        }
        match page.last() {
            Some(e) if !done => from = format!("{}\0", e.sort_key()),
            _ => return out,
        }
    }
}

async fn whole(f: &Arc<dyn Folder>, dir: &[String]) -> Vec<(String, u64)> {
    let all = f.read_dir(dir).await.unwrap();
    all.iter().map(|e| (e.sort_key(), e.stat.size)).collect()
}

/// Pages of a large directory are those of the whole, sorted listing, and follow changes made
/// behind the gateway's back once the directory's names are kept: files added and removed
/// (the directory changes), and a file rewritten in place (it does not).
#[tokio::test]
async fn pages_of_a_kept_directory_follow_its_changes() {
    let dir = tempfile::tempdir().unwrap();
    let (f, path) = folder(dir.path()).await;
    assert!(
        is_local_fs(dir.path()),
        "the test needs a local file system to keep names on"
    );
    let flat = path.join("flat");
    std::fs::create_dir(&flat).unwrap();
    for i in 0..1500 {
        std::fs::write(flat.join(format!("f{i:05}")), vec![b'x'; i % 7]).unwrap();
    }
    // Names that sort around the directory's own entries: `sub/` after `sub.txt`, before `sub0`.
    std::fs::create_dir(flat.join("sub")).unwrap();
    std::fs::write(flat.join("sub/inner"), b"i").unwrap();
    std::fs::write(flat.join("sub.txt"), b"t").unwrap();
    std::fs::write(flat.join("sub0"), b"0").unwrap();
    let segs = vec!["flat".to_owned()];
    // Not settled yet: read again for every page, and right.
    assert_eq!(paged(&f, &segs, 333).await, whole(&f, &segs).await);

    // Settled: the names are kept from the next read on.
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let before = whole(&f, &segs).await;
    assert_eq!(before.len(), 1503);
    assert_eq!(paged(&f, &segs, 1000).await, before);
    let from_sub = f.read_dir_from(&segs, "sub/", 2).await.unwrap();
    let names: Vec<String> = from_sub.iter().map(|e| e.sort_key()).collect();
    assert_eq!(names, ["sub/", "sub0"]);

    // A file rewritten in place leaves the directory as it was: its stat is read per page.
    std::fs::write(flat.join("f00003"), vec![b'y'; 4000]).unwrap();
    let page = f.read_dir_from(&segs, "f00003", 1).await.unwrap();
    assert_eq!((page[0].name.as_str(), page[0].stat.size), ("f00003", 4000));

    // Added and removed names change the directory: the next page sees them.
    std::fs::remove_file(flat.join("f00000")).unwrap();
    std::fs::write(flat.join("f00000a"), b"new").unwrap();
    let after = paged(&f, &segs, 1000).await;
    assert_eq!(after, whole(&f, &segs).await);
    assert!(!after.iter().any(|(k, _)| k == "f00000"));
    assert!(after.iter().any(|(k, _)| k == "f00000a"));
}
