//! Tables, CSV, charts and the report section of an accuracy study.

use super::AccuracyResult;
use pimkit_analog::metrics::Stat;
use pimkit_analog::study::PointResult;
use pimkit_report::plot::{Series, fmt_tick, line_chart};
use pimkit_report::{Section, Table};

fn pct(s: &Option<Stat>) -> String {
    match s {
        Some(s) if s.mean.is_finite() => format!("{:.1} ± {:.1} %", 100.0 * s.mean, 100.0 * s.std),
        _ => "-".into(),
    }
}

fn db(v: f64) -> String {
    if v == f64::INFINITY {
        "exact".into()
    } else if v.is_finite() {
        format!("{v:.1}")
    } else {
        "-".into()
    }
}

/// The lowest mean layer SQNR of a point (dB).
fn worst_layer(p: &PointResult) -> (f64, String) {
    p.layers
        .iter()
        .map(|l| (l.sqnr_db.mean, l.name.clone()))
        .fold((f64::INFINITY, String::new()), |a, b| {
            if b.0 < a.0 { b } else { a }
        })
}

fn params(p: &PointResult) -> String {
    if p.params.is_empty() {
        "(settings)".into()
    } else {
        p.params
            .iter()
            .map(|(k, v)| format!("{k}={}", fmt_tick(*v)))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One row per point: agreement, accuracy, output error, the worst layer, faults.
pub fn summary_table(r: &AccuracyResult) -> Table {
    let mut t = Table::new(
        format!(
            "{} on {} ({} input{}, {} trial{}): mean ± std over trials",
            r.model,
            r.arch,
            r.inputs,
            if r.inputs == 1 { "" } else { "s" },
            r.trials,
            if r.trials == 1 { "" } else { "s" }
        ),
        &[
            "point",
            "top-1 agreement",
            "accuracy",
            "output rel. error",
            "worst layer SQNR dB",
            "stuck off / on",
            "remapped cols",
        ],
    );
    if !r.costs.is_empty() {
        t.headers
            .extend(["µJ/inference", "mm²", "latency µs", "TOPS/W", "front"].map(String::from));
    }
    for (i, p) in r.points.iter().enumerate() {
        let (w, name) = worst_layer(p);
        let mut row = vec![
            params(p),
            pct(&p.agreement),
            pct(&p.accuracy),
            format!("{:.4} ± {:.4}", p.rel_error.mean, p.rel_error.std),
            format!("{} ({name})", db(w)),
            format!(
                "{:.3} % / {:.3} %",
                100.0 * p.faults.rate_off,
                100.0 * p.faults.rate_on
            ),
            p.remapped_cols.to_string(),
        ];
        if let Some(c) = r.costs.get(i) {
            row.extend([
                format!("{:.3}", c.energy_uj),
                format!("{:.3}", c.area_mm2),
                format!("{:.3}", c.latency_us),
                format!("{:.2}", c.tops_per_w),
                if c.pareto { "*" } else { "" }.to_string(),
            ]);
        }
        t.push(row);
    }
    t
}

/// Per-layer SQNR of one point against the ideal network (cumulative: errors of earlier
/// layers included).
pub fn layer_table(r: &AccuracyResult, point: usize) -> Table {
    let p = &r.points[point];
    let mut t = Table::new(
        format!(
            "{}: per-layer output SQNR vs the ideal network, {}",
            r.model,
            params(p)
        ),
        &[
            "layer",
            "op",
            "matrix (rows x cols x groups)",
            "arrays",
            "SQNR dB mean",
            "std",
            "min",
        ],
    );
    for (l, s) in r.layers.iter().zip(&p.layers) {
        t.push(vec![
            l.name.clone(),
            l.op.clone(),
            format!("{} x {} x {}", l.rows, l.cols, l.groups),
            l.arrays.to_string(),
            db(s.sqnr_db.mean),
            if s.sqnr_db.std.is_finite() {
                format!("{:.2}", s.sqnr_db.std)
            } else {
                "-".into()
            },
            db(s.sqnr_db.min),
        ]);
    }
    t
}

/// One CSV row per point: the swept parameters and every metric.
pub fn points_csv(r: &AccuracyResult) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    let names: Vec<String> = r.axes.iter().map(|a| a.0.clone()).collect();
    let mut head = names.clone();
    for h in [
        "trials",
        "agreement_mean",
        "agreement_std",
        "agreement_min",
        "agreement_max",
        "accuracy_mean",
        "accuracy_std",
        "rel_error_mean",
        "rel_error_std",
        "worst_layer_sqnr_db",
        "mean_layer_sqnr_db",
        "stuck_off_rate",
        "stuck_on_rate",
        "cells",
        "remapped_cols",
        "ir_drop_max",
    ] {
        head.push(h.into());
    }
    if !r.costs.is_empty() {
        for h in [
            "adc_bits_priced",
            "energy_uj",
            "adc_energy_uj",
            "area_mm2",
            "latency_us",
            "tops_per_w",
            "pareto",
        ] {
            head.push(h.into());
        }
    }
    let _ = w.write_record(&head);
    let f = |v: f64| {
        if v.is_finite() {
            format!("{v}")
        } else if v > 0.0 {
            "inf".into()
        } else {
            String::new()
        }
    };
    let o = |s: &Option<Stat>, g: fn(&Stat) -> f64| s.as_ref().map(|s| f(g(s))).unwrap_or_default();
    for (i, p) in r.points.iter().enumerate() {
        let mut row: Vec<String> = p.params.iter().map(|(_, v)| f(*v)).collect();
        let finite: Vec<f64> = p
            .layers
            .iter()
            .map(|l| l.sqnr_db.mean)
            .filter(|v| v.is_finite())
            .collect();
        let mean_layer = if finite.is_empty() {
            f64::INFINITY
        } else {
            finite.iter().sum::<f64>() / finite.len() as f64
        };
        row.extend([
            p.trials.to_string(),
            o(&p.agreement, |s| s.mean),
            o(&p.agreement, |s| s.std),
            o(&p.agreement, |s| s.min),
            o(&p.agreement, |s| s.max),
            o(&p.accuracy, |s| s.mean),
            o(&p.accuracy, |s| s.std),
            f(p.rel_error.mean),
            f(p.rel_error.std),
            f(worst_layer(p).0),
            f(mean_layer),
            f(p.faults.rate_off),
            f(p.faults.rate_on),
            p.faults.cells.to_string(),
            p.remapped_cols.to_string(),
            f(p.ir_drop_max),
        ]);
        if let Some(c) = r.costs.get(i) {
            row.extend([
                c.adc_bits.to_string(),
                f(c.energy_uj),
                f(c.adc_uj),
                f(c.area_mm2),
                f(c.latency_us),
                f(c.tops_per_w),
                c.pareto.to_string(),
            ]);
        }
        let _ = w.write_record(&row);
    }
    String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
}

/// Mean top-1 agreement (or, for outputs without classes, 1 - relative error) of a point.
fn score(p: &PointResult) -> f64 {
    p.agreement
        .map(|s| s.mean)
        .unwrap_or(1.0 - p.rel_error.mean)
}

fn score_name(r: &AccuracyResult) -> &'static str {
    if r.points.iter().all(|p| p.agreement.is_some()) {
        "mean top-1 agreement"
    } else {
        "1 - output relative error"
    }
}

