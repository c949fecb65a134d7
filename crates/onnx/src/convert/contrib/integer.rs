//! Dynamically quantized products: MatMulIntegerToFloat, DynamicQuantizeMatMul, and
//! FusedMatMul from onnxruntime's optimized graphs.

use super::super::dec::Dec;
use super::super::{Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, Op, ValueId};

/// float(MatMulInteger(a, b, a_zp, b_zp)) · (a_scale · b_scale) + bias, inputs by index
/// ([a, b, a_zp, b_zp], [a_scale, b_scale], bias), as onnxruntime's kernels compute it.
pub(super) fn integer_matmul_to_float(
    d: &mut Dec,
    n: &NodeIn,
    [a, b, azp, bzp]: [usize; 4],
    [ascale, bscale]: [usize; 2],
    bias: Option<usize>,
) -> Result<ValueId> {
    let ins = [
        Some(d.ctx.value(n, a)?),
        Some(d.ctx.value(n, b)?),
        d.ctx.opt_value(n, azp)?,
        d.ctx.opt_value(n, bzp)?,
    ];
    let (sa, sb) = (d.ctx.value(n, ascale)?, d.ctx.value(n, bscale)?);
    let acc = d.op_opt(Op::MatMulInteger, ins.to_vec())?;
    let dt = d.dtype(sa);
    let acc = d.cast(acc, dt)?;
    let scale = d.bin(B::Mul, sa, sb)?;
    let mut y = d.bin(B::Mul, acc, scale)?;
    if let Some(i) = bias
        && let Some(bv) = d.ctx.opt_value(n, i)?
    {
        y = d.bin(B::Add, y, bv)?;
    }
    Ok(y)
}

/// onnxruntime's MatMulIntegerToFloat (its fusion of a dynamically quantized MatMul).
pub(super) fn matmul_integer_to_float(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let mut d = Dec::new(ctx, n);
    let y = integer_matmul_to_float(&mut d, n, [0, 1, 4, 5], [2, 3], Some(6))?;
    d.out(0, Op::Identity, &[y])?;
    Ok(())
}

/// onnxruntime's DynamicQuantizeMatMul: A quantized at run time as DynamicQuantizeLinear
/// does (u8, scale and zero point from A's range), then MatMulIntegerToFloat with B.
pub(super) fn dynamic_quantize_matmul(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = ctx.value(n, 0)?;
    let base = n.outputs.first().copied().unwrap_or(n.name);
    let names: Vec<String> = ["q", "scale", "zp"]
        .iter()
        .map(|s| format!("{base}/dql_{s}"))
        .collect();
    let outs = ctx
        .g
        .add_node_named(
            format!("{}/dql", n.name),
            Op::DynamicQuantizeLinear,
            vec![Some(a)],
            names.clone(),
        )
        .map_err(|e| Ctx::ir_err(n, e))?;
    for (name, id) in names.iter().zip(&outs) {
        ctx.bind(n, name, *id)?;
    }
    let (b, bscale) = (ctx.value(n, 1)?, ctx.value(n, 2)?);
    let (bzp, bias) = (ctx.opt_value(n, 3)?, ctx.opt_value(n, 4)?);
    let mut d = Dec::new(ctx, n);
    let acc = d.op_opt(
        Op::MatMulInteger,
        vec![Some(outs[0]), Some(b), Some(outs[2]), bzp],
    )?;
    let dt = d.dtype(bscale);
    let acc = d.cast(acc, dt)?;
    let scale = d.bin(B::Mul, outs[1], bscale)?;
    let y = d.bin(B::Mul, acc, scale)?;
    match bias {
        Some(bv) => d.out(0, Op::Binary(B::Add), &[y, bv])?,
        None => d.out(0, Op::Identity, &[y])?,
    };
    Ok(())
}

/// onnxruntime's FusedMatMul: alpha · op(A) · op(B), op transposing the last two axes
/// where `transA` / `transB` say (the batch-transposing variants are refused).
pub(super) fn fused_matmul(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let at = n.attrs;
    for name in ["transBatchA", "transBatchB"] {
        if at.int(name, 0)? != 0 {
            return Err(at.err(name, "batch transposition is not supported"));
        }
    }
    let alpha = at.float("alpha", 1.0)?;
    let (ta, tb) = (at.int("transA", 0)? != 0, at.int("transB", 0)? != 0);
    let mut d = Dec::new(ctx, n);
    let mut ab = [d.ctx.value(n, 0)?, d.ctx.value(n, 1)?];
    for (v, t) in ab.iter_mut().zip([ta, tb]) {
        let r = d.ty(*v).rank();
        if t {
            if r < 2 {
                return Err(d.ctx.err(n, "a transposed operand needs rank 2 or more"));
            }
            let mut perm: Vec<usize> = (0..r).collect();
            perm.swap(r - 2, r - 1);
            *v = d.transpose(*v, perm)?;
        }
    }
    if alpha == 1.0 {
        d.out(0, Op::MatMul, &ab)?;
    } else {
        let y = d.op(Op::MatMul, &ab)?;
        let s = d.scalar(d.dtype(y), alpha as f64);
        d.out(0, Op::Binary(B::Mul), &[y, s])?;
    }
    Ok(())
}
