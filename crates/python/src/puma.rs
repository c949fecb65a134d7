//! `pimkit.puma.compile/sim/run` (PUMA). Mirrors crates/cli/src/cmd/puma.rs.

use crate::common::{arch_name, out_dir, result};
use crate::errors::{detached, user};
use crate::model::ModelArg;
use crate::progress::PyProgress;
use crate::tensor::{from_numpy, to_numpy};
use pimkit_engine::Engine;
use pimkit_engine::EngineError;
use pimkit_ir::{Graph, Tensor};
use pimkit_puma::{
    Arch, CompileOptions, NumMode, PerLayer, Puma, PumaOptions, PumaOutput, SimOptions, tool,
};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::path::PathBuf;

fn load_arch(file: Option<&PathBuf>, constants: Option<&str>) -> Result<Arch, EngineError> {
    let mut a: Arch = pimkit_engine::arch::load(file.map(PathBuf::as_path))?;
    if let Some(c) = constants {
        a.constants = match c {
            "head" => pimkit_puma::arch::ConstSet::Head,
            "paper" => pimkit_puma::arch::ConstSet::Paper,
            _ => return Err(user(format!("constants must be head or paper, not '{c}'"))),
        };
    }
    Ok(a)
}

/// The CLI's compile options.
struct Compile {
    no_loops: bool,
    fixed: String,
    calibrate: Vec<HashMap<String, Tensor>>,
    replicate: Option<String>,
    budget: Option<String>,
    depthwise: String,
}

impl Compile {
    fn options(&self) -> Result<CompileOptions, EngineError> {
        let mut o = CompileOptions {
            loops: !self.no_loops,
            fixed: tool::parse_fixed(&self.fixed).map_err(user)?,
            depthwise: tool::parse_depthwise(&self.depthwise).map_err(user)?,
            ..Default::default()
        };
        if let Some(r) = &self.replicate {
            o.replicate = tool::parse_replicate(r, self.budget.as_deref()).map_err(user)?;
        } else if self.budget.is_some() {
            return Err(user("budget applies to replicate='auto'"));
        }
        o.calibration = self.calibrate.clone();
        Ok(o)
    }
}

fn tensors(d: Option<&Bound<'_, PyDict>>) -> PyResult<Option<HashMap<String, Tensor>>> {
    let Some(d) = d else { return Ok(None) };
    let mut m = HashMap::new();
    for (k, v) in d.iter() {
        m.insert(k.extract::<String>()?, from_numpy(&v)?);
    }
    Ok(Some(m))
}

fn check_inputs(g: &Graph, m: &HashMap<String, Tensor>) -> Result<(), EngineError> {
    let names: Vec<&str> = g.inputs.iter().map(|&v| g.value(v).name.as_str()).collect();
    for k in m.keys() {
        if !names.contains(&k.as_str()) {
            return Err(user(format!(
                "inputs: the model has no input '{k}' (inputs: {})",
                names.join(", ")
            )));
        }
    }
    if let Some(n) = names.iter().find(|n| !m.contains_key(**n)) {
        return Err(user(format!("inputs: input '{n}' is missing")));
    }
    Ok(())
}

fn sim_options(
    bitserial: bool,
    max_cycles: u64,
    tolerance: f64,
    nonideal: Option<String>,
) -> Result<SimOptions, EngineError> {
    if !(tolerance.is_finite() && tolerance >= 0.0) {
        return Err(user(format!(
            "tolerance must be a non-negative number, not {tolerance}"
        )));
    }
    let ni = match nonideal {
        None => None,
        Some(path) => {
            let text = if path.is_empty() {
                None
            } else {
                Some(
                    std::fs::read_to_string(&path)
                        .map_err(|e| user(format!("nonideal {path}: {e}")))?,
                )
            };
            let (analog, device) = pimkit_analog::mvmu::read_sections(text.as_deref())
                .map_err(|e| user(format!("nonideal {path}: {e}")))?;
            Some(pimkit_analog::mvmu::NonIdeal {
                analog,
                device,
                seed: 0,
            })
        }
    };
    Ok(SimOptions {
        mode: if bitserial {
            NumMode::BitSerial
        } else {
            NumMode::Exact
        },
        max_cycles,
        tolerance,
        nonideal: ni,
        ..Default::default()
    })
}

fn outputs<'py>(
    py: Python<'py>,
    names: &[String],
    outs: Vec<Tensor>,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (n, t) in names.iter().zip(outs) {
        d.set_item(n, to_numpy(py, t))?;
    }
    Ok(d)
}

/// `pimkit puma compile`: the program directory; returns the placement summary.
#[pyfunction]
#[pyo3(signature = (model, out, arch=None, constants=None, no_loops=false, fixed="auto",
    calibrate=None, replicate=None, budget=None, depthwise="blockdiag"))]
