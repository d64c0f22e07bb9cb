//! Differential tests against the `md-5` crate: random lengths, split points and alignments,
//! inline ([`Chain`]) and through the hashing threads ([`Md5Stream`]), many streams at once so
//! that they share SIMD lanes. Seeded, so a failure names the case that reproduces it.

use bytes::Bytes;
use md5::Digest as _;
use penstock_md5::{Chain, Md5Stream};
use rand::rngs::StdRng;
use rand::{Rng as _, RngCore as _, SeedableRng as _};

fn reference(data: &[u8]) -> [u8; 16] {
    md5::Md5::digest(data).into()
}

/// A length drawn to hit block and batch edges often: near multiples of 64 and of 512 KiB.
fn length(rng: &mut StdRng) -> usize {
    match rng.gen_range(0..4) {
        0 => rng.gen_range(0..256),
        1 => rng.gen_range(1..64) * 64 + rng.gen_range(0..3) - 1,
        2 => (512 << 10) * rng.gen_range(1..4) + rng.gen_range(0..130) - 65,
        _ => rng.gen_range(0..3 << 20),
    }
}

/// `len` random bytes starting `align` bytes into a buffer, so slices begin at every offset
/// within a word and a block.
fn body(rng: &mut StdRng, len: usize, align: usize) -> Bytes {
    let mut v = vec![0u8; align + len];
    rng.fill_bytes(&mut v);
    Bytes::from(v).slice(align..)
}

/// Cuts `len` into random pieces: empty ones, single bytes, and large runs.
fn pieces(rng: &mut StdRng, len: usize) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut off = 0;
    while off < len {
        let n = match rng.gen_range(0..5) {
            0 => 0,
            1 => 1,
            2 => rng.gen_range(1..128),
            3 => rng.gen_range(1..100_000),
            _ => rng.gen_range(1..2 << 20),
        }
        .min(len - off);
        out.push(off..off + n);
        off += n;
    }
    out
}

#[test]
fn chain_matches_md5_on_random_cases() {
    for case in 0..400u64 {
        let mut rng = StdRng::seed_from_u64(case);
        let len = length(&mut rng) % (1 << 20);
        let align = rng.gen_range(0..64);
        let b = body(&mut rng, len, align);
        let mut c = Chain::default();
        for r in pieces(&mut rng, len) {
            c.update(&b[r]);
        }
        assert_eq!(c.finish(), reference(&b), "case {case}: {len} bytes at offset {align}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn streams_match_md5_on_random_cases() {
    let mut tasks = Vec::new();
    for case in 0..48u64 {
        tasks.push(tokio::spawn(async move {
            let mut rng = StdRng::seed_from_u64(1000 + case);
            let len = length(&mut rng);
            let align = rng.gen_range(0..64);
            let b = body(&mut rng, len, align);
            let mut h = Md5Stream::default();
            for r in pieces(&mut rng, len) {
                h.update(b.slice(r)).await;
            }
            assert_eq!(
                h.finish().await,
                reference(&b),
                "case {case}: {len} bytes at offset {align}"
            );
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
}

#[test]
fn known_digests() {
    let hex = |d: &[u8]| {
        let mut c = Chain::default();
        c.update(d);
        hex::encode(c.finish())
    };
    // RFC 1321, appendix A.5.
    assert_eq!(hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
    assert_eq!(hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
    assert_eq!(
        hex(b"12345678901234567890123456789012345678901234567890123456789012345678901234567890"),
        "57edf4a22be3c955ac49da2e2107b67a"
    );
}
