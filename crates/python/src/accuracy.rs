//! `pimkit.xbar.accuracy`: crossbar non-idealities on a model's outputs (the CLI's
//! `xbar accuracy`, through the accuracy engine's `Engine::run`).

use crate::common::{arch_name, out_dir};
use crate::errors::{detached, input_err, user};
use crate::model::ModelArg;
use crate::progress::PyProgress;
use crate::tensor::from_numpy;
use pimkit_engine::Engine;
use pimkit_xbar::Arch;
use pimkit_xbar::accuracy::{self, Accuracy, AccuracyRun, AccuracySettings, InputSource};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use std::collections::HashMap;
use std::path::PathBuf;

/// `inputs=`: a directory of .npy files, or a list of `{input name: array}` dicts.
pub(crate) fn input_source(
    obj: Option<&Bound<'_, PyAny>>,
    random: Option<usize>,
) -> PyResult<InputSource> {
    let Some(obj) = obj else {
        return Ok(InputSource::Random {
            n: random.unwrap_or(1),
            seed: 0,
        });
    };
    if random.is_some() {
        return Err(input_err("give either inputs or random, not both"));
    }
    if let Ok(list) = obj.cast::<PyList>() {
        let mut sets = Vec::with_capacity(list.len());
        for item in list.iter() {
            let d = item
                .cast::<PyDict>()
                .map_err(|_| input_err("inputs: a list of {input name: array} dicts"))?;
            let mut set = HashMap::new();
            for (k, v) in d.iter() {
                set.insert(k.extract::<String>()?, from_numpy(&v)?);
            }
            sets.push(set);
        }
        return Ok(InputSource::Given(sets));
    }
    let dir: PathBuf = obj.extract().map_err(|_| {
        input_err("inputs: a directory of .npy files or a list of {input name: array} dicts")
    })?;
    Ok(InputSource::Dir(dir))
}

/// `pimkit xbar accuracy --json`.
#[pyfunction]
#[pyo3(signature = (model, arch=None, xbar=None, inputs=None, random=None, trials=8, seed=None,
    adc_bits=None, adc_range=None, calibrate_adc=false, variation=None, variation_model=None,
    saf=None, spare_cols=None, redundancy=None, set=None, sweep=None, labels=None, out=None,
    progress=None, components="isaac".to_string()))]
#[allow(clippy::too_many_arguments)]
pub fn xbar_accuracy(
    py: Python<'_>,
    model: &Bound<'_, PyAny>,
    arch: Option<PathBuf>,
    xbar: Option<usize>,
    inputs: Option<&Bound<'_, PyAny>>,
    random: Option<usize>,
    trials: usize,
    seed: Option<u64>,
    adc_bits: Option<u32>,
    adc_range: Option<String>,
    calibrate_adc: bool,
    variation: Option<f64>,
    variation_model: Option<String>,
    saf: Option<(f64, f64)>,
    spare_cols: Option<usize>,
    redundancy: Option<usize>,
    set: Option<Vec<(String, f64)>>,
    sweep: Option<Vec<(String, Vec<f64>)>>,
    labels: Option<Vec<usize>>,
    out: Option<PathBuf>,
    progress: Option<Py<PyAny>>,
    components: Option<String>,
) -> PyResult<String> {
    let m = ModelArg::extract(model)?;
    let source = input_source(inputs, random)?;
    let mut prog = PyProgress::new(progress);
    let r = detached(py, || {
        let a =
            Arch::load_sized(arch.as_deref(), xbar).map_err(pimkit_xbar::engine::engine_error)?;
        let settings = AccuracySettings {
            trials,
            seed: seed.unwrap_or(a.defaults.seed),
            adc_bits,
            adc_range,
            calibrate_adc,
            variation,
            variation_model,
            saf,
            spare_cols,
            redundancy,
            set: set.unwrap_or_default(),
            sweep: sweep.unwrap_or_default(),
            components,
        };
        let options = settings.options().map_err(user)?;
        if let Some(dir) = &out {
            out_dir(dir, "out")?;
        }
        let g = m.static_graph(&[])?;
        let run = AccuracyRun {
            label: m.label(),
            options,
            inputs: source,
            labels,
        };
        let res = Accuracy::run(&g, &a, &run, &mut |d: usize, t: usize, w: &str| {
            prog.step(d, t, w)
        })?;
        // One JSON value for the return and the file (a text round trip may move a
        // float by an ulp: serde_json parses without exact rounding).
        let v = pimkit_engine::result_json(
            Accuracy::NAME,
            &m.name(),
            &arch_name::<Arch>(arch.as_deref()),
            &res,
        );
        if let Some(dir) = &out {
            accuracy::write_outputs(dir, &v, &res)
                .map_err(|e| user(format!("out {}: {e}", dir.display())))?;
        }
        let text = crate::common::json(&v)?;
        Ok(text)
    });
    prog.finish(r)
}
