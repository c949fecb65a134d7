//! onnxruntime golden vectors for quantized ops (tests/data/ort-quant, from
//! tools/gen_quant_vectors.py). Every output, integer or float, must match bit for bit.
//!
//! Run: `cargo test -p pimkit-conformance --test ort_quant [-- FILTER]`.

use pimkit_conformance::{CaseEntry, Tolerance, suite_trials};
use pimkit_ir::DType;

fn policy(_: &CaseEntry, _: DType) -> Tolerance {
    Tolerance::Exact
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, suite_trials("ort-quant", policy)).exit();
}