/// Heat map of the first two sweep axes (rows: first axis, columns: second).
pub fn heat_map(r: &AccuracyResult) -> Option<String> {
    if r.axes.len() != 2 {
        return None;
    }
    let (a, b) = (&r.axes[0], &r.axes[1]);
    let values: Vec<Vec<f64>> = (0..a.1.len())
        .map(|i| {
            (0..b.1.len())
                .map(|j| score(&r.points[i * b.1.len() + j]))
                .collect()
        })
        .collect();
    Some(pimkit_report::plot::heat_map(
        &format!("{}: {}", r.model, score_name(r)),
        &b.0,
        &a.0,
        &b.1.iter().map(|v| fmt_tick(*v)).collect::<Vec<_>>(),
        &a.1.iter().map(|v| fmt_tick(*v)).collect::<Vec<_>>(),
        &values,
        (0.0, 1.0),
    ))
}

/// Curves over the last sweep axis, one per value of the first (the score and, in a second
/// chart, the output's relative error).
pub fn sweep_curves(r: &AccuracyResult) -> Option<(String, String)> {
    let last = r.axes.last()?;
    let first = if r.axes.len() >= 2 {
        Some(&r.axes[0])
    } else {
        None
    };
    let n_last = last.1.len();
    let groups = r.points.len() / n_last.max(1);
    let series = |f: &dyn Fn(&PointResult) -> f64| -> Vec<Series> {
        (0..groups)
            .map(|g| Series {
                name: match first {
                    Some(a) if r.axes.len() == 2 => format!("{}={}", a.0, fmt_tick(a.1[g])),
                    _ => format!("group {g}"),
                },
                points: (0..n_last)
                    .map(|j| (last.1[j], f(&r.points[g * n_last + j])))
                    .collect(),
                line: true,
            })
            .collect()
    };
    let score_chart = line_chart(
        &format!("{}: {}", r.model, score_name(r)),
        &last.0,
        score_name(r),
        &series(&score),
        false,
        false,
    );
    let err_chart = line_chart(
        &format!("{}: output relative error", r.model),
        &last.0,
        "||y - y_ideal|| / ||y_ideal||",
        &series(&|p| p.rel_error.mean),
        false,
        false,
    );
    Some((score_chart, err_chart))
}

fn quality_name(r: &AccuracyResult) -> &'static str {
    if r.points.iter().all(|p| p.accuracy.is_some()) {
        "mean accuracy"
    } else {
        score_name(r)
    }
}

