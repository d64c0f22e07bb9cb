//! The DC initiator on libibverbs and mlx5 direct verbs (cargo feature `verbs`), compatible with
//! cuObject clients: the client exposes a DC target (DCT); the gateway posts RDMA WRITE (GET) and
//! READ (PUT) work requests from one DC initiator QP, addressed per request with an address
//! handle built from the token's GID/LID, its DCT number and the shared DC access key.
//!
//! Payload bytes pass through a pool of staging buffers registered once with the NIC. One
//! thread polls the completion queue and wakes the waiting operations.
//!
//! rdma-sys binds libibverbs but not the mlx5 direct-verbs calls DC needs; the few used here are
//! declared below with the layouts of `<infiniband/mlx5dv.h>` (rdma-core 33 and later).
//!
//! This code has been built and its "no device" path exercised in CI (where
//! `ibv_get_device_list` fails with ENOSYS); it has not yet run against a ConnectX NIC.

use std::collections::HashMap;
use std::ffi::CStr;
use std::os::raw::{c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use rdma_sys::*;
use tokio::sync::{oneshot, Semaphore};

use crate::transport::{confine, TransferError, Transport, CHUNK};
use crate::Token;

/// `struct mlx5dv_dc_init_attr`: the union is 8 bytes (`uint64_t dct_access_key`).
#[repr(C)]
struct Mlx5dvDcInitAttr {
    dc_type: c_int,
    dct_access_key: u64,
}

/// `struct mlx5dv_qp_init_attr`.
#[repr(C)]
struct Mlx5dvQpInitAttr {
    comp_mask: u64,
    create_flags: u32,
    dc_init_attr: Mlx5dvDcInitAttr,
    send_ops_flags: u64,
}

/// The head of `struct mlx5dv_qp_ex`: only `wr_set_dc_addr` is used.
#[repr(C)]
struct Mlx5dvQpEx {
    comp_mask: u64,
    wr_set_dc_addr: Option<unsafe extern "C" fn(*mut Mlx5dvQpEx, *mut ibv_ah, u32, u64)>,
}

const MLX5DV_QP_INIT_ATTR_MASK_DC: u64 = 1 << 1;
const MLX5DV_DCTYPE_DCI: c_int = 2;

#[link(name = "mlx5")]
extern "C" {
    fn mlx5dv_create_qp(
        context: *mut ibv_context,
        qp_attr: *mut ibv_qp_init_attr_ex,
        mlx5_qp_attr: *mut Mlx5dvQpInitAttr,
    ) -> *mut ibv_qp;
    fn mlx5dv_qp_ex_from_ibv_qp_ex(qp: *mut ibv_qp_ex) -> *mut Mlx5dvQpEx;
}

/// Options of the DC transport.
#[derive(Debug, Clone)]
pub struct DcOptions {
    /// Device name (`mlx5_0`); the first device when `None`.
    pub device: Option<String>,
    /// Port number.
    pub port: u8,
    /// Source GID index.
    pub gid_index: u8,
    /// DC access key shared with clients.
    pub dc_key: u64,
}

/// Staging buffers registered with the NIC.
const BUFFERS: usize = 16;
/// Work requests the DCI may have outstanding.
const MAX_SEND_WR: u32 = 64;

/// A posted work request awaiting its completion.
struct Pending {
    tx: oneshot::Sender<ibv_wc_status::Type>,
    buf: usize,
    /// The operation was abandoned: the poller returns the buffer once the NIC is done with it.
    orphan: bool,
}

/// A staging buffer reserved by one operation. Once its work request is posted, the buffer
/// belongs to the NIC until the completion arrives, even if the operation is abandoned.
struct BufGuard<'a> {
    dc: &'a Dc,
    buf: usize,
    posted: Option<u64>,
}

impl Drop for BufGuard<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.posted {
            if let Ok(mut p) = self.dc.pending.lock() {
                if let Some(e) = p.get_mut(&id) {
                    e.orphan = true;
                    return;
                }
            }
        }
        self.dc.release(self.buf);
    }
}

