//! onnxruntime's contrib ops as its transformer optimizer and its weight-only quantizer
//! write them (tests/data/ort-contrib, from tools/gen_contrib_vectors.py), against
//! onnxruntime's outputs at the float tolerance of docs/testing.md.
//!
//! Run: `cargo test -p pimkit-conformance --test ort_contrib [-- FILTER]`.

use pimkit_conformance::{CaseEntry, Tolerance, suite_trials};
use pimkit_ir::DType;

fn policy(entry: &CaseEntry, dtype: DType) -> Tolerance {
    match entry.atol {
        Some(atol) => Tolerance::Close {
            atol,
            rtol: entry.rtol.unwrap_or(0.0),
        },
        None => Tolerance::default_for(dtype),
    }
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, suite_trials("ort-contrib", policy)).exit();
}
