#!/usr/bin/env python3
"""Load every .onnx file in a directory with onnxruntime and run it on random inputs.

Usage: PIMKIT_EXPORT_DIR=/tmp/x cargo test -p pimkit-onnx --test roundtrip
       python3 tools/check_onnx_export.py /tmp/x
Checks that pimkit's exporter writes models onnxruntime accepts (and onnx.checker too).
"""
import glob
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

NP = {1: np.float32, 2: np.uint8, 3: np.int8, 6: np.int32, 7: np.int64, 9: np.bool_, 10: np.float16}


def main(d):
    bad = 0
    rng = np.random.default_rng(0)
    for path in sorted(glob.glob(os.path.join(d, "*.onnx"))):
        name = os.path.basename(path)
        try:
            m = onnx.load(path)
            onnx.checker.check_model(m, full_check=True)
            s = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
            feeds = {}
            for i in m.graph.input:
                t = i.type.tensor_type
                shape = [x.dim_value for x in t.shape.dim]
                dt = NP[t.elem_type]
                if dt == np.bool_:
                    feeds[i.name] = rng.integers(0, 2, shape).astype(bool)
                elif np.issubdtype(dt, np.integer):
                    feeds[i.name] = rng.integers(0, 100, shape).astype(dt)
                else:
                    feeds[i.name] = rng.uniform(0.1, 2.0, shape).astype(dt)
            s.run(None, feeds)
            print(f"ok   {name}")
        except Exception as e:  # report every failure, not just the first
            bad += 1
            print(f"FAIL {name}: {str(e).splitlines()[0][:300]}")
    print(f"{bad} failure(s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
