//! QLinearConv (per-tensor or per-output-channel weight scale/zero point, int32 bias)
//! and ConvInteger. Both subtract the zero points, accumulate in int32 with
//! wrap-around (im2col + integer GEMM, or the direct depthwise kernel), and QLinearConv
//! requantizes per output channel with `requant_f32(acc + bias, (x_s * w_s[m]) / y_s)`,
//! which is what onnxruntime's MLAS output processor computes.

use crate::error::{OpResult, unsupported};
use crate::exec::Ctx;
use crate::ops::conv::{Geom, depthwise2d_plane, im2col};
use crate::ops::quant::{igemm, q_tensor, qrange, scalar, zp_scalar};
use crate::quant::{output_scale, requant_f32};
use pimkit_ir::{ConvAttrs, Tensor};
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

/// int32 accumulators of conv(x - x_zp, w - w_zp[m]), shape [N, M, out...].
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
    let (g, acc) = int_conv(x, x_zp, w, &w_zp, a)?;
    let scales: Vec<f32> = w_s.iter().map(|&ws| output_scale(x_s, ws, y_s)).collect();
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
    let (g, acc) = int_conv(x, x_zp, w, &w_zp, a)?;
    Ok(Tensor::from_i32(g.out_shape(), acc))
}
