//! A file system that loses power: a FUSE file system, held in memory, that keeps what a disk
//! would have kept (what was fsynced) apart from what only the page cache held, and on
//! [`PowerCutFs::cut`] forgets the latter, as a machine that loses power does.
//!
//! `kill -9` only ends a process: the kernel still writes its page cache out. A power cut also
//! loses every write, rename, link, unlink and mkdir that no fsync made durable, and that is what
//! this simulates, by the strict rules POSIX gives (and that some file systems really keep to):
//!
//! - a file's bytes, size and times are durable once the file is fsynced (or fdatasynced);
//! - a directory's entries (names created, renamed in or out, linked, removed) are durable once
//!   that directory is fsynced; a new file or directory is not reachable after a cut until the
//!   directory holding its name was fsynced, however often the file itself was;
//! - a file whose name is durable but whose bytes never were comes back empty (as delayed
//!   allocation leaves it).
//!
//! The file system runs on a thread of the test process and is mounted with `fusermount3`;
//! [`PowerCutFs::cut`] unmounts it (which also drops the kernel's caches of it), throws away what
//! was not durable, and mounts it again.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use fuser::{
    BackgroundSession, Config, Errno, FileAttr, FileHandle, FileType, FopenFlags, Generation, INodeNo, LockOwner,
    MountOption, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry,
    ReplyOpen, ReplyStatfs, ReplyWrite, Request, TimeOrNow, WriteFlags,
};

/// How long the kernel may cache names and attributes. Only the gateway under test uses the
/// mount, and a cut remounts, so caching cannot show stale state.
const TTL: Duration = Duration::from_secs(1);
const ROOT: u64 = 1;
/// The open flags `create` is given, as the kernel passes them.
const O_EXCL: i32 = rustix::fs::OFlags::EXCL.bits() as i32;
const O_TRUNC: i32 = rustix::fs::OFlags::TRUNC.bits() as i32;

/// What an inode holds, as the page cache sees it or as the disk holds it.
#[derive(Clone)]
struct Body {
    data: Vec<u8>,
    perm: u16,
    uid: u32,
    gid: u32,
    atime: SystemTime,
    mtime: SystemTime,
    ctime: SystemTime,
}

#[derive(Clone)]
enum Content {
    File,
    Dir { entries: BTreeMap<OsString, u64> },
    Symlink,
}

#[derive(Clone)]
struct Inode {
    kind: Content,
    body: Body,
    /// For directories: the directory holding this one (for `..`).
    parent: u64,
    nlink: u32,
}

/// The whole file system: what a reader sees now, and what survives a cut.
struct Model {
    /// Every inode ever made, by number (numbers are never reused).
    live: HashMap<u64, Inode>,
    /// What the disk holds of each inode that was ever made durable: a file's body once it was
    /// fsynced, a directory's entries once it was.
    durable: HashMap<u64, Inode>,
    next_ino: u64,
    /// Open directory handles: a snapshot of the entries taken at `opendir`.
    dir_handles: HashMap<u64, Vec<(u64, FileType, OsString)>>,
    next_fh: u64,
    /// Operations counted for the test's report: fsyncs of files and of directories.
    fsyncs: (u64, u64),
}

fn now() -> SystemTime {
    SystemTime::now()
}

fn new_body(perm: u16, req: &Request) -> Body {
    let t = now();
    Body { data: Vec::new(), perm, uid: req.uid(), gid: req.gid(), atime: t, mtime: t, ctime: t }
}

impl Model {
    fn new() -> Self {
        let t = now();
        let root = Inode {
            kind: Content::Dir { entries: BTreeMap::new() },
            body: Body { data: Vec::new(), perm: 0o755, uid: 0, gid: 0, atime: t, mtime: t, ctime: t },
            parent: ROOT,
            nlink: 2,
        };
        let mut live = HashMap::new();
        live.insert(ROOT, root.clone());
        let mut durable = HashMap::new();
        durable.insert(ROOT, root);
        Self { live, durable, next_ino: ROOT + 1, dir_handles: HashMap::new(), next_fh: 1, fsyncs: (0, 0) }
    }

