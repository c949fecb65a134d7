//! The execution loop: bind inputs and constants, run nodes in order, free values after
//! their last use, check every node's outputs against the types the graph declares.

use crate::error::{InterpError, OpError};
use crate::kernels::act::Act;
use crate::ops;
use pimkit_ir::{Graph, NodeId, Tensor, TensorType, ValueDef};
use std::borrow::Cow;
use std::collections::HashMap;

/// What an op kernel sees: its inputs (None = omitted optional input) and the output
/// types the graph declares.
pub(crate) struct Ctx<'a> {
    pub ins: Vec<Option<&'a Tensor>>,
    pub out_tys: Vec<&'a TensorType>,
    /// Where the kernel may keep its prepared constant operand (packed weights) across
    /// runs; `None` when that input is not a constant or nothing is kept.
    pub prep: Option<&'a crate::prepared::Slot>,
    /// An activation to apply to the (single, f32) output as it is written: the node's
    /// one reader, a Clip or Relu, is fused into it (see [`fusion`]).
    pub act: Option<Act>,
}

impl<'a> Ctx<'a> {
    /// Required input `i`.
    pub fn input(&self, i: usize) -> Result<&'a Tensor, OpError> {
        self.opt(i)
            .ok_or_else(|| OpError::Invalid(format!("required input {i} is missing")))
    }
    /// Optional input `i`.
    pub fn opt(&self, i: usize) -> Option<&'a Tensor> {
        self.ins.get(i).copied().flatten()
    }
    /// Declared type of output `i`.
    pub fn out_ty(&self, i: usize) -> &'a TensorType {
        self.out_tys[i]
    }
}

/// Run `g` on `inputs` (keyed by graph input name); returns the outputs in
/// `g.outputs` order.
pub fn run(g: &Graph, inputs: &HashMap<String, Tensor>) -> Result<Vec<Tensor>, InterpError> {
    crate::Session::new(g).run(inputs)
}

fn describe_inputs(g: &Graph) -> String {
    let parts: Vec<String> = g
        .inputs
        .iter()
        .map(|&i| format!("'{}': {}", g.value(i).name, g.value(i).ty))
        .collect();
    if parts.is_empty() {
        "none".into()
    } else {
        format!("[{}]", parts.join(", "))
    }
}

/// Like [`run`], calling `observe(node, outputs)` after every node (for layer-by-layer
/// comparisons and activation statistics).
pub fn run_observed(
    g: &Graph,
    inputs: &HashMap<String, Tensor>,
    observe: &mut dyn FnMut(NodeId, &[Tensor]),
) -> Result<Vec<Tensor>, InterpError> {
    run_substituted(g, inputs, &mut |_, _| None, observe)
}

/// A hook that may compute a node's outputs in place of its kernel: it sees the node and
/// its inputs and returns `None` to run the reference kernel, or the outputs (checked
/// against the declared types like a kernel's) or an error message naming the problem.
pub type Substitute<'a> =
    dyn FnMut(NodeId, &[Option<&Tensor>]) -> Option<Result<Vec<Tensor>, String>> + 'a;

/// Like [`run_observed`], asking `substitute` before every node (engines that model one
/// kind of node differently, e.g. analog crossbars, and reuse every other kernel).
pub fn run_substituted(
    g: &Graph,
    inputs: &HashMap<String, Tensor>,
    substitute: &mut Substitute<'_>,
    observe: &mut dyn FnMut(NodeId, &[Tensor]),
) -> Result<Vec<Tensor>, InterpError> {
    crate::Session::new(g).run_substituted(inputs, substitute, observe)
}

