//! Import-time evaluation of the cheap shape ops PyTorch's exporter emits (Shape ->
//! Gather -> Unsqueeze -> Concat -> Reshape and friends). A node is folded when its op is
//! listed here and every input is a constant with data (Shape and Size only need the
//! static type). Folded outputs become constants that later converters read as
//! attributes; they enter the IR only if some remaining node consumes them as tensors.

use crate::convert::{Ctx, NodeIn, shape};
use crate::error::Result;
use crate::tensor::{decode, dtype_from_onnx};
mod kernels;

use kernels::{binary, broadcast_index, cast, concat, gather, slice, take};
use pimkit_ir::{Tensor, TensorData, broadcast_shapes, numel};

/// Ops evaluated when all their inputs are constant.
const FOLDABLE: &[&str] = &[
    "Identity",
    "Dropout",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Cast",
    "Gather",
    "Concat",
    "Expand",
    "ConstantOfShape",
    "Range",
    "Slice",
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Equal",
    "Less",
    "Greater",
    "Max",
    "Min",
    "Where",
    "Not",
    "Neg",
    "Mod",
    "And",
    "Or",
];
/// Inputs larger than this are left to the converters (weights, not shape arithmetic).
const FOLD_IN_LIMIT: usize = 1 << 16;
/// Largest tensor a fold may create (ConstantOfShape masks, Expand, Range).
const FOLD_OUT_LIMIT: usize = 1 << 24;

/// Try to evaluate `n` now; `Ok(true)` when its outputs are recorded as constants.
pub(crate) fn try_fold(ctx: &mut Ctx, n: &NodeIn) -> Result<bool> {
    let Some(&out0) = n.outputs.first() else {
        return Ok(false);
    };
    let result = match n.op_type {
        "Constant" => constant(n)?,
        "Shape" => {
            let ty = ctx.ty(n, 0)?;
            let r = ty.rank() as i64;
            let fix = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
            let start = fix(n.attrs.int("start", 0)?);
            let end = fix(n.attrs.int("end", r)?).max(start);
            let dims: Vec<i64> = ty.shape[start..end].iter().map(|&d| d as i64).collect();
            Tensor::from_i64(vec![dims.len()], dims)
        }
        "Size" => Tensor::from_i64(vec![], vec![ctx.ty(n, 0)?.numel() as i64]),
        // PyTorch emits Identity on shared weights: alias the constant of any size
        // without decoding it (shape-only loads stay lazy).
        "Identity" | "Dropout" if n.outputs.len() == 1 => {
            let Some(entry) = n.input(0).and_then(|i| ctx.consts.get(i)).cloned() else {
                return Ok(false);
            };
            ctx.consts.insert(out0.to_string(), entry);
            return Ok(true);
        }
        op if FOLDABLE.contains(&op) => {
            if n.outputs.len() > 1 && n.outputs[1..].iter().any(|o| !o.is_empty()) {
                return Ok(false);
            }
            if matches!(op, "Max" | "Min") && n.num_inputs() != 2 {
                return Ok(false);
            }
            let mut elems = 0usize;
            for name in n.inputs.iter().flatten() {
                match ctx.consts.get(*name) {
                    Some(c) => elems = elems.saturating_add(c.ty.numel()),
                    None => return Ok(false),
                }
            }
            if elems > FOLD_IN_LIMIT || n.inputs.iter().all(|i| i.is_none()) && op != "Range" {
                return Ok(false);
            }
            eval(ctx, n)?
        }
        _ => return Ok(false),
    };
    if result.numel() > FOLD_OUT_LIMIT {
        return Err(ctx.err(n, "constant result too large to fold"));
    }
    ctx.set_const(out0, result);
    Ok(true)
}

fn constant(n: &NodeIn) -> Result<Tensor> {
    let a = n.attrs;
    if let Some(tp) = a.tensor("value")? {
        return decode(tp, None);
    }
    if let Some(v) = a
        .get("value_float")
        .map(|_| a.float("value_float", 0.0))
        .transpose()?
    {
        return Ok(Tensor::from_f32(vec![], vec![v]));
    }
    if let Some(v) = a.floats("value_floats")? {
        return Ok(Tensor::from_f32(vec![v.len()], v));
    }
    if let Some(v) = a.opt_int("value_int")? {
        return Ok(Tensor::from_i64(vec![], vec![v]));
    }
    if let Some(v) = a.ints("value_ints")? {
        return Ok(Tensor::from_i64(vec![v.len()], v));
    }
    Err(a.err(
        "value",
        "a Constant needs value, value_float(s) or value_int(s) (sparse and string constants are not supported)",
    ))
}

fn input(ctx: &mut Ctx, n: &NodeIn, i: usize) -> Result<Tensor> {
    ctx.const_input(n, i, "operand")?
        .ok_or_else(|| ctx.err(n, format!("required input {i} is missing")))
}

