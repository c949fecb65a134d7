//! Reductions (axes from the attribute or, from opset 13 for ReduceSum and 18 for the
//! others, from a constant input), ArgMax and ArgMin. ReduceL1, ReduceLogSum and
//! ReduceLogSumExp are decomposed (Abs + ReduceSum, ReduceSum + Log, and the max-shifted
//! log-sum-exp).

use super::dec::Dec;
use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use pimkit_ir::{BinaryOp, Op, ReduceKind, UnaryOp};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    for op in [
        "ReduceMean",
        "ReduceSum",
        "ReduceMax",
        "ReduceMin",
        "ReduceProd",
        "ReduceSumSquare",
        "ReduceL2",
    ] {
        r.insert(("", op), reduce);
    }
    r.insert(("", "ArgMax"), argmax);
    for op in ["ReduceL1", "ReduceLogSum", "ReduceLogSumExp"] {
        r.insert(("", op), reduce_composite);
    }
}

/// Resolved axes (sorted, deduplicated; empty = identity) and keepdims of a reduction
/// whose axes come from input 1 from opset `input_from` on.
fn reduce_params(ctx: &mut Ctx, n: &NodeIn, input_from: i64) -> Result<(Vec<usize>, bool)> {
    let a = n.attrs;
    let r = ctx.ty(n, 0)?.rank();
    let given = if n.opset < input_from {
        a.ints("axes")?
    } else {
        ctx.const_ints(n, 1, "reduction axes")?
    };
    let noop = a.bool("noop_with_empty_axes", false)?;
    let mut axes: Vec<usize> = match given {
        Some(ax) if !ax.is_empty() => ax
            .iter()
            .map(|&x| {
                norm_axis(x, r)
                    .filter(|&v| v < r)
                    .ok_or_else(|| ctx.err(n, format!("axis {x} out of range for rank {r}")))
            })
            .collect::<Result<_>>()?,
        _ if noop => Vec::new(),
        _ => (0..r).collect(),
    };
    axes.sort_unstable();
    axes.dedup();
    Ok((axes, a.bool("keepdims", true)?))
}

fn reduce_composite(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let (axes, keepdims) = reduce_params(ctx, n, 18)?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    match n.op_type {
        "ReduceL1" => {
            let a = d.unary(UnaryOp::Abs, x)?;
            d.out(0, reduce_op(ReduceKind::Sum, axes, keepdims), &[a])?;
        }
        "ReduceLogSum" => {
            let s = d.reduce(ReduceKind::Sum, x, axes, keepdims)?;
            d.out(0, Op::Unary(UnaryOp::Log), &[s])?;
        }
        _ => {
            // log(sum(exp(x - max))) + max, with the max kept as a broadcastable shape.
            let m = d.reduce(ReduceKind::Max, x, axes.clone(), true)?;
            let sh = d.bin(BinaryOp::Sub, x, m)?;
            let e = d.unary(UnaryOp::Exp, sh)?;
            let s = d.reduce(ReduceKind::Sum, e, axes, keepdims)?;
            let l = d.unary(UnaryOp::Log, s)?;
            let out_shape = d.shape(l);
            let m = d.reshape(m, out_shape)?;
            d.out(0, Op::Binary(BinaryOp::Add), &[l, m])?;
        }
    }
    Ok(())
}

fn reduce_op(kind: ReduceKind, axes: Vec<usize>, keepdims: bool) -> Op {
    Op::Reduce {
        kind,
        axes,
        keepdims,
    }
}

fn reduce(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let kind = match n.op_type {
        "ReduceMean" => ReduceKind::Mean,
        "ReduceSum" => ReduceKind::Sum,
        "ReduceMax" => ReduceKind::Max,
        "ReduceMin" => ReduceKind::Min,
        "ReduceProd" => ReduceKind::Prod,
        "ReduceSumSquare" => ReduceKind::SumSquare,
        _ => ReduceKind::L2,
    };
    let input_from = if kind == ReduceKind::Sum { 13 } else { 18 };
    let (axes, keepdims) = reduce_params(ctx, n, input_from)?;
    let x = ctx.value(n, 0)?;
    ctx.emit(
        n,
        Op::Reduce {
            kind,
            axes,
            keepdims,
        },
        vec![Some(x)],
    )?;
    Ok(())
}

fn argmax(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let r = ctx.ty(n, 0)?.rank();
    let ax = a.int("axis", 0)?;
    let axis = norm_axis(ax, r)
        .filter(|&v| v < r)
        .ok_or_else(|| a.err("axis", format!("{ax} out of range for rank {r}")))?;
    let x = ctx.value(n, 0)?;
    ctx.emit(
        n,
        Op::ArgMax {
            axis,
            keepdims: a.bool("keepdims", true)?,
            select_last: a.bool("select_last_index", false)?,
        },
        vec![Some(x)],
    )?;
    Ok(())
}
