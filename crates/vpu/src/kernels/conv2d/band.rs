//! A stride-1 conv's band loads for one input channel and step as one batch: per VPU
//! and band row the padding (`vmv.v.x`), the row's one-row DMA burst and the
//! zero-point correction (`vadd.vx`), scheduled on a [`crate::machine::Batch`] with the
//! DMA timing in it (`machine/batch_dma.rs`), then the values in a second pass (no
//! timing depends on a value): the same instructions, bursts, cache accesses and
//! values in the same order as `load_band` calling `load_segment` row by row.

use super::{ConvJob, Geo, band_rows, chunk, valid_cols};
use crate::error::Result;
use crate::machine::{Machine, move_row};

/// Every VPU's band of input channel `ci` for step `t` and chunk `wx` as one batch;
/// `false` (nothing done) when a burst could leave memory or the VRF or a clock could
/// saturate: the caller then loads row by row.
pub(super) fn load_bands_batched(
    m: &mut Machine,
    j: &ConvJob,
    g: &Geo,
    t: usize,
    wx: usize,
    ci: usize,
) -> Result<bool> {
    let (p, v, es) = (m.vpus(), m.vlen, j.x_elem.size());
    let (w0, nw) = chunk(g, wx);
    let len = nw + (j.kw - 1) * j.dil.1;
    let col0 = w0 as isize - j.pads[1] as isize;
    let (lo, hi) = valid_cols(j, col0, len, 1);
    let plane = j.h * j.w * es;
    // Each band row goes to its own register (row r to V_r), whole inside it, and every
    // burst lies in input channel `ci`'s plane.
    let rows = (0..p)
        .filter_map(|q| g.tile(q, t).map(|tile| band_rows(j, tile).1))
        .max()
        .unwrap_or(0);
    if len > v || rows > m.arch.vpu.vregs || !m.in_mem(j.x + (ci * plane) as u64, plane) {
        return Ok(false);
    }
    let Some(burst) = m.burst_bound(len, es, es) else {
        return Ok(false);
    };
    let mv_c = m.vcost(m.arch.vpu.cycles.mv, len);
    let add_c = m.vcost(m.arch.vpu.cycles.add, len);
    // Per VPU and band row: a pad, a burst and a correction.
    let instrs = (p * rows * 3) as u64;
    let cycles = mv_c.max(add_c).max(burst);
    // The bound check `dma_in` does per burst, once for the batch.
    m.trial_check()?;
    let Ok((b, data)) = m.batch_mem(instrs, cycles, 0) else {
        return Ok(false);
    };
    let padded = lo > 0 || hi < len;
    let first_col = (col0 + lo as isize).max(0) as usize;
    // The input rows each VPU loads, with their registers, in `load_band`'s order.
    let mut segs = Vec::with_capacity(p * rows);
    for q in 0..p {
        let Some(tile) = g.tile(q, t) else { continue };
        let (first, count) = band_rows(j, tile);
        for r in 0..count {
            let ih = first + r as isize;
            if ih >= 0 && ih < j.h as isize {
                let addr = j.x as usize + ((ci * j.h + ih as usize) * j.w + first_col) * es;
                segs.push((q, r, addr));
            }
        }
    }
    if let Some(mut b) = b {
        for &(q, reg, addr) in &segs {
            if padded {
                b.op_dst(q, reg, mv_c);
            }
            if hi > lo {
                b.dma_in_row(q, reg, addr, hi - lo, es, es);
            }
            if j.x_zp != 0 {
                b.op(q, reg, reg, add_c);
            }
        }
        b.end();
    }
    if let Some((f, mem)) = data {
        for &(q, reg, addr) in &segs {
            let seg = &mut f[q][reg * v..reg * v + len];
            if padded {
                seg.fill(j.x_zp);
            }
            if hi > lo {
                move_row(mem, addr, &mut seg[lo..hi], j.x_elem, es, false);
            }
            if j.x_zp != 0 {
                let x = -j.x_zp;
                seg.iter_mut().for_each(|e| *e = e.wrapping_add(x));
            }
        }
    }
    Ok(true)
}
