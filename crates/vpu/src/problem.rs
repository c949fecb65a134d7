//! Self-contained quantized problems (values + quantization parameters) with a plain
//! integer reference, used by the standalone kernel runs, the sweeps and the tests.

use crate::kernels::OutQuant;
use crate::machine::Elem;
use crate::quant::{IntRequant, output_scale};
use rand::{RngExt, SeedableRng};

/// QLinearMatMul / QGemm problem: A is M x K, B is K x N (row-major).
#[derive(Clone, Debug)]
pub struct QMatMul {
    pub m: usize,
    pub k: usize,
    pub n: usize,
    pub a: Vec<i32>,
    pub a_elem: Elem,
    pub a_zp: i32,
    pub b: Vec<i32>,
    pub b_elem: Elem,
    /// 1 or N entries.
    pub b_zp: Vec<i32>,
    pub bias: Option<Vec<i32>>,
    pub y_elem: Elem,
    pub y_zp: i32,
    /// Output multipliers (a_scale*b_scale/y_scale in f32): 1 or N entries.
    pub scales: Vec<f32>,
}

/// QLinearConv problem in NCHW (N = 1); 1-D convs use H = 1, kernel_h = 1.
#[derive(Clone, Debug)]
pub struct QConv {
    pub c_in: usize,
    pub h: usize,
    pub w: usize,
    pub c_out: usize,
    pub kh: usize,
    pub kw: usize,
    pub stride: (usize, usize),
    /// top, left, bottom, right.
    pub pads: [usize; 4],
    pub dil: (usize, usize),
    /// 1 or c_in (= c_out, depthwise).
    pub group: usize,
    pub x: Vec<i32>,
    pub x_elem: Elem,
    pub x_zp: i32,
    /// c_out x (c_in/group) x kh x kw.
    pub w_data: Vec<i32>,
    pub w_elem: Elem,
    /// 1 or c_out entries.
    pub w_zp: Vec<i32>,
    pub bias: Option<Vec<i32>>,
    pub y_elem: Elem,
    pub y_zp: i32,
    /// 1 or c_out entries.
    pub scales: Vec<f32>,
}

/// Output height and width of a convolution (the one formula every conv job shares).
/// `pads` is top, left, bottom, right.
pub(crate) fn conv_out_hw(
    (h, w): (usize, usize),
    (kh, kw): (usize, usize),
    stride: (usize, usize),
    pads: [usize; 4],
    dil: (usize, usize),
) -> (usize, usize) {
    let eh = dil.0 * kh.saturating_sub(1) + 1;
    let ew = dil.1 * kw.saturating_sub(1) + 1;
    (
        (h + pads[0] + pads[2]).saturating_sub(eh) / stride.0.max(1) + 1,
        (w + pads[1] + pads[3]).saturating_sub(ew) / stride.1.max(1) + 1,
    )
}

impl QConv {
    pub fn out_hw(&self) -> (usize, usize) {
        conv_out_hw(
            (self.h, self.w),
            (self.kh, self.kw),
            self.stride,
            self.pads,
            self.dil,
        )
    }
    pub fn macs(&self) -> u64 {
        let (ho, wo) = self.out_hw();
        (self.c_out * (self.c_in / self.group) * self.kh * self.kw * ho * wo) as u64
    }
}

pub(crate) fn out_quant(elem: Elem, zp: i32, scales: &[f32]) -> OutQuant {
    OutQuant {
        elem,
        zp,
        rq: scales.iter().map(|&s| IntRequant::new(s)).collect(),
    }
}

fn rand_elems(r: &mut rand_pcg::Pcg64, e: Elem, n: usize) -> Vec<i32> {
    let (lo, hi) = e.range();
    (0..n).map(|_| r.random_range(lo..=hi)).collect()
}

/// Random problem generator with realistic quantization parameters.
pub struct Gen {
    r: rand_pcg::Pcg64,
}

impl Gen {
    pub fn new(seed: u64) -> Gen {
        Gen {
            r: rand_pcg::Pcg64::seed_from_u64(seed),
        }
    }
    fn scale(&mut self, per: usize, k: usize) -> Vec<f32> {
        // a_scale * w_scale / y_scale with y_scale sized to the accumulator range.
        let a_s = self.r.random_range(0.005f32..0.05);
        let y_s = self.r.random_range(0.02f32..0.2) * (k as f32).sqrt();
        (0..per)
            .map(|_| output_scale(a_s, self.r.random_range(0.001f32..0.02), y_s))
            .collect()
    }

    pub fn matmul(&mut self, m: usize, k: usize, n: usize, per_col: bool, bias: bool) -> QMatMul {
        let a_elem = Elem::U8;
        let b_elem = if self.r.random_bool(0.5) {
            Elem::I8
        } else {
            Elem::U8
        };
        let b_zp = if per_col {
            (0..n)
                .map(|_| {
                    if b_elem == Elem::I8 {
                        self.r.random_range(-5..5)
                    } else {
                        self.r.random_range(100..156)
                    }
                })
                .collect()
        } else if b_elem == Elem::I8 {
            vec![self.r.random_range(-3..3)]
        } else {
            vec![self.r.random_range(100..156)]
        };
        let scales = self.scale(if per_col { n } else { 1 }, k);
        QMatMul {
            m,
            k,
            n,
            a: rand_elems(&mut self.r, a_elem, m * k),
            a_elem,
            a_zp: self.r.random_range(0..256),
            b: rand_elems(&mut self.r, b_elem, k * n),
            b_elem,
            b_zp,
            bias: bias.then(|| (0..n).map(|_| self.r.random_range(-5000..5000)).collect()),
            y_elem: if self.r.random_bool(0.5) {
                Elem::U8
            } else {
                Elem::I8
            },
            y_zp: self.r.random_range(-20..20) + 100,
            scales,
        }
        .fix_zp()
    }

