//! What follows the accumulation in each op, with the interpreter's own requantization
//! helpers ([`pimkit_interp::quant`]) so the arithmetic is the reference's, bit for bit.
//! Accumulators arrive in the output's element order.

use super::layer_err;
use crate::error::Result;
use pimkit_interp::quant::{output_scale, requant_f32};
use pimkit_ir::operand::{qgemm as qg, qlinear_conv as qc, qlinear_matmul as qmm};
use pimkit_ir::{DType, Node, Tensor, TensorData, TensorType};

/// The digital accumulator: the crossbar's sum rounded to an integer, wrapped to int32 like
/// the reference's int32 accumulation.
#[inline]
pub fn acc_i32(v: f64) -> i32 {
    // Round half to even by the 1.5 * 2^52 trick (no libm call on baseline x86-64).
    const M: f64 = 6_755_399_441_055_744.0;
    let r = if v.abs() < 1e15 {
        (v + M) - M
    } else {
        v.round_ties_even()
    };
    (r as i64) as i32
}

fn scalar_f32(node: &Node, t: Option<&Tensor>, what: &str) -> Result<f32> {
    match t {
        Some(t) if t.numel() == 1 && t.dtype().is_float() => Ok(t.to_f32_vec()[0]),
        _ => Err(layer_err(node, format!("{what} must be a scalar float"))),
    }
}

fn scalar_i32(node: &Node, t: Option<&Tensor>, what: &str) -> Result<i32> {
    match t {
        None => Ok(0),
        Some(t) if t.numel() == 1 => Ok(t.to_i32_vec()[0]),
        Some(_) => Err(layer_err(node, format!("{what} must be a scalar"))),
    }
}

/// A parameter of length 1 or `m`, as f32 per index.
fn per_f32(node: &Node, t: Option<&Tensor>, m: usize, what: &str) -> Result<Vec<f32>> {
    let v = t
        .map(|t| t.to_f32_vec())
        .ok_or_else(|| layer_err(node, format!("{what} is missing")))?;
    match v.len() {
        1 => Ok(vec![v[0]; m]),
        l if l == m => Ok(v),
        l => Err(layer_err(
            node,
            format!("{what} has {l} values; expected 1 or {m}"),
        )),
    }
}

fn q_tensor(ty: &TensorType, v: Vec<i32>) -> Tensor {
    let data = match ty.dtype {
        DType::U8 => TensorData::U8(v.into_iter().map(|x| x as u8).collect()),
        DType::I8 => TensorData::I8(v.into_iter().map(|x| x as i8).collect()),
        // the integer ops' i32 outputs
        _ => TensorData::I32(v),
    };
    Tensor {
        shape: ty.shape.clone(),
        data,
    }
}

fn qrange(node: &Node, dt: DType) -> Result<(i32, i32)> {
    match dt {
        DType::I32 => Ok((i32::MIN, i32::MAX)),
        _ => dt
            .quant_range()
            .ok_or_else(|| layer_err(node, format!("{dt} is not a quantized output type"))),
    }
}

/// ConvInteger / MatMulInteger: the int32 accumulators.
pub fn integer(ty: &TensorType, acc: &[f64]) -> Tensor {
    Tensor::from_i32(ty.shape.clone(), acc.iter().map(|&v| acc_i32(v)).collect())
}

/// Float ops: the reference output plus the crossbar's error (scaled by Gemm's alpha).
pub fn float_plus(y: Tensor, delta: &[f64], alpha: f64) -> Tensor {
    let v: Vec<f64> = y
        .to_f64_vec()
        .iter()
        .zip(delta)
        .map(|(&a, &d)| a + alpha * d)
        .collect();
    Tensor::from_f64_as(y.dtype(), y.shape.clone(), &v)
}

/// QLinearConv: requant(acc + bias[m], (x_s * w_s[m]) / y_s) per output channel m;
/// `acc` is [n, m, out...].
pub fn qlinear_conv(
    node: &Node,
    ins: &[Option<&Tensor>],
    ty: &TensorType,
    acc: &[f64],
) -> Result<Tensor> {
    let m = ty.shape[1];
    let inner: usize = ty.shape[2..].iter().product();
    let x_s = scalar_f32(node, ins.get(qc::X_SCALE).copied().flatten(), "x_scale")?;
    let w_s = per_f32(node, ins.get(qc::W_SCALE).copied().flatten(), m, "w_scale")?;
    let y_s = scalar_f32(node, ins.get(qc::Y_SCALE).copied().flatten(), "y_scale")?;
    let y_zp = scalar_i32(
        node,
        ins.get(qc::Y_ZERO_POINT).copied().flatten(),
        "y_zero_point",
    )?;
    let bias: Vec<i32> = match ins.get(qc::B).copied().flatten() {
        Some(b) if b.numel() == m => b.to_i32_vec(),
        Some(b) if b.numel() == 1 => vec![b.to_i32_vec()[0]; m],
        Some(b) => {
            return Err(layer_err(
                node,
                format!("bias has {} values; expected {m}", b.numel()),
            ));
        }
        None => vec![0; m],
    };
    let (lo, hi) = qrange(node, ty.dtype)?;
    let scales: Vec<f32> = w_s.iter().map(|&ws| output_scale(x_s, ws, y_s)).collect();
    let out = acc
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let ch = (i / inner.max(1)) % m;
            requant_f32(acc_i32(a).wrapping_add(bias[ch]), scales[ch], y_zp, lo, hi)
        })
        .collect();
    Ok(q_tensor(ty, out))
}

