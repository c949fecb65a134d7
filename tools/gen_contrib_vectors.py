#!/usr/bin/env python3
"""onnxruntime's contrib ops as its tools write them, and onnxruntime's outputs ->
tests/data/ort-contrib/<case>/ (manifest.toml; crates/conformance/tests/ort_contrib.rs).

- The fused ops of onnxruntime.transformers' optimizer: SkipLayerNormalization (with and
  without beta/bias, the residual sum as output 3), SkipSimplifiedLayerNormalization,
  SimplifiedLayerNormalization (default domain, as onnxruntime registers it), FastGelu
  (with and without bias), BiasGelu, QuickGelu; single nodes with onnxruntime's schema
  defaults, in f32 (and one f16 SimplifiedLayerNormalization).
- A BERT as onnxruntime.transformers.optimizer writes it (EmbedLayerNormalization,
  Attention, SkipLayerNormalization, BiasGelu); quantize_dynamic of the plain export and of
  the optimized one (QAttention, QEmbedLayerNormalization); onnxruntime's own optimized
  dump of the former (DynamicQuantizeMatMul, MatMulIntegerToFloat, FusedMatMul).
- GroupQueryAttention (prefill, decode with a cache, rotary halves/interleaved, packed
  QKV) and RotaryEmbedding as onnxruntime-genai's model builder writes them;
  MultiHeadAttention (cross attention with bias and padding mask, causal with a bias).
- MatMulNBits as onnxruntime.quantization.matmul_nbits_quantizer writes it: a float MLP
  (MatMul + bias Add, Gelu, MatMul) quantized to 4 bits in blocks of 32 (asymmetric: packed
  uint8 zero points; symmetric: none), 8 bits in blocks of 16, and K not a multiple of the
  block (the last block padded).

- float16 conversions (onnxconverter-common, keep_io_types) of four float models.

Usage: python3 tools/gen_contrib_vectors.py   (needs onnx, onnxruntime, onnx_ir, torch,
transformers, onnxconverter-common)
"""

import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

from _common import DATA, finalize_outputs, make_model, reset_dir, run_ort, save_case, write_manifest

SUITE = os.path.join(DATA, "ort-contrib")
RNG = np.random.default_rng(7)
ENTRIES = []


