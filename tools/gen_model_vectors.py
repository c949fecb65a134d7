#!/usr/bin/env python3
"""Small real models (built the way torch.onnx.export writes them) and their onnxruntime
outputs -> tests/data/ort-models/<case>/.

Float models: a conv-bn-relu CNN with a residual add, an MLP (also saved with external
data), a transformer block (LayerNorm, attention with the exporter's Shape/Gather/Unsqueeze/
Concat shape subgraphs, causal mask via Slice+Where, RMS norm, Erf GELU), LSTM and GRU
models, a SqueezeNet fire module, a MobileNetV3 block (HardSwish, HardSigmoid, SE) and a
decoder (PRelu, ConvTranspose, Resize nearest/bilinear/bicubic).

Quantized models: onnxruntime.quantization.quantize_static (QOperator, u8 activations,
s8 weights, per-channel and per-tensor, deterministic calibration data). Weights use
reduce_range (7-bit), because on CPUs without VNNI MLAS's u8 x s8 kernels saturate 16-bit
pair sums and full-range weights would make the golden outputs machine-dependent.
The same models (and `qops`, the other ops onnxruntime fuses) quantized in QDQ form,
quantize_static's default: their golden outputs are onnxruntime's default session's, which
runs each DequantizeLinear -> op -> QuantizeLinear group as the QOperator node (pimkit's
importer does the same, docs/onnx.md "QDQ models"), plus one with Relus put back in front
of the Qs. quantize_dynamic is not used: its models need DynamicQuantizeLinear, which pimkit lacks.

Usage: python3 tools/gen_model_vectors.py
"""

import json
import os
import sys
import tempfile
from collections import Counter

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process

from _common import DATA, known_fail, reset_dir, run_ort, save_case, write_manifest
from model_builder import Builder

SUITE = os.path.join(DATA, "ort-models")
INT64_MAX = np.iinfo(np.int64).max
CASES = []  # (name, desc, model path or proto, inputs, outputs, quantized)
# QDQ case -> the integer nodes onnxruntime's optimized graph has ({op: count}), written as
# ort_fused_ops.json: pimkit's importer must fuse exactly these (crates/onnx/tests/qdq.rs).
FUSED = {}


def i64(*v):
    return np.array(v, np.int64)


# ---------------------------------------------------------------- float models

def cnn():
    b = Builder(1)
    x = b.input("input", [1, 3, 16, 16])
    y = b.op("Relu", [b.bn("bn1", b.conv("conv1", x, 3, 8, 3, pad=1, bias=False), 8)])
    r = b.op("Relu", [b.bn("layer1.bn1", b.conv("layer1.conv1", y, 8, 8, 3, pad=1, bias=False), 8)])
    r = b.bn("layer1.bn2", b.conv("layer1.conv2", r, 8, 8, 3, pad=1, bias=False), 8)
    b.scope = "/layer1"
    y = b.op("Relu", [b.op("Add", [r, y])])
    y = b.op("MaxPool", [y], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0])
    y = b.op("Relu", [b.conv("layer2.conv", y, 8, 16, 3, stride=2, pad=1)])
    b.scope = ""
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])], axis=1)
    y = b.linear_gemm("fc", y, 16, 10)
    b.nodes[-1].output[0] = "output"
    b.output("output")
    return b.model("cnn_resblock"), [("input", (1, 3, 16, 16))]


def mlp():
    b = Builder(2)
    x = b.input("input", [4, 32])
    y = b.op("Relu", [b.linear_gemm("fc1", x, 32, 64)])
    y = b.op("Relu", [b.linear_gemm("fc2", y, 64, 48)])
    y = b.linear_gemm("fc3", y, 48, 10)
    b.scope = ""
    b.nodes.append(onnx.helper.make_node("Softmax", [y], ["output"], name="/Softmax", axis=1))
    b.output("output")
    return b.model("mlp"), [("input", (4, 32))]


