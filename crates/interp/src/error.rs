use pimkit_ir::IrError;

/// Everything that can go wrong while interpreting a graph. Every variant names the
/// input, constant or node concerned and says what was expected.
#[derive(Debug, thiserror::Error, Clone, PartialEq)]
pub enum InterpError {
    #[error("missing input '{name}': the graph expects inputs {expected}")]
    MissingInput { name: String, expected: String },
    #[error("unknown input '{name}': the graph expects inputs {expected}")]
    UnknownInput { name: String, expected: String },
    #[error("input '{name}' has {got}, the graph expects {expected}")]
    InputMismatch {
        name: String,
        expected: String,
        got: String,
    },
    #[error(
        "graph has no weight data for '{name}' (shape-only constant); load or build the model with weights to run it"
    )]
    ShapeOnly { name: String },
    #[error("unsupported attribute combination at node '{node}' ({op}): {msg}")]
    Unsupported {
        node: String,
        op: String,
        msg: String,
    },
    #[error("node '{node}' ({op}): {msg}")]
    Node {
        node: String,
        op: String,
        msg: String,
    },
    #[error("the graph is invalid: {0}")]
    InvalidGraph(#[from] IrError),
    #[error("{0}")]
    OutOfMemory(String),
}

/// Error raised inside an op kernel; the executor adds the node name and op type.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum OpError {
    /// Attribute/dtype/shape combination the interpreter does not implement.
    Unsupported(String),
    /// Bad data at run time (index out of range, division by zero, ...).
    Invalid(String),
}

pub(crate) type OpResult<T> = Result<T, OpError>;

pub(crate) fn unsupported<T>(msg: impl Into<String>) -> OpResult<T> {
    Err(OpError::Unsupported(msg.into()))
}

pub(crate) fn invalid<T>(msg: impl Into<String>) -> OpResult<T> {
    Err(OpError::Invalid(msg.into()))
}
