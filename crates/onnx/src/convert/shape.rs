//! Data-movement ops whose shape operands are folded into attributes: Reshape, Flatten,
//! Squeeze/Unsqueeze (-> Reshape), Transpose, Concat, Split, Slice, Gather, Expand, Pad,
//! Tile. The `*_params` helpers are shared with the constant folder.

use super::{Converter, Ctx, NodeIn};
use crate::attr::{norm_axis, to_dim};
use crate::error::Result;
use pimkit_ir::{Op, PadMode, SliceAxis, broadcast_shapes, numel};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "Reshape"), reshape);
    r.insert(("", "Flatten"), reshape);
    r.insert(("", "Squeeze"), reshape);
    r.insert(("", "Unsqueeze"), reshape);
    r.insert(("", "Transpose"), transpose);
    r.insert(("", "Concat"), concat);
    r.insert(("", "Split"), split);
    r.insert(("", "Slice"), slice);
    r.insert(("", "Gather"), gather);
    r.insert(("", "Expand"), expand);
    r.insert(("", "Pad"), pad);
    r.insert(("", "Tile"), tile);
    r.insert(("", "ConstantOfShape"), constant_of_shape);
    r.insert(("", "Range"), range);
    // Always evaluated by the folder (they need only static types or attributes).
    for op in ["Constant", "Shape", "Size"] {
        r.insert(("", op), needs_constants);
    }
}

fn needs_constants(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    Err(ctx.err(
        n,
        "is evaluated at import time and needs constant inputs, but an input is computed at \
         run time; export the model with static shapes",
    ))
}

/// ConstantOfShape: the `value` scalar (default f32 0) expanded to the constant shape
/// operand. The shape operand is always constant after folding in a static graph.
fn constant_of_shape(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let dims = ctx
        .const_ints(n, 0, "output shape")?
        .ok_or_else(|| ctx.err(n, "the shape input is missing"))?;
    let shape = crate::tensor::checked_shape(&dims, &format!("node '{}' shape", n.name))?;
    let value = match n.attrs.tensor("value")? {
        Some(tp) => crate::tensor::decode(tp, None)?,
        None => pimkit_ir::Tensor::from_f32(vec![1], vec![0.0]),
    };
    if value.numel() != 1 {
        return Err(n.attrs.err("value", "must hold exactly one element"));
    }
    let value = value
        .reshaped(vec![])
        .ok_or_else(|| n.attrs.err("value", "must hold exactly one element"))?;
    let v = ctx.new_const(format!("{}/value", n.name), value);
    ctx.emit(n, Op::Expand { shape }, vec![Some(v)])?;
    Ok(())
}

/// Range: the element count follows from the constant operands (ONNX:
/// `max(ceil((limit - start) / delta), 0)`).
fn range(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let scalar = |ctx: &mut Ctx, i: usize, what: &str| -> Result<f64> {
        let t = ctx
            .const_input(n, i, what)?
            .ok_or_else(|| ctx.err(n, format!("the {what} input is missing")))?;
        t.to_f64_vec()
            .first()
            .copied()
            .filter(|_| t.numel() == 1)
            .ok_or_else(|| ctx.err(n, format!("the {what} must be a scalar")))
    };
    let (start, limit, delta) = (
        scalar(ctx, 0, "start")?,
        scalar(ctx, 1, "limit")?,
        scalar(ctx, 2, "delta")?,
    );
    if delta == 0.0 {
        return Err(ctx.err(n, "delta is 0"));
    }
    let count = ((limit - start) / delta).ceil().max(0.0);
    if !count.is_finite() || count > (1u64 << 40) as f64 {
        return Err(ctx.err(n, format!("{count} elements is too many")));
    }
    let ins = ctx.all_values(n)?;
    ctx.emit(
        n,
        Op::Range {
            count: count as usize,
        },
        ins,
    )?;
    Ok(())
}

/// Axes from the attribute (before `input_from_opset`) or from input 1.
fn axes_param(ctx: &mut Ctx, n: &NodeIn, input_from_opset: i64) -> Result<Option<Vec<i64>>> {
    if n.opset < input_from_opset {
        n.attrs.ints("axes")
    } else {
        ctx.const_ints(n, 1, "axes")
    }
}

fn norm_axes(ctx: &Ctx, n: &NodeIn, axes: &[i64], rank: usize) -> Result<Vec<usize>> {
    axes.iter()
        .map(|&a| {
            norm_axis(a, rank)
                .filter(|&x| x < rank)
                .ok_or_else(|| ctx.err(n, format!("axis {a} out of range for rank {rank}")))
        })
        .collect()
}

