//! Constant operands prepared once per loaded graph: the packed panels of a Conv's
//! weights, of the constant B operand of a MatMul / Gemm, or of an LSTM's / GRU's W
//! (with R transposed), kept per node by a
//! [`Session`] and reused by every run of it (as onnxruntime pre-packs weights once per
//! session). The kernels compute exactly what they compute without the cache: the
//! panels are the same packing the GEMM would do per call.

use crate::InterpError;
use crate::kernels::fgemm::Panels;
use pimkit_ir::{Graph, NodeId, Op, Tensor, ValueDef};
use std::collections::HashMap;
use std::sync::OnceLock;

/// What a node keeps between runs.
pub(crate) enum Prepared {
    /// A convolution's weights as GEMM A panels, one per group.
    ConvWeights(Vec<Panels>),
    /// The constant B operand of a matrix product.
    MatB(Panels),
    /// An LSTM's or GRU's weights, one entry per direction.
    Rnn(Vec<crate::ops::rnn::RnnWeights>),
}

/// One node's cache entry, filled by its kernel on first use.
pub(crate) type Slot = OnceLock<Prepared>;

/// Which inputs of `op` a kernel may prepare (all of them must be constants of the
/// graph); empty for ops that keep nothing.
pub(crate) fn prepared_inputs(op: &Op) -> &'static [usize] {
    match op {
        Op::Conv(_) | Op::MatMul | Op::Gemm { .. } => &[1],
        Op::Lstm(_) | Op::Gru(_) => &[1, 2],
        _ => &[],
    }
}

/// A loaded graph ready to run many times: the constant weights of its Conv, MatMul,
/// Gemm, LSTM and GRU nodes are packed for the GEMM on the first run and reused afterwards. The
/// results are those of [`crate::run`] (which is a one-run session).
pub struct Session<'g> {
    g: &'g Graph,
    slots: Vec<Slot>,
}

impl<'g> Session<'g> {
    pub fn new(g: &'g Graph) -> Session<'g> {
        Session {
            g,
            slots: g.nodes.iter().map(|_| OnceLock::new()).collect(),
        }
    }

    /// The graph this session runs.
    pub fn graph(&self) -> &'g Graph {
        self.g
    }

    /// As [`crate::run`].
    pub fn run(&self, inputs: &HashMap<String, Tensor>) -> Result<Vec<Tensor>, InterpError> {
        crate::exec::run_with(
            self.g,
            &self.slots,
            inputs,
            &mut |_, _| None,
            &mut |_, _| {},
            true,
        )
    }

    /// As [`crate::run_observed`].
    pub fn run_observed(
        &self,
        inputs: &HashMap<String, Tensor>,
        observe: &mut dyn FnMut(NodeId, &[Tensor]),
    ) -> Result<Vec<Tensor>, InterpError> {
        self.run_substituted(inputs, &mut |_, _| None, observe)
    }

    /// As [`crate::run_substituted`].
    pub fn run_substituted(
        &self,
        inputs: &HashMap<String, Tensor>,
        substitute: &mut crate::Substitute<'_>,
        observe: &mut dyn FnMut(NodeId, &[Tensor]),
    ) -> Result<Vec<Tensor>, InterpError> {
        crate::exec::run_with(self.g, &self.slots, inputs, substitute, observe, false)
    }
}

/// The cache slot a node's kernel may use: present when the node's preparable inputs
/// are constants with data (so they cannot change between runs).
pub(crate) fn slot_for<'s>(g: &Graph, ni: usize, slots: &'s [Slot]) -> Option<&'s Slot> {
    let node = &g.nodes[ni];
    let ins = prepared_inputs(&node.op);
    let constant = |&i: &usize| {
        let v = node.inputs.get(i).copied().flatten();
        v.is_some_and(|v| matches!(g.value(v).def, ValueDef::Const(Some(_))))
    };
    (!ins.is_empty() && ins.iter().all(constant)).then(|| &slots[ni])
}
