//! The crossbar matrix-vector product of many input vectors at once.
//!
//! For each array row chunk r, DAC slice t and cell slice s the arrays produce the analog
//! partial sums P[p, j] = sum_{i in r} x_t[p, i] E_s[i, j]; the ADC digitizes each one and
//! the digital periphery adds them with shifts 2^(d t + c s). The partial sums of all t
//! and s of a block of input vectors come from ONE f32 GEMM: the DAC planes of the block
//! are stacked along M ([T * block] x rows) and the cell slices along N (rows x [S * n]),
//! so the cost is T * S times the layer's MACs in an optimized GEMM, and the ADC pass runs
//! over a cache-resident block. Without an ADC or read noise the planes and slices are
//! summed before the product (one GEMM of the layer's own size).

use crate::adc::{Adc, Profile, round_fast};
use crate::config::Config;
use crate::device::Arrays;
use crate::encode::IntWeights;
// Defined in encode.rs (which chooses it); re-exported where it was.
pub use crate::encode::Coding;
use crate::rng::{Stream, mix};
use rayon::prelude::*;
use std::sync::Mutex;

/// `c = a * b` for row-major `a` (m x k, row stride `lda`), `b` (k x n, row stride `ldb`)
/// and `c` (m x n, dense).
pub(crate) fn sgemm(
    m: usize,
    k: usize,
    n: usize,
    a: &[f32],
    lda: usize,
    b: &[f32],
    ldb: usize,
    c: &mut [f32],
) {
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        c[..m * n].fill(0.0);
        return;
    }
    assert!(a.len() >= (m - 1) * lda + k && b.len() >= (k - 1) * ldb + n && c.len() >= m * n);
    // SAFETY: the assert above keeps every index the strides reach inside the slices.
    unsafe {
        matrixmultiply::sgemm(
            m,
            k,
            n,
            1.0,
            a.as_ptr(),
            lda as isize,
            1,
            b.as_ptr(),
            ldb as isize,
            1,
            0.0,
            c.as_mut_ptr(),
            n as isize,
            1,
        );
    }
}

impl Coding {
    /// The signed value of a code.
    #[inline]
    pub fn value(self, v: u16, x_bits: u32) -> f32 {
        match self {
            Coding::Unsigned => v as f32,
            Coding::TwosComplement => {
                let half = 1i32 << (x_bits - 1);
                let u = v as i32 & ((1 << x_bits) - 1);
                (if u >= half { u - 2 * half } else { u }) as f32
            }
            Coding::SignMagnitude => {
                let m = (v & 0x7fff) as f32;
                if v & 0x8000 != 0 { -m } else { m }
            }
        }
    }

    /// Plane `t` of a code (d-bit digit, negated for a negative sign-magnitude code).
    #[inline]
    fn plane(self, v: u16, sh: usize, mask: u16) -> f32 {
        match self {
            Coding::SignMagnitude => {
                let p = (((v & 0x7fff) >> sh) & mask) as f32;
                if v & 0x8000 != 0 { -p } else { p }
            }
            // The top plane's sign (two's complement) is applied by the caller.
            Coding::Unsigned | Coding::TwosComplement => ((v >> sh) & mask) as f32,
        }
    }

    /// Significance of plane `t` of `planes` (d-bit DACs).
    #[inline]
    fn weight(self, t: usize, planes: usize, d: u32) -> f64 {
        let w = (1u64 << (d as usize * t)) as f64;
        if self == Coding::TwosComplement && t + 1 == planes {
            -w
        } else {
            w
        }
    }
}

/// How one product is read out.
#[derive(Clone, Copy, Default)]
pub struct Readout<'a> {
    /// How the input codes stream.
    pub coding: Coding,
    pub adc: Option<Adc>,
    /// Seed of the read-noise draws of this product (used when the arrays are noisy).
    pub noise_seed: u64,
    /// Record |ideal partial sums| here (calibration pass).
    pub profile: Option<&'a Mutex<Profile>>,
}

