//! Named linalg ops: matmul / gemm (fill + contraction), convolution (pad + init +
//! conv), pooling (pad + fill + window reduction, + divide for average).

use super::builder::{bcast_index, dims_index};
use super::reduce::lowest;
use super::shape::{pad, view_reshape};
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::*;
use pimkit_ir::operand::{conv, gemm};
use pimkit_ir::{ConvAttrs, DType, Node, PadMode, PoolAttrs, PoolKind};

/// Indices of a numpy matmul's operands over out dims `d` (batch.., m?, n?) and `k`.
pub(crate) fn matmul_indices(
    a_shape: &[usize],
    b_shape: &[usize],
    out_shape: &[usize],
    d: &[usize],
    k: usize,
) -> (Vec<Index>, Vec<Index>) {
    let (ar, br) = (a_shape.len(), b_shape.len());
    let nbatch = out_shape.len() - usize::from(ar > 1) - usize::from(br > 1);
    let (ob, obd) = (&out_shape[..nbatch], &d[..nbatch]);
    let ai = if ar == 1 {
        vec![Index::dim(k)]
    } else {
        let mut v = bcast_index(&a_shape[..ar - 2], ob, obd);
        v.push(Index::dim(d[nbatch]));
        v.push(Index::dim(k));
        v
    };
    let bi = if br == 1 {
        vec![Index::dim(k)]
    } else {
        let mut v = bcast_index(&b_shape[..br - 2], ob, obd);
        v.push(Index::dim(k));
        v.push(Index::dim(*d.last().expect("matmul output has an n dim")));
        v
    };
    (ai, bi)
}

/// `aten.mm` / `aten.bmm`: fill(0) + contraction (2 nests). `pre` maps the loaded
/// operands (casts, zero-point shifts) before the multiply.
pub(crate) fn contraction(
    l: &mut Lowerer,
    a: TensorId,
    b: TensorId,
    acc_dt: DType,
    out_shape: &[usize],
    k_extent: usize,
    indices: impl FnOnce(&[usize], usize) -> (Vec<Index>, Vec<Index>),
    pre: impl Fn(Expr, Expr) -> (Expr, Expr),
) -> TensorId {
    let acc = l.fill("fill", acc_dt, out_shape, 0.0);
    let r = l.result_init("matmul", acc);
    let mut nb = NB::new(NestKind::Contraction, "matmul");
    let d = nb.pars(out_shape);
    let k = nb.red(k_extent);
    let (ai, bi) = indices(&d, k);
    let av = nb.load(a, ai);
    let bv = nb.load(b, bi);
    let (av, bv) = pre(av, bv);
    let oi = dims_index(&d);
    let old = nb.load(r, oi.clone());
    nb.store(r, oi, Expr::add(old, Expr::mul(av, bv)));
    l.push(nb);
    r
}

pub(crate) fn matmul(l: &mut Lowerer, _node: &Node) -> Result<TensorId> {
    let a = l.input(gemm::A)?;
    let b = l.input(gemm::B)?;
    let (dt, out) = l.out_ty(0);
    let (sa, sb) = (l.shape(a), l.shape(b));
    let kx = *sa.last().ok_or_else(|| l.err("rank-0 operand"))?;
    let o2 = out.clone();
    Ok(contraction(
        l,
        a,
        b,
        dt,
        &out,
        kx,
        |d, k| matmul_indices(&sa, &sb, &o2, d, k),
        |x, y| (x, y),
    ))
}

pub(crate) fn gemm(
    l: &mut Lowerer,
    _node: &Node,
    alpha: f32,
    beta: f32,
    ta: bool,
    tb: bool,
) -> Result<TensorId> {
    let a = l.input(gemm::A)?;
    let b = l.input(gemm::B)?;
    let c = l.opt_input(gemm::C)?;
    let (dt, out) = l.out_ty(0);
    let sa = l.shape(a);
    let kx = if ta { sa[0] } else { sa[1] };
    let idx = |d: &[usize], k: usize| {
        let ai = if ta {
            vec![Index::dim(k), Index::dim(d[0])]
        } else {
            vec![Index::dim(d[0]), Index::dim(k)]
        };
        let bi = if tb {
            vec![Index::dim(d[1]), Index::dim(k)]
        } else {
            vec![Index::dim(k), Index::dim(d[1])]
        };
        (ai, bi)
    };
    let acc = contraction(l, a, b, dt, &out, kx, idx, |x, y| (x, y));
    if c.is_none() && alpha == 1.0 {
        return Ok(acc);
    }
    let mut ins = vec![acc];
    ins.extend(c);
    let has_c = c.is_some();
    l.map_to("epilogue", NestKind::Elementwise, &ins, dt, &out, |v| {
        let mut e = v[0].clone();
        if alpha != 1.0 {
            e = Expr::mul(Expr::k(alpha as f64, dt), e);
        }
        if has_c {
            let cv = if beta != 1.0 {
                Expr::mul(Expr::k(beta as f64, dt), v[1].clone())
            } else {
                v[1].clone()
            };
            e = Expr::add(e, cv);
        }
        e
    })
}

