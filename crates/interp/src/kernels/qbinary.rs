//! Vectorized rows of QLinearAdd / QLinearMul on 8-bit codes, bit-identical to the
//! scalar formulas in `ops::qelementwise` (which stay the definition and handle every
//! case these rows do not: broadcasting spans, the NEON fixed-point path, i32 outputs).
//!
//! Both kernels end in MLAS's `cvtps_epi32` + saturating packs: round half to even,
//! out-of-range or NaN gives INT_MIN, which saturates to `lo`. Written branch-free:
//! a value outside `[-2^31, 2^31)` (or NaN) selects `lo`, any other value is clamped to
//! `[lo, hi]` in float first (the bounds are integers, so clamping before rounding
//! equals clamping after) and then rounded with the 1.5 * 2^23 trick, exact for
//! |v| <= 2^22. Every loop runs inside [`super::ewise::simd`], so the compiler
//! vectorizes it for the host (and `mul_add` becomes one fused instruction).

use super::ewise::simd;
use crate::quant::round_half_even_small;

/// `cvtps_epi32(v)` saturated to `[lo, hi]` (see the module docs); `lo`, `hi` within
/// ±2^22 (8-bit output ranges).
#[inline(always)]
fn cvt_sat(v: f32, lo: f32, hi: f32) -> i32 {
    let in_range = (-2_147_483_648.0..2_147_483_648.0).contains(&v);
    let c = if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    };
    let c = if in_range { c } else { lo };
    let r = round_half_even_small(c);
    // SAFETY: r is an integer in [lo, hi], far inside i32.
    unsafe { r.to_int_unchecked() }
}

/// An 8-bit operand: its bytes and whether they are i8.
#[derive(Clone, Copy)]
pub(crate) struct Codes<'a> {
    pub data: &'a [u8],
    pub signed: bool,
}

/// A code's value, with the signedness a compile-time constant (a runtime flag read in
/// the loop keeps the compiler from vectorizing it).
#[inline(always)]
fn code<const S: bool>(b: u8) -> i32 {
    if S { b as i8 as i32 } else { b as i32 }
}

/// Call `$f::<SX, SY>$args` for the runtime signedness pair `($sx, $sy)`.
macro_rules! by_sign {
    ($f:ident, $sx:expr, $sy:expr, $args:tt) => {
        match ($sx, $sy) {
            (false, false) => $f::<false, false> $args,
            (false, true) => $f::<false, true> $args,
            (true, false) => $f::<true, false> $args,
            (true, true) => $f::<true, true> $args,
        }
    };
}

/// The float form of QLinearAdd MLAS runs on x86 (`ops::qelementwise::AddParams`):
/// `x` is MLAS's vector operand A, `y` its B (a one-element `y` is a scalar B).
pub(crate) struct AddRow {
    pub ra: f32,
    pub rb: f32,
    pub fixed: f32,
    /// Fused multiply-adds (AVX2 path) or every step rounded (SSE2 path).
    pub fma: bool,
    pub scalar_b: bool,
}

/// One QLinearAdd output row: `out[i]` from `x[i]` and `y[i]` (or `y[0]`), as bytes.
pub(crate) fn qlinear_add_row(
    p: &AddRow,
    x: Codes,
    y: Codes,
    (lo, hi): (i32, i32),
    out: &mut [u8],
) {
    let n = out.len();
    assert!(x.data.len() >= n && (y.data.len() >= n || (p.scalar_b && !y.data.is_empty())));
    simd(
        #[inline(always)]
        || {
            by_sign!(
                add_loop,
                x.signed,
                y.signed,
                (p, x.data, y.data, (lo as f32, hi as f32), out)
            )
        },
    )
}

