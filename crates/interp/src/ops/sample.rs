//! Sampling ops of the ONNX node suite, following the ONNX reference implementation:
//! GridSample (N-D nearest/linear/cubic, zeros/border/reflection padding), RoiAlign
//! (avg/max, half_pixel), DeformConv (2-D, bilinear taps with zero padding, optional
//! mask) and Col2Im (N-D). Computed in f64 and rounded once to the output type.

use crate::elem::strides;
use crate::error::{OpResult, invalid, unsupported};
use pimkit_ir::{Col2ImAttrs, ConvAttrs, GridMode, GridPadding, RoiAlignAttrs, Tensor, TensorType};

/// The reference's reflection of a coordinate into [lo, hi].
fn reflect(x: f64, lo: f64, hi: f64) -> f64 {
    let rng = hi - lo;
    if rng <= 0.0 {
        return lo;
    }
    if x < lo {
        let dx = lo - x;
        let n = (dx / rng).trunc();
        let r = dx - n * rng;
        if n as i64 % 2 == 0 { lo + r } else { hi - r }
    } else if x > hi {
        let dx = x - hi;
        let n = (dx / rng).trunc();
        let r = dx - n * rng;
        if n as i64 % 2 == 0 { hi - r } else { lo + r }
    } else {
        x
    }
}

/// Keys cubic coefficients (a = -0.75) for taps at offsets -1, 0, 1, 2 of fraction t.
fn cubic(t: f64) -> [f64; 4] {
    let a = -0.75;
    let c0 = |x: f64| ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a;
    let c1 = |x: f64| ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0;
    [c0(t + 1.0), c1(t), c1(1.0 - t), c0(2.0 - t)]
}

/// Taps (index or None for a zero, weight) of one axis for GridSample.
fn grid_taps(
    n: f32,
    len: usize,
    mode: GridMode,
    pad: GridPadding,
    align: bool,
) -> Vec<(Option<usize>, f64)> {
    // Denormalized in f32, as the reference stores it.
    let x = if align {
        (n + 1.0) / 2.0 * (len as f32 - 1.0)
    } else {
        ((n + 1.0) * len as f32 - 1.0) / 2.0
    };
    let mut x = x as f64;
    let (lo, hi) = if align {
        (0.0, len as f64 - 1.0)
    } else {
        (-0.5, len as f64 - 0.5)
    };
    if mode == GridMode::Nearest {
        x = x.round_ties_even();
    }
    if x < lo || x > hi {
        match pad {
            GridPadding::Border => x = x.clamp(0.0, len as f64 - 1.0),
            GridPadding::Reflection => x = reflect(x, lo, hi),
            GridPadding::Zeros => {}
        }
    }
    let pixel = |i: i64| -> Option<usize> {
        match pad {
            GridPadding::Zeros => (0..len as i64).contains(&i).then_some(i as usize),
            GridPadding::Border => Some(i.clamp(0, len as i64 - 1) as usize),
            GridPadding::Reflection => {
                Some((reflect(i as f64, lo, hi) as i64).clamp(0, len as i64 - 1) as usize)
            }
        }
    };
    match mode {
        GridMode::Nearest => vec![(pixel(x as i64), 1.0)],
        GridMode::Linear => {
            let x0 = x.floor();
            let w = x - x0;
            vec![(pixel(x0 as i64), 1.0 - w), (pixel(x0 as i64 + 1), w)]
        }
        GridMode::Cubic => {
            let x0 = x.floor();
            let c = cubic(x - x0);
            (0..4)
                .map(|k| (pixel(x0 as i64 - 1 + k as i64), c[k]))
                .collect()
        }
    }
}

pub(crate) fn grid_sample(
    x: &Tensor,
    grid: &Tensor,
    mode: GridMode,
    pad: GridPadding,
    align: bool,
    out_ty: &TensorType,
) -> OpResult<Tensor> {
    let r = x.rank() - 2;
    let (n, c) = (x.shape[0], x.shape[1]);
    let dims = &x.shape[2..];
    let plane: usize = dims.iter().product();
    let ds = strides(dims);
    let xv = x.to_f64_vec();
    let gv = grid.to_f32_vec();
    let outs: usize = grid.shape[1..=r].iter().product();
    let mut out = vec![0.0; n * c * outs];
    for b in 0..n {
        for p in 0..outs {
            let g = &gv[(b * outs + p) * r..(b * outs + p + 1) * r];
            // Grid order is (x, y, z): the last spatial axis first.
            let taps: Vec<Vec<(Option<usize>, f64)>> = (0..r)
                .map(|a| grid_taps(g[r - 1 - a], dims[a], mode, pad, align))
                .collect();
            // Tensor product of the per-axis taps.
            let mut combos: Vec<(Option<usize>, f64)> = vec![(Some(0), 1.0)];
            for (a, t) in taps.iter().enumerate() {
                let mut next = Vec::with_capacity(combos.len() * t.len());
                for &(off, w) in &combos {
                    for &(i, wi) in t {
                        next.push((off.zip(i).map(|(o, i)| o + i * ds[a]), w * wi));
                    }
                }
                combos = next;
            }
            for ch in 0..c {
                let base = (b * c + ch) * plane;
                out[(b * c + ch) * outs + p] = combos
                    .iter()
                    .map(|&(o, w)| o.map_or(0.0, |o| w * xv[base + o]))
                    .sum();
            }
        }
    }
    Ok(Tensor::from_f64_as(x.dtype(), out_ty.shape.clone(), &out))
}

