//! QLinearConv (per-tensor or per-output-channel weight scale/zero point, int32 bias)
//! and ConvInteger. Both compute the int32 sums of (x - x_zp)(w - w_zp[m]) with
//! wrap-around and QLinearConv requantizes per output channel with
//! `requant_f32(acc + bias, (x_s * w_s[m]) / y_s)`, which is what onnxruntime's MLAS
//! output processor computes.
//!
//! u8/i8 tensors of 1-D and 2-D convolutions run on the packed integer GEMM (the
//! weights of a group are its rows, output positions its columns, packed panel by
//! panel from the input) or, with one input channel per group, the depthwise kernel;
//! the requantization is fused into the kernels' output. Other ranks use im2col and
//! the portable int32 GEMM below. Every path is exact.

use crate::error::{OpResult, unsupported};
use crate::exec::Ctx;
use crate::kernels::depthwise_int::{Requant, depthwise_int, depthwise_q};
use crate::kernels::im2col::{Conv2d, Im2col2d};
use crate::kernels::im2col_hwc::{im2col_hwc, weights_hwc};
use crate::kernels::qgemm::{QGemm, Sink, StoreI32, Strided, Zp, qgemm};
use crate::kernels::qgemm_kernels::{TILE_LD, Tile};
use crate::kernels::requant::{bounds, byte_tensor, requant_row};
use crate::kernels::{SendPtr, i8_bytes};
use crate::ops::conv::{Geom, depthwise2d_plane, im2col};
use crate::ops::quant::{igemm, q_tensor, qrange, scalar, zp_scalar};
use crate::quant::{output_scale, requant_f32};
use pimkit_ir::{ConvAttrs, DType, Tensor, TensorData};
use rayon::prelude::*;
use std::cell::RefCell;

thread_local! {
    static COL: RefCell<Vec<i32>> = const { RefCell::new(Vec::new()) };
}

/// Per-output-channel parameter of length 1 or M, expanded to M values.
fn per_channel<T: Copy>(v: Vec<T>, m: usize, what: &str) -> OpResult<Vec<T>> {
    match v.len() {
        1 => Ok(vec![v[0]; m]),
        l if l == m => Ok(v),
        l => unsupported(format!(
            "{what} has {l} values; expected 1 or {m} (one per output channel)"
        )),
    }
}

/// The bytes of a u8 or i8 tensor, and whether they are signed.
pub(crate) fn bytes(t: &Tensor) -> Option<(&[u8], bool)> {
    match &t.data {
        TensorData::U8(v) => Some((v, false)),
        TensorData::I8(v) => Some((i8_bytes(v), true)),
        _ => None,
    }
}

/// The byte a zero point is stored as in a tensor of the given signedness.
fn zp_byte(zp: i32, signed: bool) -> u8 {
    if signed { zp as i8 as u8 } else { zp as u8 }
}

/// Where the packed GEMM's results go for one (image, group) of a convolution.
enum ConvOut<'a> {
    /// requant_row per output channel into bytes.
    Requant {
        out: SendPtr<u8>,
        scale: &'a [f32],
        bias: &'a [i32],
        zp: i32,
        bounds: (f32, f32),
    },
    /// Raw int32 sums.
    I32(StoreI32),
}

struct ConvSink<'a> {
    out: ConvOut<'a>,
    /// Output positions per channel (row stride of the output).
    ld: usize,
}

impl Sink for ConvSink<'_> {
    #[inline(always)]
    fn tile(&self, r0: usize, nr: usize, c0: usize, nc: usize, acc: &Tile, row_add: &[i32]) {
        match &self.out {
            ConvOut::Requant {
                out,
                scale,
                bias,
                zp,
                bounds,
            } => {
                for r in 0..nr {
                    let m = r0 + r;
                    // SAFETY: row m of this (image, group) is out[m*ld..(m+1)*ld]; the
                    // caller sized the buffer, and tiles are disjoint.
                    let o = unsafe {
                        std::slice::from_raw_parts_mut(out.get().add(m * self.ld + c0), nc)
                    };
                    let a = &acc[r * TILE_LD..r * TILE_LD + nc];
                    let b = bias[m].wrapping_add(row_add[r]);
                    requant_row(a, b, scale[m], *zp, *bounds, o);
                }
            }
            ConvOut::I32(s) => s.tile(r0, nr, c0, nc, acc, row_add),
        }
    }
}

