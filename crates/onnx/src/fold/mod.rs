//! Import-time constant folding. A node whose inputs are all constants is converted like
//! any other node, but into a scratch graph that the reference interpreter
//! (`pimkit-interp`) evaluates at once: the folded values have exactly the semantics the
//! interpreter gives the same nodes at run time, with no second set of kernels. Folded
//! outputs become constants that later converters read as attributes (shapes, pads, axes);
//! they enter the IR only if some remaining node consumes them as tensors.
//!
//! `Shape` and `Size` need only their input's static type, so they fold even when the
//! input is computed at run time. In shape-only mode (`LoadOptions::shape_only`) a node
//! whose constant inputs are large (weights) is folded by type only: its outputs become
//! data-less constants, so huge models are still never read.

use crate::LoadOptions;
use crate::convert::{ConstEntry, Converter, Ctx, NodeIn};
use crate::error::{OnnxError, Result};
use crate::tensor::decode;
use pimkit_ir::{Graph, Tensor};
use std::collections::{HashMap, HashSet};

/// Ops that are never folded: quantize/dequantize pairs on weights are the structure of a
/// QDQ model (folding them would hide it from the engines), random ops are not constant,
/// and control flow reads outer values its inputs do not list (a constant If is inlined
/// by its converter instead).
const NEVER_FOLD: &[&str] = &[
    "If",
    "Loop",
    "Scan",
    "QuantizeLinear",
    "DequantizeLinear",
    "RandomNormal",
    "RandomUniform",
    "RandomNormalLike",
    "RandomUniformLike",
    "Multinomial",
    "Bernoulli",
];

/// In shape-only mode, constant inputs up to this many elements together are still read
/// and folded with data (shape arithmetic); larger ones (weights) fold by type only.
const SHAPE_ONLY_DATA_LIMIT: usize = 1 << 16;

/// Try to evaluate `n` now; `Ok(true)` when its outputs are recorded as constants.
/// `conv` is the node's converter, if pimkit has one.
pub(crate) fn try_fold(ctx: &mut Ctx, n: &NodeIn, conv: Option<Converter>) -> Result<bool> {
    let Some(&out0) = n.outputs.first() else {
        return Ok(false);
    };
    if !n.domain.is_empty() {
        return Ok(false);
    }
    {
        match n.op_type {
            "Constant" => {
                ctx.set_const(out0, constant(n)?);
                return Ok(true);
            }
            "Shape" => {
                let ty = ctx.ty(n, 0)?;
                let r = ty.rank() as i64;
                let fix = |v: i64| (if v < 0 { v + r } else { v }).clamp(0, r) as usize;
                let start = fix(n.attrs.int("start", 0)?);
                let end = fix(n.attrs.int("end", r)?).max(start);
                let dims: Vec<i64> = ty.shape[start..end].iter().map(|&d| d as i64).collect();
                ctx.set_const(out0, Tensor::from_i64(vec![dims.len()], dims));
                return Ok(true);
            }
            "Size" => {
                let numel = ctx.ty(n, 0)?.numel() as i64;
                ctx.set_const(out0, Tensor::from_i64(vec![], vec![numel]));
                return Ok(true);
            }
            // PyTorch emits Identity on shared weights: alias the constant of any size
            // without decoding it (shape-only loads stay lazy).
            "Identity" | "Dropout" if n.outputs.len() == 1 => {
                let Some(entry) = n.input(0).and_then(|i| ctx.consts.get(i)).cloned() else {
                    return Ok(false);
                };
                ctx.consts.insert(out0.to_string(), entry);
                return Ok(true);
            }
            _ => {}
        }
    }
    let Some(conv) = conv else {
        return Ok(false);
    };
    if NEVER_FOLD.contains(&n.op_type) || n.inputs.iter().all(Option::is_none) {
        return Ok(false);
    }
    let (mut elems, mut dataless) = (0usize, false);
    for name in n.inputs.iter().flatten() {
        match ctx.consts.get(*name) {
            Some(c) => {
                elems = elems.saturating_add(c.ty.numel());
                // A constant folded by type only (shape-only mode) has nothing to read.
                dataless |= c.data.is_none() && c.init.is_none();
            }
            None => return Ok(false),
        }
    }
    let by_type_only = ctx.opts.shape_only && (dataless || elems > SHAPE_ONLY_DATA_LIMIT);
    match fold_node(ctx, n, conv, by_type_only) {
        Ok(outs) => {
            for (name, entry) in outs {
                ctx.consts.insert(name, entry);
            }
            Ok(true)
        }
        // Not foldable (an op/dtype combination the interpreter does not run, a value it
        // refuses): convert the node normally. Should a later converter need one of its
        // outputs as a constant, its error quotes this reason.
        Err(FoldFailure::Skip(reason)) => {
            for o in n.outputs.iter().filter(|o| !o.is_empty()) {
                ctx.fold_failures.insert(o.to_string(), reason.clone());
            }
            Ok(false)
        }
        Err(FoldFailure::Fatal(e)) => Err(e),
    }
}

