//! Tables, plots and the report section of a cost run.

use super::output::CostOutput;
use pimkit_report::plot::stacked_bar_chart;
use pimkit_report::{Section, Table};

/// Summary, per-layer and per-component tables.
pub fn cost_tables(r: &CostOutput) -> (Table, Table, Table) {
    let t = &r.totals;
    let mut s = Table::new(
        format!(
            "{}: hardware cost on '{}' ({})",
            r.model, r.components, r.counts_from
        ),
        &["metric", "value"],
    );
    let rows: Vec<(&str, String)> = vec![
        ("energy per inference", format!("{:.4} µJ", t.energy_uj)),
        (
            "  dynamic / static",
            format!("{:.4} / {:.4} µJ", t.dynamic_uj, t.static_uj),
        ),
        (
            "latency (first inference)",
            format!("{:.3} µs", t.latency_us),
        ),
        (
            "throughput (pipelined)",
            format!("{:.1} inferences/s", t.throughput_ips),
        ),
        ("bottleneck", t.bottleneck.clone()),
        ("power", format!("{:.4} W", t.power_w)),
        (
            "area used / provided",
            format!("{:.3} / {:.3} mm²", t.area_mm2, t.chip_area_mm2),
        ),
        (
            "arrays / PEs / tiles / chips",
            format!("{} / {} / {} / {}", t.arrays, t.pes, t.tiles, t.chips),
        ),
        ("operations per inference", format!("{:.4e}", t.ops as f64)),
        ("TOPS", format!("{:.4}", t.tops)),
        ("TOPS/W", format!("{:.3}", t.tops_per_w)),
        ("TOPS/mm²", format!("{:.4}", t.tops_per_mm2)),
        (
            "achieved / peak",
            format!(
                "{:.4} / {:.3} TOPS ({:.2}%)",
                t.tops,
                t.peak_tops,
                100.0 * t.utilization
            ),
        ),
        (
            "weight programming",
            format!("{:.3} µJ, {:.4} ms", t.programming_uj, t.programming_ms),
        ),
    ];
    for (k, v) in rows {
        s.push(vec![k.to_string(), v]);
    }
    let mut l = Table::new(
        format!("{}: layers", r.model),
        &[
            "#",
            "layer",
            "op",
            "arrays",
            "copies",
            "MACs",
            "time (µs)",
            "energy (µJ)",
            "ADC (µJ)",
        ],
    );
    for (i, x) in r.layers.iter().enumerate() {
        let adc: f64 = x
            .energy_by_component
            .iter()
            .filter(|(k, _)| k.contains("adc"))
            .map(|(_, v)| v)
            .sum();
        l.push(vec![
            i.to_string(),
            x.name.clone(),
            x.op.clone(),
            x.arrays.to_string(),
            x.copies.to_string(),
            x.macs.to_string(),
            format!("{:.4}", x.time_us),
            format!("{:.5}", x.energy_uj),
            format!("{adc:.5}"),
        ]);
    }
    let mut c = Table::new(
        format!("{}: components", r.model),
        &["component", "energy (µJ)", "share", "area (mm²)", "share"],
    );
    let e_total: f64 = r.energy_by_component.values().sum();
    let a_total: f64 = r.area_by_component.values().sum();
    let pct = |v: f64, t: f64| {
        if t > 0.0 {
            format!("{:.1}%", 100.0 * v / t)
        } else {
            "-".into()
        }
    };
    for (name, a) in &r.area_by_component {
        let e = r.energy_by_component.get(name).copied().unwrap_or(0.0);
        c.push(vec![
            name.clone(),
            format!("{e:.5}"),
            pct(e, e_total),
            format!("{a:.5}"),
            pct(*a, a_total),
        ]);
    }
    (s, l, c)
}

/// Stacked bars of dynamic energy by component, one bar per layer (at most 48 layers: the
/// rest are summed in a last bar).
pub fn energy_svg(r: &CostOutput) -> String {
    let names: Vec<&String> = r.energy_by_component.keys().collect();
    let cap = 48;
    let mut labels: Vec<String> = r.layers.iter().take(cap).map(|l| l.name.clone()).collect();
    if r.layers.len() > cap {
        labels.push(format!("{} more", r.layers.len() - cap));
    }
    let series: Vec<(&str, Vec<f64>)> = names
        .iter()
        .map(|n| {
            let mut v: Vec<f64> = r
                .layers
                .iter()
                .take(cap)
                .map(|l| l.energy_by_component.get(*n).copied().unwrap_or(0.0))
                .collect();
            if r.layers.len() > cap {
                v.push(
                    r.layers[cap..]
                        .iter()
                        .map(|l| l.energy_by_component.get(*n).copied().unwrap_or(0.0))
                        .sum(),
                );
            }
            (n.as_str(), v)
        })
        .filter(|(_, v)| v.iter().any(|&x| x > 0.0))
        .collect();
    stacked_bar_chart(
        &format!(
            "{}: dynamic energy per layer by component ({})",
            r.model, r.components
        ),
        "µJ per inference",
        &labels,
        &series,
    )
}

/// Area by component, one stacked bar (what the mapping uses).
pub fn area_svg(r: &CostOutput) -> String {
    let series: Vec<(&str, Vec<f64>)> = r
        .area_by_component
        .iter()
        .filter(|(_, v)| **v > 0.0)
        .map(|(k, v)| (k.as_str(), vec![*v]))
        .collect();
    stacked_bar_chart(
        &format!("{}: area by component ({})", r.model, r.components),
        "mm²",
        &[format!("{} tiles", r.totals.tiles)],
        &series,
    )
}

/// The report section.
pub fn cost_section(r: &CostOutput) -> Section {
    let (s, l, c) = cost_tables(r);
    let mut sec = Section::new("cost", format!("Hardware cost: {}", r.model));
    sec.text(format!(
        "Energy, area, latency and efficiency of the crossbar mapping on the '{}' component library \
         (docs/cost.md); counts from {}.",
        r.components, r.counts_from
    ));
    for n in &r.notes {
        sec.note(n.clone());
    }
    sec.table(s);
    sec.svg(
        "cost_energy.svg",
        "Dynamic energy per layer, by component",
        energy_svg(r),
    );
    sec.svg("cost_area.svg", "Area by component", area_svg(r));
    sec.table(c);
    sec.table(l);
    sec.json = serde_json::to_value(r).unwrap_or(serde_json::Value::Null);
    sec
}

impl CostOutput {
    /// Write `xbar cost -o DIR`'s files into `dir` (existing): result.json, summary.csv,
    /// layers.csv, components.csv, energy.svg, area.svg.
    pub fn write_dir(
        &self,
        dir: &std::path::Path,
        json: &serde_json::Value,
    ) -> std::io::Result<Vec<String>> {
        let (s, l, c) = cost_tables(self);
        let files = [
            (
                "result.json",
                serde_json::to_string_pretty(json).map_err(std::io::Error::other)? + "\n",
            ),
            ("summary.csv", s.to_csv()),
            ("layers.csv", l.to_csv()),
            ("components.csv", c.to_csv()),
            ("energy.svg", energy_svg(self)),
            ("area.svg", area_svg(self)),
        ];
        for (name, text) in &files {
            pimkit_ir::fsio::write_atomic(&dir.join(name), text.as_bytes())?;
        }
        Ok(files.iter().map(|(n, _)| n.to_string()).collect())
    }
}