struct Dc {
    ctx: *mut ibv_context,
    pd: *mut ibv_pd,
    cq: *mut ibv_cq,
    qp: *mut ibv_qp,
    qpx: *mut ibv_qp_ex,
    mqpx: *mut Mlx5dvQpEx,
    mr: *mut ibv_mr,
    pool: *mut u8,
    port: u8,
    gid_index: u8,
    mtu: ibv_mtu::Type,
    dc_key: u64,
    /// Serializes posting on the single DCI.
    post: Mutex<()>,
    free: Mutex<Vec<usize>>,
    permits: Semaphore,
    pending: Mutex<HashMap<u64, Pending>>,
    next_id: AtomicU64,
    ahs: Mutex<HashMap<([u8; 16], u16), usize>>,
    /// Set when a completion failed: the DCI is in the error state and must be reset.
    broken: AtomicBool,
    stop: AtomicBool,
}

// SAFETY: verbs objects are thread-safe per libibverbs; posting is serialized by `post`, the
// pool's buffers are handed out exclusively through `free`.
unsafe impl Send for Dc {}
// SAFETY: as for Send: shared use posts under `post` and hands buffers out through `free`.
unsafe impl Sync for Dc {}

/// The DC transport.
pub struct DcTransport {
    dc: Arc<Dc>,
    poller: Option<std::thread::JoinHandle<()>>,
}

fn os_err(what: &str) -> TransferError {
    TransferError::Rdma(format!("{what}: {}", std::io::Error::last_os_error()))
}

