//! `pimkit.xbar.map`, `pimkit.xbar.sweep` (RNC crossbar mapping) and `pimkit.xbar.cost`
//! (hardware cost). Mirrors crates/cli/src/cmd/xbar.rs.

use crate::common::{arch_name, out_dir, result};
use crate::errors::{bug, detached, user};
use crate::model::ModelArg;
use crate::progress::PyProgress;
use pimkit_engine::Engine;
use pimkit_engine::EngineError;
use pimkit_xbar::sweep::{SweepSpec, sweep_graph};
use pimkit_xbar::{Arch, Budget, MapOptions, Xbar, XbarError, XbarOptions};
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
        Arch::load_sized(self.arch.as_deref(), self.xbar).map_err(xerr)
    }

    /// The engine options these settings give (the CLI's `xbar` common flags).
    fn options(&self, label: String) -> Result<XbarOptions, EngineError> {
        XbarOptions {
            label,
            seed: self.seed,
            no_dup: self.no_dup,
            ..Default::default()
        }
        .with_names(self.mode.as_deref(), self.depthwise.as_deref())
        .map_err(xerr)
    }

    fn setup(&self) -> Result<(Arch, MapOptions), EngineError> {
        let arch = self.arch()?;
        let opts = self.options(String::new())?.resolve(&arch);
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
            budget: Budget::from_flags(budget, crossbars),
            sdw,
            samples,
            packing_svg: out.is_some().then_some(2000),
            ..c.options(m.label())?
        };
        let g = m.static_graph(SHAPES_ONLY)?;
        let o = Xbar::run(&g, &arch, &opts, &mut |i: usize, n: usize, w: &str| {
            prog.step(i, n, w)
        })?;
        let v = pimkit_engine::result_json("xbar", &m.name(), &c.arch_name(), &o);
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
            o.write_dir(dir, &v)
                .map_err(|e| user(format!("out {}: {e}", dir.display())))?;
        }
        let json = crate::common::json(&v)?;
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
        let (arch, opts) = c.setup()?;
        let g = m.static_graph(SHAPES_ONLY)?;
        let spec = SweepSpec {
            budgets: budgets.clone(),
            sdws: sdw.clone(),
            samples: samples.clone(),
        };
        let s = sweep_graph(&m.label(), &g, &arch, &opts, &spec).map_err(xerr)?;
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
            s.write_dir(dir, opts.samples)
                .map_err(|e| user(format!("out {}: {e}", dir.display())))?;
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
        let names = s
            .write_dir(&out, opts.samples)
            .map_err(|e| user(format!("out {}: {e}", out.display())))?;
        Ok(names.iter().map(|n| out.join(n)).collect())
    })
}

/// `pimkit xbar cost --json`: `inputs`/`random` give value-dependent counts (None: table
/// counts, every input bit 1).
#[pyfunction]
#[pyo3(signature = (model, components="isaac".to_string(), arch=None, xbar=None, depthwise=None,
    mode=None, seed=None, no_dup=false, budget=None, crossbars=None, sdw=None, inputs=None,
    random=None, out=None, progress=None))]
pub fn xbar_cost(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    components: String,
    arch: Option<PathBuf>,
    xbar: Option<usize>,
    depthwise: Option<String>,
    mode: Option<String>,
    seed: Option<u64>,
    no_dup: bool,
    budget: Option<f64>,
    crossbars: Option<usize>,
    sdw: Option<usize>,
    inputs: Option<&Bound<'_, PyAny>>,
    random: Option<usize>,
    out: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    use pimkit_xbar::cost::Cost;
    let m = ModelArg::extract(model)?;
    let source = match (inputs, random) {
        (None, None) => None,
        (i, r) => Some(match crate::accuracy::input_source(i, r)? {
            pimkit_xbar::accuracy::InputSource::Random { n, .. } => {
                pimkit_xbar::accuracy::InputSource::Random {
                    n,
                    seed: seed.unwrap_or(0),
                }
            }
            other => other,
        }),
    };
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
        let (arch, mut opts) = cost_setup(&c, &components, budget, crossbars, sdw, m.label())?;
        // Reference runs need the weights; table counts need only the shapes.
        let g = if source.is_some() {
            m.static_graph(&[])?
        } else {
            m.static_graph(SHAPES_ONLY)?
        };
        opts.inputs = source;
        let o = Cost::run(&g, &arch, &opts, &mut |i: usize, n: usize, w: &str| {
            prog.step(i, n, w)
        })?;
        let v = pimkit_engine::result_json(Cost::NAME, &m.name(), &c.arch_name(), &o);
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
            o.write_dir(dir, &v)
                .map_err(|e| user(format!("out {}: {e}", dir.display())))?;
        }
        crate::common::json(&v)
    });
    prog.finish(r)
}

