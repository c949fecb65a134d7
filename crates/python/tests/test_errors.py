"""Bad input raises pimkit.InputError with the CLI's one-line message; nothing panics."""

import numpy as np
import pytest

import pimkit


def test_missing_file_is_input_error(tmp_path):
    with pytest.raises(pimkit.InputError, match="none.onnx: no such file"):
        pimkit.load(tmp_path / "none.onnx")


def test_unknown_zoo_entry():
    with pytest.raises(pimkit.InputError, match="nosuchnet"):
        pimkit.load("zoo:nosuchnet")


def test_bad_onnx_bytes():
    with pytest.raises(pimkit.InputError):
        pimkit.load(b"this is not onnx")


def test_bad_options_are_input_errors(tmp_path):
    with pytest.raises(pimkit.InputError, match="mode"):
        pimkit.xbar.map("zoo:lenet5", mode="bogus")
    with pytest.raises(pimkit.InputError, match="budget"):
        pimkit.xbar.sweep("zoo:lenet5", budgets=[-1], sdw=[1], samples=[1])
    with pytest.raises(pimkit.InputError, match="dataflow"):
        pimkit.vpu.run("zoo:q_mobilenet_v2?res=32", dataflow="zz")
    with pytest.raises(pimkit.InputError, match="characterize"):
        pimkit.vpu.run("zoo:q_mobilenet_v2?res=32", characterize="zz")
    (tmp_path / "bad.toml").write_text("[crossbar]\nrows = 0\n")
    with pytest.raises(pimkit.InputError, match="crossbar.rows"):
        pimkit.xbar.map("zoo:lenet5", arch=tmp_path / "bad.toml")
    with pytest.raises(pimkit.InputError, match="executor"):
        pimkit.xbar.sweep("zoo:lenet5", budgets=[1], sdw=[1], samples=[1], executor="bogus")


def test_run_input_errors():
    m = pimkit.load("zoo:lenet5")
    with pytest.raises(pimkit.InputError, match="missing input"):
        m.run({})
    with pytest.raises(pimkit.InputError, match="no input 'zz'"):
        m.run({"zz": np.zeros(1)})
    name = m.info()["inputs"][0]["name"]
    with pytest.raises(pimkit.InputError):
        m.run({name: np.zeros((1, 2), np.float32)})  # wrong shape
    with pytest.raises(pimkit.InputError, match="cannot be a tensor"):
        m.run({name: np.array(["a"])})


def test_errors_are_exceptions_not_base_exceptions():
    assert issubclass(pimkit.InputError, Exception)
    assert issubclass(pimkit.InternalError, Exception)
    assert not issubclass(pimkit.InputError, pimkit.InternalError)


def test_progress_callback_errors_propagate():
    def boom(i, n, what):
        raise ValueError("stop here")

    with pytest.raises(ValueError, match="stop here"):
        pimkit.puma.run("zoo:puma_mlp_l4", per_layer=True, progress=boom)
