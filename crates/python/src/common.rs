//! What every engine function shares: the one JSON layout and output folders.

use crate::errors::{bug, user};
use pimkit_engine::{ArchSpec, EngineError};
use serde::Serialize;
use std::path::Path;

/// The result as the JSON text the Python layer turns into a dict
/// (`pimkit_engine::result_json`, the layout of every engine's `--json`).
pub fn result(
    engine: &str,
    model: &str,
    arch: &str,
    out: &impl Serialize,
) -> Result<String, EngineError> {
    let v = pimkit_engine::result_json(engine, model, arch, out);
    serde_json::to_string(&v).map_err(bug)
}

/// Plain JSON (results that are not one model's engine run: sweeps of kernels, tables).
pub fn json(out: &impl Serialize) -> Result<String, EngineError> {
    serde_json::to_string(out).map_err(bug)
}

/// The architecture's name in results: the user's file, else the built-in file's path.
pub fn arch_name<A: ArchSpec>(file: Option<&Path>) -> String {
    file.map_or_else(|| A::DEFAULT_PATH.to_string(), |p| p.display().to_string())
}

/// Create an output folder (the CLI's `-o`): an existing file of that name is an error.
pub fn out_dir(dir: &Path, what: &str) -> Result<(), EngineError> {
    if dir.exists() && !dir.is_dir() {
        return Err(user(format!(
            "{what} {}: exists and is not a directory; give a folder",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir)
        .map_err(|e| user(format!("{what} {}: cannot create it ({e})", dir.display())))
}
