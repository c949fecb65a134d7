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
    os.remove(tmp)


if __name__ == "__main__":
    main()
