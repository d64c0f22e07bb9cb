//! Connection limits and timeouts of the S3 listener: how many connections, how long a silent
//! one is kept, how long a request body may stall.
//!
//! A gateway that waits forever on its clients is one slow or hostile client away from running
//! out of file descriptors. The pieces here are wired together in [`crate::server`]:
//! - [`max_connections`] caps open connections (the accept loop waits for a free slot);
//! - [`ActiveIo`] stamps every byte a connection moves into its [`Activity`], which the server's
//!   per-connection watchdog reads to close idle connections gracefully, and to drop those that
//!   stay silent with nothing in flight after being asked to close;
//! - [`StallGuard`] fails a request whose body stops arriving, without limiting slow uploads
//!   that keep making progress.
//!
//! HTTP/1 request heads are bounded by hyper's header-read timeout; HTTP/2 peers by PING
//! keep-alive. See `docs/reliability.md` for the defaults and how they are tested.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use crate::config::ConnectionLimits;
use crate::metrics::{CloseReason, Metrics};

/// A configured number of seconds as a duration; zero or less means "off".
pub fn secs(v: f64) -> Option<Duration> {
    (v > 0.0 && v.is_finite()).then(|| Duration::from_secs_f64(v))
}

/// Raises the soft open-file limit to the hard one (a server wants every descriptor it may
/// have) and returns the soft limit in force.
pub fn raise_nofile() -> u64 {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    // `None` is unlimited.
    let lim = getrlimit(Resource::Nofile);
    if lim.current != lim.maximum {
        let raised = Rlimit {
            current: lim.maximum,
            maximum: lim.maximum,
        };
        if setrlimit(Resource::Nofile, raised).is_ok() {
            return lim.maximum.unwrap_or(u64::MAX);
        }
    }
    lim.current.unwrap_or(u64::MAX)
}

/// The connection cap: the configured one, or a quarter of the open-file limit between 64 and
/// 16384, which leaves three quarters of the descriptors to object files, staging files,
/// RocksDB and the admin listener.
pub fn max_connections(cfg: &ConnectionLimits, nofile: u64) -> usize {
    if cfg.max > 0 {
        return cfg.max;
    }
    (nofile / 4).clamp(64, 16384) as usize
}

