//! Errors of the crossbar compiler. Messages name the field, layer or node concerned and
//! say what to change.

/// Everything that can go wrong while configuring or running the crossbar compiler.
#[derive(Debug, thiserror::Error)]
pub enum XbarError {
    #[error("{0}")]
    ArchFile(pimkit_engine::ArchError),
    #[error("architecture field '{field}': {msg}")]
    Arch { field: &'static str, msg: String },
    #[error("option '{option}': {msg}")]
    Option { option: &'static str, msg: String },
    #[error("node '{node}' ({op}): {msg}")]
    Layer {
        node: String,
        op: String,
        msg: String,
    },
    #[error(
        "the graph has no layer that maps onto crossbars (no Conv/Gemm/MatMul/LSTM/GRU with constant weights)"
    )]
    NoLayers,
    #[error(
        "crossbar budget {budget} is below one crossbar per layer ({layers} layers); boxes of one layer never \
         share a crossbar, so use at least {layers} crossbars (or a larger --budget)"
    )]
    BudgetTooSmall { budget: usize, layers: usize },
    #[error("{0}")]
    Analog(#[from] pimkit_analog::AnalogError),
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
}

pub type Result<T> = std::result::Result<T, XbarError>;
