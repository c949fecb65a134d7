//! 2-D QLinearConv (CHW, group 1) on the VPUs, quinn §4.3.2 / Table 2: input rows in
//! V0-V20 (originals V0-V18, shifted replicas in V19/V20), filter taps in V31 (read as
//! scalars), output rows V21-V28. One vector MAC covers a whole output row segment;
//! stride-1 replicas come from slides, strided ones from strided DMA bursts. Padding
//! columns are filled with the input zero point (the DMA has no zero padding, ref §1.5),
//! padding rows are skipped. Cooperating VPUs split the output rows into stripes and
//! receive the same broadcast tap.

use super::{Dataflow, OutQuant, Spill, zp_at};
use crate::error::{Result, VpuError, kerr};
use crate::machine::{Batch, Elem, Machine, OpsMemo, Xfer, ceil_u64};
use crate::problem::{QConv, conv_out_hw, out_quant};

mod band;
mod floor;
mod strided;
mod values;

/// A convolution with operands in simulated memory (CHW input, OIHW weights).
#[derive(Clone, Debug)]
pub struct ConvJob {
    pub c_in: usize,
    pub h: usize,
    pub w: usize,
    pub c_out: usize,
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
    /// Bias stays in host memory (staged offline; read with one load per channel).
    pub bias: Option<Vec<i32>>,
    pub y: u64,
    pub out: OutQuant,
}

