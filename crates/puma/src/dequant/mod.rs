//! Quantized models (onnxruntime QOperator and QDQ) as their float equivalents.
//!
//! PUMA computes in its own 16-bit fixed point; the paper has no int8 path (it runs
//! float-trained models in Q4.12). A quantized model therefore runs as the float model
//! its quantization approximates: every quantized tensor is replaced by its real value
//! `(q - zero_point) · scale`, which is what the float ops compute on:
//! * QLinearConv → Conv with W = DequantizeLinear(w) (per output channel) and
//!   B = b · x_scale · w_scale; QLinearMatMul → MatMul; QGemm → Gemm (C scaled by
//!   alpha · a_scale · b_scale); QLinearAdd/Mul/Concat/GlobalAveragePool/AveragePool/
//!   Sigmoid/LeakyRelu/Softmax/Where → their float ops;
//! * QuantizeLinear and DequantizeLinear of an activation → the value itself (no node);
//!   DequantizeLinear of a constant → a float constant (QDQ weights fold the same way);
//! * data movement and max pooling on quantized tensors (Reshape, Transpose, Slice,
//!   MaxPool, ...) commute with the affine map and run unchanged on the real values;
//! * any other node reading a quantized tensor (MatMulInteger, ConvInteger, an integer
//!   Pad, ...) gets the tensor re-quantized and stays as it is: it runs on the host.
//!
//! Constants are computed by the reference interpreter's own kernels (DequantizeLinear,
//! Mul and any node whose inputs are all constants), so this module adds no op
//! semantics beyond choosing the dequantization's scale. Nodes whose inputs are all
//! constants are folded in every graph (a per-layer "layer" of them is nothing to run).

mod builder;
mod ops;

use pimkit_ir::{Graph, Op, Tensor};
use std::collections::HashMap;

/// The float equivalent of a graph.
pub struct FloatGraph {
    pub graph: Graph,
    /// Quantized nodes replaced by float ops (or folded, or dropped as identities).
    pub converted: usize,
    /// Nodes whose inputs were all constants, now constants.
    pub folded: usize,
    /// Quantized nodes kept as they are (they run on the host), by name.
    pub kept: Vec<String>,
}

impl FloatGraph {
    /// Whether the original graph had quantized nodes.
    pub fn quantized(&self) -> bool {
        self.converted + self.kept.len() > 0
    }

    /// The note of a run of a quantized model; `diff`: [`quantized_difference`].
    pub fn note(&self, diff: Option<f64>) -> String {
        let kept = if self.kept.is_empty() {
            String::new()
        } else {
            format!(
                "; {} kept as integer ops on the host: {}",
                self.kept.len(),
                self.kept.join(", ")
            )
        };
        let diff = match diff {
            Some(d) => format!(
                "; the float equivalent's outputs differ from the quantized model's by up to {d:.4} (max |difference|, reference interpreter)"
            ),
            None => String::new(),
        };
        format!(
            "quantized model run as its float equivalent (PUMA computes in its own 16-bit fixed point; the paper has no int8 path, docs/puma.md \"Quantized models\"): {} quantized node(s) became float ops on dequantized weights{kept}; errors are against the float equivalent{diff}",
            self.converted
        )
    }
}

/// Largest |difference| between `outs` (outputs of the float equivalent of `g`, in
/// `g`'s output order) and the quantized model's own float outputs (reference
/// interpreter on `inputs`); `None` when no output of `g` is float.
pub fn quantized_difference(
    g: &Graph,
    inputs: &HashMap<String, Tensor>,
    outs: &[Tensor],
) -> Result<Option<f64>, String> {
    // The model's own arithmetic: exact integer sums (docs/interpreter.md, `avx2`).
    let r = pimkit_interp::with_exact_products(|| pimkit_interp::run(g, inputs))
        .map_err(|e| e.to_string())?;
    let (a, b): (Vec<Tensor>, Vec<Tensor>) = g
        .outputs
        .iter()
        .zip(outs.iter().zip(r))
        .filter(|(o, _)| g.ty(**o).dtype.is_float())
        .map(|(_, (a, b))| (a.clone(), b))
        .unzip();
    Ok((!a.is_empty()).then(|| crate::outcome::compare(&a, &b)))
}

/// Quantization ops (their operands or results are quantized integers).
pub fn is_quantized_op(op: &Op) -> bool {
    matches!(
        op,
        Op::QuantizeLinear { .. }
            | Op::DequantizeLinear { .. }
            | Op::DynamicQuantizeLinear
            | Op::QLinearMatMul
            | Op::QLinearConv(_)
            | Op::MatMulInteger
            | Op::ConvInteger(_)
            | Op::QLinearAdd
            | Op::QLinearMul
            | Op::QLinearConcat { .. }
            | Op::QLinearGlobalAveragePool { .. }
            | Op::QGemm { .. }
            | Op::QLinearSigmoid
            | Op::QLinearLeakyRelu { .. }
            | Op::QLinearAveragePool(_)
            | Op::QLinearSoftmax { .. }
            | Op::QLinearWhere
    )
}

/// Whether `g` has quantized nodes (then [`float_equivalent`] is what PUMA runs).
pub fn has_quantized(g: &Graph) -> bool {
    g.nodes.iter().any(|n| is_quantized_op(&n.op))
}

/// The float equivalent of `g` (see the module doc); `None` when nothing changes (no
/// quantized node and no node to fold).
pub fn float_equivalent(g: &Graph) -> Result<Option<FloatGraph>, String> {
    // Checked first: rebuilding copies every weight (half a gigabyte for VGG16).
    let foldable = |n: &pimkit_ir::Node| {
        n.inputs.iter().any(Option::is_some)
            && n.inputs
                .iter()
                .flatten()
                .all(|&v| g.const_data(v).is_some())
    };
    if !g
        .nodes
        .iter()
        .any(|n| is_quantized_op(&n.op) || foldable(n))
    {
        return Ok(None);
    }
    builder::build(g)
}
