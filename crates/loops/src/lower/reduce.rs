//! Reductions: `tensor.empty` + `linalg.fill` (init) + one reduction generic, as
//! Torch-MLIR's `createReductionLinalgGeneric`; mean adds a divide (DecomposeAtenMeanDimOp).

use super::builder::dims_index;
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::{BFn, Expr, Index, NestKind, TensorId, UFn};
use pimkit_ir::{DType, Node, PoolKind, ReduceKind};

pub(crate) fn lowest(dt: DType) -> f64 {
    match dt {
        DType::F32 | DType::F16 => f64::NEG_INFINITY,
        DType::I64 => i64::MIN as f64,
        DType::I32 => i32::MIN as f64,
        DType::I8 => -128.0,
        DType::I16 => i16::MIN as f64,
        DType::F64 | DType::Bf16 => f64::NEG_INFINITY,
        // Unsigned types, bool, and codes (never lowered).
        _ => 0.0,
    }
}
pub(crate) fn highest(dt: DType) -> f64 {
    match dt {
        DType::F32 | DType::F16 => f64::INFINITY,
        DType::I64 => i64::MAX as f64,
        DType::I32 => i32::MAX as f64,
        DType::I8 => 127.0,
        DType::U8 => 255.0,
        DType::Bool => 1.0,
        DType::I16 => i16::MAX as f64,
        DType::U16 => u16::MAX as f64,
        DType::U32 => u32::MAX as f64,
        DType::U64 => u64::MAX as f64,
        DType::F64 | DType::Bf16 => f64::INFINITY,
        // Codes (never lowered).
        _ => 255.0,
    }
}

/// Shape after reducing `axes`.
pub(crate) fn reduced_shape(shape: &[usize], axes: &[usize], keepdims: bool) -> Vec<usize> {
    let mut s = vec![];
    for (i, &e) in shape.iter().enumerate() {
        if axes.contains(&i) {
            if keepdims {
                s.push(1);
            }
        } else {
            s.push(e);
        }
    }
    s
}

/// fill(init) + reduction generic. `acc_dt` is the accumulator dtype; `pre` maps each
/// loaded element (already cast to `acc_dt`) before `combine(acc, x)`.
pub(crate) fn reduce_with(
    l: &mut Lowerer,
    label: &str,
    x: TensorId,
    axes: &[usize],
    keepdims: bool,
    acc_dt: DType,
    init: f64,
    pre: impl Fn(Expr) -> Expr,
    combine: impl Fn(Expr, Expr) -> Expr,
) -> Result<TensorId> {
    let (xdt, xs) = l.ty(x);
    let os = reduced_shape(&xs, axes, keepdims);
    let acc = l.fill(&format!("{label}.init"), acc_dt, &os, init);
    let r = l.result_init(label, acc);
    let kind = NestKind::Reduction;
    let mut nb = NB::new(kind, label);
    let dims: Vec<usize> = (0..xs.len())
        .map(|i| {
            if axes.contains(&i) {
                nb.red(xs[i])
            } else {
                nb.par(xs[i])
            }
        })
        .collect();
    let oix = out_index(&dims, axes, keepdims);
    let mut xv = nb.load(x, dims_index(&dims));
    if xdt != acc_dt {
        xv = Expr::cast(acc_dt, xv);
    }
    let a = nb.load(r, oix.clone());
    nb.store(r, oix, combine(a, pre(xv)));
    l.push(nb);
    Ok(r)
}

pub(crate) fn out_index(dims: &[usize], axes: &[usize], keepdims: bool) -> Vec<Index> {
    let mut v = vec![];
    for (i, &d) in dims.iter().enumerate() {
        if axes.contains(&i) {
            if keepdims {
                v.push(Index::c(0));
            }
        } else {
            v.push(Index::dim(d));
        }
    }
    v
}

/// Sum over `axes` (2 nests).
pub(crate) fn sum(
    l: &mut Lowerer,
    label: &str,
    x: TensorId,
    axes: &[usize],
    keepdims: bool,
) -> Result<TensorId> {
    let dt = l.dtype(x);
    reduce_with(l, label, x, axes, keepdims, dt, 0.0, |v| v, Expr::add)
}