impl DcTransport {
    /// Opens the device and sets up the DC initiator, or says why it cannot (no device, no
    /// kernel support, not an mlx5 NIC).
    pub fn open(o: &DcOptions) -> Result<Self, TransferError> {
        let (ctx, names) = open_device(o.device.as_deref())?;
        // From here on `dc` owns every object created; its Drop releases them, in reverse
        // order, on every early return below.
        let mut dc = Dc {
            ctx,
            pd: ptr::null_mut(),
            cq: ptr::null_mut(),
            qp: ptr::null_mut(),
            qpx: ptr::null_mut(),
            mqpx: ptr::null_mut(),
            mr: ptr::null_mut(),
            pool: ptr::null_mut(),
            port: o.port,
            gid_index: o.gid_index,
            mtu: ibv_mtu::IBV_MTU_1024,
            dc_key: o.dc_key,
            post: Mutex::new(()),
            free: Mutex::new((0..BUFFERS).collect()),
            permits: Semaphore::new(BUFFERS),
            pending: Mutex::default(),
            next_id: AtomicU64::new(1),
            ahs: Mutex::default(),
            broken: AtomicBool::new(false),
            stop: AtomicBool::new(false),
        };
        // SAFETY: ibv_port_attr is plain C data, for which all-zero bytes are a valid value.
        let mut pa: ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: ctx is an open device context (checked non-null by open_device) and `pa` a
        // live, writable ibv_port_attr for the duration of the call.
        if unsafe { ___ibv_query_port(ctx, o.port, &mut pa) } != 0 {
            return Err(os_err("ibv_query_port"));
        }
        dc.mtu = pa.active_mtu;
        // SAFETY: ctx is an open device context.
        dc.pd = unsafe { ibv_alloc_pd(ctx) };
        if dc.pd.is_null() {
            return Err(os_err("ibv_alloc_pd"));
        }
        // SAFETY: ctx is open; a null channel and context and vector 0 ask for a CQ without
        // completion events, which poll_loop polls.
        dc.cq = unsafe { ibv_create_cq(ctx, (MAX_SEND_WR * 2) as c_int, ptr::null_mut(), ptr::null_mut(), 0) };
        if dc.cq.is_null() {
            return Err(os_err("ibv_create_cq"));
        }
        let layout = std::alloc::Layout::from_size_align(BUFFERS * CHUNK, 4096).expect("layout");
        // SAFETY: the layout has a non-zero size; the pool is freed with the same layout in
        // Dc::drop.
        dc.pool = unsafe { std::alloc::alloc(layout) };
        if dc.pool.is_null() {
            return Err(TransferError::Rdma("cannot allocate the staging pool".into()));
        }
        // SAFETY: pd is valid; the pool is BUFFERS * CHUNK bytes owned by `dc`, deregistered in
        // Dc::drop before it is freed, so the NIC never writes memory that is no longer ours.
        dc.mr = unsafe {
            ibv_reg_mr(
                dc.pd,
                dc.pool as *mut c_void,
                BUFFERS * CHUNK,
                ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0 as c_int,
            )
        };
        if dc.mr.is_null() {
            return Err(os_err("ibv_reg_mr"));
        }
        // SAFETY: ibv_qp_init_attr_ex is plain C data; zero means "unset" for every field the
        // mask below does not name.
        let mut attr: ibv_qp_init_attr_ex = unsafe { std::mem::zeroed() };
        attr.send_cq = dc.cq;
        attr.recv_cq = dc.cq;
        attr.qp_type = ibv_qp_type::IBV_QPT_DRIVER;
        attr.pd = dc.pd;
        attr.comp_mask =
            (ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD | ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS).0;
        attr.send_ops_flags = (ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_WRITE
            | ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_RDMA_READ)
            .0 as u64;
        attr.cap.max_send_wr = MAX_SEND_WR;
        attr.cap.max_send_sge = 1;
        let mut dv = Mlx5dvQpInitAttr {
            comp_mask: MLX5DV_QP_INIT_ATTR_MASK_DC,
            create_flags: 0,
            dc_init_attr: Mlx5dvDcInitAttr {
                dc_type: MLX5DV_DCTYPE_DCI,
                dct_access_key: 0,
            },
            send_ops_flags: 0,
        };
        // SAFETY: ctx is open; attr and dv are initialized, live for the call, and laid out as
        // mlx5dv.h declares them (checked by the mlx5dv_layouts_match_the_header test).
        dc.qp = unsafe { mlx5dv_create_qp(ctx, &mut attr, &mut dv) };
        if dc.qp.is_null() {
            return Err(os_err("mlx5dv_create_qp (DCI; needs an mlx5 NIC)"));
        }
        // SAFETY: qp was created with IBV_QP_INIT_ATTR_SEND_OPS_FLAGS, which is what makes the
        // extended QP valid; the returned pointers live as long as the QP.
        dc.qpx = unsafe { ibv_qp_to_qp_ex(dc.qp) };
        if dc.qpx.is_null() {
            return Err(TransferError::Rdma("the DCI has no extended send API".into()));
        }
        // SAFETY: qpx is the non-null extended QP of an mlx5 DCI.
        dc.mqpx = unsafe { mlx5dv_qp_ex_from_ibv_qp_ex(dc.qpx) };
        // SAFETY: mqpx, when non-null, points at the provider's mlx5dv_qp_ex, alive with the QP.
        if dc.mqpx.is_null() || unsafe { (*dc.mqpx).wr_set_dc_addr.is_none() } {
            return Err(TransferError::Rdma("the DCI has no extended send API".into()));
        }
        // SAFETY: nothing else can reach `dc` yet, so no work request is being posted.
        unsafe { dc.bring_up()? };
        let dc = Arc::new(dc);
        let poll = dc.clone();
        let poller = std::thread::Builder::new()
            .name("penstock-dc-cq".into())
            .spawn(move || poll.poll_loop())
            .map_err(TransferError::Io)?;
        tracing::info!(device = ?names, port = o.port, "DC initiator ready");
        Ok(Self {
            dc,
            poller: Some(poller),
        })
    }
}

