//! Depthwise QLinearConv in HWC layout, quinn §4.3.4 / Table 2: one vector holds a
//! channel slice of one pixel; input patch V0-V8, accumulator V15, filter taps V16-V24
//! (bias V25, per-channel weight zero points V26). OS reloads the whole patch for every
//! output pixel (the paper's naive baseline); IS keeps a K-column ring and loads only the
//! newly exposed column(s); WS equals IS (the filter and output are resident anyway).
//! K x K > 9 does not fit: every tap streams its input pixel and filter vector.
//! Cooperating VPUs split the output rows; instructions are queued without host waits,
//! so loads for one VPU overlap compute on another (software prefetching).

use super::{Dataflow, OutQuant};
use crate::error::{Result, kerr};
use crate::machine::{Elem, Machine, Xfer};
use crate::problem::{QConv, conv_out_hw, out_quant};

/// Depthwise job: x is H x W x C, weights staged as (kh*kw) x C, y is Ho x Wo x C.
#[derive(Clone, Debug)]
pub struct DwJob {
    pub c: usize,
    pub h: usize,
    pub w: usize,
    pub kh: usize,
    pub kw: usize,
    pub stride: (usize, usize),
    pub pads: [usize; 4],
    pub dil: (usize, usize),
    pub x: u64,
    pub x_elem: Elem,
    pub x_zp: i32,
    pub wt: u64,
    pub w_elem: Elem,
    pub w_zp: Vec<i32>,
    /// i32[C] in memory.
    pub bias: Option<u64>,
    pub y: u64,
    pub out: OutQuant,
}

impl DwJob {
    pub fn out_hw(&self) -> (usize, usize) {
        conv_out_hw(
            (self.h, self.w),
            (self.kh, self.kw),
            self.stride,
            self.pads,
            self.dil,
        )
    }
}

/// Weights from (C, 1, kh, kw) to the tap-major staging layout (kh*kw, C).
pub fn stage_weights(w: &[i32], c: usize, kk: usize) -> Vec<i32> {
    let mut o = vec![0; w.len()];
    for ci in 0..c {
        for t in 0..kk {
            o[t * c + ci] = w[ci * kk + t];
        }
    }
    o
}

/// Place a depthwise problem given in NCHW: input and weights are staged to HWC.
pub fn place(m: &mut Machine, p: &QConv) -> DwJob {
    let hwc = crate::layout::chw_to_hwc(&p.x, p.c_in, p.h, p.w);
    let x = m.put(p.x_elem, &hwc);
    let wt = m.put(p.w_elem, &stage_weights(&p.w_data, p.c_out, p.kh * p.kw));
    let bias = p.bias.as_ref().map(|b| m.put(Elem::I32, b));
    let (ho, wo) = p.out_hw();
    let y = m.alloc(p.c_out * ho * wo * p.y_elem.size());
    DwJob {
        c: p.c_out,
        h: p.h,
        w: p.w,
        kh: p.kh,
        kw: p.kw,
        stride: p.stride,
        pads: p.pads,
        dil: p.dil,
        x,
        x_elem: p.x_elem,
        x_zp: p.x_zp,
        wt,
        w_elem: p.w_elem,
        w_zp: p.w_zp.clone(),
        bias,
        y,
        out: out_quant(p.y_elem, p.y_zp, &p.scales),
    }
}

/// pimkit: accumulators alternate between two registers so a pixel's store overlaps the
/// next. Paper style (quinn Table 2): the single accumulator V15.
const ACCS: [usize; 2] = [15, 12];
const ACCS_PAPER: [usize; 2] = [15, 15];
const FILT: usize = 16;
const BIAS: usize = 25;
const WZP: usize = 26;

