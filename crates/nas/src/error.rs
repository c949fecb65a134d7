//! Errors of the NAS engine. Messages name the offending file, field or configuration and
//! say what to do.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum NasError {
    #[error("{space}: search space: {msg}")]
    Space { space: String, msg: String },
    #[error(
        "unknown search space '{0}'; built-in spaces: {1}. Or pass a path to a space .toml file"
    )]
    UnknownSpace(String, String),
    #[error("configuration '{config}': {msg}")]
    Config { config: String, msg: String },
    #[error("option {option}: {msg}")]
    Option { option: &'static str, msg: String },
    #[error("accuracy evaluator '{spec}': {msg}")]
    Evaluator { spec: String, msg: String },
    #[error("building the candidate graph: {0}")]
    Ir(#[from] pimkit_ir::IrError),
    #[error("crossbar mapping: {0}")]
    Xbar(#[from] pimkit_xbar::XbarError),
    #[error("proxy run in the reference interpreter: {0}")]
    Interp(#[from] pimkit_interp::InterpError),
    #[error("ONNX export: {0}")]
    Onnx(#[from] pimkit_onnx::OnnxError),
    #[error("base network from the zoo: {0}")]
    Zoo(#[from] pimkit_zoo::ZooError),
    #[error("{path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
}

pub type Result<T> = std::result::Result<T, NasError>;

pub(crate) fn io_err(path: &std::path::Path, source: std::io::Error) -> NasError {
    NasError::Io {
        path: path.display().to_string(),
        source,
    }
}
