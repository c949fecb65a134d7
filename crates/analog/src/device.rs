//! Programming a weight matrix into crossbar arrays for one trial: nominal cell levels,
//! stuck-at faults, programming variation, spare-column remapping, redundancy and the
//! first-order IR drop, folded into one effective matrix per array row chunk.
//!
//! Conductances are in level units: a cell at level s conducts s + g0 steps, where
//! g0 = Gmin / step = (2^c - 1) / (on_off - 1). The array's column current minus its
//! partner (differential) or the reference column at Gmin (offset encoding) is the
//! effective level difference E = s + (G' - G) - (G'_ref - G_ref): exactly the integer
//! level when nothing perturbs the cells.

use crate::config::Config;
use crate::encode::IntWeights;
use crate::irdrop;
use crate::rng::{Stream, mix};

use serde::{Deserialize, Serialize};

/// How the mapping cuts one matrix into arrays: weight rows per array along the input
/// dimension (in order, summing to the matrix's rows) and outputs per array.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatMap {
    pub row_chunks: Vec<usize>,
    pub cols_per_array: usize,
}

impl MatMap {
    /// Even chunks of at most `rows` rows and `cols` outputs (a mapping without packing).
    pub fn uniform(k: usize, rows: usize, cols: usize) -> MatMap {
        let rows = rows.max(1);
        let mut row_chunks = vec![rows; k / rows];
        if !k.is_multiple_of(rows) || k == 0 {
            row_chunks.push(k % rows);
        }
        MatMap {
            row_chunks,
            cols_per_array: cols.max(1),
        }
    }
}

/// Counts over all programmed cells (every copy and spare used).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ProgramStats {
    pub cells: u64,
    pub stuck_off: u64,
    pub stuck_on: u64,
    /// Faulty columns moved to a spare.
    pub remapped_cols: u64,
    /// Largest relative IR-drop correction of one cell.
    pub ir_drop_max: f64,
}

impl ProgramStats {
    pub fn add(&mut self, o: &ProgramStats) {
        self.cells += o.cells;
        self.stuck_off += o.stuck_off;
        self.stuck_on += o.stuck_on;
        self.remapped_cols += o.remapped_cols;
        self.ir_drop_max = self.ir_drop_max.max(o.ir_drop_max);
    }
}

/// The arrays holding rows `r0 .. r0 + rows` of a matrix: `e` is rows x width, row-major;
/// column `s * n + j` is slice s of output j; with read noise, columns `S*n ..` hold the
/// variance coefficient sigma^2 sum G^2 of the same entries.
#[derive(Clone, Debug)]
pub struct Chunk {
    pub r0: usize,
    pub rows: usize,
    pub width: usize,
    pub e: Vec<f32>,
}

/// One matrix programmed for one trial.
#[derive(Clone, Debug)]
pub struct Arrays {
    pub k: usize,
    pub n: usize,
    pub slices: usize,
    pub noisy: bool,
    pub chunks: Vec<Chunk>,
    pub stats: ProgramStats,
}

/// The random streams of one array: stuck-at draws and programming-error draws come from
/// separate streams, so a sweep over one rate keeps the other's pattern (common random
/// numbers) and a zero rate draws nothing.
pub(crate) struct CellRng {
    saf: Stream,
    var: Stream,
}

impl CellRng {
    fn new(seed: u64) -> Self {
        CellRng {
            saf: Stream::new(mix(seed, &[0])),
            var: Stream::new(mix(seed, &[1])),
        }
    }
}

/// Draws for one cell of nominal conductance `g` (level units): (conductance, fault).
#[inline]
fn draw_cell(cfg: &Config, g0: f64, top: f64, g: f64, rng: &mut CellRng) -> (f64, u8) {
    let d = &cfg.device;
    if d.saf_off > 0.0 || d.saf_on > 0.0 {
        let u = rng.saf.uniform();
        if u < d.saf_off {
            return (g0, 1);
        }
        if u >= 1.0 - d.saf_on {
            return (g0 + top, 2);
        }
    }
    if d.variation == 0.0 {
        return (g, 0);
    }
    let z = rng.var.normal();
    let v = match d.variation_model {
        crate::config::VariationModel::Gaussian => g * (1.0 + d.variation * z),
        crate::config::VariationModel::Lognormal => g * (d.variation * z).exp(),
    };
    (v.max(0.0), 0)
}

