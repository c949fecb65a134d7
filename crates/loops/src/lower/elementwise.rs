//! Elementwise ops: one `linalg.generic` each, broadcasting folded into the maps.

use super::Lowerer;
use crate::error::Result;
use crate::ir::{BFn, Expr, NestKind, TensorId, UFn};
use pimkit_ir::operand::{binary, where_op};
use pimkit_ir::{BinaryOp, DType, Graph, Node, Op, UnaryOp, ValueDef};
use std::collections::{HashMap, HashSet};

/// Sqrt nodes folded into a following Reciprocal (or `1 / sqrt`): ONNX exports
/// `torch.rsqrt` that way, Torch-MLIR lowers `aten.rsqrt` as one nest.
pub(crate) struct Fused {
    pub skip: HashSet<usize>,
    /// reciprocal node -> the Sqrt's input value
    pub rsqrt: HashMap<usize, pimkit_ir::ValueId>,
}

pub(crate) fn find_rsqrt_pairs(g: &Graph) -> Fused {
    let mut f = Fused {
        skip: HashSet::new(),
        rsqrt: HashMap::new(),
    };
    let consumers = g.consumers();
    let producer = |v: pimkit_ir::ValueId| match g.value(v).def {
        ValueDef::Node { node, .. } => Some(node.idx()),
        // graph inputs and constants have no producer
        _ => None,
    };
    for (ni, n) in g.nodes.iter().enumerate() {
        let src = match (&n.op, n.inputs.as_slice()) {
            (Op::Unary(UnaryOp::Reciprocal), [Some(v)]) => Some(*v),
            (Op::Binary(BinaryOp::Div), [Some(one), Some(v)]) => {
                let is_one = g
                    .const_data(*one)
                    .is_some_and(|t| t.numel() == 1 && t.to_f64_vec()[0] == 1.0)
                    && g.ty(*v).shape == g.ty(n.outputs[0]).shape;
                is_one.then_some(*v)
            }
            // every other node is not an identity
            _ => None,
        };
        let Some(v) = src else { continue };
        let Some(pi) = producer(v) else { continue };
        let p = &g.nodes[pi];
        let single_use = consumers.get(&v).is_some_and(|c| c.len() == 1);
        if matches!(p.op, Op::Unary(UnaryOp::Sqrt))
            && single_use
            && !g.outputs.contains(&v)
            && let Some(Some(x)) = p.inputs.first()
        {
            f.skip.insert(pi);
            f.rsqrt.insert(ni, *x);
        }
    }
    f
}

pub(crate) fn lower_rsqrt(l: &mut Lowerer, src: pimkit_ir::ValueId) -> Result<TensorId> {
    let x = l.value(src)?;
    let dt = l.dtype(x);
    l.map("rsqrt", NestKind::Elementwise, &[x], dt, |v| {
        Expr::un(UFn::Rsqrt, v[0].clone())
    })
}

pub(crate) fn sigmoid(x: Expr, dt: DType) -> Expr {
    Expr::div(
        Expr::k(1.0, dt),
        Expr::add(Expr::k(1.0, dt), Expr::un(UFn::Exp, Expr::un(UFn::Neg, x))),
    )
}

