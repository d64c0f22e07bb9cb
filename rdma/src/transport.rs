//! One-sided transfers into and out of a client's window, whatever carries them, and the
//! pipelines that move whole objects through them.

use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use bytes::Bytes;
use futures::{Stream, StreamExt};

use crate::Token;

/// Bytes per transfer operation: large enough to amortize per-operation costs, small enough
/// that a few in flight per request keep memory bounded.
pub const CHUNK: usize = 4 << 20;
/// Smallest read of a payload split for [`pull_chunk`]: below this, per-operation costs
/// outweigh what the overlap saves.
pub const MIN_PULL_CHUNK: usize = 256 << 10;

/// Bytes per read when pulling a `total`-byte payload with `depth` reads in flight: [`CHUNK`],
/// or for a payload of one chunk or less an equal share of it per read (at least
/// [`MIN_PULL_CHUNK`]). The consumer of a PUT hashes the bytes in order as they come: read as
/// one operation, a 4 MiB object was hashed only after all of it had crossed, while in shares
/// the first is hashed as the others arrive (1.13× for 4 MiB token PUTs from H100 memory,
/// docs/benchmarks.md). Larger payloads already overlap hashing one chunk with reading the
/// next, and smaller reads measured no better for them.
pub fn pull_chunk(total: u64, depth: usize) -> usize {
    if total > CHUNK as u64 {
        return CHUNK;
    }
    (total.div_ceil(depth.max(1) as u64) as usize).max(MIN_PULL_CHUNK)
}

/// Operations in flight per request on a small host, and the floor of the gateway's default
/// (`[rdma] depth` picks up to 8 on hosts with many cores).
pub const DEPTH: usize = 4;

