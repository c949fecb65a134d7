//! Elementwise ops: unary math and activations, binary arithmetic/comparison/logic,
//! variadic Max/Min/Sum/Mean (chains of binary nodes), Where, Clip, Cast.

use super::{Converter, Ctx, MS, NodeIn};
use crate::error::Result;
use crate::tensor::dtype_from_onnx;
use pimkit_ir::{BinaryOp, DType, E8M0Round, Op, Tensor, UnaryOp};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    for op in [
        "Relu",
        "Sigmoid",
        "Tanh",
        "Exp",
        "Log",
        "Sqrt",
        "Neg",
        "Abs",
        "Reciprocal",
        "Erf",
        "Floor",
        "Ceil",
        "Round",
        "Sign",
        "Sin",
        "Cos",
        "Not",
        "Softplus",
        "HardSigmoid",
        "HardSwish",
        "LeakyRelu",
        "Elu",
        "Gelu",
        "IsNaN",
        "Acos",
        "Acosh",
        "Asin",
        "Asinh",
        "Atan",
        "Atanh",
        "Cosh",
        "Sinh",
        "Tan",
        "Softsign",
        "Mish",
        "Celu",
        "Selu",
        "ThresholdedRelu",
        "Shrink",
        "IsInf",
        "BitwiseNot",
        "Swish",
    ] {
        r.insert(("", op), unary);
    }
    r.insert((MS, "Gelu"), unary);
    for op in [
        "Add",
        "Sub",
        "Mul",
        "Div",
        "Pow",
        "Mod",
        "Equal",
        "Less",
        "LessOrEqual",
        "Greater",
        "GreaterOrEqual",
        "And",
        "Or",
        "Xor",
        "BitwiseAnd",
        "BitwiseOr",
        "BitwiseXor",
        "BitShift",
    ] {
        r.insert(("", op), binary);
    }
    for op in ["Max", "Min", "Sum", "Mean"] {
        r.insert(("", op), variadic);
    }
    r.insert(("", "Where"), where_);
    r.insert(("", "Clip"), clip);
    r.insert(("", "Cast"), cast);
    r.insert(("", "CastLike"), cast);
}

fn unary(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let u = match n.op_type {
        "Relu" => UnaryOp::Relu,
        "Sigmoid" => UnaryOp::Sigmoid,
        "Tanh" => UnaryOp::Tanh,
        "Exp" => UnaryOp::Exp,
        "Log" => UnaryOp::Log,
        "Sqrt" => UnaryOp::Sqrt,
        "Neg" => UnaryOp::Neg,
        "Abs" => UnaryOp::Abs,
        "Reciprocal" => UnaryOp::Reciprocal,
        "Erf" => UnaryOp::Erf,
        "Floor" => UnaryOp::Floor,
        "Ceil" => UnaryOp::Ceil,
        "Round" => UnaryOp::Round,
        "Sign" => UnaryOp::Sign,
        "Sin" => UnaryOp::Sin,
        "Cos" => UnaryOp::Cos,
        "Not" => UnaryOp::Not,
        "Softplus" => UnaryOp::Softplus,
        "HardSwish" => UnaryOp::HardSwish,
        "IsNaN" => UnaryOp::IsNaN,
        "HardSigmoid" => UnaryOp::HardSigmoid {
            alpha: a.float("alpha", 0.2)?,
            beta: a.float("beta", 0.5)?,
        },
        "LeakyRelu" => UnaryOp::LeakyRelu {
            alpha: a.float("alpha", 0.01)?,
        },
        "Elu" => UnaryOp::Elu {
            alpha: a.float("alpha", 1.0)?,
        },
        "Gelu" => {
            let tanh = match a.string("approximate")?.as_deref() {
                None | Some("none") => false,
                Some("tanh") => true,
                Some(o) => {
                    return Err(a.err("approximate", format!("'{o}' is not 'none' or 'tanh'")));
                }
            };
            UnaryOp::Gelu { tanh }
        }
        "Acos" => UnaryOp::Acos,
        "Acosh" => UnaryOp::Acosh,
        "Asin" => UnaryOp::Asin,
        "Asinh" => UnaryOp::Asinh,
        "Atan" => UnaryOp::Atan,
        "Atanh" => UnaryOp::Atanh,
        "Cosh" => UnaryOp::Cosh,
        "Sinh" => UnaryOp::Sinh,
        "Tan" => UnaryOp::Tan,
        "Softsign" => UnaryOp::Softsign,
        "Mish" => UnaryOp::Mish,
        "BitwiseNot" => UnaryOp::BitwiseNot,
        "Celu" => UnaryOp::Celu {
            alpha: a.float("alpha", 1.0)?,
        },
        "Selu" => UnaryOp::Selu {
            alpha: a.float("alpha", 1.673_263_2)?,
            gamma: a.float("gamma", 1.050_701)?,
        },
        "ThresholdedRelu" => UnaryOp::ThresholdedRelu {
            alpha: a.float("alpha", 1.0)?,
        },
        "Shrink" => UnaryOp::Shrink {
            bias: a.float("bias", 0.0)?,
            lambd: a.float("lambd", 0.5)?,
        },
        "IsInf" => UnaryOp::IsInf {
            pos: a.bool("detect_positive", true)?,
            neg: a.bool("detect_negative", true)?,
        },
        "Swish" => UnaryOp::Swish {
            alpha: a.float("alpha", 1.0)?,
        },
        other => return Err(ctx.err(n, format!("no unary mapping for {other}"))),
    };
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Unary(u), vec![Some(x)])?;
    Ok(())
}

