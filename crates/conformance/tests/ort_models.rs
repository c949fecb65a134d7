//! Small real models and their onnxruntime outputs (tests/data/ort-models, from
//! tools/gen_model_vectors.py). Float models use the default tolerance; quantized models
//! without float ops compare bit for bit (`exact = true`); quantized models with float
//! islands use the manifest's `atol` (a few output quantization steps).
//!
//! Run: `cargo test -p pimkit-conformance --test ort_models [-- FILTER]`.

use pimkit_conformance::{CaseEntry, Tolerance, suite_trials};
use pimkit_ir::DType;

fn policy(entry: &CaseEntry, dtype: DType) -> Tolerance {
    match entry.exact {
        Some(true) => Tolerance::Exact,
        Some(false) => Tolerance::Close {
            atol: entry.atol.unwrap_or(1e-4),
            rtol: entry.rtol.unwrap_or(0.0),
        },
        None => Tolerance::default_for(dtype),
    }
}

fn main() {
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, suite_trials("ort-models", policy)).exit();
}
