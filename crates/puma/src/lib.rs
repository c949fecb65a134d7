//! pimkit-puma: the PUMA memristor-crossbar accelerator (Ankit et al., ASPLOS 2019).
//!
//! * [`isa`]: instruction set, text assembly (parse/print), [`encode`]: 64-bit binary form;
//! * [`arch`]: architecture description (arch/puma.toml), typed and validated;
//! * [`compile()`]: graph IR → [`Program`] (per-core/tile code, weights, placement);
//! * [`simulate`]: event-driven functional + timing + energy simulation;
//! * [`run_graph`]: compile, simulate and compare with the reference interpreter;
//! * [`run_per_layer`]: the same layer by layer (networks whose feature maps do not fit).
//!
//! See docs/puma.md.

pub mod arch;
pub mod compile;
pub mod dequant;
mod dot;
pub mod encode;
pub mod engine;
pub mod fixed;
pub mod hardware;
pub mod isa;
mod outcome;
pub mod per_layer;
pub mod plan;
pub mod program;
pub mod report;
mod result;
pub mod sim;
pub mod tool;

pub use arch::{Arch, ArchError};
pub use compile::{CompileError, CompileOptions, compile};
pub use engine::{PerLayer, Puma, PumaOptions, PumaOutput};
pub use fixed::NumMode;
pub use per_layer::{LayerResult, PerLayerResult, run_per_layer, run_per_layer_with};
pub use program::Program;
pub use report::report_section;
pub use result::{DEFAULT_TOLERANCE, PumaResult, RunError, compare, run_graph, run_program};
pub use sim::{SimError, SimOptions, SimOutput, SimStats, simulate};
