//! A model as the user names it: a path to an `.onnx` file or `zoo:NAME[?k=v&...]`, with
//! the load options that fix what a file leaves open (symbolic dims, input shapes, inputs
//! bound to constants).

use pimkit_engine::EngineError;
use pimkit_ir::Graph;
use pimkit_onnx::{LoadOptions, OnnxError};
use std::fmt;
use std::path::Path;

/// Why a model could not be loaded.
#[derive(Debug)]
pub enum LoadError {
    /// The data given for `input` does not fit the model; the front end names where that
    /// data came from (a `.npy` file, an array argument).
    InputShape { input: String, msg: String },
    /// Anything else, with whose fault it is.
    Other(EngineError),
}

impl fmt::Display for LoadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoadError::InputShape { input, msg } => write!(f, "input '{input}': {msg}"),
            LoadError::Other(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for LoadError {}

impl From<LoadError> for EngineError {
    fn from(e: LoadError) -> Self {
        match e {
            LoadError::InputShape { .. } => EngineError::input(e),
            LoadError::Other(e) => e,
        }
    }
}

impl From<EngineError> for LoadError {
    fn from(e: EngineError) -> Self {
        LoadError::Other(e)
    }
}

fn input(msg: impl fmt::Display) -> LoadError {
    LoadError::Other(EngineError::input(msg))
}

/// `msg` with the file it is about in front, unless it names it already.
pub fn in_file(file: &str, msg: &str) -> String {
    if msg.starts_with(file) {
        msg.to_string()
    } else {
        format!("{file}: {msg}")
    }
}

/// True when `o` fixes nothing (the defaults).
fn is_empty(o: &LoadOptions) -> bool {
    o.dims.is_empty() && o.input_shapes.is_empty() && o.bind.is_empty()
}

/// Load `spec`. `extra` adds zoo parameters (ignored for files: `weights=none` for what
/// needs only shapes). The importer's notes (dims set, nodes folded) are pushed on `notes`,
/// also when the import fails (a dim set to 1 may explain the error).
pub fn load(
    spec: &str,
    extra: &[(String, String)],
    opts: &LoadOptions,
    notes: &mut Vec<String>,
) -> Result<Graph, LoadError> {
    if let Some(rest) = spec.strip_prefix("zoo:") {
        if !is_empty(opts) {
            return Err(input(format!(
                "{spec}: dims, shapes and bindings (--dim, --shape, --bind) apply to .onnx files; \
                 zoo models take parameters: zoo:NAME?k=v (see `pimkit zoo list`)"
            )));
        }
        let (name, mut params) = pimkit_zoo::parse_spec(rest).map_err(input)?;
        params.extend(extra.iter().cloned());
        return pimkit_zoo::build(&name, &params).map_err(input);
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(input(format!(
            "{spec}: no such file; give a path to an .onnx file or zoo:NAME (see `pimkit zoo list`)"
        )));
    }
    pimkit_onnx::load_file_collect(path, opts, notes).map_err(|e| match e {
        OnnxError::InputShape { input, msg } => LoadError::InputShape { input, msg },
        // A panic caught in the importer is pimkit's bug, not the file's.
        OnnxError::Internal(_) => {
            LoadError::Other(EngineError::internal(in_file(spec, &e.to_string())))
        }
        _ => input(in_file(spec, &e.to_string())),
    })
}

/// [`load`] for the engines, which map a fixed dataflow graph: control flow is flattened
/// (constant Ifs inlined, static Loops and Scans unrolled); what depends on run-time values
/// is an error naming the node and the input to bind.
pub fn load_static(
    spec: &str,
    extra: &[(String, String)],
    opts: &LoadOptions,
    notes: &mut Vec<String>,
) -> Result<Graph, LoadError> {
    let g = load(spec, extra, opts, notes)?;
    pimkit_ir::into_static(g).map_err(|e| input(format!("{spec}: {e}")))
}

/// A short, file-name-friendly name for a model spec (`zoo:mlp?x=1` -> `mlp_x_1`,
/// `a/b.onnx` -> `b`): output file names and the `model` of report sections.
pub fn model_label(spec: &str) -> String {
    let base = spec.strip_prefix("zoo:").unwrap_or(spec);
    let base = Path::new(base)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| base.to_string());
    pimkit_ir::fsio::sanitize(&base)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_file_and_options_on_a_zoo_model_are_the_users() {
        let e = load("/no/such.onnx", &[], &LoadOptions::default(), &mut vec![]).unwrap_err();
        assert!(
            e.to_string().starts_with("/no/such.onnx: no such file"),
            "{e}"
        );
        let mut o = LoadOptions::default();
        o.dims.insert("batch".into(), 1);
        let e = EngineError::from(load("zoo:mlp", &[], &o, &mut vec![]).unwrap_err());
        assert!(e.is_input() && e.msg.contains("--dim"), "{e}");
    }

    #[test]
    fn zoo_parameters_add_to_the_spec() {
        let extra = [("weights".to_string(), "none".to_string())];
        let g = load("zoo:mlp", &extra, &LoadOptions::default(), &mut vec![]).unwrap();
        assert!(g.is_shape_only());
        assert_eq!(
            model_label("zoo:mlp?n=3"),
            pimkit_ir::fsio::sanitize("mlp?n=3")
        );
        assert_eq!(model_label("dir/resnet.onnx"), "resnet");
    }
}
