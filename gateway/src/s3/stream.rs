//! Streaming a file's bytes into a GET's body: reads sized from a read-ahead budget that all
//! streaming responses share, and the answer when the file turns out shorter than its stat.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use futures::StreamExt;
use s3s::s3_error;

use penstock_backends::{BackendError, ReadHandle};

/// Largest read from the backend while streaming a response.
const READ_BLOCK: usize = 1 << 20;

/// Smallest streaming read block, however many responses stream at once.
const MIN_READ_BLOCK: usize = 128 << 10;

/// Read-ahead memory that all streaming responses share: each reads two blocks ahead, sized so
/// the blocks of all streams together stay within this. Up to 16 streams get full 1 MiB blocks
/// (fewest calls per byte); 64 streams get 256 KiB blocks instead of holding 128 MiB of
/// read-ahead (plus the block hyper is writing to each socket).
const READ_AHEAD_BUDGET: usize = 32 << 20;

/// Responses streaming file blocks right now.
static STREAMING: AtomicUsize = AtomicUsize::new(0);

/// One response counted in [`STREAMING`] while it lives.
pub(super) struct Streaming;

impl Streaming {
    /// Counts a new stream.
    pub(super) fn start() -> Self {
        STREAMING.fetch_add(1, Ordering::Relaxed);
        Self
    }

    /// The size of the next read of a stream: its share of the budget for the streams there are
    /// now. Asked again for every read, not once per stream: streams that started while few
    /// others ran would otherwise keep 1 MiB blocks for their whole (long) life, and 64 GETs that
    /// started one after another held about 76 MiB of read-ahead instead of 32.
    pub(super) fn block() -> usize {
        Self::block_for(STREAMING.load(Ordering::Relaxed))
    }

    /// A stream's read block when `n` streams run at once.
    fn block_for(n: usize) -> usize {
        (READ_AHEAD_BUDGET / (2 * n.max(1))).clamp(MIN_READ_BLOCK, READ_BLOCK) & !0xffff
    }
}

impl Drop for Streaming {
    fn drop(&mut self) {
        STREAMING.fetch_sub(1, Ordering::Relaxed);
    }
}

/// What a read that found fewer bytes than the file's stat promised says.
const SHRANK: &str = "the object's file shrank while it was read";

/// A file that had fewer bytes than its stat when read (a session truncated it mid-GET): the GET
/// fails rather than answer with bytes missing.
pub(super) fn file_shrank() -> s3s::S3Error {
    s3_error!(InternalError, "{SHRANK}")
}

