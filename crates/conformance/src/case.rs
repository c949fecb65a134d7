//! Run one case directory: model.onnx + input_<i>.npy -> compare with output_<i>.npy.

use crate::compare::{Tolerance, compare};
use pimkit_ir::{DType, Tensor, npy::read_npy};
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

fn run_inner(dir: &Path, tol: &dyn Fn(DType) -> Tolerance) -> Result<(), CaseError> {
    let inputs = read_numbered(dir, "input")?;
    let wants = read_numbered(dir, "output")?;
    let g =
        pimkit_onnx::load(&dir.join("model.onnx")).map_err(|e| CaseError::Import(e.to_string()))?;
    if g.inputs.len() != inputs.len() {
        return Err(CaseError::Import(format!(
            "graph has {} inputs but the case has {} input files",
            g.inputs.len(),
            inputs.len()
        )));
    }
    let feeds: HashMap<String, Tensor> = g
        .inputs
        .iter()
        .map(|&id| g.value(id).name.clone())
        .zip(inputs)
        .collect();
    let gots = pimkit_interp::run(&g, &feeds).map_err(|e| CaseError::Run(e.to_string()))?;
    if gots.len() != wants.len() {
        return Err(CaseError::Mismatch(format!(
            "{} outputs but expected {}",
            gots.len(),
            wants.len()
        )));
    }
    let mut errs = Vec::new();
    for (i, (got, want)) in gots.iter().zip(&wants).enumerate() {
        let name = &g.value(g.outputs[i]).name;
        if let Err(e) = compare(got, want, tol(want.dtype())) {
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
    match catch_unwind(AssertUnwindSafe(|| run_inner(dir, tol))) {
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
    use pimkit_ir::{TensorData, npy::write_npy};

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
