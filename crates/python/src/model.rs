//! `pimkit.load` and `Model`: a graph in pimkit's IR loaded from an ONNX file, ONNX bytes
//! or the zoo, with its facts (`info`), the reference interpreter (`run`) and the ONNX
//! exporter (`export`). The loading rules are the CLI's (crates/cli/src/model.rs).

use crate::errors::{detached, input_err, user};
use crate::tensor::{from_numpy, to_numpy};
use pimkit_driver::info::info;
use pimkit_engine::EngineError;
use pimkit_ir::{Graph, Tensor};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// A model loaded by `pimkit.load`.
#[pyclass(module = "pimkit", name = "Model", frozen)]
pub struct Model {
    pub g: Arc<Graph>,
    /// File-name-friendly name (the CLI's model label; the `model` field of results).
    pub label: String,
    /// Import notes (symbolic dims set, ops folded...), the CLI's `note:` lines.
    pub notes: Vec<String>,
    /// The path or zoo spec it was loaded from (the `model` of results, as the CLI's).
    pub source: Option<String>,
}

pub use pimkit_driver::model_label;

/// How an ONNX file's open ends are fixed (the CLI's --dim, --shape, --bind).
#[derive(Default)]
pub struct LoadArgs {
    pub dims: HashMap<String, usize>,
    pub shapes: HashMap<String, Vec<usize>>,
    pub bind: HashMap<String, Tensor>,
    /// Keep QDQ groups in float (the CLI's --qdq-float).
    pub qdq_float: bool,
}

impl LoadArgs {
    pub fn options(&self) -> pimkit_onnx::LoadOptions {
        let mut o = pimkit_onnx::LoadOptions {
            qdq_float: self.qdq_float,
            ..Default::default()
        };
        o.dims
            .extend(self.dims.iter().map(|(k, v)| (k.clone(), *v)));
        o.input_shapes
            .extend(self.shapes.iter().map(|(k, v)| (k.clone(), v.clone())));
        o.bind
            .extend(self.bind.iter().map(|(k, v)| (k.clone(), v.clone())));
        o
    }
}

/// Load a spec (`path.onnx` or `zoo:NAME?k=v`) as the CLI does (pimkit-driver's
/// `load`); `extra` adds zoo parameters (`weights=none` for the engines that need only
/// shapes).
pub fn load_spec(
    spec: &str,
    extra: &[(&str, &str)],
    a: &LoadArgs,
    notes: &mut Vec<String>,
) -> Result<Graph, EngineError> {
    let extra: Vec<(String, String)> = extra
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    pimkit_driver::load(spec, &extra, &a.options(), notes).map_err(EngineError::from)
}

/// What an engine function was given as its model: a `Model` or a spec string.
pub enum ModelArg {
    /// The graph, its label and the spec it was loaded from.
    Loaded(Arc<Graph>, String, Option<String>),
    Spec(String),
}

impl ModelArg {
    pub fn extract(obj: &Bound<'_, PyAny>) -> PyResult<ModelArg> {
        if let Ok(m) = obj.cast::<Model>() {
            let m = m.get();
            return Ok(ModelArg::Loaded(
                m.g.clone(),
                m.label.clone(),
                m.source.clone(),
            ));
        }
        if let Ok(s) = obj.extract::<PathBuf>() {
            return Ok(ModelArg::Spec(s.to_string_lossy().into_owned()));
        }
        Err(input_err(format!(
            "model: expected a pimkit.Model, a path or 'zoo:NAME', not {}",
            obj.get_type()
        )))
    }

    pub fn label(&self) -> String {
        match self {
            ModelArg::Loaded(_, l, _) => l.clone(),
            ModelArg::Spec(s) => model_label(s),
        }
    }

    /// The model's name in results: the spec as given (as the CLI), else the label.
    pub fn name(&self) -> String {
        match self {
            ModelArg::Spec(s) | ModelArg::Loaded(_, _, Some(s)) => s.clone(),
            ModelArg::Loaded(_, l, None) => l.clone(),
        }
    }

    pub fn spec(&self) -> Option<&str> {
        match self {
            ModelArg::Spec(s) => Some(s),
            ModelArg::Loaded(_, _, s) => s.as_deref(),
        }
    }

    /// The graph (a spec is loaded with `extra` zoo parameters), control flow flattened:
    /// the engines map a fixed dataflow graph.
    pub fn static_graph(&self, extra: &[(&str, &str)]) -> Result<Arc<Graph>, EngineError> {
        let (g, name) = match self {
            ModelArg::Loaded(g, l, _) => (g.as_ref().clone(), l.clone()),
            ModelArg::Spec(s) => (
                load_spec(s, extra, &LoadArgs::default(), &mut Vec::new())?,
                s.clone(),
            ),
        };
        pimkit_ir::into_static(g)
            .map(Arc::new)
            .map_err(|e| user(format!("{name}: {e}")))
    }
}

#[pymethods]
impl Model {
    /// The graph's name.
    #[getter]
    fn name(&self) -> String {
        self.g.name.clone()
    }

    /// The short name results carry in their `model` field.
    #[getter]
    fn label(&self) -> String {
        self.label.clone()
    }

    /// Notes from the import (the CLI prints them as `note:` lines).
    #[getter]
    fn notes(&self) -> Vec<String> {
        self.notes.clone()
    }

