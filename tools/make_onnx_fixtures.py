#!/usr/bin/env python3
"""Write the tiny .onnx fixtures of crates/onnx/tests/fixtures (onnx 1.22, onnxruntime 1.32).

- qop_cnn.onnx: a small float CNN quantized by onnxruntime's quantize_static with
  QuantFormat.QOperator, per-channel weights (QLinearConv, QLinearAdd,
  QLinearGlobalAveragePool, QGemm / QLinearMatMul ... as ORT emits them).
- torch_style.onnx: a float model with the shape sub-graph torch.onnx.export writes for
  x.view(x.size(0), -1), opset 17, Constant nodes, LayerNormalization and Softmax.
- external.onnx + external.onnx.data: weights stored as external data.
Run: python3 tools/make_onnx_fixtures.py
"""
import os
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "onnx", "tests", "fixtures")
rng = np.random.default_rng(0)


def w(name, *shape):
    return numpy_helper.from_array((rng.standard_normal(shape) * 0.3).astype(np.float32), name)


def float_cnn():
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], "conv1", pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"], "relu1"),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], "conv2", pads=[1, 1, 1, 1], group=4),
        helper.make_node("Add", ["c2", "r1"], ["a"], "add"),
        helper.make_node("GlobalAveragePool", ["a"], ["p"], "gap"),
        helper.make_node("Flatten", ["p"], ["f"], "flat"),
        helper.make_node("Gemm", ["f", "wf", "bf"], ["y"], "fc", transB=1),
    ]
    inits = [w("w1", 4, 3, 3, 3), w("b1", 4), w("w2", 4, 1, 3, 3), w("b2", 4), w("wf", 5, 4), w("bf", 5)]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 6, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 5])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


class Reader(CalibrationDataReader):
    def __init__(self):
        self.data = iter([{"x": rng.standard_normal((1, 3, 6, 6)).astype(np.float32)} for _ in range(4)])

    def get_next(self):
        return next(self.data, None)


def qop_cnn():
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "f.onnx")
        onnx.save(float_cnn(), src)
        dst = os.path.join(OUT, "qop_cnn.onnx")
        quantize_static(src, dst, Reader(), quant_format=QuantFormat.QOperator, per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)


def torch_style():
    i64 = lambda name, v: helper.make_node(
        "Constant", [], [name], name.replace("_output_0", ""),
        value=numpy_helper.from_array(np.array(v, dtype=np.int64)))
    nodes = [
        helper.make_node("Shape", ["input"], ["/Shape_output_0"], "/Shape"),
        i64("/Constant_output_0", 0),
        helper.make_node("Gather", ["/Shape_output_0", "/Constant_output_0"], ["/Gather_output_0"], "/Gather", axis=0),
        i64("/Constant_1_output_0", [0]),
        helper.make_node("Unsqueeze", ["/Gather_output_0", "/Constant_1_output_0"], ["/Unsqueeze_output_0"], "/Unsqueeze"),
        i64("/Constant_2_output_0", [-1]),
        helper.make_node("Concat", ["/Unsqueeze_output_0", "/Constant_2_output_0"], ["/Concat_output_0"], "/Concat", axis=0),
        helper.make_node("Reshape", ["input", "/Concat_output_0"], ["/Reshape_output_0"], "/Reshape"),
        helper.make_node("MatMul", ["/Reshape_output_0", "fc.weight"], ["/fc/MatMul_output_0"], "/fc/MatMul"),
        helper.make_node("Add", ["fc.bias", "/fc/MatMul_output_0"], ["/fc/Add_output_0"], "/fc/Add"),
        helper.make_node("LayerNormalization", ["/fc/Add_output_0", "ln.weight", "ln.bias"], ["/ln/out"], "/ln", axis=-1, epsilon=1e-5),
        helper.make_node("Softmax", ["/ln/out"], ["output"], "/Softmax", axis=-1),
    ]
    inits = [w("fc.weight", 12, 6), w("fc.bias", 6), w("ln.weight", 6), w("ln.bias", 6)]
    g = helper.make_graph(nodes, "main_graph",
                          [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["batch", 3, 4])],
                          [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["batch", 6])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=8, producer_name="pytorch")
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(OUT, "torch_style.onnx"))


def external():
    m = float_cnn()
    onnx.save(m, os.path.join(OUT, "external.onnx"), save_as_external_data=True, all_tensors_to_one_file=True,
              location="external.onnx.data", size_threshold=0)


if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    qop_cnn()
    torch_style()
    external()
    for f in sorted(os.listdir(OUT)):
        print(f, os.path.getsize(os.path.join(OUT, f)))
