//! One-row DMA bursts (memory to a register) inside a [`Batch`]: the same schedule,
//! counters, register times and cache accesses as [`Machine::dma_in`] of that row
//! (programming, channel and register waits, the cache lines, the channel time), with
//! the host clock and the counters in the batch's locals. The caller checks beforehand
//! that the burst lies inside memory and the VRF, checks the trial bound once per batch
//! (a trial whose clock passed it cannot win, whether it stops now or later), and
//! bounds each burst's host and channel time in [`Machine::batch_mem`]'s `cycles`.

use super::{Batch, Machine, burst_parts};

impl Machine {
    /// The most a one-row burst of `cols` elements of `es` bytes, `col_stride` bytes
    /// apart, can add to the latest clock (the host's programming, then the channel's
    /// set-up, transfer of every line it can touch as a miss and a write-back, and
    /// latency); `None` when that does not fit in a `u64`.
    pub(crate) fn burst_bound(&self, cols: usize, es: usize, col_stride: usize) -> Option<u64> {
        let lb = self.cache.line_bytes();
        let span = cols
            .checked_sub(1)?
            .checked_mul(col_stride)?
            .checked_add(es)?;
        let lines = (span / lb + 2) as u64;
        let d = crate::cache::CacheStats {
            hits: 0,
            misses: lines,
            evictions: lines,
        };
        let (setup, body, lat) = burst_parts(&self.arch, lb, cols.checked_mul(es.max(4))?, &d);
        self.arch
            .dma
            .program_cycles
            .checked_add(setup)?
            .checked_add(body)?
            .checked_add(lat)
    }

    /// [`Machine::check_trial_bound`], for a batch's callers.
    pub(crate) fn trial_check(&self) -> crate::error::Result<()> {
        self.check_trial_bound()
    }
}

impl Batch<'_> {
    /// `wait_vpu(p, until)`: the part VPU `p` sat idle waiting for DMA data is DMA
    /// stall, the rest compute.
    #[inline(always)]
    fn wait_vpu(&mut self, p: usize, until: u64) {
        if until > self.host {
            self.select(p);
            let w = until - self.host;
            let dma = w.min(self.idle);
            self.idle -= dma;
            self.comp += w - dma;
            self.stall += dma;
            self.host = until;
        }
    }

    /// `dma_in` of one row: `cols` elements of `es` bytes, `col_stride` bytes apart from
    /// byte `addr`, into register `reg` of VPU `p` (all inside that register).
    #[inline(always)]
    pub(crate) fn dma_in_row(
        &mut self,
        p: usize,
        reg: usize,
        addr: usize,
        cols: usize,
        es: usize,
        col_stride: usize,
    ) {
        // `program_dma`: wait for the channel (as for its VPU while it waits for one),
        // then program it.
        let until = self.t.dma_vpu_wait.min(self.t.dma_t);
        self.wait_vpu(self.t.dma_vpu, until);
        if self.t.dma_t > self.host {
            self.stall += self.t.dma_t - self.host;
            self.host = self.t.dma_t;
        }
        let pc = self.arch.dma.program_cycles;
        self.host += pc;
        self.control += pc;
        self.t.ctr.descriptors += 1;
        let at = p * self.t.vregs + reg;
        let rt = self.t.regs[at];
        let start = self.host.max(self.t.dma_t).max(rt.avail).max(rt.free);
        self.t.dma_vpu_wait = start;
        self.t.dma_vpu = p;
        let s0 = self.cache.stats;
        self.cache.touch_row(addr, cols, col_stride, es, false);
        let d = self.cache.stats.minus(&s0);
        let (setup, body, lat) =
            burst_parts(self.arch, self.cache.line_bytes(), cols * es.max(4), &d);
        let dur = setup + body + lat;
        let end = start + dur;
        self.t.dma_t = end;
        self.dma_busy += dur;
        self.t.ctr.dma_bytes += (cols * es) as u64;
        let r = &mut self.t.regs[at];
        r.avail = end;
        r.dma = true;
        r.free = end;
    }
}
