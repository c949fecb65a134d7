//! What the rest of a 2-D conv call certainly costs, for `auto`'s trials: the host's
//! control cycles (instruction issues, DMA programming, loop steps) and each VPU's
//! busy cycles of every `macs` call and band load still to come, counted from the same
//! tables the kernel issues from. After each MAC step a trial checks its clocks plus
//! this remainder against the best finished trial (`Machine::check_floor`) and stops
//! as soon as it cannot win, rather than when its clock passes that trial's time: a
//! losing dataflow costs a fraction of its run. The counts are those of the calls
//! (debug builds assert it against the counters after every call), so a stopped trial
//! would have finished later than the best one: the winner does not change.

use super::{ConvJob, Geo, MacScratch, band_rows, chunk, tap_col0, valid_cols};
use crate::Dataflow;
use crate::error::Result;
use crate::machine::{Counters, Machine, ceil_u64};

/// The cost tables of one conv call and what is left of it.
pub(super) struct Floor {
    p: usize,
    w_chunks: usize,
    /// Per (step, chunk) at `t * w_chunks + wx`: one `macs` call's and one band
    /// load's host cycles; VPU `q`'s busy cycles at `(t * w_chunks + wx) * p + q`.
    macs_host: Vec<u64>,
    macs_vpu: Vec<u64>,
    bands_host: Vec<u64>,
    bands_vpu: Vec<u64>,
    /// One filter read (`TapCache::get`: its `xvmv.x.s` reads, VPU 0 busy) and the
    /// host loop step before each `macs` call.
    taps_host: u64,
    taps_vpu0: u64,
    loop_c: u64,
    /// The rest of the call.
    host: u64,
    vpu: Vec<u64>,
}

impl Floor {
    /// The counts of a call, from the step tables of `s` (the kernel's own scratch:
    /// each step's tables are built here once and kept for the call).
    pub(super) fn new(
        m: &Machine,
        j: &ConvJob,
        g: &Geo,
        df: Dataflow,
        s: &mut MacScratch,
    ) -> Floor {
        let p = m.vpus();
        let w_chunks = g.wo.div_ceil(g.wc);
        let n = g.steps * w_chunks;
        let mut f = Floor {
            p,
            w_chunks,
            macs_host: vec![0; n],
            macs_vpu: vec![0; n * p],
            bands_host: vec![0; n],
            bands_vpu: vec![0; n * p],
            taps_host: 0,
            taps_vpu0: 0,
            loop_c: m.arch.host.loop_cycles,
            host: 0,
            vpu: vec![0; p],
        };
        for t in 0..g.steps {
            s.prepare(j, g, t);
            for wx in 0..w_chunks {
                let at = t * w_chunks + wx;
                let cols = chunk(g, wx);
                let vpu = &mut f.macs_vpu[at * p..(at + 1) * p];
                f.macs_host[at] = macs_cost(m, j, s, cols, vpu);
                let vpu = &mut f.bands_vpu[at * p..(at + 1) * p];
                f.bands_host[at] = bands_cost(m, j, g, t, cols, vpu);
            }
        }
        // Per tap: the read's issue and the host's step after it (it waits for the
        // result in between: not counted).
        let a = &m.arch;
        let kk = (j.kh * j.kw) as u64;
        f.taps_host = kk * (a.host.issue_cycles + a.host.scalar_step_cycles);
        f.taps_vpu0 = kk * ceil_u64(a.vpu.cycles.mv_x_s);
        // Every dataflow runs `macs`, after a host loop step, once per channel pair,
        // step and chunk; WS reads the taps once per channel pair, OS and IS once per
        // `macs`; IS loads a band once per input channel, step and chunk, OS and WS
        // once per `macs`.
        let pairs = (j.c_out * j.c_in) as u64;
        let loads = if df == Dataflow::Is {
            j.c_in as u64
        } else {
            pairs
        };
        let calls = pairs.saturating_mul(n as u64);
        let reads = if df == Dataflow::Ws { pairs } else { calls };
        let total = |v: &[u64]| v.iter().fold(0u64, |a, &x| a.saturating_add(x));
        f.host = total(&f.macs_host)
            .saturating_mul(pairs)
            .saturating_add(total(&f.bands_host).saturating_mul(loads))
            .saturating_add(f.taps_host.saturating_mul(reads))
            .saturating_add(f.loop_c.saturating_mul(calls));
        for (q, rest) in f.vpu.iter_mut().enumerate() {
            let per = |v: &[u64]| v.chunks(p).fold(0u64, |a, c| a.saturating_add(c[q]));
            *rest = per(&f.macs_vpu)
                .saturating_mul(pairs)
                .saturating_add(per(&f.bands_vpu).saturating_mul(loads));
        }
        f.vpu[0] = f.vpu[0].saturating_add(f.taps_vpu0.saturating_mul(reads));
        f
    }