/// Program `w` into arrays following `map` for the trial whose random stream is `seed`.
pub fn program(w: &IntWeights, map: &MatMap, cfg: &Config, seed: u64) -> Arrays {
    let geom = &cfg.geom;
    let (s_n, n) = (geom.slices(), w.n);
    let d = &cfg.device;
    let noisy = d.read_noise > 0.0;
    let perturb = d.programming_is_random() || d.wire_resistance_ohm > 0.0 || noisy;
    let width = if noisy { 2 * s_n * n } else { s_n * n };
    let mut chunks = Vec::with_capacity(map.row_chunks.len());
    let mut stats = ProgramStats::default();
    let mut r0 = 0;
    for (ci, &rows) in map.row_chunks.iter().enumerate() {
        let mut e = vec![0f32; rows * width];
        for i in 0..rows {
            for j in 0..n {
                let v = w.w[(r0 + i) * n + j];
                for s in 0..s_n {
                    let (p, m) = IntWeights::levels(v, s, geom);
                    e[i * width + s * n + j] = p as f32 - m as f32;
                }
            }
        }
        if perturb {
            let mut j0 = 0;
            let mut b = 0u64;
            while j0 < n {
                let j1 = (j0 + map.cols_per_array).min(n);
                let mut rng = CellRng::new(mix(seed, &[ci as u64, b]));
                let st = perturb_array(w, cfg, r0, rows, j0, j1, &mut e, width, &mut rng);
                stats.add(&st);
                j0 = j1;
                b += 1;
            }
        }
        chunks.push(Chunk { r0, rows, width, e });
        r0 += rows;
    }
    Arrays {
        k: w.k,
        n,
        slices: s_n,
        noisy,
        chunks,
        stats,
    }
}

/// Nominal levels of one physical array: rows x cols, outputs j0..j1 of rows r0..r0+rows,
/// columns (j, slice, polarity) then the reference column (offset encoding).
fn nominal(
    w: &IntWeights,
    cfg: &Config,
    r0: usize,
    rows: usize,
    j0: usize,
    j1: usize,
) -> (Vec<u32>, usize) {
    let geom = &cfg.geom;
    let (s_n, pol) = (geom.slices(), if geom.differential { 2 } else { 1 });
    let cols = (j1 - j0) * s_n * pol + usize::from(!geom.differential);
    let mut lv = vec![0u32; rows * cols];
    for i in 0..rows {
        for j in j0..j1 {
            let v = w.w[(r0 + i) * w.n + j];
            for s in 0..s_n {
                let (p, m) = IntWeights::levels(v, s, geom);
                let c = ((j - j0) * s_n + s) * pol;
                lv[i * cols + c] = p;
                if pol == 2 {
                    lv[i * cols + c + 1] = m;
                }
            }
        }
    }
    (lv, cols)
}