/// Quality against energy per inference, every priced point, the non-dominated ones
/// joined (two or more points).
pub fn front_svg(r: &AccuracyResult) -> Option<String> {
    if r.costs.len() < 2 || r.costs.len() != r.points.len() {
        return None;
    }
    let at = |i: usize| (r.costs[i].energy_uj, super::quality(&r.points[i]));
    let all = Series {
        name: "sweep points".into(),
        points: (0..r.points.len()).map(at).collect(),
        line: false,
    };
    let mut front: Vec<(f64, f64)> = (0..r.points.len())
        .filter(|&i| r.costs[i].pareto)
        .map(at)
        .collect();
    front.sort_by(|a, b| a.0.total_cmp(&b.0));
    let front = Series {
        name: "non-dominated (quality, energy)".into(),
        points: front,
        line: true,
    };
    Some(line_chart(
        &format!(
            "{}: {} vs energy ({})",
            r.model,
            quality_name(r),
            r.components.as_deref().unwrap_or("")
        ),
        "energy per inference, µJ",
        quality_name(r),
        &[all, front],
        false,
        false,
    ))
}

/// The study as a report section.
pub fn accuracy_section(r: &AccuracyResult) -> Section {
    let mut s = Section::new(
        format!("accuracy-{}", r.model),
        format!("Analog accuracy: {} on {}", r.model, r.arch),
    );
    let c = &r.config;
    s.text(format!(
        "Functional crossbar model (docs/accuracy.md): {}-bit weights on {}-bit cells ({}), {}-row arrays, {}-bit inputs \
         through {}-bit DACs, {}; on/off {}, variation {} ({:?}), read noise {}, stuck off/on {} / {}, wire {} ohm; \
         {} input(s), {} trial(s), seed {}.",
        c.geom.weight_bits,
        c.geom.cell_bits,
        if c.geom.differential { "differential pairs" } else { "offset + reference column" },
        c.geom.rows,
        c.geom.input_bits,
        c.geom.dac_bits,
        if c.analog.adc_bits == 0 {
            "no ADC quantization".to_string()
        } else {
            format!("{}-bit ADC, {:?} range", c.analog.adc_bits, c.analog.adc_range)
        },
        c.device.on_off_ratio,
        c.device.variation,
        c.device.variation_model,
        c.device.read_noise,
        c.device.saf_off,
        c.device.saf_on,
        c.device.wire_resistance_ohm,
        r.inputs,
        r.trials,
        r.seed
    ));
    if let Some(a) = r.ideal_accuracy {
        s.text(format!(
            "Ideal model accuracy against the labels: {:.1} %.",
            100.0 * a
        ));
    }
    for n in &r.notes {
        s.note(n.clone());
    }
    s.table(summary_table(r));
    if let Some(h) = heat_map(r) {
        s.svg(
            format!("{}-accuracy-heatmap.svg", r.model),
            "sweep heat map",
            h,
        );
    }
    if let Some((a, b)) = sweep_curves(r) {
        s.svg(
            format!("{}-accuracy-curves.svg", r.model),
            "score over the last sweep axis",
            a,
        );
        s.svg(
            format!("{}-accuracy-error.svg", r.model),
            "output error over the last sweep axis",
            b,
        );
    }
    if let Some(f) = front_svg(r) {
        s.svg(
            format!("{}-accuracy-front.svg", r.model),
            "quality against energy per inference",
            f,
        );
    }
    if !r.points.is_empty() {
        s.table(layer_table(r, r.points.len() - 1));
    }
    s.json = serde_json::to_value(r).unwrap_or_default();
    s
}

/// Write a study's files into `dir` (existing): `result.json` (the given JSON, the
/// command's `--json` layout), points.csv, layers.csv (the last point's layers) and the
/// charts a sweep has. Returns the file names written.
pub fn write_outputs(
    dir: &std::path::Path,
    json: &serde_json::Value,
    r: &AccuracyResult,
) -> std::io::Result<Vec<String>> {
    let mut files: Vec<(&str, String)> = vec![
        (
            "result.json",
            serde_json::to_string_pretty(json).map_err(std::io::Error::other)? + "\n",
        ),
        ("points.csv", points_csv(r)),
        (
            "layers.csv",
            layer_table(r, r.points.len().saturating_sub(1)).to_csv(),
        ),
    ];
    if let Some(h) = heat_map(r) {
        files.push(("heatmap.svg", h));
    }
    if let Some((c, e)) = sweep_curves(r) {
        files.push(("curves.svg", c));
        files.push(("error.svg", e));
    }
    if let Some(f) = front_svg(r) {
        files.push(("front.svg", f));
    }
    for (name, text) in &files {
        pimkit_ir::fsio::write_atomic(&dir.join(name), text.as_bytes())?;
    }
    Ok(files.into_iter().map(|(n, _)| n.to_string()).collect())
}
