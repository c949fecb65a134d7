//! The real-model corpus (tests/data/real-models, from tools/make_real_models.py): its
//! manifest, and one case's run through the interpreter and every engine that applies.
//!
//! Each case is a model exported by torch.onnx, onnxruntime's quantizer or shipped by the
//! ONNX package, with onnxruntime (or ONNX reference) outputs. Per engine the manifest says
//! `pass` or `known-fail` (with the reason, from tools/known_fail.toml `[real-models]`).

use crate::case::CaseError;
use crate::compare::{Tolerance, compare};
use pimkit_ir::{DType, Graph, Tensor, npy::read_npy};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// The engines a case can be run through, in table order.
/// `bind`: exec with no dims given (as `pimkit exec --input` binds them itself), only
/// for models with symbolic input dims.
pub const ENGINES: [&str; 7] = ["exec", "bind", "lower", "offload", "xbar", "puma", "vpu"];

#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CellStatus {
    Pass,
    KnownFail,
}

/// What the harness expects of one engine on one case.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cell {
    pub status: CellStatus,
    pub reason: Option<String>,
}

/// One exported model. Engines absent from the entry do not apply to it.
#[derive(Clone, Debug, Deserialize)]
pub struct RealCase {
    /// `run`, or `skipped` when the export itself failed (`export_error`; no data).
    pub status: String,
    pub desc: Option<String>,
    pub family: Option<String>,
    #[serde(default)]
    pub quantized: bool,
    #[serde(default)]
    pub exact: bool,
    pub atol: Option<f64>,
    pub rtol: Option<f64>,
    /// Not committed: the model lives in tools/out/real-models (regenerate with --big).
    #[serde(default)]
    pub big: bool,
    /// Values of the model's symbolic input dims, taken from the committed inputs.
    #[serde(default)]
    pub dims: BTreeMap<String, usize>,
    /// Some input dim is symbolic, unnamed or -1 (the `bind` cell applies).
    #[serde(default)]
    pub dynamic: bool,
    pub export_error: Option<String>,
    /// `arange`: no input files; each input is arange(n)/n in its shape, as the ONNX
    /// backend runner feeds its `light` models (Runner.generate_dummy_data).
    pub inputs: Option<String>,
    /// Engines too slow for the default run (PUMA's simulation of a 224x224 net takes
    /// minutes): their trials are #[ignore]d, run them with `--ignored`.
    #[serde(default)]
    pub slow: Vec<String>,
    pub exec: Option<Cell>,
    pub bind: Option<Cell>,
    pub lower: Option<Cell>,
    pub offload: Option<Cell>,
    pub xbar: Option<Cell>,
    pub puma: Option<Cell>,
    pub vpu: Option<Cell>,
}

impl RealCase {
    pub fn cell(&self, engine: &str) -> Option<&Cell> {
        match engine {
            "exec" => self.exec.as_ref(),
            "bind" => self.bind.as_ref(),
            "lower" => self.lower.as_ref(),
            "offload" => self.offload.as_ref(),
            "xbar" => self.xbar.as_ref(),
            "puma" => self.puma.as_ref(),
            "vpu" => self.vpu.as_ref(),
            _ => None,
        }
    }

    /// Float outputs: the manifest's atol/rtol; quantized (`exact`) and integer: bit-exact.
    pub fn tolerance(&self, dtype: DType) -> Tolerance {
        match (self.exact, Tolerance::default_for(dtype)) {
            (true, _) | (_, Tolerance::Exact) => Tolerance::Exact,
            (false, Tolerance::Close { atol, rtol }) => Tolerance::Close {
                atol: self.atol.unwrap_or(atol),
                rtol: self.rtol.unwrap_or(rtol),
            },
        }
    }

