//! The software transport: the token protocol's one-sided semantics carried over TCP, for hosts
//! without RDMA NICs (and for CI).
//!
//! The roles match RDMA's. The client is the *target*: it registers memory with a
//! [`SoftwareTarget`], which listens on a TCP port, and mints tokens for windows of that memory.
//! The gateway is the *initiator*: it connects to the endpoint named in the token and writes
//! (GET) or reads (PUT) bytes at offsets inside the window, like RDMA WRITE and READ.
//!
//! # Token form
//!
//! `swt1:<ip>:<port>:<region>:<key>:<offset>:<len>` with `<ip>` an IPv4 literal or a bracketed
//! IPv6 literal, `<region>` 16 hex digits, `<key>` 32 hex digits, `<offset>` and `<len>` 16 hex
//! digits each (lowercase). The window is `[offset, offset + len)` of the registered region.
//!
//! # Safety of the target
//!
//! Every registration gets a random 64-bit id and a random 128-bit key; an operation must name
//! both (the key is compared in constant time), and its range must lie inside the registered
//! region, or the target refuses it and closes the connection. The initiator additionally
//! confines itself to the token's window.
//!
//! # Wire format
//!
//! Request: 48 bytes: `PSW1`, op (1 = write into the target, 2 = read from it), 3 zero bytes,
//! region (u64 LE), key (16 bytes), offset (u64 LE), length (u64 LE); a write is followed by its
//! bytes. Response: 8 bytes, the first being the status (0 = done); a successful read is
//! followed by its bytes. Connections carry any number of operations one after another.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use async_trait::async_trait;
use bytes::{Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt, Interest};
use tokio::net::{TcpListener, TcpStream};

use crate::token::{TokenError, Window};
use crate::transport::{TransferError, Transport};
use crate::Token;

/// Prefix of software transport tokens.
pub const PREFIX: &str = "swt1:";
/// Largest single operation; transfers are split into chunks well below it.
pub const MAX_OP: u64 = 1 << 30;

const MAGIC: &[u8; 4] = b"PSW1";
const OP_WRITE: u8 = 1;
const OP_READ: u8 = 2;
const HEADER: usize = 48;

/// Response status codes.
const ST_OK: u8 = 0;
const ST_UNKNOWN: u8 = 1;
const ST_BOUNDS: u8 = 2;
const ST_BAD: u8 = 3;

fn status_text(s: u8) -> &'static str {
    match s {
        ST_UNKNOWN => "unknown registration or wrong key",
        ST_BOUNDS => "range outside the registered region",
        ST_BAD => "malformed request",
        _ => "unknown status",
    }
}

/// A parsed software transport token.
#[derive(Clone, PartialEq, Eq)]
pub struct SwToken {
    /// Where the client's target listens.
    pub endpoint: SocketAddr,
    /// Registration id.
    pub region: u64,
    /// Registration key.
    pub key: [u8; 16],
    /// Start of the window inside the registration.
    pub offset: u64,
    /// Window length.
    pub len: u64,
}

impl fmt::Debug for SwToken {
    // The key is a credential: keep it out of logs.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SwToken")
            .field("endpoint", &self.endpoint)
            .field("region", &format_args!("{:016x}", self.region))
            .field("offset", &self.offset)
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}

fn hex_u64(s: &str, field: &'static str) -> Result<u64, TokenError> {
    if s.len() != 16 {
        return Err(TokenError::FieldWidth {
            field,
            width: 16,
            found: s.len(),
        });
    }
    if !s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(TokenError::NotHex { field });
    }
    Ok(u64::from_str_radix(s, 16).expect("validated hex"))
}