    #[allow(clippy::too_many_arguments)]
    pub fn conv(
        &mut self,
        c_in: usize,
        h: usize,
        w: usize,
        c_out: usize,
        k: (usize, usize),
        stride: (usize, usize),
        pads: [usize; 4],
        dil: (usize, usize),
        group: usize,
    ) -> QConv {
        let x_elem = Elem::U8;
        let w_elem = if self.r.random_bool(0.5) {
            Elem::I8
        } else {
            Elem::U8
        };
        let per_ch = self.r.random_bool(0.5);
        let nz = if per_ch { c_out } else { 1 };
        let w_zp = (0..nz)
            .map(|_| {
                if w_elem == Elem::I8 {
                    0
                } else {
                    self.r.random_range(120..136)
                }
            })
            .collect();
        let scales = self.scale(if per_ch { c_out } else { 1 }, c_in / group * k.0 * k.1);
        let y_elem = if self.r.random_bool(0.5) {
            Elem::U8
        } else {
            Elem::I8
        };
        QConv {
            c_in,
            h,
            w,
            c_out,
            kh: k.0,
            kw: k.1,
            stride,
            pads,
            dil,
            group,
            x: rand_elems(&mut self.r, x_elem, c_in * h * w),
            x_elem,
            x_zp: self.r.random_range(0..256),
            w_data: rand_elems(&mut self.r, w_elem, c_out * (c_in / group) * k.0 * k.1),
            w_elem,
            w_zp,
            bias: self.r.random_bool(0.7).then(|| {
                (0..c_out)
                    .map(|_| self.r.random_range(-3000..3000))
                    .collect()
            }),
            y_elem,
            y_zp: if y_elem == Elem::U8 {
                self.r.random_range(0..256)
            } else {
                self.r.random_range(-128..128)
            },
            scales,
        }
    }
}

impl QMatMul {
    fn fix_zp(mut self) -> Self {
        let (lo, hi) = self.y_elem.range();
        self.y_zp = self.y_zp.clamp(lo, hi);
        self
    }
}

/// Plain integer reference for QLinearMatMul (wrapping int32 accumulation, f32-exact requant).
pub fn ref_matmul(p: &QMatMul) -> Vec<i32> {
    let (lo, hi) = p.y_elem.range();
    let rq: Vec<IntRequant> = p.scales.iter().map(|&s| IntRequant::new(s)).collect();
    let mut y = vec![0; p.m * p.n];
    for i in 0..p.m {
        for j in 0..p.n {
            let zb = if p.b_zp.len() == 1 {
                p.b_zp[0]
            } else {
                p.b_zp[j]
            };
            let mut acc: i32 = p.bias.as_ref().map_or(0, |b| b[j]);
            for k in 0..p.k {
                acc = acc
                    .wrapping_add((p.a[i * p.k + k] - p.a_zp).wrapping_mul(p.b[k * p.n + j] - zb));
            }
            let q = if rq.len() == 1 { rq[0] } else { rq[j] };
            y[i * p.n + j] = q.apply(acc, p.y_zp, lo, hi);
        }
    }
    y
}

/// Plain integer reference for QLinearConv (NCHW, groups, pads, strides, dilations).
pub fn ref_conv(p: &QConv) -> Vec<i32> {
    let (ho, wo) = p.out_hw();
    let (lo, hi) = p.y_elem.range();
    let cpg = p.c_in / p.group;
    let opg = p.c_out / p.group;
    let rq: Vec<IntRequant> = p.scales.iter().map(|&s| IntRequant::new(s)).collect();
    let mut y = vec![0; p.c_out * ho * wo];
    for co in 0..p.c_out {
        let g = co / opg;
        let wz = if p.w_zp.len() == 1 {
            p.w_zp[0]
        } else {
            p.w_zp[co]
        };
        let q = if rq.len() == 1 { rq[0] } else { rq[co] };
        for oh in 0..ho {
            for ow in 0..wo {
                let mut acc: i32 = p.bias.as_ref().map_or(0, |b| b[co]);
                for ci in 0..cpg {
                    let cin = g * cpg + ci;
                    for ky in 0..p.kh {
                        let ih = (oh * p.stride.0 + ky * p.dil.0) as isize - p.pads[0] as isize;
                        if ih < 0 || ih >= p.h as isize {
                            continue;
                        }
                        for kx in 0..p.kw {
                            let iw = (ow * p.stride.1 + kx * p.dil.1) as isize - p.pads[1] as isize;
                            if iw < 0 || iw >= p.w as isize {
                                continue;
                            }
                            let xv = p.x[(cin * p.h + ih as usize) * p.w + iw as usize] - p.x_zp;
                            let wv = p.w_data[((co * cpg + ci) * p.kh + ky) * p.kw + kx] - wz;
                            acc = acc.wrapping_add(xv.wrapping_mul(wv));
                        }
                    }
                }
                y[(co * ho + oh) * wo + ow] = q.apply(acc, p.y_zp, lo, hi);
            }
        }
    }
    y
}
