//! com.microsoft QLinearAdd, QLinearMul, QLinearConcat, QLinearGlobalAveragePool and the
//! lookup-table ops (QLinearSigmoid, QLinearLeakyRelu).
//!
//! Each formula mirrors the x86 (SSE2) MLAS kernel onnxruntime runs, operation by
//! operation in f32, so the results are bit-exact. The formulas live in small functions
//! (`add_value`, `mul_value`, ...) so they are easy to adjust against golden vectors.
//! See docs/interpreter.md for the exact assumptions.

use crate::elem::broadcast_map;
use crate::error::{OpResult, unsupported};
use crate::exec::Ctx;
use crate::ops::quant::{q_tensor, qrange, scalar, zp_scalar};
use crate::quant::{quantize_f32, requant_f32};
use pimkit_ir::{Tensor, broadcast_shapes};

/// x86 `cvtps_epi32` + saturating packs: round half to even, out-of-range or NaN gives
/// the integer indefinite value (i32::MIN), which then saturates to `lo`.
fn cvt_saturate(v: f32, lo: i32, hi: i32) -> i32 {
    let r = v.round_ties_even();
    let i = if r.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&r) {
        i32::MIN
    } else {
        r as i32
    };
    i.clamp(lo, hi)
}

/// Parameters of one QLinearAdd: ratios to the output scale and the folded constant.
struct AddParams {
    ra: f32,
    rb: f32,
    fixed: f32,
}

/// MLAS QLinearAdd (SSE2): `ra = a_s / y_s`, `rb = b_s / y_s`,
/// `fixed = y_zp - (ra * a_zp + rb * b_zp)`, then per element
/// `(fixed + a * ra) + b * rb` on the raw (not zero-point-subtracted) values. When `b`
/// is a scalar within the innermost broadcast span, MLAS folds it first:
/// `(fixed + b * rb) + a * ra`.
fn add_params(a_s: f32, a_zp: i32, b_s: f32, b_zp: i32, y_s: f32, y_zp: i32) -> AddParams {
    let ra = a_s / y_s;
    let rb = b_s / y_s;
    AddParams {
        ra,
        rb,
        fixed: y_zp as f32 - (ra * a_zp as f32 + rb * b_zp as f32),
    }
}

/// Which operand MLAS sees as a scalar for a broadcast pair (decided on the innermost
/// output axis with extent > 1, as onnxruntime's broadcaster splits spans).
#[derive(Clone, Copy, PartialEq)]
enum Span {
    General,
    ScalarA,
    ScalarB,
}

fn span_kind(ash: &[usize], bsh: &[usize], out: &[usize]) -> Span {
    let numel = |s: &[usize]| s.iter().product::<usize>();
    if numel(ash) == 1 {
        return Span::ScalarA;
    }
    if numel(bsh) == 1 {
        return Span::ScalarB;
    }
    let r = out.len();
    let dim = |s: &[usize], i: usize| {
        if i + s.len() >= r {
            s[i + s.len() - r]
        } else {
            1
        }
    };
    match (0..r).rev().find(|&i| out[i] > 1) {
        Some(i) if dim(ash, i) == 1 => Span::ScalarA,
        Some(i) if dim(bsh, i) == 1 => Span::ScalarB,
        _ => Span::General,
    }
}

/// Inputs common to QLinearAdd / QLinearMul.
struct Binary<'a> {
    a: &'a Tensor,
    b: &'a Tensor,
    a_s: f32,
    a_zp: i32,
    b_s: f32,
    b_zp: i32,
    y_s: f32,
    y_zp: i32,
}

fn binary_inputs<'a>(c: &Ctx<'a>) -> OpResult<Binary<'a>> {
    Ok(Binary {
        a: c.input(0)?,
        a_s: scalar(c.input(1)?, "A_scale")?,
        a_zp: zp_scalar(c.opt(2), "A_zero_point")?,
        b: c.input(3)?,
        b_s: scalar(c.input(4)?, "B_scale")?,
        b_zp: zp_scalar(c.opt(5), "B_zero_point")?,
        y_s: scalar(c.input(6)?, "C_scale")?,
        y_zp: zp_scalar(c.opt(7), "C_zero_point")?,
    })
}

