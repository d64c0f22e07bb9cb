//! One-sided transfers into and out of a client's window, whatever carries them, and the
//! pipelines that move whole objects through them.

use std::collections::VecDeque;
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
/// Operations in flight per request.
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

/// Writes the chunks of `source`, in order, into the window from offset 0, with up to [`DEPTH`]
/// writes in flight while the source produces the next chunk. Returns the bytes written.
pub async fn push<S, E>(transport: Arc<dyn Transport>, token: Arc<Token>, source: S) -> Result<u64, PushError<E>>
where
    S: Stream<Item = Result<Bytes, E>>,
{
    let mut source = std::pin::pin!(source);
    let mut inflight: VecDeque<Op<Result<(), TransferError>>> = VecDeque::new();
    let mut offset = 0u64;
    while let Some(chunk) = source.next().await {
        let chunk = chunk.map_err(PushError::Source)?;
        let len = chunk.len() as u64;
        confine(&token, offset, len)?;
        let (t, tok) = (transport.clone(), token.clone());
        inflight.push_back(Op(tokio::spawn(async move { t.write(&tok, offset, chunk).await })));
        offset += len;
        while inflight.len() >= DEPTH {
            let mut op = inflight.pop_front().expect("non-empty");
            op.join().await??;
        }
    }
    for mut op in inflight {
        op.join().await??;
    }
    Ok(offset)
}

/// Reads `total` bytes from the window from offset 0 as a stream of chunks of at most `chunk`
/// bytes, with up to [`DEPTH`] reads in flight ahead of the consumer.
pub fn pull(
    transport: Arc<dyn Transport>,
    token: Arc<Token>,
    total: u64,
    chunk: usize,
) -> impl Stream<Item = Result<Bytes, TransferError>> + Send {
    let chunk = chunk.max(1) as u64;
    futures::stream::iter((0..total).step_by(chunk as usize))
        .map(move |off| {
            let (t, tok) = (transport.clone(), token.clone());
            let n = (total - off).min(chunk) as usize;
            let mut op = Op(tokio::spawn(async move { t.read(&tok, off, n).await }));
            async move { op.join().await? }
        })
        .buffered(DEPTH)
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

    #[tokio::test]
    async fn push_and_pull_move_whole_objects_in_chunks() {
        let target = SoftwareTarget::bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let len = 3 * CHUNK + 12345;
        let region = target.register(len + 100);
        let data: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
        let t: Arc<dyn Transport> = Arc::new(SoftwareInitiator::default());
        let tok = Arc::new(Token::Software(region.token(100, len as u64).unwrap()));

        let chunks: Vec<Result<Bytes, io::Error>> =
            data.chunks(1 << 20).map(|c| Ok(Bytes::copy_from_slice(c))).collect();
        let n = push(t.clone(), tok.clone(), futures::stream::iter(chunks))
            .await
            .unwrap();
        assert_eq!(n, len as u64);
        assert_eq!(region.to_vec(100, len), data);
        assert_eq!(region.to_vec(0, 100), vec![0; 100]);

        let back: Vec<Bytes> = pull(t.clone(), tok.clone(), len as u64, CHUNK)
            .map(|r| r.unwrap())
            .collect()
            .await;
        assert_eq!(back.len(), 4);
        assert_eq!(back.concat(), data);

        // A source longer than the window stops at the window's end with an error.
        let too_long = futures::stream::iter(vec![Ok::<_, io::Error>(Bytes::from(vec![1u8; len + 1]))]);
        let e = push(t, tok, too_long).await.unwrap_err();
        assert!(matches!(e, PushError::Transfer(TransferError::OutOfWindow { .. })));
        assert_eq!(region.to_vec(100, len), data, "nothing written past a refused chunk");
    }
}
