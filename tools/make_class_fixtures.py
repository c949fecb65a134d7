#!/usr/bin/env python3
"""Small models, exported here, for each class of real-export failure pimkit must handle
(issue #16), with onnxruntime outputs. Writes crates/onnx/tests/fixtures/classes/<case>/
{model.onnx, input_<i>.npy, output_<i>.npy} (inputs in graph-input order).

- symbolic_cnn: torch.onnx.export (TorchScript) with dynamic batch/height/width axes of a
  CNN with pooling; run at 1x3x20x28 (the exported graph says [batch, 3, height, width]).
- fpad_computed: F.pad whose pads are computed from the input's size (pad W to a multiple
  of 8), exported with static shapes: the pads arrive through Shape/ConstantOfShape/
  Concat/Reshape/Slice/Transpose/Cast chains.
- paddle_minus1: an input declared with dim_value -1 (old paddle2onnx), run at 2x6.
- if_mode: a scripted module whose forward branches on a `mode` input (TorchScript
  exporter: an If whose branches hold convolutions), run with mode = 0.
- loop_scan: a Loop with a constant trip count (a carried accumulator and a scan output)
  feeding a Scan (a running sum over the sequence), written with onnx.helper.
Run: /work/venv/bin/python tools/make_class_fixtures.py   (torch 2.15, onnx 1.22, onnxruntime 1.32)
"""
import os
import warnings

import numpy as np
import onnx
import onnxruntime as ort
import torch
import torch.nn.functional as F
from onnx import TensorProto, helper, numpy_helper

warnings.filterwarnings("ignore")
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "onnx", "tests", "fixtures", "classes")
torch.manual_seed(0)
rng = np.random.default_rng(0)


def save_case(name, model_path, feeds):
    d = os.path.join(OUT, name)
    os.makedirs(d, exist_ok=True)
    m = onnx.load(model_path)
    onnx.save(m, os.path.join(d, "model.onnx"))
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    s = ort.InferenceSession(os.path.join(d, "model.onnx"), so, providers=["CPUExecutionProvider"])
    names = [i.name for i in s.get_inputs()]
    outs = s.run(None, {n: feeds[k] for k, n in enumerate(names)})
    for k, n in enumerate(names):
        np.save(os.path.join(d, f"input_{k}.npy"), feeds[k])
    for k, o in enumerate(outs):
        np.save(os.path.join(d, f"output_{k}.npy"), o)
    print(name, [f.shape for f in feeds], "->", [o.shape for o in outs])


class SmallCnn(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 8, 3, stride=2, padding=1)
        self.fc = torch.nn.Linear(8, 5)

    def forward(self, x):
        x = F.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.relu(self.c2(x))
        x = F.adaptive_avg_pool2d(x, 1).flatten(1)
        return self.fc(x)


class PadTo8(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c = torch.nn.Conv2d(2, 4, 3)

    def forward(self, x):
        w = x.shape[-1]
        p = (8 - w % 8) % 8
        x = F.pad(x, (0, p, 1, 1), mode="constant", value=0.5)
        return self.c(x)


class IfMode(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.b = torch.nn.Conv2d(3, 4, 1)

    def forward(self, x, mode):
        if bool(mode.sum() > 0):
            y = torch.relu(self.a(x))
        else:
            y = torch.sigmoid(self.b(x)) * 2.0
        return y + 1.0


def loop_scan_model():
    f = TensorProto.FLOAT
    # Loop body: (i, cond, acc) -> (cond, acc + x * (i+1), x * i)
    body = helper.make_graph(
        [
            helper.make_node("Cast", ["i"], ["fi"], to=f),
            helper.make_node("Add", ["fi", "one"], ["fi1"]),
            helper.make_node("Mul", ["x", "fi1"], ["xs"]),
            helper.make_node("Add", ["acc_in", "xs"], ["acc_out"]),
            helper.make_node("Mul", ["x", "fi"], ["scan_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "loop_body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", f, [2, 3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f, [2, 3]),
         helper.make_tensor_value_info("scan_out", f, [2, 3])],
        [numpy_helper.from_array(np.array(1.0, np.float32), "one")],
    )
    # Scan body: running sum over axis 0 of the Loop's stacked output.
    sbody = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"]), helper.make_node("Identity", ["s_out"], ["row_out"])],
        "scan_body",
        [helper.make_tensor_value_info("s_in", f, [2, 3]), helper.make_tensor_value_info("row", f, [2, 3])],
        [helper.make_tensor_value_info("s_out", f, [2, 3]), helper.make_tensor_value_info("row_out", f, [2, 3])],
    )
    nodes = [
        helper.make_node("Loop", ["M", "", "acc0"], ["acc", "stacked"], body=body),
        helper.make_node("Scan", ["acc", "stacked"], ["total", "running"], body=sbody, num_scan_inputs=1),
    ]
    g = helper.make_graph(
        nodes, "loop_scan",
        [helper.make_tensor_value_info("x", f, [2, 3]), helper.make_tensor_value_info("acc0", f, [2, 3])],
        [helper.make_tensor_value_info("total", f, [2, 3]), helper.make_tensor_value_info("running", f, [4, 2, 3])],
        [numpy_helper.from_array(np.array(4, np.int64), "M")],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    m.ir_version = 8
    return m


def main():
    tmp = os.path.join(OUT, "_tmp.onnx")
    os.makedirs(OUT, exist_ok=True)
    m = SmallCnn().eval()
    torch.onnx.export(m, (torch.randn(1, 3, 16, 16),), tmp, dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["logits"],
                      dynamic_axes={"x": {0: "batch", 2: "height", 3: "width"}, "logits": {0: "batch"}})
    save_case("symbolic_cnn", tmp, [rng.standard_normal((1, 3, 20, 28)).astype(np.float32)])

    m = PadTo8().eval()
    torch.onnx.export(m, (torch.randn(1, 2, 5, 13),), tmp, dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["y"])
    save_case("fpad_computed", tmp, [rng.standard_normal((1, 2, 5, 13)).astype(np.float32)])

    # dim_value -1: written by hand (onnx.helper refuses negative dims, so edit the proto).
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"]), helper.make_node("Relu", ["m"], ["y"])]
    g = helper.make_graph(nodes, "paddle", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 6])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])],
                          [numpy_helper.from_array(rng.standard_normal((6, 4)).astype(np.float32), "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = -1
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_value = -1
    onnx.save(model, tmp)
    save_case("paddle_minus1", tmp, [rng.standard_normal((2, 6)).astype(np.float32)])

    m = torch.jit.script(IfMode().eval())
    torch.onnx.export(m, (torch.randn(1, 3, 6, 6), torch.tensor([1])), tmp, dynamo=False, opset_version=17,
                      input_names=["x", "mode"], output_names=["y"])
    save_case("if_mode", tmp, [rng.standard_normal((1, 3, 6, 6)).astype(np.float32), np.array([0], np.int64)])

    onnx.save(loop_scan_model(), tmp)
    save_case("loop_scan", tmp, [rng.standard_normal((2, 3)).astype(np.float32), np.ones((2, 3), np.float32)])
    os.remove(tmp)


if __name__ == "__main__":
    main()