/// The cost commands' common settings: the architecture and the cost options (table
/// counts; the caller sets `inputs`).
fn cost_setup(
    c: &Common,
    components: &str,
    budget: Option<f64>,
    crossbars: Option<usize>,
    sdw: Option<usize>,
    label: String,
) -> Result<(Arch, pimkit_xbar::cost::CostOptions), EngineError> {
    if budget.is_some() && crossbars.is_some() {
        return Err(user("give budget or crossbars, not both"));
    }
    let components = pimkit_xbar::cost::load_components(components).map_err(xerr)?;
    let arch = c.arch()?;
    let map = XbarOptions {
        budget: Budget::from_flags(budget, crossbars),
        sdw,
        ..c.options(label)?
    };
    Ok((
        arch,
        pimkit_xbar::cost::CostOptions {
            map,
            components,
            inputs: None,
        },
    ))
}

fn axes_of(
    axes: &[(String, Vec<u64>)],
) -> Result<Vec<pimkit_xbar::cost::sweep::Axis>, EngineError> {
    use pimkit_xbar::cost::sweep::parse_axis;
    axes.iter()
        .map(|(n, v)| {
            let vals: Vec<String> = v.iter().map(u64::to_string).collect();
            parse_axis(&format!("{n}={}", vals.join(",")))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(xerr)
}

/// `pimkit xbar cost --sweep NAME=V1,.. --json`: the design-space sweep (table counts).
#[pyfunction]
#[pyo3(signature = (model, axes, components="isaac".to_string(), arch=None, xbar=None,
    depthwise=None, mode=None, seed=None, no_dup=false, budget=None, crossbars=None, sdw=None,
    out=None))]
pub fn xbar_cost_sweep(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    axes: Vec<(String, Vec<u64>)>,
    components: String,
    arch: Option<PathBuf>,
    xbar: Option<usize>,
    depthwise: Option<String>,
    mode: Option<String>,
    seed: Option<u64>,
    no_dup: bool,
    budget: Option<f64>,
    crossbars: Option<usize>,
    sdw: Option<usize>,
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
        let axes = axes_of(&axes)?;
        let (arch, opts) = cost_setup(&c, &components, budget, crossbars, sdw, m.label())?;
        let g = m.static_graph(SHAPES_ONLY)?;
        let s = pimkit_xbar::cost::sweep::sweep(&g, &arch, &opts, &axes).map_err(xerr)?;
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
            s.write_dir(dir)
                .map_err(|e| user(format!("out {}: {e}", dir.display())))?;
        }
        serde_json::to_string(&s).map_err(|e| bug(e.to_string()))
    })
}

/// Join design-sweep parts run apart (one point each, in grid order) into the sweep over
/// `axes`, marking the front over all points; writes the CLI's files to `out` when given.
#[pyfunction]
#[pyo3(signature = (axes, parts, out=None))]
pub fn xbar_cost_sweep_merge(
    py: Python<'_>,
    axes: Vec<(String, Vec<u64>)>,
    parts: Vec<String>,
    out: Option<PathBuf>,
) -> PyResult<String> {
    detached(py, || {
        let axes = axes_of(&axes)?;
        let parts = parts
            .iter()
            .map(|p| serde_json::from_str(p).map_err(|e| user(format!("parts: {e}"))))
            .collect::<Result<Vec<pimkit_xbar::cost::sweep::CostSweep>, _>>()?;
        let s = pimkit_xbar::cost::sweep::merge(axes, parts).map_err(xerr)?;
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
            s.write_dir(dir)
                .map_err(|e| user(format!("out {}: {e}", dir.display())))?;
        }
        serde_json::to_string(&s).map_err(|e| bug(e.to_string()))
    })
}
