//! Quantized (QOperator) ops, decomposed as torch-mlir lowers quantized linalg: integer
//! accumulation nests (fill + int32 contraction or reduction with wrap-around) followed
//! by one requantize nest that computes onnxruntime's float sequence
//! (round_half_even(f32(acc) * f32 scale) + zp, saturated), bit-exact with
//! pimkit-interp. Nest counts per op are listed in docs/loops.md.

use super::builder::dims_index;
use super::linalg::{conv_nest_with, full_pads, matmul_indices};
use super::qcommon::*;
use super::shape::{pad, view_reshape};
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::*;
use pimkit_ir::operand::{
    conv_integer as ci, matmul_integer as mmi, qlinear_conv as qc, qlinear_matmul as qmm,
    quantize_linear as ql,
};
use pimkit_ir::{ConvAttrs, DType, Node, PadMode, Tensor, TensorData};
use std::sync::Arc;

/// View a per-axis parameter (length `len` along `axis` of a rank-`rank` tensor) so
/// that it broadcasts; one-element parameters are returned as they are.
fn axis_param(
    l: &mut Lowerer,
    t: TensorId,
    axis: usize,
    rank: usize,
    len: usize,
    what: &str,
) -> Result<TensorId> {
    let sh = l.shape(t);
    let n: usize = sh.iter().product();
    if n == 1 {
        return Ok(t);
    }
    if axis >= rank || n != len || sh.iter().filter(|&&e| e != 1).count() != 1 {
        return Err(l.unsupported(format!(
            "{what} has shape {sh:?}; expected one value or {len} values along axis {axis}"
        )));
    }
    let mut s = vec![len];
    s.extend(std::iter::repeat_n(1, rank - axis - 1));
    view_reshape(l, t, &s)
}

fn require_f32(l: &Lowerer, t: TensorId, what: &str) -> Result<()> {
    let dt = l.dtype(t);
    if dt != DType::F32 {
        return Err(l.unsupported(format!("{what} is {dt}; only f32 is supported here")));
    }
    Ok(())
}

/// QuantizeLinear: one elementwise nest, `clamp_round(x / scale, zp)`.
pub(crate) fn quantize(l: &mut Lowerer, _n: &Node, axis: usize, to: DType) -> Result<TensorId> {
    let x = l.input(ql::X)?;
    require_f32(l, x, "x")?;
    let (dt, shape) = l.out_ty(0);
    let (lo, hi) = qrange(l, to)?;
    let r = shape.len();
    let len = shape.get(axis).copied().unwrap_or(1);
    let s = l.input(ql::SCALE)?;
    require_f32(l, s, "y_scale")?;
    let s = axis_param(l, s, axis, r, len, "y_scale")?;
    let mut ins = vec![x, s];
    if let Some(z) = l.opt_input(ql::ZERO_POINT)? {
        ins.push(axis_param(l, z, axis, r, len, "y_zero_point")?);
    }
    l.map_to("quantize", NestKind::Elementwise, &ins, dt, &shape, |v| {
        let z = v
            .get(2)
            .map_or(Expr::k(0.0, DType::I32), |e| i32_of(e.clone()));
        clamp_round(Expr::div(v[0].clone(), v[1].clone()), z, dt, lo, hi)
    })
}

/// DequantizeLinear: one elementwise nest, `f32(x - zp) * scale`.
pub(crate) fn dequantize(l: &mut Lowerer, _n: &Node, axis: usize) -> Result<TensorId> {
    let x = l.input(ql::X)?;
    let (dt, shape) = l.out_ty(0);
    if dt != DType::F32 {
        return Err(l.unsupported(format!("output is {dt}; only f32 is supported")));
    }
    let r = shape.len();
    let len = shape.get(axis).copied().unwrap_or(1);
    let s = l.input(ql::SCALE)?;
    require_f32(l, s, "x_scale")?;
    let s = axis_param(l, s, axis, r, len, "x_scale")?;
    let mut ins = vec![x, s];
    if let Some(z) = l.opt_input(ql::ZERO_POINT)? {
        ins.push(axis_param(l, z, axis, r, len, "x_zero_point")?);
    }
    l.map_to("dequantize", NestKind::Elementwise, &ins, dt, &shape, |v| {
        let q = minus(i32_of(v[0].clone()), v.get(2).map(|e| i32_of(e.clone())));
        Expr::mul(Expr::cast(DType::F32, q), v[1].clone())
    })
}