fn eval(ctx: &mut Ctx, n: &NodeIn) -> Result<Tensor> {
    let err = |ctx: &Ctx, m: &str| ctx.err(n, m.to_string());
    Ok(match n.op_type {
        "Identity" | "Dropout" => input(ctx, n, 0)?,
        "Reshape" | "Flatten" | "Squeeze" | "Unsqueeze" => {
            let shape = shape::reshape_params(ctx, n)?;
            input(ctx, n, 0)?
                .reshaped(shape)
                .ok_or_else(|| err(ctx, "reshape changes the element count"))?
        }
        "Cast" => {
            let code = n
                .attrs
                .opt_int("to")?
                .ok_or_else(|| n.attrs.err("to", "is required"))?;
            let to = dtype_from_onnx(code as i32, "Cast to")
                .map_err(|e| n.attrs.err("to", e.to_string()))?;
            cast(&input(ctx, n, 0)?, to)
        }
        "Gather" => {
            let axis = shape::gather_axis(ctx, n)?;
            let (data, idx) = (input(ctx, n, 0)?, input(ctx, n, 1)?);
            gather(&data, &idx.to_i64_vec(), &idx.shape, axis)
                .ok_or_else(|| err(ctx, "gather index out of range"))?
        }
        "Concat" => {
            let axis = shape::concat_axis(ctx, n)?;
            let ins = (0..n.num_inputs())
                .map(|i| input(ctx, n, i))
                .collect::<Result<Vec<_>>>()?;
            concat(&ins, axis).ok_or_else(|| err(ctx, "concat inputs differ in dtype or shape"))?
        }
        "Expand" => {
            let shape = shape::expand_params(ctx, n)?;
            check_size(ctx, n, &shape)?;
            let x = input(ctx, n, 0)?;
            let idx = broadcast_index(&shape, &x.shape);
            take(&x, &idx, shape)
        }
        "ConstantOfShape" => {
            let dims = input(ctx, n, 0)?.to_i64_vec();
            let shape = crate::tensor::checked_shape(&dims, "ConstantOfShape")
                .map_err(|e| err(ctx, &e.to_string()))?;
            check_size(ctx, n, &shape)?;
            let value = match n.attrs.tensor("value")? {
                Some(tp) => decode(tp, None)?,
                None => Tensor::from_f32(vec![1], vec![0.0]),
            };
            if value.numel() != 1 {
                return Err(n.attrs.err("value", "must hold exactly one element"));
            }
            let idx = vec![0; numel(&shape)];
            take(&value, &idx, shape)
        }
        "Range" => {
            let (s, l, d) = (input(ctx, n, 0)?, input(ctx, n, 1)?, input(ctx, n, 2)?);
            let f = |t: &Tensor| t.to_f64_vec().first().copied().unwrap_or(0.0);
            let (start, limit, delta) = (f(&s), f(&l), f(&d));
            if delta == 0.0 {
                return Err(err(ctx, "Range delta is 0"));
            }
            let count = ((limit - start) / delta).ceil().max(0.0);
            if !count.is_finite() || count > FOLD_OUT_LIMIT as f64 {
                return Err(err(ctx, "Range produces too many elements to fold"));
            }
            let vals: Vec<f64> = (0..count as usize)
                .map(|i| start + i as f64 * delta)
                .collect();
            Tensor::from_f64_as(s.dtype(), vec![vals.len()], &vals)
        }
        "Slice" => {
            let axes = shape::slice_params(ctx, n)?;
            let x = input(ctx, n, 0)?;
            slice(&x, &axes)
        }
        "Not" | "Neg" => {
            let x = input(ctx, n, 0)?;
            let data = match (&x.data, n.op_type) {
                (TensorData::Bool(v), "Not") => TensorData::Bool(v.iter().map(|b| !b).collect()),
                (TensorData::I64(v), "Neg") => {
                    TensorData::I64(v.iter().map(|b| b.wrapping_neg()).collect())
                }
                (TensorData::I32(v), "Neg") => {
                    TensorData::I32(v.iter().map(|b| b.wrapping_neg()).collect())
                }
                (TensorData::F32(v), "Neg") => TensorData::F32(v.iter().map(|b| -b).collect()),
                _ => return Err(err(ctx, "unsupported dtype for constant folding")),
            };
            Tensor {
                shape: x.shape,
                data,
            }
        }
        "Where" => {
            let (c, x, y) = (input(ctx, n, 0)?, input(ctx, n, 1)?, input(ctx, n, 2)?);
            let shape = broadcast_shapes(&c.shape, &x.shape)
                .and_then(|s| broadcast_shapes(&s, &y.shape))
                .ok_or_else(|| err(ctx, "Where operands do not broadcast"))?;
            let (ci, xi, yi) = (
                broadcast_index(&shape, &c.shape),
                broadcast_index(&shape, &x.shape),
                broadcast_index(&shape, &y.shape),
            );
            let cond = c.to_i64_vec();
            let both = concat(
                &[
                    x.clone().reshaped(vec![x.numel()]).unwrap_or(x.clone()),
                    y.clone().reshaped(vec![y.numel()]).unwrap_or(y.clone()),
                ],
                0,
            )
            .ok_or_else(|| err(ctx, "Where branches differ in dtype"))?;
            let idx: Vec<usize> = (0..numel(&shape))
                .map(|k| {
                    if cond[ci[k]] != 0 {
                        xi[k]
                    } else {
                        x.numel() + yi[k]
                    }
                })
                .collect();
            take(&both, &idx, shape)
        }
        op => {
            let (a, b) = (input(ctx, n, 0)?, input(ctx, n, 1)?);
            // Mod: fmod = 0 takes the divisor's sign (integers only), 1 the dividend's.
            let op = if op == "Mod" && n.attrs.int("fmod", 0)? != 0 {
                "FMod"
            } else {
                op
            };
            binary(op, &a, &b).map_err(|m| err(ctx, &m))?
        }
    })
}

fn check_size(ctx: &Ctx, n: &NodeIn, shape: &[usize]) -> Result<()> {
    let ok = shape
        .iter()
        .try_fold(1usize, |a, &d| a.checked_mul(d))
        .is_some_and(|s| s <= FOLD_OUT_LIMIT);
    if ok {
        Ok(())
    } else {
        Err(ctx.err(n, format!("constant result {shape:?} too large to fold")))
    }
}
