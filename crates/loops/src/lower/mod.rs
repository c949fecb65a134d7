//! Lowering from the graph IR to loop nests, decomposed the way Torch-MLIR lowers ATen
//! to linalg (DecomposeComplexOps + TorchToLinalg) with no elementwise fusion, so each
//! linalg op is one nest: a reduction is fill + generic, an elementwise op is one
//! generic with broadcasting folded into its indexing maps, a matmul is fill + matmul.
//! See docs/loops.md for the per-op rules and nest counts.

mod builder;
mod elementwise;
// ONNX node-suite coverage (issue #16 item 4).
mod ext;
mod linalg;
mod norm;
mod qcommon;
mod qops;
mod qpool;
mod quant;
mod reduce;
mod rnn;
mod shape;
mod upsample;

pub(crate) use builder::{Lowerer, NB};

use crate::error::Result;
use crate::ir::Program;
use pimkit_ir::{DType, Graph, Op};

/// Lower a graph to a tensor-level loop program (not yet bufferized).
pub(crate) fn lower_graph(g: &Graph) -> Result<Program> {
    check_dtypes(g)?;
    let mut l = Lowerer::new(g);
    let fused = elementwise::find_rsqrt_pairs(g);
    for (ni, node) in g.nodes.iter().enumerate() {
        l.begin_node(ni);
        let outs = if fused.skip.contains(&ni) {
            // A Sqrt folded into the following Reciprocal (aten.rsqrt): no nest here.
            Vec::new()
        } else if let Some(&src) = fused.rsqrt.get(&ni) {
            vec![elementwise::lower_rsqrt(&mut l, src)?]
        } else {
            lower_node(&mut l, node)?
        };
        if !fused.skip.contains(&ni) {
            l.bind_outputs(node, outs)?;
        }
    }
    l.finish()
}

/// The generated C computes floats in f32 (f16 stored as `_Float16`) and integers up
/// to 64 bits; f64, bf16, the float8/float4 formats and 4-/2-bit integers are not
/// lowered.
fn check_dtypes(g: &Graph) -> Result<()> {
    for n in &g.nodes {
        for v in n.inputs.iter().flatten().chain(&n.outputs) {
            let dt = g.ty(*v).dtype;
            if matches!(dt, DType::F64 | DType::Bf16) || dt.is_minifloat() || dt.is_subbyte_int() {
                return Err(crate::error::LoopsError::Unsupported {
                    node: n.name.clone(),
                    op: n.op.name().into(),
                    msg: format!(
                        "value '{}' is {dt}; loop nests compute f32/f16 and integers (cast the model to f32)",
                        g.value(*v).name
                    ),
                });
            }
        }
    }
    Ok(())
}