/// Shape and nest index of a matmul operand's per-row (a) / per-column (b) parameter:
/// the operand's shape and index with the reduced axis set to 1 / index 0.
fn q_param(shape: &[usize], index: &[Index], is_a: bool) -> (Vec<usize>, Vec<Index>) {
    let (mut s, mut ix) = (shape.to_vec(), index.to_vec());
    let r = s.len();
    let ax = if is_a || r == 1 { r - 1 } else { r - 2 };
    s[ax] = 1;
    ix[ax] = Index::c(0);
    (s, ix)
}

/// A 1-D per-row zero point [M] of `a` (rank >= 2) viewed as [M, 1] (ONNX allows it).
fn per_row_1d(l: &mut Lowerer, t: TensorId, a_rank: usize) -> Result<TensorId> {
    let s = l.shape(t);
    if s.len() == 1 && s[0] > 1 && a_rank >= 2 {
        return view_reshape(l, t, &[s[0], 1]);
    }
    Ok(t)
}

/// int32 accumulators of a numpy matmul of (a - a_zp)(b - b_zp): fill + contraction.
fn qmatmul_acc(
    l: &mut Lowerer,
    a: TensorId,
    b: TensorId,
    azp: Option<TensorId>,
    bzp: Option<TensorId>,
    out: &[usize],
) -> Result<TensorId> {
    let (sa, sb) = (l.shape(a), l.shape(b));
    let kx = *sa.last().ok_or_else(|| l.err("rank-0 operand"))?;
    let (sa2, sb2, o2) = (sa.clone(), sb.clone(), out.to_vec());
    int_contraction(
        l,
        a,
        b,
        None,
        out,
        kx,
        |d, k| matmul_indices(&sa2, &sb2, &o2, d, k),
        |l, nb, _d, ai, bi| {
            let za = match azp {
                Some(z) => {
                    let (qs, qi) = q_param(&sa, ai, true);
                    Some(i32_of(param_load(l, nb, z, &qs, &qi, "a_zero_point")?))
                }
                None => None,
            };
            let zb = match bzp {
                Some(z) => {
                    let (qs, qi) = q_param(&sb, bi, false);
                    Some(i32_of(param_load(l, nb, z, &qs, &qi, "b_zero_point")?))
                }
                None => None,
            };
            Ok((za, zb))
        },
    )
}

/// QLinearMatMul: fill + int32 contraction + requantize (3 nests); per-row a and
/// per-column b scales / zero points are supported.
pub(crate) fn qlinear_matmul(l: &mut Lowerer, _n: &Node) -> Result<TensorId> {
    let (a, a_s, azp) = (
        l.input(qmm::A)?,
        l.input(qmm::A_SCALE)?,
        l.opt_input(qmm::A_ZERO_POINT)?,
    );
    let (b, b_s, bzp) = (
        l.input(qmm::B)?,
        l.input(qmm::B_SCALE)?,
        l.opt_input(qmm::B_ZERO_POINT)?,
    );
    let (y_s, yzp) = (l.input(qmm::Y_SCALE)?, l.opt_input(qmm::Y_ZERO_POINT)?);
    let (dt, out) = l.out_ty(0);
    let (lo, hi) = qrange(l, dt)?;
    let ar = l.shape(a).len();
    let azp = azp.map(|z| per_row_1d(l, z, ar)).transpose()?;
    let a_s = per_row_1d(l, a_s, ar)?;
    let acc = qmatmul_acc(l, a, b, azp, bzp, &out)?;
    let (sa, sb) = (l.shape(a), l.shape(b));
    let y = l.result("requant", dt, &out);
    let mut nb = NB::new(NestKind::Elementwise, "requant");
    let d = nb.pars(&out);
    let (ai, bi) = matmul_indices(&sa, &sb, &out, &d, usize::MAX);
    let (qa, qai) = q_param(&sa, &ai, true);
    let (qb, qbi) = q_param(&sb, &bi, false);
    let sav = param_load(l, &mut nb, a_s, &qa, &qai, "a_scale")?;
    let sbv = param_load(l, &mut nb, b_s, &qb, &qbi, "b_scale")?;
    let ysv = scalar_load(l, &mut nb, y_s, "y_scale")?;
    let z = match yzp {
        Some(t) => i32_of(scalar_load(l, &mut nb, t, "y_zero_point")?),
        None => Expr::k(0.0, DType::I32),
    };
    let accv = nb.load(acc, dims_index(&d));
    let scale = Expr::div(Expr::mul(sav, sbv), ysv);
    nb.store(y, dims_index(&d), requant(accv, scale, z, dt, lo, hi));
    l.push(nb);
    Ok(y)
}

