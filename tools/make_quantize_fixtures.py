#!/usr/bin/env python3
"""A float CNN and onnxruntime's quantize_static output for it, to check `pimkit quantize`
against (crates/cli/tests/fixtures/quantize/):

- float.onnx: torch.onnx.export (TorchScript, opset 17) of a small CNN with Conv+BN+ReLU,
  MaxPool, AveragePool, a residual Add, Concat, Sigmoid, GlobalAveragePool, Gemm, Softmax.
- calib/sample_<k>.npy: the 8 calibration inputs.
- ort_<act>_<pt|pc>.onnx: quantize_static(QuantFormat.QOperator, activation_type, weight
  QInt8, per_channel) on those samples (MinMax), onnxruntime 1.32.
Run: /work/venv/bin/python tools/make_quantize_fixtures.py
"""
import os
import tempfile
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static

warnings.filterwarnings("ignore")
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "cli", "tests", "fixtures", "quantize")
torch.manual_seed(3)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.c2 = nn.Conv2d(8, 8, 3, padding=1)
        self.c3 = nn.Conv2d(16, 12, 1)
        self.fc = nn.Linear(12, 6)

    def forward(self, x):
        a = F.relu(self.bn(self.c1(x)))
        b = F.max_pool2d(a, 2)
        c = F.relu(self.c2(b)) + b
        d = torch.cat([c, torch.sigmoid(F.avg_pool2d(a, 2))], 1)
        e = F.adaptive_avg_pool2d(F.relu(self.c3(d)), 1).flatten(1)
        return F.softmax(self.fc(e), dim=-1)


class Reader(CalibrationDataReader):
    def __init__(self, samples):
        self.it = iter([{"x": s} for s in samples])

    def get_next(self):
        return next(self.it, None)


def main():
    os.makedirs(os.path.join(OUT, "calib"), exist_ok=True)
    m = Net().eval()
    with torch.no_grad():
        for p in m.bn.parameters():
            p.uniform_(0.5, 1.5)
        m.bn.running_mean.uniform_(-0.2, 0.2)
        m.bn.running_var.uniform_(0.5, 2.0)
    f = os.path.join(OUT, "float.onnx")
    torch.onnx.export(m, (torch.randn(1, 3, 16, 16),), f, dynamo=False, opset_version=17,
                      input_names=["x"], output_names=["probs"])
    rng = np.random.default_rng(11)
    samples = [rng.uniform(-1, 1, (1, 3, 16, 16)).astype(np.float32) for _ in range(8)]
    for k, s in enumerate(samples):
        np.save(os.path.join(OUT, "calib", f"sample_{k}.npy"), s)
    for act, qt in (("u8", QuantType.QUInt8), ("i8", QuantType.QInt8)):
        for pc in (False, True):
            out = os.path.join(OUT, f"ort_{act}_{'pc' if pc else 'pt'}.onnx")
            quantize_static(f, out, Reader(samples), quant_format=QuantFormat.QOperator,
                            activation_type=qt, weight_type=QuantType.QInt8, per_channel=pc)
            print("wrote", out)


if __name__ == "__main__":
    main()
