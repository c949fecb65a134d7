use crate::{Graph, Node, Op, ValueDef, numel};
use serde::Serialize;
use std::collections::BTreeMap;

/// Static cost of one node: multiply-accumulates and bytes moved (each input and output
/// read or written once; a lower bound on traffic).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct NodeCost {
    pub macs: u64,
    pub read_bytes: u64,
    pub write_bytes: u64,
    /// Elements of constant (weight) inputs.
    pub params: u64,
}

/// Product of element counts without wrapping (tensors are at most 2^48 bytes, but MAC
/// counts multiply two of them).
fn mul(a: usize, b: usize) -> u64 {
    (a as u64).saturating_mul(b as u64)
}

fn conv_macs(g: &Graph, n: &Node, w_idx: usize) -> u64 {
    let out = &g.ty(n.outputs[0]).shape;
    let w = &g.ty(n.inputs[w_idx].expect("conv weight")).shape;
    // Each output element needs (C/group) * prod(kernel) MACs.
    mul(numel(out), numel(&w[1..]))
}

fn matmul_macs(g: &Graph, n: &Node, a_idx: usize) -> u64 {
    let a = &g.ty(n.inputs[a_idx].expect("matmul a")).shape;
    let out = &g.ty(n.outputs[0]).shape;
    let k = *a.last().unwrap_or(&1);
    mul(numel(out), k)
}

/// MACs and traffic of one node. Elementwise and data-movement ops count 0 MACs.
pub fn node_cost(g: &Graph, n: &Node) -> NodeCost {
    let mut c = NodeCost::default();
    for v in n.inputs.iter().flatten() {
        let val = g.value(*v);
        c.read_bytes += val.ty.bytes() as u64;
        if matches!(val.def, ValueDef::Const(_)) {
            c.params += val.ty.numel() as u64;
        }
    }
    for o in &n.outputs {
        c.write_bytes += g.ty(*o).bytes() as u64;
    }
    c.macs = match &n.op {
        Op::Conv(_) | Op::ConvInteger(_) => conv_macs(g, n, 1),
        Op::QLinearConv(_) => conv_macs(g, n, 3),
        Op::ConvTranspose(_) => {
            // Every input element meets C_out/group * prod(kernel) weights (w[1..]).
            let x = &g.ty(n.inputs[0].expect("convtranspose x")).shape;
            let w = &g.ty(n.inputs[1].expect("convtranspose w")).shape;
            mul(numel(x), numel(&w[1..]))
        }
        Op::MatMul | Op::MatMulInteger => matmul_macs(g, n, 0),
        Op::QLinearMatMul => matmul_macs(g, n, 0),
        Op::Gemm { trans_a, .. } | Op::QGemm { trans_a, .. } => {
            let a = &g.ty(n.inputs[0].expect("gemm a")).shape;
            let k = if *trans_a { a[0] } else { a[1] };
            mul(numel(&g.ty(n.outputs[0]).shape), k)
        }
        Op::Lstm(a) | Op::Gru(a) => {
            let w = &g.ty(n.inputs[1].expect("rnn w")).shape;
            let r = &g.ty(n.inputs[2].expect("rnn r")).shape;
            let x = &g.ty(n.inputs[0].expect("rnn x")).shape;
            let (seq, batch) = if a.batch_first {
                (x[1], x[0])
            } else {
                (x[0], x[1])
            };
            mul(numel(w) + numel(r), seq).saturating_mul(batch as u64)
        }
        // A branch's or body's MACs, times the iterations where the count is static.
        Op::If { .. } => crate::subgraphs(&n.op)
            .iter()
            .map(|(_, b)| GraphStats::of(b).macs)
            .max()
            .unwrap_or(0),
        Op::Loop { body, scan_len, .. } => GraphStats::of(body.graph())
            .macs
            .saturating_mul(scan_len.unwrap_or(1) as u64),
        Op::Scan { body, attrs } => {
            let len = n
                .inputs
                .get(attrs.n_state)
                .copied()
                .flatten()
                .map(|v| g.ty(v).shape.get(attrs.in_axes[0]).copied().unwrap_or(1))
                .unwrap_or(1);
            GraphStats::of(body.graph()).macs.saturating_mul(len as u64)
        }
        _ => 0,
    };
    c
}

/// Whole-graph summary used by `pimkit info` and the report.
#[derive(Clone, Debug, Default, Serialize)]
pub struct GraphStats {
    pub nodes: usize,
    pub params: u64,
    pub param_bytes: u64,
    pub macs: u64,
    pub ops: BTreeMap<String, usize>,
}

impl GraphStats {
    pub fn of(g: &Graph) -> GraphStats {
        let mut s = GraphStats {
            nodes: g.nodes.len(),
            ..Default::default()
        };
        for v in &g.values {
            if matches!(v.def, ValueDef::Const(_)) {
                s.params = s.params.saturating_add(v.ty.numel() as u64);
                s.param_bytes = s.param_bytes.saturating_add(v.ty.bytes() as u64);
            }
        }
        for n in &g.nodes {
            *s.ops.entry(n.op.name().to_string()).or_default() += 1;
            s.macs = s.macs.saturating_add(node_cost(g, n).macs);
        }
        s
    }
}
