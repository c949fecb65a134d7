//! Ordering ops (native IR ops): TopK, ArgMin, CumSum, CumProd, and the data-dependent
//! Unique and NonMaxSuppression (constant inputs only: they then fold at import).

use super::index::{axis_attr, data_dependent_input, emit_counted};
use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use pimkit_ir::Op;
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "TopK"), topk);
    r.insert(("", "ArgMin"), argmin);
    r.insert(("", "CumSum"), cumulative);
    r.insert(("", "CumProd"), cumulative);
    r.insert(("", "Unique"), unique);
    r.insert(("", "NonMaxSuppression"), nms);
}

fn topk(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let axis = axis_attr(ctx, n, -1)?;
    let k = if n.opset < 10 {
        a.opt_int("k")?
    } else {
        match ctx.const_ints(n, 1, "k")?.as_deref() {
            Some([k]) => Some(*k),
            _ => None,
        }
    }
    .and_then(crate::attr::to_dim)
    .ok_or_else(|| ctx.err(n, "k must be one non-negative number"))?;
    let op = Op::TopK {
        axis,
        k,
        largest: a.bool("largest", true)?,
        sorted: a.bool("sorted", true)?,
    };
    let x = ctx.value(n, 0)?;
    ctx.emit(n, op, vec![Some(x)])?;
    Ok(())
}

fn argmin(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let axis = axis_attr(ctx, n, 0)?;
    let x = ctx.value(n, 0)?;
    ctx.emit(
        n,
        Op::ArgMin {
            axis,
            keepdims: a.bool("keepdims", true)?,
            select_last: a.bool("select_last_index", false)?,
        },
        vec![Some(x)],
    )?;
    Ok(())
}

fn cumulative(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let r = ctx.ty(n, 0)?.rank();
    let ax = match ctx.const_ints(n, 1, "axis")?.as_deref() {
        Some([v]) => *v,
        _ => return Err(ctx.err(n, "the axis input must be one integer")),
    };
    let axis = norm_axis(ax, r)
        .filter(|&v| v < r)
        .ok_or_else(|| ctx.err(n, format!("axis {ax} out of range for rank {r}")))?;
    let op = Op::Cumulative {
        axis,
        exclusive: a.bool("exclusive", false)?,
        reverse: a.bool("reverse", false)?,
        prod: n.op_type == "CumProd",
    };
    let x = ctx.value(n, 0)?;
    ctx.emit(n, op, vec![Some(x)])?;
    Ok(())
}

fn unique(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let axis = match n.attrs.opt_int("axis")? {
        Some(_) => Some(axis_attr(ctx, n, 0)?),
        None => None,
    };
    let sorted = n.attrs.bool("sorted", true)?;
    let x = data_dependent_input(ctx, n, 0, "input")?;
    emit_counted(
        ctx,
        n,
        |count| Op::Unique {
            axis,
            sorted,
            count,
        },
        &[x],
    )
}

fn nms(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let center_point_box = n.attrs.bool("center_point_box", false)?;
    let boxes = data_dependent_input(ctx, n, 0, "boxes")?;
    let scores = data_dependent_input(ctx, n, 1, "scores")?;
    let mut consts = vec![boxes, scores];
    for (i, what) in [
        (2, "max_output_boxes_per_class"),
        (3, "iou_threshold"),
        (4, "score_threshold"),
    ] {
        consts.push(data_dependent_input(ctx, n, i, what)?);
    }
    emit_counted(
        ctx,
        n,
        |count| Op::NonMaxSuppression {
            center_point_box,
            count,
        },
        &consts,
    )
}