impl SwToken {
    /// Parses a token that starts with [`PREFIX`].
    pub fn parse(s: &str) -> Result<Self, TokenError> {
        let body = s
            .trim()
            .strip_prefix(PREFIX)
            .ok_or(TokenError::Software("missing swt1: prefix"))?;
        let mut it = body.rsplitn(6, ':');
        let (Some(len), Some(offset), Some(key), Some(region), Some(port), Some(host)) =
            (it.next(), it.next(), it.next(), it.next(), it.next(), it.next())
        else {
            return Err(TokenError::Software(
                "expected swt1:<ip>:<port>:<region>:<key>:<offset>:<len>",
            ));
        };
        let ip: IpAddr = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
            Some(v6) => v6.parse().map_err(|_| TokenError::Software("bad IPv6 address"))?,
            None => host
                .parse::<std::net::Ipv4Addr>()
                .map_err(|_| TokenError::Software("host must be an IPv4 or bracketed IPv6 literal"))?
                .into(),
        };
        if port.is_empty() || port.len() > 5 || !port.bytes().all(|b| b.is_ascii_digit()) {
            return Err(TokenError::Software("bad port"));
        }
        let port: u16 = port.parse().map_err(|_| TokenError::Software("bad port"))?;
        if port == 0 {
            return Err(TokenError::Software("bad port"));
        }
        let region = hex_u64(region, "region")?;
        if key.len() != 32 {
            return Err(TokenError::FieldWidth {
                field: "key",
                width: 32,
                found: key.len(),
            });
        }
        if !key.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
            return Err(TokenError::NotHex { field: "key" });
        }
        let mut k = [0u8; 16];
        for (i, b) in k.iter_mut().enumerate() {
            *b = u8::from_str_radix(&key[2 * i..2 * i + 2], 16).expect("validated hex");
        }
        let offset = hex_u64(offset, "offset")?;
        let len = hex_u64(len, "len")?;
        if len == 0 {
            return Err(TokenError::EmptyWindow);
        }
        if offset.checked_add(len).is_none() {
            return Err(TokenError::WindowOverflow);
        }
        Ok(Self {
            endpoint: SocketAddr::new(ip, port),
            region,
            key: k,
            offset,
            len,
        })
    }

    /// The window: `[offset, offset + len)` of the registration.
    pub fn window(&self) -> Window {
        Window {
            addr: self.offset,
            len: self.len,
        }
    }
}

impl fmt::Display for SwToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let host = match self.endpoint.ip() {
            IpAddr::V4(a) => a.to_string(),
            IpAddr::V6(a) => format!("[{a}]"),
        };
        write!(f, "{PREFIX}{host}:{}:{:016x}:", self.endpoint.port(), self.region)?;
        for b in self.key {
            write!(f, "{b:02x}")?;
        }
        write!(f, ":{:016x}:{:016x}", self.offset, self.len)
    }
}

fn ct_eq(a: &[u8; 16], b: &[u8; 16]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Registered memory. `ptr..ptr+len` stays valid while any `Arc<Mem>` exists.
struct Mem {
    id: u64,
    key: [u8; 16],
    ptr: *mut u8,
    len: usize,
    /// Memory this crate allocated (freed on drop); `None` for caller-owned memory.
    owned: Option<*mut [u8]>,
}

// SAFETY: the memory is only reached through raw pointers; concurrent transfers into distinct
// ranges do not alias, and the protocol (like RDMA) leaves overlapping transfers' bytes
// unspecified without any other effect.
unsafe impl Send for Mem {}
// SAFETY: as for Send: shared access only ever copies through raw pointers, never through
// references to the memory.
unsafe impl Sync for Mem {}

impl Drop for Mem {
    fn drop(&mut self) {
        if let Some(p) = self.owned.take() {
            // SAFETY: allocated by Box::into_raw in `register` and freed only here.
            drop(unsafe { Box::from_raw(p) });
        }
    }
}

type Registry = Mutex<HashMap<u64, Weak<Mem>>>;

/// The client side: serves one-sided operations on memory registered with it.
pub struct SoftwareTarget {
    registry: Arc<Registry>,
    advertise: SocketAddr,
    accept: tokio::task::JoinHandle<()>,
}

impl SoftwareTarget {
    /// Listens on `addr` (port 0 picks a free port). Tokens name the bound address; see
    /// [`SoftwareTarget::advertise`] when the gateway must reach it under another address.
    pub async fn bind(addr: SocketAddr) -> io::Result<Self> {
        let listener = TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        let registry: Arc<Registry> = Arc::default();
        let reg = registry.clone();
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                };
                let _ = stream.set_nodelay(true);
                tokio::spawn(serve_connection(stream, reg.clone()));
            }
        });
        Ok(Self {
            registry,
            advertise: bound,
            accept,
        })
    }

    /// Sets the address written into tokens (for a target behind NAT or bound to 0.0.0.0).
    pub fn advertise(mut self, addr: SocketAddr) -> Self {
        self.advertise = addr;
        self
    }

    /// The address written into tokens.
    pub fn addr(&self) -> SocketAddr {
        self.advertise
    }

    /// Registers `len` bytes of zeroed host memory.
    pub fn register(&self, len: usize) -> Region {
        let raw = Box::into_raw(vec![0u8; len].into_boxed_slice());
        let ptr = raw as *mut u8;
        self.insert(ptr, len, Some(raw))
    }

    /// Registers memory the caller owns, such as a pinned buffer from a GPU driver.
    ///
    /// # Safety
    /// `ptr..ptr + len` must be valid for reads and writes until the returned [`Region`] is
    /// dropped (dropping it waits for transfers in flight), and the caller must not hold Rust
    /// references into it while transfers run.
    pub unsafe fn register_external(&self, ptr: *mut u8, len: usize) -> Region {
        self.insert(ptr, len, None)
    }

    fn insert(&self, ptr: *mut u8, len: usize, owned: Option<*mut [u8]>) -> Region {
        let mut map = self.registry.lock().expect("registry lock");
        let id = loop {
            let id: u64 = rand::random();
            if !map.contains_key(&id) {
                break id;
            }
        };
        let mem = Arc::new(Mem {
            id,
            key: rand::random(),
            ptr,
            len,
            owned,
        });
        map.insert(id, Arc::downgrade(&mem));
        Region {
            mem,
            registry: self.registry.clone(),
            endpoint: self.advertise,
        }
    }
}

