//! Sweeps over budgets x S_DW x samples (the paper's Figs. 7-9): one compilation per
//! (budget, S_DW), one simulation per sample count.

use crate::arch::Arch;
use crate::error::{Result, XbarError};
use crate::layer::Layer;
use crate::map::{
    Budget, MapOptions, Mapping, baseline_mapping, budget_crossbars, compile, simulate_mapping,
};
use pimkit_report::Table;
use pimkit_report::plot::{Series, line_chart};
use serde::{Deserialize, Serialize};

/// What to sweep.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepSpec {
    /// Multiples of the ISAAC-like crossbar count.
    pub budgets: Vec<f64>,
    pub sdws: Vec<usize>,
    pub samples: Vec<usize>,
}

impl SweepSpec {
    /// Every value in range: budgets in (0, 1000] (as `--budget`), S_DW and sample counts
    /// at least 1 (samples at most 2^20, as `--samples`), each list non-empty.
    pub fn check(&self) -> Result<()> {
        let bad = |msg: &str| XbarError::Option {
            option: "sweep",
            msg: msg.into(),
        };
        if self.budgets.is_empty() || self.sdws.is_empty() || self.samples.is_empty() {
            return Err(bad(
                "give at least one budget, one S_DW and one sample count",
            ));
        }
        if self
            .budgets
            .iter()
            .any(|b| !(b.is_finite() && *b > 0.0 && *b <= 1000.0))
        {
            return Err(bad("every budget must be a number in (0, 1000]"));
        }
        if self.sdws.contains(&0) || self.samples.iter().any(|&k| k == 0 || k > 1 << 20) {
            return Err(bad(
                "S_DW values must be at least 1 and sample counts in 1..=1048576",
            ));
        }
        Ok(())
    }

    /// The paper's grid: budgets 0.8/1/1.2/1.8, S_DW 1/5/10/20, samples 1..1024 in powers of 2.
    pub fn paper() -> SweepSpec {
        SweepSpec {
            budgets: vec![0.8, 1.0, 1.2, 1.8],
            sdws: vec![1, 5, 10, 20],
            samples: (0..=10).map(|i| 1usize << i).collect(),
        }
    }
}

/// One point of a sweep. `fits == false`: the network does not fit the budget (figures are
/// then those of the over-budget packing, speedup is not given).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepRow {
    pub budget: f64,
    pub crossbars_budget: usize,
    pub sdw: usize,
    pub samples: usize,
    pub fits: bool,
    pub crossbars_used: usize,
    pub lower_bound: usize,
    pub utilization: f64,
    pub utilization_budget: f64,
    pub latency_cycles: u64,
    pub baseline_crossbars: usize,
    pub baseline_latency_cycles: u64,
    pub speedup: Option<f64>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepResult {
    pub model: String,
    pub rows: Vec<SweepRow>,
}

/// Run the sweep; `base` supplies mode, depthwise mapping, seed and duplication setting.
/// The points run on [`pimkit_engine::jobs`] threads; the rows do not depend on their number.
/// [`sweep`] over a model's crossbar layers (extracted from `g`; a model without any is
/// an error), the spec checked first.
pub fn sweep_graph(
    model: &str,
    g: &pimkit_ir::Graph,
    arch: &Arch,
    base: &MapOptions,
    spec: &SweepSpec,
) -> Result<SweepResult> {
    spec.check()?;
    let ex = crate::extract(g)?;
    if ex.layers.is_empty() {
        return Err(XbarError::NoLayers);
    }
    sweep(model, &ex.layers, arch, base, spec)
}

