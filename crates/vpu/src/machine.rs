//! The simulated system: host timeline, VPUs with their VRFs, one DMA channel through
//! the cache, and a flat off-chip memory holding real bytes.
//!
//! Timing is event-based on three resources. The host issues everything in program
//! order; VPUs execute their instructions in order; the single DMA channel runs one
//! descriptor at a time. Per-register "available" (last write done) and "free" (last
//! read done) times give RAW/WAR/WAW hazards between DMA and VPU, so a kernel overlaps
//! transfers with compute exactly when its register allocation allows it (e.g. the
//! double-buffered vector-matrix kernel) and not otherwise. Every advance of the host
//! clock is attributed to host control, waiting for a VPU (compute) or waiting for the
//! DMA (DMA stall); the three sum to the total cycle count.

use crate::arch::Arch;
use crate::cache::{Cache, CacheStats};
use crate::error::{Result, VpuError};
use serde::Serialize;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

mod batch;
mod batch_dma;
mod batch_memo;
mod issue_each;

pub(crate) use batch::Batch;
pub(crate) use batch_memo::OpsMemo;

/// Element type of a memory operand moved by the DMA (the DMA widens to or narrows from
/// the VRF's 32-bit elements, like the X-HEEP DMA's data-type conversion [unverified]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Elem {
    U8,
    I8,
    I32,
}

impl Elem {
    pub fn size(self) -> usize {
        match self {
            Elem::U8 | Elem::I8 => 1,
            Elem::I32 => 4,
        }
    }
    pub fn range(self) -> (i32, i32) {
        match self {
            Elem::U8 => (0, 255),
            Elem::I8 => (-128, 127),
            Elem::I32 => (i32::MIN, i32::MAX),
        }
    }
}

/// A 2-D DMA burst: `rows` x `cols` elements from memory at `addr` (byte strides) to/from
/// VRF of `vpu` at flat element `vrf_off` (rows `vrf_row_stride` elements apart).
#[derive(Clone, Copy, Debug)]
pub struct Xfer {
    pub vpu: usize,
    pub addr: u64,
    pub elem: Elem,
    pub rows: usize,
    pub cols: usize,
    pub col_stride: usize,
    pub row_stride: usize,
    pub vrf_off: usize,
    pub vrf_row_stride: usize,
}

impl Xfer {
    /// Contiguous 1-D burst of `n` elements into register `reg` at element `at`.
    pub fn row(
        vpu: usize,
        reg: usize,
        at: usize,
        vlen: usize,
        addr: u64,
        elem: Elem,
        n: usize,
    ) -> Xfer {
        Xfer {
            vpu,
            addr,
            elem,
            rows: 1,
            cols: n,
            col_stride: elem.size(),
            row_stride: 0,
            vrf_off: reg * vlen + at,
            vrf_row_stride: vlen,
        }
    }
    /// `rows` memory rows (`row_stride` bytes apart) into consecutive registers from `reg`.
    pub fn rows(
        vpu: usize,
        reg: usize,
        vlen: usize,
        addr: u64,
        elem: Elem,
        rows: usize,
        cols: usize,
        row_stride: usize,
    ) -> Xfer {
        Xfer {
            vpu,
            addr,
            elem,
            rows,
            cols,
            col_stride: elem.size(),
            row_stride,
            vrf_off: reg * vlen,
            vrf_row_stride: vlen,
        }
    }
}

/// Counter snapshot; differences of two snapshots describe one kernel.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Counters {
    pub host_control: u64,
    pub compute_wait: u64,
    pub dma_stall: u64,
    pub vec_instrs: u64,
    pub descriptors: u64,
    /// Bytes moved by the DMA on the memory side (through the cache).
    pub dma_bytes: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    /// Cycles any VPU was busy (sum over VPUs) and the DMA channel was busy.
    pub vpu_busy: u64,
    pub dma_busy: u64,
}

/// Result of one simulated kernel or layer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Stats {
    pub cycles: u64,
    pub compute_cycles: u64,
    pub dma_stall_cycles: u64,
    pub host_cycles: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    pub offchip_bytes: u64,
    pub dma_bytes: u64,
    pub descriptors: u64,
    pub vec_instrs: u64,
    pub vpu_busy: u64,
    pub dma_busy: u64,
}

impl Stats {
    pub fn add(&mut self, o: &Stats) {
        self.cycles = self.cycles.saturating_add(o.cycles);
        self.compute_cycles = self.compute_cycles.saturating_add(o.compute_cycles);
        self.dma_stall_cycles = self.dma_stall_cycles.saturating_add(o.dma_stall_cycles);
        self.host_cycles = self.host_cycles.saturating_add(o.host_cycles);
        self.hits = self.hits.saturating_add(o.hits);
        self.misses = self.misses.saturating_add(o.misses);
        self.evictions = self.evictions.saturating_add(o.evictions);
        self.offchip_bytes = self.offchip_bytes.saturating_add(o.offchip_bytes);
        self.dma_bytes = self.dma_bytes.saturating_add(o.dma_bytes);
        self.descriptors = self.descriptors.saturating_add(o.descriptors);
        self.vec_instrs = self.vec_instrs.saturating_add(o.vec_instrs);
        self.vpu_busy = self.vpu_busy.saturating_add(o.vpu_busy);
        self.dma_busy = self.dma_busy.saturating_add(o.dma_busy);
    }
}

/// When a register's last write is done (`avail`) and its last read is done (`free`).
#[derive(Clone, Copy, Default)]
struct RegTime {
    avail: u64,
    free: u64,
    /// Whether the last write was a DMA transfer.
    dma: bool,
}

/// Each VPU's instruction queue, as the start times of its last `depth` instructions
/// (a ring per VPU). Starts never decrease on a VPU and the host clock never goes back,
/// so the instructions still queued (started after the host's clock) are always the
/// newest ones: the queue is full exactly when the oldest of the last `depth` has not
/// started yet, and then the host waits for that one. Equal to a FIFO that drops every
/// started entry before each issue, without the popping.
#[derive(Clone)]
struct IssueQueues {
    depth: usize,
    starts: Vec<u64>,
    /// Per VPU: the ring slot the next instruction takes (its oldest entry's).
    next: Vec<usize>,
    /// Per VPU: `depth` instructions were issued since the queue was last emptied.
    full: Vec<bool>,
}

