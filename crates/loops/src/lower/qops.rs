//! com.microsoft quantized ops: QGemm, QLinearAdd / QLinearMul, QLinearConcat,
//! QLinearGlobalAveragePool and the lookup-table ops (QLinearSigmoid,
//! QLinearLeakyRelu). Formulas mirror pimkit-interp (which mirrors the x86 MLAS
//! kernels) operation by operation in f32.

use super::builder::dims_index;
use super::qcommon::*;
use super::quant::new_const;
use super::shape::concat_list;
use super::{Lowerer, NB};
use crate::error::Result;
use crate::ir::*;
use pimkit_ir::operand::{
    qgemm as qg, qlinear_binary as qb, qlinear_concat as qcat, qlinear_unary as qu,
};
use pimkit_ir::{DType, Node};

fn zp_or_zero(e: Option<&Expr>) -> Expr {
    e.map_or(Expr::k(0.0, DType::I32), |e| i32_of(e.clone()))
}

/// QGemm: [fill or C copy] + int32 contraction + requantize (or dequantize to f32 when
/// there is no y_scale): 3 nests.
pub(crate) fn qgemm(
    l: &mut Lowerer,
    _n: &Node,
    alpha: f32,
    ta: bool,
    tb: bool,
) -> Result<TensorId> {
    let (a, a_s, azp) = (
        l.input(qg::A)?,
        l.input(qg::A_SCALE)?,
        l.opt_input(qg::A_ZERO_POINT)?,
    );
    let (b, b_s, bzp) = (
        l.input(qg::B)?,
        l.input(qg::B_SCALE)?,
        l.opt_input(qg::B_ZERO_POINT)?,
    );
    let (c, y_s, yzp) = (
        l.opt_input(qg::C)?,
        l.opt_input(qg::Y_SCALE)?,
        l.opt_input(qg::Y_ZERO_POINT)?,
    );
    let (dt, out) = l.out_ty(0);
    let sa = l.shape(a);
    if sa.len() != 2 || l.shape(b).len() != 2 {
        return Err(l.unsupported("QGemm operands must be 2-D"));
    }
    check_scalar(l, a_s, "a_scale")?;
    let kx = if ta { sa[0] } else { sa[1] };
    let n = out[1];
    let init = match c {
        Some(c) => Some(
            l.map_to("bias", NestKind::Copy, &[c], DType::I32, &out, |v| {
                i32_of(v[0].clone())
            })?,
        ),
        None => None,
    };
    let acc = int_contraction(
        l,
        a,
        b,
        init,
        &out,
        kx,
        |d, k| {
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
        },
        |l, nb, d, _, _| {
            let za = match azp {
                Some(z) => Some(i32_of(scalar_load(l, nb, z, "a_zero_point")?)),
                None => None,
            };
            let zb = match bzp {
                Some(z) => Some(i32_of(param_load(
                    l,
                    nb,
                    z,
                    &[n],
                    &[Index::dim(d[1])],
                    "b_zero_point",
                )?)),
                None => None,
            };
            Ok((za, zb))
        },
    )?;
    let label = if y_s.is_some() {
        "requant"
    } else {
        "dequantize"
    };
    let y = l.result(label, dt, &out);
    let mut nb = NB::new(NestKind::Elementwise, label);
    let d = nb.pars(&out);
    let asv = scalar_load(l, &mut nb, a_s, "a_scale")?;
    let bsv = param_load(l, &mut nb, b_s, &[n], &[Index::dim(d[1])], "b_scale")?;
    // (alpha * a_scale) * b_scale[j], f32, onnxruntime's order.
    let col = Expr::mul(Expr::mul(Expr::f(alpha as f64), asv), bsv);
    let accv = nb.load(acc, dims_index(&d));
    let v = match y_s {
        Some(ys) => {
            let (lo, hi) = qrange(l, dt)?;
            let ysv = scalar_load(l, &mut nb, ys, "y_scale")?;
            let z = match yzp {
                Some(t) => i32_of(scalar_load(l, &mut nb, t, "y_zero_point")?),
                None => Expr::k(0.0, DType::I32),
            };
            requant(accv, Expr::div(col, ysv), z, dt, lo, hi)
        }
        None => Expr::mul(Expr::cast(DType::F32, accv), col),
    };
    nb.store(y, dims_index(&d), v);
    l.push(nb);
    Ok(y)
}

