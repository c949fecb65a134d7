//! QuantizeLinear, DequantizeLinear (per-tensor / per-axis), QLinearMatMul (per-row a,
//! per-column b), MatMulInteger and com.microsoft QGemm, plus the helpers the other
//! quantized kernels share (scalar parameters, zero points, the wrapping int32 GEMM).

use crate::elem::{broadcast_map, floats};
use crate::error::{OpResult, unsupported};
use crate::exec::Ctx;
use crate::kernels::qgemm::{Strided, Zp, matmul_i32};
use crate::kernels::requant::{bounds, byte_tensor, quantize_bytes, requant_row_scales};
use crate::ops::linalg;
use crate::ops::qconv::bytes;
use crate::quant::{output_scale, quantize_f32, requant_f32};
use pimkit_ir::{DType, Tensor, TensorData, broadcast_shapes};
use rayon::prelude::*;

/// A scalar f32 parameter (scale): exactly one element.
pub(crate) fn scalar(t: &Tensor, what: &str) -> OpResult<f32> {
    if t.numel() != 1 || !t.dtype().is_float() {
        return unsupported(format!("{what} must be a scalar float, got {}", t.ty()));
    }
    Ok(floats(t)[0])
}

/// A scalar integer parameter (zero point), 0 when absent.
pub(crate) fn zp_scalar(t: Option<&Tensor>, what: &str) -> OpResult<i32> {
    match t {
        None => Ok(0),
        Some(t) if t.numel() == 1 => Ok(t.to_i32_vec()[0]),
        Some(t) => unsupported(format!("{what} must be a scalar, got {}", t.ty())),
    }
}

/// Saturation bounds of a quantized output type.
pub(crate) fn qrange(dt: DType) -> OpResult<(i32, i32)> {
    match dt {
        DType::I32 => Ok((i32::MIN, i32::MAX)),
        _ => dt
            .quant_range()
            .map_or_else(|| unsupported(format!("{dt} is not a quantized type")), Ok),
    }
}

/// Build a u8/i8/i32 tensor from already-saturated i32 values.
pub(crate) fn q_tensor(dt: DType, shape: Vec<usize>, v: Vec<i32>) -> Tensor {
    let data = match dt {
        DType::U8 => TensorData::U8(v.into_iter().map(|x| x as u8).collect()),
        DType::I8 => TensorData::I8(v.into_iter().map(|x| x as i8).collect()),
        _ => TensorData::I32(v),
    };
    Tensor { shape, data }
}

/// `out[m x n] = a[m x k] * b[k x n]` in int32 with wrap-around (as the spec allows and
/// MLAS does), rows in parallel.
pub(crate) fn igemm(m: usize, k: usize, n: usize, a: &[i32], b: &[i32], out: &mut [i32]) {
    let row = |(i, o): (usize, &mut [i32])| {
        o.fill(0);
        for kk in 0..k {
            let w = a[i * k + kk];
            if w == 0 {
                continue;
            }
            let br = &b[kk * n..(kk + 1) * n];
            for (ov, &bv) in o.iter_mut().zip(br) {
                *ov = ov.wrapping_add(w.wrapping_mul(bv));
            }
        }
    };
    if m * k * n >= 1 << 16 {
        out[..m * n].par_chunks_mut(n).enumerate().for_each(row);
    } else {
        out[..m * n].chunks_mut(n).enumerate().for_each(row);
    }
}

/// Per-axis parameter index of every element (None when per-tensor).
fn axis_index(shape: &[usize], axis: usize, len: usize) -> OpResult<Option<(usize, usize)>> {
    if len == 1 {
        return Ok(None);
    }
    if axis >= shape.len() || shape[axis] != len {
        return unsupported(format!(
            "per-axis parameter of length {len} does not match axis {axis} of {shape:?}"
        ));
    }
    Ok(Some((shape[axis + 1..].iter().product(), len)))
}