fn broadcast_pairs(a: &Tensor, b: &Tensor) -> OpResult<(Vec<usize>, Vec<i32>, Vec<i32>)> {
    let Some(out) = broadcast_shapes(&a.shape, &b.shape) else {
        return unsupported("A and B are not broadcastable");
    };
    let (av, bv) = (a.to_i32_vec(), b.to_i32_vec());
    let (ia, ib) = (broadcast_map(&a.shape, &out), broadcast_map(&b.shape, &out));
    let av = ia.iter().map(|&i| av[i]).collect();
    let bv = ib.iter().map(|&i| bv[i]).collect();
    Ok((out, av, bv))
}

pub(crate) fn qlinear_add(c: &Ctx) -> OpResult<Tensor> {
    let p = binary_inputs(c)?;
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let (out, av, bv) = broadcast_pairs(p.a, p.b)?;
    let span = span_kind(&p.a.shape, &p.b.shape, &out);
    let vals = match span {
        Span::ScalarA => {
            // onnxruntime passes B as MLAS's first operand and the scalar A second.
            let q = add_params(p.b_s, p.b_zp, p.a_s, p.a_zp, p.y_s, p.y_zp);
            av.iter()
                .zip(&bv)
                .map(|(&x, &y)| cvt_saturate((q.fixed + x as f32 * q.rb) + y as f32 * q.ra, lo, hi))
                .collect()
        }
        Span::ScalarB => {
            let q = add_params(p.a_s, p.a_zp, p.b_s, p.b_zp, p.y_s, p.y_zp);
            av.iter()
                .zip(&bv)
                .map(|(&x, &y)| cvt_saturate((q.fixed + y as f32 * q.rb) + x as f32 * q.ra, lo, hi))
                .collect()
        }
        Span::General => {
            let q = add_params(p.a_s, p.a_zp, p.b_s, p.b_zp, p.y_s, p.y_zp);
            av.iter()
                .zip(&bv)
                .map(|(&x, &y)| cvt_saturate((q.fixed + x as f32 * q.ra) + y as f32 * q.rb, lo, hi))
                .collect()
        }
    };
    Ok(q_tensor(dt, out, vals))
}

/// MLAS QLinearMul (SSE2): the exact integer product (a - a_zp)(b - b_zp), converted
/// to f32, times `(a_s * b_s) / y_s`, plus f32(y_zp), rounded half to even.
pub(crate) fn qlinear_mul(c: &Ctx) -> OpResult<Tensor> {
    let p = binary_inputs(c)?;
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let (out, av, bv) = broadcast_pairs(p.a, p.b)?;
    let ratio = p.a_s * p.b_s / p.y_s;
    let zc = p.y_zp as f32;
    let vals = av
        .iter()
        .zip(&bv)
        .map(|(&x, &y)| {
            let prod = (x - p.a_zp) * (y - p.b_zp);
            cvt_saturate(prod as f32 * ratio + zc, lo, hi)
        })
        .collect();
    Ok(q_tensor(dt, out, vals))
}

/// onnxruntime's quantized lookup table: for each of the 256 input codes, dequantize
/// (`x_s * (v - x_zp)` in f32), apply `f` in f32, quantize with QuantizeLinear.
fn lookup_table(
    dt_in: pimkit_ir::DType,
    x_s: f32,
    x_zp: i32,
    y_s: f32,
    y_zp: i32,
    lo: i32,
    hi: i32,
    f: impl Fn(f32) -> f32,
) -> OpResult<[i32; 256]> {
    let mut t = [0i32; 256];
    let (in_lo, _) = qrange(dt_in)?;
    for (code, slot) in t.iter_mut().enumerate() {
        let v = in_lo + code as i32;
        *slot = quantize_f32(f(x_s * (v - x_zp) as f32), y_s, y_zp, lo, hi);
    }
    Ok(t)
}

