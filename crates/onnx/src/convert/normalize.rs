//! Normalizations decomposed into existing IR ops, so that every engine runs them:
//! LRN (a channel-window AveragePool of x²), InstanceNormalization and
//! GroupNormalization (LayerNorm over the spatial / group axes, then the per-channel
//! affine), RMSNormalization and MeanVarianceNormalization (their ONNX function bodies).

use super::dec::Dec;
use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, DType, Op, PoolAttrs, PoolKind, ReduceKind, Tensor, UnaryOp};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "LRN"), lrn);
    r.insert(("", "InstanceNormalization"), instance_norm);
    r.insert(("", "GroupNormalization"), group_norm);
    r.insert(("", "RMSNormalization"), rms_norm);
    r.insert(("", "MeanVarianceNormalization"), mvn);
}

/// y = x / (bias + alpha/size · Σ x²)^beta, the sum over a window of `size` channels
/// ([c - floor((size-1)/2), c + ceil((size-1)/2)]). The window sum is an AveragePool
/// (count_include_pad, so it divides by `size` exactly) over x² viewed as [N, 1, C, rest].
fn lrn(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let size = a
        .opt_int("size")?
        .filter(|&s| s > 0)
        .ok_or_else(|| a.err("size", "is required and must be positive"))? as usize;
    let (alpha, beta, bias) = (
        a.float("alpha", 1e-4)?,
        a.float("beta", 0.75)?,
        a.float("bias", 1.0)?,
    );
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let ty = d.ty(x);
    if ty.rank() < 2 || !ty.dtype.is_float() {
        return Err(d.ctx.err(
            n,
            format!("input must be a float [N, C, ...] tensor, got {ty}"),
        ));
    }
    let (nb, c) = (ty.shape[0], ty.shape[1]);
    let rest: usize = ty.shape[2..].iter().product();
    let sq = d.bin(B::Mul, x, x)?;
    let sq = d.reshape(sq, vec![nb, 1, c, rest])?;
    let pool = PoolAttrs {
        kind: PoolKind::Avg,
        kernel: vec![size, 1],
        strides: vec![1, 1],
        pads: vec![(size - 1) / 2, 0, size / 2, 0],
        dilations: vec![1, 1],
        ceil_mode: false,
        count_include_pad: true,
    };
    let avg = d.op(Op::Pool(pool), &[sq])?;
    let avg = d.reshape(avg, ty.shape.clone())?;
    let (alpha, bias, beta) = (
        d.scalar(ty.dtype, alpha as f64),
        d.scalar(ty.dtype, bias as f64),
        d.scalar(ty.dtype, beta as f64),
    );
    let s = d.bin(B::Mul, avg, alpha)?;
    let s = d.bin(B::Add, s, bias)?;
    let s = d.bin(B::Pow, s, beta)?;
    d.out(0, Op::Binary(B::Div), &[x, s])?;
    Ok(())
}

/// `x` normalized over axes [axis..rank) without an affine part (LayerNorm with scale 1).
fn plain_layer_norm(
    d: &mut Dec,
    x: pimkit_ir::ValueId,
    axis: usize,
    eps: f32,
) -> Result<pimkit_ir::ValueId> {
    let one = d.konst(Tensor::from_f64_as(d.dtype(x), vec![1], &[1.0]));
    d.op(Op::LayerNorm { axis, epsilon: eps }, &[x, one])
}

/// `v` ([C] or [G]) reshaped to broadcast over axis 1 of a rank-`rank` tensor.
fn per_channel(d: &mut Dec, v: pimkit_ir::ValueId, rank: usize) -> Result<pimkit_ir::ValueId> {
    let len = d.ty(v).numel();
    let mut shape = vec![len];
    shape.extend(std::iter::repeat_n(1, rank.saturating_sub(2)));
    d.reshape(v, shape)
}

fn instance_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let eps = n.attrs.float("epsilon", 1e-5)?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let (scale, bias) = (d.ctx.value(n, 1)?, d.ctx.value(n, 2)?);
    let ty = d.ty(x);
    if ty.rank() < 3 {
        return Err(d
            .ctx
            .err(n, format!("input must be [N, C, D1, ...], got {ty}")));
    }
    for (i, v) in [(1, scale), (2, bias)] {
        if d.ty(v).numel() != ty.shape[1] {
            return Err(d.ctx.err(
                n,
                format!(
                    "input {i} must hold one value per channel ({})",
                    ty.shape[1]
                ),
            ));
        }
    }
    let y = plain_layer_norm(&mut d, x, 2, eps)?;
    let s = per_channel(&mut d, scale, ty.rank())?;
    let b = per_channel(&mut d, bias, ty.rank())?;
    let y = d.bin(B::Mul, y, s)?;
    d.out(0, Op::Binary(B::Add), &[y, b])?;
    Ok(())
}

