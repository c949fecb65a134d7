"""A tiny ONNX graph builder that names things the way torch.onnx.export does
("/scope/Op" nodes, "/scope/Op_output_0" values, "scope.weight" initializers)."""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


class Builder:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.inputs = []
        self.outputs = []
        self.counts = {}
        self.scope = ""

    # ---------------------------------------------------------------- plumbing
    def input(self, name, shape, dtype=TensorProto.FLOAT):
        self.inputs.append(helper.make_tensor_value_info(name, dtype, list(shape)))
        return name

    def output(self, name, dtype=TensorProto.FLOAT):
        self.outputs.append(helper.make_tensor_value_info(name, dtype, None))

    def init(self, name, arr):
        self.inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    def const(self, arr):
        """An exporter-style Constant node (used for shape operands and scalars)."""
        arr = np.asarray(arr)
        name = self._name("Constant")
        out = f"{name}_output_0"
        self.nodes.append(
            helper.make_node("Constant", [], [out], name=name, value=numpy_helper.from_array(arr, out))
        )
        return out

    def _name(self, op):
        key = f"{self.scope}/{op}"
        n = self.counts.get(key, 0)
        self.counts[key] = n + 1
        return key if n == 0 else f"{key}_{n}"

    def op(self, op_type, inputs, n_out=1, **attrs):
        name = self._name(op_type)
        outs = [f"{name}_output_{i}" for i in range(n_out)]
        self.nodes.append(helper.make_node(op_type, list(inputs), outs, name=name, **attrs))
        return outs[0] if n_out == 1 else outs

    def model(self, name, opset=17):
        graph = helper.make_graph(self.nodes, name, self.inputs, self.outputs, self.inits)
        m = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="pytorch",
            producer_version="2.5.0",
        )
        m.ir_version = 8
        m = onnx.shape_inference.infer_shapes(m)
        onnx.checker.check_model(m)
        return m

    # ---------------------------------------------------------------- weights
    def uniform(self, shape, fan_in):
        bound = 1.0 / np.sqrt(fan_in)
        return self.rng.uniform(-bound, bound, size=shape).astype(np.float32)

    def param(self, path, arr):
        return self.init(path, arr.astype(np.float32))

    # ---------------------------------------------------------------- layers
    def conv(self, path, x, cin, cout, k, stride=1, pad=0, group=1, bias=True, dil=1):
        fan_in = cin // group * k * k
        w = self.param(f"{path}.weight", self.uniform((cout, cin // group, k, k), fan_in))
        ins = [x, w]
        if bias:
            ins.append(self.param(f"{path}.bias", self.uniform((cout,), fan_in)))
        self.scope = "/" + path.replace(".", "/")
        return self.op("Conv", ins, kernel_shape=[k, k], strides=[stride, stride],
                       pads=[pad] * 4, group=group, dilations=[dil, dil])

    def bn(self, path, x, c):
        r = self.rng
        ins = [x,
               self.param(f"{path}.weight", r.uniform(0.5, 1.5, c)),
               self.param(f"{path}.bias", r.normal(0, 0.1, c)),
               self.param(f"{path}.running_mean", r.normal(0, 0.1, c)),
               self.param(f"{path}.running_var", r.uniform(0.5, 1.5, c))]
        self.scope = "/" + path.replace(".", "/")
        return self.op("BatchNormalization", ins, epsilon=1e-5, momentum=0.9)

    def linear_gemm(self, path, x, fin, fout):
        w = self.param(f"{path}.weight", self.uniform((fout, fin), fin))
        b = self.param(f"{path}.bias", self.uniform((fout,), fin))
        self.scope = "/" + path.replace(".", "/")
        return self.op("Gemm", [x, w, b], alpha=1.0, beta=1.0, transB=1)

    def linear_matmul(self, path, x, fin, fout, bias=True):
        """nn.Linear on a rank>2 input exports as MatMul (pre-transposed weight) + Add."""
        w = self.param(f"onnx::MatMul_{path}", self.uniform((fin, fout), fin))
        self.scope = "/" + path.replace(".", "/")
        y = self.op("MatMul", [x, w])
        if bias:
            y = self.op("Add", [self.param(f"{path}.bias", self.uniform((fout,), fin)), y])
        return y
