"""torch.onnx exports for tools/make_real_models.py: both exporters, torchvision CNNs and
the PyTorch constructs that broke pimkit before. Data generation only."""

import contextlib
import io
import os
import warnings

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models import efficientnet as tv_eff
from torchvision.models import regnet as tv_regnet
from torchvision.models.convnext import CNBlockConfig, ConvNeXt

EXPORTERS = {"ts": "TorchScript exporter (dynamo=False, opset 17)",
             "dy": "dynamo exporter (torch.onnx default, opset 18)"}


def seed_all(seed):
    torch.manual_seed(seed)
    np.random.seed(seed)


def export(model, args, path, exporter, input_names, output_names, dynamic=None):
    """dynamic: {input name: {axis: dim name}} (both exporters get the same names)."""
    model.eval()
    kw = dict(input_names=input_names, output_names=output_names)
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore")
        if exporter == "ts":
            torch.onnx.export(model, args, path, dynamo=False, opset_version=17,
                              dynamic_axes=dynamic, do_constant_folding=True, **kw)
        else:
            ds = None
            if dynamic:
                ds = {n: {ax: torch.export.Dim.DYNAMIC for ax in axes} for n, axes in dynamic.items()}
                # dynamic_shapes is keyed by forward()'s parameter names, in order
                ds = tuple(ds.get(n) for n in input_names)
                if getattr(model, "star_args", False):
                    ds = (ds,)  # forward(self, *args) takes one tuple
            prog = torch.onnx.export(model, args, dynamo=True, opset_version=18, dynamic_shapes=ds,
                                     external_data=False, **kw)
            prog.save(path, external_data=False)
    return path


def rand_image(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ------------------------------------------------------------- torchvision CNNs

def tiny_efficientnet(num_classes):
    setting, last = tv_eff._efficientnet_conf("efficientnet_b0", width_mult=0.25, depth_mult=0.25)
    return tv_eff.EfficientNet(setting, 0.2, num_classes=num_classes, last_channel=last)


def tiny_regnet(num_classes):
    params = tv_regnet.BlockParams.from_init_params(depth=4, w_0=8, w_a=8.0, w_m=2.0,
                                                    group_width=8, se_ratio=0.25)
    return tv_regnet.RegNet(params, num_classes=num_classes, stem_width=8)


def tiny_densenet(num_classes):
    return torchvision.models.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2),
                                       num_init_features=16, bn_size=2, num_classes=num_classes)


def tiny_convnext(num_classes):
    cfg = [CNBlockConfig(16, 32, 1), CNBlockConfig(32, 64, 1), CNBlockConfig(64, None, 1)]
    return ConvNeXt(cfg, stochastic_depth_prob=0.0, num_classes=num_classes)