impl ConvJob {
    /// The independent convolutions of a grouped one (`groups` divides both channel
    /// counts; `self.c_in`/`c_out` are the totals): each reads its block of input
    /// channels, filters, bias, zero points and scales and writes its block of outputs
    /// (CHW and OIHW keep every block contiguous). One group returns the job itself.
    pub fn split_groups(&self, groups: usize) -> Vec<ConvJob> {
        if groups <= 1 {
            return vec![self.clone()];
        }
        let (cig, cog) = (self.c_in / groups, self.c_out / groups);
        let (ho, wo) = self.out_hw();
        let (xs, ws, ys) = (self.x_elem.size(), self.w_elem.size(), self.out.elem.size());
        (0..groups)
            .map(|g| {
                let c0 = g * cog;
                let part = |v: &[i32]| {
                    if v.len() == 1 {
                        v.to_vec()
                    } else {
                        v[c0..c0 + cog].to_vec()
                    }
                };
                ConvJob {
                    c_in: cig,
                    c_out: cog,
                    x: self.x + (g * cig * self.h * self.w * xs) as u64,
                    wt: self.wt + (c0 * cig * self.kh * self.kw * ws) as u64,
                    w_zp: part(&self.w_zp),
                    bias: self.bias.as_ref().map(|b| b[c0..c0 + cog].to_vec()),
                    y: self.y + (c0 * ho * wo * ys) as u64,
                    out: OutQuant {
                        elem: self.out.elem,
                        zp: self.out.zp,
                        rq: self.out.slice(c0, cog).to_vec(),
                    },
                    ..self.clone()
                }
            })
            .collect()
    }

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

pub fn place(m: &mut Machine, p: &QConv) -> ConvJob {
    let x = m.put(p.x_elem, &p.x);
    let wt = m.put(p.w_elem, &p.w_data);
    let (ho, wo) = p.out_hw();
    let y = m.alloc(p.c_out * ho * wo * p.y_elem.size());
    ConvJob {
        c_in: p.c_in,
        h: p.h,
        w: p.w,
        c_out: p.c_out,
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
        bias: p.bias.clone(),
        y,
        out: out_quant(p.y_elem, p.y_zp, &p.scales),
    }
}

const W_REG: usize = 31;
const ACC0: usize = 21;
const MAX_OUT_ROWS: usize = 8;
const MAX_IN_ROWS: usize = 19;
const SCRATCH: [usize; 2] = [19, 20];

struct Geo {
    ho: usize,
    wo: usize,
    rt: usize,
    wc: usize,
    stripes: Vec<(usize, usize)>,
    steps: usize,
    taps_per_load: usize,
    spill: Option<u64>,
}

impl Geo {
    /// The partial sums of channel `co`, rows `oh0..oh0+n`, columns `w0..w0+nw`.
    fn spill_at(&self, q: usize, co: usize, oh0: usize, n: usize, w0: usize, nw: usize) -> Spill {
        Spill {
            buf: self.spill,
            vpu: q,
            reg: ACC0,
            at: (co * self.ho + oh0) * self.wo + w0,
            rows: n,
            cols: nw,
            row_elems: self.wo,
        }
    }
    /// Output rows (oh0, n) of VPU `q` at step `t`.
    fn tile(&self, q: usize, t: usize) -> Option<(usize, usize)> {
        let (s, e) = self.stripes[q];
        let r0 = s + t * self.rt;
        (r0 < e).then(|| (r0, self.rt.min(e - r0)))
    }
}

/// Whether the 2-D kernel's registers can hold this filter: one dilated filter row in a
/// register, its rows in the input window, its taps in V31. Checked before anything runs,
/// so a network can send a layer that does not fit to the host instead. Returns the
/// dilated filter's (width, height) in input samples.
pub(crate) fn check_geometry(
    kernel: (usize, usize),
    stride: (usize, usize),
    dil: (usize, usize),
    v: usize,
) -> Result<(usize, usize)> {
    let ((kh, kw), (sh, sw), (dh, dw)) = (kernel, stride, dil);
    if kh == 0 || kw == 0 || sh == 0 || sw == 0 || dh == 0 || dw == 0 {
        return Err(kerr(
            "QLinearConv",
            "kernel, strides and dilations must be positive",
        ));
    }
    let span_w = (kw - 1) * dw + 1;
    if sw == 1 && span_w > v {
        return Err(VpuError::VrfTooSmall {
            kernel: "QLinearConv",
            msg: format!(
                "a {span_w}-wide dilated filter row needs more than the {v} elements of one register"
            ),
        });
    }
    let span_h = (kh - 1) * dh + 1;
    if span_h > MAX_IN_ROWS {
        return Err(VpuError::VrfTooSmall {
            kernel: "QLinearConv",
            msg: format!(
                "a {span_h}-row dilated filter needs more than the {MAX_IN_ROWS} input registers"
            ),
        });
    }
    if kh * kw > v {
        return Err(VpuError::VrfTooSmall {
            kernel: "QLinearConv",
            msg: format!("{} filter taps exceed one register ({v})", kh * kw),
        });
    }
    Ok((span_w, span_h))
}

fn plan(m: &mut Machine, j: &ConvJob, df: Dataflow) -> Result<Geo> {
    let v = m.vlen;
    let (ho, wo) = j.out_hw();
    let (span_w, span_h) = check_geometry((j.kh, j.kw), j.stride, j.dil, v)?;
    let wc = if j.stride.1 == 1 { v - (span_w - 1) } else { v };
    let mut rt = MAX_OUT_ROWS.min(ho);
    while rt > 1 && (rt - 1) * j.stride.0 + span_h > MAX_IN_ROWS {
        rt -= 1;
    }
    let p = m.vpus();
    let per = ho.div_ceil(p);
    let stripes: Vec<(usize, usize)> = (0..p)
        .map(|q| ((q * per).min(ho), ((q + 1) * per).min(ho)))
        .collect();
    let steps = per.div_ceil(rt);
    let kk = j.kh * j.kw;
    let spill = (df != Dataflow::Os && j.c_in > 1).then(|| m.alloc(j.c_out * ho * wo * 4));
    Ok(Geo {
        ho,
        wo,
        rt,
        wc,
        stripes,
        steps,
        taps_per_load: v / kk,
        spill,
    })
}

/// Run the 2-D convolution with dataflow `df`.
pub fn conv2d(m: &mut Machine, j: &ConvJob, df: Dataflow) -> Result<()> {
    let g = plan(m, j, df)?;
    let p = m.vpus();
    let w_chunks = g.wo.div_ceil(g.wc);
    let mut taps = TapCache::default();
    let mut scratch = MacScratch::new(p);
    let mut floor = floor::Floor::new(m, j, &g, df, &mut scratch);
    // A band load and a `macs` call, each followed by its floor's count.
    let bands = |m: &mut Machine, floor: &mut floor::Floor, t, wx, ci| -> Result<()> {
        let c0 = floor::Floor::counters(m);
        load_bands(m, j, &g, t, wx, ci)?;
        floor.bands_done(m, &c0, t, wx);
        Ok(())
    };
    let macs =
        |m: &mut Machine, s: &mut MacScratch, floor: &mut floor::Floor, t, wx, ci, tv: &[i32]| {
            let c0 = floor::Floor::counters(m);
            macs(m, j, &g, t, wx, ci, tv, s)?;
            floor.macs_done(m, &c0, t, wx)
        };
    match df {
        Dataflow::Os => {
            for (t, wx, co) in os_order(m, j, &g, w_chunks) {
                m.host_loop(1);
                init(m, j, &g, t, wx, co, 0)?;
                for ci in 0..j.c_in {
                    m.host_loop(1);
                    let tv = taps.get(m, j, &g, co, ci, &mut floor)?;
                    bands(m, &mut floor, t, wx, ci)?;
                    macs(m, &mut scratch, &mut floor, t, wx, ci, tv)?;
                }
                finish_tile(m, j, &g, t, wx, co, j.c_in - 1)?;
            }
        }
        Dataflow::Is => {
            for t in 0..g.steps {
                for wx in 0..w_chunks {
                    for ci in 0..j.c_in {
                        m.host_loop(1);
                        bands(m, &mut floor, t, wx, ci)?;
                        for co in 0..j.c_out {
                            m.host_loop(1);
                            let tv = taps.get(m, j, &g, co, ci, &mut floor)?;
                            init(m, j, &g, t, wx, co, ci)?;
                            macs(m, &mut scratch, &mut floor, t, wx, ci, tv)?;
                            finish_tile(m, j, &g, t, wx, co, ci)?;
                        }
                    }
                }
            }
        }
        Dataflow::Ws => {
            for co in 0..j.c_out {
                for ci in 0..j.c_in {
                    m.host_loop(1);
                    let tv = taps.get(m, j, &g, co, ci, &mut floor)?;
                    for t in 0..g.steps {
                        for wx in 0..w_chunks {
                            m.host_loop(1);
                            init(m, j, &g, t, wx, co, ci)?;
                            bands(m, &mut floor, t, wx, ci)?;
                            macs(m, &mut scratch, &mut floor, t, wx, ci, tv)?;
                            finish_tile(m, j, &g, t, wx, co, ci)?;
                        }
                    }
                }
            }
        }
    }
    floor.end();
    m.finish();
    Ok(())
}

/// The OS output tiles (H-tile, W-chunk, output channel) in execution order. pimkit
/// sweeps C_out inside each H-tile, so the band re-fetches of the next channel hit the
/// cache. Paper style sweeps the image inside each output channel: the band is
/// re-fetched "across the C_out sweep, which the scalar schedule's output-row tiling
/// avoids and the cache only partly absorbs" (quinn §5.9, the 2-D conv L_I of Table 3).
fn os_order(m: &Machine, j: &ConvJob, g: &Geo, w_chunks: usize) -> Vec<(usize, usize, usize)> {
    let mut v = Vec::with_capacity(g.steps * w_chunks * j.c_out);
    if m.arch.kernels.is_paper() {
        for co in 0..j.c_out {
            for t in 0..g.steps {
                for wx in 0..w_chunks {
                    v.push((t, wx, co));
                }
            }
        }
    } else {
        for t in 0..g.steps {
            for wx in 0..w_chunks {
                for co in 0..j.c_out {
                    v.push((t, wx, co));
                }
            }
        }
    }
    v
}

/// Filter taps in V31 of VPU 0, loaded a channel group at a time and read by the host
/// once per (co, ci) with xvmv.x.s (zero point subtracted on the host).
#[derive(Default)]
struct TapCache {
    loaded: Option<(usize, usize)>,
    /// The taps of the last (co, ci) read, reused (no allocation per channel pair).
    vals: Vec<i32>,
}

impl TapCache {
    fn get(
        &mut self,
        m: &mut Machine,
        j: &ConvJob,
        g: &Geo,
        co: usize,
        ci: usize,
        floor: &mut floor::Floor,
    ) -> Result<&[i32]> {
        let before = floor::Floor::counters(m);
        let kk = j.kh * j.kw;
        let grp = g.taps_per_load;
        let c0 = ci / grp * grp;
        if self.loaded != Some((co, c0)) {
            let n = grp.min(j.c_in - c0) * kk;
            let es = j.w_elem.size();
            m.dma_in(&Xfer::row(
                0,
                W_REG,
                0,
                m.vlen,
                j.wt + (((co * j.c_in + c0) * kk) * es) as u64,
                j.w_elem,
                n,
            ))?;
            self.loaded = Some((co, c0));
        }
        let zp = zp_at(&j.w_zp, co);
        let base = (ci - c0) * kk;
        self.vals.clear();
        // The kk reads (xvmv.x.s) as one batch, unless a clock could saturate in it.
        let c = ceil_u64(m.arch.vpu.cycles.mv_x_s);
        let step = m.arch.host.scalar_step_cycles;
        let v = m.vlen;
        let batch = c
            .checked_add(step)
            .ok_or(())
            .and_then(|per| m.batch(kk as u64, per, 0));
        match batch {
            Ok((b, vrf)) => {
                if let Some(mut b) = b {
                    for _ in 0..kk {
                        b.sync_read(0, W_REG, c, step);
                    }
                    b.end();
                }
                match vrf {
                    Some(f) => {
                        let at = W_REG * v + base;
                        self.vals.extend(f[0][at..at + kk].iter().map(|&x| x - zp));
                    }
                    None => self.vals.extend((0..kk).map(|_| -zp)),
                }
            }
            Err(()) => self
                .vals
                .extend((0..kk).map(|i| m.vmv_x_s(0, W_REG, base + i) - zp)),
        }
        floor.taps_done(m, &before);
        Ok(&self.vals)
    }
}

/// Output column range of chunk `wx`: (first output column, count).
fn chunk(g: &Geo, wx: usize) -> (usize, usize) {
    let w0 = wx * g.wc;
    (w0, g.wc.min(g.wo - w0))
}

/// Valid input rows (ih) that feed output rows `oh0..oh0+n`.
fn band_rows(j: &ConvJob, tile: (usize, usize)) -> (isize, usize) {
    let first = (tile.0 * j.stride.0) as isize - j.pads[0] as isize;
    let count = (tile.1 - 1) * j.stride.0 + (j.kh - 1) * j.dil.0 + 1;
    (first, count)
}

/// Load one input row segment into `reg` covering padded input columns starting at
/// `col0` (may be negative), `len` positions `step` apart; pad with x_zp, subtract x_zp.
fn load_segment(
    m: &mut Machine,
    j: &ConvJob,
    q: usize,
    reg: usize,
    ci: usize,
    ih: usize,
    col0: isize,
    len: usize,
    step: usize,
) -> Result<()> {
    let v = m.vlen;
    let (lo, hi) = valid_cols(j, col0, len, step);
    if lo > 0 || hi < len {
        m.vmv_vx(q, reg, j.x_zp, len);
    }
    if hi > lo {
        let es = j.x_elem.size();
        let c = (col0 + (lo * step) as isize) as usize;
        m.dma_in(&Xfer {
            vpu: q,
            addr: j.x + (((ci * j.h + ih) * j.w + c) * es) as u64,
            elem: j.x_elem,
            rows: 1,
            cols: hi - lo,
            col_stride: step * es,
            row_stride: 0,
            vrf_off: reg * v + lo,
            vrf_row_stride: v,
        })?;
    }
    if j.x_zp != 0 {
        m.vadd_vx(q, reg, reg, -j.x_zp, len);
    }
    Ok(())
}

/// The positions `lo..hi` of a segment (`len` positions `step` apart from padded
/// column `col0`) that lie inside the input: 0 <= col0 + c*step < W.
fn valid_cols(j: &ConvJob, col0: isize, len: usize, step: usize) -> (usize, usize) {
    let lo = if col0 >= 0 {
        0
    } else {
        ((-col0) as usize).div_ceil(step)
    };
    let mut hi = len;
    while hi > lo && col0 + ((hi - 1) * step) as isize >= j.w as isize {
        hi -= 1;
    }
    (lo, hi)
}

/// Every VPU's band for step `t` (stride-1 widths; strided ones load per tap in `macs`):
/// as one batch where it can be, else row by row.
fn load_bands(m: &mut Machine, j: &ConvJob, g: &Geo, t: usize, wx: usize, ci: usize) -> Result<()> {
    if j.stride.1 != 1 || band::load_bands_batched(m, j, g, t, wx, ci)? {
        return Ok(());
    }
    for q in 0..m.vpus() {
        if let Some(tile) = g.tile(q, t) {
            load_band(m, j, g, q, tile, wx, ci)?;
        }
    }
    Ok(())
}

/// Stride-1 width: load the band's original rows into V0.. (one register per input row).
fn load_band(
    m: &mut Machine,
    j: &ConvJob,
    g: &Geo,
    q: usize,
    tile: (usize, usize),
    wx: usize,
    ci: usize,
) -> Result<()> {
    if j.stride.1 != 1 {
        return Ok(()); // strided replicas are loaded per tap in `macs`
    }
    let (w0, nw) = chunk(g, wx);
    let (first, count) = band_rows(j, tile);
    let len = nw + (j.kw - 1) * j.dil.1;
    let col0 = w0 as isize - j.pads[1] as isize;
    for r in 0..count {
        let ih = first + r as isize;
        if ih < 0 || ih >= j.h as isize {
            continue;
        }
        load_segment(m, j, q, r, ci, ih as usize, col0, len, 1)?;
    }
    Ok(())
}

/// `macs`' working lists, allocated once per kernel call (`macs` runs once per channel
/// pair and tile): the input rows' users, tabulated once per step `t` (they depend on
/// the VPUs' tiles only, not on the channels).
struct MacScratch {
    p: usize,
    /// The step `tab` holds.
    step: Option<usize>,
    tab: StepTables,
    /// The tables of steps prepared before, by step (WS sweeps every step once per
    /// channel pair: each step's tables are built once, not once per pair).
    kept: Vec<Option<StepTables>>,
    /// One tap column's (accumulator, tap) targets.
    group: Vec<(usize, i32)>,
    /// The schedules of the stride-1 slides and MACs seen so far.
    memo: OpsMemo,
}

/// One step's tables.
#[derive(Default)]
struct StepTables {
    /// The band row count.
    count: usize,
    /// Per band row `r` and VPU `q`, at `r * p + q`: the users of the row (output row,
    /// ky), their number (0: the row is padding or outside the VPU's band) and the
    /// input row.
    users: Vec<[(usize, usize); MAX_OUT_ROWS]>,
    nus: Vec<usize>,
    ihs: Vec<usize>,
    /// The registers the stride-1 slides and MACs of the step use (band rows, scratch,
    /// accumulators).
    regs: Vec<usize>,
    /// Per VPU `q`, at `out_at[q]..out_at[q + 1]`: every (output row, band row, ky)
    /// MAC target of the step, by output row (`values.rs`).
    by_out: Vec<(usize, usize, usize)>,
    out_at: Vec<usize>,
    /// The step's slides and MACs (all VPUs).
    ops: u64,
}

impl MacScratch {
    fn new(p: usize) -> MacScratch {
        MacScratch {
            p,
            step: None,
            tab: StepTables::default(),
            kept: Vec::new(),
            group: Vec::with_capacity(MAX_OUT_ROWS),
            memo: OpsMemo::default(),
        }
    }

