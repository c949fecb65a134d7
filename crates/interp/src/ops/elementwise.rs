//! Unary, Binary (numpy broadcasting), Where, Clip and Cast.
//!
//! Values are computed in one of three domains: floats in f32 (f16 widened and rounded
//! back), integers in i64 with wrap-around (narrowed back with `as`, which wraps like
//! C++ two's-complement arithmetic), and bools.

use crate::elem::{broadcast_map, float_tensor, floats};
use crate::error::{OpResult, invalid, unsupported};
use crate::kernels::vmath::{erf_f32, exp_f32, tanh_f32};
use half::f16;
use pimkit_ir::{BinaryOp, DType, Tensor, TensorData, UnaryOp, broadcast_shapes};
use std::borrow::Cow;

enum Num<'a> {
    F(Cow<'a, [f32]>),
    I(Vec<i64>),
    B(Cow<'a, [bool]>),
}

fn num(t: &Tensor) -> Num<'_> {
    match &t.data {
        TensorData::F32(_) | TensorData::F16(_) => Num::F(floats(t)),
        TensorData::Bool(v) => Num::B(Cow::Borrowed(v)),
        _ => Num::I(t.to_i64_vec()),
    }
}

/// Narrow i64 values to an integer dtype (wrapping), or convert to float/bool.
fn ints_to(dtype: DType, shape: Vec<usize>, v: Vec<i64>) -> Tensor {
    let data = match dtype {
        DType::I64 => TensorData::I64(v),
        DType::I32 => TensorData::I32(v.into_iter().map(|x| x as i32).collect()),
        DType::I8 => TensorData::I8(v.into_iter().map(|x| x as i8).collect()),
        DType::U8 => TensorData::U8(v.into_iter().map(|x| x as u8).collect()),
        DType::F32 => TensorData::F32(v.into_iter().map(|x| x as f32).collect()),
        DType::F16 => TensorData::F16(v.into_iter().map(|x| f16::from_f32(x as f32)).collect()),
        DType::Bool => TensorData::Bool(v.into_iter().map(|x| x != 0).collect()),
    };
    Tensor { shape, data }
}

/// Logistic function as onnxruntime computes it (MLAS `MlasComputeLogistic`, the Eigen
/// rational approximation, in the fused-multiply-add form of its x86 FMA3 kernel).
/// Shared by Sigmoid, the RNN gates and QLinearSigmoid's lookup table.
#[inline]
pub fn sigmoid_f32(x: f32) -> f32 {
    // MlasLogisticConstants, written exactly as in MLAS (rounded to f32 by the compiler).
    #[allow(clippy::excessive_precision)]
    const A: [f32; 5] = [
        4.37031012579801e-11,
        1.15627324459942e-07,
        6.08574864600143e-05,
        8.51377133304701e-03,
        2.48287947061529e-01,
    ];
    #[allow(clippy::excessive_precision)]
    const B: [f32; 6] = [
        6.10247389755681e-13,
        5.76102136993427e-09,
        6.29106785017040e-06,
        1.70198817374094e-03,
        1.16817656904453e-01,
        9.93151921023180e-01,
    ];
    if x.is_nan() {
        return x;
    }
    let v = x.clamp(-18.0, 18.0);
    let v2 = v * v;
    let mut p = v2.mul_add(A[0], A[1]);
    for &a in &A[2..] {
        p = p.mul_add(v2, a);
    }
    p *= v;
    let mut q = v2.mul_add(B[0], B[1]);
    for &b in &B[2..] {
        q = q.mul_add(v2, b);
    }
    (p / q + 0.5).clamp(0.0, 1.0)
}

