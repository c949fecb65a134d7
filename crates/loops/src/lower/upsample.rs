//! PRelu, Resize and ConvTranspose.
//!
//! * PRelu is one elementwise nest, the slope broadcast through its indexing map.
//! * Resize nearest is one gather copy nest: each resized axis reads its source index
//!   from a small i64 table (the per-axis sampling of `pimkit_ir::resize_axis_taps`).
//!   Linear and cubic modes are separable: per resized axis, a contraction nest over the
//!   axis's taps with index and weight tables (fill + contraction, like a matmul).
//! * ConvTranspose is scatter-free: every output element gathers the input elements
//!   whose stride-expanded footprint covers it, `i = (o + pad - k*dil) / stride`, guarded
//!   by `0 <= i < in` and divisibility (the input load sits in the guarded branch).

use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::*;
use crate::lower::builder::dims_index;
use crate::lower::linalg::{GroupedConvDims, grouped_conv_dims};
use pimkit_ir::operand::{conv, prelu};
use pimkit_ir::{AxisTaps, ConvTransposeAttrs, DType, Node, ResizeAttrs, ResizeMode, Tensor};
use std::sync::Arc;

pub(crate) fn prelu(l: &mut Lowerer, _node: &Node) -> Result<TensorId> {
    let x = l.input(prelu::X)?;
    let slope = l.input(prelu::SLOPE)?;
    let (dt, shape) = l.out_ty(0);
    l.map_to(
        "prelu",
        NestKind::Elementwise,
        &[x, slope],
        dt,
        &shape,
        |v| {
            let neg = Expr::bin(BFn::Lt, v[0].clone(), Expr::k(0.0, dt));
            Expr::select(neg, Expr::mul(v[0].clone(), v[1].clone()), v[0].clone())
        },
    )
}

/// A constant table created by the lowering (index or weight table).
fn table(l: &mut Lowerer, label: &str, t: Tensor) -> TensorId {
    let name = format!("{}.{label}", l.node().name);
    let (dt, shape) = (t.dtype(), t.shape.clone());
    l.new_tensor(
        &name,
        dt,
        &shape,
        TensorDef::Const {
            data: Some(Arc::new(t)),
        },
    )
}

pub(crate) fn resize(l: &mut Lowerer, _node: &Node, a: &ResizeAttrs) -> Result<TensorId> {
    let x = l.input(0)?;
    let (dt, xs) = l.ty(x);
    let (_, out) = l.out_ty(0);
    if xs.contains(&0) {
        return Err(l.unsupported("empty input"));
    }
    match a.mode {
        ResizeMode::Nearest(_) => resize_nearest(l, x, &xs, &out, a, dt),
        ResizeMode::Linear | ResizeMode::Cubic => {
            let mut cur = x;
            let mut shape = xs.clone();
            for axis in 0..xs.len() {
                if pimkit_ir::resize_axis_is_identity(a, axis, xs[axis]) {
                    continue;
                }
                cur = resize_axis(l, cur, &mut shape, axis, a, dt)?;
            }
            if cur == x {
                return l.map_to("copy", NestKind::Copy, &[x], dt, &out, |v| v[0].clone());
            }
            Ok(cur)
        }
    }
}

