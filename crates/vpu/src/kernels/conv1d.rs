//! Causal 1-D QLinearConv (CHW with H = 1) on the VPUs, quinn §4.3.3 / Table 2. The
//! sequence is processed in chunks of one register (with the (K-1)*d causal halo); a
//! block of output channels is held as int32 accumulators while the C_in*K reduction is
//! done by shift (slide) and broadcast MAC. Partitions: OS input V0-V10, output V11-V30;
//! IS all input channels resident (up to 26), output the rest; above 26 channels IS
//! streams its inputs through the 8-channel window of Table 2 (V0-V7, scratch V8, outputs
//! V9-V29; Table 2 lists V8-V28 without the scratch) once per output block, like OS, so
//! no partial sums spill; WS 13 resident input channels + 13 output channels, "combining
//! input and output stationarity" (§4.3.3): above 13 channels its input groups stream
//! past each resident output block, so it spills nothing either (Fig. 7 puts every
//! configuration near the bound). Cooperating VPUs split the sequence; each loads its
//! own band with the causal overlap.

use super::conv2d::ConvJob;
use super::{Dataflow, zp_at};
use crate::error::{Result, VpuError, kerr};
use crate::machine::{Machine, Xfer};

const W_REG: usize = 31;

struct Plan {
    lo: usize,
    lc: usize,
    halo: usize,
    in_slots: usize,
    scratch: usize,
    out0: usize,
    out_slots: usize,
    bands: Vec<(usize, usize)>,
    steps: usize,
}

impl Plan {
    fn chunk(&self, q: usize, t: usize) -> Option<(usize, usize)> {
        let (s, e) = self.bands[q];
        let c0 = s + t * self.lc;
        (c0 < e).then(|| (c0, self.lc.min(e - c0)))
    }
}

/// Whether the causal window ((K-1)*d + 1 samples) fits one register; checked before
/// anything runs, so a network can send a layer that does not fit to the host instead.
pub(crate) fn check_geometry(kw: usize, dil: usize, v: usize) -> Result<()> {
    let window = kw.saturating_sub(1) * dil + 1;
    if window > v {
        return Err(VpuError::VrfTooSmall {
            kernel: "QLinearConv-1D",
            msg: format!(
                "the causal window of {window} samples does not fit a {v}-element register"
            ),
        });
    }
    Ok(())
}

fn plan(m: &Machine, j: &ConvJob, df: Dataflow) -> Result<Plan> {
    if j.h != 1 || j.kh != 1 || j.stride != (1, 1) || j.pads[0] != 0 || j.pads[2] != 0 {
        return Err(kerr(
            "QLinearConv-1D",
            "needs H = 1, a 1 x K filter and unit stride",
        ));
    }
    let v = m.vlen;
    check_geometry(j.kw, j.dil.1, v)?;
    let halo = (j.kw - 1) * j.dil.1;
    let (_, lo) = j.out_hw();
    let (in_slots, out_slots) = match df {
        Dataflow::Os => (10, 20),
        // quinn Table 2 note b: all C_in channels resident up to 26; above that the
        // inputs stream through the C_in = 8 window (V0-V7, scratch V8, outputs V9-V29).
        Dataflow::Is if j.c_in <= 26 => (j.c_in, (30 - j.c_in).min(21)),
        Dataflow::Is => (8, 21),
        Dataflow::Ws => (13, 13),
    };
    // A block's taps (out_slots x K) share the one weight register V31: long filters get
    // smaller output blocks (K <= VLEN holds, the causal window fits a register).
    let out_slots = out_slots.min(v / j.kw).max(1);
    let lc = v - halo;
    let p = m.vpus();
    let per = lo.div_ceil(p);
    let bands: Vec<_> = (0..p)
        .map(|q| ((q * per).min(lo), ((q + 1) * per).min(lo)))
        .collect();
    Ok(Plan {
        lo,
        lc,
        halo,
        in_slots,
        scratch: in_slots,
        out0: in_slots + 1,
        out_slots,
        bands,
        steps: per.div_ceil(lc),
    })
}

/// Whether the inputs stream through their window once per output block (the output
/// accumulators complete their whole C_in*K reduction, nothing spills): always for OS,
/// and for IS and WS when C_in does not fit their resident window. Otherwise (IS and WS
/// with every channel resident) the inputs are loaded once and the output blocks sweep
/// past them.
fn streams(df: Dataflow, ci_groups: usize) -> bool {
    df == Dataflow::Os || ci_groups > 1
}

pub fn conv1d(m: &mut Machine, j: &ConvJob, df: Dataflow) -> Result<()> {
    let pl = plan(m, j, df)?;
    let ci_groups = j.c_in.div_ceil(pl.in_slots);
    let co_blocks = j.c_out.div_ceil(pl.out_slots);
    for t in 0..pl.steps {
        if streams(df, ci_groups) {
            for cb in 0..co_blocks {
                m.host_loop(1);
                init(m, j, &pl, t, cb)?;
                for g in 0..ci_groups {
                    load_inputs(m, j, &pl, t, g)?;
                    macs(m, j, &pl, t, cb, g)?;
                }
                finish(m, j, &pl, t, cb)?;
            }
        } else {
            // One resident input group: loaded once, every output block sweeps past it.
            m.host_loop(1);
            load_inputs(m, j, &pl, t, 0)?;
            for cb in 0..co_blocks {
                m.host_loop(1);
                init(m, j, &pl, t, cb)?;
                macs(m, j, &pl, t, cb, 0)?;
                finish(m, j, &pl, t, cb)?;
            }
        }
    }
    m.finish();
    Ok(())
}

