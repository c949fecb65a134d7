//! Flattening control flow for the static engines (loop nests, offload, crossbars, PUMA,
//! VPU), which map a fixed dataflow graph onto hardware: an If whose condition is a
//! constant becomes its branch; a Scan, and a Loop with a constant trip count whose body
//! never stops it early, are unrolled. What stays (an If on a run-time value, a Loop that
//! may end early) is reported with the graph inputs it depends on, so the user can bind
//! them (`--bind NAME=VALUE`).

use crate::{
    DType, Graph, IrError, Node, Op, Result, ScanAttrs, SliceAxis, Tensor, TensorType, ValueDef,
    ValueId,
};
use std::collections::HashMap;

/// Unrolling stops with an error past this many nodes (a loop of a million steps is not
/// a dataflow graph any engine can map).
pub const MAX_FLAT_NODES: usize = 200_000;

/// `g` with its control flow flattened where it is static. Graphs without control flow
/// come back unchanged (cloned).
pub fn flatten_control_flow(g: &Graph) -> Result<Graph> {
    if !has_control_flow(g) {
        return Ok(g.clone());
    }
    let mut f = Flattener {
        out: Graph::new(g.name.clone()),
    };
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for &i in &g.inputs {
        let v = g.value(i);
        map.insert(i, f.out.add_input(v.name.clone(), v.ty.clone()));
    }
    f.copy_body(g, &mut map, "")?;
    for &o in &g.outputs {
        let nv = f.value_of(g, o, &mut map, "")?;
        f.out.outputs.push(nv);
    }
    f.out.prune();
    Ok(f.out)
}

/// Whether any node (at the top level) is If, Loop or Scan.
pub fn has_control_flow(g: &Graph) -> bool {
    g.nodes
        .iter()
        .any(|n| matches!(n.op, Op::If { .. } | Op::Loop { .. } | Op::Scan { .. }))
}

/// [`require_static`] taking the graph: one without control flow comes back as it is,
/// not copied (a model of a few GiB of weights must not need twice that).
pub fn into_static(g: Graph) -> Result<Graph> {
    if has_control_flow(&g) {
        require_static(&g)
    } else {
        Ok(g)
    }
}

/// The flattened graph, or an error naming each control-flow node that remains and the
/// graph inputs its condition or trip count depends on.
pub fn require_static(g: &Graph) -> Result<Graph> {
    let f = flatten_control_flow(g)?;
    let left: Vec<String> = f
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::If { .. } | Op::Loop { .. } | Op::Scan { .. }))
        .map(|n| {
            // An If's condition; a Loop's trip count and condition.
            let k = if matches!(n.op, Op::If { .. }) { 1 } else { 2 };
            let deps = inputs_feeding(&f, n.inputs.iter().take(k).flatten().copied());
            let what = match n.op {
                Op::If { .. } => "its condition",
                _ => "when it stops",
            };
            if deps.is_empty() {
                format!(
                    "'{}' ({}: {what} is computed at run time)",
                    n.name,
                    n.op.name()
                )
            } else {
                format!(
                    "'{}' ({}: {what} depends on input {}; bind it with --bind {}=VALUE)",
                    n.name,
                    n.op.name(),
                    deps.join(", "),
                    deps[0]
                )
            }
        })
        .collect();
    if left.is_empty() {
        Ok(f)
    } else {
        Err(IrError::Other(format!(
            "control flow that depends on run-time values cannot be mapped onto hardware: {}",
            left.join("; ")
        )))
    }
}

/// Names of the graph inputs that the control flow left after flattening depends on
/// (what `--bind` must fix for the engines), sorted and deduplicated.
pub fn control_inputs(g: &Graph) -> Result<Vec<String>> {
    let f = flatten_control_flow(g)?;
    let mut out: Vec<String> = f
        .nodes
        .iter()
        .filter(|n| matches!(n.op, Op::If { .. } | Op::Loop { .. } | Op::Scan { .. }))
        .flat_map(|n| {
            let k = if matches!(n.op, Op::If { .. }) { 1 } else { 2 };
            inputs_feeding(&f, n.inputs.iter().take(k).flatten().copied())
        })
        .collect();
    out.sort();
    out.dedup();
    Ok(out)
}