fn resize_nearest(
    l: &mut Lowerer,
    x: TensorId,
    xs: &[usize],
    out: &[usize],
    a: &ResizeAttrs,
    dt: DType,
) -> Result<TensorId> {
    let y = l.result("resize", dt, out);
    let mut nb = NB::new(NestKind::Copy, "resize.nearest");
    let d = nb.pars(out);
    let mut xi = Vec::with_capacity(xs.len());
    let mut extrapolate: Option<Expr> = None;
    for axis in 0..xs.len() {
        if pimkit_ir::resize_axis_is_identity(a, axis, xs[axis]) {
            xi.push(Index::dim(d[axis]));
            continue;
        }
        let taps = pimkit_ir::resize_axis_taps(a, axis, xs[axis]);
        // Index -1 marks tf_crop_and_resize extrapolation.
        let idx: Vec<i64> = taps
            .iter()
            .map(|t| match t {
                AxisTaps::Mix(v) => v[0].0 as i64,
                AxisTaps::Extrapolate => -1,
            })
            .collect();
        let any_extra = idx.contains(&-1);
        let tab = table(
            l,
            &format!("idx{axis}"),
            Tensor::from_i64(vec![idx.len()], idx),
        );
        let iv = nb.load(tab, vec![Index::dim(d[axis])]);
        if any_extra {
            let c = Expr::bin(BFn::Lt, iv.clone(), Expr::i(0));
            extrapolate = Some(match extrapolate {
                None => c,
                Some(p) => Expr::bin(BFn::Or, p, c),
            });
        }
        xi.push(Index::dynamic(iv));
    }
    let v = nb.load(x, xi);
    let body = match extrapolate {
        Some(c) => Expr::select(c, Expr::k(a.extrapolation_value as f64, dt), v),
        None => v,
    };
    nb.store(y, dims_index(&d), body);
    l.push(nb);
    Ok(y)
}

/// One separable linear/cubic pass over `axis`: fill with the extrapolation term, then
/// `y[.., j, ..] += w[j, t] * x[.., idx[j, t], ..]` over the axis's taps t.
fn resize_axis(
    l: &mut Lowerer,
    x: TensorId,
    shape: &mut [usize],
    axis: usize,
    a: &ResizeAttrs,
    dt: DType,
) -> Result<TensorId> {
    let taps = pimkit_ir::resize_axis_taps(a, axis, shape[axis]);
    let ntap = taps
        .iter()
        .map(|t| match t {
            AxisTaps::Mix(v) => v.len(),
            AxisTaps::Extrapolate => 0,
        })
        .max()
        .unwrap_or(0)
        .max(1);
    let n = taps.len();
    let mut idx = vec![0i64; n * ntap];
    let mut wts = vec![0f32; n * ntap];
    let mut extra = vec![0f32; n];
    for (j, t) in taps.iter().enumerate() {
        match t {
            AxisTaps::Mix(v) => {
                for (k, &(i, w)) in v.iter().enumerate() {
                    idx[j * ntap + k] = i as i64;
                    wts[j * ntap + k] = w as f32;
                }
            }
            AxisTaps::Extrapolate => extra[j] = a.extrapolation_value,
        }
    }
    let mut out = shape.to_vec();
    out[axis] = n;
    let init = if extra.iter().any(|&e| e != 0.0) {
        let e = table(l, &format!("extra{axis}"), Tensor::from_f32(vec![n], extra));
        let mut es = vec![1; out.len()];
        es[axis] = n;
        let ev = super::shape::view_reshape(l, e, &es)?;
        l.map_to(
            &format!("axis{axis}.init"),
            NestKind::Copy,
            &[ev],
            dt,
            &out,
            |v| v[0].clone(),
        )?
    } else {
        l.fill(&format!("axis{axis}.fill"), dt, &out, 0.0)
    };
    let itab = table(
        l,
        &format!("idx{axis}"),
        Tensor::from_i64(vec![n, ntap], idx),
    );
    let wtab = table(l, &format!("w{axis}"), Tensor::from_f32(vec![n, ntap], wts));
    let label = format!("resize.axis{axis}");
    let y = l.result_init(&label, init);
    let mut nb = NB::new(NestKind::Contraction, label);
    let d = nb.pars(&out);
    let dt_ = nb.red(ntap);
    let tix = vec![Index::dim(d[axis]), Index::dim(dt_)];
    let iv = nb.load(itab, tix.clone());
    let wv = nb.load(wtab, tix);
    let mut xi = dims_index(&d);
    xi[axis] = Index::dynamic(iv);
    let xv = nb.load(x, xi);
    let oi = dims_index(&d);
    let old = nb.load(y, oi.clone());
    let wv = if dt == DType::F32 {
        wv
    } else {
        Expr::cast(dt, wv)
    };
    nb.store(y, oi, Expr::add(old, Expr::mul(wv, xv)));
    l.push(nb);
    shape[axis] = n;
    Ok(y)
}