impl IssueQueues {
    fn new(vpus: usize, depth: usize) -> IssueQueues {
        IssueQueues {
            depth,
            starts: vec![0; vpus * depth],
            next: vec![0; vpus],
            full: vec![false; vpus],
        }
    }
    /// The start the host must wait for before issuing to VPU `p` (its queue is full
    /// and the oldest entry has not started by `now`).
    #[inline]
    fn blocking(&self, p: usize, now: u64) -> Option<u64> {
        if self.full[p] {
            let s = self.starts[p * self.depth + self.next[p]];
            (s > now).then_some(s)
        } else {
            None
        }
    }
    #[inline]
    fn push(&mut self, p: usize, start: u64) {
        let n = self.next[p];
        self.starts[p * self.depth + n] = start;
        if n + 1 == self.depth {
            self.next[p] = 0;
            self.full[p] = true;
        } else {
            self.next[p] = n + 1;
        }
    }
    fn clear(&mut self) {
        self.next.iter_mut().for_each(|n| *n = 0);
        self.full.iter_mut().for_each(|f| *f = false);
    }
}

#[derive(Clone, Copy)]
enum Wait {
    Control,
    Compute,
    Dma,
}

/// The timing state: clocks, register hazards, counters. A [`Snapshot`] copies it.
#[derive(Clone)]
struct Timing {
    host_t: u64,
    dma_t: u64,
    vpu_t: Vec<u64>,
    queue: IssueQueues,
    /// Per (VPU, register), at `p * vregs + r`: one flat table, one lookup per operand.
    regs: Vec<RegTime>,
    vregs: usize,
    /// Per VPU: idle cycles spent waiting for DMA data not yet charged to the host.
    dma_idle: Vec<u64>,
    /// The in-flight descriptor waits for VPU `dma_vpu` (its result to write out, or its
    /// reads of the target register to finish) until this time: a host waiting on the
    /// channel before it waits for that VPU, not for the DMA.
    dma_vpu_wait: u64,
    dma_vpu: usize,
    ctr: Counters,
    /// Set when a time or counter would have passed `u64::MAX` (it saturates instead);
    /// [`Machine::checked_stats_since`] turns it into [`VpuError::CycleOverflow`].
    overflow: bool,
}

/// Everything a trial kernel run changes: timing, registers, cache, the memory allocated
/// since, and the memory ranges the caller names (the kernel's output; a kernel writes
/// nothing else below the snapshot's end).
pub struct Snapshot {
    t: Timing,
    cache: Cache,
    vrf: Vec<Vec<i32>>,
    mem_len: usize,
    kept: Vec<(usize, Vec<u8>)>,
}

/// The simulated system. `Clone` gives an independent copy (memory included), which is
/// how `auto`'s dataflow trials run side by side.
#[derive(Clone)]
pub struct Machine {
    pub arch: Arch,
    pub vlen: usize,
    pub mem: Vec<u8>,
    pub vrf: Vec<Vec<i32>>,
    pub cache: Cache,
    t: Timing,
    /// Set on the copies `auto`'s dataflow trials run on (see [`TrialBound`]).
    bound: Option<TrialBound>,
    /// `Some(bytes)` on a timing-only copy ([`Machine::timing_copy_into`]): `mem` and
    /// `vrf` hold no data and this is the simulated memory's size.
    timing_only: Option<usize>,
    /// Values only, no timing model ([`Machine::set_data_only`]).
    data_only: bool,
}

/// The shortest time a finished trial of the same kernel call took, shared by its
/// trials: one whose clock has passed it cannot win, so its next DMA stops it with
/// [`VpuError::TrialLost`]. The clock [`Machine::finish_time`] never goes back, so the
/// stopped trial would have ended later than that finished one: which trial wins does
/// not depend on when (or on which thread) the trials ran. A kernel that counts the work
/// it has left stops a trial earlier, once its clocks plus that work pass the bound
/// ([`Machine::check_floor`]).
#[derive(Clone, Debug)]
pub struct TrialBound {
    best: Arc<AtomicU64>,
    t0: u64,
}

impl TrialBound {
    /// A bound shared by trials that all start at clock `t0`.
    pub fn new(t0: u64) -> TrialBound {
        TrialBound {
            best: Arc::new(AtomicU64::new(u64::MAX)),
            t0,
        }
    }
    /// A trial finished in `t` cycles (from `t0`).
    pub fn finished(&self, t: u64) {
        self.best.fetch_min(t, Ordering::Relaxed);
    }
}

impl Machine {
    pub fn new(arch: &Arch) -> Result<Machine> {
        arch.validate()?;
        let vlen = arch.vlen();
        let p = arch.vpus;
        let nregs = arch.vpu.vregs;
        Ok(Machine {
            arch: arch.clone(),
            vlen,
            mem: Vec::new(),
            vrf: vec![vec![0; nregs * vlen]; p],
            cache: Cache::new(&arch.cache),
            t: Timing {
                host_t: 0,
                dma_t: 0,
                vpu_t: vec![0; p],
                queue: IssueQueues::new(p, arch.vpu.queue_depth),
                regs: vec![RegTime::default(); p * nregs],
                vregs: nregs,
                dma_idle: vec![0; p],
                dma_vpu_wait: 0,
                dma_vpu: 0,
                ctr: Counters::default(),
                overflow: false,
            },
            bound: None,
            timing_only: None,
            data_only: false,
        })
    }