pub(crate) fn quantize_linear(c: &Ctx, axis: usize, to: DType) -> OpResult<Tensor> {
    let x = c.input(0)?;
    let xf = floats(x);
    let s = floats(c.input(1)?);
    let zp: Vec<i32> = c.opt(2).map(|t| t.to_i32_vec()).unwrap_or_else(|| vec![0]);
    if zp.len() != 1 && zp.len() != s.len() {
        return unsupported("zero point and scale have different lengths");
    }
    let (lo, hi) = qrange(to)?;
    let ax = axis_index(&x.shape, axis, s.len())?;
    if matches!(to, DType::U8 | DType::I8) && zp.iter().all(|&z| bounds(z, lo, hi).is_some()) {
        return Ok(quantize_bytes(&xf, &s, &zp, ax, (lo, hi), to, &x.shape));
    }
    let out = xf
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let ch = ax.map_or(0, |(inner, len)| (i / inner.max(1)) % len);
            quantize_f32(v, s[ch], zp[if zp.len() == 1 { 0 } else { ch }], lo, hi)
        })
        .collect();
    Ok(q_tensor(to, x.shape.clone(), out))
}

pub(crate) fn dequantize_linear(c: &Ctx, axis: usize) -> OpResult<Tensor> {
    let x = c.input(0)?;
    let s = floats(c.input(1)?);
    let zp: Vec<i32> = c.opt(2).map(|t| t.to_i32_vec()).unwrap_or_else(|| vec![0]);
    if zp.len() != 1 && zp.len() != s.len() {
        return unsupported("zero point and scale have different lengths");
    }
    let ax = axis_index(&x.shape, axis, s.len())?;
    if ax.is_none()
        && zp.len() == 1
        && let Some((b, signed)) = bytes(x)
    {
        // One scale and zero point on 8-bit codes: the same formula, vectorized.
        let (z, sc) = (zp[0], s[0]);
        let mut out = vec![0f32; b.len()];
        crate::kernels::ewise::simd(
            #[inline(always)]
            || {
                for (o, &v) in out.iter_mut().zip(b) {
                    let v = if signed { v as i8 as i32 } else { v as i32 };
                    *o = v.wrapping_sub(z) as f32 * sc;
                }
            },
        );
        return Ok(Tensor::from_f32(x.shape.clone(), out));
    }
    let xv = x.to_i32_vec();
    let out = xv
        .iter()
        .enumerate()
        .map(|(i, &v)| {
            let ch = ax.map_or(0, |(inner, len)| (i / inner.max(1)) % len);
            let z = zp[if zp.len() == 1 { 0 } else { ch }];
            (v.wrapping_sub(z)) as f32 * s[ch]
        })
        .collect();
    Ok(Tensor::from_f32(x.shape.clone(), out))
}

/// Quantization parameter (scale or zp) of a matmul operand, resolved per (batch, row)
/// of `a` or per (batch, column) of `b`: `q_shape` is the operand shape with the
/// reduced axis set to 1; the parameter must broadcast to it.
fn operand_param(p: &Tensor, q_shape: &[usize], what: &str) -> OpResult<Vec<usize>> {
    let total: usize = q_shape.iter().product();
    if p.numel() == 1 {
        return Ok(vec![0; total]);
    }
    if broadcast_shapes(&p.shape, q_shape).as_deref() != Some(q_shape) {
        return unsupported(format!(
            "{what} of shape {:?} is neither scalar nor broadcastable to {q_shape:?}",
            p.shape
        ));
    }
    Ok(broadcast_map(&p.shape, q_shape))
}

/// Shared core of QLinearMatMul and MatMulInteger: the int32 accumulators of
/// (a - a_zp)(b - b_zp) with per-row a_zp and per-column b_zp, plus the per-element
/// parameter index maps (a: per batch-row, b: per batch-column).
struct QMatmul {
    plan: linalg::MatmulPlan,
    acc: Vec<i32>,
}