/// MatMulInteger: fill + int32 contraction (2 nests).
pub(crate) fn matmul_integer(l: &mut Lowerer, _n: &Node) -> Result<TensorId> {
    let (a, b) = (l.input(mmi::A)?, l.input(mmi::B)?);
    let (azp, bzp) = (
        l.opt_input(mmi::A_ZERO_POINT)?,
        l.opt_input(mmi::B_ZERO_POINT)?,
    );
    let (_, out) = l.out_ty(0);
    let ar = l.shape(a).len();
    let azp = azp.map(|z| per_row_1d(l, z, ar)).transpose()?;
    qmatmul_acc(l, a, b, azp, bzp, &out)
}

/// Check a per-output-channel parameter (1 or `m` values); true when per-channel.
fn channel_param(l: &Lowerer, t: TensorId, m: usize, what: &str) -> Result<bool> {
    let sh = l.shape(t);
    let n: usize = sh.iter().product();
    if n == 1 {
        return Ok(false);
    }
    if n != m || sh.iter().filter(|&&e| e != 1).count() != 1 {
        return Err(l.unsupported(format!(
            "{what} has shape {sh:?}; expected one value or {m} (one per output channel)"
        )));
    }
    Ok(true)
}

fn channel_index(shape: &[usize], ch: &Index) -> Vec<Index> {
    shape
        .iter()
        .map(|&e| if e == 1 { Index::c(0) } else { ch.clone() })
        .collect()
}

/// int32 accumulators of conv(x - x_zp, w - w_zp[m]) (+ bias): [pad] + init + conv.
/// The input is padded with its zero point, which is 0 after the subtraction.
fn qconv_acc(
    l: &mut Lowerer,
    x: TensorId,
    xzp: Option<TensorId>,
    w: TensorId,
    wzp: Option<TensorId>,
    bias: Option<TensorId>,
    a: &ConvAttrs,
) -> Result<TensorId> {
    let (_, out) = l.out_ty(0);
    let m = out[1];
    if let Some(z) = xzp {
        check_scalar(l, z, "x_zero_point")?;
    }
    let padv = xzp.and_then(|z| l.scalar(z)).unwrap_or(0.0);
    let xp = pad(l, x, &full_pads(&a.pads), PadMode::Constant, padv)?;
    let init = match bias {
        Some(b) => {
            channel_param(l, b, m, "bias")?;
            let mut bs = vec![m];
            bs.extend(std::iter::repeat_n(1, out.len() - 2));
            let bv = if l.shape(b).iter().product::<usize>() == m {
                view_reshape(l, b, &bs)?
            } else {
                b
            };
            l.map_to("bias", NestKind::Copy, &[bv], DType::I32, &out, |v| {
                i32_of(v[0].clone())
            })?
        }
        None => l.fill("fill", DType::I32, &out, 0.0),
    };
    let w_per_ch = match wzp {
        Some(z) => Some((z, channel_param(l, z, m, "w_zero_point")?, l.shape(z))),
        None => None,
    };
    let xzp_rank = xzp.map(|z| (z, l.shape(z).len()));
    Ok(conv_nest_with(l, xp, w, init, a, |nb, xv, wv, ch| {
        let xz = xzp_rank.map(|(z, r)| i32_of(nb.load(z, vec![Index::c(0); r])));
        let wz = w_per_ch.map(|(z, per, sh)| {
            let ix = if per {
                channel_index(&sh, ch)
            } else {
                vec![Index::c(0); sh.len()]
            };
            i32_of(nb.load(z, ix))
        });
        (minus(i32_of(xv), xz), minus(i32_of(wv), wz))
    }))
}