    /// The counters a call's cost is checked against (debug builds only: the default
    /// elsewhere, unread).
    #[inline]
    pub(super) fn counters(m: &Machine) -> Counters {
        if cfg!(debug_assertions) {
            m.counters()
        } else {
            Counters::default()
        }
    }

    /// A band load of step `t`, chunk `wx` is done (`before`: the counters before it).
    pub(super) fn bands_done(&mut self, m: &Machine, before: &Counters, t: usize, wx: usize) {
        let at = t * self.w_chunks + wx;
        let (host, vpu) = (
            self.bands_host[at],
            &self.bands_vpu[at * self.p..][..self.p],
        );
        Self::spent(m, before, host, vpu, "band load");
        take(&mut self.host, host);
        for (r, &c) in self.vpu.iter_mut().zip(vpu) {
            take(r, c);
        }
    }

    /// A filter read is done (`before`: the counters before it; a read that also
    /// loaded the next channel group cost more).
    pub(super) fn taps_done(&mut self, m: &Machine, before: &Counters) {
        if cfg!(debug_assertions) && m.keeps_time() {
            let now = m.counters();
            assert!(
                now.host_control - before.host_control >= self.taps_host,
                "tap reads"
            );
            assert!(
                now.vpu_busy - before.vpu_busy >= self.taps_vpu0,
                "tap reads"
            );
        }
        take(&mut self.host, self.taps_host);
        take(&mut self.vpu[0], self.taps_vpu0);
    }

    /// A `macs` call of step `t`, chunk `wx` (and the host loop step before it) is
    /// done: stop here (`TrialLost`) when the
    /// rest cannot finish before the best finished trial.
    pub(super) fn macs_done(
        &mut self,
        m: &Machine,
        before: &Counters,
        t: usize,
        wx: usize,
    ) -> Result<()> {
        let at = t * self.w_chunks + wx;
        let (host, vpu) = (self.macs_host[at], &self.macs_vpu[at * self.p..][..self.p]);
        Self::spent(m, before, host, vpu, "macs");
        take(&mut self.host, host + self.loop_c);
        for (r, &c) in self.vpu.iter_mut().zip(vpu) {
            take(r, c);
        }
        m.check_floor(self.host, &self.vpu)
    }

    /// Debug builds: the call's end used up every count (else a count was wrong).
    pub(super) fn end(&self) {
        debug_assert!(
            self.host == 0 && self.vpu.iter().all(|&v| v == 0),
            "a conv floor left {} host and {:?} VPU cycles",
            self.host,
            self.vpu
        );
    }

    /// Debug builds: the call cost what the table says (else the floor could stop a
    /// trial that might have won).
    fn spent(m: &Machine, before: &Counters, host: u64, vpu: &[u64], what: &str) {
        if cfg!(debug_assertions) && m.keeps_time() {
            let now = m.counters();
            assert_eq!(
                now.host_control - before.host_control,
                host,
                "{what} host cycles"
            );
            assert_eq!(
                now.vpu_busy - before.vpu_busy,
                vpu.iter().sum::<u64>(),
                "{what} VPU cycles"
            );
        }
    }
}

/// `rest -= spent`; debug builds check that the count covered it.
fn take(rest: &mut u64, spent: u64) {
    debug_assert!(
        spent <= *rest,
        "a conv floor counted {rest} cycles, spent {spent}"
    );
    *rest = rest.saturating_sub(spent);
}

