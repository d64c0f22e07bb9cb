//! Files the gateway did not write: a session's files are objects, symlinks that stay inside
//! the folder are followed and ones that lead out never are, and `stat_many` answers as `stat`.

use super::*;

/// Files that another client puts straight into the folder are objects like any other.
pub(super) async fn foreign_files(v: Arc<dyn Volume>, root: &Path) {
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
pub(super) async fn stat_many_is_stat_of_each(v: Arc<dyn Volume>, root: &Path) {
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
pub(super) async fn symlink_containment(v: Arc<dyn Volume>, root: &Path) {
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