/// QLinearMatMul with a scalar activation scale: requant(acc, (a_s * b_s) / y_s), the
/// weight's scale per output of the crossbar (`per_out(i)` gives that output's index).
pub fn qlinear_matmul(
    node: &Node,
    ins: &[Option<&Tensor>],
    ty: &TensorType,
    acc: &[f64],
    weight_left: bool,
    outs: usize,
    per_out: impl Fn(usize) -> usize,
) -> Result<Tensor> {
    let (act_s, w_s) = if weight_left {
        (qmm::B_SCALE, qmm::A_SCALE)
    } else {
        (qmm::A_SCALE, qmm::B_SCALE)
    };
    let a_s = scalar_f32(node, ins.get(act_s).copied().flatten(), "activation scale")?;
    let w_s = per_f32(node, ins.get(w_s).copied().flatten(), outs, "weight scale")?;
    let y_s = scalar_f32(node, ins.get(qmm::Y_SCALE).copied().flatten(), "y_scale")?;
    let y_zp = scalar_i32(
        node,
        ins.get(qmm::Y_ZERO_POINT).copied().flatten(),
        "y_zero_point",
    )?;
    let (lo, hi) = qrange(node, ty.dtype)?;
    let out = acc
        .iter()
        .enumerate()
        .map(|(i, &a)| {
            let ws = w_s[per_out(i)];
            // The reference computes (a_scale * b_scale) / y_scale in this operand order.
            let s = if weight_left {
                output_scale(ws, a_s, y_s)
            } else {
                output_scale(a_s, ws, y_s)
            };
            requant_f32(acc_i32(a), s, y_zp, lo, hi)
        })
        .collect();
    Ok(q_tensor(ty, out))
}

/// QGemm: acc + C, then requant((alpha * a_s) * b_s[j] / y_s) or, without y_scale, the
/// float value; `acc` is [m, n].
pub fn qgemm(
    node: &Node,
    ins: &[Option<&Tensor>],
    ty: &TensorType,
    acc: &[f64],
    alpha: f32,
) -> Result<Tensor> {
    let (m, n) = (ty.shape[0], ty.shape[1]);
    let a_s = scalar_f32(node, ins.get(qg::A_SCALE).copied().flatten(), "a_scale")?;
    let b_s = per_f32(node, ins.get(qg::B_SCALE).copied().flatten(), n, "b_scale")?;
    let mut v: Vec<i32> = acc.iter().map(|&a| acc_i32(a)).collect();
    if let Some(cb) = ins.get(qg::C).copied().flatten() {
        let cv = cb.to_i32_vec();
        // C broadcasts to [m, n] from [], [n], [1, n], [m, 1] or [m, n].
        let (cr, cc) = match cb.shape.as_slice() {
            [] => (1, 1),
            [c] => (1, *c),
            [r, c] => (*r, *c),
            s => {
                return Err(layer_err(
                    node,
                    format!("C of shape {s:?} does not broadcast to [{m}, {n}]"),
                ));
            }
        };
        if (cr != 1 && cr != m) || (cc != 1 && cc != n) || cv.len() != cr * cc {
            return Err(layer_err(
                node,
                format!("C of shape {:?} does not broadcast to [{m}, {n}]", cb.shape),
            ));
        }
        for (i, o) in v.iter_mut().enumerate() {
            let (r, c) = (i / n, i % n);
            let k = if cr == 1 { 0 } else { r } * cc + if cc == 1 { 0 } else { c };
            *o = o.wrapping_add(cv[k]);
        }
    }
    let col = |j: usize| (alpha * a_s) * b_s[j];
    match ins.get(qg::Y_SCALE).copied().flatten() {
        Some(ys) => {
            let y_s = scalar_f32(node, Some(ys), "y_scale")?;
            let y_zp = scalar_i32(
                node,
                ins.get(qg::Y_ZERO_POINT).copied().flatten(),
                "y_zero_point",
            )?;
            let (lo, hi) = qrange(node, ty.dtype)?;
            let out = v
                .iter()
                .enumerate()
                .map(|(i, &a)| requant_f32(a, col(i % n) / y_s, y_zp, lo, hi))
                .collect();
            Ok(q_tensor(ty, out))
        }
        None => Ok(Tensor::from_f32(
            ty.shape.clone(),
            v.iter()
                .enumerate()
                .map(|(i, &a)| a as f32 * col(i % n))
                .collect(),
        )),
    }
}