/// Names of the graph inputs the given values depend on.
fn inputs_feeding(g: &Graph, from: impl Iterator<Item = ValueId>) -> Vec<String> {
    let mut seen = vec![false; g.values.len()];
    let mut stack: Vec<ValueId> = from.collect();
    let mut out = Vec::new();
    while let Some(v) = stack.pop() {
        if std::mem::replace(&mut seen[v.idx()], true) {
            continue;
        }
        match &g.value(v).def {
            ValueDef::Input => out.push(g.value(v).name.clone()),
            ValueDef::Const(_) => {}
            ValueDef::Node { node, .. } => stack.extend(g.node(*node).inputs.iter().flatten()),
        }
    }
    out.sort();
    out
}

struct Flattener {
    out: Graph,
}

impl Flattener {
    /// The new value of `v` of graph `src`, copying a constant on first use.
    fn value_of(
        &mut self,
        src: &Graph,
        v: ValueId,
        map: &mut HashMap<ValueId, ValueId>,
        prefix: &str,
    ) -> Result<ValueId> {
        if let Some(&nv) = map.get(&v) {
            return Ok(nv);
        }
        let val = src.value(v);
        let name = format!("{prefix}{}", val.name);
        let nv = match &val.def {
            ValueDef::Const(Some(t)) => self.out.add_const(name, t.clone()),
            ValueDef::Const(None) => self.out.add_const_shape(name, val.ty.clone()),
            _ => {
                return Err(IrError::Other(format!(
                    "flattening: value '{}' is used before it is defined",
                    val.name
                )));
            }
        };
        map.insert(v, nv);
        Ok(nv)
    }

    /// Copy every node of `src` (inputs already mapped), flattening control flow.
    fn copy_body(
        &mut self,
        src: &Graph,
        map: &mut HashMap<ValueId, ValueId>,
        prefix: &str,
    ) -> Result<()> {
        for n in &src.nodes {
            if self.out.nodes.len() > MAX_FLAT_NODES {
                return Err(IrError::Other(format!(
                    "unrolling control flow makes more than {MAX_FLAT_NODES} nodes (at '{}'); the engines need a smaller loop",
                    n.name
                )));
            }
            let ins: Vec<Option<ValueId>> = n
                .inputs
                .iter()
                .map(|i| i.map(|v| self.value_of(src, v, map, prefix)).transpose())
                .collect::<Result<_>>()?;
            let outs = match &n.op {
                Op::If {
                    then_branch,
                    else_branch,
                } => match self.const_truth(ins[0]) {
                    Some(c) => {
                        let b = if c { then_branch } else { else_branch };
                        let p = format!("{prefix}{}/{}/", n.name, if c { "then" } else { "else" });
                        Some(self.inline(b.graph(), &ins[1..], &p)?)
                    }
                    None => None,
                },
                Op::Loop {
                    body, n_carried, ..
                } => self.unroll_loop(n, body.graph(), *n_carried, &ins, prefix)?,
                Op::Scan { body, attrs } => {
                    Some(self.unroll_scan(n, body.graph(), attrs, &ins, prefix)?)
                }
                _ => None,
            };
            let outs = match outs {
                Some(o) => o,
                None => {
                    let names = n
                        .outputs
                        .iter()
                        .map(|&o| format!("{prefix}{}", src.value(o).name))
                        .collect();
                    let outs = self.out.add_node_named(
                        format!("{prefix}{}", n.name),
                        n.op.clone(),
                        ins,
                        names,
                    )?;
                    let id = self.out.nodes.len() - 1;
                    self.out.nodes[id].source = n.source.clone();
                    outs
                }
            };
            for (&o, nv) in n.outputs.iter().zip(outs) {
                map.insert(o, nv);
            }
        }
        Ok(())
    }

    fn const_truth(&self, v: Option<ValueId>) -> Option<bool> {
        let t = self.out.const_data(v?)?;
        (t.numel() == 1).then(|| t.to_f64_vec()[0] != 0.0)
    }

