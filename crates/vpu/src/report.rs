//! The engine's report section and file outputs (CSV + SVG rooflines, Table 3 / Table 5
//! equivalents, per-layer network table).

use crate::arch::Arch;
use crate::network::NetworkResult;
use crate::roofline::{Point, points_table, roofline_svg, table3, table4};
use pimkit_report::{Section, Table};
use std::path::Path;

/// Paper values for side-by-side comparison (quinn Table 3 and Table 5).
pub const PAPER_TABLE3: [(&str, f64, f64, f64, f64); 5] = [
    // kernel, G_P 1V, G_P 4V, L_I 1V, L_I 4V
    ("1D convolution", 7.8, 26.6, 1.32, 1.27),
    ("MM", 9.2, 24.5, 1.01, 3.28),
    ("2D convolution", 7.7, 15.8, 2.02, 2.06),
    ("Depthwise", 31.4, 51.3, 1.09, 1.07),
    ("VM", 5.0, 8.8, 1.23, 1.06),
];
/// quinn Table 5 (MobileNetV2-1.0): SIMD, N_op [M], cycles [M], latency [ms], off-chip
/// [MiB], Ops/cycle, energy [J].
pub const PAPER_TABLE5: [(usize, f64, f64, f64, f64, f64, f64); 2] = [
    (1, 638.5, 941.3, 11766.2, 186.2, 0.68, 1.27),
    (4, 638.5, 875.7, 10946.3, 187.0, 0.73, 4.73),
];

/// Titles of the per-sweep roofline figures.
pub fn sweep_title(s: &str) -> &'static str {
    match s {
        "matmul" => "QLinearMatMul roofline (Fig. 5): MM n sweep and VM, per dataflow",
        "conv2d" => "QLinearConv 2-D roofline (Fig. 6): c/k sweep, 32 outputs",
        "conv1d" => "Causal 1-D QLinearConv roofline (Fig. 7): c/K sweep",
        "depthwise" => "Depthwise QLinearConv roofline (Fig. 8): i/k sweep, 256 channels",
        "simd" => {
            "SIMD x bandwidth (Fig. 9): best dataflow per kernel, 1/2/4 VPUs, 1.2/0.8/0.5 B/cycle, scalar host"
        }
        "arch" => "Lanes x cache/VLEN (Fig. 10): MM256, per dataflow",
        _ => "roofline",
    }
}

fn sweeps_in(points: &[Point]) -> Vec<String> {
    let mut v: Vec<String> = vec![];
    for p in points {
        if !v.contains(&p.sweep) {
            v.push(p.sweep.clone());
        }
    }
    v
}

/// Write `<sweep>.csv` and `<sweep>.svg` for every sweep present, plus `table3.csv`
/// when the SIMD sweep is there. Errors name the path and the action that failed.
pub fn write_roofline_dir(points: &[Point], dir: &Path) -> std::io::Result<Vec<String>> {
    create_out_dir(dir)?;
    let mut files = vec![];
    for s in sweeps_in(points) {
        let pts: Vec<Point> = points.iter().filter(|p| p.sweep == s).cloned().collect();
        let csv = dir.join(format!("{s}.csv"));
        write_file(&csv, points_table(&s, &pts).to_csv())?;
        let svg = dir.join(format!("{s}.svg"));
        write_file(&svg, roofline_svg(sweep_title(&s), &pts))?;
        files.push(csv.display().to_string());
        files.push(svg.display().to_string());
        if s == "simd" {
            let t = dir.join("table3.csv");
            write_file(&t, table3(&pts).to_csv())?;
            files.push(t.display().to_string());
        }
        if s == "arch" {
            let t = dir.join("table4.csv");
            write_file(&t, table4(&pts).to_csv())?;
            files.push(t.display().to_string());
        }
    }
    Ok(files)
}

pub use pimkit_report::create_out_dir;

/// Write a file atomically (renamed into place when complete), with an error that names
/// the file.
pub fn write_file(path: &Path, data: impl AsRef<[u8]>) -> std::io::Result<()> {
    pimkit_ir::fsio::write_atomic(path, data.as_ref()).map_err(|e| {
        std::io::Error::new(e.kind(), format!("cannot write '{}': {e}", path.display()))
    })
}

/// Write `vpu run --out DIR`'s files besides the output tensors into `dir` (existing):
/// result.json (the given JSON, the command's `--json` layout), layers.csv and layers.svg.
pub fn write_run_dir(
    dir: &Path,
    json: &serde_json::Value,
    r: &NetworkResult,
) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(json).map_err(std::io::Error::other)?;
    write_file(&dir.join("result.json"), text)?;
    write_file(&dir.join("layers.csv"), layer_table(r).to_csv())?;
    write_file(&dir.join("layers.svg"), layers_svg(r))
}

