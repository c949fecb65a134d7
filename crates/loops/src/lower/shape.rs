//! Data movement. Reshape, slice and split are views (`memref` subviews and
//! collapse/expand shapes: no nest). Identity (`aten.clone`), transpose, concat (`insert_slice` copies), gather,
//! expand (broadcast copy), pad and tile each materialize copy nests.

use super::builder::dims_index;
use super::elementwise::copy;
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::*;
use pimkit_ir::operand::gather;
use pimkit_ir::{DType, Node, PadMode, SliceAxis};

fn is_contiguous(t: &TensorInfo) -> bool {
    let rm = row_major(&t.shape);
    t.shape
        .iter()
        .zip(t.strides.iter().zip(&rm))
        .all(|(&e, (s, r))| e == 1 || s == r)
}

/// A new tensor sharing `t`'s storage with `shape`/`offset`/`strides`.
fn make_view(
    l: &mut Lowerer,
    t: TensorId,
    label: &str,
    shape: &[usize],
    offset: i64,
    strides: Vec<i64>,
) -> TensorId {
    let ti = &l.p.tensors[t];
    let dt = ti.dtype;
    let def = match ti.def {
        TensorDef::Scalar(v) => TensorDef::Scalar(v),
        // every other tensor is viewed through its root
        _ => TensorDef::View { root: ti.root(t) },
    };
    let name = format!("{}.{}", l.node().name, label);
    let v = l.new_tensor(&name, dt, shape, def);
    l.p.tensors[v].offset = offset;
    l.p.tensors[v].strides = strides;
    v
}

/// View `t` with a new shape of the same element count (copying first when `t` is a
/// strided view that a reshape cannot express).
pub(crate) fn view_reshape(l: &mut Lowerer, t: TensorId, shape: &[usize]) -> Result<TensorId> {
    let t = if is_contiguous(&l.p.tensors[t]) {
        t
    } else {
        copy(l, t, "contiguous")?
    };
    let off = l.p.tensors[t].offset;
    Ok(make_view(l, t, "view", shape, off, row_major(shape)))
}

pub(crate) fn reshape(
    l: &mut Lowerer,
    _node: &Node,
    shape: Option<&Vec<usize>>,
) -> Result<TensorId> {
    let x = l.input(0)?;
    let shape = match shape {
        Some(s) => s.clone(),
        None => l.shape(x),
    };
    view_reshape(l, x, &shape)
}

/// `aten.clone` (ONNX Identity): one copy nest.
pub(crate) fn identity(l: &mut Lowerer, _node: &Node) -> Result<TensorId> {
    let x = l.input(0)?;
    copy(l, x, "copy")
}

pub(crate) fn slice_view(
    l: &mut Lowerer,
    x: TensorId,
    axes: &[SliceAxis],
    shape: &[usize],
) -> TensorId {
    let ti = &l.p.tensors[x];
    let mut off = ti.offset;
    let mut strides = ti.strides.clone();
    for a in axes {
        off += a.start * strides[a.axis];
        strides[a.axis] *= a.step;
    }
    make_view(l, x, "slice", shape, off, strides)
}

pub(crate) fn slice(l: &mut Lowerer, _node: &Node, axes: &[SliceAxis]) -> Result<TensorId> {
    let x = l.input(0)?;
    let (_, shape) = l.out_ty(0);
    Ok(slice_view(l, x, axes, &shape))
}

pub(crate) fn split(
    l: &mut Lowerer,
    node: &Node,
    axis: usize,
    sizes: &[usize],
) -> Result<Vec<TensorId>> {
    let x = l.input(0)?;
    let mut start = 0i64;
    let mut outs = vec![];
    for (i, &n) in sizes.iter().enumerate() {
        let (_, shape) = l.out_ty(i);
        let sa = SliceAxis {
            axis,
            start,
            end: start + n as i64,
            step: 1,
        };
        outs.push(slice_view(l, x, &[sa], &shape));
        start += n as i64;
    }
    let _ = node;
    Ok(outs)
}

pub(crate) fn transpose(l: &mut Lowerer, _node: &Node, perm: &[usize]) -> Result<TensorId> {
    let x = l.input(0)?;
    let (dt, shape) = l.out_ty(0);
    let out = l.result("transpose", dt, &shape);
    let mut nb = NB::new(NestKind::Copy, "transpose");
    let d = nb.pars(&shape);
    let mut xi = vec![Index::c(0); perm.len()];
    for (i, &p) in perm.iter().enumerate() {
        xi[p] = Index::dim(d[i]);
    }
    let v = nb.load(x, xi);
    nb.store(out, dims_index(&d), v);
    l.push(nb);
    Ok(out)
}