/// ONNX RoiAlign (the reference's and onnxruntime's bilinear pre-computation).
pub(crate) fn roi_align(
    x: &Tensor,
    rois: &Tensor,
    bi: &Tensor,
    a: &RoiAlignAttrs,
) -> OpResult<Tensor> {
    let (n, c, h, w) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let (ph, pw) = (a.output_height, a.output_width);
    let xv = x.to_f64_vec();
    let rv = rois.to_f64_vec();
    let bv = bi.to_i64_vec();
    let nr = rois.shape[0];
    let mut out = vec![0.0; nr * c * ph * pw];
    let scale = a.spatial_scale as f64;
    for ri in 0..nr {
        let b = bv[ri];
        if b < 0 || b as usize >= n {
            return invalid(format!("batch index {b} is out of range for {n} images"));
        }
        let off = if a.half_pixel { 0.5 } else { 0.0 };
        let r = &rv[ri * 4..ri * 4 + 4];
        let (sw, sh) = (r[0] * scale - off, r[1] * scale - off);
        let (mut rw, mut rh) = (r[2] * scale - off - sw, r[3] * scale - off - sh);
        if !a.half_pixel {
            rw = rw.max(1.0);
            rh = rh.max(1.0);
        }
        let (bh, bw) = (rh / ph as f64, rw / pw as f64);
        let gh = if a.sampling_ratio > 0 {
            a.sampling_ratio
        } else {
            (rh / ph as f64).ceil() as usize
        };
        let gw = if a.sampling_ratio > 0 {
            a.sampling_ratio
        } else {
            (rw / pw as f64).ceil() as usize
        };
        let count = (gh * gw).max(1) as f64;
        // Bilinear taps of every sample point: 4 (position, weight) pairs or none.
        let sample = |y: f64, x: f64| -> Option<[(usize, f64); 4]> {
            if y < -1.0 || y > h as f64 || x < -1.0 || x > w as f64 {
                return None;
            }
            let (mut y, mut x) = (y.max(0.0), x.max(0.0));
            let (mut yl, mut xl) = (y as usize, x as usize);
            let (yh, xh);
            if yl >= h - 1 {
                yl = h - 1;
                yh = h - 1;
                y = yl as f64;
            } else {
                yh = yl + 1;
            }
            if xl >= w - 1 {
                xl = w - 1;
                xh = w - 1;
                x = xl as f64;
            } else {
                xh = xl + 1;
            }
            let (ly, lx) = (y - yl as f64, x - xl as f64);
            let (hy, hx) = (1.0 - ly, 1.0 - lx);
            Some([
                (yl * w + xl, hy * hx),
                (yl * w + xh, hy * lx),
                (yh * w + xl, ly * hx),
                (yh * w + xh, ly * lx),
            ])
        };
        for py in 0..ph {
            for px in 0..pw {
                let mut pts = Vec::with_capacity(gh * gw);
                for iy in 0..gh {
                    let yy = sh + py as f64 * bh + (iy as f64 + 0.5) * bh / gh as f64;
                    for ix in 0..gw {
                        let xx = sw + px as f64 * bw + (ix as f64 + 0.5) * bw / gw as f64;
                        pts.push(sample(yy, xx));
                    }
                }
                for ch in 0..c {
                    let base = (b as usize * c + ch) * h * w;
                    let val = |t: &Option<[(usize, f64); 4]>| -> Vec<f64> {
                        match t {
                            Some(t) => t.iter().map(|&(p, wt)| wt * xv[base + p]).collect(),
                            None => vec![0.0; 4],
                        }
                    };
                    let v = if a.max {
                        pts.iter()
                            .map(|t| val(t).into_iter().fold(f64::NEG_INFINITY, f64::max))
                            .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
                            .unwrap_or(0.0)
                    } else {
                        pts.iter().map(|t| val(t).iter().sum::<f64>()).sum::<f64>() / count
                    };
                    out[((ri * c + ch) * ph + py) * pw + px] = v;
                }
            }
        }
    }
    Ok(Tensor::from_f64_as(x.dtype(), vec![nr, c, ph, pw], &out))
}

