#!/usr/bin/env python3
"""Copy the official ONNX backend node tests into tests/data/onnx-node.

Source: the node test data shipped in the installed onnx wheel
(onnx/backend/test/data/node/<case>/model.onnx + test_data_set_0/*.pb).

Every case is listed in the manifest except those outside pimkit's scope (see `scope`):
ops outside the ai.onnx domain (ai.onnx.ml, ai.onnx.preview, the training domain),
training mode (BatchNormalization with training outputs, Dropout with a training_mode
input), sequences, optionals, strings and random-number ops. A listed case is `pass`, or
`known-fail` when tools/known_fail.toml gives a reason for it: per case in [onnx-node], or
for every case using an op in [onnx-node-ops]. The Rust harness
(crates/conformance/tests/onnx_node.rs) checks both directions.

pimkit folds constant operands (shapes, axes, pads, clip bounds, quantization parameters)
into attributes, as every exporter writes them as initializers. The node tests feed them as
graph inputs instead (directly, or through a small shape computation), so this script turns
those inputs into initializers holding the test values ("frozen" in the manifest). The
remaining inputs keep their graph order.

Values numpy cannot save portably are converted by value: bfloat16, the float8 formats and
float4 become float32, int4/int2 become int8 and uint4/uint2 uint8 (as pimkit's own .npy
writer stores them); the harness converts inputs back to the graph input's dtype and
compares such outputs by value. A case whose .npy files are identical to an earlier case's
(the `_expanded` twins) stores only model.onnx and names the other case in `data`.

Usage: python3 tools/gen_node_cases.py [--out tests/data/onnx-node]
"""

import argparse
import collections
import hashlib
import io
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from _common import DATA, known_fail as load_known_fail, write_manifest

NODE_DIR = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")

SEQUENCE_OPS = {
    "SequenceEmpty", "SequenceInsert", "SplitToSequence", "SequenceMap", "SequenceLength",
    "SequenceAt", "SequenceConstruct", "SequenceErase", "ConcatFromSequence",
}
OPTIONAL_OPS = {"Optional", "OptionalGetElement", "OptionalHasElement"}
STRING_OPS = {"StringConcat", "StringNormalizer", "StringSplit", "RegexFullMatch"}
RANDOM_OPS = {
    "Bernoulli", "RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike",
    "Multinomial",
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
    "ReduceL1": [1],
    "ReduceLogSum": [1],
    "ReduceLogSumExp": [1],
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
    "Trilu": [1],
    "CumSum": [1],
    "CumProd": [1],
    "TopK": [1],
    "OneHot": [1],
    "CenterCropPad": [1],
    "Col2Im": [1, 2],
    "DFT": [1, 2],
    "STFT": [1, 3],
    "HannWindow": [0],
    "HammingWindow": [0],
    "BlackmanWindow": [0],
    "MelWeightMatrix": [0, 1, 2, 3, 4],
    "MaxUnpool": [2],
    "AffineGrid": [1],
    "NonMaxSuppression": [2, 3, 4],
}

# Ops whose output size depends on their input data: pimkit runs them on constants only
# (they fold at import), so their cases are also run with every input bound ("bound").
DATA_DEPENDENT_OPS = {"NonZero", "Unique", "Compress", "NonMaxSuppression"}

# op type -> number of outputs pimkit's IR produces; extra outputs (training statistics,
# dropout masks) are cut from the copied model when nothing but the graph output reads them.
TRIM_OUTPUTS = {"LayerNormalization": 1, "Dropout": 1}


def dtype_name(elem_type):
    return TensorProto.DataType.Name(elem_type).lower()


def all_nodes(graph):
    """Nodes of `graph` and of every subgraph (If/Loop/Scan bodies)."""
    for n in graph.node:
        yield n
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from all_nodes(a.g)
            elif a.type == onnx.AttributeProto.GRAPHS:
                for sg in a.graphs:
                    yield from all_nodes(sg)


