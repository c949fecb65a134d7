//! A run of vector instructions and host loop steps (a 2-D conv's slides and MACs for
//! one input channel) scheduled with the host clock and the counters in locals: the
//! same schedule, counters and register times as one [`Machine::issue`] per instruction
//! and one [`Machine::host_loop`] per step, in order, without a call, a saturation check
//! and a state load and store per instruction. The caller checks once, with
//! [`Machine::batch`], that no time can saturate over the whole run.

use super::{Machine, Timing};
use crate::arch::Arch;
use crate::cache::Cache;

/// The timing side of a batch (see the module comment); [`Batch::end`] writes it back.
/// The clocks and queue position of one VPU at a time (`cur`) live in locals too.
pub(crate) struct Batch<'a> {
    pub(super) t: &'a mut Timing,
    /// For DMA bursts in the batch (`machine/batch_dma.rs`).
    pub(super) cache: &'a mut Cache,
    pub(super) arch: &'a Arch,
    pub(super) dma_busy: u64,
    pub(super) ic: u64,
    loop_c: u64,
    pub(super) host: u64,
    pub(super) control: u64,
    pub(super) comp: u64,
    pub(super) stall: u64,
    pub(super) instrs: u64,
    pub(super) busy: u64,
    pub(super) cur: usize,
    pub(super) vt: u64,
    pub(super) idle: u64,
    pub(super) next: usize,
    pub(super) full: bool,
}

/// A batch and what its values need: the register files and the memory (none on a
/// timing-only copy).
#[allow(clippy::type_complexity)]
pub(crate) type BatchParts<'a> = (
    Option<Batch<'a>>,
    Option<(&'a mut [Vec<i32>], &'a mut [u8])>,
);

impl Machine {
    /// A batch of at most `instrs` vector instructions of at most `cycles` each and
    /// `loops` host loop steps, with the VRF (the data side) beside it; `None` for the
    /// batch when this machine runs data-only (no timing) and `Err(())` when a time
    /// could saturate (the caller then issues one by one, which saturates exactly).
    #[allow(clippy::type_complexity)]
    pub(crate) fn batch(
        &mut self,
        instrs: u64,
        cycles: u64,
        loops: u64,
    ) -> Result<(Option<Batch<'_>>, Option<&mut [Vec<i32>]>), ()> {
        let (b, data) = self.batch_mem(instrs, cycles, loops)?;
        Ok((b, data.map(|(f, _)| f)))
    }

    /// [`Machine::batch`] with the memory beside the VRF; a DMA burst counts as one of
    /// the `instrs`, its `cycles` covering the host's programming and the channel time.
    pub(crate) fn batch_mem(
        &mut self,
        instrs: u64,
        cycles: u64,
        loops: u64,
    ) -> Result<BatchParts<'_>, ()> {
        if self.data_only {
            return Ok((None, Some((&mut self.vrf[..], &mut self.mem[..]))));
        }
        let ic = self.arch.host.issue_cycles;
        let loop_c = self.arch.host.loop_cycles;
        // Every time the batch reads (host, queue starts, register times) is at most
        // the latest clock (register and queue times were ends of instructions or of
        // DMA bursts, and the clocks never go back); each instruction moves a time by
        // at most `ic + cycles`, each loop step by `loop_c`. Below this bound no time
        // saturates, so no per-instruction check is needed.
        let t = &self.t;
        let latest = self.finish_time();
        let fits = !t.overflow
            && ic
                .checked_add(cycles)
                .and_then(|per| per.checked_mul(instrs))
                .and_then(|g| g.checked_add(loop_c.checked_mul(loops)?))
                .and_then(|g| g.checked_add(latest))
                .is_some_and(|e| e < u64::MAX);
        if !fits {
            return Err(());
        }
        let host = self.t.host_t;
        let data = self
            .timing_only
            .is_none()
            .then_some((&mut self.vrf[..], &mut self.mem[..]));
        let t = &mut self.t;
        let (vt, idle, next, full) = (t.vpu_t[0], t.dma_idle[0], t.queue.next[0], t.queue.full[0]);
        let b = Batch {
            t,
            cache: &mut self.cache,
            arch: &self.arch,
            dma_busy: 0,
            ic,
            loop_c,
            host,
            control: 0,
            comp: 0,
            stall: 0,
            instrs: 0,
            busy: 0,
            cur: 0,
            vt,
            idle,
            next,
            full,
        };
        Ok((Some(b), data))
    }
}