def f32(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def case(name, desc, model, feeds, outputs, check=True):
    outs = run_ort(model, feeds)
    if check:
        finalize_outputs(model, outs)
    else:  # onnx's checker has no schema for onnxruntime's default-domain extras
        for vi_, a in zip(model.graph.output, outs):
            vi_.type.tensor_type.shape.Clear()
            for d in a.shape:
                vi_.type.tensor_type.shape.dim.add().dim_value = d
    save_case(SUITE, name, model, list(feeds.values()), outs)
    ops = sorted({(f"{n.domain}." if n.domain else "") + n.op_type for n in model.graph.node})
    ENTRIES.append({"name": name, "status": "pass", "desc": desc, "ops": ops})


def single(name, desc, op, inputs, inits, outputs, **attrs):
    """One contrib node: `inputs` graph inputs {name: array}, `inits` initializers; input
    names in node order, "" for an absent optional one."""
    order = attrs.pop("order")
    domain = attrs.pop("domain", "com.microsoft")
    node = helper.make_node(op, order, [o for o, _ in outputs], domain=domain, **attrs)
    outs = [(o, d) for o, d in outputs if o]
    m = make_model([node], inputs, inits, outs, ms=True)
    case(name, desc, m, inputs, outs, check=domain != "")


def fused_ops():
    x, skip = f32(2, 5, 16), f32(2, 5, 16)
    gamma, beta, bias = f32(16, scale=0.5) + 1, f32(16, scale=0.1), f32(16, scale=0.1)
    f = np.float32
    single("skip_layer_norm", "SkipLayerNormalization: input + skip + bias, LayerNorm with gamma/beta; output and the residual sum",
           "SkipLayerNormalization", {"x": x, "skip": skip}, {"gamma": gamma, "beta": beta, "bias": bias},
           [("y", f), ("", f), ("", f), ("sum", f)], order=["x", "skip", "gamma", "beta", "bias"], epsilon=1e-5)
    single("skip_layer_norm_plain", "SkipLayerNormalization without beta and bias, default epsilon",
           "SkipLayerNormalization", {"x": x, "skip": skip}, {"gamma": gamma},
           [("y", f)], order=["x", "skip", "gamma"])
    single("skip_simplified_layer_norm", "SkipSimplifiedLayerNormalization: RMSNorm(input + skip + bias) x gamma; output and the sum",
           "SkipSimplifiedLayerNormalization", {"x": x, "skip": skip}, {"gamma": gamma, "bias": bias},
           [("y", f), ("", f), ("", f), ("sum", f)], order=["x", "skip", "gamma", "bias"], epsilon=1e-6)
    single("simplified_layer_norm", "SimplifiedLayerNormalization (default domain): RMSNorm over the last axis",
           "SimplifiedLayerNormalization", {"x": x}, {"scale": gamma}, [("y", f)],
           order=["x", "scale"], domain="", epsilon=1e-6)
    h = np.float16
    single("simplified_layer_norm_f16", "SimplifiedLayerNormalization in float16 (stash_type 1: computed in float)",
           "SimplifiedLayerNormalization", {"x": x.astype(h)}, {"scale": gamma.astype(h)}, [("y", h)],
           order=["x", "scale"], domain="", epsilon=1e-6)
    big = f32(3, 7, 24, scale=2.0)
    b24 = f32(24, scale=0.5)
    single("fast_gelu_bias", "FastGelu (tanh approximation) of x + bias", "FastGelu",
           {"x": big}, {"bias": b24}, [("y", f)], order=["x", "bias"])
    single("fast_gelu", "FastGelu without bias", "FastGelu", {"x": big}, {}, [("y", f)], order=["x"])
    single("bias_gelu", "BiasGelu: erf GELU of A + B", "BiasGelu", {"a": big}, {"b": b24}, [("y", f)],
           order=["a", "b"])
    single("quick_gelu", "QuickGelu: x sigmoid(1.702 x)", "QuickGelu", {"x": big}, {}, [("y", f)], order=["x"])
    single("quick_gelu_alpha", "QuickGelu with alpha 1.0 (SiLU)", "QuickGelu", {"x": big}, {}, [("y", f)],
           order=["x"], alpha=1.0)


def mlp(k, hidden, n_out):
    """A float MLP as torch.onnx.export writes one: MatMul + bias Add, Gelu, MatMul."""
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"]),
        helper.make_node("Add", ["h0", "b1"], ["h1"]),
        helper.make_node("Gelu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w2"], ["y"]),
    ]
    inits = {"w1": f32(k, hidden, scale=k ** -0.5), "b1": f32(hidden, scale=0.1),
             "w2": f32(hidden, n_out, scale=hidden ** -0.5)}
    x = f32(2, 3, k)
    return make_model(nodes, {"x": x}, inits, [("y", np.float32)], opset=20), {"x": x}


def nbits():
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    for name, k, bits, block, sym in [
        ("matmul_nbits_4bit", 64, 4, 32, False),
        ("matmul_nbits_4bit_sym", 64, 4, 32, True),
        ("matmul_nbits_8bit", 64, 8, 16, False),
        ("matmul_nbits_4bit_ragged", 40, 4, 32, False),
    ]:
        m, feeds = mlp(k, 48, 24)
        q = MatMulNBitsQuantizer(m, bits=bits, block_size=block, is_symmetric=sym)
        q.process()
        qm = q.model.model
        assert any(n.op_type == "MatMulNBits" for n in qm.graph.node), name
        kind = "symmetric, no zero points" if sym else "asymmetric, packed uint8 zero points"
        case(name, f"MatMulNBitsQuantizer(bits={bits}, block_size={block}, {kind}) of a float MLP, K = {k}",
             qm, feeds, [])


