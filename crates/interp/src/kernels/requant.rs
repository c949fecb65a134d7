//! Requantization of int32 accumulators to 8-bit outputs, bit-identical to
//! [`crate::quant::requant_f32`] and written so the compiler vectorizes it.
//!
//! The float multiply and the float clamp are the same operations in the same order.
//! Only the final round-half-to-even differs in form: [`round_half_even_small`], exact
//! for |v| <= 2^22. The clamp bounds of 8-bit outputs are far inside that range, so the
//! two forms agree exactly.

use crate::quant::round_half_even_small;
use pimkit_ir::{DType, Tensor, TensorData};

/// Clamp bounds `[lo - zp, hi - zp]` as f32, checked to be within the range where the
/// fast rounding is exact.
#[inline(always)]
pub(crate) fn bounds(zp: i32, lo: i32, hi: i32) -> Option<(f32, f32)> {
    let (min, max) = (lo as i64 - zp as i64, hi as i64 - zp as i64);
    let lim = 1i64 << 22;
    (min >= -lim && max <= lim && min <= max).then_some((min as f32, max as f32))
}

/// `round_half_even(clamp(v, min, max))` as an integer, for a `v` that is not NaN (a
/// product with a finite scale) and `(min, max)` from [`bounds`].
///
/// # Safety
/// `v` must not be NaN and `(min, max)` must come from [`bounds`] (within ±2^22), so the
/// rounded value is an integer that fits in i32.
#[inline(always)]
pub(crate) unsafe fn round_clamped(v: f32, (min, max): (f32, f32)) -> i32 {
    // Plain comparisons clamp as the NaN-aware max/min do for non-NaN v, and compile to
    // single min/max instructions.
    let v = if v < min {
        min
    } else if v > max {
        max
    } else {
        v
    };
    let r = round_half_even_small(v);
    // SAFETY: the caller guarantees |r| <= 2^22 and not NaN.
    unsafe { r.to_int_unchecked() }
}

/// `requant_f32(acc[i] + bias, scale, zp, lo, hi)` as a byte (the two's complement
/// low byte, so i8 outputs are written as their bit patterns). `min`/`max` come from
/// [`bounds`].
#[inline(always)]
pub(crate) fn requant_row(
    acc: &[i32],
    bias: i32,
    scale: f32,
    zp: i32,
    bounds: (f32, f32),
    out: &mut [u8],
) {
    requant_row_map(acc, |a| a, bias, scale, zp, bounds, out)
}

/// [`requant_row`] of `to_i32(acc[i])`: accumulators held in another type (the exact
/// f32 integer sums of the depthwise kernel) requantized in the same pass.
#[inline(always)]
pub(crate) fn requant_row_map<T: Copy>(
    acc: &[T],
    to_i32: impl Fn(T) -> i32,
    bias: i32,
    scale: f32,
    zp: i32,
    (min, max): (f32, f32),
    out: &mut [u8],
) {
    if scale.is_finite() {
        for (o, &a) in out.iter_mut().zip(acc) {
            let a = to_i32(a);
            // SAFETY: f32(acc) * finite scale is never NaN; (min, max) from `bounds`.
            let q = unsafe { round_clamped(a.wrapping_add(bias) as f32 * scale, (min, max)) };
            *o = q.wrapping_add(zp) as u8;
        }
        return;
    }
    for (o, &a) in out.iter_mut().zip(acc) {
        let v = (to_i32(a).wrapping_add(bias) as f32 * scale)
            .max(min)
            .min(max);
        let r = round_half_even_small(v);
        // SAFETY: r is an integer with |r| <= 2^22 (clamped above), so it fits in i32.
        let q: i32 = unsafe { r.to_int_unchecked() };
        *o = q.wrapping_add(zp) as u8;
    }
}

/// [`requant_row`] with a scale per element (QLinearMatMul with per-row and per-column
/// scales, QGemm with per-column scales).
#[inline(always)]
pub(crate) fn requant_row_scales(
    acc: &[i32],
    scales: &[f32],
    zp: i32,
    (min, max): (f32, f32),
    out: &mut [u8],
) {
    for ((o, &a), &s) in out.iter_mut().zip(acc).zip(scales) {
        let v = (a as f32 * s).max(min).min(max);
        let r = round_half_even_small(v);
        // SAFETY: as in requant_row.
        let q: i32 = unsafe { r.to_int_unchecked() };
        *o = q.wrapping_add(zp) as u8;
    }
}

/// `quantize_f32(x[i], scale, zp, lo, hi)` as a byte (see [`requant_row`]).
#[inline(always)]
pub(crate) fn quantize_row(x: &[f32], scale: f32, zp: i32, (min, max): (f32, f32), out: &mut [u8]) {
    for (o, &v) in out.iter_mut().zip(x) {
        let v = (v / scale).max(min).min(max);
        let r = round_half_even_small(v);
        // SAFETY: as in requant_row.
        let q: i32 = unsafe { r.to_int_unchecked() };
        *o = q.wrapping_add(zp) as u8;
    }
}

