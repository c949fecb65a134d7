//! Shared pieces of the quantized lowerings: saturation ranges, parameter loads, the
//! requantize expressions (onnxruntime's float sequence, mirrored operation by
//! operation so the generated C is bit-exact with pimkit-interp) and the int32
//! contraction (fill + multiply-accumulate with wrap-around).

use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::*;
use pimkit_ir::DType;

/// Saturation bounds of a quantized output type.
pub(crate) fn qrange(l: &Lowerer, dt: DType) -> Result<(i64, i64)> {
    match dt {
        DType::I32 => Ok((i32::MIN as i64, i32::MAX as i64)),
        _ => dt
            .quant_range()
            .map(|(a, b)| (a as i64, b as i64))
            .ok_or_else(|| {
                l.unsupported(format!(
                    "output type {dt} is not a quantized type (expected u8, i8 or i32)"
                ))
            }),
    }
}

/// onnxruntime's `clamp_round`: clamp `v` (F32) to `[lo - zp, hi - zp]` in f32 (NaN
/// gives the lower bound, as MAXPS does), round half to even (`nearbyintf`), add the
/// zero point in 64-bit, saturate and narrow to `dt`. `zp` is an I32 expression.
pub(crate) fn clamp_round(v: Expr, zp: Expr, dt: DType, lo: i64, hi: i64) -> Expr {
    let z64 = Expr::cast(DType::I64, zp);
    let minf = Expr::cast(DType::F32, Expr::sub(Expr::i(lo), z64.clone()));
    let maxf = Expr::cast(DType::F32, Expr::sub(Expr::i(hi), z64.clone()));
    let c = Expr::min(Expr::max(v, minf), maxf);
    let r = Expr::add(Expr::cast(DType::I64, Expr::un(UFn::Round, c)), z64);
    if dt == DType::I32 {
        // (lo - zp) and (hi - zp) may not be exact in f32 here: saturate again.
        return Expr::cast(dt, Expr::min(Expr::max(r, Expr::i(lo)), Expr::i(hi)));
    }
    // The float clamp already bounds the rounded value to [lo, hi].
    Expr::cast(dt, r)
}

/// `requant_f32`: round_half_even(f32(acc) * scale) + zp, saturated.
pub(crate) fn requant(acc: Expr, scale: Expr, zp: Expr, dt: DType, lo: i64, hi: i64) -> Expr {
    clamp_round(
        Expr::mul(Expr::cast(DType::F32, acc), scale),
        zp,
        dt,
        lo,
        hi,
    )
}

/// x86 `cvtps_epi32` + saturating packs (QLinearAdd / QLinearMul): round half to even;
/// NaN or a value outside the i32 range becomes i32::MIN, which saturates to `lo`.
pub(crate) fn cvt_saturate(v: Expr, dt: DType, lo: i64, hi: i64) -> Expr {
    let r = Expr::un(UFn::Round, v);
    let ok = Expr::bin(
        BFn::And,
        Expr::bin(BFn::Ge, r.clone(), Expr::f(-2_147_483_648.0)),
        Expr::bin(BFn::Lt, r.clone(), Expr::f(2_147_483_648.0)),
    );
    let c = Expr::min(Expr::max(r, Expr::f(lo as f64)), Expr::f(hi as f64));
    let s = Expr::select(ok, c, Expr::f(lo as f64));
    Expr::cast(dt, Expr::cast(DType::I64, s))
}

/// An int32 view of a loaded integer.
pub(crate) fn i32_of(e: Expr) -> Expr {
    Expr::cast(DType::I32, e)
}

/// `x - zp` in int32 (no subtraction when there is no zero point).
pub(crate) fn minus(x: Expr, zp: Option<Expr>) -> Expr {
    match zp {
        Some(z) => Expr::sub(x, z),
        None => x,
    }
}

/// Require a per-tensor (one-element) parameter.
pub(crate) fn check_scalar(l: &Lowerer, t: TensorId, what: &str) -> Result<()> {
    let ti = &l.p.tensors[t];
    if ti.numel() != 1 {
        return Err(l.unsupported(format!(
            "{what} must be a single value (per-tensor), got shape {:?}",
            ti.shape
        )));
    }
    Ok(())
}