/// Input vectors per block: about 512 GEMM rows (the GEMM packs the array matrix once per
/// call, so short blocks spend their time packing), with the block's partial sums
/// (rows x width f32) kept under 8 MiB.
fn block_len(p: usize, planes: usize, width: usize) -> usize {
    let rows = 512 / planes.max(1);
    let mem = (2 << 20) / (planes * width.max(1)).max(1);
    rows.min(mem).clamp(1, p.max(1))
}

/// sum_i x[p, i] w[i, j] through `arrays` for the `p` input vectors `x` (p x k, row-major,
/// `x_bits`-bit codes streamed as `ro.coding` says); returns p x n. Exact (integers) when nothing perturbs the
/// arrays and the ADC resolves every level.
pub fn mvm(
    arrays: &Arrays,
    cfg: &Config,
    x: &[u16],
    p: usize,
    x_bits: u32,
    ro: &Readout,
) -> Vec<f64> {
    let (k, n) = (arrays.k, arrays.n);
    assert_eq!(x.len(), p * k, "input vectors do not match the matrix");
    let geom = &cfg.geom;
    let d = geom.dac_bits;
    let planes = x_bits.div_ceil(d) as usize;
    let s_n = arrays.slices;
    let mut acc = vec![0f64; p * n];
    if n == 0 || p == 0 {
        return acc;
    }
    let fused = ro.adc.is_none()
        && !arrays.noisy
        && ro.profile.is_none()
        && fused_exact(arrays, cfg, x_bits);
    let width = if fused { n } else { s_n * n };
    let pb = block_len(p, if fused { 1 } else { planes }, width);
    let combined: Vec<Vec<f32>> = if fused {
        arrays
            .chunks
            .iter()
            .map(|c| combine_slices(c, s_n, n, geom.cell_bits))
            .collect()
    } else {
        Vec::new()
    };
    acc.par_chunks_mut(pb * n)
        .enumerate()
        .for_each(|(bi, out)| {
            let q_n = out.len() / n;
            let xb = &x[bi * pb * k..(bi * pb + q_n) * k];
            if fused {
                fused_block(arrays, &combined, xb, q_n, ro.coding, x_bits, out);
            } else {
                let mut rng = arrays
                    .noisy
                    .then(|| Stream::new(mix(ro.noise_seed, &[bi as u64])));
                sliced_block(arrays, cfg, xb, q_n, planes, ro, rng.as_mut(), out);
            }
        });
    if !geom.differential {
        // Offset encoding: the arrays hold w + 2^(b-1); take the offset back out digitally.
        let off = IntWeights::offset(geom) as f64;
        for (row, xr) in acc.chunks_mut(n).zip(x.chunks(k)) {
            let sx: f64 = xr.iter().map(|&v| ro.coding.value(v, x_bits) as f64).sum();
            let c = off * sx;
            for v in row {
                *v -= c;
            }
        }
    }
    acc
}

/// True when summing planes and slices before the product keeps every partial sum an
/// exact f32 integer (or the arrays are perturbed anyway).
fn fused_exact(arrays: &Arrays, cfg: &Config, x_bits: u32) -> bool {
    let rows = arrays.chunks.iter().map(|c| c.rows).max().unwrap_or(0) as f64;
    let wmax = ((1u64 << (arrays.slices as u32 * cfg.geom.cell_bits).min(40)) - 1) as f64;
    rows * ((1u64 << x_bits) - 1) as f64 * wmax < (1u64 << 24) as f64
}

/// sum_s 2^(c s) E_s of one chunk: rows x n.
fn combine_slices(c: &crate::device::Chunk, s_n: usize, n: usize, cell_bits: u32) -> Vec<f32> {
    let mut out = vec![0f32; c.rows * n];
    for i in 0..c.rows {
        for s in 0..s_n {
            let f = (1u64 << (cell_bits as usize * s)) as f32;
            let src = &c.e[i * c.width + s * n..][..n];
            for (o, &v) in out[i * n..(i + 1) * n].iter_mut().zip(src) {
                *o += f * v;
            }
        }
    }
    out
}

