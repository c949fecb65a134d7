//! Design-space sweep of the cost: crossbar size × ADC bits × cell bits × ... (the product
//! of the axes), each point mapped and priced, `--jobs` points at a time; rows in grid
//! order, identical for any number of jobs.

use super::engine::{CostOptions, run_costed};
use crate::arch::Arch;
use crate::error::{Result, XbarError};
use pimkit_ir::Graph;
use pimkit_report::Table;
use pimkit_report::plot::{Series, line_chart};
use serde::{Deserialize, Serialize};

/// The geometry parameters a sweep may vary.
pub const AXES: &[&str] = &[
    "rows",
    "cols",
    "xbar",
    "adc_bits",
    "cell_bits",
    "dac_bits",
    "input_bits",
    "weight_bits",
];

/// One axis: a parameter and its values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Axis {
    pub name: String,
    pub values: Vec<u64>,
}

/// Parse `NAME=V1,V2,...` (a name of [`AXES`], positive integers).
pub fn parse_axis(s: &str) -> Result<Axis> {
    let bad = |msg: String| XbarError::Option {
        option: "sweep",
        msg,
    };
    let (name, vals) = s
        .split_once('=')
        .ok_or_else(|| bad(format!("'{s}' is not NAME=V1,V2,...; e.g. adc_bits=4,6,8")))?;
    if !AXES.contains(&name) {
        return Err(bad(format!(
            "unknown parameter '{name}'; use one of {}",
            AXES.join(", ")
        )));
    }
    let values = vals
        .split(',')
        .map(|v| {
            v.trim()
                .parse::<u64>()
                .ok()
                .filter(|&x| x > 0)
                .ok_or_else(|| bad(format!("{name}: '{v}' is not a positive integer")))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Axis {
        name: name.to_string(),
        values,
    })
}

/// `arch` with one parameter set, checked.
fn with(arch: &Arch, name: &str, v: u64) -> Result<Arch> {
    let mut a = arch.clone();
    let c = &mut a.crossbar;
    let n = v as usize;
    let b = v.min(u32::MAX as u64) as u32;
    match name {
        "rows" => c.rows = n,
        "cols" => c.cols = n,
        "xbar" => (c.rows, c.cols) = (n, n),
        "cell_bits" => c.cell_bits = b,
        "weight_bits" => c.weight_bits = b,
        "dac_bits" => a.timing.dac_bits = b,
        "input_bits" => a.timing.input_bits = b,
        "adc_bits" => {
            if let Some(an) = a.analog.as_mut() {
                an.adc_bits = b;
            } else {
                let (cfg, _) = a.analog_config()?;
                let mut an = cfg.analog;
                an.adc_bits = b;
                a.analog = Some(an);
            }
            if !(1..=16).contains(&b) {
                return Err(XbarError::Option {
                    option: "sweep",
                    msg: format!("adc_bits = {v}: use 1..=16"),
                });
            }
        }
        // parse_axis admits only the names above
        _ => unreachable!("axis {name} was checked by parse_axis"),
    }
    a.validate()?;
    Ok(a)
}

/// One point's figures.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SweepPoint {
    pub params: Vec<(String, u64)>,
    pub energy_uj: f64,
    pub area_mm2: f64,
    pub latency_us: f64,
    pub throughput_ips: f64,
    pub power_w: f64,
    pub tops_per_w: f64,
    pub tops_per_mm2: f64,
    pub arrays: usize,
    /// Not dominated in (energy, area, latency) by another point.
    pub pareto: bool,
}

/// A sweep's points in grid order (first axis slowest).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostSweep {
    pub model: String,
    pub components: String,
    pub axes: Vec<Axis>,
    pub points: Vec<SweepPoint>,
}

/// Every combination of the axes' values, first axis slowest.
fn grid(axes: &[Axis]) -> Vec<Vec<(String, u64)>> {
    let mut out = vec![vec![]];
    for a in axes {
        out = out
            .into_iter()
            .flat_map(|p| {
                a.values.iter().map(move |&v| {
                    let mut q = p.clone();
                    q.push((a.name.clone(), v));
                    q
                })
            })
            .collect();
    }
    out
}

