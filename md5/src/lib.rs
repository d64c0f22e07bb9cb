//! MD5 for ETags, hashed for many uploads at once.
//!
//! [`Chain`] hashes one body on the calling thread; [`Md5Stream`] hands a body's bytes to a
//! shared hashing thread in batches and answers the same digest. Both are checked against the
//! `md-5` crate on random lengths, split points and alignments (`tests/differential.rs`).
//!
//! Unsafe code is confined to `kernel.rs` (the SIMD kernels and their register barriers) and to
//! the one call of a kernel in `simd_round`; each block states the invariant it relies on.
//!
//! MD5 is one serial chain over 64-byte blocks, so one body never hashes faster than one core's
//! latency-bound rate (about 650 MB/s here), and it was two thirds of the gateway's CPU on large
//! PUTs. Independent bodies can share a SIMD register instead: each 32-bit lane of an AVX2
//! register carries another upload's chain, so eight uploads hash in about the time of one.
//! Uploads hand their bytes to a hashing thread in batches ([`Md5Stream`]); the thread packs
//! whichever uploads have bytes waiting into lanes. Small bodies, the tail of a body, and
//! machines without AVX2 hash inline on the caller's thread.

mod kernel;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use tokio::sync::oneshot;

/// Bytes an upload collects before handing them to the hashing thread: large enough that lanes
/// run long between hand-offs (256 KiB measured ~5% slower on 16 MiB PUTs), small enough that an
/// upload holds little (`DEPTH + 1` batches at most).
const BATCH: usize = 512 << 10;

/// Batches one upload may have with the hashing threads. More than one lets the next batch wait
/// in the queue while a lane absorbs the current one, so the lane moves straight on to it instead
/// of idling until the upload's task has been woken and has handed it over.
const DEPTH: usize = 2;

/// Most blocks one kernel call absorbs per lane before the thread looks for new work.
const MAX_RUN: usize = 1024;

/// How long a hashing thread holds back, after a lane frees, for batches of uploads that are
/// running but have none queued. Lanes are only cheap when they are full: eight uploads arriving
/// one after the other, each hashed alone, would cost as much as hashing them inline. An upload
/// collects its next batch meanwhile (milliseconds at any rate a core sustains), so the wait
/// delays no upload that has anything to send.
const GATHER_WAIT: Duration = Duration::from_micros(500);

/// The state of one MD5 computation: chaining value, bytes absorbed, and the partial block.
pub struct Chain {
    h: [u32; 4],
    len: u64,
    tail: [u8; 64],
    tail_len: usize,
}

impl Default for Chain {
    fn default() -> Self {
        Self {
            h: kernel::INIT,
            len: 0,
            tail: [0; 64],
            tail_len: 0,
        }
    }
}

impl Chain {
    /// Absorbs `data` on the calling thread.
    pub fn update(&mut self, mut data: &[u8]) {
        self.len += data.len() as u64;
        if self.tail_len > 0 {
            let n = (64 - self.tail_len).min(data.len());
            self.tail[self.tail_len..self.tail_len + n].copy_from_slice(&data[..n]);
            self.tail_len += n;
            data = &data[n..];
            if self.tail_len < 64 {
                return;
            }
            let block = self.tail;
            kernel::compress(&mut self.h, &block);
            self.tail_len = 0;
        }
        let whole = data.len() / 64 * 64;
        kernel::compress(&mut self.h, &data[..whole]);
        let rest = &data[whole..];
        self.tail[..rest.len()].copy_from_slice(rest);
        self.tail_len = rest.len();
    }

    /// Pads and returns the digest.
    pub fn finish(mut self) -> [u8; 16] {
        let bits = self.len.wrapping_mul(8);
        let mut pad = [0u8; 128];
        pad[..self.tail_len].copy_from_slice(&self.tail[..self.tail_len]);
        pad[self.tail_len] = 0x80;
        let total = if self.tail_len < 56 { 64 } else { 128 };
        pad[total - 8..total].copy_from_slice(&bits.to_le_bytes());
        kernel::compress(&mut self.h, &pad[..total]);
        let mut out = [0u8; 16];
        for (o, w) in out.chunks_exact_mut(4).zip(self.h) {
            o.copy_from_slice(&w.to_le_bytes());
        }
        out
    }
}

