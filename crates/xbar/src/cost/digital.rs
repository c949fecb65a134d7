//! Work outside the crossbars: the digital units' element operations of every node that is
//! not a crossbar layer, and the bytes in and out of the chip.

use pimkit_cost::{Counts, Kind};
use pimkit_ir::{Graph, NodeId, ValueDef};
use std::collections::HashSet;

/// Ops that only move or relabel data (no arithmetic unit works on them).
const MOVES: &[&str] = &[
    "Reshape",
    "Flatten",
    "Transpose",
    "Squeeze",
    "Unsqueeze",
    "Concat",
    "Slice",
    "Gather",
    "Identity",
    "Cast",
    "Split",
    "Pad",
    "Shape",
    "Expand",
    "Tile",
    "DepthToSpace",
    "SpaceToDepth",
    "Dropout",
];

const ACTIVATIONS: &[&str] = &[
    "Relu",
    "Sigmoid",
    "Tanh",
    "Clip",
    "LeakyRelu",
    "HardSigmoid",
    "HardSwish",
    "Gelu",
    "Elu",
    "Selu",
    "Softplus",
    "Erf",
    "Exp",
    "PRelu",
    "Mish",
    "QLinearSigmoid",
    "QLinearLeakyRelu",
    "Softmax",
    "LogSoftmax",
    "QLinearSoftmax",
];

/// Element operations of the nodes not in `layers`, and the graph's input and output bytes.
pub fn counts(g: &Graph, layers: &HashSet<NodeId>, act_bytes: f64) -> Counts {
    let mut c = Counts::default();
    for (i, n) in g.nodes.iter().enumerate() {
        let id = NodeId(i as u32);
        if layers.contains(&id) {
            continue;
        }
        let name = n.op.name();
        if MOVES.contains(&name) {
            continue;
        }
        let out: f64 = n.outputs.iter().map(|&v| g.ty(v).numel() as f64).sum();
        let kind = if name.contains("Pool") {
            Kind::Pooling
        } else if ACTIVATIONS.contains(&name) {
            Kind::Activation
        } else {
            Kind::Vector
        };
        // A product of two activations (attention) has no stored weight: its multiply-
        // accumulates run on the vector units, one per element of the inner dimension.
        let inner = if matches!(name, "MatMul" | "Gemm" | "MatMulInteger" | "QLinearMatMul") {
            n.inputs
                .first()
                .copied()
                .flatten()
                .and_then(|v| g.ty(v).shape.last().copied())
                .unwrap_or(1)
                .max(1) as f64
        } else {
            1.0
        };
        let input: f64 = if kind == Kind::Pooling {
            n.inputs
                .first()
                .copied()
                .flatten()
                .map_or(out, |v| g.ty(v).numel() as f64)
        } else {
            out
        };
        c.add(kind, input * inner);
    }
    let io = |vs: &[pimkit_ir::ValueId]| -> f64 {
        vs.iter()
            .filter(|&&v| !matches!(g.value(v).def, ValueDef::Const(_)))
            .map(|&v| g.ty(v).numel() as f64 * act_bytes)
            .sum()
    };
    c.add(Kind::Offchip, io(&g.inputs) + io(&g.outputs));
    c
}