fn fused_block(
    arrays: &Arrays,
    combined: &[Vec<f32>],
    xb: &[u16],
    q_n: usize,
    coding: Coding,
    x_bits: u32,
    out: &mut [f64],
) {
    let (k, n) = (arrays.k, arrays.n);
    let mut a = Vec::new();
    let mut c = vec![0f32; q_n * n];
    for (ch, e) in arrays.chunks.iter().zip(combined) {
        a.clear();
        for q in 0..q_n {
            a.extend(
                xb[q * k + ch.r0..q * k + ch.r0 + ch.rows]
                    .iter()
                    .map(|&v| coding.value(v, x_bits)),
            );
        }
        sgemm(q_n, ch.rows, n, &a, ch.rows, e, n, &mut c);
        for (o, &v) in out.iter_mut().zip(&c) {
            *o += v as f64;
        }
    }
}

fn sliced_block(
    arrays: &Arrays,
    cfg: &Config,
    xb: &[u16],
    q_n: usize,
    planes: usize,
    ro: &Readout,
    mut rng: Option<&mut Stream>,
    out: &mut [f64],
) {
    let (k, n, s_n) = (arrays.k, arrays.n, arrays.slices);
    let (d, cb) = (cfg.geom.dac_bits, cfg.geom.cell_bits);
    let mask = (1u16 << d) - 1;
    let m = planes * q_n;
    let sn = s_n * n;
    let mut a: Vec<f32> = Vec::with_capacity(m * 128);
    let mut a2: Vec<f32> = Vec::new();
    let mut kept: Vec<(usize, usize)> = Vec::with_capacity(m);
    let mut c = vec![0f32; m * sn];
    let mut cv = if arrays.noisy {
        vec![0f32; m * sn]
    } else {
        Vec::new()
    };
    let mut prof = ro
        .profile
        .map(|p| Profile::new(p.lock().map(|p| p.full_scale).unwrap_or(1.0)));
    for ch in &arrays.chunks {
        let rows = ch.rows;
        if sn <= NARROW {
            narrow_chunk(
                arrays,
                cfg,
                ch,
                xb,
                q_n,
                planes,
                ro,
                rng.as_deref_mut(),
                prof.as_mut(),
                out,
            );
            continue;
        }
        // Only (plane, vector) rows with a nonzero input: an all-zero row drives no current
        // (no partial sum, no noise), and its ADC code is 0.
        a.clear();
        kept.clear();
        for q in 0..q_n {
            let xr = &xb[q * k + ch.r0..q * k + ch.r0 + rows];
            for t in 0..planes {
                let sh = d as usize * t;
                let mag = if ro.coding == Coding::SignMagnitude {
                    0x7fff
                } else {
                    0xffff
                };
                if xr.iter().all(|&v| ((v & mag) >> sh) & mask == 0) {
                    continue;
                }
                a.extend(xr.iter().map(|&v| ro.coding.plane(v, sh, mask)));
                kept.push((t, q));
            }
        }
        let mk = kept.len();
        if let Some(pf) = prof.as_mut() {
            pf.add_zeros(((m - mk) * sn) as u64);
        }
        if mk == 0 {
            continue;
        }
        sgemm(mk, rows, sn, &a, rows, &ch.e, ch.width, &mut c);
        if arrays.noisy {
            // Variance of the read noise: sum_i x_t,i^2 sigma^2 G_ij^2 (x_t^2 = x_t for 1-bit DACs).
            let sq: &[f32] = if d == 1 {
                &a
            } else {
                a2.clear();
                a2.extend(a.iter().map(|v| v * v));
                &a2
            };
            sgemm(mk, rows, sn, sq, rows, &ch.e[sn..], ch.width, &mut cv);
        }
        for (r, &(t, q)) in kept.iter().enumerate() {
            let row = r * sn;
            let part = &mut c[row..row + sn];
            if let Some(r) = rng.as_deref_mut() {
                for (v, &var) in part.iter_mut().zip(&cv[row..row + sn]) {
                    *v += (var.max(0.0).sqrt() as f64 * r.normal()) as f32;
                }
            }
            if let Some(pf) = prof.as_mut() {
                for &v in part.iter() {
                    pf.add(v);
                }
            }
            let dst = &mut out[q * n..(q + 1) * n];
            for s in 0..s_n {
                let shift = ro.coding.weight(t, planes, d) * (1u64 << (cb as usize * s)) as f64;
                read_out(ro.adc, shift, &part[s * n..(s + 1) * n], dst.iter_mut());
            }
        }
    }
    if let (Some(pf), Some(target)) = (prof, ro.profile)
        && let Ok(mut t) = target.lock()
    {
        t.merge(&pf);
    }
}