    /// A machine without registers, memory or cache lines: what stands in while a trial
    /// owns the real one (never simulated on).
    pub(crate) fn empty(arch: &Arch) -> Machine {
        Machine {
            arch: arch.clone(),
            vlen: 0,
            mem: Vec::new(),
            vrf: Vec::new(),
            cache: Cache::new(&crate::arch::CacheParams {
                size_bytes: 0,
                ways: 1,
                line_bytes: 1,
            }),
            t: Timing {
                host_t: 0,
                dma_t: 0,
                vpu_t: Vec::new(),
                queue: IssueQueues::new(0, 1),
                regs: Vec::new(),
                vregs: 0,
                dma_idle: Vec::new(),
                dma_vpu_wait: 0,
                dma_vpu: 0,
                ctr: Counters::default(),
                overflow: false,
            },
            bound: None,
            timing_only: None,
            data_only: false,
        }
    }

    /// Make `dst` a timing-only copy of this machine: the same clocks, register times,
    /// counters, cache tags and memory size, but no register or memory data. It runs any
    /// kernel to the same cycles, counters and cache state as this machine would (no
    /// simulated kernel's timing depends on data values: no kernel branches on a value,
    /// and the cache and DMA depend on addresses only), skipping the arithmetic and the
    /// data moves; values it reads back are 0. `auto`'s losing trials need no data.
    pub(crate) fn timing_copy_into(&self, dst: &mut Machine) {
        dst.arch.clone_from(&self.arch);
        dst.vlen = self.vlen;
        dst.mem.clear();
        dst.vrf.clear();
        dst.cache.clone_from(&self.cache);
        dst.t.clone_from(&self.t);
        dst.bound.clone_from(&self.bound);
        dst.timing_only = Some(self.mem_size());
        dst.data_only = false;
    }

    /// Compute values only: vector instructions, host cycles and DMA bursts skip the
    /// timing model (clocks, register times, cache, counters), which is left stale until
    /// [`Machine::adopt_timing`] replaces it. With a timing-only copy running the same
    /// kernel calls beside it, the two halves of one run take two threads.
    pub(crate) fn set_data_only(&mut self, on: bool) {
        self.data_only = on;
    }

    /// After data-only kernel calls: take the timing state of `t`, a timing-only copy of
    /// this machine (made before those calls) that ran the same calls. Values and timing
    /// are then what running the calls on this machine would have left (no kernel's
    /// timing depends on a value; see [`Machine::timing_copy_into`]).
    pub(crate) fn adopt_timing(&mut self, t: &Machine) -> Result<()> {
        if t.timing_only != Some(self.mem.len()) {
            return Err(VpuError::Other(format!(
                "a timing-only run allocated {:?} bytes, its data-only twin {} (a pimkit-vpu bug: please report)",
                t.timing_only,
                self.mem.len()
            )));
        }
        self.t.clone_from(&t.t);
        self.cache.clone_from(&t.cache);
        Ok(())
    }

    /// Whether this machine computes values (false on a timing-only copy).
    #[inline]
    pub(crate) fn has_data(&self) -> bool {
        self.timing_only.is_none()
    }

    /// Whether bytes `addr..addr + len` lie inside the simulated memory.
    pub(crate) fn in_mem(&self, addr: u64, len: usize) -> bool {
        self.check(addr, len).is_ok()
    }

    /// The simulated memory's size in bytes.
    fn mem_size(&self) -> usize {
        self.timing_only.unwrap_or(self.mem.len())
    }

    /// Stop this copy's run (at its next DMA) once its clock passes `b`'s best finished
    /// trial; `None` runs to the end.
    pub fn set_trial_bound(&mut self, b: Option<TrialBound>) {
        self.bound = b;
    }

    /// [`VpuError::TrialLost`] when a trial bound is set and this run is already slower.
    fn check_trial_bound(&self) -> Result<()> {
        match &self.bound {
            Some(b) if self.finish_time() - b.t0 > b.best.load(Ordering::Relaxed) => {
                Err(VpuError::TrialLost)
            }
            _ => Ok(()),
        }
    }

    /// [`VpuError::TrialLost`] when a trial bound is set and this run cannot finish in
    /// time: the rest of the call still costs the host at least `host` control cycles
    /// and VPU `q` at least `vpu[q]` busy cycles (a kernel's count of what it has left,
    /// e.g. `kernels/conv2d/floor.rs`). The host clock moves by at least its control
    /// cycles, and an instruction starts no earlier than its VPU's clock, so the
    /// finish time is at least each clock plus its remaining work.
    pub(crate) fn check_floor(&self, host: u64, vpu: &[u64]) -> Result<()> {
        let Some(b) = &self.bound else {
            return Ok(());
        };
        let best = b.best.load(Ordering::Relaxed);
        if best == u64::MAX {
            return Ok(());
        }
        let at_least = vpu
            .iter()
            .zip(&self.t.vpu_t)
            .map(|(&r, &t)| t.saturating_add(r))
            .fold(self.t.host_t.saturating_add(host), u64::max);
        if at_least - b.t0 > best {
            Err(VpuError::TrialLost)
        } else {
            Ok(())
        }
    }

    /// Whether this machine keeps time (not [`Machine::set_data_only`]).
    pub(crate) fn keeps_time(&self) -> bool {
        !self.data_only
    }

    /// The state to roll a trial run back to, with the bytes of `keep` (address, length)
    /// (see [`Snapshot`]).
    pub fn snapshot(&self, keep: &[(u64, usize)]) -> Result<Snapshot> {
        self.need_data()?;
        let mut kept = Vec::with_capacity(keep.len());
        for &(addr, len) in keep {
            let a = self.check(addr, len)?;
            kept.push((a, self.mem[a..a + len].to_vec()));
        }
        Ok(Snapshot {
            t: self.t.clone(),
            cache: self.cache.clone(),
            vrf: self.vrf.clone(),
            mem_len: self.mem.len(),
            kept,
        })
    }

    /// Roll back to `s`: clocks, registers, cache and counters as they were; memory
    /// allocated since (spill buffers, staged constants) is released and the kept
    /// ranges get their bytes back.
    pub fn restore(&mut self, s: Snapshot) {
        self.t = s.t;
        self.cache = s.cache;
        self.vrf = s.vrf;
        self.mem.truncate(s.mem_len);
        for (a, b) in s.kept {
            self.mem[a..a + b.len()].copy_from_slice(&b);
        }
    }