/// Perturb one array (all its copies) and add the effective-level error to `e`.
fn perturb_array(
    w: &IntWeights,
    cfg: &Config,
    r0: usize,
    rows: usize,
    j0: usize,
    j1: usize,
    e: &mut [f32],
    width: usize,
    rng: &mut CellRng,
) -> ProgramStats {
    let geom = &cfg.geom;
    let d = &cfg.device;
    let top = geom.max_level() as f64;
    let g0 = d.g0(geom.max_level());
    let (s_n, n, pol) = (geom.slices(), w.n, if geom.differential { 2 } else { 1 });
    let (lv, cols) = nominal(w, cfg, r0, rows, j0, j1);
    let copies = cfg.analog.redundancy.max(1);
    // Step conductance in siemens for the IR drop: (Gmax - Gmin) / (2^c - 1).
    let gmax = d.g_max_us * 1e-6;
    let step = (gmax - gmax / d.on_off_ratio) / top;
    let alpha = d.wire_resistance_ohm * step;
    let mut delta = vec![0f64; rows * cols];
    let mut sq = vec![0f64; rows * cols];
    let mut st = ProgramStats::default();
    let mut g = vec![0f64; rows * cols];
    let mut fault = vec![0u8; rows * cols];
    let noisy = d.read_noise > 0.0;
    let spares = cfg.analog.spare_cols > 0;
    for _ in 0..copies {
        for k in 0..rows * cols {
            let (v, f) = draw_cell(cfg, g0, top, lv[k] as f64 + g0, rng);
            g[k] = v;
            fault[k] = f;
        }
        if spares {
            remap_spares(
                cfg, g0, top, &lv, &mut g, &mut fault, rows, cols, rng, &mut st,
            );
        }
        st.cells += (rows * cols) as u64;
        for &f in &fault {
            st.stuck_off += u64::from(f == 1);
            st.stuck_on += u64::from(f == 2);
        }
        st.ir_drop_max = st
            .ir_drop_max
            .max(irdrop::apply(&mut g, rows, cols, geom.rows, alpha));
        for k in 0..rows * cols {
            delta[k] += g[k] - (lv[k] as f64 + g0);
        }
        if noisy {
            for k in 0..rows * cols {
                sq[k] += g[k] * g[k];
            }
        }
    }
    let inv = 1.0 / copies as f64;
    let var = d.read_noise * d.read_noise * inv * inv;
    let refc = cols - 1;
    for i in 0..rows {
        for j in j0..j1 {
            for s in 0..s_n {
                let c = ((j - j0) * s_n + s) * pol;
                let (dp, vp) = (delta[i * cols + c], sq[i * cols + c]);
                let (dm, vm) = if pol == 2 {
                    (delta[i * cols + c + 1], sq[i * cols + c + 1])
                } else {
                    (delta[i * cols + refc], sq[i * cols + refc])
                };
                e[i * width + s * n + j] += ((dp - dm) * inv) as f32;
                if width > s_n * n {
                    // The reference column's read noise is drawn per column it serves
                    // (its correlation across columns is not modelled).
                    e[i * width + s_n * n + s * n + j] = ((vp + vm) * var) as f32;
                }
            }
        }
    }
    st
}

/// Move the columns with the most stuck cells to spare columns programmed with the same
/// levels (a spare is used only when it has fewer stuck cells).
fn remap_spares(
    cfg: &Config,
    g0: f64,
    top: f64,
    lv: &[u32],
    g: &mut [f64],
    fault: &mut [u8],
    rows: usize,
    cols: usize,
    rng: &mut CellRng,
    st: &mut ProgramStats,
) {
    let spares = cfg.analog.spare_cols;
    if spares == 0 || !cfg.device.programming_is_random() {
        return;
    }
    let count = |f: &[u8], c: usize| (0..rows).filter(|&i| f[i * cols + c] != 0).count();
    let mut order: Vec<(usize, usize)> = (0..cols)
        .map(|c| (count(fault, c), c))
        .filter(|&(k, _)| k > 0)
        .collect();
    order.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut col_g = vec![0f64; rows];
    let mut col_f = vec![0u8; rows];
    for &(bad, c) in order.iter().take(spares) {
        for i in 0..rows {
            let (v, f) = draw_cell(cfg, g0, top, lv[i * cols + c] as f64 + g0, rng);
            col_g[i] = v;
            col_f[i] = f;
        }
        st.cells += rows as u64;
        let spare_bad = col_f.iter().filter(|&&f| f != 0).count();
        if spare_bad < bad {
            // The replaced column's faults were realised too (the final count sees the spare's).
            for i in 0..rows {
                match fault[i * cols + c] {
                    1 => st.stuck_off += 1,
                    2 => st.stuck_on += 1,
                    // 0: a healthy cell
                    _ => {}
                }
            }
            for i in 0..rows {
                g[i * cols + c] = col_g[i];
                fault[i * cols + c] = col_f[i];
            }
            st.remapped_cols += 1;
        } else {
            // The unused spare's faults still count as realised faults of programmed cells.
            for &f in &col_f {
                match f {
                    1 => st.stuck_off += 1,
                    2 => st.stuck_on += 1,
                    _ => {}
                }
            }
        }
    }
}
