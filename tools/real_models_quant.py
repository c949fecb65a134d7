"""onnxruntime quantize_static (QOperator) versions of the corpus models, and a small net
with the ops whose quantized forms issue 16 lists. Data generation only."""

import os

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
from onnxruntime.quantization import CalibrationDataReader, QuantFormat, QuantType, quantize_static
from onnxruntime.quantization.shape_inference import quant_pre_process

from real_models_torch import export, seed_all

# variant suffix -> (activation type, per_channel)
VARIANTS = {
    "u8_pt": (QuantType.QUInt8, False),
    "u8_pc": (QuantType.QUInt8, True),
    "s8_pt": (QuantType.QInt8, False),
    "s8_pc": (QuantType.QInt8, True),
}


class Reader(CalibrationDataReader):
    """Deterministic calibration data: `n` standard-normal samples per input (integer
    inputs are not quantized and get the reference feed)."""

    def __init__(self, model_path, feeds, seed, n=4):
        m = onnx.load(model_path, load_external_data=False)
        inits = {i.name for i in m.graph.initializer}
        rng = np.random.default_rng(seed)
        self.items = []
        for _ in range(n):
            item = {}
            for vi in m.graph.input:
                if vi.name in inits:
                    continue
                ref = feeds[vi.name]
                if ref.dtype.kind == "f":
                    item[vi.name] = rng.standard_normal(ref.shape).astype(ref.dtype)
                else:
                    item[vi.name] = ref
            self.items.append(item)
        self.it = iter(self.items)

    def get_next(self):
        return next(self.it, None)


def quantize(src, dst, feeds, variant, seed):
    """quant_pre_process (as onnxruntime's docs advise), then quantize_static QOperator with
    s8 weights and the variant's activation type and per-channel setting."""
    act, per_channel = VARIANTS[variant]
    pre = dst + ".pre.onnx"
    quant_pre_process(src, pre, skip_symbolic_shape=True)
    quantize_static(pre, dst, Reader(pre, feeds, seed), quant_format=QuantFormat.QOperator,
                    activation_type=act, weight_type=QuantType.QInt8, per_channel=per_channel)
    os.remove(pre)
    return dst


class QOpsNet(nn.Module):
    """Conv net with every op whose QOperator form issue 16 asks for: LeakyRelu, MaxPool,
    Pad, Sigmoid, Split, Concat, HardSigmoid, AveragePool, Resize, Transpose, Gather,
    GlobalAveragePool, Gemm and Softmax."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3)
        self.conv3 = nn.Conv2d(8, 12, 1)
        self.fc = nn.Linear(12, 10)

    def forward(self, x):
        x = F.max_pool2d(F.leaky_relu(self.conv1(x), 0.1), 2)           # 16x16
        # a non-zero value: onnxruntime fuses a zero Pad into the next Conv
        x = F.pad(x, (1, 1, 1, 1), value=0.25)                            # 18x18
        x = torch.sigmoid(self.conv2(x))                                  # 16x16
        a, b = torch.split(x, 4, dim=1)
        x = torch.cat([F.hardsigmoid(b), a], dim=1)
        x = F.avg_pool2d(x, 2)                                            # 8x8
        x = F.interpolate(x, scale_factor=2.0, mode="nearest")            # 16x16
        x = x.transpose(2, 3)
        x = x[:, :, torch.tensor([0, 3, 5, 8, 13])]                        # Gather on H
        x = F.adaptive_avg_pool2d(self.conv3(x), 1).flatten(1)
        return torch.softmax(self.fc(x), dim=-1)


def qops_float(path):
    seed_all(21)
    x = np.random.default_rng(21).standard_normal((1, 3, 32, 32)).astype(np.float32)
    export(QOpsNet().eval(), (torch.from_numpy(x),), path, "ts", ["x"], ["probs"])
    return {"x": x}