pub fn sweep(
    model: &str,
    layers: &[Layer],
    arch: &Arch,
    base: &MapOptions,
    spec: &SweepSpec,
) -> Result<SweepResult> {
    if spec.budgets.is_empty() || spec.sdws.is_empty() || spec.samples.is_empty() {
        return Err(XbarError::Option {
            option: "sweep",
            msg: "give at least one budget, one S_DW and one sample count".into(),
        });
    }
    let bm = baseline_mapping(layers, arch, base.mode);
    // The points are independent: the ISAAC-like latencies per sample count and one
    // compilation per (budget, S_DW) run on `--jobs` threads, rows in grid order.
    let base_lat: Vec<u64> =
        pimkit_engine::jobs::par_map(&spec.samples, |&k| simulate_mapping(&bm, layers, k).latency);
    let grid: Vec<(f64, usize)> = spec
        .budgets
        .iter()
        .flat_map(|&b| spec.sdws.iter().map(move |&sdw| (b, sdw)))
        .collect();
    let per_point = pimkit_engine::jobs::par_map(&grid, |&(b, sdw)| {
        point_rows(layers, arch, base, spec, &bm, &base_lat, b, sdw)
    });
    let mut rows = Vec::with_capacity(grid.len() * spec.samples.len());
    for r in per_point {
        rows.extend(r?);
    }
    Ok(SweepResult {
        model: model.to_string(),
        rows,
    })
}

/// The rows of one (budget, S_DW) point: one compilation, one simulation per sample count.
fn point_rows(
    layers: &[Layer],
    arch: &Arch,
    base: &MapOptions,
    spec: &SweepSpec,
    bm: &Mapping,
    base_lat: &[u64],
    b: f64,
    sdw: usize,
) -> Result<Vec<SweepRow>> {
    let area: u64 = arch.area();
    let opts = MapOptions {
        budget: Budget::Relative(b),
        sdw,
        baseline: false,
        ..base.clone()
    };
    let n = budget_crossbars(layers, arch, &opts);
    let m = match compile(layers, arch, &opts) {
        Ok(m) => m,
        Err(XbarError::BudgetTooSmall { .. }) => {
            return Ok(spec
                .samples
                .iter()
                .map(|&k| SweepRow {
                    budget: b,
                    crossbars_budget: n,
                    sdw,
                    samples: k,
                    fits: false,
                    crossbars_used: 0,
                    lower_bound: 0,
                    utilization: 0.0,
                    utilization_budget: 0.0,
                    latency_cycles: 0,
                    baseline_crossbars: bm.packing.crossbars,
                    baseline_latency_cycles: 0,
                    speedup: None,
                })
                .collect());
        }
        Err(e) => return Err(e),
    };
    let boxes: u64 = m.packing.placements.iter().map(|p| p.item.area()).sum();
    Ok(spec
        .samples
        .iter()
        .enumerate()
        .map(|(ki, &k)| {
            let s = simulate_mapping(&m, layers, k);
            SweepRow {
                budget: b,
                crossbars_budget: n,
                sdw,
                samples: k,
                fits: m.fits,
                crossbars_used: m.packing.crossbars,
                lower_bound: m.bounds.best,
                utilization: boxes as f64 / (m.packing.crossbars.max(1) as u64 * area) as f64,
                utilization_budget: boxes as f64 / (n as u64 * area) as f64,
                latency_cycles: s.latency,
                baseline_crossbars: bm.packing.crossbars,
                baseline_latency_cycles: base_lat[ki],
                speedup: (m.fits && s.latency > 0).then(|| base_lat[ki] as f64 / s.latency as f64),
            }
        })
        .collect())
}

impl SweepResult {
    /// Write sweep.csv, sweep.json, speedup.svg (at `samples`) and sdw.svg (at budget 1)
    /// into `dir` (existing); returns the file names.
    pub fn write_dir(&self, dir: &std::path::Path, samples: usize) -> std::io::Result<Vec<String>> {
        let json = serde_json::to_string_pretty(self).map_err(std::io::Error::other)? + "\n";
        let files = [
            ("sweep.csv", self.to_csv()),
            ("sweep.json", json),
            ("speedup.svg", self.speedup_chart(samples)),
            ("sdw.svg", self.sdw_chart(1.0)),
        ];
        for (name, text) in &files {
            pimkit_ir::fsio::write_atomic(&dir.join(name), text.as_bytes())?;
        }
        Ok(files.iter().map(|(n, _)| n.to_string()).collect())
    }

