//! The mounts of an NFS volume: connections made again after they are lost, retries of
//! idempotent calls, and the classification of NFS failures.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use nfs_rs::{Mount, NfsError};

use crate::BackendError;

/// NFS file types (identical numbering in v3 `ftype3` and v4 `nfs_ftype4`).
pub(super) const NF_REG: u32 = 1;
pub(super) const NF_DIR: u32 = 2;
pub(super) const NF_LNK: u32 = 5;

/// nfsstat3 / nfsstat4 codes the backend tells apart (shared numbering).
pub(super) mod status {
    pub const PERM: u32 = 1;
    pub const NOENT: u32 = 2;
    pub const ACCES: u32 = 13;
    pub const EXIST: u32 = 17;
    pub const NOTDIR: u32 = 20;
    pub const ISDIR: u32 = 21;
    pub const NOSPC: u32 = 28;
    pub const NAMETOOLONG: u32 = 63;
    pub const NOTEMPTY: u32 = 66;
    pub const DQUOT: u32 = 69;
    pub const STALE: u32 = 70;
}

/// Symlinks followed in one resolution before it is refused (Linux's MAXSYMLINKS).
pub(super) const MAX_LINKS: usize = 40;

/// An NFS failure, classified.
#[derive(Debug)]
pub(super) enum Fault {
    /// The server answered with this status.
    Status(u32, String),
    /// The server could not be reached or is busy; worth retrying later.
    Transient(String),
    /// Anything else (protocol, decoding, local).
    Other(String),
}

impl Fault {
    pub(super) fn classify(e: &NfsError) -> Fault {
        match e {
            NfsError::Nfs3(code) => {
                use nfs_rs::Nfs3ErrorCode as C;
                let c = match code {
                    C::NFS3ERR_PERM => status::PERM,
                    C::NFS3ERR_NOENT => status::NOENT,
                    C::NFS3ERR_ACCES => status::ACCES,
                    C::NFS3ERR_EXIST => status::EXIST,
                    C::NFS3ERR_NOTDIR => status::NOTDIR,
                    C::NFS3ERR_ISDIR => status::ISDIR,
                    C::NFS3ERR_NOSPC => status::NOSPC,
                    C::NFS3ERR_NAMETOOLONG => status::NAMETOOLONG,
                    C::NFS3ERR_NOTEMPTY => status::NOTEMPTY,
                    C::NFS3ERR_DQUOT => status::DQUOT,
                    C::NFS3ERR_STALE | C::NFS3ERR_BADHANDLE => status::STALE,
                    C::NFS3ERR_JUKEBOX => return Fault::Transient(e.to_string()),
                    _ => return Fault::Other(e.to_string()),
                };
                return Fault::Status(c, e.to_string());
            }
            NfsError::Nfs4(code) => {
                let c = *code as u32;
                // NFS4ERR_DELAY, NFS4ERR_GRACE: the server asks to come back later.
                if c == 10008 || c == 10013 {
                    return Fault::Transient(e.to_string());
                }
                return Fault::Status(c, e.to_string());
            }
            _ => {}
        }
        let transport = e.is_connection_lost()
            || e.is_server_busy()
            || e.operation_outcome().is_some()
            || matches!(
                e.transport_error_kind(),
                Some(std::io::ErrorKind::TimedOut | std::io::ErrorKind::NotConnected)
            )
            || matches!(e, NfsError::ClientClosed(_) | NfsError::LostOpenState(_));
        if transport {
            Fault::Transient(e.to_string())
        } else {
            Fault::Other(e.to_string())
        }
    }

    pub(super) fn status(&self) -> Option<u32> {
        match self {
            Fault::Status(s, _) => Some(*s),
            _ => None,
        }
    }

    pub(super) fn is(&self, s: u32) -> bool {
        self.status() == Some(s)
    }
}

impl From<Fault> for BackendError {
    fn from(f: Fault) -> Self {
        match f {
            Fault::Transient(m) => BackendError::Unavailable(format!("NFS: {m}")),
            Fault::Status(s, m) => {
                let errno = match s {
                    status::NOSPC => Some(rustix::io::Errno::NOSPC),
                    status::DQUOT => Some(rustix::io::Errno::DQUOT),
                    status::ACCES => Some(rustix::io::Errno::ACCESS),
                    status::PERM => Some(rustix::io::Errno::PERM),
                    status::NAMETOOLONG => Some(rustix::io::Errno::NAMETOOLONG),
                    status::NOENT => Some(rustix::io::Errno::NOENT),
                    _ => None,
                };
                match errno {
                    Some(e) => BackendError::Io(std::io::Error::from_raw_os_error(e.raw_os_error())),
                    None => BackendError::Io(std::io::Error::other(format!("NFS: {m}"))),
                }
            }
            Fault::Other(m) => BackendError::Io(std::io::Error::other(format!("NFS: {m}"))),
        }
    }
}

pub(super) type FResult<T> = std::result::Result<T, Fault>;

/// One pooled mount: the current connection, made again after it is lost.
pub(super) struct Slot {
    mount: RwLock<Option<Arc<dyn Mount>>>,
    connecting: tokio::sync::Mutex<()>,
}