def all_types(graph):
    for vi in list(graph.input) + list(graph.output) + list(graph.value_info):
        yield vi.name, vi.type
    for n in graph.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.GRAPH:
                yield from all_types(a.g)


def scope(model):
    """Why a case is outside the listed suite (None = listed)."""
    g = model.graph
    for n in all_nodes(g):
        if n.domain not in ("", "ai.onnx"):
            return f"domain {n.domain}"
        if n.op_type in SEQUENCE_OPS:
            return "sequence"
        if n.op_type in OPTIONAL_OPS:
            return "optional"
        if n.op_type in STRING_OPS:
            return "string"
        if n.op_type in RANDOM_OPS:
            return "random"
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        if n.op_type == "BatchNormalization" and (
            attrs.get("training_mode", 0) == 1 or len(n.output) > 1
        ):
            return "training"
        if n.op_type == "Dropout" and len(n.input) > 2 and n.input[2]:
            return "training"
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TensorProto.STRING:
                return "string"
            if n.op_type in ("Cast", "CastLike") and a.name == "to" and a.i == TensorProto.STRING:
                return "string"
    for _, t in all_types(g):
        kind = t.WhichOneof("value")
        if kind == "sequence_type":
            return "sequence"
        if kind == "optional_type":
            return "optional"
        if kind == "tensor_type" and t.tensor_type.elem_type == TensorProto.STRING:
            return "string"
    if any(i.data_type == TensorProto.STRING for i in g.initializer):
        return "string"
    return None


def load_pb(path):
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


# ONNX element types numpy cannot save portably -> the numpy dtype their values are stored as.
STORED_AS = {
    TensorProto.BFLOAT16: np.float32,
    TensorProto.FLOAT8E4M3FN: np.float32,
    TensorProto.FLOAT8E4M3FNUZ: np.float32,
    TensorProto.FLOAT8E5M2: np.float32,
    TensorProto.FLOAT8E5M2FNUZ: np.float32,
    TensorProto.FLOAT4E2M1: np.float32,
    TensorProto.INT4: np.int8,
    TensorProto.UINT4: np.uint8,
}
for _name, _np in (("FLOAT8E8M0", np.float32), ("INT2", np.int8), ("UINT2", np.uint8)):
    if hasattr(TensorProto, _name):
        STORED_AS[getattr(TensorProto, _name)] = _np


def storable(a, elem_type):
    """`a` as an array np.save writes in a standard dtype (by value)."""
    a = np.asarray(a)
    to = STORED_AS.get(elem_type)
    if to is not None:
        return a.astype(to)
    return a


def elem_type_of(vi):
    return vi.type.tensor_type.elem_type


def freeze_const_operands(model, inputs):
    """Turn graph inputs whose values decide a constant operand into initializers.

    A value must be constant if it feeds a CONST_OPERANDS slot, or if it is an input of a
    node whose output must be constant (Shape and Size only read their input's shape, so
    the walk stops there). Graph inputs reached this way are frozen with their test
    values. Returns the names frozen; `inputs` maps input name -> test value (.pb)."""
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
        g.initializer.append(inputs[name])
    kept = [vi for vi in g.input if vi.name not in to_freeze]
    del g.input[:]
    g.input.extend(kept)
    return to_freeze


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


