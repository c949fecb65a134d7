//! Output comparison: exact for integer/bool (and for quantized suites), atol + rtol for
//! floats. NaN matches NaN; infinities must match exactly. Values of the dtypes numpy
//! cannot save (bf16, the float8 formats, float4, int4/int2) are stored as f32 or
//! i8/u8 and compared by value.

use pimkit_ir::{DType, Tensor, TensorData};

/// Default float tolerance, |got - want| <= atol + rtol * |want|; overridable with the
/// environment variables `PIMKIT_ATOL` and `PIMKIT_RTOL` (f32 outputs only).
pub const F32_ATOL: f64 = 1e-4;
pub const F32_RTOL: f64 = 1e-4;
/// f16 results are computed in f32 and rounded: allow about two f16 ulps.
pub const F16_ATOL: f64 = 1e-3;
pub const F16_RTOL: f64 = 2e-3;
/// bf16 results are computed in f32 and rounded: about two bf16 ulps (2^-7 at 1.0).
pub const BF16_ATOL: f64 = 1e-2;
pub const BF16_RTOL: f64 = 1.6e-2;

/// The dtype a `.npy` file stores `dtype` as: pimkit's npy writer (and the generators)
/// write bf16, the float8 formats and float4 as f32 and the sub-byte integers as i8/u8.
pub fn stored_as(dtype: DType) -> DType {
    match dtype {
        DType::I4 | DType::I2 => DType::I8,
        DType::U4 | DType::U2 => DType::U8,
        d if d == DType::Bf16 || d.is_minifloat() => DType::F32,
        d => d,
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Tolerance {
    Exact,
    Close { atol: f64, rtol: f64 },
}

impl Tolerance {
    /// The documented default for an output of `dtype` (exact for non-float types and
    /// for the float8/float4 codes, which only casts and quantization produce).
    pub fn default_for(dtype: DType) -> Tolerance {
        let env = |k: &str, d: f64| {
            std::env::var(k)
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(d)
        };
        match dtype {
            DType::F32 | DType::F64 => Tolerance::Close {
                atol: env("PIMKIT_ATOL", F32_ATOL),
                rtol: env("PIMKIT_RTOL", F32_RTOL),
            },
            DType::F16 => Tolerance::Close {
                atol: F16_ATOL,
                rtol: F16_RTOL,
            },
            DType::Bf16 => Tolerance::Close {
                atol: BF16_ATOL,
                rtol: BF16_RTOL,
            },
            _ => Tolerance::Exact,
        }
    }
}

fn floats(t: &Tensor) -> Option<Vec<f64>> {
    match &t.data {
        TensorData::F32(v) => Some(v.iter().map(|&x| x as f64).collect()),
        TensorData::F16(v) => Some(v.iter().map(|x| x.to_f64()).collect()),
        _ => None,
    }
}

/// Integer, bool and sub-byte integer tensors (compared exactly as integers).
fn is_integer(t: &Tensor) -> bool {
    let d = t.dtype();
    d.is_int() || d.is_subbyte_int() || d == DType::Bool
}

fn index_of(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut idx = vec![0; shape.len()];
    for (i, &d) in shape.iter().enumerate().rev() {
        if d > 0 {
            idx[i] = flat % d;
            flat /= d;
        }
    }
    idx
}

fn close(g: f64, w: f64, tol: Tolerance) -> bool {
    if g.is_nan() || w.is_nan() {
        return g.is_nan() && w.is_nan();
    }
    if g.is_infinite() || w.is_infinite() {
        return g == w;
    }
    match tol {
        Tolerance::Exact => g == w,
        Tolerance::Close { atol, rtol } => (g - w).abs() <= atol + rtol * w.abs(),
    }
}

/// Compare one output; the error says how many elements differ and shows the first few.
/// `want` may hold `got`'s values in their storage dtype ([`stored_as`]).
pub fn compare(got: &Tensor, want: &Tensor, tol: Tolerance) -> Result<(), String> {
    if got.dtype() != want.dtype() && stored_as(got.dtype()) != want.dtype() {
        return Err(format!(
            "dtype {} but expected {}",
            got.dtype(),
            want.dtype()
        ));
    }
    if got.shape != want.shape {
        return Err(format!(
            "shape {:?} but expected {:?}",
            got.shape, want.shape
        ));
    }
    let (g, w) = match (floats(got), floats(want)) {
        (Some(g), Some(w)) => (g, w),
        _ => (got.to_f64_vec(), want.to_f64_vec()),
    };
    let bad: Vec<usize> = if is_integer(got) && is_integer(want) {
        // i64 (u64 reinterpreted) so that values beyond 2^53 compare exactly.
        let (gi, wi) = (got.to_i64_vec(), want.to_i64_vec());
        (0..gi.len()).filter(|&i| gi[i] != wi[i]).collect()
    } else {
        (0..g.len()).filter(|&i| !close(g[i], w[i], tol)).collect()
    };
    if bad.is_empty() {
        return Ok(());
    }
    let max_err = bad
        .iter()
        .map(|&i| (g[i] - w[i]).abs())
        .filter(|e| e.is_finite())
        .fold(0.0, f64::max);
    let mut msg = format!(
        "{} of {} elements differ ({tol:?}, max abs error {max_err:.3e})",
        bad.len(),
        g.len()
    );
    for &i in bad.iter().take(4) {
        msg += &format!(
            "\n      at {:?}: got {}, want {}",
            index_of(i, &want.shape),
            g[i],
            w[i]
        );
    }
    Err(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_and_close() {
        let a = Tensor::from_f32(vec![3], vec![1.0, f32::NAN, 3.0]);
        let b = Tensor::from_f32(vec![3], vec![1.00005, f32::NAN, 3.0]);
        assert!(compare(&a, &b, Tolerance::Exact).is_err());
        assert!(compare(&a, &b, Tolerance::default_for(DType::F32)).is_ok());
        let c = Tensor::from_f32(vec![3], vec![1.1, 0.0, 3.0]);
        let err = compare(&a, &c, Tolerance::default_for(DType::F32)).unwrap_err();
        assert!(err.starts_with("2 of 3 elements differ"), "{err}");
    }

    #[test]
    fn dtype_shape_and_integers() {
        let a = Tensor::from_u8(vec![2, 2], vec![1, 2, 3, 4]);
        let b = Tensor::from_u8(vec![2, 2], vec![1, 2, 3, 5]);
        let err = compare(&a, &b, Tolerance::Exact).unwrap_err();
        assert!(err.contains("at [1, 1]: got 4, want 5"), "{err}");
        let c = Tensor::from_i8(vec![2, 2], vec![1, 2, 3, 4]);
        assert!(
            compare(&a, &c, Tolerance::Exact)
                .unwrap_err()
                .starts_with("dtype")
        );
        let d = Tensor::from_u8(vec![4], vec![1, 2, 3, 4]);
        assert!(
            compare(&a, &d, Tolerance::Exact)
                .unwrap_err()
                .starts_with("shape")
        );
    }
}
