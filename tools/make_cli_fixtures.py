"""Fixtures for the CLI's error-handling tests (crates/cli/tests/fixtures). Run once; commit output."""
import numpy as np
import onnx
from onnx import TensorProto, helper
import os

out = os.path.join(os.path.dirname(__file__), "..", "crates", "cli", "tests", "fixtures")
os.makedirs(out, exist_ok=True)

def save(model, name):
    onnx.save(model, os.path.join(out, name))

# A model with an operator pimkit does not know.
x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
g = helper.make_graph([helper.make_node("FooBar", ["x"], ["y"], name="mystery_node")], "unknown", [x], [y])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "unknown_op.onnx")

# A small valid model: y:0 = relu(x @ W + b), with an output name that needs sanitizing.
w = helper.make_tensor("W", TensorProto.FLOAT, [4, 3], np.linspace(-1, 1, 12).astype(np.float32).tolist())
b = helper.make_tensor("b", TensorProto.FLOAT, [3], [0.1, -0.2, 0.3])
yo = helper.make_tensor_value_info("y:0/out", TensorProto.FLOAT, [1, 3])
nodes = [
    helper.make_node("MatMul", ["x", "W"], ["mm"], name="fc"),
    helper.make_node("Add", ["mm", "b"], ["pre"], name="bias"),
    helper.make_node("Relu", ["pre"], ["y:0/out"], name="act"),
]
g = helper.make_graph(nodes, "mlp", [x], [yo], initializer=[w, b])
m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
save(m, "mlp.onnx")
xin = np.array([[1.0, -2.0, 0.5, 3.0]], dtype=np.float32)
np.save(os.path.join(out, "mlp_x.npy"), xin)
np.save(os.path.join(out, "mlp_y.npy"), np.maximum(xin @ np.linspace(-1, 1, 12).astype(np.float32).reshape(4, 3) + np.array([0.1, -0.2, 0.3], np.float32), 0))
np.save(os.path.join(out, "wrong_shape.npy"), np.zeros((2, 4), np.float32))
np.save(os.path.join(out, "wrong_dtype.npy"), np.zeros((1, 4), np.int32))
with open(os.path.join(out, "garbage.onnx"), "wb") as f:
    f.write(bytes(range(256)) * 4)
data = open(os.path.join(out, "mlp.onnx"), "rb").read()
with open(os.path.join(out, "truncated.onnx"), "wb") as f:
    f.write(data[: len(data) // 2])
print("wrote fixtures to", out)

# A QDQ-quantized matmul (onnxruntime's default quant_format): float MatMul between
# DequantizeLinear and QuantizeLinear; `pimkit vpu run` says to re-quantize as QOperator.
xs = helper.make_tensor("xs", TensorProto.FLOAT, [], [0.05])
xz = helper.make_tensor("xz", TensorProto.UINT8, [], [128])
wq = helper.make_tensor("Wq", TensorProto.INT8, [4, 3], [3, -7, 12, 25, -60, 1, 0, 9, -14, 33, 8, -2])
ws = helper.make_tensor("ws", TensorProto.FLOAT, [], [0.02])
wz = helper.make_tensor("wz", TensorProto.INT8, [], [0])
ys = helper.make_tensor("ys", TensorProto.FLOAT, [], [0.01])
yz = helper.make_tensor("yz", TensorProto.UINT8, [], [128])
yq = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3])
nodes = [
    helper.make_node("QuantizeLinear", ["x", "xs", "xz"], ["x_q"], name="x_quant"),
    helper.make_node("DequantizeLinear", ["x_q", "xs", "xz"], ["x_dq"], name="x_dequant"),
    helper.make_node("DequantizeLinear", ["Wq", "ws", "wz"], ["W_dq"], name="w_dequant"),
    helper.make_node("MatMul", ["x_dq", "W_dq"], ["mm"], name="fc"),
    helper.make_node("QuantizeLinear", ["mm", "ys", "yz"], ["y_q"], name="y_quant"),
    helper.make_node("DequantizeLinear", ["y_q", "ys", "yz"], ["y"], name="y_dequant"),
]
g = helper.make_graph(nodes, "qdq_mlp", [x], [yq], initializer=[xs, xz, wq, ws, wz, ys, yz])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "qdq_matmul.onnx")

# Two outputs whose names sanitize to the same file name ('a/b' and 'a_b'): exec --out
# must write both (the second as a_b-2.npy), never overwrite one with the other.
ab = helper.make_tensor_value_info("a/b", TensorProto.FLOAT, [1, 4])
a_b = helper.make_tensor_value_info("a_b", TensorProto.FLOAT, [1, 4])
nodes = [helper.make_node("Relu", ["x"], ["a/b"], name="relu"), helper.make_node("Neg", ["x"], ["a_b"], name="neg")]
g = helper.make_graph(nodes, "colliding", [x], [ab, a_b])
save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), "colliding_outputs.onnx")
