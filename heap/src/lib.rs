//! Gives free heap memory back to the system.
//!
//! glibc's allocator keeps what a program frees for its next allocations, and it only returns
//! memory on its own from the top of a heap: one live allocation above a freed region pins the
//! region. A gateway frees a lot in bursts (the hyper buffers that carried a large PUT's body, the
//! blocks of a GET): measured here, the process held 70-86 MiB after a few seconds of 16 MiB and
//! 4 KiB PUTs and kept holding it while idle; with [`start`] running it held 53-55 MiB. [`start`]
//! runs a thread that checks once a period how much the allocator holds free and, past a slack,
//! asks it to return the free pages (`malloc_trim`, which also releases pages in the middle of a
//! heap). It lowers what an idle gateway holds after a burst, not the peak of the next burst:
//! that burst's allocations fault the pages in again.
//!
//! Only glibc has these calls. Elsewhere [`free_bytes`] is `None`, [`release`] does nothing and
//! [`start`] starts no thread.

use std::time::Duration;

/// Bytes the allocator holds free (not handed out, not returned to the system), when it can say.
pub fn free_bytes() -> Option<usize> {
    imp::free_bytes()
}

/// Returns the allocator's free pages to the system. Returns whether any memory was released.
///
/// It holds each heap's lock while it walks that heap's free chunks, so a thread allocating at
/// the same moment waits; and pages released here are faulted in again when reused. Hence a
/// thread that calls it at most once a period ([`start`]) rather than after every free.
pub fn release() -> bool {
    imp::release()
}

/// Starts a thread that, every `period`, calls [`release`] when the allocator holds more than
/// `slack` bytes free beyond what it held right after the last release. Returns whether the
/// thread runs (not on allocators without the calls, or if the thread could not be created).
///
/// The count of free bytes does not drop when pages are returned from the middle of a heap (the
/// chunks stay free, only their pages are gone), so the thread compares against that mark rather
/// than against zero: otherwise it would call [`release`] every period over pages it already
/// returned.
pub fn start(slack: usize, period: Duration) -> bool {
    if free_bytes().is_none() {
        return false;
    }
    std::thread::Builder::new()
        .name("heap-release".into())
        .spawn(move || {
            let mut mark: usize = 0;
            loop {
                std::thread::sleep(period);
                let Some(free) = free_bytes() else { return };
                if free > mark.saturating_add(slack) {
                    release();
                    mark = free_bytes().unwrap_or(0);
                } else {
                    // Free chunks were reused (their pages are resident again): follow them down.
                    mark = mark.min(free);
                }
            }
        })
        .is_ok()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod imp {
    pub fn free_bytes() -> Option<usize> {
        // SAFETY: mallinfo2 takes no arguments, only reads the allocator's bookkeeping under its
        // locks and returns a plain struct by value; it is callable from any thread at any time.
        let info = unsafe { libc::mallinfo2() };
        Some(info.fordblks)
    }

    pub fn release() -> bool {
        // SAFETY: malloc_trim only returns pages of free chunks to the kernel (madvise and
        // shrinking heap tops) under the allocator's own locks; memory that is handed out is
        // untouched, so no pointer any thread holds is invalidated. A pad of 0 keeps nothing
        // spare at the top of the main heap.
        unsafe { libc::malloc_trim(0) != 0 }
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
mod imp {
    pub fn free_bytes() -> Option<usize> {
        None
    }

    pub fn release() -> bool {
        false
    }
}