/// Whether MLAS sees `b` as the scalar of the innermost broadcast span (then QLinearAdd
/// folds `b` first); see pimkit-interp's `span_kind`.
/// (scalar B span, scalar A span): which operand MLAS sees as the scalar.
fn scalar_spans(ash: &[usize], bsh: &[usize], out: &[usize]) -> (bool, bool) {
    let numel = |s: &[usize]| s.iter().product::<usize>();
    if numel(ash) == 1 {
        return (false, true);
    }
    if numel(bsh) == 1 {
        return (true, false);
    }
    let r = out.len();
    let dim = |s: &[usize], i: usize| {
        if i + s.len() >= r {
            s[i + s.len() - r]
        } else {
            1
        }
    };
    match (0..r).rev().find(|&i| out[i] > 1) {
        Some(i) if dim(ash, i) == 1 => (false, true),
        Some(i) => (dim(bsh, i) == 1, false),
        None => (false, false),
    }
}

/// QLinearAdd / QLinearMul: one elementwise nest.
pub(crate) fn qlinear_binary(l: &mut Lowerer, _n: &Node, mul: bool) -> Result<TensorId> {
    let (a, a_s, azp) = (
        l.input(qb::A)?,
        l.input(qb::A_SCALE)?,
        l.opt_input(qb::A_ZERO_POINT)?,
    );
    let (b, b_s, bzp) = (
        l.input(qb::B)?,
        l.input(qb::B_SCALE)?,
        l.opt_input(qb::B_ZERO_POINT)?,
    );
    let (y_s, yzp) = (l.input(qb::Y_SCALE)?, l.opt_input(qb::Y_ZERO_POINT)?);
    let (dt, out) = l.out_ty(0);
    let (lo, hi) = qrange(l, dt)?;
    for (t, w) in [(a_s, "A_scale"), (b_s, "B_scale"), (y_s, "C_scale")] {
        check_scalar(l, t, w)?;
    }
    // Inputs: a, b, a_s, b_s, y_s, then the zero points that exist.
    let mut ins = vec![a, b, a_s, b_s, y_s];
    let slot = |z: Option<TensorId>, ins: &mut Vec<TensorId>| {
        z.map(|z| {
            ins.push(z);
            ins.len() - 1
        })
    };
    let (za, zb, zy) = (
        slot(azp, &mut ins),
        slot(bzp, &mut ins),
        slot(yzp, &mut ins),
    );
    for &t in &ins[5..] {
        check_scalar(l, t, "zero point")?;
    }
    let (span_b, span_a) = scalar_spans(&l.shape(a), &l.shape(b), &out);
    let kernels = pimkit_interp::ort_kernels();
    if !mul && kernels == pimkit_interp::OrtKernels::Neon {
        return Err(l.unsupported(
            "QLinearAdd with onnxruntime's NEON fixed-point kernel (--ort-kernels neon) is run by the interpreter only",
        ));
    }
    let fma = kernels.qladd_fma();
    let label = if mul { "qmul" } else { "qadd" };
    l.map_to(label, NestKind::Elementwise, &ins, dt, &out, |v| {
        let f = |e: &Expr| Expr::cast(DType::F32, e.clone());
        let (az, bz, yz) = (
            zp_or_zero(za.map(|i| &v[i])),
            zp_or_zero(zb.map(|i| &v[i])),
            zp_or_zero(zy.map(|i| &v[i])),
        );
        let (x, y) = (i32_of(v[0].clone()), i32_of(v[1].clone()));
        if mul {
            let prod = Expr::mul(Expr::sub(x, az), Expr::sub(y, bz));
            let ratio = Expr::div(Expr::mul(v[2].clone(), v[3].clone()), v[4].clone());
            let val = Expr::add(Expr::mul(f(&prod), ratio), f(&yz));
            return cvt_saturate(val, dt, lo, hi);
        }
        let ra = Expr::div(v[2].clone(), v[4].clone());
        let rb = Expr::div(v[3].clone(), v[4].clone());
        if fma {
            // AVX2: the vector operand is MLAS's A (onnxruntime swaps a scalar A to B);
            // fixed = zc - fma(rA, zA, rB*zB); value = fma(a, rA, fma(b, rB, fixed)).
            let (xa, ra, za, xb, rb, zb) = if span_a {
                (y, rb, bz, x, ra, az)
            } else {
                (x, ra, az, y, rb, bz)
            };
            let fixed = Expr::sub(
                f(&yz),
                Expr::fma(ra.clone(), f(&za), Expr::mul(rb.clone(), f(&zb))),
            );
            let val = Expr::fma(f(&xa), ra, Expr::fma(f(&xb), rb, fixed));
            return cvt_saturate(val, dt, lo, hi);
        }
        let fixed = Expr::sub(
            f(&yz),
            Expr::add(Expr::mul(ra.clone(), f(&az)), Expr::mul(rb.clone(), f(&bz))),
        );
        let (ta, tb) = (Expr::mul(f(&x), ra), Expr::mul(f(&y), rb));
        let val = if span_b {
            Expr::add(Expr::add(fixed, tb), ta)
        } else {
            Expr::add(Expr::add(fixed, ta), tb)
        };
        cvt_saturate(val, dt, lo, hi)
    })
}

