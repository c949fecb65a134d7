"""RRAM crossbar mapping after RNC (``pimkit xbar``): :func:`map`, :func:`sweep`, the
analog-accuracy study :func:`accuracy` and the hardware cost :func:`cost`.

>>> import pimkit
>>> r = pimkit.xbar.map("zoo:rnc_mobilenet_v3_small", budget=1.2)
>>> r["crossbars_used"], r["speedup"]
"""

from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Sequence

from . import _native, distributed
from ._result import Result

__all__ = ["map", "sweep", "accuracy", "cost", "PAPER_BUDGETS", "PAPER_SDW", "PAPER_SAMPLES"]

PAPER_BUDGETS = [0.8, 1.0, 1.2, 1.8]
PAPER_SDW = [1, 5, 10, 20]
PAPER_SAMPLES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]


def map(
    model,
    *,
    arch: Optional[str] = None,
    xbar: Optional[int] = None,
    depthwise: Optional[str] = None,
    mode: Optional[str] = None,
    seed: Optional[int] = None,
    no_dup: bool = False,
    budget: Optional[float] = None,
    crossbars: Optional[int] = None,
    sdw: Optional[int] = None,
    samples: Optional[int] = None,
    out: Optional[str] = None,
) -> Result:
    """Map a model onto crossbars: partition, duplication, packing, latency against the
    ISAAC-like baseline (``pimkit xbar map --json``). ``budget`` is a multiple of the
    ISAAC-like crossbar count, ``crossbars`` an absolute count; ``xbar`` sets the
    crossbar size (rows = columns). ``out`` also writes result.json, summary.csv,
    layers.csv and packing.svg there. Per-layer table: ``result.layers_frame()``.

    >>> r = pimkit.xbar.map("zoo:lenet5", xbar=64, budget=1.0)
    >>> r["fits"], r["crossbars_used"]
    """
    return Result.from_json(
        _native.xbar_map(
            model,
            arch=arch,
            xbar=xbar,
            depthwise=depthwise,
            mode=mode,
            seed=seed,
            no_dup=no_dup,
            budget=budget,
            crossbars=crossbars,
            sdw=sdw,
            samples=samples,
            out=out,
        )
    )


def _sweep_point(point, model, samples, opts):
    """One (budget, S_DW) point of a sweep (module level: it is shipped to workers)."""
    b, s = point
    return json_loads(_native.xbar_sweep(model, [b], [s], samples, **opts))


def json_loads(text: str) -> Dict[str, Any]:
    import json

    return json.loads(text)


def sweep(
    model,
    *,
    budgets: Sequence[float] = PAPER_BUDGETS,
    sdw: Sequence[int] = PAPER_SDW,
    samples: Sequence[int] = PAPER_SAMPLES,
    arch: Optional[str] = None,
    xbar: Optional[int] = None,
    depthwise: Optional[str] = None,
    mode: Optional[str] = None,
    seed: Optional[int] = None,
    no_dup: bool = False,
    out: Optional[str] = None,
    executor: distributed.ExecutorLike = None,
) -> Result:
    """Sweep crossbar budgets x depthwise split factors x sample counts
    (``pimkit xbar sweep --json``; defaults: the paper's grid). ``result["rows"]`` has
    one record per point; ``result.frame("rows")`` as a DataFrame.

    ``executor=None`` runs the sweep in this process (as the CLI); ``"local"``,
    ``"ray"`` or an executor object runs each (budget, S_DW) pair as one work item and
    merges the rows in the CLI's order: the result is identical.

    >>> r = pimkit.xbar.sweep("zoo:rnc_mobilenet_v3_small?weights=none",
    ...                       budgets=[1.0, 1.2], sdw=[1], samples=[8], executor="ray")
    >>> r.frame("rows")[["budget", "speedup"]]
    """
    opts = dict(arch=arch, xbar=xbar, depthwise=depthwise, mode=mode, seed=seed, no_dup=no_dup)
    budgets, sdw, samples = [float(b) for b in budgets], [int(s) for s in sdw], [int(k) for k in samples]
    if executor is None:
        return Result.from_json(_native.xbar_sweep(model, budgets, sdw, samples, out=out, **opts))
    points = [(b, s) for b in budgets for s in sdw]
    if not points:
        # The native call reports the empty grid with the CLI's message.
        return Result.from_json(_native.xbar_sweep(model, budgets, sdw, samples, **opts))
    fn = functools.partial(_sweep_point, model=model, samples=samples, opts=opts)
    parts = distributed.map(fn, points, executor=executor)
    merged = dict(parts[0])
    merged["rows"] = [row for p in parts for row in p["rows"]]
    if out is not None:
        import json

        _native.xbar_sweep_files(json.dumps(merged), out, **opts)
    return Result(merged)


