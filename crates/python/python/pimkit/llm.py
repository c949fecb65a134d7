"""LLM serving on xPU + DRAM-PIM systems (``pimkit llm``; docs/llm.md): prefill and decode
of a decoder with its KV cache across context lengths and batch sizes, tokens/s, J/token,
the largest batch that fits, per op class and place; and greedy generation with the
reference interpreter (``pimkit llm-generate``).

>>> import pimkit
>>> r = pimkit.llm.analyze("zoo:llama2_7b", system="dgx-h100-attacc-bank")
>>> r.frame("decode")[["context", "batch", "tokens_per_s", "j_per_token"]]
"""

from __future__ import annotations

import functools
import json as _json
from typing import List, Mapping, Optional, Sequence, Union

from . import _native, distributed
from ._result import Result

__all__ = ["analyze", "sweep", "generate", "SYSTEMS"]

SYSTEMS = [
    "dgx-a100",
    "dgx-a100x2",
    "dgx-a100-attacc",
    "dgx-h100",
    "dgx-h100-attacc-bank",
    "dgx-h100-attacc-bg",
    "dgx-h100-attacc-buffer",
    "dgx-h100-aim",
    "dgx-h100-upmem",
    "cent",
]


def _options(policy, prompt, generate, contexts, batches, weight_bits, weight_group, kv_bits,
             act_bits, pipeline, ignore_limits, dims):
    return dict(
        policy=policy, prompt=int(prompt), generate=int(generate),
        contexts=[int(c) for c in contexts], batches=[int(b) for b in batches],
        weight_bits=float(weight_bits), weight_group=int(weight_group), kv_bits=float(kv_bits),
        act_bits=float(act_bits), pipeline=int(pipeline), ignore_limits=bool(ignore_limits), dims=None if dims is None else {str(k): int(v) for k, v in dims.items()},
    )


def analyze(
    model: str,
    *,
    system: str = "dgx-h100",
    policy: Optional[str] = None,
    prompt: int = 1024,
    generate: int = 128,
    contexts: Sequence[int] = (512, 1024, 2048, 4096, 8192, 16384),
    batches: Sequence[int] = (1, 4, 16, 64, 256),
    weight_bits: float = 16,
    weight_group: int = 0,
    kv_bits: float = 16,
    act_bits: float = 16,
    pipeline: int = 1,
    ignore_limits: bool = False,
    dims: Optional[Mapping[str, int]] = None,
    out: Optional[str] = None,
) -> Result:
    """One decoder on one system (``pimkit llm MODEL --system S --json``): ``model`` is a
    decoder export with past key/values or a zoo decoder (``"zoo:llama2_70b"``); ``system`` a
    built-in name (:data:`SYSTEMS`) or a TOML file. ``result["decode"]`` holds the
    (context, batch) grid, ``result["generation"]`` prefill + ``generate`` tokens per batch,
    ``result["memory"]["max_batch"]`` the largest batch that fits, ``result["breakdown"]``
    one decode step by op class and place. ``pipeline`` splits the layers over that many
    stages of devices (CENT's pipeline parallelism; 1: tensor parallelism). A context beyond
    the model's, or nothing requested fitting the memory, raises an ``InputError`` saying what
    fits, unless ``ignore_limits``.
    ``out`` writes result.json, CSV and SVG there."""
    opts = _options(policy, prompt, generate, contexts, batches, weight_bits, weight_group,
                    kv_bits, act_bits, pipeline, ignore_limits, dims)
    js = _json.loads(_native.llm_analyze([str(model)], [str(system)], out=out, **opts))
    return Result(js[0])


def _pair(pair, opts):
    """One (model, system) of a sweep (module level: it is shipped to workers)."""
    model, system = pair
    return _native.llm_analyze([model], [system], **opts)


def sweep(
    models: Sequence[str],
    systems: Sequence[str],
    *,
    policy: Optional[str] = None,
    prompt: int = 1024,
    generate: int = 128,
    contexts: Sequence[int] = (512, 1024, 2048, 4096, 8192, 16384),
    batches: Sequence[int] = (1, 4, 16, 64, 256),
    weight_bits: float = 16,
    weight_group: int = 0,
    kv_bits: float = 16,
    act_bits: float = 16,
    pipeline: int = 1,
    ignore_limits: bool = False,
    dims: Optional[Mapping[str, int]] = None,
    executor: distributed.ExecutorLike = None,
) -> List[Result]:
    """Every model on every system (``pimkit llm M1 M2 --system S1,S2 --json``), in
    model-major order. ``executor=None`` runs in this process (``--jobs`` threads, as the
    CLI); ``"local"``, ``"ray"`` or an executor object runs each (model, system) as one
    work item: the results are identical."""
    opts = _options(policy, prompt, generate, contexts, batches, weight_bits, weight_group,
                    kv_bits, act_bits, pipeline, ignore_limits, dims)
    models = [str(m) for m in models]
    systems = [str(s) for s in systems]
    if executor is None or not models or not systems:
        return [Result(r) for r in _json.loads(_native.llm_analyze(models, systems, **opts))]
    pairs = [(m, s) for m in models for s in systems]
    parts = distributed.map(functools.partial(_pair, opts=opts), pairs, executor=executor)
    return [Result(_json.loads(p)[0]) for p in parts]


def generate(model: str, prompt: Sequence[int], tokens: int = 8) -> Result:
    """Greedy generation with pimkit's interpreter, feeding the model's own KV cache back
    (``pimkit llm-generate MODEL --prompt ... --json``): ``result["tokens"]``, and per step
    the work counted on that step's graph against the work predicted (``result["steps"]``)."""
    return Result.from_json(_native.llm_generate(str(model), [int(t) for t in prompt], int(tokens)))