/// [`run_substituted`] with the prepared-operand cache of a [`crate::Session`]; `fuse`
/// allows activation fusion ([`fusion`]: only when neither hook sees intermediate
/// values).
pub(crate) fn run_with(
    g: &Graph,
    slots: &[crate::prepared::Slot],
    inputs: &HashMap<String, Tensor>,
    substitute: &mut Substitute<'_>,
    observe: &mut dyn FnMut(NodeId, &[Tensor]),
    fuse: bool,
) -> Result<Vec<Tensor>, InterpError> {
    pimkit_ir::verify(g)?;
    crate::check_memory(g)?;
    for name in inputs.keys() {
        if !g.inputs.iter().any(|&i| &g.value(i).name == name) {
            return Err(InterpError::UnknownInput {
                name: name.clone(),
                expected: describe_inputs(g),
            });
        }
    }
    let mut bound = Vec::with_capacity(g.inputs.len());
    for &id in &g.inputs {
        let v = g.value(id);
        let t = inputs
            .get(&v.name)
            .ok_or_else(|| InterpError::MissingInput {
                name: v.name.clone(),
                expected: describe_inputs(g),
            })?;
        bound.push(t);
    }
    execute(g, &bound, slots, substitute, observe, fuse)
}

/// Run a verified graph on its inputs given in `g.inputs` order (subgraph bodies).
pub(crate) fn run_positional(g: &Graph, inputs: &[&Tensor]) -> Result<Vec<Tensor>, InterpError> {
    if inputs.len() != g.inputs.len() {
        return Err(InterpError::Node {
            node: g.name.clone(),
            op: "subgraph".into(),
            msg: format!(
                "{} inputs given, the subgraph takes {}",
                inputs.len(),
                g.inputs.len()
            ),
        });
    }
    let slots: Vec<crate::prepared::Slot> = g.nodes.iter().map(|_| Default::default()).collect();
    execute(g, inputs, &slots, &mut |_, _| None, &mut |_, _| {}, true)
}