/// The body of a unary op applied to `x` of dtype `dt`.
pub(crate) fn unary_expr(u: UnaryOp, x: Expr, dt: DType) -> Expr {
    let k = |v: f64| Expr::k(v, dt);
    let lt0 = |x: Expr| Expr::bin(BFn::Lt, x, Expr::k(0.0, dt));
    match u {
        UnaryOp::Relu => Expr::max(x, k(0.0)),
        UnaryOp::Sigmoid => sigmoid(x, dt),
        UnaryOp::Tanh => Expr::un(UFn::Tanh, x),
        UnaryOp::Exp => Expr::un(UFn::Exp, x),
        UnaryOp::Log => Expr::un(UFn::Log, x),
        UnaryOp::Sqrt => Expr::un(UFn::Sqrt, x),
        UnaryOp::Neg => Expr::un(UFn::Neg, x),
        UnaryOp::Abs => Expr::un(UFn::Abs, x),
        UnaryOp::Reciprocal => Expr::un(UFn::Recip, x),
        UnaryOp::Erf => Expr::un(UFn::Erf, x),
        UnaryOp::Floor => Expr::un(UFn::Floor, x),
        UnaryOp::Ceil => Expr::un(UFn::Ceil, x),
        UnaryOp::Round => Expr::un(UFn::Round, x),
        UnaryOp::Sign => Expr::select(
            Expr::bin(BFn::Gt, x.clone(), k(0.0)),
            k(1.0),
            Expr::select(lt0(x), k(-1.0), k(0.0)),
        ),
        UnaryOp::Sin => Expr::un(UFn::Sin, x),
        UnaryOp::Cos => Expr::un(UFn::Cos, x),
        UnaryOp::Not => Expr::un(UFn::Not, x),
        UnaryOp::IsNaN => Expr::un(UFn::IsNaN, x),
        UnaryOp::Softplus => Expr::un(UFn::Log, Expr::add(k(1.0), Expr::un(UFn::Exp, x))),
        UnaryOp::HardSigmoid { alpha, beta } => Expr::max(
            k(0.0),
            Expr::min(
                k(1.0),
                Expr::add(Expr::mul(k(alpha as f64), x), k(beta as f64)),
            ),
        ),
        UnaryOp::HardSwish => Expr::mul(
            x.clone(),
            Expr::max(
                k(0.0),
                Expr::min(k(1.0), Expr::add(Expr::mul(k(1.0 / 6.0), x), k(0.5))),
            ),
        ),
        UnaryOp::LeakyRelu { alpha } => {
            Expr::select(lt0(x.clone()), Expr::mul(k(alpha as f64), x.clone()), x)
        }
        UnaryOp::Elu { alpha } => Expr::select(
            lt0(x.clone()),
            Expr::mul(
                k(alpha as f64),
                Expr::sub(Expr::un(UFn::Exp, x.clone()), k(1.0)),
            ),
            x,
        ),
        UnaryOp::Gelu { tanh: false } => Expr::mul(
            Expr::mul(k(0.5), x.clone()),
            Expr::add(
                k(1.0),
                Expr::un(UFn::Erf, Expr::mul(x, k(std::f64::consts::FRAC_1_SQRT_2))),
            ),
        ),
        UnaryOp::Tan => Expr::un(UFn::Tan, x),
        UnaryOp::Asin => Expr::un(UFn::Asin, x),
        UnaryOp::Acos => Expr::un(UFn::Acos, x),
        UnaryOp::Atan => Expr::un(UFn::Atan, x),
        UnaryOp::Sinh => Expr::un(UFn::Sinh, x),
        UnaryOp::Cosh => Expr::un(UFn::Cosh, x),
        UnaryOp::Asinh => Expr::un(UFn::Asinh, x),
        UnaryOp::Acosh => Expr::un(UFn::Acosh, x),
        UnaryOp::Atanh => Expr::un(UFn::Atanh, x),
        UnaryOp::BitwiseNot => Expr::un(UFn::BitNot, x),
        UnaryOp::Softsign => Expr::div(x.clone(), Expr::add(k(1.0), Expr::un(UFn::Abs, x))),
        UnaryOp::Mish => {
            let sp = Expr::un(UFn::Log, Expr::add(k(1.0), Expr::un(UFn::Exp, x.clone())));
            Expr::mul(x, Expr::un(UFn::Tanh, sp))
        }
        UnaryOp::Celu { alpha } => {
            let a = k(alpha as f64);
            let e = Expr::sub(Expr::un(UFn::Exp, Expr::div(x.clone(), a.clone())), k(1.0));
            Expr::add(Expr::max(x, k(0.0)), Expr::min(Expr::mul(a, e), k(0.0)))
        }
        UnaryOp::Selu { alpha, gamma } => {
            let neg = Expr::mul(
                k(alpha as f64),
                Expr::sub(Expr::un(UFn::Exp, x.clone()), k(1.0)),
            );
            let pos = Expr::bin(BFn::Gt, x.clone(), k(0.0));
            Expr::mul(k(gamma as f64), Expr::select(pos, x, neg))
        }
        UnaryOp::ThresholdedRelu { alpha } => {
            Expr::select(Expr::bin(BFn::Gt, x.clone(), k(alpha as f64)), x, k(0.0))
        }
        UnaryOp::Shrink { bias, lambd } => Expr::select(
            Expr::bin(BFn::Lt, x.clone(), k(-lambd as f64)),
            Expr::add(x.clone(), k(bias as f64)),
            Expr::select(
                Expr::bin(BFn::Gt, x.clone(), k(lambd as f64)),
                Expr::sub(x, k(bias as f64)),
                k(0.0),
            ),
        ),
        UnaryOp::IsInf { pos, neg } => {
            let f = |v: bool, inf: f64| {
                if v {
                    Expr::bin(BFn::Eq, x.clone(), k(inf))
                } else {
                    Expr::k(0.0, DType::Bool)
                }
            };
            Expr::bin(BFn::Or, f(pos, f64::INFINITY), f(neg, f64::NEG_INFINITY))
        }
        UnaryOp::Swish { alpha } => {
            Expr::mul(x.clone(), sigmoid(Expr::mul(k(alpha as f64), x), dt))
        }
        UnaryOp::Gelu { tanh: true } => {
            let inner = Expr::mul(
                k((2.0 / std::f64::consts::PI).sqrt()),
                Expr::add(
                    x.clone(),
                    Expr::mul(
                        k(0.044715),
                        Expr::mul(x.clone(), Expr::mul(x.clone(), x.clone())),
                    ),
                ),
            );
            Expr::mul(
                Expr::mul(k(0.5), x),
                Expr::add(k(1.0), Expr::un(UFn::Tanh, inner)),
            )
        }
    }
}