def accuracy(
    model,
    *,
    arch: Optional[str] = None,
    xbar: Optional[int] = None,
    inputs: Any = None,
    random: Optional[int] = None,
    trials: int = 8,
    seed: Optional[int] = None,
    adc_bits: Optional[int] = None,
    adc_range: Optional[str] = None,
    calibrate_adc: bool = False,
    variation: Optional[float] = None,
    variation_model: Optional[str] = None,
    saf: Any = None,
    spare_cols: Optional[int] = None,
    redundancy: Optional[int] = None,
    set: Optional[Dict[str, float]] = None,
    sweep: Optional[Dict[str, Sequence[float]]] = None,
    labels: Optional[Sequence[int]] = None,
    out: Optional[str] = None,
    progress=None,
    components: Optional[str] = "isaac",
) -> Result:
    """What the crossbars' non-idealities do to a model's outputs
    (``pimkit xbar accuracy --json``; docs/accuracy.md). ``inputs`` is a directory of
    ``.npy`` files or a list of ``{input name: array}`` dicts; otherwise ``random`` (default
    1) deterministic random inputs. ``saf`` is one stuck-at rate or ``(off, on)``; ``set``
    overrides any model parameter by name; ``sweep`` maps parameter names to values (their
    product is evaluated); ``labels`` gives one class per output row for top-1 accuracy.
    ``out`` also writes result.json, points.csv, layers.csv and the charts there.
    Every point is priced with the component library ``components`` (a preset or a TOML
    file; ``None``: accuracy only): ``r["costs"][i]`` holds point i's energy, area,
    latency and whether it is on the quality-vs-energy front (docs/cost.md).

    >>> r = pimkit.xbar.accuracy("zoo:lenet5", trials=2, sweep={"adc_bits": [4, 8]})
    >>> [(p["rel_error"]["mean"], c["energy_uj"]) for p, c in zip(r["points"], r["costs"])]
    """
    if saf is not None and not isinstance(saf, (tuple, list)):
        saf = (float(saf), float(saf))
    if saf is not None:
        saf = (float(saf[0]), float(saf[1]))
    if inputs is not None and not isinstance(inputs, (list, tuple)):
        inputs = str(inputs)
    elif inputs is not None:
        inputs = [dict(d) for d in inputs]
    return Result.from_json(
        _native.xbar_accuracy(
            model,
            arch=arch,
            xbar=xbar,
            inputs=inputs,
            random=random,
            trials=trials,
            seed=seed,
            adc_bits=adc_bits,
            adc_range=adc_range,
            calibrate_adc=calibrate_adc,
            variation=variation,
            variation_model=variation_model,
            saf=saf,
            spare_cols=spare_cols,
            redundancy=redundancy,
            set=[(k, float(v)) for k, v in (set or {}).items()],
            sweep=[(k, [float(x) for x in v]) for k, v in (sweep or {}).items()],
            labels=None if labels is None else [int(x) for x in labels],
            out=out,
            progress=progress,
            components=components,
        )
    )


