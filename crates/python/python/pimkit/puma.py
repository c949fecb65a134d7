"""The PUMA memristor-crossbar accelerator (``pimkit puma``): :func:`compile`, :func:`sim`
and :func:`run` (compile + simulate, compared with the reference interpreter).

>>> r = pimkit.puma.run("zoo:puma_mlp_l4")
>>> r["cycles"], r.outputs
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional

from . import _native
from ._result import Result

__all__ = ["compile", "sim", "run", "DEFAULT_MAX_CYCLES", "DEFAULT_TOLERANCE"]

DEFAULT_MAX_CYCLES: int = _native.PUMA_DEFAULT_MAX_CYCLES
DEFAULT_TOLERANCE: float = _native.PUMA_DEFAULT_TOLERANCE


def compile(
    model,
    out: str,
    *,
    arch: Optional[str] = None,
    constants: Optional[str] = None,
    no_loops: bool = False,
    fixed: str = "auto",
    calibrate: Optional[List[Mapping[str, Any]]] = None,
    replicate: Optional[str] = None,
    budget: Optional[str] = None,
    depthwise: str = "blockdiag",
) -> str:
    """Compile a model into a PUMA program directory ``out`` (``pimkit puma compile``);
    returns the placement summary the CLI prints. ``calibrate`` is a list of input dicts
    for the activation formats.

    >>> print(pimkit.puma.compile("zoo:puma_mlp_l4", "prog/"))
    """
    return _native.puma_compile(
        model,
        out,
        arch=arch,
        constants=constants,
        no_loops=no_loops,
        fixed=fixed,
        calibrate=[dict(c) for c in calibrate] if calibrate else None,
        replicate=replicate,
        budget=budget,
        depthwise=depthwise,
    )


def sim(
    dir: str,
    *,
    inputs: Optional[List[str]] = None,
    bitserial: bool = False,
    max_cycles: Optional[int] = None,
    nonideal: Optional[str] = None,
    tolerance: Optional[float] = None,
) -> Result:
    """Simulate a compiled program directory (``pimkit puma sim --json``). ``inputs``:
    .npy files in graph-input order (default: those saved at compile time);
    ``nonideal=""`` sends every MVM through the analog model with the built-in device
    file. Outputs: ``result.outputs``.

    >>> r = pimkit.puma.sim("prog/")
    """
    kw: Dict[str, Any] = dict(inputs=inputs, bitserial=bitserial, nonideal=nonideal)
    if max_cycles is not None:
        kw["max_cycles"] = max_cycles
    if tolerance is not None:
        kw["tolerance"] = tolerance
    text, outs = _native.puma_sim(dir, **kw)
    return Result.from_json(text, outs)


def run(
    model,
    *,
    inputs: Optional[Mapping[str, Any]] = None,
    arch: Optional[str] = None,
    constants: Optional[str] = None,
    no_loops: bool = False,
    fixed: str = "auto",
    calibrate: Optional[List[Mapping[str, Any]]] = None,
    replicate: Optional[str] = None,
    budget: Optional[str] = None,
    depthwise: str = "blockdiag",
    bitserial: bool = False,
    max_cycles: Optional[int] = None,
    tolerance: Optional[float] = None,
    per_layer: bool = False,
    nonideal: Optional[str] = None,
    progress=None,
) -> Result:
    """Compile and simulate a model, comparing with the reference interpreter
    (``pimkit puma run --json``). ``inputs``: ``{name: ndarray}`` (default: the CLI's
    inputs); ``per_layer=True`` simulates layer by layer (``progress(done, total,
    layer)`` is called per layer). Outputs: ``result.outputs``.

    >>> r = pimkit.puma.run("zoo:puma_mlp_l4", per_layer=True,
    ...                     progress=lambda i, n, what: print(i, n, what))
    """
    kw: Dict[str, Any] = {}
    if max_cycles is not None:
        kw["max_cycles"] = max_cycles
    if tolerance is not None:
        kw["tolerance"] = tolerance
    text, outs = _native.puma_run(
        model,
        inputs=dict(inputs) if inputs is not None else None,
        arch=arch,
        constants=constants,
        no_loops=no_loops,
        fixed=fixed,
        calibrate=[dict(c) for c in calibrate] if calibrate else None,
        replicate=replicate,
        budget=budget,
        depthwise=depthwise,
        bitserial=bitserial,
        per_layer=per_layer,
        nonideal=nonideal,
        progress=progress,
        **kw,
    )
    return Result.from_json(text, outs)
