"""Crossbar design-space sweep on Ray: zoo models x crossbar sizes x budgets.

Each (model, crossbar size, budget) point is one Ray task running pimkit's crossbar
mapper (pimkit.xbar.sweep on that point); the rows come back in order and are written to
one CSV, and a plot of speedup over budget per model and crossbar size to one SVG.

    pip install ./crates/python ray pandas
    python examples/ray_sweep.py --address local --out ray-sweep/     # a local Ray instance
    python examples/ray_sweep.py --address auto --out ray-sweep/      # an existing cluster

See docs/distributed.md.
"""

import argparse
import csv
import os

import pimkit
from pimkit import distributed

MODELS = [
    "zoo:rnc_mobilenet_v3_small?weights=none",
    "zoo:lenet5?weights=none",
    "zoo:mobilenet_v2?weights=none&res=96",
]
XBARS = [64, 128, 256]
BUDGETS = [0.8, 1.0, 1.2, 1.8]
SAMPLES = 8


def point(item):
    """One sweep point (runs in a Ray task)."""
    model, xbar, budget = item
    r = pimkit.xbar.sweep(model, xbar=xbar, budgets=[budget], sdw=[1], samples=[SAMPLES])
    return [dict(model=r["model"], xbar=xbar, **row) for row in r["rows"]]


def svg_plot(rows, path):
    """Speedup over budget, one line per (model, crossbar size); no plotting library."""
    W, H, L, B = 720, 420, 60, 40
    pts = [r for r in rows if r["speedup"] is not None]
    if not pts:
        return
    ymax = max(r["speedup"] for r in pts) * 1.1
    bmin, bmax = min(BUDGETS), max(BUDGETS)
    x = lambda b: L + (b - bmin) / (bmax - bmin) * (W - L - 200)
    y = lambda s: H - B - s / ymax * (H - 2 * B)
    colors = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="11">',
           f'<line x1="{L}" y1="{H-B}" x2="{W-200}" y2="{H-B}" stroke="black"/>',
           f'<line x1="{L}" y1="{B}" x2="{L}" y2="{H-B}" stroke="black"/>',
           f'<text x="{(W-200)/2}" y="{H-8}">budget (x ISAAC-like crossbars)</text>',
           f'<text x="8" y="{B-12}">speedup over the ISAAC-like mapping ({SAMPLES} samples)</text>']
    for b in BUDGETS:
        out.append(f'<text x="{x(b)-8:.1f}" y="{H-B+14}">{b}</text>')
    for k in range(5):
        s = ymax * k / 4
        out.append(f'<text x="{L-40}" y="{y(s)+4:.1f}">{s:.2f}</text>')
    series = {}
    for r in pts:
        series.setdefault((r["model"], r["xbar"]), []).append((r["budget"], r["speedup"]))
    for i, ((m, xb), ps) in enumerate(sorted(series.items())):
        c = colors[i % len(colors)]
        d = " ".join(f"{x(b):.1f},{y(s):.1f}" for b, s in sorted(ps))
        out.append(f'<polyline fill="none" stroke="{c}" stroke-width="2" points="{d}"/>')
        out.append(f'<text x="{W-190}" y="{B+14*i}" fill="{c}">{m} {xb}x{xb}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--address", default="auto", help="ray.init address: auto, local, ray://host:port")
    ap.add_argument("--out", default="ray-sweep")
    ap.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local instance")
    a = ap.parse_args()
    import ray

    ray.init(address=a.address, num_cpus=a.num_cpus if a.address == "local" else None)
    items = [(m, xb, b) for m in MODELS for xb in XBARS for b in BUDGETS]
    parts = distributed.map(point, items, executor="ray")
    rows = [row for part in parts for row in part]
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "sweep.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    svg_plot(rows, os.path.join(a.out, "speedup.svg"))
    print(f"{len(rows)} points: wrote {a.out}/sweep.csv and {a.out}/speedup.svg")


if __name__ == "__main__":
    main()
