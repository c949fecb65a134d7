#!/usr/bin/env python3
"""The corpus of real exported models (issue 16 item 7) -> tests/data/real-models/.

Families (all deterministic: fixed seeds, random weights, nothing downloaded):
  tv_*     torchvision CNNs (weights=None), both torch.onnx exporters (_ts: TorchScript,
           dynamo=False; _dy: the default dynamo exporter). Committed: shrunk versions at
           64x64 with 10 classes; --big: the stock nets at 224x224 (not committed).
  hf_*     transformers architectures from small configs, both exporters, some also with
           symbolic batch/sequence (_dyn, fed batch 2 x seq 7 with a padded row).
  pt_*     PyTorch constructs that broke pimkit: computed F.pad, If on an input, LRN,
           torch.triu causal mask, symbolic batch/height/width.
  light_*  the ONNX package's nine `light` real models with its output_0.pb references;
           inputs arange(n)/n in the input's shape (onnx.backend.test.runner.Runner.
           generate_dummy_data, unknown dims = 1).
  pkg_*    ready models shipped in PyPI wheels: Silero VAD (silero-vad) and PaddleOCR
           PP-OCR (rapidocr-onnxruntime, paddle2onnx exports); wheels fetched with
           `pip download --no-deps` into tools/out/wheels.
  q_*      onnxruntime quantize_static QOperator versions (u8/s8 activations, per-tensor
           and per-channel, s8 weights) of the committed CNNs and of QOpsNet.

References: onnxruntime CPUExecutionProvider, one intra-op thread, ORT_ENABLE_ALL (the
unoptimized run's distance is recorded as ort_opt_diff); versions and CPU flags in the
manifest's [provenance]. Known failures come from tools/known_fail.toml [real-models].

Usage:
  python3 tools/make_real_models.py                 # committed (small) cases
  python3 tools/make_real_models.py --big           # also the big ones (tools/out/real-models)
  python3 tools/make_real_models.py --only hf_gpt2  # regenerate matching cases, keep others
  python3 tools/make_real_models.py --manifest-only # reapply tools/known_fail.toml
"""

import argparse
import fnmatch
import glob
import os
import shutil
import sys
import tempfile
import traceback

import numpy as np
import onnx
from onnx import numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from real_models_common import (SUITE, load_manifest_entries, write_case, write_failure,  # noqa: E402
                                write_manifest)

F32_TOL = {"atol": 1e-3, "rtol": 1e-3}


def light_cases():
    """name -> builder(path) -> (feeds, golden outputs)."""
    d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "light")
    out = {}
    for p in sorted(glob.glob(os.path.join(d, "light_*.onnx"))):
        if p.endswith("_output_0.pb"):
            continue
        base = os.path.splitext(os.path.basename(p))[0]

        def build(path, p=p):
            m = onnx.load(p)
            onnx.save(m, path)
            inits = {i.name for i in m.graph.initializer}
            feeds = {}
            for x in m.graph.input:
                if x.name in inits:
                    continue
                # onnx.backend.test.runner.Runner.generate_dummy_data(random=False)
                shape = tuple(d.dim_value if d.HasField("dim_value") else 1
                              for d in x.type.tensor_type.shape.dim)
                n = np.prod(shape)
                feeds[x.name] = (np.arange(n).reshape(shape) / n).astype(np.float32)
            golden = []
            for i in range(len(m.graph.output)):
                t = onnx.TensorProto()
                with open(os.path.splitext(p)[0] + f"_output_{i}.pb", "rb") as f:
                    t.ParseFromString(f.read())
                golden.append(numpy_helper.to_array(t))
            return feeds, golden
        out[base] = build
    return out