    pub fn vpus(&self) -> usize {
        self.arch.vpus
    }
    pub fn now(&self) -> u64 {
        self.t.host_t
    }

    // ---------------------------------------------------------------- memory
    /// Reserve `bytes` of off-chip memory, 64-byte aligned (zero-filled).
    pub fn alloc(&mut self, bytes: usize) -> u64 {
        let a = self.mem_size().next_multiple_of(64);
        match &mut self.timing_only {
            Some(size) => *size = a + bytes.max(1),
            None => self.mem.resize(a + bytes.max(1), 0),
        }
        a as u64
    }
    fn check(&self, addr: u64, len: usize) -> Result<usize> {
        let a = addr as usize;
        let size = self.mem_size();
        if a.checked_add(len).is_none_or(|e| e > size) {
            return Err(VpuError::Memory { addr, len, size });
        }
        Ok(a)
    }
    /// A data access on a timing-only copy is a simulator bug.
    fn need_data(&self) -> Result<()> {
        match self.timing_only {
            None => Ok(()),
            Some(_) => Err(VpuError::Other(
                "reading data from a timing-only machine (a pimkit-vpu bug)".into(),
            )),
        }
    }
    pub fn put_bytes(&mut self, addr: u64, b: &[u8]) -> Result<()> {
        let a = self.check(addr, b.len())?;
        if self.has_data() {
            self.mem[a..a + b.len()].copy_from_slice(b);
        }
        Ok(())
    }
    /// Allocate and fill with elements of type `elem` (values must be in range).
    pub fn put(&mut self, elem: Elem, v: &[i32]) -> u64 {
        let addr = self.alloc(v.len() * elem.size());
        if self.has_data() {
            let a = addr as usize;
            for (i, &x) in v.iter().enumerate() {
                write_elem(&mut self.mem, a + i * elem.size(), elem, x);
            }
        }
        addr
    }
    pub fn get(&self, addr: u64, elem: Elem, n: usize) -> Result<Vec<i32>> {
        self.need_data()?;
        let a = self.check(addr, n * elem.size())?;
        Ok((0..n)
            .map(|i| read_elem(&self.mem, a + i * elem.size(), elem))
            .collect())
    }

    // ---------------------------------------------------------------- overflow
    /// `a + b`, saturating at `u64::MAX` and remembering that it did (a result of
    /// exactly `u64::MAX` counts too: a saturated f64 -> u64 cast produces it).
    fn sat_add(&mut self, a: u64, b: u64) -> u64 {
        match a.checked_add(b) {
            Some(s) if s < u64::MAX => s,
            _ => {
                self.t.overflow = true;
                u64::MAX
            }
        }
    }
    fn sat_mul(&mut self, a: u64, b: u64) -> u64 {
        match a.checked_mul(b) {
            Some(s) if s < u64::MAX => s,
            _ => {
                self.t.overflow = true;
                u64::MAX
            }
        }
    }
    /// Whether some time or counter saturated: the statistics are then meaningless.
    pub fn overflowed(&self) -> bool {
        self.t.overflow
    }

    // ---------------------------------------------------------------- host clock
    fn wait_until(&mut self, t: u64, why: Wait) {
        if t > self.t.host_t {
            let d = t - self.t.host_t;
            match why {
                Wait::Control => self.t.ctr.host_control += d,
                Wait::Compute => self.t.ctr.compute_wait += d,
                Wait::Dma => self.t.ctr.dma_stall += d,
            }
            self.t.host_t = t;
        }
    }
    /// The host waits for VPU `p` until `t`; the part the VPU itself sat idle waiting
    /// for DMA data counts as DMA stall, the rest as compute.
    fn wait_vpu(&mut self, p: usize, t: u64) {
        if t <= self.t.host_t {
            return;
        }
        let d = t - self.t.host_t;
        let dma = d.min(self.t.dma_idle[p]);
        self.t.dma_idle[p] -= dma;
        let mid = self.t.host_t + (d - dma);
        self.wait_until(mid, Wait::Compute);
        self.wait_until(t, Wait::Dma);
    }

    /// The host waits for the DMA channel to go idle: while the descriptor waits for a
    /// VPU, as for that VPU (compute, or DMA stall where the VPU itself sat waiting for
    /// data); while it transfers, DMA stall.
    fn wait_dma(&mut self) {
        let until = self.t.dma_vpu_wait.min(self.t.dma_t);
        self.wait_vpu(self.t.dma_vpu, until);
        self.wait_until(self.t.dma_t, Wait::Dma);
    }

    /// Host executes `cycles` of scalar control code.
    pub fn host(&mut self, cycles: u64) {
        if self.data_only {
            return;
        }
        let t = self.sat_add(self.t.host_t, cycles);
        self.wait_until(t, Wait::Control);
    }
    /// Host runs `n` loop iterations' worth of control (counter, compare, branch).
    pub fn host_loop(&mut self, n: u64) {
        let c = self.sat_mul(n, self.arch.host.loop_cycles);
        self.host(c);
    }

    /// The host clock [`Machine::finish`] would end at: every VPU and the DMA idle.
    pub fn finish_time(&self) -> u64 {
        let v = self.t.vpu_t.iter().copied().max().unwrap_or(0);
        self.t.host_t.max(v).max(self.t.dma_t)
    }

    /// Wait for every VPU and the DMA channel to go idle.
    pub fn finish(&mut self) {
        let (p, v) = self
            .t
            .vpu_t
            .iter()
            .copied()
            .enumerate()
            .max_by_key(|&(_, t)| t)
            .unwrap_or((0, 0));
        if self.t.dma_t >= v {
            self.wait_vpu(p, v);
            self.wait_dma();
        } else {
            self.wait_dma();
            self.wait_vpu(p, v);
        }
        self.t.queue.clear();
        self.t.dma_idle.iter_mut().for_each(|d| *d = 0);
    }