fn binary_op(ctx: &Ctx, n: &NodeIn) -> Result<BinaryOp> {
    Ok(match n.op_type {
        "Add" | "Sum" | "Mean" => BinaryOp::Add,
        "Sub" => BinaryOp::Sub,
        "Mul" => BinaryOp::Mul,
        "Div" => BinaryOp::Div,
        "Pow" => BinaryOp::Pow,
        "Max" => BinaryOp::Max,
        "Min" => BinaryOp::Min,
        "Mod" => BinaryOp::Mod {
            fmod: n.attrs.bool("fmod", false)?,
        },
        "Equal" => BinaryOp::Equal,
        "Less" => BinaryOp::Less,
        "LessOrEqual" => BinaryOp::LessOrEqual,
        "Greater" => BinaryOp::Greater,
        "GreaterOrEqual" => BinaryOp::GreaterOrEqual,
        "And" => BinaryOp::And,
        "Or" => BinaryOp::Or,
        "Xor" => BinaryOp::Xor,
        "BitwiseAnd" => BinaryOp::BitwiseAnd,
        "BitwiseOr" => BinaryOp::BitwiseOr,
        "BitwiseXor" => BinaryOp::BitwiseXor,
        "BitShift" => BinaryOp::BitShift {
            left: match n.attrs.string("direction")?.as_deref() {
                Some("LEFT") => true,
                Some("RIGHT") => false,
                d => {
                    return Err(n
                        .attrs
                        .err("direction", format!("{d:?} is not LEFT or RIGHT")));
                }
            },
        },
        other => return Err(ctx.err(n, format!("no binary mapping for {other}"))),
    })
}

fn binary(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    // Opset < 7 broadcast with an explicit axis has no numpy equivalent.
    if n.opset < 7 && n.attrs.has("axis") && n.attrs.int("broadcast", 0)? == 1 {
        return Err(n.attrs.err(
            "axis",
            "legacy (opset < 7) axis-aligned broadcasting is not supported; re-export with opset >= 7",
        ));
    }
    let op = binary_op(ctx, n)?;
    let a = ctx.value(n, 0)?;
    let b = ctx.value(n, 1)?;
    ctx.emit(n, Op::Binary(op), vec![Some(a), Some(b)])?;
    Ok(())
}

/// Max/Min/Sum/Mean with any number of inputs: a left-to-right chain of binary nodes;
/// the last one carries the ONNX node and output name. Mean divides the sum by n.
fn variadic(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let ins: Vec<_> = (0..n.num_inputs())
        .map(|i| ctx.value(n, i))
        .collect::<Result<_>>()?;
    if ins.is_empty() {
        return Err(ctx.err(n, "needs at least one input"));
    }
    let op = binary_op(ctx, n)?;
    let mean = n.op_type == "Mean";
    if ins.len() == 1 && !mean {
        ctx.emit(n, Op::Identity, vec![Some(ins[0])])?;
        return Ok(());
    }
    let last_binary = if mean { ins.len() } else { ins.len() - 1 };
    let mut acc = ins[0];
    for (k, &v) in ins.iter().enumerate().skip(1) {
        if k == last_binary {
            ctx.emit(n, Op::Binary(op), vec![Some(acc), Some(v)])?;
            return Ok(());
        }
        acc = ctx.emit_tmp(
            n,
            &format!("{}{k}", op.name().to_lowercase()),
            Op::Binary(op),
            &[acc, v],
        )?;
    }
    // Mean: acc holds the sum; divide by the input count in the input's dtype.
    let dt = ctx.g.ty(acc).dtype;
    let count = Tensor::from_f64_as(dt, vec![], &[ins.len() as f64]);
    let c = ctx.new_const(format!("{}/count", n.name), count);
    ctx.emit(n, Op::Binary(BinaryOp::Div), vec![Some(acc), Some(c)])?;
    Ok(())
}

fn where_(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let ins = (0..3)
        .map(|i| ctx.value(n, i).map(Some))
        .collect::<Result<_>>()?;
    ctx.emit(n, Op::Where, ins)?;
    Ok(())
}

fn clip(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let (min, max) = if n.opset < 11 {
        let a = n.attrs;
        (
            a.has("min").then(|| a.float("min", 0.0)).transpose()?,
            a.has("max").then(|| a.float("max", 0.0)).transpose()?,
        )
    } else {
        let scalar = |t: Option<Tensor>| t.and_then(|t| t.to_f64_vec().first().map(|&v| v as f32));
        (
            scalar(ctx.const_input(n, 1, "min bound")?),
            scalar(ctx.const_input(n, 2, "max bound")?),
        )
    };
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Clip { min, max }, vec![Some(x)])?;
    Ok(())
}

fn cast(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let to: DType = if n.op_type == "CastLike" {
        ctx.ty(n, 1)?.dtype
    } else {
        let code = n
            .attrs
            .opt_int("to")?
            .ok_or_else(|| n.attrs.err("to", "is required"))?;
        dtype_from_onnx(code as i32, &format!("node '{}' attribute 'to'", n.name))
            .map_err(|e| n.attrs.err("to", e.to_string()))?
    };
    let saturate = n.attrs.bool("saturate", true)?;
    let e8m0_round = match n.attrs.string("round_mode")?.as_deref().unwrap_or("up") {
        "up" => E8M0Round::Up,
        "down" => E8M0Round::Down,
        "nearest" => E8M0Round::Nearest,
        m => {
            return Err(n
                .attrs
                .err("round_mode", format!("'{m}' is not up, down or nearest")));
        }
    };
    let x = ctx.value(n, 0)?;
    ctx.emit(
        n,
        Op::Cast {
            to,
            saturate,
            e8m0_round,
        },
        vec![Some(x)],
    )?;
    Ok(())
}