class Gen:
    def __init__(self, only, big, tmp):
        self.only, self.big, self.tmp = only, big, tmp
        self.entries = {}

    def want(self, name):
        return not self.only or any(fnmatch.fnmatch(name, pat) or pat in name for pat in self.only)

    def run(self, name, meta, build, big=False, golden_build=False, arange=False):
        """build(path) -> feeds (or (feeds, golden)). Export failures become skipped cases."""
        if not self.want(name) or (big and not self.big):
            return None
        print(name, flush=True)
        path = os.path.join(self.tmp, name + ".onnx")
        try:
            r = build(path)
            feeds, golden = r if golden_build else (r, None)
        except Exception as e:  # noqa: BLE001 - the export failure is the data
            traceback.print_exc(limit=1)
            self.entries[name] = write_failure(name, meta, e)
            return None
        self.entries[name] = write_case(name, path, feeds, meta, big=big, golden=golden, arange=arange)
        return path, feeds


def torch_families(g):
    from real_models_torch import BIG_CNNS, EXPORTERS, SMALL_CNNS, cnn_case, construct_cases

    float_paths = {}
    for name, (make, desc) in SMALL_CNNS.items():
        for ex in EXPORTERS:
            meta = dict(family="torchvision", exporter=ex, quantized=False,
                        desc=f"{desc}, 1x3x64x64", source=f"{desc}; {EXPORTERS[ex]}", **F32_TOL)
            r = g.run(f"tv_{name}_{ex}", meta, lambda p, make=make, ex=ex: cnn_case(make, 64, 1, ex, p))
            if r and ex == "ts":
                float_paths[name] = r
    for name, make in BIG_CNNS.items():
        for ex in EXPORTERS:
            meta = dict(family="torchvision", exporter=ex, quantized=False,
                        desc=f"torchvision {name}(weights=None), 1x3x224x224",
                        source=f"torchvision {name}; {EXPORTERS[ex]}", **F32_TOL)
            g.run(f"big_tv_{name}_{ex}", meta, lambda p, make=make, ex=ex: cnn_case(make, 224, 2, ex, p),
                  big=True)
    for name, (build, desc, exs) in construct_cases().items():
        for ex in exs.split():
            meta = dict(family="construct", exporter=ex, quantized=False, desc=desc,
                        source=f"tools/real_models_torch.py; {EXPORTERS[ex]}", **F32_TOL)
            g.run(f"pt_{name}_{ex}", meta, lambda p, build=build, ex=ex: build(ex, p))
    return float_paths


def big_quant_family(g):
    """quantize_static of the stock nets at 224x224 (not committed): issue 16 measured
    onnxruntime's QLinearAdd rounding on such a MobileNetV2."""
    from real_models_quant import quantize
    from real_models_torch import BIG_CNNS, cnn_case

    for name in ("mobilenet_v2", "resnet18"):
        for v in ("u8_pc", "s8_pt"):
            case = f"big_q_{name}_{v}"
            if not g.big or not g.want(case):
                continue
            src = os.path.join(g.tmp, f"big_{name}_float.onnx")
            if not os.path.exists(src):
                feeds = cnn_case(BIG_CNNS[name], 224, 2, "ts", src)
            meta = dict(family="quantized", exporter="ts", quantized=True, exact=True,
                        desc=f"quantize_static QOperator {v} of torchvision {name} at 224x224",
                        source=f"onnxruntime.quantization.quantize_static(QOperator, activations "
                               f"{'QUInt8' if v.startswith('u8') else 'QInt8'}, weights QInt8, "
                               f"per_channel={v.endswith('pc')}) after quant_pre_process")
            g.run(case, meta, lambda p, src=src, feeds=feeds, v=v: (quantize(src, p, feeds, v, 7), feeds)[1],
                  big=True)


def hf_family(g):
    from real_models_hf import MODELS, hf_case
    from real_models_torch import EXPORTERS

    for i, (name, (_, _, dyn)) in enumerate(MODELS.items()):
        for ex in EXPORTERS:
            for dynamic in ([False, True] if dyn else [False]):
                case = f"hf_{name}_{ex}" + ("_dyn" if dynamic else "")
                holder = {}

                def build(p, name=name, ex=ex, dynamic=dynamic, holder=holder):
                    feeds, desc = hf_case(name, ex, p, dynamic, 100 + i)
                    holder["desc"] = desc
                    return feeds
                meta = dict(family="transformers", exporter=ex, quantized=False,
                            desc=f"{name}" + (" with symbolic batch/sequence (text) dims, fed batch 2" if dynamic else ", batch 1"),
                            source=f"transformers {name} (random init from config); {EXPORTERS[ex]}",
                            **F32_TOL)
                g.run(case, meta, build)


