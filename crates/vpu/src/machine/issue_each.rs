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
        if n == 0 {
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
        let busy = cycles.checked_mul(n).unwrap_or(u64::MAX);
        self.t.ctr.vpu_busy = self.sat_add(self.t.ctr.vpu_busy, busy);
    }
}