/// 2-D deformable convolution: every kernel tap reads x bilinearly (zero outside) at its
/// regular position plus the learned offset, times the mask (1 when absent).
pub(crate) fn deform_conv(
    x: &Tensor,
    wt: &Tensor,
    offset: &Tensor,
    bias: Option<&Tensor>,
    mask: Option<&Tensor>,
    a: &ConvAttrs,
    og: usize,
    out_ty: &TensorType,
) -> OpResult<Tensor> {
    if a.kernel.len() != 2 {
        return unsupported(format!(
            "DeformConv with {} spatial dims (2 supported)",
            a.kernel.len()
        ));
    }
    let (n, ic, ih, iw) = (x.shape[0], x.shape[1], x.shape[2], x.shape[3]);
    let oc = wt.shape[0];
    let (kh, kw) = (a.kernel[0], a.kernel[1]);
    let (oh, ow) = (out_ty.shape[2], out_ty.shape[3]);
    let icg = wt.shape[1];
    let ocg = oc / a.group;
    let icog = ic / og;
    let (xv, wv, ov) = (x.to_f64_vec(), wt.to_f64_vec(), offset.to_f64_vec());
    let mv = mask.map(|m| m.to_f64_vec());
    let bv = bias.map(|b| b.to_f64_vec());
    let mut out = vec![0.0; n * oc * oh * ow];
    let bilinear = |plane: &[f64], y: f64, x: f64| -> f64 {
        let (y0, x0) = (y.floor(), x.floor());
        let (ly, lx) = (y - y0, x - x0);
        let mut s = 0.0;
        for (dy, wy) in [(0i64, 1.0 - ly), (1, ly)] {
            for (dx, wx) in [(0i64, 1.0 - lx), (1, lx)] {
                let (yy, xx) = (y0 as i64 + dy, x0 as i64 + dx);
                if (0..ih as i64).contains(&yy) && (0..iw as i64).contains(&xx) {
                    s += wy * wx * plane[yy as usize * iw + xx as usize];
                }
            }
        }
        s
    };
    for b in 0..n {
        for o in 0..oc {
            let g = o / ocg;
            for i in 0..oh {
                for j in 0..ow {
                    let mut acc = bv.as_ref().map_or(0.0, |bv| bv[o]);
                    for ci in 0..icg {
                        let ch = g * icg + ci;
                        let ogi = ch / icog;
                        let plane = &xv[(b * ic + ch) * ih * iw..(b * ic + ch + 1) * ih * iw];
                        for u in 0..kh {
                            for v in 0..kw {
                                let k = u * kw + v;
                                // offset layout: [N, og, kh, kw, 2 (dy, dx), oh, ow]
                                let ob = ((b * og + ogi) * kh * kw + k) * 2;
                                let dy = ov[(ob * oh + i) * ow + j];
                                let dx = ov[((ob + 1) * oh + i) * ow + j];
                                let y = (i * a.strides[0]) as f64 - a.pads[0] as f64
                                    + (u * a.dilations[0]) as f64
                                    + dy;
                                let xx = (j * a.strides[1]) as f64 - a.pads[1] as f64
                                    + (v * a.dilations[1]) as f64
                                    + dx;
                                let m = mv.as_ref().map_or(1.0, |m| {
                                    m[(((b * og + ogi) * kh * kw + k) * oh + i) * ow + j]
                                });
                                acc += wv[((o * icg + ci) * kh + u) * kw + v]
                                    * bilinear(plane, y, xx)
                                    * m;
                            }
                        }
                    }
                    out[((b * oc + o) * oh + i) * ow + j] = acc;
                }
            }
        }
    }
    Ok(Tensor::from_f64_as(x.dtype(), out_ty.shape.clone(), &out))
}

/// Col2Im: each column (one block position) adds its C·prod(block) values back into the
/// image; overlapping blocks sum.
pub(crate) fn col2im(x: &Tensor, a: &Col2ImAttrs, out_ty: &TensorType) -> OpResult<Tensor> {
    let r = a.image_shape.len();
    let (n, cb, nblocks) = (x.shape[0], x.shape[1], x.shape[2]);
    let bl: usize = a.block_shape.iter().product();
    let c = cb / bl;
    let img: usize = a.image_shape.iter().product();
    let cols: Vec<usize> = (0..r)
        .map(|i| {
            (a.image_shape[i] + a.pads[i] + a.pads[i + r]
                - (a.dilations[i] * (a.block_shape[i] - 1) + 1))
                / a.strides[i]
                + 1
        })
        .collect();
    let ist = strides(&a.image_shape);
    let xv = x.to_f64_vec();
    let mut out = vec![0.0; n * c * img];
    let mut kpos = vec![0; r];
    let mut cpos = vec![0; r];
    for kk in 0..bl {
        let mut rem = kk;
        for i in (0..r).rev() {
            kpos[i] = rem % a.block_shape[i];
            rem /= a.block_shape[i];
        }
        for col in 0..nblocks {
            let mut rem = col;
            for i in (0..r).rev() {
                cpos[i] = rem % cols[i];
                rem /= cols[i];
            }
            let mut dst = Some(0usize);
            for i in 0..r {
                let p =
                    (cpos[i] * a.strides[i] + kpos[i] * a.dilations[i]) as i64 - a.pads[i] as i64;
                dst = dst
                    .filter(|_| (0..a.image_shape[i] as i64).contains(&p))
                    .map(|d| d + p as usize * ist[i]);
            }
            let Some(d) = dst else { continue };
            for b in 0..n {
                for ch in 0..c {
                    out[(b * c + ch) * img + d] += xv[(b * cb + ch * bl + kk) * nblocks + col];
                }
            }
        }
    }
    Ok(Tensor::from_f64_as(x.dtype(), out_ty.shape.clone(), &out))
}