#[inline(always)]
fn add_loop<const SX: bool, const SY: bool>(
    p: &AddRow,
    x: &[u8],
    y: &[u8],
    (lo, hi): (f32, f32),
    out: &mut [u8],
) {
    let (ra, rb, fixed) = (p.ra, p.rb, p.fixed);
    let x = &x[..out.len()];
    let fx = |v: u8| code::<SX>(v) as f32;
    let fy = |v: u8| code::<SY>(v) as f32;
    match (p.fma, p.scalar_b) {
        (true, false) => {
            for ((o, &a), &b) in out.iter_mut().zip(x).zip(&y[..x.len()]) {
                *o = cvt_sat(fx(a).mul_add(ra, fy(b).mul_add(rb, fixed)), lo, hi) as u8;
            }
        }
        (true, true) => {
            let t = fy(y[0]).mul_add(rb, fixed);
            for (o, &a) in out.iter_mut().zip(x) {
                *o = cvt_sat(fx(a).mul_add(ra, t), lo, hi) as u8;
            }
        }
        (false, false) => {
            for ((o, &a), &b) in out.iter_mut().zip(x).zip(&y[..x.len()]) {
                *o = cvt_sat((fixed + fx(a) * ra) + fy(b) * rb, lo, hi) as u8;
            }
        }
        (false, true) => {
            let t = fixed + fy(y[0]) * rb;
            for (o, &a) in out.iter_mut().zip(x) {
                *o = cvt_sat(t + fx(a) * ra, lo, hi) as u8;
            }
        }
    }
}

/// One QLinearMul output row (MLAS SSE2, every x86 path):
/// `cvt(f32((a - a_zp) * (b - b_zp)) * ratio + f32(y_zp))`, `b` of length 1 or n.
pub(crate) fn qlinear_mul_row(
    (a, a_zp): (Codes, i32),
    (b, b_zp): (Codes, i32),
    ratio: f32,
    y_zp: i32,
    (lo, hi): (i32, i32),
    out: &mut [u8],
) {
    let n = out.len();
    assert!(a.data.len() >= n && (b.data.len() >= n || b.data.len() == 1));
    let args = (a.data, a_zp, b.data, b_zp, ratio, y_zp);
    simd(
        #[inline(always)]
        || {
            by_sign!(
                mul_loop,
                a.signed,
                b.signed,
                (args, (lo as f32, hi as f32), out)
            )
        },
    )
}

#[inline(always)]
fn mul_loop<const SA: bool, const SB: bool>(
    (a, a_zp, b, b_zp, ratio, y_zp): (&[u8], i32, &[u8], i32, f32, i32),
    (lo, hi): (f32, f32),
    out: &mut [u8],
) {
    let zc = y_zp as f32;
    let a = &a[..out.len()];
    // |(a - a_zp) * (b - b_zp)| < 2^31 for 8-bit codes and zero points: the spec's
    // int32 product.
    if b.len() == 1 && out.len() != 1 {
        let bv = code::<SB>(b[0]).wrapping_sub(b_zp);
        for (o, &x) in out.iter_mut().zip(a) {
            let prod = code::<SA>(x).wrapping_sub(a_zp).wrapping_mul(bv);
            *o = cvt_sat(prod as f32 * ratio + zc, lo, hi) as u8;
        }
    } else {
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(&b[..a.len()]) {
            let prod = code::<SA>(x)
                .wrapping_sub(a_zp)
                .wrapping_mul(code::<SB>(y).wrapping_sub(b_zp));
            *o = cvt_sat(prod as f32 * ratio + zc, lo, hi) as u8;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scalar definition (ops::qelementwise::cvt_saturate).
    fn cvt_ref(v: f32, lo: i32, hi: i32) -> i32 {
        let r = v.round_ties_even();
        let i = if r.is_nan() || !(-2_147_483_648.0..2_147_483_648.0).contains(&r) {
            i32::MIN
        } else {
            r as i32
        };
        i.clamp(lo, hi)
    }

    #[test]
    fn cvt_sat_matches_cvtps_epi32_semantics() {
        let vals = [
            0.5f32,
            1.5,
            2.5,
            -0.5,
            -1.5,
            254.5,
            255.5,
            -128.5,
            127.5,
            1e9,
            -1e9,
            2_147_483_520.0,
            2_147_483_648.0,
            -2_147_483_648.0,
            -2_147_483_904.0,
            3e9,
            -3e9,
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.49999997,
            8_388_609.0,
        ];
        for (lo, hi) in [(0, 255), (-128, 127)] {
            for &v in &vals {
                assert_eq!(
                    cvt_sat(v, lo as f32, hi as f32),
                    cvt_ref(v, lo, hi),
                    "v {v}"
                );
            }
        }
    }
}