fn group(j: &ConvJob, pl: &Plan, g: usize) -> (usize, usize) {
    let c0 = g * pl.in_slots;
    (c0, pl.in_slots.min(j.c_in - c0))
}
fn block(j: &ConvJob, pl: &Plan, cb: usize) -> (usize, usize) {
    let c0 = cb * pl.out_slots;
    (c0, pl.out_slots.min(j.c_out - c0))
}

/// Input channels of group `g` for chunk `t` on every VPU: register i holds samples
/// [c0 - pad_l, c0 - pad_l + len) of channel i, left padding filled with x_zp.
fn load_inputs(m: &mut Machine, j: &ConvJob, pl: &Plan, t: usize, g: usize) -> Result<()> {
    let (ci0, n) = group(j, pl, g);
    let es = j.x_elem.size();
    for q in 0..m.vpus() {
        let Some((c0, len)) = pl.chunk(q, t) else {
            continue;
        };
        let total = len + pl.halo;
        let start = c0 as isize - j.pads[1] as isize;
        let first = (-start).max(0) as usize;
        let last = ((j.w as isize - start).max(0) as usize).min(total);
        if first > 0 || last < total {
            for i in 0..n {
                m.vmv_vx(q, i, j.x_zp, total);
            }
        }
        if last > first {
            m.dma_in(&Xfer {
                vpu: q,
                addr: j.x + ((ci0 * j.w) as isize + start + first as isize) as u64 * es as u64,
                elem: j.x_elem,
                rows: n,
                cols: last - first,
                col_stride: es,
                row_stride: j.w * es,
                vrf_off: first,
                vrf_row_stride: m.vlen,
            })?;
        }
        if j.x_zp != 0 {
            for i in 0..n {
                m.vadd_vx(q, i, i, -j.x_zp, total);
            }
        }
    }
    Ok(())
}

fn macs(m: &mut Machine, j: &ConvJob, pl: &Plan, t: usize, cb: usize, g: usize) -> Result<()> {
    let (co0, nco) = block(j, pl, cb);
    let (ci0, nci) = group(j, pl, g);
    let k = j.kw;
    // Weight taps for (co block, ci sub-group) in V31, as many input channels as fit.
    let sub = (m.vlen / (nco * k)).max(1).min(nci);
    if nco * k > m.vlen {
        return Err(VpuError::VrfTooSmall {
            kernel: "QLinearConv-1D",
            msg: format!("{nco} x {k} taps exceed one register"),
        });
    }
    let es = j.w_elem.size();
    let chunks: Vec<Option<(usize, usize)>> = (0..m.vpus()).map(|q| pl.chunk(q, t)).collect();
    for s0 in (0..nci).step_by(sub) {
        let ns = sub.min(nci - s0);
        m.dma_in(&Xfer {
            vpu: 0,
            addr: j.wt + (((co0 * j.c_in + ci0 + s0) * k) * es) as u64,
            elem: j.w_elem,
            rows: nco,
            cols: ns * k,
            col_stride: es,
            row_stride: j.c_in * k * es,
            vrf_off: W_REG * m.vlen,
            vrf_row_stride: ns * k,
        })?;
        for i in s0..s0 + ns {
            for kx in 0..k {
                let off = kx * j.dil.1;
                // Causal shift: output t reads register element (t - c0) + kx*d.
                if off != 0 {
                    for (q, ch) in chunks.iter().enumerate() {
                        if let Some((_, len)) = *ch {
                            m.vslidedown(q, pl.scratch, i, off, len);
                        }
                    }
                }
                for o in 0..nco {
                    let w = m.vmv_x_s(0, W_REG, o * ns * k + (i - s0) * k + kx)
                        - zp_at(&j.w_zp, co0 + o);
                    for (q, ch) in chunks.iter().enumerate() {
                        let Some((_, len)) = *ch else { continue };
                        let src = if off == 0 { i } else { pl.scratch };
                        m.vmacc_vx(q, pl.out0 + o, w, src, len);
                    }
                }
                m.host_loop(1);
            }
        }
    }
    Ok(())
}

fn init(m: &mut Machine, j: &ConvJob, pl: &Plan, t: usize, cb: usize) -> Result<()> {
    let (co0, nco) = block(j, pl, cb);
    for q in 0..m.vpus() {
        let Some((_, len)) = pl.chunk(q, t) else {
            continue;
        };
        for o in 0..nco {
            m.host(1);
            let b = j.bias.as_ref().map_or(0, |b| b[co0 + o]);
            m.vmv_vx(q, pl.out0 + o, b, len);
        }
    }
    Ok(())
}

fn finish(m: &mut Machine, j: &ConvJob, pl: &Plan, t: usize, cb: usize) -> Result<()> {
    let (co0, nco) = block(j, pl, cb);
    for q in 0..m.vpus() {
        let Some((c0, len)) = pl.chunk(q, t) else {
            continue;
        };
        let rq = |o| j.out.at(co0 + o);
        j.out
            .store_rows(m, q, pl.out0, nco, len, rq, j.y, co0 * pl.lo + c0, pl.lo)?;
    }
    Ok(())
}
