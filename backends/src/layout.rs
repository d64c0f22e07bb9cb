//! The on-disk contract of a folder, the same for every backend.
//!
//! A folder's objects are plain files and directories at their keys' paths. Next to them, at the
//! folder's top, one hidden directory ([`HIDDEN_DIR`]) holds what the gateway needs and sessions
//! must not see as objects:
//!
//! | path | holds | counted in usage | swept |
//! |---|---|---|---|
//! | `.penstock/tmp/<32 hex>` | staging files being written, and kept files to reuse | no | when stale |
//! | `.penstock/uploads/<upload id>/<part number>` | parts of a multipart upload | yes | with the upload |
//! | `.penstock/markers/<sha-256 of key>` | bodies of directory markers (keys ending in `/`) | yes | with the marker |
//! | `.penstock/versions/<32 hex>` | bytes of noncurrent object versions (versioned buckets) | yes | with the version |
//!
//! No key can address the hidden directory ([`ObjectPath`](crate::ObjectPath) refuses it), listings
//! never show it ([`is_hidden`]), and an empty folder is one that holds nothing else.
//!
//! The walks over a folder that follow this contract (usage, the staging sweep, pruning emptied
//! parents, removing trees and uploads) are written here once, over [`DirOps`], the few
//! directory operations each backend provides.

use std::time::SystemTime;

use async_trait::async_trait;
use futures::future::BoxFuture;
use penstock_types::UploadId;

use crate::volume::EntryKind;
use crate::Result;

/// The hidden directory at the top of every folder.
pub const HIDDEN_DIR: &str = ".penstock";

/// Staging files, below [`HIDDEN_DIR`].
pub const TMP_DIR: [&str; 2] = [HIDDEN_DIR, "tmp"];

/// Multipart uploads, one directory each, below [`HIDDEN_DIR`].
pub const UPLOADS_DIR: [&str; 2] = [HIDDEN_DIR, "uploads"];

/// Bodies of directory markers, one file each named by
/// [`ObjectPath::marker_name`](crate::ObjectPath::marker_name). The marker itself stays a plain
/// directory at its key's path.
pub const MARKERS_DIR: [&str; 2] = [HIDDEN_DIR, "markers"];

/// Bytes of noncurrent versions of objects, one file each under a random name
/// ([`version_name`]); the metadata engine records which key and version each belongs to. The
/// current version of every key stays the plain file at the key's path.
pub const VERSIONS_DIR: [&str; 2] = [HIDDEN_DIR, "versions"];

/// A fresh name for a file in [`VERSIONS_DIR`]: 128 random bits in hex.
pub fn version_name() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// Whether `name` could be a file of [`VERSIONS_DIR`] (what [`version_name`] makes): names
/// from records are checked before they reach the file system.
pub fn is_version_name(name: &str) -> bool {
    name.len() == 32 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The directory of one upload's parts.
pub fn upload_dir(id: &UploadId) -> [&str; 3] {
    [UPLOADS_DIR[0], UPLOADS_DIR[1], id.as_str()]
}

/// The file name of a part.
pub fn part_name(part: u32) -> String {
    part.to_string()
}

/// The process that writes staging files, as they name it; see [`set_instance`].
static INSTANCE: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Names this process in the staging files it creates from now on (`<instance>.<random>`), so
/// that a sweep run by another gateway sharing the volume can tell whose leftovers are whose and
/// never removes a live writer's files. Set once, at start-up, before the first write; false if
/// it was set already. Unset, staging files carry the instance `0`.
pub fn set_instance(id: &str) -> bool {
    assert!(
        !id.is_empty() && id.bytes().all(|b| b.is_ascii_alphanumeric()),
        "an instance id is letters and digits"
    );
    INSTANCE.set(id.to_owned()).is_ok()
}

/// This process's instance id.
pub fn instance() -> &'static str {
    INSTANCE.get().map_or("0", String::as_str)
}

/// A fresh staging file name: this process's instance, then 128 random bits in hex, so
/// concurrent writers never collide and a retried create can never meet another writer's file.
pub fn staging_name() -> String {
    format!("{}.{:032x}", instance(), rand::random::<u128>())
}

/// The instance that created staging file `name`; `None` for names written before staging
/// names carried one.
pub fn staging_instance(name: &str) -> Option<&str> {
    name.split_once('.').map(|(i, _)| i)
}

/// Which staging files a sweep removes. A file of a live instance stays; one of an instance known
/// to be gone goes; any other (an instance the sweeper does not know, perhaps one that started
/// after it looked, or a name without an instance) goes only when last modified before a cutoff
/// that predates every live writer's files: the sweeper's own start.
#[derive(Debug, Clone)]
pub struct SweepRule {
    /// Instances known to be running: their files stay.
    pub alive: std::collections::HashSet<String>,
    /// Instances known to be gone: their files go.
    pub dead: std::collections::HashSet<String>,
    /// Files of other instances, and unnamed ones, modified before this go.
    pub unknown_before: SystemTime,
}

