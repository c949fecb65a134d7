//! Run one case directory: model.onnx + input_<i>.npy -> compare with output_<i>.npy.

use crate::compare::{Tolerance, compare, stored_as};
use pimkit_ir::{DType, Tensor, TensorData, minifloat, npy::read_npy};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

/// Why a case did not reproduce its golden outputs; the stage tells the lead which crate
/// to look at.
#[derive(Debug)]
pub enum CaseError {
    /// The test data itself could not be read (regenerate with tools/).
    Data(String),
    /// pimkit_onnx::load failed.
    Import(String),
    /// pimkit_interp::run failed.
    Run(String),
    /// Outputs differ from the golden ones.
    Mismatch(String),
    /// An engine (named by its crate) returned an error.
    Engine(&'static str, String),
    /// Something panicked (always a bug: pimkit must return errors).
    Panic(String),
}

impl std::fmt::Display for CaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CaseError::Data(m) => write!(f, "test data: {m}"),
            CaseError::Import(m) => write!(f, "import (pimkit-onnx): {m}"),
            CaseError::Run(m) => write!(f, "run (pimkit-interp): {m}"),
            CaseError::Mismatch(m) => write!(f, "mismatch: {m}"),
            CaseError::Engine(c, m) => write!(f, "{c}: {m}"),
            CaseError::Panic(m) => write!(f, "PANIC: {m}"),
        }
    }
}

fn read_numbered(dir: &Path, prefix: &str) -> Result<Vec<Tensor>, CaseError> {
    let mut out = Vec::new();
    loop {
        let p = dir.join(format!("{prefix}_{}.npy", out.len()));
        if !p.exists() {
            return Ok(out);
        }
        out.push(read_npy(&p).map_err(|e| CaseError::Data(e.to_string()))?);
    }
}

/// A graph input's test value in the input's dtype: bf16/float8/float4 values stored as
/// f32 and int4/int2 stored as i8/u8 are converted back (they are exact in that dtype).
fn to_input_dtype(t: Tensor, want: DType, name: &str) -> Result<Tensor, CaseError> {
    let have = t.dtype();
    if have == want {
        return Ok(t);
    }
    if stored_as(want) != have {
        return Err(CaseError::Data(format!(
            "input '{name}' is {have} in the .npy file, the graph expects {want}"
        )));
    }
    let v = t.to_f64_vec();
    if want.is_minifloat() {
        // Not saturating: infinities stay infinities where the format has them.
        let codes = v
            .iter()
            .map(|&x| minifloat::from_f32(want, x as f32, false, "nearest"))
            .collect();
        return Tensor::new(t.shape, TensorData::Codes(want, codes))
            .ok_or_else(|| CaseError::Data(format!("input '{name}': bad element count")));
    }
    Ok(Tensor::from_f64_as(want, t.shape, &v))
}

/// Names of the model's graph inputs that are not initializers, in graph order.
fn graph_input_names(model: &Path) -> Result<Vec<String>, CaseError> {
    use prost::Message;
    let bytes =
        std::fs::read(model).map_err(|e| CaseError::Data(format!("{}: {e}", model.display())))?;
    let m = pimkit_onnx::proto::ModelProto::decode(&bytes[..])
        .map_err(|e| CaseError::Data(e.to_string()))?;
    let g = m.graph.unwrap_or_default();
    let inits: std::collections::HashSet<&str> = g.initializer.iter().map(|t| t.name()).collect();
    Ok(g.input
        .iter()
        .map(|vi| vi.name())
        .filter(|n| !inits.contains(n))
        .map(String::from)
        .collect())
}

fn run_inner(
    dir: &Path,
    data: &Path,
    tol: &dyn Fn(DType) -> Tolerance,
    bind: bool,
) -> Result<(), CaseError> {
    let inputs = read_numbered(data, "input")?;
    let wants = read_numbered(data, "output")?;
    let model = dir.join("model.onnx");
    if bind {
        // Every input becomes a constant: the graph folds at import and runs without feeds.
        let names = graph_input_names(&model)?;
        let opts = pimkit_onnx::LoadOptions {
            bind: names.into_iter().zip(inputs).collect(),
            ..Default::default()
        };
        let g =
            pimkit_onnx::load_with(&model, &opts).map_err(|e| CaseError::Import(e.to_string()))?;
        let gots =
            pimkit_interp::run(&g, &HashMap::new()).map_err(|e| CaseError::Run(e.to_string()))?;
        return compare_all(&g, &gots, &wants, tol);
    }
    let mut g = pimkit_onnx::load(&model).map_err(|e| CaseError::Import(e.to_string()))?;
    if g.inputs.len() != inputs.len() {
        return Err(CaseError::Import(format!(
            "graph has {} inputs but the case has {} input files",
            g.inputs.len(),
            inputs.len()
        )));
    }
    // Symbolic or unknown input dims are bound from the test inputs' shapes, as
    // onnxruntime binds them from its feeds.
    let names: Vec<String> = g
        .inputs
        .iter()
        .map(|&id| g.value(id).name.clone())
        .collect();
    if g.inputs
        .iter()
        .zip(&inputs)
        .any(|(&id, t)| g.ty(id).shape != t.shape)
    {
        let opts = pimkit_onnx::LoadOptions {
            input_shapes: names
                .iter()
                .cloned()
                .zip(inputs.iter().map(|t| t.shape.clone()))
                .collect(),
            ..Default::default()
        };
        g = pimkit_onnx::load_with(&model, &opts).map_err(|e| CaseError::Import(e.to_string()))?;
    }
    let mut feeds = HashMap::new();
    for ((name, &id), t) in names.iter().zip(&g.inputs).zip(inputs) {
        feeds.insert(name.clone(), to_input_dtype(t, g.ty(id).dtype, name)?);
    }
    let gots = pimkit_interp::run(&g, &feeds).map_err(|e| CaseError::Run(e.to_string()))?;
    compare_all(&g, &gots, &wants, tol)
}

