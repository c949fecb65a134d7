"""Invalid ONNX models for the CLI's validation tests (crates/cli/tests/fixtures/invalid).

Each model breaks one rule that onnxruntime's loader enforces (or, where noted, one that
onnxruntime lets through but that would make pimkit compute a wrong answer). The script
checks onnxruntime's verdict on every file and prints it; run it once and commit the
output:

    /work/venv/bin/python tools/make_invalid_models.py
"""

import os

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper

OUT = os.path.join(os.path.dirname(__file__), "..", "crates", "cli", "tests", "fixtures", "invalid")


def model(nodes, inputs, outputs, inits=(), opset=17, ir=8, domains=()):
    g = helper.make_graph(nodes, "invalid", inputs, outputs, initializer=list(inits))
    ops = [helper.make_opsetid("", opset)] + [helper.make_opsetid(d, v) for d, v in domains]
    m = helper.make_model(g, opset_imports=ops)
    m.ir_version = ir
    return m


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, dtype, shape)


def zp(name, dtype, values):
    """A zero point stored as ONNX stores 8/16-bit integers: in int32_data (so a value
    outside the dtype's range can be written; onnxruntime wraps it silently)."""
    t = T()
    t.name = name
    t.data_type = dtype
    t.int32_data.extend(values)
    return t


def f32(name, dims, vals):
    return helper.make_tensor(name, T.FLOAT, dims, vals)


X = vi("x", T.FLOAT, [1, 4])
Y = vi("y", T.FLOAT, [1, 4])
W = f32("W", [4, 4], np.eye(4, dtype=np.float32).flatten().tolist())


def qmatmul(az, opset=13, scale=0.1, name="qmm"):
    """QLinearMatMul y = a @ b with `az` as a's zero point."""
    a = vi("a", T.UINT8, [2, 2])
    y = vi("y", T.UINT8, [2, 2])
    inits = [
        f32("as", [], [scale]),
        az,
        helper.make_tensor("b", T.UINT8, [2, 2], [1, 2, 3, 4]),
        f32("bs", [], [0.1]),
        helper.make_tensor("bz", T.UINT8, [], [0]),
        f32("ys", [], [0.1]),
        helper.make_tensor("yz", T.UINT8, [], [0]),
    ]
    n = helper.make_node("QLinearMatMul", ["a", "as", az.name, "b", "bs", "bz", "ys", "yz"], ["y"], name=name)
    return model([n], [a], [y], inits, opset=opset)


def qconv(wz):
    x = vi("x", T.UINT8, [1, 1, 3, 3])
    y = vi("y", T.UINT8, [1, 1, 3, 3])
    inits = [
        f32("xs", [], [0.1]),
        helper.make_tensor("xz", T.UINT8, [], [0]),
        helper.make_tensor("w", T.INT8, [1, 1, 1, 1], [2]),
        f32("ws", [], [0.1]),
        wz,
        f32("ys", [], [0.1]),
        helper.make_tensor("yz", T.UINT8, [], [0]),
    ]
    n = helper.make_node("QLinearConv", ["x", "xs", "xz", "w", "ws", wz.name, "ys", "yz"], ["y"], name="qconv")
    return model([n], [x], [y], inits, opset=13)


def quantize(scale):
    y = vi("y", T.UINT8, [1, 4])
    inits = [f32("s", [], [scale]), helper.make_tensor("z", T.UINT8, [], [0])]
    n = helper.make_node("QuantizeLinear", ["x", "s", "z"], ["y"], name="quant")
    return model([n], [X], [y], inits, opset=13)