M = torchvision.models
# name -> (constructor, description); small: committed at 64x64 with 10 classes.
SMALL_CNNS = {
    "mobilenet_v2": (lambda: M.mobilenet_v2(weights=None, width_mult=0.25, num_classes=10),
                     "torchvision mobilenet_v2(width_mult=0.25, num_classes=10)"),
    "mobilenet_v3_small": (lambda: M.mobilenet_v3_small(weights=None, width_mult=0.25, num_classes=10),
                           "torchvision mobilenet_v3_small(width_mult=0.25, num_classes=10)"),
    "shufflenet_v2": (lambda: M.ShuffleNetV2([2, 2, 2], [16, 24, 48, 96, 256], num_classes=10),
                      "torchvision ShuffleNetV2(repeats 2,2,2, channels 16/24/48/96/256), 10 classes"),
    "efficientnet": (lambda: tiny_efficientnet(10),
                     "torchvision EfficientNet, efficientnet_b0 config with width/depth 0.25, 10 classes"),
    "densenet": (lambda: tiny_densenet(10),
                 "torchvision DenseNet(growth 8, blocks 2,2,2,2, 16 init features), 10 classes"),
    "regnet": (lambda: tiny_regnet(10),
               "torchvision RegNet (depth 4, w_0 8, group width 8, SE), 10 classes"),
    "convnext": (lambda: tiny_convnext(10),
                 "torchvision ConvNeXt (16/32/64 channels, one block per stage), 10 classes"),
}
# Committed only quantized (the float net is 3 MB; its float export is a big case).
QUANT_ONLY = {"squeezenet1_1": lambda: M.squeezenet1_1(weights=None, num_classes=10)}
# name -> constructor; big: the stock architectures at 224x224, 1000 classes (not committed).
BIG_CNNS = {
    "resnet18": lambda: M.resnet18(weights=None),
    "mobilenet_v2": lambda: M.mobilenet_v2(weights=None),
    "squeezenet1_1": lambda: M.squeezenet1_1(weights=None),
    "vgg16": lambda: M.vgg16(weights=None),
    "alexnet": lambda: M.alexnet(weights=None),
    "googlenet": lambda: M.googlenet(weights=None, aux_logits=False, init_weights=True),
    "shufflenet_v2": lambda: M.shufflenet_v2_x1_0(weights=None),
    "efficientnet_b0": lambda: M.efficientnet_b0(weights=None),
    "mobilenet_v3_small": lambda: M.mobilenet_v3_small(weights=None),
    "densenet121": lambda: M.densenet121(weights=None),
    "regnet_y_400mf": lambda: M.regnet_y_400mf(weights=None),
    "convnext_tiny": lambda: M.convnext_tiny(weights=None),
}


def cnn_case(make, hw, seed, exporter, path, dynamic=False):
    seed_all(seed)
    model = make().eval()
    x = rand_image((1, 3, hw, hw), seed)
    dyn = {"input": {0: "batch", 2: "height", 3: "width"}} if dynamic else None
    export(model, (torch.from_numpy(x),), path, exporter, ["input"], ["logits"], dyn)
    return {"input": x}


# ------------------------------------------------------- constructs that broke pimkit

class PadToMultiple(nn.Module):
    """F.pad with pads computed from the input's size (padding to a multiple of 8), as
    segmentation and detection models do before a strided backbone."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, stride=2, padding=1)

    def forward(self, x):
        h, w = x.shape[-2], x.shape[-1]
        ph, pw = (8 - h % 8) % 8, (8 - w % 8) % 8
        x = F.pad(x, (pw // 2, pw - pw // 2, ph // 2, ph - ph // 2), mode="constant", value=0.0)
        x = F.pad(x, (1, 1, 1, 1), mode="reflect")
        return self.conv(x)


class LrnNet(nn.Module):
    """AlexNet/GoogLeNet-style conv -> ReLU -> LocalResponseNorm -> max pool."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 5, stride=2, padding=2)
        self.lrn = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0)
        self.conv2 = nn.Conv2d(16, 8, 3, padding=1)

    def forward(self, x):
        x = F.max_pool2d(self.lrn(F.relu(self.conv1(x))), 3, 2)
        return self.conv2(x)


