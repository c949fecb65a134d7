//! A group of vector instructions issued back to back to one VPU, all reading the same
//! source register and each reading and writing its own target with the same cost
//! (`vmacc.vx` from one input row into several accumulators): the same schedule,
//! counters and register times as one [`Machine::issue`] per instruction, in order,
//! with the clocks kept in locals over the group and the overflow checked once.

use super::Machine;

impl Machine {
    /// Issue, for each `d` of `dsts` in order, the instruction `d <- f(d, src)` of
    /// `cycles` to VPU `p`: exactly `issue(p, &[d, src], Some(d), cycles)` per target.
    pub(crate) fn issue_each(
        &mut self,
        p: usize,
        src: usize,
        dsts: impl ExactSizeIterator<Item = usize> + Clone,
        cycles: u64,
    ) {
        let n = dsts.len() as u64;
        if n == 0 || self.data_only {
            return;
        }
        let ic = self.arch.host.issue_cycles;
        // Every time the group reads (host, queue starts, register times) is at most
        // the latest of the host, this VPU and the DMA clock (register and queue times
        // were ends of this VPU's instructions or of DMA bursts, and those clocks never
        // go back), and each instruction moves a time by at most `ic + cycles`. Below
        // this bound no time saturates, so the per-instruction checks are not needed;
        // otherwise (or when a target is the source) take the general path.
        let t = &self.t;
        let latest = t.host_t.max(t.vpu_t[p]).max(t.dma_t);
        let fits = !t.overflow
            && ic
                .checked_add(cycles)
                .and_then(|per| per.checked_mul(n))
                .and_then(|g| g.checked_add(latest))
                .is_some_and(|e| e < u64::MAX);
        if !fits || dsts.clone().any(|d| d == src) {
            for d in dsts {
                self.issue(p, &[d, src], Some(d), cycles);
            }
            return;
        }
        let t = &mut self.t;
        let regs = &mut t.regs[p * t.vregs..(p + 1) * t.vregs];
        let (s_avail, s_dma) = (regs[src].avail, regs[src].dma);
        let q = &mut t.queue;
        let depth = q.depth;
        let starts = &mut q.starts[p * depth..(p + 1) * depth];
        let (mut next, mut full) = (q.next[p], q.full[p]);
        let (mut host, mut vt, mut idle) = (t.host_t, t.vpu_t[p], t.dma_idle[p]);
        let (mut comp, mut stall) = (0u64, 0u64);
        for d in dsts {
            // `host(issue_cycles)`: control time.
            host += ic;
            // A full queue: wait for its oldest instruction to start (`wait_vpu`).
            if full {
                let s = starts[next];
                if s > host {
                    let w = s - host;
                    let dma = w.min(idle);
                    idle -= dma;
                    comp += w - dma;
                    stall += dma;
                    host = s;
                }
            }
            let mut ready = host.max(vt);
            let mut start = ready;
            if s_dma {
                start = start.max(s_avail);
            } else {
                ready = ready.max(s_avail);
            }
            let r = &mut regs[d];
            if r.dma {
                start = start.max(r.avail);
            } else {
                ready = ready.max(r.avail);
            }
            ready = ready.max(r.free);
            start = start.max(ready);
            idle = idle.saturating_add(start - ready);
            let end = start + cycles;
            vt = end;
            r.avail = end;
            r.dma = false;
            r.free = r.free.max(end);
            starts[next] = start;
            next += 1;
            if next == depth {
                next = 0;
                full = true;
            }
        }
        regs[src].free = regs[src].free.max(vt);
        q.next[p] = next;
        q.full[p] = full;
        t.host_t = host;
        t.vpu_t[p] = vt;
        t.dma_idle[p] = idle;
        t.ctr.host_control += ic * n;
        t.ctr.compute_wait += comp;
        t.ctr.dma_stall += stall;
        t.ctr.vec_instrs += n;
        // One saturating add for the group's `n` saturating adds (all non-negative).
        let busy = cycles.saturating_mul(n);
        self.t.ctr.vpu_busy = self.sat_add(self.t.ctr.vpu_busy, busy);
    }
}

#[cfg(test)]
mod tests {
    use crate::arch::Arch;
    use crate::machine::{Elem, Machine, Xfer};

    /// A state with DMA-written and VPU-written registers and a short queue that fills.
    fn setup(depth: usize) -> Machine {
        let mut arch = Arch::default();
        arch.vpu.queue_depth = depth;
        let mut m = Machine::new(&arch).unwrap();
        let v = m.vlen;
        let x = m.put(Elem::U8, &vec![3; 4 * v]);
        m.dma_in(&Xfer::rows(0, 0, v, x, Elem::U8, 3, v, v))
            .unwrap();
        m.vmv_vx(0, 21, 1, v);
        m.vslidedown(0, 19, 1, 1, v);
        m
    }

    #[test]
    fn a_group_schedules_as_one_issue_per_instruction() {
        for depth in [1, 2, 3, 32] {
            let (mut a, mut b) = (setup(depth), setup(depth));
            let dsts = [21, 22, 23, 21, 24];
            for src in [0, 2, 19] {
                a.issue_each(0, src, dsts.iter().copied(), 7);
                for &d in &dsts {
                    b.issue(0, &[d, src], Some(d), 7);
                }
                // A DMA into the source waits for its last read (its free time).
                let (v, x) = (a.vlen, 0);
                a.dma_in(&Xfer::row(0, src, 0, v, x, Elem::U8, v)).unwrap();
                b.dma_in(&Xfer::row(0, src, 0, v, x, Elem::U8, v)).unwrap();
                assert_eq!(a.finish_time(), b.finish_time());
                // Later instructions reading (avail) and then writing (avail and free)
                // each target and the source see the same register times.
                for r in [src, 21, 22, 23, 24] {
                    assert_eq!(a.issue(0, &[r], Some(25), 1), b.issue(0, &[r], Some(25), 1));
                    assert_eq!(a.issue(0, &[26], Some(r), 1), b.issue(0, &[26], Some(r), 1));
                }
                assert_eq!(a.counters(), b.counters());
                assert_eq!((a.now(), a.finish_time()), (b.now(), b.finish_time()));
            }
            // A target that is the source takes the one-by-one path.
            a.issue_each(0, 22, [21, 22].into_iter(), 5);
            b.issue(0, &[21, 22], Some(21), 5);
            b.issue(0, &[22, 22], Some(22), 5);
            assert_eq!(a.counters(), b.counters());
            assert_eq!(a.finish_time(), b.finish_time());
        }
    }
}
