//! Data movement of a placement. `bound` is equation (8) of torch-pim.txt §5.1, the paper's
//! upper bound: every PIM segment (maximal run of consecutive offloaded nests) fetches its
//! read set and flushes its write set, per allocation; a buffer read and written in place
//! counts once, and a buffer produced and consumed inside the segment is counted once.
//! `exact` (beyond the paper, its stated future work) tracks where each allocation's valid
//! copy lives across segments and executions: weights fetched once stay on the PIM side
//! (they are loop-invariant across repeated executions), a PIM-produced buffer is flushed
//! only when the host reads it or it is a graph output.

use crate::workload::Workload;
use serde::Serialize;

/// Consecutive offloaded nests: [start, end) ranges.
pub fn segments(place: &[bool]) -> Vec<(usize, usize)> {
    let mut v = vec![];
    let mut i = 0;
    while i < place.len() {
        if place[i] {
            let s = i;
            while i < place.len() && place[i] {
                i += 1;
            }
            v.push((s, i));
        } else {
            i += 1;
        }
    }
    v
}

/// Host<->PIM transitions of a placement that starts and ends on the host: two per segment.
pub fn n_region(segs: &[(usize, usize)]) -> usize {
    2 * segs.len()
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Movement {
    pub fetch_bytes: f64,
    pub flush_bytes: f64,
}

impl Movement {
    /// T_copy = fetch / B_rd + flush / B_wb (equation 8), bandwidths in GB/s → ns.
    pub fn t_copy_ns(&self, b_rd_gbs: f64, b_wb_gbs: f64) -> f64 {
        self.fetch_bytes / b_rd_gbs + self.flush_bytes / b_wb_gbs
    }
    fn add(&mut self, o: Movement) {
        self.fetch_bytes += o.fetch_bytes;
        self.flush_bytes += o.flush_bytes;
    }
}

/// Incremental equation (8) over one segment: feed nests in order.
#[derive(Default, Clone)]
pub struct SegmentAcc {
    /// alloc -> (fetched bytes, flushed bytes, written so far in this segment)
    state: Vec<(usize, u64, u64, bool)>,
    /// Bytes flushed per allocation (the segment's charged write set).
    flushed: Vec<(usize, u64)>,
    pub mv: Movement,
}

impl SegmentAcc {
    pub fn push(&mut self, w: &Workload, i: usize) {
        let n = &w.nests[i];
        for &(a, b) in &n.reads {
            let k = self.entry(a);
            let e = &mut self.state[k];
            // Produced earlier in the segment, or already fetched at least this much:
            // no new transfer (per allocation, counted once).
            if !e.3 && b > e.1 {
                self.mv.fetch_bytes += (b - e.1) as f64;
                e.1 = b;
            }
        }
        for &(a, b) in &n.writes {
            let k = self.entry(a);
            let e = &mut self.state[k];
            // In place: the fetched bytes of this buffer and its flush are one transfer.
            let already = e.2.max(e.1);
            if b > already {
                self.mv.flush_bytes += (b - already) as f64;
                match self.flushed.iter_mut().find(|f| f.0 == a) {
                    Some(f) => f.1 += b - already,
                    None => self.flushed.push((a, b - already)),
                }
            }
            e.2 = e.2.max(b).max(already);
            e.3 = true;
        }
    }
    /// The charged read set (alloc, fetched bytes) and write set (alloc, flushed bytes).
    pub fn sets(&self) -> (Vec<(usize, u64)>, Vec<(usize, u64)>) {
        let reads = self
            .state
            .iter()
            .filter(|e| e.1 > 0)
            .map(|e| (e.0, e.1))
            .collect();
        (reads, self.flushed.clone())
    }
    fn entry(&mut self, a: usize) -> usize {
        match self.state.iter().position(|e| e.0 == a) {
            Some(p) => p,
            None => {
                self.state.push((a, 0, 0, false));
                self.state.len() - 1
            }
        }
    }
}

/// Equation (8) summed over the segments of a placement.
pub fn movement_bound(w: &Workload, segs: &[(usize, usize)]) -> Movement {
    let mut total = Movement::default();
    for &(s, e) in segs {
        let mut acc = SegmentAcc::default();
        for i in s..e {
            acc.push(w, i);
        }
        total.add(acc.mv);
    }
    total
}

/// Residency-tracking movement in steady state (the program executed repeatedly).
pub fn movement_exact(w: &Workload, place: &[bool]) -> Movement {
    const HOST: u8 = 1;
    const PIM: u8 = 2;
    let mut valid: Vec<u8> = vec![HOST; w.allocs.len()];
    let mut mv = Movement::default();
    for pass in 0..2 {
        let mut m = Movement::default();
        for a in &w.allocs {
            if a.input {
                valid[a.id] = HOST;
            }
        }
        for (i, n) in w.nests.iter().enumerate() {
            let (me, other_side_fetch) = if place[i] { (PIM, true) } else { (HOST, false) };
            for &(a, b) in &n.reads {
                if valid[a] & me == 0 {
                    if other_side_fetch {
                        m.fetch_bytes += b as f64;
                    } else {
                        m.flush_bytes += b as f64;
                    }
                    valid[a] |= me;
                }
            }
            for &(a, _) in &n.writes {
                valid[a] = me;
            }
        }
        for a in &w.allocs {
            if a.output && valid[a.id] & HOST == 0 {
                m.flush_bytes += a.bytes as f64;
                valid[a.id] |= HOST;
            }
        }
        if pass == 1 {
            mv = m;
        }
    }
    mv
}
