//! If, Loop and Scan. A subgraph is converted with the enclosing graph as its parent
//! context: names it does not define resolve there, constants fold inside it, and every
//! outer value it reads becomes an explicit input (a capture) of the body and of the op.
//!
//! An If whose condition is a constant after folding (for example once `--bind` fixed the
//! input it depends on) is not kept: its chosen branch is converted in place.

use super::{Converter, Ctx, NodeIn};
use crate::error::{OnnxError, Result};
use crate::import::{bind_outputs, collect_used, convert_nodes, register_initializers};
use crate::proto::GraphProto;
use pimkit_ir::{DType, Graph, Op, ScanAttrs, Subgraph, TensorType};
use std::collections::{BTreeMap, HashMap, HashSet};

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert(("", "If"), if_);
    r.insert(("", "Loop"), loop_);
    r.insert(("", "Scan"), scan);
}

/// Convert `gp` as a subgraph whose formal inputs get `formal` types (the ONNX subgraph
/// inputs in order). Returns the graph (inputs: formals, then captures) and the names of
/// the captured outer values.
fn convert_subgraph(
    parent: &Ctx,
    gp: &GraphProto,
    label: &str,
    formal: &[TensorType],
) -> Result<(Graph, Vec<String>)> {
    if gp.input.len() != formal.len() {
        return Err(OnnxError::Model(format!(
            "{label}: the subgraph declares {} inputs, the op passes {}",
            gp.input.len(),
            formal.len()
        )));
    }
    let mut child = Ctx {
        g: Graph::new(label),
        opts: parent.opts,
        base_dir: parent.base_dir,
        inits: &gp.initializer,
        values: HashMap::new(),
        consts: HashMap::new(),
        used: HashSet::new(),
        const_order: HashMap::new(),
        init_index: HashMap::new(),
        notes: Vec::new(),
        fold_failures: HashMap::new(),
        opsets: parent.opsets.clone(),
        parent: Some(parent),
        captures: Vec::new(),
    };
    register_initializers(&mut child, gp)?;
    for (vi, ty) in gp.input.iter().zip(formal) {
        let id = child.g.add_input(vi.name(), ty.clone());
        child.values.insert(vi.name().to_string(), id);
    }
    collect_used(gp, &mut child.used);
    convert_nodes(&mut child, &gp.node, &format!("{label}/"))?;
    bind_outputs(&mut child, gp)?;
    let mut g = child.g;
    g.prune();
    Ok((g, child.captures))
}

/// Give `g` an input for every name of `all` it lacks (so both If branches take the same
/// inputs); `have` is the graph's own capture list.
fn add_missing_captures(g: &mut Graph, have: &[String], all: &[String], types: &[TensorType]) {
    let start = g.inputs.len() - have.len();
    let mut by_name: HashMap<&str, pimkit_ir::ValueId> = have
        .iter()
        .zip(&g.inputs[start..])
        .map(|(n, &v)| (n.as_str(), v))
        .collect();
    let mut ordered = Vec::with_capacity(all.len());
    for (name, ty) in all.iter().zip(types) {
        let v = match by_name.remove(name.as_str()) {
            Some(v) => v,
            None => {
                let v = g.add_input(name.clone(), ty.clone());
                g.inputs.pop();
                v
            }
        };
        ordered.push(v);
    }
    g.inputs.truncate(start);
    g.inputs.extend(ordered);
}

fn capture_values(
    ctx: &mut Ctx,
    n: &NodeIn,
    caps: &[String],
) -> Result<Vec<Option<pimkit_ir::ValueId>>> {
    caps.iter().map(|c| ctx.lookup(n, c).map(Some)).collect()
}

fn if_(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let then_g = n.attrs.graph("then_branch")?;
    let else_g = n.attrs.graph("else_branch")?;
    let cond_name = n
        .input(0)
        .ok_or_else(|| ctx.err(n, "the condition input is missing"))?;
    if ctx.is_const(cond_name) {
        let c = ctx
            .const_data(cond_name)?
            .map(|t| t.to_f64_vec())
            .ok_or_else(|| ctx.err(n, "the constant condition has no data"))?;
        if c.len() != 1 {
            return Err(ctx.err(
                n,
                format!("the condition has {} elements, not one", c.len()),
            ));
        }
        let chosen = if c[0] != 0.0 { then_g } else { else_g };
        return inline_branch(ctx, n, chosen);
    }
    let (mut tg, tcaps) = convert_subgraph(ctx, then_g, &format!("{}/then", n.name), &[])?;
    let (mut eg, ecaps) = convert_subgraph(ctx, else_g, &format!("{}/else", n.name), &[])?;
    let mut all = tcaps.clone();
    all.extend(ecaps.iter().filter(|c| !tcaps.contains(c)).cloned());
    let types: Vec<TensorType> = all
        .iter()
        .map(|c| {
            ctx.type_of(c)
                .ok_or_else(|| ctx.err(n, format!("captured value '{c}' vanished")))
        })
        .collect::<Result<_>>()?;
    add_missing_captures(&mut tg, &tcaps, &all, &types);
    add_missing_captures(&mut eg, &ecaps, &all, &types);
    let mut ins = vec![Some(ctx.value(n, 0)?)];
    ins.extend(capture_values(ctx, n, &all)?);
    ctx.emit(
        n,
        Op::If {
            then_branch: Subgraph::new(tg),
            else_branch: Subgraph::new(eg),
        },
        ins,
    )?;
    Ok(())
}

