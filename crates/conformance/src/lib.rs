//! External-truth test suites for pimkit (test-only crate).
//!
//! The data under `tests/data/<suite>/` comes from outside pimkit: the official ONNX
//! backend node tests (`onnx-node`) and onnxruntime golden outputs for quantized ops
//! (`ort-quant`) and small real models (`ort-models`). Each suite has a `manifest.toml`
//! that says which cases must pass, which are known to fail and why (and, for the
//! quantized suites, which were skipped as out of scope). The Python generators live in `tools/`; see docs/testing.md.
//!
//! The harnesses in `tests/*.rs` turn every case into a named libtest-mimic trial:
//! `cargo test -p pimkit-conformance --test onnx_node -- test_conv` runs a subset.

pub mod case;
pub mod compare;
pub mod engines;
pub mod manifest;
pub mod real_models;
pub mod suite;

pub use case::{CaseError, pin_vector_variant, run_case, run_case_bound, run_case_with_data};
pub use compare::{Tolerance, compare};
pub use manifest::{CaseEntry, Manifest, Status};
pub use suite::{data_dir, suite_trials};
