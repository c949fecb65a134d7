#!/usr/bin/env python3
"""Summarize the ONNX node suite listing (tests/data/onnx-node/manifest.toml).

Prints how many cases are listed, how many must pass (and the pass rate), and the
known-fail cases grouped by reason. `cargo test -p pimkit-conformance --test onnx_node`
checks that every `pass` case passes and every `known-fail` case still fails, so when that
test is green these counts are the measured ones.

Usage: python3 tools/node_suite_summary.py [--cases]   (--cases lists the cases per reason)
"""

import collections
import os
import sys
import tomllib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MANIFEST = os.path.join(ROOT, "tests", "data", "onnx-node", "manifest.toml")


def main():
    with open(MANIFEST, "rb") as f:
        cases = tomllib.load(f)["case"]
    status = collections.Counter(c["status"] for c in cases.values())
    n = len(cases)
    bound = sum(1 for c in cases.values() if c.get("bound"))
    print(f"listed {n}, pass {status['pass']} ({100.0 * status['pass'] / n:.1f} %), "
          f"known-fail {status['known-fail']}; {bound} data-dependent cases also pass with inputs bound")
    by_reason = collections.defaultdict(list)
    for name, c in cases.items():
        if c["status"] == "known-fail":
            by_reason[c["reason"]].append(name)
    for reason, names in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
        print(f"{len(names):5d}  {reason}")
        if "--cases" in sys.argv:
            for name in sorted(names):
                print(f"         {name}")


if __name__ == "__main__":
    main()
