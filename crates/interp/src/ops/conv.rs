//! Float convolution (any spatial rank): the packed f32 GEMM (`kernels::fgemm`) per
//! group with the weights packed once per session, B packed straight from the input for
//! 1-D/2-D (`kernels::fim2col`), read in place for 1x1/stride-1 convolutions and from an
//! im2col matrix for other ranks; a direct kernel for 2-D depthwise convolution. The geometry and the generic im2col are shared with the quantized
//! convolutions in `qconv.rs`.

use crate::elem::{float_tensor, floats, strides};
use crate::error::{OpError, OpResult};
use crate::kernels::act::Act;
use crate::kernels::fgemm::{AOp, BOp, Panels, fgemm_raw};
use crate::kernels::fgemm_kernels;
use crate::kernels::fim2col::ConvCols;
use crate::kernels::im2col::Conv2d;
use crate::prepared::{Prepared, Slot};
use pimkit_ir::{ConvAttrs, Tensor, conv_output_hw};
use std::cell::RefCell;

/// Resolved convolution geometry.
pub(crate) struct Geom {
    pub n: usize,
    pub cin: usize,
    pub m: usize,
    pub group: usize,
    /// Input channels per group.
    pub cg: usize,
    /// Output channels per group.
    pub mg: usize,
    pub in_sp: Vec<usize>,
    pub out_sp: Vec<usize>,
    pub kernel: Vec<usize>,
    pub strides: Vec<usize>,
    /// Leading pads per spatial axis.
    pub pad_begin: Vec<usize>,
    pub dilations: Vec<usize>,
    pub in_vol: usize,
    pub out_vol: usize,
    pub k_vol: usize,
}

impl Geom {
    pub fn new(xs: &[usize], ws: &[usize], a: &ConvAttrs) -> OpResult<Geom> {
        let r = a.kernel.len();
        let bad = |m: &str| Err(OpError::Invalid(m.to_string()));
        if xs.len() != r + 2 || ws.len() != r + 2 || a.group == 0 {
            return bad("input/weight rank does not match the kernel rank");
        }
        if a.strides.len() != r || a.dilations.len() != r || a.pads.len() != 2 * r {
            return bad("strides/dilations/pads do not match the kernel rank");
        }
        let (n, cin, m) = (xs[0], xs[1], ws[0]);
        if cin % a.group != 0
            || m % a.group != 0
            || ws[1] * a.group != cin
            || ws[2..] != a.kernel[..]
        {
            return bad("weight shape does not match input channels, group and kernel");
        }
        let in_sp = xs[2..].to_vec();
        let out_sp = conv_output_hw(&in_sp, &a.kernel, &a.strides, &a.pads, &a.dilations, false)
            .ok_or_else(|| OpError::Invalid("kernel does not fit the padded input".into()))?;
        // Along an axis with one output position the stride is never taken: 1 there, so
        // no kernel sizes a buffer by a stride far past the input (2^31 in a hostile
        // file); the result is the same.
        let strides = a
            .strides
            .iter()
            .zip(&out_sp)
            .map(|(&s, &o)| if o == 1 { 1 } else { s })
            .collect();
        Ok(Geom {
            n,
            cin,
            m,
            group: a.group,
            cg: cin / a.group,
            mg: m / a.group,
            in_vol: in_sp.iter().product(),
            out_vol: out_sp.iter().product(),
            k_vol: a.kernel.iter().product(),
            in_sp,
            out_sp,
            kernel: a.kernel.clone(),
            strides,
            pad_begin: a.pads[..r].to_vec(),
            dilations: a.dilations.clone(),
        })
    }

    pub fn out_shape(&self) -> Vec<usize> {
        let mut s = vec![self.n, self.m];
        s.extend(&self.out_sp);
        s
    }