def opset_of(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def npy_bytes(a):
    buf = io.BytesIO()
    np.save(buf, np.array(a, order="C"))
    return buf.getvalue()


def status_of(case, ops, known_case, known_ops):
    """(status, reason): a per-case reason wins over a per-op one."""
    if case in known_case:
        return "known-fail", known_case[case]
    for op in ops:
        if op in known_ops:
            return "known-fail", known_ops[op]
    return "pass", None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(DATA, "onnx-node"))
    args = ap.parse_args()
    known_case = load_known_fail("onnx-node")
    known_ops = load_known_fail("onnx-node-ops")

    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)

    entries, excluded = [], collections.Counter()
    written = {}  # digest of a case's .npy files -> case holding them
    for case in sorted(os.listdir(NODE_DIR)):
        src = os.path.join(NODE_DIR, case)
        model = onnx.load(os.path.join(src, "model.onnx"))
        why = scope(model)
        if why is not None:
            excluded[why] += 1
            continue
        ops = sorted({n.op_type for n in model.graph.node})
        entry = {"name": case, "ops": ops, "opset": opset_of(model)}
        data_dir = os.path.join(src, "test_data_set_0")
        ins = [
            TensorProto.FromString(open(os.path.join(data_dir, f"input_{i}.pb"), "rb").read())
            for i in range(len(model.graph.input))
        ]
        for tp, vi in zip(ins, model.graph.input):
            tp.name = vi.name
        outs = [
            load_pb(os.path.join(data_dir, f"output_{i}.pb"))
            for i in range(len(model.graph.output))
        ]
        out_types = [elem_type_of(vi) for vi in model.graph.output]
        by_name = {vi.name: tp for vi, tp in zip(model.graph.input, ins)}
        frozen = freeze_const_operands(model, by_name)
        trimmed, outs = trim_extra_outputs(model, list(zip(outs, out_types)))
        files = [
            (f"input_{i}.npy", npy_bytes(storable(numpy_helper.to_array(by_name[vi.name]), elem_type_of(vi))))
            for i, vi in enumerate(model.graph.input)
        ]
        files += [(f"output_{i}.npy", npy_bytes(storable(a, t))) for i, (a, t) in enumerate(outs)]
        digest = hashlib.sha256(b"".join(n.encode() + b"\0" + d for n, d in files)).hexdigest()
        dst = os.path.join(args.out, case)
        os.makedirs(dst)
        onnx.save(model, os.path.join(dst, "model.onnx"))
        if digest in written:
            entry["data"] = written[digest]
        else:
            written[digest] = case
            for name, data in files:
                with open(os.path.join(dst, name), "wb") as f:
                    f.write(data)
        if frozen:
            entry["frozen"] = frozen
        if trimmed:
            entry["trimmed"] = trimmed
        if DATA_DEPENDENT_OPS & set(ops):
            entry["bound"] = True
        status, reason = status_of(case, ops, known_case, known_ops)
        entry["status"] = status
        if reason:
            entry["reason"] = reason
        entries.append(entry)

    listed = {e["name"] for e in entries}
    stale = sorted(set(known_case) - listed)
    if stale:
        print(f"warning: known-fail cases not listed: {stale}", file=sys.stderr)
    used_ops = {op for e in entries for op in e["ops"]}
    stale_ops = sorted(set(known_ops) - used_ops)
    if stale_ops:
        print(f"warning: known-fail ops no listed case uses: {stale_ops}", file=sys.stderr)

    header = (
        f"# Generated by tools/gen_node_cases.py from the onnx {onnx.__version__} wheel; do not edit.\n"
        "# Every ai.onnx case except training, sequence, optional, string and random-number ones.\n"
        "# status: pass (must match), known-fail (must still fail; edit tools/known_fail.toml).\n"
        "# `frozen` inputs were turned into initializers; `trimmed` outputs (training statistics,\n"
        "# dropout masks) were removed from the model; `data` names the case whose .npy files\n"
        "# this case shares; `bound` cases must also pass with every input bound as a constant.\n"
    )
    write_manifest(args.out, header, entries)
    counts = collections.Counter(e["status"] for e in entries)
    n = len(entries)
    print(
        f"onnx-node: {n} listed, {counts['pass']} pass ({100.0 * counts['pass'] / n:.1f} %), "
        f"{counts['known-fail']} known-fail; not listed: {dict(sorted(excluded.items()))} -> {args.out}"
    )


if __name__ == "__main__":
    main()