/// Opens the RDMA device named `wanted` (the first one when `None`); returns its context,
/// never null, and the names of every device seen.
fn open_device(wanted: Option<&str>) -> Result<(*mut ibv_context, Vec<String>), TransferError> {
    let mut n: c_int = 0;
    // SAFETY: `n` is a live c_int the call writes the device count into.
    let list = unsafe { ibv_get_device_list(&mut n) };
    if list.is_null() {
        return Err(os_err("no RDMA devices (ibv_get_device_list)"));
    }
    let mut chosen: *mut ibv_device = ptr::null_mut();
    let mut names = Vec::new();
    for i in 0..n.max(0) as usize {
        // SAFETY: the list holds `n` device pointers (then a null), valid until it is freed
        // below; ibv_get_device_name returns a NUL-terminated string owned by the device.
        let (d, name) = unsafe {
            let d = *list.add(i);
            (d, CStr::from_ptr(ibv_get_device_name(d)).to_string_lossy().into_owned())
        };
        if chosen.is_null() && wanted.is_none_or(|w| w == name) {
            chosen = d;
        }
        names.push(name);
    }
    let ctx = if chosen.is_null() {
        ptr::null_mut()
    } else {
        // SAFETY: `chosen` comes from the list, which is still alive; an opened context stays
        // valid after the list is freed (libibverbs reference-counts the device).
        unsafe { ibv_open_device(chosen) }
    };
    // SAFETY: `list` came from ibv_get_device_list and is freed once, after its last use.
    unsafe { ibv_free_device_list(list) };
    if chosen.is_null() {
        return Err(TransferError::Rdma(format!(
            "RDMA device {wanted:?} not found (have {names:?})"
        )));
    }
    if ctx.is_null() {
        return Err(os_err("ibv_open_device"));
    }
    Ok((ctx, names))
}

impl Dc {
    /// RESET -> INIT -> RTR -> RTS, as a DC initiator.
    ///
    /// # Safety
    /// `self.qp` is a live DCI, and no work request is being posted while this runs (callers
    /// hold `post`, or nothing else can reach the `Dc` yet): resetting a QP under a concurrent
    /// post corrupts the provider's send queue.
    unsafe fn bring_up(&self) -> Result<(), TransferError> {
        /// Moves the DCI to the state `a` names, with the attributes of `mask`.
        fn modify(
            qp: *mut ibv_qp,
            mut a: ibv_qp_attr,
            mask: ibv_qp_attr_mask,
            what: &str,
        ) -> Result<(), TransferError> {
            // SAFETY: qp is live (the caller's contract) and `a` is an initialized attribute
            // block that outlives the call.
            if unsafe { ibv_modify_qp(qp, &mut a, mask.0 as c_int) } != 0 {
                return Err(os_err(what));
            }
            Ok(())
        }
        /// A zeroed attribute block: plain C data, where zero means "unset".
        fn attrs() -> ibv_qp_attr {
            // SAFETY: ibv_qp_attr is plain C data; all-zero bytes are a valid value.
            unsafe { std::mem::zeroed() }
        }
        let mut a = attrs();
        a.qp_state = ibv_qp_state::IBV_QPS_RESET;
        modify(self.qp, a, ibv_qp_attr_mask::IBV_QP_STATE, "modify DCI to RESET")?;

        let mut a = attrs();
        a.qp_state = ibv_qp_state::IBV_QPS_INIT;
        a.pkey_index = 0;
        a.port_num = self.port;
        let m = ibv_qp_attr_mask::IBV_QP_STATE | ibv_qp_attr_mask::IBV_QP_PKEY_INDEX | ibv_qp_attr_mask::IBV_QP_PORT;
        modify(self.qp, a, m, "modify DCI to INIT")?;

        let mut a = attrs();
        a.qp_state = ibv_qp_state::IBV_QPS_RTR;
        a.path_mtu = self.mtu;
        a.ah_attr.port_num = self.port;
        a.ah_attr.is_global = 1;
        a.ah_attr.grh.sgid_index = self.gid_index;
        a.ah_attr.grh.hop_limit = 64;
        let m = ibv_qp_attr_mask::IBV_QP_STATE | ibv_qp_attr_mask::IBV_QP_PATH_MTU | ibv_qp_attr_mask::IBV_QP_AV;
        modify(self.qp, a, m, "modify DCI to RTR")?;

        let mut a = attrs();
        a.qp_state = ibv_qp_state::IBV_QPS_RTS;
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.sq_psn = 0;
        a.max_rd_atomic = 16;
        let m = ibv_qp_attr_mask::IBV_QP_STATE
            | ibv_qp_attr_mask::IBV_QP_TIMEOUT
            | ibv_qp_attr_mask::IBV_QP_RETRY_CNT
            | ibv_qp_attr_mask::IBV_QP_RNR_RETRY
            | ibv_qp_attr_mask::IBV_QP_SQ_PSN
            | ibv_qp_attr_mask::IBV_QP_MAX_QP_RD_ATOMIC;
        modify(self.qp, a, m, "modify DCI to RTS")
    }