fn qmatmul(
    a: &Tensor,
    b: &Tensor,
    azp: Option<&Tensor>,
    bzp: Option<&Tensor>,
) -> OpResult<QMatmul> {
    let plan = linalg::plan(&a.shape, &b.shape)?;
    let (m, k, n) = (plan.m, plan.k, plan.n);
    let (av, bv) = (a.to_i32_vec(), b.to_i32_vec());
    let a_q: Vec<usize> = a_param_shape(&a.shape);
    let b_q: Vec<usize> = b_param_shape(&b.shape);
    let zero = Tensor::from_i32(vec![], vec![0]);
    let (za, zb) = (azp.unwrap_or(&zero), bzp.unwrap_or(&zero));
    let za_idx = operand_param(za, &a_q, "a zero point")?;
    let zb_idx = operand_param(zb, &b_q, "b zero point")?;
    let (zav, zbv) = (za.to_i32_vec(), zb.to_i32_vec());
    let mut acc = vec![0i32; plan.batches.len() * m * n];
    if let (Some((ad, asg)), Some((bd, bsg))) = (bytes(a), bytes(b)) {
        // u8/i8 operands: the packed integer kernels.
        for (bi, &(oa, ob)) in plan.batches.iter().enumerate() {
            let (abatch, bbatch) = (oa / (m * k).max(1), ob / (k * n).max(1));
            let zr: Vec<i32> = (0..m).map(|i| zav[za_idx[abatch * m + i]]).collect();
            let zc: Vec<i32> = (0..n).map(|j| zbv[zb_idx[bbatch * n + j]]).collect();
            let sa = Strided {
                data: &ad[oa..oa + m * k],
                signed: asg,
                s_idx: k,
                s_k: 1,
            };
            let sb = Strided {
                data: &bd[ob..ob + k * n],
                signed: bsg,
                s_idx: 1,
                s_k: n,
            };
            let out = &mut acc[bi * m * n..(bi + 1) * m * n];
            matmul_i32((m, k, n), sa, Zp::Each(&zr), sb, Zp::Each(&zc), out);
        }
        return Ok(QMatmul { plan, acc });
    }
    let mut ab = vec![0i32; m * k];
    let mut bb = vec![0i32; k * n];
    for (bi, &(oa, ob)) in plan.batches.iter().enumerate() {
        // oa / (m*k) is the batch index of a; rows of a index its params.
        let (abatch, bbatch) = (oa / (m * k).max(1), ob / (k * n).max(1));
        for i in 0..m {
            let z = zav[za_idx[abatch * m + i]];
            for kk in 0..k {
                ab[i * k + kk] = av[oa + i * k + kk] - z;
            }
        }
        for kk in 0..k {
            for j in 0..n {
                bb[kk * n + j] = bv[ob + kk * n + j] - zbv[zb_idx[bbatch * n + j]];
            }
        }
        igemm(m, k, n, &ab, &bb, &mut acc[bi * m * n..(bi + 1) * m * n]);
    }
    Ok(QMatmul { plan, acc })
}

/// Shape of a's per-row parameters: a's shape with the last axis set to 1.
fn a_param_shape(s: &[usize]) -> Vec<usize> {
    if s.len() == 1 {
        vec![1, 1]
    } else {
        let mut q = s.to_vec();
        *q.last_mut().unwrap_or(&mut 0) = 1;
        q
    }
}

/// Shape of b's per-column parameters: b's shape with the second-to-last axis set to 1.
fn b_param_shape(s: &[usize]) -> Vec<usize> {
    if s.len() == 1 {
        vec![1, 1]
    } else {
        let mut q = s.to_vec();
        let r = q.len();
        q[r - 2] = 1;
        q
    }
}

