"""pimkit: compile, map and simulate neural networks for processing-in-memory hardware.

The Python face of the pimkit Rust toolkit. Every engine function takes the CLI command's
options as keyword arguments and returns the CLI's ``--json`` output as a dict
(:class:`pimkit.Result`); engine work runs with the GIL released.

>>> import pimkit
>>> m = pimkit.load("zoo:lenet5")
>>> m.info()["macs"]
>>> pimkit.xbar.map(m, budget=1.0)["crossbars_used"]

Errors: :class:`pimkit.InputError` for bad input (the CLI's exit status 2),
:class:`pimkit.InternalError` for bugs (exit status 1). See docs/python.md.
"""

from __future__ import annotations

import json as _json
import os as _os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Union

import numpy as _np

from . import _native
from ._native import InputError, InternalError, Model, __version__
from ._result import Result, frame

ModelLike = Union[Model, str, "_os.PathLike[str]"]
Progress = Optional[Callable[[int, int, str], Any]]

__all__ = [
    "InputError",
    "InternalError",
    "Model",
    "Result",
    "frame",
    "load",
    "lower",
    "profile",
    "offload",
    "quantize",
    "report",
    "zoo_list",
    "threads",
    "xbar",
    "puma",
    "vpu",
    "nas",
    "distributed",
    "llm",
    "__version__",
]


def load(
    src: Union[str, "_os.PathLike[str]", bytes, Any],
    *,
    dims: Optional[Mapping[str, int]] = None,
    bind: Optional[Mapping[str, Any]] = None,
    shapes: Optional[Mapping[str, Iterable[int]]] = None,
    qdq_float: bool = False,
) -> Model:
    """Load a model into pimkit's graph IR.

    ``src`` is a path to an ``.onnx`` file, ``"zoo:NAME?k=v"`` (a built-in model, see
    :func:`zoo_list`), the ``bytes`` of an ONNX model or an ``onnx.ModelProto``.
    ``dims`` sets symbolic dimensions (``{"batch": 1}``), ``shapes`` input shapes
    (``{"input": (1, 3, 224, 224)}``) and ``bind`` replaces inputs by constants (numbers
    or arrays), folding the control flow that depends only on them (the CLI's ``--dim``,
    ``--shape`` and ``--bind``; files only). A QDQ model's DequantizeLinear -> op ->
    QuantizeLinear groups are imported as the integer nodes onnxruntime's default session
    runs (QLinearConv, ...); ``qdq_float=True`` keeps the float ops (``--qdq-float``).

    >>> m = pimkit.load("zoo:mlp")
    >>> m = pimkit.load("model.onnx", dims={"batch": 1})
    >>> m = pimkit.load(onnx.load("model.onnx"))
    """
    label = None
    if hasattr(src, "SerializeToString") and not isinstance(src, (str, bytes)):
        name = getattr(getattr(src, "graph", None), "name", "") or "model"
        label = name
        src = src.SerializeToString()
    elif isinstance(src, (bytearray, memoryview)):
        src = bytes(src)
    elif isinstance(src, _os.PathLike):
        src = _os.fspath(src)
    b = None
    if bind is not None:
        b = {k: _np.asarray(v) for k, v in bind.items()}
    sh = None
    if shapes is not None:
        sh = {k: [int(d) for d in v] for k, v in shapes.items()}
    return _native.load(src, dims=dict(dims) if dims else None, shapes=sh, bind=b, label=label,
                        qdq_float=bool(qdq_float))


def zoo_list() -> List[Dict[str, Any]]:
    """The built-in models: name, family, description and parameters.

    >>> [e["name"] for e in pimkit.zoo_list()][:3]
    """
    return _json.loads(_native.zoo_list())


def threads(n: int = 0) -> int:
    """Set the reference interpreter's worker threads (``n > 0``); returns the count.

    >>> pimkit.threads(2)
    """
    return _native.threads(n)


def lower(model: ModelLike, *, fuse: bool = False) -> Result:
    """Lower a model to parallel loop nests (``pimkit lower --json``).

    >>> r = pimkit.lower("zoo:softmax?n=1024")
    >>> len(r["nests"])
    """
    return Result.from_json(_native.lower(model, fuse=fuse))


