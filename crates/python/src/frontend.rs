//! `pimkit.quantize` and `pimkit.report`: the CLI's `quantize` (a float model to
//! onnxruntime's QOperator format) and `report` (every engine, one HTML page), through
//! the libraries the CLI uses (pimkit-zoo's quantizer, pimkit-driver's report).

use crate::errors::{detached, input_err, user};
use crate::model::{LoadArgs, Model, ModelArg};
use crate::progress::PyProgress;
use crate::tensor::from_numpy;
use pimkit_driver::report::ReportModel;
use pimkit_driver::samples::{Sample, conform_f64, read_sample_dir};
use pimkit_ir::DType;
use pimkit_zoo::quantize::{QuantOptions, quantize_calibrated};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Calibration data: a directory (the CLI's `--calib` layout) or a list of
/// `{input name: array}` dicts; `None` with `random` samples otherwise.
enum Calib {
    Dir(PathBuf),
    Given(Vec<Sample>),
    Random(usize),
}

fn calib_source(obj: Option<&Bound<'_, PyAny>>, random: Option<usize>) -> PyResult<Calib> {
    let Some(obj) = obj else {
        let n = random.unwrap_or(8);
        if !(1..=100_000).contains(&n) {
            return Err(input_err(format!("random {n}: use 1..=100000 samples")));
        }
        return Ok(Calib::Random(n));
    };
    if random.is_some() {
        return Err(input_err("give either calib or random, not both"));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        let mut sets = Vec::with_capacity(list.len());
        for item in list.iter() {
            let d = item
                .cast::<PyDict>()
                .map_err(|_| input_err("calib: a list of {input name: array} dicts"))?;
            let mut set = HashMap::new();
            for (k, v) in d.iter() {
                set.insert(k.extract::<String>()?, from_numpy(&v)?);
            }
            sets.push(set);
        }
        if sets.is_empty() {
            return Err(input_err("calib: give at least one sample"));
        }
        return Ok(Calib::Given(sets));
    }
    let dir: PathBuf = obj.extract().map_err(|_| {
        input_err("calib: a directory of .npy samples or a list of {input name: array} dicts")
    })?;
    Ok(Calib::Dir(dir))
}

/// `pimkit quantize`: the quantized model (export it with `.export(path)`).
#[pyfunction]
#[pyo3(signature = (model, calib=None, random=None, per_channel=false, act="u8", exclude=None))]
pub fn quantize(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    calib: Option<&Bound<'_, PyAny>>,
    random: Option<usize>,
    per_channel: bool,
    act: &str,
    exclude: Option<Vec<String>>,
) -> PyResult<Model> {
    let m = ModelArg::extract(model)?;
    let act = match act {
        "u8" => DType::U8,
        "i8" | "s8" => DType::I8,
        o => return Err(input_err(format!("act '{o}': use u8 or i8"))),
    };
    let source = calib_source(calib, random)?;
    let q = detached(py, || {
        let g = m.static_graph(&[])?;
        if g.is_shape_only() {
            return Err(user(
                "the model has no weight data (shape-only); quantization needs the weights",
            ));
        }
        let sets = match source {
            Calib::Dir(d) => read_sample_dir(&d, &g).map_err(|e| user(format!("calib {e}")))?,
            Calib::Given(v) => v.into_iter().map(|s| conform_f64(&g, s)).collect(),
            Calib::Random(n) => {
                pimkit_interp::check_memory(&g).map_err(user)?;
                (0..n as u64)
                    .map(|i| pimkit_interp::random_inputs(&g, i))
                    .collect()
            }
        };
        let opts = QuantOptions {
            per_channel,
            act,
            exclude: exclude.unwrap_or_default(),
        };
        quantize_calibrated(&g, &opts, &sets).map_err(user)
    })?;
    Ok(Model {
        g: Arc::new(q),
        label: format!("{}_int8", m.label()),
        notes: vec![],
        source: None,
    })
}

/// `pimkit report`: every engine on each model (the built-in set when `models` is
/// empty), written to `out_dir` (index.html, report.json, SVG/CSV files). `models` holds
/// `Model`s, paths or zoo specs. Returns the path of index.html and the import notes.
#[pyfunction]
#[pyo3(signature = (models, out_dir, progress=None))]
pub fn report(
    py: Python<'_>,
    models: Vec<Bound<'_, PyAny>>,
    out_dir: PathBuf,
    progress: Option<Py<PyAny>>,
) -> PyResult<(String, Vec<String>)> {
    let args = models
        .iter()
        .map(ModelArg::extract)
        .collect::<PyResult<Vec<_>>>()?;
    let mut prog = PyProgress::new(progress);
    let r = detached(py, || {
        pimkit_report::create_out_dir(&out_dir)
            .map_err(|e| user(format!("out_dir {}: {e}", out_dir.display())))?;
        let mut notes = vec![];
        let mut step = |d: usize, t: usize, w: &str| prog.step(d, t, w);
        let models = args
            .iter()
            .map(|a| match a {
                ModelArg::Loaded(g, _, _) => ReportModel::Loaded(a.name(), g.as_ref().clone()),
                ModelArg::Spec(s) => ReportModel::Spec(s.clone()),
            })
            .collect();
        let load_opts = LoadArgs::default().options();
        let rep = pimkit_driver::report::build_models(models, &load_opts, &mut step, &mut notes)?;
        rep.write_dir(&out_dir)
            .map_err(|e| user(format!("cannot write report to {}: {e}", out_dir.display())))?;
        Ok((out_dir.join("index.html").display().to_string(), notes))
    });
    prog.finish(r)
}
