//! Freed memory pinned under a live allocation stays with the process until [`release`].

use std::hint::black_box;

/// The process's resident memory, from `/proc/self/status`.
fn rss_bytes() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: usize = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[test]
fn freed_blocks_under_a_live_allocation_go_back_to_the_system() {
    const BLOCK: usize = 96 << 10; // below glibc's smallest mmap threshold: served from the heap
    const BLOCKS: usize = 512; // 48 MiB
    let mut blocks = Vec::with_capacity(BLOCKS);
    let mut pins = Vec::with_capacity(BLOCKS);
    for i in 0..BLOCKS {
        blocks.push(black_box(vec![i as u8 | 1; BLOCK]));
        // A small allocation after each block keeps it from being the top of the heap, so the
        // allocator cannot give it back by shrinking the heap when it is freed.
        pins.push(black_box(vec![0u8; 64]));
    }
    let full = rss_bytes();
    drop(blocks);
    let freed = penstock_heap::free_bytes().unwrap();
    assert!(freed >= 40 << 20, "the allocator holds {freed} bytes free");
    let kept = rss_bytes();
    assert!(
        kept + (8 << 20) > full,
        "freeing alone returned memory: {full} -> {kept}"
    );

    assert!(penstock_heap::release());
    let after = rss_bytes();
    assert!(
        after + (40 << 20) < kept,
        "release returned too little: {kept} -> {after}"
    );
    black_box(&pins);
}

#[test]
fn start_runs_where_the_allocator_can_release() {
    let can = penstock_heap::free_bytes().is_some();
    assert_eq!(
        penstock_heap::start(usize::MAX, std::time::Duration::from_secs(3600)),
        can
    );
    assert_eq!(can, cfg!(all(target_os = "linux", target_env = "gnu")));
}