impl SweepRule {
    /// The rule of a gateway alone on its volume: every file not its own is a leftover once
    /// older than `cutoff` (its own start).
    pub fn alone(cutoff: SystemTime) -> Self {
        SweepRule {
            alive: [instance().to_owned()].into(),
            dead: Default::default(),
            unknown_before: cutoff,
        }
    }

    /// Whether the staging file `name`, last modified at `mtime_ns`, is a leftover.
    pub fn removes(&self, name: &str, mtime_ns: i128) -> bool {
        match staging_instance(name) {
            Some(i) if self.alive.contains(i) => false,
            Some(i) if self.dead.contains(i) => true,
            _ => {
                let cutoff_ns = self
                    .unknown_before
                    .duration_since(SystemTime::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos() as i128);
                mtime_ns < cutoff_ns
            }
        }
    }
}

/// `segs` as a relative path; `.` for none.
pub fn rel(segs: &[&str]) -> String {
    if segs.is_empty() {
        ".".to_owned()
    } else {
        segs.join("/")
    }
}

/// Whether the entry `name` of the directory `dir` (segments below the folder's top) is not an
/// object: `.`, `..`, and the hidden directory at the top.
pub fn is_hidden<S: AsRef<str>>(dir: &[S], name: &str) -> bool {
    name == "." || name == ".." || (dir.is_empty() && name == HIDDEN_DIR)
}

/// An entry of a directory as a walk sees it: symlinks are not followed.
#[derive(Debug, Clone)]
pub struct WalkEntry {
    pub name: String,
    /// `None` for anything but a regular file or a directory (symlinks among them).
    pub kind: Option<EntryKind>,
    pub size: u64,
    pub mtime_ns: i128,
}

/// The directory operations the walks need, relative to one folder. Every name is a single
/// entry of a directory already opened inside the folder, so no walk can leave it.
#[async_trait]
pub trait DirOps: Send + Sync {
    /// An open directory.
    type Dir: Send + Sync;

    /// The folder's top directory.
    fn top(&self) -> Self::Dir;

    /// The directory at `segs` below the top, resolved as the backend resolves keys (symlinks
    /// that stay inside are followed); `None` when absent or not a directory.
    async fn open_path(&self, segs: &[&str]) -> Result<Option<Self::Dir>>;

    /// The subdirectory `name` of `dir`, not following a symlink; `None` when absent or not a
    /// directory.
    async fn open_child(&self, dir: &Self::Dir, name: &str) -> Result<Option<Self::Dir>>;

    /// The entries of `dir` other than `.` and `..`, in no order.
    async fn entries(&self, dir: &Self::Dir) -> Result<Vec<WalkEntry>>;

    /// Removes the non-directory `name` of `dir`; `false` when there was none.
    async fn remove_file(&self, dir: &Self::Dir, name: &str) -> Result<bool>;

    /// Removes the empty directory `name` of `dir`; `false` when absent or not empty.
    async fn remove_dir(&self, dir: &Self::Dir, name: &str) -> Result<bool>;
}

/// Bytes a folder holds for its owner: regular files anywhere below the top, not following
/// symlinks, plus parts, marker bodies and noncurrent versions in the hidden area; staging files
/// do not count.
pub async fn usage<D: DirOps>(ops: &D) -> Result<u64> {
    let mut total = 0;
    let mut todo = vec![(ops.top(), true)];
    while let Some((dir, at_top)) = todo.pop() {
        for e in ops.entries(&dir).await? {
            match e.kind {
                Some(EntryKind::File) => total += e.size,
                Some(EntryKind::Dir) if at_top && e.name == HIDDEN_DIR => {
                    let Some(hidden) = ops.open_child(&dir, HIDDEN_DIR).await? else {
                        continue;
                    };
                    for counted in [UPLOADS_DIR[1], MARKERS_DIR[1], VERSIONS_DIR[1]] {
                        if let Some(d) = ops.open_child(&hidden, counted).await? {
                            todo.push((d, false));
                        }
                    }
                }
                Some(EntryKind::Dir) => {
                    if let Some(d) = ops.open_child(&dir, &e.name).await? {
                        todo.push((d, false));
                    }
                }
                None => {}
            }
        }
    }
    Ok(total)
}

