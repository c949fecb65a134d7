//! Layout and mask ops decomposed into existing IR ops: DepthToSpace / SpaceToDepth
//! (Reshape, Transpose, Reshape), CenterCropPad (Slice, Pad), Trilu (Where with a constant
//! mask), OneHot and Hardmax (Equal against a constant index ramp), EyeLike (a constant:
//! its output depends only on the input's static shape).

use super::dec::Dec;
use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use crate::tensor::dtype_from_onnx;
use pimkit_ir::{BinaryOp as B, DType, Op, PadMode, SliceAxis, Tensor};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "DepthToSpace"), depth_to_space);
    r.insert(("", "SpaceToDepth"), space_to_depth);
    r.insert(("", "CenterCropPad"), center_crop_pad);
    r.insert(("", "Trilu"), trilu);
    r.insert(("", "EyeLike"), eye_like);
    r.insert(("", "OneHot"), one_hot);
    r.insert(("", "Hardmax"), hardmax);
}

fn blocksize(n: &NodeIn) -> Result<usize> {
    let a = n.attrs;
    a.opt_int("blocksize")?
        .filter(|&b| b > 0)
        .map(|b| b as usize)
        .ok_or_else(|| a.err("blocksize", "is required and must be positive"))
}

fn depth_to_space(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let bs = blocksize(n)?;
    let mode = n.attrs.string("mode")?.unwrap_or_else(|| "DCR".into());
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let s = d.shape(x);
    if s.len() != 4 || !s[1].is_multiple_of(bs * bs) {
        return Err(d.ctx.err(
            n,
            format!(
                "input {s:?} must be [N, C, H, W] with C divisible by {}",
                bs * bs
            ),
        ));
    }
    let (b, c, h, w) = (s[0], s[1] / (bs * bs), s[2], s[3]);
    let (tmp, perm) = match mode.as_str() {
        "DCR" => (vec![b, bs, bs, c, h, w], vec![0, 3, 4, 1, 5, 2]),
        "CRD" => (vec![b, c, bs, bs, h, w], vec![0, 1, 4, 2, 5, 3]),
        m => return Err(n.attrs.err("mode", format!("'{m}' is not DCR or CRD"))),
    };
    let r = d.reshape(x, tmp)?;
    let t = d.transpose(r, perm)?;
    d.out(
        0,
        Op::Reshape {
            shape: vec![b, c, h * bs, w * bs],
        },
        &[t],
    )?;
    Ok(())
}

fn space_to_depth(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let bs = blocksize(n)?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let s = d.shape(x);
    if s.len() != 4 || !s[2].is_multiple_of(bs) || !s[3].is_multiple_of(bs) {
        return Err(d.ctx.err(
            n,
            format!("input {s:?} must be [N, C, H, W] with H and W divisible by {bs}"),
        ));
    }
    let (b, c, h, w) = (s[0], s[1], s[2] / bs, s[3] / bs);
    let r = d.reshape(x, vec![b, c, h, bs, w, bs])?;
    let t = d.transpose(r, vec![0, 3, 5, 1, 2, 4])?;
    d.out(
        0,
        Op::Reshape {
            shape: vec![b, c * bs * bs, h, w],
        },
        &[t],
    )?;
    Ok(())
}