pub(crate) fn qlinear_matmul(c: &Ctx) -> OpResult<Tensor> {
    let (a, b) = (c.input(0)?, c.input(3)?);
    let (a_s, b_s) = (c.input(1)?, c.input(4)?);
    let y_s = scalar(c.input(6)?, "y_scale")?;
    let out_dt = c.out_ty(0).dtype;
    let y_zp = zp_scalar(c.opt(7), "y_zero_point")?;
    let (lo, hi) = qrange(out_dt)?;
    let q = qmatmul(a, b, c.opt(2), c.opt(5))?;
    let (m, n) = (q.plan.m, q.plan.n);
    let sa_idx = operand_param(a_s, &a_param_shape(&a.shape), "a_scale")?;
    let sb_idx = operand_param(b_s, &b_param_shape(&b.shape), "b_scale")?;
    let (sav, sbv) = (floats(a_s), floats(b_s));
    if let (Some(bnd), DType::U8 | DType::I8) = (bounds(y_zp, lo, hi), out_dt) {
        let mut out = vec![0u8; q.acc.len()];
        let mut scales = vec![0f32; n];
        for (bi, &(oa, ob)) in q.plan.batches.iter().enumerate() {
            let (abatch, bbatch) = (oa / (m * q.plan.k).max(1), ob / (q.plan.k * n).max(1));
            for i in 0..m {
                let sa = sav[sa_idx[abatch * m + i]];
                for (j, s) in scales.iter_mut().enumerate() {
                    *s = output_scale(sa, sbv[sb_idx[bbatch * n + j]], y_s);
                }
                let r = (bi * m + i) * n;
                requant_row_scales(&q.acc[r..r + n], &scales, y_zp, bnd, &mut out[r..r + n]);
            }
        }
        return Ok(byte_tensor(out_dt, c.out_ty(0).shape.clone(), out));
    }
    let mut out = Vec::with_capacity(q.acc.len());
    for (bi, &(oa, ob)) in q.plan.batches.iter().enumerate() {
        let (abatch, bbatch) = (oa / (m * q.plan.k).max(1), ob / (q.plan.k * n).max(1));
        for i in 0..m {
            let sa = sav[sa_idx[abatch * m + i]];
            for j in 0..n {
                let scale = output_scale(sa, sbv[sb_idx[bbatch * n + j]], y_s);
                out.push(requant_f32(
                    q.acc[(bi * m + i) * n + j],
                    scale,
                    y_zp,
                    lo,
                    hi,
                ));
            }
        }
    }
    Ok(q_tensor(out_dt, c.out_ty(0).shape.clone(), out))
}

pub(crate) fn matmul_integer(c: &Ctx) -> OpResult<Tensor> {
    let (a, b) = (c.input(0)?, c.input(1)?);
    // ONNX allows a 1-D per-row a_zp of length M and per-column b_zp of length N.
    let azp = c.opt(2).map(|t| per_row_1d(t, &a.shape));
    let q = qmatmul(a, b, azp.as_ref(), c.opt(3))?;
    Ok(Tensor::from_i32(c.out_ty(0).shape.clone(), q.acc))
}

/// Reshape a 1-D per-row zero point [M] to [M, 1] so it broadcasts over a's rows.
fn per_row_1d(t: &Tensor, a_shape: &[usize]) -> Tensor {
    if t.rank() == 1 && t.numel() > 1 && a_shape.len() >= 2 {
        t.clone()
            .reshaped(vec![t.numel(), 1])
            .unwrap_or_else(|| t.clone())
    } else {
        t.clone()
    }
}

/// com.microsoft QGemm: Y = alpha * (A - a_zp)'(B - b_zp)' + C, C int32. With y_scale
/// the result is requantized with scale ((alpha * a_scale) * b_scale[j]) / y_scale
/// (f32, ORT's order); without it the output is f32: f32(acc) * (alpha * a_scale) *
/// b_scale[j].
pub(crate) fn qgemm(c: &Ctx, alpha: f32, trans_a: bool, trans_b: bool) -> OpResult<Tensor> {
    let (a, b) = (c.input(0)?, c.input(3)?);
    let a_s = scalar(c.input(1)?, "a_scale")?;
    let a_zp = zp_scalar(c.opt(2), "a_zero_point")?;
    let b_s = floats(c.input(4)?);
    let b_zp: Vec<i32> = c.opt(5).map(|t| t.to_i32_vec()).unwrap_or_else(|| vec![0]);
    let (m, k) = if trans_a {
        (a.shape[1], a.shape[0])
    } else {
        (a.shape[0], a.shape[1])
    };
    let n = if trans_b { b.shape[0] } else { b.shape[1] };
    if (b_s.len() != 1 && b_s.len() != n) || (b_zp.len() != 1 && b_zp.len() != n) {
        return unsupported(format!("b_scale/b_zero_point must be scalar or length {n}"));
    }
    let mut acc = vec![0i32; m * n];
    if let (Some((ad, asg)), Some((bd, bsg))) = (bytes(a), bytes(b)) {
        let sa = Strided {
            data: ad,
            signed: asg,
            s_idx: if trans_a { 1 } else { k },
            s_k: if trans_a { m } else { 1 },
        };
        let sb = Strided {
            data: bd,
            signed: bsg,
            s_idx: if trans_b { k } else { 1 },
            s_k: if trans_b { 1 } else { n },
        };
        let zc = if b_zp.len() == 1 {
            Zp::Scalar(b_zp[0])
        } else {
            Zp::Each(&b_zp)
        };
        matmul_i32((m, k, n), sa, Zp::Scalar(a_zp), sb, zc, &mut acc);
    } else {
        acc = qgemm_generic(a, b, a_zp, &b_zp, (m, k, n), trans_a, trans_b);
    }
    qgemm_finish(c, acc, alpha, a_s, &b_s, (m, n))
}

