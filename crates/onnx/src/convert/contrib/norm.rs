//! onnxruntime's fused norms and GELUs: SkipLayerNormalization, SkipSimplifiedLayerNormalization,
//! SimplifiedLayerNormalization, FastGelu, BiasGelu, QuickGelu.

use super::super::dec::Dec;
use super::super::{Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, Op, UnaryOp, ValueId};

/// input + skip (+ bias): the residual sum both skip norms start from.
pub(super) fn skip_sum(d: &mut Dec, n: &NodeIn, bias_input: usize) -> Result<ValueId> {
    let x = d.ctx.value(n, 0)?;
    let skip = d.ctx.value(n, 1)?;
    let mut s = d.bin(B::Add, x, skip)?;
    if let Some(b) = d.ctx.opt_value(n, bias_input)? {
        s = d.bin(B::Add, s, b)?;
    }
    Ok(s)
}

/// The sum as output 3 (`input_skip_bias_sum`) when requested; outputs 1 and 2 (mean,
/// inv_std_var) are training outputs onnxruntime's exports leave unused.
pub(super) fn finish_sum(d: &mut Dec, n: &NodeIn, sum: ValueId) -> Result<()> {
    for i in [1, 2] {
        if let Some(o) = n
            .outputs
            .get(i)
            .filter(|o| !o.is_empty() && d.ctx.used.contains(**o))
        {
            return Err(d.ctx.err(
                n,
                format!("output {i} ('{o}', the mean or inverse standard deviation) is used, but pimkit does not compute it"),
            ));
        }
    }
    if d.wants(3) {
        d.out_node(3, false, Op::Identity, &[sum])?;
    }
    Ok(())
}

/// LayerNorm(input + skip + bias) over the last axis, with gamma and beta.
pub(super) fn skip_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let eps = n.attrs.float("epsilon", 1e-12)?;
    let mut d = Dec::new(ctx, n);
    let sum = skip_sum(&mut d, n, 4)?;
    let axis = d.ty(sum).rank().saturating_sub(1);
    let gamma = d.ctx.value(n, 2)?;
    let mut ins = vec![sum, gamma];
    if let Some(beta) = d.ctx.opt_value(n, 3)? {
        ins.push(beta);
    }
    d.out(0, Op::LayerNorm { axis, epsilon: eps }, &ins)?;
    finish_sum(&mut d, n, sum)
}

/// RMSNorm(input + skip + bias) over the last axis, times gamma.
pub(super) fn skip_simplified_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let eps = n.attrs.float("epsilon", 1e-12)?;
    let mut d = Dec::new(ctx, n);
    let sum = skip_sum(&mut d, n, 3)?;
    let axis = d.ty(sum).rank().saturating_sub(1);
    let gamma = d.ctx.value(n, 2)?;
    let y = super::super::normalize::rms(&mut d, sum, axis, eps, true)?;
    d.out(0, Op::Binary(B::Mul), &[y, gamma])?;
    finish_sum(&mut d, n, sum)
}

/// onnxruntime's SimplifiedLayerNormalization: RMSNormalization's semantics (axis,
/// epsilon, stash_type), from the default domain where onnxruntime registers it; its
/// inverse standard deviation output must be unused.
pub(super) fn simplified_layer_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    ctx.require_unused(n, 1, "the inverse standard deviation")?;
    super::super::normalize::rms_norm(ctx, n)
}

/// x (+ bias) through `gelu`.
pub(super) fn gelu_of_sum(ctx: &mut Ctx, n: &NodeIn, tanh: bool) -> Result<()> {
    let mut d = Dec::new(ctx, n);
    let mut x = d.ctx.value(n, 0)?;
    if let Some(b) = d.ctx.opt_value(n, 1)? {
        x = d.bin(B::Add, x, b)?;
    }
    d.out(0, Op::Unary(UnaryOp::Gelu { tanh }), &[x])?;
    Ok(())
}

/// The tanh approximation of GELU of x (+ bias).
pub(super) fn fast_gelu(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    gelu_of_sum(ctx, n, true)
}

/// The exact (erf) GELU of A + B.
pub(super) fn bias_gelu(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    gelu_of_sum(ctx, n, false)
}

/// x · sigmoid(alpha · x).
pub(super) fn quick_gelu(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let alpha = n.attrs.float("alpha", 1.702)?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let a = d.scalar(d.dtype(x), alpha as f64);
    let ax = d.bin(B::Mul, x, a)?;
    let s = d.unary(UnaryOp::Sigmoid, ax)?;
    d.out(0, Op::Binary(B::Mul), &[x, s])?;
    Ok(())
}
