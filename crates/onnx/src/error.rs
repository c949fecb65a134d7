use pimkit_ir::IrError;
use std::path::PathBuf;

/// Everything that can go wrong while importing or exporting an ONNX model. Each message
/// names the file, node, attribute or tensor it is about and, where possible, what to do.
#[derive(Debug, thiserror::Error)]
pub enum OnnxError {
    /// A given input (its data or shape) does not fit the model's declaration.
    #[error("{msg}")]
    InputShape { input: String, msg: String },
    #[error("{path}: cannot read it: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "{file}: not a valid ONNX model: {msg}; check that it is a complete .onnx file (onnx.checker.check_model)"
    )]
    Parse { file: String, msg: String },
    #[error(
        "node '{node}': unsupported operator '{op}' (domain '{domain}', opset {opset}); \
         pimkit supports {supported}, listed in docs/onnx.md; re-export the model so that \
         it avoids this operator"
    )]
    UnsupportedOp {
        op: String,
        domain: String,
        opset: i64,
        node: String,
        supported: String,
    },
    #[error("node '{node}' ({op}): attribute '{attr}': {msg}")]
    Attribute {
        node: String,
        op: String,
        attr: String,
        msg: String,
    },
    #[error("node '{node}' ({op}): {msg}")]
    Node {
        node: String,
        op: String,
        msg: String,
    },
    #[error("tensor '{tensor}': external data file {path}: {msg}")]
    ExternalData {
        tensor: String,
        path: PathBuf,
        msg: String,
    },
    #[error("tensor '{tensor}': {msg}")]
    Tensor { tensor: String, msg: String },
    #[error("{}", ir_message(node, source))]
    Ir {
        node: String,
        #[source]
        source: Box<IrError>,
    },
    #[error("invalid model: {0}")]
    Model(String),
    #[error("the imported graph is invalid: {0}")]
    Verify(#[source] Box<IrError>),
    #[error("cannot export: {0}")]
    Export(String),
    #[error("internal error while processing the model (please report it): {0}")]
    Internal(String),
}

pub type Result<T> = std::result::Result<T, OnnxError>;

/// An IR error already naming its node is shown as it is; others get the node in front.
fn ir_message(node: &str, e: &IrError) -> String {
    let m = e.to_string();
    if m.starts_with(&format!("node '{node}'")) {
        m
    } else {
        format!("node '{node}': {m}")
    }
}
