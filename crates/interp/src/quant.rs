//! Requantization exactly as onnxruntime (MLAS) computes it, and an integer-only
//! equivalent for hosts without an FPU.
//!
//! ORT's `MlasRequantizeOutput` converts the int32 accumulator to float32 (rounding to
//! nearest-even when |acc| > 2^24), multiplies by a float32 scale (a second rounding),
//! clamps to `[lo - zp, hi - zp]` and converts with round-half-even before adding the
//! zero point. [`requant_f32`] is that sequence. [`IntRequant`] reproduces both float32
//! roundings with integer shifts and one 24x24-bit multiply, so it is equal to
//! [`requant_f32`] for every `acc` (see docs/interpreter.md for the proof sketch).

use crate::kernels::requant::{bounds, round_clamped};

/// `v` rounded to an integer, ties to even, for |v| <= 2^22 (NaN stays NaN): the sum
/// `v + 1.5 * 2^23` lies in [2^23, 2^24), where the f32 spacing is 1, so the add rounds
/// in the default rounding mode and the subtract is exact. Plain adds, so it vectorizes
/// on any x86-64 (baseline SSE2 has no rounding instruction; `round_ties_even` would be a
/// libm call per element there).
#[inline(always)]
pub fn round_half_even_small(v: f32) -> f32 {
    const MAGIC: f32 = 12_582_912.0;
    (v + MAGIC) - MAGIC
}

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

    /// The f32 scale this requantizer was built from (exact: mantissa, exponent and
    /// sign are all kept); `None` for an infinite or NaN scale.
    fn finite_scale(&self) -> Option<f32> {
        if self.mode != Mode::Finite {
            return None;
        }
        let sign = (self.neg as u32) << 31;
        let bits = if self.mant < 0x80_0000 {
            // Subnormal (or zero): no implicit bit, the mantissa is the fraction.
            self.mant
        } else {
            ((150 - self.shift) as u32) << 23 | (self.mant & 0x7f_ffff)
        };
        Some(f32::from_bits(sign | bits))
    }

    /// [`IntRequant::apply`] on every element of `acc`, in place, in a form the compiler
    /// vectorizes. For a finite scale and 8-bit-sized bounds (|lo - zp|, |hi - zp| <=
    /// 2^22) it computes [`requant_f32`], which `apply` equals for every acc (module
    /// doc), with the clamp first and the round-half-even done by adding and
    /// subtracting 1.5 * 2^23 (exact for |v| <= 2^22, as `kernels/requant.rs` does);
    /// anything else goes element by element through `apply`.
    pub fn apply_slice(&self, acc: &mut [i32], zp: i32, lo: i32, hi: i32) {
        match (self.finite_scale(), bounds(zp, lo, hi)) {
            (Some(scale), Some(b)) => {
                for a in acc.iter_mut() {
                    // SAFETY: f32(acc) * finite scale is never NaN; b from `bounds`.
                    *a = unsafe { round_clamped(*a as f32 * scale, b) }.wrapping_add(zp);
                }
            }
            _ => acc.iter_mut().for_each(|a| *a = self.apply(*a, zp, lo, hi)),
        }
    }

    /// `acc[i] = rq[i].apply(acc[i], zp, lo, hi)` (one requantizer per element, e.g.
    /// per output column), by the same float form as [`IntRequant::apply_slice`] when
    /// every scale is finite and the bounds allow it.
    pub fn apply_each(rq: &[IntRequant], acc: &mut [i32], zp: i32, lo: i32, hi: i32) {
        let b = match bounds(zp, lo, hi) {
            Some(b) if rq.iter().all(|q| q.mode == Mode::Finite) => b,
            _ => {
                for (a, q) in acc.iter_mut().zip(rq) {
                    *a = q.apply(*a, zp, lo, hi);
                }
                return;
            }
        };
        for (a, q) in acc.iter_mut().zip(rq) {
            let scale = q.finite_scale().unwrap_or(0.0);
            // SAFETY: as in apply_slice.
            *a = unsafe { round_clamped(*a as f32 * scale, b) }.wrapping_add(zp);
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
    fn small_rounding_is_round_ties_even_up_to_2_pow_22() {
        // Every tie and its neighbours up to 1024, then steps across the whole range.
        let ties = (0..2048).map(|i| i as f32 * 0.5);
        let spread = (0..=4096).map(|i| (i as f32 / 4096.0) * 4_194_304.0 + 0.5);
        for v in ties.chain(spread).flat_map(|v| [v, -v, v + 0.25, v - 0.25]) {
            if v.abs() <= 4_194_304.0 {
                assert_eq!(round_half_even_small(v), v.round_ties_even(), "{v}");
            }
        }
        assert!(round_half_even_small(f32::NAN).is_nan());
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
    fn finite_scale_round_trips() {
        let mut r = 0x1234_5678u32;
        let check = |s: f32| {
            let q = IntRequant::new(s);
            if s.is_finite() {
                assert_eq!(
                    q.finite_scale().map(f32::to_bits),
                    Some(s.to_bits()),
                    "{s:e}"
                );
            } else {
                assert_eq!(q.finite_scale(), None);
            }
        };
        for s in [
            0.0f32,
            -0.0,
            1.0,
            -2.5,
            f32::MIN_POSITIVE,
            1e-45,
            -3e-40,
            f32::MAX,
        ] {
            check(s);
        }
        check(f32::INFINITY);
        check(f32::NAN);
        for _ in 0..100_000 {
            r ^= r << 13;
            r ^= r >> 17;
            r ^= r << 5;
            check(f32::from_bits(r));
        }
    }

    #[test]
    fn apply_slice_equals_apply() {
        let mut r = 0x9e37_79b9u32;
        let mut next = || {
            r ^= r << 13;
            r ^= r >> 17;
            r ^= r << 5;
            r
        };
        let mut accs: Vec<i32> = vec![0, 1, -1, i32::MIN, i32::MAX, (1 << 24) + 3, -(1 << 24) - 1];
        for _ in 0..4000 {
            let x = next() as i32;
            // Whole range, then small accumulators and exact ties.
            accs.extend([x, x >> 12, x >> 20, (x >> 16) | 1]);
        }
        let scales = [
            0.5f32,
            0.25,
            1.0,
            3.0,
            0.1,
            1e-3,
            7.5e-4,
            255.0,
            -0.37,
            1e-40,
            1e30,
            2e-9,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::NAN,
            0.0,
        ];
        let bounds = [
            (0, 0, 255),
            (7, 0, 255),
            (-3, -128, 127),
            (0, -128, 127),
            (0, i32::MIN, i32::MAX),
            (100, -(1 << 22), 1 << 22),
            (0, 5, 5),
        ];
        for (k, &s) in scales.iter().enumerate() {
            let s = if k == 0 {
                f32::from_bits(next() >> 2)
            } else {
                s
            };
            let q = IntRequant::new(s);
            for &(zp, lo, hi) in &bounds {
                let mut got = accs.clone();
                q.apply_slice(&mut got, zp, lo, hi);
                for (&a, &g) in accs.iter().zip(&got) {
                    assert_eq!(
                        g,
                        q.apply(a, zp, lo, hi),
                        "acc {a} scale {s:e} zp {zp} [{lo}, {hi}]"
                    );
                }
            }
        }
        // One requantizer per element, mixed scales (a non-finite one takes the slow path).
        let mut rqs: Vec<IntRequant> = (0..accs.len())
            .map(|_| IntRequant::new(f32::from_bits(next() & 0x3fff_ffff)))
            .collect();
        for &(zp, lo, hi) in &bounds {
            for inf in [false, true] {
                if inf {
                    rqs[5] = IntRequant::new(f32::INFINITY);
                }
                let mut got = accs.clone();
                IntRequant::apply_each(&rqs, &mut got, zp, lo, hi);
                for ((&a, &g), q) in accs.iter().zip(&got).zip(&rqs) {
                    assert_eq!(g, q.apply(a, zp, lo, hi), "acc {a} zp {zp} [{lo}, {hi}]");
                }
            }
        }
        for _ in 0..300 {
            let s = f32::from_bits(next() & 0x7fff_ffff | (next() & 0x8000_0000));
            let q = IntRequant::new(s);
            let mut got = accs.clone();
            q.apply_slice(&mut got, 3, -128, 127);
            for (&a, &g) in accs.iter().zip(&got) {
                assert_eq!(g, q.apply(a, 3, -128, 127), "acc {a} scale {s:e}");
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