/// A constant condition: the chosen branch's nodes join the enclosing graph, and the If's
/// outputs become Identity copies of the branch's outputs.
fn inline_branch(ctx: &mut Ctx, n: &NodeIn, gp: &GraphProto) -> Result<()> {
    if gp.output.len() != n.outputs.len() {
        return Err(ctx.err(
            n,
            format!(
                "the branch has {} outputs, the If {}",
                gp.output.len(),
                n.outputs.len()
            ),
        ));
    }
    // The branch's initializers join the enclosing graph's constants (decoded now: their
    // indexes refer to the branch's own list).
    for tp in &gp.initializer {
        let t = crate::tensor::decode(tp, ctx.base_dir)?;
        ctx.set_const(tp.name(), t);
    }
    collect_used(gp, &mut ctx.used);
    convert_nodes(ctx, &gp.node, &format!("{}/", n.name))?;
    for (o, out) in gp.output.iter().zip(&n.outputs) {
        if out.is_empty() {
            continue;
        }
        if ctx.is_const(o.name()) && !ctx.values.contains_key(o.name()) {
            ctx.pull_outer_const(o.name());
            let entry = ctx
                .consts
                .get(o.name())
                .cloned()
                .ok_or_else(|| ctx.err(n, format!("branch output '{}' vanished", o.name())))?;
            ctx.consts.insert(out.to_string(), entry);
            continue;
        }
        let v = ctx.lookup(n, o.name())?;
        let one = NodeIn {
            name: out,
            op_type: "Identity",
            domain: "",
            opset: n.opset,
            attrs: n.attrs,
            inputs: vec![],
            outputs: vec![out],
        };
        ctx.emit(&one, Op::Identity, vec![Some(v)])?;
    }
    Ok(())
}

/// A declared subgraph input's scalar shape ([] or [1]), [] when unknown.
fn declared_scalar_shape(gp: &GraphProto, i: usize) -> Vec<usize> {
    use crate::proto::{tensor_shape_proto::dimension, type_proto};
    let dims = gp
        .input
        .get(i)
        .and_then(|vi| match vi.r#type.as_ref()?.value.as_ref()? {
            type_proto::Value::TensorType(t) => t.shape.as_ref().map(|s| s.dim.clone()),
            _ => None,
        });
    match dims {
        Some(d) if d.len() == 1 => match d[0].value {
            Some(dimension::Value::DimValue(1)) => vec![1],
            _ => vec![],
        },
        _ => vec![],
    }
}

fn loop_(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    let body = n.attrs.graph("body")?;
    let n_carried = n.num_inputs().saturating_sub(2);
    let mut formal = vec![
        TensorType::new(DType::I64, declared_scalar_shape(body, 0)),
        TensorType::new(DType::Bool, declared_scalar_shape(body, 1)),
    ];
    for k in 0..n_carried {
        formal.push(ctx.ty(n, 2 + k)?);
    }
    // A constant trip count fixes the length of the scan outputs.
    let scan_len = match n.input(0) {
        Some(m) if ctx.is_const(m) => ctx
            .const_data(m)?
            .and_then(|t| t.to_i64_vec().first().copied())
            .filter(|&v| (0..1 << 31).contains(&v))
            .map(|v| v as usize),
        _ => None,
    };
    let (g, caps) = convert_subgraph(ctx, body, &format!("{}/body", n.name), &formal)?;
    let n_scan = g.outputs.len().saturating_sub(1 + n_carried);
    let mut ins = vec![ctx.opt_value(n, 0)?, ctx.opt_value(n, 1)?];
    for k in 0..n_carried {
        ins.push(Some(ctx.value(n, 2 + k)?));
    }
    ins.extend(capture_values(ctx, n, &caps)?);
    // Keep all inputs (omitted M/cond stay None) so positions do not shift.
    let op = Op::Loop {
        body: Subgraph::new(g),
        n_carried,
        scan_len: if n_scan > 0 { scan_len } else { None },
    };
    emit_keeping_positions(ctx, n, op, ins)
}

