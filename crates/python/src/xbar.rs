//! `pimkit.xbar.map` and `pimkit.xbar.sweep` (RNC crossbar mapping). Mirrors
//! crates/cli/src/cmd/xbar.rs.

use crate::common::{arch_name, out_dir, result, write};
use crate::errors::{bug, detached, user};
use crate::model::ModelArg;
use crate::progress::PyProgress;
use pimkit_engine::Engine;
use pimkit_engine::EngineError;
use pimkit_xbar::sweep::{SweepSpec, sweep as run_sweep};
use pimkit_xbar::{Arch, Budget, DepthwiseMapping, MapOptions, Mode, Xbar, XbarError, XbarOptions};
use pyo3::prelude::*;
use std::path::PathBuf;

fn xerr(e: XbarError) -> EngineError {
    pimkit_xbar::engine::engine_error(e)
}

/// The CLI's common xbar options.
pub struct Common {
    pub arch: Option<PathBuf>,
    pub xbar: Option<usize>,
    pub depthwise: Option<String>,
    pub mode: Option<String>,
    pub seed: Option<u64>,
    pub no_dup: bool,
}

impl Common {
    fn arch(&self) -> Result<Arch, EngineError> {
        let mut arch: Arch = pimkit_engine::arch::load(self.arch.as_deref())?;
        if let Some(n) = self.xbar {
            arch.crossbar.rows = n;
            arch.crossbar.cols = n;
            arch.validate().map_err(user)?;
        }
        Ok(arch)
    }

    fn setup(&self) -> Result<(Arch, MapOptions), EngineError> {
        let arch = self.arch()?;
        let mut opts = MapOptions::from_arch(&arch);
        if let Some(m) = &self.mode {
            opts.mode = m.parse::<Mode>().map_err(user)?;
        }
        if let Some(d) = &self.depthwise {
            opts.depthwise = d.parse::<DepthwiseMapping>().map_err(user)?;
        }
        if let Some(s) = self.seed {
            opts.seed = s;
        }
        opts.duplicate = !self.no_dup;
        Ok((arch, opts))
    }

    fn arch_name(&self) -> String {
        arch_name::<Arch>(self.arch.as_deref())
    }
}

/// Shape-only weights suffice for mapping (ignored for .onnx files and loaded models).
const SHAPES_ONLY: &[(&str, &str)] = &[("weights", "none")];

/// `pimkit xbar map --json` (through the xbar engine's `Engine::run`).
#[pyfunction]
#[pyo3(signature = (model, arch=None, xbar=None, depthwise=None, mode=None, seed=None,
    no_dup=false, budget=None, crossbars=None, sdw=None, samples=None, out=None, progress=None))]
pub fn xbar_map(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    arch: Option<PathBuf>,
    xbar: Option<usize>,
    depthwise: Option<String>,
    mode: Option<String>,
    seed: Option<u64>,
    no_dup: bool,
    budget: Option<f64>,
    crossbars: Option<usize>,
    sdw: Option<usize>,
    samples: Option<usize>,
    out: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let m = ModelArg::extract(model)?;
    let c = Common {
        arch,
        xbar,
        depthwise,
        mode,
        seed,
        no_dup,
    };
    let mut prog = PyProgress::new(progress);
    let r = detached(py, || {
        if budget.is_some() && crossbars.is_some() {
            return Err(user("give budget or crossbars, not both"));
        }
        let arch = c.arch()?;
        let opts = XbarOptions {
            label: m.label(),
            budget: match (budget, crossbars) {
                (_, Some(n)) => Some(Budget::Crossbars(n)),
                (Some(b), None) => Some(Budget::Relative(b)),
                (None, None) => None,
            },
            sdw,
            samples,
            mode: c
                .mode
                .as_deref()
                .map(str::parse::<Mode>)
                .transpose()
                .map_err(user)?,
            depthwise: c
                .depthwise
                .as_deref()
                .map(str::parse::<DepthwiseMapping>)
                .transpose()
                .map_err(user)?,
            seed: c.seed,
            no_dup: c.no_dup,
            packing_svg: out.is_some().then_some(2000),
            sweep: None,
        };
        let g = m.static_graph(SHAPES_ONLY)?;
        let o = Xbar::run(&g, &arch, &opts, &mut |i: usize, n: usize, w: &str| {
            prog.step(i, n, w)
        })?;
        let json = result("xbar", &m.name(), &c.arch_name(), &o)?;
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
            let (summary, layers) = pimkit_xbar::result_tables(&o.map);
            let v: serde_json::Value = serde_json::from_str(&json).map_err(bug)?;
            let pretty = serde_json::to_string_pretty(&v).map_err(bug)? + "\n";
            write(dir, "result.json", &pretty)?;
            write(dir, "summary.csv", &summary.to_csv())?;
            write(dir, "layers.csv", &layers.to_csv())?;
            if let Some(svg) = &o.packing_svg {
                write(dir, "packing.svg", svg)?;
            }
        }
        Ok(json)
    });
    prog.finish(r)
}

