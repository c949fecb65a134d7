//! NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, decomposed as the ONNX
//! reference computes them: loss[n, d...] = -input[n, target[n, d...], d...] (a
//! GatherElements on the class axis), times weight[target] when a weight is given, 0
//! where target == ignore_index; reduction none, sum, or mean (the weighted mean
//! divides by the sum of the applied weights). SoftmaxCrossEntropyLoss applies
//! LogSoftmax over the class axis first; that is its optional log_prob output.

use super::dec::Dec;
use super::{Converter, Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, ReduceKind, UnaryOp, ValueId};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "NegativeLogLikelihoodLoss"), loss);
    r.insert(("", "SoftmaxCrossEntropyLoss"), loss);
}

fn loss(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let reduction = a.string("reduction")?.unwrap_or_else(|| "mean".into());
    if !matches!(reduction.as_str(), "none" | "sum" | "mean") {
        return Err(a.err(
            "reduction",
            format!("'{reduction}' is not none, sum or mean"),
        ));
    }
    let ignore = a.opt_int("ignore_index")?;
    let mut d = Dec::new(ctx, n);
    let mut x = d.ctx.value(n, 0)?;
    let target = d.ctx.value(n, 1)?;
    let weight = d.ctx.opt_value(n, 2)?;
    let xs = d.shape(x);
    let ts = d.shape(target);
    let dt = d.dtype(x);
    if xs.len() < 2 || ts.len() + 1 != xs.len() || ts[0] != xs[0] || ts[1..] != xs[2..] {
        return Err(d.ctx.err(
            n,
            format!("input {xs:?} and target {ts:?} are not [N, C, d...] and [N, d...]"),
        ));
    }
    if !matches!(d.dtype(target), DType::I64 | DType::I32) {
        return Err(d.ctx.err(n, "target must be i64 or i32"));
    }
    if n.op_type == "SoftmaxCrossEntropyLoss" {
        x = if d.wants(1) {
            d.out(1, Op::LogSoftmax { axis: 1 }, &[x])?
        } else {
            d.op(Op::LogSoftmax { axis: 1 }, &[x])?
        };
    }
    // Ignored positions read class 0 (any valid class) and get weight 0.
    let (t, valid) = match ignore {
        Some(ig) => {
            let igv = d.konst(pimkit_ir::Tensor::from_f64_as(
                d.dtype(target),
                vec![],
                &[ig as f64],
            ));
            let is_ig = d.bin(B::Equal, target, igv)?;
            let valid = d.unary(UnaryOp::Not, is_ig)?;
            let zero = d.konst(pimkit_ir::Tensor::from_f64_as(
                d.dtype(target),
                vec![],
                &[0.0],
            ));
            (d.op(Op::Where, &[valid, target, zero])?, Some(valid))
        }
        None => (target, None),
    };
    let mut us = ts.clone();
    us.insert(1, 1);
    let tu = d.reshape(t, us)?;
    let picked = d.op(Op::GatherElements { axis: 1 }, &[x, tu])?;
    let picked = d.reshape(picked, ts.clone())?;
    let mut l = d.unary(UnaryOp::Neg, picked)?;
    // The per-position weight: weight[target], 0 where ignored.
    let w: Option<ValueId> = match (weight, valid) {
        (Some(wv), _) => {
            let g = d.op(Op::Gather { axis: 0 }, &[wv, t])?;
            Some(match valid {
                Some(v) => {
                    let zero = d.scalar(dt, 0.0);
                    d.op(Op::Where, &[v, g, zero])?
                }
                None => g,
            })
        }
        (None, Some(v)) => Some(d.cast(v, dt)?),
        (None, None) => None,
    };
    if let Some(w) = w {
        l = d.bin(B::Mul, l, w)?;
    }
    let all: Vec<usize> = (0..ts.len()).collect();
    match (reduction.as_str(), w) {
        ("none", _) => d.out(0, Op::Identity, &[l])?,
        ("sum", _) => d.out(
            0,
            Op::Reduce {
                kind: ReduceKind::Sum,
                axes: all,
                keepdims: false,
            },
            &[l],
        )?,
        (_, Some(w)) => {
            let s = d.reduce(ReduceKind::Sum, l, all.clone(), false)?;
            let ws = d.reduce(ReduceKind::Sum, w, all, false)?;
            d.out(0, Op::Binary(B::Div), &[s, ws])?
        }
        (_, None) => d.out(
            0,
            Op::Reduce {
                kind: ReduceKind::Mean,
                axes: all,
                keepdims: false,
            },
            &[l],
        )?,
    };
    Ok(())
}