    /// Inputs, outputs, op counts, parameters and MACs: the dict of `pimkit info --json`.
    ///
    /// >>> pimkit.load("zoo:lenet5").info()["macs"]
    fn info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        let s = serde_json::to_string(&info(&self.g))
            .map_err(|e| crate::errors::InternalError::new_err(e.to_string()))?;
        py.import("json")?.call_method1("loads", (s,))
    }

    /// Run the reference interpreter: `{input name: ndarray}` -> `{output name: ndarray}`.
    #[pyo3(signature = (inputs, progress=None))]
    fn run<'py>(
        &self,
        py: Python<'py>,
        inputs: &Bound<'py, PyDict>,
        progress: Option<Py<PyAny>>,
    ) -> PyResult<Bound<'py, PyDict>> {
        let g = &self.g;
        let mut given = HashMap::new();
        let names: Vec<String> = g.inputs.iter().map(|&v| g.value(v).name.clone()).collect();
        for (k, v) in inputs.iter() {
            let name: String = k.extract()?;
            let Some(&id) = g.inputs.iter().find(|&&v| g.value(v).name == name) else {
                return Err(input_err(format!(
                    "inputs: the model has no input '{name}' (inputs: {})",
                    names.join(", ")
                )));
            };
            let t = from_numpy(&v)?;
            let want = g.ty(id).dtype;
            // numpy's default float64 for a float input: converted, as the CLI does.
            let (t, _) = t.float64_as(want);
            given.insert(name, t);
        }
        let missing: Vec<String> = g
            .inputs
            .iter()
            .filter(|&&v| !given.contains_key(&g.value(v).name))
            .map(|&v| format!("{} ({})", g.value(v).name, g.ty(v)))
            .collect();
        if !missing.is_empty() {
            return Err(input_err(format!(
                "missing input(s): {}; pass each in the inputs dict",
                missing.join(", ")
            )));
        }
        let mut prog = crate::progress::PyProgress::new(progress);
        let n = g.nodes.len();
        let r = detached(py, || {
            let mut done = 0usize;
            pimkit_interp::run_observed(g, &given, &mut |id, _| {
                done += 1;
                prog.step(done, n, &g.nodes[id.0 as usize].name);
            })
            .map_err(user)
        });
        let outs = prog.finish(r)?;
        let d = PyDict::new(py);
        for (&o, t) in g.outputs.iter().zip(outs) {
            d.set_item(&g.value(o).name, to_numpy(py, t))?;
        }
        Ok(d)
    }

    /// Write the model as an ONNX file that onnxruntime loads.
    fn export(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        let g = &self.g;
        detached(py, || {
            pimkit_onnx::save(g, &path).map_err(|e| user(format!("{}: {e}", path.display())))
        })
    }

    /// The model as ONNX bytes.
    fn to_bytes<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyBytes>> {
        let g = &self.g;
        let b = detached(py, || pimkit_onnx::export(g).map_err(user))?;
        Ok(PyBytes::new(py, &b))
    }

    /// Pickles as its ONNX bytes (work items shipped to other processes or Ray workers).
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
        let f = py.import("pimkit._native")?.getattr("load")?;
        let b = self.to_bytes(py)?;
        let none = py.None();
        let args = (
            b,
            none.clone_ref(py),
            none.clone_ref(py),
            none,
            self.label.clone(),
        );
        Ok((f, args.into_pyobject(py)?.into_any()))
    }

    fn __repr__(&self) -> String {
        format!(
            "<pimkit.Model {} ({} nodes, {} inputs, {} outputs)>",
            self.label,
            self.g.nodes.len(),
            self.g.inputs.len(),
            self.g.outputs.len()
        )
    }
}

/// `pimkit.load` (the Python layer turns paths, `onnx.ModelProto` and scalars into what
/// this takes: a str spec or bytes, and numpy arrays for `bind`).
#[pyfunction]
#[pyo3(signature = (src, dims=None, shapes=None, bind=None, label=None, qdq_float=false))]
pub fn load(
    py: Python<'_>,
    src: &Bound<'_, PyAny>,
    dims: Option<HashMap<String, usize>>,
    shapes: Option<HashMap<String, Vec<usize>>>,
    bind: Option<HashMap<String, Bound<'_, PyAny>>>,
    label: Option<String>,
    qdq_float: bool,
) -> PyResult<Model> {
    let mut a = LoadArgs {
        dims: dims.unwrap_or_default(),
        shapes: shapes.unwrap_or_default(),
        bind: HashMap::new(),
        qdq_float,
    };
    for (k, v) in bind.unwrap_or_default() {
        a.bind.insert(k, from_numpy(&v)?);
    }
    let mut notes = Vec::new();
    if let Ok(b) = src.cast::<PyBytes>() {
        let bytes = b.as_bytes();
        let opts = a.options();
        let g = detached(py, || {
            pimkit_onnx::load_bytes(bytes, None, &opts).map_err(user)
        })?;
        let label = label.unwrap_or_else(|| pimkit_ir::fsio::sanitize(&g.name));
        return Ok(Model {
            g: Arc::new(g),
            label,
            notes,
            source: None,
        });
    }
    let spec: String = src
        .extract::<PathBuf>()
        .map_err(|_| {
            input_err(format!(
                "src: expected a path, 'zoo:NAME?k=v', bytes or an onnx.ModelProto, not {}",
                src.get_type()
            ))
        })?
        .to_string_lossy()
        .into_owned();
    let g = detached(py, || load_spec(&spec, &[], &a, &mut notes))?;
    Ok(Model {
        g: Arc::new(g),
        label: label.unwrap_or_else(|| model_label(&spec)),
        notes,
        source: Some(spec),
    })
}
