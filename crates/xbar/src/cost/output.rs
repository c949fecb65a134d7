//! The cost engine's output (its files: report.rs).

use super::{LayerCost, Totals};
use pimkit_cost::{ChipFigures, Geometry};
use serde::Serialize;
use std::collections::BTreeMap;

/// A model's cost per inference on one component library.
#[derive(Clone, Debug, Serialize)]
pub struct CostOutput {
    pub model: String,
    /// The component library's name.
    pub components: String,
    pub geometry: Geometry,
    /// One read pulse, ns, and what sets it.
    pub pulse_ns: f64,
    pub pulse_bound: String,
    /// "table (every input bit 1)" or the inputs the counts were measured on.
    pub counts_from: String,
    /// Whether the mapping fits its crossbar budget.
    pub fits: bool,
    pub totals: Totals,
    /// Dynamic energy per inference by component, µJ.
    pub energy_by_component: BTreeMap<String, f64>,
    /// Area of the tiles used by component, mm².
    pub area_by_component: BTreeMap<String, f64>,
    /// One chip of the library at this geometry, every array busy.
    pub chip: ChipFigures,
    pub layers: Vec<LayerCost>,
    pub notes: Vec<String>,
}
