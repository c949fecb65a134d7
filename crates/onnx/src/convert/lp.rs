//! Lp pooling and Lp normalization, decomposed: LpPool is (kvol · AveragePool(|x|^p))^(1/p)
//! with padding counted (the window sum, as onnxruntime and the ONNX reference compute
//! it); LpNormalization divides by ReduceL2 (p = 2) or ReduceSum(|x|) (p = 1), giving 0
//! where the norm is 0 (the ONNX reference's choice).

use super::dec::Dec;
use super::window::window;
use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use pimkit_ir::{BinaryOp as B, Op, PoolAttrs, PoolKind, ReduceKind, UnaryOp};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "LpPool"), lp_pool);
    r.insert(("", "LpNormalization"), lp_norm);
}

fn lp_pool(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let p = a.int("p", 2)?;
    if p < 1 {
        return Err(a.err("p", format!("{p} is not a positive integer")));
    }
    let kernel = a
        .usize_list("kernel_shape")?
        .ok_or_else(|| a.err("kernel_shape", "is required"))?;
    let x_ty = ctx.ty(n, 0)?;
    if x_ty.rank() < 3 || !x_ty.dtype.is_float() {
        return Err(ctx.err(
            n,
            format!("input must be a float [N, C, D1, ...] tensor, got {x_ty}"),
        ));
    }
    let (strides, dilations, pads) = window(&a, kernel.clone(), &x_ty.shape[2..])?;
    let ceil_mode = a.bool("ceil_mode", false)?;
    if ceil_mode {
        let floor = pimkit_ir::conv_output_hw(
            &x_ty.shape[2..],
            &kernel,
            &strides,
            &pads,
            &dilations,
            false,
        );
        let ceil =
            pimkit_ir::conv_output_hw(&x_ty.shape[2..], &kernel, &strides, &pads, &dilations, true);
        if floor != ceil {
            return Err(a.err(
                "ceil_mode",
                "a last window that extends past the padded input is not supported",
            ));
        }
    }
    let kvol: usize = kernel.iter().product();
    let pool = PoolAttrs {
        kind: PoolKind::Avg,
        kernel,
        strides,
        pads,
        dilations,
        ceil_mode,
        count_include_pad: true,
    };
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let dt = x_ty.dtype;
    let powed = match p {
        1 => d.unary(UnaryOp::Abs, x)?,
        2 => d.bin(B::Mul, x, x)?,
        _ => {
            let ax = d.unary(UnaryOp::Abs, x)?;
            let pv = d.scalar(dt, p as f64);
            d.bin(B::Pow, ax, pv)?
        }
    };
    let avg = d.op(Op::Pool(pool), &[powed])?;
    let k = d.scalar(dt, kvol as f64);
    match p {
        1 => d.out(0, Op::Binary(B::Mul), &[avg, k])?,
        2 => {
            let s = d.bin(B::Mul, avg, k)?;
            d.out(0, Op::Unary(UnaryOp::Sqrt), &[s])?
        }
        _ => {
            let s = d.bin(B::Mul, avg, k)?;
            let inv = d.scalar(dt, 1.0 / p as f64);
            d.out(0, Op::Binary(B::Pow), &[s, inv])?
        }
    };
    Ok(())
}

fn lp_norm(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let p = a.int("p", 2)?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let ty = d.ty(x);
    let ax = a.int("axis", -1)?;
    let axis = norm_axis(ax, ty.rank())
        .filter(|&v| v < ty.rank())
        .ok_or_else(|| a.err("axis", format!("{ax} out of range for rank {}", ty.rank())))?;
    let norm = match p {
        1 => {
            let ab = d.unary(UnaryOp::Abs, x)?;
            d.reduce(ReduceKind::Sum, ab, vec![axis], true)?
        }
        2 => d.reduce(ReduceKind::L2, x, vec![axis], true)?,
        _ => return Err(a.err("p", format!("{p} is not 1 or 2"))),
    };
    let q = d.bin(B::Div, x, norm)?;
    let zero = d.scalar(ty.dtype, 0.0);
    let is_zero = d.bin(B::Equal, norm, zero)?;
    d.out(0, Op::Where, &[is_zero, zero, q])?;
    Ok(())
}
