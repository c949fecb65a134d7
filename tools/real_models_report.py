#!/usr/bin/env python3
"""Turn the real-model harness's results into docs/real-models.md (model x engine table and
the failure inventory) and, with --accept, into tools/known_fail.toml [real-models].

  PIMKIT_REAL_MODELS_RESULTS=/tmp/rm.jsonl cargo test -p pimkit-conformance --test real_models
  python3 tools/real_models_report.py /tmp/rm.jsonl [--accept] [--notes FILE]

--accept: every failing cell becomes a known failure with its cause and exact first error
line, every passing cell is removed from the known failures, then the manifest is
rewritten (make_real_models.py --manifest-only). Results of cells not in the file (e.g. the
#[ignore]d big cases when run without --ignored) keep their old entries.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tomllib
from collections import defaultdict

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import KNOWN_FAIL, ROOT, toml_str  # noqa: E402
from real_models_common import ENGINES, SUITE  # noqa: E402

DOC = os.path.join(ROOT, "docs", "real-models.md")

# (cause id, regex on the error text, description). First match wins; order matters.
# Import/interpreter causes; an engine's own errors are classified by ENGINE_CAUSES.
CAUSES = [
    ("panic", r"^PANIC", "a panic (always a bug: pimkit must return an error)"),
    ("data", r"^test data", "test data missing (big case not generated)"),
    ("control-flow", r"operator '(If|Loop|Scan)'", "control flow (If/Loop/Scan) not in the IR"),
    ("unsupported-op", r"unsupported operator '([^']+)'", "operator not supported by the importer"),
    ("symbolic-dim", r"the graph expects|symbolic|dim_param|set to 1|negative dimension|window does not fit", "symbolic/unknown dims not bound from the inputs"),
    ("runtime-operand", r"computed at run time|must be (a )?constant", "operand computed at run time (not folded)"),
    ("fold-limit", r"too large to fold", "constant folding size limit"),
    ("dtype", r"dtype", "dtype not supported by the op"),
    ("mismatch", r"^mismatch", "runs but differs from onnxruntime"),
]
ENGINE_CAUSES = [
    (r"is not float; PUMA computes", "quantized model (integer tensors)"),
    (r"PUMA takes float inputs", "integer (token id) graph input"),
    (r"(\w+) is not supported by the PUMA compiler", "op {0} not supported"),
    (r"only 2-D convolutions", "1-D convolution"),
    (r"shared memory overflows", "tile shared memory overflow (even per layer)"),
    (r"unsupported op(?:erator)? '?(\w+)'?", "op {0} not supported"),
    (r"no (weighted )?layers", "no mappable layers"),
]


def classify(err):
    """-> (cause id, detail) for an error text of the harness."""
    m = re.match(r"^([a-z]+) \(pimkit-[a-z]+\): (.*)", err, re.S)
    if m and m.group(1) not in ("import", "run"):
        eng, msg = m.group(1), m.group(2)
        for rx, label in ENGINE_CAUSES:
            mm = re.search(rx, msg)
            if mm:
                return f"{eng}: " + label.format(*mm.groups()), ""
        for cid, rx, _ in CAUSES:
            if cid not in ("data", "mismatch") and re.search(rx, msg, re.M):
                return f"{eng}: {cid}", ""
        return f"{eng}: other", ""
    for cid, rx, _ in CAUSES:
        m = re.search(rx, err, re.M)
        if m:
            detail = m.group(1) if m.groups() else ""
            return cid, detail
    return "other", ""


def first_line(err):
    """The error's first line, without the importer's list of supported ops."""
    line = err.strip().splitlines()[0] if err.strip() else ""
    return line.split(": pimkit supports")[0][:300]


def load_results(path):
    res = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                r = json.loads(line)
                res[(r["case"], r["engine"])] = r
    return res


def load_manifest():
    with open(os.path.join(SUITE, "manifest.toml"), "rb") as f:
        return tomllib.load(f)


def cell_text(r):
    if r is None:
        return "n/a"
    if r["ok"]:
        return "pass"
    cid, detail = classify(r["error"])
    return f"FAIL {cid}" + (f" `{detail}`" if detail else "")


def write_doc(m, res, path):
    cases = m["case"]
    prov = m.get("provenance", {})
    fams = defaultdict(list)
    for name, c in sorted(cases.items()):
        fams[c.get("family", "?")].append(name)
    out = []
    out.append("# The real-model corpus\n")
    out.append(
        "Models as users bring them: torchvision CNNs and `transformers` architectures exported by\n"
        "both torch.onnx exporters (`_ts`: TorchScript, `dynamo=False`, opset 17; `_dy`: the default\n"
        "dynamo exporter, opset 18), PyTorch constructs that broke pimkit before (`pt_*`), the ONNX\n"
        "package's nine `light` real models (`light_*`), ready models shipped in PyPI wheels\n"
        "(`pkg_*`: Silero VAD from `silero-vad`, PaddleOCR paddle2onnx exports from\n"
        "`rapidocr-onnxruntime`) and onnxruntime `quantize_static` QOperator versions (`q_*`:\n"
        "u8/s8 activations, per-tensor `_pt` / per-channel `_pc` s8 weights). Exported models have\n"
        "random weights (fixed seeds); nothing is downloaded at test time. Issue 16 item 7.\n\n"
        "Committed cases (small configs, 64x64 CNNs; about 24 MB in all, `du -sh\n"
        "tests/data/real-models`) live in\n"
        "`tests/data/real-models/<case>/` (`model.onnx`, `input_<i>.npy`, `output_<i>.npy`; the\n"
        "`light_*` inputs are made by the harness, `arange(n)/n` as the ONNX backend runner feeds\n"
        "them). Big cases (`big_*`: the stock torchvision nets at 224x224, and the larger `pkg_*`)\n"
        "are regenerated into `tools/out/real-models/`; the sha256 of their files is committed in\n"
        "`tests/data/real-models/big-checksums.toml` and the generator says when a regenerated file\n"
        "differs from it. Their trials are `#[ignore]`d. The manifest\n"
        "(`tests/data/real-models/manifest.toml`) records each case's source, exporter, opset, ops,\n"
        "symbolic dims and per-engine status; known failures live in `tools/known_fail.toml`\n"
        "`[real-models]` (`\"case/engine\" = \"cause: first error line\"`). A known failure must keep\n"
        "failing at the same stage (import, run, mismatch, engine, panic); one that passes or moves\n"
        "to another stage fails the harness.\n")
    out.append("## Regenerate and rerun\n")
    out.append("```sh\n"
               "/work/venv/bin/python tools/make_real_models.py            # committed cases\n"
               "/work/venv/bin/python tools/make_real_models.py --big      # + stock nets at 224x224 in tools/out/real-models\n"
               "cargo test -p pimkit-conformance --test real_models         # every committed cell\n"
               "cargo test -p pimkit-conformance --test real_models -- --ignored big_   # big cases (and PUMA/offload on light_*: --ignored)\n"
               "PIMKIT_REAL_MODELS_RESULTS=/tmp/rm.jsonl cargo test -p pimkit-conformance --test real_models -- --include-ignored\n"
               "/work/venv/bin/python tools/real_models_report.py /tmp/rm.jsonl [--accept]   # this page (+ known failures)\n"
               "```\n")
    out.append("Times on the 2-core development machine: the default harness run (committed cells, "
               "big and slow ones ignored) takes about 35 s with a warm native-code cache and about 8 "
               "minutes with a cold one (every lowered model is compiled with `cc` once; the cache is "
               "`$PIMKIT_CACHE_DIR` or `~/.cache/pimkit`): `time cargo test -p pimkit-conformance "
               "--test real_models`. PUMA's per-layer run of one 224x224 model takes 2 to 10 minutes, "
               "so those cells are ignored and most big PUMA cells were not run for this page (`—`); "
               "each cell's time is in the results file (`secs`).\n")
    out.append(f"References: onnxruntime {prov.get('onnxruntime')} {prov.get('provider')}, "
               f"{prov.get('intra_op_num_threads')} intra-op thread, {prov.get('graph_optimization_level')}; "
               f"torch {prov.get('torch')}, torchvision {prov.get('torchvision')}, transformers "
               f"{prov.get('transformers')}, onnx {prov.get('onnx')}; CPU flags "
               f"{', '.join(prov.get('cpu_flags', []))}. Light models: the ONNX package's own "
               "`output_0.pb`. Floats compare with atol = rtol = 1e-3, quantized models bit-exactly. "
               "The quantized models keep `quantize_static`'s defaults (full-range s8 weights, no "
               "`reduce_range`), as users get them: on an x86 CPU without VNNI onnxruntime's u8 x s8 "
               "kernels saturate pair sums (docs/testing.md) and would give other references; these "
               "were made on a CPU with VNNI (flags above).\n")
    out.append("## Cells\n")
    out.append("exec: pimkit-interp vs the reference outputs, symbolic dims given (as `--dim`); "
               "bind: the same with no dims given (models with symbolic dims only); lower: loop nests compiled natively and run, "
               "vs the reference; offload: Torch-PIM analysis; xbar: crossbar mapping; puma: per-layer "
               "compile + simulation; vpu: network run vs the reference (quantized models only). "
               "`pass`, `FAIL cause` (see the inventory), `n/a` (engine does not apply), `—` (not run).\n")
    total = defaultdict(lambda: [0, 0])
    for fam, names in fams.items():
        out.append(f"\n### {fam}\n")
        out.append("| model | " + " | ".join(ENGINES) + " | description |")
        out.append("|---|" + "---|" * (len(ENGINES) + 1))
        for n in names:
            c = cases[n]
            if c.get("export_error"):
                out.append(f"| {n} | export failed: {c['export_error'][:120]} |" + " |" * len(ENGINES))
                continue
            cells = []
            for e in ENGINES:
                if e not in c:
                    cells.append("n/a")
                    continue
                r = res.get((n, e))
                if r and e != "exec" and not r["ok"] and re.match(r"^(import|run) \(", r["error"]) \
                        and not res.get((n, "exec"), {}).get("ok", True) and e != "bind":
                    cells.append("FAIL (import, as exec)")
                else:
                    cells.append(cell_text(r) if r else "—")
                if r:
                    total[e][0 if r["ok"] else 1] += 1
            big = " (big, not committed)" if c.get("big") else ""
            out.append(f"| {n} | " + " | ".join(cells) + f" | {c.get('desc', '')}{big} |")
    out.append("\n## Totals (cells run)\n")
    out.append("| engine | pass | fail |\n|---|---|---|")
    for e in ENGINES:
        out.append(f"| {e} | {total[e][0]} | {total[e][1]} |")
    out.append("\n" + inventory(m, res))
    out.append(op_gaps(m, res))
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def inventory(m, res):
    """Failures grouped by cause. Import/interpreter causes are counted per model from the
    model's exec cell (the first thing that breaks for every engine); bind cells (no dims
    given) and each engine's own errors are counted separately."""
    groups = {"import": defaultdict(lambda: defaultdict(list)),
              "bind": defaultdict(lambda: defaultdict(list)),
              "engine": defaultdict(lambda: defaultdict(list))}
    for (case, eng), r in sorted(res.items()):
        if r["ok"]:
            continue
        cid, detail = classify(r["error"])
        key = f"{cid}: {detail}" if detail else cid
        if eng == "exec":
            g = "import"
        elif eng == "bind":
            g = "bind"
            exec_ok = res.get((case, "exec"), {}).get("ok")
            if not exec_ok:
                continue  # the exec cell already counts this model's blocker
        elif re.match(r"^(import|run|test data)\b", r["error"]):
            continue  # the same import failure as the exec cell
        elif r["error"].startswith("mismatch") and \
                res.get((case, "exec"), {}).get("error", "").startswith("mismatch"):
            continue  # the engine agrees with the interpreter; exec counts the difference
        else:
            g = "engine"
        groups[g][key][first_line(r["error"])].append(case if g != "engine" else f"{case}/{eng}")
    lines = ["## Failure inventory\n",
             "Generated by `tools/real_models_report.py` from one run of the harness. "
             "**Import/interpreter** causes count models whose exec cell fails (every engine of "
             "such a model fails the same way at import). **bind** counts models whose exec "
             "passes with `--dim`-style dims but fails when the dims are left to pimkit. "
             "**Engine** causes count cells whose model imports and runs but the engine refuses.\n"]
    titles = {"import": "Import / interpreter (per model, exec cell)",
              "bind": "Symbolic dims not bound from the inputs (bind cell, exec passes)",
              "engine": "Engine-specific (per cell)"}
    for g in ("import", "bind", "engine"):
        by = groups[g]
        lines.append(f"\n### {titles[g]}\n")
        if not by:
            lines.append("none\n")
            continue
        lines += ["| cause | count |", "|---|---|"]
        order = sorted(by.items(), key=lambda kv: (-sum(len(v) for v in kv[1].values()), kv[0]))
        for key, errs in order:
            lines.append(f"| {key} | {sum(len(v) for v in errs.values())} |")
        for key, errs in order:
            lines.append(f"\n#### {key}\n")
            for err, who in sorted(errs.items(), key=lambda kv: -len(kv[1])):
                shown = ", ".join(who[:14]) + (f" and {len(who) - 14} more" if len(who) > 14 else "")
                lines.append(f"- `{err}` ({len(who)}): {shown}")
    return "\n".join(lines) + "\n"


