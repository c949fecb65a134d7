#!/usr/bin/env python3
"""Cross-check every zoo model against onnxruntime.

For each entry of `pimkit zoo list --json`: export it at small parameters
(`pimkit zoo export NAME -p k=v -o FILE.onnx`), load the file in onnxruntime, run it on
random inputs, run `pimkit exec FILE.onnx --input NAME=FILE.npy --out DIR --json` on the
same inputs, and compare. Float outputs pass within atol/rtol (below); integer outputs
and quantized models' outputs are reported as exact or by their largest difference.
Models with s8 weights are also run in onnxruntime as a "u8-weight twin" (weights and
weight zero points shifted by +128, the same arithmetic): on x86 CPUs without VNNI,
onnxruntime's u8 x s8 kernels saturate pair sums at 16 bits and disagree with the exact
result that pimkit computes; the twin uses the non-saturating u8 x u8 kernels, and the
verdict for such models is the comparison with the twin.
The summary goes to tools/out/check_zoo_ort.txt (committed: the last run's result).

Usage: python3 tools/check_zoo_ort.py [--pimkit "target/debug/pimkit"] [--only NAME ...]
"""

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort

from _common import u8_weight_twin

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tools", "out", "check_zoo_ort.txt")
ATOL, RTOL = 1e-3, 1e-3

# Small values for parameters an entry may have (used only when below the default);
# anything else keeps its default.
SMALL = {
    "n": 256, "hidden": 64, "heads": 4, "ffn": 128, "ctx": 8, "rotary": 8, "res": 64,
    "classes": 10, "m": 24, "k": 24, "c": 8, "h": 9, "w": 9, "l": 32, "input": 64, "out": 64,
}

ORT_DTYPES = {
    "tensor(float)": np.float32, "tensor(float16)": np.float16, "tensor(int64)": np.int64,
    "tensor(int32)": np.int32, "tensor(int8)": np.int8, "tensor(uint8)": np.uint8,
    "tensor(bool)": np.bool_,
}


def sh(cmd, timeout=900):
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError((r.stderr or r.stdout).strip().splitlines()[-1] if (r.stderr or r.stdout) else
                           f"exit {r.returncode}")
    return r.stdout


def random_input(rng, meta):
    dt = ORT_DTYPES.get(meta.type)
    if dt is None:
        raise RuntimeError(f"input {meta.name} has type {meta.type}")
    shape = [d if isinstance(d, int) else 1 for d in meta.shape]
    if dt in (np.float32, np.float16):
        return rng.normal(0, 1, shape).astype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    info = np.iinfo(dt)
    return rng.integers(max(info.min, -100), min(info.max, 100) + 1, shape).astype(dt)


def compare(want, got):
    """-> (ok, text)."""
    if want.shape != got.shape:
        return False, f"shape {got.shape} vs ORT {want.shape}"
    if want.dtype != got.dtype:
        return False, f"dtype {got.dtype} vs ORT {want.dtype}"
    if want.dtype.kind != "f":
        diff = int(np.max(np.abs(want.astype(np.int64) - got.astype(np.int64)))) if want.size else 0
        return diff == 0, "exact" if diff == 0 else f"max int diff {diff}"
    w, g = want.astype(np.float64), got.astype(np.float64)
    if np.array_equal(w, g, equal_nan=True):
        return True, "exact"
    err = np.abs(w - g)
    ok = bool(np.all((err <= ATOL + RTOL * np.abs(w)) | (np.isnan(w) & np.isnan(g))))
    return ok, f"max abs err {np.nanmax(err):.2e}"


def check(pimkit, entry, tmp, rng):
    name = entry["name"]
    params = []
    for p in entry.get("params", []):
        small = SMALL.get(p["name"])
        if small is not None and str(p["default"]).isdigit() and small < int(p["default"]):
            params.append(f"{p['name']}={small}")
    model = os.path.join(tmp, f"{name}.onnx")
    sh(pimkit + ["zoo", "export", name, "-o", model] + sum((["-p", p] for p in params), []))
    nodes = len(onnx.load(model, load_external_data=False).graph.node)
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    feeds, args = {}, []
    for meta in sess.get_inputs():
        a = random_input(rng, meta)
        feeds[meta.name] = a
        path = os.path.join(tmp, f"{name}.in{len(args)}.npy")
        np.save(path, a)
        args += ["--input", f"{meta.name}={path}"]
    t0 = time.time()
    wants = sess.run(None, feeds)
    t_ort = time.time() - t0
    outdir = os.path.join(tmp, f"{name}.out")
    t0 = time.time()
    res = json.loads(sh(pimkit + ["exec", model, "--out", outdir, "--json"] + args))
    t_pim = time.time() - t0
    gots = [np.load(o["file"]) for o in res["outputs"]]
    if len(gots) != len(wants):
        return False, params, nodes, f"{len(gots)} outputs vs ORT {len(wants)}", t_ort, t_pim
    results = [compare(w, g) for w, g in zip(wants, gots)]
    ok = all(r[0] for r in results)
    text = "; ".join(r[1] for r in results)
    twin = u8_weight_twin(onnx.load(model))
    if twin is not None:
        tw = ort.InferenceSession(twin.SerializeToString(), so, providers=["CPUExecutionProvider"]).run(None, feeds)
        twin_results = [compare(w, g) for w, g in zip(tw, gots)]
        ok = all(r[0] for r in twin_results)
        text = (f"vs ORT (s8 weights): {text} | vs ORT u8-weight twin: "
                + "; ".join(r[1] for r in twin_results))
    return ok, params, nodes, text, t_ort, t_pim


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--pimkit", default="cargo run -q -p pimkit --",
                    help="command that runs the pimkit CLI (default: %(default)s)")
    ap.add_argument("--only", nargs="*", help="check only these entries")
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    pimkit = shlex.split(args.pimkit)
    entries = json.loads(sh(pimkit + ["zoo", "list", "--json"]))
    if args.only:
        entries = [e for e in entries if e["name"] in args.only]
    rng = np.random.default_rng(0)
    lines, n_ok = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for e in entries:
            try:
                ok, params, nodes, text, t_ort, t_pim = check(pimkit, e, tmp, rng)
                status = "ok" if ok else "MISMATCH"
                detail = f"{nodes} nodes, ort {t_ort:.2f}s, pimkit exec {t_pim:.2f}s: {text}"
            except Exception as ex:  # report and keep going
                status, params, detail = "ERROR", [], str(ex)[:300]
                ok = False
            n_ok += ok
            line = f"{status:9s} {e['name']:24s} {' '.join(params) or '-':28s} {detail}"
            print(line, flush=True)
            lines.append(line)
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(f"# tools/check_zoo_ort.py: pimkit zoo models vs onnxruntime {ort.__version__}\n")
        f.write(f"# float tolerance atol={ATOL} rtol={RTOL}; integer outputs exact\n")
        f.write("# s8-weight models are judged against the u8-weight twin (see the script's doc)\n")
        f.write(f"# {n_ok}/{len(entries)} ok\n")
        f.write("\n".join(lines) + "\n")
    print(f"{n_ok}/{len(entries)} ok -> {args.out}")
    sys.exit(0 if n_ok == len(entries) else 1)


if __name__ == "__main__":
    main()