/// MD5 of one body fed in order, hashed by the shared hashing thread where that pays off.
pub struct Md5Stream {
    pool: Option<&'static Shared>,
    id: u64,
    /// `None` while the chain is with the hashing threads.
    chain: Option<Box<Chain>>,
    /// Batches handed over, oldest first. Each answers with the chain if it was the last one
    /// queued when it finished; otherwise its sender is dropped, the chain having moved on to the
    /// next batch.
    outstanding: VecDeque<oneshot::Receiver<Box<Chain>>>,
    pending: Vec<Bytes>,
    pending_len: usize,
    /// Counted in the pool's running uploads (from the first batch on).
    counted: bool,
}

impl Drop for Md5Stream {
    fn drop(&mut self) {
        if let (true, Some(pool)) = (self.counted, self.pool) {
            pool.live.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Default for Md5Stream {
    fn default() -> Self {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        Self {
            pool: pool(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            chain: Some(Box::default()),
            outstanding: VecDeque::new(),
            pending: Vec::new(),
            pending_len: 0,
            counted: false,
        }
    }
}

impl Md5Stream {
    /// Appends `data`. Waits only when [`DEPTH`] batches are still being hashed, which bounds
    /// what one upload holds to `DEPTH + 1` batches.
    pub async fn update(&mut self, data: Bytes) {
        if data.is_empty() {
            return;
        }
        let Some(pool) = self.pool else {
            self.chain.as_mut().expect("chain is home without a pool").update(&data);
            return;
        };
        self.pending_len += data.len();
        self.pending.push(data);
        if self.pending_len < BATCH {
            return;
        }
        while self.outstanding.len() >= DEPTH {
            let rx = self.outstanding.pop_front().expect("non-empty");
            if let Ok(chain) = rx.await {
                self.chain = Some(chain);
            }
        }
        if !self.counted {
            self.counted = true;
            pool.live.fetch_add(1, Ordering::Relaxed);
        }
        let (done, rx) = oneshot::channel();
        let data = std::mem::take(&mut self.pending);
        self.pending_len = 0;
        let mut queue = pool.queue.lock().expect("md5 queue");
        // Under the queue's lock, where hashing threads decide whether a finished batch's chain
        // goes home or on to the next batch: either it is home by now, or this batch will get it.
        self.collect_home();
        queue.push_back(Job {
            stream: self.id,
            chain: self.chain.take(),
            data,
            done,
        });
        drop(queue);
        pool.ready.notify_one();
        self.outstanding.push_back(rx);
    }

    /// Takes back the chain if a finished batch sent it home; drops receivers of batches that
    /// passed it on.
    fn collect_home(&mut self) {
        while let Some(rx) = self.outstanding.front_mut() {
            match rx.try_recv() {
                Ok(chain) => self.chain = Some(chain),
                Err(oneshot::error::TryRecvError::Closed) => {}
                Err(oneshot::error::TryRecvError::Empty) => return,
            }
            self.outstanding.pop_front();
        }
    }

    /// The digest of everything appended. The last partial batch hashes inline: it is smaller
    /// than a hand-off is worth.
    pub async fn finish(mut self) -> [u8; 16] {
        while let Some(rx) = self.outstanding.pop_front() {
            if let Ok(chain) = rx.await {
                self.chain = Some(chain);
            }
        }
        let mut chain = self.chain.take().expect("the last batch sends the chain home");
        for b in &self.pending {
            chain.update(b);
        }
        chain.finish()
    }
}

/// A batch: the bytes to absorb, in order, and the chain to continue (`None` while an earlier
/// batch of the same upload still has it).
struct Job {
    stream: u64,
    chain: Option<Box<Chain>>,
    data: Vec<Bytes>,
    done: oneshot::Sender<Box<Chain>>,
}

struct Shared {
    queue: Mutex<VecDeque<Job>>,
    ready: Condvar,
    /// Uploads that have handed over a batch and are not finished.
    live: AtomicUsize,
    kernel: Kernel,
}

/// A multi-lane compression function: chaining values, one block pointer per lane, block count.
type Kernel = unsafe fn(&mut [[u32; 4]; LANES], &[*const u8; LANES], usize);

/// The hashing threads, started on first use; `None` without AVX2 (everything hashes inline).
fn pool() -> Option<&'static Shared> {
    static POOL: OnceLock<Option<&'static Shared>> = OnceLock::new();
    *POOL.get_or_init(|| {
        let kernel = simd_kernel()?;
        let shared: &'static Shared = Box::leak(Box::new(Shared {
            queue: Mutex::new(VecDeque::new()),
            ready: Condvar::new(),
            live: AtomicUsize::new(0),
            kernel,
        }));
        // One thread hashes several GB/s; beyond four cores, add one per four so the hashing
        // threads never become the limit where scalar hashing per core would not have been.
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        for i in 0..cores.div_ceil(4) {
            let spawned = std::thread::Builder::new()
                .name(format!("md5-{i}"))
                .spawn(move || work(shared));
            if spawned.is_err() && i == 0 {
                return None;
            }
        }
        Some(shared)
    })
}