class CausalAttention(nn.Module):
    """Self-attention whose causal mask is torch.triu of a runtime-sized matrix (Trilu)."""

    def __init__(self, d=32, heads=4):
        super().__init__()
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.heads = heads

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        s = q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=x.device), diagonal=1)
        s = s.masked_fill(mask, float("-inf"))
        y = (s.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.proj(y)


class ModeSwitch(nn.Module):
    """Control flow on an input: a sample-rate style switch between two branches."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv1d(4, 8, 3, padding=1)
        self.b = nn.Conv1d(4, 8, 5, padding=2)

    def forward(self, x, mode):
        def fa(x):
            return torch.relu(self.a(x))

        def fb(x):
            return torch.sigmoid(self.b(x))
        return torch.cond(mode.sum() > 0, fa, fb, (x,))


class ModeSwitchScript(nn.Module):
    """The same switch for the TorchScript exporter (torch.jit.script keeps the `if`)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv1d(4, 8, 3, padding=1)
        self.b = nn.Conv1d(4, 8, 5, padding=2)

    def forward(self, x, mode):
        if bool(mode.sum() > 0):
            y = torch.relu(self.a(x))
        else:
            y = torch.sigmoid(self.b(x))
        return y


class SymbolicCnn(nn.Module):
    """A small CNN meant to run at any batch, height and width (exported with all three
    symbolic): conv, BN, ReLU, max pool, adaptive average pool, linear head."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                  nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.ReLU())
        self.head = nn.Linear(16, 5)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.body(x), 1).flatten(1))


def _bn_stats(model, seed):
    """Give BatchNorm layers non-trivial running statistics (random init has 0/1)."""
    g = torch.Generator().manual_seed(seed)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.copy_(torch.randn(m.num_features, generator=g) * 0.1)
            m.running_var.copy_(torch.rand(m.num_features, generator=g) + 0.5)


def construct_cases():
    """name -> (builder(exporter, path) -> feeds, description, exporters)."""
    def pad(exporter, path):
        seed_all(11)
        x = rand_image((1, 3, 37, 45), 11)
        export(PadToMultiple(), (torch.from_numpy(x),), path, exporter, ["x"], ["y"])
        return {"x": x}

    def pad_dyn(exporter, path):
        seed_all(11)
        x = rand_image((1, 3, 37, 45), 12)
        export(PadToMultiple(), (torch.from_numpy(x),), path, exporter, ["x"], ["y"],
               {"x": {2: "height", 3: "width"}})
        return {"x": x}

    def lrn(exporter, path):
        seed_all(12)
        x = rand_image((1, 3, 32, 32), 13)
        export(LrnNet(), (torch.from_numpy(x),), path, exporter, ["x"], ["y"])
        return {"x": x}

    def triu(exporter, path):
        seed_all(13)
        x = rand_image((1, 8, 32), 14)
        export(CausalAttention(), (torch.from_numpy(x),), path, exporter, ["x"], ["y"],
               {"x": {0: "batch", 1: "seq"}})
        return {"x": rand_image((2, 6, 32), 15)}

    def cond(exporter, path):
        seed_all(14)
        x = rand_image((1, 4, 16), 16)
        mode = np.array([1], np.int64)
        m = ModeSwitch() if exporter == "dy" else torch.jit.script(ModeSwitchScript())
        export(m, (torch.from_numpy(x), torch.from_numpy(mode)), path, exporter, ["x", "mode"], ["y"])
        return {"x": x, "mode": np.array([0], np.int64)}

    def sym(exporter, path):
        seed_all(15)
        m = SymbolicCnn()
        _bn_stats(m, 15)
        x = rand_image((1, 3, 32, 32), 17)
        export(m.eval(), (torch.from_numpy(x),), path, exporter, ["x"], ["y"],
               {"x": {0: "batch", 2: "height", 3: "width"}})
        return {"x": rand_image((2, 3, 40, 24), 18)}

    return {
        "pad_computed": (pad, "F.pad with pads computed from the (static) input size, then reflect pad", "ts dy"),
        "pad_computed_dyn": (pad_dyn, "F.pad with pads computed from symbolic height/width", "ts dy"),
        "lrn": (lrn, "conv -> ReLU -> nn.LocalResponseNorm -> max pool", "ts dy"),
        "triu_causal_attention": (triu, "attention with a torch.triu causal mask, symbolic batch/seq (fed 2x6)", "ts dy"),
        "if_on_input": (cond, "If on an input (torch.cond for dynamo, torch.jit.script if for TorchScript), fed the else branch", "ts dy"),
        "symbolic_bhw_cnn": (sym, "CNN exported with symbolic batch/height/width, fed 2x3x40x24", "ts dy"),
    }


def export_error_text(e):
    s = str(e).strip()
    lines = [ln for ln in s.splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0][:300] if lines else ''}"


def tmp_path(tmp, name):
    return os.path.join(tmp, f"{name}.onnx")
