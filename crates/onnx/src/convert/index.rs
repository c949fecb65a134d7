//! Indexing and scatter ops (native IR ops): GatherElements, GatherND, ScatterElements
//! (and the deprecated Scatter), ScatterND, TensorScatter, ReverseSequence, MaxUnpool,
//! and the data-dependent Compress and NonZero, which pimkit's static shapes allow only
//! when the data deciding their output size is a constant (they then fold at import).

use super::window::window;
use super::{Converter, Ctx, NodeIn};
use crate::attr::norm_axis;
use crate::error::Result;
use pimkit_ir::{Op, ScatterReduction, Tensor};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "GatherElements"), gather_elements);
    r.insert(("", "GatherND"), gather_nd);
    r.insert(("", "ScatterElements"), scatter_elements);
    r.insert(("", "Scatter"), scatter_elements);
    r.insert(("", "ScatterND"), scatter_nd);
    r.insert(("", "TensorScatter"), tensor_scatter);
    r.insert(("", "ReverseSequence"), reverse_sequence);
    r.insert(("", "MaxUnpool"), max_unpool);
    r.insert(("", "Compress"), compress);
    r.insert(("", "NonZero"), nonzero);
}

/// `axis` attribute (default `default`) normalized against input 0's rank.
pub(super) fn axis_attr(ctx: &Ctx, n: &NodeIn, default: i64) -> Result<usize> {
    let r = ctx.ty(n, 0)?.rank();
    let ax = n.attrs.int("axis", default)?;
    norm_axis(ax, r).filter(|&v| v < r).ok_or_else(|| {
        n.attrs
            .err("axis", format!("{ax} out of range for rank {r}"))
    })
}

fn reduction(n: &NodeIn) -> Result<ScatterReduction> {
    let s = n
        .attrs
        .string("reduction")?
        .unwrap_or_else(|| "none".into());
    ScatterReduction::parse(&s).ok_or_else(|| {
        n.attrs.err(
            "reduction",
            format!("'{s}' is not none, add, mul, max or min"),
        )
    })
}

fn all_inputs(ctx: &mut Ctx, n: &NodeIn) -> Result<Vec<Option<pimkit_ir::ValueId>>> {
    ctx.all_values(n)
}

fn gather_elements(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let axis = axis_attr(ctx, n, 0)?;
    let ins = all_inputs(ctx, n)?;
    ctx.emit(n, Op::GatherElements { axis }, ins)?;
    Ok(())
}

fn gather_nd(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let b = n.attrs.int("batch_dims", 0)?;
    let batch_dims = crate::attr::to_dim(b)
        .ok_or_else(|| n.attrs.err("batch_dims", format!("{b} is negative")))?;
    let ins = all_inputs(ctx, n)?;
    ctx.emit(n, Op::GatherNd { batch_dims }, ins)?;
    Ok(())
}

fn scatter_elements(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let axis = axis_attr(ctx, n, 0)?;
    let reduction = reduction(n)?;
    let ins = all_inputs(ctx, n)?;
    ctx.emit(n, Op::ScatterElements { axis, reduction }, ins)?;
    Ok(())
}

fn scatter_nd(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let reduction = reduction(n)?;
    let ins = all_inputs(ctx, n)?;
    ctx.emit(n, Op::ScatterNd { reduction }, ins)?;
    Ok(())
}

fn tensor_scatter(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let axis = axis_attr(ctx, n, -2)?;
    let circular = match n.attrs.string("mode")?.as_deref().unwrap_or("linear") {
        "linear" => false,
        "circular" => true,
        m => {
            return Err(n
                .attrs
                .err("mode", format!("'{m}' is not linear or circular")));
        }
    };
    let ins = all_inputs(ctx, n)?;
    ctx.emit(n, Op::TensorScatter { axis, circular }, ins)?;
    Ok(())
}

fn reverse_sequence(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let (b, t) = (a.int("batch_axis", 1)?, a.int("time_axis", 0)?);
    let ok = |v: i64| (0..=1).contains(&v).then_some(v as usize);
    let (Some(batch_axis), Some(time_axis)) = (ok(b), ok(t)) else {
        return Err(ctx.err(
            n,
            format!("batch_axis {b} and time_axis {t} must be 0 and 1"),
        ));
    };
    let ins = all_inputs(ctx, n)?;
    ctx.emit(
        n,
        Op::ReverseSequence {
            batch_axis,
            time_axis,
        },
        ins,
    )?;
    Ok(())
}