def transformer():
    b = Builder(3)
    d, heads, hd, seq = 32, 4, 8, 8
    x = b.input("x", [1, seq, d])
    b.scope = "/ln_1"
    ln = b.op("LayerNormalization", [x, b.param("ln_1.weight", b.rng.uniform(0.5, 1.5, d)),
                                     b.param("ln_1.bias", b.rng.normal(0, 0.1, d))], axis=-1, epsilon=1e-5)
    qkv = b.linear_matmul("attn.c_attn", ln, d, 3 * d)
    b.scope = "/attn"
    q, k, v = b.op("Split", [qkv, b.const(i64(d, d, d))], n_out=3, axis=2)
    shp = b.op("Shape", [x])
    bsz = b.op("Gather", [shp, b.const(np.array(0, np.int64))], axis=0)
    sl = b.op("Gather", [shp, b.const(np.array(1, np.int64))], axis=0)
    bsz_u = b.op("Unsqueeze", [bsz, b.const(i64(0))])
    sl_u = b.op("Unsqueeze", [sl, b.const(i64(0))])
    hshape = b.op("Concat", [bsz_u, sl_u, b.const(i64(heads)), b.const(i64(hd))], axis=0)

    def split_heads(t):
        return b.op("Transpose", [b.op("Reshape", [t, hshape])], perm=[0, 2, 1, 3])

    qh, kh, vh = split_heads(q), split_heads(k), split_heads(v)
    scores = b.op("MatMul", [qh, b.op("Transpose", [kh], perm=[0, 1, 3, 2])])
    hdim = b.op("Gather", [b.op("Shape", [qh]), b.const(np.array(3, np.int64))], axis=0)
    scale = b.op("Sqrt", [b.op("Cast", [hdim], to=TensorProto.FLOAT)])
    scores = b.op("Div", [scores, scale])
    tril = np.tril(np.ones((16, 16), bool)).reshape(1, 1, 16, 16)
    bias = b.init("attn.bias", tril)
    ends = b.op("Concat", [sl_u, sl_u], axis=0)
    mask = b.op("Slice", [bias, b.const(i64(0, 0)), ends, b.const(i64(2, 3)), b.const(i64(1, 1))])
    scores = b.op("Where", [mask, scores, b.const(np.array(np.finfo(np.float32).min, np.float32))])
    att = b.op("Softmax", [scores], axis=-1)
    y = b.op("Transpose", [b.op("MatMul", [att, vh])], perm=[0, 2, 1, 3])
    y = b.op("Reshape", [y, b.op("Concat", [bsz_u, sl_u, b.const(i64(d))], axis=0)])
    y = b.linear_matmul("attn.c_proj", y, d, d)
    b.scope = ""
    h = b.op("Add", [x, y])
    b.scope = "/rms"
    ms = b.op("ReduceMean", [b.op("Pow", [h, b.const(np.array(2.0, np.float32))]), b.const(i64(-1))],
              keepdims=1)
    rms = b.op("Sqrt", [b.op("Add", [ms, b.const(np.array(1e-6, np.float32))])])
    n = b.op("Mul", [b.op("Div", [h, rms]), b.param("rms.weight", b.rng.uniform(0.5, 1.5, d))])
    f = b.linear_matmul("mlp.c_fc", n, d, 2 * d)
    b.scope = "/mlp/act"
    e = b.op("Erf", [b.op("Div", [f, b.const(np.array(1.4142135, np.float32))])])
    g = b.op("Mul", [b.op("Mul", [f, b.op("Add", [e, b.const(np.array(1.0, np.float32))])]),
                     b.const(np.array(0.5, np.float32))])
    f2 = b.linear_matmul("mlp.c_proj", g, 2 * d, d)
    b.scope = ""
    b.nodes.append(onnx.helper.make_node("Add", [h, f2], ["hidden"], name="/Add_1"))
    b.scope = "/last"
    b.nodes.append(onnx.helper.make_node(
        "Slice", ["hidden", b.const(i64(-1)), b.const(i64(INT64_MAX)), b.const(i64(1))], ["last"],
        name="/last/Slice"))
    b.output("hidden")
    b.output("last")
    return b.model("transformer_block", opset=18), [("x", (1, seq, d))]


