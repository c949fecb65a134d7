//! `pimkit.lower`, `pimkit.profile` and `pimkit.offload` (Torch-PIM: loop nests, native
//! host times, the offload decision). Mirrors crates/cli/src/cmd/{lower,offload}.rs.

use crate::common::{arch_name, out_dir, result};
use crate::errors::{bug, detached, user};
use crate::model::{LoadArgs, ModelArg, load_spec};
use pimkit_engine::Engine;
use pimkit_engine::EngineError;
use pimkit_engine::{HostArch, NoProgress};
use pimkit_loops::{Loops, LoopsOptions, LowerOptions};
use pimkit_offload::{
    CounterMode, HostChoice, Offload, OffloadError, OffloadOptions, Options, PimArch, host,
};
use pyo3::prelude::*;
use std::path::PathBuf;

fn off_err(e: OffloadError) -> EngineError {
    if e.is_user() { user(e) } else { bug(e) }
}

/// The loops engine on the model: lowered, and timed natively when `profile` is given.
fn loops(
    m: &ModelArg,
    fuse: bool,
    profile: Option<pimkit_loops::ProfileOptions>,
) -> Result<String, EngineError> {
    let g = m.static_graph(&[])?;
    let opts = LoopsOptions {
        lower: LowerOptions {
            fuse_elementwise: fuse,
        },
        profile,
    };
    let out = Loops::run(&g, &HostArch {}, &opts, &mut NoProgress)?;
    result(Loops::NAME, &m.name(), "host", &out)
}

/// `pimkit lower --json`.
#[pyfunction]
#[pyo3(signature = (model, fuse=false))]
pub fn lower(py: Python<'_>, model: &Bound<'_, PyAny>, fuse: bool) -> PyResult<String> {
    let m = ModelArg::extract(model)?;
    detached(py, || loops(&m, fuse, None))
}

/// `pimkit profile --json`.
#[pyfunction]
#[pyo3(signature = (model, runs=5, warmup=1, fuse=false))]
pub fn profile(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    runs: usize,
    warmup: usize,
    fuse: bool,
) -> PyResult<String> {
    let m = ModelArg::extract(model)?;
    detached(py, || {
        if !(1..=1000).contains(&runs) || warmup > 1000 {
            return Err(user("runs must be in 1..=1000 and warmup in 0..=1000"));
        }
        let o = pimkit_loops::ProfileOptions {
            runs,
            warmup,
            ..Default::default()
        };
        loops(&m, fuse, Some(o))
    })
}

/// `pimkit offload --json`.
#[pyfunction]
#[pyo3(signature = (model, cores=None, counters="auto", runs=1, sweep=None, emit=None,
    theta=None, sigma=None, arch=None, host=None, host_fixed=false, fuse=false, progress=None))]
pub fn offload(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    cores: Option<Vec<u32>>,
    counters: &str,
    runs: usize,
    sweep: Option<(String, Vec<String>)>,
    emit: Option<PathBuf>,
    theta: Option<f64>,
    sigma: Option<f64>,
    arch: Option<PathBuf>,
    host: Option<PathBuf>,
    host_fixed: bool,
    fuse: bool,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let m = ModelArg::extract(model)?;
    let counters = counters.to_string();
    let mut prog = crate::progress::PyProgress::new(progress);
    let r = detached(py, || {
        let pim: PimArch = pimkit_engine::arch::load(arch.as_deref())?;
        let counters = match counters.as_str() {
            "auto" => CounterMode::Auto,
            "perf" => CounterMode::Perf,
            "model" => CounterMode::Model,
            c => return Err(user(format!("counters '{c}': use auto, perf or model"))),
        };
        if !(1..=1000).contains(&runs) {
            return Err(user(format!("runs {runs}: use 1..=1000")));
        }
        if theta.is_some_and(|t| !(t.is_finite() && t >= 0.0)) {
            return Err(user("theta: give a finite number >= 0 (GB/s)"));
        }
        if sigma.is_some_and(|s| !(0.0..=1.0).contains(&s)) {
            return Err(user("sigma: give a number in [0, 1]"));
        }
        let host_choice = if host_fixed {
            HostChoice::Reference
        } else {
            HostChoice::Measured(host.clone().unwrap_or_else(host::default_cache_path))
        };
        let opts = Options {
            cores: cores.clone().unwrap_or_else(|| pim.cores.clone()),
            counters,
            runs,
            theta_gbs: theta,
            sigma,
            arch: pim,
            lower: LowerOptions {
                fuse_elementwise: fuse,
            },
        };
        if opts.cores.is_empty() || opts.cores.contains(&0) {
            return Err(user("cores: core counts must be positive"));
        }
        if let Some((param, vals)) = &sweep {
            if param.is_empty() || vals.is_empty() {
                return Err(user(
                    "sweep: give (PARAM, [V1, V2, ...]) with at least one value",
                ));
            }
            if m.spec().is_none_or(|s| !s.starts_with("zoo:")) {
                return Err(user(
                    "sweep needs a 'zoo:NAME' model (it rebuilds the model per size)",
                ));
            }
        }
        let g = m.static_graph(&[])?;
        let eo = OffloadOptions {
            host: host_choice,
            options: opts.clone(),
            with_reference: false,
        };
        let out = Offload::run(&g, &opts.arch, &eo, &mut |i: usize, n: usize, w: &str| {
            prog.step(i, n, w)
        })?;
        let hostc = out.analysis.host.clone();
        let arch_label = arch_name::<PimArch>(arch.as_deref());
        let mut v = pimkit_engine::result_json("offload", &m.name(), &arch_label, &out);
        if let Some(dir) = &emit {
            out_dir(dir, "emit")?;
            let place: Vec<bool> = out.analysis.nests.iter().map(|n| n.offload).collect();
            let prog = pimkit_loops::lower_with(&g, &opts.lower)
                .map_err(pimkit_loops::engine::engine_error)?;
            let e =
                pimkit_offload::reinsert::emit_and_check(&prog, &place, dir).map_err(off_err)?;
            v["emit"] = serde_json::to_value(&e).map_err(bug)?;
        }
        if let (Some((param, vals)), Some(spec)) = (&sweep, m.spec()) {
            // The library's sweep: sizes built and compiled in parallel, timed one at a time.
            let build = |val: &str| -> Result<pimkit_loops::Program, EngineError> {
                let g = load_spec(
                    spec,
                    &[(param.as_str(), val)],
                    &LoadArgs::default(),
                    &mut vec![],
                )?;
                pimkit_loops::lower_with(&g, &opts.lower)
                    .map_err(pimkit_loops::engine::engine_error)
            };
            let runs = pimkit_offload::sweep::run_sweep(vals, build, &hostc, &opts).map_err(
                |e| match e {
                    pimkit_offload::sweep::SweepError::Build { value, error } => EngineError {
                        kind: error.kind,
                        msg: format!("sweep {param}={value}: {error}"),
                    },
                    pimkit_offload::sweep::SweepError::Offload(e) => off_err(e),
                },
            )?;
            v["sweep"] = serde_json::to_value(&runs).map_err(bug)?;
        }
        crate::common::json(&v)
    });
    prog.finish(r)
}