fn unary_f(u: UnaryOp, x: f32) -> f32 {
    match u {
        UnaryOp::Relu => x.max(0.0),
        UnaryOp::Sigmoid => sigmoid_f32(x),
        UnaryOp::Tanh => tanh_f32(x),
        UnaryOp::Exp => exp_f32(x),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Reciprocal => 1.0 / x,
        UnaryOp::Erf => erf_f32(x),
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Round => x.round_ties_even(),
        UnaryOp::Sign => {
            if x > 0.0 {
                1.0
            } else if x < 0.0 {
                -1.0
            } else {
                x // 0, -0 or NaN
            }
        }
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Softplus => {
            if x > 0.0 {
                x + (-x).exp().ln_1p()
            } else {
                x.exp().ln_1p()
            }
        }
        UnaryOp::HardSigmoid { alpha, beta } => (alpha * x + beta).clamp(0.0, 1.0),
        UnaryOp::HardSwish => x * (x / 6.0 + 0.5).clamp(0.0, 1.0),
        UnaryOp::LeakyRelu { alpha } => {
            if x >= 0.0 {
                x
            } else {
                alpha * x
            }
        }
        UnaryOp::Elu { alpha } => {
            if x >= 0.0 {
                x
            } else {
                alpha * (x.exp() - 1.0)
            }
        }
        UnaryOp::Gelu { tanh: false } => {
            0.5 * x * (1.0 + erf_f32(x * std::f32::consts::FRAC_1_SQRT_2))
        }
        UnaryOp::Gelu { tanh: true } => {
            // sqrt(2/pi)
            const C: f32 = 0.797_884_6;
            0.5 * x * (1.0 + tanh_f32(C * (x + 0.044_715 * x * x * x)))
        }
        // Not / IsNaN are dispatched before reaching here.
        UnaryOp::Not | UnaryOp::IsNaN => x,
    }
}

pub(crate) fn unary(u: UnaryOp, x: &Tensor) -> OpResult<Tensor> {
    let shape = x.shape.clone();
    match (u, num(x)) {
        (UnaryOp::Not, Num::B(v)) => Ok(Tensor::from_bool(shape, v.iter().map(|b| !b).collect())),
        (UnaryOp::IsNaN, Num::F(v)) => Ok(Tensor::from_bool(
            shape,
            v.iter().map(|f| f.is_nan()).collect(),
        )),
        (UnaryOp::IsNaN, _) => Ok(Tensor::from_bool(shape, vec![false; x.numel()])),
        (UnaryOp::Not, _) => unsupported(format!("Not needs bool input, got {}", x.dtype())),
        (_, Num::F(v)) => Ok(float_tensor(
            x.dtype(),
            shape,
            crate::kernels::ewise::unary(u, &v)
                .unwrap_or_else(|| v.iter().map(|&f| unary_f(u, f)).collect()),
        )),
        (UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sign | UnaryOp::Relu, Num::I(v)) => {
            let f = |a: i64| match u {
                UnaryOp::Neg => a.wrapping_neg(),
                UnaryOp::Abs => a.wrapping_abs(),
                UnaryOp::Sign => a.signum(),
                _ => a.max(0),
            };
            Ok(ints_to(x.dtype(), shape, v.into_iter().map(f).collect()))
        }
        _ => unsupported(format!("{} on {} tensors", u.name(), x.dtype())),
    }
}

/// Apply `f` elementwise with numpy broadcasting of `a` and `b` to `out`.
fn zip_bcast<A: Copy, B: Copy, O>(
    a: &[A],
    ash: &[usize],
    b: &[B],
    bsh: &[usize],
    out: &[usize],
    f: impl Fn(A, B) -> O,
) -> Vec<O> {
    if ash == out && bsh == out {
        a.iter().zip(b).map(|(&x, &y)| f(x, y)).collect()
    } else if ash == out && b.len() == 1 {
        let y = b[0];
        a.iter().map(|&x| f(x, y)).collect()
    } else if bsh == out && a.len() == 1 {
        let x = a[0];
        b.iter().map(|&y| f(x, y)).collect()
    } else {
        let ia = broadcast_map(ash, out);
        let ib = broadcast_map(bsh, out);
        ia.iter().zip(&ib).map(|(&i, &j)| f(a[i], b[j])).collect()
    }
}

fn py_mod_f(a: f32, b: f32) -> f32 {
    let r = a % b;
    if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
        r + b
    } else {
        r
    }
}

