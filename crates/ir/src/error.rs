use crate::DType;

/// Errors raised while building, inferring or verifying a graph. Every variant names the
/// node (or value) it is about so that the user can find it in the model.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum IrError {
    #[error("node '{node}' ({op}): {msg}")]
    Node {
        node: String,
        op: String,
        msg: String,
    },
    #[error("node '{node}' ({op}): input {index} has shape {got:?}, expected {expected}")]
    Shape {
        node: String,
        op: String,
        index: usize,
        got: Vec<usize>,
        expected: String,
    },
    #[error("node '{node}' ({op}): input {index} has dtype {got}, expected {expected}")]
    DType {
        node: String,
        op: String,
        index: usize,
        got: DType,
        expected: String,
    },
    #[error("value '{value}': {msg}")]
    Value { value: String, msg: String },
    #[error("graph verification failed with {} problem(s):\n  {}", .0.len(), .0.join("\n  "))]
    Verify(Vec<String>),
    #[error("{0}")]
    Other(String),
}

pub type Result<T> = std::result::Result<T, IrError>;
