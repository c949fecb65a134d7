//! com.microsoft QLinearAveragePool, QLinearSoftmax and QLinearWhere, decomposed into
//! nests that compute onnxruntime's float sequences bit-exactly with pimkit-interp
//! (dequantize + float average pool + requantize; table lookup + max + f32 sum + divide;
//! two requantizing tables + select).

use super::builder::dims_index;
use super::linalg::pool_of;
use super::qcommon::*;
use super::quant::new_const;
use super::shape::view_reshape;
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::*;
use pimkit_ir::operand::{qlinear_unary as qu, qlinear_where as qw};
use pimkit_ir::{DType, Node, PoolAttrs, Tensor, TensorData};
use std::sync::Arc;

/// A one-element parameter's value, or an error naming it (the tables and the
/// requantization need the parameters at lowering time).
fn value(l: &Lowerer, t: Option<TensorId>, what: &str) -> Result<f64> {
    match t {
        None => Ok(0.0),
        Some(t) => l
            .scalar(t)
            .ok_or_else(|| l.unsupported(format!("{what} must be a constant scalar"))),
    }
}

/// `f32(x - zp) * scale` for every element: one elementwise nest.
fn dequantize(l: &mut Lowerer, x: TensorId, s: TensorId, zp: Option<TensorId>) -> Result<TensorId> {
    let mut ins = vec![x, s];
    ins.extend(zp);
    let has_zp = zp.is_some();
    l.map("dequantize", NestKind::Elementwise, &ins, DType::F32, |v| {
        let q = minus(i32_of(v[0].clone()), has_zp.then(|| i32_of(v[2].clone())));
        Expr::mul(Expr::cast(DType::F32, q), v[1].clone())
    })
}

/// QLinearAveragePool: dequantize, the float average pool, then
/// `RNE(f32(y / y_s) + f32(y_zp))` saturated. A window covering the whole image without
/// padding is QLinearGlobalAveragePool (integer sums), as in onnxruntime.
pub(crate) fn qlinear_avg_pool(l: &mut Lowerer, n: &Node, p: &PoolAttrs) -> Result<TensorId> {
    let (x, x_s, xzp) = (
        l.input(qu::X)?,
        l.input(qu::X_SCALE)?,
        l.opt_input(qu::X_ZERO_POINT)?,
    );
    let (y_s, yzp) = (l.input(qu::Y_SCALE)?, l.opt_input(qu::Y_ZERO_POINT)?);
    let (dt, out) = l.out_ty(0);
    let (lo, hi) = qrange(l, dt)?;
    let xs = l.shape(x);
    if p.kernel[..] == xs[2..] && p.pads.iter().all(|&v| v == 0) && out[2..].iter().all(|&d| d == 1)
    {
        return super::qops::qlinear_gap(l, n, false);
    }
    for (t, w) in [(x_s, "x_scale"), (y_s, "y_scale")] {
        check_scalar(l, t, w)?;
    }
    let deq = dequantize(l, x, x_s, xzp)?;
    let avg = pool_of(l, deq, p, DType::F32, &out)?;
    let mut ins = vec![avg, y_s];
    ins.extend(yzp);
    let has_zp = yzp.is_some();
    l.map_to("requantize", NestKind::Elementwise, &ins, dt, &out, |v| {
        let z = if has_zp {
            Expr::cast(DType::F32, i32_of(v[2].clone()))
        } else {
            Expr::f(0.0)
        };
        cvt_saturate(
            Expr::add(Expr::div(v[0].clone(), v[1].clone()), z),
            dt,
            lo,
            hi,
        )
    })
}