/// A u8/i8 tensor from output bytes (i8 values stored as their bit patterns).
pub(crate) fn byte_tensor(dt: DType, shape: Vec<usize>, v: Vec<u8>) -> Tensor {
    let data = match dt {
        DType::I8 => {
            let mut v = std::mem::ManuallyDrop::new(v);
            // SAFETY: u8 and i8 have identical layout; the allocation is handed over.
            TensorData::I8(unsafe {
                Vec::from_raw_parts(v.as_mut_ptr() as *mut i8, v.len(), v.capacity())
            })
        }
        _ => TensorData::U8(v),
    };
    Tensor { shape, data }
}

/// QuantizeLinear to u8/i8 through the vectorized `quantize_row`, one run of elements
/// per scale.
pub(crate) fn quantize_bytes(
    xf: &[f32],
    s: &[f32],
    zp: &[i32],
    ax: Option<(usize, usize)>,
    (lo, hi): (i32, i32),
    to: DType,
    shape: &[usize],
) -> Tensor {
    let mut out = vec![0u8; xf.len()];
    /// One run of elements with the scale and zero point of channel `ch`.
    #[inline(always)]
    fn run(s: &[f32], zp: &[i32], (lo, hi): (i32, i32), ch: usize, x: &[f32], o: &mut [u8]) {
        let z = zp[if zp.len() == 1 { 0 } else { ch }];
        // The caller checked that every zero point has fast bounds.
        if let Some(b) = bounds(z, lo, hi) {
            quantize_row(x, s[ch], z, b, o);
        }
    }
    // Compiled for the host's vector instructions (the division dominates).
    super::ewise::simd(
        #[inline(always)]
        || match ax {
            None => run(s, zp, (lo, hi), 0, xf, &mut out),
            Some((inner, len)) => {
                let inner = inner.max(1);
                for (i, (o, x)) in out.chunks_mut(inner).zip(xf.chunks(inner)).enumerate() {
                    run(s, zp, (lo, hi), i % len, x, o);
                }
            }
        },
    );
    byte_tensor(to, shape.to_vec(), out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::quant::requant_f32;
    use rand::{RngExt, SeedableRng};

    #[test]
    fn equals_requant_f32() {
        let mut rng = rand_pcg::Pcg64::seed_from_u64(7);
        let mut acc: Vec<i32> = (0..4000).map(|_| rng.random()).collect();
        acc.extend((0..4000).map(|_| rng.random_range(-70_000..70_000)));
        acc.extend([
            0,
            1,
            -1,
            i32::MAX,
            i32::MIN,
            1 << 24,
            (1 << 24) + 1,
            -(1 << 24) - 3,
        ]);
        let mut scales = vec![0.5f32, 0.25, 1.0, 3.0, 1e-3, 7.5e-4, 1e-30, 1e30, 0.0];
        scales
            .extend((0..40).map(|_| f32::from_bits(rng.random_range(0x3000_0000u32..0x3f80_0000))));
        scales.extend([f32::NAN, f32::INFINITY, -f32::INFINITY, -0.37]);
        for (lo, hi) in [(0, 255), (-128, 127)] {
            for &s in &scales {
                for zp in [lo, 0, 3, hi, (lo + hi) / 2] {
                    let bias = rng.random_range(-5000..5000);
                    let b = bounds(zp, lo, hi).unwrap();
                    let mut out = vec![0u8; acc.len()];
                    requant_row(&acc, bias, s, zp, b, &mut out);
                    for (&a, &o) in acc.iter().zip(&out) {
                        let want = requant_f32(a.wrapping_add(bias), s, zp, lo, hi);
                        assert_eq!(o, want as u8, "acc {a} bias {bias} scale {s} zp {zp}");
                    }
                    let ss = vec![s; acc.len()];
                    requant_row_scales(&acc, &ss, zp, b, &mut out);
                    for (&a, &o) in acc.iter().zip(&out) {
                        assert_eq!(o, requant_f32(a, s, zp, lo, hi) as u8);
                    }
                }
            }
        }
    }

    #[test]
    fn quantize_equals_quantize_f32() {
        use crate::quant::quantize_f32;
        let mut rng = rand_pcg::Pcg64::seed_from_u64(9);
        let mut x: Vec<f32> = (0..5000)
            .map(|_| rng.random_range(-300.0f32..300.0))
            .collect();
        x.extend((0..2000).map(|_| rng.random_range(-3.0f32..3.0)));
        x.extend((-600..600).map(|i| i as f32 * 0.25));
        x.extend([
            f32::NAN,
            f32::INFINITY,
            -f32::INFINITY,
            0.0,
            -0.0,
            1e30,
            -1e30,
        ]);
        for (lo, hi) in [(0, 255), (-128, 127)] {
            for s in [1.0f32, 0.5, 0.02, 0.0078125, 3.3, 1e-30, f32::NAN, 0.0] {
                for zp in [lo, 0, hi, 17] {
                    let mut out = vec![0u8; x.len()];
                    quantize_row(&x, s, zp, bounds(zp, lo, hi).unwrap(), &mut out);
                    for (&v, &o) in x.iter().zip(&out) {
                        assert_eq!(
                            o,
                            quantize_f32(v, s, zp, lo, hi) as u8,
                            "x {v} s {s} zp {zp}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn bounds_reject_wide_ranges() {
        assert!(bounds(0, i32::MIN, i32::MAX).is_none());
        assert!(bounds(0, 0, 255).is_some());
    }
}