/// Target shape of Reshape / Flatten / Squeeze / Unsqueeze, fully resolved.
pub(crate) fn reshape_params(ctx: &mut Ctx, n: &NodeIn) -> Result<Vec<usize>> {
    let x = ctx.ty(n, 0)?;
    let shape = &x.shape;
    match n.op_type {
        "Reshape" => {
            let spec = if n.opset < 5 {
                n.attrs.ints("shape")?
            } else {
                ctx.const_ints(n, 1, "target shape")?
            }
            .ok_or_else(|| ctx.err(n, "the target shape is missing"))?;
            let allowzero = n.attrs.bool("allowzero", false)?;
            resolve_reshape(shape, &spec, allowzero).map_err(|m| ctx.err(n, m))
        }
        "Flatten" => {
            let ax = n.attrs.int("axis", 1)?;
            let axis = if ax == shape.len() as i64 {
                shape.len()
            } else {
                norm_axis(ax, shape.len())
                    .ok_or_else(|| n.attrs.err("axis", format!("{ax} out of range")))?
            };
            Ok(vec![numel(&shape[..axis]), numel(&shape[axis..])])
        }
        "Squeeze" => {
            let axes = axes_param(ctx, n, 13)?;
            match axes {
                None => Ok(shape.iter().copied().filter(|&d| d != 1).collect()),
                Some(ax) => {
                    let ax = norm_axes(ctx, n, &ax, shape.len())?;
                    if let Some(&a) = ax.iter().find(|&&a| shape[a] != 1) {
                        return Err(
                            ctx.err(n, format!("cannot squeeze axis {a} of size {}", shape[a]))
                        );
                    }
                    Ok(shape
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| !ax.contains(i))
                        .map(|(_, &d)| d)
                        .collect())
                }
            }
        }
        _ => {
            let ax = axes_param(ctx, n, 13)?.ok_or_else(|| ctx.err(n, "axes are missing"))?;
            let out_rank = shape.len() + ax.len();
            let mut ax = norm_axes(ctx, n, &ax, out_rank)?;
            ax.sort_unstable();
            if ax.windows(2).any(|w| w[0] == w[1]) {
                return Err(ctx.err(n, "repeated unsqueeze axis"));
            }
            let mut it = shape.iter();
            Ok((0..out_rank)
                .map(|i| {
                    if ax.contains(&i) {
                        1
                    } else {
                        *it.next().unwrap_or(&1)
                    }
                })
                .collect())
        }
    }
}

/// ONNX Reshape semantics: 0 copies the input dim (unless allowzero), one -1 is inferred.
pub(crate) fn resolve_reshape(
    input: &[usize],
    spec: &[i64],
    allowzero: bool,
) -> std::result::Result<Vec<usize>, String> {
    let total = numel(input);
    let mut out = Vec::with_capacity(spec.len());
    let mut infer = None;
    for (i, &s) in spec.iter().enumerate() {
        match s {
            -1 if infer.is_none() => {
                infer = Some(i);
                out.push(1);
            }
            0 if !allowzero => out.push(*input.get(i).ok_or_else(|| {
                format!("shape {spec:?}: 0 at position {i} has no input dim to copy")
            })?),
            s => out.push(to_dim(s).ok_or_else(|| format!("invalid target shape {spec:?}"))?),
        }
    }
    if let Some(i) = infer {
        let known: usize = out
            .iter()
            .try_fold(1usize, |a, &d| a.checked_mul(d))
            .ok_or("shape too large")?;
        if known == 0 || !total.is_multiple_of(known) {
            return Err(format!("cannot reshape {input:?} to {spec:?}"));
        }
        out[i] = total / known;
    }
    let n = out.iter().try_fold(1usize, |a, &d| a.checked_mul(d));
    if n != Some(total) {
        return Err(format!(
            "cannot reshape {input:?} ({total} elements) to {spec:?}"
        ));
    }
    Ok(out)
}

fn reshape(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let shape = reshape_params(ctx, n)?;
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Reshape { shape }, vec![Some(x)])?;
    Ok(())
}

fn transpose(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let r = ctx.ty(n, 0)?.rank();
    let perm = match n.attrs.ints("perm")? {
        Some(p) => norm_axes(ctx, n, &p, r)?,
        None => (0..r).rev().collect(),
    };
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Transpose { perm }, vec![Some(x)])?;
    Ok(())
}

