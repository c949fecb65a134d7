//! com.microsoft QLinearAdd, QLinearMul, QLinearConcat, QLinearGlobalAveragePool and the
//! lookup-table ops (QLinearSigmoid, QLinearLeakyRelu).
//!
//! Each formula mirrors the MLAS kernel onnxruntime runs on the selected CPU path
//! (`crate::OrtKernels`: SSE2, AVX2/FMA, NEON), operation by operation in f32, so the
//! results are bit-exact. The formulas live in small functions
//! (`add_value`, `mul_value`, ...) so they are easy to adjust against golden vectors.
//! See docs/interpreter.md for the exact assumptions.

use crate::elem::broadcast_map;
use crate::error::{OpResult, unsupported};
use crate::exec::Ctx;
use crate::kernels::qbinary::{AddRow, Codes, qlinear_add_row, qlinear_mul_row};
use crate::kernels::requant::byte_tensor;
use crate::ops::qconv::bytes;
use crate::ops::quant::{q_tensor, qrange, scalar, zp_scalar};
use crate::quant::{quantize_f32, requant_f32};
use pimkit_ir::{DType, Tensor, broadcast_shapes};

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

/// MLAS QLinearAdd's folded constant: `ra = a_s / y_s`, `rb = b_s / y_s`, and
/// `fixed = y_zp - (ra * a_zp + rb * b_zp)`, rounded step by step (SSE2) or with the two
/// multiply-adds contracted the way the AVX2 kernel's compiler does
/// (`y_zp - fma(ra, a_zp, rb * b_zp)`).
fn add_params(
    a_s: f32,
    a_zp: i32,
    b_s: f32,
    b_zp: i32,
    y_s: f32,
    y_zp: i32,
    fma: bool,
) -> AddParams {
    let ra = a_s / y_s;
    let rb = b_s / y_s;
    let fixed = if fma {
        y_zp as f32 - ra.mul_add(a_zp as f32, rb * b_zp as f32)
    } else {
        y_zp as f32 - (ra * a_zp as f32 + rb * b_zp as f32)
    };
    AddParams { ra, rb, fixed }
}

