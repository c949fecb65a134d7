//! The 8-bit and 4-bit float formats of ONNX (float8 e4m3fn/e4m3fnuz/e5m2/e5m2fnuz/e8m0,
//! float4 e2m1) and the 4-/2-bit integers, stored one code per byte. Conversions follow
//! ml_dtypes, which the ONNX reference implementation uses: round half to even; values
//! past the largest finite one become infinity (e5m2) or NaN (formats without
//! infinities) unless the conversion saturates; float4 e2m1 has neither and always
//! saturates. float8 e8m0 follows `onnx.numpy_helper.to_float8e8m0` (its own rounding
//! modes).

use crate::DType;

/// Bit layout of a small float format.
struct Format {
    man: u32,
    bias: i32,
    /// Largest finite magnitude.
    max: f64,
    /// NaN code of the positive sign, `None` if the format has no NaN.
    nan: Option<u8>,
    /// Infinity code (positive), if any.
    inf: Option<u8>,
    /// "uz": no negative zero, the sign bit with all else zero is NaN.
    uz: bool,
    sign_bit: u8,
}

fn format(d: DType) -> Option<Format> {
    Some(match d {
        DType::F8E4M3Fn => Format {
            man: 3,
            bias: 7,
            max: 448.0,
            nan: Some(0x7F),
            inf: None,
            uz: false,
            sign_bit: 0x80,
        },
        DType::F8E4M3Fnuz => Format {
            man: 3,
            bias: 8,
            max: 240.0,
            nan: Some(0x80),
            inf: None,
            uz: true,
            sign_bit: 0x80,
        },
        DType::F8E5M2 => Format {
            man: 2,
            bias: 15,
            max: 57344.0,
            nan: Some(0x7F),
            inf: Some(0x7C),
            uz: false,
            sign_bit: 0x80,
        },
        DType::F8E5M2Fnuz => Format {
            man: 2,
            bias: 16,
            max: 57344.0,
            nan: Some(0x80),
            inf: None,
            uz: true,
            sign_bit: 0x80,
        },
        DType::F4E2M1 => Format {
            man: 1,
            bias: 1,
            max: 6.0,
            nan: None,
            inf: None,
            uz: false,
            sign_bit: 0x08,
        },
        _ => return None,
    })
}

/// Value of a code of a small float type (`d.is_minifloat()`); other types give NaN.
pub fn to_f32(d: DType, code: u8) -> f32 {
    if d == DType::F8E8M0 {
        return if code == 0xFF {
            f32::NAN
        } else {
            (2f64).powi(code as i32 - 127) as f32
        };
    }
    let Some(f) = format(d) else {
        return f32::NAN;
    };
    if f.nan == Some(code) || (!f.uz && f.nan.is_some_and(|n| code == n | f.sign_bit)) {
        return f32::NAN;
    }
    let neg = code & f.sign_bit != 0;
    let mag = code & (f.sign_bit - 1);
    if let Some(i) = f.inf {
        // IEEE-like: all-ones exponent is infinity (zero mantissa) or NaN.
        if mag == i {
            return if neg {
                f32::NEG_INFINITY
            } else {
                f32::INFINITY
            };
        }
        if mag > i {
            return f32::NAN;
        }
    }
    let e = (mag >> f.man) as i32;
    let m = (mag & ((1 << f.man) - 1)) as f64;
    let v = if e == 0 {
        m * 2f64.powi(1 - f.bias - f.man as i32)
    } else {
        (1.0 + m / (1u32 << f.man) as f64) * 2f64.powi(e - f.bias)
    };
    (if neg { -v } else { v }) as f32
}

/// Code of the value nearest to `x` (ties to even) in a small float type; values out of
/// range saturate to the largest finite value when `saturate` (always for float4).
/// `e8m0_round` is float8 e8m0's rounding mode: "up" (ONNX's default), "down" or "nearest".
pub fn from_f32(d: DType, x: f32, saturate: bool, e8m0_round: &str) -> u8 {
    if d == DType::F8E8M0 {
        return e8m0_from_f32(x, saturate, e8m0_round);
    }
    let Some(f) = format(d) else {
        return 0;
    };
    let neg = x.is_sign_negative();
    let sign = if neg { f.sign_bit } else { 0 };
    let nan = f.nan.map(|n| if f.uz { n } else { n | sign });
    if x.is_nan() {
        // float4 has no NaN. The ONNX reference (ml_dtypes, which onnxruntime has no
        // kernel to contradict) gives a zero of the opposite sign: +NaN -> -0, -NaN -> +0.
        return nan.unwrap_or(if neg { 0 } else { f.sign_bit });
    }
    let a = (x as f64).abs();
    let overflow = || -> u8 {
        if saturate || (f.inf.is_none() && f.nan.is_none()) {
            sign | encode_finite(&f, f.max)
        } else if let Some(i) = f.inf {
            sign | i
        } else {
            nan.unwrap_or(0)
        }
    };
    if a.is_infinite() {
        return overflow();
    }
    // Quantum at a's binade (or the subnormal quantum below the normal range).
    let emin = 1 - f.bias;
    let e = if a == 0.0 {
        emin
    } else {
        (a.log2().floor() as i32).max(emin)
    };
    let q = 2f64.powi(e - f.man as i32);
    let r = round_half_even(a / q) * q;
    if r > f.max {
        return overflow();
    }
    if r == 0.0 {
        // uz formats have no negative zero.
        return if f.uz { 0 } else { sign };
    }
    sign | encode_finite(&f, r)
}

