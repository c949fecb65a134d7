//! An f32 error function (std's `f32::erf` is still unstable on the pinned toolchain).
//!
//! Computed in f64 and rounded to f32, so the f32 result is within 1 ulp of the true
//! value: a Maclaurin series for |x| < 0.5 (no cancellation near 0) and the Chebyshev
//! fit of erfc from Numerical Recipes (relative error < 1.2e-7 of erfc, i.e. an absolute
//! error < 2e-8 on erf for |x| >= 0.5). The arithmetic lives in `kernels::vmath`
//! (branch-free, so loops over it vectorize).

pub(crate) fn erf_f32(x: f32) -> f32 {
    // One implementation, in the branch-free form the vectorized kernels use.
    crate::kernels::vmath::erf_f32(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // Values from tables of erf (Abramowitz & Stegun 7.1).
        let cases = [
            (0.0f32, 0.0f32),
            (0.1, 0.112_462_92),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (3.0, 0.999_977_9),
            (-1.0, -0.842_700_8),
        ];
        for (x, want) in cases {
            let got = erf_f32(x);
            assert!((got - want).abs() <= 2e-7, "erf({x}) = {got}, want {want}");
        }
        assert_eq!(erf_f32(10.0), 1.0);
        assert!(erf_f32(f32::NAN).is_nan());
        // Odd symmetry and small-argument slope 2/sqrt(pi).
        assert!((erf_f32(1e-6) - 1.128_379_2e-6).abs() < 1e-12);
    }
}