    /// Wait for everything, then write every dirty cache line back (counted as
    /// evictions) and wait for those transfers at the off-chip bandwidth: how a run ends
    /// when its results must be in memory, e.g. before the next layer starts cold.
    pub fn write_back_all(&mut self) {
        self.finish();
        let lines = self.cache.flush();
        let bytes = lines as f64 * self.cache.line_bytes() as f64;
        let dur = ceil_u64(bytes / self.arch.memory.bandwidth);
        let start = self.t.host_t.max(self.t.dma_t);
        self.t.dma_t = self.sat_add(start, dur);
        self.t.dma_vpu_wait = 0;
        self.t.ctr.dma_busy = self.sat_add(self.t.ctr.dma_busy, dur);
        self.wait_dma();
    }

    pub fn counters(&self) -> Counters {
        let CacheStats {
            hits,
            misses,
            evictions,
        } = self.cache.stats;
        Counters {
            hits,
            misses,
            evictions,
            ..self.t.ctr
        }
    }

    /// [`Machine::stats_since`], or [`VpuError::CycleOverflow`] if any time or counter
    /// saturated: the entry points (run, scalar, network) use this.
    pub fn checked_stats_since(&self, s0: &Counters) -> Result<Stats> {
        if self.t.overflow {
            return Err(VpuError::CycleOverflow);
        }
        Ok(self.stats_since(s0))
    }

    /// Statistics since snapshot `s0` (call [`Machine::finish`] first).
    pub fn stats_since(&self, s0: &Counters) -> Stats {
        let c = self.counters();
        let host = c.host_control - s0.host_control;
        let comp = c.compute_wait - s0.compute_wait;
        let dma = c.dma_stall - s0.dma_stall;
        let misses = c.misses - s0.misses;
        let evictions = c.evictions - s0.evictions;
        Stats {
            cycles: host + comp + dma,
            compute_cycles: comp,
            dma_stall_cycles: dma,
            host_cycles: host,
            hits: c.hits - s0.hits,
            misses,
            evictions,
            offchip_bytes: (misses + evictions) * self.arch.cache.line_bytes as u64,
            dma_bytes: c.dma_bytes - s0.dma_bytes,
            descriptors: c.descriptors - s0.descriptors,
            vec_instrs: c.vec_instrs - s0.vec_instrs,
            vpu_busy: c.vpu_busy - s0.vpu_busy,
            dma_busy: c.dma_busy - s0.dma_busy,
        }
    }

    /// Charge host-side memory traffic of ops the host runs itself (host memory is not
    /// behind the DMA cache, quinn §4.1): only cycles, no cache counters.
    pub fn host_work(&mut self, cycles: u64) {
        self.host(cycles);
    }

    // ---------------------------------------------------------------- VPU issue
    fn regs_of(&self, off: usize, n: usize) -> std::ops::Range<usize> {
        if n == 0 {
            return 0..0;
        }
        let last = off + n - 1;
        // By a shift for the usual power-of-two VLEN (two divisions per DMA otherwise).
        if self.vlen.is_power_of_two() {
            let k = self.vlen.trailing_zeros();
            (off >> k)..(last >> k) + 1
        } else {
            off / self.vlen..last / self.vlen + 1
        }
    }

    /// Issue one vector instruction to VPU `p`: returns its (start, end).
    #[inline]
    pub(crate) fn issue(
        &mut self,
        p: usize,
        srcs: &[usize],
        dst: Option<usize>,
        cycles: u64,
    ) -> (u64, u64) {
        if self.data_only {
            return (0, 0);
        }
        self.host(self.arch.host.issue_cycles);
        if let Some(s) = self.t.queue.blocking(p, self.t.host_t) {
            self.wait_vpu(p, s);
        }
        // Earliest start from compute-side constraints, then from DMA-written operands.
        let t = &mut self.t;
        let regs = &mut t.regs[p * t.vregs..(p + 1) * t.vregs];
        let mut ready = t.host_t.max(t.vpu_t[p]);
        let mut start = ready;
        let mut operand = |r: &RegTime| {
            if r.dma {
                start = start.max(r.avail);
            } else {
                ready = ready.max(r.avail);
            }
        };
        srcs.iter().for_each(|&r| operand(&regs[r]));
        if let Some(d) = dst {
            operand(&regs[d]);
            ready = ready.max(regs[d].free);
        }
        start = start.max(ready);
        t.dma_idle[p] = t.dma_idle[p].saturating_add(start - ready);
        // `sat_add`, inline: the borrows of the register times stay live.
        let end = match start.checked_add(cycles) {
            Some(e) if e < u64::MAX => e,
            _ => {
                t.overflow = true;
                u64::MAX
            }
        };
        t.vpu_t[p] = end;
        for &r in srcs {
            regs[r].free = regs[r].free.max(end);
        }
        if let Some(d) = dst {
            let d = &mut regs[d];
            d.avail = end;
            d.dma = false;
            d.free = d.free.max(end);
        }
        self.t.queue.push(p, start);
        self.t.ctr.vec_instrs += 1;
        self.t.ctr.vpu_busy = self.sat_add(self.t.ctr.vpu_busy, cycles);
        (start, end)
    }

    /// Cycles of an instruction of class cost `cpw` (cycles per word per lane) on `vl` elements.
    #[inline]
    pub(crate) fn vcost(&self, cpw: f64, vl: usize) -> u64 {
        // Bounded by validation (VLEN <= 32768, cpw <= 1e6): no overflow.
        let lanes = self.arch.vpu.lanes;
        // A shift for the usual power-of-two lane count (a division per instruction
        // otherwise shows in profiles); the same quotient.
        let g = if lanes.is_power_of_two() {
            (vl >> lanes.trailing_zeros()) + usize::from(vl & (lanes - 1) != 0)
        } else {
            vl.div_ceil(lanes)
        };
        // vl <= VLEN <= 32768 (every vector instruction slices its registers with it),
        // so g fits in u32 and converts with one instruction, not the u64 sequence.
        debug_assert!(g <= u32::MAX as usize);
        self.arch
            .vpu
            .startup_cycles
            .saturating_add(group_cycles(g as u32, cpw))
    }