/// Removes the staging files `rule` names as leftovers; returns how many.
pub async fn sweep_staging<D: DirOps>(ops: &D, rule: &SweepRule) -> Result<usize> {
    let Some(tmp) = ops.open_path(&TMP_DIR).await? else {
        return Ok(0);
    };
    let mut removed = 0;
    for e in ops.entries(&tmp).await? {
        let stale = e.kind == Some(EntryKind::File) && rule.removes(&e.name, e.mtime_ns);
        if stale && ops.remove_file(&tmp, &e.name).await.unwrap_or(false) {
            removed += 1;
        }
    }
    Ok(removed)
}

/// Removes directories of `parents` that became empty, deepest first, keeping the first
/// `keep_depth` levels (directories that carry a marker record of their own). Stops at the first
/// that stays: a concurrent writer may have put something in it.
pub async fn prune_empty<D: DirOps>(ops: &D, parents: &[String], keep_depth: usize) {
    for depth in (keep_depth + 1..=parents.len()).rev() {
        let (leaf, above) = parents[..depth].split_last().expect("depth >= 1");
        let above: Vec<&str> = above.iter().map(String::as_str).collect();
        let Ok(Some(dir)) = ops.open_path(&above).await else {
            break;
        };
        if !ops.remove_dir(&dir, leaf).await.unwrap_or(false) {
            break;
        }
    }
}

/// Removes `name` in `parent` and, when it is a directory, everything below it, without
/// following symlinks; `false` when there was nothing.
pub fn remove_tree<'a, D: DirOps>(ops: &'a D, parent: &'a D::Dir, name: &'a str) -> BoxFuture<'a, Result<bool>> {
    Box::pin(async move {
        let Some(dir) = ops.open_child(parent, name).await? else {
            return ops.remove_file(parent, name).await;
        };
        for e in ops.entries(&dir).await? {
            if e.kind == Some(EntryKind::Dir) {
                remove_tree(ops, &dir, &e.name).await?;
            } else {
                ops.remove_file(&dir, &e.name).await?;
            }
        }
        ops.remove_dir(parent, name).await
    })
}

/// Removes the stored parts of an upload; nothing there is not an error.
pub async fn remove_upload<D: DirOps>(ops: &D, id: &UploadId) -> Result<()> {
    if let Some(uploads) = ops.open_path(&UPLOADS_DIR).await? {
        remove_tree(ops, &uploads, id.as_str()).await?;
    }
    Ok(())
}

/// Removes a marker's body; returns whether there was one.
pub async fn remove_marker_body<D: DirOps>(ops: &D, name: &str) -> Result<bool> {
    match ops.open_path(&MARKERS_DIR).await? {
        Some(markers) => ops.remove_file(&markers, name).await,
        None => Ok(false),
    }
}

/// Removes a noncurrent version's file; returns whether there was one.
pub async fn remove_version<D: DirOps>(ops: &D, name: &str) -> Result<bool> {
    check_version_name(name)?;
    match ops.open_path(&VERSIONS_DIR).await? {
        Some(versions) => ops.remove_file(&versions, name).await,
        None => Ok(false),
    }
}

/// Refuses a version file name that [`version_name`] could not have made: names come from
/// records, and only such a name is sure to stay one entry of the versions directory.
pub fn check_version_name(name: &str) -> Result<()> {
    if is_version_name(name) {
        Ok(())
    } else {
        Err(crate::BackendError::Io(std::io::Error::other(format!(
            "not a version file name: {name:?}"
        ))))
    }
}

/// Whether the folder holds nothing but its hidden directory.
pub async fn is_empty<D: DirOps>(ops: &D) -> Result<bool> {
    let no_dirs: [&str; 0] = [];
    Ok(ops
        .entries(&ops.top())
        .await?
        .iter()
        .all(|e| is_hidden(&no_dirs, &e.name)))
}

/// Removes the hidden directory and all it holds (the folder is being deleted).
pub async fn remove_hidden<D: DirOps>(ops: &D) -> Result<()> {
    remove_tree(ops, &ops.top(), HIDDEN_DIR).await.map(drop)
}

#[cfg(test)]
mod sweep_rule_tests {
    use super::SweepRule;
    use std::time::{Duration, SystemTime};

    #[test]
    fn leftovers_are_files_of_dead_instances_and_old_unknown_ones() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1000);
        let rule = SweepRule {
            alive: ["a1".to_owned()].into(),
            dead: ["d1".to_owned()].into(),
            unknown_before: t,
        };
        let ns = |s: u64| (s as i128) * 1_000_000_000;
        assert!(!rule.removes("a1.00ff", 0), "a live instance's file, however old");
        assert!(rule.removes("d1.00ff", ns(5000)), "a gone instance's file, however new");
        assert!(rule.removes("x9.00ff", ns(999)), "an unknown instance's old file");
        assert!(!rule.removes("x9.00ff", ns(1000)), "an unknown instance's new file");
        assert!(rule.removes("00ff00ff", ns(999)));
        assert!(!rule.removes("00ff00ff", ns(1000)));
    }
}