    fn poll_loop(&self) {
        // SAFETY: ibv_wc is plain C data; all-zero bytes are a valid value.
        let mut wcs: Vec<ibv_wc> = (0..16).map(|_| unsafe { std::mem::zeroed() }).collect();
        while !self.stop.load(Ordering::Relaxed) {
            // SAFETY: the CQ outlives this thread (DcTransport joins it before the Dc drops),
            // and `wcs` has room for the number of completions the call may write.
            let n = unsafe { ibv_poll_cq(self.cq, wcs.len() as c_int, wcs.as_mut_ptr()) };
            if n <= 0 {
                std::thread::sleep(std::time::Duration::from_micros(20));
                continue;
            }
            for wc in &wcs[..n as usize] {
                if wc.status != ibv_wc_status::IBV_WC_SUCCESS {
                    self.broken.store(true, Ordering::SeqCst);
                }
                let entry = self.pending.lock().ok().and_then(|mut p| p.remove(&wc.wr_id));
                match entry {
                    Some(e) if e.orphan => self.release(e.buf),
                    // A failed send means the guard is being dropped; it saw no entry and frees.
                    Some(e) => drop(e.tx.send(wc.status)),
                    None => {}
                }
            }
        }
    }

    /// The address handle for a client port, created once per GID/LID.
    fn ah(&self, gid: Option<[u8; 16]>, lid: u16) -> Result<*mut ibv_ah, TransferError> {
        let k = (gid.unwrap_or([0; 16]), lid);
        let mut ahs = self.ahs.lock().map_err(|_| TransferError::Rdma("lock".into()))?;
        if let Some(&a) = ahs.get(&k) {
            return Ok(a as *mut ibv_ah);
        }
        // SAFETY: ibv_ah_attr is plain C data (zero means unset) and fully set for the fields
        // used; pd is valid for the Dc's life; the handle is destroyed once, in Drop.
        let ah = unsafe {
            let mut attr: ibv_ah_attr = std::mem::zeroed();
            attr.dlid = lid;
            attr.port_num = self.port;
            if let Some(g) = gid {
                attr.is_global = 1;
                attr.grh.dgid.raw = g;
                attr.grh.sgid_index = self.gid_index;
                attr.grh.hop_limit = 64;
            }
            ibv_create_ah(self.pd, &mut attr)
        };
        if ah.is_null() {
            return Err(os_err("ibv_create_ah"));
        }
        ahs.insert(k, ah as usize);
        Ok(ah)
    }

