//! Requantization exactly as onnxruntime (MLAS) computes it, and an integer-only
//! equivalent for hosts without an FPU.
//!
//! ORT's `MlasRequantizeOutput` converts the int32 accumulator to float32 (rounding to
//! nearest-even when |acc| > 2^24), multiplies by a float32 scale (a second rounding),
//! clamps to `[lo - zp, hi - zp]` and converts with round-half-even before adding the
//! zero point. [`requant_f32`] is that sequence. [`IntRequant`] reproduces both float32
//! roundings with integer shifts and one 24x24-bit multiply, so it is equal to
//! [`requant_f32`] for every `acc` (see docs/interpreter.md for the proof sketch).

/// ONNX Runtime's requantization: round_half_even(f32(acc) * scale) + zp, saturated to
/// `[lo, hi]`. The clamp happens before rounding, in float, as in MLAS; because the
/// bounds are integers this equals clamping the rounded value.
pub fn requant_f32(acc: i32, scale: f32, zp: i32, lo: i32, hi: i32) -> i32 {
    clamp_round((acc as f32) * scale, zp, lo, hi)
}

/// Clamp `v` to `[lo - zp, hi - zp]` in float (NaN -> lower bound, as MAXPS/MINPS do
/// with the value as first operand), round half to even, add zp.
#[inline]
fn clamp_round(v: f32, zp: i32, lo: i32, hi: i32) -> i32 {
    let (min, max) = (lo as i64 - zp as i64, hi as i64 - zp as i64);
    let v = v.max(min as f32).min(max as f32);
    (v.round_ties_even() as i64 + zp as i64).clamp(lo as i64, hi as i64) as i32
}

/// The float32 multiplier ORT uses: (a_scale * b_scale) / y_scale computed in f32.
pub fn output_scale(a_scale: f32, b_scale: f32, y_scale: f32) -> f32 {
    (a_scale * b_scale) / y_scale
}

/// ONNX QuantizeLinear as MLAS computes it: round_half_even(x / scale) (f32 division)
/// + zp, saturated to `[lo, hi]`. NaN maps to `lo` (MAXPS semantics).
pub fn quantize_f32(x: f32, scale: f32, zp: i32, lo: i32, hi: i32) -> i32 {
    clamp_round(x / scale, zp, lo, hi)
}

/// How a scale is applied by [`IntRequant`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Finite scale: value = (-1)^neg * mant * 2^-shift.
    Finite,
    /// +-infinity: any nonzero acc saturates; acc == 0 gives NaN, which clamps to lo.
    Infinite,
    /// NaN: every product is NaN, which clamps to lo.
    NaN,
}

/// Integer-only requantizer equal to [`requant_f32`] for every i32 acc.
///
/// The scale is split at construction into a 24-bit integer mantissa and a power-of-two
/// shift: `scale = (-1)^neg * mant * 2^-shift`. [`IntRequant::apply`] then emulates the
/// two float32 roundings of ORT: (1) |acc| is rounded to 24 significant bits
/// (int -> f32), (2) the exact 48-bit product with the mantissa is rounded to 24
/// significant bits (f32 multiply), (3) the value is rounded to an integer with a
/// round-half-even right shift, then clamped and offset by the zero point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntRequant {
    mant: u32,
    shift: i32,
    neg: bool,
    mode: Mode,
}

/// Round `v` right by `sh` bits, ties to even (`sh` may exceed the width).
fn rne_shr(v: u64, sh: u32) -> u64 {
    if sh == 0 {
        return v;
    }
    if sh > 64 {
        return 0;
    }
    let q = if sh == 64 { 0 } else { v >> sh };
    let rem = if sh == 64 { v } else { v & ((1u64 << sh) - 1) };
    let half = 1u64 << (sh - 1);
    if rem > half || (rem == half && q & 1 == 1) {
        q + 1
    } else {
        q
    }
}

/// Round `v` to 24 significant bits (RNE). Returns (mantissa, exponent) with
/// value = mantissa * 2^exponent and mantissa <= 2^24.
fn round24(v: u64) -> (u64, i32) {
    let bits = 64 - v.leading_zeros() as i32;
    if bits <= 24 {
        (v, 0)
    } else {
        let sh = (bits - 24) as u32;
        (rne_shr(v, sh), sh as i32)
    }
}

impl IntRequant {
    /// Precompute the multiplier (24-bit mantissa) and shift from the f32 scale bits.
    pub fn new(scale: f32) -> Self {
        let bits = scale.to_bits();
        let neg = bits >> 31 == 1;
        let exp = ((bits >> 23) & 0xff) as i32;
        let frac = bits & 0x7f_ffff;
        let (mant, shift, mode) = match exp {
            0xff if frac == 0 => (0, 0, Mode::Infinite),
            0xff => (0, 0, Mode::NaN),
            // Subnormal: no implicit bit, exponent fixed at -126 - 23.
            0 => (frac, 149, Mode::Finite),
            _ => (frac | 0x80_0000, 150 - exp, Mode::Finite),
        };
        IntRequant {
            mant,
            shift,
            neg,
            mode,
        }
    }

