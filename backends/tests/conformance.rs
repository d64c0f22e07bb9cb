//! Backend conformance: every `Volume` implementation must pass these checks. Each check takes a
//! fresh volume; the POSIX backend runs them here, other backends add a constructor below.

use std::sync::Arc;

use bytes::Bytes;
use penstock_backends::posix::PosixVolume;
use penstock_backends::{BackendError, EntryKind, Folder, FolderLocation, ObjectPath, QuotaScope, Volume};
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
    let mut s = f.create_staging().await?;
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
    assert!(f.remove(&p("x"), 0).await.unwrap());
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
    assert!(f.remove(&p("a/b/c.bin"), 0).await.unwrap());
    assert!(!f.remove(&p("a/b/c.bin"), 0).await.unwrap());
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
    assert!(matches!(f.make_dir(&p("file/")).await, Err(BackendError::IsFile)));
    f.make_dir(&p("m/n/")).await.unwrap();
    assert_eq!(read(&f, "file").await.unwrap(), b"1");
    assert_eq!(names(&f, &[]).await, ["dir/", "file", "m/"]);
    // Pruning stops at kept depth (a directory marker).
    write(&f, "m/n/o", b"5").await.unwrap();
    f.remove(&p("m/n/o"), 2).await.unwrap();
    assert!(f.stat(&p("m/n/")).await.unwrap().is_some());
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
    let mut s = f.create_staging().await.unwrap();
    s.write(Bytes::from_static(b"partial")).await.unwrap();
    assert!(!names(&f, &[]).await.iter().any(|n| n.starts_with(".penstock")));
    drop(s);
    assert!(ObjectPath::parse(".penstock/tmp/x").is_err());
    // Leftovers of a crash are swept; files newer than the cutoff (in-flight writes) stay.
    let mut inflight = f.create_staging().await.unwrap();
    inflight.write(Bytes::from_static(b"x")).await.unwrap();
    inflight.seal(false).await.unwrap();
    assert_eq!(f.sweep_staging(std::time::SystemTime::UNIX_EPOCH).await.unwrap(), 0);
    std::mem::forget(inflight);
    let later = std::time::SystemTime::now() + std::time::Duration::from_secs(1);
    assert_eq!(f.sweep_staging(later).await.unwrap(), 1);
}

async fn multipart_parts(v: Arc<dyn Volume>) {
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let id = Uuid::new_v4().simple().to_string();
    for (n, body) in [
        (1u32, b"hello ".as_slice()),
        (2, b"world".as_slice()),
        (3, b"!!".as_slice()),
    ] {
        let mut s = f.create_staging().await.unwrap();
        s.write(Bytes::copy_from_slice(body)).await.unwrap();
        s.seal(false).await.unwrap();
        s.publish_part(&id, n, false).await.unwrap();
    }
    let mut s = f.compose_parts(&id, &[1, 3]).await.unwrap();
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
    assert!(
        f.remove_upload("../../etc").await.is_err(),
        "upload ids cannot be paths"
    );
}

async fn run_all(make: impl Fn() -> Arc<dyn Volume>) {
    folder_lifecycle(make()).await;
    write_read_stat_remove(make()).await;
    conflicts(make()).await;
    sorted_listing_and_hidden_staging(make()).await;
    multipart_parts(make()).await;
}

#[tokio::test]
async fn posix_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    run_all(|| Arc::new(PosixVolume::open("v", &root).unwrap()) as Arc<dyn Volume>).await;
}

/// POSIX-specific: symlinks that lead out of the folder are never followed.
#[tokio::test]
async fn posix_symlink_containment() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), b"top secret").unwrap();
    let v: Arc<dyn Volume> = Arc::new(PosixVolume::open("v", dir.path()).unwrap());
    let l = loc();
    v.create_folder(&l).await.unwrap();
    let f = v.open_folder(&l).await.unwrap();
    let fdir = dir.path().join(l.relative_path());
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
    assert!(!f.remove(&p("out/secret"), 0).await.unwrap_or(false));
    assert!(outside.path().join("secret").exists());
    assert_eq!(read(&f, "in-link").await.unwrap(), b"r");
    assert_eq!(names(&f, &[]).await, ["in-link", "real"]);
}