/// Concat as `tensor.empty` + one `insert_slice` copy nest per input.
pub(crate) fn concat(l: &mut Lowerer, node: &Node, axis: usize) -> Result<TensorId> {
    let (dt, shape) = l.out_ty(0);
    let parts = (0..node.inputs.len())
        .map(|i| l.input(i))
        .collect::<Result<Vec<_>>>()?;
    concat_list(l, &parts, axis, dt, &shape)
}

/// Copy each part into its slice of the output along `axis` (one copy nest per part).
pub(crate) fn concat_list(
    l: &mut Lowerer,
    parts: &[TensorId],
    axis: usize,
    dt: DType,
    shape: &[usize],
) -> Result<TensorId> {
    let mut cur: Option<TensorId> = None;
    let mut off = 0i64;
    for (i, &x) in parts.iter().enumerate() {
        let xs = l.shape(x);
        if xs.iter().product::<usize>() == 0 {
            continue;
        }
        let label = format!("concat.{i}");
        let out = match cur {
            None => l.result(&label, dt, shape),
            Some(prev) => l.result_init(&label, prev),
        };
        let mut nb = NB::new(NestKind::Copy, label);
        let d = nb.pars(&xs);
        let v = nb.load(x, dims_index(&d));
        let mut oi = dims_index(&d);
        oi[axis].constant += off;
        nb.store(out, oi, v);
        l.push(nb);
        off += xs[axis] as i64;
        cur = Some(out);
    }
    match cur {
        Some(t) => Ok(t),
        None => Ok(l.fill("concat.empty", dt, shape, 0.0)),
    }
}

/// The clamped, sign-normalized i64 index loaded from `idx`.
pub(crate) fn norm_index(v: Expr, idt: DType, n: usize) -> Expr {
    let v = if idt == DType::I64 {
        v
    } else {
        Expr::cast(DType::I64, v)
    };
    let n = n as i64;
    let wrapped = Expr::select(
        Expr::bin(BFn::Lt, v.clone(), Expr::i(0)),
        Expr::add(v.clone(), Expr::i(n)),
        v,
    );
    // Clamp so that bad indices cannot read outside the buffer.
    Expr::max(Expr::i(0), Expr::min(Expr::i(n - 1), wrapped))
}

pub(crate) fn gather(l: &mut Lowerer, _node: &Node, axis: usize) -> Result<TensorId> {
    let x = l.input(gather::DATA)?;
    let idx = l.input(gather::INDICES)?;
    let (xdt, xs) = l.ty(x);
    let (idt, is) = l.ty(idx);
    // Constant indices are checked here (the native code clamps, so a bad index would
    // only give silently wrong data).
    let n = xs[axis] as f64;
    let bad = match &l.p.tensors[idx].def {
        TensorDef::Scalar(v) => (!(-n..n).contains(v)).then_some(*v),
        TensorDef::Const { data: Some(d) } => {
            d.to_f64_vec().into_iter().find(|v| !(-n..n).contains(v))
        }
        // indices not known at compile time are not checked here
        _ => None,
    };
    if let Some(v) = bad {
        return Err(l.err(format!(
            "index {v} is out of range for axis {axis} of size {}",
            xs[axis]
        )));
    }
    let (_, shape) = l.out_ty(0);
    let out = l.result("gather", xdt, &shape);
    let mut nb = NB::new(NestKind::Copy, "gather");
    let d = nb.pars(&shape);
    let iv = nb.load(idx, dims_index(&d[axis..axis + is.len()]));
    let mut xi: Vec<Index> = d[..axis].iter().map(|&k| Index::dim(k)).collect();
    xi.push(Index::dynamic(norm_index(iv, idt, xs[axis])));
    xi.extend(d[axis + is.len()..].iter().map(|&k| Index::dim(k)));
    let v = nb.load(x, xi);
    nb.store(out, dims_index(&d), v);
    l.push(nb);
    Ok(out)
}