impl Drop for SoftwareTarget {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// A registration: memory that gateways may write and read through tokens.
pub struct Region {
    mem: Arc<Mem>,
    registry: Arc<Registry>,
    endpoint: SocketAddr,
}

impl fmt::Debug for Region {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Region")
            .field("id", &format_args!("{:016x}", self.mem.id))
            .field("len", &self.mem.len)
            .finish_non_exhaustive()
    }
}

impl Region {
    /// Size of the registration in bytes.
    pub fn len(&self) -> usize {
        self.mem.len
    }

    /// Whether the registration is empty.
    pub fn is_empty(&self) -> bool {
        self.mem.len == 0
    }

    /// A token for the window `[offset, offset + len)`; `None` if it does not fit the region or
    /// is empty.
    pub fn token(&self, offset: u64, len: u64) -> Option<SwToken> {
        let end = offset.checked_add(len)?;
        (len > 0 && end <= self.mem.len as u64).then(|| SwToken {
            endpoint: self.endpoint,
            region: self.mem.id,
            key: self.mem.key,
            offset,
            len,
        })
    }

    /// Copies `out.len()` bytes at `offset` out of the region.
    ///
    /// # Panics
    /// When the range is outside the region.
    pub fn read(&self, offset: usize, out: &mut [u8]) {
        assert!(offset.checked_add(out.len()).is_some_and(|e| e <= self.mem.len));
        // SAFETY: in bounds; the memory lives as long as `self.mem`.
        unsafe { std::ptr::copy_nonoverlapping(self.mem.ptr.add(offset), out.as_mut_ptr(), out.len()) }
    }

    /// The bytes `[offset, offset + len)` as a new vector.
    pub fn to_vec(&self, offset: usize, len: usize) -> Vec<u8> {
        let mut v = vec![0; len];
        self.read(offset, &mut v);
        v
    }

    /// Copies `data` into the region at `offset`.
    ///
    /// # Panics
    /// When the range is outside the region.
    pub fn write(&self, offset: usize, data: &[u8]) {
        assert!(offset.checked_add(data.len()).is_some_and(|e| e <= self.mem.len));
        // SAFETY: in bounds; the memory lives as long as `self.mem`.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.mem.ptr.add(offset), data.len()) }
    }

    /// Start of the registered memory.
    pub fn as_ptr(&self) -> *const u8 {
        self.mem.ptr
    }
}