def cost(
    model,
    *,
    components: str = "isaac",
    arch: Optional[str] = None,
    xbar: Optional[int] = None,
    depthwise: Optional[str] = None,
    mode: Optional[str] = None,
    seed: Optional[int] = None,
    no_dup: bool = False,
    budget: Optional[float] = None,
    crossbars: Optional[int] = None,
    sdw: Optional[int] = None,
    inputs: Any = None,
    random: Optional[int] = None,
    out: Optional[str] = None,
    progress=None,
) -> Result:
    """Hardware cost of the crossbar mapping (``pimkit xbar cost --json``; docs/cost.md):
    energy per inference by component, area, latency, throughput, power, TOPS/W on a
    component library (``"isaac"``, ``"puma"``, ``"neurosim"`` or a TOML file laid over
    one). Counts are table-driven (every input bit 1) unless ``inputs`` (a directory of
    ``.npy`` files or a list of ``{input name: array}`` dicts) or ``random`` (that many
    random inputs, from ``seed``) give value-dependent ones. ``out`` also writes
    result.json, summary.csv, layers.csv, components.csv, energy.svg and area.svg there.

    >>> r = pimkit.xbar.cost("zoo:resnet18?weights=none", components="isaac")
    >>> r["totals"]["energy_uj"], r["totals"]["tops_per_w"]
    """
    if inputs is not None and not isinstance(inputs, (list, tuple)):
        inputs = str(inputs)
    elif inputs is not None:
        inputs = [dict(d) for d in inputs]
    return Result.from_json(
        _native.xbar_cost(
            model,
            components=components,
            arch=arch,
            xbar=xbar,
            depthwise=depthwise,
            mode=mode,
            seed=seed,
            no_dup=no_dup,
            budget=budget,
            crossbars=crossbars,
            sdw=sdw,
            inputs=inputs,
            random=random,
            out=out,
            progress=progress,
        )
    )


def _cost_sweep_point(point, model, opts):
    """One point of a design sweep (module level: it is shipped to workers)."""
    return _native.xbar_cost_sweep(model, [(n, [v]) for n, v in point], **opts)


def cost_sweep(
    model,
    sweep: Dict[str, Sequence[int]],
    *,
    components: str = "isaac",
    arch: Optional[str] = None,
    xbar: Optional[int] = None,
    depthwise: Optional[str] = None,
    mode: Optional[str] = None,
    seed: Optional[int] = None,
    no_dup: bool = False,
    budget: Optional[float] = None,
    crossbars: Optional[int] = None,
    sdw: Optional[int] = None,
    out: Optional[str] = None,
    executor: distributed.ExecutorLike = None,
) -> Result:
    """Design-space sweep of the hardware cost (``pimkit xbar cost --sweep ... --json``;
    docs/cost.md): ``sweep`` maps parameters (xbar, rows, cols, adc_bits, cell_bits,
    dac_bits, input_bits, weight_bits) to values; their product is mapped and priced.
    ``result["points"]`` holds each point's energy, area, latency, TOPS/W and whether no
    other point beats it in energy, area and latency (``pareto``).

    ``executor=None`` runs the sweep in this process (``--jobs`` threads, as the CLI);
    ``"local"``, ``"ray"`` or an executor object runs each point as one work item, then
    marks the front over all of them: the result is identical.

    >>> r = pimkit.xbar.cost_sweep("zoo:resnet18?weights=none",
    ...                            {"xbar": [64, 128, 256], "adc_bits": [4, 6, 8]}, executor="ray")
    >>> r.frame("points")[["energy_uj", "area_mm2", "pareto"]]
    """
    axes = [(str(n), [int(v) for v in vals]) for n, vals in sweep.items()]
    opts = dict(
        components=components, arch=arch, xbar=xbar, depthwise=depthwise, mode=mode,
        seed=seed, no_dup=no_dup, budget=budget, crossbars=crossbars, sdw=sdw,
    )
    if executor is None or not axes or any(not v for _, v in axes):
        # Bad or empty axes get the native call's (the CLI's) message.
        return Result.from_json(_native.xbar_cost_sweep(model, axes, out=out, **opts))
    points = [[]]
    for name, vals in axes:
        points = [p + [(name, v)] for p in points for v in vals]
    fn = functools.partial(_cost_sweep_point, model=model, opts=opts)
    parts = distributed.map(fn, points, executor=executor)
    return Result.from_json(_native.xbar_cost_sweep_merge(axes, parts, out=out))