/// Crop (centered, the odd element at the end) where the target is smaller, zero-pad
/// (the odd element at the end) where it is larger.
fn center_crop_pad(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let target = ctx
        .const_ints(n, 1, "target shape")?
        .ok_or_else(|| ctx.err(n, "the shape input is missing"))?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let s = d.shape(x);
    let r = s.len();
    let axes: Vec<usize> = match n.attrs.ints("axes")? {
        Some(ax) => ax
            .iter()
            .map(|&a| {
                norm_axis(a, r).filter(|&v| v < r).ok_or_else(|| {
                    n.attrs
                        .err("axes", format!("{a} out of range for rank {r}"))
                })
            })
            .collect::<Result<_>>()?,
        None => (0..r).collect(),
    };
    if axes.len() != target.len() {
        return Err(d.ctx.err(
            n,
            format!("{} target sizes for {} axes", target.len(), axes.len()),
        ));
    }
    let mut crops = Vec::new();
    let mut pads = vec![0usize; 2 * r];
    for (&ax, &t) in axes.iter().zip(&target) {
        let t = crate::attr::to_dim(t)
            .ok_or_else(|| d.ctx.err(n, format!("target size {t} is negative")))?;
        let dim = s[ax];
        if t < dim {
            let start = (dim - t) / 2;
            crops.push(SliceAxis {
                axis: ax,
                start: start as i64,
                end: (start + t) as i64,
                step: 1,
            });
        } else if t > dim {
            pads[ax] = (t - dim) / 2;
            pads[ax + r] = t - dim - (t - dim) / 2;
        }
    }
    let padded = pads.iter().any(|&p| p != 0);
    let mut v = x;
    if !crops.is_empty() {
        if !padded {
            d.out(0, Op::Slice { axes: crops }, &[v])?;
            return Ok(());
        }
        v = d.op(Op::Slice { axes: crops }, &[v])?;
    }
    let op = if padded {
        Op::Pad {
            pads,
            mode: PadMode::Constant,
            value: 0.0,
        }
    } else {
        Op::Identity
    };
    d.out(0, op, &[v])?;
    Ok(())
}

/// Keep x where `upper ? j - i >= k : j - i <= k` on the last two axes, else 0.
fn trilu(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let k = match ctx.const_ints(n, 1, "diagonal offset k")? {
        Some(v) if v.len() == 1 => v[0],
        Some(v) => return Err(ctx.err(n, format!("k must be a scalar, got {} values", v.len()))),
        None => 0,
    };
    let upper = n.attrs.bool("upper", true)?;
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let ty = d.ty(x);
    if ty.rank() < 2 {
        return Err(d.ctx.err(n, format!("input must have rank >= 2, got {ty}")));
    }
    let (rows, cols) = (ty.shape[ty.rank() - 2], ty.shape[ty.rank() - 1]);
    let mask: Vec<bool> = (0..rows * cols)
        .map(|e| {
            let off = (e % cols) as i64 - (e / cols) as i64;
            if upper { off >= k } else { off <= k }
        })
        .collect();
    let m = d.konst(Tensor::from_bool(vec![rows, cols], mask));
    let zero = d.scalar(ty.dtype, 0.0);
    d.out(0, Op::Where, &[m, x, zero])?;
    Ok(())
}

fn eye_like(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let ty = ctx.ty(n, 0)?;
    let dtype = match n.attrs.opt_int("dtype")? {
        Some(code) => {
            dtype_from_onnx(code as i32, &format!("node '{}' attribute 'dtype'", n.name))?
        }
        None => ty.dtype,
    };
    let k = n.attrs.int("k", 0)?;
    let (rows, cols) = match ty.shape[..] {
        [r, c] => (r, c),
        _ => return Err(ctx.err(n, format!("input must be 2-D, got {ty}"))),
    };
    let v: Vec<f64> = (0..rows * cols)
        .map(|e| ((e % cols) as i64 - (e / cols) as i64 == k) as u8 as f64)
        .collect();
    ctx.set_const(
        n.outputs[0],
        Tensor::from_f64_as(dtype, vec![rows, cols], &v),
    );
    Ok(())
}

/// An i64 ramp 0..len along `axis` of a rank-`rank` tensor (1 elsewhere).
fn ramp(d: &mut Dec, len: usize, axis: usize, rank: usize) -> pimkit_ir::ValueId {
    let mut shape = vec![1; rank];
    shape[axis] = len;
    d.i64s(shape, (0..len as i64).collect())
}