def bert():
    """A 2-layer BERT (random weights, transformers' eager attention) exported by
    torch.onnx.export, then onnxruntime.transformers.optimizer.optimize_model(model_type
    "bert"): EmbedLayerNormalization, Attention with a 1-D mask index (the second
    sequence padded), SkipLayerNormalization, BiasGelu."""
    import tempfile

    import torch
    import transformers
    from onnxruntime.transformers.optimizer import optimize_model

    torch.manual_seed(3)
    cfg = transformers.BertConfig(vocab_size=100, hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=4, intermediate_size=64,
                                  max_position_embeddings=64, attn_implementation="eager")
    m = transformers.BertModel(cfg).eval()

    class Wrap(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, i, a, t):
            return self.m(input_ids=i, attention_mask=a, token_type_ids=t, return_dict=False)

    ids = torch.randint(0, 100, (2, 7))
    mask = torch.ones(2, 7, dtype=torch.int64)
    mask[1, 5:] = 0
    types = torch.zeros(2, 7, dtype=torch.int64)
    types[:, 4:] = 1
    feeds = {"input_ids": ids.numpy(), "attention_mask": mask.numpy(), "token_type_ids": types.numpy()}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bert.onnx")
        torch.onnx.export(Wrap(m), (ids, mask, types), path, opset_version=17, dynamo=False,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state", "pooler_output"],
                          dynamic_axes={k: {0: "batch", 1: "sequence"} for k in feeds})
        opt = optimize_model(path, model_type="bert", num_heads=4, hidden_size=32)
        model = opt.model
    fused = {n.op_type for n in model.graph.node}
    assert {"Attention", "EmbedLayerNormalization"} <= fused, fused
    case("bert_optimized", "onnxruntime.transformers.optimizer output of a 2-layer BERT (EmbedLayerNormalization, Attention, SkipLayerNormalization, BiasGelu), one sequence padded",
         model, feeds, [])
    # quantize_dynamic (int8 weights, activations quantized at run time) of the plain export
    # and of the optimizer's output (QAttention, QEmbedLayerNormalization).
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with tempfile.TemporaryDirectory() as tmp:
        plain = os.path.join(tmp, "plain.onnx")
        torch.onnx.export(Wrap(m), (ids, mask, types), plain, opset_version=17, dynamo=False,
                          input_names=["input_ids", "attention_mask", "token_type_ids"],
                          output_names=["last_hidden_state", "pooler_output"])
        for name, src, desc in [
            ("bert_qdynamic", plain, "quantize_dynamic (QInt8 weights) of a 2-layer BERT export: DynamicQuantizeLinear, MatMulInteger"),
            ("bert_optimized_qdynamic", None, "quantize_dynamic of the optimizer's BERT: QAttention, QEmbedLayerNormalization, DynamicQuantizeLinear, MatMulInteger"),
        ]:
            if src is None:
                src = os.path.join(tmp, "opt.onnx")
                onnx.save(model, src)
            dst = os.path.join(tmp, name + ".onnx")
            quantize_dynamic(src, dst, weight_type=QuantType.QInt8,
                             extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
            case(name, desc, onnx.load(dst), feeds, [])
            if name == "bert_qdynamic":
                # What onnxruntime's own graph optimizer writes for it (optimized_model_filepath):
                # DynamicQuantizeMatMul, MatMulIntegerToFloat, FusedMatMul.
                so = ort.SessionOptions()
                so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
                so.optimized_model_filepath = os.path.join(tmp, "ortopt.onnx")
                ort.InferenceSession(dst, so, providers=["CPUExecutionProvider"])
                case("bert_qdynamic_ort_optimized", "onnxruntime's optimized_model_filepath dump of bert_qdynamic: DynamicQuantizeMatMul, MatMulIntegerToFloat, FusedMatMul",
                     onnx.load(so.optimized_model_filepath), feeds, [])


def rope_caches(positions, half):
    inv = 1.0 / (10000 ** (np.arange(half) / half))
    ang = np.arange(positions)[:, None] * inv[None, :]
    return np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)


