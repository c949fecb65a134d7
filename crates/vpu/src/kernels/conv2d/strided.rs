//! `macs` for a strided width as one batch: per tap column the segment's padding
//! (`vmv.v.x`), its one-row DMA burst, the zero-point correction (`vadd.vx`) and the
//! MACs, scheduled on a [`crate::machine::Batch`] with the DMA timing in it
//! (`machine/batch_dma.rs`), then the values in a second pass (no timing depends on a
//! value): the same instructions, bursts, cache accesses and values in the same order
//! as `load_segment` and `vmacc_vx_each_costing` one by one.

use super::{ACC0, ConvJob, MAX_OUT_ROWS, MacScratch, SCRATCH, tap_col0, valid_cols};
use crate::error::Result;
use crate::machine::{Machine, move_row};
use crate::vector::{macc, two_regs};

/// The MACs of input channel `ci` over output columns `w0..w0 + nw` as one batch;
/// `false` (nothing done) when a burst could leave memory or the VRF or a clock could
/// saturate: the caller then issues one by one.
pub(super) fn macs_batched(
    m: &mut Machine,
    j: &ConvJob,
    (w0, nw): (usize, usize),
    ci: usize,
    taps: &[i32],
    s: &MacScratch,
    mac_c: u64,
) -> Result<bool> {
    let (p, v, step, es) = (s.p, m.vlen, j.stride.1, j.x_elem.size());
    let plane = j.h * j.w * es;
    // Every burst lies in input channel `ci`'s plane and in a scratch register.
    if !m.in_mem(j.x + (ci * plane) as u64, plane) || SCRATCH[1] >= m.arch.vpu.vregs {
        return Ok(false);
    }
    let Some(burst) = m.burst_bound(nw, es, step * es) else {
        return Ok(false);
    };
    let mv_c = m.vcost(m.arch.vpu.cycles.mv, nw);
    let add_c = m.vcost(m.arch.vpu.cycles.add, nw);
    let cols = (s.tab.count * j.kw) as u64;
    // Per VPU and tap column: a pad, a burst, a correction and at most MAX_OUT_ROWS MACs.
    let instrs = cols * (p * (3 + MAX_OUT_ROWS)) as u64;
    let cycles = mac_c.max(mv_c).max(add_c).max(burst);
    // The bound check `dma_in` does per burst, once for the batch.
    m.trial_check()?;
    let Ok((b, data)) = m.batch_mem(instrs, cycles, cols) else {
        return Ok(false);
    };
    // Each tap column's segment: (VPU, band row entry, register, lo, hi, first byte).
    let seg = |at: usize, kx: usize, sc: usize| {
        let col0 = tap_col0(j, w0, kx);
        let (lo, hi) = valid_cols(j, col0, nw, step);
        let c = (col0 + (lo * step) as isize).max(0) as usize;
        let addr = j.x as usize + ((ci * j.h + s.tab.ihs[at]) * j.w + c) * es;
        (SCRATCH[sc], lo, hi, addr)
    };
    if let Some(mut b) = b {
        for (r, kx, sc) in s.columns(j.kw) {
            for (q, at, nu) in s.row_vpus(r) {
                let (reg, lo, hi, addr) = seg(at, kx, sc);
                if lo > 0 || hi < nw {
                    b.op_dst(q, reg, mv_c);
                }
                if hi > lo {
                    b.dma_in_row(q, reg, addr, hi - lo, es, step * es);
                }
                if j.x_zp != 0 {
                    b.op(q, reg, reg, add_c);
                }
                for &(o, _) in &s.tab.users[at][..nu] {
                    b.op(q, reg, ACC0 + o, mac_c);
                }
            }
            b.host_loop();
        }
        b.end();
    }
    if let Some((f, mem)) = data {
        for (r, kx, sc) in s.columns(j.kw) {
            for (q, at, nu) in s.row_vpus(r) {
                let (reg, lo, hi, addr) = seg(at, kx, sc);
                let fq = &mut f[q];
                let seg = &mut fq[reg * v..reg * v + nw];
                if lo > 0 || hi < nw {
                    seg.fill(j.x_zp);
                }
                if hi > lo {
                    move_row(mem, addr, &mut seg[lo..hi], j.x_elem, step * es, false);
                }
                if j.x_zp != 0 {
                    let x = -j.x_zp;
                    seg.iter_mut().for_each(|e| *e = e.wrapping_add(x));
                }
                for &(o, ky) in &s.tab.users[at][..nu] {
                    let (d, src) = two_regs(fq, v, ACC0 + o, reg);
                    macc(&mut d[..nw], &src[..nw], taps[ky * j.kw + kx]);
                }
            }
        }
    }
    Ok(true)
}
