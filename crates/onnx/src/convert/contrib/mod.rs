//! onnxruntime's contrib ops that its transformer optimizer and its weight-only quantizer
//! write, decomposed into existing IR ops so that every engine runs them (their semantics
//! are onnxruntime's CPU kernels'; tests/data/ort-contrib holds onnxruntime's outputs):
//! SkipLayerNormalization and SkipSimplifiedLayerNormalization (residual add + LayerNorm /
//! RMSNorm, optionally returning the sum), SimplifiedLayerNormalization (RMSNorm, registered
//! by onnxruntime in the default domain), FastGelu, BiasGelu, QuickGelu, MatMulNBits
//! (2/4/8-bit block-quantized weights, dequantized to a float constant at import), and
//! BERT's EmbedLayerNormalization and Attention, and onnxruntime-genai's
//! GroupQueryAttention (KV cache, grouped heads, rotary) and RotaryEmbedding.

mod attention;
mod embed;
mod genai;
mod heads;
mod integer;
mod nbits;
mod norm;

use super::{Converter, MS};
use attention::{attention, multi_head_attention, qattention};
use embed::{embed_layer_norm, qembed_layer_norm};
use genai::{group_query_attention, rotary_embedding};
use integer::{dynamic_quantize_matmul, fused_matmul, matmul_integer_to_float};
use nbits::matmul_nbits;
use norm::{
    bias_gelu, fast_gelu, quick_gelu, simplified_layer_norm, skip_layer_norm,
    skip_simplified_layer_norm,
};
use std::collections::BTreeMap;

pub(super) fn register(r: &mut BTreeMap<(&'static str, &'static str), Converter>) {
    r.insert((MS, "SkipLayerNormalization"), skip_layer_norm);
    r.insert(
        (MS, "SkipSimplifiedLayerNormalization"),
        skip_simplified_layer_norm,
    );
    r.insert(("", "SimplifiedLayerNormalization"), simplified_layer_norm);
    r.insert((MS, "FastGelu"), fast_gelu);
    r.insert((MS, "BiasGelu"), bias_gelu);
    r.insert((MS, "QuickGelu"), quick_gelu);
    r.insert((MS, "MatMulNBits"), matmul_nbits);
    r.insert((MS, "EmbedLayerNormalization"), embed_layer_norm);
    r.insert((MS, "Attention"), attention);
    r.insert((MS, "QAttention"), qattention);
    r.insert((MS, "MatMulIntegerToFloat"), matmul_integer_to_float);
    r.insert((MS, "QEmbedLayerNormalization"), qembed_layer_norm);
    r.insert((MS, "DynamicQuantizeMatMul"), dynamic_quantize_matmul);
    r.insert((MS, "FusedMatMul"), fused_matmul);
    r.insert((MS, "MultiHeadAttention"), multi_head_attention);
    r.insert((MS, "GroupQueryAttention"), group_query_attention);
    r.insert((MS, "RotaryEmbedding"), rotary_embedding);
}