/// The mounts of one volume and the retry policy around every call.
pub(super) struct Pool {
    pub(super) url: String,
    pub(super) slots: Vec<Slot>,
    pub(super) next: AtomicUsize,
    pub(super) retry_budget: Duration,
    /// When the last mount attempt failed: callers within a short window fail fast instead of each
    /// waiting for its own connect timeout while the server is down.
    pub(super) last_failure: Mutex<Option<(Instant, String)>>,
    /// The smallest READ/WRITE payload limit of any mount made so far (servers publish theirs at
    /// mount time; one restarted with other limits lowers it).
    pub(super) io_cap: AtomicUsize,
}

/// How long a failed mount attempt answers for later callers.
pub(super) const FAIL_FAST: Duration = Duration::from_millis(250);
/// Upper bound for one mount attempt (TCP connect, MOUNT, FSINFO).
pub(super) const MOUNT_TIMEOUT: Duration = Duration::from_secs(5);

impl Pool {
    pub(super) fn new(url: &str, connections: usize, retry_budget: Duration) -> Self {
        Self {
            url: url.to_owned(),
            slots: (0..connections.max(1))
                .map(|_| Slot {
                    mount: RwLock::new(None),
                    connecting: tokio::sync::Mutex::new(()),
                })
                .collect(),
            next: AtomicUsize::new(0),
            retry_budget,
            last_failure: Mutex::new(None),
            io_cap: AtomicUsize::new(usize::MAX),
        }
    }

    pub(super) async fn mount(&self, i: usize) -> FResult<Arc<dyn Mount>> {
        let slot = &self.slots[i];
        if let Some(m) = slot.mount.read().expect("slot lock").clone() {
            return Ok(m);
        }
        let _guard = slot.connecting.lock().await;
        if let Some(m) = slot.mount.read().expect("slot lock").clone() {
            return Ok(m);
        }
        if let Some((at, msg)) = self.last_failure.lock().expect("failure lock").clone() {
            if at.elapsed() < FAIL_FAST {
                return Err(Fault::Transient(msg));
            }
        }
        let made = match tokio::time::timeout(MOUNT_TIMEOUT, nfs_rs::parse_url_and_mount(&self.url)).await {
            Ok(Ok(m)) => Ok(Arc::<dyn Mount>::from(m)),
            Ok(Err(e)) => Err(match Fault::classify(&e) {
                // A refused or unreachable server is transient; a refused export is not.
                Fault::Other(m) if e.kind() != std::io::ErrorKind::Other => Fault::Transient(m),
                f => f,
            }),
            Err(_) => Err(Fault::Transient(format!("mounting {} timed out", self.url))),
        };
        match made {
            Ok(m) => {
                let cap = m.get_max_read_size().min(m.get_max_write_size()) as usize;
                self.io_cap.fetch_min(cap.max(4096), Ordering::Relaxed);
                *slot.mount.write().expect("slot lock") = Some(m.clone());
                *self.last_failure.lock().expect("failure lock") = None;
                tracing::debug!(url = %self.url, slot = i, "NFS mount made");
                Ok(m)
            }
            Err(f) => {
                let msg = match &f {
                    Fault::Transient(m) | Fault::Other(m) | Fault::Status(_, m) => m.clone(),
                };
                *self.last_failure.lock().expect("failure lock") = Some((Instant::now(), msg));
                Err(f)
            }
        }
    }

    /// Forgets `m` if it is still slot `i`'s mount, so the next call connects again.
    pub(super) fn discard(&self, i: usize, m: &Arc<dyn Mount>) {
        let mut cur = self.slots[i].mount.write().expect("slot lock");
        if cur.as_ref().is_some_and(|c| Arc::ptr_eq(c, m)) {
            *cur = None;
            tracing::warn!(url = %self.url, slot = i, "NFS connection lost; reconnecting on next call");
        }
    }

    /// Runs `f` on a pooled mount. Transport failures drop the mount; `idempotent` calls are then
    /// retried on a fresh one until the retry budget is spent.
    pub(super) async fn call<T, F, Fut>(&self, idempotent: bool, f: F) -> FResult<T>
    where
        F: Fn(Arc<dyn Mount>) -> Fut,
        Fut: Future<Output = nfs_rs::Result<T>>,
    {
        let start = Instant::now();
        let mut backoff = Duration::from_millis(50);
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed) % self.slots.len();
            // Whether the request may have reached the server.
            let (fault, sent) = match self.mount(i).await {
                Ok(m) => match f(m.clone()).await {
                    Ok(v) => return Ok(v),
                    Err(e) => {
                        let fault = Fault::classify(&e);
                        if matches!(fault, Fault::Transient(_)) && !e.is_server_busy() {
                            self.discard(i, &m);
                        }
                        (fault, true)
                    }
                },
                Err(f) => (f, false),
            };
            let again = matches!(fault, Fault::Transient(_))
                && (idempotent || !sent)
                && start.elapsed() + backoff < self.retry_budget;
            if !again {
                return Err(fault);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_millis(800));
        }
    }
}
