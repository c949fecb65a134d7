//! Errors: bad configuration (the field and what to do), layers the model cannot take
//! (the node and why), and interpreter errors from the surrounding reference run.

use thiserror::Error;

#[derive(Debug, Error)]
pub enum AnalogError {
    #[error("{field}: {msg}")]
    Config { field: &'static str, msg: String },
    #[error("node '{node}' ({op}): {msg}")]
    Layer {
        node: String,
        op: String,
        msg: String,
    },
    #[error("{0}")]
    Input(String),
    #[error(transparent)]
    Interp(#[from] pimkit_interp::InterpError),
}

pub type Result<T> = std::result::Result<T, AnalogError>;