pub(crate) fn conv_transpose(
    l: &mut Lowerer,
    _node: &Node,
    a: &ConvTransposeAttrs,
) -> Result<TensorId> {
    let x = l.input(conv::X)?;
    let w = l.input(conv::W)?;
    let b = l.opt_input(conv::B)?;
    let (dt, out) = l.out_ty(0);
    let xs = l.shape(x);
    let init = match b {
        Some(b) => {
            let mut bs = vec![out[1]];
            bs.extend(std::iter::repeat_n(1, out.len() - 2));
            let bv = super::shape::view_reshape(l, b, &bs)?;
            l.map_to("bias", NestKind::Copy, &[bv], dt, &out, |v| v[0].clone())?
        }
        None => l.fill("fill", dt, &out, 0.0),
    };
    let r = a.kernel.len();
    let g = a.group;
    let (cpg, mpg) = (xs[1] / g, out[1] / g);
    let y = l.result_init("conv_transpose", init);
    let mut nb = NB::new(NestKind::Contraction, "conv_transpose");
    let GroupedConvDims {
        dn,
        dg,
        dm,
        dout,
        dc,
        dk,
    } = grouped_conv_dims(&mut nb, &out, g, mpg, cpg, &a.kernel);
    let cin = Index::affine(vec![(dg, cpg as i64), (dc, 1)], 0);
    let mut xi = vec![Index::dim(dn), cin.clone()];
    let mut guard: Option<Expr> = None;
    let mut and = |c: Expr| {
        guard = Some(match guard.take() {
            None => c,
            Some(p) => Expr::bin(BFn::And, p, c),
        })
    };
    for i in 0..r {
        let (s, dil, pb) = (a.strides[i] as i64, a.dilations[i] as i64, a.pads[i] as i64);
        // Stride-expanded input coordinate hit by output o through tap k.
        let t = Expr::sub(
            Expr::add(Expr::DimIndex(dout[i]), Expr::i(pb)),
            Expr::mul(Expr::DimIndex(dk[i]), Expr::i(dil)),
        );
        let n_in = xs[2 + i] as i64;
        if s == 1 {
            and(Expr::bin(BFn::Ge, t.clone(), Expr::i(0)));
            and(Expr::bin(BFn::Lt, t, Expr::i(n_in)));
            xi.push(Index::affine(vec![(dout[i], 1), (dk[i], -dil)], pb));
        } else {
            and(Expr::bin(BFn::Ge, t.clone(), Expr::i(0)));
            and(Expr::bin(
                BFn::Eq,
                Expr::bin(BFn::Rem, t.clone(), Expr::i(s)),
                Expr::i(0),
            ));
            and(Expr::bin(BFn::Lt, t.clone(), Expr::i(n_in * s)));
            xi.push(Index::dynamic(Expr::div(t, Expr::i(s))));
        }
    }
    let mut wi = vec![cin, Index::dim(dm)];
    wi.extend(dk.iter().map(|&d| Index::dim(d)));
    let mut oi = vec![
        Index::dim(dn),
        Index::affine(vec![(dg, mpg as i64), (dm, 1)], 0),
    ];
    oi.extend(dout.iter().map(|&d| Index::dim(d)));
    let xv = nb.load(x, xi);
    let xv = match guard {
        Some(c) => Expr::select(c, xv, Expr::k(0.0, dt)),
        None => xv,
    };
    let wv = nb.load(w, wi);
    let old = nb.load(y, oi.clone());
    nb.store(y, oi, Expr::add(old, Expr::mul(xv, wv)));
    l.push(nb);
    Ok(y)
}