fn max_unpool(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let a = n.attrs;
    let x = ctx.ty(n, 0)?;
    let kernel = a
        .usize_list("kernel_shape")?
        .ok_or_else(|| a.err("kernel_shape", "is required"))?;
    if x.rank() != kernel.len() + 2 {
        return Err(ctx.err(
            n,
            format!("input {x} does not match kernel_shape {kernel:?}"),
        ));
    }
    let (strides, _, pads) = window(&a, kernel.clone(), &x.shape[2..])?;
    let r = kernel.len();
    let mut inferred = x.shape[..2].to_vec();
    for i in 0..r {
        inferred.push(
            ((x.shape[i + 2].max(1) - 1) * strides[i] + kernel[i])
                .saturating_sub(pads[i] + pads[i + r]),
        );
    }
    let output_shape = match ctx.const_ints(n, 2, "output shape")? {
        Some(s) => s
            .iter()
            .map(|&d| crate::attr::to_dim(d))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| ctx.err(n, format!("output shape {s:?} has a negative dim")))?,
        None => inferred,
    };
    let ins = vec![Some(ctx.value(n, 0)?), Some(ctx.value(n, 1)?)];
    ctx.emit(
        n,
        Op::MaxUnpool {
            kernel,
            strides,
            pads,
            output_shape,
        },
        ins,
    )?;
    Ok(())
}

/// The data of input `i` when it is a constant, else an error saying the output shape
/// depends on run-time data.
pub(super) fn data_dependent_input(
    ctx: &mut Ctx,
    n: &NodeIn,
    i: usize,
    what: &str,
) -> Result<Option<Tensor>> {
    let Some(name) = n.input(i) else {
        return Ok(None);
    };
    if !ctx.is_const(name) {
        return Err(ctx.err(
            n,
            format!(
                "the output shape depends on run-time data (input {i} '{name}', the {what}); \
                 pimkit's shapes are static, so it must be a constant (bind the inputs it \
                 depends on with --bind)"
            ),
        ));
    }
    ctx.const_input(n, i, what)
}

/// Create a data-dependent op whose `count` the interpreter's kernel computes from the
/// constant inputs `consts` (other inputs may be run-time values, e.g. Compress's data).
pub(super) fn emit_counted(
    ctx: &mut Ctx,
    n: &NodeIn,
    op: impl Fn(usize) -> Op,
    consts: &[Option<Tensor>],
) -> Result<()> {
    let refs: Vec<Option<&Tensor>> = consts.iter().map(|t| t.as_ref()).collect();
    let count = pimkit_interp::data_dependent_count(&op(0), &refs).map_err(|m| ctx.err(n, m))?;
    let ins = ctx.all_values(n)?;
    ctx.emit(n, op(count), ins)?;
    Ok(())
}

fn compress(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let axis = match n.attrs.opt_int("axis")? {
        Some(_) => Some(axis_attr(ctx, n, 0)?),
        None => None,
    };
    let cond = data_dependent_input(ctx, n, 1, "condition")?
        .ok_or_else(|| ctx.err(n, "the condition input is missing"))?;
    let x = ctx.ty(n, 0)?;
    let len = axis.map_or(x.numel(), |a| x.shape[a]);
    let c = cond.to_i64_vec();
    if c.len() > len {
        return Err(ctx.err(
            n,
            format!("condition of {} elements for a dim of {len}", c.len()),
        ));
    }
    let count = c.iter().filter(|&&v| v != 0).count();
    let ins = ctx.all_values(n)?;
    ctx.emit(n, Op::Compress { axis, count }, ins)?;
    Ok(())
}

fn nonzero(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let x = data_dependent_input(ctx, n, 0, "input")?;
    emit_counted(ctx, n, |count| Op::NonZero { count }, &[x])
}

/// MaxPool with its Indices output used: the values are an ordinary `Pool` (only when
/// read), the indices a `MaxPoolIndices` node (storage_order 1 = column-major).
pub(super) fn max_pool_with_indices(
    ctx: &mut Ctx,
    n: &NodeIn,
    p: pimkit_ir::PoolAttrs,
    x: pimkit_ir::ValueId,
) -> Result<()> {
    let column_major = match n.attrs.int("storage_order", 0)? {
        0 => false,
        1 => true,
        s => return Err(n.attrs.err("storage_order", format!("{s} is not 0 or 1"))),
    };
    let mut d = super::dec::Dec::new(ctx, n);
    let values = d.ctx.used.contains(n.outputs[0]);
    if values {
        d.out(0, Op::Pool(p.clone()), &[x])?;
    }
    d.out_node(
        1,
        !values,
        Op::MaxPoolIndices {
            pool: p,
            column_major,
        },
        &[x],
    )?;
    Ok(())
}