def lstm():
    b = Builder(4)
    seq, batch, fin, hid = 5, 2, 16, 20
    x = b.input("input", [seq, batch, fin])
    b.scope = "/lstm"
    w = b.param("onnx::LSTM_W", b.uniform((1, 4 * hid, fin), hid))
    r = b.param("onnx::LSTM_R", b.uniform((1, 4 * hid, hid), hid))
    bb = b.param("onnx::LSTM_B", b.uniform((1, 8 * hid), hid))
    h0 = b.init("h0", np.zeros((1, batch, hid), np.float32))
    c0 = b.init("c0", np.zeros((1, batch, hid), np.float32))
    y, yh, yc = b.op("LSTM", [x, w, r, bb, "", h0, c0], n_out=3, hidden_size=hid)
    y = b.op("Squeeze", [y, b.const(i64(1))])
    # second layer: bidirectional
    b.scope = "/lstm2"
    w2 = b.param("onnx::LSTM_W2", b.uniform((2, 4 * hid, hid), hid))
    r2 = b.param("onnx::LSTM_R2", b.uniform((2, 4 * hid, hid), hid))
    b2 = b.param("onnx::LSTM_B2", b.uniform((2, 8 * hid), hid))
    y2, _, _ = b.op("LSTM", [y, w2, r2, b2], n_out=3, hidden_size=hid, direction="bidirectional")
    y2 = b.op("Transpose", [y2], perm=[0, 2, 1, 3])
    b.nodes.append(onnx.helper.make_node("Reshape", [y2, b.const(i64(seq, batch, 2 * hid))], ["seq_out"],
                                         name="/lstm2/Reshape"))
    b.scope = ""
    last = b.op("Squeeze", [yh, b.const(i64(0))])
    logits = b.linear_gemm("fc", last, hid, 10)
    b.nodes[-1].output[0] = "logits"
    b.output("seq_out")
    b.output("logits")
    return b.model("lstm"), [("input", (seq, batch, fin))]


def gru():
    b = Builder(5)
    batch, seq, fin, hid = 2, 6, 12, 16
    x = b.input("input", [batch, seq, fin])
    b.scope = "/gru"
    xt = b.op("Transpose", [x], perm=[1, 0, 2])
    w = b.param("onnx::GRU_W", b.uniform((1, 3 * hid, fin), hid))
    r = b.param("onnx::GRU_R", b.uniform((1, 3 * hid, hid), hid))
    bb = b.param("onnx::GRU_B", b.uniform((1, 6 * hid), hid))
    y, yh = b.op("GRU", [xt, w, r, bb], n_out=2, hidden_size=hid, linear_before_reset=1)
    y = b.op("Transpose", [b.op("Squeeze", [y, b.const(i64(1))])], perm=[1, 0, 2])
    y = b.linear_matmul("fc", y, hid, 8)
    b.nodes[-1].output[0] = "output"
    b.scope = "/gru"
    b.nodes.append(onnx.helper.make_node("Squeeze", [yh, b.const(i64(0))], ["h_n"], name="/gru/Squeeze_h"))
    b.output("output")
    b.output("h_n")
    return b.model("gru"), [("input", (batch, seq, fin))]


def fire():
    b = Builder(6)
    x = b.input("input", [1, 8, 12, 12])
    y = b.op("Relu", [b.conv("features.0", x, 8, 16, 3, stride=1, pad=1)])
    y = b.op("MaxPool", [y], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)
    s = b.op("Relu", [b.conv("features.1.squeeze", y, 16, 4, 1)])
    e1 = b.op("Relu", [b.conv("features.1.expand1x1", s, 4, 8, 1)])
    e3 = b.op("Relu", [b.conv("features.1.expand3x3", s, 4, 8, 3, pad=1)])
    b.scope = "/features/1"
    y = b.op("Concat", [e1, e3], axis=1)
    y = b.op("Relu", [b.conv("classifier.1", y, 16, 10, 1)])
    b.scope = "/classifier"
    y = b.op("AveragePool", [y], kernel_shape=[2, 2], strides=[2, 2])
    y = b.op("GlobalAveragePool", [y])
    b.scope = ""
    b.nodes.append(onnx.helper.make_node("Flatten", [y], ["output"], name="/Flatten", axis=1))
    b.output("output")
    return b.model("squeezenet_fire"), [("input", (1, 8, 12, 12))]