    fn attr(&self, ino: u64) -> Result<FileAttr, Errno> {
        let node = self.live.get(&ino).ok_or(Errno::ENOENT)?;
        let (kind, size) = match &node.kind {
            Content::File => (FileType::RegularFile, node.body.data.len() as u64),
            Content::Dir { entries } => (FileType::Directory, 4096 + entries.len() as u64),
            Content::Symlink => (FileType::Symlink, node.body.data.len() as u64),
        };
        Ok(FileAttr {
            ino: INodeNo(ino),
            size,
            blocks: size.div_ceil(512),
            atime: node.body.atime,
            mtime: node.body.mtime,
            ctime: node.body.ctime,
            crtime: node.body.ctime,
            kind,
            perm: node.body.perm,
            nlink: node.nlink,
            uid: node.body.uid,
            gid: node.body.gid,
            rdev: 0,
            blksize: 4096,
            flags: 0,
        })
    }

    fn entries_mut(&mut self, dir: u64) -> Result<&mut BTreeMap<OsString, u64>, Errno> {
        match self.live.get_mut(&dir).map(|n| &mut n.kind) {
            Some(Content::Dir { entries }) => Ok(entries),
            Some(_) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    fn child(&self, dir: u64, name: &OsStr) -> Result<u64, Errno> {
        match self.live.get(&dir).map(|n| &n.kind) {
            Some(Content::Dir { entries }) => entries.get(name).copied().ok_or(Errno::ENOENT),
            Some(_) => Err(Errno::ENOTDIR),
            None => Err(Errno::ENOENT),
        }
    }

    fn touch_dir(&mut self, dir: u64) {
        if let Some(n) = self.live.get_mut(&dir) {
            let t = now();
            n.body.mtime = t;
            n.body.ctime = t;
        }
    }

    /// Makes a new inode named `name` in `parent`.
    fn make(&mut self, parent: u64, name: &OsStr, kind: Content, body: Body) -> Result<u64, Errno> {
        if self.child(parent, name).is_ok() {
            return Err(Errno::EEXIST);
        }
        let ino = self.next_ino;
        self.next_ino += 1;
        let is_dir = matches!(kind, Content::Dir { .. });
        self.live.insert(ino, Inode { kind, body, parent, nlink: if is_dir { 2 } else { 1 } });
        self.entries_mut(parent)?.insert(name.to_owned(), ino);
        if is_dir {
            self.live.get_mut(&parent).unwrap().nlink += 1;
        }
        self.touch_dir(parent);
        Ok(ino)
    }

    /// Drops one name of `ino` (the entry itself is already gone).
    fn unlinked(&mut self, ino: u64) {
        if let Some(n) = self.live.get_mut(&ino) {
            n.nlink = n.nlink.saturating_sub(if matches!(n.kind, Content::Dir { .. }) { 2 } else { 1 });
            n.body.ctime = now();
        }
    }

    fn is_empty_dir(&self, ino: u64) -> bool {
        matches!(self.live.get(&ino).map(|n| &n.kind), Some(Content::Dir { entries }) if entries.is_empty())
    }

    fn remove(&mut self, parent: u64, name: &OsStr, want_dir: bool) -> Result<(), Errno> {
        let ino = self.child(parent, name)?;
        let is_dir = matches!(self.live[&ino].kind, Content::Dir { .. });
        match (want_dir, is_dir) {
            (true, false) => return Err(Errno::ENOTDIR),
            (false, true) => return Err(Errno::EISDIR),
            (true, true) if !self.is_empty_dir(ino) => return Err(Errno::ENOTEMPTY),
            _ => {}
        }
        self.entries_mut(parent)?.remove(name);
        if is_dir {
            self.live.get_mut(&parent).unwrap().nlink -= 1;
        }
        self.unlinked(ino);
        self.touch_dir(parent);
        Ok(())
    }

    fn rename(&mut self, from: u64, name: &OsStr, to: u64, newname: &OsStr, flags: RenameFlags) -> Result<(), Errno> {
        let ino = self.child(from, name)?;
        let target = self.child(to, newname).ok();
        if flags.contains(RenameFlags::RENAME_EXCHANGE) {
            let other = target.ok_or(Errno::ENOENT)?;
            self.entries_mut(from)?.insert(name.to_owned(), other);
            self.entries_mut(to)?.insert(newname.to_owned(), ino);
            self.live.get_mut(&ino).unwrap().parent = to;
            self.live.get_mut(&other).unwrap().parent = from;
            self.touch_dir(from);
            self.touch_dir(to);
            return Ok(());
        }
        if target == Some(ino) {
            return Ok(());
        }
        let moving_dir = matches!(self.live[&ino].kind, Content::Dir { .. });
        if moving_dir {
            // A directory cannot move beneath itself.
            let mut up = to;
            loop {
                if up == ino {
                    return Err(Errno::EINVAL);
                }
                if up == ROOT {
                    break;
                }
                up = self.live[&up].parent;
            }
        }
        if let Some(t) = target {
            if flags.contains(RenameFlags::RENAME_NOREPLACE) {
                return Err(Errno::EEXIST);
            }
            let target_dir = matches!(self.live[&t].kind, Content::Dir { .. });
            match (moving_dir, target_dir) {
                (true, false) => return Err(Errno::ENOTDIR),
                (false, true) => return Err(Errno::EISDIR),
                (true, true) if !self.is_empty_dir(t) => return Err(Errno::ENOTEMPTY),
                _ => {}
            }
            if target_dir {
                self.live.get_mut(&to).unwrap().nlink -= 1;
            }
            self.unlinked(t);
        }
        self.entries_mut(from)?.remove(name);
        self.entries_mut(to)?.insert(newname.to_owned(), ino);
        if moving_dir && from != to {
            self.live.get_mut(&from).unwrap().nlink -= 1;
            self.live.get_mut(&to).unwrap().nlink += 1;
        }
        let n = self.live.get_mut(&ino).unwrap();
        n.parent = to;
        n.body.ctime = now();
        self.touch_dir(from);
        self.touch_dir(to);
        Ok(())
    }

    /// fsync: a file's body, or a directory's entries (and times), reach the disk.
    fn sync(&mut self, ino: u64) -> Result<(), Errno> {
        let node = self.live.get(&ino).ok_or(Errno::ENOENT)?.clone();
        match &node.kind {
            Content::Dir { .. } => self.fsyncs.1 += 1,
            _ => self.fsyncs.0 += 1,
        }
        self.durable.insert(ino, node);
        Ok(())
    }

    /// The power goes: only what the disk holds remains, as the next mount finds it.
    fn cut(&mut self) {
        let mut live: HashMap<u64, Inode> = HashMap::new();
        // Walk the durable tree from the root; whatever it does not reach is lost.
        let mut stack = vec![(ROOT, ROOT)];
        let mut links: HashMap<u64, u32> = HashMap::new();
        while let Some((ino, parent)) = stack.pop() {
            *links.entry(ino).or_default() += 1;
            if live.contains_key(&ino) {
                continue;
            }
            let node = match self.durable.get(&ino) {
                Some(n) => {
                    let mut n = n.clone();
                    n.parent = parent;
                    n
                }
                // Named durably, never synced itself: a file comes back empty; a symlink
                // keeps its target (it lives in the inode, written with it); a directory
                // comes back empty.
                None => {
                    let mut n = self.live.get(&ino).expect("every named inode was made").clone();
                    n.parent = parent;
                    match &mut n.kind {
                        Content::File => n.body.data.clear(),
                        Content::Dir { entries } => entries.clear(),
                        Content::Symlink => {}
                    }
                    n
                }
            };
            if let Content::Dir { entries } = &node.kind {
                for child in entries.values() {
                    stack.push((*child, ino));
                }
            }
            live.insert(ino, node);
        }
        let dirs: std::collections::HashSet<u64> =
            live.iter().filter(|(_, n)| matches!(n.kind, Content::Dir { .. })).map(|(i, _)| *i).collect();
        for (ino, n) in live.iter_mut() {
            n.nlink = match &n.kind {
                Content::Dir { entries } => 2 + entries.values().filter(|c| dirs.contains(c)).count() as u32,
                _ => links.get(ino).copied().unwrap_or(1),
            };
        }
        // What the disk holds stays as it is: the inodes that were reached are now the same
        // on disk and in memory.
        self.durable.retain(|ino, _| live.contains_key(ino));
        for (ino, n) in &live {
            self.durable.insert(*ino, n.clone());
        }
        self.live = live;
        self.dir_handles.clear();
    }
}

/// The FUSE face of a [`Model`] shared with the test.
struct Fs(Arc<Mutex<Model>>);

impl Fs {
    fn model(&self) -> MutexGuard<'_, Model> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn set_time(t: TimeOrNow) -> SystemTime {
    match t {
        TimeOrNow::SpecificTime(t) => t,
        TimeOrNow::Now => now(),
    }
}

impl fuser::Filesystem for Fs {
    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let m = self.model();
        match m.child(parent.0, name).and_then(|ino| m.attr(ino)) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        match self.model().attr(ino.0) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        _fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let mut m = self.model();
        let Some(n) = m.live.get_mut(&ino.0) else { return reply.error(Errno::ENOENT) };
        if let Some(mode) = mode {
            n.body.perm = (mode & 0o7777) as u16;
        }
        if let Some(uid) = uid {
            n.body.uid = uid;
        }
        if let Some(gid) = gid {
            n.body.gid = gid;
        }
        if let Some(size) = size {
            if !matches!(n.kind, Content::File) {
                return reply.error(Errno::EISDIR);
            }
            n.body.data.resize(size as usize, 0);
            n.body.mtime = now();
        }
        if let Some(t) = atime {
            n.body.atime = set_time(t);
        }
        if let Some(t) = mtime {
            n.body.mtime = set_time(t);
        }
        n.body.ctime = now();
        match m.attr(ino.0) {
            Ok(a) => reply.attr(&TTL, &a),
            Err(e) => reply.error(e),
        }
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        match self.model().live.get(&ino.0) {
            Some(Inode { kind: Content::Symlink, body, .. }) => reply.data(&body.data),
            Some(_) => reply.error(Errno::EINVAL),
            None => reply.error(Errno::ENOENT),
        }
    }

    fn mkdir(&self, req: &Request, parent: INodeNo, name: &OsStr, mode: u32, umask: u32, reply: ReplyEntry) {
        let mut m = self.model();
        let body = new_body((mode & !umask & 0o7777) as u16, req);
        match m.make(parent.0, name, Content::Dir { entries: BTreeMap::new() }, body).and_then(|i| m.attr(i)) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.model().remove(parent.0, name, false) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        match self.model().remove(parent.0, name, true) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn symlink(&self, req: &Request, parent: INodeNo, link_name: &OsStr, target: &Path, reply: ReplyEntry) {
        let mut m = self.model();
        let mut body = new_body(0o777, req);
        body.data = target.as_os_str().as_encoded_bytes().to_vec();
        match m.make(parent.0, link_name, Content::Symlink, body).and_then(|i| m.attr(i)) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        match self.model().rename(parent.0, name, newparent.0, newname, flags) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn link(&self, _req: &Request, ino: INodeNo, newparent: INodeNo, newname: &OsStr, reply: ReplyEntry) {
        let mut m = self.model();
        let r = (|| {
            if matches!(m.live.get(&ino.0).ok_or(Errno::ENOENT)?.kind, Content::Dir { .. }) {
                return Err(Errno::EPERM);
            }
            if m.child(newparent.0, newname).is_ok() {
                return Err(Errno::EEXIST);
            }
            m.entries_mut(newparent.0)?.insert(newname.to_owned(), ino.0);
            let n = m.live.get_mut(&ino.0).unwrap();
            n.nlink += 1;
            n.body.ctime = now();
            m.touch_dir(newparent.0);
            m.attr(ino.0)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if self.model().live.contains_key(&ino.0) {
            reply.opened(FileHandle(0), FopenFlags::empty());
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let m = self.model();
        let Some(n) = m.live.get(&ino.0) else { return reply.error(Errno::ENOENT) };
        let data = &n.body.data;
        let start = (offset as usize).min(data.len());
        let end = (start + size as usize).min(data.len());
        reply.data(&data[start..end]);
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let mut m = self.model();
        let Some(n) = m.live.get_mut(&ino.0) else { return reply.error(Errno::ENOENT) };
        let off = offset as usize;
        if n.body.data.len() < off + data.len() {
            n.body.data.resize(off + data.len(), 0);
        }
        n.body.data[off..off + data.len()].copy_from_slice(data);
        let t = now();
        n.body.mtime = t;
        n.body.ctime = t;
        reply.written(data.len() as u32);
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        match self.model().sync(ino.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let mut m = self.model();
        let Some(node) = m.live.get(&ino.0) else { return reply.error(Errno::ENOENT) };
        let Content::Dir { entries } = &node.kind else { return reply.error(Errno::ENOTDIR) };
        let mut list =
            vec![(ino.0, FileType::Directory, OsString::from(".")), (node.parent, FileType::Directory, "..".into())];
        for (name, child) in entries {
            let kind = match m.live.get(child).map(|c| &c.kind) {
                Some(Content::Dir { .. }) => FileType::Directory,
                Some(Content::Symlink) => FileType::Symlink,
                _ => FileType::RegularFile,
            };
            list.push((*child, kind, name.clone()));
        }
        let fh = m.next_fh;
        m.next_fh += 1;
        m.dir_handles.insert(fh, list);
        reply.opened(FileHandle(fh), FopenFlags::empty());
    }

    fn readdir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        let m = self.model();
        let Some(list) = m.dir_handles.get(&fh.0) else { return reply.error(Errno::EBADF) };
        for (i, (ino, kind, name)) in list.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), i as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(&self, _req: &Request, _ino: INodeNo, fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        self.model().dir_handles.remove(&fh.0);
        reply.ok();
    }

    fn fsyncdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        match self.model().sync(ino.0) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // 64 GiB, mostly free: the gateway's free-space checks pass.
        reply.statfs(16 << 20, 15 << 20, 15 << 20, 1 << 20, 1 << 20, 4096, 255, 4096);
    }

    fn access(&self, _req: &Request, ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        if self.model().live.contains_key(&ino.0) {
            reply.ok();
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let mut m = self.model();
        let r = match m.child(parent.0, name) {
            Ok(_) if flags & O_EXCL != 0 => Err(Errno::EEXIST),
            Ok(ino) => {
                if flags & O_TRUNC != 0 {
                    if let Some(n) = m.live.get_mut(&ino) {
                        n.body.data.clear();
                    }
                }
                m.attr(ino)
            }
            Err(_) => m
                .make(parent.0, name, Content::File, new_body((mode & !umask & 0o7777) as u16, req))
                .and_then(|i| m.attr(i)),
        };
        match r {
            Ok(a) => reply.created(&TTL, &a, Generation(0), FileHandle(0), FopenFlags::empty()),
            Err(e) => reply.error(e),
        }
    }

    fn fallocate(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        // Only plain allocation, which may grow the file (mode 0), or keep its size
        // (FALLOC_FL_KEEP_SIZE = 1): nothing to hold in memory for the latter.
        let mut m = self.model();
        let Some(n) = m.live.get_mut(&ino.0) else { return reply.error(Errno::ENOENT) };
        match mode {
            0 => {
                let end = (offset + length) as usize;
                if n.body.data.len() < end {
                    n.body.data.resize(end, 0);
                }
                reply.ok();
            }
            1 => reply.ok(),
            _ => reply.error(Errno::EOPNOTSUPP),
        }
    }
}

/// A mounted [`Model`]: a directory whose file system can lose power.
pub struct PowerCutFs {
    model: Arc<Mutex<Model>>,
    mountpoint: PathBuf,
    session: Option<BackgroundSession>,
}

impl PowerCutFs {
    /// Mounts an empty file system at `mountpoint` (an existing, empty directory). Needs
    /// `/dev/fuse` and `fusermount3` (Debian's `fuse3`).
    pub fn mount(mountpoint: &Path) -> Self {
        let mut fs =
            Self { model: Arc::new(Mutex::new(Model::new())), mountpoint: mountpoint.to_owned(), session: None };
        fs.attach();
        fs
    }

    fn attach(&mut self) {
        let mut config = Config::default();
        config.mount_options = vec![MountOption::FSName("powercut".into()), MountOption::DefaultPermissions];
        let session = fuser::spawn_mount(Fs(self.model.clone()), &self.mountpoint, &config).unwrap_or_else(|e| {
            panic!(
                "mounting the power-cut file system at {}: {e} (needs /dev/fuse and fusermount3)",
                self.mountpoint.display()
            )
        });
        self.session = Some(session);
        // The mount is in place once the root reads as this file system's (an empty root, or
        // the tree kept from before a cut).
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !is_mounted(&self.mountpoint) {
            assert!(std::time::Instant::now() < deadline, "the power-cut file system did not mount");
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn detach(&mut self) {
        if let Some(s) = self.session.take() {
            match s.umount_and_join() {
                Ok(()) => {}
                // The session's last read of the device can find the connection the unmount
                // tore down marked aborted rather than gone (ECONNABORTED, not ENODEV, which
                // fuser takes for a clean end); seen once in some dozens of test runs. The file
                // system is unmounted all the same, which the wait below checks.
                Err(e) if e.raw_os_error() == Some(rustix::io::Errno::CONNABORTED.raw_os_error()) => {
                    eprintln!("power-cut file system: the unmount ended its session with ECONNABORTED");
                }
                Err(e) => panic!("unmounting the power-cut file system (is a process still using it?): {e}"),
            }
            let deadline = std::time::Instant::now() + Duration::from_secs(10);
            while is_mounted(&self.mountpoint) {
                assert!(std::time::Instant::now() < deadline, "the power-cut file system stayed mounted");
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Cuts the power: unmounts (every process using the file system must be gone), keeps only
    /// what was durable, and mounts it again.
    pub fn cut(&mut self) {
        self.detach();
        self.model.lock().unwrap_or_else(|e| e.into_inner()).cut();
        self.attach();
    }

    /// How many fsyncs of files and of directories reached the file system so far.
    pub fn fsyncs(&self) -> (u64, u64) {
        self.model.lock().unwrap_or_else(|e| e.into_inner()).fsyncs
    }
}

impl Drop for PowerCutFs {
    fn drop(&mut self) {
        if let Some(s) = self.session.take() {
            let _ = s.umount_and_join();
        }
    }
}

fn is_mounted(path: &Path) -> bool {
    let Ok(mounts) = std::fs::read_to_string("/proc/self/mounts") else { return false };
    let want = path.to_string_lossy();
    mounts.lines().any(|l| {
        let mut f = l.split(' ');
        f.next() == Some("powercut") && f.next() == Some(want.as_ref())
    })
}