/// Full-rank ONNX pads for an [N, C, spatial..] tensor from spatial pads.
pub(crate) fn full_pads(spatial_pads: &[usize]) -> Vec<usize> {
    let r = spatial_pads.len() / 2;
    let mut p = vec![0, 0];
    p.extend(&spatial_pads[..r]);
    p.extend([0, 0]);
    p.extend(&spatial_pads[r..]);
    p
}

/// The convolution nest over a padded input `xp`: dims n, g, m/g, out spatial
/// (parallel); c/g, kernel (reduction). `pre` maps (x, w) loads.
pub(crate) fn conv_nest(
    l: &mut Lowerer,
    xp: TensorId,
    w: TensorId,
    init: TensorId,
    a: &ConvAttrs,
    pre: impl Fn(Expr, Expr) -> (Expr, Expr),
) -> TensorId {
    conv_nest_with(l, xp, w, init, a, |_, x, w, _| pre(x, w))
}

/// The iteration domain of a grouped convolution (and of its transpose): parallel batch,
/// group, channel within the group and output positions; reduction over the input
/// channels of the group and the kernel positions.
pub(crate) struct GroupedConvDims {
    pub dn: usize,
    pub dg: usize,
    pub dm: usize,
    pub dout: Vec<usize>,
    pub dc: usize,
    pub dk: Vec<usize>,
}

pub(crate) fn grouped_conv_dims(
    nb: &mut NB,
    out: &[usize],
    groups: usize,
    out_per_group: usize,
    in_per_group: usize,
    kernel: &[usize],
) -> GroupedConvDims {
    let dn = nb.par(out[0]);
    let dg = nb.par(groups);
    let dm = nb.par(out_per_group);
    let dout = out[2..].iter().map(|&e| nb.par(e)).collect();
    let dc = nb.red(in_per_group);
    let dk = kernel.iter().map(|&e| nb.red(e)).collect();
    GroupedConvDims {
        dn,
        dg,
        dm,
        dout,
        dc,
        dk,
    }
}

/// [`conv_nest`] whose `pre` also gets the nest builder and the output-channel index
/// (per-channel weight zero points load through it).
pub(crate) fn conv_nest_with(
    l: &mut Lowerer,
    xp: TensorId,
    w: TensorId,
    init: TensorId,
    a: &ConvAttrs,
    pre: impl FnOnce(&mut NB, Expr, Expr, &Index) -> (Expr, Expr),
) -> TensorId {
    let (_, out) = l.ty(init);
    let cin = l.shape(xp)[1];
    let m = out[1];
    let (g, mpg, cpg) = (a.group, m / a.group, cin / a.group);
    let label = if g > 1 && mpg == 1 && cpg == 1 {
        "depthwise_conv"
    } else {
        "conv"
    };
    let r = l.result_init(label, init);
    let mut nb = NB::new(NestKind::Contraction, label);
    let GroupedConvDims {
        dn,
        dg,
        dm,
        dout,
        dc,
        dk,
    } = grouped_conv_dims(&mut nb, &out, g, mpg, cpg, &a.kernel);
    let mch = Index::affine(vec![(dg, mpg as i64), (dm, 1)], 0);
    let mut oi = vec![Index::dim(dn), mch.clone()];
    oi.extend(dout.iter().map(|&d| Index::dim(d)));
    let mut xi = vec![
        Index::dim(dn),
        Index::affine(vec![(dg, cpg as i64), (dc, 1)], 0),
    ];
    for i in 0..dout.len() {
        xi.push(Index::affine(
            vec![
                (dout[i], a.strides[i] as i64),
                (dk[i], a.dilations[i] as i64),
            ],
            0,
        ));
    }
    let mch_w = mch.clone();
    let mut wi = vec![mch, Index::dim(dc)];
    wi.extend(dk.iter().map(|&d| Index::dim(d)));
    let xv = nb.load(xp, xi);
    let wv = nb.load(w, wi);
    let (xv, wv) = pre(&mut nb, xv, wv, &mch_w);
    let old = nb.load(r, oi.clone());
    nb.store(r, oi, Expr::add(old, Expr::mul(xv, wv)));
    l.push(nb);
    r
}

