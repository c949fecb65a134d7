//! Agents parked on a tile's shared memory (loads/sends waiting for valid data,
//! stores/receives waiting for readers to drain) and how they are woken.
//!
//! The simulator's semantics (kept bit for bit) are those of a plain wake-all list: every
//! change of a tile's attribute counters re-queues all the tile's waiters at the change's
//! completion time `done`; a waiter whose words are still not ready re-parks, and is
//! re-queued by the next change after that. Such futile wake-ups were ≈ 45 % of MLP-L4's
//! events. In lazy mode the same outcome is computed without them: a waiter's
//! condition depends only on the counters of its own address range, so a wake-up can
//! only succeed if a change touched that range since the waiter last looked. Each
//! listed waiter tracks the time of the wake-up the wake-all list would have queued
//! (`pending`, advanced exactly as that list would); only a change that overlaps its
//! range queues a real event, at that same time. A skipped wake-up has no effect except
//! on the instruction-fetch energy of a core retrying its instruction's first chunk,
//! which the retry adds and subtracts (`(x + c) - c`, not always `x` in floating point):
//! [`Waiters::settle_energy`] replays exactly those roundings. Lazy mode assumes events
//! run in key order (time, agent) and that every wake-up lies after its change; the
//! caller checks both and re-runs in wake-all mode if either fails ([`Waiters::inexact`]).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// No wake-up queued for a listed waiter (it waits for the next change).
const NONE: u64 = u64::MAX;

#[derive(Clone, Copy, Default)]
struct Wait {
    /// Time of the (virtual) wake-up the wake-all list would have queued, or `NONE`.
    pending: u64,
    lo: usize,
    hi: usize,
    /// A core parked on the first chunk of its instruction (its retry touches energy).
    first_chunk_core: bool,
}

pub struct Waiters {
    lazy: bool,
    /// Per tile: the agents parked on its shared memory, in parking order.
    lists: Vec<Vec<u32>>,
    st: Vec<Wait>,
    /// Listed waiters with `first_chunk_core`.
    listed_energy: u32,
    spare: Vec<u32>,
    /// Set when lazy mode cannot be shown to equal wake-all mode (re-run needed).
    pub inexact: bool,
}

impl Waiters {
    pub fn new(lazy: bool, tiles: usize, agents: usize) -> Self {
        Waiters {
            lazy,
            lists: vec![Vec::new(); tiles],
            st: vec![Wait::default(); agents],
            listed_energy: 0,
            spare: Vec::new(),
            inexact: false,
        }
    }

    pub fn lazy(&self) -> bool {
        self.lazy
    }

    /// Park `agent` on `tile` until the counters of words `[lo, hi)` allow it to proceed.
    pub fn park(&mut self, tile: usize, agent: u32, lo: usize, hi: usize, first_chunk_core: bool) {
        self.lists[tile].push(agent);
        if self.lazy {
            self.st[agent as usize] = Wait {
                pending: NONE,
                lo,
                hi,
                first_chunk_core,
            };
            self.listed_energy += first_chunk_core as u32;
        }
    }

    /// The counters of words `[lo, hi)` of `tile` changed during the event `cur`
    /// (time, agent); the change completes at `at`.
    pub fn wake(
        &mut self,
        tile: usize,
        at: u64,
        lo: usize,
        hi: usize,
        cur: (u64, u32),
        heap: &mut BinaryHeap<Reverse<(u64, u32)>>,
    ) {
        if !self.lazy {
            // Wake all, in parking order; the emptied list keeps its capacity.
            std::mem::swap(&mut self.spare, &mut self.lists[tile]);
            for &a in &self.spare {
                heap.push(Reverse((at, a)));
            }
            self.spare.clear();
            return;
        }
        let list = &mut self.lists[tile];
        let mut i = 0;
        while i < list.len() {
            let a = list[i];
            let w = &mut self.st[a as usize];
            // A queued wake-up that is already past failed (its range did not change
            // since the waiter last looked): the wake-all list would queue a new one now.
            if w.pending == NONE || (w.pending, a) < cur {
                w.pending = at;
            }
            if w.lo < hi && lo < w.hi {
                heap.push(Reverse((w.pending, a)));
                self.listed_energy -= w.first_chunk_core as u32;
                list.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    /// Lazy mode skips futile retries; a core's retry on its instruction's first chunk
    /// adds and subtracts its fetch energy `c`, mapping the instruction-memory energy
    /// `x` to `(x + c) - c`, which is `x` except near a change of binary exponent. Call
    /// before the event `next` with `prev` the previous event: where the map is not the
    /// identity, it is applied once per retry the wake-all list would have run between
    /// the two events (their keys lie strictly between).
    pub fn settle_energy(&self, x: &mut f64, c: f64, prev: (u64, u32), next: (u64, u32)) {
        if self.listed_energy == 0 || (*x + c) - c == *x {
            return;
        }
        for list in &self.lists {
            for &a in list {
                let w = &self.st[a as usize];
                if w.first_chunk_core && w.pending != NONE {
                    let k = (w.pending, a);
                    if prev < k && k < next {
                        *x = (*x + c) - c;
                    }
                }
            }
        }
    }
}
