#!/usr/bin/env python3
"""Copy the official ONNX backend node tests that pimkit can run into tests/data/onnx-node.

Source: the node test data shipped in the installed onnx wheel
(onnx/backend/test/data/node/<case>/model.onnx + test_data_set_0/*.pb).

For every case whose nodes all use ops pimkit supports, this script either
  * copies it to tests/data/onnx-node/<case>/{model.onnx,input_<i>.npy,output_<i>.npy}, or
  * records it as `skipped` with a reason (dtype pimkit lacks, training mode, sequences, ...).
Cases with any op pimkit does not implement are out of scope and not listed.

pimkit folds constant operands (shapes, axes, pads, clip bounds, quantization parameters)
into attributes, as every exporter writes them as initializers. The node tests feed them as
graph inputs instead (directly, or through a small shape computation), so this script turns
those inputs into initializers holding the test values ("frozen" in the manifest). The
remaining inputs keep their graph order.

Statuses come from the [onnx-node] table of tools/known_fail.toml (case -> reason); everything else copied is
`pass`. The Rust harness (crates/conformance/tests/onnx_node.rs) checks both directions.

Usage: python3 tools/gen_node_cases.py [--out tests/data/onnx-node]
"""

import argparse
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from _common import DATA, known_fail as load_known_fail, write_manifest

NODE_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")

SUPPORTED_OPS = set(
    """Add Sub Mul Div Pow Sqrt Exp Log Neg Abs Reciprocal Relu Sigmoid Tanh Erf Floor Ceil
    Round Sign Sin Cos Not And Or Xor Equal Less Greater LessOrEqual GreaterOrEqual Mod Where
    Cast Clip Conv MaxPool AveragePool GlobalAveragePool GlobalMaxPool Gemm MatMul
    BatchNormalization LayerNormalization Softmax LogSoftmax Reshape Flatten Transpose Concat
    Split Slice Gather Squeeze Unsqueeze Expand Pad Tile ReduceMean ReduceSum ReduceMax
    ReduceMin ReduceProd ReduceSumSquare ReduceL2 ArgMax LSTM GRU QuantizeLinear
    DequantizeLinear QLinearMatMul QLinearConv MatMulInteger ConvInteger HardSigmoid HardSwish
    LeakyRelu Elu Softplus Gelu Identity Dropout Shape ConstantOfShape Range Size IsNaN Max Min
    Sum Mean Constant PRelu ConvTranspose Resize Upsample""".split()
)

# dtypes pimkit's IR has (crates/ir/src/dtype.rs).
SUPPORTED_DTYPES = {
    TensorProto.FLOAT: "f32",
    TensorProto.FLOAT16: "f16",
    TensorProto.INT64: "i64",
    TensorProto.INT32: "i32",
    TensorProto.INT8: "i8",
    TensorProto.UINT8: "u8",
    TensorProto.BOOL: "bool",
}

# op type -> input indices that pimkit folds into attributes (must be constants).
CONST_OPERANDS = {
    "Reshape": [1],
    "Slice": [1, 2, 3, 4],
    "Pad": [1, 2, 3],
    "Tile": [1],
    "Expand": [1],
    "Clip": [1, 2],
    "Split": [1],
    "Squeeze": [1],
    "Unsqueeze": [1],
    "ReduceMean": [1],
    "ReduceSum": [1],
    "ReduceMax": [1],
    "ReduceMin": [1],
    "ReduceProd": [1],
    "ReduceSumSquare": [1],
    "ReduceL2": [1],
    "ConstantOfShape": [0],
    "Range": [0, 1, 2],
    "Dropout": [1, 2],
    "QuantizeLinear": [1, 2],
    "DequantizeLinear": [1, 2],
    "QLinearMatMul": [1, 2, 4, 5, 6, 7],
    "QLinearConv": [1, 2, 4, 5, 6, 7],
    "MatMulInteger": [2, 3],
    "ConvInteger": [2, 3],
    "Resize": [1, 2, 3],
    "Upsample": [1],
}


def dtype_name(elem_type):
    return TensorProto.DataType.Name(elem_type).lower()


def check_types(model):
    """Return a skip reason if the model uses a type pimkit lacks, else None."""
    g = model.graph
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        t = vi.type
        if not t.HasField("tensor_type"):
            return f"value '{vi.name}' is a {t.WhichOneof('value')}, not a tensor"
        et = t.tensor_type.elem_type
        if et not in SUPPORTED_DTYPES:
            return f"dtype {dtype_name(et)} (value '{vi.name}') not in pimkit's IR"
    for init in g.initializer:
        if init.data_type not in SUPPORTED_DTYPES:
            return f"dtype {dtype_name(init.data_type)} (initializer '{init.name}')"
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type not in SUPPORTED_DTYPES:
                return f"dtype {dtype_name(a.t.data_type)} (attribute of {n.op_type})"
            if n.op_type == "Cast" and a.name == "to" and a.i not in SUPPORTED_DTYPES:
                return f"Cast to {dtype_name(a.i)}"
            if a.name == "output_dtype" and a.i and a.i not in SUPPORTED_DTYPES:
                return f"output_dtype {dtype_name(a.i)}"
    return None


def check_semantics(model):
    """Skip reasons for features outside pimkit's scope (inference-only IR)."""
    for n in model.graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "BatchNormalization" and (
            attrs.get("training_mode", 0) == 1 or len(n.output) > 1
        ):
            return "BatchNormalization training mode (running statistics outputs)"
        if n.op_type == "Dropout" and len(n.input) > 2 and n.input[2]:
            return "Dropout training_mode input (random mask)"
        if n.op_type in ("LSTM", "GRU") and len(n.input) > 4 and n.input[4]:
            return f"{n.op_type} sequence_lens (variable-length batches)"
    for vi in model.graph.input:
        for d in vi.type.tensor_type.shape.dim:
            if not d.HasField("dim_value"):
                return f"dynamic input shape ('{vi.name}')"
    return None