fn compare_all(
    g: &pimkit_ir::Graph,
    gots: &[Tensor],
    wants: &[Tensor],
    tol: &dyn Fn(DType) -> Tolerance,
) -> Result<(), CaseError> {
    if gots.len() != wants.len() {
        return Err(CaseError::Mismatch(format!(
            "{} outputs but expected {}",
            gots.len(),
            wants.len()
        )));
    }
    let mut errs = Vec::new();
    for (i, (got, want)) in gots.iter().zip(wants).enumerate() {
        let name = &g.value(g.outputs[i]).name;
        if let Err(e) = compare(got, want, tol(got.dtype())) {
            errs.push(format!("output {i} '{name}': {e}"));
        }
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(CaseError::Mismatch(errs.join("\n    ")))
    }
}

/// Load, run and compare one case. `tol` picks the tolerance per output dtype.
pub fn run_case(dir: &Path, tol: &dyn Fn(DType) -> Tolerance) -> Result<(), CaseError> {
    run_case_with_data(dir, dir, tol)
}

/// [`run_case`] with the `.npy` files read from `data` (a case sharing another's data).
pub fn run_case_with_data(
    dir: &Path,
    data: &Path,
    tol: &dyn Fn(DType) -> Tolerance,
) -> Result<(), CaseError> {
    guarded(|| run_inner(dir, data, tol, false))
}

/// [`run_case_with_data`] with every graph input bound as a constant (`LoadOptions::bind`).
pub fn run_case_bound(
    dir: &Path,
    data: &Path,
    tol: &dyn Fn(DType) -> Tolerance,
) -> Result<(), CaseError> {
    guarded(|| run_inner(dir, data, tol, true))
}

/// The onnxruntime kernels the committed vectors reproduce: x86 AVX2/AVX-512 arithmetic
/// (fused QLinearAdd and logistic) with exact u8 x s8 sums. They were made on AVX2 CPUs
/// with the saturating pairs kept out of the data (7-bit weights, u8-weight twins) or
/// on a VNNI CPU (docs/testing.md), so every harness pins this variant instead of the
/// host's: on an AVX2 CPU without VNNI the host's would saturate the full-range cases.
pub fn pin_vector_variant() {
    pimkit_interp::set_ort_kernels(Some(pimkit_interp::OrtKernels::Avx2Vnni));
}

/// Run `f`, turning a panic into [`CaseError::Panic`].
fn guarded(f: impl FnOnce() -> Result<(), CaseError>) -> Result<(), CaseError> {
    pin_vector_variant();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "non-string panic payload".into());
            Err(CaseError::Panic(msg))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::suite::data_dir;
    use pimkit_ir::npy::write_npy;

    /// The harness must notice a wrong golden value, a missing model and a bad input.
    #[test]
    fn detects_mismatch_and_errors() {
        let src = data_dir().join("ort-quant/qlmm_u8u8_3x5x7");
        let tmp = tempfile::tempdir().unwrap();
        for f in ["model.onnx", "input_0.npy", "output_0.npy"] {
            std::fs::copy(src.join(f), tmp.path().join(f)).unwrap();
        }
        let exact = |_: DType| Tolerance::Exact;
        run_case(tmp.path(), &exact).expect("unmodified case passes");

        let out = tmp.path().join("output_0.npy");
        let mut t = read_npy(&out).unwrap();
        if let TensorData::U8(v) = &mut t.data {
            v[5] = v[5].wrapping_add(1);
        }
        write_npy(&out, &t).unwrap();
        let err = run_case(tmp.path(), &exact).unwrap_err();
        assert!(matches!(err, CaseError::Mismatch(_)), "{err}");
        assert!(err.to_string().contains("1 of 21 elements differ"), "{err}");

        std::fs::remove_file(tmp.path().join("input_0.npy")).unwrap();
        assert!(matches!(
            run_case(tmp.path(), &exact),
            Err(CaseError::Import(_))
        ));
        std::fs::remove_file(tmp.path().join("model.onnx")).unwrap();
        assert!(matches!(
            run_case(tmp.path(), &exact),
            Err(CaseError::Import(_))
        ));
    }
}