fn apply_table(x: &Tensor, t: &[i32; 256]) -> OpResult<Vec<i32>> {
    let (lo, _) = qrange(x.dtype())?;
    Ok(x.to_i32_vec()
        .into_iter()
        .map(|v| t[(v - lo) as usize])
        .collect())
}

pub(crate) fn qlinear_lookup(c: &Ctx, f: impl Fn(f32) -> f32) -> OpResult<Tensor> {
    let x = c.input(0)?;
    let x_s = scalar(c.input(1)?, "X_scale")?;
    let x_zp = zp_scalar(c.opt(2), "X_zero_point")?;
    let y_s = scalar(c.input(3)?, "Y_scale")?;
    let y_zp = zp_scalar(c.opt(4), "Y_zero_point")?;
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let t = lookup_table(x.dtype(), x_s, x_zp, y_s, y_zp, lo, hi, f)?;
    Ok(q_tensor(dt, x.shape.clone(), apply_table(x, &t)?))
}

/// Inputs whose (scale, zp) equal the output's are copied; the others go through the
/// identity lookup table (dequantize, QuantizeLinear), as onnxruntime does.
pub(crate) fn qlinear_concat(c: &Ctx, axis: usize) -> OpResult<Tensor> {
    let y_s = scalar(c.input(0)?, "Y_scale")?;
    let y_zp = zp_scalar(c.opt(1), "Y_zero_point")?;
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let mut parts: Vec<Tensor> = Vec::new();
    for i in (2..c.ins.len()).step_by(3) {
        let x = c.input(i)?;
        let x_s = scalar(c.input(i + 1)?, "X_scale")?;
        let x_zp = zp_scalar(c.opt(i + 2), "X_zero_point")?;
        let vals = if x_s == y_s && x_zp == y_zp && x.dtype() == dt {
            x.to_i32_vec()
        } else {
            let t = lookup_table(x.dtype(), x_s, x_zp, y_s, y_zp, lo, hi, |v| v)?;
            apply_table(x, &t)?
        };
        parts.push(q_tensor(dt, x.shape.clone(), vals));
    }
    let refs: Vec<&Tensor> = parts.iter().collect();
    crate::ops::shape::concat(&refs, axis)
}

/// MLAS QLinearGlobalAveragePool: acc = sum(x) - x_zp * image_size (int32), requantized
/// with scale = x_s / (y_s * f32(image_size)).
pub(crate) fn qlinear_global_avg_pool(c: &Ctx, channels_last: bool) -> OpResult<Tensor> {
    let x = c.input(0)?;
    let x_s = scalar(c.input(1)?, "x_scale")?;
    let x_zp = zp_scalar(c.opt(2), "x_zero_point")?;
    let y_s = scalar(c.input(3)?, "y_scale")?;
    let y_zp = zp_scalar(c.opt(4), "y_zero_point")?;
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let r = x.rank();
    let (n, ch) = (
        x.shape[0],
        if channels_last {
            x.shape[r - 1]
        } else {
            x.shape[1]
        },
    );
    let image: usize = if channels_last {
        x.shape[1..r - 1].iter().product()
    } else {
        x.shape[2..].iter().product()
    };
    let scale = x_s / (y_s * image as f32);
    let bias = (x_zp as i64 * image as i64) as i32;
    let xv = x.to_i32_vec();
    let mut out = Vec::with_capacity(n * ch);
    for b in 0..n {
        for k in 0..ch {
            let mut acc = 0i32;
            for p in 0..image {
                let idx = if channels_last {
                    (b * image + p) * ch + k
                } else {
                    (b * ch + k) * image + p
                };
                acc = acc.wrapping_add(xv[idx]);
            }
            out.push(requant_f32(acc.wrapping_sub(bias), scale, y_zp, lo, hi));
        }
    }
    Ok(q_tensor(dt, c.out_ty(0).shape.clone(), out))
}