# op type -> number of outputs pimkit's IR produces; extra outputs (training statistics,
# dropout masks) are cut from the copied model when nothing but the graph output reads them.
TRIM_OUTPUTS = {"LayerNormalization": 1, "Dropout": 1}


def trim_extra_outputs(model, outs):
    """Drop inference-irrelevant extra outputs; returns (names dropped, remaining outs)."""
    g = model.graph
    consumed = {i for n in g.node for i in n.input}
    dropped = []
    for n in g.node:
        keep = TRIM_OUTPUTS.get(n.op_type)
        if keep is None or len(n.output) <= keep:
            continue
        extra = [o for o in n.output[keep:] if o]
        if any(o in consumed for o in extra):
            continue
        del n.output[keep:]
        dropped.extend(extra)
    if not dropped:
        return [], outs
    pairs = [(vi, a) for vi, a in zip(g.output, outs) if vi.name not in dropped]
    del g.output[:]
    g.output.extend(vi for vi, _ in pairs)
    return dropped, [a for _, a in pairs]


def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def freeze_const_operands(model, inputs):
    """Turn graph inputs whose values decide a constant operand into initializers.

    A value must be constant if it feeds a CONST_OPERANDS slot, or if it is an input of a
    node whose output must be constant (Shape and Size only read their input's shape, so
    the walk stops there). Graph inputs reached this way are frozen with their test
    values. Returns the names frozen; `inputs` maps input name -> test value."""
    g = model.graph
    producer = {o: n for n in g.node for o in n.output if o}
    need = []
    for n in g.node:
        for idx in CONST_OPERANDS.get(n.op_type, []):
            if idx < len(n.input) and n.input[idx]:
                need.append(n.input[idx])
    seen, to_freeze = set(), []
    input_names = [vi.name for vi in g.input]
    while need:
        v = need.pop()
        if v in seen:
            continue
        seen.add(v)
        if v in input_names:
            to_freeze.append(v)
        elif v in producer and producer[v].op_type not in ("Shape", "Size"):
            need.extend(i for i in producer[v].input if i)
    to_freeze = [n for n in input_names if n in to_freeze]  # keep graph order
    for name in to_freeze:
        g.initializer.append(numpy_helper.from_array(inputs[name], name))
    kept = [vi for vi in g.input if vi.name not in to_freeze]
    del g.input[:]
    g.input.extend(kept)
    return to_freeze


def opset_of(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(DATA, "onnx-node"))
    args = ap.parse_args()
    known_fail = load_known_fail("onnx-node")

    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)

    entries = []
    for case in sorted(os.listdir(NODE_DIR)):
        src = os.path.join(NODE_DIR, case)
        model = onnx.load(os.path.join(src, "model.onnx"))
        ops = sorted({n.op_type for n in model.graph.node})
        if any(n.domain not in ("", "ai.onnx") for n in model.graph.node):
            continue
        if not set(ops) <= SUPPORTED_OPS:
            continue
        entry = {"name": case, "ops": ops, "opset": opset_of(model)}
        reason = check_types(model) or check_semantics(model)
        data_dir = os.path.join(src, "test_data_set_0")
        if reason is None:
            try:
                ins = [load_pb(os.path.join(data_dir, f"input_{i}.pb")) for i in range(len(model.graph.input))]
                outs = [load_pb(os.path.join(data_dir, f"output_{i}.pb")) for i in range(len(model.graph.output))]
            except Exception as e:  # sequences/optionals do not parse as TensorProto
                reason = f"test data is not plain tensors ({type(e).__name__})"
        if reason is not None:
            entry.update(status="skipped", reason=reason)
            entries.append(entry)
            continue

        by_name = {vi.name: a for vi, a in zip(model.graph.input, ins)}
        frozen = freeze_const_operands(model, by_name)
        trimmed, outs = trim_extra_outputs(model, outs)
        dst = os.path.join(args.out, case)
        os.makedirs(dst)
        onnx.save(model, os.path.join(dst, "model.onnx"))
        for i, vi in enumerate(model.graph.input):
            np.save(os.path.join(dst, f"input_{i}.npy"), by_name[vi.name])
        for i, a in enumerate(outs):
            np.save(os.path.join(dst, f"output_{i}.npy"), a)
        if frozen:
            entry["frozen"] = frozen
        if trimmed:
            entry["trimmed"] = trimmed
        if case in known_fail:
            entry.update(status="known-fail", reason=known_fail[case])
        else:
            entry["status"] = "pass"
        entries.append(entry)

    stale = sorted(set(known_fail) - {e["name"] for e in entries if e["status"] == "known-fail"})
    if stale:
        print(f"warning: known-fail entries not copied: {stale}", file=sys.stderr)

    header = (
        f"# Generated by tools/gen_node_cases.py from the onnx {onnx.__version__} wheel; do not edit.\n"
        "# status: pass (must match), known-fail (must still fail; edit tools/known_fail.toml),\n"
        "# skipped (not copied: outside pimkit's scope). `frozen` inputs were turned into initializers;\n"
        "# `trimmed` outputs (training statistics, dropout masks) were removed from the model.\n"
    )
    write_manifest(args.out, header, entries)
    counts = {}
    for e in entries:
        counts[e["status"]] = counts.get(e["status"], 0) + 1
    print(f"onnx-node: {counts} -> {args.out}")


if __name__ == "__main__":
    main()
