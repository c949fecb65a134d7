"""Near-memory vector units after QUINN (``pimkit vpu``): :func:`run` a quantized model on
the simulated NM-Carus system, :func:`roofline` sweeps and :func:`table3`.

>>> r = pimkit.vpu.run("zoo:q_mobilenet_v2?res=64", vpus=4)
>>> r["cycles"], r.layers_frame()[["name", "cycles"]]
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Mapping, Optional

from . import _native
from ._result import Result

__all__ = ["run", "roofline", "table3"]


def run(
    model,
    *,
    inputs: Optional[Mapping[str, Any]] = None,
    vpus: Optional[int] = None,
    bandwidth: Optional[float] = None,
    dataflow: str = "auto",
    characterize: str = "shape",
    cold: bool = False,
    method: str = "pimkit",
    arch: Optional[str] = None,
    out: Optional[str] = None,
    progress=None,
) -> Result:
    """Run a quantized (QOperator) model end to end on the simulated VPUs
    (``pimkit vpu run --json``). Inputs not given get the CLI's deterministic random data.
    ``progress(done, total, node)`` is called per node. Outputs: ``result.outputs``.
    ``characterize`` (with ``dataflow="auto"``): ``"shape"`` tries the dataflows once per
    distinct layer workload, ``"layer"`` at every layer (``--characterize``).

    >>> r = pimkit.vpu.run("zoo:q_mobilenet_v2?res=64", dataflow="family")
    """
    text, outs = _native.vpu_run(
        model,
        inputs=dict(inputs) if inputs is not None else None,
        vpus=vpus,
        bandwidth=bandwidth,
        dataflow=dataflow,
        characterize=characterize,
        cold=cold,
        method=method,
        arch=arch,
        out=out,
        progress=progress,
    )
    return Result.from_json(text, outs)


def roofline(
    out: str,
    *,
    kernels: Optional[List[str]] = None,
    quick: bool = False,
    arch: Optional[str] = None,
    progress=None,
) -> List[Dict[str, Any]]:
    """Roofline sweeps (quinn Figs. 5-10): writes CSV + SVG per sweep to ``out`` and
    returns every point (``pimkit vpu roofline --json``). ``kernels``: matmul, conv2d,
    conv1d, depthwise, simd, arch (default all).

    >>> pts = pimkit.vpu.roofline("roof/", kernels=["matmul"], quick=True)
    >>> pimkit.frame(pts)
    """
    return json.loads(
        _native.vpu_roofline(out, kernels=kernels, quick=quick, arch=arch, progress=progress)
    )


def table3(*, quick: bool = False, arch: Optional[str] = None, progress=None) -> Dict[str, Any]:
    """The Table 3 equivalent, vector kernels vs the scalar host
    (``pimkit vpu table3 --json``).

    >>> pimkit.vpu.table3(quick=True)["rows"][0]
    """
    return json.loads(_native.vpu_table3(quick=quick, arch=arch, progress=progress))
