//! Area, power and efficiency of a run, from the `puma` component library
//! (arch/components/puma.toml, pimkit-cost): the same library `xbar cost --components puma`
//! prices mappings with. The simulator's energy is its own per-access accounting
//! (arch/puma.toml); this adds what the simulator does not report.

use serde::{Deserialize, Serialize};

/// Hardware figures of one run.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Hardware {
    /// The component library the area comes from.
    pub components: String,
    /// Tiles the program uses times the library's tile area, plus the chip-to-chip link of
    /// each node used, mm².
    pub area_mm2: f64,
    /// Simulated energy over simulated latency, W.
    pub power_w: f64,
    /// 2 x rows x columns per MVMU operation (every cell of the MVMU counted), so a
    /// layer that fills part of an MVMU is charged for the whole of it.
    pub ops: f64,
    pub tops_per_w: f64,
    pub tops_per_mm2: f64,
}

/// The figures of a run that used `tiles` tiles on `nodes` nodes, `mvm_ops` MVMU operations
/// of `xbar_size`-square MVMUs, `energy_nj` over `latency_ns`.
pub fn hardware(
    tiles: usize,
    nodes: usize,
    mvm_ops: u64,
    xbar_size: usize,
    energy_nj: f64,
    latency_ns: f64,
) -> Option<Hardware> {
    let lib = pimkit_cost::preset("puma")?.ok()?;
    let m = pimkit_cost::Model::new(&lib, &pimkit_cost::Geometry::of_design(&lib));
    let (_, tile_mm2) = m.level_figures(pimkit_cost::Level::Tile);
    let chip_mm2: f64 = m
        .components
        .iter()
        .filter(|c| c.level == pimkit_cost::Level::Chip)
        .map(|c| c.area_mm2)
        .sum();
    let area_mm2 = tiles as f64 * tile_mm2 + nodes.max(1) as f64 * chip_mm2;
    let ops = mvm_ops as f64 * 2.0 * (xbar_size * xbar_size) as f64;
    let power_w = if latency_ns > 0.0 {
        energy_nj / latency_ns
    } else {
        0.0
    };
    let tops = if latency_ns > 0.0 {
        ops / latency_ns / 1e3
    } else {
        0.0
    };
    Some(Hardware {
        components: lib.name,
        area_mm2,
        power_w,
        ops,
        // ops / pJ = TOPS/W
        tops_per_w: if energy_nj > 0.0 {
            ops / (energy_nj * 1e3)
        } else {
            0.0
        },
        tops_per_mm2: tops / area_mm2,
    })
}