fn lower_node(l: &mut Lowerer, node: &pimkit_ir::Node) -> Result<Vec<usize>> {
    use Op::*;
    let one = |t: usize| Ok(vec![t]);
    match &node.op {
        Unary(u) => one(elementwise::unary(l, node, *u)?),
        Binary(b) => one(elementwise::binary(l, node, *b)?),
        Where => one(elementwise::where_(l, node)?),
        Clip { min, max } => one(elementwise::clip(l, node, *min, *max)?),
        Cast { to, .. } => one(elementwise::cast(l, node, *to)?),
        Identity => one(shape::identity(l, node)?),
        Reshape { shape } => one(shape::reshape(l, node, Some(shape))?),
        Transpose { perm } => one(shape::transpose(l, node, perm)?),
        Concat { axis } => one(shape::concat(l, node, *axis)?),
        Split { axis, sizes } => shape::split(l, node, *axis, sizes),
        Slice { axes } => one(shape::slice(l, node, axes)?),
        Gather { axis } => one(shape::gather(l, node, *axis)?),
        Expand { .. } => one(shape::expand(l, node)?),
        Pad { pads, mode, value } => one(shape::pad_node(l, node, pads, *mode, *value)?),
        Tile { repeats } => one(shape::tile(l, node, repeats)?),
        // Control flow reaches the lowering only when it could not be flattened
        // (pimkit_ir::flatten_control_flow unrolls static Loops/Scans and folds Ifs).
        If { .. } | Loop { .. } | Scan { .. } => Err(l.unsupported(
            "control flow that depends on run-time values; bind the inputs it depends on (--bind NAME=VALUE)",
        )),
        // Its operands are always constants, so the importer folds it.
        Range { .. } => Err(l.unsupported(
            "Range with operands computed at run time (the importer folds constant ones)",
        )),
        Reduce {
            kind,
            axes,
            keepdims,
        } => one(reduce::reduce_node(l, node, *kind, axes, *keepdims)?),
        ArgMax {
            axis,
            keepdims,
            select_last,
        } => one(reduce::argmax(l, node, *axis, *keepdims, *select_last)?),
        Softmax { axis } => one(norm::softmax(l, node, *axis, false)?),
        LogSoftmax { axis } => one(norm::softmax(l, node, *axis, true)?),
        LayerNorm { axis, epsilon } => one(norm::layer_norm(l, node, *axis, *epsilon)?),
        BatchNorm { epsilon } => one(norm::batch_norm(l, node, *epsilon)?),
        GlobalPool(kind) => one(reduce::global_pool(l, node, *kind)?),
        MatMul => one(linalg::matmul(l, node)?),
        Gemm {
            alpha,
            beta,
            trans_a,
            trans_b,
        } => one(linalg::gemm(l, node, *alpha, *beta, *trans_a, *trans_b)?),
        Conv(a) => one(linalg::conv(l, node, a)?),
        ConvTranspose(a) => one(upsample::conv_transpose(l, node, a)?),
        PRelu => one(upsample::prelu(l, node)?),
        Resize(a) => one(upsample::resize(l, node, a)?),
        Pool(p) => one(linalg::pool(l, node, p)?),
        QuantizeLinear { axis, to } => one(quant::quantize(l, node, *axis, *to)?),
        DequantizeLinear { axis } => one(quant::dequantize(l, node, *axis)?),
        QLinearMatMul => one(quant::qlinear_matmul(l, node)?),
        QLinearConv(a) => one(quant::qlinear_conv(l, node, a)?),
        MatMulInteger => one(quant::matmul_integer(l, node)?),
        ConvInteger(a) => one(quant::conv_integer(l, node, a)?),
        QLinearAdd => one(qops::qlinear_binary(l, node, false)?),
        QLinearMul => one(qops::qlinear_binary(l, node, true)?),
        QLinearConcat { axis } => one(qops::qlinear_concat(l, node, *axis)?),
        QLinearGlobalAveragePool { channels_last } => {
            one(qops::qlinear_gap(l, node, *channels_last)?)
        }
        QGemm {
            alpha,
            trans_a,
            trans_b,
        } => one(qops::qgemm(l, node, *alpha, *trans_a, *trans_b)?),
        QLinearSigmoid => one(qops::qlinear_unary(l, node, None)?),
        QLinearAveragePool(p) => one(qpool::qlinear_avg_pool(l, node, p)?),
        QLinearSoftmax { axis, flatten } => one(qpool::qlinear_softmax(l, node, *axis, *flatten)?),
        QLinearWhere => one(qpool::qlinear_where(l, node)?),
        QLinearLeakyRelu { alpha } => one(qops::qlinear_unary(l, node, Some(*alpha))?),
        Lstm(a) => rnn::lstm(l, node, a),
        Gru(a) => rnn::gru(l, node, a),
        // ---- ONNX node-suite coverage (issue #16 item 4) ----
        GatherElements { axis } => one(ext::gather_elements(l, node, *axis)?),
        GatherNd { batch_dims } => one(ext::gather_nd(l, node, *batch_dims)?),
        ArgMin {
            axis,
            keepdims,
            select_last,
        } => one(ext::argmin(l, node, *axis, *keepdims, *select_last)?),
        ScatterElements { .. } | ScatterNd { .. } => one(ext::scatter(l, node)?),
        TensorScatter { .. } => Err(l.unsupported(
            "TensorScatter (a KV-cache write at run-time positions per batch; not lowered yet)",
        )),
        Cumulative {
            axis,
            exclusive,
            reverse,
            prod,
        } => one(ext::cumulative(l, node, *axis, *exclusive, *reverse, *prod)?),
        TopK { .. } => Err(l.unsupported("TopK (sorting has no loop-nest lowering)")),
        BitCast { .. } => Err(l.unsupported("BitCast (a reinterpretation of bytes, not a loop nest)")),
        Einsum { .. } => Err(l.unsupported(
            "Einsum (export the model with its einsum as MatMul/Transpose, as torch.onnx does for matmuls)",
        )),
        MaxUnpool { .. } | ReverseSequence { .. } => Err(l.unsupported(
            "MaxUnpool/ReverseSequence (data-dependent positions; no loop-nest lowering)",
        )),
        Det => Err(l.unsupported("Det (a pivoting LU factorization, not a static loop nest)")),
        Dft { .. } | Stft { .. } => Err(l.unsupported(
            "DFT/STFT (no loop-nest lowering; a constant DFT matrix with MatMul computes the same)",
        )),
        Col2Im(_) | GridSample { .. } | RoiAlign(_) | DeformConv { .. } => Err(l.unsupported(
            "sampling op with data-dependent positions (GridSample, RoiAlign, DeformConv, Col2Im): no loop-nest lowering",
        )),
        Rnn(_) => Err(l.unsupported("plain RNN (LSTM and GRU are lowered; RNN is not yet)")),
        DynamicQuantizeLinear => Err(l.unsupported(
            "DynamicQuantizeLinear (its scale depends on a run-time min/max)",
        )),
        NonZero { .. } | Unique { .. } | NonMaxSuppression { .. } => Err(l.unsupported(
            "an op whose output size depends on its data (the importer folds constant ones)",
        )),
        Compress { .. } => Err(l.unsupported("Compress (a data-dependent selection)")),
        MaxPoolIndices { .. } => Err(l.unsupported(
            "MaxPool's Indices output (argmax positions; the values lower as MaxPool)",
        )),
        TfIdfVectorizer(_) => Err(l.unsupported(
            "TfIdfVectorizer (n-gram matching against a pool; no loop-nest lowering)",
        )),
    }
}