impl AddParams {
    /// One output of MLAS's float kernels on raw codes `x` (the vector operand, "A") and
    /// `y` ("B"), before rounding. SSE2: `(fixed + x*ra) + y*rb`, or with a scalar B folded
    /// first `(fixed + y*rb) + x*ra`. AVX2: `fma(x, ra, fma(y, rb, fixed))`; scalar B:
    /// `fma(x, ra, fma(y, rb, fixed))` with the inner term computed once (same value).
    fn value(&self, x: i32, y: i32, scalar_b: bool, fma: bool) -> f32 {
        let (x, y) = (x as f32, y as f32);
        if fma {
            x.mul_add(self.ra, y.mul_add(self.rb, self.fixed))
        } else if scalar_b {
            (self.fixed + y * self.rb) + x * self.ra
        } else {
            (self.fixed + x * self.ra) + y * self.rb
        }
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

/// MLAS's NEON fixed-point QLinearAdd parameters (`MlasCalcQLinearAddParameters`):
/// a shift and two integer multipliers, or `None` when the ratios fall outside what it
/// accepts (MLAS then uses its float "raw" helper).
fn neon_fixed_params(ra: f32, rb: f32) -> Option<(u32, i64, i64)> {
    let ok = |r: f32| (2f32.powi(-14)..2f32.powi(8)).contains(&r);
    if !ok(ra) || !ok(rb) {
        return None;
    }
    let e = ((ra.max(rb).to_bits() >> 23) & 0xFF) as i32 - 127;
    let shift = 21 - e;
    if !(13..=31).contains(&shift) {
        return None;
    }
    let scale = 2f32.powi(shift);
    let (ma, mb) = (
        (ra * scale).round_ties_even() as i64,
        (rb * scale).round_ties_even() as i64,
    );
    let (lo, hi) = (1i64 << 21, 1i64 << 22);
    if ma >= hi || mb >= hi || ma.max(mb) < lo {
        return None;
    }
    Some((shift as u32, ma, mb))
}

/// NEON QLinearAdd on one pair of codes (the fixed-point path or its float fallback).
fn neon_add(p: &Binary, x: i32, y: i32, lo: i32, hi: i32) -> i32 {
    let (ra, rb) = (p.a_s / p.y_s, p.b_s / p.y_s);
    match neon_fixed_params(ra, rb) {
        Some((shift, ma, mb)) => {
            // int32 accumulation, then round half away from zero by the shift.
            let acc = ((x - p.a_zp) as i64 * ma + (y - p.b_zp) as i64 * mb) as i32;
            let acc = if acc < 0 { acc - 1 } else { acc };
            let v = acc.wrapping_add(1 << (shift - 1)) >> shift;
            let v16 = v.clamp(i16::MIN as i32, i16::MAX as i32);
            let v16 = (v16 + p.y_zp).clamp(i16::MIN as i32, i16::MAX as i32);
            v16.clamp(lo, hi)
        }
        None => {
            // The "raw" helper: dequantize, add, divide, clamp, round.
            let va = p.a_s * (x - p.a_zp) as f32;
            let vb = p.b_s * (y - p.b_zp) as f32;
            let vc = ((va + vb) / p.y_s).clamp((lo - p.y_zp) as f32, (hi - p.y_zp) as f32);
            (vc + p.y_zp as f32).round_ties_even() as i32
        }
    }
}

pub(crate) fn qlinear_add(c: &Ctx) -> OpResult<Tensor> {
    let p = binary_inputs(c)?;
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let k = crate::ort_kernels();
    if k != crate::OrtKernels::Neon
        && let Some(t) = qlinear_add_fast(&p, k.qladd_fma(), dt, (lo, hi))
    {
        return Ok(t);
    }
    let (out, av, bv) = broadcast_pairs(p.a, p.b)?;
    if k == crate::OrtKernels::Neon {
        let vals = av
            .iter()
            .zip(&bv)
            .map(|(&x, &y)| neon_add(&p, x, y, lo, hi))
            .collect();
        return Ok(q_tensor(dt, out, vals));
    }
    let fma = k.qladd_fma();
    let span = span_kind(&p.a.shape, &p.b.shape, &out);
    // onnxruntime swaps the operands when A is the scalar side: the vector is MLAS's A.
    let (q, scalar_b, swap) = match span {
        Span::ScalarA => (
            add_params(p.b_s, p.b_zp, p.a_s, p.a_zp, p.y_s, p.y_zp, fma),
            true,
            true,
        ),
        Span::ScalarB => (
            add_params(p.a_s, p.a_zp, p.b_s, p.b_zp, p.y_s, p.y_zp, fma),
            true,
            false,
        ),
        Span::General => (
            add_params(p.a_s, p.a_zp, p.b_s, p.b_zp, p.y_s, p.y_zp, fma),
            false,
            false,
        ),
    };
    let vals = av
        .iter()
        .zip(&bv)
        .map(|(&x, &y)| {
            let (x, y) = if swap { (y, x) } else { (x, y) };
            cvt_saturate(q.value(x, y, scalar_b, fma), lo, hi)
        })
        .collect();
    Ok(q_tensor(dt, out, vals))
}

/// QLinearAdd's x86 float paths on 8-bit tensors of equal shapes or with a one-element
/// operand, through the vectorized row kernel (same bits as [`AddParams::value`]).
fn qlinear_add_fast(p: &Binary, fma: bool, dt: DType, (lo, hi): (i32, i32)) -> Option<Tensor> {
    let (a, b) = (codes(p.a)?, codes(p.b)?);
    if !matches!(dt, DType::U8 | DType::I8) {
        return None;
    }
    let out = broadcast_shapes(&p.a.shape, &p.b.shape)?;
    // As in qlinear_add: the vector operand is MLAS's A (operands swapped when A is
    // the scalar).
    let (q, x, y, scalar_b) = match span_kind(&p.a.shape, &p.b.shape, &out) {
        Span::ScalarA if p.a.numel() == 1 => (
            add_params(p.b_s, p.b_zp, p.a_s, p.a_zp, p.y_s, p.y_zp, fma),
            b,
            a,
            true,
        ),
        Span::ScalarB if p.b.numel() == 1 => (
            add_params(p.a_s, p.a_zp, p.b_s, p.b_zp, p.y_s, p.y_zp, fma),
            a,
            b,
            true,
        ),
        Span::General if p.a.shape == p.b.shape => (
            add_params(p.a_s, p.a_zp, p.b_s, p.b_zp, p.y_s, p.y_zp, fma),
            a,
            b,
            false,
        ),
        _ => return None,
    };
    let row = AddRow {
        ra: q.ra,
        rb: q.rb,
        fixed: q.fixed,
        fma,
        scalar_b,
    };
    let n: usize = out.iter().product();
    let mut o = vec![0u8; n];
    qlinear_add_row(&row, x, y, (lo, hi), &mut o);
    Some(byte_tensor(dt, out, o))
}

/// The bytes of a u8/i8 tensor as kernel codes.
fn codes(t: &Tensor) -> Option<Codes<'_>> {
    bytes(t).map(|(data, signed)| Codes { data, signed })
}

/// MLAS QLinearMul (SSE2): the exact integer product (a - a_zp)(b - b_zp), converted
/// to f32, times `(a_s * b_s) / y_s`, plus f32(y_zp), rounded half to even.
pub(crate) fn qlinear_mul(c: &Ctx) -> OpResult<Tensor> {
    let p = binary_inputs(c)?;
    let dt = c.out_ty(0).dtype;
    let (lo, hi) = qrange(dt)?;
    let ratio = p.a_s * p.b_s / p.y_s;
    // Equal shapes or a one-element B (multiplication commutes exactly in int32, so a
    // one-element A is swapped): the vectorized row, same bits.
    if let (Some(a), Some(b), DType::U8 | DType::I8) = (codes(p.a), codes(p.b), dt) {
        let ((a, a_zp), (b, b_zp)) = ((a, p.a_zp), (b, p.b_zp));
        let pair = if p.a.shape == p.b.shape || p.b.numel() == 1 {
            Some(((a, a_zp), (b, b_zp), p.a.shape.clone()))
        } else if p.a.numel() == 1 {
            Some(((b, b_zp), (a, a_zp), p.b.shape.clone()))
        } else {
            None
        };
        if let Some((x, y, shape)) = pair
            && broadcast_shapes(&p.a.shape, &p.b.shape).as_deref() == Some(&shape[..])
        {
            let mut o = vec![0u8; shape.iter().product()];
            qlinear_mul_row(x, y, ratio, p.y_zp, (lo, hi), &mut o);
            return Ok(byte_tensor(dt, shape, o));
        }
    }
    let (out, av, bv) = broadcast_pairs(p.a, p.b)?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{RngExt, SeedableRng};

    /// The vectorized rows give the scalar formulas' bits for every x86 path, both
    /// signednesses, equal shapes and a scalar B, with ratios that round, tie and
    /// overflow.
    #[test]
    fn vector_rows_equal_scalar_formulas() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(11);
        let n = 1000;
        let a: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        let b: Vec<u8> = (0..n).map(|_| rng.random()).collect();
        let scales = [1.0f32, 0.5, 0.013, 0.25, 3.7, 1e-3, 1e9, 1e-30, 2.0];
        for (signed, (lo, hi)) in [(false, (0, 255)), (true, (-128, 127))] {
            let get = |v: u8| if signed { v as i8 as i32 } else { v as i32 };
            let ca = Codes { data: &a, signed };
            let cb = Codes { data: &b, signed };
            for &a_s in &scales {
                for &b_s in &scales {
                    let (a_zp, b_zp, y_zp) = if signed { (-3, 5, 1) } else { (128, 120, 131) };
                    let y_s = 0.02f32 + rng.random_range(0.0f32..0.1);
                    for fma in [false, true] {
                        let q = add_params(a_s, a_zp, b_s, b_zp, y_s, y_zp, fma);
                        for scalar_b in [false, true] {
                            let row = AddRow {
                                ra: q.ra,
                                rb: q.rb,
                                fixed: q.fixed,
                                fma,
                                scalar_b,
                            };
                            let mut out = vec![0u8; n];
                            let y = if scalar_b {
                                Codes {
                                    data: &b[..1],
                                    signed,
                                }
                            } else {
                                cb
                            };
                            qlinear_add_row(&row, ca, y, (lo, hi), &mut out);
                            for i in 0..n {
                                let yv = get(b[if scalar_b { 0 } else { i }]);
                                let want =
                                    cvt_saturate(q.value(get(a[i]), yv, scalar_b, fma), lo, hi);
                                assert_eq!(out[i], want as u8, "add {a_s} {b_s} fma {fma} i {i}");
                            }
                        }
                    }
                    let ratio = a_s * b_s / y_s;
                    for scalar_b in [false, true] {
                        let y = if scalar_b {
                            Codes {
                                data: &b[..1],
                                signed,
                            }
                        } else {
                            cb
                        };
                        let mut out = vec![0u8; n];
                        qlinear_mul_row((ca, a_zp), (y, b_zp), ratio, y_zp, (lo, hi), &mut out);
                        for i in 0..n {
                            let yv = get(b[if scalar_b { 0 } else { i }]);
                            let prod = (get(a[i]) - a_zp) * (yv - b_zp);
                            let want = cvt_saturate(prod as f32 * ratio + y_zp as f32, lo, hi);
                            assert_eq!(out[i], want as u8, "mul {a_s} {b_s} i {i}");
                        }
                    }
                }
            }
        }
    }
}
