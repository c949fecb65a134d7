//! Element functions written without branches or library calls, so loops over them
//! vectorize: exp, erf and tanh, computed in f64 and rounded once to f32 (within 1 ulp
//! of the true value, like the library functions they replace).

/// 1.5 * 2^52: adding and subtracting it rounds an f64 of magnitude < 2^51 to an
/// integer, ties to even.
const ROUND64: f64 = 6_755_399_441_055_744.0;

/// e^x for f64, |relative error| < 1e-15, x clamped to [-708, 708] (so the result
/// stays normal; callers never need more range). NaN propagates.
#[inline(always)]
pub(crate) fn exp_f64(x: f64) -> f64 {
    const LOG2E: f64 = std::f64::consts::LOG2_E;
    // ln 2 split so that k * LN2_HI is exact for |k| < 2^11 (Cody-Waite).
    #[allow(clippy::excessive_precision)]
    const LN2_HI: f64 = 6.931_471_803_691_238_2e-1;
    #[allow(clippy::excessive_precision)]
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    let x = x.clamp(-708.0, 708.0);
    let k = (x * LOG2E + ROUND64) - ROUND64;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    // e^r for |r| <= ln2/2: Taylor series to r^13 (truncation < 5e-18).
    let mut p = 1.0 / 6_227_020_800.0; // 1/13!
    for d in [
        479_001_600.0, // 12!
        39_916_800.0,
        3_628_800.0,
        362_880.0,
        40_320.0,
        5_040.0,
        720.0,
        120.0,
        24.0,
        6.0,
        2.0,
        1.0,
        1.0,
    ] {
        p = p * r + 1.0 / d;
    }
    // 2^k from the exponent bits (k in [-1022, 1022] after the clamp).
    let scale = f64::from_bits(((k as i64 + 1023) as u64) << 52);
    p * scale
}

/// Coefficients of erf(x) = x * sum_n C[n] x^(2n) for |x| < 0.5:
/// C[n] = 2/sqrt(pi) * (-1)^n / (n! (2n + 1)); 15 terms leave < 1e-20.
const ERF_SERIES: [f64; 15] = {
    let mut c = [0f64; 15];
    let mut fact = 1.0;
    let mut n = 0;
    while n < 15 {
        if n > 0 {
            fact *= n as f64;
        }
        let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
        c[n] = std::f64::consts::FRAC_2_SQRT_PI * sign / (fact * (2 * n + 1) as f64);
        n += 1;
    }
    c
};

/// erf in f64: the Maclaurin series for |x| < 0.5 and the Numerical Recipes Chebyshev
/// fit of erfc above (absolute error < 2e-8), both evaluated and one selected.
#[inline(always)]
pub(crate) fn erf_f64(x: f64) -> f64 {
    let ax = x.abs();
    let x2 = x * x;
    let mut s = ERF_SERIES[14];
    for &c in ERF_SERIES[..14].iter().rev() {
        s = s * x2 + c;
    }
    let series = x * s;
    let t = 1.0 / (1.0 + 0.5 * ax);
    let poly = -ax * ax - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = 1.0 - t * exp_f64(poly);
    let fit = if x < 0.0 { -r } else { r };
    if ax < 0.5 { series } else { fit }
}

/// erf rounded to f32.
#[inline(always)]
pub(crate) fn erf_f32(x: f32) -> f32 {
    erf_f64(x as f64) as f32
}

/// tanh rounded to f32: (e^2x - 1) / (e^2x + 1) in f64 (x clamped to [-20, 20], where
/// the f32 result is already +-1); below 2^-12 tanh(x) rounds to x itself.
#[inline(always)]
pub(crate) fn tanh_f32(x: f32) -> f32 {
    let xd = (x as f64).clamp(-20.0, 20.0);
    let e = exp_f64(2.0 * xd);
    let t = ((e - 1.0) / (e + 1.0)) as f32;
    if x.abs() < 2.44e-4 { x } else { t }
}

/// e^x rounded to f32 (overflow to inf and underflow to 0 as f32 does).
#[inline(always)]
pub(crate) fn exp_f32(x: f32) -> f32 {
    // Beyond +-104 the f32 result is inf / 0 whatever the clamp inside exp_f64 does.
    let r = exp_f64(x as f64) as f32;
    if x > 89.0 {
        f32::INFINITY
    } else if x < -104.0 {
        0.0
    } else {
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in units in the last place.
    fn ulps(a: f32, b: f32) -> u32 {
        if a == b {
            return 0;
        }
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    /// The scalar form this module replaced (series summed term by term), kept for f64
    /// tensors in `crate::erf`.
    fn reference_erf(x: f64) -> f64 {
        crate::erf::erf_f64(x)
    }

    #[test]
    fn within_one_ulp_of_f64_references() {
        let mut x = -30.0f32;
        while x < 30.0 {
            assert!(ulps(exp_f32(x), (x as f64).exp() as f32) <= 1, "exp({x})");
            assert!(
                ulps(tanh_f32(x), (x as f64).tanh() as f32) <= 1,
                "tanh({x})"
            );
            assert!(
                ulps(erf_f32(x), reference_erf(x as f64) as f32) <= 1,
                "erf({x})"
            );
            x += 0.000_731;
        }
        for x in [1e-7f32, -3e-6, 1e-3, 2.5e-4, 0.5, -0.5, 0.49999997] {
            assert!(
                ulps(tanh_f32(x), (x as f64).tanh() as f32) <= 1,
                "tanh({x})"
            );
            assert!(
                ulps(erf_f32(x), reference_erf(x as f64) as f32) <= 1,
                "erf({x})"
            );
        }
    }

    #[test]
    fn special_values() {
        assert_eq!(exp_f32(100.0), f32::INFINITY);
        assert_eq!(exp_f32(-200.0), 0.0);
        assert!(exp_f32(f32::NAN).is_nan());
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(-f32::INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        assert_eq!(erf_f32(10.0), 1.0);
        assert_eq!(erf_f32(-10.0), -1.0);
        assert!(erf_f32(f32::NAN).is_nan());
        assert_eq!(tanh_f32(0.0), 0.0);
        assert_eq!(erf_f32(0.0), 0.0);
    }
}
