//! Buffers reused across simulations on the same thread.
//!
//! A run allocates a register file per active core and a shared memory per tile (≈ 2 MB
//! for MLP-L4). Fresh allocations are page-faulted in on every run, which cost as much
//! as a third of a short simulation; recycled buffers only need to be zeroed.

use super::packet::Packet;
use std::cell::RefCell;
use std::collections::VecDeque;

/// Buffers kept per thread (beyond this they are freed).
const MAX_KEPT: usize = 4096;

thread_local! {
    static WORDS: RefCell<Vec<Vec<i32>>> = const { RefCell::new(Vec::new()) };
    static COUNTS: RefCell<Vec<Vec<u32>>> = const { RefCell::new(Vec::new()) };
    /// Packet payloads and (empty) packet queues: a run sends ≈ 1,900 packets for
    /// MLP-L4, and fresh buffers and growing queues cost hundreds of allocations.
    static PACKETS: RefCell<Vec<Vec<i32>>> = const { RefCell::new(Vec::new()) };
    static DEQUES: RefCell<Vec<VecDeque<Packet>>> = const { RefCell::new(Vec::new()) };
}

/// Packet payload buffers left from earlier runs (contents unspecified: every send
/// clears the buffer it takes).
pub fn packet_buffers() -> Vec<Vec<i32>> {
    PACKETS.with(|p| std::mem::take(&mut *p.borrow_mut()))
}

/// An empty packet queue (with the capacity an earlier run gave it).
pub fn deque() -> VecDeque<Packet> {
    DEQUES.with(|p| p.borrow_mut().pop()).unwrap_or_default()
}

/// Return packet buffers and queues (the queued packets' payloads join the buffers).
pub(super) fn give_back_packets(
    mut buffers: Vec<Vec<i32>>,
    queues: impl IntoIterator<Item = VecDeque<Packet>>,
) {
    DEQUES.with(|d| {
        let mut d = d.borrow_mut();
        for mut q in queues {
            buffers.extend(q.drain(..).map(|pk| pk.data));
            if d.len() < MAX_KEPT && q.capacity() > 0 {
                d.push(q);
            }
        }
    });
    buffers.truncate(MAX_KEPT);
    PACKETS.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < buffers.len() {
            *p = buffers;
        }
    });
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