    /// The host reads a value produced on VPU `p` (xvmv.x.s): it waits for the result.
    pub(crate) fn sync_read(&mut self, p: usize, reg: usize) -> u64 {
        let c = ceil_u64(self.arch.vpu.cycles.mv_x_s);
        let (_, end) = self.issue(p, &[reg], None, c);
        self.wait_vpu(p, end);
        // Index/address arithmetic and loop control around each broadcast step.
        self.host(self.arch.host.scalar_step_cycles);
        end
    }

    // ---------------------------------------------------------------- DMA
    /// Program and start one DMA burst memory -> VRF.
    pub fn dma_in(&mut self, x: &Xfer) -> Result<()> {
        self.dma(x, false)
    }
    /// Program and start one DMA burst VRF -> memory (narrowing to `x.elem`).
    pub fn dma_out(&mut self, x: &Xfer) -> Result<()> {
        self.dma(x, true)
    }

    fn program_dma(&mut self) {
        // One channel without a descriptor queue: the host waits for it to be free.
        self.wait_dma();
        self.host(self.arch.dma.program_cycles);
        self.t.ctr.descriptors += 1;
    }

    /// Stage a burst between memory and the on-chip SRAM used by the scalar host
    /// (the VRFs as plain memory): same cache and channel timing, no register data;
    /// the host waits for completion (the scalar kernels do not overlap, quinn §5.9).
    pub fn dma_stage(&mut self, x: &Xfer, to_mem: bool) -> Result<()> {
        self.dma_impl(x, to_mem, false)?;
        self.wait_dma();
        Ok(())
    }

    fn dma(&mut self, x: &Xfer, to_mem: bool) -> Result<()> {
        self.dma_impl(x, to_mem, true)
    }

    fn dma_impl(&mut self, x: &Xfer, to_mem: bool, data: bool) -> Result<()> {
        self.check_trial_bound()?;
        let n = x.rows * x.cols;
        if n == 0 {
            return Ok(());
        }
        let es = x.elem.size();
        let last = x.addr as usize + (x.rows - 1) * x.row_stride + (x.cols - 1) * x.col_stride;
        self.check(x.addr, last + es - x.addr as usize)?;
        if !data {
            if self.data_only {
                return Ok(());
            }
            return self.dma_lines_only(x, to_mem);
        }
        let vr_last = x.vrf_off + (x.rows - 1) * x.vrf_row_stride + x.cols - 1;
        if x.vpu >= self.vpus() || vr_last >= self.t.vregs * self.vlen {
            return Err(VpuError::Other(format!(
                "DMA outside the VRF of VPU {} (element {vr_last})",
                x.vpu
            )));
        }
        if self.data_only {
            self.move_data(x, to_mem);
            return Ok(());
        }
        self.program_dma();
        let regs = self.regs_of(x.vrf_off, vr_last + 1 - x.vrf_off);
        let p = x.vpu;
        let mut start = self.t.host_t.max(self.t.dma_t);
        let base = p * self.t.vregs;
        for r in regs.clone() {
            let rt = &self.t.regs[base + r];
            start = start.max(rt.avail);
            if !to_mem {
                start = start.max(rt.free);
            }
        }
        // Any delay past the channel being free comes from a VPU's registers.
        self.t.dma_vpu_wait = start;
        self.t.dma_vpu = p;
        // Data, then the cache lines the burst touches.
        if self.has_data() {
            self.move_data(x, to_mem);
        }
        let d = self.touch_lines(x, to_mem);
        // The VRF side moves one 32-bit element per beat: 8-bit operands widened into
        // (or narrowed from) int32 elements cost a beat per element, not per 4 bytes.
        let end = self.occupy_channel(start, n * es.max(4), &d);
        self.t.ctr.dma_bytes += (n * es) as u64;
        for r in regs {
            let rt = &mut self.t.regs[base + r];
            if to_mem {
                rt.free = rt.free.max(end);
            } else {
                rt.avail = end;
                rt.dma = true;
                rt.free = end;
            }
        }
        Ok(())
    }

    /// The values of burst `x` (checked to lie inside memory and the VRF).
    fn move_data(&mut self, x: &Xfer, to_mem: bool) {
        for r in 0..x.rows {
            let base = x.addr as usize + r * x.row_stride;
            let vbase = x.vrf_off + r * x.vrf_row_stride;
            let v = &mut self.vrf[x.vpu][vbase..vbase + x.cols];
            move_row(&mut self.mem, base, v, x.elem, x.col_stride, to_mem);
        }
    }

    fn dma_lines_only(&mut self, x: &Xfer, to_mem: bool) -> Result<()> {
        self.program_dma();
        let start = self.t.host_t.max(self.t.dma_t);
        self.t.dma_vpu_wait = 0;
        let d = self.touch_lines(x, to_mem);
        let bytes = x.rows * x.cols * x.elem.size();
        self.occupy_channel(start, bytes, &d);
        self.t.ctr.dma_bytes += bytes as u64;
        Ok(())
    }

    /// Access every cache line burst `x` covers (writes when `to_mem`), row by row; the
    /// hits, misses and evictions it caused.
    fn touch_lines(&mut self, x: &Xfer, to_mem: bool) -> CacheStats {
        let s0 = self.cache.stats;
        let es = x.elem.size();
        for r in 0..x.rows {
            let base = x.addr as usize + r * x.row_stride;
            self.cache.touch_row(base, x.cols, x.col_stride, es, to_mem);
        }
        self.cache.stats.minus(&s0)
    }

    /// The channel runs one burst from `start`: set-up, then the slower of its on-chip
    /// side (`onchip_bytes`) and its off-chip lines (`d`), plus the memory latency when a
    /// line missed. Returns the end.
    fn occupy_channel(&mut self, start: u64, onchip_bytes: usize, d: &CacheStats) -> u64 {
        let (setup, body, lat) = burst_parts(&self.arch, self.cache.line_bytes(), onchip_bytes, d);
        let dur = self.sat_add(setup, body);
        let dur = self.sat_add(dur, lat);
        let end = self.sat_add(start, dur);
        self.t.dma_t = end;
        self.t.ctr.dma_busy = self.sat_add(self.t.ctr.dma_busy, dur);
        end
    }

