#!/usr/bin/env python3
"""The grouped-query LLaMA decoder of tests/data/llm-decoders/llama with its MatMul weights
quantized to 4 bits in blocks of 16 by onnxruntime's matmul_nbits_quantizer (what
onnxruntime-genai and `MatMulNBitsQuantizer` ship) -> tests/data/llm-decoders/llama-nbits/
model.onnx, with onnxruntime's logits of its first decode step (the fixture's step1 inputs)
as expected_logits.npy. `pimkit llm` reads the bits and block size from it.

Usage: python3 tools/make_decoder_nbits.py   (needs onnx, onnxruntime, onnx_ir)
"""

import glob
import os

import numpy as np
import onnx
import onnxruntime as ort
from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

from _common import DATA, reset_dir

SRC = os.path.join(DATA, "llm-decoders", "llama")
OUT = os.path.join(DATA, "llm-decoders", "llama-nbits")


def main():
    m = onnx.load(os.path.join(SRC, "model.onnx"))
    q = MatMulNBitsQuantizer(m, bits=4, block_size=16, is_symmetric=False)
    q.process()
    qm = q.model.model
    n = sum(node.op_type == "MatMulNBits" for node in qm.graph.node)
    assert n > 0
    reset_dir(OUT)
    onnx.save(qm, os.path.join(OUT, "model.onnx"))
    names = [i.name for i in qm.graph.input]
    files = sorted(glob.glob(os.path.join(SRC, "step1_inputs", "*.npy")))
    feeds = {os.path.basename(f)[:-4]: np.load(f) for f in files}
    feeds = {k: v for k, v in feeds.items() if k in names}
    sess = ort.InferenceSession(qm.SerializeToString(), providers=["CPUExecutionProvider"])
    logits = sess.run(["logits"], feeds)[0]
    np.save(os.path.join(OUT, "expected_logits.npy"), logits)
    print(f"{n} MatMulNBits layers; step-1 logits {logits.shape}")


if __name__ == "__main__":
    main()