/// `len` bytes from `start`, read in blocks of `block()` bytes (asked as each read starts) with
/// one block of read-ahead.
pub(super) fn read_blocks(
    h: Arc<dyn ReadHandle>,
    start: u64,
    len: u64,
    block: impl Fn() -> usize + Send + 'static,
) -> impl futures::Stream<Item = Result<bytes::Bytes, BackendError>> + Send {
    let end = start + len;
    let mut next = start;
    // Lazy: `buffered` pulls the next offset only when it starts that read.
    let blocks = std::iter::from_fn(move || {
        let off = next;
        if off >= end {
            return None;
        }
        let n = (end - off).min(block().max(1) as u64);
        next += n;
        Some((off, n as usize))
    });
    futures::stream::iter(blocks)
        .map(move |(off, n)| {
            let h = h.clone();
            async move {
                let b = h.read_at(off, n).await?;
                // A short block would end the body early (or leave a gap): fail the stream, so
                // the connection or HTTP/2 stream is reset instead of ending as if complete.
                if b.len() != n {
                    return Err(BackendError::Io(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        SHRANK,
                    )));
                }
                Ok(b)
            }
        })
        .buffered(2)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use async_trait::async_trait;
    use futures::StreamExt;
    use penstock_backends::{EntryKind, ReadHandle, Stat};

    use super::{read_blocks, READ_AHEAD_BUDGET, READ_BLOCK};

    /// A file in memory that records the reads made of it.
    struct Recorded {
        stat: Stat,
        bytes: Vec<u8>,
        reads: Mutex<Vec<(u64, usize)>>,
    }

    #[async_trait]
    impl ReadHandle for Recorded {
        fn stat(&self) -> &Stat {
            &self.stat
        }

        async fn read_at(&self, offset: u64, len: usize) -> penstock_backends::Result<bytes::Bytes> {
            self.reads.lock().unwrap().push((offset, len));
            // Like pread: short at the end of the file, empty past it.
            let end = (offset as usize + len).min(self.bytes.len());
            let at = (offset as usize).min(end);
            Ok(bytes::Bytes::copy_from_slice(&self.bytes[at..end]))
        }
    }

    #[tokio::test]
    async fn each_read_takes_the_block_size_of_its_moment() {
        let bytes: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let h = Arc::new(Recorded {
            stat: Stat {
                kind: EntryKind::File,
                size: bytes.len() as u64,
                inode: 1,
                mtime_ns: 0,
            },
            bytes: bytes.clone(),
            reads: Mutex::new(Vec::new()),
        });
        // The share shrinks as other streams start: 1000, 900, 800, ... bytes per read.
        let asked = Arc::new(AtomicUsize::new(0));
        let a = asked.clone();
        let block = move || 1000 - 100 * a.fetch_add(1, Ordering::Relaxed).min(9);
        let (start, len) = (37u64, 9_000u64);
        let got: Vec<bytes::Bytes> = read_blocks(h.clone(), start, len, block)
            .map(Result::unwrap)
            .collect()
            .await;
        assert_eq!(got.concat(), bytes[start as usize..(start + len) as usize]);
        let reads = h.reads.lock().unwrap().clone();
        let sizes: Vec<usize> = reads.iter().map(|r| r.1).collect();
        assert_eq!(sizes[..5], [1000, 900, 800, 700, 600]);
        assert_eq!(sizes.iter().sum::<usize>() as u64, len);
        assert!(reads.windows(2).all(|w| w[0].0 + w[0].1 as u64 == w[1].0), "{reads:?}");
        assert_eq!(
            asked.load(Ordering::Relaxed),
            reads.len(),
            "one size per read, asked lazily"
        );
    }

    #[tokio::test]
    async fn a_file_shorter_than_its_range_fails_the_stream() {
        let h = Arc::new(Recorded {
            stat: Stat {
                kind: EntryKind::File,
                size: 5_000,
                inode: 1,
                mtime_ns: 0,
            },
            bytes: vec![7; 2_500],
            reads: Mutex::new(Vec::new()),
        });
        let got: Vec<_> = read_blocks(h, 0, 5_000, || 1_000).collect().await;
        assert!(got[..2].iter().all(|r| r.as_ref().is_ok_and(|b| b.len() == 1_000)));
        assert!(got[2].is_err(), "the half block is an error, not a short body");
    }

    #[tokio::test]
    async fn an_empty_range_reads_nothing() {
        let h = Arc::new(Recorded {
            stat: Stat {
                kind: EntryKind::File,
                size: 0,
                inode: 1,
                mtime_ns: 0,
            },
            bytes: Vec::new(),
            reads: Mutex::new(Vec::new()),
        });
        assert_eq!(read_blocks(h.clone(), 0, 0, || READ_BLOCK).count().await, 0);
        assert!(h.reads.lock().unwrap().is_empty());
    }

    #[test]
    fn the_streams_blocks_stay_within_the_budget() {
        for n in [1, 2, 8, 16, 17, 40, 64] {
            let block = super::Streaming::block_for(n);
            assert!(block <= READ_BLOCK && block.is_multiple_of(0x10000), "{n}: {block}");
            assert!(2 * n * block <= READ_AHEAD_BUDGET, "{n} streams of {block}-byte blocks");
        }
        assert_eq!(super::Streaming::block_for(64), 256 << 10);
    }
}