    /// On-chip VRF-to-VRF copy by the DMA (memory mode, no cache traffic).
    pub fn vrf_copy(
        &mut self,
        src_p: usize,
        src_reg: usize,
        dst_p: usize,
        dst_reg: usize,
        n: usize,
    ) {
        let v = self.vlen;
        if self.data_only {
            self.vrf_move(src_p, src_reg * v, dst_p, dst_reg * v, n);
            return;
        }
        self.program_dma();
        let (src, dst) = (
            src_p * self.t.vregs + src_reg,
            dst_p * self.t.vregs + dst_reg,
        );
        let mut start = self.t.host_t.max(self.t.dma_t).max(self.t.regs[src].avail);
        start = start.max(self.t.regs[dst].free).max(self.t.regs[dst].avail);
        // Waiting for the source's result (or the target's readers) is waiting for it.
        self.t.dma_vpu_wait = start;
        self.t.dma_vpu = src_p;
        let end = self.occupy_channel(start, n * 4, &CacheStats::default());
        if self.has_data() {
            self.vrf_move(src_p, src_reg * v, dst_p, dst_reg * v, n);
        }
        self.t.regs[src].free = self.t.regs[src].free.max(end);
        let d = &mut self.t.regs[dst];
        d.avail = end;
        d.dma = true;
        d.free = end;
    }

    /// `n` values from VRF element `src` of VPU `src_p` to element `dst` of `dst_p`.
    fn vrf_move(&mut self, src_p: usize, src: usize, dst_p: usize, dst: usize, n: usize) {
        let tmp: Vec<i32> = self.vrf[src_p][src..src + n].to_vec();
        self.vrf[dst_p][dst..dst + n].copy_from_slice(&tmp);
    }
}

/// The channel time of one burst (see [`Machine::occupy_channel`]): its set-up, the
/// slower of its on-chip side (`onchip_bytes`) and its off-chip lines (`d`), and the
/// memory latency when a line missed.
#[inline]
pub(crate) fn burst_parts(
    arch: &Arch,
    line_bytes: usize,
    onchip_bytes: usize,
    d: &CacheStats,
) -> (u64, u64, u64) {
    let bpc = arch.dma.bytes_per_cycle;
    // A power-of-two whole width (the default 4 B/cycle) divides exactly: the
    // integer ceiling is the float one (the byte count is below 2^53).
    // Tested as a u32 (a wider width takes the float path, to the same result): single
    // conversions and a shift on the path of every burst.
    let whole = bpc as u32;
    let onchip = if f64::from(whole) == bpc && whole.is_power_of_two() {
        (onchip_bytes as u64 + u64::from(whole) - 1) >> whole.trailing_zeros()
    } else {
        ceil_u64(div_exact(onchip_bytes as f64, bpc))
    };
    // No line to move (most bursts hit): 0 cycles, what the division gives.
    let lines = d.misses + d.evictions;
    let offchip = if lines == 0 {
        0
    } else {
        ceil_u64(lines as f64 * line_bytes as f64 / arch.memory.bandwidth)
    };
    let lat = if d.misses > 0 {
        arch.memory.latency_cycles
    } else {
        0
    };
    (arch.dma.setup_cycles, onchip.max(offchip), lat)
}

/// One burst row between memory (from byte `base`) and the register lanes `v`
/// (`v.len()` elements `col_stride` bytes apart; checked to lie inside memory).
#[inline]
pub(crate) fn move_row(
    mem: &mut [u8],
    base: usize,
    v: &mut [i32],
    e: Elem,
    col_stride: usize,
    to_mem: bool,
) {
    let (es, cols) = (e.size(), v.len());
    if col_stride == es {
        // A contiguous run: one conversion loop per element type.
        copy_run(&mut mem[base..base + cols * es], v, e, to_mem);
    } else {
        // Strided: the row's span once, then every `col_stride`-th element without a
        // bounds check per element.
        let span = (cols - 1) * col_stride + es;
        copy_strided(&mut mem[base..base + span], v, e, col_stride, to_mem);
    }
}

/// `x.ceil() as u64` without a libm call (the simulator computes one per instruction):
/// truncation plus one when a fraction was cut off, for 0 <= x < 2^63; anything else
/// (negative, huge, NaN) takes `ceil` itself, so the result is always the same.
#[inline]
pub(crate) fn ceil_u64(x: f64) -> u64 {
    if (0.0..9.2e18).contains(&x) {
        // SAFETY: 0 <= x < 9.2e18 < 2^63, so the truncation fits in i64 (the signed,
        // unchecked conversions are single instructions).
        let t: i64 = unsafe { x.to_int_unchecked() };
        if (t as f64) < x {
            t as u64 + 1
        } else {
            t as u64
        }
    } else {
        x.ceil() as u64
    }
}

/// `ceil(groups * cpw)` for an instruction's word groups at `cpw` cycles each. For a
/// whole `cpw` (every default class cost) the product is an exact integer below 2^53
/// (groups < 2^32, cpw <= 1e6 by validation), so the integer product is the same
/// number, without the float conversions and rounding on the path of every issue.
#[inline]
fn group_cycles(groups: u32, cpw: f64) -> u64 {
    let whole = cpw as u32; // saturating; NaN gives 0
    if f64::from(whole) == cpw && cpw <= 1e6 {
        u64::from(groups) * u64::from(whole)
    } else {
        ceil_u64(f64::from(groups) * cpw)
    }
}

/// `x / d`, bit for bit: for a power-of-two `d` (the default DMA width, 4 B/cycle) as
/// `x` times the exact reciprocal of `d`, which rounds the same real number once, as
/// the division does; a division per descriptor showed in profiles.
#[inline]
fn div_exact(x: f64, d: f64) -> f64 {
    const MANTISSA: u64 = (1 << 52) - 1;
    let bits = d.to_bits();
    let exp = bits >> 52; // with the sign bit: a negative `d` takes the division
    if bits & MANTISSA == 0 && (1..=2045).contains(&exp) {
        // d = 2^(exp - 1023), so 1/d = 2^(1023 - exp), biased exponent 2046 - exp.
        x * f64::from_bits((2046 - exp) << 52)
    } else {
        x / d
    }
}

