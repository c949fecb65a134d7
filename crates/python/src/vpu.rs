//! `pimkit.vpu.run`, `pimkit.vpu.roofline` and `pimkit.vpu.table3` (QUINN near-memory
//! vector units). Mirrors crates/cli/src/cmd/vpu.rs.

use crate::common::{arch_name, json, out_dir};
use crate::errors::{detached, user};
use crate::model::ModelArg;
use crate::progress::PyProgress;
use crate::tensor::{from_numpy, to_numpy};
use pimkit_engine::Engine;
use pimkit_engine::EngineError;
use pimkit_ir::Tensor;
use pimkit_vpu::Arch;
use pimkit_vpu::network::{Characterize, DataflowChoice, Method, NetOptions};
use pimkit_vpu::roofline::{Point, Scale, Sweep, run_sweep_with, table3};
use pimkit_vpu::{Vpu, VpuOptions};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::collections::HashMap;
use std::path::PathBuf;

fn arch_of(p: Option<&PathBuf>) -> Result<Arch, EngineError> {
    Ok(pimkit_engine::arch::load(p.map(PathBuf::as_path))?)
}

/// `pimkit vpu run --json`: (JSON, outputs). Inputs not given get the CLI's deterministic
/// random data (seed 0).
#[pyfunction]
#[pyo3(signature = (model, inputs=None, vpus=None, bandwidth=None, dataflow="auto",
    cold=false, method="pimkit", arch=None, out=None, progress=None, characterize="shape"))]
pub fn vpu_run<'py>(
    py: Python<'py>,
    model: &Bound<'py, PyAny>,
    inputs: Option<Bound<'py, PyDict>>,
    vpus: Option<usize>,
    bandwidth: Option<f64>,
    dataflow: &str,
    cold: bool,
    method: &str,
    arch: Option<PathBuf>,
    out: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
    characterize: &str,
) -> PyResult<(String, Bound<'py, PyDict>)> {
    let m = ModelArg::extract(model)?;
    let characterize_arg = characterize.to_string();
    let mut given: Vec<(String, Tensor)> = vec![];
    if let Some(d) = &inputs {
        for (k, v) in d.iter() {
            given.push((k.extract()?, from_numpy(&v)?));
        }
    }
    let (dataflow, method) = (dataflow.to_string(), method.to_string());
    let mut prog = PyProgress::new(progress);
    let r = detached(py, || {
        let mut a = arch_of(arch.as_ref())?;
        if let Some(v) = vpus {
            if !(1..=pimkit_vpu::arch::MAX_VPUS).contains(&v) {
                return Err(user(format!(
                    "vpus {v}: use 1..={} (the paper evaluates 1, 2 and 4)",
                    pimkit_vpu::arch::MAX_VPUS
                )));
            }
            a.vpus = v;
        }
        if let Some(b) = bandwidth {
            pimkit_vpu::arch::check_bandwidth(b).map_err(|e| user(format!("bandwidth {e}")))?;
            a.memory.bandwidth = b;
        }
        a.validate().map_err(user)?;
        let df = DataflowChoice::parse(&dataflow).ok_or_else(|| {
            user(format!(
                "dataflow {dataflow}: use auto, family, os, is or ws"
            ))
        })?;
        let characterize = Characterize::parse(&characterize_arg).ok_or_else(|| {
            user(format!(
                "characterize {characterize_arg}: use shape or layer"
            ))
        })?;
        let method = Method::parse(&method)
            .ok_or_else(|| user(format!("method {method}: use pimkit or paper")))?;
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
        }
        let g = m.static_graph(&[])?;
        let mut ins: HashMap<String, Tensor> = HashMap::new();
        for (name, t) in given {
            let Some(&id) = g.inputs.iter().find(|&&v| g.value(v).name == name) else {
                return Err(user(format!("inputs: the model has no input '{name}'")));
            };
            let want = g.ty(id).dtype;
            let (t, _) = t.float64_as(want);
            ins.insert(name, t);
        }
        pimkit_interp::check_memory(&g).map_err(user)?;
        for (k, v) in pimkit_interp::random_inputs(&g, 0) {
            ins.entry(k).or_insert(v);
        }
        let n = g.nodes.len();
        let vo = VpuOptions {
            net: NetOptions {
                dataflow: df,
                cold_layers: cold,
                method,
                characterize,
            },
            inputs: Some(ins),
            quantize_float: false,
        };
        let full = Vpu::run(&g, &a, &vo, &mut |i: usize, _: usize, name: &str| {
            prog.step(i, n, name)
        })?;
        let v = pimkit_engine::result_json(
            "vpu",
            &m.name(),
            &arch_name::<Arch>(arch.as_deref()),
            &full,
        );
        let json_text = crate::common::json(&v)?;
        let r = full.result;
        let names: Vec<String> = g.outputs.iter().map(|&o| g.value(o).name.clone()).collect();
        if let Some(dir) = &out {
            // The CLI's names: <sanitized output name>.npy, collisions made distinct.
            let stems = pimkit_ir::fsio::output_file_stems(&names);
            for (stem, t) in stems.iter().zip(&r.outputs) {
                pimkit_ir::npy::write_npy(&dir.join(format!("{stem}.npy")), t).map_err(user)?;
            }
            pimkit_vpu::report::write_run_dir(dir, &v, &r)
                .map_err(|e| user(format!("out {}: {e}", dir.display())))?;
        }
        Ok((json_text, names, r.outputs))
    });
    let (j, names, outs) = prog.finish(r)?;
    let d = PyDict::new(py);
    for (n, t) in names.iter().zip(outs) {
        d.set_item(n, to_numpy(py, t))?;
    }
    Ok((j, d))
}