/// Cycles per layer, split into compute, DMA stall and host control (stacked bars).
pub fn layers_svg(r: &NetworkResult) -> String {
    let labels: Vec<String> = r.layers.iter().map(|l| l.name.clone()).collect();
    let part = |f: fn(&crate::network::LayerResult) -> u64| -> Vec<f64> {
        r.layers.iter().map(|l| f(l) as f64).collect()
    };
    pimkit_report::plot::stacked_bar_chart(
        &layers_svg_title(r),
        "cycles",
        &labels,
        &[
            ("compute", part(|l| l.compute_cycles)),
            ("DMA stall", part(|l| l.dma_stall_cycles)),
            ("host", part(|l| l.host_cycles)),
        ],
    )
}

fn layers_svg_title(r: &NetworkResult) -> String {
    run_title(r, "cycles per layer")
}

/// "`model`: `what` (VPUs, bandwidth)", the title of a run's per-layer table and chart.
fn run_title(r: &NetworkResult, what: &str) -> String {
    format!(
        "{}: {what} ({} VPU, {} B/cycle)",
        r.model, r.vpus, r.bandwidth
    )
}

/// Per-layer table of a network run.
pub fn layer_table(r: &NetworkResult) -> Table {
    let mut t = Table::new(
        run_title(r, "per-layer cost"),
        &[
            "layer",
            "op",
            "kernel",
            "dataflow",
            "cycles",
            "compute",
            "dma stall",
            "host",
            "offchip B",
            "ops",
            "energy mJ",
        ],
    );
    for l in &r.layers {
        t.push(vec![
            l.name.clone(),
            l.op.clone(),
            format!("{:?}", l.kernel).to_lowercase(),
            l.dataflow.map_or("-".into(), |d| d.name().into()),
            l.cycles.to_string(),
            l.compute_cycles.to_string(),
            l.dma_stall_cycles.to_string(),
            l.host_cycles.to_string(),
            l.offchip_bytes.to_string(),
            l.ops.to_string(),
            format!("{:.3}", l.energy_j * 1e3),
        ]);
    }
    t
}

/// Table 5 equivalent: whole-network totals, one row per run (method, VPUs, cache).
pub fn table5(runs: &[&NetworkResult]) -> Table {
    let mut t = Table::new(
        "Table 5 equivalent: whole network at SIMD = VPUs (the paper method sums the kernel layers only, quinn §5.11)",
        &[
            "model",
            "method",
            "VPUs",
            "cache",
            "N_op [M]",
            "cycles [M]",
            "latency @clock [ms]",
            "off-chip [MiB]",
            "host-side [MiB]",
            "Ops/cycle",
            "energy [J]",
        ],
    );
    for r in runs {
        t.push(vec![
            r.model.clone(),
            match r.method {
                crate::network::Method::Paper => "paper (§5.11)".into(),
                crate::network::Method::Pimkit => "pimkit".to_string(),
            },
            r.vpus.to_string(),
            if r.cold_layers {
                "cold per layer"
            } else {
                "carried"
            }
            .into(),
            format!("{:.1}", r.ops as f64 / 1e6),
            format!("{:.1}", r.cycles as f64 / 1e6),
            format!("{:.1}", r.latency_ms),
            format!("{:.1}", r.offchip_bytes as f64 / 1048576.0),
            format!("{:.1}", r.host_bytes as f64 / 1048576.0),
            format!("{:.2}", r.ops as f64 / r.cycles.max(1) as f64),
            format!("{:.2}", r.energy_j),
        ]);
    }
    t
}

