//! Lowering of the ops added for the ONNX node suite (issue #16 item 4): the index ops a
//! real model uses (GatherElements, GatherND) and ArgMin. The others are explicit
//! `unsupported` arms in `lower_node` with the reason.

use super::builder::dims_index;
use super::reduce::{highest, out_index, reduced_shape};
use super::shape::norm_index;
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::{BFn, Expr, Index, NestKind, TensorId};
use pimkit_ir::{DType, Node};

/// `gather` along `axis` with per-element indices (`torch.gather`): one copy nest.
pub(crate) fn gather_elements(l: &mut Lowerer, _node: &Node, axis: usize) -> Result<TensorId> {
    let x = l.input(0)?;
    let idx = l.input(1)?;
    let (xdt, xs) = l.ty(x);
    let (idt, is) = l.ty(idx);
    let out = l.result("gather_elements", xdt, &is);
    let mut nb = NB::new(NestKind::Copy, "gather_elements");
    let d = nb.pars(&is);
    let iv = nb.load(idx, dims_index(&d));
    let xi: Vec<Index> = d
        .iter()
        .enumerate()
        .map(|(a, &k)| {
            if a == axis {
                Index::dynamic(norm_index(iv.clone(), idt, xs[axis]))
            } else {
                Index::dim(k)
            }
        })
        .collect();
    let v = nb.load(x, xi);
    nb.store(out, dims_index(&d), v);
    l.push(nb);
    Ok(out)
}

/// GatherND: every output element reads the data at (batch dims, the k index values of
/// its tuple, the remaining output dims).
pub(crate) fn gather_nd(l: &mut Lowerer, _node: &Node, batch_dims: usize) -> Result<TensorId> {
    let x = l.input(0)?;
    let idx = l.input(1)?;
    let (xdt, xs) = l.ty(x);
    let (idt, is) = l.ty(idx);
    let q = is.len();
    let k = is[q - 1];
    let (_, shape) = l.out_ty(0);
    let out = l.result("gather_nd", xdt, &shape);
    let mut nb = NB::new(NestKind::Copy, "gather_nd");
    let d = nb.pars(&shape);
    let mut xi: Vec<Index> = d[..batch_dims].iter().map(|&k| Index::dim(k)).collect();
    for a in 0..k {
        let mut ii: Vec<Index> = d[..q - 1].iter().map(|&k| Index::dim(k)).collect();
        ii.push(Index::c(a as i64));
        let v = nb.load(idx, ii);
        xi.push(Index::dynamic(norm_index(v, idt, xs[batch_dims + a])));
    }
    xi.extend(d[q - 1..].iter().map(|&k| Index::dim(k)));
    let v = nb.load(x, xi);
    nb.store(out, dims_index(&d), v);
    l.push(nb);
    Ok(out)
}

/// `min.dim` indices: fill(+inf) values, fill(0) indices, one 2-output generic.
pub(crate) fn argmin(
    l: &mut Lowerer,
    _node: &Node,
    axis: usize,
    keepdims: bool,
    last: bool,
) -> Result<TensorId> {
    let x = l.input(0)?;
    let (dt, xs) = l.ty(x);
    let os = reduced_shape(&xs, &[axis], keepdims);
    let vinit = l.fill("argmin.init", dt, &os, highest(dt));
    let iinit = l.fill("argmin.idx.init", DType::I64, &os, 0.0);
    let vr = l.result_init("argmin", vinit);
    let ir = l.result_init("argmin.idx", iinit);
    let mut nb = NB::new(NestKind::Reduction, "argmin");
    let dims: Vec<usize> = (0..xs.len())
        .map(|i| {
            if i == axis {
                nb.red(xs[i])
            } else {
                nb.par(xs[i])
            }
        })
        .collect();
    let oix = out_index(&dims, &[axis], keepdims);
    let xv = nb.load(x, dims_index(&dims));
    let old = nb.load(vr, oix.clone());
    let oldi = nb.load(ir, oix.clone());
    // First minimum: strictly smaller replaces; last minimum: smaller or equal.
    let cmp = if last { BFn::Le } else { BFn::Lt };
    let smaller = Expr::bin(cmp, xv.clone(), old.clone());
    nb.store(vr, oix.clone(), Expr::bin(BFn::Min, old, xv));
    nb.store(
        ir,
        oix,
        Expr::select(smaller, Expr::DimIndex(dims[axis]), oldi),
    );
    l.push(nb);
    Ok(ir)
}