pub(crate) fn expand(l: &mut Lowerer, _node: &Node) -> Result<TensorId> {
    let x = l.input(0)?;
    let (dt, shape) = l.out_ty(0);
    if let Some(v) = l.scalar(x) {
        // Broadcasting an immediate is a fill (`zeros`, `full`).
        return Ok(l.fill("fill", dt, &shape, v));
    }
    l.map_to("broadcast", NestKind::Copy, &[x], dt, &shape, |v| {
        v[0].clone()
    })
}

/// One pad nest (`tensor.pad`); returns `x` unchanged when every pad is zero.
pub(crate) fn pad(
    l: &mut Lowerer,
    x: TensorId,
    pads: &[usize],
    mode: PadMode,
    value: f64,
) -> Result<TensorId> {
    if pads.iter().all(|&p| p == 0) {
        return Ok(x);
    }
    let (dt, xs) = l.ty(x);
    let r = xs.len();
    let shape: Vec<usize> = (0..r).map(|i| xs[i] + pads[i] + pads[i + r]).collect();
    let out = l.result("pad", dt, &shape);
    let mut nb = NB::new(NestKind::Copy, "pad");
    let d = nb.pars(&shape);
    let mut xi = vec![];
    let mut cond: Option<Expr> = None;
    for i in 0..r {
        let (p, n) = (pads[i] as i64, xs[i] as i64);
        if pads[i] == 0 && pads[i + r] == 0 {
            xi.push(Index::dim(d[i]));
            continue;
        }
        let j = Expr::sub(Expr::DimIndex(d[i]), Expr::i(p));
        match mode {
            PadMode::Constant => {
                xi.push(Index::affine(vec![(d[i], 1)], -p));
                let c = Expr::bin(
                    BFn::And,
                    Expr::bin(BFn::Ge, j.clone(), Expr::i(0)),
                    Expr::bin(BFn::Lt, j, Expr::i(n)),
                );
                cond = Some(match cond {
                    None => c,
                    Some(prev) => Expr::bin(BFn::And, prev, c),
                });
            }
            PadMode::Wrap => {
                // ((j % n) + n) % n: C's remainder takes the dividend's sign.
                let m = Expr::bin(BFn::Rem, j, Expr::i(n));
                let m = Expr::bin(BFn::Rem, Expr::add(m, Expr::i(n)), Expr::i(n));
                xi.push(Index::dynamic(m));
            }
            PadMode::Edge => {
                xi.push(Index::dynamic(Expr::max(
                    Expr::i(0),
                    Expr::min(Expr::i(n - 1), j),
                )));
            }
            PadMode::Reflect => {
                let a = Expr::select(
                    Expr::bin(BFn::Lt, j.clone(), Expr::i(0)),
                    Expr::un(UFn::Neg, j.clone()),
                    j,
                );
                let b = Expr::select(
                    Expr::bin(BFn::Ge, a.clone(), Expr::i(n)),
                    Expr::sub(Expr::i(2 * (n - 1)), a.clone()),
                    a,
                );
                xi.push(Index::dynamic(b));
            }
        }
    }
    let v = nb.load(x, xi);
    let body = match cond {
        Some(c) => Expr::select(c, v, Expr::k(value, dt)),
        None => v,
    };
    nb.store(out, dims_index(&d), body);
    l.push(nb);
    Ok(out)
}

pub(crate) fn pad_node(
    l: &mut Lowerer,
    _node: &Node,
    pads: &[usize],
    mode: PadMode,
    value: f32,
) -> Result<TensorId> {
    let x = l.input(0)?;
    let t = pad(l, x, pads, mode, value as f64)?;
    if t == x {
        return view_reshape(l, x, &l.shape(x));
    }
    Ok(t)
}

pub(crate) fn tile(l: &mut Lowerer, _node: &Node, repeats: &[usize]) -> Result<TensorId> {
    let x = l.input(0)?;
    let (dt, xs) = l.ty(x);
    let (_, shape) = l.out_ty(0);
    let out = l.result("tile", dt, &shape);
    let mut nb = NB::new(NestKind::Copy, "tile");
    let d = nb.pars(&shape);
    let xi = (0..xs.len())
        .map(|i| {
            if repeats[i] == 1 {
                Index::dim(d[i])
            } else {
                Index::dynamic(Expr::bin(
                    BFn::Rem,
                    Expr::DimIndex(d[i]),
                    Expr::i(xs[i] as i64),
                ))
            }
        })
        .collect();
    let v = nb.load(x, xi);
    nb.store(out, dims_index(&d), v);
    l.push(nb);
    Ok(out)
}