fn execute(
    g: &Graph,
    inputs: &[&Tensor],
    slots: &[crate::prepared::Slot],
    substitute: &mut Substitute<'_>,
    observe: &mut dyn FnMut(NodeId, &[Tensor]),
    fuse: bool,
) -> Result<Vec<Tensor>, InterpError> {
    let n = g.values.len();
    let mut vals: Vec<Option<Cow<'_, Tensor>>> = vec![None; n];
    for (&id, &t) in g.inputs.iter().zip(inputs) {
        let v = g.value(id);
        if t.dtype() != v.ty.dtype || t.shape != v.ty.shape || t.numel() != v.ty.numel() {
            return Err(InterpError::InputMismatch {
                name: v.name.clone(),
                expected: v.ty.to_string(),
                got: format!("{}{:?}", t.dtype(), t.shape),
            });
        }
        vals[id.idx()] = Some(Cow::Borrowed(t));
    }
    for (i, v) in g.values.iter().enumerate() {
        if let ValueDef::Const(Some(t)) = &v.def {
            vals[i] = Some(Cow::Borrowed(t));
        }
    }

    // Remaining reads per value; graph outputs are never freed.
    let mut uses = vec![0usize; n];
    for node in &g.nodes {
        for v in node.inputs.iter().flatten() {
            uses[v.idx()] += 1;
        }
    }
    for o in &g.outputs {
        uses[o.idx()] += usize::MAX / 2;
    }
    let plan = if fuse {
        fusion(g, &uses)
    } else {
        vec![Fused::No; g.nodes.len()]
    };

    for (ni, node) in g.nodes.iter().enumerate() {
        let outs = {
            let mut ins = Vec::with_capacity(node.inputs.len());
            for inp in &node.inputs {
                match inp {
                    None => ins.push(None),
                    Some(v) => match &vals[v.idx()] {
                        Some(t) => ins.push(Some(t.as_ref())),
                        None => {
                            let val = g.value(*v);
                            return Err(match val.def {
                                ValueDef::Const(None) => InterpError::ShapeOnly {
                                    name: val.name.clone(),
                                },
                                _ => InterpError::Node {
                                    node: node.name.clone(),
                                    op: node.op.name().into(),
                                    msg: format!("input '{}' has no value", val.name),
                                },
                            });
                        }
                    },
                }
            }
            if let Some(r) = substitute(NodeId(ni as u32), &ins) {
                r.map_err(|msg| InterpError::Node {
                    node: node.name.clone(),
                    op: node.op.name().into(),
                    msg,
                })?
            } else if let (Fused::Absorbed, [Some(v)]) = (plan[ni], &node.inputs[..]) {
                // Already applied by the producing Conv: pass the value on.
                drop(ins);
                vals[v.idx()]
                    .take()
                    .map(Cow::into_owned)
                    .into_iter()
                    .collect()
            } else if let Some(v) = reusable_input(node, &vals, &uses) {
                drop(ins);
                in_place(&node.op, v, &mut vals)
            } else {
                let prep = crate::prepared::slot_for(g, ni, slots);
                let tys = node.outputs.iter().map(|&o| g.ty(o)).collect();
                let act = match plan[ni] {
                    Fused::Into(a) => Some(a),
                    _ => None,
                };
                eval_prepared(node, ins, tys, prep, act)?
            }
        };
        if outs.len() != node.outputs.len() {
            return Err(InterpError::Node {
                node: node.name.clone(),
                op: node.op.name().into(),
                msg: format!(
                    "interpreter bug: produced {} outputs, the graph declares {}",
                    outs.len(),
                    node.outputs.len()
                ),
            });
        }
        for (k, (t, &o)) in outs.iter().zip(&node.outputs).enumerate() {
            let ty = g.ty(o);
            if t.dtype() != ty.dtype || t.shape != ty.shape || t.numel() != ty.numel() {
                return Err(InterpError::Node {
                    node: node.name.clone(),
                    op: node.op.name().into(),
                    msg: format!(
                        "interpreter bug: output {k} is {}{:?}, the graph declares {ty}",
                        t.dtype(),
                        t.shape
                    ),
                });
            }
        }
        observe(NodeId(ni as u32), &outs);
        for v in node.inputs.iter().flatten() {
            uses[v.idx()] -= 1;
            if uses[v.idx()] == 0 && matches!(g.value(*v).def, ValueDef::Node { .. }) {
                vals[v.idx()] = None;
            }
        }
        for (t, &o) in outs.into_iter().zip(&node.outputs) {
            vals[o.idx()] = Some(Cow::Owned(t));
        }
    }

    g.outputs
        .iter()
        .map(|&o| match &vals[o.idx()] {
            Some(t) => Ok(t.clone().into_owned()),
            None => Err(match g.value(o).def {
                ValueDef::Const(None) => InterpError::ShapeOnly {
                    name: g.value(o).name.clone(),
                },
                _ => InterpError::Node {
                    node: g.value(o).name.clone(),
                    op: "output".into(),
                    msg: "graph output was never computed".into(),
                },
            }),
        })
        .collect()
}

/// Evaluate one node's reference kernel on `ins` (None = omitted optional input) with the
/// output types `out_tys`; errors name the node. Engines use it to evaluate a node on
/// inputs of their own (e.g. one time step of an LSTM).
pub fn eval_node(
    node: &pimkit_ir::Node,
    ins: Vec<Option<&Tensor>>,
    out_tys: Vec<&TensorType>,
) -> Result<Vec<Tensor>, InterpError> {
    eval_prepared(node, ins, out_tys, None, None)
}

/// [`eval_node`] with the node's prepared-operand slot.
fn eval_prepared(
    node: &pimkit_ir::Node,
    ins: Vec<Option<&Tensor>>,
    out_tys: Vec<&TensorType>,
    prep: Option<&crate::prepared::Slot>,
    act: Option<Act>,
) -> Result<Vec<Tensor>, InterpError> {
    let ctx = Ctx {
        ins,
        out_tys,
        prep,
        act,
    };
    crate::threads::install(|| ops::eval(&node.op, &ctx)).map_err(|e| match e {
        OpError::Unsupported(msg) => InterpError::Unsupported {
            node: node.name.clone(),
            op: node.op.name().into(),
            msg,
        },
        OpError::Invalid(msg) => InterpError::Node {
            node: node.name.clone(),
            op: node.op.name().into(),
            msg,
        },
    })
}

