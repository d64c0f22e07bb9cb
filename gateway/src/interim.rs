//! `100 Continue` for requests that expect it but carry no body.
//!
//! hyper answers `Expect: 100-continue` with an interim `100 Continue` when the handler first
//! reads the body, and never when the body is empty: it goes straight to the final response,
//! which RFC 9110 allows. botocore (boto3, both aws cli versions) sends the expectation on every
//! PutObject and UploadPart with a file-like body, empty ones included, and when the final
//! response comes without the interim one it keeps that status line as the answer of the next
//! request on the pooled connection: the next PUT then waits out its 60 s read timeout and is
//! retried. So for every HTTP/1.1 request that expects 100-continue and has an empty body, the
//! connection writes `HTTP/1.1 100 Continue` right before the response head; any client reads an
//! interim response before the final one, which HTTP/1.1 requires them to accept.
//!
//! The service marks the connection ([`ContinueSignal::request`]); [`ContinueIo`], between hyper
//! and the socket, writes the interim response in front of the next write that starts a response
//! head. Waiting for a response head (and not just the next write) keeps the interim response
//! from landing inside the unflushed tail of an earlier response on a pipelined connection.

use std::io::IoSlice;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

const CONTINUE: &[u8] = b"HTTP/1.1 100 Continue\r\n\r\n";

/// The service's side of one connection: asks for an interim `100 Continue`.
#[derive(Debug, Clone, Default)]
pub struct ContinueSignal(Arc<AtomicBool>);

impl ContinueSignal {
    /// The next response on this connection gets a `100 Continue` in front of it.
    pub fn request(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Whether an HTTP/1.1 request expects `100 Continue` and will never read a body (so hyper
/// would not send the interim response).
pub fn wants_interim_continue<B: hyper::body::Body>(req: &http::Request<B>) -> bool {
    req.version() == http::Version::HTTP_11 && req.body().is_end_stream() && expects_continue(req.headers())
}

/// Whether the client waits for `100 Continue` before it sends the body.
pub fn expects_continue(headers: &http::HeaderMap) -> bool {
    headers
        .get_all(http::header::EXPECT)
        .iter()
        .any(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// A connection's byte stream that writes a requested `100 Continue` before the next response.
pub struct ContinueIo<S> {
    inner: S,
    signal: ContinueSignal,
    /// Bytes of [`CONTINUE`] written so far while one is being written.
    progress: Option<usize>,
}

impl<S> ContinueIo<S> {
    /// Wraps `inner`; returns the stream and the signal for the connection's service.
    pub fn new(inner: S) -> (Self, ContinueSignal) {
        let signal = ContinueSignal::default();
        (
            Self {
                inner,
                signal: signal.clone(),
                progress: None,
            },
            signal,
        )
    }
}

impl<S: AsyncWrite + Unpin> ContinueIo<S> {
    /// Writes the interim response first when one is due and `head` starts a response.
    fn poll_interim(&mut self, cx: &mut Context<'_>, head: &[u8]) -> Poll<std::io::Result<()>> {
        if self.progress.is_none() && head.starts_with(b"HTTP/1.") && self.signal.0.swap(false, Ordering::Acquire) {
            self.progress = Some(0);
        }
        while let Some(done) = self.progress {
            match Pin::new(&mut self.inner).poll_write(cx, &CONTINUE[done..]) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => {
                    self.progress = (done + n < CONTINUE.len()).then_some(done + n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for ContinueIo<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for ContinueIo<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        std::task::ready!(self.poll_interim(cx, buf))?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let head = bufs.iter().find(|b| !b.is_empty()).map_or(&[][..], |b| &b[..]);
        std::task::ready!(self.poll_interim(cx, head))?;
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn interim_goes_before_the_next_response_head_only() {
        let (a, mut b) = tokio::io::duplex(4096);
        let (mut io, signal) = ContinueIo::new(a);
        // The tail of an earlier response is not a response head: written as is.
        signal.request();
        io.write_all(b"tail").await.unwrap();
        io.write_all(b"HTTP/1.1 200 OK\r\n\r\n").await.unwrap();
        io.write_all(b"HTTP/1.1 204 No Content\r\n\r\n").await.unwrap();
        drop(io);
        let mut got = Vec::new();
        b.read_to_end(&mut got).await.unwrap();
        assert_eq!(
            got,
            b"tailHTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n"
        );
    }

    #[test]
    fn only_empty_http11_requests_that_expect_continue() {
        let req = |v, expect: Option<&str>, body: &'static str| {
            let mut b = http::Request::builder().version(v);
            if let Some(e) = expect {
                b = b.header("expect", e);
            }
            b.body(http_body_util::Full::new(bytes::Bytes::from_static(body.as_bytes())))
                .unwrap()
        };
        assert!(wants_interim_continue(&req(
            http::Version::HTTP_11,
            Some("100-continue"),
            ""
        )));
        assert!(wants_interim_continue(&req(
            http::Version::HTTP_11,
            Some("100-Continue"),
            ""
        )));
        assert!(!wants_interim_continue(&req(
            http::Version::HTTP_11,
            Some("100-continue"),
            "x"
        )));
        assert!(!wants_interim_continue(&req(http::Version::HTTP_11, None, "")));
        assert!(!wants_interim_continue(&req(
            http::Version::HTTP_2,
            Some("100-continue"),
            ""
        )));
        assert!(!wants_interim_continue(&req(
            http::Version::HTTP_10,
            Some("100-continue"),
            ""
        )));
    }
}
