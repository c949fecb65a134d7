//! RRAM crossbar compilation after RNC (arXiv 2409.18841): layer boxes from any pimkit-ir
//! graph, partition into crossbar-sized pieces, depthwise split S_DW (compact RNC box or
//! block-diagonal), duplication that maximises the slowest layer's throughput under a crossbar
//! budget (solved exactly), packing with Empty Maximal Spaces and DFTRC-2 under the
//! same/adjacent-layer hazard rule, an event simulation of streamed samples, the ISAAC-like
//! baseline and lower bounds. `Mode::RncCompat` reproduces the public RNC code's rules and
//! quirks for comparison. See docs/xbar.md.
//!
//! Entry points: [`map_graph`] (graph → [`MapResult`]), [`map_layers`] (layers → result,
//! the fast path for a NAS loop: pass `MapOptions { baseline: false, .. }` and compute the
//! baseline once), [`compile`] + [`simulate_mapping`] (reuse one packing for many sample
//! counts), [`sweep::sweep`] (budgets × S_DW × samples).

pub mod accuracy;
pub mod arch;
pub mod bounds;
pub mod cost;
pub mod dup;
pub mod ems;
pub mod engine;
mod error;
pub mod layer;
mod map;
pub mod pack;
pub mod partition;
mod report;
mod result;
pub mod sim;
pub mod svg;
pub mod sweep;

pub use arch::{Arch, DepthwiseMapping, Mode};
pub use bounds::Bounds;
pub use engine::{Xbar, XbarOptions, XbarOutput};
pub use error::{Result, XbarError};
pub use layer::{Extraction, Layer, LayerKind, NodeLayer, Skipped, extract, extract_nodes};
pub use map::{
    Budget, MapOptions, Mapping, baseline, baseline_mapping, budget_crossbars, compile,
    isaac_crossbars, map_graph, map_layers, partition_all, sim_layers, simulate_mapping, summarize,
};
pub use report::{report_section, result_tables, section_from};
pub use result::{BaselineResult, DuplicationResult, LayerResult, MapResult};