/// QLinearSoftmax over `[outer, D, inner]`: exp table gather (1 nest), row max (2),
/// f32 sum in order (2), divide and requantize (1). The table and parameters are
/// computed at lowering time exactly as the interpreter computes them.
pub(crate) fn qlinear_softmax(
    l: &mut Lowerer,
    _n: &Node,
    axis: usize,
    flatten: bool,
) -> Result<TensorId> {
    let (x, x_s) = (l.input(qu::X)?, l.input(qu::X_SCALE)?);
    let (y_s, yzp) = (l.input(qu::Y_SCALE)?, l.opt_input(qu::Y_ZERO_POINT)?);
    let (dt, shape) = l.out_ty(0);
    let r = shape.len();
    let outer: usize = shape[..axis].iter().product();
    let (d, inner) = if flatten {
        (shape[axis..].iter().product::<usize>(), 1)
    } else {
        (shape[axis], shape[axis + 1..r].iter().product::<usize>())
    };
    let xs = value(l, Some(x_s), "X_scale")? as f32;
    let ys = value(l, Some(y_s), "Y_scale")? as f32;
    let yz = value(l, yzp, "Y_zero_point")? as i64;
    let bs = (((f32::MAX / d.max(1) as f32) as f64).ln() - 5.0).max(0.0) / xs as f64;
    let table: Vec<f32> = (0..256)
        .map(|i| ((i as f64 - 255.0 + bs) * xs as f64).exp() as f32)
        .collect();
    let ys_floor = (1.0 / ys).floor();
    let tt = l.new_tensor(
        "softmax.table",
        DType::F32,
        &[256],
        TensorDef::Const {
            data: Some(Arc::new(Tensor {
                shape: vec![256],
                data: TensorData::F32(table),
            })),
        },
    );
    let x3 = view_reshape(l, x, &[outer, d, inner])?;
    let (m, _) = super::reduce::max_dim(l, "max", x3, 1, true, false)?;
    // e = table[255 + x - max]
    let e = l.result("exp", DType::F32, &[outer, d, inner]);
    let mut nb = NB::new(NestKind::Copy, "exp");
    let dd = nb.pars(&[outer, d, inner]);
    let xv = nb.load(x3, dims_index(&dd));
    let mv = nb.load(m, vec![Index::dim(dd[0]), Index::c(0), Index::dim(dd[2])]);
    let ix = Expr::add(
        Expr::sub(Expr::cast(DType::I64, xv), Expr::cast(DType::I64, mv)),
        Expr::i(255),
    );
    let tv = nb.load(tt, vec![Index::dynamic(ix)]);
    nb.store(e, dims_index(&dd), tv);
    l.push(nb);
    let s = super::reduce::sum(l, "sum", e, &[1], true)?;
    let signed = dt == DType::I8;
    let q = l.map("requantize", NestKind::Elementwise, &[e, s], dt, |v| {
        // cvt (RNE; NaN or out of range -> INT_MIN), + zero point (int32, wrapping),
        // then the kernel's saturation.
        let val = Expr::div(
            Expr::mul(v[0].clone(), Expr::f(ys_floor as f64)),
            v[1].clone(),
        );
        let rnd = Expr::un(UFn::Round, val);
        let ok = Expr::bin(
            BFn::And,
            Expr::bin(BFn::Ge, rnd.clone(), Expr::f(-2_147_483_648.0)),
            Expr::bin(BFn::Lt, rnd.clone(), Expr::f(2_147_483_648.0)),
        );
        let as_i32 = Expr::select(
            ok,
            Expr::cast(DType::I32, Expr::cast(DType::I64, rnd)),
            Expr::k(i32::MIN as f64, DType::I32),
        );
        let qv = Expr::add(as_i32, Expr::k(yz as f64, DType::I32));
        if signed {
            Expr::cast(
                dt,
                Expr::min(
                    Expr::max(qv, Expr::k(-128.0, DType::I32)),
                    Expr::k(127.0, DType::I32),
                ),
            )
        } else {
            Expr::cast(dt, Expr::min(qv, Expr::k(255.0, DType::I32)))
        }
    })?;
    view_reshape(l, q, &shape)
}

/// QLinearWhere: x and y through requantizing tables (one elementwise nest each, as
/// QLinearConcat's identity table), then one select nest.
pub(crate) fn qlinear_where(l: &mut Lowerer, _n: &Node) -> Result<TensorId> {
    let cond = l.input(qw::CONDITION)?;
    let (dt, shape) = l.out_ty(0);
    let (lo, hi) = qrange(l, dt)?;
    let (zs_t, zz_t) = (l.input(qw::Z_SCALE)?, l.opt_input(qw::Z_ZERO_POINT)?);
    let zs = value(l, Some(zs_t), "z_scale")? as f32;
    let zz = value(l, zz_t, "z_zero_point")? as i32;
    let mut req = vec![];
    for (xi, si, zi, what) in [
        (qw::X, qw::X_SCALE, qw::X_ZERO_POINT, "x"),
        (qw::Y, qw::Y_SCALE, qw::Y_ZERO_POINT, "y"),
    ] {
        let x = l.input(xi)?;
        let (s_t, z_t) = (l.input(si)?, l.opt_input(zi)?);
        let s = value(l, Some(s_t), &format!("{what}_scale"))? as f32;
        let z = value(l, z_t, &format!("{what}_zero_point"))? as i32;
        let ilo = l
            .dtype(x)
            .quant_range()
            .map(|r| r.0)
            .ok_or_else(|| l.unsupported(format!("{what} is not u8 or i8")))?;
        let vals: Vec<i32> = (0..256)
            .map(|k| quantize_f32(s * (ilo + k - z) as f32, zs, zz, lo as i32, hi as i32))
            .collect();
        let table = new_const(l, &format!("{what}.table"), dt, Some(vals));
        let (_, xs) = l.ty(x);
        let y = l.result(&format!("{what}.requant"), dt, &xs);
        let mut nb = NB::new(NestKind::Copy, format!("{what}.requant"));
        let d = nb.pars(&xs);
        let xv = nb.load(x, dims_index(&d));
        let ix = Expr::sub(Expr::cast(DType::I64, xv), Expr::i(ilo as i64));
        let v = nb.load(table, vec![Index::dynamic(ix)]);
        nb.store(y, dims_index(&d), v);
        l.push(nb);
        req.push(y);
    }
    l.map_to(
        "where",
        NestKind::Elementwise,
        &[cond, req[0], req[1]],
        dt,
        &shape,
        |v| Expr::select(v[0].clone(), v[1].clone(), v[2].clone()),
    )
}