pub(crate) fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> OpResult<Tensor> {
    let out = broadcast_shapes(&a.shape, &b.shape)
        .ok_or_else(|| crate::error::OpError::Invalid("shapes are not broadcastable".into()))?;
    let (ash, bsh) = (&a.shape[..], &b.shape[..]);
    if op == BinaryOp::Pow {
        // Base and exponent may differ in type; the result has the base's type.
        let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
        let v = zip_bcast(&x, ash, &y, bsh, &out, |p, q| p.powf(q));
        return Ok(if a.dtype().is_float() {
            float_tensor(a.dtype(), out, v.into_iter().map(|p| p as f32).collect())
        } else {
            ints_to(a.dtype(), out, v.into_iter().map(|p| p as i64).collect())
        });
    }
    use BinaryOp as B;
    match (num(a), num(b)) {
        (Num::F(x), Num::F(y)) => {
            if let Some(v) = crate::kernels::ewise::binary(op, &x, ash, &y, bsh, &out) {
                return Ok(float_tensor(a.dtype(), out, v));
            }
            let cmp = |f: fn(f32, f32) -> bool| {
                Tensor::from_bool(out.clone(), zip_bcast(&x, ash, &y, bsh, &out, f))
            };
            let arith = |f: &dyn Fn(f32, f32) -> f32| {
                float_tensor(a.dtype(), out.clone(), zip_bcast(&x, ash, &y, bsh, &out, f))
            };
            Ok(match op {
                B::Add => arith(&|p, q| p + q),
                B::Sub => arith(&|p, q| p - q),
                B::Mul => arith(&|p, q| p * q),
                B::Div => arith(&|p, q| p / q),
                B::Max => arith(&|p, q| {
                    if p.is_nan() || q.is_nan() {
                        f32::NAN
                    } else {
                        p.max(q)
                    }
                }),
                B::Min => arith(&|p, q| {
                    if p.is_nan() || q.is_nan() {
                        f32::NAN
                    } else {
                        p.min(q)
                    }
                }),
                B::Mod { fmod: true } => arith(&|p, q| p % q),
                B::Mod { fmod: false } => arith(&py_mod_f),
                B::Equal => cmp(|p, q| p == q),
                B::Less => cmp(|p, q| p < q),
                B::LessOrEqual => cmp(|p, q| p <= q),
                B::Greater => cmp(|p, q| p > q),
                B::GreaterOrEqual => cmp(|p, q| p >= q),
                B::Pow | B::And | B::Or | B::Xor => {
                    return unsupported(format!("{} on float tensors", op.name()));
                }
            })
        }
        (Num::I(x), Num::I(y)) => {
            let cmp = |f: fn(i64, i64) -> bool| {
                Tensor::from_bool(out.clone(), zip_bcast(&x, ash, &y, bsh, &out, f))
            };
            let needs_nonzero = matches!(op, B::Div | B::Mod { .. });
            if needs_nonzero && y.contains(&0) {
                return invalid(format!("integer {} by zero", op.name()));
            }
            let arith = |f: fn(i64, i64) -> i64| {
                ints_to(a.dtype(), out.clone(), zip_bcast(&x, ash, &y, bsh, &out, f))
            };
            Ok(match op {
                B::Add => arith(|p, q| p.wrapping_add(q)),
                B::Sub => arith(|p, q| p.wrapping_sub(q)),
                B::Mul => arith(|p, q| p.wrapping_mul(q)),
                B::Div => arith(|p, q| p.wrapping_div(q)),
                B::Max => arith(|p, q| p.max(q)),
                B::Min => arith(|p, q| p.min(q)),
                B::Mod { fmod: true } => arith(|p, q| p.wrapping_rem(q)),
                B::Mod { fmod: false } => arith(|p, q| {
                    let r = p.wrapping_rem(q);
                    if r != 0 && ((r < 0) != (q < 0)) {
                        r + q
                    } else {
                        r
                    }
                }),
                B::Equal => cmp(|p, q| p == q),
                B::Less => cmp(|p, q| p < q),
                B::LessOrEqual => cmp(|p, q| p <= q),
                B::Greater => cmp(|p, q| p > q),
                B::GreaterOrEqual => cmp(|p, q| p >= q),
                B::Pow | B::And | B::Or | B::Xor => {
                    return unsupported(format!("{} on integer tensors", op.name()));
                }
            })
        }
        (Num::B(x), Num::B(y)) => {
            let f: fn(bool, bool) -> bool = match op {
                B::And => |p, q| p && q,
                B::Or => |p, q| p || q,
                B::Xor => |p, q| p != q,
                B::Equal => |p, q| p == q,
                _ => return unsupported(format!("{} on bool tensors", op.name())),
            };
            Ok(Tensor::from_bool(
                out.clone(),
                zip_bcast(&x, ash, &y, bsh, &out, f),
            ))
        }
        _ => unsupported(format!(
            "{} with mixed dtypes {} and {}",
            op.name(),
            a.dtype(),
            b.dtype()
        )),
    }
}