/// The packed-kernel path: int32 sums of every (image, group) handed to `out(image,
/// group)` as a sink, or per depthwise plane to `dw_post`. None when the tensors or the
/// rank do not fit it.
fn fast_conv<'s>(
    x: &Tensor,
    x_zp: i32,
    w: &Tensor,
    w_zp: &[i32],
    g: &Geom,
    sink: &(dyn Fn(usize, usize) -> ConvSink<'s> + Sync),
    dw_post: &(dyn Fn(usize, &[i32]) + Sync),
    ort_saturation: bool,
) -> Option<()> {
    let ((xb, xs), (wb, ws)) = (bytes(x)?, bytes(w)?);
    let r = g.kernel.len();
    if !(1..=2).contains(&r) {
        return None;
    }
    if r == 2
        && let Some(dg) = g.depthwise2d()
    {
        depthwise_int((xb, xs), x_zp, (wb, ws), w_zp, &dg, |i, acc| {
            dw_post(i, acc)
        });
        return Some(());
    }
    // onnxruntime's AVX2 u8 x s8 kernels saturate pair sums (QGemm::sat16) in
    // QLinearConv (its ConvInteger takes u8 weights only); they then also need its
    // (ky, kx, c) reduction order.
    let sat16 = ort_saturation && crate::ort_kernels::saturating_u8s8() && !xs && ws;
    // 1-D is 2-D with height 1.
    let two = |v: &[usize], one: usize| if r == 2 { [v[0], v[1]] } else { [one, v[0]] };
    let geo = Conv2d {
        channels: g.cg,
        input: two(&g.in_sp, 1),
        out: two(&g.out_sp, 1),
        kernel: two(&g.kernel, 1),
        strides: two(&g.strides, 1),
        dilations: two(&g.dilations, 1),
        pad_begin: two(&g.pad_begin, 0),
    };
    let per_w = g.cg * g.k_vol;
    for n in 0..g.n {
        for grp in 0..g.group {
            let xs_bytes = &xb[(n * g.cin + grp * g.cg) * g.in_vol..][..g.cg * g.in_vol];
            let a = Strided {
                data: &wb[grp * g.mg * per_w..][..g.mg * per_w],
                signed: ws,
                s_idx: per_w,
                s_k: 1,
            };
            let a_zp = Zp::Each(&w_zp[grp * g.mg..(grp + 1) * g.mg]);
            let s = sink(n, grp);
            if g.is_pointwise() {
                let b = Strided {
                    data: xs_bytes,
                    signed: xs,
                    s_idx: 1,
                    s_k: g.in_vol,
                };
                let q = QGemm {
                    m: g.mg,
                    n: g.out_vol,
                    k: per_w,
                    a,
                    a_zp,
                    b: &b,
                    b_zp: Zp::Scalar(x_zp),
                    sat16,
                };
                qgemm(&q, &s);
            } else if sat16 {
                let cols = im2col_hwc(xs_bytes, &geo, zp_byte(x_zp, xs));
                let wt = weights_hwc(a.data, g.mg, g.cg, g.k_vol);
                let b = Strided {
                    data: &cols,
                    signed: false,
                    s_idx: per_w,
                    s_k: 1,
                };
                let q = QGemm {
                    m: g.mg,
                    n: g.out_vol,
                    k: per_w,
                    a: Strided { data: &wt, ..a },
                    a_zp,
                    b: &b,
                    b_zp: Zp::Scalar(x_zp),
                    sat16,
                };
                qgemm(&q, &s);
            } else {
                let b = Im2col2d::new(xs_bytes, xs, zp_byte(x_zp, xs), &geo);
                let q = QGemm {
                    m: g.mg,
                    n: g.out_vol,
                    k: per_w,
                    a,
                    a_zp,
                    b: &b,
                    b_zp: Zp::Scalar(x_zp),
                    sat16: false,
                };
                qgemm(&q, &s);
            }
        }
    }
    Some(())
}