def mobilenet():
    b = Builder(7)
    x = b.input("input", [1, 8, 16, 16])

    def se(path, t, c, cr):
        b.scope = "/" + path.replace(".", "/")
        p = b.op("GlobalAveragePool", [t])
        p = b.op("Relu", [b.conv(f"{path}.fc1", p, c, cr, 1)])
        p = b.op("HardSigmoid", [b.conv(f"{path}.fc2", p, cr, c, 1)], alpha=1.0 / 6, beta=0.5)
        b.scope = "/" + path.replace(".", "/")
        return b.op("Mul", [p, t])

    def block(path, t, cin, cexp, cout, stride):
        h = b.op("HardSwish", [b.conv(f"{path}.expand", t, cin, cexp, 1)])
        h = b.op("HardSwish", [b.conv(f"{path}.dw", h, cexp, cexp, 3, stride=stride, pad=1, group=cexp)])
        h = se(f"{path}.se", h, cexp, cexp // 4)
        h = b.conv(f"{path}.project", h, cexp, cout, 1)
        if stride == 1 and cin == cout:
            b.scope = "/" + path.replace(".", "/")
            h = b.op("Add", [h, t])
        return h

    y = block("features.1", x, 8, 16, 12, 2)
    y = block("features.2", y, 12, 24, 12, 1)
    b.scope = ""
    y = b.op("Flatten", [b.op("GlobalAveragePool", [y])], axis=1)
    y = b.op("HardSwish", [b.linear_gemm("classifier.0", y, 12, 16)])
    y = b.linear_gemm("classifier.3", y, 16, 10)
    b.nodes[-1].output[0] = "output"
    b.output("output")
    return b.model("mobilenet_v3_block"), [("input", (1, 8, 16, 16))]


def decoder():
    """A segmentation-style decoder: nn.PReLU (per-channel and single slope),
    nn.ConvTranspose2d (grouped; stride 2 with padding and output_padding), and
    F.interpolate exported as Resize (nearest x2, bilinear to a size, bicubic align_corners)."""
    b = Builder(8)
    x = b.input("input", [1, 4, 8, 8])
    y = b.conv("enc", x, 4, 8, 3, pad=1)
    b.scope = "/act1"
    y = b.op("PRelu", [y, b.param("act1.weight", b.rng.uniform(0.05, 0.4, (8, 1, 1)))])
    w = b.param("up1.weight", b.uniform((8, 3, 2, 2), 12))
    bias = b.param("up1.bias", b.uniform((6,), 12))
    b.scope = "/up1"
    y = b.op("ConvTranspose", [y, w, bias], kernel_shape=[2, 2], strides=[2, 2], pads=[0, 0, 0, 0],
             group=2, dilations=[1, 1], output_padding=[0, 0])
    b.scope = "/act2"
    y = b.op("PRelu", [y, b.param("act2.weight", np.array([0.25], np.float32))])
    b.scope = ""
    y = b.op("Resize", [y, "", b.const(np.array([1, 1, 2, 2], np.float32))],
             mode="nearest", coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    y = b.op("Resize", [y, "", "", b.const(np.array([1, 6, 20, 20], np.int64))],
             mode="linear", coordinate_transformation_mode="pytorch_half_pixel")
    w = b.param("up2.weight", b.uniform((6, 4, 3, 3), 54))
    b.scope = "/up2"
    y = b.op("ConvTranspose", [y, w], kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1],
             output_padding=[1, 1])
    b.scope = ""
    y = b.op("Resize", [y, "", b.const(np.array([1, 1, 0.5, 0.5], np.float32))],
             mode="cubic", coordinate_transformation_mode="align_corners", cubic_coeff_a=-0.75)
    b.nodes[-1].output[0] = "output"
    b.output("output")
    return b.model("decoder"), [("input", (1, 4, 8, 8))]


def qops():
    """The ops onnxruntime's QDQ transformer fuses, beyond the CNNs': average pooling,
    Sigmoid, LeakyRelu, Mul, Concat, activation x activation MatMul, Softmax, Gemm
    without bias."""
    b = Builder(9)
    x = b.input("input", [1, 3, 8, 8])
    c1 = b.op("Relu", [b.conv("conv1", x, 3, 8, 3, pad=1)])
    c2 = b.op("Clip", [b.conv("conv2", c1, 8, 8, 3, pad=1), b.const(np.float32(0)), b.const(np.float32(6))])
    m = b.op("MaxPool", [c2], kernel_shape=[2, 2], strides=[2, 2])
    a = b.op("AveragePool", [c1], kernel_shape=[2, 2], strides=[2, 2])
    y = b.op("Concat", [b.op("Add", [m, a]), b.op("Mul", [m, a])], axis=1)
    y = b.op("LeakyRelu", [b.op("Sigmoid", [y])], alpha=0.1)
    t = b.op("Reshape", [y, b.const(np.array([1, 16, 16], np.int64))])
    t = b.op("Transpose", [t], perm=[0, 2, 1])
    t = b.linear_matmul("proj", t, 16, 16, bias=False)
    t = b.op("Softmax", [b.op("MatMul", [t, b.op("Transpose", [t], perm=[0, 2, 1])])], axis=-1)
    g = b.op("Flatten", [b.op("GlobalAveragePool", [y])], axis=1)
    w = b.param("head.weight", b.uniform((16, 5), 16))
    b.scope = "/head"
    g = b.op("Gemm", [g, w])
    b.scope = ""
    b.nodes.append(onnx.helper.make_node("Identity", [t], ["attention"], name="/Identity"))
    b.nodes.append(onnx.helper.make_node("Identity", [g], ["logits"], name="/Identity_1"))
    b.output("attention")
    b.output("logits")
    return b.model("qops"), [("input", (1, 3, 8, 8))]


FLOAT_MODELS = {
    "cnn_resblock": (cnn, "conv-bn-relu CNN, residual add, max pool, global pool, Gemm"),
    "mlp": (mlp, "3-layer Gemm MLP with Softmax"),
    "transformer_block": (transformer, "pre-LN attention block, exporter shape subgraphs, causal "
                          "mask Slice+Where, RMS norm, Erf GELU, last-token Slice"),
    "lstm": (lstm, "LSTM + bidirectional LSTM + Gemm head"),
    "gru": (gru, "batch-first GRU (linear_before_reset) + Linear"),
    "squeezenet_fire": (fire, "SqueezeNet fire module with Concat, ceil-mode MaxPool, AveragePool"),
    "mobilenet_v3_block": (mobilenet, "MobileNetV3 blocks: HardSwish, depthwise, SE with HardSigmoid"),
    "decoder": (decoder, "decoder: PRelu, grouped/output-padded ConvTranspose, Resize nearest, "
                "bilinear (pytorch_half_pixel, sizes) and bicubic (align_corners)"),
    "qops": (qops, "average pool, Sigmoid, LeakyRelu, Mul, Concat, attention-style MatMul x "
             "MatMul with Softmax, Gemm without bias"),
}
QUANTIZE = ["cnn_resblock", "mlp", "squeezenet_fire", "mobilenet_v3_block", "transformer_block"]
# Also quantized in QDQ form (onnxruntime's default), every op the quantizer knows.
QUANTIZE_QDQ = ["cnn_resblock", "mlp", "squeezenet_fire", "mobilenet_v3_block",
                "transformer_block", "qops"]
# And with s8 activations, quantize_static's default activation type: x86 onnxruntime
# makes the Q -> DQ pairs with one reader u8 and fuses only what is then u8 (or allowed s8).
QUANTIZE_QDQ_S8 = ["cnn_resblock", "squeezenet_fire", "mobilenet_v3_block", "qops"]
# Ops whose QOperator forms pimkit implements (the rest stay float between DQ/Q pairs).
QUANT_OPS = ["Conv", "MatMul", "Gemm", "Add", "Mul", "Concat", "GlobalAveragePool", "Sigmoid",
             "LeakyRelu", "MaxPool", "Relu", "Clip", "Reshape", "Flatten", "Transpose", "Squeeze",
             "Unsqueeze", "Split", "Gather"]


class Reader(CalibrationDataReader):
    """Deterministic calibration batches."""

    def __init__(self, specs, seed, n=8):
        rng = np.random.default_rng(seed)
        self.batches = iter([{name: rng.normal(0, 1, shape).astype(np.float32) for name, shape in specs}
                             for _ in range(n)])

    def get_next(self):
        return next(self.batches, None)


def add_float(name, desc, model, specs, seed):
    rng = np.random.default_rng(seed)
    ins = [rng.normal(0, 1, shape).astype(np.float32) for _, shape in specs]
    outs = run_ort(model, dict(zip([n for n, _ in specs], ins)))
    CASES.append((name, desc, model, ins, outs, None))
    return ins


def quant_tolerance(model, steps):
    scales = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    outs = {o.name for o in model.graph.output}
    best = 1e-4
    for n in model.graph.node:
        if n.op_type == "DequantizeLinear" and n.output[0] in outs:
            best = max(best, float(np.max(scales[n.input[1]])) * steps)
    return float(f"{best:.3g}")


def quantized(name, model, specs, tmp, **kwargs):
    """`model` through the documented flow: pre-processing (which folds
    BatchNormalization into Conv, as a PyTorch eval-mode export would have), then
    quantize_static with deterministic calibration data and `kwargs`."""
    raw = os.path.join(tmp, f"{name}_raw.onnx")
    src = os.path.join(tmp, f"{name}_f.onnx")
    dst = os.path.join(tmp, f"{name}.onnx")
    onnx.save(model, raw)
    quant_pre_process(raw, src, skip_symbolic_shape=True)
    quantize_static(src, dst, Reader(specs, 99), **kwargs)
    return onnx.load(dst)


def add_quant(name, desc, model, specs, ins, per_channel, tmp):
    q = quantized(name, model, specs, tmp, quant_format=QuantFormat.QOperator,
                  activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
                  per_channel=per_channel, reduce_range=True, op_types_to_quantize=QUANT_OPS)
    outs = run_ort(q, dict(zip([n for n, _ in specs], ins)))
    CASES.append((name, desc, q, ins, outs, float_islands(q)))


def add_qdq(name, desc, model, specs, ins, per_channel, tmp, act=QuantType.QUInt8):
    """quantize_static's default QDQ form. The golden outputs are onnxruntime's default
    session's, which runs each DequantizeLinear -> op -> QuantizeLinear group as its
    QOperator node; the float islands are the float ops left in onnxruntime's own
    optimized graph (saved at the level that does the QDQ fusions)."""
    q = quantized(name, model, specs, tmp, quant_format=QuantFormat.QDQ, activation_type=act,
                  weight_type=QuantType.QInt8, per_channel=per_channel, reduce_range=True)
    outs = run_ort(q, dict(zip([n for n, _ in specs], ins)), levels=("all",))
    CASES.append((name, desc, q, ins, outs, float_islands(ort_fused(name, q, tmp))))


def ort_fused(name, model, tmp):
    """onnxruntime's own optimized graph of a QDQ model (saved at the level that does the
    QDQ fusions); records its integer nodes in FUSED."""
    src = os.path.join(tmp, f"{name}_for_ort.onnx")
    onnx.save(model, src)
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    so.optimized_model_filepath = os.path.join(tmp, f"{name}_ort.onnx")
    ort.InferenceSession(src, so, providers=["CPUExecutionProvider"])
    opt = onnx.load(so.optimized_model_filepath)
    FUSED[name] = dict(sorted(Counter(n.op_type for n in opt.graph.node
                                      if n.op_type.startswith("QLinear") or n.op_type == "QGemm").items()))
    return opt


def keep_clamps(name, desc, case, tmp):
    """A QDQ case with a Relu put back in front of every Q whose zero point is the
    lowest code (as other quantizers leave it): onnxruntime's ReluQuantFusion removes it
    again before fusing, and so must pimkit."""
    _, _, q, ins, _, _ = case
    m = onnx.ModelProto()
    m.CopyFrom(q)
    inits = {i.name: numpy_helper.to_array(i) for i in m.graph.initializer}
    producers = {o: n for n in m.graph.node for o in n.output}
    nodes = []
    for n in m.graph.node:
        src = producers.get(n.input[0]) if n.input else None
        if (n.op_type == "QuantizeLinear" and src is not None and src.op_type == "Conv"
                and len(n.input) > 2 and inits[n.input[2]].dtype == np.uint8 and inits[n.input[2]] == 0):
            relu = f"{src.name}/Relu"
            nodes.append(onnx.helper.make_node("Relu", [n.input[0]], [relu + "_output_0"], name=relu))
            n.input[0] = relu + "_output_0"
        nodes.append(n)
    del m.graph.node[:]
    m.graph.node.extend(nodes)
    outs = run_ort(m, {m.graph.input[0].name: ins[0]}, levels=("all",))
    CASES.append((name, desc, m, ins, outs, float_islands(ort_fused(name, m, tmp))))


# Ops that keep quantized data integer (or only move it) inside a QOperator model.
INTEGER_OPS = {"QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "QGemm",
               "QLinearAdd", "QLinearMul", "QLinearConcat", "QLinearGlobalAveragePool",
               "QLinearAveragePool", "QLinearSoftmax",
               "QLinearSigmoid", "QLinearLeakyRelu", "MaxPool", "Flatten", "Reshape", "Transpose",
               "Squeeze", "Unsqueeze", "Split", "Gather", "Identity", "Constant", "Shape", "Concat",
               "Slice", "Cast"}


def float_islands(model):
    """Float ops that run between a DequantizeLinear and a QuantizeLinear or at the output.
    Their results depend on float rounding details, so such models compare with a
    tolerance instead of bit for bit."""
    return sorted({n.op_type for n in model.graph.node if n.op_type not in INTEGER_OPS})


def add_external(name, model, ins, outs):
    """The MLP saved with every initializer in a side file, to test external data loading."""
    d = os.path.join(SUITE, name)
    reset_dir(d)
    m = onnx.ModelProto()
    m.CopyFrom(model)
    onnx.save_model(m, os.path.join(d, "model.onnx"), save_as_external_data=True,
                    all_tensors_to_one_file=True, location="model.onnx.data", size_threshold=0)
    for i, a in enumerate(ins):
        np.save(os.path.join(d, f"input_{i}.npy"), a)
    for i, a in enumerate(outs):
        np.save(os.path.join(d, f"output_{i}.npy"), a)


def main():
    reset_dir(SUITE)
    kf = known_fail("ort-models")
    with tempfile.TemporaryDirectory() as tmp:
        for seed, (name, (fn, desc)) in enumerate(FLOAT_MODELS.items()):
            model, specs = fn()
            ins = add_float(name, desc, model, specs, 1000 + seed)
            if name in QUANTIZE:
                for pc in (False, True):
                    qname = f"q_{name}_{'perchannel' if pc else 'pertensor'}"
                    add_quant(qname, f"quantize_static QOperator u8/s8 {'per-channel' if pc else 'per-tensor'}: "
                              + desc, model, specs, ins, pc, tmp)
            if name in QUANTIZE_QDQ:
                for pc in (False, True):
                    qname = f"qdq_{name}_{'perchannel' if pc else 'pertensor'}"
                    add_qdq(qname, f"quantize_static QDQ u8/s8 {'per-channel' if pc else 'per-tensor'}: "
                            + desc, model, specs, ins, pc, tmp)
            if name in QUANTIZE_QDQ_S8:
                add_qdq(f"qdq_{name}_s8act", "quantize_static QDQ s8/s8 per-tensor: " + desc,
                        model, specs, ins, False, tmp, act=QuantType.QInt8)
        keep_clamps("qdq_cnn_resblock_relu_kept", "qdq_cnn_resblock_pertensor with a Relu in front of "
                    "each zero-point-0 QuantizeLinear after a Conv",
                    next(c for c in CASES if c[0] == "qdq_cnn_resblock_pertensor"), tmp)
    entries = []
    for name, desc, model, ins, outs, islands in CASES:
        d = save_case(SUITE, name, model, ins, outs)
        if name in FUSED:
            with open(os.path.join(d, "ort_fused_ops.json"), "w") as f:
                json.dump(FUSED[name], f, indent=1)
                f.write("\n")
        ops = sorted({(n.domain + "." if n.domain else "") + n.op_type for n in model.graph.node})
        e = {"name": name, "desc": desc, "ops": ops}
        if islands is not None:
            e["exact"] = not islands
            if islands:
                # One output quantization step per float island op type, at least 1e-4.
                e["atol"] = quant_tolerance(model, len(islands))
                e["desc"] += f" (float islands: {', '.join(islands)})"
        e.update({"status": "known-fail", "reason": kf[name]} if name in kf else {"status": "pass"})
        entries.append(e)
    mlp_case = next(c for c in CASES if c[0] == "mlp")
    add_external("mlp_external_data", mlp_case[2], mlp_case[3], mlp_case[4])
    e = {"name": "mlp_external_data", "desc": "the mlp case with weights in model.onnx.data",
         "ops": ["Gemm", "Relu", "Softmax"]}
    e.update({"status": "known-fail", "reason": kf[e["name"]]} if e["name"] in kf else {"status": "pass"})
    entries.append(e)
    header = ("# Generated by tools/gen_model_vectors.py (onnxruntime outputs); do not edit.\n"
              "# exact = true: compare bit for bit; exact = false: quantized model with float islands, compared\n"
              "# with atol (output quantization steps); no exact key: float model, tolerance of docs/testing.md.\n")
    write_manifest(SUITE, header, entries)
    print(f"ort-models: {len(entries)} cases -> {SUITE}")
    stale = set(kf) - {e["name"] for e in entries}
    if stale:
        print(f"warning: stale known-fail entries: {sorted(stale)}", file=sys.stderr)


if __name__ == "__main__":
    main()
