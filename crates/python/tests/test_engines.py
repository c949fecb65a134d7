"""Every engine function returns the CLI's --json (same keys, same values) on small zoo
models; where the CLI measures time on this machine, the keys and the deterministic
parts agree."""

import numpy as np
import pytest

import pimkit
from conftest import same_as_cli


def test_info_matches_cli(cli):
    spec = "zoo:lenet5?weights=none"
    assert pimkit.load(spec).info() == cli("info", spec, "--json")


def test_lower_matches_cli(cli):
    spec = "zoo:softmax?n=256"
    same_as_cli(pimkit.lower(spec), cli("lower", spec, "--json"))
    same_as_cli(pimkit.lower(pimkit.load(spec), fuse=True), cli("lower", spec, "--fuse", "--json"))


def test_profile_keys_match_cli(cli):
    spec = "zoo:softmax?n=256"
    py = pimkit.profile(spec, runs=1, warmup=0)
    c = cli("profile", spec, "--runs", "1", "--warmup", "0", "--json")
    assert set(c) - {"engine", "model", "arch"} <= set(py)
    assert [n["label"] for n in py["nests"]] == [n["label"] for n in c["nests"]]
    assert all(n["t_cpu_ns"] > 0 for n in py["nests"])


def test_offload_keys_match_cli(cli):
    spec = "zoo:softmax?n=256"
    args = dict(host_fixed=True, counters="model")
    py = pimkit.offload(spec, **args)
    c = cli("offload", spec, "--host-fixed", "--counters", "model", "--json")
    assert set(c) <= set(py)
    assert [n["label"] for n in py["nests"]] == [n["label"] for n in c["nests"]]
    assert py["engine"] == "offload" and py["model"] == spec


def test_xbar_map_matches_cli(cli):
    spec = "zoo:lenet5"
    py = pimkit.xbar.map(spec, budget=1.2, xbar=64)
    same_as_cli(py, cli("xbar", "map", spec, "--budget", "1.2", "--xbar", "64", "--json"))
    assert py["engine"] == "xbar" and py["model"] == "lenet5"
    df = py.layers_frame()
    assert len(df) == len(py["layers"]) > 0


def test_xbar_cost_matches_cli(cli, tmp_path):
    spec = "zoo:lenet5"
    py = pimkit.xbar.cost(spec, components="puma", out=tmp_path / "py")
    c = cli("xbar", "cost", spec, "--components", "puma", "--json", "-o", tmp_path / "cli")
    same_as_cli(py, c)
    assert py["engine"] == "cost" and py["components"] == "puma"
    assert py["totals"]["energy_uj"] > 0 and py["totals"]["tops_per_w"] > 0
    for name in ("result.json", "summary.csv", "layers.csv", "components.csv", "energy.svg"):
        assert (tmp_path / "py" / name).read_text() == (tmp_path / "cli" / name).read_text(), name
    # Value-dependent counts: the same reference inputs give the same numbers.
    vpy = pimkit.xbar.cost(spec, random=2, seed=3)
    same_as_cli(vpy, cli("xbar", "cost", spec, "--random", "2", "--seed", "3", "--json"))
    assert vpy["totals"]["dynamic_uj"] < py_isaac_table(spec)


def test_xbar_cost_sweep_matches_cli(cli, tmp_path):
    spec = "zoo:lenet5"
    py = pimkit.xbar.cost_sweep(spec, {"xbar": [64, 128], "adc_bits": [4, 8]}, out=tmp_path / "py")
    c = cli("xbar", "cost", spec, "--sweep", "xbar=64,128", "adc_bits=4,8", "--json",
            "-o", tmp_path / "cli")
    assert dict(py) == c
    for name in ("sweep.csv", "sweep.json", "front.svg"):
        assert (tmp_path / "py" / name).read_text() == (tmp_path / "cli" / name).read_text(), name


def py_isaac_table(spec):
    return pimkit.xbar.cost(spec)["totals"]["dynamic_uj"]