def quant_family(g, float_paths):
    from real_models_quant import VARIANTS, qops_float, quantize

    from real_models_torch import QUANT_ONLY, SMALL_CNNS, cnn_case

    def source(name):
        """The float model to quantize (the TorchScript export of this run)."""
        if name in float_paths:
            return float_paths[name]
        p = os.path.join(g.tmp, f"{name}_float.onnx")
        if name == "qops":
            return p, qops_float(p)
        make = QUANT_ONLY[name] if name in QUANT_ONLY else SMALL_CNNS[name][0]
        return p, cnn_case(make, 64, 1, "ts", p)

    for name in ["qops", *SMALL_CNNS, "squeezenet1_1"]:
        if not any(g.want(f"q_{name}_{v}") for v in VARIANTS):
            continue
        src, feeds = source(name)
        # all four variants for two nets; one u8 per-channel and one s8 per-tensor for the
        # others (both activation types and both weight granularities, half the bytes)
        for v in (VARIANTS if name in ("qops", "mobilenet_v2") else ("u8_pc", "s8_pt")):
            meta = dict(family="quantized", exporter="ts", quantized=True, exact=True,
                        desc=f"quantize_static QOperator {v} of {name}",
                        source=f"onnxruntime.quantization.quantize_static(QOperator, activations "
                               f"{'QUInt8' if v.startswith('u8') else 'QInt8'}, weights QInt8, "
                               f"per_channel={v.endswith('pc')}) after quant_pre_process")
            g.run(f"q_{name}_{v}", meta, lambda p, src=src, feeds=feeds, v=v: (quantize(src, p, feeds, v, 7), feeds)[1])


def pkg_family(g):
    from real_models_pkg import CASES, PACKAGES, extract

    for name, (pkg, member, feeds, desc, big) in CASES.items():
        meta = dict(family="package", exporter="shipped", quantized=False, desc=desc,
                    source=f"PyPI {pkg}=={PACKAGES[pkg]}: {member}", **F32_TOL)
        g.run(name, meta, lambda p, pkg=pkg, member=member, feeds=feeds: (extract(pkg, member, p), feeds())[1],
              big=big)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--big", action="store_true", help="also the big (not committed) cases")
    ap.add_argument("--only", action="append", default=[], help="case name pattern (repeatable)")
    ap.add_argument("--manifest-only", action="store_true")
    a = ap.parse_args()
    old = {e["name"]: e for e in load_manifest_entries()}
    if a.manifest_only:
        write_manifest(list(old.values()))
        return
    with tempfile.TemporaryDirectory() as tmp:
        g = Gen(a.only, a.big, tmp)
        for name, build in light_cases().items():
            g.run(name, dict(family="onnx-light", exporter="onnx", quantized=False,
                             desc=f"ONNX package {name}, input arange(n)/n, ONNX reference output",
                             source=f"onnx {onnx.__version__} wheel: onnx/backend/test/data/light/{name}.onnx",
                             slow=["puma", "offload"],
                             **F32_TOL), build, golden_build=True, arange=True)
        pkg_family(g)
        float_paths = torch_families(g)
        quant_family(g, float_paths)
        big_quant_family(g)
        hf_family(g)
    if not a.only:
        # a full run replaces every committed case; big ones stay unless regenerated
        old = {n: e for n, e in old.items() if e.get("big")}
    old.update(g.entries)
    write_manifest(list(old.values()))
    committed = {n for n, e in old.items() if not e.get("big") and not e.get("export_error")}
    for d in sorted(os.listdir(SUITE)):
        if os.path.isdir(os.path.join(SUITE, d)) and d not in committed:
            print(f"removing stale {d}")
            shutil.rmtree(os.path.join(SUITE, d))


if __name__ == "__main__":
    main()