/// Contiguous elements between memory and int32 register lanes: widened on the way in,
/// narrowed (low bytes) on the way out, as [`read_elem`] / [`write_elem`] do one by one.
fn copy_run(mem: &mut [u8], v: &mut [i32], e: Elem, to_mem: bool) {
    match (e, to_mem) {
        (Elem::U8, false) => v
            .iter_mut()
            .zip(mem.iter())
            .for_each(|(d, &b)| *d = b as i32),
        (Elem::I8, false) => v
            .iter_mut()
            .zip(mem.iter())
            .for_each(|(d, &b)| *d = b as i8 as i32),
        (Elem::U8 | Elem::I8, true) => mem
            .iter_mut()
            .zip(v.iter())
            .for_each(|(b, &s)| *b = s as u8),
        (Elem::I32, false) => v
            .iter_mut()
            .zip(mem.chunks_exact(4))
            .for_each(|(d, b)| *d = i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        (Elem::I32, true) => mem
            .chunks_exact_mut(4)
            .zip(v.iter())
            .for_each(|(b, &s)| b.copy_from_slice(&s.to_le_bytes())),
    }
}

/// [`copy_run`] for elements `stride` bytes apart (`mem` starts at the first and ends
/// with the last element).
fn copy_strided(mem: &mut [u8], v: &mut [i32], e: Elem, stride: usize, to_mem: bool) {
    match (e, to_mem) {
        (Elem::U8, false) => v
            .iter_mut()
            .zip(mem.iter().step_by(stride))
            .for_each(|(d, &b)| *d = b as i32),
        (Elem::I8, false) => v
            .iter_mut()
            .zip(mem.iter().step_by(stride))
            .for_each(|(d, &b)| *d = b as i8 as i32),
        (Elem::U8 | Elem::I8, true) => mem
            .iter_mut()
            .step_by(stride)
            .zip(v.iter())
            .for_each(|(b, &s)| *b = s as u8),
        (Elem::I32, _) => {
            for (c, e) in v.iter_mut().enumerate() {
                let a = c * stride;
                if to_mem {
                    write_elem(mem, a, Elem::I32, *e);
                } else {
                    *e = read_elem(mem, a, Elem::I32);
                }
            }
        }
    }
}

pub(crate) fn read_elem(mem: &[u8], a: usize, e: Elem) -> i32 {
    match e {
        Elem::U8 => mem[a] as i32,
        Elem::I8 => mem[a] as i8 as i32,
        Elem::I32 => i32::from_le_bytes([mem[a], mem[a + 1], mem[a + 2], mem[a + 3]]),
    }
}

pub(crate) fn write_elem(mem: &mut [u8], a: usize, e: Elem, v: i32) {
    match e {
        Elem::U8 | Elem::I8 => mem[a] = v as u8,
        Elem::I32 => mem[a..a + 4].copy_from_slice(&v.to_le_bytes()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Some traffic and instructions: a DMA in, a MAC, a DMA out.
    fn work(m: &mut Machine, addr: u64, n: usize) {
        let v = m.vlen;
        m.dma_in(&Xfer::row(0, 1, 0, v, addr, Elem::U8, n)).unwrap();
        m.vmv_vx(0, 2, 3, n);
        m.vmacc_vx(0, 2, 5, 1, n);
        let out = m.alloc(n * 4);
        m.dma_out(&Xfer::row(0, 2, 0, v, out, Elem::I32, n))
            .unwrap();
        m.finish();
    }

    #[test]
    fn group_cycles_equal_the_float_ceiling() {
        let cpws = [
            1.0, 2.0, 3.0, 8.0, 0.33, 0.5, 1.5, 2.25, 1e6, 999_999.5, 1e-6,
        ];
        for cpw in cpws {
            for g in [0u32, 1, 2, 7, 32, 255, 256, 4096, 32768] {
                let float = ceil_u64(f64::from(g) * cpw);
                assert_eq!(group_cycles(g, cpw), float, "{g} x {cpw}");
            }
        }
    }

    #[test]
    fn div_exact_equals_the_division() {
        let ds = [
            4.0,
            1.0,
            0.5,
            0.25,
            2.0f64.powi(-10),
            1024.0,
            1.2,
            3.0,
            0.001,
            1e6,
        ];
        for d in ds {
            for x in [
                0.0,
                1.0,
                3.0,
                7.0,
                1023.0,
                4096.0,
                123_456_789.0,
                2f64.powi(60),
            ] {
                assert_eq!(div_exact(x, d).to_bits(), (x / d).to_bits(), "{x} / {d}");
            }
        }
    }

    #[test]
    fn a_timing_only_copy_keeps_the_timing_without_the_data() {
        let arch = Arch::default();
        let mut a = Machine::new(&arch).unwrap();
        let x = a.put(Elem::U8, &(0..200).map(|i| i % 251).collect::<Vec<_>>());
        work(&mut a, x, 100);
        // A spare that ran something else, with more memory than `a`.
        let mut b = Machine::new(&arch).unwrap();
        let y = b.put(Elem::U8, &vec![7; 5000]);
        work(&mut b, y, 64);
        a.timing_copy_into(&mut b);
        assert!(!b.has_data() && b.mem.is_empty());
        work(&mut a, x + 50, 120);
        work(&mut b, x + 50, 120);
        assert_eq!(a.counters(), b.counters());
        assert_eq!(a.finish_time(), b.finish_time());
        assert_eq!(a.now(), b.now());
        // Same allocations and the same bounds.
        assert_eq!(a.alloc(10), b.alloc(10));
        assert_eq!(a.mem_size(), b.mem_size());
        assert!(b.get(x, Elem::U8, 4).is_err());
        assert!(a.get(x, Elem::U8, 4).is_ok());
        let past = a.mem_size() as u64;
        for m in [&mut a, &mut b] {
            let v = m.vlen;
            let e = m.dma_in(&Xfer::row(0, 1, 0, v, past, Elem::U8, 4));
            assert!(matches!(e, Err(VpuError::Memory { .. })));
        }
    }
}