pub(crate) fn conv(l: &mut Lowerer, _node: &Node, a: &ConvAttrs) -> Result<TensorId> {
    let x = l.input(conv::X)?;
    let w = l.input(conv::W)?;
    let b = l.opt_input(conv::B)?;
    let (dt, out) = l.out_ty(0);
    let xp = pad(l, x, &full_pads(&a.pads), PadMode::Constant, 0.0)?;
    let init = match b {
        Some(b) => {
            let mut bs = vec![out[1]];
            bs.extend(std::iter::repeat_n(1, out.len() - 2));
            let bv = view_reshape(l, b, &bs)?;
            l.map_to("bias", NestKind::Copy, &[bv], dt, &out, |v| v[0].clone())?
        }
        None => l.fill("fill", dt, &out, 0.0),
    };
    Ok(conv_nest(l, xp, w, init, a, |x, w| (x, w)))
}

pub(crate) fn pool(l: &mut Lowerer, _node: &Node, p: &PoolAttrs) -> Result<TensorId> {
    let x = l.input(0)?;
    let (dt, out) = l.out_ty(0);
    pool_of(l, x, p, dt, &out)
}

/// Max or average pooling of `x` into a result of `dt` and shape `out`.
pub(crate) fn pool_of(
    l: &mut Lowerer,
    x: TensorId,
    p: &PoolAttrs,
    dt: DType,
    out: &[usize],
) -> Result<TensorId> {
    let out = out.to_vec();
    let xs = l.shape(x);
    let r = p.kernel.len();
    let is_max = p.kind == PoolKind::Max;
    let padv = if is_max { lowest(dt) } else { 0.0 };
    let xp = pad(l, x, &full_pads(&p.pads), PadMode::Constant, padv)?;
    let ps = l.shape(xp);
    let acc = l.fill("fill", dt, &out, padv);
    let label = if is_max { "maxpool" } else { "avgpool.sum" };
    let res = l.result_init(label, acc);
    let mut nb = NB::new(NestKind::Reduction, label);
    let dn = nb.par(out[0]);
    let dc = nb.par(out[1]);
    let dout: Vec<usize> = out[2..].iter().map(|&e| nb.par(e)).collect();
    let dk: Vec<usize> = p.kernel.iter().map(|&e| nb.red(e)).collect();
    let mut xi = vec![Index::dim(dn), Index::dim(dc)];
    let mut guard: Option<Expr> = None;
    for i in 0..r {
        let (s, dil) = (p.strides[i] as i64, p.dilations[i] as i64);
        xi.push(Index::affine(vec![(dout[i], s), (dk[i], dil)], 0));
        let last = (out[2 + i] as i64 - 1) * s + (p.kernel[i] as i64 - 1) * dil;
        if last >= ps[2 + i] as i64 {
            // ceil_mode windows that run past the padded input.
            let pos = Expr::add(
                Expr::mul(Expr::DimIndex(dout[i]), Expr::i(s)),
                Expr::mul(Expr::DimIndex(dk[i]), Expr::i(dil)),
            );
            let c = Expr::bin(BFn::Lt, pos, Expr::i(ps[2 + i] as i64));
            guard = Some(match guard {
                None => c,
                Some(g) => Expr::bin(BFn::And, g, c),
            });
        }
    }
    let oi = {
        let mut v = vec![Index::dim(dn), Index::dim(dc)];
        v.extend(dout.iter().map(|&d| Index::dim(d)));
        v
    };
    let mut xv = nb.load(xp, xi);
    if let Some(g) = guard {
        xv = Expr::select(g, xv, Expr::k(padv, dt));
    }
    let old = nb.load(res, oi.clone());
    let body = if is_max {
        Expr::max(old, xv)
    } else {
        Expr::add(old, xv)
    };
    nb.store(res, oi.clone(), body);
    l.push(nb);
    if is_max {
        return Ok(res);
    }
    // Average: divide by the window count (constant unless padding or ceil mode cut it).
    let y = l.result("avgpool.div", dt, &out);
    let mut nb = NB::new(NestKind::Elementwise, "avgpool.div");
    let d = nb.pars(&out);
    let mut count = Expr::i(1);
    for i in 0..r {
        let (s, k) = (
            p.strides[i] as i64,
            p.kernel[i] as i64 * p.dilations[i] as i64 - (p.dilations[i] as i64 - 1),
        );
        let (pb, pe, h) = (p.pads[i] as i64, p.pads[i + r] as i64, xs[2 + i] as i64);
        let lo = Expr::sub(Expr::mul(Expr::DimIndex(d[2 + i]), Expr::i(s)), Expr::i(pb));
        let c = if p.count_include_pad {
            Expr::sub(
                Expr::min(Expr::add(lo.clone(), Expr::i(k)), Expr::i(h + pe)),
                lo,
            )
        } else {
            Expr::sub(
                Expr::min(Expr::add(lo.clone(), Expr::i(k)), Expr::i(h)),
                Expr::max(lo, Expr::i(0)),
            )
        };
        count = Expr::mul(count, c);
    }
    let v = nb.load(res, dims_index(&d));
    nb.store(y, dims_index(&d), Expr::div(v, Expr::cast(dt, count)));
    l.push(nb);
    Ok(y)
}