relu = helper.make_node("Relu", ["x"], ["y"], name="relu")
CASES = {
    # Two initializers named W: onnxruntime refuses the duplicate definition.
    "duplicate_initializer.onnx": model(
        [helper.make_node("MatMul", ["x", "W"], ["y"], name="fc")],
        [X],
        [Y],
        [W, f32("W", [4, 4], [0.0] * 16)],
    ),
    # Two nodes write h.
    "duplicate_node_output.onnx": model(
        [
            helper.make_node("Relu", ["x"], ["h"], name="first"),
            helper.make_node("Neg", ["x"], ["h"], name="second"),
            helper.make_node("Abs", ["h"], ["y"], name="abs"),
        ],
        [X],
        [Y],
    ),
    "duplicate_graph_output.onnx": model([relu], [X], [Y, Y]),
    "duplicate_attribute.onnx": model(
        [
            helper.make_node(
                "LeakyRelu",
                ["x"],
                ["y"],
                name="leaky",
                alpha=0.1,
            )
        ],
        [X],
        [Y],
    ),
    # An int32 zero point on QLinearMatMul/QLinearConv (their zero points are u8/i8).
    "zero_point_int32.onnx": qmatmul(zp("az", T.INT32, [300])),
    "zero_point_int32_conv.onnx": qconv(zp("wz", T.INT32, [-200])),
    # A uint8/int8 zero point whose stored value is outside the type (onnxruntime wraps
    # 300 to 44 and -200 to 56 without a word; pimkit refuses the corrupt tensor).
    "zero_point_u8_300.onnx": qmatmul(zp("az", T.UINT8, [300])),
    "zero_point_i8_-200.onnx": qconv(zp("wz", T.INT8, [-200])),
    "scale_zero.onnx": quantize(0.0),
    "scale_nan.onnx": quantize(float("nan")),
    "scale_negative.onnx": qmatmul(zp("az", T.UINT8, [0]), scale=-0.5),
    # QLinearMatMul exists from opset 10.
    "op_before_its_opset.onnx": qmatmul(zp("az", T.UINT8, [0]), opset=9),
    "ir_version_0.onnx": model([relu], [X], [Y], ir=0),
    "ir_version_negative.onnx": model([relu], [X], [Y], ir=-1),
    "ir_version_huge.onnx": model([relu], [X], [Y], ir=1 << 40),
}


def contrib(op, inputs, inits, domain="com.microsoft", **attrs):
    """One onnxruntime contrib node with a broken shape or attribute: `inputs` {name:
    shape} (graph inputs), `inits` {name: array}; input order is inputs then inits."""
    names = list(inputs) + list(inits)
    node = helper.make_node(op, names, ["y"], name=op, domain=domain, **attrs)
    ins = [vi(k, T.FLOAT, v) for k, v in inputs.items()]
    from onnx import numpy_helper
    return model([node], ins, [vi("y", T.FLOAT, None)],
                 [numpy_helper.from_array(v, k) for k, v in inits.items()], domains=[("com.microsoft", 1)])


CASES.update({
    # onnxruntime's contrib ops with shapes or attributes their kernels would refuse.
    "contrib_rotary_scalar_cache.onnx": contrib(
        "RotaryEmbedding", {"x": [1, 2, 8]},
        {"position_ids": np.array([[0, 1]], np.int64), "cos_cache": np.array(1, np.float32),
         "sin_cache": np.array(1, np.float32)}, num_heads=2),
    "contrib_mha_2d_key.onnx": contrib("MultiHeadAttention", {"q": [1, 3, 4], "k": [1, 2], "v": [1, 3, 4]}, {}, num_heads=2),
    "contrib_attention_no_heads.onnx": contrib("Attention", {"x": [1, 3, 4]}, {"w": np.ones((4, 12), np.float32)}, num_heads=0),
    "contrib_matmulnbits_huge.onnx": contrib(
        "MatMulNBits", {"a": [1, 8]}, {"b": np.zeros((3, 1, 8), np.uint8), "s": np.ones(3, np.float32)},
        K=1 << 31, N=1 << 31, block_size=16, bits=4),
    "contrib_matmulnbits_3bit.onnx": contrib(
        "MatMulNBits", {"a": [1, 16]}, {"b": np.zeros((3, 1, 6), np.uint8), "s": np.ones(3, np.float32)},
        K=16, N=3, block_size=16, bits=3),
    "contrib_fusedmatmul_rank1.onnx": contrib("FusedMatMul", {"a": [3], "b": [3]}, {}, transA=1),
})
# helper.make_node keeps attributes in a dict: add the second alpha by hand.
CASES["duplicate_attribute.onnx"].graph.node[0].attribute.append(helper.make_attribute("alpha", 0.5))


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, m in CASES.items():
        data = m.SerializeToString()
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
        try:
            ort.InferenceSession(data, providers=["CPUExecutionProvider"])
            verdict = "onnxruntime loads it"
        except Exception as e:  # noqa: BLE001 - any load failure is the verdict
            verdict = "onnxruntime rejects it: " + str(e).splitlines()[0][:160]
        print(f"{name}: {verdict}")


if __name__ == "__main__":
    main()