/// int32 accumulators of conv(x - x_zp, w - w_zp[m]), shape [N, M, out...]: the
/// generic path (any rank and integer dtype; im2col + the portable int32 GEMM).
fn int_conv(
    x: &Tensor,
    x_zp: i32,
    w: &Tensor,
    w_zp: &[i32],
    a: &ConvAttrs,
) -> OpResult<(Geom, Vec<i32>)> {
    let g = Geom::new(&x.shape, &w.shape, a)?;
    let xv: Vec<i32> = x.to_i32_vec().into_iter().map(|v| v - x_zp).collect();
    let per_w = g.cg * g.k_vol;
    let wv: Vec<i32> = w
        .to_i32_vec()
        .into_iter()
        .enumerate()
        .map(|(i, v)| v - w_zp[i / per_w.max(1)])
        .collect();
    let (ov, kv) = (g.out_vol, g.k_vol);
    let mut acc = vec![0i32; g.n * g.m * ov];
    let depthwise2d = g.cg == 1 && g.group == g.cin && g.kernel.len() == 2;
    for n in 0..g.n {
        let out_n = &mut acc[n * g.m * ov..(n + 1) * g.m * ov];
        let xn = &xv[n * g.cin * g.in_vol..(n + 1) * g.cin * g.in_vol];
        if depthwise2d {
            out_n.par_chunks_mut(ov).enumerate().for_each(|(oc, o)| {
                let ic = oc / g.mg;
                depthwise2d_plane(
                    &xn[ic * g.in_vol..(ic + 1) * g.in_vol],
                    &wv[oc * kv..(oc + 1) * kv],
                    &g,
                    o,
                );
            });
            continue;
        }
        for grp in 0..g.group {
            let xs = &xn[grp * g.cg * g.in_vol..][..g.cg * g.in_vol];
            let ws = &wv[grp * g.mg * per_w..][..g.mg * per_w];
            let os = &mut out_n[grp * g.mg * ov..][..g.mg * ov];
            if g.is_pointwise() {
                igemm(g.mg, per_w, ov, ws, xs, os);
            } else {
                COL.with(|buf| {
                    let mut col = buf.borrow_mut();
                    col.resize(per_w * ov, 0);
                    im2col(xs, &g, 0, &mut col);
                    igemm(g.mg, per_w, ov, ws, &col, os);
                });
            }
        }
    }
    Ok((g, acc))
}