/// The best multi-lane kernel this CPU runs, if any.
fn simd_kernel() -> Option<Kernel> {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        if has!("avx2") && has!("avx512f") && has!("avx512vl") {
            return Some(kernel::avx2::compress_vl);
        }
        if has!("avx2") {
            return Some(kernel::avx2::compress);
        }
    }
    None
}

#[cfg(target_arch = "x86_64")]
use kernel::avx2::LANES;
#[cfg(not(target_arch = "x86_64"))]
const LANES: usize = 1;

/// What idle lanes read: zeros, as many as one kernel call takes. Their results are dropped.
static IDLE: [u8; 64 * MAX_RUN] = [0; 64 * MAX_RUN];

/// A job being absorbed by one lane.
struct Lane {
    chain: Box<Chain>,
    job: Job,
    /// Position in `job.data`: chunk index and offset.
    idx: usize,
    off: usize,
    /// The last run handed out was the chain's own buffered block, not bytes of `job.data`.
    tail_run: bool,
}

impl Lane {
    fn new(mut job: Job) -> Self {
        let mut chain = job.chain.take().expect("only jobs with their chain enter a lane");
        chain.len += job.data.iter().map(|b| b.len() as u64).sum::<u64>();
        Self {
            chain,
            job,
            idx: 0,
            off: 0,
            tail_run: false,
        }
    }

    /// The next whole blocks of this lane, contiguous in memory: pointer and block count. Bytes
    /// that straddle chunks go through the chain's block buffer. `None` when only a partial
    /// block is left (it stays buffered in the chain).
    fn next_run(&mut self) -> Option<(*const u8, usize)> {
        let chain = &mut self.chain;
        loop {
            if chain.tail_len == 64 {
                self.tail_run = true;
                return Some((chain.tail.as_ptr(), 1));
            }
            let chunk = &self.job.data.get(self.idx)?[self.off..];
            if chunk.is_empty() {
                self.idx += 1;
                self.off = 0;
                continue;
            }
            if chain.tail_len > 0 || chunk.len() < 64 {
                let n = (64 - chain.tail_len).min(chunk.len());
                chain.tail[chain.tail_len..chain.tail_len + n].copy_from_slice(&chunk[..n]);
                chain.tail_len += n;
                self.off += n;
                continue;
            }
            self.tail_run = false;
            return Some((chunk.as_ptr(), chunk.len() / 64));
        }
    }

    /// Moves past `blocks` blocks of the run last handed out.
    fn advance(&mut self, blocks: usize) {
        if self.tail_run {
            self.chain.tail_len = 0;
            self.tail_run = false;
        } else {
            self.off += blocks * 64;
        }
    }

