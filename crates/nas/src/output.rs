//! Outputs of a search: Pareto front table (CSV), JSON, an SVG of the fronts with the
//! ISAAC-like base network (cf. the paper's Fig. 10), the accuracy- and speed-optimal subnets
//! as ONNX, and the report section.

use crate::build::{SuperNet, build_with_weights};
use crate::error::{Result, io_err};
use crate::search::{Candidate, SearchResult};
use crate::space::{Config, Space};
use pimkit_report::plot::{Series, line_chart};
use pimkit_report::{Section, Table};
use std::path::{Path, PathBuf};

fn fmt_acc(a: Option<f64>) -> String {
    a.map(|v| format!("{v:.6}")).unwrap_or_default()
}

/// The Pareto fronts of `results` (one row per member, budget first).
pub fn front_table(results: &[SearchResult]) -> Table {
    let mut t = Table::new(
        "NAS Pareto front",
        &[
            "budget",
            "crossbars_budget",
            "config",
            "accuracy",
            "speedup",
            "latency_cycles",
            "throughput",
            "crossbars_used",
            "utilization",
            "utilization_budget",
            "weights",
            "macs",
            "energy_uj",
            "area_mm2",
            "role",
        ],
    );
    let opt = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_default();
    for r in results {
        for c in &r.front {
            let mut role = Vec::new();
            if r.accuracy_optimal
                .as_ref()
                .is_some_and(|a| a.config == c.config)
            {
                role.push("accuracy-optimal");
            }
            if r.speed_optimal
                .as_ref()
                .is_some_and(|a| a.config == c.config)
            {
                role.push("speed-optimal");
            }
            t.push(vec![
                format!("{:.2}", r.budget_relative),
                r.budget_crossbars.to_string(),
                c.config.clone(),
                fmt_acc(c.accuracy),
                format!("{:.3}", c.speedup),
                c.latency_cycles.to_string(),
                format!("{:.1}", c.throughput),
                c.crossbars_used.to_string(),
                format!("{:.4}", c.utilization),
                format!("{:.4}", c.utilization_budget),
                c.weights.to_string(),
                c.macs.to_string(),
                opt(c.energy_uj),
                opt(c.area_mm2),
                role.join("+"),
            ]);
        }
    }
    t
}

/// Summary: per budget, the base network (ISAAC-like, compiled) and the two optima.
pub fn summary_table(results: &[SearchResult]) -> Table {
    let mut t = Table::new(
        "NAS summary (speedup vs the ISAAC-like base network, same samples)",
        &[
            "budget",
            "crossbars",
            "method",
            "fits",
            "accuracy",
            "speedup",
            "utilization",
            "config",
        ],
    );
    for r in results {
        let b = format!("{:.2}x", r.budget_relative);
        let n = r.budget_crossbars.to_string();
        let base = &r.base;
        t.push(vec![
            b.clone(),
            n.clone(),
            "ISAAC-like".into(),
            base.isaac_fits.to_string(),
            fmt_acc(base.accuracy),
            "1.000".into(),
            format!("{:.4}", base.isaac_utilization),
            base.model.clone(),
        ]);
        t.push(vec![
            b.clone(),
            n.clone(),
            "compilation".into(),
            base.compiled_fits.to_string(),
            fmt_acc(base.accuracy),
            base.compiled_speedup
                .map(|s| format!("{s:.3}"))
                .unwrap_or_default(),
            base.compiled_utilization
                .map(|s| format!("{s:.4}"))
                .unwrap_or_default(),
            base.model.clone(),
        ]);
        for (name, c) in [
            ("NAS accuracy-optimal", &r.accuracy_optimal),
            ("NAS speed-optimal", &r.speed_optimal),
        ] {
            if let Some(c) = c {
                t.push(vec![
                    b.clone(),
                    n.clone(),
                    name.into(),
                    c.fits.to_string(),
                    fmt_acc(c.accuracy),
                    format!("{:.3}", c.speedup),
                    format!("{:.4}", c.utilization),
                    c.config.clone(),
                ]);
            }
        }
    }
    t
}

/// Accuracy vs speedup: one point series per budget, plus the ISAAC-like base (speed 1)
/// and compilation-only base points when the base accuracy is known.
pub fn front_svg(results: &[SearchResult]) -> String {
    let mut series = Vec::new();
    for r in results {
        series.push(Series {
            name: format!(
                "NAS front, {:.2}x ({} xbars)",
                r.budget_relative, r.budget_crossbars
            ),
            points: r
                .front
                .iter()
                .filter_map(|c| c.accuracy.map(|a| (c.speedup, a)))
                .collect(),
            line: false,
        });
    }
    if let Some(r) = results.first()
        && let Some(a) = r.base.accuracy
    {
        series.push(Series {
            name: format!(
                "ISAAC-like {} ({} xbars)",
                r.base.model, r.base.isaac_crossbars
            ),
            points: vec![(1.0, a)],
            line: false,
        });
        let comp: Vec<(f64, f64)> = results
            .iter()
            .filter_map(|r| r.base.compiled_speedup.map(|s| (s, a)))
            .collect();
        if !comp.is_empty() {
            series.push(Series {
                name: "base, compilation only".into(),
                points: comp,
                line: false,
            });
        }
    }
    let (ylab, title) = match results.first() {
        Some(r) if r.proxy => (
            "proxy score (NASWOT log-det, untrained; not accuracy)",
            "Crossbar-aware NAS: Pareto fronts (accuracy PROXY)",
        ),
        _ => ("accuracy", "Crossbar-aware NAS: Pareto fronts"),
    };
    line_chart(
        title,
        "speedup vs ISAAC-like base (x)",
        ylab,
        &series,
        true,
        false,
    )
}

