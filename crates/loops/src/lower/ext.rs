//! Lowering of the ops added for the ONNX node suite (issue #16 item 4) that real models
//! use: GatherElements, GatherND, ArgMin, CumSum/CumProd (position ids in transformers
//! exports) and ScatterElements/ScatterND (in-place index writes). The others are
//! explicit `unsupported` arms in `lower_node` with the reason.

use super::builder::dims_index;
use super::reduce::{highest, out_index, reduced_shape};
use super::shape::norm_index;
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::{BFn, Expr, Index, NestKind, TensorId};
use pimkit_ir::operand::{gather, scatter};
use pimkit_ir::{DType, Node, ScatterReduction};

/// `gather` along `axis` with per-element indices (`torch.gather`): one copy nest.
pub(crate) fn gather_elements(l: &mut Lowerer, _node: &Node, axis: usize) -> Result<TensorId> {
    let x = l.input(gather::DATA)?;
    let idx = l.input(gather::INDICES)?;
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
    let x = l.input(gather::DATA)?;
    let idx = l.input(gather::INDICES)?;
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

/// CumSum/CumProd as a triangular reduction (`aten.cumsum` has no linalg form; this is
/// its masked-sum definition): fill(identity) + one nest that, for every output position
/// i along `axis`, folds the x[j] with j before i (after i when reversed; exclusive drops
/// j = i). Quadratic in the axis length.
pub(crate) fn cumulative(
    l: &mut Lowerer,
    _node: &Node,
    axis: usize,
    exclusive: bool,
    reverse: bool,
    prod: bool,
) -> Result<TensorId> {
    let x = l.input(0)?;
    let (dt, xs) = l.ty(x);
    let label = if prod { "cumprod" } else { "cumsum" };
    let id = if prod { 1.0 } else { 0.0 };
    let init = l.fill(&format!("{label}.init"), dt, &xs, id);
    let out = l.result_init(label, init);
    let mut nb = NB::new(NestKind::Reduction, label);
    let d = nb.pars(&xs);
    let j = nb.red(xs[axis]);
    let mut xi = dims_index(&d);
    xi[axis] = Index::dim(j);
    let xv = nb.load(x, xi);
    let (jj, ii) = (Expr::DimIndex(j), Expr::DimIndex(d[axis]));
    let cmp = match (reverse, exclusive) {
        (false, false) => BFn::Le,
        (false, true) => BFn::Lt,
        (true, false) => BFn::Ge,
        (true, true) => BFn::Gt,
    };
    let take = Expr::bin(cmp, jj, ii);
    let old = nb.load(out, dims_index(&d));
    let f = if prod { BFn::Mul } else { BFn::Add };
    let v = Expr::select(take, Expr::bin(f, old.clone(), xv), old);
    nb.store(out, dims_index(&d), v);
    l.push(nb);
    Ok(out)
}

/// ScatterElements / ScatterND: a copy of the data, then one sequential nest over the
/// updates that writes (or combines into) the element its indices select. The update
/// dims are reduction dims so that repeated indices apply in index order, as the
/// interpreter does.
pub(crate) fn scatter(l: &mut Lowerer, node: &Node) -> Result<TensorId> {
    let data = l.input(scatter::DATA)?;
    let idx = l.input(scatter::INDICES)?;
    let upd = l.input(scatter::UPDATES)?;
    let (dt, ds) = l.ty(data);
    let (idt, is) = l.ty(idx);
    let (_, us) = l.ty(upd);
    let (reduction, axis) = match &node.op {
        pimkit_ir::Op::ScatterElements { axis, reduction } => (*reduction, Some(*axis)),
        pimkit_ir::Op::ScatterNd { reduction } => (*reduction, None),
        // the dispatcher calls scatter only for the two scatter ops
        _ => return Err(l.err("not a scatter op")),
    };
    let copy = super::elementwise::copy(l, data, "scatter.copy")?;
    let out = l.result_init("scatter", copy);
    let kind = if reduction == ScatterReduction::None {
        NestKind::Copy
    } else {
        NestKind::Reduction
    };
    let mut nb = NB::new(kind, "scatter");
    let d: Vec<usize> = us.iter().map(|&e| nb.red(e)).collect();
    let oi: Vec<Index> = match axis {
        Some(ax) => {
            let iv = nb.load(idx, dims_index(&d));
            d.iter()
                .enumerate()
                .map(|(a, &k)| {
                    if a == ax {
                        Index::dynamic(norm_index(iv.clone(), idt, ds[ax]))
                    } else {
                        Index::dim(k)
                    }
                })
                .collect()
        }
        None => {
            let q = is.len();
            let k = is[q - 1];
            let mut oi = Vec::with_capacity(ds.len());
            for a in 0..k {
                let mut ii: Vec<Index> = d[..q - 1].iter().map(|&k| Index::dim(k)).collect();
                ii.push(Index::c(a as i64));
                let v = nb.load(idx, ii);
                oi.push(Index::dynamic(norm_index(v, idt, ds[a])));
            }
            oi.extend(d[q - 1..].iter().map(|&k| Index::dim(k)));
            oi
        }
    };
    let u = nb.load(upd, dims_index(&d));
    let value = match reduction {
        ScatterReduction::None => u,
        r => {
            let old = nb.load(out, oi.clone());
            let f = match r {
                ScatterReduction::Add => BFn::Add,
                ScatterReduction::Mul => BFn::Mul,
                ScatterReduction::Max => BFn::Max,
                // None never reaches here: the outer arm takes it.
                ScatterReduction::Min | ScatterReduction::None => BFn::Min,
            };
            Expr::bin(f, old, u)
        }
    };
    let _ = dt;
    nb.store(out, oi, value);
    l.push(nb);
    Ok(out)
}