    /// round_half_even(f32(acc) * scale) + zp saturated to `[lo, hi]`, with integers only.
    pub fn apply(&self, acc: i32, zp: i32, lo: i32, hi: i32) -> i32 {
        let (min, max) = (lo as i64 - zp as i64, hi as i64 - zp as i64);
        let v: i64 = match self.mode {
            Mode::NaN => min,
            Mode::Infinite => {
                if acc == 0 {
                    min
                } else if (acc < 0) != self.neg {
                    i64::MIN
                } else {
                    i64::MAX
                }
            }
            Mode::Finite => self.scaled(acc),
        };
        (v.clamp(min, max) + zp as i64) as i32
    }

    /// round_half_even(f32(acc) * scale) as an integer, saturated to the i64 range
    /// (any value beyond the i32 range is clamped away by the caller).
    fn scaled(&self, acc: i32) -> i64 {
        if acc == 0 || self.mant == 0 {
            return 0;
        }
        let negative = (acc < 0) != self.neg;
        // (1) int -> f32: round |acc| to 24 significant bits.
        let (a, ea) = round24(acc.unsigned_abs() as u64);
        // (2) f32 multiply: exact product (<= 48 bits), rounded to 24 bits.
        let (p, ep) = round24(a * self.mant as u64);
        // value = p * 2^(ea + ep - shift)
        let e = ea + ep - self.shift;
        let mag: u64 = if e >= 0 {
            if e > 38 {
                // p >= 1, so the value is >= 2^39: saturates whatever the bounds are.
                u64::MAX >> 1
            } else {
                p << e
            }
        } else {
            // Values below 2^-126 would be subnormal in f32 and lose precision there,
            // but they are far below 0.5 and round to 0 either way.
            // (3) f32 -> int: round half to even by a right shift.
            rne_shr(p, (-e) as u32)
        };
        let mag = mag.min(i64::MAX as u64) as i64;
        if negative { -mag } else { mag }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ties_round_to_even() {
        // 5 * 0.5 = 2.5 -> 2; 7 * 0.5 = 3.5 -> 4; -5 * 0.5 = -2.5 -> -2.
        assert_eq!(requant_f32(5, 0.5, 0, -128, 127), 2);
        assert_eq!(requant_f32(7, 0.5, 0, -128, 127), 4);
        assert_eq!(requant_f32(-5, 0.5, 0, -128, 127), -2);
        assert_eq!(requant_f32(3, 0.5, 10, 0, 255), 12);
    }

    #[test]
    fn saturates() {
        assert_eq!(requant_f32(1000, 1.0, 0, 0, 255), 255);
        assert_eq!(requant_f32(-1000, 1.0, 3, 0, 255), 0);
        assert_eq!(requant_f32(i32::MAX, 1e30, 0, -128, 127), 127);
    }

    #[test]
    fn int_to_f32_rounding_is_visible() {
        // 2^24 + 1 is not representable in f32: it rounds to 2^24 (ties to even), so
        // with scale 2^-24 the result is exactly 1.0 (not 1.00000006 -> still 1).
        // With 2^24 + 3 -> 2^24 + 4, times 2^-2 = 4194305 exactly.
        let acc = (1 << 24) + 3;
        assert_eq!(requant_f32(acc, 0.25, 0, i32::MIN, i32::MAX), 4_194_305);
        assert_eq!(
            IntRequant::new(0.25).apply(acc, 0, i32::MIN, i32::MAX),
            4_194_305
        );
    }

    #[test]
    fn int_requant_matches_simple_cases() {
        for &s in &[0.5f32, 0.25, 1.0, 3.0, 0.1, 1e-3, 7.5e-4, 255.0] {
            let r = IntRequant::new(s);
            for acc in -3000..3000 {
                assert_eq!(
                    r.apply(acc, 7, -128, 127),
                    requant_f32(acc, s, 7, -128, 127),
                    "acc {acc} scale {s}"
                );
            }
        }
    }

    #[test]
    fn output_scale_is_f32_left_to_right() {
        let (a, b, y) = (0.1f32, 0.3f32, 0.7f32);
        assert_eq!(output_scale(a, b, y).to_bits(), ((a * b) / y).to_bits());
    }

    #[test]
    fn quantize_ties_and_nan() {
        assert_eq!(quantize_f32(3.0, 2.0, 0, 0, 255), 2); // 1.5 -> 2
        assert_eq!(quantize_f32(5.0, 2.0, 0, 0, 255), 2); // 2.5 -> 2
        assert_eq!(quantize_f32(-5.0, 2.0, 0, -128, 127), -2);
        assert_eq!(quantize_f32(f32::NAN, 1.0, 5, 0, 255), 0);
        assert_eq!(quantize_f32(1e20, 1.0, 5, 0, 255), 255);
    }
}