pub fn depthwise(m: &mut Machine, j: &DwJob, df: Dataflow) -> Result<()> {
    if j.c == 0 || j.kh == 0 || j.kw == 0 || j.stride.0 == 0 || j.stride.1 == 0 {
        return Err(kerr("QLinearConv-depthwise", "empty shape or zero stride"));
    }
    let v = m.vlen;
    let (ho, wo) = j.out_hw();
    let p = m.vpus();
    let per = ho.div_ceil(p);
    let kk = j.kh * j.kw;
    let resident = kk <= 9;
    // The ring needs consecutive columns (no dilation along W).
    let ring = resident && df != Dataflow::Os && j.dil.1 == 1;
    let paper = m.arch.kernels.is_paper();
    let accs = if paper { ACCS_PAPER } else { ACCS };
    for c0 in (0..j.c).step_by(v) {
        let cl = v.min(j.c - c0);
        for q in 0..p {
            if q * per >= ho {
                continue;
            }
            setup(m, j, q, c0, cl, resident)?;
        }
        // slot_col[q][slot] = input column currently held in ring slot. The ring has one
        // spare column when it fits (V0-V11), so the next column loads while the current
        // pixel computes (software prefetching, quinn §4.3.4).
        // Paper style: exactly the K columns of V0-V8 (quinn Table 2), no spare.
        let cols = if ring && !paper && j.kh * (j.kw + 1) <= 12 {
            j.kw + 1
        } else {
            j.kw
        };
        let mut slots: Vec<Vec<Option<isize>>> = vec![vec![None; cols]; p];
        let mut px = vec![0usize; p];
        let mut pending: Option<Xfer> = None;
        for r in 0..per {
            for ow in 0..wo {
                for q in 0..p {
                    let oh = q * per + r;
                    if oh >= ho.min((q + 1) * per) {
                        continue;
                    }
                    if ow == 0 {
                        slots[q].iter_mut().for_each(|s| *s = None);
                    }
                    m.host_loop(1);
                    // Per-VPU alternation: the deferred store of this VPU's previous pixel
                    // always reads the other accumulator.
                    let acc = accs[px[q] % 2];
                    px[q] += 1;
                    // A deferred store still reading this accumulator goes out first
                    // (paper style has one accumulator per VPU).
                    if paper
                        && pending.is_some_and(|st| st.vpu == q)
                        && let Some(prev) = pending.take()
                    {
                        m.dma_out(&prev)?;
                    }
                    pixel(m, j, q, c0, cl, oh, ow, resident, ring, acc, &mut slots[q])?;
                    let (lo, hi) = j.out.range();
                    let rq = j.out.slice(c0, cl).to_vec();
                    m.vrequant(q, acc, &rq, j.out.zp, lo, hi, cl);
                    let es = j.out.elem.size();
                    // Store the previous pixel only now, so the channel never waits on
                    // the requantization just issued (software pipelining).
                    let st = Xfer::row(
                        q,
                        acc,
                        0,
                        v,
                        j.y + (((oh * wo + ow) * j.c + c0) * es) as u64,
                        j.out.elem,
                        cl,
                    );
                    if paper && p == 1 {
                        // Paper style, one VPU: no software pipelining, store right
                        // away. With several VPUs the store of one VPU's pixel is issued
                        // after the next VPU's work (prefetching across VPUs, §4.3.4).
                        m.dma_out(&st)?;
                    } else if let Some(prev) = pending.replace(st) {
                        m.dma_out(&prev)?;
                    }
                }
            }
        }
        if let Some(prev) = pending.take() {
            m.dma_out(&prev)?;
        }
    }
    m.finish();
    Ok(())
}

fn w_zp_scalar(j: &DwJob) -> Option<i32> {
    (j.w_zp.len() == 1).then(|| j.w_zp[0])
}

/// Per channel slice: resident filter taps (zero point removed), bias, weight zps.
fn setup(m: &mut Machine, j: &DwJob, q: usize, c0: usize, cl: usize, resident: bool) -> Result<()> {
    let v = m.vlen;
    if let Some(b) = j.bias {
        m.dma_in(&Xfer::row(q, BIAS, 0, v, b + 4 * c0 as u64, Elem::I32, cl))?;
    } else {
        m.vmv_vx(q, BIAS, 0, cl);
    }
    if w_zp_scalar(j).is_none() {
        let zp = m.put(Elem::I32, &j.w_zp[c0..c0 + cl]);
        m.dma_in(&Xfer::row(q, WZP, 0, v, zp, Elem::I32, cl))?;
    }
    if resident {
        let kk = j.kh * j.kw;
        let es = j.w_elem.size();
        m.dma_in(&Xfer::rows(
            q,
            FILT,
            v,
            j.wt + (c0 * es) as u64,
            j.w_elem,
            kk,
            cl,
            j.c * es,
        ))?;
        for t in 0..kk {
            sub_wzp(m, j, q, FILT + t, cl);
        }
    }
    Ok(())
}

fn sub_wzp(m: &mut Machine, j: &DwJob, q: usize, reg: usize, cl: usize) {
    match w_zp_scalar(j) {
        Some(0) => {}
        Some(z) => m.vadd_vx(q, reg, reg, -z, cl),
        None => m.vacc_vv(q, reg, WZP, -1, cl),
    }
}

