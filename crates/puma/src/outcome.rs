//! How a run can fail and how its outputs are compared with the reference: shared by the
//! whole-network run (result.rs) and the per-layer run (per_layer/), which both use them.

use crate::compile::CompileError;
use crate::sim::SimError;
use pimkit_ir::Tensor;

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
    /// A layer of a per-layer run that cannot be simulated at any window size.
    #[error("{0}")]
    Layer(String),
}

/// Range (max − min) of the reference outputs.
pub(crate) fn output_range(r: &[Tensor]) -> f64 {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for t in r {
        for x in t.to_f32_vec() {
            lo = lo.min(x as f64);
            hi = hi.max(x as f64);
        }
    }
    if hi > lo {
        hi - lo
    } else {
        hi.abs().max(1e-30)
    }
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