    /// Tabulate the users of step `t`'s band rows (once per step: the tables of the
    /// step in use are kept when another step's are needed).
    fn prepare(&mut self, j: &ConvJob, g: &Geo, t: usize) {
        if self.step == Some(t) {
            return;
        }
        if let Some(old) = self.step {
            if self.kept.len() <= old {
                self.kept.resize_with(old + 1, || None);
            }
            self.kept[old] = Some(std::mem::take(&mut self.tab));
        }
        self.step = Some(t);
        self.tab = match self.kept.get_mut(t).and_then(Option::take) {
            Some(k) => k,
            None => StepTables::new(j, g, t, self.p),
        };
    }
}

impl StepTables {
    /// The tables of step `t` with `p` VPUs.
    fn new(j: &ConvJob, g: &Geo, t: usize, p: usize) -> StepTables {
        let tiles: Vec<Option<(usize, usize)>> = (0..p).map(|q| g.tile(q, t)).collect();
        let count = tiles
            .iter()
            .flatten()
            .map(|&tile| band_rows(j, tile).1)
            .max()
            .unwrap_or(0);
        let mut users = vec![[(0, 0); MAX_OUT_ROWS]; count * p];
        let mut nus = vec![0; count * p];
        let mut ihs = vec![0; count * p];
        for r in 0..count {
            let at = r * p..(r + 1) * p;
            row_users(
                j,
                &tiles,
                r,
                &mut users[at.clone()],
                &mut nus[at.clone()],
                &mut ihs[at],
            );
        }
        let mut by_out = Vec::new();
        let mut out_at = Vec::with_capacity(p + 1);
        for q in 0..p {
            out_at.push(by_out.len());
            let start = by_out.len();
            for r in 0..count {
                let at = r * p + q;
                by_out.extend(users[at][..nus[at]].iter().map(|&(o, ky)| (o, r, ky)));
            }
            by_out[start..].sort_by_key(|e| e.0);
        }
        out_at.push(by_out.len());
        let rows = nus.iter().filter(|&&nu| nu > 0).count();
        let ops = (by_out.len() * j.kw + rows * (j.kw - 1)) as u64;
        let mut regs: Vec<usize> = (0..count)
            .chain(SCRATCH)
            .chain(ACC0..ACC0 + MAX_OUT_ROWS)
            .collect();
        regs.sort_unstable();
        regs.dedup();
        StepTables {
            count,
            users,
            nus,
            ihs,
            regs,
            by_out,
            out_at,
            ops,
        }
    }
}

impl MacScratch {
    /// The tap columns `macs` issues, in order: every kx of each band row some VPU uses
    /// (`nus` depends on the row and VPU only), with the scratch register parity the
    /// column's slide takes (it flips after every such column).
    fn columns(&self, kw: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        let p = self.p;
        (0..self.tab.count)
            .filter(move |&r| self.tab.nus[r * p..(r + 1) * p].iter().any(|&nu| nu > 0))
            .flat_map(move |r| (0..kw).map(move |kx| (r, kx)))
            .enumerate()
            .map(|(i, (r, kx))| (r, kx, i % 2))
    }