/// Whether `a` is no worse than `b` in every objective and better in one.
fn dominates(a: &SweepPoint, b: &SweepPoint) -> bool {
    let (x, y) = (
        [a.energy_uj, a.area_mm2, a.latency_us],
        [b.energy_uj, b.area_mm2, b.latency_us],
    );
    x.iter().zip(&y).all(|(p, q)| p <= q) && x.iter().zip(&y).any(|(p, q)| p < q)
}

/// Mark the points no other point dominates in (energy, area, latency).
pub fn mark_front(points: &mut [SweepPoint]) {
    for i in 0..points.len() {
        points[i].pareto = !points.iter().any(|q| dominates(q, &points[i]));
    }
}

/// One sweep over `axes` from sweeps of its points run apart (an executor's work items,
/// in grid order): the points joined and the front marked over all of them, the same
/// result as [`sweep`] over `axes` at once.
pub fn merge(axes: Vec<Axis>, parts: Vec<CostSweep>) -> Result<CostSweep> {
    let first = parts.first().ok_or_else(|| XbarError::Option {
        option: "sweep",
        msg: "no points to merge".into(),
    })?;
    let (model, components) = (first.model.clone(), first.components.clone());
    let mut points: Vec<SweepPoint> = parts.into_iter().flat_map(|p| p.points).collect();
    let want = grid(&axes);
    if want.len() != points.len() || want.iter().zip(&points).any(|(w, p)| *w != p.params) {
        return Err(XbarError::Option {
            option: "sweep",
            msg: "the parts' points are not the axes' grid in order".into(),
        });
    }
    mark_front(&mut points);
    Ok(CostSweep {
        model,
        components,
        axes,
        points,
    })
}

/// Map and price `g` at every point of `axes` over `arch`.
pub fn sweep(g: &Graph, arch: &Arch, opts: &CostOptions, axes: &[Axis]) -> Result<CostSweep> {
    if axes.is_empty() {
        return Err(XbarError::Option {
            option: "sweep",
            msg: "give at least one axis NAME=V1,V2,...".into(),
        });
    }
    let pts = grid(axes);
    // Every point's architecture is checked before any is mapped.
    let archs = pts
        .iter()
        .map(|p| p.iter().try_fold(arch.clone(), |a, (n, v)| with(&a, n, *v)))
        .collect::<Result<Vec<_>>>()?;
    let items: Vec<_> = pts.into_iter().zip(archs).collect();
    let results = pimkit_engine::jobs::par_map(&items, |(p, a)| {
        run_costed(g, a, opts, None, &mut pimkit_engine::NoProgress).map(|o| {
            let t = o.totals;
            SweepPoint {
                params: p.clone(),
                energy_uj: t.energy_uj,
                area_mm2: t.area_mm2,
                latency_us: t.latency_us,
                throughput_ips: t.throughput_ips,
                power_w: t.power_w,
                tops_per_w: t.tops_per_w,
                tops_per_mm2: t.tops_per_mm2,
                arrays: t.arrays,
                pareto: false,
            }
        })
    });
    let mut points = results.into_iter().collect::<Result<Vec<_>>>()?;
    mark_front(&mut points);
    Ok(CostSweep {
        model: opts.map.label_for(g),
        components: opts.components.name.clone(),
        axes: axes.to_vec(),
        points,
    })
}

impl CostSweep {
    /// One row per point.
    pub fn table(&self) -> Table {
        let mut head: Vec<&str> = self.axes.iter().map(|a| a.name.as_str()).collect();
        head.extend([
            "energy_uj",
            "area_mm2",
            "latency_us",
            "throughput_ips",
            "power_w",
            "tops_per_w",
            "tops_per_mm2",
            "arrays",
            "pareto",
        ]);
        let mut t = Table::new(
            format!("{}: cost sweep on '{}'", self.model, self.components),
            &head,
        );
        for p in &self.points {
            let mut row: Vec<String> = p.params.iter().map(|(_, v)| v.to_string()).collect();
            row.extend([
                format!("{:.6}", p.energy_uj),
                format!("{:.6}", p.area_mm2),
                format!("{:.6}", p.latency_us),
                format!("{:.3}", p.throughput_ips),
                format!("{:.6}", p.power_w),
                format!("{:.6}", p.tops_per_w),
                format!("{:.6}", p.tops_per_mm2),
                p.arrays.to_string(),
                p.pareto.to_string(),
            ]);
            t.push(row);
        }
        t
    }

