//! Where S3 connections run: on the main runtime's shared work-stealing scheduler (the default),
//! or, with `[connections] threads = N`, on N threads that each run their own single-threaded
//! tokio scheduler, a connection staying on the thread it was handed to for its whole life.
//!
//! Why the choice: a small request is a few tens of microseconds
//! of work between a socket read and a socket write, and with work-stealing workers the
//! connection's task is woken on one thread, queued, stolen or run on another; each hop is a
//! cross-thread wake-up (a futex, an idle worker leaving `epoll_wait`). Measured on 4 KiB GETs
//! (2 cores, 16 in flight, `docs/benchmarks.md`): 30.5 µs of gateway CPU per request with two
//! shared workers, 26.4 µs with one. A scheduler per thread keeps the single worker's cost with
//! every core in use, the model nginx's worker processes follow: 4 KiB GETs went from 24.5k to
//! 26.3k ops/s with two threads. It is not the default because nothing moves work between the
//! threads: when one is descheduled or held up (the load generator shares the cores, a RocksDB
//! write waits for its group's WAL sync), its connections wait, and 4 KiB PUTs' p99 rose from
//! 7.5 to 11 ms in the same runs. Read-heavy deployments of small objects can opt in.
//!
//! Either way blocking work (fsync, RocksDB writes that wait for the WAL) goes to a blocking pool,
//! and background tasks (janitor, lifecycle, admin API) run on the main runtime.

use std::future::Future;
use std::sync::atomic::{AtomicUsize, Ordering};

use tokio::runtime::Handle;

/// The connection threads, if any; [`ConnThreads::spawn`] deals connections out in turn.
pub struct ConnThreads {
    handles: Vec<Handle>,
    next: AtomicUsize,
}

impl ConnThreads {
    /// Starts `n` threads, which run until the process exits; `0` starts none, and connections
    /// run on the calling runtime.
    pub fn start(n: usize) -> std::io::Result<Self> {
        let mut handles = Vec::with_capacity(n);
        for i in 0..n {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            handles.push(rt.handle().clone());
            std::thread::Builder::new()
                .name(format!("penstock-conn-{i}"))
                .spawn(move || rt.block_on(std::future::pending::<()>()))?;
        }
        Ok(Self {
            handles,
            next: AtomicUsize::new(0),
        })
    }

    /// How many threads serve connections (`0`: the shared scheduler does).
    pub fn len(&self) -> usize {
        self.handles.len()
    }

    /// True when connections run on the shared scheduler.
    pub fn is_empty(&self) -> bool {
        self.handles.is_empty()
    }

    /// Runs `task` (one connection) on the next thread in turn, or on the calling runtime.
    pub fn spawn<F>(&self, task: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        if self.handles.is_empty() {
            tokio::spawn(task);
            return;
        }
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.handles.len();
        self.handles[i].spawn(task);
    }
}
