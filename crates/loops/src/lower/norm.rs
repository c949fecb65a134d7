//! Softmax and normalizations, decomposed as Torch-MLIR's DecomposeComplexOps does.

use super::Lowerer;
use super::reduce::{max_dim, mean, sum};
use super::shape::view_reshape;
use crate::error::Result;
use crate::ir::{Expr, NestKind, TensorId, UFn};
use pimkit_ir::Node;
use pimkit_ir::operand::{batch_norm as bn, layer_norm};

/// softmax = max.dim (3) + sub (1) + exp (1) + sum (2) + div (1) = 8 nests; log-softmax
/// replaces the divide with log (1) + sub (1).
pub(crate) fn softmax(l: &mut Lowerer, _node: &Node, axis: usize, log: bool) -> Result<TensorId> {
    let x = l.input(0)?;
    let dt = l.dtype(x);
    let (m, _) = max_dim(l, "max", x, axis, true, false)?;
    let ew = NestKind::Elementwise;
    let t = l.map("sub", ew, &[x, m], dt, |v| {
        Expr::sub(v[0].clone(), v[1].clone())
    })?;
    let e = l.map("exp", ew, &[t], dt, |v| Expr::un(UFn::Exp, v[0].clone()))?;
    let s = sum(l, "sum", e, &[axis], true)?;
    if log {
        let ls = l.map("log", ew, &[s], dt, |v| Expr::un(UFn::Log, v[0].clone()))?;
        l.map("logsub", ew, &[t, ls], dt, |v| {
            Expr::sub(v[0].clone(), v[1].clone())
        })
    } else {
        l.map("div", ew, &[e, s], dt, |v| {
            Expr::div(v[0].clone(), v[1].clone())
        })
    }
}

/// layer_norm as DecomposeAtenNativeLayerNormOp: mean (3), sub (1), square (1),
/// mean (3), + eps (1), rsqrt (1), mul (1); then the affine part. Deviation: ×weight and
/// +bias are one nest here (Torch-MLIR emits two), which gives the paper's count of 12
/// for a LayerNorm with weight and bias. See docs/loops.md.
pub(crate) fn layer_norm(l: &mut Lowerer, _node: &Node, axis: usize, eps: f32) -> Result<TensorId> {
    let x = l.input(layer_norm::X)?;
    let scale = l.opt_input(layer_norm::SCALE)?;
    let bias = l.opt_input(layer_norm::B)?;
    let (dt, xs) = l.ty(x);
    let axes: Vec<usize> = (axis..xs.len()).collect();
    let ew = NestKind::Elementwise;
    let m = mean(l, "mean", x, &axes, true)?;
    let d = l.map("sub", ew, &[x, m], dt, |v| {
        Expr::sub(v[0].clone(), v[1].clone())
    })?;
    let sq = l.map("square", ew, &[d], dt, |v| {
        Expr::mul(v[0].clone(), v[0].clone())
    })?;
    let var = mean(l, "var", sq, &axes, true)?;
    let ve = l.map("add_eps", ew, &[var], dt, |v| {
        Expr::add(v[0].clone(), Expr::k(eps as f64, dt))
    })?;
    let r = l.map("rsqrt", ew, &[ve], dt, |v| {
        Expr::un(UFn::Rsqrt, v[0].clone())
    })?;
    let n = l.map("mul", ew, &[d, r], dt, |v| {
        Expr::mul(v[0].clone(), v[1].clone())
    })?;
    let mut ins = vec![n];
    ins.extend(scale);
    ins.extend(bias);
    if ins.len() == 1 {
        return Ok(n);
    }
    let (has_s, has_b) = (scale.is_some(), bias.is_some());
    l.map_to("affine", ew, &ins, dt, &xs, |v| {
        let mut e = v[0].clone();
        let mut k = 1;
        if has_s {
            e = Expr::mul(e, v[k].clone());
            k += 1;
        }
        if has_b {
            e = Expr::add(e, v[k].clone());
        }
        e
    })
}

/// Inference batch norm as DecomposeAtenNativeBatchNormOp: sub mean, + eps, rsqrt, mul,
/// × weight, + bias (6 nests; the [C] statistics are viewed as [C,1,...]).
pub(crate) fn batch_norm(l: &mut Lowerer, _node: &Node, eps: f32) -> Result<TensorId> {
    let x = l.input(bn::X)?;
    let (dt, xs) = l.ty(x);
    let c = xs[1];
    let mut stat_shape = vec![c];
    stat_shape.extend(std::iter::repeat_n(1, xs.len() - 2));
    let mut st = vec![];
    for i in [bn::SCALE, bn::B, bn::INPUT_MEAN, bn::INPUT_VAR] {
        let t = l.input(i)?;
        st.push(view_reshape(l, t, &stat_shape)?);
    }
    let (scale, bias, mu, var) = (st[0], st[1], st[2], st[3]);
    let ew = NestKind::Elementwise;
    let xm = l.map("sub", ew, &[x, mu], dt, |v| {
        Expr::sub(v[0].clone(), v[1].clone())
    })?;
    let ve = l.map("add_eps", ew, &[var], dt, |v| {
        Expr::add(v[0].clone(), Expr::k(eps as f64, dt))
    })?;
    let r = l.map("rsqrt", ew, &[ve], dt, |v| {
        Expr::un(UFn::Rsqrt, v[0].clone())
    })?;
    let n = l.map("mul", ew, &[xm, r], dt, |v| {
        Expr::mul(v[0].clone(), v[1].clone())
    })?;
    let w = l.map("mul_weight", ew, &[n, scale], dt, |v| {
        Expr::mul(v[0].clone(), v[1].clone())
    })?;
    l.map("add_bias", ew, &[w, bias], dt, |v| {
        Expr::add(v[0].clone(), v[1].clone())
    })
}
