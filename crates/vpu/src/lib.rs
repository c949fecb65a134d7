//! pimkit-vpu: the QUINN near-memory vector engine.
//!
//! A simulated NM-Carus-style system ([`arch::Arch`], [`machine::Machine`]): VPUs whose
//! VRF is their local SRAM, a single DMA channel through a write-back cache to off-chip
//! memory, and a cv32e40x host. The [`kernels`] compute real quantized results on it;
//! [`run`] wraps them for standalone problems, [`roofline`] characterizes them and
//! [`network`] runs whole quantized graphs.

pub mod arch;
pub mod cache;
pub mod engine;
pub mod error;
pub mod kernels;
pub mod layout;
pub mod machine;
pub mod network;
pub mod ops;
pub mod problem;
pub mod quant;
pub mod report;
pub mod roofline;
pub mod run;
pub mod scalar;
mod vector;

pub use arch::Arch;
pub use engine::{Vpu, VpuOptions, VpuOutput};
pub use error::{Result, VpuError};
pub use kernels::Dataflow;
pub use machine::{Elem, Machine, Stats};
