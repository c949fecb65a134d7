//! Crossbar accelerator cost: a component library with cited values (ISAAC, PUMA and
//! NeuroSim presets under `arch/components/`), the scaling laws that carry it to another
//! geometry, and the roll-up from activity counts to energy, area, latency and throughput.
//! The counts come from a mapping (pimkit-xbar's `xbar cost`) or from a simulator (PUMA).
//! Layering: `components` (data) → `model` (a library at a geometry) → `counts` (energy of
//! counts); `presets` loads libraries. See docs/cost.md.

pub mod components;
pub mod counts;
pub mod model;
pub mod presets;

pub use components::{Component, Components, Kind, Level, Positions};
pub use counts::Counts;
pub use model::{ChipFigures, Geometry, Model, Scaled, bits_law};
pub use presets::{PRESETS, load, preset};

#[cfg(test)]
mod tests;