def test_xbar_sweep_matches_cli(cli, tmp_path):
    spec = "zoo:lenet5"
    py = pimkit.xbar.sweep(spec, budgets=[1.0, 1.5], sdw=[1, 5], samples=[1, 8], out=tmp_path)
    c = cli("xbar", "sweep", spec, "--budgets", "1,1.5", "--sdw", "1,5", "--samples", "1,8", "--json")
    same_as_cli(py, c)
    assert (tmp_path / "sweep.csv").exists()
    assert len(py.frame("rows")) == 8


def test_puma_run_matches_cli(cli):
    spec = "zoo:puma_mlp_l4"
    py = pimkit.puma.run(spec)
    same_as_cli(py, cli("puma", "run", spec, "--json"), skip=("wall_s",))  # host time
    assert py.outputs and all(isinstance(v, np.ndarray) for v in py.outputs.values())


def test_puma_compile_and_sim_match_cli(cli, tmp_path):
    spec = "zoo:puma_mlp_l4"
    summary = pimkit.puma.compile(spec, tmp_path / "py")
    assert "tiles used" in summary
    cli("puma", "compile", spec, "-o", tmp_path / "cli", json_out=False)
    py = pimkit.puma.sim(tmp_path / "py")
    same_as_cli(py, cli("puma", "sim", tmp_path / "cli", "--json"), skip=("wall_s",))


def test_puma_per_layer_progress():
    seen = []
    r = pimkit.puma.run("zoo:puma_mlp_l4", per_layer=True, progress=lambda i, n, w: seen.append((i, n, w)))
    assert seen and seen[-1][1] >= 1
    assert "layers" in r


def test_vpu_run_matches_cli(cli):
    spec = "zoo:q_mobilenet_v2?res=32"
    seen = []
    py = pimkit.vpu.run(spec, dataflow="family", progress=lambda i, n, w: seen.append(i))
    same_as_cli(py, cli("vpu", "run", spec, "--dataflow", "family", "--json"))
    assert seen and py.outputs
    every = pimkit.vpu.run(spec, characterize="layer")
    same_as_cli(every, cli("vpu", "run", spec, "--characterize", "layer", "--json"))
    assert every["characterize"] == "layer"
    assert not any("dataflow_from" in layer for layer in every["layers"])


def test_vpu_roofline_and_table3_match_cli(cli, tmp_path):
    py = pimkit.vpu.roofline(tmp_path / "py", kernels=["simd"], quick=True)
    assert py == cli("vpu", "roofline", "--kernel", "simd", "--quick", "-o", tmp_path / "cli", "--json")
    assert pimkit.vpu.table3(quick=True) == cli("vpu", "table3", "--quick", "--json")


def test_model_run_matches_interpreter_outputs(tmp_path):
    m = pimkit.load("zoo:lenet5")
    x = np.random.default_rng(0).standard_normal(m.info()["inputs"][0]["shape"])
    name = m.info()["inputs"][0]["name"]
    out = m.run({name: x})  # float64 is converted to the input's float32, as the CLI does
    (y,) = out.values()
    assert y.dtype == np.float32 and np.isfinite(y).all()
    m.export(tmp_path / "lenet.onnx")
    again = pimkit.load(tmp_path / "lenet.onnx").run({name: x.astype(np.float32)})
    np.testing.assert_array_equal(list(again.values())[0], y)


def test_gil_is_released_during_engine_work():
    import threading
    import time

    ticks = []
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks.append(time.perf_counter())
            time.sleep(0.001)

    t = threading.Thread(target=ticker)
    t.start()
    t0 = time.perf_counter()
    pimkit.xbar.sweep("zoo:lenet5", budgets=[1.0, 1.2, 1.8], sdw=[1, 5, 10], samples=[1, 8, 64])
    dt = time.perf_counter() - t0
    stop.set()
    t.join()
    # The ticker kept running while Rust worked (it would be frozen with the GIL held).
    assert len([x for x in ticks if t0 <= x <= t0 + dt]) >= min(5, int(dt / 0.002))