/// QLinearGlobalAveragePool: fill + int32 sum over the image + requantize of
/// (sum - x_zp * image) with x_s / (y_s * image): 3 nests.
pub(crate) fn qlinear_gap(l: &mut Lowerer, _n: &Node, cl: bool) -> Result<TensorId> {
    let (x, x_s, xzp) = (
        l.input(qu::X)?,
        l.input(qu::X_SCALE)?,
        l.opt_input(qu::X_ZERO_POINT)?,
    );
    let (y_s, yzp) = (l.input(qu::Y_SCALE)?, l.opt_input(qu::Y_ZERO_POINT)?);
    let (dt, out) = l.out_ty(0);
    let (lo, hi) = qrange(l, dt)?;
    let xs = l.shape(x);
    let r = xs.len();
    if r < 3 || out.len() != r {
        return Err(l.unsupported(format!("input of rank {r} (expected >= 3)")));
    }
    let (cax, sp) = if cl { (r - 1, 1..r - 1) } else { (1, 2..r) };
    let image: usize = xs[sp.clone()].iter().product();
    let acc = l.fill("fill", DType::I32, &out, 0.0);
    let sum = l.result_init("sum", acc);
    let mut nb = NB::new(NestKind::Reduction, "sum");
    let dn = nb.par(xs[0]);
    let dc = nb.par(xs[cax]);
    let dsp: Vec<usize> = xs[sp.clone()].iter().map(|&e| nb.red(e)).collect();
    let mut xi = vec![Index::c(0); r];
    let mut oi = vec![Index::c(0); r];
    xi[0] = Index::dim(dn);
    oi[0] = Index::dim(dn);
    xi[cax] = Index::dim(dc);
    oi[cax] = Index::dim(dc);
    for (k, ax) in sp.enumerate() {
        xi[ax] = Index::dim(dsp[k]);
    }
    let xv = i32_of(nb.load(x, xi));
    let old = nb.load(sum, oi.clone());
    nb.store(sum, oi, Expr::add(old, xv));
    l.push(nb);
    let mut ins = vec![sum, x_s, y_s];
    for (t, w) in [(x_s, "x_scale"), (y_s, "y_scale")] {
        check_scalar(l, t, w)?;
    }
    let (zx, zy) = (
        xzp.map(|z| {
            ins.push(z);
            ins.len() - 1
        }),
        yzp.map(|z| {
            ins.push(z);
            ins.len() - 1
        }),
    );
    for &t in &ins[3..] {
        check_scalar(l, t, "zero point")?;
    }
    l.map_to("requant", NestKind::Elementwise, &ins, dt, &out, |v| {
        let img = Expr::k(image as f64, DType::I32);
        let bias = Expr::mul(zp_or_zero(zx.map(|i| &v[i])), img);
        let accv = Expr::sub(v[0].clone(), bias);
        let scale = Expr::div(
            v[1].clone(),
            Expr::mul(v[2].clone(), Expr::f(image as f32 as f64)),
        );
        requant(accv, scale, zp_or_zero(zy.map(|i| &v[i])), dt, lo, hi)
    })
}

/// A one-element parameter's value, when it is known (0 for an absent zero point).
fn known(l: &Lowerer, t: Option<TensorId>) -> Option<f64> {
    match t {
        None => Some(0.0),
        Some(t) => l.scalar(t),
    }
}

/// The table's input code range start (u8: 0, i8: -128).
fn in_lo(l: &Lowerer, x: TensorId) -> Result<i32> {
    let dt = l.dtype(x);
    dt.quant_range()
        .map(|r| r.0)
        .ok_or_else(|| l.unsupported(format!("input is {dt}; expected u8 or i8")))
}

/// One gather nest through a 256-entry table: `y = table[x - in_lo]`.
fn table_nest(l: &mut Lowerer, x: TensorId, table: TensorId, label: &str) -> Result<TensorId> {
    let (_, shape) = l.ty(x);
    let dt = l.dtype(table);
    let lo = in_lo(l, x)?;
    let y = l.result(label, dt, &shape);
    let mut nb = NB::new(NestKind::Copy, label);
    let d = nb.pars(&shape);
    let xv = nb.load(x, dims_index(&d));
    let ix = Expr::sub(Expr::cast(DType::I64, xv), Expr::i(lo as i64));
    let v = nb.load(table, vec![Index::dynamic(ix)]);
    nb.store(y, dims_index(&d), v);
    l.push(nb);
    Ok(y)
}