def profile(model: ModelLike, *, runs: int = 5, warmup: int = 1, fuse: bool = False) -> Result:
    """Time every loop nest natively on the host (``pimkit profile --json``); needs a C
    compiler.

    >>> pimkit.profile("zoo:softmax?n=1024", runs=3)["nests"][0]["t_cpu_ns"]
    """
    return Result.from_json(_native.profile(model, runs=runs, warmup=warmup, fuse=fuse))


def offload(
    model: ModelLike,
    *,
    cores: Optional[List[int]] = None,
    counters: str = "auto",
    runs: int = 1,
    sweep: Optional[tuple] = None,
    emit: Optional[str] = None,
    theta: Optional[float] = None,
    sigma: Optional[float] = None,
    arch: Optional[str] = None,
    host: Optional[str] = None,
    host_fixed: bool = False,
    fuse: bool = False,
) -> Result:
    """Decide host vs PIM per loop nest and estimate the hybrid time (Torch-PIM;
    ``pimkit offload --json``). ``sweep=("n", [256, 1024])`` rebuilds a zoo model per
    size (the CLI's ``--sweep n=256,1024``); ``host_fixed=True`` uses the reference host
    instead of measuring this one.

    >>> r = pimkit.offload("zoo:llama_decode?weights=none", host_fixed=True)
    >>> [n["offload"] for n in r["nests"]][:5]
    """
    sw = None
    if sweep is not None:
        param, values = sweep
        sw = (str(param), [str(v) for v in values])
    return Result.from_json(
        _native.offload(
            model,
            cores=cores,
            counters=counters,
            runs=runs,
            sweep=sw,
            emit=emit,
            theta=theta,
            sigma=sigma,
            arch=arch,
            host=host,
            host_fixed=host_fixed,
            fuse=fuse,
        )
    )


def quantize(
    model: ModelLike,
    *,
    calib: Any = None,
    random: Optional[int] = None,
    per_channel: bool = False,
    act: str = "u8",
    exclude: Iterable[str] = (),
) -> Model:
    """Quantize a float model to the QOperator model onnxruntime's ``quantize_static``
    writes (``pimkit quantize``): BN folding, MinMax calibration, QLinear ops. ``calib`` is
    a directory of ``.npy`` samples (the CLI's ``--calib`` layout) or a list of
    ``{input name: array}`` dicts; otherwise ``random`` (default 8) random samples.
    ``act`` is ``"u8"`` or ``"i8"``; ``exclude`` lists op types kept in float. Returns the
    quantized :class:`Model` (``.export(path)`` writes it).

    >>> q = pimkit.quantize("zoo:lenet5", random=4)
    >>> pimkit.vpu.run(q)["totals"]
    """
    if calib is not None and not isinstance(calib, (list, tuple)):
        calib = _os.fspath(calib)
    elif calib is not None:
        calib = [{k: _np.asarray(v) for k, v in d.items()} for d in calib]
    return _native.quantize(
        model,
        calib=calib,
        random=random,
        per_channel=per_channel,
        act=act,
        exclude=list(exclude),
    )


def report(
    models: Union[ModelLike, Iterable[ModelLike], None],
    out_dir: Union[str, "_os.PathLike[str]"],
    *,
    progress: Progress = None,
) -> str:
    """Run every engine on each model and write one report (``pimkit report``):
    ``index.html`` (a summary table linking to one section per engine), ``report.json``
    and the SVG/CSV files, in ``out_dir``. ``models`` is a model, a list of models (paths,
    zoo specs or :class:`Model`) or ``None``/``[]`` for the built-in set. Returns the path
    of ``index.html``; import notes are emitted as warnings.

    >>> pimkit.report(["zoo:lenet5"], "report")
    'report/index.html'
    """
    if models is None:
        models = []
    elif isinstance(models, (str, Model, _os.PathLike)):
        models = [models]
    models = [m if isinstance(m, Model) else _os.fspath(m) for m in models]
    index, notes = _native.report(models, _os.fspath(out_dir), progress=progress)
    if notes:
        import warnings

        for n in notes:
            warnings.warn(n, stacklevel=2)
    return index


from . import distributed, llm, nas, puma, vpu, xbar  # noqa: E402
