use crate::{Graph, IrError, Result, ValueDef, infer_types};

/// Check every structural invariant of a graph and return all violations at once, each
/// naming the node or value: ids in range, topological order, each value defined once,
/// constant data matching its declared type, and stored types equal to re-inferred ones.
pub fn verify(g: &Graph) -> Result<()> {
    let mut problems = Vec::new();
    let nv = g.values.len();
    let mut defined = vec![false; nv];
    for &i in &g.inputs {
        if i.idx() >= nv {
            problems.push(format!("graph input id {} out of range", i.0));
            continue;
        }
        if g.values[i.idx()].def != ValueDef::Input {
            problems.push(format!(
                "graph input '{}' is not marked as an input",
                g.values[i.idx()].name
            ));
        }
    }
    for (i, v) in g.values.iter().enumerate() {
        if v.ty.checked_bytes().is_none() {
            problems.push(format!(
                "value '{}': {}",
                v.name,
                crate::tensor::too_large(&v.ty.shape, v.ty.dtype)
            ));
        }
        match &v.def {
            ValueDef::Input => {
                if !g.inputs.iter().any(|x| x.idx() == i) {
                    problems.push(format!(
                        "value '{}' is marked as an input but is not listed in the graph inputs",
                        v.name
                    ));
                }
                defined[i] = true;
            }
            ValueDef::Const(data) => {
                if let Some(t) = data
                    && t.ty() != v.ty
                {
                    problems.push(format!(
                        "constant '{}' declares {} but holds {}",
                        v.name,
                        v.ty,
                        t.ty()
                    ));
                }
                defined[i] = true;
            }
            ValueDef::Node { node, index } => {
                let ok = g
                    .nodes
                    .get(node.idx())
                    .and_then(|n| n.outputs.get(*index))
                    .is_some_and(|o| o.idx() == i);
                if !ok {
                    problems.push(format!(
                        "value '{}' claims to be output {index} of node #{} but is not",
                        v.name, node.0
                    ));
                }
            }
        }
    }
    for n in &g.nodes {
        for (label, sub) in crate::subgraphs(&n.op) {
            if let Err(e) = verify(sub) {
                let inner = match e {
                    IrError::Verify(p) => p.join("; "),
                    e => e.to_string(),
                };
                problems.push(format!(
                    "node '{}' ({}): {label} subgraph: {inner}",
                    n.name,
                    n.op.name()
                ));
            }
        }
        let mut ok = true;
        for (k, inp) in n.inputs.iter().enumerate() {
            if let Some(v) = inp {
                if v.idx() >= nv {
                    problems.push(format!(
                        "node '{}' ({}): input {k} refers to missing value #{}",
                        n.name,
                        n.op.name(),
                        v.0
                    ));
                    ok = false;
                } else if !defined[v.idx()] {
                    problems.push(format!(
                        "node '{}' ({}): input {k} '{}' is used before it is defined (nodes not in topological order or a cycle)",
                        n.name,
                        n.op.name(),
                        g.values[v.idx()].name
                    ));
                    ok = false;
                }
            }
        }
        if ok {
            for k in n.op.scale_inputs(n.inputs.len()) {
                let Some(Some(v)) = n.inputs.get(k) else {
                    continue;
                };
                if let ValueDef::Const(Some(t)) = &g.values[v.idx()].def
                    && t.dtype().is_float()
                    && let Some(bad) = t
                        .to_f64_vec()
                        .into_iter()
                        .find(|x| !(x.is_finite() && *x > 0.0))
                {
                    problems.push(format!(
                        "node '{}' ({}): scale input {k} '{}' holds {bad}; quantization scales must be finite and positive",
                        n.name,
                        n.op.name(),
                        g.values[v.idx()].name
                    ));
                }
            }
            let tys: Vec<_> = n
                .inputs
                .iter()
                .map(|i| i.map(|v| &g.values[v.idx()].ty))
                .collect();
            match infer_types(&n.name, &n.op, &tys) {
                Ok(out) => {
                    if out.len() != n.outputs.len() {
                        problems.push(format!(
                            "node '{}' ({}): has {} outputs, op produces {}",
                            n.name,
                            n.op.name(),
                            n.outputs.len(),
                            out.len()
                        ));
                    }
                    for (o, t) in n.outputs.iter().zip(out) {
                        if o.idx() < nv && g.values[o.idx()].ty != t {
                            problems.push(format!(
                                "node '{}' ({}): output '{}' is typed {} but infers to {}",
                                n.name,
                                n.op.name(),
                                g.values[o.idx()].name,
                                g.values[o.idx()].ty,
                                t
                            ));
                        }
                    }
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        for o in &n.outputs {
            if o.idx() < nv {
                if defined[o.idx()] {
                    problems.push(format!(
                        "node '{}': output '{}' is defined twice",
                        n.name,
                        g.values[o.idx()].name
                    ));
                }
                defined[o.idx()] = true;
            }
        }
    }
    for &o in &g.outputs {
        if o.idx() >= nv || !defined[o.idx()] {
            problems.push(format!("graph output #{} is never defined", o.0));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(IrError::Verify(problems))
    }
}