/// Code of a positive representable magnitude.
fn encode_finite(f: &Format, r: f64) -> u8 {
    let emin = 1 - f.bias;
    if r < 2f64.powi(emin) {
        return (r / 2f64.powi(emin - f.man as i32)).round() as u8;
    }
    let e = r.log2().floor() as i32;
    let m = (r / 2f64.powi(e - f.man as i32)).round() as u32 - (1 << f.man);
    (((e + f.bias) as u32) << f.man | m) as u8
}

fn round_half_even(v: f64) -> f64 {
    let r = v.round();
    if (v - v.trunc()).abs() == 0.5 && r % 2.0 != 0.0 {
        r - v.signum()
    } else {
        r
    }
}

fn e8m0_from_f32(x: f32, saturate: bool, mode: &str) -> u8 {
    let bits = x.to_bits();
    let exp = (bits >> 23) & 0xFF;
    if exp == 0xFF {
        return 0xFF;
    }
    let frac = bits & 0x7F_FFFF;
    let up = match mode {
        "nearest" => {
            let g = bits & 0x40_0000 != 0;
            let r = bits & 0x20_0000 != 0;
            let s = bits & 0x1F_FFFF != 0;
            g && (r || s || exp > 0)
        }
        "down" => false,
        _ => frac != 0,
    };
    let up = up && !(saturate && exp == 0xFE);
    (exp + up as u32) as u8
}

/// Sign-extend a sub-byte signed integer code (`bits` wide) to i8.
pub fn sext(code: u8, bits: u32) -> i8 {
    let shift = 8 - bits;
    ((code << shift) as i8) >> shift
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_round_trips() {
        for d in [
            DType::F8E4M3Fn,
            DType::F8E4M3Fnuz,
            DType::F8E5M2,
            DType::F8E5M2Fnuz,
            DType::F4E2M1,
            DType::F8E8M0,
        ] {
            let codes = if d == DType::F4E2M1 { 16 } else { 256 };
            for c in 0..codes as u16 {
                let c = c as u8;
                let v = to_f32(d, c);
                // e8m0's code 0 (2^-127) is an f32 subnormal, which ONNX's "up" rounding
                // sends to code 1.
                if v.is_nan() || (d == DType::F8E8M0 && c == 0) {
                    continue;
                }
                // -0 of an "uz" format does not exist (that code is NaN).
                let back = from_f32(d, v, false, "up");
                assert_eq!(
                    to_f32(d, back).to_bits(),
                    v.to_bits(),
                    "{d} code {c:#x} = {v}"
                );
            }
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(to_f32(DType::F8E4M3Fn, 0x7E), 448.0);
        assert!(to_f32(DType::F8E4M3Fn, 0x7F).is_nan());
        assert_eq!(to_f32(DType::F8E5M2, 0x7B), 57344.0);
        assert_eq!(to_f32(DType::F8E5M2, 0x7C), f32::INFINITY);
        assert_eq!(to_f32(DType::F8E4M3Fnuz, 0x7F), 240.0);
        assert!(to_f32(DType::F8E4M3Fnuz, 0x80).is_nan());
        assert_eq!(to_f32(DType::F4E2M1, 0x7), 6.0);
        assert_eq!(to_f32(DType::F4E2M1, 0xF), -6.0);
        // Overflow without saturation: NaN (fn), inf (e5m2); with it: the max.
        assert!(
            to_f32(
                DType::F8E4M3Fn,
                from_f32(DType::F8E4M3Fn, 1000.0, false, "up")
            )
            .is_nan()
        );
        assert_eq!(
            to_f32(
                DType::F8E4M3Fn,
                from_f32(DType::F8E4M3Fn, 1000.0, true, "up")
            ),
            448.0
        );
        assert_eq!(
            to_f32(DType::F8E5M2, from_f32(DType::F8E5M2, 1e6, false, "up")),
            f32::INFINITY
        );
        // Ties to even: 1.0625 lies halfway between 1.0 and 1.125 in e4m3.
        assert_eq!(
            to_f32(
                DType::F8E4M3Fn,
                from_f32(DType::F8E4M3Fn, 1.0625, true, "up")
            ),
            1.0
        );
        assert_eq!(
            to_f32(DType::F8E8M0, from_f32(DType::F8E8M0, 3.0, true, "up")),
            4.0
        );
        assert_eq!(
            to_f32(DType::F8E8M0, from_f32(DType::F8E8M0, 3.0, true, "down")),
            2.0
        );
        assert_eq!(sext(0xF, 4), -1);
        assert_eq!(sext(0x2, 2), -2);
        // float4 has no NaN: the ONNX reference (ml_dtypes) gives -0 for +NaN, +0 for -NaN.
        assert_eq!(from_f32(DType::F4E2M1, f32::NAN, true, "up"), 0x8);
        assert_eq!(from_f32(DType::F4E2M1, -f32::NAN, true, "up"), 0x0);
    }
}
