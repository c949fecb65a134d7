//! The PUMA section of `pimkit report`: energy breakdown (SVG), instruction mix and
//! MVMU utilization.

use crate::program::Program;
use crate::result::PumaResult;
use pimkit_report::{Section, Table, plot};

/// Reference figures (reference §5.3, ISCA-2018 spreadsheet, 16 MVMUs/tile):
/// (model, latency µs, energy µJ).
pub const REFERENCE_FIGURES: [(&str, f64, f64); 2] =
    [("puma_mlp_l4", 348.0, 90.9), ("puma_mlp_l5", 815.0, 567.0)];

/// Build the report section for one simulated model (`prog` adds the placement).
pub fn report_section(res: &PumaResult, prog: Option<&Program>) -> Section {
    let mut s = Section::new("puma", format!("PUMA: {}", res.model));
    s.text(format!(
        "{} cycles ({:.3} µs at the architecture clock), {:.1} nJ per inference, {} tiles / {} cores / {} MVMUs, {} simulated instructions, {} arithmetic, {} constants.",
        res.stats.cycles,
        res.stats.latency_ns / 1000.0,
        res.stats.energy_nj,
        res.stats.tiles,
        res.stats.cores,
        res.stats.mvmus,
        res.stats.simulated_instructions,
        match res.mode {
            crate::NumMode::Exact => "exact 16-bit fixed-point",
            crate::NumMode::BitSerial => "bit-serial (original simulator's per-stream rounding)",
        },
        res.constants
    ));
    if let Some(e) = res.max_abs_error {
        s.text(format!(
            "Largest |PUMA − reference interpreter| over all outputs: {e:.6}."
        ));
    }
    if res.shape_only {
        s.note("The model has shape-only weights: crossbars hold zeros, so outputs are not meaningful; timing and energy are.");
    }
    if let Some(&(_, lat, en)) = REFERENCE_FIGURES.iter().find(|(m, _, _)| *m == res.model) {
        s.note(format!(
            "Reference (ISCA-2018 spreadsheet, reference §5.3): {lat} µs and {en} µJ per inference, computed layer by layer with another node configuration; see docs/puma.md for why pimkit's figures differ."
        ));
    }
    let labels: Vec<String> = res.stats.energy_breakdown_nj.keys().cloned().collect();
    let values: Vec<f64> = res.stats.energy_breakdown_nj.values().copied().collect();
    s.svg(
        "puma_energy.svg",
        "Energy per component (nJ)",
        plot::bar_chart("PUMA energy per inference", "nJ", &labels, &values),
    );
    let mut t = Table::new("Energy breakdown", &["component", "nJ", "share"]);
    let total = res.stats.energy_nj.max(1e-30);
    for (k, v) in &res.stats.energy_breakdown_nj {
        t.push(vec![
            k.clone(),
            format!("{v:.3}"),
            format!("{:.1} %", 100.0 * v / total),
        ]);
    }
    s.table(t);
    let mut t = Table::new("Instruction mix (executed)", &["class", "count", "share"]);
    let n = res.stats.simulated_instructions.max(1) as f64;
    for (k, v) in &res.stats.instructions {
        if *v > 0 {
            t.push(vec![
                k.clone(),
                v.to_string(),
                format!("{:.1} %", 100.0 * *v as f64 / n),
            ]);
        }
    }
    s.table(t);
    let mut t = Table::new(
        "MVMU utilization",
        &["MVMUs", "mvm operations", "mean busy fraction"],
    );
    t.push(vec![
        res.stats.mvmus.to_string(),
        res.stats.mvm_ops.to_string(),
        format!("{:.2} %", 100.0 * res.stats.mvmu_utilization),
    ]);
    s.table(t);
    if let Some(p) = prog {
        let mut t = Table::new("Placement", &["matrix", "rows x cols", "MVMUs", "tiles"]);
        for m in &p.placement.matrices {
            let mut tiles: Vec<usize> = m.tiles.iter().map(|x| x.tile).collect();
            tiles.dedup();
            t.push(vec![
                m.node.clone(),
                format!("{}x{}", m.rows, m.cols),
                m.tiles.len().to_string(),
                format!(
                    "{}..={}",
                    tiles.first().unwrap_or(&0),
                    tiles.last().unwrap_or(&0)
                ),
            ]);
        }
        s.table(t);
    }
    s.json = serde_json::to_value(res).unwrap_or_default();
    s
}

/// The section of a layer-by-layer run: totals, one row per layer, and the run's notes.
pub fn per_layer_section(r: &crate::PerLayerResult) -> Section {
    let mut s = Section::new("puma", format!("PUMA: {} (layer by layer)", r.model));
    s.text(format!(
        "Simulated layer by layer (the original's method for CNNs, reference §5.3): {} cycles \
         summed over {} layers, {:.1} nJ per inference{}.",
        r.cycles,
        r.layers.len(),
        r.energy_nj,
        if r.scaled {
            "; some layers were simulated at a reduced size and scaled"
        } else {
            ""
        }
    ));
    if let Some(hw) = &r.hardware {
        s.text(format!(
            "Hardware (component library '{}', every layer's tiles resident): {:.2} mm², {:.3} W, \
             {:.3} TOPS/W, {:.4} TOPS/mm².",
            hw.components, hw.area_mm2, hw.power_w, hw.tops_per_w, hw.tops_per_mm2
        ));
    }
    for n in &r.notes {
        s.note(n.clone());
    }
    for w in &r.warnings {
        s.note(format!("warning: {w}"));
    }
    let mut t = pimkit_report::Table::new(
        "PUMA layers",
        &[
            "layer",
            "input",
            "simulated",
            "scale",
            "cycles",
            "energy [nJ]",
            "tiles",
            "MVMUs",
            "max |error|",
        ],
    );
    for l in &r.layers {
        t.push(vec![
            l.name.clone(),
            format!("{:?}", l.input_shape),
            format!("{:?}", l.simulated_shape),
            format!("{:.2}", l.scale),
            l.cycles.to_string(),
            format!("{:.1}", l.energy_nj),
            l.tiles.to_string(),
            l.mvmus.to_string(),
            l.max_abs_error.map_or("-".into(), |e| format!("{e:.3e}")),
        ]);
    }
    s.table(t);
    s.json = serde_json::to_value(r).unwrap_or_default();
    s
}