    /// The depthwise kernels' geometry, when this is a 2-D convolution with one input
    /// channel per group.
    pub fn depthwise2d(&self) -> Option<crate::kernels::depthwise::Geom> {
        if self.cg != 1 || self.group != self.cin || self.kernel.len() != 2 {
            return None;
        }
        let two = |v: &[usize]| [v[0], v[1]];
        Some(crate::kernels::depthwise::Geom {
            n: self.n,
            cin: self.cin,
            m: self.m,
            mg: self.mg,
            in_sp: two(&self.in_sp),
            out_sp: two(&self.out_sp),
            kernel: two(&self.kernel),
            strides: two(&self.strides),
            dilations: two(&self.dilations),
            pad_begin: two(&self.pad_begin),
            in_vol: self.in_vol,
            out_vol: self.out_vol,
            k_vol: self.k_vol,
        })
    }

    /// The 2-D geometry of a 1-D or 2-D convolution (1-D is 2-D with height 1).
    pub fn conv2d(&self) -> Option<Conv2d> {
        let r = self.kernel.len();
        if r != 1 && r != 2 {
            return None;
        }
        let two = |v: &[usize], one: usize| if r == 2 { [v[0], v[1]] } else { [one, v[0]] };
        Some(Conv2d {
            channels: self.cg,
            input: two(&self.in_sp, 1),
            out: two(&self.out_sp, 1),
            kernel: two(&self.kernel, 1),
            strides: two(&self.strides, 1),
            dilations: two(&self.dilations, 1),
            pad_begin: two(&self.pad_begin, 0),
        })
    }

    /// True when the im2col matrix of one group is the input itself.
    pub fn is_pointwise(&self) -> bool {
        self.k_vol == 1
            && self.strides.iter().all(|&s| s == 1)
            && self.pad_begin.iter().all(|&p| p == 0)
            && self.in_sp == self.out_sp
    }

    /// Per spatial axis i: `tab[i][k * out_sp[i] + o]` = input coordinate read by output
    /// position o and kernel tap k, or -1 when it falls in the padding.
    fn coord_tables(&self) -> Vec<Vec<isize>> {
        (0..self.kernel.len())
            .map(|i| {
                let mut t = Vec::with_capacity(self.kernel[i] * self.out_sp[i]);
                for k in 0..self.kernel[i] {
                    for o in 0..self.out_sp[i] {
                        let c = (o * self.strides[i] + k * self.dilations[i]) as isize
                            - self.pad_begin[i] as isize;
                        t.push(if c >= 0 && (c as usize) < self.in_sp[i] {
                            c
                        } else {
                            -1
                        });
                    }
                }
                t
            })
            .collect()
    }
}

/// Write the im2col matrix `[cg * k_vol, out_vol]` of `x` (the `cg` input channels of
/// one group of one image, each `in_vol` long) into `col`; padding reads `pad`.
pub(crate) fn im2col<T: Copy>(x: &[T], g: &Geom, pad: T, col: &mut [T]) {
    let r = g.kernel.len();
    let tabs = g.coord_tables();
    let istr = strides(&g.in_sp);
    let (ov, kv) = (g.out_vol, g.k_vol);
    let olast = g.out_sp[r - 1];
    let nouter = ov / olast.max(1);
    let mut ks = vec![0usize; r];
    for c in 0..g.cg {
        let xc = &x[c * g.in_vol..(c + 1) * g.in_vol];
        for kidx in 0..kv {
            let mut rem = kidx;
            for i in (0..r).rev() {
                ks[i] = rem % g.kernel[i];
                rem /= g.kernel[i];
            }
            let row = &mut col[(c * kv + kidx) * ov..][..ov];
            let last = &tabs[r - 1][ks[r - 1] * olast..][..olast];
            // The input column grows with the output column, so the valid outputs of
            // this tap along the last axis are one run lo..hi, read with a fixed step.
            let lo = last.iter().position(|&cc| cc >= 0).unwrap_or(olast);
            let hi = last.iter().rposition(|&cc| cc >= 0).map_or(lo, |p| p + 1);
            let step = g.strides[r - 1];
            for outer in 0..nouter {
                let mut rem = outer;
                let mut base = 0isize;
                let mut valid = true;
                for i in (0..r - 1).rev() {
                    let o = rem % g.out_sp[i];
                    rem /= g.out_sp[i];
                    let cc = tabs[i][ks[i] * g.out_sp[i] + o];
                    valid &= cc >= 0;
                    base += cc * istr[i] as isize;
                }
                let dst = &mut row[outer * olast..][..olast];
                if !valid {
                    dst.fill(pad);
                    continue;
                }
                dst[..lo].fill(pad);
                dst[hi..].fill(pad);
                if lo < hi {
                    let start = (base + last[lo]) as usize;
                    let run = &mut dst[lo..hi];
                    if step == 1 {
                        run.copy_from_slice(&xc[start..start + run.len()]);
                    } else {
                        for (d, &v) in run.iter_mut().zip(xc[start..].iter().step_by(step)) {
                            *d = v;
                        }
                    }
                }
            }
        }
    }
}