pub(crate) fn concat_axis(ctx: &Ctx, n: &NodeIn) -> Result<usize> {
    let r = ctx.ty(n, 0)?.rank();
    let ax = n
        .attrs
        .opt_int("axis")?
        .ok_or_else(|| n.attrs.err("axis", "is required"))?;
    norm_axis(ax, r).filter(|&a| a < r).ok_or_else(|| {
        n.attrs
            .err("axis", format!("{ax} out of range for rank {r}"))
    })
}

fn concat(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let axis = concat_axis(ctx, n)?;
    let ins = (0..n.num_inputs())
        .map(|i| ctx.value(n, i).map(Some))
        .collect::<Result<_>>()?;
    ctx.emit(n, Op::Concat { axis }, ins)?;
    Ok(())
}

/// Split axis and sizes (attribute before opset 13, input after, num_outputs in 18).
pub(crate) fn split_params(ctx: &mut Ctx, n: &NodeIn) -> Result<(usize, Vec<usize>)> {
    let x = ctx.ty(n, 0)?;
    let ax = n.attrs.int("axis", 0)?;
    let axis = norm_axis(ax, x.rank())
        .filter(|&a| a < x.rank())
        .ok_or_else(|| n.attrs.err("axis", format!("{ax} out of range")))?;
    let dim = x.shape[axis];
    let given = if n.opset < 13 {
        n.attrs.ints("split")?
    } else {
        ctx.const_ints(n, 1, "split sizes")?
    };
    let sizes = match given {
        Some(s) if !s.is_empty() => s
            .iter()
            .map(|&v| to_dim(v).ok_or_else(|| ctx.err(n, format!("bad split size {v}"))))
            .collect::<Result<Vec<_>>>()?,
        _ => {
            let parts = match n.attrs.opt_int("num_outputs")? {
                Some(k) => to_dim(k)
                    .filter(|&k| k > 0)
                    .ok_or_else(|| n.attrs.err("num_outputs", "must be positive"))?,
                None => n.outputs.len().max(1),
            };
            // Opset 18: ceil-sized chunks, the last one smaller.
            let chunk = dim.div_ceil(parts);
            (0..parts)
                .map(|i| chunk.min(dim.saturating_sub(i * chunk)))
                .collect()
        }
    };
    if sizes.iter().sum::<usize>() != dim {
        return Err(ctx.err(n, format!("split sizes {sizes:?} do not sum to {dim}")));
    }
    Ok((axis, sizes))
}

fn split(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let (axis, sizes) = split_params(ctx, n)?;
    if sizes.len() != n.outputs.len() {
        return Err(ctx.err(
            n,
            format!(
                "{} split sizes for {} outputs",
                sizes.len(),
                n.outputs.len()
            ),
        ));
    }
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Split { axis, sizes }, vec![Some(x)])?;
    Ok(())
}

/// Clamp one ONNX slice (start, end, step) to a dim of size `dim`, like onnxruntime.
pub(crate) fn clamp_slice(start: i64, end: i64, step: i64, dim: usize) -> (i64, i64) {
    let d = dim as i64;
    let fix = |v: i64| if v < 0 { v.saturating_add(d) } else { v };
    if step > 0 {
        (fix(start).clamp(0, d), fix(end).clamp(0, d))
    } else {
        (
            fix(start).clamp(0, (d - 1).max(0)),
            fix(end).clamp(-1, (d - 1).max(-1)),
        )
    }
}

pub(crate) fn slice_params(ctx: &mut Ctx, n: &NodeIn) -> Result<Vec<SliceAxis>> {
    let x = ctx.ty(n, 0)?;
    let (starts, ends, axes, steps) = if n.opset < 10 {
        let a = n.attrs;
        (a.ints("starts")?, a.ints("ends")?, a.ints("axes")?, None)
    } else {
        (
            ctx.const_ints(n, 1, "slice starts")?,
            ctx.const_ints(n, 2, "slice ends")?,
            ctx.const_ints(n, 3, "slice axes")?,
            ctx.const_ints(n, 4, "slice steps")?,
        )
    };
    let starts = starts.ok_or_else(|| ctx.err(n, "starts are missing"))?;
    let ends = ends.ok_or_else(|| ctx.err(n, "ends are missing"))?;
    let k = starts.len();
    let axes = axes.unwrap_or_else(|| (0..k as i64).collect());
    let steps = steps.unwrap_or_else(|| vec![1; k]);
    if ends.len() != k || axes.len() != k || steps.len() != k {
        return Err(ctx.err(n, "starts, ends, axes and steps differ in length"));
    }
    let axes = norm_axes(ctx, n, &axes, x.rank())?;
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        if steps[i] == 0 {
            return Err(ctx.err(n, "slice step 0"));
        }
        let (start, end) = clamp_slice(starts[i], ends[i], steps[i], x.shape[axes[i]]);
        out.push(SliceAxis {
            axis: axes[i],
            start,
            end,
            step: steps[i],
        });
    }
    Ok(out)
}