    /// The VPUs that use band row `r`: (VPU `q`, table entry `r * p + q`, its user count).
    fn row_vpus(&self, r: usize) -> impl Iterator<Item = (usize, usize, usize)> + '_ {
        (r * self.p..(r + 1) * self.p)
            .enumerate()
            .map(|(q, at)| (q, at, self.tab.nus[at]))
            .filter(|&(_, _, nu)| nu > 0)
    }
}

/// The padded input column (negative inside the left padding) tap column `kx` reads for
/// output column `w0`.
fn tap_col0(j: &ConvJob, w0: usize, kx: usize) -> isize {
    (w0 * j.stride.1 + kx * j.dil.1) as isize - j.pads[1] as isize
}

/// All MACs of input channel `ci` for step `t`, issued VPU-interleaved so the
/// cooperating VPUs run concurrently (same broadcast tap, own input stripe).
#[allow(clippy::too_many_arguments)]
fn macs(
    m: &mut Machine,
    j: &ConvJob,
    g: &Geo,
    t: usize,
    wx: usize,
    ci: usize,
    taps: &[i32],
    s: &mut MacScratch,
) -> Result<()> {
    let (w0, nw) = chunk(g, wx);
    let p = m.vpus();
    s.prepare(j, g, t);
    let count = s.tab.count;
    // Every MAC and slide here works on `nw` elements: their costs once per call.
    let mac_c = m.vcost(m.arch.vpu.cycles.mac, nw);
    let slide_c = m.vcost(m.arch.vpu.cycles.slide, nw);
    if j.stride.1 == 1 {
        // Slides and MACs only (no DMA): the whole call as one batch when no clock
        // can saturate in it (at most a slide and MAX_OUT_ROWS MACs per VPU and tap
        // column).
        let v = m.vlen;
        let cols = (count * j.kw) as u64;
        let instrs = cols * (p * (1 + MAX_OUT_ROWS)) as u64;
        if let Ok((b, vrf)) = m.batch(instrs, mac_c.max(slide_c), cols) {
            if let Some(mut b) = b {
                // The same slides and MACs for every channel pair of this step and chunk.
                let mut memo = std::mem::take(&mut s.memo);
                let name = [t as u64, wx as u64, mac_c, slide_c];
                memo.run(&mut b, &name, &s.tab.regs, s.tab.ops, |b| {
                    macs_timing(b, j, s, (mac_c, slide_c))
                });
                s.memo = memo;
                b.end();
            }
            if let Some(f) = vrf {
                values::step_values(f, v, j, nw, taps, s);
            }
            return Ok(());
        }
    } else if strided::macs_batched(m, j, (w0, nw), ci, taps, s, mac_c)? {
        return Ok(());
    }
    // One issue at a time (a clock could saturate in a batch); `group` is borrowed out
    // of the scratch while its tables are read.
    let mut group = std::mem::take(&mut s.group);
    for (r, kx, sc) in s.columns(j.kw) {
        for (q, at, nu) in s.row_vpus(r) {
            let src = if j.stride.1 == 1 {
                if kx == 0 {
                    r
                } else {
                    m.vslidedown_costing(q, SCRATCH[sc], r, kx * j.dil.1, nw, slide_c);
                    SCRATCH[sc]
                }
            } else {
                let col0 = tap_col0(j, w0, kx);
                load_segment(
                    m,
                    j,
                    q,
                    SCRATCH[sc],
                    ci,
                    s.tab.ihs[at],
                    col0,
                    nw,
                    j.stride.1,
                )?;
                SCRATCH[sc]
            };
            group.clear();
            group.extend(
                s.tab.users[at][..nu]
                    .iter()
                    .map(|&(o, ky)| (ACC0 + o, taps[ky * j.kw + kx])),
            );
            m.vmacc_vx_each_costing(q, src, nw, &group, mac_c);
        }
        m.host_loop(1);
    }
    s.group = group;
    Ok(())
}