def supported_ops(res):
    """The importer's supported-op lists, as its 'unsupported operator' errors print them:
    {domain: set}. Empty when no such error was seen."""
    sup = {}
    for r in res.values():
        m = re.search(r"unsupported operator '[^']+' \(domain '([^']*)'.*?pimkit supports ([^;]*);",
                      r["error"], re.S)
        if m:
            sup.setdefault(m.group(1), set()).update(x.strip() for x in m.group(2).split(","))
    return sup


def op_gaps(m, res):
    """Every op of every model (subgraphs included) that the importer does not list, so the
    whole gap is visible, not only the first op each model stops at."""
    sup = supported_ops(res)
    if not sup:
        return ""
    gaps = defaultdict(list)
    for name, c in sorted(m["case"].items()):
        for op in c.get("ops", []):
            dom, _, typ = op.rpartition(".")
            if dom in sup and typ not in sup[dom] or (dom == "" and typ not in sup.get("", set())):
                gaps[op].append(name)
    lines = ["\n## Operators the importer lacks, over all models\n",
             "From the `ops` lists in the manifest (subgraphs included) against the supported-op "
             "lists the importer prints; a model counts once per op, even when an earlier op stops "
             "its import.\n", "| op | models | which |", "|---|---|---|"]
    for op, who in sorted(gaps.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(who[:10]) + (f" and {len(who) - 10} more" if len(who) > 10 else "")
        lines.append(f"| {op} | {len(who)} | {shown} |")
    return "\n".join(lines) + "\n"


def accept(m, res):
    """Rewrite tools/known_fail.toml [real-models] from the results."""
    with open(KNOWN_FAIL, "rb") as f:
        kf = tomllib.load(f).get("real-models", {})
    for (case, eng), r in res.items():
        key = f"{case}/{eng}"
        if r["ok"]:
            kf.pop(key, None)
        else:
            cid, detail = classify(r["error"])
            kf[key] = f"{cid}{' ' + detail if detail else ''}: {first_line(r['error'])}"
    kf = {k: v for k, v in kf.items() if k.split("/")[0] in m["case"]}
    with open(KNOWN_FAIL) as f:
        text = f.read()
    head, sep, rest = text.partition("\n[real-models]\n")
    tail = ""
    if sep:
        nxt = re.search(r"^\[", rest, re.M)
        tail = rest[nxt.start():] if nxt else ""
    body = "".join(f"{toml_str(k)} = {toml_str(v)}\n" for k, v in sorted(kf.items()))
    with open(KNOWN_FAIL, "w") as f:
        f.write(head.rstrip("\n") + "\n\n[real-models]\n" + body + ("\n" + tail if tail else ""))
    subprocess.check_call([sys.executable, os.path.join(ROOT, "tools", "make_real_models.py"),
                           "--manifest-only"])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--accept", action="store_true")
    ap.add_argument("--notes", help="also write the inventory (with the table) to this file")
    a = ap.parse_args()
    res = load_results(a.results)
    m = load_manifest()
    if a.accept:
        accept(m, res)
        m = load_manifest()
    write_doc(m, res, DOC)
    if a.notes:
        with open(DOC) as f:
            text = f.read()
        with open(a.notes, "w") as f:
            f.write("# Corpus failures (issue 16 item 7), for the lead\n\n"
                    "Written by tools/real_models_report.py on branch `corpus`; the same content "
                    "as docs/real-models.md there.\n\n" + text)
    print(f"wrote {DOC}")


if __name__ == "__main__":
    main()
