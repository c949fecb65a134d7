//! BatchNormalization folding (what PyTorch's eval export and ORT's pre-processing do
//! before quantizing): Conv -> BN becomes one Conv with scaled weights and a bias.

use super::{QResult, QuantError};
use crate::init;
use pimkit_ir::{Graph, NodeId, Op, Tensor, ValueDef, ValueId};
use std::collections::HashMap;

/// Copies values of the old graph into the new one on demand.
struct Copier<'a> {
    g: &'a Graph,
    ng: Graph,
    map: HashMap<ValueId, ValueId>,
}

impl Copier<'_> {
    fn get(&mut self, v: ValueId) -> QResult<ValueId> {
        if let Some(&n) = self.map.get(&v) {
            return Ok(n);
        }
        let val = self.g.value(v);
        let n = match &val.def {
            ValueDef::Const(Some(t)) => self.ng.add_const(val.name.clone(), t.clone()),
            ValueDef::Const(None) => self.ng.add_const_shape(val.name.clone(), val.ty.clone()),
            _ => {
                return Err(QuantError::Calibration(format!(
                    "value '{}' is read before it is defined",
                    val.name
                )));
            }
        };
        self.map.insert(v, n);
        Ok(n)
    }
}

/// Conv node feeding `bn` if the pair can be folded.
fn foldable_conv(g: &Graph, bn: NodeId, readers: &HashMap<ValueId, Vec<NodeId>>) -> Option<NodeId> {
    let n = g.node(bn);
    let x = n.inputs[0]?;
    let ValueDef::Node { node, .. } = g.value(x).def else {
        return None;
    };
    let conv = g.node(node);
    let params_const = n.inputs[1..5]
        .iter()
        .all(|i| i.is_some_and(|v| g.is_const(v)));
    let ok = matches!(conv.op, Op::Conv(_))
        && conv
            .inputs
            .get(1)
            .copied()
            .flatten()
            .is_some_and(|w| g.is_const(w))
        && conv
            .inputs
            .get(2)
            .copied()
            .flatten()
            .is_none_or(|b| g.is_const(b))
        && readers.get(&x).map_or(0, |r| r.len()) == 1
        && params_const;
    ok.then_some(node)
}

pub(super) fn fold_batchnorm(g: &Graph) -> QResult<Graph> {
    let readers = g.consumers();
    let mut pairs: HashMap<NodeId, NodeId> = HashMap::new(); // conv -> bn
    for (i, n) in g.nodes.iter().enumerate() {
        if matches!(n.op, Op::BatchNorm { .. })
            && let Some(c) = foldable_conv(g, NodeId(i as u32), &readers)
        {
            pairs.insert(c, NodeId(i as u32));
        }
    }
    let folded_bns: HashMap<NodeId, NodeId> = pairs.iter().map(|(c, b)| (*b, *c)).collect();
    let mut c = Copier {
        g,
        ng: Graph::new(g.name.clone()),
        map: HashMap::new(),
    };
    for &i in &g.inputs {
        let v = g.value(i);
        let n = c.ng.add_input(v.name.clone(), v.ty.clone());
        c.map.insert(i, n);
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let id = NodeId(i as u32);
        if let Some(conv) = folded_bns.get(&id) {
            let out = c.map[&g.node(*conv).outputs[0]];
            c.map.insert(n.outputs[0], out);
            continue;
        }
        let mut inputs = Vec::with_capacity(n.inputs.len());
        for v in &n.inputs {
            inputs.push(match v {
                Some(v) => Some(c.get(*v)?),
                None => None,
            });
        }
        if let Some(&bn) = pairs.get(&id) {
            let (w, b) = folded_params(
                g,
                n.inputs[1].unwrap_or(ValueId(0)),
                n.inputs.get(2).copied().flatten(),
                g.node(bn),
            );
            let wname = g.value(n.inputs[1].unwrap_or(ValueId(0))).name.clone();
            let bname = match n.inputs.get(2).copied().flatten() {
                Some(b) => g.value(b).name.clone(),
                None => format!("{}.bias", n.name),
            };
            let wt = g.ty(n.inputs[1].unwrap_or(ValueId(0))).clone();
            let cout = wt.shape[0];
            let wid = match w {
                Some(t) => c.ng.add_const(wname, t),
                None => c.ng.add_const_shape(wname, wt),
            };
            let bid = match b {
                Some(t) => c.ng.add_const(bname, t),
                None => c.ng.add_const_shape(
                    bname,
                    pimkit_ir::TensorType::new(pimkit_ir::DType::F32, vec![cout]),
                ),
            };
            inputs.truncate(1);
            inputs.extend([Some(wid), Some(bid)]);
        }
        let names = n.outputs.iter().map(|o| g.value(*o).name.clone()).collect();
        let outs =
            c.ng.add_node_named(n.name.clone(), n.op.clone(), inputs, names)?;
        for (o, no) in n.outputs.iter().zip(outs) {
            c.map.insert(*o, no);
        }
    }
    let mut outs = Vec::new();
    for o in &g.outputs {
        outs.push(c.get(*o)?);
    }
    c.ng.outputs = outs;
    pimkit_ir::verify(&c.ng)?;
    Ok(c.ng)
}

/// Folded weight and bias tensors, or None when any input lacks data.
fn folded_params(
    g: &Graph,
    w: ValueId,
    b: Option<ValueId>,
    bn: &pimkit_ir::Node,
) -> (Option<Tensor>, Option<Tensor>) {
    let eps = match bn.op {
        Op::BatchNorm { epsilon } => epsilon,
        _ => 1e-5,
    };
    let wd = g
        .const_data(w)
        .and_then(|t| t.as_f32().map(|d| (t.shape.clone(), d.to_vec())));
    let cout = g.ty(w).shape[0];
    let bd = match b {
        Some(b) => g.const_data(b).and_then(|t| t.as_f32()).map(|d| d.to_vec()),
        None => Some(vec![0.0; cout]),
    };
    let st: Option<Vec<Vec<f32>>> = bn.inputs[1..5]
        .iter()
        .map(|v| {
            v.and_then(|v| g.const_data(v))
                .and_then(|t| t.as_f32())
                .map(|d| d.to_vec())
        })
        .collect();
    match (wd, bd, st) {
        (Some((shape, mut wv)), Some(mut bv), Some(st)) => {
            init::fold_bn(&mut wv, &mut bv, &[&st[0], &st[1], &st[2], &st[3]], eps);
            (
                Some(Tensor::from_f32(shape, wv)),
                Some(Tensor::from_f32(vec![cout], bv)),
            )
        }
        _ => (None, None),
    }
}
