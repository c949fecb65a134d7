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

/// What relative errors are relative to: the range of the reference outputs together
/// with 0 (max − min when the outputs change sign, else their largest magnitude), or 1
/// when they are all zero (the error is then absolute). The range alone is near zero
/// for outputs that are (almost) constant — a softmax over equal logits, `1 + small`
/// terms — and made any rounding look like a huge error (it fell back to 10^-30 for
/// all-zero outputs, so an error of 2^-40 read as 10^18).
pub(crate) fn output_range(r: &[Tensor]) -> f64 {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for t in r {
        for x in t.to_f32_vec() {
            lo = lo.min(x as f64);
            hi = hi.max(x as f64);
        }
    }
    if lo > hi {
        return 1.0;
    }
    let s = (hi - lo).max(hi.abs()).max(lo.abs());
    if s > 0.0 { s } else { 1.0 }
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

/// One line saying that values are beyond any 16-bit format, naming the nodes (at most
/// three): their results saturate whatever the compiler does, so the error is genuine.
pub(crate) fn out_of_range_warning(what: &str, o: &[crate::program::OutOfRange]) -> Option<String> {
    let first = o.first()?;
    let names: Vec<String> = o
        .iter()
        .take(3)
        .map(|x| format!("`{}` {:.3e}", x.node, x.max_abs))
        .collect();
    Some(format!(
        "{what}: values reach {:.3e}, beyond ±32767, the largest 16-bit word (at 0 fraction bits): no fixed-point format of PUMA's 16-bit words represents them, so they saturate and the error is genuine (largest magnitude by node: {}{}; docs/puma.md \"Fixed point per tensor\")",
        first.max_abs,
        names.join(", "),
        if o.len() > 3 {
            format!(" and {} more", o.len() - 3)
        } else {
            String::new()
        }
    ))
}

#[cfg(test)]
mod tests {
    use super::output_range;
    use pimkit_ir::Tensor;

    fn range(v: &[f32]) -> f64 {
        output_range(&[Tensor::from_f32(vec![v.len()], v.to_vec())])
    }

    #[test]
    fn output_range_includes_zero_and_is_never_near_zero() {
        assert_eq!(range(&[-2.0, 3.0]), 5.0);
        assert_eq!(range(&[0.0, 2.0]), 2.0);
        assert_eq!(range(&[0.5, 2.0]), 2.0);
        assert_eq!(range(&[-3.0, -1.0]), 3.0);
        // A softmax over equal logits: constant 0.001 (the light models' outputs).
        assert!((range(&[0.001; 1000]) - 0.001).abs() < 1e-9);
        // All zero: the error is compared absolutely (was 1e-30, i.e. × 10^30).
        assert_eq!(range(&[0.0; 8]), 1.0);
        assert_eq!(output_range(&[]), 1.0);
    }
}