/// Matrices at most this wide (slices x outputs: depthwise groups) skip the GEMM.
const NARROW: usize = 16;

/// Digitize partial sums `src` and add them, times `shift`, to `dst`.
#[inline]
fn read_out<'o>(adc: Option<Adc>, shift: f64, src: &[f32], dst: impl Iterator<Item = &'o mut f64>) {
    match adc {
        Some(adc) => {
            let inv = 1.0 / adc.step;
            let f = shift * adc.step as f64;
            for (o, &v) in dst.zip(src) {
                let code = round_fast((v * inv).clamp(adc.lo, adc.hi));
                *o += code as f64 * f;
            }
        }
        None => {
            for (o, &v) in dst.zip(src) {
                *o += v as f64 * shift;
            }
        }
    }
}

/// One chunk of a narrow matrix (a depthwise group: a few taps by a few slices): the
/// partial sums are built column by column as axpys over all planes and vectors of the
/// block (the GEMM's packing would cost more than the product), then read out per column.
#[allow(clippy::too_many_arguments)]
fn narrow_chunk(
    arrays: &Arrays,
    cfg: &Config,
    ch: &crate::device::Chunk,
    xb: &[u16],
    q_n: usize,
    planes: usize,
    ro: &Readout,
    rng: Option<&mut Stream>,
    prof: Option<&mut Profile>,
    out: &mut [f64],
) {
    let (k, n, s_n) = (arrays.k, arrays.n, arrays.slices);
    let (d, cb) = (cfg.geom.dac_bits, cfg.geom.cell_bits);
    let mask = (1u16 << d) - 1;
    let (m, rows, sn) = (planes * q_n, ch.rows, s_n * n);
    // Planes transposed: at[i][t * q_n + q] (codes transposed first, so every plane is a
    // contiguous shift-and-mask).
    let mut xt = vec![0u16; rows * q_n];
    for q in 0..q_n {
        for (i, &v) in xb[q * k + ch.r0..q * k + ch.r0 + rows].iter().enumerate() {
            xt[i * q_n + q] = v;
        }
    }
    let mut at = vec![0f32; rows * m];
    for (row, codes) in at.chunks_mut(m).zip(xt.chunks(q_n)) {
        for (t, dst) in row.chunks_mut(q_n).enumerate() {
            let sh = d as usize * t;
            for (o, &v) in dst.iter_mut().zip(codes) {
                *o = ro.coding.plane(v, sh, mask);
            }
        }
    }
    let columns = |off: usize, sq: bool| -> Vec<f32> {
        let mut ct = vec![0f32; sn * m];
        for col in 0..sn {
            let dst = &mut ct[col * m..(col + 1) * m];
            for i in 0..rows {
                let w = ch.e[i * ch.width + off + col];
                if w != 0.0 {
                    for (o, &x) in dst.iter_mut().zip(&at[i * m..(i + 1) * m]) {
                        *o += if sq { x * x } else { x } * w;
                    }
                }
            }
        }
        ct
    };
    let mut ct = columns(0, false);
    if let Some(r) = rng {
        let var = columns(sn, d > 1);
        for (v, &s2) in ct.iter_mut().zip(&var) {
            *v += (s2.max(0.0).sqrt() as f64 * r.normal()) as f32;
        }
    }
    if let Some(pf) = prof {
        for &v in &ct {
            pf.add(v);
        }
    }
    for s in 0..s_n {
        for j in 0..n {
            let col = &ct[(s * n + j) * m..(s * n + j + 1) * m];
            for t in 0..planes {
                let shift = ro.coding.weight(t, planes, d) * (1u64 << (cb as usize * s)) as f64;
                let src = &col[t * q_n..(t + 1) * q_n];
                if n == 1 {
                    read_out(ro.adc, shift, src, out.iter_mut());
                } else {
                    read_out(ro.adc, shift, src, out.iter_mut().skip(j).step_by(n));
                }
            }
        }
    }
}