/// `pimkit xbar sweep --json`.
#[pyfunction]
#[pyo3(signature = (model, budgets, sdw, samples, arch=None, xbar=None, depthwise=None,
    mode=None, seed=None, no_dup=false, out=None))]
pub fn xbar_sweep(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    budgets: Vec<f64>,
    sdw: Vec<usize>,
    samples: Vec<usize>,
    arch: Option<PathBuf>,
    xbar: Option<usize>,
    depthwise: Option<String>,
    mode: Option<String>,
    seed: Option<u64>,
    no_dup: bool,
    out: Option<PathBuf>,
) -> PyResult<String> {
    let m = ModelArg::extract(model)?;
    let c = Common {
        arch,
        xbar,
        depthwise,
        mode,
        seed,
        no_dup,
    };
    detached(py, || {
        if budgets
            .iter()
            .any(|b| !(b.is_finite() && *b > 0.0 && *b <= 1000.0))
        {
            return Err(user("budgets: every budget must be a number in (0, 1000]"));
        }
        if sdw.contains(&0) || samples.contains(&0) || samples.iter().any(|&k| k > 1 << 20) {
            return Err(user(
                "sdw and samples values must be at least 1 (samples at most 1048576)",
            ));
        }
        let (arch, opts) = c.setup()?;
        let g = m.static_graph(SHAPES_ONLY)?;
        let ex = pimkit_xbar::extract(&g).map_err(xerr)?;
        if ex.layers.is_empty() {
            return Err(xerr(XbarError::NoLayers));
        }
        let label = m.label();
        let spec = SweepSpec {
            budgets: budgets.clone(),
            sdws: sdw.clone(),
            samples: samples.clone(),
        };
        let s = run_sweep(&label, &ex.layers, &arch, &opts, &spec).map_err(xerr)?;
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
            write(dir, "sweep.csv", &s.to_csv())?;
            let json = serde_json::to_string_pretty(&s).map_err(bug)? + "\n";
            write(dir, "sweep.json", &json)?;
            write(dir, "speedup.svg", &s.speedup_chart(opts.samples))?;
            write(dir, "sdw.svg", &s.sdw_chart(1.0))?;
        }
        result("xbar", &m.name(), &c.arch_name(), &s)
    })
}

/// The files `pimkit xbar sweep -o DIR` writes, from a sweep's JSON (the rows of a sweep
/// that ran as distributed work items, merged).
#[pyfunction]
#[pyo3(signature = (sweep_json, out, arch=None, xbar=None, depthwise=None, mode=None,
    seed=None, no_dup=false))]
pub fn xbar_sweep_files(
    py: Python<'_>,
    sweep_json: &str,
    out: PathBuf,
    arch: Option<PathBuf>,
    xbar: Option<usize>,
    depthwise: Option<String>,
    mode: Option<String>,
    seed: Option<u64>,
    no_dup: bool,
) -> PyResult<Vec<PathBuf>> {
    let c = Common {
        arch,
        xbar,
        depthwise,
        mode,
        seed,
        no_dup,
    };
    detached(py, || {
        let s: pimkit_xbar::sweep::SweepResult =
            serde_json::from_str(sweep_json).map_err(|e| user(format!("sweep_json: {e}")))?;
        let (_, opts) = c.setup()?;
        out_dir(&out, "out")?;
        let json = serde_json::to_string_pretty(&s).map_err(bug)? + "\n";
        Ok(vec![
            write(&out, "sweep.csv", &s.to_csv())?,
            write(&out, "sweep.json", &json)?,
            write(&out, "speedup.svg", &s.speedup_chart(opts.samples))?,
            write(&out, "sdw.svg", &s.sdw_chart(1.0))?,
        ])
    })
}