    /// Passes the chain on to the upload's next batch if it is queued, else sends it home.
    /// Called with the queue locked (see [`Md5Stream::update`]).
    fn complete(self, queue: &mut VecDeque<Job>) {
        match queue.iter_mut().find(|j| j.stream == self.job.stream) {
            // Drops the finished batch's sender: its receiver learns the chain moved on.
            Some(next) => {
                next.chain = Some(self.chain);
                #[cfg(test)]
                tests::FORWARDED.fetch_add(1, Ordering::Relaxed);
            }
            // A dropped receiver means the upload was abandoned; its chain goes with it.
            None => drop(self.job.done.send(self.chain)),
        }
    }
}

/// A hashing thread: keeps up to [`LANES`] jobs in lanes and absorbs them side by side.
fn work(shared: &'static Shared) {
    let mut lanes: Vec<Option<Lane>> = (0..LANES).map(|_| None).collect();
    // Set when a lane frees (or the thread was idle): the next fill may wait for stragglers.
    let mut may_gather = true;
    loop {
        {
            let mut queue = shared.queue.lock().expect("md5 queue");
            let mut deadline = None;
            loop {
                for slot in lanes.iter_mut().filter(|s| s.is_none()) {
                    match queue.iter().position(|j| j.chain.is_some()) {
                        Some(at) => *slot = Some(Lane::new(queue.remove(at).expect("found"))),
                        None => break,
                    }
                }
                let occupied = lanes.iter().filter(|l| l.is_some()).count();
                if occupied == 0 {
                    queue = shared.ready.wait(queue).expect("md5 queue");
                    may_gather = true;
                    continue;
                }
                if !may_gather || occupied >= shared.live.load(Ordering::Relaxed).min(LANES) {
                    break;
                }
                let now = Instant::now();
                let until = *deadline.get_or_insert(now + GATHER_WAIT);
                if now >= until {
                    break;
                }
                queue = shared.ready.wait_timeout(queue, until - now).expect("md5 queue").0;
            }
            may_gather = false;
        }
        let mut ptrs = [IDLE.as_ptr(); LANES];
        let mut run = MAX_RUN;
        // Indices of lanes with a run this round (no allocation on this per-run path).
        let (mut active, mut n_active) = ([0usize; LANES], 0);
        for (i, slot) in lanes.iter_mut().enumerate() {
            let Some(lane) = slot else { continue };
            match lane.next_run() {
                Some((p, n)) => {
                    ptrs[i] = p;
                    run = run.min(n);
                    active[n_active] = i;
                    n_active += 1;
                }
                None => {
                    let lane = slot.take().expect("lane is occupied");
                    lane.complete(&mut shared.queue.lock().expect("md5 queue"));
                    // The batch it passed its chain to may suit another thread's free lane.
                    shared.ready.notify_one();
                    may_gather = true;
                }
            }
        }
        let active = &active[..n_active];
        match active {
            [] => {}
            // Alone, a lane hashes faster on the scalar path.
            &[i] => {
                let lane = lanes[i].as_mut().expect("active lane");
                // SAFETY: `next_run` handed out `run` or more whole blocks behind the pointer,
                // inside a chunk or chain the lane owns.
                let blocks = unsafe { std::slice::from_raw_parts(ptrs[i], run * 64) };
                kernel::compress(&mut lane.chain.h, blocks);
                lane.advance(run);
            }
            _ => {
                simd_round(shared.kernel, &mut lanes, active, &ptrs, run);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
fn simd_round(kernel: Kernel, lanes: &mut [Option<Lane>], active: &[usize], ptrs: &[*const u8; LANES], run: usize) {
    let mut state = [[0u32; 4]; LANES];
    for &i in active {
        state[i] = lanes[i].as_ref().expect("active lane").chain.h;
    }
    // SAFETY: `kernel` came from `simd_kernel`, which checked its CPU features; active lanes
    // point at `run` or more whole blocks they own, idle lanes at `IDLE` (`MAX_RUN >= run`).
    unsafe { kernel(&mut state, ptrs, run) };
    #[cfg(test)]
    tests::SHARED_BLOCKS.fetch_add((run * active.len()) as u64, std::sync::atomic::Ordering::Relaxed);
    for &i in active {
        let lane = lanes[i].as_mut().expect("active lane");
        lane.chain.h = state[i];
        lane.advance(run);
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn simd_round(_: Kernel, _: &mut [Option<Lane>], _: &[usize], _: &[*const u8; LANES], _: usize) {
    unreachable!("no hashing thread runs without SIMD lanes")
}

#[cfg(test)]
mod tests {
    use super::*;
    use md5::Digest as _;
    use std::sync::atomic::{AtomicU64, Ordering};

    /// Blocks absorbed in shared (multi-lane) kernel calls.
    pub(super) static SHARED_BLOCKS: AtomicU64 = AtomicU64::new(0);
    /// Chains passed straight from a finished batch to the upload's next, queued one.
    pub(super) static FORWARDED: AtomicU64 = AtomicU64::new(0);

    fn reference(data: &[u8]) -> [u8; 16] {
        md5::Md5::digest(data).into()
    }

    /// Seeded random bytes.
    fn data(len: usize, seed: u64) -> Vec<u8> {
        use rand::{RngCore as _, SeedableRng as _};
        let mut v = vec![0; len];
        rand::rngs::StdRng::seed_from_u64(seed).fill_bytes(&mut v);
        v
    }

    #[test]
    fn inline_chain_matches_reference_at_every_boundary() {
        for len in (0..200).chain([1000, 4095, 4096, 65537]) {
            let d = data(len, len as u64);
            let mut c = Chain::default();
            // Split at an awkward place so the block buffer is exercised.
            let cut = len / 3;
            c.update(&d[..cut]);
            c.update(&d[cut..]);
            assert_eq!(c.finish(), reference(&d), "len {len}");
        }
        assert_eq!(
            hex::encode(Chain::default().finish()),
            "d41d8cd98f00b204e9800998ecf8427e"
        );
    }

    /// Streams of odd chunk sizes, many at once so the hashing thread packs them into shared
    /// lanes, joining and leaving mid-way.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_streams_match_reference() {
        assert_eq!(pool().is_some(), simd_kernel().is_some());
        let mut tasks = Vec::new();
        for s in 0..24u64 {
            tasks.push(tokio::spawn(async move {
                let len = [0, 1, 63, 64, 65, BATCH - 1, BATCH, BATCH + 1, 3 * BATCH + 17, 5 << 20][s as usize % 10]
                    + s as usize * 131;
                let d = data(len, s);
                let mut h = Md5Stream::default();
                let mut off = 0;
                let mut step = 1 + (s as usize * 7919) % 70_000;
                while off < len {
                    let n = step.min(len - off);
                    h.update(Bytes::copy_from_slice(&d[off..off + n])).await;
                    off += n;
                    step = 1 + (step * 31 + 17) % 90_000;
                }
                assert_eq!(h.finish().await, reference(&d), "stream {s}, {len} bytes");
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        if simd_kernel().is_some() {
            assert!(
                SHARED_BLOCKS.load(Ordering::Relaxed) > 0,
                "no two streams ever shared the kernel"
            );
            assert!(
                FORWARDED.load(Ordering::Relaxed) > 0,
                "no chain was ever passed on to a queued batch"
            );
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn eight_lane_kernels_match_scalar() {
        use std::arch::is_x86_feature_detected as has;
        let bufs: Vec<Vec<u8>> = (0..LANES as u64).map(|l| data(64 * 5, l)).collect();
        let ptrs: [*const u8; LANES] = std::array::from_fn(|l| bufs[l].as_ptr());
        let state: [[u32; 4]; LANES] = std::array::from_fn(|l| [l as u32, 1, 2, 3]);
        let mut expect = state;
        for (l, e) in expect.iter_mut().enumerate() {
            kernel::compress(e, &bufs[l]);
        }
        let mut kernels: Vec<Kernel> = Vec::new();
        if has!("avx2") {
            kernels.push(kernel::avx2::compress);
        }
        if has!("avx2") && has!("avx512f") && has!("avx512vl") {
            kernels.push(kernel::avx2::compress_vl);
        }
        eprintln!("{} multi-lane kernel(s) run on this CPU", kernels.len());
        for k in kernels {
            let mut s = state;
            // SAFETY: features checked above; each buffer holds 5 blocks.
            unsafe { k(&mut s, &ptrs, 5) };
            assert_eq!(s, expect);
        }
    }
}