thread_local! {
    static COL: RefCell<Vec<f32>> = const { RefCell::new(Vec::new()) };
}

/// Multiply-accumulate of the direct kernels: plain f32, wrapping i32.
pub(crate) trait Mac: Copy + Send + Sync {
    fn mac(self, w: Self, x: Self) -> Self;
}
impl Mac for f32 {
    #[inline]
    fn mac(self, w: f32, x: f32) -> f32 {
        self + w * x
    }
}
impl Mac for i32 {
    #[inline]
    fn mac(self, w: i32, x: i32) -> i32 {
        self.wrapping_add(w.wrapping_mul(x))
    }
}

/// Direct 2-D depthwise kernel for one output channel: `out += conv(x, w)` where x is
/// one input plane and w one kernel plane. Taps in the padding are skipped (they
/// contribute zero: for quantized data x is already zero-point-subtracted).
pub(crate) fn depthwise2d_plane<T: Mac>(x: &[T], w: &[T], g: &Geom, out: &mut [T]) {
    let (ih, iw) = (g.in_sp[0] as isize, g.in_sp[1] as isize);
    let (oh, ow) = (g.out_sp[0], g.out_sp[1]);
    let (kh, kw) = (g.kernel[0], g.kernel[1]);
    let (sh, sw) = (g.strides[0] as isize, g.strides[1] as isize);
    let (dh, dw) = (g.dilations[0] as isize, g.dilations[1] as isize);
    let (ph, pw) = (g.pad_begin[0] as isize, g.pad_begin[1] as isize);
    for oy in 0..oh {
        let orow = &mut out[oy * ow..(oy + 1) * ow];
        for ky in 0..kh {
            let iy = oy as isize * sh - ph + ky as isize * dh;
            if iy < 0 || iy >= ih {
                continue;
            }
            let xrow = &x[(iy * iw) as usize..((iy + 1) * iw) as usize];
            for kx in 0..kw {
                let wv = w[ky * kw + kx];
                let off = kx as isize * dw - pw;
                // ox range with 0 <= ox*sw + off < iw
                let lo = if off >= 0 { 0 } else { ((-off) + sw - 1) / sw };
                let hi = if iw - off <= 0 {
                    0
                } else {
                    ((iw - off + sw - 1) / sw).min(ow as isize)
                };
                for ox in lo..hi.max(lo) {
                    let o = &mut orow[ox as usize];
                    *o = o.mac(wv, xrow[(ox * sw + off) as usize]);
                }
            }
        }
    }
}