/// Per VPU, the users of band row `r` (the same for every kx and channel):
/// `nus[q]` (output row, ky) pairs in `users[q]`, and the input row in `ihs[q]`; none
/// where the row is padding or outside the VPU's band.
fn row_users(
    j: &ConvJob,
    tiles: &[Option<(usize, usize)>],
    r: usize,
    users: &mut [[(usize, usize); MAX_OUT_ROWS]],
    nus: &mut [usize],
    ihs: &mut [usize],
) {
    for (q, tile) in tiles.iter().enumerate() {
        nus[q] = 0;
        let Some(tile) = *tile else { continue };
        let (first, cnt) = band_rows(j, tile);
        let ih = first + r as isize;
        if r >= cnt || ih < 0 || ih >= j.h as isize {
            continue;
        }
        ihs[q] = ih as usize;
        // Output rows fed by this input row: r = (oh - oh0)*s + ky*d (a tile has at
        // most MAX_OUT_ROWS rows).
        let mut nu = 0;
        for o in 0..tile.1 {
            let Some(d) = r.checked_sub(o * j.stride.0) else {
                break; // later rows start further down
            };
            // No division for the usual undilated filter.
            let ky = match j.dil.0 {
                1 => d,
                dil if d.is_multiple_of(dil) => d / dil,
                _ => continue,
            };
            if ky < j.kh {
                users[q][nu] = (o, ky);
                nu += 1;
            }
        }
        nus[q] = nu;
    }
}

