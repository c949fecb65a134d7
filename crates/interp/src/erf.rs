//! An f32 error function (std's `f32::erf` is still unstable on the pinned toolchain).
//!
//! Computed in f64 and rounded to f32, so the f32 result is within 1 ulp of the true
//! value: a Maclaurin series for |x| < 0.5 (no cancellation near 0) and the Chebyshev
//! fit of erfc from Numerical Recipes (relative error < 1.2e-7 of erfc, i.e. an absolute
//! error < 2e-8 on erf for |x| >= 0.5). The arithmetic lives in `kernels::vmath`
//! (branch-free, so loops over it vectorize).

#[cfg(test)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    // One implementation, in the branch-free form the vectorized kernels use.
    crate::kernels::vmath::erf_f32(x)
}

/// The f64 form (Maclaurin series below 0.5, the erfc fit above) for f64 tensors.
pub(crate) fn erf_f64(x: f64) -> f64 {
    if x.is_nan() {
        return x;
    }
    let ax = x.abs();
    if ax < 0.5 {
        // erf(x) = 2/sqrt(pi) * sum_n (-1)^n x^(2n+1) / (n! (2n+1))
        let x2 = x * x;
        let mut term = x; // (-1)^n x^(2n+1) / n!
        let mut sum = x;
        for n in 1..30 {
            term *= -x2 / n as f64;
            let t = term / (2 * n + 1) as f64;
            sum += t;
            if t.abs() < 1e-17 * sum.abs() {
                break;
            }
        }
        return sum * std::f64::consts::FRAC_2_SQRT_PI;
    }
    let t = 1.0 / (1.0 + 0.5 * ax);
    let poly = -ax * ax - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let erfc = t * poly.exp();
    let r = 1.0 - erfc;
    if x < 0.0 { -r } else { r }
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