/// int32 sums of QGemm for integer dtypes the packed kernels do not take.
fn qgemm_generic(
    a: &Tensor,
    b: &Tensor,
    a_zp: i32,
    b_zp: &[i32],
    (m, k, n): (usize, usize, usize),
    trans_a: bool,
    trans_b: bool,
) -> Vec<i32> {
    let (av, bv) = (a.to_i32_vec(), b.to_i32_vec());
    let mut am = vec![0i32; m * k];
    for i in 0..m {
        for kk in 0..k {
            let v = if trans_a {
                av[kk * m + i]
            } else {
                av[i * k + kk]
            };
            am[i * k + kk] = v - a_zp;
        }
    }
    let mut bm = vec![0i32; k * n];
    for kk in 0..k {
        for j in 0..n {
            let v = if trans_b {
                bv[j * k + kk]
            } else {
                bv[kk * n + j]
            };
            bm[kk * n + j] = v - b_zp[if b_zp.len() == 1 { 0 } else { j }];
        }
    }
    let mut acc = vec![0i32; m * n];
    igemm(m, k, n, &am, &bm, &mut acc);
    acc
}

/// QGemm's epilogue: add C, then requantize (with y_scale) or scale to f32.
fn qgemm_finish(
    c: &Ctx,
    mut acc: Vec<i32>,
    alpha: f32,
    a_s: f32,
    b_s: &[f32],
    (m, n): (usize, usize),
) -> OpResult<Tensor> {
    if let Some(cb) = c.opt(6) {
        let cv = cb.to_i32_vec();
        let idx = broadcast_map(&cb.shape, &[m, n]);
        for (o, &i) in acc.iter_mut().zip(&idx) {
            *o = o.wrapping_add(cv[i]);
        }
    }
    let col_scale = |j: usize| (alpha * a_s) * b_s[if b_s.len() == 1 { 0 } else { j }];
    let shape = vec![m, n];
    match c.opt(7) {
        Some(ys) => {
            let y_s = scalar(ys, "y_scale")?;
            let y_zp = zp_scalar(c.opt(8), "y_zero_point")?;
            let dt = c.out_ty(0).dtype;
            let (lo, hi) = qrange(dt)?;
            if let (Some(bnd), DType::U8 | DType::I8) = (bounds(y_zp, lo, hi), dt) {
                let scales: Vec<f32> = (0..n).map(|j| col_scale(j) / y_s).collect();
                let mut out = vec![0u8; m * n];
                for (o, a) in out.chunks_mut(n.max(1)).zip(acc.chunks(n.max(1))) {
                    requant_row_scales(a, &scales, y_zp, bnd, o);
                }
                return Ok(byte_tensor(dt, shape, out));
            }
            let out = acc
                .iter()
                .enumerate()
                .map(|(i, &v)| requant_f32(v, col_scale(i % n) / y_s, y_zp, lo, hi))
                .collect();
            Ok(q_tensor(dt, shape, out))
        }
        None => Ok(Tensor::from_f32(
            shape,
            acc.iter()
                .enumerate()
                .map(|(i, &v)| v as f32 * col_scale(i % n))
                .collect(),
        )),
    }
}
