//! MODEL arguments: a path to an `.onnx` file or `zoo:NAME[?k=v&...]`.

use crate::error::user;
use pimkit_ir::Graph;
use std::path::Path;

/// Load a model spec into a verified graph. Every failure is the user's to fix.
pub fn load_model(spec: &str) -> anyhow::Result<Graph> {
    load_model_with(spec, &[])
}

/// Like [`load_model`], with extra zoo parameters (ignored for files).
pub fn load_model_with(spec: &str, extra: &[(String, String)]) -> anyhow::Result<Graph> {
    if let Some(rest) = spec.strip_prefix("zoo:") {
        let (name, mut params) = pimkit_zoo::parse_spec(rest).map_err(user)?;
        params.extend(extra.iter().cloned());
        return pimkit_zoo::build(&name, &params).map_err(user);
    }
    let path = Path::new(spec);
    if !path.exists() {
        return Err(user(format!(
            "model '{spec}' not found: give a path to an .onnx file or zoo:NAME (see `pimkit zoo list`)"
        )));
    }
    pimkit_onnx::load(path).map_err(user)
}

/// A short, file-name-friendly name for a model spec.
pub fn model_label(spec: &str) -> String {
    let base = spec.strip_prefix("zoo:").unwrap_or(spec);
    let base = Path::new(base)
        .file_stem()
        .map(|s| s.to_string_lossy().to_string())
        .unwrap_or_else(|| base.to_string());
    sanitize(&base)
}

/// Characters other than [A-Za-z0-9_.-] become '_' (output file names).
pub fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect()
}