/// What activation fusion does to a node.
#[derive(Clone, Copy)]
enum Fused {
    No,
    /// A Conv that applies its reader's activation as it writes its output.
    Into(Act),
    /// That reader: its input already is its output.
    Absorbed,
}

/// Conv nodes whose f32 output is read only by one Clip or Relu (which would run in
/// place on it, see [`reusable_input`]): the Conv's kernels apply the activation to
/// each finished tile / plane while it is in cache instead of one more pass over the
/// activation in memory (12-16 % of MobileNetV2's samples were that Clip pass). The
/// formula is the in-place one (`kernels::act`), so the bits are the same. Only runs
/// without an observer or substitute fuse: those see every node's own output.
fn fusion(g: &Graph, uses: &[usize]) -> Vec<Fused> {
    use pimkit_ir::{DType, Op, UnaryOp};
    let mut plan = vec![Fused::No; g.nodes.len()];
    // The last node reading each value (its only one where uses is 1).
    let mut reader = vec![usize::MAX; g.values.len()];
    for (ni, node) in g.nodes.iter().enumerate() {
        for v in node.inputs.iter().flatten() {
            reader[v.idx()] = ni;
        }
    }
    for (ni, node) in g.nodes.iter().enumerate() {
        let (Op::Conv(_), [o]) = (&node.op, &node.outputs[..]) else {
            continue;
        };
        let r = reader[o.idx()];
        if uses[o.idx()] != 1 || r == usize::MAX || g.ty(*o).dtype != DType::F32 {
            continue;
        }
        let rn = &g.nodes[r];
        if rn.inputs[..] != [Some(*o)] {
            continue;
        }
        let act = match rn.op {
            Op::Clip { min, max } => Act::Clip(
                min.unwrap_or(f32::NEG_INFINITY),
                max.unwrap_or(f32::INFINITY),
            ),
            Op::Unary(UnaryOp::Relu) => Act::Relu,
            _ => continue,
        };
        plan[ni] = Fused::Into(act);
        plan[r] = Fused::Absorbed;
    }
    plan
}

/// The input of a Clip or Relu node that may be computed in place: an f32 value this
/// node is the last to read and that the interpreter owns (not a graph input or
/// constant). A CNN's activations are megabytes each; this saves allocating the output.
fn reusable_input(
    node: &pimkit_ir::Node,
    vals: &[Option<Cow<'_, Tensor>>],
    uses: &[usize],
) -> Option<pimkit_ir::ValueId> {
    use pimkit_ir::{Op, TensorData, UnaryOp};
    if !matches!(node.op, Op::Clip { .. } | Op::Unary(UnaryOp::Relu)) {
        return None;
    }
    let [Some(v)] = node.inputs[..] else {
        return None;
    };
    match &vals[v.idx()] {
        Some(Cow::Owned(t)) if uses[v.idx()] == 1 && matches!(t.data, TensorData::F32(_)) => {
            Some(v)
        }
        _ => None,
    }
}

/// Clip or Relu computed in the buffer of its [`reusable_input`], with the kernels'
/// arithmetic; the node's single output.
fn in_place(
    op: &pimkit_ir::Op,
    v: pimkit_ir::ValueId,
    vals: &mut [Option<Cow<'_, Tensor>>],
) -> Vec<Tensor> {
    use pimkit_ir::{Op, TensorData};
    // reusable_input checked that the value is present and owned (were it not, the
    // empty result is reported as an interpreter bug by the output-count check).
    let Some(mut t) = vals[v.idx()].take().map(Cow::into_owned) else {
        return vec![];
    };
    if let TensorData::F32(d) = &mut t.data {
        match *op {
            Op::Clip { min, max } => crate::kernels::ewise::clip_in_place(
                d,
                min.unwrap_or(f32::NEG_INFINITY),
                max.unwrap_or(f32::INFINITY),
            ),
            _ => crate::kernels::ewise::relu_in_place(d),
        }
    }
    vec![t]
}
