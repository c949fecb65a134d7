"""numpy in and out: every dtype numpy has round-trips through the reference interpreter
bit for bit (an ONNX Identity model per dtype, built with the onnx package)."""

import numpy as np
import pytest

import pimkit

onnx = pytest.importorskip("onnx")
from onnx import TensorProto, helper  # noqa: E402

DTYPES = {
    np.float32: TensorProto.FLOAT,
    np.float64: TensorProto.DOUBLE,
    np.float16: TensorProto.FLOAT16,
    np.int8: TensorProto.INT8,
    np.int16: TensorProto.INT16,
    np.int32: TensorProto.INT32,
    np.int64: TensorProto.INT64,
    np.uint8: TensorProto.UINT8,
    np.uint16: TensorProto.UINT16,
    np.uint32: TensorProto.UINT32,
    np.uint64: TensorProto.UINT64,
    np.bool_: TensorProto.BOOL,
}


def identity(elem, shape):
    x = helper.make_tensor_value_info("x", elem, shape)
    y = helper.make_tensor_value_info("y", elem, shape)
    g = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "ident", [x], [y])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def sample(dt, shape, rng):
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(bool)
    if np.issubdtype(dt, np.integer):
        info = np.iinfo(dt)
        return rng.integers(info.min, info.max, shape, dtype=dt, endpoint=True)
    return rng.standard_normal(shape).astype(dt)


@pytest.mark.parametrize("dt", list(DTYPES), ids=lambda d: np.dtype(d).name)
def test_round_trip_every_dtype(dt):
    rng = np.random.default_rng(1)
    m = pimkit.load(identity(DTYPES[dt], [2, 3, 4]))  # an onnx.ModelProto
    x = sample(dt, (2, 3, 4), rng)
    y = m.run({"x": x})["y"]
    assert y.dtype == np.dtype(dt) and y.shape == x.shape
    np.testing.assert_array_equal(y, x)
    # A strided view goes in in logical order.
    big = sample(dt, (4, 3, 8), rng)
    view = big[::2, :, ::2]
    np.testing.assert_array_equal(m.run({"x": view})["y"], view)
    # Special float values survive.
    if np.issubdtype(dt, np.floating):
        s = np.array([np.nan, np.inf, -np.inf, -0.0] * 6, dtype=dt).reshape(2, 3, 4)
        np.testing.assert_array_equal(m.run({"x": s})["y"], s)


def test_bytes_and_bind_and_dims():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])
    s = helper.make_tensor_value_info("s", TensorProto.FLOAT, [])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])
    g = helper.make_graph([helper.make_node("Mul", ["x", "s"], ["y"])], "scale", [x, s], [y])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m = pimkit.load(model.SerializeToString(), dims={"n": 2}, bind={"s": 2.0})
    info = m.info()
    assert [i["name"] for i in info["inputs"]] == ["x"]
    assert info["inputs"][0]["shape"] == [2, 3]
    out = m.run({"x": np.ones((2, 3), np.float32)})["y"]
    np.testing.assert_array_equal(out, np.full((2, 3), 2.0, np.float32))


def test_model_pickles_as_onnx():
    import pickle

    m = pimkit.load("zoo:lenet5")
    m2 = pickle.loads(pickle.dumps(m))
    assert m2.label == m.label and m2.info()["macs"] == m.info()["macs"]


def test_a_qdq_model_gives_onnxruntimes_outputs_and_qdq_float_keeps_float_ops():
    """onnxruntime's default session runs QDQ groups as integer nodes; so does pimkit.load,
    bit for bit (outputs committed by tools/gen_model_vectors.py)."""
    import pathlib
    case = pathlib.Path(__file__).resolve().parents[3] / "tests/data/ort-models/qdq_qops_pertensor"
    x = np.load(case / "input_0.npy")
    want = [np.load(case / f"output_{i}.npy") for i in range(2)]
    fused = pimkit.load(case / "model.onnx")
    assert any("QDQ groups" in n for n in fused.notes)
    assert "QLinearConv" in fused.info()["ops"]
    got = list(fused.run({"input": x}).values())
    for g, w in zip(got, want):
        assert np.array_equal(g, w)
    plain = pimkit.load(case / "model.onnx", qdq_float=True)
    assert not any("QDQ groups" in n for n in plain.notes)
    assert "QLinearConv" not in plain.info()["ops"] and "Conv" in plain.info()["ops"]