pub fn puma_compile(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    out: PathBuf,
    arch: Option<PathBuf>,
    constants: Option<String>,
    no_loops: bool,
    fixed: &str,
    calibrate: Option<Vec<Bound<'_, PyDict>>>,
    replicate: Option<String>,
    budget: Option<String>,
    depthwise: &str,
) -> PyResult<String> {
    let m = ModelArg::extract(model)?;
    let mut cal = vec![];
    for d in calibrate.unwrap_or_default() {
        cal.extend(tensors(Some(&d))?);
    }
    let c = Compile {
        no_loops,
        fixed: fixed.into(),
        calibrate: cal,
        replicate,
        budget,
        depthwise: depthwise.into(),
    };
    detached(py, || {
        out_dir(&out, "out")?;
        let g = m.static_graph(&[])?;
        let a = load_arch(arch.as_ref(), constants.as_deref())?;
        let opts = c.options()?;
        let p = tool::compile_to_dir(&g, &a, &opts, &out).map_err(user)?;
        Ok(p.placement_summary())
    })
}

/// `pimkit puma sim --json`: (JSON, outputs).
#[pyfunction]
#[pyo3(signature = (dir, inputs=None, bitserial=false, max_cycles=pimkit_puma::sim::DEFAULT_MAX_CYCLES,
    nonideal=None, tolerance=pimkit_puma::DEFAULT_TOLERANCE))]
pub fn puma_sim<'py>(
    py: Python<'py>,
    dir: PathBuf,
    inputs: Option<Vec<PathBuf>>,
    bitserial: bool,
    max_cycles: u64,
    nonideal: Option<String>,
    tolerance: f64,
) -> PyResult<(String, Bound<'py, PyDict>)> {
    let (json, names, outs) = detached(py, || {
        let so = sim_options(bitserial, max_cycles, tolerance, nonideal)?;
        let (res, outs, p) = tool::sim_dir(&dir, &inputs.unwrap_or_default(), &so).map_err(user)?;
        let names: Vec<String> = p.outputs.iter().map(|o| o.name.clone()).collect();
        let arch = dir.display().to_string();
        Ok((
            result("puma", &res.model.clone(), &arch, &res)?,
            names,
            outs,
        ))
    })?;
    Ok((json, outputs(py, &names, outs)?))
}

/// `pimkit puma run --json`: (JSON, outputs; empty for per_layer).
#[pyfunction]
#[pyo3(signature = (model, inputs=None, arch=None, constants=None, no_loops=false,
    fixed="auto", calibrate=None, replicate=None, budget=None, depthwise="blockdiag",
    bitserial=false, max_cycles=pimkit_puma::sim::DEFAULT_MAX_CYCLES,
    tolerance=pimkit_puma::DEFAULT_TOLERANCE, per_layer=false, nonideal=None, progress=None))]
pub fn puma_run<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    inputs: Option<Bound<'py, PyDict>>,
    arch: Option<PathBuf>,
    constants: Option<String>,
    no_loops: bool,
    fixed: &str,
    calibrate: Option<Vec<Bound<'py, PyDict>>>,
    replicate: Option<String>,
    budget: Option<String>,
    depthwise: &str,
    bitserial: bool,
    max_cycles: u64,
    tolerance: f64,
    per_layer: bool,
    nonideal: Option<String>,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, Bound<'py, PyDict>)> {
    let m = ModelArg::extract(model)?;
    let ins = tensors(inputs.as_ref())?;
    let mut cal = vec![];
    for d in calibrate.unwrap_or_default() {
        cal.extend(tensors(Some(&d))?);
    }
    let c = Compile {
        no_loops,
        fixed: fixed.into(),
        calibrate: cal,
        replicate,
        budget,
        depthwise: depthwise.into(),
    };
    let mut prog = PyProgress::new(progress);
    let r = detached(py, || {
        let g = m.static_graph(&[])?;
        if let Some(i) = &ins {
            check_inputs(&g, i)?;
        }
        let a = load_arch(arch.as_ref(), constants.as_deref())?;
        let an = arch_name::<Arch>(arch.as_deref());
        let popts = PumaOptions {
            compile: c.options()?,
            sim: sim_options(bitserial, max_cycles, tolerance, nonideal)?,
            inputs: ins,
            per_layer: if per_layer {
                PerLayer::Always
            } else {
                PerLayer::Never
            },
        };
        let r = Puma::run(&g, &a, &popts, &mut |i: usize, n: usize, w: &str| {
            prog.step(i, n, w)
        })?;
        let json = result("puma", &m.name(), &an, &r)?;
        Ok(match r {
            PumaOutput::Whole {
                outputs, program, ..
            } => {
                let names = program.outputs.iter().map(|o| o.name.clone()).collect();
                (json, names, outputs)
            }
            PumaOutput::PerLayer(_) => (json, vec![], vec![]),
        })
    });
    let (json, names, outs) = prog.finish(r)?;
    Ok((json, outputs(py, &names, outs)?))
}
