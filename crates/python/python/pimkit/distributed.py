"""Run independent work items through an executor: in this process, on a local process
pool (the default) or as Ray tasks on a cluster. Whatever the executor, ``map`` returns
the results in the items' order, and they are identical (every item is a pure function of
its inputs: pimkit's engines are deterministic).

Failure handling: a failed item is retried once; if it fails again, ``map`` raises
:class:`TaskError` naming the item (after the other items have finished), never drops it.

>>> from pimkit import distributed
>>> distributed.map(abs, [-1, -2], executor="local")
[1, 2]
>>> import ray; ray.init(address="auto")
>>> distributed.map(abs, [-1, -2], executor="ray")
[1, 2]

See docs/distributed.md.
"""

from __future__ import annotations

import concurrent.futures as _cf
import multiprocessing as _mp
import os
from typing import Any, Callable, List, Optional, Sequence, Union

__all__ = [
    "Executor",
    "SerialExecutor",
    "LocalExecutor",
    "RayExecutor",
    "TaskError",
    "get_executor",
    "map",
]

RETRIES = 1


class TaskError(RuntimeError):
    """Work items that failed twice: ``failures`` is a list of ``(index, item, error)``;
    ``index``, ``item`` and ``error`` are the first failure's."""

    def __init__(self, failures: List[tuple]):
        self.failures = failures
        self.index, self.item, self.error = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        super().__init__(
            f"work item {self.index} ({self.item!r}) failed after {RETRIES + 1} attempts: "
            f"{type(self.error).__name__}: {self.error}{more}"
        )


class Executor:
    """Maps a function over items, results in the items' order."""

    name = "executor"

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> List[Any]:
        raise NotImplementedError


def _attempt(fn, item):
    """Run ``fn(item)``, retried once; returns ``(ok, value_or_error)``."""
    err = None
    for _ in range(RETRIES + 1):
        try:
            return True, fn(item)
        except Exception as e:  # noqa: BLE001 - reported with its item
            err = e
    return False, err


def _collect(items, outcomes) -> List[Any]:
    failures = [(i, items[i], v) for i, (ok, v) in enumerate(outcomes) if not ok]
    if failures:
        raise TaskError(failures)
    return [v for _, v in outcomes]


class SerialExecutor(Executor):
    """One item after the other in this process (no pickling: lambdas work)."""

    name = "serial"

    def map(self, fn, items):
        items = list(items)
        return _collect(items, [_attempt(fn, it) for it in items])


def _call(fn, item):
    return _attempt(fn, item)


class LocalExecutor(Executor):
    """A pool of worker processes on this machine (``max_workers``: default all cores).
    ``fn`` and the items must pickle (module-level functions; pimkit.Model pickles as
    its ONNX bytes). Workers are started with ``spawn``: forking a process whose Rust
    thread pools are running is unsafe."""

    name = "local"

    def __init__(self, max_workers: Optional[int] = None):
        self.max_workers = max_workers or os.cpu_count() or 1

    def map(self, fn, items):
        items = list(items)
        if not items:
            return []
        n = min(self.max_workers, len(items))
        ctx = _mp.get_context("spawn")
        with _cf.ProcessPoolExecutor(max_workers=n, mp_context=ctx) as pool:
            futs = [pool.submit(_call, fn, it) for it in items]
            outcomes = []
            for f in futs:
                try:
                    outcomes.append(f.result())
                except Exception as e:  # noqa: BLE001 - the worker died (BrokenProcessPool)
                    outcomes.append((False, e))
        return _collect(items, outcomes)


class RayExecutor(Executor):
    """Ray tasks on the cluster this process is connected to (``ray.init(address=...)``
    is the caller's; this never starts one). Each item is one task with ``num_cpus``
    CPUs, retried once by Ray (``max_retries=1``, ``retry_exceptions=True``); results
    come back with ``ray.get`` in the items' order. ``runtime_env`` ships code to the
    workers, e.g. ``{"py_modules": ["dist/pimkit-0.1.0-cp39-abi3-linux_x86_64.whl"]}``
    where the nodes do not have pimkit installed."""

    name = "ray"

    def __init__(self, num_cpus: float = 1, runtime_env: Optional[dict] = None):
        self.num_cpus = num_cpus
        self.runtime_env = runtime_env

    def map(self, fn, items):
        try:
            import ray
        except ImportError as e:
            raise ImportError("executor='ray' needs Ray: pip install ray") from e
        if not ray.is_initialized():
            raise RuntimeError(
                "executor='ray': connect to a cluster first with ray.init(address=...) "
                "(ray.init() starts a local one)"
            )
        items = list(items)
        opts = dict(num_cpus=self.num_cpus, max_retries=RETRIES, retry_exceptions=True)
        if self.runtime_env:
            opts["runtime_env"] = self.runtime_env
        task = ray.remote(_ray_task).options(**opts)
        fn_ref = ray.put(fn)
        refs = [task.remote(fn_ref, it) for it in items]
        outcomes = []
        for ref in refs:
            try:
                outcomes.append((True, ray.get(ref)))
            except Exception as e:  # noqa: BLE001 - RayTaskError wraps the item's error
                cause = getattr(e, "cause", None)
                outcomes.append((False, cause if isinstance(cause, BaseException) else e))
        return _collect(items, outcomes)


def _ray_task(fn, item):
    return fn(item)


ExecutorLike = Union[None, str, Executor, _cf.Executor]


class _Futures(Executor):
    """A ``concurrent.futures.Executor`` the caller made."""

    name = "futures"

    def __init__(self, ex: _cf.Executor):
        self.ex = ex

    def map(self, fn, items):
        items = list(items)
        futs = [self.ex.submit(_call, fn, it) for it in items]
        outcomes = []
        for f in futs:
            try:
                outcomes.append(f.result())
            except Exception as e:  # noqa: BLE001
                outcomes.append((False, e))
        return _collect(items, outcomes)


def get_executor(executor: ExecutorLike = "local") -> Executor:
    """``"local"`` (process pool, the default), ``"ray"``, ``"serial"``, an
    :class:`Executor` or a ``concurrent.futures.Executor``."""
    if executor is None or executor == "local":
        return LocalExecutor()
    if isinstance(executor, Executor):
        return executor
    if isinstance(executor, _cf.Executor):
        return _Futures(executor)
    if executor == "ray":
        return RayExecutor()
    if executor == "serial":
        return SerialExecutor()
    from ._native import InputError

    raise InputError(
        f"executor {executor!r}: use 'local', 'ray', 'serial', a pimkit.distributed.Executor "
        "or a concurrent.futures.Executor"
    )


def map(fn: Callable[[Any], Any], items: Sequence[Any], executor: ExecutorLike = "local") -> List[Any]:
    """``[fn(item) for item in items]`` through ``executor``, in the items' order; a
    failing item is retried once, then reported as :class:`TaskError`."""
    return get_executor(executor).map(fn, items)