fn sweeps(kernels: Option<Vec<String>>) -> Result<Vec<Sweep>, EngineError> {
    match kernels {
        None => Ok(Sweep::ALL.to_vec()),
        Some(k) if k.is_empty() => Ok(Sweep::ALL.to_vec()),
        Some(k) => k.iter().map(|k| Sweep::parse(k).map_err(user)).collect(),
    }
}

fn point_label(p: &Point) -> String {
    if p.label.starts_with(&p.kernel) {
        format!("{} {}", p.label, p.dataflow)
    } else {
        format!("{} {} {}", p.kernel, p.label, p.dataflow)
    }
}

/// `pimkit vpu roofline --json`: every sweep point (CSV + SVG per sweep under `out`).
#[pyfunction]
#[pyo3(signature = (out, kernels=None, quick=false, arch=None, progress=None))]
pub fn vpu_roofline(
    py: Python<'_>,
    out: PathBuf,
    kernels: Option<Vec<String>>,
    quick: bool,
    arch: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let mut prog = PyProgress::new(progress);
    let r = detached(py, || {
        let a = arch_of(arch.as_ref())?;
        out_dir(&out, "out")?;
        let mut pts = vec![];
        let mut done = 0;
        for s in sweeps(kernels)? {
            let got = run_sweep_with(&a, s, Scale { quick }, &mut |p| {
                done += 1;
                prog.step(done, 0, &point_label(p))
            });
            pts.extend(got.map_err(user)?);
        }
        pimkit_vpu::report::write_roofline_dir(&pts, &out)
            .map_err(|e| user(format!("out: {e}")))?;
        json(&pts)
    });
    prog.finish(r)
}

/// `pimkit vpu table3 --json`.
#[pyfunction]
#[pyo3(signature = (quick=false, arch=None, progress=None))]
pub fn vpu_table3(
    py: Python<'_>,
    quick: bool,
    arch: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
) -> PyResult<String> {
    let mut prog = PyProgress::new(progress);
    let r = detached(py, || {
        let a = arch_of(arch.as_ref())?;
        let mut done = 0;
        let pts = run_sweep_with(&a, Sweep::Simd, Scale { quick }, &mut |p| {
            done += 1;
            prog.step(done, 0, &point_label(p))
        })
        .map_err(user)?;
        json(&table3(&pts))
    });
    prog.finish(r)
}
