//! Serializable results of a mapping run (the JSON the CLI prints with --json).

use crate::arch::{DepthwiseMapping, Mode};
use crate::bounds::Bounds;
use crate::layer::{LayerKind, Skipped};
use serde::{Deserialize, Serialize};

/// Per-layer summary.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerResult {
    pub name: String,
    pub op: String,
    pub kind: LayerKind,
    /// Raw (unsplit, unwidened) box rows x cols, as in the layer tables.
    pub box_rows: usize,
    pub box_cols: usize,
    /// Crossbar-sized pieces of one copy.
    pub boxes: usize,
    pub copies: u64,
    /// Cycles of the layer per sample with its copies (the slowest box task).
    pub cycles: u64,
    /// Cycles with a single copy.
    pub cycles_one_copy: u64,
    /// Distinct crossbars holding the layer's boxes.
    pub crossbars: usize,
    pub weights: u64,
}

/// The ISAAC-like reference: one layer per crossbar set, no sharing, no duplication, no
/// depthwise split.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BaselineResult {
    pub crossbars: usize,
    pub utilization: f64,
    pub latency_cycles: u64,
    pub first_sample_cycles: u64,
    /// Whether the baseline fits the same crossbar budget.
    pub fits_budget: bool,
}

/// How the copy counts were chosen.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DuplicationResult {
    pub enabled: bool,
    /// "period-search" (pimkit), "rnc-ilp" (rnc-compat), "none".
    pub method: String,
    /// Period (cycles of the slowest layer per sample) after duplication.
    pub period_cycles: u64,
    /// rnc-compat: area margin that packed (null when duplication was reset to 1).
    pub margin: Option<f64>,
    /// Packings tried.
    pub packings_tried: usize,
}

/// Result of `map`: all figures of one compilation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MapResult {
    pub model: String,
    pub mode: Mode,
    pub depthwise: DepthwiseMapping,
    pub sdw: usize,
    pub samples: usize,
    pub xbar_rows: usize,
    pub xbar_cols: usize,
    /// All boxes fit in the budget. When false, `crossbars_used` is what the packer needed.
    pub fits: bool,
    pub crossbars_used: usize,
    pub crossbars_budget: usize,
    pub boxes: usize,
    /// Box area / area of the crossbars used.
    pub utilization: f64,
    /// Box area / area of the budget (RNC's definition).
    pub utilization_budget: f64,
    pub latency_cycles: u64,
    pub first_sample_cycles: u64,
    pub latency_ns: f64,
    /// Samples per second (samples / latency).
    pub throughput: f64,
    /// Fraction of crossbar-cycles busy during the run.
    pub busy_fraction: f64,
    /// Best lower bound on the crossbars of this box set, and each bound.
    pub lower_bound: usize,
    pub bounds: Bounds,
    /// crossbars_used / lower_bound - 1.
    pub packing_gap: f64,
    pub duplication: DuplicationResult,
    pub baseline: Option<BaselineResult>,
    /// baseline latency / latency (same samples).
    pub speedup: Option<f64>,
    pub layers: Vec<LayerResult>,
    pub skipped: Vec<Skipped>,
}
