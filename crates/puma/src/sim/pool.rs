//! Buffers reused across simulations on the same thread.
//!
//! A run allocates a register file per active core and a shared memory per tile (≈ 2 MB
//! for MLP-L4). Fresh allocations are page-faulted in on every run, which cost as much
//! as a third of a short simulation; recycled buffers only need to be zeroed.

use std::cell::RefCell;

/// Buffers kept per thread (beyond this they are freed).
const MAX_KEPT: usize = 4096;

thread_local! {
    static WORDS: RefCell<Vec<Vec<i32>>> = const { RefCell::new(Vec::new()) };
    static COUNTS: RefCell<Vec<Vec<u32>>> = const { RefCell::new(Vec::new()) };
}

/// A zeroed vector of `n` words.
pub fn words(n: usize) -> Vec<i32> {
    let mut v = WORDS.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    v.clear();
    v.resize(n, 0);
    v
}

/// A vector of `n` words whose contents are unspecified (left from an earlier run).
pub fn words_dirty(n: usize) -> Vec<i32> {
    let mut v = WORDS.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    v.resize(n, 0);
    v.truncate(n);
    v
}

/// A zeroed vector of `n` counters.
pub fn counts(n: usize) -> Vec<u32> {
    let mut v = COUNTS.with(|p| p.borrow_mut().pop()).unwrap_or_default();
    v.clear();
    v.resize(n, 0);
    v
}

/// Return buffers for later runs.
pub fn give_back(
    words: impl IntoIterator<Item = Vec<i32>>,
    counts: impl IntoIterator<Item = Vec<u32>>,
) {
    WORDS.with(|p| {
        let mut p = p.borrow_mut();
        for v in words {
            if p.len() < MAX_KEPT && v.capacity() > 0 {
                p.push(v);
            }
        }
    });
    COUNTS.with(|p| {
        let mut p = p.borrow_mut();
        for v in counts {
            if p.len() < MAX_KEPT && v.capacity() > 0 {
                p.push(v);
            }
        }
    });
}
