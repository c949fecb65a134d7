#!/usr/bin/env python3
"""pimkit's reference interpreter against onnxruntime, side by side in one run.

Usage (builds nothing; build the release binary first):
    cargo build --release -p pimkit
    python3 -m venv .venv && .venv/bin/pip install -r tools/requirements-bench.txt
    .venv/bin/python tools/bench_vs_ort.py [--pimkit target/release/pimkit]
        [--runs 10] [--threads 1] [--clock wall|cpu] [--only NAME ...] [--keep DIR] [--extra]

For every model both runtimes get the same input (.npy, seed 0) and run single threaded:
onnxruntime with intra_op_num_threads = inter_op_num_threads = 1 (CPU provider, default
graph optimizations), pimkit with `pimkit --threads 1 exec MODEL --runs N --json`, which
times the interpreter only (no import, no file I/O). Each side: one warm-up run, then the
median of N runs. `--clock cpu` compares process CPU time instead of wall time (both
sides single threaded), which leaves out the time other processes hold the cores on a
shared machine. The table also shows the largest output difference, so a fast wrong
answer cannot pass unnoticed.

Models (generated into a temporary directory, random weights, nothing downloaded):
torchvision MobileNetV2 / ResNet18 / SqueezeNet 1.1 exported to ONNX (f32), the same three
quantized by onnxruntime's `quantize_static` (u8 activations, s8 per-channel weights, 8
random calibration images) in both of its formats: QuantFormat.QOperator ("int8") and
QuantFormat.QDQ, its default ("int8 QDQ"; onnxruntime and pimkit both run each QDQ group
as its integer node), plus quantize_static with every default ("int8 QDQ defaults": QDQ,
s8 activations and weights, per tensor; x86 onnxruntime keeps some of those groups in
float, and so does pimkit, docs/onnx.md "QDQ models"), a pre-norm transformer block and a
2-layer LSTM (both torch modules, f32).
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnxruntime as ort
import torch
import torchvision
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType, quantize_dynamic,
                                      quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class PreNormBlock(torch.nn.Module):
    """x + Attn(LN(x)); x + MLP(LN(x)) with GELU, causal mask (GPT-2 style)."""

    def __init__(self, d=256, heads=4, ff=1024, seq=64):
        super().__init__()
        self.heads, self.seq = heads, seq
        self.ln1 = torch.nn.LayerNorm(d)
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.fc1 = torch.nn.Linear(d, ff)
        self.fc2 = torch.nn.Linear(ff, d)
        self.register_buffer("mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        hd = d // self.heads
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.reshape(b, t, self.heads, hd).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / (hd ** 0.5)
        att = att.masked_fill(~self.mask[:t, :t], float("-inf")).softmax(-1)
        y = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = x + self.proj(y)
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln2(x))))


class Lstm2(torch.nn.Module):
    def __init__(self, fin=64, hid=128):
        super().__init__()
        self.lstm = torch.nn.LSTM(fin, hid, num_layers=2)
        self.head = torch.nn.Linear(hid, 10)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y[-1])


def export(module, shape, path):
    if os.path.exists(path):  # kept from an earlier --keep run
        return
    torch.manual_seed(0)
    x = torch.randn(*shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (x,), path, dynamo=False, opset_version=17,
                          input_names=["input"], output_names=["output"])


class Calib(CalibrationDataReader):
    def __init__(self, shape, n=8):
        rng = np.random.default_rng(99)
        self.it = iter([{"input": rng.normal(0, 1, shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.it, None)


# quantize_static settings per row kind; "int8 QDQ defaults" passes nothing but the data.
QUANT = {
    "int8": dict(quant_format=QuantFormat.QOperator, activation_type=QuantType.QUInt8,
                 weight_type=QuantType.QInt8, per_channel=True),
    "int8 QDQ": dict(quant_format=QuantFormat.QDQ, activation_type=QuantType.QUInt8,
                     weight_type=QuantType.QInt8, per_channel=True),
    "int8 QDQ defaults": {},
}


def quantize(src, dst, shape, tmp, kind):
    if os.path.exists(dst):
        return
    pre = os.path.join(tmp, os.path.basename(src) + ".pre.onnx")
    if not os.path.exists(pre):
        quant_pre_process(src, pre, skip_symbolic_shape=True)
    quantize_static(pre, dst, Calib(shape), **QUANT[kind])


def build_models(tmp, only):
    img = (1, 3, 224, 224)
    torch.manual_seed(0)
    cnns = {
        "MobileNetV2": torchvision.models.mobilenet_v2,
        "ResNet18": torchvision.models.resnet18,
        "SqueezeNet 1.1": torchvision.models.squeezenet1_1,
    }
    rows = []  # (label, kind, path, input shape)
    for name, ctor in cnns.items():
        f32 = os.path.join(tmp, name.replace(" ", "_") + ".onnx")
        want_f = f"{name} f32"
        wants = {kind: f"{name} {kind}" for kind in QUANT}
        if not (wanted(want_f, only) or any(wanted(w, only) for w in wants.values())):
            continue
        torch.manual_seed(0)
        export(ctor(weights=None), img, f32)
        for kind, label in wants.items():
            if wanted(label, only):
                q = f32.replace(".onnx", "_" + kind.replace(" ", "_").lower() + ".onnx")
                quantize(f32, q, img, tmp, kind)
                rows.append((label, kind, q, img))
        if wanted(want_f, only):
            rows.append((want_f, "f32", f32, img))
    if wanted("transformer block f32", only):
        p = os.path.join(tmp, "transformer_block.onnx")
        torch.manual_seed(0)
        export(PreNormBlock(), (1, 64, 256), p)
        rows.append(("transformer block f32", "f32", p, (1, 64, 256)))
    if wanted("2-layer LSTM f32", only):
        p = os.path.join(tmp, "lstm2.onnx")
        torch.manual_seed(0)
        export(Lstm2(), (32, 1, 64), p)
        rows.append(("2-layer LSTM f32", "f32", p, (32, 1, 64)))
    order = {"int8": 0, "int8 QDQ": 1, "int8 QDQ defaults": 2, "f32": 3}
    return sorted(rows, key=lambda r: order[r[1]])


class Wrapped(torch.nn.Module):
    """A torch layer called with its input only, returning its first output (an RNN's
    sequence; a bare TransformerEncoderLayer does not export as the top module)."""

    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        y = self.m(x)
        return y[0] if isinstance(y, tuple) else y


def build_extra(tmp, only):
    """Rows outside the issue's table (--extra): other transformer and RNN shapes, and
    quantize_dynamic (onnxruntime's other quantizer) on the transformer block and
    MobileNetV2."""
    torch.manual_seed(0)
    enc = lambda d, h, ff, **kw: Wrapped(torch.nn.TransformerEncoderLayer(  # noqa: E731
        d, h, ff, dropout=0.0, batch_first=True, **kw))
    models = {
        "TransformerEncoderLayer 256 ReLU f32": (lambda: enc(256, 4, 1024), (1, 64, 256)),
        "TransformerEncoderLayer 512 GELU pre-norm f32": (
            lambda: enc(512, 8, 2048, activation="gelu", norm_first=True), (1, 128, 512)),
        "LSTM 256 x 50 steps f32": (lambda: Wrapped(torch.nn.LSTM(128, 256)), (50, 1, 128)),
        "2-layer bidirectional GRU f32": (
            lambda: Wrapped(torch.nn.GRU(64, 128, num_layers=2, bidirectional=True)),
            (40, 1, 64)),
    }
    rows = []
    for label, (ctor, shape) in models.items():
        if wanted(label, only):
            p = os.path.join(tmp, label.split(" f32")[0].replace(" ", "_") + ".onnx")
            torch.manual_seed(0)
            export(ctor(), shape, p)
            rows.append((label, "f32", p, shape))
    dynamic = {
        "transformer block int8 dynamic": ("transformer_block.onnx", PreNormBlock, (1, 64, 256)),
        "MobileNetV2 int8 dynamic": ("MobileNetV2.onnx", torchvision.models.mobilenet_v2,
                                     (1, 3, 224, 224)),
    }
    for label, (name, ctor, shape) in dynamic.items():
        if wanted(label, only):
            src = os.path.join(tmp, name)
            torch.manual_seed(0)
            export(ctor() if ctor is PreNormBlock else ctor(weights=None), shape, src)
            dst = src.replace(".onnx", "_int8_dynamic.onnx")
            if not os.path.exists(dst):
                quantize_dynamic(src, dst, weight_type=QuantType.QInt8)
            rows.append((label, "int8 dynamic", dst, shape))
    return rows


def wanted(label, only):
    return not only or any(o.lower() in label.lower() for o in only)


def time_ort(path, x, runs, clock):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    s = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    feed = {s.get_inputs()[0].name: x}
    out = s.run(None, feed)
    now = time.process_time if clock == "cpu" else time.perf_counter
    times = []
    for _ in range(runs):
        t0 = now()
        s.run(None, feed)
        times.append((now() - t0) * 1e3)
    return statistics.median(times), out


def time_pimkit(binary, path, xfile, runs, threads, outdir, clock):
    cmd = [binary, "--threads", str(threads), "exec", path, "-i", xfile, "--runs", str(runs + 1),
           "--json", "-o", outdir]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({r.returncode}): {r.stderr.strip()}")
    d = json.loads(r.stdout)
    times = d["cpu_times_ms" if clock == "cpu" else "times_ms"][1:]  # first run: warm-up
    outs = [np.load(o["file"]) for o in d["outputs"]]
    return statistics.median(times), outs


def max_diff(a, b):
    return max(float(np.max(np.abs(x.astype(np.float64) - y.astype(np.float64)))) if x.size else 0.0
               for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pimkit", default=os.path.join(ROOT, "target", "release", "pimkit"))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--clock", choices=["wall", "cpu"], default="wall",
                    help="wall time (default) or process CPU time")
    ap.add_argument("--only", nargs="*", default=[], help="substrings of the model labels to run")
    ap.add_argument("--keep", help="generate the models into this directory and keep them "
                    "(models already there are reused)")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--extra", action="store_true",
                    help="also the rows outside the issue's table (other transformer/RNN shapes, "
                    "quantize_dynamic models)")
    a = ap.parse_args()
    if not os.path.exists(a.pimkit):
        sys.exit(f"{a.pimkit} not found: build it with `cargo build --release -p pimkit`")
    with tempfile.TemporaryDirectory() as tmp:
        work = a.keep or tmp
        os.makedirs(work, exist_ok=True)
        print(f"generating models in {work} ...", file=sys.stderr)
        rows = build_models(work, a.only) + (build_extra(work, a.only) if a.extra else [])
        res = []
        for label, kind, path, shape in rows:
            x = np.random.default_rng(0).normal(0, 1, shape).astype(np.float32)
            xf = os.path.join(work, os.path.basename(path) + ".input.npy")
            np.save(xf, x)
            ort_ms, want = time_ort(path, x, a.runs, a.clock)
            outdir = os.path.join(work, os.path.basename(path) + ".out")
            pk_ms, got = time_pimkit(a.pimkit, path, xf, a.runs, a.threads, outdir, a.clock)
            res.append({"model": label, "onnxruntime_ms": ort_ms, "pimkit_ms": pk_ms,
                        "ratio": pk_ms / ort_ms, "max_abs_diff": max_diff(got, want)})
            print(f"  {label}: ort {ort_ms:.2f} ms, pimkit {pk_ms:.2f} ms", file=sys.stderr)
    if a.json:
        print(json.dumps(res, indent=2))
        return
    print(f"{'CPU' if a.clock == 'cpu' else 'wall'} time, median of {a.runs} runs "
          f"(onnxruntime {ort.__version__} intra_op_num_threads=1, pimkit --threads {a.threads})\n")
    print("| model | onnxruntime | pimkit interpreter | ratio | max abs diff |")
    print("|---|---|---|---|---|")
    for r in res:
        print(f"| {r['model']} | {r['onnxruntime_ms']:.2f} ms | {r['pimkit_ms']:.2f} ms | "
              f"{r['ratio']:.2f}x | {r['max_abs_diff']:.2g} |")


if __name__ == "__main__":
    main()
