//! The crossbar section of `pimkit report`.

use crate::arch::Arch;
use crate::error::Result;
use crate::result::MapResult;
use crate::sweep::SweepResult;
use pimkit_ir::Graph;
use pimkit_report::{Section, Table};

/// Summary and per-layer tables of one result.
pub fn result_tables(r: &MapResult) -> (Table, Table) {
    let mut s = Table::new(
        format!("{}: crossbar mapping ({:?})", r.model, r.mode),
        &["metric", "pimkit", "ISAAC-like"],
    );
    let b = r.baseline.as_ref();
    let opt = |f: &dyn Fn(&crate::BaselineResult) -> String| b.map(f).unwrap_or_default();
    s.push(vec![
        "crossbars used".into(),
        r.crossbars_used.to_string(),
        opt(&|b| b.crossbars.to_string()),
    ]);
    s.push(vec![
        "crossbar budget".into(),
        r.crossbars_budget.to_string(),
        String::new(),
    ]);
    s.push(vec![
        "fits budget".into(),
        r.fits.to_string(),
        opt(&|b| b.fits_budget.to_string()),
    ]);
    s.push(vec![
        "utilization (used)".into(),
        format!("{:.1}%", 100.0 * r.utilization),
        opt(&|b| format!("{:.1}%", 100.0 * b.utilization)),
    ]);
    s.push(vec![
        "utilization (budget)".into(),
        format!("{:.1}%", 100.0 * r.utilization_budget),
        String::new(),
    ]);
    s.push(vec![
        format!("latency, {} samples (cycles)", r.samples),
        r.latency_cycles.to_string(),
        opt(&|b| b.latency_cycles.to_string()),
    ]);
    s.push(vec![
        "speedup".into(),
        r.speedup.map(|v| format!("{v:.2}x")).unwrap_or_default(),
        "1x".into(),
    ]);
    s.push(vec![
        "lower bound (area / adjacent / count / large)".into(),
        format!(
            "{} ({} / {} / {} / {})",
            r.lower_bound,
            r.bounds.area,
            r.bounds.adjacent_layer,
            r.bounds.box_count,
            r.bounds.large_items
        ),
        String::new(),
    ]);
    s.push(vec![
        "packing gap".into(),
        format!("{:.1}%", 100.0 * r.packing_gap),
        String::new(),
    ]);
    let mut l = Table::new(
        format!("{}: layers", r.model),
        &[
            "#",
            "layer",
            "kind",
            "box",
            "boxes",
            "copies",
            "cycles",
            "cycles (1 copy)",
            "crossbars",
        ],
    );
    for (i, x) in r.layers.iter().enumerate() {
        l.push(vec![
            i.to_string(),
            x.name.clone(),
            format!("{:?}", x.kind).to_lowercase(),
            format!("{}x{}", x.box_rows, x.box_cols),
            x.boxes.to_string(),
            x.copies.to_string(),
            x.cycles.to_string(),
            x.cycles_one_copy.to_string(),
            x.crossbars.to_string(),
        ]);
    }
    (s, l)
}

/// Build a section from a result, its packing map and an optional sweep.
pub fn section_from(
    r: &MapResult,
    packing_map: Option<String>,
    sw: Option<&SweepResult>,
) -> Section {
    let mut sec = Section::new("xbar", "RRAM crossbar compilation (RNC)");
    sec.text(format!(
        "{} on {}x{} crossbars, mode {:?}, depthwise {:?}, S_DW {}, {} samples. Speedup is normalised to an \
         explicit ISAAC-like mapping (one layer per crossbar set) simulated with the same samples.",
        r.model, r.xbar_rows, r.xbar_cols, r.mode, r.depthwise, r.sdw, r.samples
    ));
    if !r.fits {
        sec.note(format!(
            "The network does not fit {} crossbars: the packer needed {}.",
            r.crossbars_budget, r.crossbars_used
        ));
    }
    sec.note("Latency is counted in crossbar reads (cycles); peripheral circuits, data movement and bandwidth are ignored, as in the paper.");
    let (s, l) = result_tables(r);
    sec.table(s);
    sec.table(l);
    if let Some(svg) = packing_map {
        sec.svg(
            "xbar-packing.svg",
            "Packing map: crossbars with their layer boxes (colour = layer)",
            svg,
        );
    }
    if let Some(sw) = sw {
        sec.table(sw.table());
        sec.svg(
            "xbar-speedup.svg",
            "Speedup vs crossbar budget (cf. paper Fig. 8)",
            sw.speedup_chart(r.samples),
        );
        sec.svg(
            "xbar-sdw.svg",
            "Depthwise split factor vs samples (cf. paper Fig. 7)",
            sw.sdw_chart(1.0),
        );
    }
    sec.json = serde_json::json!({ "map": r, "sweep": sw });
    sec
}

/// The report's xbar section: the engine with [`crate::Xbar::report_options`].
pub fn report_section(g: &Graph, arch: &Arch, label: &str) -> Result<Section> {
    use pimkit_engine::Engine;
    let out = crate::Xbar::run(
        g,
        arch,
        &crate::Xbar::report_options(arch, label),
        &mut pimkit_engine::NoProgress,
    )
    .map_err(|e| crate::XbarError::Option {
        option: "report",
        msg: e.msg,
    })?;
    Ok(crate::Xbar::section(&out))
}
