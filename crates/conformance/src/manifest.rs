//! The per-suite `manifest.toml` written by the generators in `tools/`.

use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::Path;

/// What the harness expects of a case.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Status {
    /// Must run and match the golden outputs.
    Pass,
    /// Known not to work yet; must still fail, so the manifest stays honest.
    KnownFail,
    /// Out of scope (dtype pimkit lacks, training mode, ...); no data was copied.
    Skipped,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseEntry {
    pub status: Status,
    /// Why a case is known-fail or skipped.
    pub reason: Option<String>,
    pub desc: Option<String>,
    /// ort-models: true = bit-exact, false = quantized with float islands (use `atol`).
    pub exact: Option<bool>,
    pub atol: Option<f64>,
    pub rtol: Option<f64>,
    pub opset: Option<i64>,
    #[serde(default)]
    pub ops: Vec<String>,
    /// onnx-node: graph inputs turned into initializers (constant operands).
    #[serde(default)]
    pub frozen: Vec<String>,
    /// onnx-node: training-only outputs removed from the model.
    #[serde(default)]
    pub trimmed: Vec<String>,
    /// onnx-node: the case whose `.npy` files this case shares (its directory holds only
    /// model.onnx; the `_expanded` twins have their base case's data).
    pub data: Option<String>,
    /// onnx-node: also run the case with every graph input bound as a constant
    /// (`LoadOptions::bind`), which must pass: ops whose output size depends on their data
    /// work on constants only, and fold at import.
    #[serde(default)]
    pub bound: bool,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub case: BTreeMap<String, CaseEntry>,
}

impl Manifest {
    pub fn load(path: &Path) -> Result<Manifest, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| format!("{}: {e} (run the generator in tools/)", path.display()))?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}
