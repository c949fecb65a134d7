"""Crossbar-aware neural architecture search after RNC (``pimkit xbar nas``).

- :func:`search`: the CLI's search with a built-in accuracy evaluator (``"proxy"``,
  ``"table:FILE.csv"``, ``'cmd:"python eval.py {onnx} {config}"'``).
- :class:`Search`: the same NSGA-II (the Rust core) driven by ask/tell, for accuracies
  measured however you like (fine-tuning on GPUs, a lookup table). Same seed and same
  accuracies give the same front as the CLI.
- :func:`run`: ask/tell with ``evaluate(candidate) -> accuracy`` mapped over each
  generation through an executor (``"local"``, ``"ray"``, ...).

>>> s = pimkit.nas.Search(space="mbv3-small", budget=1.0, pop=50, seed=0)
>>> while cands := s.ask():
...     s.tell(cands, [my_accuracy(c["config"]) for c in cands])
>>> s.front_frame()
>>> s.save("nas-out/")
"""

from __future__ import annotations

import json
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

from . import _native, distributed
from ._result import frame

__all__ = ["Search", "search", "run"]

Candidate = Dict[str, Any]


def search(
    *,
    space: str = "mbv3-small",
    budget: Union[float, Sequence[float], None] = None,
    crossbars: Optional[int] = None,
    pop: int = 50,
    gens: int = 100,
    accuracy: str = "proxy",
    objective: str = "latency",
    seed: int = 1,
    mutation_prob: float = 0.1,
    parent_ratio: float = 0.25,
    mutation_ratio: float = 0.5,
    samples: int = 8,
    sdw: int = 1,
    arch: Optional[str] = None,
    base: str = "rnc_mobilenet_v3_small",
    proxy_batch: int = 4,
    out: Optional[str] = None,
    progress=None,
    components: str = "isaac",
) -> List[Dict[str, Any]]:
    """The CLI's search (``pimkit xbar nas``): one result per budget (``budget`` may be a
    list, as ``--budget 0.8,1,1.2``), each as the CLI writes it to front.json; ``out``
    also writes the CLI's files. ``progress(generation, generations, what)``.
    ``objective`` is one hardware objective or, as ``--objectives``, a list such as
    ``"accuracy,energy"`` (energy and area priced with ``components``).

    >>> r = pimkit.nas.search(pop=20, gens=10, seed=0)[0]
    >>> pimkit.frame(r["front"])[["config", "accuracy", "speedup"]]
    """
    if budget is not None and not isinstance(budget, (list, tuple)):
        budget = [budget]
    return json.loads(
        _native.nas_search(
            space=space,
            budget=[float(b) for b in budget] if budget is not None else None,
            crossbars=crossbars,
            pop=pop,
            gens=gens,
            accuracy=accuracy,
            objective=objective,
            seed=seed,
            mutation_prob=mutation_prob,
            parent_ratio=parent_ratio,
            mutation_ratio=mutation_ratio,
            samples=samples,
            sdw=sdw,
            arch=os.fspath(arch) if arch is not None else None,
            base=base,
            proxy_batch=proxy_batch,
            out=os.fspath(out) if out is not None else None,
            components=components,
            progress=progress,
        )
    )


class Search:
    """NSGA-II over a supernet space with the crossbar compiler in the loop and the
    accuracies told by the caller.

    ``ask()`` returns the generation's new candidates that fit the budget (dicts with
    ``config`` and the hardware figures: ``crossbars_used``, ``latency_cycles``,
    ``speedup``, ...; candidates that do not fit need no accuracy); ``tell(candidates,
    accuracies)`` gives one accuracy (or None: not measured) per candidate, in order.
    ``ask()`` returns ``[]`` when the search is finished; then :meth:`front`,
    :meth:`result` and :meth:`save`. Options and defaults are the CLI's.

    >>> s = pimkit.nas.Search(budget=1.0, pop=20, gens=5, seed=0)
    >>> while cands := s.ask():
    ...     s.tell(cands, [lookup[c["config"]] for c in cands])
    >>> s.front()[0]["config"]
    """

    def __init__(
        self,
        space: str = "mbv3-small",
        *,
        budget: float = 1.0,
        crossbars: Optional[int] = None,
        pop: int = 50,
        gens: int = 100,
        objective: str = "latency",
        seed: int = 1,
        mutation_prob: float = 0.1,
        parent_ratio: float = 0.25,
        mutation_ratio: float = 0.5,
        samples: int = 8,
        sdw: int = 1,
        arch: Optional[str] = None,
        base: str = "rnc_mobilenet_v3_small",
        progress: Optional[Callable[[int, int, str], Any]] = None,
        components: str = "isaac",
    ):
        self._s = _native.Search(
            space=space,
            budget=float(budget),
            crossbars=crossbars,
            pop=pop,
            gens=gens,
            objective=objective,
            seed=seed,
            mutation_prob=mutation_prob,
            parent_ratio=parent_ratio,
            mutation_ratio=mutation_ratio,
            samples=samples,
            sdw=sdw,
            arch=os.fspath(arch) if arch is not None else None,
            base=base,
            progress=progress,
            components=components,
        )

    def ask(self) -> List[Candidate]:
        """The candidates to evaluate next; ``[]`` when the search is finished."""
        return json.loads(self._s.ask_json())

    def tell(self, candidates: Sequence[Union[Candidate, str]], accuracies: Sequence[Optional[float]]) -> None:
        """Accuracies (None: not measured) of the last ``ask()``'s candidates, in order."""
        configs = [c["config"] if isinstance(c, dict) else str(c) for c in candidates]
        accs = [None if a is None else float(a) for a in accuracies]
        self._s.tell(configs, accs)

    @property
    def done(self) -> bool:
        """Whether the search has finished."""
        return self._s.done

    def history(self) -> List[Dict[str, Any]]:
        """Per-generation statistics so far (generation, evaluations, feasible, front, best)."""
        return json.loads(self._s.history_json())

    def result(self) -> Dict[str, Any]:
        """The whole result, as the CLI's front.json."""
        return json.loads(self._s.result_json())

    def front(self) -> List[Candidate]:
        """The Pareto front (accuracy up, hardware objective down), by increasing speedup."""
        return self.result()["front"]

    def front_frame(self):
        """The front as a pandas DataFrame."""
        return frame(self.front())

    def save(self, dir: str) -> List[str]:
        """Write the CLI's front.csv, summary.csv, front.json, front.svg and the optimal
        subnets (ONNX + JSON) to ``dir``; returns the paths."""
        return [os.fspath(p) for p in self._s.save(os.fspath(dir))]


def run(
    evaluate: Callable[[Candidate], Optional[float]],
    *,
    executor: distributed.ExecutorLike = "local",
    **options,
) -> Search:
    """Ask/tell until done, evaluating each generation's candidates with
    ``evaluate(candidate) -> accuracy`` through ``executor`` (``"local"`` process pool,
    ``"ray"``, ``"serial"``, an executor object). ``options`` are :class:`Search`'s.
    Returns the finished search.

    >>> s = pimkit.nas.run(my_eval, executor="ray", pop=50, gens=20, seed=0)
    >>> s.save("nas-out/")
    """
    ex = distributed.get_executor(executor)
    s = Search(**options)
    while True:
        cands = s.ask()
        if not cands:
            return s
        s.tell(cands, ex.map(evaluate, cands))
