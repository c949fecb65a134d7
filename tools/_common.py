"""Helpers shared by the test-vector generators (tools/gen_*.py). Data generation only."""

import os
import shutil
import tomllib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data")
KNOWN_FAIL = os.path.join(ROOT, "tools", "known_fail.toml")

OPT_LEVELS = {
    "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
    "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
}


def known_fail(suite):
    """Case -> reason for the suite's known failures (tools/known_fail.toml)."""
    if not os.path.exists(KNOWN_FAIL):
        return {}
    with open(KNOWN_FAIL, "rb") as f:
        return tomllib.load(f).get(suite, {})


def tensor_dtype(arr_or_dtype):
    if isinstance(arr_or_dtype, (np.ndarray, np.generic)):
        dt = arr_or_dtype.dtype
    else:
        dt = np.dtype(arr_or_dtype)
    return helper.np_dtype_to_tensor_dtype(dt)


def vi(name, dtype, shape):
    return helper.make_tensor_value_info(name, tensor_dtype(dtype), list(shape))


def make_model(nodes, inputs, initializers, outputs, opset=17, ms=False, name="g"):
    """inputs: {name: array} (graph inputs, values used as test data);
    initializers: {name: array}; outputs: [(name, dtype)]. Call finalize_outputs after
    running it to fill in output shapes."""
    graph = helper.make_graph(
        nodes,
        name,
        [vi(n, a.dtype, a.shape) for n, a in inputs.items()],
        [helper.make_tensor_value_info(n, tensor_dtype(d), None) for n, d in outputs],
        [numpy_helper.from_array(np.asarray(a), n) for n, a in initializers.items()],
    )
    opsets = [helper.make_opsetid("", opset)]
    if ms:
        opsets.append(helper.make_opsetid("com.microsoft", 1))
    model = helper.make_model(graph, opset_imports=opsets, producer_name="pimkit-tools")
    model.ir_version = 8
    return model


def finalize_outputs(model, outs):
    """Write the concrete output shapes (as exporters do) and validate the model."""
    for vi_, a in zip(model.graph.output, outs):
        shape = vi_.type.tensor_type.shape
        shape.Clear()
        for d in a.shape:
            shape.dim.add().dim_value = d
    onnx.checker.check_model(model)


def run_ort(model, feeds, levels=("none", "all")):
    """Run with every optimization level; they must agree bit for bit (else the golden
    output would depend on a session setting). Returns the outputs of the last level."""
    data = model if isinstance(model, (bytes, str)) else model.SerializeToString()
    results = {}
    for lvl in levels:
        so = ort.SessionOptions()
        so.graph_optimization_level = OPT_LEVELS[lvl]
        so.intra_op_num_threads = 1
        sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
        results[lvl] = sess.run(None, feeds)
    first = results[levels[0]]
    for lvl in levels[1:]:
        for a, b in zip(first, results[lvl]):
            if a.dtype.kind == "f":
                same = np.allclose(a, b, atol=1e-5, rtol=1e-5)
            else:
                same = np.array_equal(a, b)
            if not same:
                raise RuntimeError(f"onnxruntime optimization levels {levels[0]} and {lvl} disagree")
    return results[levels[-1]]


def reset_dir(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(path)


def save_case(suite_dir, case, model_or_path, inputs, outputs):
    """Write <suite_dir>/<case>/{model.onnx,input_<i>.npy,output_<i>.npy}."""
    d = os.path.join(suite_dir, case)
    reset_dir(d)
    if isinstance(model_or_path, str):
        shutil.copy(model_or_path, os.path.join(d, "model.onnx"))
    else:
        onnx.save(model_or_path, os.path.join(d, "model.onnx"))
    for i, a in enumerate(inputs):
        np.save(os.path.join(d, f"input_{i}.npy"), np.array(a, order="C"))
    for i, a in enumerate(outputs):
        np.save(os.path.join(d, f"output_{i}.npy"), np.array(a, order="C"))
    return d


def toml_str(s):
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def write_manifest(suite_dir, header, entries):
    """entries: dicts with name, status, and optional reason/desc/data/exact/atol/rtol/ops."""
    with open(os.path.join(suite_dir, "manifest.toml"), "w") as f:
        f.write(header)
        for e in entries:
            f.write(f"\n[case.{e['name']}]\n")
            for key in ("status", "reason", "desc", "data"):
                if key in e:
                    f.write(f"{key} = {toml_str(e[key])}\n")
            for key in ("exact", "bound"):
                if key in e:
                    f.write(f"{key} = {'true' if e[key] else 'false'}\n")
            for key in ("atol", "rtol", "opset"):
                if key in e:
                    f.write(f"{key} = {e[key]}\n")
            for key in ("ops", "frozen", "trimmed"):
                if e.get(key):
                    f.write(f"{key} = [" + ", ".join(toml_str(o) for o in e[key]) + "]\n")


# op type -> (weight input index, weight zero-point input index)
WEIGHT_SLOTS = {"QLinearConv": (3, 5), "QLinearMatMul": (3, 5), "QGemm": (3, 5),
                "MatMulInteger": (1, 3), "ConvInteger": (1, 3)}


def u8_weight_twin(model):
    """A copy of `model` with s8 weight initializers (and their zero points) shifted by +128
    to u8: the same arithmetic, but onnxruntime then uses its u8 x u8 kernels, which do not
    saturate on x86 CPUs without VNNI (its u8 x s8 kernels clip pair sums at 16 bits).
    Returns None when the model has no s8 weights."""
    m = onnx.ModelProto()
    m.CopyFrom(model)
    inits = {i.name: i for i in m.graph.initializer}
    names = set()
    for n in m.graph.node:
        for i in WEIGHT_SLOTS.get(n.op_type, ()):
            if i < len(n.input) and n.input[i] in inits:
                names.add(n.input[i])
    changed = False
    for name in sorted(names):
        t = inits[name]
        if t.data_type == onnx.TensorProto.INT8:
            a = numpy_helper.to_array(t).astype(np.int16) + 128
            t.CopyFrom(numpy_helper.from_array(a.astype(np.uint8), name))
            changed = True
    return m if changed else None