    /// Posts one RDMA WRITE or READ between staging buffer `buf` and the remote address, and
    /// waits for its completion.
    async fn run(
        &self,
        token: &Token,
        offset: u64,
        g: &mut BufGuard<'_>,
        len: usize,
        write: bool,
    ) -> Result<(), TransferError> {
        let buf = g.buf;
        let Token::Dc(t) = token else {
            return Err(TransferError::Unsupported("software"));
        };
        let raddr = t.window().addr + offset;
        let ah = self.ah(t.gid, t.lid)?;
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let _g = self.post.lock().map_err(|_| TransferError::Rdma("lock".into()))?;
            if self.broken.swap(false, Ordering::SeqCst) {
                // Resetting discards queued work requests without completions: fail them now.
                self.fail_pending();
                // SAFETY: the DCI is live, and `post` is held, so no work request is being
                // posted while it resets.
                unsafe { self.bring_up()? };
            }
            self.pending
                .lock()
                .map_err(|_| TransferError::Rdma("lock".into()))?
                .insert(id, Pending { tx, buf, orphan: false });
            // SAFETY: `post` is held, so this is the only work request being built on the QP;
            // qpx/mqpx belong to a DCI in RTS and wr_set_dc_addr was checked present at open;
            // `ah` is a live address handle (kept until Drop); buf * CHUNK + len lies inside
            // the registered pool (buf < BUFFERS, len <= CHUNK) and the buffer stays reserved
            // for this operation until its completion arrives (BufGuard).
            let rc = unsafe {
                ibv_wr_start(self.qpx);
                (*self.qpx).wr_id = id;
                (*self.qpx).wr_flags = ibv_send_flags::IBV_SEND_SIGNALED.0;
                if write {
                    ibv_wr_rdma_write(self.qpx, t.rkey, raddr);
                } else {
                    ibv_wr_rdma_read(self.qpx, t.rkey, raddr);
                }
                let set = (*self.mqpx).wr_set_dc_addr.expect("checked at open");
                set(self.mqpx, ah, t.dctn, self.dc_key);
                ibv_wr_set_sge(self.qpx, (*self.mr).lkey, self.pool.add(buf * CHUNK) as u64, len as u32);
                ibv_wr_complete(self.qpx)
            };
            if rc != 0 {
                self.pending.lock().ok().and_then(|mut p| p.remove(&id));
                return Err(TransferError::Rdma(format!("posting the work request failed ({rc})")));
            }
            g.posted = Some(id);
        }
        match rx.await {
            Ok(s) if s == ibv_wc_status::IBV_WC_SUCCESS => Ok(()),
            Ok(s) => Err(TransferError::Rdma(format!("work completion status {s}"))),
            Err(_) => Err(TransferError::Rdma("completion queue closed".into())),
        }
    }

    /// Fails every posted work request (the DCI is about to be reset, so none will complete).
    fn fail_pending(&self) {
        let drained: Vec<Pending> = match self.pending.lock() {
            Ok(mut p) => p.drain().map(|(_, e)| e).collect(),
            Err(_) => return,
        };
        for e in drained {
            if e.orphan {
                self.release(e.buf);
            } else {
                let _ = e.tx.send(ibv_wc_status::IBV_WC_WR_FLUSH_ERR);
            }
        }
    }

    /// Reserves a staging buffer, waiting while all are in use.
    async fn buffer(&self) -> Result<BufGuard<'_>, TransferError> {
        self.permits
            .acquire()
            .await
            .map_err(|_| TransferError::Rdma("transport closed".into()))?
            .forget();
        let buf = self
            .free
            .lock()
            .ok()
            .and_then(|mut f| f.pop())
            .ok_or_else(|| TransferError::Rdma("staging pool accounting broken".into()))?;
        Ok(BufGuard {
            dc: self,
            buf,
            posted: None,
        })
    }

    fn release(&self, buf: usize) {
        if let Ok(mut f) = self.free.lock() {
            f.push(buf);
        }
        self.permits.add_permits(1);
    }
}

