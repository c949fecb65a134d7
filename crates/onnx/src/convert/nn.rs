//! Neural-network layers: Conv, pooling, Gemm/MatMul, normalizations, softmax, and
//! the pass-through ops (Identity, Dropout).

use super::window::window;
use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use pimkit_ir::{ConvAttrs, Op, PoolAttrs, PoolKind};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "Conv"), conv);
    r.insert(("", "MaxPool"), pool);
    r.insert(("", "AveragePool"), pool);
    r.insert(("", "GlobalAveragePool"), global_pool);
    r.insert(("", "GlobalMaxPool"), global_pool);
    r.insert(("", "Gemm"), gemm);
    r.insert(("", "MatMul"), matmul);
    r.insert(("", "BatchNormalization"), batchnorm);
    r.insert(("", "LayerNormalization"), layernorm);
    r.insert(("", "Softmax"), softmax);
    r.insert(("", "LogSoftmax"), softmax);
    r.insert(("", "Identity"), identity);
    r.insert(("", "Dropout"), identity);
}

/// Convolution attributes for Conv, QLinearConv and ConvInteger (`w_shape` = weights).
pub(super) fn conv_attrs(
    ctx: &Ctx,
    n: &NodeIn,
    x_shape: &[usize],
    w_shape: &[usize],
) -> Result<ConvAttrs> {
    let a = n.attrs;
    if w_shape.len() < 3 || x_shape.len() != w_shape.len() {
        return Err(ctx.err(
            n,
            format!(
                "input shape {x_shape:?} and weight shape {w_shape:?} do not form a convolution"
            ),
        ));
    }
    let kernel = a
        .usize_list("kernel_shape")?
        .unwrap_or_else(|| w_shape[2..].to_vec());
    let (strides, dilations, pads) = window(&a, kernel.clone(), &x_shape[2..])?;
    let group = a.int("group", 1)?;
    let group = crate::attr::to_dim(group)
        .filter(|&g| g > 0)
        .ok_or_else(|| a.err("group", format!("{group} is not a positive group count")))?;
    Ok(ConvAttrs {
        kernel,
        strides,
        pads,
        dilations,
        group,
    })
}

fn conv(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let x = ctx.ty(n, 0)?;
    let w = ctx.ty(n, 1)?;
    let attrs = conv_attrs(ctx, n, &x.shape, &w.shape)?;
    let ins = vec![
        ctx.opt_value(n, 0)?,
        ctx.opt_value(n, 1)?,
        ctx.opt_value(n, 2)?,
    ];
    ctx.emit(n, Op::Conv(attrs), ins)?;
    Ok(())
}

fn pool(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let x = ctx.ty(n, 0)?;
    let kind = if n.op_type == "MaxPool" {
        PoolKind::Max
    } else {
        PoolKind::Avg
    };
    let kernel = a
        .usize_list("kernel_shape")?
        .ok_or_else(|| a.err("kernel_shape", "is required"))?;
    if x.rank() < 2 {
        return Err(ctx.err(
            n,
            format!("input has rank {}, expected N, C, spatial", x.rank()),
        ));
    }
    let (strides, dilations, pads) = window(&a, kernel.clone(), &x.shape[2..])?;
    let p = PoolAttrs {
        kind,
        kernel,
        strides,
        pads,
        dilations,
        ceil_mode: a.bool("ceil_mode", false)?,
        count_include_pad: kind == PoolKind::Avg && a.bool("count_include_pad", false)?,
    };
    let xv = ctx.value(n, 0)?;
    if kind == PoolKind::Max && n.outputs.get(1).is_some_and(|o| ctx.used.contains(*o)) {
        return super::index::max_pool_with_indices(ctx, n, p, xv);
    }
    ctx.emit(n, Op::Pool(p), vec![Some(xv)])?;
    Ok(())
}

fn global_pool(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let kind = if n.op_type == "GlobalMaxPool" {
        PoolKind::Max
    } else {
        PoolKind::Avg
    };
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::GlobalPool(kind), vec![Some(x)])?;
    Ok(())
}

fn gemm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let op = Op::Gemm {
        alpha: a.float("alpha", 1.0)?,
        beta: a.float("beta", 1.0)?,
        trans_a: a.bool("transA", false)?,
        trans_b: a.bool("transB", false)?,
    };
    let ins = vec![
        ctx.opt_value(n, 0)?,
        ctx.opt_value(n, 1)?,
        ctx.opt_value(n, 2)?,
    ];
    ctx.emit(n, op, ins)?;
    Ok(())
}

fn matmul(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let ins = vec![Some(ctx.value(n, 0)?), Some(ctx.value(n, 1)?)];
    ctx.emit(n, Op::MatMul, ins)?;
    Ok(())
}

fn batchnorm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    if a.int("training_mode", 0)? != 0 {
        return Err(a.err("training_mode", "only inference (0) is supported"));
    }
    if n.opset < 9 && a.int("spatial", 1)? != 1 {
        return Err(a.err("spatial", "only spatial=1 is supported"));
    }
    ctx.require_unused(n, 1, "training statistics")?;
    let ins = (0..5)
        .map(|i| ctx.value(n, i).map(Some))
        .collect::<Result<_>>()?;
    ctx.emit(
        n,
        Op::BatchNorm {
            epsilon: a.float("epsilon", 1e-5)?,
        },
        ins,
    )?;
    Ok(())
}

fn layernorm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let x = ctx.ty(n, 0)?;
    let ax = a.int("axis", -1)?;
    let axis = norm_axis(ax, x.rank())
        .ok_or_else(|| a.err("axis", format!("{ax} out of range for rank {}", x.rank())))?;
    ctx.require_unused(n, 1, "mean / inverse std-dev")?;
    let ins = vec![
        ctx.opt_value(n, 0)?,
        Some(ctx.value(n, 1)?),
        ctx.opt_value(n, 2)?,
    ];
    ctx.emit(
        n,
        Op::LayerNorm {
            axis,
            epsilon: a.float("epsilon", 1e-5)?,
        },
        ins,
    )?;
    Ok(())
}

fn softmax(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let x = ctx.ty(n, 0)?;
    let default = if n.opset < 13 { 1 } else { -1 };
    let ax = a.int("axis", default)?;
    let axis = norm_axis(ax, x.rank())
        .ok_or_else(|| a.err("axis", format!("{ax} out of range for rank {}", x.rank())))?;
    // Before opset 13 the input is coerced to 2-D at `axis`: that equals a softmax over
    // one axis only when every later axis is trivial.
    if n.opset < 13
        && x.shape
            .get(axis + 1..)
            .unwrap_or(&[])
            .iter()
            .any(|&d| d != 1)
    {
        return Err(a.err(
            "axis",
            format!(
                "opset {} coerces the input to 2-D at axis {axis}; pimkit supports this only \
                 when axis is the last one (shape {:?}); re-export with opset >= 13",
                n.opset, x.shape
            ),
        ));
    }
    let op = if n.op_type == "Softmax" {
        Op::Softmax { axis }
    } else {
        Op::LogSoftmax { axis }
    };
    let xv = ctx.value(n, 0)?;
    ctx.emit(n, op, vec![Some(xv)])?;
    Ok(())
}

/// Identity and Dropout (inference: identity; its mask output must be unused).
fn identity(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    if n.op_type == "Dropout" {
        ctx.require_unused(n, 1, "dropout mask")?;
    }
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Identity, vec![Some(x)])?;
    Ok(())
}