/// Mean over `axes`: sum (2 nests) + divide by the count (1 nest).
pub(crate) fn mean(
    l: &mut Lowerer,
    label: &str,
    x: TensorId,
    axes: &[usize],
    keepdims: bool,
) -> Result<TensorId> {
    let xs = l.shape(x);
    let count: usize = axes.iter().map(|&a| xs[a]).product();
    let s = sum(l, &format!("{label}.sum"), x, axes, keepdims)?;
    let dt = l.dtype(s);
    l.map(
        &format!("{label}.div"),
        NestKind::Elementwise,
        &[s],
        dt,
        |v| Expr::div(v[0].clone(), Expr::k(count as f64, dt)),
    )
}

pub(crate) fn reduce_node(
    l: &mut Lowerer,
    _node: &Node,
    kind: ReduceKind,
    axes: &[usize],
    keepdims: bool,
) -> Result<TensorId> {
    let x = l.input(0)?;
    let dt = l.dtype(x);
    let axes: Vec<usize> = if axes.is_empty() {
        (0..l.shape(x).len()).collect()
    } else {
        axes.to_vec()
    };
    match kind {
        ReduceKind::Sum => sum(l, "sum", x, &axes, keepdims),
        ReduceKind::Mean => mean(l, "mean", x, &axes, keepdims),
        ReduceKind::Max => reduce_with(
            l,
            "max",
            x,
            &axes,
            keepdims,
            dt,
            lowest(dt),
            |v| v,
            Expr::max,
        ),
        ReduceKind::Min => reduce_with(
            l,
            "min",
            x,
            &axes,
            keepdims,
            dt,
            highest(dt),
            |v| v,
            Expr::min,
        ),
        ReduceKind::Prod => reduce_with(l, "prod", x, &axes, keepdims, dt, 1.0, |v| v, Expr::mul),
        ReduceKind::SumSquare => reduce_with(
            l,
            "sumsq",
            x,
            &axes,
            keepdims,
            dt,
            0.0,
            |v| Expr::mul(v.clone(), v),
            Expr::add,
        ),
        ReduceKind::L2 => {
            let s = reduce_with(
                l,
                "sumsq",
                x,
                &axes,
                keepdims,
                dt,
                0.0,
                |v| Expr::mul(v.clone(), v),
                Expr::add,
            )?;
            l.map("sqrt", NestKind::Elementwise, &[s], dt, |v| {
                Expr::un(UFn::Sqrt, v[0].clone())
            })
        }
    }
}

/// `max.dim`: fill(-inf) values, fill(0) indices, one 2-output generic (3 nests).
/// Returns (values, indices), both with the reduced axis kept as 1 when `keepdims`.
pub(crate) fn max_dim(
    l: &mut Lowerer,
    label: &str,
    x: TensorId,
    axis: usize,
    keepdims: bool,
    last: bool,
) -> Result<(TensorId, TensorId)> {
    let (dt, xs) = l.ty(x);
    let os = reduced_shape(&xs, &[axis], keepdims);
    let vinit = l.fill(&format!("{label}.init"), dt, &os, lowest(dt));
    let iinit = l.fill(&format!("{label}.idx.init"), DType::I64, &os, 0.0);
    let vr = l.result_init(label, vinit);
    let ir = l.result_init(&format!("{label}.idx"), iinit);
    let mut nb = NB::new(NestKind::Reduction, label);
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
    // First maximum: strictly greater replaces; last maximum: greater or equal.
    let cmp = if last { BFn::Ge } else { BFn::Gt };
    let greater = Expr::bin(cmp, xv.clone(), old.clone());
    nb.store(vr, oix.clone(), Expr::max(old, xv));
    nb.store(
        ir,
        oix,
        Expr::select(greater, Expr::DimIndex(dims[axis]), oldi),
    );
    l.push(nb);
    Ok((vr, ir))
}

pub(crate) fn argmax(
    l: &mut Lowerer,
    _node: &Node,
    axis: usize,
    keepdims: bool,
    last: bool,
) -> Result<TensorId> {
    let x = l.input(0)?;
    let (_, i) = max_dim(l, "argmax", x, axis, keepdims, last)?;
    Ok(i)
}

pub(crate) fn global_pool(l: &mut Lowerer, _node: &Node, kind: PoolKind) -> Result<TensorId> {
    let x = l.input(0)?;
    let (dt, xs) = l.ty(x);
    let axes: Vec<usize> = (2..xs.len()).collect();
    match kind {
        PoolKind::Avg => mean(l, "avgpool", x, &axes, true),
        PoolKind::Max => reduce_with(
            l,
            "maxpool",
            x,
            &axes,
            true,
            dt,
            lowest(dt),
            |v| v,
            Expr::max,
        ),
    }
}