enum FoldFailure {
    /// The node stays a run-time node.
    Skip(String),
    /// The model is wrong or too large whatever happens (the error names the node).
    Fatal(OnnxError),
}

/// Convert `n` into a scratch graph whose only values are its constant inputs, then run it
/// (or, by type only, just infer its output types).
fn fold_node(
    ctx: &mut Ctx,
    n: &NodeIn,
    conv: Converter,
    by_type_only: bool,
) -> std::result::Result<Vec<(String, ConstEntry)>, FoldFailure> {
    let opts = LoadOptions {
        shape_only: by_type_only,
        ..ctx.opts.clone()
    };
    let consts: HashMap<String, ConstEntry> = n
        .inputs
        .iter()
        .flatten()
        .filter_map(|name| ctx.consts.get(*name).map(|e| (name.to_string(), e.clone())))
        .collect();
    let used: HashSet<String> = n
        .outputs
        .iter()
        .filter(|o| !o.is_empty() && ctx.used.contains(**o))
        .map(|o| o.to_string())
        .collect();
    let mut scratch = Ctx {
        g: Graph::new(format!("fold {}", n.name)),
        opts: &opts,
        base_dir: ctx.base_dir,
        inits: ctx.inits,
        values: HashMap::new(),
        consts,
        used,
        const_order: HashMap::new(),
        init_index: HashMap::new(),
        notes: Vec::new(),
        fold_failures: HashMap::new(),
        opsets: ctx.opsets.clone(),
        parent: None,
        captures: Vec::new(),
    };
    // A converter error is the node's own problem (bad attribute, bad shape): report it
    // as the node's error, as converting it normally would.
    conv(&mut scratch, n).map_err(FoldFailure::Fatal)?;
    ctx.notes.append(&mut scratch.notes);
    let outs: Vec<&str> = n
        .outputs
        .iter()
        .copied()
        .filter(|o| !o.is_empty())
        .collect();
    let mut ids = Vec::with_capacity(outs.len());
    for o in &outs {
        match scratch.values.get(*o) {
            Some(&id) => ids.push(id),
            // The converter aliased the output to a constant (no node).
            None => match scratch.consts.get(*o) {
                Some(e) if e.data.is_some() || by_type_only => {
                    ids.push(scratch.materialize(o).map_err(FoldFailure::Fatal)?)
                }
                _ => return Err(FoldFailure::Skip(format!("output '{o}' was not produced"))),
            },
        }
    }
    if by_type_only {
        return Ok(outs
            .iter()
            .zip(&ids)
            .map(|(o, &id)| {
                let entry = ConstEntry {
                    ty: scratch.g.ty(id).clone(),
                    data: None,
                    init: None,
                };
                (o.to_string(), entry)
            })
            .collect());
    }
    let mut g = scratch.g;
    g.outputs = ids;
    let bytes: u64 = g
        .outputs
        .iter()
        .map(|&o| g.ty(o).checked_bytes().unwrap_or(u64::MAX))
        .fold(0, u64::saturating_add);
    pimkit_ir::memory::check_fits(
        bytes,
        &format!("folding the constant outputs of '{}'", n.name),
    )
    .map_err(|m| FoldFailure::Fatal(ctx.err(n, m)))?;
    let values = pimkit_interp::run(&g, &HashMap::new()).map_err(|e| match e {
        pimkit_interp::InterpError::OutOfMemory(m) => FoldFailure::Fatal(ctx.err(n, m)),
        e => FoldFailure::Skip(e.to_string()),
    })?;
    Ok(outs
        .iter()
        .zip(values)
        .map(|(o, t)| {
            let entry = ConstEntry {
                ty: t.ty(),
                data: Some(t),
                init: None,
            };
            (o.to_string(), entry)
        })
        .collect())
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