    /// Energy against area: every point, the non-dominated ones joined.
    pub fn front_svg(&self) -> String {
        let all = Series {
            name: "design points".into(),
            points: self
                .points
                .iter()
                .map(|p| (p.area_mm2, p.energy_uj))
                .collect(),
            line: false,
        };
        let mut front: Vec<(f64, f64)> = self
            .points
            .iter()
            .filter(|p| p.pareto)
            .map(|p| (p.area_mm2, p.energy_uj))
            .collect();
        front.sort_by(|a, b| a.0.total_cmp(&b.0));
        let front = Series {
            name: "non-dominated (energy, area, latency)".into(),
            points: front,
            line: false,
        };
        line_chart(
            &format!("{}: energy vs area ({})", self.model, self.components),
            "area used, mm²",
            "energy per inference, µJ",
            &[all, front],
            false,
            true,
        )
    }

    /// Write sweep.csv, sweep.json and front.svg into `dir` (existing).
    pub fn write_dir(&self, dir: &std::path::Path) -> std::io::Result<Vec<String>> {
        let files = [
            ("sweep.csv", self.table().to_csv()),
            (
                "sweep.json",
                serde_json::to_string_pretty(self).map_err(std::io::Error::other)? + "\n",
            ),
            ("front.svg", self.front_svg()),
        ];
        for (name, text) in &files {
            pimkit_ir::fsio::write_atomic(&dir.join(name), text.as_bytes())?;
        }
        Ok(files.iter().map(|(n, _)| n.to_string()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_parse_and_bad_ones_say_what_to_do() {
        let a = parse_axis("adc_bits=4,6,8").unwrap();
        assert_eq!(a.values, vec![4, 6, 8]);
        let e = parse_axis("adc=4").unwrap_err().to_string();
        assert!(
            e.contains("unknown parameter 'adc'") && e.contains("adc_bits"),
            "{e}"
        );
        let e = parse_axis("rows=0").unwrap_err().to_string();
        assert!(e.contains("not a positive integer"), "{e}");
        let e = with(&Arch::default(), "cell_bits", 40)
            .unwrap_err()
            .to_string();
        assert!(e.contains("cell_bits"), "{e}");
    }

    #[test]
    fn points_swept_apart_and_merged_equal_one_sweep() {
        let g = pimkit_zoo::build_spec("lenet5?weights=none").unwrap();
        let arch = Arch::default();
        let opts = CostOptions::new(pimkit_cost::preset("isaac").unwrap().unwrap());
        let axes = vec![
            parse_axis("xbar=64,128").unwrap(),
            parse_axis("adc_bits=4,8").unwrap(),
        ];
        let whole = sweep(&g, &arch, &opts, &axes).unwrap();
        let parts: Vec<CostSweep> = grid(&axes)
            .into_iter()
            .map(|p| {
                let one: Vec<Axis> = p
                    .iter()
                    .map(|(n, v)| Axis {
                        name: n.clone(),
                        values: vec![*v],
                    })
                    .collect();
                sweep(&g, &arch, &opts, &one).unwrap()
            })
            .collect();
        // Each part alone is its own front; merged, the front is the whole sweep's.
        assert!(parts.iter().all(|p| p.points[0].pareto));
        assert_eq!(merge(axes.clone(), parts.clone()).unwrap(), whole);
        let mut shuffled = parts;
        shuffled.swap(0, 1);
        assert!(merge(axes, shuffled).is_err());
    }

    #[test]
    fn the_grid_is_the_product_first_axis_slowest() {
        let g = grid(&[
            Axis {
                name: "a".into(),
                values: vec![1, 2],
            },
            Axis {
                name: "b".into(),
                values: vec![3, 4, 5],
            },
        ]);
        assert_eq!(g.len(), 6);
        assert_eq!(g[1], vec![("a".to_string(), 1), ("b".to_string(), 4)]);
    }
}
