//! The official ONNX backend node tests (tests/data/onnx-node, from tools/gen_node_cases.py).
//! Integer and bool outputs compare exactly; floats use the default tolerance of
//! docs/testing.md unless the manifest gives `atol`/`rtol` for the case.
//!
//! Run: `cargo test -p pimkit-conformance --test onnx_node [-- FILTER]`.

use pimkit_conformance::{CaseEntry, Tolerance, suite_trials};
use pimkit_ir::DType;

fn policy(entry: &CaseEntry, dtype: DType) -> Tolerance {
    match (Tolerance::default_for(dtype), entry.atol, entry.rtol) {
        (Tolerance::Close { atol, rtol }, a, r) => Tolerance::Close {
            atol: a.unwrap_or(atol),
            rtol: r.unwrap_or(rtol),
        },
        (t, _, _) => t,
    }
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, suite_trials("onnx-node", policy)).exit();
}