pub(crate) fn unary(l: &mut Lowerer, _node: &Node, u: UnaryOp) -> Result<TensorId> {
    let x = l.input(0)?;
    let dt = l.dtype(x);
    let (odt, _) = l.out_ty(0);
    l.map(
        &u.name().to_lowercase(),
        NestKind::Elementwise,
        &[x],
        odt,
        |v| unary_expr(u, v[0].clone(), dt),
    )
}

pub(crate) fn binary_expr(b: BinaryOp, x: Expr, y: Expr, dt: DType) -> Expr {
    let f = match b {
        BinaryOp::Add => BFn::Add,
        BinaryOp::Sub => BFn::Sub,
        BinaryOp::Mul => BFn::Mul,
        BinaryOp::Div => BFn::Div,
        BinaryOp::Pow => BFn::Pow,
        BinaryOp::Max => BFn::Max,
        BinaryOp::Min => BFn::Min,
        BinaryOp::Mod { fmod: true } => BFn::Rem,
        BinaryOp::Mod { fmod: false } => {
            // Python-style modulo: the result takes the divisor's sign.
            let r = Expr::bin(BFn::Rem, x, y.clone());
            let zero = Expr::k(0.0, dt);
            let fix = Expr::bin(
                BFn::And,
                Expr::bin(
                    BFn::Xor,
                    Expr::bin(BFn::Lt, r.clone(), zero.clone()),
                    Expr::bin(BFn::Lt, y.clone(), zero.clone()),
                ),
                Expr::un(UFn::Not, Expr::bin(BFn::Eq, r.clone(), zero)),
            );
            return Expr::select(fix, Expr::add(r.clone(), y), r);
        }
        BinaryOp::Equal => BFn::Eq,
        BinaryOp::Less => BFn::Lt,
        BinaryOp::LessOrEqual => BFn::Le,
        BinaryOp::Greater => BFn::Gt,
        BinaryOp::GreaterOrEqual => BFn::Ge,
        BinaryOp::And => BFn::And,
        BinaryOp::Or => BFn::Or,
        BinaryOp::Xor => BFn::Xor,
        BinaryOp::BitwiseAnd => BFn::BitAnd,
        BinaryOp::BitwiseOr => BFn::BitOr,
        BinaryOp::BitwiseXor => BFn::BitXor,
        BinaryOp::BitShift { left: true } => BFn::Shl,
        BinaryOp::BitShift { left: false } => BFn::Shr,
    };
    Expr::bin(f, x, y)
}

pub(crate) fn binary(l: &mut Lowerer, node: &Node, b: BinaryOp) -> Result<TensorId> {
    let x = l.input(binary::A)?;
    let y = l.input(binary::B)?;
    let dt = l.dtype(x);
    let (odt, _) = l.out_ty(0);
    // x^2 as x*x: Torch-MLIR's `pow.Tensor_Scalar` with exponent 2 (and `square`).
    if b == BinaryOp::Pow && l.scalar(y) == Some(2.0) {
        return l.map("square", NestKind::Elementwise, &[x], odt, |v| {
            Expr::mul(v[0].clone(), v[0].clone())
        });
    }
    let ydt = l.dtype(y);
    let _ = node;
    l.map(
        &b.name().to_lowercase(),
        NestKind::Elementwise,
        &[x, y],
        odt,
        |v| {
            let yv = if ydt != dt {
                Expr::cast(dt, v[1].clone())
            } else {
                v[1].clone()
            };
            binary_expr(b, v[0].clone(), yv, dt)
        },
    )
}

pub(crate) fn where_(l: &mut Lowerer, _node: &Node) -> Result<TensorId> {
    let c = l.input(where_op::CONDITION)?;
    let x = l.input(where_op::X)?;
    let y = l.input(where_op::Y)?;
    let (odt, _) = l.out_ty(0);
    l.map("where", NestKind::Elementwise, &[c, x, y], odt, |v| {
        Expr::select(v[0].clone(), v[1].clone(), v[2].clone())
    })
}

pub(crate) fn clip(
    l: &mut Lowerer,
    _node: &Node,
    min: Option<f32>,
    max: Option<f32>,
) -> Result<TensorId> {
    let x = l.input(0)?;
    let dt = l.dtype(x);
    l.map("clip", NestKind::Elementwise, &[x], dt, |v| {
        let mut e = v[0].clone();
        if let Some(lo) = min {
            e = Expr::max(e, Expr::k(lo as f64, dt));
        }
        if let Some(hi) = max {
            e = Expr::min(e, Expr::k(hi as f64, dt));
        }
        e
    })
}

pub(crate) fn cast(l: &mut Lowerer, _node: &Node, to: DType) -> Result<TensorId> {
    let x = l.input(0)?;
    l.map("cast", NestKind::Elementwise, &[x], to, |v| {
        Expr::cast(to, v[0].clone())
    })
}

/// Materialize `x` as a contiguous copy (used when a view cannot express a reshape).
pub(crate) fn copy(l: &mut Lowerer, x: TensorId, label: &str) -> Result<TensorId> {
    let dt = l.dtype(x);
    l.map(label, NestKind::Copy, &[x], dt, |v| v[0].clone())
}