/// The timing of `macs` for a stride-1 width on batch `b`: the same instructions in
/// the same order (their values come from [`macs_data`]; no instruction's timing
/// depends on a value).
fn macs_timing(b: &mut Batch<'_>, j: &ConvJob, s: &MacScratch, (mac_c, slide_c): (u64, u64)) {
    for (r, kx, sc) in s.columns(j.kw) {
        for (q, at, nu) in s.row_vpus(r) {
            let src = if kx == 0 {
                r
            } else {
                b.op(q, r, SCRATCH[sc], slide_c);
                SCRATCH[sc]
            };
            for &(o, _) in &s.tab.users[at][..nu] {
                b.op(q, src, ACC0 + o, mac_c);
            }
        }
        b.host_loop();
    }
}

/// Start an output tile from the bias (first input channel) or the spilled partial sums.
fn init(
    m: &mut Machine,
    j: &ConvJob,
    g: &Geo,
    t: usize,
    wx: usize,
    co: usize,
    ci: usize,
) -> Result<()> {
    let (w0, nw) = chunk(g, wx);
    for q in 0..m.vpus() {
        let Some((oh0, n)) = g.tile(q, t) else {
            continue;
        };
        if ci > 0 {
            g.spill_at(q, co, oh0, n, w0, nw).reload(m)?;
        } else {
            m.host(1); // bias load
            let b = j.bias.as_ref().map_or(0, |b| b[co]);
            for o in 0..n {
                m.vmv_vx(q, ACC0 + o, b, nw);
            }
        }
    }
    Ok(())
}

/// After input channel `ci`: requantize and store when it was the last, else spill.
fn finish_tile(
    m: &mut Machine,
    j: &ConvJob,
    g: &Geo,
    t: usize,
    wx: usize,
    co: usize,
    ci: usize,
) -> Result<()> {
    let (w0, nw) = chunk(g, wx);
    for q in 0..m.vpus() {
        let Some((oh0, n)) = g.tile(q, t) else {
            continue;
        };
        if ci + 1 == j.c_in {
            let at = (co * g.ho + oh0) * g.wo + w0;
            j.out
                .store_rows(m, q, ACC0, n, nw, |_| j.out.at(co), j.y, at, g.wo)?;
        } else {
            g.spill_at(q, co, oh0, n, w0, nw).store(m)?;
        }
    }
    Ok(())
}