/// Why a transfer failed.
#[derive(Debug, thiserror::Error)]
pub enum TransferError {
    #[error("{len} bytes at offset {offset} do not fit the token's {window}-byte window")]
    OutOfWindow { offset: u64, len: u64, window: u64 },
    #[error("cannot reach the client's transport endpoint {0}: {1}")]
    Connect(SocketAddr, io::Error),
    #[error("transport I/O failed: {0}")]
    Io(#[from] io::Error),
    #[error("the client's transport refused the operation: {0}")]
    Refused(&'static str),
    #[error("transfer timed out")]
    Timeout,
    #[error("this transport cannot serve {0} tokens")]
    Unsupported(&'static str),
    #[error("RDMA operation failed: {0}")]
    Rdma(String),
}

/// Fails unless `[offset, offset + len)` (relative to the window) lies inside the token's window.
pub fn confine(token: &Token, offset: u64, len: u64) -> Result<(), TransferError> {
    let w = token.window();
    if w.contains(offset, len) {
        Ok(())
    } else {
        Err(TransferError::OutOfWindow {
            offset,
            len,
            window: w.len,
        })
    }
}

/// Moves bytes between the gateway and a client's registered window. Offsets are relative to
/// the token's window; implementations refuse anything outside it.
#[async_trait]
pub trait Transport: Send + Sync {
    /// Short name for logs and metrics (`software`, `verbs`).
    fn name(&self) -> &'static str;
    /// Writes `data` into the window at `offset` (RDMA WRITE; serves GET).
    async fn write(&self, token: &Token, offset: u64, data: Bytes) -> Result<(), TransferError>;
    /// Reads `len` bytes from the window at `offset` (RDMA READ; serves PUT).
    async fn read(&self, token: &Token, offset: u64, len: usize) -> Result<Bytes, TransferError>;
}

/// Why a push stopped.
#[derive(Debug, thiserror::Error)]
pub enum PushError<E> {
    /// Reading the source failed.
    #[error("reading the source failed: {0}")]
    Source(E),
    /// The source had fewer bytes than asked for (a file that shrank while it was read).
    #[error("{got} bytes where {len} were read at offset {offset}")]
    Short { offset: u64, len: usize, got: usize },
    /// The transfer failed.
    #[error(transparent)]
    Transfer(#[from] TransferError),
}

/// Aborts a spawned operation when dropped, so abandoned pipelines stop touching the window.
struct Op<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for Op<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Op<T> {
    async fn join(&mut self) -> Result<T, TransferError> {
        (&mut self.0)
            .await
            .map_err(|e| TransferError::Io(io::Error::other(e.to_string())))
    }
}

/// Writes `total` bytes into the window from offset 0, `chunk` bytes per operation, with up to
/// `depth` operations in flight (at least one). Each operation reads its own bytes
/// (`read(offset, len)`, offsets relative to what is pushed) and writes them: the reads of one
/// large object run on several threads at once, where a single reader feeding the writes in turn
/// held a request to one core's copy rate (2.4–3 GiB/s into an H100 host's memory,
/// docs/benchmarks.md). Returns the bytes written.
pub async fn push<R, F, E>(
    transport: Arc<dyn Transport>,
    token: Arc<Token>,
    total: u64,
    chunk: usize,
    depth: usize,
    read: R,
) -> Result<u64, PushError<E>>
where
    R: Fn(u64, usize) -> F,
    F: Future<Output = Result<Bytes, E>> + Send + 'static,
    E: Send + 'static,
{
    confine(&token, 0, total)?;
    let (chunk, depth) = (chunk.max(1) as u64, depth.max(1));
    let mut inflight: VecDeque<Op<Result<(), PushError<E>>>> = VecDeque::new();
    for offset in (0..total).step_by(chunk as usize) {
        let len = (total - offset).min(chunk) as usize;
        let (t, tok, bytes) = (transport.clone(), token.clone(), read(offset, len));
        inflight.push_back(Op(tokio::spawn(async move {
            let data = bytes.await.map_err(PushError::Source)?;
            if data.len() != len {
                return Err(PushError::Short {
                    offset,
                    len,
                    got: data.len(),
                });
            }
            Ok(t.write(&tok, offset, data).await?)
        })));
        while inflight.len() >= depth {
            let mut op = inflight.pop_front().expect("non-empty");
            op.join().await??;
        }
    }
    for mut op in inflight {
        op.join().await??;
    }
    Ok(total)
}

/// Reads `total` bytes from the window from offset 0 as a stream of chunks of at most `chunk`
/// bytes, with up to `depth` reads in flight ahead of the consumer.
pub fn pull(
    transport: Arc<dyn Transport>,
    token: Arc<Token>,
    total: u64,
    chunk: usize,
    depth: usize,
) -> impl Stream<Item = Result<Bytes, TransferError>> + Send {
    let chunk = chunk.max(1) as u64;
    futures::stream::iter((0..total).step_by(chunk as usize))
        .map(move |off| {
            let (t, tok) = (transport.clone(), token.clone());
            let n = (total - off).min(chunk) as usize;
            let mut op = Op(tokio::spawn(async move { t.read(&tok, off, n).await }));
            async move { op.join().await? }
        })
        .buffered(depth.max(1))
}

/// The transports a gateway has, and which one serves a token.
pub struct Transports {
    /// The software transport, when enabled.
    pub software: Option<Arc<dyn Transport>>,
    /// The DC (verbs) transport, or why there is none.
    pub dc: Result<Arc<dyn Transport>, String>,
}

impl Transports {
    /// The transport for `token`, or why it must be declined.
    pub fn for_token(&self, token: &Token) -> Result<Arc<dyn Transport>, String> {
        match token {
            Token::Software(_) => self
                .software
                .clone()
                .ok_or_else(|| "the software transport is disabled on this gateway".to_owned()),
            Token::Dc(_) => self.dc.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::software::{SoftwareInitiator, SoftwareTarget};

    #[test]
    fn small_payloads_are_pulled_in_shares() {
        assert_eq!(pull_chunk(4 << 20, 8), 512 << 10);
        assert_eq!(pull_chunk(4 << 20, 4), 1 << 20);
        assert_eq!(pull_chunk((4 << 20) + 1, 8), CHUNK, "larger payloads in whole chunks");
        assert_eq!(pull_chunk(16 << 20, 8), CHUNK);
        assert_eq!(pull_chunk(1 << 30, 8), CHUNK);
        assert_eq!(pull_chunk(100 << 10, 8), MIN_PULL_CHUNK, "never below the floor");
        assert_eq!(pull_chunk(0, 0), MIN_PULL_CHUNK);
        assert_eq!(pull_chunk((3 << 20) + 1, 3), (1 << 20) + 1, "shares cover the payload");
    }

    #[tokio::test]
    async fn push_and_pull_move_whole_objects_in_chunks() {
        let target = SoftwareTarget::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let len = 3 * CHUNK + 12345;
        let region = target.register(len + 100);
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let t: Arc<dyn Transport> = Arc::new(SoftwareInitiator::default());
        let tok = Arc::new(Token::Software(region.token(100, len as u64).unwrap()));

        let src = Arc::new(data.clone());
        let read = |src: Arc<Vec<u8>>| {
            move |off: u64, n: usize| {
                let src = src.clone();
                async move { Ok::<_, io::Error>(Bytes::copy_from_slice(&src[off as usize..off as usize + n])) }
            }
        };
        let n = push(t.clone(), tok.clone(), len as u64, CHUNK, DEPTH, read(src.clone()))
            .await
            .unwrap();
        assert_eq!(n, len as u64);
        assert_eq!(region.to_vec(100, len), data);
        assert_eq!(region.to_vec(0, 100), vec![0; 100]);

        let back: Vec<Bytes> = pull(t.clone(), tok.clone(), len as u64, CHUNK, DEPTH)
            .map(|r| r.unwrap())
            .collect()
            .await;
        assert_eq!(back.len(), 4);
        assert_eq!(back.concat(), data);

        // More than the window holds is refused before anything moves.
        let other = Arc::new(vec![1u8; len + 1]);
        let e = push(t.clone(), tok.clone(), len as u64 + 1, CHUNK, DEPTH, read(other))
            .await
            .unwrap_err();
        assert!(
            matches!(e, PushError::Transfer(TransferError::OutOfWindow { .. })),
            "{e}"
        );
        assert_eq!(region.to_vec(100, len), data, "nothing written past the window");

        // A source that fails, or ends early (a file that shrank), fails the push.
        let failing = |off: u64, n: usize| async move {
            if off >= CHUNK as u64 {
                Err(io::Error::other("disk"))
            } else {
                Ok(Bytes::from(vec![2u8; n]))
            }
        };
        let e = push(t.clone(), tok.clone(), len as u64, CHUNK, DEPTH, failing)
            .await
            .unwrap_err();
        assert!(matches!(e, PushError::Source(_)), "{e}");
        let short = |off: u64, n: usize| async move {
            Ok::<_, io::Error>(Bytes::from(vec![3u8; if off == 0 { n } else { n / 2 }]))
        };
        let e = push(t, tok, len as u64, CHUNK, DEPTH, short).await.unwrap_err();
        assert!(
            matches!(e, PushError::Short { offset, len: l, got } if offset == CHUNK as u64 && l == CHUNK && got == CHUNK / 2),
            "{e}"
        );
    }
}