pub(crate) fn qlinear_conv(c: &Ctx, a: &ConvAttrs) -> OpResult<Tensor> {
    let (x, w) = (c.input(0)?, c.input(3)?);
    let x_s = scalar(c.input(1)?, "x_scale")?;
    let x_zp = zp_scalar(c.opt(2), "x_zero_point")?;
    let y_s = scalar(c.input(6)?, "y_scale")?;
    let y_zp = zp_scalar(c.opt(7), "y_zero_point")?;
    let m = w.shape[0];
    let w_s = per_channel(crate::elem::floats(c.input(4)?).into_owned(), m, "w_scale")?;
    let w_zp = per_channel(
        c.opt(5).map(|t| t.to_i32_vec()).unwrap_or_else(|| vec![0]),
        m,
        "w_zero_point",
    )?;
    let bias = match c.opt(8) {
        Some(b) => per_channel(b.to_i32_vec(), m, "bias")?,
        None => vec![0; m],
    };
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let scales: Vec<f32> = w_s.iter().map(|&ws| output_scale(x_s, ws, y_s)).collect();
    let g = Geom::new(&x.shape, &w.shape, a)?;
    if let (Some(bnd), DType::U8 | DType::I8) = (bounds(y_zp, lo, hi), dt) {
        let ov = g.out_vol;
        let mut out = vec![0u8; g.n * g.m * ov];
        if let (Some(dg), Some(xb), Some(wb)) = (g.depthwise2d(), bytes(x), bytes(w)) {
            let r = Requant {
                bias: &bias,
                scale: &scales,
                zp: y_zp,
                bounds: bnd,
            };
            depthwise_q(xb, x_zp, wb, &w_zp, &dg, &r, &mut out);
            return Ok(byte_tensor(dt, g.out_shape(), out));
        }
        let optr = SendPtr(out.as_mut_ptr());
        let sink = |n: usize, grp: usize| ConvSink {
            out: ConvOut::Requant {
                // SAFETY: the (image, group) block starts inside `out`.
                out: SendPtr(unsafe { optr.get().add((n * g.m + grp * g.mg) * ov) }),
                scale: &scales[grp * g.mg..(grp + 1) * g.mg],
                bias: &bias[grp * g.mg..(grp + 1) * g.mg],
                zp: y_zp,
                bounds: bnd,
            },
            ld: ov,
        };
        let dw_post = |i: usize, acc: &[i32]| {
            let ch = i % g.m;
            // SAFETY: plane i is out[i*ov..(i+1)*ov], written by this task only.
            let o = unsafe { std::slice::from_raw_parts_mut(optr.get().add(i * ov), ov) };
            requant_row(acc, bias[ch], scales[ch], y_zp, bnd, o);
        };
        if fast_conv(x, x_zp, w, &w_zp, &g, &sink, &dw_post, true).is_some() {
            return Ok(byte_tensor(dt, g.out_shape(), out));
        }
    }
    let (g, acc) = int_conv(x, x_zp, w, &w_zp, a)?;
    let ov = g.out_vol;
    let mut out = vec![0i32; acc.len()];
    out.par_chunks_mut(ov.max(1))
        .zip(acc.par_chunks(ov.max(1)))
        .enumerate()
        .for_each(|(i, (o, a))| {
            let ch = i % g.m;
            for (ov, &av) in o.iter_mut().zip(a) {
                *ov = requant_f32(av.wrapping_add(bias[ch]), scales[ch], y_zp, lo, hi);
            }
        });
    Ok(q_tensor(dt, g.out_shape(), out))
}

pub(crate) fn conv_integer(c: &Ctx, a: &ConvAttrs) -> OpResult<Tensor> {
    let (x, w) = (c.input(0)?, c.input(1)?);
    let x_zp = zp_scalar(c.opt(2), "x_zero_point")?;
    let w_zp = per_channel(
        c.opt(3).map(|t| t.to_i32_vec()).unwrap_or_else(|| vec![0]),
        w.shape[0],
        "w_zero_point",
    )?;
    let g = Geom::new(&x.shape, &w.shape, a)?;
    let ov = g.out_vol;
    let mut out = vec![0i32; g.n * g.m * ov];
    let len = out.len();
    let optr = SendPtr(out.as_mut_ptr());
    let sink = |n: usize, grp: usize| {
        let off = (n * g.m + grp * g.mg) * ov;
        ConvSink {
            out: ConvOut::I32(StoreI32 {
                // SAFETY: the (image, group) block starts inside `out`.
                out: SendPtr(unsafe { optr.get().add(off) }),
                len: len - off,
                ld: ov,
                transposed: false,
            }),
            ld: ov,
        }
    };
    let dw_post = |i: usize, acc: &[i32]| {
        // SAFETY: plane i is out[i*ov..(i+1)*ov], written by this task only.
        let o = unsafe { std::slice::from_raw_parts_mut(optr.get().add(i * ov), ov) };
        o.copy_from_slice(acc);
    };
    if fast_conv(x, x_zp, w, &w_zp, &g, &sink, &dw_post, false).is_some() {
        return Ok(Tensor::from_i32(g.out_shape(), out));
    }
    let (g, acc) = int_conv(x, x_zp, w, &w_zp, a)?;
    Ok(Tensor::from_i32(g.out_shape(), acc))
}
