//! The allocator's settings for long runs: large blocks in mappings of their own, and free memory
//! handed back to the system after the bursts (live report rewrites) that leave it behind.

/// glibc raises its mmap threshold each time a large block is freed, up to 32 MiB, so that
/// polars' short-lived column buffers end up in the heap, whose freed middle is not handed back:
/// a long run's RSS then keeps what it once held (67 instead of 59 MB at 100k demo episodes). A
/// fixed threshold (128 KiB, glibc's starting value) keeps large blocks in mappings of their own,
/// returned when freed. Only for runs: a one-off `compare` of a million episodes is faster
/// without it.
pub fn fixed_mmap_threshold() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only sets a parameter of the allocator, under the allocator's own lock.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 128 * 1024);
    }
}

/// Hands the allocator's free memory back to the system (glibc's `malloc_trim`: every arena,
/// free pages in the middle of the heap too). A live report rewrite runs on a thread of its own,
/// whose arena otherwise keeps what the rewrite freed for the rest of the run (4–7 MB at 100k
/// demo episodes). It takes about a millisecond.
pub fn return_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases memory the allocator holds free, under its own locks.
    unsafe {
        libc::malloc_trim(0);
    }
}