    /// Copy subgraph `g` with its inputs bound to `ins`; returns its outputs' new values.
    fn inline(&mut self, g: &Graph, ins: &[Option<ValueId>], prefix: &str) -> Result<Vec<ValueId>> {
        let mut map = HashMap::new();
        for (&i, v) in g.inputs.iter().zip(ins) {
            let v = v.ok_or_else(|| {
                IrError::Other(format!(
                    "flattening: subgraph input '{}' has no value",
                    g.value(i).name
                ))
            })?;
            map.insert(i, v);
        }
        self.copy_body(g, &mut map, prefix)?;
        g.outputs
            .iter()
            .map(|&o| self.value_of(g, o, &mut map, prefix))
            .collect()
    }

    fn scalar(&mut self, name: String, ty: &TensorType, t: Tensor) -> ValueId {
        let t = t.reshaped(ty.shape.clone()).expect("one element");
        self.out.add_const(name, t)
    }

    /// Unroll a Loop whose trip count is a constant and whose body cannot stop it early
    /// (its condition output is constant true, or the loop has no condition input and the
    /// body passes the condition through); otherwise `None` (kept as it is).
    fn unroll_loop(
        &mut self,
        n: &Node,
        body: &Graph,
        n_carried: usize,
        ins: &[Option<ValueId>],
        prefix: &str,
    ) -> Result<Option<Vec<ValueId>>> {
        let Some(trip) = ins[0]
            .and_then(|m| self.out.const_data(m))
            .map(|t| t.to_i64_vec()[0].max(0) as usize)
        else {
            return Ok(None);
        };
        if ins[1].is_some() && self.const_truth(ins[1]) != Some(true) {
            return Ok(None);
        }
        if !body_keeps_going(body) {
            return Ok(None);
        }
        if trip.saturating_mul(body.nodes.len().max(1)) > MAX_FLAT_NODES {
            return Err(IrError::Other(format!(
                "node '{}' (Loop): unrolling {trip} iterations of a {}-node body exceeds {MAX_FLAT_NODES} nodes",
                n.name,
                body.nodes.len()
            )));
        }
        let mut carried: Vec<ValueId> = ins[2..2 + n_carried]
            .iter()
            .map(|v| {
                v.ok_or_else(|| IrError::Other(format!("node '{}': carried value missing", n.name)))
            })
            .collect::<Result<_>>()?;
        let caps = &ins[2 + n_carried..];
        let n_scan = body.outputs.len() - 1 - n_carried;
        let mut scans: Vec<Vec<ValueId>> = vec![Vec::new(); n_scan];
        let (it_ty, cond_ty) = (
            body.ty(body.inputs[0]).clone(),
            body.ty(body.inputs[1]).clone(),
        );
        for i in 0..trip {
            let p = format!("{prefix}{}@{i}/", n.name);
            let it = self.scalar(
                format!("{p}iter"),
                &it_ty,
                Tensor::from_i64(vec![], vec![i as i64]),
            );
            let cd = self.scalar(
                format!("{p}cond"),
                &cond_ty,
                Tensor::from_bool(vec![], vec![true]),
            );
            let mut bins = vec![Some(it), Some(cd)];
            bins.extend(carried.iter().map(|&v| Some(v)));
            bins.extend(caps.iter().copied());
            let outs = self.inline(body, &bins, &p)?;
            carried = outs[1..1 + n_carried].to_vec();
            for (k, &s) in outs[1 + n_carried..].iter().enumerate() {
                scans[k].push(s);
            }
        }
        let mut result = carried;
        for (k, parts) in scans.into_iter().enumerate() {
            let name = format!("{prefix}{}/scan{k}", n.name);
            result.push(self.stack(&name, &parts, 0)?);
        }
        Ok(Some(result))
    }

