"""pimkit.xbar.accuracy, pimkit.quantize and pimkit.report against the CLI: the same JSON,
the same quantized model, the same report files."""

import json

import numpy as np
import pytest

import pimkit
from conftest import same_as_cli


def test_xbar_accuracy_matches_cli(cli, tmp_path):
    spec = "zoo:lenet5"
    py = pimkit.xbar.accuracy(spec, trials=2, random=2, sweep={"adc_bits": [4, 8]},
                              variation=0.05, out=tmp_path / "py")
    c = cli("xbar", "accuracy", spec, "--trials", "2", "--random", "2", "--sweep",
            "adc_bits=4,8", "--variation", "0.05", "--json", "-o", tmp_path / "cli")
    same_as_cli(py, c)
    assert py["engine"] == "accuracy" and len(py["points"]) == 2
    for name in ("result.json", "points.csv", "layers.csv", "curves.svg"):
        assert (tmp_path / "py" / name).read_text() == (tmp_path / "cli" / name).read_text(), name


def test_xbar_accuracy_points_are_priced_as_the_cli_prices_them(cli):
    spec = "zoo:lenet5"
    args = dict(trials=1, random=2, sweep={"adc_bits": [4, 8]}, components="neurosim")
    py = pimkit.xbar.accuracy(spec, **args)
    c = cli("xbar", "accuracy", spec, "--trials", "1", "--random", "2", "--sweep", "adc_bits=4,8",
            "--components", "neurosim", "--json")
    assert py["costs"] == c["costs"] and py["components"] == "neurosim"
    assert len(py["costs"]) == 2 and py["costs"][0]["energy_uj"] < py["costs"][1]["energy_uj"]
    assert pimkit.xbar.accuracy(spec, trials=1, components=None)["costs"] == []


def test_xbar_accuracy_takes_arrays_and_checks_them():
    m = pimkit.load("zoo:lenet5")
    (name, ty), = [(i["name"], i) for i in m.info()["inputs"]]
    x = np.random.default_rng(0).standard_normal(ty["shape"])  # float64: converted
    r = pimkit.xbar.accuracy(m, inputs=[{name: x}], trials=1, variation=0.02)
    assert r["inputs"] == 1
    with pytest.raises(pimkit.InputError, match="no input 'zz'"):
        pimkit.xbar.accuracy(m, inputs=[{name: x, "zz": x}], trials=1)
    with pytest.raises(pimkit.InputError, match="expects"):
        pimkit.xbar.accuracy(m, inputs=[{name: x[..., :3]}], trials=1)
    with pytest.raises(pimkit.InputError, match="calibrate_adc"):
        pimkit.xbar.accuracy(m, adc_range="clipped", calibrate_adc=True)


def test_quantize_matches_cli(cli, tmp_path):
    spec = "zoo:lenet5"
    out = tmp_path / "cli.onnx"
    cli("quantize", spec, "--random", "3", "-o", out, "--json")
    q = pimkit.quantize(spec, random=3)
    q.export(tmp_path / "py.onnx")
    assert (tmp_path / "py.onnx").read_bytes() == out.read_bytes()
    assert any(op.startswith("QLinear") for op in q.info()["ops"])
    # Given samples: the same arrays the random calibration used give the same model.
    with pytest.raises(pimkit.InputError, match="u8 or i8"):
        pimkit.quantize(spec, act="u4")


def test_report_writes_the_cli_report(cli, tmp_path):
    spec = "zoo:mlp"
    index = pimkit.report([spec], tmp_path / "py")
    cli("report", spec, "-o", tmp_path / "cli", json_out=False)
    assert index.endswith("index.html")
    py = json.loads((tmp_path / "py" / "report.json").read_text())
    c = json.loads((tmp_path / "cli" / "report.json").read_text())
    assert [s["engine"] for s in py["summary"]] == [s["engine"] for s in c["summary"]]
    assert [s["status"] for s in py["summary"]] == [s["status"] for s in c["summary"]]
    assert sorted(p.name for p in (tmp_path / "py").iterdir()) == sorted(
        p.name for p in (tmp_path / "cli").iterdir())
    # A loaded model works too and is named by its spec.
    index = pimkit.report(pimkit.load(spec), tmp_path / "loaded")
    assert "mlp" in (tmp_path / "loaded" / "index.html").read_text()