fn onnx_of(space: &Space, r: &SearchResult, c: &Candidate, path: &Path) -> Result<()> {
    let cfg: Config = c.config.parse()?;
    let net = SuperNet::new(space, r.nsga.seed)?;
    let g = build_with_weights(space, &cfg, &net, space.resolution, 1)?;
    pimkit_onnx::save(&g, path)?;
    let j = space.ofa_json(&cfg);
    let jp = path.with_extension("json");
    std::fs::write(&jp, serde_json::to_string_pretty(&j).unwrap_or_default())
        .map_err(|e| io_err(&jp, e))
}

fn write(path: PathBuf, text: &str, out: &mut Vec<PathBuf>) -> Result<()> {
    std::fs::write(&path, text).map_err(|e| io_err(&path, e))?;
    out.push(path);
    Ok(())
}

/// Write `front.csv`, `summary.csv`, `front.json`, `front.svg` and, per budget,
/// `accuracy_optimal[-B].onnx` / `speed_optimal[-B].onnx` (+ `.json` configurations; the
/// weights are the shared random supernet's, for a user's fine-tune script to replace).
pub fn write_outputs(results: &[SearchResult], space: &Space, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).map_err(|e| io_err(dir, e))?;
    let mut out = Vec::new();
    write(
        dir.join("front.csv"),
        &front_table(results).to_csv(),
        &mut out,
    )?;
    write(
        dir.join("summary.csv"),
        &summary_table(results).to_csv(),
        &mut out,
    )?;
    let json = if results.len() == 1 {
        serde_json::to_value(&results[0])
    } else {
        serde_json::to_value(results)
    }
    .unwrap_or_default();
    write(
        dir.join("front.json"),
        &serde_json::to_string_pretty(&json).unwrap_or_default(),
        &mut out,
    )?;
    write(dir.join("front.svg"), &front_svg(results), &mut out)?;
    for r in results {
        let suffix = if results.len() == 1 {
            String::new()
        } else {
            format!("-{:.2}x", r.budget_relative)
        };
        for (name, c) in [
            ("accuracy_optimal", &r.accuracy_optimal),
            ("speed_optimal", &r.speed_optimal),
        ] {
            if let Some(c) = c {
                let p = dir.join(format!("{name}{suffix}.onnx"));
                onnx_of(space, r, c, &p)?;
                out.push(p.clone());
                out.push(p.with_extension("json"));
            }
        }
    }
    Ok(out)
}

/// Report section: summary, front table, chart, caveats.
pub fn report_section(results: &[SearchResult]) -> Section {
    let mut s = Section::new("nas", "Crossbar-aware NAS (RNC)");
    if let Some(r) = results.first() {
        s.text(format!(
            "NSGA-II over the '{}' space (population {}, {} generations, seed {}), hardware objectives {} from the \
             crossbar compiler ({} samples, S_DW {}), accuracy from {}. Speedups are relative to the ISAAC-like \
             mapping of {} ({} crossbars).",
            r.space,
            r.nsga.pop,
            r.nsga.gens,
            r.nsga.seed,
            r.objectives
                .iter()
                .map(|o| format!("{o:?}").to_lowercase())
                .collect::<Vec<_>>()
                .join(", ")
                + &r.components.as_ref().map(|c| format!(" (priced with '{c}')")).unwrap_or_default(),
            r.samples,
            r.sdw,
            r.evaluator,
            r.base.model,
            r.base.isaac_crossbars
        ));
        if r.proxy {
            s.note(
                "Accuracy is a training-free PROXY (NASWOT activation-pattern log-determinant of the untrained \
                 network with shared random supernet weights, small random batch at reduced resolution). Its rank \
                 correlation with trained accuracy is modest (Spearman 0.6-0.8 on NAS-Bench-201, often no better \
                 than #params) and unknown for this space; the paper's accuracies come from a trained supernet. \
                 Use --accuracy table:FILE.csv or cmd:\"...\" for measured accuracies.",
            );
        }
        s.note("Latency counts crossbar reads only (no peripherals, data movement or bandwidth), as in the paper.");
    }
    s.table(summary_table(results));
    s.table(front_table(results));
    s.svg(
        "nas-front.svg",
        "Pareto fronts per crossbar budget with the ISAAC-like base network (cf. paper Fig. 10)",
        front_svg(results),
    );
    s.json = serde_json::to_value(results).unwrap_or_default();
    s
}