/// Load a one-element parameter (an immediate once folded to a scalar).
pub(crate) fn scalar_load(l: &Lowerer, nb: &mut NB, t: TensorId, what: &str) -> Result<Expr> {
    check_scalar(l, t, what)?;
    let r = l.p.tensors[t].shape.len();
    Ok(nb.load(t, vec![Index::c(0); r]))
}

/// Load a parameter that broadcasts (numpy rules) to `q_shape`, whose axes are indexed
/// by `q_index` in the current nest.
pub(crate) fn param_load(
    l: &Lowerer,
    nb: &mut NB,
    t: TensorId,
    q_shape: &[usize],
    q_index: &[Index],
    what: &str,
) -> Result<Expr> {
    let ps = l.p.tensors[t].shape.clone();
    if ps.iter().product::<usize>() == 1 {
        return Ok(nb.load(t, vec![Index::c(0); ps.len()]));
    }
    if pimkit_ir::broadcast_shapes(&ps, q_shape).as_deref() != Some(q_shape) {
        return Err(l.unsupported(format!(
            "{what} of shape {ps:?} is neither a single value nor broadcastable to {q_shape:?}"
        )));
    }
    let off = q_shape.len() - ps.len();
    let ix = ps
        .iter()
        .enumerate()
        .map(|(k, &e)| {
            if e == 1 {
                Index::c(0)
            } else {
                q_index[k + off].clone()
            }
        })
        .collect();
    Ok(nb.load(t, ix))
}

/// Zero points of the two operands of an int32 contraction (built inside the nest).
pub(crate) type ZeroPoints = (Option<Expr>, Option<Expr>);

/// `acc = init (or 0) + Σ_k (a - a_zp)(b - b_zp)` in int32 with wrap-around: a fill
/// (unless `init` is given) and one contraction nest. `idx` gives the operand indices
/// over the output dims and `k`; `zps` builds the zero-point expressions.
#[allow(clippy::too_many_arguments)]
pub(crate) fn int_contraction(
    l: &mut Lowerer,
    a: TensorId,
    b: TensorId,
    init: Option<TensorId>,
    out_shape: &[usize],
    k_extent: usize,
    idx: impl FnOnce(&[usize], usize) -> (Vec<Index>, Vec<Index>),
    zps: impl FnOnce(&Lowerer, &mut NB, &[usize], &[Index], &[Index]) -> Result<ZeroPoints>,
) -> Result<TensorId> {
    let acc = match init {
        Some(t) => t,
        None => l.fill("fill", DType::I32, out_shape, 0.0),
    };
    let r = l.result_init("matmul", acc);
    let mut nb = NB::new(NestKind::Contraction, "matmul");
    let d = nb.pars(out_shape);
    let k = nb.red(k_extent);
    let (ai, bi) = idx(&d, k);
    let (za, zb) = zps(l, &mut nb, &d, &ai, &bi)?;
    let av = minus(i32_of(nb.load(a, ai)), za);
    let bv = minus(i32_of(nb.load(b, bi)), zb);
    let oi: Vec<Index> = d.iter().map(|&x| Index::dim(x)).collect();
    let old = nb.load(r, oi.clone());
    nb.store(r, oi, Expr::add(old, Expr::mul(av, bv)));
    l.push(nb);
    Ok(r)
}

/// The quantized lookup table onnxruntime builds for QLinearSigmoid / QLinearLeakyRelu
/// (and an identity QLinearConcat): for every input code, dequantize in f32, apply `f`,
/// QuantizeLinear. Computed at lowering time, exactly as pimkit-interp does.
#[allow(clippy::too_many_arguments)]
pub(crate) fn lookup_table(
    in_lo: i32,
    x_s: f32,
    x_zp: i32,
    y_s: f32,
    y_zp: i32,
    lo: i32,
    hi: i32,
    f: impl Fn(f32) -> f32,
) -> Vec<i32> {
    (0..256)
        .map(|code| {
            let v = in_lo + code;
            quantize_f32(f(x_s * (v - x_zp) as f32), y_s, y_zp, lo, hi)
        })
        .collect()
}

/// QuantizeLinear of one value and onnxruntime's logistic: the interpreter's own functions,
/// so the lookup tables built here are the reference's bit for bit.
pub(crate) use pimkit_interp::{quant::quantize_f32, sigmoid_f32};
