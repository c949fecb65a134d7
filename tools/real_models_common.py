"""Shared pieces of tools/make_real_models.py: onnxruntime references, provenance,
case writing and the manifest of tests/data/real-models. Data generation only."""

import hashlib
import json
import os
import platform
import re
import shutil
import tomllib

import numpy as np
import onnx
import onnxruntime as ort

from _common import DATA, ROOT, known_fail, toml_str

SUITE = os.path.join(DATA, "real-models")
# Big models (not committed) are written here; only their checksums are committed.
BIG_DIR = os.path.join(ROOT, "tools", "out", "real-models")
CHECKSUMS = os.path.join(SUITE, "big-checksums.toml")
# Committed models must stay small (the whole suite well under 40 MB).
SMALL_LIMIT = 3 << 20
OPT_LEVEL = "ORT_ENABLE_ALL"
ENGINES = ("exec", "bind", "lower", "offload", "xbar", "puma", "vpu")


def cpu_flags():
    """The x86 flags that select onnxruntime's MLAS kernels (issue 16 item 5)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    have = set(line.split(":", 1)[1].split())
                    keep = ["sse4_1", "avx", "avx2", "fma", "f16c", "avx512f", "avx512bw",
                            "avx512_vnni", "avx_vnni", "amx_int8"]
                    return [k for k in keep if k in have]
    except OSError:
        pass
    return [platform.machine()]


def provenance():
    import torch
    import torchvision
    import transformers
    return {
        "onnxruntime": ort.__version__, "onnx": onnx.__version__, "torch": torch.__version__,
        "torchvision": torchvision.__version__, "transformers": transformers.__version__,
        "numpy": np.__version__, "provider": "CPUExecutionProvider", "intra_op_num_threads": 1,
        "graph_optimization_level": OPT_LEVEL, "machine": platform.machine(),
        "cpu_flags": cpu_flags(),
    }


def ort_run(model_path, feeds, level=OPT_LEVEL):
    so = ort.SessionOptions()
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])
    names = [i.name for i in sess.get_inputs()]
    return sess.run(None, {n: feeds[n] for n in names})


def ort_reference(model_path, feeds):
    """Outputs at the default level (what users get) and how far the unoptimized run is
    from them (0 for bit-identical), recorded so a mismatch can be judged."""
    outs = ort_run(model_path, feeds)
    plain = ort_run(model_path, feeds, "ORT_DISABLE_ALL")
    diff = 0.0
    for a, b in zip(outs, plain):
        if a.size and a.dtype.kind in "fiu":
            diff = max(diff, float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64)))))
    return outs, diff


def model_ops(model):
    ops = set()

    def walk(g):
        for n in g.node:
            ops.add(n.op_type if n.domain in ("", "ai.onnx") else f"{n.domain}.{n.op_type}")
            for a in n.attribute:
                if a.type == onnx.AttributeProto.GRAPH:
                    walk(a.g)
                for sg in a.graphs:
                    walk(sg)
    walk(model.graph)
    return sorted(ops)


def symbolic_dims(model, feeds):
    """dim_param name -> value taken from the fed input's shape (as onnxruntime binds it)."""
    dims = {}
    inits = {i.name for i in model.graph.initializer}
    for vi in model.graph.input:
        if vi.name in inits:
            continue
        shape = feeds[vi.name].shape
        for k, d in enumerate(vi.type.tensor_type.shape.dim):
            # "?" (paddle2onnx) names no dim: each is its own, bound from its input.
            if d.HasField("dim_param") and d.dim_param and d.dim_param != "?":
                dims[d.dim_param] = int(shape[k])
    return dims


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def write_case(name, model_path, feeds, meta, big=False, golden=None, arange=False):
    """Run onnxruntime, write <suite>/<name>/ (or tools/out/real-models/<name>/ for big
    models) and return the manifest entry. `feeds`: {input name: array}; `golden`: outputs
    to commit instead of onnxruntime's (the ONNX package's own references); `arange`: the
    inputs are arange(n)/n, which the harness makes itself (no input files)."""
    model = onnx.load(model_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    in_names = [vi.name for vi in model.graph.input if vi.name not in inits]
    outs, diff = ort_reference(model_path, feeds)
    if golden is not None:
        meta = dict(meta)
        meta["ort_vs_golden"] = max(float(np.max(np.abs(a - b))) for a, b in zip(outs, golden))
        outs = golden
    size = os.path.getsize(model_path)
    if not big and size > SMALL_LIMIT:
        raise RuntimeError(f"{name}: {size} bytes is too big to commit; make it a big case")
    d = os.path.join(BIG_DIR if big else SUITE, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    shutil.copy(model_path, os.path.join(d, "model.onnx"))
    for i, n in enumerate([] if arange else in_names):
        np.save(os.path.join(d, f"input_{i}.npy"), np.ascontiguousarray(feeds[n]))
    for i, a in enumerate(outs):
        np.save(os.path.join(d, f"output_{i}.npy"), np.ascontiguousarray(a))
    entry = dict(meta)
    entry.update(name=name, ops=model_ops(model), bytes=size, ort_opt_diff=diff,
                 opset=next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0))
    if arange:
        entry["inputs"] = "arange"
    dims = symbolic_dims(model, feeds)
    if dims:
        entry["dims"] = dims
    if any(not d.HasField("dim_value") or d.dim_value < 0
           for vi in model.graph.input if vi.name not in inits
           for d in vi.type.tensor_type.shape.dim):
        entry["dynamic"] = True  # symbolic, unnamed or -1 dims: pimkit must bind them
    if big:
        entry["big"] = True
        entry["sha256"] = {f: sha256(os.path.join(d, f)) for f in sorted(os.listdir(d))}
    print(f"  {name}: {size / 1e6:.2f} MB, {len(entry['ops'])} ops, ORT opt diff {diff:.2e}", flush=True)
    return entry


def error_summary(exc):
    """The root cause of an exception chain as 'Type: first line' (torch.onnx wraps the
    real cause in pages of advice)."""
    e = exc
    while (e.__cause__ or e.__context__) is not None:
        e = e.__cause__ or e.__context__
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else ''}"[:400]


