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
    let loaded =
        pimkit_onnx::load_file_notes(path, &pimkit_onnx::LoadOptions::default()).map_err(user)?;
    // Import notes say where pimkit chose for the user (a symbolic dimension set to 1).
    for n in &loaded.notes {
        eprintln!("note: {spec}: {n}");
    }
    Ok(loaded.graph)
}

/// Like [`load_model`] for commands that need only shapes (`info`): a zoo model is built
/// without weight data unless the spec sets `weights` (a 16 GiB layer then costs nothing).
/// Returns the graph and whether the shapes-only build was chosen here.
pub fn load_model_shapes(spec: &str) -> anyhow::Result<(Graph, bool)> {
    if let Some(rest) = spec.strip_prefix("zoo:") {
        let (_, params) = pimkit_zoo::parse_spec(rest).map_err(user)?;
        if !params.iter().any(|(k, _)| k == "weights") {
            let g = load_model_with(spec, &[("weights".into(), "none".into())])?;
            return Ok((g, true));
        }
    }
    Ok((load_model(spec)?, false))
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
