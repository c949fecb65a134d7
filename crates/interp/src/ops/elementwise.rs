//! Unary, Binary (numpy broadcasting), Where, Clip and Cast.
//!
//! Values are computed in one of five domains: f32 floats (f16, bf16 and the minifloats
//! widened and rounded back), f64 floats, signed integers in i64 and unsigned ones in u64
//! with wrap-around (narrowed back with `as`, which wraps like C++ two's-complement
//! arithmetic), and bools.

use crate::elem::{broadcast_map, float_tensor, floats, same_variant};
use crate::error::{OpResult, invalid, unsupported};
use crate::kernels::vmath::{erf_f32, exp_f32, tanh_f32};
use half::{bf16, f16};
use pimkit_ir::{BinaryOp, DType, E8M0Round, Tensor, TensorData, UnaryOp, broadcast_shapes};
use std::borrow::Cow;

pub(crate) enum Num<'a> {
    F(Cow<'a, [f32]>),
    D(Cow<'a, [f64]>),
    I(Vec<i64>),
    U(Vec<u64>),
    B(Cow<'a, [bool]>),
}

pub(crate) fn num(t: &Tensor) -> Num<'_> {
    match &t.data {
        TensorData::F64(v) => Num::D(Cow::Borrowed(v)),
        TensorData::Bool(v) => Num::B(Cow::Borrowed(v)),
        TensorData::U64(v) => Num::U(v.clone()),
        TensorData::U32(v) => Num::U(v.iter().map(|&x| x as u64).collect()),
        TensorData::U16(v) => Num::U(v.iter().map(|&x| x as u64).collect()),
        TensorData::U8(v) => Num::U(v.iter().map(|&x| x as u64).collect()),
        _ if t.dtype().is_float() || t.dtype().is_minifloat() => Num::F(floats(t)),
        _ if t.dtype().is_signed_int() => Num::I(t.to_i64_vec()),
        _ => Num::U(t.to_i64_vec().into_iter().map(|x| x as u64).collect()),
    }
}

/// Narrow i64 values to an integer dtype (wrapping), or convert to float/bool.
pub(crate) fn ints_to(dtype: DType, shape: Vec<usize>, v: Vec<i64>) -> Tensor {
    let data = match dtype {
        DType::I64 => TensorData::I64(v),
        DType::I32 => TensorData::I32(v.into_iter().map(|x| x as i32).collect()),
        DType::I16 => TensorData::I16(v.into_iter().map(|x| x as i16).collect()),
        DType::I8 => TensorData::I8(v.into_iter().map(|x| x as i8).collect()),
        DType::U64 => TensorData::U64(v.into_iter().map(|x| x as u64).collect()),
        DType::U32 => TensorData::U32(v.into_iter().map(|x| x as u32).collect()),
        DType::U16 => TensorData::U16(v.into_iter().map(|x| x as u16).collect()),
        DType::U8 => TensorData::U8(v.into_iter().map(|x| x as u8).collect()),
        DType::F32 => TensorData::F32(v.into_iter().map(|x| x as f32).collect()),
        DType::F64 => TensorData::F64(v.into_iter().map(|x| x as f64).collect()),
        DType::F16 => TensorData::F16(v.into_iter().map(|x| f16::from_f32(x as f32)).collect()),
        DType::Bf16 => TensorData::Bf16(v.into_iter().map(|x| bf16::from_f32(x as f32)).collect()),
        DType::Bool => TensorData::Bool(v.into_iter().map(|x| x != 0).collect()),
        d => {
            // Sub-byte integers wrap into their width; minifloats convert the value.
            let vals: Vec<f64> = if d.is_subbyte_int() {
                let bits = d.bits() as u32;
                v.into_iter()
                    .map(|x| {
                        let m = x & ((1 << bits) - 1);
                        let code = m as u8;
                        pimkit_ir::code_to_f64(d, code)
                    })
                    .collect()
            } else {
                v.into_iter().map(|x| x as f64).collect()
            };
            return Tensor::from_f64_as(d, shape, &vals);
        }
    };
    Tensor { shape, data }
}

pub(crate) fn uints_to(dtype: DType, shape: Vec<usize>, v: Vec<u64>) -> Tensor {
    match dtype {
        DType::U64 => Tensor {
            shape,
            data: TensorData::U64(v),
        },
        DType::F32 => Tensor::from_f32(shape, v.into_iter().map(|x| x as f32).collect()),
        DType::F64 => Tensor::from_f64(shape, v.into_iter().map(|x| x as f64).collect()),
        d => ints_to(d, shape, v.into_iter().map(|x| x as i64).collect()),
    }
}

fn doubles_to(dtype: DType, shape: Vec<usize>, v: Vec<f64>) -> Tensor {
    match dtype {
        DType::F64 => Tensor::from_f64(shape, v),
        d => float_tensor(d, shape, v.into_iter().map(|x| x as f32).collect()),
    }
}

/// Logistic function as onnxruntime computes it (MLAS `MlasComputeLogistic`, the Eigen
/// rational approximation): with fused multiply-adds (x86 FMA3 kernel, NEON) or, on the
/// SSE2 path, with every product and sum rounded (`crate::ort_kernels`). Shared by
/// Sigmoid, the RNN gates and QLinearSigmoid's lookup table.
#[inline]
pub fn sigmoid_f32(x: f32) -> f32 {
    if crate::ort_kernels().logistic_fma() {
        logistic::<true>(x)
    } else {
        logistic::<false>(x)
    }
}

/// [`sigmoid_f32`] with the FMA choice made once by the caller, so a loop over it has
/// no branch and vectorizes (the vectorized Sigmoid and the RNN gates).
#[inline(always)]
pub(crate) fn logistic<const FMA: bool>(x: f32) -> f32 {
    let madd = |a: f32, b: f32, c: f32| if FMA { a.mul_add(b, c) } else { a * b + c };
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
    let v = x.clamp(-18.0, 18.0);
    let v2 = v * v;
    let mut p = madd(v2, A[0], A[1]);
    for &a in &A[2..] {
        p = madd(p, v2, a);
    }
    p *= v;
    let mut q = madd(v2, B[0], B[1]);
    for &b in &B[2..] {
        q = madd(q, v2, b);
    }
    let r = (p / q + 0.5).clamp(0.0, 1.0);
    // NaN stays the input NaN (a select, not a branch).
    if x.is_nan() { x } else { r }
}

fn softplus<F: num_traits::Float>(x: F) -> F {
    if x > F::zero() {
        x + (-x).exp().ln_1p()
    } else {
        x.exp().ln_1p()
    }
}

/// The float math of every unary op, generic over f32 and f64. Ops whose f32 form
/// follows a specific onnxruntime kernel (sigmoid, erf) take it from `f32_special`.
fn unary_g<F: num_traits::Float>(u: UnaryOp, x: F, special: impl Fn(UnaryOp, F) -> F) -> F {
    let c = |v: f32| F::from(v).unwrap_or_else(F::nan);
    let (zero, one) = (F::zero(), F::one());
    match u {
        UnaryOp::Relu => x.max(zero),
        UnaryOp::Sigmoid | UnaryOp::Erf | UnaryOp::Tanh | UnaryOp::Exp => special(u, x),
        UnaryOp::Log => x.ln(),
        UnaryOp::Sqrt => x.sqrt(),
        UnaryOp::Neg => -x,
        UnaryOp::Abs => x.abs(),
        UnaryOp::Reciprocal => one / x,
        UnaryOp::Floor => x.floor(),
        UnaryOp::Ceil => x.ceil(),
        UnaryOp::Round => {
            let r = x.round();
            if (x - x.trunc()).abs() == c(0.5) && r % c(2.0) != zero {
                r - x.signum()
            } else {
                r
            }
        }
        UnaryOp::Sign => {
            if x > zero {
                one
            } else if x < zero {
                -one
            } else {
                x // 0, -0 or NaN
            }
        }
        UnaryOp::Sin => x.sin(),
        UnaryOp::Cos => x.cos(),
        UnaryOp::Tan => x.tan(),
        UnaryOp::Asin => x.asin(),
        UnaryOp::Acos => x.acos(),
        UnaryOp::Atan => x.atan(),
        UnaryOp::Sinh => x.sinh(),
        UnaryOp::Cosh => x.cosh(),
        UnaryOp::Asinh => x.asinh(),
        UnaryOp::Acosh => x.acosh(),
        UnaryOp::Atanh => x.atanh(),
        UnaryOp::Softplus => softplus(x),
        UnaryOp::Softsign => x / (one + x.abs()),
        UnaryOp::Mish => x * softplus(x).tanh(),
        UnaryOp::HardSigmoid { alpha, beta } => (c(alpha) * x + c(beta)).max(zero).min(one),
        UnaryOp::HardSwish => x * (x / c(6.0) + c(0.5)).max(zero).min(one),
        UnaryOp::LeakyRelu { alpha } => {
            if x >= zero {
                x
            } else {
                c(alpha) * x
            }
        }
        UnaryOp::Elu { alpha } => {
            if x >= zero {
                x
            } else {
                c(alpha) * (x.exp() - one)
            }
        }
        UnaryOp::Celu { alpha } => {
            let a = c(alpha);
            x.max(zero) + (a * ((x / a).exp() - one)).min(zero)
        }
        UnaryOp::Selu { alpha, gamma } => {
            let y = if x > zero {
                x
            } else {
                c(alpha) * (x.exp() - one)
            };
            c(gamma) * y
        }
        UnaryOp::ThresholdedRelu { alpha } => {
            if x > c(alpha) {
                x
            } else {
                zero
            }
        }
        UnaryOp::Shrink { bias, lambd } => {
            if x < -c(lambd) {
                x + c(bias)
            } else if x > c(lambd) {
                x - c(bias)
            } else {
                zero
            }
        }
        UnaryOp::Swish { alpha } => x * special(UnaryOp::Sigmoid, c(alpha) * x),
        UnaryOp::Gelu { tanh: false } => {
            c(0.5) * x * (one + special(UnaryOp::Erf, x * c(std::f32::consts::FRAC_1_SQRT_2)))
        }
        UnaryOp::Gelu { tanh: true } => {
            // sqrt(2/pi)
            let k = c(0.797_884_6);
            c(0.5) * x * (one + special(UnaryOp::Tanh, k * (x + c(0.044_715) * x * x * x)))
        }
        // Bool-valued or integer-only ops are dispatched before reaching here.
        UnaryOp::Not | UnaryOp::IsNaN | UnaryOp::IsInf { .. } | UnaryOp::BitwiseNot => x,
    }
}

fn special_f32(u: UnaryOp, x: f32) -> f32 {
    match u {
        UnaryOp::Sigmoid => sigmoid_f32(x),
        UnaryOp::Tanh => tanh_f32(x),
        UnaryOp::Exp => exp_f32(x),
        _ => erf_f32(x),
    }
}

fn special_f64(u: UnaryOp, x: f64) -> f64 {
    match u {
        UnaryOp::Sigmoid => 1.0 / (1.0 + (-x).exp()),
        UnaryOp::Tanh => x.tanh(),
        UnaryOp::Exp => x.exp(),
        _ => crate::erf::erf_f64(x),
    }
}

pub(crate) fn unary(u: UnaryOp, x: &Tensor) -> OpResult<Tensor> {
    let shape = x.shape.clone();
    let dt = x.dtype();
    match (u, num(x)) {
        (UnaryOp::Not, Num::B(v)) => Ok(Tensor::from_bool(shape, v.iter().map(|b| !b).collect())),
        (UnaryOp::Not, _) => unsupported(format!("Not needs bool input, got {dt}")),
        (UnaryOp::IsNaN, Num::F(v)) => Ok(Tensor::from_bool(
            shape,
            v.iter().map(|f| f.is_nan()).collect(),
        )),
        (UnaryOp::IsNaN, Num::D(v)) => Ok(Tensor::from_bool(
            shape,
            v.iter().map(|f| f.is_nan()).collect(),
        )),
        (UnaryOp::IsNaN, _) => Ok(Tensor::from_bool(shape, vec![false; x.numel()])),
        (UnaryOp::IsInf { pos, neg }, n) => {
            let is = |f: f64| f.is_infinite() && ((f > 0.0 && pos) || (f < 0.0 && neg));
            let v: Vec<bool> = match n {
                Num::F(v) => v.iter().map(|&f| is(f as f64)).collect(),
                Num::D(v) => v.iter().map(|&f| is(f)).collect(),
                _ => vec![false; x.numel()],
            };
            Ok(Tensor::from_bool(shape, v))
        }
        (UnaryOp::BitwiseNot, Num::I(v)) => {
            Ok(ints_to(dt, shape, v.into_iter().map(|a| !a).collect()))
        }
        (UnaryOp::BitwiseNot, Num::U(v)) => {
            Ok(uints_to(dt, shape, v.into_iter().map(|a| !a).collect()))
        }
        (_, Num::F(v)) => Ok(float_tensor(
            dt,
            shape,
            crate::kernels::ewise::unary(u, &v)
                .unwrap_or_else(|| v.iter().map(|&f| unary_g(u, f, special_f32)).collect()),
        )),
        (_, Num::D(v)) => Ok(doubles_to(
            dt,
            shape,
            v.iter().map(|&f| unary_g(u, f, special_f64)).collect(),
        )),
        (UnaryOp::Neg | UnaryOp::Abs | UnaryOp::Sign | UnaryOp::Relu, Num::I(v)) => {
            let f = |a: i64| match u {
                UnaryOp::Neg => a.wrapping_neg(),
                UnaryOp::Abs => a.wrapping_abs(),
                UnaryOp::Sign => a.signum(),
                _ => a.max(0),
            };
            Ok(ints_to(dt, shape, v.into_iter().map(f).collect()))
        }
        (UnaryOp::Abs | UnaryOp::Relu, Num::U(v)) => Ok(uints_to(dt, shape, v)),
        (UnaryOp::Sign, Num::U(v)) => Ok(uints_to(
            dt,
            shape,
            v.into_iter().map(|a| (a > 0) as u64).collect(),
        )),
        (UnaryOp::Neg, Num::U(v)) => Ok(uints_to(
            dt,
            shape,
            v.into_iter().map(|a| a.wrapping_neg()).collect(),
        )),
        _ => unsupported(format!("{} on {dt} tensors", u.name())),
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

/// Float Mod with the divisor's sign (Python's %), or C fmod.
fn fmod_g<F: num_traits::Float>(a: F, b: F, c_fmod: bool) -> F {
    let r = a % b;
    if !c_fmod && r != F::zero() && ((r < F::zero()) != (b < F::zero())) {
        r + b
    } else {
        r
    }
}

/// The float result of an arithmetic op (None: not an arithmetic float op).
fn float_arith<F: num_traits::Float>(op: BinaryOp, p: F, q: F) -> F {
    use BinaryOp as B;
    match op {
        B::Add => p + q,
        B::Sub => p - q,
        B::Mul => p * q,
        B::Div => p / q,
        B::Pow => p.powf(q),
        B::Max if p.is_nan() || q.is_nan() => F::nan(),
        B::Min if p.is_nan() || q.is_nan() => F::nan(),
        B::Max => p.max(q),
        B::Min => p.min(q),
        B::Mod { fmod } => fmod_g(p, q, fmod),
        _ => F::nan(),
    }
}

fn compare<T: PartialOrd>(op: BinaryOp, p: T, q: T) -> bool {
    use BinaryOp as B;
    match op {
        B::Equal => p == q,
        B::Less => p < q,
        B::LessOrEqual => p <= q,
        B::Greater => p > q,
        B::GreaterOrEqual => p >= q,
        _ => false,
    }
}

fn is_compare(op: BinaryOp) -> bool {
    use BinaryOp as B;
    matches!(
        op,
        B::Equal | B::Less | B::LessOrEqual | B::Greater | B::GreaterOrEqual
    )
}

/// Integer arithmetic that wraps in the domain type (i64 or u64).
trait IntArith: Copy + PartialOrd + Eq + Default {
    fn arith(op: BinaryOp, p: Self, q: Self) -> Option<Self>;
    fn one() -> Self;
}

impl IntArith for i64 {
    fn one() -> i64 {
        1
    }
    fn arith(op: BinaryOp, p: i64, q: i64) -> Option<i64> {
        use BinaryOp as B;
        Some(match op {
            B::Add => p.wrapping_add(q),
            B::Sub => p.wrapping_sub(q),
            B::Mul => p.wrapping_mul(q),
            B::Div => p.wrapping_div(q),
            B::Max => p.max(q),
            B::Min => p.min(q),
            B::Mod { fmod: true } => p.wrapping_rem(q),
            B::Mod { fmod: false } => {
                let r = p.wrapping_rem(q);
                if r != 0 && ((r < 0) != (q < 0)) {
                    r + q
                } else {
                    r
                }
            }
            B::Pow => (p as f64).powf(q as f64) as i64,
            B::BitwiseAnd => p & q,
            B::BitwiseOr => p | q,
            B::BitwiseXor => p ^ q,
            _ => return None,
        })
    }
}

impl IntArith for u64 {
    fn one() -> u64 {
        1
    }
    fn arith(op: BinaryOp, p: u64, q: u64) -> Option<u64> {
        use BinaryOp as B;
        Some(match op {
            B::Add => p.wrapping_add(q),
            B::Sub => p.wrapping_sub(q),
            B::Mul => p.wrapping_mul(q),
            B::Div => p / q,
            B::Max => p.max(q),
            B::Min => p.min(q),
            B::Mod { .. } => p % q,
            B::Pow => (p as f64).powf(q as f64) as u64,
            B::BitwiseAnd => p & q,
            B::BitwiseOr => p | q,
            B::BitwiseXor => p ^ q,
            B::BitShift { left: true } => p.checked_shl(q as u32).unwrap_or(0),
            B::BitShift { left: false } => p.checked_shr(q as u32).unwrap_or(0),
            _ => return None,
        })
    }
}

pub(crate) fn binary(op: BinaryOp, a: &Tensor, b: &Tensor) -> OpResult<Tensor> {
    let out = broadcast_shapes(&a.shape, &b.shape)
        .ok_or_else(|| crate::error::OpError::Invalid("shapes are not broadcastable".into()))?;
    let (ash, bsh) = (&a.shape[..], &b.shape[..]);
    let dt = a.dtype();
    use BinaryOp as B;
    if op == B::Pow && a.dtype() != b.dtype() {
        // Base and exponent may differ in type; the result has the base's type.
        let (x, y) = (a.to_f64_vec(), b.to_f64_vec());
        let v = zip_bcast(&x, ash, &y, bsh, &out, |p, q| p.powf(q));
        return Ok(match num(a) {
            Num::I(_) => ints_to(dt, out, v.into_iter().map(|p| p as i64).collect()),
            Num::U(_) => uints_to(dt, out, v.into_iter().map(|p| p as u64).collect()),
            _ => doubles_to(dt, out, v),
        });
    }
    let bool_out = |v: Vec<bool>| Ok(Tensor::from_bool(out.clone(), v));
    match (num(a), num(b)) {
        (Num::F(x), Num::F(y)) => {
            if is_compare(op) {
                return bool_out(zip_bcast(&x, ash, &y, bsh, &out, |p, q| compare(op, p, q)));
            }
            if matches!(
                op,
                B::And
                    | B::Or
                    | B::Xor
                    | B::BitwiseAnd
                    | B::BitwiseOr
                    | B::BitwiseXor
                    | B::BitShift { .. }
            ) {
                return unsupported(format!("{} on float tensors", op.name()));
            }
            if let Some(v) = crate::kernels::ewise::binary(op, &x, ash, &y, bsh, &out) {
                return Ok(float_tensor(dt, out, v));
            }
            let v = zip_bcast(&x, ash, &y, bsh, &out, |p, q| float_arith(op, p, q));
            Ok(float_tensor(dt, out, v))
        }
        (Num::D(x), Num::D(y)) => {
            if is_compare(op) {
                return bool_out(zip_bcast(&x, ash, &y, bsh, &out, |p, q| compare(op, p, q)));
            }
            if matches!(
                op,
                B::And
                    | B::Or
                    | B::Xor
                    | B::BitwiseAnd
                    | B::BitwiseOr
                    | B::BitwiseXor
                    | B::BitShift { .. }
            ) {
                return unsupported(format!("{} on float tensors", op.name()));
            }
            Ok(Tensor::from_f64(
                out.clone(),
                zip_bcast(&x, ash, &y, bsh, &out, |p, q| float_arith(op, p, q)),
            ))
        }
        (Num::I(x), Num::I(y)) => {
            if is_compare(op) {
                return bool_out(zip_bcast(&x, ash, &y, bsh, &out, |p, q| compare(op, p, q)));
            }
            int_binary(op, &x, &y, ash, bsh, &out).map(|v| ints_to(dt, out.clone(), v))
        }
        (Num::U(x), Num::U(y)) => {
            if is_compare(op) {
                return bool_out(zip_bcast(&x, ash, &y, bsh, &out, |p, q| compare(op, p, q)));
            }
            int_binary(op, &x, &y, ash, bsh, &out).map(|v| uints_to(dt, out.clone(), v))
        }
        (Num::B(x), Num::B(y)) => {
            let f: fn(bool, bool) -> bool = match op {
                B::And => |p, q| p && q,
                B::Or => |p, q| p || q,
                B::Xor => |p, q| p != q,
                B::Equal => |p, q| p == q,
                _ => return unsupported(format!("{} on bool tensors", op.name())),
            };
            bool_out(zip_bcast(&x, ash, &y, bsh, &out, f))
        }
        _ => unsupported(format!(
            "{} with mixed dtypes {} and {}",
            op.name(),
            a.dtype(),
            b.dtype()
        )),
    }
}

fn int_binary<T: IntArith>(
    op: BinaryOp,
    x: &[T],
    y: &[T],
    ash: &[usize],
    bsh: &[usize],
    out: &[usize],
) -> OpResult<Vec<T>> {
    if matches!(op, BinaryOp::Div | BinaryOp::Mod { .. }) && y.contains(&T::default()) {
        return invalid(format!("integer {} by zero", op.name()));
    }
    // Probe with 1s (a 0/0 probe would divide by zero).
    if T::arith(op, T::one(), T::one()).is_none() {
        return unsupported(format!("{} on integer tensors", op.name()));
    }
    Ok(zip_bcast(x, ash, y, bsh, out, |p, q| {
        T::arith(op, p, q).unwrap_or(p)
    }))
}

pub(crate) fn where_(cond: &Tensor, x: &Tensor, y: &Tensor) -> OpResult<Tensor> {
    let Some(c) = cond.as_bool() else {
        return unsupported(format!("condition must be bool, got {}", cond.dtype()));
    };
    let out = broadcast_shapes(&cond.shape, &x.shape)
        .and_then(|s| broadcast_shapes(&s, &y.shape))
        .ok_or_else(|| crate::error::OpError::Invalid("shapes are not broadcastable".into()))?;
    if x.dtype() != y.dtype() {
        return unsupported(format!("x is {} but y is {}", x.dtype(), y.dtype()));
    }
    let ic = broadcast_map(&cond.shape, &out);
    let ix = broadcast_map(&x.shape, &out);
    let iy = broadcast_map(&y.shape, &out);
    fn pick<T: Copy>(
        c: &[bool],
        xv: &[T],
        yv: &[T],
        ic: &[usize],
        ix: &[usize],
        iy: &[usize],
    ) -> Vec<T> {
        (0..ic.len())
            .map(|k| if c[ic[k]] { xv[ix[k]] } else { yv[iy[k]] })
            .collect()
    }
    let data = match (&x.data, &y.data) {
        (TensorData::Codes(d, xv), TensorData::Codes(_, yv)) => {
            TensorData::Codes(*d, pick(c, xv, yv, &ic, &ix, &iy))
        }
        _ => {
            // Same dtype: pair the vectors through the shared macro.
            let yd = &y.data;
            pimkit_ir::map_data!(&x.data, |xv| {
                let yv = same_variant(yd, xv);
                pick(c, xv, yv, &ic, &ix, &iy)
            })
        }
    };
    Ok(Tensor { shape: out, data })
}

pub(crate) fn clip(x: &Tensor, min: Option<f32>, max: Option<f32>) -> OpResult<Tensor> {
    let shape = x.shape.clone();
    match num(x) {
        Num::F(v) => {
            let (lo, hi) = (
                min.unwrap_or(f32::NEG_INFINITY),
                max.unwrap_or(f32::INFINITY),
            );
            Ok(float_tensor(
                x.dtype(),
                shape,
                crate::kernels::ewise::clip(&v, lo, hi),
            ))
        }
        Num::D(v) => {
            let (lo, hi) = (
                min.map_or(f64::NEG_INFINITY, f64::from),
                max.map_or(f64::INFINITY, f64::from),
            );
            let f = |p: f64| if p.is_nan() { p } else { p.max(lo).min(hi) };
            Ok(Tensor::from_f64(shape, v.iter().map(|&p| f(p)).collect()))
        }
        Num::I(v) => {
            let lo = min.map(|m| m.ceil() as i64).unwrap_or(i64::MIN);
            let hi = max.map(|m| m.floor() as i64).unwrap_or(i64::MAX);
            Ok(ints_to(
                x.dtype(),
                shape,
                v.into_iter().map(|p| p.max(lo).min(hi)).collect(),
            ))
        }
        Num::U(v) => {
            let lo = min.map(|m| m.max(0.0).ceil() as u64).unwrap_or(0);
            let hi = max.map(|m| m.max(0.0).floor() as u64).unwrap_or(u64::MAX);
            Ok(uints_to(
                x.dtype(),
                shape,
                v.into_iter().map(|p| p.max(lo).min(hi)).collect(),
            ))
        }
        Num::B(_) => unsupported("Clip on bool tensors"),
    }
}

/// ONNX Cast. Float -> integer truncates toward zero and saturates (Rust `as`; ONNX
/// leaves out-of-range values undefined); integer -> narrower integer wraps; anything
/// -> bool is `!= 0`; to f16/bf16/f32 rounds to nearest-even; to a float8 type rounds to
/// nearest-even and, unless `saturate`, overflows to infinity/NaN (ml_dtypes, as the ONNX
/// reference); float4 and the sub-byte integers saturate.
pub(crate) fn cast(x: &Tensor, to: DType, saturate: bool, round: E8M0Round) -> Tensor {
    let shape = x.shape.clone();
    if x.dtype() == to {
        return x.clone();
    }
    if to.is_minifloat() {
        let v = x.to_f32_vec();
        let codes = v
            .iter()
            .map(|&f| pimkit_ir::minifloat::from_f32(to, f, saturate, round.name()))
            .collect();
        return Tensor {
            shape,
            data: TensorData::Codes(to, codes),
        };
    }
    if to.is_subbyte_int() {
        // Integers wrap into the width (like a narrowing integer cast); floats convert.
        return match num(x) {
            Num::I(v) => ints_to(to, shape, v),
            Num::U(v) => ints_to(to, shape, v.into_iter().map(|a| a as i64).collect()),
            Num::B(v) => ints_to(to, shape, v.iter().map(|&b| b as i64).collect()),
            _ => ints_to(
                to,
                shape,
                x.to_f64_vec().into_iter().map(|f| f as i64).collect(),
            ),
        };
    }
    match num(x) {
        Num::F(v) => float_to(to, shape, v.iter().map(|&f| f as f64).collect(), Some(&v)),
        Num::D(v) => float_to(to, shape, v.into_owned(), None),
        Num::I(v) => ints_to(to, shape, v),
        Num::U(v) => uints_to(to, shape, v),
        Num::B(v) => ints_to(to, shape, v.iter().map(|&b| b as i64).collect()),
    }
}

/// Float values (as f64; `f32s` when they came from f32, to round f16/bf16 from the
/// same value onnxruntime rounds) converted to `to`.
fn float_to(to: DType, shape: Vec<usize>, v: Vec<f64>, f32s: Option<&[f32]>) -> Tensor {
    let data = match to {
        DType::F32 => TensorData::F32(v.iter().map(|&f| f as f32).collect()),
        DType::F64 => TensorData::F64(v),
        DType::F16 => match f32s {
            Some(s) => TensorData::F16(s.iter().map(|&f| f16::from_f32(f)).collect()),
            None => TensorData::F16(v.iter().map(|&f| f16::from_f64(f)).collect()),
        },
        DType::Bf16 => match f32s {
            Some(s) => TensorData::Bf16(s.iter().map(|&f| bf16::from_f32(f)).collect()),
            None => TensorData::Bf16(v.iter().map(|&f| bf16::from_f64(f)).collect()),
        },
        DType::I64 => TensorData::I64(v.iter().map(|&f| f as i64).collect()),
        DType::I32 => TensorData::I32(v.iter().map(|&f| f as i32).collect()),
        DType::I16 => TensorData::I16(v.iter().map(|&f| f as i16).collect()),
        DType::I8 => TensorData::I8(v.iter().map(|&f| f as i8).collect()),
        DType::U64 => TensorData::U64(v.iter().map(|&f| f as u64).collect()),
        DType::U32 => TensorData::U32(v.iter().map(|&f| f as u32).collect()),
        DType::U16 => TensorData::U16(v.iter().map(|&f| f as u16).collect()),
        DType::U8 => TensorData::U8(v.iter().map(|&f| f as u8).collect()),
        DType::Bool => TensorData::Bool(v.iter().map(|&f| f != 0.0).collect()),
        d => return Tensor::from_f64_as(d, shape, &v),
    };
    Tensor { shape, data }
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

    #[test]
    fn unsigned_ops_use_unsigned_arithmetic() {
        let a = Tensor::from_u32(vec![2], vec![u32::MAX, 16]);
        let b = Tensor::from_u32(vec![2], vec![2, 2]);
        let d = binary(BinaryOp::Div, &a, &b).unwrap();
        assert_eq!(d.as_u32().unwrap(), &[u32::MAX / 2, 8]);
        let s = binary(BinaryOp::BitShift { left: false }, &a, &b).unwrap();
        assert_eq!(s.as_u32().unwrap(), &[u32::MAX >> 2, 4]);
        let l = binary(BinaryOp::Less, &a, &b).unwrap();
        assert_eq!(l.as_bool().unwrap(), &[false, false]);
    }
}