impl Batch<'_> {
    /// Keep VPU `p`'s clocks and queue position in the locals.
    #[inline(always)]
    pub(super) fn select(&mut self, p: usize) {
        if p != self.cur {
            self.store();
            let t = &*self.t;
            self.cur = p;
            (self.vt, self.idle) = (t.vpu_t[p], t.dma_idle[p]);
            (self.next, self.full) = (t.queue.next[p], t.queue.full[p]);
        }
    }

    pub(super) fn store(&mut self) {
        let (t, p) = (&mut *self.t, self.cur);
        (t.vpu_t[p], t.dma_idle[p]) = (self.vt, self.idle);
        (t.queue.next[p], t.queue.full[p]) = (self.next, self.full);
    }

    /// Reload the current VPU's locals after the state was written directly.
    pub(super) fn reload(&mut self) {
        let (t, p) = (&*self.t, self.cur);
        (self.vt, self.idle) = (t.vpu_t[p], t.dma_idle[p]);
        (self.next, self.full) = (t.queue.next[p], t.queue.full[p]);
    }

    /// `issue(p, &[src], Some(dst), cycles)`, also for an instruction that reads `dst`
    /// (`vmacc.vx`: `issue(p, &[dst, src], Some(dst), cycles)` schedules the same).
    #[inline(always)]
    pub(crate) fn op(&mut self, p: usize, src: usize, dst: usize, cycles: u64) {
        self.op_impl(p, Some(src), dst, cycles);
    }

    /// `issue(p, &[], Some(dst), cycles)` (`vmv.v.x`).
    #[inline(always)]
    pub(crate) fn op_dst(&mut self, p: usize, dst: usize, cycles: u64) {
        self.op_impl(p, None, dst, cycles);
    }

    #[inline(always)]
    fn op_impl(&mut self, p: usize, src: Option<usize>, dst: usize, cycles: u64) {
        self.select(p);
        // `host(issue_cycles)`: control time.
        self.host += self.ic;
        self.control += self.ic;
        let t = &mut *self.t;
        let slot = p * t.queue.depth + self.next;
        // A full queue: wait for its oldest instruction to start (`wait_vpu`).
        if self.full {
            let s = t.queue.starts[slot];
            if s > self.host {
                let w = s - self.host;
                let dma = w.min(self.idle);
                self.idle -= dma;
                self.comp += w - dma;
                self.stall += dma;
                self.host = s;
            }
        }
        let base = p * t.vregs;
        let d = t.regs[base + dst];
        let mut ready = self.host.max(self.vt);
        let mut start = ready;
        if let Some(src) = src {
            let s = t.regs[base + src];
            if s.dma {
                start = start.max(s.avail);
            } else {
                ready = ready.max(s.avail);
            }
        }
        if d.dma {
            start = start.max(d.avail);
        } else {
            ready = ready.max(d.avail);
        }
        ready = ready.max(d.free);
        start = start.max(ready);
        self.idle = self.idle.saturating_add(start - ready);
        let end = start + cycles;
        self.vt = end;
        if let Some(src) = src {
            let r = &mut t.regs[base + src];
            r.free = r.free.max(end);
        }
        let r = &mut t.regs[base + dst];
        r.avail = end;
        r.dma = false;
        r.free = r.free.max(end);
        t.queue.starts[slot] = start;
        self.next += 1;
        if self.next == t.queue.depth {
            self.next = 0;
            self.full = true;
        }
        self.instrs += 1;
        self.busy = self.busy.saturating_add(cycles);
    }

    /// `sync_read(p, reg)` with the read's cost `cycles` (`xvmv.x.s`) and the host's
    /// `step` cycles after it (`scalar_step_cycles`): the host waits for the result.
    #[inline(always)]
    pub(crate) fn sync_read(&mut self, p: usize, reg: usize, cycles: u64, step: u64) {
        self.select(p);
        self.host += self.ic;
        self.control += self.ic;
        let t = &mut *self.t;
        let slot = p * t.queue.depth + self.next;
        if self.full {
            let s = t.queue.starts[slot];
            if s > self.host {
                let w = s - self.host;
                let dma = w.min(self.idle);
                self.idle -= dma;
                self.comp += w - dma;
                self.stall += dma;
                self.host = s;
            }
        }
        let r = &mut t.regs[p * t.vregs + reg];
        let mut ready = self.host.max(self.vt);
        let mut start = ready;
        if r.dma {
            start = start.max(r.avail);
        } else {
            ready = ready.max(r.avail);
        }
        start = start.max(ready);
        self.idle = self.idle.saturating_add(start - ready);
        let end = start + cycles;
        self.vt = end;
        r.free = r.free.max(end);
        t.queue.starts[slot] = start;
        self.next += 1;
        if self.next == t.queue.depth {
            self.next = 0;
            self.full = true;
        }
        self.instrs += 1;
        self.busy = self.busy.saturating_add(cycles);
        // `wait_vpu(p, end)`: the part this VPU sat waiting for DMA data is DMA stall.
        if end > self.host {
            let w = end - self.host;
            let dma = w.min(self.idle);
            self.idle -= dma;
            self.comp += w - dma;
            self.stall += dma;
            self.host = end;
        }
        self.host += step;
        self.control += step;
    }

    /// `host_loop(1)`.
    #[inline(always)]
    pub(crate) fn host_loop(&mut self) {
        self.host += self.loop_c;
        self.control += self.loop_c;
    }

    /// Write the clock and the counters back.
    pub(crate) fn end(mut self) {
        self.store();
        let t = self.t;
        t.host_t = self.host;
        t.ctr.host_control += self.control;
        t.ctr.compute_wait += self.comp;
        t.ctr.dma_stall += self.stall;
        t.ctr.vec_instrs += self.instrs;
        // One saturating add for the batch's saturating adds (all non-negative).
        match t.ctr.vpu_busy.checked_add(self.busy) {
            Some(s) if s < u64::MAX => t.ctr.vpu_busy = s,
            _ => {
                t.overflow = true;
                t.ctr.vpu_busy = u64::MAX;
            }
        }
        match t.ctr.dma_busy.checked_add(self.dma_busy) {
            Some(s) if s < u64::MAX => t.ctr.dma_busy = s,
            _ => {
                t.overflow = true;
                t.ctr.dma_busy = u64::MAX;
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use crate::arch::Arch;
    use crate::machine::{Elem, Machine, Xfer};

    fn setup(depth: usize) -> Machine {
        setup_after(depth, 0)
    }

    /// A state with DMA-written and VPU-written registers and a short queue that fills,
    /// every time in it `delay` host cycles later than with `delay` 0.
    pub(in crate::machine) fn setup_after(depth: usize, delay: u64) -> Machine {
        let mut arch = Arch::default();
        arch.vpu.queue_depth = depth;
        arch.vpus = 2;
        let mut m = Machine::new(&arch).unwrap();
        m.host(delay);
        let v = m.vlen;
        let x = m.put(Elem::U8, &vec![3; 4 * v]);
        m.dma_in(&Xfer::rows(0, 0, v, x, Elem::U8, 3, v, v))
            .unwrap();
        m.dma_in(&Xfer::rows(1, 0, v, x, Elem::U8, 2, v, v))
            .unwrap();
        m.vmv_vx(0, 21, 1, v);
        m.vslidedown(0, 19, 1, 1, v);
        m
    }

    #[test]
    fn a_batch_schedules_as_one_issue_per_instruction() {
        for depth in [1, 2, 3, 32] {
            let (mut a, mut b) = (setup(depth), setup(depth));
            // (vpu, src, dst, cycles); dst None: a read of src by the host (xvmv.x.s
            // then 33 host cycles); no op: a host loop step.
            let ops = [
                Some((0, 0, Some(19), 4)),
                Some((0, 19, Some(21), 7)),
                Some((1, 0, Some(22), 7)),
                None,
                Some((0, 1, Some(20), 4)),
                Some((0, 20, Some(21), 7)),
                Some((0, 20, Some(22), 7)),
                Some((1, 1, Some(1), 3)),
                Some((0, 0, None, 2)),
                Some((0, 0, None, 2)),
                None,
                Some((0, 2, Some(19), 4)),
                Some((0, 19, Some(23), 9)),
                Some((1, 1, None, 2)),
                Some((0, 23, Some(23), 9)),
            ];
            let (bt, _) = a.batch(ops.len() as u64, 9 + 33, 2).unwrap();
            let mut bt = bt.unwrap();
            for op in ops {
                match op {
                    Some((p, s, Some(d), c)) => bt.op(p, s, d, c),
                    Some((p, s, None, c)) => bt.sync_read(p, s, c, 33),
                    None => bt.host_loop(),
                }
            }
            bt.end();
            b.arch.host.scalar_step_cycles = 33;
            b.arch.vpu.cycles.mv_x_s = 2.0;
            for op in ops {
                match op {
                    Some((p, s, Some(d), c)) => {
                        b.issue(p, &[d, s], Some(d), c);
                    }
                    Some((p, s, None, _)) => {
                        b.sync_read(p, s);
                    }
                    None => b.host_loop(1),
                }
            }
            assert_eq!(a.counters(), b.counters());
            assert_eq!((a.now(), a.finish_time()), (b.now(), b.finish_time()));
            // Later instructions and transfers see the same register times.
            for p in 0..2 {
                for r in [0, 1, 2, 19, 20, 21, 22, 23] {
                    assert_eq!(a.issue(p, &[r], Some(25), 1), b.issue(p, &[r], Some(25), 1));
                    assert_eq!(a.issue(p, &[26], Some(r), 1), b.issue(p, &[26], Some(r), 1));
                }
            }
            let v = a.vlen;
            a.dma_in(&Xfer::row(0, 19, 0, v, 0, Elem::U8, v)).unwrap();
            b.dma_in(&Xfer::row(0, 19, 0, v, 0, Elem::U8, v)).unwrap();
            assert_eq!(a.counters(), b.counters());
            assert_eq!((a.now(), a.finish_time()), (b.now(), b.finish_time()));
        }
    }

    #[test]
    fn a_batch_with_bursts_schedules_as_one_call_each() {
        for depth in [1, 3, 32] {
            let (mut a, mut b) = (setup(depth), setup(depth));
            let v = a.vlen;
            let x = a.put(Elem::U8, &vec![5; 64 * v]);
            b.put(Elem::U8, &vec![5; 64 * v]);
            // (vpu, reg, first byte, cols, byte stride); `None`: vmv.v.x to V19 of VPU
            // 0, vadd.vx on V20 of VPU 1, then MACs into V21/V22 from V19 of VPU 0.
            let bursts = [
                Some((0, 19, 0, v / 2, 2)),
                None,
                Some((1, 20, 7, v / 4, 3)),
                Some((0, 19, 200, v, 1)),
                None,
                Some((1, 20, 9000, 3, 200)),
                None,
                Some((0, 19, 40 * v, v / 2, 2)),
                Some((0, 20, 40 * v + 1, v / 2, 2)),
            ];
            let burst = a.burst_bound(v, 1, 200).unwrap();
            let (bt, _) = a.batch_mem(6 * bursts.len() as u64, burst + 9, 0).unwrap();
            let mut bt = bt.unwrap();
            for s in bursts {
                match s {
                    Some((p, r, at, n, st)) => bt.dma_in_row(p, r, x as usize + at, n, 1, st),
                    None => {
                        bt.op_dst(0, 19, 3);
                        bt.op(1, 20, 20, 4);
                        bt.op(0, 19, 21, 9);
                        bt.op(0, 19, 22, 9);
                    }
                }
            }
            bt.end();
            for s in bursts {
                match s {
                    Some((p, r, at, n, st)) => b
                        .dma_in(&Xfer {
                            vpu: p,
                            addr: x + at as u64,
                            elem: Elem::U8,
                            rows: 1,
                            cols: n,
                            col_stride: st,
                            row_stride: 0,
                            vrf_off: r * v,
                            vrf_row_stride: v,
                        })
                        .unwrap(),
                    None => {
                        b.issue(0, &[], Some(19), 3);
                        b.issue(1, &[20], Some(20), 4);
                        b.issue(0, &[21, 19], Some(21), 9);
                        b.issue(0, &[22, 19], Some(22), 9);
                    }
                }
            }
            assert_eq!(a.counters(), b.counters());
            assert_eq!((a.now(), a.finish_time()), (b.now(), b.finish_time()));
            for p in 0..2 {
                for r in [19, 20, 21, 22] {
                    assert_eq!(a.issue(p, &[r], Some(25), 1), b.issue(p, &[r], Some(25), 1));
                    assert_eq!(a.issue(p, &[26], Some(r), 1), b.issue(p, &[26], Some(r), 1));
                }
            }
            a.dma_in(&Xfer::row(0, 19, 0, v, 0, Elem::U8, v)).unwrap();
            b.dma_in(&Xfer::row(0, 19, 0, v, 0, Elem::U8, v)).unwrap();
            assert_eq!(a.counters(), b.counters());
            assert_eq!((a.now(), a.finish_time()), (b.now(), b.finish_time()));
        }
    }
}
