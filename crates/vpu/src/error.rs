use thiserror::Error;

/// Everything that can go wrong while configuring the target or running a kernel on it.
#[derive(Debug, Error)]
pub enum VpuError {
    #[error("{0}")]
    ArchFile(pimkit_engine::ArchError),
    #[error("architecture field `{field}`: {msg}")]
    BadArch { field: &'static str, msg: String },
    #[error("kernel {kernel}: {msg}")]
    Kernel { kernel: &'static str, msg: String },
    #[error(
        "kernel {kernel}: the VRF is too small for one tile ({msg}); raise vpu.vrf_bytes or shrink the operand"
    )]
    VrfTooSmall { kernel: &'static str, msg: String },
    #[error("node `{node}` ({op}): {msg}")]
    Node {
        node: String,
        op: String,
        msg: String,
    },
    #[error("simulated memory access out of range: address {addr:#x} + {len} > {size:#x}")]
    Memory { addr: u64, len: usize, size: usize },
    #[error(
        "the simulated cycle count does not fit in 64 bits; the architecture's costs are too large or its bandwidth too small for this workload (docs/vpu.md lists the allowed ranges)"
    )]
    CycleOverflow,
    /// An error of one point of a roofline sweep, naming the point.
    #[error("{point}: {source}")]
    AtPoint {
        point: String,
        source: Box<VpuError>,
    },
    #[error("{0}")]
    Other(String),
    /// A dataflow trial of `auto` stopped early: its clock already passed a finished
    /// trial's time, so it cannot be the fastest (never leaves `Net::run_kernel`).
    #[error("dataflow trial stopped: slower than a finished trial")]
    TrialLost,
}

pub type Result<T> = std::result::Result<T, VpuError>;

pub(crate) fn kerr(kernel: &'static str, msg: impl Into<String>) -> VpuError {
    VpuError::Kernel {
        kernel,
        msg: msg.into(),
    }
}
