//! Accuracy × cost: every point of a study priced by the cost engine (docs/cost.md) on
//! the same architecture at the point's ADC bits, with value-dependent counts from the
//! study's own inputs, and the points no other point beats in both quality and energy.

use crate::arch::Arch;
use crate::cost::engine::{CostOptions, measure_inputs, price};
use crate::error::Result;
use pimkit_analog::Config;
use pimkit_analog::network::Inputs;
use pimkit_analog::study::PointResult;
use pimkit_cost::Components;
use pimkit_engine::NoProgress;
use pimkit_ir::Graph;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What one point costs per inference.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PointCost {
    /// The ADC resolution priced (a point without ADC quantization is priced with the
    /// library's ADC).
    pub adc_bits: u32,
    pub energy_uj: f64,
    /// Of `energy_uj`: the ADCs'.
    pub adc_uj: f64,
    pub area_mm2: f64,
    pub latency_us: f64,
    pub tops_per_w: f64,
    /// No other point has at least its quality at no more energy (and is better in one).
    pub pareto: bool,
}

/// Price every point (`configs`, in the study's order). Only the ADC resolution of a point
/// changes its cost; each distinct one is priced once. Returns the costs and notes.
pub fn price_points(
    g: &Graph,
    arch: &Arch,
    lib: &Components,
    inputs: &[Inputs],
    configs: &[Config],
) -> Result<(Vec<PointCost>, Vec<String>)> {
    let opts = CostOptions::new(lib.clone());
    let activity = measure_inputs(g, arch, lib, inputs, &mut NoProgress)?;
    let mut by_bits: BTreeMap<u32, PointCost> = BTreeMap::new();
    let mut notes = Vec::new();
    for c in configs {
        let bits = c.analog.adc_bits;
        if by_bits.contains_key(&bits) {
            continue;
        }
        let mut a = arch.clone();
        let (base, _) = a.analog_config()?;
        let mut analog = a.analog.clone().unwrap_or(base.analog);
        analog.adc_bits = bits;
        a.analog = Some(analog);
        let out = price(g, &a, &opts, Some(&activity), inputs.len(), &mut NoProgress)?;
        if bits == 0 {
            notes.push(format!(
                "points without ADC quantization are priced with library '{}''s {}-bit ADC",
                lib.name, out.geometry.adc_bits
            ));
        }
        let t = &out.totals;
        by_bits.insert(
            bits,
            PointCost {
                adc_bits: out.geometry.adc_bits,
                energy_uj: t.energy_uj,
                adc_uj: out.energy_by_component.get("adc").copied().unwrap_or(0.0),
                area_mm2: t.area_mm2,
                latency_us: t.latency_us,
                tops_per_w: t.tops_per_w,
                pareto: false,
            },
        );
    }
    if configs
        .iter()
        .any(|c| c.analog.spare_cols > 0 || c.analog.redundancy > 1)
    {
        notes.push(
            "spare columns and redundant array copies are not priced: their arrays, reads and \
             conversions are not in the energy and area"
                .into(),
        );
    }
    let costs = configs
        .iter()
        .map(|c| by_bits[&c.analog.adc_bits].clone())
        .collect();
    Ok((costs, notes))
}

/// A point's quality for the front: accuracy against the labels when given, else top-1
/// agreement with the ideal model, else 1 - the output's relative error.
pub fn quality(p: &PointResult) -> f64 {
    p.accuracy
        .or(p.agreement)
        .map(|s| s.mean)
        .unwrap_or(1.0 - p.rel_error.mean)
}

/// Mark the points no other point dominates in (quality up, energy down).
pub fn mark_front(points: &[PointResult], costs: &mut [PointCost]) {
    let q: Vec<(f64, f64)> = points
        .iter()
        .zip(costs.iter())
        .map(|(p, c)| (quality(p), c.energy_uj))
        .collect();
    for (i, c) in costs.iter_mut().enumerate() {
        let (qi, ei) = q[i];
        c.pareto = !q
            .iter()
            .any(|&(qj, ej)| qj >= qi && ej <= ei && (qj > qi || ej < ei));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimkit_analog::metrics::Stat;

    fn point(rel: f64) -> PointResult {
        let s = Stat {
            mean: rel,
            std: 0.0,
            min: rel,
            max: rel,
        };
        PointResult {
            params: vec![],
            trials: 1,
            deterministic: true,
            agreement: None,
            accuracy: None,
            rel_error: s,
            layers: vec![],
            faults: pimkit_analog::study::Faults {
                cells: 0,
                stuck_off: 0,
                stuck_on: 0,
                rate_off: 0.0,
                rate_on: 0.0,
                ci95_off: (0.0, 0.0),
                ci95_on: (0.0, 0.0),
            },
            remapped_cols: 0,
            ir_drop_max: 0.0,
        }
    }

    fn cost(e: f64) -> PointCost {
        PointCost {
            adc_bits: 8,
            energy_uj: e,
            adc_uj: 0.0,
            area_mm2: 1.0,
            latency_us: 1.0,
            tops_per_w: 1.0,
            pareto: false,
        }
    }

    #[test]
    fn the_front_keeps_only_undominated_points() {
        // (error, energy): the second is worse and dearer than the first; the third is
        // cheaper but worse; the fourth ties the first.
        let pts = [point(0.1), point(0.2), point(0.3), point(0.1)];
        let mut c = vec![cost(2.0), cost(3.0), cost(1.0), cost(2.0)];
        mark_front(&pts, &mut c);
        let marks: Vec<bool> = c.iter().map(|c| c.pareto).collect();
        assert_eq!(marks, vec![true, false, true, true]);
    }
}