    pub fn table(&self) -> Table {
        let mut t = Table::new(
            format!("{}: crossbar sweep", self.model),
            &[
                "budget",
                "crossbars_budget",
                "sdw",
                "samples",
                "fits",
                "crossbars_used",
                "lower_bound",
                "utilization",
                "utilization_budget",
                "latency_cycles",
                "baseline_crossbars",
                "baseline_latency_cycles",
                "speedup",
            ],
        );
        for r in &self.rows {
            t.push(vec![
                format!("{}", r.budget),
                r.crossbars_budget.to_string(),
                r.sdw.to_string(),
                r.samples.to_string(),
                r.fits.to_string(),
                r.crossbars_used.to_string(),
                r.lower_bound.to_string(),
                format!("{:.4}", r.utilization),
                format!("{:.4}", r.utilization_budget),
                r.latency_cycles.to_string(),
                r.baseline_crossbars.to_string(),
                r.baseline_latency_cycles.to_string(),
                r.speedup.map(|s| format!("{s:.3}")).unwrap_or_default(),
            ]);
        }
        t
    }

    pub fn to_csv(&self) -> String {
        self.table().to_csv()
    }

    fn samples_ref(&self, want: usize) -> usize {
        let mut ks: Vec<usize> = self.rows.iter().map(|r| r.samples).collect();
        ks.sort_unstable();
        ks.dedup();
        if ks.contains(&want) {
            want
        } else {
            *ks.last().unwrap_or(&1)
        }
    }

    /// Speedup over the ISAAC-like baseline vs budget, one line per S_DW (like Fig. 8), at
    /// `samples` samples (or the largest swept count when that one was not swept).
    pub fn speedup_chart(&self, samples: usize) -> String {
        let k = self.samples_ref(samples);
        let mut sdws: Vec<usize> = self.rows.iter().map(|r| r.sdw).collect();
        sdws.sort_unstable();
        sdws.dedup();
        let series: Vec<Series> = sdws
            .iter()
            .map(|&s| Series {
                name: format!("S_DW={s}"),
                points: self
                    .rows
                    .iter()
                    .filter(|r| r.sdw == s && r.samples == k)
                    .filter_map(|r| r.speedup.map(|v| (r.budget, v)))
                    .collect(),
                line: true,
            })
            .collect();
        line_chart(
            &format!("{}: speedup vs ISAAC-like ({k} samples)", self.model),
            "crossbar budget (x ISAAC-like count)",
            "speedup",
            &series,
            false,
            false,
        )
    }

    /// Speed relative to S_DW = 1 vs samples, one line per S_DW (like Fig. 7), at the swept
    /// budget closest to `budget`.
    pub fn sdw_chart(&self, budget: f64) -> String {
        let b = self
            .rows
            .iter()
            .map(|r| r.budget)
            .min_by(|x, y| (x - budget).abs().total_cmp(&(y - budget).abs()))
            .unwrap_or(budget);
        let mut sdws: Vec<usize> = self.rows.iter().map(|r| r.sdw).collect();
        sdws.sort_unstable();
        sdws.dedup();
        let ref_lat = |k: usize| {
            self.rows
                .iter()
                .find(|r| r.budget == b && r.sdw == sdws[0] && r.samples == k && r.fits)
                .map(|r| r.latency_cycles)
        };
        let series: Vec<Series> = sdws
            .iter()
            .map(|&s| Series {
                name: format!("S_DW={s}"),
                points: self
                    .rows
                    .iter()
                    .filter(|r| r.budget == b && r.sdw == s && r.fits && r.latency_cycles > 0)
                    .filter_map(|r| {
                        ref_lat(r.samples)
                            .map(|l| (r.samples as f64, l as f64 / r.latency_cycles as f64))
                    })
                    .collect(),
                line: true,
            })
            .collect();
        line_chart(
            &format!("{}: speed vs S_DW={} at {b}x budget", self.model, sdws[0]),
            "samples",
            &format!("speed relative to S_DW={}", sdws[0]),
            &series,
            true,
            false,
        )
    }
}