    /// Where the case's files are: committed, or tools/out/real-models for big ones.
    pub fn dir(&self, name: &str) -> PathBuf {
        if self.big {
            big_dir().join(name)
        } else {
            crate::data_dir().join("real-models").join(name)
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct RealManifest {
    #[serde(default)]
    pub provenance: BTreeMap<String, toml::Value>,
    pub case: BTreeMap<String, RealCase>,
}

impl RealManifest {
    pub fn load() -> Result<RealManifest, String> {
        let path = crate::data_dir().join("real-models/manifest.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| {
            format!(
                "{}: {e} (run python3 tools/make_real_models.py)",
                path.display()
            )
        })?;
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }
}

/// tools/out/real-models at the workspace root (big, generated, not committed).
pub fn big_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tools/out/real-models")
}

/// A case's model, inputs and expected outputs.
pub struct Loaded {
    pub graph: Graph,
    pub feeds: HashMap<String, Tensor>,
    pub inputs: Vec<Tensor>,
    pub wants: Vec<Tensor>,
}

fn numbered(dir: &Path, prefix: &str) -> Result<Vec<Tensor>, CaseError> {
    let mut out = Vec::new();
    loop {
        let p = dir.join(format!("{prefix}_{}.npy", out.len()));
        if !p.exists() {
            return Ok(out);
        }
        out.push(read_npy(&p).map_err(|e| CaseError::Data(e.to_string()))?);
    }
}

/// Import the model with the case's symbolic dims bound (as `--dim NAME=VALUE` would),
/// or with none given when `bind_dims` is false.
pub fn load_case(dir: &Path, case: &RealCase, bind_dims: bool) -> Result<Loaded, CaseError> {
    load_case_with(dir, case, bind_dims, Default::default())
}

/// Like [`load_case`], with graph inputs replaced by constants (`--bind`); the bound
/// inputs leave the feeds.
pub fn load_case_with(
    dir: &Path,
    case: &RealCase,
    bind_dims: bool,
    bind: std::collections::HashMap<String, pimkit_ir::Tensor>,
) -> Result<Loaded, CaseError> {
    let model = dir.join("model.onnx");
    if !model.exists() {
        let hint = if case.big {
            " (a big case: run python3 tools/make_real_models.py --big)"
        } else {
            ""
        };
        return Err(CaseError::Data(format!(
            "{} is missing{hint}",
            model.display()
        )));
    }
    let wants = numbered(dir, "output")?;
    // exec gives the symbolic dims by name (as `--dim`); bind gives only the inputs,
    // whose shapes pimkit must bind (as `pimkit exec --input`).
    let files = match case.inputs.as_deref() {
        Some(_) => vec![],
        None => numbered(dir, "input")?,
    };
    let mut opts = pimkit_onnx::LoadOptions {
        bind: bind.clone(),
        ..Default::default()
    };
    if bind_dims {
        opts.dims = case.dims.iter().map(|(k, &v)| (k.clone(), v)).collect();
        // Unnamed dims ("?", -1, none) have no name to give: their inputs' shapes are
        // given instead, as `--shape` would.
        for ((name, anonymous), t) in input_decls(&model)?.into_iter().zip(&files) {
            if anonymous {
                opts.input_shapes.insert(name, t.shape.clone());
            }
        }
    } else {
        for ((name, _), t) in input_decls(&model)?.into_iter().zip(&files) {
            opts.input_shapes.insert(name, t.shape.clone());
        }
    }
    let graph =
        pimkit_onnx::load_with(&model, &opts).map_err(|e| CaseError::Import(e.to_string()))?;
    let inputs = match case.inputs.as_deref() {
        Some("arange") => graph
            .inputs
            .iter()
            .map(|&id| arange_input(&graph.value(id).ty.shape))
            .collect(),
        Some(other) => return Err(CaseError::Data(format!("unknown inputs = '{other}'"))),
        // Bound inputs are constants now: feed the others, in order.
        None if !bind.is_empty() => input_names(&model)?
            .into_iter()
            .zip(files)
            .filter(|(n, _)| !bind.contains_key(n))
            .map(|(_, t)| t)
            .collect(),
        None => files,
    };
    if graph.inputs.len() != inputs.len() {
        return Err(CaseError::Import(format!(
            "graph has {} inputs but the case has {} input files",
            graph.inputs.len(),
            inputs.len()
        )));
    }
    let feeds = graph
        .inputs
        .iter()
        .map(|&id| graph.value(id).name.clone())
        .zip(inputs.iter().cloned())
        .collect();
    Ok(Loaded {
        graph,
        feeds,
        inputs,
        wants,
    })
}

/// arange(n)/n in `shape`, computed in f64 and rounded to f32 as numpy does it.
pub fn arange_input(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let v = (0..n).map(|i| (i as f64 / n as f64) as f32).collect();
    Tensor::from_f32(shape.to_vec(), v)
}

/// Compare an engine's outputs with the golden ones under the case's tolerance.
pub fn compare_outputs(
    case: &RealCase,
    g: &Graph,
    gots: &[Tensor],
    wants: &[Tensor],
) -> Result<(), CaseError> {
    if gots.len() != wants.len() {
        return Err(CaseError::Mismatch(format!(
            "{} outputs but expected {}",
            gots.len(),
            wants.len()
        )));
    }
    let errs: Vec<String> = gots
        .iter()
        .zip(wants)
        .enumerate()
        .filter_map(|(i, (got, want))| {
            compare(got, want, case.tolerance(want.dtype()))
                .err()
                .map(|e| {
                    let name = g.outputs.get(i).map(|&o| g.value(o).name.as_str());
                    format!("output {i} '{}': {e}", name.unwrap_or("?"))
                })
        })
        .collect();
    if errs.is_empty() {
        Ok(())
    } else {
        Err(CaseError::Mismatch(errs.join("\n    ")))
    }
}

/// The model's graph inputs that are not initializers, in order (read from the file, so
/// the bind cell can key the input shapes by name before pimkit imports it).
/// The model's graph inputs (initializers excluded) and whether each has a dim without a
/// name or value (paddle2onnx's "?", -1, or nothing).
fn input_decls(model: &Path) -> Result<Vec<(String, bool)>, CaseError> {
    use pimkit_onnx::proto::ModelProto;
    use pimkit_onnx::proto::tensor_shape_proto::dimension::Value;
    use pimkit_onnx::proto::type_proto;
    use prost::Message;
    let bytes = std::fs::read(model).map_err(|e| CaseError::Data(e.to_string()))?;
    let m = ModelProto::decode(bytes.as_slice()).map_err(|e| CaseError::Data(e.to_string()))?;
    let g = m.graph.unwrap_or_default();
    let inits: std::collections::HashSet<&str> = g.initializer.iter().map(|t| t.name()).collect();
    Ok(g.input
        .iter()
        .filter(|v| !inits.contains(v.name()))
        .map(|v| {
            let anonymous = match v.r#type.as_ref().and_then(|t| t.value.as_ref()) {
                Some(type_proto::Value::TensorType(tt)) => tt.shape.as_ref().is_some_and(|s| {
                    s.dim.iter().any(|d| match &d.value {
                        Some(Value::DimValue(x)) => *x < 0,
                        Some(Value::DimParam(p)) => p.is_empty() || p == "?",
                        None => true,
                    })
                }),
                _ => false,
            };
            (v.name().to_string(), anonymous)
        })
        .collect())
}

fn input_names(model: &Path) -> Result<Vec<String>, CaseError> {
    Ok(input_decls(model)?.into_iter().map(|(n, _)| n).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use pimkit_ir::TensorData;

    /// The ONNX runner divides in f64 and rounds once: 1/3 must be f32(1/3), not 1f32/3f32
    /// computed some other way, and the shape must be kept.
    #[test]
    fn arange_as_the_onnx_runner_makes_it() {
        let t = arange_input(&[1, 3]);
        assert_eq!(t.shape, vec![1, 3]);
        let TensorData::F32(v) = &t.data else {
            panic!("not f32")
        };
        assert_eq!(v, &vec![0.0, (1.0f64 / 3.0) as f32, (2.0f64 / 3.0) as f32]);
    }

    /// The committed manifest parses and every committed, runnable case has its model.
    #[test]
    fn manifest_loads_and_committed_models_exist() {
        let m = RealManifest::load().unwrap();
        assert!(m.case.len() > 50, "{} cases", m.case.len());
        for (name, c) in &m.case {
            if c.status == "run" && !c.big {
                assert!(c.dir(name).join("model.onnx").exists(), "{name}");
                assert!(c.exec.is_some(), "{name} has no exec cell");
            }
        }
    }
}