pub(crate) fn where_(cond: &Tensor, x: &Tensor, y: &Tensor) -> OpResult<Tensor> {
    let Some(c) = cond.as_bool() else {
        return unsupported(format!("condition must be bool, got {}", cond.dtype()));
    };
    let out = broadcast_shapes(&cond.shape, &x.shape)
        .and_then(|s| broadcast_shapes(&s, &y.shape))
        .ok_or_else(|| crate::error::OpError::Invalid("shapes are not broadcastable".into()))?;
    let ic = broadcast_map(&cond.shape, &out);
    let ix = broadcast_map(&x.shape, &out);
    let iy = broadcast_map(&y.shape, &out);
    macro_rules! pick {
        ($($var:ident),*) => {
            match (&x.data, &y.data) {
                $((TensorData::$var(xv), TensorData::$var(yv)) => TensorData::$var(
                    (0..ic.len()).map(|k| if c[ic[k]] { xv[ix[k]] } else { yv[iy[k]] }).collect(),
                ),)*
                _ => return unsupported(format!("x is {} but y is {}", x.dtype(), y.dtype())),
            }
        };
    }
    let data = pick!(F32, F16, I64, I32, I8, U8, Bool);
    Ok(Tensor { shape: out, data })
}

pub(crate) fn clip(x: &Tensor, min: Option<f32>, max: Option<f32>) -> OpResult<Tensor> {
    match num(x) {
        Num::F(v) => {
            let (lo, hi) = (
                min.unwrap_or(f32::NEG_INFINITY),
                max.unwrap_or(f32::INFINITY),
            );
            Ok(float_tensor(
                x.dtype(),
                x.shape.clone(),
                crate::kernels::ewise::clip(&v, lo, hi),
            ))
        }
        Num::I(v) => {
            let lo = min.map(|m| m.ceil() as i64).unwrap_or(i64::MIN);
            let hi = max.map(|m| m.floor() as i64).unwrap_or(i64::MAX);
            Ok(ints_to(
                x.dtype(),
                x.shape.clone(),
                v.into_iter().map(|p| p.max(lo).min(hi)).collect(),
            ))
        }
        Num::B(_) => unsupported("Clip on bool tensors"),
    }
}

/// ONNX Cast. Float -> integer truncates toward zero and saturates (Rust `as`; ONNX
/// leaves out-of-range values undefined); integer -> narrower integer wraps; anything
/// -> bool is `!= 0`; f32 -> f16 rounds to nearest-even.
pub(crate) fn cast(x: &Tensor, to: DType) -> Tensor {
    let shape = x.shape.clone();
    if x.dtype() == to {
        return x.clone();
    }
    match num(x) {
        Num::F(v) => {
            let data = match to {
                DType::F32 => TensorData::F32(v.into_owned()),
                DType::F16 => TensorData::F16(v.iter().map(|&f| f16::from_f32(f)).collect()),
                DType::I64 => TensorData::I64(v.iter().map(|&f| f as i64).collect()),
                DType::I32 => TensorData::I32(v.iter().map(|&f| f as i32).collect()),
                DType::I8 => TensorData::I8(v.iter().map(|&f| f as i8).collect()),
                DType::U8 => TensorData::U8(v.iter().map(|&f| f as u8).collect()),
                DType::Bool => TensorData::Bool(v.iter().map(|&f| f != 0.0).collect()),
            };
            Tensor { shape, data }
        }
        Num::I(v) => ints_to(to, shape, v),
        Num::B(v) => ints_to(to, shape, v.iter().map(|&b| b as i64).collect()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_is_half_even() {
        let x = Tensor::from_f32(vec![4], vec![0.5, 1.5, 2.5, -0.5]);
        let y = unary(UnaryOp::Round, &x).unwrap();
        assert_eq!(y.as_f32().unwrap(), &[0.0, 2.0, 2.0, -0.0]);
    }

    #[test]
    fn int_division_truncates_and_mod_follows_divisor() {
        let a = Tensor::from_i32(vec![2], vec![-7, 7]);
        let b = Tensor::from_i32(vec![1], vec![2]);
        let d = binary(BinaryOp::Div, &a, &b).unwrap();
        assert_eq!(d.as_i32().unwrap(), &[-3, 3]);
        let m = binary(BinaryOp::Mod { fmod: false }, &a, &b).unwrap();
        assert_eq!(m.as_i32().unwrap(), &[1, 1]);
        let f = binary(BinaryOp::Mod { fmod: true }, &a, &b).unwrap();
        assert_eq!(f.as_i32().unwrap(), &[-1, 1]);
        let z = Tensor::from_i32(vec![1], vec![0]);
        assert!(binary(BinaryOp::Div, &a, &z).is_err());
    }
}