/// Like `ctx.emit`, but never drops trailing omitted inputs (a Loop's positions matter).
fn emit_keeping_positions(
    ctx: &mut Ctx,
    n: &NodeIn,
    op: Op,
    ins: Vec<Option<pimkit_ir::ValueId>>,
) -> Result<()> {
    let count = op.num_outputs();
    ctx.require_unused(n, count, "not produced by the pimkit op")?;
    let names: Vec<String> = (0..count)
        .map(|i| match n.outputs.get(i) {
            Some(o) if !o.is_empty() => o.to_string(),
            _ => format!("{}:{i}", n.name),
        })
        .collect();
    let outs = ctx
        .g
        .add_node_named(n.name, op, ins, names.clone())
        .map_err(|e| Ctx::ir_err(n, e))?;
    for (name, id) in names.iter().zip(outs) {
        if ctx.values.insert(name.clone(), id).is_some() {
            return Err(ctx.err(n, format!("value '{name}' is defined twice")));
        }
    }
    Ok(())
}

fn scan(ctx: &mut Ctx, n: &NodeIn) -> Result<()> {
    if n.opset < 9 {
        return Err(ctx.err(
            n,
            "Scan before opset 9 (batched, with sequence_lens) is not supported; re-export with opset >= 9",
        ));
    }
    let body = n.attrs.graph("body")?;
    let a = n.attrs;
    let n_scan_in = a
        .opt_int("num_scan_inputs")?
        .and_then(|v| usize::try_from(v).ok())
        .ok_or_else(|| a.err("num_scan_inputs", "is required"))?;
    let n_state = n
        .num_inputs()
        .checked_sub(n_scan_in)
        .ok_or_else(|| ctx.err(n, "fewer inputs than num_scan_inputs"))?;
    let n_scan_out = body.output.len().saturating_sub(n_state);
    let axes = |name: &str, count: usize, ranks: &[usize]| -> Result<Vec<usize>> {
        let v = a.ints(name)?.unwrap_or_else(|| vec![0; count]);
        if v.len() != count {
            return Err(a.err(name, format!("has {} entries for {count} tensors", v.len())));
        }
        v.iter()
            .zip(ranks)
            .map(|(&x, &r)| {
                crate::attr::norm_axis(x, r)
                    .ok_or_else(|| a.err(name, format!("axis {x} out of range")))
            })
            .collect()
    };
    let dirs = |name: &str, count: usize| -> Result<Vec<bool>> {
        let v = a.ints(name)?.unwrap_or_else(|| vec![0; count]);
        if v.len() != count {
            return Err(a.err(name, format!("has {} entries for {count} tensors", v.len())));
        }
        Ok(v.iter().map(|&d| d != 0).collect())
    };
    let in_types: Vec<TensorType> = (0..n.num_inputs())
        .map(|i| ctx.ty(n, i))
        .collect::<Result<_>>()?;
    let in_ranks: Vec<usize> = in_types[n_state..].iter().map(|t| t.rank()).collect();
    let in_axes = axes("scan_input_axes", n_scan_in, &in_ranks)?;
    let in_reverse = dirs("scan_input_directions", n_scan_in)?;
    let mut formal: Vec<TensorType> = in_types[..n_state].to_vec();
    for (k, t) in in_types[n_state..].iter().enumerate() {
        let mut s = t.shape.clone();
        s.remove(in_axes[k]);
        formal.push(TensorType::new(t.dtype, s));
    }
    let (g, caps) = convert_subgraph(ctx, body, &format!("{}/body", n.name), &formal)?;
    // Output axes count the stacked output's rank (the slice's rank + 1).
    let out_ranks: Vec<usize> = g.outputs[n_state..]
        .iter()
        .map(|&o| g.ty(o).rank() + 1)
        .collect();
    let out_axes = axes("scan_output_axes", n_scan_out, &out_ranks)?;
    let out_reverse = dirs("scan_output_directions", n_scan_out)?;
    let mut ins: Vec<Option<pimkit_ir::ValueId>> = (0..n.num_inputs())
        .map(|i| ctx.value(n, i).map(Some))
        .collect::<Result<_>>()?;
    ins.extend(capture_values(ctx, n, &caps)?);
    let attrs = ScanAttrs {
        n_state,
        n_scan_in,
        in_axes,
        in_reverse,
        out_axes,
        out_reverse,
    };
    emit_keeping_positions(
        ctx,
        n,
        Op::Scan {
            body: Subgraph::new(g),
            attrs,
        },
        ins,
    )
}
