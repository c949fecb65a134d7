//! Reductions (axes from the attribute or, from opset 13 for ReduceSum and 18 for the
//! others, from a constant input) and ArgMax.

use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use pimkit_ir::{Op, ReduceKind};
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
    let a = n.attrs;
    let r = ctx.ty(n, 0)?.rank();
    let input_from = if kind == ReduceKind::Sum { 13 } else { 18 };
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
    let keepdims = a.bool("keepdims", true)?;
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