/// `act`: an activation fused into the output write (`exec` passes it only for an f32
/// output whose one reader is that Clip / Relu).
pub(crate) fn conv(
    x: &Tensor,
    w: &Tensor,
    bias: Option<&Tensor>,
    a: &ConvAttrs,
    prep: Option<&Slot>,
    act: Option<Act>,
) -> OpResult<Tensor> {
    let g = Geom::new(&x.shape, &w.shape, a)?;
    let xf = floats(x);
    let ov = g.out_vol;
    let len = g.n * g.m * ov;
    // Not zero-filled: the kernels below write every output before reading it (a
    // memset of each activation was 6-9 % of MobileNetV2).
    let mut out: Vec<f32> = Vec::with_capacity(len);
    let op = out.spare_capacity_mut().as_mut_ptr().cast::<f32>();
    let bf = bias.map(floats);
    if bf.as_ref().is_some_and(|b| b.len() != g.m) {
        return Err(OpError::Invalid(format!(
            "bias has {} elements, expected one per output channel ({})",
            bf.as_ref().map_or(0, |b| b.len()),
            g.m
        )));
    }
    if let Some(dg) = g.depthwise2d() {
        let bs = bf.as_deref();
        // SAFETY: op holds len floats, ours alone; depthwise_f32 writes all of them.
        unsafe {
            crate::kernels::depthwise::depthwise_f32(&xf, &floats(w), bs, &dg, (op, len), act);
            out.set_len(len);
        }
        return Ok(float_tensor(x.dtype(), g.out_shape(), out));
    }
    // The weights as GEMM panels, one per group: packed once per session when they are
    // a constant of the graph.
    let fk = fgemm_kernels::fk();
    let pack = || Prepared::ConvWeights(pack_weights(&floats(w), &g, fk));
    let local;
    let panels = match prep.map(|s| s.get_or_init(pack)) {
        Some(Prepared::ConvWeights(p)) => p,
        _ => {
            local = pack();
            match &local {
                Prepared::ConvWeights(p) => p,
                _ => unreachable!("pack() builds conv weights"),
            }
        }
    };
    let kk = g.cg * g.k_vol;
    let geo2 = g.conv2d();
    for n in 0..g.n {
        for grp in 0..g.group {
            let xs = &xf[(n * g.cin + grp * g.cg) * g.in_vol..][..g.cg * g.in_vol];
            // This (image, group)'s mg output planes: disjoint, inside op's len floats.
            let os = (op.wrapping_add((n * g.m + grp * g.mg) * ov), g.mg * ov);
            let bg = bf.as_ref().map(|b| &b[grp * g.mg..(grp + 1) * g.mg]);
            let a = AOp::Packed(&panels[grp]);
            let dims = (g.mg, kk, ov);
            // SAFETY (each fgemm_raw): os is ours alone, valid for mg * ov floats.
            if g.is_pointwise() {
                // The input planes are the B matrix itself.
                let b = BOp::InPlace { data: xs, ld: ov };
                unsafe { fgemm_raw(fk, dims, &a, &b, os, ov, bg, act) };
            } else if let Some(geo) = &geo2 {
                let cols = ConvCols::new(xs, geo);
                unsafe { fgemm_raw(fk, dims, &a, &BOp::Source(&cols), os, ov, bg, act) };
            } else {
                COL.with(|buf| {
                    let mut col = buf.borrow_mut();
                    col.resize(kk * ov, 0.0);
                    im2col(xs, &g, 0.0, &mut col);
                    let b = BOp::InPlace { data: &col, ld: ov };
                    unsafe { fgemm_raw(fk, dims, &a, &b, os, ov, bg, act) };
                });
            }
        }
    }
    // SAFETY: the (image, group) products above wrote every one of the len floats.
    unsafe { out.set_len(len) };
    Ok(float_tensor(x.dtype(), g.out_shape(), out))
}

/// Each group's `[mg, cg * k_vol]` weight matrix as GEMM A panels.
fn pack_weights(wf: &[f32], g: &Geom, fk: fgemm_kernels::Fk) -> Vec<Panels> {
    let kk = g.cg * g.k_vol;
    (0..g.group)
        .map(|grp| Panels::pack_a(fk, &wf[grp * g.mg * kk..][..g.mg * kk], (kk, 1), g.mg, kk))
        .collect()
}