def write_failure(name, meta, exc):
    """An export or onnxruntime failure: no data, recorded in the manifest as `skipped`."""
    e = dict(meta)
    e.update(name=name, export_error=error_summary(exc))
    print(f"  {name}: GENERATOR FAILED: {e['export_error']}", flush=True)
    return e


# ------------------------------------------------------------------ manifest

HEADER = """# Generated by tools/make_real_models.py; do not edit (known failures: tools/known_fail.toml
# [real-models], keys "case/engine"). One [case.NAME] per exported model; [case.NAME.ENGINE]
# says what the harness (crates/conformance/tests/real_models.rs) expects of that engine:
# pass, or known-fail with its reason. `big = true`: not committed, regenerate with
# `python3 tools/make_real_models.py --big` (files in tools/out/real-models/, checked against
# big-checksums.toml) and run the #[ignore]d trials with `cargo test -p pimkit-conformance
# --test real_models -- --ignored`. `skipped`: the export itself failed (export_error).
"""


def engines_for(entry):
    if entry.get("export_error"):
        return []
    eng = ["exec", "bind"] if entry.get("dims") or entry.get("dynamic") else ["exec"]
    eng += ["lower", "offload", "xbar", "puma"]
    if entry.get("quantized"):
        eng.append("vpu")
    return eng


def toml_value(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return toml_str(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{toml_str(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    raise TypeError(v)


KEYS = ("status", "desc", "family", "source", "exporter", "quantized", "exact", "atol", "rtol",
        "big", "slow", "inputs", "dynamic", "dims", "opset", "bytes", "ort_opt_diff", "ort_vs_golden", "export_error", "regen", "ops")


def write_manifest(entries):
    kf = known_fail("real-models")
    os.makedirs(SUITE, exist_ok=True)
    with open(os.path.join(SUITE, "manifest.toml"), "w") as f:
        f.write(HEADER)
        f.write("\n[provenance]\n")
        for k, v in provenance().items():
            f.write(f"{k} = {toml_value(v)}\n")
        for e in sorted(entries, key=lambda e: e["name"]):
            e = dict(e)
            e["status"] = "skipped" if e.get("export_error") else "run"
            f.write(f"\n[case.{e['name']}]\n")
            for k in KEYS:
                if k in e:
                    f.write(f"{k} = {toml_value(e[k])}\n")
            for eng in engines_for(e):
                reason = kf.get(f"{e['name']}/{eng}")
                f.write(f"[case.{e['name']}.{eng}]\n")
                if reason is None:
                    f.write('status = "pass"\n')
                else:
                    f.write(f'status = "known-fail"\nreason = {toml_str(reason)}\n')
    big = {e["name"]: e["sha256"] for e in entries if e.get("big") and "sha256" in e}
    if os.path.exists(CHECKSUMS):
        # a regenerated big case whose bytes changed: say so (exporter or version drift)
        with open(CHECKSUMS, "rb") as f:
            old = tomllib.load(f)
        for name, files in big.items():
            for fn, h in files.items():
                if name in old and old[name].get(fn, h) != h:
                    print(f"note: {name}/{fn}: checksum changed from the committed one")
    with open(CHECKSUMS, "w") as f:
        f.write("# sha256 of the big (not committed) real-model cases, written by\n"
                "# tools/make_real_models.py --big; the #[ignore]d trials check them.\n")
        for name in sorted(big):
            f.write(f"\n[{name}]\n")
            for fn, h in big[name].items():
                f.write(f"{toml_str(fn)} = {toml_str(h)}\n")


def load_manifest_entries():
    """Existing case entries (to rewrite the manifest without regenerating models)."""
    path = os.path.join(SUITE, "manifest.toml")
    if not os.path.exists(path):
        return []
    with open(path, "rb") as f:
        m = tomllib.load(f)
    out = []
    sums = {}
    if os.path.exists(CHECKSUMS):
        with open(CHECKSUMS, "rb") as f:
            sums = tomllib.load(f)
    for name, c in m.get("case", {}).items():
        e = {k: v for k, v in c.items() if k not in ENGINES and k != "status"}
        e["name"] = name
        if name in sums:
            e["sha256"] = sums[name]
        out.append(e)
    return out


def dump_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=1, sort_keys=True)