/// QLinearConv (grouped, depthwise, per-channel weights): [pad] + init (fill or bias
/// copy) + int32 conv + requantize with (x_s * w_s[m]) / y_s (3 or 4 nests).
pub(crate) fn qlinear_conv(l: &mut Lowerer, _n: &Node, a: &ConvAttrs) -> Result<TensorId> {
    let (x, x_s, xzp) = (
        l.input(qc::X)?,
        l.input(qc::X_SCALE)?,
        l.opt_input(qc::X_ZERO_POINT)?,
    );
    let (w, w_s, wzp) = (
        l.input(qc::W)?,
        l.input(qc::W_SCALE)?,
        l.opt_input(qc::W_ZERO_POINT)?,
    );
    let (y_s, yzp, bias) = (
        l.input(qc::Y_SCALE)?,
        l.opt_input(qc::Y_ZERO_POINT)?,
        l.opt_input(qc::B)?,
    );
    let (dt, out) = l.out_ty(0);
    let (lo, hi) = qrange(l, dt)?;
    check_scalar(l, x_s, "x_scale")?;
    check_scalar(l, y_s, "y_scale")?;
    let m = out[1];
    channel_param(l, w_s, m, "w_scale")?;
    let acc = qconv_acc(l, x, xzp, w, wzp, bias, a)?;
    let w_s = axis_param(l, w_s, 1, out.len(), m, "w_scale")?;
    let mut ins = vec![acc, x_s, w_s, y_s];
    if let Some(z) = yzp {
        check_scalar(l, z, "y_zero_point")?;
        ins.push(z);
    }
    l.map_to("requant", NestKind::Elementwise, &ins, dt, &out, |v| {
        let z = v
            .get(4)
            .map_or(Expr::k(0.0, DType::I32), |e| i32_of(e.clone()));
        let scale = Expr::div(Expr::mul(v[1].clone(), v[2].clone()), v[3].clone());
        requant(v[0].clone(), scale, z, dt, lo, hi)
    })
}

/// ConvInteger: [pad] + fill + int32 conv (2 or 3 nests).
pub(crate) fn conv_integer(l: &mut Lowerer, _n: &Node, a: &ConvAttrs) -> Result<TensorId> {
    let (x, w) = (l.input(ci::X)?, l.input(ci::W)?);
    let (xzp, wzp) = (
        l.opt_input(ci::X_ZERO_POINT)?,
        l.opt_input(ci::W_ZERO_POINT)?,
    );
    qconv_acc(l, x, xzp, w, wzp, None, a)
}

/// A constant tensor created by the lowering (a lookup table); shape-only when the
/// values it derives from are unknown.
pub(crate) fn new_const(
    l: &mut Lowerer,
    label: &str,
    dt: DType,
    vals: Option<Vec<i32>>,
) -> TensorId {
    let data = vals.map(|v| {
        let n = v.len();
        let data = match dt {
            DType::U8 => TensorData::U8(v.into_iter().map(|x| x as u8).collect()),
            DType::I8 => TensorData::I8(v.into_iter().map(|x| x as i8).collect()),
            _ => TensorData::I32(v),
        };
        Arc::new(Tensor {
            shape: vec![n],
            data,
        })
    });
    let name = format!("{}.{label}", l.node().name);
    l.new_tensor(&name, dt, &[256], TensorDef::Const { data })
}