/// What one connection has been doing, shared by its IO, its service and its watchdog.
#[derive(Debug)]
pub struct Activity {
    epoch: Instant,
    last_io_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Default for Activity {
    fn default() -> Self {
        Self {
            epoch: Instant::now(),
            last_io_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }
}

impl Activity {
    fn touch(&self) {
        self.last_io_ms
            .store(self.epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
    }

    /// Time since the connection last moved a byte.
    pub fn quiet_for(&self) -> Duration {
        let now = self.epoch.elapsed().as_millis() as u64;
        Duration::from_millis(now.saturating_sub(self.last_io_ms.load(Ordering::Relaxed)))
    }

    /// Requests being handled (until their response head is produced).
    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Marks a request in flight until the guard drops.
    pub fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        InFlight(self.clone())
    }
}

/// A request in flight on a connection; see [`Activity::begin`].
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// An IO stream that records in its [`Activity`] when bytes move.
pub struct ActiveIo<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T> ActiveIo<T> {
    /// Wraps `inner`; the connection starts out active.
    pub fn new(inner: T, activity: Arc<Activity>) -> Self {
        activity.touch();
        Self { inner, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for ActiveIo<T> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.touch();
        }
        r
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for ActiveIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let r = Pin::new(&mut self.inner).poll_write_vectored(cx, bufs);
        if matches!(r, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        r
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// A request body that fails with 400 `RequestTimeout` (S3's answer to a client that stops
/// sending) when no frame arrives for `limit` while the handler is waiting for one. The clock
/// runs only while the body is polled and starts over with every frame, so a slow upload that
/// keeps progressing is never cut off, and neither is a handler busy between reads.
pub struct StallGuard<B> {
    inner: B,
    limit: Option<Duration>,
    timer: Option<Pin<Box<Sleep>>>,
    metrics: Arc<Metrics>,
    ended: Option<BodyEnd>,
}

/// Whether a request's body was read to its end: an HTTP/1 connection whose request body was
/// left unread no longer lines up with the framing of the next request, so hyper closes it after
/// the answer. The answer must then say `Connection: close`, or a client that pools connections
/// sends its next request into the closing one, and one that cannot replay that request's body
/// (an SDK's unseekable stream) fails it (aws-sdk-go-v2 after a 411 to a chunked PUT).
#[derive(Clone, Debug)]
pub struct BodyEnd(Arc<AtomicBool>);

impl BodyEnd {
    /// Starts as `reached` (a body that is empty from the start is read).
    pub fn new(reached: bool) -> Self {
        Self(Arc::new(AtomicBool::new(reached)))
    }

    /// Whether the body's end was read.
    pub fn reached(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    fn mark(&self) {
        self.0.store(true, Ordering::Release);
    }
}

impl<B> StallGuard<B> {
    /// Guards `inner`; `None` lets it wait forever.
    pub fn new(inner: B, limit: Option<Duration>, metrics: Arc<Metrics>) -> Self {
        Self {
            inner,
            limit,
            timer: None,
            metrics,
            ended: None,
        }
    }

    /// Marks `end` once the last frame was read.
    pub fn reporting_end(mut self, end: BodyEnd) -> Self {
        self.ended = Some(end);
        self
    }
}

impl<B> Body for StallGuard<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<s3s::StdError>,
{
    type Data = Bytes;
    type Error = s3s::StdError;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(frame) => {
                this.timer = None;
                if let Some(end) = this
                    .ended
                    .as_ref()
                    .filter(|_| frame.is_none() || this.inner.is_end_stream())
                {
                    end.mark();
                }
                Poll::Ready(frame.map(|f| f.map_err(Into::into)))
            }
            Poll::Pending => {
                let Some(limit) = this.limit else {
                    return Poll::Pending;
                };
                let timer = this.timer.get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                this.timer = None;
                this.metrics.connection_closed(CloseReason::BodyStall);
                let e = s3s::s3_error!(
                    RequestTimeout,
                    "Your socket connection to the server was not read from or written to within the timeout period."
                );
                Poll::Ready(Some(Err(Box::new(e))))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};

    #[test]
    fn the_cap_follows_the_descriptor_limit() {
        let auto = ConnectionLimits::default();
        assert_eq!(max_connections(&auto, 256), 64);
        assert_eq!(max_connections(&auto, 65536), 16384);
        assert_eq!(max_connections(&auto, 1 << 20), 16384);
        let fixed = ConnectionLimits {
            max: 7,
            ..ConnectionLimits::default()
        };
        assert_eq!(max_connections(&fixed, 256), 7);
        assert_eq!(secs(0.0), None);
        assert_eq!(secs(1.5), Some(Duration::from_millis(1500)));
    }

    // On the real clock, with margins wide enough for a loaded machine: tokio's paused clock
    // (its test-util feature) would change tokio's features for `cargo test` alone, and with them
    // the build of every crate above tokio, compiled once more for the tests.
    #[tokio::test]
    async fn stalled_bodies_fail_and_slow_ones_do_not() {
        let metrics = Arc::new(Metrics::new());
        // A frame every 100 ms against a 600 ms limit: slow, but progressing.
        let slow = futures::stream::unfold(0, |n| async move {
            (n < 5).then_some(())?;
            tokio::time::sleep(Duration::from_millis(100)).await;
            Some((Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(b"x"))), n + 1))
        });
        let body = StallGuard::new(
            StreamBody::new(Box::pin(slow)),
            Some(Duration::from_millis(600)),
            metrics.clone(),
        );
        assert_eq!(body.collect().await.unwrap().to_bytes().len(), 5);
        // One frame, then silence.
        let stalled = futures::stream::unfold(0, |n| async move {
            if n > 0 {
                futures::future::pending::<()>().await;
            }
            Some((Ok::<_, std::io::Error>(Frame::data(Bytes::from_static(b"x"))), n + 1))
        });
        let body = StallGuard::new(
            StreamBody::new(Box::pin(stalled)),
            Some(Duration::from_millis(300)),
            metrics,
        );
        let err = body.collect().await.unwrap_err();
        let e = err.downcast::<s3s::S3Error>().unwrap();
        assert_eq!(e.code(), &s3s::S3ErrorCode::RequestTimeout);
    }
}