impl Drop for Region {
    fn drop(&mut self) {
        if let Ok(mut map) = self.registry.lock() {
            map.remove(&self.mem.id);
        }
        // Caller-owned memory must not be touched once the caller frees it: wait for the
        // transfers that still hold the registration.
        if self.mem.owned.is_none() {
            while Arc::strong_count(&self.mem) > 1 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    }
}

async fn serve_connection(s: TcpStream, registry: Arc<Registry>) {
    let mut h = [0u8; HEADER];
    loop {
        if recv_exact(&s, Raw(h.as_mut_ptr()), HEADER).await.is_err() {
            return;
        }
        let status = match check(&h, &registry) {
            Ok((op, mem, off, len)) => {
                // SAFETY: `check` confined [off, off+len) to the registration, which `mem` keeps
                // alive for the whole transfer.
                let at = Raw(unsafe { mem.ptr.add(off) });
                let moved = async {
                    if op == OP_WRITE {
                        recv_exact(&s, at, len).await?;
                        answer(&s, ST_OK).await
                    } else {
                        answer(&s, ST_OK).await?;
                        send_all(&s, at, len).await
                    }
                }
                .await;
                if moved.is_err() {
                    return;
                }
                continue;
            }
            Err(st) => st,
        };
        // A refused write's payload is still on the wire: answer and close.
        let _ = answer(&s, status).await;
        return;
    }
}

/// An address the socket calls read from or write to, carried across `.await` points.
///
/// Registered memory is reached only through raw pointers handed to the kernel, never through
/// a Rust reference: its owner and other connections may touch the same range at the same time
/// (the protocol, like RDMA, leaves such bytes unspecified), and a `&mut [u8]` over memory
/// someone else writes is undefined behaviour. Handing the kernel the registered memory itself
/// also spares a copy through a bounce buffer on every byte the target moves.
#[derive(Clone, Copy)]
struct Raw(*mut u8);

// SAFETY: a plain address; every dereference (by the kernel, in `recv_exact`/`send_all`) is
// covered by the caller's guarantee that the range stays valid until the call returns.
unsafe impl Send for Raw {}
// SAFETY: as for Send: sharing the address shares no access; only the kernel dereferences it.
unsafe impl Sync for Raw {}

/// Receives exactly `len` bytes from `s` into `ptr..ptr + len`, straight from the socket.
///
/// The caller keeps `ptr..ptr + len` valid for writes until this returns.
async fn recv_exact(s: &TcpStream, ptr: Raw, len: usize) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        s.readable().await?;
        let got = s.try_io(Interest::READABLE, || {
            // SAFETY: `ptr + done .. ptr + len` lies inside the range the caller keeps valid;
            // the kernel writes it without any Rust reference to it existing.
            let n = unsafe { libc::recv(s.as_raw_fd(), ptr.0.add(done).cast(), len - done, 0) };
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        });
        match got {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends `ptr..ptr + len` on `s`, straight from that memory.
///
/// The caller keeps `ptr..ptr + len` valid for reads until this returns.
async fn send_all(s: &TcpStream, ptr: Raw, len: usize) -> io::Result<()> {
    let mut done = 0;
    while done < len {
        s.writable().await?;
        let sent = s.try_io(Interest::WRITABLE, || {
            // SAFETY: as in `recv_exact`; the kernel only reads the range. MSG_NOSIGNAL: a peer
            // that went away is an error here, not a SIGPIPE for the whole process.
            let n = unsafe { libc::send(s.as_raw_fd(), ptr.0.add(done).cast(), len - done, libc::MSG_NOSIGNAL) };
            usize::try_from(n).map_err(|_| io::Error::last_os_error())
        });
        match sent {
            Ok(n) => done += n,
            Err(e) if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Sends the 8-byte response that starts with `status`.
async fn answer(s: &TcpStream, status: u8) -> io::Result<()> {
    let mut r = [0u8; 8];
    r[0] = status;
    send_all(s, Raw(r.as_mut_ptr()), r.len()).await
}

fn u64_at(h: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(h[at..at + 8].try_into().expect("8 bytes"))
}

fn check(h: &[u8; HEADER], registry: &Registry) -> Result<(u8, Arc<Mem>, usize, usize), u8> {
    if &h[..4] != MAGIC || !matches!(h[4], OP_WRITE | OP_READ) || h[5..8] != [0; 3] {
        return Err(ST_BAD);
    }
    let region = u64_at(h, 8);
    let key: [u8; 16] = h[16..32].try_into().expect("16 bytes");
    let (off, len) = (u64_at(h, 32), u64_at(h, 40));
    let mem = registry
        .lock()
        .map_err(|_| ST_BAD)?
        .get(&region)
        .and_then(Weak::upgrade)
        .ok_or(ST_UNKNOWN)?;
    if !ct_eq(&mem.key, &key) {
        return Err(ST_UNKNOWN);
    }
    if len > MAX_OP || off.checked_add(len).is_none_or(|e| e > mem.len as u64) {
        return Err(ST_BOUNDS);
    }
    Ok((h[4], mem, off as usize, len as usize))
}

/// The gateway side: performs operations on targets named by tokens, over pooled connections.
pub struct SoftwareInitiator {
    idle: Mutex<HashMap<SocketAddr, Vec<TcpStream>>>,
    connect_timeout: Duration,
    op_timeout: Duration,
}

/// Idle connections kept per target endpoint.
const MAX_IDLE: usize = 32;

impl Default for SoftwareInitiator {
    fn default() -> Self {
        Self::new(Duration::from_secs(5), Duration::from_secs(60))
    }
}

impl SoftwareInitiator {
    /// An initiator with the given connect and per-operation timeouts.
    pub fn new(connect_timeout: Duration, op_timeout: Duration) -> Self {
        Self {
            idle: Mutex::default(),
            connect_timeout,
            op_timeout,
        }
    }

    fn take_idle(&self, ep: SocketAddr) -> Option<TcpStream> {
        self.idle.lock().ok()?.get_mut(&ep)?.pop()
    }

    fn put_idle(&self, ep: SocketAddr, s: TcpStream) {
        if let Ok(mut m) = self.idle.lock() {
            let v = m.entry(ep).or_default();
            if v.len() < MAX_IDLE {
                v.push(s);
            }
        }
    }

    async fn connect(&self, ep: SocketAddr) -> Result<TcpStream, TransferError> {
        let s = tokio::time::timeout(self.connect_timeout, TcpStream::connect(ep))
            .await
            .map_err(|_| TransferError::Connect(ep, io::ErrorKind::TimedOut.into()))?
            .map_err(|e| TransferError::Connect(ep, e))?;
        let _ = s.set_nodelay(true);
        Ok(s)
    }

    /// One operation; a pooled connection that turns out dead is replaced once (operations are
    /// idempotent: the same bytes to or from the same place).
    async fn op(
        &self,
        t: &SwToken,
        op: u8,
        offset: u64,
        len: u64,
        data: Option<&Bytes>,
    ) -> Result<Bytes, TransferError> {
        let ep = t.endpoint;
        if let Some(s) = self.take_idle(ep) {
            if let Ok(r) = self.op_on(s, t, op, offset, len, data).await {
                return r;
            }
        }
        let s = self.connect(ep).await?;
        self.op_on(s, t, op, offset, len, data).await.unwrap_or_else(Err)
    }

    /// Runs one operation on `s`. The outer error means the connection failed (retryable); the
    /// inner result is the target's answer.
    async fn op_on(
        &self,
        mut s: TcpStream,
        t: &SwToken,
        op: u8,
        offset: u64,
        len: u64,
        data: Option<&Bytes>,
    ) -> Result<Result<Bytes, TransferError>, TransferError> {
        let mut h = [0u8; HEADER];
        h[..4].copy_from_slice(MAGIC);
        h[4] = op;
        h[8..16].copy_from_slice(&t.region.to_le_bytes());
        h[16..32].copy_from_slice(&t.key);
        h[32..40].copy_from_slice(&(t.offset + offset).to_le_bytes());
        h[40..48].copy_from_slice(&len.to_le_bytes());
        let io = async {
            s.write_all(&h).await?;
            if let Some(d) = data {
                s.write_all(d).await?;
            }
            let mut r = [0u8; 8];
            s.read_exact(&mut r).await?;
            if r[0] != ST_OK {
                return Ok(Err(TransferError::Refused(status_text(r[0]))));
            }
            let mut buf = BytesMut::new();
            if op == OP_READ {
                buf.reserve(len as usize);
                while (buf.len() as u64) < len {
                    if s.read_buf(&mut buf).await? == 0 {
                        return Err(io::Error::from(io::ErrorKind::UnexpectedEof));
                    }
                }
            }
            Ok(Ok(buf.freeze()))
        };
        match tokio::time::timeout(self.op_timeout, io).await {
            Err(_) => Ok(Err(TransferError::Timeout)),
            Ok(Err(e)) => Err(TransferError::Io(e)),
            Ok(Ok(Ok(b))) => {
                self.put_idle(t.endpoint, s);
                Ok(Ok(b))
            }
            Ok(Ok(Err(e))) => Ok(Err(e)),
        }
    }
}

fn software(token: &Token) -> Result<&SwToken, TransferError> {
    match token {
        Token::Software(t) => Ok(t),
        Token::Dc(_) => Err(TransferError::Unsupported("DC")),
    }
}

#[async_trait]
impl Transport for SoftwareInitiator {
    fn name(&self) -> &'static str {
        "software"
    }

    async fn write(&self, token: &Token, offset: u64, data: Bytes) -> Result<(), TransferError> {
        let t = software(token)?;
        crate::transport::confine(token, offset, data.len() as u64)?;
        self.op(t, OP_WRITE, offset, data.len() as u64, Some(&data)).await?;
        Ok(())
    }

    async fn read(&self, token: &Token, offset: u64, len: usize) -> Result<Bytes, TransferError> {
        let t = software(token)?;
        crate::transport::confine(token, offset, len as u64)?;
        self.op(t, OP_READ, offset, len as u64, None).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn local() -> SocketAddr {
        "127.0.0.1:0".parse().unwrap()
    }

    #[test]
    fn token_round_trip() {
        let t = SwToken {
            endpoint: "[::1]:4000".parse().unwrap(),
            region: 0xdead_beef,
            key: [7; 16],
            offset: 4096,
            len: 1 << 20,
        };
        let s = t.to_string();
        assert!(s.starts_with("swt1:[::1]:4000:00000000deadbeef:0707"));
        assert_eq!(SwToken::parse(&s).unwrap(), t);
        let v4 = "swt1:10.0.0.2:9:0000000000000001:000102030405060708090a0b0c0d0e0f:0000000000000000:0000000000000010";
        assert_eq!(SwToken::parse(v4).unwrap().to_string(), v4);
        assert!(!format!("{t:?}").contains("0707"), "Debug must not print the key");
    }

    #[test]
    fn token_rejects_bad_input() {
        let good =
            "swt1:10.0.0.2:9:0000000000000001:000102030405060708090a0b0c0d0e0f:0000000000000000:0000000000000010";
        for bad in [
            good.replace("swt1", "swt2"),
            good.replace("10.0.0.2", "example.com"),
            good.replace(":9:", ":0:"),
            good.replace(":9:", ":99999:"),
            good.replace("0f:", "0F:"),
            good.replace(":0000000000000010", ":0000000000000000"),
            good.replace(":0000000000000000:", ":ffffffffffffffff:"),
            good.replace("000102", "0102"),
            good[..good.len() - 1].to_owned(),
        ] {
            assert!(SwToken::parse(&bad).is_err(), "{bad}");
        }
    }

    proptest! {
        #[test]
        fn parse_never_panics(s in "swt1:\\PC{0,120}") {
            let _ = SwToken::parse(&s);
        }
    }

    #[tokio::test]
    async fn writes_and_reads_stay_inside_the_registration() {
        let target = SoftwareTarget::bind(local()).await.unwrap();
        let r = target.register(1000);
        let other = target.register(1000);
        let init = SoftwareInitiator::default();
        let tok = Token::Software(r.token(100, 200).unwrap());
        init.write(&tok, 0, Bytes::from_static(b"hello")).await.unwrap();
        init.write(&tok, 195, Bytes::from_static(b"world")).await.unwrap();
        assert_eq!(r.to_vec(100, 5), b"hello");
        assert_eq!(r.to_vec(295, 5), b"world");
        assert_eq!(&init.read(&tok, 0, 5).await.unwrap()[..], b"hello");

        // The initiator confines itself to the window.
        let e = init.write(&tok, 196, Bytes::from_static(b"world")).await.unwrap_err();
        assert!(matches!(e, TransferError::OutOfWindow { .. }), "{e}");

        // A forged token (right region, wrong key) and one beyond the region are refused by the
        // target itself.
        let mut forged = r.token(0, 10).unwrap();
        forged.key[0] ^= 1;
        let e = init
            .write(&Token::Software(forged), 0, Bytes::from_static(b"x"))
            .await
            .unwrap_err();
        assert!(matches!(e, TransferError::Refused(_)), "{e}");
        let mut beyond = r.token(0, 10).unwrap();
        beyond.len = 2000;
        let e = init.read(&Token::Software(beyond), 1500, 10).await.unwrap_err();
        assert!(matches!(e, TransferError::Refused(_)), "{e}");
        assert!(other.to_vec(0, 1000).iter().all(|&b| b == 0));

        // After a refusal the initiator recovers on a new connection.
        init.write(&tok, 10, Bytes::from_static(b"again")).await.unwrap();
        assert_eq!(r.to_vec(110, 5), b"again");

        // A dropped registration is gone.
        let stale = Token::Software(other.token(0, 10).unwrap());
        drop(other);
        assert!(init.read(&stale, 0, 1).await.is_err());
    }
}
