//! Convolutions (Conv, ConvInteger, QLinearConv; grouped and depthwise): one crossbar
//! matrix per group, C/g x kernel rows by M/g columns, fed by im2col vectors.

use super::epilogue;
use super::im2col::{ConvShape, Offsets, im2col};
use super::{Arith, LayerRun, input, layer_err};
use crate::encode::{encode_quantized, shr_round};
use crate::error::Result;
use pimkit_ir::{ConvAttrs, DType, Node, Tensor, TensorType, operand};
use rayon::prelude::*;

/// Per group: rows = C/g x kernel (weight order), columns = M/g.
fn group_mats<T: Copy>(
    node: &Node,
    w: &Tensor,
    group: usize,
    vals: &[T],
    sub: impl Fn(usize, T) -> T,
) -> Result<Vec<(usize, usize, Vec<T>)>> {
    let m = w.shape[0];
    let g = group.max(1);
    if w.rank() < 3 || !m.is_multiple_of(g) {
        return Err(layer_err(
            node,
            format!("weight {:?} does not split into {g} groups", w.shape),
        ));
    }
    let per: usize = w.shape[1..].iter().product();
    let mg = m / g;
    Ok((0..g)
        .map(|grp| {
            let mut mat = Vec::with_capacity(per * mg);
            for r in 0..per {
                for j in 0..mg {
                    let o = grp * mg + j;
                    mat.push(sub(o, vals[o * per + r]));
                }
            }
            (per, mg, mat)
        })
        .collect())
}

pub(super) fn weight_mats_f(
    node: &Node,
    w: &Tensor,
    group: usize,
) -> Result<Vec<(usize, usize, Vec<f32>)>> {
    group_mats(node, w, group, &w.to_f32_vec(), |_, v| v)
}

pub(super) fn weight_mats_i(
    node: &Node,
    w: &Tensor,
    group: usize,
    zp: &[i64],
) -> Result<Vec<(usize, usize, Vec<i64>)>> {
    group_mats(node, w, group, &w.to_i64_vec(), |o, v| v - zp[o])
}

/// Smallest code, bits and zero point of a quantized activation.
pub(super) fn qparams(node: &Node, t: &Tensor, zp: Option<&Tensor>) -> Result<(i32, u32, i32)> {
    let (qmin, bits) = match t.dtype() {
        DType::U8 => (0, 8),
        DType::I8 => (-128, 8),
        dt => {
            return Err(layer_err(
                node,
                format!("quantized input of type {dt}; expected u8 or i8"),
            ));
        }
    };
    let zp = match zp {
        None => 0,
        Some(z) if z.numel() == 1 => z.to_i32_vec()[0],
        Some(_) => {
            return Err(layer_err(
                node,
                "the input zero point must be a scalar for the analog model",
            ));
        }
    };
    Ok((qmin, bits, zp))
}

pub(super) fn eval(
    run: &LayerRun,
    node: &Node,
    a: &ConvAttrs,
    ins: &[Option<&Tensor>],
    out_tys: &[&TensorType],
) -> Result<Vec<Tensor>> {
    let lw = run.lowered;
    let x = input(node, ins, operand::conv::X, "X")?;
    // ConvInteger's W sits where Conv's does.
    let wi = if lw.arith == Arith::Qlinear {
        operand::qlinear_conv::W
    } else {
        operand::conv::W
    };
    let w = input(node, ins, wi, "W")?;
    let ty = out_tys[0];
    let r = w.rank();
    if x.rank() != r || ty.shape.len() != r || a.kernel.len() != r - 2 {
        return Err(layer_err(
            node,
            format!(
                "shapes x {:?}, w {:?}, y {:?} do not form a convolution",
                x.shape, w.shape, ty.shape
            ),
        ));
    }
    let s = ConvShape {
        n: x.shape[0],
        c: x.shape[1],
        m: w.shape[0],
        group: a.group.max(1),
        input: x.shape[2..].to_vec(),
        output: ty.shape[2..].to_vec(),
        kernel: w.shape[2..].to_vec(),
    };
    if !s.c.is_multiple_of(s.group) || lw.mats.len() != s.group || lw.mats[0].k != s.k_rows() {
        return Err(layer_err(
            node,
            "input channels do not match the lowered weight groups",
        ));
    }
    let geom = &run.cfg.geom;
    let (codes, enc, pad, xf) = if lw.arith == Arith::Float {
        let q = run.inq[0];
        let xf = x.to_f32_vec();
        let (c, e) = q.encode(&xf);
        (c, e, q.pad_code(), Some(xf))
    } else {
        // X_ZERO_POINT is operand 2 of both ConvInteger and QLinearConv.
        let zp_in = ins
            .get(operand::qlinear_conv::X_ZERO_POINT)
            .copied()
            .flatten();
        let (qmin, bits, zp) = qparams(node, x, zp_in)?;
        let (c, e) = encode_quantized(&x.to_i32_vec(), bits, qmin, zp, geom);
        let pad = shr_round((zp - qmin) as i64, e.shift).clamp(0, (1 << e.bits) - 1) as u16;
        (c, e, pad, None)
    };
    let p = s.positions();
    let off = Offsets::new(a, &s);
    let per_group: Vec<Vec<f64>> = (0..s.group)
        .into_par_iter()
        .map(|grp| {
            let cols = im2col(&codes, &off, &s, grp, pad);
            match &xf {
                Some(xf) => {
                    let fcols = im2col(xf, &off, &s, grp, 0.0f32);
                    run.float_error(grp, &fcols, &cols, p, &enc, 0)
                }
                None => run.product(grp, &cols, p, &enc, 0),
            }
        })
        .collect();
    // [n, m, out...] from per-group (n * out + o) x (m/g).
    let (mg, ov) = (s.m / s.group, s.out_vol());
    let mut acc = vec![0f64; s.n * s.m * ov];
    for (grp, res) in per_group.iter().enumerate() {
        for b in 0..s.n {
            for o in 0..ov {
                let row = &res[(b * ov + o) * mg..][..mg];
                for (j, &v) in row.iter().enumerate() {
                    acc[(b * s.m + grp * mg + j) * ov + o] = v;
                }
            }
        }
    }
    Ok(vec![match lw.arith {
        Arith::Float => {
            let y = super::reference(node, ins, out_tys)?;
            epilogue::float_plus(y, &acc, 1.0)
        }
        Arith::Integer => epilogue::integer(ty, &acc),
        Arith::Qlinear => epilogue::qlinear_conv(node, ins, ty, &acc)?,
    }])
}
