//! Functional model of analog crossbar matrix-vector products — one implementation for
//! every crossbar engine (pimkit-xbar's accuracy study, PUMA's MVMU).
//!
//! Weights are quantized to `weight_bits` and cut into `cell_bits` cells (differential
//! pairs or offset encoding with a reference column), inputs stream through `dac_bits`
//! DACs, each array's partial sums (the mapping's rows per array) are digitized by an
//! `adc_bits` ADC with a range policy and shifted and added digitally. Cells have
//! conductance levels with a finite on/off ratio, programming variation (Gaussian or
//! log-normal, per cell, once per trial), read noise, stuck-at-on/off faults and a
//! first-order IR drop. See docs/accuracy.md for the equations and their sources.
//!
//! * [`device::program`] programs a matrix for one trial, [`mvm::mvm`] multiplies many
//!   input vectors through it in f32 GEMMs over DAC and cell slices.
//! * [`network`] applies the model to every weighted layer of a pimkit-ir graph and runs
//!   everything else in the reference interpreter; [`study`] runs Monte-Carlo trials and
//!   sweeps in parallel with per-trial seeded streams (identical to a sequential run).

pub mod adc;
pub mod config;
pub mod device;
pub mod encode;
mod error;
pub mod irdrop;
pub mod layer;
pub mod metrics;
pub mod mvm;
pub mod mvmu;
pub mod network;
pub mod rng;
pub mod study;

pub use adc::{Adc, Profile};
pub use config::{AdcRange, AnalogSpec, Config, DeviceSpec, Geometry, VariationModel};
pub use device::{Arrays, MatMap, ProgramStats, program};
pub use encode::IntWeights;
pub use error::{AnalogError, Result};
pub use mvm::{Readout, mvm};