/// The VPU engine's report section: rooflines of `points`, Table 3, and the network runs.
pub fn report_section(arch: &Arch, points: &[Point], runs: &[&NetworkResult]) -> Section {
    let mut s = Section::new("vpu", "Near-memory vector engine (QUINN on NM-Carus)");
    s.text(format!(
        "Simulated system: {} VPU(s), {} lanes, VRF {} KiB (VLEN {} x int32), {} KiB {}-way write-back cache with {} B lines, off-chip {} B/cycle (+{} cycles latency), cv32e40x host at {} MHz. Kernels compute the real quantized results (bit-exact with the reference interpreter); cycles and off-chip bytes ((misses + evictions) x line) come from the same run.",
        arch.vpus, arch.vpu.lanes, arch.vpu.vrf_bytes / 1024, arch.vlen(), arch.cache.size_bytes / 1024, arch.cache.ways,
        arch.cache.line_bytes, arch.memory.bandwidth, arch.memory.latency_cycles, arch.clock_mhz
    ));
    s.note("Model, not measurement: NM-Carus per-instruction cycle costs are not public; the MAC and adder rates follow the paper, the remaining costs are configurable and calibrated (arch/nm-carus.toml cites each).");
    for sw in sweeps_in(points) {
        let pts: Vec<Point> = points.iter().filter(|p| p.sweep == sw).cloned().collect();
        s.svg(
            format!("vpu_{sw}.svg"),
            sweep_title(&sw),
            roofline_svg(sweep_title(&sw), &pts),
        );
        s.table(points_table(&format!("vpu_{sw}"), &pts));
    }
    if points.iter().any(|p| p.sweep == "simd") {
        s.table(table3(points));
        let mut pt = Table::new(
            "Table 3 in the paper (G_P, L_I)",
            &["Kernel", "G_P 1V", "G_P 4V", "L_I 1V", "L_I 4V"],
        );
        for (k, a, b, c, d) in PAPER_TABLE3 {
            pt.push(vec![
                k.into(),
                a.to_string(),
                b.to_string(),
                c.to_string(),
                d.to_string(),
            ]);
        }
        s.table(pt);
    }
    if points.iter().any(|p| p.sweep == "arch") {
        s.table(table4(points));
        s.note("Energy per op uses an assumed linear dynamic-power model in lanes and cache size (power.lane_share / power.cache_share, unverified); compare trends, not absolute pJ/op, with quinn Table 4.");
    }
    if !runs.is_empty() {
        s.table(table5(runs));
        let mut pt = Table::new(
            "Table 5 in the paper (MobileNetV2-1.0; docs/vpu.md explains the gap)",
            &[
                "SIMD",
                "N_op [M]",
                "cycles [M]",
                "latency @80 MHz [ms]",
                "off-chip [MiB]",
                "Ops/cycle",
                "energy [J]",
            ],
        );
        for (v, n, c, l, b, p, e) in PAPER_TABLE5 {
            pt.push(
                [v as f64, n, c, l, b, p, e]
                    .iter()
                    .map(|x| x.to_string())
                    .collect(),
            );
        }
        s.table(pt);
        // Per-layer tables of the pimkit-method runs (the paper-method runs differ only
        // in what their totals count).
        for r in runs
            .iter()
            .filter(|r| r.method == crate::network::Method::Pimkit)
        {
            s.svg(
                format!("vpu_layers_{}vpu.svg", r.vpus),
                layers_svg_title(r),
                layers_svg(r),
            );
            s.table(layer_table(r));
        }
    }
    s.json = serde_json::json!({
        "arch": arch,
        "points": points,
        "networks": runs,
    });
    s
}

/// Convenience for `pimkit report`: quick sweeps (every figure at reduced sizes) plus,
/// when a quantized model is given, its network runs for the Table 5 equivalent: at 1
/// and 4 VPUs (and `arch.vpus`) with pimkit's method, at 1 and 4 with the paper's.
pub fn build_section(
    arch: &Arch,
    model: Option<(
        &pimkit_ir::Graph,
        &std::collections::HashMap<String, pimkit_ir::Tensor>,
    )>,
    quick: bool,
) -> crate::error::Result<Section> {
    use crate::network::{NetOptions, run_network};
    use crate::roofline::{Scale, Sweep, run_sweep};
    let mut pts = vec![];
    for s in Sweep::ALL {
        pts.extend(run_sweep(arch, s, Scale { quick })?);
    }
    let mut runs = vec![];
    if let Some((g, inputs)) = model {
        use crate::network::Method;
        let mut simd = vec![1, 4, arch.vpus];
        simd.sort();
        simd.dedup();
        for method in [Method::Pimkit, Method::Paper] {
            for &v in &simd {
                if method == Method::Paper && v != 1 && v != 4 {
                    continue;
                }
                let opts = NetOptions {
                    method,
                    ..Default::default()
                };
                runs.push(run_network(
                    g,
                    inputs,
                    &arch.with(v, arch.memory.bandwidth),
                    &opts,
                )?);
            }
        }
    }
    let refs: Vec<&NetworkResult> = runs.iter().collect();
    let mut sec = report_section(arch, &pts, &refs);
    if quick {
        sec.note(
            "The sweeps here run at reduced sizes to keep the report short: compare trends, \
             not values, with quinn's figures and Table 3. `pimkit vpu roofline` and \
             `pimkit vpu table3` run the paper's sizes (docs/vpu.md compares them).",
        );
    }
    Ok(sec)
}

/// One network run's blocks in a report section: the totals, the per-layer cycles plot
/// and table, and the run's notes.
pub fn network_blocks(s: &mut Section, r: &NetworkResult) {
    s.text(format!(
        "{} VPU(s): {:.1} M cycles ({:.1} ms; compute {:.1} M, DMA stall {:.1} M, host {:.1} M), \
         off-chip {:.2} MiB, {:.1} M ops, {:.3} J.",
        r.vpus,
        r.cycles as f64 / 1e6,
        r.latency_ms,
        r.compute_cycles as f64 / 1e6,
        r.dma_stall_cycles as f64 / 1e6,
        r.host_cycles as f64 / 1e6,
        r.offchip_bytes as f64 / 1048576.0,
        r.ops as f64 / 1e6,
        r.energy_j
    ));
    for n in &r.notes {
        s.note(n.clone());
    }
    s.svg(
        format!("vpu_layers_{}vpu.svg", r.vpus),
        layers_svg_title(r),
        layers_svg(r),
    );
    s.table(layer_table(r));
}
