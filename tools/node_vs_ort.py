#!/usr/bin/env python3
"""One part of a model, pimkit's interpreter against onnxruntime, side by side.

Usage (builds nothing; the venv of tools/requirements-bench.txt; the models and inputs
that `tools/bench_vs_ort.py --keep tools/out/bench` writes):

    # onnxruntime's own time per node (its profiler), slowest first
    .venv/bin/python tools/node_vs_ort.py profile tools/out/bench/MobileNetV2.onnx
    # the subgraph from tensor FROM to tensor TO cut out (onnx.utils.extract_model), its
    # input made by onnxruntime running the model up to FROM, then both runtimes timed
    .venv/bin/python tools/node_vs_ort.py part tools/out/bench/MobileNetV2.onnx \\
        --from /Flatten_output_0 --to output [--pimkit target/release/pimkit] [--runs 200]

Single thread on both sides, process CPU time, median of the runs after one warm-up.
The model's input is MODEL.input.npy (as bench_vs_ort.py writes it). The cut model, its
input and onnxruntime's profile go to a temporary directory; nothing else is written.
"""

import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnx.utils
import onnxruntime as ort


def session(path, profile_dir=None):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    if profile_dir is not None:
        # The profile's JSON goes to the temporary directory, not the working one.
        so.enable_profiling = True
        so.profile_file_prefix = os.path.join(profile_dir, "ort_profile")
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def model_input(model):
    s = session(model)
    return {s.get_inputs()[0].name: np.load(model + ".input.npy")}


def profile(a, tmp):
    s = session(a.model, profile_dir=tmp)
    feed = model_input(a.model)
    for _ in range(a.runs):
        s.run(None, feed)
    events = json.load(open(s.end_profiling()))
    per_node = collections.defaultdict(list)
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith("_kernel_time"):
            per_node[e["name"][: -len("_kernel_time")]].append(e["dur"])
    rows = sorted(((statistics.median(v) / 1000, k) for k, v in per_node.items()), reverse=True)
    print(f"onnxruntime per node (median of {a.runs} runs, ms; total {sum(r[0] for r in rows):.3f})")
    for ms, name in rows[: a.top]:
        print(f"{ms:8.3f}  {name}")


def part(a, tmp):
    cut = os.path.join(tmp, "part.onnx")
    onnx.utils.extract_model(a.model, cut, [a.src], [a.dst])
    feed = model_input(a.model)
    if a.src in feed:
        x = feed[a.src]
    else:
        before = os.path.join(tmp, "before.onnx")
        onnx.utils.extract_model(a.model, before, list(feed), [a.src])
        x = session(before).run(None, feed)[0]
    np.save(cut + ".input.npy", x)
    s = session(cut)
    ts = []
    for _ in range(a.runs + 1):
        t = time.process_time()
        s.run(None, {a.src: x})
        ts.append(time.process_time() - t)
    ort_ms = statistics.median(ts[1:]) * 1e3
    out = subprocess.run(
        [a.pimkit, "--threads", "1", "exec", cut, "--input", f"{a.src}={cut}.input.npy",
         "--runs", str(a.runs), "--json"],
        capture_output=True, text=True, check=True,
    ).stdout
    pk_ms = statistics.median(json.loads(out)["cpu_times_ms"])
    print(f"{a.src} -> {a.dst}: onnxruntime {ort_ms:.3f} ms, pimkit {pk_ms:.3f} ms, "
          f"ratio {pk_ms / ort_ms:.2f}x (CPU time, median of {a.runs})")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    pr = sub.add_parser("profile")
    pr.add_argument("model")
    pr.add_argument("--runs", type=int, default=25)
    pr.add_argument("--top", type=int, default=15)
    pa = sub.add_parser("part")
    pa.add_argument("model")
    pa.add_argument("--from", dest="src", required=True)
    pa.add_argument("--to", dest="dst", required=True)
    pa.add_argument("--pimkit", default="target/release/pimkit")
    pa.add_argument("--runs", type=int, default=200)
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        (profile if a.cmd == "profile" else part)(a, tmp)


if __name__ == "__main__":
    sys.exit(main())
