//! GridSample (a native IR op) and AffineGrid, decomposed: the normalized base grid
//! (x, y[, z], 1) of the constant output size is a constant, and the grid is base · thetaᵀ
//! (one MatMul), as the ONNX reference computes it.

use super::dec::Dec;
use super::{Converter, Ctx, NodeIn};
use crate::error::Result;
use pimkit_ir::{GridMode, GridPadding, Op, Tensor};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "AffineGrid"), affine_grid);
    r.insert(("", "GridSample"), grid_sample);
}

/// Mode names of opset 16 (bilinear, bicubic) and 20 (linear, cubic) alike.
fn grid_sample(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let default = if n.opset >= 20 { "linear" } else { "bilinear" };
    let mode = match a.string("mode")?.as_deref().unwrap_or(default) {
        "linear" | "bilinear" => GridMode::Linear,
        "nearest" => GridMode::Nearest,
        "cubic" | "bicubic" => GridMode::Cubic,
        m => return Err(a.err("mode", format!("'{m}' is not linear, nearest or cubic"))),
    };
    let padding = match a.string("padding_mode")?.as_deref().unwrap_or("zeros") {
        "zeros" => GridPadding::Zeros,
        "border" => GridPadding::Border,
        "reflection" => GridPadding::Reflection,
        m => {
            return Err(a.err(
                "padding_mode",
                format!("'{m}' is not zeros, border or reflection"),
            ));
        }
    };
    let ins = vec![Some(ctx.value(n, 0)?), Some(ctx.value(n, 1)?)];
    ctx.emit(
        n,
        Op::GridSample {
            mode,
            padding,
            align_corners: a.bool("align_corners", false)?,
        },
        ins,
    )?;
    Ok(())
}

/// Normalized coordinates of `len` points in [-1, 1]: the corners are -1 and 1 with
/// align_corners, else the pixel centers.
fn coords(len: usize, align_corners: bool) -> Vec<f64> {
    (0..len)
        .map(|i| {
            if align_corners {
                if len <= 1 {
                    -1.0
                } else {
                    -1.0 + i as f64 * 2.0 / (len - 1) as f64
                }
            } else {
                let step = 2.0 / len as f64;
                -1.0 + step / 2.0 + i as f64 * step
            }
        })
        .collect()
}

fn affine_grid(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let size = ctx
        .const_ints(n, 1, "output size")?
        .ok_or_else(|| ctx.err(n, "the size input is missing"))?;
    let align = n.attrs.bool("align_corners", false)?;
    let mut d = Dec::new(ctx, n);
    let theta = d.ctx.value(n, 0)?;
    let tty = d.ty(theta);
    let dims: Vec<usize> = size
        .iter()
        .map(|&v| crate::attr::to_dim(v))
        .collect::<Option<_>>()
        .ok_or_else(|| d.ctx.err(n, format!("size {size:?} has a negative value")))?;
    let spatial = &dims[2.min(dims.len())..];
    let r = spatial.len();
    if !(r == 2 || r == 3) || tty.shape != [dims[0], r, r + 1] {
        return Err(d.ctx.err(
            n,
            format!("size {size:?} and theta {tty} do not describe a 2-D or 3-D affine grid"),
        ));
    }
    // Base grid rows in spatial order, columns (x, y[, z], 1): x runs along the last axis.
    let axes: Vec<Vec<f64>> = spatial.iter().map(|&l| coords(l, align)).collect();
    let points: usize = spatial.iter().product();
    let mut base = Vec::with_capacity(points * (r + 1));
    for p in 0..points {
        let mut rem = p;
        let mut idx = vec![0; r];
        for a in (0..r).rev() {
            idx[a] = rem % spatial[a];
            rem /= spatial[a];
        }
        for a in (0..r).rev() {
            base.push(axes[a][idx[a]]);
        }
        base.push(1.0);
    }
    let base = d.konst(Tensor::from_f64_as(tty.dtype, vec![points, r + 1], &base));
    let tt = d.transpose(theta, vec![0, 2, 1])?;
    let g = d.op(Op::MatMul, &[base, tt])?;
    let mut shape = vec![dims[0]];
    shape.extend_from_slice(spatial);
    shape.push(r);
    d.out(0, Op::Reshape { shape }, &[g])?;
    Ok(())
}