#[allow(clippy::too_many_arguments)]
fn pixel(
    m: &mut Machine,
    j: &DwJob,
    q: usize,
    c0: usize,
    cl: usize,
    oh: usize,
    ow: usize,
    resident: bool,
    ring: bool,
    acc: usize,
    slots: &mut [Option<isize>],
) -> Result<()> {
    let cols = slots.len();
    let v = m.vlen;
    let es = j.x_elem.size();
    let ih0 = (oh * j.stride.0) as isize - j.pads[0] as isize;
    let iw0 = (ow * j.stride.1) as isize - j.pads[1] as isize;
    let valid_ky: Vec<usize> = (0..j.kh)
        .filter(|&ky| {
            let ih = ih0 + (ky * j.dil.0) as isize;
            ih >= 0 && ih < j.h as isize
        })
        .collect();
    let col_ok = |kx: usize| {
        let iw = iw0 + (kx * j.dil.1) as isize;
        iw >= 0 && iw < j.w as isize
    };
    let pix =
        |ih: isize, iw: isize| j.x + (((ih as usize * j.w + iw as usize) * j.c + c0) * es) as u64;
    m.vmv_vv(q, acc, BIAS, cl);
    if valid_ky.is_empty() {
        return Ok(());
    }
    let (ky_lo, nky) = (valid_ky[0], valid_ky.len());
    if !resident {
        // Streaming: one input pixel and one filter vector per tap.
        let mut alt = 0;
        let ws = j.w_elem.size();
        for &ky in &valid_ky {
            for kx in (0..j.kw).filter(|&kx| col_ok(kx)) {
                let ih = ih0 + (ky * j.dil.0) as isize;
                let iw = iw0 + (kx * j.dil.1) as isize;
                m.dma_in(&Xfer::row(q, alt, 0, v, pix(ih, iw), j.x_elem, cl))?;
                m.dma_in(&Xfer::row(
                    q,
                    FILT + alt,
                    0,
                    v,
                    j.wt + (((ky * j.kw + kx) * j.c + c0) * ws) as u64,
                    j.w_elem,
                    cl,
                ))?;
                if j.x_zp != 0 {
                    m.vadd_vx(q, alt, alt, -j.x_zp, cl);
                }
                sub_wzp(m, j, q, FILT + alt, cl);
                m.vmacc_vv(q, acc, alt, FILT + alt, cl);
                alt ^= 1;
            }
        }
        return Ok(());
    }
    let ih_lo = ih0 + (ky_lo * j.dil.0) as isize;
    let row_stride = j.dil.0 * j.w * j.c * es;
    // Register of (ky, kx): ring slot by input column, or the plain tap index.
    let mut reg_of = vec![usize::MAX; j.kw];
    for kx in (0..j.kw).filter(|&kx| col_ok(kx)) {
        let iw = iw0 + (kx * j.dil.1) as isize;
        let slot = if ring {
            iw.rem_euclid(cols as isize) as usize
        } else {
            kx
        };
        reg_of[kx] = slot;
        if ring && slots[slot] == Some(iw) {
            continue; // still resident in the ring
        }
        if m.arch.kernels.is_paper() {
            // Paper style: one unit-stride transaction per HWC pixel (quinn §5.9
            // "successive unit-stride DMA transactions"; Table 2 note c).
            for &ky in &valid_ky {
                let ih = ih0 + (ky * j.dil.0) as isize;
                let reg = ky * cols + slot;
                m.dma_in(&Xfer::row(q, reg, 0, v, pix(ih, iw), j.x_elem, cl))?;
            }
        } else {
            // One 2-D burst loads this column for every valid kernel row.
            m.dma_in(&Xfer {
                vpu: q,
                addr: pix(ih_lo, iw),
                elem: j.x_elem,
                rows: nky,
                cols: cl,
                col_stride: es,
                row_stride,
                vrf_off: (ky_lo * cols + slot) * v,
                vrf_row_stride: cols * v,
            })?;
        }
        if j.x_zp != 0 {
            for &ky in &valid_ky {
                m.vadd_vx(q, ky * cols + slot, ky * cols + slot, -j.x_zp, cl);
            }
        }
        if ring {
            slots[slot] = Some(iw);
        }
    }
    for &ky in &valid_ky {
        for kx in (0..j.kw).filter(|&kx| col_ok(kx)) {
            m.vmacc_vv(q, acc, ky * cols + reg_of[kx], FILT + ky * j.kw + kx, cl);
        }
    }
    Ok(())
}