/// Opset 21: scale/bias per channel; opset 18: per group (applied before ungrouping).
fn group_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let eps = a.float("epsilon", 1e-5)?;
    let groups = a
        .opt_int("num_groups")?
        .filter(|&g| g > 0)
        .ok_or_else(|| a.err("num_groups", "is required and must be positive"))?
        as usize;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let (scale, bias) = (d.ctx.value(n, 1)?, d.ctx.value(n, 2)?);
    let ty = d.ty(x);
    if ty.rank() < 2 || !ty.shape[1].is_multiple_of(groups) {
        return Err(d.ctx.err(
            n,
            format!("input {ty} must be [N, C, ...] with C divisible by num_groups {groups}"),
        ));
    }
    let (nb, c) = (ty.shape[0], ty.shape[1]);
    let rest = ty.numel() / (nb * groups).max(1);
    let per_group = d.ty(scale).numel() == groups && groups != c;
    let g = d.reshape(x, vec![nb, groups, rest])?;
    let mut y = plain_layer_norm(&mut d, g, 2, eps)?;
    if per_group {
        let s = d.reshape(scale, vec![groups, 1])?;
        let b = d.reshape(bias, vec![groups, 1])?;
        y = d.bin(B::Mul, y, s)?;
        let y = d.bin(B::Add, y, b)?;
        d.out(
            0,
            Op::Reshape {
                shape: ty.shape.clone(),
            },
            &[y],
        )?;
        return Ok(());
    }
    if d.ty(scale).numel() != c || d.ty(bias).numel() != c {
        return Err(d.ctx.err(
            n,
            format!("scale and bias must hold {c} (or {groups}) values"),
        ));
    }
    let y = d.reshape(y, ty.shape.clone())?;
    let s = per_channel(&mut d, scale, ty.rank())?;
    let b = per_channel(&mut d, bias, ty.rank())?;
    let y = d.bin(B::Mul, y, s)?;
    d.out(0, Op::Binary(B::Add), &[y, b])?;
    Ok(())
}

/// y = x / sqrt(mean(x², axes [axis..)) + eps) · scale, computed in f32 for f16/bf16
/// inputs (stash_type 1, as the ONNX function body does). Also onnxruntime's
/// SimplifiedLayerNormalization (contrib/norm.rs), whose semantics are the same.
pub(super) fn rms_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let eps = a.float("epsilon", 1e-5)?;
    let stash_f32 = a.int("stash_type", 1)? == 1;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let scale = d.ctx.value(n, 1)?;
    let ty = d.ty(x);
    let ax = a.int("axis", -1)?;
    let axis = norm_axis(ax, ty.rank())
        .filter(|&v| v < ty.rank())
        .ok_or_else(|| a.err("axis", format!("{ax} out of range for rank {}", ty.rank())))?;
    let y = rms(&mut d, x, axis, eps, stash_f32)?;
    d.out(0, Op::Binary(B::Mul), &[y, scale])?;
    Ok(())
}

/// x / sqrt(mean(x², axes [axis..)) + eps), in f32 for f16/bf16 inputs when `stash_f32`
/// (the ONNX function body's stash_type; onnxruntime's kernels accumulate in float too),
/// cast back to x's type.
pub(super) fn rms(
    d: &mut Dec,
    x: pimkit_ir::ValueId,
    axis: usize,
    eps: f32,
    stash_f32: bool,
) -> Result<pimkit_ir::ValueId> {
    let ty = d.ty(x);
    let work = if stash_f32 && matches!(ty.dtype, DType::F16 | DType::Bf16) {
        DType::F32
    } else {
        ty.dtype
    };
    let xs = d.cast(x, work)?;
    let sq = d.bin(B::Mul, xs, xs)?;
    let m = d.reduce(ReduceKind::Mean, sq, (axis..ty.rank()).collect(), true)?;
    let e = d.scalar(work, eps as f64);
    let m = d.bin(B::Add, m, e)?;
    let r = d.unary(UnaryOp::Sqrt, m)?;
    let y = d.bin(B::Div, xs, r)?;
    d.cast(y, ty.dtype)
}

/// The ONNX function body: (x - E[x]) / (sqrt(E[x²] - E[x]²) + 1e-9) over `axes`.
fn mvn(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let ty = d.ty(x);
    let r = ty.rank();
    let given = n.attrs.ints("axes")?.unwrap_or_else(|| vec![0, 2, 3]);
    let mut axes = Vec::new();
    for &ax in &given {
        let v = norm_axis(ax, r).filter(|&v| v < r).ok_or_else(|| {
            n.attrs
                .err("axes", format!("{ax} out of range for rank {r}"))
        })?;
        axes.push(v);
    }
    axes.sort_unstable();
    axes.dedup();
    let mean = d.reduce(ReduceKind::Mean, x, axes.clone(), true)?;
    let mean_sq = d.bin(B::Mul, mean, mean)?;
    let sq = d.bin(B::Mul, x, x)?;
    let sq_mean = d.reduce(ReduceKind::Mean, sq, axes, true)?;
    let var = d.bin(B::Sub, sq_mean, mean_sq)?;
    let std = d.unary(UnaryOp::Sqrt, var)?;
    let eps = d.scalar(ty.dtype, 1e-9);
    let std = d.bin(B::Add, std, eps)?;
    let centered = d.bin(B::Sub, x, mean)?;
    d.out(0, Op::Binary(B::Div), &[centered, std])?;
    Ok(())
}
