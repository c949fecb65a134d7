"""Executors give identical results in the same order: serial, local process pool, Ray."""

import pytest

import pimkit
from pimkit import distributed

SWEEP = dict(budgets=[1.0, 1.5], sdw=[1, 5], samples=[1, 8])


def square(x):
    return x * x


_calls = {}


def flaky(x):
    """Fails the first time it sees 2 (in this process), then works."""
    if x == 2 and not _calls.get(x):
        _calls[x] = True
        raise RuntimeError("transient")
    return x


def always_fails(x):
    if x == 1:
        raise ValueError(f"bad item {x}")
    return x


def accuracy(c):
    from test_nas import fake_accuracy

    return fake_accuracy(c["config"])


def test_local_and_serial_agree():
    items = list(range(7))
    assert distributed.map(square, items, "local") == distributed.map(square, items, "serial") == [
        x * x for x in items
    ]


def test_retry_once_then_report_the_item():
    assert distributed.map(flaky, [1, 2, 3], "serial") == [1, 2, 3]
    with pytest.raises(distributed.TaskError) as e:
        distributed.map(always_fails, [0, 1, 2], "local")
    assert e.value.index == 1 and e.value.item == 1 and "bad item 1" in str(e.value)


def test_sweep_local_equals_in_process():
    one = pimkit.xbar.sweep("zoo:lenet5", **SWEEP)
    model = pimkit.load("zoo:lenet5")  # a Model travels to the workers as ONNX bytes
    assert pimkit.xbar.sweep(model, executor="local", **SWEEP)["rows"] == one["rows"]
    assert pimkit.xbar.sweep("zoo:lenet5", executor="local", **SWEEP) == one


COST_SWEEP = {"xbar": [64, 128], "adc_bits": [4, 6, 8]}


def test_cost_sweep_local_equals_in_process():
    one = pimkit.xbar.cost_sweep("zoo:lenet5", COST_SWEEP)
    assert pimkit.xbar.cost_sweep("zoo:lenet5", COST_SWEEP, executor="local") == one
    # The front is marked over every point, not per work item.
    assert 0 < sum(p["pareto"] for p in one["points"]) < len(one["points"])


def test_sweep_and_nas_generation_on_ray_equal_local(ray_local):
    local = pimkit.xbar.sweep("zoo:lenet5", executor="local", **SWEEP)
    assert pimkit.xbar.sweep("zoo:lenet5", executor="ray", **SWEEP) == local
    cost = pimkit.xbar.cost_sweep("zoo:lenet5", COST_SWEEP)
    assert pimkit.xbar.cost_sweep("zoo:lenet5", COST_SWEEP, executor="ray") == cost
    opts = dict(pop=6, gens=1, seed=5)
    a = pimkit.nas.run(accuracy, executor="local", **opts)
    b = pimkit.nas.run(accuracy, executor="ray", **opts)
    assert a.result() == b.result()
    with pytest.raises(distributed.TaskError) as e:
        distributed.map(always_fails, [0, 1, 2], "ray")
    assert e.value.item == 1