/// QLinearSigmoid / QLinearLeakyRelu: onnxruntime's 256-entry lookup table, computed
/// at lowering time (shape-only when a parameter is unknown), and one gather nest.
pub(crate) fn qlinear_unary(l: &mut Lowerer, _n: &Node, alpha: Option<f32>) -> Result<TensorId> {
    let (x, x_s, xzp) = (
        l.input(qu::X)?,
        l.input(qu::X_SCALE)?,
        l.opt_input(qu::X_ZERO_POINT)?,
    );
    let (y_s, yzp) = (l.input(qu::Y_SCALE)?, l.opt_input(qu::Y_ZERO_POINT)?);
    let (dt, _) = l.out_ty(0);
    let (lo, hi) = qrange(l, dt)?;
    for (t, w) in [(x_s, "X_scale"), (y_s, "Y_scale")] {
        check_scalar(l, t, w)?;
    }
    let ilo = in_lo(l, x)?;
    let p = (l.scalar(x_s), known(l, xzp), l.scalar(y_s), known(l, yzp));
    let vals = match p {
        (Some(xs), Some(xz), Some(ys), Some(yz)) => {
            let (xs, xz, ys, yz) = (xs as f32, xz as i32, ys as f32, yz as i32);
            let (lo, hi) = (lo as i32, hi as i32);
            Some(match alpha {
                None => lookup_table(ilo, xs, xz, ys, yz, lo, hi, sigmoid_f32),
                Some(a) => lookup_table(ilo, xs, xz, ys, yz, lo, hi, move |v| {
                    if v >= 0.0 { v } else { v * a }
                }),
            })
        }
        _ => None,
    };
    let table = new_const(l, "table", dt, vals);
    table_nest(l, x, table, "lookup")
}

/// QLinearConcat: an input whose (scale, zero point, type) equal the output's is copied
/// as is; any other is first requantized by one elementwise nest
/// (QuantizeLinear(x_s * f32(x - x_zp)), the identity table onnxruntime uses). Then one
/// copy nest per input into the output (as Concat).
pub(crate) fn qlinear_concat(l: &mut Lowerer, n: &Node, axis: usize) -> Result<TensorId> {
    let (y_s, yzp) = (l.input(qcat::Y_SCALE)?, l.opt_input(qcat::Y_ZERO_POINT)?);
    let (dt, shape) = l.out_ty(0);
    let (lo, hi) = qrange(l, dt)?;
    check_scalar(l, y_s, "Y_scale")?;
    let mut parts = vec![];
    for i in (qcat::FIRST..n.inputs.len()).step_by(qcat::STRIDE) {
        let x = l.input(i)?;
        let x_s = l.input(i + qcat::SCALE_OFFSET)?;
        let xzp = l.opt_input(i + qcat::ZERO_POINT_OFFSET)?;
        check_scalar(l, x_s, "X_scale")?;
        let same_s =
            x_s == y_s || matches!((l.scalar(x_s), l.scalar(y_s)), (Some(a), Some(b)) if a == b);
        let same_z =
            xzp == yzp || matches!((known(l, xzp), known(l, yzp)), (Some(a), Some(b)) if a == b);
        if same_s && same_z && l.dtype(x) == dt {
            parts.push(x);
            continue;
        }
        let mut ins = vec![x, x_s, y_s];
        let zx = xzp.map(|z| {
            ins.push(z);
            ins.len() - 1
        });
        let zy = yzp.map(|z| {
            ins.push(z);
            ins.len() - 1
        });
        for &t in &ins[3..] {
            check_scalar(l, t, "zero point")?;
        }
        let xs = l.shape(x);
        let label = format!("rescale.{}", (i - 2) / 3);
        parts.push(l.map_to(&label, NestKind::Elementwise, &ins, dt, &xs, |v| {
            let q = Expr::sub(i32_of(v[0].clone()), zp_or_zero(zx.map(|i| &v[i])));
            let deq = Expr::mul(v[1].clone(), Expr::cast(DType::F32, q));
            clamp_round(
                Expr::div(deq, v[2].clone()),
                zp_or_zero(zy.map(|i| &v[i])),
                dt,
                lo,
                hi,
            )
        })?);
    }
    concat_list(l, &parts, axis, dt, &shape)
}