fn slice(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let axes = slice_params(ctx, n)?;
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Slice { axes }, vec![Some(x)])?;
    Ok(())
}

pub(crate) fn gather_axis(ctx: &Ctx, n: &NodeIn) -> Result<usize> {
    let r = ctx.ty(n, 0)?.rank();
    let ax = n.attrs.int("axis", 0)?;
    norm_axis(ax, r).filter(|&a| a < r).ok_or_else(|| {
        n.attrs
            .err("axis", format!("{ax} out of range for rank {r}"))
    })
}

fn gather(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let axis = gather_axis(ctx, n)?;
    let ins = vec![Some(ctx.value(n, 0)?), Some(ctx.value(n, 1)?)];
    ctx.emit(n, Op::Gather { axis }, ins)?;
    Ok(())
}

/// Output shape of Expand: the broadcast of the input with the shape operand.
pub(crate) fn expand_params(ctx: &mut Ctx, n: &NodeIn) -> Result<Vec<usize>> {
    let x = ctx.ty(n, 0)?;
    let spec = ctx
        .const_ints(n, 1, "target shape")?
        .ok_or_else(|| ctx.err(n, "shape is missing"))?;
    let spec: Vec<usize> = spec
        .iter()
        .map(|&v| to_dim(v).ok_or_else(|| ctx.err(n, format!("bad expand dim {v}"))))
        .collect::<Result<_>>()?;
    broadcast_shapes(&x.shape, &spec)
        .ok_or_else(|| ctx.err(n, format!("cannot expand {:?} to {spec:?}", x.shape)))
}

fn expand(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let shape = expand_params(ctx, n)?;
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Expand { shape }, vec![Some(x)])?;
    Ok(())
}

fn pad(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let r = ctx.ty(n, 0)?.rank();
    let mode = match a.string("mode")?.as_deref().unwrap_or("constant") {
        "constant" => PadMode::Constant,
        "reflect" => PadMode::Reflect,
        "edge" => PadMode::Edge,
        "wrap" => PadMode::Wrap,
        m => {
            return Err(a.err(
                "mode",
                format!("'{m}' is not supported (constant, reflect, edge, wrap)"),
            ));
        }
    };
    let (raw, value) = if n.opset < 11 {
        (a.ints("pads")?, a.float("value", 0.0)?)
    } else {
        let v = ctx
            .const_input(n, 2, "pad value")?
            .and_then(|t| t.to_f64_vec().first().copied())
            .unwrap_or(0.0) as f32;
        (ctx.const_ints(n, 1, "pads")?, v)
    };
    let raw = raw.ok_or_else(|| ctx.err(n, "pads are missing"))?;
    // Opset 18 `axes`: pads cover only the listed axes.
    let axes = if n.opset >= 18 {
        ctx.const_ints(n, 3, "pad axes")?
    } else {
        None
    };
    let axes = match axes {
        Some(ax) => norm_axes(ctx, n, &ax, r)?,
        None => (0..r).collect(),
    };
    if raw.len() != 2 * axes.len() {
        return Err(ctx.err(n, format!("{} pads for {} axes", raw.len(), axes.len())));
    }
    let mut pads = vec![0usize; 2 * r];
    let k = axes.len();
    for (i, &ax) in axes.iter().enumerate() {
        for (side, v) in [(0, raw[i]), (r, raw[i + k])] {
            pads[ax + side] = to_dim(v).ok_or_else(|| {
                ctx.err(
                    n,
                    format!("pad {v} is not supported (negative pads crop; use Slice)"),
                )
            })?;
        }
    }
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Pad { pads, mode, value }, vec![Some(x)])?;
    Ok(())
}

pub(crate) fn tile_params(ctx: &mut Ctx, n: &NodeIn) -> Result<Vec<usize>> {
    let reps = ctx
        .const_ints(n, 1, "repeats")?
        .ok_or_else(|| ctx.err(n, "repeats are missing"))?;
    reps.iter()
        .map(|&v| to_dim(v).ok_or_else(|| ctx.err(n, format!("bad repeat {v}"))))
        .collect()
}

fn tile(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let repeats = tile_params(ctx, n)?;
    let x = ctx.value(n, 0)?;
    ctx.emit(n, Op::Tile { repeats }, vec![Some(x)])?;
    Ok(())
}
