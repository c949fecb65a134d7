//! pimkit's ONNX importer and exporter.
//!
//! [`load`] turns an ONNX model (as PyTorch or onnxruntime's quantizer write it) into a
//! verified [`pimkit_ir::Graph`]: an opset-aware converter registry maps every supported
//! (domain, op type) to IR ops, shape sub-graphs are evaluated at import time, and constant
//! operands (shapes, axes, pads, clip bounds...) become op attributes. [`export`] writes any
//! graph back as an ONNX model that onnxruntime loads. See docs/onnx.md.

mod attr;
mod convert;
mod error;
mod export;
mod fold;
mod import;
mod op_since;
mod qdq;
mod tensor;
mod validate;
mod wire;

/// The ONNX protobuf messages, generated from the vendored proto/onnx.proto (onnx 1.22.0)
/// by `cargo run -p xtask -- proto`.
#[allow(clippy::all, missing_docs, rustdoc::all)]
pub mod proto {
    include!("generated/onnx.rs");
}

pub use error::{OnnxError, Result};
pub use export::{export, save, to_model_proto};
pub use import::{
    LoadOptions, Loaded, load, load_bytes, load_file_collect, load_file_notes, load_model,
    load_model_collect, load_model_notes, load_with, matmul_nbits_layers,
};

/// Every (domain, op type) the importer accepts; domain "" is ai.onnx.
pub fn supported_ops() -> Vec<(&'static str, &'static str)> {
    convert::registry().keys().copied().collect()
}