impl Drop for Dc {
    fn drop(&mut self) {
        // SAFETY: every pointer is either null (never created) or owned by this Dc alone; each
        // is released once, in reverse order of creation, and the poller that used the CQ has
        // been joined (DcTransport::drop) before the last Arc goes. The MR is deregistered
        // before the pool it covers is freed, with the layout it was allocated with.
        unsafe {
            if let Ok(ahs) = self.ahs.get_mut() {
                for (_, a) in ahs.drain() {
                    ibv_destroy_ah(a as *mut ibv_ah);
                }
            }
            if !self.qp.is_null() {
                ibv_destroy_qp(self.qp);
            }
            if !self.mr.is_null() {
                ibv_dereg_mr(self.mr);
            }
            if !self.pool.is_null() {
                let layout = std::alloc::Layout::from_size_align(BUFFERS * CHUNK, 4096).expect("layout");
                std::alloc::dealloc(self.pool, layout);
            }
            if !self.cq.is_null() {
                ibv_destroy_cq(self.cq);
            }
            if !self.pd.is_null() {
                ibv_dealloc_pd(self.pd);
            }
            if !self.ctx.is_null() {
                ibv_close_device(self.ctx);
            }
        }
    }
}

impl Drop for DcTransport {
    fn drop(&mut self) {
        self.dc.stop.store(true, Ordering::Relaxed);
        if let Some(p) = self.poller.take() {
            let _ = p.join();
        }
    }
}

#[async_trait]
impl Transport for DcTransport {
    fn name(&self) -> &'static str {
        "verbs-dc"
    }

    async fn write(&self, token: &Token, offset: u64, data: Bytes) -> Result<(), TransferError> {
        confine(token, offset, data.len() as u64)?;
        let mut done = 0usize;
        while done < data.len() {
            let n = (data.len() - done).min(CHUNK);
            let piece = &data[done..done + n];
            let at = offset + done as u64;
            let mut g = self.dc.buffer().await?;
            // SAFETY: the buffer is reserved for this operation and n <= CHUNK.
            unsafe { ptr::copy_nonoverlapping(piece.as_ptr(), self.dc.pool.add(g.buf * CHUNK), n) };
            self.dc.run(token, at, &mut g, n, true).await?;
            done += n;
        }
        Ok(())
    }

    async fn read(&self, token: &Token, offset: u64, len: usize) -> Result<Bytes, TransferError> {
        confine(token, offset, len as u64)?;
        let mut out = Vec::with_capacity(len);
        while out.len() < len {
            let n = (len - out.len()).min(CHUNK);
            let at = offset + out.len() as u64;
            let mut g = self.dc.buffer().await?;
            self.dc.run(token, at, &mut g, n, false).await?;
            // SAFETY: the completion arrived, so the NIC wrote these n bytes; the guard keeps
            // the buffer reserved until they are copied.
            out.extend_from_slice(unsafe { std::slice::from_raw_parts(self.dc.pool.add(g.buf * CHUNK), n) });
        }
        Ok(Bytes::from(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mlx5dv_layouts_match_the_header() {
        // Figures printed by a C program compiled against rdma-core 44's mlx5dv.h (x86_64).
        assert_eq!(std::mem::size_of::<Mlx5dvQpInitAttr>(), 40);
        assert_eq!(std::mem::size_of::<Mlx5dvDcInitAttr>(), 16);
        assert_eq!(std::mem::offset_of!(Mlx5dvQpInitAttr, dc_init_attr), 16);
        assert_eq!(std::mem::offset_of!(Mlx5dvQpInitAttr, send_ops_flags), 32);
        assert_eq!(std::mem::offset_of!(Mlx5dvQpEx, wr_set_dc_addr), 8);
    }

    #[test]
    fn without_a_device_open_fails_cleanly() {
        // Hosts without RDMA (CI) must get an error, never a panic; hosts with a NIC get a
        // transport.
        match DcTransport::open(&DcOptions {
            device: None,
            port: 1,
            gid_index: 3,
            dc_key: 0xffee_ddcc,
        }) {
            Ok(t) => assert_eq!(t.name(), "verbs-dc"),
            Err(e) => assert!(!e.to_string().is_empty()),
        }
    }
}