def genai_ops():
    """GroupQueryAttention and RotaryEmbedding as onnxruntime-genai's builder writes them:
    prefill without a cache, decode steps with one (past + new = total), rotary inside
    (halves or interleaved pairs), packed QKV; 4 query heads over 2 key/value heads."""
    f = np.float32
    nq, nkv, hd = 4, 2, 16  # onnxruntime: head size a multiple of 16
    cos, sin = rope_caches(32, hd // 2)
    i32 = lambda *v: np.array(v, np.int32)
    outs = [("y", f), ("present_key", f), ("present_value", f)]
    # onnxruntime needs batch 1 when several new tokens follow a cache.
    for name, desc, b, s, past, rot, inter, packed in [
        ("gqa_prefill", "GroupQueryAttention prefill (no cache), rotary", 2, 5, 0, 1, 0, False),
        ("gqa_decode", "GroupQueryAttention decode step: past 6 + 1 new, rotary", 2, 1, 6, 1, 0, False),
        ("gqa_decode_interleaved", "GroupQueryAttention, interleaved rotary, 3 new tokens after 4", 1, 3, 4, 1, 1, False),
        ("gqa_packed_norotary", "GroupQueryAttention with packed QKV, no rotary, past 5 + 2 new", 1, 2, 5, 0, 0, True),
    ]:
        inputs = {}
        if packed:
            inputs["query"] = f32(b, s, (nq + 2 * nkv) * hd)
            order = ["query", "", ""]
        else:
            inputs.update(query=f32(b, s, nq * hd), key=f32(b, s, nkv * hd), value=f32(b, s, nkv * hd))
            order = ["query", "key", "value"]
        if past:
            inputs.update(past_key=f32(b, nkv, past, hd), past_value=f32(b, nkv, past, hd))
            order += ["past_key", "past_value"]
        else:
            order += ["", ""]
        inputs["seqlens_k"] = i32(*[past + s - 1] * b)
        inputs["total_sequence_length"] = np.array(past + s, np.int32)
        order += ["seqlens_k", "total_sequence_length"]
        inits = {}
        if rot:
            inits = {"cos_cache": cos, "sin_cache": sin}
            order += ["cos_cache", "sin_cache"]
        single(name, desc, "GroupQueryAttention", inputs, inits, outs, order=order,
               num_heads=nq, kv_num_heads=nkv, do_rotary=rot, rotary_interleaved=inter)
    for name, inter in [("rotary_embedding", 0), ("rotary_embedding_interleaved", 1)]:
        pos = np.array([[3, 4, 5, 6, 7], [0, 1, 2, 3, 4]], np.int64)
        single(name, f"RotaryEmbedding of [2, 5, 64] with 4 heads, per-token position ids, interleaved {inter}",
               "RotaryEmbedding", {"x": f32(2, 5, 64), "position_ids": pos},
               {"cos_cache": cos, "sin_cache": sin}, [("y", f)],
               order=["x", "position_ids", "cos_cache", "sin_cache"], num_heads=4, interleaved=inter)

    # MultiHeadAttention (the optimizer's form for encoder-decoder and diffusion models):
    # cross attention with bias and a key padding mask, causal self attention with an
    # attention bias.
    q, k, v = f32(2, 3, 32), f32(2, 6, 32), f32(2, 6, 48)
    single("mha_cross_bias_mask", "MultiHeadAttention: cross attention (3 queries, 6 keys), bias, [B, L] key padding mask, value width 48",
           "MultiHeadAttention", {"query": q, "key": k, "value": v, "key_padding_mask": np.array([[1] * 6, [1] * 4 + [0] * 2], np.int32)},
           {"bias": f32(32 + 32 + 48, scale=0.1)}, [("y", f)],
           order=["query", "key", "value", "bias", "key_padding_mask"], num_heads=4)
    qs = f32(2, 5, 32)
    single("mha_causal_attn_bias", "MultiHeadAttention: causal self attention with an attention bias [1, 4, 5, 5] and key lengths [B]",
           "MultiHeadAttention", {"query": qs, "key": f32(2, 5, 32), "value": f32(2, 5, 32), "key_padding_mask": i32(5, 3)},
           {"attention_bias": f32(1, 4, 5, 5, scale=0.5)}, [("y", f)],
           order=["query", "key", "value", "", "key_padding_mask", "attention_bias"], num_heads=4, unidirectional=1)


def float16_models():
    """float16 conversions (onnxconverter-common, keep_io_types=True: f32 in and out, f16
    inside, Casts at the edges) of four float models of tests/data/ort-models, against
    onnxruntime running the converted file. Tolerance: 2e-3 of each output's range
    (docs/testing.md: onnxruntime's CPU kernels accumulate f16 in f32, pimkit's too; what
    is left is f16 rounding of intermediate tensors, which the two order differently)."""
    from onnxconverter_common import float16

    for base in ["cnn_resblock", "mobilenet_v3_block", "squeezenet_fire", "lstm"]:
        d = os.path.join(DATA, "ort-models", base)
        m = onnx.load(os.path.join(d, "model.onnx"))
        m16 = float16.convert_float_to_float16(m, keep_io_types=True)
        feeds = {i.name: np.load(os.path.join(d, f"input_{k}.npy")) for k, i in enumerate(m.graph.input)}
        # onnxruntime's levels differ in f16 (its optimizer removes Cast pairs): the golden
        # output is its default session's (ORT_ENABLE_ALL).
        outs = run_ort(m16, feeds, levels=("all",))
        save_case(SUITE, f"f16_{base}", m16, list(feeds.values()), outs)
        rng = min(float(o.max() - o.min()) for o in outs) or 1.0
        ops = sorted({(f"{n.domain}." if n.domain else "") + n.op_type for n in m16.graph.node})
        ENTRIES.append({"name": f"f16_{base}", "status": "pass", "ops": ops, "atol": float(f"{2e-3 * rng:.3g}"),
                        "desc": f"onnxconverter-common float16 conversion (keep_io_types) of ort-models/{base}"})


def main():
    reset_dir(SUITE)
    fused_ops()
    nbits()
    bert()
    genai_ops()
    float16_models()
    write_manifest(
        SUITE,
        "# Generated by tools/gen_contrib_vectors.py (onnxruntime outputs); do not edit.\n"
        "# Float cases: the tolerance of docs/testing.md.\n",
        ENTRIES,
    )
    print(f"{len(ENTRIES)} cases in {SUITE}")


if __name__ == "__main__":
    main()