/// indices (any numeric type, taken modulo depth as the ONNX reference does) compared
/// with a ramp along the new axis selects values[1] (on) or values[0] (off).
fn one_hot(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let depth = ctx
        .const_input(n, 1, "depth")?
        .ok_or_else(|| ctx.err(n, "the depth input is missing"))?;
    let depth = match depth.to_f64_vec()[..] {
        [v] if v >= 1.0 && v < (1u64 << 32) as f64 => v as usize,
        _ => return Err(ctx.err(n, "depth must be one positive number")),
    };
    let values = n
        .input(2)
        .ok_or_else(|| ctx.err(n, "the values input is missing"))?;
    let const_values = if ctx.is_const(values) {
        ctx.const_input(n, 2, "values")?
    } else {
        None
    };
    let mut d = Dec::new(ctx, n);
    let idx = d.ctx.value(n, 0)?;
    let r = d.ty(idx).rank();
    let ax = n.attrs.int("axis", -1)?;
    let axis = norm_axis(ax, r + 1).filter(|&v| v <= r).ok_or_else(|| {
        n.attrs
            .err("axis", format!("{ax} out of range for rank {}", r + 1))
    })?;
    let idx = d.cast(idx, DType::I64)?;
    let dep = d.konst(Tensor::from_i64(vec![], vec![depth as i64]));
    let idx = d.bin(B::Mod { fmod: false }, idx, dep)?;
    let mut ushape = d.shape(idx);
    ushape.insert(axis, 1);
    let idx = d.reshape(idx, ushape)?;
    let ramp = ramp(&mut d, depth, axis, r + 1);
    let eq = d.bin(B::Equal, idx, ramp)?;
    let (off, on) = match const_values {
        Some(t) if t.numel() == 2 => {
            let v = t.to_f64_vec();
            let dt = t.dtype();
            (d.scalar(dt, v[0]), d.scalar(dt, v[1]))
        }
        Some(_) => return Err(d.ctx.err(n, "values must hold two elements [off, on]")),
        None => {
            let vals = d.ctx.value(n, 2)?;
            if d.ty(vals).numel() != 2 {
                return Err(d.ctx.err(n, "values must hold two elements [off, on]"));
            }
            let i0 = d.i64s(vec![], vec![0]);
            let i1 = d.i64s(vec![], vec![1]);
            let flat = d.reshape(vals, vec![2])?;
            let off = d.op(Op::Gather { axis: 0 }, &[flat, i0])?;
            let on = d.op(Op::Gather { axis: 0 }, &[flat, i1])?;
            (off, on)
        }
    };
    d.out(0, Op::Where, &[eq, on, off])?;
    Ok(())
}

/// 1 at the first maximum along `axis`, 0 elsewhere. Before opset 13 the input is
/// coerced to 2-D at `axis` (default 1).
fn hardmax(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let mut d = Dec::new(ctx, n);
    let x = d.ctx.value(n, 0)?;
    let ty = d.ty(x);
    let r = ty.rank();
    let default = if n.opset < 13 { 1 } else { -1 };
    let ax = n.attrs.int("axis", default)?;
    let axis = norm_axis(ax, r).filter(|&v| v < r.max(1)).ok_or_else(|| {
        n.attrs
            .err("axis", format!("{ax} out of range for rank {r}"))
    })?;
    let (v, ax2, rank2) = if n.opset < 13 {
        let outer: usize = ty.shape[..axis].iter().product();
        let inner: usize = ty.shape[axis..].iter().product();
        (d.reshape(x, vec![outer, inner])?, 1, 2)
    } else {
        (x, axis, r)
    };
    let len = d.shape(v)[ax2];
    let am = d.op(
        Op::ArgMax {
            axis: ax2,
            keepdims: true,
            select_last: false,
        },
        &[v],
    )?;
    let ramp = ramp(&mut d, len, ax2, rank2);
    let eq = d.bin(B::Equal, am, ramp)?;
    if n.opset < 13 {
        let y = d.cast(eq, ty.dtype)?;
        d.out(0, Op::Reshape { shape: ty.shape }, &[y])?;
    } else {
        d.out(0, Op::cast(ty.dtype), &[eq])?;
    }
    Ok(())
}