    fn unroll_scan(
        &mut self,
        n: &Node,
        body: &Graph,
        a: &ScanAttrs,
        ins: &[Option<ValueId>],
        prefix: &str,
    ) -> Result<Vec<ValueId>> {
        let get = |i: usize| {
            ins[i].ok_or_else(|| IrError::Other(format!("node '{}': input {i} missing", n.name)))
        };
        let mut states: Vec<ValueId> = (0..a.n_state).map(get).collect::<Result<_>>()?;
        let scans: Vec<ValueId> = (0..a.n_scan_in)
            .map(|k| get(a.n_state + k))
            .collect::<Result<_>>()?;
        let caps = &ins[a.n_state + a.n_scan_in..];
        let len = self.out.ty(scans[0]).shape[a.in_axes[0]];
        if len.saturating_mul(body.nodes.len().max(1)) > MAX_FLAT_NODES {
            return Err(IrError::Other(format!(
                "node '{}' (Scan): unrolling {len} steps of a {}-node body exceeds {MAX_FLAT_NODES} nodes",
                n.name,
                body.nodes.len()
            )));
        }
        let n_out = body.outputs.len() - a.n_state;
        let mut outs: Vec<Vec<ValueId>> = vec![Vec::new(); n_out];
        for t in 0..len {
            let p = format!("{prefix}{}@{t}/", n.name);
            let mut bins: Vec<Option<ValueId>> = states.iter().map(|&v| Some(v)).collect();
            for (k, &x) in scans.iter().enumerate() {
                let i = if a.in_reverse[k] { len - 1 - t } else { t };
                bins.push(Some(self.take(&format!("{p}in{k}"), x, a.in_axes[k], i)?));
            }
            bins.extend(caps.iter().copied());
            let res = self.inline(body, &bins, &p)?;
            states = res[..a.n_state].to_vec();
            for (k, &s) in res[a.n_state..].iter().enumerate() {
                outs[k].push(s);
            }
        }
        let mut result = states;
        for (k, mut parts) in outs.into_iter().enumerate() {
            if a.out_reverse[k] {
                parts.reverse();
            }
            let name = format!("{prefix}{}/scan{k}", n.name);
            result.push(self.stack(&name, &parts, a.out_axes[k])?);
        }
        Ok(result)
    }

    /// Element `i` of `x` along `axis`, the axis removed (Slice + Reshape).
    fn take(&mut self, name: &str, x: ValueId, axis: usize, i: usize) -> Result<ValueId> {
        let s = self.out.op(
            format!("{name}/slice"),
            Op::Slice {
                axes: vec![SliceAxis {
                    axis,
                    start: i as i64,
                    end: i as i64 + 1,
                    step: 1,
                }],
            },
            &[x],
        )?;
        let mut shape = self.out.ty(s).shape.clone();
        shape.remove(axis);
        self.out.op(name.to_string(), Op::Reshape { shape }, &[s])
    }

    /// Stack equal-typed values along a new `axis` (Reshape each, then Concat).
    fn stack(&mut self, name: &str, parts: &[ValueId], axis: usize) -> Result<ValueId> {
        let mut expanded = Vec::with_capacity(parts.len());
        for (k, &p) in parts.iter().enumerate() {
            let mut shape = self.out.ty(p).shape.clone();
            shape.insert(axis, 1);
            expanded.push(
                self.out
                    .op(format!("{name}/{k}"), Op::Reshape { shape }, &[p])?,
            );
        }
        if expanded.is_empty() {
            return Err(IrError::Other(format!(
                "'{name}': a loop of zero iterations has no scan output to build"
            )));
        }
        self.out
            .op(name.to_string(), Op::Concat { axis }, &expanded)
    }
}

/// The body's condition output is constant true, or it passes its condition input on.
fn body_keeps_going(body: &Graph) -> bool {
    let c = body.outputs[0];
    if c == body.inputs[1] {
        return true;
    }
    match &body.value(c).def {
        ValueDef::Const(Some(t)) => {
            t.dtype() == DType::Bool && t.to_f64_vec().iter().all(|&x| x != 0.0)
        }
        ValueDef::Node { node, .. } => {
            let n = body.node(*node);
            matches!(n.op, Op::Identity) && n.inputs[0] == Some(body.inputs[1])
        }
        _ => false,
    }
}
