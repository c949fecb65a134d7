//! Sub-graphs of a graph: the layers of a per-layer run, and the float part of a graph
//! whose integer front end (token ids, one-hot indices) runs on the host.

use pimkit_ir::{Graph, Op, Tensor, TensorType, ValueDef, ValueId};
use std::collections::{HashMap, HashSet};

fn weighted(op: &Op) -> bool {
    matches!(op, Op::Conv(_) | Op::Gemm { .. } | Op::MatMul)
}

/// Node index ranges of the layers: cut before each weighted node; trailing Reshapes
/// (flatten) move to the next layer when it is a dense one, so convolution layers
/// stay spatial. Before a convolution they stay where they are: moved, they would
/// give the convolution's layer an input that is not a feature map (ShuffleNet's
/// channel shuffle is a 5-D Reshape/Transpose/Reshape), which cannot be windowed.
pub fn segments(g: &Graph) -> Vec<std::ops::Range<usize>> {
    let mut cuts = vec![0];
    for (i, n) in g.nodes.iter().enumerate() {
        if i > 0 && weighted(&n.op) {
            let mut c = i;
            let prev = *cuts.last().unwrap_or(&0);
            let dense = !matches!(n.op, Op::Conv(_));
            while dense && c > prev + 1 && matches!(g.nodes[c - 1].op, Op::Reshape { .. }) {
                c -= 1;
            }
            if c > prev {
                cuts.push(c);
            }
        }
    }
    cuts.push(g.nodes.len());
    cuts.windows(2)
        .filter(|w| w[1] > w[0])
        .map(|w| w[0]..w[1])
        .collect()
}

/// Nodes that run on the host: those with a dynamic non-float input or a non-float
/// output (embedding lookups by token id, index arithmetic). PUMA computes in 16-bit
/// fixed point on floats; their float results become PUMA's inputs.
pub fn host_nodes(g: &Graph) -> HashSet<usize> {
    g.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| {
            n.inputs
                .iter()
                .flatten()
                .any(|&v| !g.is_const(v) && !g.ty(v).dtype.is_float())
                || n.outputs.iter().any(|&o| !g.ty(o).dtype.is_float())
        })
        .map(|(i, _)| i)
        .collect()
}

/// Dynamic values the given nodes read but do not produce, in first-use order.
pub fn external_inputs(g: &Graph, nodes: &[usize]) -> Vec<ValueId> {
    let inside: HashSet<ValueId> = nodes
        .iter()
        .flat_map(|&i| g.nodes[i].outputs.iter().copied())
        .collect();
    let mut ext = Vec::new();
    for &i in nodes {
        for &v in g.nodes[i].inputs.iter().flatten() {
            if !inside.contains(&v) && !g.is_const(v) && !ext.contains(&v) {
                ext.push(v);
            }
        }
    }
    ext
}

/// The given nodes (in order) as a graph of their own: `ext` become inputs of the given
/// shapes (a smaller window for scaled layers), `outs` its outputs.
pub fn subgraph(
    g: &Graph,
    name: &str,
    nodes: &[usize],
    ext: &[ValueId],
    shapes: &[Vec<usize>],
    outs: &[ValueId],
) -> Result<Graph, String> {
    let mut s = Graph::new(format!("{}/{name}", g.name));
    let mut map: HashMap<ValueId, ValueId> = HashMap::new();
    for (&v, sh) in ext.iter().zip(shapes) {
        let val = g.value(v);
        let id = s.add_input(val.name.clone(), TensorType::new(val.ty.dtype, sh.clone()));
        map.insert(v, id);
    }
    for &ni in nodes {
        let n = &g.nodes[ni];
        let mut inputs = Vec::with_capacity(n.inputs.len());
        for i in &n.inputs {
            inputs.push(match i {
                None => None,
                Some(v) => Some(match map.get(v) {
                    Some(&m) => m,
                    None => {
                        let val = g.value(*v);
                        let ValueDef::Const(c) = &val.def else {
                            return Err(format!("value `{}` is not available", val.name));
                        };
                        let id = match c {
                            Some(t) => s.add_const(val.name.clone(), t.clone()),
                            None => s.add_const_shape(val.name.clone(), val.ty.clone()),
                        };
                        map.insert(*v, id);
                        id
                    }
                }),
            });
        }
        let names = n.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
        let o = s
            .add_node_named(n.name.clone(), n.op.clone(), inputs, names)
            .map_err(|e| e.to_string())?;
        for (a, b) in n.outputs.iter().zip(o) {
            map.insert(*a, b);
        }
    }
    s.outputs = outs
        .iter()
        .map(|o| {
            map.get(o)
                .copied()
                .ok_or_else(|| format!("output `{}` is not computed", g.value(*o).name))
        })
        .collect::<Result<_, _>>()?;
    Ok(s)
}

/// Top-left window of an NCHW tensor.
pub fn crop(t: &Tensor, h: usize, w: usize) -> Tensor {
    let (n, c, hh, ww) = (t.shape[0], t.shape[1], t.shape[2], t.shape[3]);
    let v = t.to_f32_vec();
    let mut out = Vec::with_capacity(n * c * h * w);
    for b in 0..n * c {
        for y in 0..h {
            let row = b * hh * ww + y * ww;
            out.extend_from_slice(&v[row..row + w]);
        }
    }
    Tensor::from_f32(vec![n, c, h, w], out)
}

/// The float part of `g` when some nodes run on the host ([`host_nodes`]): the graph of
/// the other nodes, whose inputs are the values the host computes (and the float graph
/// inputs), and a note naming the host nodes. `None` when nothing runs on the host.
pub struct HostSplit {
    pub graph: Graph,
    /// Values of `g` that become the split graph's inputs (by name).
    pub inputs: Vec<ValueId>,
    pub note: String,
}

pub fn split_host(g: &Graph) -> Result<Option<HostSplit>, String> {
    let host = host_nodes(g);
    if host.is_empty() {
        return Ok(None);
    }
    let nodes: Vec<usize> = (0..g.nodes.len()).filter(|i| !host.contains(i)).collect();
    let inputs = external_inputs(g, &nodes);
    if let Some(&v) = inputs.iter().find(|&&v| !g.ty(v).dtype.is_float()) {
        return Err(format!(
            "value `{}` ({}) is read by PUMA nodes but is not float",
            g.value(v).name,
            g.ty(v)
        ));
    }
    let outs: Vec<ValueId> = g
        .outputs
        .iter()
        .copied()
        .filter(|o| g.ty(*o).dtype.is_float())
        .collect();
    let shapes: Vec<Vec<usize>> = inputs.iter().map(|&v| g.ty(v).shape.clone()).collect();
    let graph = subgraph(g, "puma", &nodes, &inputs, &shapes, &outs)?;
    let mut names: Vec<String> = host
        .iter()
        .map(|&i| format!("`{}` ({})", g.nodes[i].name, g.nodes[i].op.name()))
        .collect();
    names.sort();
    let note = format!(
        "{} node(s) with integer inputs or outputs run on the host (PUMA computes in 16-bit fixed point): {}; their float results are PUMA's inputs",
        names.len(),
        names.join(", ")
    );
    Ok(Some(HostSplit {
        graph,
        inputs,
        note,
    }))
}
