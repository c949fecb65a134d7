//! One-call compile + simulate + compare, and the serializable result.

use crate::arch::Arch;
use crate::compile::{CompileError, CompileOptions, compile};
use crate::fixed::NumMode;
use crate::program::Program;
use crate::sim::{SimError, SimOptions, SimStats, simulate};
use pimkit_ir::{Graph, Tensor};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;

/// The JSON result of `pimkit puma sim/run`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct PumaResult {
    pub model: String,
    pub mode: NumMode,
    /// Constant set of the architecture ("head" or "paper").
    pub constants: String,
    #[serde(flatten)]
    pub stats: SimStats,
    /// Largest |PUMA − reference interpreter| over all outputs (None when the graph has
    /// no weights or no reference was run).
    pub max_abs_error: Option<f64>,
    pub static_instructions: usize,
    pub shape_only: bool,
    pub wall_s: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Compile(#[from] CompileError),
    #[error(transparent)]
    Sim(#[from] SimError),
    #[error("reference interpreter: {0}")]
    Reference(String),
    /// A scaled or summed cycle count beyond u64 (`run_per_layer`).
    #[error("{0}")]
    CycleOverflow(String),
}

/// Largest absolute difference between two output lists.
pub fn compare(a: &[Tensor], b: &[Tensor]) -> f64 {
    let mut m = 0f64;
    for (x, y) in a.iter().zip(b) {
        for (p, q) in x.to_f32_vec().iter().zip(y.to_f32_vec()) {
            let d = (*p as f64 - q as f64).abs();
            if d.is_nan() {
                return f64::INFINITY;
            }
            m = m.max(d);
        }
    }
    m
}

/// Simulate a compiled program; `reference` outputs (if any) give `max_abs_error`.
pub fn run_program(
    p: &Program,
    inputs: &HashMap<String, Tensor>,
    opts: &SimOptions,
    reference: Option<&[Tensor]>,
) -> Result<(PumaResult, Vec<Tensor>), RunError> {
    let t0 = std::time::Instant::now();
    let out = simulate(p, inputs, opts)?;
    let wall_s = t0.elapsed().as_secs_f64();
    let max_abs_error = reference.map(|r| compare(&out.outputs, r));
    let res = PumaResult {
        model: p.name.clone(),
        mode: opts.mode,
        constants: format!("{:?}", p.arch.constants).to_lowercase(),
        stats: out.stats,
        max_abs_error,
        static_instructions: p.num_core_instructions(),
        shape_only: p.shape_only,
        wall_s,
    };
    Ok((res, out.outputs))
}

/// Compile `g`, simulate it on `inputs` (deterministic random inputs when `None`) and
/// compare with the reference interpreter (skipped for shape-only graphs).
pub fn run_graph(
    g: &Graph,
    arch: &Arch,
    copts: &CompileOptions,
    sopts: &SimOptions,
    inputs: Option<HashMap<String, Tensor>>,
) -> Result<(PumaResult, Vec<Tensor>, Program), RunError> {
    let inputs = match inputs {
        Some(i) => i,
        None => {
            pimkit_interp::check_memory(g).map_err(|e| RunError::Reference(e.to_string()))?;
            pimkit_interp::random_inputs(g, 0)
        }
    };
    if g.inputs.iter().all(|&v| g.ty(v).dtype.is_float()) {
        crate::sim::check_graph_inputs(g, &inputs)?;
    }
    // Activation formats from the reference run's inputs unless calibration is given.
    let p = if copts.calibration.is_empty() && copts.fixed == crate::compile::Fixed::PerTensor {
        let mut o = copts.clone();
        o.calibration = vec![inputs.clone()];
        compile(g, arch, &o)?
    } else {
        compile(g, arch, copts)?
    };
    crate::sim::check_inputs(&p, &inputs)?;
    let reference = if p.shape_only {
        None
    } else {
        Some(pimkit_interp::run(g, &inputs).map_err(|e| RunError::Reference(e.to_string()))?)
    };
    let (res, outs) = run_program(&p, &inputs, sopts, reference.as_deref())?;
    Ok((res, outs, p))
}