/// One `macs` call over output columns `(w0, nw)`: returns the host cycles, adds each
/// VPU's busy cycles to `vpu` (the instructions `macs` issues, in `MacScratch::columns`).
fn macs_cost(
    m: &Machine,
    j: &ConvJob,
    s: &MacScratch,
    (w0, nw): (usize, usize),
    vpu: &mut [u64],
) -> u64 {
    let a = &m.arch;
    let (ic, pc) = (a.host.issue_cycles, a.dma.program_cycles);
    let mac_c = m.vcost(a.vpu.cycles.mac, nw);
    let slide_c = m.vcost(a.vpu.cycles.slide, nw);
    let mv_c = m.vcost(a.vpu.cycles.mv, nw);
    let add_c = m.vcost(a.vpu.cycles.add, nw);
    let step = j.stride.1;
    let mut host = 0u64;
    for (r, kx, _) in s.columns(j.kw) {
        for (q, _, nu) in s.row_vpus(r) {
            let (busy, nu) = (&mut vpu[q], nu as u64);
            let mut ops = nu;
            *busy += nu * mac_c;
            if step == 1 {
                // A slide for every tap column but the first.
                if kx > 0 {
                    ops += 1;
                    *busy += slide_c;
                }
            } else {
                // The segment's padding, burst and zero-point correction.
                let (lo, hi) = valid_cols(j, tap_col0(j, w0, kx), nw, step);
                if lo > 0 || hi < nw {
                    ops += 1;
                    *busy += mv_c;
                }
                if hi > lo {
                    host += pc;
                }
                if j.x_zp != 0 {
                    ops += 1;
                    *busy += add_c;
                }
            }
            host += ops * ic;
        }
        host += a.host.loop_cycles;
    }
    host
}

/// One stride-1 band load of step `t` over output columns `(w0, nw)` (strided widths
/// load in `macs`): per VPU and valid band row a padding, a burst and a correction.
fn bands_cost(
    m: &Machine,
    j: &ConvJob,
    g: &Geo,
    t: usize,
    (w0, nw): (usize, usize),
    vpu: &mut [u64],
) -> u64 {
    if j.stride.1 != 1 {
        return 0;
    }
    let a = &m.arch;
    let (ic, pc) = (a.host.issue_cycles, a.dma.program_cycles);
    let len = nw + (j.kw - 1) * j.dil.1;
    let (lo, hi) = valid_cols(j, w0 as isize - j.pads[1] as isize, len, 1);
    let mv_c = m.vcost(a.vpu.cycles.mv, len);
    let add_c = m.vcost(a.vpu.cycles.add, len);
    let mut host = 0u64;
    for (q, busy) in vpu.iter_mut().enumerate() {
        let Some(tile) = g.tile(q, t) else { continue };
        let (first, count) = band_rows(j, tile);
        let rows = (0..count as isize)
            .filter(|r| (0..j.h as isize).contains(&(first + r)))
            .count() as u64;
        if lo > 0 || hi < len {
            host += rows * ic;
            *busy += rows * mv_c;
        }
        if hi > lo {
            host += rows * pc;
        }
        if j.x_zp != 0 {
            host += rows * ic;
            *busy += rows * add_c;
        }
    }
    host
}

#[cfg(test)]
mod tests {
    use super::super::{conv2d, place};
    use crate::Dataflow;
    use crate::arch::Arch;
    use crate::error::VpuError;
    use crate::machine::{Machine, TrialBound};
    use crate::problem::Gen;

    #[test]
    fn a_hopeless_trial_stops_before_its_clock_reaches_the_bound() {
        // Stride-2 and stride-1 convs: with the OS run's time as the best finished trial,
        // a slower dataflow is stopped by the floor while its own clock is still below
        // that time (the plain bound would let it run until the clock passes it).
        let mut g = Gen::new(3);
        for (stride, pad) in [((2, 2), 1), ((1, 1), 1)] {
            let p = g.conv(12, 14, 14, 8, (3, 3), stride, [pad; 4], (1, 1), 1);
            let mut m = Machine::new(&Arch::default()).unwrap();
            let j = place(&mut m, &p);
            let t0 = m.now();
            let time = |df| {
                let mut c = m.clone();
                conv2d(&mut c, &j, df).unwrap();
                c.finish_time() - t0
            };
            let os = time(Dataflow::Os);
            let (slow, t_slow) = [Dataflow::Is, Dataflow::Ws]
                .into_iter()
                .map(|d| (d, time(d)))
                .max_by_key(|x| x.1)
                .unwrap();
            assert!(t_slow > os, "{stride:?}: {slow:?} {t_slow} vs OS {os}");
            let bound = TrialBound::new(t0);
            bound.finished(os);
            let mut trial = m.clone();
            trial.set_trial_bound(Some(bound));
            let r = conv2d(&mut trial, &j, slow);
            assert!(matches!(r, Err(VpuError::TrialLost)), "{stride:?}: {r:?}");
            let at = trial.finish_time() - t0;
            assert!(at <= os, "{stride:?}: stopped at {at}, the bound is {os}");
        }
    }
}
